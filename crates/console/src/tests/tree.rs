//! The stack tree and why-stuck: held members, their release, jumps to a line's resource,
//! and a stalled server beside its siblings.

use super::*;
use crate::message::OperatorRequest;
use crate::tests::node_detail::failed_server;

#[tokio::test]
async fn snapshot_tree_and_why_stuck() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Tree);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Tree { .. }));
    snap!(h, "tree");
    // At 40 columns each status keeps its state (it was `…LETE`, `…RESS`).
    let narrow = h.render(40, 24);
    insta::assert_snapshot!("tree_40x24", narrow);
    let states = [
        "…COMPLETE",
        "…IN_PROGRESS",
        "…FAILED",
        "_COMPLETE",
        "_IN_PROGRESS",
    ];
    let rows: Vec<&str> = narrow
        .lines()
        .skip_while(|l| !l.contains("RESOURCE"))
        .skip(1)
        .take_while(|l| !l.trim_start_matches('"').starts_with('└'))
        .collect();
    assert!(rows.len() >= 5, "{narrow}");
    for r in rows {
        assert!(states.iter().any(|s| r.contains(s)), "{r}\n{narrow}");
    }
    // Enter on the ResourceGroup drills into its nested stack.
    h.key(KeyAction::Open);
    h.settle().await;
    snap!(h, "tree_nested");
    assert_eq!(h.app.nav().len(), 4);
}

/// prod-k8s's default workers reshaped: the first members updated in 36-50 s (their events
/// say so), the last three held on the pre-update hook for 12 minutes and, when `stalled`,
/// the one before them 20 minutes in UPDATE_IN_PROGRESS with a Nova fault on its server.
fn reshaped_workers(h: &Harness, stalled: bool) {
    use crate::model::{StackEvent, StackRef, Status};
    let now = demo_epoch();
    let ago = |s: i64| now - chrono::Duration::seconds(s);
    h.fake.with_data(|d| {
        let Some(g) = d.nodegroups.iter().find(|g| g.name == "default-worker") else {
            panic!("no default-worker group");
        };
        let (gid, stack_id) = (g.id.clone(), g.stack_id.clone().expect("stack"));
        let sref = StackRef {
            name: "prod-k8s-default-worker".into(),
            id: stack_id.clone(),
        };
        let nodes = d.nodes.get_mut(&gid).expect("nodes");
        let n = nodes.len();
        let mut events = Vec::new();
        let mut ev = |member: &str, t: i64, status: &str, reason: &str| {
            events.push(StackEvent {
                id: format!("ev-{member}-{status}-{t}"),
                time: ago(t),
                resource_name: member.into(),
                logical_id: member.into(),
                physical_id: None,
                status: Status::parse(status),
                status_reason: Some(reason.into()),
                stack: Some(sref.clone()),
                path: vec!["nodes".into()],
            });
        };
        for (i, node) in nodes.iter_mut().enumerate() {
            let m = node.key.member.clone();
            let (status, reason, since) = if i + 3 >= n {
                let pause = "UPDATE paused until Hook pre-update is cleared";
                ev(&m, 720, "UPDATE_IN_PROGRESS", pause);
                ("UPDATE_COMPLETE", "state changed", 7200)
            } else if i + 4 == n && stalled {
                ev(&m, 1200, "UPDATE_IN_PROGRESS", "state changed");
                ("UPDATE_IN_PROGRESS", "state changed", 1200)
            } else {
                let start = 1800 - 60 * i as i64;
                let took = [36, 50, 42, 40][i % 4];
                ev(&m, start, "UPDATE_IN_PROGRESS", "state changed");
                ev(&m, start - took, "UPDATE_COMPLETE", "state changed");
                ("UPDATE_COMPLETE", "state changed", start - took)
            };
            node.status = Status::parse(status);
            node.status_reason = Some(reason.into());
            node.since = Some(ago(since));
            node.hook_paused = false;
        }
        events.sort_by_key(|e| e.time);
        d.events.insert(stack_id, events);
        if stalled {
            let server = format!("{}-server", n - 4);
            d.servers.insert(server.clone(), failed_server(&server));
        }
    });
}

async fn open_worker_tree(h: &mut Harness) {
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Tree);
    h.settle().await;
    // The tree asks for the Nova servers of its first causes once it is assessed.
    h.app.plan_refresh(true);
    h.settle().await;
}

