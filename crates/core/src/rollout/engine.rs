//! The rollout engine: one task per rollout that releases members batch by batch from their
//! `pre-update` hooks and waits for each batch, with operator hooks, a health gate, pause,
//! resume, skip and abort.
//!
//! Its truth is Heat's: which members are paused, released, done or failed comes from the
//! group's events and the members' stacks ([`HeatReader`]); the journal adds what Heat
//! cannot know (the plan, which operator hooks already ran). A member is released only when
//! Heat shows it paused on its hook in the current update, so a restarted process, or a
//! second one, never releases a member twice: Heat itself refuses to clear a hook that is
//! not pending.
//!
//! Beside the driving loop here: `abort` (an abort's modes, until Heat settles),
//! `closing` (the wait for Heat's update once every node is done), `elsewhere` (whether
//! Heat still runs this rollout's update, and who else may drive it), `heat_update` (which
//! of Heat's updates the driver follows), `left` (the hooks an end leaves), `observe` (a
//! rollout seen with no engine of this process driving it).

use super::heat_reader::{newest_event, HeatReader};
use super::lock::{self, ControlLock, DriverLock};
use super::plan::RolloutPlan;
use super::progress::{DriverInfo, NodePhase, NodeProgress, RolloutState, RolloutStatus};
use crate::api::heat::{HeatClient, StackAction, StackUpdate};
use crate::command_line::CommandLine;
use crate::drivers::apply::ActionContext;
use crate::drivers::guard::Reach;
use crate::drivers::heat_native::{group_stack_of, stack_path, update_body_text};
use crate::journal::{ApiCall, Entry, Journal, Outcome};
use crate::lifecycle::{run_hook, HookContext, HookPoint, HookRun, HookSet};
use crate::parameter_value::ParameterValues;
use crate::report::{ErrorKind, ServiceError, ServiceResult};
use chrono::Utc;
use futures::future::BoxFuture;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

mod abort;
mod closing;
mod elsewhere;
mod heat_update;
mod left;
mod observe;
use abort::{mark_rolled_back, recount_after_cancel, Aborting};
use closing::{operator_pause_after_heat, with_operator, JournaledPause, OPERATOR_PAUSE};
use elsewhere::{
    another_driver_risk, heat_runs_another, not_this_rollouts_update, superseded_by, superseded_in,
};
pub use elsewhere::{
    ended_elsewhere, released_elsewhere, released_elsewhere_words, started_elsewhere,
    started_elsewhere_words, take_over_risk, TakeOver, ENDED_ELSEWHERE,
};
use heat_update::HeatUpdate;
use left::{closing_words, hooks_left_now};
pub use observe::{observe_status, plan_from_heat};

/// How Heat's stack reason says its update was cancelled (`cancel_without_rollback`), in
/// its own words (a member's cancelled attempt reads `Resource UPDATE failed: …`).
const CANCELLED: &str = "Stack UPDATE cancelled";

/// Longest a wait (the poll, a gate, a hook) goes without looking for control requests
/// other processes wrote to the journal; the console's controls arrive at once.
const CONTROL_POLL: Duration = Duration::from_millis(200);

/// How an abort leaves Heat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortMode {
    /// Stop releasing; members not yet released stay on their hooks (the stack stays
    /// UPDATE_IN_PROGRESS until someone releases or cancels).
    LeavePaused,
    /// `cancel_update`: Heat rolls the group back to the previous image.
    CancelUpdate,
    /// `cancel_without_rollback`: stop the update where it is.
    CancelWithoutRollback,
}

impl AbortMode {
    /// The call an abort in this mode sends to Heat (none to stop releasing): what its
    /// confirmation shows and its journal entry holds.
    pub fn call(self, stack: &crate::model::StackRef) -> Option<ApiCall> {
        let action = match self {
            AbortMode::LeavePaused => return None,
            AbortMode::CancelUpdate => StackAction::CancelUpdate,
            AbortMode::CancelWithoutRollback => StackAction::CancelWithoutRollback,
        };
        Some(ApiCall::new(
            "POST",
            format!("{}/actions", stack_path(stack)),
            format!("{{\"{}\":null}}", action.key()),
        ))
    }
}

/// What the console or a command asks of a running rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    Pause,
    /// Continue; after a failure, re-send the update with these parameter overrides (e.g.
    /// a fixed `node_fail_index`) so Heat retries the failed member.
    Resume {
        parameters: ParameterValues,
    },
    Skip(String),
    Abort(AbortMode),
}

impl Control {
    /// In an operator's words: `pause`, `resume`, `skip member 10`, `abort (stop
    /// releasing)` (was: Rust's own, `Skip("10")`).
    pub fn label(&self) -> String {
        match self {
            Control::Pause => "pause".into(),
            Control::Resume { parameters } if parameters.is_empty() => "resume".into(),
            Control::Resume { parameters } => {
                format!("resume with {}", super::plan::values_label(parameters))
            }
            Control::Skip(m) => format!("skip member {m}"),
            Control::Abort(AbortMode::LeavePaused) => "abort (stop releasing)".into(),
            Control::Abort(AbortMode::CancelUpdate) => "abort (Heat's cancel, rollback)".into(),
            Control::Abort(AbortMode::CancelWithoutRollback) => {
                "abort (Heat's cancel, no rollback)".into()
            }
        }
    }
}

/// Journal actions other processes append to steer a running rollout (`caldera rollout
/// pause|resume|abort`); the engine reads them as it polls.
pub const REQUEST_PAUSE: &str = "rollout.request.pause";
pub const REQUEST_RESUME: &str = "rollout.request.resume";
pub const REQUEST_ABORT: &str = "rollout.request.abort";
pub const REQUEST_SKIP: &str = "rollout.request.skip";

#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Time between looks at Heat.
    pub poll: Duration,
    pub hooks: HookSet,
    /// The step-injection tests' observer; none in production.
    pub probe: Probe,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            poll: Duration::from_secs(2),
            hooks: HookSet::default(),
            probe: Probe::default(),
        }
    }
}

/// The points of the engine where the step-injection tests act (a control, a kill, a
/// concurrent start) and check the invariants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineStep {
    /// A member is about to be released (before the controls are read for it).
    BeforeRelease,
    /// A member was released: Heat is updating it.
    MemberUpdating,
    /// A batch's health gate starts waiting.
    GateWait,
    PreHook,
    PostHook,
    /// A member failed or the stack did: the engine is about to pause or end.
    AfterFailure,
    /// An entry was written to the journal.
    JournalWrite,
    /// The end's PATCH that takes the rollout's hooks and tags out is journaled (started)
    /// and about to be sent.
    Unhook,
}

/// Told of each [`EngineStep`]; the engine waits for the returned future before going on.
pub trait StepProbe: Send + Sync {
    fn at(&self, step: EngineStep, member: Option<&str>) -> BoxFuture<'static, ()>;
}

/// An optional [`StepProbe`] (the engine's options stay `Debug` and `Clone`).
#[derive(Clone, Default)]
pub struct Probe(pub Option<Arc<dyn StepProbe>>);

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Probe(set)"
        } else {
            "Probe(none)"
        })
    }
}

/// A running rollout.
pub struct RolloutHandle {
    control: mpsc::UnboundedSender<Control>,
    status: watch::Receiver<RolloutStatus>,
    /// The engine task; `None` for a handle driven by hand ([`RolloutHandle::detached`]).
    task: Option<tokio::task::JoinHandle<RolloutStatus>>,
}

/// The other end of a [`RolloutHandle::detached`] handle: what the handle's user sends, and
/// the status it sees. Only for fakes (`caldera-testkit`): the `test-support` feature.
#[cfg(feature = "test-support")]
pub struct DetachedRollout {
    pub controls: mpsc::UnboundedReceiver<Control>,
    pub status: watch::Sender<RolloutStatus>,
}

impl RolloutHandle {
    pub fn send(&self, c: Control) -> ServiceResult<()> {
        self.control
            .send(c)
            .map_err(|_| ServiceError::new(ErrorKind::Config, "the rollout has ended"))
    }
    pub fn status(&self) -> RolloutStatus {
        self.status.borrow().clone()
    }
    pub fn watch(&self) -> watch::Receiver<RolloutStatus> {
        self.status.clone()
    }
    /// A handle with no engine behind it: whoever holds the [`DetachedRollout`] plays the
    /// engine. For fakes of the console's operator and for tests (`test-support` feature).
    #[cfg(feature = "test-support")]
    pub fn detached(initial: RolloutStatus) -> (RolloutHandle, DetachedRollout) {
        let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
        let (st_tx, st_rx) = watch::channel(initial);
        (
            RolloutHandle {
                control: ctl_tx,
                status: st_rx,
                task: None,
            },
            DetachedRollout {
                controls: ctl_rx,
                status: st_tx,
            },
        )
    }

    /// Waits for the rollout to end (completed, aborted, failed).
    pub async fn wait(mut self) -> RolloutStatus {
        match self.task.take() {
            Some(task) => {
                let last = self.status.borrow().clone();
                task.await.unwrap_or(last)
            }
            None => self.wait_for(|s| s.state.is_final()).await,
        }
    }
    /// Waits until `pred` holds for a snapshot, or the rollout ends.
    pub async fn wait_for(&mut self, pred: impl Fn(&RolloutStatus) -> bool) -> RolloutStatus {
        loop {
            {
                let s = self.status.borrow_and_update();
                if pred(&s) || s.state.is_final() {
                    return s.clone();
                }
            }
            if self.status.changed().await.is_err() {
                return self.status.borrow().clone();
            }
        }
    }
    /// Stops the engine task at once, as if the process died (Heat carries on); returns
    /// once the task is gone (its driver lock released with it).
    pub async fn kill(self) {
        if let Some(task) = self.task {
            task.abort();
            let _ = task.await;
        }
    }
}

