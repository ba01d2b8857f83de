//! A [`Operator`] over the in-memory [`FakeCloud`], for the console's tests and the
//! `fake_console` example. It records every call, plans from the fake's node groups and
//! members, applies scales to the fake's data (new members appear as being created) and
//! plays rollouts with [`RolloutHandle::detached`]: a task that releases nodes batch by
//! batch and honours pause, resume, skip and abort. Nothing here touches a network or disk.

use crate::drivers::guard::{Guard, Reach};
use crate::drivers::magnum::MagnumUpgradePlan;
use crate::drivers::manual::{ControlPlan, Request as ControlRequest};
use crate::drivers::{member_order, Limits, NodeGroupTarget, ScalePlan, ScaleRequest, UpgradePlan};
use crate::fake::FakeCloud;
use crate::journal::{Actor, ApiCall, Entry, Outcome};
use crate::lifecycle::{HookPoint, HookRun};
use crate::model::{Cluster, DriverKind, Node, NodeGroup, NodeKey, Role, StackRef, Status};
use crate::rollout::engine::{initial_status, DetachedRollout};
use crate::rollout::observed::ObservedUpdate;
use crate::rollout::{
    Control, NodePhase, RolloutHandle, RolloutOptions, RolloutPlan, RolloutState, RolloutStatus,
};
use crate::service::operator::Operator;
use crate::service::{ErrorKind, ServiceError, ServiceResult};
use chrono::Utc;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The reason a failing node gives.
pub const FAIL_REASON: &str = "Timed out waiting for kubelet to become Ready";

#[derive(Default)]
struct State {
    guard: Guard,
    calls: Vec<String>,
    journal: Vec<Entry>,
    /// Rollouts this fake drives, by target label.
    active: HashMap<String, RolloutPlan>,
    /// Rollouts "another operator" runs, by target label: found and observed, not driven.
    foreign: HashMap<String, (RolloutPlan, RolloutStatus)>,
    /// Updates no rollout drives (Magnum's, a foreign Heat update), by target label.
    observed: HashMap<String, (ObservedUpdate, RolloutStatus)>,
    step: Duration,
    fail_nodes: HashSet<String>,
}

/// The fake operator. Cheap to clone; clones share their record.
#[derive(Clone)]
pub struct FakeOperator {
    cloud: FakeCloud,
    inner: Arc<Mutex<State>>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The driver target of a console row, as the real operator resolves it.
pub fn target_of(cluster: &Cluster, ng: &NodeGroup) -> NodeGroupTarget {
    NodeGroupTarget {
        cluster: cluster.name.clone(),
        nodegroup: ng.name.clone(),
        driver: cluster.driver,
        stack: ng.stack_id.as_ref().map(|id| StackRef {
            name: format!("{}-{}", cluster.name, ng.name),
            id: id.clone(),
        }),
        cluster_id: Some(cluster.id.clone()),
        limits: Limits {
            min: ng.min_node_count.unwrap_or(0),
            max: ng.max_node_count,
        },
    }
}

fn not_found(msg: impl Into<String>) -> ServiceError {
    ServiceError::new(ErrorKind::NotFound, msg)
}

impl FakeOperator {
    pub fn new(cloud: FakeCloud) -> FakeOperator {
        FakeOperator {
            cloud,
            inner: Arc::new(Mutex::new(State {
                step: Duration::from_millis(1500),
                ..State::default()
            })),
        }
    }

    pub fn with_guard(self, guard: Guard) -> Self {
        lock(&self.inner).guard = guard;
        self
    }

    /// Time a rollout batch takes.
    pub fn with_step(self, step: Duration) -> Self {
        lock(&self.inner).step = step;
        self
    }

    /// A member that fails whenever it is updated or acted on.
    pub fn failing(self, member: &str) -> Self {
        lock(&self.inner).fail_nodes.insert(member.to_string());
        self
    }

    /// A rollout another operator runs on the plan's node group.
    pub fn with_foreign_rollout(self, plan: RolloutPlan, status: RolloutStatus) -> Self {
        lock(&self.inner)
            .foreign
            .insert(plan.target.label(), (plan, status));
        self
    }

    /// An update no rollout drives on the node group (a Magnum upgrade, a foreign Heat
    /// update): found by `find_update`, observed with `status`.
    pub fn with_observed_update(self, update: ObservedUpdate, status: RolloutStatus) -> Self {
        lock(&self.inner)
            .observed
            .insert(update.target.label(), (update, status));
        self
    }

