//! What the nodes view and the dashboard both show of a node group's nodes: the progress
//! model's counts, pace and ETA (computed in `caldera_core::progress`, once per change of the
//! facts, by `state::store::models`; this module only draws what it says), the heat map's cells by zone and its
//! legend, and a Cluster API node group's verdict (failed or stalled servers).

use crate::model::{terminal_safe, NodeGroup};
use crate::progress::{Phase, Progress};
use crate::resource_columns::{node_state, short_duration};
use crate::state::store::{NodeRow, NodeSet, Pending, Store};
use crate::state::App;
use crate::theme::CellState;
use crate::widgets::heatmap::HeatGroup;
use crate::widgets::table::cut_line_marked;
use chrono::{DateTime, Utc};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::collections::{BTreeMap, HashMap};

/// Time in state of the nodes Heat is updating (not held), p50 / p95, and the stragglers:
/// per-node timings, not progress (the model has the counts, pace and ETA).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timing {
    pub active_p50: Option<i64>,
    pub active_p95: Option<i64>,
    /// Nodes updating for more than 3x the median (and over a minute).
    pub stragglers: usize,
    /// What is still being read on a first load (a provisional member list): without the
    /// images and the hook marks the model cannot tell old from new nor held from updating,
    /// so the line says so and claims no pace.
    pub pending: Pending,
}

impl Timing {
    pub fn compute<'a>(rows: impl Iterator<Item = &'a NodeRow>, now: DateTime<Utc>) -> Timing {
        let mut r = Timing::default();
        let mut active: Vec<i64> = rows
            .filter(|row| node_state(row) == CellState::InProgress)
            .filter_map(|row| row.node.since.map(|t| (now - t).num_seconds()))
            .collect();
        active.sort_unstable();
        if !active.is_empty() {
            let p50 = active[active.len() / 2];
            r.active_p50 = Some(p50);
            r.active_p95 = Some(active[(active.len() * 95 / 100).min(active.len() - 1)]);
            let limit = crate::rollout::progress::straggler_after_ms(p50 * 1000) / 1000;
            r.stragglers = active.iter().filter(|a| **a > limit).count();
        }
        r
    }

    /// What the node sets are still reading on their first load (`pending`).
    pub fn with_pending(mut self, pending: Pending) -> Timing {
        self.pending = pending;
        self
    }

    fn reading(&self) -> Option<(&'static str, &'static str)> {
        match (self.pending.images, self.pending.marks) {
            (true, true) => Some(("⟳ reading images and hooks", "⟳ images")),
            (true, false) => Some(("⟳ reading images", "⟳ images")),
            (false, true) => Some(("⟳ reading hooks", "⟳ hooks")),
            (false, false) => None,
        }
    }
}

/// The heat map's cell of a member in the model's phase; a member no update covers keeps
/// its Heat status.
fn phase_cell(phase: Phase, row: &NodeRow) -> CellState {
    match phase {
        Phase::New => CellState::New,
        Phase::Updating | Phase::Creating | Phase::Removing => CellState::Updating,
        Phase::Held(_) => CellState::Paused,
        Phase::Pending | Phase::RolledBack => CellState::Old,
        Phase::Failed => CellState::Failed,
        Phase::Skipped => CellState::Unknown,
        Phase::NotInUpdate => node_state(row),
    }
}

/// The legend's cell of a phase, as [`phase_cell`] draws it.
fn legend_cell(phase: Phase) -> CellState {
    match phase {
        Phase::New => CellState::New,
        Phase::Updating | Phase::Creating | Phase::Removing => CellState::Updating,
        Phase::Held(_) => CellState::Paused,
        Phase::Pending | Phase::RolledBack => CellState::Old,
        Phase::Failed => CellState::Failed,
        Phase::Skipped | Phase::NotInUpdate => CellState::Unknown,
    }
}

