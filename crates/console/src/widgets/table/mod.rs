//! A data table for thousands of rows: the data stays where it is (a slice owned by the
//! store), the table keeps a cached, filtered and sorted index over it, the selection is
//! kept by row id, and only the visible rows are built when drawing.

mod draw;
mod filter;
mod sort;
mod state;

pub use draw::{cut_line_marked, cut_marked, draw_table, pane_title, title_line, TableLook};
pub use filter::Filter;
pub use sort::{SortKey, SortState};
pub use state::TableState;

use super::super::theme::Theme;
use chrono::{DateTime, Utc};
use ratatui::layout::Constraint;
use ratatui::style::Style;
use std::borrow::Cow;

/// What a cell function may look at besides its row.
#[derive(Clone, Copy)]
pub struct RowCtx<'a> {
    pub now: DateTime<Utc>,
    pub theme: &'a Theme,
    /// Show absolute instead of relative times.
    pub abs_time: bool,
    /// The progress models and times in state, for the columns that show them (none in
    /// tables that do not).
    pub models: Option<&'a dyn RowModels>,
}

/// What the columns of progress and time in state read, by row id: the store's models,
/// computed when the facts came (the table only shows them).
pub trait RowModels {
    fn progress(&self, id: &str) -> Option<&crate::progress::Progress>;
    fn in_state(&self, id: &str) -> Option<&crate::progress::InState>;
    /// The phase of member `member` of node group `group` in that group's progress.
    fn phase(&self, group: &str, member: &str) -> Option<crate::progress::Phase>;
}

/// A row type the table can show.
pub trait TableRow {
    /// Identity kept across refreshes (selection and marks follow it).
    fn row_id(&self) -> Cow<'_, str>;
    /// Whether the row is a fault (for the faults-only toggle).
    fn is_fault(&self) -> bool;
}

/// One column: title, width, text, sort key and style, all plain functions.
pub struct Column<T> {
    pub title: &'static str,
    /// Hide the column when the table is narrower than this (0: always shown).
    pub hide_below: u16,
    pub width: Constraint,
    pub text: fn(&T, &RowCtx) -> String,
    pub sort: fn(&T, &RowCtx) -> SortKey,
    pub style: fn(&T, &RowCtx) -> Style,
}

/// A style function for columns without their own colour.
pub fn plain<T>(_: &T, ctx: &RowCtx) -> Style {
    Style::default().fg(ctx.theme.fg)
}

/// A style function for secondary columns.
pub fn muted<T>(_: &T, ctx: &RowCtx) -> Style {
    ctx.theme.muted()
}
