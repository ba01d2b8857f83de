//! Manual Heat controls, outside caldera's rollouts: clear a pending hook, check a stack,
//! cancel its update, mark a resource unhealthy.
//!
//! Each is planned first: the plan says exactly which calls go to Heat (and why it is
//! refused, if it is). Applying one passes the guard rails, writes the plan and its calls to
//! the journal, and only then sends the calls; the outcome follows in the journal.
//!
//! What Heat does with them (measured on Heat 27):
//! - a hook (`pre-update` ...) set in a stack's environment holds each matching resource
//!   until `POST .../resources/{name}/signal {"unset_hook": "pre-update"}` reaches the stack
//!   that owns it (a group member's own nested stack, not the root);
//! - `POST .../actions {"check": null}` asks every resource whether it still exists as
//!   planned, nested stacks too: `CHECK_IN_PROGRESS`, then `CHECK_COMPLETE` (or
//!   `CHECK_FAILED`). Heat 27 accepts it (200) even while an update runs, and the stack
//!   then ends `CHECK_COMPLETE`, hiding the update's outcome: caldera refuses that;
//! - `{"cancel_update": null}` stops an `UPDATE_IN_PROGRESS` and rolls back to the old
//!   definition (`ROLLBACK_COMPLETE`); `cancel_without_rollback` leaves it where it is
//!   (`UPDATE_FAILED`). On a stack not being updated Heat answers 400. A rollback of an
//!   update made with hooks stops on the same hooks: they are cleared as for the update;
//! - `PATCH .../resources/{name} {"mark_unhealthy": true}` sets the resource to
//!   `CHECK_FAILED` with the given reason; the next update replaces it;
//! - `PUT /software_deployments/{id} {"status": "COMPLETE"|"FAILED", "status_reason": ..,
//!   "output_values": {..}}` is the API's update of a deployment: Heat stores the row as
//!   given, and the deployment resource, which polls its row while `IN_PROGRESS`, completes
//!   (or fails with that reason). An agent's own signal goes through the resource
//!   (`signal_software_deployment`, which works the status out of `deploy_status_code` and
//!   takes only a deployment `IN_PROGRESS`); caldera refuses a deployment not in progress the
//!   same way, since a settled resource no longer reads its row.

use super::any_group::group_members;
use super::apply::ActionContext;
use super::guard::Reach;
use super::heat_native::stack_path;
use super::heat_native::update_body_text;
use super::refused;
use crate::api::heat::deployments::{DEPLOY_STATUS_CODE, DEPLOY_STDERR};
use crate::api::heat::{
    DeploymentUpdate, EnvironmentHooks, HeatClient, StackAction, StackDetail, StackUpdate,
};
use crate::drivers::leftover_hooks::HELD_HOOK;
use crate::journal::{ApiCall, Entry, Outcome};
use crate::model::{SoftwareDeployment, StackRef, StackResource, Status};
use crate::ops::hooks::{self, PendingHook};
use crate::report::{ServiceError, ServiceResult};

/// Parameters only Magnum's Heat driver gives a stack: such a stack belongs to Magnum,
/// whose conductor tracks its updates.
const MAGNUM_PARAMETERS: [&str; 3] = ["is_cluster_stack", "magnum_url", "cluster_uuid"];

/// Most segments of a resource path (bounds the walk down nested stacks).
const MAX_PATH: usize = 16;

/// Which control, with what it needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// Clear `hook` on each listed pending resource.
    ClearHook {
        hooks: Vec<PendingHook>,
    },
    Check,
    /// `rollback`: `cancel_update`; else `cancel_without_rollback`.
    Cancel {
        rollback: bool,
    },
    MarkUnhealthy {
        path: String,
        reason: String,
    },
    /// Take `pre-update` out of the stack's environment at `keys` (a group's members),
    /// keeping any other hook declared there (`remaining`).
    Unhook {
        group: String,
        keys: Vec<String>,
        remaining: Vec<String>,
        /// The members the next update would no longer hold, when known.
        members: Option<usize>,
        /// Heat's preview of the PATCH: the top-level resources it would update.
        updates: Vec<String>,
    },
    /// Report a deployment `COMPLETE` or `FAILED` as its agent would have.
    SignalDeployment {
        id: String,
        /// The deployment as read before planning (what the plan shows).
        was: String,
        update: DeploymentUpdate,
    },
}

impl Control {
    /// The action name in the journal.
    pub fn action(&self) -> &'static str {
        match self {
            Control::ClearHook { .. } => "heat.clear_hook",
            Control::Check => "heat.check",
            Control::Cancel { .. } => "heat.cancel",
            Control::MarkUnhealthy { .. } => "heat.mark_unhealthy",
            Control::Unhook { .. } => "heat.unhook",
            Control::SignalDeployment { .. } => "heat.signal_deployment",
        }
    }

    /// A cancel reaches every resource the update touched (a rollback undoes them all);
    /// the others reach one resource, or ask without changing anything.
    pub fn reach(&self) -> Reach {
        match self {
            Control::Cancel { .. } | Control::Unhook { .. } => Reach::Fleet,
            Control::ClearHook { .. }
            | Control::Check
            | Control::MarkUnhealthy { .. }
            | Control::SignalDeployment { .. } => Reach::Nodes,
        }
    }
}

