//! De-duplicating, gap-free bookkeeping for following Heat events, and the pacing of the polls.
//!
//! Heat pages events by `marker` (an event id) in `(created_at, id)` order. Two things break a
//! naive follower such as `openstack stack event list --follow`:
//! - an event written a moment late with an earlier timestamp sorts *before* the marker and is
//!   never returned (a gap), so each poll reads newest first back to a little behind the
//!   newest event delivered ([`EventTracker::horizon`]) and the overlap is de-duplicated;
//! - once Heat purges old events (`max_events_per_stack`) a purged marker is ignored and the
//!   server answers from the start (duplicates), so every event id ever delivered is remembered.
//!
//! How far back "a little" is: Heat shows whole-second timestamps, and an event stamped at
//! real time `t` is readable by `t + d` (`d`: how long its writer takes to commit). The newest
//! delivered event shows second `N`, so it was readable, and the server's clock past `N`, when
//! it was read; anything not read then was written at or after that moment minus `d`, so it
//! shows at least `N - ceil(d)`. The window is therefore `d` rounded up to seconds: 2 s by
//! default (a commit taking up to 2 s), widened to twice the furthest late writer actually seen
//! (up to 10 s). Once the window has been read again more than `overlap + 1 s` after `N` was
//! delivered with nothing new in it, every writer stamped `N` or earlier has committed and been
//! read, so polls only look for events shown after `N` (the window is "settled").
//!
//! Pacing ([`EventTracker::next_delay`]): Heat deletes a stack's oldest events once it holds
//! more than `max_events_per_stack`, so a follower polling slower than the busiest stack fills
//! that retention loses events for good. The delay is chosen from the busiest owning stack's
//! event rate in the last poll, doubles on quiet polls and stays within the configured interval.

use crate::model::StackEvent;
use chrono::{DateTime, Duration, Utc};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration as StdDuration, Instant};

/// Upper bound on remembered ids; older ids are forgotten first. Far above any stack's
/// retained events, so forgetting only matters for days-long follows.
const MAX_REMEMBERED: usize = 500_000;

/// A remembered event id in 16 bytes: Heat's ids are UUIDs, kept as their 128 bits; any
/// other id is reduced to a 128-bit hash (two independently keyed SipHashes), where a
/// collision is as likely as guessing a UUID. Strings cost ~3x more per id in the two
/// collections below, and a long follow of a big tree remembers hundreds of thousands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct IdKey(u128);

impl IdKey {
    fn of(id: &str) -> IdKey {
        if let Some(v) = parse_uuid(id) {
            return IdKey(v);
        }
        use std::hash::{Hash, Hasher};
        let half = |salt: u64| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            salt.hash(&mut h);
            id.hash(&mut h);
            h.finish() as u128
        };
        // Deterministic within the process, which is all the tracker needs.
        IdKey((half(0x9e37_79b9_7f4a_7c15) << 64) | half(0xc2b2_ae3d_27d4_eb4f))
    }
}

/// `8-4-4-4-12` hex digits, either case; anything else is not a UUID.
fn parse_uuid(s: &str) -> Option<u128> {
    let b = s.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return None;
    }
    let mut v: u128 = 0;
    for (i, c) in b.iter().enumerate() {
        if [8, 13, 18, 23].contains(&i) {
            continue;
        }
        v = (v << 4) | (*c as char).to_digit(16)? as u128;
    }
    Some(v)
}

