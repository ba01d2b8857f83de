//! Manual Heat controls driven through the console end to end: the real `caldera` binary in
//! a pseudo-terminal against an in-test simulator reached through a clouds.yaml, keys only.
//! From the stack list, `K` shows the check's plan (its exact call) and `y` sends it: Heat
//! ends CHECK_COMPLETE; on an update held on its hooks, `C` shows the cancel and `y` sends it:
//! Heat rolls back. Both are in the journal, the intent before the outcome. The console
//! quits with the terminal restored.

use crate::support::pty;

use crate::support::sim_group;

use caldera::api::heat::{HeatClient, StackUpdate};
use caldera::journal::{Journal, Outcome};
use caldera::model::StackRef;
use caldera::rollout::plan::hooks_environment;
use caldera::sim::SimOptions;
use pty::Console;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

const ENTER: &str = "\r";

fn status(rt: &tokio::runtime::Runtime, heat: &HeatClient, stack: &StackRef) -> String {
    rt.block_on(heat.get_stack(stack, false))
        .expect("stack show")
        .summary
        .status
        .raw
}

#[test]
fn check_and_cancel_from_the_stack_list() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (sim, heat, stack) = rt.block_on(sim_group::start_group(
        SimOptions::fast("empty", 50.0),
        "hx",
        3,
    ));
    let t0 = Instant::now();
    while status(&rt, &heat, &stack) != "CREATE_COMPLETE" {
        assert!(t0.elapsed() < pty::TIMEOUT, "never created");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir = tempfile::tempdir().expect("dir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("clouds.yaml");
    std::fs::set_permissions(&clouds, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    let journal = dir.path().join("journal.jsonl");
    let actions = dir.path().join("actions.toml");
    std::fs::write(&actions, "").expect("actions.toml");
    let mut c = Console::start_with(
        160,
        40,
        &[
            "--journal",
            journal.to_str().expect("utf-8"),
            "--actions-config",
            actions.to_str().expect("utf-8"),
        ],
        &[
            ("OS_CLIENT_CONFIG_FILE", clouds.as_os_str()),
            ("OS_CLOUD", OsStr::new("simcloud")),
        ],
        |home| {
            let d = home.join("config").join("caldera");
            std::fs::create_dir_all(&d).expect("config dir");
            std::fs::write(d.join("config.toml"), "refresh_secs = 0.3\n").expect("config");
        },
    );
    c.wait_for("the cluster list", |s| s.alternate && s.has("hx"));
    c.send(":stacks");
    c.press(ENTER, "the stack list", |s| {
        s.has("Stacks [") && s.has(&stack.name) && s.has("K check")
    });
    // The node group's stack is the only one: it is selected.
    c.press("K", "the check's plan", |s| {
        s.has(&format!("heat.check {}?", stack.name)) && s.has("/actions {\"check\":null}")
    });
    c.press("y", "the check sent and seen", |s| {
        s.has("accepted by Heat") && s.has("CHECK_COMPLETE")
    });
    assert_eq!(status(&rt, &heat, &stack), "CHECK_COMPLETE");

    // An update held on its hooks, sent from elsewhere: the console cancels it.
    let update = StackUpdate {
        parameters: [("image".to_string(), serde_json::json!("img-v2"))].into(),
        environment: Some(hooks_environment()),
        existing: true,
        ..Default::default()
    };
    rt.block_on(heat.update_stack(&stack, &update))
        .expect("update");
    c.wait_for("the update in the list", |s| s.has("UPDATE_IN_PROGRESS"));
    c.press("C", "the cancel's plan", |s| {
        s.has(&format!("heat.cancel {}?", stack.name)) && s.has("{\"cancel_update\":null}")
    });
    c.press("y", "the cancel sent", |s| {
        s.has("heat.cancel") && s.has("accepted by Heat")
    });
    // The rollback stops on the update's hooks: the test clears them as Heat reaches them.
    let t0 = Instant::now();
    loop {
        let now = status(&rt, &heat, &stack);
        if !now.ends_with("IN_PROGRESS") {
            assert_eq!(now, "ROLLBACK_COMPLETE");
            break;
        }
        assert!(t0.elapsed() < pty::TIMEOUT, "rollback never ended: {now}");
        rt.block_on(async {
            let pending = caldera::ops::hooks::pending_hooks(&heat, &stack)
                .await
                .unwrap_or_default();
            for h in pending {
                let _ = heat.unset_hook(&h.owner, &h.resource, &h.hook).await;
            }
        });
        std::thread::sleep(Duration::from_millis(50));
    }
    c.wait_for("the rollback in the list", |s| s.has("ROLLBACK_COMPLETE"));
    c.send("q");
    let exit = c.wait_exit();
    assert!(exit.success(), "{exit}");
    c.assert_restored();

    let entries = Journal::open(&journal).read_all().expect("journal");
    let seen: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            let o = match e.outcome {
                Outcome::Started => "started",
                Outcome::Ok => "ok",
                _ => "other",
            };
            (e.action.as_str(), o)
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("heat.check", "started"),
            ("heat.check", "ok"),
            ("heat.cancel", "started"),
            ("heat.cancel", "ok"),
        ]
    );
    rt.block_on(sim.shutdown());
}
