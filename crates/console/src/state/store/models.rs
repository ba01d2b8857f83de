//! What the store's facts say of progress and time in state, computed once per change of the
//! facts (a member list, a node group list, a rollout status, a cluster read), never in a
//! frame: the node-groups pane, the nodes pane, its heat map and the dashboard draw what is
//! here, so at one instant they show the same figures. The rules are the core's
//! (`caldera_core::progress`); this module only says when to apply them and keeps the results.

use super::{NodeSet, Store};
use crate::model::{Cluster, NodeGroup};
use crate::progress::{cluster_in_state, group_in_state, InState, Phase, Progress};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};

/// The models, by node group id (progress) and by cluster or node group id (time in state).
#[derive(Debug, Default)]
pub struct Models {
    groups: HashMap<String, GroupModel>,
    /// Each cluster's groups summed (the dashboard's line and legend).
    clusters: HashMap<String, Progress>,
    /// The clusters whose every group under an update is under one caldera does not drive:
    /// their sum is labelled observed (a sum with a rollout of caldera's in it is not).
    clusters_observed: HashSet<String>,
    in_state: HashMap<String, InState>,
    /// The facts the time in state and the sums were last computed from.
    listed: Option<Listed>,
    /// Group models computed so far (each a change of some group's facts).
    computed: u64,
}

#[derive(Debug)]
struct GroupModel {
    facts: Facts,
    progress: Progress,
    /// Each member's phase in `progress`, by member name (a table row looks its own up).
    phases: HashMap<String, Phase>,
    /// The model is an update's that caldera does not drive (Magnum's, another tool's),
    /// observed from Heat: `rollout status` labels it so, and so do the panes.
    observed: bool,
}

/// Which facts a group's model was computed from: the versions of its member list, of its
/// cluster's node group list and of its rollout's status. The same versions, the same model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Facts {
    nodes: u64,
    groups: u64,
    rollout: u64,
}

/// The versions of the lists the time in state and the sums read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    clusters: u64,
    groups: Vec<(String, u64)>,
    models: (u64, usize),
}

impl Models {
    /// The progress of node group `id`, as last computed.
    pub fn progress(&self, id: &str) -> Option<&Progress> {
        self.groups.get(id).map(|m| &m.progress)
    }

    /// Whether node group `id`'s model is that of an update caldera does not drive.
    pub fn observed(&self, id: &str) -> bool {
        self.groups.get(id).is_some_and(|m| m.observed)
    }

    /// Whether cluster `id`'s sum is only of updates caldera does not drive.
    pub fn cluster_observed(&self, id: &str) -> bool {
        self.clusters_observed.contains(id)
    }

    /// The groups of cluster `id` that have a model, summed.
    pub fn cluster_progress(&self, id: &str) -> Option<&Progress> {
        self.clusters.get(id)
    }

    /// Since when cluster or node group `id` has been in its state.
    pub fn in_state(&self, id: &str) -> Option<&InState> {
        self.in_state.get(id)
    }
}

/// A node group's progress: its update's, as `rollout status` and `caldera nodegroups` read
/// it (the model core computed for this machine's rollout, or for an update Magnum or another
/// tool runs, observed from Heat), when the console follows one; else the model computed from
/// its nodes. A group at rest reads the same from both; an update nobody here drives cannot be
/// told from the nodes alone (Heat updates a member in place, its image unchanged, or has not
/// reached any member yet), so the update's own model comes first.
pub fn group_progress(
    store: &Store,
    nodegroup: &NodeGroup,
    set: Option<&NodeSet>,
    now: DateTime<Utc>,
) -> Option<Progress> {
    if let Some(slot) = store.rollouts.get(&nodegroup.id) {
        if let Some(st) = &slot.status {
            // A group the rollout holds beside its target reads its own members.
            return Some(match &slot.plan {
                Some(plan) => plan.progress_as_viewed(&st.progress),
                None => (*st.progress).clone(),
            });
        }
    }
    let driven_here = store.rollouts_driven_here();
    set.map(|set| {
        crate::progress::of_nodes(
            set.rows.iter().map(|r| &r.node),
            nodegroup,
            &driven_here,
            now,
        )
    })
}

impl Store {
    /// Brings the models up to the facts: a group whose facts moved is computed again, the
    /// others kept; then the time in state and the clusters' sums when anything they read
    /// moved. Called after every answer the store takes in.
    pub fn refresh_models(&mut self, now: DateTime<Utc>) {
        let fresh = self.stale_groups(now);
        let kept: HashSet<String> = self.modelled_groups().cloned().collect();
        let models = &mut self.models;
        models.groups.retain(|id, _| kept.contains(id));
        models.computed += fresh.len() as u64;
        for (id, m) in fresh {
            models.groups.insert(id, m);
        }
        let listed = self.listed();
        if self.models.listed.as_ref() != Some(&listed) {
            self.refresh_in_state();
            self.refresh_sums(now);
            self.models.listed = Some(listed);
        }
    }

