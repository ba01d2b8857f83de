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

fn rows_for(groups: &[HeatGroup], width: usize, per_cell: usize) -> usize {
    let width = width.max(1);
    groups
        .iter()
        .map(|g| 1 + g.states.len().div_ceil(width * per_cell))
        .sum()
}

/// How many rows the map wants at this width, and at which density it will draw.
pub fn layout(groups: &[HeatGroup], width: u16, max_rows: u16) -> (u16, Density) {
    let full = rows_for(groups, width as usize, 1);
    if full <= max_rows as usize {
        return (full as u16, Density::Full);
    }
    let half = rows_for(groups, width as usize, 2);
    (half.min(max_rows as usize) as u16, Density::Half)
}

pub struct HeatMap<'a> {
    pub groups: &'a [HeatGroup],
    pub theme: &'a Theme,
}

impl Widget for HeatMap<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let th = self.theme;
        let (_, density) = layout(self.groups, area.width, area.height);
        let width = area.width as usize;
        let mut y = area.y;
        let bottom = area.y + area.height;
        let mut hidden = 0usize;
        for g in self.groups {
            if y >= bottom {
                hidden += g.states.len();
                continue;
            }
            let mut counts = [0usize; 5];
            for s in &g.states {
                counts[*s as usize] += 1;
            }
            let label = format!(
                "{} ({}){}{}",
                g.label,
                g.states.len(),
                if counts[CellState::Failed as usize] > 0 {
                    format!("  {} failed", counts[CellState::Failed as usize])
                } else {
                    String::new()
                },
                if counts[CellState::Paused as usize] > 0 {
                    format!("  {} paused", counts[CellState::Paused as usize])
                } else {
                    String::new()
                }
            );
            buf.set_stringn(area.x, y, &label, width, th.muted());
            y += 1;
            match density {
                Density::Full => {
                    for (row_i, chunk) in g.states.chunks(width).enumerate() {
                        if y >= bottom {
                            hidden += g.states.len().saturating_sub(row_i * width);
                            break;
                        }
                        for (x, s) in chunk.iter().enumerate() {
                            let idx = row_i * width + x;
                            let mut style = Style::default().fg(th.state_color(*s));
                            let mut glyph = s.glyph();
                            if g.selected == Some(idx) {
                                style = style.bg(th.selected_bg).add_modifier(Modifier::BOLD);
                                glyph = '◆';
                            }
                            if let Some(cell) = buf.cell_mut((area.x + x as u16, y)) {
                                cell.set_char(glyph).set_style(style);
                            }
                        }
                        y += 1;
                    }
                }
                Density::Half => {
                    let per_row = width * 2;
                    for (row_i, chunk) in g.states.chunks(per_row).enumerate() {
                        if y >= bottom {
                            hidden += g.states.len().saturating_sub(row_i * per_row);
                            break;
                        }
                        let (top, low) = chunk.split_at(chunk.len().min(width));
                        for (x, s) in top.iter().enumerate() {
                            let bg = low.get(x).map(|b| th.state_color(*b)).unwrap_or(Color::Reset);
                            if let Some(cell) = buf.cell_mut((area.x + x as u16, y)) {
                                cell.set_char('▀')
                                    .set_style(Style::default().fg(th.state_color(*s)).bg(bg));
                            }
                        }
                        y += 1;
                    }
                }
            }
        }
        if hidden > 0 && area.width > 20 {
            let msg = format!(" +{hidden} nodes not shown ");
            let x = area.x + area.width.saturating_sub(msg.chars().count() as u16);
            buf.set_string(x, bottom - 1, msg, th.warning().add_modifier(Modifier::REVERSED));
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
        assert_eq!(layout(&g, 118, 30), (10, Density::Full));
        assert_eq!(layout(&g, 118, 8), (6, Density::Half));
    }
}
