//! Updates caldera did not start and does not drive — a Magnum upgrade or resize (Magnum
//! runs the batches through Heat's rolling update), or a Heat update of a node group sent
//! from elsewhere — watched from Heat and shown in the rollout view's shape.
//!
//! There is no plan and there are no hooks of ours: a member's progress is read from the
//! ResourceGroup's nested stack, its resource listing (one request, whatever the size) for
//! the current status of every member and its events (paged, newest first, back to what an
//! earlier look already saw) for when each member started and finished. Heat keeps only
//! `max_events_per_stack` events, so on a 1000-node group the timings of early members may
//! be gone: their phase still comes from the listing, only their duration is unknown.
//!
//! [`Timeline`] folds events in; [`observed_status`] turns the facts of one look into a
//! [`RolloutStatus`]. Both are pure.
//!
//! A Magnum cluster run by a Cluster API driver has no Heat stack: its update is watched
//! from Nova instead ([`UpdateSource::Nova`], classified by `super::observed_nova`).

use super::heat_reader::SUPERSEDED_MARK;
use super::progress::{NodePhase, NodeProgress, RolloutState, RolloutStatus};
use crate::drivers::{member_order, NodeGroupTarget};
use crate::model::{CapiCluster, Role, StackEvent, StackRef, Status};
use crate::ops::hooks::hook_event;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Who runs the update, which decides what the console may do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpdateKind {
    /// Magnum's upgrade or resize: Magnum owns the stack and its batches.
    Magnum,
    /// A Heat update of a Heat-native node group sent by someone else.
    Heat,
    /// Magnum's upgrade or resize of a cluster a Cluster API driver runs: Cluster API
    /// replaces the machines (one new machine, then one old deleted), no Heat involved.
    MagnumCapi,
}

/// Where an observed update's progress is read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpdateSource {
    /// Heat's stacks: the node group's and its ResourceGroup's.
    Heat {
        /// The node group's stack (its status, parameters and update start).
        stack: StackRef,
        /// The ResourceGroup's nested stack, which owns the members and their events.
        group: StackRef,
    },
    /// Nova's servers of a Cluster API cluster (named after their Machines, see
    /// `ops::capi_nodes`) and Magnum's cluster and node group.
    Nova { capi: CapiCluster, role: Role },
}

/// An update under way on a node group, found in Heat (or, on Cluster API, in Magnum).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedUpdate {
    pub target: NodeGroupTarget,
    pub kind: UpdateKind,
    pub source: UpdateSource,
}

impl ObservedUpdate {
    /// An update seen in Heat's stacks.
    pub fn heat(
        target: NodeGroupTarget,
        kind: UpdateKind,
        stack: StackRef,
        group: StackRef,
    ) -> Self {
        ObservedUpdate {
            target,
            kind,
            source: UpdateSource::Heat { stack, group },
        }
    }

    /// The node group's stack and its ResourceGroup's, when Heat holds the update.
    pub fn stacks(&self) -> Option<(&StackRef, &StackRef)> {
        match &self.source {
            UpdateSource::Heat { stack, group } => Some((stack, group)),
            UpdateSource::Nova { .. } => None,
        }
    }

