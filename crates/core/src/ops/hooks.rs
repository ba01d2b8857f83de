//! Which members are paused on a Heat hook right now.
//!
//! Heat shows a pause only in events (measured on Heat 27: a paused member's resource keeps
//! its status and reason); the pause reads `UPDATE paused until Hook pre-update is cleared`
//! and the release `Hook pre-update is cleared`. The newest hook event of each member says
//! whether it is paused, so the group's events are read newest first, a few pages at most.
//!
//! Limit: a pause whose event Heat has purged (it keeps `max_events_per_stack` events per
//! stack, 1000 by default, dropping the oldest) is not seen. Heat's API keeps no other trace
//! of it: `Resource._break_if_required` (heat/engine/resource.py) stores the hook in the
//! resource's private data (`trigger_hook` -> `data_set(hook, "True")`, shown by no API) and
//! writes the event with the resource's *current* action and status, leaving its status and
//! `resource_status_reason` as they were. heatclient's `hook-poll` reads events the same way.

use crate::api::heat::{EventQuery, HeatClient, SortDir};
use crate::api::ApiError;
use crate::model::{StackEvent, StackRef};
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

/// Members (resource names in the group) whose newest hook event is a pause. `events` must be
/// newest first.
pub fn paused_from_newest_first(events: &[StackEvent]) -> HashSet<String> {
    let mut latest: HashMap<&str, bool> = HashMap::new();
    for e in events {
        let Some(reason) = e.status_reason.as_deref() else {
            continue;
        };
        if let Some(paused) = hook_event(reason, None) {
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
    newest_events(heat, nodegroup, Some(1), page_done).await
}

/// [`newest_events_until`] for any stack, down to `nested_depth`.
async fn newest_events(
    heat: &HeatClient,
    stack: &StackRef,
    nested_depth: Option<u32>,
    mut page_done: impl FnMut(&[StackEvent]) -> bool,
) -> Result<(), ApiError> {
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
        if page_done(&page) || page.len() < PAGE as usize {
            break;
        }
        marker = page.last().map(|e| e.id.clone());
    }
    Ok(())
}

/// The members of the node group paused on a hook right now.
pub async fn paused_members(
    heat: &HeatClient,
    nodegroup: &StackRef,
) -> Result<HashSet<String>, ApiError> {
    let mut events = Vec::new();
    newest_events_until(heat, nodegroup, |page| {
        events.extend_from_slice(page);
        false
    })
    .await?;
    Ok(paused_from_newest_first(&events))
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
    /// When Heat paused it (the pause event's time).
    pub since: DateTime<Utc>,
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
        let Some(paused) = hook_event(reason, None) else {
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
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path).then(a.hook.cmp(&b.hook)));
    out
}

/// Nesting read for a stack tree's hooks: a group's members (2) and what they nest (3).
pub const TREE_DEPTH: u32 = 3;

/// Every resource of `root`'s tree (down to [`TREE_DEPTH`]) paused on a hook now: one
/// resource listing (to name nested stacks by path) and the newest events, a few pages.
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
    read?;
    let mut paths = crate::ops::stack_paths::StackPaths::new(root);
    let resources: Vec<_> = resources?.into_iter().map(|r| r.resource).collect();
    paths.learn(&resources);
    Ok(pending_from_newest_first(&events, root, |id| {
        paths.path_of(id)
    }))
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
}
