//! Following the events of a 1000-node create on the simulator: caldera's deduplicating
//! follower against `openstack stack event list --follow`, each on a fresh simulator with the
//! same seed (the same create, the same events).
//!
//! Ground truth comes from the simulator's world, read every 100 ms while the create runs:
//! every event of the stack tree with its exact time, so misses (events never delivered,
//! e.g. purged before a poll saw them) and lag (delivery minus event time, in ms rather than
//! the API's whole seconds) are measured, not guessed.

use super::osc::{Osc, OscTarget};
use super::{median_f64, percentile, verdict, BenchResult, Md};
use crate::api::cloud::{CloudConnection, ConnectOptions};
use crate::model::StackRef;
use crate::service::live::follow_step;
use crate::service::EventCursor;
use crate::sim::world::format_uuid;
use crate::sim::{self, SimHandle, SimOptions};
use crate::templates::{self, Machines};
use clap::Args;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

#[derive(Debug, Args)]
pub struct EventArgs {
    /// Members created.
    #[arg(long, default_value_t = 1000)]
    pub members: u32,
    /// Median create time of one member, in seconds (log-normal; the create lasts about 3x).
    #[arg(long, default_value_t = 15.0)]
    pub create_median: f64,
    /// caldera's poll intervals to measure, in seconds (the CLI default is 2, the console's
    /// refresh 5; the openstack CLI polls every 5).
    #[arg(long, value_delimiter = ',', default_value = "2,5")]
    pub intervals: Vec<f64>,
    /// Seconds between two member starts (Heat 27 starts one a second; the published figures
    /// start all members in the same tick, the hardest case for a follower).
    #[arg(long, default_value_t = 0.0)]
    pub leaf_delay: f64,
    /// Heat's max_events_per_stack (older events are purged, as Heat does).
    #[arg(long, default_value_t = 1000)]
    pub max_events_per_stack: usize,
    /// Nested depth followed (2 reaches the members' own resources).
    #[arg(long, default_value_t = 2)]
    pub nested_depth: u32,
    /// The max_events_per_stack caldera is told (`caldera events --max-events-per-stack`);
    /// default: the simulated cloud's own setting, as an operator who knows their cloud.
    #[arg(long)]
    pub assume_max_events: Option<usize>,
    /// Poll at exactly the interval (no pacing): separates what the cheaper polls save from
    /// what the adaptive interval adds.
    #[arg(long)]
    pub fixed_interval: bool,
}

/// What the world emitted: event id -> time (ms since the epoch).
type Truth = Arc<Mutex<HashMap<String, i64>>>;

