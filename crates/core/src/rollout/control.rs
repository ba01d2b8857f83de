//! Steering a rollout from outside its engine, shared by the headless `caldera rollout`
//! commands and the console's operator: finding the rollout under way on a node group,
//! the engine's options for it, and asking for a control (an abort with its Heat cancel).

use super::engine::{
    self, find_active, plan_from_heat, AbortMode, Control, EngineOptions, RolloutHandle,
};
use super::lock::{self, Holder, LockState};
use super::{RolloutOptions, RolloutPlan};
use crate::api::heat::HeatClient;
use crate::command_line::CommandLine;
use crate::drivers::any_group::group_target;
use crate::drivers::apply::ActionContext;
use crate::drivers::guard::Reach;
use crate::drivers::NodeGroupTarget;
use crate::journal::{Entry, Outcome};
use crate::lifecycle::ActionsConfig;
use crate::model::DriverKind;
use crate::report::{ErrorKind, ServiceError, ServiceResult};
use std::time::Duration;

/// Shortest time between two looks at Heat: faster only loads Heat, it does not finish sooner.
const MIN_POLL: Duration = Duration::from_millis(100);

/// The engine's options for a rollout of `target`: its poll interval and the operator's
/// lifecycle hooks for that cluster on `cloud`.
pub fn engine_options(
    config: &ActionsConfig,
    cloud: &str,
    target: &NodeGroupTarget,
    poll: Duration,
) -> EngineOptions {
    EngineOptions {
        poll: poll.max(MIN_POLL),
        hooks: config.hooks_for(cloud, &target.cluster),
        ..Default::default()
    }
}

/// The rollout under way on `target`: the newest unfinished one in the journal (ours, even
/// from before a restart), else, when the node group's stack is in progress or failed,
/// the one Heat shows (another operator's). `None` when nothing is under way. A Magnum node
/// group's updates are Magnum's, save a caldera rollout of its cluster's stack (see
/// `rollout_of_magnum_group`).
pub async fn find_rollout(
    heat: &HeatClient,
    ctx: &ActionContext,
    target: &NodeGroupTarget,
) -> ServiceResult<Option<RolloutPlan>> {
    if target.driver != DriverKind::HeatNative {
        return rollout_of_magnum_group(heat, ctx, target).await;
    }
    let journaled = find_active(&ctx.journal, &target.label())?;
    if let Some(plan) = &journaled {
        // Heat unread (an outage) leaves the journal's word: a pause or an abort must still
        // reach this machine's driver.
        let ended = engine::ended_elsewhere(heat, &ctx.journal, plan)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!("rollout {}: reading Heat's marker: {e}", plan.id);
                false
            });
        if !ended {
            return Ok(journaled);
        }
    }
    // The journal's rollout ended elsewhere (Heat's marker is another's, or gone): the one
    // Heat runs now is under way, when there is one (was: the journal's, stale, under this
    // name while Heat ran another); else the journal's, whose resume says it ended.
    Ok(heat_rollout(heat, ctx, target).await?.or(journaled))
}

/// The rollout Heat shows under way on `target`'s stack (see [`find_rollout`]).
async fn heat_rollout(
    heat: &HeatClient,
    ctx: &ActionContext,
    target: &NodeGroupTarget,
) -> ServiceResult<Option<RolloutPlan>> {
    let Some(stack) = &target.stack else {
        return Ok(None);
    };
    let detail = heat
        .get_stack(stack, false)
        .await
        .map_err(crate::report::ServiceError::from)?;
    let status = &detail.summary.status;
    if crate::progress::at_rest(status) {
        return Ok(None);
    }
    // A rollout of another group of this stack holding this one beside its target.
    if let Some(plan) = rollout_holding(heat, ctx, stack, &detail, &target.nodegroup).await? {
        return Ok(Some(plan));
    }
    // Another operator's rollout holds its members on `pre-update` hooks; an update nobody
    // drives that way (a plain PATCH from the CLI or Horizon) is not a rollout to take over:
    // the console observes it instead, and never releases hooks it did not set.
    let hooked = crate::ops::hooks::hook_used_since(
        heat,
        stack,
        super::plan::ROLLOUT_HOOK,
        detail.summary.updated_at,
    )
    .await
    .map_err(crate::report::ServiceError::from)?;
    if !hooked && !members_hooked_in_environment(heat, stack, &detail, target).await {
        return Ok(None);
    }
    let mut plan = plan_from_heat(heat, target, &detail, RolloutOptions::default()).await?;
    keep_journaled_plan(&mut plan, &ctx.journal)?;
    Ok(Some(plan))
}

