//! Soak: follows events and streams the nodes of a big node group in a loop while the
//! simulator churns (rollout after rollout on a compressed clock, members failing and
//! recovering, a background rate of 503s and dropped connections, short-lived tokens),
//! sampling the process's memory (VmRSS) and the follower's state every few seconds.
//!
//! `cargo run --release --example soak -- --minutes 5 [--members 300] [--speed 40]
//!  [--sample-secs 5] [--fault-rate 0.02] [--max-events 200] [--no-client]`
//!
//! Not part of `cargo test`: it runs for minutes. The simulator runs in this process (its
//! faults are driven from here), so VmRSS covers client and simulator; both must be flat.

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::api::heat::{EventQuery, SortDir, StackUpdate};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, EventCursor, NodeUpdate};
use caldera::sim::{self, Fault, FaultKind, SimOptions};
use futures::StreamExt;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

struct Args {
    minutes: f64,
    members: u32,
    speed: f64,
    sample_secs: u64,
    fault_rate: f64,
    /// Heat's `max_events_per_stack`: what the simulator retains per stack.
    max_events: usize,
    /// Churn only, no follower or streamer: the simulator's own share of the memory.
    no_client: bool,
}

fn args() -> Args {
    let mut a = Args {
        minutes: 5.0,
        members: 300,
        speed: 40.0,
        sample_secs: 5,
        fault_rate: 0.02,
        max_events: 200,
        no_client: false,
    };
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = argv.iter().position(|x| x == "--no-client") {
        a.no_client = true;
        argv.remove(i);
    }
    for pair in argv.chunks(2) {
        let v = pair.get(1).map(String::as_str).unwrap_or("");
        match pair[0].as_str() {
            "--minutes" => a.minutes = v.parse().unwrap_or(a.minutes),
            "--members" => a.members = v.parse().unwrap_or(a.members),
            "--speed" => a.speed = v.parse().unwrap_or(a.speed),
            "--sample-secs" => a.sample_secs = v.parse().unwrap_or(a.sample_secs),
            "--fault-rate" => a.fault_rate = v.parse().unwrap_or(a.fault_rate),
            "--max-events" => a.max_events = v.parse().unwrap_or(a.max_events),
            other => eprintln!("soak: ignoring unknown argument {other}"),
        }
    }
    a
}

