//! The fleet: the clusters of every cloud in clouds.yaml, one row per cluster, a cloud that
//! did not answer as one row saying why (`unreachable: …`, `auth failed: …`). Rows arrive
//! as each cloud answers; each cloud is asked on its own connection and time bound.

use super::{Plan, Rows, Screen, Table};
use crate::draw::panes::data_table;
use crate::keys::KeyAction;
use crate::resource_columns::in_state_key;
use crate::service::fleet_scan::FleetRow;
use crate::state::store::{FetchMeta, Store};
use crate::state::view::View;
use crate::state::yank::{pick, Yank};
use crate::state::App;
use crate::widgets::table::{muted, plain, Column, RowCtx, SortKey, TableRow, TableState};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::Frame;
use std::borrow::Cow;
use std::sync::LazyLock;

pub struct Fleet;

pub static FLEET_COLUMNS: LazyLock<Vec<Column<FleetRow>>> = LazyLock::new(fleet_columns);

impl TableRow for FleetRow {
    /// A cloud's own row has no cluster: the cloud alone names it.
    fn row_id(&self) -> Cow<'_, str> {
        Cow::Owned(format!("{}/{}", self.cloud, self.cluster))
    }
    fn is_fault(&self) -> bool {
        self.is_cloud_problem() || status_of(self).is_failed()
    }
}

fn status_of(r: &FleetRow) -> crate::model::Status {
    crate::model::Status::parse(&r.status)
}

/// A cloud's own row in the error colour; a cluster's status in its state's.
fn status_style(r: &FleetRow, ctx: &RowCtx) -> Style {
    if r.is_cloud_problem() {
        return ctx.theme.error();
    }
    crate::resource_columns::status_style(&status_of(r), ctx)
}

fn fleet_columns() -> Vec<Column<FleetRow>> {
    vec![
        Column {
            title: "CLOUD",
            hide_below: 0,
            width: Constraint::Length(12),
            text: |r, _| r.cloud.clone(),
            sort: |r, _| SortKey::str(&r.cloud),
            style: |_, ctx| {
                Style::default()
                    .fg(ctx.theme.fg)
                    .add_modifier(Modifier::BOLD)
            },
        },
        Column {
            title: "REGION",
            hide_below: 100,
            width: Constraint::Length(11),
            text: |r, _| r.region.clone(),
            sort: |r, _| SortKey::str(&r.region),
            style: muted,
        },
        Column {
            title: "CLUSTER",
            hide_below: 0,
            width: Constraint::Length(16),
            text: |r, _| r.cluster.clone(),
            sort: |r, _| SortKey::str(&r.cluster),
            style: plain,
        },
        Column {
            title: "STATUS",
            hide_below: 0,
            width: Constraint::Fill(2),
            text: |r, _| r.status.clone(),
            sort: |r, _| SortKey::str(&r.status),
            style: status_style,
        },
        Column {
            title: "IN STATE",
            hide_below: 0,
            width: Constraint::Length(8),
            text: |r, _| r.in_state.clone(),
            // By the time itself, as the cluster and node-group tables: `12m` before `3h`.
            sort: |r, _| in_state_key(r.since),
            style: plain,
        },
        Column {
            title: "HEALTH",
            hide_below: 90,
            width: Constraint::Length(9),
            text: |r, _| r.health.clone(),
            sort: |r, _| SortKey::str(&r.health),
            style: |r, ctx| {
                ctx.theme
                    .health_style(crate::model::Health::parse(Some(&r.health)))
            },
        },
        Column {
            title: "M/W",
            hide_below: 0,
            width: Constraint::Length(9),
            text: |r, _| r.counts(),
            sort: |r, _| SortKey::opt_int(r.masters.zip(r.workers).map(|(m, w)| i64::from(m + w))),
            style: plain,
        },
        Column {
            title: "DRIVER",
            hide_below: 120,
            width: Constraint::Length(18),
            text: |r, _| r.driver.clone(),
            sort: |r, _| SortKey::str(&r.driver),
            style: muted,
        },
    ]
}

impl Screen for Fleet {
    /// `y` / `Y`: the cloud's name (what `--cloud` takes) or the cluster's.
    fn yank(&self, s: &Store, v: &View, what: Yank) -> Option<(&'static str, String)> {
        let r = v.table.selected(&s.fleet.rows)?;
        if r.cluster.is_empty() {
            return Some(("cloud name", r.cloud.clone()));
        }
        Some(pick(
            what == Yank::Id,
            ("cloud name", &r.cloud),
            ("cluster name", &r.cluster),
        ))
    }

