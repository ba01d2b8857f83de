//! What a headless command's TARGET names, as the console shows it: `CLUSTER` or
//! `CLUSTER/NODEGROUP` (Heat-native or Magnum), else `STACK` or `STACK/GROUP/PATH` (any Heat
//! stack, a node group named by its resource path such as `kube_minions` or `roles/Compute`).

use crate::api::cloud::CloudConnection;
use crate::drivers::magnum::group_in_stack;
use crate::drivers::resolve::Drivers;
use crate::model::{terminal_safe, Cluster, DriverKind, NodeGroup, StackRef};
use crate::service::live::LiveService;
use crate::service::{CloudService, ErrorKind, ServiceError, ServiceResult};

/// A stack (and maybe one group inside it) a command reads.
#[derive(Debug, Clone, PartialEq)]
pub struct StackTarget {
    /// How output rows are labelled: `prod/workers`, `mystack/kube_minions`, `mystack`.
    pub label: String,
    pub stack: StackRef,
    /// A group's resource path inside `stack`; `None` = every group of the stack.
    pub group: Option<String>,
    /// The operator named the stack alone (`STACK`): rows are labelled by each group's path
    /// in it (`STACK/kube_minions`), since the label names no group.
    pub stack_alone: bool,
}

/// A cluster as the console lists it, with its node groups.
pub struct ClusterTarget {
    pub cluster: Cluster,
    pub nodegroups: Vec<NodeGroup>,
}

/// The cluster named `name` (name or id), Heat-native or Magnum, with its node groups;
/// `None` when no cluster has that name.
///
/// Heat-native clusters are asked first (Heat alone knows them). Then, before Magnum is
/// asked, a stack of exactly that name settles it: Magnum names a cluster's stack
/// `<cluster>-<suffix>`, never the cluster's own name, so such a name is the operator's stack
/// and a command on it must not wait on a slow or dead Magnum. Only a name Heat does not know
/// waits for Magnum's cluster list.
pub async fn find_cluster(
    service: &LiveService,
    conn: &CloudConnection,
    name: &str,
) -> ServiceResult<Option<ClusterTarget>> {
    let matches = |c: &Cluster| c.name == name || c.id == name;
    match Drivers::new(conn).heat_native().list_clusters().await {
        Ok(native) => {
            if let Some(cluster) = native.into_iter().find(|c| matches(c)) {
                return with_nodegroups(service, cluster).await.map(Some);
            }
        }
        Err(e) => tracing::info!("Heat-native cluster lookup for '{name}': {e}"),
    }
    if conn.magnum.is_none() {
        return Ok(None);
    }
    match conn.heat.resolve(name).await {
        Ok(_) => return Ok(None),
        Err(e) if e.is_not_found() => {}
        // Heat could not say: Magnum may still know the name.
        Err(e) => tracing::info!("stack lookup for '{name}': {e}"),
    }
    // Magnum's list alone: the Heat-native clusters were asked first (above), and joined to
    // them a Magnum that failed would pass for one that has no such cluster whenever Heat
    // holds a cluster of its own.
    let clusters = match service.magnum_clusters().await {
        None => return Ok(None),
        Some(Ok(c)) => c,
        // No cluster source answered: the name may still be a stack's. Said on stderr, so
        // that "neither a cluster nor a stack" after it is not taken at its word when the
        // cluster list failed (a Magnum that does not answer is named with its timeout).
        Some(Err(e)) => {
            tracing::info!("cluster lookup for '{name}': {e}");
            eprintln!(
                "note: clusters could not be listed: {}",
                terminal_safe(&e.to_string())
            );
            return Ok(None);
        }
    };
    match clusters.into_iter().find(|c| matches(c)) {
        Some(cluster) => with_nodegroups(service, cluster).await.map(Some),
        None => Ok(None),
    }
}

