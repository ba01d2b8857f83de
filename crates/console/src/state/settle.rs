//! Fresh after actions. An action Heat or Magnum accepted (a scale, an upgrade, a node
//! action, a rollout control, a Heat control) answers long before the cloud is done with it:
//! Magnum's resize returns 202, then Heat walks the node group's stack through
//! UPDATE_IN_PROGRESS, creating and deleting members, and only then do the counts, the
//! members and the statuses agree again. The console does not wait for the operator to leave
//! and come back: after an accepted action it *settles*, a short burst of faster refreshes
//! that re-reads what the action changes (the acted-on cluster alone, its row patched into
//! the cluster list behind the dashboard header's `workers N`; the node group list behind
//! the counts; whatever the view shows: nodes, events, tree) until the subject leaves
//! *_IN_PROGRESS, bounded in time. The whole cluster list is not read at the burst's pace:
//! it costs requests for every cluster, and a cloud of 100 clusters would spend its request
//! budget on it. The slots the
//! views down the navigation stack show are made due too, so going back shows the new
//! state at once. The header says a burst runs (`settling edge-native/edge 14s`): the
//! numbers on screen are still moving, and the console asks the cloud more often meanwhile.

use super::store::Store;
use super::App;
use crate::model::{Cluster, Status};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// The pace of the burst (or the refresh's, when that is faster).
pub const SETTLE_PACE: Duration = Duration::from_secs(2);
/// Heat takes a moment to move a stack to *_IN_PROGRESS after accepting an action: a status
/// read sooner than this after the action says nothing about it being done.
pub const SETTLE_MIN: chrono::Duration = chrono::Duration::seconds(4);
/// The burst ends here whatever Heat says (a 1000-node rolling upgrade takes half an hour:
/// the normal refresh follows it from then on).
pub const SETTLE_MAX: chrono::Duration = chrono::Duration::seconds(120);

/// What an action changed, and so what tells when the cloud is done with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    /// A node group (scale, upgrade, node actions, rollout controls), in its cluster:
    /// the node group's and the cluster's statuses.
    NodeGroup {
        cluster: Box<Cluster>,
        nodegroup_id: String,
    },
    /// A stack (the manual Heat controls): its status in the stack list.
    Stack { id: String },
}

/// One burst of refreshes after an accepted action.
#[derive(Debug, Clone, PartialEq)]
pub struct Settle {
    pub subject: Subject,
    pub started: DateTime<Utc>,
}

/// Whether a status read at `read_at` shows the cloud still busy; a status not read since
/// `since` (when Heat had had time to start) counts as busy.
fn busy(status: Option<&Status>, read_at: Option<DateTime<Utc>>, since: DateTime<Utc>) -> bool {
    match (status, read_at) {
        (Some(s), Some(at)) if at >= since => s.is_in_progress(),
        _ => true,
    }
}

impl Settle {
    /// Whether the burst is over at `now`: past its bound, or the subject was read out of
    /// *_IN_PROGRESS after Heat had time to start on it.
    pub fn over(&self, store: &Store, now: DateTime<Utc>) -> bool {
        if now - self.started >= SETTLE_MAX {
            return true;
        }
        let since = self.started + SETTLE_MIN;
        if now < since {
            return false;
        }
        match &self.subject {
            Subject::NodeGroup {
                cluster,
                nodegroup_id,
            } => {
                let groups = store.nodegroups.get(&cluster.id);
                let group = groups
                    .and_then(|s| s.data.as_deref())
                    .and_then(|gs| gs.iter().find(|g| &g.id == nodegroup_id));
                // As listed, or as read alone (a plain stack seen as a cluster is in no
                // list): without it, the burst would run to its bound.
                let listed = store
                    .clusters
                    .data
                    .as_deref()
                    .and_then(|cs| cs.iter().find(|c| c.id == cluster.id))
                    .or_else(|| store.clusters_alone.get(&cluster.id));
                !busy(
                    group.map(|g| &g.status),
                    groups.and_then(|s| s.meta.fetched_at),
                    since,
                ) && !busy(
                    listed.map(|c| &c.status),
                    store.cluster_read_at(&cluster.id),
                    since,
                )
            }
            Subject::Stack { id } => {
                let stack = store
                    .stacks
                    .data
                    .as_deref()
                    .and_then(|ss| ss.iter().find(|s| &s.stack.id == id));
                !busy(
                    stack.map(|s| &s.status),
                    store.stacks.meta.fetched_at,
                    since,
                )
            }
        }
    }
}

