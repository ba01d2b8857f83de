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

/// One palette command: the name it is listed under, its aliases, what it does, and how the
/// rest of the line (its argument, trimmed) makes the [`Command`].
pub struct PaletteCommand {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub help: &'static str,
    make: fn(&str) -> Result<Command, String>,
}

impl PaletteCommand {
    /// Whether `word` (lower case) names this command, by its name or an alias.
    pub fn answers_to(&self, word: &str) -> bool {
        self.name == word || self.aliases.contains(&word)
    }
}

/// A row of [`COMMANDS`] (to keep each on a line or two).
const fn row(
    name: &'static str,
    aliases: &'static [&'static str],
    help: &'static str,
    make: fn(&str) -> Result<Command, String>,
) -> PaletteCommand {
    PaletteCommand {
        name,
        aliases,
        help,
        make,
    }
}

/// Every palette command: the one table that parsing, completion and the help read.
pub const COMMANDS: &[PaletteCommand] = &[
    row("clusters", &["cl", "cluster"], "list clusters", |_| {
        Ok(Command::Clusters)
    }),
    row(
        "ng",
        &["nodegroups", "nodegroup"],
        "node groups of the current cluster",
        |_| Ok(Command::NodeGroups),
    ),
    row(
        "nodes",
        &["no", "node"],
        "nodes of the current node group",
        |_| Ok(Command::Nodes),
    ),
    row("stacks", &["st", "stack"], "list Heat stacks", |_| {
        Ok(Command::Stacks)
    }),
    row(
        "events",
        &["ev", "event"],
        "event tail of the current stack",
        |_| Ok(Command::Events),
    ),
    row(
        "tree",
        &["tr", "resources", "res"],
        "stack tree and why-stuck",
        |_| Ok(Command::Tree),
    ),
    row("dash", &["dashboard", "db"], "cluster dashboard", |_| {
        Ok(Command::Dashboard)
    }),
    row("theme", &[], "switch theme: :theme NAME", theme),
    row("faults", &["f"], "toggle faults-only", |_| {
        Ok(Command::Faults)
    }),
    row(
        "rollout",
        &["ro", "rollouts"],
        "rollout of the current node group",
        |_| Ok(Command::Rollout),
    ),
    row(
        "journal",
        &["audit", "jo"],
        "the audit journal of actions",
        |_| Ok(Command::Journal),
    ),
    row(
        "fleet",
        &["fl"],
        "clusters of every cloud in clouds.yaml",
        |_| Ok(Command::Fleet),
    ),
    row(
        "cloud",
        &["ctx"],
        "switch cloud: :cloud NAME [REGION]; :cloud alone lists clouds.yaml's",
        cloud,
    ),
    row("scale", &[], "scale the current node group", |_| {
        Ok(Command::Scale)
    }),
    row("upgrade", &["up"], "upgrade the current node group", |_| {
        Ok(Command::Upgrade)
    }),
    row("run", &[], "run a command on the marked nodes", |_| {
        Ok(Command::Run)
    }),
    row("refresh", &["r"], "refresh now", |_| Ok(Command::Refresh)),
    row(
        "messages",
        &["msg", "log"],
        "the status messages of this session, whole",
        |_| Ok(Command::Messages),
    ),
    row("help", &["h"], "key bindings", |_| Ok(Command::Help)),
    row("q", &["quit", "exit", "q!"], "quit", |_| Ok(Command::Quit)),
];

/// `:theme NAME`: a theme's name or a path.
fn theme(arg: &str) -> Result<Command, String> {
    match arg {
        "" => Err(":theme needs a name or a path".into()),
        name => Ok(Command::Theme(name.to_string())),
    }
}

/// `:cloud NAME [REGION]`; alone, the list of clouds.yaml's clouds.
fn cloud(arg: &str) -> Result<Command, String> {
    let mut words = arg.split_whitespace();
    let Some(name) = words.next() else {
        return Ok(Command::Clouds);
    };
    let region = words.next().map(str::to_string);
    if words.next().is_some() {
        return Err(":cloud takes a cloud name and at most a region".into());
    }
    Ok(Command::Cloud {
        name: name.to_string(),
        region,
    })
}

