//! Drawing: a pure function of the app state. Layout: header, breadcrumbs, the view,
//! the status / input line and the key hints; help and palette overlays on top.
//!
//! Each view draws itself (`Screen::draw`, in its module under `views/`); this module holds
//! the frame around the views (`chrome`, the action dialogs in `dialog`) and only the parts
//! several views share: the table panes and loading / error boxes (`panes`), the detail
//! views' text (`detail`), an event tail's lines (`tail`), a node group's summary and heat
//! map cells (`node_summary`) and wrapping (`text`). A view never imports another view's
//! drawing: what two views show alike moves here.

mod chrome;
pub(super) mod detail;
mod dialog;
pub(super) mod node_summary;
pub(super) mod panes;
pub(super) mod tail;
pub(super) mod wrap;

use super::state::{App, Mode};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::{Block, Clear};
use ratatui::Frame;

impl App {
    /// Draw the whole screen. Takes `&self`: drawing cannot change the state.
    pub fn draw(&self, frame: &mut Frame) {
        self.draw_views(frame);
        backstop(frame.buffer_mut());
    }

    /// [`App::draw`] without the last-line [`backstop`]: tests draw with it to prove that
    /// every view escapes outside text itself.
    pub fn draw_views(&self, frame: &mut Frame) {
        let area = frame.area();
        frame.render_widget(Block::default().style(self.theme().style()), area);
        let [header, crumbs, body, status, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
        chrome::header(self, frame, header);
        chrome::breadcrumbs(self, frame, crumbs);
        self.draw_body(frame, body);
        chrome::status_line(self, frame, status);
        chrome::footer(self, frame, footer);
        match self.mode() {
            Mode::Help(scroll) => chrome::help(self, frame, body, *scroll),
            Mode::Input(input) if input.kind == super::state::input::InputKind::Palette => {
                chrome::palette_popup(self, input, frame, body)
            }
            Mode::Dialog(d) => dialog::draw(self, d, frame, body),
            _ => {}
        }
    }

    fn draw_body(&self, frame: &mut Frame, area: Rect) {
        let view = self.view();
        self.screen_of(&view.kind).draw(self, view, frame, area);
    }
}

/// The last line of defence against text that drives the terminal: every view passes
/// outside text through [`terminal_safe`](crate::model::terminal_safe) (visible escapes);
/// should one forget, no cell still holding a control character or bidi override reaches
/// the terminal (ratatui writes a cell's symbol as it is). Such characters are dropped
/// from the cell, an emptied cell shows U+FFFD, and the log says once that a view missed.
/// Returns how many cells it had to fix (0 when every view did its job).
pub fn backstop(buf: &mut ratatui::buffer::Buffer) -> usize {
    use crate::model::text::is_unsafe_char;
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let mut fixed = 0;
    for cell in buf.content.iter_mut() {
        let symbol = cell.symbol();
        if !symbol.chars().any(is_unsafe_char) {
            continue;
        }
        let kept: String = symbol.chars().filter(|c| !is_unsafe_char(*c)).collect();
        cell.set_symbol(if kept.is_empty() { "\u{fffd}" } else { &kept });
        fixed += 1;
    }
    if fixed > 0 && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!("a view drew {fixed} cell(s) with control characters (neutralized)");
    }
    fixed
}

/// A rectangle centred in `area`, at most `w` x `h`.
pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

pub(crate) fn clear(frame: &mut Frame, area: Rect) {
    frame.render_widget(Clear, area);
}
