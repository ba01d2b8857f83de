//! A stack's resource tree with the why-stuck analysis: Enter opens a nested stack, a
//! server resource's Nova server, or any other resource's detail (`views::resource_detail`). `D`
//! (k9s's describe) opens the detail of any resource, the ones Enter drills through
//! included: a ResourceGroup's or a member's `resource show` says why Heat failed it, which
//! the nested stack's own status does not always repeat.

use super::{Plan, Rows, Screen, Table};
use crate::cell_text::first_line;
use crate::draw::panes::{data_table, message_box};
use crate::keys::{self, KeyAction, KeyContext};
use crate::model::{terminal_safe, NodeKey, ServerTarget, StackResource};
use crate::ops::node_tree::is_nova_server_type;
use crate::ops::stuck::{nova_summary, Cause, HookHold};
use crate::resource_columns::{age, short_duration};
use crate::state::store::{tree_server_key, FetchMeta, Store, TreeData, TreeRow, TREE_SERVERS};
use crate::state::view::{StackTarget, View, ViewKind};
use crate::state::yank::Yank;
use crate::state::{App, Level};
use crate::widgets::table::cut_line_marked;
use crate::widgets::table::{TableRow, TableState};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

pub struct Tree<'a> {
    pub stack: &'a StackTarget,
    /// A resource to select once the tree is there (opened from an event).
    pub focus: &'a Option<String>,
}

fn rows<'s>(store: &'s Store, stack_id: &str) -> &'s [TreeRow] {
    store
        .trees
        .get(stack_id)
        .and_then(|s| s.data.as_ref())
        .map(|t| t.rows.as_slice())
        .unwrap_or(&[])
}

impl Tree<'_> {
    /// A server resource that Nova created (it has a physical id): its detail's target.
    fn server_of(&self, r: &StackResource) -> Option<ServerTarget> {
        if !is_nova_server_type(&r.resource_type) {
            return None;
        }
        Some(ServerTarget {
            key: NodeKey {
                nodegroup: r
                    .owner
                    .as_ref()
                    .map_or(self.stack.id.clone(), |o| o.id.clone()),
                member: r.name.clone(),
            },
            name: r.name.clone(),
            server_id: Some(r.physical_id.clone().filter(|p| !p.is_empty())?),
            member_stack: r.owner.as_ref().map(|o| o.id.clone()),
            group_stack: None,
        })
    }

    /// The detail of resource `r`, asked of the stack that owns it (a member's nested
    /// stack for a row of a nested stack shown inline).
    fn resource_view(&self, r: &StackResource) -> ViewKind {
        ViewKind::Resource {
            stack: r
                .owner
                .as_ref()
                .map_or_else(|| self.stack.clone(), StackTarget::from_ref),
            resource: r.name.clone(),
        }
    }

    /// Moves the selection to the row of the why-stuck line after the selected one, in the
    /// panel's order (failures, then each hold's first member, then work in progress),
    /// round to the first.
    fn next_cause(&self, app: &mut App) {
        let Some(tree) = app
            .store()
            .trees
            .get(&self.stack.id)
            .and_then(|s| s.data.as_ref())
        else {
            return app.set_status(Level::Info, "the tree is not read yet");
        };
        let order = cause_rows(tree);
        if order.is_empty() {
            return app.set_status(Level::Info, "nothing in progress, failed or held");
        }
        let at = app.view().table.selected_id().map(str::to_string);
        let now = at.and_then(|id| order.iter().position(|&i| tree.rows[i].path == id));
        let next = order[now.map_or(0, |p| (p + 1) % order.len())];
        let id = tree.rows[next].row_id().into_owned();
        let rows = tree.rows.clone();
        app.view_mut().table.select_id(&id, &rows);
    }

    fn selected<'s>(&self, app: &'s App) -> Option<&'s StackResource> {
        app.view()
            .table
            .selected(rows(app.store(), &self.stack.id))
            .map(|r| &r.resource)
    }
}

