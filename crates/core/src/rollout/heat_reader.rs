//! What Heat says about a rollout, read from the ResourceGroup's nested stack: its events
//! (the only place a `pre-update` pause is visible — measured on Heat 27, a paused member's
//! resource keeps its old status and reason; the pause and the release are events) and, on
//! attach, each member's own stack (its `image` parameter says whether it is updated).
//!
//! Per member it keeps the state of the *current* group update (a new `UPDATE_IN_PROGRESS`
//! of the group stack, e.g. the PATCH that resumes after a failure, starts a fresh one:
//! Heat then pauses every member again) and, across updates, whether the member is done.

use super::plan::ROLLOUT_HOOK;
use crate::api::heat::{EventQuery, HeatClient, ResourceQuery, SortDir};
use crate::drivers::layout::stack_path;
use crate::fetch::fan_out;
use crate::journal::ApiCall;
use crate::model::{StackEvent, StackRef, Status};
use crate::ops::address_values::found_in;
use crate::ops::discover::{discover_groups, plan_addresses, AddressPlan};
use crate::ops::node_tree::is_nova_server_type;
use crate::report::{ServiceError, ServiceResult};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use std::collections::{BTreeMap, HashSet};

/// The reason Heat gives a member update it abandoned for a newer traversal.
pub const SUPERSEDED_MARK: &str = "Stack UPDATE cancelled";
const EVENT_PAGE: u32 = 200;
/// How far behind the newest event each read starts (Heat's times are whole seconds).
const LATE_WRITER_SECS: i64 = 2;
const ATTACH_CONCURRENCY: usize = 8;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberTrack {
    /// Paused on the hook in the current group update.
    pub paused: bool,
    /// When its hook was cleared in the current group update (Heat's time).
    pub released_at: Option<DateTime<Utc>>,
    /// Its update failed in the current group update, with Heat's reason.
    pub failed: Option<String>,
    /// Updated to the rollout's image (in this or an earlier group update).
    pub done: bool,
    /// Release and completion times of the update that made it done, when seen.
    pub done_released_at: Option<DateTime<Utc>>,
    pub done_at: Option<DateTime<Utc>>,
    /// Heat resource status as of the last event.
    pub status: Option<Status>,
    /// Heat checked the member and found it unhealthy (`CHECK_FAILED`: marked unhealthy by
    /// an operator, or a failed stack check), with Heat's reason; a later update replaces
    /// it. Not a failure of the rollout's update: the member's update stands.
    pub check_failed: Option<String>,
    /// The member's own stack.
    pub stack: Option<StackRef>,
}

/// The events of one held group's nested stack, read page by page.
struct Feed {
    group: StackRef,
    /// Its path in the stack for a group held besides the target (`--also`): its members
    /// are keyed `PATH/NAME` ([`crate::model::member_key`]); `None` for the target.
    path: Option<String>,
    seen: HashSet<String>,
    /// Where the next read starts: an event `LATE_WRITER_SECS` behind the newest seen.
    marker: Option<String>,
    /// Events `(time, id)` seen inside that window, to move the marker along.
    recent: Vec<(DateTime<Utc>, String)>,
}

impl Feed {
    fn new(group: StackRef, path: Option<String>, since_event: Option<String>) -> Feed {
        Feed {
            group,
            path,
            seen: since_event.iter().cloned().collect(),
            marker: since_event,
            recent: Vec::new(),
        }
    }

    /// The rollout's key of this group's member `name`.
    fn key(&self, name: &str) -> String {
        match &self.path {
            Some(p) => crate::model::member_key(p, name),
            None => name.to_string(),
        }
    }

    /// Whether the member key `key` is one of this group's.
    fn owns(&self, key: &str) -> bool {
        crate::model::split_member_key(key).0 == self.path.as_deref()
    }

    /// The next read starts at the newest event at least `LATE_WRITER_SECS` older than the
    /// newest seen (or stays where it was when there is none yet).
    fn move_marker(&mut self) {
        let Some(newest) = self.recent.iter().map(|(t, _)| *t).max() else {
            return;
        };
        let cutoff = newest - chrono::Duration::seconds(LATE_WRITER_SECS);
        self.recent.sort();
        if let Some(pos) = self.recent.iter().rposition(|(t, _)| *t <= cutoff) {
            self.marker = Some(self.recent[pos].1.clone());
            self.recent.drain(..pos);
        }
    }
}

