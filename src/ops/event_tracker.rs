//! De-duplicating, gap-free bookkeeping for following Heat events.
//!
//! Heat pages events by `marker` (an event id) in `(created_at, id)` order. Two things break a
//! naive follower such as `openstack stack event list --follow`:
//! - an event written a moment late with an earlier timestamp sorts *before* the marker and is
//!   never returned (a gap), so each poll starts from a marker some seconds behind the newest
//!   event and the overlap is de-duplicated;
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
    /// Recently delivered events `(time, id)` in delivery order, for choosing a resume marker.
    recent: VecDeque<(DateTime<Utc>, String)>,
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
            recent: VecDeque::new(),
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
        for event in &fresh {
            self.recent.push_back((event.time, event.id.clone()));
        }
        self.delivered += fresh.len() as u64;
        self.trim_recent();
        fresh
    }

    /// The marker to start the next poll from: the newest delivered event that is at least
    /// `overlap` older than the newest one, so late writers inside that window are caught.
    pub fn resume_marker(&self) -> Option<String> {
        let newest = self.recent.iter().map(|(t, _)| *t).max()?;
        let cutoff = newest - self.overlap;
        self.recent
            .iter()
            .filter(|(t, _)| *t <= cutoff)
            .max_by(|a, b| a.0.cmp(&b.0))
            .or_else(|| self.recent.iter().min_by(|a, b| a.0.cmp(&b.0)))
            .map(|(_, id)| id.clone())
    }

    /// How far back a newest-first poll must read: the newest delivered event's time minus
    /// the overlap. Events older than this that were not delivered are treated as gone
    /// (the same window `resume_marker` gives a forward poll).
    pub fn horizon(&self) -> Option<DateTime<Utc>> {
        let newest = self.recent.iter().map(|(t, _)| *t).max()?;
        Some(newest - self.overlap)
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
    /// Ids held for de-duplication, and events held for choosing the resume marker (the
    /// soak watches both stay bounded).
    pub fn remembered(&self) -> (usize, usize) {
        (self.seen.len(), self.recent.len())
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

    /// Keeps only what `resume_marker` may need: events inside the overlap window plus the
    /// newest one just outside it.
    fn trim_recent(&mut self) {
        let Some(newest) = self.recent.iter().map(|(t, _)| *t).max() else {
            return;
        };
        let cutoff = newest - self.overlap;
        let mut sorted: Vec<(DateTime<Utc>, String)> = self.recent.drain(..).collect();
        sorted.sort();
        let first_inside = sorted.partition_point(|(t, _)| *t <= cutoff);
        let keep_from = first_inside.saturating_sub(1);
        self.recent = sorted.into_iter().skip(keep_from).collect();
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
    fn delivers_oldest_first_and_resumes_behind_the_newest() {
        let mut t = EventTracker::new(Duration::seconds(5));
        let out = t.ingest(vec![ev("z", 30), ev("x", 10), ev("y", 20), ev("w", 26)]);
        let ids: Vec<&str> = out.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, vec!["x", "y", "w", "z"]);
        // newest 30, cutoff 25: the newest event at or before 25 is y (20)... w is 26, inside.
        assert_eq!(t.resume_marker().as_deref(), Some("y"));
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
    fn no_marker_before_anything_was_seen() {
        assert_eq!(EventTracker::default().resume_marker(), None);
    }
}