/// A planned control: what it is, on which stack, the calls it sends, and why not.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlPlan {
    /// The root stack the operator named.
    pub stack: StackRef,
    pub control: Control,
    /// `STACK` or `STACK/PATH`, as the journal records it.
    pub target: String,
    pub calls: Vec<ApiCall>,
    /// Why it must not be sent; empty when it may.
    pub refusals: Vec<String>,
    /// What the operator must know before confirming: it may be sent, but does more than its
    /// words say (releasing a member whose update has ended, for one).
    pub warnings: Vec<String>,
    /// The request to plan again when the only refusal is one the operator may override by
    /// saying so on purpose (a cancel on a stack Magnum owns: `allow_magnum`).
    pub override_with: Option<Request>,
}

impl ControlPlan {
    /// The plan as the operator reads it before confirming.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("{} {}", self.control.action(), self.target)];
        out.push(match &self.control {
            Control::ClearHook { hooks } => {
                let inferred = hooks
                    .iter()
                    .filter(|h| h.evidence == hooks::HookEvidence::InferredPurged)
                    .count();
                // Heat checks the hook data before it clears it (`_signal_check_hook`): a
                // wrong inference is refused by Heat ("hook is not defined"), nothing else.
                let note = match inferred {
                    0 => String::new(),
                    n => format!(" ({n} inferred: pause event purged)"),
                };
                format!("  release {} resource(s) held on a hook{note}", hooks.len())
            }
            Control::Check => {
                "  Heat checks every resource: CHECK_IN_PROGRESS, then CHECK_COMPLETE or \
                 CHECK_FAILED"
                    .into()
            }
            Control::Cancel { rollback: true } => {
                "  Heat stops the update and rolls back to the previous definition (a rollback \
                 stops on the update's hooks: clear them as it reaches them)"
                    .into()
            }
            Control::Cancel { rollback: false } => {
                "  Heat stops the update where it is (no rollback): UPDATE_FAILED".into()
            }
            Control::MarkUnhealthy { path, reason } => {
                format!("  {path} becomes CHECK_FAILED ({reason}); the next update replaces it")
            }
            Control::Unhook {
                group,
                members,
                updates,
                ..
            } => {
                let held = members
                    .map(|n| format!("its {n} member(s)"))
                    .unwrap_or_else(|| "its members".into());
                let preview = match updates.as_slice() {
                    [] => "Heat's preview: no resource updated".to_string(),
                    u => format!("Heat's preview, updated: {}", u.join(", ")),
                };
                format!(
                    "  takes pre-update out of the stack's environment on {group}: the next \
                     update no longer holds {held}. The PATCH is itself an update: Heat brings \
                     every resource to the stack's stored definition, unheld ({preview})"
                )
            }
            Control::SignalDeployment { id, was, update } => format!(
                "  deployment {id} ({was}) becomes {}, as if its agent had signalled: its \
                 resource {} on Heat's next poll",
                update.status,
                match update.status.as_str() {
                    "COMPLETE" => "completes and the stack goes on",
                    _ => "fails with this reason",
                }
            ),
        });
        out.extend(self.warnings.iter().map(|w| format!("  WARNING: {w}")));
        out.extend(self.calls.iter().map(|c| format!("  {c}")));
        out.extend(self.refusals.iter().map(|r| format!("  REFUSED: {r}")));
        out
    }

    fn new(stack: &StackRef, control: Control, target: String) -> ControlPlan {
        ControlPlan {
            stack: stack.clone(),
            control,
            target,
            calls: Vec::new(),
            refusals: Vec::new(),
            warnings: Vec::new(),
            override_with: None,
        }
    }
}

fn resource_path(owner: &StackRef, resource: &str) -> String {
    format!("{}/resources/{resource}", stack_path(owner))
}

