//! caldera's cloud layer: everything that talks to OpenStack, and nothing above it.
//!
//! - `config`: clouds.yaml discovery and caldera's own settings, with their bounds.
//! - `api`: HTTP transport (budget, retries, auth) and typed Heat/Magnum/Nova/Keystone clients.
//! - `fetch`: the chunked, paginated, concurrent fetcher every list goes through.
//! - `model`: the domain types everything above sees (wire JSON is converted at the edge).
//! - `report`, `health`: the errors, cloud facts, budget use and per-service health this layer
//!   reports upward.
//!
//! This crate knows nothing of operations, drivers, the simulator or the console: the compiler
//! forbids it (they are crates that depend on this one).

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod api;
pub mod api_error;
pub mod config;
pub mod fetch;
pub mod health;
pub mod model;
pub mod report;
/// A scriptable loopback HTTP server for the clients' fault tests; built for this crate's tests
/// and, with the `test-support` feature, for the other crates' tests (never in the binary).
#[cfg(any(test, feature = "test-support"))]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub mod testing;
