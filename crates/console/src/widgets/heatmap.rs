//! The fleet heat map: one cell per node, grouped (node group / zone), coloured by state.
//! When one character per node does not fit, two nodes share a cell (upper and lower
//! half block), so 1000 nodes need about 5 rows on a 120-column terminal.

use crate::theme::{CellState, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::Widget;

/// One group of cells, drawn under its own label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeatGroup {
    pub label: String,
    pub states: Vec<CellState>,
    /// The selected node's position in `states`, highlighted in full mode.
    pub selected: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Density {
    /// One character per node.
    Full,
    /// Two nodes per character (half blocks).
    Half,
}

/// Width of the label column (0: labels get their own line, on narrow areas).
fn label_width(groups: &[HeatGroup], width: u16) -> u16 {
    if width < 60 {
        return 0;
    }
    let longest = groups
        .iter()
        .map(|g| g.label.chars().count())
        .max()
        .unwrap_or(0) as u16;
    (longest + 1).clamp(14, 24)
}

fn rows_for(groups: &[HeatGroup], width: u16, per_cell: usize) -> usize {
    let lw = label_width(groups, width);
    let cells = (width.saturating_sub(lw) as usize).max(1);
    groups
        .iter()
        .map(|g| {
            let rows = g.states.len().div_ceil(cells * per_cell).max(1);
            if lw == 0 {
                rows + 1
            } else {
                rows
            }
        })
        .sum()
}

/// How many rows the map wants at this width, and at which density it will draw.
pub fn layout(groups: &[HeatGroup], width: u16, max_rows: u16) -> (u16, Density) {
    let full = rows_for(groups, width, 1);
    if full <= max_rows as usize {
        return (full as u16, Density::Full);
    }
    let k = nodes_per_half_cell(groups, width, max_rows);
    let half = rows_for(groups, width, 2 * k);
    (half.min(max_rows as usize) as u16, Density::Half)
}

/// Nodes per half cell so that everything fits: 1 when it can, else the smallest
/// aggregation (each half cell then shows the worst state of its nodes), at most 256.
pub fn nodes_per_half_cell(groups: &[HeatGroup], width: u16, max_rows: u16) -> usize {
    // Folding cannot go below one row per group (plus label lines when narrow).
    let floor = if label_width(groups, width) == 0 {
        groups.len() * 2
    } else {
        groups.len()
    };
    let target = (max_rows as usize).max(floor);
    let mut k = 1;
    while k < 256 && rows_for(groups, width, 2 * k) > target {
        k += 1;
    }
    k
}

/// The map's scale for a title: `None` at one node per cell.
pub fn scale_note(groups: &[HeatGroup], width: u16, max_rows: u16) -> Option<String> {
    match layout(groups, width, max_rows).1 {
        Density::Full => None,
        Density::Half => match nodes_per_half_cell(groups, width, max_rows) {
            1 => Some("2 nodes per cell".into()),
            k => Some(format!("{} nodes per cell, worst shown", 2 * k)),
        },
    }
}

/// Severity for aggregation: the worst state of a cell's nodes is shown.
/// By image, a cell of old and new nodes is old: the upgrade has not done it yet.
fn severity(s: CellState) -> u8 {
    match s {
        CellState::Complete | CellState::New => 0,
        CellState::Unknown => 1,
        CellState::Old => 2,
        CellState::InProgress | CellState::Updating => 3,
        CellState::Paused => 4,
        CellState::Failed => 5,
    }
}

/// Groups with `k` nodes folded into each cell (worst state wins).
fn aggregate(groups: &[HeatGroup], k: usize) -> Vec<HeatGroup> {
    groups
        .iter()
        .map(|g| HeatGroup {
            label: g.label.clone(),
            states: g
                .states
                .chunks(k)
                .map(|c| {
                    c.iter()
                        .copied()
                        .max_by_key(|s| severity(*s))
                        .unwrap_or(CellState::Unknown)
                })
                .collect(),
            selected: g.selected.map(|i| i / k),
        })
        .collect()
}

/// How drawn cells map back to nodes: when a big fleet is folded, each cell stands for `fold`
/// consecutive nodes of its group (the last cell possibly fewer), so what did not fit is
/// counted in nodes, as the operator reads it, not in cells.
struct Cells<'a> {
    fold: usize,
    /// Each original group's node count.
    nodes: &'a [usize],
}

impl Cells<'_> {
    /// Nodes of group `group` left out when only its first `shown` cells were drawn.
    fn hidden_nodes(&self, group: usize, shown: usize) -> usize {
        let total = self.nodes.get(group).copied().unwrap_or(0);
        total.saturating_sub(shown.saturating_mul(self.fold))
    }
}

pub struct HeatMap<'a> {
    pub groups: &'a [HeatGroup],
    pub theme: &'a Theme,
}

