//! What the real-Heat suites share: the Heat's URL (`HEAT_URL`, set by
//! `scripts/real-heat-suite.sh`), a connection to it, stack names unique on a shared Heat,
//! and the stack-shape fixtures (`tests/fixtures/shapes`).
#![allow(dead_code)]

use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::HeatClient;
use std::path::PathBuf;

pub fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)")
}

pub async fn connect() -> CloudConnection {
    CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to the real Heat")
}

pub async fn heat() -> HeatClient {
    connect().await.heat
}

/// `prefix-PID-NANOS`: unique on a Heat other suites share.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// A template of `tests/fixtures/shapes`.
pub fn fixture(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/shapes")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}
