//! The nodes of a node group (or of any stack seen as one): statuses first, addresses and
//! server names as they stream in. Enter opens a node's Nova server.

use super::nodegroups::group_stack;
use super::{Plan, Rows, Screen, Table};
use crate::model::{Cluster, NodeGroup, ServerTarget};
use crate::tui::draw::nodes;
use crate::tui::keys::{self, KeyContext};
use crate::tui::state::store::{FetchMeta, NodeRow, Store};
use crate::tui::state::view::{StackTarget, View, ViewKind};
use crate::tui::state::yank::Yank;
use crate::tui::state::{App, Level};
use crate::tui::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;
use std::collections::HashSet;

pub struct Nodes<'a> {
    pub cluster: &'a Cluster,
    pub nodegroup: &'a NodeGroup,
}

impl Screen for Nodes<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let n = &v
            .table
            .selected(&s.nodes.get(&self.nodegroup.id)?.rows)?
            .node;
        Some(match (id, &n.server_id, &n.stack_id, &n.ip) {
            (true, Some(server), _, _) => ("server id", server.clone()),
            (true, None, Some(stack), _) => ("member stack id", stack.clone()),
            (true, None, None, _) => ("member", n.key.member.clone()),
            (false, _, _, Some(ip)) => ("address", ip.clone()),
            (false, _, _, None) => ("node name (no address yet)", n.name.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Nodes"
    }

    fn crumb(&self) -> String {
        self.nodegroup.name.clone()
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::NODES_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.nodes.get(&self.nodegroup.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        // The wanted count (`count N ≠ members M`) comes from the node group list.
        app.want_nodegroups(self.cluster, p.force, p.now, p.every);
        app.want_nodes(self.nodegroup, p.force, p.now, p.every * 2);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        state: &TableState,
        faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let Some(set) = store.nodes.get(&self.nodegroup.id) else {
            return Table::<NodeRow>::boxed(&[], &crate::tui::resource_columns::NODE_COLUMNS, 0);
        };
        // Addresses and names only reorder or refilter when a filter, a sort or
        // faults-only looks at them.
        let ip_matters = state.filter().is_active() || state.sort.column.is_some() || faults;
        let version = if ip_matters {
            set.meta.version.wrapping_mul(1 << 32) ^ set.fill_version
        } else {
            set.meta.version.wrapping_mul(1 << 32)
        };
        Table::boxed(
            &set.rows,
            &crate::tui::resource_columns::NODE_COLUMNS,
            version,
        )
    }

    fn node_streams(&self, _store: &Store) -> HashSet<String> {
        [self.nodegroup.id.clone()].into_iter().collect()
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        group_stack(app)
    }

    /// Every node is a Nova server (Heat member, Magnum on Heat, Cluster API): its detail.
    /// The member in its stack tree stays one key away (`t`).
    fn open(&self, app: &mut App) {
        let rows = app
            .store()
            .nodes
            .get(&self.nodegroup.id)
            .map(|s| s.rows.as_slice())
            .unwrap_or(&[]);
        let target = app.view().table.selected(rows).map(|r| ServerTarget {
            key: r.node.key.clone(),
            name: r.node.name.clone(),
            server_id: r.node.server_id.clone(),
            member_stack: r.node.stack_id.clone(),
            group_stack: self.nodegroup.stack_id.clone(),
        });
        match target {
            Some(target) => {
                // Opened again: a fresh look (the console log moves on).
                app.store_mut().servers.remove(&target.key);
                app.push(ViewKind::Server { target })
            }
            None => app.set_status(Level::Warn, "no node selected"),
        }
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let nodegroup = app
            .store()
            .current_nodegroup(&self.cluster.id, self.nodegroup);
        nodes::draw(app, view, nodegroup, app.store(), frame, area);
    }
}