impl HeatMap<'_> {
    /// Draw `groups` (folded `fold` nodes per cell, 1 = not folded) with the notes of the
    /// original groups.
    fn draw(
        &self,
        groups: &[HeatGroup],
        notes: &[String],
        fold: usize,
        area: Rect,
        buf: &mut Buffer,
    ) {
        let (_, density) = layout(groups, area.width, area.height);
        let nodes: Vec<usize> = self.groups.iter().map(|g| g.states.len()).collect();
        let cells = Cells {
            fold,
            nodes: &nodes,
        };
        self.draw_body(groups, notes, &cells, density, area, buf);
    }
}

fn group_note(g: &HeatGroup) -> String {
    let mut note = format!("{}", g.states.len());
    // Each count with the glyph of its cells: by image a member held on a hook is old (it
    // is drawn `▒`, counted old); by status it is held (drawn and counted `‖`).
    for s in [CellState::Failed, CellState::Paused, CellState::Old] {
        let n = g.states.iter().filter(|c| **c == s).count();
        if n > 0 {
            note.push_str(&format!(" {n}{}", s.glyph()));
        }
    }
    note
}

impl Widget for HeatMap<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let notes: Vec<String> = self.groups.iter().map(group_note).collect();
        let (_, density) = layout(self.groups, area.width, area.height);
        if density == Density::Half {
            let k = nodes_per_half_cell(self.groups, area.width, area.height);
            if k > 1 {
                let folded = aggregate(self.groups, k);
                self.draw(&folded, &notes, k, area, buf);
                return;
            }
        }
        self.draw(self.groups, &notes, 1, area, buf);
    }
}