/// The caldera rollout of another group of `stack` that holds `group` beside its target
/// (`--also`), as the stack's tags say while its update runs, viewed from `group`. The
/// held group's look is that rollout (was: a plan of its own with `group` as its target and
/// held as well, every member counted twice).
async fn rollout_holding(
    heat: &HeatClient,
    ctx: &ActionContext,
    stack: &crate::model::StackRef,
    detail: &crate::api::heat::StackDetail,
    group: &str,
) -> ServiceResult<Option<RolloutPlan>> {
    if !super::plan::held_in(&detail.tags)
        .iter()
        .any(|(path, _)| path == group)
    {
        return Ok(None);
    }
    let plan = rollout_by_marker(heat, ctx, stack, detail).await?;
    Ok(plan.and_then(|plan| viewed_from_held(plan, group)))
}

/// The caldera rollout Heat's marker on `stack` names while the stack's update runs: this
/// machine's plan of it (found by the marker's id, under the name it was started by, so its
/// driver and controls are found), else the plan read back from Heat (another machine's
/// rollout: its target from the stack's environment and tags, [`rollout_target_from_heat`]).
/// `None` without a marker, when this machine's plan of that id is of another stack, or when
/// Heat does not say which group the rollout targets.
async fn rollout_by_marker(
    heat: &HeatClient,
    ctx: &ActionContext,
    stack: &crate::model::StackRef,
    detail: &crate::api::heat::StackDetail,
) -> ServiceResult<Option<RolloutPlan>> {
    let Some((id, _)) = super::plan::marker_in(&detail.tags) else {
        return Ok(None);
    };
    match engine::find_started(&ctx.journal, &id)? {
        Some(plan) if plan.target.stack.as_ref().map(|s| &s.id) == Some(&stack.id) => {
            Ok(Some(plan))
        }
        Some(_) => Ok(None),
        None => match rollout_target_from_heat(heat, stack, &detail.tags).await {
            Some(target) => {
                let target = group_target(stack, &target);
                Ok(Some(
                    plan_from_heat(heat, &target, detail, Default::default()).await?,
                ))
            }
            None => Ok(None),
        },
    }
}

/// `plan` as seen from `group`, a group it holds beside its target (its rows are the
/// group's own members, [`RolloutPlan::viewed_group`]); `None` when `group` is its target
/// or a group it does not hold.
fn viewed_from_held(plan: RolloutPlan, group: &str) -> Option<RolloutPlan> {
    let held = plan.target.nodegroup != group && plan.also.iter().any(|h| h.path == group);
    held.then(|| RolloutPlan {
        viewed_group: Some(group.to_string()),
        ..plan
    })
}

/// The caldera rollout running a Magnum node group's members: a rollout of the cluster's
/// stack by path (`rollout start STACK/kube_minions --allow-magnum-owned`) whose target, or
/// a group it holds beside it (`--also kube_masters`), is the group holding this node
/// group's members ([`rollout_by_marker`]). Without a marker the update is Magnum's, and is
/// observed as such.
async fn rollout_of_magnum_group(
    heat: &HeatClient,
    ctx: &ActionContext,
    target: &NodeGroupTarget,
) -> ServiceResult<Option<RolloutPlan>> {
    let Some(stack) = &target.stack else {
        return Ok(None);
    };
    // A stack Heat does not show (gone, or a Magnum driver without Heat) holds no rollout of
    // ours: what Magnum runs is observed elsewhere.
    let Ok(detail) = heat.get_stack(stack, false).await else {
        return Ok(None);
    };
    if !detail.summary.status.is_in_progress() || super::plan::marker_in(&detail.tags).is_none() {
        return Ok(None);
    }
    let Ok(listed) = heat
        .list_resources(stack, &crate::api::heat::ResourceQuery::default())
        .await
    else {
        return Ok(None);
    };
    let top: Vec<crate::model::StackResource> = listed.into_iter().map(|r| r.resource).collect();
    let role = crate::drivers::magnum::role_in_stack(&detail.parameters, &target.nodegroup)
        .unwrap_or(crate::model::Role::Worker);
    let Ok(Some(group)) = crate::drivers::magnum::pick_group(&top, role, &target.nodegroup) else {
        return Ok(None);
    };
    let Some(plan) = rollout_by_marker(heat, ctx, stack, &detail).await? else {
        return Ok(None);
    };
    if plan.target.nodegroup == group.name {
        return Ok(Some(plan));
    }
    Ok(viewed_from_held(plan, &group.name))
}