/// Legend + counts line shared by the nodes pane and the dashboard: the model's counts,
/// each with the glyph its members have on the heat map, then its state when nothing
/// moves, then its pace and ETA. `expected`: the node count Magnum reports, reconciled
/// with the Heat members and IPs. Too wide for `width` columns, short labels.
pub fn summary_line<'a>(
    app: &App,
    p: &Progress,
    observed: bool,
    t: &Timing,
    ips: Option<(usize, usize, usize, bool)>,
    expected: Option<usize>,
    width: u16,
) -> Line<'a> {
    let full = summary_line_labels(app, p, observed, t, ips, expected, false);
    if full.width() <= width as usize {
        return full;
    }
    // Still too wide with short labels (a narrow terminal): cut, marked.
    cut_line_marked(
        summary_line_labels(app, p, observed, t, ips, expected, true),
        usize::from(width),
    )
}

fn ips_spans<'a>(
    app: &App,
    ips: Option<(usize, usize, usize, bool)>,
    expected: Option<usize>,
    short: bool,
) -> Vec<Span<'a>> {
    let th = app.theme();
    let mut spans: Vec<Span> = Vec::new();
    if let (Some(want), Some((_, _, members, _))) = (expected, ips) {
        if want != members {
            spans.push(Span::styled(
                format!(" count {want} ≠ members {members} "),
                Style::default()
                    .fg(th.badge_fg)
                    .bg(th.warning)
                    .add_modifier(Modifier::BOLD),
            ));
        }
    }
    if let Some((ok, failed, total, done)) = ips {
        spans.push(Span::styled(
            format!(" IPs {ok}/{total}"),
            Style::default().fg(th.fg).add_modifier(Modifier::BOLD),
        ));
        if failed > 0 {
            spans.push(Span::styled(
                format!(" ({failed} failed)"),
                Style::default().fg(th.failed),
            ));
        }
        if !done {
            spans.push(Span::styled(" ⟳", th.muted()));
        }
        spans.push(Span::raw(if short { " " } else { "  " }));
    }
    spans
}

/// The model's counts with their glyphs; at rest (no member in an update) Heat's view of
/// the members, by status, as the map draws them.
fn count_spans<'a>(app: &App, p: &Progress, short: bool) -> Vec<Span<'a>> {
    let th = app.theme();
    let mut spans = Vec::new();
    for (phase, n) in p.counts.items() {
        if phase == Phase::NotInUpdate && p.counts.in_update_total() > 0 {
            spans.push(Span::styled(format!("{n} idle "), th.muted()));
            continue;
        }
        // Zero counts give way, but `new` during an upgrade ("0/800 new"): members being
        // created, or updated in place with no image to change, have no "new" to count.
        let upgrade = p.counts.new + p.counts.pending + p.counts.held > 0;
        if phase == Phase::NotInUpdate || (n == 0 && !(phase == Phase::New && upgrade)) {
            continue;
        }
        spans.push(glyph_span(app, legend_cell(phase)));
        let text = match (phase, short) {
            (Phase::New, true) => format!("{n}/{} new ", p.counts.total()),
            (Phase::New, false) => format!("new {n}/{}  ", p.counts.total()),
            (_, true) => format!("{n} {} ", phase.label()),
            (_, false) => format!("{} {n}  ", phase.label()),
        };
        spans.push(Span::styled(text, Style::default().fg(th.fg)));
    }
    spans
}

fn summary_line_labels<'a>(
    app: &App,
    p: &Progress,
    observed: bool,
    t: &Timing,
    ips: Option<(usize, usize, usize, bool)>,
    expected: Option<usize>,
    short: bool,
) -> Line<'a> {
    let th = app.theme();
    let mut spans = ips_spans(app, ips, expected, short);
    if let Some((long, narrow)) = t.reading() {
        // Until the images and hooks say which members an update has reached and which
        // are held, the model cannot tell: nothing is claimed meanwhile.
        spans.push(Span::styled(if short { narrow } else { long }, th.muted()));
        return Line::from(spans);
    }
    let at_rest = p.counts.in_update_total() == 0;
    if at_rest {
        spans.extend(rest_spans(app, p));
    } else {
        if observed {
            // An update caldera does not drive (Magnum's, another tool's), read from Heat:
            // `rollout status` labels it observed too.
            spans.push(Span::styled("observed ", th.muted()));
        }
        spans.extend(count_spans(app, p, short));
    }
    if !at_rest && !p.state.moving() {
        spans.push(Span::styled(
            format!("{}  ", terminal_safe(&p.state.label())),
            th.warning().add_modifier(Modifier::BOLD),
        ));
    }
    if let (Some(p50), Some(p95)) = (t.active_p50, t.active_p95) {
        if !short {
            spans.push(Span::styled(
                format!(
                    "updating p50 {} p95 {}  ",
                    short_duration(p50),
                    short_duration(p95)
                ),
                th.muted(),
            ));
        }
    }
    if t.stragglers > 0 {
        spans.push(Span::styled(
            format!("{} stragglers  ", t.stragglers),
            Style::default().fg(th.warning).add_modifier(Modifier::BOLD),
        ));
    }
    if p.pace.is_some() || p.eta_secs.is_some() {
        spans.push(Span::styled(p.pace_eta_text(), th.accent()));
    }
    Line::from(spans)
}

