//! The one app state. Every change goes through [`App::update`] (typed actions);
//! I/O is requested through an outbox of [`Request`]s that the event loop hands to the
//! workers; drawing reads the state and never changes it.

pub mod actions;
pub mod form;
mod heat;
pub mod input;
pub mod journal;
mod nav;
pub use nav::is_stack_standin;
pub mod rollout;
pub mod store;
pub mod view;
pub mod yank;

use super::action::{Action, Command, Reply, Request};
use super::columns::{
    cluster_columns, event_columns, node_columns, nodegroup_columns, stack_columns, tree_columns,
};
use super::config::Resolved;
use super::keys::{self, KeyAction, KeyContext, KeyMap};
use super::ops_columns::{journal_columns, rollout_columns};
use super::theme::Theme;
use super::widgets::table::{Column, RowCtx, TableRow, TableState};
use crate::drivers::guard::Guard;
use crate::model::{Cluster, NodeGroup, StackEvent, StackSummary};
use crate::rollout::NodeProgress;
use crate::service::{BudgetStats, CloudInfo};
use chrono::{DateTime, Utc};
use input::InputState;
use journal::JournalRow;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;
use store::{build_tree, tree_servers, NodeRow, Store, TreeRow};
use view::{View, ViewKind};

/// The columns of every table, built once.
pub struct Columns {
    pub clusters: Vec<Column<Cluster>>,
    pub nodegroups: Vec<Column<NodeGroup>>,
    pub nodes: Vec<Column<NodeRow>>,
    pub stacks: Vec<Column<StackSummary>>,
    pub events: Vec<Column<StackEvent>>,
    pub tree: Vec<Column<TreeRow>>,
    pub rollout: Vec<Column<NodeProgress>>,
    pub journal: Vec<Column<JournalRow>>,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            clusters: cluster_columns(),
            nodegroups: nodegroup_columns(),
            nodes: node_columns(),
            stacks: stack_columns(),
            events: event_columns(),
            tree: tree_columns(),
            rollout: rollout_columns(),
            journal: journal_columns(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLine {
    pub text: String,
    pub level: Level,
    /// When it was set (info messages go away after a few seconds).
    pub at: DateTime<Utc>,
}

pub enum Mode {
    Normal,
    /// The help overlay, scrolled down by this many lines.
    Help(u16),
    Input(Box<InputState>),
    /// A form, a confirmation or an overlay of the operator actions.
    Dialog(Box<actions::Dialog>),
}

/// How deep the stack tree asks Heat to look.
pub const TREE_DEPTH: u32 = 3;

pub struct App {
    pub info: CloudInfo,
    pub budget: BudgetStats,
    /// The injected clock: every age on screen is computed from this.
    pub now: DateTime<Utc>,
    pub theme: Theme,
    pub keys: KeyMap,
    pub theme_dir: Option<PathBuf>,
    pub read_only: bool,
    /// The operator's guard rails; `None` when this connection cannot act.
    pub guard: Option<Guard>,
    pub refresh: Duration,
    pub store: Store,
    pub nav: Vec<View>,
    pub mode: Mode,
    pub history: Vec<String>,
    pub status: Option<StatusLine>,
    pub faults_only: bool,
    pub frozen: bool,
    frozen_queue: Vec<Reply>,
    outbox: Vec<Request>,
    next_gen: u64,
    pub should_quit: bool,
    /// The user asked to suspend (ctrl-z): the runtime gives the terminal back, stops
    /// the process and takes the terminal again on SIGCONT.
    pub should_suspend: bool,
    /// Something changed since the last draw.
    pub dirty: bool,
    pub size: (u16, u16),
    pub cols: Columns,
    /// A copy (`y` / `Y`) for the runtime to write to the terminal.
    clipboard: Option<crate::tui::clipboard::Clip>,
}

impl App {
    pub fn new(info: CloudInfo, resolved: Resolved, now: DateTime<Utc>) -> App {
        let status = if resolved.problems.is_empty() {
            None
        } else {
            Some(StatusLine {
                text: resolved.problems.join(" | "),
                level: Level::Error,
                at: now,
            })
        };
        let read_only = resolved.read_only || info.read_only;
        let mut app = App {
            info,
            budget: BudgetStats::default(),
            now,
            theme: resolved.theme,
            keys: resolved.keys,
            theme_dir: resolved.theme_dir,
            read_only,
            guard: None,
            refresh: resolved.refresh,
            store: Store::default(),
            nav: vec![View::new(ViewKind::Clusters)],
            mode: Mode::Normal,
            history: Vec::new(),
            status,
            faults_only: false,
            frozen: false,
            frozen_queue: Vec::new(),
            outbox: Vec::new(),
            next_gen: 0,
            should_quit: false,
            should_suspend: false,
            dirty: true,
            size: (80, 24),
            cols: Columns::default(),
            clipboard: None,
        };
        app.plan_refresh(false);
        app
    }

    pub fn view(&self) -> &View {
        // The stack always holds the root view.
        &self.nav[self.nav.len() - 1]
    }

    fn view_mut(&mut self) -> &mut View {
        let last = self.nav.len() - 1;
        &mut self.nav[last]
    }

    /// Requests for the workers, in order.
    pub fn take_requests(&mut self) -> Vec<Request> {
        std::mem::take(&mut self.outbox)
    }

    pub fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(StatusLine {
            text: text.into(),
            level,
            at: self.now,
        });
        self.dirty = true;
    }

    fn gen(&mut self) -> u64 {
        self.next_gen += 1;
        self.next_gen
    }

    pub fn row_ctx(&self) -> RowCtx<'_> {
        RowCtx {
            now: self.now,
            theme: &self.theme,
            abs_time: self.view().tail.abs_time,
        }
    }