    /// Every call so far, one line each (`plan_scale prod-k8s/default-worker ...`).
    pub fn calls(&self) -> Vec<String> {
        lock(&self.inner).calls.clone()
    }

    pub fn journal(&self) -> Vec<Entry> {
        lock(&self.inner).journal.clone()
    }

    fn record(&self, call: String) {
        tracing::debug!(%call, "fake operator");
        lock(&self.inner).calls.push(call);
    }

    fn note(&self, action: &str, target: &str, outcome: Outcome, f: impl FnOnce(Entry) -> Entry) {
        let cloud = self.cloud.with_data(|d| d.info.cloud.clone());
        let e = f(Entry::new(&Actor::local(&cloud), action, target, outcome));
        lock(&self.inner).journal.push(e);
    }

    /// The guard rails, journalled as refused when they say no.
    fn check(
        &self,
        action: &str,
        target: &NodeGroupTarget,
        confirm: Option<&str>,
    ) -> ServiceResult<()> {
        let guard = lock(&self.inner).guard;
        guard
            .check(action, &target.cluster, Reach::Fleet, confirm)
            .inspect_err(|e| {
                self.note(
                    action,
                    &target.label(),
                    Outcome::Refused {
                        error: e.message.clone(),
                    },
                    |x| x,
                )
            })
    }

    fn members(&self, ng: &NodeGroup) -> Vec<Node> {
        let mut nodes = self
            .cloud
            .with_data(|d| d.nodes.get(&ng.id).cloned().unwrap_or_default());
        nodes.sort_by(|a, b| member_order(&a.key.member, &b.key.member));
        nodes
    }

    fn scale_plan(
        &self,
        cluster: &Cluster,
        ng: &NodeGroup,
        request: &ScaleRequest,
    ) -> ServiceResult<ScalePlan> {
        let target = target_of(cluster, ng);
        let members: Vec<String> = self.members(ng).into_iter().map(|n| n.key.member).collect();
        for r in &request.remove {
            if !members.contains(r) {
                return Err(not_found(format!(
                    "node {r} is not a member of {}",
                    target.label()
                )));
            }
        }
        let from = members.len() as u32;
        let to = request
            .count
            .unwrap_or_else(|| from.saturating_sub(request.remove.len() as u32));
        target.limits.check(to)?;
        let mut removed = request.remove.clone();
        let mut after: Vec<String> = members
            .iter()
            .filter(|m| !removed.contains(m))
            .cloned()
            .collect();
        // Heat removes the highest indices first.
        while after.len() > to as usize {
            if let Some(m) = after.pop() {
                removed.push(m);
            }
        }
        let mut next = members
            .iter()
            .filter_map(|m| m.parse::<u32>().ok())
            .max()
            .map(|m| m + 1)
            .unwrap_or(0);
        let mut added = Vec::new();
        while after.len() < to as usize {
            added.push(next.to_string());
            after.push(next.to_string());
            next += 1;
        }
        let calls = match (cluster.driver, &target.stack) {
            (DriverKind::HeatNative, Some(stack)) => vec![ApiCall::new(
                "PATCH",
                format!("/stacks/{}/{}", stack.name, stack.id),
                serde_json::json!({"parameters": {"count": to, "removal_policies": [{"resource_list": removed}]}, "existing": true}).to_string(),
            )],
            (DriverKind::HeatNative, None) => {
                return Err(not_found(format!("{} has no stack", target.label())))
            }
            _ => vec![ApiCall::new(
                "POST",
                format!("/v1/clusters/{}/actions/resize", cluster.id),
                serde_json::json!({"node_count": to, "nodegroup": ng.name, "nodes_to_remove": removed}).to_string(),
            )],
        };
        Ok(ScalePlan {
            target,
            from,
            to,
            members_after: after,
            added,
            removal_list: removed.clone(),
            removed,
            calls,
            stack_group: None,
        })
    }

