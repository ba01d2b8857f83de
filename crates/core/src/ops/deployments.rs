//! Software deployments, read where an operator looks and judged against their siblings.
//!
//! A deployment resource (`OS::Heat::SoftwareDeployment`, `StructuredDeployment`, or each
//! member of a `*DeploymentGroup`) has a deployment id as its physical id. Heat keeps the
//! resource `IN_PROGRESS` until the server's agent signals the deployment, or the stack times
//! out; a non-zero `deploy_status_code` fails it. So "stuck" almost always means an agent that
//! never signalled (no network to Heat, no os-collect-config, a script still running), and
//! "failed" means the script's stderr says why.
//!
//! Siblings: the same deployment resource in the other members of a group (Magnum's
//! `kube_minions/*/…`) or the other members of a deployment group run the same config on
//! other servers; how long they took to signal says whether a wait is long.

use super::capi_stall::words;
use super::stack_paths::StackPaths;
use crate::api::error::ApiError;
use crate::api::heat::deployments::{DEPLOYMENT_GROUP_TYPES, DEPLOYMENT_TYPES};
use crate::api::heat::HeatClient;
use crate::fetch::fan_out;
use crate::model::{
    SoftwareConfig, SoftwareDeployment, StackRef, StackResource, Status, StatusState,
};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Deployments read at a time (two calls each: the deployment, its config).
pub const FAN_OUT: usize = 8;
/// Most deployments read for one target: a bigger tree is said to be cut.
pub const MAX_DEPLOYMENTS: usize = 1000;
/// Waiting longer than this many times the slowest sibling (and at least
/// [`SLOW_FLOOR_SECS`]) is called overdue.
pub const SLOW_FACTOR: i64 = 3;
pub const SLOW_FLOOR_SECS: i64 = 120;

/// A deployment resource found in a stack tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// The deployment's id (the resource's physical id).
    pub id: String,
    /// The resource's path from the stack down (`kube_minions/0/deploy`).
    pub path: String,
    /// What it shares with its siblings (`kube_minions/*/deploy`, `deploys/*`).
    pub siblings: String,
    /// The resource's status (the deployment's own is read apart).
    pub resource_status: Status,
}

/// One deployment with its config and the verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeploymentView {
    pub deployment: SoftwareDeployment,
    /// Where it was found in the tree (`None` when read by server).
    pub path: Option<String>,
    pub sibling_key: String,
    pub config_name: Option<String>,
    pub group: Option<String>,
    /// `HEAT_SIGNAL`, `CFN_SIGNAL`, ... (the derived config's `deploy_signal_transport`).
    pub transport: Option<String>,
    pub verdict: DeploymentVerdict,
}

/// What a deployment's state means.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DeploymentVerdict {
    /// Signalled with code 0 (or marked complete), `took` seconds after Heat started it.
    Complete { took_secs: Option<i64> },
    /// No signal yet for `for_secs`; `siblings` is how long the others took (fastest,
    /// slowest), `overdue` when it is well past them.
    Waiting {
        for_secs: i64,
        siblings: Option<(i64, i64)>,
        overdue: bool,
    },
    /// Failed: the agent's code and the last stderr line, else Heat's reason.
    Failed {
        code: Option<i64>,
        last_stderr: Option<String>,
        reason: Option<String>,
    },
    /// A status Heat does not document.
    Unknown { status: String },
}

impl DeploymentVerdict {
    pub fn is_problem(&self) -> bool {
        match self {
            DeploymentVerdict::Failed { .. } => true,
            DeploymentVerdict::Waiting { overdue, .. } => *overdue,
            DeploymentVerdict::Complete { .. } | DeploymentVerdict::Unknown { .. } => false,
        }
    }

