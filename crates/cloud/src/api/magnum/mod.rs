//! Magnum (container-infra v1).

pub mod backend;
pub mod magnum_client;
pub mod magnum_wire;

#[cfg(test)]
mod magnum_tests;

pub use magnum_client::{MagnumClient, Microversion, ResizeRequest, UpgradeRequest};
