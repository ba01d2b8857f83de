//! One event of a tail, whole (Enter in the event tail): its time absolute and relative,
//! the resource and its path from the root stack, the status and the FULL reason wrapped
//! (the tail's REASON column cuts it), the physical id and Heat's event id. It needs no
//! request: the event is the one the tail holds. Enter goes on to the event's resource in
//! its stack's tree, where Enter used to go straight from the tail.

use super::{Plan, Screen};
use crate::draw::detail::{self, status_style, when, DetailText};
use crate::keys::{self, KeyAction, KeyContext};
use crate::model::terminal_safe;
use crate::model::StackEvent;
use crate::state::store::{FetchMeta, Store};
use crate::state::view::{StackTarget, View, ViewKind};
use crate::state::yank::{pick, Yank};
use crate::state::App;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::Frame;

pub struct Event<'a> {
    /// The stack whose tail the event was opened from (the root of its path).
    pub stack: &'a StackTarget,
    pub event: &'a StackEvent,
}

impl Event<'_> {
    /// The stack that emitted the event (a nested stack for a member's resource).
    fn owner(&self) -> StackTarget {
        self.event
            .stack
            .as_ref()
            .map_or_else(|| self.stack.clone(), StackTarget::from_ref)
    }
}

impl Screen for Event<'_> {
    /// `y`: the event id; `Y`: the resource name.
    fn yank(&self, _: &Store, _: &View, what: Yank) -> Option<(&'static str, String)> {
        let e = self.event;
        Some(pick(
            what == Yank::Id,
            ("event id", &e.id),
            ("resource name", &e.resource_name),
        ))
    }

    fn title(&self) -> &'static str {
        "Event"
    }

    fn crumb(&self) -> String {
        format!("event {}", terminal_safe(&self.event.resource_name))
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::SERVER_VIEW
    }

    /// Text that scrolls; Enter opens the resource in the tree; nothing to mark or sort.
    /// Text, but Enter opens the event's resource in its stack's tree.
    fn offers(&self, action: KeyAction) -> bool {
        action == KeyAction::Open || super::text_offers(action)
    }

    /// The tail's data: its age and error are the event's.
    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.events.get(&self.stack.id).map(|l| &l.meta)
    }

    /// Nothing to fetch: the event is already here.
    fn plan(&self, _app: &mut App, _p: Plan) {}

    fn text_lines(&self, app: &App, width: usize) -> Option<usize> {
        Some(detail_lines(app, self.event, resource_type(app, self), width).len())
    }

    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        Some(self.owner())
    }

    /// Enter: the event's resource, selected in its stack's tree.
    fn open(&self, app: &mut App) {
        app.push(ViewKind::Tree {
            stack: self.owner(),
            focus: Some(self.event.resource_name.clone()),
        });
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let width = area.width.saturating_sub(2) as usize;
        let lines = detail_lines(app, self.event, resource_type(app, self), width);
        let title = format!("Event of {}", self.event.display_path());
        let meta = self.meta(app.store());
        detail::draw(app, view, &title, Some(lines), meta, frame, area);
    }
}

/// The resource's type when a tree already read holds it (events do not carry it).
fn resource_type(app: &App, e: &Event) -> Option<String> {
    let owner = e.owner();
    let found = [&owner.id, &e.stack.id]
        .into_iter()
        .filter_map(|id| app.store().trees.get(id)?.data.as_ref())
        .flat_map(|t| t.rows.iter())
        .find(|r| {
            r.resource.name == e.event.resource_name
                && r.resource.owner.as_ref().is_none_or(|o| o.id == owner.id)
        })
        .map(|r| r.resource.resource_type.clone());
    found
}

/// The event as lines wrapped to `width`.
fn detail_lines(
    app: &App,
    e: &StackEvent,
    resource_type: Option<String>,
    width: usize,
) -> Vec<Line<'static>> {
    let th = app.theme();
    let plain = Style::default().fg(th.fg);
    let muted = th.muted();
    let mut t = DetailText::new(width);
    t.field("Time", &when(app, Some(e.time)), plain, muted);
    t.field(
        "Resource",
        &e.resource_name,
        plain.add_modifier(Modifier::BOLD),
        muted,
    );
    t.field("Path", &e.display_path(), plain, muted);
    if let Some(s) = &e.stack {
        t.field("Stack", &format!("{} ({})", s.name, s.id), plain, muted);
    }
    let kind = resource_type.unwrap_or_else(|| "- (not in a tree read yet)".into());
    t.field("Type", &kind, plain, muted);
    t.field("Status", &e.status.raw, status_style(app, &e.status), muted);
    let reason = e.status_reason.as_deref().filter(|r| !r.is_empty());
    t.field(
        "Reason",
        reason.unwrap_or("-"),
        status_style(app, &e.status),
        muted,
    );
    let physical = e.physical_id.as_deref().filter(|p| !p.is_empty());
    t.field("Physical id", physical.unwrap_or("-"), plain, muted);
    t.field("Event id", &e.id, plain, muted);
    t.lines
}
