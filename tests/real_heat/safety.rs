//! Actions change only what the plan names and leave nothing behind (issue 23), on a real
//! OpenStack Heat on 127.0.0.1, on
//! Magnum's cluster layout (templates: tests/fixtures/shapes/magnum) carrying an operator's
//! own hooks:
//!
//! - a completed rollout takes its `pre-update` hooks back out of the stack's environment:
//!   Heat's stored environment after it equals the one before (the operator's own hooks
//!   kept), and a following plain `PATCH` of one parameter (`openstack stack update
//!   --existing`) completes with no member held;
//! - a rollout cancelled without rollback keeps its hooks (taking them out is an update that
//!   would bring the members not updated to the new values) and says so; `rollout status`
//!   and `heat hooks` name the hooks the next update would stop on; `heat unhook` shows its
//!   plan with Heat's preview, sends nothing unconfirmed, and with `--yes` takes them out;
//! - a rollout of the minions where the masters read the same image parameter (as Magnum's
//!   layout can) is refused, naming the masters and sending nothing, unless the operator
//!   says `--let-heat-update kube_masters`; with `--also kube_masters` the masters are held
//!   too and released one at a time before the minions, each member updated once, no hook
//!   left, and a plain update afterwards holds no member.
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it.

use crate::support::heat_wait;
use crate::support::heat_wait::delete_settled;
use crate::support::pty;
use crate::support::real_heat_client;
use crate::support::real_heat_client::caldera_journaled as caldera;
use caldera::api::heat::{HeatClient, StackCreate, StackUpdate};
use caldera::drivers::heat_native::group_stack_of;
use caldera::journal::{Journal, Outcome};
use caldera::model::StackRef;
use heat_wait::wait_status;
use real_heat_client::{fixture, heat, heat_url, oldest_first, unique};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const MAGNUM_FILES: [(&str, &str); 3] = [
    ("lib/network.yaml", "magnum/network.yaml"),
    ("kubemaster.yaml", "magnum/kubemaster.yaml"),
    ("kubeminion.yaml", "magnum/kubeminion.yaml"),
];

/// The operator's own hooks, which no action of caldera may touch: under the rollout's
/// group and under the masters, on names no member has (so that no test stack's delete is
/// held by them).
fn operators_environment() -> Value {
    json!({"resource_registry": {"resources": {
        "kube_minions": {"99": {"hooks": "pre-delete"}},
        "kube_masters": {"spare-*": {"hooks": ["pre-delete"]}},
    }}})
}

/// Magnum's layout with 1 master and `minions` minions, the operator's hooks in its
/// environment, created and waited for.
async fn magnum_stack(heat: &HeatClient, prefix: &str, minions: u32) -> StackRef {
    magnum_stack_edited(heat, prefix, minions, |_| {}).await
}

/// The same, with the cluster template changed by `edit` first.
async fn magnum_stack_edited(
    heat: &HeatClient,
    prefix: &str,
    minions: u32,
    edit: impl FnOnce(&mut Value),
) -> StackRef {
    magnum_stack_made(heat, prefix, minions, edit, false).await
}

/// Magnum's layout whose nodes are `OS::Nova::Server`s as in Magnum's own templates (the
/// discovery suite's server stand-in registered under that type), not `OS::Heat::None`:
/// for what reads the servers' definitions, such as the image parameter they boot from.
async fn magnum_stack_with_servers(
    heat: &HeatClient,
    prefix: &str,
    minions: u32,
    edit: impl FnOnce(&mut Value),
) -> StackRef {
    magnum_stack_made(heat, prefix, minions, edit, true).await
}

