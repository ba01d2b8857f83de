//! A rollout of one group that holds another group of the same stack too (`--also`), on the
//! simulator's Magnum layout edited so that masters and minions boot one image parameter
//! (scenario `magnum-one-image`: an update of `minion_image` changes both groups, and Heat,
//! unheld, updates every master at once). Checked from Heat's own events: never two masters
//! updating at once, each master and minion updated exactly once, masters before minions,
//! no hook left in the stack's environment after the end, also across a killed driver.

use crate::support::scenarios::{self, stack_events, Env};
use crate::support::sim_group;
use caldera::api::heat::HeatClient;
use caldera::drivers::any_group::{group_members, group_target};
use caldera::drivers::heat_native::group_stack_of;
use caldera::lifecycle::HookSet;
use caldera::model::StackRef;
use caldera::parameter_value::ParameterValue;
use caldera::rollout::engine::{self, find_active, EngineStep, Probe, StepProbe};
use caldera::rollout::heat_reader::newest_event;
use caldera::rollout::{RolloutOptions, RolloutPlan, RolloutState};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The cluster stack of `one-image` and the simulator's Heat.
async fn one_image() -> (caldera::sim::SimHandle, Env, StackRef) {
    let (sim, conn, stack) = sim_group::one_image_cluster().await;
    let env = Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    );
    (sim, env, stack)
}

async fn mark(heat: &HeatClient, group: &StackRef) -> Option<String> {
    newest_event(heat, group)
        .await
        .expect("newest event")
        .map(|(id, _)| id)
}

/// The rollout of `kube_minions` to `fedora-coreos-40` holding `kube_masters` before them,
/// one member per batch.
async fn minions_holding_masters(heat: &HeatClient, stack: &StackRef) -> RolloutPlan {
    let masters = group_members(heat, stack, "kube_masters")
        .await
        .expect("masters");
    let minions = group_members(heat, stack, "kube_minions")
        .await
        .expect("minions");
    let set = [(
        "minion_image".to_string(),
        ParameterValue::text("fedora-coreos-40"),
    )]
    .into();
    let mut plan = RolloutPlan::for_group(
        group_target(stack, "kube_minions"),
        stack.clone(),
        "kube_minions",
        &minions,
        RolloutOptions::default(),
        set,
    );
    plan.hold_also("kube_masters", &masters, false);
    plan
}

/// A probe that holds the engine forever at `step` (the test then kills it there), saying
/// so once.
struct HaltAt(EngineStep, Arc<Notify>);

impl StepProbe for HaltAt {
    fn at(&self, step: EngineStep, _member: Option<&str>) -> BoxFuture<'static, ()> {
        if step == self.0 {
            self.1.notify_one();
            futures::future::pending().boxed()
        } else {
            futures::future::ready(()).boxed()
        }
    }
}

/// Where the driver that took the rollout over from another machine is killed.
#[derive(Clone, Copy, PartialEq)]
enum TakeOverKill {
    /// Never: it runs to the end.
    None,
    /// Once its take-over is journaled, before it releases anything (its first
    /// `BeforeRelease`); a third driver on the same machine then finishes the rollout.
    BeforeFirstRelease,
}

