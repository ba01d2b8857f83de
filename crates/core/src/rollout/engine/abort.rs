//! An abort: nothing more is released from the moment it is journaled; then, as its mode
//! says, Heat's update is cancelled with a rollback (the engine clears the hooks the
//! rollback stops on, and waits for Heat to settle), cancelled without one, or left paused
//! on its hooks. The end says what Heat shows: members rolled back, updated, or still held.

use super::*;

/// An abort that cancelled Heat's update, until Heat settles.
pub(super) struct Aborting {
    pub(super) mode: AbortMode,
    pub(super) since: std::time::Instant,
    /// Heat showed the rollback (a `cancel_update` turns into one).
    pub(super) saw_rollback: bool,
    /// Rollback hooks cleared, per member.
    pub(super) cleared: BTreeMap<String, u32>,
    /// Members Heat held on their hooks when the cancel was sent (its events: a pause and
    /// no clear since).
    pub(super) held_at_cancel: BTreeSet<String>,
}

/// Longest an abort waits for Heat to leave the cancelled update (or finish rolling back)
/// before it ends and says what is left.
const ABORT_SETTLE_MAX: Duration = Duration::from_secs(30 * 60);
/// After `cancel_update`, how long a settled stack that is not a rollback yet may be Heat
/// between the cancel and the rollback's start.
const ROLLBACK_START_GRACE: Duration = Duration::from_secs(20);

impl Runner {
    /// Stops releasing at once (the abort is journaled before anything else happens), then
    /// sends Heat's cancel for the modes that cancel; the engine ends when Heat settles.
    pub(super) async fn abort(&mut self, mode: AbortMode) {
        let target = self.target();
        let e = self
            .record("rollout.aborting", &target, Outcome::Ok)
            .spec(&mode);
        self.note(e).await;
        let action = match mode {
            AbortMode::LeavePaused => {
                // Nothing is sent; the end waits for the members Heat is updating, so the
                // last status says how they ended.
                self.aborting = Some(Aborting {
                    mode,
                    since: std::time::Instant::now(),
                    saw_rollback: false,
                    cleared: BTreeMap::new(),
                    held_at_cancel: BTreeSet::new(),
                });
                return;
            }
            AbortMode::CancelUpdate => StackAction::CancelUpdate,
            AbortMode::CancelWithoutRollback => StackAction::CancelWithoutRollback,
        };
        let Some(call) = mode.call(&self.plan.stack) else {
            return;
        };
        let e = self
            .record("rollout.cancel", &target, Outcome::Started)
            .calls(vec![call.clone()]);
        if !self.note(e).await {
            self.ended = Some(RolloutState::Aborted {
                reason: format!(
                    "stopped releasing; {} was NOT sent: the journal cannot be written. {}",
                    action.key(),
                    self.left_on_hooks()
                ),
            });
            return;
        }
        // Pauses Heat writes from now on belong to the rollback.
        let held_at_cancel: BTreeSet<String> = self
            .obs
            .members
            .iter()
            .filter(|(_, t)| t.paused && !t.done)
            .map(|(m, _)| m.clone())
            .collect();
        for t in self.obs.members.values_mut() {
            t.paused = false;
        }
        match self.heat.action(&self.plan.stack, action).await {
            Ok(()) => {
                let e = self.record("rollout.cancel", &target, Outcome::Ok);
                self.note(e).await;
                self.aborting = Some(Aborting {
                    mode,
                    since: std::time::Instant::now(),
                    saw_rollback: false,
                    cleared: BTreeMap::new(),
                    held_at_cancel,
                });
            }
            Err(e) => {
                let entry = self
                    .record(
                        "rollout.cancel",
                        &target,
                        Outcome::Failed {
                            error: e.to_string(),
                        },
                    )
                    .calls(vec![call]);
                self.note(entry).await;
                let _ = self.obs.refresh().await;
                let s = &self.obs.stack_status;
                let reason = if !s.is_in_progress() {
                    // A failed update (a member failed) is over for Heat: nothing to cancel.
                    let done = self.plan.members().filter(|m| self.is_done(m)).count();
                    format!(
                        "stopped releasing; Heat's update already ended ({s}), there is nothing \
                         to cancel: {done} of {} nodes on {}. To finish: `{}` takes them back, \
                         `{}` carries on",
                        self.plan.members().count(),
                        self.plan.image,
                        self.plan.back_command(),
                        self.plan.forward_command()
                    )
                } else {
                    format!(
                        "stopped releasing; Heat refused {}: {e}. {}",
                        action.key(),
                        self.left_on_hooks()
                    )
                };
                self.ended = Some(RolloutState::Aborted { reason });
            }
        }
    }

