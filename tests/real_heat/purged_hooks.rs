//! Hook pauses whose events Heat purged (issue 15, item 2), on a REAL OpenStack Heat 27 that
//! purges deterministically: `max_events_per_stack = 12`, `event_purge_batch_size = 2`
//! (`scripts/real-heat-suite.sh` starts it on its own port and database). Heat's
//! `event_create` (heat/db/api.py) counts a stack's events only when
//! `2 / batch > random.uniform(0, 1)` — always, for a batch of 2 — and once the count has
//! reached the maximum deletes that stack's 2 oldest events (lowest ids) before writing the
//! new one, so each stack keeps its newest 11 or 12 events. Measured here: inserts that run
//! at once (20 members started together, `HEAT_LEAF_DELAY=0`) each delete the *same* two
//! oldest rows, and the group stack grew to 44 events with every pause kept; leaves started
//! 0.2 s apart (the suite's setting for this Heat) keep it at exactly 12.
//!
//! Members 0-2 of a 20-member group are held on `pre-update` while the other 17 update;
//! their 34 events push the pause events and the group stack's own `UPDATE_IN_PROGRESS` out
//! of the group stack's events. `pending_hooks` (what `caldera heat hooks` shows) must name
//! the three, inferred, and nothing else; a released one drops out. On a stack whose events
//! are all there, nothing is inferred. The simulator runs the same scenario in
//! `tests/offline/hooks_purged_sim.rs`.
//!
//! What real Heat showed matches what `caldera_core::ops::hooks` had read from its code: a
//! held member keeps `CREATE_COMPLETE` and its creation's `updated_time`, the group resource
//! is `UPDATE_IN_PROGRESS`, and the group stack writes `Stack UPDATE started` under its own
//! name in its own events.
//!
//! HEAT_URL must point at such a purging Heat; on a Heat keeping every event the first test
//! fails within a minute (the pause events are never purged), saying so.

use crate::support::heat_wait;
use crate::support::real_heat_client;
use caldera::api::heat::{
    EventQuery, HeatClient, ResourceQuery, SortDir, StackCreate, StackUpdate,
};
use caldera::model::{Role, StackEvent, StackRef};
use caldera::ops::hooks::{
    hook_event, paused_members, pending_hooks, pre_update_candidates, update_began,
    with_inferred_members, HookEvidence, PendingHook, TREE_DEPTH,
};
use caldera::ops::stack_paths::StackPaths;
use caldera::service::live::LiveService;
use caldera::service::{CloudService, NodeUpdate};
use futures::StreamExt;
use heat_wait::wait_status;
use real_heat_client::{connect, create_magnum_layout, default_group, heat, heat_url, unique};
use serde_json::json;
use std::time::{Duration, Instant};

const MEMBERS: usize = 20;
/// The purging Heat's `max_events_per_stack` (scripts/real-heat-suite.sh).
const MAX_EVENTS: usize = 12;

/// A group of `count` test resources whose value reads `v`; a member update takes
/// `update_secs`.
async fn create(heat: &HeatClient, prefix: &str, count: usize, update_secs: u32) -> StackRef {
    let template = json!({
        "heat_template_version": "2021-04-16",
        "parameters": {"v": {"type": "string", "default": "a"}},
        "resources": {"nodes": {
            "type": "OS::Heat::ResourceGroup",
            "properties": {"count": count, "resource_def": {
                "type": "OS::Heat::TestResource",
                "properties": {"value": {"get_param": "v"}, "action_wait_secs": {"update": update_secs}}
            }}
        }}
    });
    let create = StackCreate {
        name: unique(prefix),
        template,
        disable_rollback: Some(true),
        ..Default::default()
    };
    let stack = heat.create_stack(&create).await.expect("stack create");
    wait_status(heat, &stack, "CREATE_COMPLETE").await;
    stack
}

