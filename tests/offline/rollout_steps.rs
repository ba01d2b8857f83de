//! Step injection on the simulator: at every step of the rollout engine (before a release,
//! a member updating, the gate, the pre/post hooks, after a failure, a journal write) a
//! control, a kill, a concurrent start, a journal that can no longer be written, or another
//! machine's start that replaces the update in Heat arrives, and the invariants are checked:
//!
//! - nothing is released after a pause or an abort is recorded, nor a skipped member after
//!   its skip (from the journal's own order);
//! - each member is released at most once per rollout (the failed one once more after the
//!   resume that retries it);
//! - one driver: a start during the rollout is refused with who holds it, whatever the step;
//! - the journal always parses, and every member Heat updated has its release journaled;
//! - a journal that breaks stops the rollout (paused, saying so) before its next change;
//! - the end matches Heat (images, stack status).
//!
//! Plus: 20 pairs of starts at the same moment, exactly one of each pair proceeds.

use crate::support::scenarios;
use crate::support::sim_group;

use crate::support::sim_group::sim_env;
use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::api::heat::StackAction;
use caldera::drivers::NodeGroupTarget;
use caldera::journal::{Entry, Journal, Outcome};
use caldera::lifecycle::HookSet;
use caldera::rollout::engine::{self, EngineStep, Probe, StepProbe};
use caldera::rollout::{AbortMode, Control, RolloutOptions, RolloutPlan, RolloutState};
use caldera::service::ErrorKind;
use caldera::sim::{self, SimOptions};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use scenarios::Env;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

const MEMBERS: u32 = 4;
/// The simulator's clock: a member update takes 10 s / SPEED.
const SPEED: f64 = 100.0;
/// The member that fails in the after-failure cases.
const FAIL: &str = "2";

#[derive(Debug, Clone)]
enum Inject {
    /// A request through the journal, as another process sends it.
    Request(Control),
    /// The engine's task dropped at that point, as if the process died; then a new engine
    /// takes the rollout over.
    Kill,
    /// A second start of the same node group while the engine is at that point.
    ConcurrentStart,
    /// The journal becomes unusable at that point (a directory where the file was): the
    /// engine must stop before its next change to the cloud, and resume once it is mended.
    JournalFault,
    /// Another machine's start wins the race at that point: its PATCH (with its own
    /// marker) replaces this rollout's update in Heat. The engine must end as superseded
    /// and release nothing more.
    Superseded,
}

impl Inject {
    fn name(&self) -> String {
        match self {
            Inject::Request(Control::Pause) => "pause".into(),
            Inject::Request(Control::Resume { .. }) => "resume".into(),
            Inject::Request(Control::Skip(m)) => format!("skip {m}"),
            Inject::Request(Control::Abort(m)) => format!("abort {m:?}"),
            Inject::Kill => "kill".into(),
            Inject::ConcurrentStart => "concurrent start".into(),
            Inject::JournalFault => "journal fault".into(),
            Inject::Superseded => "superseded".into(),
        }
    }
}

/// Acts once, at the `nth` time the engine reaches `step`.
struct Injector {
    step: EngineStep,
    nth: usize,
    seen: AtomicUsize,
    inject: Inject,
    env_ctx: caldera::drivers::apply::ActionContext,
    heat: caldera::api::heat::HeatClient,
    plan: RolloutPlan,
    fired: Arc<Notify>,
    /// What the concurrent start answered.
    second_start: SecondStart,
    /// Releases journaled when another machine's update replaced this one.
    released_at_injection: Arc<Mutex<Option<usize>>>,
}

/// What the concurrent start answered: proceeded, or refused with its kind and message.
type SecondStart = Arc<Mutex<Option<Result<(), (ErrorKind, String)>>>>;

