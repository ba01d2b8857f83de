//! Operator lifecycle hooks: shell commands run before/after each node and each batch of a
//! rollout, and ad-hoc node actions run on marked nodes in batches.
//!
//! Configured in `$XDG_CONFIG_HOME/caldera/actions.toml` (a file of its own: the console's
//! `config.toml` rejects keys it does not know):
//!
//! ```toml
//! [hooks]                      # every cloud and cluster
//! timeout_secs = 300
//! post_node = "kubectl wait --for=condition=Ready node/$CALDERA_NODE_NAME --timeout=5m"
//!
//! [hooks.clouds.prod]          # overrides, field by field, for one cloud
//! pre_node = "drain-node $CALDERA_NODE_IP"
//!
//! [hooks.clusters.payments]    # and for one cluster (wins over its cloud)
//! post_batch = "smoke-test payments"
//! ```
//!
//! Each command runs with `sh -c` and these variables: `CALDERA_HOOK` (pre_node, post_node,
//! pre_batch, post_batch, node_action), `CALDERA_CLUSTER`, `CALDERA_NODEGROUP`,
//! `CALDERA_NODE_NAME` (the server's name, as Kubernetes names the node), `CALDERA_NODE_MEMBER`
//! (its member name in the group), `CALDERA_NODE_INDEX`, `CALDERA_NODE_IP` (node hooks), `CALDERA_BATCH`
//! (batch number from 1), `CALDERA_BATCH_NODES` (comma-separated members), `CALDERA_ROLLOUT`.
//! A non-zero exit or a timeout is a failure: the rollout pauses there.
//!
//! Bounds, because a hook is the operator's code and may misbehave:
//! - it runs in a process group of its own; on timeout the whole group is killed (a
//!   `kubectl drain` started by the hook's `sh` dies with it), and so it is when the run
//!   is dropped (the engine stopped mid-hook);
//! - stdout and stderr are read together, as they come (a hook that fills one pipe while
//!   we wait on the other cannot deadlock), into one capture that keeps the first and the
//!   last [`OUTPUT_LIMIT`]/2 bytes and counts what it dropped in between;
//! - the hook is over when its own process has exited: a background child that still
//!   holds stdout is read until it is silent for [`EXIT_GRACE`] (at most until the hook's
//!   timeout), then no longer read (it is left running: a hook may start a daemon).

use crate::config::bounds;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// Most bytes of a hook's output kept for the journal: the first and the last half.
pub const OUTPUT_LIMIT: usize = 4096;
/// After the hook's own process exited, how long a silence ends the reading of its pipes.
pub const EXIT_GRACE: Duration = Duration::from_millis(500);
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;
/// The longest a hook may be given: a day.
pub const MAX_TIMEOUT_SECS: u64 = 86400;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSet {
    pub pre_node: Option<String>,
    pub post_node: Option<String>,
    pub pre_batch: Option<String>,
    pub post_batch: Option<String>,
    pub timeout_secs: Option<u64>,
}

