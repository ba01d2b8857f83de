//! Stalled or failed? A Magnum cluster on Cluster API that cannot be built never says so.
//!
//! Neither Cluster API driver of Magnum (vexxhost `magnum-cluster-api`, `magnum-capi-helm`)
//! marks a create failed: Cluster API keeps reconciling, so the cluster sits in
//! `CREATE_IN_PROGRESS` (or `UPDATE_IN_PROGRESS`) for ever while a machine Nova could not
//! place is in ERROR, or a machine stays in BUILD, or every server is ACTIVE but the
//! cluster waits on something else (a node that never joins). Heat would have said
//! `CREATE_FAILED` after its timeout; here the operator has to read the Nova servers.
//!
//! [`assess`] reads them the way an operator would:
//! - a server in **ERROR** is a failure Cluster API will not get past by itself (it retries
//!   the same request): the cluster has **failed**, and the server and Nova's fault say why;
//! - a server in **BUILD** for much longer than its siblings took to become ACTIVE (more
//!   than [`SLOW_FACTOR`] times their median build time, and more than [`FLOOR_SECS`]) is
//!   **stalled**, and so is the cluster that waits on it;
//! - a cluster in progress for that long with nothing left building is stalled too;
//! - between looks, counts that never move (servers per state) for longer than the floor
//!   mean a stall since the first look that saw them ([`Progress`]).
//!
//! Pure: the servers and the clock come in, a verdict goes out; the console and
//! `caldera nodegroups` word it.

use crate::model::Status;
use chrono::{DateTime, Utc};

/// A server in BUILD this many times longer than its siblings' median build is stalled.
pub const SLOW_FACTOR: i64 = 3;
/// Below this nothing is called stalled: Nova builds take minutes, and a first boot with a
/// large image, or Cluster API's own back-off between retries, a few more.
pub const FLOOR_SECS: i64 = 10 * 60;
/// With no ACTIVE sibling to compare with, how long a BUILD may take.
pub const NO_SIBLING_SECS: i64 = 30 * 60;

/// One Nova server as the assessment reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLook {
    pub name: String,
    /// Nova's status: `ACTIVE`, `BUILD`, `ERROR`...
    pub status: String,
    /// Nova's fault message (a server in ERROR).
    pub fault: Option<String>,
    pub created: Option<DateTime<Utc>>,
    /// When the server last changed (for an ACTIVE server: about when it became ACTIVE).
    pub updated: Option<DateTime<Utc>>,
}

impl From<&crate::api::nova::ServerInfo> for ServerLook {
    fn from(s: &crate::api::nova::ServerInfo) -> Self {
        ServerLook {
            name: s.name.clone(),
            status: s.status.clone(),
            fault: s.fault.clone(),
            created: s.created,
            updated: s.updated,
        }
    }
}

impl ServerLook {
    /// A node read from Nova (a Cluster API node: its status is Nova's, its reason the
    /// fault); `None` for a node whose status is Heat's.
    pub fn of_node(n: &crate::model::Node) -> Option<ServerLook> {
        if n.status.action != crate::ops::capi_nodes::NOVA_ACTION {
            return None;
        }
        Some(ServerLook {
            name: n.name.clone(),
            status: n.status.raw.clone(),
            fault: n
                .status
                .is_failed()
                .then(|| n.status_reason.clone())
                .flatten(),
            created: n.created,
            updated: n.since,
        })
    }
}

/// Servers per state at one look, and since when they have not moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// (ACTIVE, BUILD, ERROR, other).
    pub counts: (usize, usize, usize, usize),
    /// The first look that saw these counts.
    pub unchanged_since: DateTime<Utc>,
}

impl Progress {
    /// This look after `previous`: the same counts keep the older time.
    pub fn next(previous: Option<&Progress>, servers: &[ServerLook], now: DateTime<Utc>) -> Self {
        let counts = counts(servers);
        let unchanged_since = match previous {
            Some(p) if p.counts == counts => p.unchanged_since,
            _ => now,
        };
        Progress {
            counts,
            unchanged_since,
        }
    }
}

fn counts(servers: &[ServerLook]) -> (usize, usize, usize, usize) {
    let mut c = (0, 0, 0, 0);
    for s in servers {
        match s.status.as_str() {
            "ACTIVE" => c.0 += 1,
            "BUILD" => c.1 += 1,
            "ERROR" => c.2 += 1,
            _ => c.3 += 1,
        }
    }
    c
}

/// What the servers say about a cluster or node group in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not in progress and nothing in ERROR: nothing to say.
    Settled,
    /// In progress, within what its siblings took.
    Progressing,
    /// Servers in ERROR, with Nova's fault (name, fault).
    Failed { servers: Vec<(String, String)> },
    /// Nothing moves: why, naming the slowest server when there is one.
    Stalled {
        why: String,
        slowest: Option<String>,
        since: Option<DateTime<Utc>>,
    },
}

