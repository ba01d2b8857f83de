//! caldera's core: what an operator does with a cloud, built on the cloud layer
//! (`caldera-cloud`) and knowing nothing of the console or the simulator.
//!
//! - `ops`: operations on the clients (structure discovery, node addresses, event following,
//!   failures, why-stuck, hooks);
//! - `drivers`: create/scale/upgrade/delete node groups (Heat-native, any Heat group, Magnum),
//!   guard rails, manual Heat controls;
//! - `rollout`: node-by-node upgrades on Heat hooks, resumable from Heat's state;
//! - `journal`: the audit log of every action; `lifecycle`: operator hook commands;
//! - `service`: the read/act seam (`CloudService`, `Operator`) the console and commands use;
//! - `templates`: caldera's own Heat templates, built in.
//!
//! The cloud layer's modules are named here as `crate::api`, `crate::model`, … so paths read the
//! same in every crate; they are `caldera_cloud`'s, and nothing in that crate can name this one.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

#[cfg(test)]
pub(crate) use caldera_cloud::testing;
pub(crate) use caldera_cloud::{api, config, fetch, model, report};

pub mod command_line;
pub mod drivers;
pub mod journal;
pub mod lifecycle;
pub mod ops;
pub mod parameter_value;
pub mod progress;
pub mod rollout;
pub mod service;
pub mod templates;
