//! The one app state. Every change goes through [`App::update`] (typed actions);
//! I/O is requested through an outbox of [`Request`]s that the event loop hands to the
//! workers; drawing reads the state and never changes it.

pub mod action_dialogs;
pub mod fleet;
pub mod form;
mod heat_controls;
pub mod help;
pub mod input;
pub mod journal_reads;

mod nav;
pub use nav::is_stack_standin;
pub mod rollout_control;
pub mod screen;
pub mod settle;
pub mod store;
pub mod view;
pub mod yank;

use super::config::Resolved;
use super::keys::{KeyAction, KeyContext, KeyMap};
use super::message::{Action, Command, Reply, Request};
use super::theme::Theme;
use super::widgets::table::RowCtx;
use crate::drivers::guard::Guard;
use crate::model::{Cluster, NodeGroup, ServerTarget};
use crate::service::{BudgetStats, CloudInfo};
use chrono::{DateTime, Utc};
use input::InputState;
use screen::{Plan, Registry, Screen, TableOp};
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;
use store::{build_tree, tree_servers, FetchMeta, Store};
use view::{View, ViewKind};

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
    /// When it was set (it leaves the status line after [`StatusLine::lasts_secs`]).
    pub at: DateTime<Utc>,
}

impl StatusLine {
    /// How long it stays on the status line: an info briefly, a warning longer, an error
    /// long enough to be read on coming back; `:messages` keeps them all, whole.
    pub fn lasts_secs(&self) -> i64 {
        match self.level {
            Level::Info => 5,
            Level::Warn => 30,
            Level::Error => 120,
        }
    }
}

/// Status messages `:messages` keeps (the oldest go first).
pub const MESSAGES_KEPT: usize = 200;

pub enum Mode {
    Normal,
    /// The help overlay, scrolled down by this many lines.
    Help(u16),
    Input(Box<InputState>),
    /// A form, a confirmation or an overlay of the operator actions.
    Dialog(Box<action_dialogs::Dialog>),
}

/// How deep the stack tree asks Heat to look.
pub const TREE_DEPTH: u32 = 3;

pub struct App {
    info: CloudInfo,
    budget: BudgetStats,
    /// The injected clock: every age on screen is computed from this.
    now: DateTime<Utc>,
    theme: Theme,
    keys: KeyMap,
    theme_dir: Option<PathBuf>,
    read_only: bool,
    /// The operator's guard rails; `None` when this connection cannot act.
    guard: Option<Guard>,
    refresh: Duration,
    store: Store,
    nav: Vec<View>,
    mode: Mode,
    history: Vec<String>,
    status: Option<StatusLine>,
    /// Every status message of the session, oldest first, at most [`MESSAGES_KEPT`].
    messages: std::collections::VecDeque<StatusLine>,
    faults_only: bool,
    frozen: bool,
    frozen_queue: Vec<Reply>,
    outbox: Vec<Request>,
    next_gen: u64,
    should_quit: bool,
    /// The user asked to suspend (ctrl-z): the runtime gives the terminal back, stops
    /// the process and takes the terminal again on SIGCONT.
    should_suspend: bool,
    /// Something changed since the last draw.
    dirty: bool,
    size: (u16, u16),
    /// A copy (`y` / `Y`) for the runtime to write to the terminal.
    clipboard: Option<crate::clipboard::Clip>,
    /// The views, as given (the state names none).
    views: Registry,
    /// Bursts of refreshes after accepted actions (see [`settle`]).
    settling: Vec<settle::Settle>,
    /// A cluster to open once the cluster list of the cloud the console moves to arrives
    /// (Enter on another cloud's fleet row).
    pending_cluster: Option<String>,
}

