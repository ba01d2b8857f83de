//! The simulated cloud's state: Heat stacks (with resources and bounded event logs), the
//! node groups whose members those stacks describe, Magnum clusters and cluster templates,
//! and the Nova server index. One `World` sits behind one mutex; handlers hold it briefly.

pub mod build;
pub mod capi;
pub mod deployments;
pub mod group;
mod heat_objects;
mod ids;
pub mod siblings;

pub use build::{ClusterSpec, GroupSpec};
pub use group::{FailSpec, Group, GroupOp, HookRule, Layout, Member, Phase, UpdateRequest};
pub use heat_objects::{Action, Event, Output, Resource, Stack, StackRole, State, Status};
pub use ids::{format_uuid, parse_uuid, Ids};

use crate::clock::SimClock;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Static facts the world needs to render itself.
#[derive(Debug, Clone)]
pub struct WorldConfig {
    pub project_id: String,
    pub project_name: String,
    pub user_id: String,
    pub user_name: String,
    pub max_events_per_stack: usize,
    /// Median simulated durations of a member's create and update.
    pub create_median_ms: f64,
    pub update_median_ms: f64,
    pub duration_sigma: f64,
    /// Simulated time between two member starts of one traversal (Heat's leaf delay).
    pub leaf_delay_ms: i64,
    /// Magnum's members get a floating IP each (`OS::Neutron::FloatingIP` on their port).
    pub floating_ips: bool,
}

#[derive(Debug, Clone)]
pub struct ClusterTemplate {
    pub uuid: String,
    pub name: String,
    pub image: String,
    pub coe_version: String,
    pub created_ms: i64,
}

#[derive(Debug, Clone)]
pub struct Cluster {
    pub uuid: String,
    pub name: String,
    pub template: usize,
    pub keypair: String,
    pub stack: usize,
    /// Node groups, masters first.
    pub groups: Vec<usize>,
    pub created_ms: i64,
    pub updated_ms: Option<i64>,
    pub create_timeout: u32,
    pub labels: BTreeMap<String, String>,
    pub api_address: String,
    pub docker_volume_size: u32,
    /// A health override (e.g. the API of a stuck cluster does not answer).
    pub health_reason_override: Option<String>,
    /// Run by a Cluster API driver: no Heat stack shown, machines named by Cluster API.
    pub capi: Option<capi::SimCapi>,
}

/// Where a Nova server lives in the world.
#[derive(Debug, Clone, Copy)]
pub struct ServerRef {
    pub group: usize,
    pub index: u32,
    pub created_ms: i64,
}

pub struct World {
    pub clock: SimClock,
    pub ids: Ids,
    pub cfg: WorldConfig,
    stacks: Vec<Option<Stack>>,
    by_id: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
    seq: u64,
    pub groups: Vec<Group>,
    pub clusters: Vec<Cluster>,
    pub templates: Vec<ClusterTemplate>,
    /// Nova's default order: newest first, ties by id descending.
    pub server_order: BTreeSet<(Reverse<i64>, Reverse<String>)>,
    pub servers: HashMap<String, ServerRef>,
    type_cache: HashMap<String, Arc<str>>,
    /// While a scenario builds its history, time is driven by hand instead of the clock.
    pub virtual_now: Option<i64>,
    /// Time of the newest event: events are never stamped earlier (paging relies on it).
    pub last_event_ms: i64,
    /// Outputs Heat has resolved and keeps, per (stack, output key): the stack's version
    /// they were resolved at and when the resolution is done (wall clock: the cost is paid
    /// in real time). See `sim::heat::stack_routes::output_cost`.
    pub resolved_outputs: HashMap<(usize, String), (String, std::time::Instant)>,
    /// Heat's software configs and deployments (`deployments.rs`).
    pub sw_configs: Vec<deployments::SimConfig>,
    pub sw_deployments: Vec<deployments::SimDeployment>,
    /// Slow resources beside node groups in their stacks (`siblings.rs`).
    pub siblings: Vec<siblings::Sibling>,
}

impl World {
    pub fn new(clock: SimClock, seed: u64, cfg: WorldConfig) -> World {
        World {
            clock,
            ids: Ids::new(seed),
            cfg,
            stacks: Vec::new(),
            by_id: HashMap::new(),
            by_name: HashMap::new(),
            seq: 0,
            groups: Vec::new(),
            clusters: Vec::new(),
            templates: Vec::new(),
            server_order: BTreeSet::new(),
            servers: HashMap::new(),
            type_cache: HashMap::new(),
            virtual_now: None,
            last_event_ms: i64::MIN,
            resolved_outputs: HashMap::new(),
            sw_configs: Vec::new(),
            sw_deployments: Vec::new(),
            siblings: Vec::new(),
        }
    }

