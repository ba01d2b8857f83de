//! Why a stack is not done, for a script or a terminal with no console: the verdict the
//! console's why-stuck panel draws ([`super::stuck`]), said as lines and as one word a script
//! branches on through the exit status.
//!
//! The verdict is the worst of what the tree shows, in this order:
//! - **failed**: a resource in `*_FAILED`, or the stack itself failed (a timeout fails the
//!   stack with no resource failed);
//! - **stalled**: work in progress three times longer than its siblings took
//!   ([`super::stuck::is_stalled`]), or a stack in progress for long with no resource in
//!   progress, failed or held (nothing Heat does will move it);
//! - **held**: members paused on a Heat hook: nothing is wrong, someone must clear the hook;
//! - **hooks left**: nothing runs, but hooks the stack's environment keeps will hold the next
//!   update's members (the caller adds these: they are read by the drivers layer);
//! - **busy**: work in progress within its siblings' pace; **settled**: nothing to say.

use super::capi_stall::{self, words};
use super::deployments::{DeploymentVerdict, DeploymentView};
use super::hooks::{newest_events, PendingHook, TREE_DEPTH};
use super::stack_paths::StackPaths;
use super::stuck::{assess_with_inferred, Cause, Entry};
use crate::api::error::ApiError;
use crate::api::heat::{HeatClient, ResourceQuery};
use crate::model::{StackEvent, StackRef, StackResource, Status};
use chrono::{DateTime, Utc};
use serde::Serialize;

/// A stack in progress this long with nothing in progress, failed or held under it is
/// stalled: Heat's engine is not working on it (a dead engine, a lost message).
pub const IDLE_STALL_SECS: i64 = 600;

/// Lines of work in progress named before the rest are only counted.
pub const BUSY_LINES: usize = 5;

/// The verdict, least to most severe: a tree with several findings takes the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Settled,
    Busy,
    HooksLeft,
    Held,
    Stalled,
    Failed,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Settled => "settled",
            Verdict::Busy => "busy",
            Verdict::HooksLeft => "hooks left",
            Verdict::Held => "held",
            Verdict::Stalled => "stalled",
            Verdict::Failed => "failed",
        }
    }

    /// The exit status a script branches on: 0 when nothing needs a human (settled, or busy
    /// within its siblings' pace); 3 held (as `rollout` exits when paused), 5 stalled,
    /// 6 failed, 7 hooks left in the environment.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Settled | Verdict::Busy => 0,
            Verdict::Held => 3,
            Verdict::Stalled => 5,
            Verdict::Failed => 6,
            Verdict::HooksLeft => 7,
        }
    }

    /// A Cluster API verdict (from its Nova servers) on this scale.
    pub fn of_capi(v: &capi_stall::Verdict) -> Verdict {
        match v {
            capi_stall::Verdict::Settled => Verdict::Settled,
            capi_stall::Verdict::Progressing => Verdict::Busy,
            capi_stall::Verdict::Failed { .. } => Verdict::Failed,
            capi_stall::Verdict::Stalled { .. } => Verdict::Stalled,
        }
    }
}

/// The verdict on one stack tree, with the lines that explain it (deepest causes first).
/// Names and reasons come from the cloud: the caller makes them terminal-safe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StackWhy {
    pub stack: String,
    pub status: String,
    pub verdict: Verdict,
    pub lines: Vec<String>,
    /// The Nova servers behind the first failed or stalled causes: the line that names each
    /// and the server's id, for [`with_nova`] to add Nova's word under it.
    #[serde(skip)]
    pub servers: Vec<(usize, String)>,
}

/// Causes whose servers Nova is asked about: a failure's first lines say most.
pub const NOVA_CAUSES: usize = 2;

impl StackWhy {
    /// Adds a finding the caller read elsewhere (hooks left in the environment).
    pub fn add(&mut self, verdict: Verdict, line: String) {
        self.verdict = self.verdict.max(verdict);
        self.lines.push(line);
    }

    /// Remembers the server behind the cause just added (its last line), for Nova's word.
    fn note_server(&mut self, c: &Cause) {
        if let (Some(id), Some(last)) = (&c.server_id, self.lines.len().checked_sub(1)) {
            if self.servers.len() < NOVA_CAUSES {
                self.servers.push((last, id.clone()));
            }
        }
    }
}

