//! The navigation stack's entries: what a view shows and its own table state.

use crate::model::{Cluster, NodeGroup, ServerTarget};
use crate::widgets::table::TableState;

/// Shared with the worker and the messages, so it lives with them (no state <-> worker
/// import cycle); re-exported here for the views that hold one.
pub use crate::message::StackTarget;

/// The views the navigation stack can hold, each with what it was opened on.
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
    /// The clusters of every cloud in clouds.yaml.
    Fleet,
    /// One node's Nova server (`server show` and its console log).
    Server {
        target: ServerTarget,
    },
    /// A stack's outputs; `shown` is the one whose value is evaluated and shown.
    Outputs {
        stack: StackTarget,
        shown: Option<String>,
    },
    /// One resource of a stack (`resource show`, metadata, its events).
    Resource {
        stack: StackTarget,
        resource: String,
    },
    /// One event of the tail of `stack`, whole.
    Event {
        stack: StackTarget,
        event: crate::model::StackEvent,
    },
    /// One stack whole (`stack show`, parameters, outputs list, template).
    Stack {
        stack: StackTarget,
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

/// The dashboard's event tail as a list the keys move in: `tab` gives it the keys (k9s-like
/// pane focus), the table keys then move in it, Enter opens the selected event whole, and
/// `tab` or Esc give the keys back to the node groups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TailPick {
    /// Whether the tail has the keys (else the node group table has them).
    pub focused: bool,
    /// The selected event: the id of the stack whose log holds it, and its id. `None` is
    /// the newest event, whichever it is when the tail moves on.
    pub event: Option<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct View {
    pub kind: ViewKind,
    /// The view's main table (clusters, node groups, nodes, events, tree rows, stacks).
    pub table: TableState,
    pub tail: TailOptions,
    pub show_heat_map: bool,
    /// The dashboard's tail selection (see [`TailPick`]).
    pub tail_pick: TailPick,
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
            tail_pick: TailPick::default(),
            scroll: 0,
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
}
