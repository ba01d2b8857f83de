//! Manual Heat controls (`caldera heat hooks|clear-hook|check|cancel|mark-unhealthy`) on a
//! real OpenStack Heat on 127.0.0.1 (Heat 27, a group of `OS::Heat::TestResource`): a check
//! of a settled stack ends in CHECK_COMPLETE; a hook set through the environment is polled,
//! then cleared, and the member proceeds; a cancel of an update in progress ends in
//! ROLLBACK_COMPLETE (the rollback stops on the same hooks, cleared the same way); a member
//! marked unhealthy shows CHECK_FAILED with the reason given. The same controls run on the
//! simulator in `tests/offline/heat_controls_cli.rs`.
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it.

use crate::support::heat_wait;
use crate::support::heat_wait::delete_settled;
use crate::support::real_heat_client;
use crate::support::real_heat_client::caldera_journaled as caldera;
use caldera::api::heat::{EventQuery, HeatClient, StackCreate, StackUpdate};
use caldera::journal::{Journal, Outcome};
use caldera::model::StackRef;
use heat_wait::wait_status;
use real_heat_client::{heat, unique};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// A group of `count` test resources whose value reads `v`; an update waits 2 s per member.
async fn create(heat: &HeatClient, prefix: &str, count: u32) -> StackRef {
    let template = json!({
        "heat_template_version": "2021-04-16",
        "parameters": {"v": {"type": "string", "default": "a"}},
        "resources": {"nodes": {
            "type": "OS::Heat::ResourceGroup",
            "properties": {"count": count, "resource_def": {
                "type": "OS::Heat::TestResource",
                "properties": {"value": {"get_param": "v"}, "action_wait_secs": {"update": 2}}
            }}
        }}
    });
    let create = StackCreate {
        name: unique(prefix),
        template,
        disable_rollback: Some(false),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(heat, &stack, "CREATE_COMPLETE").await;
    stack
}

/// Changes `v` with every member held on `pre-update` (an operator's own hooked update).
async fn hooked_update(heat: &HeatClient, stack: &StackRef, v: &str) {
    let env =
        json!({"resource_registry": {"resources": {"nodes": {"*": {"hooks": ["pre-update"]}}}}});
    let update = StackUpdate {
        parameters: [("v".to_string(), json!(v))].into(),
        environment: Some(env),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(stack, &update).await.expect("update");
}

fn outcomes(journal: &Path, action: &str) -> Vec<String> {
    Journal::open(journal)
        .read_all()
        .expect("journal")
        .iter()
        .filter(|e| e.action == action)
        .map(|e| match &e.outcome {
            Outcome::Started => "started".to_string(),
            Outcome::Ok => "ok".into(),
            Outcome::Failed { error } => format!("failed {error}"),
            Outcome::Refused { error } => format!("refused {error}"),
        })
        .collect()
}

/// Polls `caldera heat hooks` (bounded) until `n` lines name `pre-update`.
fn wait_hooks(journal: &Path, stack: &str, n: usize) -> String {
    let t0 = Instant::now();
    loop {
        let (ok, out, err) = caldera(journal, &["heat", "hooks", stack]);
        assert!(ok, "{out}\n{err}");
        if out.matches("pre-update").count() == n {
            return out;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "{out}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_check_of_a_settled_stack_completes() {
    let heat = heat().await;
    let stack = create(&heat, "mchk", 2).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("j.jsonl");
    let (ok, out, err) = caldera(&journal, &["heat", "check", &stack.name, "--yes"]);
    assert!(ok, "{out}\n{err}");
    wait_status(&heat, &stack, "CHECK_COMPLETE").await;
    assert_eq!(outcomes(&journal, "heat.check"), ["started", "ok"]);
    let events = heat
        .list_events_page(&stack, &EventQuery::default())
        .await
        .expect("events");
    let stack_events: Vec<&str> = events
        .iter()
        .filter(|e| e.resource_name == stack.name)
        .map(|e| e.status.raw.as_str())
        .collect();
    assert!(
        stack_events.contains(&"CHECK_IN_PROGRESS"),
        "{stack_events:?}"
    );
    assert!(stack_events.contains(&"CHECK_COMPLETE"), "{stack_events:?}");
    delete_settled(&heat, &stack).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_hooks_are_polled_then_cleared_and_members_proceed() {
    let heat = heat().await;
    let stack = create(&heat, "mhook", 2).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("j.jsonl");
    hooked_update(&heat, &stack, "b").await;
    let out = wait_hooks(&journal, &stack.name, 2);
    assert!(out.contains("nodes/0") && out.contains("nodes/1"), "{out}");
    let (ok, out, err) = caldera(
        &journal,
        &["heat", "clear-hook", &stack.name, "nodes/0", "--yes"],
    );
    assert!(ok, "{out}\n{err}");
    let out = wait_hooks(&journal, &stack.name, 1);
    assert!(out.contains("nodes/1") && !out.contains("nodes/0"), "{out}");
    let (ok, out, err) = caldera(
        &journal,
        &["heat", "clear-hook", &stack.name, "nodes/*", "--yes"],
    );
    assert!(ok, "{out}\n{err}");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    assert_eq!(
        outcomes(&journal, "heat.clear_hook"),
        ["started", "ok", "started", "ok"]
    );
    delete_settled(&heat, &stack).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_cancel_of_an_update_rolls_back() {
    let heat = heat().await;
    let stack = create(&heat, "mcan", 2).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("j.jsonl");
    // Nothing to cancel: refused by the plan (Heat would answer 400).
    let (ok, _, err) = caldera(&journal, &["heat", "cancel", &stack.name, "--yes"]);
    assert!(!ok);
    assert!(err.contains("only an update in progress"), "{err}");
    hooked_update(&heat, &stack, "b").await;
    wait_hooks(&journal, &stack.name, 2);
    let (ok, out, err) = caldera(&journal, &["heat", "cancel", &stack.name, "--yes"]);
    assert!(ok, "{out}\n{err}");
    let t0 = Instant::now();
    loop {
        let d = heat.get_stack(&stack, false).await.expect("show");
        if !d.summary.status.is_in_progress() {
            // Heat 27 now and then fails the end of a rollback itself: the nested group's
            // update purges the cancelled update's template while a member still points at
            // it (a foreign-key violation on `raw_template`: Heat's own database race, seen
            // once locally, never before in CI). The rollback ran all the same; any other
            // end is a failure.
            let heats_own_race = d.summary.status.raw == "ROLLBACK_FAILED"
                && d.summary.status_reason.as_deref().is_some_and(|r| {
                    r.contains("ForeignKeyViolation") && r.contains("raw_template")
                });
            assert!(
                d.summary.status.raw == "ROLLBACK_COMPLETE" || heats_own_race,
                "{:?}",
                d.summary
            );
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(180), "{:?}", d.summary);
        // The rollback stops on the update's hooks: clear them as Heat reaches them.
        let _ = caldera(
            &journal,
            &["heat", "clear-hook", &stack.name, "nodes/*", "--yes"],
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let cancels = outcomes(&journal, "heat.cancel");
    assert_eq!(cancels[1..], ["started", "ok"], "{cancels:?}");
    assert!(cancels[0].starts_with("refused"), "{cancels:?}");
    delete_settled(&heat, &stack).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_mark_unhealthy_shows_check_failed() {
    let heat = heat().await;
    let stack = create(&heat, "munh", 2).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("j.jsonl");
    let (ok, out, err) = caldera(
        &journal,
        &[
            "heat",
            "mark-unhealthy",
            &stack.name,
            "nodes/1",
            "--reason",
            "disk gone",
            "--yes",
        ],
    );
    assert!(ok, "{out}\n{err}");
    let group = heat
        .get_resource(&stack, "nodes")
        .await
        .expect("nodes")
        .resource
        .nested
        .expect("nested");
    let member = heat.get_resource(&group, "1").await.expect("member");
    eprintln!(
        "Heat reports nodes/1: {} {:?}",
        member.resource.status.raw, member.resource.status_reason
    );
    assert_eq!(member.resource.status.raw, "CHECK_FAILED");
    assert_eq!(member.resource.status_reason.as_deref(), Some("disk gone"));
    assert_eq!(outcomes(&journal, "heat.mark_unhealthy"), ["started", "ok"]);
    delete_settled(&heat, &stack).await;
}

/// The environment call (issue 15, item 2): a stack created with a pre-update hook on the
/// members of its ResourceGroup answers `GET .../environment` with the bare stored
/// `env_as_dict()` (every section, the registry as given), and the group's own nested stack
/// with its parent's registry narrowed to `nodes` (`get_child_environment`), so the hooks
/// match by path from either. Creating does not stop on a pre-update hook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_environment_gives_the_hooks_by_path() {
    let heat = heat().await;
    let template = json!({
        "heat_template_version": "2021-04-16",
        "resources": {"nodes": {
            "type": "OS::Heat::ResourceGroup",
            "properties": {"count": 2, "resource_def": {"type": "OS::Heat::TestResource"}}
        }}
    });
    let create = StackCreate {
        name: unique("menv"),
        template,
        environment: Some(
            json!({"resource_registry": {"resources": {"nodes": {"*": {"hooks": "pre-update"}}}}}),
        ),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(&heat, &stack, "CREATE_COMPLETE").await;

    let url = format!(
        "{}/stacks/{}/{}/environment",
        heat.base().trim_end_matches('/'),
        stack.name,
        stack.id
    );
    let raw: serde_json::Value = heat.transport().get_json(&url).await.expect("environment");
    for section in [
        "parameters",
        "parameter_defaults",
        "event_sinks",
        "encrypted_param_names",
        "resource_registry",
    ] {
        assert!(raw.get(section).is_some(), "{section} in {raw}");
    }
    assert_eq!(
        raw.pointer("/resource_registry/resources/nodes/*/hooks"),
        Some(&json!("pre-update")),
        "{raw}"
    );

    let hooks = heat.get_environment_hooks(&stack).await.expect("hooks");
    assert!(hooks.matches(&["nodes", "0"], "pre-update"));
    assert!(hooks.matches(&["nodes", "1"], "pre-update"));
    assert!(!hooks.matches(&["nodes", "0"], "pre-create"));
    assert!(!hooks.matches(&["nodes"], "pre-update"));

    let resources = heat
        .list_resources(&stack, &Default::default())
        .await
        .expect("resources");
    let group = resources
        .iter()
        .find_map(|r| {
            r.resource
                .nested
                .clone()
                .filter(|_| r.resource.name == "nodes")
        })
        .expect("the group's nested stack");
    let nested = heat
        .get_environment_hooks(&group)
        .await
        .expect("nested hooks");
    assert!(nested.matches(&["0"], "pre-update"), "{nested:?}");
    assert!(!nested.matches(&["nodes", "0"], "pre-update"), "{nested:?}");
    delete_settled(&heat, &stack).await;
}