/// Adds Nova's word on each server behind a failed or stalled cause under the line naming
/// it (`└ Nova ERROR: No valid host was found (500)`): what Heat's reason often cuts short
/// (`Went to status ERROR due to "Message: …"`) or does not say at all (a server stuck in
/// BUILD). A server Nova cannot show is said so on the same line; the verdict is Heat's.
pub async fn with_nova(why: &mut StackWhy, nova: &crate::api::nova::NovaClient) {
    let servers = std::mem::take(&mut why.servers);
    let words = futures::future::join_all(servers.iter().map(|(_, id)| nova.get_server(id))).await;
    // From the last line up, so that each insertion leaves the earlier indices true.
    for ((line, id), word) in servers.iter().zip(words).rev() {
        let text = match word {
            Ok(detail) => match super::stuck::nova_summary(&detail) {
                Some(summary) => summary,
                None => continue,
            },
            Err(e) => format!("Nova could not show server {id}: {e}"),
        };
        why.lines
            .insert(line + 1, format!("└ {}", first_line(&text)));
    }
}

/// The stack as Heat shows it now, for [`explain`].
pub struct StackState<'a> {
    pub stack: &'a StackRef,
    pub status: &'a Status,
    pub reason: Option<&'a str>,
    /// Since when the stack has been in `status`.
    pub since: Option<DateTime<Utc>>,
}

/// Reads `stack`'s tree (resources down to [`TREE_DEPTH`], the newest events, the holds
/// whose pause events Heat purged) and explains it, or only the part at `under` (a path of
/// resource names from the stack down; empty for the whole stack).
pub async fn read(
    heat: &HeatClient,
    stack: &StackRef,
    under: &[String],
) -> Result<StackWhy, ApiError> {
    let query = ResourceQuery {
        nested_depth: Some(TREE_DEPTH),
        ..Default::default()
    };
    let mut events = Vec::new();
    let (detail, resources, read) = futures::join!(
        heat.get_stack(stack, false),
        heat.list_resources(stack, &query),
        newest_events(heat, stack, Some(TREE_DEPTH), |page| {
            events.extend_from_slice(page);
            false
        })
    );
    let detail = detail?;
    let exhausted = read?;
    let resources: Vec<StackResource> = resources?.into_iter().map(|r| r.resource).collect();
    let inferred =
        super::hooks::tree_holds_from_events(heat, stack, &resources, &events, exhausted).await?;
    events.reverse();
    let summary = &detail.summary;
    let state = StackState {
        stack,
        status: &summary.status,
        reason: summary.status_reason.as_deref(),
        since: summary.updated_at.or(summary.created_at),
    };
    let scope = Scope { under };
    let now = Utc::now();
    let mut why = explain(&state, &resources, events, &inferred, scope, now);
    let stuck = super::deployments::troubled(heat, stack, &resources, under, now).await?;
    name_deployments(&mut why, &stuck);
    Ok(why)
}

/// A deployment still waiting for its agent, or failed, is the deepest cause of its resource
/// (and so of every stack above it) being in progress or failed: named first, with the wait
/// compared with its siblings' or the script's last stderr line.
pub fn name_deployments(why: &mut StackWhy, deployments: &[DeploymentView]) {
    let mut lines: Vec<String> = Vec::new();
    for d in deployments {
        let verdict = match &d.verdict {
            DeploymentVerdict::Failed { .. } => Verdict::Failed,
            DeploymentVerdict::Waiting { overdue: true, .. } => Verdict::Stalled,
            DeploymentVerdict::Waiting { overdue: false, .. } => Verdict::Busy,
            DeploymentVerdict::Complete { .. } | DeploymentVerdict::Unknown { .. } => continue,
        };
        why.verdict = why.verdict.max(verdict);
        lines.push(format!("{}: {}", verdict.word(), d.line()));
    }
    lines.append(&mut why.lines);
    why.lines = lines;
}

/// The part of a tree a verdict is on: the resource at `under` (names from the stack down)
/// and what it holds; empty for the whole tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    pub under: &'a [String],
}

impl Scope<'_> {
    fn covers(&self, parts: &[String]) -> bool {
        parts.len() >= self.under.len() && parts[..self.under.len()] == *self.under
    }
}

