//! What the nodes view and the dashboard both show of a node group's nodes: the rollout
//! counts and pace ([`Rollout`]) with their summary line, the heat map's cells by zone and
//! its title, and a Cluster API node group's verdict (failed or stalled servers).

use crate::model::{terminal_safe, ImageCounts, ImagePhase, Node, NodeGroup};
use crate::tui::resource_columns::{node_state, short_duration};
use crate::tui::state::store::{NodeRow, NodeSet, Pending, Store};
use crate::tui::state::App;
use crate::tui::theme::CellState;
use crate::tui::widgets::heatmap::HeatGroup;
use chrono::{DateTime, Utc};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use std::collections::BTreeMap;

/// Per-state counts, throughput and time-in-state of a set of nodes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rollout {
    pub counts: [usize; 5],
    /// Nodes that reached COMPLETE in the last 10 minutes.
    pub done_recent: usize,
    /// Time in state of the nodes being updated (not paused), p50 / p95, seconds.
    pub active_p50: Option<i64>,
    pub active_p95: Option<i64>,
    /// Nodes updating for more than 3x the median (and over a minute).
    pub stragglers: usize,
    /// Old / updating / new by image against the node group's image (see
    /// `model::ImagePhase`), when the nodes' images are known.
    pub images: Option<ImageCounts>,
    /// What is still being read on a first load (a provisional member list): without the
    /// images Heat's "complete" may count members an upgrade has not reached, without the
    /// hook marks "in progress" counts held members, so the line says so and claims no
    /// pace or percentiles.
    pub pending: Pending,
}

impl Rollout {
    pub fn compute<'a>(rows: impl Iterator<Item = &'a NodeRow>, now: DateTime<Utc>) -> Rollout {
        let mut r = Rollout::default();
        let mut active: Vec<i64> = Vec::new();
        for row in rows {
            let s = node_state(row);
            if let Some(n) = r.counts.get_mut(s as usize) {
                *n += 1;
            }
            let age = row.node.since.map(|t| (now - t).num_seconds());
            match s {
                CellState::Complete if age.is_some_and(|a| a <= 600) => r.done_recent += 1,
                CellState::InProgress => active.extend(age),
                _ => {}
            }
        }
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

    /// With the nodes' images against `target` (the node group's image): a member Heat has
    /// not reached yet counts as old, not as complete.
    pub fn with_images<'a>(
        self,
        nodes: impl Iterator<Item = &'a Node>,
        target: Option<&str>,
    ) -> Rollout {
        let c = ImageCounts::of(nodes, target);
        self.with_image_counts(c)
    }

    /// With image counts already made (the dashboard adds up its node groups', each against
    /// its own image).
    pub fn with_image_counts(mut self, c: ImageCounts) -> Rollout {
        self.images = (c.old + c.updating + c.new > 0).then_some(c);
        self
    }

    /// What the node sets are still reading on their first load (`pending`). Some images
    /// may be known already (a settled group's members have its image) while those Nova
    /// gives for the members an upgrade moves are not.
    pub fn with_pending(mut self, pending: Pending) -> Rollout {
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

    /// An upgrade is visible: some node is still on another image than its node group's
    /// (nodes only being created, on the group's own image, are no upgrade). The heat map
    /// and the summary then say old / updating / new.
    pub fn by_image(&self) -> bool {
        self.images.is_some_and(upgrading)
    }

    /// Nodes per minute over the last 10 minutes and the time left at that pace (the nodes
    /// not on the target image when images are known, else those in progress or held).
    pub fn pace(&self) -> Option<(f64, i64)> {
        let remaining = match self.images {
            Some(c) => c.remaining(),
            None => {
                self.counts[CellState::InProgress as usize]
                    + self.counts[CellState::Paused as usize]
            }
        };
        if self.done_recent == 0 || remaining == 0 || self.reading().is_some() {
            return None;
        }
        let per_min = self.done_recent as f64 / 10.0;
        Some((per_min, (remaining as f64 / per_min * 60.0) as i64))
    }
}

/// Legend + counts line shared by the nodes pane and the dashboard.
/// `expected`: the node count Magnum reports, reconciled with the Heat members and IPs.
/// Too wide for `width` columns, the legend uses short labels, so that the failed and
/// paused counts stay on screen at 80 columns.
pub fn summary_line<'a>(
    app: &App,
    r: &Rollout,
    ips: Option<(usize, usize, usize, bool)>,
    expected: Option<usize>,
    width: u16,
) -> Line<'a> {
    let full = summary_line_labels(app, r, ips, expected, false);
    if full.width() <= width as usize {
        return full;
    }
    summary_line_labels(app, r, ips, expected, true)
}

