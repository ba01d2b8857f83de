//! What `caldera why` says of a caldera rollout: one paused with nobody driving it is named
//! first, with the command that resumes it. Here, above the rollout's control, not in
//! `ops::why` (which reads Heat alone and sits below the rollout).

use super::{control, engine, plan};
use crate::api::heat::HeatClient;
use crate::model::StackRef;
use crate::ops::why::{StackWhy, Verdict};

/// Names each caldera rollout of `stack` that is paused with no driver on this machine,
/// first among the lines (the hooks holding its members follow, as [`crate::ops::why::read`]
/// found them):
/// `rollout r-… of STACK/GROUP (started on HOST at TIME) is paused: nobody releases its
/// members — resume with: caldera rollout resume STACK/GROUP`. The rollouts are the ones
/// `rollout status` finds ([`super::control::find_rollout`]) for each group the
/// stack's environment holds on the rollout hook, their state the progress model's of
/// their status ([`super::engine::observe_status`]), as `rollout status` says it.
/// Nothing for a stack without a rollout's marker.
pub async fn name_paused_rollouts(
    why: &mut StackWhy,
    heat: &HeatClient,
    ctx: &crate::drivers::apply::ActionContext,
    stack: &StackRef,
) -> crate::report::ServiceResult<()> {
    let detail = heat.get_stack(stack, false).await?;
    if plan::marker_in(&detail.tags).is_none() {
        return Ok(());
    }
    let hooks = heat.get_environment_hooks(stack).await?;
    let mut groups: Vec<String> = hooks
        .paths_with(plan::ROLLOUT_HOOK)
        .into_iter()
        .filter_map(|mut path| (path.pop().as_deref() == Some("*")).then(|| path.join("/")))
        .filter(|g| !g.is_empty())
        .collect();
    groups.dedup();
    let mut seen: Vec<String> = Vec::new();
    let mut lines = Vec::new();
    for group in groups {
        let target = crate::drivers::any_group::group_target(stack, &group);
        let Some(plan) = control::find_rollout(heat, ctx, &target).await? else {
            continue;
        };
        if seen.contains(&plan.id) {
            continue;
        }
        seen.push(plan.id.clone());
        let status = engine::observe_status(heat, &ctx.journal, &plan).await?;
        let nobody = matches!(
            status.driver,
            Some(crate::rollout::progress::DriverInfo::Nobody { .. })
        );
        if !nobody || !matches!(status.progress.state, crate::progress::State::Paused { .. }) {
            continue;
        }
        let label = crate::model::terminal_safe(&plan.target.label()).into_owned();
        // When it was started: its start's own time where this machine's journal has it;
        // for another machine's rollout read back from Heat, when Heat began its update.
        let at = match plan.started_on {
            None => Some(plan.created_at),
            Some(_) => detail.summary.updated_at,
        }
        .map(|t| format!(" at {}", t.format("%Y-%m-%dT%H:%M:%SZ")))
        .unwrap_or_default();
        let started = plan
            .started_on_host()
            .map(|h| format!(" (started on {}{at})", crate::model::terminal_safe(&h)))
            .unwrap_or_default();
        lines.push(format!(
            "rollout {} of {label}{started} is {} — resume with: caldera rollout resume {label}",
            plan.id,
            crate::model::terminal_safe(&status.progress.state.label()),
        ));
    }
    if !lines.is_empty() {
        why.verdict = why.verdict.max(Verdict::Held);
        // The rollout first: what the operator does; the hooks it holds say the rest.
        // (The Nova lines' indices shift with it.)
        for s in &mut why.servers {
            s.0 += lines.len();
        }
        why.lines.splice(0..0, lines);
    }
    Ok(())
}
