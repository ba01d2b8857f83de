//! The node groups and nodes panes: the HOOK column, large groups, errors, selection through
//! live updates, and any stack opened as its nodes.

use super::*;

/// The HOOK column says `held`, the word of the summary's count it is drawn from (it said
/// Heat's `paused` beside `2 held`): a member's cell is its phase in the group's model. A hold
/// whose pause event Heat purged is `held (inferred)`.
#[tokio::test]
async fn the_hook_column_says_which_holds_are_inferred() {
    let mut h = Harness::demo(1000);
    h.fake.with_data(|d| {
        let g = d.nodegroups.iter().find(|g| g.name == "default-worker");
        let id = g.expect("default-worker").id.clone();
        for (i, n) in d
            .nodes
            .get_mut(&id)
            .expect("its nodes")
            .iter_mut()
            .enumerate()
        {
            n.hook_paused = i < 2;
            n.hook_inferred = i == 1;
        }
    });
    h.settle().await;
    h.app
        .update(Action::Command(crate::message::Command::NodeGroups));
    h.settle().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    let screen = h.render(120, 40);
    let row = |member: &str| {
        let name = format!("prod-k8s-default-worker-{member} ");
        screen
            .lines()
            .find(|l| l.contains(&name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("0").contains(" held "), "{screen}");
    assert!(row("1").contains(" held (inferred) "), "{screen}");
    assert!(!row("2").contains("held"), "{screen}");
    assert!(!screen.contains("paused"), "{screen}");
    // The count beside the map is of the same fact.
    assert!(screen.contains("‖ 2 held"), "{screen}");
}

#[tokio::test]
async fn snapshot_nodegroups_and_nodes_1000() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.app
        .update(Action::Command(crate::message::Command::NodeGroups));
    h.settle().await;
    // The next tick reads the members of the groups under an update: their rows show the
    // progress model.
    h.app.plan_refresh(false);
    h.settle().await;
    snap!(h, "nodegroups");
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    // The node groups read the members of the group under an update: shown at once.
    snap!(h, "nodes_opened");
    h.settle().await;
    assert!(
        matches!(&h.app.view().kind, ViewKind::Nodes { nodegroup, .. } if nodegroup.name == "default-worker")
    );
    snap!(h, "nodes_800");
    // Faults only.
    h.key(KeyAction::FaultsOnly);
    snap!(h, "nodes_faults_only");
}

#[tokio::test]
async fn snapshot_nodes_error_and_10000() {
    let mut h = Harness::demo(1000);
    h.fake.set_error(
        FakeOp::StreamNodes,
        Some(ServiceError::new(
            ErrorKind::Http,
            "GET stacks/prod-k8s-default-worker/resources: HTTP 500",
        )),
    );
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    snap!(h, "nodes_error");

    let mut h = Harness::demo(10_000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    snap!(h, "nodes_8000");
}

#[tokio::test]
async fn node_selection_survives_live_updates() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::SortNext); // sort by '#'
    h.key(KeyAction::SortNext); // by NAME
    h.key(KeyAction::SortNext); // by IP
    h.key(KeyAction::SortReverse);
    h.app.prepare();
    for _ in 0..37 {
        h.key(KeyAction::Down);
    }
    h.app.prepare();
    let before = h.app.view().table.selected_id().map(str::to_string);
    assert!(before.is_some());
    for _ in 0..3 {
        h.fake.advance();
    }
    h.key(KeyAction::Refresh);
    h.settle().await;
    h.app.prepare();
    assert_eq!(h.app.view().table.selected_id().map(str::to_string), before);
    let pos = h.app.view().table.selected_pos();
    let rows = &h
        .app
        .store()
        .nodes
        .values()
        .find(|s| s.rows.len() == 800)
        .unwrap()
        .rows;
    let sel = h
        .app
        .view()
        .table
        .selected(rows)
        .map(|r| r.node.key.member.clone());
    assert_eq!(sel, before, "selected row at {pos:?}");
}

