//! Simple table panes (clusters, stacks, node groups) and the shared
//! loading / error / stale handling.

use crate::model::{terminal_safe, Cluster, NodeGroup, StackSummary};
use crate::state::store::{FetchMeta, Slot};
use crate::state::view::View;
use crate::state::App;
use crate::widgets::table::{draw_table, pane_title, Column, TableLook, TableRow, TableState};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// Draw a table, or "loading" / the error where the table would be; a stale marker
/// with the error in the title when old data is shown after a failed refresh.
#[allow(clippy::too_many_arguments)]
pub fn data_table<T: TableRow>(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    title: &str,
    items: Option<&[T]>,
    meta: Option<&FetchMeta>,
    columns: &[Column<T>],
    table: &TableState,
    empty_text: &str,
    focused: bool,
) {
    let th = app.theme();
    let ctx = app.row_ctx();
    match items {
        Some(items) => {
            let mut badges = Vec::new();
            if let Some(e) = meta.and_then(|m| m.error.as_deref()) {
                badges.push(Span::styled(
                    format!(" STALE: {e} "),
                    Style::default().fg(th.badge_fg).bg(th.error),
                ));
            }
            draw_table(
                frame,
                area,
                items,
                columns,
                table,
                &ctx,
                TableLook {
                    title,
                    badges,
                    focused,
                    empty_text,
                },
            );
        }
        None => message_box(app, frame, area, title, meta),
    }
}

/// The box shown where data is not (yet) available.
pub fn message_box(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    title: &str,
    meta: Option<&FetchMeta>,
) {
    let th = app.theme();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(th.border())
        .title(pane_title(
            Span::styled(format!(" {} ", terminal_safe(title)), th.title()),
            area.width,
        ));
    let lines: Vec<Line> = match meta {
        Some(m) if m.error.is_some() => vec![
            Line::from(Span::styled("Could not load:", th.error())),
            Line::from(Span::styled(
                terminal_safe(m.error.as_deref().unwrap_or_default()).into_owned(),
                Style::default().fg(th.error),
            )),
            Line::from(Span::styled(
                format!(
                    "retrying every {}s · r to retry now",
                    m.every.unwrap_or(app.refresh()).as_secs().max(1)
                ),
                th.muted(),
            )),
        ],
        _ => vec![Line::from(Span::styled(
            "Loading…",
            Style::default()
                .fg(th.in_progress)
                .add_modifier(Modifier::ITALIC),
        ))],
    };
    frame.render_widget(
        Paragraph::new(lines).block(block).wrap(Wrap { trim: true }),
        area,
    );
}

pub fn clusters(app: &App, view: &View, slot: &Slot<Vec<Cluster>>, frame: &mut Frame, area: Rect) {
    data_table(
        app,
        frame,
        area,
        "Clusters",
        slot.data.as_deref(),
        Some(&slot.meta),
        &crate::resource_columns::CLUSTER_COLUMNS,
        &view.table,
        if app.info().has_magnum {
            "No clusters in this project."
        } else {
            // A Heat-only cloud: an empty list would read as "no clusters exist".
            "No Magnum endpoint on this cloud, so no clusters to list. Heat stacks: :stacks"
        },
        true,
    );
}

pub fn stacks(
    app: &App,
    view: &View,
    slot: &Slot<Vec<StackSummary>>,
    frame: &mut Frame,
    area: Rect,
) {
    data_table(
        app,
        frame,
        area,
        "Stacks",
        slot.data.as_deref(),
        Some(&slot.meta),
        &crate::resource_columns::STACK_COLUMNS,
        &view.table,
        "No stacks in this project.",
        true,
    );
}

pub fn nodegroups(
    app: &App,
    view: &View,
    cluster: &Cluster,
    slot: Option<&Slot<Vec<NodeGroup>>>,
    frame: &mut Frame,
    area: Rect,
    focused: bool,
) {
    let title = format!("Node groups of {}", cluster.name);
    data_table(
        app,
        frame,
        area,
        &title,
        slot.and_then(|s| s.data.as_deref()),
        slot.map(|s| &s.meta),
        &crate::resource_columns::NODEGROUP_COLUMNS,
        &view.table,
        "This cluster has no node groups.",
        focused,
    );
}
