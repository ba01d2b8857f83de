//! One node's Nova server (`server show` and its console log): a text view that scrolls.

use super::{Plan, Screen};
use crate::draw::panes::message_box;
use crate::draw::wrap::wrap;
use crate::keys::{self, KeyAction, KeyContext};
use crate::model::server::{DeploymentState, ServerDeployments};
use crate::model::{terminal_safe, ConsoleTail, ServerDetail, ServerTarget};
use crate::resource_columns::age;
use crate::state::store::{FetchMeta, Slot, Store};
use crate::state::view::{StackTarget, View};
use crate::state::yank::Yank;
use crate::state::App;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

pub struct Server<'a> {
    pub target: &'a ServerTarget,
}

impl Screen for Server<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, _: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let server_id = s.server_id_of(&self.target.key, self.target.server_id.as_ref());
        Some(match (id, &server_id) {
            (true, Some(server)) => ("server id", server.clone()),
            (true, None) => ("member", self.target.key.member.clone()),
            (false, _) => ("node name", self.target.name.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Server"
    }

    fn crumb(&self) -> String {
        format!("server {}", self.target.name)
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::SERVER_VIEW
    }

    fn offers(&self, action: KeyAction) -> bool {
        super::text_offers(action)
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.servers.get(&self.target.key).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        // Two requests a look (the server, its console log): half the refresh pace.
        app.want_server(self.target.clone(), p.force, p.now, p.every * 2);
    }

    fn text_lines(&self, app: &App, width: usize) -> Option<usize> {
        let slot = app.store().servers.get(&self.target.key);
        Some(line_count(app, slot, width))
    }

    /// The member's own stack, else its node group's.
    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        let id = self
            .target
            .member_stack
            .as_deref()
            .or(self.target.group_stack.as_deref())?;
        Some(app.stack_target(id))
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let slot = app.store().servers.get(&self.target.key);
        draw_detail(app, view, self.target, slot, frame, area);
    }
}

// Drawing: one Nova server as `openstack server show` would show it, then the tail of its
// console log. Everything is text from the cloud, so every piece goes through `terminal_safe`
// (the console log was already cleaned by `model::server::console_lines`); long values (a
// fault's traceback, a console line) wrap under their label instead of being cut.

/// Width of the label column.
const LABEL: usize = 11;

fn draw_detail(
    app: &App,
    view: &View,
    target: &ServerTarget,
    slot: Option<&Slot<ServerDetail>>,
    frame: &mut Frame,
    area: Rect,
) {
    let title = format!("Server of {}", terminal_safe(&target.name));
    let Some(detail) = slot.and_then(|s| s.data.as_ref()) else {
        message_box(app, frame, area, &title, slot.map(|s| &s.meta));
        return;
    };
    let th = app.theme();
    let inner_w = area.width.saturating_sub(2) as usize;
    let inner_h = area.height.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    if let Some(e) = slot.and_then(|s| s.meta.error.as_deref()) {
        for l in wrap(&format!("refresh failed: {}", terminal_safe(e)), inner_w) {
            lines.push(Line::from(Span::styled(l, th.error())));
        }
    }
    lines.extend(detail_lines(app, detail, inner_w));
    let scroll = view.scroll.min(lines.len().saturating_sub(inner_h));
    let more = lines.len().saturating_sub(scroll + inner_h);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(th.border())
        .title(Span::styled(format!(" {title} "), th.title()))
        .title_bottom(Span::styled(
            if more > 0 {
                format!(" {more} more lines ↓ ")
            } else {
                String::new()
            },
            th.muted(),
        ));
    let shown: Vec<Line> = lines.into_iter().skip(scroll).take(inner_h).collect();
    frame.render_widget(Paragraph::new(shown).block(block), area);
}

/// How many lines the detail takes at `width` (for bounding the scroll).
fn line_count(app: &App, slot: Option<&Slot<ServerDetail>>, width: usize) -> usize {
    slot.and_then(|s| s.data.as_ref())
        .map(|d| detail_lines(app, d, width).len() + 1)
        .unwrap_or(0)
}

