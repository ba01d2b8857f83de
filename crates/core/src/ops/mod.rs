//! Operations built on the clients: node IPs, event following, failures.
//!
//! Pure bookkeeping lives in its own modules so it can be tested without a server.

pub mod address_values;
pub mod capi_nodes;
pub mod capi_stall;
pub mod deployments;
pub mod discover;
pub mod event_tracker;
pub mod failures;
pub mod hooks;
pub mod image_names;
pub mod ips;
pub mod node_tree;
pub mod replaced;
pub mod stack_paths;
pub mod stuck;
pub mod warm_outputs;
pub mod why;