impl HookSet {
    /// `over`'s fields win where set.
    fn overlay(&self, over: &HookSet) -> HookSet {
        HookSet {
            pre_node: over.pre_node.clone().or_else(|| self.pre_node.clone()),
            post_node: over.post_node.clone().or_else(|| self.post_node.clone()),
            pre_batch: over.pre_batch.clone().or_else(|| self.pre_batch.clone()),
            post_batch: over.post_batch.clone().or_else(|| self.post_batch.clone()),
            timeout_secs: over.timeout_secs.or(self.timeout_secs),
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS))
    }

    /// The hooks that will run, one line each, for the plan the operator confirms.
    pub fn plan_lines(&self) -> Vec<String> {
        let set: Vec<(HookPoint, &str)> = [
            HookPoint::PreBatch,
            HookPoint::PreNode,
            HookPoint::PostNode,
            HookPoint::PostBatch,
        ]
        .into_iter()
        .filter_map(|p| self.command(p).map(|c| (p, c)))
        .collect();
        if set.is_empty() {
            return vec!["hooks: none".to_string()];
        }
        let mut lines = vec![format!(
            "hooks (each killed after {}s):",
            self.timeout().as_secs()
        )];
        for (p, c) in set {
            lines.push(format!("  {:<10} {}", p.as_str(), one_line(c)));
        }
        lines
    }

    pub fn command(&self, point: HookPoint) -> Option<&str> {
        match point {
            HookPoint::PreNode => self.pre_node.as_deref(),
            HookPoint::PostNode => self.post_node.as_deref(),
            HookPoint::PreBatch => self.pre_batch.as_deref(),
            HookPoint::PostBatch => self.post_batch.as_deref(),
            HookPoint::NodeAction => None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    pub pre_node: Option<String>,
    pub post_node: Option<String>,
    pub pre_batch: Option<String>,
    pub post_batch: Option<String>,
    pub timeout_secs: Option<u64>,
    #[serde(default)]
    pub clouds: BTreeMap<String, HookSet>,
    #[serde(default)]
    pub clusters: BTreeMap<String, HookSet>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionsConfig {
    #[serde(default)]
    pub hooks: HooksSection,
}

/// Every `timeout_secs` of the file is a whole number: a float (`1e308`, `inf`, `2.5`) or a
/// string is refused in the words of the bound, naming where (the parser's own error named a
/// 300-digit number and a Rust type).
fn whole_timeouts(text: &str, origin: &str) -> Result<(), String> {
    let Ok(raw) = toml::from_str::<toml::Table>(text) else {
        return Ok(()); // the typed parse says what is wrong with the file
    };
    let Some(hooks) = raw.get("hooks").and_then(toml::Value::as_table) else {
        return Ok(());
    };
    let nested = |kind: &'static str| {
        hooks
            .get(kind)
            .and_then(toml::Value::as_table)
            .into_iter()
            .flatten()
            .filter_map(move |(name, set)| {
                Some((
                    format!("[hooks.{kind}.{name}]"),
                    set.as_table()?.get("timeout_secs")?,
                ))
            })
    };
    let levels = hooks
        .get("timeout_secs")
        .map(|v| ("[hooks]".to_string(), v))
        .into_iter()
        .chain(nested("clouds"))
        .chain(nested("clusters"));
    for (place, value) in levels {
        let got = match value {
            toml::Value::Integer(_) => continue,
            toml::Value::Float(f) => format!("{f:?}"),
            other => other.to_string(),
        };
        return Err(format!(
            "{origin}: {place} timeout_secs: expected a whole number of seconds from 1 to \
             {MAX_TIMEOUT_SECS}, got {}",
            crate::model::terminal_safe(&got)
        ));
    }
    Ok(())
}

impl ActionsConfig {
    pub fn parse(text: &str, origin: &str) -> Result<ActionsConfig, String> {
        whole_timeouts(text, origin)?;
        let cfg: ActionsConfig = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
        // A hook killed after 0 s never runs; one left for days holds the rollout as long.
        let h = &cfg.hooks;
        let levels = std::iter::once(("[hooks]".to_string(), h.timeout_secs))
            .chain(
                h.clouds
                    .iter()
                    .map(|(n, s)| (format!("[hooks.clouds.{n}]"), s.timeout_secs)),
            )
            .chain(
                h.clusters
                    .iter()
                    .map(|(n, s)| (format!("[hooks.clusters.{n}]"), s.timeout_secs)),
            );
        for (place, secs) in levels {
            if let Some(secs) = secs {
                bounds::whole(i128::from(secs), 1, MAX_TIMEOUT_SECS, "number of seconds")
                    .map_err(|e| format!("{origin}: {place} timeout_secs: {e}"))?;
            }
        }
        Ok(cfg)
    }

    /// Reads the file the operator named (`--actions-config`): missing is an error (a typo
    /// must not run a rollout without its drain hooks).
    pub fn load(path: &Path) -> Result<ActionsConfig, String> {
        use crate::config::file_limits::{read_bounded, MAX_TOML_BYTES};
        match read_bounded(path, MAX_TOML_BYTES) {
            Ok(text) => ActionsConfig::parse(&text, &path.display().to_string()),
            Err(e) if e.is_missing() => Err(format!(
                "{}: no such actions file (named by --actions-config or \
                 CALDERA_ACTIONS_CONFIG)",
                path.display()
            )),
            Err(e) => Err(format!("{}: actions file {e}", path.display())),
        }
    }

    /// Reads the default file ([`ActionsConfig::default_path`]): missing means no hooks.
    pub fn load_default(path: &Path) -> Result<ActionsConfig, String> {
        if !path.exists() {
            return Ok(ActionsConfig::default());
        }
        ActionsConfig::load(path)
    }

    /// `$XDG_CONFIG_HOME/caldera/actions.toml`.
    pub fn default_path() -> Option<PathBuf> {
        dirs::config_dir().map(|d| d.join("caldera").join("actions.toml"))
    }

    /// The hooks for a cluster on a cloud: global, then the cloud's, then the cluster's.
    pub fn hooks_for(&self, cloud: &str, cluster: &str) -> HookSet {
        let h = &self.hooks;
        let mut set = HookSet {
            pre_node: h.pre_node.clone(),
            post_node: h.post_node.clone(),
            pre_batch: h.pre_batch.clone(),
            post_batch: h.post_batch.clone(),
            timeout_secs: h.timeout_secs,
        };
        if let Some(c) = self.hooks.clouds.get(cloud) {
            set = set.overlay(c);
        }
        if let Some(c) = self.hooks.clusters.get(cluster) {
            set = set.overlay(c);
        }
        set
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    PreNode,
    PostNode,
    PreBatch,
    PostBatch,
    NodeAction,
}

impl HookPoint {
    pub fn as_str(self) -> &'static str {
        match self {
            HookPoint::PreNode => "pre_node",
            HookPoint::PostNode => "post_node",
            HookPoint::PreBatch => "pre_batch",
            HookPoint::PostBatch => "post_batch",
            HookPoint::NodeAction => "node_action",
        }
    }
}

/// What a hook is told about where it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookContext {
    pub cluster: String,
    pub nodegroup: String,
    pub rollout: Option<String>,
    /// The node's own name: its server's (what Kubernetes calls the node), else its member
    /// name when no server name can be had.
    pub node_name: Option<String>,
    /// The node's member name in its group (`3`), as the journal and `rollout skip` name it.
    #[serde(default)]
    pub node_member: Option<String>,
    pub node_index: Option<u32>,
    pub node_ip: Option<String>,
    pub batch: Option<usize>,
    pub batch_nodes: Vec<String>,
}

