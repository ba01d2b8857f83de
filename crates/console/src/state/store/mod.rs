//! The data the console holds: one slot per thing fetched, each with its fetch
//! bookkeeping (generation, in flight, when, error), so stale answers are dropped,
//! refreshes coalesce and errors are shown where the data would be.

pub mod models;

use crate::drivers::leftover_hooks::LeftoverHook;
use crate::message::RolloutDriver;
use crate::model::{
    Cluster, Node, NodeGroup, NodeKey, ServerTarget, StackEvent, StackResource, StackSummary,
};
use crate::ops::hooks::PendingHook;
use crate::ops::stuck::{assess_with_inferred, Assessment, Entry};
use crate::rollout::observed::ObservedUpdate;
use crate::rollout::progress::DriverInfo;
use crate::rollout::{RolloutPlan, RolloutState, RolloutStatus};
use crate::service::fleet_scan::{FleetReport, FleetRow};
use crate::service::{EventCursor, NodeUpdate, ServiceResult};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::time::Duration;

/// Fetch bookkeeping shared by every slot.
#[derive(Debug, Clone, Default)]
pub struct FetchMeta {
    /// The generation of the newest request; answers with another generation are stale.
    pub gen: u64,
    pub in_flight: bool,
    /// When data last arrived.
    pub fetched_at: Option<DateTime<Utc>>,
    /// When a request was last started.
    pub attempted_at: Option<DateTime<Utc>>,
    /// The last request's error (data, if any, is then stale).
    pub error: Option<String>,
    /// Bumped on every change of the data.
    pub version: u64,
    /// Stale answers dropped (for tests and the log).
    pub dropped: u64,
    /// How often this data is asked for when not the console's refresh interval (the
    /// fleet's scan of every cloud: once a minute); what an error box says it retries at.
    pub every: Option<Duration>,
}

impl FetchMeta {
    /// Whether a periodic refresh should start now (one pending request at most).
    pub fn due(&self, now: DateTime<Utc>, every: Duration) -> bool {
        if self.in_flight {
            // A request that never answered (a lost task) does not block refreshes forever.
            return self
                .attempted_at
                .is_some_and(|t| (now - t).num_seconds() > 120);
        }
        match self.attempted_at {
            None => true,
            Some(t) => (now - t).to_std().map(|d| d >= every).unwrap_or(false),
        }
    }

    pub fn begin(&mut self, gen: u64, now: DateTime<Utc>) {
        self.gen = gen;
        self.in_flight = true;
        self.attempted_at = Some(now);
    }

    /// Whether an answer of generation `gen` is current; counts the dropped ones.
    pub fn accept(&mut self, gen: u64) -> bool {
        if gen != self.gen {
            self.dropped += 1;
            tracing::debug!(gen, current = self.gen, "dropping stale answer");
            return false;
        }
        true
    }

    /// End the request of generation `gen` without recording anything; false if stale.
    pub fn end(&mut self, gen: u64) -> bool {
        if !self.accept(gen) {
            return false;
        }
        self.in_flight = false;
        true
    }

    /// The one bookkeeping of an answer of generation `gen`: stale ones are dropped
    /// (counted), a current one ends the request and is recorded (see [`FetchMeta::record`]).
    pub fn settle<T>(
        &mut self,
        gen: u64,
        result: ServiceResult<T>,
        now: DateTime<Utc>,
    ) -> Settled<T> {
        if !self.end(gen) {
            return Settled::Stale;
        }
        match self.record(result, now) {
            Some(v) => Settled::Fresh(v),
            None => Settled::Failed,
        }
    }

    /// Record an answer that needs no generation (a status an engine pushes): the data
    /// changed, and it either arrived (error cleared) or failed (error kept, data stale).
    pub fn record<T>(&mut self, result: ServiceResult<T>, now: DateTime<Utc>) -> Option<T> {
        self.version += 1;
        match result {
            Ok(v) => {
                self.error = None;
                self.fetched_at = Some(now);
                Some(v)
            }
            Err(e) => {
                self.error = Some(e.message);
                None
            }
        }
    }

    pub fn is_loading(&self) -> bool {
        self.in_flight && self.fetched_at.is_none()
    }
}

/// What became of an answer (see [`FetchMeta::settle`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Settled<T> {
    /// Another request superseded it: dropped.
    Stale,
    /// It was an error, now in `meta.error`.
    Failed,
    Fresh(T),
}

/// A fetched value.
#[derive(Debug, Clone)]
pub struct Slot<T> {
    pub meta: FetchMeta,
    pub data: Option<T>,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot {
            meta: FetchMeta::default(),
            data: None,
        }
    }
}

impl<T> Slot<T> {
    /// Apply an answer; false if it was stale.
    pub fn finish(&mut self, gen: u64, result: ServiceResult<T>, now: DateTime<Utc>) -> bool {
        match self.meta.settle(gen, result, now) {
            Settled::Stale => false,
            Settled::Failed => true,
            Settled::Fresh(v) => {
                self.data = Some(v);
                true
            }
        }
    }
}

/// A node as the nodes table shows it: the node and its address lookup failure.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeRow {
    pub node: Node,
    /// Every address of the node, the first (`node.ip`) first: a later source adds its
    /// floating IP or its address on another network to the same row.
    pub addresses: Vec<String>,
    pub ip_error: Option<String>,
    /// When the node's status last changed while we watched (rows flash for a moment).
    pub changed_at: Option<DateTime<Utc>>,
}

