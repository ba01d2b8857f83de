//! The operator actions driven through the console end to end: the real `caldera` binary in
//! a pseudo-terminal against an in-test simulator (fast clock, reached through a
//! clouds.yaml), driven with keys only and checked against Heat's own record: scale
//! 10 -> 14 -> 12 removing two marked members, node-by-node upgrades with batch 1 then 2
//! that never overlap, a failed member that pauses the rollout until it is healed and
//! resumed, a console killed mid-rollout whose successor takes the rollout over, a failing
//! post-node hook, pause / skip / resume from the rollout view, and the guard rails
//! (production name, read-only). Each console quits with the terminal restored.
//!
//! The scenarios of `tests/offline/actions.rs` drive the same flows through the engine directly;
//! their Heat helpers (`Env`, `update_windows`, `assert_batches_sequential`) are reused here.

use crate::support::pty;

use crate::support::scenarios;
use crate::support::sim_group::{sim_env, write_clouds_yaml};

use caldera::drivers::NodeGroupTarget;
use caldera::rollout::{RolloutOptions, RolloutPlan};
use caldera::sim::SimHandle;
use pty::{Console, Screen};
use scenarios::{assert_batches_sequential, update_windows, Env};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const ENTER: &str = "\r";
const ESC: &str = "\x1b";
const TAB: &str = "\t";
const CTRL_U: &str = "\x15";