/// Longest subject name the header gives a burst; longer names are cut with `…`.
pub const SHOWN_NAME_MAX: usize = 28;

/// What the header shows of the bursts under way: the newest one, named as the operator
/// knows it, with how long it has run, and how many others run besides it.
#[derive(Debug, Clone, PartialEq)]
pub struct SettleShown {
    /// `cluster/node group`, or the stack's name; terminal-safe, at most
    /// [`SHOWN_NAME_MAX`] columns.
    pub subject: String,
    /// Seconds since the action was accepted.
    pub secs: i64,
    pub others: usize,
}

impl SettleShown {
    /// `14s`, `1m05s`: a burst lasts two minutes at most, so minutes alone would be too coarse.
    pub fn age(&self) -> String {
        let s = self.secs.max(0);
        if s < 60 {
            format!("{s}s")
        } else {
            format!("{}m{:02}s", s / 60, s % 60)
        }
    }
}

/// `name` as the header may print it: control characters made visible, at most `max`
/// columns (the end cut and marked with `…`, by the helper every cut goes through).
pub fn cut_name(name: &str, max: usize) -> String {
    let safe = crate::model::terminal_safe(name).into_owned();
    crate::widgets::table::cut_line_marked(ratatui::text::Line::raw(safe), max).to_string()
}

impl App {
    /// The bursts under way.
    pub fn settling(&self) -> &[Settle] {
        &self.settling
    }

    /// The burst the header shows, if one runs at the injected clock: a burst whose subject
    /// has settled, or past its bound, is not shown even before the next refresh ends it.
    pub fn settle_shown(&self) -> Option<SettleShown> {
        let running: Vec<&Settle> = self
            .settling
            .iter()
            .filter(|s| !s.over(&self.store, self.now))
            .collect();
        let newest = running.iter().max_by_key(|s| s.started)?;
        Some(SettleShown {
            subject: cut_name(&self.subject_name(&newest.subject), SHOWN_NAME_MAX),
            secs: (self.now - newest.started).num_seconds(),
            others: running.len() - 1,
        })
    }

    /// A subject as the operator knows it: `cluster/node group` (the cluster alone when the
    /// group is not listed), or the stack's name (its id when no name is known).
    fn subject_name(&self, subject: &Subject) -> String {
        match subject {
            Subject::NodeGroup {
                cluster,
                nodegroup_id,
            } => {
                let group = self
                    .store
                    .nodegroups
                    .get(&cluster.id)
                    .and_then(|s| s.data.as_deref())
                    .and_then(|gs| gs.iter().find(|g| &g.id == nodegroup_id));
                match group {
                    Some(g) => format!("{}/{}", cluster.name, g.name),
                    None => cluster.name.clone(),
                }
            }
            Subject::Stack { id } => self
                .store
                .stacks
                .data
                .as_deref()
                .and_then(|ss| ss.iter().find(|s| &s.stack.id == id))
                .map(|s| s.stack.name.clone())
                .or_else(|| self.store.stack_names.get(id).cloned())
                .unwrap_or_else(|| id.clone()),
        }
    }

    /// An action was accepted: re-read what it changes now and settle until the cloud is
    /// done with it (see the module doc). Starting again on the same subject restarts it.
    pub(super) fn settle(&mut self, subject: Subject) {
        self.settling.retain(|s| s.subject != subject);
        self.settling.push(Settle {
            subject,
            started: self.now,
        });
        self.make_due();
        self.plan_refresh(true);
    }

    /// Settle after an action on the node group `nodegroup_id`; a group the console cannot
    /// place in a cluster gets the forced refresh alone.
    pub(super) fn settle_group(&mut self, nodegroup_id: &str) {
        match self.group_subject(nodegroup_id) {
            Some(subject) => self.settle(subject),
            None => self.plan_refresh(true),
        }
    }

