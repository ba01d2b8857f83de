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
}
