//! Taking a rollout's hooks back out of the stack's environment.
//!
//! A rollout's PATCH puts `pre-update` on every member of its group
//! (`resource_registry.resources.GROUP."*".hooks`). Heat stores the environment an update
//! was sent with and merges every later PATCH into it, so the hook outlives the rollout:
//! every later update of the stack, whoever starts it (Magnum's conductor, the CLI, another
//! caldera), holds that group's members forever, since a member's nested stack is always
//! updated when its parent is (measured on Heat 27). So a rollout is not over until the
//! hook is gone again: one more PATCH that puts the entry back as it was before the start
//! ([`RolloutPlan::unhook_update`]), and Heat's word that it is gone (its environment read
//! back), not ours.
//!
//! That PATCH is itself an update: Heat converges every resource to the stored template.
//! It changes nothing only when every member already is what the stored stack says: after a
//! completed rollout (all members on the new values), or after Heat rolled back (the stored
//! stack is the old one again). After an update cancelled without rollback, a failed one or
//! one with skipped members, the hook is what keeps the members not updated from changing:
//! taking it out would update them. Then the hook stays, and the rollout says what it holds
//! and how to take it out when the operator chooses (`caldera heat unhook`).

use super::plan::{RolloutPlan, ROLLOUT_HOOK};
use crate::api::heat::{EnvironmentHooks, HeatClient, PriorEntry, StackUpdate};
use crate::drivers::apply::ActionContext;
use crate::drivers::heat_native::{stack_path, update_body_text};
use crate::journal::{ApiCall, Entry, Outcome};
use crate::model::StackRef;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// Longest the unhook waits for Heat's update that takes the hook out (it changes no
/// resource, so it takes seconds; a member stack per member is still walked).
const UNHOOK_WAIT: Duration = Duration::from_secs(10 * 60);

/// How a rollout ended, as far as taking its hooks out is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every member updated and Heat's update complete: the stored stack is what the
    /// members are.
    Completed,
    /// Anything else: whether the members match the stored stack is Heat's to say
    /// (`ROLLBACK_COMPLETE`: the old stack again).
    Other,
}

/// Whether Heat's environment holds at each of the rollout's hook paths (its target's and
/// every group it held too) what it held before the start (its hooks are out); `None` when
/// Heat cannot be read.
pub async fn hooks_out(heat: &HeatClient, plan: &RolloutPlan) -> Option<bool> {
    let env: EnvironmentHooks = heat.get_environment_hooks(&plan.stack).await.ok()?;
    Some(all_restored(plan, &env))
}

/// Whether `env` holds at every hook path of `plan` what it held before the start.
fn all_restored(plan: &RolloutPlan, env: &EnvironmentHooks) -> bool {
    plan.hook_entries().into_iter().all(|(keys, prior)| {
        prior
            .cloned()
            .unwrap_or(PriorEntry::Present(Vec::new()))
            .is_restored_in(env, &keys)
    })
}

/// The commands that take the rollout's hooks out by hand, one per hooked group (`heat
/// unhook` takes one group): "`caldera heat unhook S kube_masters`, then `caldera heat
/// unhook S kube_minions`" (was: one command naming "kube_masters and kube_minions").
fn unhook_commands(plan: &RolloutPlan) -> String {
    plan.hooked_groups()
        .iter()
        .map(|g| format!("`caldera heat unhook {} {g}`", plan.stack.name))
        .collect::<Vec<_>>()
        .join(", then ")
}

/// What an ended rollout's hooks do while Heat's update still runs (`status`): they hold
/// the members not released, and nothing can take them out before it ends.
pub(crate) fn held_while_running(plan: &RolloutPlan, status: &crate::model::Status) -> String {
    format!(
        "the {ROLLOUT_HOOK} hooks on {} stay while Heat's update runs ({status}): they hold \
         the members not released; once it ends, {} takes them out",
        plan.hooked_groups().join(" and "),
        unhook_commands(plan)
    )
}

