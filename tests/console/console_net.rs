//! The console beside a Magnum that never answers, end to end: the real binary in a
//! pseudo-terminal against the simulator (whose Magnum is made to hang), read through a
//! terminal emulator. The first frame comes at once, the header shows Magnum being probed,
//! then names it as not answering; the cluster list says which service and which timeout.

use crate::support::pty;

use caldera::sim::{self, Fault, FaultKind, SimOptions};
use pty::Console;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_draws_at_once_and_names_a_hung_magnum() {
    let sim = sim::start(SimOptions {
        scenario: "small".into(),
        faults: vec![
            Fault::new(FaultKind::Latency(Duration::from_secs(3600))).on_path("/container-infra")
        ],
        ..SimOptions::fast("small", 1.0)
    })
    .await
    .expect("simulator starts");
    let clouds = sim.clouds_yaml("sim");
    let frames = tokio::task::spawn_blocking(move || {
        let mut c = Console::start_with(
            140,
            30,
            &["--timeout", "probe=2", "--timeout", "magnum=2"],
            &[("OS_CLOUD", std::ffi::OsStr::new("sim"))],
            |home| {
                // $XDG_CONFIG_HOME/openstack/clouds.yaml, where the OpenStack clients look.
                let dir = home.join("config").join("openstack");
                std::fs::create_dir_all(&dir).expect("config dir");
                std::fs::write(dir.join("clouds.yaml"), &clouds).expect("clouds.yaml");
            },
        );
        let probing = c.wait_for("the first frame, Magnum still probed", |s| {
            s.alternate && s.has("caldera") && s.has("magnum …")
        });
        let named = c.wait_for("Magnum named as not answering", |s| {
            s.has("magnum: no answer within 2 s")
        });
        let listed = c.wait_for("the cluster list's error", |s| {
            s.has("Magnum no answer within 2 s") && s.has("/container-infra/v1")
        });
        c.send("q");
        c.wait_exit();
        c.assert_restored();
        (probing.text, named.text, listed.text)
    })
    .await
    .expect("console thread");
    assert!(frames
        .0
        .lines()
        .next()
        .unwrap_or_default()
        .contains("magnum …"));
    sim.shutdown().await;
}