    fn title(&self) -> &'static str {
        "Fleet"
    }

    /// Rows of other clouds: nothing to mark, and no stack or dashboard on this connection
    /// to open from them. Enter shows the row whole (a long reason is cut in the table).
    fn offers(&self, action: KeyAction) -> bool {
        !matches!(
            action,
            KeyAction::Mark
                | KeyAction::ClearMarks
                | KeyAction::Dashboard
                | KeyAction::Events
                | KeyAction::Tree
                | KeyAction::Outputs
        )
    }

    fn open(&self, app: &mut App) {
        app.fleet_open();
    }

    fn crumb(&self) -> String {
        "fleet".into()
    }

    fn meta<'s>(&self, store: &'s Store) -> Option<&'s FetchMeta> {
        Some(&store.fleet.meta)
    }

    fn plan(&self, app: &mut App, p: Plan) {
        app.want_fleet(p.force);
    }

    fn table<'s>(
        &self,
        store: &'s Store,
        _state: &TableState,
        _faults: bool,
    ) -> Option<Box<dyn Rows + 's>> {
        let fleet = &store.fleet;
        Table::boxed(&fleet.rows, &FLEET_COLUMNS, fleet.meta.version)
    }

    fn draw(&self, app: &App, view: &View, frame: &mut Frame, area: Rect) {
        let fleet = &app.store().fleet;
        let loaded = fleet.meta.fetched_at.is_some() || !fleet.rows.is_empty();
        let title = match (fleet.meta.in_flight, fleet.clouds_down()) {
            (true, _) => format!("Fleet ({} clouds answered, asking…)", fleet.answered),
            (false, 0) => format!("Fleet ({} clouds)", fleet.answered),
            (false, down) => format!("Fleet ({} clouds, {down} not answering)", fleet.answered),
        };
        data_table(
            app,
            frame,
            area,
            &title,
            loaded.then_some(fleet.rows.as_slice()),
            Some(&fleet.meta),
            &FLEET_COLUMNS,
            &view.table,
            "No cloud in clouds.yaml.",
            true,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theme::Theme;
    use chrono::{DateTime, Utc};

    /// A cluster's row `ago` seconds in its status (its text as the scan wrote it).
    fn row(cluster: &str, now: DateTime<Utc>, ago: Option<i64>) -> FleetRow {
        let since = ago.map(|s| now - chrono::Duration::seconds(s));
        FleetRow {
            cloud: "prod".into(),
            region: "RegionOne".into(),
            cluster: cluster.into(),
            status: "CREATE_IN_PROGRESS".into(),
            in_state: since
                .map(|t| crate::model::short_duration((now - t).num_seconds()))
                .unwrap_or_default(),
            since,
            health: "UNKNOWN".into(),
            masters: Some(1),
            workers: Some(2),
            driver: "magnum".into(),
            answered: true,
        }
    }

    fn sorted_by_in_state(rows: &[FleetRow], now: DateTime<Utc>, descending: bool) -> Vec<&str> {
        let theme = Theme::default_theme();
        let ctx = RowCtx {
            now,
            theme: &theme,
            abs_time: false,
            models: None,
        };
        let column = FLEET_COLUMNS.iter().position(|c| c.title == "IN STATE");
        let mut table = TableState::default();
        table.sort.column = column;
        table.sort.descending = descending;
        table.sync(rows, &FLEET_COLUMNS, &ctx, 1, false);
        table
            .view()
            .iter()
            .map(|&i| rows[i].cluster.as_str())
            .collect()
    }

    /// `3h`, `12m` and `45s` as text sort `12m`, `3h`, `45s`; by the time they are `45s`,
    /// `12m`, `3h`, and a row without a time (a cloud that gave none) stays last either way.
    #[test]
    fn in_state_sorts_by_the_duration_not_the_text() {
        let now = crate::service::fake::demo_epoch();
        let rows = [
            row("three-hours", now, Some(3 * 3600)),
            row("unknown", now, None),
            row("twelve-minutes", now, Some(12 * 60)),
            row("seconds", now, Some(45)),
        ];
        assert_eq!(rows[0].in_state, "3h");
        assert_eq!(rows[2].in_state, "12m");
        assert_eq!(
            sorted_by_in_state(&rows, now, false),
            ["seconds", "twelve-minutes", "three-hours", "unknown"]
        );
        assert_eq!(
            sorted_by_in_state(&rows, now, true),
            ["three-hours", "twelve-minutes", "seconds", "unknown"]
        );
    }
}
