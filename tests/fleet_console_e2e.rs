//! The fleet view and `:cloud` end to end: the real `caldera` binary in a pseudo-terminal,
//! on one of three clouds of a clouds.yaml (two in-test simulators and a loopback port
//! nothing listens on). `:fleet` lists both simulators' clusters and the dead cloud as a row;
//! `:cloud west` moves the console to the other simulator without restarting (the header
//! names it, the cluster list is the new cloud's), and `:cloud nowhere` fails in place.

#[path = "support/pty.rs"]
#[allow(dead_code)]
mod pty;

use caldera::sim::{self, SimHandle, SimOptions};
use pty::Console;
use std::ffi::OsStr;

const ENTER: &str = "\r";

fn entry(sim: &SimHandle, name: &str) -> String {
    sim.clouds_yaml(name)
        .strip_prefix("clouds:\n")
        .expect("clouds.yaml entry")
        .to_string()
}

#[test]
fn fleet_lists_every_cloud_and_cloud_switches_without_restarting() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (east, west) = rt.block_on(async {
        let east = sim::start(SimOptions::fast("demo", 50.0))
            .await
            .expect("sim");
        let west = sim::start(SimOptions::fast("empty", 50.0))
            .await
            .expect("sim");
        (east, west)
    });
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dead = format!(
        "  dead:\n    auth_type: password\n    auth:\n      auth_url: http://127.0.0.1:{port}/v3\n      username: u\n      password: p\n      project_name: p\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: Gone\n"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let clouds = dir.path().join("clouds.yaml");
    let text = format!(
        "clouds:\n{}{}{dead}",
        entry(&east, "east"),
        entry(&west, "west")
    );
    std::fs::write(&clouds, text).expect("write clouds.yaml");
    std::fs::set_permissions(&clouds, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod clouds.yaml");

    let mut console = Console::start_with(
        160,
        40,
        &[],
        &[
            ("OS_CLIENT_CONFIG_FILE", clouds.as_os_str()),
            ("OS_CLOUD", OsStr::new("east")),
        ],
        |_| {},
    );
    console.wait_for("east's clusters", |s| {
        s.has("east · RegionOne") && s.has("prod-east")
    });

    console.send(":fleet");
    let fleet = console.press(ENTER, "every cloud's answer", |s| {
        s.has("Fleet (3 clouds") && s.has("unreachable: connection failed")
    });
    assert!(fleet.has("no clusters"), "west is empty:\n{}", fleet.text);
    let east_row = fleet.line_with("prod-east").expect("east's cluster row");
    assert!(east_row.contains("east"), "{east_row}");
    assert!(fleet.has("1 not answering"), "{}", fleet.text);

    console.send(":cloud west");
    let on_west = console.press(ENTER, "the console on west", |s| {
        s.has("west · RegionOne") && s.has("now on cloud west")
    });
    // Back at west's cluster list: nothing of east's is left.
    assert!(!on_west.has("prod-east"), "{}", on_west.text);

    console.send(":cloud nowhere");
    let failed = console.press(ENTER, "the failed switch", |s| {
        s.has("cannot switch to cloud nowhere")
    });
    assert!(failed.has("west · RegionOne"), "{}", failed.text);

    console.send(":q");
    console.send(ENTER);
    console.wait_exit();
    console.assert_restored();
    rt.block_on(async {
        east.shutdown().await;
        west.shutdown().await;
    });
}
