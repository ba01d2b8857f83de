//! Hooks a stack's environment keeps with no update running: left by a rollout that ended
//! where taking them out would have changed members (or by an older caldera, a crashed run,
//! another tool). Heat stores the environment an update was sent with and merges every
//! later PATCH into it, and a member's nested stack is updated whenever its parent is, so
//! a `pre-update` hook on a group's members holds every one of them in the **next** update
//! of the stack, whoever starts it (Magnum's resize, `openstack stack update --existing`,
//! another caldera action), until someone releases each member by hand.

use crate::api::heat::HeatClient;
use crate::model::StackRef;
use crate::report::ServiceResult;
use serde::Serialize;

/// The hook every later update would stop on.
pub const HELD_HOOK: &str = "pre-update";

/// One entry of the environment that would hold a group's members in the next update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftoverHook {
    /// The group's path in the stack (`kube_minions`, `racks/*/nodes`): the environment's
    /// keys down to the pattern that names the members.
    pub group: String,
    /// The members' pattern (`*` for all of them).
    pub members_pattern: String,
    /// How many members the next update would hold, when the group path names one group.
    pub members: Option<usize>,
}

impl LeftoverHook {
    /// What an operator needs to read: what is left, what it does, how it goes.
    pub fn line(&self, stack: &str) -> String {
        format!("{}; {}", self.what(stack), self.remedy(stack))
    }

    /// What is left and what it does.
    pub fn what(&self, _stack: &str) -> String {
        let held = match self.members {
            Some(n) => format!("its {n} member(s)"),
            None => "the members of every group it matches".to_string(),
        };
        format!(
            "this stack's environment holds {HELD_HOOK} hooks on {}/{} with no update running: \
             its next update (by any tool) holds {held}",
            self.group, self.members_pattern
        )
    }

    /// What is left, in a line of a narrow terminal.
    pub fn short(&self) -> String {
        let held = match self.members {
            Some(n) => format!("holds its {n} members"),
            None => "holds their members".to_string(),
        };
        format!(
            "{HELD_HOOK} hooks left on {}/{}: next update {held}",
            self.group, self.members_pattern
        )
    }

    /// How it goes.
    pub fn remedy(&self, stack: &str) -> String {
        format!(
            "`caldera heat unhook {stack} {}` takes them out",
            self.group
        )
    }
}

/// The stack's leftover `pre-update` hooks: none while an update runs (its hooks are in
/// use then). Each is read from Heat's stored environment, not from any journal.
pub async fn leftover_hooks(
    heat: &HeatClient,
    stack: &StackRef,
) -> ServiceResult<Vec<LeftoverHook>> {
    let detail = heat.get_stack(stack, false).await?;
    if detail.summary.status.is_in_progress() {
        return Ok(Vec::new());
    }
    in_environment(heat, stack).await
}

/// The `pre-update` hooks the stack's stored environment declares on a group's members,
/// for a caller that knows already that no update runs.
pub async fn in_environment(
    heat: &HeatClient,
    stack: &StackRef,
) -> ServiceResult<Vec<LeftoverHook>> {
    let env = heat.get_environment_hooks(stack).await?;
    let mut out = Vec::new();
    for path in env.paths_with(HELD_HOOK) {
        // A hook on a resource of the root itself holds that resource, not a group's members.
        let Some((pattern, group)) = path.split_last() else {
            continue;
        };
        if group.is_empty() {
            continue;
        }
        let group = group.join("/");
        let literal = !group.contains(['*', '?', '[']);
        let members = match literal {
            true => members_matching(heat, stack, &group, pattern).await,
            false => None,
        };
        out.push(LeftoverHook {
            group,
            members_pattern: pattern.clone(),
            members,
        });
    }
    Ok(out)
}

/// How many members of the group at `group` the pattern names; `None` when Heat cannot say.
async fn members_matching(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
    pattern: &str,
) -> Option<usize> {
    let nested = super::heat_native::group_stack_of(heat, stack, group)
        .await
        .ok()?;
    let listing = heat
        .list_resources(&nested, &crate::api::heat::ResourceQuery::default())
        .await
        .ok()?;
    Some(
        listing
            .iter()
            .filter(|r| crate::api::heat::hooks_env::fnmatch(pattern, &r.resource.name))
            .count(),
    )
}