async fn magnum_stack_made(
    heat: &HeatClient,
    prefix: &str,
    minions: u32,
    edit: impl FnOnce(&mut Value),
    servers: bool,
) -> StackRef {
    let mut template: Value =
        serde_yaml_ng::from_str(&fixture("magnum/kubecluster.yaml")).expect("template YAML");
    edit(&mut template);
    let mut files: BTreeMap<String, String> = MAGNUM_FILES
        .iter()
        .map(|(n, p)| (n.to_string(), fixture(p)))
        .collect();
    let mut environment = operators_environment();
    if servers {
        for (name, text) in files.iter_mut() {
            if name.starts_with("kube") {
                *text = text.replace("type: OS::Heat::None", "type: OS::Nova::Server");
            }
        }
        files.insert("server.yaml".into(), fixture("../discovery/server.yaml"));
        environment["resource_registry"]["OS::Nova::Server"] = json!("server.yaml");
    }
    let create = StackCreate {
        name: unique(prefix),
        template,
        files,
        parameters: serde_json::from_value(
            json!({"number_of_masters": 1, "number_of_minions": minions}),
        )
        .expect("parameters"),
        environment: Some(environment),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(heat, &stack, "CREATE_COMPLETE").await;
    stack
}

/// The stored environment's `resource_registry` (what hooks live in) and `parameters`.
async fn registry_and_parameters(heat: &HeatClient, stack: &StackRef) -> (Value, Value) {
    let env = heat.get_environment(stack).await.expect("environment");
    (env["resource_registry"].clone(), env["parameters"].clone())
}

/// `v` without the map entries that declare nothing (`{}`), recursively.
fn without_empty(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), without_empty(v)))
                .filter(|(_, v)| v.as_object().is_none_or(|o| !o.is_empty()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A plain `PATCH` of one parameter, as `openstack stack update --existing --parameter`
/// sends it, must end within `limit` with no member (of the masters or the minions) paused
/// on a hook on the way.
async fn plain_update_runs_unheld(heat: &HeatClient, stack: &StackRef, image: &str) {
    let mut groups = Vec::new();
    for path in ["kube_masters", "kube_minions"] {
        groups.push(group_stack_of(heat, stack, path).await.expect("group"));
    }
    let mut before = std::collections::BTreeSet::new();
    for group in &groups {
        before.extend(
            heat.list_events_page(group, &oldest_first())
                .await
                .expect("events")
                .into_iter()
                .map(|e| e.id),
        );
    }
    let update = StackUpdate {
        parameters: [("minion_image".to_string(), json!(image))].into(),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(stack, &update).await.expect("PATCH");
    let t0 = Instant::now();
    let limit = Duration::from_secs(120);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let d = heat.get_stack(stack, false).await.expect("stack");
        let status = d.summary.status.raw.clone();
        if status == "UPDATE_COMPLETE" && d.summary.updated_at.is_some() {
            break;
        }
        assert!(
            d.summary.status.is_in_progress() || status == "CREATE_COMPLETE",
            "the plain update ended {status}"
        );
        assert!(
            t0.elapsed() < limit,
            "the plain update is still {status} after {limit:?}: a member is held"
        );
    }
    let mut held: Vec<String> = Vec::new();
    for group in &groups {
        held.extend(
            heat.list_events_page(group, &oldest_first())
                .await
                .expect("events")
                .into_iter()
                .filter(|e| !before.contains(&e.id))
                .filter(|e| {
                    e.status_reason
                        .as_deref()
                        .is_some_and(|r| r.contains("paused until Hook"))
                })
                .map(|e| format!("{}/{}", group.name, e.resource_name)),
        );
    }
    assert!(
        held.is_empty(),
        "members held by the plain update: {held:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_completed_rollout_leaves_the_environment_as_it_found_it() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = magnum_stack(&heat, "unhook-done", 2).await;
    let target = format!("{}/kube_minions", stack.name);
    let (registry_before, params_before) = registry_and_parameters(&heat, &stack).await;

    let (ok, out, err) = caldera(
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
    assert!(out.contains("hooks: taken out"), "{out}\n{err}");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;

    // Heat's stored environment: the registry exactly as before (the operator's own hooks
    // included), the parameters as before but the one the rollout set.
    // One difference Heat's merge cannot avoid: where the group's entry existed already
    // (the operator's hook on member 99), a `null` can take back only the `hooks` of the
    // member pattern `*` (a glob key), leaving `"*": {}`, which declares nothing.
    let (registry_after, params_after) = registry_and_parameters(&heat, &stack).await;
    assert_eq!(
        without_empty(&registry_after),
        without_empty(&registry_before),
        "the resource registry, entries that declare nothing aside: {registry_after}"
    );
    let mut expected = params_before.clone();
    expected["minion_image"] = json!("fedora-coreos-40");
    assert_eq!(
        params_after, expected,
        "only the rollout's parameter changed"
    );

    // The journal: the unhook's PATCH recorded before it was sent, its outcome, the end.
    let actions: Vec<(String, Outcome)> = Journal::open(&journal)
        .read_all()
        .unwrap()
        .into_iter()
        .map(|e| (e.action, e.outcome))
        .collect();
    let at = |a: &str, o: &Outcome| actions.iter().position(|(x, y)| x == a && y == o);
    let started = at("rollout.unhook", &Outcome::Started).expect("unhook journaled");
    let done = at("rollout.unhook", &Outcome::Ok).expect("unhook outcome");
    let finish = at("rollout.finish", &Outcome::Ok).expect("finish");
    assert!(started < done && done < finish, "{actions:?}");

    // A member marked unhealthy afterwards is named where an operator looks: a failure of
    // the stack, and in the rollout's status as unhealthy (its update stands).
    let (ok, out, err) = caldera(
        &journal,
        &[
            "heat",
            "mark-unhealthy",
            &stack.name,
            "kube_minions/1",
            "--reason",
            "disk",
            "--yes",
        ],
    );
    assert!(ok, "{out}\n{err}");
    let (ok, out, err) = caldera(&journal, &["failures", &stack.name]);
    assert!(
        ok && out.contains("kube_minions.1") && out.contains("CHECK_FAILED"),
        "{out}\n{err}"
    );
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &target]);
    assert!(ok, "{out}\n{err}");
    assert!(
        // Unhealthy is not failed: the update stands, every member new.
        out.contains("completed")
            && out.contains("unhealthy since: 1")
            && out.contains("new 2/2")
            && !out.contains("failed 1"),
        "{out}"
    );

    // Whoever updates the stack next is not held.
    plain_update_runs_unheld(&heat, &stack, "fedora-coreos-41").await;
    let (ok, out, err) = caldera(&journal, &["heat", "hooks", &stack.name]);
    assert!(ok && !out.contains("warning:"), "{out}\n{err}");
    delete_settled(&heat, &stack).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn hooks_a_cancelled_rollout_keeps_are_named_and_taken_out_on_request() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = magnum_stack(&heat, "unhook-cancel", 3).await;
    let target = format!("{}/kube_minions", stack.name);
    let (registry_before, _) = registry_and_parameters(&heat, &stack).await;

    // A gate after each member leaves time to cancel before the last one.
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
    let mut released = false;
    for _ in 0..240 {
        let entries = Journal::open(&journal).read_all().unwrap_or_default();
        if entries
            .iter()
            .any(|e| e.action == "rollout.release" && e.outcome == Outcome::Ok)
        {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(released, "the driver never released a member");
    let (ok, out, err) = caldera(
        &journal,
        &[
            "rollout",
            "abort",
            &target,
            "--cancel",
            "--yes",
            "--wait-secs",
            "120",
        ],
    );
    assert!(ok, "abort --cancel:\n{out}\n{err}");
    let end = driver.wait_with_output().expect("driver ends");
    let said = String::from_utf8_lossy(&end.stdout).to_string();
    let settled = heat.get_stack(&stack, false).await.expect("stack");
    assert!(
        !settled.summary.status.is_in_progress(),
        "{}",
        settled.summary.status
    );

    // The hooks stay (taking them out would update the members not updated), and every
    // reader says so: the driver's last words, `rollout status`, `heat hooks`.
    let hooks = heat.get_environment_hooks(&stack).await.expect("env");
    assert_eq!(
        hooks.paths_with("pre-update"),
        vec![vec!["kube_minions".to_string(), "*".to_string()]],
        "{hooks:?}"
    );
    assert!(
        said.contains("left in the stack's environment on purpose"),
        "{said}"
    );
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &target]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("holds pre-update hooks on kube_minions/* with no update running")
            && out.contains("holds its 3 member(s)"),
        "{out}"
    );
    let (ok, out, err) = caldera(&journal, &["heat", "hooks", &stack.name]);
    assert!(
        ok && out.contains("warning: this stack's environment holds"),
        "{out}\n{err}"
    );

    // The console's tree of the stack says it too, first in its why-stuck panel, at 80x24.
    let url = heat_url();
    let mut c = pty::Console::start_with(80, 24, &["--heat-url", &url], &[], |_| {});
    c.wait_for("the first frame", |s| s.alternate);
    c.send(":stacks\r");
    c.wait_for("the stack list", |s| s.has("Stacks ["));
    c.send("/");
    c.send(&format!("{}\r", stack.name));
    c.wait_for("the stack alone", |s| {
        s.has(&stack.name) && s.has("Stacks [1")
    });
    c.press("\r", "the tree, with the hooks left", |s| {
        s.has("pre-update hooks left on kube_minions/*: next update holds its 3 members")
            && s.has(&format!("caldera heat unhook {} kube_minions", stack.name))
    });
    c.send("q");
    assert!(c.wait_exit().success());
    c.assert_restored();

    // Another group's action would stop on them and never end: refused, nothing sent.
    let updated = settled.summary.updated_at;
    let masters = format!("{}/kube_masters", stack.name);
    let (ok, out, err) = caldera(&journal, &["scale", &masters, "--count", "2", "--yes"]);
    assert!(
        !ok && out.contains("holds pre-update hooks on kube_minions/*"),
        "{out}\n{err}"
    );
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.updated_at, updated, "nothing sent");

    // The way out: planned (Heat's preview included), nothing sent unconfirmed...
    let (ok, out, err) = caldera(&journal, &["heat", "unhook", &stack.name, "kube_minions"]);
    assert!(!ok && err.contains("not a terminal"), "{out}\n{err}");
    assert!(
        out.contains("heat.unhook") && out.contains("Heat's preview") && out.contains("PATCH"),
        "{out}"
    );
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.updated_at, updated, "nothing sent");
    // ... and sent when confirmed: the members are no longer held, and the registry is back
    // to what it was (the operator's own hooks kept).
    let (ok, out, err) = caldera(
        &journal,
        &["heat", "unhook", &stack.name, "kube_minions", "--yes"],
    );
    assert!(ok, "{out}\n{err}");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let hooks = heat.get_environment_hooks(&stack).await.expect("env");
    assert!(hooks.paths_with("pre-update").is_empty(), "{hooks:?}");
    assert!(
        hooks.matches(&["kube_minions", "99"], "pre-delete"),
        "{hooks:?}"
    );
    assert!(
        hooks.matches(&["kube_masters", "spare-1"], "pre-delete"),
        "{hooks:?}"
    );
    let (registry_after, _) = registry_and_parameters(&heat, &stack).await;
    let minions_before = &registry_before["resources"]["kube_minions"];
    let minions_after = &registry_after["resources"]["kube_minions"];
    assert_eq!(
        minions_after["99"], minions_before["99"],
        "{registry_after}"
    );
    plain_update_runs_unheld(&heat, &stack, "fcos-42").await;
    delete_settled(&heat, &stack).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_change_that_reaches_another_group_is_refused_unless_the_operator_lets_heat() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    // The masters read the minions' image parameter too: one image for the whole cluster.
    let stack = magnum_stack_with_servers(&heat, "blast", 2, |t| {
        t["resources"]["kube_masters"]["properties"]["resource_def"]["properties"]
            ["server_image"] = json!({"get_param": "minion_image"});
    })
    .await;
    let target = format!("{}/kube_minions", stack.name);
    let updated = heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .summary
        .updated_at;
    let start = |extra: &[&str]| caldera(&journal, &minion_rollout(&target, extra));
    let (ok, out, err) = start(&[]);
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains(
            "blast radius: kube_masters (OS::Heat::ResourceGroup, 1 member(s), all at once)"
        ) && out.contains("refused: kube_masters (OS::Heat::ResourceGroup) reads minion_image too"),
        "{out}\n{err}"
    );
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.updated_at, updated, "nothing sent");
    let refused = Journal::open(&journal)
        .read_all()
        .unwrap()
        .into_iter()
        .any(|e| matches!(e.outcome, Outcome::Refused { .. }) && e.action == "rollout.start");
    assert!(refused, "the refusal is journaled");

    // The console's upgrade form on the same group (the stack seen as a cluster): the image
    // parameter found from the templates, the same refusal, journaled, naming the command
    // that can say the masters may go (the form cannot).
    {
        use caldera::service::operator::Operator;
        use caldera::service::CloudService;
        let conn = real_heat_client::connect().await;
        let op = crate::support::scenarios::live_operator(
            &conn,
            crate::support::scenarios::action_context(Journal::open(&journal), "tester"),
            std::time::Duration::from_millis(200),
        );
        let cluster = caldera::service::plain_stack::cluster_of(&stack.id, &stack.name);
        let row = caldera::service::live::LiveService::new(conn.clone())
            .list_nodegroups(cluster.clone())
            .await
            .expect("node group rows")
            .into_iter()
            .find(|r| r.name == "kube_minions")
            .expect("the minions' row");
        // An image name the shell would split, and the form's batches and gate: the command
        // named runs as shown and plans what the form asked.
        let options = caldera::rollout::RolloutOptions {
            batch_size: 2,
            gate_wait_ms: 5000,
            ..Default::default()
        };
        let e = op
            .plan_upgrade(cluster, row, "Fedora CoreOS 41".into(), options)
            .await
            .expect_err("refused as the command line refuses it");
        // With the console's own connection, so it reaches the same Heat from any shell.
        let command = format!(
            "caldera rollout start {target} --set 'minion_image=Fedora CoreOS 41' --batch 2 \
             --gate-secs 5 --heat-url {} --let-heat-update kube_masters",
            heat_url().trim_end_matches('/')
        );
        assert!(
            e.message
                .contains("kube_masters (OS::Heat::ResourceGroup) reads minion_image too")
                && e.message.contains(&format!("`{command}`")),
            "{e}"
        );
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_caldera"));
        let path = format!(
            "{}:{}",
            bin.parent().expect("the binary's directory").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let shown = std::process::Command::new("sh")
            .args(["-c", &command])
            .env("PATH", path)
            .env_remove("CALDERA_HEAT_URL")
            .env_remove("OS_CLOUD")
            .env("CALDERA_JOURNAL", &journal)
            .env_remove("CALDERA_ACTIONS_CONFIG")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the command as shown, in a shell");
        let out = String::from_utf8_lossy(&shown.stdout);
        let err = String::from_utf8_lossy(&shown.stderr);
        assert!(
            out.contains("kube_minions: minion_image=Fedora CoreOS 41")
                && out.contains("then 2 at a time); gate 5.0s after each batch")
                && out.contains("let Heat update it (--let-heat-update)")
                && err.contains("give --yes"),
            "{out}\n{err}"
        );
        let d = heat.get_stack(&stack, false).await.expect("stack");
        assert_eq!(d.summary.updated_at, updated, "nothing sent");
        let refusals = Journal::open(&journal)
            .read_all()
            .unwrap()
            .into_iter()
            .filter(|e| matches!(e.outcome, Outcome::Refused { .. }) && e.action == "rollout.start")
            .count();
        assert_eq!(refusals, 2, "the console's refusal is journaled too");
    }

    // Said on purpose: the masters are Heat's to update, the minions are held and released.
    let (ok, out, err) = start(&["--let-heat-update", "kube_masters"]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("let Heat update it (--let-heat-update)"),
        "{out}"
    );
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let hooks = heat.get_environment_hooks(&stack).await.expect("env");
    assert!(hooks.paths_with("pre-update").is_empty(), "{hooks:?}");
    delete_settled(&heat, &stack).await;
}

