//! Which members are paused on a Heat hook right now.
//!
//! Heat shows a pause only in events (measured on Heat 27: a paused member's resource keeps
//! its status and reason); the pause reads `UPDATE paused until Hook pre-update is cleared`
//! and the release `Hook pre-update is cleared`. The newest hook event of each member says
//! whether it is paused, so the group's events are read newest first, a few pages at most.
//!
//! A pause whose event Heat has purged (it keeps `max_events_per_stack` events per stack,
//! 1000 by default, deleting the oldest `event_purge_batch_size` once over) leaves no trace
//! in the API: `Resource._break_if_required` (heat/engine/resource.py) stores the hook in
//! the resource's private data (`trigger_hook` -> `data_set(hook, "True")`, shown by no API)
//! and writes the event with the resource's *current* action and status, changing neither.
//! heatclient's `hook-poll` reads events the same way and misses it too. What Heat's code
//! says a held member looks like (heat/engine/resource.py):
//!
//! - **pre-create** (`create`, only while the *stack's* action is CREATE): the member is
//!   still `INIT_COMPLETE` — exactly like one waiting for its dependencies. Members a scale-up
//!   adds during an UPDATE are never held on pre-create.
//! - **pre-update** (`update`, before `_needs_update`, so unchanged members are held too):
//!   the member keeps its old `CREATE_COMPLETE`/`UPDATE_COMPLETE` and its `updated_time`
//!   (`Resource.updated_time` is set only after the hook; the DB column does not auto-update,
//!   heat/db/models.py). Its stack's `updated_time` is the update's start
//!   (`Stack.converge_stack`, heat/engine/stack.py), and the group resource owning the
//!   nested stack is `UPDATE_IN_PROGRESS`.
//! - **pre-delete** (`delete`, only while the stack's action is DELETE): the member keeps its
//!   status, like one whose dependents are still being deleted.
//!
//! So the one hold that can be told from waiting is pre-update: [`pending_hooks`] reports
//! a member as held *inferred* ([`HookEvidence::InferredPurged`]) when
//!
//! - its stack is `UPDATE_IN_PROGRESS` or `ROLLBACK_IN_PROGRESS` (a rollback updates members
//!   back and stops on the same hooks; the environment is then the restored one, which is
//!   also what Heat matches);
//! - the member is `*_COMPLETE` with `updated_time` before its stack's update began, and
//!   nothing it depends on is in progress;
//! - no hook event of it was read, and its stack's events no longer reach back before the
//!   update began (had they, the absence of a pause event would be the truth);
//! - the environment (`GET .../environment`; see `caldera_cloud::api::heat::hooks_env` for
//!   how Heat matches hook globs on nested paths) declares a `pre-update` hook on its path.
//!
//! The stacks and the environment are read only when such a member exists (a nested stack
//! counts as maybe updating when its owning resource is `UPDATE_IN_PROGRESS`, the root when
//! one of its resources is). Limit: a member released *unchanged* (its update found nothing
//! to do, so its `updated_time` stays old) whose release event is purged too looks exactly
//! like a held one; the label says "inferred" for that reason. Clearing such a hook is
//! harmless: Heat checks the hook data first (`_signal_check_hook`) and refuses the signal
//! (`The "pre-update" hook is not defined`) when the member is not waiting.
//!
//! Who uses the inference: `caldera heat hooks` ([`pending_hooks`]), the console's why-stuck
//! line ([`inferred_tree_holds`], from the resources its tree read listed: no call more
//! unless a candidate exists) and the nodes pane's hook marks ([`with_inferred_members`],
//! only while the group's stack runs an update and some stack's events read no longer reach
//! its start).
//!
//! Run on a real Heat 27 that purges (`tests/real_heat/purged_hooks.rs`): held members,
//! the group resource and the group stack's `Stack UPDATE started` look as described here.

use crate::api::heat::{EnvironmentHooks, EventQuery, HeatClient, SortDir};
use crate::api::ApiError;
use crate::model::{StackEvent, StackRef, StackResource, StackSummary};
use crate::ops::stack_paths::StackPaths;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};

const PAUSED: &str = "paused until Hook";
const CLEARED: &str = "is cleared";

/// What a Heat event's reason says of a hook: `Some(true)` a pause (`UPDATE paused until
/// Hook pre-update is cleared`), `Some(false)` a release (`Hook pre-update is cleared`),
/// `None` anything else. With `hook`, only that hook type (e.g. `pre-update`) counts.
pub fn hook_event(reason: &str, hook: Option<&str>) -> Option<bool> {
    let names_hook = |prefix: &str| match hook {
        Some(h) => reason.contains(&format!("{prefix} {h}")),
        None => reason.contains(prefix),
    };
    if names_hook(PAUSED) {
        Some(true)
    } else if names_hook("Hook") && reason.contains(CLEARED) {
        Some(false)
    } else {
        None
    }
}

const PAGE: u32 = 500;
/// Enough for a long-stuck rollout of thousands of members; older pauses are history.
const MAX_PAGES: usize = 4;

/// Heat's event when a resource's wait on a hook ends without a release: the task that waited
/// was stopped, and `Resource._break_if_required` (heat/engine/resource.py) clears the hook
/// data and writes this with the resource's unchanged status. A stack's status says nothing
/// of the wait: a cancel without rollback lets the workers in progress finish
/// (`worker.stop_traversal`), so a member paused then still waits on its hook with the stack
/// `UPDATE_FAILED`, and clearing the hook later updates it (measured on Heat 27); only this
/// event or a release ends a pause.
pub const WAIT_FAILED: &str = "Failure occurred while waiting.";

