use super::Status;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Which driver manages a cluster (Magnum's cluster-driver idea).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DriverKind {
    /// A Magnum cluster, driven through the Magnum API.
    Magnum,
    /// A cluster made of caldera's own Heat templates: a cluster stack plus one stack per node group.
    HeatNative,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Health {
    Healthy,
    Unhealthy,
    Unknown,
}

impl Health {
    pub fn parse(raw: Option<&str>) -> Health {
        match raw.map(|s| s.to_ascii_uppercase()) {
            Some(s) if s == "HEALTHY" => Health::Healthy,
            Some(s) if s == "UNHEALTHY" => Health::Unhealthy,
            _ => Health::Unknown,
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            Health::Healthy => "HEALTHY",
            Health::Unhealthy => "UNHEALTHY",
            Health::Unknown => "UNKNOWN",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub id: String,
    pub name: String,
    pub driver: DriverKind,
    pub status: Status,
    pub status_reason: Option<String>,
    pub health: Health,
    pub health_reason: Option<String>,
    pub master_count: u32,
    pub node_count: u32,
    /// Number of node groups, when known (the Magnum list does not carry it).
    pub nodegroup_count: Option<u32>,
    pub template_id: Option<String>,
    pub coe_version: Option<String>,
    pub api_address: Option<String>,
    /// The Heat stack behind the cluster, when there is one.
    pub stack_id: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    /// A Magnum cluster run by a Cluster API driver (no Heat stack): which driver and the
    /// Cluster API cluster's name. Absent for Heat-backed and Heat-native clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capi: Option<CapiCluster>,
}

/// The Magnum drivers that run clusters on Cluster API instead of Heat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapiDriver {
    /// vexxhost `magnum-cluster-api` (entry points `k8s_cluster_api_*`).
    MagnumClusterApi,
    /// `magnum-capi-helm` (entry point `k8s_capi_helm_v1`, the capi-helm-charts).
    CapiHelm,
    /// A Cluster API cluster whose driver could not be told apart.
    Unknown,
}

impl CapiDriver {
    pub fn as_str(&self) -> &'static str {
        match self {
            CapiDriver::MagnumClusterApi => "magnum-cluster-api",
            CapiDriver::CapiHelm => "magnum-capi-helm",
            CapiDriver::Unknown => "cluster-api",
        }
    }
}

/// A Magnum cluster's Cluster API identity: what Magnum shows as `stack_id` (before 1.13)
/// or `cluster_id` (1.13+) is the Cluster API cluster's name, never a Heat stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CapiCluster {
    pub driver: CapiDriver,
    /// The Cluster API cluster name (`kube-ab12c`, `mycluster-xxxxxxxxxxxx`); every Nova
    /// server of the cluster is named after it.
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    Master,
    Worker,
    Other,
}

impl Role {
    pub fn parse(raw: &str) -> Role {
        match raw {
            "master" => Role::Master,
            "worker" => Role::Worker,
            _ => Role::Other,
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Worker => "worker",
            Role::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeGroup {
    pub id: String,
    pub name: String,
    pub cluster_id: String,
    pub role: Role,
    pub flavor: Option<String>,
    pub image: Option<String>,
    pub version: Option<String>,
    pub zone: Option<String>,
    pub node_count: u32,
    pub min_node_count: Option<u32>,
    pub max_node_count: Option<u32>,
    pub status: Status,
    pub status_reason: Option<String>,
    pub is_default: bool,
    /// The Heat stack whose members are this group's nodes.
    pub stack_id: Option<String>,
    /// The cluster's Cluster API identity when no Heat stack runs it (nodes come from Nova).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capi: Option<CapiCluster>,
    /// Kubernetes labels of the group's nodes (Magnum 1.14+), as Magnum returns them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub node_labels: std::collections::BTreeMap<String, String>,
    /// Kubernetes taints of the group's nodes (Magnum 1.14+), `key=value:Effect`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_taints: Vec<String>,
    /// When Magnum (or, for a Heat-native group, Heat) created the record and last changed
    /// it: together, the group's time in its current state (see [`state_since`]).
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub updated_at: Option<DateTime<Utc>>,
}

impl NodeGroup {
    /// A node group whose nodes are the members of Heat stack `stack_id`, known by nothing
    /// more than its id, name and role (status unknown, no counts, no cluster of its own):
    /// the console's view of a plain stack, and a start for any row built by hand.
    pub fn of_stack(stack_id: &str, name: &str, role: Role) -> NodeGroup {
        NodeGroup {
            id: stack_id.to_string(),
            name: name.to_string(),
            cluster_id: stack_id.to_string(),
            role,
            flavor: None,
            image: None,
            version: None,
            zone: None,
            node_count: 0,
            min_node_count: None,
            max_node_count: None,
            status: Status::parse(""),
            status_reason: None,
            is_default: false,
            stack_id: Some(stack_id.to_string()),
            capi: None,
            node_labels: Default::default(),
            node_taints: Vec::new(),
            created_at: None,
            updated_at: None,
        }
    }
}

/// Since when a Magnum cluster, node group or Heat stack has been in its current status, as
/// far as the API tells: its `updated_at`, or `created_at` when never updated. Magnum and
/// Heat both touch `updated_at` when the status changes (an update starting, finishing or
/// failing), so a cluster 3h in `UPDATE_IN_PROGRESS` is stuck where one 3m in is busy. Other
/// writes (a health check, a label) move it too: it is an upper bound on the time in state.
pub fn state_since(
    created_at: Option<DateTime<Utc>>,
    updated_at: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    updated_at.or(created_at)
}
