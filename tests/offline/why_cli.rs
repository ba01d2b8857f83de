//! The why-stuck verdict and the event filters headless, on the built-in simulator's demo:
//! `caldera why` exits with the verdict scripts branch on (`staging`'s member stalled for
//! hours: 5; `prod-east`'s members held on a hook: 3; `dev-small` settled: 0);
//! `heat hooks CLUSTER` reads each of the cluster's stacks; `events --tail` and `--since` cut
//! the backlog.

use crate::support::cli::simulator as caldera;
use std::time::{Duration, Instant};

#[test]
fn a_member_stalled_for_hours_exits_5_naming_it() {
    let home = tempfile::tempdir().expect("home");
    let (rc, out, err) = caldera(home.path(), &["why", "staging"]);
    assert_eq!(rc, Some(5), "{out}\n{err}");
    assert!(out.starts_with("staging: stalled\n"), "{out}");
    assert!(
        out.contains("stalled: kube_minions > 2 > kube-minion  UPDATE_IN_PROGRESS for "),
        "{out}"
    );
    assert!(out.contains("; siblings of 2 took "), "{out}");
    // The masters share the cluster's stack with the stalled workers: judged by what is
    // under them, they are settled (the stack's own status is the workers' update).
    let (rc, masters, err) = caldera(home.path(), &["why", "staging/default-master"]);
    assert_eq!(rc, Some(0), "{masters}\n{err}");
    assert!(
        masters.starts_with("staging/default-master: settled"),
        "{masters}"
    );
    let (rc, json, err) = caldera(home.path(), &["why", "staging", "--format", "json"]);
    assert_eq!(rc, Some(5), "{json}\n{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(doc["verdict"], "stalled");
    assert_eq!(doc["exit_code"], 5);
    assert_eq!(doc["stacks"][0]["verdict"], "stalled");
}

#[test]
fn members_held_on_a_hook_exit_3_and_are_listed_per_stack_of_the_cluster() {
    let home = tempfile::tempdir().expect("home");
    // The demo's batch reaches its three hooks as the simulated cloud runs (a new process
    // each time: each run starts the demo again): wait, bounded.
    let t0 = Instant::now();
    let out = loop {
        let (rc, out, err) = caldera(home.path(), &["why", "prod-east"]);
        if rc == Some(3) {
            break out;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "rc {rc:?}\n{out}\n{err}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(out.starts_with("prod-east: held\n"), "{out}");
    assert!(
        out.contains("held: 3 members of kube_minions held on pre-update hook since "),
        "{out}"
    );
    assert!(out.contains(": 412, 433, 447"), "{out}");
    // Busy work is named up to a few lines per stack, then counted.
    let first_stack: Vec<&str> = out
        .split("\nstack ")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .collect();
    let busy = first_stack
        .iter()
        .filter(|l| l.contains("  in progress: "))
        .count();
    assert!(busy > 0 && busy <= caldera::ops::why::BUSY_LINES, "{out}");
    assert!(
        out.contains(" more in progress within their siblings' pace"),
        "{out}"
    );
    let (rc, hooks, err) = caldera(home.path(), &["heat", "hooks", "prod-east"]);
    assert_eq!(rc, Some(0), "{hooks}\n{err}");
    // Several stacks: each path says which stack it is in.
    let held: Vec<&str> = hooks.lines().filter(|l| l.contains("pre-update")).collect();
    assert_eq!(held.len(), 3, "{hooks}");
    assert!(held.iter().all(|l| l.starts_with("prod-east-")), "{hooks}");
}

#[test]
fn a_settled_cluster_exits_0() {
    let home = tempfile::tempdir().expect("home");
    let (rc, out, err) = caldera(home.path(), &["why", "dev-small"]);
    assert_eq!(rc, Some(0), "{out}\n{err}");
    assert!(out.starts_with("dev-small: settled\n"), "{out}");
    let (rc, out, err) = caldera(home.path(), &["why", "no-such-thing"]);
    assert_eq!(rc, Some(1), "{out}\n{err}");
    assert!(err.contains("neither a cluster nor a stack"), "{err}");
}

#[test]
fn tail_and_since_cut_the_backlog() {
    let home = tempfile::tempdir().expect("home");
    let (rc, all, err) = caldera(home.path(), &["events", "staging"]);
    assert_eq!(rc, Some(0), "{err}");
    let all: Vec<&str> = all.lines().collect();
    assert!(all.len() > 3, "{all:?}");
    let (rc, tail, err) = caldera(home.path(), &["events", "staging", "--tail", "3"]);
    assert_eq!(rc, Some(0), "{err}");
    // The count says what was printed, beside what was read.
    assert!(err.contains("3 events printed ("), "{err}");
    // Each run starts the demo again at the clock's now: compare past the time column.
    let past_time = |l: &&str| l.split_once(' ').map(|(_, rest)| rest.to_string());
    let tail: Vec<String> = tail.lines().filter_map(|l| past_time(&l)).collect();
    let last: Vec<String> = all[all.len() - 3..].iter().filter_map(past_time).collect();
    assert_eq!(tail, last);
    // staging's events are hours old: none in the last minute, all in the last week.
    let (rc, recent, err) = caldera(home.path(), &["events", "staging", "--since", "1m"]);
    assert_eq!(rc, Some(0), "{err}");
    assert_eq!(recent, "", "{recent}");
    let (rc, week, err) = caldera(home.path(), &["events", "staging", "--since", "7d"]);
    assert_eq!(rc, Some(0), "{err}");
    assert_eq!(week.lines().count(), all.len());
    let (rc, _, err) = caldera(home.path(), &["events", "staging", "--since", "soon"]);
    assert_eq!(rc, Some(2), "{err}");
    assert!(err.contains("expected a span of time"), "{err}");
}

#[test]
fn events_of_a_stack_path_are_those_of_that_group() {
    let home = tempfile::tempdir().expect("home");
    let (rc, all, err) = caldera(home.path(), &["events", "staging", "--nested-depth", "2"]);
    assert_eq!(rc, Some(0), "{err}");
    let (_, stack, _) = caldera(home.path(), &["stacks"]);
    let name = stack
        .lines()
        .find_map(|l| l.split_whitespace().find(|w| w.starts_with("staging-")))
        .expect("staging's stack listed")
        .to_string();
    let path = format!("{name}/kube_minions");
    let (rc2, group, err2) = caldera(home.path(), &["events", &path]);
    assert_eq!(rc2, Some(0), "{err2}");
    assert!(rc.is_some());
    let group: Vec<&str> = group.lines().collect();
    assert!(!group.is_empty(), "{all}");
    // Only the group and what it holds; the stack's own events are left out.
    assert!(
        group.iter().all(|l| l.contains("kube_minions")),
        "{group:?}"
    );
    assert!(all.lines().any(|l| !l.contains("kube_minions")), "{all}");
    // A path that names no resource of the stack is an error, not an empty answer.
    let (rc, none, err) = caldera(home.path(), &["events", &format!("{name}/nosuch")]);
    assert_eq!(rc, Some(1), "{none}\n{err}");
    assert!(err.contains("has no resource at nosuch"), "{err}");
}

/// #26: a node group at rest in a stack that failed elsewhere is settled (exit 0), and the
/// report says where the stack's failure is read: it said `CREATE_FAILED: settled` alone,
/// as if the verdict and Heat disagreed.
#[test]
fn a_settled_group_of_a_failed_stack_points_to_the_failure() {
    let home = tempfile::tempdir().expect("home");
    let (rc, out, err) = caldera(home.path(), &["why", "batch-jobs/default-master"]);
    assert_eq!(rc, Some(0), "{out}\n{err}");
    assert!(
        out.contains(
            "kube_masters is settled; the stack failed outside it: caldera why batch-jobs"
        ),
        "{out}"
    );
    let (rc, out, err) = caldera(home.path(), &["why", "batch-jobs"]);
    assert_eq!(rc, Some(6), "{out}\n{err}");
    assert!(!out.contains("failed outside it"), "{out}");
}
