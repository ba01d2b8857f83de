//! Drawing a table: only the rows inside the viewport are turned into `Row`s.
//!
//! Every cell and the title pass through [`terminal_safe`] here, so a view built on this
//! table cannot forget it: cells hold names and reasons from the cloud.

use super::{Column, RowCtx, TableRow, TableState};
use crate::model::terminal_safe;
pub use crate::model::text::cut_marked;
use crate::model::text::{chars_fitting, heat_state, is_heat_status, PATH_SEP};
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
    if inner.height == 0 || inner.width == 0 {
        frame.render_widget(block, area);
        return;
    }
    if state.is_empty() {
        frame.render_widget(block, area);
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
    state.drawn_rows.set(body_height);
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
    // Widths by need; a column given none at this width is not drawn (its cells neither).
    let widths = column_widths(&shown, &texts, inner.width);
    let drawn: Vec<bool> = widths.iter().map(Option::is_some).collect();
    let shown: Vec<(usize, &Column<T>)> = shown
        .into_iter()
        .zip(&drawn)
        .filter_map(|(c, &d)| d.then_some(c))
        .collect();
    let texts: Vec<Vec<String>> = texts
        .into_iter()
        .map(|row| {
            row.into_iter()
                .zip(&drawn)
                .filter_map(|(t, &d)| d.then_some(t))
                .collect()
        })
        .collect();
    // Columns not drawn at this width are named on the bottom border, so a narrow terminal
    // never hides a column silently.
    let hidden: Vec<&str> = columns
        .iter()
        .enumerate()
        .filter(|(i, _)| !shown.iter().any(|(s, _)| s == i))
        .map(|(_, c)| c.title)
        .collect();
    frame.render_widget(
        match hidden_line(&hidden, area.width) {
            Some(line) => block.title_bottom(line.style(th.muted())),
            None => block,
        },
        area,
    );
    let widths: Vec<Constraint> = std::iter::once(Constraint::Length(1))
        .chain(widths.into_iter().flatten())
        .collect();
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

/// What free text (a reason) gets before names grow past what tells them apart: a few words.
const FREE_TEXT_MIN: u16 = 16;

/// Fewer columns than this show nothing worth reading (`U…`): such a column is not drawn.
const MIN_SHOWN: u16 = 3;

/// Widths by need, the one rule of every table: each shown column's width (`None`: not drawn
/// at this width). Three kinds of column, by their declared constraint:
/// - `Min`: what tells rows apart (a name, a resource path);
/// - `Length`: a short column of fixed meaning (a time, a status), declared at its widest;
/// - `Fill`: free text (a reason) that takes what is left.
///
/// Where the columns fit as declared, the name-like ones are [`fitted`] to their text when a
/// `Fill` column is there to take the rest and still gets [`FREE_TEXT_MIN`]; a table without
/// one keeps its declared widths. Otherwise (a narrow terminal, long names: the layout cut
/// every `prod-k8s-default-worker-N` to `prod-k8s-defa…` while a reason had room)
/// [`by_need`] gives each its width in the order of what the operator can least do without.
fn column_widths<T>(
    shown: &[(usize, &Column<T>)],
    texts: &[Vec<String>],
    room: u16,
) -> Vec<Option<Constraint>> {
    let own = || shown.iter().map(|(_, c)| c.width);
    let has_fill = own().any(|w| matches!(w, Constraint::Fill(_)));
    let fit: Vec<Constraint> = shown
        .iter()
        .enumerate()
        .map(|(j, (_, c))| fitted(c.width, c.title, texts.iter().map(|t| &t[j])))
        .collect();
    let needed = |ws: &[Constraint]| -> u32 {
        ws.iter()
            .map(|w| match w {
                Constraint::Length(n) | Constraint::Min(n) => u32::from(*n) + 1,
                _ => 1,
            })
            .sum::<u32>()
            + 2
    };
    let fills = u32::try_from(own().filter(|w| matches!(w, Constraint::Fill(_))).count())
        .unwrap_or(u32::MAX);
    if has_fill && needed(&fit) + fills * u32::from(FREE_TEXT_MIN) <= u32::from(room) {
        return fit.into_iter().map(Some).collect();
    }
    let own: Vec<Constraint> = own().collect();
    if !has_fill && needed(&own) <= u32::from(room) {
        return own.into_iter().map(Some).collect();
    }
    let wants: Vec<Want> = shown
        .iter()
        .enumerate()
        .map(|(j, (_, c))| Want::of(c.width, c.title, texts.iter().map(|t| t[j].as_str())))
        .collect();
    // The mark column and one blank before each column.
    let free = room.saturating_sub(1 + u16::try_from(shown.len()).unwrap_or(u16::MAX));
    by_need(&wants, free)
        .into_iter()
        .map(|w| w.map(Constraint::Length))
        .collect()
}

/// What one column needs, for [`by_need`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Tells rows apart: `keep` columns keep its distinct texts distinct (each cut keeps the
    /// end of a path, the start of other text: [`cut_marked`]), `need` shows them whole.
    Apart { keep: u16, need: u16 },
    /// Fixed meaning: its widest text (or title), at most as declared.
    Natural(u16),
    /// Heat statuses: `keep` shows each one's state (`…IN_PROGRESS`), given with what tells
    /// rows apart; `need` shows them whole, given with the columns of fixed meaning.
    State { keep: u16, need: u16 },
    /// Free text: what is left.
    Rest,
}

