//! The event tail of one stack (and its nested stacks): follows new events, Enter opens the
//! event whole (`views::event_detail`), and Enter there the event's resource in its stack's tree.

use super::{Plan, Rows, Screen, Table, TableOp};
use crate::draw::panes::{data_table, message_box};
use crate::draw::tail::{event_line, tail_badges};
use crate::keys::{self, KeyContext};
use crate::model::terminal_safe;
use crate::state::store::{EventLog, FetchMeta, Store};
use crate::state::view::{StackTarget, View, ViewKind};
use crate::state::yank::{pick, Yank};
use crate::state::App;
use crate::widgets::table::{pane_title, title_line, TableLook, TableState};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
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
            &crate::resource_columns::EVENT_COLUMNS,
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
        draw_tail(app, view, self.stack, log, frame, area);
    }
}

// Drawing: the tail as a table, or its events as wrapped lines.

fn draw_tail(
    app: &App,
    view: &View,
    stack: &StackTarget,
    log: Option<&EventLog>,
    frame: &mut Frame,
    area: Rect,
) {
    let title = format!(
        "Events of {} {}",
        terminal_safe(stack.label()),
        tail_badges(app, &view.tail)
    );
    let Some(log) = log.filter(|l| l.meta.fetched_at.is_some() || !l.events.is_empty()) else {
        message_box(app, frame, area, &title, log.map(|l| &l.meta));
        return;
    };
    if !view.tail.wrap {
        data_table(
            app,
            frame,
            area,
            &title,
            Some(&log.events),
            Some(&log.meta),
            &crate::resource_columns::EVENT_COLUMNS,
            &view.table,
            "No events yet (polling).",
            true,
        );
        return;
    }
    let th = app.theme();
    let ctx = app.row_ctx();
    // The same title as the table's: counts, sort and the filter stay in sight while wrapped.
    let look = TableLook {
        title: &title,
        badges: Vec::new(),
        focused: true,
        empty_text: "",
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(th.accent))
        .title(pane_title(
            title_line(
                &look,
                &view.table,
                log.events.len(),
                &crate::resource_columns::EVENT_COLUMNS,
                &ctx,
            ),
            area.width,
        ));
    let inner = block.inner(area);
    let h = inner.height as usize;
    let t = &view.table;
    // In wrap mode show the rows ending at the selection, so following shows the tail.
    let end = t.selected_pos().map(|p| p + 1).unwrap_or(0);
    let start = end.saturating_sub(h);
    let lines: Vec<Line> = t.view()[start..end]
        .iter()
        .filter_map(|&i| log.events.get(i))
        .enumerate()
        .map(|(k, e)| {
            let line = event_line(e, &ctx, None);
            if start + k + 1 == end {
                line.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                line
            }
        })
        .collect();
    let w = inner.width.max(1) as usize;
    let total: usize = lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum();
    let total = total.min(u16::MAX as usize) as u16;
    let para = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false });
    let scroll = total.saturating_sub(inner.height);
    frame.render_widget(para.scroll((scroll, 0)), area);
}
