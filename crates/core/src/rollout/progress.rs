//! `RolloutStatus`: the typed snapshot the console and `caldera rollout status` show.

use crate::model::Status;
use crate::progress::{Control, Holder, MemberFacts, Progress, UpdateFacts};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodePhase {
    /// Not reached yet: its batch has not started, and Heat has not paused it on the hook.
    Pending,
    /// Its batch started; Heat has not paused it on the hook yet.
    Waiting,
    /// Paused on the `pre-update` hook (Heat's event says so): released when its batch comes.
    Paused,
    /// Released; Heat is updating it.
    Updating,
    Done,
    Failed,
    /// The operator skipped it: never released by this rollout.
    Skipped,
    /// Released, then taken back to the old image by an abort's rollback.
    RolledBack,
}

impl NodePhase {
    pub fn as_str(self) -> &'static str {
        match self {
            NodePhase::Pending => "pending",
            NodePhase::Waiting => "waiting",
            NodePhase::Paused => "held",
            NodePhase::Updating => "updating",
            NodePhase::Done => "done",
            NodePhase::Failed => "failed",
            NodePhase::Skipped => "skipped",
            NodePhase::RolledBack => "rolled back",
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
    /// Member `name` of the plan's 0-based `batch`, not released yet: what a rollout starts
    /// with for each of its members.
    pub fn pending(name: &str, batch: usize) -> NodeProgress {
        NodeProgress {
            name: name.to_string(),
            index: name.parse().ok(),
            batch,
            phase: NodePhase::Pending,
            released_at: None,
            finished_at: None,
            reason: None,
            straggler: false,
            server: None,
            address: None,
        }
    }

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
    /// Every member updated and Heat's update over, but the rollout's `pre-update` hooks are
    /// still in the stack's environment (the end's PATCH that takes them out is due, or its
    /// update runs): not completed until Heat's environment says they are out. The reason
    /// says who takes them out.
    Closing {
        reason: String,
    },
    Completed,
    /// Every member but the skipped ones was updated; the skipped stay on their hooks.
    CompletedWithSkips,
    /// Stopped on a failure with `pause_on_failure` off.
    Failed {
        reason: String,
    },
    /// Over before this machine drove it to its end: Heat's stack no longer runs its update
    /// (another machine's driver ended it, or another update replaced it). How it ended is
    /// that driver's to say; the reason says what Heat showed.
    EndedElsewhere {
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
                | RolloutState::EndedElsewhere { .. }
        )
    }
    pub fn label(&self) -> String {
        match self {
            RolloutState::Starting => "starting".into(),
            RolloutState::Running => "running".into(),
            RolloutState::Paused { reason } => format!("paused: {reason}"),
            RolloutState::Aborting { reason } => format!("aborting: {reason}"),
            RolloutState::Aborted { reason } => format!("aborted: {reason}"),
            RolloutState::Closing { reason } => format!("closing: {reason}"),
            RolloutState::Completed => "completed".into(),
            RolloutState::CompletedWithSkips => "completed (skipped nodes left on hooks)".into(),
            RolloutState::Failed { reason } => format!("failed: {reason}"),
            RolloutState::EndedElsewhere { reason } => format!("ended elsewhere: {reason}"),
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
        /// Members Heat shows released by a driver this machine's journal does not know
        /// (another machine's, or another state directory's here): it may be releasing now.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        released_elsewhere: Vec<String>,
    },
}

impl DriverInfo {
    /// No driver here, and one on another machine (or another state directory) may be
    /// releasing members: the marker says it was started elsewhere, or Heat shows members
    /// released that this journal never released.
    pub fn elsewhere_may_drive(&self) -> bool {
        matches!(self, DriverInfo::Nobody { started_on, released_elsewhere, .. }
            if started_on.is_some() || !released_elsewhere.is_empty())
    }

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
                released_elsewhere, ..
            } if !released_elsewhere.is_empty() => format!(
                "no driver on this machine; Heat shows {} released by a driver elsewhere",
                member_list(released_elsewhere)
            ),
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

/// Members as a line names them: `a, b, c` (the first 8, then how many more), or `none`.
pub(crate) fn member_list(names: &[String]) -> String {
    names_shown(names, 8)
}

/// `a, b, c` (the first `shown`, then how many more), or `none`.
pub(crate) fn names_shown<S: AsRef<str>>(names: &[S], shown: usize) -> String {
    if names.is_empty() {
        return "none".into();
    }
    let mut s = names[..names.len().min(shown)]
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > shown {
        s.push_str(&format!(" and {} more", names.len() - shown));
    }
    s
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
    /// The one progress model of this rollout (`crate::progress`): the counters above are
    /// copied from it, and every place that shows the rollout prints it.
    /// (Boxed: a status travels in the console's messages, which stay small.)
    #[serde(default = "no_progress")]
    pub progress: Box<Progress>,
}

/// `spans` with the state as of `at` (`paused` or not): a pause begins there, or the one
/// under way ends; the newest [`crate::progress::PAUSES_KEPT`] are kept.
pub fn note_pause_in(spans: &mut Vec<crate::progress::PauseSpan>, paused: bool, at: DateTime<Utc>) {
    match (paused, spans.last_mut()) {
        (true, Some((_, None))) | (false, None) | (false, Some((_, Some(_)))) => {}
        (true, _) => {
            spans.push((at, None));
            let over = spans.len().saturating_sub(crate::progress::PAUSES_KEPT);
            spans.drain(..over);
        }
        (false, Some((_, end))) => *end = Some(at),
    }
}

fn no_progress() -> Box<Progress> {
    Box::new(Progress::idle(Utc::now()))
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
            progress: Box::new(Progress::idle(now)),
        }
    }

    /// Something releases nodes: a running (or starting) rollout with a live driver.
    pub fn releasing(&self) -> bool {
        matches!(self.state, RolloutState::Running | RolloutState::Starting)
            && !matches!(self.driver, Some(DriverInfo::Nobody { .. }))
    }

    /// Keeps the times it stood paused ([`Progress::paused`], which its pace leaves out) in
    /// step with the state as of `at`: a pause begins there, or the one under way ends (the
    /// newest [`crate::progress::PAUSES_KEPT`] are kept). Fed by the journal's pauses and
    /// resumes when a status is read from it, and by the engine's own state as it drives.
    pub fn note_pause(&mut self, at: DateTime<Utc>) {
        let paused = matches!(self.state, RolloutState::Paused { .. });
        note_pause_in(&mut self.progress.paused, paused, at);
    }

    /// Computes the progress model from the nodes and the rollout's state, and copies its
    /// counters (done, failed, skipped, remaining, pace, ETA) into the fields the JSON has
    /// always had. Per-node timings (p50, p95, stragglers) are the rollout's own.
    pub fn compute(&mut self, now: DateTime<Utc>) {
        *self.progress = Progress::compute(&self.member_facts(), &self.update_facts(), now);
        let c = self.progress.counts;
        self.done = c.new;
        self.failed = c.failed;
        self.skipped = c.skipped;
        self.remaining = c.left();
        self.throughput_per_min = self.progress.pace.map(|p| p.per_min);
        self.eta_secs = self.progress.eta_secs.map(|s| s as f64);
        let mut durations: Vec<i64> = self
            .nodes
            .iter()
            .filter(|n| n.phase == NodePhase::Done)
            .filter_map(|n| n.duration_ms())
            .collect();
        durations.sort_unstable();
        self.p50_ms = quantile(&durations, 0.5);
        self.p95_ms = quantile(&durations, 0.95);
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

    /// Who holds this rollout's members on their hooks: its own driver, or (when the marker
    /// says it was started on another machine and no driver runs here) another caldera.
    fn holder(&self) -> Holder {
        match &self.driver {
            Some(d) if d.elsewhere_may_drive() => Holder::OtherCaldera,
            Some(DriverInfo::Here | DriverInfo::Process { .. } | DriverInfo::Nobody { .. })
            | None => Holder::ThisRollout,
        }
    }

    /// Each node's facts as the rollout knows them: Heat's events say done, failed,
    /// updating or held; the journal says skipped; an abort's rollback says rolled back.
    fn member_facts(&self) -> Vec<MemberFacts> {
        let holder = self.holder();
        self.nodes
            .iter()
            .map(|n| {
                let (status, held) = match n.phase {
                    NodePhase::Done => ("UPDATE_COMPLETE", false),
                    NodePhase::Failed => ("UPDATE_FAILED", false),
                    NodePhase::Updating => ("UPDATE_IN_PROGRESS", false),
                    NodePhase::Paused => ("UPDATE_IN_PROGRESS", true),
                    NodePhase::Pending
                    | NodePhase::Waiting
                    | NodePhase::Skipped
                    | NodePhase::RolledBack => ("UPDATE_COMPLETE", false),
                };
                // A skipped member stays on its hook while Heat's update runs: Heat waits on it.
                let skipped_held =
                    n.phase == NodePhase::Skipped && self.stack_status.ends_with("IN_PROGRESS");
                MemberFacts {
                    name: n.name.clone(),
                    status: Status::parse(status),
                    held_by: (held || skipped_held).then_some(holder),
                    on_target: Some(n.phase == NodePhase::Done),
                    in_update: true,
                    skipped: n.phase == NodePhase::Skipped,
                    rolled_back: n.phase == NodePhase::RolledBack,
                    since: None,
                    finished_at: n.finished_at,
                    replacing: false,
                }
            })
            .collect()
    }

    /// The update's facts: Heat's stack status, the journal's word (the state), the plan's
    /// batches, and when the first member was released (the update's age).
    fn update_facts(&self) -> UpdateFacts {
        let stack = (!self.stack_status.is_empty()).then(|| Status::parse(&self.stack_status));
        let rolling_back = stack.as_ref().is_some_and(|s| s.action == "ROLLBACK");
        let control = match &self.state {
            RolloutState::Closing { reason } => Control::Closing {
                why: reason.clone(),
            },
            RolloutState::Starting | RolloutState::Running => {
                match &self.driver {
                    // Started on another machine, as Heat's marker says, or Heat shows
                    // members released by a driver this journal does not know: that driver
                    // is not visible from here, and may well be releasing members. "Nobody
                    // releases" would invite a second driver (two members at once).
                    Some(d) if d.elsewhere_may_drive() => Control::Running,
                    Some(DriverInfo::Nobody { since, .. }) => Control::Paused {
                        why: "nobody releases its members".into(),
                        since: *since,
                    },
                    Some(DriverInfo::Here | DriverInfo::Process { .. }) | None => Control::Running,
                }
            }
            RolloutState::Paused { reason } => Control::Paused {
                why: reason.clone(),
                since: None,
            },
            RolloutState::Aborting { reason } | RolloutState::Aborted { reason } => {
                Control::Aborted {
                    rollback: rolling_back,
                    why: reason.clone(),
                }
            }
            RolloutState::Completed | RolloutState::CompletedWithSkips => Control::Finished,
            RolloutState::Failed { reason } => Control::Failed {
                why: reason.clone(),
            },
            RolloutState::EndedElsewhere { reason } => Control::EndedElsewhere {
                why: reason.clone(),
            },
        };
        UpdateFacts {
            stack_status: stack,
            control,
            batch: self.current_batch,
            batches: self.batches,
            started_at: self.nodes.iter().filter_map(|n| n.released_at).min(),
            paused: self.progress.paused.clone(),
        }
    }

    /// How long a node may update before it counts as a straggler (the module's `straggler_after_ms` rule),
    /// from the nodes done so far. `None` until a node is done.
    pub fn straggler_after_ms(&self) -> Option<i64> {
        self.p50_ms.map(straggler_after_ms)
    }

    /// The batch to show as "x of y": the model's, as planned (0 before the first).
    pub fn batch_shown(&self) -> usize {
        self.progress.batch.map_or(0, |(b, _)| b)
    }

    /// Every line of `rollout status`: the summary, then one line per node.
    pub fn lines(&self) -> Vec<String> {
        let mut out = self.summary_lines();
        out.extend(self.node_lines());
        out
    }

    /// `rollout status --summary`: the rollout's state, counts, batch, pace and ETA (the
    /// progress model's), its hooks and unhealthy members; no per-node line.
    pub fn summary_lines(&self) -> Vec<String> {
        let ms = |v: Option<i64>| {
            v.map(|m| format!("{:.1}s", m as f64 / 1000.0))
                .unwrap_or_else(|| "-".into())
        };
        let p = &self.progress;
        let mut out = vec![
            format!(
                "rollout {} of {} to {}: {}{}",
                self.id,
                self.target,
                self.image,
                p.state.label(),
                self.driver
                    .as_ref()
                    .map(|d| format!(" ({})", d.label()))
                    .unwrap_or_default()
            ),
            format!(
                "  stack {}; {}; {}",
                self.stack_status,
                p.batch_text().unwrap_or_else(|| "no batches".into()),
                p.counts_text(),
            ),
            format!(
                "  per node p50 {} p95 {}; {}",
                ms(self.p50_ms),
                ms(self.p95_ms),
                p.pace_eta_text()
            ),
        ];
        out.extend(self.group_lines());
        if let Some(h) = &self.hooks_left {
            out.push(format!("  hooks: {h}"));
        }
        if !self.unhealthy.is_empty() {
            out.push(format!(
                "  unhealthy since: {} (CHECK_FAILED: Heat's next update replaces them)",
                self.unhealthy.join(", ")
            ));
        }
        out
    }

    /// With groups held beside the target (`--also`): one counts line per group, the held
    /// ones by their path, the target's by its own (`STACK/GROUP` without the stack), so an
    /// operator sees the control plane done before the workers begin. None for one group.
    pub fn group_lines(&self) -> Vec<String> {
        let groups = self.progress.counts_by_group();
        if groups.len() < 2 {
            return Vec::new();
        }
        let target = self
            .target
            .split_once('/')
            .map_or(self.target.as_str(), |(_, path)| path);
        groups
            .into_iter()
            .map(|(group, counts)| match group {
                Some(path) => format!("  {path}: {}", counts.text()),
                None => format!("  {target} (target): {}", counts.text()),
            })
            .collect()
    }

    fn node_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.nodes.iter().map(|n| {
            format!(
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
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rollout holding the masters beside its target minions: one counts line per group,
    /// adding up to the rollout's; a rollout of one group has none.
    #[test]
    fn held_groups_have_counts_of_their_own() {
        let node = |name: &str, phase| NodeProgress {
            phase,
            ..NodeProgress::pending(name, 0)
        };
        let status = |nodes| {
            let mut s = RolloutStatus::new(
                "r".into(),
                "k8s/kube_minions".into(),
                "v2".into(),
                RolloutState::Running,
                nodes,
                5,
                Utc::now(),
            );
            s.stack_status = "UPDATE_IN_PROGRESS".into();
            s.compute(Utc::now());
            s.summary_lines()
        };
        let lines = status(vec![
            node("kube_masters/0", NodePhase::Done),
            node("kube_masters/1", NodePhase::Done),
            node("kube_masters/2", NodePhase::Updating),
            node("0", NodePhase::Pending),
            node("1", NodePhase::Pending),
        ]);
        let groups: Vec<&str> = lines
            .iter()
            .filter(|l| l.contains(": new "))
            .map(String::as_str)
            .collect();
        assert_eq!(
            groups,
            [
                "  kube_masters: new 2/3 updating 1 held 0 old 0",
                "  kube_minions (target): new 0/2 updating 0 held 0 old 2",
            ],
            "{lines:#?}"
        );
        assert!(
            lines[1].contains("new 2/5 updating 1 held 0 old 2"),
            "{lines:#?}"
        );
        let one = status(vec![
            node("0", NodePhase::Done),
            node("1", NodePhase::Pending),
        ]);
        assert!(!one.iter().any(|l| l.contains("(target)")), "{one:#?}");
    }

    /// No driver on this machine: a rollout this machine started is paused, nobody releasing
    /// its members; one Heat's marker says was started on another machine is not (its driver
    /// there is not visible from here), and its members are held by another caldera.
    #[test]
    fn a_rollout_started_on_another_machine_is_not_said_to_be_released_by_nobody() {
        let said = |started_on: Option<&str>, released_elsewhere: &[&str]| {
            let mut s = RolloutStatus::new(
                "r".into(),
                "k8s/kube_minions".into(),
                "v2".into(),
                RolloutState::Running,
                vec![NodeProgress::pending("0", 0)],
                1,
                Utc::now(),
            );
            s.stack_status = "UPDATE_IN_PROGRESS".into();
            s.driver = Some(DriverInfo::Nobody {
                since: None,
                last_pid: None,
                started_on: started_on.map(str::to_string),
                released_elsewhere: released_elsewhere.iter().map(|m| m.to_string()).collect(),
            });
            s.compute(Utc::now());
            (s.summary_lines().join("\n"), s.update_facts().control)
        };
        let (here, control) = said(None, &[]);
        assert!(matches!(control, Control::Paused { .. }), "{here}");
        assert!(here.contains("nobody releases its members"), "{here}");
        // Said once (was: "… no driver on this machine (no driver on this machine)").
        assert_eq!(
            here.matches("no driver on this machine").count(),
            1,
            "{here}"
        );
        let (away, control) = said(Some("ops-2"), &[]);
        assert_eq!(control, Control::Running, "{away}");
        assert!(!away.contains("nobody releases"), "{away}");
        assert!(away.contains("started on ops-2"), "{away}");
        // Started here, taken over elsewhere: Heat shows a member released by a driver this
        // journal does not know (was: "nobody releases its members" while it did).
        let (taken, control) = said(None, &["kube_masters/1"]);
        assert_eq!(control, Control::Running, "{taken}");
        assert!(!taken.contains("nobody releases"), "{taken}");
        assert!(
            taken.contains("Heat shows kube_masters/1 released by a driver elsewhere"),
            "{taken}"
        );
    }

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

    /// The times the rollout stood paused follow its state as it is noted (the journal's
    /// pauses and resumes, or the engine's own state), and its pace leaves them out: a
    /// ten-minute pause resumed 90 s ago gives the pace of those 90 s (was: 2 new over the
    /// whole window, 0.2 nodes/min, ETA 20m for 4 left).
    #[test]
    fn the_pace_leaves_out_the_time_the_rollout_stood_paused() {
        let t0 = Utc::now() - chrono::Duration::seconds(3600);
        let at = |s: i64| t0 + chrono::Duration::seconds(s);
        let node = |i: u32, finished: Option<i64>| NodeProgress {
            phase: if finished.is_some() {
                NodePhase::Done
            } else {
                NodePhase::Pending
            },
            released_at: finished.map(|_| t0),
            finished_at: finished.map(at),
            ..NodeProgress::pending(&i.to_string(), 0)
        };
        let mut nodes: Vec<NodeProgress> = [30, 60, 720, 750]
            .iter()
            .zip(0..)
            .map(|(f, i)| node(i, Some(*f)))
            .collect();
        nodes.extend((4..8).map(|i| node(i, None)));
        let mut s = RolloutStatus::new(
            "r".into(),
            "c/w".into(),
            "v2".into(),
            RolloutState::Running,
            nodes,
            1,
            t0,
        );
        s.current_batch = Some(0);
        s.stack_status = "UPDATE_IN_PROGRESS".into();
        s.note_pause(at(10));
        assert!(s.progress.paused.is_empty(), "running: no pause begins");
        s.state = RolloutState::Paused {
            reason: "paused by the operator".into(),
        };
        s.note_pause(at(90));
        s.note_pause(at(100));
        assert_eq!(
            s.progress.paused,
            [(at(90), None)],
            "one pause, still under way"
        );
        s.state = RolloutState::Running;
        s.note_pause(at(690));
        s.compute(at(780));
        assert_eq!(
            s.progress.paused,
            [(at(90), Some(at(690)))],
            "kept by compute"
        );
        let pace = s.progress.pace.expect("a pace");
        assert_eq!((pace.window_secs, pace.new_in_window), (90, 2), "{pace:?}");
        assert_eq!(
            s.progress.pace_eta_text(),
            "pace 1.3 nodes/min over 1m ETA 3m00s"
        );
        assert_eq!(s.eta_secs, Some(180.0));
        // Only the newest pauses are kept.
        for i in 0..100 {
            s.state = RolloutState::Paused {
                reason: "gate".into(),
            };
            s.note_pause(at(800 + 2 * i));
            s.state = RolloutState::Running;
            s.note_pause(at(801 + 2 * i));
        }
        assert_eq!(s.progress.paused.len(), crate::progress::PAUSES_KEPT);
        assert_eq!(s.progress.paused.last(), Some(&(at(998), Some(at(999)))));
    }
}
