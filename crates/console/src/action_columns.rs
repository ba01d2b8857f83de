//! Columns of the action views: the rollout's nodes and the audit journal.

use super::resource_columns::{age, short_duration};
use super::state::journal_reads::{outcome_text, JournalRow};
use super::theme::CellState;
use super::widgets::table::{muted, plain, Column, RowCtx, SortKey, TableRow};
use crate::journal::Outcome;
use crate::rollout::{NodePhase, NodeProgress};
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style};
use std::borrow::Cow;
use std::sync::LazyLock;

pub static ROLLOUT_COLUMNS: LazyLock<Vec<Column<NodeProgress>>> = LazyLock::new(rollout_columns);
pub static JOURNAL_COLUMNS: LazyLock<Vec<Column<JournalRow>>> = LazyLock::new(journal_columns);

impl TableRow for NodeProgress {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }
    fn is_fault(&self) -> bool {
        self.phase == NodePhase::Failed
    }
}

/// The colour family of a rollout phase.
pub fn phase_state(p: NodePhase) -> CellState {
    match p {
        NodePhase::Done => CellState::Complete,
        NodePhase::Updating | NodePhase::Waiting => CellState::InProgress,
        NodePhase::Paused => CellState::Paused,
        NodePhase::Failed => CellState::Failed,
        NodePhase::Pending | NodePhase::Skipped | NodePhase::RolledBack => CellState::Unknown,
    }
}

fn took(n: &NodeProgress, ctx: &RowCtx) -> Option<i64> {
    match (n.released_at, n.finished_at) {
        (Some(r), Some(f)) => Some((f - r).num_seconds()),
        // Only a node Heat is updating now counts on; a done node whose finish was not
        // seen (taken over after it ended) has no duration to show.
        (Some(r), None) if n.phase == NodePhase::Updating => Some((ctx.now - r).num_seconds()),
        _ => None,
    }
}

/// Width of the rollout table's NODE column: Heat member names (`0`..`9999`) fit.
const NODE_WIDTH: usize = 10;

/// A node name that does not fit its column (a Cluster API machine's server name,
/// `kube-7xk2q-default-worker-4hq9z-8d2kx-p5mzt`) by its end, where Cluster API puts the
/// machine's own random token; the REASON column then ends with the whole name.
fn node_cell(name: &str) -> String {
    tail_cell(name, NODE_WIDTH)
}

/// Width of the SERVER column. Server names share their start (`{stack}-node-`): a longer
/// one keeps its end, which tells the nodes apart.
const SERVER_WIDTH: usize = 28;

fn tail_cell(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n <= width {
        return text.to_string();
    }
    let tail: String = text.chars().skip(n - (width - 1)).collect();
    format!("…{tail}")
}

/// Heat's reason, then the whole name the NODE cell cut: a Cluster API machine's server,
/// or a member of a group held beside the rollout's target (`kube_masters/0`).
fn reason_cell(n: &NodeProgress) -> String {
    let reason = n.reason.clone().unwrap_or_default();
    if n.name.chars().count() <= NODE_WIDTH {
        return reason;
    }
    let whole = match crate::model::split_member_key(&n.name).0.is_some() {
        true => format!("node {}", n.name),
        false => format!("server {}", n.name),
    };
    match reason.is_empty() {
        true => whole,
        false => format!("{reason}; {whole}"),
    }
}