/// Heat's default `max_events_per_stack`, assumed when the caller does not know the cloud's.
pub const DEFAULT_RETENTION: usize = 1000;
/// The late-writer window when none wider has been observed (see the module comment).
const BASE_OVERLAP_SECS: i64 = 2;
/// The widest window an observed late writer can ask for (the old fixed window).
const MAX_OVERLAP_SECS: i64 = 10;
/// Heat's timestamp granularity.
const GRANULARITY: Duration = Duration::seconds(1);
/// First request of a poll when little is expected: small, so a quiet poll is one cheap call.
pub const PROBE_PAGE: u32 = 20;
/// The largest page asked for: bounds one response (~1 KB an event, so ~2 MB) while letting a
/// busy poll be one request: 1000 members updating write ~200 events/s, i.e. ~1000 new events
/// plus a ~400-event window per 5 s poll (measured by `caldera bench events`).
pub const MAX_PAGE: u32 = 2000;
/// Never suggest polling faster than this...
const MIN_DELAY: StdDuration = StdDuration::from_millis(500);
/// ...nor at more than this many requests a second on average, whatever the event rate: the
/// follower shares the connection's request budget (25/s by default) with the console.
const MAX_REQUESTS_PER_SEC: f64 = 4.0;
/// How fast the busiest stack's remembered rate fades (see `finish_poll`).
const RATE_HALF_LIFE_SECS: f64 = 5.0;
/// Before a second poll the rate is unknown; the second poll comes at most this soon after the
/// first so a burst is measured before it can outrun retention.
const FIRST_RATE_DELAY: StdDuration = StdDuration::from_secs(1);

/// The first wait after a follower's poll failed; it doubles with each failure in a row...
const RECONNECT_FIRST: StdDuration = StdDuration::from_secs(1);
/// ...up to this, so a follower notices a service back within half a minute however long
/// it was away, without knocking on a dead one more than twice a minute.
pub const RECONNECT_CAP: StdDuration = StdDuration::from_secs(30);

/// How long a follower waits before its next poll after `failures` failed polls in a row
/// (1 s, 2 s, 4 s ... 30 s). The cursor is untouched by a failed poll (see
/// `service::live::follow_step`), so the poll after the outage reads everything since.
pub fn reconnect_delay(failures: u32) -> StdDuration {
    let doublings = failures.saturating_sub(1).min(16);
    RECONNECT_FIRST
        .saturating_mul(1u32 << doublings)
        .min(RECONNECT_CAP)
}

/// What one poll reads; from [`EventTracker::begin_poll`], handed back to
/// [`EventTracker::finish_poll`].
#[derive(Debug, Clone)]
pub struct PollPlan {
    pub started: Instant,
    /// Read newest first until a page holds an event older than this (`None`: read all).
    pub horizon: Option<DateTime<Utc>>,
    /// `limit` of the first request: what the rate predicts is newer than the horizon.
    pub first_limit: u32,
    newest_before: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct EventTracker {
    seen: HashSet<IdKey>,
    seen_order: VecDeque<IdKey>,
    /// The newest delivered event's time: the follower reads back to it minus the overlap.
    newest: Option<DateTime<Utc>>,
    /// When the poll that delivered `newest` ended (the server's clock was past `newest` then).
    newest_at: Option<Instant>,
    /// The window behind `newest` was re-read late enough that no writer can still land in it.
    settled: bool,
    base_overlap: Duration,
    /// The furthest behind the newest delivered event a late writer has landed.
    late: Duration,
    delivered: u64,
    duplicates_dropped: u64,
    // Pacing and sizing.
    retention: usize,
    retention_known: bool,
    last_poll: Option<Instant>,
    polls: u64,
    /// New events a second, over all stacks and for the busiest owning stack.
    rate: f64,
    owner_rate: f64,
    /// Events the last poll read that the next one reads again (inside its window).
    window_events: usize,
    last_requests: u32,
}

impl Default for EventTracker {
    fn default() -> Self {
        EventTracker::new(Duration::seconds(BASE_OVERLAP_SECS))
    }
}

impl EventTracker {
    /// `overlap`: how far behind the newest event each poll re-reads at least.
    pub fn new(overlap: Duration) -> Self {
        EventTracker {
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
            newest: None,
            newest_at: None,
            settled: false,
            base_overlap: overlap,
            late: Duration::zero(),
            delivered: 0,
            duplicates_dropped: 0,
            retention: DEFAULT_RETENTION,
            retention_known: false,
            last_poll: None,
            polls: 0,
            rate: 0.0,
            owner_rate: 0.0,
            window_events: 0,
            last_requests: 0,
        }
    }