/// Takes the rollout's hooks out of the stack's environment when that changes nothing else
/// (see the module's note), journaled first, and checks Heat's environment afterwards.
/// Answers the line the rollout's status and its last journal entry carry.
pub async fn take_out(
    heat: &HeatClient,
    ctx: &ActionContext,
    plan: &RolloutPlan,
    ending: Ending,
    poll: Duration,
    before_patch: impl std::future::Future<Output = ()>,
) -> String {
    let group = plan.hooked_groups().join(" and ");
    let group = group.as_str();
    let members = plan.members().count();
    let detail = match heat.get_stack(&plan.stack, false).await {
        Ok(d) => d,
        Err(e) => {
            return format!(
                "not known whether the {ROLLOUT_HOOK} hooks on {group} are still in the \
                 stack's environment (reading the stack: {e}); `caldera heat hooks {}` tells",
                plan.stack.name
            )
        }
    };
    let status = &detail.summary.status;
    match hooks_out(heat, plan).await {
        Some(true) => {
            return "none left: the stack's environment holds on the members what it held \
                    before the rollout"
                .to_string()
        }
        Some(false) => {}
        None => {
            return format!(
                "not known whether the {ROLLOUT_HOOK} hooks on {group} are still in the \
                 stack's environment (Heat's environment could not be read); `caldera heat \
                 hooks {}` tells",
                plan.stack.name
            )
        }
    }
    if status.is_in_progress() {
        return held_while_running(plan, status);
    }
    let safe = ending == Ending::Completed || status.raw == "ROLLBACK_COMPLETE";
    if !safe {
        return format!(
            "left in the stack's environment on purpose: {ROLLOUT_HOOK} on {group}, so the \
             next update of {stack} (by any tool) holds its {members} member(s). Heat's \
             update ended {status} with members not on the stack's stored values, and taking \
             the hooks out is an update that would bring them there unheld; {} does it when \
             you choose",
            unhook_commands(plan),
            stack = plan.stack.name
        );
    }
    let mut update = plan.unhook_update();
    // The rollout's marker goes with its hooks (see `tags_without_marker`).
    update.tags = super::plan::tags_without_marker(&detail.tags, &plan.id);
    let call = ApiCall::new("PATCH", stack_path(&plan.stack), update_body_text(&update));
    let target = plan.target.label();
    let entry = |outcome: Outcome| {
        Entry::new(&ctx.actor, "rollout.unhook", &target, outcome)
            .rollout(&plan.id)
            .calls(vec![call.clone()])
    };
    if let Err(e) = ctx.record(&entry(Outcome::Started)) {
        return format!(
            "still in the stack's environment ({ROLLOUT_HOOK} on {group}): the journal could \
             not take the entry of the PATCH that takes them out ({}), so it was not sent; \
             {}",
            e.message,
            unhook_commands(plan)
        );
    }
    before_patch.await;
    // Another start may have replaced this rollout's update since the stack was read (its
    // PATCH put its own marker on the stack, and its hooks): this PATCH would take its
    // hooks out and its marker off, its members then updated unheld. Read once more, right
    // before sending (Heat has no conditional update: this narrows the window to a read).
    if let Some(line) = superseded_since(heat, plan, &detail.tags).await {
        let _ = ctx.record(&entry(Outcome::Failed {
            error: format!("{NOT_SENT}{line}"),
        }));
        return line;
    }
    let line = send_and_check_all(heat, plan, &update, detail.summary.updated_at, poll).await;
    let outcome = match &line {
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Failed { error: e.clone() },
    };
    let _ = ctx.record(&entry(outcome));
    match line {
        Ok(l) => l,
        Err(e) => format!(
            "still in the stack's environment ({ROLLOUT_HOOK} on {group}): {e}; {}",
            unhook_commands(plan)
        ),
    }
}

/// How a `rollout.unhook` entry whose PATCH was never sent begins its error: the end's
/// PATCH that takes the marker off did not go out, so the marker, if gone, went by
/// another's hand.
pub(crate) const NOT_SENT: &str = "not sent: ";