/// What an event says of a resource's wait on a hook: `Some(true)` a pause, `Some(false)`
/// the end of the wait (a release, or [`WAIT_FAILED`]: its operation stopped), `None`
/// neither. [`hook_event`] reads releases only, for a reader that tells them apart.
pub fn wait_event(reason: &str) -> Option<bool> {
    hook_event(reason, None).or_else(|| (reason.trim() == WAIT_FAILED).then_some(false))
}

/// Members (resource names in the group) whose newest hook event is a pause. `events` must be
/// newest first.
pub fn paused_from_newest_first(events: &[StackEvent]) -> HashSet<String> {
    let mut latest: HashMap<&str, bool> = HashMap::new();
    for e in events {
        let Some(reason) = e.status_reason.as_deref() else {
            continue;
        };
        if let Some(paused) = wait_event(reason) {
            latest.entry(e.resource_name.as_str()).or_insert(paused);
        }
    }
    latest
        .into_iter()
        .filter(|(_, paused)| *paused)
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Reads the node group stack's events one level down (the group's own stack, where member
/// resources report), newest first, a page at a time (at most `MAX_PAGES`), until `page`
/// says it has seen enough (`true`).
async fn newest_events_until(
    heat: &HeatClient,
    nodegroup: &StackRef,
    page_done: impl FnMut(&[StackEvent]) -> bool,
) -> Result<(), ApiError> {
    newest_events(heat, nodegroup, Some(1), page_done)
        .await
        .map(|_| ())
}

/// [`newest_events_until`] for any stack, down to `nested_depth`.
pub(crate) async fn newest_events(
    heat: &HeatClient,
    stack: &StackRef,
    nested_depth: Option<u32>,
    mut page_done: impl FnMut(&[StackEvent]) -> bool,
) -> Result<bool, ApiError> {
    let mut marker = None;
    for _ in 0..MAX_PAGES {
        let page = heat
            .list_events_page(
                stack,
                &EventQuery {
                    limit: Some(PAGE),
                    marker: marker.clone(),
                    sort_dir: Some(SortDir::Desc),
                    nested_depth,
                    ..Default::default()
                },
            )
            .await?;
        let done = page_done(&page);
        if page.len() < PAGE as usize {
            return Ok(true);
        }
        if done {
            break;
        }
        marker = page.last().map(|e| e.id.clone());
    }
    Ok(false)
}

/// The members of the node group paused on a hook right now, by their newest events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PausedMembers {
    /// Names in the group (`3`) of those whose newest hook event is a pause.
    pub names: HashSet<String>,
    /// How far back the events read reach, in the stack that reaches least far: Heat
    /// purges each stack's events on its own (the group's nested stack, busy with every
    /// member, loses its oldest first while the member stacks keep theirs), so this is the
    /// latest of each stack's oldest event read. When it is older than the update's start,
    /// every pause of that update was read, and none can have been purged.
    pub oldest_read: Option<DateTime<Utc>>,
}

/// The members of the node group paused on a hook right now.
pub async fn paused_members(
    heat: &HeatClient,
    nodegroup: &StackRef,
) -> Result<PausedMembers, ApiError> {
    let mut events = Vec::new();
    newest_events_until(heat, nodegroup, |page| {
        events.extend_from_slice(page);
        false
    })
    .await?;
    Ok(PausedMembers {
        names: paused_from_newest_first(&events),
        oldest_read: reach_of_every_stack(&events),
    })
}

/// The latest, over the stacks the events come from (each event's own stack, from its
/// links), of each stack's oldest event.
fn reach_of_every_stack(events: &[StackEvent]) -> Option<DateTime<Utc>> {
    let mut oldest: HashMap<Option<&str>, DateTime<Utc>> = HashMap::new();
    for e in events {
        oldest
            .entry(e.stack.as_ref().map(|s| s.id.as_str()))
            .and_modify(|t| *t = (*t).min(e.time))
            .or_insert(e.time);
    }
    oldest.into_values().max()
}

/// Whether Heat paused or released any member of the node group on `hook` at or after
/// `since` (the update's start): the mark of an update driven through hooks, as caldera's
/// rollouts are, rather than a plain PATCH someone sent. Stops at the first event older
/// than `since`.
pub async fn hook_used_since(
    heat: &HeatClient,
    nodegroup: &StackRef,
    hook: &str,
    since: Option<DateTime<Utc>>,
) -> Result<bool, ApiError> {
    let mut used = false;
    newest_events_until(heat, nodegroup, |page| {
        for e in page {
            if since.is_some_and(|s| e.time < s) {
                return true;
            }
            if e.status_reason
                .as_deref()
                .is_some_and(|r| hook_event(r, Some(hook)).is_some())
            {
                used = true;
                return true;
            }
        }
        false
    })
    .await?;
    Ok(used)
}

/// One resource Heat holds on a hook right now, anywhere in a stack tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PendingHook {
    /// Resource names from the root stack down, `/`-joined: `kube_minions/3`.
    pub path: String,
    /// The stack that owns the resource: the one a signal to clear the hook goes to.
    pub owner: StackRef,
    pub resource: String,
    /// `pre-update`, `pre-create`, ...
    pub hook: String,
    /// When Heat paused it (the pause event's time); for an inferred hold, when its stack's
    /// update began (it was paused at or after that).
    pub since: DateTime<Utc>,
    pub evidence: HookEvidence,
}

