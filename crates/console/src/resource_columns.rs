//! The columns of every table (title, width, text, sort key, style) and the row
//! identities. Filtering searches the same texts that are shown.

use super::cell_text::{event_path, first_line};
use super::state::store::{NodeRow, TreeRow};
use super::theme::CellState;
use super::widgets::table::{muted, plain, Column, RowCtx, SortKey, TableRow};
use crate::model::{state_since, Cluster, Health, NodeGroup, StackEvent, StackSummary, Status};
use chrono::{DateTime, Utc};
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style};
use std::borrow::Cow;
use std::sync::LazyLock;

// Every table's columns, built once and shared by the views (rows, sort, filter) and the
// drawing (titles, widths, cells).
pub static CLUSTER_COLUMNS: LazyLock<Vec<Column<Cluster>>> = LazyLock::new(cluster_columns);
pub static NODEGROUP_COLUMNS: LazyLock<Vec<Column<NodeGroup>>> = LazyLock::new(nodegroup_columns);
pub static NODE_COLUMNS: LazyLock<Vec<Column<NodeRow>>> = LazyLock::new(node_columns);
pub static STACK_COLUMNS: LazyLock<Vec<Column<StackSummary>>> = LazyLock::new(stack_columns);
pub static EVENT_COLUMNS: LazyLock<Vec<Column<StackEvent>>> = LazyLock::new(event_columns);
pub static TREE_COLUMNS: LazyLock<Vec<Column<TreeRow>>> = LazyLock::new(tree_columns);

/// How long a changed row stays highlighted.
pub const FLASH_SECS: i64 = 4;

pub use crate::model::short_duration;

/// Age of `t` at `now`, or `-`.
pub fn age(now: DateTime<Utc>, t: Option<DateTime<Utc>>) -> String {
    t.map(|t| short_duration((now - t).num_seconds()))
        .unwrap_or_else(|| "-".into())
}

fn ts(t: Option<DateTime<Utc>>) -> SortKey {
    SortKey::opt_int(t.map(|t| t.timestamp()))
}

/// Since when a cluster or node group `id` has been in its state: the model's (the core's
/// rule, applied when the lists came: an upgrade's age survives a scale), else Magnum's record.
fn in_state_of(
    id: &str,
    created_at: Option<DateTime<Utc>>,
    updated_at: Option<DateTime<Utc>>,
    ctx: &RowCtx,
) -> Option<DateTime<Utc>> {
    match ctx.models.and_then(|m| m.in_state(id)) {
        Some(s) => s.since,
        None => state_since(created_at, updated_at),
    }
}

/// Time in state as a number that grows with the time: ascending puts the shortest first
/// (`45s`, `12m`, `3h`), not the text order; an unknown `since` sorts as no value.
pub(crate) fn in_state_key(since: Option<DateTime<Utc>>) -> SortKey {
    SortKey::opt_int(since.map(|t| -t.timestamp()))
}

pub fn status_style(s: &Status, ctx: &RowCtx) -> Style {
    ctx.theme.status_style(s.state)
}

/// A node's HOOK cell: its phase in its group's progress model (`held`), as core words it.
fn hook_text(r: &NodeRow, ctx: &RowCtx) -> String {
    let phase = ctx
        .models
        .and_then(|m| m.phase(&r.node.key.nodegroup, &r.node.key.member));
    crate::progress::hook_cell(phase, r.node.hook_inferred)
}

/// Heat map / colour state of a node.
pub fn node_state(r: &NodeRow) -> CellState {
    let n = &r.node;
    if n.status.is_failed() {
        CellState::Failed
    } else if n.hook_paused {
        CellState::Paused
    } else if n.status.is_in_progress() {
        CellState::InProgress
    } else if n.status.is_complete() {
        CellState::Complete
    } else {
        CellState::Unknown
    }
}

// ---------------------------------------------------------------- clusters

impl TableRow for Cluster {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.id)
    }
    fn is_fault(&self) -> bool {
        self.status.is_failed() || self.health == Health::Unhealthy
    }
}

