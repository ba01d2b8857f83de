//! The operator journal: what this console (and others) did, newest at the bottom.

use super::{Plan, Rows, Screen, Table, TableOp};
use crate::draw::panes::data_table;
use crate::keys::{self, KeyContext};
use crate::state::journal_reads::JournalLog;
use crate::state::store::{FetchMeta, Store};
use crate::state::view::View;
use crate::state::yank::Yank;
use crate::state::App;
use crate::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;

pub struct Journal;

impl Screen for Journal {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let e = &v.table.selected(&s.journal.rows)?.entry;
        if id {
            let line = caldera_cloud::model::json_string(e).ok()?;
            Some(("journal entry", line))
        } else {
            Some(("target", e.target.clone()))
        }
    }

    fn title(&self) -> &'static str {
        "Journal"
    }

    fn crumb(&self) -> String {
        "journal".into()
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::JOURNAL_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        Some(&store.journal.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_journal(p.force);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let log = &store.journal;
        Table::boxed(
            &log.rows,
            &crate::action_columns::JOURNAL_COLUMNS,
            log.meta.version,
        )
    }

    fn after_sync(&self, view: &mut View, rows: &dyn Rows, _store: &Store) {
        if view.tail.follow {
            rows.op(&mut view.table, TableOp::Bottom);
        }
    }

    fn open(&self, app: &mut App) {
        app.journal_detail();
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        draw_journal(app, view, &app.store().journal, frame, area);
    }
}

// Drawing: every action recorded, newest last, errors in red.

fn draw_journal(app: &App, view: &View, log: &JournalLog, frame: &mut Frame, area: Rect) {
    let loaded = log.meta.fetched_at.is_some();
    data_table(
        app,
        frame,
        area,
        "Journal",
        loaded.then_some(log.rows.as_slice()),
        Some(&log.meta),
        &crate::action_columns::JOURNAL_COLUMNS,
        &view.table,
        "No actions recorded yet.",
        true,
    );
}