/// The detail as lines already wrapped to `width`.
fn detail_lines(app: &App, d: &ServerDetail, width: usize) -> Vec<Line<'static>> {
    let th = app.theme();
    let mut out: Vec<Line<'static>> = Vec::new();
    let value_w = width.saturating_sub(LABEL + 1).max(10);
    let field = |out: &mut Vec<Line<'static>>, label: &str, value: &str, style: Style| {
        for (i, l) in value
            .split('\n')
            .flat_map(|part| wrap(part, value_w))
            .enumerate()
        {
            let label = if i == 0 { label } else { "" };
            out.push(Line::from(vec![
                Span::styled(format!(" {label:<w$}", w = LABEL), th.muted()),
                Span::styled(l, style),
            ]));
        }
    };
    let plain = Style::default().fg(th.fg);
    let status_style = match d.status.as_str() {
        "ERROR" => Style::default().fg(th.failed).add_modifier(Modifier::BOLD),
        "ACTIVE" => Style::default().fg(th.complete),
        _ => Style::default().fg(th.in_progress),
    };
    let safe = |s: &str| terminal_safe(s).into_owned();
    field(
        &mut out,
        "Name",
        &safe(&d.name),
        plain.add_modifier(Modifier::BOLD),
    );
    field(&mut out, "ID", &safe(&d.id), plain);
    let mut status = safe(&d.status);
    let facts = [
        ("task", d.task_state.as_deref()),
        ("power", d.power_state.as_deref()),
        ("vm", d.vm_state.as_deref()),
    ];
    for (what, v) in facts {
        status.push_str(&format!("   {what} {}", safe(v.unwrap_or("-"))));
    }
    field(&mut out, "Status", &status, status_style);
    let host = d
        .host
        .as_deref()
        .map(safe)
        .unwrap_or_else(|| "- (not placed, or not shown to this user: admin only)".into());
    field(&mut out, "Host", &host, plain);
    field(
        &mut out,
        "Zone",
        &safe(d.zone.as_deref().unwrap_or("-")),
        plain,
    );
    field(
        &mut out,
        "Flavor",
        &safe(d.flavor.as_deref().unwrap_or("-")),
        plain,
    );
    let image = match (d.image.as_deref(), d.image_name.as_deref()) {
        (Some(id), Some(name)) => format!("{} ({})", safe(name), safe(id)),
        (Some(id), None) => safe(id),
        (None, _) => "- (booted from a volume)".into(),
    };
    field(&mut out, "Image", &image, plain);
    let when = |t: Option<chrono::DateTime<chrono::Utc>>| match t {
        Some(t) => format!(
            "{} ({} ago)",
            t.format("%Y-%m-%d %H:%M:%SZ"),
            age(app.now(), Some(t))
        ),
        None => "-".into(),
    };
    field(&mut out, "Created", &when(d.created), plain);
    field(&mut out, "Updated", &when(d.updated), plain);
    if d.addresses.is_empty() {
        field(&mut out, "Addresses", "none", th.muted());
    }
    for (i, a) in d.addresses.iter().enumerate() {
        let kind = if a.kind.is_empty() {
            String::new()
        } else {
            format!(" ({})", safe(&a.kind))
        };
        let text = format!("{}: {}{kind}", safe(&a.network), safe(&a.addr));
        field(
            &mut out,
            if i == 0 { "Addresses" } else { "" },
            &text,
            plain,
        );
    }
    if let Some(f) = &d.fault {
        let failed = Style::default().fg(th.failed).add_modifier(Modifier::BOLD);
        let code = f.code.map(|c| format!("[{c}] ")).unwrap_or_default();
        field(
            &mut out,
            "Fault",
            &format!("{code}{}", safe(&f.message)),
            failed,
        );
        if let Some(at) = f.created {
            field(&mut out, "", &format!("at {}", when(Some(at))), th.muted());
        }
        if let Some(details) = &f.details {
            // A traceback: its lines kept, each made safe and wrapped.
            let text: Vec<String> = details.lines().map(safe).collect();
            field(&mut out, "Details", &text.join("\n"), plain);
        }
    }
    deployment_lines(app, &d.deployments, width, &mut out);
    out.push(Line::default());
    match &d.console {
        ConsoleTail::Lines(lines) => {
            out.push(Line::from(Span::styled(
                format!(" Console log (last {} lines)", lines.len()),
                th.title(),
            )));
            if lines.is_empty() {
                out.push(Line::from(Span::styled("   (empty)", th.muted())));
            }
            for l in lines {
                for (i, part) in wrap(&safe(l), width.saturating_sub(3).max(10))
                    .into_iter()
                    .enumerate()
                {
                    let lead = if i == 0 { "   " } else { "  ↳" };
                    out.push(Line::from(vec![
                        Span::styled(lead, th.muted()),
                        Span::styled(part, plain),
                    ]));
                }
            }
        }
        ConsoleTail::Unavailable(why) => {
            out.push(Line::from(Span::styled(" Console log", th.title())));
            for l in wrap(&safe(why), width.saturating_sub(3).max(10)) {
                out.push(Line::from(vec![
                    Span::raw("   "),
                    Span::styled(l, th.warning()),
                ]));
            }
        }
    }
    out
}

