//! Step injection on the simulator (the harness: `support::rollout_steps`): every step of the
//! rollout engine times every injection, with the invariants the harness checks. Plus: 20
//! pairs of starts at the same moment, exactly one of each pair proceeds.

use crate::support::rollout_steps::*;
use crate::support::scenarios;
use crate::support::sim_group;
use crate::support::sim_group::sim_env;
use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::drivers::NodeGroupTarget;
use caldera::lifecycle::HookSet;
use caldera::rollout::engine::EngineStep;
use caldera::rollout::{AbortMode, Control, RolloutOptions, RolloutPlan, RolloutState};
use caldera::service::ErrorKind;
use caldera::sim::{self, SimOptions};
use futures::StreamExt;
use scenarios::Env;
use std::time::Duration;

/// The simulator's clock: a member update takes 10 s / SPEED.
const SPEED: f64 = 100.0;

/// Cases run at once (each its own stacks in one simulator).
const CASES_AT_ONCE: usize = 24;

/// (step, at which occurrence)
fn steps() -> Vec<(EngineStep, usize)> {
    vec![
        (EngineStep::BeforeRelease, 2),
        (EngineStep::MemberUpdating, 2),
        (EngineStep::GateWait, 1),
        (EngineStep::PreHook, 2),
        (EngineStep::PostHook, 1),
        (EngineStep::AfterFailure, 1),
        (EngineStep::JournalWrite, 7),
        (EngineStep::Unhook, 1),
    ]
}

