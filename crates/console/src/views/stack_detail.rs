//! One stack whole (`i` wherever a stack is in context: the stack list, the tree, events,
//! outputs): `openstack stack show` (status and the full reason, times, time in state,
//! parent, timeout, rollback, tags), its parameters, its outputs' keys and descriptions
//! (`O` evaluates them) and its template, in a text view that scrolls. Heat shows a
//! parameter declared `hidden: true` as `******`; it stays hidden here.

use super::{Plan, Screen};
use crate::draw::detail::{self, status_style, when, DetailText};
use crate::keys::{self, KeyAction, KeyContext};
use crate::model::terminal_safe;
use crate::resource_columns::age;
use crate::service::StackOverview;
use crate::state::store::{FetchMeta, Slot, Store};
use crate::state::view::{StackTarget, View, ViewKind};
use crate::state::yank::{pick, Yank};
use crate::state::{App, Level};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;

pub struct Stack<'a> {
    pub stack: &'a StackTarget,
}

/// `i`: the detail of the stack in context.
pub fn open_for_context(app: &mut App) {
    match app.context_stack() {
        Some(stack) => app.push(ViewKind::Stack { stack }),
        None => app.set_status(Level::Warn, "no stack here"),
    }
}

fn slot<'s>(store: &'s Store, id: &str) -> Option<&'s Slot<StackOverview>> {
    store.stack_details.get(id)
}

impl Screen for Stack<'_> {
    /// `y`: the stack id; `Y`: its name.
    fn yank(&self, s: &Store, _: &View, what: Yank) -> Option<(&'static str, String)> {
        let name = slot(s, &self.stack.id)
            .and_then(|s| s.data.as_ref())
            .map(|d| d.summary.stack.name.clone())
            .unwrap_or_else(|| self.stack.label().to_string());
        Some(pick(
            what == Yank::Id,
            ("stack id", &self.stack.id),
            ("stack name", &name),
        ))
    }

    fn title(&self) -> &'static str {
        "Stack"
    }

    fn crumb(&self) -> String {
        format!("stack {}", terminal_safe(self.stack.label()))
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::SERVER_VIEW
    }

    fn offers(&self, action: KeyAction) -> bool {
        super::text_offers(action)
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        slot(store, &self.stack.id).map(|s| &s.meta)
    }

    /// Three requests a look (show, outputs, template), none of which changes often: a
    /// quarter of the refresh pace.
    fn plan(&self, app: &mut App, p: Plan) {
        let stack = self.stack.clone();
        let id = stack.id.clone();
        app.want_slot(
            p.force,
            p.every * 4,
            |s| &mut s.stack_details.entry(id.clone()).or_default().meta,
            |gen| crate::message::Request::Stack { stack, gen },
        );
    }

    fn text_lines(&self, app: &App, width: usize) -> Option<usize> {
        let d = slot(app.store(), &self.stack.id).and_then(|s| s.data.as_ref());
        Some(d.map_or(0, |d| detail_lines(app, d, width).len() + 1))
    }

    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        Some(self.stack.clone())
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let s = slot(app.store(), &self.stack.id);
        let width = area.width.saturating_sub(2) as usize;
        let lines = s
            .and_then(|s| s.data.as_ref())
            .map(|d| detail_lines(app, d, width));
        let title = format!("Stack {}", self.stack.label());
        detail::draw(app, view, &title, lines, s.map(|s| &s.meta), frame, area);
    }
}

/// The detail as lines wrapped to `width`.
fn detail_lines(app: &App, d: &StackOverview, width: usize) -> Vec<Line<'static>> {
    let th = app.theme();
    let plain = Style::default().fg(th.fg);
    let muted = th.muted();
    let s = &d.summary;
    let mut t = DetailText::new(width);
    t.field(
        "Name",
        &s.stack.name,
        plain.add_modifier(Modifier::BOLD),
        muted,
    );
    t.field("ID", &s.stack.id, plain, muted);
    t.field("Status", &s.status.raw, status_style(app, &s.status), muted);
    let reason = s.status_reason.as_deref().filter(|r| !r.is_empty());
    t.field(
        "Reason",
        reason.unwrap_or("-"),
        status_style(app, &s.status),
        muted,
    );
    t.field("Created", &when(app, s.created_at), plain, muted);
    t.field("Updated", &when(app, s.updated_at), plain, muted);
    // A stack's `updated_time` moves when an action starts: the time since is the time in
    // its current state.
    let since = s.updated_at.or(s.created_at);
    t.field("In state", &age(app.now(), since), plain, muted);
    t.field("Parent", s.parent.as_deref().unwrap_or("-"), plain, muted);
    let timeout = d
        .timeout_mins
        .map_or_else(|| "- (Heat's default)".into(), |m| format!("{m} min"));
    t.field("Timeout", &timeout, plain, muted);
    let rollback = match d.disable_rollback {
        Some(true) => "disabled (a failed action leaves the stack as it failed)",
        Some(false) => "enabled (a failed create or update is rolled back)",
        None => "-",
    };
    t.field("Rollback", rollback, plain, muted);
    let tags = if d.tags.is_empty() {
        "-".to_string()
    } else {
        d.tags.join(", ")
    };
    t.field("Tags", &tags, plain, muted);
    if let Some(desc) = d.description.as_deref().filter(|x| !x.is_empty()) {
        t.field("Description", desc, plain, muted);
    }
    t.section(&format!("Parameters ({})", d.parameters.len()), th.title());
    if d.parameters.is_empty() {
        t.block("(none)", muted);
    }
    for (name, value) in &d.parameters {
        t.field(name, value, plain, muted);
    }
    if d.parameters_omitted > 0 {
        let more = format!("… {} more parameters not shown", d.parameters_omitted);
        t.block(&more, muted);
    }
    t.section(
        &format!("Outputs ({}; O evaluates them)", d.outputs.len()),
        th.title(),
    );
    if d.outputs.is_empty() {
        t.block("(none)", muted);
    }
    for o in &d.outputs {
        t.field(&o.key, o.description.as_deref().unwrap_or(""), plain, muted);
    }
    t.section("Template", th.title());
    match d.template.is_empty() {
        true => t.block("(not read)", muted),
        false => t.block(&d.template, plain),
    }
    t.lines
}