impl Screen for Tree<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let rows = &s.trees.get(&self.stack.id)?.data.as_ref()?.rows;
        let r = &v.table.selected(rows)?.resource;
        // A resource Heat has not created yet has no physical id: the status line says it
        // is empty rather than copying something else.
        Some(match id {
            true => ("physical id", r.physical_id.clone().unwrap_or_default()),
            false => ("resource name", r.name.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Stack tree"
    }

    fn crumb(&self) -> String {
        self.stack.label().to_string()
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::TREE_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.trees.get(&self.stack.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_tree(self.stack.clone(), p.force, p.now, p.every, p.paused);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let version = store
            .trees
            .get(&self.stack.id)
            .map(|s| s.meta.version)
            .unwrap_or(0);
        Table::boxed(
            rows(store, &self.stack.id),
            &crate::resource_columns::TREE_COLUMNS,
            version,
        )
    }

    fn after_sync(&self, view: &mut View, table: &dyn Rows, store: &Store) {
        let Some(f) = self.focus else {
            return;
        };
        if let Some(r) = rows(store, &self.stack.id)
            .iter()
            .find(|r| &r.resource.name == f)
        {
            table.select_id(&mut view.table, &r.row_id());
            view.kind = ViewKind::Tree {
                stack: self.stack.clone(),
                focus: None,
            };
        }
    }

    fn context_stack(&self, _app: &App) -> Option<StackTarget> {
        Some(self.stack.clone())
    }

    /// `D`: the selected resource's own detail, whatever Enter would open. `n`: the row of
    /// the next why-stuck line.
    fn own_key(&self, app: &mut App, action: KeyAction) -> bool {
        match action {
            KeyAction::Describe => match self.selected(app).map(|r| self.resource_view(r)) {
                Some(kind) => app.push(kind),
                None => app.set_status(Level::Info, "no resource selected"),
            },
            KeyAction::NextCause => self.next_cause(app),
            _ => return false,
        }
        true
    }

    fn open(&self, app: &mut App) {
        let selected = self.selected(app);
        let server = selected.and_then(|r| self.server_of(r));
        match (selected.and_then(|r| r.nested.clone()), server) {
            (Some(nested), _) => app.push(ViewKind::Tree {
                stack: StackTarget::from_ref(&nested),
                focus: None,
            }),
            (None, Some(target)) => app.push(ViewKind::Server { target }),
            (None, None) => match selected {
                // Any other resource: its own detail, asked of the stack that owns it.
                Some(r) => app.push(self.resource_view(r)),
                None => app.set_status(Level::Info, "no resource selected"),
            },
        }
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        draw_tree(app, view, self.stack, app.store(), frame, area);
    }
}

// Drawing: the table above the "why is it stuck" panel. The panel reads
// [`crate::ops::stuck::Assessment`]: members Heat holds on a hook first (not a fault: a
// rollout, or an operator, must clear the hook), then failed resources, then work in progress
// compared with how long its siblings took, with Nova's word on a server.

/// `3 members of nodes held on pre-update hook since 12:01:07 (20m): 1, 3, 5`, with how many
/// of them are inferred (their pause events purged) when any are.
fn hold_line<'a>(app: &App, tree: &TreeData, h: &HookHold) -> Line<'a> {
    let th = app.theme();
    let names: Vec<&str> = h
        .members
        .iter()
        .filter_map(|&i| tree.rows.get(i))
        .map(|r| r.resource.name.as_str())
        .collect();
    let since = h.since_phrase(app.now(), short_duration);
    let text = h.describe(&names, &since);
    Line::from(vec![
        Span::styled(" ‖ ", Style::default().fg(th.paused)),
        Span::styled(
            terminal_safe(&text).into_owned(),
            Style::default().fg(th.paused),
        ),
    ])
}

/// `stalled 20m; siblings took 36-50 s (median 42 s)`, or for a failure
/// `UPDATE_FAILED 8m ago`.
fn cause_state(app: &App, tree: &TreeData, c: &Cause) -> (String, bool) {
    let res = &tree.rows[c.index].resource;
    if res.status.is_failed() {
        return (
            format!("  {} {} ago", res.status.raw, age(app.now(), c.since)),
            false,
        );
    }
    let stalled = c.is_stalled_at(app.now());
    let word = if stalled { "stalled" } else { "in progress" };
    let mut text = format!("  {word} {}", age(app.now(), c.since));
    text.push_str(&c.siblings_phrase(&tree.rows[c.compared].resource.name));
    (text, stalled)
}

/// One cause, and Nova's word on it when it is a server that Nova faults.
fn cause_lines<'a>(
    app: &App,
    store: &Store,
    stack_id: &str,
    tree: &TreeData,
    c: &Cause,
) -> Vec<Line<'a>> {
    let th = app.theme();
    let r = &tree.rows[c.index];
    let (state, stalled) = cause_state(app, tree, c);
    let (mark, style) = if r.resource.status.is_failed() {
        (
            "✖",
            Style::default().fg(th.failed).add_modifier(Modifier::BOLD),
        )
    } else if stalled {
        (
            "●",
            Style::default()
                .fg(th.in_progress)
                .add_modifier(Modifier::BOLD),
        )
    } else {
        ("●", Style::default().fg(th.in_progress))
    };
    let mut spans = vec![
        Span::styled(format!(" {mark} "), style),
        Span::styled(
            terminal_safe(&r.path).into_owned(),
            Style::default().fg(th.fg).add_modifier(Modifier::BOLD),
        ),
        Span::styled(terminal_safe(&state).into_owned(), style),
    ];
    if let Some(reason) = r.resource.status_reason.as_deref() {
        spans.push(Span::styled(
            format!(" — {}", first_line(Some(reason))),
            th.muted(),
        ));
    }
    let mut lines = vec![Line::from(spans)];
    let nova = store
        .servers
        .get(&tree_server_key(stack_id, &r.path))
        .and_then(|slot| slot.data.as_ref())
        .and_then(nova_summary);
    if let Some(text) = nova {
        lines.push(Line::from(Span::styled(
            format!("   └ {}", terminal_safe(&text)),
            Style::default().fg(th.failed),
        )));
    }
    lines
}

