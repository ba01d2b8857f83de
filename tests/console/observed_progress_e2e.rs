//! Issue 25, one truth of progress, for an update caldera does not drive: the simulator's
//! prod-east `default-master` is being updated by Magnum (no rollout in any journal), and its
//! members alone say nothing of it (still complete, on the group's image). `caldera
//! nodegroups` prints the observed model core computes for it (`rollout status`'s); the
//! console's node-groups pane, on the same simulated cloud with its clock stopped, shows that
//! model in its PROGRESS cell, and its nodes pane's summary says it is observed.

use crate::support::cli::on_cloud;
use crate::support::pty::Console;
use caldera::sim::{self, SimOptions};

const ENTER: &str = "\r";

/// The console's PROGRESS cell for a group under an update, from the cells `caldera
/// nodegroups` prints for it (`Progress::row_text` of the same model): the counts that are
/// not zero (`new` always), then pace and ETA while they exist, then the state when the
/// update is not running.
fn pane_cell(progress: &str, state: &str, pace: &str, eta: &str) -> String {
    let words: Vec<&str> = progress.split(' ').collect();
    let counts: Vec<String> = words
        .chunks(2)
        .filter(|w| w[0] == "new" || w.get(1).is_some_and(|n| *n != "0"))
        .map(|w| w.join(" "))
        .collect();
    let mut parts = vec![counts.join(" ")];
    if pace != "-" || eta != "-" {
        parts.push(format!("pace {pace} ETA {eta}"));
    }
    if state != "running" {
        parts.push(state.to_string());
    }
    parts.join(" · ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_nobody_drives_reads_the_same_in_the_node_groups_pane_and_nodegroups() {
    let sim = sim::start(SimOptions::fast("demo", 0.0))
        .await
        .expect("simulator");
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds_path = dir.path().join("clouds.yaml");
    let clouds = sim.clouds_yaml("simcloud");
    std::fs::write(&clouds_path, &clouds).expect("write clouds.yaml");

    let (ok, status, err) = on_cloud(
        &clouds_path,
        &["rollout", "status", "prod-east/default-master", "--summary"],
    );
    assert!(ok, "{err}");
    assert!(status.starts_with("rollout observed ("), "{status}");
    let (ok, json, err) = on_cloud(
        &clouds_path,
        &["nodegroups", "prod-east", "--format", "json"],
    );
    assert!(ok, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let row = rows
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == "default-master"))
        .cloned()
        .unwrap_or_else(|| panic!("default-master listed: {json}"));
    let cell = |k: &str| row[k].as_str().unwrap_or_default().to_string();
    assert_eq!(cell("status"), "UPDATE_IN_PROGRESS", "{row}");
    assert!(cell("progress").starts_with("new 0/3 "), "{row}");
    let expected = pane_cell(
        &cell("progress"),
        &cell("state"),
        &cell("pace"),
        &cell("eta"),
    );
    assert!(expected.contains("old 3"), "{expected}");

    let (pane, nodes) = tokio::task::spawn_blocking(move || {
        let mut c = Console::start_with(
            200,
            60,
            &[],
            &[("OS_CLOUD", std::ffi::OsStr::new("simcloud"))],
            |home| {
                let dir = home.join("config").join("openstack");
                std::fs::create_dir_all(&dir).expect("config dir");
                std::fs::write(dir.join("clouds.yaml"), &clouds).expect("clouds.yaml");
            },
        );
        c.wait_for("the clusters", |s| s.has("prod-east") && s.has("dev-small"));
        c.press("/prod-east", "the filter line", |s| s.has("/prod-east"));
        c.press(ENTER, "the list filtered to prod-east", |s| {
            !s.has("dev-small")
        });
        c.send(":ng");
        let pane = c.press(ENTER, "default-master's progress", |s| {
            s.has("Node groups of prod-east")
                && s.line_with("default-master")
                    .is_some_and(|l| l.contains(&format!(" {expected} ")))
        });
        let pane = pane
            .line_with("default-master")
            .unwrap_or_default()
            .to_string();
        // The first row (default-master): its nodes pane's summary, labelled observed.
        let nodes = c.press(ENTER, "the masters' summary, observed", |s| {
            s.has("› default-master") && s.has("observed") && s.has("old 3")
        });
        let nodes = nodes.line_with("observed").unwrap_or_default().to_string();
        c.send("q");
        c.wait_exit();
        (pane, nodes)
    })
    .await
    .expect("console thread");
    assert!(pane.contains("UPDATE_IN_PROGRESS"), "{pane}");
    assert!(nodes.contains("new 0/3"), "{nodes}");
    sim.shutdown().await;
}
