//! A plain stack's node groups (any stack caldera did not write, opened in the console) show
//! each group's IMAGE and FLAVOR as Heat resolved them for the members' servers. Finding
//! them walks the first member's nested stacks (templates, a listing, the stack's
//! parameters): done once per change of the group, not on every refresh of the pane. Counted
//! on the simulator's side, over loopback.

use crate::support::sim_group;
use caldera::api::cloud::CloudConnection;
use caldera::api::heat::{StackCreate, StackUpdate};
use caldera::model::{NodeGroup, StackRef};
use caldera::service::live::LiveService;
use caldera::service::plain_stack;
use caldera::service::CloudService;
use caldera::sim::{SimHandle, SimOptions};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Requests whose path ends with `/template`: the walk reads the group's generated template
/// and the member's; a refresh of the rows without the walk reads none.
fn template_reads(sim: &SimHandle) -> u64 {
    sim.faults()
        .request_counts()
        .iter()
        .filter(|(m, p, _)| m == "GET" && p.ends_with("/template"))
        .map(|(_, _, n)| n)
        .sum()
}

/// All requests the simulator received so far.
fn all_requests(sim: &SimHandle) -> u64 {
    sim.faults()
        .request_counts()
        .iter()
        .map(|(_, _, n)| n)
        .sum()
}

async fn rows(service: &LiveService, stack: &StackRef) -> Vec<NodeGroup> {
    service
        .list_nodegroups(plain_stack::cluster_of(&stack.id, &stack.name))
        .await
        .expect("node group rows")
}

/// Waits (60 s at most) for the stack to reach `want`.
async fn settle(conn: &CloudConnection, stack: &StackRef, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = conn
            .heat
            .get_stack(stack, false)
            .await
            .expect("stack")
            .summary
            .status
            .raw;
        if status == want {
            return;
        }
        assert!(Instant::now() < deadline, "{} stays {status}", stack.name);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn facts(rows: &[NodeGroup]) -> Vec<(String, Option<String>, Option<String>)> {
    rows.iter()
        .map(|r| (r.name.clone(), r.image.clone(), r.flavor.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_with_nothing_changed_walks_no_member_and_an_update_shows_the_new_image() {
    let (sim, conn) = sim_group::connected(SimOptions::fast("empty", 50.0)).await;
    let create = StackCreate {
        name: "web".into(),
        template: json!({"resources": {"nodes": {"type": "OS::Heat::ResourceGroup"}}}),
        parameters: BTreeMap::from([
            ("count".to_string(), json!(3)),
            ("image".to_string(), json!("img-v1")),
            ("flavor".to_string(), json!("m1.large")),
        ]),
        ..Default::default()
    };
    let stack = conn.heat.create_stack(&create).await.expect("create");
    settle(&conn, &stack, "CREATE_COMPLETE").await;
    let service = LiveService::new(conn.clone());

    // The first refresh walks the first member to its server.
    let (before, start) = (template_reads(&sim), all_requests(&sim));
    let first = rows(&service, &stack).await;
    let first_cost = all_requests(&sim) - start;
    assert_eq!(
        facts(&first),
        [(
            "nodes".to_string(),
            Some("img-v1".to_string()),
            Some("m1.large".to_string())
        )]
    );
    assert!(template_reads(&sim) > before, "the first refresh walks");

    // Nothing changed: the same row, no template read, fewer requests than the first.
    let (templates, total) = (template_reads(&sim), all_requests(&sim));
    let second = rows(&service, &stack).await;
    assert_eq!(facts(&second), facts(&first));
    assert_eq!(
        template_reads(&sim),
        templates,
        "an unchanged group is not walked"
    );
    let second_cost = all_requests(&sim) - total;
    // Discovery alone: the walk (2 templates, the member's listing, its parameters) is not
    // made again, on any number of refreshes.
    let third_start = all_requests(&sim);
    let _ = rows(&service, &stack).await;
    assert_eq!(
        all_requests(&sim) - third_start,
        second_cost,
        "refreshes cost the same"
    );
    assert!(second_cost < first_cost, "{second_cost} < {first_cost}");

    // An update of the image: Heat changes the group; the new image shows once settled.
    let update = StackUpdate {
        parameters: BTreeMap::from([("image".to_string(), json!("img-v2"))]),
        existing: true,
        ..Default::default()
    };
    conn.heat
        .update_stack(&stack, &update)
        .await
        .expect("update");
    settle(&conn, &stack, "UPDATE_COMPLETE").await;
    let templates = template_reads(&sim);
    let after = rows(&service, &stack).await;
    assert_eq!(
        facts(&after),
        [(
            "nodes".to_string(),
            Some("img-v2".to_string()),
            Some("m1.large".to_string())
        )]
    );
    assert!(
        template_reads(&sim) > templates,
        "a changed group is walked again"
    );
    sim.shutdown().await;
}

/// Issue 25: a rollout of a plain stack's group mid-way: the nodes pane's model counts as
/// `rollout status` does (`scenarios::plain_group_mid_rollout_scenario`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_stacks_group_mid_rollout_counts_as_rollout_status_does() {
    let (sim, conn) = sim_group::connected(SimOptions::fast("empty", 50.0)).await;
    let env = crate::support::scenarios::Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    );
    crate::support::scenarios::plain_group_mid_rollout_scenario(&conn, &env, "pl").await;
    sim.shutdown().await;
}
