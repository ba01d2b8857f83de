//! Heat's objects as the simulator stores them: stacks, resources and events.
//! Kept compact (no JSON values, shared type names) so 10 000-node worlds stay small.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Init,
    Create,
    Update,
    Delete,
    Rollback,
    Suspend,
    Resume,
    Check,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Init => "INIT",
            Action::Create => "CREATE",
            Action::Update => "UPDATE",
            Action::Delete => "DELETE",
            Action::Rollback => "ROLLBACK",
            Action::Suspend => "SUSPEND",
            Action::Resume => "RESUME",
            Action::Check => "CHECK",
        }
    }
    pub fn parse(s: &str) -> Option<Action> {
        Some(match s {
            "INIT" => Action::Init,
            "CREATE" => Action::Create,
            "UPDATE" => Action::Update,
            "DELETE" => Action::Delete,
            "ROLLBACK" => Action::Rollback,
            "SUSPEND" => Action::Suspend,
            "RESUME" => Action::Resume,
            "CHECK" => Action::Check,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    InProgress,
    Complete,
    Failed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::InProgress => "IN_PROGRESS",
            State::Complete => "COMPLETE",
            State::Failed => "FAILED",
        }
    }
}

/// `ACTION_STATE`, e.g. `UPDATE_IN_PROGRESS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status {
    pub action: Action,
    pub state: State,
}

impl Status {
    pub const fn new(action: Action, state: State) -> Status {
        Status { action, state }
    }
    pub fn parse(s: &str) -> Option<Status> {
        let (a, st) = if let Some(a) = s.strip_suffix("_IN_PROGRESS") {
            (a, State::InProgress)
        } else if let Some(a) = s.strip_suffix("_COMPLETE") {
            (a, State::Complete)
        } else if let Some(a) = s.strip_suffix("_FAILED") {
            (a, State::Failed)
        } else {
            return None;
        };
        Some(Status::new(Action::parse(a)?, st))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.action.as_str(), self.state.as_str())
    }
}

/// What a stack stands for in the simulated cloud, so handlers can find the dynamic state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackRole {
    /// A cluster's own stack (API load balancer address, network).
    Cluster(usize),
    /// A node group's stack: parameters count/image/..., resource `nodes`.
    NodeGroup(usize),
    /// The nested stack of the ResourceGroup `nodes`: members `0..N-1`.
    Group(usize),
    /// One member's nested stack (`server`, `address`).
    Member(usize, u32),
}

#[derive(Debug, Clone)]
pub struct Resource {
    pub name: Arc<str>,
    pub rtype: Arc<str>,
    pub physical_id: String,
    pub status: Status,
    pub reason: String,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// Index of the nested stack this resource owns (ResourceGroup, template resources).
    pub nested: Option<usize>,
    pub required_by: Vec<Arc<str>>,
    /// The `value` attribute of an OS::Heat::Value.
    pub value: Option<String>,
    pub description: &'static str,
}

#[derive(Debug, Clone)]
pub struct Event {
    /// Global insertion order: ties on time are broken by it, and paging relies on it.
    pub seq: u64,
    pub id: u128,
    pub time_ms: i64,
    pub resource_name: Arc<str>,
    pub rtype: Arc<str>,
    pub physical_id: Box<str>,
    pub status: Status,
    pub reason: Box<str>,
}

#[derive(Debug, Clone)]
pub struct Output {
    pub key: &'static str,
    pub description: &'static str,
}

#[derive(Debug, Clone)]
pub struct Stack {
    pub id: String,
    pub name: String,
    pub parent: Option<usize>,
    /// The resource of the parent stack that owns this nested stack.
    pub owner_resource: Option<Arc<str>>,
    pub status: Status,
    pub reason: String,
    pub created_ms: i64,
    pub updated_ms: Option<i64>,
    /// Set once the stack is DELETE_COMPLETE: Heat still shows it by id.
    pub deleted_ms: Option<i64>,
    pub params: BTreeMap<String, String>,
    /// Parameters the template declares `hidden: true`: Heat's `stack show` gives their
    /// values as `******`.
    pub hidden_params: BTreeSet<String>,
    /// The types the submitted template declares for its parameters (`number`, `json`, …),
    /// as Heat's `GET .../template` gives them back. Empty for seeded stacks.
    pub param_types: BTreeMap<String, String>,
    pub description: String,
    pub tags: Vec<String>,
    pub disable_rollback: bool,
    pub timeout_mins: Option<u32>,
    pub environment: serde_json::Value,
    /// The environment before the last update replaced it: what a `cancel_update` rollback
    /// stores again (measured on Heat 27: after `ROLLBACK_COMPLETE` the environment's
    /// `resources` are the old ones, the update's hooks gone).
    pub previous_environment: Option<serde_json::Value>,
    pub resources: Vec<Resource>,
    pub events: VecDeque<Event>,
    pub outputs: Vec<Output>,
    pub role: StackRole,
}

impl Stack {
    pub fn resource(&self, name: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| &*r.name == name)
    }
    pub fn resource_mut(&mut self, name: &str) -> Option<&mut Resource> {
        self.resources.iter_mut().find(|r| &*r.name == name)
    }
}