#[derive(Default)]
struct Counters {
    events: AtomicU64,
    duplicates: AtomicU64,
    poll_errors: AtomicU64,
    polls: AtomicU64,
    stream_rounds: AtomicU64,
    stream_errors: AtomicU64,
    addresses: AtomicU64,
    address_failures: AtomicU64,
    rollouts: AtomicU64,
    rollout_refused: AtomicU64,
    nodes_failed: AtomicU64,
    /// Ids the follower's cursor remembers.
    cursor: Mutex<usize>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = args();
    let rss_start = rss_mb();
    let scenario = format!("bench-{}", a.members);
    let sim = sim::start(SimOptions {
        scenario: scenario.clone(),
        speed: a.speed,
        token_ttl: Duration::from_secs(90),
        max_events_per_stack: a.max_events,
        output_cost_per_member: Duration::from_millis(1),
        detail_cost_per_resource: Duration::ZERO,
        ..SimOptions::default()
    })
    .await?;
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default()).await?;
    let svc = Arc::new(LiveService::new(conn.clone()));
    let clusters = svc.list_clusters().await?;
    let cluster = clusters
        .into_iter()
        .find(|c| c.name == scenario)
        .ok_or("no bench cluster")?;
    let worker = svc
        .list_nodegroups(cluster)
        .await?
        .into_iter()
        .find(|g| g.name == "default-worker")
        .ok_or("no worker group")?;
    let stack = conn
        .heat
        .resolve(worker.stack_id.as_deref().ok_or("no stack")?)
        .await?;
    let c = Arc::new(Counters::default());
    let stop = tokio_util::sync::CancellationToken::new();
    let faults = sim.faults();
    faults.add(Fault::new(FaultKind::Status(503)).rate(a.fault_rate));
    faults.add(Fault::new(FaultKind::Drop).rate(a.fault_rate / 2.0));

    // Churn: a new image whenever the group is idle; sometimes a member fails (and the
    // next rollout, with the node faults healed, recovers it).
    let churn = {
        let (c, stop, heat, stack, faults) = (
            c.clone(),
            stop.clone(),
            conn.heat.clone(),
            stack.clone(),
            sim.faults(),
        );
        let status_of = {
            let id = stack.id.clone();
            move |sim: &sim::SimHandle| {
                sim.with_world(|w| {
                    w.find_stack(&id)
                        .and_then(|ix| w.stack(ix))
                        .map(|s| s.status.to_string())
                        .unwrap_or_default()
                })
            }
        };
        let sim_ref = &sim;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut version = 1u64;
        let members = a.members;
        async move {
            while !stop.is_cancelled() {
                let status = status_of(sim_ref);
                if !status.contains("IN_PROGRESS") {
                    faults.heal_nodes(&stack.id);
                    if rng.gen_bool(0.3) {
                        for _ in 0..rng.gen_range(1..4) {
                            if faults.fail_node(
                                &stack.id,
                                rng.gen_range(0..members),
                                "No valid host was found. There are not enough hosts available.",
                            ) {
                                c.nodes_failed.fetch_add(1, Relaxed);
                            }
                        }
                    }
                    version += 1;
                    let update = StackUpdate {
                        existing: true,
                        parameters: BTreeMap::from([(
                            "image".to_string(),
                            json!(format!("fedora-coreos-{version}")),
                        )]),
                        ..Default::default()
                    };
                    match heat.update_stack(&stack, &update).await {
                        Ok(()) => c.rollouts.fetch_add(1, Relaxed),
                        Err(_) => c.rollout_refused.fetch_add(1, Relaxed),
                    };
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };

    let follower = {
        let (c, stop, svc, stack) = (c.clone(), stop.clone(), svc.clone(), stack.clone());
        let no_client = a.no_client;
        async move {
            let mut cursor = EventCursor::default();
            while !stop.is_cancelled() && !no_client {
                c.polls.fetch_add(1, Relaxed);
                match svc.poll_events(stack.clone(), 2, cursor.clone()).await {
                    Ok((events, next)) => {
                        c.events.fetch_add(events.len() as u64, Relaxed);
                        cursor = next;
                        c.duplicates.store(cursor.duplicates_dropped(), Relaxed);
                        if let Ok(mut m) = c.cursor.lock() {
                            *m = cursor.remembered();
                        }
                    }
                    Err(_) => {
                        c.poll_errors.fetch_add(1, Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            cursor
        }
    };

    let streamer = {
        let (c, stop, svc, worker) = (c.clone(), stop.clone(), svc.clone(), worker.clone());
        let no_client = a.no_client;
        async move {
            while !stop.is_cancelled() && !no_client {
                let mut s = svc.stream_nodes(worker.clone());
                while let Some(u) = s.next().await {
                    match u {
                        Ok(NodeUpdate::Address(_)) => c.addresses.fetch_add(1, Relaxed),
                        Ok(NodeUpdate::AddressFailed { .. }) => {
                            c.address_failures.fetch_add(1, Relaxed)
                        }
                        Ok(_) => 0,
                        Err(_) => c.stream_errors.fetch_add(1, Relaxed),
                    };
                }
                c.stream_rounds.fetch_add(1, Relaxed);
                tokio::time::sleep(Duration::from_millis(1000)).await;
            }
        }
    };

    let sampler = {
        let (c, stop, svc) = (c.clone(), stop.clone(), svc.clone());
        let sample = Duration::from_secs(a.sample_secs.max(1));
        let total = Duration::from_secs_f64(a.minutes * 60.0);
        let sim_ref = &sim;
        async move {
            let t0 = Instant::now();
            let mut samples: Vec<(f64, f64)> = Vec::new();
            let mut last_events = 0u64;
            println!("| t (s) | RSS MB | events | events/min | dup dropped | poll err | stream rounds | addresses | rollouts | cursor ids | in flight | sim events retained |");
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
            while t0.elapsed() < total {
                tokio::time::sleep(sample).await;
                let t = t0.elapsed().as_secs_f64();
                let rss = rss_mb();
                samples.push((t, rss));
                let events = c.events.load(Relaxed);
                let rate = (events - last_events) as f64 * 60.0 / sample.as_secs_f64();
                last_events = events;
                let ids = c.cursor.lock().map(|m| *m).unwrap_or_default();
                let retained: usize =
                    sim_ref.with_world(|w| w.stacks().map(|(_, s)| s.events.len()).sum());
                println!(
                    "| {t:.0} | {rss:.1} | {events} | {rate:.0} | {} | {} | {} | {} | {} | {ids} | {} | {retained} |",
                    c.duplicates.load(Relaxed),
                    c.poll_errors.load(Relaxed),
                    c.stream_rounds.load(Relaxed),
                    c.addresses.load(Relaxed),
                    c.rollouts.load(Relaxed),
                    svc.budget().in_flight,
                );
            }
            stop.cancel();
            samples
        }
    };

    let (_, cursor, _, samples) = tokio::join!(churn, follower, streamer, sampler);

    // Let the last rollout finish without faults, then check the follower against Heat's
    // retained events: every one of them went through the cursor.
    faults.clear();
    faults.heal_nodes(&stack.id);
    let mut cursor = cursor;
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(60) {
        let st = sim.with_world(|w| {
            w.find_stack(&stack.id)
                .and_then(|ix| w.stack(ix))
                .map(|s| s.status.to_string())
                .unwrap_or_default()
        });
        if let Ok((_, next)) = svc.poll_events(stack.clone(), 2, cursor.clone()).await {
            cursor = next;
        }
        if !st.contains("IN_PROGRESS") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if let Ok((_, next)) = svc.poll_events(stack.clone(), 2, cursor.clone()).await {
        cursor = next;
    }
    let mut listing = Box::pin(conn.heat.list_events(
        stack.clone(),
        EventQuery {
            nested_depth: Some(2),
            sort_dir: Some(SortDir::Asc),
            ..Default::default()
        },
    ));
    let (mut retained, mut missing) = (0u64, 0u64);
    while let Some(e) = listing.next().await {
        let e = e?;
        retained += 1;
        if !cursor.has_seen(&e.id) {
            missing += 1;
        }
    }

    // Memory trend after a one-minute warm-up: least-squares slope in MB per minute.
    let tail: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t >= 60.0)
        .collect();
    let slope = if tail.len() >= 3 {
        let n = tail.len() as f64;
        let mx = tail.iter().map(|p| p.0).sum::<f64>() / n;
        let my = tail.iter().map(|p| p.1).sum::<f64>() / n;
        let sxy: f64 = tail.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = tail.iter().map(|p| (p.0 - mx).powi(2)).sum();
        if sxx > 0.0 {
            sxy / sxx * 60.0
        } else {
            0.0
        }
    } else {
        0.0
    };
    let max = samples.iter().map(|p| p.1).fold(0.0, f64::max);
    let minutes = a.minutes.max(1e-9);
    let events = c.events.load(Relaxed);
    println!();
    println!(
        "members {} speed {}x fault rate {} max_events_per_stack {} over {:.1} min",
        a.members, a.speed, a.fault_rate, a.max_events, a.minutes
    );
    println!("RSS: {rss_start:.1} MB before the simulator, max {max:.1} MB, slope after 1 min {slope:+.2} MB/min");
    println!(
        "events delivered {events} ({:.0}/min), duplicates dropped {}, polls {} ({} failed)",
        events as f64 / minutes,
        c.duplicates.load(Relaxed),
        c.polls.load(Relaxed),
        c.poll_errors.load(Relaxed)
    );
    println!(
        "node streams {} ({} errors), addresses {} ({} failed lookups)",
        c.stream_rounds.load(Relaxed),
        c.stream_errors.load(Relaxed),
        c.addresses.load(Relaxed),
        c.address_failures.load(Relaxed)
    );
    println!(
        "rollouts {} ({} PATCHes refused by injected faults), member failures injected {}",
        c.rollouts.load(Relaxed),
        c.rollout_refused.load(Relaxed),
        c.nodes_failed.load(Relaxed)
    );
    let b = svc.budget();
    println!(
        "requests {} retries {} tokens issued {}; cursor remembers {:?}",
        b.total_requests,
        b.total_retries,
        sim.issued_tokens().len(),
        cursor.remembered()
    );
    println!(
        "Heat retains {retained} events of the followed tree; not seen by the follower: {missing}"
    );
    sim.shutdown().await;
    if missing > 0 {
        return Err(format!("{missing} retained events never reached the follower").into());
    }
    Ok(())
}
