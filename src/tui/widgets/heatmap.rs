//! The fleet heat map: one cell per node, grouped (node group / zone), coloured by state.
//! When one character per node does not fit, two nodes share a cell (upper and lower
//! half block), so 1000 nodes need about 5 rows on a 120-column terminal.

use crate::tui::theme::{CellState, Theme};
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
    (longest + 1).clamp(8, 24)
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
    let half = rows_for(groups, width, 2);
    (half.min(max_rows as usize) as u16, Density::Half)
}

pub struct HeatMap<'a> {
    pub groups: &'a [HeatGroup],
    pub theme: &'a Theme,
}

fn group_note(g: &HeatGroup) -> String {
    let failed = g.states.iter().filter(|s| **s == CellState::Failed).count();
    let paused = g.states.iter().filter(|s| **s == CellState::Paused).count();
    let mut note = format!("{}", g.states.len());
    if failed > 0 {
        note.push_str(&format!(" {failed}{}", CellState::Failed.glyph()));
    }
    if paused > 0 {
        note.push_str(&format!(" {paused}{}", CellState::Paused.glyph()));
    }
    note
}

impl Widget for HeatMap<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let th = self.theme;
        let (_, density) = layout(self.groups, area.width, area.height);
        let lw = label_width(self.groups, area.width);
        let cells = (area.width - lw) as usize;
        let x0 = area.x + lw;
        let per_row = match density {
            Density::Full => cells,
            Density::Half => cells * 2,
        };
        let mut y = area.y;
        let bottom = area.y + area.height;
        let mut hidden = 0usize;
        for g in self.groups {
            if y >= bottom {
                hidden += g.states.len();
                continue;
            }
            if lw == 0 {
                let label = format!("{} ({})", g.label, group_note(g));
                buf.set_stringn(area.x, y, &label, area.width as usize, th.muted());
                y += 1;
                if y >= bottom {
                    hidden += g.states.len();
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
                    buf.set_stringn(area.x, y + 1, group_note(g), lw as usize - 1, th.muted());
                }
            }
            for (row_i, chunk) in g.states.chunks(per_row.max(1)).enumerate() {
                if y >= bottom {
                    hidden += g.states.len().saturating_sub(row_i * per_row);
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

    #[test]
    fn thousand_nodes_fit_in_120_columns_at_half_density() {
        let g = vec![HeatGroup {
            label: "workers".into(),
            states: vec![CellState::Complete; 1000],
            selected: None,
        }];
        // Label column of 8: 110 cells per row.
        assert_eq!(layout(&g, 118, 30), (10, Density::Full));
        assert_eq!(layout(&g, 118, 8), (5, Density::Half));
        // Narrow: labels on their own line.
        assert_eq!(layout(&g, 50, 30), (21, Density::Full));
    }
}
