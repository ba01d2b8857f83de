//! A node group's rollout: its nodes by batch, the batch in flight followed.

use super::nodegroups::group_stack;
use super::{Plan, Rows, Screen, Table, TableOp};
use crate::draw::panes::data_table;
use crate::keys::{self, KeyContext};
use crate::message::RolloutDriver;
use crate::model::{terminal_safe, Cluster, NodeGroup};
use crate::progress::State;
use crate::rollout::RolloutStatus;
use crate::state::rollout_control::RolloutSlot;
use crate::state::store::{FetchMeta, Store};
use crate::state::view::{StackTarget, View};
use crate::state::yank::Yank;
use crate::state::App;
use crate::theme::CellState;
use crate::widgets::table::TableState;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Wrap};
use ratatui::Frame;

pub struct Rollout<'a> {
    pub cluster: &'a Cluster,
    pub nodegroup: &'a NodeGroup,
}

impl Screen for Rollout<'_> {
    /// `y` / `Y`: see `state::yank`.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        let n = v
            .table
            .selected(s.rollouts.get(&self.nodegroup.id)?.nodes())?;
        Some(match (id, n.index) {
            (true, Some(i)) => ("member index", i.to_string()),
            _ => ("node name", n.name.clone()),
        })
    }

    fn title(&self) -> &'static str {
        "Rollout"
    }

    fn crumb(&self) -> String {
        format!("rollout {}", self.nodegroup.name)
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::ROLLOUT_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.rollouts.get(&self.nodegroup.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_rollout(self.cluster, self.nodegroup, p.force);
        // The rows' server names and addresses come from the node group's nodes, at a
        // slow pace (a whole address stream costs a 1000-node group many requests;
        // names and addresses seldom change during a rollout).
        app.want_nodes(self.nodegroup, p.force, p.now, p.every * 15);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let slot = store.rollouts.get(&self.nodegroup.id);
        let items = slot.map(|s| s.nodes()).unwrap_or(&[]);
        Table::boxed(
            items,
            &crate::action_columns::ROLLOUT_COLUMNS,
            slot.map(|s| s.meta.version).unwrap_or(0),
        )
    }

    /// Until the operator moves, the selection follows the batch in flight.
    fn after_sync(&self, view: &mut View, rows: &dyn Rows, store: &Store) {
        let slot = store.rollouts.get(&self.nodegroup.id);
        let items = slot.map(|s| s.nodes()).unwrap_or(&[]);
        let current = slot
            .and_then(|s| s.status.as_ref())
            .and_then(|s| s.current_batch);
        if view.tail.follow {
            if let Some(n) = current.and_then(|b| items.iter().find(|n| n.batch == b)) {
                rows.select_id(&mut view.table, &n.name);
            }
        }
    }

    /// Any move stops following the batch (a sort keeps it).
    fn stops_follow(&self, op: TableOp) -> bool {
        op != TableOp::SortNext
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        group_stack(app)
    }

    fn open(&self, app: &mut App) {
        app.nav_nodes();
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let slot = app.store().rollouts.get(&self.nodegroup.id);
        draw_progress(app, view, self.nodegroup, slot, frame, area);
    }
}

// Drawing: a header (target, image, state, batch, counts, pace, ETA), a progress gauge and
// the nodes with their phases; the batch in flight is selected until the operator moves.

fn state_color(app: &App, s: &State) -> ratatui::style::Color {
    let th = app.theme();
    match s {
        State::Running | State::Closing { .. } => th.state_color(CellState::InProgress),
        State::Paused { .. } | State::EndedElsewhere { .. } => th.state_color(CellState::Paused),
        State::Completed | State::Idle => th.state_color(CellState::Complete),
        State::Aborted { .. } | State::RolledBack | State::Failed { .. } => {
            th.state_color(CellState::Failed)
        }
    }
}

fn secs(ms: Option<i64>) -> String {
    ms.map(|m| format!("{:.1}s", m as f64 / 1000.0))
        .unwrap_or_else(|| "-".into())
}

