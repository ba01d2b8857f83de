//! `caldera fleet` against three clouds of one clouds.yaml: two in-process simulators, one
//! pointing at a loopback port nothing listens on, and one whose password is wrong. Every
//! reachable cloud's clusters are listed; the others are rows saying why, within the
//! per-cloud bound, and no secret is printed. And the fleet scanner over several scans:
//! one login per cloud, not one per scan, and a dead cloud asked again each time.

use caldera::api::cloud::ConnectOptions;
use caldera::config::DiscoveryEnv;
use caldera::service::fleet_scan::{FleetAnswer, FleetReport, FleetSource, LiveFleet};
use caldera::sim::{self, SimHandle, SimOptions};
use futures::StreamExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The entry `sim.clouds_yaml` writes, without its `clouds:` line, so entries can be joined.
fn entry(sim: &SimHandle, name: &str) -> String {
    sim.clouds_yaml(name)
        .strip_prefix("clouds:\n")
        .expect("clouds.yaml entry")
        .to_string()
}

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn fleet(clouds: &Path, format: &str) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_caldera"))
        .env("OS_CLIENT_CONFIG_FILE", clouds)
        .env_remove("OS_CLOUD")
        .env("XDG_STATE_HOME", clouds.parent().expect("dir"))
        .args(["fleet", "--cloud-timeout", "4", "--format", format])
        .output()
        .expect("run caldera");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_every_cloud_and_names_the_dead_one() {
    let east = sim::start(SimOptions::fast("demo", 50.0))
        .await
        .expect("sim");
    let west = sim::start(SimOptions {
        seed: 7,
        ..SimOptions::fast("demo", 50.0)
    })
    .await
    .expect("sim");
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    let dead_port = closed_port();
    let dead = format!(
        "  dead:\n    auth_type: password\n    auth:\n      auth_url: http://127.0.0.1:{}/v3\n      username: u\n      password: p\n      project_name: p\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: Gone\n",
        dead_port
    );
    // A Keystone that takes the connection and never answers: the kernel completes the
    // handshake for a listener that does not accept.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let slow = dead
        .replace("  dead:", "  slow:")
        .replace(
            &format!(":{}/", dead_port),
            &format!(":{}/", silent.local_addr().expect("addr").port()),
        )
        .replace("Gone", "Slow");
    let wrong = entry(&west, "locked").replace(
        &format!("password: {}", west.password),
        "password: not-the-Secret-42",
    );
    let yaml = format!(
        "clouds:\n{}{}{dead}{slow}{wrong}",
        entry(&east, "east"),
        entry(&west, "west")
    );
    std::fs::write(&clouds, yaml).expect("write clouds.yaml");

    let started = Instant::now();
    let (ok, out, err) = tokio::task::spawn_blocking({
        let clouds = clouds.clone();
        move || fleet(&clouds, "json")
    })
    .await
    .expect("join");
    assert!(ok, "stdout: {out}\nstderr: {err}");
    // The silent cloud costs its bound, not Keystone's 60 s.
    assert!(started.elapsed() < Duration::from_secs(20));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("json");
    let of = |cloud: &str| -> Vec<&serde_json::Value> {
        rows.iter().filter(|r| r["cloud"] == cloud).collect()
    };
    for cloud in ["east", "west"] {
        let names: Vec<&str> = of(cloud)
            .iter()
            .filter_map(|r| r["cluster"].as_str())
            .collect();
        assert!(names.contains(&"prod-east"), "{cloud}: {names:?}\n{out}");
        assert!(of(cloud).iter().all(|r| r["region"] == "RegionOne"));
        assert!(of(cloud).iter().all(|r| r["masters"].is_u64()), "{out}");
    }
    let dead = of("dead");
    assert_eq!(dead.len(), 1, "{out}");
    assert_eq!(dead[0]["cluster"], "");
    assert_eq!(dead[0]["region"], "Gone");
    assert_eq!(dead[0]["masters"], serde_json::Value::Null);
    let status = dead[0]["status"].as_str().expect("status");
    assert!(status.starts_with("unreachable: "), "{status}");
    let slow = of("slow");
    assert_eq!(slow.len(), 1, "{out}");
    assert_eq!(
        slow[0]["status"], "unreachable: no answer within 4 s",
        "{out}"
    );
    let locked = of("locked");
    assert_eq!(locked.len(), 1, "{out}");
    let status = locked[0]["status"].as_str().expect("status");
    assert!(status.starts_with("auth failed: "), "{status}");
    assert!(!out.contains("not-the-Secret-42") && !err.contains("not-the-Secret-42"));
    // The table is in clouds.yaml's order, whatever order the answers came in.
    let order: Vec<&str> = rows.iter().filter_map(|r| r["cloud"].as_str()).collect();
    let mut sorted = order.clone();
    sorted.dedup();
    assert_eq!(sorted, ["east", "west", "dead", "slow", "locked"]);

    let (ok, table, _) = tokio::task::spawn_blocking(move || fleet(&clouds, "table"))
        .await
        .expect("join");
    assert!(ok);
    let header = table.lines().next().expect("header");
    for col in [
        "cloud", "region", "cluster", "status", "in_state", "health", "masters", "workers",
        "driver",
    ] {
        assert!(header.contains(col), "{header}");
    }
    assert!(table
        .lines()
        .any(|l| l.starts_with("dead") && l.contains("unreachable: ")));
    drop(silent);
    east.shutdown().await;
    west.shutdown().await;
}

