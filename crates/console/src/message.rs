//! Typed messages: what the user asks for (`Action`, `Command`), what the state asks
//! the workers to do (`Request`) and what they answer (`Reply`, tagged with the
//! generation of the request so stale answers can be dropped).

use super::keys::KeyAction;
use crate::drivers::guard::Guard;
use crate::drivers::manual::{ControlPlan, Request as ControlRequest};
use crate::drivers::{ScalePlan, ScaleRequest, UpgradePlan};
use crate::journal::Entry;
use crate::lifecycle::HookRun;
use crate::model::{
    Cluster, Node, NodeGroup, NodeKey, ServerDetail, ServerTarget, StackEvent, StackRef,
    StackSummary,
};
use crate::rollout::observed::ObservedUpdate;
use crate::rollout::{Control, RolloutOptions, RolloutPlan, RolloutStatus};
use crate::service::fleet_scan::FleetReport;
use crate::service::{
    BudgetStats, CloudInfo, EventCursor, NodeUpdate, ResolvedOutput, ServiceResult, StackOutput,
    StackTree,
};
use chrono::{DateTime, Utc};
use std::path::PathBuf;

/// What every action says on a connection without an operator (the worker's refusal, and
/// the state's status line before it asks).
pub const NO_ACTIONS: &str = "actions are not available on this connection";

/// A stack to read, by id; the name is resolved by the worker when unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackTarget {
    pub id: String,
    pub name: Option<String>,
}

impl StackTarget {
    pub fn from_ref(r: &StackRef) -> Self {
        StackTarget {
            id: r.id.clone(),
            name: Some(r.name.clone()),
        }
    }
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.id)
    }
}

/// Everything that changes the app state goes through one of these.
/// (Replies carry plans and rollout statuses; one is built per answer and moved once, so
/// boxing them would buy nothing.)
#[allow(clippy::large_enum_variant)]
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
    /// Whether this connection can act, and its guard rails (`None`: reads only).
    Operator(Option<Guard>),
    /// `:cloud` connected: the console is on another cloud now.
    Switched {
        info: Box<CloudInfo>,
        guard: Option<Guard>,
        notices: Vec<String>,
    },
    /// `:cloud` could not connect: the console stays where it was.
    SwitchFailed {
        cloud: String,
        error: String,
    },
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
    Rollout,
    Journal,
    Fleet,
    /// List the clouds of clouds.yaml (`:cloud` with no name).
    Clouds,
    /// Reconnect to another cloud of clouds.yaml, optionally in another region.
    Cloud {
        name: String,
        region: Option<String>,
    },
    Scale,
    Upgrade,
    Run,
    Refresh,
    /// The status messages of this session, whole.
    Messages,
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
    (
        "rollout",
        &["ro", "rollouts"],
        "rollout of the current node group",
    ),
    ("journal", &["audit", "jo"], "the audit journal of actions"),
    ("fleet", &["fl"], "clusters of every cloud in clouds.yaml"),
    (
        "cloud",
        &["ctx"],
        "switch cloud: :cloud NAME [REGION]; :cloud alone lists clouds.yaml's",
    ),
    ("scale", &[], "scale the current node group"),
    ("upgrade", &["up"], "upgrade the current node group"),
    ("run", &[], "run a command on the marked nodes"),
    ("refresh", &["r"], "refresh now"),
    (
        "messages",
        &["msg", "log"],
        "the status messages of this session, whole",
    ),
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
            "rollout" => Command::Rollout,
            "journal" => Command::Journal,
            "fleet" => Command::Fleet,
            "cloud" if arg.is_empty() => Command::Clouds,
            "cloud" => {
                let mut words = arg.split_whitespace();
                let name = words.next().unwrap_or_default().to_string();
                let region = words.next().map(str::to_string);
                if words.next().is_some() {
                    return Err(":cloud takes a cloud name and at most a region".into());
                }
                Command::Cloud { name, region }
            }
            "scale" => Command::Scale,
            "upgrade" => Command::Upgrade,
            "run" => Command::Run,
            "refresh" => Command::Refresh,
            "messages" => Command::Messages,
            "help" => Command::Help,
            "q" => Command::Quit,
            // A name of the table without its command here: said, never taken as another
            // command (it was taken as :q, and quit).
            other => return Err(format!(":{other} is listed but not handled (a bug)")),
        })
    }
}

