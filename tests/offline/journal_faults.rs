//! The journal cannot lie or be lost, on the simulator: a rollout whose journal becomes
//! unwritable, unreadable (a line that is not an entry) or torn, at several points of the
//! rollout. Each case asserts that nothing changed in the cloud after the failure (the
//! members the engine had not released are still on the old image, long after), what the
//! error says, and that the journal reads whole again after the repair — then the rollout
//! is resumed and finishes.

use crate::support::scenarios;

use crate::support::sim_group::sim_env;
use caldera::drivers::NodeGroupTarget;
use caldera::journal::{Journal, Outcome};
use caldera::lifecycle::HookSet;
use caldera::rollout::engine::{self, RolloutHandle};
use caldera::rollout::{Control, NodePhase, RolloutOptions, RolloutPlan, RolloutState};
use scenarios::Env;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// How the journal goes bad.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Writes fail (ENOSPC): the file is swapped for `/dev/full`.
    DiskFull,
    /// Neither readable nor writable: a directory where the file was.
    Directory,
    /// A complete line that is not an entry, appended by someone else.
    Garbage,
}

/// Where the journal was put aside while it is broken.
fn saved(journal: &Path) -> PathBuf {
    journal.with_extension("saved")
}

fn break_journal(journal: &Journal, fault: Fault) {
    let p = journal.path();
    match fault {
        Fault::DiskFull => {
            std::fs::rename(p, saved(p)).expect("set aside");
            std::os::unix::fs::symlink("/dev/full", p).expect("symlink");
        }
        Fault::Directory => {
            std::fs::rename(p, saved(p)).expect("set aside");
            std::fs::create_dir(p).expect("dir");
        }
        Fault::Garbage => {
            std::fs::OpenOptions::new()
                .append(true)
                .open(p)
                .expect("open")
                .write_all(b"this is not an entry\n")
                .expect("garbage");
        }
    }
}

fn mend_journal(journal: &Journal, fault: Fault) {
    let p = journal.path();
    match fault {
        Fault::DiskFull => {
            std::fs::remove_file(p).expect("unlink");
            std::fs::rename(saved(p), p).expect("restore");
        }
        Fault::Directory => {
            std::fs::remove_dir(p).expect("rmdir");
            std::fs::rename(saved(p), p).expect("restore");
        }
        Fault::Garbage => {
            let (torn, bad) = journal.quarantine_bad_lines().expect("repair");
            assert!(torn.is_none());
            assert_eq!(bad.len(), 1, "{bad:?}");
            let kept = std::fs::read_to_string(journal.quarantine_path()).expect("kept");
            assert!(kept.contains("this is not an entry"), "{kept}");
        }
    }
}

/// Members the engine had not let go of when it stopped.
fn held(status: &caldera::rollout::RolloutStatus) -> Vec<String> {
    status
        .nodes
        .iter()
        .filter(|n| {
            matches!(
                n.phase,
                NodePhase::Paused | NodePhase::Waiting | NodePhase::Pending
            )
        })
        .map(|n| n.name.clone())
        .collect()
}

async fn start(env: &Env, target: &NodeGroupTarget) -> (RolloutPlan, RolloutHandle) {
    let members = env.member_names(target).await;
    let plan = env.plan(target, &members, "img-v2", RolloutOptions::default(), &[]);
    let h = env.start_rollout(&plan, HookSet::default()).await;
    (plan, h)
}

