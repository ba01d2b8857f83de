//! Navigation: drill-down with Enter, the `:` commands and the view shortcuts, all of
//! which work from the "context" (the view's cluster / node group / stack or the
//! selected row).

use super::view::{StackTarget, View, ViewKind};
use super::{App, Level};
use crate::model::{Cluster, NodeGroup, ServerTarget};

/// Heat's resource type of a Nova server.
const SERVER_TYPE: &str = "OS::Nova::Server";

impl App {
    pub(super) fn push(&mut self, kind: ViewKind) {
        if self.view().kind == kind {
            return;
        }
        self.nav.push(View::new(kind));
        self.after_nav();
    }

    fn selected_cluster(&self) -> Option<Cluster> {
        let v = self.view();
        match &v.kind {
            ViewKind::Clusters => v
                .table
                .selected(self.store.clusters.data.as_deref().unwrap_or(&[]))
                .cloned(),
            _ => v.cluster().cloned(),
        }
    }

    pub(super) fn selected_nodegroup(&self) -> Option<(Cluster, NodeGroup)> {
        let v = self.view();
        match &v.kind {
            ViewKind::NodeGroups { cluster } | ViewKind::Dashboard { cluster } => {
                let items = self
                    .store
                    .nodegroups
                    .get(&cluster.id)
                    .and_then(|s| s.data.as_deref())
                    .unwrap_or(&[]);
                v.table
                    .selected(items)
                    .map(|g| (cluster.clone(), g.clone()))
            }
            ViewKind::Nodes { cluster, nodegroup } | ViewKind::Rollout { cluster, nodegroup } => {
                Some((cluster.clone(), nodegroup.clone()))
            }
            _ => None,
        }
    }

    /// A stack id made into a target, with its name if the stack list knows it.
    fn stack_target(&self, id: &str) -> StackTarget {
        let name = self
            .store
            .stacks
            .data
            .as_deref()
            .and_then(|ss| ss.iter().find(|s| s.stack.id == id))
            .map(|s| s.stack.name.clone())
            .or_else(|| self.store.stack_names.get(id).cloned());
        StackTarget {
            id: id.to_string(),
            name,
        }
    }

    /// The stack the `e` / `t` keys and `:events` / `:tree` act on.
    fn context_stack(&self) -> Option<StackTarget> {
        let v = self.view();
        match &v.kind {
            ViewKind::Clusters => self
                .selected_cluster()
                .and_then(|c| c.stack_id)
                .map(|id| self.stack_target(&id)),
            ViewKind::Stacks => v
                .table
                .selected(self.store.stacks.data.as_deref().unwrap_or(&[]))
                .map(|s| StackTarget::from_ref(&s.stack)),
            ViewKind::NodeGroups { .. }
            | ViewKind::Dashboard { .. }
            | ViewKind::Nodes { .. }
            | ViewKind::Rollout { .. } => self
                .selected_nodegroup()
                .and_then(|(_, g)| g.stack_id)
                .map(|id| self.stack_target(&id)),
            ViewKind::Events { stack } | ViewKind::Tree { stack, .. } => Some(stack.clone()),
            ViewKind::Journal => None,
            // The member's own stack, else its node group's.
            ViewKind::Server { target } => target
                .member_stack
                .as_deref()
                .or(target.group_stack.as_deref())
                .map(|id| self.stack_target(id)),
        }
    }

    pub(super) fn nav_clusters(&mut self) {
        self.nav.truncate(1);
        self.after_nav();
    }

    pub(super) fn nav_stacks(&mut self) {
        self.push(ViewKind::Stacks);
    }

    pub(super) fn nav_nodegroups(&mut self) {
        match self.selected_cluster() {
            Some(cluster) => self.push(ViewKind::NodeGroups { cluster }),
            None => self.set_status(Level::Warn, "no cluster selected"),
        }
    }

    pub(super) fn nav_dashboard(&mut self) {
        match self.selected_cluster() {
            Some(cluster) => self.push(ViewKind::Dashboard { cluster }),
            None => self.set_status(Level::Warn, "no cluster selected"),
        }
    }

    /// The nodes of the selected node group, else of the context's stack (any stack: every
    /// scaling group's members, see `ops::discover`).
    pub(super) fn nav_nodes(&mut self) {
        if let Some((cluster, nodegroup)) = self.selected_nodegroup() {
            return self.push(ViewKind::Nodes { cluster, nodegroup });
        }
        match self.context_stack() {
            Some(stack) => {
                let (cluster, nodegroup) = stack_as_nodegroup(&stack);
                self.push(ViewKind::Nodes { cluster, nodegroup })
            }
            None => self.set_status(Level::Warn, "no node group or stack selected"),
        }
    }

    pub(super) fn nav_events(&mut self) {
        match self.context_stack() {
            Some(stack) => self.push(ViewKind::Events { stack }),
            None => self.set_status(Level::Warn, "no stack here"),
        }
    }

    pub(super) fn nav_tree(&mut self) {
        match self.context_stack() {
            Some(stack) => self.push(ViewKind::Tree { stack, focus: None }),
            None => self.set_status(Level::Warn, "no stack here"),
        }
    }

