//! Actions on any group of a stack caldera did not write (issue 11, item 5), on a real
//! OpenStack Heat on 127.0.0.1: `caldera scale STACK/GROUP --count N` and
//! `caldera rollout start STACK/GROUP --set KEY=VALUE`, headless, on Magnum's cluster
//! layout and TripleO-like role groups (templates: tests/fixtures/shapes).
//!
//! Proves: Heat's preview is printed before anything is confirmed (and nothing reaches the
//! cloud unconfirmed); the group is scaled through the parameter its count reads; the
//! rollout holds every member on its hook and releases them one by one, each updated
//! exactly once, through the engine of caldera's own node groups (journal, lock); a change
//! that does not reach the group's members, and a stack Magnum owns, are refused with the
//! reason and recorded as refused.
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it.

use crate::support::heat_wait;
use crate::support::heat_wait::delete_settled;
use crate::support::real_heat_client;
use crate::support::real_heat_client::caldera_journaled as caldera;
use crate::support::scenarios::until_next_update;
use caldera::api::heat::{HeatClient, ResourceQuery, StackCreate};
use caldera::drivers::any_group::group_members;
use caldera::drivers::heat_native::group_stack_of;
use caldera::journal::{Journal, Outcome};
use caldera::model::StackRef;
use heat_wait::wait_status;
use real_heat_client::{fixture, heat, heat_url, oldest_first, unique};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Creates a stack from a fixture template (changed by `edit`) and waits for it.
async fn create(
    heat: &HeatClient,
    prefix: &str,
    top: &str,
    files: &[(&str, &str)],
    parameters: Value,
    edit: impl FnOnce(&mut Value),
) -> StackRef {
    let mut template: Value = serde_yaml_ng::from_str(&fixture(top)).expect("template YAML");
    edit(&mut template);
    let create = StackCreate {
        name: unique(prefix),
        template,
        files: files
            .iter()
            .map(|(n, p)| (n.to_string(), fixture(p)))
            .collect(),
        parameters: serde_json::from_value(parameters).expect("parameters"),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(heat, &stack, "CREATE_COMPLETE").await;
    stack
}

const MAGNUM_FILES: [(&str, &str); 3] = [
    ("lib/network.yaml", "magnum/network.yaml"),
    ("kubemaster.yaml", "magnum/kubemaster.yaml"),
    ("kubeminion.yaml", "magnum/kubeminion.yaml"),
];

/// Heat's `updated_time` of the stack: unchanged means no update reached it.
async fn updated_at(heat: &HeatClient, stack: &StackRef) -> Option<chrono::DateTime<chrono::Utc>> {
    let d = heat.get_stack(stack, false).await.expect("stack show");
    assert!(
        !d.summary.status.is_in_progress(),
        "{} is {}",
        stack.name,
        d.summary.status
    );
    d.summary.updated_at
}

/// The group's nested stack events not in `seen` (ids of events listed before an action),
/// up to the update that takes the action's hooks out (see `until_next_update`).
async fn member_events_after(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    seen: &BTreeSet<String>,
) -> Vec<(String, String, String)> {
    let nested = group_stack_of(heat, stack, group)
        .await
        .expect("group stack");
    let events: Vec<_> = heat
        .list_events_page(&nested, &oldest_first())
        .await
        .expect("events")
        .into_iter()
        .filter(|e| !seen.contains(&e.id))
        .collect();
    until_next_update(events)
        .into_iter()
        .filter(|e| !e.is_stack_event())
        .map(|e| {
            let what = format!("{} {}", e.status.raw, e.status_reason.unwrap_or_default());
            (e.id, e.resource_name, what)
        })
        .collect()
}

/// Every event id of the group's nested stack, its own included: what an action's events
/// are told apart from.
async fn event_ids(heat: &HeatClient, stack: &StackRef, group: &str) -> BTreeSet<String> {
    let nested = group_stack_of(heat, stack, group)
        .await
        .expect("group stack");
    heat.list_events_page(&nested, &oldest_first())
        .await
        .expect("events")
        .into_iter()
        .map(|e| e.id)
        .collect()
}

/// Whether Heat's preview, as printed, lists `group` as updated; the line's offset.
fn preview_updates(out: &str, group: &str) -> Option<usize> {
    let mut offset = 0;
    for line in out.lines() {
        if let Some(list) = line.trim().strip_prefix("Heat's preview, updated: ") {
            if list.split(", ").any(|g| g == group) {
                return Some(offset);
            }
        }
        offset += line.len() + 1;
    }
    None
}

fn refused_entries(journal: &Path) -> Vec<String> {
    Journal::open(journal)
        .read_all()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| match e.outcome {
            Outcome::Refused { error } => Some(format!("{} {}: {error}", e.action, e.target)),
            _ => None,
        })
        .collect()
}

