//! Typed messages: what the user asks for (`Action`, `Command`), what the state asks
//! the workers to do (`Request`) and what they answer (`Reply`, tagged with the
//! generation of the request so stale answers can be dropped).

use super::keys::KeyAction;
use super::state::view::StackTarget;
use crate::model::{Cluster, NodeGroup, StackEvent, StackResource, StackSummary};
use crate::service::{BudgetStats, CloudInfo, EventCursor, NodeUpdate, ServiceResult};
use chrono::{DateTime, Utc};
use std::path::PathBuf;

/// Everything that changes the app state goes through one of these.
#[derive(Debug)]
pub enum Action {
    Key(KeyAction),
    Command(Command),
    Reply(Reply),
    /// The clock moved; header facts refreshed.
    Tick {
        now: DateTime<Utc>,
        info: Box<CloudInfo>,
        budget: BudgetStats,
    },
    Resize(u16, u16),
}

/// A `:` palette command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Clusters,
    NodeGroups,
    Nodes,
    Stacks,
    Events,
    Tree,
    Dashboard,
    Theme(String),
    Faults,
    Refresh,
    Help,
    Quit,
}

/// `(name, aliases, help)` of every palette command, for parsing, completion and help.
pub const COMMANDS: &[(&str, &[&str], &str)] = &[
    ("clusters", &["cl", "cluster"], "list clusters"),
    (
        "ng",
        &["nodegroups", "nodegroup"],
        "node groups of the current cluster",
    ),
    ("nodes", &["no", "node"], "nodes of the current node group"),
    ("stacks", &["st", "stack"], "list Heat stacks"),
    (
        "events",
        &["ev", "event"],
        "event tail of the current stack",
    ),
    (
        "tree",
        &["tr", "resources", "res"],
        "stack tree and why-stuck",
    ),
    ("dash", &["dashboard", "db"], "cluster dashboard"),
    ("theme", &[], "switch theme: :theme NAME"),
    ("faults", &["f"], "toggle faults-only"),
    ("refresh", &["r"], "refresh now"),
    ("help", &["h"], "key bindings"),
    ("q", &["quit", "exit", "q!"], "quit"),
];

impl Command {
    /// Parse a palette line (leading `:` allowed).
    pub fn parse(line: &str) -> Result<Command, String> {
        let line = line.trim().trim_start_matches(':').trim();
        let (word, arg) = match line.split_once(char::is_whitespace) {
            Some((w, a)) => (w, a.trim()),
            None => (line, ""),
        };
        let word = word.to_ascii_lowercase();
        let name = COMMANDS
            .iter()
            .find(|(n, aliases, _)| *n == word || aliases.contains(&word.as_str()))
            .map(|(n, _, _)| *n)
            .ok_or_else(|| format!("unknown command :{word} (try :help)"))?;
        Ok(match name {
            "clusters" => Command::Clusters,
            "ng" => Command::NodeGroups,
            "nodes" => Command::Nodes,
            "stacks" => Command::Stacks,
            "events" => Command::Events,
            "tree" => Command::Tree,
            "dash" => Command::Dashboard,
            "theme" if arg.is_empty() => return Err(":theme needs a name or a path".into()),
            "theme" => Command::Theme(arg.to_string()),
            "faults" => Command::Faults,
            "refresh" => Command::Refresh,
            "help" => Command::Help,
            _ => Command::Quit,
        })
    }
}

/// Work for the background workers.
#[derive(Debug, Clone)]
pub enum Request {
    Clusters {
        gen: u64,
    },
    Stacks {
        gen: u64,
    },
    NodeGroups {
        cluster: Cluster,
        gen: u64,
    },
    Nodes {
        nodegroup: NodeGroup,
        gen: u64,
    },
    /// Stop streaming a node group (its view was left).
    StopNodes {
        nodegroup_id: String,
    },
    Events {
        stack: StackTarget,
        cursor: EventCursor,
        gen: u64,
    },
    Tree {
        stack: StackTarget,
        depth: u32,
        gen: u64,
    },
    Save {
        path: PathBuf,
        contents: String,
    },
}

/// Answers from the workers.
#[derive(Debug)]
pub enum Reply {
    Clusters {
        gen: u64,
        result: ServiceResult<Vec<Cluster>>,
    },
    Stacks {
        gen: u64,
        result: ServiceResult<Vec<StackSummary>>,
    },
    NodeGroups {
        cluster_id: String,
        gen: u64,
        result: ServiceResult<Vec<NodeGroup>>,
    },
    Nodes {
        nodegroup_id: String,
        gen: u64,
        update: ServiceResult<NodeUpdate>,
    },
    NodesEnded {
        nodegroup_id: String,
        gen: u64,
    },
    Events {
        stack_id: String,
        /// The stack's name, when the worker had to look it up.
        stack_name: Option<String>,
        gen: u64,
        result: ServiceResult<(Vec<StackEvent>, EventCursor)>,
    },
    Tree {
        stack_id: String,
        stack_name: Option<String>,
        gen: u64,
        result: ServiceResult<Vec<StackResource>>,
    },
    Saved {
        path: PathBuf,
        result: Result<usize, String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_aliases() {
        assert_eq!(Command::parse(":clusters"), Ok(Command::Clusters));
        assert_eq!(Command::parse("nodegroups"), Ok(Command::NodeGroups));
        assert_eq!(Command::parse(" :q "), Ok(Command::Quit));
        assert_eq!(
            Command::parse("theme light"),
            Ok(Command::Theme("light".into()))
        );
        assert!(Command::parse("theme").is_err());
        assert!(Command::parse("bogus").unwrap_err().contains("bogus"));
    }
}