impl StepProbe for Injector {
    fn at(&self, step: EngineStep, _member: Option<&str>) -> BoxFuture<'static, ()> {
        if step != self.step || self.seen.fetch_add(1, Ordering::SeqCst) + 1 != self.nth {
            return futures::future::ready(()).boxed();
        }
        let fired = self.fired.clone();
        match self.inject.clone() {
            Inject::Request(c) => {
                engine::request(&self.env_ctx, &self.plan, &c).expect("request written");
                fired.notify_one();
                futures::future::ready(()).boxed()
            }
            Inject::JournalFault => {
                break_journal(&self.env_ctx.journal);
                fired.notify_one();
                futures::future::ready(()).boxed()
            }
            Inject::Superseded => {
                let (heat, stack, ctx) = (
                    self.heat.clone(),
                    self.plan.stack.clone(),
                    self.env_ctx.clone(),
                );
                let (id, at) = (self.plan.id.clone(), self.released_at_injection.clone());
                async move {
                    // What this rollout had released when the other start won.
                    let released = ctx
                        .journal
                        .rollout_entries(&id)
                        .map(|es| releases(&es).len())
                        .unwrap_or(0);
                    *at.lock().unwrap() = Some(released);
                    let shown = heat.get_stack(&stack, false).await.expect("stack");
                    let update = caldera::api::heat::StackUpdate {
                        tags: Some(caldera::rollout::plan::with_marker(
                            &shown.tags,
                            &caldera::rollout::plan::marker_tag("r-other", "elsewhere"),
                            &[],
                        )),
                        existing: true,
                        ..Default::default()
                    };
                    heat.update_stack(&stack, &update)
                        .await
                        .expect("the other machine's PATCH");
                    fired.notify_one();
                }
                .boxed()
            }
            Inject::Kill => {
                fired.notify_one();
                // The test drops the task while it waits here.
                futures::future::pending().boxed()
            }
            Inject::ConcurrentStart => {
                let (heat, ctx, out) = (
                    self.heat.clone(),
                    self.env_ctx.clone(),
                    self.second_start.clone(),
                );
                let mut plan = self.plan.clone();
                plan.id = format!("{}-second", plan.id);
                plan.image = "img-other".into();
                async move {
                    let r = engine::start(heat, ctx, plan, Default::default(), None).await;
                    let r = match r {
                        Ok(h) => {
                            h.kill().await;
                            Ok(())
                        }
                        Err(e) => Err((e.kind, e.message)),
                    };
                    *out.lock().unwrap() = Some(r);
                    fired.notify_one();
                }
                .boxed()
            }
        }
    }
}

/// Where the journal waits while a directory stands in its place.
fn saved_journal(journal: &Journal) -> std::path::PathBuf {
    journal.path().with_extension("saved")
}

fn break_journal(journal: &Journal) {
    let p = journal.path();
    std::fs::rename(p, saved_journal(journal)).expect("set the journal aside");
    std::fs::create_dir(p).expect("a directory in its place");
}

/// Puts the journal back if it is broken; whether it was.
fn mend_journal(journal: &Journal) -> bool {
    let p = journal.path();
    if !p.is_dir() {
        return false;
    }
    std::fs::remove_dir(p).expect("rmdir");
    std::fs::rename(saved_journal(journal), p).expect("restore the journal");
    true
}

fn hooks() -> HookSet {
    HookSet {
        pre_node: Some("true".into()),
        post_node: Some("true".into()),
        timeout_secs: Some(20),
        ..Default::default()
    }
}

fn releases(entries: &[Entry]) -> Vec<&Entry> {
    entries
        .iter()
        .filter(|e| e.action == "rollout.release" && e.outcome == Outcome::Started)
        .collect()
}

/// No release after a recorded pause or abort (until a resume), nor of a member after its
/// skip: in the journal's own order.
fn assert_no_release_after_stop(case: &str, entries: &[Entry]) {
    let mut stopped: Option<&str> = None;
    let mut skipped: BTreeSet<String> = BTreeSet::new();
    let mut aborted = false;
    for e in entries {
        let member = e.target.rsplit('/').next().unwrap_or("").to_string();
        match e.action.as_str() {
            "rollout.request.pause" | "rollout.pause" => stopped = Some("pause"),
            "rollout.request.abort" | "rollout.aborting" => aborted = true,
            // A resume the engine refused (asked before the pause it would lift) lifts
            // nothing.
            "rollout.resume" if e.outcome == Outcome::Ok => stopped = None,
            "rollout.request.skip" | "rollout.skip" => {
                skipped.insert(member.clone());
            }
            "rollout.release" if e.outcome == Outcome::Started => {
                assert!(!aborted, "{case}: {} released after the abort", e.target);
                assert!(
                    stopped.is_none(),
                    "{case}: {} released after a recorded {}",
                    e.target,
                    stopped.unwrap_or("")
                );
                assert!(
                    !skipped.contains(&member),
                    "{case}: {} released after its skip",
                    e.target
                );
            }
            _ => {}
        }
    }
}

struct CaseResult {
    name: String,
    end: String,
    secs: f64,
}

