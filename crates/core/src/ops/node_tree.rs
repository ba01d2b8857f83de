//! Which scaling groups of a stack are node groups, decided from the resource types Heat
//! reports, never from names.
//!
//! One listing, `GET .../resources?nested_depth=5` (Heat caps `nested_depth` at its
//! `max_nested_stack_depth`, 5 by default), gives every resource of the tree with its type,
//! the stack that owns it and the nested stack it owns. From it:
//!
//! - **A node is a group member whose subtree holds a server**: an `OS::Nova::Server`, an
//!   Ironic node, a CFN `AWS::EC2::Instance`, or a provider template registered under one of
//!   those names in `resource_registry` (Heat then reports the registered name, not the
//!   template's file name). The subtree stops at a nested scaling group: servers in a group
//!   inside the member are that group's nodes (a rack of nodes is not a node).
//! - **A node group is a group whose members are nodes.** Groups of volumes, ports, VIPs or
//!   random strings are not, though they stay in the stack's tree.
//! - **Groups inside group members count** (`racks/1/nodes`): every group in the listing is
//!   named by its resource path from the stack asked about.
//! - A stack that holds no server at all (stand-ins of test clouds with no Nova, a subtree
//!   deeper than Heat lists) cannot be judged by type: there every group whose members hold
//!   no group of their own is taken for a node group, as before types were read.

use crate::api::heat::ResourceInfo;
use crate::model::StackRef;
use std::collections::HashMap;

/// Nesting levels listed at once (Heat's default `max_nested_stack_depth`).
pub const TREE_DEPTH: u32 = 5;

/// Heat's scaling groups: their nested stack's resources are the members.
pub const GROUP_TYPES: [&str; 2] = ["OS::Heat::ResourceGroup", "OS::Heat::AutoScalingGroup"];

pub fn is_group_type(t: &str) -> bool {
    GROUP_TYPES.contains(&t)
}

/// Resource types that are machines: Heat's Nova server (and its CFN twin), and Ironic's
/// bare-metal resources (any `OS::Ironic::` type).
pub fn is_server_type(t: &str) -> bool {
    matches!(t, "OS::Nova::Server" | "AWS::EC2::Instance") || t.starts_with("OS::Ironic::")
}

/// What a subtree holds, as far as the listing goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holds {
    /// A server, outside any nested group.
    pub server: bool,
    /// A scaling group of its own.
    pub group: bool,
    /// A nested stack below the listing's depth: its contents are not known.
    pub unlisted: bool,
}

impl Holds {
    fn merge(self, other: Holds) -> Holds {
        Holds {
            server: self.server || other.server,
            group: self.group || other.group,
            unlisted: self.unlisted || other.unlisted,
        }
    }
}

/// A `nested_depth` listing arranged by owner stack.
pub struct Tree<'a> {
    root: StackRef,
    /// Owner stack id -> its resources (the root's under its own id).
    children: HashMap<String, Vec<&'a ResourceInfo>>,
    /// Nested stack id -> the resource owning it.
    parent_of: HashMap<String, &'a ResourceInfo>,
    /// Whether the listing holds any server at all.
    any_server: bool,
}