    fn apply_scale_now(&self, plan: &ScalePlan, confirm: Option<&str>) -> ServiceResult<()> {
        self.check("scale", &plan.target, confirm)?;
        self.note("scale", &plan.target.label(), Outcome::Ok, |e| {
            e.plan(plan.lines()).calls(plan.calls.clone())
        });
        let now = Utc::now();
        self.cloud.with_data(|d| {
            let Some(ng) = d.nodegroups.iter_mut().find(|g| {
                g.name == plan.target.nodegroup
                    && Some(&g.cluster_id) == plan.target.cluster_id.as_ref()
            }) else {
                return Err(not_found(format!("{} is gone", plan.target.label())));
            };
            ng.node_count = plan.to;
            ng.status = Status::parse("UPDATE_IN_PROGRESS");
            ng.status_reason = Some(format!("scaling from {} to {}", plan.from, plan.to));
            let id = ng.id.clone();
            let (cluster_id, master) = (ng.cluster_id.clone(), ng.role == Role::Master);
            // The cluster's counts follow, as Magnum's resize and a Heat-native cluster's sum
            // of its groups do.
            if let Some(c) = d.clusters.iter_mut().find(|c| c.id == cluster_id) {
                let count = if master {
                    &mut c.master_count
                } else {
                    &mut c.node_count
                };
                *count = (*count + plan.to).saturating_sub(plan.from);
            }
            let nodes = d.nodes.entry(id.clone()).or_default();
            nodes.retain(|n| !plan.removed.contains(&n.key.member));
            for m in &plan.added {
                nodes.push(Node {
                    key: NodeKey {
                        nodegroup: id.clone(),
                        member: m.clone(),
                    },
                    index: m.parse().ok(),
                    name: format!("{}-{}-{m}", plan.target.cluster, plan.target.nodegroup),
                    zone: None,
                    ip: None,
                    status: Status::parse("CREATE_IN_PROGRESS"),
                    status_reason: Some("state changed".into()),
                    image: None,
                    since: Some(now),
                    hook_paused: false,
                    hook_inferred: false,
                    held_by_rollout: None,
                    server_id: None,
                    created: None,
                    stack_id: None,
                    replacing: false,
                });
            }
            Ok(())
        })
    }

    fn upgrade_plan(
        &self,
        cluster: &Cluster,
        ng: &NodeGroup,
        to: &str,
        options: RolloutOptions,
    ) -> ServiceResult<UpgradePlan> {
        let target = target_of(cluster, ng);
        if to.trim().is_empty() {
            return Err(ServiceError::new(
                ErrorKind::Config,
                "the upgrade target is empty",
            ));
        }
        match cluster.driver {
            DriverKind::HeatNative => {
                let stack = target
                    .stack
                    .clone()
                    .ok_or_else(|| not_found(format!("{} has no stack", target.label())))?;
                let members: Vec<String> = self
                    .members(ng)
                    .into_iter()
                    .map(|n| n.key.member)
                    .collect();
                Ok(UpgradePlan::Rollout(Box::new(RolloutPlan::new(
                    target,
                    stack,
                    to,
                    ng.image.clone(),
                    &members,
                    options,
                    BTreeMap::new(),
                ))))
            }
            _ => Ok(UpgradePlan::Magnum(MagnumUpgradePlan {
                calls: vec![ApiCall::new(
                    "POST",
                    format!("/v1/clusters/{}/actions/upgrade", cluster.id),
                    serde_json::json!({"cluster_template": to, "max_batch_size": options.batch_size, "nodegroup": ng.name}).to_string(),
                )],
                target,
                cluster_template: to.to_string(),
                max_batch_size: options.batch_size as u32,
                capi: None,
            })),
        }
    }

    fn start(
        &self,
        plan: RolloutPlan,
        status: RolloutStatus,
        initial: Vec<Control>,
    ) -> RolloutHandle {
        let (handle, detached) = RolloutHandle::detached(status);
        for c in initial {
            let _ = handle.send(c);
        }
        let (step, fail) = {
            let mut s = lock(&self.inner);
            s.active.insert(plan.target.label(), plan.clone());
            (s.step, s.fail_nodes.clone())
        };
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let label = plan.target.label();
            play(detached, plan, step, fail).await;
            lock(&inner).active.remove(&label);
        });
        handle
    }
}

fn ok<T: Send + 'static>(v: ServiceResult<T>) -> BoxFuture<'static, ServiceResult<T>> {
    futures::future::ready(v).boxed()
}

impl Operator for FakeOperator {
    fn guard(&self) -> Guard {
        lock(&self.inner).guard
    }

