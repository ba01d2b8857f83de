//! Operator-action scenarios shared by the simulator tests (`tests/offline/actions.rs`) and the
//! real-Heat tests (`tests/real_heat/actions.rs`): the same driver and engine calls against
//! either cloud, checked against Heat's own events and member stacks.

use caldera::api::heat::{EventQuery, HeatClient, ResourceQuery, SortDir, StackDetail};
use caldera::drivers::apply::{self, ActionContext};
use caldera::drivers::guard::Guard;
use caldera::drivers::heat_native::HeatNativeDriver;
use caldera::drivers::{Driver, Limits, NodeGroupSpec, NodeGroupTarget, ScaleRequest};
use caldera::journal::{Actor, Journal, Outcome};
use caldera::lifecycle::HookSet;
use caldera::model::{StackEvent, StackRef};
use caldera::parameter_value::ParameterValue;
use caldera::progress;
use caldera::rollout::engine::{self, find_active, EngineOptions};
use caldera::rollout::heat_reader::newest_event;
use caldera::rollout::{
    AbortMode, Control, NodePhase, RolloutOptions, RolloutPlan, RolloutState, RolloutStatus,
};
use caldera::templates::Machines;
use chrono::{DateTime, Utc};

use futures::TryStreamExt;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The context of a test operator's actions: `user` on cloud `test`, journaling to
/// `journal`, behind the default guard rails.
pub fn action_context(journal: Journal, user: &str) -> ActionContext {
    ActionContext {
        actor: Actor {
            cloud: "test".into(),
            user: user.into(),
        },
        journal,
        guard: Guard::default(),
    }
}

/// The console's operator on `conn` for a test: `ctx`'s actions, the default actions
/// configuration, settling polled every `poll`.
pub fn live_operator(
    conn: &caldera::api::cloud::CloudConnection,
    ctx: ActionContext,
    poll: Duration,
) -> caldera::service::live_operator::LiveOperator {
    caldera::service::live_operator::LiveOperator::new(
        conn,
        ctx,
        caldera::lifecycle::ActionsConfig::default(),
        poll,
    )
}

pub struct Env {
    pub heat: HeatClient,
    pub driver: HeatNativeDriver,
    pub ctx: ActionContext,
    pub poll: Duration,
    /// Longest any settle may take.
    pub timeout: Duration,
    /// Seconds each test machine takes per action (real Heat).
    pub action_wait_secs: u32,
    _dir: tempfile::TempDir,
}

impl Env {
    pub fn new(heat: HeatClient, poll: Duration, timeout: Duration, wait: u32) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let journal = Journal::open(dir.path().join("journal.jsonl"));
        Env {
            driver: HeatNativeDriver::new(heat.clone(), Machines::Test),
            heat,
            ctx: action_context(journal, "tester"),
            poll,
            timeout,
            action_wait_secs: wait,
            _dir: dir,
        }
    }

    pub fn engine_options(&self, hooks: HookSet) -> EngineOptions {
        EngineOptions {
            poll: self.poll,
            hooks,
            ..Default::default()
        }
    }

    /// Starts the engine on `plan` with `hooks`, in this environment's context (journal,
    /// guard) and poll.
    pub async fn start_rollout(&self, plan: &RolloutPlan, hooks: HookSet) -> engine::RolloutHandle {
        engine::start(
            self.heat.clone(),
            self.ctx.clone(),
            plan.clone(),
            self.engine_options(hooks),
            None,
        )
        .await
        .expect("rollout starts")
    }

    pub async fn create(&self, cluster: &str, count: u32) -> NodeGroupTarget {
        let target = self
            .driver
            .create_nodegroup(&NodeGroupSpec {
                cluster: cluster.into(),
                nodegroup: "workers".into(),
                count,
                image: "img-v1".into(),
                limits: Limits {
                    min: 1,
                    max: Some(20),
                },
                action_wait_secs: self.action_wait_secs,
            })
            .await
            .expect("create node group");
        let status = self.settle(target.stack.as_ref().expect("stack")).await;
        assert_eq!(status, "CREATE_COMPLETE");
        // Found again by its tags, as a restarted console would.
        let found = self
            .driver
            .find_nodegroup(cluster, "workers")
            .await
            .expect("find by tags");
        assert_eq!(found.stack, target.stack);
        assert_eq!(found.limits, target.limits);
        found
    }

    pub async fn settle(&self, stack: &StackRef) -> String {
        let t0 = Instant::now();
        loop {
            let d = self.heat.get_stack(stack, false).await.expect("stack show");
            if !d.summary.status.is_in_progress() {
                return d.summary.status.raw;
            }
            assert!(
                t0.elapsed() < self.timeout,
                "{} still {}",
                stack.name,
                d.summary.status
            );
            tokio::time::sleep(self.poll).await;
        }
    }

    pub async fn member_names(&self, target: &NodeGroupTarget) -> Vec<String> {
        self.driver
            .list_nodes(target)
            .await
            .expect("nodes")
            .into_iter()
            .map(|n| n.name)
            .collect()
    }

    /// The name Heat gives member `member`'s server (the `name` attribute of the
    /// `OS::Nova::Server` in its stack), asked of Heat directly; the member's name when its
    /// stack holds no server with a name.
    pub async fn server_name(&self, target: &NodeGroupTarget, member: &str) -> String {
        let group = self.group_stack(target).await;
        let m = self
            .heat
            .get_resource(&group, member)
            .await
            .expect("member");
        let stack = m.resource.nested.expect("member stack");
        let listed = self
            .heat
            .list_resources(&stack, &ResourceQuery::default())
            .await
            .expect("member's resources");
        for r in listed {
            if r.resource.resource_type != "OS::Nova::Server" {
                continue;
            }
            let shown = self
                .heat
                .get_resource(&stack, &r.resource.name)
                .await
                .expect("server");
            let name = shown
                .attributes
                .and_then(|a| a.get("name").and_then(|n| n.as_str().map(str::to_string)));
            if let Some(n) = name.filter(|n| !n.is_empty()) {
                return n;
            }
        }
        member.to_string()
    }

    /// The group stack of `target` (the stack its members are resources of).
    async fn group_stack(&self, target: &NodeGroupTarget) -> StackRef {
        self.driver
            .group_stack(target.stack.as_ref().expect("stack"))
            .await
            .expect("group")
    }

    /// Each member's name and its own stack, as Heat shows them.
    async fn member_stacks(&self, target: &NodeGroupTarget) -> Vec<(String, StackDetail)> {
        let group = self.group_stack(target).await;
        let members = self
            .heat
            .list_resources(&group, &ResourceQuery::default())
            .await
            .expect("members");
        let mut out = Vec::new();
        for m in members {
            let stack = m.resource.nested.clone().expect("member stack");
            let d = self.heat.get_stack(&stack, false).await.expect("member");
            out.push((m.resource.name.clone(), d));
        }
        out
    }

    /// Each member's image, from its own stack.
    pub async fn member_images(&self, target: &NodeGroupTarget) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (name, d) in self.member_stacks(target).await {
            out.insert(name, d.parameters.get("image").cloned().unwrap_or_default());
        }
        out
    }

    /// Members whose own stack is at `image` and complete: updated, as Heat sees it.
    pub async fn members_done(&self, target: &NodeGroupTarget, image: &str) -> usize {
        let mut n = 0;
        for (_, d) in self.member_stacks(target).await {
            if d.parameters.get("image").map(String::as_str) == Some(image)
                && d.summary.status.is_complete()
            {
                n += 1;
            }
        }
        n
    }

    /// The id of the group stack's newest event: later events belong to what follows.
    pub async fn event_mark(&self, target: &NodeGroupTarget) -> Option<String> {
        let group = self.group_stack(target).await;
        newest_event(&self.heat, &group)
            .await
            .expect("newest event")
            .map(|(id, _)| id)
    }

    /// The group stack's events after `mark`, oldest first (Heat's own record).
    pub async fn group_events(
        &self,
        target: &NodeGroupTarget,
        mark: Option<String>,
    ) -> Vec<StackEvent> {
        let group = self.group_stack(target).await;
        let events: Vec<StackEvent> = self
            .heat
            .list_events(
                group,
                EventQuery {
                    sort_dir: Some(SortDir::Asc),
                    limit: Some(200),
                    ..Default::default()
                },
            )
            .try_collect()
            .await
            .expect("events");
        let events = match mark {
            Some(mark) => events
                .into_iter()
                .skip_while(|e| e.id != mark)
                .skip(1)
                .collect(),
            None => events,
        };
        until_next_update(events)
    }

    pub async fn delete(&self, target: &NodeGroupTarget) {
        let _ = self.driver.delete_nodegroup(target).await;
    }

    pub fn plan(
        &self,
        target: &NodeGroupTarget,
        members: &[String],
        image: &str,
        options: RolloutOptions,
        extra: &[(&str, &str)],
    ) -> RolloutPlan {
        RolloutPlan::new(
            target.clone(),
            target.stack.clone().expect("stack"),
            image,
            None,
            members,
            options,
            extra
                .iter()
                .map(|(k, v)| (k.to_string(), ParameterValue::parse(v)))
                .collect(),
        )
    }
}

