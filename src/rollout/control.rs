//! Steering a rollout from outside its engine, shared by the headless `caldera rollout`
//! commands and the console's operator: finding the rollout under way on a node group,
//! the engine's options for it, and asking for a control (an abort with its Heat cancel).

use super::engine::{self, find_active, plan_from_heat, AbortMode, Control, EngineOptions};
use super::{RolloutOptions, RolloutPlan};
use crate::api::heat::{HeatClient, StackAction};
use crate::drivers::actions::ActionContext;
use crate::drivers::guard::Reach;
use crate::drivers::heat_native::stack_path;
use crate::drivers::NodeGroupTarget;
use crate::journal::{ApiCall, Entry, Outcome};
use crate::lifecycle::ActionsConfig;
use crate::model::DriverKind;
use crate::service::ServiceResult;
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
    }
}

/// The rollout under way on `target`: the newest unfinished one in the journal (ours, even
/// from before a restart), else, when the node group's stack is in progress or failed,
/// the one Heat shows (another operator's). `None` when nothing is under way. Magnum node
/// groups have no rollouts of ours: Magnum runs their upgrades.
pub async fn find_rollout(
    heat: &HeatClient,
    ctx: &ActionContext,
    target: &NodeGroupTarget,
) -> ServiceResult<Option<RolloutPlan>> {
    if target.driver != DriverKind::HeatNative {
        return Ok(None);
    }
    if let Some(plan) = find_active(&ctx.journal, &target.label())? {
        return Ok(Some(plan));
    }
    let Some(stack) = &target.stack else {
        return Ok(None);
    };
    let detail = heat
        .get_stack(stack, false)
        .await
        .map_err(crate::service::ServiceError::from)?;
    let status = &detail.summary.status;
    if !status.is_in_progress() && !status.is_failed() {
        return Ok(None);
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
    .map_err(crate::service::ServiceError::from)?;
    if !hooked {
        return Ok(None);
    }
    Ok(Some(
        plan_from_heat(heat, target, RolloutOptions::default()).await?,
    ))
}

/// Asks whoever drives `plan` for `control`, through the journal, after the guard rails.
/// An abort that cancels (`CancelUpdate` rolls back, `CancelWithoutRollback` stops where it
/// is) also sends Heat's cancel from here, once: an engine only stops releasing members, so
/// the cancel must not depend on one running. The request is journaled as a plain abort
/// and the cancel as its own entry with its call. Returns the journal offset after the
/// request: the engine's acknowledgement comes after it ([`engine::ack_action`]).
pub async fn ask(
    heat: &HeatClient,
    ctx: &ActionContext,
    plan: &RolloutPlan,
    control: &Control,
) -> ServiceResult<u64> {
    let t = &plan.target;
    let Control::Abort(mode) = control else {
        ctx.check(
            "rollout.request",
            &t.label(),
            &t.cluster,
            Reach::Nodes,
            None,
        )?;
        return engine::request(ctx, plan, control);
    };
    ctx.check("rollout.abort", &t.label(), &t.cluster, Reach::Nodes, None)?;
    let after = engine::request(ctx, plan, &Control::Abort(AbortMode::LeavePaused))?;
    let action = match mode {
        AbortMode::LeavePaused => None,
        AbortMode::CancelUpdate => Some(StackAction::CancelUpdate),
        AbortMode::CancelWithoutRollback => Some(StackAction::CancelWithoutRollback),
    };
    let mut entry =
        Entry::new(&ctx.actor, "rollout.abort", &t.label(), Outcome::Ok).rollout(&plan.id);
    if let Some(a) = action {
        entry = entry.calls(vec![ApiCall::new(
            "POST",
            format!("{}/actions", stack_path(&plan.stack)),
            format!("{{\"{}\":null}}", a.key()),
        )]);
        if let Err(e) = heat.action(&plan.stack, a).await {
            let mut failed = entry;
            failed.outcome = Outcome::Failed {
                error: e.to_string(),
            };
            ctx.record(&failed)?;
            return Err(e.into());
        }
    }
    ctx.record(&entry)?;
    Ok(after)
}

/// What became of a control request written for an engine in another process.
#[derive(Debug, Clone, PartialEq)]
pub enum Ack {
    /// The engine journaled that it honoured it (the entry says when and who).
    Honoured(Entry),
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
    let honours = |e: &Entry| {
        ours(e)
            && e.action == ack
            && match control {
                Control::Skip(m) => e.target.ends_with(&format!("/{m}")),
                _ => true,
            }
    };
    let rounds = (wait.as_millis() / STEP.as_millis()).max(1);
    let mut offset = after;
    for round in 0..=rounds {
        let (entries, next) = journal.read_from(offset).map_err(|e| {
            crate::service::ServiceError::new(crate::service::ErrorKind::Config, e.to_string())
        })?;
        offset = next;
        if let Some(e) = entries.iter().find(|e| honours(e)) {
            return Ok(Ack::Honoured(e.clone()));
        }
        if let Some(e) = entries
            .iter()
            .find(|e| ours(e) && e.action == "rollout.finish")
        {
            return Ok(Ack::Ended(e.clone()));
        }
        if round < rounds {
            tokio::time::sleep(STEP).await;
        }
    }
    Ok(Ack::Queued)
}
