//! Cluster API clusters that stall: what the dashboard and the nodes pane say.

use super::*;

/// prod-k8s made a Cluster API cluster in `CREATE_IN_PROGRESS` for two hours: its workers
/// are Nova servers, three ACTIVE after 3-4 minutes, one in BUILD for 1h50m.
fn stalled_capi(h: &Harness) {
    use crate::model::{CapiCluster, CapiDriver, Node, NodeKey, Status, StatusState};
    let now = demo_epoch();
    h.fake.with_data(|d| {
        let capi = CapiCluster {
            driver: CapiDriver::MagnumClusterApi,
            name: "kube-ab12c".into(),
        };
        let c = &mut d.clusters[0];
        c.capi = Some(capi.clone());
        c.stack_id = None;
        c.status = Status::parse("CREATE_IN_PROGRESS");
        c.status_reason = Some("WaitingForMachines: 1 machine(s) not ready".into());
        c.created_at = Some(now - chrono::Duration::hours(2));
        let cid = c.id.clone();
        let mut ids = Vec::new();
        for g in d.nodegroups.iter_mut().filter(|g| g.cluster_id == cid) {
            g.capi = Some(capi.clone());
            g.stack_id = None;
            g.status = Status::parse("CREATE_IN_PROGRESS");
            g.status_reason = None;
            // Being created, not upgraded: the servers boot the group's own image.
            g.image = Some("ubuntu-2204-kube-v1.30.2".into());
            ids.push((g.id.clone(), g.name.clone()));
        }
        for (id, name) in ids {
            let nova = |raw: &str, state| Status {
                action: "NOVA".into(),
                state,
                raw: raw.into(),
            };
            let nodes: Vec<Node> = (0..4u32)
                .map(|i| {
                    let created = now - chrono::Duration::minutes(115 - i as i64);
                    let building = i == 3;
                    let server = format!("kube-ab12c-{name}-x7k2p-{i}q9zt");
                    Node {
                        key: NodeKey {
                            nodegroup: id.clone(),
                            member: server.clone(),
                        },
                        index: None,
                        name: server,
                        zone: Some("az-1".into()),
                        ip: None,
                        status: if building {
                            nova("BUILD", StatusState::InProgress)
                        } else {
                            nova("ACTIVE", StatusState::Complete)
                        },
                        status_reason: building.then(|| "task: spawning".into()),
                        image: Some("ubuntu-2204-kube-v1.30.2".into()),
                        since: Some(if building {
                            created
                        } else {
                            created + chrono::Duration::minutes(3 + i as i64 % 2)
                        }),
                        hook_paused: false,
                        hook_inferred: false,
                        held_by_rollout: None,
                        stack_id: None,
                        server_id: Some(format!("srv-{i}")),
                        created: Some(created),
                        replacing: false,
                    }
                })
                .collect();
            d.nodes.insert(id, nodes);
        }
    });
}

/// A Cluster API cluster whose Magnum status says only `CREATE_IN_PROGRESS`: the dashboard
/// and the nodes pane say it is stalled and name the slowest server.
#[tokio::test]
async fn snapshot_stalled_capi_cluster() {
    let mut h = Harness::demo(1000);
    stalled_capi(&h);
    h.open_prod().await;
    let screen = h.render(200, 60);
    assert!(
        screen.contains(
            "default-master: stalled for 1h52m: kube-ab12c-default-master-x7k2p-3q9zt in BUILD"
        ),
        "{screen}"
    );
    snap!(h, "capi_stalled_dashboard");
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Nodes { .. }));
    snap!(h, "capi_stalled_nodes");
    insta::assert_snapshot!("capi_stalled_nodes_120x40", h.render(120, 40));
}