impl<'a> Tree<'a> {
    pub fn new(root: &StackRef, listing: &'a [ResourceInfo]) -> Tree<'a> {
        let mut children: HashMap<String, Vec<&ResourceInfo>> = HashMap::new();
        let mut parent_of = HashMap::new();
        for r in listing {
            // A listing of depth 0 may carry no owner links: those resources are the root's.
            let owner = r
                .resource
                .owner
                .as_ref()
                .map_or(root.id.clone(), |o| o.id.clone());
            children.entry(owner).or_default().push(r);
            if let Some(n) = &r.resource.nested {
                parent_of.insert(n.id.clone(), r);
            }
        }
        Tree {
            root: root.clone(),
            children,
            parent_of,
            any_server: listing
                .iter()
                .any(|r| is_server_type(&r.resource.resource_type)),
        }
    }

    pub fn any_server(&self) -> bool {
        self.any_server
    }

    /// The resources of stack `id` (its own, not its nested stacks').
    pub fn resources_of(&self, id: &str) -> &[&'a ResourceInfo] {
        self.children.get(id).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every resource of the tree, root's first.
    pub fn all(&self) -> impl Iterator<Item = &'a ResourceInfo> + '_ {
        self.children.values().flatten().copied()
    }

    /// Levels of nesting from the root down to stack `id` (the root is 0); `None` when the
    /// stack is not in the listing.
    fn depth_of(&self, id: &str) -> Option<u32> {
        let mut current = id.to_string();
        // Bounded walk: a malformed listing with a cycle must not hang.
        for depth in 0..64 {
            if current == self.root.id {
                return Some(depth);
            }
            let owner = self.parent_of.get(&current)?.resource.owner.as_ref();
            current = owner.map_or(self.root.id.clone(), |o| o.id.clone());
        }
        None
    }

    /// The resource path of `r` from the root: `racks/1/nodes`.
    pub fn path_of(&self, r: &ResourceInfo) -> String {
        let mut steps = vec![r.resource.name.clone()];
        let mut owner = r.resource.owner.as_ref().map(|o| o.id.clone());
        for _ in 0..64 {
            let Some(id) = owner.filter(|id| *id != self.root.id) else {
                break;
            };
            let Some(parent) = self.parent_of.get(&id) else {
                break;
            };
            steps.push(parent.resource.name.clone());
            owner = parent.resource.owner.as_ref().map(|o| o.id.clone());
        }
        steps.reverse();
        steps.join("/")
    }

    /// What resource `r` holds: itself when it is a server or a group, else what its nested
    /// stack holds.
    pub fn holds(&self, r: &ResourceInfo) -> Holds {
        self.holds_at(r, 0)
    }

    fn holds_at(&self, r: &ResourceInfo, depth: usize) -> Holds {
        let t = r.resource.resource_type.as_str();
        if is_server_type(t) {
            return Holds {
                server: true,
                ..Holds::default()
            };
        }
        if is_group_type(t) {
            return Holds {
                group: true,
                ..Holds::default()
            };
        }
        let Some(nested) = &r.resource.nested else {
            return Holds::default();
        };
        let below = self.resources_of(&nested.id);
        if below.is_empty() && depth < 64 {
            // Nothing listed under it: empty, or deeper than Heat listed.
            let deep = self.depth_of(&nested.id).is_none_or(|d| d > TREE_DEPTH);
            return Holds {
                unlisted: deep,
                ..Holds::default()
            };
        }
        below
            .iter()
            .filter(|_| depth < 64)
            .fold(Holds::default(), |acc, c| {
                acc.merge(self.holds_at(c, depth + 1))
            })
    }

    /// Whether the group whose members are `members` is a node group (see the module doc).
    pub fn is_node_group(&self, members: &[&ResourceInfo]) -> bool {
        let held = members
            .iter()
            .fold(Holds::default(), |acc, m| acc.merge(self.holds(m)));
        if members.is_empty() || held.server || held.unlisted {
            // No member yet: nothing to judge by; shown, as Heat may be creating them.
            return true;
        }
        !self.any_server && !held.group
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{StackResource, Status};

    fn sref(id: &str) -> StackRef {
        StackRef {
            name: format!("{id}-name"),
            id: id.into(),
        }
    }

    pub(crate) fn res(name: &str, rtype: &str, owner: &str, nested: Option<&str>) -> ResourceInfo {
        ResourceInfo {
            resource: StackResource {
                name: name.into(),
                logical_id: name.into(),
                physical_id: nested.map(str::to_string),
                resource_type: rtype.into(),
                status: Status::parse("CREATE_COMPLETE"),
                status_reason: None,
                updated_at: None,
                owner: Some(sref(owner)),
                nested: nested.map(sref),
                parent_resource: None,
                required_by: vec![],
            },
            created_at: None,
            attributes: None,
        }
    }

    const RG: &str = "OS::Heat::ResourceGroup";

    #[test]
    fn a_group_of_volumes_beside_a_group_of_servers_is_no_node_group() {
        let listing = vec![
            res("web", RG, "root", Some("gw")),
            res("disks", RG, "root", Some("gd")),
            res("0", "web.yaml", "gw", Some("w0")),
            // A provider template registered as a server: Heat reports the registered name.
            res("server", "OS::Nova::Server", "w0", Some("s0")),
            res("0", "OS::Cinder::Volume", "gd", None),
        ];
        let tree = Tree::new(&sref("root"), &listing);
        let members = |g: &str| -> Vec<&ResourceInfo> { tree.resources_of(g).to_vec() };
        assert!(tree.is_node_group(&members("gw")));
        assert!(!tree.is_node_group(&members("gd")));
    }

    #[test]
    fn a_rack_is_not_a_node_its_nodes_are() {
        let listing = vec![
            res("racks", RG, "root", Some("gr")),
            res("1", "rack.yaml", "gr", Some("r1")),
            res("nodes", RG, "r1", Some("gn")),
            res("0", "node.yaml", "gn", Some("n0")),
            res("server", "OS::Nova::Server", "n0", None),
        ];
        let tree = Tree::new(&sref("root"), &listing);
        assert!(!tree.is_node_group(tree.resources_of("gr")));
        assert!(tree.is_node_group(tree.resources_of("gn")));
        assert_eq!(tree.path_of(&listing[4]), "racks/1/nodes/0/server");
    }

    #[test]
    fn without_any_server_leaf_groups_are_taken_for_node_groups() {
        let listing = vec![
            res("racks", RG, "root", Some("gr")),
            res("1", "rack.yaml", "gr", Some("r1")),
            res("nodes", RG, "r1", Some("gn")),
            res("0", "node.yaml", "gn", Some("n0")),
            res("machine", "OS::Heat::None", "n0", None),
        ];
        let tree = Tree::new(&sref("root"), &listing);
        assert!(!tree.is_node_group(tree.resources_of("gr")));
        assert!(tree.is_node_group(tree.resources_of("gn")));
    }
}