/// `rollout start TARGET` of the minions' new image (`minion_image=fcos-41`) with `extra`.
fn minion_rollout<'a>(target: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "rollout",
        "start",
        target,
        "--set",
        "minion_image=fcos-41",
        "--yes",
        "--poll-secs",
        "0.5",
    ];
    args.extend_from_slice(extra);
    args
}

/// Magnum's layout with `masters` masters and `minions` minions booting one image parameter
/// (`minion_image`), each member's update taking `secs` seconds (a slow resource reading the
/// image beside its server: in Heat's whole-second event times two members updating at once
/// overlap, and show it), the operator's hooks in its environment. With `ordered`, the
/// minions depend on the masters (as Magnum's own minions do through the API address), so
/// Heat updates the masters' group first.
async fn one_image_stack(
    heat: &HeatClient,
    prefix: &str,
    (masters, minions): (u32, u32),
    secs: u32,
    ordered: bool,
) -> StackRef {
    let mut template: Value =
        serde_yaml_ng::from_str(&fixture("magnum/kubecluster.yaml")).expect("template YAML");
    template["resources"]["kube_masters"]["properties"]["resource_def"]["properties"]
        ["server_image"] = json!({"get_param": "minion_image"});
    // A parameter named `image` that no group reads, as an operator's stack may well have:
    // it must not make the stack pass for one of caldera's own node groups (was: a take-over
    // from Heat looked for their `nodes` group, HTTP 404).
    template["parameters"]["image"] = json!({"type": "string", "default": "unused"});
    if ordered {
        template["resources"]["kube_minions"]["depends_on"] = json!(["network", "kube_masters"]);
    }
    let files: BTreeMap<String, String> = MAGNUM_FILES
        .iter()
        .map(|(n, p)| {
            let text = fixture(p);
            let slow = format!(
                "  slow:\n    type: OS::Heat::TestResource\n    properties:\n      value: \
                 {{get_param: server_image}}\n      action_wait_secs: {{update: {secs}}}\n\n"
            );
            let text = match *n {
                "kubemaster.yaml" => {
                    text.replacen("  kube-master:\n", &format!("{slow}  kube-master:\n"), 1)
                }
                "kubeminion.yaml" => {
                    text.replacen("  kube-minion:\n", &format!("{slow}  kube-minion:\n"), 1)
                }
                _ => text,
            };
            (n.to_string(), text)
        })
        .collect();
    let create = StackCreate {
        name: unique(prefix),
        template,
        files,
        parameters: serde_json::from_value(
            json!({"number_of_masters": masters, "number_of_minions": minions}),
        )
        .expect("parameters"),
        environment: Some(operators_environment()),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(heat, &stack, "CREATE_COMPLETE").await;
    stack
}

/// The third choice for a group the change reaches: hold it too (`--also`). Refused with the
/// reason, nothing sent, for a group the change does not update, the target itself, or a
/// side of the target Heat's dependency order cannot keep (`--also-after` of the masters the
/// minions depend on); with
/// `--also kube_masters`, Heat's events show every master and minion updated once, never two
/// masters at once, every master before the first minion; no hook is left, and a plain
/// update afterwards holds no member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn also_holds_the_masters_one_at_a_time_before_the_minions() {
    use crate::support::scenarios::{assert_masters_one_at_a_time, stack_events};
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = one_image_stack(&heat, "also", (3, 2), 3, true).await;
    let target = format!("{}/kube_minions", stack.name);
    let (registry_before, _) = registry_and_parameters(&heat, &stack).await;
    let updated = heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .summary
        .updated_at;
    let start = |extra: &[&str]| caldera(&journal, &minion_rollout(&target, extra));
    // Without a word on the masters: refused, naming both ways, nothing sent.
    let (ok, out, err) = start(&[]);
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains("refused: kube_masters (OS::Heat::ResourceGroup) reads minion_image too")
            && out.contains("say --also kube_masters to hold it too"),
        "{out}\n{err}"
    );
    // A group the change does not update, and the target itself: refused with the reason.
    let (ok, out, err) = start(&["--also", "network"]);
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains("--also network: not a group this change updates")
            && out.contains("it would update: kube_masters"),
        "{out}\n{err}"
    );
    // Heat updates the masters first here (the minions depend on them): holding them until
    // the minions are done would wait for ever.
    let (ok, out, err) = start(&["--also-after", "kube_masters"]);
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains("--also-after kube_masters: Heat updates kube_masters before kube_minions"),
        "{out}\n{err}"
    );
    let (ok, out, err) = start(&["--also", "kube_minions"]);
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains("--also kube_minions: that is the rollout's target"),
        "{out}\n{err}"
    );
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.updated_at, updated, "nothing sent");

    let masters_stack = group_stack_of(&heat, &stack, "kube_masters")
        .await
        .expect("rg");
    let minions_stack = group_stack_of(&heat, &stack, "kube_minions")
        .await
        .expect("rg");
    let mark = |events: Vec<caldera::model::StackEvent>| events.last().map(|e| e.id.clone());
    let m_mark = mark(stack_events(&heat, &masters_stack, None).await);
    let w_mark = mark(stack_events(&heat, &minions_stack, None).await);
    // Each node's post-node hook is given its address, the held masters' too (Magnum's
    // `kube_master_ip`, another output than the minions' `kube_minion_ip`).
    let held = minion_rollout(&target, &["--also", "kube_masters", "--gate-secs", "1"]);
    let (ok, out, err, mut hooks) =
        real_heat_client::caldera_with_address_hook(dir.path(), &journal, &held);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains(
            "group kube_masters (3 member(s): 0, 1, 2): held by caldera, one at a time, before \
             kube_minions"
        ) && out.contains("held by caldera (--also), one at a time, before the target")
            && out.contains("hooks: taken out"),
        "{out}\n{err}"
    );
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let names = |n: u32| (0..n).map(|i| i.to_string()).collect::<Vec<_>>();
    assert_masters_one_at_a_time(
        (
            &names(3),
            &stack_events(&heat, &masters_stack, m_mark.as_deref()).await,
        ),
        (
            &names(2),
            &stack_events(&heat, &minions_stack, w_mark.as_deref()).await,
        ),
        true,
    );
    let (registry_after, _) = registry_and_parameters(&heat, &stack).await;
    assert_eq!(
        without_empty(&registry_after),
        without_empty(&registry_before),
        "the resource registry, entries that declare nothing aside: {registry_after}"
    );
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &target]);
    assert!(
        ok && out.contains("completed")
            && out.contains("new 5/5")
            && out.contains("  kube_masters: new 3/3")
            && out.contains("  kube_minions (target): new 2/2"),
        "{out}\n{err}"
    );
    hooks.sort();
    let mut want = Vec::new();
    for (output, path) in [
        ("kube_masters_private", "kube_masters/"),
        ("kube_minions_private", ""),
    ] {
        let ips = heat.show_output(&stack, output).await.expect(output).value;
        let ips = ips.as_array().cloned().unwrap_or_default();
        for (i, ip) in ips.iter().enumerate() {
            want.push(format!("{path}{i} {}", ip.as_str().unwrap_or_default()));
        }
    }
    want.sort();
    assert_eq!(hooks, want, "post-node hooks' member and address");
    no_held_group_tag_left(&heat, &stack).await;
    plain_update_runs_unheld(&heat, &stack, "fcos-42").await;
    delete_settled(&heat, &stack).await;
}

