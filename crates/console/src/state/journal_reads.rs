//! The journal view's state: the audit journal tailed from the operator (`read_journal`
//! from the last offset on each refresh), an entry's detail and the JSON-lines export.

use super::action_dialogs::Dialog;
use super::view::ViewKind;
use super::{App, Level, Mode};
use crate::journal::{Entry, Outcome};
use crate::message::{OperatorRequest, Request};

pub use super::store::{JournalLog, JournalRow};

/// The outcome as one word and its error.
pub fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Started => "started".into(),
        Outcome::Ok => "ok".into(),
        Outcome::Failed { error } => format!("FAILED: {error}"),
        Outcome::Refused { error } => format!("REFUSED: {error}"),
    }
}

/// Everything an entry holds, for the detail overlay.
pub fn entry_lines(e: &Entry) -> Vec<String> {
    let mut out = vec![
        format!("time     {}", e.time.format("%Y-%m-%d %H:%M:%S UTC")),
        format!("who      {}@{}", e.user, e.cloud),
        format!("action   {}", e.action),
        format!("target   {}", e.target),
        format!("outcome  {}", outcome_text(&e.outcome)),
    ];
    if let Some(r) = &e.rollout {
        out.push(format!("rollout  {r}"));
    }
    if !e.plan.is_empty() {
        out.push("plan:".into());
        out.extend(e.plan.iter().map(|l| format!("  {l}")));
    }
    if !e.calls.is_empty() {
        out.push("API calls:".into());
        out.extend(e.calls.iter().map(|c| format!("  {c}")));
    }
    if let Some(o) = &e.output {
        out.push("output:".into());
        out.extend(o.lines().map(|l| format!("  {l}")));
    }
    out
}

impl App {
    pub(crate) fn want_journal(&mut self, force: bool) {
        let now = self.now;
        let log = &self.store.journal;
        if !(log.meta.due(now, self.refresh) || (force && !log.meta.in_flight)) {
            return;
        }
        let offset = log.offset;
        let gen = self.gen();
        self.store.journal.meta.begin(gen, now);
        self.outbox
            .push(Request::Operator(OperatorRequest::Journal { offset, gen }));
    }

    fn selected_entry(&self) -> Option<&JournalRow> {
        let v = self.view();
        matches!(v.kind, ViewKind::Journal)
            .then(|| v.table.selected(&self.store.journal.rows))
            .flatten()
    }

    pub(crate) fn journal_detail(&mut self) {
        let Some(row) = self.selected_entry() else {
            self.set_status(Level::Warn, "no journal entry selected");
            return;
        };
        let title = format!("{} {}", row.entry.action, row.entry.target);
        let lines = entry_lines(&row.entry);
        self.mode = Mode::Dialog(Box::new(Dialog::Text {
            title,
            lines,
            scroll: 0,
        }));
    }

    pub(super) fn journal_export(&mut self) {
        if !matches!(self.view().kind, ViewKind::Journal) {
            return;
        }
        let name = format!("caldera-journal-{}.jsonl", self.now.format("%Y%m%d-%H%M%S"));
        self.open_input(super::input::InputKind::ExportJournal, &name);
    }

    /// The journal as filtered on screen, one JSON object a line.
    pub fn journal_jsonl(&mut self) -> String {
        self.prepare();
        let v = self.view();
        if !matches!(v.kind, ViewKind::Journal) {
            return String::new();
        }
        let mut out = String::new();
        for &i in v.table.view() {
            if let Some(r) = self.store.journal.rows.get(i) {
                match caldera_cloud::model::json_string(&r.entry) {
                    Ok(line) => {
                        out.push_str(&line);
                        out.push('\n');
                    }
                    Err(e) => tracing::warn!("journal entry {} not exported: {e}", r.seq),
                }
            }
        }
        out
    }
}