    /// The cloud's `max_events_per_stack`, when known (Heat's default 1000 otherwise).
    pub fn set_retention(&mut self, max_events_per_stack: usize) {
        self.retention = max_events_per_stack.max(1);
        self.retention_known = true;
    }

    /// Whether `set_retention` was called (else Heat's default is assumed).
    pub fn retention_known(&self) -> bool {
        self.retention_known
    }

    /// The `max_events_per_stack` the pacing works against.
    pub fn retention(&self) -> usize {
        self.retention
    }

    /// The late-writer window in force: the base, or twice the furthest late writer seen.
    pub fn overlap(&self) -> Duration {
        let cap = Duration::seconds(MAX_OVERLAP_SECS).max(self.base_overlap);
        (self.late * 2).max(self.base_overlap).min(cap)
    }

    /// Takes events in Heat's order, oldest first; returns the ones not delivered before,
    /// oldest first.
    ///
    /// Heat stamps events to the second and orders a listing by `(created_at, id)`, where `id`
    /// is its database's insertion counter (the API shows a random UUID instead). So within a
    /// second only the position in Heat's answer tells which event came first — a resource's
    /// `CREATE_IN_PROGRESS` before its `CREATE_COMPLETE` — and the sort here is a stable sort
    /// on time alone, which keeps that position; sorting by the UUID would shuffle them.
    pub fn ingest(&mut self, page: Vec<StackEvent>) -> Vec<StackEvent> {
        let mut fresh = Vec::new();
        for event in page {
            if self.seen.contains(&IdKey::of(&event.id)) {
                self.duplicates_dropped += 1;
                continue;
            }
            self.remember(&event.id);
            fresh.push(event);
        }
        fresh.sort_by_key(|e| e.time);
        if let Some(last) = fresh.last() {
            self.newest = Some(self.newest.map_or(last.time, |n| n.max(last.time)));
        }
        self.delivered += fresh.len() as u64;
        fresh
    }

    /// How far back a newest-first poll must read: the newest delivered event's time minus
    /// the overlap, so late writers inside that window are caught; once that window is settled,
    /// only events shown after the newest second. Events older than this that were not
    /// delivered are treated as gone.
    pub fn horizon(&self) -> Option<DateTime<Utc>> {
        let newest = self.newest?;
        Some(if self.settled {
            newest + GRANULARITY
        } else {
            newest - self.overlap()
        })
    }

    /// Plans a poll starting `now`: its horizon and the size of its first request.
    pub fn begin_poll(&self, now: Instant) -> PollPlan {
        let horizon = self.horizon();
        let first_limit = match (horizon, self.last_poll) {
            (None, _) | (_, None) => MAX_PAGE,
            (Some(_), Some(last)) => {
                let elapsed = now.saturating_duration_since(last).as_secs_f64();
                // The page must hold one event past the horizon to end the poll; a quarter
                // more than predicted absorbs a rising rate without a second request.
                let expected = self.rate * elapsed + self.window_events as f64;
                ((expected * 1.25).ceil() as u32 + 1).clamp(PROBE_PAGE, MAX_PAGE)
            }
        };
        PollPlan {
            started: now,
            horizon,
            first_limit,
            newest_before: self.newest,
        }
    }

