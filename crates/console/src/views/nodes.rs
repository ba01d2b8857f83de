//! The nodes of a node group (or of any stack seen as one): statuses first, addresses and
//! server names as they stream in. Enter opens a node's Nova server.

use super::nodegroups::group_stack;
use super::{Plan, Rows, Screen, Table};
use crate::draw::node_summary::{heat_map_title, summary_line, verdict_lines, zone_groups, Timing};
use crate::draw::panes::{data_table, message_box};
use crate::keys::{self, KeyContext};
use crate::model::{terminal_safe, Cluster, NodeGroup, ServerTarget};
use crate::progress::Progress;
use crate::state::store::{FetchMeta, NodeRow, Store};
use crate::state::view::{StackTarget, View, ViewKind};
use crate::state::yank::Yank;
use crate::state::{App, Level};
use crate::widgets::heatmap::{layout, scale_note, HeatMap};
use crate::widgets::table::{pane_title, TableState};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::{Block, Borders, Paragraph};
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
        let server_id = s.server_id_of(&n.key, n.server_id.as_ref());
        Some(match (id, &server_id, &n.stack_id, &n.ip) {
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
        // The summary's model: its update's, when one is under way (see `want_update`).
        let g = app
            .store()
            .current_nodegroup(&self.cluster.id, self.nodegroup)
            .clone();
        app.want_update(self.cluster, &g, p.force);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        state: &TableState,
        faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let Some(set) = store.nodes.get(&self.nodegroup.id) else {
            return Table::<NodeRow>::boxed(&[], &crate::resource_columns::NODE_COLUMNS, 0);
        };
        // Addresses and names only reorder or refilter when a filter, a sort or
        // faults-only looks at them.
        let ip_matters = state.filter().is_active() || state.sort.column.is_some() || faults;
        let version = if ip_matters {
            set.meta.version.wrapping_mul(1 << 32) ^ set.fill_version
        } else {
            set.meta.version.wrapping_mul(1 << 32)
        };
        Table::boxed(&set.rows, &crate::resource_columns::NODE_COLUMNS, version)
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
        let target = app
            .view()
            .table
            .selected(rows)
            .map(|r| ServerTarget::of_node(&r.node, self.nodegroup.stack_id.clone()));
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
        draw_nodes(app, view, nodegroup, app.store(), frame, area);
    }
}

// Drawing: the rollout summary, the fleet heat map (per zone) and the nodes table (the
// summary's parts are shared with the dashboard: `draw::node_summary`).

fn draw_nodes(
    app: &App,
    view: &View,
    nodegroup: &NodeGroup,
    store: &Store,
    frame: &mut Frame,
    area: Rect,
) {
    let Some(set) = store.nodes.get(&nodegroup.id).filter(|s| s.has_members) else {
        let meta = store.nodes.get(&nodegroup.id).map(|s| &s.meta);
        message_box(
            app,
            frame,
            area,
            &format!("Nodes of {}", terminal_safe(&nodegroup.name)),
            meta,
        );
        return;
    };
    let th = app.theme();
    // The model as computed when the facts came (`state::store::models`); none yet: nothing known.
    let idle = Progress::idle(app.now());
    let progress = store.models.progress(&nodegroup.id).unwrap_or(&idle);
    let timing = Timing::compute(set.rows.iter(), app.now()).with_pending(set.pending);
    let selected = view
        .table
        .selected(&set.rows)
        .map(|r| r.node.key.member.as_str());
    let groups = if view.show_heat_map {
        zone_groups(set, "", selected, progress)
    } else {
        Vec::new()
    };
    let inner_w = area.width.saturating_sub(2);
    let max_map = (area.height * 45 / 100).max(3);
    let map_h = if groups.is_empty() {
        0
    } else {
        layout(&groups, inner_w, max_map.saturating_sub(2)).0 + 2
    };
    let verdict = verdict_lines(app, store, nodegroup, set, None, inner_w as usize + 2);
    let [summary, stall, map, table] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(verdict.len() as u16),
        Constraint::Length(map_h),
        Constraint::Min(3),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(verdict), stall);
    frame.render_widget(
        Paragraph::new(summary_line(
            app,
            progress,
            store.models.observed(&nodegroup.id),
            &timing,
            Some((set.ips_ok, set.ips_failed, set.rows.len(), set.done)),
            // A plain stack's nodes have no count of their own to reconcile.
            (!crate::state::is_stack_standin(nodegroup)).then_some(nodegroup.node_count as usize),
            summary.width,
        )),
        summary,
    );
    if map_h > 0 {
        let note = scale_note(
            &groups,
            map.width.saturating_sub(2),
            map.height.saturating_sub(2),
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(th.border())
            .title(pane_title(heat_map_title(app, progress, note), map.width));
        let inner = block.inner(map);
        frame.render_widget(block, map);
        frame.render_widget(
            HeatMap {
                groups: &groups,
                theme: th,
            },
            inner,
        );
    }
    let title = format!(
        "Nodes of {} ({})",
        terminal_safe(&nodegroup.name),
        nodegroup.role.as_str()
    );
    data_table(
        app,
        frame,
        table,
        &title,
        Some(&set.rows),
        Some(&set.meta),
        &crate::resource_columns::NODE_COLUMNS,
        &view.table,
        "This node group has no members.",
        true,
    );
}
