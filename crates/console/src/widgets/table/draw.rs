//! Drawing a table: only the rows inside the viewport are turned into `Row`s.
//!
//! Every cell and the title pass through [`terminal_safe`] here, so a view built on this
//! table cannot forget it: cells hold names and reasons from the cloud.

use super::{Column, RowCtx, TableRow, TableState};
use crate::model::terminal_safe;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};
use ratatui::Frame;

/// How a table is framed.
pub struct TableLook<'a> {
    pub title: &'a str,
    /// Extra spans after the title (e.g. a stale marker).
    pub badges: Vec<Span<'a>>,
    pub focused: bool,
    /// Shown when there are no rows at all.
    pub empty_text: &'a str,
}

/// The title line: name, counts, sort, filter, marks. Views that draw a table's rows another
/// way (the events pane's wrap mode) frame them with the same title.
pub fn title_line<'a, T>(
    look: &TableLook<'a>,
    state: &TableState,
    total: usize,
    columns: &[Column<T>],
    ctx: &RowCtx,
) -> Line<'a> {
    let th = ctx.theme;
    let mut spans = vec![
        Span::styled(format!(" {} ", terminal_safe(look.title)), th.title()),
        Span::styled(
            if state.len() == total {
                format!("[{total}] ")
            } else {
                format!("[{}/{}] ", state.len(), total)
            },
            th.muted(),
        ),
    ];
    if let Some(c) = state.sort.column.and_then(|c| columns.get(c)) {
        spans.push(Span::styled(
            format!(
                "sort:{}{} ",
                c.title,
                if state.sort.descending { "↓" } else { "↑" }
            ),
            th.accent(),
        ));
    }
    let f = state.filter();
    if !f.raw().is_empty() {
        spans.push(Span::styled(
            format!("/{} ", terminal_safe(f.raw())),
            th.accent(),
        ));
        if let Some(e) = f.error() {
            spans.push(Span::styled(format!("(bad regex: {e}) "), th.error()));
        }
    }
    if !state.marks().is_empty() {
        spans.push(Span::styled(
            format!("marked {} ", state.marks().len()),
            Style::default().fg(th.mark).add_modifier(Modifier::BOLD),
        ));
    }
    spans.extend(
        look.badges
            .iter()
            .map(|b| Span::styled(terminal_safe(&b.content).into_owned(), b.style)),
    );
    Line::from(spans)
}