impl Want {
    fn of<'a>(declared: Constraint, title: &str, texts: impl Iterator<Item = &'a str>) -> Want {
        let texts: Vec<&str> = texts.collect();
        let widest = texts
            .iter()
            .map(|t| Span::raw(*t).width())
            .chain(std::iter::once(Span::raw(title).width()))
            .max()
            .unwrap_or(0);
        let widest = u16::try_from(widest).unwrap_or(u16::MAX);
        // A column of Heat statuses tells rows apart by their state (in progress, complete,
        // failed): it keeps that much (`…IN_PROGRESS`) as a path keeps its member, before
        // a time or a reason gets room, and its action (`UPDATE_`) when there is more.
        if !texts.is_empty() && texts.iter().all(|t| is_heat_status(t)) {
            let state = texts.iter().map(|t| state_width(t)).max().unwrap_or(0);
            let need = widest.min(declared_width(declared));
            return Want::State {
                keep: state.min(need),
                need,
            };
        }
        match declared {
            Constraint::Min(_) => {
                let need = widest.min(FIT_CAP);
                Want::Apart {
                    keep: distinct_width(&texts, need).max(MIN_SHOWN.min(need)),
                    need,
                }
            }
            Constraint::Fill(_) => Want::Rest,
            Constraint::Length(n) | Constraint::Max(n) => Want::Natural(widest.min(n)),
            Constraint::Percentage(_) | Constraint::Ratio(_, _) => Want::Rest,
        }
    }
}

/// The columns a Heat status's state takes with the `…` that marks its action cut:
/// `…IN_PROGRESS` is 12.
fn state_width(status: &str) -> u16 {
    u16::try_from(heat_state(status).len() + 1).unwrap_or(u16::MAX)
}

/// A column's declared width where it has one (`Length`, `Max`), else no bound.
fn declared_width(declared: Constraint) -> u16 {
    match declared {
        Constraint::Length(n) | Constraint::Max(n) => n,
        Constraint::Min(_)
        | Constraint::Fill(_)
        | Constraint::Percentage(_)
        | Constraint::Ratio(_, _) => FIT_CAP,
    }
}

