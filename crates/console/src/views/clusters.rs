//! The cluster list (the root view): Enter opens a cluster's dashboard.

use super::{Plan, Rows, Screen, Table};
use crate::draw::panes;
use crate::state::store::{FetchMeta, Store};
use crate::state::view::{StackTarget, View};
use crate::state::yank::{pick, Yank};
use crate::state::App;
use crate::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;

pub struct Clusters;

impl Screen for Clusters {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let c = v.table.selected(s.clusters.data.as_deref()?)?;
        Some(pick(id, ("cluster id", &c.id), ("cluster name", &c.name)))
    }

    fn title(&self) -> &'static str {
        "Clusters"
    }

    fn crumb(&self) -> String {
        "clusters".into()
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        Some(&store.clusters.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_clusters(p.force, p.now, p.every);
        // A cluster under an update: its IN STATE is its update's age, which its node
        // groups tell (Magnum saves the cluster again on a scale of another group).
        let updating: Vec<_> = app
            .store()
            .clusters
            .data
            .iter()
            .flatten()
            .filter(|c| c.status.is_in_progress())
            .cloned()
            .collect();
        for c in &updating {
            app.want_nodegroups(c, false, p.now, p.every);
        }
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let items = store.clusters.data.as_deref().unwrap_or(&[]);
        Table::boxed(
            items,
            &crate::resource_columns::CLUSTER_COLUMNS,
            store.clusters.meta.version,
        )
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        let id = app.selected_cluster()?.stack_id?;
        Some(app.stack_target(&id))
    }

    fn open(&self, app: &mut App) {
        app.nav_dashboard();
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        panes::clusters(app, view, &app.store().clusters, frame, area);
    }
}