pub fn draw_table<T: TableRow>(
    frame: &mut Frame,
    area: Rect,
    items: &[T],
    columns: &[Column<T>],
    state: &TableState,
    ctx: &RowCtx,
    look: TableLook,
) {
    let th = ctx.theme;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(if look.focused {
            Style::default().fg(th.accent)
        } else {
            th.border()
        })
        .title(pane_title(
            title_line(&look, state, items.len(), columns, ctx),
            area.width,
        ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    if state.is_empty() {
        let text = if items.is_empty() {
            look.empty_text.to_string()
        } else {
            format!(
                "No rows match ({} hidden by filter or faults-only)",
                items.len()
            )
        };
        frame.render_widget(Paragraph::new(Span::styled(text, th.muted())), inner);
        return;
    }
    let body_height = inner.height.saturating_sub(1) as usize;
    let offset = state.visible_offset(body_height);
    let end = (offset + body_height).min(state.len());
    let selected = state.selected_pos();
    // Narrow screens drop the less important columns (sorting still uses every column).
    let shown: Vec<(usize, &Column<T>)> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| inner.width >= c.hide_below)
        .collect();
    // (An index past the data would mean a missed sync; such rows are skipped, not a panic.)
    let visible: Vec<(usize, &T)> = state.view()[offset..end]
        .iter()
        .enumerate()
        .filter_map(|(k, &i)| items.get(i).map(|it| (k, it)))
        .collect();
    // Each visible cell's text, terminal-safe, computed once for the widths and the cells.
    let texts: Vec<Vec<String>> = visible
        .iter()
        .map(|(_, item)| {
            shown
                .iter()
                .map(|(_, c)| {
                    let text = (c.text)(item, ctx);
                    match terminal_safe(&text) {
                        std::borrow::Cow::Borrowed(_) => text,
                        std::borrow::Cow::Owned(safe) => safe,
                    }
                })
                .collect()
        })
        .collect();
    let widths = column_widths(&shown, &texts, inner.width);
    // The width each column gets (the table lays them out the same way), so that a text cut
    // says so with `…` instead of losing its end silently.
    let laid = Layout::horizontal(widths.clone())
        .spacing(1)
        .split(Rect::new(0, 0, inner.width, 1));
    let width_of = |j: usize| laid.get(j + 1).map_or(usize::MAX, |r| usize::from(r.width));
    let header = Row::new(
        std::iter::once(Cell::from(" ")).chain(shown.iter().enumerate().map(|(j, &(i, c))| {
            let arrow = match state.sort.column {
                Some(s) if s == i => {
                    if state.sort.descending {
                        "↓"
                    } else {
                        "↑"
                    }
                }
                _ => "",
            };
            // A heading keeps its start (`IN_…`), as its column's cells are cut.
            let title = Line::raw(format!("{}{}", c.title, arrow));
            Cell::from(cut_line_marked(title, width_of(j)))
        })),
    )
    .style(th.header().add_modifier(Modifier::BOLD));
    let texts: Vec<Vec<String>> = texts
        .into_iter()
        .map(|row| {
            row.into_iter()
                .enumerate()
                .map(|(j, t)| cut_marked(t, width_of(j)))
                .collect()
        })
        .collect();
    let rows =
        visible.iter().zip(texts).map(|((k, item), texts)| {
            let id = item.row_id();
            let mark = if state.is_marked(&id) { "●" } else { " " };
            let cells =
                std::iter::once(Cell::from(Span::styled(mark, Style::default().fg(th.mark))))
                    .chain(shown.iter().zip(texts).map(|((_, c), text)| {
                        Cell::from(Span::styled(text, (c.style)(item, ctx)))
                    }));
            let row = Row::new(cells);
            if Some(offset + k) == selected && look.focused {
                row.style(th.selected())
            } else if Some(offset + k) == selected {
                row.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                row
            }
        });
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    frame.render_widget(table, inner);
}

/// Widest a name-like column grows to fit its text (beyond it, the text is cut).
const FIT_CAP: u16 = 64;

/// The layout's constraints: the mark column, then each shown column's own, with name-like
/// `Min` columns [`fitted`] to their text when a `Fill` column is there to take the rest
/// and everything still fits (else the layout would squeeze the fixed columns instead).
fn column_widths<T>(
    shown: &[(usize, &Column<T>)],
    texts: &[Vec<String>],
    room: u16,
) -> Vec<Constraint> {
    let own = || shown.iter().map(|(_, c)| c.width);
    let has_fill = own().any(|w| matches!(w, Constraint::Fill(_)));
    let fit: Vec<Constraint> = shown
        .iter()
        .enumerate()
        .map(|(j, (_, c))| fitted(c.width, c.title, texts.iter().map(|t| &t[j])))
        .collect();
    let needed: u32 = fit
        .iter()
        .map(|w| match w {
            Constraint::Length(n) | Constraint::Min(n) => u32::from(*n) + 1,
            _ => 1,
        })
        .sum::<u32>()
        + 2;
    let chosen: Vec<Constraint> = if has_fill && needed <= u32::from(room) {
        fit
    } else {
        own().collect()
    };
    std::iter::once(Constraint::Length(1))
        .chain(chosen)
        .collect()
}

/// A `Min(n)` column (names) is as wide as its widest visible text, at least `n` and its
/// title, at most [`FIT_CAP`]: left as `Min`, the layout handed such a column the slack a
/// `Fill` column (the reasons) needed, so a name sat in 30 empty columns while a reason was
/// cut. Other constraints are kept.
fn fitted<'a>(
    width: Constraint,
    title: &str,
    texts: impl Iterator<Item = &'a String>,
) -> Constraint {
    let Constraint::Min(min) = width else {
        return width;
    };
    let widest = texts
        .map(|t| Span::raw(t.as_str()).width())
        .max()
        .unwrap_or(0)
        // The sort arrow after the title.
        .max(title.chars().count() + 1);
    let widest = u16::try_from(widest).unwrap_or(u16::MAX);
    Constraint::Length(widest.clamp(min, FIT_CAP.max(min)))
}

/// How a path is spelled in the views (`kube_minions > 406 > kube-minion`).
const PATH_SEP: &str = " > ";