    /// The key contexts active in the current view, most specific first.
    pub fn key_contexts(&self) -> Vec<KeyContext> {
        match self.view().kind {
            ViewKind::NodeGroups { .. } => keys::NODEGROUPS_VIEW,
            ViewKind::Nodes { .. } => keys::NODES_VIEW,
            ViewKind::Events { .. } => keys::EVENTS_VIEW,
            ViewKind::Dashboard { .. } => keys::DASHBOARD_VIEW,
            ViewKind::Rollout { .. } => keys::ROLLOUT_VIEW,
            ViewKind::Journal => keys::JOURNAL_VIEW,
            ViewKind::Server { .. } => keys::SERVER_VIEW,
            ViewKind::Stacks => keys::STACKS_VIEW,
            ViewKind::Tree { .. } => keys::TREE_VIEW,
            _ => keys::TABLE_VIEW,
        }
        .to_vec()
    }

    /// Whether the current view has something for `action` to act on (the node detail is
    /// text: it scrolls, but has no rows to open, mark or sort).
    pub fn view_offers(&self, action: KeyAction) -> bool {
        match self.view().kind {
            ViewKind::Server { .. } => !matches!(
                action,
                KeyAction::Open
                    | KeyAction::Mark
                    | KeyAction::ClearMarks
                    | KeyAction::SortNext
                    | KeyAction::SortReverse
                    | KeyAction::Filter
            ),
            _ => true,
        }
    }

    /// Apply one action.
    pub fn update(&mut self, action: Action) {
        let was_dirty = self.dirty;
        self.dirty = true;
        match action {
            Action::Key(k) => self.on_action(k),
            Action::Command(c) => self.on_command(c),
            Action::Reply(r) => {
                if self.frozen {
                    self.frozen_queue.push(r);
                    return;
                }
                self.apply(r);
            }
            Action::Tick { now, info, budget } => {
                let moved_second = now.timestamp() != self.now.timestamp();
                self.now = now;
                self.info = *info;
                self.read_only = self.read_only || self.info.read_only;
                self.budget = budget;
                // Ages on screen move once a second; nothing else changes on a tick.
                self.dirty = was_dirty || (moved_second && !self.frozen);
                if self
                    .status
                    .as_ref()
                    .is_some_and(|s| s.level == Level::Info && (now - s.at).num_seconds() >= 5)
                {
                    self.status = None;
                    self.dirty = true;
                }
                self.plan_refresh(false);
            }
            Action::Resize(w, h) => self.size = (w, h),
            Action::Operator(guard) => {
                self.guard = guard;
                self.read_only = self.read_only || guard.is_some_and(|g| g.read_only);
            }
        }
    }

