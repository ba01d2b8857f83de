//! A cluster's node groups: Enter opens a group's nodes.

use super::{Plan, Rows, Screen, Table};
use crate::draw::panes;
use crate::keys::{self, KeyContext};
use crate::model::{Cluster, NodeGroup};
use crate::state::store::{FetchMeta, Store};
use crate::state::view::{StackTarget, View};
use crate::state::yank::{pick, Yank};
use crate::state::App;
use crate::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;
use std::collections::HashSet;

pub struct NodeGroups<'a> {
    pub cluster: &'a Cluster,
}

/// The node groups of `cluster` as last listed, as a table (shared with the dashboard).
pub(super) fn groups_table<'s>(store: &'s Store, cluster: &Cluster) -> Option<Box<dyn Rows + 's>> {
    let slot = store.nodegroups.get(&cluster.id);
    let items = slot.and_then(|s| s.data.as_deref()).unwrap_or(&[]);
    let version = slot.map(|s| s.meta.version).unwrap_or(0);
    Table::boxed(items, &crate::resource_columns::NODEGROUP_COLUMNS, version)
}

/// The groups of `cluster` under an update (Heat or Magnum says it runs, or a rollout is
/// known): their members are read so that their rows show the progress model.
fn updating_groups(store: &Store, cluster: &Cluster) -> Vec<NodeGroup> {
    let listed = store
        .nodegroups
        .get(&cluster.id)
        .and_then(|s| s.data.as_deref())
        .unwrap_or_default();
    listed
        .iter()
        .filter(|g| {
            g.status.is_in_progress()
                || store
                    .rollouts
                    .get(&g.id)
                    .is_some_and(|r| r.status.is_some())
        })
        .cloned()
        .collect()
}

/// `y` / `Y` on a node group (also the dashboard's table): its id or name.
pub(super) fn yank_group(
    s: &Store,
    v: &View,
    cluster: &Cluster,
    id: bool,
) -> Option<(&'static str, String)> {
    let g = v
        .table
        .selected(s.nodegroups.get(&cluster.id)?.data.as_deref()?)?;
    Some(pick(
        id,
        ("node group id", &g.id),
        ("node group name", &g.name),
    ))
}

/// The stack of the selected (or the view's) node group.
pub(super) fn group_stack(app: &App) -> Option<StackTarget> {
    let id = app.selected_nodegroup()?.1.stack_id?;
    Some(app.stack_target(&id))
}

impl Screen for NodeGroups<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        yank_group(s, v, self.cluster, id)
    }

    fn title(&self) -> &'static str {
        "Node groups"
    }

    fn crumb(&self) -> String {
        format!("{} (node groups)", self.cluster.name)
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::NODEGROUPS_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.nodegroups.get(&self.cluster.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_nodegroups(self.cluster, p.force, p.now, p.every);
        for g in updating_groups(app.store(), self.cluster) {
            app.want_nodes(&g, p.force, p.now, p.every * 2);
            // Its update's model, as `caldera nodegroups` reads it (an update nobody here
            // drives shows nothing in the members alone).
            app.want_update(self.cluster, &g, p.force);
        }
    }

    fn node_streams(&self, store: &Store) -> HashSet<String> {
        updating_groups(store, self.cluster)
            .into_iter()
            .map(|g| g.id)
            .collect()
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        groups_table(store, self.cluster)
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        group_stack(app)
    }

    fn open(&self, app: &mut App) {
        app.nav_nodes();
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let slot = app.store().nodegroups.get(&self.cluster.id);
        panes::nodegroups(app, view, self.cluster, slot, frame, area, true);
    }
}