/// Members held on a hook are a count with names and a time, and marked in the tree; a
/// group busy only with held members is not reported as stuck work.
#[tokio::test]
async fn snapshot_tree_hook_held() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, false);
    open_worker_tree(&mut h).await;
    let screen = h.render(200, 60);
    assert!(
        screen.contains("3 members of nodes held on pre-update hook since"),
        "{screen}"
    );
    assert!(screen.contains("‖ pre-update"), "{screen}");
    assert!(screen.contains("0 in progress"), "{screen}");
    snap!(h, "tree_hook_held");
}

/// #26 item 9: "releasing 3 held members takes ~24 keys": with rows marked, `H` plans the
/// release of every marked member's hook at once.
#[tokio::test]
async fn marked_members_hooks_are_released_in_one_plan() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, false);
    open_worker_tree(&mut h).await;
    let (stack_id, held): (String, Vec<String>) = {
        let ViewKind::Tree { stack, .. } = &h.app.view().kind else {
            panic!("not the tree");
        };
        let tree = h.app.store().trees[&stack.id].data.clone().expect("tree");
        let held = tree
            .rows
            .iter()
            .filter(|r| r.hook.is_some())
            .map(|r| r.path.clone())
            .collect();
        (stack.id.clone(), held)
    };
    assert_eq!(held.len(), 3, "{held:?}");
    let rows = h.app.store().trees[&stack_id]
        .data
        .clone()
        .expect("tree")
        .rows;
    // As an operator does: down the tree, `space` on the first two held members.
    h.key(KeyAction::Top);
    let mut marked = 0;
    for _ in 0..rows.len() {
        let selected = h.app.view().table.selected(&rows).map(|r| r.path.clone());
        if selected.is_some_and(|p| held[..2].contains(&p)) {
            h.key(KeyAction::Mark);
            marked += 1;
            if marked == 2 {
                break;
            }
            continue;
        }
        h.key(KeyAction::Down);
    }
    assert_eq!(h.app.view().table.marks().len(), 2);
    h.app.take_requests();
    // Actions on this connection (the demo harness has no operator of its own).
    h.app.update(Action::Operator(Some(
        crate::drivers::guard::Guard::default(),
    )));
    h.press(KeyCode::Char('H'));
    let reqs = h.app.take_requests();
    let [Request::Operator(OperatorRequest::PlanControl {
        request: crate::drivers::manual::Request::ClearHook { patterns, .. },
        ..
    })] = &reqs[..]
    else {
        panic!("{reqs:?} {:?}", h.app.status());
    };
    let mut want: Vec<String> = held[..2].iter().map(|p| p.replace(" > ", "/")).collect();
    want.sort();
    assert_eq!(patterns, &want);
}

/// #26 item 9: a jump from a why-stuck line to its resource: `n` selects the row of the
/// next line (the stalled server here), and round again.
#[tokio::test]
async fn n_jumps_to_the_resource_of_the_next_why_stuck_line() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, true);
    open_worker_tree(&mut h).await;
    h.key(KeyAction::Top);
    let mut seen = Vec::new();
    for _ in 0..3 {
        h.press(KeyCode::Char('n'));
        seen.push(
            h.app
                .view()
                .table
                .selected_id()
                .map(str::to_string)
                .unwrap_or_default(),
        );
    }
    // The panel's order: the hold (its first member), then the stalled server; then round.
    let first_held = h.app.store().trees.values().find_map(|t| {
        let t = t.data.as_ref()?;
        let i = *t.stuck.holds.first()?.members.first()?;
        Some(t.rows[i].path.clone())
    });
    assert_eq!(
        seen,
        [
            first_held.clone().unwrap_or_default(),
            "nodes > 4 > server".to_string(),
            first_held.unwrap_or_default()
        ]
    );
}

/// A stalled server: its time in progress against how long its siblings took, and Nova's
/// fault under it.
#[tokio::test]
async fn snapshot_tree_stalled_with_sibling_durations() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, true);
    open_worker_tree(&mut h).await;
    let screen = h.render(200, 60);
    assert!(screen.contains("stalled 20m"), "{screen}");
    assert!(
        screen.contains("stalled 20m; siblings of 4 took 36-50 s (median 41 s)"),
        "{screen}"
    );
    assert!(screen.contains("Nova ERROR: Build of instance"), "{screen}");
    assert!(
        !screen.contains("\u{1b}[2J"),
        "the fault's escape is not obeyed"
    );
    snap!(h, "tree_stalled_siblings");
}