/// The events up to the start of an update that follows a completed one: a rollout ends by
/// taking its hooks out of the stack's environment with one more update, which changes no
/// member but walks each member's stack (Heat always updates a nested stack with its
/// parent), so the members' update events of that update are not the rollout's.
pub fn until_next_update(events: Vec<StackEvent>) -> Vec<StackEvent> {
    let mut completed = false;
    let mut out = Vec::new();
    for e in events {
        if e.is_stack_event() {
            if completed && e.status.raw == "UPDATE_IN_PROGRESS" {
                break;
            }
            completed = e.status.raw == "UPDATE_COMPLETE";
        }
        out.push(e);
    }
    out
}

fn is_hook_event(e: &StackEvent) -> bool {
    e.status_reason
        .as_deref()
        .is_some_and(|r| r.contains("Hook pre-update"))
}

/// Per member: (first UPDATE_IN_PROGRESS, last UPDATE_COMPLETE) from Heat's events, and how
/// many times Heat started updating it.
pub fn update_windows(
    events: &[StackEvent],
) -> HashMap<String, (DateTime<Utc>, DateTime<Utc>, usize)> {
    let mut out: HashMap<String, (DateTime<Utc>, DateTime<Utc>, usize)> = HashMap::new();
    for e in events
        .iter()
        .filter(|e| !is_hook_event(e) && !e.is_stack_event())
    {
        if e.status.raw == "UPDATE_IN_PROGRESS" {
            let w = out
                .entry(e.resource_name.clone())
                .or_insert((e.time, e.time, 0));
            w.2 += 1;
        } else if e.status.raw == "UPDATE_COMPLETE" {
            if let Some(w) = out.get_mut(&e.resource_name) {
                w.1 = e.time;
            }
        }
    }
    out
}

/// Checks from Heat's events that batch k+1 started only after batch k ended.
pub fn assert_batches_sequential(plan: &RolloutPlan, events: &[StackEvent]) {
    let windows = update_windows(events);
    let mut prev_end: Option<DateTime<Utc>> = None;
    for (k, batch) in plan.batches.iter().enumerate() {
        let ws: Vec<_> = batch
            .iter()
            .map(|m| {
                *windows
                    .get(m)
                    .unwrap_or_else(|| panic!("member {m} of batch {} never updated", k + 1))
            })
            .collect();
        let start = ws.iter().map(|w| w.0).min().expect("non-empty batch");
        let end = ws.iter().map(|w| w.1).max().expect("non-empty batch");
        if let Some(p) = prev_end {
            assert!(
                p <= start,
                "batch {} started at {start} before batch {} ended at {p}",
                k + 1,
                k
            );
        }
        prev_end = Some(end);
    }
}

async fn run_to_end(env: &Env, plan: RolloutPlan, hooks: HookSet) -> RolloutStatus {
    let h = env.start_rollout(&plan, hooks).await;
    tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("rollout ends in time")
}

// ---------------------------------------------------------------- scenarios

/// 10 -> 14 -> 12 removing members 3 and 7.
pub async fn scale_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 10).await;
    let stack = target.stack.clone().expect("stack");
    let up = env
        .driver
        .plan_scale(
            &target,
            &ScaleRequest {
                count: Some(14),
                remove: vec![],
            },
        )
        .await
        .expect("plan up");
    assert_eq!(up.added, ["10", "11", "12", "13"]);
    apply::scale(&env.ctx, &env.driver, &up, None)
        .await
        .expect("scale up");
    assert_eq!(env.settle(&stack).await, "UPDATE_COMPLETE");
    assert_eq!(env.member_names(&target).await, up.members_after);

    let down = env
        .driver
        .plan_scale(
            &target,
            &ScaleRequest {
                count: Some(12),
                remove: vec!["3".into(), "7".into()],
            },
        )
        .await
        .expect("plan down");
    assert_eq!(down.removed, ["3", "7"]);
    assert!(down.added.is_empty());
    apply::scale(&env.ctx, &env.driver, &down, None)
        .await
        .expect("scale down");
    assert_eq!(env.settle(&stack).await, "UPDATE_COMPLETE");
    let names = env.member_names(&target).await;
    assert_eq!(
        names, down.members_after,
        "Heat kept exactly the planned members"
    );
    assert!(!names.contains(&"3".to_string()) && !names.contains(&"7".to_string()));
    assert_eq!(names.len(), 12);

    // Beyond the limits: refused before any call.
    let e = env
        .driver
        .plan_scale(
            &target,
            &ScaleRequest {
                count: Some(21),
                remove: vec![],
            },
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("maximum of 20"), "{e}");

    // Both scales are in the journal with their calls and outcomes.
    let journal = env.ctx.journal.read_all().expect("journal");
    let scales: Vec<_> = journal.iter().filter(|e| e.action == "scale").collect();
    assert_eq!(scales.len(), 4, "{scales:?}");
    assert_eq!(scales[1].outcome, Outcome::Ok);
    assert!(scales[2].calls[0].body.contains("resource_list"));
    env.delete(&target).await;
}

/// 6 members: batch 1, then batch 2; batches never overlap in Heat's own events.
pub async fn rollout_batches_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 6).await;
    let members = env.member_names(&target).await;
    for (image, batch) in [("img-v2", 1usize), ("img-v3", 2)] {
        let since = env.event_mark(&target).await;
        let plan = env.plan(
            &target,
            &members,
            image,
            RolloutOptions {
                batch_size: batch,
                ..Default::default()
            },
            &[],
        );
        let status = run_to_end(env, plan.clone(), HookSet::default()).await;
        assert_eq!(
            status.state,
            RolloutState::Completed,
            "{:#?}",
            status.lines()
        );
        assert_eq!(status.done, 6);
        assert!(status.p50_ms.is_some() && status.p95_ms >= status.p50_ms);
        let images = env.member_images(&target).await;
        assert!(images.values().all(|i| i == image), "{images:?}");
        let events = env.group_events(&target, since).await;
        assert_batches_sequential(&plan, &events);
        let windows = update_windows(&events);
        for m in &members {
            assert_eq!(windows.get(m).map(|w| w.2), Some(1), "member {m} updates");
        }
        eprintln!("batch {batch}: {}", status.lines()[2]);
    }
    env.delete(&target).await;
}

