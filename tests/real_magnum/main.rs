//! caldera against a REAL OpenStack Magnum (22.0.0: API and conductor), the real Heat and the
//! real Keystone in front of both, on 127.0.0.1.
//!
//! `scripts/real-magnum-suite.sh` installs and starts all three (scripts/keystone-standalone.sh,
//! scripts/magnum-standalone.sh) and runs these with `--ignored`; a plain `cargo test` skips
//! them. They read KEYSTONE_URL and MAGNUM_URL (and the fixture passwords) from the
//! environment.
//!
//! Each case makes its own cluster template and cluster through Magnum's API with the
//! operator's token (what `openstack coe cluster create` does). Magnum's conductor turns it
//! into a Heat stack with Magnum's layout (scripts/magnum_test_driver: the cluster stack
//! holds the `kube_masters` and `kube_minions` ResourceGroups, nodes are
//! OS::Heat::TestResource, no servers). Then the real `caldera` binary goes the operator's
//! way: clouds.yaml -> Keystone -> catalog -> Magnum (container-infra) and Heat, and what it
//! says is checked against Magnum's and Heat's own answers.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The shared test support (tests/support/), the parts this binary uses.
#[path = "../support"]
mod support {
    // The console binary's pty driver; these cases use only part of it.
    #[allow(dead_code)]
    pub mod pty;
    // Shared with the real_keystone binary, whose cases use the rest of it.
    #[allow(dead_code)]
    pub mod real_keystone_env;
}

use support::pty;
use support::real_keystone_env;

