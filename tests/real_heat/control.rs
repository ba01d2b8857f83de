//! The rollout control plane on a real OpenStack Heat on 127.0.0.1 (Heat 27,
//! `OS::Heat::TestResource` machines, groups of 3-4): each abort mode ends in a defined
//! state that matches Heat (a `cancel_update` of a hooked update rolls back through the same
//! hooks, which the engine clears), concurrent starts leave one driver, and a killed driver
//! is seen as gone and taken over. The same scenarios run on the simulator in
//! `tests/offline/actions.rs`.
//!
//! `scripts/real-heat-suite.sh` runs these with `--ignored`; HEAT_URL must point at the Heat.

use crate::support::real_heat_env;
use crate::support::scenarios;

use caldera::rollout::AbortMode;
use real_heat_env::{env, unique};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_abort_with_rollback_rolls_back_through_the_hooks() {
    scenarios::abort_scenario(&env().await, &unique("crb"), AbortMode::CancelUpdate).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_abort_without_rollback_says_what_remains() {
    scenarios::abort_scenario(
        &env().await,
        &unique("ccw"),
        AbortMode::CancelWithoutRollback,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_abort_leaving_hooks_then_rollback_from_another_process() {
    scenarios::abort_scenario(&env().await, &unique("clp"), AbortMode::LeavePaused).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_group_rollout_aborted_twice_keeps_its_values_and_names_what_heat_holds() {
    scenarios::aborted_twice_scenario(&env().await, &unique("ca2")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_concurrent_starts_one_driver() {
    scenarios::concurrent_start_scenario(&env().await, &unique("ccs")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_starts_from_two_machines_heat_keeps_one() {
    scenarios::two_machines_start_scenario(&env().await, &unique("c2m")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_killed_driver_is_seen_gone_and_taken_over() {
    scenarios::kill_and_reattach_scenario(&env().await, &unique("ckr")).await;
}
