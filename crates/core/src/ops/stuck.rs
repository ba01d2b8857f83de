//! Why a stack is stuck: stalled work, failed work, and work Heat holds on purpose.
//!
//! A Heat stack in `UPDATE_IN_PROGRESS` is only as busy as its deepest resources. This module
//! reads the resource tree (every resource with its path, `nodes > 17 > server`) and the
//! stack's events, and tells three things apart:
//!
//! - **failed**: a resource in `*_FAILED`; the stack goes on only if rollback or retry says so.
//! - **held on a hook**: Heat paused a member before acting on it (`UPDATE paused until Hook
//!   pre-update is cleared`, see [`super::hooks`]). Nothing is wrong; someone (a rollout) must
//!   clear the hook. These are counted and named, never reported as stuck work. A pause
//!   whose event Heat purged is known only by inference ([`super::hooks::inferred_tree_holds`]
//!   says how); such holds are given to [`assess_with_inferred`] and said as inferred.
//! - **in progress**: compared with how long its siblings *took* for the same action. Heat
//!   writes `UPDATE_IN_PROGRESS` then `UPDATE_COMPLETE` per resource; the gap between the two is
//!   what a member of this group usually needs. A server 20 minutes in progress whose siblings
//!   took 36-50 s is stalled; one 40 s in is merely busy.
//!
//! When the deepest cause is an `OS::Nova::Server`, its Nova record (status and fault) is the
//! next thing an operator reads; [`nova_summary`] says it in one line.

use super::hooks::{hook_event, wait_event, PendingHook};
use super::node_tree::is_nova_server_type;
use crate::model::{ServerDetail, StackEvent, StackResource};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};

/// One resource of the tree, with its path from the root (`nodes > 17 > server`).
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub path: &'a str,
    pub resource: &'a StackResource,
}

/// How long siblings took for one action, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Durations {
    pub count: usize,
    pub min: i64,
    pub max: i64,
    pub median: i64,
}

impl Durations {
    fn of(mut secs: Vec<i64>) -> Option<Durations> {
        secs.sort_unstable();
        Some(Durations {
            count: secs.len(),
            min: *secs.first()?,
            max: *secs.last()?,
            median: median(&secs),
        })
    }
}

/// The middle of sorted `secs`; of an even count, the mean of the two middle ones (the
/// median of 40 s and 50 s is 45 s, not the slower of the two).
fn median(secs: &[i64]) -> i64 {
    let mid = secs.len() / 2;
    match (
        secs.len() % 2,
        secs.get(mid),
        mid.checked_sub(1).and_then(|m| secs.get(m)),
    ) {
        (0, Some(hi), Some(lo)) => (lo + hi) / 2,
        (_, Some(m), _) => *m,
        _ => 0,
    }
}

/// A resource that explains why the stack is not done.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// Index of the resource in the entries.
    pub index: usize,
    /// The entry whose siblings were compared: the resource itself, or its parent when the
    /// resource has no sibling of its type that finished (a member's server is compared
    /// member to member).
    pub compared: usize,
    /// Since when it has been in its current state (the resource's `updated_at`).
    pub since: Option<DateTime<Utc>>,
    /// How long the compared entry's siblings took for the same action, from events.
    pub siblings: Option<Durations>,
    /// The Nova server to ask for a fault, when the cause is one.
    pub server_id: Option<String>,
}

impl Cause {
    /// Whether the work has run past its siblings' pace at `now` ([`is_stalled`]).
    pub fn is_stalled_at(&self, now: DateTime<Utc>) -> bool {
        let elapsed = self.since.map_or(0, |t| (now - t).num_seconds());
        is_stalled(elapsed, self.siblings.as_ref())
    }

    /// What the pace is measured against: `; siblings took 36-50 s (median 43 s)`, `;
    /// siblings of 3 took …` when a parent was compared (`compared_name` its name), or `; no
    /// sibling finished to compare`.
    pub fn siblings_phrase(&self, compared_name: &str) -> String {
        match &self.siblings {
            Some(d) if self.compared == self.index => {
                format!("; siblings took {}", describe_durations(d))
            }
            Some(d) => format!(
                "; siblings of {compared_name} took {}",
                describe_durations(d)
            ),
            None => "; no sibling finished to compare".to_string(),
        }
    }
}