/// The group a caldera rollout this machine's journal does not know (another machine's)
/// targets in `stack`, from Heat alone: the one group whose members the stack's environment
/// holds on the rollout hook (`GROUP/*`) that its tags do not name as held beside the target
/// ([`super::plan::held_in`]). `None` when that is not exactly one group: then nothing says
/// the update is a rollout's.
async fn rollout_target_from_heat(
    heat: &HeatClient,
    stack: &crate::model::StackRef,
    tags: &[String],
) -> Option<String> {
    let hooks = heat.get_environment_hooks(stack).await.ok()?;
    let held: Vec<String> = super::plan::held_in(tags)
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    let mut targets = hooks
        .paths_with(super::plan::ROLLOUT_HOOK)
        .into_iter()
        .filter_map(|mut path| {
            // A rollout hooks every member of its groups: the pattern `*` under the group.
            (path.pop().as_deref() == Some("*")).then(|| path.join("/"))
        })
        .filter(|group| !group.is_empty() && !held.contains(group));
    let target = targets.next()?;
    targets.next().is_none().then_some(target)
}

/// A rollout this machine's journal knows (Heat's marker names it) is the rollout its start
/// journaled: under the name it was started by (a group has two, `cluster/nodegroup` and
/// `STACK/GROUP`; its driver's lock and control requests are kept under that one, so a
/// group read by its other name still finds its live driver, and no second driver starts),
/// what it sets (its values: read back from Heat alone, a group's rollout would be "an
/// update started elsewhere" and the command offered to finish it would set nothing), its
/// batches (else one member each: `batch 7/7` would become `batch 12/12`), its options, its
/// baseline of events and the environment it found. That covers a rollout the journal no
/// longer calls active too (its driver ended it with members still held: skipped, or left
/// paused by an abort). Where the marker was started is Heat's word.
fn keep_journaled_plan(
    plan: &mut RolloutPlan,
    journal: &crate::journal::Journal,
) -> ServiceResult<()> {
    if let Some(known) = super::engine::find_started(journal, &plan.id)? {
        let started_on = plan.started_on.take();
        *plan = RolloutPlan {
            started_on,
            ..known
        };
    }
    Ok(())
}

/// Whether the stack's environment holds the group's members on the rollout hook. A
/// rollout's PATCH says so at once, while its first pause event may be seconds away (the
/// update just began, or a second PATCH restarted it), so a status read in that moment
/// does not take it for a plain update. Hooks stay in the environment after an update (a
/// PATCH merges it), so a later update is held on them too, and is one to drive as well.
async fn members_hooked_in_environment(
    heat: &HeatClient,
    stack: &crate::model::StackRef,
    detail: &crate::api::heat::StackDetail,
    target: &NodeGroupTarget,
) -> bool {
    // caldera's own node-group stacks hold their members in `nodes`; an operator's stack
    // names the group by its path (`kube_minions`, `roles/Compute`).
    let group: Vec<&str> = if detail.parameters.contains_key("image") {
        vec![crate::drivers::layout::GROUP_RESOURCE]
    } else {
        target
            .nodegroup
            .split('/')
            .filter(|s| !s.is_empty())
            .collect()
    };
    let Ok(hooks) = heat.get_environment_hooks(stack).await else {
        return false;
    };
    // A rollout's hooks cover every member (`*`); "0" stands for any member name.
    let member: Vec<&str> = group.into_iter().chain(["0"]).collect();
    hooks.matches(&member, super::plan::ROLLOUT_HOOK)
}

/// Who drives `plan` on this machine: the live holder of its driver lock, or none (and
/// the last one, when there was one).
pub fn driver(ctx: &ActionContext, plan: &RolloutPlan) -> LockState {
    lock::probe(&lock::lock_dir(ctx.journal.path()), &lock::key(plan))
}

