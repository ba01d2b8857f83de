//! Operator actions against the in-process simulator (fast clock): scaling, node-by-node
//! rollouts, failures, restarts and hooks. The same scenarios run on a real Heat in
//! `tests/real_heat/actions.rs`.

use crate::support::scenarios;
use crate::support::sim_group;

use crate::support::sim_group::sim_env;
use caldera::sim::SimOptions;
use scenarios::Env;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_scale_10_14_12_removing_named_members() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::scale_scenario(&env, "sc").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_rollout_batch_1_then_2_never_overlap() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::rollout_batches_scenario(&env, "rb").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_failure_pauses_then_resume_finishes() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::failure_then_resume_scenario(&env, "rf").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_killed_engine_reattaches_and_updates_each_member_once() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::kill_and_reattach_scenario(&env, "rk").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_an_outside_update_under_the_marker_pauses_the_rollout() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::outside_update_scenario(&env, "ro").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_an_outside_update_while_nobody_drives_is_said_before_a_resume_takes_it() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::outside_update_unseen_scenario(&env, "ru").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_failing_post_node_hook_pauses_at_that_node() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::failing_hook_scenario(&env, "rh").await;
    sim.shutdown().await;
}

/// The Magnum driver on the simulator's Magnum: resize removing a named node, then an
/// upgrade with max_batch_size, each planned with its exact call and journaled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_magnum_resize_and_upgrade() {
    use caldera::drivers::apply;
    use caldera::drivers::magnum::MagnumDriver;
    use caldera::drivers::{Driver, ScaleRequest};
    let (sim, conn) = sim_group::connected(SimOptions::fast("small", 50.0)).await;
    let env = Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    );
    let magnum = conn.magnum.clone().expect("the simulator has Magnum");
    let driver = MagnumDriver::new(magnum.clone(), Some(conn.heat.clone()));
    let target = driver
        .find_nodegroup("small", "default-worker")
        .await
        .expect("node group");
    assert_eq!(target.limits.max, Some(20));
    let before: Vec<String> = driver
        .list_nodes(&target)
        .await
        .expect("nodes from the group's stack")
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(before, ["0", "1", "2"]);
    // The default masters share the cluster stack with the workers (Magnum's layout): the
    // driver tells their groups apart.
    let masters = driver
        .find_nodegroup("small", "default-master")
        .await
        .expect("masters");
    assert_eq!(masters.stack, target.stack, "one cluster stack");
    let master_nodes = driver.list_nodes(&masters).await.expect("master nodes");
    assert_eq!(master_nodes.len(), 1);

    let plan = driver
        .plan_scale(
            &target,
            &ScaleRequest {
                count: Some(4),
                remove: vec!["1".into()],
            },
        )
        .await
        .expect("plan");
    assert_eq!((plan.from, plan.to), (3, 4));
    assert_eq!(plan.calls[0].method, "POST");
    assert!(plan.calls[0].path.ends_with("/actions/resize"));
    assert!(plan.calls[0].body.contains("\"nodes_to_remove\":[\"1\"]"));
    apply::scale(&env.ctx, &driver, &plan, None)
        .await
        .expect("resize");
    let cluster_id = target.cluster_id.clone().expect("uuid");
    let t0 = std::time::Instant::now();
    loop {
        let ng = magnum
            .get_nodegroup(&cluster_id, "default-worker")
            .await
            .expect("node group");
        if ng.status.is_complete() && ng.node_count == 4 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{ng:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after: Vec<String> = driver
        .list_nodes(&target)
        .await
        .expect("nodes")
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(after.len(), 4);
    assert!(!after.contains(&"1".to_string()), "{after:?}");
    let master_after = driver.list_nodes(&masters).await.expect("master nodes");
    assert_eq!(
        master_after, master_nodes,
        "the resize left the masters alone"
    );

    let up = driver
        .plan_upgrade(&target, "k8s-v1.30", 2)
        .await
        .expect("upgrade plan");
    assert!(up.calls[0].body.contains("\"max_batch_size\":2"));
    assert!(up.lines()[0].contains("2 node(s) at a time"));
    driver.apply_upgrade(&up).await.expect("upgrade accepted");
    let t0 = std::time::Instant::now();
    loop {
        let ng = magnum
            .get_nodegroup(&cluster_id, "default-worker")
            .await
            .expect("node group");
        if ng.status.is_complete() && ng.image.as_deref() == Some("fedora-coreos-40") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{ng:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let journal = env.ctx.journal.read_all().expect("journal");
    assert_eq!(journal.len(), 2, "scale started + ok");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_pause_from_journal_skip_and_resume() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::pause_skip_resume_scenario(&env, "rp").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_abort_with_rollback_rolls_back_through_the_hooks() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::abort_scenario(&env, "ab1", caldera::rollout::AbortMode::CancelUpdate).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_abort_without_rollback_says_what_remains() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::abort_scenario(
        &env,
        "ab2",
        caldera::rollout::AbortMode::CancelWithoutRollback,
    )
    .await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_abort_leaving_hooks_then_rollback_from_another_process() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::abort_scenario(&env, "ab3", caldera::rollout::AbortMode::LeavePaused).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_group_rollout_aborted_twice_keeps_its_values_and_names_what_heat_holds() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::aborted_twice_scenario(&env, "ab4").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_starts_from_two_machines_heat_keeps_one() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::two_machines_start_scenario(&env, "tm").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_concurrent_starts_one_driver() {
    let (sim, env) = sim_env(50.0).await;
    scenarios::concurrent_start_scenario(&env, "cs").await;
    sim.shutdown().await;
}

/// A group rollout (by what it sets) resumed with a fixed value after Heat's update failed
/// is named by the values in effect from then on (the resume's over the start's): by its
/// engine, and by `rollout status` read back from the journal afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_resumes_values_name_the_rollout_from_then_on() {
    use caldera::parameter_value::ParameterValue;
    use caldera::rollout::engine;
    use caldera::rollout::{Control, RolloutOptions, RolloutPlan, RolloutState};
    let (sim, env) = sim_env(50.0).await;
    let target = env.create("rv", 2).await;
    let stack = target.stack.clone().expect("stack");
    let members = env.member_names(&target).await;
    let group = caldera::drivers::any_group::group_target(&stack, "nodes");
    let set = [
        ("image".to_string(), ParameterValue::text("img-v2")),
        (
            "node_fail_index".to_string(),
            ParameterValue::json(1.into()),
        ),
    ]
    .into();
    let plan = RolloutPlan::for_group(
        group.clone(),
        stack,
        "nodes",
        &members,
        RolloutOptions::default(),
        set,
    );
    assert_eq!(plan.image, "image=img-v2 node_fail_index=1");
    let mut h = engine::start(
        env.heat.clone(),
        env.ctx.clone(),
        plan.clone(),
        env.engine_options(Default::default()),
        None,
    )
    .await
    .expect("start");
    tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("pauses on the failure");
    let fix = [(
        "node_fail_index".to_string(),
        ParameterValue::json((-1).into()),
    )]
    .into();
    h.send(Control::Resume { parameters: fix }).expect("resume");
    let watch = h.watch();
    let Ok(end) = tokio::time::timeout(env.timeout, h.wait()).await else {
        let last = watch.borrow().clone();
        panic!("no end: {:#?} {:#?}", last.state, last.lines());
    };
    assert_eq!(end.state, RolloutState::Completed, "{:#?}", end.lines());
    let in_effect = "image=img-v2 node_fail_index=-1";
    assert_eq!(end.image, in_effect);
    let latest = engine::find_latest(&env.ctx.journal, &group.label())
        .expect("journal")
        .expect("the rollout");
    let status = engine::observe_status(&env.heat, &env.ctx.journal, &latest)
        .await
        .expect("status");
    assert_eq!(status.image, in_effect, "{:#?}", status.lines());
    sim.shutdown().await;
}

/// Heat's cancel sent by another hand while the rollout waits in its gate (another
/// machine's `rollout abort --rollback`/`--cancel`, `openstack stack cancel`): the rollout
/// pauses saying so, releasing nothing more (was: "stack UPDATE_FAILED: …", read as the
/// update's failure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_cancel_from_elsewhere_is_said_as_such() {
    use caldera::api::heat::StackAction;
    use caldera::lifecycle::HookSet;
    use caldera::rollout::{AbortMode, Control, RolloutOptions, RolloutState};
    let (sim, env) = sim_env(50.0).await;
    for (cluster, action, words) in [
        (
            "cx1",
            StackAction::CancelWithoutRollback,
            "Heat's update was cancelled, not by this driver",
        ),
        (
            "cx2",
            StackAction::CancelUpdate,
            "Heat is rolling the update back, not at this driver's word",
        ),
    ] {
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
        let stack = target.stack.clone().expect("stack");
        env.heat.action(&stack, action).await.expect("cancel");
        let paused = tokio::time::timeout(
            env.timeout,
            h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
        )
        .await
        .expect("paused");
        let RolloutState::Paused { reason } = &paused.state else {
            panic!("{:?}", paused.state)
        };
        assert!(reason.contains(words), "{action:?}: {reason}");
        assert!(!reason.starts_with("stack UPDATE_FAILED"), "{reason}");
        let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
        let releases = journal
            .iter()
            .filter(|e| e.action == "rollout.release")
            .count();
        assert_eq!(releases, 2, "one release (started, ok) before the cancel");
        h.send(Control::Abort(AbortMode::LeavePaused))
            .expect("abort");
        tokio::time::timeout(env.timeout, h.wait())
            .await
            .expect("ends");
        env.delete(&target).await;
    }
    sim.shutdown().await;
}
