//! The views: one module per view, each a [`Screen`] that says what the view is called,
//! which keys it offers, what it fetches and how often, which rows its table shows, what
//! Enter opens and how it draws (handing its data to the drawing: drawing never looks the
//! store up itself). The rest of the console reaches a view only through [`screen`], the
//! registry. Adding a view: a module here, its [`ViewKind`] variant and one line in
//! [`screen`] (both in this file), its key in `keys.rs`, and its data request if it needs
//! new data (see `outputs`, which was added this way).

mod clusters;
mod dashboard;
mod events;
mod fleet;
mod journal;
mod nodegroups;
mod nodes;
pub mod outputs;
mod rollout;
mod server;
mod stacks;
mod tree;

use super::keys::{self, KeyAction, KeyContext};
use super::state::store::{FetchMeta, Store};
use super::state::view::{StackTarget, View};
use super::state::yank::Yank;
use super::state::App;
use super::widgets::table::{Column, RowCtx, TableRow, TableState};
use crate::model::{Cluster, NodeGroup, ServerTarget};
use chrono::{DateTime, Utc};
use ratatui::layout::Rect;
use ratatui::Frame;
use std::collections::HashSet;
use std::time::Duration;

/// The views the navigation stack can hold, each with what it was opened on.
/// A handful of these live on the navigation stack; boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ViewKind {
    Clusters,
    Stacks,
    NodeGroups {
        cluster: Cluster,
    },
    Dashboard {
        cluster: Cluster,
    },
    Nodes {
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    Events {
        stack: StackTarget,
    },
    Tree {
        stack: StackTarget,
        focus: Option<String>,
    },
    Rollout {
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    Journal,
    /// The clusters of every cloud in clouds.yaml.
    Fleet,
    /// One node's Nova server (`server show` and its console log).
    Server {
        target: ServerTarget,
    },
    /// A stack's outputs; `shown` is the one whose value is evaluated and shown.
    Outputs {
        stack: StackTarget,
        shown: Option<String>,
    },
}

/// The registry: the behaviour of the view on the navigation stack.
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
        ViewKind::Server { target } => Box::new(server::Server { target }),
        ViewKind::Outputs { stack, shown } => Box::new(outputs::Outputs { stack, shown }),
    }
}

/// What one kind of view is. Only `title`, `crumb`, `meta`, `plan`, `table` and `draw` are
/// required; the rest have the plain table's behaviour.
pub trait Screen {
    /// The view's name in titles ("Stack tree").
    fn title(&self) -> &'static str;

    /// Its segment of the breadcrumbs (`events my-stack`).
    fn crumb(&self) -> String;

    /// The key contexts it offers, most specific first (`Global` is always added last).
    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::TABLE_VIEW
    }

    /// Whether it has something for `action` to act on.
    fn offers(&self, _action: KeyAction) -> bool {
        true
    }

    /// The data slot whose age and error the header shows.
    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta>;

    /// Start the fetches it needs (see [`Plan`]).
    fn plan(&self, app: &mut App, plan: Plan);

    /// Its table's rows as last fetched (`None` for a text view). `state` is the view's
    /// table, for views whose cached order depends on the filter or sort.
    fn table<'s>(
        &self,
        store: &'s Store,
        state: &TableState,
        faults: bool,
    ) -> Option<Box<dyn Rows + 's>>;

    /// The table's page at a terminal `height` (rows moved by page up / down).
    fn page(&self, height: u16) -> usize {
        (height as usize).saturating_sub(8).max(1)
    }

    /// After the table caught up with its rows: move the selection where the view wants it
    /// (the followed tail, the batch in flight, a resource asked for).
    fn after_sync(&self, _view: &mut View, _rows: &dyn Rows, _store: &Store) {}

    /// A table key moved the selection: whether following stops.
    fn stops_follow(&self, op: TableOp) -> bool {
        matches!(op, TableOp::Move(-1) | TableOp::PageUp | TableOp::Top)
    }

    /// For a text view: its height in lines at `width` (table keys then scroll it).
    fn text_lines(&self, _app: &App, _width: usize) -> Option<usize> {
        None
    }

    /// The node groups whose node streams it reads (others are stopped when it opens).
    fn node_streams(&self, _store: &Store) -> HashSet<String> {
        HashSet::new()
    }

    /// The stack the `e` / `t` / `O` keys act on from this view.
    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        None
    }

    /// Enter (the default opens nothing).
    fn open(&self, _app: &mut App) {}

    /// Draw the view's body.
    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect);

    /// What `y` (the id) or `Y` (the name) copies from the selected row: what it is, and the
    /// text (`state::yank` says what an operator pastes it into). Nothing by default.
    fn yank(&self, _store: &Store, _view: &View, _what: Yank) -> Option<(&'static str, String)> {
        None
    }
}

/// One refresh: forced (`r`) or periodic, at `every`, with the view's tail paused or not.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub force: bool,
    pub now: DateTime<Utc>,
    pub every: Duration,
    pub paused: bool,
}

/// A table key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableOp {
    Move(isize),
    PageUp,
    PageDown,
    Top,
    Bottom,
    SortNext,
}

/// A view's rows, typed inside, seen from the state without their type.
pub trait Rows {
    /// Bring the table's filtered, sorted index up to date.
    fn sync(&self, state: &mut TableState, ctx: &RowCtx, faults: bool);
    fn op(&self, state: &mut TableState, op: TableOp);
    fn select_id(&self, state: &mut TableState, id: &str);
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