pub struct HeatReader {
    heat: HeatClient,
    pub nodegroup_stack: StackRef,
    /// The target group's nested stack.
    pub group: StackRef,
    /// Events older than this (Heat's time) belong to earlier actions.
    since: Option<DateTime<Utc>>,
    /// The target's group first, then each group held besides it.
    feeds: Vec<Feed>,
    /// Every held group's members by key (the target's by name, the others' `PATH/NAME`).
    pub members: BTreeMap<String, MemberTrack>,
    /// Group updates started since `since` (each PATCH of the node-group stack is one).
    pub group_updates: u32,
    pub stack_status: Status,
    /// When Heat last started an update of the node-group stack (Heat's clock).
    pub stack_updated_at: Option<DateTime<Utc>>,
    pub stack_reason: String,
    /// The node-group stack's tags (a rollout's marker among them), as last read, and when.
    pub stack_tags: Vec<String>,
    pub stack_read_at: Option<std::time::Instant>,
    /// The node-group stack's parameters as Heat shows them (text), as last read.
    pub stack_parameters: BTreeMap<String, String>,
    /// Every event applied, oldest first (tests check batches against Heat's own times).
    pub log: Vec<StackEvent>,
    /// Heat's time of the newest event seen.
    pub last_event_time: Option<DateTime<Utc>>,
    /// Where each held group's members keep their addresses (`crate::ops::discover`), by the
    /// group's nested stack id, looked for once each (`None`: not found): a hook's
    /// `CALDERA_NODE_IP`, in any operator's template, for the target's members and for the
    /// members of a group held beside it (Magnum's masters keep theirs under `kube_master_ip`).
    address_plans: BTreeMap<String, Option<AddressPlan>>,
}

fn err(e: crate::api::ApiError) -> ServiceError {
    ServiceError::from(e)
}

impl HeatReader {
    pub fn new(
        heat: HeatClient,
        nodegroup_stack: StackRef,
        group: StackRef,
        since_event: Option<String>,
        since: Option<DateTime<Utc>>,
    ) -> HeatReader {
        HeatReader {
            heat,
            nodegroup_stack,
            feeds: vec![Feed::new(group.clone(), None, since_event)],
            group,
            since,
            members: BTreeMap::new(),
            group_updates: 0,
            stack_status: Status::parse("UNKNOWN"),
            stack_updated_at: None,
            stack_reason: String::new(),
            stack_tags: Vec::new(),
            stack_read_at: None,
            stack_parameters: BTreeMap::new(),
            log: Vec::new(),
            last_event_time: None,
            address_plans: BTreeMap::new(),
        }
    }

    /// Reads the members of the group at `path` too (held besides the target, `--also`),
    /// its nested stack `group`, from the same baseline event time.
    pub fn hold(&mut self, path: &str, group: StackRef, since_event: Option<String>) {
        self.feeds
            .push(Feed::new(group, Some(path.to_string()), since_event));
    }

    /// Reads every member's own stack: which are already at `image` (done before we look,
    /// e.g. by an earlier process of this rollout whose events are gone).
    /// `None` (a group of an operator's template, no image parameter): only the members'
    /// resources are read; events alone say which are done.
    pub async fn attach(&mut self, image: Option<&str>) -> ServiceResult<()> {
        for f in 1..self.feeds.len() {
            let resources = self
                .heat
                .list_resources(&self.feeds[f].group, &ResourceQuery::default())
                .await
                .map_err(err)?;
            for r in resources {
                let m = self
                    .members
                    .entry(self.feeds[f].key(&r.resource.name))
                    .or_default();
                m.stack = r.resource.nested;
                m.status = Some(r.resource.status);
            }
        }
        let resources = self
            .heat
            .list_resources(&self.group, &ResourceQuery::default())
            .await
            .map_err(err)?;
        let refs: Vec<(String, Option<StackRef>, Status)> = resources
            .into_iter()
            .map(|r| (r.resource.name, r.resource.nested, r.resource.status))
            .collect();
        for (name, stack, status) in &refs {
            let m = self.members.entry(name.clone()).or_default();
            m.stack = stack.clone();
            m.status = Some(status.clone());
        }
        let Some(image) = image else {
            return Ok(());
        };
        let heat = self.heat.clone();
        let mut lookups = fan_out(
            refs.into_iter()
                .filter_map(|(n, s, _)| s.map(|s| (n, s)))
                .collect::<Vec<_>>(),
            ATTACH_CONCURRENCY,
            move |(_, stack): (String, StackRef)| {
                let heat = heat.clone();
                async move { heat.get_stack(&stack, false).await }
            },
        );
        while let Some(((name, _), result)) = lookups.next().await {
            let detail = result.map_err(err)?;
            let at_image = detail.parameters.get("image").map(String::as_str) == Some(image);
            let settled = detail.summary.status.is_complete();
            if at_image && settled {
                if let Some(m) = self.members.get_mut(&name) {
                    m.done = true;
                }
            }
        }
        Ok(())
    }