    /// Members released that Heat has not finished (nor failed).
    pub(super) fn updating(&self) -> Vec<&str> {
        self.plan
            .members()
            .filter(|m| {
                self.obs
                    .members
                    .get(*m)
                    .is_some_and(|t| t.released_at.is_some() && !t.done && t.failed.is_none())
            })
            .map(String::as_str)
            .collect()
    }

    /// What an abort that stops releasing leaves, and how to finish.
    fn left_on_hooks(&self) -> String {
        let done = self.plan.members().filter(|m| self.is_done(m)).count();
        let total = self.plan.members().count();
        let t = self.target();
        if !self.obs.stack_status.is_in_progress() {
            // Heat's update is over (a failure ends it at once): nothing waits on a hook,
            // and there is no update left to roll back or cancel. What stays is the hooks in
            // the stack's environment, which the next update would stop on.
            let unhook = self
                .plan
                .hooked_groups()
                .into_iter()
                .map(|g| {
                    CommandLine::caldera(&["heat", "unhook"])
                        .arg(self.plan.stack.name.clone())
                        .arg(g.to_string())
                        .to_string()
                })
                .collect::<Vec<_>>()
                .join("` and `");
            return format!(
                "{done} of {total} nodes updated; Heat's update is over (stack {}), so no node \
                 waits on a hook: the rollout's hooks stay in the stack's environment and the \
                 next update would stop on them; `{unhook}` takes them out, `{}` updates the rest",
                self.obs.stack_status,
                self.plan.forward_command()
            );
        }
        format!(
            "{done} of {total} nodes updated, the others wait on their hooks (stack {}); to \
             finish: `caldera rollout abort {t} --rollback` rolls back, `--cancel` stops Heat's \
             update where it is, `caldera rollout resume {t}` continues",
            self.obs.stack_status
        )
    }

    /// One look at Heat while an abort's cancel settles. A `cancel_update` of a hooked
    /// update rolls back through the same hooks (measured on Heat 27: the rollback pauses
    /// every member it takes back on `pre-update` and waits for ever): each is cleared as
    /// it pauses, until the rollback ends.
    pub(super) async fn abort_step(&mut self) -> Option<RolloutState> {
        if let Err(e) = self.obs.refresh().await {
            tracing::warn!("rollout {}: reading Heat: {e}", self.plan.id);
            return None;
        }
        let status = self.obs.stack_status.clone();
        let a = self.aborting.as_mut()?;
        if status.action == "ROLLBACK" {
            a.saw_rollback = true;
        }
        let (mode, since, saw_rollback) = (a.mode, a.since, a.saw_rollback);
        if mode == AbortMode::LeavePaused {
            if self.updating().is_empty() || since.elapsed() > self.plan.options.node_timeout() {
                return Some(RolloutState::Aborted {
                    reason: self.left_on_hooks(),
                });
            }
            return None;
        }
        if status.is_in_progress() {
            if mode == AbortMode::CancelUpdate {
                self.clear_rollback_hooks().await;
            }
            if since.elapsed() > ABORT_SETTLE_MAX {
                return Some(RolloutState::Aborted {
                    reason: format!(
                        "Heat is still {status} {}s after the cancel; `caldera rollout status` \
                         follows it",
                        since.elapsed().as_secs()
                    ),
                });
            }
            return None;
        }
        if mode == AbortMode::CancelUpdate
            && !saw_rollback
            && since.elapsed() < ROLLBACK_START_GRACE
            && status.action == "UPDATE"
            && !status.is_complete()
        {
            return None; // the cancel has not turned into the rollback yet
        }
        // Heat's cancel (and a rollback) changed members behind the events' backs: count
        // what is done from the members' own stacks.
        if recount_after_cancel(&self.plan, saw_rollback || status.action == "ROLLBACK") {
            for t in self.obs.members.values_mut() {
                t.done = false;
            }
            if let Err(e) = self.obs.attach(self.plan.image_parameter()).await {
                tracing::warn!("rollout {}: recounting members: {e}", self.plan.id);
            }
        }
        Some(RolloutState::Aborted {
            reason: self.cancel_outcome(mode),
        })
    }

    async fn clear_rollback_hooks(&mut self) {
        let paused: Vec<String> = self
            .obs
            .members
            .iter()
            .filter(|(_, t)| t.paused)
            .map(|(m, _)| m.clone())
            .collect();
        for m in paused {
            let target = self.member_target(&m);
            let r = self.obs.release(&m).await;
            if let Some(t) = self.obs.members.get_mut(&m) {
                t.paused = false;
            }
            let outcome = match &r {
                Ok(()) => Outcome::Ok,
                Err(e) => Outcome::Failed {
                    error: e.message.clone(),
                },
            };
            if let Some(a) = self.aborting.as_mut() {
                *a.cleared.entry(m.clone()).or_default() += 1;
            }
            let e = self.record("rollout.rollback_release", &target, outcome);
            self.note(e).await;
        }
    }

