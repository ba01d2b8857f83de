//! Tests against a real OpenStack Heat on 127.0.0.1.
//!
//! `scripts/real-heat-suite.sh` installs and starts one and runs these with `--ignored`;
//! a plain `cargo test` skips them (they need that server). HEAT_URL must point at it.

use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::{EventQuery, HeatClient, SortDir, StackDetail};
use caldera::model::StackRef;
use caldera::ops::failures::deepest_failures;
use caldera::ops::ips::{stream_ips, IpEvent, IpOptions};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, EventCursor};
use caldera::templates::{nodegroup_stack, test_address, Machines};
use futures::StreamExt;
use serde_json::json;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)")
}

async fn connect() -> CloudConnection {
    CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to the real Heat")
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

async fn create_nodegroup(heat: &HeatClient, name: &str, params: serde_json::Value) -> StackRef {
    let params: BTreeMap<String, serde_json::Value> =
        serde_json::from_value(params).expect("parameters object");
    let create = nodegroup_stack(name, Machines::Test, params).expect("templates parse");
    heat.create_stack(&create)
        .await
        .expect("stack create accepted")
}

async fn wait_settled(heat: &HeatClient, stack: &StackRef, timeout: Duration) -> StackDetail {
    let started = Instant::now();
    loop {
        let detail = heat.get_stack(stack, false).await.expect("stack show");
        if !detail.summary.status.is_in_progress() {
            return detail;
        }
        assert!(
            started.elapsed() < timeout,
            "stack {} still {} after {:?}",
            stack.name,
            detail.summary.status,
            timeout
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The whole flow on one 50-member group: follow its create live, then fetch its IPs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn fifty_member_group_events_and_ips() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let service = LiveService::new(conn.clone());
    let name = unique("rh50");
    let members = 50u32;
    let stack = create_nodegroup(&heat, &name, json!({"count": members})).await;

    // Follow the create live, the way the console does.
    let mut cursor = EventCursor::default();
    let mut followed = Vec::new();
    let started = Instant::now();
    let mut settled_polls = 0;
    loop {
        let (events, next) = service
            .poll_events(stack.clone(), 2, cursor)
            .await
            .expect("poll events");
        cursor = next;
        followed.extend(events);
        let detail = heat.get_stack(&stack, false).await.expect("stack show");
        if detail.summary.status.is_in_progress() {
            settled_polls = 0;
        } else {
            settled_polls += 1;
            if settled_polls > 1 {
                assert_eq!(detail.summary.status.raw, "CREATE_COMPLETE", "{detail:?}");
                break;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "create took too long"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // No duplicates...
    let ids: Vec<&str> = followed.iter().map(|e| e.id.as_str()).collect();
    let unique_ids: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(
        ids.len(),
        unique_ids.len(),
        "the follower delivered duplicates"
    );
    // ...and no gaps: exactly what a full listing afterwards holds.
    let full: Vec<_> = heat
        .list_events(
            stack.clone(),
            EventQuery {
                nested_depth: Some(2),
                sort_dir: Some(SortDir::Asc),
                limit: Some(100),
                ..Default::default()
            },
        )
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("full event listing");
    let full_ids: HashSet<&str> = full.iter().map(|e| e.id.as_str()).collect();
    let missing: Vec<_> = full_ids.difference(&unique_ids).collect();
    let extra: Vec<_> = unique_ids.difference(&full_ids).collect();
    assert!(
        missing.is_empty(),
        "follower missed {} events: {missing:?}",
        missing.len()
    );
    assert!(extra.is_empty(), "follower invented events: {extra:?}");
    // Every member's nested stack reported its own completion, with a readable path.
    let member_done: HashSet<String> = followed
        .iter()
        .filter(|e| e.is_stack_event() && e.status.raw == "CREATE_COMPLETE" && e.path.len() == 2)
        .map(|e| e.path[1].clone())
        .collect();
    assert_eq!(
        member_done.len(),
        members as usize,
        "paths: {member_done:?}"
    );
    eprintln!(
        "followed {} events of a {members}-member create in {:.1}s",
        followed.len(),
        started.elapsed().as_secs_f64()
    );

    // IPs through the library stream: exactly the expected addresses, each once.
    let t0 = Instant::now();
    let mut got: HashMap<String, Vec<String>> = HashMap::new();
    let mut named = std::collections::HashSet::new();
    let mut first = None;
    let mut stream = stream_ips(heat.clone(), stack.clone(), IpOptions::default());
    while let Some(event) = stream.next().await {
        match event.expect("ip stream") {
            IpEvent::Address(a, _) => {
                first.get_or_insert(t0.elapsed());
                assert!(
                    got.insert(a.member.clone(), a.addresses).is_none(),
                    "member twice"
                );
            }
            IpEvent::Failed { member, reason } => panic!("member {member} failed: {reason}"),
            IpEvent::Pending { member, status } => panic!("member {member} pending: {status}"),
            IpEvent::Plan { found, how, .. } => assert!(found, "no address source: {how}"),
            IpEvent::Members(m) => assert_eq!(m.len(), members as usize),
            // Names come from Heat's own server listing (its `name` attribute), once.
            IpEvent::Named { member, .. } => assert!(named.insert(member), "named twice"),
            // Images come from Nova, which `stream_ips` does not ask.
            IpEvent::Server { member, .. } => panic!("member {member}'s server without Nova"),
            IpEvent::NoNetwork(a) => panic!("member {} has no network", a.member),
            IpEvent::MoreAddresses(a, _) => {
                got.insert(a.member, a.addresses);
            }
            IpEvent::Done(_) => {}
        }
    }
    eprintln!(
        "ips: first after {:?}, all {} after {:?}",
        first.unwrap_or_default(),
        got.len(),
        t0.elapsed()
    );
    for i in 0..members {
        assert_eq!(
            got.get(&i.to_string()),
            Some(&vec![test_address(i)]),
            "member {i}"
        );
    }

    // And through the `caldera ips` command, as an operator runs it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args(["--heat-url", &heat_url(), "ips", &name, "--format", "json"])
        .output()
        .expect("run caldera ips");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut printed: Vec<String> = stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            v["addresses"][0].as_str().expect("address").to_string()
        })
        .collect();
    printed.sort();
    let mut expected: Vec<String> = (0..members).map(test_address).collect();
    expected.sort();
    assert_eq!(printed, expected);

    heat.delete_stack(&stack).await.expect("delete");
}

/// A failing member: our deepest failure is the one Heat itself blames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn failing_member_deepest_failure_matches_heat() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let name = unique("rhfail");
    let stack = create_nodegroup(&heat, &name, json!({"count": 5, "node_fail_index": 3})).await;
    let detail = wait_settled(&heat, &stack, Duration::from_secs(300)).await;
    assert_eq!(detail.summary.status.raw, "CREATE_FAILED");

    let listing = heat
        .list_resources(
            &stack,
            &caldera::api::heat::ResourceQuery {
                nested_depth: Some(5),
                ..Default::default()
            },
        )
        .await
        .expect("resources");
    let resources: Vec<_> = listing.into_iter().map(|r| r.resource).collect();
    let failures = deepest_failures(&stack, &resources);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let failure = &failures[0];
    assert_eq!(failure.path, format!("{name}.nodes.3.server"));

    // Heat's own word on that resource, asked directly of the member's stack.
    let member_stack = resources
        .iter()
        .find(|r| r.name == "3")
        .and_then(|r| r.nested.clone())
        .expect("member 3 has a nested stack");
    let server = heat
        .get_resource(&member_stack, "server")
        .await
        .expect("resource show");
    assert_eq!(server.resource.status.raw, "CREATE_FAILED");
    assert_eq!(
        failure.resource.status_reason,
        server.resource.status_reason
    );
    // The stack's own reason names the same resource in Heat's notation.
    let stack_reason = detail.summary.status_reason.clone().unwrap_or_default();
    assert!(
        stack_reason.contains("resources.nodes.resources[3].resources.server")
            || stack_reason.contains("resources[3]"),
        "stack reason: {stack_reason}"
    );

    // The command prints the same path and reason.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args([
            "--heat-url",
            &heat_url(),
            "failures",
            &name,
            "--format",
            "csv",
        ])
        .output()
        .expect("run caldera failures");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{name}.nodes.3.server")),
        "{stdout}"
    );

    heat.delete_stack(&stack).await.expect("delete");
}