    /// New events and the stack's status.
    pub async fn refresh(&mut self) -> ServiceResult<()> {
        let detail = self
            .heat
            .get_stack(&self.nodegroup_stack, false)
            .await
            .map_err(err)?;
        self.stack_status = detail.summary.status;
        self.stack_updated_at = detail.summary.updated_at;
        self.stack_reason = detail.summary.status_reason.unwrap_or_default();
        self.stack_parameters = detail.parameters;
        self.stack_tags = detail.tags;
        self.stack_read_at = Some(std::time::Instant::now());
        for f in 0..self.feeds.len() {
            self.read_feed(f).await?;
        }
        Ok(())
    }

    /// New events of feed `f`'s group stack.
    async fn read_feed(&mut self, f: usize) -> ServiceResult<()> {
        // Heat orders events by (whole-second time, random id): an event written a moment
        // after the newest one seen can sort before it and never come after a marker set on
        // the newest (measured: a member's pause missed, the rollout stuck). So each read
        // starts behind the newest second and re-reads that window; ids de-duplicate.
        let mut page_marker = self.feeds[f].marker.clone();
        loop {
            let query = EventQuery {
                limit: Some(EVENT_PAGE),
                marker: page_marker.clone(),
                sort_dir: Some(SortDir::Asc),
                ..Default::default()
            };
            let page = self
                .heat
                .list_events_page(&self.feeds[f].group, &query)
                .await
                .map_err(err)?;
            let n = page.len();
            if let Some(last) = page.last() {
                page_marker = Some(last.id.clone());
            }
            for e in page {
                // Heat answers from the start when a marker was purged: dedup by id.
                if self.feeds[f].seen.insert(e.id.clone()) {
                    self.feeds[f].recent.push((e.time, e.id.clone()));
                    self.apply(f, e);
                }
            }
            if n < EVENT_PAGE as usize {
                break;
            }
        }
        self.feeds[f].move_marker();
        Ok(())
    }

    fn apply(&mut self, f: usize, e: StackEvent) {
        // Only when the marker was purged does Heat send older events again.
        if self.since.is_some_and(|t| e.time < t) {
            return;
        }
        self.last_event_time = Some(e.time);
        let feed = &self.feeds[f];
        if e.resource_name == feed.group.name {
            if e.status.raw == "UPDATE_IN_PROGRESS" {
                // A new update of this group: its members (only) start again, save one
                // being updated (released, not yet done or failed): the new update takes
                // it over where the old one left it, and its end is that release's
                // (Heat cancels it and holds it on its hook again, or it finishes; was:
                // its completion read as no release's, the member "waiting" for good).
                self.group_updates += 1;
                for (_, m) in self.members.iter_mut().filter(|(k, _)| feed.owns(k)) {
                    let in_flight = m.released_at.is_some() && !m.done && m.failed.is_none();
                    m.paused = false;
                    if !in_flight {
                        m.released_at = None;
                    }
                    m.failed = None;
                }
            }
            self.log.push(e);
            return;
        }
        let reason = e.status_reason.clone().unwrap_or_default();
        let m = self.members.entry(feed.key(&e.resource_name)).or_default();
        if e.status.action == "CHECK" {
            // A check (or a mark unhealthy) says how the member is, not how its update went.
            m.status = Some(e.status.clone());
            m.check_failed = e.status.is_failed().then(|| reason.clone());
            self.log.push(e);
            return;
        }
        if e.status.action == "UPDATE" {
            m.check_failed = None;
        }
        let hook = crate::ops::hooks::hook_event(&reason, Some(ROLLOUT_HOOK));
        if hook == Some(true) {
            // A pause starts a new attempt at this member, whatever happened before.
            m.paused = true;
            m.released_at = None;
            m.failed = None;
        } else if hook == Some(false) {
            m.paused = false;
            m.released_at = Some(e.time);
        } else {
            // The wait ended with its update (cancelled): no longer paused, never released.
            if crate::ops::hooks::wait_event(&reason) == Some(false) {
                m.paused = false;
            }
            m.status = Some(e.status.clone());
            if m.released_at.is_some() && m.failed.is_none() {
                if e.status.is_failed() && reason.contains(SUPERSEDED_MARK) {
                    // Heat cancelled this attempt for a newer traversal of the group
                    // (measured on Heat 27 after a resumed update): it pauses the member
                    // again, and the next attempt decides.
                } else if e.status.is_failed() {
                    m.failed = Some(reason);
                    m.done = false;
                } else if e.status.raw == "UPDATE_COMPLETE" && (!m.done || m.done_at.is_none()) {
                    // Also when `attach` found it done already (a take-over): its times
                    // come from these events.
                    m.done = true;
                    m.done_released_at = m.released_at;
                    m.done_at = Some(e.time);
                }
            }
        }
        self.log.push(e);
    }