/// The rollout of `kube_minions` to `fedora-coreos-40` holding `kube_masters` too, before
/// the minions (`--also`) or `after` them (`--also-after`); when `kill_after` is given, its
/// driver is killed once that many members are done and another machine takes it over from
/// Heat alone (its own journal), that driver killed too as `takeover_kill` says.
async fn held_masters_scenario(
    kill_after: Option<usize>,
    after: bool,
    takeover_kill: TakeOverKill,
) {
    let (sim, env, stack) = one_image().await;
    let heat = &env.heat;
    let masters = group_members(heat, &stack, "kube_masters")
        .await
        .expect("masters");
    let minions = group_members(heat, &stack, "kube_minions")
        .await
        .expect("minions");
    assert_eq!((masters.len(), minions.len()), (3, 4));
    let masters_stack = group_stack_of(heat, &stack, "kube_masters")
        .await
        .expect("rg");
    let minions_stack = group_stack_of(heat, &stack, "kube_minions")
        .await
        .expect("rg");
    // The operator's own guard on the masters, there before the rollout: its end leaves it,
    // also when another machine took the rollout over from Heat alone (was: taken out with
    // the rollout's hooks, which look the same in the environment).
    sim.with_world(|w| {
        let ix = w.find_stack(&stack.id).expect("stack");
        let s = w.stack_mut(ix).expect("stack");
        s.environment["resource_registry"]["resources"]["kube_masters"]["*"] =
            serde_json::json!({"hooks": ["pre-delete"]});
        // The operator's own tag where another machine takes over: the end then takes the
        // marker off (a stack with no tag of its own keeps it alone, as the run to the end
        // below shows).
        if kill_after.is_some() {
            s.tags = vec!["owner=ops".into()];
        }
    });
    let (m_mark, w_mark) = (
        mark(heat, &masters_stack).await,
        mark(heat, &minions_stack).await,
    );
    let set = [(
        "minion_image".to_string(),
        ParameterValue::text("fedora-coreos-40"),
    )]
    .into();
    let options = RolloutOptions {
        batch_size: 2,
        ..RolloutOptions::default()
    };
    let mut plan = RolloutPlan::for_group(
        group_target(&stack, "kube_minions"),
        stack.clone(),
        "kube_minions",
        &minions,
        options,
        set,
    );
    plan.hold_also("kube_masters", &masters, after);
    let lines = plan.lines().join("\n");
    let when = if after { "after" } else { "before" };
    assert!(
        lines.contains(&format!(
            "group kube_masters (3 member(s): 0, 1, 2): held by caldera, one at a time, \
             {when} kube_minions"
        )),
        "{lines}"
    );
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    // Another machine: nothing shared with the first but Heat (a journal of its own).
    let away_dir = tempfile::tempdir().expect("dir");
    let away = caldera::drivers::apply::ActionContext {
        journal: caldera::journal::Journal::open(away_dir.path().join("journal.jsonl")),
        ..env.ctx.clone()
    };
    let end = match kill_after {
        None => tokio::time::timeout(env.timeout, h.wait())
            .await
            .expect("ends in time"),
        Some(n) => {
            tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= n))
                .await
                .expect("members done in time");
            h.kill().await;
            let found = find_active(&env.ctx.journal, &plan.target.label())
                .expect("journal")
                .expect("an active rollout");
            // The journal's plan holds the group held too, and what its hook path held.
            let held: Vec<(&str, bool)> = found
                .also
                .iter()
                .map(|h| (h.path.as_str(), h.hooks_before.is_some()))
                .collect();
            assert_eq!(held, [("kube_masters", true)]);
            let status = engine::observe_status(heat, &env.ctx.journal, &found)
                .await
                .expect("status");
            assert_eq!(status.nodes.len(), 7, "{:#?}", status.lines());
            // The other machine reads the rollout from Heat alone (marker, held group's
            // tag, hooks), and what it sets: the keys from its start's tag, the values from
            // the stack's parameters as Heat shows them. Heat's marker read as a third
            // machine's: a take-over is refused unless the operator said yes, before
            // anything is journaled or sent.
            let mut found = caldera::rollout::control::find_rollout(heat, &away, &plan.target)
                .await
                .expect("read from Heat")
                .expect("the rollout, from Heat");
            assert_eq!(found.id, plan.id);
            // Its options too, from their tag (was: the defaults, no gate, one at a time).
            assert_eq!(found.options, plan.options);
            // Named by what it sets (was: "an update started elsewhere", with nothing to
            // carry it on by).
            assert_eq!(found.extra_parameters, plan.extra_parameters);
            assert_eq!(found.image, "minion_image=fedora-coreos-40");
            found.started_on = Some("ops-elsewhere".into());
            let before = env.ctx.journal.read_all().expect("journal").len();
            let refused = engine::reattach(
                heat.clone(),
                away.clone(),
                found.clone(),
                env.engine_options(HookSet::default()),
                Vec::new(),
                engine::TakeOver::ThisMachine,
            )
            .await
            .err()
            .expect("refused");
            assert!(
                refused.message.contains("started on ops-elsewhere")
                    && refused
                        .message
                        .contains("two drivers release two nodes at once"),
                "{}",
                refused.message
            );
            assert_eq!(env.ctx.journal.read_all().expect("journal").len(), before);
            let said: Vec<(String, bool)> = away
                .journal
                .read_all()
                .expect("journal")
                .into_iter()
                .map(|e| {
                    let refused = matches!(e.outcome, caldera::journal::Outcome::Refused { .. });
                    (e.action, refused)
                })
                .collect();
            assert_eq!(
                said,
                [("rollout.reattach".to_string(), true)],
                "only the refusal"
            );
            // Taken over by a resume with no values: the rollout keeps its name (was:
            // "to : completed").
            let name = found.image.clone();
            let halted = Arc::new(Notify::new());
            let mut options = env.engine_options(HookSet::default());
            if takeover_kill == TakeOverKill::BeforeFirstRelease {
                options.probe = Probe(Some(Arc::new(HaltAt(
                    EngineStep::BeforeRelease,
                    halted.clone(),
                ))));
            }
            let resume = || {
                vec![caldera::rollout::Control::Resume {
                    parameters: Default::default(),
                }]
            };
            let mut h2 = engine::reattach(
                heat.clone(),
                away.clone(),
                found,
                options,
                resume(),
                engine::TakeOver::AnyMachine,
            )
            .await
            .expect("reattach");
            if takeover_kill == TakeOverKill::BeforeFirstRelease {
                tokio::time::timeout(env.timeout, halted.notified())
                    .await
                    .expect("the take-over reaches its first release");
                h2.kill().await;
                // The machine that took it over knows the rollout from its own journal now
                // (its take-over journaled the plan read from Heat), though it released
                // nothing: a restart there resumes it, holding the masters still.
                let again = find_active(&away.journal, &plan.target.label())
                    .expect("journal")
                    .expect("active in the journal of the machine that took it over");
                assert_eq!(again.id, plan.id);
                assert_eq!(again.options, plan.options);
                let held: Vec<&str> = again.also.iter().map(|h| h.path.as_str()).collect();
                assert_eq!(held, ["kube_masters"]);
                let released_there = away
                    .journal
                    .read_all()
                    .expect("journal")
                    .iter()
                    .filter(|e| e.action == "rollout.release")
                    .count();
                assert_eq!(released_there, 0, "killed before its first release");
                h2 = engine::reattach(
                    heat.clone(),
                    away.clone(),
                    again,
                    env.engine_options(HookSet::default()),
                    resume(),
                    engine::TakeOver::AnyMachine,
                )
                .await
                .expect("reattach after the killed take-over");
            }
            let end = tokio::time::timeout(env.timeout, h2.wait())
                .await
                .expect("ends in time");
            assert!(!name.is_empty());
            assert_eq!(end.image, name, "{:#?}", end.lines());
            // The machine that finished it finds it in its own journal afterwards (its
            // take-over journaled the plan read from Heat).
            let latest = engine::find_latest(&away.journal, &plan.target.label())
                .expect("journal")
                .expect("the rollout, in the journal of the machine that took it over");
            assert_eq!(latest.id, plan.id);
            assert!(find_active(&away.journal, &plan.target.label())
                .expect("journal")
                .is_none());
            first_machine_finds_it_ended_elsewhere(heat, &env, &plan).await;
            end
        }
    };
    assert_eq!(end.state, RolloutState::Completed, "{:#?}", end.lines());
    assert_eq!((end.nodes.len(), end.done), (7, 7), "{:#?}", end.lines());
    assert_eq!(env.settle(&stack).await, "UPDATE_COMPLETE");
    assert_releases_journaled_as_sent(
        &[&env.ctx.journal, &away.journal],
        &masters_stack,
        &minions_stack,
    );
    let hooks = heat
        .get_environment_hooks(&stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "hooks left: {hooks:?} ({:?})",
        end.hooks_left
    );
    assert_eq!(
        hooks.hooks_at(&["kube_masters", "*"]),
        Some(&["pre-delete".to_string()][..]),
        "the operator's own hook: {hooks:?}"
    );
    // Nor its options' tag, nor its held groups': a stack whose only tags are the
    // rollout's keeps its marker alone (Heat cannot PATCH tags back to none), naming the
    // last rollout (`tags_without_marker`).
    let tags = heat.get_stack(&stack, false).await.expect("stack").tags;
    assert!(
        !tags.iter().any(|t| {
            use caldera::rollout::plan::{HELD_PREFIX, OPTIONS_PREFIX};
            t.starts_with(OPTIONS_PREFIX) || t.starts_with(HELD_PREFIX)
        }),
        "tags left: {tags:?}"
    );
    scenarios::assert_masters_one_at_a_time(
        (
            &masters,
            &stack_events(heat, &masters_stack, m_mark.as_deref()).await,
        ),
        (
            &minions,
            &stack_events(heat, &minions_stack, w_mark.as_deref()).await,
        ),
        !after,
    );
    sim.shutdown().await;
}

