//! A cluster's dashboard: its node groups, the fleet heat map and the event tail of the
//! cluster's and its groups' stacks. The keys go to the node groups; `tab` gives them to the
//! event tail (as k9s moves between panes), where the table keys move a selection and Enter
//! opens the selected event whole (`views::event_detail`), as it does in the events view.

use super::nodegroups::{group_stack, groups_table};
use super::{Plan, Rows, Screen};
use crate::draw::node_summary::{heat_map_title, summary_line, verdict_lines, zone_groups, Timing};
use crate::draw::panes::nodegroups;
use crate::draw::tail::{event_line, tail_badges};
use crate::keys::{self, KeyAction, KeyContext};
use crate::model::{terminal_safe, Cluster, StackEvent};
use crate::progress::Progress;
use crate::resource_columns::short_duration;
use crate::state::dashboard_stacks;
use crate::state::store::{FetchMeta, Pending, Store};
use crate::state::view::{StackTarget, View, ViewKind};
use crate::state::yank::{pick, Yank};
use crate::state::App;
use crate::widgets::heatmap::{layout, scale_note, HeatMap};
use crate::widgets::table::cut_line_marked;
use crate::widgets::table::{pane_title, TableState};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use std::collections::HashSet;

pub struct Dashboard<'a> {
    pub cluster: &'a Cluster,
}

/// Lines a page key moves the tail's selection by.
const TAIL_PAGE: isize = 10;

impl Dashboard<'_> {
    /// The tail's keys while it has them: whether `action` was one.
    fn tail_key(&self, app: &mut App, action: KeyAction) -> bool {
        match action {
            KeyAction::Back => app.view_mut().tail_pick.focused = false,
            KeyAction::Up => self.move_pick(app, -1),
            KeyAction::Down => self.move_pick(app, 1),
            KeyAction::PageUp => self.move_pick(app, -TAIL_PAGE),
            KeyAction::PageDown => self.move_pick(app, TAIL_PAGE),
            KeyAction::Top => self.move_pick(app, isize::MIN),
            // The newest event, and the ones after it as they come.
            KeyAction::Bottom | KeyAction::Follow => app.view_mut().tail_pick.event = None,
            KeyAction::Open => self.open_event(app),
            _ => return false,
        }
        true
    }

    /// Move the tail's selection by `by` events (older when negative).
    fn move_pick(&self, app: &mut App, by: isize) {
        let cluster = app.store().current_cluster(self.cluster);
        let tail = whole_tail(app, app.store(), cluster);
        let Some(at) = picked(&tail, app.view().tail_pick.event.as_ref()) else {
            return;
        };
        let to = at
            .saturating_add_signed(by)
            .min(tail.len().saturating_sub(1));
        let event = tail.get(to).map(|(log, e)| (log.to_string(), e.id.clone()));
        app.view_mut().tail_pick.event = event;
    }

    /// The selected event of the tail with the stack whose log holds it.
    fn picked_event(&self, app: &App) -> Option<(StackTarget, StackEvent)> {
        let cluster = app.store().current_cluster(self.cluster);
        let tail = whole_tail(app, app.store(), cluster);
        let at = picked(&tail, app.view().tail_pick.event.as_ref())?;
        let &(log, e) = tail.get(at)?;
        let stack = StackTarget {
            id: log.to_string(),
            name: None,
        };
        Some((stack, e.clone()))
    }

    /// The selected event as the store holds it (the newest of the tail's logs when none
    /// is picked), for `y` / `Y`.
    fn tail_event<'s>(&self, s: &'s Store, v: &View) -> Option<&'s StackEvent> {
        if let Some((log, id)) = &v.tail_pick.event {
            return s.events.get(log)?.events.iter().find(|e| &e.id == id);
        }
        let cluster = s.current_cluster(self.cluster);
        let groups = s
            .nodegroups
            .get(&cluster.id)
            .and_then(|g| g.data.as_deref());
        dashboard_stacks(cluster, groups.unwrap_or_default())
            .iter()
            .filter_map(|st| s.events.get(&st.id)?.events.last())
            .max_by_key(|e| e.time)
    }

    /// Enter in the tail: the selected event whole.
    fn open_event(&self, app: &mut App) {
        match self.picked_event(app) {
            Some((stack, event)) => app.push(ViewKind::Event { stack, event }),
            None => app.set_status(crate::state::Level::Info, "no event in the tail"),
        }
    }
}