/// A case's environment on the simulator: quick polls, and a case is over in seconds.
fn sim_case_env(conn: &CloudConnection) -> Env {
    Env::new(
        conn.heat.clone(),
        Duration::from_millis(100),
        Duration::from_secs(90),
        0,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_every_control_keeps_the_invariants() {
    let sim = sim::start(SimOptions::fast("empty", SPEED))
        .await
        .expect("simulator starts");
    let cloud = sim.cloud_config();
    let mut cases = Vec::new();
    for (step, nth) in steps() {
        for inject in injections() {
            cases.push((step, nth, inject));
        }
    }
    // `ROLLOUT_STEP_CASE=BeforeRelease` (a substring of "Step#n + injection") runs fewer.
    if let Ok(only) = std::env::var("ROLLOUT_STEP_CASE") {
        cases.retain(|(step, nth, inject)| {
            format!("{step:?}#{nth} + {}", inject.name()).contains(&only)
        });
    }
    let total = cases.len();
    // A case spends nearly all its time waiting on the simulator's clock and the engine's
    // polls (70 cases: under 4 s of CPU), so many run at once. Each is an operator's own
    // process, with its own connection and request budget: on one shared budget (25
    // requests a second) the cases queued behind each other's polls.
    let results: Vec<CaseResult> = futures::stream::iter(cases.into_iter().enumerate().map(
        |(n, (step, nth, inject))| {
            let cloud = cloud.clone();
            tokio::spawn(async move {
                let conn = CloudConnection::from_cloud(&cloud, &ConnectOptions::default())
                    .await
                    .expect("connect to the simulator");
                run_case(sim_case_env(&conn), format!("st{n}"), step, nth, inject).await
            })
        },
    ))
    .buffer_unordered(CASES_AT_ONCE)
    .map(|r| r.expect("case task"))
    .collect()
    .await;
    let mut results = results;
    results.sort_by(|a, b| a.name.cmp(&b.name));
    for r in &results {
        eprintln!("covered: {:<40} {:>5.1}s -> {}", r.name, r.secs, r.end);
    }
    eprintln!(
        "covered {} cases: {} steps x {} injections",
        results.len(),
        steps().len(),
        injections().len()
    );
    assert_eq!(results.len(), total);
    sim.shutdown().await;
}

/// One start of a pair: the plan and the context (journal, locks) it starts from.
type PairStart = (RolloutPlan, caldera::drivers::apply::ActionContext);

/// Each pair's two starts at the same moment (all pairs at once); their plans and results.
async fn start_pairs(
    (conn_a, conn_b): (&CloudConnection, &CloudConnection),
    options: caldera::rollout::engine::EngineOptions,
    pairs: impl Iterator<Item = (PairStart, PairStart)>,
) -> Vec<(
    RolloutPlan,
    RolloutPlan,
    caldera::service::ServiceResult<caldera::rollout::engine::RolloutHandle>,
    caldera::service::ServiceResult<caldera::rollout::engine::RolloutHandle>,
)> {
    let starts = pairs.map(|((a, ctx_a), (b, ctx_b))| {
        let (heat_a, heat_b) = (conn_a.heat.clone(), conn_b.heat.clone());
        let options = options.clone();
        async move {
            let (ra, rb) = scenarios::start_both(
                (&heat_a, &heat_b),
                options,
                (a.clone(), ctx_a),
                (b.clone(), ctx_b),
            )
            .await;
            (a, b, ra, rb)
        }
    });
    futures::future::join_all(starts).await
}

/// A scenario environment for the pair tests (its own journal directory).
fn pair_env(conn: &CloudConnection) -> Env {
    Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    )
}

/// 20 node groups, two starts of each at the same moment (different images, separate
/// journal handles on one file, as two processes): exactly one of each pair proceeds, the
/// other is refused naming the holder, and Heat got one PATCH per group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_pairs_of_concurrent_starts_one_proceeds_each_time() {
    let (sim, conn) = sim_group::connected(SimOptions::fast("empty", SPEED)).await;
    let env = pair_env(&conn);
    let names: Vec<String> = (0..20).map(|i| format!("pair{i}")).collect();
    let targets: Vec<NodeGroupTarget> =
        futures::future::join_all(names.iter().map(|n| env.create(n, 2))).await;
    let mut pairs = Vec::new();
    for t in &targets {
        let members = env.member_names(t).await;
        let a = env.plan(t, &members, "img-a", RolloutOptions::default(), &[]);
        let b = env.plan(t, &members, "img-b", RolloutOptions::default(), &[]);
        // Another process: its own journal handle on the same file.
        let mut other = env.ctx.clone();
        other.journal = caldera::journal::Journal::open(env.ctx.journal.path());
        pairs.push((a, b, other));
    }
    let pairs = pairs
        .into_iter()
        .map(|(a, b, other)| ((a, env.ctx.clone()), (b, other)));
    // The second start of each pair is another process: its own connection.
    let other = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect to the simulator");
    let results = start_pairs(
        (&conn, &other),
        env.engine_options(HookSet::default()),
        pairs,
    )
    .await;
    let mut winners = Vec::new();
    for (a, b, ra, rb) in results {
        let label = a.target.label();
        let (win, lose, plan) = match (ra, rb) {
            (Ok(h), Err(e)) => (h, e, a),
            (Err(e), Ok(h)) => (h, e, b),
            (Ok(_), Ok(_)) => panic!("{label}: both starts proceeded"),
            (Err(x), Err(y)) => panic!("{label}: neither proceeded: {x} / {y}"),
        };
        assert!(
            lose.kind == ErrorKind::Refused
                && (lose.message.contains("already has a driver")
                    || lose.message.contains("IN_PROGRESS")),
            "{label}: {lose}"
        );
        winners.push((win, plan));
    }
    let journal = env.ctx.journal.read_all().expect("journal");
    for t in &targets {
        let patches = journal
            .iter()
            .filter(|e| e.target == t.label() && e.action == "rollout.started")
            .count();
        assert_eq!(patches, 1, "{}: {patches} PATCHes", t.label());
    }
    for (h, plan) in winners {
        let end = tokio::time::timeout(env.timeout, h.wait())
            .await
            .expect("finishes");
        assert_eq!(
            end.state,
            RolloutState::Completed,
            "{}",
            plan.target.label()
        );
        let images = env.member_images(&plan.target).await;
        assert!(images.values().all(|i| *i == plan.image), "{images:?}");
    }
    eprintln!("covered: 20 pairs of concurrent starts, one proceeded each time");
    for t in &targets {
        env.delete(t).await;
    }
    sim.shutdown().await;
}

