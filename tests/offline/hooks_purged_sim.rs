//! Hook pauses whose events Heat purged (issue 15, item 2), on the in-process simulator
//! keeping few events per stack: members 0-2 of a 20-member group are held on `pre-update`
//! while the other 17 update, and their 34 events push the pause events out. The events
//! alone (all caldera and heatclient's `hook-poll` had) no longer show the pauses;
//! `pending_hooks` names the three as held, inferred, and stops when one is released.

use crate::support::sim_group;

use crate::support::cli::Caldera;
use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::api::heat::{EventQuery, HeatClient, SortDir, StackUpdate};
use caldera::model::StackRef;
use caldera::ops::hooks::{
    hook_event, paused_members, pending_hooks, update_began, with_inferred_members, HookEvidence,
    PendingHook,
};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, EventCursor, NodeUpdate};
use caldera::sim::{SimHandle, SimOptions};
use caldera::tui::state::store::build_tree;
use futures::StreamExt;
use std::path::Path;
use std::time::{Duration, Instant};

const MEMBERS: u32 = 20;

async fn start() -> (SimHandle, HeatClient, StackRef) {
    let mut opts = SimOptions::fast("empty", 50.0);
    opts.max_events_per_stack = 12;
    let (sim, heat, stack) = sim_group::start_group(opts, "ctl", MEMBERS).await;
    wait(&heat, &stack, "created", |s| s.is_none()).await;
    next_heat_second(&sim).await;
    (sim, heat, stack)
}

