//! A stack's outputs: the list, each evaluated only when asked for.

use super::*;

/// Every demo stack gets three outputs: an address list (JSON text), a kubeconfig-like
/// value longer than any pane, and one whose value carries terminal escapes.
pub(super) fn give_outputs(h: &Harness) {
    use crate::service::StackOutput;
    let output = |key: &str, description: Option<&str>, value: String| {
        let o = StackOutput {
            key: key.into(),
            description: description.map(Into::into),
        };
        (o, value)
    };
    let kubeconfig: String = (0..120)
        .map(|i| format!("    - name: user-{i}\n      token: {}\n", "x".repeat(70)))
        .collect();
    h.fake.with_data(|d| {
        for s in &d.stacks {
            let outputs = vec![
                output(
                    "api_address",
                    Some("The Kubernetes API endpoint"),
                    "https://10.0.0.5:6443".into(),
                ),
                output(
                    "kubeconfig",
                    Some("Admin credentials for the cluster (long)"),
                    format!("apiVersion: v1\nusers:\n{kubeconfig}"),
                ),
                output(
                    "motd",
                    None,
                    "hello \u{1b}]0;pwned\u{7} world\r\n\u{202e}desrever".into(),
                ),
            ];
            d.outputs.insert(s.stack.id.clone(), outputs);
        }
    });
}

/// Open the stack list, its first stack's outputs (`O`), and evaluate the `n`-th output.
async fn open_outputs(h: &mut Harness) {
    h.settle().await;
    h.app
        .update(Action::Command(crate::message::Command::Stacks));
    h.settle().await;
    h.press(KeyCode::Char('O'));
    h.settle().await;
}

#[tokio::test]
async fn snapshot_stack_outputs_list_resolving_and_values() {
    let mut h = Harness::demo(100);
    give_outputs(&h);
    open_outputs(&mut h).await;
    assert!(matches!(
        h.app.view().kind,
        ViewKind::Outputs { shown: None, .. }
    ));
    snap3!(h, "outputs");

    // Enter on the long one: "resolving…" until Heat answers, then the value, wrapped and
    // cut to the pane.
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    let waiting = h.render(80, 24);
    assert!(waiting.contains("resolving…"), "{waiting}");
    h.settle().await;
    snap3!(h, "outputs_long_value");

    // The value with escapes: shown escaped, nothing for the backstop to catch.
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    h.settle().await;
    let text = h.render(120, 40);
    assert!(text.contains("hello \\e]0;pwned\\x07 world\\r"), "{text}");
    // Tiny terminals too: the value pane and the list share what there is, without a panic.
    escaped_everywhere(&mut h);
}

#[tokio::test]
async fn outputs_key_from_the_tree_evaluates_only_the_output_asked_for() {
    let mut h = Harness::demo(100);
    give_outputs(&h);
    h.settle().await;
    h.app
        .update(Action::Command(crate::message::Command::Stacks));
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    let ViewKind::Tree { stack, .. } = h.app.view().kind.clone() else {
        panic!("enter on a stack opens its tree");
    };
    h.press(KeyCode::Char('O'));
    let listed: Vec<Request> = h.app.take_requests();
    // Listing the outputs evaluates none of them.
    assert!(listed
        .iter()
        .any(|r| matches!(r, Request::Outputs { stack: s, .. } if s.id == stack.id)));
    assert!(!listed.iter().any(|r| matches!(r, Request::Output { .. })));
    for r in listed {
        h.outstanding += 1;
        h.worker.submit(r);
    }
    h.settle().await;
    assert_eq!(h.app.screen().crumb(), format!("outputs {}", stack.label()));
    assert_eq!(h.app.screen().title(), "Outputs");

    h.press(KeyCode::Enter);
    let asked: Vec<Request> = h.app.take_requests();
    let keys: Vec<&str> = asked
        .iter()
        .filter_map(|r| match r {
            Request::Output { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(keys, ["api_address"]);
    for r in asked {
        h.outstanding += 1;
        h.worker.submit(r);
    }
    h.settle().await;
    assert!(h.render(120, 40).contains("https://10.0.0.5:6443"));
    // A tick does not evaluate it again; `r` does.
    h.app.plan_refresh(false);
    assert!(!h
        .app
        .take_requests()
        .iter()
        .any(|r| matches!(r, Request::Output { .. })));
    h.key(KeyAction::Refresh);
    assert!(h
        .app
        .take_requests()
        .iter()
        .any(|r| matches!(r, Request::Output { key, .. } if key == "api_address")));
    // Back to the tree it came from.
    h.press(KeyCode::Esc);
    assert!(matches!(h.app.view().kind, ViewKind::Tree { .. }));
}
