//! A cluster's dashboard: its node groups, the fleet heat map and the event tail of the
//! cluster's and its groups' stacks.

use super::nodegroups::{group_stack, groups_table};
use super::{Plan, Rows, Screen};
use crate::model::Cluster;
use crate::tui::draw::dashboard;
use crate::tui::keys::{self, KeyContext};
use crate::tui::state::dashboard_stacks;
use crate::tui::state::store::{FetchMeta, Store};
use crate::tui::state::view::{StackTarget, View};
use crate::tui::state::yank::Yank;
use crate::tui::state::App;
use crate::tui::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;
use std::collections::HashSet;

pub struct Dashboard<'a> {
    pub cluster: &'a Cluster,
}

impl Screen for Dashboard<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
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

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let cluster = app.store().current_cluster(self.cluster);
        dashboard::draw(app, view, cluster, app.store(), frame, area);
    }
}
