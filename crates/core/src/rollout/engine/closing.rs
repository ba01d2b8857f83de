//! The rollout's closing wait: every member is done and Heat's stack update goes on
//! beside the group (a resource the operator let Heat update, a deployment waiting for its
//! agent, a wait condition). Past a node's time the engine pauses saying what Heat still
//! does, and that pause ends by itself with Heat's update; a pause the operator adds stays
//! until their resume. The journal records which pause is which, so an engine reattached
//! after a restart rebuilds both, deciding the wait from Heat's facts.

use super::{RolloutPlan, Runner};
use crate::journal::{Entry, Outcome};

/// The reason of the operator's pause, as the status and the journal's readers show it.
pub(super) const OPERATOR_PAUSE: &str = "paused by the operator";

/// A pause already in effect (`why`) with the operator's added: both are said.
pub(super) fn with_operator(why: &str) -> String {
    format!("{why}; and {OPERATOR_PAUSE}")
}

/// Which of the engine's own pauses a `rollout.pause` entry records (its spec): after a
/// restart the engine must tell the closing wait, which ends by itself with Heat's update,
/// from the operator's pause (`Ok`, no spec), which only a resume ends. Entries of journals
/// from before this (no spec) read as pauses of no kind: an operator's or a failure's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum PauseKind {
    /// Every node done, Heat's update still in progress ([`Runner::closing`]).
    Closing,
}

impl PauseKind {
    fn of(e: &Entry) -> Option<PauseKind> {
        e.spec.as_deref().and_then(|s| serde_json::from_str(s).ok())
    }
}

/// The pauses the journal says are in effect for a rollout (none since its last resume).
/// A failure's pause is not among them: the engine finds the failure in Heat again.
#[derive(Debug, Default)]
pub(super) struct JournaledPause {
    /// The operator paused it: it stays paused until a resume, whatever Heat does.
    pub(super) operator: bool,
    /// The engine's closing wait, what it said ([`PauseKind::Closing`]): decided again from
    /// Heat's facts after a restart.
    closing: Option<String>,
}

impl JournaledPause {
    /// Folds in one of the rollout's `rollout.pause` or `rollout.resume` entries, oldest
    /// first: a resume ends every pause before it.
    pub(super) fn read(&mut self, e: &Entry) {
        match (e.action.as_str(), &e.outcome, PauseKind::of(e)) {
            ("rollout.pause", Outcome::Ok, _) => self.operator = true,
            ("rollout.pause", Outcome::Failed { error }, Some(PauseKind::Closing)) => {
                self.closing = Some(error.clone());
            }
            ("rollout.resume", Outcome::Ok, _) => *self = JournaledPause::default(),
            // A failure's pause (or one of no kind from an older journal), a refused resume.
            _ => {}
        }
    }
}

impl Runner {
    /// Every member is done and Heat's update goes on: Heat is updating something beside
    /// the group (a resource the operator let Heat update, a deployment waiting for its
    /// agent, a wait condition). The rollout cannot complete before Heat's update does, and
    /// nothing of ours is left to release. Past the time a node may take, it pauses and says
    /// what Heat is still doing (read from Heat's tree), instead of reading "running" with
    /// nothing moving; it completes by itself when Heat's update does.
    pub(super) async fn closing(&mut self) {
        let since = *self
            .closing_since
            .get_or_insert_with(std::time::Instant::now);
        let waited = since.elapsed();
        if waited <= self.plan.options.node_timeout() || self.halted() {
            return;
        }
        let what = match crate::ops::why::read(&self.heat, &self.plan.stack, &[]).await {
            Ok(why) if !why.lines.is_empty() => why
                .lines
                .iter()
                .take(3)
                // One line of prose: the why lines' column gaps read as one space.
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
                .join("; "),
            Ok(_) => "Heat names nothing in progress".to_string(),
            Err(e) => format!("reading what Heat is doing failed: {e}"),
        };
        let reason = format!(
            "every node is done, but Heat's update of stack {} is still {} {}s after the last \
             one ({what}); nothing is left to release: the rollout completes when Heat's \
             update does (`rollout abort` cancels it)",
            self.plan.stack.name,
            self.obs.stack_status,
            waited.as_secs()
        );
        let e = self
            .record(
                "rollout.pause",
                &self.target(),
                Outcome::Failed {
                    error: reason.clone(),
                },
            )
            .spec(&PauseKind::Closing);
        self.note(e).await;
        if self.paused.is_none() {
            self.paused = Some(reason.clone());
            self.closing_pause = Some(reason);
        }
    }

    /// Every member is done (or skipped) and Heat's update is still in progress: the
    /// closing wait of [`Runner::closing`].
    fn closing_now(&self) -> bool {
        self.current_batch().is_none() && self.obs.stack_status.is_in_progress()
    }

    /// A pause of [`Runner::closing`] alone ends when Heat's update does: nothing of the
    /// operator's is waiting on it. A pause the operator added stays, and says now that
    /// Heat's update is over (the closing wait's words would say it is still going on).
    pub(super) fn closing_ended(&mut self) {
        if self.obs.stack_status.is_in_progress() {
            return;
        }
        let Some(closing) = self.closing_pause.take() else {
            return;
        };
        if self.paused.as_ref() == Some(&closing) {
            self.paused = None;
        } else if self.paused.as_deref() == Some(with_operator(&closing).as_str()) {
            self.paused = Some(self.operator_pause());
        }
    }

    /// The operator's pause, with what Heat has done since when that tells the operator
    /// what a resume does: every node done and Heat's update over.
    fn operator_pause(&self) -> String {
        let s = &self.obs.stack_status;
        if self.current_batch().is_some() || s.is_in_progress() {
            return OPERATOR_PAUSE.into();
        }
        operator_pause_after_heat(&self.plan, s)
    }

    /// After a restart, the pauses the journal left in effect, decided with Heat's facts:
    /// the operator's stays until a resume; the closing wait goes on only while every node
    /// is done and Heat's update is still in progress, and ends by itself with Heat's
    /// update as before the restart (Heat's update already over: nothing waits, the next
    /// step completes the rollout). A failure's pause is not taken from the journal: the
    /// engine finds the failure in Heat again. A pause the start set (its journal failed)
    /// stays as it is.
    pub(super) fn rebuild_pause(&mut self, journaled: JournaledPause) {
        if self.paused.is_some() {
            return;
        }
        let closing = journaled.closing.filter(|_| self.closing_now());
        if let Some(reason) = &closing {
            self.closing_since = Some(std::time::Instant::now());
            self.closing_pause = Some(reason.clone());
        }
        self.paused = match (closing, journaled.operator) {
            (Some(c), true) => Some(with_operator(&c)),
            (Some(c), false) => Some(c),
            (None, true) => Some(self.operator_pause()),
            (None, false) => None,
        };
    }
}

/// The operator's pause of a rollout whose every node is done and whose Heat update has
/// ended since (`s`): what a resume does then.
pub(super) fn operator_pause_after_heat(plan: &RolloutPlan, s: &crate::model::Status) -> String {
    let t = plan.target.label();
    let next = if s.is_complete() {
        format!("`caldera rollout resume {t}` completes the rollout")
    } else {
        format!("`caldera rollout resume {t}` goes on")
    };
    format!(
        "{OPERATOR_PAUSE}; every node is done and Heat's update of stack {} has ended since \
         ({s}): {next}",
        plan.stack.name
    )
}
