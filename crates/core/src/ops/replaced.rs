//! A member Heat is replacing, told from the one it replaces by Heat's events.
//!
//! Heat (convergence) replaces a resource with a new one of the same name: a new database row
//! (`replaces` the old one) is created, then the old one is deleted in the traversal's
//! cleanup, and its `DELETE_COMPLETE` row is purged only when the stack's whole update ends
//! (`Stack.purge_db`, heat/engine/stack.py). The resource listing is a dict by name over both
//! rows (`resource_get_all_by_stack`, heat/db/api.py): which row it gives is the database's
//! order. On PostgreSQL it is often the old one (measured on Heat 27 with a real Nova): first
//! with its old status and the reason `… requires replacement.`, then `DELETE_IN_PROGRESS`,
//! then `DELETE_COMPLETE` until the update ends. Shown as listed, a rolling replacement of a
//! group reads as deleted nodes on their old servers until its last member is done.
//!
//! The events tell the two rows apart by physical id. Newest first, the events of that name
//! read: the old row's delete (`DELETE_*`, its physical id), then the replacement's life
//! (`CREATE_*`, `UPDATE_*`, another physical id or none yet), then the old row's own life
//! before. The replacement's newest event stands for the member; when the old row's own life
//! comes first (a member a scale down removes, or one whose replacement has not begun), the
//! listing stands.

use crate::api::heat::HeatClient;
use crate::api::ApiError;
use crate::model::{StackEvent, StackRef, Status};

/// Heat's reason on a resource its update replaces (`UpdateReplace`'s message ends so).
const REPLACEMENT_REASON: &str = "requires replacement.";

/// Whether a listed member is, or may be, the old half of a replacement: being (or done
/// being) deleted, or marked for replacement.
pub fn may_be_replaced(status: &Status, reason: Option<&str>) -> bool {
    status.action == "DELETE" || reason.is_some_and(|r| r.trim_end().ends_with(REPLACEMENT_REASON))
}

/// Whether a member listed as being created (`CREATE_IN_PROGRESS`) may be a replacement, from
/// its group resource's status: Heat replaces members only in an update of their group (or
/// that update's rollback, an update back to the old definition). While the group is being
/// created every member being created is one it adds, and no event needs reading: a
/// 1000-node cluster's first create lists a thousand such members on every refresh.
pub fn group_may_replace(group: &Status) -> bool {
    matches!(group.action.as_str(), "UPDATE" | "ROLLBACK")
}

/// What the replacement of a member looks like now, from its newest event.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    pub status: Status,
    pub reason: Option<String>,
    pub time: chrono::DateTime<chrono::Utc>,
    /// The new resource's physical id (a new server's id); `None` until Heat has one.
    pub physical_id: Option<String>,
}

/// The replacement of the member `name` whose listed row has the physical id `old`, from the
/// events of its stack, newest first (see the module doc); `None` when the events show no
/// replacement after the old row's own life.
pub fn replacement_in(events: &[StackEvent], name: &str, old: Option<&str>) -> Option<Replacement> {
    let is_old = |e: &StackEvent| old.is_some() && e.physical_id.as_deref() == old;
    for e in events.iter().filter(|e| e.resource_name == name) {
        if is_old(e) {
            if may_be_replaced(&e.status, e.status_reason.as_deref()) {
                continue;
            }
            return None;
        }
        // A hook's pause and release name the member as it was: not a replacement's event.
        let reason = e.status_reason.as_deref().unwrap_or("");
        if super::hooks::wait_event(reason).is_some() {
            return None;
        }
        return Some(Replacement {
            status: e.status.clone(),
            reason: e.status_reason.clone(),
            time: e.time,
            physical_id: e.physical_id.clone().filter(|p| !p.is_empty()),
        });
    }
    None
}

/// Whether the listed row of `name` being created (`CREATE_IN_PROGRESS`, physical id `listed`
/// or none yet) is a replacement: the listing may give the new row rather than the old one.
/// Newest first, past the listed row's own creation, the next event is an older row's: a
/// replacement is made while the row it replaces still lives (Heat deletes the old one only
/// after), so any event but `DELETE_COMPLETE` there means one; a `DELETE_COMPLETE` (a name a
/// scale down removed and a scale up reuses) or no older event means a member being added.
pub fn is_a_replacement(events: &[StackEvent], name: &str, listed: Option<&str>) -> bool {
    let own_creation = |e: &StackEvent| {
        e.status.action == "CREATE"
            && e.physical_id
                .as_deref()
                .is_none_or(|p| p.is_empty() || Some(p) == listed)
    };
    events
        .iter()
        .filter(|e| e.resource_name == name)
        .find(|e| !own_creation(e))
        .is_some_and(|e| e.status.raw != "DELETE_COMPLETE")
}

