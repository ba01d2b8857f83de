//! A node group's rollout: its nodes by batch, the batch in flight followed.

use super::nodegroups::group_stack;
use super::{Plan, Rows, Screen, Table, TableOp};
use crate::model::{Cluster, NodeGroup};
use crate::tui::draw::rollout;
use crate::tui::keys::{self, KeyContext};
use crate::tui::state::store::{FetchMeta, Store};
use crate::tui::state::view::{StackTarget, View};
use crate::tui::state::yank::Yank;
use crate::tui::state::App;
use crate::tui::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;

pub struct Rollout<'a> {
    pub cluster: &'a Cluster,
    pub nodegroup: &'a NodeGroup,
}

impl Screen for Rollout<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let n = v
            .table
            .selected(s.rollouts.get(&self.nodegroup.id)?.nodes())?;
        Some(match (id, n.index) {
            (true, Some(i)) => ("member index", i.to_string()),
            _ => ("node name", n.name.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Rollout"
    }

    fn crumb(&self) -> String {
        format!("rollout {}", self.nodegroup.name)
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::ROLLOUT_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.rollouts.get(&self.nodegroup.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_rollout(self.cluster, self.nodegroup, p.force);
        // The rows' server names and addresses come from the node group's nodes, at a
        // slow pace (a whole address stream costs a 1000-node group many requests;
        // names and addresses seldom change during a rollout).
        app.want_nodes(self.nodegroup, p.force, p.now, p.every * 15);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let slot = store.rollouts.get(&self.nodegroup.id);
        let items = slot.map(|s| s.nodes()).unwrap_or(&[]);
        Table::boxed(
            items,
            &crate::tui::action_columns::ROLLOUT_COLUMNS,
            slot.map(|s| s.meta.version).unwrap_or(0),
        )
    }

    /// Until the operator moves, the selection follows the batch in flight.
    fn after_sync(&self, view: &mut View, rows: &dyn Rows, store: &Store) {
        let slot = store.rollouts.get(&self.nodegroup.id);
        let items = slot.map(|s| s.nodes()).unwrap_or(&[]);
        let current = slot
            .and_then(|s| s.status.as_ref())
            .and_then(|s| s.current_batch);
        if view.tail.follow {
            if let Some(n) = current.and_then(|b| items.iter().find(|n| n.batch == b)) {
                rows.select_id(&mut view.table, &n.name);
            }
        }
    }

    /// Any move stops following the batch (a sort keeps it).
    fn stops_follow(&self, op: TableOp) -> bool {
        op != TableOp::SortNext
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        group_stack(app)
    }

    fn open(&self, app: &mut App) {
        app.nav_nodes();
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let slot = app.store().rollouts.get(&self.nodegroup.id);
        rollout::draw(app, view, self.nodegroup, slot, frame, area);
    }
}
