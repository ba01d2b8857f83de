//! Configuration: clouds.yaml discovery and the secrets it holds.

pub mod bounds;
pub mod clouds;
pub mod error;
pub mod file_limits;
pub mod secret;

pub use clouds::{load_cloud, CalderaSettings, CloudConfig, Credentials, DiscoveryEnv};
pub use error::ConfigError;
pub use secret::Secret;

#[cfg(test)]
mod clouds_tests;