fn summary_line_labels<'a>(
    app: &App,
    r: &Rollout,
    ips: Option<(usize, usize, usize, bool)>,
    expected: Option<usize>,
    short: bool,
) -> Line<'a> {
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
    // During a rollout "complete" would count the members Heat has not reached yet: the
    // image counts take its place.
    let mixed = r.images.filter(|c| upgrading(*c));
    if let Some(c) = mixed {
        let bold = Style::default().fg(th.fg).add_modifier(Modifier::BOLD);
        if short {
            // The failed and held counts must still fit at 80 columns: old is implied.
            spans.push(glyph_span(app, CellState::New));
            spans.push(Span::styled(
                format!("{}/{} new ", c.new, c.old + c.updating + c.new),
                bold,
            ));
        } else {
            // The heat map's cells by image, each with its count: the map's legend.
            spans.push(Span::styled("image: ", bold));
            for (s, n) in [
                (CellState::Old, c.old),
                (CellState::Updating, c.updating),
                (CellState::New, c.new),
            ] {
                spans.push(glyph_span(app, s));
                spans.push(Span::styled(format!("{} {n}  ", s.label()), bold));
            }
        }
    }
    for s in [
        CellState::Complete,
        CellState::InProgress,
        CellState::Paused,
        CellState::Failed,
        CellState::Unknown,
    ] {
        let n = r.counts[s as usize];
        if (n == 0 && s == CellState::Unknown) || (s == CellState::Complete && mixed.is_some()) {
            continue;
        }
        spans.push(glyph_span(app, s));
        let text = if short {
            format!("{n} {} ", s.short_label())
        } else {
            format!("{} {n}  ", s.label())
        };
        spans.push(Span::styled(text, Style::default().fg(th.fg)));
    }
    if let Some((long, narrow)) = r.reading() {
        // Heat's states until the images and hooks say which members an upgrade has
        // reached and which it holds: nothing is derived from them meanwhile.
        spans.push(Span::styled(if short { narrow } else { long }, th.muted()));
        return Line::from(spans);
    }
    if let (Some(p50), Some(p95)) = (r.active_p50, r.active_p95) {
        spans.push(Span::styled(
            format!(
                "updating p50 {} p95 {}  ",
                short_duration(p50),
                short_duration(p95)
            ),
            th.muted(),
        ));
    }
    if r.stragglers > 0 {
        spans.push(Span::styled(
            format!("{} stragglers  ", r.stragglers),
            Style::default().fg(th.warning).add_modifier(Modifier::BOLD),
        ));
    }
    if let Some((per_min, eta)) = r.pace() {
        spans.push(Span::styled(
            format!("{per_min:.1} nodes/min ETA {}", short_duration(eta)),
            th.accent(),
        ));
    }
    Line::from(spans)
}

/// Some node is still on another image than its node group's: an upgrade (or a failed one)
/// is under way, and counts and cells go by image.
fn upgrading(c: ImageCounts) -> bool {
    c.old > 0
}

/// A state's glyph in its colour, as the heat map draws it, for a legend.
fn glyph_span<'a>(app: &App, s: CellState) -> Span<'a> {
    Span::styled(
        format!("{} ", s.glyph()),
        Style::default().fg(app.theme().state_color(s)),
    )
}

/// The heat map's title: its scale first (what the cells stand for), then, by image during
/// an upgrade, the legend of old / updating / new (failed nodes keep their mark, which the
/// summary line explains).
pub fn heat_map_title<'a>(app: &App, by_image: bool, note: Option<String>) -> Vec<Span<'a>> {
    let th = app.theme();
    let mut spans = vec![Span::styled(" Fleet heat map ", th.title())];
    if let Some(n) = note {
        spans.push(Span::styled(format!(" {n} "), th.warning()));
    }
    if by_image {
        spans.push(Span::styled(" image ", th.title()));
        for s in [CellState::Old, CellState::Updating, CellState::New] {
            spans.push(glyph_span(app, s));
            spans.push(Span::styled(format!("{} ", s.label()), th.muted()));
        }
    }
    spans
}

/// A node's cell by image (see [`CellState::Old`]): a failed node stays failed (the operator
/// must see it whatever its image); a node whose image cannot be compared keeps its status.
fn image_state(row: &NodeRow, target: Option<&str>) -> CellState {
    let by_status = node_state(row);
    if by_status == CellState::Failed {
        return by_status;
    }
    match row.node.image_phase(target) {
        Some(ImagePhase::Old) => CellState::Old,
        Some(ImagePhase::Updating) => CellState::Updating,
        Some(ImagePhase::New) => CellState::New,
        None => by_status,
    }
}