impl Verdict {
    /// One line for a console or a terminal (names and faults from the cloud: the caller
    /// makes it terminal-safe).
    pub fn line(&self, now: DateTime<Utc>) -> Option<String> {
        match self {
            Verdict::Settled | Verdict::Progressing => None,
            Verdict::Failed { servers } => {
                let mut text = format!(
                    "failed: {} server(s) in ERROR (Cluster API retries, Magnum will not say FAILED)",
                    servers.len()
                );
                for (name, fault) in servers.iter().take(3) {
                    text.push_str(&format!(" · {name}: {fault}"));
                }
                if servers.len() > 3 {
                    text.push_str(&format!(" · and {} more", servers.len() - 3));
                }
                Some(text)
            }
            Verdict::Stalled { why, since, .. } => Some(match since {
                Some(t) => format!("stalled for {}: {why}", words((now - *t).num_seconds())),
                None => format!("stalled: {why}"),
            }),
        }
    }
}

/// `2h05m`, `47m`, `30s`.
pub(crate) fn words(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The verdict on a Cluster API cluster (or one node group) in `status` since `since`, from
/// its servers at `now`; `progress` is what the looks so far saw (`None` for a single look).
pub fn assess(
    status: &Status,
    since: Option<DateTime<Utc>>,
    servers: &[ServerLook],
    progress: Option<&Progress>,
    now: DateTime<Utc>,
) -> Verdict {
    let failed: Vec<(String, String)> = servers
        .iter()
        .filter(|s| s.status == "ERROR")
        .map(|s| {
            let fault = s
                .fault
                .clone()
                .unwrap_or_else(|| "no fault recorded".into());
            (s.name.clone(), fault)
        })
        .collect();
    if !failed.is_empty() {
        return Verdict::Failed { servers: failed };
    }
    if !(status.is_in_progress() && matches!(status.action.as_str(), "CREATE" | "UPDATE")) {
        return Verdict::Settled;
    }
    // How long the ACTIVE siblings took from created to ACTIVE.
    let mut builds: Vec<i64> = servers
        .iter()
        .filter(|s| s.status == "ACTIVE")
        .filter_map(|s| Some((s.updated? - s.created?).num_seconds().max(0)))
        .collect();
    builds.sort_unstable();
    let median = builds.get(builds.len() / 2).copied();
    let limit = match median {
        Some(m) => (m * SLOW_FACTOR).max(FLOOR_SECS),
        None => NO_SIBLING_SECS,
    };
    let sibling_note = match median {
        Some(m) => format!(
            "its {} ACTIVE sibling(s) took {} (median)",
            builds.len(),
            words(m)
        ),
        None => "no sibling is ACTIVE yet".into(),
    };
    // The slowest server still building.
    let slowest = servers
        .iter()
        .filter(|s| s.status == "BUILD")
        .filter_map(|s| Some((s, (now - s.created?).num_seconds())))
        .max_by_key(|(_, age)| *age);
    if let Some((s, age)) = slowest.filter(|(_, age)| *age > limit) {
        return Verdict::Stalled {
            why: format!("{} in BUILD for {}; {sibling_note}", s.name, words(age)),
            slowest: Some(s.name.clone()),
            since: s.created,
        };
    }
    let building = servers.iter().filter(|s| s.status == "BUILD").count();
    let in_status = since.map(|t| (now - t).num_seconds());
    let longest_build = builds.last().copied().unwrap_or(0);
    let settle = (longest_build * SLOW_FACTOR).max(FLOOR_SECS);
    if building == 0 && !servers.is_empty() && servers.iter().all(|s| s.status == "ACTIVE") {
        // Every server is ACTIVE, the cluster still in progress: Cluster API waits on
        // something Nova does not show (bootstrap, a node that never joins).
        let last_active = servers.iter().filter_map(|s| s.updated).max();
        if let Some(t) = last_active.filter(|t| (now - *t).num_seconds() > settle) {
            return Verdict::Stalled {
                why: format!(
                    "{} for {}, every server ACTIVE since {} ago: Cluster API waits on something Nova does not show (bootstrap, a node that never joins)",
                    status,
                    in_status.map(words).unwrap_or_else(|| "?".into()),
                    words((now - t).num_seconds())
                ),
                slowest: None,
                since: Some(t),
            };
        }
    }
    if servers.is_empty() && in_status.is_some_and(|s| s > NO_SIBLING_SECS) {
        return Verdict::Stalled {
            why: format!("{status} and not one server in Nova"),
            slowest: None,
            since,
        };
    }
    if let Some(p) = progress {
        let still = (now - p.unchanged_since).num_seconds();
        if still > settle.max(limit) && p.counts == counts(servers) {
            let (a, b, e, o) = p.counts;
            return Verdict::Stalled {
                why: format!(
                    "no server changed state since {} ago ({a} ACTIVE, {b} BUILD, {e} ERROR, {o} other)",
                    words(still)
                ),
                slowest: None,
                since: Some(p.unchanged_since),
            };
        }
    }
    Verdict::Progressing
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("time")
    }

    fn server(name: &str, status: &str, created_min: i64, updated_min: i64) -> ServerLook {
        ServerLook {
            name: name.into(),
            status: status.into(),
            fault: None,
            created: Some(t0() + Duration::minutes(created_min)),
            updated: Some(t0() + Duration::minutes(updated_min)),
        }
    }

    fn creating() -> Status {
        Status::parse("CREATE_IN_PROGRESS")
    }

    #[test]
    fn a_server_in_error_fails_the_cluster_with_its_fault() {
        let mut bad = server("kube-a-gpu-x", "ERROR", 0, 1);
        bad.fault = Some("No valid host was found.".into());
        let servers = [server("kube-a-w-1", "ACTIVE", 0, 3), bad];
        let v = assess(
            &creating(),
            Some(t0()),
            &servers,
            None,
            t0() + Duration::minutes(5),
        );
        assert_eq!(
            v,
            Verdict::Failed {
                servers: vec![("kube-a-gpu-x".into(), "No valid host was found.".into())]
            }
        );
        let line = v.line(t0()).expect("a line");
        assert!(
            line.contains("kube-a-gpu-x: No valid host was found."),
            "{line}"
        );
    }

    #[test]
    fn a_build_far_slower_than_its_siblings_is_stalled_and_named() {
        // Siblings took 2, 3 and 4 minutes; the floor (10 min) is above 3x the median (9).
        let servers = [
            server("w-1", "ACTIVE", 0, 2),
            server("w-2", "ACTIVE", 0, 3),
            server("w-3", "ACTIVE", 0, 4),
            server("w-4", "BUILD", 0, 0),
        ];
        let at = |m| t0() + Duration::minutes(m);
        assert_eq!(
            assess(&creating(), Some(t0()), &servers, None, at(9)),
            Verdict::Progressing
        );
        match assess(&creating(), Some(t0()), &servers, None, at(11)) {
            Verdict::Stalled {
                slowest,
                why,
                since,
            } => {
                assert_eq!(slowest.as_deref(), Some("w-4"));
                assert!(
                    why.contains("w-4 in BUILD for 11m") && why.contains("3m (median)"),
                    "{why}"
                );
                assert_eq!(since, Some(t0()));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn slow_siblings_raise_the_bar() {
        // Siblings took 20 minutes: a 45-minute build is within 3x.
        let servers = [server("w-1", "ACTIVE", 0, 20), server("w-2", "BUILD", 0, 0)];
        let v = assess(
            &creating(),
            Some(t0()),
            &servers,
            None,
            t0() + Duration::minutes(45),
        );
        assert_eq!(v, Verdict::Progressing);
        let v = assess(
            &creating(),
            Some(t0()),
            &servers,
            None,
            t0() + Duration::minutes(61),
        );
        assert!(matches!(v, Verdict::Stalled { .. }), "{v:?}");
    }

    #[test]
    fn every_server_active_but_still_in_progress_is_stalled() {
        let servers = [server("w-1", "ACTIVE", 0, 2), server("w-2", "ACTIVE", 0, 3)];
        let at = |m| t0() + Duration::minutes(m);
        assert_eq!(
            assess(&creating(), Some(t0()), &servers, None, at(8)),
            Verdict::Progressing
        );
        let v = assess(&creating(), Some(t0()), &servers, None, at(60));
        let line = v.line(at(60)).expect("stalled");
        assert!(line.contains("every server ACTIVE since 57m ago"), "{line}");
    }

    #[test]
    fn counts_that_never_move_between_looks_are_a_stall_since_the_first_look() {
        let updating = Status::parse("UPDATE_IN_PROGRESS");
        let servers = [
            server("w-1", "ACTIVE", 0, 2),
            server("w-2", "REBUILD", 0, 1),
        ];
        let first = Progress::next(None, &servers, t0());
        let later = Progress::next(Some(&first), &servers, t0() + Duration::minutes(5));
        assert_eq!(later.unchanged_since, t0());
        let at = |m| t0() + Duration::minutes(m);
        // Within the floor: still progressing; past it, stalled since the first look.
        let v = assess(&updating, Some(t0()), &servers, Some(&later), at(9));
        assert_eq!(v, Verdict::Progressing);
        let v = assess(&updating, Some(t0()), &servers, Some(&later), at(11));
        let line = v.line(at(11)).expect("stalled");
        assert!(
            line.starts_with("stalled for 11m: no server changed state"),
            "{line}"
        );
        // One server moved: the clock starts again.
        let moved = [
            server("w-1", "ACTIVE", 0, 2),
            server("w-2", "ACTIVE", 0, 10),
        ];
        let p = Progress::next(Some(&later), &moved, at(11));
        assert_eq!(p.unchanged_since, at(11));
    }

    #[test]
    fn a_settled_cluster_has_nothing_to_say() {
        let servers = [server("w-1", "ACTIVE", 0, 2)];
        let v = assess(
            &Status::parse("CREATE_COMPLETE"),
            Some(t0()),
            &servers,
            None,
            t0() + Duration::hours(5),
        );
        assert_eq!(v, Verdict::Settled);
        assert_eq!(v.line(t0()), None);
    }
}