/// The token requests Keystone of `sim` has received.
fn logins(sim: &SimHandle) -> u64 {
    sim.faults().requests("POST", "/identity/v3/auth/tokens")
}

/// One whole scan, the answers by cloud name.
async fn scan(fleet: &LiveFleet) -> Vec<FleetReport> {
    let mut reports: Vec<FleetReport> = fleet.scan().collect().await;
    reports.sort_by(|a, b| a.cloud.cmp(&b.cloud));
    reports
}

fn answer<'r>(reports: &'r [FleetReport], cloud: &str) -> &'r FleetAnswer {
    &reports
        .iter()
        .find(|r| r.cloud == cloud)
        .unwrap_or_else(|| panic!("no answer from {cloud}: {reports:?}"))
        .answer
}

fn has_clusters(answer: &FleetAnswer) -> bool {
    matches!(answer, FleetAnswer::Clusters(c) if !c.is_empty())
}

/// The console scans the fleet every minute: the scanner keeps each cloud's connection, so
/// Keystone sees one token request per cloud over three scans, one more after a 401 (the
/// token refused, renewed once). A cloud down at one scan keeps no connection and is asked
/// again at the next, where it answers once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scans_keep_each_clouds_login_and_retry_a_dead_one() {
    let east = sim::start(SimOptions::fast("demo", 50.0))
        .await
        .expect("sim");
    // `late` is down at the first scan, then back on the same address (same seed, same
    // credentials, same project).
    let late_options = SimOptions {
        seed: 7,
        ..SimOptions::fast("demo", 50.0)
    };
    let late = sim::start(late_options.clone()).await.expect("sim");
    let late_yaml = entry(&late, "late");
    let late_addr = late.addr;
    late.shutdown().await;

    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    let yaml = format!("clouds:\n{}{late_yaml}", entry(&east, "east"));
    std::fs::write(&clouds, yaml).expect("write clouds.yaml");
    let env = DiscoveryEnv {
        client_config_file: Some(clouds),
        ..DiscoveryEnv::default()
    };
    let fleet = LiveFleet::discover(&env, ConnectOptions::default(), Duration::from_secs(4))
        .expect("the fleet");

    let first = scan(&fleet).await;
    assert!(has_clusters(answer(&first, "east")), "{first:?}");
    assert!(
        matches!(answer(&first, "late"), FleetAnswer::Unreachable(_)),
        "{first:?}"
    );
    assert_eq!(logins(&east), 1);

    let late = sim::start(SimOptions {
        addr: late_addr,
        ..late_options
    })
    .await
    .expect("sim back on its address");
    let second = scan(&fleet).await;
    assert!(has_clusters(answer(&second, "east")), "{second:?}");
    assert!(has_clusters(answer(&second, "late")), "{second:?}");
    let third = scan(&fleet).await;
    assert!(has_clusters(answer(&third, "east")), "{third:?}");
    assert!(has_clusters(answer(&third, "late")), "{third:?}");
    assert_eq!(logins(&east), 1, "east logged in again on a later scan");
    assert_eq!(logins(&late), 1, "late logged in again on a later scan");

    // Keystone no longer takes east's token: the next call answers 401, the connection
    // renews it once and the scan still lists east's clusters.
    east.faults().fail_next(1, 401);
    let fourth = scan(&fleet).await;
    assert!(has_clusters(answer(&fourth, "east")), "{fourth:?}");
    assert_eq!(logins(&east), 2, "one renewal after the 401");

    east.shutdown().await;
    late.shutdown().await;
}
