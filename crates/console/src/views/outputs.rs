//! A stack's outputs (`O` from the stack list, the stack tree or anywhere a stack is in
//! context). Heat lists an output's key and description without evaluating anything, so the
//! list is cheap; Enter evaluates the selected output (`GET .../outputs/{key}`), which Heat
//! does by resolving its `get_attr`s and can take seconds on a large stack: the pane below
//! says "resolving…" until the value is there. Values come from templates and resources,
//! so they are bounded in size, their control characters escaped and their lines wrapped.

use super::{Plan, Rows, Screen, Table};
use crate::draw::panes::data_table;
use crate::draw::wrap::wrap;
use crate::model::terminal_safe;
use crate::service::{ResolvedOutput, StackOutput};
use crate::state::store::{FetchMeta, Slot, Store};
use crate::state::view::{StackTarget, View, ViewKind};
use crate::state::yank::Yank;
use crate::state::{App, Level};
use crate::widgets::table::{muted, pane_title, Column, SortKey, TableRow, TableState};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use std::borrow::Cow;
use std::time::Duration;

/// At most this much of a value is shown (an output can be a whole kubeconfig or a list of
/// a thousand addresses); the rest is counted, not drawn.
pub const MAX_VALUE_BYTES: usize = 16 * 1024;

pub struct Outputs<'a> {
    pub stack: &'a StackTarget,
    /// The output whose value is shown.
    pub shown: &'a Option<String>,
}

impl TableRow for StackOutput {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.key)
    }

    fn is_fault(&self) -> bool {
        false
    }
}

static COLUMNS: [Column<StackOutput>; 2] = [
    Column {
        title: "KEY",
        hide_below: 0,
        width: Constraint::Length(32),
        text: |o, _| o.key.clone(),
        sort: |o, _| SortKey::str(&o.key),
        style: |_, ctx| {
            Style::default()
                .fg(ctx.theme.fg)
                .add_modifier(Modifier::BOLD)
        },
    },
    Column {
        title: "DESCRIPTION",
        hide_below: 0,
        width: Constraint::Fill(1),
        text: |o, _| o.description.clone().unwrap_or_default(),
        sort: |o, _| SortKey::opt_str(o.description.as_deref()),
        style: muted,
    },
];

/// `O`: the outputs of the stack in context.
pub fn open_for_context(app: &mut App) {
    match app.context_stack() {
        Some(stack) => app.push(ViewKind::Outputs { stack, shown: None }),
        None => app.set_status(Level::Warn, "no stack here"),
    }
}

fn list_slot<'s>(store: &'s Store, stack_id: &str) -> Option<&'s Slot<Vec<StackOutput>>> {
    store.outputs.get(stack_id)
}

fn value_key(stack: &StackTarget, key: &str) -> (String, String) {
    (stack.id.clone(), key.to_string())
}

impl Screen for Outputs<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, _: Yank) -> Option<(&'static str, String)> {
        // The output's key either way: what `openstack stack output show STACK KEY` takes.
        let o = v
            .table
            .selected(s.outputs.get(&self.stack.id)?.data.as_deref()?)?;
        Some(("output key", o.key.clone()))
    }

    fn title(&self) -> &'static str {
        "Outputs"
    }

    fn crumb(&self) -> String {
        format!("outputs {}", self.stack.label())
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        list_slot(store, &self.stack.id).map(|s| &s.meta)
    }

    /// The list at a quarter of the refresh pace (outputs change with the template only);
    /// the shown value once when opened and again on `r` (each evaluation costs Heat).
    fn plan(&self, app: &mut App, p: Plan) {
        let stack = self.stack.clone();
        let id = stack.id.clone();
        app.want_slot(
            p.force,
            p.every * 4,
            |s| &mut s.outputs.entry(id.clone()).or_default().meta,
            |gen| crate::message::Request::Outputs { stack, gen },
        );
        let Some(key) = self.shown.clone() else {
            return;
        };
        let slot_key = value_key(self.stack, &key);
        let stack = self.stack.clone();
        app.want_slot(
            p.force,
            Duration::MAX,
            |s| &mut s.output_values.entry(slot_key.clone()).or_default().meta,
            |gen| crate::message::Request::Output { stack, key, gen },
        );
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let slot = list_slot(store, &self.stack.id);
        let items = slot.and_then(|s| s.data.as_deref()).unwrap_or(&[]);
        Table::boxed(items, &COLUMNS, slot.map(|s| s.meta.version).unwrap_or(0))
    }

    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        Some(self.stack.clone())
    }

    /// Enter: evaluate the selected output (afresh, when it was shown before).
    fn open(&self, app: &mut App) {
        let items = list_slot(app.store(), &self.stack.id)
            .and_then(|s| s.data.as_deref())
            .unwrap_or(&[]);
        let Some(key) = app.view().table.selected(items).map(|o| o.key.clone()) else {
            return app.set_status(Level::Warn, "no output selected");
        };
        app.store_mut()
            .output_values
            .remove(&value_key(self.stack, &key));
        app.view_mut().kind = ViewKind::Outputs {
            stack: self.stack.clone(),
            shown: Some(key),
        };
        app.plan_refresh(false);
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let slot = list_slot(app.store(), &self.stack.id);
        let title = format!("Outputs of {}", self.stack.label());
        let table_area = match self.shown {
            Some(key) => {
                // The list keeps its rows (borders and header: 3 lines), at most half the
                // body; the value takes the rest.
                let rows = slot.and_then(|s| s.data.as_ref()).map_or(0, Vec::len);
                let list = (rows as u16 + 3).clamp(5, (area.height / 2).max(5));
                let [top, bottom] =
                    Layout::vertical([Constraint::Length(list), Constraint::Fill(1)]).areas(area);
                let value = app.store().output_values.get(&value_key(self.stack, key));
                // The description whole, its line breaks kept (the table's cell holds one
                // line of it).
                let description = slot
                    .and_then(|s| s.data.as_deref())
                    .and_then(|all| all.iter().find(|o| o.key == *key))
                    .and_then(|o| o.description.as_deref());
                draw_value(app, key, description, value, frame, bottom);
                top
            }
            None => area,
        };
        data_table(
            app,
            frame,
            table_area,
            &title,
            slot.and_then(|s| s.data.as_deref()),
            slot.map(|s| &s.meta),
            &COLUMNS,
            &view.table,
            "This stack has no outputs.",
            true,
        );
    }
}

