//! `stack check` (`POST .../actions {"check": null}`) the way Heat's engine runs it
//! (`Stack.check` → `stack_task(CHECK)`; `Resource.check`; read in openstack/heat).
//!
//! - The stack goes `CHECK_IN_PROGRESS` ("Stack CHECK started"), then every resource is
//!   checked in dependency order.
//! - A resource that can check itself goes `CHECK_IN_PROGRESS` → `CHECK_COMPLETE`
//!   ("state changed"), or `CHECK_FAILED` with the failure. A server checks that Nova says
//!   `ACTIVE` (`'status': expected 'ACTIVE', got 'ERROR'`); a resource owning a nested stack
//!   (ResourceGroup, a template resource) runs `stack check` on that stack and waits for it,
//!   so nested stacks emit their own events, depth first.
//! - A resource that cannot (OS::Heat::Value, OS::Heat::None, OS::Neutron::Port...) goes
//!   straight to `CHECK_COMPLETE` "CHECK not supported for `<type>`": one event, no
//!   IN_PROGRESS. One never created (INIT_COMPLETE) is left alone.
//! - A failed resource's dependents are not checked; the stack ends `CHECK_FAILED`
//!   "Resource CHECK failed: [...]" (Heat aggregates the failures and prints Python's list).
//! - Then Heat walks the tree for resources that cannot check and, when one is found, sets
//!   the stack's state again with ". 'CHECK' not fully supported (see resources)" appended:
//!   a second stack event. The walk stops at the first such resource, and nested stacks on
//!   its way get the same second (third...) event, as each level's walk reaches them.
//!
//! A resource's state is only stored (and an event written) when it changes, as Heat's
//! `Resource.state_set` does. The whole check happens at one simulated instant.

use crate::world::{completed, started, Action, StackRole, State, Status, World};
use std::collections::HashSet;
use std::sync::Arc;

const CHECK: Action = Action::Check;
const NOT_FULLY_SUPPORTED: &str = ". 'CHECK' not fully supported (see resources)";

/// Checks stack `ix` and its nested stacks.
pub fn check_stack(w: &mut World, ix: usize) {
    run(w, ix);
}

/// One stack's check: its resources, its final state, then the "not fully supported" walk.
/// Returns the stack's final state and reason (what a parent resource reads when polling).
fn run(w: &mut World, ix: usize) -> (State, String) {
    w.set_stack_status(ix, Status::new(CHECK, State::InProgress), started(CHECK));
    let mut failures: Vec<String> = Vec::new();
    let mut skipped: HashSet<Arc<str>> = HashSet::new();
    let reqs = requirements(w, ix);
    for name in dependency_order(&reqs) {
        if skipped.contains(&name) {
            continue;
        }
        if let Err(failure) = check_resource(w, ix, &name) {
            failures.push(failure);
            skipped.extend(dependents(&reqs, &name));
        }
    }
    let (state, reason) = if failures.is_empty() {
        (State::Complete, completed(CHECK))
    } else {
        let list: Vec<String> = failures.iter().map(|f| py_repr(f)).collect();
        (
            State::Failed,
            format!("Resource CHECK failed: [{}]", list.join(", ")),
        )
    };
    w.set_stack_status(ix, Status::new(CHECK, state), reason);
    supports_check(w, ix);
    let reason = w.stack(ix).map(|s| s.reason.clone()).unwrap_or_default();
    (state, reason)
}

/// Heat's `Stack.supports_check_action`: true when every resource (nested ones included) can
/// check itself; when not, the stack's state is set again with the note appended (an event).
fn supports_check(w: &mut World, ix: usize) -> bool {
    let resources: Vec<(Option<usize>, Arc<str>)> = match w.stack(ix) {
        Some(s) => s
            .resources
            .iter()
            .map(|r| (r.nested.filter(|n| w.stack(*n).is_some()), r.rtype.clone()))
            .collect(),
        None => return true,
    };
    // Python's `all()` over a generator: the walk stops at the first resource that cannot.
    let all = resources.iter().all(|(nested, rtype)| match nested {
        Some(n) => supports_check(w, *n),
        None => can_check(rtype),
    });
    if !all {
        if let Some(st) = w.stack(ix) {
            let (status, reason) = (st.status, format!("{}{NOT_FULLY_SUPPORTED}", st.reason));
            w.set_stack_status(ix, Status::new(CHECK, status.state), reason);
        }
    }
    all
}

