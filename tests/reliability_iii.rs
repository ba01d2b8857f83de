//! Reliability III (issue 26), checked on the real binary:
//! - numbers a user gives on the command line are read with bounds: `1e308`, `inf`, `NaN`,
//!   zero where zero means nothing are refused by name, never a panic (rc 101).

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
