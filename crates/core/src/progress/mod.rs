//! One truth of progress: where an update of a node group (or a cluster) stands, computed once
//! from the facts and shown by every place (the `rollout status` command, the console's rollout
//! view, nodes pane, heat map and dashboard) without any of them computing a figure of its own.
//!
//! The facts come from several services, and each alone misleads:
//! - Heat's member status says `UPDATE_COMPLETE` for a member an update has not reached yet
//!   (its last update completed), `INIT_COMPLETE` for a member a scale has declared but not
//!   created, and `UPDATE_IN_PROGRESS` for a member held on a `pre-update` hook (Heat has
//!   started the member's update and waits for a signal before touching it);
//! - Nova's image says whether a server is on the target image, but not whether Heat holds it;
//! - the rollout's journal says whether the operator paused, skipped or aborted.
//!
//! [`MemberFacts`] gathers them per member, [`phase_of`] gives each member one [`Phase`], and
//! [`Progress::compute`] turns members plus the update's own facts ([`UpdateFacts`]) into
//! counts that always add up to the members, a pace over a stated window, an ETA only while
//! members move, and one [`State`] saying why when nothing moves.

use crate::model::Status;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

mod capi;
mod nodes;
mod since;
mod text;
pub use capi::{capi_verdict, verdict_of_servers};
pub use nodes::of_nodes;
pub use since::{cluster_in_state, group_in_state, in_state, InState};
pub use text::{eta_text, pace_text};

thread_local! {
    /// How many times this thread computed a model: the figure that shows the console
    /// computes once per change of the facts, not once per frame (its tests and bench read
    /// it). Per thread, so tests running side by side do not count each other's.
    static COMPUTES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many models [`Progress::compute`] has computed on this thread so far.
pub fn computes_on_this_thread() -> u64 {
    COMPUTES.with(|c| c.get())
}

/// Whether Heat's status of a node group (its stack, or its group resource) says its members
/// are as its definition says: nothing runs on it (`*_IN_PROGRESS`) and its last action did
/// not fail (after a failed update, members are on either side of it). The one reading of
/// that status: an update is looked for (and followed by the progress model) only where it
/// is false, and what is read of a group's members only at rest (a plain stack's IMAGE and
/// FLAVOR, kept by the status they were read at; a node stream's settled image) only where
/// it is true, so the model and the facts it is given never disagree on it.
pub fn at_rest(status: &Status) -> bool {
    !status.is_in_progress() && !status.is_failed()
}

/// The window the pace is measured over: members that became new in the last ten minutes.
/// A rollout's early minutes count over the time it has run (`over 10s` at 10 s old; no
/// pace before [`PACE_MIN_SECS`] of it); the time it stood paused in the window does not
/// count.
pub const PACE_WINDOW_SECS: i64 = 600;

/// Who holds a member on a Heat hook. Heat pauses a member on a `pre-update` hook and waits for
/// a signal; whoever set the hook is the one expected to send it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// This rollout's own hook: it releases the member when its batch comes.
    ThisRollout,
    /// Another caldera's rollout (another machine, or a driver that is gone).
    OtherCaldera,
    /// A hook the operator put in the stack's environment by hand: nobody here releases it.
    Operator,
    /// Heat itself: a hook whose owner is not known (an update started elsewhere).
    Heat,
}

impl Holder {
    pub fn label(self) -> &'static str {
        match self {
            Holder::ThisRollout => "this rollout",
            Holder::OtherCaldera => "another caldera",
            Holder::Operator => "an operator's hook",
            Holder::Heat => "Heat",
        }
    }
}

/// One member's place in an update. Exactly one per member, so counts add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "phase", content = "by")]
pub enum Phase {
    /// Still on the old image; the update has not reached it.
    Pending,
    /// Paused on a Heat hook, waiting for a signal from its holder.
    Held(Holder),
    /// Heat is updating it now.
    Updating,
    /// On the target image, its update done.
    New,
    Failed,
    /// The operator skipped it: this rollout never releases it.
    Skipped,
    /// An abort's rollback took it back to the old image.
    RolledBack,
    /// A scale added it and Heat has not created it yet (`INIT_COMPLETE`,
    /// `CREATE_IN_PROGRESS`): not a member the update has completed.
    Creating,
    /// Being deleted (a scale down, a replacement).
    Removing,
    /// A member of a group no update is running on (or one the update does not touch).
    NotInUpdate,
}