/// No update: the members by Heat's status, as the map draws them (complete, in progress,
/// held, failed), counted from the model's members.
fn rest_spans<'a>(app: &App, p: &Progress) -> Vec<Span<'a>> {
    let th = app.theme();
    let mut spans = Vec::new();
    for (phase, n) in p.counts.items() {
        let (cell, label) = match phase {
            Phase::NotInUpdate => (CellState::Complete, "complete"),
            Phase::Creating => (CellState::InProgress, "creating"),
            Phase::Removing => (CellState::InProgress, "removing"),
            Phase::Failed => (CellState::Failed, "failed"),
            Phase::New
            | Phase::Updating
            | Phase::Held(_)
            | Phase::Pending
            | Phase::Skipped
            | Phase::RolledBack => continue,
        };
        spans.push(glyph_span(app, cell));
        spans.push(Span::styled(
            format!("{label} {n}  "),
            Style::default().fg(th.fg),
        ));
    }
    spans
}

/// A state's glyph in its colour, as the heat map draws it, for a legend.
fn glyph_span<'a>(app: &App, s: CellState) -> Span<'a> {
    Span::styled(
        format!("{} ", s.glyph()),
        Style::default().fg(app.theme().state_color(s)),
    )
}

/// The heat map's title: its scale first (what the cells stand for), then, during an
/// update, the legend of the cells the model's phases draw (held `‖` apart from old `▒`).
pub fn heat_map_title<'a>(app: &App, p: &Progress, note: Option<String>) -> Vec<Span<'a>> {
    let th = app.theme();
    let mut spans = vec![Span::styled(" Fleet heat map ", th.title())];
    if let Some(n) = note {
        spans.push(Span::styled(format!(" {n} "), th.warning()));
    }
    if p.counts.in_update_total() > 0 {
        for (phase, n) in p.counts.items() {
            if n == 0 || phase == Phase::NotInUpdate {
                continue;
            }
            spans.push(glyph_span(app, legend_cell(phase)));
            spans.push(Span::styled(format!("{} ", phase.label()), th.muted()));
        }
    }
    spans
}

/// Heat groups of one node group, one per zone (zones in name order); each cell the model's
/// phase of its member.
pub fn zone_groups(
    set: &NodeSet,
    prefix: &str,
    selected: Option<&str>,
    progress: &Progress,
) -> Vec<HeatGroup> {
    // One lookup per cell: a 10 000-node group is drawn every frame.
    let phases: HashMap<&str, Phase> = progress
        .members
        .iter()
        .map(|m| (m.name.as_str(), m.phase))
        .collect();
    let mut zones: BTreeMap<&str, HeatGroup> = BTreeMap::new();
    // A group none of whose nodes has a zone (a stack's servers that name none) is labelled
    // by the group alone, not `group/-`.
    let zoned = set.rows.iter().any(|r| r.node.zone.is_some());
    for row in &set.rows {
        let zone = row.node.zone.as_deref().unwrap_or("-");
        let g = zones.entry(zone).or_insert_with(|| HeatGroup {
            // Heat-map labels are drawn straight into the buffer: made safe here.
            label: terminal_safe(&match (prefix.is_empty(), zoned) {
                (true, _) => zone.to_string(),
                (false, false) => prefix.to_string(),
                (false, true) => format!("{prefix}/{zone}"),
            })
            .into_owned(),
            states: Vec::new(),
            selected: None,
        });
        if selected == Some(row.node.key.member.as_str()) {
            g.selected = Some(g.states.len());
        }
        g.states
            .push(match phases.get(row.node.key.member.as_str()) {
                Some(phase) => phase_cell(*phase, row),
                None => node_state(row),
            });
    }
    zones.into_values().collect()
}