/// Hooks the stack's environment keeps with no update running, one line each: they stop
/// its next update, whoever starts it, so they come before anything else.
fn leftover_lines<'a>(app: &App, stack_name: &str, tree: &TreeData) -> Vec<Line<'a>> {
    let th = app.theme();
    tree.leftover_hooks
        .iter()
        .flat_map(|l| {
            [
                Line::from(Span::styled(
                    format!("⚠ {}", terminal_safe(&l.short())),
                    Style::default().fg(th.failed),
                )),
                Line::from(Span::styled(
                    format!("  {}", terminal_safe(&l.remedy(stack_name))),
                    th.muted(),
                )),
            ]
        })
        .collect()
}

/// The rows the why-stuck lines name, in the panel's order: failures, each hold's first
/// member, work in progress.
fn cause_rows(tree: &TreeData) -> Vec<usize> {
    let a = &tree.stuck;
    let failed = |c: &&Cause| tree.rows[c.index].resource.status.is_failed();
    a.causes
        .iter()
        .filter(failed)
        .map(|c| c.index)
        .chain(a.holds.iter().filter_map(|h| h.members.first().copied()))
        .chain(a.causes.iter().filter(|c| !failed(c)).map(|c| c.index))
        .filter(|&i| i < tree.rows.len())
        .collect()
}