/// The columns (up to `need`) a name-like column keeps whatever the room: what tells its rows
/// apart, whole. A resource path keeps as many names from its end as it takes for its distinct
/// texts to stay distinct: the member and the resource (`…406 > kube-minion-port` beside
/// `…406 > kube-minion` and `…405 > kube-minion`; `…27` among a group's members), not the
/// group they share nor half a member's number. Any other name is kept whole: its first
/// letters alone are no name an operator knows.
fn distinct_width(texts: &[&str], need: u16) -> u16 {
    // The indentation of a nested event's path is not what tells it apart.
    let mut distinct: Vec<&str> = texts.iter().map(|t| t.trim_start()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let all_apart = |mut kept: Vec<String>| {
        kept.sort_unstable();
        kept.dedup();
        kept.len() == distinct.len()
    };
    let names = distinct
        .iter()
        .map(|t| t.split(PATH_SEP).count())
        .max()
        .unwrap_or(1);
    let width = |w: usize| u16::try_from(w).unwrap_or(u16::MAX).min(need);
    if names > 1 {
        // The last k names of every path, fewest k first: distinct, they are kept whole (and
        // the `…` before them).
        for k in 1..names {
            let tails: Vec<(String, usize)> = distinct
                .iter()
                .map(|t| {
                    let parts: Vec<&str> = t.split(PATH_SEP).collect();
                    // Names left out: the `…` says so (indentation goes unmarked).
                    let cut = parts.len() > k;
                    let tail = parts[parts.len().saturating_sub(k)..].join(PATH_SEP);
                    let w = Span::raw(tail.as_str()).width() + usize::from(cut);
                    (tail, w)
                })
                .collect();
            let widest = tails.iter().map(|(_, w)| *w).max().unwrap_or(0);
            if all_apart(tails.into_iter().map(|(t, _)| t).collect()) {
                return width(widest);
            }
        }
    }
    need
}

/// Widths for a table narrower than its columns want, `free` columns between them: first what
/// tells rows apart its distinguishing part (without it the rows cannot be told apart), then
/// the short fixed-meaning columns their natural width (a time, a status: cut, they say
/// little, and whole they are short), then the rest of the names (leaving free text [`FREE_TEXT_MIN`] when there is that much), then free
/// text what is left. A column left with fewer than [`MIN_SHOWN`] is not drawn, and its
/// blank goes to the others; what no column takes goes to the last one drawn.
fn by_need(wants: &[Want], free: u16) -> Vec<Option<u16>> {
    let mut given = vec![0u16; wants.len()];
    let mut left = free;
    let give = |given: &mut [u16], j: usize, more: u16, left: &mut u16| {
        let n = more.min(*left);
        given[j] += n;
        *left -= n;
    };
    // A status's state first (`…IN_PROGRESS`: without it a row says nothing of its resource),
    // then what tells rows apart.
    for (j, w) in wants.iter().enumerate() {
        if let Want::State { keep, .. } = w {
            give(&mut given, j, *keep, &mut left);
        }
    }
    for (j, w) in wants.iter().enumerate() {
        if let Want::Apart { keep, .. } = w {
            give(&mut given, j, *keep, &mut left);
        }
    }
    for (j, w) in wants.iter().enumerate() {
        match w {
            Want::Natural(n) if left >= MIN_SHOWN.min(*n) => give(&mut given, j, *n, &mut left),
            Want::State { keep, need } => give(&mut given, j, need - keep, &mut left),
            Want::Natural(_) | Want::Apart { .. } | Want::Rest => {}
        }
    }
    // A few words of free text before the names grow further.
    let rests = u16::try_from(wants.iter().filter(|w| **w == Want::Rest).count()).unwrap_or(0);
    let kept_for_text = left.min(FREE_TEXT_MIN.saturating_mul(rests));
    left -= kept_for_text;
    for (j, w) in wants.iter().enumerate() {
        if let Want::Apart { keep, need } = w {
            give(&mut given, j, need.saturating_sub(*keep), &mut left);
        }
    }
    left += kept_for_text;
    // The blanks of the columns not drawn, for the free text.
    let dropped = wants
        .iter()
        .zip(&given)
        .filter(|(w, g)| !matches!(w, Want::Rest) && **g < MIN_SHOWN.min(natural(w)))
        .count();
    left = left.saturating_add(u16::try_from(dropped).unwrap_or(0));
    let rests: Vec<usize> = (0..wants.len())
        .filter(|&j| wants[j] == Want::Rest)
        .collect();
    let share = u16::try_from(rests.len())
        .ok()
        .filter(|&n| n > 0)
        .map_or(0, |n| left / n);
    if share >= MIN_SHOWN {
        for &j in &rests {
            give(&mut given, j, share, &mut left);
        }
    }
    let mut widths: Vec<Option<u16>> = wants
        .iter()
        .zip(&given)
        .map(|(w, &g)| (g > 0 && g >= MIN_SHOWN.min(natural(w))).then_some(g))
        .collect();
    // What no column took (and the blanks of those not drawn): to the last column drawn.
    let used: u16 = widths.iter().flatten().fold(0, |a, w| a.saturating_add(*w));
    let blanks = u16::try_from(widths.iter().filter(|w| w.is_none()).count()).unwrap_or(0);
    let unused = free.saturating_add(blanks).saturating_sub(used);
    if let Some(last) = widths.iter_mut().rev().find_map(Option::as_mut) {
        *last = last.saturating_add(unused);
    }
    widths
}

/// The width under which a column shows nothing worth reading: [`MIN_SHOWN`], or less for a
/// column whose whole text is shorter.
fn natural(w: &Want) -> u16 {
    match w {
        Want::Apart { need, .. } => *need,
        Want::State { keep, .. } => *keep,
        Want::Natural(n) => *n,
        Want::Rest => MIN_SHOWN,
    }
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

/// The bottom border's note of the columns a table does not draw at this width
/// (` +2 hidden: ZONE STACK `, right-aligned, cut marked), or none when all are drawn.
fn hidden_line(hidden: &[&str], width: u16) -> Option<Line<'static>> {
    if hidden.is_empty() {
        return None;
    }
    let text = format!(" +{} hidden: {} ", hidden.len(), hidden.join(", "));
    Some(pane_title(text, width).right_aligned())
}

#[cfg(test)]
mod width_tests {
    use super::{by_need, distinct_width, Want};

    /// A path keeps as many names from its end as tell its rows apart; indentation is not one.
    #[test]
    fn a_path_column_keeps_the_names_that_tell_its_rows_apart() {
        assert_eq!(distinct_width(&["  nodes > 27", "  nodes > 28"], 12), 3);
        let magnum = [
            "    kube_minions > 405 > kube-minion",
            "    kube_minions > 406 > kube-minion",
            "    kube_minions > 406 > kube-minion-port",
        ];
        // `…406 > kube-minion-port`: the member and the resource, not the group.
        assert_eq!(distinct_width(&magnum, 40), 23);
        let nested = [
            "  kube_minions > 406",
            "    kube_minions > 406",
            "    kube_minions > 406 > kube-minion",
            "  kube_minions > 417",
            "    kube_minions > 417 > kube-minion",
        ];
        assert_eq!(distinct_width(&nested, 40), 18);
        // Other names are kept whole.
        assert_eq!(distinct_width(&["prod-east", "prod-west"], 9), 9);
    }

    /// Fixed-meaning columns get their natural width, names what tells them apart, free text a
    /// few words before names grow, then the rest; under 3 columns a column is not drawn.
    #[test]
    fn widths_go_by_need_in_order() {
        let events = [
            Want::Natural(7),
            Want::Natural(18),
            Want::Apart { keep: 3, need: 12 },
            Want::Rest,
        ];
        assert_eq!(
            by_need(&events, 33),
            vec![Some(7), Some(18), Some(3), Some(5)]
        );
        assert_eq!(
            by_need(&events, 60),
            vec![Some(7), Some(18), Some(12), Some(23)]
        );
        // No room for free text: it is not drawn and its blank goes to the last one drawn.
        assert_eq!(by_need(&events, 29), vec![Some(7), Some(18), Some(5), None]);
        // Names first when even they do not fit with the rest.
        let names = [
            Want::Apart { keep: 11, need: 11 },
            Want::Natural(18),
            Want::Natural(8),
        ];
        assert_eq!(by_need(&names, 20), vec![Some(11), Some(10), None]);
    }
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
        // Indentation goes first, unmarked; then names, marked.
        let nested = format!("    {path}");
        assert_eq!(cut_marked(nested.clone(), 33), path);
        assert_eq!(cut_marked(nested, 18), "…406 > kube-minion");
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