/// Members held on one hook in one stack.
#[derive(Debug, Clone, PartialEq)]
pub struct HookHold {
    /// `pre-update`, `pre-create`...
    pub hook: String,
    /// The path of the stack's owning resource (`nodes`), empty at the root.
    pub parent: String,
    /// Indices of the held members, in tree order.
    pub members: Vec<usize>,
    /// The earliest pause among them (for an inferred hold, its stack's update start).
    pub since: Option<DateTime<Utc>>,
    /// How many of `members` are held by inference: no event says so any more (Heat purged
    /// their pause events), what Heat leaves of them and the environment's hooks do.
    pub inferred: usize,
}

/// Held members named in a hold's line; the rest are counted.
pub const HOLD_NAMES_SHOWN: usize = 6;

impl HookHold {
    /// ` since 12:01:07 (20m)`, `span` the caller's words for a number of seconds; empty
    /// when the pause's time is unknown.
    pub fn since_phrase(&self, now: DateTime<Utc>, span: impl Fn(i64) -> String) -> String {
        self.since
            .map(|t| {
                format!(
                    " since {} ({})",
                    t.format("%H:%M:%S"),
                    span((now - t).num_seconds())
                )
            })
            .unwrap_or_default()
    }

    /// The hold in one line, `names` its members' names in order and `since` how the caller
    /// tells the time (` since 12:01:07 (20m)`, or empty): `3 members of nodes held on
    /// pre-update hook (2 inferred: their pause events were purged) since …: 0, 1, 2`.
    pub fn describe(&self, names: &[&str], since: &str) -> String {
        let mut named = names
            .iter()
            .take(HOLD_NAMES_SHOWN)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > HOLD_NAMES_SHOWN {
            named.push_str(&format!(" +{}", names.len() - HOLD_NAMES_SHOWN));
        }
        let noun = if names.len() == 1 {
            "member"
        } else {
            "members"
        };
        let parent = if self.parent.is_empty() {
            String::new()
        } else {
            format!(" of {}", self.parent)
        };
        let inferred = match self.inferred {
            0 => String::new(),
            1 => " (1 inferred: its pause event was purged)".to_string(),
            n => format!(" ({n} inferred: their pause events were purged)"),
        };
        format!(
            "{} {noun}{parent} held on {} hook{inferred}{since}: {named}",
            names.len(),
            self.hook
        )
    }
}

/// The why-stuck verdict of a tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assessment {
    /// Failed first, then in progress; oldest first within each.
    pub causes: Vec<Cause>,
    /// Grouped by parent and hook, largest group first.
    pub holds: Vec<HookHold>,
    /// Hook name by entry index, for the tree's marker.
    pub held: HashMap<usize, String>,
}