/// The nodes of one node group as they stream in.
#[derive(Debug, Clone, Default)]
pub struct NodeSet {
    pub meta: FetchMeta,
    pub rows: Vec<NodeRow>,
    index: HashMap<String, usize>,
    pub ips_ok: usize,
    pub ips_failed: usize,
    /// Every member has been tried in the current stream.
    pub done: bool,
    pub has_members: bool,
    /// What the rows' member list did not carry yet (`NodeUpdate::Listed`): the rows keep
    /// what the list before knew, so this is only ever set before the first full list.
    pub pending: Pending,
    /// A full member list (`Members`) or the stream's end has been seen. Not derivable from
    /// `meta.fetched_at` or `has_members`: every member list, provisional too, sets those.
    known: bool,
    /// Bumped when addresses or server names fill in (the structure `meta.version` does
    /// not move: rows keep their place unless a sort or filter looks at what changed).
    pub fill_version: u64,
    /// Nodes read from Nova (Cluster API): servers per state and since when unchanged,
    /// over the looks so far (see `ops::capi_stall`).
    pub progress: Option<crate::ops::capi_stall::Progress>,
    /// The node group these nodes are members of, as first asked for (the model reads its
    /// image; its cluster's list, when it has it, says it newer).
    pub nodegroup: Option<NodeGroup>,
}

/// What a provisional member list (`NodeUpdate::Listed`) does not carry yet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pending {
    /// The hook marks (the stream's hook lookup has not answered).
    pub marks: bool,
    /// Nova's images (they come at the end of the addresses).
    pub images: bool,
}

impl Pending {
    /// What either of two node sets is missing (the dashboard shows several as one).
    pub fn or(self, other: Pending) -> Pending {
        Pending {
            marks: self.marks || other.marks,
            images: self.images || other.images,
        }
    }
}

impl NodeSet {
    pub fn apply(
        &mut self,
        gen: u64,
        update: ServiceResult<NodeUpdate>,
        now: DateTime<Utc>,
    ) -> bool {
        if !self.meta.accept(gen) {
            return false;
        }
        match update {
            Err(e) => {
                self.meta.error = Some(e.message);
                self.pending = Pending::default();
                self.meta.in_flight = false;
                self.meta.version += 1;
            }
            Ok(NodeUpdate::Members(nodes)) => {
                self.known = true;
                self.members(nodes, Pending::default(), now)
            }
            Ok(NodeUpdate::Listed { nodes, marks }) => {
                let pending = Pending {
                    marks: !marks,
                    images: true,
                };
                self.members(nodes, pending, now)
            }
            Ok(NodeUpdate::Address(addr)) => {
                if let Some(&i) = self.index.get(&addr.member) {
                    let row = &mut self.rows[i];
                    if row.node.ip.is_none() {
                        self.ips_ok += 1;
                    }
                    if row.ip_error.take().is_some() {
                        self.ips_failed = self.ips_failed.saturating_sub(1);
                    }
                    row.node.ip = addr.addresses.first().cloned();
                    // The member's whole set: a later source's addresses replace the row's.
                    row.addresses = addr.addresses;
                    if let Some(name) = addr.name {
                        row.node.name = name;
                    }
                    self.fill_version += 1;
                }
            }
            Ok(NodeUpdate::Named { member, name }) => {
                if let Some(&i) = self.index.get(&member) {
                    self.rows[i].node.name = name;
                    self.fill_version += 1;
                }
            }
            Ok(NodeUpdate::AddressFailed { member, error }) => {
                if let Some(&i) = self.index.get(&member) {
                    let row = &mut self.rows[i];
                    if row.ip_error.is_none() && row.node.ip.is_none() {
                        self.ips_failed += 1;
                    }
                    if row.node.ip.is_none() {
                        row.ip_error = Some(error.message);
                    }
                    self.fill_version += 1;
                }
            }
            Ok(NodeUpdate::Done) => {
                self.done = true;
                self.known = true;
                self.pending = Pending::default();
                self.meta.in_flight = false;
                self.meta.fetched_at = Some(now);
                self.fill_version += 1;
            }
        }
        true
    }

    /// A member list replaces the rows; what the list does not say yet (an address, a
    /// server name, and what is `pending`: the hook mark, the image) is kept from the row
    /// before.
    fn members(&mut self, nodes: Vec<Node>, pending: Pending, now: DateTime<Utc>) {
        let old: HashMap<String, NodeRow> = self
            .rows
            .drain(..)
            .map(|r| (r.node.key.member.clone(), r))
            .collect();
        let first = !self.has_members;
        // A refresh's rows keep what the list before knew: nothing is missing.
        self.pending = if self.known {
            Pending::default()
        } else {
            pending
        };
        self.rows = nodes
            .into_iter()
            .map(|mut n| {
                let mut ip_error = None;
                let mut changed_at = None;
                let mut addresses: Vec<String> = n.ip.iter().cloned().collect();
                if let Some(prev) = old.get(&n.key.member) {
                    if n.ip.is_none() {
                        n.ip = prev.node.ip.clone();
                        ip_error = prev.ip_error.clone();
                    }
                    if n.ip == prev.node.ip {
                        addresses.clone_from(&prev.addresses);
                    }
                    // A re-sent member list names members by their resource name; a
                    // server name learned from the address stream stays.
                    if n.name == n.key.member {
                        n.name.clone_from(&prev.node.name);
                    }
                    if pending.marks {
                        n.hook_paused = prev.node.hook_paused;
                        n.hook_inferred = prev.node.hook_inferred;
                    }
                    if pending.images && n.image.is_none() {
                        n.image.clone_from(&prev.node.image);
                    }
                    changed_at =
                        if prev.node.status != n.status || prev.node.hook_paused != n.hook_paused {
                            Some(now)
                        } else {
                            prev.changed_at
                        };
                } else if !first {
                    changed_at = Some(now);
                }
                NodeRow {
                    node: n,
                    addresses,
                    ip_error,
                    changed_at,
                }
            })
            .collect();
        self.index = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.node.key.member.clone(), i))
            .collect();
        self.recount();
        let looks: Vec<_> = self
            .rows
            .iter()
            .filter_map(|r| crate::ops::capi_stall::ServerLook::of_node(&r.node))
            .collect();
        if !looks.is_empty() {
            self.progress = Some(crate::ops::capi_stall::Progress::next(
                self.progress.as_ref(),
                &looks,
                now,
            ));
        }
        self.has_members = true;
        self.done = false;
        self.meta.error = None;
        self.meta.fetched_at = Some(now);
        self.meta.version += 1;
    }

    /// The stream ended (possibly without `Done`).
    pub fn ended(&mut self, gen: u64) {
        if gen == self.meta.gen {
            self.meta.in_flight = false;
        }
    }

    fn recount(&mut self) {
        self.ips_ok = self.rows.iter().filter(|r| r.node.ip.is_some()).count();
        self.ips_failed = self
            .rows
            .iter()
            .filter(|r| r.node.ip.is_none() && r.ip_error.is_some())
            .count();
    }
}