/// Magnum's layout, a template caldera did not write: the workers' group scaled by its
/// path, then rolled out node by node with a parameter of the operator's template; Heat's
/// preview before any confirmation; each member updated exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn magnum_layout_scaled_and_rolled_out_by_path() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = create(
        &heat,
        "anyact-mag",
        "magnum/kubecluster.yaml",
        &MAGNUM_FILES,
        json!({"number_of_masters": 1, "number_of_minions": 2}),
        |_| {},
    )
    .await;
    let target = format!("{}/kube_minions", stack.name);

    // Without --yes and without a terminal: the preview is printed, nothing is sent.
    let before = updated_at(&heat, &stack).await;
    let (ok, out, err) = caldera(&journal, &["scale", &target, "--count", "3"]);
    assert!(!ok, "{out}\n{err}");
    assert!(err.contains("not a terminal"), "{err}");
    assert!(
        preview_updates(&out, "kube_minions").is_some()
            && out.contains("members: 2 -> 3")
            && out.contains("number_of_minions=3"),
        "the preview before confirming:\n{out}"
    );
    assert_eq!(updated_at(&heat, &stack).await, before, "nothing sent");

    // The scale, by path, through the parameter the group's count reads.
    let (ok, out, err) = caldera(&journal, &["scale", &target, "--count", "3", "--yes"]);
    assert!(ok, "scale failed:\n{out}\n{err}");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    assert_eq!(
        group_members(&heat, &stack, "kube_minions").await.unwrap(),
        ["0", "1", "2"]
    );
    let masters = group_members(&heat, &stack, "kube_masters").await.unwrap();
    assert_eq!(masters, ["0"], "the other group is untouched");
    let ips = heat
        .show_output(&stack, "kube_minions_private")
        .await
        .unwrap()
        .value;
    assert_eq!(ips.as_array().map(Vec::len), Some(3), "{ips}");

    // The rollout: the image parameter of the operator's template, member by member, with a
    // post-node hook that writes each node's member, name and address as the hook sees them.
    let seen = event_ids(&heat, &stack, "kube_minions").await;
    let (ok, out, err, got) = crate::support::real_heat_client::caldera_with_address_hook(
        dir.path(),
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "minion_image=fedora-coreos-40",
            "--yes",
            "--poll-secs",
            "0.5",
        ],
    );
    assert!(ok, "rollout failed:\n{out}\n{err}");
    // Each member's address as Heat resolves the template's own output (Magnum's
    // kube_minion_ip, no output named `ip`), in the hooks' CALDERA_NODE_IP.
    let want: Vec<String> = ips
        .as_array()
        .expect("list")
        .iter()
        .enumerate()
        .map(|(i, ip)| format!("{i} {}", ip.as_str().unwrap_or_default()))
        .collect();
    assert_eq!(got, want, "post-node hooks' member and address");
    let preview_at = preview_updates(&out, "kube_minions");
    let plan_at = out.find("batch   3: 2");
    assert!(
        preview_at.is_some() && plan_at.is_some() && preview_at < plan_at,
        "Heat's preview, then the batches:\n{out}"
    );
    assert!(
        out.contains("members of kube_minions (3): 0, 1, 2"),
        "{out}"
    );
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;

    // Each member updated exactly once, by this rollout, and on its hook first.
    // (Heat's hook events carry the member's last status: only "state changed" events are
    // the member's own update.)
    let mut completes: BTreeMap<String, usize> = BTreeMap::new();
    let mut paused: BTreeMap<String, usize> = BTreeMap::new();
    let mut started_at: BTreeMap<String, chrono::DateTime<chrono::Utc>> = BTreeMap::new();
    let mut done_at: BTreeMap<String, chrono::DateTime<chrono::Utc>> = BTreeMap::new();
    let nested = group_stack_of(&heat, &stack, "kube_minions").await.unwrap();
    let fresh: Vec<_> = heat
        .list_events_page(&nested, &oldest_first())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| !seen.contains(&e.id))
        .collect();
    for e in until_next_update(fresh) {
        if e.is_stack_event() {
            continue;
        }
        let reason = e.status_reason.clone().unwrap_or_default();
        let own = reason == "state changed";
        if own && e.status.raw == "UPDATE_COMPLETE" {
            *completes.entry(e.resource_name.clone()).or_default() += 1;
            done_at.insert(e.resource_name.clone(), e.time);
        }
        if own && e.status.raw == "UPDATE_IN_PROGRESS" {
            started_at.insert(e.resource_name.clone(), e.time);
        }
        if reason.contains("paused until Hook pre-update") {
            *paused.entry(e.resource_name.clone()).or_default() += 1;
        }
    }
    let each_once: BTreeMap<String, usize> =
        ["0", "1", "2"].iter().map(|m| (m.to_string(), 1)).collect();
    assert_eq!(completes, each_once, "UPDATE_COMPLETE per member");
    assert_eq!(paused, each_once, "held on its hook once per member");
    // Node by node: a member starts only after the one before it is done (Heat's times
    // have whole seconds, hence not strictly after).
    for (a, b) in [("0", "1"), ("1", "2")] {
        assert!(
            done_at[a] <= started_at[b],
            "{a} done {done_at:?}, {b} started {started_at:?}"
        );
    }
    // What Heat now holds, per member: the new image.
    for r in heat
        .list_resources(&nested, &ResourceQuery::default())
        .await
        .unwrap()
    {
        let member = r.resource.nested.expect("a member stack");
        let p = heat.get_stack(&member, false).await.unwrap().parameters;
        assert_eq!(
            p.get("server_image").map(String::as_str),
            Some("fedora-coreos-40"),
            "member {}",
            r.resource.name
        );
    }
    // The journal: the plan before the PATCH, one release per member, the end.
    let entries = Journal::open(&journal).read_all().unwrap();
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    let start = actions.iter().position(|a| *a == "rollout.start").unwrap();
    let started = actions
        .iter()
        .position(|a| *a == "rollout.started")
        .unwrap();
    assert!(start < started, "{actions:?}");
    assert!(entries[start].target.ends_with("/kube_minions"));
    let status = caldera(&journal, &["rollout", "status", &target]);
    assert!(status.0, "{}\n{}", status.1, status.2);
    assert!(
        status.1.contains("completed") || status.1.contains("Completed"),
        "{}",
        status.1
    );
    delete_settled(&heat, &stack).await;
}