/// The console's path: a pause sent to the engine's handle during a long gate is applied at
/// once (the gate does not run out first) and nothing more is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_during_a_long_gate_releases_nothing_more() {
    let (sim, env) = sim_env(SPEED).await;
    let target = env.create("gate", 3).await;
    let members = env.member_names(&target).await;
    let plan = env.plan(
        &target,
        &members,
        "img-v2",
        RolloutOptions {
            // Far longer than the test's timeout: only an interrupted gate lets it pass.
            gate_wait_ms: 3_600_000,
            ..Default::default()
        },
        &[],
    );
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("first node done");
    h.send(Control::Pause).expect("pause");
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("the pause ends the gate's wait");
    assert_eq!(paused.done, 1);
    h.send(Control::Abort(AbortMode::CancelUpdate))
        .expect("abort");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("the abort ends the rollout");
    let RolloutState::Aborted { reason } = &end.state else {
        panic!("{:?}", end.state);
    };
    assert!(reason.starts_with("rolled back"), "{reason}");
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    assert_no_release_after_stop("gate", &plan, &journal);
    assert_eq!(
        releases(&journal).len(),
        1,
        "one node released before the pause"
    );
    let images = env.member_images(&target).await;
    assert!(
        images.values().all(|i| i == "img-v1"),
        "rolled back: {images:?}"
    );
    env.delete(&target).await;
    sim.shutdown().await;
}

/// 20 node groups, two starts of each at the same moment from two machines (journals and
/// driver locks in different directories: nothing shared but Heat). Both may pass the
/// in-progress check and both PATCH; Heat keeps the later update, whose marker is then on
/// the stack. Exactly one rollout of each pair completes (every member at its image); the
/// other is refused, or ends as superseded before releasing anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_pairs_from_two_machines_heat_keeps_one() {
    let (sim, conn) = sim_group::connected(SimOptions::fast("empty", SPEED)).await;
    // Each Env has its own directory: its own journal and driver locks, as a machine.
    let (here, there) = (pair_env(&conn), pair_env(&conn));
    let names: Vec<String> = (0..20).map(|i| format!("twin{i}")).collect();
    let targets: Vec<NodeGroupTarget> =
        futures::future::join_all(names.iter().map(|n| here.create(n, 2))).await;
    let mut pairs = Vec::new();
    for t in &targets {
        let members = here.member_names(t).await;
        let a = here.plan(t, &members, "img-a", RolloutOptions::default(), &[]);
        let b = there.plan(t, &members, "img-b", RolloutOptions::default(), &[]);
        pairs.push((a, b));
    }
    let pairs = pairs
        .into_iter()
        .map(|(a, b)| ((a, here.ctx.clone()), (b, there.ctx.clone())));
    // The second start of each pair is another process: its own connection.
    let other = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect to the simulator");
    let results = start_pairs(
        (&conn, &other),
        here.engine_options(HookSet::default()),
        pairs,
    )
    .await;
    let (mut raced, mut refused) = (0, 0);
    for (a, b, ra, rb) in results {
        let label = a.target.label();
        let mut ends = Vec::new();
        for (plan, r) in [(a, ra), (b, rb)] {
            match r {
                Ok(h) => {
                    let end = tokio::time::timeout(here.timeout, h.wait())
                        .await
                        .unwrap_or_else(|_| panic!("{label}: {} never ended", plan.id));
                    ends.push((plan, Some(end)));
                }
                Err(e) => {
                    assert_eq!(e.kind, ErrorKind::Refused, "{label}: {e}");
                    assert!(
                        e.message.contains("IN_PROGRESS")
                            || e.message.contains("superseded")
                            || e.message.contains("being prepared"),
                        "{label}: {e}"
                    );
                    ends.push((plan, None));
                }
            }
        }
        let completed: Vec<&RolloutPlan> = ends
            .iter()
            .filter(|(_, e)| {
                e.as_ref()
                    .is_some_and(|s| s.state == RolloutState::Completed)
            })
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            completed.len(),
            1,
            "{label}: {:#?}",
            ends.iter()
                .map(|(p, e)| (&p.id, e.as_ref().map(|s| s.state.label())))
                .collect::<Vec<_>>()
        );
        let winner = completed[0].clone();
        let images = here.member_images(&winner.target).await;
        assert!(
            images.values().all(|i| *i == winner.image),
            "{label}: {images:?}"
        );
        // Nothing left behind: the winner did not take the loser's hooks for the stack's.
        let left = here
            .heat
            .get_environment_hooks(&winner.stack)
            .await
            .expect("environment")
            .paths_with("pre-update");
        assert!(
            left.is_empty(),
            "{label}: hooks left after the race: {left:?}"
        );
        for (plan, end) in &ends {
            if plan.id == winner.id {
                continue;
            }
            match end {
                None => refused += 1,
                Some(s) => {
                    raced += 1;
                    assert!(
                        matches!(&s.state, RolloutState::EndedElsewhere { reason } if reason.contains("superseded")),
                        "{label}: the loser ended {:?}",
                        s.state
                    );
                }
            }
            // The loser released nothing: its journal has no release.
            let env = if plan.image == "img-a" { &here } else { &there };
            let released = env
                .ctx
                .journal
                .rollout_entries(&plan.id)
                .expect("journal")
                .iter()
                .filter(|e| e.action == "rollout.release")
                .count();
            assert_eq!(released, 0, "{label}: the loser released {released}");
        }
    }
    eprintln!(
        "covered: 20 pairs from two machines: one completed each time; the other refused \
         {refused} times, superseded after both PATCHes {raced} times"
    );
    for t in &targets {
        here.delete(t).await;
    }
    sim.shutdown().await;
}

