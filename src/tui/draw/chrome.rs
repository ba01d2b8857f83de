//! Header, breadcrumbs, status / input line, key hints, help and palette overlays.

use super::{centered, clear};
use crate::tui::action::COMMANDS;
use crate::tui::columns::short_duration;
use crate::tui::state::input::{InputKind, InputState};
use crate::tui::state::{App, Level, Mode};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

fn badge<'a>(text: &'a str, bg: ratatui::style::Color, app: &App) -> Span<'a> {
    Span::styled(
        text,
        Style::default()
            .fg(app.theme.badge_fg)
            .bg(bg)
            .add_modifier(Modifier::BOLD),
    )
}

pub fn header(app: &App, frame: &mut Frame, area: Rect) {
    let th = &app.theme;
    let hs = th.header();
    let key = hs.add_modifier(Modifier::BOLD);
    let info = &app.info;
    let mut spans = vec![
        Span::styled(
            " caldera ",
            Style::default()
                .fg(th.accent)
                .bg(th.header_bg)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled("│ ", hs),
        Span::styled(info.cloud.clone(), key),
    ];
    for part in [&info.region, &info.project].into_iter().flatten() {
        spans.push(Span::styled(" · ", hs));
        spans.push(Span::styled(part.clone(), key));
    }
    // Data age of the view's main data, with a stale marker.
    if let Some(meta) = app.view().primary_meta(&app.store) {
        let age = meta
            .fetched_at
            .map(|t| short_duration((app.now - t).num_seconds()))
            .unwrap_or_else(|| "-".into());
        spans.push(Span::styled(" │ data ", hs));
        spans.push(Span::styled(age, key));
        if meta.in_flight {
            spans.push(Span::styled(" ⟳", hs));
        }
        if meta.error.is_some() {
            spans.push(Span::raw(" "));
            spans.push(badge(" STALE ", th.error, app));
        }
    }
    let b = &app.budget;
    let busy = b.max_in_flight > 0 && b.in_flight >= b.max_in_flight;
    spans.push(Span::styled(" │ req ", hs));
    spans.push(Span::styled(
        format!(
            "{}/{} {:.0}/{:.0}/s",
            b.in_flight, b.max_in_flight, b.per_second, b.max_per_second
        ),
        if busy { hs.fg(th.warning) } else { key },
    ));
    if b.total_retries > 0 {
        spans.push(Span::styled(format!(" ({} retries)", b.total_retries), hs));
    }
    if !info.api_versions.is_empty() {
        spans.push(Span::styled(
            format!(" │ {}", info.api_versions.join(", ")),
            hs,
        ));
    }
    let mut right: Vec<Span> = Vec::new();
    if app.read_only {
        right.push(badge(" READ-ONLY ", th.readonly_bg, app));
        right.push(Span::raw(" "));
    }
    if info.is_simulator {
        right.push(badge(" SIMULATOR ", th.simulator_bg, app));
        right.push(Span::raw(" "));
    }
    if app.frozen {
        right.push(badge(" FROZEN ", th.warning, app));
        right.push(Span::raw(" "));
    }
    if app.faults_only {
        right.push(badge(" FAULTS ONLY ", th.failed, app));
        right.push(Span::raw(" "));
    }
    let right_w: u16 = right.iter().map(|s| s.width() as u16).sum();
    let [left_area, right_area] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(right_w)]).areas(area);
    frame.render_widget(Paragraph::new(Line::from(spans)).style(hs), left_area);
    frame.render_widget(Paragraph::new(Line::from(right)).style(hs), right_area);
}

