//! Names fixed by caldera's own node-group template, and the stack paths and update bodies the
//! journal records,
//! shared by the Heat-native driver and the rollout plans it produces.

use crate::api::heat::StackUpdate;
use crate::model::StackRef;

/// The ResourceGroup resource in `nodegroup.yaml`.
pub const GROUP_RESOURCE: &str = "nodes";

/// `/stacks/{name}/{id}` as the journal shows it.
pub fn stack_path(stack: &StackRef) -> String {
    format!("/stacks/{}/{}", stack.name, stack.id)
}

/// The body of an update as the journal records it.
pub fn update_body_text(update: &StackUpdate) -> String {
    serde_json::to_string(update).unwrap_or_default()
}
