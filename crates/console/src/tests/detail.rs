//! The detail views (resource, event) over the fake cloud: the keys that reach them, what
//! they ask the cloud, and snapshots at 80x24, 120x40 and 200x60.

use super::*;
use crate::model::{StackEvent, Status};
use crate::tests::outputs::give_outputs;

/// A reason longer than any pane, with a terminal escape inside.
const LONG_REASON: &str = "Error: resources.deployment: Deployment to server failed: \
    deploy_status_code : Deployment exited with non-zero status code: 1 \u{1b}[2J while \
    running /var/lib/heat-config/hooks/script: kubelet did not become ready within 600 \
    seconds; last message from the node: node \"prod-k8s-default-worker-17\" not found";

/// Open prod-k8s's worker tree, select member 0's `deployment` and press Enter.
async fn open_deployment(h: &mut Harness) -> (String, String) {
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Tree);
    h.settle().await;
    // nodes > 0 > deployment
    h.key(KeyAction::Down);
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    match &h.app.view().kind {
        ViewKind::Resource { stack, resource } => (stack.id.clone(), resource.clone()),
        other => panic!("Enter on a plain resource opened {other:?}"),
    }
}

/// The deployment's attributes, metadata and three events (one failed with a long reason).
fn give_details(h: &Harness, stack_id: &str, resource: &str) {
    h.fake.with_data(|d| {
        let attributes = vec![
            ("deploy_status_code".to_string(), "1".to_string()),
            (
                "deploy_stdout".to_string(),
                "line one\nline \u{1b}]0;pwned\u{7}two".to_string(),
            ),
        ];
        let metadata = "{\n  \"deployments\": []\n}".to_string();
        d.resource_extras.insert(
            (stack_id.to_string(), resource.to_string()),
            (attributes, metadata),
        );
        let t0 = demo_epoch() - chrono::Duration::seconds(600);
        let event = |i: i64, status: &str, reason: &str| StackEvent {
            id: format!("ev-{i}"),
            time: t0 + chrono::Duration::seconds(i * 60),
            resource_name: resource.to_string(),
            logical_id: resource.to_string(),
            physical_id: None,
            status: Status::parse(status),
            status_reason: Some(reason.to_string()),
            stack: None,
            path: Vec::new(),
        };
        let events = d.events.entry(stack_id.to_string()).or_default();
        events.push(event(0, "UPDATE_IN_PROGRESS", "state changed"));
        events.push(event(1, "SIGNAL_COMPLETE", "Signal: deployment failed (1)"));
        events.push(event(2, "UPDATE_FAILED", LONG_REASON));
    });
}

#[tokio::test]
async fn enter_on_a_plain_tree_resource_opens_its_detail_with_the_full_reason() {
    let mut h = Harness::demo(10);
    let (stack_id, resource) = open_deployment(&mut h).await;
    give_details(&h, &stack_id, &resource);
    let asked: Vec<Request> = h.app.take_requests();
    assert!(
        asked.iter().any(|r| matches!(r,
            Request::Resource { stack, resource: name, .. }
                if stack.id == stack_id && name == "deployment")),
        "{asked:?}"
    );
    for r in asked {
        h.outstanding += 1;
        h.worker.submit(r);
    }
    h.settle().await;
    let screen = h.render(120, 40);
    assert!(screen.contains("deploy_status_code"), "{screen}");
    assert!(screen.contains("\"deployments\": []"), "{screen}");
    assert!(screen.contains("UPDATE_FAILED"), "{screen}");
    // The whole reason, wrapped: its last words are on screen, its escape is not obeyed.
    assert!(screen.contains("not found"), "{screen}");
    assert!(!screen.contains('\u{1b}'), "{screen}");
    escaped_everywhere(&mut h);
    snap3!(h, "resource_detail");
    // It scrolls to its end (the oldest event) and back.
    h.render(80, 24);
    h.key(KeyAction::Bottom);
    let bottom = h.render(80, 24);
    assert!(bottom.contains("state changed"), "{bottom}");
    h.key(KeyAction::Back);
    assert!(matches!(h.app.view().kind, ViewKind::Tree { .. }));
}