/// A rollout started here whose driver died is taken over by another machine (nothing
/// shared but Heat; here the same host name, as two operators' state directories on one
/// bastion), whose driver releases members and dies too. A resume here must not take the
/// rollout as this machine's own because its marker names this host: Heat shows members
/// released that this journal never released, so the take-over is refused until the
/// operator says so (was: taken over silently, while the other driver may still run). Once
/// allowed, it completes, each member updated once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_after_another_machine_released_members_asks_first() {
    use caldera::rollout::engine::{self, TakeOver};
    let (sim, conn) = sim_group::connected(SimOptions::fast("empty", SPEED)).await;
    let (here, there) = (pair_env(&conn), pair_env(&conn));
    let target = here.create("relay", 6).await;
    let members = here.member_names(&target).await;
    let since = here.event_mark(&target).await;
    let plan = here.plan(&target, &members, "img-v2", RolloutOptions::default(), &[]);
    let mut h = here.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(here.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("one done in time");
    h.kill().await;
    let resume = || {
        vec![Control::Resume {
            parameters: Default::default(),
        }]
    };
    // A skip asked here with no driver here is recorded for the next driver here: the
    // other machine's never reads it.
    let skipped = plan.batches[2][0].clone();
    let asked = caldera::rollout::control::ask(
        &here.heat,
        &here.ctx,
        &plan,
        &Control::Skip(skipped.clone()),
        here.engine_options(HookSet::default()),
    )
    .await
    .expect("recorded");
    assert_eq!(asked, None, "nobody drives here: recorded, not asked");
    // The other machine finds the rollout from Heat alone and drives it a while.
    let found = caldera::rollout::control::find_rollout(&there.heat, &there.ctx, &target)
        .await
        .expect("read from Heat")
        .expect("the rollout, by its marker");
    assert_eq!(found.id, plan.id);
    let mut h2 = engine::reattach(
        there.heat.clone(),
        there.ctx.clone(),
        found,
        there.engine_options(HookSet::default()),
        resume(),
        TakeOver::AnyMachine,
    )
    .await
    .expect("taken over there");
    tokio::time::timeout(here.timeout, h2.wait_for(|s| s.done >= 3))
        .await
        .expect("three done in time");
    h2.kill().await;
    let released_there: std::collections::BTreeSet<String> = there
        .ctx
        .journal
        .rollout_entries(&plan.id)
        .expect("journal")
        .iter()
        .filter(|e| {
            e.action == "rollout.release" && e.outcome == caldera::journal::Outcome::Started
        })
        .map(|e| plan.member_of_label(&e.target))
        .collect();
    assert!(
        !released_there.is_empty(),
        "the other machine released none"
    );

    let back = engine::find_active(&here.ctx.journal, &target.label())
        .expect("journal")
        .expect("still running, by this machine's journal");
    let others = engine::released_elsewhere(&here.heat, &here.ctx.journal, &back)
        .await
        .expect("read");
    let others: std::collections::BTreeSet<String> = others.into_iter().collect();
    assert!(
        released_there.is_subset(&others),
        "{released_there:?} not in {others:?}"
    );
    // Heat updated the member skipped here: Heat's word wins (was: `skipped 1` beside
    // `new` for it).
    let seen = engine::observe_status(&here.heat, &here.ctx.journal, &back)
        .await
        .expect("status");
    let row = seen.nodes.iter().find(|n| n.name == skipped).expect("row");
    assert_eq!(
        row.phase,
        caldera::rollout::progress::NodePhase::Done,
        "{:#?}",
        seen.lines()
    );
    // What this machine says and does while that driver may still release (was: "paused:
    // nobody releases its members"; a pause "nothing is being released"; an abort
    // "aborted" while the other driver released 5 more nodes).
    let words = seen.lines().join("\n");
    assert!(!words.contains("nobody releases"), "{words}");
    assert!(words.contains("released by a driver elsewhere"), "{words}");
    for control in [
        Control::Pause,
        Control::Abort(caldera::rollout::AbortMode::LeavePaused),
    ] {
        let before = here.ctx.journal.read_all().expect("journal").len();
        let refused = caldera::rollout::control::ask(
            &here.heat,
            &here.ctx,
            &back,
            &control,
            here.engine_options(HookSet::default()),
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("{control:?}: taken as if nobody else drove"));
        assert!(
            refused.message.contains("a driver elsewhere may")
                && refused.message.contains("rollout abort --rollback"),
            "{}",
            refused.message
        );
        let said = here.ctx.journal.read_all().expect("journal");
        assert!(
            said[before..]
                .iter()
                .all(|e| !matches!(e.outcome, caldera::journal::Outcome::Ok)),
            "{control:?} journaled as done: {:?}",
            &said[before..]
        );
    }
    let refused = engine::reattach(
        here.heat.clone(),
        here.ctx.clone(),
        back.clone(),
        here.engine_options(HookSet::default()),
        resume(),
        TakeOver::ThisMachine,
    )
    .await
    .err()
    .expect("asks first");
    assert!(
        refused
            .message
            .contains("released by a driver this machine's journal does not know"),
        "{}",
        refused.message
    );
    let h3 = engine::reattach(
        here.heat.clone(),
        here.ctx.clone(),
        back,
        here.engine_options(HookSet::default()),
        resume(),
        TakeOver::AnyMachine,
    )
    .await
    .expect("taken over once allowed");
    let end = tokio::time::timeout(here.timeout, h3.wait())
        .await
        .expect("ends in time");
    scenarios::assert_completed_and_unhooked(&here, &target, &end).await;
    let windows = scenarios::update_windows(&here.group_events(&target, since).await);
    for m in &members {
        assert_eq!(
            windows.get(m).map(|w| w.2),
            Some(1),
            "member {m} updated once"
        );
    }
    sim.shutdown().await;
}
