//! Header, breadcrumbs, status / input line, key hints, help and palette overlays.

use super::{centered, clear};
use crate::message::COMMANDS;
use crate::model::terminal_safe;
use crate::resource_columns::short_duration;
use crate::service::health::{Availability, ServiceHealth};
use crate::state::input::{InputKind, InputState};
use crate::state::settle::{cut_name, SettleShown};
use crate::state::{App, Level, Mode};
use crate::widgets::table::{cut_line_marked, cut_marked, pane_title};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

fn badge<'a>(text: &'a str, bg: ratatui::style::Color, app: &App) -> Span<'a> {
    Span::styled(
        text,
        Style::default()
            .fg(app.theme().badge_fg)
            .bg(bg)
            .add_modifier(Modifier::BOLD),
    )
}

pub fn header(app: &App, frame: &mut Frame, area: Rect) {
    let th = app.theme();
    let hs = th.header();
    let key = hs.add_modifier(Modifier::BOLD);
    let info = app.info();
    // Segments in order of importance: on a narrow terminal whole segments are dropped
    // from the end, never cut in the middle of a number.
    let mut segments: Vec<Vec<Span>> = Vec::new();
    let mut who = vec![
        Span::styled(
            " caldera ",
            Style::default()
                .fg(th.accent)
                .bg(th.header_bg)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled("│ ", hs),
        Span::styled(terminal_safe(&info.cloud).into_owned(), key),
    ];
    for part in [&info.region, &info.project].into_iter().flatten() {
        who.push(Span::styled(" · ", hs));
        who.push(Span::styled(terminal_safe(part).into_owned(), key));
    }
    segments.push(who);
    // A service that timed out or failed its last request is named right after the cloud,
    // where a narrow terminal still shows it; one still being probed comes last.
    // Down (refused, 5xx) in the error colour, slow (timed out, or answering late) in the
    // warning colour.
    let mut troubled: Vec<Span> = Vec::new();
    for s in info
        .services
        .iter()
        .filter(|s| matches!(s.health, Availability::Slow | Availability::Down))
    {
        let sep = if troubled.is_empty() { " │ " } else { " · " };
        troubled.push(Span::styled(sep, hs));
        let colour = if s.health == Availability::Down {
            th.error
        } else {
            th.warning
        };
        troubled.push(Span::styled(
            terminal_safe(&s.label()).into_owned(),
            hs.fg(colour).add_modifier(Modifier::BOLD),
        ));
    }
    if !troubled.is_empty() {
        segments.push(troubled);
    }
    // Data age of the view's main data, with a stale marker.
    if let Some(meta) = app.view_meta() {
        let age = meta
            .fetched_at
            .map(|t| short_duration((app.now() - t).num_seconds()))
            .unwrap_or_else(|| "-".into());
        let mut data = vec![Span::styled(" │ data ", hs), Span::styled(age, key)];
        if meta.in_flight {
            data.push(Span::styled(" ⟳", hs));
        }
        if meta.error.is_some() {
            data.push(Span::raw(" "));
            data.push(badge(" STALE ", th.error, app));
        }
        segments.push(data);
    }
    // A burst of refreshes after an action: dropped before the data's age, kept over the
    // request budget (it is what makes the requests more frequent for a while).
    let settle = app.settle_shown();
    let settle_at = segments.len();
    if let Some(s) = &settle {
        segments.push(settle_segment(app, s, Some(&s.subject)));
    }
    let b = app.budget();
    let req_at = segments.len();
    segments.push(requests_segment(app, false));
    if b.total_retries > 0 {
        segments.push(vec![Span::styled(
            format!(" ({} retries)", b.total_retries),
            hs,
        )]);
    }
    if !info.api_versions.is_empty() {
        segments.push(vec![Span::styled(
            format!(" │ {}", terminal_safe(&info.api_versions.join(", "))),
            hs,
        )]);
    }
    let probing: Vec<String> = info
        .services
        .iter()
        .filter(|s| s.health == Availability::Probing)
        .map(ServiceHealth::label)
        .collect();
    if !probing.is_empty() {
        segments.push(vec![Span::styled(format!(" │ {}", probing.join(" ")), hs)]);
    }
    let mut right: Vec<Span> = Vec::new();
    if app.read_only() {
        right.push(badge(" READ-ONLY ", th.readonly_bg, app));
        right.push(Span::raw(" "));
    }
    if info.is_simulator {
        right.push(badge(" SIMULATOR ", th.simulator_bg, app));
        right.push(Span::raw(" "));
    }
    if app.frozen() {
        right.push(badge(" FROZEN ", th.warning, app));
        right.push(Span::raw(" "));
    }
    if app.faults_only() {
        right.push(badge(" FAULTS ONLY ", th.failed, app));
        right.push(Span::raw(" "));
    }
    let right_w: u16 = right.iter().map(|s| s.width() as u16).sum();
    let [left_area, right_area] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(right_w)]).areas(area);
    let width = |segs: &[Vec<Span>]| -> usize { segs.iter().flatten().map(Span::width).sum() };
    // The request budget spelled out when the whole header has room for it.
    let mut spelled = segments.clone();
    spelled[req_at] = requests_segment(app, true);
    if width(&spelled) <= left_area.width as usize {
        segments = spelled;
    }
    let room = left_area.width as usize;
    while segments.len() > 1 && width(&segments) > room {
        // The burst's segment, last now, is fitted (its name cut, then left out) before
        // it goes.
        if let Some(s) = settle.as_ref().filter(|_| segments.len() == settle_at + 1) {
            if let Some(fitted) =
                fit_settle(app, s, room.saturating_sub(width(&segments[..settle_at])))
            {
                segments[settle_at] = fitted;
                break;
            }
        }
        segments.pop();
    }
    // The first segment alone may still not fit (a long cloud or project name): cut, marked.
    let spans: Vec<Span> = segments.into_iter().flatten().collect();
    let left = cut_line_marked(Line::from(spans), room);
    frame.render_widget(Paragraph::new(left).style(hs), left_area);
    frame.render_widget(Paragraph::new(Line::from(right)).style(hs), right_area);
}