    /// Ends a poll: `pages` are the events read newest first (every page of a `sort_dir=desc`
    /// listing, in the order returned), `complete` whether
    /// the reading reached the plan's horizon or the end of the listing, `requests` how many
    /// it took. Returns the events not delivered before, oldest first.
    pub fn finish_poll(
        &mut self,
        plan: &PollPlan,
        pages: Vec<StackEvent>,
        complete: bool,
        requests: u32,
        now: Instant,
    ) -> Vec<StackEvent> {
        let times: Vec<DateTime<Utc>> = pages.iter().map(|e| e.time).collect();
        // The pages were read newest first: Heat's order reversed.
        let mut pages = pages;
        pages.reverse();
        let fresh = self.ingest(pages);
        let late = plan.newest_before.and_then(|n| {
            fresh
                .iter()
                .filter(|e| e.time < n)
                .map(|e| n - e.time)
                .max()
        });
        if let Some(distance) = late {
            // A writer landed behind events already delivered: widen the window for the next
            // one, and read the window again even if it was settled (the estimate was wrong).
            self.late = self.late.max(distance);
            self.settled = false;
            self.newest_at = Some(now);
        }
        if self.newest != plan.newest_before {
            self.newest_at = Some(now);
            self.settled = false;
        } else if complete && !self.settled {
            let wait = (self.overlap() + GRANULARITY).to_std().unwrap_or_default();
            self.settled = self
                .newest_at
                .is_some_and(|at| plan.started.saturating_duration_since(at) >= wait);
        }

        if self.last_poll.is_none() {
            // No poll before to measure against: the busiest stack's events in the newest two
            // whole seconds of this read. A create or an update opens with such a burst (a
            // ResourceGroup writes every member's start at once), and the quiet that follows
            // while the members run must not pass for a quiet stack.
            let recent = self.newest.map(|n| n - GRANULARITY * 2);
            let mut per_owner: HashMap<&str, usize> = HashMap::new();
            for e in fresh.iter().filter(|e| recent.is_some_and(|r| e.time > r)) {
                *per_owner
                    .entry(e.stack.as_ref().map_or("", |s| s.id.as_str()))
                    .or_default() += 1;
            }
            let busiest = per_owner.values().copied().max().unwrap_or(0);
            self.owner_rate = busiest as f64 / 2.0;
        }
        if let Some(last) = self.last_poll {
            let elapsed = plan
                .started
                .saturating_duration_since(last)
                .as_secs_f64()
                .max(0.001);
            let mut per_owner: HashMap<&str, usize> = HashMap::new();
            for e in &fresh {
                *per_owner
                    .entry(e.stack.as_ref().map_or("", |s| s.id.as_str()))
                    .or_default() += 1;
            }
            let busiest = per_owner.values().copied().max().unwrap_or(0);
            // The busiest stack's rate rises at once and falls by half every few seconds, not
            // at once: a ResourceGroup writes its members' starts in a burst, goes quiet while
            // they run, then writes their ends at a rising rate.
            let decayed = self.owner_rate * 0.5f64.powf(elapsed / RATE_HALF_LIFE_SECS);
            self.owner_rate = (busiest as f64 / elapsed).max(decayed);
            self.rate = if fresh.is_empty() {
                0.0
            } else {
                // Sizes the next first request only; a lull for one poll keeps half of it.
                (fresh.len() as f64 / elapsed).max(self.rate / 2.0)
            };
        }
        // What the next poll will re-read whatever happens: the events behind its horizon's
        // start, which sizes its first request with the rate.
        self.window_events = match self.horizon() {
            Some(h) => times.iter().filter(|t| **t >= h).count(),
            None => 0,
        };
        self.last_requests = requests;
        self.last_poll = Some(plan.started);
        self.polls += 1;
        fresh
    }

    /// How long to wait before the next poll, at most `configured`: short enough that the
    /// busiest stack cannot write half its retention between two polls at its recent rate,
    /// with a margin of two (Heat purges a batch of the oldest at once, 200 of 1000 by
    /// default); growing back to `configured` as that rate fades when quiet; never under
    /// `MIN_DELAY` nor faster than `MAX_REQUESTS_PER_SEC` given the last poll's requests.
    pub fn next_delay(&self, configured: StdDuration) -> StdDuration {
        let floor = MIN_DELAY.max(StdDuration::from_secs_f64(
            f64::from(self.last_requests) / MAX_REQUESTS_PER_SEC,
        ));
        if configured <= floor || self.polls == 0 {
            return configured;
        }
        let safe = if self.owner_rate > 0.0 {
            let secs = self.retention as f64 / (4.0 * self.owner_rate);
            StdDuration::from_secs_f64(secs.min(configured.as_secs_f64()))
        } else {
            configured
        };
        if self.polls == 1 {
            return safe.min(FIRST_RATE_DELAY).clamp(floor, configured);
        }
        // Quiet polls back off through the fading rate alone, not by doubling the delay: a
        // group whose members are running is quiet until their ends arrive (measured: with
        // doubling the delay reached 5 s in that lull and Heat purged 34 events of the ends).
        safe.clamp(floor, configured)
    }

