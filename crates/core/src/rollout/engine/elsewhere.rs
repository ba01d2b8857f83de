//! Whether Heat still runs a rollout's update, and who else may drive it. A rollout is one
//! update of one stack, marked by its start (`caldera-rollout=<id>@<host>` among the
//! stack's tags): another marker there, or none, means Heat no longer runs it (another start
//! replaced it, or a driver ended it); a marker naming another machine, or members Heat
//! shows released that this machine's journal never released, mean a driver this machine
//! cannot see may still live, and a take-over asks first. Each is a fact of Heat's against
//! this journal, decided here once for every front end.

use super::{
    err, observe_status, Entry, ErrorKind, HeatClient, Journal, NodePhase, Outcome, RolloutPlan,
    RolloutStatus, ServiceError, ServiceResult, Utc,
};
use std::collections::BTreeSet;

/// The update Heat runs on `plan`'s stack by its marker, when it is not `plan`'s (`the
/// update of rollout ID from HOST`, or `an update without a rollout's marker`). `None`
/// when the marker is ours, when the plan set none (a plan from before markers), or when
/// Heat could not be read (the release that follows would fail the same way).
pub(super) async fn superseded_by(heat: &HeatClient, plan: &RolloutPlan) -> Option<String> {
    plan.stack_tags.as_ref()?;
    let detail = match heat.get_stack(&plan.stack, false).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!("rollout {}: reading the stack's marker: {e}", plan.id);
            return None;
        }
    };
    superseded_in(&detail.tags, plan)
}

/// The journal's action for a rollout this machine found over when it came to drive it
/// (see [`ended_elsewhere`]): it ends the rollout here as `rollout.finish` does,
/// its `output` says what Heat showed.
pub const ENDED_ELSEWHERE: &str = "rollout.ended_elsewhere";

/// Why Heat's stack no longer runs `plan`'s update, when it does not: the stack carries
/// another rollout's marker, or none (an end's PATCH takes it out), read now. `None` when
/// the marker is `plan`'s, for a plan from before markers (nothing to tell by), and once
/// this machine sent the rollout's own end (its PATCH takes the marker off: the rollout
/// ended here, and its driver says how).
pub(super) async fn not_this_rollouts_update(
    heat: &HeatClient,
    journal: &Journal,
    plan: &RolloutPlan,
) -> ServiceResult<Option<String>> {
    if plan.stack_tags.is_none() {
        return Ok(None);
    }
    let detail = heat.get_stack(&plan.stack, false).await.map_err(err)?;
    let entries = journal
        .rollout_entries(&plan.id)
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    Ok(heat_runs_another(
        plan,
        &entries,
        &detail.tags,
        &detail.summary.status,
        detail.summary.updated_at,
    ))
}

/// Whether Heat no longer runs `plan`'s update: the stack carries another rollout's marker,
/// or none (an end's PATCH takes it out), while this machine's journal says the rollout's
/// PATCH went out and not yet its end's.
pub async fn ended_elsewhere(
    heat: &HeatClient,
    journal: &Journal,
    plan: &RolloutPlan,
) -> ServiceResult<bool> {
    Ok(not_this_rollouts_update(heat, journal, plan)
        .await?
        .is_some())
}

