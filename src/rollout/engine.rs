//! The rollout engine: one task per rollout that releases members batch by batch from their
//! `pre-update` hooks and waits for each batch, with operator hooks, a health gate, pause,
//! resume, skip and abort.
//!
//! Its truth is Heat's: which members are paused, released, done or failed comes from the
//! group's events and the members' stacks ([`HeatObserver`]); the journal adds what Heat
//! cannot know (the plan, which operator hooks already ran). A member is released only when
//! Heat shows it paused on its hook in the current update, so a restarted process, or a
//! second one, never releases a member twice: Heat itself refuses to clear a hook that is
//! not pending.

use super::observe::{newest_event, HeatObserver};
use super::plan::{hooks_environment, RolloutPlan};
use super::status::{NodePhase, NodeProgress, RolloutState, RolloutStatus};
use crate::api::heat::{HeatClient, StackAction, StackUpdate};
use crate::drivers::actions::ActionContext;
use crate::drivers::guard::Reach;
use crate::drivers::heat_native::{stack_path, update_body_text, HeatNativeDriver};
use crate::journal::{ApiCall, Entry, Journal, Outcome};
use crate::lifecycle::{run_hook, HookContext, HookPoint, HookRun, HookSet};
use crate::service::{ErrorKind, ServiceError, ServiceResult};
use chrono::Utc;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

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