impl HookContext {
    /// The node's member name in its group (how the journal names it), for a context made
    /// before member and name were told apart: its name.
    pub fn member(&self) -> Option<&str> {
        self.node_member.as_deref().or(self.node_name.as_deref())
    }
}

/// One hook run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRun {
    pub point: HookPoint,
    pub command: String,
    /// `None` when killed (timeout) or not started.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Could not be started at all (e.g. no `sh`).
    pub spawn_error: Option<String>,
    pub output: String,
    pub duration_ms: u64,
}

impl HookRun {
    pub fn ok(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && self.spawn_error.is_none()
    }

    pub fn summary(&self) -> String {
        if let Some(e) = &self.spawn_error {
            format!("{} hook could not start: {e}", self.point.as_str())
        } else if self.timed_out {
            format!(
                "{} hook timed out after {} ms",
                self.point.as_str(),
                self.duration_ms
            )
        } else {
            format!(
                "{} hook exited with {}",
                self.point.as_str(),
                self.exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "a signal".into())
            )
        }
    }
}

/// A command shown on one line: control characters (newlines included) as `\u{..}`.
fn one_line(c: &str) -> String {
    c.chars()
        .map(|ch| {
            if ch.is_control() {
                ch.escape_unicode().to_string()
            } else {
                ch.to_string()
            }
        })
        .collect()
}

/// A hook's output, bounded: the first and the last `limit / 2` bytes, and how many were
/// dropped in between.
#[derive(Debug)]
pub struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    omitted: u64,
}