    /// How the view labels it.
    pub fn label(&self) -> &'static str {
        match self.kind {
            UpdateKind::Magnum => "Magnum update, observed: Magnum runs the batches",
            UpdateKind::Heat => "Heat update not started by caldera, observed",
            UpdateKind::MagnumCapi => "Magnum update through Cluster API, observed from Nova",
        }
    }

    /// What the view says of abort.
    pub fn abort_note(&self) -> &'static str {
        match self.kind {
            UpdateKind::Magnum => "abort: stop it through Magnum",
            UpdateKind::Heat => "A offers Heat's cancel_update",
            UpdateKind::MagnumCapi => "abort: Cluster API replaces the machines, not caldera",
        }
    }

    /// Why the console does not stop this update, or `None` when Heat's cancel applies.
    pub fn cancel_refusal(&self) -> Option<&'static str> {
        match self.kind {
            UpdateKind::Magnum => Some(
                "Magnum owns this update: cancelling its Heat stack behind Magnum leaves the \
                 cluster's status wrong; stop it through Magnum",
            ),
            UpdateKind::MagnumCapi => Some(
                "Magnum's Cluster API driver replaces the machines and there is no Heat stack \
                 to cancel: caldera cannot stop it",
            ),
            UpdateKind::Heat => None,
        }
    }

    /// Why pause, resume and skip do not apply to it.
    pub fn no_controls(&self) -> &'static str {
        match self.kind {
            UpdateKind::Magnum => {
                "Magnum runs this update's batches: caldera cannot hold or release its nodes"
            }
            UpdateKind::Heat => {
                "caldera did not start this Heat update: it has no hooks of caldera's to hold \
                 or release nodes on"
            }
            UpdateKind::MagnumCapi => {
                "Magnum's Cluster API driver replaces the machines: caldera cannot hold or \
                 release them"
            }
        }
    }

    /// A stable id for the status line (there is no rollout id).
    pub fn id(&self) -> String {
        let short: String = match &self.source {
            UpdateSource::Heat { stack, .. } => stack.id.chars().take(8).collect(),
            UpdateSource::Nova { capi, .. } => capi.name.clone(),
        };
        format!("observed-{short}")
    }
}

/// The latest events of one member (Heat's clock).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberTimes {
    pub started: Option<DateTime<Utc>>,
    pub finished: Option<DateTime<Utc>>,
    pub failed: Option<(DateTime<Utc>, String)>,
    pub paused: Option<DateTime<Utc>>,
    pub cleared: Option<DateTime<Utc>>,
}

/// Member timings folded from the group's events, kept across looks so that each look
/// reads only the events that are new.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub members: HashMap<String, MemberTimes>,
    /// The latest `UPDATE_IN_PROGRESS` of the group stack itself: when the update reached
    /// the members. Needed once the update settles, when the node-group stack's
    /// `updated_time` may have moved on to the completion.
    pub group_update_started: Option<DateTime<Utc>>,
    /// The group stack's own latest events (time, status, superseded), the newest
    /// `GROUP_EVENTS_KEPT`: when its current run of updates began ([`Timeline::run_started`]).
    pub group_events: std::collections::BTreeMap<DateTime<Utc>, (Status, bool)>,
}

/// The group stack's own events kept: a run of updates is a few events (one per update
/// sent, and its end).
const GROUP_EVENTS_KEPT: usize = 64;

impl Timeline {
    /// Folds in events of the group's nested stack (any order; each is applied once by the
    /// caller's de-duplication). Events of the group stack itself are not members.
    pub fn ingest(&mut self, group_name: &str, events: &[StackEvent]) {
        for e in events {
            if e.resource_name == group_name {
                if e.status.raw == "UPDATE_IN_PROGRESS"
                    && self.group_update_started.is_none_or(|t| t < e.time)
                {
                    self.group_update_started = Some(e.time);
                }
                let superseded = e
                    .status_reason
                    .as_deref()
                    .is_some_and(|r| r.contains(SUPERSEDED_MARK));
                self.group_events
                    .insert(e.time, (e.status.clone(), superseded));
                while self.group_events.len() > GROUP_EVENTS_KEPT {
                    self.group_events.pop_first();
                }
                continue;
            }
            let t = self.members.entry(e.resource_name.clone()).or_default();
            let later = |slot: &mut Option<DateTime<Utc>>| {
                if slot.is_none_or(|s| s < e.time) {
                    *slot = Some(e.time);
                }
            };
            let reason = e.status_reason.clone().unwrap_or_default();
            match hook_event(&reason, None) {
                Some(true) => later(&mut t.paused),
                Some(false) => later(&mut t.cleared),
                None if e.status.is_in_progress() => later(&mut t.started),
                None if e.status.is_complete() => later(&mut t.finished),
                // Heat abandoned this attempt for a newer traversal: not the member's fault.
                None if e.status.is_failed() && reason.contains(SUPERSEDED_MARK) => {}
                None if e.status.is_failed()
                    && t.failed.as_ref().is_none_or(|(s, _)| *s < e.time) =>
                {
                    t.failed = Some((e.time, reason));
                }
                None => {}
            }
        }
    }
}

