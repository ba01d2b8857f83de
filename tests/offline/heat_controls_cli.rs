//! `caldera heat hooks|clear-hook|check|cancel|mark-unhealthy` as an operator runs them,
//! against an in-process simulator reached through a clouds.yaml: each control's plan, its
//! journal entries (the intent before the call, refusals recorded), and read-only mode.

use crate::support::sim_group;

use crate::support::cli::Caldera;
use caldera::api::heat::{HeatClient, StackUpdate};
use caldera::journal::{Entry, Journal, Outcome};
use caldera::model::StackRef;
use caldera::rollout::plan::hooks_environment;
use caldera::sim::{SimHandle, SimOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A node group `ctl-workers` (three members, settled) on a simulator reached through a
/// clouds.yaml, and the journal `caldera` runs write to.
struct Controls {
    heat: HeatClient,
    stack: StackRef,
    clouds: PathBuf,
    journal: PathBuf,
    _dir: tempfile::TempDir,
    _sim: SimHandle,
}

impl Controls {
    /// `caldera` is the cloud's `caldera:` settings (empty: none).
    async fn start(caldera: &str) -> Controls {
        let (sim, heat, stack) =
            sim_group::start_group(SimOptions::fast("empty", 50.0), "ctl", 3).await;
        settle(&heat, &stack).await;
        let dir = tempfile::tempdir().expect("dir");
        Controls {
            clouds: sim_group::write_clouds_yaml(dir.path(), &sim, caldera),
            journal: dir.path().join("journal.jsonl"),
            heat,
            stack,
            _dir: dir,
            _sim: sim,
        }
    }

    /// `caldera ARGS` on this cloud and journal: success, stdout, stderr.
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        caldera(&self.clouds, &self.journal, args)
    }

    /// `caldera heat mark-unhealthy ctl-workers PATH --reason REASON --yes`.
    fn mark_unhealthy(&self, path: &str, reason: &str) -> (bool, String, String) {
        self.run(&[
            "heat",
            "mark-unhealthy",
            "ctl-workers",
            path,
            "--reason",
            reason,
            "--yes",
        ])
    }

    fn entries(&self) -> Vec<Entry> {
        Journal::open(&self.journal).read_all().expect("journal")
    }

    /// The outcomes the journal holds for `action`, in order.
    fn outcomes(&self, action: &str) -> Vec<String> {
        self.entries()
            .iter()
            .filter(|e| e.action == action)
            .map(|e| match &e.outcome {
                Outcome::Started => format!("started {}", e.calls.len()),
                Outcome::Ok => "ok".into(),
                Outcome::Failed { error } => format!("failed {error}"),
                Outcome::Refused { .. } => "refused".into(),
            })
            .collect()
    }
}