/// `*` matches any run of characters (including `/`); everything else itself.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    if parts.len() == 1 {
        return pattern == text;
    }
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Plans clearing `hook` on the pending resources whose path matches `pattern` (a path
/// like `kube_minions/3`, or a glob: `kube_minions/*`; `hook` may be a glob too, `*` for
/// any). Only resources Heat holds now are signalled: a signal to one not paused would
/// clear nothing. `status` is the stack's: where no operation runs on it, the members still
/// paused wait for an update that has ended (cancelled without rollback, or failed): Heat
/// lets the workers of a cancelled traversal run on (`worker.stop_traversal`), so a released
/// member is updated then, on its own (measured on Heat 27); the plan says so.
pub fn plan_clear_hook(
    stack: &StackRef,
    pending: &[PendingHook],
    patterns: &[String],
    hook: &str,
    status: &Status,
) -> ControlPlan {
    let chosen: Vec<PendingHook> = pending
        .iter()
        .filter(|h| glob_match(hook, &h.hook) && patterns.iter().any(|p| glob_match(p, &h.path)))
        .cloned()
        .collect();
    let calls = chosen
        .iter()
        .map(|h| {
            crate::drivers::layout::clear_hook_call(&stack_path(&h.owner), &h.resource, &h.hook)
        })
        .collect();
    let pattern = patterns.join(", ");
    let target = match patterns {
        [one] => format!("{}/{one}", stack.name),
        many => format!("{} ({} paths: {pattern})", stack.name, many.len()),
    };
    let ended = !status.is_in_progress() && !chosen.is_empty();
    let mut plan = ControlPlan::new(stack, Control::ClearHook { hooks: chosen }, target);
    if ended {
        plan.warnings.push(format!(
            "no update of {} runs now ({status}): these members wait on the hook of an update \
             that has ended, and Heat still carries out their part of it once released (a \
             cancelled update's waiting members are not stopped): each is updated to that \
             update's definition, alone, with no rollback",
            stack.name
        ));
    }
    plan.calls = calls;
    if plan.calls.is_empty() {
        let which = match hook {
            "*" => "a hook".to_string(),
            h => format!("the {h} hook"),
        };
        plan.refusals.push(format!(
            "no resource matching {pattern} is held on {which} now"
        ));
    }
    plan
}

/// Plans a stack check: refused while another action runs (Heat 27 takes it, and its
/// CHECK status then hides how that action ended).
pub fn plan_check(stack: &StackRef, detail: &StackDetail) -> ControlPlan {
    let mut plan = ControlPlan::new(stack, Control::Check, stack.name.clone());
    plan.calls.push(action_call(stack, StackAction::Check));
    let status = &detail.summary.status;
    if status.is_in_progress() {
        plan.refusals.push(format!(
            "stack {} is {status}: check it once that has ended (Heat would take the check \
             and its CHECK status would hide how the action ended)",
            stack.name
        ));
    }
    plan
}

/// Plans cancelling the update under way: refused when the stack is not being updated
/// (Heat answers 400), and on a stack Magnum owns unless `allow_magnum`.
pub fn plan_cancel(
    stack: &StackRef,
    detail: &StackDetail,
    rollback: bool,
    allow_magnum: bool,
) -> ControlPlan {
    let action = if rollback {
        StackAction::CancelUpdate
    } else {
        StackAction::CancelWithoutRollback
    };
    let mut plan = ControlPlan::new(stack, Control::Cancel { rollback }, stack.name.clone());
    plan.calls.push(action_call(stack, action));
    let status = &detail.summary.status;
    if !(status.is_in_progress() && status.raw.starts_with("UPDATE")) {
        plan.refusals.push(format!(
            "stack {} is {status}: Heat cancels only an update in progress",
            stack.name
        ));
    }
    let request = Request::Cancel {
        rollback,
        allow_magnum,
    };
    guard_magnum_owned(&mut plan, detail, allow_magnum, &request);
    plan
}

fn magnum_parameter(detail: &StackDetail) -> Option<&'static str> {
    MAGNUM_PARAMETERS
        .iter()
        .copied()
        .find(|p| detail.parameters.contains_key(*p))
}

fn action_call(stack: &StackRef, action: StackAction) -> ApiCall {
    ApiCall::new(
        "POST",
        format!("{}/actions", stack_path(stack)),
        format!("{{\"{}\":null}}", action.key()),
    )
}

/// Plans marking the resource at `owner`/`resource` (found from `path`) unhealthy.
pub fn plan_mark_unhealthy(stack: &StackRef, target: &Marked, reason: &str) -> ControlPlan {
    let path = target.path;
    let control = Control::MarkUnhealthy {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    let mut plan = ControlPlan::new(stack, control, format!("{}/{path}", stack.name));
    let body = serde_json::json!({"mark_unhealthy": true, "resource_status_reason": reason});
    plan.calls.push(ApiCall::new(
        "PATCH",
        resource_path(target.owner, &target.resource.name),
        body.to_string(),
    ));
    if reason.trim().is_empty() {
        plan.refusals
            .push("give a reason: Heat shows it as the resource's status reason".into());
    }
    // Heat marks a resource only while no action runs on it (it answers 409 otherwise).
    let status = &target.resource.status;
    if status.is_in_progress() {
        plan.refusals.push(format!(
            "{path} is {status}: Heat marks a resource only once its action has ended"
        ));
    }
    plan
}

/// The resource a mark-unhealthy names: the stack that owns it, as Heat shows it, and its
/// path from the root.
pub struct Marked<'a> {
    pub owner: &'a StackRef,
    pub resource: &'a StackResource,
    pub path: &'a str,
}

/// A stack Magnum owns (it has Magnum's parameters) is Magnum's to change: a plan on it is
/// refused unless the operator said so, and offers the same request with the say-so.
fn guard_magnum_owned(
    plan: &mut ControlPlan,
    detail: &StackDetail,
    allow_magnum: bool,
    request: &Request,
) {
    let Some(p) = magnum_parameter(detail).filter(|_| !allow_magnum) else {
        return;
    };
    if plan.refusals.is_empty() {
        plan.override_with = Some(request.allowing_magnum());
    }
    plan.refusals.push(format!(
        "stack {} belongs to a Magnum cluster (it has Magnum's parameter {p}): {}",
        plan.stack.name,
        request.magnum_concern()
    ));
}

/// The stack owning the resource at `path` (`kube_minions/3/server`) and its name there:
/// each segment but the last names a resource whose nested stack holds the next.
pub async fn owner_of(
    heat: &HeatClient,
    root: &StackRef,
    path: &str,
) -> ServiceResult<(StackRef, String)> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = segments.split_last() else {
        return Err(refused("give a resource path, e.g. kube_minions/3"));
    };
    if segments.len() > MAX_PATH {
        return Err(refused(format!("{path}: deeper than {MAX_PATH} levels")));
    }
    let mut owner = root.clone();
    for seg in parents {
        let r = heat.get_resource(&owner, seg).await?;
        owner = r.resource.nested.ok_or_else(|| {
            refused(format!(
                "{seg} in {path} owns no nested stack: no resource below it"
            ))
        })?;
    }
    // The last resource must exist: Heat would answer 404 after the journal entry.
    heat.get_resource(&owner, last).await?;
    Ok((owner, last.to_string()))
}