impl Timeline {
    /// When the group's current run of updates began: its earliest `UPDATE_IN_PROGRESS` since
    /// it last settled. Heat accepts an update of a stack while another runs (a scale sent
    /// during an upgrade): the newer one takes over the traversal and moves the stack's
    /// `updated_time` to its own start, without the stack settling in between. The members
    /// the first one updated are still updated by the run, so the run, not the newest
    /// update, dates what is this update's. An attempt Heat abandoned for a newer traversal
    /// (its failure says so) is not a settling. `None` when no start of the run was read
    /// (purged events, or none read yet).
    pub fn run_started(&self) -> Option<DateTime<Utc>> {
        let mut start = None;
        for (t, (status, superseded)) in self.group_events.iter().rev() {
            if status.action == "UPDATE" && status.is_in_progress() {
                start = Some(*t);
            } else if status.is_complete() || (status.is_failed() && !superseded) {
                break;
            }
        }
        start
    }
}

/// One member as the group's resource listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberFact {
    pub name: String,
    pub status: Status,
    pub reason: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// What one look at Heat found.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateFacts {
    pub id: String,
    pub target: String,
    /// The image the node group's stack asks for now (`?` when it has none).
    pub image: String,
    pub stack_status: Status,
    pub stack_reason: String,
    /// When the current update started (the node-group stack's `updated_time`).
    pub started_at: Option<DateTime<Utc>>,
    /// Members Heat updates at once (`update_max_batch_size`; 1 when unknown).
    pub batch_size: usize,
    pub members: Vec<MemberFact>,
}

/// The phase of one member in the current update, and its reason when it failed.
fn phase_of(
    m: &MemberFact,
    t: Option<&MemberTimes>,
    since: Option<DateTime<Utc>>,
    settled: bool,
) -> (NodePhase, Option<String>) {
    let current = |x: Option<DateTime<Utc>>| x.filter(|x| since.is_none_or(|s| *x >= s));
    let touched = current(m.updated_at).is_some();
    if m.status.is_in_progress() {
        return (NodePhase::Updating, None);
    }
    if m.status.is_failed() && touched {
        let reason = m
            .reason
            .clone()
            .or_else(|| t.and_then(|t| t.failed.as_ref().map(|(_, r)| r.clone())));
        return (NodePhase::Failed, reason);
    }
    // A pause holds until a release, a start or any later change of the member.
    let paused = t.and_then(|t| {
        current(t.paused).filter(|p| {
            t.cleared.is_none_or(|c| c < *p)
                && t.started.is_none_or(|s| s < *p)
                && m.updated_at.is_none_or(|u| u <= *p)
        })
    });
    if paused.is_some() {
        return (NodePhase::Paused, None);
    }
    // A settled update leaves every member as the stack now defines it, including members
    // Heat had nothing to change on (e.g. the old members of a scale-out).
    if (m.status.is_complete() && touched) || settled {
        return (NodePhase::Done, None);
    }
    (NodePhase::Pending, None)
}