pub fn cluster_columns() -> Vec<Column<Cluster>> {
    vec![
        Column {
            title: "NAME",
            hide_below: 0,
            width: Constraint::Min(12),
            text: |c, _| c.name.clone(),
            sort: |c, _| SortKey::str(&c.name),
            style: |c, ctx| status_style(&c.status, ctx).add_modifier(Modifier::BOLD),
        },
        Column {
            title: "STATUS",
            hide_below: 0,
            width: Constraint::Length(20),
            text: |c, _| c.status.raw.clone(),
            sort: |c, _| SortKey::str(&c.status.raw),
            style: |c, ctx| status_style(&c.status, ctx),
        },
        // Time in state, as Magnum and Heat can tell it: since the record last changed (its
        // `updated_at`; `created_at` when never updated). A stuck create and a busy one differ
        // here by hours.
        Column {
            title: "IN STATE",
            hide_below: 0,
            width: Constraint::Length(8),
            text: |c, ctx| age(ctx.now, in_state_of(&c.id, c.created_at, c.updated_at, ctx)),
            sort: |c, ctx| in_state_key(in_state_of(&c.id, c.created_at, c.updated_at, ctx)),
            style: plain,
        },
        Column {
            title: "HEALTH",
            hide_below: 0,
            width: Constraint::Length(9),
            text: |c, _| c.health.as_str().to_string(),
            sort: |c, _| SortKey::str(c.health.as_str()),
            style: |c, ctx| ctx.theme.health_style(c.health),
        },
        Column {
            title: "M/W",
            hide_below: 0,
            width: Constraint::Length(9),
            text: |c, _| format!("{}/{}", c.master_count, c.node_count),
            sort: |c, _| SortKey::Int(c.node_count as i64 + c.master_count as i64),
            style: plain,
        },
        Column {
            title: "NGS",
            hide_below: 90,
            width: Constraint::Length(4),
            text: |c, _| {
                c.nodegroup_count
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "-".into())
            },
            sort: |c, _| SortKey::opt_int(c.nodegroup_count.map(i64::from)),
            style: plain,
        },
        Column {
            title: "AGE",
            hide_below: 0,
            width: Constraint::Length(5),
            text: |c, ctx| age(ctx.now, c.created_at),
            sort: |c, _| ts(c.created_at),
            style: muted,
        },
        Column {
            title: "REASON",
            hide_below: 0,
            width: Constraint::Fill(3),
            text: |c, _| first_line(c.status_reason.as_deref()),
            sort: |c, _| SortKey::opt_str(c.status_reason.as_deref()),
            style: |c, ctx| {
                if c.status.is_failed() {
                    Style::default().fg(ctx.theme.failed)
                } else {
                    ctx.theme.muted()
                }
            },
        },
    ]
}

// ---------------------------------------------------------------- node groups

impl TableRow for NodeGroup {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.id)
    }
    fn is_fault(&self) -> bool {
        self.status.is_failed()
    }
}