/// One simulator (fast clock, no clusters but the test's) with a clouds.yaml for it, the
/// journal and hooks file every console of the test shares, and a runtime for the
/// simulator and the test's own Heat calls (the test thread blocks on the terminal).
struct Cloud {
    rt: Runtime,
    sim: Option<SimHandle>,
    env: Env,
    clouds: PathBuf,
    journal: PathBuf,
    actions: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cloud {
    /// `caldera` is appended to the cloud as its `caldera:` settings (empty: none).
    fn start(caldera: &str) -> Cloud {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (sim, env) = rt.block_on(sim_env(50.0));
        let dir = tempfile::tempdir().expect("temp dir");
        let clouds = write_clouds_yaml(dir.path(), &sim, caldera);
        // It holds the simulator's password: private, as the console asks.
        std::fs::set_permissions(&clouds, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .expect("chmod clouds.yaml");
        let actions = dir.path().join("actions.toml");
        std::fs::write(&actions, "").expect("write actions.toml");
        Cloud {
            rt,
            sim: Some(sim),
            env,
            clouds,
            journal: dir.path().join("journal.jsonl"),
            actions,
            _dir: dir,
        }
    }

    fn sim(&self) -> &SimHandle {
        self.sim.as_ref().expect("simulator running")
    }

    /// A Heat-native node group `CLUSTER/workers` of `count` test machines on `img-v1`.
    fn create(&self, cluster: &str, count: u32) -> NodeGroupTarget {
        self.rt.block_on(self.env.create(cluster, count))
    }

    fn members(&self, t: &NodeGroupTarget) -> Vec<String> {
        self.rt.block_on(self.env.member_names(t))
    }

    fn images(&self, t: &NodeGroupTarget) -> std::collections::BTreeMap<String, String> {
        self.rt.block_on(self.env.member_images(t))
    }

    fn stack_status(&self, t: &NodeGroupTarget) -> String {
        let stack = t.stack.clone().expect("stack");
        self.rt.block_on(async {
            self.env
                .heat
                .get_stack(&stack, false)
                .await
                .expect("stack show")
                .summary
                .status
                .raw
        })
    }

    /// Polls Heat until `ok` holds for the node group's settled stack.
    fn wait_heat(&self, what: &str, t: &NodeGroupTarget, ok: impl Fn(&Cloud) -> bool) {
        let t0 = Instant::now();
        loop {
            let status = self.stack_status(t);
            if !status.ends_with("IN_PROGRESS") && ok(self) {
                return;
            }
            assert!(
                t0.elapsed() < pty::TIMEOUT,
                "timed out waiting in Heat for {what} (stack {status})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The console on this cloud, with the shared journal and hooks file, a fast rollout
    /// poll and a fast refresh.
    fn console(&self, extra: &[&str]) -> Console {
        let mut args: Vec<&str> = vec![
            "--journal",
            self.journal.to_str().expect("utf-8 path"),
            "--actions-config",
            self.actions.to_str().expect("utf-8 path"),
            "--rollout-poll-secs",
            "0.05",
        ];
        args.extend_from_slice(extra);
        Console::start_with(
            200,
            50,
            &args,
            &[
                ("OS_CLIENT_CONFIG_FILE", self.clouds.as_os_str()),
                ("OS_CLOUD", OsStr::new("simcloud")),
            ],
            |home| {
                let dir = home.join("config").join("caldera");
                std::fs::create_dir_all(&dir).expect("config dir");
                std::fs::write(dir.join("config.toml"), "refresh_secs = 0.3\n")
                    .expect("config.toml");
            },
        )
    }
}

impl Drop for Cloud {
    fn drop(&mut self) {
        if let Some(sim) = self.sim.take() {
            self.rt.block_on(sim.shutdown());
        }
    }
}

/// Quitting left the shell's screen as it was (as in `tests/console/console_e2e.rs`).
fn quit_restored(c: &mut Console) {
    c.send("q");
    expect_restored(c);
}

/// The console exits cleanly with the terminal as it was.
fn expect_restored(c: &mut Console) {
    let status = c.wait_exit();
    assert!(status.success(), "quit exit status {status}");
    c.assert_restored();
}

/// From the cluster list into `cluster`'s node groups, with `workers` selected.
fn open_nodegroups(c: &mut Console, cluster: &str) {
    c.wait_for("the cluster list with the cluster", |s| {
        s.alternate && s.has("Clusters [1]") && s.has(cluster)
    });
    c.press(ENTER, "the node groups", |s| {
        s.has(&format!("Node groups of {cluster}")) && s.has("workers")
    });
}

/// The rollout view's header line (the one holding `state `).
fn state_line(s: &Screen) -> String {
    s.line_with(" state ").unwrap_or_default().to_string()
}

/// The upgrade form filled in (image, batch size), the plan (`from` -> `image`, the
/// batches of `plan`) shown and confirmed; the rollout view opens.
fn upgrade(
    c: &mut Console,
    cluster: &str,
    from: &str,
    image: &str,
    batch: usize,
    plan: &RolloutPlan,
) {
    c.press("u", "the upgrade form", |s| {
        s.has(&format!("Upgrade {cluster}/workers")) && s.has("batch size")
    });
    c.send(image);
    c.send(TAB);
    c.send(CTRL_U);
    c.press(&batch.to_string(), "the batch size typed", |s| {
        s.line_with("batch size")
            .is_some_and(|l| l.contains(&format!("batch size       {batch} ")))
    });
    let want: Vec<String> = plan
        .batches
        .iter()
        .enumerate()
        .map(|(i, b)| format!("batch {:>3}: {}", i + 1, b.join(", ")))
        .collect();
    c.press(ENTER, "the upgrade plan", |s| {
        s.has(&format!("Upgrade {cluster}/workers?"))
            && s.has(&format!("image {from} -> {image}"))
            && want.iter().all(|w| s.has(w))
    });
    c.press("y", "the rollout view", |s| {
        s.has("Rollout of workers")
            && s.has("(driven here)")
            && s.has(&format!("image {from} → {image}"))
    });
}

fn wait_completed(c: &mut Console) -> Screen {
    c.wait_for("the rollout completed", |s| {
        state_line(s).contains("state completed") && s.has("new 6/6")
    })
}

/// The plan the console makes for these options (same members, same batching), so that
/// Heat's events can be checked against its batches.
fn expected_plan(cloud: &Cloud, t: &NodeGroupTarget, image: &str, batch: usize) -> RolloutPlan {
    let members = cloud.members(t);
    cloud.env.plan(
        t,
        &members,
        image,
        RolloutOptions {
            batch_size: batch,
            ..Default::default()
        },
        &[],
    )
}

// ------------------------------------------------------------------------------ tests

/// 10 -> 14 with the scale form, then 14 -> 12 removing the two marked members; the journal
/// view lists both scales.
#[test]
fn scale_form_then_remove_marked_members() {
    let cloud = Cloud::start("");
    let t = cloud.create("sc", 10);
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "sc");
    c.press("c", "the scale form", |s| {
        s.has("Scale sc/workers") && s.has("now 10")
    });
    c.send(CTRL_U);
    c.press("14", "14 typed", |s| {
        s.line_with("nodes").is_some_and(|l| l.contains("14"))
    });
    c.press(ENTER, "the scale plan", |s| {
        s.has_all(&[
            "Scale sc/workers?",
            "from 10 to 14 nodes",
            "add    4: 10, 11, 12, 13",
            "remove 0: -",
        ])
    });
    c.press("y", "the scale applied", |s| {
        s.has("scale of sc/workers applied")
    });
    cloud.wait_heat("14 members", &t, |cl| cl.members(&t).len() == 14);
    // Fresh after the action (#15), on the simulator's Heat: the dashboard's header and its
    // node group pane reach the new count and Heat's settled status with no key pressed.
    c.wait_for("the dashboard at 14 workers, settled", |s| {
        s.has("workers 14")
            && s.text.lines().any(|l| {
                !l.contains("masters")
                    && l.contains("workers")
                    && l.contains(" 14 ")
                    && l.contains("UPDATE_COMPLETE")
            })
    });
    let names = cloud.members(&t);
    let want: Vec<String> = (0..14).map(|i| i.to_string()).collect();
    assert_eq!(names, want);

    // The nodes pane: mark 3 and 7 (each found by a filter), remove them.
    c.press(ENTER, "the nodes", |s| s.has("Nodes of workers"));
    c.wait_for("14 nodes listed", |s| {
        s.has("Nodes of workers (worker) [14]")
    });
    for m in ["3", "7"] {
        c.send("/");
        c.send(CTRL_U);
        c.send(&format!("re:^{m} "));
        c.press(ENTER, "one node filtered", |s| {
            s.has("Nodes of workers (worker) [1/14]")
        });
        c.send(" ");
    }
    c.send("/");
    c.send(CTRL_U);
    let marked = c.press(ENTER, "the filter cleared, two marks", |s| {
        s.has("Nodes of workers (worker) [14]") && s.text.matches('●').count() >= 2
    });
    let marked_rows: Vec<&str> = marked.text.lines().filter(|l| l.contains('●')).collect();
    assert_eq!(marked_rows.len(), 2, "{}", marked.text);
    c.press("X", "the removal plan", |s| {
        s.has_all(&[
            "Scale sc/workers?",
            "from 14 to 12 nodes",
            "add    0: -",
            "remove 2: 3, 7",
        ])
    });
    c.press("y", "the removal applied", |s| {
        s.has("scale of sc/workers applied")
    });
    cloud.wait_heat("12 members", &t, |cl| cl.members(&t).len() == 12);
    let names = cloud.members(&t);
    let want: Vec<String> = (0..14)
        .filter(|i| *i != 3 && *i != 7)
        .map(|i| i.to_string())
        .collect();
    assert_eq!(names, want, "Heat kept exactly the unmarked members");

    c.send(":journal");
    c.press(ENTER, "the journal with both scales done", |s| {
        s.has("Journal [")
            && s.text
                .lines()
                .filter(|l| {
                    l.contains(" scale ") && l.contains(" sc/workers ") && l.contains(" ok ")
                })
                .count()
                == 2
    });
    quit_restored(&mut c);
}

/// Two upgrades of 6 members through the upgrade form, batch 1 then batch 2: the rollout
/// view reaches completed, and Heat's events show the batches one after another, every
/// member updated once per upgrade.
#[test]
fn upgrade_form_batch_1_then_2_never_overlap() {
    let cloud = Cloud::start("");
    let t = cloud.create("rb", 6);
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "rb");
    for (from, image, batch) in [("img-v1", "img-v2", 1usize), ("img-v2", "img-v3", 2)] {
        let since = cloud.rt.block_on(cloud.env.event_mark(&t));
        let plan = expected_plan(&cloud, &t, image, batch);
        upgrade(&mut c, "rb", from, image, batch, &plan);
        wait_completed(&mut c);
        cloud.wait_heat("every member on the image", &t, |cl| {
            cl.images(&t).values().all(|i| i == image)
        });
        let events = cloud.rt.block_on(cloud.env.group_events(&t, since));
        assert_batches_sequential(&plan, &events);
        let windows = update_windows(&events);
        for m in cloud.members(&t) {
            assert_eq!(windows.get(&m).map(|w| w.2), Some(1), "member {m} updates");
        }
        // Back to the node groups for the next one.
        c.press(ESC, "the node groups", |s| s.has("Node groups of rb"));
    }
    c.send(":journal");
    c.press(ENTER, "the journal with both rollouts", |s| {
        s.has("Journal [")
            && s.text
                .lines()
                .filter(|l| l.contains("rollout.start"))
                .count()
                == 2
            && s.text
                .lines()
                .filter(|l| l.contains("rollout.finish"))
                .count()
                == 2
    });
    quit_restored(&mut c);
}

/// Member 3 is made to fail (a simulator fault on its machine): the rollout pauses there
/// with the reason and leaves 4 and 5 alone; once healed, resume finishes it.
#[test]
fn failed_member_pauses_then_resume_finishes() {
    let cloud = Cloud::start("");
    let t = cloud.create("rf", 6);
    assert!(cloud
        .sim()
        .faults()
        .fail_node("rf-workers", 3, "No valid host was found."));
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "rf");
    let plan = expected_plan(&cloud, &t, "img-v2", 1);
    upgrade(&mut c, "rf", "img-v1", "img-v2", 1, &plan);
    let paused = c.wait_for("the rollout paused at node 3", |s| {
        state_line(s).contains("state paused: node 3 failed")
    });
    assert!(
        paused
            .line_with("No valid host was found")
            .is_some_and(|l| l.contains(" 3 ") && l.contains("failed")),
        "{}",
        paused.text
    );
    let images = cloud.images(&t);
    for m in ["0", "1", "2"] {
        assert_eq!(images[m], "img-v2", "member {m}");
    }
    for m in ["4", "5"] {
        assert_eq!(images[m], "img-v1", "member {m} was touched");
    }
    // A console that went on releasing would do it within a few of its 50 ms polls: for a
    // second (some twenty polls), 4 and 5 stay on the old image and the view stays paused.
    let window = Instant::now() + Duration::from_secs(1);
    while Instant::now() < window {
        let images = cloud.images(&t);
        assert!(
            images["4"] == "img-v1" && images["5"] == "img-v1",
            "{images:?}"
        );
        assert!(state_line(&c.screen()).contains("state paused"));
    }
    let journal = caldera::journal::Journal::open(&cloud.journal)
        .read_all()
        .expect("journal");
    assert!(
        !journal.iter().any(|e| e.action == "rollout.release"
            && (e.target.ends_with("/4") || e.target.ends_with("/5"))),
        "released past the failure"
    );

    assert!(cloud.sim().faults().heal_nodes("rf-workers"));
    c.send("R");
    wait_completed(&mut c);
    cloud.wait_heat("every member on img-v2", &t, |cl| {
        cl.images(&t).values().all(|i| i == "img-v2")
    });
    quit_restored(&mut c);
}

/// The console is killed (SIGKILL) mid-rollout; a new console finds the rollout under way
/// and not driven, takes it over with resume, and it finishes with every member updated
/// exactly once in Heat's events.
#[test]
fn killed_console_rollout_taken_over_by_a_new_one() {
    let cloud = Cloud::start("");
    let t = cloud.create("rk", 6);
    let since = cloud.rt.block_on(cloud.env.event_mark(&t));
    let plan = expected_plan(&cloud, &t, "img-v2", 1);
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "rk");
    upgrade(&mut c, "rk", "img-v1", "img-v2", 1, &plan);
    c.wait_for("two nodes done", |s| {
        s.line_with("  new ")
            .is_some_and(|l| l.contains("new 2/") || l.contains("new 3/"))
    });
    c.signal(libc::SIGKILL);
    c.wait_exit();
    let done_when_killed = cloud.images(&t).values().filter(|i| *i == "img-v2").count();
    assert!(done_when_killed < 6, "the rollout ended before the kill");

    let mut c2 = cloud.console(&[]);
    open_nodegroups(&mut c2, "rk");
    c2.press("o", "the rollout under way, not driven here", |s| {
        s.has("Rollout of workers")
            && s.has("not driven by this console")
            && !state_line(s).contains("completed")
    });
    c2.press("R", "the take-over confirmation", |s| {
        s.has_all(&["Take over this rollout?", "rk/workers"])
    });
    c2.send("y");
    c2.wait_for("taken over", |s| s.has("(driven here)"));
    wait_completed(&mut c2);
    cloud.wait_heat("every member on img-v2", &t, |cl| {
        cl.images(&t).values().all(|i| i == "img-v2")
    });
    let events = cloud.rt.block_on(cloud.env.group_events(&t, since));
    let windows = update_windows(&events);
    for m in cloud.members(&t) {
        assert_eq!(
            windows.get(&m).map(|w| w.2),
            Some(1),
            "member {m} updated once"
        );
    }
    assert_batches_sequential(&plan, &events);
    quit_restored(&mut c2);
}

/// A post-node hook failing for node 2 (from `--actions-config`) pauses the rollout at that
/// node; the nodes after it stay on the old image.
#[test]
fn failing_post_node_hook_pauses_at_that_node() {
    let cloud = Cloud::start("");
    std::fs::write(
        &cloud.actions,
        "[hooks]\npost_node = \"test \\\"$CALDERA_NODE_INDEX\\\" != 2\"\ntimeout_secs = 20\n",
    )
    .expect("actions.toml");
    let t = cloud.create("rh", 6);
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "rh");
    let plan = expected_plan(&cloud, &t, "img-v2", 1);
    upgrade(&mut c, "rh", "img-v1", "img-v2", 1, &plan);
    let paused = c.wait_for("paused by the hook", |s| {
        let l = state_line(s);
        l.contains("state paused") && l.contains("post_node hook exited with 1")
    });
    assert!(state_line(&paused).contains("/2"), "{}", paused.text);
    let images = cloud.images(&t);
    for m in ["3", "4", "5"] {
        assert_eq!(images[m], "img-v1", "member {m} was touched");
    }
    // The rollout is still driven here (paused): ctrl-c asks like `q`, `n` keeps it.
    const CTRL_C: &str = "\x03";
    c.press(CTRL_C, "the quit confirmation from ctrl-c", |s| {
        s.has("Quit with a rollout running?")
    });
    c.press("n", "the confirmation closed", |s| {
        !s.has("Quit with a rollout running?") && s.has("Rollout of workers")
    });
    // Quitting asks first, and says how to go on; a second ctrl-c quits.
    c.press("q", "the quit confirmation", |s| {
        s.has_all(&[
            "Quit with a rollout running?",
            "rh/workers",
            "rollout resume",
        ])
    });
    c.send(CTRL_C);
    expect_restored(&mut c);
}