impl Capture {
    pub fn new(limit: usize) -> Capture {
        let half = (limit / 2).max(1);
        Capture {
            half,
            head: Vec::with_capacity(half),
            tail: std::collections::VecDeque::with_capacity(half),
            omitted: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half - self.head.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= self.half {
            // Everything in the tail now, and the start of `bytes`, is dropped.
            let drop = bytes.len() - self.half;
            self.omitted += (self.tail.len() + drop) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[drop..]);
            return;
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(self.half);
        if over > 0 {
            self.tail.drain(..over);
            self.omitted += over as u64;
        }
    }

    pub fn omitted(&self) -> u64 {
        self.omitted
    }

    /// The text kept, with a marker where bytes were dropped.
    pub fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.omitted > 0 {
            s.push_str(&format!(
                "\n[... {} bytes of output omitted ...]\n",
                self.omitted
            ));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

/// Kills a hook's process group when dropped, unless the hook's own process was seen to
/// exit: a rollout stopped mid-hook leaves no `kubectl drain` behind.
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL to every process of group `pgid` (the hook's `sh` leads it: `process_group(0)`).
/// Only called while that `sh` is not yet reaped, so the id cannot name another group.
fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Runs one hook command to completion or timeout (its whole process group is killed on
/// timeout). See the module's bounds.
pub async fn run_hook(
    point: HookPoint,
    command: &str,
    ctx: &HookContext,
    timeout: Duration,
) -> HookRun {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // A group of its own, so a timeout can kill what the hook started.
        .process_group(0)
        .env("CALDERA_HOOK", point.as_str())
        .env("CALDERA_CLUSTER", &ctx.cluster)
        .env("CALDERA_NODEGROUP", &ctx.nodegroup)
        .env("CALDERA_ROLLOUT", ctx.rollout.clone().unwrap_or_default())
        .env(
            "CALDERA_NODE_NAME",
            ctx.node_name.clone().unwrap_or_default(),
        )
        .env(
            "CALDERA_NODE_MEMBER",
            ctx.node_member.clone().unwrap_or_default(),
        )
        .env(
            "CALDERA_NODE_INDEX",
            ctx.node_index.map(|i| i.to_string()).unwrap_or_default(),
        )
        .env("CALDERA_NODE_IP", ctx.node_ip.clone().unwrap_or_default())
        .env(
            "CALDERA_BATCH",
            ctx.batch.map(|b| b.to_string()).unwrap_or_default(),
        )
        .env("CALDERA_BATCH_NODES", ctx.batch_nodes.join(","));
    let mut run = HookRun {
        point,
        command: command.to_string(),
        exit_code: None,
        timed_out: false,
        spawn_error: None,
        output: String::new(),
        duration_ms: 0,
    };
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            run.spawn_error = Some(e.to_string());
            return run;
        }
    };
    let mut guard = GroupGuard {
        pgid: child.id().map(|id| id as i32),
    };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut capture = Capture::new(OUTPUT_LIMIT);
    let (mut out_buf, mut err_buf) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut exited: Option<std::io::Result<std::process::ExitStatus>> = None;
    let mut grace_end = deadline;
    loop {
        if exited.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        // Output already in the pipes is read before any timer is looked at (a starved
        // task must not take buffered output for silence); after the hook's exit each read
        // restarts the grace, within the hook's timeout.
        tokio::select! {
            biased;
            r = read_some(&mut stdout, &mut out_buf) => match r {
                Some(n) => {
                    capture.push(&out_buf[..n]);
                    if exited.is_some() {
                        grace_end = (tokio::time::Instant::now() + EXIT_GRACE).min(deadline);
                    }
                }
                None => stdout = None,
            },
            r = read_some(&mut stderr, &mut err_buf) => match r {
                Some(n) => {
                    capture.push(&err_buf[..n]);
                    if exited.is_some() {
                        grace_end = (tokio::time::Instant::now() + EXIT_GRACE).min(deadline);
                    }
                }
                None => stderr = None,
            },
            status = child.wait(), if exited.is_none() => {
                // The hook's own process is done (reaped): its group id is no longer ours
                // to signal.
                guard.pgid = None;
                exited = Some(status);
                grace_end = (tokio::time::Instant::now() + EXIT_GRACE).min(deadline);
            }
            _ = tokio::time::sleep_until(grace_end), if exited.is_some() => {
                // A background child holds the pipes: what it writes later is not the hook's.
                break;
            }
            _ = tokio::time::sleep_until(deadline), if exited.is_none() => {
                run.timed_out = true;
                guard.kill();
                let _ = child.wait().await;
                break;
            }
        }
    }
    if let Some(status) = exited {
        run.exit_code = status.ok().and_then(|s| s.code());
    }
    run.output = capture.text();
    run.duration_ms = started.elapsed().as_millis() as u64;
    run
}

/// The next bytes of a pipe: `None` at its end or on an error. With no pipe left it never
/// completes, so `select!` keeps waiting on the rest.
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> Option<usize> {
    match pipe {
        Some(p) => match p.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

/// An ad-hoc command on marked nodes, `batch_size` at a time (a batch runs concurrently).
/// Stops after the first batch with a failure; returns the runs made.
pub async fn run_node_action(
    command: &str,
    nodes: Vec<HookContext>,
    batch_size: usize,
    timeout: Duration,
) -> Vec<HookRun> {
    let mut runs = Vec::new();
    for (b, chunk) in nodes.chunks(batch_size.max(1)).enumerate() {
        let futs = chunk.iter().map(|n| {
            let mut ctx = n.clone();
            ctx.batch = Some(b + 1);
            ctx.batch_nodes = chunk
                .iter()
                .filter_map(|c| c.member().map(str::to_string))
                .collect();
            async move { run_hook(HookPoint::NodeAction, command, &ctx, timeout).await }
        });
        let batch: Vec<HookRun> = futures::future::join_all(futs).await;
        let failed = batch.iter().any(|r| !r.ok());
        runs.extend(batch);
        if failed {
            break;
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_or_odd_actions_file_is_refused_with_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("actions.toml");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(2 << 30)
            .unwrap();
        assert_eq!(
            ActionsConfig::load(&path).unwrap_err(),
            format!(
                "{}: actions file is larger than the 1 MiB limit",
                path.display()
            )
        );
        assert_eq!(
            ActionsConfig::load(dir.path()).unwrap_err(),
            format!(
                "{}: actions file is a directory, not a file",
                dir.path().display()
            )
        );
        // A named file that is missing is an error; only the default path may be missing.
        let none = dir.path().join("none.toml");
        assert!(ActionsConfig::load(&none)
            .unwrap_err()
            .contains("no such actions file"));
        assert!(ActionsConfig::load_default(&none).is_ok());
    }

    /// A hook killed after 0 s never runs (the plan said "killed after 0s"); a timeout
    /// is a whole number of seconds, at least one, at any level of the file.
    #[test]
    fn a_hook_timeout_of_zero_or_past_a_day_is_refused_naming_where() {
        for (text, place) in [
            ("[hooks]\ntimeout_secs = 0\n", "[hooks] timeout_secs"),
            (
                "[hooks.clouds.prod]\ntimeout_secs = 0\n",
                "[hooks.clouds.prod] timeout_secs",
            ),
            (
                "[hooks.clusters.c1]\ntimeout_secs = 99999999\n",
                "[hooks.clusters.c1] timeout_secs",
            ),
        ] {
            let e = ActionsConfig::parse(text, "actions.toml").unwrap_err();
            assert!(
                e.starts_with(&format!(
                    "actions.toml: {place}: expected a whole number of seconds from 1 to"
                )),
                "{e}"
            );
        }
        // Not a whole number: the same words, not the parser's (it printed 1e308 in 309
        // digits and a Rust type).
        for (text, got) in [
            ("[hooks]\ntimeout_secs = 1e308\n", "got 1e308"),
            ("[hooks.clouds.p]\ntimeout_secs = inf\n", "got inf"),
            ("[hooks]\ntimeout_secs = \"60\"\n", "got \"60\""),
        ] {
            let e = ActionsConfig::parse(text, "actions.toml").unwrap_err();
            assert!(
                e.contains("timeout_secs: expected a whole number of seconds from 1 to")
                    && e.ends_with(got),
                "{e}"
            );
        }
        let ok = ActionsConfig::parse("[hooks]\ntimeout_secs = 1\n", "a").unwrap();
        assert_eq!(ok.hooks_for("x", "y").timeout(), Duration::from_secs(1));
    }

    #[test]
    fn config_layers_cloud_then_cluster() {
        let cfg = ActionsConfig::parse(
            r#"
[hooks]
timeout_secs = 10
post_node = "global"
[hooks.clouds.prod]
pre_node = "cloud-pre"
post_node = "cloud-post"
[hooks.clusters.c1]
post_node = "cluster-post"
"#,
            "test",
        )
        .unwrap();
        let h = cfg.hooks_for("prod", "c1");
        assert_eq!(h.pre_node.as_deref(), Some("cloud-pre"));
        assert_eq!(h.post_node.as_deref(), Some("cluster-post"));
        assert_eq!(h.timeout(), Duration::from_secs(10));
        assert_eq!(
            cfg.hooks_for("dev", "c2").post_node.as_deref(),
            Some("global")
        );
        assert!(ActionsConfig::parse("[hooks]\nbogus = 1\n", "t").is_err());
    }

    #[tokio::test]
    async fn hook_sees_its_environment_and_failures_are_reported() {
        let ctx = HookContext {
            cluster: "c1".into(),
            nodegroup: "w".into(),
            node_name: Some("3".into()),
            node_index: Some(3),
            node_ip: Some("10.0.0.13".into()),
            ..Default::default()
        };
        let run = run_hook(
            HookPoint::PostNode,
            "echo $CALDERA_HOOK $CALDERA_CLUSTER/$CALDERA_NODEGROUP $CALDERA_NODE_NAME $CALDERA_NODE_INDEX $CALDERA_NODE_IP",
            &ctx,
            Duration::from_secs(10),
        )
        .await;
        assert!(run.ok(), "{run:?}");
        assert_eq!(run.output.trim(), "post_node c1/w 3 3 10.0.0.13");
        let bad = run_hook(
            HookPoint::PreNode,
            "echo oops >&2; exit 3",
            &ctx,
            Duration::from_secs(10),
        )
        .await;
        assert!(!bad.ok());
        assert_eq!(bad.exit_code, Some(3));
        assert!(bad.output.contains("oops"));
        let slow = run_hook(
            HookPoint::PreNode,
            "sleep 5",
            &ctx,
            Duration::from_millis(200),
        )
        .await;
        assert!(slow.timed_out && !slow.ok());
        assert!(slow.duration_ms < 3000, "{slow:?}");
    }

    #[tokio::test]
    async fn node_action_runs_in_batches_and_stops_on_failure() {
        let nodes: Vec<HookContext> = (0..5)
            .map(|i| HookContext {
                cluster: "c".into(),
                nodegroup: "w".into(),
                node_name: Some(i.to_string()),
                node_index: Some(i),
                ..Default::default()
            })
            .collect();
        let runs = run_node_action(
            "test $CALDERA_NODE_INDEX -ne 2",
            nodes,
            2,
            Duration::from_secs(5),
        )
        .await;
        // Batch 1 (0,1) ok, batch 2 (2,3) has the failure, batch 3 never runs.
        assert_eq!(runs.len(), 4);
        assert!(!runs[2].ok());
    }

    #[test]
    fn named_actions_file_must_exist_default_may_not() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("typo.toml");
        let e = ActionsConfig::load(&missing).unwrap_err();
        assert!(
            e.contains("typo.toml") && e.contains("no such actions file"),
            "{e}"
        );
        assert_eq!(
            ActionsConfig::load_default(&missing).unwrap(),
            ActionsConfig::default()
        );
        std::fs::write(&missing, "[hooks]\npre_node = \"drain\"\n").unwrap();
        let cfg = ActionsConfig::load(&missing).unwrap();
        assert_eq!(cfg.hooks.pre_node.as_deref(), Some("drain"));
    }

    #[test]
    fn plan_lists_the_hooks_that_will_run() {
        let none = HookSet::default();
        assert_eq!(none.plan_lines(), vec!["hooks: none".to_string()]);
        let set = HookSet {
            pre_node: Some("kubectl drain $CALDERA_NODE_NAME\nrm -rf /".into()),
            post_batch: Some("smoke".into()),
            timeout_secs: Some(60),
            ..Default::default()
        };
        let lines = set.plan_lines();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("60s"), "{lines:?}");
        assert!(lines[1].contains("pre_node") && lines[1].contains("\\u{a}rm"));
        assert!(lines[2].contains("post_batch") && lines[2].contains("smoke"));
        assert!(lines.iter().all(|l| !l.chars().any(char::is_control)));
    }

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_middle() {
        let mut c = Capture::new(8);
        c.push(b"abc");
        assert_eq!((c.text(), c.omitted()), ("abc".to_string(), 0));
        c.push(b"defgh");
        assert_eq!((c.text(), c.omitted()), ("abcdefgh".to_string(), 0));
        c.push(b"ij");
        assert_eq!(c.omitted(), 2);
        assert!(c.text().starts_with("abcd\n[... 2 bytes"));
        assert!(c.text().ends_with("ghij"), "{}", c.text());
        // One big push and many small ones drop the same bytes.
        let data: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut big = Capture::new(100);
        big.push(&data);
        let mut small = Capture::new(100);
        for chunk in data.chunks(7) {
            small.push(chunk);
        }
        assert_eq!(big.text(), small.text());
        assert_eq!(big.omitted(), 9_900);
        assert!(big
            .text()
            .ends_with(std::str::from_utf8(&data[9_950..]).unwrap()));
    }

    fn ctx() -> HookContext {
        HookContext {
            cluster: "c".into(),
            nodegroup: "w".into(),
            ..Default::default()
        }
    }

    /// More on stderr than a pipe holds, before anything on stdout: read together, so no
    /// deadlock; 10 MB is kept as head and tail.
    #[tokio::test]
    async fn big_stderr_does_not_deadlock_and_output_is_bounded() {
        let run = run_hook(
            HookPoint::PreNode,
            "head -c 10000000 /dev/zero | tr '\\0' e >&2; echo done >&2; sleep 1; echo out",
            &ctx(),
            Duration::from_secs(120),
        )
        .await;
        assert!(run.ok(), "{}", run.summary());
        assert!(
            run.output.len() < OUTPUT_LIMIT + 100,
            "{}",
            run.output.len()
        );
        assert!(run.output.contains("bytes of output omitted"));
        // Each pipe in its order; the two merged as they came, so the last lines of both
        // are in the tail kept.
        let tail = &run.output[run.output.len() - 100..];
        assert!(tail.contains("done\n") && tail.contains("out\n"), "{tail}");
    }

    fn alive(pid: i32) -> bool {
        // A zombie (parent not reaping in a container) is dead for our purpose.
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z')),
            Err(_) => false,
        }
    }

    /// The process id a hook wrote to `pidfile`.
    fn pid_in(pidfile: &std::path::Path) -> i32 {
        std::fs::read_to_string(pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Whether `pid` is gone within 5 s (looked at every 25 ms).
    async fn dies_within_5s(pid: i32) -> bool {
        for _ in 0..200 {
            if !alive(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }

    /// On timeout the whole group dies: the hook's own background `sleep` (a stand-in for
    /// `kubectl drain`) does not survive under PID 1.
    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let run = run_hook(
            HookPoint::PreNode,
            &format!("sleep 300 & echo $! > {}; wait", pidfile.display()),
            &ctx(),
            Duration::from_millis(500),
        )
        .await;
        assert!(run.timed_out && !run.ok(), "{run:?}");
        let pid = pid_in(&pidfile);
        assert!(
            dies_within_5s(pid).await,
            "the hook's child {pid} outlived the timeout"
        );
    }

    /// A background child that keeps stdout open is not the hook: the run ends once `sh`
    /// has exited (the grace), ok, with what was written before.
    #[tokio::test]
    async fn background_child_holding_stdout_is_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let run = run_hook(
            HookPoint::PostNode,
            &format!("echo started; sleep 120 & echo $! > {}", pidfile.display()),
            &ctx(),
            Duration::from_secs(60),
        )
        .await;
        assert!(run.ok() && !run.timed_out, "{run:?}");
        assert_eq!(run.output.trim(), "started");
        let pid = pid_in(&pidfile);
        // Not ours to kill (a hook may start a daemon); tidy up after the test.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }

    /// A run dropped midway (the engine task aborted) takes its group with it.
    #[tokio::test]
    async fn dropped_run_kills_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let cmd = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let c = ctx();
        let mut fut = Box::pin(run_hook(
            HookPoint::PreNode,
            &cmd,
            &c,
            Duration::from_secs(300),
        ));
        for _ in 0..400 {
            tokio::select! {
                _ = &mut fut => panic!("the hook ended"),
                _ = tokio::time::sleep(Duration::from_millis(25)) => {}
            }
            if std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n')) {
                break;
            }
        }
        let pid = pid_in(&pidfile);
        assert!(alive(pid));
        drop(fut);
        assert!(
            dies_within_5s(pid).await,
            "the hook's child {pid} outlived the dropped run"
        );
    }
}