impl Screen for Dashboard<'_> {
    /// `y` / `Y`: see `state::yank`.
    /// With the tail's keys, the selected event's (as in the events view).
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let id = what == Yank::Id;
        if v.tail_pick.focused {
            let e = self.tail_event(s, v)?;
            let (event, resource) = (("event id", &*e.id), ("resource name", &*e.resource_name));
            return Some(pick(id, event, resource));
        }
        super::nodegroups::yank_group(s, v, self.cluster, id)
    }

    fn title(&self) -> &'static str {
        "Dashboard"
    }

    fn crumb(&self) -> String {
        self.cluster.name.clone()
    }

    fn key_contexts(&self) -> &'static [KeyContext] {
        keys::DASHBOARD_VIEW
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        store.nodegroups.get(&self.cluster.id).map(|s| &s.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        let cluster = self.cluster;
        // The header's counts come from the cluster's row: read it alone (the whole list
        // costs two requests per cluster of the cloud), and patch it into the list.
        app.want_cluster(cluster, p.force, p.now, p.every);
        app.want_nodegroups(cluster, p.force, p.now, p.every);
        let groups = app
            .store()
            .nodegroups
            .get(&cluster.id)
            .and_then(|s| s.data.clone())
            .unwrap_or_default();
        for g in &groups {
            app.want_nodes(g, p.force, p.now, p.every * 2);
            app.want_update(cluster, g, p.force);
        }
        if !p.paused {
            for stack in dashboard_stacks(cluster, &groups) {
                app.want_events(&stack, p.force, p.now, p.every);
            }
        }
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        groups_table(store, self.cluster)
    }

    /// The node group pane is a short table above the heat map and the tail.
    fn page(&self, _height: u16) -> usize {
        5
    }

    fn node_streams(&self, store: &Store) -> HashSet<String> {
        store
            .nodegroups
            .get(&self.cluster.id)
            .and_then(|s| s.data.as_ref())
            .map(|gs| gs.iter().map(|g| g.id.clone()).collect())
            .unwrap_or_default()
    }

    fn context_stack(&self, app: &App) -> Option<StackTarget> {
        group_stack(app)
    }

    fn open(&self, app: &mut App) {
        app.nav_nodes();
    }

    /// `tab` moves the keys between the node groups and the event tail; while the tail has
    /// them, the table keys, Enter and Esc are its own.
    fn own_key(&self, app: &mut App, action: KeyAction) -> bool {
        let pick = &mut app.view_mut().tail_pick;
        if action == KeyAction::FocusTail {
            pick.focused = !pick.focused;
            return true;
        }
        pick.focused && self.tail_key(app, action)
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let cluster = app.store().current_cluster(self.cluster);
        draw_dashboard(app, view, cluster, app.store(), frame, area);
    }
}

// Drawing: cluster line, node groups, the fleet heat map of every node group, and the merged
// event tail of the cluster's stacks.

/// `masters 3 workers 40`; a plain stack (no roles) counts its nodes and node groups.
fn counts(c: &Cluster) -> String {
    match crate::service::plain_stack::is_plain_stack(c) {
        true => format!(
            "{} nodes in {} node groups ",
            c.node_count,
            c.nodegroup_count.unwrap_or(0)
        ),
        false => format!("masters {} workers {} ", c.master_count, c.node_count),
    }
}

