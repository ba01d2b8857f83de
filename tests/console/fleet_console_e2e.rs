//! The fleet view and `:cloud` end to end: the real `caldera` binary in a pseudo-terminal,
//! on one of three clouds of a clouds.yaml (two in-test simulators and a loopback port
//! nothing listens on). `:fleet` lists both simulators' clusters and the dead cloud as a row;
//! `:cloud west` moves the console to the other simulator without restarting (the header
//! names it, the cluster list is the new cloud's), and `:cloud nowhere` fails in place;
//! `--read-only` stays on, and shown, across the switch. And leaving the built-in simulator
//! for a cloud of clouds.yaml ends the simulator: its port is closed.

use crate::support::pty;

use caldera::sim::{self, SimHandle, SimOptions};
use pty::Console;
use std::collections::HashSet;
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
        &["--read-only"],
        &[
            ("OS_CLIENT_CONFIG_FILE", clouds.as_os_str()),
            ("OS_CLOUD", OsStr::new("east")),
        ],
        |_| {},
    );
    console.wait_for("east's clusters", |s| {
        s.has("east · RegionOne") && s.has("prod-east") && s.has("READ-ONLY")
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
    // The operator chose read-only for the session: the new cloud is read-only too, and
    // the header says so.
    assert!(on_west.has("READ-ONLY"), "{}", on_west.text);

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

/// The TCP ports process `pid` listens on: its sockets (`/proc/PID/fd`) found listening
/// (state `0A`) in its network namespace's tables.
fn listening_ports(pid: i32) -> Vec<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
                .filter_map(|link| {
                    let link = link.to_string_lossy().into_owned();
                    let inode = link.strip_prefix("socket:[")?.strip_suffix(']')?;
                    Some(inode.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let port = local
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if *state == "0A" && inodes.contains(*inode) {
                ports.extend(port);
            }
        }
    }
    ports
}

/// `caldera --simulator --read-only` with a clouds.yaml: the console starts on its built-in
/// simulator (which listens on a loopback port of the console's process); `:cloud east`
/// moves it to a cloud of clouds.yaml, and the simulator, which no `:cloud NAME` leads back
/// to, is ended: its port closed. Read-only is kept and shown.
#[test]
fn leaving_the_built_in_simulator_ends_it_and_keeps_read_only() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let east = rt.block_on(async {
        sim::start(SimOptions::fast("empty", 50.0))
            .await
            .expect("sim")
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, east.clouds_yaml("east")).expect("write clouds.yaml");
    std::fs::set_permissions(&clouds, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod clouds.yaml");

    let mut console = Console::start_with(
        160,
        40,
        &["--simulator", "--read-only"],
        &[("OS_CLIENT_CONFIG_FILE", clouds.as_os_str())],
        |_| {},
    );
    let on_sim = console.wait_for("the built-in simulator's clusters", |s| {
        s.has("SIMULATOR") && s.has("READ-ONLY") && s.has("prod-east")
    });
    let ports = listening_ports(console.pid());
    assert_eq!(
        ports.len(),
        1,
        "the simulator's port: {ports:?}\n{}",
        on_sim.text
    );

    console.send(":cloud east");
    let on_east = console.press(ENTER, "the console on east", |s| {
        s.has("east · RegionOne") && s.has("now on cloud east")
    });
    assert!(!on_east.has("SIMULATOR"), "{}", on_east.text);
    assert!(on_east.has("READ-ONLY"), "{}", on_east.text);
    console.wait_until("the simulator's port closed", |c| {
        listening_ports(c.pid()).is_empty()
    });
    let refused = std::net::TcpStream::connect(("127.0.0.1", ports[0]));
    assert!(
        refused.is_err(),
        "the simulator still answers on {}",
        ports[0]
    );
    // The console goes on, on east.
    let still = console.screen();
    assert!(still.has("east · RegionOne"), "{}", still.text);

    console.send(":q");
    console.send(ENTER);
    console.wait_exit();
    console.assert_restored();
    rt.block_on(east.shutdown());
}
