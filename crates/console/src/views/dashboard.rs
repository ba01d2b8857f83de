//! A cluster's dashboard: its node groups, the fleet heat map and the event tail of the
//! cluster's and its groups' stacks. The keys go to the node groups; `tab` gives them to the
//! event tail (as k9s moves between panes), where the table keys move a selection and Enter
//! opens the selected event whole (`views::event`), as it does in the events view.

use super::nodegroups::{group_stack, groups_table};
use super::{Plan, Rows, Screen};
use crate::model::{Cluster, StackEvent};
use crate::tui::draw::dashboard;
use crate::tui::keys::{self, KeyAction, KeyContext};
use crate::tui::state::dashboard_stacks;
use crate::tui::state::store::{FetchMeta, Store};
use crate::tui::state::view::{StackTarget, View, ViewKind};
use crate::tui::state::yank::{pick, Yank};
use crate::tui::state::App;
use crate::tui::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;
use std::collections::HashSet;

pub struct Dashboard<'a> {
    pub cluster: &'a Cluster,
}

/// Lines a page key moves the tail's selection by.
const TAIL_PAGE: isize = 10;

impl Dashboard<'_> {
    /// The tail's keys while it has them: whether `action` was one.
    fn tail_key(&self, app: &mut App, action: KeyAction) -> bool {
        match action {
            KeyAction::Back => app.view_mut().tail_pick.focused = false,
            KeyAction::Up => self.move_pick(app, -1),
            KeyAction::Down => self.move_pick(app, 1),
            KeyAction::PageUp => self.move_pick(app, -TAIL_PAGE),
            KeyAction::PageDown => self.move_pick(app, TAIL_PAGE),
            KeyAction::Top => self.move_pick(app, isize::MIN),
            // The newest event, and the ones after it as they come.
            KeyAction::Bottom | KeyAction::Follow => app.view_mut().tail_pick.event = None,
            KeyAction::Open => self.open_event(app),
            _ => return false,
        }
        true
    }

    /// Move the tail's selection by `by` events (older when negative).
    fn move_pick(&self, app: &mut App, by: isize) {
        let cluster = app.store().current_cluster(self.cluster);
        let tail = dashboard::whole_tail(app, app.store(), cluster);
        let Some(at) = dashboard::picked(&tail, app.view().tail_pick.event.as_ref()) else {
            return;
        };
        let to = at
            .saturating_add_signed(by)
            .min(tail.len().saturating_sub(1));
        let event = tail.get(to).map(|(log, e)| (log.to_string(), e.id.clone()));
        app.view_mut().tail_pick.event = event;
    }

    /// The selected event of the tail with the stack whose log holds it.
    fn picked_event(&self, app: &App) -> Option<(StackTarget, StackEvent)> {
        let cluster = app.store().current_cluster(self.cluster);
        let tail = dashboard::whole_tail(app, app.store(), cluster);
        let at = dashboard::picked(&tail, app.view().tail_pick.event.as_ref())?;
        let &(log, e) = tail.get(at)?;
        let stack = StackTarget {
            id: log.to_string(),
            name: None,
        };
        Some((stack, e.clone()))
    }

    /// The selected event as the store holds it (the newest of the tail's logs when none
    /// is picked), for `y` / `Y`.
    fn tail_event<'s>(&self, s: &'s Store, v: &View) -> Option<&'s StackEvent> {
        if let Some((log, id)) = &v.tail_pick.event {
            return s.events.get(log)?.events.iter().find(|e| &e.id == id);
        }
        let cluster = s.current_cluster(self.cluster);
        let groups = s
            .nodegroups
            .get(&cluster.id)
            .and_then(|g| g.data.as_deref());
        dashboard_stacks(cluster, groups.unwrap_or_default())
            .iter()
            .filter_map(|st| s.events.get(&st.id)?.events.last())
            .max_by_key(|e| e.time)
    }

    /// Enter in the tail: the selected event whole.
    fn open_event(&self, app: &mut App) {
        match self.picked_event(app) {
            Some((stack, event)) => app.push(ViewKind::Event { stack, event }),
            None => app.set_status(crate::tui::state::Level::Info, "no event in the tail"),
        }
    }
}

impl Screen for Dashboard<'_> {
    /// `y` / `Y`: see `state::yank`.
    /// With the tail's keys, the selected event's (as in the events view).
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        if v.tail_pick.focused {
            let e = self.tail_event(s, v)?;
            let (event, resource) = (("event id", &*e.id), ("resource name", &*e.resource_name));
            return Some(pick(id, event, resource));
        }
        super::nodegroups::yank_group(s, v, self.cluster, id)
    }

    fn title(&self) -> &'static str {
        "Dashboard"
    }

    fn crumb(&self) -> String {
        self.cluster.name.clone()
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::DASHBOARD_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.nodegroups.get(&self.cluster.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        let cluster = self.cluster;
        // The header's counts come from the cluster list: keep it fresh too.
        app.want_clusters(p.force, p.now, p.every);
        app.want_nodegroups(cluster, p.force, p.now, p.every);
        let groups = app
            .store()
            .nodegroups
            .get(&cluster.id)
            .and_then(|s| s.data.clone())
            .unwrap_or_default();
        for g in &groups {
            app.want_nodes(g, p.force, p.now, p.every * 2);
        }
        if !p.paused {
            for stack in dashboard_stacks(cluster, &groups) {
                app.want_events(&stack, p.force, p.now, p.every);
            }
        }
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        groups_table(store, self.cluster)
    }

    /// The node group pane is a short table above the heat map and the tail.
    fn page(&self, _height: u16) -> usize {
        5
    }

    fn node_streams(&self, store: &Store) -> HashSet<String> {
        store
            .nodegroups
            .get(&self.cluster.id)
            .and_then(|s| s.data.as_ref())
            .map(|gs| gs.iter().map(|g| g.id.clone()).collect())
            .unwrap_or_default()
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        group_stack(app)
    }

    fn open(&self, app: &mut App) {
        app.nav_nodes();
    }

    /// `tab` moves the keys between the node groups and the event tail; while the tail has
    /// them, the table keys, Enter and Esc are its own.
    fn own_key(&self, app: &mut App, action: KeyAction) -> bool {
        let pick = &mut app.view_mut().tail_pick;
        if action == KeyAction::FocusTail {
            pick.focused = !pick.focused;
            return true;
        }
        pick.focused && self.tail_key(app, action)
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let cluster = app.store().current_cluster(self.cluster);
        dashboard::draw(app, view, cluster, app.store(), frame, area);
    }
}