    fn on_command(&mut self, c: Command) {
        self.prepare();
        match c {
            Command::Clusters => self.nav_clusters(),
            Command::NodeGroups => self.nav_nodegroups(),
            Command::Nodes => self.nav_nodes(),
            Command::Stacks => self.nav_stacks(),
            Command::Events => self.nav_events(),
            Command::Tree => self.nav_tree(),
            Command::Dashboard => self.nav_dashboard(),
            Command::Theme(name) => {
                match super::theme::load_theme(&name, self.theme_dir.as_deref()) {
                    Ok(t) => {
                        let n = t.name.clone();
                        self.theme = t;
                        self.set_status(Level::Info, format!("theme {n}"));
                    }
                    Err(e) => self.set_status(Level::Error, e.to_string()),
                }
            }
            Command::Faults => self.on_action(KeyAction::FaultsOnly),
            Command::Rollout => self.nav_rollout(),
            Command::Journal => self.push(ViewKind::Journal),
            Command::Scale => self.open_scale(),
            Command::Upgrade => self.open_upgrade(),
            Command::Run => self.open_node_action(),
            Command::Refresh => self.on_action(KeyAction::Refresh),
            Command::Help => self.mode = Mode::Help(0),
            Command::Quit => self.request_quit(),
        }
    }

    fn on_action(&mut self, k: KeyAction) {
        // Keys act on what is on screen: bring the table caches up to date first.
        self.prepare();
        if !self.view_offers(k) {
            return;
        }
        match k {
            KeyAction::Quit => self.request_quit(),
            KeyAction::Suspend => self.should_suspend = true,
            KeyAction::Help => self.mode = Mode::Help(0),
            KeyAction::Palette => self.open_input(input::InputKind::Palette, ""),
            KeyAction::Filter => {
                let current = self.view().table.filter().raw().to_string();
                self.open_input(
                    input::InputKind::Filter {
                        previous: current.clone(),
                    },
                    &current,
                );
            }
            KeyAction::Back => {
                if self.view_mut().table.clear_filter() {
                    return;
                }
                if self.nav.len() > 1 {
                    self.nav.pop();
                    self.after_nav();
                }
            }
            KeyAction::Refresh => {
                self.plan_refresh(true);
                self.set_status(Level::Info, "refreshing");
            }
            KeyAction::Freeze => {
                self.frozen = !self.frozen;
                if !self.frozen {
                    for r in std::mem::take(&mut self.frozen_queue) {
                        self.apply(r);
                    }
                }
            }
            KeyAction::FaultsOnly => self.faults_only = !self.faults_only,
            KeyAction::Dashboard => self.nav_dashboard(),
            KeyAction::Events => self.nav_events(),
            KeyAction::Tree => self.nav_tree(),
            KeyAction::Open => self.open_selected(),
            KeyAction::Scale => self.open_scale(),
            KeyAction::Upgrade => self.open_upgrade(),
            KeyAction::HeatCheck => self.heat_check(),
            KeyAction::HeatCancel => self.heat_cancel(),
            KeyAction::HeatClearHook => self.heat_clear_hook(),
            KeyAction::HeatMarkUnhealthy => self.heat_mark_unhealthy(),
            KeyAction::Yank => self.yank(yank::Yank::Id),
            KeyAction::YankName => self.yank(yank::Yank::Name),
            // Read by the open dialog (`on_dialog_key`); nothing to do outside one.
            KeyAction::DialogSubmit
            | KeyAction::DialogCancel
            | KeyAction::DialogUp
            | KeyAction::DialogDown
            | KeyAction::DialogPageUp
            | KeyAction::DialogPageDown
            | KeyAction::FieldNext
            | KeyAction::FieldPrev
            | KeyAction::FieldToggle
            | KeyAction::FieldClear
            | KeyAction::AnswerYes
            | KeyAction::AnswerNo => {}
            KeyAction::RolloutView => self.nav_rollout(),
            KeyAction::RemoveMarked => self.remove_marked(),
            KeyAction::RunOnMarked => self.open_node_action(),
            KeyAction::RolloutPause => self.rollout_key("pause"),
            KeyAction::RolloutResume => self.rollout_key("resume"),
            KeyAction::RolloutSkip => self.rollout_key("skip"),
            KeyAction::RolloutAbort => self.rollout_key("abort"),
            KeyAction::JournalDetail => self.journal_detail(),
            KeyAction::JournalExport => self.journal_export(),
            KeyAction::Up => self.table_op(TableOp::Move(-1)),
            KeyAction::Down => self.table_op(TableOp::Move(1)),
            KeyAction::PageUp => self.table_op(TableOp::PageUp),
            KeyAction::PageDown => self.table_op(TableOp::PageDown),
            KeyAction::Top => self.table_op(TableOp::Top),
            KeyAction::Bottom => self.table_op(TableOp::Bottom),
            KeyAction::Mark => {
                self.view_mut().table.toggle_mark();
                self.table_op(TableOp::Move(1));
            }
            KeyAction::ClearMarks => self.view_mut().table.clear_marks(),
            KeyAction::SortNext => self.table_op(TableOp::SortNext),
            KeyAction::SortReverse => self.view_mut().table.sort.reverse(),
            KeyAction::HeatMap => {
                let v = self.view_mut();
                v.show_heat_map = !v.show_heat_map;
            }
            KeyAction::Follow => {
                let v = self.view_mut();
                v.tail.follow = !v.tail.follow;
                if v.tail.follow {
                    self.table_op(TableOp::Bottom);
                }
            }
            KeyAction::PausePoll => {
                let v = self.view_mut();
                v.tail.paused = !v.tail.paused;
            }
            KeyAction::TimeMode => {
                let v = self.view_mut();
                v.tail.abs_time = !v.tail.abs_time;
            }
            KeyAction::Wrap if matches!(self.view().kind, ViewKind::Dashboard { .. }) => {
                self.set_status(Level::Info, "wrap and save work in the events view (e)");
            }
            KeyAction::Wrap => {
                let v = self.view_mut();
                v.tail.wrap = !v.tail.wrap;
            }
            KeyAction::Save => {
                if matches!(self.view().kind, ViewKind::Dashboard { .. }) {
                    self.set_status(Level::Info, "wrap and save work in the events view (e)");
                }
                if let ViewKind::Events { stack } = &self.view().kind {
                    let name = format!(
                        "caldera-events-{}-{}.txt",
                        stack.label().replace(['/', ' '], "_"),
                        self.now.format("%Y%m%d-%H%M%S")
                    );
                    self.open_input(input::InputKind::SavePath, &name);
                }
            }
        }
    }