/// The environment's keys of a group path as the operator gives it: `kube_minions` (its
/// members: `kube_minions/*`), or the keys themselves when they end at the pattern that
/// holds the hook (`kube_minions/*`, `racks/*/nodes/*`).
fn unhook_keys(env: &EnvironmentHooks, group: &str) -> Vec<String> {
    let given: Vec<String> = group
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let as_given: Vec<&str> = given.iter().map(String::as_str).collect();
    let holds = |keys: &[&str]| {
        env.hooks_at(keys)
            .is_some_and(|h| h.iter().any(|h| h == HELD_HOOK))
    };
    if !as_given.is_empty() && holds(&as_given) {
        return given;
    }
    let mut keys = given;
    keys.push("*".into());
    keys
}

/// Plans taking `pre-update` out of the stack's environment on the members of `group`:
/// refused while an update runs (its hooks hold members now: release or cancel it) and
/// where the environment declares no such hook.
pub fn plan_unhook(
    stack: &StackRef,
    detail: &StackDetail,
    env: &EnvironmentHooks,
    group: &str,
    members: Option<usize>,
    updates: Vec<String>,
) -> ControlPlan {
    let keys = unhook_keys(env, group);
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let declared: Vec<String> = env
        .hooks_at(&key_refs)
        .map(<[String]>::to_vec)
        .unwrap_or_default();
    let remaining: Vec<String> = declared
        .iter()
        .filter(|h| *h != HELD_HOOK)
        .cloned()
        .collect();
    let group = group.trim_matches('/').to_string();
    let control = Control::Unhook {
        group: group.clone(),
        keys: keys.clone(),
        remaining: remaining.clone(),
        members,
        updates,
    };
    let mut plan = ControlPlan::new(stack, control, format!("{}/{group}", stack.name));
    plan.calls.push(ApiCall::new(
        "PATCH",
        stack_path(stack),
        update_body_text(&unhook_update(&key_refs, &remaining)),
    ));
    let status = &detail.summary.status;
    if status.is_in_progress() {
        plan.refusals.push(format!(
            "stack {} is {status}: the update's hooks hold members now; release them \
             (`caldera heat clear-hook`) or cancel the update first",
            stack.name
        ));
    }
    if !declared.iter().any(|h| h == HELD_HOOK) {
        plan.refusals.push(format!(
            "the stack's environment declares no {HELD_HOOK} hook on {} (`caldera heat hooks \
             {}` lists what it holds)",
            keys.join("/"),
            stack.name
        ));
    }
    plan
}

/// The PATCH of an unhook: the hooks at `keys` without `pre-update` (a `null` takes the
/// `hooks` key out when none is left; Heat merges the rest of the environment unchanged).
fn unhook_update(keys: &[&str], remaining: &[String]) -> StackUpdate {
    let hooks = match remaining {
        [] => serde_json::Value::Null,
        r => serde_json::json!(r),
    };
    let entry = serde_json::json!({ "hooks": hooks });
    StackUpdate {
        environment: Some(crate::api::heat::hooks_env::registry_patch(keys, entry)),
        existing: true,
        ..Default::default()
    }
}

/// What an operator may report for a deployment.
pub const DEPLOYMENT_STATUSES: [&str; 2] = ["COMPLETE", "FAILED"];

/// Plans reporting deployment `d` as `status` (`COMPLETE` or `FAILED`) by hand: the operator
/// ran the script themselves, or knows it will never run. Refused for another status, for a
/// deployment not in progress (Heat's agent signal takes only those, and a settled resource
/// no longer reads its row) and for `FAILED` without a reason (Heat shows it on the resource).
///
/// The plan's `stack` is the deployment (a deployment names no stack in Heat's API; the
/// guard rails and the journal know it by its id).
pub fn plan_signal_deployment(
    d: &SoftwareDeployment,
    status: &str,
    reason: Option<&str>,
) -> ControlPlan {
    let reason = reason.map(str::trim).filter(|r| !r.is_empty());
    let failed = status == "FAILED";
    let mut output_values = serde_json::Map::new();
    // What an agent reports: a code (0 completes, non-zero fails) and its stderr.
    output_values.insert(DEPLOY_STATUS_CODE.into(), i32::from(failed).into());
    if let (true, Some(r)) = (failed, reason) {
        output_values.insert(DEPLOY_STDERR.into(), r.into());
    }
    let update = DeploymentUpdate {
        status: status.to_string(),
        status_reason: Some(match reason {
            Some(r) => format!("{r} (reported by hand)"),
            None => "Outputs received (reported by hand)".to_string(),
        }),
        output_values,
    };
    let was = format!("server {}, {}", d.server_id, d.status.raw);
    let id = d.id.clone();
    let me = StackRef {
        name: id.clone(),
        id: id.clone(),
    };
    let control = Control::SignalDeployment {
        id: id.clone(),
        was,
        update: update.clone(),
    };
    let mut plan = ControlPlan::new(&me, control, format!("software_deployments/{id}"));
    let body = serde_json::to_string(&update).unwrap_or_default();
    plan.calls.push(ApiCall::new(
        "PUT",
        format!("/software_deployments/{id}"),
        body,
    ));
    if !DEPLOYMENT_STATUSES.contains(&status) {
        plan.refusals.push(format!(
            "status {status}: a deployment is reported COMPLETE or FAILED"
        ));
    }
    if !d.status.is_in_progress() {
        plan.refusals.push(format!(
            "deployment {id} is {}: only one in progress waits for a signal (its resource no \
             longer reads the deployment once settled)",
            d.status.raw
        ));
    }
    if failed && reason.is_none() {
        plan.refusals
            .push("give a reason: Heat shows it as the deployment's status reason".into());
    }
    plan
}

