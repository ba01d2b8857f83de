//! The journal cannot lie or be lost, on the simulator: a rollout whose journal becomes
//! unwritable, unreadable (a line that is not an entry) or torn, at several points of the
//! rollout. Each case asserts that nothing changed in the cloud after the failure (the
//! members the engine had not released are still on the old image, long after), what the
//! error says, and that the journal reads whole again after the repair — then the rollout
//! is resumed and finishes.

#[path = "actions/scenarios.rs"]
mod scenarios;

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::cli::connect::simulator_cloud;
use caldera::drivers::NodeGroupTarget;
use caldera::journal::{Journal, Outcome};
use caldera::lifecycle::HookSet;
use caldera::rollout::engine::{self, RolloutHandle};
use caldera::rollout::{Control, NodePhase, RolloutOptions, RolloutPlan, RolloutState};
use caldera::sim::{self, SimHandle, SimOptions};
use scenarios::Env;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

async fn sim_env() -> (SimHandle, Env) {
    let sim = sim::start(SimOptions::fast("empty", 50.0))
        .await
        .expect("simulator starts");
    let conn = CloudConnection::from_cloud(&simulator_cloud(&sim), &ConnectOptions::default())
        .await
        .expect("connect to the simulator");
    let env = Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    );
    (sim, env)
}

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
    let h = engine::start(
        env.heat.clone(),
        env.ctx.clone(),
        plan.clone(),
        env.engine_options(HookSet::default()),
        None,
    )
    .await
    .expect("start");
    (plan, h)
}

/// The fault after `done` members are done: the engine pauses before its next release with
/// an error that names the journal and what was and was not released; Heat does nothing
/// more; once the journal is mended, a resume finishes the rollout.
async fn fault_mid_rollout(fault: Fault, done: usize, cluster: &str) {
    let (sim, env) = sim_env().await;
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
    let (sim, env) = sim_env().await;
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
    let (sim, env) = sim_env().await;
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