/// The event tail of one stack.
#[derive(Debug, Clone, Default)]
pub struct EventLog {
    pub meta: FetchMeta,
    pub events: Vec<StackEvent>,
    pub cursor: EventCursor,
    /// Since when polls have failed in a row, and how many: the follower keeps its cursor
    /// and polls again after `ops::event_tracker::reconnect_delay(failures)`.
    pub outage_since: Option<DateTime<Utc>>,
    pub failures: u32,
}

/// At most this many events are kept per stack (oldest dropped).
pub const EVENT_CAP: usize = 20_000;

impl EventLog {
    pub fn finish(
        &mut self,
        gen: u64,
        result: ServiceResult<(Vec<StackEvent>, EventCursor)>,
        now: DateTime<Utc>,
    ) -> bool {
        if !self.meta.accept(gen) {
            return false;
        }
        self.meta.in_flight = false;
        match result {
            Ok((new, cursor)) => {
                self.cursor = cursor;
                self.outage_since = None;
                self.failures = 0;
                self.meta.error = None;
                self.meta.fetched_at = Some(now);
                if !new.is_empty() {
                    self.events.extend(new);
                    if self.events.len() > EVENT_CAP {
                        let extra = self.events.len() - EVENT_CAP;
                        self.events.drain(..extra);
                    }
                    self.meta.version += 1;
                }
            }
            Err(e) => {
                self.outage_since.get_or_insert(now);
                self.failures = self.failures.saturating_add(1);
                self.meta.error = Some(e.message);
                self.meta.version += 1;
            }
        }
        true
    }

    /// The status line's word on the follower after an answer: reconnecting (for how long,
    /// next try when) or back. `was_since` is the outage start before the answer.
    pub fn outage_note(
        &self,
        was_since: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Option<(bool, String)> {
        match (was_since, self.outage_since) {
            (_, Some(since)) => Some((
                true,
                format!(
                    "reconnecting for {} s (next try in {} s): {}",
                    (now - since).num_seconds().max(0),
                    crate::ops::event_tracker::reconnect_delay(self.failures).as_secs(),
                    self.meta.error.as_deref().unwrap_or("poll failed")
                ),
            )),
            (Some(since), None) => Some((
                false,
                format!(
                    "reconnected after {} s; following again",
                    (now - since).num_seconds().max(0)
                ),
            )),
            (None, None) => None,
        }
    }
}

/// One line of the stack tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeRow {
    pub depth: usize,
    /// Box-drawing prefix (`│ ├─ `).
    pub prefix: String,
    pub resource: StackResource,
    /// `nodes > 17 > server`.
    pub path: String,
    /// The Heat hook this resource is held on (`pre-update`), if any.
    pub hook: Option<String>,
}

/// The stack tree with its why-stuck analysis.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeData {
    pub rows: Vec<TreeRow>,
    /// Why the stack is not done: causes (indices into `rows`) and hook-held members; see
    /// [`crate::ops::stuck`]. Re-read whenever the tree or the stack's events change.
    pub stuck: Assessment,
    /// Members held on a hook whose pause events Heat purged, inferred when the tree was
    /// read (no event can show them); a newer event of theirs (a release) wins.
    pub inferred_holds: Vec<PendingHook>,
    /// Hooks the stack's environment keeps with no update running, as the tree read found
    /// them: each holds a group's members in the stack's next update.
    pub leftover_hooks: Vec<LeftoverHook>,
}

impl TreeData {
    /// The tree with the holds inferred at its read, assessed again with them.
    pub fn with_inferred_holds(mut self, holds: Vec<PendingHook>, events: &[StackEvent]) -> Self {
        self.inferred_holds = holds;
        self.reassess(events);
        self
    }

    /// Assess the tree again with the stack's events (oldest first); marks hook-held rows.
    pub fn reassess(&mut self, events: &[StackEvent]) {
        let entries: Vec<Entry> = self
            .rows
            .iter()
            .map(|r| Entry {
                path: &r.path,
                resource: &r.resource,
            })
            .collect();
        let stuck = assess_with_inferred(&entries, events, &self.inferred_holds);
        for (i, row) in self.rows.iter_mut().enumerate() {
            row.hook = stuck.held.get(&i).cloned();
        }
        self.stuck = stuck;
    }
}

/// How many causes of a tree get their Nova server fetched (each a `server show` and a
/// console log): the first ones are what the panel shows.
pub const TREE_SERVERS: usize = 2;

/// The key a cause's server is stored under: the tree's stack and the resource's path (a
/// node detail keys by node group and member; these never collide with a path).
pub fn tree_server_key(stack_id: &str, path: &str) -> NodeKey {
    NodeKey {
        nodegroup: stack_id.to_string(),
        member: path.to_string(),
    }
}

/// The Nova servers to ask about: the first causes that are `OS::Nova::Server`s.
pub fn tree_servers(stack_id: &str, tree: &TreeData) -> Vec<ServerTarget> {
    tree.stuck
        .causes
        .iter()
        .take(TREE_SERVERS)
        .filter_map(|c| {
            let row = tree.rows.get(c.index)?;
            Some(ServerTarget {
                key: tree_server_key(stack_id, &row.path),
                name: row.path.clone(),
                server_id: Some(c.server_id.clone()?),
                member_stack: None,
                group_stack: None,
            })
        })
        .collect()
}