impl App {
    /// The state over the views of `views` (`tui::views::REGISTRY`; `App::new` uses it).
    pub fn with_views(
        info: CloudInfo,
        resolved: Resolved,
        now: DateTime<Utc>,
        views: Registry,
    ) -> App {
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
            messages: status.iter().cloned().collect(),
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
            clipboard: None,
            pending_cluster: None,
            views,
            settling: Vec::new(),
        };
        app.plan_refresh(false);
        app
    }

    pub fn info(&self) -> &CloudInfo {
        &self.info
    }

    /// The request budget as the service last reported it.
    pub fn budget(&self) -> &BudgetStats {
        &self.budget
    }

    pub fn set_budget(&mut self, budget: BudgetStats) {
        self.budget = budget;
    }

    /// The injected clock: every age on screen is computed from this.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    pub fn theme(&self) -> &Theme {
        &self.theme
    }

    pub fn keys(&self) -> &KeyMap {
        &self.keys
    }

    pub fn theme_dir(&self) -> Option<&std::path::Path> {
        self.theme_dir.as_deref()
    }

    /// Whether actions are off (by configuration, the cloud or the operator's guard).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The operator's guard rails; `None` when this connection cannot act.
    pub fn guard(&self) -> Option<&Guard> {
        self.guard.as_ref()
    }

    /// The refresh pace.
    pub fn refresh(&self) -> Duration {
        self.refresh
    }

    /// Everything fetched (read-only: answers reach it through [`App::update`]).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The navigation stack, root first.
    pub fn nav(&self) -> &[View] {
        &self.nav
    }

    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// Leave the help, the palette or a dialog.
    pub fn close_overlay(&mut self) {
        self.mode = Mode::Normal;
    }

    /// The palette's history, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    pub fn status(&self) -> Option<&StatusLine> {
        self.status.as_ref()
    }

    pub fn faults_only(&self) -> bool {
        self.faults_only
    }

    pub fn frozen(&self) -> bool {
        self.frozen
    }

    pub fn should_quit(&self) -> bool {
        self.should_quit
    }

    /// The user asked to suspend (ctrl-z): the runtime gives the terminal back, stops
    /// the process and takes the terminal again on SIGCONT.
    pub fn should_suspend(&self) -> bool {
        self.should_suspend
    }

    /// ctrl-z arrived as a signal (SIGTSTP).
    pub fn request_suspend(&mut self) {
        self.should_suspend = true;
    }

    /// Whether a suspend is asked for; the request is taken.
    pub fn take_suspend(&mut self) -> bool {
        std::mem::take(&mut self.should_suspend)
    }

    /// Something changed since the last draw.
    pub fn dirty(&self) -> bool {
        self.dirty
    }

    /// The screen was drawn.
    pub fn drawn(&mut self) {
        self.dirty = false;
    }

    /// Draw everything again (the terminal was someone else's).
    pub fn redraw(&mut self) {
        self.dirty = true;
    }

    /// The store, for the views' own actions (`tui::views`): drawing only reads it.
    pub(crate) fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    pub fn view(&self) -> &View {
        // The stack always holds the root view.
        &self.nav[self.nav.len() - 1]
    }

    /// How many views deep the trail is (the breadcrumbs' length).
    pub fn nav_depth(&self) -> usize {
        self.nav.len()
    }

    pub(crate) fn view_mut(&mut self) -> &mut View {
        let last = self.nav.len() - 1;
        &mut self.nav[last]
    }

    /// Requests for the workers, in order.
    pub fn take_requests(&mut self) -> Vec<Request> {
        std::mem::take(&mut self.outbox)
    }

    pub fn set_status(&mut self, level: Level, text: impl Into<String>) {
        let line = StatusLine {
            text: text.into(),
            level,
            at: self.now,
        };
        if self.messages.len() >= MESSAGES_KEPT {
            self.messages.pop_front();
        }
        self.messages.push_back(line.clone());
        self.status = Some(line);
        self.dirty = true;
    }

    /// `:messages`: every status message of the session, whole, newest last.
    fn show_messages(&mut self) {
        let lines: Vec<String> = match self.messages.is_empty() {
            true => vec!["no message yet".into()],
            false => self
                .messages
                .iter()
                .map(|m| {
                    let level = match m.level {
                        Level::Info => "info ",
                        Level::Warn => "warn ",
                        Level::Error => "ERROR",
                    };
                    format!("{} {level} {}", m.at.format("%H:%M:%S"), m.text)
                })
                .collect(),
        };
        // Opened at the newest.
        let scroll = action_dialogs::text_scroll_max(
            action_dialogs::text_rows(&lines, self.size.0).len(),
            self.size.1.saturating_sub(action_dialogs::CHROME_ROWS),
        );
        self.open_dialog(action_dialogs::Dialog::Text {
            title: format!("Messages ({})", self.messages.len()),
            lines,
            scroll,
        });
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
            models: Some(&self.store.models),
        }
    }

    /// The key contexts active in the current view, most specific first.
    pub fn key_contexts(&self) -> Vec<KeyContext> {
        self.screen().key_contexts().to_vec()
    }

    /// Whether the current view has something for `action` to act on (the node detail is
    /// text: it scrolls, but has no rows to open, mark or sort).
    pub fn view_offers(&self, action: KeyAction) -> bool {
        self.screen().offers(action)
    }

    /// The data slot whose age and error the header shows (the current view's).
    pub fn view_meta(&self) -> Option<&FetchMeta> {
        self.screen().meta(&self.store)
    }

    /// The behaviour of the current view.
    pub(crate) fn screen(&self) -> Box<dyn Screen + '_> {
        self.screen_of(&self.view().kind)
    }

    /// The behaviour of a view of kind `kind`.
    pub(crate) fn screen_of<'k>(&self, kind: &'k ViewKind) -> Box<dyn Screen + 'k> {
        (self.views.screen)(kind)
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
                    .is_some_and(|s| (now - s.at).num_seconds() >= s.lasts_secs())
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
            Action::Switched {
                info,
                guard,
                notices,
            } => self.switched(*info, guard, notices),
            Action::SwitchFailed { cloud, error } => {
                // The cluster a fleet row asked for was on that cloud.
                self.pending_cluster = None;
                self.set_status(
                    Level::Error,
                    format!(
                        "cannot switch to cloud {cloud}: {error} (still on {})",
                        self.info.cloud
                    ),
                )
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
            Command::Fleet => self.push(ViewKind::Fleet),
            Command::Cloud { name, region } => self.switch_cloud(name, region),
            Command::Clouds => self.outbox.push(Request::ListClouds),
            Command::Scale => self.open_scale(),
            Command::Upgrade => self.open_upgrade(),
            Command::Run => self.open_node_action(),
            Command::Refresh => self.on_action(KeyAction::Refresh),
            Command::Messages => self.show_messages(),
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
        // Keys that open a view from anywhere are the views' own.
        if (self.views.on_key)(self, k) {
            return;
        }
        // So are the keys a view answers itself.
        let kind = self.view().kind.clone();
        if self.screen_of(&kind).own_key(self, k) {
            return;
        }
        match k {
            KeyAction::Quit => self.request_quit(),
            KeyAction::Suspend => self.should_suspend = true,
            KeyAction::Help => self.mode = Mode::Help(0),
            KeyAction::Palette => self.open_input(input::InputKind::Palette, ""),
            // A fresh filter, as `/` starts a fresh search in less and k9s: the input opens
            // empty while the current filter stays applied until a new one is typed; Esc
            // keeps it, Enter on the empty input clears it.
            KeyAction::Filter => {
                let previous = self.view().table.filter().raw().to_string();
                self.open_input(input::InputKind::Filter { previous }, "");
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
            // Handled by the views' registry above.
            KeyAction::Outputs | KeyAction::StackDetail => {}
            // The views' own keys (`Screen::own_key`); nothing elsewhere.
            KeyAction::FocusTail | KeyAction::Describe | KeyAction::NextCause => {}
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
                self.open_pending_cluster();
            }
            Reply::Cluster {
                cluster_id,
                gen,
                result,
            } => self.store.patch_cluster(&cluster_id, gen, result, now),
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
                    let result = result.map(|t| {
                        let mut tree = build_tree(&stack_id, t.resources, events)
                            .with_inferred_holds(t.inferred_holds, events);
                        tree.leftover_hooks = t.leftover_hooks;
                        tree
                    });
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
            Reply::Clouds { result } => self.show_clouds(result),
            Reply::Journal { gen, result } => self.store.journal.finish(gen, result, now),
            Reply::FleetCloud { gen, report } => self.store.fleet.answer(gen, &report, now),
            Reply::FleetDone { gen, result } => self.store.fleet.done(gen, result, now),
            Reply::Outputs {
                stack_id,
                stack_name,
                gen,
                result,
            } => {
                self.learn_stack_name(&stack_id, stack_name);
                if let Some(slot) = self.store.outputs.get_mut(&stack_id) {
                    slot.finish(gen, result, now);
                }
            }
            Reply::Output {
                stack_id,
                key,
                gen,
                result,
            } => {
                if let Some(slot) = self.store.output_values.get_mut(&(stack_id, key)) {
                    slot.finish(gen, result, now);
                }
            }
            Reply::Stack {
                stack_id,
                gen,
                result,
            } => {
                if let Some(slot) = self.store.stack_details.get_mut(&stack_id) {
                    slot.finish(gen, result, now);
                }
            }
            Reply::Resource {
                stack_id,
                resource,
                gen,
                result,
            } => {
                if let Some(slot) = self.store.resources.get_mut(&(stack_id, resource)) {
                    slot.finish(gen, result, now);
                }
            }
            Reply::Server { key, gen, result } => {
                if let Some(slot) = self.store.servers.get_mut(&key) {
                    slot.finish(gen, result, now);
                }
            }
            Reply::Rollout(r) => self.apply_rollout_reply(r),
            Reply::Action(r) => self.apply_action_reply(r),
        }
        // New facts: the models follow here, once, not in the frames that draw them.
        self.store.refresh_models(now);
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
            if let ViewKind::Events { stack }
            | ViewKind::Tree { stack, .. }
            | ViewKind::Outputs { stack, .. } = &mut v.kind
            {
                if stack.id == id && stack.name.is_none() {
                    stack.name = Some(name.clone());
                }
            }
        }
    }

    /// Start the fetches the current view needs: when due (one pending per slot), or all
    /// of them when `force` (a newer generation then supersedes any pending answer).
    pub fn plan_refresh(&mut self, force: bool) {
        // After an action, faster until the cloud is done with it.
        let every = self.plan_settle(self.refresh);
        let plan = Plan {
            force,
            now: self.now,
            every,
            paused: self.view().tail.paused,
        };
        let kind = self.view().kind.clone();
        self.screen_of(&kind).plan(self, plan);
        // A view that reads a node group's members for the first time has facts the models
        // have not seen (a rollout's status taken in before its members were asked for).
        self.store.refresh_models(self.now);
    }

    pub(crate) fn want_stacks(&mut self, force: bool, now: DateTime<Utc>, every: Duration) {
        self.fetch_when_due(
            force,
            now,
            every,
            |s| &mut s.stacks.meta,
            |gen| Request::Stacks { gen },
        );
    }

    pub(crate) fn want_server(
        &mut self,
        target: ServerTarget,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
    ) {
        let key = target.key.clone();
        self.fetch_when_due(
            force,
            now,
            every,
            |s| &mut s.servers.entry(key.clone()).or_default().meta,
            |gen| Request::Server { target, gen },
        );
    }

    /// Start a fetch into the slot `meta` finds when due (or forced): a new generation,
    /// the slot marked in flight, and the request `request` makes of the generation.
    pub(crate) fn want_slot(
        &mut self,
        force: bool,
        every: Duration,
        meta: impl Fn(&mut Store) -> &mut FetchMeta,
        request: impl FnOnce(u64) -> Request,
    ) {
        self.fetch_when_due(force, self.now, every, meta, request);
    }

    /// [`Self::want_slot`] with the time the refresh plan was made at.
    fn fetch_when_due(
        &mut self,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
        meta: impl Fn(&mut Store) -> &mut FetchMeta,
        request: impl FnOnce(u64) -> Request,
    ) {
        if force || meta(&mut self.store).due(now, every) {
            let gen = self.gen();
            meta(&mut self.store).begin(gen, now);
            self.outbox.push(request(gen));
        }
    }

    /// The tree, the stack's events (siblings' durations and hook pauses come from them) and
    /// the Nova record of the first causes that are servers.
    pub(crate) fn want_tree(
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
        let id = stack.id.clone();
        self.fetch_when_due(
            force,
            now,
            every * 2,
            |s| &mut s.trees.entry(id.clone()).or_default().meta,
            |gen| Request::Tree {
                stack,
                depth: TREE_DEPTH,
                gen,
            },
        );
        // A server and its console log per look: at a quarter of the refresh pace.
        for target in servers {
            self.want_server(target, force, now, every * 4);
        }
    }

    pub(crate) fn want_clusters(&mut self, force: bool, now: DateTime<Utc>, every: Duration) {
        // The list costs requests for every cluster (its detail, its node-group count), so
        // it never goes faster than the refresh: a settle burst follows its cluster alone
        // (`want_cluster`) and leaves the list at its own pace.
        let every = every.max(self.refresh);
        self.fetch_when_due(
            force,
            now,
            every,
            |s| &mut s.clusters.meta,
            |gen| Request::Clusters { gen },
        );
    }

    /// The one cluster `cluster` read alone (its row in the list patched with the answer).
    pub(crate) fn want_cluster(
        &mut self,
        cluster: &Cluster,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
    ) {
        self.fetch_when_due(
            force,
            now,
            every,
            |s| s.cluster_reads.entry(cluster.id.clone()).or_default(),
            |gen| Request::Cluster {
                cluster: cluster.clone(),
                gen,
            },
        );
    }

    pub(crate) fn want_nodegroups(
        &mut self,
        cluster: &Cluster,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
    ) {
        self.fetch_when_due(
            force,
            now,
            every,
            |s| &mut s.nodegroups.entry(cluster.id.clone()).or_default().meta,
            |gen| Request::NodeGroups {
                cluster: cluster.clone(),
                gen,
            },
        );
    }

    pub(crate) fn want_nodes(
        &mut self,
        g: &NodeGroup,
        force: bool,
        now: DateTime<Utc>,
        every: Duration,
    ) {
        self.fetch_when_due(
            force,
            now,
            every,
            |s| {
                let set = s.nodes.entry(g.id.clone()).or_default();
                // The group the model reads (its image), until its cluster's list has it.
                set.nodegroup.get_or_insert_with(|| g.clone());
                &mut set.meta
            },
            |gen| Request::Nodes {
                nodegroup: g.clone(),
                gen,
            },
        );
    }

    pub(crate) fn want_events(
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
        let wanted: HashSet<String> = self.screen().node_streams(&self.store);
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
        let kind = self.view().kind.clone();
        let screen = self.screen_of(&kind);
        let faults = self.faults_only;
        let last = self.nav.len() - 1;
        let view = &mut self.nav[last];
        let ctx = RowCtx {
            now: self.now,
            theme: &self.theme,
            abs_time: view.tail.abs_time,
            models: Some(&self.store.models),
        };
        view.table.page = screen.page(self.size.1);
        // A text view has nothing to sync (its scroll is bounded when drawn).
        if let Some(rows) = screen.table(&self.store, &view.table, faults) {
            rows.sync(&mut view.table, &ctx, faults);
            screen.after_sync(view, rows.as_ref(), &self.store);
        }
    }

    fn table_op(&mut self, op: TableOp) {
        let kind = self.view().kind.clone();
        let screen = self.screen_of(&kind);
        let width = self.size.0.saturating_sub(2) as usize;
        if let Some(total) = screen.text_lines(self, width) {
            return self.scroll_text(op, total);
        }
        let last = self.nav.len() - 1;
        let view = &mut self.nav[last];
        if screen.stops_follow(op) {
            view.tail.follow = false;
        }
        let faults = self.faults_only;
        if let Some(rows) = screen.table(&self.store, &view.table, faults) {
            rows.op(&mut view.table, op);
        }
    }

    /// Table keys scroll a text view of `total` lines.
    fn scroll_text(&mut self, op: TableOp, total: usize) {
        // The text's height at the terminal's width bounds the scroll: header, crumbs,
        // status and footer lines and the two borders are not the text's.
        let h = self.size.1;
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
    }
}

/// Handles for the console's unit tests, which shape a state the keys cannot reach.
#[cfg(test)]
impl App {
    pub(crate) fn keys_mut(&mut self) -> &mut KeyMap {
        &mut self.keys
    }

    pub(crate) fn mode_mut(&mut self) -> &mut Mode {
        &mut self.mode
    }

    pub(crate) fn info_mut(&mut self) -> &mut CloudInfo {
        &mut self.info
    }

    pub(crate) fn set_now(&mut self, now: DateTime<Utc>) {
        self.now = now;
    }

    pub(crate) fn set_read_only(&mut self, read_only: bool) {
        self.read_only = read_only;
    }

    pub(crate) fn clear_quit(&mut self) {
        self.should_quit = false;
    }
}

/// The stacks whose events the dashboard tails: the cluster's and its node groups'.
pub fn dashboard_stacks(cluster: &Cluster, groups: &[NodeGroup]) -> Vec<view::StackTarget> {
    let mut out: Vec<view::StackTarget> = Vec::new();
    // A plain stack's groups are its nested stacks: its own events (read nested) hold
    // theirs already, and reading them again would show each event twice.
    let groups = match crate::service::plain_stack::is_plain_stack(cluster) {
        true => &[],
        false => groups,
    };
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