async fn with_nodegroups(service: &LiveService, cluster: Cluster) -> ServiceResult<ClusterTarget> {
    let nodegroups = service.list_nodegroups(cluster.clone()).await?;
    Ok(ClusterTarget {
        cluster,
        nodegroups,
    })
}

/// The scaling group of a Magnum node group inside its stack, when that stack holds several
/// (Magnum's cluster stack holds default-master's `kube_masters` and default-worker's
/// `kube_minions`); `None` = every group of the stack is the node group's.
async fn magnum_group(
    conn: &CloudConnection,
    cluster: &Cluster,
    g: &NodeGroup,
    stack: &StackRef,
) -> ServiceResult<Option<String>> {
    if cluster.driver != DriverKind::Magnum {
        return Ok(None);
    }
    Ok(group_in_stack(&conn.heat, stack, g.role, &g.name)
        .await?
        .map(|(path, _)| path))
}

/// What a node-reading command reads: node-group stacks, or the node groups of a cluster
/// run by a Cluster API driver (no stack; their nodes are Nova servers).
pub enum NodeTargets {
    Stacks(Vec<StackTarget>),
    /// `(label, node group)`, the label `cluster/nodegroup`.
    ClusterApi(Vec<(String, NodeGroup)>),
}

/// The node-group stacks a `CLUSTER`, `CLUSTER/NODEGROUP`, `STACK` or `STACK/GROUP/PATH`
/// names. A cluster's node groups each give their stack; a stack gives every group in it, or
/// the one at the path. A Cluster API cluster gives its node groups themselves.
pub async fn node_targets(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
) -> ServiceResult<NodeTargets> {
    let (head, rest) = match target.split_once('/') {
        Some((h, r)) => (h, Some(r)),
        None => (target, None),
    };
    if let Some(found) = find_cluster(service, conn, head).await? {
        if let Some(capi) = &found.cluster.capi {
            let groups: Vec<(String, NodeGroup)> = found
                .nodegroups
                .iter()
                .filter(|g| rest.is_none_or(|n| n == g.name || n == g.id))
                .map(|g| (format!("{}/{}", found.cluster.name, g.name), g.clone()))
                .collect();
            if groups.is_empty() {
                return Err(ServiceError::new(
                    ErrorKind::NotFound,
                    format!(
                        "cluster {} ({}): no node group '{}' (node groups: {})",
                        found.cluster.name,
                        capi.driver.as_str(),
                        rest.unwrap_or_default(),
                        names(&found.nodegroups)
                    ),
                ));
            }
            return Ok(NodeTargets::ClusterApi(groups));
        }
        let mut out = Vec::new();
        for g in &found.nodegroups {
            if rest.is_some_and(|n| n != g.name && n != g.id) {
                continue;
            }
            let Some(stack_id) = &g.stack_id else {
                continue;
            };
            let stack = conn
                .heat
                .resolve(stack_id)
                .await
                .map_err(ServiceError::from)?;
            let group = magnum_group(conn, &found.cluster, g, &stack).await?;
            out.push(StackTarget {
                label: format!("{}/{}", found.cluster.name, g.name),
                stack,
                group,
                stack_alone: false,
            });
        }
        if out.is_empty() {
            return Err(ServiceError::new(
                ErrorKind::NotFound,
                format!(
                    "cluster {}: no node group {}with a Heat stack (node groups: {})",
                    found.cluster.name,
                    rest.map(|r| format!("'{r}' ")).unwrap_or_default(),
                    names(&found.nodegroups)
                ),
            ));
        }
        return Ok(NodeTargets::Stacks(out));
    }
    let stack = conn
        .heat
        .resolve(head)
        .await
        .map_err(|e| not_found_as(head, e))?;
    Ok(NodeTargets::Stacks(vec![StackTarget {
        label: match rest {
            Some(path) => format!("{}/{path}", stack.name),
            None => stack.name.clone(),
        },
        stack,
        group: rest.map(str::to_string),
        stack_alone: rest.is_none(),
    }]))
}

