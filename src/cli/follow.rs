//! `caldera events TARGET [--follow]`: print the events of a stack (or of every stack of a
//! cluster or node group, as one timeline), and with `--follow` keep printing new ones
//! through outages of Heat (or Keystone) until interrupted, or until the stacks settle with
//! `--until-complete`.
//!
//! A failed poll leaves the cursor as it was (see `service::live::follow_step`), so after an
//! outage the next successful poll reads everything written meanwhile, newest first back to
//! the cursor's horizon, and the cursor's remembered ids drop what was already printed:
//! nothing is lost (within Heat's retention) and nothing is printed twice. While polls fail
//! the follower waits 1 s, 2 s, 4 s ... up to 30 s between them and says on stderr for how
//! long it has been reconnecting.

use super::output::{event_line, sleep_while_read, CmdResult, Format};
use super::targets::{event_scopes, EventScope};
use crate::api::cloud::CloudConnection;
use crate::api::heat::HeatClient;
use crate::model::StackEvent;
use crate::ops::event_tracker::reconnect_delay;
use crate::service::live::LiveService;
use crate::service::{CloudService, ErrorKind, EventCursor, ServiceError};
use std::io::{self, Write};
use std::time::{Duration, Instant};

pub struct FollowOptions {
    pub follow: bool,
    pub nested_depth: u32,
    pub interval: Duration,
    pub max_events_per_stack: Option<usize>,
    pub until_complete: bool,
    pub format: Format,
    /// Only the backlog's events newer than this.
    pub since: Option<Duration>,
    /// Only the backlog's last N events.
    pub tail: Option<usize>,
}

impl FollowOptions {
    /// The backlog (the first round's events, oldest first) cut to `--since` and `--tail`;
    /// later rounds are new events, all printed.
    fn cut_backlog(&self, mut events: Vec<StackEvent>) -> Vec<StackEvent> {
        if let Some(since) = self.since {
            let cutoff = chrono::Utc::now()
                - chrono::Duration::from_std(since).unwrap_or(chrono::Duration::MAX);
            events.retain(|e| e.time >= cutoff);
        }
        if let Some(n) = self.tail {
            let drop = events.len().saturating_sub(n);
            events.drain(..drop);
        }
        events
    }
}

/// Whether a follower should wait and try again: the service may come back. A stack that is
/// gone, credentials refused or a request the cloud does not support will not get better.
fn worth_retrying(e: &ServiceError) -> bool {
    matches!(
        e.kind,
        ErrorKind::Transport | ErrorKind::Http | ErrorKind::Decode
    )
}

/// Failed polls in a row and since when.
#[derive(Default)]
struct Outage {
    since: Option<Instant>,
    failures: u32,
}

impl Outage {
    /// Notes a failure, says so on stderr, returns how long to wait before the next try.
    fn failed(&mut self, what: &str, err: &ServiceError) -> Duration {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.failures += 1;
        let wait = reconnect_delay(self.failures);
        eprintln!(
            "caldera: {what} failed, reconnecting for {} s (attempt {}, next in {} s): {err}",
            since.elapsed().as_secs(),
            self.failures,
            wait.as_secs(),
            err = crate::model::terminal_safe(&err.to_string())
        );
        wait
    }

    fn recovered(&mut self) {
        if let Some(since) = self.since.take() {
            eprintln!(
                "caldera: reconnected after {} s and {} failed attempt(s); following again",
                since.elapsed().as_secs(),
                self.failures
            );
        }
        self.failures = 0;
    }
}