/// What the console or a command asks of a running rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    Pause,
    /// Continue; after a failure, re-send the update with these parameter overrides (JSON
    /// text values, e.g. a fixed `node_fail_index`) so Heat retries the failed member.
    Resume {
        parameters: BTreeMap<String, String>,
    },
    Skip(String),
    Abort(AbortMode),
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
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            poll: Duration::from_secs(2),
            hooks: HookSet::default(),
        }
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
/// the status it sees.
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
    /// engine. For fakes of the console's operator and for tests.
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
    /// Stops the engine task at once, as if the process died (Heat carries on).
    pub fn kill(self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

fn err(e: crate::api::ApiError) -> ServiceError {
    ServiceError::from(e)
}

/// Sends the rollout's PATCH (after the guard rails; the plan goes to the journal first)
/// and starts the engine.
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
    let detail = heat.get_stack(&plan.stack, false).await.map_err(err)?;
    if detail.summary.status.is_in_progress() {
        return Err(crate::drivers::refused(format!(
            "{target} is {}: another action is running (reattach with `rollout resume`)",
            detail.summary.status
        )));
    }
    // The baseline: what Heat's group stack said last before our PATCH.
    let mut plan = plan;
    let driver = HeatNativeDriver::new(heat.clone(), crate::templates::Machines::Test);
    let group = driver.group_stack(&plan.stack).await?;
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
    journal_memory(&ctx.journal, &plan.id).map_err(nothing_sent)?;
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
    // The update is in Heat now, every member held on its hook: an engine must exist to
    // say so and to be resumed, even when the journal failed just now (it starts paused).
    let paused = recorded.err().map(|e| {
        format!(
            "{}; the update was sent (members wait on their pre-update hooks), nothing \
             released; fix the journal, then `caldera rollout resume`",
            e.message
        )
    });
    spawn(heat, ctx, plan, options, Vec::new(), paused)
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

/// Attaches to a rollout already under way (after a restart, or another operator's).
/// `initial` controls (e.g. the resume that made the operator reattach) are applied before
/// the engine first looks at Heat, so it never acts on a state they change.
pub async fn reattach(
    heat: HeatClient,
    ctx: ActionContext,
    plan: RolloutPlan,
    options: EngineOptions,
    initial: Vec<Control>,
) -> ServiceResult<RolloutHandle> {
    let target = plan.target.label();
    ctx.check(
        "rollout.reattach",
        &target,
        &plan.target.cluster,
        Reach::Nodes,
        None,
    )?;
    ctx.record(
        &Entry::new(&ctx.actor, "rollout.reattach", &target, Outcome::Ok).rollout(&plan.id),
    )?;
    spawn(heat, ctx, plan, options, initial, None).await
}

/// The plan of the newest rollout of `target` in the journal that has not ended.
pub fn find_active(journal: &Journal, target: &str) -> ServiceResult<Option<RolloutPlan>> {
    let entries = journal
        .read_all()
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    let mut active: Option<RolloutPlan> = None;
    for e in entries.iter().filter(|e| e.target == target) {
        match e.action.as_str() {
            "rollout.start" => {
                active = e
                    .spec
                    .as_deref()
                    .and_then(|s| serde_json::from_str::<RolloutPlan>(s).ok());
            }
            "rollout.started" if matches!(e.outcome, Outcome::Failed { .. }) => active = None,
            "rollout.finish" | "rollout.abort"
                if active.as_ref().map(|p| Some(&p.id) == e.rollout.as_ref()) == Some(true) =>
            {
                active = None;
            }
            _ => {}
        }
    }
    Ok(active)
}

async fn spawn(
    heat: HeatClient,
    ctx: ActionContext,
    plan: RolloutPlan,
    options: EngineOptions,
    initial: Vec<Control>,
    paused: Option<String>,
) -> ServiceResult<RolloutHandle> {
    let driver = HeatNativeDriver::new(heat.clone(), crate::templates::Machines::Test);
    let group = driver.group_stack(&plan.stack).await?;
    let mut obs = HeatObserver::new(
        heat.clone(),
        plan.stack.clone(),
        group,
        plan.since_event.clone(),
        plan.since_time,
    );
    obs.attach(&plan.image).await?;
    // Controls sent right after attaching (a resume) must see Heat's current state.
    obs.refresh().await?;
    let (journal_offset, memory) = journal_memory(&ctx.journal, &plan.id)?;
    let runner = Runner {
        heat,
        status: initial_status(&plan),
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
        journal_offset,
        ignore_failures_until_update: None,
        draining: false,
        plan,
    };
    let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
    for c in initial {
        // The receiver is alive: it is moved into the task below.
        let _ = ctl_tx.send(c);
    }
    let (st_tx, st_rx) = watch::channel(runner.status.clone());
    let task = tokio::spawn(runner.run(ctl_rx, st_tx));
    Ok(RolloutHandle {
        control: ctl_tx,
        status: st_rx,
        task: Some(task),
    })
}

#[derive(Default)]
struct Memory {
    skipped: BTreeSet<String>,
    pre_node: BTreeSet<String>,
    post_node: BTreeSet<String>,
    batch_started: BTreeSet<usize>,
    batch_finished: BTreeSet<usize>,
}

fn member_of(target: &str) -> String {
    target.rsplit('/').next().unwrap_or("").to_string()
}

/// What the journal remembers of this rollout that Heat cannot tell: hooks already run,
/// batches already gated, members skipped. Also where the journal ends now (requests after
/// that point are new).
fn journal_memory(journal: &Journal, id: &str) -> ServiceResult<(u64, Memory)> {
    let (entries, offset) = journal
        .read_from(0)
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    let mut m = Memory::default();
    for e in entries.iter().filter(|e| e.rollout.as_deref() == Some(id)) {
        let ok = e.outcome == Outcome::Ok;
        match e.action.as_str() {
            "hook.pre_node" if ok => {
                m.pre_node.insert(member_of(&e.target));
            }
            "hook.post_node" if ok => {
                m.post_node.insert(member_of(&e.target));
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
                m.skipped.insert(member_of(&e.target));
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
        .flat_map(|(b, members)| {
            members.iter().map(move |m| NodeProgress {
                name: m.clone(),
                index: m.parse().ok(),
                batch: b,
                phase: NodePhase::Pending,
                released_at: None,
                finished_at: None,
                reason: None,
                straggler: false,
            })
        })
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
    plan: RolloutPlan,
    options: EngineOptions,
    obs: HeatObserver,
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
    journal_offset: u64,
    /// After a resume PATCH: old failures stand until Heat starts the new group update.
    ignore_failures_until_update: Option<u32>,
    /// Resumed after a failure: members Heat still holds on hooks in the failed update are
    /// released first (batch by batch; Heat updates them within that update), and only then
    /// is the update sent again to retry the failed members. Sending it while members wait
    /// on hooks of the failed update makes Heat 27 update those members twice, the second
    /// attempt cancelling the first (measured).
    draining: bool,
}

enum Step {
    Continue,
    End(RolloutState),
}

impl Runner {
    fn target(&self) -> String {
        self.plan.target.label()
    }

    fn member_target(&self, m: &str) -> String {
        format!("{}/{m}", self.target())
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
                self.paused = Some(format!(
                    "{}: nothing more is sent to Heat until the journal takes entries \
                     again; {}",
                    e.message,
                    self.sent_so_far()
                ));
                false
            }
        }
    }

    /// Which members this rollout has let go and which Heat still holds, for an error
    /// that stops it.
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

    async fn run(
        mut self,
        mut control: mpsc::UnboundedReceiver<Control>,
        status: watch::Sender<RolloutStatus>,
    ) -> RolloutStatus {
        loop {
            let mut requests = Vec::new();
            while let Ok(c) = control.try_recv() {
                requests.push(c);
            }
            requests.extend(self.journal_requests());
            let mut end = None;
            for c in requests {
                if let Step::End(s) = self.apply_control(c).await {
                    end = Some(s);
                }
            }
            if end.is_none() {
                match self.obs.refresh().await {
                    Ok(()) => end = self.step().await,
                    Err(e) => tracing::warn!("rollout {}: reading Heat: {e}", self.plan.id),
                }
            }
            self.update_status();
            if let Some(state) = end {
                self.status.state = state;
                self.status.compute(self.now());
                let outcome = match &self.status.state {
                    RolloutState::Completed | RolloutState::CompletedWithSkips => Outcome::Ok,
                    other => Outcome::Failed {
                        error: other.label(),
                    },
                };
                let action = if matches!(self.status.state, RolloutState::Aborted { .. }) {
                    "rollout.abort"
                } else {
                    "rollout.finish"
                };
                self.write(
                    self.record(action, &self.target(), outcome)
                        .plan(self.status.lines()),
                );
                let _ = status.send(self.status.clone());
                return self.status;
            }
            let _ = status.send(self.status.clone());
            tokio::time::sleep(self.options.poll).await;
        }
    }

    /// Requests other processes wrote to the journal since we last looked. A journal that
    /// cannot be read may hide a pause or an abort: that pauses the rollout (with the line
    /// at fault) until it reads again, it is never taken for "no requests".
    fn journal_requests(&mut self) -> Vec<Control> {
        let (entries, offset) = match self.ctx.journal.read_from(self.journal_offset) {
            Ok(read) => read,
            Err(e) => {
                tracing::error!("rollout {}: {e}", self.plan.id);
                self.paused = Some(format!(
                    "{e}: a control request may be in it, so nothing more is sent to Heat \
                     until it reads again; {}",
                    self.sent_so_far()
                ));
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
            .filter_map(|e| match e.action.as_str() {
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
                REQUEST_SKIP => Some(Control::Skip(member_of(&e.target))),
                _ => None,
            })
            .collect()
    }

    async fn apply_control(&mut self, c: Control) -> Step {
        let target = self.target();
        match c {
            Control::Pause => {
                self.paused = Some("paused by the operator".into());
                self.write(self.record("rollout.pause", &target, Outcome::Ok));
                Step::Continue
            }
            Control::Skip(m) => {
                self.skipped.insert(m.clone());
                self.write(self.record("rollout.skip", &self.member_target(&m), Outcome::Ok));
                Step::Continue
            }
            Control::Resume { parameters } => {
                // Overrides apply to the update sent to retry failed members.
                self.plan.extra_parameters.extend(parameters);
                if self.obs.stack_status.is_failed() {
                    self.draining = true;
                }
                if !self.write(
                    self.record("rollout.resume", &target, Outcome::Ok)
                        .spec(&self.plan.extra_parameters),
                ) {
                    return Step::Continue;
                }
                self.paused = None;
                self.timed_out.clear();
                Step::Continue
            }
            Control::Abort(mode) => {
                let action = match mode {
                    AbortMode::LeavePaused => None,
                    AbortMode::CancelUpdate => Some(StackAction::CancelUpdate),
                    AbortMode::CancelWithoutRollback => Some(StackAction::CancelWithoutRollback),
                };
                let mut reason = "aborted by the operator".to_string();
                if let Some(a) = action {
                    let call = ApiCall::new(
                        "POST",
                        format!("{}/actions", stack_path(&self.plan.stack)),
                        format!("{{\"{}\":null}}", a.key()),
                    );
                    if !self.write(
                        self.record("rollout.cancel", &target, Outcome::Started)
                            .calls(vec![call.clone()]),
                    ) {
                        let why = self.paused.clone().unwrap_or_default();
                        return Step::End(RolloutState::Aborted {
                            reason: format!("aborted by the operator; {} NOT sent: {why}", a.key()),
                        });
                    }
                    let r = self.heat.action(&self.plan.stack, a).await;
                    let outcome = match &r {
                        Ok(()) => Outcome::Ok,
                        Err(e) => Outcome::Failed {
                            error: e.to_string(),
                        },
                    };
                    self.write(
                        self.record("rollout.cancel", &target, outcome)
                            .calls(vec![call]),
                    );
                    reason = match r {
                        Ok(()) => format!("aborted by the operator ({})", a.key()),
                        Err(e) => format!("aborted by the operator; {} failed: {e}", a.key()),
                    };
                }
                Step::End(RolloutState::Aborted { reason })
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
                    t.done || t.failed.is_some() || (!t.paused && t.released_at.is_none())
                })
        })
    }

    /// Sends the update again so Heat retries the failed members.
    async fn retry_update(&mut self) -> bool {
        let target = self.target();
        let update = StackUpdate {
            parameters: self.plan.parameters(),
            environment: Some(hooks_environment()),
            existing: true,
            ..Default::default()
        };
        let call = ApiCall::new(
            "PATCH",
            stack_path(&self.plan.stack),
            update_body_text(&update),
        );
        if !self.write(
            self.record("rollout.retry", &target, Outcome::Started)
                .calls(vec![call]),
        ) {
            return false;
        }
        let seen = self.obs.group_updates;
        match self.heat.update_stack(&self.plan.stack, &update).await {
            Ok(()) => {
                self.ignore_failures_until_update = Some(seen);
                self.draining = false;
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
        if self.obs.stack_status.is_failed() {
            return Some(format!(
                "stack {}: {}",
                self.obs.stack_status, self.obs.stack_reason
            ));
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
            ctx.node_name = Some(m.to_string());
            ctx.node_index = m.parse().ok();
            ctx.node_ip = self.obs.member_ip(m).await;
        }
        let target = match member {
            Some(m) => self.member_target(m),
            None => self.batch_target(batch),
        };
        // A hook changes the cluster (a drain): recorded before it runs, like a call.
        if !self.write(
            self.record("hook.started", &target, Outcome::Started)
                .plan(vec![format!("{}: {}", point.as_str(), command)]),
        ) {
            return false;
        }
        let run: HookRun = run_hook(point, &command, &ctx, self.options.hooks.timeout()).await;
        let outcome = if run.ok() {
            Outcome::Ok
        } else {
            Outcome::Failed {
                error: run.summary(),
            }
        };
        self.write(
            self.record(&format!("hook.{}", point.as_str()), &target, outcome)
                .output(run.output.clone()),
        );
        if !run.ok() {
            self.paused = Some(format!("{} on {target}", run.summary()));
        }
        run.ok()
    }

    async fn release(&mut self, m: &str) {
        let target = self.member_target(m);
        let call = ApiCall::new(
            "POST",
            format!("{}/resources/{m}/signal", stack_path(&self.obs.group)),
            r#"{"unset_hook":"pre-update"}"#,
        );
        let action = if self.is_done(m) {
            "rollout.passthrough"
        } else {
            "rollout.release"
        };
        if !self.write(
            self.record(action, &target, Outcome::Started)
                .calls(vec![call]),
        ) {
            return;
        }
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
        self.write(self.record(action, &target, outcome));
    }

    async fn step(&mut self) -> Option<RolloutState> {
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
            if self.paused.is_some() {
                return None; // paused (or the journal failed): nothing is released
            }
            self.passthrough.insert(m.clone());
            self.release(&m).await;
        }

        if let Some(reason) = self.failure() {
            if self.paused.is_none() {
                if !self.plan.options.pause_on_failure {
                    return Some(RolloutState::Failed { reason });
                }
                self.write(self.record(
                    "rollout.pause",
                    &self.target(),
                    Outcome::Failed {
                        error: reason.clone(),
                    },
                ));
                self.paused = Some(reason);
            }
            return None;
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
            if self.paused.is_some() {
                return None;
            }
            if !self.hook(HookPoint::PostNode, b, Some(&m)).await {
                return None;
            }
            self.post_node_done.insert(m);
        }
        if self.paused.is_some() {
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
            if !self.hook(HookPoint::PreBatch, b, None).await {
                return None;
            }
            self.batch_started.insert(b);
            self.write(self.record("rollout.batch_started", &self.batch_target(b), Outcome::Ok));
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
                    self.write(self.record(
                        "rollout.pause",
                        &self.member_target(&m),
                        Outcome::Failed {
                            error: reason.clone(),
                        },
                    ));
                    self.paused = Some(reason);
                    return None;
                }
                continue;
            }
            if !t.paused {
                continue; // Heat has not reached it yet.
            }
            if !self.pre_node_done.contains(&m) {
                if !self.hook(HookPoint::PreNode, b, Some(&m)).await {
                    return None;
                }
                self.pre_node_done.insert(m.clone());
            }
            self.release(&m).await;
            if self.paused.is_some() {
                return None; // the journal failed: nothing more is released
            }
        }
        None
    }

    /// The health gate and the post-batch hook of batch `k`.
    async fn close_batch(&mut self, k: usize) -> bool {
        let wait = self.plan.options.gate_wait();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
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
        self.batch_finished.insert(k);
        self.write(self.record("rollout.batch_finished", &self.batch_target(k), Outcome::Ok));
        true
    }

    async fn finish_batches_then_complete(&mut self) -> Option<RolloutState> {
        for k in 0..self.plan.batches.len() {
            if !self.batch_finished.contains(&k) && !self.close_batch(k).await {
                return None;
            }
        }
        if !self.skipped.is_empty() {
            return Some(RolloutState::CompletedWithSkips);
        }
        let s = &self.obs.stack_status;
        if s.is_complete() && s.action == "UPDATE" {
            return Some(RolloutState::Completed);
        }
        None // Heat is still closing the update.
    }

    fn update_status(&mut self) {
        let current = self.current_batch();
        fill_nodes(&mut self.status, &self.obs, &self.skipped, current);
        if !self.status.state.is_final() {
            self.status.state = match &self.paused {
                Some(reason) => RolloutState::Paused {
                    reason: reason.clone(),
                },
                None if self.obs.group_updates == 0 => RolloutState::Starting,
                None => RolloutState::Running,
            };
        }
        self.status.compute(self.now());
    }

    /// Durations and rates are in Heat's time: its newest event, or our clock if later.
    fn now(&self) -> chrono::DateTime<Utc> {
        let now = Utc::now();
        self.obs.last_event_time.map_or(now, |t| t.max(now))
    }
}

/// Appends a request for a rollout running in another process; returns the journal offset
/// after it, where the engine's acknowledgement (see [`ack_action`]) will be.
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
        Control::Skip(m) => Entry::new(
            &ctx.actor,
            REQUEST_SKIP,
            &format!("{target}/{m}"),
            Outcome::Ok,
        ),
    };
    ctx.record_at(&entry.rollout(&plan.id))
}

