//! Time in state (the IN STATE every list shows) of a cluster and of a node group: since when
//! it has been in the state it is in. Computed here once, from the facts, for the console's
//! panes and the commands alike.
//!
//! Magnum's `updated_at` alone misleads: Magnum saves a cluster (and a node group) whenever its
//! own API changes it or a status comes back from Heat, so a scale of another node group in the
//! middle of an upgrade moves the cluster's `updated_at` while the cluster stays
//! `UPDATE_IN_PROGRESS`: read alone, a 23-minute upgrade would show 3m. So:
//! - while an update runs (`*_IN_PROGRESS`), its start wins when known: the rollout's journal
//!   (the progress model's `since`), or, for a cluster, the earliest of its node groups that
//!   are themselves in progress (the group under upgrade keeps its own `updated_at`);
//! - a status seen unchanged on an earlier look keeps that look's `since` while it is in
//!   progress (Magnum's status did not change, only its record was saved again);
//! - otherwise, Magnum's record: `updated_at`, or `created_at` for one never updated. A settled
//!   status (`*_COMPLETE`, `*_FAILED`) always takes it: a new `updated_at` there is a new end.

use super::Progress;
use crate::model::{Cluster, NodeGroup, Status};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A status and since when it holds, as the looks so far tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InState {
    /// Heat's or Magnum's status, as listed (`UPDATE_IN_PROGRESS`).
    pub status: String,
    pub since: Option<DateTime<Utc>>,
}

impl InState {
    /// The time in state at `now` (`23m`), or `-` when not known.
    pub fn age_text(&self, now: DateTime<Utc>) -> String {
        match self.since {
            Some(t) => crate::model::short_duration((now - t).num_seconds()),
            None => "-".into(),
        }
    }
}

/// Since when a record with `status`, saved at `created_at` / `updated_at`, has been in its
/// state; `update_started`: when the update under way started (see the module's rules);
/// `prev`: what an earlier look said.
pub fn in_state(
    status: &Status,
    created_at: Option<DateTime<Utc>>,
    updated_at: Option<DateTime<Utc>>,
    update_started: Option<DateTime<Utc>>,
    prev: Option<&InState>,
) -> InState {
    let saved = crate::model::state_since(created_at, updated_at);
    let running = status.is_in_progress();
    let kept = prev
        .filter(|p| running && p.status == status.raw)
        .and_then(|p| p.since);
    let started = update_started.filter(|_| running);
    InState {
        status: status.raw.clone(),
        since: earliest([saved, kept, started]),
    }
}

/// A node group's time in state: its update's start is its progress model's (the journal's
/// start of a rollout) while the model has members in the update.
pub fn group_in_state(
    g: &NodeGroup,
    progress: Option<&Progress>,
    prev: Option<&InState>,
) -> InState {
    let started = progress
        .filter(|p| p.counts.in_update_total() > 0)
        .and_then(|p| p.since);
    in_state(&g.status, g.created_at, g.updated_at, started, prev)
}

/// A cluster's time in state: while it is in progress, its update started no later than the
/// earliest of its node groups that are in progress themselves (`groups`: each group's
/// status and time in state), whatever a scale of another group did to its `updated_at`.
pub fn cluster_in_state<'a>(
    c: &Cluster,
    groups: impl IntoIterator<Item = (&'a Status, &'a InState)>,
    prev: Option<&InState>,
) -> InState {
    let started = groups
        .into_iter()
        .filter(|(s, _)| s.is_in_progress())
        .filter_map(|(_, i)| i.since)
        .min();
    in_state(&c.status, c.created_at, c.updated_at, started, prev)
}

fn earliest(ts: [Option<DateTime<Utc>>; 3]) -> Option<DateTime<Utc>> {
    ts.into_iter().flatten().min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn at(mins_ago: i64) -> Option<DateTime<Utc>> {
        let now = DateTime::parse_from_rfc3339("2026-11-26T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        Some(now - Duration::minutes(mins_ago))
    }

    fn group(name: &str, status: &str, updated_mins_ago: i64) -> NodeGroup {
        let mut g = NodeGroup::of_stack("s", name, crate::model::Role::Worker);
        g.status = Status::parse(status);
        g.created_at = at(600);
        g.updated_at = at(updated_mins_ago);
        g
    }

    /// The case: prod-east's default-worker upgrade started 23 minutes ago; a scale
    /// of workers-az2 3 minutes ago saved the cluster again. The cluster is 23m in state.
    #[test]
    fn a_scale_during_an_upgrade_keeps_the_upgrades_age() {
        let upgrading = group("default-worker", "UPDATE_IN_PROGRESS", 23);
        let scaling = group("workers-az2", "UPDATE_IN_PROGRESS", 3);
        let idle = group("gpu", "UPDATE_COMPLETE", 1);
        let states: Vec<InState> = [&upgrading, &scaling, &idle]
            .iter()
            .map(|g| group_in_state(g, None, None))
            .collect();
        let mut c = crate::service::plain_stack::cluster_of("c", "prod-east");
        c.status = Status::parse("UPDATE_IN_PROGRESS");
        c.created_at = at(600);
        c.updated_at = at(3);
        let statuses = [&upgrading.status, &scaling.status, &idle.status];
        let s = cluster_in_state(&c, statuses.into_iter().zip(&states), None);
        assert_eq!(s.since, at(23));
        // A settled group is not part of the update: the gpu group's 1m does not count.
        assert_eq!(states[2].since, at(1));
    }

    /// A group whose own record moved (a scale of the group under a rollout): the journal's
    /// start of the rollout, as the model carries it, wins; an earlier look's, too.
    #[test]
    fn the_rollouts_start_and_an_earlier_look_outlive_a_new_updated_at() {
        let g = group("workers", "UPDATE_IN_PROGRESS", 3);
        let mut p = Progress::idle(at(0).unwrap());
        p.counts.pending = 4;
        p.since = at(23);
        assert_eq!(group_in_state(&g, Some(&p), None).since, at(23));
        let before = InState {
            status: "UPDATE_IN_PROGRESS".into(),
            since: at(17),
        };
        assert_eq!(group_in_state(&g, None, Some(&before)).since, at(17));
    }

    /// Settled, Magnum's record says when: an earlier look's `since` of the same status is a
    /// former end, and a model's start is not this state's.
    #[test]
    fn a_settled_status_takes_magnums_record() {
        let g = group("workers", "UPDATE_COMPLETE", 2);
        let before = InState {
            status: "UPDATE_COMPLETE".into(),
            since: at(90),
        };
        let mut p = Progress::idle(at(0).unwrap());
        p.counts.new = 4;
        p.since = at(23);
        assert_eq!(group_in_state(&g, Some(&p), Some(&before)).since, at(2));
        // Another status than the earlier look's: a new state.
        let g = group("workers", "UPDATE_IN_PROGRESS", 2);
        assert_eq!(group_in_state(&g, None, Some(&before)).since, at(2));
    }
}
