//! One conformance suite, two servers: every check here runs against the built-in simulator
//! (in a plain `cargo test`) and against a real Heat 27 (`scripts/real-heat-suite.sh`, which
//! runs the `#[ignore]`d `real_heat` variants with HEAT_URL set). Behaviour the simulator
//! offers is only trusted once the real Heat agrees.

use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::{
    EventQuery, HeatClient, ResourceQuery, SortDir, StackListQuery, StackUpdate,
};
use caldera::api::http::Redirect;
use caldera::api::ApiError;
use caldera::model::{Node, NodeGroup, Role, StackEvent, StackRef, Status};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, NodeUpdate};
use caldera::sim::{self, SimHandle, SimOptions};
use caldera::templates::{nodegroup_stack, Machines};
use futures::{StreamExt, TryStreamExt};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

/// The server under test and what keeps it alive.
struct Server {
    heat: HeatClient,
    conn: CloudConnection,
    sim: Option<SimHandle>,
}

impl Server {
    async fn simulator() -> Server {
        let sim = sim::start(SimOptions {
            scenario: "empty".into(),
            // Members take seconds of simulated time; run the clock fast.
            speed: 50.0,
            ..SimOptions::default()
        })
        .await
        .expect("simulator starts");
        let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
            .await
            .expect("connect to the simulator");
        Server {
            heat: conn.heat.clone(),
            conn,
            sim: Some(sim),
        }
    }

    async fn real_heat() -> Server {
        let url = std::env::var("HEAT_URL")
            .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)");
        let conn =
            CloudConnection::no_auth(&NoAuthEndpoints::heat_only(url), &ConnectOptions::default())
                .await
                .expect("connect to the real Heat");
        Server {
            heat: conn.heat.clone(),
            conn,
            sim: None,
        }
    }

    async fn close(self) {
        if let Some(sim) = self.sim {
            sim.shutdown().await;
        }
    }
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

async fn create_group(heat: &HeatClient, name: &str, count: u32) -> StackRef {
    let mut params = BTreeMap::new();
    params.insert("count".to_string(), json!(count));
    let create = nodegroup_stack(name, Machines::Test, params).expect("templates parse");
    let stack = heat.create_stack(&create).await.expect("create accepted");
    let status = wait_settled(heat, &stack).await;
    assert_eq!(status, "CREATE_COMPLETE", "stack {name}");
    stack
}