/// Work for the background workers.
#[derive(Debug, Clone)]
pub enum Request {
    Clusters {
        gen: u64,
    },
    /// One cluster read alone (a settle burst follows it without reading the whole list).
    Cluster {
        cluster: Cluster,
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
    /// A node's Nova server and its console log (the node detail).
    Server {
        target: ServerTarget,
        gen: u64,
    },
    /// The outputs a stack declares (keys and descriptions).
    Outputs {
        stack: StackTarget,
        gen: u64,
    },
    /// One output of a stack, evaluated.
    Output {
        stack: StackTarget,
        key: String,
        gen: u64,
    },
    /// One stack whole: `stack show`, its outputs list and its template.
    Stack {
        stack: StackTarget,
        gen: u64,
    },
    /// One resource of a stack (the stack that owns it): `resource show`, metadata, events.
    Resource {
        stack: StackTarget,
        resource: String,
        gen: u64,
    },
    Save {
        path: PathBuf,
        contents: String,
    },
    PlanScale {
        cluster: Cluster,
        nodegroup: NodeGroup,
        request: ScaleRequest,
        gen: u64,
    },
    ApplyScale {
        plan: Box<ScalePlan>,
        confirm: Option<String>,
        /// The node group, to refresh after.
        nodegroup_id: String,
    },
    PlanUpgrade {
        cluster: Cluster,
        nodegroup: NodeGroup,
        to: String,
        options: RolloutOptions,
        gen: u64,
    },
    StartUpgrade {
        plan: Box<UpgradePlan>,
        confirm: Option<String>,
        /// The node group id the rollout is kept under.
        key: String,
    },
    /// The rollout of a node group: the one this console drives, else `find_rollout`.
    FindRollout {
        cluster: Cluster,
        nodegroup: NodeGroup,
        gen: u64,
    },
    /// A rollout not driven here, looked at once.
    ObserveRollout {
        key: String,
        plan: Box<RolloutPlan>,
        gen: u64,
    },
    /// An update no rollout drives (Magnum's, a foreign Heat update): looked for when
    /// `update` is `None`, then looked at.
    ObserveUpdate {
        cluster: Cluster,
        nodegroup: NodeGroup,
        update: Option<Box<ObservedUpdate>>,
        gen: u64,
    },
    /// Heat's cancel of an observed Heat update (`rollback`: `cancel_update`).
    CancelUpdate {
        key: String,
        update: Box<ObservedUpdate>,
        rollback: bool,
        confirm: Option<String>,
    },
    /// A control for the rollout under `key`: sent to our engine, else a resume takes the
    /// rollout over (`reattach_rollout`) and anything else is asked of its driver.
    RolloutControl {
        key: String,
        plan: Option<Box<RolloutPlan>>,
        control: Control,
    },
    NodeAction {
        cluster: Cluster,
        nodegroup: NodeGroup,
        command: String,
        nodes: Vec<Node>,
        batch_size: usize,
    },
    Journal {
        offset: u64,
        gen: u64,
    },
    /// The clouds clouds.yaml names (`:cloud` with no name).
    ListClouds,
    /// Connect to another cloud (the runtime does it: the worker's service is replaced).
    SwitchCloud {
        name: String,
        region: Option<String>,
    },
    /// Ask every cloud of clouds.yaml for its clusters (the fleet view).
    Fleet {
        gen: u64,
    },
    /// Plans a manual Heat control on `stack` (a name or id): read-only.
    PlanControl {
        stack: String,
        request: ControlRequest,
        gen: u64,
    },
    /// Sends a control plan the operator confirmed (a refused one is only journaled).
    ApplyControl {
        plan: Box<ControlPlan>,
        confirm: Option<String>,
    },
}

/// Who drives a rollout the console shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutDriver {
    /// An engine in this process.
    Here,
    /// Another process (or this console before a restart): observed, not driven.
    Elsewhere,
}