/// Heat groups of one node group, one per zone (zones in name order). While some member is
/// not on `image` (the node group's), cells say old / updating / new; else by status.
pub fn zone_groups(
    set: &NodeSet,
    prefix: &str,
    selected: Option<&str>,
    image: Option<&str>,
) -> Vec<HeatGroup> {
    let by_image = upgrading(ImageCounts::of(set.rows.iter().map(|r| &r.node), image));
    let mut zones: BTreeMap<&str, HeatGroup> = BTreeMap::new();
    for row in &set.rows {
        let zone = row.node.zone.as_deref().unwrap_or("-");
        let g = zones.entry(zone).or_insert_with(|| HeatGroup {
            // Heat-map labels are drawn straight into the buffer: made safe here.
            label: terminal_safe(&if prefix.is_empty() {
                zone.to_string()
            } else {
                format!("{prefix}/{zone}")
            })
            .into_owned(),
            states: Vec::new(),
            selected: None,
        });
        if selected == Some(row.node.key.member.as_str()) {
            g.selected = Some(g.states.len());
        }
        g.states.push(if by_image {
            image_state(row, image)
        } else {
            node_state(row)
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
    use crate::ops::capi_stall::{assess, ServerLook, Verdict};
    if nodegroup.capi.is_none() || !set.has_members {
        return Vec::new();
    }
    let looks: Vec<ServerLook> = set
        .rows
        .iter()
        .filter_map(|r| ServerLook::of_node(&r.node))
        .collect();
    let cluster = store
        .clusters
        .data
        .as_deref()
        .and_then(|cs| cs.iter().find(|c| c.id == nodegroup.cluster_id));
    // The status and since when: the node group's status, timed by its cluster's create or
    // last update (Magnum gives node groups no times of their own).
    let since = cluster.and_then(|c| match nodegroup.status.action.as_str() {
        "UPDATE" => c.updated_at.or(c.created_at),
        _ => c.created_at,
    });
    let verdict = assess(
        &nodegroup.status,
        since,
        &looks,
        set.progress.as_ref(),
        app.now(),
    );
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
    use chrono::Duration;

    fn row(i: u32, status: &str, paused: bool, age: i64, now: DateTime<Utc>) -> NodeRow {
        NodeRow {
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
                server_id: None,
                created: None,
                stack_id: None,
            },
            ip_error: None,
            changed_at: None,
        }
    }

    /// A Heat-native group mid-upgrade (Nova names images by id, the group too): cells say
    /// old / updating / new, a failed node keeps its mark, a node whose image is not known
    /// keeps its status; the same group with no node left on another image (a scale adding
    /// members on the group's image) is coloured by status as before.
    #[test]
    fn heat_map_cells_go_by_image_only_during_an_upgrade() {
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
        let mut set = NodeSet::default();
        assert!(set.apply(
            0,
            Ok(crate::service::NodeUpdate::Members(
                rows.iter().map(|r| r.node.clone()).collect()
            )),
            now
        ));
        let states = |set: &NodeSet| zone_groups(set, "", None, Some(new))[0].states.clone();
        assert_eq!(
            states(&set),
            [
                CellState::New,
                CellState::Updating,
                CellState::Old,
                CellState::Failed,
                CellState::Old,
                CellState::Complete,
            ]
        );
        let r = Rollout::compute(set.rows.iter(), now)
            .with_images(set.rows.iter().map(|r| &r.node), Some(new));
        assert!(r.by_image());
        // The upgrade done, two members being created on the new image: by status.
        for row in &mut set.rows {
            row.node.image = Some(new.to_string());
        }
        set.rows[1].node.status = Status::parse("CREATE_IN_PROGRESS");
        set.rows[3].node.status = Status::parse("CREATE_IN_PROGRESS");
        set.rows[2].node.hook_paused = false;
        assert_eq!(
            states(&set),
            [
                CellState::Complete,
                CellState::InProgress,
                CellState::InProgress,
                CellState::InProgress,
                CellState::Complete,
                CellState::Complete,
            ]
        );
    }

    #[test]
    fn rollout_counts_pace_and_stragglers() {
        let now = Utc::now();
        let mut rows = vec![
            row(0, "UPDATE_COMPLETE", false, 30, now),
            row(1, "UPDATE_COMPLETE", false, 90, now),
            row(2, "UPDATE_COMPLETE", false, 3000, now),
            row(3, "UPDATE_FAILED", false, 100, now),
            row(4, "UPDATE_IN_PROGRESS", true, 700, now),
        ];
        for (i, age) in [40, 45, 50, 55, 900].into_iter().enumerate() {
            rows.push(row(10 + i as u32, "UPDATE_IN_PROGRESS", false, age, now));
        }
        let r = Rollout::compute(rows.iter(), now);
        assert_eq!(r.counts[CellState::Complete as usize], 3);
        assert_eq!(r.counts[CellState::Failed as usize], 1);
        assert_eq!(r.counts[CellState::Paused as usize], 1);
        assert_eq!(r.counts[CellState::InProgress as usize], 5);
        assert_eq!(r.done_recent, 2);
        assert_eq!(r.active_p50, Some(50));
        assert_eq!(r.stragglers, 1);
        let (per_min, eta) = r.pace().unwrap();
        assert!((per_min - 0.2).abs() < 1e-9);
        assert_eq!(eta, 1800);
    }
}