    /// The groups whose facts moved since their model, each with its model computed anew:
    /// every group whose members are read, and every group whose update the console follows
    /// (the node-groups pane and the dashboard follow each updating group's, members read or
    /// not).
    fn stale_groups(&self, now: DateTime<Utc>) -> Vec<(String, GroupModel)> {
        let mut fresh = Vec::new();
        for id in self.modelled_groups() {
            let set = self.nodes.get(id);
            let opened = set
                .and_then(|s| s.nodegroup.as_ref())
                .or_else(|| self.rollouts.get(id).map(|r| &r.nodegroup));
            let Some(opened) = opened else {
                continue;
            };
            let standin = self.standin_of_stack(opened);
            let g = standin
                .as_ref()
                .unwrap_or_else(|| self.current_nodegroup(&opened.cluster_id, opened));
            let facts = Facts {
                nodes: set.map_or(0, |s| s.meta.version),
                groups: self
                    .nodegroups
                    .get(&g.cluster_id)
                    .map_or(0, |s| s.meta.version),
                rollout: self.rollouts.get(id).map_or(0, |s| s.meta.version),
            };
            if self.models.groups.get(id).is_some_and(|m| m.facts == facts) {
                continue;
            }
            let observed = self
                .rollouts
                .get(id)
                .is_some_and(|r| r.status.is_some() && r.observed.is_some());
            if let Some(progress) = group_progress(self, g, set, now) {
                let phases = progress
                    .members
                    .iter()
                    .map(|m| (m.name.clone(), m.phase))
                    .collect();
                fresh.push((
                    id.clone(),
                    GroupModel {
                        facts,
                        progress,
                        phases,
                        observed,
                    },
                ));
            }
        }
        fresh
    }

    /// A plain stack seen as one node group (the nodes pane of any stack) with the stack's
    /// status and times as the stack list last read them: whether Heat runs an update on it,
    /// and since when, are facts of the stack the model reads (a member Heat updated since
    /// the update began is new). `None` for any other group, or a stack not listed.
    fn standin_of_stack(&self, opened: &NodeGroup) -> Option<NodeGroup> {
        if !crate::state::is_stack_standin(opened) {
            return None;
        }
        let stacks = self.stacks.data.as_deref()?;
        let stack = stacks.iter().find(|s| s.stack.id == opened.id)?;
        let mut g = opened.clone();
        g.status = stack.status.clone();
        g.created_at = stack.created_at;
        g.updated_at = stack.updated_at;
        Some(g)
    }

    /// The groups a model is kept for: members read, or an update followed.
    fn modelled_groups(&self) -> impl Iterator<Item = &String> {
        let followed = self
            .rollouts
            .iter()
            .filter(|(id, r)| r.status.is_some() && !self.nodes.contains_key(*id))
            .map(|(id, _)| id);
        self.nodes.keys().chain(followed)
    }

    fn listed(&self) -> Listed {
        let mut groups: Vec<(String, u64)> = self
            .nodegroups
            .iter()
            .map(|(id, s)| (id.clone(), s.meta.version))
            .collect();
        groups.sort();
        Listed {
            clusters: self.clusters.meta.version,
            groups,
            // A group's model computed anew (or dropped) changes the sums and may change a
            // time in state (its update's start).
            models: (self.models.computed, self.models.groups.len()),
        }
    }

    /// Each listed node group's time in state, then each cluster's from its groups'.
    fn refresh_in_state(&mut self) {
        let mut next: HashMap<String, InState> = HashMap::new();
        for g in self.nodegroups.values().filter_map(|s| s.data.as_deref()) {
            for g in g {
                let prev = self.models.in_state.get(&g.id);
                let s = group_in_state(g, self.models.progress(&g.id), prev);
                next.insert(g.id.clone(), s);
            }
        }
        for c in self.all_clusters() {
            let groups = self
                .nodegroups
                .get(&c.id)
                .and_then(|s| s.data.as_deref())
                .unwrap_or_default();
            let of_groups = groups
                .iter()
                .filter_map(|g| Some((&g.status, next.get(&g.id)?)));
            let s = cluster_in_state(c, of_groups, self.models.in_state.get(&c.id));
            next.insert(c.id.clone(), s);
        }
        self.models.in_state = next;
    }

    /// Every cluster the store knows: listed, and read alone.
    fn all_clusters(&self) -> impl Iterator<Item = &Cluster> {
        let listed = self.clusters.data.as_deref().unwrap_or_default();
        listed.iter().chain(self.clusters_alone.values())
    }

    /// Each cluster's groups that have a model, summed: the dashboard's figures are the sum
    /// of the same models each group's panes show.
    fn refresh_sums(&mut self, now: DateTime<Utc>) {
        let mut sums = HashMap::new();
        let mut observed = HashSet::new();
        for (cluster_id, slot) in &self.nodegroups {
            let groups = slot.data.as_deref().unwrap_or_default();
            // One rollout can hold several node groups (a Magnum cluster's masters held
            // beside its minions): each group's model is its own part of it, and the
            // cluster sums the whole rollout once (its pace once, not once per group).
            let mut rollouts_summed = HashSet::new();
            let mut parts: Vec<&Progress> = Vec::new();
            for g in groups {
                match self.rollouts.get(&g.id).and_then(|r| r.status.as_ref()) {
                    Some(st) => {
                        if rollouts_summed.insert(st.id.clone()) {
                            parts.push(&st.progress);
                        }
                    }
                    None => parts.extend(self.models.progress(&g.id)),
                }
            }
            sums.insert(cluster_id.clone(), Progress::sum(parts, now));
            let mut updating = groups.iter().filter(|g| {
                self.models
                    .progress(&g.id)
                    .is_some_and(|p| p.counts.in_update_total() > 0)
            });
            let first = updating.next();
            if first.is_some_and(|g| self.models.observed(&g.id))
                && updating.all(|g| self.models.observed(&g.id))
            {
                observed.insert(cluster_id.clone());
            }
        }
        self.models.clusters = sums;
        self.models.clusters_observed = observed;
    }
}

impl crate::widgets::table::RowModels for Models {
    fn progress(&self, id: &str) -> Option<&Progress> {
        Models::progress(self, id)
    }
    fn in_state(&self, id: &str) -> Option<&InState> {
        Models::in_state(self, id)
    }
    fn phase(&self, group: &str, member: &str) -> Option<Phase> {
        self.groups.get(group)?.phases.get(member).copied()
    }
}