/// The hook named in a pause reason: `UPDATE paused until Hook pre-update is cleared` →
/// `pre-update`.
fn hook_name(reason: &str) -> String {
    reason
        .split("Hook ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("a")
        .to_string()
}

/// The event's resource path, as the tree spells it. A nested stack's own events are skipped:
/// the resource that owns the stack reports the same action in its parent.
fn event_path(e: &StackEvent) -> Option<String> {
    (!e.is_stack_event()).then(|| e.display_path())
}

/// Per path, the newest hook event: `Some((hook, since))` when it is a pause. `events` are
/// oldest first.
fn hook_pauses(events: &[StackEvent]) -> HashMap<String, Option<(String, DateTime<Utc>)>> {
    let mut latest = HashMap::new();
    for e in events {
        let (Some(path), Some(reason)) = (event_path(e), e.status_reason.as_deref()) else {
            continue;
        };
        match wait_event(reason) {
            Some(true) => latest.insert(path, Some((hook_name(reason), e.time))),
            Some(false) => latest.insert(path, None),
            None => None,
        };
    }
    latest
}

/// Per path and action, how long the newest `X_IN_PROGRESS` → `X_COMPLETE` took, seconds.
/// `events` are oldest first. Hook events are neither: Heat writes a pause and a release
/// with the member's *old* status (`CREATE_COMPLETE … paused until Hook`), and the work
/// starts with the `UPDATE_IN_PROGRESS` after the release, so a hold is not counted as work.
pub fn action_durations(events: &[StackEvent]) -> HashMap<(String, String), i64> {
    let mut started: HashMap<(String, String), DateTime<Utc>> = HashMap::new();
    let mut took = HashMap::new();
    for e in events {
        let Some(path) = event_path(e) else {
            continue;
        };
        let reason = e.status_reason.as_deref().unwrap_or("");
        if wait_event(reason).is_some() {
            continue;
        }
        let key = (path, e.status.action.clone());
        if e.status.is_in_progress() {
            started.insert(key, e.time);
        } else if e.status.is_complete() {
            if let Some(t0) = started.remove(&key) {
                took.insert(key, (e.time - t0).num_seconds().max(0));
            }
        }
    }
    took
}

fn owner_id(r: &StackResource) -> &str {
    r.owner.as_ref().map(|o| o.id.as_str()).unwrap_or("")
}

fn parent_path(path: &str) -> Option<&str> {
    path.rsplit_once(" > ").map(|(p, _)| p)
}

/// A hold of one entry: the hook, since when, and whether it is inferred.
type Held = (String, Option<DateTime<Utc>>, bool);

/// Which entries Heat holds on a hook, by index: from the newest hook event of each path,
/// else from the resource's own reason, else from `inferred` (matched by owning stack and
/// name), when events do not say. An event newer than the inference (a release) wins.
fn held_entries(
    entries: &[Entry],
    events: &[StackEvent],
    inferred: &[PendingHook],
) -> HashMap<usize, Held> {
    let pauses = hook_pauses(events);
    let inferred_hook = |r: &StackResource| {
        inferred
            .iter()
            .find(|h| h.resource == r.name && h.owner.id == owner_id(r))
            .map(|h| (h.hook.clone(), Some(h.since), true))
    };
    let mut held = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if e.resource.status.is_failed() {
            continue;
        }
        let from_reason = e
            .resource
            .status_reason
            .as_deref()
            .filter(|r| hook_event(r, None) == Some(true))
            .map(|r| (hook_name(r), e.resource.updated_at, false));
        let hold = match pauses.get(e.path) {
            Some(Some((hook, t))) => Some((hook.clone(), Some(*t), false)),
            Some(None) => None,
            None => from_reason.or_else(|| inferred_hook(e.resource)),
        };
        if let Some(h) = hold {
            held.insert(i, h);
        }
    }
    held
}

/// Whether an ancestor of `path` is held: a held member's own resources wait with it (some
/// clouds copy the pause into their reasons too).
fn has_held_ancestor(path: &str, held: &HashSet<&str>) -> bool {
    let mut p = path;
    while let Some(parent) = parent_path(p) {
        if held.contains(parent) {
            return true;
        }
        p = parent;
    }
    false
}

