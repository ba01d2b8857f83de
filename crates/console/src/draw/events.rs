//! The event tail: a table (or wrapped lines), with follow / pause / time-mode badges.

use super::panes::{data_table, message_box};
use crate::model::{terminal_safe, StackEvent};
use crate::tui::resource_columns::{event_path, event_time, first_line_pub};
use crate::tui::state::store::EventLog;
use crate::tui::state::view::{StackTarget, TailOptions, View};
use crate::tui::state::App;
use crate::tui::widgets::table::{title_line, RowCtx, TableLook};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

pub fn tail_badges(app: &App, tail: &TailOptions) -> String {
    let _ = app;
    let mut parts = Vec::new();
    parts.push(if tail.paused {
        "PAUSED"
    } else if tail.follow {
        "FOLLOW"
    } else {
        "SCROLL"
    });
    parts.push(if tail.abs_time { "abs" } else { "rel" });
    if tail.wrap {
        parts.push("wrap");
    }
    format!("[{}]", parts.join(" "))
}

/// One event as a line of spans.
/// `source` prefixes the line (the dashboard names the node group an event is from).
pub fn event_line<'a>(e: &StackEvent, ctx: &RowCtx, source: Option<&str>) -> Line<'a> {
    let th = ctx.theme;
    let reason_style = if e.status.is_failed() {
        Style::default().fg(th.failed)
    } else if e
        .status_reason
        .as_deref()
        .is_some_and(|r| r.contains("Hook"))
    {
        Style::default().fg(th.paused)
    } else {
        th.muted()
    };
    let mut spans = vec![
        Span::styled(format!("{:>9} ", event_time(e, ctx)), th.muted()),
        Span::styled(
            format!("{:<20} ", terminal_safe(&e.status.raw)),
            th.status_style(e.status.state),
        ),
    ];
    if let Some(src) = source {
        spans.push(Span::styled(
            format!("[{}] ", terminal_safe(src)),
            Style::default().fg(th.accent),
        ));
    }
    spans.extend([
        Span::styled(
            format!("{} ", terminal_safe(&event_path(e))),
            Style::default().fg(th.fg),
        ),
        Span::styled(first_line_pub(e.status_reason.as_deref()), reason_style),
    ]);
    Line::from(spans)
}

pub fn draw(
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
            &crate::tui::resource_columns::EVENT_COLUMNS,
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
        .title(title_line(
            &look,
            &view.table,
            log.events.len(),
            &crate::tui::resource_columns::EVENT_COLUMNS,
            &ctx,
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