impl Phase {
    /// The word the legends and the command print.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Pending => "old",
            Phase::Held(_) => "held",
            Phase::Updating => "updating",
            Phase::New => "new",
            Phase::Failed => "failed",
            Phase::Skipped => "skipped",
            Phase::RolledBack => "rolled back",
            Phase::Creating => "creating",
            Phase::Removing => "removing",
            Phase::NotInUpdate => "idle",
        }
    }
}

/// What a member's HOOK cell says, from its phase in the model (the fact the `held` count is
/// made of, so the column and the count cannot disagree): `held` for a member waiting on a Heat
/// hook, the word the counts and `caldera rollout status` use (Heat's own event says "paused
/// until Hook pre-update is cleared": that text is shown verbatim where Heat's events are);
/// `held (inferred)` when the hold is inferred, Heat having purged the pause event (`inferred`:
/// the member's reading says so); nothing for any other phase.
pub fn hook_cell(phase: Option<Phase>, inferred: bool) -> String {
    match phase {
        Some(p @ Phase::Held(_)) if inferred => format!("{} (inferred)", p.label()),
        Some(p @ Phase::Held(_)) => p.label().to_string(),
        Some(
            Phase::Pending
            | Phase::Updating
            | Phase::New
            | Phase::Failed
            | Phase::Skipped
            | Phase::RolledBack
            | Phase::Creating
            | Phase::Removing
            | Phase::NotInUpdate,
        )
        | None => String::new(),
    }
}

/// What is known of one member, from Heat, Nova and the rollout's journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberFacts {
    pub name: String,
    /// Heat's status of the member resource.
    pub status: Status,
    /// Held on a hook, and by whom.
    pub held_by: Option<Holder>,
    /// Nova's image against the target (`Some(true)`: on it), or the rollout's own word that
    /// Heat finished it; `None` when neither is known.
    pub on_target: Option<bool>,
    /// The update runs over this member (its group is being updated).
    pub in_update: bool,
    pub skipped: bool,
    pub rolled_back: bool,
    /// When the member entered its current status.
    pub since: Option<DateTime<Utc>>,
    /// When it became new (its update finished), for the pace.
    pub finished_at: Option<DateTime<Utc>>,
    /// Heat's update replaces it: its status is its replacement's, whose `CREATE_*` is the
    /// member's update (not a member a scale adds).
    #[serde(default)]
    pub replacing: bool,
}

/// The one phase of a member. Creation and removal come first (a member a scale is adding is
/// not complete, whatever Heat's `INIT_COMPLETE` says; one whose replacement Heat creates is
/// being updated), then failure and the operator's word,
/// then whether the update touches it, then the hook, then Heat's work and the image.
pub fn phase_of(m: &MemberFacts) -> Phase {
    let action = m.status.action.as_str();
    if action == "DELETE" && !m.status.is_complete() {
        return Phase::Removing;
    }
    if action == "INIT" || (action == "CREATE" && m.status.is_in_progress()) {
        // A replacement Heat builds is the member's update (`UpdateReplace`): the member
        // moves as any member being updated does.
        return if m.replacing {
            Phase::Updating
        } else {
            Phase::Creating
        };
    }
    if m.status.is_failed() {
        return Phase::Failed;
    }
    if m.skipped {
        return Phase::Skipped;
    }
    if m.rolled_back {
        return Phase::RolledBack;
    }
    if !m.in_update {
        return Phase::NotInUpdate;
    }
    if let Some(h) = m.held_by {
        return Phase::Held(h);
    }
    if m.status.is_in_progress() {
        return Phase::Updating;
    }
    match m.on_target {
        Some(true) => Phase::New,
        // Heat's COMPLETE without the image says nothing of this update: still to go.
        Some(false) | None => Phase::Pending,
    }
}

