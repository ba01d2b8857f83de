//! The detail views' text (resource, event): labelled fields whose values wrap under their
//! label instead of being cut, and sections, in a bordered box that scrolls with the table
//! keys. Everything shown comes from the cloud, so each value goes through `terminal_safe`
//! here, whoever built it.

use super::panes::message_box;
use super::wrap::wrap;
use crate::model::{terminal_safe, Status};
use crate::resource_columns::age;
use crate::state::store::FetchMeta;
use crate::state::view::View;
use crate::state::App;
use crate::widgets::table::pane_title;
use chrono::{DateTime, Utc};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// Width of the label column.
const LABEL: usize = 13;

/// The lines of a detail being built, wrapped to `width` as they are added.
pub struct DetailText {
    pub lines: Vec<Line<'static>>,
    width: usize,
}

impl DetailText {
    pub fn new(width: usize) -> Self {
        DetailText {
            lines: Vec::new(),
            width,
        }
    }

    /// `label` then `value`, both made terminal-safe; each of the value's lines wrapped
    /// under the label. A label as wide as the label column (an attribute's name comes from
    /// the cloud) takes a line of its own, the value under it.
    pub fn field(&mut self, label: &str, value: &str, style: Style, muted: Style) {
        let value_w = self.width.saturating_sub(LABEL + 1).max(10);
        let label = terminal_safe(label);
        let mut label = label.as_ref();
        if Span::raw(label).width() >= LABEL {
            for l in wrap(label, self.width.saturating_sub(1).max(10)) {
                self.lines
                    .push(Line::from(Span::styled(format!(" {l}"), muted)));
            }
            label = "";
        }
        let parts = value
            .split('\n')
            .flat_map(|part| wrap(&terminal_safe(part), value_w));
        for (i, l) in parts.enumerate() {
            let label = if i == 0 { label } else { "" };
            self.lines.push(Line::from(vec![
                Span::styled(format!(" {label:<w$}", w = LABEL), muted),
                Span::styled(l, style),
            ]));
        }
    }

    /// A blank line and a section title.
    pub fn section(&mut self, title: &str, style: Style) {
        self.lines.push(Line::default());
        self.lines.push(Line::from(Span::styled(
            format!(" {}", terminal_safe(title)),
            style,
        )));
    }

    /// An indented text of its own (a JSON value), each line safe and wrapped.
    pub fn block(&mut self, text: &str, style: Style) {
        self.indented(3, text, style);
    }

    /// `text` indented by `indent` columns, each line safe and wrapped under the indent.
    pub fn indented(&mut self, indent: usize, text: &str, style: Style) {
        let w = self.width.saturating_sub(indent).max(10);
        for part in text.split('\n') {
            for l in wrap(&terminal_safe(part), w) {
                self.lines.push(Line::from(vec![
                    Span::raw(" ".repeat(indent)),
                    Span::styled(l, style),
                ]));
            }
        }
    }
}

/// A status in its colour (failed red and bold, complete green, in progress yellow).
pub fn status_style(app: &App, status: &Status) -> Style {
    app.theme().status_style(status.state)
}

/// An instant as `2026-11-21 12:37:43Z (4m ago)`, or `-`.
pub fn when(app: &App, t: Option<DateTime<Utc>>) -> String {
    match t {
        Some(t) => format!(
            "{} ({} ago)",
            t.format("%Y-%m-%d %H:%M:%SZ"),
            age(app.now(), Some(t))
        ),
        None => "-".into(),
    }
}

/// Draw `lines` in a box titled `title`, scrolled by the view: the loading or error box when
/// there is nothing yet (`meta` says which), a failed refresh said above kept data.
pub fn draw(
    app: &App,
    view: &View,
    title: &str,
    lines: Option<Vec<Line<'static>>>,
    meta: Option<&FetchMeta>,
    frame: &mut Frame,
    area: Rect,
) {
    let Some(body) = lines else {
        message_box(app, frame, area, title, meta);
        return;
    };
    let th = app.theme();
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    if let Some(e) = meta.and_then(|m| m.error.as_deref()) {
        for l in wrap(&format!("refresh failed: {}", terminal_safe(e)), inner_w) {
            lines.push(Line::from(Span::styled(l, th.error())));
        }
    }
    lines.extend(body);
    let scroll = view.scroll.min(lines.len().saturating_sub(inner_h));
    let more = lines.len().saturating_sub(scroll + inner_h);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(th.border())
        .title(pane_title(
            Span::styled(format!(" {} ", terminal_safe(title)), th.title()),
            area.width,
        ))
        .title_bottom(Span::styled(
            if more > 0 {
                format!(" {more} more lines ↓ ")
            } else {
                String::new()
            },
            th.muted(),
        ));
    let shown: Vec<Line> = lines.into_iter().skip(scroll).take(inner_h).collect();
    frame.render_widget(Paragraph::new(shown).block(block), area);
}
