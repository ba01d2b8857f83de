//! Node-by-node upgrades of Heat-native node groups on Heat's `pre-update` hooks.
//!
//! One PATCH of the node-group stack sets the new image and puts a `pre-update` hook on every
//! member (`resource_registry: {resources: {nodes: {"*": {hooks: [pre-update]}}}}`); Heat
//! then pauses each member before updating it. The engine releases members batch by batch
//! (`POST /stacks/{group}/{id}/resources/{member}/signal {"unset_hook": "pre-update"}` on
//! the ResourceGroup's nested stack), waits for each batch to finish, runs the operator's
//! hooks and the health gate, and pauses on the first failure.
//!
//! - [`plan`]: the plan shown before anything happens.
//! - [`observed`]: Heat's state of a rollout (events and member stacks).
//! - [`engine`]: the task that drives it, controlled by [`engine::Control`].
//! - [`lock`]: one driver per node group; control requests ordered against releases.
//! - [`control`]: finding a rollout under way and steering it from outside its engine.
//! - [`progress`]: [`progress::RolloutStatus`], the snapshot the console shows.
//! - [`status_json`]: `rollout status --format json`, typed.
//! - [`unhook`]: taking the rollout's hooks back out of the stack's environment at its end.

pub mod control;
pub mod engine;
pub mod heat_reader;
pub mod lock;
pub mod observed;
pub mod observed_nova;
/// The plan types live with the drivers, which produce them (`UpgradePlan::Rollout`).
pub use crate::drivers::rollout_plan as plan;
pub mod progress;
pub mod status_json;
pub mod unhook;
pub mod why_paused;

pub use engine::{AbortMode, Control, EngineOptions, RolloutHandle};
pub use plan::{RolloutOptions, RolloutPlan};
pub use progress::{NodePhase, NodeProgress, RolloutState, RolloutStatus};