/// A stack whose events a command reads, and the part of it: the resource at `under` (a
/// path of resource names from the stack down) and everything beneath it, or the whole stack.
#[derive(Debug, Clone, PartialEq)]
pub struct EventScope {
    pub stack: StackRef,
    pub under: Option<Vec<String>>,
}

impl EventScope {
    /// Whether an event (its `path` from the stack down to its owning stack, then its
    /// resource) is inside the scope.
    pub fn covers(&self, e: &crate::model::StackEvent) -> bool {
        let full = e.path.iter().chain(std::iter::once(&e.resource_name));
        self.covers_parts(full.map(String::as_str))
    }

    /// Whether a resource path from the stack down (`kube_minions/3`, as hooks name them) is
    /// inside the scope.
    pub fn covers_path(&self, path: &str) -> bool {
        self.covers_parts(path.split('/').filter(|p| !p.is_empty()))
    }

    fn covers_parts<'a>(&self, mut parts: impl Iterator<Item = &'a str>) -> bool {
        let Some(under) = &self.under else {
            return true;
        };
        under.iter().all(|u| parts.next() == Some(u.as_str()))
    }

    /// How deep the events must be read to reach the scope's members: the path's length
    /// (`kube_minions` is a group at depth 0 whose members' own events come at depth 1).
    pub fn depth_needed(&self) -> u32 {
        self.under
            .as_ref()
            .map_or(0, |u| u32::try_from(u.len()).unwrap_or(u32::MAX))
    }
}

/// The stacks (and parts of stacks) whose events, failures and verdicts `CLUSTER`,
/// `CLUSTER/NODEGROUP`, `STACK` or `STACK/PATH` cover: a Magnum cluster's stack, a
/// Heat-native cluster's stack and its node groups' stacks, a node group's stack, or the
/// stack itself. A node group Magnum keeps inside its cluster's stack
/// (`CLUSTER/default-worker`: the stack's `kube_minions`) and `STACK/PATH` narrow to that
/// group's resource and what it holds.
pub async fn event_scopes(
    service: &LiveService,
    conn: &CloudConnection,
    target: &str,
) -> ServiceResult<Vec<EventScope>> {
    let found = find_cluster(service, conn, target_head(target)).await?;
    scopes_of(conn, found, target).await
}

/// [`event_scopes`] once the cluster lookup is done (`found`: the cluster `target` names,
/// if it names one).
pub async fn scopes_of(
    conn: &CloudConnection,
    found: Option<ClusterTarget>,
    target: &str,
) -> ServiceResult<Vec<EventScope>> {
    let rest = target.split_once('/').map(|(_, r)| r);
    let whole = |stack| EventScope { stack, under: None };
    match (found, rest) {
        (Some(found), Some(ng)) => {
            let group = found
                .nodegroups
                .iter()
                .find(|g| g.name == ng || g.id == ng)
                .cloned();
            let cluster = found.cluster.clone();
            let stacks = stacks_of(conn, Some(found), target).await?;
            let mut out = Vec::new();
            for stack in stacks {
                let path = match &group {
                    Some(g) => magnum_group(conn, &cluster, g, &stack).await?,
                    None => None,
                };
                out.push(EventScope {
                    stack,
                    under: path.map(|p| split_path(&p)),
                });
            }
            Ok(out)
        }
        (None, Some(path)) => {
            let head = target_head(target);
            let stack = conn
                .heat
                .resolve(head)
                .await
                .map_err(|e| not_found_as(head, e))?;
            // The path must name a resource of the stack (each segment's nested stack holding
            // the next): a mistyped one is an error, not a silent empty answer.
            crate::drivers::manual::owner_of(&conn.heat, &stack, path)
                .await
                .map_err(|e| match e.kind {
                    ErrorKind::NotFound => ServiceError::new(
                        ErrorKind::NotFound,
                        format!(
                            "stack {} has no resource at {}",
                            terminal_safe(&stack.name),
                            terminal_safe(path)
                        ),
                    ),
                    _ => e,
                })?;
            Ok(vec![EventScope {
                stack,
                under: Some(split_path(path)),
            }])
        }
        (found, None) => Ok(stacks_of(conn, found, target)
            .await?
            .into_iter()
            .map(whole)
            .collect()),
    }
}

