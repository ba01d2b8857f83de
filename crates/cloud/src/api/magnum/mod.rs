//! Magnum (container-infra v1).

pub mod backend;
pub mod client;
pub mod wire;

#[cfg(test)]
mod tests;

pub use client::{MagnumClient, Microversion, ResizeRequest, UpgradeRequest};