/// Updates `v` with the members matching `glob` held on `pre-update`.
async fn hooked_update(heat: &HeatClient, stack: &StackRef, glob: &str, v: &str) {
    let env =
        json!({"resource_registry": {"resources": {"nodes": {glob: {"hooks": "pre-update"}}}}});
    let update = StackUpdate {
        parameters: [("v".to_string(), json!(v))].into(),
        environment: Some(env),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(stack, &update).await.expect("update");
}

/// Every event of the tree Heat still has, newest first (the purging Heat keeps few).
async fn all_events(heat: &HeatClient, stack: &StackRef) -> Vec<StackEvent> {
    heat.list_events_page(
        stack,
        &EventQuery {
            sort_dir: Some(SortDir::Desc),
            nested_depth: Some(3),
            ..Default::default()
        },
    )
    .await
    .expect("events")
}

/// The hook reasons among `events`, `resource: reason`.
fn hook_reasons(events: &[StackEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| {
            let r = e.status_reason.as_deref()?;
            hook_event(r, None).map(|_| format!("{}: {r}", e.resource_name))
        })
        .collect()
}

/// Member names (`3`) of the tree with status `status`.
async fn members_in(heat: &HeatClient, stack: &StackRef, status: &str) -> Vec<String> {
    let query = ResourceQuery {
        nested_depth: Some(2),
        ..Default::default()
    };
    let listed = heat.list_resources(stack, &query).await.expect("resources");
    listed
        .into_iter()
        .map(|r| r.resource)
        .filter(|r| r.status.raw == status && r.name.parse::<usize>().is_ok())
        .map(|r| r.name)
        .collect()
}

fn named(pending: &[PendingHook]) -> Vec<(String, HookEvidence)> {
    pending
        .iter()
        .map(|h| (h.path.clone(), h.evidence))
        .collect()
}

/// Polls `pending_hooks` (bounded) until the paths are `want`.
async fn wait_pending(heat: &HeatClient, stack: &StackRef, want: &[&str]) -> Vec<PendingHook> {
    let t0 = Instant::now();
    loop {
        let pending = pending_hooks(heat, stack).await.expect("poll");
        let paths: Vec<&str> = pending.iter().map(|h| h.path.as_str()).collect();
        if paths == want {
            return pending;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "pending {paths:?}, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// `caldera --heat-url HEAT_URL heat hooks STACK`: stdout.
fn heat_hooks_cli(stack: &str) -> String {
    let dir = tempfile::tempdir().expect("dir");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args(["--heat-url", &heat_url(), "heat", "hooks", stack])
        .env("CALDERA_JOURNAL", dir.path().join("journal.jsonl"))
        .env("XDG_STATE_HOME", dir.path())
        .env_remove("CALDERA_ACTIONS_CONFIG")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run caldera");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Releases every hook still pending, until the stack's update completes; then deletes it.
async fn finish(heat: &HeatClient, stack: &StackRef) {
    let t0 = Instant::now();
    loop {
        let d = heat.get_stack(stack, false).await.expect("show");
        if !d.summary.status.is_in_progress() {
            break;
        }
        for h in pending_hooks(heat, stack).await.expect("poll") {
            let _ = heat.unset_hook(&h.owner, &h.resource, &h.hook).await;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", d.summary);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let _ = heat.delete_stack(stack).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a purging real Heat: run scripts/real-heat-suite.sh"]
async fn real_held_members_whose_pause_events_were_purged_are_inferred() {
    let heat = heat().await;
    // Heat starts the members in no set order, one per HEAT_LEAF_DELAY (0.2 s here: 4 s for
    // 20, more on a busy engine); an update of 10 s puts every unhooked member's
    // UPDATE_COMPLETE after the last pause, so at least 17 events follow each pause and push it out of the newest 12.
    let stack = create(&heat, "purge", MEMBERS, 10).await;
    hooked_update(&heat, &stack, "[0-2]", "b").await;

    // The 17 unhooked members finish and the pause events of 0-2 are gone from the API.
    let t0 = Instant::now();
    loop {
        let updated = members_in(&heat, &stack, "UPDATE_COMPLETE").await;
        let events = all_events(&heat, &stack).await;
        let hooks = hook_reasons(&events);
        if updated.len() == MEMBERS - 3 && hooks.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{} members updated; hook events still there: {hooks:?} \
             (is HEAT_URL a Heat with max_events_per_stack = {MAX_EVENTS} and \
             event_purge_batch_size = 2?)",
            updated.len()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let d = heat.get_stack(&stack, false).await.expect("show");
    assert_eq!(
        d.summary.status.raw, "UPDATE_IN_PROGRESS",
        "held members keep it going"
    );
    let mut held = members_in(&heat, &stack, "CREATE_COMPLETE").await;
    held.sort();
    assert_eq!(
        held,
        ["0", "1", "2"],
        "Heat leaves a held member's status as it was"
    );

    let pending = pending_hooks(&heat, &stack).await.expect("poll");
    let inferred = HookEvidence::InferredPurged;
    assert_eq!(
        named(&pending),
        [
            ("nodes/0".to_string(), inferred),
            ("nodes/1".to_string(), inferred),
            ("nodes/2".to_string(), inferred),
        ]
    );
    assert!(pending.iter().all(|h| h.hook == "pre-update"));

    // The nodes pane's marks: the group's events name nobody and no longer reach back to the
    // update's start, so the tree is polled and the three are marked, as inferred.
    let paused = paused_members(&heat, &stack).await.expect("paused");
    assert!(paused.names.is_empty(), "{paused:?}");
    let began = update_began(&d.summary);
    assert!(
        paused.oldest_read.zip(began).is_some_and(|(o, b)| o >= b),
        "the group stack's events start after the update began: {paused:?} {began:?}"
    );
    let marks = with_inferred_members(&heat, &stack, began, paused)
        .await
        .expect("marks");
    let mut marked: Vec<&str> = marks.inferred.iter().map(String::as_str).collect();
    marked.sort();
    assert_eq!(marked, ["nodes/0", "nodes/1", "nodes/2"]);

    // The operator's command says which holds are inferred.
    let name = stack.name.clone();
    let out = tokio::task::spawn_blocking(move || heat_hooks_cli(&name))
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

    // Released, member 0 updates: the next poll no longer names it.
    let h = &pending[0];
    heat.unset_hook(&h.owner, &h.resource, &h.hook)
        .await
        .expect("clear");
    let left = wait_pending(&heat, &stack, &["nodes/1", "nodes/2"]).await;
    assert!(left.iter().all(|h| h.evidence == inferred), "{left:?}");
    finish(&heat, &stack).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a purging real Heat: run scripts/real-heat-suite.sh"]
async fn real_with_every_event_kept_nothing_is_inferred() {
    let heat = heat().await;
    // Two members: create (6 events) and a hooked update (start, 2 pauses) stay below the
    // maximum, so the group stack's events reach back to its creation.
    let stack = create(&heat, "kept", 2, 1).await;
    hooked_update(&heat, &stack, "*", "b").await;
    let pending = wait_pending(&heat, &stack, &["nodes/0", "nodes/1"]).await;
    assert!(
        pending.iter().all(|h| h.evidence == HookEvidence::Seen),
        "{pending:?}"
    );
    let events = all_events(&heat, &stack).await;
    assert!(
        events.iter().any(|e| e.status.raw == "CREATE_COMPLETE"),
        "the creation is still in the events: {events:?}"
    );
    // The nodes pane's marks: every stack's events reach back before the update, so the
    // pauses read are the truth and the tree is not polled for purged ones.
    let paused = paused_members(&heat, &stack).await.expect("paused");
    let d = heat.get_stack(&stack, false).await.expect("show");
    let began = update_began(&d.summary);
    assert!(
        // Heat's times are whole seconds: a creation that ended in the second the update
        // began reads as the same time.
        paused.oldest_read.zip(began).is_some_and(|(o, b)| o <= b),
        "{paused:?} {began:?}"
    );
    let mut names: Vec<&str> = paused.names.iter().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["0", "1"]);
    // The guard, on Heat's own data: even were the pause events unread, the group stack's
    // `Stack UPDATE started` (UPDATE_IN_PROGRESS under the stack's own name, in its own
    // events) says the events reach back to the update, so no member is even a candidate.
    let query = ResourceQuery {
        nested_depth: Some(TREE_DEPTH),
        ..Default::default()
    };
    let resources: Vec<_> = heat
        .list_resources(&stack, &query)
        .await
        .expect("resources")
        .into_iter()
        .map(|r| r.resource)
        .collect();
    let group = &pending[0].owner;
    assert!(
        events.iter().any(|e| e.resource_name == group.name
            && e.status.raw == "UPDATE_IN_PROGRESS"
            && e.stack.as_ref().is_some_and(|s| s.id == group.id)),
        "{events:?}"
    );
    let unhooked: Vec<StackEvent> = events
        .iter()
        .filter(|e| {
            e.status_reason
                .as_deref()
                .and_then(|r| hook_event(r, None))
                .is_none()
        })
        .cloned()
        .collect();
    let mut paths = StackPaths::new(&stack);
    paths.learn(&resources);
    let candidates = pre_update_candidates(&stack, &resources, &unhooked, &paths);
    assert_eq!(candidates, [], "{unhooked:?}");
    // Released, member 0 updates; 1 stays held, seen.
    let h = &pending[0];
    heat.unset_hook(&h.owner, &h.resource, &h.hook)
        .await
        .expect("clear");
    let left = wait_pending(&heat, &stack, &["nodes/1"]).await;
    assert_eq!(left[0].evidence, HookEvidence::Seen);
    finish(&heat, &stack).await;
}

/// Magnum's own layout (one cluster stack holding `kube_masters` and `kube_minions`, each
/// member a nested stack), every minion held on `pre-update` by a new image: 20 pause
/// events in the minions' group stack, which keeps its newest 12, so some pauses are
/// purged and others not, whichever Heat wrote last. Each minion is named once, seen
/// exactly where its pause event is still there and inferred elsewhere; no master is
/// named; and the console's node stream of `default-worker` marks each minion the same
/// way (the HOOK column's `held` / `held (inferred)`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a purging real Heat: run scripts/real-heat-suite.sh"]
async fn real_magnum_layout_holds_are_each_named_with_the_evidence_heat_kept() {
    let conn = connect().await;
    let heat = conn.heat.clone();
    let stack = create_magnum_layout(&heat, &unique("purge-magnum"), 1, MEMBERS as u32).await;
    wait_status(&heat, &stack, "CREATE_COMPLETE").await;
    let env = json!({"resource_registry": {"resources": {"kube_minions": {"*": {"hooks": "pre-update"}}}}});
    let update = StackUpdate {
        parameters: [("minion_image".to_string(), json!("fedora-coreos-40"))].into(),
        environment: Some(env),
        existing: true,
        ..Default::default()
    };
    heat.update_stack(&stack, &update).await.expect("update");

    // Every minion held, and the pause events Heat kept read before and after the poll,
    // until no event came or went between (the same events, by id).
    let pauses = |events: &[StackEvent]| -> Vec<(String, String)> {
        let mut kept: Vec<(String, String)> = events
            .iter()
            .filter(|e| {
                e.status_reason
                    .as_deref()
                    .is_some_and(|r| hook_event(r, None).is_some())
            })
            .map(|e| (e.id.clone(), e.resource_name.clone()))
            .collect();
        kept.sort();
        kept
    };
    let t0 = Instant::now();
    let (pending, kept) = loop {
        let before = pauses(&all_events(&heat, &stack).await);
        let p = pending_hooks(&heat, &stack).await.expect("poll");
        let after = pauses(&all_events(&heat, &stack).await);
        if p.len() == MEMBERS && before == after {
            break (p, after);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "{} held: {:?}",
            p.len(),
            named(&p)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let mut paths: Vec<&str> = pending.iter().map(|h| h.path.as_str()).collect();
    paths.sort();
    let mut want: Vec<String> = (0..MEMBERS).map(|i| format!("kube_minions/{i}")).collect();
    want.sort();
    assert_eq!(paths, want, "every minion named once, no master");
    assert!(pending.iter().all(|h| h.hook == "pre-update"));
    let mut seen: Vec<&str> = pending
        .iter()
        .filter(|h| h.evidence == HookEvidence::Seen)
        .map(|h| h.resource.as_str())
        .collect();
    seen.sort();
    let mut kept_names: Vec<&str> = kept.iter().map(|(_, name)| name.as_str()).collect();
    kept_names.sort();
    kept_names.dedup();
    assert_eq!(
        seen, kept_names,
        "seen exactly where the pause event is kept"
    );
    assert!(
        !seen.is_empty() && seen.len() < MEMBERS,
        "some pauses purged, some kept (max {MAX_EVENTS} events a stack): {} seen",
        seen.len()
    );

    // The console's node stream of default-worker: each minion marked held, inferred
    // exactly where the poll inferred it.
    let service = LiveService::new(conn.clone());
    let mut updates = service.stream_nodes(default_group("default-worker", Role::Worker, &stack));
    let mut nodes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while let Some(update) = updates.next().await {
        assert!(Instant::now() < deadline, "node stream did not finish");
        match update.expect("node update") {
            NodeUpdate::Members(n) => nodes = n,
            NodeUpdate::Done => break,
            _ => {}
        }
    }
    assert_eq!(nodes.len(), MEMBERS, "{nodes:?}");
    for n in &nodes {
        let seen_here = seen.contains(&n.key.member.as_str());
        assert!(
            n.hook_paused && n.hook_inferred != seen_here,
            "member {}: paused {} inferred {} (seen by the poll: {seen_here})",
            n.key.member,
            n.hook_paused,
            n.hook_inferred
        );
    }
    finish(&heat, &stack).await;
}
