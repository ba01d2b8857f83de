//! caldera: a terminal console for operators of OpenStack Magnum and Heat.
//!
//! Layers, from the wire up:
//! - `config`: clouds.yaml discovery and caldera's own settings.
//! - `api`: HTTP transport (budget, retries, auth) and typed Heat/Magnum/Nova/Keystone clients.
//! - `fetch`: the chunked, paginated, concurrent fetcher every list goes through.
//! - `model`: the domain types the console and the commands see.
//! - `ops`: operations built on the clients (node IPs, event following, failures).
//! - `sim`: the built-in simulated cloud.
//! - `drivers`: create/scale/upgrade/delete node groups (Heat-native and Magnum), guard rails.
//! - `rollout`: node-by-node upgrades on Heat hooks, resumable from Heat's state.
//! - `journal`: the audit log of every action; `lifecycle`: operator hook commands.
//! - `cli`: headless commands; `tui`: the console; `bench`: side-by-side benchmarks.

pub mod api;
pub mod config;
pub mod drivers;
pub mod fetch;
#[doc(hidden)]
pub mod fuzzing;
pub mod journal;
pub mod lifecycle;
pub mod model;
pub mod ops;
pub mod rollout;
pub mod service;

pub mod bench;
pub mod cli;
pub mod sim;
pub mod templates;
#[cfg(test)]
pub(crate) mod testing;
pub mod tui;
