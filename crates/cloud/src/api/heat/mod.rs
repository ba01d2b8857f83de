//! Heat (orchestration v1).

pub mod deployments;
pub mod heat_client;
pub mod heat_wire;
pub mod hooks_env;

#[cfg(test)]
mod heat_tests;

pub use deployments::{ConfigCreate, DeploymentCreate, DeploymentUpdate};
pub use heat_client::{
    EventQuery, HeatClient, OutputInfo, OutputValue, PreviewChanges, ResourceInfo, ResourceQuery,
    SortDir, StackAction, StackCreate, StackDetail, StackListQuery, StackUpdate,
};
pub use hooks_env::{EnvironmentHooks, PriorEntry};