/// Member 3 fails: the rollout pauses there and leaves 4 and 5 alone; clearing the failure
/// and resuming finishes the rollout.
pub async fn failure_then_resume_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 6).await;
    let members = env.member_names(&target).await;
    let plan = env.plan(
        &target,
        &members,
        "img-v2",
        RolloutOptions::default(),
        &[("node_fail_index", "3")],
    );
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("pauses in time");
    let RolloutState::Paused { reason } = &paused.state else {
        panic!("not paused: {:?}", paused.state);
    };
    assert!(reason.contains("node 3 failed"), "{reason}");
    let phase = |s: &RolloutStatus, m: &str| {
        s.nodes
            .iter()
            .find(|n| n.name == m)
            .map(|n| n.phase)
            .expect("node")
    };
    assert_eq!(phase(&paused, "3"), NodePhase::Failed);
    // Give a buggy engine time to do harm, then check nothing moved past the failure.
    tokio::time::sleep(env.poll * 5).await;
    let images = env.member_images(&target).await;
    for m in ["0", "1", "2"] {
        assert_eq!(images[m], "img-v2", "member {m}");
    }
    for m in ["4", "5"] {
        assert_eq!(images[m], "img-v1", "member {m} was touched");
    }
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    assert!(
        !journal.iter().any(|e| e.action == "rollout.release"
            && ["4", "5"].contains(&plan.member_of_label(&e.target).as_str())),
        "released past the failure"
    );

    let mut fix = BTreeMap::new();
    fix.insert(
        "node_fail_index".to_string(),
        ParameterValue::json((-1).into()),
    );
    h.send(Control::Resume { parameters: fix }).expect("resume");
    let end = match tokio::time::timeout(env.timeout, h.wait_for(|s| s.state.is_final())).await {
        Ok(end) => end,
        Err(_) => {
            let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
            panic!(
                "not finished in time: {:#?}\njournal: {:#?}",
                h.status().lines(),
                journal
                    .iter()
                    .map(|e| format!("{} {} {:?}", e.action, e.target, e.outcome))
                    .collect::<Vec<_>>()
            );
        }
    };
    assert_completed_and_unhooked(env, &target, &end).await;
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v2"), "{images:?}");
    env.delete(&target).await;
}

/// The engine dies after two members; a new one reattaches from Heat and the journal and
/// finishes, every member updated exactly once.
pub async fn kill_and_reattach_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 6).await;
    let members = env.member_names(&target).await;
    let since = env.event_mark(&target).await;
    let plan = env.plan(&target, &members, "img-v2", RolloutOptions::default(), &[]);
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 2))
        .await
        .expect("two done in time");
    h.kill().await;

    // What status tells with nobody driving: no driver here since the last heartbeat, and
    // no rate or ETA (nothing releases).
    let seen = engine::observe_status(&env.heat, &env.ctx.journal, &plan)
        .await
        .expect("status");
    assert!(
        matches!(
            seen.driver,
            Some(caldera::rollout::progress::DriverInfo::Nobody { since: Some(_), .. })
        ),
        "{:?}",
        seen.driver
    );
    assert!(seen.throughput_per_min.is_none() && seen.eta_secs.is_none());
    assert!(
        seen.lines()[0].contains("no driver on this machine since"),
        "{}",
        seen.lines()[0]
    );

    // A new process: only the journal and Heat.
    let found = find_active(&env.ctx.journal, &target.label())
        .expect("journal")
        .expect("an active rollout");
    assert_eq!(found.id, plan.id);
    let h2 = engine::reattach(
        env.heat.clone(),
        env.ctx.clone(),
        found,
        env.engine_options(HookSet::default()),
        Vec::new(),
        engine::TakeOver::ThisMachine,
    )
    .await
    .expect("reattach");
    let end = tokio::time::timeout(env.timeout, h2.wait())
        .await
        .expect("finishes in time");
    assert_completed_and_unhooked(env, &target, &end).await;
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v2"), "{images:?}");
    let events = env.group_events(&target, since).await;
    let windows = update_windows(&events);
    for m in &members {
        assert_eq!(
            windows.get(m).map(|w| w.2),
            Some(1),
            "member {m} updated once"
        );
    }
    assert_batches_sequential(&plan, &events);
    // The journal shows one successful release per member across both processes.
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    for m in &members {
        let n = journal
            .iter()
            .filter(|e| {
                e.action == "rollout.release"
                    && e.outcome == Outcome::Ok
                    && plan.member_of_label(&e.target) == *m
            })
            .count();
        assert_eq!(n, 1, "member {m} released {n} times");
    }
    assert!(find_active(&env.ctx.journal, &target.label())
        .expect("journal")
        .is_none());
    env.delete(&target).await;
}

/// A post-node hook fails on member 2: the rollout pauses at that node, nothing after it
/// is released, and the hook's output is in the journal.
pub async fn failing_hook_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 5).await;
    let members = env.member_names(&target).await;
    let plan = env.plan(&target, &members, "img-v2", RolloutOptions::default(), &[]);
    let hooks = HookSet {
        post_node: Some(
            "echo checking $CALDERA_NODE_NAME member $CALDERA_NODE_MEMBER at $CALDERA_NODE_IP; \
             test \"$CALDERA_NODE_INDEX\" != 2"
                .into(),
        ),
        timeout_secs: Some(20),
        ..Default::default()
    };
    let mut h = env.start_rollout(&plan, hooks).await;
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("pauses in time");
    let RolloutState::Paused { reason } = &paused.state else {
        panic!("not paused: {:?}", paused.state);
    };
    assert!(reason.contains("post_node hook exited with 1"), "{reason}");
    assert!(reason.contains("/2"), "{reason}");
    tokio::time::sleep(env.poll * 5).await;
    let images = env.member_images(&target).await;
    assert_eq!(images["3"], "img-v1");
    assert_eq!(images["4"], "img-v1");
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    let hook_lines: Vec<_> = journal
        .iter()
        .filter(|e| e.action == "hook.post_node")
        .collect();
    assert_eq!(hook_lines.len(), 3, "{hook_lines:?}");
    let failed = hook_lines
        .iter()
        .find(|e| matches!(e.outcome, Outcome::Failed { .. }))
        .expect("a failed hook line");
    assert_eq!(
        plan.member_of_label(&failed.target),
        "2",
        "{}",
        failed.target
    );
    // The hook saw the node's name (its server's, as Heat names it: what Kubernetes calls
    // the node), its member name and its address.
    let output = failed.output.as_deref().unwrap_or("");
    let server = env.server_name(&target, "2").await;
    assert!(
        output.contains(&format!("checking {server} member 2 at 10.")),
        "{failed:?}"
    );
    // Abort leaving the rest on their hooks; cancel so the stack can be deleted.
    h.send(Control::Abort(AbortMode::CancelWithoutRollback))
        .expect("abort");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("ends");
    assert!(
        matches!(end.state, RolloutState::Aborted { .. }),
        "{:?}",
        end.state
    );
    env.settle(target.stack.as_ref().expect("stack")).await;
    env.delete(&target).await;
}

