//! The clusters list: loading, loaded, failed and empty; a stale list; a cloud with Heat only;
//! the time in state through a scale during an upgrade; empty panes and read-only.

use super::*;

#[tokio::test]
async fn snapshot_clusters_loading_loaded_error_empty() {
    let mut h = Harness::demo(1000);
    snap!(h, "clusters_loading");
    h.settle().await;
    snap!(h, "clusters");

    let mut h = Harness::demo(1000);
    h.fake.set_error(
        FakeOp::ListClusters,
        Some(ServiceError::new(
            ErrorKind::Transport,
            "GET /v1/clusters: connection refused",
        )),
    );
    h.settle().await;
    snap!(h, "clusters_error");

    let mut h = Harness::new(FakeCloud::default());
    h.app.info_mut().has_magnum = true;
    h.settle().await;
    snap!(h, "clusters_empty");
    assert!(!h.render(80, 24).contains("No Magnum endpoint"));
}

#[tokio::test]
async fn heat_only_cloud_says_why_there_are_no_clusters() {
    let mut h = Harness::new(FakeCloud::default());
    h.app.info_mut().has_magnum = false;
    h.settle().await;
    let screen = h.render(100, 24);
    assert!(
        screen.contains("No Magnum endpoint on this cloud") && screen.contains(":stacks"),
        "{screen}"
    );
}

#[tokio::test]
async fn snapshot_stale_after_failed_refresh() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.fake.set_error(
        FakeOp::ListClusters,
        Some(ServiceError::new(
            ErrorKind::Http,
            "HTTP 503 from container-infra",
        )),
    );
    h.key(KeyAction::Refresh);
    h.settle().await;
    snap!(h, "clusters_stale");
}

#[tokio::test]
async fn snapshot_empty_panes_and_read_only() {
    let mut h = Harness::demo(1000);
    h.app.set_read_only(true);
    h.settle().await;
    h.key(KeyAction::Down); // staging: healthy, no events
    h.key(KeyAction::Open);
    h.settle().await;
    h.app.plan_refresh(false);
    h.settle().await;
    snap!(h, "dashboard_no_events_read_only");
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    snap!(h, "events_empty");
    let mut h = Harness::demo(1000);
    h.fake
        .with_data(|d| d.nodegroups.retain(|g| !g.cluster_id.starts_with("edge")));
    h.settle().await;
    h.key(KeyAction::Bottom); // edge-native: no node groups left
    h.app
        .update(Action::Command(crate::message::Command::NodeGroups));
    h.settle().await;
    snap!(h, "nodegroups_empty");
}

/// Issue 25: a cluster's IN STATE is its upgrade's age, not reset by a scale of another group
/// during it. prod-k8s's default-worker upgrade started 23 minutes ago; gpu-worker's scale 3
/// minutes ago saved the cluster again (Magnum's `updated_at`). The clusters list, the node
/// groups and the dashboard's groups say 23m for the cluster and the upgraded group, 3m for the
/// scaled one.
#[tokio::test]
async fn a_scale_during_an_upgrade_does_not_reset_the_clusters_time_in_state() {
    let mut h = Harness::demo(40);
    let now = demo_epoch();
    let ago = |m: i64| Some(now - chrono::Duration::minutes(m));
    h.fake.with_data(|d| {
        let c = d.clusters.first_mut().expect("prod-k8s");
        c.status = crate::model::Status::parse("UPDATE_IN_PROGRESS");
        c.updated_at = ago(3);
        let cid = c.id.clone();
        for g in d.nodegroups.iter_mut().filter(|g| g.cluster_id == cid) {
            (g.status, g.updated_at) = match g.name.as_str() {
                "default-worker" => (crate::model::Status::parse("UPDATE_IN_PROGRESS"), ago(23)),
                "gpu-worker" => (crate::model::Status::parse("UPDATE_IN_PROGRESS"), ago(3)),
                _ => (g.status.clone(), g.updated_at),
            };
        }
    });
    h.settle().await;
    // The cluster's groups are read (the dashboard), then the clusters list again.
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::Back);
    h.settle().await;
    let row = |screen: &str, name: &str| -> String {
        screen
            .lines()
            .find(|l| l.contains(&format!("  {name} ")))
            .unwrap_or_default()
            .to_string()
    };
    let clusters = h.render(200, 60);
    let prod = row(&clusters, "prod-k8s");
    assert!(prod.contains("UPDATE_IN_PROGRESS   23m "), "{clusters}");
    h.key(KeyAction::Open);
    h.settle().await;
    let dash = h.render(200, 60);
    assert!(row(&dash, "default-worker").contains(" 23m "), "{dash}");
    assert!(row(&dash, "gpu-worker").contains(" 3m "), "{dash}");
}
