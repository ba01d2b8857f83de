//! The rollout's closing wait on the simulator: every member is done while Heat's stack
//! update goes on beside the group (a slow `OS::Heat::TestResource` reading a parameter the
//! rollout changes, as `tests/real_heat/discovery.rs` builds on a real Heat). The engine
//! pauses saying what Heat still does, and that pause ends by itself with Heat's update; an
//! operator's pause on top stays until a resume, across a restart of the engine too.

use crate::support::scenarios::{self, update_windows, Env};
use crate::support::sim_group::sim_env;
use caldera::drivers::heat_native::{ROLE_NODEGROUP, TAG_CLUSTER, TAG_NODEGROUP};
use caldera::drivers::{Driver, NodeGroupTarget};
use caldera::journal::Outcome;
use caldera::lifecycle::HookSet;
use caldera::rollout::engine::{self, RolloutHandle};
use caldera::rollout::{Control, RolloutOptions, RolloutPlan, RolloutState, RolloutStatus};
use caldera::sim::SimHandle;
use caldera::templates::{self, Machines};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const SPEED: f64 = 50.0;
/// Simulated seconds the sibling's update takes: 12 s of the test's time, long beside the
/// members' (10 s simulated each) and the closing wait's node timeout (1 s).
const SIBLING_SECS: i64 = 600;
const CLOSING: &str = "every node is done, but Heat's update of stack";

/// Node group `workers` of cluster `cluster` (three members), its stack holding beside the
/// group `slow_sibling`, whose value is parameter `sibling_value` and whose update takes
/// [`SIBLING_SECS`].
async fn group_with_slow_sibling(env: &Env, cluster: &str) -> NodeGroupTarget {
    let name = format!("{cluster}-workers");
    let parameters: BTreeMap<String, serde_json::Value> = [
        ("count".to_string(), json!(3)),
        ("image".to_string(), json!("img-v1")),
        ("name_prefix".to_string(), json!(name)),
    ]
    .into();
    let mut create =
        templates::nodegroup_stack(&name, Machines::Test, parameters).expect("template");
    create.template["parameters"]["sibling_value"] = json!({"type": "string", "default": "v1"});
    create.template["resources"]["slow_sibling"] = json!({
        "type": "OS::Heat::TestResource",
        "properties": {
            "value": {"get_param": "sibling_value"},
            "action_wait_secs": {"update": SIBLING_SECS}
        }
    });
    create.tags = vec![
        format!("{TAG_CLUSTER}{cluster}"),
        format!("{TAG_NODEGROUP}workers"),
        ROLE_NODEGROUP.to_string(),
    ];
    let stack = env.heat.create_stack(&create).await.expect("create");
    assert_eq!(env.settle(&stack).await, "CREATE_COMPLETE");
    env.driver
        .find_nodegroup(cluster, "workers")
        .await
        .expect("found by its tags")
}

/// A rollout to `img-v2` that also changes `sibling_value` (Heat updates the sibling beside
/// the group), one member at a time, a node allowed 1 s.
fn plan(env: &Env, target: &NodeGroupTarget, members: &[String]) -> RolloutPlan {
    env.plan(
        target,
        members,
        "img-v2",
        RolloutOptions {
            node_timeout_ms: 1000,
            ..Default::default()
        },
        &[("sibling_value", "v2")],
    )
}

/// Starts the rollout and waits for its closing pause (every member done, the sibling
/// still updating).
async fn start_until_closing(env: &Env, plan: &RolloutPlan) -> RolloutHandle {
    let mut h = env.start_rollout(plan, HookSet::default()).await;
    let s = wait_for(&mut h, "the closing pause", |s| closing_pause(s).is_some()).await;
    assert_eq!(s.done, 3, "{:#?}", s.lines());
    assert!(
        closing_pause(&s).is_some_and(|r| r.contains("slow_sibling")),
        "names what Heat still does: {:?}",
        s.state
    );
    h
}

fn closing_pause(s: &RolloutStatus) -> Option<&str> {
    match &s.state {
        RolloutState::Paused { reason } if reason.starts_with(CLOSING) => Some(reason),
        _ => None,
    }
}

fn paused_reason(s: &RolloutStatus) -> Option<&str> {
    match &s.state {
        RolloutState::Paused { reason } => Some(reason),
        _ => None,
    }
}