fn err(e: crate::api::ApiError) -> ServiceError {
    ServiceError::from(e)
}

/// Takes the driver lock of `plan`'s stack ([`lock::key`]), or refuses with who holds it.
fn take_lock(ctx: &ActionContext, plan: &RolloutPlan) -> ServiceResult<DriverLock> {
    let dir = lock::lock_dir(ctx.journal.path());
    DriverLock::acquire(&dir, &lock::key(plan), &plan.id).map_err(|e| match e {
        lock::LockError::Held(_) => crate::drivers::refused(format!(
            "{} already has a driver (stack {}): {e}; `caldera rollout status` shows it",
            plan.target.label(),
            plan.stack.name
        )),
        lock::LockError::Io(_) => ServiceError::new(ErrorKind::Config, e.to_string()),
    })
}

/// Sends the rollout's PATCH (after the guard rails; the plan goes to the journal first)
/// and starts the engine. One driver per node group: the driver lock is taken before
/// Heat is looked at and kept by the engine, so on this machine the in-progress check and
/// the PATCH never interleave with another start; another machine's rollout shows in Heat
/// as an update in progress, and is refused here.
pub async fn start(
    heat: HeatClient,
    ctx: ActionContext,
    plan: RolloutPlan,
    options: EngineOptions,
    confirm: Option<&str>,
) -> ServiceResult<RolloutHandle> {
    let target = plan.target.label();
    ctx.check(
        "rollout.start",
        &target,
        &plan.target.cluster,
        Reach::Fleet,
        confirm,
    )?;
    let driver_lock = take_lock(&ctx, &plan)?;
    let requests_from = journal_len(&ctx.journal);
    let detail = heat.get_stack(&plan.stack, false).await.map_err(err)?;
    if detail.summary.status.is_in_progress() {
        let hooked = crate::ops::hooks::hook_used_since(
            &heat,
            &plan.stack,
            super::plan::ROLLOUT_HOOK,
            detail.summary.updated_at,
        )
        .await
        .unwrap_or(false);
        let who = if hooked {
            "a rollout on pre-update hooks is under way (driven from another machine, or its \
             driver died: `caldera rollout status` tells, `rollout resume` takes it over)"
        } else {
            "another action is running"
        };
        return Err(crate::drivers::refused(format!(
            "{target} is {}: {who}",
            detail.summary.status
        )));
    }
    // The baseline: what Heat's group stack said last before our PATCH.
    let mut plan = plan;
    // What the environment declares where the rollout puts its hook: the start keeps it
    // beside ours, the end puts it back. Without it the end could not leave the stack's
    // environment as it found it, so nothing starts.
    let before = heat.get_environment_hooks(&plan.stack).await.map_err(|e| {
        crate::drivers::refused(format!(
            "{target}: reading the stack's environment (what the rollout's hooks must leave \
             as it was): {e}; nothing was sent to Heat"
        ))
    })?;
    // Heat (convergence) accepts an update while another runs and supersedes the first: a
    // start on another machine that PATCHed between our look at the stack and our read of
    // the environment would have its hooks taken for the stack's own, and our end would put
    // them back, holding every later update. So the stack must be as we first saw it after
    // the read too (an update moves `updated_time` and leaves the status in progress).
    let again = heat.get_stack(&plan.stack, false).await.map_err(err)?;
    if again.summary.status.is_in_progress()
        || again.summary.updated_at != detail.summary.updated_at
    {
        return Err(crate::drivers::refused(format!(
            "{target}: another update started while this rollout was being prepared (the \
             stack is now {}): its hooks must not be taken for the stack's own; nothing was \
             sent to Heat",
            again.summary.status
        )));
    }
    plan.hooks_before = Some(before.prior_entry(&plan.hook_keys()));
    for held in plan.also.iter_mut() {
        held.hooks_before = Some(before.prior_entry(&super::plan::member_hook_keys(&held.path)));
        let group = group_stack_of(&heat, &plan.stack, &held.path).await?;
        held.since_event = newest_event(&heat, &group).await?.map(|(id, _)| id);
    }
    // The marker goes to Heat with the PATCH: another machine's start that raced this one
    // past the in-progress check finds which of the two Heat kept. Beside it, what a
    // take-over from Heat alone needs: the held groups, the options, what the hook paths
    // held before.
    let held = super::plan::rollout_tags(&plan)
        .map_err(|e| crate::drivers::refused(format!("{target}: {e}; nothing was sent to Heat")))?;
    plan.stack_tags = Some(super::plan::with_marker(
        &detail.tags,
        &super::plan::marker_tag(&plan.id, &crate::journal::hostname()),
        &held,
    ));
    let group = group_stack_of(&heat, &plan.stack, plan.group_resource()).await?;
    if let Some((id, time)) = newest_event(&heat, &group).await? {
        plan.since_event = Some(id);
        plan.since_time = Some(time);
    }
    let calls = plan.calls();
    // The engine reads the journal back (its memory, then requests): a journal it cannot
    // read stops it, so find out before the PATCH rather than after.
    let nothing_sent = |e: ServiceError| {
        ServiceError::new(e.kind, format!("{}; nothing was sent to Heat", e.message))
    };
    journal_memory(&ctx.journal, &plan).map_err(nothing_sent)?;
    let mut lines = plan.lines();
    lines.extend(options.hooks.plan_lines());
    ctx.record(
        &Entry::new(&ctx.actor, "rollout.start", &target, Outcome::Started)
            .rollout(&plan.id)
            .plan(lines)
            .spec(&plan)
            .calls(calls[..1].to_vec()),
    )
    .map_err(nothing_sent)?;
    let result = heat.update_stack(&plan.stack, &plan.start_update()).await;
    let outcome = match &result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed {
            error: e.to_string(),
        },
    };
    let recorded =
        ctx.record(&Entry::new(&ctx.actor, "rollout.started", &target, outcome).rollout(&plan.id));
    result.map_err(err)?;
    // Two starts on two machines can both pass the in-progress check; Heat keeps the
    // later PATCH (a new update supersedes the one in progress). The one whose marker is
    // not on the stack lost: it ends here, having released nothing.
    if let Some(winner) = superseded_by(&heat, &plan).await {
        let reason = format!(
            "superseded: {winner} was sent at the same moment and Heat kept it; nothing \
             was released by this one"
        );
        let _ = ctx.record(
            &Entry::new(&ctx.actor, ENDED_ELSEWHERE, &target, Outcome::Ok)
                .rollout(&plan.id)
                .output(reason.clone()),
        );
        return Err(crate::drivers::refused(format!("{target}: {reason}")));
    }
    // The update is in Heat now, every member held on its hook: an engine must exist to
    // say so and to be resumed, even when the journal failed just now (it starts paused).
    let paused = recorded.err().map(|e| {
        format!(
            "{}; the update was sent (members wait on their pre-update hooks), nothing \
             released; fix the journal, then `caldera rollout resume`",
            e.message
        )
    });
    spawn(
        heat,
        ctx,
        plan,
        options,
        Vec::new(),
        driver_lock,
        requests_from,
        paused,
    )
    .await
    .map_err(|e| {
        ServiceError::new(
            e.kind,
            format!(
                "the update was sent to Heat (members wait on their pre-update hooks, \
                 nothing released) but the engine could not start: {}",
                e.message
            ),
        )
    })
}

/// Where the journal's entries end now: requests written after this point are for the
/// driver that holds the lock. Not the file's length: a torn tail (a writer that died
/// mid-line) is cut off by the next append, which writes where it started, so an offset
/// past it would land inside that entry and the engine would pause on a line it cannot
/// read.
fn journal_len(journal: &Journal) -> u64 {
    journal.end_of_entries().unwrap_or(0)
}

/// Attaches to a rollout already under way (after a restart, or another operator's).
/// `initial` controls (e.g. the resume that made the operator reattach) are applied before
/// the engine first looks at Heat, so it never acts on a state they change. Refused while
/// another process on this machine drives it, and, unless `take_over` allows it, when it
/// was started on another machine ([`started_elsewhere`]).
pub async fn reattach(
    heat: HeatClient,
    ctx: ActionContext,
    plan: RolloutPlan,
    options: EngineOptions,
    initial: Vec<Control>,
    take_over: TakeOver,
) -> ServiceResult<RolloutHandle> {
    let target = plan.target.label();
    ctx.check(
        "rollout.reattach",
        &target,
        &plan.target.cluster,
        Reach::Nodes,
        None,
    )?;
    // Heat says first whether the update is still this rollout's (before any question of
    // who else drives it: an ended rollout has no driver to ask about): a rollout another
    // machine drove to its end (or another update replaced) is over, and a driver started
    // on it here would read Heat's next update as its own (was: `rollout resume` of a
    // rollout finished elsewhere journaled "failed: superseded: … an update without a
    // rollout marker", after a take-over and a resume it never did).
    if let Some(reason) = not_this_rollouts_update(&heat, &ctx.journal, &plan).await? {
        let ended = Entry::new(&ctx.actor, ENDED_ELSEWHERE, &target, Outcome::Ok)
            .rollout(&plan.id)
            .output(reason.clone());
        if let Err(e) = ctx.record(&ended) {
            tracing::warn!("rollout {}: journaling its end elsewhere: {e}", plan.id);
        }
        return Err(crate::drivers::refused(format!(
            "rollout {} of {target}: {}; nothing was sent",
            plan.id,
            RolloutState::EndedElsewhere { reason }.label()
        )));
    }
    if take_over == TakeOver::ThisMachine {
        if let Some(risk) = another_driver_risk(&heat, &ctx.journal, &plan).await? {
            // Journaled as a refusal (a blocked attempt is part of the audit trail);
            // nothing goes to Heat.
            return Err(ctx.refuse(
                "rollout.reattach",
                &target,
                format!("not taken over: rollout {}: {risk}", plan.id),
            ));
        }
    }
    let driver_lock = take_lock(&ctx, &plan)?;
    let requests_from = journal_len(&ctx.journal);
    let mut entry =
        Entry::new(&ctx.actor, "rollout.reattach", &target, Outcome::Ok).rollout(&plan.id);
    // From the last driver's last heartbeat to now nobody released anything: a pause of the
    // rollout's pace, as an operator's is (was: counted as time the members moved, the pace
    // after a take-over too slow and its ETA too long).
    if let Some(last) = driver_lock.previous().filter(|h| h.rollout == plan.id) {
        entry = entry.since(last.last_seen);
    }
    // A rollout this journal has no start of (read back from Heat: another machine's) is
    // journaled here with its plan, as a start is: this machine's later looks (`rollout
    // status` after the end, the journal's history) find it (was: "no rollout … in this
    // machine's journal" on the machine that finished it).
    if find_started(&ctx.journal, &plan.id)?.is_none() {
        entry = entry.spec(&plan);
    }
    ctx.record(&entry)?;
    spawn(
        heat,
        ctx,
        plan,
        options,
        initial,
        driver_lock,
        requests_from,
        None,
    )
    .await
}