    /// Whether the window behind the newest event has been read late enough to trust.
    pub fn settled(&self) -> bool {
        self.settled
    }

    pub fn has_seen(&self, id: &str) -> bool {
        self.seen.contains(&IdKey::of(id))
    }
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    pub fn duplicates_dropped(&self) -> u64 {
        self.duplicates_dropped
    }
    /// Ids held for de-duplication (bounded; the soak watches it).
    pub fn remembered(&self) -> usize {
        self.seen.len()
    }

    fn remember(&mut self, id: &str) {
        let key = IdKey::of(id);
        self.seen.insert(key);
        self.seen_order.push_back(key);
        while self.seen_order.len() > MAX_REMEMBERED {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;
    use chrono::TimeZone;

    fn ev(id: &str, secs: i64) -> StackEvent {
        StackEvent {
            id: id.into(),
            time: Utc
                .timestamp_opt(1_700_000_000 + secs, 0)
                .single()
                .expect("valid time"),
            resource_name: "r".into(),
            logical_id: "r".into(),
            physical_id: None,
            status: Status::parse("CREATE_IN_PROGRESS"),
            status_reason: None,
            stack: None,
            path: vec![],
        }
    }

    fn owned(id: &str, secs: i64, owner: &str) -> StackEvent {
        StackEvent {
            stack: Some(crate::model::StackRef {
                name: owner.into(),
                id: owner.into(),
            }),
            ..ev(id, secs)
        }
    }

    /// Runs one poll over `listing` (the server's events, any order) as `follow_step` reads
    /// it: newest first in pages, the first of the plan's size, stopping at the horizon.
    /// Returns the fresh events' ids and the requests the poll took.
    fn poll(t: &mut EventTracker, listing: &[StackEvent], at: Instant) -> (Vec<String>, u32) {
        let mut sorted = listing.to_vec();
        sorted.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| b.id.cmp(&a.id)));
        let plan = t.begin_poll(at);
        let (mut read, mut requests, mut limit) = (Vec::new(), 0u32, plan.first_limit as usize);
        let mut rest = sorted.as_slice();
        loop {
            requests += 1;
            let (page, tail) = rest.split_at(limit.min(rest.len()));
            rest = tail;
            let reached = plan
                .horizon
                .is_some_and(|h| page.iter().any(|e| e.time < h));
            read.extend_from_slice(page);
            if reached || page.len() < limit || rest.is_empty() {
                break;
            }
            limit = MAX_PAGE as usize;
        }
        let fresh = t.finish_poll(&plan, read, true, requests, at);
        (fresh.into_iter().map(|e| e.id).collect(), requests)
    }

    fn secs(s: f64) -> StdDuration {
        StdDuration::from_secs_f64(s)
    }

    #[test]
    fn a_late_writer_inside_the_window_is_delivered_once_and_widens_it() {
        let t0 = Instant::now();
        let mut t = EventTracker::default();
        let mut heat: Vec<StackEvent> = (0..10).map(|i| ev(&format!("e{i}"), 100 + i)).collect();
        assert_eq!(poll(&mut t, &heat, t0).0.len(), 10);
        assert_eq!(t.horizon(), Some(ev("h", 107).time), "newest 109 minus 2 s");
        // Committed after that poll, stamped a second behind the newest delivered event.
        heat.push(ev("late", 108));
        let (fresh, _) = poll(&mut t, &heat, t0 + secs(1.0));
        assert_eq!(fresh, vec!["late"]);
        assert_eq!(poll(&mut t, &heat, t0 + secs(2.0)).0, Vec::<String>::new());
        assert_eq!(t.delivered(), 11);
        // Seen one second behind: the window becomes twice that (here still the 2 s base);
        // one landing 4 s behind (read here because its page reached past the horizon)
        // makes it 8 s, so the next poll reads back 8 s.
        assert_eq!(t.overlap(), Duration::seconds(2));
        heat.push(ev("late4", 105));
        assert_eq!(poll(&mut t, &heat, t0 + secs(3.0)).0, vec!["late4"]);
        assert_eq!(t.overlap(), Duration::seconds(8));
        assert_eq!(t.horizon(), Some(ev("h", 101).time));
        assert_eq!(t.delivered(), 12);
    }