/// One follower's run.
#[derive(Debug, Default)]
struct Outcome {
    name: String,
    /// Events the world wrote for the create (purged ones included).
    written: u64,
    /// Events an API client could have seen (present at one of the 100 ms snapshots).
    emitted: usize,
    /// Lines/events handed to the user, duplicates included.
    delivered: usize,
    unique: usize,
    duplicates: usize,
    /// Duplicates the follower received from the server and dropped itself.
    dropped: u64,
    misses: usize,
    /// Misses written within the create's first second (the all-at-once start): events
    /// purged before any poll could come, whatever the pacing.
    early_misses: usize,
    /// When the create was posted (ms since the epoch).
    posted_ms: i64,
    /// Delivered ids the world never emitted (parse errors would show here).
    unknown: usize,
    requests: u64,
    follow_secs: f64,
    create_secs: f64,
    lags_ms: Vec<f64>,
    max_per_poll: usize,
    /// Event polls made (caldera only; the CLI's are not counted apart from its requests).
    polls: Option<u64>,
    /// Event-list requests alone (caldera only: requests minus its stack shows).
    event_requests: Option<u64>,
    note: String,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A fresh simulator with nothing in it, and the create started on it.
async fn start_create(
    args: &EventArgs,
    name: &str,
) -> Result<(SimHandle, CloudConnection, StackRef, u64), Box<dyn std::error::Error + Send + Sync>> {
    let h = sim::start(SimOptions {
        scenario: "empty".into(),
        seed: 7,
        max_events_per_stack: args.max_events_per_stack,
        create_median: Duration::from_secs_f64(args.create_median.max(0.1)),
        leaf_delay: Duration::from_secs_f64(args.leaf_delay.max(0.0)),
        ..SimOptions::default()
    })
    .await?;
    // No request budget in the way: the follower's own pacing is what is measured.
    let opts = ConnectOptions {
        budget: crate::fetch::BudgetConfig {
            max_in_flight: 16,
            max_per_second: None,
        },
        ..ConnectOptions::default()
    };
    let conn = CloudConnection::from_cloud(&h.cloud_config(), &opts).await?;
    let mut params = BTreeMap::new();
    params.insert("count".to_string(), serde_json::json!(args.members));
    let create = templates::nodegroup_stack(name, Machines::Test, params)?;
    let before = h.with_world(|w| w.events_emitted());
    let stack = conn.heat.create_stack(&create).await?;
    Ok((h, conn, stack, before))
}

/// Reads the world's events for the stack tree every 100 ms until `stop`.
fn collect_truth(
    h: &SimHandle,
    stack: &str,
    depth: u32,
    truth: Truth,
    stop: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let world = h.world_handle();
    let stack = stack.to_string();
    tokio::spawn(async move {
        loop {
            {
                let w = world.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(ix) = w.find_stack(&stack) {
                    let mut t = truth.lock().unwrap_or_else(|e| e.into_inner());
                    for (six, _) in w.nested_stacks(ix, depth) {
                        if let Some(st) = w.stack(six) {
                            for e in &st.events {
                                t.entry(format_uuid(e.id)).or_insert(e.time_ms);
                            }
                        }
                    }
                }
            }
            if stop.is_cancelled() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

/// Whether the stack is still being created, read from the world (costs the server nothing).
fn in_progress(h: &SimHandle, name: &str) -> bool {
    h.with_world(|w| {
        w.find_stack(name)
            .and_then(|ix| w.stack(ix))
            .map(|s| s.status.to_string().ends_with("IN_PROGRESS"))
            .unwrap_or(false)
    })
}

fn score(out: &mut Outcome, truth: &HashMap<String, i64>, delivered: &[(String, i64)]) {
    out.emitted = truth.len();
    out.delivered = delivered.len();
    let mut seen = HashSet::new();
    for (id, at) in delivered {
        if !seen.insert(id.clone()) {
            out.duplicates += 1;
            continue;
        }
        match truth.get(id) {
            Some(t) => out.lags_ms.push((*at - *t) as f64),
            None => out.unknown += 1,
        }
    }
    out.unique = seen.len();
    out.misses = truth.keys().filter(|id| !seen.contains(*id)).count();
    out.early_misses = truth
        .iter()
        .filter(|(id, at)| !seen.contains(*id) && **at < out.posted_ms + 1000)
        .count();
}

async fn caldera_run(
    args: &EventArgs,
    interval: f64,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let name = format!("events-caldera-{}", (interval * 1000.0) as u64);
    let posted_ms = now_ms();
    let (h, conn, stack, written_before) = start_create(args, &name).await?;
    let created = Instant::now();
    let truth: Truth = Default::default();
    let stop = tokio_util::sync::CancellationToken::new();
    let collector = collect_truth(&h, &name, args.nested_depth, truth.clone(), stop.clone());
    let before = conn.budget().total_requests;
    let started = Instant::now();
    let mut cursor = EventCursor::default()
        .with_retention(args.assume_max_events.unwrap_or(args.max_events_per_stack));
    let mut delivered: Vec<(String, i64)> = Vec::new();
    let mut max_per_poll = 0;
    let mut polls = 0u64;
    let mut shows = 0u64;
    let mut create_secs = None;
    let mut settled_polls = 0;
    let mut note = String::new();
    loop {
        polls += 1;
        match follow_step(&conn.heat, &stack, args.nested_depth, &mut cursor).await {
            Ok(events) => {
                let at = now_ms();
                max_per_poll = max_per_poll.max(events.len());
                delivered.extend(events.into_iter().map(|e| (e.id, at)));
            }
            Err(e) => note = format!("poll error: {e}"),
        }
        // As `caldera events --follow --until-complete`: a stack show per poll, and one more
        // poll after the stack settles to catch its final events.
        shows += 1;
        match conn.heat.get_stack(&stack, false).await {
            Ok(d) if d.summary.status.is_in_progress() => settled_polls = 0,
            Ok(_) => {
                create_secs.get_or_insert_with(|| created.elapsed().as_secs_f64());
                settled_polls += 1;
                if settled_polls > 1 {
                    break;
                }
                continue;
            }
            Err(e) => note = format!("stack show error: {e}"),
        }
        if started.elapsed() > Duration::from_secs(600) {
            note = "gave up after 600 s".into();
            break;
        }
        let configured = Duration::from_secs_f64(interval);
        let delay = if args.fixed_interval {
            configured
        } else {
            cursor.next_delay(configured)
        };
        tokio::time::sleep(delay).await;
    }
    let follow_secs = started.elapsed().as_secs_f64();
    let requests = conn.budget().total_requests - before;
    stop.cancel();
    let _ = collector.await;
    let truth = truth.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let pacing = if args.fixed_interval {
        format!("every {interval} s")
    } else {
        let told = args.assume_max_events.unwrap_or(args.max_events_per_stack);
        format!("at most {interval} s apart, max_events_per_stack {told} given")
    };
    let mut out = Outcome {
        written: h.with_world(|w| w.events_emitted()) - written_before,
        name: format!("caldera, poll {pacing} (`caldera events --follow --until-complete`)"),
        requests,
        polls: Some(polls),
        posted_ms,
        event_requests: Some(requests.saturating_sub(shows)),
        follow_secs,
        create_secs: create_secs.unwrap_or(follow_secs),
        max_per_poll,
        dropped: cursor.duplicates_dropped(),
        note,
        ..Default::default()
    };
    score(&mut out, &truth, &delivered);
    h.shutdown().await;
    Ok(out)
}

/// `2026-11-21 12:30:33Z <event id> [name]: STATUS  reason` -> the id.
fn osc_event_id(line: &str) -> Option<String> {
    let mut parts = line.split_whitespace();
    let (_date, _time, id) = (parts.next()?, parts.next()?, parts.next()?);
    let hex = id.chars().filter(|c| *c != '-').count();
    (hex == 32 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')).then(|| id.to_string())
}

async fn osc_run(
    args: &EventArgs,
    osc: &Osc,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let name = "events-osc".to_string();
    let posted_ms = now_ms();
    let (h, _conn, stack, written_before) = start_create(args, &name).await?;
    let created = Instant::now();
    let truth: Truth = Default::default();
    let stop = tokio_util::sync::CancellationToken::new();
    let collector = collect_truth(&h, &name, args.nested_depth, truth.clone(), stop.clone());
    let before = h.faults().requests_seen();
    let started = Instant::now();
    let target = OscTarget::simulator(&h).unbuffered();
    let depth = args.nested_depth.to_string();
    let mut child = osc.spawn(
        &target,
        &[
            "stack",
            "event",
            "list",
            &stack.id,
            "--nested-depth",
            &depth,
            "--follow",
        ],
    )?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        let mut got: Vec<(String, i64)> = Vec::new();
        let mut other = 0usize;
        while let Ok(Some(line)) = lines.next_line().await {
            match osc_event_id(&line) {
                Some(id) => got.push((id, now_ms())),
                None if line.trim().is_empty() => {}
                None => other += 1,
            }
        }
        (got, other)
    });
    let err_reader = tokio::spawn(async move {
        let mut text = String::new();
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            text = line;
        }
        text
    });
    // The CLI never stops by itself: wait for the create to settle, then one more poll period.
    while in_progress(&h, &name) && started.elapsed() < Duration::from_secs(600) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let create_secs = created.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(7)).await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    let follow_secs = started.elapsed().as_secs_f64();
    let requests = h.faults().requests_seen() - before;
    let (delivered, other) = reader.await.unwrap_or_default();
    let last_err = err_reader.await.unwrap_or_default();
    stop.cancel();
    let _ = collector.await;
    let truth = truth.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut out = Outcome {
        written: h.with_world(|w| w.events_emitted()) - written_before,
        name: "`openstack stack event list --nested-depth 2 --follow` (polls every 5 s)".into(),
        posted_ms,
        requests,
        follow_secs,
        create_secs,
        note: if other > 0 || !last_err.is_empty() {
            format!("{other} unparsed lines; stderr: {last_err}")
        } else {
            String::new()
        },
        ..Default::default()
    };
    score(&mut out, &truth, &delivered);
    h.shutdown().await;
    Ok(out)
}

pub async fn run(args: EventArgs, osc: Option<Osc>) -> BenchResult {
    let mut outcomes = Vec::new();
    for interval in args.intervals.clone() {
        eprintln!("caldera follower, every {interval} s...");
        let o = caldera_run(&args, interval.max(0.2)).await?;
        eprintln!("  {} events delivered, {} misses", o.unique, o.misses);
        outcomes.push(o);
    }
    if let Some(osc) = &osc {
        eprintln!("openstack stack event list --follow...");
        let o = osc_run(&args, osc).await?;
        eprintln!(
            "  {} lines, {} unique, {} misses",
            o.delivered, o.unique, o.misses
        );
        outcomes.push(o);
    }
    println!(
        "\n### Following a {}-member create on the simulator (max_events_per_stack {}, nested depth {})\n",
        args.members, args.max_events_per_stack, args.nested_depth
    );
    let mut t = Md::new(&[
        "follower",
        "events written",
        "visible via the API",
        "delivered",
        "duplicates shown",
        "misses",
        "dups dropped by client",
        "events/s",
        "lag p50",
        "lag p95",
        "lag max",
        "requests/min",
        "requests",
        "polls",
        "event requests/poll",
        "requests/100 events",
    ]);
    let ms = |v: Option<f64>| {
        v.map(|x| format!("{:.2} s", x / 1000.0))
            .unwrap_or("-".into())
    };
    for o in &outcomes {
        t.row(vec![
            o.name.clone(),
            o.written.to_string(),
            o.emitted.to_string(),
            o.unique.to_string(),
            o.duplicates.to_string(),
            o.misses.to_string(),
            o.dropped.to_string(),
            format!("{:.0}", o.unique as f64 / o.create_secs.max(0.001)),
            ms(median_f64(&o.lags_ms)),
            ms(percentile(&o.lags_ms, 0.95)),
            ms(o.lags_ms.iter().copied().reduce(f64::max)),
            format!("{:.0}", o.requests as f64 * 60.0 / o.follow_secs.max(0.001)),
            o.requests.to_string(),
            o.polls.map_or("-".into(), |p| p.to_string()),
            match (o.event_requests, o.polls) {
                (Some(r), Some(p)) if p > 0 => format!("{:.2}", r as f64 / p as f64),
                _ => "-".into(),
            },
            format!(
                "{:.2}",
                o.requests as f64 * 100.0 / (o.unique.max(1)) as f64
            ),
        ]);
    }
    t.print();
    println!();
    for o in &outcomes {
        let batch = if o.max_per_poll > 0 {
            format!("; largest batch in one poll {}", o.max_per_poll)
        } else {
            String::new()
        };
        let unknown = if o.unknown > 0 {
            format!("; {} ids the world never wrote", o.unknown)
        } else {
            String::new()
        };
        let note = if o.note.is_empty() {
            String::new()
        } else {
            format!("; {}", o.note)
        };
        println!(
            "- {}: create took {:.1} s, followed for {:.1} s{batch}; misses written in the \
             create's first second {} of {}{unknown}{note}",
            o.name, o.create_secs, o.follow_secs, o.early_misses, o.misses
        );
    }
    println!(
        "- events written but not visible: purged (max_events_per_stack) within the same \
         100 ms in which they were written, so no client could ever read them; misses count \
         visible events a follower never delivered"
    );
    for o in outcomes.iter().filter(|o| o.name.starts_with("caldera")) {
        println!(
            "- {}: duplicates 0 and misses 0: {}",
            o.name,
            verdict(o.duplicates == 0 && o.misses == 0)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cli_event_lines() {
        let line = "2026-11-21 12:30:33Z 1b4e28ba-2fa1-41d2-883f-0016d3cca427 [events-osc.nodes]: CREATE_IN_PROGRESS  state changed";
        assert_eq!(
            osc_event_id(line).as_deref(),
            Some("1b4e28ba-2fa1-41d2-883f-0016d3cca427")
        );
        assert_eq!(osc_event_id(""), None);
        assert_eq!(osc_event_id("Traceback (most recent call last):"), None);
    }

    #[test]
    fn scores_duplicates_misses_and_lag() {
        let truth: HashMap<String, i64> = [
            ("a".to_string(), 1000),
            ("b".into(), 2000),
            ("c".into(), 3000),
        ]
        .into_iter()
        .collect();
        let delivered = vec![
            ("a".to_string(), 1500),
            ("b".into(), 2600),
            ("a".into(), 4000),
        ];
        let mut o = Outcome {
            posted_ms: 2500,
            ..Default::default()
        };
        score(&mut o, &truth, &delivered);
        // c (written at 3000) is missed within a second of the post.
        assert_eq!(o.early_misses, 1);
        assert_eq!((o.emitted, o.delivered, o.unique), (3, 3, 2));
        assert_eq!((o.duplicates, o.misses, o.unknown), (1, 1, 0));
        assert_eq!(o.lags_ms, vec![500.0, 600.0]);
    }
}