/// The fault after `done` members are done: the engine pauses before its next release with
/// an error that names the journal and what was and was not released; Heat does nothing
/// more; once the journal is mended, a resume finishes the rollout.
async fn fault_mid_rollout(fault: Fault, done: usize, cluster: &str) {
    let (sim, env) = sim_env(50.0).await;
    let target = env.create(cluster, 5).await;
    let (plan, mut h) = start(&env, &target).await;
    if done > 0 {
        tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= done))
            .await
            .expect("members done before the fault");
    }
    break_journal(&env.ctx.journal, fault);
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("the rollout stops");
    let RolloutState::Paused { reason } = &paused.state else {
        panic!("{fault:?} after {done}: ended {:?}", paused.state);
    };
    println!("{fault:?} after {done} done: {reason}");
    assert!(reason.contains("journal"), "{reason}");
    assert!(reason.contains("nothing more is sent to Heat"), "{reason}");
    assert!(
        reason.contains("not released (held on their hooks): "),
        "{reason}"
    );
    if let Fault::Garbage = fault {
        assert!(reason.contains("is not an entry"), "{reason}");
        assert!(reason.contains(" line "), "{reason}");
    }
    let held = held(&paused);
    assert!(!held.is_empty(), "{fault:?}: everything was released");
    for m in &held {
        assert!(reason.contains(m.as_str()), "{m} not named in {reason}");
    }
    // Long after (hundreds of simulated seconds): Heat touched none of them.
    tokio::time::sleep(env.poll * 40).await;
    let images = env.member_images(&target).await;
    for m in &held {
        assert_eq!(images[m], "img-v1", "{fault:?}: {m} updated after the stop");
    }
    assert!(matches!(h.status().state, RolloutState::Paused { .. }));

    // Mended: the journal reads whole, the rollout resumes and finishes.
    mend_journal(&env.ctx.journal, fault);
    let entries = env.ctx.journal.read_all().expect("journal reads");
    assert!(entries.iter().any(|e| e.action == "rollout.start"));
    h.send(Control::Resume {
        parameters: BTreeMap::new(),
    })
    .expect("resume");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("ends");
    assert_eq!(end.state, RolloutState::Completed, "{:#?}", end.lines());
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v2"), "{images:?}");
    // Each member released once, each release journaled before it was sent.
    let entries = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    for m in images.keys() {
        let t = format!("{}/{m}", target.label());
        let started = entries
            .iter()
            .filter(|e| {
                e.action == "rollout.release" && e.target == t && e.outcome == Outcome::Started
            })
            .count();
        let ok = entries
            .iter()
            .filter(|e| e.action == "rollout.release" && e.target == t && e.outcome == Outcome::Ok)
            .count();
        assert!(ok <= 1 && started >= ok, "{m}: {started} started, {ok} ok");
    }
    env.settle(target.stack.as_ref().expect("stack")).await;
    env.delete(&target).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_full_at_start_and_mid_rollout_stops_before_the_next_release() {
    fault_mid_rollout(Fault::DiskFull, 0, "df0").await;
    fault_mid_rollout(Fault::DiskFull, 2, "df2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_replaced_by_a_directory_mid_rollout_stops_it() {
    fault_mid_rollout(Fault::Directory, 1, "dir1").await;
    fault_mid_rollout(Fault::Directory, 3, "dir3").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_line_mid_rollout_stops_it_with_its_line_number() {
    fault_mid_rollout(Fault::Garbage, 0, "gb0").await;
    fault_mid_rollout(Fault::Garbage, 2, "gb2").await;
}

/// A journal that cannot be read or written before the start: refused, nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_journal_before_start_sends_nothing() {
    let (sim, env) = sim_env(50.0).await;
    let target = env.create("pre", 3).await;
    let stack = target.stack.clone().expect("stack");
    let members = env.member_names(&target).await;
    for fault in [Fault::Garbage, Fault::DiskFull, Fault::Directory] {
        // Something in the journal first, as on any machine that ran caldera before.
        env.ctx
            .journal
            .append(&caldera::journal::Entry::new(
                &env.ctx.actor,
                "scale",
                "x/y",
                Outcome::Ok,
            ))
            .expect("append");
        break_journal(&env.ctx.journal, fault);
        let plan = env.plan(&target, &members, "img-v2", RolloutOptions::default(), &[]);
        let e = match engine::start(
            env.heat.clone(),
            env.ctx.clone(),
            plan,
            env.engine_options(HookSet::default()),
            None,
        )
        .await
        {
            Ok(_) => panic!("{fault:?}: started"),
            Err(e) => e.message,
        };
        println!("{fault:?} before start: {e}");
        assert!(e.contains("nothing was sent to Heat"), "{e}");
        assert!(e.contains("journal"), "{e}");
        let d = env.heat.get_stack(&stack, false).await.expect("stack");
        assert_eq!(d.summary.status.raw, "CREATE_COMPLETE", "{fault:?}");
        mend_journal(&env.ctx.journal, fault);
        env.ctx.journal.read_all().expect("journal reads");
    }
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v1"), "{images:?}");
    env.delete(&target).await;
    sim.shutdown().await;
}

/// A writer died mid-line (a torn tail) during a rollout. Readers do not take it for an
/// entry, the next append moves it into `.torn` (never glued), and a pause requested from
/// "another process" right after lands whole and is acknowledged by the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_tail_mid_rollout_is_set_aside_and_a_pause_still_lands() {
    let (sim, env) = sim_env(50.0).await;
    let target = env.create("torn", 6).await;
    let (plan, mut h) = start(&env, &target).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first member done");
    let torn = b"{\"time\":\"2026-11-23T18:33:26Z\",\"cloud\":\"x\",\"act";
    std::fs::OpenOptions::new()
        .append(true)
        .open(env.ctx.journal.path())
        .expect("open")
        .write_all(torn)
        .expect("torn write");
    let after = engine::request(&env.ctx, &plan, &Control::Pause).expect("pause request");
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("pauses");
    assert_eq!(
        paused.state,
        RolloutState::Paused {
            reason: "paused by the operator".into()
        }
    );
    // The acknowledgement a `caldera rollout pause` waits for, after the request.
    let (acks, _) = env.ctx.journal.read_from(after).expect("journal reads");
    assert!(
        acks.iter()
            .any(|e| e.action == engine::ack_action(&Control::Pause)
                && e.rollout.as_deref() == Some(plan.id.as_str())),
        "{acks:?}"
    );
    // Every line of the file is an entry; the torn bytes are in the sidecar.
    let raw = std::fs::read_to_string(env.ctx.journal.path()).expect("read");
    for (i, line) in raw.lines().enumerate() {
        serde_json::from_str::<caldera::journal::Entry>(line)
            .unwrap_or_else(|e| panic!("line {}: {e}: {line}", i + 1));
    }
    let kept = std::fs::read(env.ctx.journal.torn_path()).expect("sidecar");
    assert!(
        kept.windows(torn.len()).any(|w| w == torn),
        "torn bytes not kept"
    );
    h.send(Control::Resume {
        parameters: BTreeMap::new(),
    })
    .expect("resume");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("ends");
    assert_eq!(end.state, RolloutState::Completed, "{:#?}", end.lines());
    env.settle(target.stack.as_ref().expect("stack")).await;
    env.delete(&target).await;
    sim.shutdown().await;
}