async fn run_case(
    heat: caldera::api::heat::HeatClient,
    n: usize,
    step: EngineStep,
    nth: usize,
    inject: Inject,
) -> CaseResult {
    let t0 = std::time::Instant::now();
    let env = Env::new(
        heat.clone(),
        Duration::from_millis(100),
        Duration::from_secs(90),
        0,
    );
    let cluster = format!("st{n}");
    let name = format!("{step:?}#{nth} + {}", inject.name());
    let target: NodeGroupTarget = env.create(&cluster, MEMBERS).await;
    let members = env.member_names(&target).await;
    let fail = step == EngineStep::AfterFailure;
    let extra: &[(&str, &str)] = if fail {
        &[("node_fail_index", FAIL)]
    } else {
        &[]
    };
    let plan = env.plan(
        &target,
        &members,
        "img-v2",
        RolloutOptions {
            gate_wait_ms: 200,
            ..Default::default()
        },
        extra,
    );
    let fired = Arc::new(Notify::new());
    let second_start: SecondStart = Arc::new(Mutex::new(None));
    let released_at_injection = Arc::new(Mutex::new(None));
    let injector = Injector {
        step,
        nth,
        seen: AtomicUsize::new(0),
        inject: inject.clone(),
        env_ctx: env.ctx.clone(),
        heat: heat.clone(),
        plan: plan.clone(),
        fired: fired.clone(),
        second_start: second_start.clone(),
        released_at_injection: released_at_injection.clone(),
    };
    let mut options = env.engine_options(hooks());
    options.probe = Probe(Some(Arc::new(injector)));
    let h = engine::start(heat.clone(), env.ctx.clone(), plan.clone(), options, None)
        .await
        .unwrap_or_else(|e| panic!("{name}: start: {e}"));
    tokio::time::timeout(env.timeout, fired.notified())
        .await
        .unwrap_or_else(|_| panic!("{name}: the engine never reached the step"));

    let fix: caldera::parameter_value::ParameterValues = [(
        "node_fail_index".to_string(),
        caldera::parameter_value::ParameterValue::json((-1).into()),
    )]
    .into_iter()
    .collect();
    let mut h = match inject {
        Inject::Kill => {
            h.kill().await;
            // A new process: only the journal and Heat.
            let found = engine::find_active(&env.ctx.journal, &target.label())
                .expect("journal")
                .expect("still active after the kill");
            assert_eq!(found.id, plan.id);
            // The killed task's lock is released as its file closes, but a hook process
            // another case forks at that moment holds a copy of the descriptor until it
            // execs (close-on-exec): a few tries, as a restarted operator would.
            let mut tries = 0;
            loop {
                match engine::reattach(
                    heat.clone(),
                    env.ctx.clone(),
                    found.clone(),
                    env.engine_options(hooks()),
                    vec![resume_for(&heat, &plan, &fix).await],
                    engine::TakeOver::ThisMachine,
                )
                .await
                {
                    Ok(h) => break h,
                    Err(e) if e.kind == ErrorKind::Refused && tries < 20 => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Err(e) => panic!("{name}: reattach: {e}"),
                }
            }
        }
        _ => h,
    };
    if let Inject::ConcurrentStart = inject {
        match second_start.lock().unwrap().clone() {
            Some(Err((ErrorKind::Refused, msg))) => {
                assert!(msg.contains("already has a driver"), "{name}: {msg}");
                assert!(msg.contains(&plan.id), "{name}: names the holder: {msg}");
            }
            other => panic!("{name}: the second start was not refused: {other:?}"),
        }
    }
    // Settle: a pause (asked, the failure's or the journal's) is resumed, with the failure
    // fixed and the journal mended.
    let mut resumed = 0;
    let mut journal_pauses = 0;
    let end = loop {
        let s = tokio::time::timeout(
            env.timeout,
            h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
        )
        .await
        .unwrap_or_else(|_| panic!("{name}: neither paused nor ended: {:#?}", h.status()));
        if mend_journal(&env.ctx.journal) {
            // The engine stopped on the broken journal, before any further change, and
            // said so. At the end's PATCH the change was journaled before the journal
            // broke: it is sent, and only the end's own entries are lost.
            match &s.state {
                RolloutState::Paused { reason } => {
                    assert!(reason.contains("journal"), "{name}: paused for {reason}");
                    journal_pauses += 1;
                }
                RolloutState::Completed if step == EngineStep::Unhook => {
                    // Heat's facts say it is over, whatever entries the journal lacks
                    // (was: "closing: hooks still in", with the hooks out).
                    let status = engine::observe_status(&heat, &env.ctx.journal, &plan)
                        .await
                        .expect("status");
                    assert_eq!(
                        status.state,
                        RolloutState::Completed,
                        "{name}: {:#?}",
                        status.lines()
                    );
                }
                other => panic!("{name}: the broken journal did not pause it: {other:?}"),
            }
        }
        if s.state.is_final() {
            break s;
        }
        // Paused: nothing is released any more, however long we look.
        let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
        let before = releases(&journal).len();
        tokio::time::sleep(env.poll * 6).await;
        let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
        assert_eq!(
            before,
            releases(&journal).len(),
            "{name}: released while paused"
        );
        assert!(resumed < 3, "{name}: paused again and again: {:?}", s.state);
        resumed += 1;
        if h.send(resume_for(&heat, &plan, &fix).await).is_err() {
            // Ended meanwhile (an abort injected while it was paused).
            continue;
        }
        // The status still says paused until the engine applies it.
        tokio::time::timeout(
            env.timeout,
            h.wait_for(|s| !matches!(s.state, RolloutState::Paused { .. })),
        )
        .await
        .expect("resumed");
    };

    // Invariants.
    let journal = env.ctx.journal.read_all().expect("the journal parses");
    let ours: Vec<Entry> = journal
        .into_iter()
        .filter(|e| e.rollout.as_deref() == Some(plan.id.as_str()))
        .collect();
    assert_no_release_after_stop(&name, &ours);
    // A resume asked the moment before a node failed is no answer to the failure's pause:
    // refused, and the rollout went on only after the resume the settle loop sent.
    if fail && matches!(inject, Inject::Request(Control::Resume { .. })) {
        assert!(
            ours.iter().any(|e| e.action == "rollout.resume"
                && matches!(&e.outcome, Outcome::Refused { error } if error.contains("asked before"))),
            "{name}: the early resume was not refused"
        );
    }
    for m in &members {
        let n = ours
            .iter()
            .filter(|e| {
                e.action == "rollout.release"
                    && e.outcome == Outcome::Ok
                    && e.target.ends_with(&format!("/{m}"))
            })
            .count();
        let most = if fail && m == FAIL { 2 } else { 1 };
        assert!(n <= most, "{name}: member {m} released {n} times");
    }
    if let (Inject::JournalFault, false) = (&inject, step == EngineStep::Unhook) {
        assert_eq!(
            journal_pauses, 1,
            "{name}: the broken journal did not stop the rollout once"
        );
    }
    // The end matches Heat.
    let stack = target.stack.clone().expect("stack");
    // Left on hooks (an abort that only stops releasing, skipped members): Heat's update
    // stays in progress; otherwise Heat settles.
    // Superseded once every member was done, at the end's PATCH: the rollout completed,
    // and its hooks are the other update's now (that PATCH put them), not taken out.
    let superseded_at_end = matches!(
        (&inject, &end.state),
        (Inject::Superseded, RolloutState::Completed)
    ) && step == EngineStep::Unhook;
    let superseded = matches!(
        (&inject, &end.state),
        (Inject::Superseded, RolloutState::Failed { .. })
    ) || superseded_at_end;
    // (An abort that only stops releasing, asked once every member is done, at the end's
    // PATCH, has nothing left to stop: the rollout completes.)
    let left_on_hooks = matches!(end.state, RolloutState::CompletedWithSkips)
        || superseded
        || matches!(
            (&inject, &end.state),
            (
                Inject::Request(Control::Abort(AbortMode::LeavePaused)),
                RolloutState::Aborted { .. }
            )
        );
    let settled = if left_on_hooks {
        heat.get_stack(&stack, false)
            .await
            .expect("stack")
            .summary
            .status
            .raw
    } else {
        env.settle(&stack).await
    };
    let images = env.member_images(&target).await;
    let at_new = images.values().filter(|i| *i == "img-v2").count();
    // Nothing reached the cloud before its journal entry: every member Heat updated has a
    // release recorded as started.
    for (m, image) in &images {
        let recorded = ours.iter().any(|e| {
            e.action == "rollout.release"
                && e.outcome == Outcome::Started
                && e.target.ends_with(&format!("/{m}"))
        });
        assert!(
            image != "img-v2" || recorded,
            "{name}: member {m} was updated with no release in the journal"
        );
    }
    match (&inject, &end.state) {
        // After a failure Heat's update is over (UPDATE_FAILED): a cancel has nothing to
        // cancel, and the abort says so and how to finish.
        (Inject::Request(Control::Abort(mode)), RolloutState::Aborted { reason })
            if fail && *mode != AbortMode::LeavePaused =>
        {
            assert!(reason.contains("nothing to cancel"), "{name}: {reason}");
            assert_eq!(settled, "UPDATE_FAILED", "{name}");
        }
        (
            Inject::Request(Control::Abort(AbortMode::CancelUpdate)),
            RolloutState::Aborted { reason },
        ) => {
            assert!(reason.starts_with("rolled back"), "{name}: {reason}");
            // Heat's rollback stores the old environment again: no hook left to take out.
            let said = end.hooks_left.clone().unwrap_or_default();
            assert_eq!(settled, "ROLLBACK_COMPLETE", "{name}: {said}");
            assert!(said.starts_with("none left"), "{name}: {said}");
            assert_eq!(at_new, 0, "{name}: {images:?}");
        }
        (
            Inject::Request(Control::Abort(AbortMode::CancelWithoutRollback)),
            RolloutState::Aborted { reason },
        ) => {
            assert!(reason.starts_with("cancelled"), "{name}: {reason}");
            assert_eq!(settled, "UPDATE_FAILED", "{name}");
            assert_eq!(
                end.done, at_new,
                "{name}: status says {} done, Heat {at_new}",
                end.done
            );
        }
        (
            Inject::Request(Control::Abort(AbortMode::LeavePaused)),
            RolloutState::Aborted { reason },
        ) => {
            // Over Heat's update (a member failed first) nothing waits on a hook: the
            // hooks left in the environment are named with the command that takes them out.
            if reason.contains("Heat's update is over") {
                assert!(settled.ends_with("_FAILED"), "{name}: {settled}: {reason}");
                assert!(reason.contains("`caldera heat unhook "), "{name}: {reason}");
            } else {
                assert!(reason.contains("wait on their hooks"), "{name}: {reason}");
            }
            assert!(
                at_new < members.len(),
                "{name}: every member updated after the abort"
            );
            assert_eq!(
                end.done, at_new,
                "{name}: status says {} done, Heat {at_new}",
                end.done
            );
        }
        (Inject::Request(Control::Skip(m)), RolloutState::CompletedWithSkips) => {
            assert_eq!(
                images[m], "img-v1",
                "{name}: the skipped member was updated"
            );
            assert_eq!(at_new, members.len() - 1, "{name}: {images:?}");
        }
        (Inject::Request(Control::Skip(_)), RolloutState::Completed) => {
            // The skip came after that member was released: it has no effect.
            assert_eq!(at_new, members.len(), "{name}: {images:?}");
        }
        (Inject::Superseded, RolloutState::Failed { reason }) => {
            assert!(reason.contains("superseded"), "{name}: {reason}");
            assert!(
                reason.contains("rollout r-other from elsewhere"),
                "{name}: {reason}"
            );
            // At most the release already under way when the other PATCH landed (its
            // intent journaled, its signal in flight) came after it; none was decided after.
            let at = released_at_injection.lock().unwrap().expect("injected");
            let after = releases(&ours).len() - at;
            assert!(
                after <= 1,
                "{name}: {after} released after being superseded"
            );
        }
        (Inject::Superseded, RolloutState::Completed) if superseded_at_end => {
            let said = end.hooks_left.clone().unwrap_or_default();
            assert!(
                said.starts_with(
                    "left to the update that superseded this rollout (rollout r-other"
                ),
                "{name}: {said}"
            );
            assert_eq!(at_new, members.len(), "{name}: {images:?}");
            // Its end's PATCH was not sent: the other start's marker stays (was: taken off
            // with this rollout's, and that update's hooks taken out).
            let tags = heat.get_stack(&stack, false).await.expect("stack").tags;
            assert!(
                tags.iter()
                    .any(|t| t.starts_with("caldera-rollout=r-other")),
                "{name}: {tags:?}"
            );
            let unsent = ours.iter().any(|e| {
                e.action == "rollout.unhook"
                    && matches!(&e.outcome, Outcome::Failed { error } if error.starts_with("not sent"))
            });
            assert!(unsent, "{name}: the unsent PATCH is journaled as not sent");
        }
        (_, RolloutState::Completed) => {
            assert_eq!(settled, "UPDATE_COMPLETE", "{name}");
            assert_eq!(at_new, members.len(), "{name}: {images:?}");
            assert_eq!(end.done, members.len(), "{name}");
        }
        (_, other) => panic!("{name}: ended {other:?}\n{:#?}", end.lines()),
    }
    // Nothing left behind: once Heat's update is over and every member is what the stored
    // stack says (completed, rolled back), no hook of the rollout is in the stack's
    // environment; at any other ending the rollout says why its hooks stay.
    let hooks = heat
        .get_environment_hooks(&stack)
        .await
        .expect("environment");
    let said = end.hooks_left.clone().unwrap_or_default();
    let clean = (matches!(end.state, RolloutState::Completed) && !superseded_at_end)
        || matches!(&end.state, RolloutState::Aborted { reason } if reason.starts_with("rolled back"));
    if clean {
        assert!(
            hooks.paths_with("pre-update").is_empty(),
            "{name}: hooks left after {:?}: {hooks:?} ({said})",
            end.state
        );
    } else {
        assert!(
            !said.is_empty(),
            "{name}: hooks neither taken out nor explained"
        );
    }
    // The abort is journaled as one, not as a failure.
    if let RolloutState::Aborted { .. } = end.state {
        let last = ours.last().expect("entries");
        assert_eq!(
            (last.action.as_str(), &last.outcome),
            ("rollout.abort", &Outcome::Ok),
            "{name}"
        );
    }
    // The driver lock went with the engine: a new start is not refused for it.
    assert!(matches!(
        caldera::rollout::control::driver(&env.ctx, &plan),
        caldera::rollout::lock::LockState::Free(_)
    ));
    if left_on_hooks {
        // (The other machine's update is its driver's business, wherever it is.)
        if !fail && !superseded {
            assert_eq!(settled, "UPDATE_IN_PROGRESS", "{name}");
        }
        let _ = heat
            .action(&stack, StackAction::CancelWithoutRollback)
            .await;
        env.settle(&stack).await;
    }
    env.delete(&target).await;
    CaseResult {
        name,
        end: end.state.label(),
        secs: t0.elapsed().as_secs_f64(),
    }
}

