//! Names fixed by caldera's own node-group template, and the stack paths and update bodies the
//! journal records,
//! shared by the Heat-native driver and the rollout plans it produces.

use crate::api::heat::StackUpdate;
use crate::journal::ApiCall;
use crate::model::StackRef;

/// The ResourceGroup resource in `nodegroup.yaml`.
pub const GROUP_RESOURCE: &str = "nodes";

/// `/stacks/{name}/{id}` as the journal shows it.
pub fn stack_path(stack: &StackRef) -> String {
    format!("/stacks/{}/{}", stack.name, stack.id)
}

/// The signal that clears a hook on a resource (`{"unset_hook": HOOK}` posted to the resource's
/// `signal` on the stack that holds it), as the journal records it and plans show it. `stack`
/// is that stack's path (see [`stack_path`]), or a placeholder where it is only known at run
/// time. Every plan and journal entry that clears a hook is built here, so the record and the
/// request cannot drift apart.
pub fn clear_hook_call(stack: &str, resource: &str, hook: &str) -> ApiCall {
    ApiCall::new(
        "POST",
        format!("{stack}/resources/{resource}/signal"),
        serde_json::json!({ "unset_hook": hook }).to_string(),
    )
}

/// The body of an update as the journal records it.
pub fn update_body_text(update: &StackUpdate) -> String {
    serde_json::to_string(update).unwrap_or_default()
}
