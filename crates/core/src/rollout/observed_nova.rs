//! A Magnum upgrade or resize of a cluster run by a Cluster API driver, seen node by node
//! from Nova, in the rollout view's shape. Pure: the I/O is `service::watch_capi`.
//!
//! Cluster API never changes a machine in place. A MachineDeployment's rolling update
//! (default `maxSurge: 1`, `maxUnavailable: 0`) and a KubeadmControlPlane's rollout create
//! a NEW Machine — a new Nova server, with a new name and the new image — and once it is
//! ready delete an OLD one (Nova shows it `ACTIVE` with the task `deleting`, then forgets
//! it). So an operator watching Nova sees, per node group:
//!
//! - **old image**: a server not booted from the image Magnum's node group now asks for:
//!   pending;
//! - **being replaced**: an old server being deleted, or one whose replacement is building;
//! - **new image**: done once `ACTIVE`, updating while it builds, failed in `ERROR` (Nova's
//!   fault says why);
//! - **gone**: an old server an earlier look saw, no longer listed ([`Sightings`] keeps
//!   them across looks, as `Timeline` keeps Heat's events).
//!
//! Nova does not say which old machine a new one replaces (Cluster API's MachineSet picks
//! the machine to delete when the new one is ready): a building replacement is shown
//! against the oldest old server, a deleting server against the newest ready one, a
//! finished one against the old servers in the order they went. Each row is one machine
//! of the node group being brought to the new image, so the counts move one way: old →
//! being replaced → new.

use super::progress::{NodePhase, NodeProgress, RolloutState, RolloutStatus};
use crate::model::Status;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// One server of the node group as Nova lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerFact {
    pub name: String,
    /// Nova's `status` (`ACTIVE`, `BUILD`, `ERROR`...).
    pub status: String,
    /// `OS-EXT-STS:task_state` (`deleting`, `spawning`...).
    pub task_state: Option<String>,
    pub image: Option<String>,
    pub fault: Option<String>,
    pub created: Option<DateTime<Utc>>,
}

impl ServerFact {
    fn deleting(&self) -> bool {
        self.task_state.as_deref() == Some("deleting") || self.status == "DELETED"
    }
    fn failed(&self) -> bool {
        self.status == "ERROR"
    }
    /// Up and not leaving.
    fn ready(&self) -> bool {
        self.status == "ACTIVE" && !self.deleting()
    }
}

/// What one look at Magnum and Nova found.
#[derive(Debug, Clone, PartialEq)]
pub struct NovaFacts {
    pub id: String,
    pub target: String,
    /// The image Magnum's node group asks for now (`image_id`).
    pub image: String,
    /// Magnum's cluster status and reason (the drivers put Cluster API's conditions there).
    pub cluster_status: Status,
    pub cluster_reason: String,
    /// The node group's servers.
    pub servers: Vec<ServerFact>,
}

/// A server an earlier look saw. Times are the looks' (this machine's clock), except
/// `created`, Nova's.
#[derive(Debug, Clone, PartialEq)]
pub struct Sighting {
    pub image: Option<String>,
    pub created: Option<DateTime<Utc>>,
    /// The first look that listed it.
    pub first_seen: DateTime<Utc>,
    /// The first look that saw it ready (`ACTIVE`, no task).
    pub ready_at: Option<DateTime<Utc>>,
    /// The first look that no longer found it.
    pub gone_at: Option<DateTime<Utc>>,
}

/// The servers of a node group seen across looks: Nova lists no deleted server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sightings {
    pub servers: BTreeMap<String, Sighting>,
    /// The first look.
    pub since: Option<DateTime<Utc>>,
}

/// More than this many gone servers are not remembered (oldest dropped): bounded memory on
/// a long watch of a churning group.
const GONE_KEPT: usize = 5000;