// ---- The same, as an operator meets it: the `caldera` binary in another process. ----

/// `caldera` with the simulator's clouds.yaml, the test's journal and an empty hooks file;
/// `fsize` caps the size of any file it writes (RLIMIT_FSIZE, SIGXFSZ ignored): its
/// journal fills up mid-rollout the way a full disk does, with a partial last write.
fn caldera(
    clouds: &Path,
    journal: &Path,
    args: &[&str],
    fsize: Option<u64>,
) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let actions = journal.with_extension("toml");
    if !actions.exists() {
        std::fs::write(&actions, "").expect("actions file");
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"));
    cmd.env("OS_CLIENT_CONFIG_FILE", clouds)
        .env("OS_CLOUD", "simcloud")
        .env("CALDERA_JOURNAL", journal)
        .env("CALDERA_ACTIONS_CONFIG", &actions)
        .env("XDG_STATE_HOME", journal.parent().expect("dir"))
        .args(args);
    if let Some(limit) = fsize {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd.output().expect("run caldera")
}

async fn caldera_async(
    clouds: &Path,
    journal: &Path,
    args: &[&str],
    fsize: Option<u64>,
) -> (Option<i32>, String, String) {
    let (c, j) = (clouds.to_path_buf(), journal.to_path_buf());
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        caldera(&c, &j, &a, fsize)
    })
    .await
    .expect("caldera task");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The names after `label` up to the next `;` or line end in an error message.
