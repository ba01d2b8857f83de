//! The event tail of one stack (and its nested stacks): follows new events, Enter opens the
//! event whole (`views::event`), and Enter there the event's resource in its stack's tree.

use super::{Plan, Rows, Screen, Table, TableOp};
use crate::tui::draw::events;
use crate::tui::keys::{self, KeyContext};
use crate::tui::state::store::{FetchMeta, Store};
use crate::tui::state::view::{StackTarget, View, ViewKind};
use crate::tui::state::yank::{pick, Yank};
use crate::tui::state::App;
use crate::tui::widgets::table::TableState;
use ratatui::layout::Rect;
use ratatui::Frame;

pub struct Events<'a> {
    pub stack: &'a StackTarget,
}

impl Screen for Events<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let e = v.table.selected(&s.events.get(&self.stack.id)?.events)?;
        Some(pick(
            id,
            ("event id", &e.id),
            ("resource name", &e.resource_name),
        ))
    }

    fn title(&self) -> &'static str {
        "Events"
    }

    fn crumb(&self) -> String {
        format!("events {}", self.stack.label())
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::EVENTS_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.events.get(&self.stack.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        if !p.paused {
            app.want_events(self.stack, p.force, p.now, p.every);
        }
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let log = store.events.get(&self.stack.id);
        let items = log.map(|l| l.events.as_slice()).unwrap_or(&[]);
        Table::boxed(
            items,
            &crate::tui::resource_columns::EVENT_COLUMNS,
            log.map(|l| l.meta.version).unwrap_or(0),
        )
    }

    fn after_sync(&self, view: &mut View, rows: &dyn Rows, _store: &Store) {
        if view.tail.follow {
            rows.op(&mut view.table, TableOp::Bottom);
        }
    }

    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        Some(self.stack.clone())
    }

    /// Enter: the selected event, whole (its Enter goes on to the resource in the tree).
    fn open(&self, app: &mut App) {
        let items = app
            .store()
            .events
            .get(&self.stack.id)
            .map(|l| l.events.as_slice())
            .unwrap_or(&[]);
        if let Some(event) = app.view().table.selected(items).cloned() {
            app.push(ViewKind::Event {
                stack: self.stack.clone(),
                event,
            });
        }
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let log = app.store().events.get(&self.stack.id);
        events::draw(app, view, self.stack, log, frame, area);
    }
}