impl Sightings {
    /// Folds in one look at `servers` made at `now`.
    pub fn ingest(&mut self, servers: &[ServerFact], now: DateTime<Utc>) {
        self.since.get_or_insert(now);
        for s in servers {
            let seen = self
                .servers
                .entry(s.name.clone())
                .or_insert_with(|| Sighting {
                    image: s.image.clone(),
                    created: s.created,
                    first_seen: now,
                    ready_at: None,
                    gone_at: None,
                });
            seen.gone_at = None;
            seen.image = s.image.clone();
            if s.ready() && seen.ready_at.is_none() {
                seen.ready_at = Some(now);
            }
        }
        for (name, seen) in self.servers.iter_mut() {
            if seen.gone_at.is_none() && !servers.iter().any(|s| &s.name == name) {
                seen.gone_at = Some(now);
            }
        }
        let gone = self
            .servers
            .values()
            .filter(|s| s.gone_at.is_some())
            .count();
        if gone > GONE_KEPT {
            let mut by_age: Vec<(DateTime<Utc>, String)> = self
                .servers
                .iter()
                .filter_map(|(n, s)| s.gone_at.map(|t| (t, n.clone())))
                .collect();
            by_age.sort();
            for (_, n) in by_age.into_iter().take(gone - GONE_KEPT) {
                self.servers.remove(&n);
            }
        }
    }

    /// When a machine's replacement started, on the looks' clock (durations and the pace
    /// compare it with when the looks saw things end): the look that first listed it, or,
    /// for a server already there at the first look, Nova's `created` (no later than that
    /// look). Nova's `created` alone for a server no look recorded.
    fn started(&self, s: &ServerFact) -> Option<DateTime<Utc>> {
        let Some(seen) = self.servers.get(&s.name) else {
            return s.created;
        };
        if Some(seen.first_seen) == self.since {
            return Some(
                s.created
                    .map_or(seen.first_seen, |c| c.min(seen.first_seen)),
            );
        }
        Some(seen.first_seen)
    }

    /// Servers seen before and gone now, in the order they went.
    fn gone(&self) -> Vec<(&str, &Sighting)> {
        let mut v: Vec<(&str, &Sighting)> = self
            .servers
            .iter()
            .filter(|(_, s)| s.gone_at.is_some())
            .map(|(n, s)| (n.as_str(), s))
            .collect();
        v.sort_by_key(|(n, s)| (s.gone_at, *n));
        v
    }
}

fn row(name: &str, phase: NodePhase, reason: String) -> NodeProgress {
    NodeProgress {
        name: name.to_string(),
        index: None,
        batch: 0,
        phase,
        released_at: None,
        finished_at: None,
        reason: Some(reason),
        straggler: false,
        server: None,
        address: None,
    }
}

fn image_of(s: &ServerFact) -> &str {
    s.image.as_deref().unwrap_or("?")
}

/// The servers of one look, sorted into the groups the pairing works on (each oldest first).
struct Split<'a> {
    /// Old image, up.
    standing: Vec<&'a ServerFact>,
    /// Old image, being deleted.
    deleting: Vec<&'a ServerFact>,
    /// Old image, in ERROR.
    old_failed: Vec<&'a ServerFact>,
    /// New image, up.
    ready: Vec<&'a ServerFact>,
    /// New image, building (or otherwise busy), or in ERROR.
    building: Vec<&'a ServerFact>,
    /// New image, being deleted (a resize removing it).
    leaving: Vec<&'a ServerFact>,
}

fn split<'a>(servers: &'a [ServerFact], image: &str) -> Split<'a> {
    let mut sorted: Vec<&ServerFact> = servers.iter().collect();
    sorted.sort_by(|a, b| (a.created, &a.name).cmp(&(b.created, &b.name)));
    let mut out = Split {
        standing: vec![],
        deleting: vec![],
        old_failed: vec![],
        ready: vec![],
        building: vec![],
        leaving: vec![],
    };
    for s in sorted {
        let old = s.image.as_deref() != Some(image);
        let slot = match (old, s.deleting(), s.failed(), s.ready()) {
            (true, true, _, _) => &mut out.deleting,
            (true, _, true, _) => &mut out.old_failed,
            (true, _, _, _) => &mut out.standing,
            (false, true, _, _) => &mut out.leaving,
            (false, _, _, true) => &mut out.ready,
            (false, _, _, _) => &mut out.building,
        };
        slot.push(s);
    }
    out
}