fn names_after(text: &str, label: &str) -> Vec<String> {
    let Some((_, rest)) = text.split_once(label) else {
        return Vec::new();
    };
    let list = rest.split([';', '\n']).next().unwrap_or("").trim();
    if list == "none" {
        return Vec::new();
    }
    list.split(", ").map(|s| s.trim().to_string()).collect()
}

/// `caldera rollout start` whose journal fills up mid-rollout (the file size limit): it
/// stops with rc 3 and an error saying which members were and were not released; Heat
/// updates none of the others; the journal still reads (the partial line of the failed
/// write was cut off again); `caldera rollout resume` finishes the rollout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_rollout_whose_journal_fills_up_stops_and_resumes() {
    let (sim, env) = sim_env(50.0).await;
    let target = env.create("full", 8).await;
    let dir = tempfile::tempdir().expect("dir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("clouds.yaml");
    let journal = dir.path().join("journal.jsonl");
    let (code, stdout, stderr) = caldera_async(
        &clouds,
        &journal,
        &[
            "rollout",
            "start",
            "full",
            "--image",
            "img-v2",
            "--yes",
            "--poll-secs",
            "0.05",
        ],
        Some(6000),
    )
    .await;
    println!("{stderr}");
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("File too large"), "{stderr}");
    assert!(stderr.contains("nothing more is sent to Heat"), "{stderr}");
    let released = names_after(&stderr, "released or done: ");
    let held = names_after(&stderr, "not released (held on their hooks): ");
    assert_eq!(released.len() + held.len(), 8, "{stderr}");
    assert!(!held.is_empty(), "{stderr}");
    tokio::time::sleep(env.poll * 40).await;
    let images = env.member_images(&target).await;
    for m in &held {
        assert_eq!(images[m], "img-v1", "{m} updated after the stop");
    }
    let j = Journal::open(&journal);
    let before = j.read_all().expect("the journal reads after the failure");
    assert!(before.iter().any(|e| e.action == "rollout.start"));

    let (code, stdout, stderr) = caldera_async(
        &clouds,
        &journal,
        &["rollout", "resume", "full", "--poll-secs", "0.05"],
        None,
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains(": completed"), "{stdout}");
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v2"), "{images:?}");
    let after = j.read_all().expect("journal reads");
    assert!(after.len() > before.len());
    // A failed append (part of a line written before the disk filled) is cut off again:
    // nothing torn was left for anyone to set aside.
    assert!(
        !j.torn_path().exists(),
        "{}",
        std::fs::read_to_string(j.torn_path()).unwrap_or_default()
    );
    sim.shutdown().await;
}