pub fn nodegroup_columns() -> Vec<Column<NodeGroup>> {
    vec![
        Column {
            title: "NAME",
            hide_below: 0,
            width: Constraint::Min(14),
            text: |g, _| g.name.clone(),
            sort: |g, _| SortKey::str(&g.name),
            style: |g, ctx| status_style(&g.status, ctx).add_modifier(Modifier::BOLD),
        },
        Column {
            title: "ROLE",
            // Narrow, an update's progress matters more (the nodes pane names the role).
            hide_below: 100,
            width: Constraint::Length(6),
            text: |g, _| g.role.as_str().to_string(),
            sort: |g, _| SortKey::str(g.role.as_str()),
            style: plain,
        },
        Column {
            title: "NODES",
            hide_below: 0,
            // "1000 (100-1500)" whole.
            width: Constraint::Length(15),
            text: |g, _| match (g.min_node_count, g.max_node_count) {
                (Some(a), Some(b)) => format!("{} ({a}-{b})", g.node_count),
                (Some(a), None) => format!("{} ({a}-)", g.node_count),
                _ => g.node_count.to_string(),
            },
            sort: |g, _| SortKey::Int(g.node_count as i64),
            style: plain,
        },
        Column {
            title: "STATUS",
            hide_below: 0,
            width: Constraint::Length(20),
            text: |g, _| g.status.raw.clone(),
            sort: |g, _| SortKey::str(&g.status.raw),
            style: |g, ctx| status_style(&g.status, ctx),
        },
        // A group resizing for 3 minutes is busy; for 3 hours, stuck (see `state_since`).
        Column {
            title: "IN STATE",
            hide_below: 0,
            width: Constraint::Length(8),
            text: |g, ctx| age(ctx.now, in_state_of(&g.id, g.created_at, g.updated_at, ctx)),
            sort: |g, ctx| in_state_key(in_state_of(&g.id, g.created_at, g.updated_at, ctx)),
            style: plain,
        },
        // The group's update as the progress model says (the nodes pane's and the dashboard's
        // figures): state, counts by phase, pace and ETA while members move.
        Column {
            title: "PROGRESS",
            hide_below: 0,
            width: Constraint::Fill(12),
            text: |g, ctx| {
                ctx.models
                    .and_then(|m| m.progress(&g.id))
                    .map(|p| p.row_text())
                    .unwrap_or_default()
            },
            sort: |g, ctx| {
                SortKey::opt_int(
                    ctx.models
                        .and_then(|m| m.progress(&g.id))
                        .filter(|p| p.counts.in_update_total() > 0)
                        .map(|p| p.counts.new as i64),
                )
            },
            style: plain,
        },
        Column {
            title: "FLAVOR",
            hide_below: 120,
            width: Constraint::Length(9),
            text: |g, _| g.flavor.clone().unwrap_or_default(),
            sort: |g, _| SortKey::opt_str(g.flavor.as_deref()),
            style: muted,
        },
        Column {
            title: "IMAGE/VERSION",
            hide_below: 100,
            width: Constraint::Length(26),
            text: |g, _| match (&g.image, &g.version) {
                (Some(i), Some(v)) => format!("{i} {v}"),
                (Some(i), None) => i.clone(),
                (None, Some(v)) => v.clone(),
                _ => String::new(),
            },
            sort: |g, _| SortKey::opt_str(g.image.as_deref()),
            style: muted,
        },
        Column {
            title: "ZONE",
            // Static details give way to the progress of an update below this width.
            hide_below: 210,
            width: Constraint::Length(7),
            text: |g, _| g.zone.clone().unwrap_or_default(),
            sort: |g, _| SortKey::opt_str(g.zone.as_deref()),
            style: muted,
        },
        Column {
            title: "STACK",
            hide_below: 220,
            width: Constraint::Length(10),
            // The whole id: the table cuts it to the column and marks the cut.
            text: |g, _| g.stack_id.clone().unwrap_or_default(),
            sort: |g, _| SortKey::opt_str(g.stack_id.as_deref()),
            style: muted,
        },
        Column {
            title: "REASON",
            hide_below: 0,
            width: Constraint::Fill(1),
            text: |g, _| first_line(g.status_reason.as_deref()),
            sort: |g, _| SortKey::opt_str(g.status_reason.as_deref()),
            style: muted,
        },
    ]
}

// ---------------------------------------------------------------- nodes

impl TableRow for NodeRow {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.node.key.member)
    }
    fn is_fault(&self) -> bool {
        self.node.status.is_failed() || self.ip_error.is_some()
    }
}