async fn wait_for(
    h: &mut RolloutHandle,
    what: &str,
    pred: impl Fn(&RolloutStatus) -> bool,
) -> RolloutStatus {
    tokio::time::timeout(Duration::from_secs(60), h.wait_for(pred))
        .await
        .unwrap_or_else(|_| panic!("never {what}: {:#?}", h.status()))
}

/// A new engine for the same rollout with nothing but the journal and Heat, as a restarted
/// caldera builds it; `initial` its first controls.
async fn reattach(env: &Env, plan: &RolloutPlan, initial: Vec<Control>) -> RolloutHandle {
    let found = engine::find_active(&env.ctx.journal, &plan.target.label())
        .expect("journal")
        .expect("still active after the kill");
    engine::reattach(
        env.heat.clone(),
        env.ctx.clone(),
        found,
        env.engine_options(HookSet::default()),
        initial,
        engine::TakeOver::ThisMachine,
    )
    .await
    .expect("reattach")
}

async fn stack_status(env: &Env, target: &NodeGroupTarget) -> String {
    let stack = target.stack.as_ref().expect("stack");
    let d = env.heat.get_stack(stack, false).await.expect("stack show");
    d.summary.status.raw
}

/// Waits (bounded) for Heat's update to end, the sibling's last.
async fn heat_update_ends(env: &Env, target: &NodeGroupTarget) {
    let stack = target.stack.as_ref().expect("stack");
    assert_eq!(env.settle(stack).await, "UPDATE_COMPLETE");
}

fn closing_pauses_journaled(env: &Env, plan: &RolloutPlan) -> usize {
    env.ctx
        .journal
        .rollout_entries(&plan.id)
        .expect("journal")
        .iter()
        .filter(|e| {
            e.action == "rollout.pause"
                && matches!(&e.outcome, Outcome::Failed { error } if error.starts_with(CLOSING))
        })
        .count()
}

fn finished(env: &Env, plan: &RolloutPlan) -> bool {
    env.ctx
        .journal
        .rollout_entries(&plan.id)
        .expect("journal")
        .iter()
        .any(|e| e.action == "rollout.finish")
}

/// Each member updated once by Heat across the engines (its events' own record).
async fn each_member_updated_once(
    env: &Env,
    target: &NodeGroupTarget,
    members: &[String],
    mark: Option<String>,
) {
    let windows = update_windows(&env.group_events(target, mark).await);
    for m in members {
        assert_eq!(
            windows.get(m).map(|w| w.2),
            Some(1),
            "member {m} updated once"
        );
    }
}

/// Killed during its closing wait and reattached: the new engine is in the same wait at
/// once (not "running" with nothing moving until a node's time passes again), and it
/// completes by itself when Heat's update does, its hooks taken out, each member updated
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_rollout_killed_in_its_closing_wait_completes_by_itself_after_reattach() {
    let (sim, env) = sim_env(SPEED).await;
    let target = group_with_slow_sibling(&env, "cwk").await;
    let members = env.member_names(&target).await;
    let mark = env.event_mark(&target).await;
    let plan = plan(&env, &target, &members);
    let h = start_until_closing(&env, &plan).await;
    h.kill().await;
    let killed_at = chrono::Utc::now();

    let mut h = reattach(&env, &plan, Vec::new()).await;
    // The take-over journals when the killed driver was last seen, and from then to its own
    // start nobody released anything: a pause of the pace (was: time the members moved).
    let entries = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    let reattached = entries
        .iter()
        .rev()
        .find(|e| e.action == "rollout.reattach")
        .expect("the take-over is journaled");
    let since = reattached
        .since
        .expect("the killed driver's last heartbeat");
    assert!(
        plan.created_at <= since && since <= killed_at && since < reattached.time,
        "{since} not in {} ..= {killed_at}",
        plan.created_at
    );
    // (Here the closing wait's own pause was open already: the span covers both.)
    assert!(
        h.status()
            .progress
            .paused
            .iter()
            .any(|(from, to)| *from <= since && *to == Some(reattached.time)),
        "{since} {} {:?}",
        reattached.time,
        h.status().progress.paused
    );
    let t0 = Instant::now();
    let first = wait_for(&mut h, "a status", |s| s.state != RolloutState::Starting).await;
    assert_eq!(
        stack_status(&env, &target).await,
        "UPDATE_IN_PROGRESS",
        "the machine was too slow for this test: Heat's update ended before the check"
    );
    assert!(
        closing_pause(&first).is_some(),
        "reattached in the closing wait: {:?}",
        first.state
    );
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("ends with Heat's update");
    scenarios::assert_completed_and_unhooked(&env, &target, &end).await;
    // The wait went on from where it was: the sibling had more than a node's time left,
    // yet the new engine paused no second time.
    assert!(t0.elapsed() > Duration::from_secs(1), "{:?}", t0.elapsed());
    assert_eq!(closing_pauses_journaled(&env, &plan), 1);
    each_member_updated_once(&env, &target, &members, mark).await;
    sim.shutdown().await;
}