/// The machine whose driver was killed comes back after another machine drove the rollout
/// to its end: its resume drives nothing and journals the rollout over, from Heat's facts
/// (the marker gone, the stack settled), not from its own journal, which still says it runs
/// (was: taken over, resumed, then "failed: superseded: Heat now runs the update of an update
/// without a rollout marker").
async fn first_machine_finds_it_ended_elsewhere(heat: &HeatClient, env: &Env, plan: &RolloutPlan) {
    assert_eq!(env.settle(&plan.stack).await, "UPDATE_COMPLETE");
    let here = find_active(&env.ctx.journal, &plan.target.label())
        .expect("journal")
        .expect("still running, by this machine's journal");
    let before = env.ctx.journal.read_all().expect("journal").len();
    let refused = engine::reattach(
        heat.clone(),
        env.ctx.clone(),
        here.clone(),
        env.engine_options(HookSet::default()),
        vec![caldera::rollout::Control::Resume {
            parameters: Default::default(),
        }],
        engine::TakeOver::ThisMachine,
    )
    .await
    .err()
    .expect("nothing to resume");
    assert!(
        refused.message.contains("ended elsewhere: Heat's stack")
            && refused.message.contains("UPDATE_COMPLETE")
            && refused.message.ends_with("nothing was sent"),
        "{}",
        refused.message
    );
    let said: Vec<String> = env.ctx.journal.read_all().expect("journal")[before..]
        .iter()
        .map(|e| e.action.clone())
        .collect();
    assert_eq!(
        said,
        [engine::ENDED_ELSEWHERE],
        "the end alone, no take-over"
    );
    assert!(find_active(&env.ctx.journal, &plan.target.label())
        .expect("journal")
        .is_none());
    let status = engine::observe_status(heat, &env.ctx.journal, &here)
        .await
        .expect("status");
    let RolloutState::EndedElsewhere { reason } = &status.state else {
        panic!("{:#?}", status.lines());
    };
    assert!(
        reason.contains("no longer carries this rollout's marker"),
        "{reason}"
    );
    assert!(
        !status.lines()[0].contains("failed"),
        "{:#?}",
        status.lines()
    );
}