fn group_holds(entries: &[Entry], held: &HashMap<usize, Held>) -> Vec<HookHold> {
    let mut groups: Vec<HookHold> = Vec::new();
    let mut order: Vec<usize> = held.keys().copied().collect();
    order.sort_unstable();
    for i in order {
        let (hook, since, inferred) = &held[&i];
        let inferred = usize::from(*inferred);
        let parent = parent_path(entries[i].path).unwrap_or("").to_string();
        match groups
            .iter_mut()
            .find(|g| &g.hook == hook && g.parent == parent)
        {
            Some(g) => {
                g.members.push(i);
                g.inferred += inferred;
                g.since = match (g.since, *since) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            None => groups.push(HookHold {
                hook: hook.clone(),
                parent,
                members: vec![i],
                since: *since,
                inferred,
            }),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.members.len()));
    groups
}

/// How long the siblings of entry `i` (same stack, same type) took for `action`.
fn sibling_durations(
    entries: &[Entry],
    i: usize,
    action: &str,
    took: &HashMap<(String, String), i64>,
) -> Option<Durations> {
    let me = entries[i].resource;
    let secs: Vec<i64> = entries
        .iter()
        .enumerate()
        .filter(|(j, e)| {
            *j != i
                && owner_id(e.resource) == owner_id(me)
                && e.resource.resource_type == me.resource_type
        })
        .filter_map(|(_, e)| took.get(&(e.path.to_string(), action.to_string())).copied())
        .collect();
    Durations::of(secs)
}

/// Assess a tree: `entries` in tree order, `events` of the stack (nested), oldest first.
pub fn assess(entries: &[Entry], events: &[StackEvent]) -> Assessment {
    assess_with_inferred(entries, events, &[])
}

/// [`assess`], with the holds known only by inference (pause events purged; see
/// [`super::hooks::inferred_tree_holds`]) counted as held, said as inferred, and so never
/// reported as stalled work.
pub fn assess_with_inferred(
    entries: &[Entry],
    events: &[StackEvent],
    inferred: &[PendingHook],
) -> Assessment {
    let mut held = held_entries(entries, events, inferred);
    let held_paths: HashSet<&str> = held.keys().map(|&i| entries[i].path).collect();
    // Waiting with a held ancestor: neither a hold of its own nor a cause.
    let waiting: HashSet<usize> = (0..entries.len())
        .filter(|&i| has_held_ancestor(entries[i].path, &held_paths))
        .collect();
    held.retain(|i, _| !waiting.contains(i));
    let by_path: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.path, i))
        .collect();
    // Stacks with work under way (or held): their owning resource is not the deepest cause.
    let busy: HashSet<&str> = entries
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            held.contains_key(i)
                || e.resource.status.is_in_progress()
                || e.resource.status.is_failed()
        })
        .map(|(_, e)| owner_id(e.resource))
        .collect();
    let took = action_durations(events);
    let mut causes: Vec<Cause> = entries
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            let r = e.resource;
            !held.contains_key(i)
                && !waiting.contains(i)
                && (r.status.is_in_progress() || r.status.is_failed())
                && !r
                    .nested
                    .as_ref()
                    .is_some_and(|n| busy.contains(n.id.as_str()))
        })
        .map(|(i, e)| cause(entries, i, e, &by_path, &took))
        .collect();
    causes.sort_by_key(|c| (!entries[c.index].resource.status.is_failed(), c.since));
    let holds = group_holds(entries, &held);
    Assessment {
        causes,
        holds,
        held: held.into_iter().map(|(i, (h, _, _))| (i, h)).collect(),
    }
}

fn cause(
    entries: &[Entry],
    i: usize,
    e: &Entry,
    by_path: &HashMap<&str, usize>,
    took: &HashMap<(String, String), i64>,
) -> Cause {
    let r = e.resource;
    let action = r.status.action.as_str();
    let mut compared = i;
    let mut siblings = sibling_durations(entries, i, action, took);
    if siblings.is_none() {
        // No sibling of its kind finished: compare the member it belongs to with its peers.
        if let Some(&p) = parent_path(e.path).and_then(|p| by_path.get(p)) {
            if let Some(d) = sibling_durations(entries, p, action, took) {
                compared = p;
                siblings = Some(d);
            }
        }
    }
    Cause {
        index: i,
        compared,
        since: r.updated_at,
        siblings,
        server_id: is_nova_server_type(&r.resource_type)
            .then(|| r.physical_id.clone())
            .flatten()
            .filter(|id| !id.is_empty()),
    }
}

/// Whether work `elapsed` seconds in progress has stalled, given how long its siblings took:
/// past three times the slowest of them, and past a minute (a scheduler's hiccup is not a
/// stall). Without siblings to compare with, nothing can be said.
pub fn is_stalled(elapsed: i64, siblings: Option<&Durations>) -> bool {
    siblings.is_some_and(|d| elapsed > 60 && elapsed > 3 * d.max)
}

/// `36-50 s (median 42 s)` or `42 s` for one sibling.
pub fn describe_durations(d: &Durations) -> String {
    if d.min == d.max {
        format!("{} s", d.median)
    } else {
        format!("{}-{} s (median {} s)", d.min, d.max, d.median)
    }
}

/// Nova's word on a server, one line: `Nova ERROR: No valid host was found (500)`; `None`
/// when the server is fine (ACTIVE without fault) or Nova said nothing useful.
pub fn nova_summary(s: &ServerDetail) -> Option<String> {
    let task = s
        .task_state
        .as_deref()
        .map(|t| format!(" task {t}"))
        .unwrap_or_default();
    match &s.fault {
        Some(f) => Some(format!(
            "Nova {}{task}: {}{}",
            s.status,
            f.message.lines().next().unwrap_or(""),
            f.code.map(|c| format!(" ({c})")).unwrap_or_default()
        )),
        None if s.status != "ACTIVE" || !task.is_empty() => {
            Some(format!("Nova {}{task}", s.status))
        }
        None => None,
    }
}

#[cfg(test)]
#[path = "stuck_tests.rs"]
mod tests;
