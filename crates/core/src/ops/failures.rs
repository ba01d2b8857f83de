//! "Why did it fail?": the deepest failed resources of a stack, as dotted paths.
//!
//! Mirrors `openstack stack failures list`: a failed resource that owns a nested stack is
//! replaced by the failed resources inside it, recursively; a failed resource with no failed
//! children is a leaf failure. Paths read `root.resource.nested_resource...`.

use crate::model::{StackRef, StackResource};
use std::collections::HashMap;

/// One deepest failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// `root_stack.group.3.server`
    pub path: String,
    pub resource: StackResource,
}

/// Computes the deepest failures from a resource listing of `root` taken with a nested depth
/// large enough to reach the leaves. Resources are grouped by their owning stack; those with
/// no `owner` are taken to belong to the root.
pub fn deepest_failures(root: &StackRef, resources: &[StackResource]) -> Vec<Failure> {
    let mut by_owner: HashMap<&str, Vec<&StackResource>> = HashMap::new();
    for resource in resources {
        let owner = resource
            .owner
            .as_ref()
            .map(|s| s.id.as_str())
            .unwrap_or(root.id.as_str());
        by_owner.entry(owner).or_default().push(resource);
    }
    for children in by_owner.values_mut() {
        // Stable, readable order: numeric member names by number, others by name.
        children.sort_by(|a, b| member_order(&a.name).cmp(&member_order(&b.name)));
    }
    let mut out = Vec::new();
    // Guards against a malformed listing that links a stack to itself.
    let mut visiting = vec![root.id.clone()];
    collect(&by_owner, &root.id, &root.name, &mut visiting, &mut out);
    out
}

fn member_order(name: &str) -> (u8, u64, &str) {
    match name.parse::<u64>() {
        Ok(n) => (0, n, name),
        Err(_) => (1, 0, name),
    }
}

fn collect(
    by_owner: &HashMap<&str, Vec<&StackResource>>,
    stack_id: &str,
    prefix: &str,
    visiting: &mut Vec<String>,
    out: &mut Vec<Failure>,
) {
    let Some(children) = by_owner.get(stack_id) else {
        return;
    };
    for resource in children.iter() {
        let path = format!("{prefix}.{}", resource.name);
        // A failure may sit below a resource that is not failed itself: a group member
        // marked unhealthy (or failing a check) is `CHECK_FAILED` while its group and the
        // stack keep their `*_COMPLETE` (Heat changes no parent's status for it).
        let nested_failed = resource.nested.as_ref().is_some_and(|nested| {
            !visiting.contains(&nested.id) && {
                visiting.push(nested.id.clone());
                let below = failed_below(by_owner, &nested.id, visiting);
                visiting.pop();
                below
            }
        });
        match (&resource.nested, nested_failed) {
            (Some(nested), true) => {
                visiting.push(nested.id.clone());
                collect(by_owner, &nested.id, &path, visiting, out);
                visiting.pop();
            }
            _ if resource.status.is_failed() => out.push(Failure {
                path,
                resource: (*resource).clone(),
            }),
            _ => {}
        }
    }
}

/// Whether any resource of stack `stack_id`, or of a stack below it, is failed.
fn failed_below(
    by_owner: &HashMap<&str, Vec<&StackResource>>,
    stack_id: &str,
    visiting: &mut Vec<String>,
) -> bool {
    let Some(children) = by_owner.get(stack_id) else {
        return false;
    };
    children.iter().any(|r| {
        r.status.is_failed()
            || r.nested.as_ref().is_some_and(|n| {
                !visiting.contains(&n.id) && {
                    visiting.push(n.id.clone());
                    let below = failed_below(by_owner, &n.id, visiting);
                    visiting.pop();
                    below
                }
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;

    fn stack(name: &str, id: &str) -> StackRef {
        StackRef {
            name: name.into(),
            id: id.into(),
        }
    }

    fn res(name: &str, status: &str, owner: &StackRef, nested: Option<StackRef>) -> StackResource {
        StackResource {
            name: name.into(),
            logical_id: name.into(),
            physical_id: nested.as_ref().map(|n| n.id.clone()),
            resource_type: "T".into(),
            status: Status::parse(status),
            status_reason: Some(format!("{name} says {status}")),
            updated_at: None,
            owner: Some(owner.clone()),
            nested,
            parent_resource: None,
            required_by: vec![],
        }
    }

    #[test]
    fn descends_into_failed_nested_stacks_only_while_children_failed() {
        let root = stack("ng", "r");
        let group = stack("ng-nodes-x", "g");
        let m3 = stack("ng-nodes-x-3-y", "m3");
        let m10 = stack("ng-nodes-x-10-y", "m10");
        let listing = vec![
            res("nodes", "CREATE_FAILED", &root, Some(group.clone())),
            res("cluster_token", "CREATE_COMPLETE", &root, None),
            res("3", "CREATE_FAILED", &group, Some(m3.clone())),
            res("10", "CREATE_FAILED", &group, Some(m10.clone())),
            res("2", "CREATE_COMPLETE", &group, None),
            res("server", "CREATE_FAILED", &m3, None),
            res("address", "CREATE_COMPLETE", &m3, None),
            // member 10 failed but none of its children did: it is itself the leaf.
            res("server", "CREATE_COMPLETE", &m10, None),
        ];
        let failures = deepest_failures(&root, &listing);
        let paths: Vec<&str> = failures.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["ng.nodes.3.server", "ng.nodes.10"]);
        assert_eq!(
            failures[0].resource.status_reason.as_deref(),
            Some("server says CREATE_FAILED")
        );
    }

    #[test]
    fn a_member_marked_unhealthy_under_a_complete_group_is_a_failure() {
        // `caldera heat mark-unhealthy STACK kube_minions/4`: Heat sets the member
        // CHECK_FAILED and leaves the group and the stack as they were.
        let root = stack("c", "r");
        let group = stack("c-kube_minions-x", "g");
        let listing = vec![
            res(
                "kube_minions",
                "UPDATE_COMPLETE",
                &root,
                Some(group.clone()),
            ),
            res("api_lb", "CREATE_COMPLETE", &root, None),
            res("3", "UPDATE_COMPLETE", &group, None),
            res("4", "CHECK_FAILED", &group, None),
        ];
        let f = deepest_failures(&root, &listing);
        let paths: Vec<&str> = f.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["c.kube_minions.4"]);
        assert_eq!(f[0].resource.status.raw, "CHECK_FAILED");
    }

    #[test]
    fn no_failures_gives_empty_list() {
        let root = stack("ok", "r");
        let listing = vec![res("a", "CREATE_COMPLETE", &root, None)];
        assert!(deepest_failures(&root, &listing).is_empty());
    }
}
