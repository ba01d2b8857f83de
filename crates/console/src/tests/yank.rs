//! `y` / `Y`: what each view copies.

use super::*;
use crate::tests::node_detail::failed_server;

/// `y` / `Y` in the view on screen: the status line and the text handed to the runtime.
fn yank(h: &mut Harness, k: KeyAction) -> (String, String) {
    h.key(k);
    let clip = h.app.take_clipboard().map(|c| c.text).unwrap_or_default();
    assert!(h.app.take_clipboard().is_none(), "a copy is written once");
    let status = h.app.status().map(|s| s.text.clone());
    (status.unwrap_or_default(), clip)
}

#[tokio::test]
async fn yank_copies_what_each_view_selects() {
    let mut h = Harness::demo(40);
    h.settle().await;
    let (status, text) = yank(&mut h, KeyAction::YankName);
    assert_eq!(text, "prod-k8s");
    assert_eq!(status, "copied cluster name prod-k8s");
    let (status, text) = yank(&mut h, KeyAction::Yank);
    let cluster = h.app.store().clusters.data.as_deref().unwrap_or(&[])[0].clone();
    assert_eq!(text, cluster.id);
    assert!(status.starts_with("copied cluster id "), "{status}");

    // The dashboard: its node groups.
    h.open_prod().await;
    let groups = h.app.store().nodegroups[&cluster.id]
        .data
        .clone()
        .unwrap_or_default();
    let (status, text) = yank(&mut h, KeyAction::YankName);
    assert!(groups.iter().any(|g| g.name == text), "{text}");
    assert!(status.starts_with("copied node group name"), "{status}");

    // Nodes: the server id (or the member's stack) and the address.
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    let ViewKind::Nodes { nodegroup, .. } = h.app.view().kind.clone() else {
        panic!("{:?}", h.app.view().kind)
    };
    let (status, ip) = yank(&mut h, KeyAction::YankName);
    assert!(ip.parse::<std::net::IpAddr>().is_ok(), "{status}: {ip}");
    assert!(status.starts_with("copied address "), "{status}");
    let node = h.app.store().nodes[&nodegroup.id]
        .rows
        .iter()
        .map(|r| &r.node)
        .find(|n| n.ip.as_deref() == Some(ip.as_str()))
        .cloned()
        .expect("the copied address is a node's");
    let (status, id) = yank(&mut h, KeyAction::Yank);
    let expected = node
        .server_id
        .clone()
        .or(node.stack_id.clone())
        .unwrap_or(node.key.member.clone());
    assert_eq!(id, expected, "{status}");
    // Once the node's detail was opened (Nova asked), `y` copies the server's id even where
    // the listing named only the member's stack, as the README says.
    h.fake.with_data(|d| {
        d.servers
            .insert(node.name.clone(), failed_server(&node.name));
    });
    h.key(KeyAction::Open);
    h.settle().await;
    // In the server's own view, `y` copies the id shown there, not the member's index.
    let (status, in_view) = yank(&mut h, KeyAction::Yank);
    assert!(status.starts_with("copied server id "), "{status}");
    h.key(KeyAction::Back);
    let asked = h
        .app
        .store()
        .servers
        .get(&node.key)
        .and_then(|slot| slot.data.as_ref())
        .map(|d| d.id.clone());
    assert!(
        node.server_id.is_none(),
        "the listing named the member's stack only"
    );
    let asked = asked.expect("Nova was asked for the node's server");
    assert_eq!(in_view, asked);
    let (status, id) = yank(&mut h, KeyAction::Yank);
    assert_eq!(id, asked, "{status}");
    assert!(status.starts_with("copied server id "), "{status}");

    // Events: the event's id and its resource's name.
    h.key(KeyAction::Back);
    h.key(KeyAction::Events);
    h.settle().await;
    let ViewKind::Events { stack } = h.app.view().kind.clone() else {
        panic!("{:?}", h.app.view().kind)
    };
    let (_, id) = yank(&mut h, KeyAction::Yank);
    let (status, name) = yank(&mut h, KeyAction::YankName);
    let events = &h.app.store().events[&stack.id].events;
    assert!(
        events.iter().any(|e| e.id == id && e.resource_name == name),
        "{status}: {id} {name}"
    );

    // The stack tree: the resource's physical id and its name.
    h.key(KeyAction::Back);
    h.key(KeyAction::Tree);
    h.settle().await;
    let ViewKind::Tree { stack, .. } = h.app.view().kind.clone() else {
        panic!("{:?}", h.app.view().kind)
    };
    let (_, id) = yank(&mut h, KeyAction::Yank);
    let (status, name) = yank(&mut h, KeyAction::YankName);
    let rows = &h.app.store().trees[&stack.id]
        .data
        .as_ref()
        .expect("tree")
        .rows;
    assert!(
        rows.iter()
            .any(|r| r.resource.physical_id.as_deref() == Some(id.as_str())
                && r.resource.name == name),
        "{status}: {id} {name}"
    );

    // The stack list: the stack's id and name.
    h.type_str(":stacks");
    h.press(KeyCode::Enter);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    // A top-level list: from deep in a stack, `:stacks` goes back to it, the trail does not
    // grow `… › stacks › … › stacks`.
    let depth = h.app.nav_depth();
    h.press(KeyCode::Enter);
    h.settle().await;
    h.type_str(":stacks");
    h.press(KeyCode::Enter);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    assert_eq!(h.app.nav_depth(), depth);
    let (_, id) = yank(&mut h, KeyAction::Yank);
    let (status, name) = yank(&mut h, KeyAction::YankName);
    let stacks = h.app.store().stacks.data.as_deref().unwrap_or(&[]);
    assert!(
        stacks
            .iter()
            .any(|s| s.stack.id == id && s.stack.name == name),
        "{status}: {id} {name}"
    );
}