/// Who drives `plan` on this machine, from its driver lock.
pub fn driver_info(journal: &Journal, plan: &RolloutPlan) -> DriverInfo {
    match lock::probe(&lock::lock_dir(journal.path()), &lock::key(plan)) {
        lock::LockState::Held(Some(h)) => DriverInfo::Process {
            pid: h.pid,
            host: h.host,
            started_at: h.started_at,
            last_seen: h.last_seen,
        },
        lock::LockState::Held(None) => DriverInfo::Process {
            pid: 0,
            host: "?".into(),
            started_at: Utc::now(),
            last_seen: Utc::now(),
        },
        lock::LockState::Free(last) => DriverInfo::Nobody {
            since: last.as_ref().map(|h| h.last_seen),
            last_pid: last.map(|h| h.pid),
            started_on: started_elsewhere(plan).map(str::to_string),
            released_elsewhere: Vec::new(),
        },
    }
}

/// The plan of the newest rollout of `target` in the journal, ended or not.
pub fn find_latest(journal: &Journal, target: &str) -> ServiceResult<Option<RolloutPlan>> {
    newest_started(journal, |e, _| e.target == target)
}

/// The plan of rollout `id` as its start journaled it, whatever name the group was given
/// then (`cluster/nodegroup`, or `STACK/GROUP` of the same group): Heat's marker names the
/// rollout by id, so a group read under its other name finds the same rollout, its driver's
/// lock and its control requests (all kept under the name it was started by).
pub fn find_started(journal: &Journal, id: &str) -> ServiceResult<Option<RolloutPlan>> {
    newest_started(journal, |_, plan| plan.id == id)
}

/// The plan of the newest journaled start (`rollout.start`, `Started`) that `matches`, with
/// the values in effect now.
fn newest_started(
    journal: &Journal,
    matches: impl Fn(&Entry, &RolloutPlan) -> bool,
) -> ServiceResult<Option<RolloutPlan>> {
    let entries = journal
        .read_all()
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    Ok(entries
        .iter()
        .rev()
        .filter(|e| carries_plan(e))
        .find_map(|e| {
            let plan = serde_json::from_str::<RolloutPlan>(e.spec.as_deref()?).ok()?;
            matches(e, &plan).then_some(plan)
        })
        .map(|plan| with_values_in_effect(plan, &entries)))
}

/// Whether `e` journals a rollout's plan: its start, or the take-over of one this journal
/// had no start of (read back from Heat).
fn carries_plan(e: &Entry) -> bool {
    match e.action.as_str() {
        "rollout.start" => e.outcome == Outcome::Started,
        "rollout.reattach" => e.outcome == Outcome::Ok && e.spec.is_some(),
        _ => false,
    }
}

/// `plan` (as its start journaled it) with the values its update sets now: a resume that
/// sent overrides journaled every value in effect with its `rollout.resume` (its spec).
fn with_values_in_effect(mut plan: RolloutPlan, entries: &[Entry]) -> RolloutPlan {
    let resumed = entries
        .iter()
        .rev()
        .filter(|e| e.rollout.as_deref() == Some(plan.id.as_str()))
        .filter(|e| e.action == "rollout.resume" && e.outcome == Outcome::Ok)
        .find_map(|e| {
            e.spec
                .as_deref()
                .and_then(|s| serde_json::from_str::<ParameterValues>(s).ok())
        });
    if let Some(values) = resumed.filter(|v| *v != plan.extra_parameters) {
        plan.set_values(values);
    }
    plan
}

/// The plan of the newest rollout of `target` in the journal that has not ended.
pub fn find_active(journal: &Journal, target: &str) -> ServiceResult<Option<RolloutPlan>> {
    let entries = journal
        .read_all()
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    let mut active: Option<RolloutPlan> = None;
    for e in entries.iter().filter(|e| e.target == target) {
        match e.action.as_str() {
            // A refused start (guard rails) has no plan and ends nothing.
            "rollout.start" | "rollout.reattach" if carries_plan(e) => {
                active = e
                    .spec
                    .as_deref()
                    .and_then(|s| serde_json::from_str::<RolloutPlan>(s).ok());
            }
            "rollout.started" if matches!(e.outcome, Outcome::Failed { .. }) => active = None,
            "rollout.finish" | "rollout.abort" | ENDED_ELSEWHERE
                if active.as_ref().map(|p| Some(&p.id) == e.rollout.as_ref()) == Some(true) =>
            {
                active = None;
            }
            _ => {}
        }
    }
    Ok(active.map(|plan| with_values_in_effect(plan, &entries)))
}

#[allow(clippy::too_many_arguments)] // each is one piece of the engine's start
async fn spawn(
    heat: HeatClient,
    ctx: ActionContext,
    plan: RolloutPlan,
    options: EngineOptions,
    initial: Vec<Control>,
    mut driver_lock: DriverLock,
    requests_from: u64,
    paused: Option<String>,
) -> ServiceResult<RolloutHandle> {
    driver_lock.set_rollout(&plan.id);
    let mut obs = reader_for(&heat, &plan).await?;
    obs.attach(plan.image_parameter()).await?;
    // Controls sent right after attaching (a resume) must see Heat's current state.
    obs.refresh().await?;
    let (journal_offset, mut memory) = journal_memory(&ctx.journal, &plan)?;
    let journaled_pause = std::mem::take(&mut memory.pause);
    let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
    for c in initial {
        // The receiver is alive: it is moved into the task below.
        let _ = ctl_tx.send(c);
    }
    let mut status = initial_status(&plan);
    status.progress.paused = std::mem::take(&mut memory.paused);
    let (st_tx, st_rx) = watch::channel(status.clone());
    let mut runner = Runner {
        heat,
        status,
        lock_dir: lock::lock_dir(ctx.journal.path()),
        driver_lock,
        controls: ctl_rx,
        controls_open: true,
        tx: st_tx,
        ended: None,
        aborting: None,
        ctx,
        options,
        obs,
        paused,
        skipped: memory.skipped,
        pre_node_done: memory.pre_node,
        post_node_done: memory.post_node,
        batch_started: memory.batch_started,
        batch_finished: memory.batch_finished,
        passthrough: BTreeSet::new(),
        timed_out: BTreeSet::new(),
        released_local: BTreeMap::new(),
        closing_since: None,
        closing_pause: None,
        // Requests written since the lock was taken are this driver's.
        journal_offset: journal_offset.min(requests_from),
        ignore_failures_until_update: None,
        draining: false,
        resume_when_update_fails: None,
        following: memory.followed,
        replaced: memory.replaced,
        plan,
    };
    runner.rebuild_pause(journaled_pause);
    let task = tokio::spawn(runner.run());
    Ok(RolloutHandle {
        control: ctl_tx,
        status: st_rx,
        task: Some(task),
    })
}

/// The reader of Heat's events for `plan`: its target group's, and each group it holds too.
async fn reader_for(heat: &HeatClient, plan: &RolloutPlan) -> ServiceResult<HeatReader> {
    let group = group_stack_of(heat, &plan.stack, plan.group_resource()).await?;
    let mut obs = HeatReader::new(
        heat.clone(),
        plan.stack.clone(),
        group,
        plan.since_event.clone(),
        plan.since_time,
    );
    for held in &plan.also {
        let group = group_stack_of(heat, &plan.stack, &held.path).await?;
        obs.hold(&held.path, group, held.since_event.clone());
    }
    Ok(obs)
}

#[derive(Default)]
struct Memory {
    skipped: BTreeSet<String>,
    pre_node: BTreeSet<String>,
    post_node: BTreeSet<String>,
    batch_started: BTreeSet<usize>,
    batch_finished: BTreeSet<usize>,
    pause: JournaledPause,
    /// The times the rollout stood paused, from its pauses and resumes.
    paused: Vec<crate::progress::PauseSpan>,
    /// The update of the stack the rollout's driver followed last (see [`heat_update`]).
    followed: Option<HeatUpdate>,
    /// Another update Heat began, that the rollout paused on (the operator was told).
    replaced: Option<HeatUpdate>,
}