/// Finds the stacks (and parts of stacks) `target` names; when following, a cloud that is
/// down at the start is waited for.
async fn find_stacks(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
    follow: bool,
) -> Result<Vec<EventScope>, ServiceError> {
    let mut outage = Outage::default();
    loop {
        match event_scopes(service, conn, target).await {
            Ok(found) => {
                outage.recovered();
                return Ok(found);
            }
            Err(e) if follow && worth_retrying(&e) => {
                let wait = outage.failed("finding the stacks", &e);
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Why a round ended early: the cloud (maybe worth another try) or our own output (a closed
/// pipe ends the command; the io error is kept as it is for `main` to judge).
enum RoundError {
    Cloud(ServiceError),
    Output(io::Error),
}

impl From<ServiceError> for RoundError {
    fn from(e: ServiceError) -> Self {
        RoundError::Cloud(e)
    }
}

/// One round: a poll of every stack, then (with `--until-complete`) whether any is still in
/// progress (`Some(states)` once none is). The events of the stacks polled are printed, as
/// one timeline, even when a later stack's poll fails: their cursors have moved on. The
/// first round's events are the backlog, cut to `--since` and `--tail`.
async fn round(
    service: &LiveService,
    heat: &HeatClient,
    scopes: &[EventScope],
    opts: &FollowOptions,
    cursors: &mut [EventCursor],
    first: bool,
    tally: &mut Tally,
) -> Result<Option<Vec<String>>, RoundError> {
    let mut events = Vec::new();
    let mut failed = None;
    for (scope, cursor) in scopes.iter().zip(cursors.iter_mut()) {
        let depth = opts.nested_depth.max(scope.depth_needed());
        match service
            .poll_events(scope.stack.clone(), depth, cursor.clone())
            .await
        {
            Ok((found, next)) => {
                *cursor = next;
                let (read, before) = (found.len(), events.len());
                events.extend(found.into_iter().filter(|e| scope.covers(e)));
                tally.outside += (read - (events.len() - before)) as u64;
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    events.sort_by_key(|e| e.time);
    if first {
        let backlog = events.len();
        events = opts.cut_backlog(events);
        tally.cut += (backlog - events.len()) as u64;
    }
    print_events(&events, opts.format).map_err(RoundError::Output)?;
    tally.printed += events.len() as u64;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if !(opts.follow && opts.until_complete) {
        return Ok(None);
    }
    let mut busy = false;
    let mut states = Vec::new();
    for stack in scopes.iter().map(|s| &s.stack) {
        let detail = heat
            .get_stack(stack, false)
            .await
            .map_err(ServiceError::from)?;
        busy |= detail.summary.status.is_in_progress();
        states.push(format!("stack {} is {}", stack.name, detail.summary.status));
    }
    Ok((!busy).then_some(states))
}

fn print_events(events: &[StackEvent], format: Format) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for e in events {
        writeln!(out, "{}", event_line(e, format))?;
    }
    out.flush()
}

pub async fn events(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
    opts: FollowOptions,
) -> CmdResult {
    let heat = &conn.heat;
    // The flag, else the cloud's setting (applied by the service), else Heat's default.
    let fresh = || match opts.max_events_per_stack {
        Some(n) => EventCursor::default().with_retention(n),
        None => EventCursor::default(),
    };
    let mut cursors: Vec<EventCursor> = Vec::new();
    let mut tally = Tally::default();
    let started = chrono::Utc::now();
    let work = async {
        // A cluster may span several stacks (Heat-native: the cluster's and each node
        // group's); each has its own cursor.
        let stacks = find_stacks(service, conn, target, opts.follow).await?;
        cursors = stacks.iter().map(|_| fresh()).collect();
        if opts.format == Format::Csv {
            // writeln!, not println!: a closed pipe ends the command, it does not panic.
            writeln!(std::io::stdout(), "time,id,path,status,reason")?;
        }
        rounds(service, heat, &stacks, &opts, &mut cursors, &mut tally).await
    };
    let interrupted = if opts.follow {
        // A follower runs until Ctrl-C (even while it waits for a cloud that is down): that
        // is its ordinary end, so it ends as the non-follow form does, with its count, and
        // succeeds. A round cut short has printed whole events only (printing does not
        // wait), and the tally counts each printed.
        tokio::select! {
            done = work => done.map(|()| false)?,
            () = interrupt() => true,
        }
    } else {
        work.await?;
        false
    };
    let delivered: u64 = cursors.iter().map(|c| c.delivered()).sum();
    let dropped: u64 = cursors.iter().map(|c| c.duplicates_dropped()).sum();
    let mut line = tally.line(delivered, dropped);
    if opts.follow {
        line.push_str(&followed_since(started, chrono::Utc::now(), interrupted));
    }
    eprintln!("{line}");
    Ok(())
}

/// `; followed since 07:41:02 UTC (1m05s), stopped by Ctrl-C`: how long the events counted
/// were followed, and what ended it.
fn followed_since(
    started: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
    interrupted: bool,
) -> String {
    let secs = (now - started).num_seconds().max(0);
    let lasted = if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m{:02}s", secs / 60, secs % 60)
    };
    let end = if interrupted {
        ", stopped by Ctrl-C"
    } else {
        ""
    };
    format!(
        "; followed since {} ({lasted}){end}",
        started.format("%H:%M:%S UTC")
    )
}

/// Resolves on the first SIGINT; never, when the handler cannot be installed (the default
/// action then still ends the process).
async fn interrupt() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The rounds of polls: one without `--follow`; with it, until the stacks settle
/// (`--until-complete`) or forever, through outages.
async fn rounds(
    service: &LiveService,
    heat: &HeatClient,
    stacks: &[EventScope],
    opts: &FollowOptions,
    cursors: &mut [EventCursor],
    tally: &mut Tally,
) -> CmdResult {
    let mut settled_polls = 0;
    let mut outage = Outage::default();
    let mut first = true;
    loop {
        let round = round(service, heat, stacks, opts, cursors, first, tally);
        let settled = match round.await {
            Ok(settled) => {
                outage.recovered();
                first = false;
                settled
            }
            Err(RoundError::Cloud(e)) if opts.follow && worth_retrying(&e) => {
                let wait = outage.failed("following events", &e);
                sleep_while_read(wait).await?;
                continue;
            }
            Err(RoundError::Cloud(e)) => return Err(e.into()),
            Err(RoundError::Output(e)) => return Err(e.into()),
        };
        if !opts.follow {
            break;
        }
        match settled {
            Some(states) => {
                // One more poll after settling catches the final events written with it.
                settled_polls += 1;
                if settled_polls > 1 {
                    for s in states {
                        eprintln!("{}", crate::model::terminal_safe(&s));
                    }
                    break;
                }
                continue;
            }
            None => settled_polls = 0,
        }
        let delay = cursors
            .iter()
            .map(|c| c.next_delay(opts.interval))
            .min()
            .unwrap_or(opts.interval);
        sleep_while_read(delay).await?;
    }
    Ok(())
}

/// What became of the events read: printed, left out of the backlog by `--since`/`--tail`,
/// or outside the target's part of its stack (STACK/PATH).
#[derive(Default)]
struct Tally {
    printed: u64,
    cut: u64,
    outside: u64,
}

impl Tally {
    /// `2 events printed (10 read: 8 left out by --since/--tail; 10 sent again by Heat and
    /// dropped)`: every event read is accounted for.
    fn line(&self, read: u64, dropped: u64) -> String {
        let mut why = Vec::new();
        if self.cut > 0 {
            why.push(format!("{} left out by --since/--tail", self.cut));
        }
        if self.outside > 0 {
            why.push(format!("{} outside the path", self.outside));
        }
        let mut line = format!("{} events printed ({read} read", self.printed);
        if !why.is_empty() {
            line.push_str(": ");
            line.push_str(&why.join(", "));
        }
        line.push_str(&format!("; {dropped} duplicates dropped)"));
        line
    }
}