    /// Apply a worker's answer; stale generations are dropped by the slots.
    pub fn apply(&mut self, reply: Reply) {
        let now = self.now;
        match reply {
            Reply::Clusters { gen, result } => {
                self.store.clusters.finish(gen, result, now);
            }
            Reply::Stacks { gen, result } => {
                self.store.stacks.finish(gen, result, now);
            }
            Reply::NodeGroups {
                cluster_id,
                gen,
                result,
            } => {
                if let Some(slot) = self.store.nodegroups.get_mut(&cluster_id) {
                    slot.finish(gen, result, now);
                }
            }
            Reply::Nodes {
                nodegroup_id,
                gen,
                update,
            } => {
                if let Some(set) = self.store.nodes.get_mut(&nodegroup_id) {
                    set.apply(gen, update, now);
                }
            }
            Reply::NodesEnded { nodegroup_id, gen } => {
                if let Some(set) = self.store.nodes.get_mut(&nodegroup_id) {
                    set.ended(gen);
                }
            }
            Reply::Events {
                stack_id,
                stack_name,
                gen,
                result,
            } => {
                self.learn_stack_name(&stack_id, stack_name);
                let mut note = None;
                if let Some(log) = self.store.events.get_mut(&stack_id) {
                    let was = log.outage_since;
                    if log.finish(gen, result, now) {
                        note = log.outage_note(was, now);
                    }
                }
                self.reassess_tree(&stack_id);
                let watching = matches!(
                    self.view().kind,
                    ViewKind::Events { .. } | ViewKind::Dashboard { .. }
                );
                if let (Some((failing, text)), true) = (note, watching) {
                    let level = if failing { Level::Warn } else { Level::Info };
                    self.set_status(level, format!("events: {text}"));
                }
            }
            Reply::Tree {
                stack_id,
                stack_name,
                gen,
                result,
            } => {
                self.learn_stack_name(&stack_id, stack_name);
                let events = self
                    .store
                    .events
                    .get(&stack_id)
                    .map(|log| log.events.as_slice())
                    .unwrap_or_default();
                if let Some(slot) = self.store.trees.get_mut(&stack_id) {
                    let result = result.map(|rs| build_tree(&stack_id, rs, events));
                    slot.finish(gen, result, now);
                }
            }
            Reply::Saved { path, result } => match result {
                Ok(n) => self.set_status(
                    Level::Info,
                    format!("saved {n} lines to {}", path.display()),
                ),
                Err(e) => {
                    self.set_status(Level::Error, format!("cannot save {}: {e}", path.display()))
                }
            },
            Reply::Journal { gen, result } => self.store.journal.finish(gen, result, now),
            Reply::Server { key, gen, result } => {
                if let Some(slot) = self.store.servers.get_mut(&key) {
                    slot.finish(gen, result, now);
                }
            }
            r @ (Reply::RolloutFound { .. }
            | Reply::Rollout { .. }
            | Reply::UpdateObserved { .. }
            | Reply::RolloutControlled { .. }) => self.apply_rollout_reply(r),
            r => self.apply_action_reply(r),
        }
        self.dirty = true;
    }

