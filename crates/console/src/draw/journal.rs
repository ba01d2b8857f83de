//! The journal view: every action recorded, newest last, errors in red.

use super::panes::data_table;
use crate::tui::state::journal::JournalLog;
use crate::tui::state::view::View;
use crate::tui::state::App;
use ratatui::layout::Rect;
use ratatui::Frame;

pub fn draw(app: &App, view: &View, log: &JournalLog, frame: &mut Frame, area: Rect) {
    let loaded = log.meta.fetched_at.is_some();
    data_table(
        app,
        frame,
        area,
        "Journal",
        loaded.then_some(log.rows.as_slice()),
        Some(&log.meta),
        &crate::tui::action_columns::JOURNAL_COLUMNS,
        &view.table,
        "No actions recorded yet.",
        true,
    );
}