/// TripleO-like role groups: the Compute role scaled by path; a parameter that does not
/// reach Compute's members is refused with the reason, recorded, and nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn tripleo_roles_scaled_and_a_change_that_cannot_reach_is_refused() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = create(
        &heat,
        "anyact-tripleo",
        "tripleo/overcloud.yaml",
        &[("role.yaml", "tripleo/role.yaml")],
        json!({"ControllerCount": 1, "ComputeCount": 1}),
        |_| {},
    )
    .await;
    let compute = format!("{}/Compute", stack.name);
    let before = updated_at(&heat, &stack).await;
    let (ok, out, err) = caldera(
        &journal,
        &[
            "rollout",
            "start",
            &compute,
            "--set",
            "ControllerCount=2",
            "--yes",
        ],
    );
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains("refused: parameter ControllerCount does not reach the members of Compute")
            && out.contains("reads: ComputeCount"),
        "{out}\n{err}"
    );
    let (ok, out, err) = caldera(&journal, &["scale", &compute, "--count", "1", "--yes"]);
    assert!(!ok && out.contains("already has 1 members"), "{out}\n{err}");
    assert_eq!(updated_at(&heat, &stack).await, before, "nothing sent");
    let refused = refused_entries(&journal);
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0].starts_with("rollout.start ") && refused[0].contains("ControllerCount"));

    let (ok, out, err) = caldera(&journal, &["scale", &compute, "--count", "2", "--yes"]);
    assert!(ok, "scale failed:\n{out}\n{err}");
    assert!(out.contains("ComputeCount=2"), "{out}");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    assert_eq!(
        group_members(&heat, &stack, "Compute").await.unwrap(),
        ["0", "1"]
    );
    assert_eq!(
        group_members(&heat, &stack, "Controller").await.unwrap(),
        ["0"]
    );
    let ips = heat
        .show_output(&stack, "ComputeIpAddresses")
        .await
        .unwrap()
        .value;
    assert_eq!(ips, json!(["192.168.25.0", "192.168.25.1"]));
    delete_settled(&heat, &stack).await;
}