    #[test]
    fn a_quiet_poll_is_one_request_and_the_window_settles() {
        let t0 = Instant::now();
        let mut t = EventTracker::default();
        // A burst of 300 events in the newest second, then nothing.
        let heat: Vec<StackEvent> = (0..300).map(|i| ev(&format!("e{i:03}"), 50)).collect();
        let (fresh, requests) = poll(&mut t, &heat, t0);
        assert_eq!(
            (fresh.len(), requests),
            (300, 1),
            "a first read takes big pages"
        );
        // Quiet polls: the first request is sized to the window the last poll re-read.
        let (fresh, requests) = poll(&mut t, &heat, t0 + secs(1.0));
        assert!(fresh.is_empty());
        assert_eq!(requests, 1);
        assert!(
            !t.settled(),
            "1 s after delivery a 2 s-late writer may still come"
        );
        // Read again 3 s (window + 1 s) after the newest was delivered: settled, and from
        // then on a quiet poll is one probe-sized request ending at the newest second.
        let (fresh, requests) = poll(&mut t, &heat, t0 + secs(3.5));
        assert_eq!((fresh.len(), requests), (0, 1));
        assert!(t.settled());
        assert_eq!(t.horizon(), Some(ev("h", 51).time));
        let plan = t.begin_poll(t0 + secs(5.0));
        assert_eq!(plan.first_limit, PROBE_PAGE);
        assert_eq!(poll(&mut t, &heat, t0 + secs(5.0)), (vec![], 1));
        // New events unsettle it again.
        let mut heat = heat;
        heat.push(ev("new", 52));
        assert_eq!(poll(&mut t, &heat, t0 + secs(6.0)).0, vec!["new"]);
        assert!(!t.settled());
        assert_eq!(t.horizon(), Some(ev("h", 50).time));
    }

    #[test]
    fn a_burst_on_one_stack_shortens_the_interval_and_quiet_backs_it_off() {
        let t0 = Instant::now();
        let configured = secs(5.0);
        let mut t = EventTracker::default();
        t.set_retention(200);
        assert_eq!(
            t.next_delay(configured),
            configured,
            "no poll yet: as configured"
        );
        let mut heat = vec![owned("s0", 0, "group")];
        poll(&mut t, &heat, t0);
        assert_eq!(
            t.next_delay(configured),
            secs(1.0),
            "rate unknown: measure it soon"
        );
        // The group stack writes 40 events a second; a member stack one.
        let mut at = 0.0;
        for round in 0..3 {
            at += 1.0;
            for i in 0..40 {
                heat.push(owned(&format!("g{round}-{i}"), round + 1, "group"));
            }
            heat.push(owned(&format!("m{round}"), round + 1, "member-7"));
            let (fresh, _) = poll(&mut t, &heat, t0 + secs(at));
            assert_eq!(fresh.len(), 41);
        }
        let busy = t.next_delay(configured);
        // Purge-safe: between two polls the busiest stack writes under half its retention.
        assert!(busy < configured, "{busy:?}");
        assert!(busy.as_secs_f64() * 40.0 <= 200.0 / 2.0, "{busy:?}");
        assert!(busy >= MIN_DELAY);
        // With Heat's default retention the same burst is no threat: the configured interval.
        let mut roomy = t.clone();
        roomy.set_retention(DEFAULT_RETENTION);
        assert_eq!(roomy.next_delay(configured), configured);
        // Quiet polls: the delay grows back to the configured interval as the rate fades
        // (half every 5 s), never jumping there while the burst is recent.
        let mut last = busy;
        let mut quiet = 0;
        while last < configured {
            quiet += 1;
            assert!(quiet < 40, "never backed off: {last:?}");
            at += last.as_secs_f64();
            assert!(poll(&mut t, &heat, t0 + secs(at)).0.is_empty());
            let d = t.next_delay(configured);
            assert!(d >= last, "quiet poll {quiet}: {d:?} after {last:?}");
            last = d;
        }
        assert!(
            quiet >= 3,
            "backed off to {configured:?} after {quiet} quiet polls"
        );
        // A configured interval under the floor is the operator's choice and is kept.
        assert_eq!(t.next_delay(secs(0.2)), secs(0.2));
    }