#[tokio::test]
async fn a_resource_heat_cannot_show_says_why() {
    let mut h = Harness::demo(10);
    h.fake.set_error(
        FakeOp::ResourceDetail,
        Some(ServiceError::new(
            ErrorKind::NotFound,
            "The Resource (deployment) could not be found.",
        )),
    );
    open_deployment(&mut h).await;
    h.settle().await;
    let screen = h.render(80, 24);
    assert!(screen.contains("could not be found"), "{screen}");
}

/// Open prod-k8s's event tail with a newest event of member 17's server carrying
/// [`LONG_REASON`], selected as the followed tail's last row, and press Enter.
async fn open_long_event(h: &mut Harness) -> StackEvent {
    h.open_prod().await;
    h.key(KeyAction::Events);
    let ViewKind::Events { stack } = h.app.view().kind.clone() else {
        panic!("e opened {:?}", h.app.view().kind);
    };
    let member = crate::model::StackRef {
        name: "prod-k8s-default-worker-nodes-17".into(),
        id: "member-17-id".into(),
    };
    let event = StackEvent {
        id: "6f1c2a4e-event".into(),
        time: demo_epoch() - chrono::Duration::seconds(30),
        resource_name: "server".into(),
        logical_id: "server".into(),
        physical_id: Some("9a8b7c6d-server".into()),
        status: Status::parse("UPDATE_FAILED"),
        status_reason: Some(LONG_REASON.into()),
        stack: Some(member),
        path: vec!["nodes".into(), "17".into()],
    };
    h.fake.with_data(|d| {
        d.events
            .entry(stack.id.clone())
            .or_default()
            .push(event.clone());
    });
    h.app.plan_refresh(true);
    h.settle().await;
    // The table catches up with its rows (and the followed tail's last) when drawn.
    h.render(80, 24);
    h.key(KeyAction::Open);
    event
}

