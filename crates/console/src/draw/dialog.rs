//! Dialogs over the view: forms, "planning…", the confirmation with the plan (and the
//! cluster name to type on a production cloud), the abort choice and text overlays.

use super::{centered, clear};
use crate::keys::{join_keys, KeyAction};
use crate::model::terminal_safe;
use crate::state::action_dialogs::{
    text_box_width, text_rows, text_scroll_max, word_wrap, Dialog, ABORT_MODES,
};
use crate::state::form::{FieldKind, Form};
use crate::state::App;
use crate::widgets::table::{cut_marked, pane_title};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

fn boxed(app: &App, frame: &mut Frame, area: Rect, title: &str, lines: Vec<Line>, scroll: u16) {
    let th = app.theme();
    clear(frame, area);
    frame.render_widget(
        Paragraph::new(lines)
            .style(th.style())
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(th.accent())
                    .title(Span::styled(
                        // A title longer than the box says it was cut.
                        format!(
                            " {} ",
                            cut_marked(
                                terminal_safe(title).into_owned(),
                                usize::from(area.width.saturating_sub(4))
                            )
                        ),
                        th.title(),
                    )),
            ),
        area,
    );
}

/// A form's lines in a box `box_width` wide: its fields, its error (whole, in as many rows as it
/// takes: the box grows to hold it) and the keys.
fn form_lines<'a>(app: &App, form: &'a Form, box_width: u16) -> Vec<Line<'a>> {
    let th = app.theme();
    let width = form
        .fields
        .iter()
        .map(|f| f.label.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines = vec![Line::from("")];
    for (i, f) in form.fields.iter().enumerate() {
        let focused = i == form.focus;
        let label_style = if focused {
            th.accent().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(th.fg)
        };
        let value = match f.kind {
            FieldKind::Flag => format!("[{}]", if f.is_on() { "x" } else { " " }),
            _ => terminal_safe(&f.value).into_owned(),
        };
        let mut spans = vec![
            Span::styled(if focused { " ▶ " } else { "   " }, th.accent()),
            Span::styled(format!("{:<width$} ", f.label), label_style),
            Span::styled(
                value,
                Style::default().fg(th.fg).add_modifier(Modifier::BOLD),
            ),
        ];
        if focused && f.kind != FieldKind::Flag {
            spans.push(Span::styled(
                " ",
                Style::default().add_modifier(Modifier::REVERSED),
            ));
        }
        spans.push(Span::styled(
            format!("  {}", terminal_safe(&f.hint)),
            th.muted(),
        ));
        lines.push(Line::from(spans));
    }
    lines.push(Line::from(""));
    match &form.error {
        Some(e) => {
            let inner = usize::from(box_width.saturating_sub(3)).max(1);
            lines.extend(
                word_wrap(&terminal_safe(e), inner)
                    .into_iter()
                    .map(|row| Line::from(Span::styled(format!(" {row}"), th.error()))),
            );
        }
        None => lines.push(Line::from("")),
    }
    lines.push(Line::from(Span::styled(form_hint(app), th.muted())));
    lines
}

/// The keys of a dialog, as the key table binds them.
fn key(app: &App, action: KeyAction) -> String {
    app.keys().first_key(action)
}

fn form_hint(app: &App) -> String {
    let k = |a| key(app, a);
    let all = |a| join_keys(app.keys().keys_for(a));
    format!(
        " {} / {} field · {} plan (nothing changes yet) · {} cancel",
        all(KeyAction::FieldNext),
        all(KeyAction::FieldPrev),
        k(KeyAction::DialogSubmit),
        k(KeyAction::DialogCancel)
    )
}

/// How to scroll a plan or a text.
fn scroll_hint(app: &App) -> String {
    let k = |a| key(app, a);
    format!(
        "{}/{} {}/{}",
        k(KeyAction::DialogUp),
        k(KeyAction::DialogDown),
        k(KeyAction::DialogPageUp),
        k(KeyAction::DialogPageDown)
    )
}