/// Pause from "another process" (a journal request), skip a node, resume: the rollout ends
/// with the skipped node untouched on its hook, every other node updated.
pub async fn pause_skip_resume_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 5).await;
    let members = env.member_names(&target).await;
    let plan = env.plan(&target, &members, "img-v2", RolloutOptions::default(), &[]);
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first node done");
    engine::request(&env.ctx, &plan, &Control::Pause).expect("pause request");
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("pauses");
    // The operator's pause: the model says paused and why, and gives no ETA.
    assert!(
        matches!(&paused.progress.state, progress::State::Paused { why, .. } if why.contains("operator")),
        "{:?}",
        paused.progress.state
    );
    assert_eq!(paused.progress.eta_secs, None);
    // Whatever was released before the pause finishes; nothing more is released.
    tokio::time::sleep(env.poll * 10 + Duration::from_secs(1)).await;
    let released = |entries: &[caldera::journal::Entry]| {
        entries
            .iter()
            .filter(|e| e.action == "rollout.release" && e.outcome == Outcome::Ok)
            .count()
    };
    let before = released(&env.ctx.journal.rollout_entries(&plan.id).expect("journal"));
    assert!(
        before <= paused.done + 1,
        "released {before} with {} done",
        paused.done
    );
    tokio::time::sleep(env.poll * 10).await;
    let after = released(&env.ctx.journal.rollout_entries(&plan.id).expect("journal"));
    assert_eq!(before, after, "released while paused");

    // Values with the resume of a rollout whose update has not failed: nothing would send
    // them, so the resume is refused (journaled) and the rollout stays paused.
    h.send(Control::Resume {
        parameters: [("image".to_string(), ParameterValue::text("img-v3"))].into(),
    })
    .expect("resume with values");
    let refused = tokio::time::timeout(env.timeout, async {
        loop {
            let entries = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
            if let Some(e) = entries.iter().find(|e| {
                e.action == "rollout.resume" && matches!(e.outcome, Outcome::Refused { .. })
            }) {
                break e.clone();
            }
            tokio::time::sleep(env.poll).await;
        }
    })
    .await
    .expect("the resume with values is refused");
    assert!(
        matches!(&refused.outcome, Outcome::Refused { error } if error.contains("--set image")),
        "{refused:?}"
    );
    assert!(
        matches!(h.status().state, RolloutState::Paused { .. }),
        "still paused"
    );

    h.send(Control::Skip("4".into())).expect("skip");
    h.send(Control::Resume {
        parameters: BTreeMap::new(),
    })
    .expect("resume");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("ends");
    assert_eq!(
        end.state,
        RolloutState::CompletedWithSkips,
        "{:#?}",
        end.lines()
    );
    assert_eq!((end.done, end.skipped), (4, 1));
    // The skipped node's hook is what keeps it old: it stays, and the rollout says so.
    let said = end.hooks_left.clone().unwrap_or_default();
    assert!(
        !said.is_empty() && !said.starts_with("taken out") && !said.starts_with("none left"),
        "{said}"
    );
    assert_skipped_last_is_not_completed(env, &plan, &end).await;
    // Found again from Heat (the journal calls it ended, Heat still holds the skipped
    // member): the plan's own batches, not one per member.
    let found = caldera::rollout::control::find_rollout(&env.heat, &env.ctx, &target)
        .await
        .expect("find")
        .expect("Heat still holds the skipped member on our hook");
    assert_eq!(found.id, plan.id);
    assert_eq!(found.batches, plan.batches);
    let images = env.member_images(&target).await;
    assert_eq!(images["4"], "img-v1");
    assert!(["0", "1", "2", "3"].iter().all(|m| images[*m] == "img-v2"));
    // The skipped node still waits on its hook; cancel the update to leave the stack settled.
    env.heat
        .action(
            target.stack.as_ref().expect("stack"),
            caldera::api::heat::StackAction::CancelWithoutRollback,
        )
        .await
        .expect("cancel");
    env.settle(target.stack.as_ref().expect("stack")).await;
    env.delete(&target).await;
}

/// The last node skipped: it stays on the old image and Heat's update waits on its hook, so
/// the progress model says paused (not completed), the batches are the plan's, there is no
/// ETA; `rollout status` (the status read back from Heat and the journal) says the same.
async fn assert_skipped_last_is_not_completed(env: &Env, plan: &RolloutPlan, end: &RolloutStatus) {
    let looked = engine::observe_status(&env.heat, &env.ctx.journal, plan)
        .await
        .expect("rollout status");
    for s in [end, &looked] {
        let p = &s.progress;
        assert!(
            matches!(&p.state, progress::State::Paused { why, .. } if why.contains("skipped")),
            "{:#?}",
            s.summary_lines()
        );
        assert_eq!((p.counts.new, p.counts.skipped), (4, 1));
        assert_eq!(p.counts.total(), 5);
        assert_eq!(p.batch, Some((plan.batches.len(), plan.batches.len())));
        assert_eq!(p.eta_secs, None);
    }
    assert_eq!(end.progress.counts, looked.progress.counts);
    assert_eq!(end.progress.state, looked.progress.state);
}

/// After an abort the model says rolled back (with rollback) or aborted (without), never
/// running; `rollout status` read back from Heat counts the members Heat's rollback took back
/// as rolled back (not pending), the counts adding up to the members.
async fn assert_abort_progress(env: &Env, plan: &RolloutPlan, end: &RolloutStatus, rolled: bool) {
    let looked = engine::observe_status(&env.heat, &env.ctx.journal, plan)
        .await
        .expect("rollout status");
    for s in [end, &looked] {
        let p = &s.progress;
        assert_eq!(p.counts.total(), s.nodes.len());
        assert_eq!(p.eta_secs, None);
        match rolled {
            true => assert_eq!(
                p.state,
                progress::State::RolledBack,
                "{:#?}",
                s.summary_lines()
            ),
            false => assert!(
                matches!(p.state, progress::State::Aborted { .. }),
                "{:#?}",
                s.summary_lines()
            ),
        }
    }
    if rolled {
        let p = &looked.progress;
        assert!(p.counts.rolled_back >= 1, "{:#?}", looked.lines());
        assert_eq!(p.counts.new, 0, "{:#?}", looked.lines());
    }
}

/// No `rollout.release` after the rollout's abort was recorded (journal order).
fn assert_nothing_released_after_abort(entries: &[caldera::journal::Entry]) {
    let mut aborted = false;
    for e in entries {
        match e.action.as_str() {
            "rollout.aborting" | "rollout.request.abort" => aborted = true,
            "rollout.release" if e.outcome == Outcome::Started => {
                assert!(!aborted, "{} released after the abort", e.target)
            }
            _ => {}
        }
    }
}