    fn plan_scale(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        request: ScaleRequest,
    ) -> BoxFuture<'static, ServiceResult<ScalePlan>> {
        self.record(format!(
            "plan_scale {}/{} count={:?} remove={:?}",
            cluster.name, nodegroup.name, request.count, request.remove
        ));
        ok(self.scale_plan(&cluster, &nodegroup, &request))
    }

    fn apply_scale(
        &self,
        plan: ScalePlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        self.record(format!(
            "apply_scale {} {}->{} confirm={confirm:?}",
            plan.target.label(),
            plan.from,
            plan.to
        ));
        ok(self.apply_scale_now(&plan, confirm.as_deref()))
    }

    fn plan_upgrade(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        to: String,
        options: RolloutOptions,
    ) -> BoxFuture<'static, ServiceResult<UpgradePlan>> {
        self.record(format!(
            "plan_upgrade {}/{} to={to} batch={} canary={}",
            cluster.name, nodegroup.name, options.batch_size, options.canary
        ));
        ok(self.upgrade_plan(&cluster, &nodegroup, &to, options))
    }

    fn start_upgrade(
        &self,
        plan: UpgradePlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<Option<RolloutHandle>>> {
        let result = match plan {
            UpgradePlan::Rollout(p) => {
                self.record(format!(
                    "start_upgrade {} {} confirm={confirm:?}",
                    p.target.label(),
                    p.id
                ));
                match self.check("rollout.start", &p.target, confirm.as_deref()) {
                    Err(e) => Err(e),
                    Ok(()) => {
                        self.note("rollout.start", &p.target.label(), Outcome::Started, |e| {
                            e.rollout(&p.id).plan(p.lines()).calls(p.calls())
                        });
                        let status = initial_status(&p);
                        Ok(Some(self.start(*p, status, Vec::new())))
                    }
                }
            }
            UpgradePlan::Magnum(p) => {
                self.record(format!(
                    "start_upgrade {} template={} confirm={confirm:?}",
                    p.target.label(),
                    p.cluster_template
                ));
                self.check("upgrade", &p.target, confirm.as_deref())
                    .map(|()| {
                        self.note("upgrade", &p.target.label(), Outcome::Ok, |e| {
                            e.plan(p.lines()).calls(p.calls.clone())
                        });
                        None
                    })
            }
        };
        ok(result)
    }

    fn find_rollout(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
    ) -> BoxFuture<'static, ServiceResult<Option<RolloutPlan>>> {
        let label = format!("{}/{}", cluster.name, nodegroup.name);
        self.record(format!("find_rollout {label}"));
        let s = lock(&self.inner);
        let found = s
            .active
            .get(&label)
            .cloned()
            .or_else(|| s.foreign.get(&label).map(|(p, _)| p.clone()));
        ok(Ok(found))
    }

    fn observe_rollout(
        &self,
        plan: RolloutPlan,
    ) -> BoxFuture<'static, ServiceResult<RolloutStatus>> {
        let label = plan.target.label();
        self.record(format!("observe_rollout {label} {}", plan.id));
        let s = lock(&self.inner);
        let status = s
            .foreign
            .get(&label)
            .map(|(_, st)| st.clone())
            .unwrap_or_else(|| initial_status(&plan));
        ok(Ok(status))
    }

    fn find_update(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
    ) -> BoxFuture<'static, ServiceResult<Option<ObservedUpdate>>> {
        let label = format!("{}/{}", cluster.name, nodegroup.name);
        self.record(format!("find_update {label}"));
        let found = lock(&self.inner)
            .observed
            .get(&label)
            .map(|(u, _)| u.clone());
        ok(Ok(found))
    }

    fn observe_update(
        &self,
        update: ObservedUpdate,
    ) -> BoxFuture<'static, ServiceResult<RolloutStatus>> {
        let label = update.target.label();
        self.record(format!("observe_update {label}"));
        let found = lock(&self.inner)
            .observed
            .get(&label)
            .map(|(_, s)| s.clone());
        ok(found.ok_or_else(|| not_found(format!("no update under way on {label}"))))
    }

    fn cancel_update(
        &self,
        update: ObservedUpdate,
        rollback: bool,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        let label = update.target.label();
        self.record(format!("cancel_update {label} rollback={rollback}"));
        if let Some(why) = update.cancel_refusal() {
            return ok(Err(ServiceError::new(ErrorKind::Unsupported, why)));
        }
        if let Err(e) = self.check("update.cancel", &update.target, confirm.as_deref()) {
            return ok(Err(e));
        }
        self.note("update.cancel", &label, Outcome::Ok, |e| e);
        ok(Ok(()))
    }

    fn reattach_rollout(
        &self,
        plan: RolloutPlan,
        initial: Vec<Control>,
    ) -> BoxFuture<'static, ServiceResult<RolloutHandle>> {
        let label = plan.target.label();
        self.record(format!("reattach_rollout {label} {} {initial:?}", plan.id));
        let status = lock(&self.inner)
            .foreign
            .remove(&label)
            .map(|(_, st)| st)
            .unwrap_or_else(|| initial_status(&plan));
        self.note("rollout.reattach", &label, Outcome::Ok, |e| {
            e.rollout(&plan.id)
        });
        let handle = self.start(plan, status, initial);
        ok(Ok(handle))
    }

    fn request_rollout(
        &self,
        plan: RolloutPlan,
        control: Control,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        let label = plan.target.label();
        self.record(format!("request_rollout {label} {control:?}"));
        let action = match &control {
            Control::Pause => "rollout.request.pause",
            Control::Resume { .. } => "rollout.request.resume",
            Control::Skip(_) => "rollout.request.skip",
            Control::Abort(_) => "rollout.request.abort",
        };
        self.note(action, &label, Outcome::Ok, |e| e.rollout(&plan.id));
        let mut s = lock(&self.inner);
        if let Some((_, st)) = s.foreign.get_mut(&label) {
            apply_control(st, &control, &mut None);
        }
        ok(Ok(()))
    }

    fn node_action(
        &self,
        cluster: Cluster,
        nodegroup: NodeGroup,
        command: String,
        nodes: Vec<Node>,
        batch_size: usize,
    ) -> BoxFuture<'static, ServiceResult<Vec<HookRun>>> {
        let label = format!("{}/{}", cluster.name, nodegroup.name);
        self.record(format!(
            "node_action {label} {command:?} nodes={:?} batch={batch_size}",
            nodes
                .iter()
                .map(|n| n.key.member.as_str())
                .collect::<Vec<_>>()
        ));
        let fail = lock(&self.inner).fail_nodes.clone();
        let mut runs = Vec::new();
        for batch in nodes.chunks(batch_size.max(1)) {
            let mut failed = false;
            for n in batch {
                let bad = command.trim() == "false" || fail.contains(&n.key.member);
                failed |= bad;
                let run = HookRun {
                    point: HookPoint::NodeAction,
                    command: command.clone(),
                    exit_code: Some(if bad { 1 } else { 0 }),
                    timed_out: false,
                    spawn_error: None,
                    output: format!("{}: {}", n.name, if bad { "error" } else { "ok" }),
                    duration_ms: 12,
                };
                self.note(
                    "node_action",
                    &format!("{label}/{}", n.key.member),
                    if bad {
                        Outcome::Failed {
                            error: "exit 1".into(),
                        }
                    } else {
                        Outcome::Ok
                    },
                    |e| e.output(run.output.clone()),
                );
                runs.push(run);
            }
            if failed {
                break;
            }
        }
        ok(Ok(runs))
    }

    fn plan_control(
        &self,
        stack: String,
        request: ControlRequest,
    ) -> BoxFuture<'static, ServiceResult<ControlPlan>> {
        self.record(format!("plan_control {stack} {request:?}"));
        ok(Err(ServiceError::new(
            ErrorKind::Unsupported,
            "the fake cloud has no Heat to plan against",
        )))
    }

    fn apply_control(
        &self,
        plan: ControlPlan,
        confirm: Option<String>,
    ) -> BoxFuture<'static, ServiceResult<()>> {
        let action = plan.control.action();
        self.record(format!("apply_control {action} {}", plan.target));
        let guard = lock(&self.inner).guard;
        if let Err(e) = guard.check(action, &plan.stack.name, Reach::Nodes, confirm.as_deref()) {
            return ok(Err(e));
        }
        self.note(action, &plan.target, Outcome::Ok, |e| {
            e.calls(plan.calls.clone())
        });
        ok(Ok(()))
    }

    fn read_journal(&self, offset: u64) -> BoxFuture<'static, ServiceResult<(Vec<Entry>, u64)>> {
        let s = lock(&self.inner);
        let from = (offset as usize).min(s.journal.len());
        ok(Ok((s.journal[from..].to_vec(), s.journal.len() as u64)))
    }

    fn journal_path(&self) -> PathBuf {
        PathBuf::from("fake-journal.jsonl")
    }
}

