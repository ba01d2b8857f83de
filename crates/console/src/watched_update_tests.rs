//! The rollout view on updates caldera does not drive (a Magnum upgrade, a foreign Heat
//! update), through the worker and the [`FakeOperator`]: shown with its label and figures,
//! pause/resume/skip refused with the reason, abort refused for Magnum and a confirmed
//! Heat cancel for a foreign Heat update; `u` on a Magnum cluster opens the view on it.

use super::*;
use crate::model::{StackRef, Status};
use crate::rollout::observed::{
    observed_status, MemberFact, ObservedUpdate, Timeline, UpdateFacts, UpdateKind,
};

/// An observed update of `g` with six members, half done, one updating, one failed, one
/// not reached, computed by the same function the live operator uses.
fn observed(c: &Cluster, g: &NodeGroup, kind: UpdateKind) -> (ObservedUpdate, RolloutStatus) {
    let target = target_of(c, g);
    let stack = target.stack.clone().expect("fake node groups have stacks");
    let group = StackRef {
        name: format!("{}-group", stack.name),
        id: format!("{}-group", stack.id),
    };
    let update = ObservedUpdate::heat(target, kind, stack, group);
    let t0 = demo_epoch() - Chrono::seconds(120);
    let at = |s: i64| Some(t0 + Chrono::seconds(s));
    let member = |i: usize, status: &str, secs: i64| MemberFact {
        name: i.to_string(),
        status: Status::parse(status),
        reason: (status == "UPDATE_FAILED").then(|| "kubelet not ready".to_string()),
        updated_at: at(secs),
    };
    let facts = UpdateFacts {
        id: update.id(),
        target: update.target.label(),
        image: "fedora-coreos-40".into(),
        stack_status: Status::parse("UPDATE_IN_PROGRESS"),
        stack_reason: String::new(),
        started_at: at(0),
        batch_size: 2,
        members: vec![
            member(0, "UPDATE_COMPLETE", 40),
            member(1, "UPDATE_COMPLETE", 50),
            member(2, "UPDATE_COMPLETE", 90),
            member(3, "UPDATE_IN_PROGRESS", 95),
            member(4, "UPDATE_FAILED", 100),
            member(5, "CREATE_COMPLETE", -600),
        ],
    };
    // Heat's events for the first three members (the others' were not read yet).
    let mut timeline = Timeline::default();
    let ev = |id: &str, m: usize, status: &str, secs: i64| crate::model::StackEvent {
        id: id.into(),
        time: t0 + Chrono::seconds(secs),
        resource_name: m.to_string(),
        logical_id: m.to_string(),
        physical_id: None,
        status: Status::parse(status),
        status_reason: None,
        stack: None,
        path: vec![],
    };
    timeline.ingest(
        &update.stacks().expect("Heat's").1.name,
        &[
            ev("a", 0, "UPDATE_IN_PROGRESS", 5),
            ev("b", 1, "UPDATE_IN_PROGRESS", 6),
            ev("c", 0, "UPDATE_COMPLETE", 40),
            ev("d", 1, "UPDATE_COMPLETE", 50),
            ev("e", 2, "UPDATE_IN_PROGRESS", 52),
            ev("f", 2, "UPDATE_COMPLETE", 90),
        ],
    );
    let status = observed_status(&facts, &timeline, demo_epoch());
    (update, status)
}

/// Opens the dashboard of the first cluster (`prod-k8s`, Magnum) and its rollout view.
async fn open_prod_rollout(h: &mut H) -> (Cluster, NodeGroup) {
    h.pump().await;
    h.key(KeyAction::Open);
    h.pump().await;
    h.key(KeyAction::RolloutView);
    match &h.app.view().kind {
        ViewKind::Rollout { cluster, nodegroup } => {
            assert_eq!(cluster.name, "prod-k8s");
            (cluster.clone(), nodegroup.clone())
        }
        other => panic!("not the rollout view: {other:?}"),
    }
}