fn cluster_line<'a>(app: &App, c: &Cluster) -> Line<'a> {
    let th = app.theme();
    let mut spans = vec![
        Span::styled(format!(" {} ", terminal_safe(&c.name)), th.title()),
        Span::styled(
            format!("{} ", terminal_safe(&c.status.raw)),
            th.status_style(c.status.state),
        ),
        Span::styled(format!("{} ", c.health.as_str()), th.health_style(c.health)),
        Span::styled(counts(c), Style::default().fg(th.fg)),
    ];
    if let Some(v) = &c.coe_version {
        spans.push(Span::styled(format!("{} ", terminal_safe(v)), th.muted()));
    }
    if let Some(r) = &c.status_reason {
        spans.push(Span::styled(
            format!("— {}", terminal_safe(r.lines().next().unwrap_or(""))),
            if c.status.is_failed() {
                Style::default().fg(th.failed)
            } else {
                th.muted()
            },
        ));
    }
    Line::from(spans)
}

/// The cluster line's figures are stale: its last read alone failed, and no list read
/// since has covered it. Says since when the figures are and what the cloud answered.
fn read_failed_line<'a>(app: &App, store: &Store, c: &Cluster) -> Option<Line<'a>> {
    let error = store.cluster_read_error(&c.id)?;
    let age = store
        .cluster_read_at(&c.id)
        .map(|t| {
            format!(
                "figures from {} ago",
                short_duration((app.now() - t).num_seconds())
            )
        })
        .unwrap_or_else(|| "figures as listed".into());
    let th = app.theme();
    Some(Line::from(vec![
        Span::styled(" ⚠ this cluster's last read failed", th.warning()),
        Span::styled(format!(" ({age}): "), th.muted()),
        Span::styled(
            terminal_safe(error.lines().next().unwrap_or("")).into_owned(),
            th.warning(),
        ),
    ]))
}

/// The newest `n` events over several logs, oldest first, each with the id of the stack whose
/// log it came from (its node group's stack: a member's event is emitted by the member's
/// nested stack, which names no node group).
fn merged_tail<'a>(
    app: &App,
    store: &'a Store,
    ids: &[String],
    n: usize,
) -> Vec<(&'a str, &'a StackEvent)> {
    let mut out: Vec<(&str, &StackEvent)> = Vec::new();
    for (id, log) in ids.iter().filter_map(|id| store.events.get_key_value(id)) {
        let start = log.events.len().saturating_sub(n);
        out.extend(
            log.events[start..]
                .iter()
                .filter(|e| !app.faults_only() || e.status.is_failed())
                .map(|e| (id.as_str(), e)),
        );
    }
    // Stable on time alone: each log is in Heat's order, which within a second is the only
    // record of which event came first (the ids are random UUIDs).
    out.sort_by_key(|(_, e)| e.time);
    let start = out.len().saturating_sub(n);
    out.split_off(start)
}

/// Every event of the dashboard's tail, oldest first, with the id of its log's stack: what
/// the tail's selection moves over (`Dashboard::move_pick`).
pub(crate) fn whole_tail<'a>(
    app: &App,
    store: &'a Store,
    cluster: &Cluster,
) -> Vec<(&'a str, &'a StackEvent)> {
    let groups = store
        .nodegroups
        .get(&cluster.id)
        .and_then(|s| s.data.as_deref())
        .unwrap_or_default();
    let ids: Vec<String> = dashboard_stacks(cluster, groups)
        .into_iter()
        .map(|s| s.id)
        .collect();
    merged_tail(app, store, &ids, usize::MAX)
}

/// The position of the selected event in `tail` (the newest when none is picked, or when
/// the picked one left the tail: faults only, or the log moved on).
fn picked(tail: &[(&str, &StackEvent)], pick: Option<&(String, String)>) -> Option<usize> {
    let found = pick.and_then(|(log, id)| {
        tail.iter()
            .position(|(l, e)| *l == log.as_str() && &e.id == id)
    });
    found.or(tail.len().checked_sub(1))
}