/// Applies one control to a status; `paused` carries the engine's pause reason.
fn apply_control(st: &mut RolloutStatus, c: &Control, paused: &mut Option<String>) {
    match c {
        Control::Pause => {
            let reason = "paused by the operator".to_string();
            st.state = RolloutState::Paused {
                reason: reason.clone(),
            };
            *paused = Some(reason);
        }
        Control::Resume { .. } => {
            *paused = None;
            // Failed nodes are tried again.
            for n in st.nodes.iter_mut().filter(|n| n.phase == NodePhase::Failed) {
                n.phase = NodePhase::Pending;
                n.reason = None;
            }
            st.state = RolloutState::Running;
        }
        Control::Skip(name) => {
            if let Some(n) = st.nodes.iter_mut().find(|n| &n.name == name) {
                if matches!(
                    n.phase,
                    NodePhase::Pending | NodePhase::Waiting | NodePhase::Paused
                ) {
                    n.phase = NodePhase::Skipped;
                }
            }
        }
        Control::Abort(mode) => {
            st.state = RolloutState::Aborted {
                reason: format!("aborted by the operator ({mode:?})"),
            };
        }
    }
    st.compute(Utc::now());
}

/// The fake engine: one batch per `step`, controls applied as they come.
async fn play(mut d: DetachedRollout, plan: RolloutPlan, step: Duration, fail: HashSet<String>) {
    let mut st = d.status.borrow().clone();
    let mut paused = match &st.state {
        RolloutState::Paused { reason } => Some(reason.clone()),
        _ => None,
    };
    let publish = |st: &mut RolloutStatus, d: &DetachedRollout| {
        st.compute(Utc::now());
        d.status.send(st.clone()).is_ok()
    };
    loop {
        while let Ok(c) = d.controls.try_recv() {
            apply_control(&mut st, &c, &mut paused);
        }
        if st.state.is_final() {
            publish(&mut st, &d);
            return;
        }
        if let Some(reason) = &paused {
            st.state = RolloutState::Paused {
                reason: reason.clone(),
            };
            if !publish(&mut st, &d) {
                return;
            }
            match d.controls.recv().await {
                Some(c) => apply_control(&mut st, &c, &mut paused),
                None => return,
            }
            continue;
        }
        let next = st
            .nodes
            .iter()
            .filter(|n| {
                matches!(
                    n.phase,
                    NodePhase::Pending | NodePhase::Waiting | NodePhase::Paused
                )
            })
            .map(|n| n.batch)
            .min();
        let Some(batch) = next else {
            st.state = if st.skipped > 0 || st.nodes.iter().any(|n| n.phase == NodePhase::Skipped) {
                RolloutState::CompletedWithSkips
            } else {
                RolloutState::Completed
            };
            st.current_batch = None;
            publish(&mut st, &d);
            return;
        };
        st.state = RolloutState::Running;
        st.stack_status = "UPDATE_IN_PROGRESS".into();
        st.current_batch = Some(batch);
        let now = Utc::now();
        for n in st.nodes.iter_mut().filter(|n| n.batch == batch) {
            if matches!(
                n.phase,
                NodePhase::Pending | NodePhase::Waiting | NodePhase::Paused
            ) {
                n.phase = NodePhase::Updating;
                n.released_at = Some(now);
            }
        }
        if !publish(&mut st, &d) {
            return;
        }
        let deadline = tokio::time::Instant::now() + step;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                c = d.controls.recv() => match c {
                    // A pause mid-batch lets the batch finish, as the real engine does.
                    Some(c) => {
                        apply_control(&mut st, &c, &mut paused);
                        if st.state.is_final() {
                            break;
                        }
                        if !publish(&mut st, &d) {
                            return;
                        }
                    }
                    None => return,
                },
            }
        }
        if st.state.is_final() {
            continue;
        }
        let now = Utc::now();
        let mut failed = None;
        for n in st
            .nodes
            .iter_mut()
            .filter(|n| n.phase == NodePhase::Updating)
        {
            n.finished_at = Some(now);
            if fail.contains(&n.name) {
                n.phase = NodePhase::Failed;
                n.reason = Some(FAIL_REASON.into());
                failed = Some(n.name.clone());
            } else {
                n.phase = NodePhase::Done;
            }
        }
        if let Some(name) = failed {
            if plan.options.pause_on_failure {
                paused = Some(format!("node {name} failed"));
            } else {
                st.state = RolloutState::Failed {
                    reason: format!("node {name} failed"),
                };
            }
        }
        if !publish(&mut st, &d) {
            return;
        }
        let gate = plan.options.gate_wait().min(step);
        if !gate.is_zero() {
            tokio::time::sleep(gate).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::CloudService;

    async fn demo() -> (FakeOperator, Cluster, NodeGroup) {
        let cloud = FakeCloud::demo(10);
        let op = FakeOperator::new(cloud.clone()).with_step(Duration::from_millis(10));
        let cluster = cloud
            .list_clusters()
            .await
            .unwrap()
            .into_iter()
            .find(|c| c.name == "edge-native")
            .unwrap();
        let ng = cloud.list_nodegroups(cluster.clone()).await.unwrap()[0].clone();
        (op, cluster, ng)
    }

    #[tokio::test]
    async fn scale_plans_remove_the_asked_nodes_and_apply_changes_the_fake() {
        let (op, cluster, ng) = demo().await;
        let plan = op
            .plan_scale(
                cluster.clone(),
                ng.clone(),
                ScaleRequest {
                    count: None,
                    remove: vec!["2".into()],
                },
            )
            .await
            .unwrap();
        assert_eq!((plan.from, plan.to), (6, 5));
        assert_eq!(plan.removed, vec!["2"]);
        assert!(plan.added.is_empty());
        assert!(plan.lines().iter().any(|l| l.contains("PATCH")));
        let e = op
            .plan_scale(
                cluster.clone(),
                ng.clone(),
                ScaleRequest {
                    count: Some(99),
                    remove: vec![],
                },
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("maximum of 12"), "{e}");
        op.apply_scale(plan, None).await.unwrap();
        let members: Vec<String> = op.members(&ng).into_iter().map(|n| n.key.member).collect();
        assert_eq!(members, vec!["0", "1", "3", "4", "5"]);
        let grow = op
            .plan_scale(
                cluster,
                ng,
                ScaleRequest {
                    count: Some(7),
                    remove: vec![],
                },
            )
            .await
            .unwrap();
        assert_eq!(grow.added, vec!["6", "7"]);
        assert_eq!(op.journal().len(), 1);
    }

    #[tokio::test]
    async fn production_needs_the_name_and_refusals_are_journalled() {
        let (op, cluster, ng) = demo().await;
        let op = op.with_guard(Guard {
            read_only: false,
            production: true,
        });
        let plan = op
            .plan_scale(
                cluster,
                ng,
                ScaleRequest {
                    count: Some(5),
                    remove: vec![],
                },
            )
            .await
            .unwrap();
        let e = op
            .apply_scale(plan.clone(), Some("nope".into()))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused);
        assert!(matches!(op.journal()[0].outcome, Outcome::Refused { .. }));
        op.apply_scale(plan, Some("edge-native".into()))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn rollouts_play_batch_by_batch_and_obey_controls() {
        let (op, cluster, ng) = demo().await;
        let op = op.failing("3");
        let plan = op
            .plan_upgrade(
                cluster,
                ng,
                "img-v2".into(),
                RolloutOptions {
                    batch_size: 2,
                    ..RolloutOptions::default()
                },
            )
            .await
            .unwrap();
        let mut h = op.start_upgrade(plan, None).await.unwrap().unwrap();
        // Node 3 fails in batch 2 (nodes 2, 3): the rollout pauses on it.
        let s = h
            .wait_for(|s| matches!(s.state, RolloutState::Paused { .. }))
            .await;
        assert_eq!(s.state.label(), "paused: node 3 failed");
        assert_eq!((s.done, s.failed), (3, 1));
        h.send(Control::Skip("5".into())).unwrap();
        h.send(Control::Resume {
            parameters: BTreeMap::new(),
        })
        .unwrap();
        h.wait_for(|s| s.state == RolloutState::Running).await;
        // Node 3 is tried again and fails again: paused again.
        let s = h
            .wait_for(|s| matches!(s.state, RolloutState::Paused { .. }))
            .await;
        assert_eq!(s.failed, 1);
        h.send(Control::Abort(crate::rollout::AbortMode::LeavePaused))
            .unwrap();
        let s = h.wait_for(|s| s.state.is_final()).await;
        assert!(
            matches!(s.state, RolloutState::Aborted { .. }),
            "{:?}",
            s.state
        );
        assert_eq!(
            s.nodes.iter().find(|n| n.name == "5").map(|n| n.phase),
            Some(NodePhase::Skipped)
        );
    }
}
