//! What a rollout leaves in Heat once its members are done: the hooks its driver is still
//! taking out (the closing words), and after the end what would stop the stack's next
//! update, read from Heat whatever the journal says.

use super::{err, DriverInfo, RolloutPlan};
use crate::api::heat::HeatClient;
use crate::command_line::CommandLine;
use crate::ops::hooks::{HookEvidence, PendingHook};
use crate::report::ServiceResult;

/// What a rollout whose members are all updated says while its hooks are still in the
/// stack's environment: its state's reason, and its hooks line. While a live driver holds
/// the rollout's lock, that driver's own PATCH takes them out: nothing else is offered (a
/// `caldera heat unhook` then would race it). With nobody driving, a resume closes it.
pub(super) fn closing_words(
    plan: &RolloutPlan,
    driver: &DriverInfo,
    stack_status: &crate::model::Status,
) -> (String, String) {
    let hook = super::super::plan::ROLLOUT_HOOK;
    let group = plan.hooked_groups().join(" and ");
    match driver {
        DriverInfo::Here | DriverInfo::Process { .. } => (
            format!(
                "taking hooks out: every node is done; the driver puts the stack's environment \
                 back as it was (stack {stack_status})"
            ),
            format!(
                "being taken out by the rollout's driver: its PATCH puts {hook} on {group} back \
                 as it was before the rollout; `caldera rollout status` says completed once \
                 Heat's environment no longer holds them"
            ),
        ),
        // Started on another machine: its driver there, if it lives, ends with the same
        // PATCH after its last batch's hooks and gate; nothing here can see it.
        DriverInfo::Nobody {
            started_on: Some(host),
            ..
        } => (
            format!(
                "hooks still in: every node is done; the rollout's driver on {host} (not \
                 visible from here) takes the stack's environment back as it was after its \
                 last batch's hooks and gate, if it lives (stack {stack_status})"
            ),
            format!(
                "still in the stack's environment ({hook} on {group}): its driver on {host} \
                 takes them out at its end; if it is gone, `{}` here closes the rollout and \
                 takes them out",
                CommandLine::caldera(&["rollout", "resume"]).arg(plan.target.label())
            ),
        ),
        // Heat shows members released by a driver this journal does not know: it may live
        // (another machine, another state directory), and ends the same way.
        DriverInfo::Nobody {
            released_elsewhere, ..
        } if !released_elsewhere.is_empty() => (
            format!(
                "hooks still in: every node is done; the driver that released {} (not this \
                 machine's) takes the stack's environment back as it was at its end, if it \
                 lives (stack {stack_status})",
                crate::rollout::progress::member_list(released_elsewhere)
            ),
            format!(
                "still in the stack's environment ({hook} on {group}): the driver elsewhere \
                 takes them out at its end; if it is gone, `{}` here closes the rollout and \
                 takes them out",
                CommandLine::caldera(&["rollout", "resume"]).arg(plan.target.label())
            ),
        ),
        DriverInfo::Nobody { .. } => {
            let resume = CommandLine::caldera(&["rollout", "resume"]).arg(plan.target.label());
            (
                format!(
                    "hooks still in: every node is done, but the stack's environment still \
                     holds the rollout's {hook} hooks on {group} and no process on this \
                     machine takes them out (stack {stack_status})"
                ),
                format!(
                    "still in the stack's environment ({hook} on {group}): the next update of \
                     {} (by any tool) would stop on them; `{resume}` closes the rollout and \
                     takes them out",
                    plan.stack.name
                ),
            )
        }
    }
}

/// After a rollout's end, what Heat holds now that would stop the stack's next update (read
/// from Heat, whatever the journal says); `None` when it cannot be read. Two facts, both
/// Heat's: the hooks its stored environment keeps, and the members whose newest event is
/// still a pause on a hook while no update runs. The second outlives the first where an
/// update was cancelled or rolled back while members waited on their hooks: the environment
/// is put back, but Heat's events end on the pause, and releasing such a member later may
/// wake the cancelled update's wait.
pub(super) async fn hooks_left_now(heat: &HeatClient, plan: &RolloutPlan) -> Option<String> {
    let stack = &plan.stack;
    let detail = heat.get_stack(stack, false).await.ok()?;
    // While Heat's update still runs (an abort that left it paused on its hooks), the
    // rollout's hooks hold its members not released, when Heat's environment still has
    // them (was: "none left" beside members held on them).
    let status = &detail.summary.status;
    if status.is_in_progress() {
        return Some(match crate::rollout::unhook::hooks_out(heat, plan).await? {
            true => {
                format!("none left in the stack's environment (Heat's update still runs: {status})")
            }
            false => crate::rollout::unhook::held_while_running(plan, status),
        });
    }
    let (left, waiting) = futures::join!(
        crate::drivers::leftover_hooks::in_environment(heat, stack),
        stale_waits(heat, stack)
    );
    let left = left.ok()?;
    let mut lines: Vec<String> = left.iter().map(|h| h.line(&stack.name)).collect();
    match waiting {
        Ok(waiting) => lines.extend(stale_waits_line(&stack.name, &waiting)),
        Err(e) => lines.push(format!(
            "Heat's events not read ({e}): whether a member still waits on a hook is not known"
        )),
    }
    Some(match lines.is_empty() {
        true => "none left: the stack's environment holds no pre-update hook that would stop \
                 its next update, and no member waits on one in Heat's events"
            .to_string(),
        false => lines.join("; "),
    })
}