/// How caldera knows a resource is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvidence {
    /// Its newest hook event, read, is a pause.
    Seen,
    /// No hook event of it is left to read: see the module doc for what stands in for it.
    InferredPurged,
}

impl PendingHook {
    /// `held on pre-update hook`, with the inference said when there is one.
    pub fn describe(&self) -> String {
        match self.evidence {
            HookEvidence::Seen => format!("held on {} hook", self.hook),
            HookEvidence::InferredPurged => format!(
                "held on {} hook (inferred: its pause event was purged)",
                self.hook
            ),
        }
    }
}

/// The hook type a pause reason names: `UPDATE paused until Hook pre-update is cleared`
/// → `pre-update`.
pub fn hook_type(reason: &str) -> Option<&str> {
    let rest = &reason[reason.find(PAUSED)? + PAUSED.len()..];
    rest.split_whitespace().next()
}

/// The pending hooks among `events` (newest first, any nested depth): for each resource of
/// each stack the newest hook event decides. `path_of` maps an owner stack id to the
/// resource path from the root down to it (empty for the root itself).
pub fn pending_from_newest_first(
    events: &[StackEvent],
    root: &StackRef,
    path_of: impl Fn(&str) -> Option<Vec<String>>,
) -> Vec<PendingHook> {
    let mut seen: HashSet<(String, &str)> = HashSet::new();
    let mut out = Vec::new();
    for e in events {
        let Some(reason) = e.status_reason.as_deref() else {
            continue;
        };
        let Some(paused) = wait_event(reason) else {
            continue;
        };
        let owner = e.stack.clone().unwrap_or_else(|| root.clone());
        if !seen.insert((owner.id.clone(), e.resource_name.as_str())) || !paused {
            continue;
        }
        let Some(hook) = hook_type(reason) else {
            continue;
        };
        let mut path = path_of(&owner.id).unwrap_or_else(|| vec![owner.name.clone()]);
        path.push(e.resource_name.clone());
        out.push(PendingHook {
            path: path.join("/"),
            owner,
            resource: e.resource_name.clone(),
            hook: hook.to_string(),
            since: e.time,
            evidence: HookEvidence::Seen,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path).then(a.hook.cmp(&b.hook)));
    out
}

/// Nesting read for a stack tree's hooks: a group's members (2) and what they nest (3).
pub const TREE_DEPTH: u32 = 3;

/// Every resource of `root`'s tree (down to [`TREE_DEPTH`]) paused on a hook now: one
/// resource listing (to name nested stacks by path) and the newest events, a few pages.
/// Only when a member looks held on pre-update with no event left to say so are its stack
/// and the environment read as well (see the module doc).
pub async fn pending_hooks(
    heat: &HeatClient,
    root: &StackRef,
) -> Result<Vec<PendingHook>, ApiError> {
    let query = crate::api::heat::ResourceQuery {
        nested_depth: Some(TREE_DEPTH),
        ..Default::default()
    };
    let mut events = Vec::new();
    let (resources, read) = futures::join!(
        heat.list_resources(root, &query),
        newest_events(heat, root, Some(TREE_DEPTH), |page| {
            events.extend_from_slice(page);
            false
        })
    );
    let window = EventWindow {
        exhausted: read?,
        oldest: events.last().map(|e| e.time),
    };
    let mut paths = StackPaths::new(root);
    let resources: Vec<_> = resources?.into_iter().map(|r| r.resource).collect();
    paths.learn(&resources);
    let mut pending = pending_from_newest_first(&events, root, |id| paths.path_of(id));
    let candidates = pre_update_candidates(root, &resources, &events, &paths);
    if !candidates.is_empty() {
        pending.extend(inferred_holds(heat, root, &candidates, &events, window).await?);
        pending.sort_by(|a, b| a.path.cmp(&b.path).then(a.hook.cmp(&b.hook)));
    }
    Ok(pending)
}

/// The holds of `root`'s tree that only the inference finds (their pause events purged),
/// given the tree's resources already listed (to [`TREE_DEPTH`], as the console's tree read
/// lists them): for the why-stuck assessment, whose events say the rest. Costs no call unless
/// a member looks held with no event to tell (no event is read yet, so the test is the
/// widest); then the newest events, the candidates' stacks and the environment, as
/// [`pending_hooks`] reads them.
pub async fn inferred_tree_holds(
    heat: &HeatClient,
    root: &StackRef,
    resources: &[StackResource],
) -> Result<Vec<PendingHook>, ApiError> {
    let mut paths = StackPaths::new(root);
    paths.learn(resources);
    // Events only remove candidates: none without them is none with them.
    if pre_update_candidates(root, resources, &[], &paths).is_empty() {
        return Ok(vec![]);
    }
    let mut events = Vec::new();
    let exhausted = newest_events(heat, root, Some(TREE_DEPTH), |page| {
        events.extend_from_slice(page);
        false
    })
    .await?;
    tree_holds_from_events(heat, root, resources, &events, exhausted).await
}

/// [`inferred_tree_holds`] from the tree's newest events already read (newest first, down to
/// [`TREE_DEPTH`]; `exhausted` when they reach the stack's first event): a reader that needs
/// the events anyway (why-stuck) does not read them twice.
pub async fn tree_holds_from_events(
    heat: &HeatClient,
    root: &StackRef,
    resources: &[StackResource],
    events: &[StackEvent],
    exhausted: bool,
) -> Result<Vec<PendingHook>, ApiError> {
    let mut paths = StackPaths::new(root);
    paths.learn(resources);
    let window = EventWindow {
        exhausted,
        oldest: events.last().map(|e| e.time),
    };
    let candidates = pre_update_candidates(root, resources, events, &paths);
    if candidates.is_empty() {
        return Ok(vec![]);
    }
    inferred_holds(heat, root, &candidates, events, window).await
}

/// The members of a node group held on a hook, as the nodes pane marks them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeldMembers {
    /// Names in the group (`3`) of those whose newest hook event is a pause
    /// ([`paused_members`]).
    pub seen: HashSet<String>,
    /// Paths from the root stack (`kube_minions/3`) of those inferred held, their pause
    /// events purged ([`pending_hooks`]).
    pub inferred: HashSet<String>,
    /// The caldera rollout whose marker the stack under update carries (its id): its hooks
    /// hold these members (the caller reads the marker, [`crate::drivers::rollout_plan::marker_in`]).
    pub rollout: Option<String>,
}