/// Plans a control read from Heat: the stack's state for check and cancel, the pending
/// hooks for a clear, the resource's owner for mark unhealthy.
pub async fn plan(
    heat: &HeatClient,
    stack: &StackRef,
    request: &Request,
) -> ServiceResult<ControlPlan> {
    match request {
        Request::ClearHook { patterns, hook } => {
            let (pending, detail) = futures::join!(
                hooks::pending_hooks(heat, stack),
                heat.get_stack(stack, false)
            );
            let status = detail?.summary.status;
            Ok(plan_clear_hook(stack, &pending?, patterns, hook, &status))
        }
        Request::Check => Ok(plan_check(stack, &heat.get_stack(stack, false).await?)),
        Request::Cancel {
            rollback,
            allow_magnum,
        } => {
            let detail = heat.get_stack(stack, false).await?;
            Ok(plan_cancel(stack, &detail, *rollback, *allow_magnum))
        }
        Request::MarkUnhealthy {
            path,
            reason,
            allow_magnum,
        } => {
            let (owner, resource) = owner_of(heat, stack, path).await?;
            let (detail, shown) = futures::join!(
                heat.get_stack(stack, false),
                heat.get_resource(&owner, &resource)
            );
            let target = Marked {
                owner: &owner,
                resource: &shown?.resource,
                path,
            };
            let mut plan = plan_mark_unhealthy(stack, &target, reason);
            guard_magnum_owned(&mut plan, &detail?, *allow_magnum, request);
            Ok(plan)
        }
        Request::Unhook { group } => {
            let detail = heat.get_stack(stack, false).await?;
            let env = heat.get_environment_hooks(stack).await?;
            let group = group.trim_matches('/');
            let literal = group
                .split('/')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>();
            let members = match literal.iter().any(|s| s.contains(['*', '?', '['])) {
                true => None,
                false => group_members(heat, stack, &literal.join("/"))
                    .await
                    .ok()
                    .map(|m| m.len()),
            };
            let mut plan = plan_unhook(stack, &detail, &env, group, members, Vec::new());
            if plan.refusals.is_empty() {
                // What Heat says the PATCH would update, shown before it is confirmed.
                let keys = unhook_keys(&env, group);
                let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
                let remaining = match &plan.control {
                    Control::Unhook { remaining, .. } => remaining.clone(),
                    _ => Vec::new(),
                };
                let preview = heat
                    .preview_update(stack, &unhook_update(&key_refs, &remaining))
                    .await?;
                if let Control::Unhook { updates, .. } = &mut plan.control {
                    *updates = preview.updated;
                }
            }
            Ok(plan)
        }
    }
}

/// What the operator asked for, before it is planned against Heat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Release what is held on `hook` at any of `patterns` (paths or globs of paths).
    ClearHook {
        patterns: Vec<String>,
        hook: String,
    },
    Check,
    Cancel {
        rollback: bool,
        allow_magnum: bool,
    },
    MarkUnhealthy {
        path: String,
        reason: String,
        /// Go ahead on a stack Magnum owns (its next update replaces what is marked).
        allow_magnum: bool,
    },
    /// Take the `pre-update` hooks out of the stack's environment on a group's members.
    Unhook {
        group: String,
    },
}

impl Request {
    /// The same request, said to go ahead on a stack Magnum owns.
    pub fn allowing_magnum(&self) -> Request {
        match self {
            Request::Cancel { rollback, .. } => Request::Cancel {
                rollback: *rollback,
                allow_magnum: true,
            },
            Request::MarkUnhealthy { path, reason, .. } => Request::MarkUnhealthy {
                path: path.clone(),
                reason: reason.clone(),
                allow_magnum: true,
            },
            Request::ClearHook { .. } | Request::Check | Request::Unhook { .. } => self.clone(),
        }
    }

    /// What going ahead on a stack Magnum owns does, said in its refusal.
    fn magnum_concern(&self) -> &'static str {
        match self {
            Request::MarkUnhealthy { .. } => {
                "Magnum's next update of the cluster (its resize or upgrade) replaces the \
                 marked resource, and Magnum is not told why; say so to go ahead"
            }
            Request::Cancel { .. }
            | Request::ClearHook { .. }
            | Request::Check
            | Request::Unhook { .. } => {
                "Magnum's conductor tracks this update and knows no cancel of its own (there \
                 is no Magnum API for it): a cancel here leaves the cluster as Heat ends it; \
                 say so to go ahead"
            }
        }
    }
}