/// What the journal remembers of this rollout that Heat cannot tell: hooks already run,
/// batches already gated, members skipped. Also where the journal ends now (requests after
/// that point are new).
fn journal_memory(journal: &Journal, plan: &RolloutPlan) -> ServiceResult<(u64, Memory)> {
    let id = plan.id.as_str();
    let (entries, offset) = journal
        .read_from(0)
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    let mut m = Memory::default();
    for e in entries.iter().filter(|e| e.rollout.as_deref() == Some(id)) {
        let ok = e.outcome == Outcome::Ok;
        match e.action.as_str() {
            "hook.pre_node" if ok => {
                m.pre_node.insert(plan.member_of_label(&e.target));
            }
            "hook.post_node" if ok => {
                m.post_node.insert(plan.member_of_label(&e.target));
            }
            "rollout.batch_started" => {
                if let Some(b) = batch_number(&e.target) {
                    m.batch_started.insert(b);
                }
            }
            "rollout.batch_finished" => {
                if let Some(b) = batch_number(&e.target) {
                    m.batch_finished.insert(b);
                }
            }
            "rollout.skip" => {
                m.skipped.insert(plan.member_of_label(&e.target));
            }
            "rollout.pause" | "rollout.resume" => {
                m.pause.read(e);
                // A pause on another update Heat began carries it; a resume ends it.
                m.replaced = match e.action.as_str() {
                    "rollout.pause" => e
                        .spec
                        .as_deref()
                        .and_then(|s| serde_json::from_str(s).ok())
                        .or(m.replaced.take()),
                    _ if e.outcome == Outcome::Ok => None,
                    _ => m.replaced.take(),
                };
            }
            heat_update::FOLLOWS if ok => {
                m.followed = e.spec.as_deref().and_then(|s| serde_json::from_str(s).ok());
            }
            // This rollout's own PATCH (a retry; sent, or perhaps sent when its end is not
            // journaled) began the update Heat runs from then on: the next look at Heat
            // follows it (a driver killed before that look must not take its own retry for
            // another's update).
            "rollout.retry" if !matches!(e.outcome, Outcome::Failed { .. }) => {
                m.followed = None;
            }
            _ => {}
        }
        // The times it stood paused, as `observe_status` reads them: a driver taking the
        // rollout on keeps them out of its pace (was: a pause before a restart counted as
        // time the members moved).
        match (e.action.as_str(), &e.outcome) {
            ("rollout.pause", _) => super::progress::note_pause_in(&mut m.paused, true, e.time),
            ("rollout.resume", Outcome::Ok) | ("rollout.reattach", _) => {
                // A take-over's driverless span: from the last driver's last heartbeat.
                if let Some(since) = e.since.filter(|t| *t < e.time) {
                    super::progress::note_pause_in(&mut m.paused, true, since);
                }
                super::progress::note_pause_in(&mut m.paused, false, e.time)
            }
            _ => {}
        }
    }
    Ok((offset, m))
}

/// `cluster/ng#batch3` -> 2 (0-based).
fn batch_number(target: &str) -> Option<usize> {
    target
        .rsplit_once("#batch")
        .and_then(|(_, n)| n.parse::<usize>().ok())
        .and_then(|n| n.checked_sub(1))
}

/// Every member pending, in batch order: a rollout before Heat has been looked at.
pub fn initial_status(plan: &RolloutPlan) -> RolloutStatus {
    let nodes = plan
        .batches
        .iter()
        .enumerate()
        .flat_map(|(b, members)| members.iter().map(move |m| NodeProgress::pending(m, b)))
        .collect();
    RolloutStatus::new(
        plan.id.clone(),
        plan.target.label(),
        plan.image.clone(),
        RolloutState::Starting,
        nodes,
        plan.batches.len(),
        Utc::now(),
    )
}

struct Runner {
    heat: HeatClient,
    ctx: ActionContext,
    /// Where the node group's driver and control locks live.
    lock_dir: PathBuf,
    /// Held as long as this engine runs: one driver per node group.
    driver_lock: DriverLock,
    controls: mpsc::UnboundedReceiver<Control>,
    /// False once every handle is gone (no more controls from this process).
    controls_open: bool,
    tx: watch::Sender<RolloutStatus>,
    /// Set by an abort: the state the rollout ends in.
    ended: Option<RolloutState>,
    /// An abort that cancelled Heat's update: the engine waits for Heat to settle (and, for
    /// a rollback, clears the hooks Heat's rollback stops on) before it ends.
    aborting: Option<Aborting>,
    plan: RolloutPlan,
    options: EngineOptions,
    obs: HeatReader,
    status: RolloutStatus,
    paused: Option<String>,
    skipped: BTreeSet<String>,
    pre_node_done: BTreeSet<String>,
    post_node_done: BTreeSet<String>,
    batch_started: BTreeSet<usize>,
    batch_finished: BTreeSet<usize>,
    /// Members released only because Heat paused them again though already updated.
    passthrough: BTreeSet<String>,
    timed_out: BTreeSet<String>,
    /// When we first knew each member released, on our clock (timeouts must not depend on
    /// the difference between our clock and Heat's).
    released_local: BTreeMap<String, std::time::Instant>,
    /// Every member done and Heat's update still in progress: since when (our clock), and
    /// the pause said when that lasted longer than a node may take ([`Runner::closing`]).
    closing_since: Option<std::time::Instant>,
    closing_pause: Option<String>,
    journal_offset: u64,
    /// After a resume PATCH: old failures stand until Heat starts the new group update.
    ignore_failures_until_update: Option<u32>,
    /// Resumed after a failure: members Heat still holds on hooks in the failed update are
    /// released first (batch by batch; Heat updates them within that update), and only then
    /// is the update sent again to retry the failed members. Sending it while members wait
    /// on hooks of the failed update makes Heat 27 update those members twice, the second
    /// attempt cancelling the first (measured).
    draining: bool,
    /// A resume asked after a member failed, while Heat has not yet ended the update that
    /// failure fails: it applies when Heat says the update failed (its values go with the
    /// update sent again then). Applied before, the same failure would pause it again (and a
    /// resume's values were refused as "nothing would send them").
    resume_when_update_fails: Option<ParameterValues>,
    /// The update of the stack this driver follows, as Heat showed it with this rollout's
    /// update in it (see [`heat_update`]); `None` until the first look at Heat.
    following: Option<HeatUpdate>,
    /// Another update Heat began since (the marker kept): the rollout paused on it, and a
    /// resume drives it.
    replaced: Option<HeatUpdate>,
}

impl Runner {
    fn target(&self) -> String {
        self.plan.target.label()
    }

    fn member_target(&self, m: &str) -> String {
        self.plan.member_label(m)
    }

    fn batch_target(&self, b: usize) -> String {
        format!("{}#batch{}", self.target(), b + 1)
    }

    fn record(&self, action: &str, target: &str, outcome: Outcome) -> Entry {
        Entry::new(&self.ctx.actor, action, target, outcome).rollout(&self.plan.id)
    }

