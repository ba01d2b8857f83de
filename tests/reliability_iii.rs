//! Reliability III (issue 26), checked on the real binary:
//! - numbers a user gives on the command line are read with bounds: `1e308`, `inf`, `NaN`,
//!   zero where zero means nothing are refused by name, never a panic (rc 101);
//! - JSON output (`clusters`, `stacks`, `journal --format json`) carries text from the
//!   cloud and from hooks exactly, with C1, DEL and bidi overrides escaped as `\uXXXX`
//!   like C0: nothing in it that a terminal obeys.

use std::path::Path;
use std::process::{Command, Output};

/// The binary with a home of its own: no clouds.yaml, config or journal of the machine.
fn caldera(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_caldera"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .current_dir(home);
    cmd
}

fn run(home: &Path, args: &[&str]) -> Output {
    caldera(home).args(args).output().expect("run caldera")
}

#[test]
fn numbers_past_their_bounds_are_usage_errors_naming_the_flag_never_a_panic() {
    let home = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["--simulator", "events", "x", "--interval", "1e308"][..],
            "expected a number of seconds from 0.2 to 86400, got 1e308",
        ),
        (
            &["--simulator", "events", "x", "--interval", "inf"][..],
            "expected a number of seconds from 0.2 to 86400, got inf",
        ),
        (
            &["--simulator", "fleet", "--cloud-timeout", "NaN"][..],
            "got NaN",
        ),
        (
            &[
                "--simulator",
                "rollout",
                "pause",
                "c/w",
                "--wait-secs",
                "1e300",
            ][..],
            "got 1e300",
        ),
        (
            &["--simulator", "--page-size", "0", "stacks"][..],
            "expected a whole number from 1 to 10000, got 0",
        ),
        (
            &["--simulator", "ips", "c", "--concurrency", "0"][..],
            "expected a whole number from 1 to 1024, got 0",
        ),
    ] {
        let out = run(home.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        let flag = args
            .iter()
            .find(|a| a.starts_with("--") && **a != "--simulator");
        assert!(err.contains(flag.unwrap()), "{args:?}: {err}");
    }
}

/// Text a tenant can put in names and reasons, and a hook in its output: a screen wipe, a
/// title change, a C1 CSI, a right-to-left override, a CR, DEL, and an isolate.
const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07\u{9b}31m\u{202e}\r\x7f\u{2066}";

/// No character a terminal obeys, only the line feeds ending lines.
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Some((i, c)) = text
        .char_indices()
        .find(|(_, c)| *c != '\n' && caldera::model::text::is_unsafe_char(*c))
    {
        panic!("{what}: {c:?} at byte {i}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_escapes_c1_del_and_bidi_and_keeps_the_exact_text() {
    use caldera::sim::{self, SimOptions};
    let sim = sim::start(SimOptions {
        scenario: "hostile".into(),
        output_cost_per_member: std::time::Duration::ZERO,
        detail_cost_per_resource: std::time::Duration::ZERO,
        ..SimOptions::default()
    })
    .await
    .expect("simulator");
    let dir = tempfile::tempdir().unwrap();
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("hostile")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&clouds, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    // A journal entry whose hook output holds the same text.
    let journal = dir.path().join("journal.jsonl");
    let actor = caldera::journal::Actor {
        cloud: "hostile".into(),
        user: "alice".into(),
    };
    caldera::journal::Journal::open(&journal)
        .append(
            &caldera::journal::Entry::new(
                &actor,
                "hook.post_node",
                "c1/w/0",
                caldera::journal::Outcome::Ok,
            )
            .output(format!("drained{HOSTILE}")),
        )
        .unwrap();
    let home = dir.path().to_path_buf();
    let run_json = |args: Vec<&'static str>| {
        let (home, clouds, journal) = (home.clone(), clouds.clone(), journal.clone());
        tokio::task::spawn_blocking(move || {
            let out = caldera(&home)
                .args(&args)
                .env("OS_CLIENT_CONFIG_FILE", &clouds)
                .env("OS_CLOUD", "hostile")
                .env("CALDERA_JOURNAL", &journal)
                .output()
                .expect("run caldera");
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            assert!(out.status.success(), "{args:?}: {err}");
            assert_inert(&format!("{args:?}"), &out.stdout);
            out.stdout
        })
    };
    let out = run_json(vec!["clusters", "--format", "json"])
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(
        v[0]["name"],
        serde_json::json!(format!("evil{}", caldera::sim::scenario::HOSTILE))
    );
    let out = run_json(vec!["stacks", "--format", "json"]).await.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert!(
        v.as_array().unwrap().iter().any(|s| s["status_reason"]
            .as_str()
            .is_some_and(|n| n.contains(caldera::sim::scenario::HOSTILE))),
        "{v}"
    );
    let out = run_json(vec!["journal", "--format", "json"]).await.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(
        v[0]["output"],
        serde_json::json!(format!("drained{HOSTILE}"))
    );
    sim.shutdown().await;
}