#[tokio::test]
async fn a_magnum_update_is_observed_and_the_controls_say_why_not() {
    let mut h = H::ops();
    let (c, g) = open_prod_rollout(&mut h).await;
    let (update, status) = observed(&c, &g, UpdateKind::Magnum);
    h.op = h.op.clone().with_observed_update(update, status);
    h.pump().await;
    let calls = h.op.calls();
    let label = format!("{}/{}", c.name, g.name);
    assert!(
        calls.contains(&format!("find_rollout {label}")),
        "{calls:?}"
    );
    assert!(calls.contains(&format!("find_update {label}")), "{calls:?}");
    assert!(
        calls.contains(&format!("observe_update {label}")),
        "{calls:?}"
    );
    let screen = h.screen();
    assert!(
        screen.contains("Magnum update, observed: Magnum runs the batches"),
        "{screen}"
    );
    assert!(screen.contains("(observed: not driven by caldera)"));
    assert!(screen.contains("new 3/6"), "{screen}");
    assert!(screen.contains("failed 1"));
    assert!(screen.contains("kubelet not ready"));
    snap!(h, "observed_magnum_update");
    for (key, what) in [('p', "pause"), ('R', "resume"), ('x', "skip")] {
        h.press(KeyCode::Char(key));
        assert!(
            h.status().starts_with(&format!(
                "{what} does not apply: Magnum runs this update's batches"
            )),
            "{}",
            h.status()
        );
    }
    h.press(KeyCode::Char('A'));
    assert!(h.dialog().is_none());
    assert!(
        h.status()
            .starts_with("abort is not available: Magnum owns this update"),
        "{}",
        h.status()
    );
    h.pump().await;
    assert!(h.op.calls().iter().all(|c| !c.starts_with("cancel_update")
        && !c.starts_with("request_rollout")
        && !c.starts_with("reattach_rollout")));
}

#[tokio::test]
async fn a_foreign_heat_update_can_be_cancelled_through_heat_after_a_confirmation() {
    let mut h = H::ops();
    let (c, g) = h.edge_rows().await;
    let (update, status) = observed(&c, &g, UpdateKind::Heat);
    h.op = h.op.clone().with_observed_update(update, status);
    h.open_edge().await;
    h.key(KeyAction::RolloutView);
    h.pump().await;
    let screen = h.screen();
    assert!(
        screen.contains("Heat update not started by caldera"),
        "{screen}"
    );
    h.press(KeyCode::Char('p'));
    assert!(h
        .status()
        .contains("caldera did not start this Heat update"));
    h.press(KeyCode::Char('A'));
    assert!(matches!(h.dialog(), Some(Dialog::Confirm(_))));
    assert!(h.screen().contains("{\"cancel_update\":null}"));
    assert!(
        h.app.take_requests().is_empty(),
        "nothing before the confirmation"
    );
    h.press(KeyCode::Char('y'));
    h.pump().await;
    assert!(
        h.op.calls()
            .contains(&"cancel_update edge-native/edge rollback=true".to_string()),
        "{:?}",
        h.op.calls()
    );
    assert!(
        h.status()
            .contains("sent to the rollout of edge-native/edge"),
        "{}",
        h.status()
    );
}

#[tokio::test]
async fn a_magnum_upgrade_from_u_opens_the_rollout_view_on_it() {
    let mut h = H::ops();
    h.pump().await;
    h.key(KeyAction::Open);
    h.pump().await;
    let (c, g) = open_prod_rollout_rows(&mut h).await;
    let (update, status) = observed(&c, &g, UpdateKind::Magnum);
    h.op = h.op.clone().with_observed_update(update, status);
    h.press(KeyCode::Char('u'));
    h.type_str("k8s-v1.30");
    h.press(KeyCode::Enter);
    h.pump().await;
    h.press(KeyCode::Enter);
    h.pump().await;
    assert!(
        h.op.calls()
            .iter()
            .any(|c| c.starts_with("start_upgrade prod-k8s/")),
        "{:?}",
        h.op.calls()
    );
    assert!(
        matches!(&h.app.view().kind, ViewKind::Rollout { nodegroup, .. } if nodegroup.id == g.id),
        "{:?}",
        h.app.view().kind
    );
    assert!(h
        .screen()
        .contains("Magnum update, observed: Magnum runs the batches"));
}

/// The node group `o` and `u` act on from the dashboard of the cluster in view.
async fn open_prod_rollout_rows(h: &mut H) -> (Cluster, NodeGroup) {
    h.key(KeyAction::RolloutView);
    let rows = match &h.app.view().kind {
        ViewKind::Rollout { cluster, nodegroup } => (cluster.clone(), nodegroup.clone()),
        other => panic!("not the rollout view: {other:?}"),
    };
    h.key(KeyAction::Back);
    h.pump().await;
    rows
}