/// What the rollout's journal (or Magnum, or Heat alone) says of the update as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "control", rename_all = "snake_case")]
pub enum Control {
    /// No update known: the group is at rest (or an update is seen only in Heat's status).
    None,
    /// Under way; something releases members (or Heat updates them itself).
    Running,
    /// Stopped releasing on purpose: the operator, a failure, a health gate.
    Paused {
        why: String,
        since: Option<DateTime<Utc>>,
    },
    /// The operator aborted; `rollback`: Heat's rollback takes members back.
    Aborted {
        rollback: bool,
        why: String,
    },
    Failed {
        why: String,
    },
    /// Over before this machine saw its end: Heat's stack no longer runs the update
    /// (another machine's driver ended it, or a newer update of the stack replaced it).
    EndedElsewhere {
        why: String,
    },
    /// Every member released and Heat's update over, but the rollout's hooks are still in
    /// the stack's environment (its end's PATCH is due, or runs); `why` says who takes them
    /// out. Not finished: the next update of the stack would be held on them.
    Closing {
        why: String,
    },
    /// The driver said it finished: still checked against Heat and the members.
    Finished,
}

/// The update's own facts, beside its members'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateFacts {
    /// Heat's status of the node group's stack (the update's), when read.
    pub stack_status: Option<Status>,
    pub control: Control,
    /// Batches as planned: the one in flight (0-based) and how many the plan has.
    pub batch: Option<usize>,
    pub batches: usize,
    /// When the update started: its age survives a scale of the same group.
    pub started_at: Option<DateTime<Utc>>,
    /// When it stood paused (an operator's pause, the rollout's own on a failure or a gate),
    /// each from its start to its resume (`None`: still paused): the pace is measured over
    /// the time members were let move. At most [`PAUSES_KEPT`], the newest.
    #[serde(default)]
    pub paused: Vec<PauseSpan>,
}

/// A time an update stood paused: from, and until (`None`: still).
pub type PauseSpan = (DateTime<Utc>, Option<DateTime<Utc>>);

/// The most pauses an update keeps (the newest): the pace's window is ten minutes, so older
/// ones never count.
pub const PAUSES_KEPT: usize = 64;

/// The shortest time a pace is measured over. Below it (a rollout a few seconds old, or one
/// resumed a moment ago after a window all paused) there is no pace and no ETA yet (`pace -
/// ETA -`, as before any member is new): one member's finish in a second or two would read
/// as a rate of dozens a minute, and stretching the window to this length would state a
/// time that was not measured (the fault of the minute it used to be stretched to). From
/// it on, the pace is over the time measured (`over 5s`, `over 10s`).
pub const PACE_MIN_SECS: i64 = 5;

/// Members by phase. [`Counts::total`] is always the number of members.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub pending: usize,
    pub held: usize,
    pub updating: usize,
    pub new: usize,
    pub failed: usize,
    pub skipped: usize,
    pub rolled_back: usize,
    pub creating: usize,
    pub removing: usize,
    pub not_in_update: usize,
}

impl Counts {
    fn add(&mut self, p: Phase) {
        let slot = match p {
            Phase::Pending => &mut self.pending,
            Phase::Held(_) => &mut self.held,
            Phase::Updating => &mut self.updating,
            Phase::New => &mut self.new,
            Phase::Failed => &mut self.failed,
            Phase::Skipped => &mut self.skipped,
            Phase::RolledBack => &mut self.rolled_back,
            Phase::Creating => &mut self.creating,
            Phase::Removing => &mut self.removing,
            Phase::NotInUpdate => &mut self.not_in_update,
        };
        *slot += 1;
    }

    /// Every member, whatever its phase.
    pub fn total(&self) -> usize {
        self.in_update_total() + self.not_in_update
    }

    /// The members the update covers (every phase but `not in update`).
    pub fn in_update_total(&self) -> usize {
        self.pending
            + self.held
            + self.updating
            + self.new
            + self.failed
            + self.skipped
            + self.rolled_back
            + self.creating
            + self.removing
    }

    /// Still to go: pending, held, updating, being created.
    pub fn left(&self) -> usize {
        self.pending + self.held + self.updating + self.creating
    }