use real_keystone_env::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long Magnum may take to create or resize a test cluster (seconds of Heat work, but the
/// machine may be busy).
const CLUSTER_WAIT: Duration = Duration::from_secs(180);

fn magnum_url() -> String {
    std::env::var("MAGNUM_URL")
        .expect("MAGNUM_URL must point at a real Magnum (scripts/real-magnum-suite.sh starts one)")
        .trim_end_matches('/')
        .to_string()
}

/// Magnum's own secrets (scripts/magnum-standalone.sh's defaults): never in caldera's output.
fn magnum_secrets() -> Vec<String> {
    vec![
        env_or("MAGNUM_SERVICE_PASSWORD", "caldera-magnum-Secret-4b9"),
        env_or(
            "MAGNUM_DOMAIN_ADMIN_PASSWORD",
            "caldera-magnum-domain-Secret-7a3",
        ),
    ]
}

/// A cluster template for the test driver (the stand-in Glance/Nova/Neutron of
/// scripts/magnum_standalone.py know these names); returns its uuid.
async fn create_template(op: &Session, name: &str) -> String {
    create_template_with(op, name, json!({})).await
}

/// [`create_template`] with Magnum labels (the test driver reads
/// `caldera_node_create_seconds`: how long each node takes to "boot").
async fn create_template_with(op: &Session, name: &str, labels: Value) -> String {
    let out = op
        .call(
            Method::POST,
            &format!("{}/clustertemplates", magnum_url()),
            Some(json!({
                "name": name,
                "coe": "kubernetes",
                "server_type": "vm",
                "image_id": "fedora-coreos-caldera",
                "keypair_id": "caldera-key",
                "external_network_id": "public",
                "master_flavor_id": "m1.small",
                "flavor_id": "m1.small",
                "network_driver": "flannel",
                "labels": labels,
            })),
        )
        .await;
    out["uuid"].as_str().expect("template uuid").into()
}

async fn create_cluster(op: &Session, name: &str, template: &str, workers: u32) -> String {
    let out = op
        .call(
            Method::POST,
            &format!("{}/clusters", magnum_url()),
            Some(json!({
                "name": name,
                "cluster_template_id": template,
                "master_count": 1,
                "node_count": workers,
                "create_timeout": 10,
            })),
        )
        .await;
    out["uuid"].as_str().expect("cluster uuid").into()
}

async fn get_cluster(op: &Session, id: &str) -> Value {
    op.call(
        Method::GET,
        &format!("{}/clusters/{id}", magnum_url()),
        None,
    )
    .await
}

/// GET the cluster, or `None` while Magnum cannot show it yet: right after the create,
/// before its node groups exist, Magnum 22 computes master_count 0 and its own API type
/// refuses that (400 "Invalid input for field/attribute master_count. Value: '0'").
async fn try_get_cluster(op: &Session, id: &str) -> Option<Value> {
    let resp = reqwest::Client::new()
        .get(format!("{}/clusters/{id}", magnum_url()))
        .header("X-Auth-Token", op.token())
        .send()
        .await
        .expect("Magnum answers");
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    match status {
        200 => Some(serde_json::from_str(&text).expect("cluster json")),
        400 if text.contains("master_count") => None,
        // An expired token: Session::call logs in again.
        401 => Some(get_cluster(op, id).await),
        _ => panic!("GET cluster {id}: {status}: {text}"),
    }
}

/// Waits (bounded) until the cluster's status is one of `done` and returns it (a status
/// that is neither `done` nor IN_PROGRESS ends the wait too, for the caller to report).
async fn wait_cluster(op: &Session, id: &str, done: &[&str]) -> Value {
    let started = Instant::now();
    let mut last = Value::Null;
    loop {
        if let Some(c) = try_get_cluster(op, id).await {
            let status = c["status"].as_str().unwrap_or("").to_string();
            if done.contains(&status.as_str()) || status.ends_with("FAILED") {
                return c;
            }
            last = c;
        }
        assert!(
            started.elapsed() < CLUSTER_WAIT,
            "cluster {id} not {done:?} after {CLUSTER_WAIT:?}: {last}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// A template and a cluster of 1 master + `workers` workers, CREATE_COMPLETE.
async fn ready_cluster(op: &Session, prefix: &str, workers: u32) -> (String, Value) {
    let template = create_template(op, &unique(&format!("{prefix}-tpl"))).await;
    let name = unique(prefix);
    let id = create_cluster(op, &name, &template, workers).await;
    let c = wait_cluster(op, &id, &["CREATE_COMPLETE"]).await;
    assert_eq!(
        c["status"], "CREATE_COMPLETE",
        "Magnum created the cluster: {c}"
    );
    (name, c)
}

/// Heat's `stack show` of a stack, through the operator's token.
async fn stack_show(op: &Session, stack_id: &str) -> Value {
    // GET /stacks/{id} answers with a redirect to /stacks/{name}/{id}; reqwest follows it.
    op.call(
        Method::GET,
        &format!("{}/stacks/{stack_id}", op.heat_url()),
        None,
    )
    .await["stack"]
        .clone()
}

/// Waits (bounded) until Heat's status of the stack satisfies `done`, and returns it.
async fn wait_stack(op: &Session, stack_id: &str, done: impl Fn(&str) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let s = stack_show(op, stack_id).await;
        if done(s["stack_status"].as_str().unwrap_or("")) {
            return s;
        }
        assert!(
            started.elapsed() < CLUSTER_WAIT,
            "stack {stack_id} still {} after {CLUSTER_WAIT:?}",
            s["stack_status"]
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The outputs of a Heat stack by key, through the operator's token.
async fn stack_outputs(op: &Session, stack_id: &str) -> serde_json::Map<String, Value> {
    // GET /stacks/{id} answers with a redirect to /stacks/{name}/{id}; reqwest follows it.
    let out = op
        .call(
            Method::GET,
            &format!("{}/stacks/{stack_id}", op.heat_url()),
            None,
        )
        .await;
    out["stack"]["outputs"]
        .as_array()
        .expect("stack outputs")
        .iter()
        .filter_map(|o| {
            Some((
                o["output_key"].as_str()?.to_string(),
                o["output_value"].clone(),
            ))
        })
        .collect()
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list: {v}"))
        .iter()
        .map(|s| s.as_str().expect("a string").to_string())
        .collect()
}

/// Every address `caldera ips --format json` printed.
fn ips_of(stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .flat_map(|l| {
            let row: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("json row {l:?}: {e}"));
            strings(&row["addresses"])
        })
        .collect()
}

/// The rows of a `--format json` listing.
fn rows(stdout: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(stdout.trim())
        .or_else(|_| {
            stdout
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(serde_json::from_str)
                .collect::<Result<Vec<Value>, _>>()
                .map(Value::Array)
        })
        .unwrap_or_else(|e| panic!("json listing: {e}: {stdout}"));
    match v {
        Value::Array(rows) => rows,
        other => vec![other],
    }
}

fn field(row: &Value, key: &str) -> String {
    match &row[key] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn operator_dir() -> Dir {
    let dir = Dir::new();
    dir.write("clouds.yaml", &clouds(&[operator_cloud("magnum")]));
    dir
}

async fn caldera(dir: &Dir, args: &[&str]) -> Run {
    let mut all = vec!["--cloud", "magnum"];
    all.extend_from_slice(args);
    let r = dir.caldera(&all, &magnum_secrets()).await;
    assert!(r.ok, "caldera {args:?} failed: {}\n{}", r.stderr, r.stdout);
    r
}

fn magnum_port() -> String {
    let url = magnum_url();
    let rest = url.trim_start_matches("http://");
    rest[..rest.find('/').unwrap_or(rest.len())].to_string()
}

// ---------------------------------------------------------------- the cases

/// `clusters`, `nodegroups` and `ips` on a cluster Magnum made: what caldera reads through
/// the catalog is what Magnum and Heat say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Magnum: run scripts/real-magnum-suite.sh"]
async fn clusters_nodegroups_and_ips_match_magnum_and_heat() {
    let op = Session::operator().await;
    let (name, c) = ready_cluster(&op, "mg-list", 2).await;
    let id = c["uuid"].as_str().expect("uuid").to_string();
    let stack_id = c["stack_id"].as_str().expect("stack_id").to_string();
    let dir = operator_dir();

    // clusters: found through the catalog's container-infra endpoint.
    let r = caldera(&dir, &["clusters", "--format", "json"]).await;
    let listed = rows(&r.stdout);
    let row = listed
        .iter()
        .find(|row| field(row, "name") == name)
        .unwrap_or_else(|| panic!("{name} listed: {}", r.stdout));
    assert_eq!(field(row, "id"), id, "{row}");
    assert_eq!(field(row, "status"), "CREATE_COMPLETE", "{row}");
    assert_eq!(field(row, "masters"), "1", "{row}");
    assert_eq!(field(row, "workers"), "2", "{row}");
    assert!(
        r.log.contains(&magnum_port()),
        "caldera asked the Magnum of the catalog ({}): {}",
        magnum_port(),
        r.log
    );

    // nodegroups: Magnum's two default groups, both in the cluster stack.
    let r = caldera(&dir, &["nodegroups", &name, "--format", "json"]).await;
    let groups = rows(&r.stdout);
    let mut names: Vec<String> = groups.iter().map(|g| field(g, "name")).collect();
    names.sort();
    assert_eq!(names, ["default-master", "default-worker"], "{}", r.stdout);
    for g in &groups {
        assert_eq!(field(g, "stack_id"), stack_id, "{g}");
        assert_eq!(field(g, "status"), "CREATE_COMPLETE", "{g}");
        let (role, nodes) = if field(g, "name") == "default-master" {
            ("master", "1")
        } else {
            ("worker", "2")
        };
        assert_eq!(field(g, "role"), role, "{g}");
        assert_eq!(field(g, "nodes"), nodes, "{g}");
    }

    // ips: exactly the members' addresses, as Heat's outputs of the cluster stack give them.
    let outputs = stack_outputs(&op, &stack_id).await;
    let minions_private = strings(&outputs["kube_minions_private"]);
    let minions_public = strings(&outputs["kube_minions"]);
    let masters_private = strings(&outputs["kube_masters_private"]);
    assert_eq!(minions_private.len(), 2, "{outputs:?}");
    assert_eq!(
        minions_public,
        strings(&c["node_addresses"]),
        "Heat's kube_minions is Magnum's node_addresses"
    );

    // A node's every address: its private one and its floating one (Magnum's template
    // gives each member both outputs, `kube_minion_ip` and `kube_minion_external_ip`).
    let worker = format!("{name}/default-worker");
    let r = caldera(&dir, &["ips", &worker, "--format", "json"]).await;
    let got = ips_of(&r.stdout);
    let both: BTreeSet<String> = minions_private.union(&minions_public).cloned().collect();
    assert_eq!(got.len(), 4, "two addresses per worker: {}", r.stdout);
    assert_eq!(
        got, both,
        "caldera's worker addresses are Heat's kube_minions_private {minions_private:?} and \
         kube_minions {minions_public:?}"
    );
    assert!(r.stderr.contains("2/2 addresses, 0 failed"), "{}", r.stderr);

    let master = format!("{name}/default-master");
    let r = caldera(&dir, &["ips", &master, "--format", "json"]).await;
    let got = ips_of(&r.stdout);
    let masters_public = strings(&outputs["kube_masters"]);
    let both: BTreeSet<String> = masters_private.union(&masters_public).cloned().collect();
    assert_eq!(
        got, both,
        "caldera's master addresses are Heat's kube_masters_private {masters_private:?} and \
         kube_masters {masters_public:?}"
    );
    assert_eq!(got.len(), 2, "{}", r.stdout);
}

/// `scale CLUSTER/default-worker --count 3 --yes` goes through Magnum's resize: Magnum's
/// node_count becomes 3 and Heat's kube_minions group gets a third member, which caldera then
/// lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Magnum: run scripts/real-magnum-suite.sh"]
async fn scale_workers_goes_through_magnum_resize() {
    let op = Session::operator().await;
    let (name, c) = ready_cluster(&op, "mg-scale", 2).await;
    let id = c["uuid"].as_str().expect("uuid").to_string();
    let stack_id = c["stack_id"].as_str().expect("stack_id").to_string();
    let dir = operator_dir();

    let worker = format!("{name}/default-worker");
    let r = caldera(&dir, &["scale", &worker, "--count", "3", "--yes"]).await;
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("from 2 to 3 nodes") && said.contains("/actions/resize"),
        "the plan is a Magnum resize: {said}"
    );
    assert!(
        said.contains("add    1: picked by Magnum"),
        "the plan counts the worker Magnum adds: {said}"
    );
    assert!(
        r.log.contains("/actions/resize"),
        "caldera POSTed Magnum's resize: {}",
        r.log
    );

    let c = wait_cluster(&op, &id, &["UPDATE_COMPLETE"]).await;
    assert_eq!(c["status"], "UPDATE_COMPLETE", "Magnum resized: {c}");
    assert_eq!(c["node_count"], 3, "{c}");
    assert_eq!(c["master_count"], 1, "{c}");
    assert_eq!(c["stack_id"], stack_id.as_str(), "same cluster stack: {c}");

    let outputs = stack_outputs(&op, &stack_id).await;
    let minions_private = strings(&outputs["kube_minions_private"]);
    let minions_public = strings(&outputs["kube_minions"]);
    assert_eq!(minions_public.len(), 3, "Heat's kube_minions: {outputs:?}");
    assert_eq!(minions_public, strings(&c["node_addresses"]));
    assert_eq!(
        strings(&outputs["kube_masters"]).len(),
        1,
        "the masters are untouched: {outputs:?}"
    );

    // caldera sees the third worker too.
    let r = caldera(&dir, &["nodegroups", &name, "--format", "json"]).await;
    let groups = rows(&r.stdout);
    let w = groups
        .iter()
        .find(|g| field(g, "name") == "default-worker")
        .unwrap_or_else(|| panic!("default-worker: {}", r.stdout));
    assert_eq!(field(w, "nodes"), "3", "{w}");
    let r = caldera(&dir, &["ips", &worker, "--format", "json"]).await;
    let got = ips_of(&r.stdout);
    let both: BTreeSet<String> = minions_private.union(&minions_public).cloned().collect();
    assert_eq!(
        got, both,
        "caldera's worker addresses after the resize are Heat's {minions_private:?} and \
         {minions_public:?}"
    );
    assert_eq!(got.len(), 6, "{}", r.stdout);
}

/// A caldera rollout of the workers of a Magnum cluster's stack leaves nothing behind: its
/// `pre-update` hooks are taken out of the stack's environment when it completes, so
/// Magnum's next resize of the cluster (an update of the same stack) completes instead of
/// holding every worker on a hook forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Magnum: run scripts/real-magnum-suite.sh"]
async fn a_resize_after_a_caldera_rollout_of_the_cluster_stack_completes() {
    let op = Session::operator().await;
    let (name, c) = ready_cluster(&op, "mg-after", 2).await;
    let id = c["uuid"].as_str().expect("uuid").to_string();
    let stack_id = c["stack_id"].as_str().expect("stack_id").to_string();
    let stack_name = stack_show(&op, &stack_id).await["stack_name"]
        .as_str()
        .expect("stack name")
        .to_string();
    let dir = operator_dir();
    let group = format!("{stack_name}/kube_minions");
    let r = caldera(
        &dir,
        &[
            "rollout",
            "start",
            &group,
            "--set",
            "minion_image=fcos-next",
            "--allow-magnum-owned",
            "--yes",
            "--poll-secs",
            "0.5",
        ],
    )
    .await;
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(said.contains("hooks: taken out"), "{said}");
    let s = wait_stack(&op, &stack_id, |s| !s.ends_with("IN_PROGRESS")).await;
    assert_eq!(s["stack_status"], "UPDATE_COMPLETE", "{s}");

    // Magnum's resize: an update of the same stack, which leftover hooks would hold forever.
    let worker = format!("{name}/default-worker");
    caldera(&dir, &["scale", &worker, "--count", "3", "--yes"]).await;
    let c = wait_cluster(&op, &id, &["UPDATE_COMPLETE", "UPDATE_FAILED"]).await;
    assert_eq!(c["status"], "UPDATE_COMPLETE", "Magnum resized: {c}");
    assert_eq!(c["node_count"], 3, "{c}");
}

/// Magnum 22 refuses to upgrade a cluster of its Heat driver; `rollout start --template`
/// passes Magnum's own reason on, fails, and the cluster keeps its template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Magnum: run scripts/real-magnum-suite.sh"]
async fn upgrade_refusal_of_the_heat_driver_is_said_clearly() {
    let op = Session::operator().await;
    let (name, c) = ready_cluster(&op, "mg-upgrade", 1).await;
    let id = c["uuid"].as_str().expect("uuid").to_string();
    let newer = unique("mg-upgrade-next");
    create_template(&op, &newer).await;
    let dir = operator_dir();

    let worker = format!("{name}/default-worker");
    let r = dir
        .caldera(
            &[
                "--cloud",
                "magnum",
                "rollout",
                "start",
                &worker,
                "--template",
                &newer,
                "--yes",
            ],
            &magnum_secrets(),
        )
        .await;
    assert!(
        !r.ok,
        "Magnum refuses the upgrade: {}\n{}",
        r.stdout, r.stderr
    );
    assert!(
        r.log.contains("/actions/upgrade"),
        "caldera asked Magnum: {}",
        r.log
    );
    assert!(
        r.stderr
            .contains("Upgrading a cluster that uses the Magnum Heat driver is not supported"),
        "Magnum's reason reaches the operator: {}",
        r.stderr
    );
    assert!(r.stderr.contains("400"), "{}", r.stderr);

    let after = get_cluster(&op, &id).await;
    assert_eq!(after["status"], "CREATE_COMPLETE", "{after}");
    assert_eq!(
        after["cluster_template_id"], c["cluster_template_id"],
        "the cluster keeps its template: {after}"
    );
}

/// A cancel on the stack of a Magnum cluster, on the real services. Magnum's conductor tracks
/// the update it started; caldera refuses to cancel it behind Magnum unless told to, and when
/// told to, Heat rolls back and Magnum learns of it from Heat. What Magnum then says is
/// printed: that is what an operator who overrides gets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Magnum: run scripts/real-magnum-suite.sh"]
async fn a_cancel_behind_magnum_is_refused_unless_the_operator_says_so() {
    let op = Session::operator().await;
    // Each node takes 60 s to "boot": the resize's update stays in progress through the CLI's
    // refusals and the console's way to the cancel (about 40 s on a busy machine).
    let template = create_template_with(
        &op,
        &unique("mg-cancel-tpl"),
        json!({"caldera_node_create_seconds": "60"}),
    )
    .await;
    let name = unique("mg-cancel");
    let id = create_cluster(&op, &name, &template, 1).await;
    let c = wait_cluster(&op, &id, &["CREATE_COMPLETE"]).await;
    assert_eq!(c["status"], "CREATE_COMPLETE", "{c}");
    let stack_id = c["stack_id"].as_str().expect("stack_id").to_string();
    let stack_name = stack_show(&op, &stack_id).await["stack_name"]
        .as_str()
        .expect("stack_name")
        .to_string();
    let dir = operator_dir();

    // Settled: refused for its status, and Magnum's parameter is named too.
    let r = dir
        .caldera(
            &["--cloud", "magnum", "heat", "cancel", &stack_name, "--yes"],
            &magnum_secrets(),
        )
        .await;
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(!r.ok, "nothing to cancel: {said}");
    assert!(
        said.contains("Heat cancels only an update in progress"),
        "{said}"
    );
    assert!(said.contains("belongs to a Magnum cluster"), "{said}");

    // Magnum's resize: the stack goes UPDATE_IN_PROGRESS for ~60 s.
    caldera(
        &dir,
        &[
            "scale",
            &format!("{name}/default-worker"),
            "--count",
            "2",
            "--yes",
            "--no-wait",
        ],
    )
    .await;
    wait_stack(&op, &stack_id, |s| s == "UPDATE_IN_PROGRESS").await;

    let r = dir
        .caldera(
            &["--cloud", "magnum", "heat", "cancel", &stack_name, "--yes"],
            &magnum_secrets(),
        )
        .await;
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(!r.ok, "refused without the operator's word: {said}");
    assert!(
        said.contains("belongs to a Magnum cluster") && said.contains("is_cluster_stack"),
        "the refusal names Magnum's parameter: {said}"
    );
    assert!(!r.log.contains("/actions"), "nothing sent: {}", r.log);
    let s = stack_show(&op, &stack_id).await;
    assert_eq!(s["stack_status"], "UPDATE_IN_PROGRESS", "untouched: {s}");

    // The CLI's override plans the call; without --yes and a terminal it stops there.
    let r = dir
        .caldera(
            &[
                "--cloud",
                "magnum",
                "heat",
                "cancel",
                &stack_name,
                "--allow-magnum-owned",
            ],
            &magnum_secrets(),
        )
        .await;
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(!r.ok, "no --yes, no terminal: {said}");
    assert!(
        said.contains("{\"cancel_update\":null}") && said.contains("give --yes"),
        "the plan shows the call, then asks for --yes: {said}"
    );
    assert!(!r.log.contains("/actions"), "nothing sent: {}", r.log);

    // The console's way: `C` on the stack is refused, typing its name plans it with the
    // override, `y` sends it.
    let yaml = clouds(&[operator_cloud("magnum")]);
    let name_typed = stack_name.clone();
    let journal_path = dir.path().join("console-journal.jsonl");
    let journal_at = journal_path.clone();
    let console = tokio::task::spawn_blocking(move || {
        cancel_from_the_console(&yaml, &name_typed, &journal_at)
    })
    .await
    .expect("console thread");
    let entries = caldera::journal::Journal::open(&journal_path)
        .read_all()
        .expect("the console's journal");
    let seen: Vec<(&str, &str, String)> = entries
        .iter()
        .map(|e| {
            let o = match e.outcome {
                caldera::journal::Outcome::Started => "started",
                caldera::journal::Outcome::Ok => "ok",
                _ => "other",
            };
            (e.action.as_str(), o, e.target.clone())
        })
        .collect();
    assert!(
        matches!(&seen[..], [("heat.cancel", "started", t), ("heat.cancel", "ok", _)] if t.contains(&stack_name)),
        "journaled before the call, then Heat's acceptance: {seen:?}"
    );
    for secret in magnum_secrets() {
        assert!(!console.screen.contains(&secret), "a secret on the screen");
        assert!(!console.log.contains(&secret), "a secret in the log");
    }

    // Heat rolls back; a cancel that lands while a resource is mid-update can leave the
    // rollback failed (`Resource UPDATE failed: resources.secgroup_kube_minion: Stack UPDATE
    // cancelled`, seen in CI), as on any stack: both are Heat's answer to the cancel.
    let s = wait_stack(&op, &stack_id, |s| !s.ends_with("IN_PROGRESS")).await;
    let rolled = s["stack_status"].as_str().unwrap_or_default().to_string();
    assert!(
        rolled == "ROLLBACK_COMPLETE" || rolled == "ROLLBACK_FAILED",
        "Heat rolled the resize back: {s}"
    );
    let c = wait_cluster(
        &op,
        &id,
        &["ROLLBACK_COMPLETE", "UPDATE_COMPLETE", "UPDATE_FAILED"],
    )
    .await;
    println!(
        "after the override Heat says {rolled}; Magnum says: status {} node_count {} reason {}",
        c["status"], c["node_count"], c["status_reason"]
    );
    // Measured on Magnum 22: its poller takes Heat's rollback as the cluster's end state,
    // never a resize done; after a clean rollback it says ROLLBACK_COMPLETE and puts the
    // node count back.
    assert!(
        c["status"] != "UPDATE_COMPLETE" && c["status"] != "UPDATE_IN_PROGRESS",
        "{c}"
    );
    if rolled == "ROLLBACK_COMPLETE" {
        assert_eq!(c["status"], "ROLLBACK_COMPLETE", "{c}");
        assert_eq!(c["node_count"], 1, "{c}");
    }
}

/// What the console showed and logged in [`cancel_from_the_console`].
struct ConsoleCancel {
    screen: String,
    log: String,
}

/// In a pty, as an operator: the stack list filtered to `stack`, `C`, the refusal for a stack
/// Magnum owns, the stack's name typed, the plan with the call, `y`, Heat's acceptance; then
/// `q`, and the terminal restored.
fn cancel_from_the_console(
    clouds_yaml: &str,
    stack: &str,
    journal: &std::path::Path,
) -> ConsoleCancel {
    let yaml = clouds_yaml.to_string();
    let journal = journal.to_str().expect("utf-8");
    let args = ["--cloud", "magnum", "--journal", journal];
    let mut c = pty::Console::start_with(160, 40, &args, &[], |home| {
        use std::os::unix::fs::PermissionsExt;
        let dir = home.join("config").join("openstack");
        std::fs::create_dir_all(&dir).expect("config dir");
        let path = dir.join("clouds.yaml");
        std::fs::write(&path, &yaml).expect("clouds.yaml");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    });
    c.wait_for("the first frame", |s| s.alternate && s.has("magnum"));
    c.send(":stacks\r");
    c.wait_for("the stack list", |s| s.has("Stacks ["));
    c.send("/");
    c.send(&format!("{stack}\r"));
    c.wait_for("the cluster's stack, updating", |s| {
        s.has(stack) && s.has("UPDATE_IN_PROGRESS")
    });
    c.press("C", "the refusal, with the way to go ahead", |s| {
        s.has("belongs to a Magnum cluster") && s.has("To go ahead on a stack Magnum owns")
    });
    c.send(stack);
    // The plan's call wraps at words at this width: the path and its body on their rows.
    c.press("\r", "the plan with the override", |s| {
        s.has(&format!("heat.cancel {stack}?"))
            && s.has("/actions")
            && s.has("{\"cancel_update\":null}")
    });
    c.press("y", "Heat's acceptance", |s| s.has("accepted by Heat"));
    let screen = c.screen().text.clone();
    c.send("q");
    let exit = c.wait_exit();
    assert!(exit.success(), "caldera exited with {exit}");
    c.assert_restored();
    let log = std::fs::read_to_string(c.log_path()).unwrap_or_default();
    ConsoleCancel { screen, log }
}