/// A stack Magnum owns (Magnum's `cluster_uuid` parameter): refused unless the operator
/// says so; said so, the preview is shown and the refusal is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_magnum_owned_stack_is_refused_unless_allowed() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = create(
        &heat,
        "anyact-owned",
        "magnum/kubecluster.yaml",
        &MAGNUM_FILES,
        json!({"number_of_masters": 1, "number_of_minions": 1,
               "cluster_uuid": "5d12f6fd-a196-4bf0-ae4c-1f639a523a52"}),
        |t| {
            t["parameters"]["cluster_uuid"] = json!({"type": "string"});
        },
    )
    .await;
    let target = format!("{}/kube_minions", stack.name);
    let before = updated_at(&heat, &stack).await;
    let args = ["rollout", "start", &target, "--set", "minion_image=x"];
    let (ok, out, err) = caldera(&journal, &[&args[..], &["--yes"]].concat());
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains("belongs to a Magnum cluster") && out.contains("cluster_uuid"),
        "{out}\n{err}"
    );
    let (ok, out, err) = caldera(&journal, &["scale", &target, "--count", "2", "--yes"]);
    assert!(
        !ok && out.contains("belongs to a Magnum cluster"),
        "{out}\n{err}"
    );
    assert_eq!(refused_entries(&journal).len(), 2);

    // Said so: the plan and Heat's preview, no refusal; unconfirmed, nothing is sent.
    let (ok, out, err) = caldera(&journal, &[&args[..], &["--allow-magnum-owned"]].concat());
    assert!(!ok && err.contains("not a terminal"), "{out}\n{err}");
    assert!(!out.contains("refused"), "{out}");
    assert!(preview_updates(&out, "kube_minions").is_some(), "{out}");
    assert!(out.contains("batch   1: 0"), "{out}");
    assert_eq!(updated_at(&heat, &stack).await, before, "nothing sent");
    delete_settled(&heat, &stack).await;
}