/// On a production cloud the scale asks for the cluster name and refuses a wrong one (Heat
/// unchanged); with `--read-only` the scale key is refused with a message.
#[test]
fn guard_rails_production_name_and_read_only() {
    let cloud = Cloud::start("{production: true}");
    let t = cloud.create("pr", 3);
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "pr");
    c.press("c", "the scale form", |s| s.has("Scale pr/workers"));
    c.send(CTRL_U);
    c.send("4");
    c.press(ENTER, "the plan asking for the name", |s| {
        s.has("from 3 to 4 nodes") && s.has("type the cluster name 'pr'")
    });
    c.send("prod");
    c.press(ENTER, "the wrong name refused", |s| {
        s.has("'prod' is not the cluster name 'pr': nothing done")
    });
    c.press(ESC, "cancelled", |s| s.has("cancelled: nothing changed"));
    assert_eq!(cloud.members(&t).len(), 3);
    assert_eq!(
        cloud.stack_status(&t),
        "CREATE_COMPLETE",
        "Heat was asked to change"
    );
    quit_restored(&mut c);
    assert!(
        !cloud.journal.exists()
            || !std::fs::read_to_string(&cloud.journal)
                .expect("journal")
                .contains("\"scale\""),
        "a refused scale reached the operator"
    );

    let mut c = cloud.console(&["--read-only"]);
    open_nodegroups(&mut c, "pr");
    c.press("c", "the scale refused", |s| {
        s.has("scale refused: the console is read-only")
    });
    assert!(!c.screen().has("Scale pr/workers"), "the form opened");
    quit_restored(&mut c);
    assert_eq!(cloud.members(&t).len(), 3);
}

