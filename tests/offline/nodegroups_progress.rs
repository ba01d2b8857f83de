//! `caldera nodegroups` is a projection of the progress model (issue 25): a node group under
//! an update shows the counts, state, pace and ETA `rollout status` prints for it, read from
//! the same simulated cloud (its clock all but stopped, so both read one moment); a group at
//! rest says idle and claims no figures. A cluster's time in state is its upgrade's age, which
//! a scale of another group during it does not reset.

use crate::support::cli::on_cloud as caldera;
use caldera::sim::{self, SimHandle, SimOptions};

/// Magnum's resize of `cluster`'s `group` to `count`, as any client asks it.
async fn resize(sim: &SimHandle, cluster: &str, group: &str, count: u32) {
    let auth = serde_json::json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": sim.username, "domain": {"name": sim.user_domain_name},
            "password": sim.password}}},
        "scope": {"project": {"name": sim.project_name, "domain": {"name": sim.project_domain_name}}}}});
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/auth/tokens", sim.auth_url))
        .json(&auth)
        .send()
        .await
        .expect("token");
    let token = r.headers()["x-subject-token"]
        .to_str()
        .expect("token")
        .to_string();
    let r = http
        .post(format!(
            "{}/clusters/{cluster}/actions/resize",
            sim.magnum_url()
        ))
        .header("X-Auth-Token", token)
        .header("OpenStack-API-Version", "container-infra 1.10")
        .json(&serde_json::json!({"node_count": count, "nodegroup": group}))
        .send()
        .await
        .expect("resize");
    assert!(r.status().is_success(), "{:?}", r.text().await);
}

/// The row named `name` in a `--format json` table.
fn row(json: &str, name: &str) -> serde_json::Value {
    let rows: serde_json::Value = serde_json::from_str(json).expect("JSON");
    rows.as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("{name} listed: {json}"))
}

fn cell(v: &serde_json::Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodegroups_gives_rollout_status_figures_and_a_scale_keeps_the_upgrades_age() {
    // The demo's prod-east upgrade of default-worker, its clock all but stopped.
    let sim = sim::start(SimOptions::fast("demo", 0.0))
        .await
        .expect("simulator");
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("write clouds.yaml");

    let (ok, status, err) = caldera(
        &clouds,
        &["rollout", "status", "prod-east/default-worker", "--summary"],
    );
    assert!(ok, "{err}");
    let (ok, groups, err) = caldera(&clouds, &["nodegroups", "prod-east", "--format", "json"]);
    assert!(ok, "{err}");
    let g = row(&groups, "default-worker");
    let progress = cell(&g, "progress");
    // The counts add up to the members (new N/1000), in the words `rollout status` prints.
    assert!(
        progress.starts_with("new ") && progress.contains("/1000 "),
        "{g}"
    );
    assert!(status.contains(&format!("; {progress}\n")), "{status}\n{g}");
    let state = cell(&g, "state");
    assert!(status.contains(&format!(": {state}")), "{status}\n{g}");
    // Pace and ETA only while members move, in both.
    let (pace, eta) = (cell(&g, "pace"), cell(&g, "eta"));
    assert_eq!(state == "running", eta != "-", "{g}");
    assert_eq!(pace == "-", status.contains("pace - "), "{status}\n{g}");
    // A group at rest (a settled cluster's): idle, no figures claimed.
    let (ok, settled, err) = caldera(&clouds, &["nodegroups", "dev-small", "--format", "json"]);
    assert!(ok, "{err}");
    let idle = row(&settled, "default-worker");
    assert_eq!(cell(&idle, "state"), "idle", "{idle}");
    assert!(cell(&idle, "progress").is_empty(), "{idle}");

    // Time in state: the upgrade's age, before and after a scale of another group (which
    // saves the cluster again).
    let cluster_since = || {
        let (ok, out, err) = caldera(&clouds, &["clusters", "--format", "json"]);
        assert!(ok, "{err}");
        cell(&row(&out, "prod-east"), "since")
    };
    let before = cluster_since();
    assert_eq!(
        before,
        cell(&g, "since"),
        "the cluster's update is its group's"
    );
    // caldera refuses a scale while the cluster updates; another operator's client does not
    // ask (Magnum's resize of workers-az2, 40 -> 41).
    resize(&sim, "prod-east", "workers-az2", 41).await;
    let (ok, groups, err) = caldera(&clouds, &["nodegroups", "prod-east", "--format", "json"]);
    assert!(ok, "{err}");
    let scaled = row(&groups, "workers-az2");
    assert_eq!(cell(&scaled, "status"), "UPDATE_IN_PROGRESS", "{scaled}");
    assert!(cell(&scaled, "since") > before, "{scaled}\n{before}");
    assert_eq!(cluster_since(), before, "a scale reset the upgrade's age");
    sim.shutdown().await;
}