fn injections() -> Vec<Inject> {
    vec![
        Inject::Request(Control::Pause),
        Inject::Request(Control::Resume {
            parameters: BTreeMap::new(),
        }),
        Inject::Request(Control::Skip("3".into())),
        Inject::Request(Control::Abort(AbortMode::LeavePaused)),
        Inject::Request(Control::Abort(AbortMode::CancelUpdate)),
        Inject::Request(Control::Abort(AbortMode::CancelWithoutRollback)),
        Inject::Kill,
        Inject::ConcurrentStart,
        Inject::JournalFault,
        Inject::Superseded,
    ]
}

/// Cases run at once (each its own stacks in one simulator).
const CASES_AT_ONCE: usize = 24;

/// (step, at which occurrence)
fn steps() -> Vec<(EngineStep, usize)> {
    vec![
        (EngineStep::BeforeRelease, 2),
        (EngineStep::MemberUpdating, 2),
        (EngineStep::GateWait, 1),
        (EngineStep::PreHook, 2),
        (EngineStep::PostHook, 1),
        (EngineStep::AfterFailure, 1),
        (EngineStep::JournalWrite, 7),
        (EngineStep::Unhook, 1),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_every_control_keeps_the_invariants() {
    let sim = sim::start(SimOptions::fast("empty", SPEED))
        .await
        .expect("simulator starts");
    let cloud = sim.cloud_config();
    let mut cases = Vec::new();
    for (step, nth) in steps() {
        for inject in injections() {
            cases.push((step, nth, inject));
        }
    }
    // `ROLLOUT_STEP_CASE=BeforeRelease` (a substring of "Step#n + injection") runs fewer.
    if let Ok(only) = std::env::var("ROLLOUT_STEP_CASE") {
        cases.retain(|(step, nth, inject)| {
            format!("{step:?}#{nth} + {}", inject.name()).contains(&only)
        });
    }
    let total = cases.len();
    // A case spends nearly all its time waiting on the simulator's clock and the engine's
    // polls (70 cases: under 4 s of CPU), so many run at once. Each is an operator's own
    // process, with its own connection and request budget: on one shared budget (25
    // requests a second) the cases queued behind each other's polls.
    let results: Vec<CaseResult> = futures::stream::iter(cases.into_iter().enumerate().map(
        |(n, (step, nth, inject))| {
            let cloud = cloud.clone();
            tokio::spawn(async move {
                let conn = CloudConnection::from_cloud(&cloud, &ConnectOptions::default())
                    .await
                    .expect("connect to the simulator");
                run_case(conn.heat.clone(), n, step, nth, inject).await
            })
        },
    ))
    .buffer_unordered(CASES_AT_ONCE)
    .map(|r| r.expect("case task"))
    .collect()
    .await;
    let mut results = results;
    results.sort_by(|a, b| a.name.cmp(&b.name));
    for r in &results {
        eprintln!("covered: {:<40} {:>5.1}s -> {}", r.name, r.secs, r.end);
    }
    eprintln!(
        "covered {} cases: {} steps x {} injections",
        results.len(),
        steps().len(),
        injections().len()
    );
    assert_eq!(results.len(), total);
    sim.shutdown().await;
}

/// One start of a pair: the plan and the context (journal, locks) it starts from.
type PairStart = (RolloutPlan, caldera::drivers::apply::ActionContext);

/// Each pair's two starts at the same moment (all pairs at once); their plans and results.
async fn start_pairs(
    (conn_a, conn_b): (&CloudConnection, &CloudConnection),
    options: caldera::rollout::engine::EngineOptions,
    pairs: impl Iterator<Item = (PairStart, PairStart)>,
) -> Vec<(
    RolloutPlan,
    RolloutPlan,
    caldera::service::ServiceResult<caldera::rollout::engine::RolloutHandle>,
    caldera::service::ServiceResult<caldera::rollout::engine::RolloutHandle>,
)> {
    let starts = pairs.map(|((a, ctx_a), (b, ctx_b))| {
        let (heat_a, heat_b) = (conn_a.heat.clone(), conn_b.heat.clone());
        let options = options.clone();
        async move {
            let (ra, rb) = scenarios::start_both(
                (&heat_a, &heat_b),
                options,
                (a.clone(), ctx_a),
                (b.clone(), ctx_b),
            )
            .await;
            (a, b, ra, rb)
        }
    });
    futures::future::join_all(starts).await
}

/// A scenario environment for the pair tests (its own journal directory).
fn pair_env(conn: &CloudConnection) -> Env {
    Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    )
}

/// 20 node groups, two starts of each at the same moment (different images, separate
/// journal handles on one file, as two processes): exactly one of each pair proceeds, the
/// other is refused naming the holder, and Heat got one PATCH per group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_pairs_of_concurrent_starts_one_proceeds_each_time() {
    let (sim, conn) = sim_group::connected(SimOptions::fast("empty", SPEED)).await;
    let env = pair_env(&conn);
    let names: Vec<String> = (0..20).map(|i| format!("pair{i}")).collect();
    let targets: Vec<NodeGroupTarget> =
        futures::future::join_all(names.iter().map(|n| env.create(n, 2))).await;
    let mut pairs = Vec::new();
    for t in &targets {
        let members = env.member_names(t).await;
        let a = env.plan(t, &members, "img-a", RolloutOptions::default(), &[]);
        let b = env.plan(t, &members, "img-b", RolloutOptions::default(), &[]);
        // Another process: its own journal handle on the same file.
        let mut other = env.ctx.clone();
        other.journal = caldera::journal::Journal::open(env.ctx.journal.path());
        pairs.push((a, b, other));
    }
    let pairs = pairs
        .into_iter()
        .map(|(a, b, other)| ((a, env.ctx.clone()), (b, other)));
    // The second start of each pair is another process: its own connection.
    let other = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect to the simulator");
    let results = start_pairs(
        (&conn, &other),
        env.engine_options(HookSet::default()),
        pairs,
    )
    .await;
    let mut winners = Vec::new();
    for (a, b, ra, rb) in results {
        let label = a.target.label();
        let (win, lose, plan) = match (ra, rb) {
            (Ok(h), Err(e)) => (h, e, a),
            (Err(e), Ok(h)) => (h, e, b),
            (Ok(_), Ok(_)) => panic!("{label}: both starts proceeded"),
            (Err(x), Err(y)) => panic!("{label}: neither proceeded: {x} / {y}"),
        };
        assert!(
            lose.kind == ErrorKind::Refused
                && (lose.message.contains("already has a driver")
                    || lose.message.contains("IN_PROGRESS")),
            "{label}: {lose}"
        );
        winners.push((win, plan));
    }
    let journal = env.ctx.journal.read_all().expect("journal");
    for t in &targets {
        let patches = journal
            .iter()
            .filter(|e| e.target == t.label() && e.action == "rollout.started")
            .count();
        assert_eq!(patches, 1, "{}: {patches} PATCHes", t.label());
    }
    for (h, plan) in winners {
        let end = tokio::time::timeout(env.timeout, h.wait())
            .await
            .expect("finishes");
        assert_eq!(
            end.state,
            RolloutState::Completed,
            "{}",
            plan.target.label()
        );
        let images = env.member_images(&plan.target).await;
        assert!(images.values().all(|i| *i == plan.image), "{images:?}");
    }
    eprintln!("covered: 20 pairs of concurrent starts, one proceeded each time");
    for t in &targets {
        env.delete(t).await;
    }
    sim.shutdown().await;
}

