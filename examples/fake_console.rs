//! The console over the in-memory fake cloud, with a rolling upgrade in progress.
//!
//! ```text
//! cargo run --example fake_console -- [--nodes 1000] [--latency-ms 150] [--advance-ms 2000]
//!     [--theme NAME|PATH] [--config PATH] [--read-only] [--panic-after SECS] [--fail-clusters]
//!     [--production] [--no-operator] [--fail-node MEMBER] [--step-ms 1500]
//! ```
//! Actions (scale, upgrade, rollouts, node actions, the journal) go to a `FakeOperator`:
//! `--production` asks for the typed cluster name, `--no-operator` leaves the console
//! without actions, `--fail-node 3` makes member 3 fail its update.
//! `--panic-after` makes the fake panic inside the UI thread after SECS seconds, to
//! check that the terminal is restored before the panic message is printed.

use caldera::drivers::guard::Guard;
use caldera::service::operator::Operator;
use caldera::service::{ErrorKind, ServiceError};
use caldera::tui::{init_logging, log_path, run, ConsoleOptions};
use caldera_testkit::fake::{FakeCloud, FakeOp};
use caldera_testkit::fake_operator::FakeOperator;
use std::sync::Arc;
use std::time::Duration;

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let _guard = init_logging("info");
    let nodes: u32 = arg(&args, "--nodes").unwrap_or(1000);
    let latency: u64 = arg(&args, "--latency-ms").unwrap_or(150);
    let advance: u64 = arg(&args, "--advance-ms").unwrap_or(2000);
    let fake = FakeCloud::demo_at(chrono::Utc::now(), nodes);
    fake.set_latency(Duration::from_millis(latency));
    if args.iter().any(|a| a == "--fail-clusters") {
        fake.set_error(
            FakeOp::ListClusters,
            Some(ServiceError::new(
                ErrorKind::Transport,
                "GET /v1/clusters: connection refused",
            )),
        );
    }
    let ticker = fake.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(advance.max(100))).await;
            ticker.advance_to(chrono::Utc::now());
        }
    });
    if let Some(secs) = arg::<u64>(&args, "--panic-after") {
        let f = fake.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(secs)).await;
            f.with_data(|d| d.panic_on_info = true);
        });
    }
    let options = ConsoleOptions {
        theme: arg(&args, "--theme"),
        config_path: arg(&args, "--config"),
        read_only: args.iter().any(|a| a == "--read-only"),
        refresh: Duration::from_secs(2),
        ..ConsoleOptions::default()
    };
    let mut op = FakeOperator::new(fake.clone())
        .with_step(Duration::from_millis(
            arg(&args, "--step-ms").unwrap_or(1500),
        ))
        .with_guard(Guard {
            read_only: false,
            production: args.iter().any(|a| a == "--production"),
        });
    if let Some(m) = arg::<String>(&args, "--fail-node") {
        op = op.failing(&m);
    }
    let operator: Option<Arc<dyn Operator>> = if args.iter().any(|a| a == "--no-operator") {
        None
    } else {
        Some(Arc::new(op))
    };
    if let Err(e) = run(Arc::new(fake), operator, options).await {
        eprintln!("caldera: {e}");
        std::process::exit(1);
    }
    if let Some(p) = log_path() {
        eprintln!("log: {}", p.display());
    }
}