#[tokio::test]
async fn enter_on_an_event_shows_it_whole_then_its_resource_in_the_tree() {
    let mut h = Harness::demo(10);
    let event = open_long_event(&mut h).await;
    assert!(
        matches!(&h.app.view().kind, ViewKind::Event { event: e, .. } if *e == event),
        "{:?}",
        h.app.view().kind
    );
    // Nothing to fetch: the event is the tail's.
    h.app.plan_refresh(true);
    assert!(!h
        .app
        .take_requests()
        .iter()
        .any(|r| matches!(r, Request::Resource { .. })));
    let screen = h.render(80, 24);
    for part in [
        "nodes > 17 > server",
        "UPDATE_FAILED",
        "9a8b7c6d-server",
        "6f1c2a4e-event",
        "(30s ago)",
        // The reason's last words: wrapped, not cut.
        "not found",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    assert!(!screen.contains('\u{1b}'), "{screen}");
    escaped_everywhere(&mut h);
    snap3!(h, "event_detail");
    // Enter again: the resource, in the tree of the stack that emitted the event.
    h.key(KeyAction::Open);
    assert!(
        matches!(&h.app.view().kind,
            ViewKind::Tree { stack, focus: Some(f) } if stack.id == "member-17-id" && f == "server"),
        "{:?}",
        h.app.view().kind
    );
}

/// Every demo stack's parameters (one hidden, as Heat shows it; one long) and template.
fn give_stack_extras(h: &Harness) {
    let template = "heat_template_version: 2021-04-16\ndescription: workers \u{1b}[31mred\n\
        parameters:\n  count:\n    type: number\n  ssh_key:\n    type: string\n    hidden: true\n\
        resources:\n  nodes:\n    type: OS::Heat::ResourceGroup\n    properties:\n      count: {get_param: count}\n";
    h.fake.with_data(|d| {
        for s in &d.stacks {
            let parameters = vec![
                ("OS::stack_name".to_string(), s.stack.name.clone()),
                ("count".to_string(), "10".to_string()),
                ("ssh_key".to_string(), "******".to_string()),
                (
                    "user_data".to_string(),
                    format!("#cloud-config {}", "x ".repeat(150)),
                ),
            ];
            d.stack_extras
                .insert(s.stack.id.clone(), (parameters, template.to_string()));
        }
    });
}

#[tokio::test]
async fn i_on_a_stack_shows_it_whole_with_hidden_parameters_kept_hidden() {
    let mut h = Harness::demo(10);
    give_outputs(&h);
    give_stack_extras(&h);
    h.settle().await;
    h.app
        .update(Action::Command(crate::message::Command::Stacks));
    h.settle().await;
    h.render(80, 24);
    h.press(KeyCode::Char('i'));
    let ViewKind::Stack { stack } = h.app.view().kind.clone() else {
        panic!("i opened {:?}", h.app.view().kind);
    };
    let asked = h.app.take_requests();
    assert!(
        asked
            .iter()
            .any(|r| matches!(r, Request::Stack { stack: s, .. } if s.id == stack.id)),
        "{asked:?}"
    );
    for r in asked {
        h.outstanding += 1;
        h.worker.submit(r);
    }
    h.settle().await;
    let screen = h.render(120, 40);
    for part in [
        "Parameters (4)",
        "******",
        "api_address",
        "The Kubernetes API endpoint",
        "Rollback",
        "60 min",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    escaped_everywhere(&mut h);
    snap3!(h, "stack_detail");
    // The template is at the end: scrolled to, escaped, never obeyed.
    h.render(80, 24);
    h.key(KeyAction::Bottom);
    let bottom = h.render(80, 24);
    assert!(bottom.contains("OS::Heat::ResourceGroup"), "{bottom}");
    assert!(!bottom.contains('\u{1b}'), "{bottom}");
}

#[tokio::test]
async fn i_in_the_tree_shows_the_tree_stack() {
    let mut h = Harness::demo(10);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Tree);
    h.settle().await;
    let ViewKind::Tree { stack: tree, .. } = h.app.view().kind.clone() else {
        panic!("t opened {:?}", h.app.view().kind);
    };
    h.key(KeyAction::StackDetail);
    assert!(
        matches!(&h.app.view().kind, ViewKind::Stack { stack } if stack.id == tree.id),
        "{:?}",
        h.app.view().kind
    );
}

/// A resource, event or stack named by a hostile tenant: the breadcrumbs escape it.
#[test]
fn hostile_names_are_escaped_in_the_breadcrumbs() {
    let evil = "res\u{1b}[2J".to_string();
    let stack = crate::message::StackTarget {
        id: "id".into(),
        name: Some(evil.clone()),
    };
    let event = StackEvent {
        id: "e".into(),
        time: demo_epoch(),
        resource_name: evil.clone(),
        logical_id: evil.clone(),
        physical_id: None,
        status: Status::parse("CREATE_FAILED"),
        status_reason: None,
        stack: None,
        path: vec![],
    };
    let kinds = [
        ViewKind::Resource {
            stack: stack.clone(),
            resource: evil.clone(),
        },
        ViewKind::Event {
            stack: stack.clone(),
            event,
        },
        ViewKind::Stack { stack },
    ];
    for kind in kinds {
        let crumb = crate::views::screen(&kind).crumb();
        assert!(crumb.contains("res\\e[2J"), "{crumb}");
        assert!(!crumb.contains('\u{1b}'), "{crumb}");
    }
}

/// #15: Enter on a ResourceGroup drills into its nested stack, so its own `resource show`
/// was out of reach; `D` (the key table's describe) opens it for any tree row.
#[tokio::test]
async fn d_describes_a_resource_group_where_enter_drills_in() {
    let mut h = Harness::demo(10);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Tree);
    h.settle().await;
    h.render(120, 40);
    let ViewKind::Tree { stack, .. } = h.app.view().kind.clone() else {
        panic!("t opened {:?}", h.app.view().kind);
    };
    let owner = h.app.store().trees[&stack.id]
        .data
        .as_ref()
        .expect("tree")
        .rows[0]
        .resource
        .clone();
    assert!(owner.nested.is_some(), "{owner:?}");
    let physical = owner.physical_id.clone().expect("created");
    h.fake.with_data(|d| {
        let refs = ("refs".to_string(), "[\"0\", \"1\"]".to_string());
        let extras = (vec![refs], String::new());
        d.resource_extras
            .insert((stack.id.clone(), owner.name.clone()), extras);
    });
    // The key as typed, through the key table.
    h.press(KeyCode::Char('D'));
    assert!(
        matches!(&h.app.view().kind,
            ViewKind::Resource { stack: s, resource } if s.id == stack.id && *resource == owner.name),
        "{:?}",
        h.app.view().kind
    );
    h.settle().await;
    let screen = h.render(120, 40);
    for part in [
        owner.resource_type.as_str(),
        physical.as_str(),
        owner.status.raw.as_str(),
        "Attributes (1)",
        "refs",
    ] {
        assert!(screen.contains(part), "{part}\n{screen}");
    }
    // Enter on the same row still drills into the nested stack.
    h.key(KeyAction::Back);
    h.press(KeyCode::Enter);
    assert!(
        matches!(&h.app.view().kind, ViewKind::Tree { stack: s, .. } if Some(&s.id) == owner.nested.as_ref().map(|n| &n.id)),
        "{:?}",
        h.app.view().kind
    );
    // The footer offers it in the tree, the help explains it.
    h.key(KeyAction::Back);
    assert!(h.render(120, 40).contains("D describe"));
    h.press(KeyCode::Char('?'));
    assert!(h.render(200, 60).contains("Describe the selected resource"));
}