    /// New events can end a hook hold or finish a sibling: the stack's tree is assessed again.
    fn reassess_tree(&mut self, stack_id: &str) {
        let (Some(log), Some(tree)) = (
            self.store.events.get(stack_id),
            self.store
                .trees
                .get_mut(stack_id)
                .and_then(|slot| slot.data.as_mut()),
        ) else {
            return;
        };
        tree.reassess(&log.events);
    }

    /// Name the views that only knew a stack's id.
    fn learn_stack_name(&mut self, id: &str, name: Option<String>) {
        let Some(name) = name else {
            return;
        };
        self.store.stack_names.insert(id.to_string(), name.clone());
        for v in &mut self.nav {
            if let ViewKind::Events { stack } | ViewKind::Tree { stack, .. } = &mut v.kind {
                if stack.id == id && stack.name.is_none() {
                    stack.name = Some(name.clone());
                }
            }
        }
    }

    /// Start the fetches the current view needs: when due (one pending per slot), or all
    /// of them when `force` (a newer generation then supersedes any pending answer).
    pub fn plan_refresh(&mut self, force: bool) {
        let now = self.now;
        let every = self.refresh;
        let kind = self.view().kind.clone();
        let paused = self.view().tail.paused;
        match kind {
            ViewKind::Clusters => self.want_clusters(force, now, every),
            ViewKind::Stacks => {
                if force || self.store.stacks.meta.due(now, every) {
                    let gen = self.gen();
                    self.store.stacks.meta.begin(gen, now);
                    self.outbox.push(Request::Stacks { gen });
                }
            }
            ViewKind::NodeGroups { cluster } => self.want_nodegroups(&cluster, force, now, every),
            ViewKind::Dashboard { cluster } => {
                // The header's counts come from the cluster list: keep it fresh too.
                self.want_clusters(force, now, every);
                self.want_nodegroups(&cluster, force, now, every);
                let groups = self
                    .store
                    .nodegroups
                    .get(&cluster.id)
                    .and_then(|s| s.data.clone())
                    .unwrap_or_default();
                for g in &groups {
                    self.want_nodes(g, force, now, every * 2);
                }
                if !paused {
                    for stack in dashboard_stacks(&cluster, &groups) {
                        self.want_events(&stack, force, now, every);
                    }
                }
            }
            ViewKind::Nodes { cluster, nodegroup } => {
                // The wanted count (`count N ≠ members M`) comes from the node group list.
                self.want_nodegroups(&cluster, force, now, every);
                self.want_nodes(&nodegroup, force, now, every * 2)
            }
            ViewKind::Events { stack } => {
                if !paused {
                    self.want_events(&stack, force, now, every);
                }
            }
            ViewKind::Rollout { cluster, nodegroup } => {
                self.want_rollout(&cluster, &nodegroup, force);
                // The rows' server names and addresses come from the node group's nodes, at a
                // slow pace (a whole address stream costs a 1000-node group many requests;
                // names and addresses seldom change during a rollout).
                self.want_nodes(&nodegroup, force, now, every * 15)
            }
            ViewKind::Journal => self.want_journal(force),
            ViewKind::Server { target } => {
                let slot = self.store.servers.entry(target.key.clone()).or_default();
                // Two requests a look (the server, its console log): half the refresh pace.
                if force || slot.meta.due(now, every * 2) {
                    let gen = self.gen();
                    let slot = self.store.servers.entry(target.key.clone()).or_default();
                    slot.meta.begin(gen, now);
                    self.outbox.push(Request::Server { target, gen });
                }
            }
            ViewKind::Tree { stack, .. } => self.want_tree(stack, force, now, every, paused),
        }
    }

