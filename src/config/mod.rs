//! Configuration: clouds.yaml discovery and the secrets it holds.

pub mod error;
pub mod secret;

pub use error::ConfigError;
pub use secret::Secret;