/// The verdict on a tree: `resources` as listed with nesting, `events` oldest first,
/// `inferred` the holds known only by inference; only what `scope` covers counts.
pub fn explain(
    state: &StackState,
    resources: &[StackResource],
    mut events: Vec<StackEvent>,
    inferred: &[PendingHook],
    scope: Scope,
    now: DateTime<Utc>,
) -> StackWhy {
    let mut paths = StackPaths::new(state.stack);
    paths.learn(resources);
    let (owned, kept): (Vec<String>, Vec<&StackResource>) = resources
        .iter()
        .filter_map(|r| {
            let parts = paths.resource_path(r);
            scope.covers(&parts).then(|| (parts.join(" > "), r))
        })
        .unzip();
    let entries: Vec<Entry> = kept
        .into_iter()
        .zip(&owned)
        .map(|(resource, path)| Entry { path, resource })
        .collect();
    for e in &mut events {
        e.path = e
            .stack
            .as_ref()
            .and_then(|s| paths.path_of(&s.id))
            .unwrap_or_default();
    }
    let a = assess_with_inferred(&entries, &events, inferred);
    let mut why = StackWhy {
        stack: state.stack.name.clone(),
        status: state.status.raw.clone(),
        verdict: Verdict::Settled,
        lines: vec![],
        servers: vec![],
    };
    let failed = |c: &&Cause| entries[c.index].resource.status.is_failed();
    for c in a.causes.iter().filter(failed) {
        let r = entries[c.index].resource;
        let mut line = format!(
            "failed: {}  {} {} ago",
            entries[c.index].path,
            r.status.raw,
            age(now, c.since)
        );
        if let Some(reason) = r.status_reason.as_deref() {
            line.push_str(&format!(" — {}", first_line(reason)));
        }
        why.add(Verdict::Failed, line);
        why.note_server(c);
    }
    // The stack's own status speaks for the whole stack only: a scope (one group of a
    // cluster's stack) is judged by what is under it, not by its siblings' update.
    let whole = scope.under.is_empty();
    if whole && state.status.is_failed() && !a.causes.iter().any(|c| failed(&c)) {
        let reason = state.reason.map(first_line).unwrap_or("no reason given");
        why.add(
            Verdict::Failed,
            format!("failed: the stack itself, {}: {reason}", state.status.raw),
        );
    }
    for h in &a.holds {
        let names: Vec<&str> = h
            .members
            .iter()
            .filter_map(|&i| entries.get(i))
            .map(|e| e.resource.name.as_str())
            .collect();
        let since = h.since_phrase(now, words);
        why.add(
            Verdict::Held,
            format!("held: {}", h.describe(&names, &since)),
        );
    }
    let mut busy_hidden = 0;
    for c in a.causes.iter().filter(|c| !failed(c)) {
        let (verdict, line) = work_line(&entries, c, now);
        // Work within its siblings' pace is counted past the first few; stalls are named.
        if verdict == Verdict::Busy && why.lines.len() >= BUSY_LINES {
            why.verdict = why.verdict.max(verdict);
            busy_hidden += 1;
            continue;
        }
        why.add(verdict, line);
        if verdict == Verdict::Stalled {
            why.note_server(c);
        }
    }
    if busy_hidden > 0 {
        why.lines.push(format!(
            "… and {busy_hidden} more in progress within their siblings' pace"
        ));
    }
    let idle = a.causes.is_empty() && a.holds.is_empty();
    if whole && state.status.is_in_progress() && idle {
        let secs = state.since.map_or(0, |t| (now - t).num_seconds());
        if secs > IDLE_STALL_SECS {
            why.add(
                Verdict::Stalled,
                format!(
                    "stalled: the stack has been {} for {} with no resource in progress, \
                     failed or held (Heat's engine is not working on it)",
                    state.status.raw,
                    words(secs)
                ),
            );
        } else {
            why.verdict = why.verdict.max(Verdict::Busy);
        }
    }
    why
}

/// `stalled: nodes > 3 > server  in progress 20m; siblings took 36-50 s (median 43 s)`.
fn work_line(entries: &[Entry], c: &Cause, now: DateTime<Utc>) -> (Verdict, String) {
    let (verdict, word) = if c.is_stalled_at(now) {
        (Verdict::Stalled, "stalled")
    } else {
        (Verdict::Busy, "in progress")
    };
    let mut line = format!(
        "{word}: {}  {} for {}",
        entries[c.index].path,
        entries[c.index].resource.status.raw,
        age(now, c.since)
    );
    line.push_str(&c.siblings_phrase(&entries[c.compared].resource.name));
    (verdict, line)
}

