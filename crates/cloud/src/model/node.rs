use super::Status;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Identifies a node across refreshes: the node group and the member's resource name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeKey {
    pub nodegroup: String,
    pub member: String,
}

/// One node (one ResourceGroup member) as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub key: NodeKey,
    /// The member index in the ResourceGroup (`0`, `1`, ...), when the name is numeric.
    pub index: Option<u32>,
    /// A display name (server name when known, else the member name).
    pub name: String,
    pub zone: Option<String>,
    pub ip: Option<String>,
    pub status: Status,
    pub status_reason: Option<String>,
    pub image: Option<String>,
    /// When the node entered its current status.
    pub since: Option<DateTime<Utc>>,
    /// Paused on a Heat hook (e.g. `pre-update`) and waiting to be released.
    pub hook_paused: bool,
    /// The member's nested stack id, when it has one.
    pub stack_id: Option<String>,
    /// The Nova server's id when the listing that found the node knew it (Cluster API nodes
    /// come from Nova's own listing); a Heat member's server is looked up when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// When the node's server was created (Nova), for how long builds take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<DateTime<Utc>>,
}

/// One member's addresses, as the IP fetcher streams them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAddress {
    /// The member's resource name in its group (`"17"`), or a server name.
    pub member: String,
    pub index: Option<u32>,
    pub addresses: Vec<String>,
    /// The member's server name, when the source that found the address knew it (Nova).
    /// Absent from serialized output when unknown, so older readers see the same shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