/// The rows of one look: each old machine with the machine replacing it, when there is one,
/// then the machines that replace nothing known (a first look after old ones went, or a
/// resize adding machines).
fn rows(facts: &NovaFacts, seen: &Sightings) -> Vec<NodeProgress> {
    let image = facts.image.as_str();
    let mut s = split(&facts.servers, image);
    let mut out = Vec::new();
    // An old server being deleted: the newest ready new server replaced it.
    for old in &s.deleting {
        let mut r = row(&old.name, NodePhase::Updating, String::new());
        r.reason = Some(match s.ready.pop() {
            Some(new) => {
                r.released_at = seen.started(new);
                format!("replaced by {} ({image}); deleting", new.name)
            }
            None => "deleting".into(),
        });
        out.push(r);
    }
    // A new server building (or failed): it replaces the oldest old server still up.
    let mut standing = s.standing.into_iter();
    for new in &s.building {
        let failed = new.failed();
        let (name, what) = match standing.next() {
            Some(old) => (old.name.as_str(), format!("replacement {}", new.name)),
            None => (new.name.as_str(), "new machine".to_string()),
        };
        let mut r = match (failed, &new.fault) {
            (true, f) => row(
                name,
                NodePhase::Failed,
                format!(
                    "{what} in ERROR: {}",
                    f.as_deref().unwrap_or("no fault given")
                ),
            ),
            (false, _) => row(
                name,
                NodePhase::Updating,
                format!("{what} {} ({image})", new.status),
            ),
        };
        r.released_at = seen.started(new);
        out.push(r);
    }
    for old in standing {
        out.push(row(
            &old.name,
            NodePhase::Pending,
            format!("old image {}", image_of(old)),
        ));
    }
    for old in &s.old_failed {
        let fault = old.fault.as_deref().unwrap_or("no fault given");
        out.push(row(&old.name, NodePhase::Failed, format!("ERROR: {fault}")));
    }
    for new in &s.leaving {
        let mut r = row(&new.name, NodePhase::Updating, "deleting".into());
        r.released_at = seen.started(new);
        out.push(r);
    }
    // Old servers gone: each replaced by the next ready new server, in order.
    let gone: Vec<(&str, &Sighting)> = seen
        .gone()
        .into_iter()
        .filter(|(_, g)| g.image.as_deref() != Some(image))
        .collect();
    let mut ready = std::mem::take(&mut s.ready).into_iter();
    for (name, g) in gone {
        let mut r = row(name, NodePhase::Done, "gone from Nova".into());
        r.finished_at = g.gone_at;
        if let Some(new) = ready.next() {
            r.reason = Some(format!("replaced by {} ({image})", new.name));
            r.released_at = seen.started(new);
        }
        out.push(r);
    }
    for new in ready {
        let mut r = row(&new.name, NodePhase::Done, format!("image {image}"));
        r.released_at = seen.started(new);
        // Finished when a look saw it become ready; one found ready has no known end.
        r.finished_at = seen
            .servers
            .get(&new.name)
            .and_then(|x| x.ready_at.filter(|t| *t > x.first_seen));
        out.push(r);
    }
    out
}

/// The state of the node group's update: done when every machine is on the new image and
/// up, whatever the rest of the cluster does; failed when Magnum says so (Cluster API keeps
/// retrying a machine in ERROR, so the drivers mostly show it in progress).
fn state_of(facts: &NovaFacts, nodes: &[NodeProgress]) -> RolloutState {
    if nodes.iter().all(|n| n.phase == NodePhase::Done) {
        return RolloutState::Completed;
    }
    if facts.cluster_status.is_failed() {
        return RolloutState::Failed {
            reason: facts.cluster_reason.clone(),
        };
    }
    RolloutState::Running
}