/// Whether `e` is the end's PATCH of a rollout, sent or perhaps sent (a `Started` alone: the
/// process may have died mid-request): the marker may then have gone by this rollout's
/// own end.
pub(crate) fn own_end_sent(e: &Entry) -> bool {
    e.action == "rollout.unhook"
        && !matches!(&e.outcome, Outcome::Failed { error } if error.starts_with(NOT_SENT))
}

/// Why the end's PATCH must not be sent: the stack's marker is no longer the one read at
/// `tags` (another rollout's start replaced this one's update), or the stack cannot be read
/// to tell. None when the marker is unchanged.
async fn superseded_since(
    heat: &HeatClient,
    plan: &RolloutPlan,
    tags: &[String],
) -> Option<String> {
    let group = plan.hooked_groups().join(" and ");
    let read = match heat.get_stack(&plan.stack, false).await {
        Ok(d) => d,
        Err(e) => {
            return Some(format!(
                "still in the stack's environment ({ROLLOUT_HOOK} on {group}): the stack could \
                 not be read again right before the PATCH that takes them out ({e}); {}",
                unhook_commands(plan)
            ))
        }
    };
    let marker = |tags: &[String]| super::plan::marker_in(tags).map(|(id, _)| id);
    let now = marker(&read.tags);
    if now == marker(tags) {
        return None;
    }
    let by = now.map_or("another update".to_string(), |id| format!("rollout {id}"));
    Some(format!(
        "left to the update that superseded this rollout ({by} started since): its hooks on \
         {group} are now that update's (`caldera heat hooks {}` shows what the environment \
         holds)",
        plan.stack.name
    ))
}

/// Sends the PATCH, waits for Heat's update it starts to end, and reads the environment
/// back at every hook path of `plan` (its target's and the groups it held). `Ok` with the
/// line to show, `Err` with what went wrong.
async fn send_and_check_all(
    heat: &HeatClient,
    plan: &RolloutPlan,
    update: &StackUpdate,
    updated_before: Option<DateTime<Utc>>,
    poll: Duration,
) -> Result<String, String> {
    heat.update_stack(&plan.stack, update)
        .await
        .map_err(|e| format!("the PATCH that takes them out failed: {e}"))?;
    let status = wait_update_end(heat, &plan.stack, updated_before, poll).await;
    match hooks_out(heat, plan).await {
        Some(true) => Ok(format!(
            "taken out: Heat's environment holds on the members what it held before \
             (its update for it: {status})"
        )),
        Some(false) => Err(format!(
            "Heat's environment still declares them after the PATCH (its update: {status})"
        )),
        None => Err(format!(
            "sent, but Heat's environment could not be read back (its update: {status})"
        )),
    }
}

/// Waits (bounded) until the update a PATCH just started has ended: the stack no longer in
/// progress, and seen in progress since, or updated after `before`. An update that changes
/// nothing can start and end between two looks, within the same second of Heat's clock
/// (the simulator's too): a stack settled for [`SETTLED_GRACE`] after the PATCH counts as
/// ended. Answers the stack's status as last read.
async fn wait_update_end(
    heat: &HeatClient,
    stack: &StackRef,
    before: Option<DateTime<Utc>>,
    poll: Duration,
) -> String {
    let started = tokio::time::Instant::now();
    let deadline = started + UNHOOK_WAIT;
    let poll = poll.clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut last = String::from("not read");
    let mut seen_running = false;
    while tokio::time::Instant::now() < deadline {
        if let Ok(d) = heat.get_stack(stack, false).await {
            last = d.summary.status.raw.clone();
            let running = d.summary.status.is_in_progress();
            seen_running |= running;
            let newer = match (before, d.summary.updated_at) {
                (Some(b), Some(now)) => now > b,
                (None, Some(_)) => true,
                (_, None) => false,
            };
            if !running && (newer || seen_running || started.elapsed() >= SETTLED_GRACE) {
                return last;
            }
        }
        tokio::time::sleep(poll).await;
    }
    format!("{last}, still running after {}s", UNHOOK_WAIT.as_secs())
}

/// How long a stack seen settled after the unhook's PATCH, never in progress and with no
/// newer update time, is taken to have run that update already.
const SETTLED_GRACE: Duration = Duration::from_secs(5);