impl Command {
    /// Parse a palette line (leading `:` allowed): its first word looked up in [`COMMANDS`].
    pub fn parse(line: &str) -> Result<Command, String> {
        let line = line.trim().trim_start_matches(':').trim();
        let (word, arg) = match line.split_once(char::is_whitespace) {
            Some((w, a)) => (w, a.trim()),
            None => (line, ""),
        };
        let word = word.to_ascii_lowercase();
        let command = COMMANDS
            .iter()
            .find(|c| c.answers_to(&word))
            .ok_or_else(|| format!("unknown command :{word} (try :help)"))?;
        (command.make)(arg)
    }
}

/// Work for the background workers.
// The operator's requests carry a cluster and a node group (about 800 bytes), the reads
// about half that: a request is built once per key or tick and moved through a channel,
// never held in numbers, so boxing them would buy nothing and cost every test's pattern.
#[allow(clippy::large_enum_variant)]
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
    /// The operator's actions and rollouts: answered by the operator's jobs, refused
    /// whole where the connection has no operator.
    Operator(OperatorRequest),
}

/// What the operator asks to be planned, applied or followed (scale, upgrade, rollouts, Heat
/// controls, the journal). Matched whole by the operator's jobs and by their refusal.
#[derive(Debug, Clone)]
pub enum OperatorRequest {
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
    /// A control for the rollout under `key`: sent to our engine; else, `take_over`, an
    /// engine here takes the rollout over with it (`reattach_rollout`: a resume, an abort),
    /// unless a live driver holds the rollout after all, which is asked instead; anything
    /// else is asked of its driver through the journal.
    RolloutControl {
        key: String,
        plan: Option<Box<RolloutPlan>>,
        control: Control,
        take_over: bool,
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

impl From<OperatorRequest> for Request {
    fn from(r: OperatorRequest) -> Request {
        Request::Operator(r)
    }
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
    Journal {
        gen: u64,
        result: ServiceResult<(Vec<Entry>, u64)>,
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
    /// Plans and results of the operator's actions.
    Action(ActionReply),
    /// Rollouts found, followed and controlled.
    Rollout(RolloutReply),
}

/// The answers of the operator's actions: plans, and what was applied. Matched whole by
/// the state's action handler (a new answer is a compile error there until it is handled).
#[derive(Debug)]
pub enum ActionReply {
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
    NodeActionDone {
        target: String,
        /// The node group the nodes are in.
        nodegroup_id: String,
        /// `(node name, run)` in order; nodes after a failed batch have no run.
        result: ServiceResult<Vec<(String, HookRun)>>,
        asked: usize,
    },
    ControlPlan {
        gen: u64,
        result: ServiceResult<ControlPlan>,
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

/// The answers of rollouts: found, their status, an update observed, a control sent.
/// Matched whole by the state's rollout handler.
#[derive(Debug)]
pub enum RolloutReply {
    /// What `FindRollout` found; `None` when nothing is under way.
    Found {
        key: String,
        gen: u64,
        result: ServiceResult<Option<(RolloutPlan, RolloutDriver)>>,
    },
    /// A rollout's newest status (from our engine, coalesced, or from an observation).
    Status {
        key: String,
        driver: RolloutDriver,
        result: ServiceResult<RolloutStatus>,
    },
    /// An observed update and its status; `None` when nothing is under way. (Boxed: the
    /// largest of the replies, which the channel's every message would otherwise carry.)
    Observed {
        key: String,
        gen: u64,
        result: ServiceResult<Option<Box<(ObservedUpdate, RolloutStatus)>>>,
    },
    Controlled {
        key: String,
        what: String,
        result: ServiceResult<()>,
    },
}

impl From<ActionReply> for Reply {
    fn from(r: ActionReply) -> Reply {
        Reply::Action(r)
    }
}

impl From<RolloutReply> for Reply {
    fn from(r: RolloutReply) -> Reply {
        Reply::Rollout(r)
    }
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
        for PaletteCommand { name, aliases, .. } in COMMANDS {
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