/// Sends a plan the operator has seen: refusals and guard rails first (recorded as
/// refused), then the plan and its calls in the journal, then the calls, then the outcome.
pub async fn apply(
    ctx: &ActionContext,
    heat: &HeatClient,
    plan: &ControlPlan,
    confirm: Option<&str>,
) -> ServiceResult<()> {
    let action = plan.control.action();
    if !plan.refusals.is_empty() {
        return Err(ctx.refuse(action, &plan.target, plan.refusals.join("; ")));
    }
    let reach = plan.control.reach();
    ctx.check(action, &plan.target, &plan.stack.name, reach, confirm)?;
    ctx.record(
        &Entry::new(&ctx.actor, action, &plan.target, Outcome::Started)
            .plan(plan.lines())
            .calls(plan.calls.clone()),
    )?;
    let result = send(heat, plan).await;
    let outcome = match &result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed {
            error: e.message.clone(),
        },
    };
    ctx.record(&Entry::new(&ctx.actor, action, &plan.target, outcome))?;
    result
}

/// The calls of a plan, in order; the first failure stops the rest.
async fn send(heat: &HeatClient, plan: &ControlPlan) -> ServiceResult<()> {
    let stack = &plan.stack;
    let sent = match &plan.control {
        Control::ClearHook { hooks } => {
            for h in hooks {
                heat.unset_hook(&h.owner, &h.resource, &h.hook).await?;
            }
            Ok(())
        }
        Control::Check => heat.action(stack, StackAction::Check).await,
        Control::Cancel { rollback: true } => heat.action(stack, StackAction::CancelUpdate).await,
        Control::Cancel { rollback: false } => {
            heat.action(stack, StackAction::CancelWithoutRollback).await
        }
        Control::MarkUnhealthy { reason, .. } => {
            let (owner, resource) = mark_target(plan)?;
            heat.mark_unhealthy(&owner, &resource, true, reason).await
        }
        Control::Unhook {
            keys, remaining, ..
        } => {
            let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            heat.update_stack(stack, &unhook_update(&key_refs, remaining))
                .await
        }
        Control::SignalDeployment { id, update, .. } => {
            heat.update_deployment(id, update).await.map(|_| ())
        }
    };
    sent.map_err(ServiceError::from)
}