/// Build the tree (depth-first, parents before children) from a flat resource list.
/// `events` are the stack's (nested) events as followed so far, oldest first.
pub fn build_tree(root_id: &str, resources: Vec<StackResource>, events: &[StackEvent]) -> TreeData {
    let mut children: HashMap<String, Vec<usize>> = HashMap::new();
    let mut known_stacks: std::collections::HashSet<String> = std::collections::HashSet::new();
    known_stacks.insert(root_id.to_string());
    for r in &resources {
        if let Some(n) = &r.nested {
            known_stacks.insert(n.id.clone());
        }
    }
    for (i, r) in resources.iter().enumerate() {
        let owner = r
            .owner
            .as_ref()
            .map(|o| o.id.clone())
            .filter(|id| known_stacks.contains(id))
            .unwrap_or_else(|| root_id.to_string());
        children.entry(owner).or_default().push(i);
    }
    for list in children.values_mut() {
        list.sort_by(|&a, &b| {
            let (ra, rb) = (&resources[a], &resources[b]);
            match (ra.name.parse::<u64>(), rb.name.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                _ => ra.name.cmp(&rb.name),
            }
        });
    }
    let mut order: Vec<(usize, usize, String, String)> = Vec::with_capacity(resources.len());
    let mut visited = std::collections::HashSet::new();
    walk(
        root_id,
        0,
        "",
        "",
        &children,
        &resources,
        &mut visited,
        &mut order,
    );
    let mut slots: Vec<Option<StackResource>> = resources.into_iter().map(Some).collect();
    let mut rows: Vec<TreeRow> = Vec::with_capacity(order.len());
    let mut row_of: HashMap<usize, usize> = HashMap::new();
    for (i, depth, prefix, path) in order {
        if let Some(r) = slots.get_mut(i).and_then(Option::take) {
            row_of.insert(i, rows.len());
            rows.push(TreeRow {
                depth,
                prefix,
                resource: r,
                path,
                hook: None,
            });
        }
    }
    // Resources never reached (cycles, unknown owners) go at the end, flat.
    for r in slots.into_iter().flatten() {
        let path = r.name.clone();
        rows.push(TreeRow {
            depth: 0,
            prefix: "?─ ".into(),
            resource: r,
            path,
            hook: None,
        });
    }
    let mut tree = TreeData {
        rows,
        stuck: Assessment::default(),
        inferred_holds: vec![],
        leftover_hooks: vec![],
    };
    tree.reassess(events);
    tree
}

#[allow(clippy::too_many_arguments)]
fn walk(
    stack_id: &str,
    depth: usize,
    indent: &str,
    path: &str,
    children: &HashMap<String, Vec<usize>>,
    resources: &[StackResource],
    visited: &mut std::collections::HashSet<String>,
    out: &mut Vec<(usize, usize, String, String)>,
) {
    if depth > 32 || !visited.insert(stack_id.to_string()) {
        return;
    }
    let Some(kids) = children.get(stack_id) else {
        return;
    };
    for (k, &i) in kids.iter().enumerate() {
        let last = k + 1 == kids.len();
        let r = &resources[i];
        let p = if path.is_empty() {
            r.name.clone()
        } else {
            format!("{path} > {}", r.name)
        };
        out.push((
            i,
            depth,
            format!("{indent}{}", if last { "└─ " } else { "├─ " }),
            p.clone(),
        ));
        if let Some(n) = &r.nested {
            let child_indent = format!("{indent}{}", if last { "   " } else { "│  " });
            walk(
                &n.id,
                depth + 1,
                &child_indent,
                &p,
                children,
                resources,
                visited,
                out,
            );
        }
    }
}

/// Everything fetched, by key.
#[derive(Debug, Default)]
pub struct Store {
    pub clusters: Slot<Vec<Cluster>>,
    /// One cluster read alone, by cluster id: a settle burst follows the cluster it acted
    /// on this way (the list costs requests for every cluster); each answer patches the
    /// cluster's row in `clusters`, and its `fetched_at` says when that row was read.
    pub cluster_reads: HashMap<String, FetchMeta>,
    /// Clusters read alone that no list holds (a plain stack seen as a cluster), by id.
    pub clusters_alone: HashMap<String, Cluster>,
    pub stacks: Slot<Vec<StackSummary>>,
    /// By cluster id.
    pub nodegroups: HashMap<String, Slot<Vec<NodeGroup>>>,
    /// By node group id.
    pub nodes: HashMap<String, NodeSet>,
    /// By stack id.
    pub events: HashMap<String, EventLog>,
    /// By stack id.
    pub trees: HashMap<String, Slot<TreeData>>,
    /// Node details (Nova servers), by the node they were opened from.
    pub servers: HashMap<crate::model::NodeKey, Slot<crate::model::ServerDetail>>,
    /// Stack names learnt from the workers, by id.
    pub stack_names: HashMap<String, String>,
    /// Rollouts by node group id.
    pub rollouts: HashMap<String, RolloutSlot>,
    pub journal: JournalLog,
    /// The clusters of every cloud (the fleet view).
    pub fleet: FleetLog,
    /// Stack outputs (keys and descriptions), by stack id.
    pub outputs: HashMap<String, Slot<Vec<crate::service::StackOutput>>>,
    /// Evaluated stack outputs, by (stack id, output key).
    pub output_values: HashMap<(String, String), Slot<crate::service::ResolvedOutput>>,
    /// Stack details (`stack show`, outputs list, template), by stack id.
    pub stack_details: HashMap<String, Slot<crate::service::StackOverview>>,
    /// Resource details, by (owning stack id, resource name).
    pub resources: HashMap<(String, String), Slot<crate::service::ResourceDetail>>,
    /// Progress and time in state, computed from the above once per change
    /// (`Store::refresh_models`).
    pub models: models::Models,
}

