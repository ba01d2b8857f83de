//! The navigation stack's entries: what a view shows and its own table state.

use super::store::Store;
use crate::model::{Cluster, NodeGroup, ServerTarget};
use crate::tui::widgets::table::TableState;

/// Shared with the worker and the messages, so it lives with them (no state <-> worker
/// import cycle); re-exported here for the views that hold one.
pub use crate::tui::action::StackTarget;

/// A handful of these live on the navigation stack; boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ViewKind {
    Clusters,
    Stacks,
    NodeGroups {
        cluster: Cluster,
    },
    Dashboard {
        cluster: Cluster,
    },
    Nodes {
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    Events {
        stack: StackTarget,
    },
    Tree {
        stack: StackTarget,
        focus: Option<String>,
    },
    Rollout {
        cluster: Cluster,
        nodegroup: NodeGroup,
    },
    Journal,
    /// One node's Nova server (`server show` and its console log).
    Server {
        target: ServerTarget,
    },
}

/// Event-tail options (also used by the dashboard's tail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailOptions {
    pub follow: bool,
    pub abs_time: bool,
    pub wrap: bool,
    pub paused: bool,
}

impl Default for TailOptions {
    fn default() -> Self {
        TailOptions {
            follow: true,
            abs_time: false,
            wrap: false,
            paused: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct View {
    pub kind: ViewKind,
    /// The view's main table (clusters, node groups, nodes, events, tree rows, stacks).
    pub table: TableState,
    pub tail: TailOptions,
    pub show_heat_map: bool,
    /// Lines scrolled down in a text view (the node detail).
    pub scroll: usize,
}

impl View {
    pub fn new(kind: ViewKind) -> View {
        View {
            kind,
            table: TableState::default(),
            tail: TailOptions::default(),
            show_heat_map: true,
            scroll: 0,
        }
    }

    /// The breadcrumb segment for this view.
    pub fn crumb(&self) -> String {
        match &self.kind {
            ViewKind::Clusters => "clusters".into(),
            ViewKind::Stacks => "stacks".into(),
            ViewKind::NodeGroups { cluster } => format!("{} (node groups)", cluster.name),
            ViewKind::Dashboard { cluster } => cluster.name.clone(),
            ViewKind::Nodes { nodegroup, .. } => nodegroup.name.clone(),
            ViewKind::Events { stack } => format!("events {}", stack.label()),
            ViewKind::Tree { stack, .. } => stack.label().to_string(),
            ViewKind::Rollout { nodegroup, .. } => format!("rollout {}", nodegroup.name),
            ViewKind::Journal => "journal".into(),
            ViewKind::Server { target } => format!("server {}", target.name),
        }
    }

    pub fn title(&self) -> &'static str {
        match &self.kind {
            ViewKind::Clusters => "Clusters",
            ViewKind::Stacks => "Stacks",
            ViewKind::NodeGroups { .. } => "Node groups",
            ViewKind::Dashboard { .. } => "Dashboard",
            ViewKind::Nodes { .. } => "Nodes",
            ViewKind::Events { .. } => "Events",
            ViewKind::Tree { .. } => "Stack tree",
            ViewKind::Rollout { .. } => "Rollout",
            ViewKind::Journal => "Journal",
            ViewKind::Server { .. } => "Server",
        }
    }

    pub fn cluster(&self) -> Option<&Cluster> {
        match &self.kind {
            ViewKind::NodeGroups { cluster }
            | ViewKind::Dashboard { cluster }
            | ViewKind::Nodes { cluster, .. }
            | ViewKind::Rollout { cluster, .. } => Some(cluster),
            _ => None,
        }
    }

    /// The data slot whose age the header shows, as (fetched_at, error, loading).
    pub fn primary_meta<'a>(&self, store: &'a Store) -> Option<&'a super::store::FetchMeta> {
        match &self.kind {
            ViewKind::Clusters => Some(&store.clusters.meta),
            ViewKind::Stacks => Some(&store.stacks.meta),
            ViewKind::NodeGroups { cluster } | ViewKind::Dashboard { cluster } => {
                store.nodegroups.get(&cluster.id).map(|s| &s.meta)
            }
            ViewKind::Nodes { nodegroup, .. } => store.nodes.get(&nodegroup.id).map(|s| &s.meta),
            ViewKind::Events { stack } => store.events.get(&stack.id).map(|s| &s.meta),
            ViewKind::Tree { stack, .. } => store.trees.get(&stack.id).map(|s| &s.meta),
            ViewKind::Rollout { nodegroup, .. } => {
                store.rollouts.get(&nodegroup.id).map(|s| &s.meta)
            }
            ViewKind::Journal => Some(&store.journal.meta),
            ViewKind::Server { target } => store.servers.get(&target.key).map(|s| &s.meta),
        }
    }
}