/// How a request that no engine would read is refused (the CLI's exit status tells it).
pub const NOBODY_DRIVES: &str = "no process on this machine drives";

fn nobody_drives(plan: &RolloutPlan, last: Option<Holder>, what: &str) -> ServiceError {
    let last = last
        .map(|h| {
            format!(
                " (last driver: pid {} on {}, last seen {})",
                h.pid,
                h.host,
                h.last_seen.format("%Y-%m-%d %H:%M:%S UTC")
            )
        })
        .unwrap_or_default();
    ServiceError::new(
        ErrorKind::Refused,
        format!(
            "{NOBODY_DRIVES} rollout {} of {}{last}: nothing is being \
             released, {what}. A driver on another machine cannot be reached through this \
             machine's journal; `caldera rollout resume` drives it from here",
            plan.id,
            plan.target.label()
        ),
    )
}

/// Asks whoever drives `plan` for `control`, after the guard rails. The live driver on this
/// machine gets it through the journal (under the control lock: it acts before its next
/// release). With no driver, a request nobody would read fails (pause, resume: `resume`
/// takes the rollout over instead), a skip is recorded for the next driver, and an abort
/// is driven from here to its end (see [`abort`]). Returns the journal offset after a
/// request written for a live driver (its acknowledgement, [`engine::ack_action`], comes
/// after it); `None` when nothing waits for one.
pub async fn ask(
    heat: &HeatClient,
    ctx: &ActionContext,
    plan: &RolloutPlan,
    control: &Control,
    options: EngineOptions,
) -> ServiceResult<Option<u64>> {
    let t = &plan.target;
    if let Control::Abort(mode) = control {
        if let Some(handle) = abort(heat, ctx, plan, *mode, options).await? {
            handle.wait().await;
        }
        return Ok(None);
    }
    ctx.check(
        "rollout.request",
        &t.label(),
        &t.cluster,
        Reach::Nodes,
        None,
    )?;
    match (driver(ctx, plan), control) {
        (LockState::Held(_), _) => engine::request(ctx, plan, control).map(Some),
        (LockState::Free(_), Control::Skip(m)) => ctx
            .record(
                &Entry::new(
                    &ctx.actor,
                    "rollout.skip",
                    &plan.member_label(m),
                    Outcome::Ok,
                )
                .rollout(&plan.id),
            )
            .map(|()| None),
        (LockState::Free(last), Control::Pause) => {
            // A driver this machine cannot reach may be releasing (Heat says so): the
            // refusal says that, never "nothing is being released".
            match driver_elsewhere(heat, ctx, plan).await {
                Some(risk) => Err(unreachable_driver(plan, &risk, control)),
                None => Err(nobody_drives(plan, last, "there is nothing to pause")),
            }
        }
        // A resume nobody here would read: its callers take the rollout over (asking
        // first where a driver elsewhere may live).
        (LockState::Free(last), _) => Err(nobody_drives(plan, last, "nobody would read it")),
    }
}

/// What Heat says of a driver of `plan` this machine cannot see (see
/// [`engine::take_over_risk`]); `None` when Heat says nothing of one, or cannot be read.
async fn driver_elsewhere(
    heat: &HeatClient,
    ctx: &ActionContext,
    plan: &RolloutPlan,
) -> Option<String> {
    engine::take_over_risk(heat, &ctx.journal, plan)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!("rollout {}: reading Heat for another driver: {e}", plan.id);
            None
        })
}

/// How a control this machine cannot deliver is refused when a driver elsewhere may be
/// releasing `plan`'s members (`risk`, Heat's words): only that driver's own machine reaches
/// it, and Heat's cancel stops the update whichever driver lives.
fn unreachable_driver(plan: &RolloutPlan, risk: &str, control: &Control) -> ServiceError {
    let target = plan.target.label();
    let rollback = CommandLine::caldera(&["rollout", "abort", "--rollback"]).arg(&target);
    let cancel = CommandLine::caldera(&["rollout", "abort", "--cancel"]).arg(&target);
    ServiceError::new(
        ErrorKind::Refused,
        format!(
            "{NOBODY_DRIVES} rollout {} of {target}, and a driver elsewhere may: {risk}. \
             This machine cannot reach it (a driver reads its own machine's journal): the \
             {} was not sent. Pause or abort it on its machine, or stop the update through \
             Heat from here: `{rollback}` rolls it back, `{cancel}` stops it where it is \
             (Heat's cancel stops it whichever driver lives)",
            plan.id,
            control.label()
        ),
    )
}

