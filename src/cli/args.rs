//! Command-line arguments. The console is the default; the subcommands are headless.

use super::output::Format;
use caldera_cloud::config::bounds;
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "caldera",
    version,
    about = "A terminal console for operators of OpenStack Magnum and Heat",
    long_about = "A terminal console for operators of OpenStack Magnum and Heat.\n\n\
        With no subcommand it opens the console: on the cloud chosen by --cloud / OS_CLOUD from \
        clouds.yaml, on standalone no-auth endpoints (--heat-url, --magnum-url), or, when no \
        cloud is configured at all, on the built-in simulated cloud."
)]
pub struct Cli {
    #[command(flatten)]
    pub conn: ConnectArgs,

    #[command(flatten)]
    pub console: ConsoleArgs,

    #[command(flatten)]
    pub actions: ActionArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How to reach a cloud, shared by the console and every headless command.
///
/// The shared flags are global (`caldera events X --cloud prod` works) and listed under
/// their own headings, after a subcommand's own options in its `--help`.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Connection")]
pub struct ConnectArgs {
    /// Cloud name in clouds.yaml (default: OS_CLOUD, or the only cloud in the file).
    #[arg(long, global = true, env = "OS_CLOUD")]
    pub cloud: Option<String>,

    /// Region to pick endpoints from (default: the cloud's region_name).
    #[arg(long, global = true)]
    pub region: Option<String>,

    /// Heat endpoint for a standalone no-auth Heat, e.g. http://127.0.0.1:8004/v1/admin.
    #[arg(long, global = true, env = "CALDERA_HEAT_URL")]
    pub heat_url: Option<String>,

    /// Magnum endpoint for a standalone no-auth Magnum, e.g. http://127.0.0.1:9511/v1.
    #[arg(long, global = true, env = "CALDERA_MAGNUM_URL")]
    pub magnum_url: Option<String>,

    /// Nova endpoint for standalone mode, e.g. http://127.0.0.1:8774/v2.1.
    #[arg(long, global = true, env = "CALDERA_NOVA_URL")]
    pub nova_url: Option<String>,

    /// Standalone mode: a token sent as X-Auth-Token. A noauth Heat hands it on to the
    /// services it calls for a stack (Nova, Glance), which need one. Never printed.
    #[arg(
        long,
        global = true,
        env = "CALDERA_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub auth_token: Option<String>,

    /// Use the built-in simulated cloud even if a cloud is configured.
    #[arg(long, global = true)]
    pub simulator: bool,

    /// Items per page for paginated listings.
    #[arg(long, global = true, default_value_t = 200, value_parser = whole::<u32>(1, 10_000))]
    pub page_size: u32,

    /// Most requests in flight at once, process-wide.
    #[arg(long, global = true, default_value_t = 16, value_parser = whole::<u32>(1, 1024))]
    pub max_in_flight: u32,

    /// Most requests started per second, process-wide (0: no limit).
    #[arg(long, global = true, default_value_t = 50, value_parser = whole::<u32>(0, 100_000))]
    pub max_per_second: u32,

    /// A timeout in seconds, KEY=SECS (repeatable): connect; keystone, heat, magnum, nova
    /// (until a service's answer starts; defaults 30, 60, 30, 30); probe (service discovery,
    /// 10); follow (a follower's request, 30); body (a whole body, 60, plus 1 s per 64 KiB);
    /// idle (a pause inside a body, 30).
    #[arg(long = "timeout", global = true, value_name = "KEY=SECS")]
    pub timeouts: Vec<String>,

    /// Most MB of response bodies held in memory at once, process-wide.
    #[arg(long, global = true, default_value_t = 512, value_parser = whole::<usize>(1, 1 << 20))]
    pub max_response_memory: usize,
}

/// The console's settings; `--read-only` and `--log-file` apply to every command, the
/// others only to the console (so a subcommand's help does not list them).
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Console")]
pub struct ConsoleArgs {
    /// Theme name (dark, light, high-contrast) or path to a theme file.
    #[arg(long)]
    pub theme: Option<String>,

    /// Block every action that changes the cloud.
    #[arg(long, global = true, help_heading = "Global")]
    pub read_only: bool,