    /// The verdict in words: "waiting for a signal for 47m (siblings signalled in 30s-40s)"
    /// or "failed, code 2: mkfs: no such device".
    pub fn words(&self, transport: Option<&str>) -> String {
        match self {
            DeploymentVerdict::Complete { took_secs } => match took_secs {
                Some(s) => format!("complete (signalled in {})", words(*s)),
                None => "complete".into(),
            },
            DeploymentVerdict::Waiting {
                for_secs, siblings, ..
            } => {
                let mut out = format!("waiting for a signal for {}", words(*for_secs));
                if let Some((lo, hi)) = siblings {
                    out.push_str(&format!(
                        " (siblings signalled in {}-{})",
                        words(*lo),
                        words(*hi)
                    ));
                }
                if let Some(t) = transport {
                    out.push_str(&format!("; transport {t}"));
                }
                out
            }
            DeploymentVerdict::Failed {
                code,
                last_stderr,
                reason,
            } => {
                let code = code.map(|c| format!(", code {c}")).unwrap_or_default();
                let why = last_stderr
                    .as_deref()
                    .or(reason.as_deref())
                    .unwrap_or("no reason given");
                format!("failed{code}: {why}")
            }
            DeploymentVerdict::Unknown { status } => format!("status {status}"),
        }
    }
}

impl DeploymentView {
    /// This deployment as the node detail of its server lists it.
    pub fn for_server_detail(&self) -> crate::model::server::ServerDeployment {
        use crate::model::server::{DeploymentState, ServerDeployment};
        let d = &self.deployment;
        let state = match &self.verdict {
            DeploymentVerdict::Complete { .. } => DeploymentState::Complete,
            DeploymentVerdict::Waiting { overdue: true, .. } => DeploymentState::Overdue,
            DeploymentVerdict::Waiting { overdue: false, .. } => DeploymentState::Waiting,
            DeploymentVerdict::Failed { .. } => DeploymentState::Failed,
            DeploymentVerdict::Unknown { .. } => DeploymentState::Unknown,
        };
        ServerDeployment {
            name: self
                .path
                .clone()
                .or_else(|| self.config_name.clone())
                .unwrap_or_else(|| d.config_id.clone()),
            id: d.id.clone(),
            action: d.status.action.clone(),
            verdict: self.verdict.words(self.transport.as_deref()),
            state,
            stderr: d.stderr.clone(),
        }
    }

    /// One line for why-stuck and the headless table: which deployment, of which server, and
    /// the verdict.
    pub fn line(&self) -> String {
        let d = &self.deployment;
        let what = match (&self.path, &self.config_name) {
            (Some(p), _) => p.clone(),
            (None, Some(n)) => n.clone(),
            (None, None) => d.config_id.clone(),
        };
        format!(
            "deployment {what} ({}) of server {}: {} {}",
            d.id,
            d.server_id,
            d.status.action,
            self.verdict.words(self.transport.as_deref())
        )
    }
}

/// The deployment resources of a tree listed with nesting (`resources` from
/// `GET .../resources?nested_depth=N`), by type: the names are the template author's.
pub fn deployment_resources(root: &StackRef, resources: &[StackResource]) -> Vec<Found> {
    let mut paths = StackPaths::new(root);
    paths.learn(resources);
    let types: HashMap<String, &str> = resources
        .iter()
        .map(|r| (paths.resource_path(r).join("/"), r.resource_type.as_str()))
        .collect();
    resources
        .iter()
        .filter(|r| DEPLOYMENT_TYPES.contains(&r.resource_type.as_str()))
        .filter_map(|r| {
            let id = r.physical_id.clone().filter(|id| !id.is_empty())?;
            let parts = paths.resource_path(r);
            let siblings = sibling_key(&parts, &types);
            Some(Found {
                id,
                path: parts.join("/"),
                siblings,
                resource_status: r.status.clone(),
            })
        })
        .take(MAX_DEPLOYMENTS)
        .collect()
}