/// The same held rollout whose driver is killed (`kill -9`) after the second master was
/// released, then taken over by `caldera rollout resume`: the journal's plan names the held
/// group, the status counts its members, and Heat's events still show every member updated
/// once, never two masters at once, masters before minions, no hook left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn also_held_masters_survive_a_killed_driver_and_a_resume() {
    killed_held_rollout_resumed("also-kill", false).await;
}

/// The same, taken over from another machine: its journal has never heard of the rollout,
/// so the held group is known only from Heat (the stack's environment holds its members on
/// `pre-update`). The take-over must hold and release it too, one master at a time: a plan
/// of the target alone would leave the last master held forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn also_held_masters_are_taken_over_from_another_machine() {
    killed_held_rollout_resumed("also-away", true).await;
}

/// A rollout of `kube_minions` holding `kube_masters` (`--also`), its driver killed after
/// master 1 was released, then resumed by a caldera with this journal, or (`elsewhere`) with
/// an empty journal of its own, as on another machine.
async fn killed_held_rollout_resumed(name: &str, elsewhere: bool) {
    use crate::support::scenarios::{assert_masters_one_at_a_time, stack_events};
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = one_image_stack(&heat, name, (3, 2), 3, false).await;
    let target = format!("{}/kube_minions", stack.name);
    // The operator's own hook at the very path the rollout holds the masters on
    // (`kube_masters/*`): in the environment it looks like the rollout's, so a take-over
    // from Heat alone knows it only from the start's `caldera-before` tag. A `pre-create`
    // holds nothing here (no master is created), and no delete.
    let operators = StackUpdate {
        environment: Some(json!({"resource_registry": {"resources": {
            "kube_masters": {"*": {"hooks": ["pre-create"]}}}}})),
        existing: true,
        ..StackUpdate::default()
    };
    heat.update_stack(&stack, &operators)
        .await
        .expect("the operator's hook");
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let masters_stack = group_stack_of(&heat, &stack, "kube_masters")
        .await
        .expect("rg");
    let minions_stack = group_stack_of(&heat, &stack, "kube_minions")
        .await
        .expect("rg");
    let mark = |events: Vec<caldera::model::StackEvent>| events.last().map(|e| e.id.clone());
    let m_mark = mark(stack_events(&heat, &masters_stack, None).await);
    let w_mark = mark(stack_events(&heat, &minions_stack, None).await);
    let mut driving = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args(["--heat-url", &heat_url()])
        .args([
            "rollout",
            "start",
            &target,
            "--set",
            "minion_image=fcos-41",
            "--yes",
        ])
        .args([
            "--also",
            "kube_masters",
            "--gate-secs",
            "1",
            "--poll-secs",
            "0.5",
        ])
        .env("CALDERA_JOURNAL", &journal)
        .env_remove("CALDERA_ACTIONS_CONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the driver starts");
    let released = |key: &str| {
        Journal::open(&journal)
            .read_all()
            .unwrap_or_default()
            .iter()
            .any(|e| {
                e.action == "rollout.release"
                    && e.outcome == Outcome::Ok
                    && e.target.ends_with(&format!("/kube_masters/{key}"))
            })
    };
    let t0 = Instant::now();
    while !released("1") {
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "master 1 never released"
        );
        assert!(
            driving.try_wait().expect("try_wait").is_none(),
            "the driver ended early"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    driving.kill().expect("kill -9");
    driving.wait().expect("reaped");
    // Heat keeps the start's options in its tag, for a take-over from Heat alone.
    let tags = heat.get_stack(&stack, false).await.expect("stack").tags;
    let options = caldera::rollout::RolloutOptions::from_tags(&tags).expect("options tag");
    assert_eq!(options.gate_wait_ms, 1000, "{tags:?}");
    // Another machine: a journal, and so driver locks, of its own.
    let away = tempfile::tempdir().unwrap();
    let journal = match elsewhere {
        true => away.path().join("journal.jsonl"),
        false => journal,
    };
    // Nobody drives: the status reads the held group from the journal's plan (elsewhere:
    // from the stack's environment) and Heat.
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &target]);
    assert!(
        ok && out.contains("kube_masters/2") && out.contains("/5"),
        "{out}\n{err}"
    );
    // Named by what it sets, from another machine too: the keys from the start's tag, the
    // values from Heat's parameters (was: "an update started elsewhere").
    assert!(
        out.contains("minion_image=fcos-41") && !out.contains("started elsewhere"),
        "{out}\n{err}"
    );
    // The held group's look is that same rollout, each member counted once (was: a plan of
    // its own with the masters as target and held too, or `resources/nodes: HTTP 404` from
    // another machine, the stack having an `image` parameter).
    let masters = format!("{}/kube_masters", stack.name);
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &masters]);
    assert!(
        ok && out.contains(&format!("of {target}"))
            && out.contains("/5")
            && !out.contains("/8")
            && out.contains("kube_masters: new ")
            && out.contains("kube_minions (target): new 0/2"),
        "{out}\n{err}"
    );
    // And `nodegroups STACK` gives each group its own members' count (master 1 may still
    // be updating or new by now).
    let (ok, out, err) = caldera(&journal, &["nodegroups", &stack.name]);
    let row = |group: &str| {
        out.lines()
            .find(|l| l.starts_with(group))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        ok && row("kube_masters").contains("/3 ") && row("kube_minions").contains("new 0/2 "),
        "{out}\n{err}"
    );
    let hooks = heat.get_environment_hooks(&stack).await.expect("env");
    assert!(
        hooks.matches(&["kube_masters", "2"], "pre-update"),
        "the masters stay held while nobody drives: {hooks:?}"
    );
    // From another machine's journal (here: another state directory under this host's
    // name, the marker's), Heat shows masters released that this journal never released:
    // the resume asks, as it does for a rollout started on another host.
    let mut args = vec!["rollout", "resume", target.as_str(), "--poll-secs", "0.5"];
    if elsewhere {
        args.push("--yes");
    }
    let (ok, out, err) = caldera(&journal, &args);
    assert!(ok && out.contains("hooks: taken out"), "{out}\n{err}");
    assert_eq!(
        out.contains("released by a driver this machine's journal does not know"),
        elsewhere,
        "{out}\n{err}"
    );
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let names = |n: u32| (0..n).map(|i| i.to_string()).collect::<Vec<_>>();
    assert_masters_one_at_a_time(
        (
            &names(3),
            &stack_events(&heat, &masters_stack, m_mark.as_deref()).await,
        ),
        (
            &names(2),
            &stack_events(&heat, &minions_stack, w_mark.as_deref()).await,
        ),
        true,
    );
    let hooks = heat.get_environment_hooks(&stack).await.expect("env");
    assert!(hooks.paths_with("pre-update").is_empty(), "{hooks:?}");
    assert_eq!(
        hooks.hooks_at(&["kube_masters", "*"]),
        Some(&["pre-create".to_string()][..]),
        "the operator's own hook at the held path stays: {hooks:?}"
    );
    no_held_group_tag_left(&heat, &stack).await;
    // The machine that finished it finds it in its own journal afterwards.
    let (ok, out, err) = caldera(&journal, &["rollout", "status", &target]);
    assert!(ok && out.contains(": completed"), "{out}\n{err}");
    delete_settled(&heat, &stack).await;
}