    /// Where an abort's cancel left Heat, and how to finish.
    fn cancel_outcome(&self, mode: AbortMode) -> String {
        let s = &self.obs.stack_status;
        let reason = self.obs.stack_reason.clone();
        match mode {
            AbortMode::CancelUpdate if s.action == "ROLLBACK" && s.is_complete() => format!(
                "rolled back: stack {s}, every node back on its previous image{}",
                self.plan
                    .from_image
                    .as_deref()
                    .map(|i| format!(" ({i})"))
                    .unwrap_or_default()
            ),
            AbortMode::CancelUpdate if s.action == "ROLLBACK" => {
                // Measured on Heat 27: a member cut short by the cancel can fail the
                // rollback (`resources[1]: Stack UPDATE cancelled`).
                let done = self.plan.members().filter(|m| self.is_done(m)).count();
                format!(
                    "rollback failed: stack {s} ({reason}); {done} of {} nodes still on {}; to \
                     finish: `{}` takes them back, `{}` carries on",
                    self.plan.members().count(),
                    self.plan.image,
                    self.plan.back_command(),
                    self.plan.forward_command()
                )
            }
            _ => {
                let done: Vec<&str> = self
                    .plan
                    .members()
                    .filter(|m| self.is_done(m))
                    .map(String::as_str)
                    .collect();
                let total = self.plan.members().count();
                format!(
                    "cancelled: stack {s} ({reason}); {} of {total} nodes on {}{}{}; to finish: \
                     `{}` updates the rest{}",
                    done.len(),
                    self.plan.image,
                    if done.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", done.join(","))
                    },
                    self.still_held_after_cancel(),
                    self.plan.forward_command(),
                    self.plan
                        .from_image
                        .as_ref()
                        .map(|_| format!(", `{}` goes back", self.plan.back_command()))
                        .unwrap_or_default()
                )
            }
        }
    }

    /// What a cancel without rollback left held. Heat's cancel does not end a member's wait
    /// on its hook (measured on Heat 27: the member's task waits on, its pause stays the
    /// newest hook event, and clearing the hook later updates the member to the cancelled
    /// update's values). So the abort names those members and the call that would release
    /// them, and does not send it: updating them is the operator's choice.
    fn still_held_after_cancel(&self) -> String {
        let Some(a) = &self.aborting else {
            return String::new();
        };
        let held: Vec<&str> = a
            .held_at_cancel
            .iter()
            .filter(|m| {
                self.obs
                    .members
                    .get(*m)
                    .is_some_and(|t| t.released_at.is_none() && !t.done)
            })
            .map(String::as_str)
            .collect();
        if held.is_empty() {
            return String::new();
        }
        let clear = held.iter().fold(
            CommandLine::caldera(&["heat", "clear-hook"]).arg(self.plan.stack.name.clone()),
            |line, m| {
                let name = crate::model::split_member_key(m).1;
                line.arg(format!("{}/{name}", self.plan.group_of(m)))
            },
        );
        format!(
            "; still held on its {} hook by Heat's cancelled update: {} (Heat's cancel does \
             not end that wait, and clearing the hook updates the member to this rollout's \
             values: `{clear}`)",
            crate::rollout::plan::ROLLOUT_HOOK,
            held.join(",")
        )
    }
}

/// After an abort with rollback, Heat's rollback takes every member it had updated (or was
/// updating) back to the old template: a member this rollout released (its journal says so)
/// and not on the new image now is rolled back, not pending. Heat's rollback also pauses and
/// passes members the rollout never released: the times its events give them are the
/// rollback's, so those members stay pending with no release time. Skipped stay skipped.
pub(super) fn mark_rolled_back(status: &mut RolloutStatus, released: &BTreeSet<String>) {
    for n in status.nodes.iter_mut() {
        if matches!(n.phase, NodePhase::Skipped | NodePhase::Done) {
            continue;
        }
        if released.contains(&n.name) {
            n.phase = NodePhase::RolledBack;
        } else {
            n.phase = NodePhase::Pending;
            n.released_at = None;
            n.finished_at = None;
        }
    }
}

/// Whether what is done after an abort's cancel is counted again from the members' own
/// stacks rather than from the update's events. A rollback takes members back behind the
/// events' backs: none of a group's members is on the rollout's values after it. Caldera's
/// own node groups say it member by member (each member stack's `image`). A cancel without
/// rollback undoes nothing: for a group of an operator's stack (whose members' parameters
/// do not name the stack's), a member Heat's events saw released and `UPDATE_COMPLETE`
/// stays updated.
pub(super) fn recount_after_cancel(plan: &RolloutPlan, rolled_back: bool) -> bool {
    plan.image_parameter().is_some() || rolled_back
}