/// The console's path: a pause sent to the engine's handle during a long gate is applied at
/// once (the gate does not run out first) and nothing more is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_during_a_long_gate_releases_nothing_more() {
    let (sim, env) = sim_env(SPEED).await;
    let target = env.create("gate", 3).await;
    let members = env.member_names(&target).await;
    let plan = env.plan(
        &target,
        &members,
        "img-v2",
        RolloutOptions {
            // Far longer than the test's timeout: only an interrupted gate lets it pass.
            gate_wait_ms: 3_600_000,
            ..Default::default()
        },
        &[],
    );
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first node done");
    h.send(Control::Pause).expect("pause");
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("the pause ends the gate's wait");
    assert_eq!(paused.done, 1);
    h.send(Control::Abort(AbortMode::CancelUpdate))
        .expect("abort");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("the abort ends the rollout");
    let RolloutState::Aborted { reason } = &end.state else {
        panic!("{:?}", end.state);
    };
    assert!(reason.starts_with("rolled back"), "{reason}");
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    assert_no_release_after_stop("gate", &journal);
    assert_eq!(
        releases(&journal).len(),
        1,
        "one node released before the pause"
    );
    let images = env.member_images(&target).await;
    assert!(
        images.values().all(|i| i == "img-v1"),
        "rolled back: {images:?}"
    );
    env.delete(&target).await;
    sim.shutdown().await;
}