impl Store {
    /// A node's Nova server id: the listing's, else the one Nova gave when its detail was
    /// opened (a Heat member names its stack, not its server). What `y` copies, from the
    /// nodes pane and from the node's server view alike.
    pub fn server_id_of(
        &self,
        key: &crate::model::NodeKey,
        listed: Option<&String>,
    ) -> Option<String> {
        let asked = self
            .servers
            .get(key)
            .and_then(|slot| slot.data.as_ref())
            .map(|d| d.id.clone())
            .filter(|id| !id.is_empty());
        listed.cloned().or(asked)
    }

    /// An answer to a read of the one cluster `id`: a current one replaces the cluster's
    /// row in the list (the header's `workers N` and the counts follow), a stale one is
    /// dropped. A cluster not listed yet waits for the list.
    pub fn patch_cluster(
        &mut self,
        id: &str,
        gen: u64,
        result: ServiceResult<Cluster>,
        now: DateTime<Utc>,
    ) {
        let Some(meta) = self.cluster_reads.get_mut(id) else {
            return;
        };
        let Settled::Fresh(read) = meta.settle(gen, result, now) else {
            return;
        };
        let rows = self.clusters.data.as_mut();
        match rows.and_then(|cs| cs.iter_mut().find(|c| c.id == id)) {
            Some(row) => *row = read,
            None => {
                self.clusters_alone.insert(id.to_string(), read);
            }
        }
        self.clusters.meta.version += 1;
    }

    /// The error of the last read of cluster `id` alone, unless a list read that arrived
    /// after that read started has covered it.
    pub fn cluster_read_error(&self, id: &str) -> Option<&str> {
        let read = self.cluster_reads.get(id)?;
        let error = read.error.as_deref()?;
        let listed = self.clusters.meta.fetched_at;
        let covered = listed.zip(read.attempted_at).is_some_and(|(l, a)| l > a);
        (!covered).then_some(error)
    }

    /// When the row of cluster `id` in the list was last read: by the list, or alone.
    pub fn cluster_read_at(&self, id: &str) -> Option<DateTime<Utc>> {
        let alone = self.cluster_reads.get(id).and_then(|m| m.fetched_at);
        self.clusters.meta.fetched_at.max(alone)
    }

    /// The cluster as last listed: a view keeps the copy it was opened with, whose counts go
    /// stale as soon as a scale lands.
    pub fn current_cluster<'a>(&'a self, opened: &'a Cluster) -> &'a Cluster {
        self.clusters
            .data
            .as_deref()
            .and_then(|all| all.iter().find(|c| c.id == opened.id))
            .or_else(|| self.clusters_alone.get(&opened.id))
            .unwrap_or(opened)
    }

    /// The node group as last listed for its cluster (see [`Store::current_cluster`]).
    pub fn current_nodegroup<'a>(
        &'a self,
        cluster_id: &str,
        opened: &'a NodeGroup,
    ) -> &'a NodeGroup {
        self.nodegroups
            .get(cluster_id)
            .and_then(|slot| slot.data.as_deref())
            .and_then(|all| all.iter().find(|g| g.id == opened.id))
            .unwrap_or(opened)
    }
}

// ------------------------------------------------------------------ rollouts

impl Store {
    /// The ids of the rollouts an engine of this console drives: members Heat holds under
    /// one of their markers are held by this console's rollout, in any pane that reads them.
    pub fn rollouts_driven_here(&self) -> Vec<String> {
        self.rollouts
            .values()
            .filter(|r| r.driver == Some(RolloutDriver::Here))
            .filter_map(|r| r.status.as_ref().map(|s| s.id.clone()))
            .collect()
    }
}

/// What the console knows of one node group's rollout.
#[derive(Debug, Clone)]
pub struct RolloutSlot {
    pub cluster: Cluster,
    pub nodegroup: NodeGroup,
    pub plan: Option<RolloutPlan>,
    pub status: Option<RolloutStatus>,
    /// `None` until known.
    pub driver: Option<RolloutDriver>,
    /// `find_rollout` answered at least once.
    pub searched: bool,
    /// An update no caldera rollout drives, shown when `plan` is `None`.
    pub observed: Option<ObservedUpdate>,
    /// Magnum accepted an upgrade from this console: Heat may not have started it yet.
    pub expect_update: bool,
    /// Find / observe bookkeeping (and their last error).
    pub meta: FetchMeta,
}

impl RolloutSlot {
    pub(super) fn new(cluster: Cluster, nodegroup: NodeGroup) -> RolloutSlot {
        RolloutSlot {
            cluster,
            nodegroup,
            plan: None,
            status: None,
            driver: None,
            searched: false,
            observed: None,
            expect_update: false,
            meta: FetchMeta::default(),
        }
    }

    /// Another live process on this machine drives the rollout (its driver lock, as last
    /// read): controls are asked of it, never taken over.
    pub fn driven_by_live_process(&self) -> bool {
        self.driver == Some(RolloutDriver::Elsewhere)
            && matches!(
                self.status.as_ref().and_then(|s| s.driver.as_ref()),
                Some(DriverInfo::Process { .. })
            )
    }

    /// The machine Heat's marker says the rollout was started on, when it is not this one
    /// and no driver runs here: its driver there cannot be seen from here.
    pub fn started_on_other_machine(&self) -> Option<&str> {
        match self.status.as_ref().and_then(|s| s.driver.as_ref()) {
            Some(DriverInfo::Nobody {
                started_on: Some(host),
                ..
            }) => Some(host),
            _ => None,
        }
    }