pub fn node_columns() -> Vec<Column<NodeRow>> {
    vec![
        Column {
            title: "#",
            hide_below: 0,
            width: Constraint::Length(5),
            text: |r, _| {
                r.node.index.map(|i| i.to_string()).unwrap_or_else(|| {
                    // A node known by name alone (a Cluster API machine) has no index.
                    if r.node.key.member == r.node.name {
                        "-".into()
                    } else {
                        r.node.key.member.clone()
                    }
                })
            },
            sort: |r, _| SortKey::opt_int(r.node.index.map(i64::from)),
            style: muted,
        },
        Column {
            title: "NAME",
            hide_below: 95,
            width: Constraint::Min(14),
            text: |r, _| r.node.name.clone(),
            sort: |r, _| SortKey::str(&r.node.name),
            style: plain,
        },
        Column {
            title: "IP",
            hide_below: 0,
            // As wide as a node's addresses where there is room (a floating IP beside the
            // fixed one), 15 at least: an IPv4 address.
            width: Constraint::Min(15),
            text: |r, _| match (&r.node.ip, &r.ip_error) {
                // A node with several addresses: all of them, the first first.
                (Some(_), _) if r.addresses.len() > 1 => r.addresses.join(" "),
                (Some(ip), _) => ip.clone(),
                (None, Some(_)) => "lookup failed".into(),
                (None, None) => "…".into(),
            },
            sort: |r, _| {
                SortKey::opt_int(r.node.ip.as_deref().and_then(|ip| {
                    ip.parse::<std::net::Ipv4Addr>()
                        .ok()
                        .map(|a| u32::from(a) as i64)
                }))
            },
            style: |r, ctx| {
                if r.ip_error.is_some() && r.node.ip.is_none() {
                    Style::default().fg(ctx.theme.failed)
                } else {
                    Style::default().fg(ctx.theme.fg)
                }
            },
        },
        Column {
            title: "STATUS",
            hide_below: 0,
            width: Constraint::Length(20),
            text: |r, _| r.node.status.raw.clone(),
            sort: |r, _| SortKey::str(&r.node.status.raw),
            style: |r, ctx| {
                let s = Style::default().fg(ctx.theme.state_color(node_state(r)));
                // A status that just changed flashes for a few seconds.
                if r.changed_at
                    .is_some_and(|t| (ctx.now - t).num_seconds() < FLASH_SECS)
                {
                    s.add_modifier(Modifier::REVERSED | Modifier::BOLD)
                } else {
                    s
                }
            },
        },
        Column {
            title: "HOOK",
            hide_below: 0,
            width: Constraint::Length(15),
            // The member's phase in its group's model, the fact the summary's `held` count
            // is made of (core's word). "(inferred)": Heat purged the pause event; the
            // why-stuck line says from what.
            text: |r, ctx| hook_text(r, ctx),
            sort: |r, ctx| SortKey::str(&hook_text(r, ctx)),
            style: |_, ctx| {
                Style::default()
                    .fg(ctx.theme.paused)
                    .add_modifier(Modifier::BOLD)
            },
        },
        Column {
            title: "IMAGE",
            hide_below: 100,
            width: Constraint::Length(17),
            text: |r, _| r.node.image.clone().unwrap_or_default(),
            sort: |r, _| SortKey::opt_str(r.node.image.as_deref()),
            style: muted,
        },
        Column {
            title: "IN STATE",
            hide_below: 0,
            width: Constraint::Length(8),
            text: |r, ctx| age(ctx.now, r.node.since),
            sort: |r, _| SortKey::opt_int(r.node.since.map(|t| -t.timestamp())),
            style: plain,
        },
        Column {
            title: "REASON",
            hide_below: 0,
            width: Constraint::Fill(2),
            text: |r, _| match (&r.ip_error, r.node.ip.is_none()) {
                (Some(e), true) => {
                    format!("{} | IP: {e}", first_line(r.node.status_reason.as_deref()))
                }
                _ => first_line(r.node.status_reason.as_deref()),
            },
            sort: |r, _| SortKey::opt_str(r.node.status_reason.as_deref()),
            style: muted,
        },
    ]
}

// ---------------------------------------------------------------- stacks

impl TableRow for StackSummary {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.stack.id)
    }
    fn is_fault(&self) -> bool {
        self.status.is_failed()
    }
}

pub fn stack_columns() -> Vec<Column<StackSummary>> {
    vec![
        Column {
            title: "NAME",
            hide_below: 0,
            width: Constraint::Min(20),
            text: |s, _| s.stack.name.clone(),
            sort: |s, _| SortKey::str(&s.stack.name),
            style: |s, ctx| status_style(&s.status, ctx).add_modifier(Modifier::BOLD),
        },
        Column {
            title: "STATUS",
            hide_below: 0,
            width: Constraint::Length(20),
            text: |s, _| s.status.raw.clone(),
            sort: |s, _| SortKey::str(&s.status.raw),
            style: |s, ctx| status_style(&s.status, ctx),
        },
        // Heat touches a stack's `updated_at` when an update starts and when it ends: the
        // time in its current status (`created_at` for a stack never updated).
        Column {
            title: "IN STATE",
            hide_below: 0,
            width: Constraint::Length(8),
            text: |s, ctx| age(ctx.now, state_since(s.created_at, s.updated_at)),
            sort: |s, _| in_state_key(state_since(s.created_at, s.updated_at)),
            style: plain,
        },
        Column {
            title: "CREATED",
            hide_below: 90,
            width: Constraint::Length(8),
            text: |s, ctx| age(ctx.now, s.created_at),
            sort: |s, _| ts(s.created_at),
            style: muted,
        },
        Column {
            title: "REASON",
            hide_below: 0,
            width: Constraint::Fill(2),
            text: |s, _| first_line(s.status_reason.as_deref()),
            sort: |s, _| SortKey::opt_str(s.status_reason.as_deref()),
            style: muted,
        },
    ]
}