/// The end's PATCH took the rollout's held-group tags out with its hooks (the stack has no
/// tag of its own here: Heat keeps at least one, so the marker alone may stay).
async fn no_held_group_tag_left(heat: &HeatClient, stack: &StackRef) {
    let tags = heat.get_stack(stack, false).await.expect("stack").tags;
    assert!(
        caldera::rollout::plan::held_in(&tags).is_empty()
            && caldera::rollout::RolloutOptions::from_tags(&tags).is_none(),
        "held-group or options tags left: {tags:?}"
    );
}

/// An AutoScalingGroup's members are updated in Heat's own order, several times each: a
/// rollout refuses with the reason, and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_rollout_of_an_autoscaling_group_is_refused_with_the_reason() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let mut template: Value = serde_yaml_ng::from_str(&fixture("asg.yaml")).expect("template");
    template["parameters"] = json!({"member_image": {"type": "string", "default": "v1"}});
    template["resources"]["pool"]["properties"]["resource"]["properties"] =
        json!({"image": {"get_param": "member_image"}});
    let mut member: Value = serde_yaml_ng::from_str(&fixture("asg_member.yaml")).expect("member");
    member["parameters"]["image"] = json!({"type": "string", "default": "v0"});
    let create = StackCreate {
        name: unique("asg-roll"),
        template,
        files: [(
            "asg_member.yaml".to_string(),
            serde_json::to_string(&member).expect("member JSON"),
        )]
        .into(),
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("create");
    wait_status(&heat, &stack, "CREATE_COMPLETE").await;
    let updated = heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .summary
        .updated_at;
    let target = format!("{}/pool", stack.name);
    let (ok, out, err) = caldera(
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "member_image=v2",
            "--yes",
        ],
    );
    assert!(!ok, "{out}\n{err}");
    assert!(
        out.contains("refused: pool is an OS::Heat::AutoScalingGroup"),
        "{out}\n{err}"
    );
    let d = heat.get_stack(&stack, false).await.expect("stack");
    assert_eq!(d.summary.updated_at, updated, "nothing sent");
    delete_settled(&heat, &stack).await;
}