/// An abort in `mode` after the first node is done ends in a defined state that matches
/// Heat: rolled back (every node on the old image, ROLLBACK_COMPLETE), cancelled
/// (UPDATE_FAILED, the status counting the nodes Heat updated), or left on hooks (then an
/// abort with rollback from a process that does not drive it finishes the job). Journaled
/// as an abort, not a failure; nothing released after it.
pub async fn abort_scenario(env: &Env, cluster: &str, mode: AbortMode) {
    let target = env.create(cluster, 4).await;
    let members = env.member_names(&target).await;
    let stack = target.stack.clone().expect("stack");
    let plan = env.plan(&target, &members, "img-v2", RolloutOptions::default(), &[]);
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first node done");
    h.send(Control::Abort(mode)).expect("abort");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .unwrap_or_else(|_| panic!("{mode:?}: the abort never ended"));
    let RolloutState::Aborted { reason } = &end.state else {
        panic!("{mode:?}: {:#?}", end.lines());
    };
    let cleared = env
        .ctx
        .journal
        .rollout_entries(&plan.id)
        .expect("journal")
        .iter()
        .filter(|e| e.action == "rollout.rollback_release" && e.outcome == Outcome::Ok)
        .count();
    eprintln!("abort {mode:?}: {reason} ({cleared} rollback hook(s) cleared)");
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    assert_nothing_released_after_abort(&journal);
    let last = journal.last().expect("entries");
    assert_eq!(
        (last.action.as_str(), &last.outcome),
        ("rollout.abort", &Outcome::Ok),
        "journaled as an abort"
    );
    assert!(end.throughput_per_min.is_none() && end.eta_secs.is_none());
    let images = env.member_images(&target).await;
    let at_new = images.values().filter(|i| *i == "img-v2").count();
    match mode {
        // Heat's rollback either completes, or fails when a member the cancel cut short
        // cannot be taken back (seen on Heat 27): both are said, with the way on.
        AbortMode::CancelUpdate if reason.starts_with("rollback failed") => {
            assert_eq!(env.settle(&stack).await, "ROLLBACK_FAILED");
            let done = env.members_done(&target, "img-v2").await;
            assert_eq!(end.done, done, "status {} done, Heat {done}", end.done);
            assert!(reason.contains("--image"), "{reason}");
        }
        AbortMode::CancelUpdate => {
            assert!(reason.starts_with("rolled back"), "{reason}");
            assert_rolled_back_and_unhooked(env, &stack, &end).await;
            assert_eq!(at_new, 0, "{images:?}");
            assert_abort_progress(env, &plan, &end, true).await;
        }
        AbortMode::CancelWithoutRollback => {
            assert!(reason.starts_with("cancelled"), "{reason}");
            assert_eq!(env.settle(&stack).await, "UPDATE_FAILED");
            assert_abort_progress(env, &plan, &end, false).await;
            // Done in Heat: the member's stack at the new image and complete (a member
            // whose update the cancel cut short has the new image but UPDATE_FAILED).
            let done = env.members_done(&target, "img-v2").await;
            assert_eq!(end.done, done, "status {} done, Heat {done}", end.done);
            assert!(done >= 1 && done < members.len(), "{images:?}");
        }
        AbortMode::LeavePaused => {
            assert!(reason.contains("wait on their hooks"), "{reason}");
            let d = env.heat.get_stack(&stack, false).await.expect("stack");
            assert_eq!(d.summary.status.raw, "UPDATE_IN_PROGRESS");
            assert_eq!(end.done, at_new, "status {} done, Heat {at_new}", end.done);
            // Its status, read with no driver: the hooks hold the members not released
            // (was: "none left" beside members held on them).
            let seen = engine::observe_status(&env.heat, &env.ctx.journal, &plan)
                .await
                .expect("status");
            let hooks = seen.hooks_left.clone().unwrap_or_default();
            assert!(
                hooks.contains("stay while Heat's update runs (UPDATE_IN_PROGRESS)")
                    && hooks.contains("caldera heat unhook"),
                "{hooks}"
            );
            // Finishing as the abort's reason says: an abort with rollback, from a process
            // that does not drive it (nobody does now): it takes the rollout over to do it.
            let found = caldera::rollout::control::find_rollout(&env.heat, &env.ctx, &target)
                .await
                .expect("find")
                .expect("Heat still holds the members on our hooks");
            let h2 = caldera::rollout::control::abort(
                &env.heat,
                &env.ctx,
                &found,
                AbortMode::CancelUpdate,
                env.engine_options(HookSet::default()),
            )
            .await
            .expect("abort --rollback")
            .expect("nobody drives it: driven from here");
            let end2 = tokio::time::timeout(env.timeout, h2.wait())
                .await
                .expect("the rollback ends");
            let RolloutState::Aborted { reason } = &end2.state else {
                panic!("{:#?}", end2.lines());
            };
            assert!(reason.starts_with("rolled back"), "{reason}");
            assert_rolled_back_and_unhooked(env, &stack, &end2).await;
            let images = env.member_images(&target).await;
            assert!(images.values().all(|i| i == "img-v1"), "{images:?}");
        }
    }
    env.delete(&target).await;
}

/// The words of a command an end offers (between backticks after `after` in `text`) are
/// ones the CLI accepts: run against a cloud that is not there, it gets past its argument
/// parsing (clap answers a rejected command with exit status 2 and its usage).
pub fn assert_cli_accepts_offered(text: &str, after: &str) -> Vec<String> {
    let rest = &text[text
        .find(after)
        .unwrap_or_else(|| panic!("{after}: {text}"))..];
    let start = rest.find('`').expect("a command") + 1;
    let end = start + rest[start..].find('`').expect("its end");
    let words: Vec<String> = rest[start..end]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(
        words.first().map(String::as_str),
        Some("caldera"),
        "{words:?}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args(["--heat-url", "http://127.0.0.1:9/v1/none"])
        .args(&words[1..])
        .env(
            "CALDERA_JOURNAL",
            std::env::temp_dir().join("caldera-never-written.jsonl"),
        )
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run caldera");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() != Some(2) && !stderr.contains("Usage:"),
        "{words:?}: {stderr}"
    );
    words
}

/// A rollout of a group by what it sets (STACK/GROUP: no image parameter of its own) aborted
/// twice: first leaving the members on their hooks (its driver ends), then, with nobody
/// driving, `--cancel` from another process. The second abort still knows the rollout by
/// what its start set (the journal's start entry, found by the id Heat's marker gives), counts
/// the member Heat updated, offers a command the CLI accepts that carries those values, and
/// names the member Heat's cancel leaves held on its hook.
pub async fn aborted_twice_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 2).await;
    let stack = target.stack.clone().expect("stack");
    let members = env.member_names(&target).await;
    let group = caldera::drivers::any_group::group_target(&stack, "nodes");
    let set: caldera::parameter_value::ParameterValues =
        [("image".to_string(), ParameterValue::text("img-v2"))].into();
    let options = RolloutOptions {
        gate_wait_ms: 600_000,
        ..Default::default()
    };
    let plan = RolloutPlan::for_group(
        group.clone(),
        stack.clone(),
        "nodes",
        &members,
        options,
        set,
    );
    let mut h = engine::start(
        env.heat.clone(),
        env.ctx.clone(),
        plan.clone(),
        env.engine_options(HookSet::default()),
        None,
    )
    .await
    .expect("start");
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first node done");
    h.send(Control::Abort(AbortMode::LeavePaused))
        .expect("abort");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("the first abort ends");
    let RolloutState::Aborted { reason } = &end.state else {
        panic!("{:#?}", end.lines());
    };
    assert!(reason.contains("wait on their hooks"), "{reason}");

    let found = caldera::rollout::control::find_rollout(&env.heat, &env.ctx, &group)
        .await
        .expect("find")
        .expect("Heat still holds a member on our hooks");
    assert_eq!(found.id, plan.id);
    assert_eq!(found.extra_parameters, plan.extra_parameters);
    assert_eq!(found.image, "image=img-v2");
    let h2 = caldera::rollout::control::abort(
        &env.heat,
        &env.ctx,
        &found,
        AbortMode::CancelWithoutRollback,
        env.engine_options(HookSet::default()),
    )
    .await
    .expect("abort --cancel")
    .expect("nobody drives it: driven from here");
    let end2 = tokio::time::timeout(env.timeout, h2.wait())
        .await
        .expect("the cancel ends");
    let RolloutState::Aborted { reason } = &end2.state else {
        panic!("{:#?}", end2.lines());
    };
    assert!(!reason.contains("started elsewhere"), "{reason}");
    assert!(reason.contains("1 of 2 nodes on image=img-v2"), "{reason}");
    assert_eq!(end2.done, 1, "{:#?}", end2.lines());
    let offered = assert_cli_accepts_offered(reason, "to finish");
    assert!(
        offered.windows(2).any(|w| w == ["--set", "image=img-v2"]),
        "{offered:?}"
    );
    // Heat's cancel does not end the second member's wait on its hook (measured on Heat
    // 27: clearing it later updates the member): the abort names it and how it would be
    // released, and sends nothing more; `caldera heat hooks` shows the same hold.
    let second = &plan.batches[1][0];
    let named = format!("still held on its pre-update hook by Heat's cancelled update: {second}");
    assert!(reason.contains(&named), "{reason}");
    assert_cli_accepts_offered(reason, "still held");
    let held: Vec<String> = caldera::ops::hooks::pending_hooks(&env.heat, &stack)
        .await
        .expect("hooks")
        .into_iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(held, [format!("nodes/{second}")]);
    // A clear of that hook now updates the member alone, the stack's update over: the plan
    // says so before its call, for the operator to decide.
    let request = caldera::drivers::manual::Request::ClearHook {
        patterns: vec![format!("nodes/{second}")],
        hook: "pre-update".into(),
    };
    let clear = caldera::drivers::manual::plan(&env.heat, &stack, &request)
        .await
        .expect("clear-hook plan");
    let lines = clear.lines().join("\n");
    assert!(
        clear.refusals.is_empty()
            && lines.contains("WARNING: no update of")
            && lines.contains("each is updated to that update's definition, alone"),
        "{lines}"
    );
    env.delete(&target).await;
}