/// The controls of caldera's own rollouts on a group of an operator's stack: a rollout
/// paused from a second process stops releasing (its driver exits with the paused status),
/// `rollout status STACK/GROUP` says so, `rollout resume STACK/GROUP` finishes it; every
/// member updated exactly once across both drivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_group_rollout_is_paused_and_resumed_by_path() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = create(
        &heat,
        "anyact-pause",
        "magnum/kubecluster.yaml",
        &MAGNUM_FILES,
        json!({"number_of_masters": 1, "number_of_minions": 2}),
        |_| {},
    )
    .await;
    let target = format!("{}/kube_minions", stack.name);
    let seen = event_ids(&heat, &stack, "kube_minions").await;
    // A gate after each batch leaves time to pause before the second member.
    let driver = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args(["--heat-url", &heat_url()])
        .args(["rollout", "start", &target, "--set", "minion_image=fcos-41"])
        .args(["--yes", "--poll-secs", "0.5", "--gate-secs", "5"])
        .env("CALDERA_JOURNAL", &journal)
        .env_remove("CALDERA_ACTIONS_CONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the driver");
    // Bounded wait for the driver to have sent its update.
    let mut started = false;
    for _ in 0..120 {
        let entries = Journal::open(&journal).read_all().unwrap_or_default();
        if entries.iter().any(|e| e.action == "rollout.started") {
            started = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(started, "the driver never started");
    let (ok, out, err) = caldera(
        &journal,
        &["rollout", "pause", &target, "--wait-secs", "60"],
    );
    assert!(ok, "pause:\n{out}\n{err}");
    let end = driver.wait_with_output().expect("driver ends");
    assert_eq!(
        end.status.code(),
        Some(3),
        "the driver stops on the pause:\n{}",
        String::from_utf8_lossy(&end.stderr)
    );
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &target]);
    assert!(ok && out.to_lowercase().contains("paused"), "{out}\n{err}");
    // Heat would let a new update supersede the held one: refused while it is under way.
    let (ok, out, err) = caldera(&journal, &["scale", &target, "--count", "3", "--yes"]);
    assert!(
        !ok && out.contains("is UPDATE_IN_PROGRESS: wait for it to settle"),
        "{out}\n{err}"
    );
    let (ok, out, err) = caldera(
        &journal,
        &["rollout", "resume", &target, "--poll-secs", "0.5"],
    );
    assert!(ok, "resume:\n{out}\n{err}");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let mut completes: BTreeMap<String, usize> = BTreeMap::new();
    for (id, member, status) in member_events_after(&heat, &stack, "kube_minions", &seen).await {
        // The member's own update (hook events carry its last status, see above).
        if !seen.contains(&id) && status == "UPDATE_COMPLETE state changed" {
            *completes.entry(member).or_default() += 1;
        }
    }
    assert_eq!(
        completes,
        [("0".to_string(), 1), ("1".to_string(), 1)]
            .into_iter()
            .collect(),
        "one update per member"
    );
    delete_settled(&heat, &stack).await;
}

/// Another machine's update replaces a group rollout in the worst place, while the rollout
/// waits in its gate between two members (on Magnum's layout, a template caldera did not
/// write): the update carries that other rollout's marker, so the driver ends as superseded
/// without releasing another member, and says whose update Heat now runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_group_rollout_superseded_in_its_gate_releases_nothing_more() {
    use caldera::rollout::plan::{marker_tag, with_marker};
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = create(
        &heat,
        "anyact-sup",
        "magnum/kubecluster.yaml",
        &MAGNUM_FILES,
        json!({"number_of_masters": 1, "number_of_minions": 3}),
        |_| {},
    )
    .await;
    let target = format!("{}/kube_minions", stack.name);
    let driver = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args(["--heat-url", &heat_url()])
        .args(["rollout", "start", &target, "--set", "minion_image=fcos-41"])
        .args(["--yes", "--poll-secs", "0.5", "--gate-secs", "8"])
        .env("CALDERA_JOURNAL", &journal)
        .env_remove("CALDERA_ACTIONS_CONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the driver");
    // Bounded wait for the first member's release: the gate follows it.
    let released = |entries: &[caldera::journal::Entry]| {
        entries
            .iter()
            .filter(|e| e.action == "rollout.release" && e.outcome == Outcome::Started)
            .count()
    };
    let mut first = false;
    for _ in 0..240 {
        let entries = Journal::open(&journal).read_all().unwrap_or_default();
        if released(&entries) == 1 {
            first = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(first, "the driver never released its first member");
    // The other machine's PATCH: its own marker, the stack's other tags kept.
    let shown = heat.get_stack(&stack, false).await.expect("stack");
    assert!(
        shown.tags.iter().any(|t| t.starts_with("caldera-rollout=")),
        "the driver's marker is on the stack: {:?}",
        shown.tags
    );
    let update = caldera::api::heat::StackUpdate {
        tags: Some(with_marker(
            &shown.tags,
            &marker_tag("r-other", "elsewhere"),
            &[],
        )),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &update)
        .await
        .expect("the other machine's update");
    let end = driver.wait_with_output().expect("driver ends");
    let err = String::from_utf8_lossy(&end.stderr);
    let out = String::from_utf8_lossy(&end.stdout);
    assert!(!end.status.success(), "{out}\n{err}");
    assert!(
        format!("{out}{err}")
            .contains("superseded: Heat now runs the update of rollout r-other from elsewhere"),
        "{out}\n{err}"
    );
    let entries = Journal::open(&journal).read_all().expect("journal parses");
    assert_eq!(released(&entries), 1, "released after being superseded");
    // Status now names the rollout Heat runs, by its marker, and where it was started.
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &target]);
    assert!(
        ok && out.contains("rollout r-other of") && out.contains("started on elsewhere"),
        "{out}\n{err}"
    );
    let _ = heat
        .action(
            &stack,
            caldera::api::heat::StackAction::CancelWithoutRollback,
        )
        .await;
    delete_settled(&heat, &stack).await;
}

