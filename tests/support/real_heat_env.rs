//! The real Heat the action suites drive (`tests/real_heat/actions.rs`,
//! `tests/real_heat/control.rs`): its URL, a scenario environment on it, and stack names
//! unique on a shared Heat.

use super::scenarios::Env;
use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use std::time::Duration;

pub fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)")
}

pub async fn env() -> Env {
    let conn = CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to the real Heat");
    Env::new(
        conn.heat.clone(),
        Duration::from_millis(500),
        Duration::from_secs(240),
        // Heat's event times have whole seconds: a member update must outlast a second for
        // an overlap of two batches to show in the no-overlap check.
        1,
    )
}

/// Stack names must be unique on a shared Heat.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}{}x{nanos}", std::process::id())
}
