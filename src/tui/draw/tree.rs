//! The stack tree with the "why is it stuck" panel.

use super::panes::{data_table, message_box};
use crate::model::terminal_safe;
use crate::tui::columns::{age, first_line_pub, short_duration};
use crate::tui::state::store::TreeData;
use crate::tui::state::view::{StackTarget, View};
use crate::tui::state::App;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// The why-stuck lines, at most `max` (the last says how many more).
pub fn stuck_lines<'a>(app: &App, tree: &TreeData, max: usize) -> Vec<Line<'a>> {
    let th = &app.theme;
    if tree.stuck.is_empty() {
        return vec![Line::from(Span::styled(
            "Nothing in progress or failed.",
            Style::default().fg(th.complete),
        ))];
    }
    let paused = tree.stuck.iter().filter(|s| s.paused_on_hook).count();
    let mut lines = Vec::new();
    let shown = if tree.stuck.len() > max {
        max.saturating_sub(1)
    } else {
        tree.stuck.len()
    };
    for s in tree.stuck.iter().take(shown) {
        let r = &tree.rows[s.row];
        let res = &r.resource;
        let (mark, style) = if res.status.is_failed() {
            (
                "✖",
                Style::default().fg(th.failed).add_modifier(Modifier::BOLD),
            )
        } else if s.paused_on_hook {
            ("‖", Style::default().fg(th.paused))
        } else {
            ("●", Style::default().fg(th.in_progress))
        };
        let mut spans = vec![
            Span::styled(format!(" {mark} "), style),
            Span::styled(
                terminal_safe(&r.path).into_owned(),
                Style::default().fg(th.fg).add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                format!(
                    "  {} in {}",
                    age(app.now, res.updated_at),
                    terminal_safe(&res.status.raw)
                ),
                style,
            ),
        ];
        if let Some(m) = s.siblings_median.filter(|_| s.siblings > 0) {
            let level = &tree.rows[s.level_row];
            let median = short_duration((app.now - m).num_seconds());
            let text = if s.level_row == s.row {
                format!(" (siblings median {median}, {} siblings)", s.siblings)
            } else {
                format!(
                    " ({} {}; siblings median {median}, {} siblings)",
                    terminal_safe(&level.resource.name),
                    age(app.now, level.resource.updated_at),
                    s.siblings
                )
            };
            spans.push(Span::styled(text, th.muted()));
        }
        if let Some(reason) = res.status_reason.as_deref() {
            spans.push(Span::styled(
                format!(" — {}", first_line_pub(Some(reason))),
                th.muted(),
            ));
        }
        lines.push(Line::from(spans));
    }
    if shown < tree.stuck.len() {
        lines.push(Line::from(Span::styled(
            format!(
                "   … and {} more ({} paused on a hook)",
                tree.stuck.len() - shown,
                paused.min(tree.stuck.len() - shown)
            ),
            th.muted(),
        )));
    }
    lines
}

pub fn draw(app: &App, view: &View, stack: &StackTarget, frame: &mut Frame, area: Rect) {
    let slot = app.store.trees.get(&stack.id);
    let title = format!("Resources of {}", terminal_safe(stack.label()));
    let Some(tree) = slot.and_then(|s| s.data.as_ref()) else {
        message_box(app, frame, area, &title, slot.map(|s| &s.meta));
        return;
    };
    let th = &app.theme;
    let want = tree.stuck.len().min(8) as u16 + 2;
    let stuck_h = want.min(area.height / 2).max(3);
    let [top, bottom] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(stuck_h)]).areas(area);
    data_table(
        app,
        frame,
        top,
        &title,
        Some(&tree.rows),
        slot.map(|s| &s.meta),
        &app.cols.tree,
        &view.table,
        "This stack has no resources.",
        true,
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(th.border())
        .title(Span::styled(
            format!(
                " Why stuck: {} deepest in progress / failed ",
                tree.stuck.len()
            ),
            th.title(),
        ));
    let lines = stuck_lines(app, tree, stuck_h.saturating_sub(2) as usize);
    frame.render_widget(Paragraph::new(lines).block(block), bottom);
}
