//! "Why stuck" over the in-process simulator's demo, through the same service calls the
//! console makes (resources to depth 3, the nested events): `staging`'s member 2 never
//! finishes its update and is compared with how long members 0 and 1 took; `prod-east`'s
//! three members held on the pre-update hook are counted and named, not reported as stuck.

use crate::support::sim_group;
use caldera::model::{NodeGroup, StackRef};
use caldera::ops::stuck::is_stalled;
use caldera::service::live::LiveService;
use caldera::service::{CloudService, EventCursor};
use caldera::sim::world::group::Phase;
use caldera::sim::{self, SimOptions};
use caldera::tui::state::store::{build_tree, TreeData};

async fn service() -> (sim::SimHandle, LiveService) {
    // Slow enough that the demo's state holds still while it is read.
    let (sim, conn) = sim_group::connected(SimOptions::fast("demo", 1.0)).await;
    (sim, LiveService::new(conn))
}

async fn group(service: &LiveService, cluster: &str, name: &str) -> NodeGroup {
    let c = service
        .list_clusters()
        .await
        .expect("clusters")
        .into_iter()
        .find(|c| c.name == cluster)
        .unwrap_or_else(|| panic!("cluster {cluster} listed"));
    service
        .list_nodegroups(c)
        .await
        .expect("node groups")
        .into_iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("node group {name} listed"))
}

/// The tree of a node group's stack, assessed with its events, as the console builds it.
async fn tree(service: &LiveService, g: &NodeGroup) -> TreeData {
    let id = g.stack_id.clone().expect("a Heat stack");
    let stack = StackRef {
        name: id.clone(),
        id: id.clone(),
    };
    let resources = service
        .stack_resources(stack.clone(), 3)
        .await
        .expect("resources");
    let (events, _) = service
        .poll_events(stack, 5, EventCursor::default())
        .await
        .expect("events");
    build_tree(&id, resources, &events)
}

#[tokio::test]
async fn staging_member_is_compared_with_how_long_its_siblings_took() {
    let (_sim, service) = service().await;
    let g = group(&service, "staging", "default-worker").await;
    let t = tree(&service, &g).await;
    assert!(t.stuck.holds.is_empty(), "{:?}", t.stuck.holds);
    // Two causes in member 2: its server, and its software deployment (`node_config`,
    // waiting for its agent's signal), which `caldera deployments` and why-stuck explain.
    let [c, deploy] = t.stuck.causes.as_slice() else {
        panic!("two causes: {:?}", t.stuck.causes)
    };
    let (c, deploy) = match t.rows[c.index].resource.resource_type.as_str() {
        "OS::Nova::Server" => (c, deploy),
        _ => (deploy, c),
    };
    let other = &t.rows[deploy.index];
    assert!(other.path.ends_with("> 2 > node_config"), "{}", other.path);
    assert_eq!(other.resource.resource_type, "OS::Heat::SoftwareDeployment");
    let row = &t.rows[c.index];
    assert!(row.path.ends_with("> 2 > kube-minion"), "{}", row.path);
    assert_eq!(row.resource.resource_type, "OS::Nova::Server");
    assert!(c.server_id.is_some(), "the server is asked of Nova");
    // Members 0 and 1 updated in seconds; member 2 has been at it for hours.
    let d = c.siblings.expect("siblings' durations from events");
    assert_eq!(d.count, 2, "{d:?}");
    assert!(d.max < 600, "{d:?}");
    let since = c.since.expect("since");
    let elapsed = (chrono::Utc::now() - since).num_seconds();
    assert!(is_stalled(elapsed, Some(&d)), "{elapsed} s against {d:?}");
}

/// The members of prod-east's default workers the simulated cloud holds on a hook.
fn held_in_world(sim: &sim::SimHandle) -> Vec<String> {
    sim.with_world(|w| {
        let c = w
            .cluster_by_ident("prod-east")
            .expect("prod-east in the world");
        let Some(g) = w.clusters[c]
            .groups
            .iter()
            .copied()
            .find(|&g| w.groups[g].name == "default-worker")
        else {
            return Vec::new();
        };
        let mut held: Vec<String> = w.groups[g]
            .members
            .iter()
            .filter(|(_, m)| matches!(m.phase, Phase::Paused(..)))
            .map(|(i, _)| i.to_string())
            .collect();
        held.sort();
        held
    })
}

#[tokio::test]
async fn prod_east_members_held_on_hooks_are_counted_not_stuck() {
    let (sim, service) = service().await;
    // The demo's batch reaches its three hooks as the simulated cloud runs: wait (bounded)
    // until the world holds all three; nothing releases them afterwards.
    for _ in 0..120 {
        if held_in_world(&sim).len() == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert_eq!(held_in_world(&sim), ["412", "433", "447"]);
    let g = group(&service, "prod-east", "default-worker").await;
    let t = tree(&service, &g).await;
    let holds: Vec<(String, Vec<String>)> = t
        .stuck
        .holds
        .iter()
        .map(|h| {
            let names = h
                .members
                .iter()
                .map(|&i| t.rows[i].resource.name.clone())
                .collect();
            (h.hook.clone(), names)
        })
        .collect();
    assert_eq!(
        holds,
        [(
            "pre-update".to_string(),
            vec!["412".to_string(), "433".into(), "447".into()]
        )],
    );
    for h in &t.stuck.holds {
        for &i in &h.members {
            assert_eq!(t.rows[i].hook.as_deref(), Some("pre-update"));
        }
    }
    // No held member, nor anything inside one, is reported as stuck work.
    for c in &t.stuck.causes {
        let path = &t.rows[c.index].path;
        assert!(
            !["412", "433", "447"]
                .iter()
                .any(|m| path.contains(&format!("> {m}"))),
            "{path} is held, not stuck"
        );
    }
}