/// The value pane: "resolving…", Heat's error, or the value wrapped to the pane.
fn draw_value(
    app: &App,
    key: &str,
    description: Option<&str>,
    slot: Option<&Slot<ResolvedOutput>>,
    frame: &mut Frame,
    area: Rect,
) {
    let th = app.theme();
    let width = area.width.saturating_sub(2) as usize;
    let height = area.height.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = match description.filter(|d| !d.trim().is_empty()) {
        Some(d) => {
            let mut about = styled(d.trim_end(), width, th.muted());
            about.push(Line::default());
            about
        }
        None => Vec::new(),
    };
    lines.extend(match (slot.and_then(|s| s.data.as_ref()), slot) {
        (Some(out), _) => match &out.error {
            Some(e) => styled(
                &format!("Heat could not resolve it: {e}"),
                width,
                th.error(),
            ),
            None => styled(&out.value, width, Style::default().fg(th.fg)),
        },
        (None, Some(s)) if s.meta.error.is_some() => styled(
            &format!("cannot evaluate: {}", s.meta.error.as_deref().unwrap_or("")),
            width,
            th.error(),
        ),
        _ => vec![Line::from(Span::styled(
            "resolving…",
            Style::default()
                .fg(th.in_progress)
                .add_modifier(Modifier::ITALIC),
        ))],
    });
    let more = lines.len().saturating_sub(height);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(th.border())
        .title(pane_title(
            Span::styled(format!(" Value of {} ", terminal_safe(key)), th.title()),
            area.width,
        ))
        .title_bottom(Span::styled(
            if more > 0 {
                format!(" {more} more lines ")
            } else {
                String::new()
            },
            th.muted(),
        ));
    let shown: Vec<Line> = lines.into_iter().take(height).collect();
    frame.render_widget(Paragraph::new(shown).block(block), area);
}

/// `text` cut to [`MAX_VALUE_BYTES`], each line made terminal-safe and wrapped to `width`.
fn styled(text: &str, width: usize, style: Style) -> Vec<Line<'static>> {
    value_lines(text, width)
        .into_iter()
        .map(|l| Line::from(Span::styled(l, style)))
        .collect()
}

/// The lines a value takes at `width`: bounded, escaped, wrapped, never a control character.
pub fn value_lines(text: &str, width: usize) -> Vec<String> {
    let mut cut = text.len().min(MAX_VALUE_BYTES);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out: Vec<String> = text[..cut]
        .split('\n')
        .flat_map(|line| wrap(&terminal_safe(line), width))
        .collect();
    if cut < text.len() {
        out.push(format!("… {} more bytes not shown", text.len() - cut));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::text::is_unsafe_char;

    #[test]
    fn values_are_bounded_escaped_and_wrapped() {
        let lines = value_lines("a\u{1b}[2Jb\r\nsecond line is long", 8);
        assert_eq!(lines, ["a\\e[2Jb\\", "r", "second", "line is", "long"]);
        assert!(lines.iter().all(|l| !l.chars().any(is_unsafe_char)));
        let big = "é".repeat(MAX_VALUE_BYTES);
        let lines = value_lines(&big, 80);
        let last = lines.last().map(String::as_str).unwrap_or_default();
        assert_eq!(last, format!("… {} more bytes not shown", MAX_VALUE_BYTES));
        assert!(lines.len() < MAX_VALUE_BYTES / 80 + 3);
    }
}