    /// The counts as (phase word, count), in the order every projection prints them; zero
    /// counts of the rare phases are left out, the main ones always shown.
    pub fn items(&self) -> Vec<(Phase, usize)> {
        let all = [
            (Phase::New, self.new),
            (Phase::Updating, self.updating),
            (Phase::Held(Holder::Heat), self.held),
            (Phase::Pending, self.pending),
            (Phase::Failed, self.failed),
            (Phase::Skipped, self.skipped),
            (Phase::RolledBack, self.rolled_back),
            (Phase::Creating, self.creating),
            (Phase::Removing, self.removing),
            (Phase::NotInUpdate, self.not_in_update),
        ];
        all.into_iter()
            .filter(|(p, n)| {
                *n > 0
                    || matches!(
                        p,
                        Phase::New | Phase::Updating | Phase::Held(_) | Phase::Pending
                    )
            })
            .collect()
    }

    fn merge(&mut self, o: &Counts) {
        self.pending += o.pending;
        self.held += o.held;
        self.updating += o.updating;
        self.new += o.new;
        self.failed += o.failed;
        self.skipped += o.skipped;
        self.rolled_back += o.rolled_back;
        self.creating += o.creating;
        self.removing += o.removing;
        self.not_in_update += o.not_in_update;
    }
}

/// How fast members become new: `new_in_window` over `window_secs`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pace {
    pub window_secs: i64,
    pub new_in_window: usize,
    pub per_min: f64,
}

/// Where the update stands. Completed only when Heat says its update is complete and every
/// member the update covers (but the skipped) is new.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum State {
    /// No update on these members.
    Idle,
    Running,
    /// Nothing moves, and why; since when, when known.
    Paused {
        why: String,
        since: Option<DateTime<Utc>>,
    },
    Completed,
    /// Every member new and Heat's update over, the rollout's hooks not yet out of the
    /// stack's environment ([`Control::Closing`]): not completed yet.
    Closing {
        why: String,
    },
    Aborted {
        why: String,
    },
    /// Aborted, and Heat's rollback took members back.
    RolledBack,
    Failed {
        why: String,
    },
    /// See [`Control::EndedElsewhere`].
    EndedElsewhere {
        why: String,
    },
}

impl State {
    pub fn label(&self) -> String {
        match self {
            State::Idle => "idle".into(),
            State::Running => "running".into(),
            State::Paused {
                why,
                since: Some(t),
            } => format!("paused since {}: {why}", t.format("%H:%M:%S")),
            State::Paused { why, since: None } => format!("paused: {why}"),
            State::Completed => "completed".into(),
            State::Closing { why } => format!("closing: {why}"),
            State::Aborted { why } => format!("aborted: {why}"),
            State::RolledBack => "rolled back".into(),
            State::Failed { why } => format!("failed: {why}"),
            State::EndedElsewhere { why } => format!("ended elsewhere: {why}"),
        }
    }

    /// Only a running update has a pace and an ETA.
    pub fn moving(&self) -> bool {
        matches!(self, State::Running)
    }
}

/// The progress of one node group's update, or a cluster's (several groups summed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub counts: Counts,
    pub state: State,
    /// `None` until a member became new within the window, and whenever the state is not
    /// running (nothing moves then).
    pub pace: Option<Pace>,
    /// Seconds left at the pace; only while the state is running.
    pub eta_secs: Option<i64>,
    /// The batch in flight (1-based) and the plan's count; never renumbered.
    pub batch: Option<(usize, usize)>,
    /// When the update started (its time in state); survives a scale.
    pub since: Option<DateTime<Utc>>,
    pub computed_at: DateTime<Utc>,
    /// Each member's phase by name, in the members' order: what the heat map draws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberPhase>,
    /// When the update stood paused, as the facts it was computed from said
    /// ([`UpdateFacts::paused`]): kept with it, so the next look carries them on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paused: Vec<PauseSpan>,
}

/// One member's phase, by its name in the group (Heat's member name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberPhase {
    pub name: String,
    #[serde(flatten)]
    pub phase: Phase,
}