    pub fn now(&self) -> i64 {
        self.virtual_now.unwrap_or_else(|| self.clock.now_ms())
    }

    /// Runs `f` as if at `at` (when that is in the past and not before the newest event),
    /// so a member that was due between two ticks gets its events at its own time.
    pub fn at_time<T>(&mut self, at: i64, f: impl FnOnce(&mut World) -> T) -> T {
        let now = self.now();
        let t = at.max(self.last_event_ms).min(now);
        let saved = self.virtual_now.replace(t);
        let r = f(self);
        self.virtual_now = saved;
        r
    }

    /// Moves every timestamp by `delta` ms: a scenario builds its history on a virtual
    /// timeline and then slides it so that its end is "now".
    pub fn shift_times(&mut self, delta: i64) {
        self.shift_deployments(delta);
        if self.last_event_ms != i64::MIN {
            self.last_event_ms += delta;
        }
        let sh = |t: &mut i64| {
            if *t != i64::MAX {
                *t += delta
            }
        };
        for st in self.stacks.iter_mut().flatten() {
            sh(&mut st.created_ms);
            if let Some(u) = st.updated_ms.as_mut() {
                sh(u);
            }
            for r in &mut st.resources {
                sh(&mut r.created_ms);
                sh(&mut r.updated_ms);
            }
            for e in &mut st.events {
                sh(&mut e.time_ms);
            }
        }
        for g in &mut self.groups {
            sh(&mut g.created_ms);
            for m in g.members.values_mut() {
                sh(&mut m.created_ms);
                sh(&mut m.since_ms);
                match &mut m.phase {
                    Phase::Running { due, .. } => sh(due),
                    Phase::Starting { at, .. } => sh(at),
                    _ => {}
                }
            }
        }
        for c in &mut self.clusters {
            sh(&mut c.created_ms);
            if let Some(u) = c.updated_ms.as_mut() {
                sh(u);
            }
        }
        for t in &mut self.templates {
            sh(&mut t.created_ms);
        }
        let servers: Vec<(String, ServerRef)> = self.servers.drain().collect();
        self.server_order.clear();
        for (id, mut r) in servers {
            sh(&mut r.created_ms);
            self.register_server(&id, r);
        }
    }