#[tokio::test]
async fn server_names_fill_in_without_moving_rows_or_selection() {
    use crate::model::NodeAddress;
    use crate::service::NodeUpdate;
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::SortNext); // by '#'
    h.app.prepare();
    for _ in 0..37 {
        h.key(KeyAction::Down);
    }
    h.app.prepare();
    let ng = match &h.app.view().kind {
        ViewKind::Nodes { nodegroup, .. } => nodegroup.id.clone(),
        other => panic!("not the nodes pane: {other:?}"),
    };
    let members_in_view = |h: &Harness| -> Vec<String> {
        let rows = &h.app.store().nodes[&ng].rows;
        let view = h.app.view().table.view();
        view.iter()
            .map(|&i| rows[i].node.key.member.clone())
            .collect()
    };
    let order = members_in_view(&h);
    let selected = h.app.view().table.selected_id().map(str::to_string);
    assert_eq!(selected.as_deref(), Some(order[37].as_str()));

    // Names arrive in the reverse order of the members, one on an address, the rest late.
    let now = demo_epoch();
    let set = h.app.store_mut().nodes.get_mut(&ng).expect("node set");
    let gen = set.meta.gen;
    let total = set.rows.len();
    let name_of = |pos: usize| format!("srv-{:04}", total - pos);
    let rows: Vec<(String, Option<u32>)> = set
        .rows
        .iter()
        .map(|r| (r.node.key.member.clone(), r.node.index))
        .collect();
    for (pos, (member, index)) in rows.iter().enumerate() {
        let update = if pos == 0 {
            NodeUpdate::Address(NodeAddress {
                member: member.clone(),
                index: *index,
                addresses: vec!["10.99.0.1".into()],
                name: Some(name_of(pos)),
                networks: Default::default(),
                outputs: Default::default(),
                left_out: 0,
            })
        } else {
            NodeUpdate::Named {
                member: member.clone(),
                name: name_of(pos),
            }
        };
        assert!(set.apply(gen, Ok(update), now));
    }
    h.app.prepare();
    assert_eq!(
        members_in_view(&h),
        order,
        "names do not reorder a sort by '#'"
    );
    assert_eq!(
        h.app.view().table.selected_id().map(str::to_string),
        selected
    );
    let set = &h.app.store().nodes[&ng];
    assert!(set
        .rows
        .iter()
        .enumerate()
        .all(|(p, r)| r.node.name == name_of(p)));

    // A re-sent member list (names are member names there) keeps the server names.
    let resent: Vec<_> = set
        .rows
        .iter()
        .map(|r| {
            let mut n = r.node.clone();
            n.name = n.key.member.clone();
            n.ip = None;
            n
        })
        .collect();
    let set = h.app.store_mut().nodes.get_mut(&ng).expect("node set");
    assert!(set.apply(gen, Ok(NodeUpdate::Members(resent)), now));
    assert!(set
        .rows
        .iter()
        .enumerate()
        .all(|(p, r)| r.node.name == name_of(p)));

    // Sorted by NAME, the order follows the names and the selection stays on its id.
    h.key(KeyAction::SortNext);
    h.app.prepare();
    let mut by_name = order.clone();
    by_name.reverse();
    assert_eq!(members_in_view(&h), by_name);
    assert_eq!(
        h.app.view().table.selected_id().map(str::to_string),
        selected
    );
}

/// The demo's stack list, shown, and the stack selected in it.
async fn stack_list_selected() -> (Harness, crate::model::StackRef) {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.command("stacks");
    h.settle().await;
    h.render(80, 24);
    let selected = h
        .app
        .view()
        .table
        .selected(h.app.store().stacks.data.as_deref().unwrap_or(&[]))
        .map(|s| s.stack.clone())
        .expect("a stack selected");
    (h, selected)
}

#[tokio::test]
async fn nodes_command_opens_any_stack_as_its_nodes() {
    // A stack that is no cluster's: `:nodes` shows its groups' members (the live service
    // streams every scaling group of the stack, see ops::discover).
    let (mut h, selected) = stack_list_selected().await;
    h.command("nodes");
    match &h.app.view().kind {
        ViewKind::Nodes { nodegroup, .. } => {
            assert_eq!(nodegroup.stack_id.as_deref(), Some(selected.id.as_str()));
            assert_eq!(nodegroup.name, selected.name);
            assert!(crate::state::is_stack_standin(nodegroup));
        }
        other => panic!("not the nodes pane: {other:?}"),
    }
}

#[tokio::test]
async fn node_groups_and_dashboard_open_any_stack_in_context() {
    // A stack that is no cluster's: `:ng` and `:dash` open it as a cluster whose node groups
    // the service discovers (service::plain_stack), not "no cluster selected".
    let (mut h, selected) = stack_list_selected().await;
    for (command, dashboard) in [("ng", false), ("dash", true)] {
        h.command(command);
        let cluster = match (&h.app.view().kind, dashboard) {
            (ViewKind::NodeGroups { cluster }, false) | (ViewKind::Dashboard { cluster }, true) => {
                cluster.clone()
            }
            (other, _) => panic!(":{command} opened {other:?}"),
        };
        assert_eq!(cluster.id, selected.id);
        assert_eq!(cluster.name, selected.name);
        assert!(crate::service::plain_stack::is_plain_stack(&cluster));
        h.press(KeyCode::Esc);
        assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    }
}