impl Progress {
    /// The phase of the member named `name`, when it is one of these members.
    pub fn phase_of(&self, name: &str) -> Option<Phase> {
        self.members
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.phase)
    }

    /// The counts of each group these members belong to, in the order the groups first
    /// appear: a member keyed `PATH/NAME` (a group held beside a rollout's target, `--also`;
    /// a stream over several groups) counts under `PATH`, one keyed by its name alone under
    /// `None` (the target's own). Made of the members' phases, so the groups' counts add up
    /// to [`Progress::counts`].
    pub fn counts_by_group(&self) -> Vec<(Option<&str>, Counts)> {
        let mut out: Vec<(Option<&str>, Counts)> = Vec::new();
        for m in &self.members {
            let group = crate::model::split_member_key(&m.name).0;
            let at = match out.iter().position(|(g, _)| *g == group) {
                Some(at) => at,
                None => {
                    out.push((group, Counts::default()));
                    out.len() - 1
                }
            };
            out[at].1.add(m.phase);
        }
        out
    }

    /// This update's progress as one of its groups shows it: the members `row` gives a row
    /// of that group's pane (a member's key to its row's name there; None for another
    /// group's member), under their rows' names, and their counts. The state, pace, ETA,
    /// batch and age stay the whole update's: every pane shows the one update (a rollout
    /// holding a cluster's masters beside its minions has one ETA, not one per group).
    pub fn projected<'a>(&'a self, row: impl Fn(&'a str) -> Option<&'a str>) -> Progress {
        let mut counts = Counts::default();
        let mut members = Vec::new();
        for m in &self.members {
            if let Some(name) = row(&m.name) {
                counts.add(m.phase);
                members.push(MemberPhase {
                    name: name.to_string(),
                    phase: m.phase,
                });
            }
        }
        Progress {
            counts,
            members,
            ..self.clone()
        }
    }

    /// The one computation: members' phases, counts, state, pace and ETA.
    pub fn compute(members: &[MemberFacts], update: &UpdateFacts, now: DateTime<Utc>) -> Progress {
        COMPUTES.with(|c| c.set(c.get() + 1));
        let phases: Vec<Phase> = members.iter().map(phase_of).collect();
        let mut counts = Counts::default();
        for p in &phases {
            counts.add(*p);
        }
        let state = state_of(members, &phases, &counts, update);
        let since = update.started_at;
        // Nothing moves unless the update runs: a paused or ended update has no pace.
        let pace =
            pace_of(members, &phases, (since, &update.paused), now).filter(|_| state.moving());
        let mut p = Progress {
            counts,
            state,
            pace,
            eta_secs: None,
            batch: batch_shown(update, &counts),
            since,
            computed_at: now,
            members: members
                .iter()
                .zip(&phases)
                .map(|(m, p)| MemberPhase {
                    name: m.name.clone(),
                    phase: *p,
                })
                .collect(),
            paused: update.paused.clone(),
        };
        p.eta_secs = eta_of(&p);
        p
    }

    /// Several groups' progress as one (a cluster's): counts and paces add up; the state is
    /// the most telling one (failed over paused over running over completed). The ETA is the
    /// latest of the moving groups' own: groups move side by side, each at its own pace (a
    /// scale-up's members are created while another group's are upgraded one at a time), so
    /// one group's speed does not shorten another's wait; unknown while any moving group's is.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Progress>, now: DateTime<Utc>) -> Progress {
        let mut out = Progress::idle(now);
        let mut pace: Option<Pace> = None;
        let mut etas: Vec<Option<i64>> = Vec::new();
        for p in parts {
            if p.state.moving() && p.counts.left() > 0 {
                etas.push(p.eta_secs);
            }
            out.counts.merge(&p.counts);
            out.members.extend(p.members.iter().cloned());
            if let Some(q) = p.pace {
                let acc = pace.get_or_insert(Pace {
                    window_secs: q.window_secs,
                    new_in_window: 0,
                    per_min: 0.0,
                });
                acc.new_in_window += q.new_in_window;
                acc.per_min += q.per_min;
                acc.window_secs = acc.window_secs.max(q.window_secs);
            }
            if rank(&p.state) > rank(&out.state) {
                out.state = p.state.clone();
            }
            out.since = match (out.since, p.since) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        out.pace = pace;
        out.eta_secs = match out.state.moving() {
            true => slowest_eta(etas),
            false => None,
        };
        out
    }

    /// Nothing known, no update.
    pub fn idle(now: DateTime<Utc>) -> Progress {
        Progress {
            counts: Counts::default(),
            state: State::Idle,
            pace: None,
            eta_secs: None,
            batch: None,
            since: None,
            computed_at: now,
            members: Vec::new(),
            paused: Vec::new(),
        }
    }

    /// The time in state: how long the update has run (or `None`).
    pub fn age_secs(&self) -> Option<i64> {
        self.since
            .map(|t| (self.computed_at - t).num_seconds().max(0))
    }
}