/// The status of a Cluster API update from one look at Nova and what earlier looks saw.
/// Batches are replacements, one machine each (Cluster API's surge of one), in the order
/// they started.
pub fn capi_status(facts: &NovaFacts, seen: &Sightings, now: DateTime<Utc>) -> RolloutStatus {
    let mut nodes = rows(facts, seen);
    nodes.sort_by(|a, b| {
        (a.released_at.is_none(), a.released_at, &a.name).cmp(&(
            b.released_at.is_none(),
            b.released_at,
            &b.name,
        ))
    });
    for (i, n) in nodes.iter_mut().enumerate() {
        n.batch = i;
    }
    let state = state_of(facts, &nodes);
    let running = state == RolloutState::Running;
    let current = nodes
        .iter()
        .filter(|n| n.phase == NodePhase::Updating)
        .map(|n| n.batch)
        .min()
        .filter(|_| running);
    let batches = nodes.len();
    let mut status = RolloutStatus::new(
        facts.id.clone(),
        facts.target.clone(),
        facts.image.clone(),
        state,
        nodes,
        batches,
        now,
    );
    status.current_batch = current;
    status.stack_status = facts.cluster_status.raw.clone();
    status.compute(now);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "ubuntu-2204-kube-v1.30.2";
    const NEW: &str = "ubuntu-2204-kube-v1.31.1";

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    fn server(name: &str, status: &str, image: &str, created: i64) -> ServerFact {
        ServerFact {
            name: name.into(),
            status: status.into(),
            task_state: None,
            image: Some(image.into()),
            fault: None,
            created: Some(t(created)),
        }
    }

    fn deleting(mut s: ServerFact) -> ServerFact {
        s.task_state = Some("deleting".into());
        s
    }

    fn facts(servers: Vec<ServerFact>) -> NovaFacts {
        NovaFacts {
            id: "observed-kube-abcde".into(),
            target: "capi-prod/default-worker".into(),
            image: NEW.into(),
            cluster_status: Status::parse("UPDATE_IN_PROGRESS"),
            cluster_reason: String::new(),
            servers,
        }
    }

    fn phases(s: &RolloutStatus) -> Vec<(String, NodePhase)> {
        let mut v: Vec<(String, NodePhase)> =
            s.nodes.iter().map(|n| (n.name.clone(), n.phase)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Looks at one replacement from start to end, as Cluster API makes it: counts move one
    /// way and the old machine is done only once it is gone.
    #[test]
    fn a_replacement_goes_old_then_replacing_then_gone() {
        let mut seen = Sightings::default();
        let olds = || {
            vec![
                server("w-a-1", "ACTIVE", OLD, -1000),
                server("w-a-2", "ACTIVE", OLD, -900),
            ]
        };
        let looks: Vec<Vec<ServerFact>> = vec![
            olds(),
            [olds(), vec![server("w-b-1", "BUILD", NEW, 10)]].concat(),
            vec![
                deleting(server("w-a-1", "ACTIVE", OLD, -1000)),
                server("w-a-2", "ACTIVE", OLD, -900),
                server("w-b-1", "ACTIVE", NEW, 10),
            ],
            vec![
                server("w-a-2", "ACTIVE", OLD, -900),
                server("w-b-1", "ACTIVE", NEW, 10),
            ],
        ];
        let mut got = Vec::new();
        for (k, servers) in looks.into_iter().enumerate() {
            let now = t(20 * k as i64 + 5);
            seen.ingest(&servers, now);
            let s = capi_status(&facts(servers), &seen, now);
            assert_eq!(s.nodes.len(), 2, "one row per machine: {:?}", s.nodes);
            got.push(phases(&s));
        }
        use NodePhase::*;
        let row = |a: NodePhase, b: NodePhase| vec![("w-a-1".into(), a), ("w-a-2".into(), b)];
        assert_eq!(got[0], row(Pending, Pending));
        assert_eq!(
            got[1],
            row(Updating, Pending),
            "the oldest is being replaced"
        );
        assert_eq!(
            got[2],
            row(Updating, Pending),
            "deleting once its replacement is up"
        );
        assert_eq!(got[3], row(Done, Pending), "done once gone");
    }

    #[test]
    fn rows_name_the_replacement_and_images() {
        let servers = vec![
            server("w-a-1", "ACTIVE", OLD, -1000),
            server("w-b-1", "BUILD", NEW, 10),
        ];
        let s = capi_status(&facts(servers), &Sightings::default(), t(30));
        let n = &s.nodes[0];
        assert_eq!(n.name, "w-a-1");
        assert_eq!(
            n.reason.as_deref(),
            Some(format!("replacement w-b-1 BUILD ({NEW})").as_str())
        );
        assert_eq!(n.released_at, Some(t(10)));
        assert_eq!(s.current_batch, Some(0));
        let pending = capi_status(
            &facts(vec![server("w-a-1", "ACTIVE", OLD, 0)]),
            &Sightings::default(),
            t(1),
        );
        assert_eq!(
            pending.nodes[0].reason.as_deref(),
            Some(format!("old image {OLD}").as_str())
        );
    }

    #[test]
    fn a_replacement_in_error_fails_with_novas_fault() {
        let mut bad = server("w-b-1", "ERROR", NEW, 10);
        bad.fault = Some("No valid host was found.".into());
        let s = capi_status(
            &facts(vec![server("w-a-1", "ACTIVE", OLD, 0), bad]),
            &Sightings::default(),
            t(30),
        );
        assert_eq!(s.failed, 1);
        assert_eq!(s.nodes[0].phase, NodePhase::Failed);
        assert!(s.nodes[0]
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("w-b-1 in ERROR: No valid host was found.")));
        assert_eq!(s.state, RolloutState::Running, "Cluster API retries");
        let mut f = facts(vec![server("w-a-1", "ACTIVE", OLD, 0)]);
        f.cluster_status = Status::parse("UPDATE_FAILED");
        f.cluster_reason = "boom".into();
        let s = capi_status(&f, &Sightings::default(), t(30));
        assert_eq!(
            s.state,
            RolloutState::Failed {
                reason: "boom".into()
            }
        );
    }

    /// A first look with nothing remembered: the new machines up are done, the old ones
    /// pending; the figures come from the replacements done so far.
    #[test]
    fn a_first_look_mid_way_counts_and_estimates() {
        let servers = vec![
            server("w-b-1", "ACTIVE", NEW, 0),
            server("w-b-2", "ACTIVE", NEW, 60),
            server("w-a-3", "ACTIVE", OLD, -1000),
            server("w-a-4", "ACTIVE", OLD, -1000),
        ];
        let mut seen = Sightings::default();
        seen.ingest(&servers, t(120));
        let s = capi_status(&facts(servers), &seen, t(120));
        assert_eq!((s.done, s.remaining), (2, 2));
        assert_eq!(s.state, RolloutState::Running);
        // Two machines in two minutes since the first replacement started: one a minute,
        // so two minutes for the two left.
        assert_eq!(s.throughput_per_min.map(|x| x.round()), Some(1.0));
        assert_eq!(s.eta_secs.map(|x| x.round()), Some(120.0));
        // Found up: when they finished is unknown.
        assert!(s.nodes.iter().all(|n| n.finished_at.is_none()));
    }

    #[test]
    fn all_new_and_up_is_completed_whatever_the_cluster_says() {
        let mut seen = Sightings::default();
        let before = vec![server("w-a-1", "ACTIVE", OLD, 0)];
        seen.ingest(&before, t(1));
        let after = vec![server("w-b-1", "ACTIVE", NEW, 10)];
        seen.ingest(&after, t(40));
        let s = capi_status(&facts(after), &seen, t(40));
        assert_eq!(s.state, RolloutState::Completed);
        assert_eq!(
            s.nodes.len(),
            1,
            "the gone old machine and its replacement: one row"
        );
        assert_eq!(s.nodes[0].name, "w-a-1");
        assert_eq!(s.nodes[0].finished_at, Some(t(40)));
        assert_eq!(s.eta_secs, None);
    }

    #[test]
    fn a_resize_adds_and_removes_machines() {
        let mut seen = Sightings::default();
        let before = vec![
            server("w-a-1", "ACTIVE", NEW, 0),
            server("w-a-2", "ACTIVE", NEW, 1),
        ];
        seen.ingest(&before, t(5));
        let during = vec![
            deleting(server("w-a-1", "ACTIVE", NEW, 0)),
            server("w-a-2", "ACTIVE", NEW, 1),
            server("w-a-3", "BUILD", NEW, 20),
        ];
        seen.ingest(&during, t(25));
        let s = capi_status(&facts(during), &seen, t(25));
        use NodePhase::*;
        assert_eq!(
            phases(&s),
            [
                ("w-a-1".to_string(), Updating),
                ("w-a-2".to_string(), Done),
                ("w-a-3".to_string(), Updating)
            ]
        );
    }
}