impl HeldMembers {
    /// Whether member `name` of the group at path `group` (`kube_minions`; empty when the
    /// root is the group's own stack) is held. `name` may carry the group already
    /// (`kube_minions/3`, in a stream over several groups).
    pub fn holds(&self, name: &str, group: &str) -> bool {
        self.hold(name, group).is_some()
    }

    /// How member `name` (as for [`HeldMembers::holds`]) is known to be held, if it is.
    pub fn hold(&self, name: &str, group: &str) -> Option<HoldSeen> {
        let path = match group {
            "" => name.to_string(),
            g if name.starts_with(&format!("{g}/")) => name.to_string(),
            g => format!("{g}/{name}"),
        };
        if self.seen.contains(name) {
            Some(HoldSeen::Event)
        } else if self.inferred.contains(&path) {
            Some(HoldSeen::Inferred)
        } else {
            None
        }
    }
}

/// How a hold is known: from its pause event, or inferred with that event purged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldSeen {
    Event,
    Inferred,
}

/// `seen` (the members whose newest hook event is a pause, [`paused_members`]) and, while
/// `root` (the stack the group belongs to, whose environment declares the hooks) runs an
/// update (`root_update_began`, from a stack read the caller makes anyway), the members
/// inferred held with their pause events purged (the tree's hook poll, [`pending_hooks`]).
/// Nothing more is read when no update runs, nor when the group's events read reach back
/// before the update began (then no pause of it can have been purged): the hook poll lists
/// the whole tree, which on a 1000-member group is the dearest read there is.
pub async fn with_inferred_members(
    heat: &HeatClient,
    root: &StackRef,
    root_update_began: Option<DateTime<Utc>>,
    paused: PausedMembers,
) -> Result<HeldMembers, ApiError> {
    let mut held = HeldMembers {
        seen: paused.names,
        inferred: HashSet::new(),
        rollout: None,
    };
    if may_have_purged_pauses(root_update_began, paused.oldest_read) {
        held.inferred = pending_hooks(heat, root)
            .await?
            .into_iter()
            .filter(|h| h.evidence == HookEvidence::InferredPurged)
            .map(|h| h.path)
            .collect();
    }
    Ok(held)
}

/// Whether a pause of the update begun at `began` may have been purged, the oldest event read
/// being `oldest_read`: no update, nothing to infer; events reaching back before its start,
/// every pause of it was read.
fn may_have_purged_pauses(
    began: Option<DateTime<Utc>>,
    oldest_read: Option<DateTime<Utc>>,
) -> bool {
    match (began, oldest_read) {
        (None, _) => false,
        (Some(began), Some(oldest)) => oldest >= began,
        (Some(_), None) => true,
    }
}

/// A member that shows what Heat leaves on one held on pre-update, with no hook event read.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Resource names from the root down, the member's own last.
    pub path: Vec<String>,
    pub owner: StackRef,
    pub resource: String,
    pub updated_at: DateTime<Utc>,
}

const HOOK_PRE_UPDATE: &str = "pre-update";
/// Stacks read to learn when their update began; more are left uninferred.
const MAX_OWNERS: usize = 16;

fn owner_of(r: &StackResource, root: &StackRef) -> StackRef {
    r.owner.clone().unwrap_or_else(|| root.clone())
}

/// Whether `owner`'s stack may be in an update, from the listing alone: a nested stack's
/// owning resource is `UPDATE_IN_PROGRESS` (its `updated_time`, the start of that resource's
/// update, returned as an early bound); the root has some resource in progress.
fn updating_owners(
    root: &StackRef,
    resources: &[StackResource],
) -> HashMap<String, Option<DateTime<Utc>>> {
    let mut out = HashMap::new();
    for r in resources {
        if r.status.action == "UPDATE" && r.status.is_in_progress() {
            if let Some(n) = &r.nested {
                out.insert(n.id.clone(), r.updated_at);
            }
            if owner_of(r, root).id == root.id {
                out.entry(root.id.clone()).or_insert(None);
            }
        }
    }
    out
}