/// Stderr lines shown under a failed deployment (the rest is in `caldera deployments`).
const STDERR_LINES: usize = 5;

/// The server's software deployments: each one's action and verdict, a failed one's last
/// stderr lines under it.
fn deployment_lines(
    app: &App,
    deployments: &ServerDeployments,
    width: usize,
    out: &mut Vec<Line<'static>>,
) {
    let th = app.theme();
    let safe = |s: &str| terminal_safe(s).into_owned();
    let text_w = width.saturating_sub(5).max(10);
    out.push(Line::default());
    let list = match deployments {
        ServerDeployments::NotRead(why) => {
            out.push(Line::from(Span::styled(
                " Software deployments",
                th.title(),
            )));
            for l in wrap(&safe(why), text_w) {
                out.push(Line::from(vec![
                    Span::raw("   "),
                    Span::styled(l, th.muted()),
                ]));
            }
            return;
        }
        ServerDeployments::Read(list) => list,
    };
    out.push(Line::from(Span::styled(
        format!(" Software deployments ({})", list.len()),
        th.title(),
    )));
    if list.is_empty() {
        out.push(Line::from(Span::styled("   none", th.muted())));
    }
    for dep in list {
        let style = match dep.state {
            DeploymentState::Failed | DeploymentState::Overdue => {
                Style::default().fg(th.failed).add_modifier(Modifier::BOLD)
            }
            DeploymentState::Waiting => Style::default().fg(th.in_progress),
            DeploymentState::Complete => Style::default().fg(th.complete),
            DeploymentState::Unknown => th.muted(),
        };
        let text = format!(
            "{} ({}) {}: {}",
            safe(&dep.name),
            safe(&dep.id),
            safe(&dep.action),
            safe(&dep.verdict)
        );
        for (i, l) in wrap(&text, text_w).into_iter().enumerate() {
            let lead = if i == 0 { "   " } else { "     " };
            out.push(Line::from(vec![Span::raw(lead), Span::styled(l, style)]));
        }
        if dep.state == DeploymentState::Failed {
            let tail = dep.stderr.len().saturating_sub(STDERR_LINES);
            for l in &dep.stderr[tail..] {
                for part in wrap(&safe(l), text_w.saturating_sub(2).max(10)) {
                    out.push(Line::from(vec![
                        Span::styled("     │ ", th.muted()),
                        Span::styled(part, Style::default().fg(th.fg)),
                    ]));
                }
            }
        }
    }
}