    /// Where a member's hook is cleared: its own group's nested stack (a held group's member
    /// `PATH/NAME` is on its group's stack, under `NAME`), and the member's name there.
    fn hook_owner<'a>(&'a self, member: &'a str) -> ServiceResult<(&'a StackRef, &'a str)> {
        let (path, name) = crate::model::split_member_key(member);
        let group = self
            .feeds
            .iter()
            .find(|f| f.path.as_deref() == path)
            .map(|f| &f.group)
            .ok_or_else(|| {
                ServiceError::new(
                    crate::report::ErrorKind::NotFound,
                    format!("{member}: no group of the rollout holds it"),
                )
            })?;
        Ok((group, name))
    }

    /// The call [`Self::release`] sends for a member, as the journal records it: the record
    /// and the request are built from the same `hook_owner`.
    pub fn release_call(&self, member: &str) -> ServiceResult<ApiCall> {
        let (group, name) = self.hook_owner(member)?;
        Ok(crate::drivers::layout::clear_hook_call(
            &stack_path(group),
            name,
            ROLLOUT_HOOK,
        ))
    }

    /// Clears a member's hook (by its key) on its group's nested stack.
    pub async fn release(&self, member: &str) -> ServiceResult<()> {
        let (group, name) = self.hook_owner(member)?;
        self.heat
            .unset_hook(group, name, ROLLOUT_HOOK)
            .await
            .map_err(err)
    }

    /// The name of a member's server, for hooks (what Kubernetes calls the node): the
    /// `name` attribute Heat gives of the server resource in the member's stack, found by its
    /// type. None when the member is a server itself with no stack, or it cannot be had.
    pub async fn member_server_name(&self, member: &str) -> Option<String> {
        let stack = self.members.get(member)?.stack.clone()?;
        let listed = self
            .heat
            .list_resources(&stack, &Default::default())
            .await
            .ok()?;
        let server = listed
            .into_iter()
            .find(|r| is_nova_server_type(&r.resource.resource_type))?;
        let shown = self
            .heat
            .get_resource(&stack, &server.resource.name)
            .await
            .ok()?;
        shown
            .attributes?
            .get("name")?
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    }

    /// A member's first address, for hooks (none when it cannot be had): read from the
    /// member output discovery names for this group (as `caldera ips` reads it: Magnum's
    /// `kube_minion_ip`, caldera's own `ip`, whatever the template calls it), else from its
    /// other address outputs.
    pub async fn member_ip(&mut self, member: &str) -> Option<String> {
        // A held group's member (`PATH/NAME`) is its own group's: its plan is looked for there.
        let group = match crate::model::split_member_key(member).0 {
            Some(path) => self
                .feeds
                .iter()
                .find(|f| f.path.as_deref() == Some(path))?
                .group
                .clone(),
            None => self.group.clone(),
        };
        let stack = self.members.get(member)?.stack.clone()?;
        let plan = self.address_plan(&group).await?;
        let keys: Vec<String> = plan
            .output_key
            .iter()
            .chain(plan.fallback_keys.iter())
            .cloned()
            .collect();
        for key in keys {
            let Ok(out) = self.heat.show_output(&stack, &key).await else {
                continue;
            };
            if let Some(first) = found_in(&out.value, None).addresses.into_iter().next() {
                return Some(first);
            }
        }
        None
    }

    /// The address plan of the group whose nested stack is `group`, looked for once: the
    /// group is found among the node-group stack's groups by its nested stack. A failed read
    /// of Heat is not remembered: the next hook asks again.
    async fn address_plan(&mut self, group: &StackRef) -> Option<&AddressPlan> {
        if !self.address_plans.contains_key(&group.id) {
            let groups = match discover_groups(&self.heat, &self.nodegroup_stack).await {
                Ok(groups) => groups,
                Err(e) => {
                    tracing::info!("member addresses of {}: {e}", group.name);
                    return None;
                }
            };
            let shape = groups
                .into_iter()
                .find(|g| g.stack.as_ref().is_some_and(|s| s.id == group.id));
            let plan = match shape {
                Some(shape) => Some(plan_addresses(&self.heat, &shape, None).await),
                None => None,
            };
            self.address_plans.insert(group.id.clone(), plan);
        }
        self.address_plans.get(&group.id)?.as_ref()
    }
}

/// The newest event of a stack (its id and Heat's time), the baseline of a new action.
pub async fn newest_event(
    heat: &HeatClient,
    stack: &StackRef,
) -> ServiceResult<Option<(String, DateTime<Utc>)>> {
    let page = heat
        .list_events_page(
            stack,
            &EventQuery {
                limit: Some(1),
                sort_dir: Some(SortDir::Desc),
                ..Default::default()
            },
        )
        .await
        .map_err(err)?;
    Ok(page.into_iter().next().map(|e| (e.id, e.time)))
}