/// Answers from the workers.
#[derive(Debug)]
pub enum Reply {
    Clusters {
        gen: u64,
        result: ServiceResult<Vec<Cluster>>,
    },
    Cluster {
        cluster_id: String,
        gen: u64,
        result: ServiceResult<Cluster>,
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
    Server {
        key: NodeKey,
        gen: u64,
        result: ServiceResult<ServerDetail>,
    },
    Outputs {
        stack_id: String,
        stack_name: Option<String>,
        gen: u64,
        result: ServiceResult<Vec<StackOutput>>,
    },
    Output {
        stack_id: String,
        key: String,
        gen: u64,
        result: ServiceResult<ResolvedOutput>,
    },
    Stack {
        stack_id: String,
        gen: u64,
        result: ServiceResult<crate::service::StackOverview>,
    },
    Resource {
        stack_id: String,
        resource: String,
        gen: u64,
        result: ServiceResult<crate::service::ResourceDetail>,
    },
    Tree {
        stack_id: String,
        stack_name: Option<String>,
        gen: u64,
        result: ServiceResult<StackTree>,
    },
    Saved {
        path: PathBuf,
        result: Result<usize, String>,
    },
    /// clouds.yaml's path and the clouds it names.
    Clouds {
        result: Result<(PathBuf, Vec<String>), String>,
    },
    ScalePlan {
        gen: u64,
        result: ServiceResult<ScalePlan>,
    },
    ScaleApplied {
        target: String,
        nodegroup_id: String,
        result: ServiceResult<()>,
    },
    UpgradePlan {
        gen: u64,
        result: ServiceResult<UpgradePlan>,
    },
    UpgradeStarted {
        key: String,
        target: String,
        /// `true`: a rollout runs here (its status follows); `false`: Magnum took it.
        result: ServiceResult<bool>,
    },
    /// What `FindRollout` found; `None` when nothing is under way.
    RolloutFound {
        key: String,
        gen: u64,
        result: ServiceResult<Option<(RolloutPlan, RolloutDriver)>>,
    },
    /// A rollout's newest status (from our engine, coalesced, or from an observation).
    Rollout {
        key: String,
        driver: RolloutDriver,
        result: ServiceResult<RolloutStatus>,
    },
    /// An observed update and its status; `None` when nothing is under way.
    UpdateObserved {
        key: String,
        gen: u64,
        result: ServiceResult<Option<(ObservedUpdate, RolloutStatus)>>,
    },
    RolloutControlled {
        key: String,
        what: String,
        result: ServiceResult<()>,
    },
    NodeActionDone {
        target: String,
        /// The node group the nodes are in.
        nodegroup_id: String,
        /// `(node name, run)` in order; nodes after a failed batch have no run.
        result: ServiceResult<Vec<(String, HookRun)>>,
        asked: usize,
    },
    Journal {
        gen: u64,
        result: ServiceResult<(Vec<Entry>, u64)>,
    },
    ControlPlan {
        gen: u64,
        result: ServiceResult<ControlPlan>,
    },
    /// One cloud's answer to `Request::Fleet`, as it comes.
    FleetCloud {
        gen: u64,
        report: FleetReport,
    },
    /// Every cloud answered (or there is no clouds.yaml to ask).
    FleetDone {
        gen: u64,
        result: ServiceResult<()>,
    },
    ControlApplied {
        /// `heat.check`, ...
        action: &'static str,
        /// `STACK` or `STACK/PATH`.
        target: String,
        /// The root stack's id.
        stack_id: String,
        result: ServiceResult<()>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #26: the palette's table is the one list of its commands: each name and alias parses
    /// (only `:q`'s to quitting), the help lists each, and the README's console section names
    /// each (it named 13 of 20: no `:rollout`, `:scale`, `:upgrade`, `:run`, `:refresh`, …).
    #[test]
    fn every_palette_command_parses_and_is_named_in_the_readme() {
        let readme = include_str!("../../../README.md");
        let console = &readme[readme.find("## The console").expect("the console section")..];
        let console = &console[..console.find("\n## ").unwrap_or(console.len())];
        for (name, aliases, _) in COMMANDS {
            for word in std::iter::once(name).chain(aliases.iter()) {
                let line = if *name == "theme" || *name == "cloud" {
                    format!("{word} x")
                } else {
                    word.to_string()
                };
                let parsed = Command::parse(&line);
                assert!(parsed.is_ok(), ":{word}: {parsed:?}");
                assert_eq!(parsed == Ok(Command::Quit), *name == "q", ":{word}");
            }
            assert!(
                console.contains(&format!("`:{name}")),
                ":{name} not in the README"
            );
        }
    }

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
        assert_eq!(Command::parse(":fleet"), Ok(Command::Fleet));
        assert_eq!(
            Command::parse(":cloud prod RegionTwo"),
            Ok(Command::Cloud {
                name: "prod".into(),
                region: Some("RegionTwo".into())
            })
        );
        assert_eq!(Command::parse(":cloud"), Ok(Command::Clouds));
        assert!(Command::parse(":cloud a b c").is_err());
        assert!(Command::parse("bogus").unwrap_err().contains("bogus"));
    }
}