/// The operator pauses during the closing wait: when Heat's update ends the rollout stays
/// paused by the operator, now saying that Heat has finished and that a resume completes
/// it (not that Heat is still updating); the resume completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_an_operators_pause_in_the_closing_wait_stays_after_heat_ends_until_resumed() {
    let (sim, env) = sim_env(SPEED).await;
    let target = group_with_slow_sibling(&env, "cwp").await;
    let members = env.member_names(&target).await;
    let mark = env.event_mark(&target).await;
    let plan = plan(&env, &target, &members);
    let mut h = start_until_closing(&env, &plan).await;
    h.send(Control::Pause).expect("pause");
    wait_for(&mut h, "the operator's pause", |s| {
        paused_reason(s).is_some_and(|r| r.contains("paused by the operator"))
    })
    .await;

    heat_update_ends(&env, &target).await;
    let s = wait_for(&mut h, "the pause saying Heat's update ended", |s| {
        paused_reason(s).is_some_and(|r| !r.starts_with(CLOSING))
    })
    .await;
    let reason = paused_reason(&s).expect("still paused").to_string();
    assert!(reason.starts_with("paused by the operator"), "{reason}");
    assert!(
        reason.contains("has ended since (UPDATE_COMPLETE)")
            && reason.contains("`caldera rollout resume cwp/workers` completes the rollout"),
        "{reason}"
    );
    // However long it is looked at: paused, not completed behind the operator's back.
    tokio::time::sleep(env.poll * 10).await;
    assert_eq!(paused_reason(&h.status()), Some(reason.as_str()));
    assert!(!finished(&env, &plan));

    h.send(Control::Resume {
        parameters: BTreeMap::new(),
    })
    .expect("resume");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("completes after the resume");
    scenarios::assert_completed_and_unhooked(&env, &target, &end).await;
    each_member_updated_once(&env, &target, &members, mark).await;
    sim.shutdown().await;
}

/// The operator paused during the closing wait, then caldera was killed and Heat's update
/// ended: the status read with no engine says paused by the operator (not completed), a
/// reattached engine stays paused, and the operator's resume completes the rollout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_an_operators_pause_in_the_closing_wait_stays_paused_after_kill_and_reattach() {
    let (sim, env) = sim_env(SPEED).await;
    let target = group_with_slow_sibling(&env, "cwr").await;
    let members = env.member_names(&target).await;
    let mark = env.event_mark(&target).await;
    let plan = plan(&env, &target, &members);
    let mut h = start_until_closing(&env, &plan).await;
    h.send(Control::Pause).expect("pause");
    wait_for(&mut h, "the operator's pause", |s| {
        paused_reason(s).is_some_and(|r| r.contains("paused by the operator"))
    })
    .await;
    h.kill().await;
    heat_update_ends(&env, &target).await;

    let seen = engine::observe_status(&env.heat, &env.ctx.journal, &plan)
        .await
        .expect("status");
    assert!(
        paused_reason(&seen).is_some_and(|r| r.starts_with("paused by the operator")
            && r.contains("has ended since (UPDATE_COMPLETE)")),
        "{:?}",
        seen.state
    );

    let mut h = reattach(&env, &plan, Vec::new()).await;
    let s = wait_for(&mut h, "a status", |s| s.state != RolloutState::Starting).await;
    assert!(
        paused_reason(&s).is_some_and(|r| r.starts_with("paused by the operator")),
        "{:?}",
        s.state
    );
    tokio::time::sleep(env.poll * 10).await;
    assert!(
        paused_reason(&h.status()).is_some(),
        "{:?}",
        h.status().state
    );
    assert!(!finished(&env, &plan));

    h.send(Control::Resume {
        parameters: BTreeMap::new(),
    })
    .expect("resume");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("completes after the resume");
    scenarios::assert_completed_and_unhooked(&env, &target, &end).await;
    each_member_updated_once(&env, &target, &members, mark).await;
    sim.shutdown().await;
}