/// The newest events of a group's own stack (its members' events, not deeper): enough for
/// the replacements under way (a few pages at most, as the hook reading takes them).
pub async fn group_events(
    heat: &HeatClient,
    stack: &StackRef,
) -> Result<Vec<StackEvent>, ApiError> {
    let mut events = Vec::new();
    super::hooks::newest_events(heat, stack, None, |page| {
        events.extend_from_slice(page);
        false
    })
    .await?;
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    /// Only an update of the group, or its rollback, can make a replacement.
    #[test]
    fn only_an_update_of_the_group_or_its_rollback_replaces_members() {
        for (group, may) in [
            ("CREATE_IN_PROGRESS", false),
            ("UPDATE_IN_PROGRESS", true),
            ("ROLLBACK_IN_PROGRESS", true),
            ("CHECK_IN_PROGRESS", false),
            ("INIT_COMPLETE", false),
        ] {
            assert_eq!(group_may_replace(&Status::parse(group)), may, "{group}");
        }
    }

    fn ev(name: &str, secs: i64, status: &str, physical: Option<&str>, reason: &str) -> StackEvent {
        StackEvent {
            id: format!("{name}-{secs}"),
            time: Utc
                .timestamp_opt(1_700_000_000 + secs, 0)
                .single()
                .expect("time"),
            resource_name: name.into(),
            logical_id: name.into(),
            physical_id: physical.map(str::to_string),
            status: Status::parse(status),
            status_reason: Some(reason.into()),
            stack: None,
            path: vec![],
        }
    }

    /// The old server deleted (or being deleted) after its replacement was made: the
    /// replacement's newest event stands for the member; before the old row's delete, the
    /// replacement being created stands too.
    #[test]
    fn the_replacements_newest_event_stands_for_the_member() {
        let mut events = vec![
            ev("0", 50, "DELETE_COMPLETE", Some("old"), "state changed"),
            ev("0", 45, "DELETE_IN_PROGRESS", Some("old"), "state changed"),
            ev("1", 44, "UPDATE_COMPLETE", Some("s1"), "state changed"),
            ev("0", 40, "CREATE_COMPLETE", Some("new"), "state changed"),
            ev("0", 30, "CREATE_IN_PROGRESS", None, "state changed"),
            ev(
                "0",
                20,
                "CREATE_COMPLETE",
                Some("old"),
                "Hook pre-update is cleared",
            ),
            ev("0", 10, "CREATE_COMPLETE", Some("old"), "state changed"),
        ];
        let r = replacement_in(&events, "0", Some("old")).expect("replaced");
        assert_eq!(r.status.raw, "CREATE_COMPLETE");
        assert_eq!(r.physical_id.as_deref(), Some("new"));
        // Earlier: the replacement still being created, no server id yet.
        events.drain(..4);
        let r = replacement_in(&events, "0", Some("old")).expect("being made");
        assert_eq!(
            (r.status.raw.as_str(), r.physical_id),
            ("CREATE_IN_PROGRESS", None)
        );
    }

    /// The listing gives the replacement's own row, being created (seen on Heat 27 with a
    /// real Nova): the old row's life before it, not ended, makes it a replacement; a name
    /// whose older row was deleted before (a scale up after a scale down), or with no older
    /// row, is a member being added.
    #[test]
    fn a_row_being_created_beside_a_living_old_row_is_a_replacement() {
        let events = vec![
            ev("0", 30, "CREATE_IN_PROGRESS", None, "state changed"),
            ev(
                "0",
                20,
                "CREATE_COMPLETE",
                Some("old"),
                "Hook pre-update is cleared",
            ),
            ev("0", 10, "CREATE_COMPLETE", Some("old"), "state changed"),
        ];
        assert!(is_a_replacement(&events, "0", Some("new")));
        assert!(is_a_replacement(&events, "0", None));
        let scaled_up_again = vec![
            ev("3", 60, "CREATE_IN_PROGRESS", Some("y"), "state changed"),
            ev("3", 55, "CREATE_IN_PROGRESS", None, "state changed"),
            ev("3", 50, "DELETE_COMPLETE", Some("x"), "state changed"),
            ev("3", 40, "DELETE_IN_PROGRESS", Some("x"), "state changed"),
            ev("3", 30, "CREATE_COMPLETE", Some("x"), "state changed"),
        ];
        assert!(!is_a_replacement(&scaled_up_again, "3", Some("y")));
        assert!(!is_a_replacement(&events[..1], "0", None));
        assert!(!is_a_replacement(&events, "1", None));
    }

    /// A member a scale down deletes: its own life comes right after its delete, no
    /// replacement (even one of an earlier update further back).
    #[test]
    fn a_member_removed_by_a_scale_down_is_not_replaced() {
        let events = vec![
            ev("3", 50, "DELETE_IN_PROGRESS", Some("x"), "state changed"),
            ev("3", 40, "UPDATE_COMPLETE", Some("x"), "state changed"),
            ev("3", 30, "CREATE_COMPLETE", Some("x"), "state changed"),
            ev("3", 20, "CREATE_COMPLETE", Some("earlier"), "state changed"),
        ];
        assert_eq!(replacement_in(&events, "3", Some("x")), None);
        // Marked for replacement, the new one not begun: the listing stands.
        let marked = vec![ev(
            "3",
            50,
            "UPDATE_COMPLETE",
            Some("x"),
            "Hook pre-update is cleared",
        )];
        assert_eq!(replacement_in(&marked, "3", Some("x")), None);
        assert!(may_be_replaced(
            &Status::parse("UPDATE_COMPLETE"),
            Some("The Resource Server \"0\" [id] Stack \"s\" [id] requires replacement.")
        ));
        assert!(!may_be_replaced(
            &Status::parse("UPDATE_COMPLETE"),
            Some("state changed")
        ));
    }
}
