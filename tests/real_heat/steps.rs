//! The step-injection harness (`support::rollout_steps`) on the real Heat 27, at the end's
//! PATCH that takes the rollout's hooks and tags out (`EngineStep::Unhook`): the simulator
//! runs every step with every injection; here every injection meets Heat's own update
//! semantics at that step (a PATCH while another update runs, an update started by a tag
//! change, `updated_time` as Heat's clock sets it). Among them:
//!
//! - another machine's start replaces the marker the moment before the end's PATCH: nothing
//!   is sent, the other update keeps its marker and its hooks;
//! - the driver is killed there: the next one finishes the end;
//! - the journal breaks after the PATCH's entry: the PATCH is sent, and the status reads
//!   completed from Heat's facts (its update after the entry, hooks out);
//! - a pause, skip or abort asked once every member is done leaves it completed; a
//!   concurrent start is refused.

use crate::support::real_heat_env::{env, unique};
use crate::support::rollout_steps::{injections, run_case};
use caldera::rollout::engine::EngineStep;
use futures::StreamExt;

/// Cases at once: each is a small group's rollout on the one test Heat.
const AT_ONCE: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn every_injection_at_the_ends_patch_keeps_the_invariants() {
    let cases = injections();
    let total = cases.len();
    let results: Vec<_> = futures::stream::iter(cases.into_iter().map(|inject| {
        tokio::spawn(async move {
            run_case(
                env().await,
                unique("sunhook"),
                EngineStep::Unhook,
                1,
                inject,
            )
            .await
        })
    }))
    .buffer_unordered(AT_ONCE)
    .map(|r| r.expect("case task"))
    .collect()
    .await;
    for r in &results {
        eprintln!("covered: {:<40} {:>5.1}s -> {}", r.name, r.secs, r.end);
    }
    assert_eq!(results.len(), total);
}