/// The resources of `stack`'s tree whose newest event is a pause on a hook (read by the
/// caller once it knows the stack is at rest: no update runs to release them).
async fn stale_waits(
    heat: &HeatClient,
    stack: &crate::model::StackRef,
) -> ServiceResult<Vec<PendingHook>> {
    let pending = crate::ops::hooks::pending_hooks(heat, stack)
        .await
        .map_err(err)?;
    Ok(pending
        .into_iter()
        .filter(|p| p.evidence == HookEvidence::Seen)
        .collect())
}

/// What the operator reads of the stale waits, naming up to five of them; `None` for none.
fn stale_waits_line(stack: &str, waiting: &[PendingHook]) -> Option<String> {
    if waiting.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = waiting.iter().take(5).map(|p| p.path.as_str()).collect();
    let more = waiting.len().saturating_sub(names.len());
    let more_text = format!("{more} more");
    if more > 0 {
        names.push(&more_text);
    }
    let hooks = CommandLine::caldera(&["heat", "hooks", stack]);
    Some(format!(
        "{} member(s) still paused on a hook in Heat's events with no update running ({}): \
         a wait left by an update that was cancelled or rolled back; the stack's next update \
         may stop on them; `{hooks}` lists them",
        waiting.len(),
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StackRef;
    use chrono::Utc;

    fn paused(path: &str) -> PendingHook {
        PendingHook {
            path: path.into(),
            owner: StackRef {
                name: "t23".into(),
                id: "id".into(),
            },
            resource: path.rsplit('/').next().unwrap_or(path).into(),
            hook: "pre-update".into(),
            since: Utc::now(),
            evidence: HookEvidence::Seen,
        }
    }

    /// Who takes a closing rollout's hooks out, as its driver is seen from here: the driver
    /// here or on this machine; nobody on this machine (then `rollout resume` does); or the
    /// driver on the machine it was started on, which cannot be seen from here.
    #[test]
    fn a_closing_rollouts_words_name_who_takes_its_hooks_out() {
        let stack = StackRef {
            name: "k8s".into(),
            id: "id".into(),
        };
        let plan = RolloutPlan::for_group(
            crate::drivers::any_group::group_target(&stack, "kube_minions"),
            stack,
            "kube_minions",
            &["0".to_string()],
            Default::default(),
            Default::default(),
        );
        let status = crate::model::Status::parse("UPDATE_COMPLETE");
        let nobody = |started_on: Option<&str>| DriverInfo::Nobody {
            since: None,
            last_pid: None,
            started_on: started_on.map(str::to_string),
            released_elsewhere: Vec::new(),
        };
        let (here, _) = closing_words(&plan, &DriverInfo::Here, &status);
        assert!(here.starts_with("taking hooks out"), "{here}");
        let (gone, left) = closing_words(&plan, &nobody(None), &status);
        assert!(
            gone.contains("no process on this machine takes them out"),
            "{gone}"
        );
        assert!(
            left.contains("`caldera rollout resume k8s/kube_minions`"),
            "{left}"
        );
        let (away, left) = closing_words(&plan, &nobody(Some("ops-1")), &status);
        assert!(
            away.contains("the rollout's driver on ops-1 (not visible from here)"),
            "{away}"
        );
        assert!(!away.contains("no process"), "{away}");
        assert!(
            left.contains("its driver on ops-1 takes them out"),
            "{left}"
        );
    }

    /// Members whose newest event is a pause with no update running are named (five at
    /// most, the rest counted), with the command that lists them; none, no line.
    #[test]
    fn stale_waits_are_named_with_the_command_that_lists_them() {
        assert_eq!(stale_waits_line("t23", &[]), None);
        let waiting: Vec<PendingHook> = [
            "api/0",
            "api/1",
            "workers/1",
            "workers/2",
            "workers/3",
            "workers/4",
        ]
        .iter()
        .map(|p| paused(p))
        .collect();
        let line = stale_waits_line("t23", &waiting).unwrap_or_default();
        assert!(
            line.starts_with(
                "6 member(s) still paused on a hook in Heat's events with no update running \
                 (api/0, api/1, workers/1, workers/2, workers/3, 1 more)"
            ),
            "{line}"
        );
        assert!(
            line.ends_with("`caldera heat hooks t23` lists them"),
            "{line}"
        );
    }
}