    /// Records `entry`; false when the journal cannot take it. Then the rollout pauses
    /// before its next change (an action never reaches the cloud without its record) and
    /// says what was and was not sent. Heat holds the members not yet released on their
    /// hooks, so stopping here loses nothing.
    fn write(&mut self, entry: Entry) -> bool {
        match self.ctx.record(&entry) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!("rollout {}: {e}", self.plan.id);
                if self.paused.is_none() {
                    self.paused = Some(format!(
                        "{}: nothing more is sent to Heat until the journal takes entries \
                         again; {}",
                        e.message,
                        self.sent_so_far()
                    ));
                }
                false
            }
        }
    }

    /// Which members were released (or are done) and which are still held, for messages
    /// that must say what was and was not sent.
    fn sent_so_far(&self) -> String {
        let (mut released, mut held) = (Vec::new(), Vec::new());
        for m in self.plan.members() {
            if self.skipped.contains(m) {
                continue;
            }
            match self.obs.members.get(m) {
                Some(t) if t.done || t.released_at.is_some() => released.push(m.as_str()),
                _ => held.push(m.as_str()),
            }
        }
        format!(
            "released or done: {}; not released (held on their hooks): {}",
            name_list(&released),
            name_list(&held)
        )
    }

    /// Writes `entry` and tells the probe.
    async fn note(&mut self, entry: Entry) -> bool {
        let ok = self.write(entry);
        self.probe(EngineStep::JournalWrite, None).await;
        ok
    }

    async fn probe(&self, step: EngineStep, member: Option<&str>) {
        if let Some(p) = &self.options.probe.0 {
            p.at(step, member).await;
        }
    }

    /// Another start's update replaced ours in Heat (its marker is on the stack): its
    /// driver releases from now on; this one ends without another signal.
    fn superseded(&mut self, winner: &str) {
        if self.ended.is_none() {
            self.ended = Some(RolloutState::EndedElsewhere {
                reason: format!(
                    "superseded: Heat now runs {winner}; this rollout released nothing \
                     more ({})",
                    self.sent_so_far()
                ),
            });
        }
    }

    /// Whether Heat still runs this rollout's update (its marker on the stack), as read by
    /// the last look at Heat when that is at most one poll old, else read again now: the
    /// members of a batch are released one after another without a request each, and a
    /// release after a long hook or gate still looks first. Ends the rollout when not.
    async fn still_ours(&mut self) -> bool {
        let fresh = self
            .obs
            .stack_read_at
            .is_some_and(|t| t.elapsed() <= self.options.poll);
        if !fresh && self.plan.stack_tags.is_some() {
            match self.heat.get_stack(&self.plan.stack, false).await {
                Ok(d) => {
                    self.obs.stack_tags = d.tags;
                    self.obs.stack_status = d.summary.status;
                    self.obs.stack_updated_at = d.summary.updated_at;
                    self.obs.stack_parameters = d.parameters;
                    self.obs.stack_read_at = Some(std::time::Instant::now());
                }
                // The release that follows would fail the same way.
                Err(e) => tracing::warn!("rollout {}: reading the marker: {e}", self.plan.id),
            }
        }
        if self.obs.stack_read_at.is_none() {
            return true; // never read: nothing says otherwise (the release will tell)
        }
        match superseded_in(&self.obs.stack_tags, &self.plan) {
            Some(w) => {
                self.superseded(&w);
                false
            }
            None => self.same_heat_update().await,
        }
    }

    /// Nothing may be released: paused, aborting or ended.
    fn halted(&self) -> bool {
        self.paused.is_some() || self.ended.is_some() || self.aborting.is_some()
    }

    fn publish(&mut self) {
        self.update_status();
        let _ = self.tx.send(self.status.clone());
    }

    async fn run(mut self) -> RolloutStatus {
        loop {
            self.take_controls().await;
            let mut end = self.ended.clone();
            if end.is_none() && self.aborting.is_some() {
                end = self.abort_step().await;
            } else if end.is_none() {
                match self.obs.refresh().await {
                    // Each look at Heat reads the stack, marker included: a rollout
                    // superseded while it waits on Heat (no release due) ends all the same.
                    Ok(()) => match superseded_in(&self.obs.stack_tags, &self.plan) {
                        Some(winner) => self.superseded(&winner),
                        // Another update under this marker pauses the rollout; the step
                        // then releases nothing and says so.
                        None => {
                            self.same_heat_update().await;
                            end = self.step().await;
                        }
                    },
                    Err(e) => tracing::warn!("rollout {}: reading Heat: {e}", self.plan.id),
                }
            }
            // An abort applied during the step (a gate, a hook) ends the rollout now.
            let end = end.or_else(|| self.ended.clone());
            self.update_status();
            if let Some(state) = end {
                return self.finish(state).await;
            }
            let _ = self.tx.send(self.status.clone());
            self.driver_lock.beat();
            self.idle(self.options.poll).await;
        }
    }

    async fn finish(mut self, state: RolloutState) -> RolloutStatus {
        let cancelled = matches!(
            self.aborting.as_ref().map(|a| a.mode),
            Some(AbortMode::CancelUpdate | AbortMode::CancelWithoutRollback)
        );
        if cancelled {
            // Heat has left the cancelled update: nothing is updating or held any more, and
            // a node not done was not updated by this rollout.
            for n in self.status.nodes.iter_mut() {
                if matches!(
                    n.phase,
                    NodePhase::Updating | NodePhase::Paused | NodePhase::Waiting
                ) {
                    n.phase = NodePhase::Pending;
                }
            }
        }
        self.status.state = state;
        self.status.hooks_left = self.take_out_hooks().await;
        self.status.compute(self.now());
        // A rollout that ended has nothing releasing: no rate, no ETA.
        self.status.throughput_per_min = None;
        self.status.eta_secs = None;
        let (action, outcome) = match &self.status.state {
            RolloutState::Completed | RolloutState::CompletedWithSkips => {
                ("rollout.finish", Outcome::Ok)
            }
            // An abort that did what was asked is not a failure: the reason says where
            // Heat was left.
            RolloutState::Aborted { .. } => ("rollout.abort", Outcome::Ok),
            RolloutState::EndedElsewhere { .. } => (ENDED_ELSEWHERE, Outcome::Ok),
            // The reason alone: a reader puts the state's word before it (was: "failed:
            // failed: …" read back).
            RolloutState::Failed { reason } => (
                "rollout.finish",
                Outcome::Failed {
                    error: reason.clone(),
                },
            ),
            other => (
                "rollout.finish",
                Outcome::Failed {
                    error: other.label(),
                },
            ),
        };
        let mut entry = self
            .record(action, &self.target(), outcome)
            .plan(self.status.lines());
        if let RolloutState::Aborted { reason } | RolloutState::EndedElsewhere { reason } =
            &self.status.state
        {
            entry = entry.output(reason.clone());
        }
        self.note(entry).await;
        let _ = self.tx.send(self.status.clone());
        self.status
    }

    /// The end of every rollout: its hooks out of the stack's environment where that
    /// changes nothing else, else why they stay ([`super::unhook`]). A rollout another
    /// update superseded leaves the stack to that update.
    async fn take_out_hooks(&mut self) -> Option<String> {
        if let RolloutState::EndedElsewhere { .. } = &self.status.state {
            return Some(format!(
                "left to the update that superseded this rollout (`caldera heat hooks {}` \
                 shows what the environment holds)",
                self.plan.stack.name
            ));
        }
        let ending = match self.status.state {
            RolloutState::Completed => super::unhook::Ending::Completed,
            _ => super::unhook::Ending::Other,
        };
        let line = super::unhook::take_out(
            &self.heat,
            &self.ctx,
            &self.plan,
            ending,
            self.options.poll,
            self.probe(EngineStep::Unhook, None),
        )
        .await;
        Some(line)
    }

    /// Waits `dur`, or less when a control arrives (applied at once). True when one did.
    async fn idle(&mut self, dur: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + dur;
        loop {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return false;
            }
            let cs = self.wait_controls((deadline - now).min(CONTROL_POLL)).await;
            if !cs.is_empty() {
                for c in cs {
                    self.apply_control(c).await;
                }
                self.publish();
                return true;
            }
        }
    }

    /// The controls that arrive within `slice`: from this process's handles (at once) or
    /// other processes' journal requests (read at the end of the slice).
    async fn wait_controls(&mut self, slice: Duration) -> Vec<Control> {
        let mut cs = Vec::new();
        if self.controls_open {
            tokio::select! {
                c = self.controls.recv() => match c {
                    Some(c) => cs.push(c),
                    None => self.controls_open = false,
                },
                _ = tokio::time::sleep(slice) => {}
            }
        } else {
            tokio::time::sleep(slice).await;
        }
        cs.extend(self.drain_channel());
        cs.extend(self.journal_requests());
        cs
    }

    fn drain_channel(&mut self) -> Vec<Control> {
        let mut cs = Vec::new();
        while let Ok(c) = self.controls.try_recv() {
            cs.push(c);
        }
        cs
    }

    /// Applies every control waiting. True when there was one.
    async fn take_controls(&mut self) -> bool {
        let mut cs = self.drain_channel();
        cs.extend(self.journal_requests());
        let any = !cs.is_empty();
        for c in cs {
            self.apply_control(c).await;
        }
        any
    }

    /// Requests other processes wrote to the journal since we last looked. A journal that
    /// cannot be read may hold a pause: the rollout pauses until it can be read.
    fn journal_requests(&mut self) -> Vec<Control> {
        let (entries, offset) = match self.ctx.journal.read_from(self.journal_offset) {
            Ok(read) => read,
            Err(e) => {
                tracing::error!("rollout {}: {e}", self.plan.id);
                if self.ended.is_none() {
                    self.paused = Some(format!(
                        "{e}: a control request may be in it, so nothing more is sent to Heat \
                         until it reads again; {}",
                        self.sent_so_far()
                    ));
                }
                return Vec::new();
            }
        };
        self.journal_offset = offset;
        let target = self.target();
        entries
            .into_iter()
            .filter(|e| {
                e.rollout.as_deref() == Some(self.plan.id.as_str())
                    || (e.rollout.is_none() && e.target.starts_with(&target))
            })
            .filter_map(|e| parse_request(&self.plan, &e))
            .collect()
    }

    async fn apply_control(&mut self, c: Control) {
        let target = self.target();
        if self.ended.is_some() || self.aborting.is_some() {
            // An abort is the last word; later controls change nothing.
            tracing::info!("rollout {}: {c:?} after the abort: ignored", self.plan.id);
            return;
        }
        match c {
            Control::Pause => {
                // A pause already there (a failure's) keeps its reason: the operator's word
                // is added to it, not put in its place.
                self.paused = Some(match self.paused.take() {
                    // Already said (a second pause).
                    Some(why) if why.contains(OPERATOR_PAUSE) => why,
                    Some(why) => with_operator(&why),
                    None => OPERATOR_PAUSE.into(),
                });
                let e = self.record("rollout.pause", &target, Outcome::Ok);
                self.note(e).await;
            }
            Control::Skip(m) => {
                self.skipped.insert(m.clone());
                let e = self.record("rollout.skip", &self.member_target(&m), Outcome::Ok);
                self.note(e).await;
            }
            Control::Resume { parameters } if self.failure_before_heats() => {
                let e = self
                    .record("rollout.resume", &target, Outcome::Started)
                    .output(format!(
                        "a member failed and Heat has not ended its update yet (stack {}): \
                         the resume applies when Heat says the update failed",
                        self.obs.stack_status
                    ));
                if self.note(e).await {
                    self.resume_when_update_fails = Some(parameters);
                    if let Some(reason) = self.paused.take() {
                        self.paused = Some(format!(
                            "{reason}; resume taken: it applies when Heat ends the failed update"
                        ));
                    }
                }
            }
            Control::Resume { parameters } => {
                self.resume_when_update_fails = None;
                let failed = self.obs.stack_status.is_failed();
                if let Some(error) = resume_overrides_refusal(failed, &parameters) {
                    let e = self.record("rollout.resume", &target, Outcome::Refused { error });
                    self.note(e).await;
                    return;
                }
                // Another update Heat began under this rollout's marker, that the operator
                // was told of when it paused: their resume drives it, with its values. One
                // found only now is said first (the rollout stays paused).
                if !self.adopt_heat_update().await {
                    let e = self.record(
                        "rollout.resume",
                        &target,
                        Outcome::Refused {
                            error: "Heat began another update of the stack since this resume \
                                    was asked (see the pause): resume again to drive it"
                                .into(),
                        },
                    );
                    self.note(e).await;
                    return;
                }
                // Overrides apply to the update sent to retry failed members, and name the
                // rollout from now on. A resume without any keeps the rollout's name (one
                // read back from Heat has no values to name it by: "to : completed").
                if !parameters.is_empty() {
                    let mut values = self.plan.extra_parameters.clone();
                    values.extend(parameters);
                    self.plan.set_values(values);
                    self.status.image = self.plan.image.clone();
                }
                if self.obs.stack_status.is_failed() {
                    self.draining = true;
                }
                let e = self
                    .record("rollout.resume", &target, Outcome::Ok)
                    .spec(&self.plan.extra_parameters);
                if !self.note(e).await {
                    return; // the journal failed: still paused, saying why
                }
                self.paused = None;
                self.timed_out.clear();
                // Waiting for Heat to close the update starts again.
                self.closing_since = None;
                self.closing_pause = None;
            }
            Control::Abort(mode) => self.abort(mode).await,
        }
    }

    /// Controls waiting when the rollout paused itself on a failure were asked before it:
    /// a resume among them answered what the operator saw then, not this failure, so it is
    /// refused (journaled as such: resume again to go on); pauses, skips and aborts still
    /// apply. Without this, a resume pressed a moment before a node failed would release
    /// the next batch over the failure.
    async fn answer_controls_asked_before_the_pause(&mut self) {
        let mut waiting = self.drain_channel();
        waiting.extend(self.journal_requests());
        for c in waiting {
            match c {
                // After an abort among them, nothing more is the operator's to ask again.
                Control::Resume { .. } if self.ended.is_some() || self.aborting.is_some() => {
                    tracing::info!("rollout {}: resume after the abort: ignored", self.plan.id);
                }
                Control::Resume { .. } => {
                    let e = self.record(
                        "rollout.resume",
                        &self.target(),
                        Outcome::Refused {
                            error: "asked before the rollout paused on a failure: resume \
                                    again to go on"
                                .into(),
                        },
                    );
                    self.note(e).await;
                }
                other => self.apply_control(other).await,
            }
        }
    }

    fn is_done(&self, m: &str) -> bool {
        self.obs.members.get(m).is_some_and(|t| t.done)
    }

    fn settled(&self, m: &str) -> bool {
        self.is_done(m)
            || self.skipped.contains(m)
            || (self.draining && self.obs.members.get(m).is_some_and(|t| t.failed.is_some()))
    }

    /// Draining is over when no member waits on a hook of the failed update or is still
    /// being updated by it.
    fn drained(&self) -> bool {
        self.plan.members().all(|m| {
            self.skipped.contains(m)
                || self.obs.members.get(m).is_none_or(|t| {
                    // Released and no longer being updated: Heat's last word on it is not
                    // in progress (an attempt Heat cancelled, read as superseded, is over).
                    let over = t.released_at.is_none()
                        || t.status.as_ref().is_some_and(|s| !s.is_in_progress());
                    t.done || t.failed.is_some() || (!t.paused && over)
                })
        })
    }

    /// Sends the update again so Heat retries the failed members.
    async fn retry_update(&mut self) -> bool {
        let target = self.target();
        let update = StackUpdate {
            parameters: self.plan.parameters(),
            environment: Some(self.plan.hooks_environment()),
            existing: true,
            ..Default::default()
        };
        let call = ApiCall::new(
            "PATCH",
            stack_path(&self.plan.stack),
            update_body_text(&update),
        );
        if self.halted() {
            return false;
        }
        if !self.write(
            self.record("rollout.retry", &target, Outcome::Started)
                .calls(vec![call]),
        ) {
            return false; // paused by the failed write: the retry was not sent
        }
        let seen = self.obs.group_updates;
        match self.heat.update_stack(&self.plan.stack, &update).await {
            Ok(()) => {
                self.ignore_failures_until_update = Some(seen);
                self.draining = false;
                self.follow_next_update();
                self.write(self.record("rollout.retry", &target, Outcome::Ok));
                true
            }
            Err(e) => {
                self.write(self.record(
                    "rollout.retry",
                    &target,
                    Outcome::Failed {
                        error: e.to_string(),
                    },
                ));
                self.paused = Some(format!("retrying the update failed: {e}"));
                false
            }
        }
    }

    /// The first batch with a member neither done nor skipped.
    fn current_batch(&self) -> Option<usize> {
        self.plan
            .batches
            .iter()
            .position(|b| b.iter().any(|m| !self.settled(m)))
    }

    /// Paused on a member's failure that Heat has not yet turned into its update's failure
    /// (the member's stack failed; the group's update is still in progress).
    fn failure_before_heats(&self) -> bool {
        self.paused.is_some()
            && !self.draining
            && self.obs.stack_status.is_in_progress()
            && self
                .plan
                .members()
                .any(|m| self.obs.members.get(m).is_some_and(|t| t.failed.is_some()))
    }

    fn failure(&self) -> Option<String> {
        if self.draining {
            return None;
        }
        if let Some(seen) = self.ignore_failures_until_update {
            if self.obs.group_updates <= seen {
                return None;
            }
        }
        for m in self.plan.members() {
            if let Some(reason) = self.obs.members.get(m).and_then(|t| t.failed.clone()) {
                return Some(format!("node {m} failed: {reason}"));
            }
        }
        let stack = &self.obs.stack_status;
        // Heat's cancel of the update, or its rollback, by another hand (this driver's own
        // abort does not come here): said as what it is, not as a failure of the update.
        // Heat 27 says a `cancel_without_rollback` in the stack's reason (`Stack UPDATE
        // cancelled`); a `cancel_update` is a rollback, as is Heat's own after a failure.
        if stack.is_failed() && self.obs.stack_reason.starts_with(CANCELLED) {
            return Some(format!(
                "Heat's update was cancelled, not by this driver (another machine's `rollout \
                 abort --cancel`, or `openstack stack cancel --no-rollback`): stack {stack}: \
                 {}; nothing more is released here",
                self.obs.stack_reason
            ));
        }
        if stack.action == "ROLLBACK" {
            return Some(format!(
                "Heat is rolling the update back, not at this driver's word (another \
                 machine's `rollout abort --rollback`, `openstack stack cancel`, or Heat's \
                 own rollback after a failure): stack {stack}: {}; nothing more is released \
                 here",
                self.obs.stack_reason
            ));
        }
        if stack.is_failed() {
            return Some(format!("stack {stack}: {}", self.obs.stack_reason));
        }
        None
    }

    async fn hook(&mut self, point: HookPoint, batch: usize, member: Option<&str>) -> bool {
        let Some(command) = self.options.hooks.command(point).map(str::to_string) else {
            return true;
        };
        let mut ctx = HookContext {
            cluster: self.plan.target.cluster.clone(),
            nodegroup: self.plan.target.nodegroup.clone(),
            rollout: Some(self.plan.id.clone()),
            batch: Some(batch + 1),
            batch_nodes: self.plan.batches.get(batch).cloned().unwrap_or_default(),
            ..Default::default()
        };
        if let Some(m) = member {
            ctx.node_member = Some(m.to_string());
            ctx.node_name = Some(
                self.obs
                    .member_server_name(m)
                    .await
                    .unwrap_or(m.to_string()),
            );
            ctx.node_index = m.parse().ok();
            ctx.node_ip = self.obs.member_ip(m).await;
        }
        let step = match point {
            HookPoint::PreBatch | HookPoint::PreNode => EngineStep::PreHook,
            _ => EngineStep::PostHook,
        };
        self.publish();
        self.probe(step, member).await;
        let target = match member {
            Some(m) => self.member_target(m),
            None => self.batch_target(batch),
        };
        // A hook changes the cluster (a drain): recorded before it runs, like a call.
        let e = self
            .record("hook.started", &target, Outcome::Started)
            .plan(vec![format!("{}: {}", point.as_str(), command)]);
        if !self.note(e).await {
            return false;
        }
        // Controls arriving while the hook runs are applied at once: a pause shows now and
        // holds what follows the hook; an abort stops the hook (its process is killed).
        let timeout = self.options.hooks.timeout();
        let run = run_hook(point, &command, &ctx, timeout);
        tokio::pin!(run);
        let run: HookRun = loop {
            tokio::select! {
                r = &mut run => break r,
                cs = self.wait_controls(CONTROL_POLL) => {
                    if cs.is_empty() {
                        continue;
                    }
                    for c in cs {
                        self.apply_control(c).await;
                    }
                    self.publish();
                    if self.ended.is_some() || self.aborting.is_some() {
                        let e = self.record(
                            &format!("hook.{}", point.as_str()),
                            &target,
                            Outcome::Failed {
                                error: "stopped by the abort".into(),
                            },
                        );
                        self.note(e).await;
                        return false;
                    }
                }
            }
        };
        let outcome = if run.ok() {
            Outcome::Ok
        } else {
            Outcome::Failed {
                error: run.summary(),
            }
        };
        let e = self
            .record(&format!("hook.{}", point.as_str()), &target, outcome)
            .output(run.output.clone());
        self.note(e).await;
        if !run.ok() && self.paused.is_none() {
            self.paused = Some(format!("{} on {target}", run.summary()));
        }
        run.ok()
    }

    /// Releases member `m` from its hook, unless a control says otherwise: the controls are
    /// read immediately before, under the node group's control lock, and the release's
    /// intent is journaled under the same lock, so a pause, abort or skip recorded before
    /// this point is honoured and one recorded later comes after the release in the
    /// journal. False when it was not released.
    async fn release(&mut self, m: &str) -> bool {
        self.probe(EngineStep::BeforeRelease, Some(m)).await;
        // Still ours in Heat? Another machine's start may have replaced our update since
        // the last look; then its driver releases, and this one ends without a signal.
        if !self.still_ours().await {
            return false;
        }
        let target = self.member_target(m);
        let call = match self.obs.release_call(m) {
            Ok(call) => call,
            Err(e) => {
                self.paused = Some(format!("{target}: {}", e.message));
                return false;
            }
        };
        let action = if self.is_done(m) {
            "rollout.passthrough"
        } else {
            "rollout.release"
        };
        {
            let guard = match ControlLock::acquire(&self.lock_dir, &lock::key(&self.plan)) {
                Ok(g) => g,
                Err(e) => {
                    self.paused = Some(format!("the rollout's control lock: {e}"));
                    return false;
                }
            };
            let mut cs = self.drain_channel();
            cs.extend(self.journal_requests());
            if !cs.is_empty() {
                drop(guard);
                for c in cs {
                    self.apply_control(c).await;
                }
                // Decided again on the next pass, with the controls applied.
                return false;
            }
            if self.halted() || self.skipped.contains(m) {
                return false;
            }
            let intent = self
                .record(action, &target, Outcome::Started)
                .calls(vec![call]);
            if !self.write(intent) {
                return false; // paused, saying what was and was not released
            }
        }
        self.probe(EngineStep::JournalWrite, Some(m)).await;
        let outcome = match self.obs.release(m).await {
            Ok(()) => {
                // Until the next look at Heat, count it as released.
                if let Some(t) = self.obs.members.get_mut(m) {
                    t.paused = false;
                    t.released_at.get_or_insert_with(Utc::now);
                }
                Outcome::Ok
            }
            // Heat refuses when the hook is not pending: already released (by us before a
            // restart, or by someone else). Heat's events will say which.
            Err(e) => Outcome::Failed { error: e.message },
        };
        let released = outcome == Outcome::Ok;
        let e = self.record(action, &target, outcome);
        self.note(e).await;
        if released {
            self.probe(EngineStep::MemberUpdating, Some(m)).await;
        }
        true
    }

    /// Pauses on the failure Heat shows (see [`Runner::failure`]), once, journaled; or
    /// ends the rollout failed where the plan says to stop on a failure. Nothing is
    /// released while it stands.
    async fn pause_on_failure(&mut self) -> Option<RolloutState> {
        let reason = self.failure()?;
        if self.paused.is_none() {
            self.probe(EngineStep::AfterFailure, None).await;
            if self.ended.is_some() || self.aborting.is_some() {
                return None;
            }
            if !self.plan.options.pause_on_failure {
                return Some(RolloutState::Failed { reason });
            }
            let e = self.record(
                "rollout.pause",
                &self.target(),
                Outcome::Failed {
                    error: reason.clone(),
                },
            );
            // A journal that failed just now paused the rollout too: both are said.
            let journal = (!self.note(e).await).then(|| self.paused.take()).flatten();
            self.paused = Some(match journal {
                Some(j) => format!("{reason}; and {j}"),
                None => reason,
            });
            self.answer_controls_asked_before_the_pause().await;
        }
        None
    }

    async fn step(&mut self) -> Option<RolloutState> {
        self.closing_ended();
        if !self.obs.stack_status.is_in_progress() {
            if let Some(parameters) = self.resume_when_update_fails.take() {
                self.apply_control(Control::Resume { parameters }).await;
            }
        }
        // A failure (or Heat's cancel, or its rollback) pauses before anything is let
        // through: members Heat holds in a rollback are not this rollout's to release.
        if self.failure().is_some() {
            return self.pause_on_failure().await;
        }
        // Members Heat paused again though already updated (a resumed update re-pauses the
        // whole group): let them through at once, they are not part of any batch now.
        let through: Vec<String> = self
            .obs
            .members
            .iter()
            .filter(|(_, t)| t.done && t.paused)
            .map(|(m, _)| m.clone())
            .collect();
        for m in through {
            if self.halted() {
                return None; // paused, aborting (or the journal failed): nothing is released
            }
            self.passthrough.insert(m.clone());
            self.release(&m).await;
        }

        // Post-node hooks for members this rollout updated.
        let finished: Vec<(usize, String)> = self
            .plan
            .batches
            .iter()
            .enumerate()
            .flat_map(|(b, ms)| ms.iter().map(move |m| (b, m.clone())))
            .filter(|(_, m)| {
                self.is_done(m)
                    && !self.post_node_done.contains(m)
                    && !self.passthrough.contains(m)
                    && self.obs.members.get(m).is_some_and(|t| t.done_at.is_some())
            })
            .collect();
        for (b, m) in finished {
            if self.halted() {
                return None;
            }
            if !self.hook(HookPoint::PostNode, b, Some(&m)).await {
                return None;
            }
            self.post_node_done.insert(m);
        }
        if self.halted() {
            return None;
        }

        if self.draining && self.drained() {
            let failed_left = self
                .plan
                .members()
                .any(|m| self.obs.members.get(m).is_some_and(|t| t.failed.is_some()));
            if failed_left || !self.obs.stack_status.is_complete() {
                self.retry_update().await;
                return None;
            }
            self.draining = false;
        }
        let Some(b) = self.current_batch() else {
            if self.draining {
                return None;
            }
            return self.finish_batches_then_complete().await;
        };
        // Gate and close every earlier batch before touching this one.
        for k in 0..b {
            if !self.batch_finished.contains(&k) && !self.close_batch(k).await {
                return None;
            }
        }
        if !self.batch_started.contains(&b) {
            if !self.hook(HookPoint::PreBatch, b, None).await || self.halted() {
                return None;
            }
            self.batch_started.insert(b);
            let e = self.record("rollout.batch_started", &self.batch_target(b), Outcome::Ok);
            self.note(e).await;
        }
        let members = self.plan.batches[b].clone();
        for m in members {
            if self.settled(&m) {
                continue;
            }
            let Some(t) = self.obs.members.get(&m).cloned() else {
                continue;
            };
            if t.released_at.is_some() {
                let age = self
                    .released_local
                    .entry(m.clone())
                    .or_insert_with(std::time::Instant::now)
                    .elapsed();
                if age > self.plan.options.node_timeout() && self.timed_out.insert(m.clone()) {
                    let reason = format!(
                        "node {m} not done {}s after release (timeout)",
                        age.as_secs()
                    );
                    let e = self.record(
                        "rollout.pause",
                        &self.member_target(&m),
                        Outcome::Failed {
                            error: reason.clone(),
                        },
                    );
                    self.note(e).await;
                    self.paused = Some(reason);
                    return None;
                }
                continue;
            }
            if !t.paused {
                continue; // Heat has not reached it yet.
            }
            if self.halted() {
                return None;
            }
            if !self.pre_node_done.contains(&m) {
                if !self.hook(HookPoint::PreNode, b, Some(&m)).await {
                    return None;
                }
                self.pre_node_done.insert(m.clone());
            }
            self.release(&m).await;
            if self.halted() {
                return None;
            }
        }
        None
    }

    /// The health gate and the post-batch hook of batch `k`.
    async fn close_batch(&mut self, k: usize) -> bool {
        let wait = self.plan.options.gate_wait();
        if !wait.is_zero() {
            // Shown while the gate waits (what it waits after is done).
            self.publish();
            self.probe(EngineStep::GateWait, None).await;
            // The gate is a wait like any other: a control ends it at once (a pause or an
            // abort leaves the batch unclosed; the gate runs again after a resume).
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                if self.halted() {
                    return false;
                }
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    break;
                }
                self.idle(deadline - now).await;
            }
            if self.obs.refresh().await.is_ok() {
                if let Some(reason) = self.failure() {
                    self.paused = Some(format!("health gate after batch {}: {reason}", k + 1));
                    return false;
                }
            }
        }
        if !self.hook(HookPoint::PostBatch, k, None).await {
            return false;
        }
        if self.halted() {
            return false;
        }
        self.batch_finished.insert(k);
        let e = self.record("rollout.batch_finished", &self.batch_target(k), Outcome::Ok);
        self.note(e).await;
        true
    }

    async fn finish_batches_then_complete(&mut self) -> Option<RolloutState> {
        for k in 0..self.plan.batches.len() {
            if !self.batch_finished.contains(&k) && !self.close_batch(k).await {
                return None;
            }
        }
        if self
            .skipped
            .iter()
            .any(|m| skip_stands(&self.skipped, &self.obs, m))
        {
            return Some(RolloutState::CompletedWithSkips);
        }
        let s = &self.obs.stack_status;
        if s.is_complete() && s.action == "UPDATE" {
            return Some(RolloutState::Completed);
        }
        if s.is_in_progress() {
            self.closing().await;
        }
        None // Heat is still closing the update.
    }

    fn update_status(&mut self) {
        let current = self.current_batch();
        fill_nodes(&mut self.status, &self.obs, &self.skipped, current);
        if let Some(a) = &self.aborting {
            self.status.state = RolloutState::Aborting {
                reason: match a.mode {
                    AbortMode::CancelUpdate => format!(
                        "Heat rolls back (stack {}); {} hook(s) of the rollback cleared",
                        self.obs.stack_status,
                        a.cleared.len()
                    ),
                    AbortMode::CancelWithoutRollback => format!(
                        "cancel_without_rollback sent; stack {}",
                        self.obs.stack_status
                    ),
                    AbortMode::LeavePaused => format!(
                        "nothing more is released; waiting for {} node(s) Heat is updating",
                        self.updating().len()
                    ),
                },
            };
        } else if !self.status.state.is_final() {
            self.status.state = match &self.paused {
                Some(reason) => RolloutState::Paused {
                    reason: reason.clone(),
                },
                None if self.obs.group_updates == 0 => RolloutState::Starting,
                None => RolloutState::Running,
            };
        }
        self.status.driver = Some(DriverInfo::Here);
        let now = self.now();
        self.status.note_pause(now);
        self.status.compute(now);
    }

    /// Durations and rates are in Heat's time: its newest event, or our clock if later.
    fn now(&self) -> chrono::DateTime<Utc> {
        let now = Utc::now();
        self.obs.last_event_time.map_or(now, |t| t.max(now))
    }
}