/// The burst under way (see `state::settle`): ` │ settling edge-native/edge 14s`, ` +1` when
/// others run besides; without `name`, the subject is left out.
fn settle_segment(app: &App, s: &SettleShown, name: Option<&str>) -> Vec<Span<'static>> {
    let hs = app.theme().header();
    let key = hs.add_modifier(Modifier::BOLD);
    let mut spans = vec![Span::styled(" │ settling ", hs)];
    if let Some(name) = name {
        spans.push(Span::styled(format!("{name} "), key));
    }
    spans.push(Span::styled(s.age(), key));
    if s.others > 0 {
        spans.push(Span::styled(format!(" +{}", s.others), hs));
    }
    spans
}

/// Fewest characters of a subject's name worth showing (`…` included).
const SETTLE_NAME_MIN: usize = 6;

/// The burst's segment within `room` columns: named in full, its name cut, or unnamed;
/// `None` when even that does not fit.
fn fit_settle(app: &App, s: &SettleShown, room: usize) -> Option<Vec<Span<'static>>> {
    let width = |seg: &[Span]| -> usize { seg.iter().map(Span::width).sum() };
    let bare = settle_segment(app, s, None);
    // The name and the space after it.
    let name_room = room.saturating_sub(width(&bare) + 1);
    if name_room >= SETTLE_NAME_MIN {
        let named = settle_segment(app, s, Some(&cut_name(&s.subject, name_room)));
        if width(&named) <= room {
            return Some(named);
        }
    }
    (width(&bare) <= room).then_some(bare)
}

/// The request budget: requests in flight (of the most allowed at once) and started in
/// the last second (of the rate limit). `long` spells it out for a newcomer
/// (`requests 0 in flight (max 16) · 15/s (limit 50/s)`); the short form is
/// `req 0/16 15/50/s`, as the help screen explains.
fn requests_segment(app: &App, long: bool) -> Vec<Span<'static>> {
    let th = app.theme();
    let hs = th.header();
    let b = app.budget();
    let busy = b.max_in_flight > 0 && b.in_flight >= b.max_in_flight;
    let (label, text) = if long {
        (
            " │ requests ",
            format!(
                "{} in flight (max {}) · {:.0}/s (limit {:.0}/s)",
                b.in_flight, b.max_in_flight, b.per_second, b.max_per_second
            ),
        )
    } else {
        (
            " │ req ",
            format!(
                "{}/{} {:.0}/{:.0}/s",
                b.in_flight, b.max_in_flight, b.per_second, b.max_per_second
            ),
        )
    };
    let style = if busy {
        hs.fg(th.warning)
    } else {
        hs.add_modifier(Modifier::BOLD)
    };
    vec![Span::styled(label, hs), Span::styled(text, style)]
}

