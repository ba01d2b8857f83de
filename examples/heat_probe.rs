//! Exercise the Heat client by hand against a no-auth Heat:
//! `cargo run --example heat_probe -- http://127.0.0.1:8004/v1/admin [stack-name]`
//! Read-only: lists stacks, resolves one, shows it without outputs, lists its resources and
//! the last events.

use caldera::api::heat::{EventQuery, HeatClient, ResourceQuery, SortDir, StackListQuery};
use caldera::api::http::{Transport, TransportConfig};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use std::time::Instant;

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8004/v1/admin".to_string());
    let mut headers = HeaderMap::new();
    headers.insert("X-Auth-User", HeaderValue::from_static("admin"));
    headers.insert("X-Auth-Project", HeaderValue::from_static("admin"));
    let transport = Transport::new(&TransportConfig::default())?.with_headers(headers);
    let heat = HeatClient::new(transport.clone(), &base)?;

    let t = Instant::now();
    let mut stacks = Box::pin(heat.list_stacks(StackListQuery {
        limit: Some(2),
        ..StackListQuery::default()
    }));
    let mut names = Vec::new();
    while let Some(s) = stacks.next().await {
        let s = s?;
        println!(
            "stack {} {} {}",
            s.stack.path(),
            s.status,
            s.status_reason.unwrap_or_default()
        );
        names.push(s.stack.name);
    }
    println!("listed {} stacks in {:?}", names.len(), t.elapsed());
    let Some(name) = args.next().or_else(|| names.first().cloned()) else {
        return Ok(());
    };
    let stack = heat.resolve(&name).await?;
    println!("resolved {name} -> {}", stack.path());
    let detail = heat.get_stack(&stack, false).await?;
    println!(
        "show: {} params={}",
        detail.summary.status,
        detail.parameters.len()
    );
    let t = Instant::now();
    let res = heat
        .list_resources(
            &stack,
            &ResourceQuery {
                nested_depth: Some(2),
                ..ResourceQuery::default()
            },
        )
        .await?;
    println!(
        "{} resources (nested_depth=2) in {:?}",
        res.len(),
        t.elapsed()
    );
    let events = heat
        .list_events_page(
            &stack,
            &EventQuery {
                limit: Some(5),
                sort_dir: Some(SortDir::Desc),
                nested_depth: Some(1),
                ..EventQuery::default()
            },
        )
        .await?;
    for e in events {
        println!(
            "event {} {} {} [{}]",
            e.time,
            e.resource_name,
            e.status,
            e.stack.map(|s| s.name).unwrap_or_default()
        );
    }
    match heat.resolve("no-such-stack-caldera").await {
        Ok(s) => println!("unexpected: {}", s.path()),
        Err(e) => println!("expected error: {e}"),
    }
    println!("budget: {:?}", transport.budget().stats());
    Ok(())
}
