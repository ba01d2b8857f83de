//! Operator actions against a real OpenStack Heat on 127.0.0.1: the scenarios of
//! `tests/support/scenarios.rs` (also run on the simulator), on Heat 27 with
//! `OS::Heat::TestResource` machines.
//!
//! `scripts/real-heat-suite.sh` starts the server and runs these with `--ignored`, several at
//! once (stack names are unique per test); HEAT_URL must point at it. Groups are small (5-14
//! members, 1 s per machine action) because a standalone Heat on two cores takes seconds per
//! member.

use crate::support::real_heat_env;
use crate::support::scenarios;

use real_heat_env::{env, heat_url, unique};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_scale_10_14_12_removing_named_members() {
    scenarios::scale_scenario(&env().await, &unique("ascale")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_rollout_batch_1_then_2_never_overlap() {
    scenarios::rollout_batches_scenario(&env().await, &unique("abatch")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_failure_pauses_then_resume_finishes() {
    scenarios::failure_then_resume_scenario(&env().await, &unique("afail")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_killed_engine_reattaches_and_updates_each_member_once() {
    scenarios::kill_and_reattach_scenario(&env().await, &unique("akill")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_an_outside_update_under_the_marker_pauses_the_rollout() {
    scenarios::outside_update_scenario(&env().await, &unique("aout")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_an_outside_update_while_nobody_drives_is_said_before_a_resume_takes_it() {
    scenarios::outside_update_unseen_scenario(&env().await, &unique("aoun")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_failing_post_node_hook_pauses_at_that_node() {
    scenarios::failing_hook_scenario(&env().await, &unique("ahook")).await;
}

/// The headless commands on a real Heat, as an operator runs them: a rollout in batches of
/// two, then a scale removing a named node; both in the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_commands_rollout_and_scale() {
    let env = env().await;
    let cluster = unique("acli");
    let target = env.create(&cluster, 4).await;
    let dir = tempfile::tempdir().expect("dir");
    let journal = dir.path().join("journal.jsonl");
    // A named actions file must exist: an empty one is "no hooks".
    std::fs::write(dir.path().join("none.toml"), "").expect("none.toml");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
            .args(["--heat-url", &heat_url()])
            .env("CALDERA_JOURNAL", &journal)
            .env("CALDERA_ACTIONS_CONFIG", dir.path().join("none.toml"))
            .args(args)
            .output()
            .expect("run caldera");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}\n{stdout}\n{stderr}");
        stdout
    };
    let label = format!("{cluster}/workers");
    let out = run(&[
        "rollout",
        "start",
        &label,
        "--image",
        "img-v2",
        "--batch",
        "2",
        "--yes",
        "--poll-secs",
        "0.5",
    ]);
    assert!(out.contains("batch   2: 2, 3"), "{out}");
    assert!(out.contains(": completed"), "{out}");
    assert!(out.contains("new 4/4 updating 0"), "{out}");
    let images = env.member_images(&target).await;
    assert!(images.values().all(|i| i == "img-v2"), "{images:?}");

    let out = run(&["scale", &label, "--count", "3", "--remove", "0", "--yes"]);
    assert!(out.contains("remove 1: 0"), "{out}");
    assert_eq!(env.member_names(&target).await, ["1", "2", "3"]);

    let out = run(&["journal", "--format", "csv"]);
    assert!(out.contains(",rollout.finish,"), "{out}");
    assert!(out.contains(",scale,"), "{out}");
    env.delete(&target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn real_pause_from_journal_skip_and_resume() {
    scenarios::pause_skip_resume_scenario(&env().await, &unique("apause")).await;
}