/// Pause from the rollout view, skip a node not yet released, resume: the rollout ends with
/// that node untouched in Heat and every other one updated.
#[test]
fn rollout_view_pause_skip_resume() {
    let cloud = Cloud::start("");
    let t = cloud.create("rp", 5);
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "rp");
    let plan = expected_plan(&cloud, &t, "img-v2", 1);
    upgrade(&mut c, "rp", "img-v1", "img-v2", 1, &plan);
    c.wait_for("the first node done", |s| {
        s.line_with("  new ").is_some_and(|l| !l.contains("new 0/"))
    });
    c.press("p", "paused by the operator", |s| {
        state_line(s).contains("state paused: paused by the operator")
    });
    // The fifth row of the nodes table is node 4, still pending.
    c.send("jjjj");
    c.press("x", "node 4 skipped", |s| {
        s.text
            .lines()
            .any(|l| l.starts_with("│  4 ") && l.contains(" skipped "))
    });
    c.send("R");
    // The skipped node stays on its hook and Heat's update waits on it: not completed.
    let end = c.wait_for("every other node new, the skipped one held", |s| {
        state_line(s).contains("state paused") && state_line(s).contains("skipped member")
    });
    assert!(
        end.line_with("  new ")
            .is_some_and(|l| l.contains("new 4/5 ") && l.contains("skipped 1")),
        "{}",
        end.text
    );
    let images = cloud.images(&t);
    assert_eq!(images["4"], "img-v1", "the skipped node was updated");
    for m in ["0", "1", "2", "3"] {
        assert_eq!(images[m], "img-v2", "member {m}");
    }
    quit_restored(&mut c);
}

