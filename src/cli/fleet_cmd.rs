//! `caldera fleet`: the clusters of every cloud in clouds.yaml, each cloud asked at once on
//! its own connection (see `service::fleet_scan`). A cloud that does not answer is a row saying so.

use super::args::ConnectArgs;
use super::output::{CmdResult, Format, Table};
use crate::config::DiscoveryEnv;
use crate::service::fleet_scan::{FleetReport, FleetSource, LiveFleet};
use futures::StreamExt;
use std::time::Duration;

/// The table's columns (JSON keys), one row per cluster or per cloud that gave none.
pub const COLUMNS: [&str; 9] = [
    "cloud", "region", "cluster", "status", "in_state", "health", "masters", "workers", "driver",
];

pub async fn run(conn: &ConnectArgs, cloud_timeout: f64, format: Format) -> CmdResult {
    let options = super::connect::connect_options(conn)?;
    let per_cloud = Duration::try_from_secs_f64(cloud_timeout.clamp(0.1, 3600.0))
        .unwrap_or(crate::service::fleet_scan::DEFAULT_CLOUD_TIMEOUT);
    let fleet = LiveFleet::discover(&DiscoveryEnv::from_process(), options, per_cloud)?;
    let names = fleet.names();
    let mut reports: Vec<FleetReport> = Vec::with_capacity(names.len());
    let mut answers = fleet.scan();
    while let Some(report) = answers.next().await {
        eprintln!(
            "{}: {}",
            crate::model::terminal_safe(&report.cloud),
            summary(&report)
        );
        reports.push(report);
    }
    // The table in clouds.yaml's order, whatever order the answers came in.
    reports.sort_by_key(|r| names.iter().position(|n| *n == r.cloud));
    super::commands::print_table(&table(&reports, chrono::Utc::now()), format)
}

/// One line on stderr per cloud as it answers: progress, not data.
fn summary(report: &FleetReport) -> String {
    use crate::service::fleet_scan::FleetAnswer;
    match &report.answer {
        FleetAnswer::Clusters(c) => format!("{} clusters", c.len()),
        FleetAnswer::AuthFailed(_) => "auth failed".into(),
        FleetAnswer::Unreachable(_) => "unreachable".into(),
        FleetAnswer::BadConfig(_) => "bad config".into(),
    }
}

pub fn table(reports: &[FleetReport], now: chrono::DateTime<chrono::Utc>) -> Table {
    let mut t = Table::new(COLUMNS).numbers(&["masters", "workers"]);
    let count = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
    for row in reports.iter().flat_map(|r| r.rows(now)) {
        t.push([
            row.cloud,
            row.region,
            row.cluster,
            row.status,
            row.in_state,
            row.health,
            count(row.masters),
            count(row.workers),
            row.driver,
        ]);
    }
    t
}