/// Appends a request for a rollout running in another process (or the next one to attach),
/// under the node group's control lock (see [`lock`]): the engine sees it before its next
/// release, or it is recorded after that release.
/// Returns the journal offset after it, where the engine's acknowledgement (see
/// [`ack_action`]) will be.
pub fn request(ctx: &ActionContext, plan: &RolloutPlan, control: &Control) -> ServiceResult<u64> {
    let target = plan.target.label();
    let entry = match control {
        Control::Pause => Entry::new(&ctx.actor, REQUEST_PAUSE, &target, Outcome::Ok),
        Control::Resume { parameters } => {
            Entry::new(&ctx.actor, REQUEST_RESUME, &target, Outcome::Ok).spec(parameters)
        }
        Control::Abort(mode) => {
            Entry::new(&ctx.actor, REQUEST_ABORT, &target, Outcome::Ok).spec(mode)
        }
        Control::Skip(m) => {
            Entry::new(&ctx.actor, REQUEST_SKIP, &plan.member_label(m), Outcome::Ok)
        }
    };
    let _guard = ControlLock::acquire(&lock::lock_dir(ctx.journal.path()), &lock::key(plan))
        .map_err(|e| ServiceError::new(ErrorKind::Config, format!("the control lock: {e}")))?;
    ctx.record_at(&entry.rollout(&plan.id))
}