/// Members that may be held on pre-update though no event says so (see the module doc):
/// in a stack that may be updating, `*_COMPLETE` from an earlier action, not touched since
/// their stack's update began (as far as the listing tells), with no hook event in `events`,
/// nothing they depend on in progress, and their stack's update start not among `events`.
/// Costs no call: an empty answer leaves the poll as cheap as without the inference.
pub fn pre_update_candidates(
    root: &StackRef,
    resources: &[StackResource],
    events: &[StackEvent],
    paths: &StackPaths,
) -> Vec<Candidate> {
    let updating = updating_owners(root, resources);
    if updating.is_empty() {
        return vec![];
    }
    let hooked: HashSet<(String, &str)> = events
        .iter()
        .filter(|e| {
            e.status_reason
                .as_deref()
                .is_some_and(|r| wait_event(r).is_some())
        })
        .map(|e| {
            let owner = e.stack.as_ref().map_or(root.id.clone(), |s| s.id.clone());
            (owner, e.resource_name.as_str())
        })
        .collect();
    // (stack, resource) pairs that something at work in the same stack is required by.
    let waiting: HashSet<(String, &str)> = resources
        .iter()
        .filter(|d| d.status.is_in_progress())
        .flat_map(|d| {
            let owner = owner_of(d, root).id;
            d.required_by
                .iter()
                .map(move |n| (owner.clone(), n.as_str()))
        })
        .collect();
    let mut start_read: HashMap<String, bool> = HashMap::new();
    let mut out = Vec::new();
    for r in resources {
        let owner = owner_of(r, root);
        let (Some(bound), Some(updated_at)) = (updating.get(&owner.id), r.updated_at) else {
            continue;
        };
        let read = *start_read
            .entry(owner.id.clone())
            .or_insert_with(|| start_was_read(events, root, &owner, *bound));
        if read {
            continue;
        }
        let settled =
            r.status.is_complete() && !matches!(r.status.action.as_str(), "INIT" | "DELETE");
        if !settled
            || bound.is_some_and(|b| updated_at >= b)
            || hooked.contains(&(owner.id.clone(), r.name.as_str()))
            || waiting.contains(&(owner.id.clone(), r.name.as_str()))
        {
            continue;
        }
        let Some(mut path) = paths.path_of(&owner.id) else {
            continue;
        };
        path.push(r.name.clone());
        out.push(Candidate {
            path,
            owner,
            resource: r.name.clone(),
            updated_at,
        });
    }
    out
}

/// Whether the events read reach back to the start of `owner`'s update, so a missing pause
/// event is no pause (and nothing more need be read): its own `UPDATE_IN_PROGRESS` (Heat
/// writes `Stack UPDATE started` when an update begins and purges oldest first, so once
/// read, everything since is there), or any event of it older than `bound` (its owning
/// resource's update start, at or before its own).
fn start_was_read(
    events: &[StackEvent],
    root: &StackRef,
    owner: &StackRef,
    bound: Option<DateTime<Utc>>,
) -> bool {
    events.iter().any(|e| {
        let of_owner = e.stack.as_ref().map_or(root.id.as_str(), |s| s.id.as_str()) == owner.id;
        let start = e.resource_name == owner.name
            && matches!(e.status.action.as_str(), "UPDATE" | "ROLLBACK")
            && e.status.is_in_progress();
        of_owner && (start || bound.is_some_and(|b| e.time < b))
    })
}

/// How far back the events read go: all of them (`exhausted`), or down to `oldest`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventWindow {
    pub exhausted: bool,
    pub oldest: Option<DateTime<Utc>>,
}

impl EventWindow {
    /// Whether `owner`'s events were purged after `began`: none of them read is older than
    /// `began`, though the reading went back that far (all read, or past `began`). When the
    /// events read reach back before `began`, a missing pause event is simply no pause.
    pub fn purged_since(
        &self,
        events: &[StackEvent],
        root: &StackRef,
        owner: &str,
        began: DateTime<Utc>,
    ) -> bool {
        let reaches_back = events.iter().any(|e| {
            e.time < began && e.stack.as_ref().map_or(root.id.as_str(), |s| s.id.as_str()) == owner
        });
        let read_far_enough = self.exhausted || self.oldest.is_some_and(|t| t < began);
        !reaches_back && read_far_enough
    }
}

/// The candidates still held by the rules once their stacks' update start is known
/// (`began`, for stacks in `UPDATE_IN_PROGRESS`) and matched by a declared pre-update hook.
pub fn infer_pre_update(
    candidates: &[Candidate],
    began: &HashMap<String, DateTime<Utc>>,
    purged: impl Fn(&str, DateTime<Utc>) -> bool,
    env: &EnvironmentHooks,
) -> Vec<PendingHook> {
    candidates
        .iter()
        .filter_map(|c| {
            let t = *began.get(&c.owner.id)?;
            let path: Vec<&str> = c.path.iter().map(String::as_str).collect();
            (c.updated_at < t && purged(&c.owner.id, t) && env.matches(&path, HOOK_PRE_UPDATE))
                .then(|| PendingHook {
                    path: c.path.join("/"),
                    owner: c.owner.clone(),
                    resource: c.resource.clone(),
                    hook: HOOK_PRE_UPDATE.to_string(),
                    since: t,
                    evidence: HookEvidence::InferredPurged,
                })
        })
        .collect()
}