    /// Log file (default: caldera.log in the XDG state directory).
    #[arg(long, global = true, help_heading = "Global")]
    pub log_file: Option<PathBuf>,

    /// How often a rollout driven from the console looks at Heat, in seconds.
    #[arg(long, default_value_t = 2.0, value_parser = secs(0.01, 3600.0))]
    pub rollout_poll_secs: f64,
}

/// Where actions are recorded and which operator hooks they run.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Actions")]
pub struct ActionArgs {
    /// The audit journal (default: $XDG_STATE_HOME/caldera/journal.jsonl).
    #[arg(long, global = true, env = "CALDERA_JOURNAL")]
    pub journal: Option<PathBuf>,

    /// Operator hooks configuration (default: $XDG_CONFIG_HOME/caldera/actions.toml).
    #[arg(long, global = true, env = "CALDERA_ACTIONS_CONFIG")]
    pub actions_config: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum JournalFormat {
    #[default]
    Text,
    Json,
    Csv,
}

#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Plan and start a node-by-node upgrade, then follow it until it ends or pauses.
    Start {
        /// CLUSTER/NODEGROUP (or CLUSTER when it has one node group), or STACK/GROUP: a
        /// scaling group of any stack, by its resource path (`--set` says what changes).
        #[arg(value_parser = name_path)]
        target: String,
        /// New image: of caldera's node groups, or for STACK/GROUP the stack parameter its
        /// servers boot from, found from the templates (else name it with --set).
        #[arg(long, required_unless_present_any = ["template", "set"])]
        image: Option<String>,
        /// New cluster template (Magnum clusters; Magnum runs the batches).
        #[arg(long)]
        template: Option<String>,
        /// Nodes released together after the canaries.
        #[arg(long, default_value_t = 1, value_parser = whole::<usize>(1, 100_000))]
        batch: usize,
        /// First nodes, one at a time, before bigger batches.
        #[arg(long, default_value_t = 0, value_parser = whole::<usize>(0, 100_000))]
        canary: usize,
        /// Seconds to watch for failures after each batch before the next.
        #[arg(long, default_value_t = 0.0, value_parser = secs(0.0, 86400.0))]
        gate_secs: f64,
        /// Pause when a node takes longer than this from release to done.
        #[arg(long, default_value_t = 1800, value_parser = whole::<u64>(1, 7 * 86400))]
        node_timeout_secs: u64,
        /// End the rollout on a failure instead of pausing it.
        #[arg(long)]
        stop_on_failure: bool,
        /// A template parameter set by the update, KEY=JSON (repeatable): beside --image for
        /// caldera's node groups; for STACK/GROUP, what the rollout changes.
        #[arg(long = "set", value_name = "KEY=JSON")]
        set: Vec<String>,
        /// Don't ask before starting.
        #[arg(long)]
        yes: bool,
        /// The cluster name, typed back (required on production clouds).
        #[arg(long)]
        confirm: Option<String>,
        /// STACK/GROUP: go ahead on a stack Magnum owns (its conductor may fight the update).
        #[arg(long)]
        allow_magnum_owned: bool,
        /// STACK/GROUP: let Heat update this other resource of the stack (its path) in the
        /// same update, unheld, although it reads a changed parameter too (repeatable).
        /// Without it such a change is refused, naming what it would touch.
        #[arg(long, value_name = "PATH", value_parser = name_path)]
        let_heat_update: Vec<String>,
        /// STACK/GROUP: hold this other group of the stack (its path, as the plan's blast
        /// radius names it: `kube_masters`) too, when the change updates it: its members are
        /// hooked by the same update and released by caldera one at a time, with the health
        /// gate between them, all BEFORE the target's members (control plane before workers).
        /// Repeatable. Refused when the change does not update that group.
        #[arg(long, value_name = "GROUP", value_parser = name_path)]
        also: Vec<String>,
        /// STACK/GROUP: as --also, but that group's members are released (one at a time)
        /// AFTER the target's. Repeatable.
        #[arg(long, value_name = "GROUP", value_parser = name_path)]
        also_after: Vec<String>,
        /// Seconds between looks at Heat.
        #[arg(long, default_value_t = 2.0, value_parser = secs(0.01, 3600.0))]
        poll_secs: f64,
    },
    /// The rollout's state, from Heat and the journal.
    Status {
        /// CLUSTER/NODEGROUP or STACK/GROUP, as the rollout was started.
        #[arg(value_parser = name_path)]
        target: String,
        #[arg(long, value_enum, default_value_t)]
        format: JournalFormat,
        /// The state, counts, batch, pace and ETA only: no line per node (JSON: no `nodes`).
        #[arg(long)]
        summary: bool,
    },
    /// Ask the running rollout to stop releasing nodes (and wait for it to say it has).
    Pause {
        /// CLUSTER/NODEGROUP or STACK/GROUP, as the rollout was started.
        #[arg(value_parser = name_path)]
        target: String,
        /// How long to wait for the engine's acknowledgement (exit 4 without one).
        #[arg(long, default_value_t = 15.0, value_parser = secs(0.0, 3600.0))]
        wait_secs: f64,
    },
    /// Reattach to the rollout (after a pause, a failure or a restart) and follow it.
    Resume {
        /// CLUSTER/NODEGROUP or STACK/GROUP, as the rollout was started.
        #[arg(value_parser = name_path)]
        target: String,
        /// Parameter overrides for the retried update, KEY=JSON (e.g. after fixing a cause):
        /// only after Heat's update failed (they go with the update the resume sends again).
        #[arg(long = "set", value_name = "KEY=JSON")]
        set: Vec<String>,
        /// Send the overrides, or take over a rollout started on another machine, without
        /// asking.
        #[arg(long)]
        yes: bool,
        #[arg(long, default_value_t = 2.0, value_parser = secs(0.01, 3600.0))]
        poll_secs: f64,
    },
    /// Skip a node: it is never released by this rollout.
    Skip {
        /// CLUSTER/NODEGROUP or STACK/GROUP, as the rollout was started.
        #[arg(value_parser = name_path)]
        target: String,
        #[arg(value_parser = name_path)]
        node: String,
        /// How long to wait for the engine's acknowledgement (exit 4 without one).
        #[arg(long, default_value_t = 15.0, value_parser = secs(0.0, 3600.0))]
        wait_secs: f64,
    },
    /// Stop the rollout; optionally cancel Heat's update.
    Abort {
        /// CLUSTER/NODEGROUP or STACK/GROUP, as the rollout was started.
        #[arg(value_parser = name_path)]
        target: String,
        /// `cancel_update`: Heat rolls the group back.
        #[arg(long, conflicts_with = "cancel")]
        rollback: bool,
        /// `cancel_without_rollback`: stop Heat's update where it is.
        #[arg(long)]
        cancel: bool,
        /// Send Heat's cancel (--rollback, --cancel) without asking.
        #[arg(long)]
        yes: bool,
        /// How long to wait for the engine's acknowledgement (exit 4 without one).
        #[arg(long, default_value_t = 15.0, value_parser = secs(0.0, 3600.0))]
        wait_secs: f64,
    },
}

/// Manual Heat controls outside caldera's rollouts. Each control but `hooks` prints its
/// plan (the exact calls) and asks before acting; all are journaled.
#[derive(Debug, Subcommand)]
pub enum HeatCommand {
    /// The resources of a stack tree Heat holds on a hook now, and since when (read-only),
    /// and the hooks its environment keeps for the next update.
    Hooks {
        /// STACK (name or id), CLUSTER or CLUSTER/NODEGROUP (each of its stacks).
        #[arg(value_parser = name_path)]
        stack: String,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Clear a pending hook: signal `{"unset_hook": HOOK}` to each matching resource.
    ClearHook {
        /// STACK: name or id (a cluster's stack by its own name).
        #[arg(value_parser = name_path)]
        stack: String,
        /// The resources' paths from the stack down (`kube_minions/3 kube_minions/7`), or
        /// globs of paths (`kube_minions/*`): only resources held on HOOK now are signalled.
        #[arg(required = true, value_parser = name_path)]
        resource_path: Vec<String>,
        #[arg(long, default_value = "pre-update")]
        hook: String,
        /// Don't ask.
        #[arg(long)]
        yes: bool,
        /// The stack name, typed back (required on production clouds for a cancel).
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Ask Heat to check a settled stack (`CHECK_COMPLETE` or `CHECK_FAILED`).
    Check {
        /// STACK: name or id (a cluster's stack by its own name).
        #[arg(value_parser = name_path)]
        stack: String,
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Cancel the update under way: Heat rolls back (`cancel_update`), or with
    /// --no-rollback stops where it is (`cancel_without_rollback`).
    Cancel {
        /// STACK: name or id (a cluster's stack by its own name).
        #[arg(value_parser = name_path)]
        stack: String,
        #[arg(long)]
        no_rollback: bool,
        /// Go ahead on a stack Magnum owns (its conductor tracks the update).
        #[arg(long)]
        allow_magnum_owned: bool,
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Take `pre-update` hooks out of the stack's environment on a group's members (left by
    /// a rollout that ended with members not updated, an older version, another tool):
    /// otherwise the next update of the stack, by any tool, holds every one of them. The
    /// PATCH is an update of its own; the plan shows Heat's preview of it.
    Unhook {
        /// STACK: name or id (a cluster's stack by its own name).
        #[arg(value_parser = name_path)]
        stack: String,
        /// The group's path from the stack down (`kube_minions`, `roles/Compute`), as
        /// `caldera heat hooks STACK` names it.
        #[arg(value_parser = name_path)]
        group: String,
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Report a software deployment COMPLETE or FAILED as its agent would have
    /// (`PUT /software_deployments/{id}`): the operator ran its script by hand, or knows it
    /// never will. Its resource, waiting on the signal, then completes or fails. Only a
    /// deployment in progress; `caldera deployments TARGET` gives the ids.
    SignalDeployment {
        /// The deployment's id (the deployment resource's physical id).
        deployment_id: String,
        #[arg(long, value_parser = ["COMPLETE", "FAILED"])]
        status: String,
        /// Shown by Heat as the deployment's status reason (required with FAILED).
        #[arg(long)]
        reason: Option<String>,
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Mark a resource unhealthy (`CHECK_FAILED`): the next update replaces it.
    MarkUnhealthy {
        /// STACK: name or id (a cluster's stack by its own name).
        #[arg(value_parser = name_path)]
        stack: String,
        /// The resource's path from the stack down: `kube_minions/3`.
        #[arg(value_parser = name_path)]
        resource_path: String,
        /// Shown by Heat as the resource's status reason.
        #[arg(long)]
        reason: String,
        /// Go ahead on a stack Magnum owns (Magnum's next update replaces what is marked).
        #[arg(long)]
        allow_magnum_owned: bool,
        #[arg(long)]
        yes: bool,
        #[arg(long)]
        confirm: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List clusters (Magnum and Heat-native).
    Clusters {
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// The clusters of every cloud in clouds.yaml at once: each cloud on its own connection
    /// (its own request budget and timeouts), one that does not answer shown as such.
    Fleet {
        /// Longest wait for one cloud's whole answer (authenticate and list), in seconds;
        /// a cloud that takes longer is shown `unreachable`.
        #[arg(long, default_value_t = 20.0, value_parser = secs(0.1, 3600.0))]
        cloud_timeout: f64,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// List the node groups of a cluster.
    Nodegroups {
        /// CLUSTER (name or id) or STACK: the node groups of a cluster, or the groups of any
        /// stack whose members are nodes.
        #[arg(value_parser = name_path)]
        cluster: String,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// List Heat stacks.
    Stacks {
        /// Include nested stacks.
        #[arg(long)]
        nested: bool,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Show the events of a cluster, node group or stack; with --follow, keep following them.
    Events {
        /// CLUSTER (its stacks as one timeline), CLUSTER/NODEGROUP (the group's own events,
        /// also where Magnum keeps it inside the cluster's stack), STACK, or STACK/PATH (the
        /// events of the resource at PATH and everything under it, e.g. `mystack/kube_minions`).
        #[arg(value_parser = name_path)]
        stack: String,
        /// Keep polling for new events until interrupted (or until the stack settles with --until-complete).
        #[arg(long)]
        follow: bool,
        /// Include events of nested stacks down to this depth.
        #[arg(long, default_value_t = 0, value_parser = whole::<u32>(0, 32))]
        nested_depth: u32,
        /// Longest wait between polls when following, in seconds (polls come sooner while
        /// events arrive faster than Heat keeps them, see --max-events-per-stack).
        #[arg(long, default_value_t = 2.0, value_parser = secs(0.2, 86400.0))]
        interval: f64,
        /// The cloud's Heat `max_events_per_stack` (default: the cloud's
        /// `caldera: {max_events_per_stack}` in clouds.yaml, else Heat's 1000): the follower
        /// polls often enough that the busiest stack cannot purge events between two polls.
        #[arg(long, value_parser = whole::<usize>(1, 10_000_000))]
        max_events_per_stack: Option<usize>,
        /// With --follow: stop once the stack is no longer IN_PROGRESS.
        #[arg(long)]
        until_complete: bool,
        /// Only events newer than this (90s, 30m, 2h, 1d; with --follow, of the backlog
        /// printed first; new events are all printed).
        #[arg(long, value_parser = span(0.0, 366.0 * 86400.0))]
        since: Option<f64>,
        /// Only the last N events of the backlog (with --since: of those newer than it);
        /// with --follow, new events are all printed after them.
        #[arg(long, value_parser = whole::<usize>(0, 10_000_000))]
        tail: Option<usize>,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// The IP addresses of every node of a cluster, node group or stack, one row per node in
    /// member order (`--stream`: as they arrive).
    Ips {
        /// CLUSTER, CLUSTER/NODEGROUP, STACK (name or id: every node group Heat's types show
        /// in it), or STACK/PATH: one group by its resource path, nested groups too
        /// (`app/workers`, `inventory/racks/1/nodes`).
        #[arg(value_parser = name_path)]
        target: String,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
        /// Per-member lookups in flight at once.
        #[arg(long, default_value_t = 16, value_parser = whole::<usize>(1, 1024))]
        concurrency: usize,
        /// Name of each member's output holding its address (default: the cloud's
        /// `caldera: {output_key}` in clouds.yaml, else discovered per node group from the
        /// stack's templates).
        #[arg(long)]
        output_key: Option<String>,
        /// Only the addresses on this network, where the source names networks (a server's
        /// `networks`, Nova's addresses): `--network private`.
        #[arg(long)]
        network: Option<String>,
        /// Print each node's row as soon as its addresses are in, in the order they arrive
        /// (by default the rows come at the end, in member order).
        #[arg(long)]
        stream: bool,
    },
    /// Why a cluster, node group or stack is not done: failed, stalled, held on a hook, or
    /// hooks left in its environment; the deepest cause first. Exit status: 0 settled or busy
    /// within its siblings' pace, 3 held, 5 stalled, 6 failed, 7 hooks left behind (the worst
    /// of its stacks).
    Why {
        /// CLUSTER, CLUSTER/NODEGROUP, or STACK (name or id).
        #[arg(value_parser = name_path)]
        target: String,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// The software deployments of a cluster, node group or stack tree: each one's action,
    /// status, how long it has waited for its agent's signal against its siblings, the
    /// agent's code and the tail of its stderr.
    Deployments {
        /// CLUSTER, CLUSTER/NODEGROUP, STACK or STACK/PATH (name or id).
        #[arg(value_parser = name_path)]
        target: String,
        /// Only the failed ones and those waiting well past their siblings.
        #[arg(long)]
        failed: bool,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// The deepest failed resources of a stack, with dotted paths and reasons.
    Failures {
        /// CLUSTER, CLUSTER/NODEGROUP, or STACK (name or id).
        #[arg(value_parser = name_path)]
        stack: String,
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Benchmarks side by side with the tools operators use today (prints markdown tables).
    Bench(crate::bench::BenchArgs),
    /// Scale a node group: set its node count and/or remove named nodes. Prints the plan
    /// (nodes added and removed, API calls) and asks before acting.
    Scale {
        /// CLUSTER/NODEGROUP (or CLUSTER when it has one node group), or STACK/GROUP: a
        /// scaling group of any stack by its resource path, scaled through the parameter
        /// its count reads (Heat's preview of the update is printed first).
        #[arg(value_parser = name_path)]
        target: String,
        /// The new node count (default: the current count minus --remove).
        #[arg(long, value_parser = whole::<u32>(0, 100_000))]
        count: Option<u32>,
        /// Nodes to remove, by member name: 3,7.
        #[arg(long, value_delimiter = ',', value_parser = name_path)]
        remove: Vec<String>,
        /// Don't ask.
        #[arg(long)]
        yes: bool,
        /// The cluster name, typed back (required on production clouds).
        #[arg(long)]
        confirm: Option<String>,
        /// STACK/GROUP: go ahead on a stack Magnum owns (its conductor may fight the update).
        #[arg(long)]
        allow_magnum_owned: bool,
        /// STACK/GROUP: let Heat update this other resource of the stack (its path) in the
        /// same update, unheld, although it reads a changed parameter too (repeatable).
        /// Without it such a change is refused, naming what it would touch.
        #[arg(long, value_name = "PATH", value_parser = name_path)]
        let_heat_update: Vec<String>,
        /// Return once the request is accepted instead of following it.
        #[arg(long)]
        no_wait: bool,
    },
    /// Manual Heat controls: pending hooks, clear a hook, check, cancel, mark unhealthy.
    Heat {
        #[command(subcommand)]
        action: HeatCommand,
    },
    /// Node-by-node upgrades.
    Rollout {
        #[command(subcommand)]
        action: RolloutCommand,
    },
    /// The audit journal of actions taken (no cloud needed).
    Journal {
        /// Keep printing new entries.
        #[arg(long)]
        follow: bool,
        /// Set aside what cannot be read: a torn last line to `<journal>.torn`, lines that
        /// are not entries to `<journal>.quarantine` (blanked in place), then exit.
        #[arg(long, conflicts_with = "follow")]
        repair: bool,
        #[arg(long, value_enum, default_value_t)]
        format: JournalFormat,
    },
    /// Serve the built-in simulated cloud over HTTP.
    Sim {
        /// Address to listen on (loopback).
        #[arg(long, default_value = "127.0.0.1:8787")]
        addr: SocketAddr,
        /// Scenario (the list is the simulator's own).
        #[arg(long, default_value = "demo", help = scenario_help())]
        scenario: String,
        /// Seed for the simulated dynamics.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Simulated clock speed factor.
        #[arg(long, default_value_t = 1.0, value_parser = number(0.001, 100_000.0))]
        speed: f64,
    },
}

/// `caldera sim --scenario`'s help, from the simulator's own lists (was: four names written
/// here, three scenarios and every modifier missing).
fn scenario_help() -> String {
    let modifiers: Vec<String> = crate::sim::scenario::MODIFIERS
        .iter()
        .map(|(name, what)| format!("+{name} ({what})"))
        .collect();
    format!(
        "Scenario: {} (bench-N or scale-N: N nodes); after it, fault modifiers: {}",
        crate::sim::scenario::NAMES.join(", "),
        modifiers.join(", ")
    )
}

/// A positional `CLUSTER`, `STACK`, `CLUSTER/NODEGROUP` or `STACK/PATH`: every part named. An
/// empty part would reach the cloud as another request (`GET …/clusters/` is the list of
/// clusters, not a cluster), so it is refused here, as are control characters.
fn name_path(s: &str) -> Result<String, String> {
    if s.chars().any(char::is_control) {
        return Err("a name holds a control character".into());
    }
    if s.split('/').any(|part| part.trim().is_empty()) {
        return Err(
            "every part of a name path is a name (CLUSTER, CLUSTER/NODEGROUP, STACK, \
             STACK/PATH, a group's or member's path); one is empty"
                .into(),
        );
    }
    Ok(s.to_string())
}

/// A flag's seconds, from `min` to `max` (see `caldera_cloud::config::bounds`): `1e308`,
/// `inf` and `NaN` are refused with the bounds, never a panic further on.
fn secs(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| bounds::parse_seconds(s, min, max).map(|d| d.as_secs_f64())
}

/// A flag's span of time (`90s`, `30m`, `2h`, `1h30m`), in seconds.
fn span(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| bounds::parse_span(s, min, max).map(|d| d.as_secs_f64())
}

/// A flag's plain number (a factor), finite and from `min` to `max`.
fn number(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| bounds::parse_number(s, min, max)
}

/// A flag's whole number (a count), from `min` to `max`.
fn whole<T: TryFrom<u64> + Clone + Send + Sync + 'static>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v = bounds::parse_whole(s, min, max, "number")?;
        T::try_from(v).map_err(|_| format!("expected a whole number from {min} to {max}, got {v}"))
    }
}
