//! `RolloutStatus`: the typed snapshot the console and `caldera rollout status` show.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodePhase {
    /// Not reached yet: its batch has not started.
    Pending,
    /// Its batch started; Heat has not paused it on the hook yet.
    Waiting,
    /// Paused on the `pre-update` hook, ready to be released.
    Paused,
    /// Released; Heat is updating it.
    Updating,
    Done,
    Failed,
    /// The operator skipped it: never released by this rollout.
    Skipped,
}

impl NodePhase {
    pub fn as_str(self) -> &'static str {
        match self {
            NodePhase::Pending => "pending",
            NodePhase::Waiting => "waiting",
            NodePhase::Paused => "paused",
            NodePhase::Updating => "updating",
            NodePhase::Done => "done",
            NodePhase::Failed => "failed",
            NodePhase::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeProgress {
    pub name: String,
    pub index: Option<u32>,
    /// 0-based batch.
    pub batch: usize,
    pub phase: NodePhase,
    /// When Heat cleared its hook (Heat's event time).
    pub released_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Heat's reason when it failed.
    pub reason: Option<String>,
    /// Updating for much longer than the nodes done so far took (see
    /// [`RolloutStatus::straggler_after_ms`]).
    #[serde(default)]
    pub straggler: bool,
    /// The node's server name and first address, as the console's nodes pane knows them
    /// (filled in by the console; Heat's member names are only indices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

impl NodeProgress {
    pub fn duration_ms(&self) -> Option<i64> {
        Some((self.finished_at? - self.released_at?).num_milliseconds())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RolloutState {
    /// The PATCH is being sent or Heat has not started the update yet.
    Starting,
    Running,
    /// Stopped releasing; `resume` continues. The reason says why (operator, failure, hook).
    Paused {
        reason: String,
    },
    /// Aborted: Heat's cancel is under way (a rollback's hooks are cleared as Heat reaches
    /// them); nothing of the rollout is released any more. Ends as `Aborted`.
    Aborting {
        reason: String,
    },
    Aborted {
        reason: String,
    },
    Completed,
    /// Every member but the skipped ones was updated; the skipped stay on their hooks.
    CompletedWithSkips,
    /// Stopped on a failure with `pause_on_failure` off.
    Failed {
        reason: String,
    },
}

impl RolloutState {
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            RolloutState::Aborted { .. }
                | RolloutState::Completed
                | RolloutState::CompletedWithSkips
                | RolloutState::Failed { .. }
        )
    }
    pub fn label(&self) -> String {
        match self {
            RolloutState::Starting => "starting".into(),
            RolloutState::Running => "running".into(),
            RolloutState::Paused { reason } => format!("paused: {reason}"),
            RolloutState::Aborting { reason } => format!("aborting: {reason}"),
            RolloutState::Aborted { reason } => format!("aborted: {reason}"),
            RolloutState::Completed => "completed".into(),
            RolloutState::CompletedWithSkips => "completed (skipped nodes left on hooks)".into(),
            RolloutState::Failed { reason } => format!("failed: {reason}"),
        }
    }
}

/// Who drives a rollout, as far as this machine can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DriverInfo {
    /// This process's engine.
    Here,
    /// Another live process on this machine (its driver lock's text; `last_seen` is its
    /// heartbeat).
    Process {
        pid: u32,
        host: String,
        started_at: DateTime<Utc>,
        last_seen: DateTime<Utc>,
    },
    /// No live process on this machine drives it; `since` is the last driver's last
    /// heartbeat, when there was one. (A driver on another machine is not visible here.)
    Nobody {
        since: Option<DateTime<Utc>>,
        last_pid: Option<u32>,
        /// The machine the rollout was started on, when Heat's marker says and it is not
        /// this one: its driver may well be alive there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_on: Option<String>,
    },
}

impl DriverInfo {
    pub fn label(&self) -> String {
        match self {
            DriverInfo::Here => "driven here".into(),
            DriverInfo::Process {
                pid,
                host,
                last_seen,
                ..
            } => format!(
                "driven by pid {pid} on {host}, last seen {}",
                last_seen.format("%H:%M:%S")
            ),
            DriverInfo::Nobody {
                started_on: Some(host),
                ..
            } => format!("started on {host}; no driver on this machine"),
            DriverInfo::Nobody {
                since: Some(t),
                last_pid,
                ..
            } => format!(
                "no driver on this machine since {}{}",
                t.format("%Y-%m-%d %H:%M:%S"),
                last_pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
            ),
            DriverInfo::Nobody { since: None, .. } => "no driver on this machine".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutStatus {
    pub id: String,
    pub target: String,
    pub image: String,
    pub state: RolloutState,
    pub nodes: Vec<NodeProgress>,
    /// 0-based batch being worked on.
    pub current_batch: Option<usize>,
    pub batches: usize,
    /// The node-group stack's status as Heat reports it.
    pub stack_status: String,
    pub done: usize,
    pub failed: usize,
    pub skipped: usize,
    pub remaining: usize,
    /// Nodes per minute since the first release.
    pub throughput_per_min: Option<f64>,
    pub p50_ms: Option<i64>,
    pub p95_ms: Option<i64>,
    pub eta_secs: Option<f64>,
    /// Nodes flagged `straggler`.
    #[serde(default)]
    pub stragglers: usize,
    pub updated_at: DateTime<Utc>,
    /// Who drives it, when known.
    #[serde(default)]
    pub driver: Option<DriverInfo>,
    /// What the end of the rollout left in the stack's environment: its hooks taken out
    /// (and Heat's word that they are gone), or why they are still there and what they hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks_left: Option<String>,
    /// Members Heat found unhealthy since (`CHECK_FAILED`: marked unhealthy, a failed
    /// check): their update stands, and Heat's next update replaces them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unhealthy: Vec<String>,
}

/// How long a node may be updating before it counts as a straggler, given the median time
/// `median_ms`: three times the median, and at least a minute (short updates jitter). The
/// rollout view and the nodes pane both use this rule.
pub fn straggler_after_ms(median_ms: i64) -> i64 {
    (3 * median_ms).max(60_000)
}

/// The value at quantile `q` (0..=1) of sorted `v`, nearest-rank.
pub fn quantile(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

impl RolloutStatus {
    /// A status of `nodes` before [`RolloutStatus::compute`] fills the counters and timings
    /// (they are all derived from the nodes); no current batch, no stack status yet.
    pub fn new(
        id: String,
        target: String,
        image: String,
        state: RolloutState,
        nodes: Vec<NodeProgress>,
        batches: usize,
        now: DateTime<Utc>,
    ) -> RolloutStatus {
        RolloutStatus {
            id,
            target,
            image,
            state,
            nodes,
            current_batch: None,
            batches,
            stack_status: String::new(),
            done: 0,
            failed: 0,
            skipped: 0,
            remaining: 0,
            throughput_per_min: None,
            p50_ms: None,
            p95_ms: None,
            eta_secs: None,
            stragglers: 0,
            updated_at: now,
            driver: None,
            hooks_left: None,
            unhealthy: Vec::new(),
        }
    }

    /// Something releases nodes: a running (or starting) rollout with a live driver.
    pub fn releasing(&self) -> bool {
        matches!(self.state, RolloutState::Running | RolloutState::Starting)
            && !matches!(self.driver, Some(DriverInfo::Nobody { .. }))
    }

    /// Fills the counters and timing figures from `nodes`. Throughput and ETA only while
    /// something releases: a paused, ended or undriven rollout has no rate.
    pub fn compute(&mut self, now: DateTime<Utc>) {
        let count = |p: NodePhase| self.nodes.iter().filter(|n| n.phase == p).count();
        self.done = count(NodePhase::Done);
        self.failed = count(NodePhase::Failed);
        self.skipped = count(NodePhase::Skipped);
        self.remaining = self.nodes.len() - self.done - self.skipped;
        let mut durations: Vec<i64> = self
            .nodes
            .iter()
            .filter(|n| n.phase == NodePhase::Done)
            .filter_map(|n| n.duration_ms())
            .collect();
        durations.sort_unstable();
        self.p50_ms = quantile(&durations, 0.5);
        self.p95_ms = quantile(&durations, 0.95);
        let first = self.nodes.iter().filter_map(|n| n.released_at).min();
        self.throughput_per_min = match first {
            Some(t0) if self.done > 0 => {
                let mins = (now - t0).num_milliseconds().max(1) as f64 / 60_000.0;
                Some(self.done as f64 / mins)
            }
            _ => None,
        };
        if !self.releasing() {
            self.throughput_per_min = None;
        }
        self.eta_secs = self
            .throughput_per_min
            .filter(|t| *t > 0.0)
            .map(|t| self.remaining as f64 / t * 60.0);
        let limit = self.straggler_after_ms();
        for n in self.nodes.iter_mut() {
            n.straggler = n.phase == NodePhase::Updating
                && limit.is_some_and(|limit| {
                    n.released_at
                        .is_some_and(|t| (now - t).num_milliseconds() > limit)
                });
        }
        self.stragglers = self.nodes.iter().filter(|n| n.straggler).count();
        self.updated_at = now;
    }

    /// How long a node may update before it counts as a straggler (the module's `straggler_after_ms` rule),
    /// from the nodes done so far. `None` until a node is done.
    pub fn straggler_after_ms(&self) -> Option<i64> {
        self.p50_ms.map(straggler_after_ms)
    }

    /// The batch to show as "x of y": the current one; with none, all of them once every
    /// node settled, else none yet.
    pub fn batch_shown(&self) -> usize {
        match self.current_batch {
            Some(b) => b + 1,
            None if self.remaining == 0 && self.done + self.skipped > 0 => self.batches,
            None => 0,
        }
    }

    pub fn lines(&self) -> Vec<String> {
        let ms = |v: Option<i64>| {
            v.map(|m| format!("{:.1}s", m as f64 / 1000.0))
                .unwrap_or_else(|| "-".into())
        };
        let mut out = vec![
            format!(
                "rollout {} of {} to {}: {}{}",
                self.id,
                self.target,
                self.image,
                self.state.label(),
                self.driver
                    .as_ref()
                    .map(|d| format!(" ({})", d.label()))
                    .unwrap_or_default()
            ),
            format!(
                "  stack {}; batch {}/{}; done {} failed {} skipped {} remaining {}",
                self.stack_status,
                self.batch_shown(),
                self.batches,
                self.done,
                self.failed,
                self.skipped,
                self.remaining
            ),
            format!(
                "  per node p50 {} p95 {}; throughput {}; ETA {}",
                ms(self.p50_ms),
                ms(self.p95_ms),
                self.throughput_per_min
                    .map(|t| format!("{t:.1}/min"))
                    .unwrap_or_else(|| "-".into()),
                self.eta_secs
                    .map(|s| format!("{s:.0}s"))
                    .unwrap_or_else(|| "-".into())
            ),
        ];
        if let Some(h) = &self.hooks_left {
            out.push(format!("  hooks: {h}"));
        }
        if !self.unhealthy.is_empty() {
            out.push(format!(
                "  unhealthy since: {} (CHECK_FAILED: Heat's next update replaces them)",
                self.unhealthy.join(", ")
            ));
        }
        for n in &self.nodes {
            out.push(format!(
                "  {:>6} batch {:>3} {:<9}{}{}",
                n.name,
                n.batch + 1,
                n.phase.as_str(),
                n.duration_ms()
                    .map(|d| format!(" {:.1}s", d as f64 / 1000.0))
                    .unwrap_or_default(),
                n.reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_eta() {
        assert_eq!(quantile(&[], 0.5), None);
        let v: Vec<i64> = (1..=20).collect();
        assert_eq!(quantile(&v, 0.5), Some(10));
        assert_eq!(quantile(&v, 0.95), Some(19));
        let t0 = Utc::now() - chrono::Duration::seconds(60);
        let node = |i: u32, phase, secs: i64| NodeProgress {
            name: i.to_string(),
            index: Some(i),
            batch: i as usize,
            phase,
            released_at: Some(t0),
            finished_at: Some(t0 + chrono::Duration::seconds(secs)),
            reason: None,
            straggler: false,
            server: None,
            address: None,
        };
        let mut s = RolloutStatus::new(
            "r".into(),
            "c/w".into(),
            "v2".into(),
            RolloutState::Running,
            vec![
                node(0, NodePhase::Done, 10),
                node(1, NodePhase::Done, 30),
                node(2, NodePhase::Pending, 0),
                node(3, NodePhase::Pending, 0),
            ],
            4,
            Utc::now(),
        );
        s.current_batch = Some(2);
        s.stack_status = "UPDATE_IN_PROGRESS".into();
        s.compute(t0 + chrono::Duration::seconds(60));
        assert_eq!((s.done, s.remaining), (2, 2));
        assert_eq!(s.p50_ms, Some(10_000));
        assert_eq!(s.p95_ms, Some(30_000));
        let t = s.throughput_per_min.unwrap();
        assert!((t - 2.0).abs() < 1e-9, "{t}");
        assert!((s.eta_secs.unwrap() - 60.0).abs() < 1e-6);
        assert_eq!(s.batch_shown(), 3);
    }

    #[test]
    fn stragglers_update_three_times_longer_than_the_median_and_over_a_minute() {
        let t0 = Utc::now();
        let node = |i: u32, phase, released: i64, finished: Option<i64>| NodeProgress {
            name: i.to_string(),
            index: Some(i),
            batch: 0,
            phase,
            released_at: Some(t0 + chrono::Duration::seconds(released)),
            finished_at: finished.map(|f| t0 + chrono::Duration::seconds(f)),
            reason: None,
            straggler: false,
            server: None,
            address: None,
        };
        let mut s = RolloutStatus::new(
            "r".into(),
            "c/w".into(),
            "v2".into(),
            RolloutState::Running,
            vec![
                node(0, NodePhase::Done, 0, Some(30)),
                node(1, NodePhase::Done, 0, Some(40)),
                node(2, NodePhase::Done, 0, Some(50)),
                // Median 40 s: over 120 s of updating makes a straggler.
                node(3, NodePhase::Updating, 10, None),
                node(4, NodePhase::Updating, 100, None),
                node(5, NodePhase::Pending, 0, None),
            ],
            1,
            t0,
        );
        s.current_batch = None;
        s.stack_status = "UPDATE_IN_PROGRESS".into();
        s.compute(t0 + chrono::Duration::seconds(140));
        assert_eq!(s.straggler_after_ms(), Some(120_000));
        let flagged: Vec<&str> = s
            .nodes
            .iter()
            .filter(|n| n.straggler)
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(flagged, ["3"]);
        assert_eq!(s.stragglers, 1);
        // Short updates never make stragglers before a minute.
        s.nodes.truncate(3);
        s.nodes.push(node(6, NodePhase::Updating, 0, None));
        for n in s.nodes.iter_mut().take(3) {
            n.finished_at = n.released_at.map(|t| t + chrono::Duration::seconds(2));
        }
        s.compute(t0 + chrono::Duration::seconds(50));
        assert_eq!(s.stragglers, 0);
        s.compute(t0 + chrono::Duration::seconds(61));
        assert_eq!(s.stragglers, 1);
        assert_eq!(s.batch_shown(), 0, "a node still updating: not all settled");
    }
}