async fn wait_settled(heat: &HeatClient, stack: &StackRef) -> String {
    let started = Instant::now();
    loop {
        let detail = heat.get_stack(stack, false).await.expect("stack show");
        if !detail.summary.status.is_in_progress() {
            return detail.summary.status.raw;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{} still {}",
            stack.name,
            detail.summary.status
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn all_events(heat: &HeatClient, stack: &StackRef, limit: u32) -> Vec<StackEvent> {
    heat.list_events(
        stack.clone(),
        EventQuery {
            nested_depth: Some(2),
            sort_dir: Some(SortDir::Asc),
            limit: Some(limit),
            ..Default::default()
        },
    )
    .try_collect()
    .await
    .expect("event listing")
}

/// Polls until `pred` holds for the stack's nested events, or fails after a while.
async fn wait_events(
    heat: &HeatClient,
    stack: &StackRef,
    what: &str,
    pred: impl Fn(&[StackEvent]) -> bool,
) -> Vec<StackEvent> {
    let started = Instant::now();
    loop {
        let events = all_events(heat, stack, 200).await;
        if pred(&events) {
            return events;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "waited too long for {what}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The group's nested stack (owner of the members).
async fn group_stack(heat: &HeatClient, stack: &StackRef) -> StackRef {
    let top = heat
        .list_resources(stack, &ResourceQuery::default())
        .await
        .expect("resources");
    top.into_iter()
        .find(|r| r.resource.name == "nodes")
        .and_then(|r| r.resource.nested)
        .expect("the `nodes` group owns a nested stack")
}

// ---- the checks ----

async fn name_lookup_redirects(server: &Server) {
    let heat = &server.heat;
    let name = unique("cf-redirect");
    let stack = create_group(heat, &name, 2).await;
    assert_eq!(heat.resolve(&name).await.expect("resolve"), stack);
    // A sub-path by name redirects to the same sub-path under name/id.
    let url = format!("{}/stacks/{name}/resources", heat.base());
    match heat
        .transport()
        .get_redirect_location(&url)
        .await
        .expect("GET by name")
    {
        Redirect::Location(location) => assert!(
            location.ends_with(&format!("/stacks/{name}/{}/resources", stack.id)),
            "{location}"
        ),
        Redirect::Direct(resp) => panic!("expected a 302, got {}", resp.status),
    }
    heat.delete_stack(&stack).await.expect("delete");
}

async fn stack_list_pages_once(server: &Server) {
    let heat = &server.heat;
    let prefix = unique("cf-page");
    let mut made = Vec::new();
    for i in 0..3 {
        made.push(create_group(heat, &format!("{prefix}-{i}"), 1).await);
    }
    let listed: Vec<_> = heat
        .list_stacks(StackListQuery {
            limit: Some(1),
            ..Default::default()
        })
        .try_collect()
        .await
        .expect("paged stack list");
    let ids: Vec<&str> = listed.iter().map(|s| s.stack.id.as_str()).collect();
    let unique_ids: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique_ids.len(), "a page repeated a stack");
    for stack in &made {
        assert!(
            unique_ids.contains(stack.id.as_str()),
            "{} missing",
            stack.name
        );
        heat.delete_stack(stack).await.expect("delete");
    }
}

async fn resource_filters(server: &Server) {
    let heat = &server.heat;
    let name = unique("cf-filter");
    let stack = create_group(heat, &name, 3).await;
    let values = heat
        .list_resources(
            &stack,
            &ResourceQuery {
                nested_depth: Some(2),
                with_detail: true,
                filters: vec![("type".into(), "OS::Heat::Value".into())],
            },
        )
        .await
        .expect("typed listing");
    assert_eq!(values.len(), 3);
    for v in &values {
        assert_eq!(v.resource.resource_type, "OS::Heat::Value");
        let value = v
            .attributes
            .as_ref()
            .and_then(|a| a.get("value"))
            .and_then(|v| v.as_str());
        assert!(value.is_some_and(|ip| ip.contains('.')), "{v:?}");
        assert!(
            v.resource.parent_resource.is_some(),
            "nested items name their parent"
        );
    }
    let err = heat
        .list_resources(
            &stack,
            &ResourceQuery {
                filters: vec![("bogus".into(), "x".into())],
                ..Default::default()
            },
        )
        .await
        .expect_err("unknown filter is refused");
    assert_eq!(err.status(), Some(400), "{err}");
    assert!(
        err.to_string().contains("Invalid filter parameters"),
        "{err}"
    );
    heat.delete_stack(&stack).await.expect("delete");
}

async fn nested_events_page_without_gaps(server: &Server) {
    let heat = &server.heat;
    let name = unique("cf-events");
    let stack = create_group(heat, &name, 3).await;
    let full = all_events(heat, &stack, 1000).await;
    let paged = all_events(heat, &stack, 5).await;
    let full_ids: Vec<&str> = full.iter().map(|e| e.id.as_str()).collect();
    let paged_ids: Vec<&str> = paged.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        paged_ids, full_ids,
        "small pages must add up to the full listing"
    );
    // Nested events carry the nested stack that emitted them; each member stack completed.
    let member_stacks: HashSet<String> = full
        .iter()
        .filter(|e| e.is_stack_event() && e.status.raw == "CREATE_COMPLETE")
        .filter_map(|e| e.stack.as_ref().map(|s| s.id.clone()))
        .filter(|id| *id != stack.id)
        .collect();
    // The group's nested stack and the three members.
    assert_eq!(member_stacks.len(), 4, "{member_stacks:?}");
    // Without nested_depth only the top stack's own events come back.
    let top: Vec<StackEvent> = heat
        .list_events(stack.clone(), EventQuery::default())
        .try_collect()
        .await
        .expect("top events");
    assert!(top
        .iter()
        .all(|e| e.stack.as_ref().is_none_or(|s| s.id == stack.id)));
    heat.delete_stack(&stack).await.expect("delete");
}

async fn patch_merges_parameters(server: &Server) {
    let heat = &server.heat;
    let name = unique("cf-patch");
    let stack = create_group(heat, &name, 2).await;
    let mut parameters = BTreeMap::new();
    parameters.insert("image".to_string(), json!("img-v2"));
    heat.update_stack(
        &stack,
        &StackUpdate {
            parameters,
            existing: true,
            ..Default::default()
        },
    )
    .await
    .expect("PATCH accepted");
    assert_eq!(wait_settled(heat, &stack).await, "UPDATE_COMPLETE");
    let detail = heat.get_stack(&stack, false).await.expect("show");
    assert_eq!(
        detail.parameters.get("image").map(String::as_str),
        Some("img-v2")
    );
    assert_eq!(
        detail.parameters.get("count").map(String::as_str),
        Some("2")
    );
    heat.delete_stack(&stack).await.expect("delete");
}

const PAUSED: &str = "UPDATE paused until Hook pre-update is cleared";
const CLEARED: &str = "Hook pre-update is cleared";

fn reasons_for(events: &[StackEvent], member: &str, reason: &str) -> usize {
    events
        .iter()
        .filter(|e| e.resource_name == member && e.status_reason.as_deref() == Some(reason))
        .count()
}

async fn hooks_pause_members_until_cleared(server: &Server) {
    let heat = &server.heat;
    let name = unique("cf-hooks");
    let stack = create_group(heat, &name, 3).await;
    let mut parameters = BTreeMap::new();
    parameters.insert("image".to_string(), json!("img-v3"));
    heat.update_stack(
        &stack,
        &StackUpdate {
            parameters,
            environment: Some(json!({
                "resource_registry": {"resources": {"nodes": {"*": {"hooks": ["pre-update"]}}}}
            })),
            existing: true,
            ..Default::default()
        },
    )
    .await
    .expect("PATCH with hooks accepted");
    wait_events(heat, &stack, "every member paused", |events| {
        ["0", "1", "2"]
            .iter()
            .all(|m| reasons_for(events, m, PAUSED) == 1)
    })
    .await;
    let group = group_stack(heat, &stack).await;
    heat.unset_hook(&group, "1", "pre-update")
        .await
        .expect("clear member 1");
    let events = wait_events(heat, &stack, "member 1 updated", |events| {
        reasons_for(events, "1", CLEARED) == 1
            && events
                .iter()
                .any(|e| e.resource_name == "1" && e.status.raw == "UPDATE_COMPLETE")
    })
    .await;
    // The others are still waiting: nothing cleared, nothing updated.
    for member in ["0", "2"] {
        assert_eq!(reasons_for(&events, member, CLEARED), 0, "member {member}");
        assert!(!events
            .iter()
            .any(|e| e.resource_name == member && e.status.raw == "UPDATE_COMPLETE"));
    }
    // The console's nodes view marks exactly the members still waiting on their hook.
    assert_eq!(
        hook_marks(server, &stack).await,
        vec!["0".to_string(), "2".to_string()]
    );
    // Clearing the same hook again is refused, as Heat does.
    let again = heat.unset_hook(&group, "1", "pre-update").await;
    assert!(
        matches!(&again, Err(ApiError::Http { status: 400, .. })),
        "{again:?}"
    );
    for member in ["0", "2"] {
        heat.unset_hook(&group, member, "pre-update")
            .await
            .expect("clear the rest");
    }
    assert_eq!(wait_settled(heat, &stack).await, "UPDATE_COMPLETE");
    heat.delete_stack(&stack).await.expect("delete");
}

/// Members the live service marks as paused on a hook, as the nodes pane receives them.
async fn hook_marks(server: &Server, stack: &StackRef) -> Vec<String> {
    let service = LiveService::new(server.conn.clone());
    let nodegroup = NodeGroup {
        cluster_id: String::new(),
        node_count: 3,
        status: Status::parse("UPDATE_IN_PROGRESS"),
        ..NodeGroup::of_stack(&stack.id, &stack.name, Role::Worker)
    };
    let mut latest: Vec<Node> = Vec::new();
    let mut updates = service.stream_nodes(nodegroup);
    while let Some(update) = updates.next().await {
        match update.expect("node stream") {
            NodeUpdate::Members(nodes) => latest = nodes,
            NodeUpdate::Done => break,
            _ => {}
        }
    }
    let mut paused: Vec<String> = latest
        .into_iter()
        .filter(|n| n.hook_paused)
        .map(|n| n.key.member)
        .collect();
    paused.sort();
    paused
}

async fn errors_carry_heats_message(server: &Server) {
    let heat = &server.heat;
    let missing = unique("cf-missing");
    let err = heat.resolve(&missing).await.expect_err("no such stack");
    assert_eq!(err.status(), Some(404), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("The Stack ({missing}) could not be found")),
        "{err}"
    );
}

/// Each check as two tests: on the simulator, and (ignored unless the suite runs) on Heat.
macro_rules! conformance {
    ($($check:ident),* $(,)?) => {
        $(
            mod $check {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn simulator() {
                    let server = super::Server::simulator().await;
                    super::$check(&server).await;
                    server.close().await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
                async fn real_heat() {
                    let server = super::Server::real_heat().await;
                    super::$check(&server).await;
                    server.close().await;
                }
            }
        )*
    };
}

conformance!(
    name_lookup_redirects,
    stack_list_pages_once,
    resource_filters,
    nested_events_page_without_gaps,
    patch_merges_parameters,
    hooks_pause_members_until_cleared,
    errors_carry_heats_message,
);