    /// The one-line explanation under the header.
    pub fn note(&self) -> Option<String> {
        if let Some(u) = &self.observed {
            return Some(format!(
                "{}. p/R/x do not apply; {}",
                u.label(),
                u.abort_note()
            ));
        }
        match (self.driver, &self.status) {
            (Some(RolloutDriver::Elsewhere), Some(s))
                if !s.state.is_final() && self.driven_by_live_process() =>
            {
                Some(
                    "not driven by this console: another caldera on this machine drives it; \
                     p/R/s/x are passed to it"
                        .into(),
                )
            }
            (Some(RolloutDriver::Elsewhere), Some(s)) if !s.state.is_final() => {
                match self.started_on_other_machine() {
                    Some(host) => Some(format!(
                        "not driven by this console: started on {host}, whose driver cannot be \
                         seen from here; pause it there (or check it is gone) before resume (R) \
                         takes it over: two drivers release two nodes at once"
                    )),
                    None => Some(
                        "not driven by this console (another operator's, or from before a \
                         restart): resume (R) takes it over"
                            .into(),
                    ),
                }
            }
            // Paused after the last batch's nodes finished: the engine holds the last
            // batch's post hooks, gate and finish until resumed.
            (Some(RolloutDriver::Here), Some(s))
                if matches!(s.state, RolloutState::Paused { .. }) && s.remaining == 0 =>
            {
                Some(
                    "every node is updated; resume (R) runs the last batch's hooks and gate \
                     and finishes the rollout"
                        .into(),
                )
            }
            (_, None) if self.searched && self.plan.is_none() && self.expect_update => Some(
                "Magnum accepted the upgrade; waiting for Heat to start updating the node group"
                    .into(),
            ),
            (_, None) if self.searched && self.plan.is_none() => {
                Some("no rollout under way on this node group (u starts an upgrade)".into())
            }
            _ => None,
        }
    }

    pub fn nodes(&self) -> &[crate::rollout::NodeProgress] {
        self.status
            .as_ref()
            .map(|s| s.nodes.as_slice())
            .unwrap_or(&[])
    }
}

// ------------------------------------------------------------------ the journal

/// One journal line as a table row (entries have no id: their place in the journal is one).
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRow {
    pub seq: usize,
    pub entry: crate::journal::Entry,
}

#[derive(Debug, Clone, Default)]
pub struct JournalLog {
    pub meta: FetchMeta,
    pub rows: Vec<JournalRow>,
    /// Where the next read starts.
    pub offset: u64,
}

impl JournalLog {
    pub fn finish(
        &mut self,
        gen: u64,
        result: ServiceResult<(Vec<crate::journal::Entry>, u64)>,
        now: DateTime<Utc>,
    ) {
        if let Settled::Fresh((entries, next)) = self.meta.settle(gen, result, now) {
            for entry in entries {
                let seq = self.rows.len();
                self.rows.push(JournalRow { seq, entry });
            }
            self.offset = next;
        }
    }
}

// ------------------------------------------------------------------ the fleet

/// The clusters of every cloud in clouds.yaml, as the fleet view shows them.
#[derive(Debug, Clone, Default)]
pub struct FleetLog {
    pub meta: FetchMeta,
    pub rows: Vec<FleetRow>,
    /// Clouds that answered the scan under way (or the last one).
    pub answered: usize,
}

impl FleetLog {
    /// One cloud's answer: its rows replace the ones it gave last time, in place.
    pub fn answer(&mut self, gen: u64, report: &FleetReport, now: DateTime<Utc>) {
        if !self.meta.accept(gen) {
            return;
        }
        let fresh = report.rows(now);
        let at = self.rows.iter().position(|r| r.cloud == report.cloud);
        self.rows.retain(|r| r.cloud != report.cloud);
        let at = at.unwrap_or(self.rows.len()).min(self.rows.len());
        self.rows.splice(at..at, fresh);
        self.answered += 1;
        self.meta.version += 1;
        self.meta.fetched_at = Some(now);
    }

    /// The scan ended: every cloud answered, or there was nothing to ask.
    pub fn done(&mut self, gen: u64, result: ServiceResult<()>, now: DateTime<Utc>) {
        let fetched = self.meta.fetched_at;
        if let Settled::Fresh(()) = self.meta.settle(gen, result, now) {
            // Ending is not data: the age shown is the last cloud's answer.
            self.meta.fetched_at = fetched.or(Some(now));
        }
    }