/// Resource types with a `handle_check` in Heat, among those the simulator builds.
fn can_check(rtype: &str) -> bool {
    rtype == "OS::Nova::Server"
}

/// Stores a resource's state, writing an event only when the state changes.
fn set_state(w: &mut World, ix: usize, name: &str, status: Status, reason: &str) {
    let same = w
        .stack(ix)
        .and_then(|s| s.resource(name))
        .is_some_and(|r| r.status == status);
    if same {
        if let Some(r) = w.stack_mut(ix).and_then(|s| s.resource_mut(name)) {
            r.reason = reason.to_string();
        }
    } else {
        w.set_resource_status(ix, name, status, reason);
    }
}

/// `Resource.check`: `Err` carries the failure as Heat prints it (`Error: resources.server:
/// 'status': expected 'ACTIVE', got 'ERROR'`).
fn check_resource(w: &mut World, ix: usize, name: &str) -> Result<(), String> {
    let Some(r) = w.stack(ix).and_then(|s| s.resource(name)) else {
        return Ok(());
    };
    let (rtype, status, nested, physical_id) = (
        r.rtype.clone(),
        r.status,
        r.nested.filter(|n| w.stack(*n).is_some()),
        r.physical_id.clone(),
    );
    let never_created = status == Status::new(Action::Init, State::Complete);
    if nested.is_none() && !can_check(&rtype) {
        if !never_created {
            let reason = format!("CHECK not supported for {rtype}");
            set_state(w, ix, name, Status::new(CHECK, State::Complete), &reason);
        }
        return Ok(());
    }
    if never_created {
        let reason = format!("Can not check {name}, resource not created yet.");
        set_state(w, ix, name, Status::new(CHECK, State::Failed), &reason);
        return Err(failure(
            "Exception",
            &[name.to_string()],
            &format!("Resource {name} not created yet."),
        ));
    }
    set_state(
        w,
        ix,
        name,
        Status::new(CHECK, State::InProgress),
        crate::world::STATE_CHANGED,
    );
    let outcome = match nested {
        Some(n) => match run(w, n) {
            (State::Failed, reason) => Err(nested_failure(name, &reason)),
            _ => Ok(()),
        },
        None => match crate::nova::server_status(w, &physical_id) {
            Some("ACTIVE") => Ok(()),
            // A server Nova does not know: Heat's client raises NotFound.
            None => Err(failure(
                "NotFound",
                &[name.to_string()],
                &format!("Instance {physical_id} could not be found."),
            )),
            Some(other) => Err(failure(
                "Error",
                &[name.to_string()],
                &format!("'status': expected 'ACTIVE', got '{other}'"),
            )),
        },
    };
    match &outcome {
        Ok(()) => set_state(
            w,
            ix,
            name,
            Status::new(CHECK, State::Complete),
            crate::world::STATE_CHANGED,
        ),
        Err(f) => set_state(w, ix, name, Status::new(CHECK, State::Failed), f),
    }
    outcome
}

/// A nested stack's failure as its owning resource reports it: Heat's `ResourceFailure`
/// re-reads the nested stack's reason (`Resource CHECK failed: <error>: <path>: <message>`),
/// splitting it at every colon, and puts this resource in front of the path.
fn nested_failure(name: &str, nested_reason: &str) -> String {
    let parts: Vec<&str> = nested_reason.split(':').map(str::trim).collect();
    if nested_reason.contains("Resource CHECK failed: ") && parts.len() >= 4 {
        let mut path = vec![name.to_string()];
        path.extend(parts[2].split('.').map(str::to_string));
        failure(parts[1], &path, &parts[3..].join(": "))
    } else {
        failure("", &[name.to_string()], nested_reason)
    }
}