    /// The tree, the stack's events (siblings' durations and hook pauses come from them) and
    /// the Nova record of the first causes that are servers.
    fn want_tree(
        &mut self,
        stack: view::StackTarget,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
        paused: bool,
    ) {
        if !paused {
            self.want_events(&stack, force, now, every);
        }
        let slot = self.store.trees.entry(stack.id.clone()).or_default();
        let servers = slot
            .data
            .as_ref()
            .map(|t| tree_servers(&stack.id, t))
            .unwrap_or_default();
        if force || slot.meta.due(now, every * 2) {
            let gen = self.gen();
            let slot = self.store.trees.entry(stack.id.clone()).or_default();
            slot.meta.begin(gen, now);
            self.outbox.push(Request::Tree {
                stack,
                depth: TREE_DEPTH,
                gen,
            });
        }
        for target in servers {
            let slot = self.store.servers.entry(target.key.clone()).or_default();
            // A server and its console log per look: at a quarter of the refresh pace.
            if force || slot.meta.due(now, every * 4) {
                let gen = self.gen();
                let slot = self.store.servers.entry(target.key.clone()).or_default();
                slot.meta.begin(gen, now);
                self.outbox.push(Request::Server { target, gen });
            }
        }
    }

    fn want_clusters(&mut self, force: bool, now: DateTime<Utc>, every: Duration) {
        if force || self.store.clusters.meta.due(now, every) {
            let gen = self.gen();
            self.store.clusters.meta.begin(gen, now);
            self.outbox.push(Request::Clusters { gen });
        }
    }

    fn want_nodegroups(
        &mut self,
        cluster: &Cluster,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
    ) {
        let due = self
            .store
            .nodegroups
            .entry(cluster.id.clone())
            .or_default()
            .meta
            .due(now, every);
        if force || due {
            let gen = self.gen();
            if let Some(slot) = self.store.nodegroups.get_mut(&cluster.id) {
                slot.meta.begin(gen, now);
            }
            self.outbox.push(Request::NodeGroups {
                cluster: cluster.clone(),
                gen,
            });
        }
    }

    fn want_nodes(&mut self, g: &NodeGroup, force: bool, now: DateTime<Utc>, every: Duration) {
        let due = self
            .store
            .nodes
            .entry(g.id.clone())
            .or_default()
            .meta
            .due(now, every);
        if force || due {
            let gen = self.gen();
            if let Some(set) = self.store.nodes.get_mut(&g.id) {
                set.meta.begin(gen, now);
            }
            self.outbox.push(Request::Nodes {
                nodegroup: g.clone(),
                gen,
            });
        }
    }

    fn want_events(
        &mut self,
        stack: &view::StackTarget,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
    ) {
        let log = self.store.events.entry(stack.id.clone()).or_default();
        // The follower's own pace, within the refresh: sooner while a stack writes events fast
        // enough for Heat to purge them before a refresh would read them.
        let every = match log.failures {
            0 => log.cursor.next_delay(every),
            // Polls failing: back off (1 s, 2 s ... 30 s), cursor kept, until the cloud is back.
            n => crate::ops::event_tracker::reconnect_delay(n),
        };
        // A forced refresh of a pending poll would only repeat it; events never go stale.
        if log.meta.due(now, every) || (force && !log.meta.in_flight) {
            let cursor = log.cursor.clone();
            let gen = self.gen();
            if let Some(log) = self.store.events.get_mut(&stack.id) {
                log.meta.begin(gen, now);
            }
            self.outbox.push(Request::Events {
                stack: stack.clone(),
                cursor,
                gen,
            });
        }
    }

    /// After the view changed: stop node streams nobody looks at, fetch what is new.
    fn after_nav(&mut self) {
        let wanted: HashSet<String> = match &self.view().kind {
            ViewKind::Nodes { nodegroup, .. } => [nodegroup.id.clone()].into_iter().collect(),
            ViewKind::Dashboard { cluster } => self
                .store
                .nodegroups
                .get(&cluster.id)
                .and_then(|s| s.data.as_ref())
                .map(|gs| gs.iter().map(|g| g.id.clone()).collect())
                .unwrap_or_default(),
            _ => HashSet::new(),
        };
        let mut stop = Vec::new();
        for (id, set) in self.store.nodes.iter_mut() {
            if set.meta.in_flight && !wanted.contains(id) {
                set.meta.in_flight = false;
                // Whatever is still on its way belongs to an abandoned stream.
                set.meta.gen = 0;
                set.meta.attempted_at = None;
                stop.push(id.clone());
            }
        }
        for id in stop {
            self.outbox.push(Request::StopNodes { nodegroup_id: id });
        }
        self.plan_refresh(false);
        self.dirty = true;
    }