/// Abort from the rollout view, the second of the three ways (`cancel_update`): the choice,
/// the confirmation, then Heat's rollback driven to its end (every rollback hook cleared);
/// the view ends on `aborted: rolled back`, Heat on ROLLBACK_COMPLETE with every node back on
/// its old image, and the journal records an abort, not a failure.
#[test]
fn rollout_view_abort_with_rollback_ends_rolled_back() {
    let cloud = Cloud::start("");
    let t = cloud.create("ra", 5);
    let mut c = cloud.console(&[]);
    open_nodegroups(&mut c, "ra");
    let plan = expected_plan(&cloud, &t, "img-v2", 1);
    upgrade(&mut c, "ra", "img-v1", "img-v2", 1, &plan);
    c.wait_for("the first node done", |s| {
        s.line_with("  new ").is_some_and(|l| !l.contains("new 0/"))
    });
    c.press("p", "paused by the operator", |s| {
        state_line(s).contains("state paused: paused by the operator")
    });
    c.press("A", "the three ways to abort", |s| {
        s.has("stop releasing") && s.has("cancel_update: Heat rolls") && s.has("cancel without")
    });
    c.press("2", "the confirmation", |s| {
        s.has("Abort the rollout?") && s.has("cancel_update: Heat rolls")
    });
    let end = c.press("y", "aborted, rolled back", |s| {
        state_line(s).contains("state rolled back")
    });
    assert!(!state_line(&end).contains("ETA"), "{}", end.text);
    cloud.wait_heat("the rollback", &t, |cl| {
        cl.stack_status(&t) == "ROLLBACK_COMPLETE"
    });
    let images = cloud.images(&t);
    assert!(images.values().all(|i| i == "img-v1"), "{images:?}");
    let entries = caldera::journal::Journal::open(&cloud.journal)
        .read_all()
        .expect("the journal parses");
    let last = entries
        .iter()
        .rev()
        .find(|e| e.action.starts_with("rollout."))
        .expect("rollout entries");
    assert_eq!(
        (last.action.as_str(), &last.outcome),
        ("rollout.abort", &caldera::journal::Outcome::Ok)
    );
    quit_restored(&mut c);
}