/// The cluster's ETA from its moving groups' own: the slowest group's (they move side by
/// side), unknown while any of them is unknown, and none without a moving group.
fn slowest_eta(etas: Vec<Option<i64>>) -> Option<i64> {
    etas.into_iter()
        .try_fold(None, |slowest: Option<i64>, eta| {
            Some(slowest.max(Some(eta?)))
        })?
}

/// Which state wins when groups are summed.
fn rank(s: &State) -> u8 {
    match s {
        State::Idle => 0,
        State::Completed => 1,
        State::EndedElsewhere { .. } => 2,
        State::RolledBack => 3,
        State::Closing { .. } => 4,
        State::Running => 5,
        State::Aborted { .. } => 6,
        State::Paused { .. } => 7,
        State::Failed { .. } => 8,
    }
}

/// The batch to show: the one in flight; with none, the last once nothing is left; never a
/// number the plan does not have.
fn batch_shown(u: &UpdateFacts, c: &Counts) -> Option<(usize, usize)> {
    if u.batches == 0 {
        return None;
    }
    match u.batch {
        Some(b) => Some(((b + 1).min(u.batches), u.batches)),
        None if c.left() == 0 && c.new + c.skipped > 0 => Some((u.batches, u.batches)),
        None => Some((0, u.batches)),
    }
}

/// The state from the control's word checked against Heat and the members.
fn state_of(members: &[MemberFacts], phases: &[Phase], c: &Counts, u: &UpdateFacts) -> State {
    let heat_done = u
        .stack_status
        .as_ref()
        .is_some_and(|s| s.is_complete() && s.action != "ROLLBACK");
    let rolled_back = u
        .stack_status
        .as_ref()
        .is_some_and(|s| s.action == "ROLLBACK" && s.is_complete());
    match &u.control {
        Control::Aborted { rollback: true, .. } if rolled_back || c.rolled_back > 0 => {
            return State::RolledBack
        }
        Control::Aborted { why, .. } => return State::Aborted { why: why.clone() },
        Control::Failed { why } => return State::Failed { why: why.clone() },
        Control::EndedElsewhere { why } => return State::EndedElsewhere { why: why.clone() },
        Control::None
        | Control::Running
        | Control::Paused { .. }
        | Control::Closing { .. }
        | Control::Finished => {}
    }
    let covered = c.in_update_total();
    if covered == 0 {
        return State::Idle;
    }
    // Every member the update covers (but the skipped) is new, and Heat agrees.
    if c.new + c.skipped == covered && heat_done {
        return match &u.control {
            Control::Closing { why } => State::Closing { why: why.clone() },
            _ => State::Completed,
        };
    }
    if let Control::Paused { why, since } = &u.control {
        return State::Paused {
            why: why.clone(),
            since: *since,
        };
    }
    if c.failed > 0 && c.updating == 0 {
        return State::Failed {
            why: format!("{} member(s) failed", c.failed),
        };
    }
    if c.updating == 0 && c.creating == 0 && c.removing == 0 {
        if let Some(p) = held_pause(members, phases, c) {
            return p;
        }
    }
    // Every member settled while Heat's update goes on (the rollout's own last PATCH taking
    // its hooks out, or resources beside the group): still running, with no ETA (nothing is
    // left); not a pause, which would ask the operator to resume what needs no one.
    State::Running
}