/// 20 node groups, two starts of each at the same moment from two machines (journals and
/// driver locks in different directories: nothing shared but Heat). Both may pass the
/// in-progress check and both PATCH; Heat keeps the later update, whose marker is then on
/// the stack. Exactly one rollout of each pair completes (every member at its image); the
/// other is refused, or ends as superseded before releasing anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_pairs_from_two_machines_heat_keeps_one() {
    let (sim, conn) = sim_group::connected(SimOptions::fast("empty", SPEED)).await;
    // Each Env has its own directory: its own journal and driver locks, as a machine.
    let (here, there) = (pair_env(&conn), pair_env(&conn));
    let names: Vec<String> = (0..20).map(|i| format!("twin{i}")).collect();
    let targets: Vec<NodeGroupTarget> =
        futures::future::join_all(names.iter().map(|n| here.create(n, 2))).await;
    let mut pairs = Vec::new();
    for t in &targets {
        let members = here.member_names(t).await;
        let a = here.plan(t, &members, "img-a", RolloutOptions::default(), &[]);
        let b = there.plan(t, &members, "img-b", RolloutOptions::default(), &[]);
        pairs.push((a, b));
    }
    let pairs = pairs
        .into_iter()
        .map(|(a, b)| ((a, here.ctx.clone()), (b, there.ctx.clone())));
    // The second start of each pair is another process: its own connection.
    let other = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect to the simulator");
    let results = start_pairs(
        (&conn, &other),
        here.engine_options(HookSet::default()),
        pairs,
    )
    .await;
    let (mut raced, mut refused) = (0, 0);
    for (a, b, ra, rb) in results {
        let label = a.target.label();
        let mut ends = Vec::new();
        for (plan, r) in [(a, ra), (b, rb)] {
            match r {
                Ok(h) => {
                    let end = tokio::time::timeout(here.timeout, h.wait())
                        .await
                        .unwrap_or_else(|_| panic!("{label}: {} never ended", plan.id));
                    ends.push((plan, Some(end)));
                }
                Err(e) => {
                    assert_eq!(e.kind, ErrorKind::Refused, "{label}: {e}");
                    assert!(
                        e.message.contains("IN_PROGRESS")
                            || e.message.contains("superseded")
                            || e.message.contains("being prepared"),
                        "{label}: {e}"
                    );
                    ends.push((plan, None));
                }
            }
        }
        let completed: Vec<&RolloutPlan> = ends
            .iter()
            .filter(|(_, e)| {
                e.as_ref()
                    .is_some_and(|s| s.state == RolloutState::Completed)
            })
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            completed.len(),
            1,
            "{label}: {:#?}",
            ends.iter()
                .map(|(p, e)| (&p.id, e.as_ref().map(|s| s.state.label())))
                .collect::<Vec<_>>()
        );
        let winner = completed[0].clone();
        let images = here.member_images(&winner.target).await;
        assert!(
            images.values().all(|i| *i == winner.image),
            "{label}: {images:?}"
        );
        // Nothing left behind: the winner did not take the loser's hooks for the stack's.
        let left = here
            .heat
            .get_environment_hooks(&winner.stack)
            .await
            .expect("environment")
            .paths_with("pre-update");
        assert!(
            left.is_empty(),
            "{label}: hooks left after the race: {left:?}"
        );
        for (plan, end) in &ends {
            if plan.id == winner.id {
                continue;
            }
            match end {
                None => refused += 1,
                Some(s) => {
                    raced += 1;
                    assert!(
                        matches!(&s.state, RolloutState::Failed { reason } if reason.contains("superseded")),
                        "{label}: the loser ended {:?}",
                        s.state
                    );
                }
            }
            // The loser released nothing: its journal has no release.
            let env = if plan.image == "img-a" { &here } else { &there };
            let released = env
                .ctx
                .journal
                .rollout_entries(&plan.id)
                .expect("journal")
                .iter()
                .filter(|e| e.action == "rollout.release")
                .count();
            assert_eq!(released, 0, "{label}: the loser released {released}");
        }
    }
    eprintln!(
        "covered: 20 pairs from two machines: one completed each time; the other refused \
         {refused} times, superseded after both PATCHes {raced} times"
    );
    for t in &targets {
        here.delete(t).await;
    }
    sim.shutdown().await;
}

/// The resume an operator gives: with the fix of the failing member where Heat's update has
/// failed (it goes with the update the resume sends again), plain otherwise (values with the
/// resume of an update that has not failed are refused: nothing would send them).
async fn resume_for(
    heat: &caldera::api::heat::HeatClient,
    plan: &RolloutPlan,
    fix: &caldera::parameter_value::ParameterValues,
) -> Control {
    let failed = heat
        .get_stack(&plan.stack, false)
        .await
        .is_ok_and(|d| d.summary.status.is_failed());
    Control::Resume {
        parameters: if failed {
            fix.clone()
        } else {
            Default::default()
        },
    }
}