#[tokio::test]
async fn ten_thousand_nodes_stay_cheap_per_frame() {
    use std::time::Instant;
    let mut h = Harness::demo(10_000);
    h.open_prod().await;
    let frame = |h: &mut Harness, n: u32| {
        let t = Instant::now();
        for _ in 0..n {
            h.render(120, 40);
        }
        t.elapsed() / n
    };
    let dash = frame(&mut h, 5);
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    let nodes = frame(&mut h, 5);
    // A new member list (live update) with a filter and a sort active: full recompute.
    h.press(KeyCode::Char('/'));
    h.type_str("fedora");
    h.press(KeyCode::Enter);
    h.key(KeyAction::SortNext);
    h.key(KeyAction::SortNext);
    h.key(KeyAction::SortNext);
    let t = Instant::now();
    h.fake.advance();
    h.key(KeyAction::Refresh);
    h.settle().await;
    let refresh = t.elapsed();
    let recompute = frame(&mut h, 1);
    let t = Instant::now();
    for _ in 0..1000 {
        h.key(KeyAction::Down);
    }
    let keys = t.elapsed() / 1000;
    eprintln!(
        "10k nodes (120x40, debug build): dashboard frame {dash:?}, nodes frame {nodes:?}, \
         refresh+stream of 8000 nodes {refresh:?}, frame after refresh {recompute:?}, key {keys:?}"
    );
    assert!(h.app.view().table.len() == 8000);
    assert!(dash.as_millis() < 500 && nodes.as_millis() < 500 && keys.as_millis() < 20);
}

/// Issue 25: any stack's nodes pane (`:nodes` on a stack, no cluster of any driver) during an
/// update caldera does not follow: the member Heat updated since the stack's update began is
/// new, whatever Nova can say of its image, the held one held, the others old. The update and
/// its start are the stack's, as the stack list read them. Before: `new 0/4`, member 0 old.
#[tokio::test]
async fn any_stacks_nodes_count_the_members_heat_updated_in_its_update_as_new() {
    use crate::model::Status;
    let (mut h, selected) = stack_list_selected().await;
    let began = chrono::Utc::now() - chrono::Duration::minutes(10);
    h.fake.with_data(|d| {
        let stack = d
            .stacks
            .iter_mut()
            .find(|s| s.stack.id == selected.id)
            .expect("the selected stack");
        stack.status = Status::parse("UPDATE_IN_PROGRESS");
        stack.updated_at = Some(began);
        let template = d
            .nodes
            .values()
            .flat_map(|ns| ns.iter())
            .next()
            .cloned()
            .expect("a node to copy");
        let node = |i: u32, status: &str, since_mins: i64, held: bool| {
            let mut n = template.clone();
            n.key.nodegroup = selected.id.clone();
            n.key.member = i.to_string();
            n.index = Some(i);
            n.name = format!("web-{i}");
            n.status = Status::parse(status);
            n.image = None;
            n.since = Some(began + chrono::Duration::minutes(since_mins));
            n.hook_paused = held;
            n.hook_inferred = false;
            n
        };
        d.nodes.insert(
            selected.id.clone(),
            vec![
                node(0, "UPDATE_COMPLETE", 4, false),
                node(1, "UPDATE_IN_PROGRESS", 5, true),
                node(2, "CREATE_COMPLETE", -90, false),
                node(3, "CREATE_COMPLETE", -90, false),
            ],
        );
    });
    h.command("stacks");
    h.settle().await;
    h.command("nodes");
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Nodes { .. }));
    let screen = h.render(120, 30);
    assert!(screen.contains("█ new 1/4"), "{screen}");
    assert!(screen.contains("‖ held 1"), "{screen}");
    assert!(screen.contains("▒ old 2"), "{screen}");
}

/// #26 item 9: a page key moves by the rows the nodes pane shows (it shares the screen with
/// its heat map): PgDn from the top twice visits every row. It moved by the terminal's
/// height less 8 (16 at 80x24) where the pane showed 10, so rows 17–22 were never on screen.
#[tokio::test]
async fn page_down_in_the_nodes_pane_skips_no_row() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.app
        .update(Action::Command(crate::message::Command::NodeGroups));
    h.settle().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    // The node rows on screen: their first cell is the member index.
    let shown = |screen: &str| -> Vec<usize> {
        screen
            .lines()
            .skip_while(|l| !l.contains("Nodes of"))
            .filter_map(|l| l.trim_start_matches('"').strip_prefix('│'))
            .filter_map(|l| l.split_whitespace().next()?.parse::<usize>().ok())
            .collect()
    };
    let first = shown(&h.render(80, 24));
    assert!(first.len() >= 3, "{first:?}");
    let mut seen: Vec<usize> = first.clone();
    for _ in 0..3 {
        h.key(KeyAction::PageDown);
        let rows = shown(&h.render(80, 24));
        let (Some(&lo), Some(&last)) = (rows.first(), seen.last()) else {
            panic!("no rows: {rows:?}");
        };
        assert!(
            lo <= last + 1,
            "rows {}..{lo} never shown: {rows:?}",
            last + 1
        );
        seen.extend(rows);
    }
}
