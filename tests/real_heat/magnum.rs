//! Magnum's node groups on a real OpenStack Heat on 127.0.0.1, in the layout Magnum's Heat
//! driver builds (the stand-in templates of tests/fixtures/shapes/magnum: one cluster stack
//! holding `kube_masters` and `kube_minions`): the Magnum driver's side of caldera finds each
//! default node group's own group in the shared cluster stack (workers are kube_minions,
//! masters kube_masters), the console's node stream of a default node group shows that
//! group's members with the addresses Heat's aggregate outputs give, and a resize the way
//! Magnum sends it (`number_of_minions`, `minions_to_remove`) reaches only the workers. The
//! simulator claims the same (crates/sim/tests/http/magnum_cases.rs); this is where Heat says so.
//!
//! `HEAT_URL` must point at a real Heat (`scripts/heat-standalone.sh start`).

use crate::support::heat_wait;
use crate::support::heat_wait::delete_settled;
use crate::support::real_heat_client;
use caldera::api::heat::{EventQuery, HeatClient, ResourceQuery, StackUpdate};
use caldera::drivers::magnum::group_in_stack;
use caldera::model::{NodeGroup, Role, StackRef};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, NodeUpdate};
use futures::StreamExt;
use heat_wait::wait_status;
use real_heat_client::{connect, create_magnum_layout, default_group, unique};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Heat's own answer for a group's addresses, member index order.
async fn aggregate(heat: &HeatClient, stack: &StackRef, key: &str) -> Vec<String> {
    let out = heat.show_output(stack, key).await.expect("output show");
    out.value
        .as_array()
        .unwrap_or_else(|| panic!("{key} is a list: {}", out.value))
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect()
}

/// Member -> addresses from the console's node stream of `group`.
async fn nodes_pane(service: &LiveService, group: NodeGroup) -> BTreeMap<String, Vec<String>> {
    let mut updates = service.stream_nodes(group);
    let (mut rows, mut filled) = (Vec::new(), BTreeMap::new());
    let deadline = Instant::now() + Duration::from_secs(120);
    while let Some(update) = updates.next().await {
        assert!(Instant::now() < deadline, "node stream did not finish");
        match update.expect("node update") {
            NodeUpdate::Members(nodes) | NodeUpdate::Listed { nodes, .. } => {
                rows = nodes.into_iter().map(|n| n.key.member).collect()
            }
            NodeUpdate::Address(a) => {
                filled.insert(a.member, a.addresses);
            }
            NodeUpdate::AddressFailed { member, error } => panic!("{member}: {error}"),
            NodeUpdate::Named { .. } => {}
            NodeUpdate::Done => break,
        }
    }
    assert_eq!(rows.len(), filled.len(), "every row addressed: {rows:?}");
    filled
}