    /// Bring the visible tables' caches up to date (call before drawing).
    pub fn prepare(&mut self) {
        let h = self.size.1;
        let faults = self.faults_only;
        let ctx = RowCtx {
            now: self.now,
            theme: &self.theme,
            abs_time: self.nav[self.nav.len() - 1].tail.abs_time,
        };
        let last = self.nav.len() - 1;
        let view = &mut self.nav[last];
        let store = &self.store;
        let cols = &self.cols;
        view.table.page = (h as usize).saturating_sub(8).max(1);
        match &view.kind {
            ViewKind::Clusters => {
                let items = store.clusters.data.as_deref().unwrap_or(&[]);
                view.table.sync(
                    items,
                    &cols.clusters,
                    &ctx,
                    store.clusters.meta.version,
                    faults,
                );
            }
            ViewKind::Stacks => {
                let items = store.stacks.data.as_deref().unwrap_or(&[]);
                view.table
                    .sync(items, &cols.stacks, &ctx, store.stacks.meta.version, faults);
            }
            ViewKind::NodeGroups { cluster } | ViewKind::Dashboard { cluster } => {
                let slot = store.nodegroups.get(&cluster.id);
                let items = slot.and_then(|s| s.data.as_deref()).unwrap_or(&[]);
                let v = slot.map(|s| s.meta.version).unwrap_or(0);
                if matches!(view.kind, ViewKind::Dashboard { .. }) {
                    view.table.page = 5;
                }
                view.table.sync(items, &cols.nodegroups, &ctx, v, faults);
            }
            ViewKind::Nodes { nodegroup, .. } => {
                if let Some(set) = store.nodes.get(&nodegroup.id) {
                    // Addresses and names only reorder or refilter when a filter, a sort
                    // or faults-only looks at them.
                    let ip_matters = view.table.filter().is_active()
                        || view.table.sort.column.is_some()
                        || faults;
                    let v = if ip_matters {
                        set.meta.version.wrapping_mul(1 << 32) ^ set.fill_version
                    } else {
                        set.meta.version.wrapping_mul(1 << 32)
                    };
                    view.table.sync(&set.rows, &cols.nodes, &ctx, v, faults);
                } else {
                    view.table
                        .sync::<NodeRow>(&[], &cols.nodes, &ctx, 0, faults);
                }
            }
            ViewKind::Events { stack } => {
                let items = store
                    .events
                    .get(&stack.id)
                    .map(|l| l.events.as_slice())
                    .unwrap_or(&[]);
                let v = store
                    .events
                    .get(&stack.id)
                    .map(|l| l.meta.version)
                    .unwrap_or(0);
                view.table.sync(items, &cols.events, &ctx, v, faults);
                if view.tail.follow {
                    view.table.bottom(items);
                }
            }
            ViewKind::Rollout { nodegroup, .. } => {
                let slot = store.rollouts.get(&nodegroup.id);
                let items = slot.map(|s| s.nodes()).unwrap_or(&[]);
                let v = slot.map(|s| s.meta.version).unwrap_or(0);
                view.table.sync(items, &cols.rollout, &ctx, v, faults);
                // Until the operator moves, the selection follows the batch in flight.
                let current = slot
                    .and_then(|s| s.status.as_ref())
                    .and_then(|s| s.current_batch);
                if view.tail.follow {
                    if let Some(n) = current.and_then(|b| items.iter().find(|n| n.batch == b)) {
                        let id = n.name.clone();
                        view.table.select_id(&id, items);
                    }
                }
            }
            // A text view: nothing to sync (its scroll is bounded when drawn).
            ViewKind::Server { .. } => {}
            ViewKind::Journal => {
                let log = &store.journal;
                view.table
                    .sync(&log.rows, &cols.journal, &ctx, log.meta.version, faults);
                if view.tail.follow {
                    view.table.bottom(&log.rows);
                }
            }
            ViewKind::Tree { stack, focus } => {
                let rows = store
                    .trees
                    .get(&stack.id)
                    .and_then(|s| s.data.as_ref())
                    .map(|t| t.rows.as_slice())
                    .unwrap_or(&[]);
                let v = store
                    .trees
                    .get(&stack.id)
                    .map(|s| s.meta.version)
                    .unwrap_or(0);
                view.table.sync(rows, &cols.tree, &ctx, v, faults);
                if let Some(f) = focus.clone() {
                    if let Some(r) = rows.iter().find(|r| r.resource.name == f) {
                        let id = r.row_id().into_owned();
                        view.table.select_id(&id, rows);
                        view.kind = ViewKind::Tree {
                            stack: stack.clone(),
                            focus: None,
                        };
                    }
                }
            }
        }
    }