/// A group inside a nested stack (`roles/Compute`, the stack's parameters passed down as the
/// nested template's own): rolled out node by node by its path, the breakpoints nested under
/// the owner in the environment and honoured by Heat on each member, each member updated
/// exactly once; then scaled through the parameter its count reads two templates up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_group_inside_a_nested_stack_is_rolled_out_and_scaled_by_path() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = create(
        &heat,
        "anyact-nested",
        "nested_group/top.yaml",
        &[
            ("roles.yaml", "nested_group/roles.yaml"),
            ("node.yaml", "nested_group/node.yaml"),
        ],
        json!({"compute_count": 2}),
        |_| {},
    )
    .await;
    let target = format!("{}/roles/Compute", stack.name);
    let seen = event_ids(&heat, &stack, "roles/Compute").await;
    let (ok, out, err) = caldera(
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "node_image=img-b",
            "--yes",
            "--poll-secs",
            "0.5",
        ],
    );
    assert!(ok, "rollout failed:\n{out}\n{err}");
    assert!(
        preview_updates(&out, "roles").is_some(),
        "Heat's preview shows the owner changing: {out}"
    );
    let events: Vec<(String, String, String)> =
        member_events_after(&heat, &stack, "roles/Compute", &seen)
            .await
            .into_iter()
            .filter(|(id, _, _)| !seen.contains(id))
            .collect();
    for member in ["0", "1"] {
        let mine: Vec<&String> = events
            .iter()
            .filter(|(_, m, _)| m == member)
            .map(|(_, _, what)| what)
            .collect();
        let held = mine
            .iter()
            .filter(|w| w.contains("paused until Hook pre-update is cleared"))
            .count();
        let done = mine
            .iter()
            .filter(|w| w.starts_with("UPDATE_COMPLETE"))
            .count();
        assert_eq!((held, done), (1, 1), "member {member}: {mine:?}");
    }
    let detail = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(
        detail.parameters.get("node_image").map(String::as_str),
        Some("img-b")
    );

    let (ok, out, err) = caldera(&journal, &["scale", &target, "--count", "3", "--yes"]);
    assert!(ok, "scale failed:\n{out}\n{err}");
    assert!(out.contains("compute_count=3"), "{out}");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    assert_eq!(
        group_members(&heat, &stack, "roles/Compute").await.unwrap(),
        ["0", "1", "2"]
    );
    delete_settled(&heat, &stack).await;
}

/// Issue 25 on a real Heat: a rollout of a plain stack's group (`STACK/GROUP`) in the gate after
/// its first member: the nodes pane's model of the group, from its row and its members as
/// the console reads them, counts new, failed and left as `rollout status` does, and the
/// members on the rollout's hooks are held by another caldera (the marker on the stack).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_plain_stacks_group_mid_rollout_counts_as_rollout_status_does() {
    use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
    let conn = CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(crate::support::real_heat_env::heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to the real Heat");
    let env = crate::support::real_heat_env::env().await;
    let name = crate::support::real_heat_env::unique("plmid");
    crate::support::scenarios::plain_group_mid_rollout_scenario(&conn, &env, &name).await;
}