/// `deploys/*` for a member of a deployment group at `deploys`; `kube_minions/*/deploy` for a
/// deployment inside each member of a group; the name alone at the top.
fn sibling_key(parts: &[String], types: &HashMap<String, &str>) -> String {
    let Some((last, parents)) = parts.split_last() else {
        return String::new();
    };
    let parent = parents.join("/");
    let in_group = types
        .get(&parent)
        .is_some_and(|t| DEPLOYMENT_GROUP_TYPES.contains(t));
    if in_group {
        return format!("{parent}/*");
    }
    match parents.split_last() {
        Some((_, above)) => {
            let mut key: Vec<&str> = above.iter().map(String::as_str).collect();
            key.extend(["*", last.as_str()]);
            key.join("/")
        }
        None => last.clone(),
    }
}

/// Reads each found deployment and its config, [`FAN_OUT`] at a time. A deployment Heat no
/// longer has (404: its resource is being replaced) is left out; other errors stop.
pub async fn read_found(
    heat: &HeatClient,
    found: Vec<Found>,
    now: DateTime<Utc>,
) -> Result<Vec<DeploymentView>, ApiError> {
    let h = heat.clone();
    let mut reads = fan_out(found, FAN_OUT, move |f: Found| {
        let h = h.clone();
        async move { read_one(&h, &f.id).await }
    });
    let mut views = Vec::new();
    while let Some((f, read)) = reads.next().await {
        match read {
            Ok((d, config)) => views.push(view(d, config, Some(f.path), f.siblings)),
            Err(e) if e.is_not_found() => {
                tracing::info!(deployment = %f.id, "gone: {e}");
            }
            Err(e) => return Err(e),
        }
    }
    views.sort_by(|a, b| a.path.cmp(&b.path));
    judge(&mut views, now);
    Ok(views)
}

/// Every deployment to each of `servers` (a node, a node group's nodes), [`FAN_OUT`]
/// servers at a time; siblings are deployments of the same config name.
pub async fn for_servers(
    heat: &HeatClient,
    servers: Vec<String>,
    now: DateTime<Utc>,
) -> Result<Vec<DeploymentView>, ApiError> {
    let h = heat.clone();
    let mut lists = fan_out(servers, FAN_OUT, move |s: String| {
        let h = h.clone();
        async move { h.list_deployments(&s).await }
    });
    let mut rows = Vec::new();
    while let Some((_, list)) = lists.next().await {
        rows.extend(list?);
        if rows.len() >= MAX_DEPLOYMENTS {
            break;
        }
    }
    let h = heat.clone();
    let mut configs = fan_out(rows, FAN_OUT, move |d: SoftwareDeployment| {
        let h = h.clone();
        async move { h.get_config(&d.config_id).await.ok() }
    });
    let mut views = Vec::new();
    while let Some((d, config)) = configs.next().await {
        let key = config
            .as_ref()
            .and_then(|c| c.name.clone())
            .unwrap_or_else(|| d.config_id.clone());
        views.push(view(d, config, None, key));
    }
    views.sort_by(|a, b| {
        (&a.deployment.server_id, &a.sibling_key).cmp(&(&b.deployment.server_id, &b.sibling_key))
    });
    judge(&mut views, now);
    Ok(views)
}

async fn read_one(
    heat: &HeatClient,
    id: &str,
) -> Result<(SoftwareDeployment, Option<SoftwareConfig>), ApiError> {
    let d = heat.get_deployment(id).await?;
    // The config is context (its name, transport): a deployment without it still shows.
    let config = match heat.get_config(&d.config_id).await {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::info!(config = %d.config_id, "config not read: {e}");
            None
        }
    };
    Ok((d, config))
}

fn view(
    d: SoftwareDeployment,
    config: Option<SoftwareConfig>,
    path: Option<String>,
    sibling_key: String,
) -> DeploymentView {
    DeploymentView {
        transport: config
            .as_ref()
            .and_then(|c| c.signal_transport().map(str::to_string)),
        config_name: config.as_ref().and_then(|c| c.name.clone()),
        group: config.map(|c| c.group),
        deployment: d,
        path,
        sibling_key,
        verdict: DeploymentVerdict::Unknown {
            status: String::new(),
        },
    }
}