/// Every release the journal records names the call Heat was sent: a master's hook is
/// cleared on the masters' nested stack under the member's own name, a minion's on the
/// minions' (was: a master's recorded on the minions' stack as `kube_masters/0`).
fn assert_releases_journaled_as_sent(
    journals: &[&caldera::journal::Journal],
    masters: &StackRef,
    minions: &StackRef,
) {
    let entries: Vec<_> = journals
        .iter()
        .flat_map(|j| j.read_all().expect("journal"))
        .collect();
    let mut seen = 0;
    for e in entries.iter().filter(|e| {
        e.action == "rollout.release" && e.outcome == caldera::journal::Outcome::Started
    }) {
        let (group, member) = match e.target.rsplit_once('/') {
            Some((g, m)) if g.ends_with("kube_masters") => (masters, m),
            Some((_, m)) => (minions, m),
            None => panic!("release of {}", e.target),
        };
        let want = format!(
            "/stacks/{}/{}/resources/{member}/signal",
            group.name, group.id
        );
        let paths: Vec<&str> = e.calls.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, [want.as_str()], "release of {}", e.target);
        seen += 1;
    }
    assert!(seen >= 7, "{seen} releases journaled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_also_holds_the_masters_one_at_a_time_before_the_minions() {
    held_masters_scenario(None, false, TakeOverKill::None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_also_after_holds_the_masters_one_at_a_time_after_the_minions() {
    held_masters_scenario(None, true, TakeOverKill::None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_also_held_masters_survive_a_killed_driver() {
    held_masters_scenario(Some(2), false, TakeOverKill::None).await;
}

/// The take-over itself killed between its journal entry and its first release: a restart
/// on the machine that took it over finishes it, each member updated once, nothing left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_also_held_masters_survive_a_take_over_killed_before_its_first_release() {
    held_masters_scenario(Some(2), false, TakeOverKill::BeforeFirstRelease).await;
}

/// A held rollout aborted with rollback once the first master is done: Heat rolls both
/// groups back through the hooks (cleared by the engine as Heat pauses each member), the
/// rollout ends aborted, and the stack's environment holds no hook of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_also_held_rollout_aborted_with_rollback_leaves_no_hook() {
    use caldera::rollout::{AbortMode, Control};
    let (sim, env, stack) = one_image().await;
    let heat = &env.heat;
    let plan = minions_holding_masters(heat, &stack).await;
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(env.timeout, h.wait_for(|s| s.done >= 1))
        .await
        .expect("a master done in time");
    h.send(Control::Abort(AbortMode::CancelUpdate))
        .expect("abort");
    let end = tokio::time::timeout(env.timeout, h.wait())
        .await
        .expect("ends in time");
    assert!(
        matches!(end.state, RolloutState::Aborted { .. }),
        "{:#?}",
        end.lines()
    );
    let settled = env.settle(&stack).await;
    assert_eq!(settled, "ROLLBACK_COMPLETE", "{:#?}", end.lines());
    let hooks = heat
        .get_environment_hooks(&stack)
        .await
        .expect("environment");
    assert!(
        hooks.paths_with("pre-update").is_empty(),
        "hooks left: {hooks:?} ({:?})",
        end.hooks_left
    );
    sim.shutdown().await;
}

/// The simulator's layout does what the test relies on: unheld, an update of the one image
/// parameter updates every master at once (so the rollout above is what keeps them apart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_one_image_unheld_updates_the_masters_at_once() {
    let (sim, env, stack) = one_image().await;
    let heat = &env.heat;
    let masters_stack = group_stack_of(heat, &stack, "kube_masters")
        .await
        .expect("rg");
    let m_mark = mark(heat, &masters_stack).await;
    let update = caldera::api::heat::StackUpdate {
        parameters: [(
            "minion_image".to_string(),
            serde_json::json!("fedora-coreos-40"),
        )]
        .into(),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &update).await.expect("update");
    assert_eq!(env.settle(&stack).await, "UPDATE_COMPLETE");
    let events = stack_events(heat, &masters_stack, m_mark.as_deref()).await;
    let windows = scenarios::update_windows(&events);
    assert_eq!(windows.len(), 3, "{windows:?}");
    let latest_start = windows.values().map(|w| w.0).max().expect("masters");
    let earliest_end = windows.values().map(|w| w.1).min().expect("masters");
    assert!(latest_start < earliest_end, "{windows:?}");
    sim.shutdown().await;
}

/// The tester's case on Magnum's layout: while a master is being updated, someone runs
/// `openstack stack update --existing --parameter minion_image=…` (a PATCH that keeps the
/// rollout's marker and hooks). The rollout pauses before anything more is released, naming
/// Heat's values before and after; the resume drives the update Heat runs now, and every
/// master and minion ends on its image (was: released into it, and "completed … to
/// minion_image=fedora-coreos-40" with every member on the other image; or stuck with the
/// master "waiting" forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outside_update_while_a_master_updates_pauses_then_the_resume_drives_it() {
    let (sim, env, stack) = one_image().await;
    let heat = &env.heat;
    let plan = minions_holding_masters(heat, &stack).await;
    let mut h = env.start_rollout(&plan, HookSet::default()).await;
    tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| {
            s.nodes
                .iter()
                .any(|n| n.phase == caldera::rollout::NodePhase::Updating)
        }),
    )
    .await
    .expect("a master updating");
    let outside = caldera::api::heat::StackUpdate {
        parameters: [(
            "minion_image".to_string(),
            serde_json::json!("fedora-coreos-41"),
        )]
        .into(),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &outside)
        .await
        .expect("outside update");
    let paused = tokio::time::timeout(
        env.timeout,
        h.wait_for(|s| matches!(s.state, RolloutState::Paused { .. })),
    )
    .await
    .expect("paused on the other update");
    let RolloutState::Paused { reason } = &paused.state else {
        panic!("{:?}", paused.state)
    };
    assert!(
        reason.contains("Heat began another update of stack")
            && reason.contains("minion_image: fedora-coreos-40 → fedora-coreos-41"),
        "{reason}"
    );
    // A moment later: nothing released since the pause.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let journal = env.ctx.journal.rollout_entries(&plan.id).expect("journal");
    let pause_at = journal
        .iter()
        .position(|e| e.action == "rollout.pause")
        .expect("pause journaled");
    let after: Vec<&str> = journal[pause_at..]
        .iter()
        .filter(|e| e.action.starts_with("rollout.release") || e.action == "rollout.passthrough")
        .map(|e| e.target.as_str())
        .collect();
    assert!(after.is_empty(), "released after the pause: {after:?}");
    h.send(caldera::rollout::Control::Resume {
        parameters: Default::default(),
    })
    .expect("resume");
    let done = tokio::time::timeout(env.timeout, h.wait_for(|s| s.state.is_final())).await;
    let end = h.status();
    assert!(done.is_ok(), "not ended: {:#?}", end.lines());
    assert!(
        matches!(end.state, RolloutState::Completed),
        "{:#?}",
        end.lines()
    );
    assert_eq!(end.image, "minion_image=fedora-coreos-41");
    let images: Vec<(String, String)> = sim.with_world(|w| {
        w.groups
            .iter()
            .flat_map(|g| g.members.values())
            .map(|m| (m.server_name.clone(), m.image.clone()))
            .collect()
    });
    assert_eq!(images.len(), 7, "{images:?}");
    assert!(
        images.iter().all(|(_, i)| i == "fedora-coreos-41"),
        "{images:?}"
    );
    sim.shutdown().await;
}