/// The entry an engine journals when it honours `control`: the acknowledgement a
/// requester waits for.
pub fn ack_action(control: &Control) -> &'static str {
    match control {
        Control::Pause => "rollout.pause",
        Control::Resume { .. } => "rollout.resume",
        Control::Skip(_) => "rollout.skip",
        Control::Abort(_) => "rollout.abort",
    }
}

/// `a, b, c` (the first 20, then how many more), or `none`.
fn name_list(names: &[&str]) -> String {
    const SHOWN: usize = 20;
    if names.is_empty() {
        return "none".into();
    }
    let mut s = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

/// Node phases from what Heat says.
fn fill_nodes(
    status: &mut RolloutStatus,
    obs: &HeatObserver,
    skipped: &BTreeSet<String>,
    current: Option<usize>,
) {
    for n in status.nodes.iter_mut() {
        let t = obs.members.get(&n.name);
        n.phase = if skipped.contains(&n.name) {
            NodePhase::Skipped
        } else if let Some(t) = t {
            if t.done {
                NodePhase::Done
            } else if t.failed.is_some() {
                NodePhase::Failed
            } else if t.released_at.is_some() {
                NodePhase::Updating
            } else if t.paused && current == Some(n.batch) {
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
            n.reason = t.failed.clone();
        }
    }
    status.current_batch = current;
    status.stack_status = obs.stack_status.raw.clone();
}

/// A rollout's status read from Heat and the journal, with no engine running (another
/// process may be driving it). Paused means Heat holds members on hooks and nobody has
/// released the next batch.
pub async fn observe_status(
    heat: &HeatClient,
    journal: &Journal,
    plan: &RolloutPlan,
) -> ServiceResult<RolloutStatus> {
    let driver = HeatNativeDriver::new(heat.clone(), crate::templates::Machines::Test);
    let group = driver.group_stack(&plan.stack).await?;
    let mut obs = HeatObserver::new(
        heat.clone(),
        plan.stack.clone(),
        group,
        plan.since_event.clone(),
        plan.since_time,
    );
    obs.attach(&plan.image).await?;
    obs.refresh().await?;
    let (_, memory) = journal_memory(journal, &plan.id)?;
    let settled =
        |m: &String| memory.skipped.contains(m) || obs.members.get(m).is_some_and(|t| t.done);
    let current = plan.batches.iter().position(|b| !b.iter().all(settled));
    let mut status = initial_status(plan);
    fill_nodes(&mut status, &obs, &memory.skipped, current);
    // The journal's last word on this rollout says whether it is paused or over.
    let entries = journal
        .rollout_entries(&plan.id)
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    status.state = RolloutState::Running;
    for e in &entries {
        match (e.action.as_str(), &e.outcome) {
            ("rollout.pause", Outcome::Failed { error }) => {
                status.state = RolloutState::Paused {
                    reason: error.clone(),
                }
            }
            ("rollout.pause", _) => {
                status.state = RolloutState::Paused {
                    reason: "paused by the operator".into(),
                }
            }
            ("rollout.resume", Outcome::Ok) | ("rollout.reattach", _) => {
                status.state = RolloutState::Running
            }
            ("rollout.abort", _) => {
                status.state = RolloutState::Aborted {
                    reason: "aborted".into(),
                }
            }
            ("rollout.finish", Outcome::Ok) => status.state = RolloutState::Completed,
            ("rollout.finish", Outcome::Failed { error }) => {
                status.state = RolloutState::Failed {
                    reason: error.clone(),
                }
            }
            _ => {}
        }
    }
    if current.is_none() && !status.state.is_final() && obs.stack_status.is_complete() {
        status.state = RolloutState::Completed;
    }
    let now = obs
        .last_event_time
        .map_or(Utc::now(), |t| t.max(Utc::now()));
    status.compute(now);
    Ok(status)
}

/// A plan for a rollout Heat shows under way but this machine's journal does not know
/// (another operator's): the stack's image, every member not yet at it, `options`.
pub async fn plan_from_heat(
    heat: &HeatClient,
    target: &crate::drivers::NodeGroupTarget,
    options: super::RolloutOptions,
) -> ServiceResult<RolloutPlan> {
    let stack = target.stack.clone().ok_or_else(|| {
        ServiceError::new(
            ErrorKind::NotFound,
            format!("{} has no stack", target.label()),
        )
    })?;
    let detail = heat.get_stack(&stack, false).await.map_err(err)?;
    let image = detail.parameters.get("image").cloned().ok_or_else(|| {
        ServiceError::new(
            ErrorKind::NotFound,
            "the node group's stack has no image parameter",
        )
    })?;
    let driver = HeatNativeDriver::new(heat.clone(), crate::templates::Machines::Test);
    use crate::drivers::Driver;
    let nodes = driver.list_nodes(target).await?;
    let names: Vec<String> = nodes.into_iter().map(|n| n.name).collect();
    let mut plan = RolloutPlan::new(
        target.clone(),
        stack,
        &image,
        None,
        &names,
        options,
        BTreeMap::new(),
    );
    // Events before the current update started belong to earlier actions.
    plan.since_time = detail.summary.updated_at;
    Ok(plan)
}
