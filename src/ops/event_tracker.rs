//! De-duplicating, gap-free bookkeeping for following Heat events.
//!
//! Heat pages events by `marker` (an event id) in `(created_at, id)` order. Two things break a
//! naive follower such as `openstack stack event list --follow`:
//! - an event written a moment late with an earlier timestamp sorts *before* the marker and is
//!   never returned (a gap), so each poll reads newest first back to some seconds behind the
//!   newest event delivered ([`EventTracker::horizon`]) and the overlap is de-duplicated;
//! - once Heat purges old events (`max_events_per_stack`) a purged marker is ignored and the
//!   server answers from the start (duplicates), so every event id ever delivered is remembered.

use crate::model::StackEvent;
use chrono::{DateTime, Duration, Utc};
use std::collections::{HashSet, VecDeque};

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

#[derive(Debug, Clone)]
pub struct EventTracker {
    seen: HashSet<IdKey>,
    seen_order: VecDeque<IdKey>,
    /// The newest delivered event's time: the follower reads back to it minus `overlap`.
    newest: Option<DateTime<Utc>>,
    overlap: Duration,
    delivered: u64,
    duplicates_dropped: u64,
}

impl Default for EventTracker {
    fn default() -> Self {
        EventTracker::new(Duration::seconds(10))
    }
}

impl EventTracker {
    /// `overlap`: how far behind the newest event each poll re-reads.
    pub fn new(overlap: Duration) -> Self {
        EventTracker {
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
            newest: None,
            overlap,
            delivered: 0,
            duplicates_dropped: 0,
        }
    }

    /// Takes one page as the server returned it; returns the events not delivered before,
    /// oldest first.
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
        fresh.sort_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id.cmp(&b.id)));
        if let Some(last) = fresh.last() {
            self.newest = Some(self.newest.map_or(last.time, |n| n.max(last.time)));
        }
        self.delivered += fresh.len() as u64;
        fresh
    }

    /// How far back a newest-first poll must read: the newest delivered event's time minus
    /// the overlap, so late writers inside that window are caught. Events older than this
    /// that were not delivered are treated as gone.
    pub fn horizon(&self) -> Option<DateTime<Utc>> {
        Some(self.newest? - self.overlap)
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