/// `HeatExceptionWithPath`'s text: `<error>: <path>: <message>`, the path starting at
/// `resources` with numeric items in brackets (`resources[0].resources.server`).
fn failure(error: &str, path_after_resources: &[String], message: &str) -> String {
    let mut path = String::from("resources");
    for item in path_after_resources {
        if !item.is_empty() && item.chars().all(|c| c.is_ascii_digit()) {
            path.push_str(&format!("[{item}]"));
        } else {
            path.push('.');
            path.push_str(item);
        }
    }
    let error = if error.is_empty() {
        String::new()
    } else {
        format!("{error}: ")
    };
    format!("{error}{path}: {message}")
}

/// Python's `repr` of a string (Heat prints its list of failures with `str(list)`): single
/// quotes unless the text holds a single quote and no double one.
fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Each resource of stack `ix` (template order) with the resources it waits for. The
/// simulator's member templates: caldera's address value reads the server (`get_attr`);
/// Magnum's server is booted on its port.
type Requirements = Vec<(Arc<str>, Vec<Arc<str>>)>;

fn requirements(w: &World, ix: usize) -> Requirements {
    let Some(st) = w.stack(ix) else {
        return vec![];
    };
    let mut out: Requirements = st
        .resources
        .iter()
        .map(|r| (r.name.clone(), Vec::new()))
        .collect();
    for r in &st.resources {
        for dependent in &r.required_by {
            if let Some((_, reqs)) = out.iter_mut().find(|(n, _)| n == dependent) {
                reqs.push(r.name.clone());
            }
        }
    }
    if let StackRole::Member(g, _) = st.role {
        let layout = w.groups[g].layout;
        let (server, address) = (layout.server(), layout.address().0);
        let (first, second) = if layout.is_magnum() {
            (address, server)
        } else {
            (server, address)
        };
        if let (Some(f), Some((_, reqs))) = (
            st.resource(first),
            out.iter_mut().find(|(n, _)| &**n == second),
        ) {
            reqs.push(f.name.clone());
        }
    }
    out
}

/// The resources, each after those it requires (template order otherwise).
fn dependency_order(reqs: &Requirements) -> Vec<Arc<str>> {
    let mut done: HashSet<Arc<str>> = HashSet::new();
    let mut out = Vec::with_capacity(reqs.len());
    while out.len() < reqs.len() {
        let before = out.len();
        for (n, needs) in reqs {
            if !done.contains(n) && needs.iter().all(|r| done.contains(r)) {
                done.insert(n.clone());
                out.push(n.clone());
            }
        }
        if out.len() == before {
            // A cycle cannot be created in Heat; take the rest in template order.
            out.extend(
                reqs.iter()
                    .map(|(n, _)| n)
                    .filter(|n| !done.contains(*n))
                    .cloned(),
            );
            break;
        }
    }
    out
}

/// The resources that require `name`, directly or not: Heat cancels them when it fails.
fn dependents(reqs: &Requirements, name: &str) -> HashSet<Arc<str>> {
    let mut out: HashSet<Arc<str>> = HashSet::new();
    let mut frontier: Vec<Arc<str>> = vec![Arc::from(name)];
    while let Some(f) = frontier.pop() {
        for (n, needs) in reqs {
            if !out.contains(n) && needs.contains(&f) {
                out.insert(n.clone());
                frontier.push(n.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_print_as_heat_prints_them() {
        let server = failure(
            "Error",
            &["server".into()],
            "'status': expected 'ACTIVE', got 'ERROR'",
        );
        assert_eq!(
            server,
            "Error: resources.server: 'status': expected 'ACTIVE', got 'ERROR'"
        );
        let member_stack = format!("Resource CHECK failed: [{}]", py_repr(&server));
        assert_eq!(
            member_stack,
            "Resource CHECK failed: [\"Error: resources.server: 'status': expected 'ACTIVE', got 'ERROR'\"]"
        );
        // The group's member resource re-reads it, splitting at every colon.
        assert_eq!(
            nested_failure("3", &member_stack),
            "[\"Error: resources[3].resources.server: 'status': expected 'ACTIVE', got 'ERROR'\"]"
        );
        assert_eq!(py_repr("a'b\"c"), "'a\\'b\"c'");
    }
}
