//! An event tail's lines, shared by the events view and the dashboard's tail: the badges
//! saying how the tail moves (follow / pause / scroll, time mode, wrap) and one event as a
//! line.

use crate::cell_text::{event_path, first_line};
use crate::model::{terminal_safe, StackEvent};
use crate::resource_columns::event_time;
use crate::state::view::TailOptions;
use crate::state::App;
use crate::widgets::table::RowCtx;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// `[FOLLOW rel wrap]`: how the tail moves and shows time.
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
        Span::styled(first_line(e.status_reason.as_deref()), reason_style),
    ]);
    Line::from(spans)
}
