//! The headless action commands (`caldera scale`, `caldera rollout ...`, `caldera journal`)
//! as an operator runs them, against an in-process simulator reached through a clouds.yaml,
//! including the guard rails set in that file.

use crate::support::sim_group;

use caldera::drivers::heat_native::HeatNativeDriver;
use caldera::drivers::{Driver, NodeGroupTarget};
use caldera::sim::{SimHandle, SimOptions};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

async fn start() -> (SimHandle, HeatNativeDriver) {
    sim_group::sim_driver(SimOptions::fast("empty", 50.0)).await
}

async fn create(driver: &HeatNativeDriver, cluster: &str, count: u32) -> NodeGroupTarget {
    let t = sim_group::create_group(driver, cluster, "workers", count).await;
    let stack = t.stack.clone().expect("stack");
    let t0 = Instant::now();
    loop {
        let d = driver.heat().get_stack(&stack, false).await.expect("show");
        if !d.summary.status.is_in_progress() {
            assert_eq!(d.summary.status.raw, "CREATE_COMPLETE");
            return t;
        }
        assert!(t0.elapsed() < Duration::from_secs(60));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn caldera(clouds: &Path, journal: &Path, args: &[&str]) -> Output {
    command(clouds, journal, args)
        .output()
        .expect("run caldera")
}

/// caldera on the simulator's cloud with `journal` (and an actions file beside it).
fn command(clouds: &Path, journal: &Path, args: &[&str]) -> Command {
    // A named actions file must exist (a missing one is an error): none yet is no hooks.
    let actions = journal.with_extension("toml");
    if !actions.exists() {
        std::fs::write(&actions, "").expect("actions file");
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_caldera"));
    c.env("OS_CLIENT_CONFIG_FILE", clouds)
        .env("OS_CLOUD", "simcloud")
        .env("CALDERA_JOURNAL", journal)
        .env("CALDERA_ACTIONS_CONFIG", journal.with_extension("toml"))
        .env("XDG_STATE_HOME", journal.parent().expect("dir"))
        .args(args);
    c
}

/// Issue 25: a node group has two names, `CLUSTER/NODEGROUP` and its stack's `STACK/nodes`.
/// A rollout started under one is found under the other with its live driver (not "no
/// driver on this machine"), and a pause asked under the other name reaches that driver
/// rather than offering to drive it a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_is_found_with_its_driver_under_the_groups_other_name() {
    let (sim, driver) = start().await;
    let t = create(&driver, "on", 4).await;
    let stack = t.stack.clone().expect("stack");
    let dir = tempfile::tempdir().expect("dir");
    let clouds = sim_group::write_clouds_yaml(dir.path(), &sim, "");
    let journal = dir.path().join("journal.jsonl");
    let start = ["rollout", "start", "on", "--image", "img-v2", "--yes"];
    let gate = ["--gate-secs", "60", "--poll-secs", "0.05"];
    let args: Vec<&str> = start.iter().chain(gate.iter()).copied().collect();
    let mut child = command(&clouds, &journal, &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start");
    let other = format!("{}/nodes", stack.name);
    let t0 = Instant::now();
    let said = loop {
        let out = caldera(&clouds, &journal, &["rollout", "status", &other]);
        let (stdout, stderr) = text(&out);
        if stdout.contains("driven by pid") && stdout.contains("new 1/4") {
            break stdout;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{stdout}\n{stderr}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(said.contains("of on/workers"), "{said}");
    assert!(!said.contains("no driver on this machine"), "{said}");

    let out = caldera(&clouds, &journal, &["rollout", "pause", &other]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let out = caldera(&clouds, &journal, &["rollout", "status", "on"]);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("paused by the operator"), "{stdout}");

    let _ = child.kill();
    let _ = child.wait();
    sim.shutdown().await;
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_rollout_and_journal_commands() {
    let (sim, driver) = start().await;
    create(&driver, "cli", 5).await;
    let dir = tempfile::tempdir().expect("dir");
    let clouds = sim_group::write_clouds_yaml(dir.path(), &sim, "");
    let journal = dir.path().join("journal.jsonl");

    // Scale: the plan names the nodes, then it is applied and followed.
    let out = caldera(
        &clouds,
        &journal,
        &[
            "scale",
            "cli/workers",
            "--count",
            "6",
            "--remove",
            "1",
            "--yes",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("from 5 to 6 nodes"), "{stdout}");
    assert!(stdout.contains("add    2: 5, 6"), "{stdout}");
    assert!(stdout.contains("remove 1: 1"), "{stdout}");
    assert!(stdout.contains("PATCH /stacks/cli-workers/"), "{stdout}");
    assert!(stderr.contains("UPDATE_COMPLETE"), "{stderr}");

    // Without --yes and without a terminal, nothing is done.
    let out = caldera(&clouds, &journal, &["scale", "cli", "--count", "2"]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("--yes"), "{:?}", text(&out));

    // A rollout, batch 2 with a canary, followed to the end.
    std::fs::write(
        journal.with_extension("toml"),
        "[hooks]\npost_batch = \"echo batch $CALDERA_BATCH: $CALDERA_BATCH_NODES\"\n",
    )
    .expect("hooks config");
    let out = caldera(
        &clouds,
        &journal,
        &[
            "rollout",
            "start",
            "cli/workers",
            "--image",
            "img-v2",
            "--batch",
            "2",
            "--canary",
            "1",
            "--yes",
            "--poll-secs",
            "0.05",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("batch   1: 0\n"), "{stdout}");
    assert!(stdout.contains("batch   2: 2, 3\n"), "{stdout}");
    assert!(stdout.contains(": completed"), "{stdout}");
    assert!(stdout.contains("new 6/6 updating 0 held 0"), "{stdout}");

    let out = caldera(&clouds, &journal, &["rollout", "status", "cli/workers"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("completed"), "{stdout}");
    // A finished rollout is shown as itself: its own id, every time, and no rate or ETA.
    let id = caldera::journal::Journal::open(&journal)
        .read_all()
        .expect("journal")
        .iter()
        .rev()
        .find(|e| e.action == "rollout.start")
        .and_then(|e| e.rollout.clone())
        .expect("the rollout's id");
    assert!(stdout.starts_with(&format!("rollout {id} ")), "{stdout}");
    assert!(stdout.contains("pace - ETA -"), "{stdout}");
    let again = caldera(&clouds, &journal, &["rollout", "status", "cli/workers"]);
    assert_eq!(text(&again).0.lines().next(), stdout.lines().next());
    // `--summary`: the same lines but the per-node ones; in JSON, no nodes.
    let out = caldera(
        &clouds,
        &journal,
        &["rollout", "status", "cli/workers", "--summary"],
    );
    let summary = text(&out).0;
    assert!(out.status.success(), "{summary}");
    assert!(!summary.contains(" batch   1 "), "{summary}");
    assert!(
        summary.lines().all(|l| stdout.contains(l)),
        "{summary}\n{stdout}"
    );
    assert!(summary.lines().count() < stdout.lines().count());
    let out = caldera(
        &clouds,
        &journal,
        &[
            "rollout",
            "status",
            "cli/workers",
            "--summary",
            "--format",
            "json",
        ],
    );
    let json: serde_json::Value = serde_json::from_str(&text(&out).0).expect("json");
    assert_eq!(json["nodes"], serde_json::json!([]));
    assert_eq!(json["progress"]["counts"]["new"], 6);
    assert_eq!(json["progress"]["state"]["state"], "completed");

    // A start while another process drives the group is refused naming the holder: hold
    // the driver lock of the group's stack as a live driver does. The lock is the stack's,
    // so the same group named by its own stack (`STACK/nodes`) is refused too (was: one
    // lock per name, two drivers of one update on one machine).
    let ended = caldera::rollout::engine::find_latest(
        &caldera::journal::Journal::open(&journal),
        "cli/workers",
    )
    .expect("journal")
    .expect("the rollout above");
    let lock_dir = caldera::rollout::lock::lock_dir(&journal);
    let held = caldera::rollout::lock::DriverLock::acquire(
        &lock_dir,
        &caldera::rollout::lock::key(&ended),
        "r-held",
    )
    .expect("lock");
    let by_stack = format!("{}/nodes", ended.stack.name);
    for name in ["cli/workers", by_stack.as_str()] {
        let out = caldera(
            &clouds,
            &journal,
            &["rollout", "start", name, "--image", "img-v3", "--yes"],
        );
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{name}: {stderr}");
        assert!(
            stderr.contains("already has a driver (stack ")
                && stderr.contains("rollout r-held driven by pid"),
            "{name}: {stderr}"
        );
    }
    drop(held);

    // The journal, as CSV: scale and rollout lines with their calls; hooks' output kept.
    let out = caldera(&clouds, &journal, &["journal", "--format", "csv"]);
    let (stdout, _) = text(&out);
    assert!(stdout
        .lines()
        .any(|l| l.contains(",scale,cli/workers,") && l.contains("PATCH")));
    assert!(stdout.contains("rollout.finish"), "{stdout}");
    // Each line says on which machine it was written (was: no host column).
    let host = caldera::journal::hostname();
    assert!(
        stdout.starts_with("time,cloud,user,host,action,")
            && stdout
                .lines()
                .skip(1)
                .all(|l| l.contains(&format!(",{host},"))),
        "{stdout}"
    );
    let entries = caldera::journal::Journal::open(&journal)
        .read_all()
        .expect("journal");
    let hook = entries
        .iter()
        .find(|e| e.action == "hook.post_batch" && e.target.ends_with("#batch2"))
        .expect("post_batch hook of batch 2");
    assert_eq!(hook.output.as_deref(), Some("batch 2: 2,3\n"));
    assert!(entries
        .iter()
        .all(|e| !e.user.is_empty() && e.cloud == "simcloud"));
    let raw = std::fs::read_to_string(&journal).expect("journal text");
    assert!(
        !raw.contains(&sim.password),
        "the journal holds the password"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_rails_from_clouds_yaml() {
    let (sim, driver) = start().await;
    create(&driver, "prod", 3).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("journal.jsonl");

    let ro = sim_group::write_clouds_yaml(dir.path(), &sim, "{read_only: true}");
    let out = caldera(&ro, &journal, &["scale", "prod", "--count", "4", "--yes"]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("read-only"), "{:?}", text(&out));
    let plain = sim_group::write_clouds_yaml(dir.path(), &sim, "");
    let out = caldera(
        &plain,
        &journal,
        &[
            "--read-only",
            "rollout",
            "start",
            "prod",
            "--image",
            "x",
            "--yes",
        ],
    );
    assert!(text(&out).1.contains("read-only"), "{:?}", text(&out));

    // Refusals are part of the audit trail.
    let refused = caldera::journal::Journal::open(&journal)
        .read_all()
        .expect("journal");
    assert_eq!(
        refused
            .iter()
            .filter(|e| matches!(e.outcome, caldera::journal::Outcome::Refused { .. }))
            .count(),
        2
    );

    let prod = sim_group::write_clouds_yaml(dir.path(), &sim, "{production: true}");
    let out = caldera(&prod, &journal, &["scale", "prod", "--count", "4", "--yes"]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("--confirm prod"), "{:?}", text(&out));
    let out = caldera(
        &prod,
        &journal,
        &["scale", "prod", "--count", "4", "--yes", "--confirm", "prd"],
    );
    assert!(!out.status.success());
    let out = caldera(
        &prod,
        &journal,
        &[
            "scale",
            "prod",
            "--count",
            "4",
            "--yes",
            "--confirm",
            "prod",
        ],
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let names: Vec<String> = driver
        .list_nodes(&driver.find_nodegroup("prod", "workers").await.expect("ng"))
        .await
        .expect("nodes")
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["0", "1", "2", "3"]);
    sim.shutdown().await;
}

/// `rollout start` stops at a failure (exit status 3, Heat keeps the rest on hooks);
/// `rollout status` in another process says so; `rollout resume --set` in a third process
/// reattaches from the journal and Heat, and finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_paused_by_a_failure_is_resumed_by_another_process() {
    let (sim, driver) = start().await;
    create(&driver, "rf", 4).await;
    let dir = tempfile::tempdir().expect("dir");
    let clouds = sim_group::write_clouds_yaml(dir.path(), &sim, "");
    let journal = dir.path().join("journal.jsonl");

    let out = caldera(
        &clouds,
        &journal,
        &[
            "rollout",
            "start",
            "rf",
            "--image",
            "img-v2",
            "--set",
            "node_fail_index=2",
            "--yes",
            "--poll-secs",
            "0.05",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("rollout paused: node 2 failed"), "{stderr}");

    let out = caldera(&clouds, &journal, &["rollout", "status", "rf"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("paused: node 2 failed"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.contains("  3 batch   4 pending")),
        "{stdout}"
    );

    // Values a resume sends change the cloud: without --yes (and no terminal to ask on),
    // nothing is sent.
    let out = caldera(
        &clouds,
        &journal,
        &[
            "rollout",
            "resume",
            "rf",
            "--set",
            "node_fail_index=-1",
            "--poll-secs",
            "0.05",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("the resume sends it again with node_fail_index=-1"),
        "{stdout}"
    );
    assert!(stderr.contains("give --yes"), "{stderr}");
    let out = caldera(&clouds, &journal, &["rollout", "status", "rf"]);
    assert!(
        text(&out).0.contains("paused: node 2 failed"),
        "{:?}",
        text(&out)
    );

    let out = caldera(
        &clouds,
        &journal,
        &[
            "rollout",
            "resume",
            "rf",
            "--set",
            "node_fail_index=-1",
            "--yes",
            "--poll-secs",
            "0.05",
        ],
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(": completed"), "{stdout}");
    assert!(stdout.contains("new 4/4 updating 0"), "{stdout}");
    let entries = caldera::journal::Journal::open(&journal)
        .read_all()
        .expect("journal");
    assert!(entries
        .iter()
        .any(|e| e.action == "rollout.retry" && e.outcome == caldera::journal::Outcome::Ok));
    sim.shutdown().await;
}

/// Each member's image, from its own stack.
async fn images(
    driver: &HeatNativeDriver,
    target: &NodeGroupTarget,
) -> std::collections::BTreeMap<String, String> {
    let heat = driver.heat();
    let group = driver
        .group_stack(target.stack.as_ref().expect("stack"))
        .await
        .expect("group");
    let mut out = std::collections::BTreeMap::new();
    for m in heat
        .list_resources(&group, &Default::default())
        .await
        .expect("members")
    {
        let stack = m.resource.nested.clone().expect("member stack");
        let d = heat.get_stack(&stack, false).await.expect("member");
        out.insert(
            m.resource.name.clone(),
            d.parameters.get("image").cloned().unwrap_or_default(),
        );
    }
    out
}

/// `caldera rollout skip` and `caldera rollout abort --rollback` from other processes while
/// `caldera rollout start` drives (a long gate after each node): the skip is honoured by the
/// driver (rc 0), the abort too; the driver ends with Heat's rollback finished and every node
/// back on its old image, the journal saying aborted (not failed), and `rollout status`
/// says the rollout ended, aborted, with its own id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_and_abort_from_other_processes_reach_the_driver() {
    let (sim, driver) = start().await;
    let target = create(&driver, "ab", 4).await;
    let dir = tempfile::tempdir().expect("dir");
    let clouds = sim_group::write_clouds_yaml(dir.path(), &sim, "");
    let journal = dir.path().join("journal.jsonl");
    let actions = journal.with_extension("toml");
    std::fs::write(&actions, "").expect("actions file");
    let mut driving = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .env("OS_CLIENT_CONFIG_FILE", &clouds)
        .env("OS_CLOUD", "simcloud")
        .env("CALDERA_JOURNAL", &journal)
        .env("CALDERA_ACTIONS_CONFIG", &actions)
        .env("XDG_STATE_HOME", dir.path())
        .args([
            "rollout",
            "start",
            "ab",
            "--image",
            "img-v2",
            "--gate-secs",
            "600",
            "--yes",
            "--poll-secs",
            "0.05",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rollout start");
    // The first node is released, then the gate holds the rest.
    let t0 = Instant::now();
    let first = loop {
        let entries = caldera::journal::Journal::open(&journal)
            .read_all()
            .unwrap_or_default();
        if let Some(e) = entries
            .iter()
            .find(|e| e.action == "rollout.release" && e.outcome == caldera::journal::Outcome::Ok)
        {
            break e.target.rsplit('/').next().unwrap_or_default().to_string();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no release: {entries:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let pending = ["0", "1", "2", "3"]
        .into_iter()
        .find(|m| *m != first)
        .expect("a pending member");

    let out = caldera(
        &clouds,
        &journal,
        &["rollout", "skip", "ab/workers", pending],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "skip: {stdout}\n{stderr}");

    // Heat's cancel is confirmed as the other actions' calls are: without --yes (and no
    // terminal to ask on) nothing is sent; with it, it is.
    let out = caldera(
        &clouds,
        &journal,
        &["rollout", "abort", "ab/workers", "--rollback"],
    );
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "abort: {stdout}\n{stderr}");
    assert!(stdout.contains("cancel_update"), "{stdout}");
    assert!(stderr.contains("give --yes"), "{stderr}");
    assert!(
        driving.try_wait().expect("try_wait").is_none(),
        "the driver goes on"
    );
    let out = caldera(
        &clouds,
        &journal,
        &["rollout", "abort", "ab/workers", "--rollback", "--yes"],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "abort: {stdout}\n{stderr}");

    // The driver ends on its own: the rollback done, nothing left on a hook.
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = driving.try_wait().expect("try_wait") {
            break status;
        }
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = driving.kill();
            panic!("the driver did not end after the abort");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let out = driving.wait_with_output().expect("output");
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("rolled back") || stderr.contains("rolled back"),
        "rc {:?}\n{stdout}\n{stderr}",
        status.code()
    );
    let stack = target.stack.clone().expect("stack");
    let shown = driver.heat().get_stack(&stack, false).await.expect("show");
    assert_eq!(shown.summary.status.raw, "ROLLBACK_COMPLETE");
    let imgs = images(&driver, &target).await;
    assert!(imgs.values().all(|i| i == "img-v1"), "{imgs:?}");

    let entries = caldera::journal::Journal::open(&journal)
        .read_all()
        .expect("journal parses");
    let rollout = entries
        .iter()
        .find(|e| e.action == "rollout.start")
        .and_then(|e| e.rollout.clone())
        .expect("rollout id");
    let ours: Vec<_> = entries
        .iter()
        .filter(|e| e.rollout.as_deref() == Some(rollout.as_str()))
        .collect();
    // The first member only was released: the skipped one never, the others were held by
    // the gate until the abort.
    let released: Vec<&str> = ours
        .iter()
        .filter(|e| e.action == "rollout.release" && e.outcome == caldera::journal::Outcome::Ok)
        .map(|e| e.target.as_str())
        .collect();
    assert_eq!(released, [format!("ab/workers/{first}")], "{ours:#?}");
    assert!(ours.iter().any(|e| e.action == "rollout.skip"));
    let last = ours.last().expect("entries");
    assert_eq!(
        (last.action.as_str(), &last.outcome),
        ("rollout.abort", &caldera::journal::Outcome::Ok)
    );

    for _ in 0..2 {
        let out = caldera(&clouds, &journal, &["rollout", "status", "ab/workers"]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains(&rollout), "its own id: {stdout}");
        assert!(stdout.contains(": rolled back"), "{stdout}");
        // Nothing is releasing any more: no pace, no ETA; after the rollback no node counts
        // as new: the first one was updated, then rolled back (so said, not pending), the
        // others never were.
        assert!(stdout.contains("pace - ETA -"), "{stdout}");
        assert!(stdout.contains("new 0/"), "{stdout}");
        assert!(stdout.contains("skipped 1 rolled back 1"), "{stdout}");
    }
    sim.shutdown().await;
}

/// What a rollout's resume (`rollout resume --set`) sends is read against the types the
/// stack's template declares, from the simulated Heat's own template: a `string` parameter
/// keeps the operator's `2024` as text, a `number` takes the number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumes_values_take_the_types_the_stacks_template_declares() {
    use caldera::parameter_value::ParameterValue;
    let (sim, driver) = start().await;
    let target = create(&driver, "fit", 1).await;
    let stack = target.stack.clone().expect("stack");
    let given =
        ParameterValue::parse_pairs(["name_prefix=2024", "node_fail_index=-1"]).expect("pairs");
    let fitted = caldera::drivers::any_group::fit_to_stack(driver.heat(), &stack, given)
        .await
        .expect("fitted");
    assert_eq!(fitted["name_prefix"].to_json(), serde_json::json!("2024"));
    assert_eq!(fitted["node_fail_index"].to_json(), serde_json::json!(-1));
    sim.shutdown().await;
}

/// The simulator's Magnum cluster `one-image` (scenario `magnum-one-image`: masters and
/// minions read one image parameter) reached through a clouds.yaml in `dir`, with its
/// minions' group by path (`STACK/kube_minions`): (simulator, clouds.yaml, journal, target).
async fn one_image_by_path(
    dir: &Path,
) -> (SimHandle, std::path::PathBuf, std::path::PathBuf, String) {
    let (sim, _, stack) = sim_group::one_image_cluster().await;
    let clouds = sim_group::write_clouds_yaml(dir, &sim, "");
    (
        sim,
        clouds,
        dir.join("journal.jsonl"),
        format!("{}/kube_minions", stack.name),
    )
}

/// `rollout start TARGET` of the minions' new image holding the masters too, with `gate`
/// seconds between members.
fn held_rollout<'a>(target: &'a str, gate: &'a str) -> [&'a str; 13] {
    [
        "rollout",
        "start",
        target,
        "--set",
        "minion_image=fedora-coreos-40",
        "--also",
        "kube_masters",
        "--allow-magnum-owned",
        "--gate-secs",
        gate,
        "--poll-secs",
        "0.05",
        "--yes",
    ]
}

/// A group of an operator's stack (`STACK/GROUP`; here Magnum's cluster stack whose masters
/// read the minions' image parameter, scenario `magnum-one-image`) rolled out from the command
/// line on the simulator as on a real Heat: Heat's preview of the update, the blast radius
/// naming the masters (read from the stack's template), `--also` holding them before the
/// minions; `rollout status` then gives each group's counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_of_an_operators_stack_is_rolled_out_by_path_with_heats_preview() {
    let dir = tempfile::tempdir().expect("dir");
    let (sim, clouds, journal, target) = one_image_by_path(dir.path()).await;
    let out = caldera(&clouds, &journal, &held_rollout(&target, "0"));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for said in [
        "Heat's preview, updated: kube_masters, kube_minions",
        "blast radius: kube_masters (OS::Heat::ResourceGroup, 3 member(s): 0, 1, 2) reads \
         minion_image too: held by caldera (--also)",
        ": completed",
    ] {
        assert!(stdout.contains(said), "{said:?} in\n{stdout}\n{stderr}");
    }
    let out = caldera(&clouds, &journal, &["rollout", "status", &target]);
    let (stdout, stderr) = text(&out);
    for said in [
        "  kube_masters: new 3/3",
        "  kube_minions (target): new 4/4",
    ] {
        assert!(stdout.contains(said), "{said:?} in\n{stdout}\n{stderr}");
    }
    sim.shutdown().await;
}

/// The same rollout of a Magnum cluster's stack, read under the Magnum names of the groups it
/// runs (`CLUSTER/NODEGROUP`): caldera's rollout, with its driver (was: "Magnum update,
/// observed: Magnum runs the batches", whose abort goes through Magnum), for the target's
/// node group and for the one it holds beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_of_a_magnum_clusters_stack_is_read_as_ours_under_magnums_names() {
    let dir = tempfile::tempdir().expect("dir");
    let (sim, clouds, journal, target) = one_image_by_path(dir.path()).await;
    let mut child = command(&clouds, &journal, &held_rollout(&target, "60"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start");
    for nodegroup in ["one-image/default-worker", "one-image/default-master"] {
        let t0 = Instant::now();
        let said = loop {
            let out = caldera(&clouds, &journal, &["rollout", "status", nodegroup]);
            let (stdout, stderr) = text(&out);
            if stdout.contains("driven by pid") {
                break stdout;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "{stdout}\n{stderr}");
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(said.contains(&format!("of {target}")), "{said}");
        assert!(said.contains("  kube_masters: new "), "{said}");
        assert!(!said.contains("observed"), "{said}");
        // Another machine (a journal and driver locks of its own) reads the same rollout
        // from Heat alone: its marker, the held group's tag, the environment's hooks.
        let away = tempfile::tempdir().expect("dir");
        let out = caldera(
            &clouds,
            &away.path().join("journal.jsonl"),
            &["rollout", "status", nodegroup],
        );
        let (said, stderr) = text(&out);
        assert!(said.contains(&format!("of {target}")), "{said}\n{stderr}");
        assert!(said.contains("  kube_masters: new "), "{said}");
        assert!(!said.contains("observed"), "{said}");
    }
    let _ = child.kill();
    let _ = child.wait();
    sim.shutdown().await;
}
