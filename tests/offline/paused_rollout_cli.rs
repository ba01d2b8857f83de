//! A rollout of an operator's group (`STACK/GROUP`, here the minions of the simulator's
//! Magnum cluster stack `one-image`, holding the masters beside them with `--also`) whose
//! driver was killed: paused, nobody releasing its members. What the command line says of
//! it: `rollout status --format json` (its top-level fields as the progress model says them,
//! what it sets, each group's counts), `why STACK` (the paused rollout named, and how to
//! resume it) and `rollout resume` (a header saying what it is about to drive).

use crate::support::cli::Caldera;
use crate::support::sim_group;
use caldera::sim::SimHandle;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// caldera on the simulator's cloud of `clouds` with `journal` (and an empty actions file
/// beside it).
fn command(clouds: &Path, journal: &Path, args: &[&str]) -> Command {
    let actions = journal.with_extension("toml");
    if !actions.exists() {
        std::fs::write(&actions, "").expect("actions file");
    }
    Caldera::cloud(clouds)
        .journal(journal, &actions)
        .env("XDG_STATE_HOME", journal.parent().expect("dir"))
        .no_stdin()
        .args(args)
        .command()
}

fn caldera(clouds: &Path, journal: &Path, args: &[&str]) -> (Output, String, String) {
    let out = command(clouds, journal, args)
        .output()
        .expect("run caldera");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// The paused rollout: the simulator, the test's directory, clouds.yaml, journal, the
/// target (`STACK/kube_minions`) and the stack's name.
struct Paused {
    sim: SimHandle,
    _dir: tempfile::TempDir,
    clouds: PathBuf,
    journal: PathBuf,
    target: String,
    stack: String,
}

/// Starts the rollout of the minions' new image holding the masters before them, a minute
/// between members; kills its driver once the first master is new.
async fn paused_held_rollout() -> Paused {
    let dir = tempfile::tempdir().expect("dir");
    let (sim, _, stack) = sim_group::one_image_cluster().await;
    let clouds = sim_group::write_clouds_yaml(dir.path(), &sim, "");
    let journal = dir.path().join("journal.jsonl");
    let target = format!("{}/kube_minions", stack.name);
    let mut child = command(
        &clouds,
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "minion_image=fedora-coreos-40",
            "--also",
            "kube_masters",
            "--allow-magnum-owned",
            "--gate-secs",
            "60",
            "--poll-secs",
            "0.05",
            "--yes",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("start");
    let t0 = Instant::now();
    loop {
        let (_, stdout, stderr) = caldera(&clouds, &journal, &["rollout", "status", &target]);
        if stdout.contains("  kube_masters: new 1/3") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{stdout}\n{stderr}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    Paused {
        sim,
        _dir: dir,
        clouds,
        journal,
        target,
        stack: stack.name,
    }
}

/// The id of the rollout `journal` started.
fn rollout_id(journal: &Path) -> String {
    caldera::journal::Journal::open(journal)
        .read_all()
        .expect("journal")
        .iter()
        .find(|e| e.action == "rollout.start")
        .and_then(|e| e.rollout.clone())
        .expect("the rollout's id")
}

/// `rollout status --format json` of a paused group rollout says what its text says: the
/// batch 1-based as the progress model's (was: `current_batch` 0-based beside
/// `progress.batch` 1-based), the progress model's state (was: the journal's `running`
/// beside `paused: nobody releases its members`; the journal's word is `journal_state`), what
/// it sets as a map (was: `image` reading `minion_image=fedora-coreos-40`), and each group's
/// counts as the text's `kube_masters: new 1/3` lines give them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_group_rollouts_json_status_agrees_with_its_progress() {
    let p = paused_held_rollout().await;
    let (out, text, stderr) = caldera(&p.clouds, &p.journal, &["rollout", "status", &p.target]);
    assert!(out.status.success(), "{text}\n{stderr}");
    assert!(
        text.contains("paused: nobody releases its members")
            || text.contains(": nobody releases its members"),
        "{text}"
    );
    let (out, stdout, stderr) = caldera(
        &p.clouds,
        &p.journal,
        &["rollout", "status", &p.target, "--format", "json"],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let progress = &json["progress"];
    assert_eq!(json["current_batch"], progress["batch"][0], "{stdout}");
    assert_eq!(json["batches"], progress["batch"][1], "{stdout}");
    assert_eq!(json["state"], progress["state"], "{stdout}");
    assert_eq!(progress["state"]["state"], "paused", "{stdout}");
    assert_eq!(
        progress["state"]["why"], "nobody releases its members",
        "{stdout}"
    );
    assert_eq!(json["journal_state"]["state"], "running", "{stdout}");
    assert_eq!(
        json["set"],
        serde_json::json!({"minion_image": "fedora-coreos-40"}),
        "{stdout}"
    );
    assert!(json.get("image").is_none(), "{stdout}");
    // Each node's batch as its text line numbers it (`kube_masters/0 batch   1 done`; was
    // 0 in the JSON).
    for node in json["nodes"].as_array().expect("nodes") {
        let name = node["name"].as_str().expect("name");
        let batch = node["batch"].as_u64().expect("batch");
        assert!(
            text.lines().any(|l| {
                let mut words = l.split_whitespace();
                words.next() == Some(name)
                    && words.next() == Some("batch")
                    && words.next() == Some(batch.to_string().as_str())
            }),
            "{name} batch {batch} in\n{text}"
        );
    }
    assert_eq!(json["nodes"][0]["batch"], 1, "{stdout}");
    // Each group's counts, as the text's lines give them (not recounted).
    let groups = json["groups"].as_array().expect("groups");
    let named: Vec<&str> = groups
        .iter()
        .map(|g| g["group"].as_str().expect("group"))
        .collect();
    assert_eq!(named, ["kube_masters", "kube_minions"], "{stdout}");
    assert_eq!(groups[0]["counts"]["new"], 1, "{stdout}");
    assert_eq!(groups[1]["target"], true, "{stdout}");
    let total = |g: &serde_json::Value| -> u64 {
        g["counts"]
            .as_object()
            .expect("counts")
            .values()
            .map(|v| v.as_u64().expect("count"))
            .sum()
    };
    assert_eq!((total(&groups[0]), total(&groups[1])), (3, 4), "{stdout}");
    for g in groups {
        let path = g["group"].as_str().expect("group");
        let line = text
            .lines()
            .find(|l| {
                l.trim_start().starts_with(&format!("{path}:"))
                    || l.trim_start().starts_with(&format!("{path} (target):"))
            })
            .unwrap_or_else(|| panic!("{path} in\n{text}"));
        let new = g["counts"]["new"].as_u64().expect("new");
        assert!(line.contains(&format!("new {new}/")), "{line}\n{stdout}");
    }
    p.sim.shutdown().await;
}

/// `why STACK` names a paused rollout nobody drives, where it was started, and the command
/// that resumes it (was: the hooks holding its members alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_names_a_paused_rollout_nobody_drives_and_how_to_resume_it() {
    let p = paused_held_rollout().await;
    let (_, stdout, stderr) = caldera(&p.clouds, &p.journal, &["why", &p.stack]);
    let host = caldera::journal::hostname();
    let id = rollout_id(&p.journal);
    let said = format!("rollout {id} of {} (started on {host} at ", p.target);
    assert!(stdout.contains(&said), "{said:?} in\n{stdout}\n{stderr}");
    // When it was started: its start's time (the id is stamped with it, to the second).
    let at = stdout
        .split(&said)
        .nth(1)
        .and_then(|rest| rest.split_once(") is paused"))
        .map(|(at, _)| at)
        .unwrap_or_else(|| panic!("a time and `) is paused` after {said:?} in\n{stdout}"));
    let at = chrono::DateTime::parse_from_rfc3339(at).expect("an RFC 3339 time");
    let stamped = at.format("r%Y%m%dT%H%M%S").to_string();
    assert!(id.starts_with(&stamped), "{id} started at {at}");
    assert!(
        stdout.contains(&format!(
            "nobody releases its members — resume with: caldera rollout resume {}",
            p.target
        )),
        "{stdout}\n{stderr}"
    );
    // In JSON too, among the stack's lines.
    let (_, json, stderr) = caldera(
        &p.clouds,
        &p.journal,
        &["why", &p.stack, "--format", "json"],
    );
    assert!(json.contains(&said), "{json}\n{stderr}");
    assert!(
        json.contains(&format!(
            "(started on {host} at {}) is paused",
            at.format("%Y-%m-%dT%H:%M:%SZ")
        )),
        "{json}"
    );
    p.sim.shutdown().await;
}

/// `rollout resume` says what it is about to drive before it drives, as `rollout start`
/// does: the rollout's id, its target, what it sets and where it was started (was: nothing
/// on stdout before the progress).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_resume_prints_a_header_before_it_drives() {
    let p = paused_held_rollout().await;
    let host = caldera::journal::hostname();
    let mut child = command(
        &p.clouds,
        &p.journal,
        &[
            "rollout",
            "resume",
            &p.target,
            "--yes",
            "--poll-secs",
            "0.05",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("resume");
    // Its first line, before it drives (the rollout's gate keeps it driving for minutes).
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(30));
    let _ = child.kill();
    let _ = child.wait();
    let first = first.expect("a line on stdout before it drives");
    let id = rollout_id(&p.journal);
    assert!(
        first.starts_with(&format!("resume rollout {id} ")),
        "{first}"
    );
    for said in [
        format!(" of {}", p.target),
        "minion_image=fedora-coreos-40".to_string(),
        format!("started on {host}"),
    ] {
        assert!(first.contains(&said), "{said:?} in {first}");
    }
    p.sim.shutdown().await;
}

/// A rollout's refusal names a group without a possessive built on its name: `before those
/// of kube_minions` (was: `before kube_minions's`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_names_the_target_group_without_a_built_possessive() {
    let dir = tempfile::tempdir().expect("dir");
    let (sim, _, stack) = sim_group::one_image_cluster().await;
    let clouds = sim_group::write_clouds_yaml(dir.path(), &sim, "");
    let journal = dir.path().join("journal.jsonl");
    let target = format!("{}/kube_minions", stack.name);
    let (out, stdout, stderr) = caldera(
        &clouds,
        &journal,
        &[
            "rollout",
            "start",
            &target,
            "--set",
            "minion_image=fedora-coreos-40",
            "--allow-magnum-owned",
            "--yes",
        ],
    );
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    let said = "say --also kube_masters to hold it too (caldera releases its members one at a \
                time, before those of kube_minions)";
    assert!(stdout.contains(said), "{said:?} in\n{stdout}\n{stderr}");
    assert!(stderr.contains(said), "{said:?} in\n{stderr}");
    for out in [&stdout, &stderr] {
        for name in ["kube_minions", "kube_masters", stack.name.as_str()] {
            assert!(!out.contains(&format!("{name}'s")), "{out}");
        }
    }
    sim.shutdown().await;
}