fn age(now: DateTime<Utc>, since: Option<DateTime<Utc>>) -> String {
    since.map_or_else(|| "?".to_string(), |t| words((now - t).num_seconds()))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn stack(id: &str) -> StackRef {
        StackRef {
            name: id.into(),
            id: id.into(),
        }
    }

    fn res(name: &str, owner: &str, status: &str, ago: i64, nested: Option<&str>) -> StackResource {
        StackResource {
            name: name.into(),
            logical_id: name.into(),
            physical_id: None,
            resource_type: "T".into(),
            status: Status::parse(status),
            status_reason: None,
            updated_at: Some(Utc::now() - Duration::seconds(ago)),
            owner: Some(stack(owner)),
            nested: nested.map(stack),
            parent_resource: None,
            required_by: vec![],
        }
    }

    fn event(stack_id: &str, name: &str, status: &str, ago: i64, id: &str) -> StackEvent {
        StackEvent {
            id: id.into(),
            time: Utc::now() - Duration::seconds(ago),
            resource_name: name.into(),
            logical_id: name.into(),
            physical_id: None,
            status: Status::parse(status),
            status_reason: None,
            stack: Some(stack(stack_id)),
            path: vec![],
        }
    }

    fn state<'a>(s: &'a StackRef, status: &'a Status, since: i64) -> StackState<'a> {
        StackState {
            stack: s,
            status,
            reason: None,
            since: Some(Utc::now() - Duration::seconds(since)),
        }
    }

    /// `explain` of stack `root` in `status` for `since` seconds, whole (no scope), nothing
    /// inferred.
    fn explain_root(
        status: &str,
        since: i64,
        resources: &[StackResource],
        events: Vec<StackEvent>,
    ) -> StackWhy {
        let (root, status) = (stack("root"), Status::parse(status));
        explain(
            &state(&root, &status, since),
            resources,
            events,
            &[],
            Scope::default(),
            Utc::now(),
        )
    }

    /// Three members of a group: two took 40 s and 50 s; the third has been at it 20 min.
    fn group(third: &str, third_ago: i64) -> (Vec<StackResource>, Vec<StackEvent>) {
        let resources = vec![
            res("nodes", "root", "UPDATE_IN_PROGRESS", 1300, Some("g")),
            res("0", "g", "UPDATE_COMPLETE", 1200, None),
            res("1", "g", "UPDATE_COMPLETE", 1150, None),
            res("2", "g", third, third_ago, None),
        ];
        let events = vec![
            event("g", "0", "UPDATE_IN_PROGRESS", 1240, "a"),
            event("g", "0", "UPDATE_COMPLETE", 1200, "b"),
            event("g", "1", "UPDATE_IN_PROGRESS", 1200, "c"),
            event("g", "1", "UPDATE_COMPLETE", 1150, "d"),
            event("g", "2", third, third_ago, "e"),
        ];
        (resources, events)
    }

    #[test]
    fn a_member_three_times_slower_than_its_siblings_is_stalled() {
        let (resources, events) = group("UPDATE_IN_PROGRESS", 1150);
        let why = explain_root("UPDATE_IN_PROGRESS", 1300, &resources, events);
        assert_eq!(why.verdict, Verdict::Stalled, "{:?}", why.lines);
        assert_eq!(why.verdict.exit_code(), 5);
        assert!(
            why.lines[0].starts_with("stalled: nodes > 2  UPDATE_IN_PROGRESS for 19m"),
            "{:?}",
            why.lines
        );
        assert!(
            why.lines[0].contains("siblings took 40-50 s"),
            "{:?}",
            why.lines
        );
    }

    #[test]
    fn a_member_within_its_siblings_pace_is_busy() {
        let (resources, events) = group("UPDATE_IN_PROGRESS", 30);
        let why = explain_root("UPDATE_IN_PROGRESS", 1300, &resources, events);
        assert_eq!(why.verdict, Verdict::Busy, "{:?}", why.lines);
        assert_eq!(why.verdict.exit_code(), 0);
    }

    #[test]
    fn a_failure_outranks_the_rest_and_names_its_path() {
        let (mut resources, events) = group("UPDATE_FAILED", 60);
        resources[3].status_reason = Some("Error: quota exceeded\ntrace".into());
        let why = explain_root("UPDATE_FAILED", 60, &resources, events);
        assert_eq!(why.verdict, Verdict::Failed);
        assert_eq!(
            why.lines[0],
            "failed: nodes > 2  UPDATE_FAILED 1m ago — Error: quota exceeded"
        );
    }

    #[test]
    fn a_stack_that_failed_with_no_failed_resource_says_its_own_reason() {
        let root = stack("root");
        let status = Status::parse("UPDATE_FAILED");
        let resources = vec![res("a", "root", "UPDATE_COMPLETE", 60, None)];
        let mut st = state(&root, &status, 60);
        st.reason = Some("Timed out");
        let why = explain(&st, &resources, vec![], &[], Scope::default(), Utc::now());
        assert_eq!(why.verdict, Verdict::Failed);
        assert_eq!(
            why.lines,
            vec!["failed: the stack itself, UPDATE_FAILED: Timed out"]
        );
    }

    #[test]
    fn a_stack_in_progress_with_nothing_moving_is_stalled_only_after_a_while() {
        let resources = vec![res("a", "root", "UPDATE_COMPLETE", 60, None)];
        let early = explain_root("UPDATE_IN_PROGRESS", 60, &resources, vec![]);
        assert_eq!(early.verdict, Verdict::Busy);
        let late = explain_root(
            "UPDATE_IN_PROGRESS",
            IDLE_STALL_SECS + 60,
            &resources,
            vec![],
        );
        assert_eq!(late.verdict, Verdict::Stalled, "{:?}", late.lines);
    }

    #[test]
    fn a_member_paused_on_a_hook_is_held_not_stalled() {
        let (resources, mut events) = group("UPDATE_COMPLETE", 1100);
        let mut pause = event("g", "2", "UPDATE_COMPLETE", 1100, "p");
        pause.status_reason = Some("UPDATE paused until Hook pre-update is cleared".into());
        events.push(pause);
        let why = explain_root("UPDATE_IN_PROGRESS", 1300, &resources, events);
        assert_eq!(why.verdict, Verdict::Held, "{:?}", why.lines);
        assert_eq!(why.verdict.exit_code(), 3);
        assert!(why.lines[0].starts_with("held: 1 member of nodes held on pre-update hook"));
    }

    #[test]
    fn a_scope_keeps_only_the_group_it_names() {
        let root = stack("root");
        let status = Status::parse("UPDATE_IN_PROGRESS");
        let (mut resources, events) = group("UPDATE_IN_PROGRESS", 1150);
        resources.push(res("masters", "root", "UPDATE_FAILED", 10, None));
        let whole = explain_root("UPDATE_IN_PROGRESS", 1300, &resources, events.clone());
        assert_eq!(whole.verdict, Verdict::Failed);
        let under = vec!["nodes".to_string()];
        let nodes = explain(
            &state(&root, &status, 1300),
            &resources,
            events,
            &[],
            Scope { under: &under },
            Utc::now(),
        );
        assert_eq!(nodes.verdict, Verdict::Stalled, "{:?}", nodes.lines);
        assert!(nodes.lines.iter().all(|l| !l.contains("masters")));
        // A group with nothing moving under it is settled, whatever its siblings do in the
        // same stack: the stack's status (in progress for hours, or failed) is theirs.
        resources.push(res("masters_ok", "root", "UPDATE_COMPLETE", 10, None));
        let quiet = vec!["masters_ok".to_string()];
        for status in ["UPDATE_IN_PROGRESS", "UPDATE_FAILED"] {
            let st = Status::parse(status);
            let why = explain(
                &state(&root, &st, IDLE_STALL_SECS * 3),
                &resources,
                vec![],
                &[],
                Scope { under: &quiet },
                Utc::now(),
            );
            assert_eq!(why.verdict, Verdict::Settled, "{status}: {:?}", why.lines);
        }
    }

    #[test]
    fn a_settled_stack_says_nothing() {
        let (mut resources, events) = group("UPDATE_COMPLETE", 1100);
        resources[0].status = Status::parse("UPDATE_COMPLETE");
        let why = explain_root("UPDATE_COMPLETE", 1100, &resources, events);
        assert_eq!(why.verdict, Verdict::Settled);
        assert!(why.lines.is_empty());
    }
}