pub fn breadcrumbs(app: &App, frame: &mut Frame, area: Rect) {
    let th = app.theme();
    let crumbs: Vec<String> = std::iter::once(app.info().cloud.clone())
        .chain(app.nav().iter().map(|v| app.screen_of(&v.kind).crumb()))
        .map(|c| terminal_safe(&c).into_owned())
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
    // The current crumb alone may still not fit: cut, marked.
    let line = cut_line_marked(Line::from(spans), usize::from(area.width));
    frame.render_widget(Paragraph::new(line), area);
}

pub fn status_line(app: &App, frame: &mut Frame, area: Rect) {
    let th = app.theme();
    if let Mode::Input(input) = app.mode() {
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
    let Some(s) = &app.status() else {
        return;
    };
    let style = match s.level {
        Level::Info => Style::default().fg(th.fg),
        Level::Warn => th.warning(),
        Level::Error => th.error(),
    };
    // A message longer than the line says it was cut (`:messages` has it whole).
    let text = cut_marked(
        terminal_safe(&s.text).into_owned(),
        usize::from(area.width.saturating_sub(1)),
    );
    frame.render_widget(
        Paragraph::new(Span::styled(format!(" {text}"), style)),
        area,
    );
}

pub fn footer(app: &App, frame: &mut Frame, area: Rect) {
    let th = app.theme();
    // Where nothing can be changed, the keys that would change something are not offered.
    let can_act = app.guard().is_some_and(|g| !g.read_only) && !app.read_only();
    let hints = app.keys().hints_where(&app.key_contexts(), |a| {
        (can_act || !a.changes_cloud()) && app.view_offers(a)
    });
    let hints = fit_hints(hints, area.width as usize);
    let mut spans = Vec::new();
    for (k, label) in hints {
        spans.push(Span::styled(
            format!(" {k}"),
            th.accent().add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::styled(format!(" {label} "), th.muted()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The hints that fit whole in `width` columns, in order; when some must go, the `help`
/// hint stays (it is the way to find all the others).
fn fit_hints(hints: Vec<(String, &'static str)>, width: usize) -> Vec<(String, &'static str)> {
    let w = |(k, label): &(String, &str)| k.chars().count() + label.chars().count() + 3;
    if hints.iter().map(w).sum::<usize>() <= width {
        return hints;
    }
    let help = hints.iter().find(|h| h.1 == "help").cloned();
    let mut used = help.as_ref().map(w).unwrap_or(0);
    let mut shown = Vec::new();
    for h in hints.into_iter().filter(|h| h.1 != "help") {
        if used + w(&h) > width {
            break;
        }
        used += w(&h);
        shown.push(h);
    }
    shown.extend(help);
    shown
}

pub fn help(app: &App, frame: &mut Frame, body: Rect, scroll: u16) {
    use crate::state::help::HELP_GAP;
    let th = app.theme();
    let text = app.help_text();
    let layout = text.layout(body.width, body.height);
    let total = u16::try_from(layout.lines).unwrap_or(u16::MAX);
    // As wide as its widest row (two of them side by side when wide), up to the terminal.
    let wanted = u16::try_from(layout.inner_width() + 2).unwrap_or(u16::MAX);
    let area = centered(body, wanted, total.saturating_add(2));
    let inner = usize::from(area.width.saturating_sub(2));
    // The first column's room (the whole box in one column); the second has the rest.
    let column = if layout.two() { layout.widths.0 } else { inner };
    let second = inner.saturating_sub(column + HELP_GAP);
    // One row per line (the scroll counts lines): a row wider than its column says it was cut.
    let mut rows: Vec<Line> = text
        .rows
        .into_iter()
        .map(|row| help_line(app, row, text.left))
        .collect();
    let lines: Vec<Line> = if layout.two() {
        let right = rows.split_off(layout.split.min(rows.len()));
        let mut right = right.into_iter().map(|l| cut_line_marked(l, second));
        rows.into_iter()
            .map(Some)
            .chain(std::iter::repeat_with(|| None))
            .take(layout.lines)
            .map(|l| {
                let l = cut_line_marked(l.unwrap_or_default(), column);
                side_by_side(l, right.next(), column + HELP_GAP)
            })
            .collect()
    } else {
        rows.into_iter()
            .map(|l| cut_line_marked(l, column))
            .collect()
    };
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

/// One help row, styled and whole (`left`: the keys' column); its width is
/// `HelpRow::width`, which sizes the box.
fn help_line(app: &App, row: crate::state::help::HelpRow, left: usize) -> Line<'static> {
    use crate::state::help::{HelpRow, ALSO_BEFORE, KEYS_INDENT};
    let th = app.theme();
    let indent = " ".repeat(KEYS_INDENT);
    let pad = |s: &str| format!("{indent}{s:<w$}", w = left + KEYS_INDENT);
    match row {
        HelpRow::Section(s) => Line::from(Span::styled(s, th.title())),
        HelpRow::Key { keys, help } => Line::from(vec![
            Span::styled(pad(&keys), th.accent().add_modifier(Modifier::BOLD)),
            Span::styled(help, Style::default().fg(th.fg)),
        ]),
        HelpRow::Figure { figure, help } => Line::from(vec![
            Span::styled(pad(&figure), th.accent()),
            Span::styled(help, Style::default().fg(th.fg)),
        ]),
        HelpRow::Command {
            name,
            aliases,
            help,
        } => {
            let mut spans = vec![
                Span::styled(pad(&name), th.accent()),
                Span::styled(help, Style::default().fg(th.fg)),
            ];
            if !aliases.is_empty() {
                spans.push(Span::styled(format!("{ALSO_BEFORE}{aliases})"), th.muted()));
            }
            Line::from(spans)
        }
        HelpRow::Note(n) => Line::from(Span::styled(n, th.muted())),
    }
}

/// `left`, padded to `at` columns, then `right`.
fn side_by_side(left: Line<'static>, right: Option<Line<'static>>, at: usize) -> Line<'static> {
    let Some(right) = right else {
        return left;
    };
    let pad = " ".repeat(at.saturating_sub(left.width()));
    let mut spans = left.spans;
    spans.push(Span::raw(pad));
    spans.extend(right.spans);
    Line::from(spans)
}

pub fn palette_popup(app: &App, input: &InputState, frame: &mut Frame, body: Rect) {
    debug_assert_eq!(input.kind, InputKind::Palette);
    let th = app.theme();
    let typed = input.text();
    let word = typed
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut lines: Vec<Line> = Vec::new();
    if !input.candidates.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                " completions: {}",
                terminal_safe(&input.candidates.join("  "))
            ),
            th.accent(),
        )));
    }
    for c in COMMANDS {
        if word.is_empty()
            || c.name.starts_with(&word)
            || c.aliases.iter().any(|a| a.starts_with(&word))
        {
            lines.push(Line::from(vec![
                Span::styled(
                    format!(" :{:<9}", c.name),
                    th.accent().add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!("{:<26}", c.aliases.join(" ")), th.muted()),
                Span::styled(c.help, Style::default().fg(th.fg)),
            ]));
        }
    }
    if word == "theme" {
        let names = crate::theme::theme_names(app.theme_dir());
        lines.push(Line::from(Span::styled(
            format!(" themes: {}", terminal_safe(&names.join("  "))),
            th.accent(),
        )));
    }
    if !app.history().is_empty() {
        lines.push(Line::from(Span::styled(
            format!(
                " history (↑↓): {}",
                terminal_safe(
                    &app.history()
                        .iter()
                        .rev()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("  ")
                )
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
                .title(pane_title(
                    Span::styled(
                        " command (tab completes, enter runs, esc closes) ",
                        th.title(),
                    ),
                    area.width,
                )),
        ),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::fit_hints;

    fn hints() -> Vec<(String, &'static str)> {
        ["open", "mark", "sort", "quit", "help", "cmd"]
            .iter()
            .zip(["enter", "space", "s", "q", "?", ":"])
            .map(|(label, k)| (k.to_string(), *label))
            .collect()
    }

    #[test]
    fn hints_that_fit_are_kept_whole_and_in_order() {
        let all = hints();
        let width: usize = all.iter().map(|(k, l)| k.len() + l.len() + 3).sum();
        assert_eq!(fit_hints(all.clone(), width), all);
    }

    #[test]
    fn narrow_footers_drop_whole_hints_but_keep_help() {
        // " enter open " (12) + " space mark " (12) fit in 30 with " ? help " (8); " s sort " does not.
        let shown = fit_hints(hints(), 32);
        let labels: Vec<&str> = shown.iter().map(|h| h.1).collect();
        assert_eq!(labels, ["open", "mark", "help"]);
        let shown = fit_hints(hints(), 8);
        assert_eq!(shown, [("?".to_string(), "help")]);
    }
}