/// `text` cut to `width` columns, the cut marked `…`. A resource path (spelled with
/// `PATH_SEP`, ` > `) keeps its end: the member and the resource are what tell its rows apart
/// (`…406 > kube-minion`, `…406 > kube-port`), the group they share is what goes. So does
/// an action's target (`prod-east/workers-a/17`: one word of `/`-separated names), whose
/// member is at its end. Any other text keeps its start.
pub fn cut_marked(text: String, width: usize) -> String {
    if Span::raw(text.as_str()).width() <= width {
        return text;
    }
    if width == 0 {
        return String::new();
    }
    let room = width - 1;
    let chars: Vec<char> = text.chars().collect();
    let at_end =
        text.contains(PATH_SEP) || (text.contains('/') && !text.chars().any(char::is_whitespace));
    let kept = if at_end {
        chars_fitting(chars.iter().rev().copied(), room)
    } else {
        chars_fitting(chars.iter().copied(), room)
    };
    if at_end {
        let tail: String = chars[chars.len() - kept..].iter().collect();
        format!("…{tail}")
    } else {
        let head: String = chars[..kept].iter().collect();
        format!("{head}…")
    }
}

/// How many of `chars`, in the order given, fit in `room` columns (a wide character counts
/// two; one that would cross the edge stops the count).
fn chars_fitting(chars: impl Iterator<Item = char>, room: usize) -> usize {
    let mut buf = [0u8; 4];
    let mut used = 0usize;
    chars
        .take_while(|c| {
            used += Span::raw(&*c.encode_utf8(&mut buf)).width();
            used <= room
        })
        .count()
}

/// A styled line cut to `width` columns, the cut marked `…` in the style of the span it falls
/// in; spans past the cut are dropped. A line that fits is returned as it is.
pub fn cut_line_marked<'a>(line: Line<'a>, width: usize) -> Line<'a> {
    if line.width() <= width {
        return line;
    }
    let style = line.style;
    let mut spans = Vec::new();
    let mut used = 0usize;
    for span in line.spans {
        let w = span.width();
        if used + w < width {
            used += w;
            spans.push(span);
            continue;
        }
        // The last column holds the mark: this span is cut to what is left before it.
        let room = width.saturating_sub(used).saturating_sub(1);
        let mut head: String = span
            .content
            .chars()
            .take(chars_fitting(span.content.chars(), room))
            .collect();
        head.push('…');
        spans.push(Span::styled(head, span.style));
        break;
    }
    Line::from(spans).style(style)
}

/// A pane's title cut to the room between the corners of its border (`width` the pane's),
/// the cut marked `…`: the border would cut it silently.
pub fn pane_title<'a>(title: impl Into<Line<'a>>, width: u16) -> Line<'a> {
    cut_line_marked(title.into(), usize::from(width.saturating_sub(2)))
}

#[cfg(test)]
mod cut_tests {
    use super::{cut_line_marked, cut_marked};
    use ratatui::style::{Color, Style};
    use ratatui::text::{Line, Span};

    #[test]
    fn a_styled_line_is_cut_in_the_span_it_overflows_and_marked() {
        let red = Style::default().fg(Color::Red);
        let line = Line::from(vec![
            Span::raw("held: "),
            Span::styled("nodes > 3 > server", red),
        ]);
        assert_eq!(cut_line_marked(line.clone(), 40), line);
        let cut = cut_line_marked(line, 12);
        assert_eq!(cut.width(), 12);
        assert_eq!(cut.spans.len(), 2);
        assert_eq!(cut.spans[1].content, "nodes…");
        assert_eq!(cut.spans[1].style, red);
    }

    #[test]
    fn a_path_keeps_its_end_and_other_text_its_start_each_cut_marked() {
        let path = "kube_minions > 406 > kube-minion".to_string();
        assert_eq!(cut_marked(path.clone(), 40), path);
        assert_eq!(cut_marked(path.clone(), 18), "…406 > kube-minion");
        assert_eq!(
            cut_marked("OS::TripleO::CephStorageServer".into(), 24),
            "OS::TripleO::CephStorag…"
        );
        assert_eq!(
            cut_marked("rollout.rollback_release".into(), 20),
            "rollout.rollback_re…"
        );
        // An action's target keeps its member; a sentence with a slash keeps its start.
        assert_eq!(
            cut_marked("prod-east-very-long-stack/workers-a/17".into(), 16),
            "…ck/workers-a/17"
        );
        assert_eq!(
            cut_marked("held 3/7 members on a hook".into(), 10),
            "held 3/7 …"
        );
        assert_eq!(cut_marked("abc".into(), 0), "");
        assert_eq!(cut_marked("日本語テキスト".into(), 5), "日本…");
    }
}
