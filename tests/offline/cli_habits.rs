//! The small habits of a command-line tool, checked on the real binary:
//! - `caldera … | head` ends quietly with success when the reader has had enough, a
//!   follower too, as soon as its reader goes and not at its next event;
//! - a follower stopped by Ctrl-C ends as the non-follow form does, with its count;
//! - the warning about a password file others can read comes before authenticating (so it
//!   shows even when authentication then fails);
//! - a subcommand's `--help` lists its own options first, and not the console's;
//! - configuration errors name the file, the cloud and the key, and what a path is;
//! - JSON gives counts as numbers, so a script can compare them.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

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

/// Starts `caldera ARGS`, reads its first line, then closes the reading end, as `| head -1`.
fn first_line_then_close(home: &Path, args: &[&str]) -> (std::process::Child, String) {
    let mut child = caldera(home)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start caldera");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read a line");
    (child, first)
}

#[test]
fn a_closed_pipe_ends_the_command_quietly_with_success() {
    let home = tempfile::tempdir().unwrap();
    // About 250 KB of rows: far more than a pipe holds, so the writer meets the closed end.
    let (child, first) = first_line_then_close(home.path(), &["--simulator", "stacks", "--nested"]);
    assert!(first.starts_with("name"), "{first}");
    // `head -1` is done: the reading end is closed (the reader was dropped above).
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rc {:?}: {err}", out.status.code());
    assert!(
        !err.contains("Broken pipe") && !err.contains("panicked"),
        "{err}"
    );
}

/// `caldera events STACK --follow | head -1`: the follower ends when its reader does, even
/// while the stack writes nothing new (it used to wait for its next event to find out).
#[test]
fn a_follower_ends_quietly_when_its_reader_goes() {
    let home = tempfile::tempdir().unwrap();
    let (mut child, first) = first_line_then_close(
        home.path(),
        &["--simulator", "events", "dev-small", "--follow"],
    );
    assert!(first.contains("CREATE_IN_PROGRESS"), "{first}");
    // The reader is gone; dev-small is settled, so no event will ever be written again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("caldera events --follow still running 20 s after its reader went");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(status.success(), "rc {:?}: {err}", status.code());
    assert!(
        !err.contains("Broken pipe") && !err.contains("panicked"),
        "{err}"
    );
}

/// The exit status of `child` within `secs` seconds (killed and failed past them).
fn wait_bounded(
    child: &mut std::process::Child,
    secs: u64,
    what: &str,
) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} still running {secs} s later");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// SIGINT to `child`, as Ctrl-C sends it.
fn ctrl_c(child: &std::process::Child) {
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on the child we started and have not yet reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
}

