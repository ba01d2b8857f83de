//! One resource of a stack (Enter on a tree resource that is neither a nested stack nor a
//! Nova server, `D` on any tree resource): `openstack stack resource show` with its attributes, then its metadata and
//! its own latest events, newest first. The status reason is shown whole, wrapped: it is the
//! line that says why a resource failed ("Went to status ERROR due to ..."), and a cut
//! reason is what sent operators through four more views. A text view that scrolls.

use super::{Plan, Screen};
use crate::draw::detail::{self, status_style, when, DetailText};
use crate::keys::{self, KeyAction, KeyContext};
use crate::model::terminal_safe;
use crate::resource_columns::age;
use crate::service::ResourceDetail;
use crate::state::store::{FetchMeta, Slot, Store};
use crate::state::view::{StackTarget, View};
use crate::state::yank::Yank;
use crate::state::App;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

pub struct Resource<'a> {
    /// The stack that owns the resource (a member's nested stack for a member's server).
    pub stack: &'a StackTarget,
    pub resource: &'a String,
}

impl Resource<'_> {
    fn key(&self) -> (String, String) {
        (self.stack.id.clone(), self.resource.clone())
    }

    fn slot<'s>(&self, store: &'s Store) -> Option<&'s Slot<ResourceDetail>> {
        store.resources.get(&self.key())
    }
}

impl Screen for Resource<'_> {
    /// `y`: the physical id (what `openstack server show`, `volume show`... take); `Y` the
    /// resource name (what `stack resource show STACK NAME` takes).
    fn yank(&self, s: &Store, _: &View, what: Yank) -> Option<(&'static str, String)> {
        Some(match what {
            Yank::Id => {
                let r = &self.slot(s)?.data.as_ref()?.resource;
                ("physical id", r.physical_id.clone().unwrap_or_default())
            }
            _ => ("resource name", self.resource.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Resource"
    }

    fn crumb(&self) -> String {
        format!("resource {}", terminal_safe(self.resource))
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::SERVER_VIEW
    }

    fn offers(&self, action: KeyAction) -> bool {
        super::text_offers(action)
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        self.slot(store).map(|s| &s.meta)
    }

    /// Three requests a look (show, metadata, events): half the refresh pace.
    fn plan(&self, app: &mut App, p: Plan) {
        let key = self.key();
        let stack = self.stack.clone();
        let resource = self.resource.clone();
        app.want_slot(
            p.force,
            p.every * 2,
            |s| &mut s.resources.entry(key.clone()).or_default().meta,
            |gen| crate::message::Request::Resource {
                stack,
                resource,
                gen,
            },
        );
    }

    fn text_lines(&self, app: &App, width: usize) -> Option<usize> {
        let d = self.slot(app.store()).and_then(|s| s.data.as_ref());
        Some(d.map_or(0, |d| detail_lines(app, d, width).len() + 1))
    }

    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        Some(self.stack.clone())
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let slot = self.slot(app.store());
        let width = area.width.saturating_sub(2) as usize;
        let lines = slot
            .and_then(|s| s.data.as_ref())
            .map(|d| detail_lines(app, d, width));
        let title = format!("Resource {} of {}", self.resource, self.stack.label());
        detail::draw(app, view, &title, lines, slot.map(|s| &s.meta), frame, area);
    }
}

/// The detail as lines wrapped to `width`.
pub fn detail_lines(app: &App, d: &ResourceDetail, width: usize) -> Vec<Line<'static>> {
    let th = app.theme();
    let plain = Style::default().fg(th.fg);
    let muted = th.muted();
    let r = &d.resource;
    let mut t = DetailText::new(width);
    t.field("Name", &r.name, plain.add_modifier(Modifier::BOLD), muted);
    t.field("Type", &r.resource_type, plain, muted);
    let physical = match r.physical_id.as_deref() {
        Some(p) if !p.is_empty() => p.to_string(),
        _ => "- (not created yet, or creating it failed)".into(),
    };
    t.field("Physical id", &physical, plain, muted);
    t.field("Status", &r.status.raw, status_style(app, &r.status), muted);
    let reason = r.status_reason.as_deref().unwrap_or("-");
    t.field("Reason", reason, status_style(app, &r.status), muted);
    t.field("Created", &when(app, d.created_at), plain, muted);
    t.field("Updated", &when(app, r.updated_at), plain, muted);
    // Heat sets `updated_time` when a resource's state changes: the time since is the time
    // in its current state.
    t.field("In state", &age(app.now(), r.updated_at), plain, muted);
    let required_by = if r.required_by.is_empty() {
        "-".to_string()
    } else {
        r.required_by.join(", ")
    };
    t.field("Required by", &required_by, plain, muted);
    if let Some(parent) = &r.parent_resource {
        t.field("Parent", parent, plain, muted);
    }
    t.section(&format!("Attributes ({})", d.attributes.len()), th.title());
    if d.attributes.is_empty() {
        t.block("(none)", muted);
    }
    for (name, value) in &d.attributes {
        t.field(name, value, plain, muted);
    }
    if d.attributes_omitted > 0 {
        t.block(
            &format!("… {} more attributes not shown", d.attributes_omitted),
            muted,
        );
    }
    t.section("Metadata", th.title());
    match d.metadata.is_empty() {
        true => t.block("(none)", muted),
        false => t.block(&d.metadata, plain),
    }
    t.section(
        &format!("Events (latest {}, newest first)", d.events.len()),
        th.title(),
    );
    if d.events.is_empty() {
        t.block("(none)", muted);
    }
    for e in &d.events {
        t.lines.push(Line::from(vec![
            Span::styled(
                format!("   {}  ", e.time.format("%Y-%m-%d %H:%M:%SZ")),
                muted,
            ),
            Span::styled(
                crate::model::terminal_safe(&e.status.raw).into_owned(),
                status_style(app, &e.status),
            ),
        ]));
        if let Some(reason) = e.status_reason.as_deref().filter(|r| !r.is_empty()) {
            t.indented(5, reason, plain);
        }
    }
    t.lines
}