/// Aborts `plan`. The live driver on this machine does it when there is one (asked through
/// the journal; `None` is returned); otherwise an engine started here takes the rollout
/// over with the abort as its first control and drives it to the end: Heat's cancel, the
/// rollback's hooks cleared, the end journaled (its handle is returned).
pub async fn abort(
    heat: &HeatClient,
    ctx: &ActionContext,
    plan: &RolloutPlan,
    mode: AbortMode,
    options: EngineOptions,
) -> ServiceResult<Option<RolloutHandle>> {
    let t = &plan.target;
    ctx.check("rollout.abort", &t.label(), &t.cluster, Reach::Nodes, None)?;
    if let LockState::Held(_) = driver(ctx, plan) {
        engine::request(ctx, plan, &Control::Abort(mode))?;
        return Ok(None);
    }
    // An abort is the brake: Heat's cancel stops the update whichever driver still lives,
    // so one started on another machine is taken over for it too. An abort that leaves
    // the members on their hooks sends nothing to Heat: it stops only this machine's
    // driver, and none runs here. Where a driver elsewhere may be releasing, it would say
    // "aborted" while that driver goes on (was: 5 more nodes released after it).
    if mode == AbortMode::LeavePaused {
        if let Some(risk) = driver_elsewhere(heat, ctx, plan).await {
            let refused = unreachable_driver(plan, &risk, &Control::Abort(mode));
            return Err(ctx.refuse("rollout.abort", &t.label(), refused.message));
        }
    }
    match engine::reattach(
        heat.clone(),
        ctx.clone(),
        plan.clone(),
        options,
        vec![Control::Abort(mode)],
        engine::TakeOver::AnyMachine,
    )
    .await
    {
        Ok(handle) => Ok(Some(handle)),
        // A driver took the lock in between: it gets the request.
        Err(e)
            if e.kind == ErrorKind::Refused && matches!(driver(ctx, plan), LockState::Held(_)) =>
        {
            engine::request(ctx, plan, &Control::Abort(mode))?;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// What became of a control request written for an engine in another process.
#[derive(Debug, Clone, PartialEq)]
pub enum Ack {
    /// The engine journaled that it honoured it (the entry says when and who).
    Honoured(Entry),
    /// The engine journaled that it refused it, and why (a resume asked before the pause
    /// it would have lifted).
    Refused(Entry),
    /// The rollout ended first (its `rollout.finish`).
    Ended(Entry),
    /// Nothing acknowledged it in time: queued in the journal, not honoured (the process
    /// driving the rollout may be gone or busy).
    Queued,
}

/// Waits up to `wait` for the engine driving `plan` to journal that it honoured `control`,
/// after offset `after` (where [`ask`] left the request). A journal that cannot be read is
/// an error, never taken for "not yet".
pub async fn acknowledgement(
    journal: &crate::journal::Journal,
    plan: &RolloutPlan,
    control: &Control,
    after: u64,
    wait: Duration,
) -> ServiceResult<Ack> {
    const STEP: Duration = Duration::from_millis(200);
    let ack = engine::ack_action(control);
    let ours = |e: &Entry| e.rollout.as_deref() == Some(plan.id.as_str());
    // The engine's answer to this request: its entry of the control's action, `Ok`
    // honoured, `Refused` not. The engine's own pauses (a failure, a node's timeout, the
    // wait for Heat to close its update) are `rollout.pause` entries too, journaled
    // `Failed` with their reason: none of them answers an operator's pause.
    let answers = |e: &Entry| {
        ours(e)
            && e.action == ack
            && !matches!(e.outcome, crate::journal::Outcome::Failed { .. })
            && match control {
                Control::Skip(m) => plan.member_of_label(&e.target) == *m,
                _ => true,
            }
    };
    let rounds = (wait.as_millis() / STEP.as_millis()).max(1);
    let mut offset = after;
    for round in 0..=rounds {
        let (entries, next) = journal.read_from(offset).map_err(|e| {
            crate::report::ServiceError::new(crate::report::ErrorKind::Config, e.to_string())
        })?;
        offset = next;
        if let Some(e) = entries.iter().find(|e| answers(e)) {
            return Ok(match e.outcome {
                crate::journal::Outcome::Refused { .. } => Ack::Refused(e.clone()),
                _ => Ack::Honoured(e.clone()),
            });
        }
        if let Some(e) = entries.iter().find(|e| {
            ours(e)
                && matches!(
                    e.action.as_str(),
                    "rollout.finish" | engine::ENDED_ELSEWHERE
                )
        }) {
            return Ok(Ack::Ended(e.clone()));
        }
        if round < rounds {
            tokio::time::sleep(STEP).await;
        }
    }
    Ok(Ack::Queued)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Actor, Journal, Outcome};

    /// A request the engine answered with a refusal (a resume asked before the pause it
    /// would lift) is reported refused, not honoured; an applied one honoured.
    #[tokio::test]
    async fn a_refused_request_is_not_reported_honoured() {
        let dir = tempfile::tempdir().expect("dir");
        let journal = Journal::open(dir.path().join("journal.jsonl"));
        let stack = crate::model::StackRef {
            name: "app".into(),
            id: "1".into(),
        };
        let plan = RolloutPlan::for_group(
            crate::drivers::any_group::group_target(&stack, "web"),
            stack,
            "web",
            &["0".to_string()],
            Default::default(),
            Default::default(),
        );
        let resume = Control::Resume {
            parameters: Default::default(),
        };
        let actor = Actor {
            cloud: "test".into(),
            user: "engine".into(),
        };
        let entry = |outcome| {
            Entry::new(&actor, "rollout.resume", &plan.target.label(), outcome).rollout(&plan.id)
        };
        let wait = Duration::from_millis(10);
        let refused = entry(Outcome::Refused {
            error: "asked before the rollout paused on a failure".into(),
        });
        let after_refusal = journal.append(&refused).expect("append");
        let ack = acknowledgement(&journal, &plan, &resume, 0, wait).await;
        assert!(matches!(ack, Ok(Ack::Refused(_))), "{ack:?}");
        // Asked again after the pause: applied, and said so.
        journal.append(&entry(Outcome::Ok)).expect("append");
        let ack = acknowledgement(&journal, &plan, &resume, after_refusal, wait).await;
        assert!(matches!(ack, Ok(Ack::Honoured(_))), "{ack:?}");
    }

    /// The engine's own pause (a failure's, the wait for Heat to close its update) is a
    /// `rollout.pause` entry too: it does not answer an operator's pause; the engine's entry
    /// for the operator's request does.
    #[tokio::test]
    async fn the_engines_own_pause_is_not_the_answer_to_an_operators_pause() {
        let dir = tempfile::tempdir().expect("dir");
        let journal = Journal::open(dir.path().join("journal.jsonl"));
        let stack = crate::model::StackRef {
            name: "app".into(),
            id: "1".into(),
        };
        let plan = RolloutPlan::for_group(
            crate::drivers::any_group::group_target(&stack, "web"),
            stack,
            "web",
            &["0".to_string()],
            Default::default(),
            Default::default(),
        );
        let actor = Actor {
            cloud: "test".into(),
            user: "engine".into(),
        };
        let entry = |outcome| {
            Entry::new(&actor, "rollout.pause", &plan.target.label(), outcome).rollout(&plan.id)
        };
        let wait = Duration::from_millis(10);
        let engines = entry(Outcome::Failed {
            error: "every node is done, but Heat's update of stack app is still \
                    UPDATE_IN_PROGRESS"
                .into(),
        });
        let after = journal.append(&engines).expect("append");
        let ack = acknowledgement(&journal, &plan, &Control::Pause, 0, wait).await;
        assert!(matches!(ack, Ok(Ack::Queued)), "{ack:?}");
        journal.append(&entry(Outcome::Ok)).expect("append");
        let ack = acknowledgement(&journal, &plan, &Control::Pause, after, wait).await;
        assert!(matches!(ack, Ok(Ack::Honoured(_))), "{ack:?}");
    }
}