/// Waits (bounded) until the stack's action has ended; returns its status.
async fn settle(heat: &HeatClient, stack: &StackRef) -> String {
    let t0 = Instant::now();
    loop {
        let d = heat.get_stack(stack, false).await.expect("show");
        if !d.summary.status.is_in_progress() {
            return d.summary.status.raw;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "never settled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An update of the image with every member held on `pre-update`, as an operator's own
/// hooked update would be.
async fn hooked_update(heat: &HeatClient, stack: &StackRef) {
    let update = StackUpdate {
        parameters: [("image".to_string(), serde_json::json!("img-v2"))].into(),
        environment: Some(hooks_environment()),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(stack, &update).await.expect("update");
}

fn caldera(clouds: &Path, journal: &Path, args: &[&str]) -> (bool, String, String) {
    let actions = journal.with_extension("toml");
    if !actions.exists() {
        std::fs::write(&actions, "").expect("actions file");
    }
    Caldera::cloud(clouds)
        .journal(journal, &actions)
        .env("XDG_STATE_HOME", journal.parent().expect("dir"))
        .args(args)
        .run_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_are_polled_then_cleared_and_the_members_proceed() {
    let c = Controls::start("").await;

    let (ok, out, err) = c.run(&["heat", "hooks", "ctl-workers"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("no resource of ctl-workers is held"), "{out}");

    hooked_update(&c.heat, &c.stack).await;
    // Heat pauses the members as it reaches them: wait (bounded) for all three.
    let t0 = Instant::now();
    let out = loop {
        let (ok, out, err) = c.run(&["heat", "hooks", "ctl-workers"]);
        assert!(ok, "{out}\n{err}");
        if out.matches("pre-update").count() == 3 {
            break out;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{out}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for m in ["nodes/0", "nodes/1", "nodes/2"] {
        assert!(out.contains(m), "{out}");
    }

    // One member: planned (the signal to its owner, the group's nested stack), sent.
    let (ok, out, err) = c.run(&["heat", "clear-hook", "ctl-workers", "nodes/1", "--yes"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("heat.clear_hook ctl-workers/nodes/1"), "{out}");
    assert!(
        out.contains("/resources/1/signal {\"unset_hook\":\"pre-update\"}"),
        "{out}"
    );
    assert_eq!(c.outcomes("heat.clear_hook"), ["started 1", "ok"]);

    // A path no hook holds is refused, and recorded as such.
    let (ok, out, err) = c.run(&["heat", "clear-hook", "ctl-workers", "nodes/9", "--yes"]);
    assert!(!ok, "{out}");
    assert!(err.contains("no resource matching nodes/9"), "{err}");

    // The rest by glob: the update completes.
    let (ok, out, err) = c.run(&["heat", "clear-hook", "ctl-workers", "nodes/*", "--yes"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("release 2 resource(s)"), "{out}");
    assert_eq!(
        c.outcomes("heat.clear_hook"),
        ["started 1", "ok", "refused", "started 2", "ok"]
    );
    assert_eq!(settle(&c.heat, &c.stack).await, "UPDATE_COMPLETE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_cancel_and_mark_unhealthy_are_planned_and_journaled() {
    let c = Controls::start("").await;

    // Check a settled stack.
    let (ok, out, err) = c.run(&["heat", "check", "ctl-workers", "--yes"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("POST /stacks/ctl-workers/"), "{out}");
    assert!(out.contains("/actions {\"check\":null}"), "{out}");
    assert_eq!(settle(&c.heat, &c.stack).await, "CHECK_COMPLETE");
    assert_eq!(c.outcomes("heat.check"), ["started 1", "ok"]);
    // The intent entry holds the plan and the call, before the outcome.
    let started = c
        .entries()
        .into_iter()
        .find(|e| e.action == "heat.check")
        .expect("entry");
    assert!(started.plan.iter().any(|l| l.contains("CHECK_COMPLETE")));

    // Cancel with nothing to cancel: refused by the plan, recorded, nothing sent.
    let (ok, out, err) = c.run(&["heat", "cancel", "ctl-workers", "--yes"]);
    assert!(!ok, "{out}");
    assert!(err.contains("cancels only an update in progress"), "{err}");
    assert_eq!(c.outcomes("heat.cancel"), ["refused"]);

    // Cancel an update under way (held on its hooks): Heat rolls back.
    hooked_update(&c.heat, &c.stack).await;
    let (ok, out, err) = c.run(&["heat", "cancel", "ctl-workers", "--yes"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("{\"cancel_update\":null}"), "{out}");
    assert_eq!(c.outcomes("heat.cancel"), ["refused", "started 1", "ok"]);
    // Heat's rollback stops on the same hooks (Heat 27): release them as it reaches them.
    let t0 = Instant::now();
    loop {
        let d = c.heat.get_stack(&c.stack, false).await.expect("show");
        if !d.summary.status.is_in_progress() {
            assert_eq!(d.summary.status.raw, "ROLLBACK_COMPLETE");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "rollback never ended"
        );
        let _ = c.run(&["heat", "clear-hook", "ctl-workers", "nodes/*", "--yes"]);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Mark a member unhealthy, in the group's nested stack.
    let (ok, out, err) = c.mark_unhealthy("nodes/2", "disk gone");
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("\"mark_unhealthy\":true"), "{out}");
    assert_eq!(c.outcomes("heat.mark_unhealthy"), ["started 1", "ok"]);
    let nodes = c.heat.get_resource(&c.stack, "nodes").await.expect("nodes");
    let group = nodes.resource.nested.expect("nested");
    let member = c.heat.get_resource(&group, "2").await.expect("member");
    assert_eq!(member.resource.status.raw, "CHECK_FAILED");
    assert_eq!(member.resource.status_reason.as_deref(), Some("disk gone"));

    // A path that does not exist is an error before anything is recorded.
    let before = c.entries().len();
    let (ok, _, err) = c.mark_unhealthy("nodes/99", "x");
    assert!(!ok);
    assert!(err.contains("99"), "{err}");
    assert_eq!(c.entries().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_refuses_every_control_and_records_it() {
    let c = Controls::start("{read_only: true}").await;
    let (ok, out, _) = c.run(&["heat", "hooks", "ctl-workers"]);
    assert!(ok, "hooks only read: {out}");
    let (ok, _, err) = c.run(&["heat", "check", "ctl-workers", "--yes"]);
    assert!(!ok);
    assert!(err.contains("read-only"), "{err}");
    let (ok, _, err) = c.mark_unhealthy("nodes/0", "r");
    assert!(!ok);
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(c.outcomes("heat.check"), ["refused"]);
    assert_eq!(c.outcomes("heat.mark_unhealthy"), ["refused"]);
    // Nothing reached Heat.
    let d = c.heat.get_stack(&c.stack, false).await.expect("show");
    assert_eq!(d.summary.status.raw, "CREATE_COMPLETE");
}
