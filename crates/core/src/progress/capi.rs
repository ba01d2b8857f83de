//! A Cluster API node group's verdict, from its Nova servers: Magnum keeps such a cluster
//! `CREATE_IN_PROGRESS` when it cannot be built, so the servers say whether it failed or
//! stalled (see `ops::capi_stall`). Part of where a group stands, computed here once; the
//! console only draws it.

use crate::api::nova::ServerInfo;
use crate::model::{CapiCluster, Cluster, Node, NodeGroup};
use crate::ops::capi_nodes::is_member;
use crate::ops::capi_stall::{assess, Progress as Seen, ServerLook, Verdict};
use chrono::{DateTime, Utc};

/// The verdict of `nodegroup` from its `nodes` and what the looks so far have `seen`; `None`
/// for a group Cluster API does not run, or one with no members yet.
pub fn capi_verdict<'a>(
    nodegroup: &NodeGroup,
    cluster: Option<&Cluster>,
    nodes: impl Iterator<Item = &'a Node>,
    seen: Option<&Seen>,
    now: DateTime<Utc>,
) -> Option<Verdict> {
    nodegroup.capi.as_ref()?;
    let looks: Vec<ServerLook> = nodes.filter_map(ServerLook::of_node).collect();
    Some(verdict_of_looks(nodegroup, cluster, &looks, seen, now))
}

/// The verdict of `nodegroup` from one listing of its cluster's servers (`servers`, as
/// `ops::capi_nodes::cluster_servers` reads them): its own found by the driver's names.
pub fn verdict_of_servers(
    nodegroup: &NodeGroup,
    cluster: &Cluster,
    capi: &CapiCluster,
    servers: &[ServerInfo],
    now: DateTime<Utc>,
) -> Verdict {
    let looks: Vec<ServerLook> = servers
        .iter()
        .filter(|s| is_member(capi, &nodegroup.name, nodegroup.role, &s.name))
        .map(ServerLook::from)
        .collect();
    verdict_of_looks(nodegroup, Some(cluster), &looks, None, now)
}

/// The verdict from the group's servers as Nova lists them (the command's single look).
fn verdict_of_looks(
    nodegroup: &NodeGroup,
    cluster: Option<&Cluster>,
    looks: &[ServerLook],
    seen: Option<&Seen>,
    now: DateTime<Utc>,
) -> Verdict {
    // The status and since when: the node group's status, timed by its cluster's create or
    // last update (Magnum gives node groups no times of their own).
    let since = cluster.and_then(|c| match nodegroup.status.action.as_str() {
        "UPDATE" => c.updated_at.or(c.created_at),
        _ => c.created_at,
    });
    assess(&nodegroup.status, since, looks, seen, now)
}