/// After a completed rollout: Heat's update is over, and no hook of the rollout is left in
/// the stack's environment (else the stack's next update, whoever starts it, holds those
/// members forever); the status says they were taken out.
pub async fn assert_completed_and_unhooked(
    env: &Env,
    target: &NodeGroupTarget,
    end: &RolloutStatus,
) {
    assert_eq!(end.state, RolloutState::Completed, "{:#?}", end.lines());
    let stack = target.stack.as_ref().expect("stack");
    let said = end.hooks_left.clone().unwrap_or_default();
    assert_eq!(env.settle(stack).await, "UPDATE_COMPLETE", "{said}");
    let hooks = env
        .heat
        .get_environment_hooks(stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "the rollout's hooks stayed: {hooks:?} ({said})"
    );
    assert!(
        said.starts_with("taken out") || said.starts_with("none left"),
        "{said}"
    );
    // The rollout's marker went with its hooks, the stack's own tags kept (Heat 27 cannot
    // PATCH a stack to no tags: a marker that is the only tag stays).
    let tags = env.heat.get_stack(stack, false).await.expect("stack").tags;
    let marker = caldera::rollout::plan::marker_in(&tags);
    assert!(marker.is_none() || tags.len() == 1, "{tags:?}");
}

/// After an abort with rollback: Heat rolled back, and no hook of the rollout is left in the
/// stack's environment: the rollback stores the previous template's environment again
/// (measured on Heat 27), so the rollout finds nothing to take out.
async fn assert_rolled_back_and_unhooked(env: &Env, stack: &StackRef, end: &RolloutStatus) {
    let said = end.hooks_left.clone().unwrap_or_default();
    assert_eq!(env.settle(stack).await, "ROLLBACK_COMPLETE", "{said}");
    assert!(said.starts_with("none left"), "{said}");
    let hooks = env
        .heat
        .get_environment_hooks(stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "the rollout's hooks stayed: {hooks:?} ({said})"
    );
}

/// Two starts of rollouts at the same moment, each from its own context (journal, locks)
/// and connection (two processes: each its own request budget).
pub async fn start_both(
    (heat_a, heat_b): (&HeatClient, &HeatClient),
    options: EngineOptions,
    (a, ctx_a): (RolloutPlan, ActionContext),
    (b, ctx_b): (RolloutPlan, ActionContext),
) -> (
    caldera::service::ServiceResult<engine::RolloutHandle>,
    caldera::service::ServiceResult<engine::RolloutHandle>,
) {
    tokio::join!(
        engine::start(heat_a.clone(), ctx_a, a, options.clone(), None),
        engine::start(heat_b.clone(), ctx_b, b, options, None)
    )
}

/// Two starts at the same moment from two processes of this machine (two journal handles
/// on one file): one proceeds, the other is refused naming the holder. Then a start from
/// "another machine" (its own journal and locks) while the rollout runs: refused from what
/// Heat shows. One PATCH; the rollout completes.
pub async fn concurrent_start_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 3).await;
    let members = env.member_names(&target).await;
    let a = env.plan(&target, &members, "img-a", RolloutOptions::default(), &[]);
    let b = env.plan(&target, &members, "img-b", RolloutOptions::default(), &[]);
    let mut other = env.ctx.clone();
    other.journal = Journal::open(env.ctx.journal.path());
    let (ra, rb) = start_both(
        (&env.heat, &env.heat),
        env.engine_options(HookSet::default()),
        (a.clone(), env.ctx.clone()),
        (b.clone(), other),
    )
    .await;
    let (h, lost, plan) = match (ra, rb) {
        (Ok(h), Err(e)) => (h, e, a),
        (Err(e), Ok(h)) => (h, e, b),
        (Ok(_), Ok(_)) => panic!("both starts proceeded"),
        (Err(x), Err(y)) => panic!("neither proceeded: {x} / {y}"),
    };
    assert!(lost.message.contains("already has a driver"), "{lost}");
    assert!(lost.message.contains(&plan.id), "names the holder: {lost}");
    // Another machine: nothing shared but Heat.
    let dir = tempfile::tempdir().expect("dir");
    let mut remote = env.ctx.clone();
    remote.journal = Journal::open(dir.path().join("journal.jsonl"));
    let c = env.plan(&target, &members, "img-c", RolloutOptions::default(), &[]);
    let e = engine::start(
        env.heat.clone(),
        remote,
        c,
        env.engine_options(HookSet::default()),
        None,
    )
    .await
    .err()
    .expect("a start from another machine during the rollout is refused");
    assert!(e.message.contains("IN_PROGRESS"), "{e}");
    eprintln!("concurrent start refused: {lost}\nother machine refused: {e}");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("finishes");
    assert_completed_and_unhooked(env, &target, &end).await;
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| *i == plan.image), "{images:?}");
    let started = env
        .ctx
        .journal
        .read_all()
        .expect("journal")
        .iter()
        .filter(|e| e.target == target.label() && e.action == "rollout.started")
        .count();
    assert_eq!(started, 1, "one PATCH");
    env.delete(&target).await;
}

/// Two starts of one node group at the same moment from two machines (journals and driver
/// locks apart: nothing shared but Heat), twice. Both may pass Heat's in-progress check and
/// both PATCH; Heat keeps the later update, whose rollout marker is then the stack's tag.
/// Each time exactly one rollout completes (every member at its image, one update each by
/// Heat's events), the other is refused or ends superseded having released nothing, and a
/// third machine's look at Heat (`plan_from_heat`) names the winner by its own id.
pub async fn two_machines_start_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 3).await;
    let members = env.member_names(&target).await;
    let stack = target.stack.clone().expect("stack");
    let dir = tempfile::tempdir().expect("dir");
    let mut remote = env.ctx.clone();
    remote.journal = Journal::open(dir.path().join("journal.jsonl"));
    for (ia, ib) in [("img-a", "img-b"), ("img-c", "img-d")] {
        let a = env.plan(&target, &members, ia, RolloutOptions::default(), &[]);
        let b = env.plan(&target, &members, ib, RolloutOptions::default(), &[]);
        let (ra, rb) = start_both(
            (&env.heat, &env.heat),
            env.engine_options(HookSet::default()),
            (a.clone(), env.ctx.clone()),
            (b.clone(), remote.clone()),
        )
        .await;
        let mut completed = Vec::new();
        let mut lost = Vec::new();
        for (plan, r) in [(a, ra), (b, rb)] {
            match r {
                Ok(h) => {
                    let end = tokio::time::timeout(env.timeout, h.wait())
                        .await
                        .expect("ends");
                    match &end.state {
                        RolloutState::Completed => completed.push(plan),
                        RolloutState::EndedElsewhere { reason }
                            if reason.contains("superseded") =>
                        {
                            lost.push((plan, reason.clone()))
                        }
                        other => panic!("{}: ended {other:?}\n{:#?}", plan.id, end.lines()),
                    }
                }
                Err(e) => {
                    assert!(
                        e.message.contains("IN_PROGRESS")
                            || e.message.contains("superseded")
                            || e.message.contains("being prepared"),
                        "{e}"
                    );
                    lost.push((plan, e.message));
                }
            }
        }
        assert_eq!(completed.len(), 1, "lost: {lost:?}");
        let winner = &completed[0];
        let (loser, why) = &lost[0];
        eprintln!("two machines: {} won; {} lost: {why}", winner.id, loser.id);
        let images = env.member_images(&target).await;
        assert!(images.values().all(|i| *i == winner.image), "{images:?}");
        let loser_journal = if loser.image == ia {
            &env.ctx.journal
        } else {
            &remote.journal
        };
        let released = loser_journal
            .rollout_entries(&loser.id)
            .expect("journal")
            .iter()
            .filter(|e| e.action == "rollout.release")
            .count();
        assert_eq!(released, 0, "the loser released {released}");
        // The winner's marker went out with its hooks (the end's PATCH gives the stack its
        // own tags back); where it is still there, it names the winner, and any machine
        // reads the same id from it.
        let shown = env.heat.get_stack(&stack, false).await.expect("stack");
        let marked = caldera::rollout::plan::marker_in(&shown.tags);
        assert!(
            marked.as_ref().is_none_or(|(id, _)| *id == winner.id),
            "{:?}",
            shown.tags
        );
        for _ in 0..marked.map_or(0, |_| 2) {
            let seen =
                engine::plan_from_heat(&env.heat, &target, &shown, RolloutOptions::default())
                    .await
                    .expect("plan from Heat");
            assert_eq!(seen.id, winner.id);
        }
        // The node group's own tags are kept beside the marker.
        assert!(
            shown.tags.iter().any(|t| t.starts_with("caldera-cluster=")),
            "{:?}",
            shown.tags
        );
        // Nothing left behind: the loser's hooks are not the winner's "before".
        let hooks = env
            .heat
            .get_environment_hooks(&stack)
            .await
            .expect("environment");
        assert!(
            hooks.paths_with("pre-update").is_empty(),
            "hooks left after the race: {:?}",
            hooks.paths_with("pre-update")
        );
    }
    env.delete(&target).await;
}