/// The status of an observed update: each member's phase from the listing, its timing from
/// the timeline, batches in the order Heat started members, and the figures over the update.
pub fn observed_status(
    facts: &UpdateFacts,
    timeline: &Timeline,
    now: DateTime<Utc>,
) -> RolloutStatus {
    let in_progress = facts.stack_status.is_in_progress();
    // In progress, the run of updates under way began at the group's first start since it
    // last settled (a scale sent meanwhile moves the stack's `updated_time`, not that), else
    // at the stack's `updated_time`; settled, the group's own start event (no later than
    // that time) dates it, when still known.
    let since = match (in_progress, timeline.group_update_started, facts.started_at) {
        (true, _, Some(s)) => Some(timeline.run_started().map_or(s, |r| r.min(s))),
        (true, _, None) => timeline.run_started(),
        (false, Some(g), Some(s)) if g <= s => Some(g),
        (false, Some(g), None) => Some(g),
        (false, _, _) => facts.started_at,
    };
    let settled = facts.stack_status.is_complete();
    let current = |x: Option<DateTime<Utc>>| x.filter(|x| since.is_none_or(|s| *x >= s));
    let mut members: Vec<&MemberFact> = facts.members.iter().collect();
    members.sort_by(|a, b| member_order(&a.name, &b.name));
    let mut nodes: Vec<NodeProgress> = members
        .iter()
        .map(|m| {
            let t = timeline.members.get(&m.name);
            let (phase, reason) = phase_of(m, t, since, settled);
            // An updating member whose start event was not read yet started when the
            // listing last saw it change.
            let started = t.and_then(|t| current(t.started)).or_else(|| {
                (phase == NodePhase::Updating)
                    .then(|| current(m.updated_at))
                    .flatten()
            });
            let finished = t
                .and_then(|t| current(t.finished))
                .filter(|f| started.is_some_and(|s| *f >= s));
            NodeProgress {
                name: m.name.clone(),
                index: m.name.parse().ok(),
                batch: 0,
                phase,
                released_at: started,
                finished_at: if phase == NodePhase::Done {
                    finished
                } else {
                    None
                },
                reason,
                straggler: false,
                server: None,
                address: None,
            }
        })
        .collect();
    // Batches in Heat's order: started members by start time, the rest after them.
    let batch = facts.batch_size.max(1);
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by_key(|&i| (nodes[i].released_at.is_none(), nodes[i].released_at));
    for (pos, &i) in order.iter().enumerate() {
        nodes[i].batch = pos / batch;
    }
    let current_batch = if in_progress {
        nodes
            .iter()
            .filter(|n| matches!(n.phase, NodePhase::Updating | NodePhase::Paused))
            .map(|n| n.batch)
            .min()
    } else {
        None
    };
    let held = nodes
        .iter()
        .filter(|n| n.phase == NodePhase::Paused)
        .count();
    let updating = nodes
        .iter()
        .filter(|n| n.phase == NodePhase::Updating)
        .count();
    let state = if in_progress && held > 0 && updating == 0 {
        RolloutState::Paused {
            reason: format!("{held} member(s) held on a Heat hook"),
        }
    } else if in_progress {
        RolloutState::Running
    } else if facts.stack_status.is_failed() {
        RolloutState::Failed {
            reason: facts.stack_reason.clone(),
        }
    } else {
        RolloutState::Completed
    };
    let batches = nodes.len().div_ceil(batch);
    let mut status = RolloutStatus::new(
        facts.id.clone(),
        facts.target.clone(),
        facts.image.clone(),
        state,
        nodes,
        batches,
        now,
    );
    status.current_batch = current_batch;
    status.stack_status = facts.stack_status.raw.clone();
    status.compute(now);
    // Pace over the whole update: the first members' start events may have been purged,
    // and then the earliest start still known would overstate it.
    if let Some(t0) = since {
        let end = if in_progress {
            now
        } else {
            status
                .nodes
                .iter()
                .filter_map(|n| n.finished_at)
                .max()
                .unwrap_or(now)
        };
        let mins = (end - t0).num_milliseconds().max(1) as f64 / 60_000.0;
        status.throughput_per_min = (status.done > 0).then(|| status.done as f64 / mins);
        status.eta_secs = status
            .throughput_per_min
            .filter(|t| *t > 0.0 && in_progress)
            .map(|t| status.remaining as f64 / t * 60.0);
    }
    if !in_progress {
        status.eta_secs = None;
    }
    status
}

/// The image a node group's stack parameters ask for: `image` (caldera's and the simulated
/// Magnum templates) or `server_image` (Magnum's Fedora CoreOS templates).
pub fn image_parameter(parameters: &std::collections::BTreeMap<String, String>) -> Option<String> {
    ["image", "server_image"]
        .iter()
        .find_map(|k| parameters.get(*k).filter(|v| !v.is_empty()).cloned())
}

/// Members Heat's rolling update takes at once, from the stack's parameters.
pub fn batch_size_parameter(parameters: &std::collections::BTreeMap<String, String>) -> usize {
    parameters
        .get("update_max_batch_size")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|b| *b > 0)
        .unwrap_or(1)
}

#[cfg(test)]
#[path = "observed_tests.rs"]
mod tests;