/// See [`not_this_rollouts_update`]: from the stack as read (`tags`, `status`, `updated`)
/// and this journal's `entries` of the rollout.
pub(super) fn heat_runs_another(
    plan: &RolloutPlan,
    entries: &[Entry],
    tags: &[String],
    status: &crate::model::Status,
    updated: Option<chrono::DateTime<Utc>>,
) -> Option<String> {
    // Before its PATCH returned (`rollout.started`; a take-over that journaled the plan
    // read it with the marker on the stack) Heat may not show the marker yet; after its
    // end's PATCH was sent (`rollout.unhook`) the marker goes by its own hand.
    let patched = entries
        .iter()
        .any(|e| e.action == "rollout.started" && e.outcome == Outcome::Ok)
        || entries
            .iter()
            .any(|e| e.action == "rollout.reattach" && e.spec.is_some());
    let own_end = entries.iter().any(crate::rollout::unhook::own_end_sent);
    if !patched || own_end {
        return None;
    }
    let other = superseded_in(tags, plan)?;
    let since = updated
        .map(|t| format!(" since {}", t.format("%Y-%m-%d %H:%M:%S")))
        .unwrap_or_default();
    Some(if status.is_in_progress() {
        format!(
            "Heat's stack {} runs {other} ({status}{since}), not this rollout's: that one is \
             what to follow, pause or take over (`caldera rollout status {}`)",
            plan.stack.name,
            plan.target.label()
        )
    } else {
        format!(
            "Heat's stack {} is {status}{since} and no longer carries this rollout's \
             marker: the driver that ended it (its journal says how; `caldera events {}` \
             shows Heat's side), or a later update, has finished with it",
            plan.stack.name, plan.stack.name
        )
    })
}

/// The update that `tags` (the stack's, as read) name, when it is not `plan`'s (see
/// [`superseded_by`]).
pub(super) fn superseded_in(tags: &[String], plan: &RolloutPlan) -> Option<String> {
    plan.stack_tags.as_ref()?;
    match crate::rollout::plan::marker_in(tags) {
        Some((id, _)) if id == plan.id => None,
        Some((id, host)) => Some(format!("the update of rollout {id} from {host}")),
        None => Some("an update without a rollout's marker".to_string()),
    }
}

/// Whether a take-over may drive a rollout Heat's marker says was started on another
/// machine. Its driver there may still live, and this machine cannot see it (driver locks
/// and control requests are each machine's own): two drivers would release two members at
/// once. So every front end asks first, and says so here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TakeOver {
    /// Only a rollout started on this machine (or by a start that left no marker).
    ThisMachine,
    /// Also one started on another machine: the operator was told and said yes (or the
    /// control is an abort: Heat's cancel stops the update whichever driver lives).
    AnyMachine,
}

/// The machine Heat's marker says `plan` was started on, when it is not this one.
pub fn started_elsewhere(plan: &RolloutPlan) -> Option<&str> {
    // The marker keeps the host cut to fit Heat's 80 characters: this machine's name is
    // compared as its own marker would carry it.
    let here = crate::rollout::plan::marker_in(&[crate::rollout::plan::marker_tag(
        &plan.id,
        &crate::journal::hostname(),
    )])
    .map(|(_, host)| host);
    plan.started_on
        .as_deref()
        .filter(|h| !h.is_empty() && Some(*h) != here.as_deref())
}

/// Members Heat shows released by `plan`'s update (updating, done or failed) that this
/// machine's journal never released. Every release of this machine is journaled before its
/// signal goes, so each one here was another driver's (another machine's, or another state
/// directory's on this one, even under the same host name) or an operator's own hook
/// clear: a driver there may still be releasing. A fact of Heat's against this journal, not
/// a guess from names.
pub async fn released_elsewhere(
    heat: &HeatClient,
    journal: &Journal,
    plan: &RolloutPlan,
) -> ServiceResult<Vec<String>> {
    let status = observe_status(heat, journal, plan).await?;
    let entries = journal
        .rollout_entries(&plan.id)
        .map_err(|e| ServiceError::new(ErrorKind::Config, e.to_string()))?;
    Ok(released_not_here(plan, &status, &entries))
}

/// See [`released_elsewhere`]: from the status as read (`status`, Heat's phases) and this
/// journal's `entries` of the rollout.
pub(super) fn released_not_here(
    plan: &RolloutPlan,
    status: &RolloutStatus,
    entries: &[Entry],
) -> Vec<String> {
    let ours: BTreeSet<String> = entries
        .iter()
        .filter(|e| {
            matches!(e.action.as_str(), "rollout.release" | "rollout.passthrough")
                && e.outcome == Outcome::Started
        })
        .map(|e| plan.member_of_label(&e.target))
        .collect();
    status
        .nodes
        .iter()
        .filter(|n| {
            matches!(
                n.phase,
                NodePhase::Updating | NodePhase::Done | NodePhase::Failed
            ) && !ours.contains(&n.name)
        })
        .map(|n| n.name.clone())
        .collect()
}

