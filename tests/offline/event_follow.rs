//! The event follower through `LiveService::poll_events` on the simulator, with the requests
//! counted by the connection's request budget: every event of a create delivered once, and a
//! poll that finds nothing new costs one request.

use crate::support::sim_group;
use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, EventCursor};
use caldera::sim::world::format_uuid;
use caldera::sim::{self, SimOptions};
use caldera::templates::{self, Machines};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

/// Every event id of the stack tree (down to `depth`) the simulator holds now.
fn world_events(sim: &sim::SimHandle, name: &str, depth: u32) -> HashSet<String> {
    sim.with_world(|w| {
        let Some(ix) = w.find_stack(name) else {
            return HashSet::new();
        };
        w.nested_stacks(ix, depth)
            .into_iter()
            .filter_map(|(s, _)| w.stack(s))
            .flat_map(|st| st.events.iter().map(|e| format_uuid(e.id)))
            .collect()
    })
}

#[tokio::test]
async fn follower_delivers_a_create_once_and_a_quiet_poll_is_one_request() {
    let (sim, conn) = sim_group::connected(SimOptions {
        scenario: "empty".into(),
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        create_median: Duration::from_secs(1),
        // Members start close together, so the last seconds hold more events than the
        // follower's old fixed 200-event pages over a 10 s window could re-read in one request.
        leaf_delay: Duration::from_millis(20),
        ..SimOptions::default()
    })
    .await;
    let params = BTreeMap::from([("count".to_string(), serde_json::json!(80))]);
    let create = templates::nodegroup_stack("follow", Machines::Test, params).expect("template");
    let stack = conn.heat.create_stack(&create).await.expect("create");
    let svc = LiveService::new(conn.clone());

    let mut cursor = EventCursor::default();
    let mut delivered: Vec<String> = Vec::new();
    let started = Instant::now();
    let mut settled_polls = 0;
    // Follow until the create has settled and one more poll has run, as `--until-complete`.
    while settled_polls < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "create never settled"
        );
        let (events, next) = svc
            .poll_events(stack.clone(), 2, cursor)
            .await
            .expect("poll");
        cursor = next;
        delivered.extend(events.into_iter().map(|e| e.id));
        let done = sim.with_world(|w| {
            w.find_stack("follow")
                .and_then(|ix| w.stack(ix))
                .is_some_and(|s| !s.status.to_string().ends_with("IN_PROGRESS"))
        });
        settled_polls = if done { settled_polls + 1 } else { 0 };
        tokio::time::sleep(cursor.next_delay(Duration::from_millis(300))).await;
    }

    let unique: HashSet<String> = delivered.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        delivered.len(),
        "an event was delivered twice"
    );
    let truth = world_events(&sim, "follow", 2);
    assert!(
        truth.len() > 120,
        "40 members write events: {}",
        truth.len()
    );
    assert_eq!(
        unique, truth,
        "delivered events differ from the simulator's"
    );

    // Nothing new now: each poll is one request, whether the window is settled yet or not.
    for quiet in 0..4 {
        let before = svc.budget().total_requests;
        let (events, next) = svc
            .poll_events(stack.clone(), 2, cursor)
            .await
            .expect("poll");
        cursor = next;
        assert!(events.is_empty(), "quiet poll {quiet} delivered {events:?}");
        assert_eq!(
            svc.budget().total_requests - before,
            1,
            "quiet poll {quiet} took more than one request"
        );
        tokio::time::sleep(Duration::from_millis(800)).await;
    }
    sim.shutdown().await;
}

/// A cloud's `caldera: {max_events_per_stack}` reaches the follower's cursor, unless the
/// caller gave its own (the `--max-events-per-stack` flag).
#[tokio::test]
async fn the_clouds_event_retention_reaches_the_follower() {
    let sim = sim::start(SimOptions::fast("small", 20.0))
        .await
        .expect("simulator starts");
    let mut cloud = sim.cloud_config();
    let plain = LiveService::new(
        CloudConnection::from_cloud(&cloud, &ConnectOptions::default())
            .await
            .expect("connect"),
    );
    cloud.caldera.max_events_per_stack = Some(200);
    let told = LiveService::new(
        CloudConnection::from_cloud(&cloud, &ConnectOptions::default())
            .await
            .expect("connect"),
    );
    let stack = plain
        .list_stacks()
        .await
        .expect("stacks")
        .into_iter()
        .next()
        .expect("the small scenario has stacks")
        .stack;
    let (_, c) = plain
        .poll_events(stack.clone(), 0, EventCursor::default())
        .await
        .expect("poll");
    assert!(!c.retention_known(), "no setting: Heat's default assumed");
    assert_eq!(c.retention(), 1000);
    let (_, c) = told
        .poll_events(stack.clone(), 0, EventCursor::default())
        .await
        .expect("poll");
    assert!(c.retention_known(), "the cloud's setting applied");
    assert_eq!(c.retention(), 200);
    let (_, c) = told
        .poll_events(stack, 0, EventCursor::default().with_retention(5000))
        .await
        .expect("poll");
    assert_eq!(
        c.retention(),
        5000,
        "the caller's value wins over the cloud's"
    );
    sim.shutdown().await;
}
