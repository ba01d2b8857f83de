//! Heat's order of events, checked on a real Heat: `caldera events` prints a stack tree's events
//! in exactly the order Heat lists them, including the many that share a second.
//!
//! Heat stamps events to the second and lists them by `(created_at, id)`, `id` being its
//! database's insertion counter; the API shows random UUIDs. A ResourceGroup's members start
//! and finish within the same second, so sorting by `(time, uuid)` used to print a member's
//! `CREATE_COMPLETE` before its `CREATE_IN_PROGRESS`.
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it. Everything is on 127.0.0.1; every wait is bounded.

use crate::support::heat_wait;
use crate::support::heat_wait::delete_settled;

use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::{EventQuery, SortDir};
use caldera::templates::{nodegroup_stack, Machines};
use futures::StreamExt;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};

fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)")
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}{}x{nanos}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: scripts/real-heat-suite.sh"]
async fn events_come_out_in_heats_order_within_a_second() {
    let conn = CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to the real Heat");
    let heat = &conn.heat;
    let name = unique("rhorder");
    let params: BTreeMap<String, serde_json::Value> =
        serde_json::from_value(json!({"count": 12, "action_wait_secs": 0})).expect("parameters");
    let create = nodegroup_stack(&name, Machines::Test, params).expect("templates parse");
    let stack = heat.create_stack(&create).await.expect("create accepted");
    heat_wait::wait_status(heat, &stack, "CREATE_COMPLETE").await;

    // Heat's own order: one ascending listing of the whole tree.
    let mut truth: Vec<(String, String)> = Vec::new();
    let mut listing = Box::pin(heat.list_events(
        stack.clone(),
        EventQuery {
            nested_depth: Some(2),
            sort_dir: Some(SortDir::Asc),
            ..Default::default()
        },
    ));
    while let Some(e) = listing.next().await {
        let e = e.expect("listing");
        truth.push((e.id.clone(), e.time.to_rfc3339()));
    }
    let mut per_second: HashMap<&str, usize> = HashMap::new();
    for (_, t) in &truth {
        *per_second.entry(t.as_str()).or_default() += 1;
    }
    let crowded = per_second.values().filter(|n| **n > 1).count();
    assert!(
        crowded > 0,
        "no two events shared a second: the check below would prove nothing"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args([
            "events",
            &name,
            "--nested-depth",
            "2",
            "--format",
            "csv",
            "--heat-url",
            &heat_url(),
            "--log-file",
        ])
        .arg(dir.path().join("caldera.log"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env_remove("OS_CLOUD")
        .env_remove("OS_CLIENT_CONFIG_FILE")
        .output()
        .await
        .expect("caldera runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap_or_default())
        .collect();
    let heat_order: Vec<&str> = truth.iter().map(|(id, _)| id.as_str()).collect();
    let mut by_uuid = truth.clone();
    by_uuid.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let moved_by_uuid = by_uuid
        .iter()
        .zip(&truth)
        .filter(|(a, b)| a.0 != b.0)
        .count();
    println!(
        "real Heat: {} events, {crowded} seconds holding several; sorting by (time, uuid) would move {moved_by_uuid}",
        truth.len()
    );
    assert_eq!(
        printed, heat_order,
        "caldera printed Heat's events in Heat's order"
    );
    delete_settled(heat, &stack).await;
}
