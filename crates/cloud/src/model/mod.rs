//! Domain model shared by the I/O layer, the operations and the console.
//!
//! These are the types the UI sees. Wire formats (Heat, Magnum, Nova JSON) live in
//! `crate::api::*::wire` and are converted into these types at the edge, so nothing
//! untyped (no `serde_json::Value`) flows past the client layer.

mod cluster;
pub mod deployment;
mod node;
pub mod server;
mod stack;
mod status;
pub mod text;

pub use cluster::{
    state_since, CapiCluster, CapiDriver, Cluster, DriverKind, Health, NodeGroup, Role,
};
pub use deployment::{ConfigInput, SoftwareConfig, SoftwareDeployment};
pub use node::{
    looks_like_uuid, member_key, split_member_key, ImagePhase, Node, NodeAddress, NodeKey,
};
pub use server::{ConsoleTail, ServerDetail, ServerFault, ServerTarget};
pub use stack::{StackEvent, StackRef, StackResource, StackSummary};
pub use status::{short_duration, Status, StatusState};
pub use text::{json_string, json_string_pretty, terminal_safe, terminal_safe_lines, write_json};