    /// Enter: cluster -> dashboard -> nodes -> member in the stack tree -> nested stack.
    pub(super) fn open_selected(&mut self) {
        self.prepare();
        let v = self.view();
        match &v.kind {
            ViewKind::Clusters => self.nav_dashboard(),
            ViewKind::Stacks => self.nav_tree(),
            ViewKind::NodeGroups { .. } | ViewKind::Dashboard { .. } => self.nav_nodes(),
            // Every node is a Nova server (Heat member, Magnum on Heat, Cluster API): its
            // detail. The member in its stack tree stays one key away (`t`).
            ViewKind::Nodes { nodegroup, .. } => {
                let target = v
                    .table
                    .selected(
                        self.store
                            .nodes
                            .get(&nodegroup.id)
                            .map(|s| s.rows.as_slice())
                            .unwrap_or(&[]),
                    )
                    .map(|r| ServerTarget {
                        key: r.node.key.clone(),
                        name: r.node.name.clone(),
                        server_id: r.node.server_id.clone(),
                        member_stack: r.node.stack_id.clone(),
                        group_stack: nodegroup.stack_id.clone(),
                    });
                match target {
                    Some(target) => {
                        // Opened again: a fresh look (the console log moves on).
                        self.store.servers.remove(&target.key);
                        self.push(ViewKind::Server { target })
                    }
                    None => self.set_status(Level::Warn, "no node selected"),
                }
            }
            ViewKind::Events { stack } => {
                let items = self
                    .store
                    .events
                    .get(&stack.id)
                    .map(|l| l.events.as_slice())
                    .unwrap_or(&[]);
                let target = v.table.selected(items).map(|e| {
                    (
                        e.stack
                            .as_ref()
                            .map(StackTarget::from_ref)
                            .unwrap_or_else(|| stack.clone()),
                        e.resource_name.clone(),
                    )
                });
                if let Some((stack, focus)) = target {
                    self.push(ViewKind::Tree {
                        stack,
                        focus: Some(focus),
                    });
                }
            }
            ViewKind::Rollout { .. } => self.nav_nodes(),
            ViewKind::Journal => self.journal_detail(),
            ViewKind::Server { .. } => {}
            ViewKind::Tree { stack, .. } => {
                let rows = self
                    .store
                    .trees
                    .get(&stack.id)
                    .and_then(|s| s.data.as_ref())
                    .map(|t| t.rows.as_slice())
                    .unwrap_or(&[]);
                let selected = v.table.selected(rows).map(|r| &r.resource);
                // A server resource that Nova created (it has a physical id): its detail.
                let server = selected
                    .filter(|r| r.resource_type == SERVER_TYPE)
                    .and_then(|r| {
                        Some(ServerTarget {
                            key: crate::model::NodeKey {
                                nodegroup: r
                                    .owner
                                    .as_ref()
                                    .map_or(stack.id.clone(), |o| o.id.clone()),
                                member: r.name.clone(),
                            },
                            name: r.name.clone(),
                            server_id: Some(r.physical_id.clone().filter(|p| !p.is_empty())?),
                            member_stack: r.owner.as_ref().map(|o| o.id.clone()),
                            group_stack: None,
                        })
                    });
                match (selected.and_then(|r| r.nested.clone()), server) {
                    (Some(nested), _) => self.push(ViewKind::Tree {
                        stack: StackTarget::from_ref(&nested),
                        focus: None,
                    }),
                    (None, Some(target)) => self.push(ViewKind::Server { target }),
                    (None, None) => {
                        self.set_status(Level::Info, "this resource has no nested stack")
                    }
                }
            }
        }
    }
}

/// Whether a node group is a plain stack seen as one ([`stack_as_nodegroup`]).
pub fn is_stack_standin(g: &NodeGroup) -> bool {
    g.cluster_id == g.id && g.stack_id.as_deref() == Some(g.id.as_str())
}

/// A stack seen as one node group (the nodes pane of a plain stack): the node stream reads
/// every scaling group in it. Not a cluster of any driver, so no action reaches it by name.
pub(super) fn stack_as_nodegroup(stack: &StackTarget) -> (Cluster, NodeGroup) {
    let name = stack.label().to_string();
    let unknown = crate::model::Status::parse("");
    let cluster = Cluster {
        id: stack.id.clone(),
        name: name.clone(),
        driver: crate::model::DriverKind::HeatNative,
        status: unknown.clone(),
        status_reason: None,
        health: crate::model::Health::Unknown,
        health_reason: None,
        master_count: 0,
        node_count: 0,
        nodegroup_count: None,
        template_id: None,
        coe_version: None,
        api_address: None,
        stack_id: Some(stack.id.clone()),
        created_at: None,
        updated_at: None,
        capi: None,
    };
    let nodegroup = NodeGroup {
        id: stack.id.clone(),
        name,
        cluster_id: stack.id.clone(),
        role: crate::model::Role::Other,
        flavor: None,
        image: None,
        version: None,
        zone: None,
        node_count: 0,
        min_node_count: None,
        max_node_count: None,
        status: unknown,
        status_reason: None,
        is_default: false,
        stack_id: Some(stack.id.clone()),
        capi: None,
        node_labels: Default::default(),
        node_taints: Vec::new(),
        created_at: None,
        updated_at: None,
    };
    (cluster, nodegroup)
}