/// The owner and resource name a mark-unhealthy plan's call names (its PATCH path).
fn mark_target(plan: &ControlPlan) -> ServiceResult<(StackRef, String)> {
    let bad = || refused("mark unhealthy: the plan names no resource");
    let call = plan.calls.first().ok_or_else(bad)?;
    let rest = call.path.strip_prefix("/stacks/").ok_or_else(bad)?;
    let mut parts = rest.splitn(4, '/');
    let (Some(name), Some(id), Some("resources"), Some(resource)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let owner = StackRef {
        name: name.to_string(),
        id: id.to_string(),
    };
    Ok((owner, resource.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::guard::Guard;
    use crate::journal::{Actor, Journal};
    use crate::model::StackSummary;
    use crate::model::Status;
    use chrono::Utc;
    use std::collections::BTreeMap;

    fn sref(name: &str) -> StackRef {
        StackRef {
            name: name.into(),
            id: format!("{name}-id"),
        }
    }

    fn detail(status: &str, params: &[&str]) -> StackDetail {
        StackDetail {
            summary: StackSummary {
                stack: sref("s"),
                status: Status::parse(status),
                status_reason: None,
                created_at: None,
                updated_at: None,
                parent: None,
            },
            description: None,
            parameters: params
                .iter()
                .map(|p| (p.to_string(), "x".to_string()))
                .collect::<BTreeMap<_, _>>(),
            outputs: None,
            disable_rollback: None,
            timeout_mins: None,
            tags: vec![],
            links: vec![],
        }
    }

    fn pending(path: &str, hook: &str) -> PendingHook {
        let (owner, resource) = path.rsplit_once('/').unwrap_or(("s", path));
        PendingHook {
            path: path.into(),
            owner: sref(owner),
            resource: resource.into(),
            hook: hook.into(),
            since: Utc::now(),
            evidence: hooks::HookEvidence::Seen,
        }
    }

    fn deployment(status: &str) -> SoftwareDeployment {
        let (action, state) = status.split_once('_').unwrap();
        SoftwareDeployment {
            id: "dep-1".into(),
            server_id: "srv-1".into(),
            config_id: "cfg".into(),
            status: Status::from_parts(action, state),
            status_reason: None,
            created_at: None,
            updated_at: None,
            status_code: None,
            stdout: vec![],
            stderr: vec![],
        }
    }

    #[test]
    fn a_deployment_is_signalled_by_a_put_and_only_while_in_progress() {
        let plan = plan_signal_deployment(&deployment("CREATE_IN_PROGRESS"), "COMPLETE", None);
        assert!(plan.refusals.is_empty(), "{:?}", plan.refusals);
        assert_eq!(plan.calls.len(), 1);
        assert_eq!(plan.calls[0].method, "PUT");
        assert_eq!(plan.calls[0].path, "/software_deployments/dep-1");
        let body: serde_json::Value = serde_json::from_str(&plan.calls[0].body).unwrap();
        assert_eq!(body["status"], "COMPLETE");
        assert_eq!(body["output_values"]["deploy_status_code"], 0);
        assert!(plan.lines().iter().any(|l| l.contains("completes")));
        let failed = plan_signal_deployment(
            &deployment("CREATE_IN_PROGRESS"),
            "FAILED",
            Some("disk never attached"),
        );
        let body: serde_json::Value = serde_json::from_str(&failed.calls[0].body).unwrap();
        assert_eq!(body["output_values"]["deploy_status_code"], 1);
        assert_eq!(
            body["output_values"]["deploy_stderr"],
            "disk never attached"
        );
        assert!(failed.refusals.is_empty());
        let no_reason = plan_signal_deployment(&deployment("CREATE_IN_PROGRESS"), "FAILED", None);
        assert_eq!(no_reason.refusals.len(), 1);
        let settled = plan_signal_deployment(&deployment("CREATE_COMPLETE"), "COMPLETE", None);
        assert!(settled.refusals[0].contains("CREATE_COMPLETE"));
        let odd = plan_signal_deployment(&deployment("CREATE_IN_PROGRESS"), "DONE", None);
        assert_eq!(odd.refusals.len(), 1);
    }

    #[test]
    fn globs_match_paths() {
        assert!(glob_match("nodes/3", "nodes/3"));
        assert!(!glob_match("nodes/3", "nodes/30"));
        assert!(glob_match("nodes/*", "nodes/30"));
        assert!(glob_match("*/3", "nodes/3"));
        assert!(glob_match("n*s/*", "nodes/3"));
        assert!(!glob_match("n*x/*", "nodes/3"));
        assert!(glob_match("*", ""));
    }

    #[test]
    fn a_clear_signals_each_matching_pending_hook_in_its_owner_stack() {
        let hooks = [
            pending("nodes/1", "pre-update"),
            pending("nodes/2", "pre-update"),
            pending("nodes/3", "pre-create"),
            pending("lb/1", "pre-update"),
        ];
        let plan = clear(&hooks, "nodes/*", "UPDATE_IN_PROGRESS");
        assert!(plan.refusals.is_empty());
        let calls: Vec<String> = plan.calls.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            calls,
            [
                "POST /stacks/nodes/nodes-id/resources/1/signal {\"unset_hook\":\"pre-update\"}",
                "POST /stacks/nodes/nodes-id/resources/2/signal {\"unset_hook\":\"pre-update\"}",
            ]
        );
        assert_eq!(plan.target, "s/nodes/*");
        let none = clear(&hooks, "nodes/9", "UPDATE_IN_PROGRESS");
        assert_eq!(none.refusals.len(), 1);
    }

    #[test]
    fn a_clear_plan_says_how_many_holds_are_inferred() {
        let mut inferred = pending("nodes/2", "pre-update");
        inferred.evidence = hooks::HookEvidence::InferredPurged;
        let hooks = [pending("nodes/1", "pre-update"), inferred];
        let plan = clear(&hooks, "nodes/*", "UPDATE_IN_PROGRESS");
        assert_eq!(
            plan.lines()[1],
            "  release 2 resource(s) held on a hook (1 inferred: pause event purged)"
        );
        let seen = clear(&hooks[..1], "nodes/*", "UPDATE_IN_PROGRESS");
        assert_eq!(seen.lines()[1], "  release 1 resource(s) held on a hook");
    }

    /// A clear of `pattern`'s pre-update hooks among `hooks`, the stack in `status`.
    fn clear(hooks: &[PendingHook], pattern: &str, status: &str) -> ControlPlan {
        let patterns = [pattern.to_string()];
        plan_clear_hook(
            &sref("s"),
            hooks,
            &patterns,
            "pre-update",
            &Status::parse(status),
        )
    }

    /// A member still paused after its update ended (cancelled without rollback: Heat lets
    /// the waiting worker run on) is updated when released: the plan warns, before the call;
    /// while the update runs, no warning.
    #[test]
    fn releasing_a_member_of_an_ended_update_is_said_to_update_it_alone() {
        let hooks = [pending("nodes/1", "pre-update")];
        let plan = clear(&hooks, "nodes/*", "UPDATE_FAILED");
        assert!(plan.refusals.is_empty());
        let lines = plan.lines();
        assert!(
            lines[2].starts_with("  WARNING: no update of s runs now (UPDATE_FAILED)")
                && lines[2].contains("each is updated to that update's definition, alone"),
            "{lines:?}"
        );
        assert!(lines[3].starts_with("  POST "), "{lines:?}");
        let running = clear(&hooks, "nodes/*", "UPDATE_IN_PROGRESS");
        assert!(running.warnings.is_empty());
        // Nothing to release, nothing to warn of.
        let none = clear(&[], "nodes/*", "UPDATE_FAILED");
        assert!(none.warnings.is_empty() && none.refusals.len() == 1);
    }

    #[test]
    fn check_is_refused_while_an_action_runs() {
        let s = sref("s");
        assert!(plan_check(&s, &detail("UPDATE_COMPLETE", &[]))
            .refusals
            .is_empty());
        let busy = plan_check(&s, &detail("UPDATE_IN_PROGRESS", &[]));
        assert_eq!(busy.refusals.len(), 1);
        assert_eq!(
            busy.calls[0].to_string(),
            "POST /stacks/s/s-id/actions {\"check\":null}"
        );
    }

    #[test]
    fn cancel_wants_an_update_under_way_and_leave_for_magnum_stacks() {
        let s = sref("s");
        let running = detail("UPDATE_IN_PROGRESS", &[]);
        let plan = plan_cancel(&s, &running, true, false);
        assert!(plan.refusals.is_empty(), "{:?}", plan.refusals);
        assert_eq!(plan.calls[0].body, "{\"cancel_update\":null}");
        let plan = plan_cancel(&s, &running, false, false);
        assert_eq!(plan.calls[0].body, "{\"cancel_without_rollback\":null}");
        let settled = plan_cancel(&s, &detail("CREATE_COMPLETE", &[]), true, false);
        assert_eq!(settled.refusals.len(), 1);
        let creating = plan_cancel(&s, &detail("CREATE_IN_PROGRESS", &[]), true, false);
        assert_eq!(creating.refusals.len(), 1);
        let magnum = detail("UPDATE_IN_PROGRESS", &["cluster_uuid"]);
        assert_eq!(plan_cancel(&s, &magnum, true, false).refusals.len(), 1);
        assert!(plan_cancel(&s, &magnum, true, true).refusals.is_empty());
    }

    fn member(status: &str) -> StackResource {
        StackResource {
            name: "3".into(),
            logical_id: "3".into(),
            physical_id: None,
            resource_type: "OS::Heat::Stack".into(),
            status: crate::model::Status::parse(status),
            status_reason: None,
            updated_at: None,
            owner: None,
            nested: None,
            parent_resource: None,
            required_by: vec![],
        }
    }

    fn marked<'a>(owner: &'a StackRef, r: &'a StackResource) -> Marked<'a> {
        Marked {
            owner,
            resource: r,
            path: "nodes/3",
        }
    }

    #[test]
    fn mark_unhealthy_patches_the_resource_in_its_owner_and_wants_a_reason() {
        let (nodes, done) = (sref("nodes"), member("UPDATE_COMPLETE"));
        let plan = plan_mark_unhealthy(&sref("s"), &marked(&nodes, &done), "disk");
        assert_eq!(
            plan.calls[0].to_string(),
            "PATCH /stacks/nodes/nodes-id/resources/3 \
             {\"mark_unhealthy\":true,\"resource_status_reason\":\"disk\"}"
        );
        assert_eq!(
            mark_target(&plan).ok(),
            Some((sref("nodes"), "3".to_string()))
        );
        let blank = plan_mark_unhealthy(&sref("s"), &marked(&nodes, &done), " ");
        assert_eq!(blank.refusals.len(), 1);
        // Heat answers 409 to a mark on a resource whose action runs: refused before.
        let busy = member("UPDATE_IN_PROGRESS");
        let plan = plan_mark_unhealthy(&sref("s"), &marked(&nodes, &busy), "disk");
        assert_eq!(
            plan.refusals,
            ["nodes/3 is UPDATE_IN_PROGRESS: Heat marks a resource only once its action has ended"]
        );
    }

    #[test]
    fn a_mark_on_a_stack_magnum_owns_is_refused_unless_said_and_offers_the_say_so() {
        let (nodes, done) = (sref("nodes"), member("UPDATE_COMPLETE"));
        let request = Request::MarkUnhealthy {
            path: "nodes/3".into(),
            reason: "disk".into(),
            allow_magnum: false,
        };
        let magnum = detail("UPDATE_COMPLETE", &["cluster_uuid"]);
        let mut plan = plan_mark_unhealthy(&sref("s"), &marked(&nodes, &done), "disk");
        guard_magnum_owned(&mut plan, &magnum, false, &request);
        assert_eq!(plan.refusals.len(), 1);
        assert!(
            plan.refusals[0].contains("Magnum's next update of the cluster"),
            "{:?}",
            plan.refusals
        );
        assert_eq!(plan.override_with, Some(request.allowing_magnum()));
        let mut allowed = plan_mark_unhealthy(&sref("s"), &marked(&nodes, &done), "disk");
        guard_magnum_owned(&mut allowed, &magnum, true, &request);
        assert!(allowed.refusals.is_empty());
        // A refused cancel does not send the operator to a Magnum API that does not exist.
        let cancel = plan_cancel(
            &sref("s"),
            &detail("UPDATE_IN_PROGRESS", &["cluster_uuid"]),
            true,
            false,
        );
        assert!(
            cancel.refusals[0].contains("there is no Magnum API for it"),
            "{:?}",
            cancel.refusals
        );
    }

    #[tokio::test]
    async fn refusals_and_read_only_are_journaled_and_nothing_is_sent() {
        let dir = tempfile::tempdir().expect("tmp");
        let journal = Journal::open(dir.path().join("j.jsonl"));
        let ctx = ActionContext {
            actor: Actor::local("c"),
            journal: journal.clone(),
            guard: Guard {
                read_only: true,
                production: false,
            },
        };
        // No server listens here: a call that went out would fail, not be refused.
        let transport = crate::api::http::Transport::new(&Default::default()).expect("t");
        let heat = HeatClient::new(transport, "http://127.0.0.1:9/v1/admin").expect("heat");
        let s = sref("s");
        let plan = plan_check(&s, &detail("CREATE_COMPLETE", &[]));
        let e = apply(&ctx, &heat, &plan, None)
            .await
            .expect_err("read-only");
        assert!(e.message.contains("read-only"), "{e}");
        let settled = plan_cancel(&s, &detail("CREATE_COMPLETE", &[]), true, false);
        let e = apply(&ctx, &heat, &settled, None)
            .await
            .expect_err("refused");
        assert!(e.message.contains("only an update"), "{e}");
        let entries = journal.read_all().expect("read");
        let outcomes: Vec<_> = entries
            .iter()
            .map(|e| {
                (
                    e.action.as_str(),
                    matches!(e.outcome, Outcome::Refused { .. }),
                )
            })
            .collect();
        assert_eq!(outcomes, [("heat.check", true), ("heat.cancel", true)]);
    }
}