/// How long a deployment took from Heat starting it to its signal.
fn took(d: &SoftwareDeployment) -> Option<i64> {
    Some((d.updated_at? - d.created_at?).num_seconds().max(0))
}

/// Sets each view's verdict, comparing waits with the completed siblings' times.
pub fn judge(views: &mut [DeploymentView], now: DateTime<Utc>) {
    let mut paces: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for v in views.iter().filter(|v| v.deployment.status.is_complete()) {
        if let Some(t) = took(&v.deployment) {
            let e = paces.entry(v.sibling_key.clone()).or_insert((t, t));
            *e = (e.0.min(t), e.1.max(t));
        }
    }
    for v in views.iter_mut() {
        v.verdict = verdict_of(&v.deployment, paces.get(&v.sibling_key).copied(), now);
    }
}

fn verdict_of(
    d: &SoftwareDeployment,
    siblings: Option<(i64, i64)>,
    now: DateTime<Utc>,
) -> DeploymentVerdict {
    match d.status.state {
        StatusState::Complete => DeploymentVerdict::Complete { took_secs: took(d) },
        StatusState::InProgress => {
            let for_secs = d.since().map_or(0, |t| (now - t).num_seconds().max(0));
            let limit = siblings.map_or(SLOW_FLOOR_SECS * 5, |(_, hi)| {
                (hi * SLOW_FACTOR).max(SLOW_FLOOR_SECS)
            });
            DeploymentVerdict::Waiting {
                for_secs,
                siblings,
                overdue: for_secs > limit,
            }
        }
        StatusState::Failed => DeploymentVerdict::Failed {
            code: d.status_code,
            last_stderr: d.last_stderr_line().map(str::to_string),
            reason: d.status_reason.clone(),
        },
        StatusState::Unknown => DeploymentVerdict::Unknown {
            status: d.status.raw.clone(),
        },
    }
}