/// The events of the dashboard's tail, oldest first (the tail's own order).
fn dashboard_tail(h: &Harness) -> Vec<StackEvent> {
    let ViewKind::Dashboard { cluster } = &h.app.view().kind else {
        panic!("not the dashboard: {:?}", h.app.view().kind);
    };
    crate::views::dashboard_tail(&h.app, h.app.store(), cluster)
        .into_iter()
        .map(|(_, e)| e.clone())
        .collect()
}

/// #15: the dashboard's tail had no rows to select. `tab` gives it the keys, the table keys
/// move a selection in it, Enter opens the selected event whole; Esc (or `tab`) gives the
/// keys back to the node groups, where Enter opens the nodes as before.
#[tokio::test]
async fn tab_gives_the_dashboard_tail_the_keys_and_enter_opens_an_event() {
    let mut h = Harness::demo(10);
    h.open_prod().await;
    let tail = dashboard_tail(&h);
    assert!(tail.len() >= 3, "{tail:?}");
    h.press(KeyCode::Tab);
    assert!(h.app.view().tail_pick.focused);
    let screen = h.render(120, 40);
    assert!(screen.contains("enter: event · tab: groups"), "{screen}");
    insta::assert_snapshot!("dashboard_tail_focused_120x40", screen);
    // Enter: the newest event.
    h.press(KeyCode::Enter);
    let newest = tail.last().expect("events");
    assert!(
        matches!(&h.app.view().kind, ViewKind::Event { event, .. } if event == newest),
        "{:?}",
        h.app.view().kind
    );
    let screen = h.render(120, 40);
    assert!(screen.contains(&newest.id), "{screen}");
    // Back on the dashboard the tail still has the keys: two up, Enter, the third newest.
    h.key(KeyAction::Back);
    h.press(KeyCode::Char('k'));
    h.press(KeyCode::Up);
    // A picked event stays put as new ones come: the tail says it scrolls.
    assert!(h.render(120, 40).contains("Events [SCROLL rel]"));
    h.press(KeyCode::Enter);
    let third = &tail[tail.len() - 3];
    assert!(
        matches!(&h.app.view().kind, ViewKind::Event { event, .. } if event == third),
        "{:?}",
        h.app.view().kind
    );
    h.key(KeyAction::Back);
    // `y` copies the selected event's id.
    assert_eq!(
        h.app.yank_text(crate::state::yank::Yank::Id),
        Some(("event id", third.id.clone()))
    );
    // Top, then `G`: the oldest, then the newest again.
    h.press(KeyCode::Char('g'));
    h.press(KeyCode::Enter);
    assert!(matches!(&h.app.view().kind, ViewKind::Event { event, .. } if event == &tail[0]));
    h.key(KeyAction::Back);
    h.press(KeyCode::Char('G'));
    h.press(KeyCode::Enter);
    assert!(matches!(&h.app.view().kind, ViewKind::Event { event, .. } if event == newest));
    h.key(KeyAction::Back);
    // Esc gives the keys back without leaving; Enter then opens the nodes, as before.
    h.press(KeyCode::Esc);
    assert!(!h.app.view().tail_pick.focused);
    assert!(matches!(h.app.view().kind, ViewKind::Dashboard { .. }));
    h.press(KeyCode::Enter);
    assert!(
        matches!(h.app.view().kind, ViewKind::Nodes { .. }),
        "{:?}",
        h.app.view().kind
    );
}