/// The moment between a rollout's last member done and its driver's PATCH that takes the
/// hooks out, made to last: the simulated stack's environment holds the hooks again as the
/// start's PATCH put them (set in the simulator's world, no update), and the journal is cut
/// back to before the end's unhook and finish.
fn back_to_before_the_unhook(sim: &SimHandle, env: &Env, plan: &RolloutPlan, hooks: bool) {
    let stack = plan.stack.id.clone();
    sim.with_world(|w| {
        let ix = w.find_stack(&stack).expect("stack");
        let s = w.stack_mut(ix).expect("stack");
        let registry = &mut s.environment["resource_registry"]["resources"]["nodes"];
        if hooks {
            registry["*"] = json!({"hooks": ["pre-update"]});
        } else if let Some(o) = registry.as_object_mut() {
            o.remove("*");
        }
        // The end's PATCH took the marker off with the hooks: before it, it was there.
        if let Some(tags) = &plan.stack_tags {
            s.tags = tags.clone();
        }
    });
    let journal = &env.ctx.journal;
    let kept: Vec<String> = journal
        .read_all()
        .expect("journal")
        .into_iter()
        .filter(|e| {
            e.rollout.as_deref() != Some(plan.id.as_str())
                || !matches!(e.action.as_str(), "rollout.unhook" | "rollout.finish")
        })
        .map(|e| serde_json::to_string(&e).expect("entry"))
        .collect();
    std::fs::write(journal.path(), kept.join("\n") + "\n").expect("journal");
}

/// `rollout status` from another process while every member is done and Heat's update is
/// over but the rollout's hooks are still in the stack's environment (its driver's PATCH that
/// takes them out not sent yet): not completed but closing. While a live driver holds the
/// rollout's lock, its hooks line offers nothing that would race that PATCH (no `caldera heat
/// unhook`); with nobody driving, it says how the rollout is closed. Once Heat's environment
/// no longer holds them, completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_says_closing_while_the_rollouts_hooks_are_in_the_environment() {
    let (sim, env) = sim_env(SPEED).await;
    let target = env.create("cl", 2).await;
    let members = env.member_names(&target).await;
    let plan = env.plan(&target, &members, "img-v2", RolloutOptions::default(), &[]);
    let h = engine::start(
        env.heat.clone(),
        env.ctx.clone(),
        plan.clone(),
        env.engine_options(HookSet::default()),
        None,
    )
    .await
    .expect("start");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("the rollout ends");
    assert_eq!(end.state, RolloutState::Completed, "{:#?}", end.lines());
    let started = engine::find_latest(&env.ctx.journal, &target.label())
        .expect("journal")
        .expect("the started plan");

    back_to_before_the_unhook(&sim, &env, &started, true);
    let lock_dir = caldera::rollout::lock::lock_dir(env.ctx.journal.path());
    let driving = caldera::rollout::lock::DriverLock::acquire(
        &lock_dir,
        &caldera::rollout::lock::key(&started),
        &plan.id,
    )
    .expect("the driver's lock");
    let s = engine::observe_status(&env.heat, &env.ctx.journal, &started)
        .await
        .expect("status");
    let RolloutState::Closing { reason } = &s.state else {
        panic!("{:#?}", s.lines());
    };
    assert!(reason.starts_with("taking hooks out"), "{reason}");
    let hooks = s.hooks_left.clone().unwrap_or_default();
    assert!(hooks.contains("driver"), "{hooks}");
    assert!(
        !s.lines().iter().any(|l| l.contains("heat unhook")),
        "{:#?}",
        s.lines()
    );
    drop(driving);

    let s = engine::observe_status(&env.heat, &env.ctx.journal, &started)
        .await
        .expect("status");
    assert!(
        matches!(s.state, RolloutState::Closing { .. }),
        "{:#?}",
        s.lines()
    );
    let hooks = s.hooks_left.clone().unwrap_or_default();
    assert!(hooks.contains("caldera rollout resume"), "{hooks}");

    back_to_before_the_unhook(&sim, &env, &started, false);
    let s = engine::observe_status(&env.heat, &env.ctx.journal, &started)
        .await
        .expect("status");
    assert_eq!(s.state, RolloutState::Completed, "{:#?}", s.lines());
    sim.shutdown().await;
}
