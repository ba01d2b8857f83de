//! The fleet view's state: the clusters of every cloud in clouds.yaml, streamed in as each
//! cloud answers (`ops::fleet`). A new scan replaces a cloud's rows when that cloud answers,
//! so the table never empties while the slow clouds are still being asked.

use super::action_dialogs::Dialog;
use super::store::{FetchMeta, Settled};
use super::{App, Level, Mode};
use crate::ops::fleet::{FleetReport, FleetRow};
use crate::service::ServiceResult;
use crate::tui::message::Request;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// A fleet scan asks every cloud for a token and its clusters: not every few seconds.
const FLEET_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Default)]
pub struct FleetLog {
    pub meta: FetchMeta,
    pub rows: Vec<FleetRow>,
    /// Clouds that answered the scan under way (or the last one).
    pub answered: usize,
}

impl FleetLog {
    /// One cloud's answer: its rows replace the ones it gave last time, in place.
    pub fn answer(&mut self, gen: u64, report: &FleetReport, now: DateTime<Utc>) {
        if !self.meta.accept(gen) {
            return;
        }
        let fresh = report.rows(now);
        let at = self.rows.iter().position(|r| r.cloud == report.cloud);
        self.rows.retain(|r| r.cloud != report.cloud);
        let at = at.unwrap_or(self.rows.len()).min(self.rows.len());
        self.rows.splice(at..at, fresh);
        self.answered += 1;
        self.meta.version += 1;
        self.meta.fetched_at = Some(now);
    }

    /// The scan ended: every cloud answered, or there was nothing to ask.
    pub fn done(&mut self, gen: u64, result: ServiceResult<()>, now: DateTime<Utc>) {
        let fetched = self.meta.fetched_at;
        if let Settled::Fresh(()) = self.meta.settle(gen, result, now) {
            // Ending is not data: the age shown is the last cloud's answer.
            self.meta.fetched_at = fetched.or(Some(now));
        }
    }

    /// Clouds whose row says they gave no clusters (unreachable, refused, misconfigured).
    pub fn clouds_down(&self) -> usize {
        self.rows.iter().filter(|r| r.is_cloud_problem()).count()
    }
}

/// Everything a row holds, for the detail overlay.
pub fn row_lines(r: &FleetRow) -> Vec<String> {
    let mut out = vec![
        format!("cloud    {}", r.cloud),
        format!("region   {}", r.region),
    ];
    if !r.cluster.is_empty() {
        out.push(format!("cluster  {}", r.cluster));
        out.push(format!("driver   {}", r.driver));
        out.push(format!("health   {}", r.health));
        out.push(format!("masters/workers  {}", r.counts()));
        out.push(format!("in state {}", r.in_state));
    }
    out.push(format!("status   {}", r.status));
    out
}

impl App {
    /// Enter on a fleet row: the row whole, in an overlay.
    pub(crate) fn fleet_detail(&mut self) {
        let v = self.view();
        let Some(row) = v.table.selected(&self.store.fleet.rows) else {
            self.set_status(Level::Warn, "no fleet row selected");
            return;
        };
        let title = match row.cluster.as_str() {
            "" => format!("cloud {}", row.cloud),
            cluster => format!("{} on {}", cluster, row.cloud),
        };
        let lines = row_lines(row);
        self.mode = Mode::Dialog(Box::new(Dialog::Text {
            title,
            lines,
            scroll: 0,
        }));
    }

    pub(crate) fn want_fleet(&mut self, force: bool) {
        let now = self.now;
        let meta = &self.store.fleet.meta;
        if !(meta.due(now, FLEET_EVERY) || (force && !meta.in_flight)) {
            return;
        }
        let gen = self.gen();
        self.store.fleet.meta.begin(gen, now);
        self.store.fleet.answered = 0;
        self.outbox.push(Request::Fleet { gen });
    }
}
