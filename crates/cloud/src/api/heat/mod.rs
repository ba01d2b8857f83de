//! Heat (orchestration v1).

pub mod client;
pub mod hooks_env;
pub mod wire;

#[cfg(test)]
mod tests;

pub use client::{
    EventQuery, HeatClient, OutputInfo, OutputValue, PreviewChanges, ResourceInfo, ResourceQuery,
    SortDir, StackAction, StackCreate, StackDetail, StackListQuery, StackUpdate,
};
pub use hooks_env::EnvironmentHooks;