/// The events of a group's nested stack `group` after the event `mark` (none: all), oldest
/// first, up to the update that follows the rollout's (see [`until_next_update`]).
pub async fn stack_events(
    heat: &HeatClient,
    group: &StackRef,
    mark: Option<&str>,
) -> Vec<StackEvent> {
    let events: Vec<StackEvent> = heat
        .list_events(
            group.clone(),
            EventQuery {
                sort_dir: Some(SortDir::Asc),
                limit: Some(200),
                ..Default::default()
            },
        )
        .try_collect()
        .await
        .expect("events");
    let events = match mark {
        Some(mark) => events
            .into_iter()
            .skip_while(|e| e.id != mark)
            .skip(1)
            .collect(),
        None => events,
    };
    until_next_update(events)
}

/// From Heat's events of a rollout of `minions` (the target) holding `masters` too: every
/// member of each group updated exactly once; never two masters updating at once; every
/// master done before the first minion starts updating (`--also`), or, `masters_first`
/// false (`--also-after`), every minion done before the first master starts.
pub fn assert_masters_one_at_a_time(
    masters: (&[String], &[StackEvent]),
    minions: (&[String], &[StackEvent]),
    masters_first: bool,
) {
    let (m_names, m_events) = masters;
    let (w_names, w_events) = minions;
    let mw = update_windows(m_events);
    let ww = update_windows(w_events);
    for (names, windows, group) in [(m_names, &mw, "master"), (w_names, &ww, "minion")] {
        for n in names {
            assert_eq!(
                windows.get(n).map(|w| w.2),
                Some(1),
                "{group} {n} updated once: {windows:?}"
            );
        }
    }
    let mut spans: Vec<(DateTime<Utc>, DateTime<Utc>, &String)> =
        m_names.iter().map(|n| (mw[n].0, mw[n].1, n)).collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "masters {} and {} updating at once: {spans:?}",
            pair[0].2,
            pair[1].2
        );
    }
    if masters_first {
        let last_master = spans.iter().map(|s| s.1).max().expect("masters");
        let first_minion = w_names.iter().map(|n| ww[n].0).min().expect("minions");
        assert!(
            last_master <= first_minion,
            "a minion started at {first_minion} before the masters were done at {last_master}"
        );
    } else {
        let last_minion = w_names.iter().map(|n| ww[n].1).max().expect("minions");
        let first_master = spans.iter().map(|s| s.0).min().expect("masters");
        assert!(
            last_minion <= first_master,
            "a master started at {first_master} before the minions were done at {last_minion}"
        );
    }
}

/// The last member list a node stream gives (with hook marks and images), read to its end.
async fn nodes_of(
    service: &caldera::service::live::LiveService,
    row: &caldera::model::NodeGroup,
) -> Vec<caldera::model::Node> {
    use caldera::service::NodeUpdate;
    use futures::StreamExt;
    let mut stream = caldera::service::CloudService::stream_nodes(service, row.clone());
    let mut last = Vec::new();
    while let Some(update) = stream.next().await {
        match update.expect("node stream") {
            NodeUpdate::Members(nodes) | NodeUpdate::Listed { nodes, .. } => last = nodes,
            NodeUpdate::Done => break,
            NodeUpdate::Address(_)
            | NodeUpdate::Named { .. }
            | NodeUpdate::AddressFailed { .. } => {}
        }
    }
    last
}

/// Issue 25: a rollout of a plain stack's group (`STACK/GROUP`, by what it sets), in the gate
/// after its first member: the nodes pane's model of the group (its node row as the plain stack's
/// node-groups pane lists it, its members as the nodes stream reads them) gives the counts
/// `rollout status` gives: the member Heat updated is new (before: `new 0`, the others idle),
/// and the members still on the rollout's hooks are held by another caldera, the marker on
/// the stack naming the rollout (before: held by Heat).
pub async fn plain_group_mid_rollout_scenario(
    conn: &caldera::api::cloud::CloudConnection,
    env: &Env,
    name: &str,
) {
    use caldera::progress::{Holder, Phase};
    let target = env.create(name, 4).await;
    let stack = target.stack.clone().expect("stack");
    let members = env.member_names(&target).await;
    let group = caldera::drivers::any_group::group_target(&stack, "nodes");
    let set = [("image".to_string(), ParameterValue::text("img-v2"))].into();
    // A long gate after the first node: the rollout stands still, its first member new and
    // the others on its hooks, while both readings are made.
    let options = RolloutOptions {
        gate_wait_ms: 60_000,
        ..RolloutOptions::default()
    };
    let plan = RolloutPlan::for_group(group, stack.clone(), "nodes", &members, options, set);
    let mut h = engine::start(
        env.heat.clone(),
        env.ctx.clone(),
        plan,
        env.engine_options(Default::default()),
        None,
    )
    .await
    .expect("start");
    let paused = tokio::time::timeout(env.timeout, h.wait_for(|s| s.done == 1))
        .await
        .expect("the first member done");
    assert_eq!(paused.state, RolloutState::Running, "{:#?}", paused.lines());
    let want = paused.progress.counts;
    assert!(want.new > 0 && want.held > 0, "{:#?}", paused.lines());

    let service = caldera::service::live::LiveService::new(conn.clone());
    let rows = caldera::service::CloudService::list_nodegroups(
        &service,
        caldera::service::plain_stack::cluster_of(&stack.id, &stack.name),
    )
    .await
    .expect("node group rows");
    let row = rows.iter().find(|r| r.name == "nodes").expect("nodes row");
    let nodes = nodes_of(&service, row).await;
    let p = caldera::progress::of_nodes(nodes.iter(), row, &[], chrono::Utc::now());
    let c = p.counts;
    // One split for both: Heat holds every member it reached on the rollout's hook, those
    // of batches not started too, so both say held where Heat's events say paused (the
    // rollout once said `old` for them), and old for none.
    assert_eq!(
        (c.new, c.held, c.pending, c.failed, c.left(), c.total()),
        (
            want.new,
            want.held,
            want.pending,
            want.failed,
            want.left(),
            4
        ),
        "nodes pane {c:?}, rollout status {:#?}",
        paused.lines()
    );
    let held: Vec<Phase> = p
        .members
        .iter()
        .map(|m| m.phase)
        .filter(|p| matches!(p, Phase::Held(_)))
        .collect();
    assert!(
        held.iter().all(|p| *p == Phase::Held(Holder::OtherCaldera)),
        "{held:?}"
    );
    h.send(Control::Abort(AbortMode::CancelUpdate)).ok();
    tokio::time::timeout(env.timeout, h.wait()).await.ok();
}