/// Waits (bounded) until the simulator's clock is a second past its newest event. Heat
/// stamps to the second, and a member last touched in the second its group's update began
/// cannot be told from one that update touched, so the inference leaves it out (it claims a
/// hold only where the listing shows the member untouched since). An operator's update
/// comes seconds after the create; the tests' came within the same simulated second when a
/// loaded machine delayed the simulator's tick (one member of 20 never held: 19 for ever).
async fn next_heat_second(sim: &SimHandle) {
    let t0 = Instant::now();
    while sim.with_world(|w| w.now() / 1000 <= w.last_event_ms / 1000) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the simulated clock stands still"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (bounded) until `done` says so of the stack's in-progress status (`None` when
/// settled) and the pending hooks.
async fn wait(
    heat: &HeatClient,
    stack: &StackRef,
    what: &str,
    done: impl Fn(Option<&str>) -> bool,
) {
    let t0 = Instant::now();
    loop {
        let d = heat.get_stack(stack, false).await.expect("show");
        let status = d.summary.status;
        if done(status.is_in_progress().then_some(status.raw.as_str())) {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "never {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every event of the tree Heat still has, with any hook in its reason.
async fn hook_events(heat: &HeatClient, stack: &StackRef) -> Vec<String> {
    hook_events_by_id(heat, stack)
        .await
        .into_iter()
        .map(|(_, reason)| reason)
        .collect()
}

/// [`hook_events`] with their ids, `(id, reason)`.
async fn hook_events_by_id(heat: &HeatClient, stack: &StackRef) -> Vec<(String, String)> {
    let events = heat
        .list_events_page(
            stack,
            &EventQuery {
                sort_dir: Some(SortDir::Desc),
                nested_depth: Some(3),
                ..Default::default()
            },
        )
        .await
        .expect("events");
    events
        .into_iter()
        .filter_map(|e| Some((e.id, e.status_reason?)))
        .filter(|(_, r)| hook_event(r, None).is_some())
        .collect()
}

/// `caldera heat hooks STACK` through a clouds.yaml naming the simulator; stdout.
fn heat_hooks_cli(dir: &Path, clouds_yaml: &str, stack: &str) -> String {
    let clouds = dir.join("clouds.yaml");
    std::fs::write(&clouds, clouds_yaml).expect("clouds.yaml");
    let journal = dir.join("journal.jsonl");
    let actions = dir.join("actions.toml");
    std::fs::write(&actions, "").expect("actions file");
    let (ok, out, err) = Caldera::cloud(&clouds)
        .journal(&journal, &actions)
        .args(["heat", "hooks", stack])
        .run_ok();
    assert!(ok, "{out}{err}");
    out
}

fn named(pending: &[PendingHook]) -> Vec<(String, &str, HookEvidence)> {
    pending
        .iter()
        .map(|h| (h.path.clone(), h.hook.as_str(), h.evidence))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_members_whose_pause_events_were_purged_are_named_as_inferred() {
    let (sim, heat, stack) = start().await;
    let env = serde_json::json!({
        "resource_registry": {"resources": {"nodes": {"[0-2]": {"hooks": "pre-update"}}}}
    });
    let update = StackUpdate {
        parameters: [("image".to_string(), serde_json::json!("img-v2"))].into(),
        environment: Some(env),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &update).await.expect("update");

    // The 17 unhooked members finish; the three held ones keep the stack in progress.
    let t0 = Instant::now();
    loop {
        let listed = heat
            .list_resources(
                &stack,
                &caldera::api::heat::ResourceQuery {
                    nested_depth: Some(2),
                    ..Default::default()
                },
            )
            .await
            .expect("resources");
        let updated = listed
            .iter()
            .filter(|r| r.resource.status.raw == "UPDATE_COMPLETE")
            .filter(|r| r.resource.name.parse::<u32>().is_ok_and(|i| i >= 3))
            .count();
        if updated == MEMBERS as usize - 3 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "members never updated"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait(&heat, &stack, "held", |s| s == Some("UPDATE_IN_PROGRESS")).await;

    // What the events alone say: no pause left (the old poll's whole evidence).
    assert_eq!(hook_events(&heat, &stack).await, Vec::<String>::new());

    let pending = pending_hooks(&heat, &stack).await.expect("poll");
    let inferred = HookEvidence::InferredPurged;
    assert_eq!(
        named(&pending),
        [
            ("nodes/0".to_string(), "pre-update", inferred),
            ("nodes/1".to_string(), "pre-update", inferred),
            ("nodes/2".to_string(), "pre-update", inferred),
        ]
    );
    assert_eq!(
        pending[0].describe(),
        "held on pre-update hook (inferred: its pause event was purged)"
    );

    why_stuck_and_marks_name_the_inferred_holds(&sim, &heat, &stack, &pending[0].owner).await;

    // `caldera why` infers the same holds from the events it read for itself, read once:
    // as many event requests as the inference alone makes.
    let events_path = format!(
        "/orchestration/v1/{}/stacks/{}/{}/events",
        sim.project_id, stack.name, stack.id
    );
    let tree = heat
        .list_resources(
            &stack,
            &caldera::api::heat::ResourceQuery {
                nested_depth: Some(caldera::ops::hooks::TREE_DEPTH),
                ..Default::default()
            },
        )
        .await
        .expect("resources");
    let tree: Vec<_> = tree.into_iter().map(|r| r.resource).collect();
    sim.faults().reset_requests();
    caldera::ops::hooks::inferred_tree_holds(&heat, &stack, &tree)
        .await
        .expect("holds");
    let history = sim.faults().requests("GET", &events_path);
    assert!(history > 0, "no event request seen under {events_path}");
    sim.faults().reset_requests();
    let why = caldera::ops::why::read(&heat, &stack, &[])
        .await
        .expect("why");
    assert_eq!(sim.faults().requests("GET", &events_path), history);
    assert_eq!(
        why.verdict,
        caldera::ops::why::Verdict::Held,
        "{:?}",
        why.lines
    );
    let text = why.lines.join("\n");
    assert!(
        text.contains("held: 3 members of nodes held on pre-update hook (3 inferred: their pause events were purged)")
            && text.contains(": 0, 1, 2"),
        "{text}"
    );

    // The operator's command says which holds are inferred.
    let dir = tempfile::tempdir().expect("dir");
    let (path, yaml, name) = (
        dir.path().to_path_buf(),
        sim.clouds_yaml("simcloud"),
        stack.name.clone(),
    );
    let out = tokio::task::spawn_blocking(move || heat_hooks_cli(&path, &yaml, &name))
        .await
        .expect("cli");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("nodes/")).collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        rows.iter()
            .all(|l| l.contains("pre-update")
                && l.ends_with("(inferred: its pause event was purged)")),
        "{out}"
    );

    // The environment as Heat answers it: every section, the hooks by path; the group's
    // own stack holds its parent's registry narrowed to `nodes`.
    let url = format!(
        "{}/stacks/{}/{}/environment",
        heat.base().trim_end_matches('/'),
        stack.name,
        stack.id
    );
    let raw: serde_json::Value = heat.transport().get_json(&url).await.expect("environment");
    for section in [
        "parameters",
        "parameter_defaults",
        "event_sinks",
        "encrypted_param_names",
    ] {
        assert!(raw.get(section).is_some(), "{section} in {raw}");
    }
    assert_eq!(
        raw.pointer("/resource_registry/resources/nodes/[0-2]/hooks"),
        Some(&serde_json::json!("pre-update")),
        "{raw}"
    );
    let root_hooks = heat.get_environment_hooks(&stack).await.expect("root env");
    assert!(root_hooks.matches(&["nodes", "2"], "pre-update"));
    assert!(!root_hooks.matches(&["nodes", "3"], "pre-update"));
    let group_hooks = heat
        .get_environment_hooks(&pending[0].owner)
        .await
        .expect("group env");
    assert!(group_hooks.matches(&["1"], "pre-update"));
    assert!(!group_hooks.matches(&["nodes", "1"], "pre-update"));

    // Released, member 0 updates: no longer held, the other two still are.
    let h = &pending[0];
    heat.unset_hook(&h.owner, &h.resource, &h.hook)
        .await
        .expect("clear");
    let t0 = Instant::now();
    loop {
        let left = pending_hooks(&heat, &stack).await.expect("poll");
        let paths: Vec<&str> = left.iter().map(|h| h.path.as_str()).collect();
        if paths == ["nodes/1", "nodes/2"] {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "still {paths:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The console's why-stuck line (its tree read and event poll, assessed as the console does)
/// and the nodes pane's hook marks name the three members held though no event says so, as
/// inferred; the group busy only with them is not reported as stalled work.
async fn why_stuck_and_marks_name_the_inferred_holds(
    sim: &SimHandle,
    heat: &HeatClient,
    stack: &StackRef,
    group: &StackRef,
) {
    // `group` is the group's own stack, where its members' events are.
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect");
    let service = LiveService::new(conn);
    let read = service
        .stack_tree(stack.clone(), 3)
        .await
        .expect("tree read");
    let (events, _) = service
        .poll_events(stack.clone(), 5, EventCursor::default())
        .await
        .expect("events");
    let tree = build_tree(&stack.id, read.resources, &events)
        .with_inferred_holds(read.inferred_holds, &events);
    let a = &tree.stuck;
    let causes: Vec<&str> = a
        .causes
        .iter()
        .map(|c| tree.rows[c.index].path.as_str())
        .collect();
    assert!(causes.is_empty(), "held, not stalled: {causes:?}");
    let [h] = a.holds.as_slice() else {
        panic!("one hold: {:?}", a.holds)
    };
    let names: Vec<&str> = h
        .members
        .iter()
        .map(|&i| tree.rows[i].resource.name.as_str())
        .collect();
    assert_eq!(
        h.describe(&names, ""),
        "3 members of nodes held on pre-update hook (3 inferred: their pause events were purged): 0, 1, 2"
    );

    // The nodes pane: the group's events mark nobody; with the inference, the three.
    let seen = paused_members(heat, group).await.expect("paused");
    assert!(seen.names.is_empty(), "{seen:?}");
    let began_at = update_began(&heat.get_stack(stack, false).await.expect("show").summary);
    assert!(
        seen.oldest_read.zip(began_at).is_some_and(|(o, b)| o >= b),
        "the group's events no longer reach the update's start: {seen:?} {began_at:?}"
    );
    let detail = heat.get_stack(stack, false).await.expect("show");
    let began = update_began(&detail.summary);
    assert!(began.is_some(), "the update runs");
    let marked = with_inferred_members(heat, stack, began, seen)
        .await
        .expect("marks");
    // Members as the node stream lists them: named in their group `nodes`.
    let held: Vec<String> = (0..MEMBERS)
        .map(|i| i.to_string())
        .filter(|m| marked.holds(m, "nodes"))
        .collect();
    assert_eq!(held, ["0", "1", "2"]);
    assert!(marked.holds("nodes/1", "nodes") && !marked.holds("1", ""));
    // The same through the console's node stream: the members marked held on a hook.
    let c = service
        .list_clusters()
        .await
        .expect("clusters")
        .into_iter()
        .find(|c| c.name == "ctl")
        .expect("cluster ctl listed");
    let g = service
        .list_nodegroups(c)
        .await
        .expect("node groups")
        .into_iter()
        .find(|g| g.name == "workers")
        .expect("node group workers listed");
    let mut stream = service.stream_nodes(g);
    let mut nodes = Vec::new();
    while let Some(update) = stream.next().await {
        match update.expect("node update") {
            NodeUpdate::Members(m) => nodes = m,
            NodeUpdate::Done => break,
            _ => {}
        }
    }
    let marked: Vec<&str> = nodes
        .iter()
        .filter(|n| n.hook_paused)
        .map(|n| n.key.member.as_str())
        .collect();
    assert_eq!(marked, ["0", "1", "2"]);
    // Each mark says it is inferred (the nodes pane's HOOK column reads "held (inferred)").
    assert!(
        nodes.iter().all(|n| n.hook_inferred == n.hook_paused),
        "{:?}",
        nodes
            .iter()
            .map(|n| (&n.key.member, n.hook_paused, n.hook_inferred))
            .collect::<Vec<_>>()
    );
    // No update running: nothing is inferred (and nothing more read).
    let none = with_inferred_members(heat, stack, None, Default::default())
        .await
        .expect("marks");
    assert!(none.inferred.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_pause_events_still_there_the_holds_are_seen_not_inferred() {
    let (_sim, heat, stack) = start().await;
    let env = serde_json::json!({
        "resource_registry": {"resources": {"nodes": {"*": {"hooks": "pre-update"}}}}
    });
    let update = StackUpdate {
        parameters: [("image".to_string(), serde_json::json!("img-v2"))].into(),
        environment: Some(env),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &update).await.expect("update");
    // All held at once: 20 pause events, the newest 12 or so kept, so some members' pauses
    // are purged and others are not; each is named once, with the evidence it has.
    // The pause events kept are read before and after the poll, until no event came or
    // went between (the same events, not merely as many: one written and one purged
    // between the reads leave the count alone).
    let t0 = Instant::now();
    let (pending, kept) = loop {
        let before = hook_events_by_id(&heat, &stack).await;
        let p = pending_hooks(&heat, &stack).await.expect("poll");
        let after = hook_events_by_id(&heat, &stack).await;
        if p.len() == MEMBERS as usize && before == after {
            break (p, after.len());
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{} held", p.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let seen = pending
        .iter()
        .filter(|h| h.evidence == HookEvidence::Seen)
        .count();
    assert_eq!(
        seen, kept,
        "every pause still in the events is seen, not inferred"
    );
    assert!(seen > 0 && seen < MEMBERS as usize, "{seen}");
}