// ---------------------------------------------------------------- events

impl TableRow for StackEvent {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.id)
    }
    fn is_fault(&self) -> bool {
        self.status.is_failed()
    }
}

/// An event's time as the events pane shows it.
pub fn event_time(e: &StackEvent, ctx: &RowCtx) -> String {
    if ctx.abs_time {
        e.time.format("%H:%M:%S").to_string()
    } else {
        format!("{} ago", short_duration((ctx.now - e.time).num_seconds()))
    }
}

pub fn event_columns() -> Vec<Column<StackEvent>> {
    vec![
        Column {
            title: "TIME",
            hide_below: 0,
            width: Constraint::Length(9),
            text: event_time,
            sort: |e, _| SortKey::Int(e.time.timestamp()),
            style: muted,
        },
        Column {
            title: "STATUS",
            hide_below: 0,
            width: Constraint::Length(20),
            text: |e, _| e.status.raw.clone(),
            sort: |e, _| SortKey::str(&e.status.raw),
            style: |e, ctx| status_style(&e.status, ctx),
        },
        Column {
            title: "RESOURCE",
            hide_below: 0,
            // As wide as the paths need (up to a cap) while REASON takes the rest.
            width: Constraint::Min(28),
            text: |e, _| event_path(e),
            sort: |e, _| SortKey::str(&e.display_path()),
            style: plain,
        },
        Column {
            title: "REASON",
            hide_below: 0,
            width: Constraint::Fill(2),
            text: |e, _| first_line(e.status_reason.as_deref()),
            sort: |e, _| SortKey::opt_str(e.status_reason.as_deref()),
            style: |e, ctx| {
                if e.status.is_failed() {
                    Style::default().fg(ctx.theme.failed)
                } else if e
                    .status_reason
                    .as_deref()
                    .is_some_and(|r| r.contains("Hook"))
                {
                    Style::default().fg(ctx.theme.paused)
                } else {
                    ctx.theme.muted()
                }
            },
        },
    ]
}

// ---------------------------------------------------------------- stack tree

impl TableRow for TreeRow {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.path)
    }
    fn is_fault(&self) -> bool {
        self.resource.status.is_failed() || self.resource.status.is_in_progress()
    }
}

pub fn tree_columns() -> Vec<Column<TreeRow>> {
    vec![
        Column {
            title: "RESOURCE",
            hide_below: 0,
            width: Constraint::Min(20),
            // A member Heat holds on a hook is marked `‖ pre-update`: it waits, it is not stuck.
            text: |r, _| match &r.hook {
                Some(hook) => format!("{}{} ‖ {hook}", r.prefix, r.resource.name),
                None => format!("{}{}", r.prefix, r.resource.name),
            },
            sort: |r, _| SortKey::str(&r.path),
            style: |r, ctx| match r.hook {
                Some(_) => Style::default().fg(ctx.theme.paused),
                None => status_style(&r.resource.status, ctx),
            },
        },
        Column {
            title: "TYPE",
            hide_below: 100,
            width: Constraint::Min(24),
            text: |r, _| r.resource.resource_type.clone(),
            sort: |r, _| SortKey::str(&r.resource.resource_type),
            style: muted,
        },
        Column {
            title: "STATUS",
            hide_below: 0,
            width: Constraint::Length(20),
            text: |r, _| r.resource.status.raw.clone(),
            sort: |r, _| SortKey::str(&r.resource.status.raw),
            style: |r, ctx| status_style(&r.resource.status, ctx),
        },
        Column {
            title: "IN STATE",
            hide_below: 0,
            width: Constraint::Length(8),
            text: |r, ctx| age(ctx.now, r.resource.updated_at),
            sort: |r, _| SortKey::opt_int(r.resource.updated_at.map(|t| -t.timestamp())),
            style: plain,
        },
        Column {
            title: "REASON",
            hide_below: 0,
            width: Constraint::Fill(2),
            text: |r, _| first_line(r.resource.status_reason.as_deref()),
            sort: |r, _| SortKey::opt_str(r.resource.status_reason.as_deref()),
            style: muted,
        },
    ]
}