pub fn draw(app: &App, dialog: &Dialog, frame: &mut Frame, body: Rect) {
    let th = app.theme();
    match dialog {
        Dialog::Form { form, .. } => {
            let width = body.width.min(90);
            let lines = form_lines(app, form, width);
            let area = centered(body, width, lines.len() as u16 + 2);
            boxed(app, frame, area, &form.title, lines, 0);
        }
        Dialog::Waiting { title, .. } => {
            let lines = vec![
                Line::from(Span::styled(
                    format!(" {}", terminal_safe(title)),
                    Style::default().fg(th.in_progress),
                )),
                Line::from(Span::styled(
                    format!(
                        " {} cancels (nothing changes)",
                        key(app, KeyAction::DialogCancel)
                    ),
                    th.muted(),
                )),
            ];
            let area = centered(body, 70, 4);
            boxed(app, frame, area, "Plan", lines, 0);
        }
        Dialog::Confirm(c) => {
            let w = body.width.saturating_sub(4).min(120);
            let inner_w = w.saturating_sub(2).max(1) as usize;
            // Cut long lines (API bodies) into whole rows so the height is exact.
            let plan: Vec<Line> = c
                .lines
                .iter()
                .flat_map(|l| word_wrap(&terminal_safe(l), inner_w))
                .map(|l| Line::from(Span::styled(l, Style::default().fg(th.fg))))
                .collect();
            // The answer lines stay at the bottom; the plan above them scrolls.
            let mut answer: Vec<Line> = Vec::new();
            match &c.name {
                Some(name) => {
                    let prompt = match &c.name_prompt {
                        Some(why) => {
                            format!("{why}: type '{}' and press enter", terminal_safe(name))
                        }
                        None => format!(
                            "PRODUCTION cloud: type the cluster name '{}' and press enter",
                            terminal_safe(name)
                        ),
                    };
                    answer.push(Line::from(Span::styled(
                        prompt,
                        th.warning().add_modifier(Modifier::BOLD),
                    )));
                    answer.push(Line::from(vec![
                        Span::styled("> ", th.accent()),
                        Span::styled(
                            terminal_safe(&c.typed).into_owned(),
                            Style::default().fg(th.fg).add_modifier(Modifier::BOLD),
                        ),
                        Span::styled(" ", Style::default().add_modifier(Modifier::REVERSED)),
                    ]));
                }
                None => answer.push(Line::from(Span::styled(
                    format!(
                        "{} / {}: do it · {} / {}: cancel (nothing changes)",
                        key(app, KeyAction::AnswerYes),
                        key(app, KeyAction::DialogSubmit),
                        key(app, KeyAction::AnswerNo),
                        key(app, KeyAction::DialogCancel)
                    ),
                    th.accent().add_modifier(Modifier::BOLD),
                ))),
            }
            if let Some(e) = &c.error {
                answer.push(Line::from(Span::styled(
                    terminal_safe(e).into_owned(),
                    th.error(),
                )));
            }
            // The y/n line already says how to cancel; the name prompt does not.
            answer.push(Line::from(Span::styled(
                if c.name.is_some() {
                    format!(
                        "{}: cancel (nothing changes) · {}: scroll the plan",
                        key(app, KeyAction::DialogCancel),
                        scroll_hint(app)
                    )
                } else {
                    format!("{}: scroll the plan", scroll_hint(app))
                },
                th.muted(),
            )));
            let wrapped = plan.len() as u16;
            let answer_h = answer.len() as u16;
            let h = (wrapped + answer_h + 3).min(body.height);
            let area = centered(body, w, h);
            clear(frame, area);
            let block = Block::default()
                .borders(Borders::ALL)
                .border_style(th.accent())
                .title(pane_title(
                    Span::styled(format!(" {} ", terminal_safe(&c.title)), th.title()),
                    area.width,
                ));
            let inner = block.inner(area);
            frame.render_widget(block.style(th.style()), area);
            let [plan_area, answer_area] =
                Layout::vertical([Constraint::Min(1), Constraint::Length(answer_h + 1)])
                    .areas(inner);
            let scroll = c.scroll.min(wrapped.saturating_sub(plan_area.height));
            frame.render_widget(Paragraph::new(plan).scroll((scroll, 0)), plan_area);
            let mut bottom = vec![Line::from("")];
            bottom.extend(answer);
            frame.render_widget(Paragraph::new(bottom), answer_area);
        }
        Dialog::AbortChoice { selected, .. } => {
            let mut lines = vec![Line::from(Span::styled(
                "How should the rollout stop?",
                Style::default().fg(th.fg).add_modifier(Modifier::BOLD),
            ))];
            for (i, (_, text)) in ABORT_MODES.iter().enumerate() {
                let style = if i == *selected {
                    th.selected()
                } else {
                    Style::default().fg(th.fg)
                };
                lines.push(Line::from(Span::styled(
                    format!(" {} {text}", i + 1),
                    style,
                )));
            }
            lines.push(Line::from(Span::styled(
                format!(
                    "1-{} or {}/{} + {} choose (a confirmation follows) · {} cancel",
                    ABORT_MODES.len(),
                    key(app, KeyAction::DialogUp),
                    key(app, KeyAction::DialogDown),
                    key(app, KeyAction::DialogSubmit),
                    key(app, KeyAction::DialogCancel)
                ),
                th.muted(),
            )));
            let area = centered(body, 80, lines.len() as u16 + 2);
            boxed(app, frame, area, "Abort the rollout", lines, 0);
        }
        Dialog::Text {
            title,
            lines,
            scroll,
        } => {
            // The rows as the keys count them (each line wrapped at words to the box),
            // so the scroll reaches the end of a long text at any size.
            let rows = text_rows(lines, body.width);
            let count = rows.len();
            let mut out: Vec<Line> = rows
                .into_iter()
                .map(|l| {
                    let style = if l.starts_with("FAILED") || l.contains("FAILED:") {
                        th.error()
                    } else {
                        Style::default().fg(th.fg)
                    };
                    Line::from(Span::styled(l, style))
                })
                .collect();
            out.push(Line::from(Span::styled(
                format!("{} scroll · any other key closes", scroll_hint(app)),
                th.muted(),
            )));
            let h = (out.len() as u16 + 2).min(body.height);
            let area = centered(body, text_box_width(body.width), h);
            let scroll = (*scroll).min(text_scroll_max(count, body.height));
            boxed(app, frame, area, title, out, scroll);
        }
    }
}
