//! Which scaling groups of a stack are node groups, decided from the resource types Heat
//! reports, never from names.
//!
//! A `GET .../resources?nested_depth=N` listing (Heat caps `nested_depth` at its
//! `max_nested_stack_depth`, 5 by default) gives every resource of a subtree with its type,
//! the stack that owns it and the nested stack it owns. A group's members share one
//! definition (a ResourceGroup's `resource_def`, an AutoScalingGroup's `resource`), so one
//! member's subtree tells what all hold: `crate::ops::discover` lists one member's, not the
//! whole stack's (at depth 2 and more Heat loads every member stack: 3.3 s for 200 members
//! against 0.05 s for one). From it:
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

/// Whether a group whose members hold `held` (one member's subtree, see the module doc) is a
/// node group; `any_server`: some group of the stack holds a server.
pub fn is_node_group(held: Holds, no_members: bool, any_server: bool) -> bool {
    // No member yet: nothing to judge by; shown, as Heat may be creating them.
    no_members || held.server || held.unlisted || (!any_server && !held.group)
}

/// Heat's scaling groups: their nested stack's resources are the members.
pub const GROUP_TYPES: [&str; 2] = ["OS::Heat::ResourceGroup", "OS::Heat::AutoScalingGroup"];

pub fn is_group_type(t: &str) -> bool {
    GROUP_TYPES.contains(&t)
}

/// The Heat type of a Nova server resource: the deepest cause an operator can ask Nova about.
pub const NOVA_SERVER: &str = "OS::Nova::Server";

/// Resource types whose physical id is a Nova server's id: Heat's Nova server and its CFN
/// twin (`AWS::EC2::Instance`, which Heat also boots through Nova). Only these can be looked
/// up with `GET /servers/{id}`.
pub fn is_nova_server_type(t: &str) -> bool {
    matches!(t, NOVA_SERVER | "AWS::EC2::Instance")
}

/// Resource types that are machines: the Nova servers of [`is_nova_server_type`], and Ironic's
/// bare-metal resources (any `OS::Ironic::` type, whose id is Ironic's, not Nova's).
pub fn is_server_type(t: &str) -> bool {
    is_nova_server_type(t) || t.starts_with("OS::Ironic::")
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
    /// The `nested_depth` the listing was asked with: stacks deeper are not in it.
    listed_depth: u32,
}

impl<'a> Tree<'a> {
    pub fn new(root: &StackRef, listing: &'a [ResourceInfo], listed_depth: u32) -> Tree<'a> {
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
            listed_depth,
        }
    }

    /// The resources of stack `id` (its own, not its nested stacks').
    pub fn resources_of(&self, id: &str) -> &[&'a ResourceInfo] {
        self.children.get(id).map(Vec::as_slice).unwrap_or(&[])
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
            let deep = self
                .depth_of(&nested.id)
                .is_none_or(|d| d > self.listed_depth);
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

    /// What stack `id` of the listing holds (its resources' subtrees).
    pub fn holds_stack(&self, id: &str) -> Holds {
        self.resources_of(id)
            .iter()
            .fold(Holds::default(), |acc, r| acc.merge(self.holds(r)))
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

    fn res(name: &str, rtype: &str, owner: &str, nested: Option<&str>) -> ResourceInfo {
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
            res("server", "OS::Nova::Server", "w0", Some("s0")),
            res("port", "OS::Neutron::Port", "w0", None),
        ];
        // A member of web (a template whose server is a provider registered as
        // OS::Nova::Server: Heat reports the registered name).
        let web = Tree::new(&sref("w0"), &listing, 4).holds_stack("w0");
        assert!(web.server && !web.group);
        assert!(is_node_group(web, false, true));
        // A member of volumes: a volume stand-in's own resources.
        let volume = vec![res("id", "OS::Heat::RandomString", "v0", None)];
        let held = Tree::new(&sref("v0"), &volume, 4).holds_stack("v0");
        assert!(!is_node_group(held, false, true));
        // The same without any server in the stack: a leaf group is taken for nodes.
        assert!(is_node_group(held, false, false));
    }

    #[test]
    fn a_rack_is_not_a_node_its_nodes_are() {
        let listing = vec![
            res("nodes", RG, "r1", Some("gn")),
            res("0", "node.yaml", "gn", Some("n0")),
            res("server", "OS::Nova::Server", "n0", None),
        ];
        let tree = Tree::new(&sref("r1"), &listing, 4);
        let rack = tree.holds_stack("r1");
        assert!(rack.group && !rack.server);
        assert!(!is_node_group(rack, false, true));
        assert!(!is_node_group(rack, false, false));
        assert!(tree.holds_stack("n0").server);
    }

    #[test]
    fn a_subtree_deeper_than_listed_is_unknown_and_kept() {
        let listing = vec![
            res("a", "a.yaml", "m0", Some("s1")),
            res("b", "b.yaml", "s1", Some("s2")),
        ];
        let held = Tree::new(&sref("m0"), &listing, 1).holds_stack("m0");
        assert!(held.unlisted);
        assert!(is_node_group(held, false, true));
        let shallow = Tree::new(&sref("m0"), &listing, 4).holds_stack("m0");
        assert!(!shallow.unlisted && !is_node_group(shallow, false, true));
    }
}