pub fn rollout_columns() -> Vec<Column<NodeProgress>> {
    vec![
        Column {
            title: "NODE",
            hide_below: 0,
            width: Constraint::Length(NODE_WIDTH as u16),
            text: |n, _| node_cell(&n.name),
            sort: |n, _| SortKey::opt_int(n.index.map(i64::from)),
            style: plain,
        },
        Column {
            title: "SERVER",
            hide_below: 150,
            width: Constraint::Length(SERVER_WIDTH as u16),
            text: |n, _| {
                n.server
                    .as_deref()
                    .map(|s| tail_cell(s, SERVER_WIDTH))
                    .unwrap_or_else(|| "-".into())
            },
            sort: |n, _| SortKey::opt_str(n.server.as_deref()),
            style: plain,
        },
        Column {
            title: "ADDRESS",
            hide_below: 100,
            width: Constraint::Length(16),
            text: |n, _| n.address.clone().unwrap_or_else(|| "-".into()),
            sort: |n, _| SortKey::opt_str(n.address.as_deref()),
            style: muted,
        },
        Column {
            title: "BATCH",
            hide_below: 0,
            width: Constraint::Length(6),
            text: |n, _| (n.batch + 1).to_string(),
            sort: |n, _| SortKey::opt_int(Some(n.batch as i64)),
            style: muted,
        },
        Column {
            title: "PHASE",
            hide_below: 0,
            width: Constraint::Length(9),
            text: |n, _| n.phase.as_str().to_string(),
            sort: |n, _| SortKey::str(n.phase.as_str()),
            style: |n, ctx| {
                let s = Style::default().fg(ctx.theme.state_color(phase_state(n.phase)));
                if n.phase == NodePhase::Updating || n.phase == NodePhase::Failed {
                    s.add_modifier(Modifier::BOLD)
                } else {
                    s
                }
            },
        },
        Column {
            title: "RELEASED",
            hide_below: 0,
            width: Constraint::Length(9),
            text: |n, ctx| {
                if ctx.abs_time {
                    n.released_at
                        .map(|t| t.format("%H:%M:%S").to_string())
                        .unwrap_or_else(|| "-".into())
                } else {
                    age(ctx.now, n.released_at)
                }
            },
            sort: |n, _| SortKey::opt_int(n.released_at.map(|t| t.timestamp())),
            style: muted,
        },
        Column {
            title: "TOOK",
            hide_below: 0,
            width: Constraint::Length(6),
            text: |n, ctx| {
                took(n, ctx)
                    .map(short_duration)
                    .unwrap_or_else(|| "-".into())
            },
            sort: |n, ctx| SortKey::opt_int(took(n, ctx)),
            style: |n, ctx| {
                if n.straggler {
                    ctx.theme.warning().add_modifier(Modifier::BOLD)
                } else {
                    plain(n, ctx)
                }
            },
        },
        Column {
            title: "REASON",
            hide_below: 50,
            width: Constraint::Min(10),
            text: |n, _| reason_cell(n),
            sort: |n, _| SortKey::opt_str(n.reason.as_deref()),
            style: |n, ctx| {
                if n.phase == NodePhase::Failed {
                    ctx.theme.error()
                } else {
                    ctx.theme.muted()
                }
            },
        },
    ]
}

impl TableRow for JournalRow {
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Owned(self.seq.to_string())
    }
    fn is_fault(&self) -> bool {
        matches!(
            self.entry.outcome,
            Outcome::Failed { .. } | Outcome::Refused { .. }
        )
    }
}

pub fn journal_columns() -> Vec<Column<JournalRow>> {
    vec![
        Column {
            title: "TIME",
            hide_below: 0,
            width: Constraint::Length(19),
            text: |r, _| r.entry.time.format("%Y-%m-%d %H:%M:%S").to_string(),
            sort: |r, _| SortKey::opt_int(Some(r.seq as i64)),
            style: muted,
        },
        Column {
            title: "WHO",
            hide_below: 100,
            width: Constraint::Length(30),
            text: |r, _| r.entry.who(),
            sort: |r, _| SortKey::str(&r.entry.user),
            style: muted,
        },
        Column {
            title: "ACTION",
            hide_below: 0,
            width: Constraint::Min(20),
            text: |r, _| r.entry.action.clone(),
            sort: |r, _| SortKey::str(&r.entry.action),
            style: plain,
        },
        Column {
            title: "TARGET",
            hide_below: 0,
            width: Constraint::Length(28),
            text: |r, _| r.entry.target.clone(),
            sort: |r, _| SortKey::str(&r.entry.target),
            style: plain,
        },
        Column {
            title: "OUTCOME",
            hide_below: 0,
            width: Constraint::Min(12),
            text: |r, _| outcome_text(&r.entry.outcome),
            sort: |r, _| SortKey::str(&outcome_text(&r.entry.outcome)),
            style: |r, ctx| match r.entry.outcome {
                Outcome::Failed { .. } | Outcome::Refused { .. } => ctx.theme.error(),
                Outcome::Started => Style::default().fg(ctx.theme.in_progress),
                Outcome::Ok => Style::default().fg(ctx.theme.complete),
            },
        },
        Column {
            title: "ROLLOUT",
            hide_below: 140,
            width: Constraint::Length(26),
            text: |r, _| r.entry.rollout.clone().unwrap_or_default(),
            sort: |r, _| SortKey::opt_str(r.entry.rollout.as_deref()),
            style: muted,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, Utc};

    /// TOOK counts on only while Heat updates the node: a node found done after a take-over
    /// (its finish not seen) shows no duration rather than one that grows for ever.
    #[test]
    fn took_grows_only_while_updating() {
        let theme = crate::theme::Theme::default_theme();
        let t0 = Utc::now();
        let ctx = RowCtx {
            now: t0 + Duration::seconds(300),
            theme: &theme,
            abs_time: false,
            models: None,
        };
        let mut n = NodeProgress {
            name: "3".into(),
            index: Some(3),
            batch: 0,
            phase: NodePhase::Updating,
            released_at: Some(t0),
            finished_at: None,
            reason: None,
            straggler: false,
            server: None,
            address: None,
        };
        assert_eq!(took(&n, &ctx), Some(300));
        n.phase = NodePhase::Done;
        assert_eq!(took(&n, &ctx), None);
        n.finished_at = Some(t0 + Duration::seconds(12));
        assert_eq!(took(&n, &ctx), Some(12));
    }
}
