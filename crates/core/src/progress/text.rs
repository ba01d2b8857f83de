//! The words and numbers every projection prints: one formatting, so the command, the rollout
//! view, the nodes pane and the dashboard cannot round or word a figure differently.

use super::{Pace, Progress};

/// `2.0 nodes/min over 10m`, or `-` with no pace.
pub fn pace_text(p: Option<Pace>) -> String {
    match p {
        Some(p) => format!(
            "{:.1} nodes/min over {}",
            p.per_min,
            crate::model::short_duration(p.window_secs)
        ),
        None => "-".into(),
    }
}

/// `1h05m`, `4m05s`, `40s`, or `-` with no ETA.
pub fn eta_text(secs: Option<i64>) -> String {
    match secs {
        Some(s) if s >= 3600 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        Some(s) if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        Some(s) => format!("{s}s"),
        None => "-".into(),
    }
}

impl Progress {
    /// `new 5/17 updating 2 held 3 old 7 failed 0` (then the rarer phases when there are
    /// some): the counts line; the total after `new` is every member the counts add up to.
    pub fn counts_text(&self) -> String {
        self.counts.text()
    }

    /// `batch 3/7`, or nothing without a plan.
    pub fn batch_text(&self) -> Option<String> {
        self.batch.map(|(b, of)| format!("batch {b}/{of}"))
    }

    /// `pace 2.0 nodes/min over 10m ETA 4m05s`.
    pub fn pace_eta_text(&self) -> String {
        format!(
            "pace {} ETA {}",
            pace_text(self.pace),
            eta_text(self.eta_secs)
        )
    }

    /// A node group's row in a list (the console's node-groups pane), as its nodes pane says
    /// it: the counts there are (`new` always), the pace and ETA only while members move,
    /// then the state when nothing moves (its why last: a narrow column cuts it first);
    /// empty for a group no update covers.
    pub fn row_text(&self) -> String {
        if self.counts.in_update_total() == 0 {
            return String::new();
        }
        let counts: Vec<String> = self
            .counts
            .items()
            .into_iter()
            .filter(|(p, n)| *n > 0 || *p == super::Phase::New)
            .map(|(p, n)| match p {
                super::Phase::New => format!("new {n}/{}", self.counts.total()),
                p => format!("{} {n}", p.label()),
            })
            .collect();
        let mut parts = vec![counts.join(" ")];
        if self.pace.is_some() || self.eta_secs.is_some() {
            parts.push(self.pace_eta_text());
        }
        if !self.state.moving() {
            parts.push(self.state.label());
        }
        parts.join(" · ")
    }

    /// The `nodegroups` command's cells: counts, state, pace, ETA (`-` when nothing moves).
    pub fn cells(&self) -> [String; 4] {
        [
            self.counts_text(),
            self.state.label(),
            pace_text(self.pace),
            eta_text(self.eta_secs),
        ]
    }

    /// The one summary line: state, counts, batch, pace and ETA, and the update's age.
    pub fn summary(&self) -> String {
        let mut parts = vec![self.state.label(), self.counts_text()];
        parts.extend(self.batch_text());
        parts.push(self.pace_eta_text());
        if let Some(a) = self.age_secs() {
            parts.push(format!("for {}", crate::model::short_duration(a)));
        }
        parts.join(" · ")
    }
}

impl super::Counts {
    /// `new 5/17 updating 2 held 3 old 7` (then the rarer phases when there are some): the
    /// total after `new` is every member these counts add up to.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        for (phase, n) in self.items() {
            out.push(match phase {
                super::Phase::New => format!("new {n}/{}", self.total()),
                p => format!("{} {n}", p.label()),
            });
        }
        out.join(" ")
    }
}