impl HeatMap<'_> {
    fn draw_body(
        &self,
        groups: &[HeatGroup],
        notes: &[String],
        cells_of: &Cells,
        density: Density,
        area: Rect,
        buf: &mut Buffer,
    ) {
        let th = self.theme;
        let lw = label_width(groups, area.width);
        let cells = (area.width - lw) as usize;
        let x0 = area.x + lw;
        let per_row = match density {
            Density::Full => cells,
            Density::Half => cells * 2,
        };
        let mut y = area.y;
        let bottom = area.y + area.height;
        let mut hidden = 0usize;
        for (i, (g, note)) in groups.iter().zip(notes).enumerate() {
            if y >= bottom {
                hidden += cells_of.hidden_nodes(i, 0);
                continue;
            }
            if lw == 0 {
                let label = format!("{} ({note})", g.label);
                buf.set_stringn(area.x, y, &label, area.width as usize, th.muted());
                y += 1;
                if y >= bottom {
                    hidden += cells_of.hidden_nodes(i, 0);
                    continue;
                }
            } else {
                buf.set_stringn(
                    area.x,
                    y,
                    &g.label,
                    lw as usize - 1,
                    Style::default().fg(th.fg),
                );
                if y + 1 < bottom && g.states.len() > per_row {
                    buf.set_stringn(area.x, y + 1, note, lw as usize - 1, th.muted());
                }
            }
            for (row_i, chunk) in g.states.chunks(per_row.max(1)).enumerate() {
                if y >= bottom {
                    hidden += cells_of.hidden_nodes(i, row_i * per_row);
                    break;
                }
                match density {
                    Density::Full => {
                        for (x, s) in chunk.iter().enumerate() {
                            let idx = row_i * per_row + x;
                            let mut style = Style::default().fg(th.state_color(*s));
                            let mut glyph = s.glyph();
                            if g.selected == Some(idx) {
                                style = style.bg(th.selected_bg).add_modifier(Modifier::BOLD);
                                glyph = '◆';
                            }
                            if let Some(cell) = buf.cell_mut((x0 + x as u16, y)) {
                                cell.set_char(glyph).set_style(style);
                            }
                        }
                    }
                    Density::Half => {
                        let (top, low) = chunk.split_at(chunk.len().min(cells));
                        for (x, s) in top.iter().enumerate() {
                            let bg = low
                                .get(x)
                                .map(|b| th.state_color(*b))
                                .unwrap_or(Color::Reset);
                            if let Some(cell) = buf.cell_mut((x0 + x as u16, y)) {
                                cell.set_char('▀')
                                    .set_style(Style::default().fg(th.state_color(*s)).bg(bg));
                            }
                        }
                    }
                }
                y += 1;
            }
        }
        if hidden > 0 && area.width > 20 {
            let msg = format!(" +{hidden} nodes not shown ");
            let x = area.x + area.width.saturating_sub(msg.chars().count() as u16);
            buf.set_string(
                x,
                bottom - 1,
                msg,
                th.warning().add_modifier(Modifier::REVERSED),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #15: `▒` meant "old image" on the map and "paused on hook" in the counts beside it.
    /// A held member now has the tree's hook marker, in its cells, its group's note and the
    /// counts' legend alike; old stays `▒`.
    #[test]
    fn held_members_have_the_hook_marker_not_the_old_glyph() {
        assert_eq!(CellState::Paused.glyph(), '‖');
        let legends = [
            CellState::Complete,
            CellState::InProgress,
            CellState::Failed,
            CellState::Unknown,
            CellState::Old,
            CellState::Updating,
            CellState::New,
        ];
        assert!(legends.iter().all(|s| s.glyph() != '‖'));
        // By status: two held, one failed, one done, drawn at one node per cell.
        let g = vec![HeatGroup {
            label: "w".into(),
            states: vec![
                CellState::Paused,
                CellState::Failed,
                CellState::Paused,
                CellState::Complete,
            ],
            selected: None,
        }];
        assert_eq!(group_note(&g[0]), "4 1X 2‖");
        let theme = Theme::default_theme();
        let area = Rect::new(0, 0, 30, 2);
        let mut buf = Buffer::empty(area);
        HeatMap {
            groups: &g,
            theme: &theme,
        }
        .render(area, &mut buf);
        // Narrow: the label and its note on a line, the cells under it.
        let row = |y| -> String { (0..30).map(|x| buf[(x, y)].symbol().to_string()).collect() };
        assert!(row(0).starts_with("w (4 1X 2‖)"), "{:?}", row(0));
        assert!(row(1).starts_with("‖X‖█"), "{:?}", row(1));
        // By image, a held member is old: counted and drawn as old.
        let old = HeatGroup {
            label: "w".into(),
            states: vec![CellState::Old, CellState::Old, CellState::New],
            selected: None,
        };
        assert_eq!(group_note(&old), "3 2▒");
    }

    #[test]
    fn thousand_nodes_fit_in_120_columns_at_half_density() {
        let g = vec![HeatGroup {
            label: "workers".into(),
            states: vec![CellState::Complete; 1000],
            selected: None,
        }];
        // Label column of 14: 104 cells per row.
        assert_eq!(layout(&g, 118, 30), (10, Density::Full));
        assert_eq!(layout(&g, 118, 8), (5, Density::Half));
        // Too many: folded, 2 nodes per half cell.
        let big = vec![HeatGroup {
            label: "workers".into(),
            states: vec![CellState::Complete; 10_000],
            selected: None,
        }];
        assert_eq!(nodes_per_half_cell(&big, 118, 30), 2);
        assert_eq!(layout(&big, 118, 30), (25, Density::Half));
        // More groups than rows: fold only until each group takes one row.
        let many = vec![
            HeatGroup {
                label: "a".into(),
                states: vec![CellState::Complete; 300],
                selected: None,
            };
            5
        ];
        assert_eq!(nodes_per_half_cell(&many, 78, 4), 3);
        // Narrow: labels on their own line.
        assert_eq!(layout(&g, 50, 30), (21, Density::Full));
    }

    /// Unfolded (one node per half cell), what does not fit is counted in nodes too: three
    /// groups of 50 in two rows show two groups, and the third's 50 nodes are not shown.
    #[test]
    fn nodes_not_shown_counts_nodes_unfolded() {
        let groups = vec![
            HeatGroup {
                label: "a".into(),
                states: vec![CellState::Old; 50],
                selected: None,
            };
            3
        ];
        let theme = Theme::default_theme();
        let area = Rect::new(0, 0, 78, 2);
        assert_eq!(nodes_per_half_cell(&groups, 78, 2), 1);
        let mut buf = Buffer::empty(area);
        HeatMap {
            groups: &groups,
            theme: &theme,
        }
        .render(area, &mut buf);
        let last: String = (0..area.width)
            .map(|x| buf[(x, area.height - 1)].symbol().to_string())
            .collect();
        assert!(last.contains("+50 nodes not shown"), "{last:?}");
    }

    /// The "+N nodes not shown" note counts nodes even when a big fleet is folded several
    /// nodes per cell: 5 groups of 300 in 4 rows of 78 columns fold 3 nodes per half cell and
    /// show the first 4 groups, so the fifth group's 300 nodes are the ones not shown (it
    /// said 100 before: the fifth group's cells).
    #[test]
    fn nodes_not_shown_counts_nodes_when_folded() {
        let many = vec![
            HeatGroup {
                label: "a".into(),
                states: vec![CellState::Complete; 300],
                selected: None,
            };
            5
        ];
        let theme = Theme::default_theme();
        let area = Rect::new(0, 0, 78, 4);
        let mut buf = Buffer::empty(area);
        HeatMap {
            groups: &many,
            theme: &theme,
        }
        .render(area, &mut buf);
        let last: String = (0..area.width)
            .map(|x| buf[(x, area.height - 1)].symbol().to_string())
            .collect();
        assert!(last.contains("+300 nodes not shown"), "{last:?}");
    }
}