/// Chosen members of a group that is not caldera's own, through the parameter its
/// `removal_policies` read (Magnum's `minions_to_remove`): the plan names the members
/// removed and added and the exact call; Heat removes exactly those.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn chosen_members_of_any_group_are_removed_through_its_removal_policies() {
    let heat = heat().await;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let stack = magnum_stack(&heat, "remove", 3).await;
    let target = format!("{}/kube_minions", stack.name);
    let (ok, out, err) = caldera(&journal, &["scale", &target, "--remove", "1", "--yes"]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("members: 3 -> 2")
            && out.contains("removed: 1")
            && out.contains("call: PATCH")
            && out.contains("minions_to_remove"),
        "{out}"
    );
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let members = caldera::drivers::any_group::group_members(&heat, &stack, "kube_minions")
        .await
        .expect("members");
    assert_eq!(members, ["0", "2"]);
    // Removed and added at once: the new member takes a name Heat has not used.
    let (ok, out, err) = caldera(
        &journal,
        &["scale", &target, "--count", "2", "--remove", "0", "--yes"],
    );
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("removed: 0") && out.contains("added: 1 member(s)"),
        "{out}"
    );
    wait_status(&heat, &stack, "UPDATE_COMPLETE").await;
    let members = caldera::drivers::any_group::group_members(&heat, &stack, "kube_minions")
        .await
        .expect("members");
    assert_eq!(members.len(), 2, "{members:?}");
    assert!(
        !members.iter().any(|m| m == "0" || m == "1"),
        "removed names are never reused: {members:?}"
    );
    // A member that is not there is refused, and nothing is sent.
    let (ok, out, err) = caldera(&journal, &["scale", &target, "--remove", "9", "--yes"]);
    assert!(!ok && out.contains("has no member 9"), "{out}\n{err}");
    delete_settled(&heat, &stack).await;
}