/// The entry an engine journals when it honours `control`: the acknowledgement a
/// requester waits for. An abort is honoured when it is recorded (`rollout.aborting`:
/// nothing is released from then on); `rollout.abort` follows when Heat has settled.
pub fn ack_action(control: &Control) -> &'static str {
    match control {
        Control::Pause => "rollout.pause",
        Control::Resume { .. } => "rollout.resume",
        Control::Skip(_) => "rollout.skip",
        Control::Abort(_) => "rollout.aborting",
    }
}

/// Why a resume's parameter overrides are refused: they go with the update a resume sends
/// again after Heat's update failed (Heat retries the failed members with them). While
/// Heat's update has not failed, nothing would send them, and the rollout would go on with
/// its own values, as if they had been taken. `None`: no overrides, or a failed update.
pub fn resume_overrides_refusal(
    update_failed: bool,
    parameters: &ParameterValues,
) -> Option<String> {
    if update_failed || parameters.is_empty() {
        return None;
    }
    let keys: Vec<&str> = parameters.keys().map(String::as_str).collect();
    Some(format!(
        "--set {}: a resume's values go with the update it sends again after Heat's update \
         failed, and this rollout's has not failed, so nothing would send them; resume \
         without --set, or abort the rollout and start one with the new values",
        keys.join(", ")
    ))
}

