//! The views: one module per view, each a [`Screen`] that says what the view is called,
//! which keys it offers, what it fetches and how often, which rows its table shows, what
//! Enter opens, what `y`/`Y` copy and how it draws (handing its data to the drawing: drawing
//! never looks the store up itself). A view is one module: its drawing follows its `Screen`
//! impl there, using the shared parts in `draw/` (panes, detail text, event tail lines, node
//! summary, wrapping); a drawing part that a second view needs moves to `draw/`, so that views
//! do not import each other's drawing. The state reaches a view only through [`REGISTRY`]
//! (given to `App` when it is made; the state names no view). Adding a view: a module here
//! with its `mod` line and one line in [`screen`], its [`ViewKind`] variant (`state/view.rs`),
//! its key in `keys.rs` (and one line in `on_key` when the key opens it from anywhere), and
//! its data request if it needs new data (see `outputs`, which was added this way).

mod clusters;
mod dashboard;
mod event_detail;
mod events;
mod fleet;
mod journal;
mod nodegroups;
mod nodes;
mod outputs;
mod resource_detail;
mod rollout;
mod server_detail;
mod stack_detail;
mod stacks;
mod tree;

use super::config::Resolved;
use super::keys::KeyAction;
pub use super::state::screen::{Plan, Registry, Rows, Screen, TableOp};
pub use super::state::view::ViewKind;
use super::state::App;
use super::widgets::table::{Column, RowCtx, TableRow, TableState};
use crate::service::CloudInfo;
use chrono::{DateTime, Utc};

/// The dashboard's whole event tail, oldest first: what its selection moves over (for the
/// tests that move it).
#[cfg(test)]
pub(crate) use dashboard::whole_tail as dashboard_tail;

/// What a text view (a detail) offers: it scrolls with the table keys, but has no rows to
/// open, mark, sort or filter.
pub fn text_offers(action: KeyAction) -> bool {
    !matches!(
        action,
        KeyAction::Open
            | KeyAction::Mark
            | KeyAction::ClearMarks
            | KeyAction::SortNext
            | KeyAction::SortReverse
            | KeyAction::Filter
    )
}

/// The registry: the behaviour of a view on the navigation stack.
pub fn screen(kind: &ViewKind) -> Box<dyn Screen + '_> {
    match kind {
        ViewKind::Clusters => Box::new(clusters::Clusters),
        ViewKind::Stacks => Box::new(stacks::Stacks),
        ViewKind::NodeGroups { cluster } => Box::new(nodegroups::NodeGroups { cluster }),
        ViewKind::Dashboard { cluster } => Box::new(dashboard::Dashboard { cluster }),
        ViewKind::Nodes { cluster, nodegroup } => Box::new(nodes::Nodes { cluster, nodegroup }),
        ViewKind::Events { stack } => Box::new(events::Events { stack }),
        ViewKind::Tree { stack, focus } => Box::new(tree::Tree { stack, focus }),
        ViewKind::Rollout { cluster, nodegroup } => {
            Box::new(rollout::Rollout { cluster, nodegroup })
        }
        ViewKind::Journal => Box::new(journal::Journal),
        ViewKind::Fleet => Box::new(fleet::Fleet),
        ViewKind::Server { target } => Box::new(server_detail::Server { target }),
        ViewKind::Outputs { stack, shown } => Box::new(outputs::Outputs { stack, shown }),
        ViewKind::Resource { stack, resource } => {
            Box::new(resource_detail::Resource { stack, resource })
        }
        ViewKind::Event { stack, event } => Box::new(event_detail::Event { stack, event }),
        ViewKind::Stack { stack } => Box::new(stack_detail::Stack { stack }),
    }
}

/// The generic table view: rows of one type with their columns and data version.
pub struct Table<'s, T> {
    pub items: &'s [T],
    pub cols: &'s [Column<T>],
    pub version: u64,
}

impl<'s, T: TableRow + 's> Table<'s, T> {
    pub fn boxed(
        items: &'s [T],
        cols: &'s [Column<T>],
        version: u64,
    ) -> Option<Box<dyn Rows + 's>> {
        Some(Box::new(Table {
            items,
            cols,
            version,
        }))
    }
}

impl<T: TableRow> Rows for Table<'_, T> {
    fn sync(&self, state: &mut TableState, ctx: &RowCtx, faults: bool) {
        state.sync(self.items, self.cols, ctx, self.version, faults);
    }

    fn op(&self, t: &mut TableState, op: TableOp) {
        match op {
            TableOp::Move(d) => t.move_by(d, self.items),
            TableOp::PageUp => t.page_up(self.items),
            TableOp::PageDown => t.page_down(self.items),
            TableOp::Top => t.top(self.items),
            TableOp::Bottom => t.bottom(self.items),
            TableOp::SortNext => t.sort.cycle(self.cols.len()),
        }
    }

    fn select_id(&self, state: &mut TableState, id: &str) {
        state.select_id(id, self.items);
    }
}

/// Keys that open a view from anywhere (the key table says which; a view with its own key adds
/// a line here): whether `action` was one.
fn on_key(app: &mut App, action: KeyAction) -> bool {
    match action {
        KeyAction::Outputs => outputs::open_for_context(app),
        KeyAction::StackDetail => stack_detail::open_for_context(app),
        _ => return false,
    }
    true
}

/// The views as the state reaches them: the state names no view (it gets this registry).
pub const REGISTRY: Registry = Registry { screen, on_key };

impl App {
    /// The console's state over the views of this module.
    pub fn new(info: CloudInfo, resolved: Resolved, now: DateTime<Utc>) -> App {
        App::with_views(info, resolved, now, REGISTRY)
    }
}