    /// The node group `nodegroup_id` as a settle subject, with its cluster as last known
    /// (the lists, the views on the navigation stack, the rollouts).
    pub(super) fn group_subject(&self, nodegroup_id: &str) -> Option<Subject> {
        let cluster_id = self
            .store
            .nodegroups
            .values()
            .filter_map(|s| s.data.as_deref())
            .flatten()
            .find(|g| g.id == nodegroup_id)
            .map(|g| g.cluster_id.clone())
            .or_else(|| {
                let slot = self.store.rollouts.get(nodegroup_id)?;
                Some(slot.cluster.id.clone())
            })?;
        let listed = self
            .store
            .clusters
            .data
            .as_deref()
            .and_then(|cs| cs.iter().find(|c| c.id == cluster_id));
        let opened = || {
            self.nav.iter().find_map(|v| match &v.kind {
                super::ViewKind::Dashboard { cluster }
                | super::ViewKind::NodeGroups { cluster }
                | super::ViewKind::Nodes { cluster, .. }
                | super::ViewKind::Rollout { cluster, .. }
                    if cluster.id == cluster_id =>
                {
                    Some(cluster)
                }
                _ => None,
            })
        };
        let cluster = Box::new(listed.or_else(opened)?.clone());
        Some(Subject::NodeGroup {
            cluster,
            nodegroup_id: nodegroup_id.to_string(),
        })
    }

    /// Every slot an action can change is read again the next time a view wants it (the
    /// views down the navigation stack included), not when its refresh would come round.
    fn make_due(&mut self) {
        let s = &mut self.store;
        let metas = [&mut s.clusters.meta, &mut s.stacks.meta]
            .into_iter()
            .chain(s.nodegroups.values_mut().map(|x| &mut x.meta))
            .chain(s.nodes.values_mut().map(|x| &mut x.meta))
            .chain(s.trees.values_mut().map(|x| &mut x.meta));
        for meta in metas {
            if !meta.in_flight {
                meta.attempted_at = None;
            }
        }
    }

    /// On each refresh: the bursts that are over end (what they changed is made due once
    /// more, for the views not on screen), the others re-read their subject's status.
    /// Returns the pace the view refreshes at.
    pub(super) fn plan_settle(&mut self, every: Duration) -> Duration {
        let (now, store) = (self.now, &self.store);
        let before = self.settling.len();
        self.settling.retain(|s| !s.over(store, now));
        if self.settling.len() < before {
            self.make_due();
        }
        if self.settling.is_empty() {
            return every;
        }
        let pace = every.min(SETTLE_PACE);
        for s in self.settling.clone() {
            match s.subject {
                // The cluster alone, not the list: the list costs requests for every
                // cluster (details, node-group counts), ~100 a second on a cloud of 100
                // clusters at the burst's pace; it keeps its own pace meanwhile.
                Subject::NodeGroup { cluster, .. } => {
                    self.want_cluster(&cluster, false, now, pace);
                    self.want_nodegroups(&cluster, false, now, pace);
                }
                Subject::Stack { .. } => self.want_stacks(false, now, pace),
            }
        }
        pace
    }
}

#[cfg(test)]
mod tests {
    use super::{cut_name, SettleShown};

    #[test]
    fn names_are_cut_and_made_safe_and_ages_keep_their_seconds() {
        assert_eq!(cut_name("edge-native/edge", 16), "edge-native/edge");
        assert_eq!(cut_name("edge-native/edge", 12), "edge-native…");
        assert!(!cut_name("prod\u{1b}[2J-east", 28).contains('\u{1b}'));
        // Columns, not characters: a wide name is cut to the room it has.
        assert_eq!(cut_name("日本語テキスト", 5), "日本…");
        let age = |secs| {
            SettleShown {
                subject: String::new(),
                secs,
                others: 0,
            }
            .age()
        };
        assert_eq!(
            [age(0), age(59), age(60), age(119)],
            ["0s", "59s", "1m00s", "1m59s"]
        );
    }
}