    #[test]
    fn a_burst_in_the_first_read_is_not_taken_for_a_quiet_stack() {
        let t0 = Instant::now();
        let configured = secs(5.0);
        let mut t = EventTracker::default();
        t.set_retention(200);
        // The first read finds a group's 200 member starts in one second, then nothing comes
        // while the members run.
        let heat: Vec<StackEvent> = (0..200)
            .map(|i| owned(&format!("start{i}"), 10, "group"))
            .collect();
        poll(&mut t, &heat, t0);
        let mut at = 0.0;
        for _ in 0..4 {
            let d = t.next_delay(configured);
            // 100 events/s for the busiest stack: polls stay well under the interval.
            assert!(d < secs(2.0), "{d:?} at {at} s");
            at += d.as_secs_f64();
            assert!(poll(&mut t, &heat, t0 + secs(at)).0.is_empty());
        }
        // Without the burst the second poll comes after a second, then as configured.
        let mut calm = EventTracker::default();
        calm.set_retention(200);
        poll(&mut calm, &[owned("one", 10, "group")], t0);
        assert_eq!(calm.next_delay(configured), secs(1.0));
        poll(&mut calm, &[owned("one", 10, "group")], t0 + secs(1.0));
        assert_eq!(calm.next_delay(configured), configured);
    }

    #[test]
    fn the_interval_never_spends_more_than_the_request_share() {
        let t0 = Instant::now();
        let mut t = EventTracker::default();
        t.set_retention(10);
        let plan = t.begin_poll(t0);
        t.finish_poll(&plan, vec![owned("a", 0, "s")], true, 1, t0);
        // A poll of 8 requests at a furious rate: at most 4 requests a second on average.
        let plan = t.begin_poll(t0 + secs(1.0));
        let page: Vec<StackEvent> = (0..500).map(|i| owned(&format!("b{i}"), 1, "s")).collect();
        t.finish_poll(&plan, page, true, 8, t0 + secs(1.0));
        assert_eq!(t.next_delay(secs(5.0)), secs(2.0));
    }

    #[test]
    fn an_unfinished_poll_does_not_settle_the_window() {
        let t0 = Instant::now();
        let mut t = EventTracker::default();
        poll(&mut t, &[ev("a", 10)], t0);
        let plan = t.begin_poll(t0 + secs(10.0));
        t.finish_poll(&plan, vec![ev("a", 10)], false, 3, t0 + secs(10.0));
        assert!(!t.settled());
    }

