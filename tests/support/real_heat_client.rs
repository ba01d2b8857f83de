//! What the real-Heat suites share: the Heat's URL (`HEAT_URL`, set by
//! `scripts/real-heat-suite.sh`), a connection to it, stack names unique on a shared Heat,
//! the stack-shape fixtures (`tests/fixtures/shapes`) and the `caldera` binary run on it.

use super::cli::Caldera;
use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::{EventQuery, HeatClient, SortDir, StackCreate};
use caldera::model::{NodeGroup, Role, StackRef, Status};
use std::path::{Path, PathBuf};

pub fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)")
}

/// `caldera --heat-url HEAT_URL ARGS`: (exited 0, stdout, stderr).
pub fn caldera(args: &[&str]) -> (bool, String, String) {
    Caldera::heat(&heat_url()).args(args).run_ok()
}

/// `caldera --heat-url HEAT_URL ARGS` with a journal of its own and no actions file; stdin
/// is not a terminal: (exited 0, stdout, stderr).
pub fn caldera_journaled(journal: &Path, args: &[&str]) -> (bool, String, String) {
    Caldera::heat(&heat_url())
        .args(args)
        .env("CALDERA_JOURNAL", journal)
        .env_remove("CALDERA_ACTIONS_CONFIG")
        .no_stdin()
        .run_ok()
}

/// `caldera --heat-url HEAT_URL ARGS` with a journal and an actions file (both in `dir`) whose
/// post-node hook appends each node's `$CALDERA_NODE_MEMBER $CALDERA_NODE_IP` to a log: (exited
/// 0, stdout, stderr, the log's lines in the order the hooks ran).
pub fn caldera_with_address_hook(
    dir: &Path,
    journal: &Path,
    args: &[&str],
) -> (bool, String, String, Vec<String>) {
    let actions = dir.join("actions.toml");
    let hook_log = dir.join("hooks.log");
    std::fs::write(
        &actions,
        format!(
            "[hooks]\ntimeout_secs = 20\npost_node = \"echo $CALDERA_NODE_MEMBER \
             $CALDERA_NODE_IP >> {}\"\n",
            hook_log.display()
        ),
    )
    .expect("actions.toml");
    let (ok, out, err) = Caldera::heat(&heat_url())
        .journal(journal, &actions)
        .args(args)
        .no_stdin()
        .run_ok();
    let hooks = std::fs::read_to_string(&hook_log).unwrap_or_default();
    (ok, out, err, hooks.lines().map(str::to_string).collect())
}

pub async fn connect() -> CloudConnection {
    CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to the real Heat")
}

pub async fn heat() -> HeatClient {
    connect().await.heat
}

/// `prefix-PID-NANOS`: unique on a Heat other suites share.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// A template of `tests/fixtures/shapes`.
pub fn fixture(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/shapes")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A Magnum default node group's row as the console has it: its `stack_id` is the cluster
/// stack (Magnum gives both default groups the cluster's stack).
pub fn default_group(name: &str, role: Role, stack: &StackRef) -> NodeGroup {
    NodeGroup {
        id: format!("uuid-of-{name}"),
        cluster_id: "cluster-uuid".into(),
        status: Status::parse("CREATE_COMPLETE"),
        is_default: true,
        ..NodeGroup::of_stack(&stack.id, name, role)
    }
}

/// Stack `name` in the layout Magnum's Heat driver builds (the stand-in templates of
/// `tests/fixtures/shapes/magnum`: one cluster stack holding `kube_masters` and
/// `kube_minions`), with `masters` and `minions` members; not waited for.
pub async fn create_magnum_layout(
    heat: &HeatClient,
    name: &str,
    masters: u32,
    minions: u32,
) -> StackRef {
    let template =
        serde_yaml_ng::from_str(&fixture("magnum/kubecluster.yaml")).expect("template YAML");
    let files = [
        ("lib/network.yaml", "network.yaml"),
        ("kubemaster.yaml", "kubemaster.yaml"),
        ("kubeminion.yaml", "kubeminion.yaml"),
    ]
    .iter()
    .map(|(n, p)| (n.to_string(), fixture(&format!("magnum/{p}"))))
    .collect();
    let parameters =
        serde_json::json!({"number_of_masters": masters, "number_of_minions": minions});
    heat.create_stack(&StackCreate {
        name: name.into(),
        template,
        files,
        parameters: serde_json::from_value(parameters).expect("parameters"),
        disable_rollback: Some(true),
        ..Default::default()
    })
    .await
    .expect("stack create")
}

/// An event query oldest first.
pub fn oldest_first() -> EventQuery {
    EventQuery {
        sort_dir: Some(SortDir::Asc),
        ..Default::default()
    }
}