    /// Clouds whose row says they gave no clusters (unreachable, refused, misconfigured).
    pub fn clouds_down(&self) -> usize {
        self.rows.iter().filter(|r| r.is_cloud_problem()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, StackRef, Status};

    /// A plain stack seen as a cluster is in no list: its read alone is what the dashboard
    /// and the settle burst go by, and its events are its own stack's once.
    #[test]
    fn a_plain_stack_read_alone_is_its_current_row_and_its_events_are_read_once() {
        let now = Utc::now();
        let opened = crate::service::plain_stack::cluster_of("s1", "app");
        let mut store = Store::default();
        store
            .cluster_reads
            .entry("s1".into())
            .or_default()
            .begin(1, now);
        let mut read = opened.clone();
        read.status = Status::parse("UPDATE_COMPLETE");
        read.node_count = 5;
        store.patch_cluster("s1", 1, Ok(read), now);
        let current = store.current_cluster(&opened);
        assert_eq!(
            (current.status.raw.as_str(), current.node_count),
            ("UPDATE_COMPLETE", 5)
        );

        let mut group = NodeGroup::of_stack("g1", "app_tier", Role::Other);
        group.stack_id = Some("g1".into());
        let ids: Vec<String> = crate::state::dashboard_stacks(&opened, &[group.clone()])
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, ["s1"]);
        // A cluster of caldera's own keeps its node groups' stacks (top-level stacks).
        let mut own = opened.clone();
        own.id = "c1".into();
        let ids: Vec<String> = crate::state::dashboard_stacks(&own, &[group])
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, ["s1", "g1"]);
    }

    /// One rollout holding two node groups of a cluster (a Magnum cluster's masters held
    /// beside its minions): each group's model is its own members' part of the rollout,
    /// and the cluster's sum counts the rollout once (was: `new 2/14 held 12` for 7 nodes).
    #[test]
    fn a_rollout_holding_two_node_groups_is_summed_once_for_their_cluster() {
        use crate::rollout::{NodeProgress, RolloutState, RolloutStatus};
        let now = Utc::now();
        let mut store = Store::default();
        let cluster = crate::service::plain_stack::cluster_of("c1", "one-image");
        let groups: Vec<NodeGroup> = ["masters", "minions"]
            .iter()
            .map(|n| {
                let mut g = NodeGroup::of_stack(n, n, Role::Other);
                g.cluster_id = "c1".into();
                g
            })
            .collect();
        store.nodegroups.insert(
            "c1".into(),
            Slot {
                meta: FetchMeta::default(),
                data: Some(groups.clone()),
            },
        );
        // Masters (held beside the target) are `kube_masters/N`, minions `N`; master 0 is
        // new, the rest held.
        let nodes: Vec<NodeProgress> = (0..7)
            .map(|i| {
                let name = match i {
                    0..3 => format!("kube_masters/{i}"),
                    _ => (i - 3).to_string(),
                };
                let mut n = NodeProgress::pending(&name, i);
                n.phase = match i {
                    0 => crate::rollout::NodePhase::Done,
                    _ => crate::rollout::NodePhase::Paused,
                };
                n
            })
            .collect();
        let mut status = RolloutStatus::new(
            "r1".into(),
            "one-image/kube_minions".into(),
            "minion_image=v2".into(),
            RolloutState::Running,
            nodes,
            7,
            now,
        );
        status.stack_status = "UPDATE_IN_PROGRESS".into();
        status.compute(now);
        let stack = StackRef {
            name: "one-image".into(),
            id: "s1".into(),
        };
        let minions: Vec<String> = (0..4).map(|i| i.to_string()).collect();
        let mut plan = crate::rollout::RolloutPlan::for_group(
            crate::drivers::any_group::group_target(&stack, "kube_minions"),
            stack,
            "kube_minions",
            &minions,
            Default::default(),
            Default::default(),
        );
        plan.hold_also("kube_masters", &["0".into(), "1".into(), "2".into()], false);
        for g in &groups {
            let mut slot = RolloutSlot::new(cluster.clone(), g.clone());
            slot.status = Some(status.clone());
            // The masters' node group found the rollout as the group it holds.
            let mut plan = plan.clone();
            plan.viewed_group = (g.id == "masters").then(|| "kube_masters".to_string());
            slot.plan = Some(plan);
            slot.meta.version = 1;
            store.rollouts.insert(g.id.clone(), slot);
        }
        store.refresh_models(now);
        // Each group counts its own members (was: the masters' row said `new 1/7`), with
        // the rollout's one state and ETA.
        let masters = store.models.progress("masters").expect("model");
        let minions = store.models.progress("minions").expect("model");
        assert_eq!(
            (
                masters.counts.new,
                masters.counts.held,
                masters.counts.in_update_total()
            ),
            (1, 2, 3),
            "{:?}",
            masters.counts
        );
        assert_eq!(
            (minions.counts.new, minions.counts.in_update_total()),
            (0, 4),
            "{:?}",
            minions.counts
        );
        assert_eq!(
            (&masters.state, masters.eta_secs),
            (&minions.state, minions.eta_secs)
        );
        let sum = store.models.cluster_progress("c1").expect("sum");
        assert_eq!(sum.counts.in_update_total(), 7, "{:?}", sum.counts);
        assert_eq!(sum.counts.new, 1, "{:?}", sum.counts);
        // Each group's rows read their own members' phases (was: the masters' row 0 read
        // minion 0's, held, though master 0 is new).
        use crate::widgets::table::RowModels;
        let phase = |g: &str, m: &str| RowModels::phase(&store.models, g, m);
        assert_eq!(phase("masters", "0"), Some(crate::progress::Phase::New));
        assert_eq!(phase("masters", "1"), phase("minions", "0"));
        assert_ne!(phase("minions", "0"), Some(crate::progress::Phase::New));
    }

    fn res(name: &str, owner: &str, status: &str, nested: Option<&str>, t: i64) -> StackResource {
        StackResource {
            name: name.into(),
            logical_id: name.into(),
            physical_id: None,
            resource_type: "T".into(),
            status: Status::parse(status),
            status_reason: Some(format!("{name} reason")),
            updated_at: Some(DateTime::from_timestamp(t, 0).unwrap()),
            owner: Some(StackRef {
                name: owner.into(),
                id: owner.into(),
            }),
            nested: nested.map(|n| StackRef {
                name: n.into(),
                id: n.into(),
            }),
            parent_resource: None,
            required_by: vec![],
        }
    }

    #[test]
    fn tree_is_depth_first_and_finds_deepest_stuck() {
        let rs = vec![
            res("net", "root", "CREATE_COMPLETE", None, 0),
            res("nodes", "root", "UPDATE_IN_PROGRESS", Some("g"), 0),
            res("0", "g", "UPDATE_COMPLETE", Some("m0"), 100),
            res("1", "g", "UPDATE_IN_PROGRESS", Some("m1"), 10),
            res("2", "g", "UPDATE_COMPLETE", None, 110),
            res("server", "m1", "UPDATE_IN_PROGRESS", None, 10),
            res("port", "m1", "CREATE_COMPLETE", None, 5),
            res("server", "m0", "UPDATE_COMPLETE", None, 100),
        ];
        let t = build_tree("root", rs, &[]);
        let paths: Vec<&str> = t.rows.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "net",
                "nodes",
                "nodes > 0",
                "nodes > 0 > server",
                "nodes > 1",
                "nodes > 1 > port",
                "nodes > 1 > server",
                "nodes > 2"
            ]
        );
        assert_eq!(t.rows[6].prefix, "   │  └─ ");
        assert_eq!(t.stuck.causes.len(), 1);
        let s = &t.stuck.causes[0];
        assert_eq!(t.rows[s.index].path, "nodes > 1 > server");
    }

    #[test]
    fn stale_generation_is_dropped() {
        let mut slot: Slot<Vec<u32>> = Slot::default();
        let now = Utc::now();
        slot.meta.begin(1, now);
        slot.meta.begin(2, now);
        assert!(!slot.finish(1, Ok(vec![1]), now));
        assert!(slot.data.is_none());
        assert_eq!(slot.meta.dropped, 1);
        assert!(slot.finish(2, Ok(vec![2]), now));
        assert_eq!(slot.data, Some(vec![2]));
        assert!(!slot.meta.in_flight);
    }
    fn node(member: &str, image: Option<&str>, hook: bool) -> Node {
        Node {
            key: crate::model::NodeKey {
                nodegroup: "ng".into(),
                member: member.into(),
            },
            index: member.parse().ok(),
            name: member.into(),
            zone: None,
            ip: None,
            status: Status::parse("UPDATE_COMPLETE"),
            status_reason: None,
            image: image.map(str::to_string),
            since: None,
            hook_paused: hook,
            hook_inferred: false,
            held_by_rollout: None,
            stack_id: None,
            server_id: None,
            created: None,
            replacing: false,
        }
    }

    /// A refresh's first member list comes before the hook marks and images: the rows keep
    /// theirs until the list that has them, which is then the truth (a released member).
    #[test]
    fn a_provisional_member_list_keeps_the_marks_and_images_until_the_real_one() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let mut set = NodeSet::default();
        set.meta.gen = 1;
        let marked = vec![
            node("0", Some("img-new"), false),
            node("1", Some("img-old"), true),
        ];
        assert!(set.apply(1, Ok(NodeUpdate::Members(marked)), now));
        let bare = vec![
            node("0", None, false),
            node("1", None, false),
            node("2", None, false),
        ];
        let listed = NodeUpdate::Listed {
            nodes: bare,
            marks: false,
        };
        assert!(set.apply(1, Ok(listed), now));
        let seen = |set: &NodeSet| -> Vec<(Option<String>, bool)> {
            set.rows
                .iter()
                .map(|r| (r.node.image.clone(), r.node.hook_paused))
                .collect()
        };
        assert_eq!(
            seen(&set),
            [
                (Some("img-new".into()), false),
                (Some("img-old".into()), true),
                (None, false),
            ]
        );
        let released = vec![
            node("0", Some("img-new"), false),
            node("1", Some("img-old"), false),
            node("2", Some("img-new"), false),
        ];
        assert!(set.apply(1, Ok(NodeUpdate::Members(released)), now));
        assert_eq!(
            seen(&set),
            [
                (Some("img-new".into()), false),
                (Some("img-old".into()), false),
                (Some("img-new".into()), false),
            ]
        );
    }

    /// A later source's addresses (the stream's `MoreAddresses`, the member's whole set)
    /// update the node's row: one row, the first address kept first, every address there,
    /// counted once; a refreshed member list keeps them.
    #[test]
    fn more_addresses_update_the_row_already_shown() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let mut set = NodeSet::default();
        set.meta.gen = 1;
        let nodes = || vec![node("0", None, false), node("1", None, false)];
        assert!(set.apply(1, Ok(NodeUpdate::Members(nodes())), now));
        let address = |ips: &[&str]| crate::model::NodeAddress {
            member: "0".into(),
            index: Some(0),
            addresses: ips.iter().map(|s| s.to_string()).collect(),
            name: None,
            networks: Default::default(),
            outputs: Default::default(),
            left_out: 0,
        };
        assert!(set.apply(1, Ok(NodeUpdate::Address(address(&["10.0.0.5"]))), now));
        let both = address(&["10.0.0.5", "172.24.4.5"]);
        assert!(set.apply(1, Ok(NodeUpdate::Address(both)), now));
        assert!(set.apply(1, Ok(NodeUpdate::Members(nodes())), now));
        let rows: Vec<(Option<&str>, &[String])> = set
            .rows
            .iter()
            .map(|r| (r.node.ip.as_deref(), r.addresses.as_slice()))
            .collect();
        let want = ["10.0.0.5".to_string(), "172.24.4.5".to_string()];
        assert_eq!(rows, [(Some("10.0.0.5"), &want[..]), (None, &[][..])]);
        assert_eq!(set.ips_ok, 1);
    }

    /// Only a first load misses marks and images: a refresh's provisional lists keep what
    /// the full list before knew, so nothing is pending then, images or not (a group whose
    /// images cannot be compared would otherwise say "reading" on every refresh).
    #[test]
    fn only_a_first_load_is_pending() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let mut set = NodeSet::default();
        set.meta.gen = 1;
        let bare = || vec![node("0", None, false), node("1", None, true)];
        let listed = |marks| NodeUpdate::Listed {
            nodes: bare(),
            marks,
        };
        assert!(set.apply(1, Ok(listed(false)), now));
        let both = Pending {
            marks: true,
            images: true,
        };
        assert_eq!(set.pending, both);
        assert!(set.apply(1, Ok(listed(true)), now));
        let images = Pending {
            marks: false,
            images: true,
        };
        assert_eq!(set.pending, images);
        assert!(set.apply(1, Ok(NodeUpdate::Done), now));
        assert_eq!(set.pending, Pending::default());
        set.meta.gen = 2;
        set.done = false;
        assert!(set.apply(2, Ok(listed(false)), now));
        assert_eq!(set.pending, Pending::default());
    }
}