/// Nova's servers of a node group of six at `at` seconds into a Cluster API upgrade: the
/// k-th replacement starts at 45k s, its new server builds for 50 s, then its old one is
/// deleting for 15 s, then gone (the next new machine starts while the old one is leaving,
/// as a MachineDeployment's surge allows).
fn capi_servers_at(
    at: i64,
    t0: chrono::DateTime<chrono::Utc>,
) -> Vec<crate::rollout::observed_nova::ServerFact> {
    use crate::rollout::observed_nova::ServerFact;
    let (old, new) = ("ubuntu-2204-kube-v1.30.2", "ubuntu-2204-kube-v1.31.1");
    let olds = [
        "8d2kx-p5mzt",
        "8d2kx-q7n2w",
        "8d2kx-r2d2x",
        "8d2kx-s9k4m",
        "8d2kx-t3b8v",
        "8d2kx-u6c1n",
    ];
    let news = [
        "w7pq1-a1b2c",
        "w7pq1-d3e4f",
        "w7pq1-g5h6i",
        "w7pq1-j7k8l",
        "w7pq1-m9n0p",
        "w7pq1-q1r2s",
    ];
    let server =
        |name: &str, status: &str, task: Option<&str>, image: &str, secs: i64| ServerFact {
            name: format!("kube-7xk2q-default-worker-4hq9z-{name}"),
            status: status.into(),
            task_state: task.map(str::to_string),
            image: Some(image.into()),
            fault: None,
            created: Some(t0 + Chrono::seconds(secs)),
        };
    let mut out = Vec::new();
    for k in 0..6 {
        let start = 45 * k as i64;
        match at - start {
            d if d < 50 => out.push(server(olds[k], "ACTIVE", None, old, -3600)),
            d if d < 65 => out.push(server(olds[k], "ACTIVE", Some("deleting"), old, -3600)),
            _ => {}
        }
        match at - start {
            d if d < 0 => {}
            d if d < 50 => out.push(server(news[k], "BUILD", Some("spawning"), new, start)),
            _ => out.push(server(news[k], "ACTIVE", None, new, start)),
        }
    }
    out
}

/// A Magnum upgrade of a Cluster API cluster seen from Nova, looked at every 5 s: three old
/// machines gone and replaced, one being deleted now that its replacement is up, one whose
/// replacement is building, one on the old image; computed by the live operator's
/// classification.
fn observed_capi(c: &Cluster, g: &NodeGroup) -> (ObservedUpdate, RolloutStatus) {
    use crate::model::{CapiCluster, CapiDriver, Role};
    use crate::rollout::observed::UpdateSource;
    use crate::rollout::observed_nova::{capi_status, NovaFacts, Sightings};
    let capi = CapiCluster {
        driver: CapiDriver::MagnumClusterApi,
        name: "kube-7xk2q".into(),
    };
    let update = ObservedUpdate {
        target: target_of(c, g),
        kind: UpdateKind::MagnumCapi,
        source: UpdateSource::Nova {
            capi,
            role: Role::Worker,
        },
    };
    let end = 195;
    let t0 = demo_epoch() - Chrono::seconds(end);
    let mut seen = Sightings::default();
    for at in (-5..=end).step_by(5) {
        seen.ingest(&capi_servers_at(at, t0), t0 + Chrono::seconds(at));
    }
    let facts = NovaFacts {
        id: update.id(),
        target: update.target.label(),
        image: "ubuntu-2204-kube-v1.31.1".into(),
        cluster_status: Status::parse("UPDATE_IN_PROGRESS"),
        cluster_reason: String::new(),
        servers: capi_servers_at(end, t0),
    };
    let status = capi_status(&facts, &seen, demo_epoch());
    (update, status)
}

#[tokio::test]
async fn a_cluster_api_upgrade_is_observed_from_nova_node_by_node() {
    let mut h = H::ops();
    let (c, g) = open_prod_rollout(&mut h).await;
    let (update, status) = observed_capi(&c, &g);
    assert_eq!((status.done, status.remaining), (3, 3));
    h.op = h.op.clone().with_observed_update(update, status);
    h.pump().await;
    let screen = h.render(200, 60);
    assert!(
        screen.contains("Magnum update through Cluster API, observed from Nova"),
        "{screen}"
    );
    assert!(screen.contains("replacement kube-7xk2q-default-worker-4hq9z-w7pq1-m9n0p BUILD"));
    assert!(screen.contains("w7pq1-j7k8l (ubuntu-2204-kube-v1.31.1); deleting"));
    assert!(screen.contains("old image ubuntu-2204-kube-v1.30.2"));
    snap!(h, "observed_capi_update");
    for (key, what) in [('p', "pause"), ('R', "resume"), ('x', "skip")] {
        h.press(KeyCode::Char(key));
        assert!(
            h.status().starts_with(&format!(
                "{what} does not apply: Magnum's Cluster API driver replaces the machines"
            )),
            "{}",
            h.status()
        );
    }
    h.press(KeyCode::Char('A'));
    assert!(h.dialog().is_none());
    assert!(
        h.status().contains("caldera cannot stop it"),
        "{}",
        h.status()
    );
}

