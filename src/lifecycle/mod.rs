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
//! `CALDERA_NODE_NAME`, `CALDERA_NODE_INDEX`, `CALDERA_NODE_IP` (node hooks), `CALDERA_BATCH`
//! (batch number from 1), `CALDERA_BATCH_NODES` (comma-separated members), `CALDERA_ROLLOUT`.
//! A non-zero exit or a timeout is a failure: the rollout pauses there. Output (stdout then
//! stderr, truncated) goes to the journal.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

/// Most bytes of a hook's output kept for the journal.
pub const OUTPUT_LIMIT: usize = 4096;
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

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

impl ActionsConfig {
    pub fn parse(text: &str, origin: &str) -> Result<ActionsConfig, String> {
        toml::from_str(text).map_err(|e| format!("{origin}: {e}"))
    }

    /// Reads `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<ActionsConfig, String> {
        use crate::config::limits::{read_bounded, MAX_TOML_BYTES};
        match read_bounded(path, MAX_TOML_BYTES) {
            Ok(text) => ActionsConfig::parse(&text, &path.display().to_string()),
            Err(e) if e.is_missing() => Ok(ActionsConfig::default()),
            Err(e) => Err(format!("{}: actions file {e}", path.display())),
        }
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
    pub node_name: Option<String>,
    pub node_index: Option<u32>,
    pub node_ip: Option<String>,
    pub batch: Option<usize>,
    pub batch_nodes: Vec<String>,
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

fn truncate(mut s: String) -> String {
    if s.len() > OUTPUT_LIMIT {
        let mut cut = OUTPUT_LIMIT;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("\n[... output truncated]");
    }
    s
}

/// Runs one hook command to completion or timeout (the child is killed on timeout).
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
        .env("CALDERA_HOOK", point.as_str())
        .env("CALDERA_CLUSTER", &ctx.cluster)
        .env("CALDERA_NODEGROUP", &ctx.nodegroup)
        .env("CALDERA_ROLLOUT", ctx.rollout.clone().unwrap_or_default())
        .env(
            "CALDERA_NODE_NAME",
            ctx.node_name.clone().unwrap_or_default(),
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
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read_all = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut out).await;
        }
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut err).await;
        }
        (out, err)
    };
    let waited = tokio::time::timeout(timeout, async {
        let (out, err) = read_all.await;
        (child.wait().await, out, err)
    })
    .await;
    match waited {
        Ok((status, out, err)) => {
            run.exit_code = status.ok().and_then(|s| s.code());
            let mut text = String::from_utf8_lossy(&out).into_owned();
            let err = String::from_utf8_lossy(&err);
            if !err.is_empty() {
                text.push_str(&err);
            }
            run.output = truncate(text);
        }
        Err(_) => {
            run.timed_out = true;
            let _ = child.kill().await;
        }
    }
    run.duration_ms = started.elapsed().as_millis() as u64;
    run
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
            ctx.batch_nodes = chunk.iter().filter_map(|c| c.node_name.clone()).collect();
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
        assert!(ActionsConfig::load(&dir.path().join("none.toml")).is_ok());
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
}