/// What a take-over of a rollout whose members `others` were released by another driver
/// risks, in the words every front end shows before it asks.
pub fn released_elsewhere_words(others: &[String]) -> String {
    format!(
        "Heat shows member(s) {} released by a driver this machine's journal does not \
         know (another machine, or another state directory here): if it still runs, two \
         drivers release two nodes at once (pause it there, or check it is gone, first)",
        crate::rollout::progress::member_list(others)
    )
}

/// What a take-over of a rollout started on `host` risks, in the words every front end
/// shows before it asks.
pub fn started_elsewhere_words(host: &str) -> String {
    format!(
        "it was started on {host}, whose driver cannot be seen from here: if it still \
         runs there, two drivers release two nodes at once (pause it there, or check it is \
         gone, first)"
    )
}

/// What taking `plan` over from this machine risks, in the words every front end shows
/// before it asks (`None`: nothing; the operator need not be asked): a driver that may
/// still live elsewhere, as Heat's marker (started on another machine) or Heat's members
/// (released by a driver this journal does not know) say. A rollout Heat no longer runs
/// risks nothing (a take-over of it says it ended, and drives nothing).
pub async fn take_over_risk(
    heat: &HeatClient,
    journal: &Journal,
    plan: &RolloutPlan,
) -> ServiceResult<Option<String>> {
    if ended_elsewhere(heat, journal, plan).await? {
        return Ok(None);
    }
    another_driver_risk(heat, journal, plan).await
}

/// [`take_over_risk`] of a rollout Heat still runs.
pub(super) async fn another_driver_risk(
    heat: &HeatClient,
    journal: &Journal,
    plan: &RolloutPlan,
) -> ServiceResult<Option<String>> {
    if let Some(host) = started_elsewhere(plan) {
        return Ok(Some(started_elsewhere_words(host)));
    }
    let others = released_elsewhere(heat, journal, plan).await?;
    Ok((!others.is_empty()).then(|| released_elsewhere_words(&others)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Actor;

    /// The marker gone while this journal's end PATCH was never sent (refused as another
    /// start's update was read right before it) is another's doing: ended elsewhere. Sent,
    /// or perhaps sent (its `Started` alone), the marker may have gone by this end.
    #[test]
    fn only_an_end_patch_that_may_have_gone_out_explains_a_missing_marker() {
        let actor = Actor {
            cloud: "prod".into(),
            user: "alice".into(),
        };
        let mut plan = crate::drivers::rollout_plan::sample_plan("img-2", &["0"]);
        plan.stack_tags = Some(Vec::new());
        let entry = |action: &str, outcome: Outcome| {
            Entry::new(&actor, action, "c1/w", outcome).rollout(&plan.id)
        };
        let started = entry("rollout.started", Outcome::Ok);
        let status = crate::model::Status::parse("UPDATE_COMPLETE");
        let unhook = |outcome: Outcome| vec![started.clone(), entry("rollout.unhook", outcome)];
        let not_sent = unhook(Outcome::Failed {
            error: format!(
                "{}left to the update that superseded it",
                crate::rollout::unhook::NOT_SENT
            ),
        });
        assert!(heat_runs_another(&plan, &not_sent, &[], &status, None).is_some());
        for sent in [
            unhook(Outcome::Started),
            unhook(Outcome::Ok),
            unhook(Outcome::Failed {
                error: "Heat's environment still declares them after the PATCH".into(),
            }),
        ] {
            assert!(heat_runs_another(&plan, &sent, &[], &status, None).is_none());
        }
        assert!(
            heat_runs_another(&plan, std::slice::from_ref(&started), &[], &status, None).is_some()
        );
    }
}