    fn table_op(&mut self, op: TableOp) {
        if let ViewKind::Server { target } = &self.view().kind {
            // The detail's height at the terminal's width bounds the scroll: header, crumbs,
            // status and footer lines and the two borders are not the detail's.
            let (w, h) = self.size;
            let total = super::draw::server::line_count(self, target, w.saturating_sub(2) as usize);
            let max = total.saturating_sub(h.saturating_sub(6) as usize);
            let view = self.view_mut();
            view.table.page = (h as usize).saturating_sub(8).max(1);
            let page = view.table.page;
            view.scroll = match op {
                TableOp::Move(d) => view.scroll.saturating_add_signed(d),
                TableOp::PageUp => view.scroll.saturating_sub(page),
                TableOp::PageDown => view.scroll.saturating_add(page),
                TableOp::Top => 0,
                TableOp::Bottom => max,
                TableOp::SortNext => view.scroll,
            }
            .min(max);
            return;
        }
        let last = self.nav.len() - 1;
        let view = &mut self.nav[last];
        let store = &self.store;
        let cols = &self.cols;
        if matches!(op, TableOp::Move(-1) | TableOp::PageUp | TableOp::Top) {
            view.tail.follow = false;
        }
        if matches!(view.kind, ViewKind::Rollout { .. }) && op != TableOp::SortNext {
            view.tail.follow = false;
        }
        match &view.kind {
            ViewKind::Clusters => op.run(
                &mut view.table,
                store.clusters.data.as_deref().unwrap_or(&[]),
                cols.clusters.len(),
            ),
            ViewKind::Stacks => op.run(
                &mut view.table,
                store.stacks.data.as_deref().unwrap_or(&[]),
                cols.stacks.len(),
            ),
            ViewKind::NodeGroups { cluster } | ViewKind::Dashboard { cluster } => op.run(
                &mut view.table,
                store
                    .nodegroups
                    .get(&cluster.id)
                    .and_then(|s| s.data.as_deref())
                    .unwrap_or(&[]),
                cols.nodegroups.len(),
            ),
            ViewKind::Nodes { nodegroup, .. } => op.run(
                &mut view.table,
                store
                    .nodes
                    .get(&nodegroup.id)
                    .map(|s| s.rows.as_slice())
                    .unwrap_or(&[]),
                cols.nodes.len(),
            ),
            ViewKind::Events { stack } => op.run(
                &mut view.table,
                store
                    .events
                    .get(&stack.id)
                    .map(|l| l.events.as_slice())
                    .unwrap_or(&[]),
                cols.events.len(),
            ),
            ViewKind::Rollout { nodegroup, .. } => op.run(
                &mut view.table,
                store
                    .rollouts
                    .get(&nodegroup.id)
                    .map(|s| s.nodes())
                    .unwrap_or(&[]),
                cols.rollout.len(),
            ),
            ViewKind::Journal => op.run(&mut view.table, &store.journal.rows, cols.journal.len()),
            ViewKind::Server { .. } => {}
            ViewKind::Tree { stack, .. } => op.run(
                &mut view.table,
                store
                    .trees
                    .get(&stack.id)
                    .and_then(|s| s.data.as_ref())
                    .map(|t| t.rows.as_slice())
                    .unwrap_or(&[]),
                cols.tree.len(),
            ),
        }
    }
}

/// The stacks whose events the dashboard tails: the cluster's and its node groups'.
pub fn dashboard_stacks(cluster: &Cluster, groups: &[NodeGroup]) -> Vec<view::StackTarget> {
    let mut out: Vec<view::StackTarget> = Vec::new();
    for id in cluster
        .stack_id
        .iter()
        .chain(groups.iter().filter_map(|g| g.stack_id.as_ref()))
    {
        if !out.iter().any(|s| &s.id == id) {
            out.push(view::StackTarget {
                id: id.clone(),
                name: None,
            });
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableOp {
    Move(isize),
    PageUp,
    PageDown,
    Top,
    Bottom,
    SortNext,
}

impl TableOp {
    fn run<T: TableRow>(self, t: &mut TableState, items: &[T], ncols: usize) {
        match self {
            TableOp::Move(d) => t.move_by(d, items),
            TableOp::PageUp => t.page_up(items),
            TableOp::PageDown => t.page_down(items),
            TableOp::Top => t.top(items),
            TableOp::Bottom => t.bottom(items),
            TableOp::SortNext => t.sort.cycle(ncols),
        }
    }
}