/// The deployments of `root`'s tree under `under` (a path of resource names; empty for the
/// whole tree) whose resource is in progress or failed, read with their siblings (for the
/// pace) and judged: what why-stuck names as the deepest cause.
pub async fn troubled(
    heat: &HeatClient,
    root: &StackRef,
    resources: &[StackResource],
    under: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<DeploymentView>, ApiError> {
    let prefix = under.join("/");
    let inside = |f: &Found| {
        prefix.is_empty() || f.path == prefix || f.path.starts_with(&format!("{prefix}/"))
    };
    let found: Vec<Found> = deployment_resources(root, resources)
        .into_iter()
        .filter(inside)
        .collect();
    let keys: Vec<&str> = found
        .iter()
        .filter(|f| f.resource_status.is_in_progress() || f.resource_status.is_failed())
        .map(|f| f.siblings.as_str())
        .collect();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let keys: Vec<String> = keys.into_iter().map(str::to_string).collect();
    let wanted: Vec<Found> = found
        .into_iter()
        .filter(|f| keys.contains(&f.siblings))
        .collect();
    let views = read_found(heat, wanted, now).await?;
    Ok(views
        .into_iter()
        .filter(|v| !v.deployment.status.is_complete())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn sref(name: &str) -> StackRef {
        StackRef {
            name: name.into(),
            id: format!("{name}-id"),
        }
    }

    fn res(
        owner: &StackRef,
        name: &str,
        ty: &str,
        phys: &str,
        nested: Option<StackRef>,
    ) -> StackResource {
        StackResource {
            logical_id: name.into(),
            name: name.into(),
            physical_id: Some(phys.into()),
            resource_type: ty.into(),
            status: Status::parse("CREATE_IN_PROGRESS"),
            status_reason: None,
            updated_at: None,
            owner: Some(owner.clone()),
            nested,
            parent_resource: None,
            required_by: vec![],
        }
    }

    #[test]
    fn deployments_are_found_by_type_with_their_siblings() {
        let root = sref("root");
        let group = sref("root-minions");
        let m0 = sref("m0");
        let m1 = sref("m1");
        let dg = sref("root-deploys");
        let resources = vec![
            res(
                &root,
                "kube_minions",
                "OS::Heat::ResourceGroup",
                "g",
                Some(group.clone()),
            ),
            res(&group, "0", "file:///minion.yaml", "m0", Some(m0.clone())),
            res(&group, "1", "file:///minion.yaml", "m1", Some(m1.clone())),
            res(&m0, "cfg_node", "OS::Heat::SoftwareDeployment", "d0", None),
            res(&m1, "cfg_node", "OS::Heat::SoftwareDeployment", "d1", None),
            res(&m1, "cfg_text", "OS::Heat::SoftwareConfig", "c1", None),
            res(
                &root,
                "deploys",
                "OS::Heat::StructuredDeploymentGroup",
                "dg",
                Some(dg.clone()),
            ),
            res(&dg, "srv-a", "OS::Heat::StructuredDeployment", "da", None),
            res(&root, "top", "OS::Heat::SoftwareDeployment", "", None),
        ];
        let found = deployment_resources(&root, &resources);
        let got: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|f| (f.id.as_str(), f.path.as_str(), f.siblings.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("d0", "kube_minions/0/cfg_node", "kube_minions/*/cfg_node"),
                ("d1", "kube_minions/1/cfg_node", "kube_minions/*/cfg_node"),
                ("da", "deploys/srv-a", "deploys/*"),
            ]
        );
    }

    fn dep(
        id: &str,
        status: &str,
        created: DateTime<Utc>,
        updated: Option<DateTime<Utc>>,
    ) -> DeploymentView {
        let (action, state) = status.split_once('_').unwrap();
        let d = SoftwareDeployment {
            id: id.into(),
            server_id: format!("srv-{id}"),
            config_id: "c".into(),
            status: Status::from_parts(action, state),
            status_reason: Some(
                "deploy_status_code : Deployment exited with non-zero status code: 2".into(),
            ),
            created_at: Some(created),
            updated_at: updated,
            status_code: (state == "FAILED").then_some(2),
            stdout: vec![],
            stderr: vec!["mkfs.ext4: /dev/vdb: No such device".into()],
        };
        view(d, None, Some(format!("g/{id}/deploy")), "g/*/deploy".into())
    }

    #[test]
    fn a_wait_is_judged_against_its_siblings_and_a_failure_names_its_stderr() {
        let now = Utc::now();
        let t0 = now - Duration::minutes(48);
        let mut views = vec![
            dep("a", "CREATE_COMPLETE", t0, Some(t0 + Duration::seconds(30))),
            dep("b", "CREATE_COMPLETE", t0, Some(t0 + Duration::seconds(40))),
            dep("c", "CREATE_IN_PROGRESS", t0 + Duration::minutes(1), None),
            dep("d", "CREATE_FAILED", t0, Some(t0 + Duration::seconds(12))),
        ];
        views[2].transport = Some("HEAT_SIGNAL".into());
        judge(&mut views, now);
        let words: Vec<String> = views
            .iter()
            .map(|v| v.verdict.words(v.transport.as_deref()))
            .collect();
        assert_eq!(words[0], "complete (signalled in 30s)");
        assert_eq!(
            words[2],
            "waiting for a signal for 47m (siblings signalled in 30s-40s); transport HEAT_SIGNAL"
        );
        assert!(views[2].verdict.is_problem());
        assert_eq!(
            words[3],
            "failed, code 2: mkfs.ext4: /dev/vdb: No such device"
        );
        assert!(!views[0].verdict.is_problem());
        // A short wait is not overdue, even with fast siblings.
        let mut fresh = vec![
            dep("a", "CREATE_COMPLETE", t0, Some(t0 + Duration::seconds(30))),
            dep("c", "CREATE_IN_PROGRESS", now - Duration::seconds(60), None),
        ];
        judge(&mut fresh, now);
        assert!(!fresh[1].verdict.is_problem(), "{:?}", fresh[1].verdict);
    }
}
