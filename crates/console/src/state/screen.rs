//! What the state needs of a view, declared here so that the state names no view: the
//! [`Screen`] trait each view implements (in `tui::views`, one module per view), and the
//! [`Registry`] of them the state is given when it is made (`views::REGISTRY`).

use super::store::{FetchMeta, Store};
use super::view::{StackTarget, View, ViewKind};
use super::yank::Yank;
use super::App;
use crate::keys::{self, KeyAction, KeyContext};
use crate::widgets::table::{RowCtx, TableState};
use chrono::{DateTime, Utc};
use ratatui::layout::Rect;
use ratatui::Frame;
use std::collections::HashSet;
use std::time::Duration;

/// The views, as the state reaches them.
#[derive(Clone, Copy)]
pub struct Registry {
    /// The behaviour of a view on the navigation stack.
    pub screen: for<'k> fn(&'k ViewKind) -> Box<dyn Screen + 'k>,
    /// Keys that open a view from anywhere: whether `action` was one (and was handled).
    pub on_key: fn(&mut App, KeyAction) -> bool,
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

    /// Its table's rows as last fetched (`None`, the default, for a text view). `state` is
    /// the view's table, for views whose cached order depends on the filter or sort.
    fn table<'s>(
        &self,
        _store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        None
    }

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

    /// A key the view answers itself, before the state's own handling (`D` on a tree row,
    /// the keys of the dashboard's event tail while it has them): whether it took the key.
    fn own_key(&self, _app: &mut App, _action: KeyAction) -> bool {
        false
    }

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