    /// Interns type and resource names so thousands of resources share one allocation.
    pub fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.type_cache.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        // Member names ("0".."9999") are interned too; bounded by the largest group.
        self.type_cache.insert(s.to_string(), a.clone());
        a
    }

    pub fn add_stack(&mut self, stack: Stack) -> usize {
        let ix = self.stacks.len();
        self.by_id.insert(stack.id.clone(), ix);
        self.by_name.insert(stack.name.clone(), ix);
        self.stacks.push(Some(stack));
        ix
    }

    /// Deleted stacks disappear from the API (Heat soft-deletes them; they are not listed).
    pub fn remove_stack(&mut self, ix: usize) {
        if let Some(s) = self.stacks.get_mut(ix).and_then(Option::take) {
            self.by_id.remove(&s.id);
            self.by_name.remove(&s.name);
        }
    }

    /// A deleted stack: gone from the name lookup and the list, still shown by id (Heat
    /// soft-deletes); its nested group stack disappears.
    pub fn mark_deleted(&mut self, ix: usize) {
        let now = self.now();
        let nested: Vec<usize> = self
            .stack(ix)
            .map(|s| s.resources.iter().filter_map(|r| r.nested).collect())
            .unwrap_or_default();
        for n in nested {
            self.remove_stack(n);
        }
        if let Some(s) = self.stacks.get_mut(ix).and_then(Option::as_mut) {
            s.deleted_ms = Some(now);
            s.resources.clear();
            let name = s.name.clone();
            self.by_name.remove(&name);
        }
    }

    /// How many stack slots there are (deleted stacks keep theirs, as `None`).
    pub fn stack_count(&self) -> usize {
        self.stacks.len()
    }

    pub fn stack(&self, ix: usize) -> Option<&Stack> {
        self.stacks.get(ix).and_then(Option::as_ref)
    }

    pub fn stack_mut(&mut self, ix: usize) -> Option<&mut Stack> {
        self.stacks.get_mut(ix).and_then(Option::as_mut)
    }

    pub fn stacks(&self) -> impl Iterator<Item = (usize, &Stack)> {
        self.stacks
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
    }

    pub fn stack_by_id(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub fn stack_by_name(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Heat accepts either a name or an id where a stack identity is expected.
    pub fn find_stack(&self, name_or_id: &str) -> Option<usize> {
        self.stack_by_name(name_or_id)
            .or_else(|| self.stack_by_id(name_or_id))
    }

    /// The chain from the root stack down to `ix` (root first).
    pub fn root_of(&self, mut ix: usize) -> usize {
        while let Some(p) = self.stack(ix).and_then(|s| s.parent) {
            ix = p;
        }
        ix
    }

    /// `ix` and its nested stacks down to `depth` levels, parents before children.
    pub fn nested_stacks(&self, ix: usize, depth: u32) -> Vec<(usize, u32)> {
        let mut out = vec![(ix, 0)];
        let mut i = 0;
        while i < out.len() {
            let (s, d) = out[i];
            i += 1;
            if d >= depth {
                continue;
            }
            if let Some(st) = self.stack(s) {
                for r in &st.resources {
                    if let Some(n) = r.nested {
                        if self.stack(n).is_some() {
                            out.push((n, d + 1));
                        }
                    }
                }
            }
        }
        out
    }

    /// Events emitted so far, purged ones included (benchmarks compare what clients saw).
    pub fn events_emitted(&self) -> u64 {
        self.seq
    }

    /// Records an event on a stack, purging the oldest ones beyond `max_events_per_stack`
    /// the way Heat does (a batch at a time), so memory stays bounded however long it runs.
    pub fn emit(
        &mut self,
        stack_ix: usize,
        resource: Option<&str>,
        status: Status,
        reason: impl Into<Box<str>>,
    ) {
        let now = self.now().max(self.last_event_ms);
        self.last_event_ms = now;
        let id = self.ids.uuid_bits();
        self.seq += 1;
        let seq = self.seq;
        let max = self.cfg.max_events_per_stack.max(1);
        // Heat deletes `event_purge_batch_size` (200) rows once over the limit; scaled
        // down for small limits so some history always remains.
        let batch = (max / 5).clamp(1, 200);
        let stack_type = self.intern("OS::Heat::Stack");
        let Some(st) = self.stack(stack_ix) else {
            return;
        };
        let creating = status == Status::new(Action::Create, State::InProgress);
        let (name, rtype, phys) =
            match resource.and_then(|r| st.resources.iter().find(|x| &*x.name == r)) {
                // While a resource is being created Heat has no resource_id yet and
                // records its physical resource name (a nested stack's name), as the
                // captured events show.
                Some(r) if creating && r.nested.is_some() => {
                    let nested = r.nested.and_then(|n| self.stack(n)).map(|n| n.name.clone());
                    (
                        r.name.clone(),
                        r.rtype.clone(),
                        nested.unwrap_or_default().into_boxed_str(),
                    )
                }
                Some(r) if creating && &*r.rtype == "OS::Nova::Server" => {
                    let short: String = r
                        .physical_id
                        .chars()
                        .filter(|c| *c != '-')
                        .take(12)
                        .collect();
                    let n = format!("{}-{}-{short}", st.name, r.name);
                    (r.name.clone(), r.rtype.clone(), n.into_boxed_str())
                }
                Some(r) => (
                    r.name.clone(),
                    r.rtype.clone(),
                    r.physical_id.clone().into_boxed_str(),
                ),
                None => (
                    Arc::from(st.name.as_str()),
                    stack_type,
                    st.id.clone().into_boxed_str(),
                ),
            };
        let Some(st) = self.stacks.get_mut(stack_ix).and_then(Option::as_mut) else {
            return;
        };
        st.events.push_back(Event {
            seq,
            id,
            time_ms: now,
            resource_name: name,
            rtype,
            physical_id: phys,
            status,
            reason: reason.into(),
        });
        if st.events.len() > max {
            let n = batch.max(st.events.len() - max);
            st.events.drain(..n.min(st.events.len()));
        }
    }

    /// Sets a stack's status and emits its stack-level event with Heat's reason text.
    pub fn set_stack_status(&mut self, ix: usize, status: Status, reason: String) {
        let now = self.now();
        if let Some(st) = self.stack_mut(ix) {
            st.status = status;
            st.reason = reason.clone();
            // Heat sets `updated_time` when it begins an action other than a create (an
            // update, a rollback, a check), not when it ends one: a stack's `updated_time`
            // names the action it runs or ran last.
            if status.action != Action::Create && status.state == State::InProgress {
                st.updated_ms = Some(now);
            }
        }
        self.emit(ix, None, status, reason);
    }

    /// Sets a resource's status and emits its event.
    pub fn set_resource_status(&mut self, ix: usize, name: &str, status: Status, reason: &str) {
        let now = self.now();
        if let Some(r) = self.stack_mut(ix).and_then(|s| s.resource_mut(name)) {
            r.status = status;
            r.reason = reason.to_string();
            r.updated_ms = now;
        } else {
            return;
        }
        self.emit(ix, Some(name), status, reason);
    }

    pub fn register_server(&mut self, id: &str, r: ServerRef) {
        self.server_order
            .insert((Reverse(r.created_ms), Reverse(id.to_string())));
        self.servers.insert(id.to_string(), r);
    }

    pub fn unregister_server(&mut self, id: &str) {
        if let Some(r) = self.servers.remove(id) {
            self.server_order
                .remove(&(Reverse(r.created_ms), Reverse(id.to_string())));
        }
    }

    /// The groups whose group resource sits in stack `ix` (caldera's node-group stacks hold
    /// one, Magnum's cluster stack its default masters and workers), in creation order.
    pub fn stack_groups(&self, ix: usize) -> Vec<usize> {
        (0..self.groups.len())
            .filter(|g| self.groups[*g].ng_stack == ix)
            .collect()
    }

    /// The group of stack `ix` whose ResourceGroup is the resource `name`.
    pub fn group_by_resource(&self, ix: usize, name: &str) -> Option<usize> {
        self.stack_groups(ix)
            .into_iter()
            .find(|g| self.groups[*g].layout.resource() == name)
    }

    pub fn cluster_by_ident(&self, ident: &str) -> Option<usize> {
        self.clusters
            .iter()
            .position(|c| c.uuid == ident)
            .or_else(|| self.clusters.iter().position(|c| c.name == ident))
    }

    /// Advances every node group to the current simulated time.
    pub fn tick(&mut self) {
        for g in 0..self.groups.len() {
            if self.groups[g].op.is_some() {
                group::tick(self, g);
            }
        }
        siblings::tick(self);
    }
}

/// Heat's message when a stack is not found.
pub fn stack_not_found(ident: &str) -> String {
    format!("The Stack ({ident}) could not be found.")
}

/// Reasons Heat writes on stacks.
pub fn started(action: Action) -> String {
    format!("Stack {} started", action.as_str())
}
pub fn completed(action: Action) -> String {
    format!("Stack {} completed successfully", action.as_str())
}

pub const STATE_CHANGED: &str = "state changed";

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn cfg(max_events: usize) -> WorldConfig {
        WorldConfig {
            project_id: "p".into(),
            project_name: "demo".into(),
            user_id: "u".into(),
            user_name: "operator".into(),
            max_events_per_stack: max_events,
            create_median_ms: 1000.0,
            update_median_ms: 1000.0,
            duration_sigma: 0.3,
            leaf_delay_ms: 0,
            floating_ips: false,
        }
    }

    #[test]
    fn events_are_purged_in_batches() {
        let mut w = World::new(SimClock::new(0, 1.0), 1, cfg(10));
        let ix = w.add_stack(Stack {
            id: "id".into(),
            name: "s".into(),
            parent: None,
            owner_resource: None,
            status: Status::new(Action::Create, State::Complete),
            reason: String::new(),
            created_ms: 0,
            updated_ms: None,
            deleted_ms: None,
            params: BTreeMap::new(),
            hidden_params: Default::default(),
            param_types: Default::default(),
            description: String::new(),
            tags: vec![],
            disable_rollback: true,
            timeout_mins: None,
            environment: serde_json::json!({}),
            previous_environment: None,
            resources: vec![],
            events: Default::default(),
            outputs: vec![],
            role: StackRole::Cluster(0),
        });
        for _ in 0..25 {
            w.emit(
                ix,
                None,
                Status::new(Action::Update, State::InProgress),
                "x",
            );
        }
        let n = w.stack(ix).unwrap().events.len();
        assert!((5..=10).contains(&n), "{n}");
        assert_eq!(w.stack(ix).unwrap().events.back().unwrap().seq, 25);
    }
}