/// An update of the masters Magnum runs that has reached none of them yet, as the simulator's
/// prod-east `default-master` (UPDATE_IN_PROGRESS, its three members complete from before the
/// update, on the group's image): computed by the function the live operator uses.
fn masters_observed(c: &Cluster, g: &NodeGroup) -> (ObservedUpdate, RolloutStatus) {
    let target = target_of(c, g);
    let stack = target.stack.clone().expect("fake node groups have stacks");
    let group = StackRef {
        name: format!("{}-group", stack.name),
        id: format!("{}-group", stack.id),
    };
    let update = ObservedUpdate::heat(target, UpdateKind::Magnum, stack, group);
    let t0 = demo_epoch() - Chrono::seconds(120);
    let facts = UpdateFacts {
        id: update.id(),
        target: update.target.label(),
        image: "fedora-coreos-40".into(),
        stack_status: Status::parse("UPDATE_IN_PROGRESS"),
        stack_reason: String::new(),
        started_at: Some(t0),
        batch_size: 1,
        members: (0..3)
            .map(|i| MemberFact {
                name: i.to_string(),
                status: Status::parse("CREATE_COMPLETE"),
                reason: None,
                updated_at: Some(t0 - Chrono::days(41)),
            })
            .collect(),
    };
    let status = observed_status(&facts, &Timeline::default(), demo_epoch());
    (update, status)
}

/// Issue 25: an update caldera does not drive, whose members alone say nothing of it (Magnum
/// updating prod-k8s's masters, none reached yet). `caldera nodegroups` prints its observed
/// model (`rollout status`'s: `new 0/3 … old 3`, running); the node-groups pane's PROGRESS,
/// the dashboard's and the nodes pane's summary show that same model, taken in when the
/// observation came (the frames compute none).
#[tokio::test]
async fn an_update_nobody_here_drives_shows_its_observed_model_in_the_panes() {
    let mut h = H::ops();
    let (c, g) = h.fake.with_data(|d| {
        let g = d
            .nodegroups
            .iter_mut()
            .find(|g| g.id == "prod-k8s-default-master-uuid")
            .expect("prod-k8s's masters");
        g.status = Status::parse("UPDATE_IN_PROGRESS");
        let g = g.clone();
        let c = d
            .clusters
            .iter()
            .find(|c| c.id == g.cluster_id)
            .expect("prod-k8s")
            .clone();
        (c, g)
    });
    let (update, status) = masters_observed(&c, &g);
    h.op = h.op.clone().with_observed_update(update, status.clone());
    // What `caldera nodegroups` prints for the group (its cells) and the pane's cell: one model.
    let model = &status.progress;
    assert_eq!(
        model.cells()[..2],
        [
            "new 0/3 updating 0 held 0 old 3".to_string(),
            "running".into()
        ]
    );
    let cell = model.row_text();
    assert_eq!(cell, "new 0/3 old 3");

    h.pump().await;
    h.key(KeyAction::Open);
    h.pump().await;
    h.app.plan_refresh(false);
    h.pump().await;
    let row_of = |screen: &str| {
        screen
            .lines()
            .find(|l| l.contains("default-master"))
            .unwrap_or_else(|| panic!("{screen}"))
            .to_string()
    };
    // The dashboard's groups, then the node-groups pane: the PROGRESS cell (empty before,
    // when only the members were read).
    let row = row_of(&h.screen());
    assert!(row.contains(&format!(" {cell} ")), "dashboard: {row}");
    h.app
        .update(Action::Command(crate::message::Command::NodeGroups));
    h.pump().await;
    let row = row_of(&h.screen());
    assert!(row.contains(&format!(" {cell} ")), "node groups: {row}");

    let label = format!("{}/{}", c.name, g.name);
    let calls = h.op.calls();
    assert!(
        calls.contains(&format!("observe_update {label}")),
        "the dashboard follows the masters' update: {calls:?}"
    );
    assert_eq!(
        h.app.store().models.progress(&g.id),
        Some(&**model),
        "the console's model of the group is the observed update's"
    );

    // The nodes pane's summary: the same counts, said as observed.
    h.key(KeyAction::Open);
    h.pump().await;
    let screen = h.screen();
    assert!(
        screen
            .lines()
            .any(|l| l.contains("observed") && l.contains("old 3")),
        "{screen}"
    );
}