/// Nothing updates and members are held: paused, saying by whom and since when. A skipped
/// member still on its hook keeps Heat's update waiting (it is not complete).
fn held_pause(members: &[MemberFacts], phases: &[Phase], c: &Counts) -> Option<State> {
    let held: Vec<(&MemberFacts, Holder)> = members
        .iter()
        .zip(phases)
        .filter_map(|(m, p)| match p {
            Phase::Held(h) => Some((m, *h)),
            _ => None,
        })
        .collect();
    let skipped_waiting = members
        .iter()
        .zip(phases)
        .filter(|(m, p)| **p == Phase::Skipped && m.held_by.is_some())
        .count();
    if held.is_empty() && skipped_waiting == 0 {
        return None;
    }
    // This rollout releasing its own holds batch by batch is running, not paused, unless
    // nothing else is left (then it waits on itself, which is a pause).
    let others: Vec<Holder> = held
        .iter()
        .map(|(_, h)| *h)
        .filter(|h| *h != Holder::ThisRollout)
        .collect();
    // Only this rollout's own holds (or skipped members) while it still has members to
    // release: it is running. The skipped members' holds stop Heat's update only once
    // nothing else is left.
    if others.is_empty() && (skipped_waiting == 0 || c.pending + c.held > 0) {
        return None;
    }
    let since = held.iter().filter_map(|(m, _)| m.since).min();
    let why = match (others.first(), skipped_waiting) {
        (Some(h), _) => format!("{} member(s) held on a hook by {}", others.len(), h.label()),
        (None, n) if n > 0 => {
            format!("{n} skipped member(s) still held on their hook: Heat's update waits on them")
        }
        (None, _) => format!("{} member(s) held on a hook", held.len()),
    };
    Some(State::Paused { why, since })
}

/// Members that became new within the window, per minute of the time the update moved in
/// it: the window is the last [`PACE_WINDOW_SECS`], or the update's age when younger, less
/// the time it stood paused (`started`, `paused`); no pace while that is under
/// [`PACE_MIN_SECS`]. A young update's pace is what was measured (`over 10s`), not stretched
/// to a time that has not passed (was: `1.0 nodes/min over 1m` at 10 s old, ETA 5m for a
/// rollout over in 50 s; then `over 5s` at 3 s old);
/// after a ten-minute pause, the pace is that of the time members moved (was: divided by the
/// pause too). When no new member's finish is known (a first look finds them done), the pace
/// is theirs over the update's whole moving age.
fn pace_of(
    members: &[MemberFacts],
    phases: &[Phase],
    (started, paused): (Option<DateTime<Utc>>, &[PauseSpan]),
    now: DateTime<Utc>,
) -> Option<Pace> {
    let new: Vec<&MemberFacts> = members
        .iter()
        .zip(phases)
        .filter(|(_, p)| **p == Phase::New)
        .map(|(m, _)| m)
        .collect();
    let age = started.map(|t| (now - t).num_seconds().max(0));
    // The time measured: what the window says, never stretched to a time that has not run.
    let moving =
        |secs: i64| Some(secs - paused_within(paused, now, secs)).filter(|m| *m >= PACE_MIN_SECS);
    let (n, window) = if new.iter().all(|m| m.finished_at.is_none()) {
        (new.len(), moving(age?)?)
    } else {
        let wall = age.unwrap_or(PACE_WINDOW_SECS).min(PACE_WINDOW_SECS);
        let n = new
            .iter()
            .filter_map(|m| m.finished_at)
            .filter(|t| (now - *t).num_seconds() <= wall && *t <= now)
            .count();
        (n, moving(wall)?)
    };
    (n > 0).then(|| Pace {
        window_secs: window,
        new_in_window: n,
        per_min: n as f64 * 60.0 / window as f64,
    })
}

/// Seconds of the last `secs` before `now` that fall in a pause. Pauses that overlap (the
/// same one known from the journal and from the engine's state) count once.
fn paused_within(paused: &[PauseSpan], now: DateTime<Utc>, secs: i64) -> i64 {
    let from = now - chrono::Duration::seconds(secs);
    let mut spans: Vec<(DateTime<Utc>, DateTime<Utc>)> = paused
        .iter()
        .map(|(a, b)| ((*a).max(from), b.unwrap_or(now).min(now)))
        .filter(|(a, b)| a < b)
        .collect();
    spans.sort();
    let mut total = 0;
    let mut counted_to = from;
    for (a, b) in spans {
        let a = a.max(counted_to);
        if b > a {
            total += (b - a).num_seconds();
            counted_to = b;
        }
    }
    total.min(secs)
}

/// Seconds left at the pace: only while running and some member is left.
fn eta_of(p: &Progress) -> Option<i64> {
    let pace = p.pace?;
    let left = p.counts.left();
    (p.state.moving() && left > 0 && pace.per_min > 0.0)
        .then(|| (left as f64 / pace.per_min * 60.0).round() as i64)
}

#[cfg(test)]
mod tests;