    /// Heat's order within a second survives a poll: a newest-first read of a resource's
    /// `IN_PROGRESS` then `COMPLETE` (same second, UUIDs that sort the other way) comes out
    /// `IN_PROGRESS` first, and so does the next second's pair read on the next poll.
    #[test]
    fn keeps_heats_order_within_a_second() {
        let t0 = Instant::now();
        let mut t = EventTracker::default();
        let newest_first = |pairs: &[(&str, i64)]| -> Vec<StackEvent> {
            pairs.iter().rev().map(|(id, s)| ev(id, *s)).collect()
        };
        let plan = t.begin_poll(t0);
        let out = t.finish_poll(
            &plan,
            newest_first(&[("ffff-started", 7), ("0000-done", 7)]),
            true,
            1,
            t0,
        );
        let ids: Vec<&str> = out.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["ffff-started", "0000-done"]);
        let plan = t.begin_poll(t0 + secs(1.0));
        let read = newest_first(&[
            ("ffff-started", 7),
            ("0000-done", 7),
            ("eeee-next", 8),
            ("1111-next-done", 8),
        ]);
        let out = t.finish_poll(&plan, read, true, 1, t0 + secs(1.0));
        let ids: Vec<&str> = out.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["eeee-next", "1111-next-done"]);
    }

    #[test]
    fn drops_duplicates_when_server_answers_from_the_start() {
        let mut t = EventTracker::new(Duration::seconds(5));
        let first = t.ingest(vec![ev("a", 0), ev("b", 1), ev("c", 2)]);
        assert_eq!(first.len(), 3);
        // Purged marker: server replays from its oldest retained event.
        let again = t.ingest(vec![ev("b", 1), ev("c", 2), ev("d", 3)]);
        let ids: Vec<&str> = again.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["d"]);
        assert_eq!(t.duplicates_dropped(), 2);
        assert_eq!(t.delivered(), 4);
    }

    #[test]
    fn delivers_oldest_first_and_reads_back_behind_the_newest() {
        let mut t = EventTracker::new(Duration::seconds(5));
        let out = t.ingest(vec![ev("z", 30), ev("x", 10), ev("y", 20), ev("w", 26)]);
        let ids: Vec<&str> = out.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["x", "y", "w", "z"]);
        // newest 30, overlap 5: a poll reads back to 25, so w (26) is re-read, y (20) not.
        assert_eq!(t.horizon(), Some(ev("h", 25).time));
        // A late event inside the window is still delivered once.
        let late = t.ingest(vec![ev("w", 26), ev("late", 27), ev("z", 30)]);
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].id, "late");
    }

    #[test]
    fn ids_are_keyed_exactly() {
        let a = "e3a2ad07-97b8-4f17-adea-0f0255583a89";
        assert_eq!(IdKey::of(a), IdKey::of(&a.to_uppercase()));
        assert_ne!(
            IdKey::of(a),
            IdKey::of("e3a2ad07-97b8-4f17-adea-0f0255583a8a")
        );
        assert_eq!(IdKey::of("r-1"), IdKey::of("r-1"));
        assert_ne!(IdKey::of("r-1"), IdKey::of("r-2"));
        assert_eq!(parse_uuid("e3a2ad07x97b8-4f17-adea-0f0255583a89"), None);
        assert_eq!(parse_uuid("g3a2ad07-97b8-4f17-adea-0f0255583a89"), None);
        let mut t = EventTracker::default();
        assert_eq!(t.ingest(vec![ev(a, 0), ev("x", 1)]).len(), 2);
        assert!(t.has_seen(a) && t.has_seen("x") && !t.has_seen("y"));
        assert_eq!(t.ingest(vec![ev(a, 0), ev("x", 1)]).len(), 0);
    }

    #[test]
    fn reconnecting_backs_off_to_a_cap() {
        let waits: Vec<u64> = (1..=8).map(|n| reconnect_delay(n).as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(reconnect_delay(u32::MAX), RECONNECT_CAP);
        assert_eq!(reconnect_delay(0), secs(1.0));
    }

    #[test]
    fn no_horizon_before_anything_was_seen() {
        let mut t = EventTracker::default();
        assert_eq!(t.horizon(), None);
        // A page of nothing but duplicates or nothing at all does not move it either.
        t.ingest(vec![]);
        assert_eq!(t.horizon(), None);
    }

    #[test]
    fn horizon_follows_the_newest_delivered_event_only() {
        let mut t = EventTracker::new(Duration::seconds(5));
        t.ingest(vec![ev("a", 50)]);
        // An older event arriving late is delivered but does not pull the horizon back.
        assert_eq!(t.ingest(vec![ev("b", 40)]).len(), 1);
        assert_eq!(t.horizon(), Some(ev("h", 45).time));
        t.ingest(vec![ev("c", 60)]);
        assert_eq!(t.horizon(), Some(ev("h", 55).time));
    }
}