/// What the Nova servers of a Cluster API node group say when its Magnum status does not
/// (see `ops::capi_stall`): failed or stalled, wrapped to `width` in at most three lines;
/// nothing for other node groups or while it progresses. `label` names the node group
/// (the dashboard shows every group's).
pub fn verdict_lines(
    app: &App,
    store: &Store,
    nodegroup: &NodeGroup,
    set: &NodeSet,
    label: Option<&str>,
    width: usize,
) -> Vec<Line<'static>> {
    use crate::ops::capi_stall::Verdict;
    if !set.has_members {
        return Vec::new();
    }
    let cluster = store
        .clusters
        .data
        .as_deref()
        .and_then(|cs| cs.iter().find(|c| c.id == nodegroup.cluster_id));
    let Some(verdict) = crate::progress::capi_verdict(
        nodegroup,
        cluster,
        set.rows.iter().map(|r| &r.node),
        set.progress.as_ref(),
        app.now(),
    ) else {
        return Vec::new();
    };
    let Some(text) = verdict.line(app.now()) else {
        return Vec::new();
    };
    let text = match label {
        Some(l) => format!("{l}: {text}"),
        None => text,
    };
    let th = app.theme();
    let style = match verdict {
        Verdict::Failed { .. } => Style::default().fg(th.failed).add_modifier(Modifier::BOLD),
        _ => Style::default().fg(th.warning).add_modifier(Modifier::BOLD),
    };
    let mut lines = super::wrap::wrap(&format!(" {}", terminal_safe(&text)), width.max(20));
    if lines.len() > 3 {
        lines.truncate(3);
        if let Some(last) = lines.last_mut() {
            last.push('…');
        }
    }
    lines
        .into_iter()
        .map(|l| Line::from(Span::styled(l, style)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, NodeKey, Status};
    use crate::state::store::models::group_progress;
    use chrono::Duration;

    fn row(i: u32, status: &str, paused: bool, age: i64, now: DateTime<Utc>) -> NodeRow {
        NodeRow {
            addresses: Vec::new(),
            node: Node {
                key: NodeKey {
                    nodegroup: "g".into(),
                    member: i.to_string(),
                },
                index: Some(i),
                name: format!("n{i}"),
                zone: None,
                ip: None,
                status: Status::parse(status),
                status_reason: None,
                image: None,
                since: Some(now - Duration::seconds(age)),
                hook_paused: paused,
                hook_inferred: false,
                held_by_rollout: None,
                server_id: None,
                created: None,
                stack_id: None,
                replacing: false,
            },
            ip_error: None,
            changed_at: None,
        }
    }

    fn set_of(rows: &[NodeRow], now: DateTime<Utc>) -> NodeSet {
        let mut set = NodeSet::default();
        assert!(set.apply(
            0,
            Ok(crate::service::NodeUpdate::Members(
                rows.iter().map(|r| r.node.clone()).collect()
            )),
            now
        ));
        set
    }

    fn group(image: &str, status: &str) -> NodeGroup {
        let mut g = NodeGroup::of_stack("s", "g", crate::model::Role::Worker);
        g.image = Some(image.to_string());
        g.status = Status::parse(status);
        g
    }

    /// The dashboard's heat map labels a group by its zones; a group whose nodes name none
    /// (a plain stack's servers) by the group alone, not `app_tier/-`.
    #[test]
    fn heat_map_labels_say_the_zone_only_where_there_is_one() {
        let now = Utc::now();
        let rows = [
            row(0, "CREATE_COMPLETE", false, 30, now),
            row(1, "CREATE_COMPLETE", false, 30, now),
        ];
        let g = group("img", "CREATE_COMPLETE");
        let store = Store::default();
        let set = set_of(&rows, now);
        let p = group_progress(&store, &g, Some(&set), now).expect("members read");
        let labels = |set: &NodeSet| -> Vec<String> {
            zone_groups(set, "app_tier", None, &p)
                .into_iter()
                .map(|z| z.label)
                .collect()
        };
        assert_eq!(labels(&set), ["app_tier"]);
        let mut zoned = rows.clone();
        zoned[1].node.zone = Some("az1".into());
        assert_eq!(labels(&set_of(&zoned, now)), ["app_tier/-", "app_tier/az1"]);
    }

    /// A Heat-native group mid-upgrade (Nova names images by id, the group too): cells are
    /// the model's phases, a held member drawn `‖` apart from the old ones, a failed node
    /// keeps its mark, a node whose image is not known is not claimed new; the same group
    /// with no node left on another image (a scale adding members on the group's image):
    /// members being created are not complete, the others by status.
    #[test]
    fn heat_map_cells_are_the_models_phases() {
        let now = Utc::now();
        let (old, new) = (
            "0f6b3c2e-1111-4a5b-9c8d-0123456789ab",
            "7d2e9a41-2222-4c6d-8e9f-0123456789ab",
        );
        let mut rows = [
            row(0, "UPDATE_COMPLETE", false, 30, now),
            row(1, "UPDATE_IN_PROGRESS", false, 30, now),
            row(2, "UPDATE_IN_PROGRESS", true, 30, now),
            row(3, "UPDATE_FAILED", false, 30, now),
            row(4, "CREATE_COMPLETE", false, 30, now),
            row(5, "UPDATE_COMPLETE", false, 30, now),
        ];
        let images = [Some(new), Some(old), Some(old), Some(old), Some(old), None];
        for (r, image) in rows.iter_mut().zip(images) {
            r.node.image = image.map(str::to_string);
        }
        let g = group(new, "UPDATE_IN_PROGRESS");
        let store = Store::default();
        let set = set_of(&rows, now);
        let p = group_progress(&store, &g, Some(&set), now).expect("members read");
        assert_eq!(
            zone_groups(&set, "", None, &p)[0].states,
            [
                CellState::New,
                CellState::Updating,
                CellState::Paused,
                CellState::Failed,
                CellState::Old,
                CellState::Old,
            ]
        );
        assert_eq!(p.counts.total(), 6);
        assert_eq!((p.counts.new, p.counts.held, p.counts.pending), (1, 1, 2));
        // The upgrade done, a scale adds two members on the new image: being created, not
        // complete (INIT_COMPLETE is Heat's word for a member declared, not built).
        for r in &mut rows {
            r.node.image = Some(new.to_string());
            r.node.hook_paused = false;
            r.node.status = Status::parse("UPDATE_COMPLETE");
        }
        rows[1].node.status = Status::parse("INIT_COMPLETE");
        rows[3].node.status = Status::parse("CREATE_IN_PROGRESS");
        let set = set_of(&rows, now);
        let p = group_progress(&store, &g, Some(&set), now).expect("members read");
        assert_eq!(p.counts.creating, 2);
        assert_eq!(
            zone_groups(&set, "", None, &p)[0].states,
            [
                CellState::Complete,
                CellState::Updating,
                CellState::Complete,
                CellState::Updating,
                CellState::Complete,
                CellState::Complete,
            ]
        );
    }

    #[test]
    fn timing_percentiles_and_stragglers() {
        let now = Utc::now();
        let mut rows = vec![
            row(0, "UPDATE_COMPLETE", false, 30, now),
            row(4, "UPDATE_IN_PROGRESS", true, 700, now),
        ];
        for (i, age) in [40, 45, 50, 55, 900].into_iter().enumerate() {
            rows.push(row(10 + i as u32, "UPDATE_IN_PROGRESS", false, age, now));
        }
        let t = Timing::compute(rows.iter(), now);
        assert_eq!(t.active_p50, Some(50));
        assert_eq!(t.stragglers, 1);
    }
}