/// The why-stuck lines, at most `max` (the last says how many more): failures first, then
/// the members held on hooks, then work in progress.
fn stuck_lines<'a>(
    app: &App,
    store: &Store,
    stack_id: &str,
    tree: &TreeData,
    max: usize,
) -> Vec<Line<'a>> {
    let th = app.theme();
    let a = &tree.stuck;
    if a.causes.is_empty() && a.holds.is_empty() {
        return vec![Line::from(Span::styled(
            "Nothing in progress or failed.",
            Style::default().fg(th.complete),
        ))];
    }
    let failed = |c: &&Cause| tree.rows[c.index].resource.status.is_failed();
    let blocks = a
        .causes
        .iter()
        .filter(failed)
        .map(|c| (true, cause_lines(app, store, stack_id, tree, c)))
        .chain(
            a.holds
                .iter()
                .map(|h| (false, vec![hold_line(app, tree, h)])),
        )
        .chain(
            a.causes
                .iter()
                .filter(|c| !failed(c))
                .map(|c| (true, cause_lines(app, store, stack_id, tree, c))),
        );
    let mut lines: Vec<Line> = Vec::new();
    let mut shown = 0;
    for (is_cause, block) in blocks {
        // Keep a line for "… and N more" unless every cause fits.
        let left = a.causes.len() - shown - usize::from(is_cause);
        if lines.len() + block.len() + usize::from(left > 0) > max {
            break;
        }
        lines.extend(block);
        shown += usize::from(is_cause);
    }
    if shown < a.causes.len() {
        lines.push(Line::from(Span::styled(
            format!("   … and {} more", a.causes.len() - shown),
            th.muted(),
        )));
    }
    lines
}

/// ` Why stuck: 5 failed, 2 in progress, 555 held on hooks `.
fn panel_title(tree: &TreeData) -> String {
    let a = &tree.stuck;
    let failed = a
        .causes
        .iter()
        .filter(|c| tree.rows[c.index].resource.status.is_failed())
        .count();
    let active = a.causes.len() - failed;
    let held = a.held.len();
    format!(" Why stuck: {failed} failed, {active} in progress, {held} held on hooks ")
}

/// `store` holds the tree and the Nova servers of its first causes.
fn draw_tree(
    app: &App,
    view: &View,
    stack: &StackTarget,
    store: &Store,
    frame: &mut Frame,
    area: Rect,
) {
    let slot = store.trees.get(&stack.id);
    let title = format!("Resources of {}", terminal_safe(stack.label()));
    let Some(tree) = slot.and_then(|s| s.data.as_ref()) else {
        message_box(app, frame, area, &title, slot.map(|s| &s.meta));
        return;
    };
    let th = app.theme();
    let a = &tree.stuck;
    // A line per hold and per cause, and one for Nova's word on each of the first causes.
    let nova = a.causes.len().min(TREE_SERVERS);
    // Two lines per hook left in the environment, shown first (they stop the next update).
    let left = 2 * tree.leftover_hooks.len().min(3);
    let body = (a.holds.len() + a.causes.len() + nova).min(10);
    let want = (left + body.max(usize::from(left > 0))) as u16 + 2;
    let stuck_h = want.min(area.height / 2).max(3);
    let [top, bottom] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(stuck_h)]).areas(area);
    data_table(
        app,
        frame,
        top,
        &title,
        Some(&tree.rows),
        slot.map(|s| &s.meta),
        &crate::resource_columns::TREE_COLUMNS,
        &view.table,
        "This stack has no resources.",
        true,
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(th.border())
        .title(Span::styled(panel_title(tree), th.title()));
    let mut lines = leftover_lines(app, stack.name.as_deref().unwrap_or(&stack.id), tree);
    let room = (stuck_h.saturating_sub(2) as usize).saturating_sub(lines.len());
    lines.extend(stuck_lines(app, store, &stack.id, tree, room));
    let inner = usize::from(bottom.width.saturating_sub(2));
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| cut_line_marked(l, inner))
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), bottom);
}