/// Ctrl-C while the follower waits for a Heat that is down (nothing listens on port 1)
/// ends it the same way: its count, and success.
#[cfg(unix)]
#[test]
fn a_follower_waiting_for_its_cloud_stops_on_ctrl_c_with_its_count() {
    let home = tempfile::tempdir().unwrap();
    let mut child = caldera(home.path())
        .args([
            "--heat-url",
            "http://127.0.0.1:1/v1/p",
            "events",
            "st",
            "--follow",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start caldera");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let timeout = std::time::Duration::from_secs(30);
    let waiting = rx
        .recv_timeout(timeout)
        .expect("a line on stderr within 30 s");
    assert!(waiting.contains("reconnecting"), "{waiting}");
    ctrl_c(&child);
    let status = wait_bounded(&mut child, 20, "caldera events --follow after Ctrl-C");
    // The reader ends with the pipe, now closed: every line is in.
    let err: Vec<String> = rx.iter().collect();
    assert!(status.success(), "rc {:?}: {err:?}", status.code());
    let summary = err.last().cloned().unwrap_or_default();
    assert!(
        summary.starts_with("0 events printed (0 read") && summary.ends_with(", stopped by Ctrl-C"),
        "{err:?}"
    );
}

/// `caldera events STACK --tail 3 --follow`, then Ctrl-C: the follower ends as the
/// non-follow form does, with the count of what it printed on stderr (and since when it
/// followed), and succeeds: Ctrl-C is how a follow ends.
#[cfg(unix)]
#[test]
fn a_follower_stopped_by_ctrl_c_says_what_it_printed() {
    let home = tempfile::tempdir().unwrap();
    let mut child = caldera(home.path())
        .args([
            "--simulator",
            "events",
            "dev-small",
            "--tail",
            "3",
            "--follow",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start caldera");
    // The reader runs on a thread: a follower that prints less than asked must not hang us.
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let timeout = std::time::Duration::from_secs(30);
    let lines: Vec<String> = (0..3)
        .filter_map(|_| rx.recv_timeout(timeout).ok())
        .collect();
    assert_eq!(lines.len(), 3, "the backlog's last 3 events: {lines:?}");
    ctrl_c(&child);
    let status = wait_bounded(&mut child, 20, "caldera events --follow after Ctrl-C");
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(status.success(), "rc {:?}: {err}", status.code());
    let summary = err.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("3 events printed (")
            && summary.contains("left out by --since/--tail")
            && summary.contains("; followed since ")
            && summary.ends_with(", stopped by Ctrl-C"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn the_password_file_warning_comes_before_authentication() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let clouds = home.path().join("clouds.yaml");
    // Nothing listens on port 1: authentication fails.
    std::fs::write(
        &clouds,
        "clouds:\n  prod:\n    auth:\n      auth_url: http://127.0.0.1:1/v3\n      user_id: u\n      password: hunter2-secret\n      project_id: p\n",
    )
    .unwrap();
    std::fs::set_permissions(&clouds, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = caldera(home.path())
        .arg("stacks")
        .env("OS_CLIENT_CONFIG_FILE", &clouds)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let warning = err
        .find(&format!(
            "warning: {} holds a password or secret and is readable by group or others",
            clouds.display()
        ))
        .unwrap_or_else(|| panic!("no warning:\n{err}"));
    let failure = err
        .find("caldera: ")
        .unwrap_or_else(|| panic!("no error:\n{err}"));
    assert!(warning < failure, "{err}");
    assert_eq!(err.matches("readable by group").count(), 1, "{err}");
    assert!(!err.contains("hunter2-secret"), "{err}");
}

#[test]
fn subcommand_help_shows_its_own_options_first() {
    let home = tempfile::tempdir().unwrap();
    let help = |args: &[&str]| {
        let out = caldera(home.path()).args(args).output().expect("run");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let events = help(&["events", "--help"]);
    let own = events.find("--follow").expect("--follow listed");
    let format = events.find("--format").expect("--format listed");
    for global in ["--cloud", "--heat-url", "--read-only", "--journal"] {
        let at = events
            .find(global)
            .unwrap_or_else(|| panic!("{global} missing:\n{events}"));
        assert!(
            own < at && format < at,
            "{global} before the own options:\n{events}"
        );
    }
    assert!(events.contains("\nConnection:\n"), "{events}");
    // The console's own settings are not offered where they do nothing.
    for console_only in ["--theme", "--rollout-poll-secs"] {
        assert!(!events.contains(console_only), "{console_only}:\n{events}");
    }
    let top = help(&["--help"]);
    assert!(
        top.contains("--theme") && top.contains("--rollout-poll-secs"),
        "{top}"
    );
    let status = help(&["rollout", "status", "--help"]);
    assert!(
        status.find("--format").expect("format") < status.find("--cloud").expect("cloud"),
        "{status}"
    );
    // The simulator's help names every scenario it builds and every fault modifier, from
    // its own lists (was: four names, three of its scenarios and the modifiers missing).
    let sim = help(&["sim", "--help"]);
    for name in caldera::sim::scenario::NAMES {
        assert!(sim.contains(name), "{name}:\n{sim}");
    }
    for (modifier, _) in caldera::sim::scenario::MODIFIERS {
        assert!(sim.contains(&format!("+{modifier}")), "{modifier}:\n{sim}");
    }
}

/// A journal with nothing in it says so on stderr, and stdout stays empty for a script
/// (was: nothing at all, which reads like a wrong path).
#[test]
fn an_empty_journal_says_so() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("j.jsonl");
    let out = caldera(home.path())
        .args(["journal", "--journal"])
        .arg(&path)
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("journal {}: no entries yet", path.display())),
        "{err}"
    );
}

/// A name path with an empty part (`/kube_minions`, a stack name left out by a script whose
/// variable was empty) is refused before anything is asked of a cloud: sent, `GET
/// …/clusters/` would be the list of clusters, read as one cluster ("missing field `uuid`").
#[test]
fn a_name_path_with_an_empty_part_is_refused_before_the_cloud() {
    let home = tempfile::tempdir().unwrap();
    let start = ["rollout", "start", "s/kube_minions", "--set", "a=1"];
    let with = |more: &[&'static str]| -> Vec<&'static str> {
        start.iter().chain(more).copied().collect()
    };
    // Positional names, then the group and member paths flags and arguments name.
    let cases: [Vec<&str>; 14] = [
        vec!["rollout", "start", "/kube_minions", "--image", "x"],
        vec!["nodegroups", ""],
        vec!["ips", "one-image/"],
        vec!["events", "stack//kube_minions"],
        vec!["heat", "hooks", "  "],
        vec!["why", "a\u{1b}[2Jb"],
        with(&["--also", ""]),
        with(&["--also-after", "kube_masters/"]),
        with(&["--let-heat-update", "a\u{7}b"]),
        vec!["scale", "s/g", "--remove", "3,,7"],
        vec!["rollout", "skip", "s/g", " "],
        vec!["heat", "unhook", "s", "roles//Compute"],
        vec!["heat", "clear-hook", "s", "kube_minions/"],
        vec!["heat", "mark-unhealthy", "s", "", "--reason", "r"],
    ];
    for args in cases {
        let out = caldera(home.path()).args(&args).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("one is empty") || err.contains("control character"),
            "{args:?}: {err}"
        );
        assert!(!err.contains('\u{1b}'), "{args:?}: {err}");
    }
}

#[test]
fn config_errors_name_the_file_the_cloud_and_the_key() {
    let home = tempfile::tempdir().unwrap();
    let clouds = home.path().join("clouds.yaml");
    std::fs::write(
        &clouds,
        "clouds:\n  prod:\n    auth:\n      auth_url: 12345\n      user_id: u\n      password: p\n      project_id: x\n",
    )
    .unwrap();
    let run = |file: &Path| {
        let out = caldera(home.path())
            .arg("stacks")
            .env("OS_CLIENT_CONFIG_FILE", file)
            .output()
            .expect("run");
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&clouds);
    assert_eq!(
        err.trim_end(),
        format!(
            "caldera: clouds.yaml {}: cloud 'prod': auth.auth_url is invalid: invalid type: integer `12345`, expected a string",
            clouds.display()
        )
    );
    let err = run(home.path());
    assert!(
        err.contains("OS_CLIENT_CONFIG_FILE names a path that is a directory, not a file"),
        "{err}"
    );
    #[cfg(unix)]
    {
        let err = run(Path::new("/dev/zero"));
        assert!(
            err.contains("/dev/zero: OS_CLIENT_CONFIG_FILE names a path that is a character device, not a file"),
            "{err}"
        );
    }
}

#[test]
fn json_gives_counts_as_numbers_and_time_in_state() {
    let home = tempfile::tempdir().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = caldera(home.path())
            .arg("--simulator")
            .args(args)
            .args(["--format", "json"])
            .output()
            .expect("run caldera");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let clusters = json(&["clusters"]);
    let first = &clusters[0];
    assert!(first["masters"].is_u64(), "{first}");
    assert!(first["workers"].is_u64(), "{first}");
    assert!(first["name"].is_string(), "{first}");
    // Time in state: `12m` for a person, RFC 3339 for a script.
    let in_state = |v: &serde_json::Value| {
        let since = v["since"].as_str().unwrap_or_default();
        assert!(
            !v["in_state"].as_str().unwrap_or_default().is_empty(),
            "{v}"
        );
        assert!(chrono::DateTime::parse_from_rfc3339(since).is_ok(), "{v}");
    };
    in_state(first);
    let name = first["name"].as_str().unwrap_or_default().to_string();
    let groups = json(&["nodegroups", &name]);
    let g = &groups[0];
    assert!(g["nodes"].is_u64(), "{g}");
    in_state(g);
    // A bound Magnum does not give is null, not "".
    assert!(g["max"].is_u64() || g["max"].is_null(), "{g}");
}
