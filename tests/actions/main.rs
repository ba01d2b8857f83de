//! Operator actions against the in-process simulator (fast clock): scaling, node-by-node
//! rollouts, failures, restarts and hooks. The same scenarios run on a real Heat in
//! `tests/real_heat_actions.rs`.

mod scenarios;

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::cli::connect::simulator_cloud;
use caldera::sim::{self, SimHandle, SimOptions};
use scenarios::Env;
use std::time::Duration;

async fn sim_env() -> (SimHandle, Env) {
    let sim = sim::start(SimOptions {
        scenario: "empty".into(),
        speed: 50.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        create_median: Duration::from_secs(10),
        update_median: Duration::from_secs(10),
        ..SimOptions::default()
    })
    .await
    .expect("simulator starts");
    let conn = CloudConnection::from_cloud(&simulator_cloud(&sim), &ConnectOptions::default())
        .await
        .expect("connect to the simulator");
    let env = Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    );
    (sim, env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_scale_10_14_12_removing_named_members() {
    let (sim, env) = sim_env().await;
    scenarios::scale_scenario(&env, "sc").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_rollout_batch_1_then_2_never_overlap() {
    let (sim, env) = sim_env().await;
    scenarios::rollout_batches_scenario(&env, "rb").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_failure_pauses_then_resume_finishes() {
    let (sim, env) = sim_env().await;
    scenarios::failure_then_resume_scenario(&env, "rf").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_killed_engine_reattaches_and_updates_each_member_once() {
    let (sim, env) = sim_env().await;
    scenarios::kill_and_reattach_scenario(&env, "rk").await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_failing_post_node_hook_pauses_at_that_node() {
    let (sim, env) = sim_env().await;
    scenarios::failing_hook_scenario(&env, "rh").await;
    sim.shutdown().await;
}