/// The member stacks of a group: member name -> nested stack id.
async fn member_stacks(heat: &HeatClient, group: &StackRef) -> BTreeMap<String, String> {
    heat.list_resources(group, &ResourceQuery::default())
        .await
        .expect("group listing")
        .into_iter()
        .filter_map(|r| Some((r.resource.name, r.resource.nested?.id)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat at HEAT_URL (scripts/heat-standalone.sh)"]
async fn magnum_default_node_groups_in_the_shared_cluster_stack() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let name = unique("magnum-ng");
    let stack = create_magnum_layout(&heat, &name, 3, 7).await;
    wait_status(&heat, &stack, "CREATE_COMPLETE").await;

    // Each default node group's group in the one cluster stack, by role.
    let (workers_path, workers) = group_in_stack(&heat, &stack, Role::Worker, "default-worker")
        .await
        .expect("listing")
        .expect("the stack holds several groups");
    let (masters_path, masters) = group_in_stack(&heat, &stack, Role::Master, "default-master")
        .await
        .expect("listing")
        .expect("the stack holds several groups");
    assert_eq!(workers_path, "kube_minions");
    assert_eq!(masters_path, "kube_masters");

    // The console's nodes of default-worker are the workers, with Heat's addresses.
    let service = LiveService::new(conn.clone());
    let minions = aggregate(&heat, &stack, "kube_minions_private").await;
    let pane = nodes_pane(
        &service,
        default_group("default-worker", Role::Worker, &stack),
    )
    .await;
    assert_eq!(pane.len(), 7, "{pane:?}");
    // A node's every address: its port's, then its floating one (`kube_minions`).
    let floating = aggregate(&heat, &stack, "kube_minions").await;
    for (i, (ip, fip)) in minions.iter().zip(&floating).enumerate() {
        assert_eq!(
            pane[&i.to_string()],
            vec![ip.clone(), fip.clone()],
            "worker {i}"
        );
    }
    let master_ips = aggregate(&heat, &stack, "kube_masters_private").await;
    let pane = nodes_pane(
        &service,
        default_group("default-master", Role::Master, &stack),
    )
    .await;
    assert_eq!(pane.len(), 3, "{pane:?}");
    let floating = aggregate(&heat, &stack, "kube_masters").await;
    for (i, (ip, fip)) in master_ips.iter().zip(&floating).enumerate() {
        assert_eq!(
            pane[&i.to_string()],
            vec![ip.clone(), fip.clone()],
            "master {i}"
        );
    }

    // Magnum's resize of default-worker: a PATCH of the cluster stack with
    // number_of_minions and minions_to_remove (k8s_template_def.get_scale_params).
    let masters_before = member_stacks(&heat, &masters).await;
    let update = StackUpdate {
        parameters: serde_json::from_value(
            serde_json::json!({"number_of_minions": 6, "minions_to_remove": ["2"]}),
        )
        .expect("parameters"),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &update).await.expect("PATCH");
    tokio::time::sleep(Duration::from_secs(1)).await;
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let after: Vec<String> = member_stacks(&heat, &workers).await.into_keys().collect();
    let mut after: Vec<u32> = after.iter().map(|n| n.parse().expect("index")).collect();
    after.sort();
    assert_eq!(after, [0, 1, 3, 4, 5, 6], "member 2 removed, the rest kept");
    assert_eq!(
        member_stacks(&heat, &masters).await,
        masters_before,
        "the masters kept their member stacks"
    );
    // Heat updates a group whose definition did not change (its resource and nested stack
    // go UPDATE_IN_PROGRESS -> UPDATE_COMPLETE).
    let master_events = heat
        .resource_events(&stack, "kube_masters", &EventQuery::default())
        .await
        .expect("kube_masters events");
    assert!(
        master_events
            .iter()
            .any(|e| e.status.raw == "UPDATE_COMPLETE"),
        "{master_events:?}"
    );
    // Heat updates every member of that group too (`StackResource` always updates a nested
    // stack and lets it find nothing to do): each member resource goes UPDATE_IN_PROGRESS ->
    // UPDATE_COMPLETE and its stack writes `Stack UPDATE started`, but nothing inside a
    // member changes. Read stack by stack: Heat lists no nested events of a nested stack.
    let group_events = heat
        .list_events_page(&masters, &EventQuery::default())
        .await
        .expect("events of the masters' group");
    for member in masters_before.keys() {
        assert!(
            group_events
                .iter()
                .any(|e| &e.resource_name == member && e.status.raw == "UPDATE_COMPLETE"),
            "master {member} is updated (a no-op) with its group: {group_events:?}"
        );
    }
    for (member, id) in member_stacks(&heat, &masters).await {
        let inside = heat.resolve(&id).await.expect("member stack");
        let events = heat
            .list_events_page(&inside, &EventQuery::default())
            .await
            .expect("events of a master");
        assert!(
            events.iter().any(|e| e.resource_name == inside.name
                && e.status_reason.as_deref() == Some("Stack UPDATE started")),
            "master {member}'s stack is updated: {events:?}"
        );
        let touched: Vec<String> = events
            .iter()
            .filter(|e| e.status.raw.starts_with("UPDATE") && e.resource_name != inside.name)
            .map(|e| format!("{} {}", e.resource_name, e.status.raw))
            .collect();
        assert!(
            touched.is_empty(),
            "nothing inside master {member} updated: {touched:?}"
        );
    }
    let minion_events = heat
        .resource_events(&stack, "kube_minions", &EventQuery::default())
        .await
        .expect("kube_minions events");
    assert!(minion_events
        .iter()
        .any(|e| e.status.raw == "UPDATE_COMPLETE"));
    let pane = nodes_pane(
        &service,
        default_group("default-worker", Role::Worker, &stack),
    )
    .await;
    assert_eq!(pane.len(), 6);
    assert!(!pane.contains_key("2"));

    delete_settled(&heat, &stack).await;
}

/// Planning a parameter change for one group of a template nobody here wrote: refused where
/// the parameter does not reach the group (or does not exist), and otherwise shown with
/// Heat's own preview, which names the group as updated and the other group as unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat at HEAT_URL (scripts/heat-standalone.sh)"]
async fn a_group_change_is_planned_from_heats_preview() {
    use caldera::drivers::any_group::plan_group_update;
    let conn = connect().await;
    let heat = conn.heat.clone();
    let stack = create_magnum_layout(&heat, &unique("group-plan"), 1, 2).await;
    wait_status(&heat, &stack, "CREATE_COMPLETE").await;
    let set = |pairs: &[(&str, &str)]| -> caldera::parameter_value::ParameterValues {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    caldera::parameter_value::ParameterValue::parse(v),
                )
            })
            .collect()
    };

    let plan = plan_group_update(
        &heat,
        &stack,
        "kube_minions",
        &set(&[("minion_image", "fedora-coreos-40")]),
        &Default::default(),
    )
    .await
    .expect("plan");
    assert!(plan.refusals.is_empty(), "{:?}", plan.refusals);
    assert!(
        plan.preview.updated.contains(&"kube_minions".to_string()),
        "{:?}",
        plan.preview
    );
    assert!(
        plan.preview.unchanged.contains(&"api_lb".to_string()),
        "{:?}",
        plan.preview
    );
    assert!(plan
        .lines()
        .iter()
        .any(|l| l.contains("updated: ") && l.contains("kube_minions")));

    // The masters' count does not reach the workers' group; an unknown key is no parameter.
    let plan = plan_group_update(
        &heat,
        &stack,
        "kube_minions",
        &set(&[("number_of_masters", "2"), ("flavor", "m1.large")]),
        &Default::default(),
    )
    .await
    .expect("plan");
    assert_eq!(plan.refusals.len(), 3, "{:?}", plan.refusals);
    assert!(plan.refusals[0].contains("no parameter flavor"));
    assert!(plan.refusals[1].contains("does not reach the members of kube_minions"));
    // And it would scale the masters, unheld: the blast radius says so.
    assert!(
        plan.refusals[2].contains("kube_masters (OS::Heat::ResourceGroup) reads number_of_masters"),
        "{:?}",
        plan.refusals
    );
    // Nothing was changed by planning.
    let detail = heat.get_stack(&stack, false).await.expect("show");
    assert_eq!(detail.summary.status.raw, "CREATE_COMPLETE");

    delete_settled(&heat, &stack).await;
}
