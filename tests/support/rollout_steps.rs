//! The step-injection harness of the rollout engine, on any Heat (the simulator in
//! `offline::rollout_steps`, the real Heat 27 in `real_heat::steps`): at a step of the engine
//! (before a release, a member updating, the gate, the pre/post hooks, after a failure, a
//! journal write, the end's PATCH) a control, a kill, a concurrent start, a journal that can
//! no longer be written, or another machine's start that replaces the update in Heat
//! arrives, and the invariants are checked:
//!
//! - nothing is released after a pause or an abort is recorded, nor a skipped member after
//!   its skip (from the journal's own order);
//! - each member is released at most once per rollout (the failed one once more after the
//!   resume that retries it);
//! - one driver: a start during the rollout is refused with who holds it, whatever the step;
//! - the journal always parses, and every member Heat updated has its release journaled;
//! - a journal that breaks stops the rollout (paused, saying so) before its next change;
//! - the end matches Heat (images, stack status).

use crate::support::scenarios;
use caldera::api::heat::StackAction;
use caldera::drivers::NodeGroupTarget;
use caldera::journal::{Entry, Journal, Outcome};
use caldera::lifecycle::HookSet;
use caldera::rollout::engine::{self, EngineStep, Probe, StepProbe};
use caldera::rollout::{AbortMode, Control, RolloutOptions, RolloutPlan, RolloutState};
use caldera::service::ErrorKind;
use futures::future::BoxFuture;
use futures::FutureExt;
use scenarios::Env;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

pub const MEMBERS: u32 = 4;
/// The member that fails in the after-failure cases.
pub const FAIL: &str = "2";

#[derive(Debug, Clone)]
pub enum Inject {
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
    pub fn name(&self) -> String {
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
pub struct Injector {
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
pub type SecondStart = Arc<Mutex<Option<Result<(), (ErrorKind, String)>>>>;

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
pub fn saved_journal(journal: &Journal) -> std::path::PathBuf {
    journal.path().with_extension("saved")
}

pub fn break_journal(journal: &Journal) {
    let p = journal.path();
    std::fs::rename(p, saved_journal(journal)).expect("set the journal aside");
    std::fs::create_dir(p).expect("a directory in its place");
}

/// Puts the journal back if it is broken; whether it was.
pub fn mend_journal(journal: &Journal) -> bool {
    let p = journal.path();
    if !p.is_dir() {
        return false;
    }
    std::fs::remove_dir(p).expect("rmdir");
    std::fs::rename(saved_journal(journal), p).expect("restore the journal");
    true
}

pub fn hooks() -> HookSet {
    HookSet {
        pre_node: Some("true".into()),
        post_node: Some("true".into()),
        timeout_secs: Some(20),
        ..Default::default()
    }
}

pub fn releases(entries: &[Entry]) -> Vec<&Entry> {
    entries
        .iter()
        .filter(|e| e.action == "rollout.release" && e.outcome == Outcome::Started)
        .collect()
}

/// No release after a recorded pause or abort (until a resume), nor of a member after its
/// skip: in the journal's own order.
/// Members are read from each entry's target as `plan` names them
/// ([`RolloutPlan::member_of_label`]): a held group's `kube_masters/0` is not the target's `0`.
pub fn assert_no_release_after_stop(case: &str, plan: &RolloutPlan, entries: &[Entry]) {
    let mut stopped: Option<&str> = None;
    let mut skipped: BTreeSet<String> = BTreeSet::new();
    let mut aborted = false;
    for e in entries {
        let member = plan.member_of_label(&e.target);
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

pub struct CaseResult {
    pub name: String,
    pub end: String,
    pub secs: f64,
}

/// One case: a node group `cluster` of [`MEMBERS`] created in `env`'s Heat, a rollout of it
/// with `inject` arriving at the `nth` time the engine reaches `step`, settled, then the
/// invariants checked against the journal and Heat.
pub async fn run_case(
    env: Env,
    cluster: String,
    step: EngineStep,
    nth: usize,
    inject: Inject,
) -> CaseResult {
    let t0 = std::time::Instant::now();
    let heat = env.heat.clone();
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
                    // (was: "closing: hooks still in", with the hooks out), once Heat has
                    // run the PATCH: a real Heat starts its update after the PATCH returns.
                    let settled = async {
                        loop {
                            let d = heat.get_stack(&plan.stack, false).await.expect("stack");
                            if !d.summary.status.is_in_progress()
                                && d.summary.updated_at.is_some_and(|t| t >= unhook_time(&env))
                            {
                                break;
                            }
                            tokio::time::sleep(env.poll).await;
                        }
                    };
                    tokio::time::timeout(env.timeout, settled)
                        .await
                        .unwrap_or_else(|_| panic!("{name}: Heat never ran the end's PATCH"));
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
    assert_no_release_after_stop(&name, &plan, &ours);
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
                    && plan.member_of_label(&e.target) == *m
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
        (Inject::Superseded, RolloutState::EndedElsewhere { .. })
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
                && plan.member_of_label(&e.target) == *m
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
        (Inject::Superseded, RolloutState::EndedElsewhere { reason }) => {
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

pub fn injections() -> Vec<Inject> {
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

/// The resume an operator gives: with the fix of the failing member where Heat's update has
/// failed (it goes with the update the resume sends again), plain otherwise (values with the
/// resume of an update that has not failed are refused: nothing would send them).
pub async fn resume_for(
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

/// When the end's PATCH was journaled (its `rollout.unhook` entry, started), at Heat's
/// resolution of `updated_time` (whole seconds).
fn unhook_time(env: &Env) -> chrono::DateTime<chrono::Utc> {
    let entries = env.ctx.journal.read_all().expect("journal");
    let sent = entries
        .iter()
        .rev()
        .find(|e| e.action == "rollout.unhook" && e.outcome == Outcome::Started)
        .map(|e| e.time)
        .expect("the end's PATCH is journaled");
    chrono::SubsecRound::trunc_subsecs(sent, 0)
}
