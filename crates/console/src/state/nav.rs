//! Navigation: drill-down with Enter, the `:` commands and the view shortcuts, all of
//! which work from the "context" (the view's cluster / node group / stack or the
//! selected row).

use super::view::{StackTarget, View, ViewKind};
use super::{App, Level};
use crate::model::{Cluster, NodeGroup};

impl App {
    pub(crate) fn push(&mut self, kind: ViewKind) {
        if self.view().kind == kind {
            return;
        }
        self.nav.push(View::new(kind));
        self.after_nav();
    }

    pub(crate) fn selected_cluster(&self) -> Option<Cluster> {
        let v = self.view();
        match &v.kind {
            ViewKind::Clusters => v
                .table
                .selected(self.store.clusters.data.as_deref().unwrap_or(&[]))
                .cloned(),
            _ => v.cluster().cloned(),
        }
    }

    pub(crate) fn selected_nodegroup(&self) -> Option<(Cluster, NodeGroup)> {
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
    pub(crate) fn stack_target(&self, id: &str) -> StackTarget {
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

    /// The stack the `e` / `t` / `O` keys and `:events` / `:tree` act on.
    pub(crate) fn context_stack(&self) -> Option<StackTarget> {
        self.screen().context_stack(self)
    }

    pub(super) fn nav_clusters(&mut self) {
        self.nav.truncate(1);
        self.after_nav();
    }

    /// `:stacks` goes back to the stack list where the trail holds it already (its place
    /// in the list kept), so the breadcrumbs never grow `… › stacks › … › stacks`; else it
    /// opens it on top, and Esc comes back to where the operator was.
    pub(super) fn nav_stacks(&mut self) {
        match self.nav.iter().position(|v| v.kind == ViewKind::Stacks) {
            Some(at) => {
                self.nav.truncate(at + 1);
                self.after_nav();
            }
            None => self.push(ViewKind::Stacks),
        }
    }

    pub(super) fn nav_nodegroups(&mut self) {
        match self.cluster_or_stack() {
            Some(cluster) => self.push(ViewKind::NodeGroups { cluster }),
            None => self.set_status(Level::Warn, "no cluster or stack selected"),
        }
    }

    pub(crate) fn nav_dashboard(&mut self) {
        match self.cluster_or_stack() {
            Some(cluster) => self.push(ViewKind::Dashboard { cluster }),
            None => self.set_status(Level::Warn, "no cluster or stack selected"),
        }
    }

    /// The selected cluster, else the stack in context seen as one: any stack's node groups
    /// are its scaling groups whose members are nodes (`service::plain_stack`).
    fn cluster_or_stack(&self) -> Option<Cluster> {
        self.selected_cluster()
            .or_else(|| self.context_stack().map(|s| stack_as_nodegroup(&s).0))
    }

    /// The nodes of the selected node group, else of the context's stack (any stack: every
    /// scaling group's members, see `ops::discover`).
    pub(crate) fn nav_nodes(&mut self) {
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

    pub(crate) fn nav_events(&mut self) {
        match self.context_stack() {
            Some(stack) => self.push(ViewKind::Events { stack }),
            None => self.set_status(Level::Warn, "no stack here"),
        }
    }

    pub(crate) fn nav_tree(&mut self) {
        match self.context_stack() {
            Some(stack) => self.push(ViewKind::Tree { stack, focus: None }),
            None => self.set_status(Level::Warn, "no stack here"),
        }
    }

    /// Enter: cluster -> dashboard -> nodes -> member in the stack tree -> nested stack.
    pub(super) fn open_selected(&mut self) {
        self.prepare();
        let kind = self.view().kind.clone();
        self.screen_of(&kind).open(self);
    }
}

/// Whether a node group is a plain stack seen as one (`stack_as_nodegroup`).
pub fn is_stack_standin(g: &NodeGroup) -> bool {
    g.cluster_id == g.id && g.stack_id.as_deref() == Some(g.id.as_str())
}

/// A stack seen as one node group (the nodes pane of a plain stack): the node stream reads
/// every scaling group in it. Not a cluster of any driver, so no action reaches it by name.
pub(super) fn stack_as_nodegroup(stack: &StackTarget) -> (Cluster, NodeGroup) {
    let name = stack.label().to_string();
    let cluster = crate::service::plain_stack::cluster_of(&stack.id, &name);
    let nodegroup = NodeGroup::of_stack(&stack.id, &name, crate::model::Role::Other);
    (cluster, nodegroup)
}