fn split_path(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// `CLUSTER` of `CLUSTER/NODEGROUP` (or `STACK` of `STACK/PATH`).
pub fn target_head(target: &str) -> &str {
    target.split_once('/').map_or(target, |(h, _)| h)
}

/// The whole stacks `target` covers (see [`event_scopes`]), once the cluster lookup is
/// done (`found`: the cluster `target` names, if it names one).
pub async fn stacks_of(
    conn: &CloudConnection,
    found: Option<ClusterTarget>,
    target: &str,
) -> ServiceResult<Vec<StackRef>> {
    let (head, rest) = match target.split_once('/') {
        Some((h, r)) => (h, Some(r)),
        None => (target, None),
    };
    let heat = &conn.heat;
    if let Some(found) = found {
        let mut ids: Vec<String> = Vec::new();
        match rest {
            Some(ng) => {
                let g = found
                    .nodegroups
                    .iter()
                    .find(|g| g.name == ng || g.id == ng)
                    .ok_or_else(|| {
                        ServiceError::new(
                            ErrorKind::NotFound,
                            format!(
                                "cluster {} has no node group '{ng}' (node groups: {})",
                                found.cluster.name,
                                names(&found.nodegroups)
                            ),
                        )
                    })?;
                ids.extend(g.stack_id.clone());
            }
            None => {
                ids.extend(found.cluster.stack_id.clone());
                if ids.is_empty() {
                    // Heat-native: the cluster stack, found by its tags.
                    if let Some(s) = crate::drivers::resolve::Drivers::new(conn)
                        .heat_native()
                        .cluster_stack(&found.cluster.name)
                        .await?
                    {
                        ids.push(s.id);
                    }
                }
                for g in &found.nodegroups {
                    if let Some(id) = &g.stack_id {
                        if !ids.contains(id) {
                            ids.push(id.clone());
                        }
                    }
                }
            }
        }
        if ids.is_empty() {
            if let Some(capi) = &found.cluster.capi {
                return Err(ServiceError::new(
                    ErrorKind::NotFound,
                    format!(
                        "{target}: no Heat stack; the cluster runs on Cluster API ({}, cluster {}), \
                         whose events Magnum shows only as status_reason",
                        capi.driver.as_str(),
                        terminal_safe(&capi.name)
                    ),
                ));
            }
            return Err(ServiceError::new(
                ErrorKind::NotFound,
                format!("{target}: no Heat stack"),
            ));
        }
        let mut out = Vec::new();
        for id in ids {
            out.push(heat.resolve(&id).await.map_err(ServiceError::from)?);
        }
        return Ok(out);
    }
    if rest.is_some() {
        return Err(ServiceError::new(
            ErrorKind::NotFound,
            format!("no cluster '{head}' (a stack is named without a path here)"),
        ));
    }
    Ok(vec![heat
        .resolve(head)
        .await
        .map_err(|e| not_found_as(head, e))?])
}

/// Heat's 404 for a name that is not a stack, said as what the name is not.
fn not_found_as(head: &str, e: crate::api::error::ApiError) -> ServiceError {
    if e.is_not_found() {
        ServiceError::new(
            ErrorKind::NotFound,
            format!("'{}' is neither a cluster nor a stack", terminal_safe(head)),
        )
    } else {
        ServiceError::from(e)
    }
}

fn names(groups: &[NodeGroup]) -> String {
    if groups.is_empty() {
        return "none".into();
    }
    groups
        .iter()
        .map(|g| g.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