/// Whether Heat runs `Resource.update` on a stack's members now (an update, or a rollback,
/// which updates them back and stops on the same hooks) and since when: `updated_time`,
/// which `Stack.converge_stack` sets when either begins.
pub fn update_began(stack: &StackSummary) -> Option<DateTime<Utc>> {
    let updating = matches!(stack.status.action.as_str(), "UPDATE" | "ROLLBACK");
    (updating && stack.status.is_in_progress())
        .then_some(stack.updated_at)
        .flatten()
}

/// Reads the candidates' stacks (when did their update begin?) and, if any candidate is
/// left in a window of purged events, the root's environment once.
async fn inferred_holds(
    heat: &HeatClient,
    root: &StackRef,
    candidates: &[Candidate],
    events: &[StackEvent],
    window: EventWindow,
) -> Result<Vec<PendingHook>, ApiError> {
    let mut owners: Vec<&StackRef> = Vec::new();
    for c in candidates {
        if owners.len() < MAX_OWNERS && !owners.iter().any(|o| o.id == c.owner.id) {
            owners.push(&c.owner);
        }
    }
    let shown = futures::future::join_all(owners.iter().map(|o| heat.get_stack(o, false))).await;
    let mut began = HashMap::new();
    for (owner, detail) in owners.iter().zip(shown) {
        if let Some(t) = update_began(&detail?.summary) {
            began.insert(owner.id.clone(), t);
        }
    }
    let purged = |owner: &str, t| window.purged_since(events, root, owner, t);
    let left = candidates.iter().any(|c| {
        began
            .get(&c.owner.id)
            .is_some_and(|&t| c.updated_at < t && purged(&c.owner.id, t))
    });
    if !left {
        return Ok(vec![]);
    }
    let env = heat.get_environment_hooks(root).await?;
    Ok(infer_pre_update(candidates, &began, purged, &env))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;
    use chrono::{TimeZone, Utc};

    fn ev(member: &str, secs: i64, reason: &str) -> StackEvent {
        StackEvent {
            id: format!("{member}-{secs}"),
            time: Utc
                .timestamp_opt(1_700_000_000 + secs, 0)
                .single()
                .expect("time"),
            resource_name: member.into(),
            logical_id: member.into(),
            physical_id: None,
            status: Status::parse("CREATE_COMPLETE"),
            status_reason: Some(reason.into()),
            stack: None,
            path: vec![],
        }
    }

    #[test]
    fn hook_event_reads_pauses_and_releases_of_one_hook_type() {
        let pause = "UPDATE paused until Hook pre-update is cleared";
        let clear = "Hook pre-update is cleared";
        assert_eq!(hook_event(pause, None), Some(true));
        assert_eq!(hook_event(clear, None), Some(false));
        assert_eq!(hook_event(pause, Some("pre-update")), Some(true));
        assert_eq!(hook_event(clear, Some("pre-update")), Some(false));
        assert_eq!(hook_event(pause, Some("pre-create")), None);
        assert_eq!(
            hook_event(
                "CREATE paused until Hook pre-create is cleared",
                Some("pre-update")
            ),
            None
        );
        assert_eq!(hook_event("state changed", None), None);
        // A wait that ended with its operation is no release, but it is the wait's end.
        assert_eq!(hook_event(WAIT_FAILED, None), None);
        assert_eq!(wait_event(WAIT_FAILED), Some(false));
        assert_eq!(wait_event(pause), Some(true));
        assert_eq!(wait_event(clear), Some(false));
        assert_eq!(wait_event("state changed"), None);
    }

    /// A member whose wait failed (its update cancelled) is no longer paused, for every
    /// reader of pauses.
    #[test]
    fn a_wait_that_failed_ends_the_pause() {
        let events = vec![
            ev("1", 40, WAIT_FAILED),
            ev("2", 35, "UPDATE paused until Hook pre-update is cleared"),
            ev("1", 30, "UPDATE paused until Hook pre-update is cleared"),
        ];
        let paused: Vec<String> = paused_from_newest_first(&events).into_iter().collect();
        assert_eq!(paused, ["2"]);
        let root = StackRef {
            name: "s".into(),
            id: "s".into(),
        };
        let pending = pending_from_newest_first(&events, &root, |_| Some(vec![]));
        let names: Vec<&str> = pending.iter().map(|p| p.resource.as_str()).collect();
        assert_eq!(names, ["2"]);
    }

    #[test]
    fn newest_hook_event_decides() {
        // Newest first, as the API is asked.
        let events = vec![
            ev("2", 30, "UPDATE paused until Hook pre-update is cleared"),
            ev("1", 25, "state changed"),
            ev("1", 20, "Hook pre-update is cleared"),
            ev("1", 10, "UPDATE paused until Hook pre-update is cleared"),
            ev("3", 5, "state changed"),
        ];
        let paused = paused_from_newest_first(&events);
        assert_eq!(paused, HashSet::from(["2".to_string()]));
    }

    #[test]
    fn pending_hooks_are_named_by_path_and_owner_from_the_newest_event() {
        let root = StackRef {
            name: "app".into(),
            id: "app-id".into(),
        };
        let nodes = StackRef {
            name: "app-nodes-x".into(),
            id: "nodes-id".into(),
        };
        let mut paused = ev("1", 30, "UPDATE paused until Hook pre-update is cleared");
        paused.stack = Some(nodes.clone());
        let mut older = ev("2", 20, "UPDATE paused until Hook pre-update is cleared");
        older.stack = Some(nodes.clone());
        let mut cleared = ev("2", 25, "Hook pre-update is cleared");
        cleared.stack = Some(nodes.clone());
        let top = ev("db", 10, "CREATE paused until Hook pre-create is cleared");
        let events = vec![paused, cleared, older, top];
        let pending = pending_from_newest_first(&events, &root, |id| match id {
            "nodes-id" => Some(vec!["nodes".to_string()]),
            "app-id" => Some(vec![]),
            _ => None,
        });
        let got: Vec<(&str, &str, &str)> = pending
            .iter()
            .map(|h| (h.path.as_str(), h.owner.id.as_str(), h.hook.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("db", "app-id", "pre-create"),
                ("nodes/1", "nodes-id", "pre-update")
            ]
        );
    }

    // ---- inferred holds (pause events purged) ----

    fn t(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + secs, 0)
            .single()
            .expect("time")
    }

    fn sref(id: &str) -> StackRef {
        StackRef {
            name: format!("{id}-name"),
            id: id.into(),
        }
    }

    fn res(name: &str, owner: &str, status: &str, updated: i64) -> StackResource {
        StackResource {
            name: name.into(),
            logical_id: name.into(),
            physical_id: None,
            resource_type: "OS::Heat::TestResource".into(),
            status: Status::parse(status),
            status_reason: Some("state changed".into()),
            updated_at: Some(t(updated)),
            owner: Some(sref(owner)),
            nested: None,
            parent_resource: None,
            required_by: vec![],
        }
    }

    /// `app` owns the group `nodes` (UPDATE_IN_PROGRESS since 100), whose stack `ng` holds
    /// members 0-3: 0 untouched since its create, 1 updating, 2 already updated, 3 untouched
    /// but with its pause event still readable.
    fn tree() -> (StackRef, Vec<StackResource>, StackPaths) {
        let root = sref("app");
        let mut nodes = res("nodes", "app", "UPDATE_IN_PROGRESS", 100);
        nodes.nested = Some(sref("ng"));
        let resources = vec![
            nodes,
            res("db", "app", "CREATE_COMPLETE", 5),
            res("0", "ng", "CREATE_COMPLETE", 10),
            res("1", "ng", "UPDATE_IN_PROGRESS", 110),
            res("2", "ng", "UPDATE_COMPLETE", 120),
            res("3", "ng", "CREATE_COMPLETE", 10),
        ];
        let mut paths = StackPaths::new(&root);
        paths.learn(&resources);
        (root, resources, paths)
    }

    fn ng_event(member: &str, secs: i64, reason: &str) -> StackEvent {
        let mut e = ev(member, secs, reason);
        e.stack = Some(sref("ng"));
        e
    }

    /// The events left after a purge: nothing of `ng` older than the update (began 101).
    fn purged_events() -> Vec<StackEvent> {
        vec![
            ng_event("2", 125, "state changed"),
            ng_event("3", 104, "UPDATE paused until Hook pre-update is cleared"),
            ng_event("1", 103, "state changed"),
        ]
    }

    fn env() -> EnvironmentHooks {
        serde_json::from_value(serde_json::json!({
            "resource_registry": {"resources": {"nodes": {"*": {"hooks": ["pre-update"]}}}}
        }))
        .expect("env")
    }

    fn began() -> HashMap<String, DateTime<Utc>> {
        HashMap::from([("ng".to_string(), t(101)), ("app".to_string(), t(99))])
    }

    fn infer(events: &[StackEvent], window: EventWindow, env: &EnvironmentHooks) -> Vec<String> {
        let (root, resources, paths) = tree();
        let candidates = pre_update_candidates(&root, &resources, events, &paths);
        infer_pre_update(
            &candidates,
            &began(),
            |owner, b| window.purged_since(events, &root, owner, b),
            env,
        )
        .into_iter()
        .map(|h| format!("{} {}", h.path, h.describe()))
        .collect()
    }

    const ALL_READ: EventWindow = EventWindow {
        exhausted: true,
        oldest: None,
    };

    #[test]
    fn an_untouched_member_whose_pause_was_purged_is_inferred_held() {
        let events = purged_events();
        assert_eq!(
            infer(&events, ALL_READ, &env()),
            ["nodes/0 held on pre-update hook (inferred: its pause event was purged)"]
        );
        // The seen pause of 3 is not doubled by an inference.
        let (root, _, _) = tree();
        let seen = pending_from_newest_first(&events, &root, |id| {
            (id == "ng").then(|| vec!["nodes".to_string()])
        });
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].describe(), "held on pre-update hook");
    }

    #[test]
    fn no_inference_when_the_events_reach_back_before_the_update() {
        // A complete window: the absence of a pause event of 0 is the truth.
        let mut events = purged_events();
        events.push(ng_event("0", 50, "state changed"));
        assert!(infer(&events, ALL_READ, &env()).is_empty());
        // The group stack's own start read: complete too, and no candidate costs a call.
        let mut events = purged_events();
        let mut start = ng_event("ng-name", 101, "Stack UPDATE started");
        start.status = Status::parse("UPDATE_IN_PROGRESS");
        events.push(start);
        assert!(infer(&events, ALL_READ, &env()).is_empty());
        let (root, resources, paths) = tree();
        let candidates = pre_update_candidates(&root, &resources, &events, &paths);
        assert!(candidates.iter().all(|c| c.owner.id != "ng"));
    }

    #[test]
    fn no_inference_when_caldera_read_too_few_events_to_know() {
        // Paging stopped before the update's start: the pause may be in the unread pages.
        let events = purged_events();
        let cut = EventWindow {
            exhausted: false,
            oldest: Some(t(103)),
        };
        assert!(infer(&events, cut, &env()).is_empty());
        let past = EventWindow {
            exhausted: false,
            oldest: Some(t(90)),
        };
        assert_eq!(infer(&events, past, &env()).len(), 1);
    }

    #[test]
    fn a_member_already_updated_is_not_held() {
        let (root, resources, paths) = tree();
        let candidates = pre_update_candidates(&root, &resources, &purged_events(), &paths);
        let names: Vec<&str> = candidates.iter().map(|c| c.resource.as_str()).collect();
        // 1 is at work, 2 updated after the group began, 3 has its pause event; db sits at
        // the root, which no resource of says is in progress but `nodes`, so it stays.
        assert_eq!(names, ["db", "0"]);
        // Updated after its stack's update began (the listing's bound missed it): not held.
        let mut late = candidates[1].clone();
        late.updated_at = t(102);
        let held = infer_pre_update(&[late], &began(), |_, _| true, &env());
        assert!(held.is_empty());
    }

    #[test]
    fn no_inference_without_a_matching_hook_or_an_update_in_progress() {
        let events = purged_events();
        let other: EnvironmentHooks = serde_json::from_value(serde_json::json!({
            "resource_registry": {"resources": {"nodes": {"1*": {"hooks": "pre-update"}, "*": {"hooks": "pre-delete"}}}}
        }))
        .expect("env");
        assert!(infer(&events, ALL_READ, &other).is_empty());
        // Nothing in progress: no candidate, so nothing more is read.
        let root = sref("app");
        let settled = vec![res("0", "app", "CREATE_COMPLETE", 10)];
        let paths = StackPaths::new(&root);
        assert!(pre_update_candidates(&root, &settled, &[], &paths).is_empty());
    }

    #[test]
    fn a_member_waiting_on_a_dependency_at_work_is_not_a_candidate() {
        let (root, mut resources, paths) = tree();
        let mut port = res("port", "ng", "UPDATE_IN_PROGRESS", 106);
        port.required_by = vec!["0".into()];
        resources.push(port);
        let candidates = pre_update_candidates(&root, &resources, &purged_events(), &paths);
        assert!(candidates.iter().all(|c| c.resource != "0"));
    }

    #[test]
    fn held_members_match_seen_names_and_inferred_paths() {
        let held = HeldMembers {
            seen: HashSet::from(["4".to_string()]),
            inferred: HashSet::from(["kube_minions/3".to_string(), "7".to_string()]),
            rollout: None,
        };
        assert!(held.holds("4", "kube_minions"));
        assert!(held.holds("3", "kube_minions"));
        assert!(held.holds("kube_minions/3", "kube_minions"));
        assert!(!held.holds("3", "kube_masters"));
        assert!(!held.holds("3", ""));
        // The group's own stack asked about: the path is the name.
        assert!(held.holds("7", ""));
        assert!(!held.holds("7", "kube_minions"));
    }

    #[test]
    fn an_update_or_a_rollback_in_progress_gives_its_start() {
        let summary = |status: &str, updated: Option<i64>| StackSummary {
            stack: sref("ng"),
            status: Status::parse(status),
            status_reason: None,
            created_at: Some(t(0)),
            updated_at: updated.map(t),
            parent: None,
        };
        assert_eq!(
            update_began(&summary("UPDATE_IN_PROGRESS", Some(101))),
            Some(t(101))
        );
        assert_eq!(
            update_began(&summary("ROLLBACK_IN_PROGRESS", Some(130))),
            Some(t(130))
        );
        assert_eq!(update_began(&summary("UPDATE_COMPLETE", Some(101))), None);
        assert_eq!(update_began(&summary("CREATE_IN_PROGRESS", None)), None);
        assert_eq!(
            update_began(&summary("DELETE_IN_PROGRESS", Some(101))),
            None
        );
    }
    #[test]
    fn the_tree_is_polled_for_purged_pauses_only_when_the_events_miss_the_updates_start() {
        let t = |s: i64| DateTime::<Utc>::from_timestamp(1_700_000_000 + s, 0);
        assert!(!may_have_purged_pauses(None, t(0)), "no update");
        assert!(
            !may_have_purged_pauses(t(10), t(5)),
            "events reach before the start"
        );
        assert!(
            may_have_purged_pauses(t(10), t(10)),
            "the oldest is the start itself"
        );
        assert!(may_have_purged_pauses(t(10), t(60)), "older events purged");
        assert!(may_have_purged_pauses(t(10), None), "no event read");
    }
    #[test]
    fn each_stack_reaches_back_on_its_own() {
        // The group's stack lost its oldest events (it holds from 100 s on); a member stack
        // still has its create at 5 s: the group's 100 s is how far back the read reaches.
        let mut group = ev("3", 100, "state changed");
        group.stack = Some(sref("rg"));
        let mut member = ev("server", 5, "state changed");
        member.stack = Some(sref("member-3"));
        let mut newer = ev("4", 300, "state changed");
        newer.stack = Some(sref("rg"));
        let reach = reach_of_every_stack(&[newer.clone(), group.clone(), member]);
        assert_eq!(reach, Some(group.time));
        assert_eq!(reach_of_every_stack(&[]), None);
    }
}