/// `caldera rollout pause` against an engine in another process (here: this test's):
/// through a torn journal it still lands and is acknowledged (rc 0, "honoured"); with no
/// engine left it says so (rc 4); with a line that is not an entry it fails naming the
/// line (rc 1) and `caldera journal --repair` sets it aside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_pause_is_acknowledged_or_fails_loudly() {
    let (sim, env) = sim_env(50.0).await;
    let target = env.create("ack", 8).await;
    let dir = tempfile::tempdir().expect("dir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("clouds.yaml");
    let journal = env.ctx.journal.path().to_path_buf();
    let members = env.member_names(&target).await;
    // A gate after each node keeps the rollout going while the command starts.
    let options = RolloutOptions {
        gate_wait_ms: 500,
        ..RolloutOptions::default()
    };
    let plan = env.plan(&target, &members, "img-v2", options, &[]);
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("a member done");
    // A writer died mid-line.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .expect("open")
        .write_all(b"{\"time\":\"2026-11-23T1")
        .expect("torn");
    let (code, _, stderr) = caldera_async(
        &clouds,
        &journal,
        &["rollout", "pause", "ack", "--wait-secs", "30"],
        None,
    )
    .await;
    println!("{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("rollout.pause honoured"), "{stderr}");
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("paused");
    assert!(paused.done < 8, "{:?}", paused.lines());
    Journal::open(&journal).read_all().expect("journal reads");

    // Nobody drives it any more: the request is queued, not honoured, and that is said.
    h.kill().await;
    let (code, _, stderr) = caldera_async(
        &clouds,
        &journal,
        &["rollout", "pause", "ack", "--wait-secs", "1"],
        None,
    )
    .await;
    println!("{stderr}");
    assert_eq!(code, Some(4), "{stderr}");
    assert!(stderr.contains("no engine acknowledged"), "{stderr}");

    // A line that is not an entry: the command cannot know the rollout's state, it fails.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .expect("open")
        .write_all(b"garbage\n")
        .expect("garbage");
    let lines = std::fs::read_to_string(&journal)
        .expect("read")
        .lines()
        .count();
    let (code, _, stderr) = caldera_async(
        &clouds,
        &journal,
        &["rollout", "pause", "ack", "--wait-secs", "1"],
        None,
    )
    .await;
    println!("{stderr}");
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("line {lines} ")),
        "line {lines}: {stderr}"
    );
    // The audit view reads on: the bad line skipped and named, every entry shown.
    let (code, stdout, stderr) = caldera_async(&clouds, &journal, &["journal"], None).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("line {lines} ")) && stderr.contains("skipped"),
        "{stderr}"
    );
    assert!(stdout.contains("rollout.request.pause"), "{stdout}");
    let (code, _, stderr) = caldera_async(&clouds, &journal, &["journal", "--repair"], None).await;
    println!("{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains(&format!("line {lines} ")), "{stderr}");
    Journal::open(&journal).read_all().expect("journal reads");
    sim.shutdown().await;
}

/// `--actions-config` naming a file that does not exist is an error before anything is
/// planned or sent; the plan lists the hooks that will run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_named_missing_hooks_file_is_an_error_and_the_plan_lists_hooks() {
    let (sim, env) = sim_env(50.0).await;
    let target = env.create("hk", 2).await;
    let dir = tempfile::tempdir().expect("dir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("clouds.yaml");
    let journal = dir.path().join("journal.jsonl");
    let typo = dir.path().join("typo.toml");
    let typo_s = typo.to_str().expect("utf-8");
    let (code, stdout, stderr) = caldera_async(
        &clouds,
        &journal,
        &[
            "rollout",
            "start",
            "hk",
            "--image",
            "img-v2",
            "--yes",
            "--actions-config",
            typo_s,
        ],
        None,
    )
    .await;
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("typo.toml") && stderr.contains("no such actions file"),
        "{stderr}"
    );
    let d = env
        .heat
        .get_stack(target.stack.as_ref().expect("stack"), false)
        .await
        .expect("stack");
    assert_eq!(d.summary.status.raw, "CREATE_COMPLETE");

    std::fs::write(
        &typo,
        "[hooks]\ntimeout_secs = 30\npre_node = \"echo drain $CALDERA_NODE_NAME\"\n",
    )
    .expect("hooks");
    let (code, stdout, stderr) = caldera_async(
        &clouds,
        &journal,
        &[
            "rollout",
            "start",
            "hk",
            "--image",
            "img-v2",
            "--yes",
            "--poll-secs",
            "0.05",
            "--actions-config",
            typo_s,
        ],
        None,
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("hooks (each killed after 30s):"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pre_node   echo drain $CALDERA_NODE_NAME"),
        "{stdout}"
    );
    let start = Journal::open(&journal)
        .read_all()
        .expect("journal")
        .into_iter()
        .find(|e| e.action == "rollout.start")
        .expect("start entry");
    assert!(
        start.plan.iter().any(|l| l.contains("pre_node")),
        "{:?}",
        start.plan
    );
    sim.shutdown().await;
}