fn header_lines<'a>(app: &App, slot: &'a RolloutSlot, s: &'a RolloutStatus) -> Vec<Line<'a>> {
    let th = app.theme();
    let key = Style::default().fg(th.fg).add_modifier(Modifier::BOLD);
    let m = th.muted();
    // An observed update has no plan: Heat only says the image its stack asks for now.
    let image = match (
        &slot.observed,
        slot.plan.as_ref().and_then(|p| p.from_image.clone()),
    ) {
        (Some(_), _) => s.image.clone(),
        (None, from) => format!("{} → {}", from.unwrap_or_else(|| "?".into()), s.image),
    };
    let mut lines = vec![
        Line::from(vec![
            Span::styled(terminal_safe(&s.target).into_owned(), key),
            Span::styled("  image ", m),
            Span::styled(terminal_safe(&image).into_owned(), key),
            Span::styled("  state ", m),
            Span::styled(
                terminal_safe(&s.progress.state.label()).into_owned(),
                Style::default()
                    .fg(state_color(app, &s.progress.state))
                    .add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                match (slot.driver, &slot.observed) {
                    (_, Some(_)) => "  (observed: not driven by caldera)".to_string(),
                    (Some(RolloutDriver::Here), None) => "  (driven here)".to_string(),
                    // Who drives it, from its driver lock: another process, or nobody.
                    (Some(RolloutDriver::Elsewhere), None) => match &s.driver {
                        Some(d) if !s.state.is_final() => format!("  (observed; {})", d.label()),
                        _ => "  (observed)".to_string(),
                    },
                    (None, None) => String::new(),
                },
                m,
            ),
        ]),
        Line::from(vec![
            Span::styled(
                s.progress
                    .batch_text()
                    .unwrap_or_else(|| "no batches".into()),
                key,
            ),
            Span::styled("  ", m),
            Span::styled(s.progress.counts_text(), key),
            // Only when there are some: nodes updating 3x longer than the median.
            Span::styled(
                if s.stragglers > 0 {
                    format!("  stragglers {}", s.stragglers)
                } else {
                    String::new()
                },
                th.warning().add_modifier(Modifier::BOLD),
            ),
            Span::styled("  stack ", m),
            Span::styled(
                if s.stack_status.is_empty() {
                    "-".to_string()
                } else {
                    terminal_safe(&s.stack_status).into_owned()
                },
                m,
            ),
        ]),
        Line::from(vec![
            Span::styled(s.progress.pace_eta_text(), key),
            Span::styled("  per node p50 ", m),
            Span::styled(secs(s.p50_ms), key),
            Span::styled(" p95 ", m),
            Span::styled(secs(s.p95_ms), key),
            Span::styled(format!("  id {}", terminal_safe(&s.id)), m),
        ]),
    ];
    // With groups held beside the target (`--also`): each group's counts, as `rollout status`.
    for group in s.group_lines() {
        lines.push(Line::from(Span::styled(
            terminal_safe(group.trim_start()).into_owned(),
            m,
        )));
    }
    if let Some(note) = slot.note() {
        lines.push(Line::from(Span::styled(
            terminal_safe(&note).into_owned(),
            th.warning(),
        )));
    }
    if let Some(e) = &slot.meta.error {
        lines.push(Line::from(Span::styled(
            terminal_safe(e).into_owned(),
            th.error(),
        )));
    }
    lines
}

fn draw_progress(
    app: &App,
    view: &View,
    nodegroup: &NodeGroup,
    slot: Option<&RolloutSlot>,
    frame: &mut Frame,
    area: Rect,
) {
    let th = app.theme();
    let title = format!(" Rollout of {} ", terminal_safe(&nodegroup.name));
    let Some((slot, status)) = slot.and_then(|s| s.status.as_ref().map(|st| (s, st))) else {
        let mut lines = Vec::new();
        match slot {
            Some(s) if s.meta.error.is_some() => {
                lines.push(Line::from(Span::styled(
                    terminal_safe(s.meta.error.as_deref().unwrap_or_default()).into_owned(),
                    th.error(),
                )));
            }
            Some(s) if s.note().is_some() => {
                lines.push(Line::from(Span::styled(
                    terminal_safe(&s.note().unwrap_or_default()).into_owned(),
                    Style::default().fg(th.fg),
                )));
            }
            Some(s) if s.plan.is_some() => lines.push(Line::from(Span::styled(
                "rollout found: reading its state…",
                Style::default().fg(th.in_progress),
            ))),
            _ => lines.push(Line::from(Span::styled(
                "looking for a rollout under way…",
                Style::default().fg(th.in_progress),
            ))),
        }
        frame.render_widget(
            Paragraph::new(lines).wrap(Wrap { trim: true }).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(th.border())
                    .title(Span::styled(title, th.title())),
            ),
            area,
        );
        return;
    };
    let head_lines = header_lines(app, slot, status);
    // Lines wrap in a narrow terminal: count the rows they take, so the note (what this
    // rollout is, why controls do not apply) is never cut off.
    let inner = usize::from(area.width.saturating_sub(2)).max(1);
    let rows: usize = head_lines
        .iter()
        .map(|l| l.width().div_ceil(inner).max(1))
        .sum();
    let head_h = (rows as u16).saturating_add(2);
    let [head, gauge, table] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Length(1),
        Constraint::Min(3),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(head_lines).wrap(Wrap { trim: true }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(th.border())
                .title(Span::styled(title, th.title())),
        ),
        head,
    );
    // The model's new members over all of them: a skipped member is not new.
    let c = status.progress.counts;
    let ratio = (c.new as f64 / c.total().max(1) as f64).clamp(0.0, 1.0);
    frame.render_widget(
        Gauge::default()
            .gauge_style(
                Style::default()
                    .fg(state_color(app, &status.progress.state))
                    .bg(th.header_bg),
            )
            .ratio(ratio)
            .label(format!(
                "new {}/{} nodes  {:.0}%",
                c.new,
                c.total(),
                ratio * 100.0
            )),
        gauge,
    );
    data_table(
        app,
        frame,
        table,
        "Nodes",
        Some(status.nodes.as_slice()),
        Some(&slot.meta),
        &crate::action_columns::ROLLOUT_COLUMNS,
        &view.table,
        "This rollout has no nodes.",
        true,
    );
}
