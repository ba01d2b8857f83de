use super::Status;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A stack reference that can be used in URLs without a name lookup.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StackRef {
    pub name: String,
    pub id: String,
}

impl StackRef {
    /// `name/id`, the form Heat URLs want.
    pub fn path(&self) -> String {
        format!("{}/{}", self.name, self.id)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackSummary {
    pub stack: StackRef,
    pub status: Status,
    pub status_reason: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    /// Parent stack id for nested stacks.
    pub parent: Option<String>,
}

/// A resource of a stack, possibly inside a nested stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackResource {
    pub name: String,
    pub logical_id: String,
    pub physical_id: Option<String>,
    pub resource_type: String,
    pub status: Status,
    pub status_reason: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
    /// The stack that owns this resource.
    pub owner: Option<StackRef>,
    /// The nested stack this resource owns, if any.
    pub nested: Option<StackRef>,
    /// Name of the parent resource when listed with nested_depth.
    pub parent_resource: Option<String>,
    pub required_by: Vec<String>,
}

/// One Heat event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackEvent {
    pub id: String,
    pub time: DateTime<Utc>,
    pub resource_name: String,
    pub logical_id: String,
    pub physical_id: Option<String>,
    pub status: Status,
    pub status_reason: Option<String>,
    /// The stack that emitted the event (a nested stack for nested events).
    pub stack: Option<StackRef>,
    /// Path of resource names from the root stack down to the owning stack,
    /// e.g. `["nodes", "17"]` for a member's nested resource, empty at the root.
    pub path: Vec<String>,
}

impl StackEvent {
    /// A nested stack's own event (Heat names the resource after the stack itself).
    pub fn is_stack_event(&self) -> bool {
        self.stack
            .as_ref()
            .is_some_and(|s| s.name == self.resource_name)
    }

    /// `stack > nested > resource` as the events pane shows it. A nested stack's own events
    /// end at the resource that owns the stack rather than its generated name.
    pub fn display_path(&self) -> String {
        let mut parts: Vec<&str> = self.path.iter().map(String::as_str).collect();
        if !self.is_stack_event() || parts.is_empty() {
            parts.push(&self.resource_name);
        }
        parts.join(" > ")
    }
}