/// Resumes `h` until its rollout ends, at most `resumes` times more: after an update that
/// superseded the rollout's while members waited on its hooks, Heat 27 may fail a member
/// whose old wait wakes beside the new one (`Resource UPDATE failed: … Stack UPDATE
/// cancelled`, measured); the rollout pauses on that failure, and the operator's resume
/// sends the update again, as after any failure.
async fn resume_to_end(env: &Env, h: &mut engine::RolloutHandle, resumes: usize) -> RolloutStatus {
    for left in (0..=resumes).rev() {
        // The pause the last resume answered is over first (the engine takes a resume
        // before its next look), then the rollout ends or pauses again.
        let answered = match h.status().state {
            RolloutState::Paused { reason } => Some(reason),
            _ => None,
        };
        let settled = tokio::time::timeout(
            env.timeout,
            h.wait_for(|s| match &s.state {
                RolloutState::Paused { reason } => Some(reason) != answered.as_ref(),
                state => state.is_final(),
            }),
        )
        .await;
        let now = h.status();
        assert!(
            settled.is_ok(),
            "neither ended nor paused: {:#?}",
            now.lines()
        );
        match &now.state {
            RolloutState::Paused { reason } if left > 0 && reason.contains("cancelled") => {
                eprintln!("resumed after Heat's cancelled attempt: {reason}");
                h.send(Control::Resume {
                    parameters: Default::default(),
                })
                .expect("resume");
            }
            _ => return now,
        }
    }
    h.status()
}

/// Another update of the stack that keeps the rollout's marker (a PATCH of one parameter:
/// `openstack stack update --existing`, Magnum's resize) while the rollout waits on its
/// gate: the rollout pauses before its next release and names what the other update sets,
/// Heat's values before and after; a restart finds it again from the journal and Heat; the
/// operator's resume drives the update Heat runs now, to its values (was: the driver
/// released every member into the other update's image and ended "completed" under its
/// own).
pub async fn outside_update_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 3).await;
    let members = env.member_names(&target).await;
    let options = RolloutOptions {
        gate_wait_ms: 3_000,
        ..Default::default()
    };
    let plan = env.plan(&target, &members, "img-v2", options, &[]);
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first node done");
    // The outside update: parameters alone, as `--existing` sends them (tags and the
    // environment, hooks included, are kept by Heat).
    let outside = caldera::api::heat::StackUpdate {
        parameters: BTreeMap::from([("image".to_string(), serde_json::json!("img-v3"))]),
        existing: true,
        ..Default::default()
    };
    let stack = target.stack.clone().expect("stack");
    env.heat
        .update_stack(&stack, &outside)
        .await
        .expect("outside update");
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("the rollout pauses on the other update");
    let RolloutState::Paused { reason } = &paused.state else {
        panic!("not paused: {:?}", paused.state)
    };
    assert!(
        reason.contains("Heat began another update of stack")
            && reason.contains("image: img-v2 → img-v3"),
        "{reason}"
    );
    // Nothing released since it paused, by a driver that sees it again after a restart.
    h.kill().await;
    let found = find_active(&env.ctx.journal, &target.label())
        .expect("journal")
        .expect("an active rollout");
    let mut h2 = engine::reattach(
        env.heat.clone(),
        env.ctx.clone(),
        found,
        env.engine_options(HookSet::default()),
        Vec::new(),
        engine::TakeOver::ThisMachine,
    )
    .await
    .expect("reattach");
    let again = tokio::time::timeout(
        env.timeout,
        h2.wait_for(|s| {
            matches!(&s.state, RolloutState::Paused { reason } if reason.contains("another update"))
        }),
    )
    .await
    .expect("paused again after the restart");
    assert_eq!(again.done, paused.done, "nothing released while paused");
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    let pause_at = journal
        .iter()
        .position(|e| e.action == "rollout.pause")
        .expect("the pause journaled");
    assert!(
        !journal[pause_at..]
            .iter()
            .any(|e| e.action == "rollout.release"),
        "released after the pause"
    );
    h2.send(Control::Resume {
        parameters: Default::default(),
    })
    .expect("resume");
    resume_to_end(env, &mut h2, 2).await;
    let end = tokio::time::timeout(env.timeout, h2.wait())
        .await
        .expect("finishes in time");
    assert!(
        matches!(end.state, RolloutState::Completed),
        "{:?}",
        end.state
    );
    assert_eq!(end.image, "img-v3", "named for what Heat's update sets");
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v3"), "{images:?}");
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    assert!(
        journal.iter().any(|e| e.action == "rollout.heat_update"
            && e.output.as_deref().is_some_and(|o| o.contains("taken on"))),
        "the resume journals the update it drives"
    );
    assert_completed_and_unhooked(env, &target, &end).await;
    env.delete(&target).await;
}

/// The other update lands while nobody drives (the driver killed just before it), and the
/// operator's `rollout resume` was asked without knowing of it: the driver started for that
/// resume pauses on it and says so, the resume refused (was: the resume released the next
/// member at once, into the other update's image, named for its own). The next resume
/// drives Heat's update to its end, every member on its values.
pub async fn outside_update_unseen_scenario(env: &Env, cluster: &str) {
    let target = env.create(cluster, 3).await;
    let members = env.member_names(&target).await;
    let options = RolloutOptions {
        gate_wait_ms: 2_000,
        ..Default::default()
    };
    let plan = env.plan(&target, &members, "img-v2", options, &[]);
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first node done");
    h.kill().await;
    let outside = caldera::api::heat::StackUpdate {
        parameters: BTreeMap::from([("image".to_string(), serde_json::json!("img-v3"))]),
        existing: true,
        ..Default::default()
    };
    let stack = target.stack.clone().expect("stack");
    env.heat
        .update_stack(&stack, &outside)
        .await
        .expect("outside update");
    let found = find_active(&env.ctx.journal, &target.label())
        .expect("journal")
        .expect("an active rollout");
    let mut h2 = engine::reattach(
        env.heat.clone(),
        env.ctx.clone(),
        found,
        env.engine_options(HookSet::default()),
        vec![Control::Resume {
            parameters: Default::default(),
        }],
        engine::TakeOver::ThisMachine,
    )
    .await
    .expect("reattach");
    let paused = tokio::time::timeout(
        env.timeout,
        h2.wait_for(|s| {
            matches!(&s.state, RolloutState::Paused { reason } if reason.contains("another update"))
        }),
    )
    .await
    .expect("the resume's driver pauses on the other update");
    assert_eq!(paused.done, 1, "{:#?}", paused.lines());
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    assert!(
        journal.iter().any(|e| e.action == "rollout.resume"
            && matches!(&e.outcome, Outcome::Refused { error } if error.contains("another update"))),
        "the resume asked before anyone knew is refused"
    );
    let reattached = journal
        .iter()
        .rposition(|e| e.action == "rollout.reattach")
        .expect("reattach journaled");
    assert!(
        !journal[reattached..]
            .iter()
            .any(|e| e.action == "rollout.release"),
        "released after the other update, before the operator was told"
    );
    h2.send(Control::Resume {
        parameters: Default::default(),
    })
    .expect("resume");
    resume_to_end(env, &mut h2, 2).await;
    let end = h2.wait().await;
    assert!(
        matches!(end.state, RolloutState::Completed),
        "{:?}",
        end.state
    );
    assert_eq!(end.image, "img-v3");
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v3"), "{images:?}");
    assert_completed_and_unhooked(env, &target, &end).await;
    env.delete(&target).await;
}