/// The `n` lines of the tail shown while its selection is at `at` of `len`: the newest
/// when the selection is among them, else a window that starts at the selection.
fn window(len: usize, n: usize, at: usize) -> std::ops::Range<usize> {
    let newest = len.saturating_sub(n);
    let start = at.min(newest);
    start..(start + n).min(len)
}

/// `store` holds what the dashboard composes: the node groups, their nodes and the events
/// of their stacks.
fn draw_dashboard(
    app: &App,
    view: &View,
    cluster: &Cluster,
    store: &Store,
    frame: &mut Frame,
    area: Rect,
) {
    let th = app.theme();
    let groups = store
        .nodegroups
        .get(&cluster.id)
        .and_then(|s| s.data.clone())
        .unwrap_or_default();
    let ng_h = (groups.len() as u16 + 3).clamp(4, 9);
    // A Cluster API cluster's trouble, which its Magnum status does not show: the first
    // node group whose servers failed, else the first stalled one.
    let mut verdicts: Vec<Vec<Line>> = groups
        .iter()
        .filter_map(|g| {
            let set = store.nodes.get(&g.id)?;
            let lines = verdict_lines(app, store, g, set, Some(&g.name), area.width as usize);
            (!lines.is_empty()).then_some(lines)
        })
        .collect();
    // Failures (drawn in the failed colour) before stalls.
    verdicts.sort_by_key(|l| {
        !l.first()
            .and_then(|l| l.spans.first())
            .is_some_and(|s| s.style.fg == Some(th.failed))
    });
    let verdict = verdicts.into_iter().next().unwrap_or_default();
    let read_failed = read_failed_line(app, store, cluster);
    let [head, ng_area, rest] = Layout::vertical([
        Constraint::Length(1 + read_failed.is_some() as u16 + verdict.len() as u16),
        Constraint::Length(ng_h),
        Constraint::Min(4),
    ])
    .areas(area);
    let mut head_lines = vec![cluster_line(app, cluster)];
    head_lines.extend(read_failed);
    head_lines.extend(verdict);
    // A line wider than the pane ends in `…`: the reason after the figures is what goes.
    let width = usize::from(head.width);
    let head_lines: Vec<Line> = head_lines
        .into_iter()
        .map(|l| cut_line_marked(l, width))
        .collect();
    frame.render_widget(Paragraph::new(head_lines), head);
    nodegroups(
        app,
        view,
        cluster,
        store.nodegroups.get(&cluster.id),
        frame,
        ng_area,
        !view.tail_pick.focused,
    );

    // Heat map over all node groups.
    let mut heat = Vec::new();
    let mut all_rows = Vec::new();
    let (mut ok, mut failed, mut total, mut done) = (0, 0, 0, true);
    let expected: usize = groups.iter().map(|g| g.node_count as usize).sum();
    // Each group's model (its rollout's when one is followed) and their sum for the cluster,
    // as computed when the facts came (`state::store::models`): the same figures as each group's
    // row in the node groups, its nodes pane and its rollout view.
    let idle = Progress::idle(app.now());
    for g in &groups {
        if let Some(set) = store.nodes.get(&g.id) {
            let progress = store.models.progress(&g.id).unwrap_or(&idle);
            heat.extend(zone_groups(set, &g.name, None, progress));
            all_rows.push(set);
            ok += set.ips_ok;
            failed += set.ips_failed;
            total += set.rows.len();
            done &= set.done;
        }
    }
    let progress = store.models.cluster_progress(&cluster.id).unwrap_or(&idle);
    let observed = store.models.cluster_observed(&cluster.id);
    let timing = Timing::compute(all_rows.iter().flat_map(|s| s.rows.iter()), app.now())
        .with_pending(
            all_rows
                .iter()
                .fold(Pending::default(), |p, s| p.or(s.pending)),
        );
    let inner_w = rest.width.saturating_sub(2);
    let map_max = (rest.height * 60 / 100).max(4);
    let map_h = if view.show_heat_map {
        (layout(&heat, inner_w, map_max.saturating_sub(3)).0 + 3).min(map_max)
    } else {
        0
    };
    let [map_area, tail_area] =
        Layout::vertical([Constraint::Length(map_h), Constraint::Min(3)]).areas(rest);
    if map_h > 0 {
        let note = scale_note(
            &heat,
            map_area.width.saturating_sub(2),
            map_area.height.saturating_sub(3),
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(th.border())
            .title(pane_title(
                heat_map_title(app, progress, note),
                map_area.width,
            ));
        let inner = block.inner(map_area);
        frame.render_widget(block, map_area);
        let [sum, map] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
        frame.render_widget(
            Paragraph::new(summary_line(
                app,
                progress,
                observed,
                &timing,
                Some((ok, failed, total, done)),
                (all_rows.len() == groups.len()).then_some(expected),
                sum.width,
            )),
            sum,
        );
        if heat.is_empty() {
            frame.render_widget(
                Paragraph::new(Span::styled(
                    "Loading nodes…",
                    Style::default().fg(th.in_progress),
                )),
                map,
            );
        } else {
            frame.render_widget(
                HeatMap {
                    groups: &heat,
                    theme: th,
                },
                map,
            );
        }
    }

    // Event tail.
    let ids: Vec<String> = dashboard_stacks(cluster, &groups)
        .into_iter()
        .map(|s| s.id)
        .collect();
    let focused = view.tail_pick.focused;
    // A picked event stays selected as new ones come: the tail scrolls, it does not follow.
    let mut badges = view.tail;
    badges.follow &= !(focused && view.tail_pick.event.is_some());
    // The tail with the keys has its border in the accent colour, as a focused table has.
    let (border, pick_hint) = match focused {
        true => (
            Style::default().fg(th.accent),
            "enter: event · tab: groups ",
        ),
        false => (th.border(), ""),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(pane_title(
            vec![
                Span::styled(
                    format!(" Events {} ", tail_badges(app, &badges)),
                    th.title(),
                ),
                Span::styled(pick_hint, th.muted()),
            ],
            tail_area.width,
        ));
    let inner = block.inner(tail_area);
    let errors: Vec<String> = ids
        .iter()
        .filter_map(|id| store.events.get(id).and_then(|l| l.meta.error.clone()))
        .collect();
    let mut lines: Vec<Line> = Vec::new();
    if let Some(e) = errors.first() {
        lines.push(Line::from(Span::styled(
            format!("events: {}", terminal_safe(e)),
            th.error(),
        )));
    }
    let n = (inner.height as usize).saturating_sub(lines.len());
    let ctx = app.row_ctx();
    // With the keys, the whole tail: the selection may be above the newest lines.
    let mut tail = merged_tail(app, store, &ids, if focused { usize::MAX } else { n });
    let mut selected = None;
    if let Some(at) = picked(&tail, view.tail_pick.event.as_ref()).filter(|_| focused) {
        let shown = window(tail.len(), n, at);
        selected = Some(at - shown.start);
        tail = tail.drain(shown).collect();
    }
    if tail.is_empty() && errors.is_empty() {
        lines.push(Line::from(Span::styled(
            "No events yet.",
            th.muted().add_modifier(Modifier::ITALIC),
        )));
    }
    // The node group whose stack's log held the event; the cluster when that stack holds
    // several groups (Magnum's default groups share the cluster stack) or none.
    let source = |log: &str| -> String {
        let mut owners = groups.iter().filter(|g| g.stack_id.as_deref() == Some(log));
        match (owners.next(), owners.next()) {
            (Some(g), None) => g.name.clone(),
            _ => cluster.name.clone(),
        }
    };
    lines.extend(tail.into_iter().enumerate().map(|(i, (log, e))| {
        let line = event_line(e, &ctx, Some(&source(log)));
        match selected == Some(i) {
            true => line.patch_style(th.selected()),
            false => line,
        }
    }));
    let width = usize::from(inner.width);
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| cut_line_marked(l, width))
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), tail_area);
}