/// `a, b, c` (the first 20, then how many more), or `none`.
fn name_list(names: &[&str]) -> String {
    super::progress::names_shown(names, 20)
}

/// The control a journal entry asks for, when it is a request of the rollout `plan`.
pub fn parse_request(plan: &RolloutPlan, e: &Entry) -> Option<Control> {
    match e.action.as_str() {
        REQUEST_PAUSE => Some(Control::Pause),
        REQUEST_RESUME => Some(Control::Resume {
            parameters: e
                .spec
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or_default(),
        }),
        REQUEST_ABORT => Some(Control::Abort(
            e.spec
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or(AbortMode::LeavePaused),
        )),
        REQUEST_SKIP => Some(Control::Skip(plan.member_of_label(&e.target))),
        _ => None,
    }
}

/// Whether member `m`'s skip (journaled here) still stands: until Heat shows the member
/// updated (a driver elsewhere never read this journal's skip), then Heat's word wins (was:
/// `skipped 1` beside `new` for a member Heat had updated). Only done: Heat's cancel
/// clears and fails the members it held, a skipped one too, and that is no update.
fn skip_stands(skipped: &BTreeSet<String>, obs: &HeatReader, m: &str) -> bool {
    skipped.contains(m) && !obs.members.get(m).is_some_and(|t| t.done)
}

/// Node phases from what Heat says.
fn fill_nodes(
    status: &mut RolloutStatus,
    obs: &HeatReader,
    skipped: &BTreeSet<String>,
    current: Option<usize>,
) {
    let updating = obs.stack_status.is_in_progress();
    for n in status.nodes.iter_mut() {
        let t = obs.members.get(&n.name);
        n.phase = if skip_stands(skipped, obs, &n.name) {
            NodePhase::Skipped
        } else if let Some(t) = t {
            if t.done {
                NodePhase::Done
            } else if t.failed.is_some() {
                NodePhase::Failed
            } else if t.released_at.is_some() {
                NodePhase::Updating
            } else if t.paused && (current == Some(n.batch) || updating) {
                // Heat holds it on the rollout's hook, whether or not its batch has come:
                // Heat pauses every member it reaches at once (a group's members update
                // side by side), so while the update runs a later batch's members are held,
                // not merely old. Once the update has ended (failed), a later batch's pause
                // is no longer Heat's work: the member is old.
                NodePhase::Paused
            } else if current == Some(n.batch) {
                NodePhase::Waiting
            } else {
                NodePhase::Pending
            }
        } else {
            NodePhase::Pending
        };
        if let Some(t) = t {
            n.released_at = t.done_released_at.or(t.released_at);
            n.finished_at = t.done_at;
            n.reason = t.failed.clone().or_else(|| {
                t.check_failed.as_ref().map(|r| {
                    format!("CHECK_FAILED (unhealthy: {r}): Heat's next update replaces it")
                })
            });
        }
    }
    status.unhealthy = obs
        .members
        .iter()
        .filter(|(_, t)| t.check_failed.is_some())
        .map(|(m, _)| m.clone())
        .collect();
    status.current_batch = current;
    status.stack_status = obs.stack_status.raw.clone();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Actor;

    fn request_entry(n: usize) -> Entry {
        let actor = Actor {
            cloud: "prod".into(),
            user: "alice".into(),
        };
        Entry::new(&actor, REQUEST_PAUSE, &format!("c1/w{n}"), Outcome::Ok).rollout("r1")
    }

    /// A writer died mid-line, at any byte of its entry; a driver then takes the point
    /// where requests start, and the next append (a pause request) moves the torn bytes
    /// aside and lands where they were. The driver must read that request, whole, from
    /// its offset: never from inside it.
    #[test]
    fn requests_offset_after_a_torn_tail_at_every_byte_reads_the_next_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let mut line = serde_json::to_vec(&request_entry(0)).unwrap();
        line.push(b'\n');
        let scratch = Journal::open(dir.path().join("scratch.jsonl"));
        scratch.append(&request_entry(0)).unwrap();
        let head = std::fs::read(scratch.path()).unwrap();
        for cut in 0..line.len() {
            let mut bytes = head.clone();
            bytes.extend_from_slice(&line[..cut]);
            std::fs::write(&path, &bytes).unwrap();
            let j = Journal::open(&path);
            let from = journal_len(&j);
            j.append(&request_entry(1)).unwrap();
            let (entries, _) = j
                .read_from(from)
                .unwrap_or_else(|e| panic!("torn at byte {cut} of {}: {e}", line.len()));
            let targets: Vec<&str> = entries.iter().map(|e| e.target.as_str()).collect();
            assert_eq!(targets, ["c1/w1"], "torn at byte {cut}");
        }
    }

    /// A take-over's driverless span (from the killed driver's last heartbeat, `since`, to
    /// the take-over) is a pause of the pace, beside an operator's pause and resume; a
    /// `since` not before its entry (a clock step) adds nothing.
    #[test]
    fn a_take_overs_driverless_span_is_kept_out_of_the_pace() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path().join("journal.jsonl"));
        let plan = crate::drivers::rollout_plan::sample_plan("img-v2", &["0"]);
        let actor = Actor {
            cloud: "prod".into(),
            user: "alice".into(),
        };
        let base = Utc::now() - chrono::Duration::seconds(600);
        let at = |secs: i64| base + chrono::Duration::seconds(secs);
        let entry = |action: &str, secs: i64| {
            let mut e = Entry::new(&actor, action, "c1/w", Outcome::Ok).rollout(&plan.id);
            e.time = at(secs);
            e
        };
        for e in [
            entry("rollout.pause", 10),
            entry("rollout.resume", 20),
            entry("rollout.reattach", 100).since(at(40)),
            entry("rollout.reattach", 200).since(at(250)),
        ] {
            j.append(&e).unwrap();
        }
        let (_, memory) = journal_memory(&j, &plan).unwrap();
        assert_eq!(
            memory.paused,
            vec![(at(10), Some(at(20))), (at(40), Some(at(100)))]
        );
    }
}