pub fn breadcrumbs(app: &App, frame: &mut Frame, area: Rect) {
    let th = &app.theme;
    let crumbs: Vec<String> = std::iter::once(app.info.cloud.clone())
        .chain(app.nav.iter().map(|v| v.crumb()))
        .collect();
    // Too long: drop the oldest crumbs (the current view always shows).
    let width = |cs: &[String]| cs.iter().map(|c| c.chars().count() + 3).sum::<usize>();
    let mut skip = 0;
    while skip + 1 < crumbs.len() && width(&crumbs[skip..]) + 2 > area.width as usize {
        skip += 1;
    }
    let n = crumbs.len();
    let mut spans = vec![Span::raw(" ")];
    if skip > 0 {
        spans.push(Span::styled("… › ", th.muted()));
    }
    for (i, c) in crumbs.iter().enumerate().skip(skip) {
        let style = if i + 1 == n {
            Style::default().fg(th.accent).add_modifier(Modifier::BOLD)
        } else if i == 0 {
            th.muted()
        } else {
            Style::default().fg(th.fg)
        };
        spans.push(Span::styled(c.clone(), style));
        if i + 1 < n {
            spans.push(Span::styled(" › ", th.muted()));
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub fn status_line(app: &App, frame: &mut Frame, area: Rect) {
    let th = &app.theme;
    if let Mode::Input(input) = &app.mode {
        let prompt_w = input.prompt().chars().count() as u16 + 1;
        let [p, rest] =
            Layout::horizontal([Constraint::Length(prompt_w), Constraint::Min(1)]).areas(area);
        frame.render_widget(
            Paragraph::new(Span::styled(
                format!(" {}", input.prompt()),
                th.accent().add_modifier(Modifier::BOLD),
            )),
            p,
        );
        frame.render_widget(&input.textarea, rest);
        return;
    }
    let Some(s) = &app.status else {
        return;
    };
    let style = match s.level {
        Level::Info => Style::default().fg(th.fg),
        Level::Warn => th.warning(),
        Level::Error => th.error(),
    };
    frame.render_widget(
        Paragraph::new(Span::styled(format!(" {}", s.text), style)),
        area,
    );
}

pub fn footer(app: &App, frame: &mut Frame, area: Rect) {
    let th = &app.theme;
    let mut spans = Vec::new();
    for (k, label) in app.keys.hints(&app.key_contexts()) {
        spans.push(Span::styled(
            format!(" {k}"),
            th.accent().add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::styled(format!(" {label} "), th.muted()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub fn help(app: &App, frame: &mut Frame, body: Rect, scroll: u16) {
    let th = &app.theme;
    let mut lines: Vec<Line> = Vec::new();
    for (section, rows) in app.keys.help_sections() {
        lines.push(Line::from(Span::styled(section, th.title())));
        for (keys, help) in rows {
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {keys:<16}"),
                    th.accent().add_modifier(Modifier::BOLD),
                ),
                Span::styled(help, Style::default().fg(th.fg)),
            ]));
        }
    }
    lines.push(Line::from(Span::styled("Commands (:)", th.title())));
    for (name, aliases, help) in COMMANDS {
        let names = std::iter::once(*name)
            .chain(aliases.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        lines.push(Line::from(vec![
            Span::styled(format!("  :{names:<22}"), th.accent()),
            Span::styled(*help, Style::default().fg(th.fg)),
        ]));
    }
    lines.push(Line::from(Span::styled(
        "Filter: text (case-insensitive), re:REGEX, a leading ! inverts. j/k/pgdn scroll, any other key closes.",
        th.muted(),
    )));
    let total = lines.len() as u16;
    let area = centered(body, 100, total + 2);
    let scroll = scroll.min(total.saturating_sub(area.height.saturating_sub(2)));
    clear(frame, area);
    let para = Paragraph::new(lines)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(th.accent())
                .title(Span::styled(" Help ", th.title()))
                .title_bottom(Span::styled(
                    format!(
                        " {}-{} of {total} ",
                        scroll + 1,
                        (scroll + area.height.saturating_sub(2)).min(total)
                    ),
                    th.muted(),
                )),
        )
        .style(th.style())
        .scroll((scroll, 0));
    frame.render_widget(para, area);
}

pub fn palette_popup(app: &App, input: &InputState, frame: &mut Frame, body: Rect) {
    debug_assert_eq!(input.kind, InputKind::Palette);
    let th = &app.theme;
    let typed = input.text();
    let word = typed
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut lines: Vec<Line> = Vec::new();
    if !input.candidates.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(" completions: {}", input.candidates.join("  ")),
            th.accent(),
        )));
    }
    for (name, aliases, help) in COMMANDS {
        if word.is_empty()
            || name.starts_with(&word)
            || aliases.iter().any(|a| a.starts_with(&word))
        {
            lines.push(Line::from(vec![
                Span::styled(
                    format!(" :{name:<9}"),
                    th.accent().add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!("{:<26}", aliases.join(" ")), th.muted()),
                Span::styled(*help, Style::default().fg(th.fg)),
            ]));
        }
    }
    if word == "theme" {
        let names = crate::tui::theme::theme_names(app.theme_dir.as_deref());
        lines.push(Line::from(Span::styled(
            format!(" themes: {}", names.join("  ")),
            th.accent(),
        )));
    }
    if !app.history.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                " history (↑↓): {}",
                app.history
                    .iter()
                    .rev()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("  ")
            ),
            th.muted(),
        )));
    }
    let h = (lines.len() as u16 + 2).min(body.height);
    let w = body.width.min(80);
    let area = Rect {
        x: body.x,
        y: body.y + body.height - h,
        width: w,
        height: h,
    };
    clear(frame, area);
    frame.render_widget(
        Paragraph::new(lines).style(th.style()).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(th.accent())
                .title(Span::styled(
                    " command (tab completes, enter runs, esc closes) ",
                    th.title(),
                )),
        ),
        area,
    );
}
