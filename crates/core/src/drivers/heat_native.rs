//! The Heat-native driver: caldera's own templates on plain Heat.
//!
//! Layout: a cluster stack (`templates/cluster/cluster.yaml`, shared cluster resources) and
//! one stack per node group (`nodegroup.yaml`: a ResourceGroup `nodes` of `Caldera::Node`
//! member stacks). The machine each member gets is chosen by the environment: Nova servers
//! in production, `OS::Heat::TestResource` stand-ins in tests (`templates::Machines`).
//!
//! Discovery is by stack tags, which Heat stores and filters on (`GET /stacks?tags=a,b`
//! matches stacks carrying all of them; measured on Heat 27, and served the same way by the
//! simulator):
//! - `caldera-cluster=<cluster>` on the cluster stack and on every node-group stack,
//! - `caldera-role=cluster` / `caldera-role=nodegroup`,
//! - `caldera-nodegroup=<name>` on node-group stacks,
//! - optional `caldera-min=<n>` / `caldera-max=<n>`: the node group's size limits.
//!
//! Scaling is one `PATCH` of the node-group stack setting `count` and, to remove chosen
//! members, `removal_policies: [{resource_list: [names]}]`. Heat keeps the names of removed
//! members on a blacklist and never reuses them, and the members after an update are always
//! the first `count` names (0, 1, 2, ...) that are not blacklisted; the plan computes
//! exactly that, so the plan's added/removed lists are what Heat will do.

use super::{
    member_order, refused, Driver, Limits, NodeGroupSpec, NodeGroupTarget, ScalePlan, ScaleRequest,
    UpgradePlan, UpgradeTarget,
};
use crate::api::heat::{
    HeatClient, ResourceQuery, StackCreate, StackDetail, StackListQuery, StackUpdate,
};
use crate::drivers::rollout_plan::{RolloutOptions, RolloutPlan};
use crate::fetch::fan_out;
use crate::journal::ApiCall;
use crate::model::{Cluster, DriverKind, Health, Node, NodeKey, StackRef, Status};
use crate::report::{ErrorKind, ServiceError, ServiceResult};
use crate::templates::{self, Machines};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

pub const TAG_CLUSTER: &str = "caldera-cluster=";
pub const TAG_NODEGROUP: &str = "caldera-nodegroup=";
pub const TAG_ROLE: &str = "caldera-role=";
pub const TAG_MIN: &str = "caldera-min=";
pub const TAG_MAX: &str = "caldera-max=";
pub const ROLE_CLUSTER: &str = "caldera-role=cluster";
pub const ROLE_NODEGROUP: &str = "caldera-role=nodegroup";

pub use super::layout::{stack_path, update_body_text, GROUP_RESOURCE};

/// Node groups described at once when listing clusters (the request budget still applies).
const LIST_CONCURRENCY: usize = 8;

#[derive(Clone)]
pub struct HeatNativeDriver {
    heat: HeatClient,
    machines: Machines,
}

fn err(e: crate::api::ApiError) -> ServiceError {
    ServiceError::from(e)
}

fn tag_value<'a>(tags: &'a [String], prefix: &str) -> Option<&'a str> {
    tags.iter().find_map(|t| t.strip_prefix(prefix))
}

/// Tag values may not hold commas (the list filter splits on them) and Heat stack names are
/// `[a-zA-Z][a-zA-Z0-9_.-]*`; cluster and node-group names follow the stack-name rule.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// Names removed earlier, from the node-group stack's `removal_policies` parameter.
pub fn removal_list(parameters: &BTreeMap<String, String>) -> Vec<String> {
    #[derive(Deserialize)]
    struct Policy {
        #[serde(default)]
        resource_list: Vec<NameOrNumber>,
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NameOrNumber {
        Name(String),
        Number(u64),
    }
    let raw = parameters
        .get("removal_policies")
        .map(String::as_str)
        .unwrap_or("[]");
    let policies: Vec<Policy> = serde_json::from_str(raw).unwrap_or_default();
    let mut out: Vec<String> = policies
        .into_iter()
        .flat_map(|p| p.resource_list)
        .map(|n| match n {
            NameOrNumber::Name(s) => s,
            NameOrNumber::Number(n) => n.to_string(),
        })
        .collect();
    out.sort_by(|a, b| member_order(a, b));
    out.dedup();
    out
}

/// The members a ResourceGroup of `count` has with this blacklist: the first `count` names
/// `0, 1, 2, ...` not on it (Heat's `_resource_names`).
pub fn group_names(count: u32, blacklist: &BTreeSet<String>) -> Vec<String> {
    (0u64..)
        .map(|i| i.to_string())
        .filter(|n| !blacklist.contains(n))
        .take(count as usize)
        .collect()
}

/// Works out a Heat-native scale from the current members and removal list.
pub fn plan_scale_pure(
    target: &NodeGroupTarget,
    stack: &StackRef,
    current: &[String],
    previous_removals: &[String],
    request: &ScaleRequest,
) -> ServiceResult<ScalePlan> {
    let current_set: BTreeSet<&str> = current.iter().map(String::as_str).collect();
    for name in &request.remove {
        if !current_set.contains(name.as_str()) {
            return Err(ServiceError::new(
                ErrorKind::NotFound,
                format!(
                    "{} has no member '{name}' (members: {})",
                    target.label(),
                    current.join(", ")
                ),
            ));
        }
    }
    let remove: BTreeSet<String> = request.remove.iter().cloned().collect();
    let from = current.len() as u32;
    let to = request
        .count
        .unwrap_or_else(|| from.saturating_sub(remove.len() as u32));
    target.limits.check(to)?;
    let mut blacklist: BTreeSet<String> = previous_removals.iter().cloned().collect();
    blacklist.extend(remove.iter().cloned());
    let after = group_names(to, &blacklist);
    let after_set: BTreeSet<&str> = after.iter().map(String::as_str).collect();
    let mut added: Vec<String> = after
        .iter()
        .filter(|n| !current_set.contains(n.as_str()))
        .cloned()
        .collect();
    let mut removed: Vec<String> = current
        .iter()
        .filter(|n| !after_set.contains(n.as_str()))
        .cloned()
        .collect();
    added.sort_by(|a, b| member_order(a, b));
    removed.sort_by(|a, b| member_order(a, b));
    let mut removal: Vec<String> = blacklist.into_iter().collect();
    removal.sort_by(|a, b| member_order(a, b));
    let update = scale_update(to, &removal);
    let body = update_body_text(&update);
    Ok(ScalePlan {
        target: target.clone(),
        from,
        to,
        members_after: after,
        added,
        removed,
        removal_list: removal,
        calls: vec![ApiCall::new("PATCH", stack_path(stack), body)],
        stack_group: None,
    })
}

/// No hooks on the members: a scale must not stop on breakpoints a finished rollout left in
/// the stack's environment (PATCH merges environments, so they would still be there).
pub fn no_hooks_environment() -> serde_json::Value {
    serde_json::json!({"resource_registry": {"resources": {GROUP_RESOURCE: {"*": {"hooks": []}}}}})
}

fn scale_update(count: u32, removal: &[String]) -> StackUpdate {
    let mut parameters = BTreeMap::new();
    parameters.insert("count".to_string(), serde_json::json!(count));
    if !removal.is_empty() {
        parameters.insert(
            "removal_policies".to_string(),
            serde_json::json!([{ "resource_list": removal }]),
        );
    }
    StackUpdate {
        parameters,
        environment: Some(no_hooks_environment()),
        existing: true,
        ..Default::default()
    }
}

fn limits_from_tags(tags: &[String]) -> Limits {
    Limits {
        min: tag_value(tags, TAG_MIN)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        max: tag_value(tags, TAG_MAX).and_then(|v| v.parse().ok()),
    }
}

impl HeatNativeDriver {
    pub fn new(heat: HeatClient, machines: Machines) -> HeatNativeDriver {
        HeatNativeDriver { heat, machines }
    }

    pub fn heat(&self) -> &HeatClient {
        &self.heat
    }

    async fn tagged(&self, tags: Vec<String>) -> ServiceResult<Vec<StackRef>> {
        let query = StackListQuery {
            tags,
            ..Default::default()
        };
        let stacks: Vec<_> = self
            .heat
            .list_stacks(query)
            .try_collect()
            .await
            .map_err(err)?;
        Ok(stacks.into_iter().map(|s| s.stack).collect())
    }

    async fn target_of(&self, stack: StackRef) -> ServiceResult<NodeGroupTarget> {
        Ok(self.describe(stack).await?.0)
    }

    /// A node-group stack as a target, with the stack's detail (status, parameters such as
    /// `count` and `image`) from the same request.
    pub async fn describe(&self, stack: StackRef) -> ServiceResult<(NodeGroupTarget, StackDetail)> {
        let detail = self.heat.get_stack(&stack, false).await.map_err(err)?;
        let tags = &detail.tags;
        let (Some(cluster), Some(nodegroup)) =
            (tag_value(tags, TAG_CLUSTER), tag_value(tags, TAG_NODEGROUP))
        else {
            return Err(ServiceError::new(
                ErrorKind::NotFound,
                format!("stack {} is not a caldera node group (no tags)", stack.name),
            ));
        };
        let target = NodeGroupTarget {
            cluster: cluster.to_string(),
            nodegroup: nodegroup.to_string(),
            driver: DriverKind::HeatNative,
            limits: limits_from_tags(tags),
            stack: Some(stack),
            cluster_id: None,
        };
        Ok((target, detail))
    }

    /// The node groups of `cluster` with their stacks' details, by node-group name.
    pub async fn describe_nodegroups(
        &self,
        cluster: &str,
    ) -> ServiceResult<Vec<(NodeGroupTarget, StackDetail)>> {
        let stacks = self
            .tagged(vec![
                format!("{TAG_CLUSTER}{cluster}"),
                ROLE_NODEGROUP.to_string(),
            ])
            .await?;
        let mut out = Vec::new();
        for s in stacks {
            out.push(self.describe(s).await?);
        }
        out.sort_by(|a, b| a.0.nodegroup.cmp(&b.0.nodegroup));
        Ok(out)
    }

    /// Every Heat-native cluster, from the node-group stacks' tags.
    pub async fn list_clusters(&self) -> ServiceResult<Vec<Cluster>> {
        self.clusters_of(vec![ROLE_NODEGROUP.to_string()]).await
    }

    /// One cluster as [`HeatNativeDriver::list_clusters`] shows it, from its own node-group
    /// stacks alone (tagged with its name), not every cluster's.
    pub async fn cluster(&self, cluster: &str) -> ServiceResult<Cluster> {
        let tags = vec![
            format!("{TAG_CLUSTER}{cluster}"),
            ROLE_NODEGROUP.to_string(),
        ];
        self.clusters_of(tags)
            .await?
            .into_iter()
            .find(|c| c.id == cluster)
            .ok_or_else(|| {
                ServiceError::new(
                    ErrorKind::NotFound,
                    format!("cluster {cluster} has no node group stacks"),
                )
            })
    }

    /// The clusters the node-group stacks carrying every tag of `tags` make up.
    async fn clusters_of(&self, tags: Vec<String>) -> ServiceResult<Vec<Cluster>> {
        let stacks: Vec<_> = self
            .heat
            .list_stacks(StackListQuery {
                tags,
                ..Default::default()
            })
            .try_collect()
            .await
            .map_err(err)?;
        // Each node group costs three requests in a row (stack, group resource, members); the
        // groups go side by side so many of them list in about the time of one. The results
        // are folded in listing order, so the outcome is the one a sequential walk gives.
        let refs: Vec<(usize, StackRef)> =
            stacks.iter().map(|s| s.stack.clone()).enumerate().collect();
        let mut described: Vec<(usize, ServiceResult<(NodeGroupTarget, usize)>)> =
            fan_out(refs, LIST_CONCURRENCY, |(_, stack)| async move {
                let target = self.target_of(stack).await?;
                let members = self.list_nodes(&target).await.map(|n| n.len()).unwrap_or(0);
                Ok((target, members))
            })
            .map(|((i, _), result)| (i, result))
            .collect()
            .await;
        described.sort_by_key(|(i, _)| *i);
        let mut clusters: BTreeMap<String, Cluster> = BTreeMap::new();
        for (s, (_, described)) in stacks.into_iter().zip(described) {
            let (target, members) = match described {
                Ok(found) => found,
                Err(e) if e.kind == ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let c = clusters
                .entry(target.cluster.clone())
                .or_insert_with(|| Cluster {
                    id: target.cluster.clone(),
                    name: target.cluster.clone(),
                    driver: DriverKind::HeatNative,
                    status: s.status.clone(),
                    status_reason: s.status_reason.clone(),
                    health: Health::Unknown,
                    health_reason: None,
                    master_count: 0,
                    node_count: 0,
                    nodegroup_count: Some(0),
                    template_id: None,
                    coe_version: None,
                    api_address: None,
                    stack_id: None,
                    created_at: s.created_at,
                    updated_at: s.updated_at,
                    capi: None,
                });
            c.node_count += members as u32;
            c.nodegroup_count = Some(c.nodegroup_count.unwrap_or(0) + 1);
            // The cluster shows its worst node group's status.
            if s.status.is_failed() || (s.status.is_in_progress() && !c.status.is_failed()) {
                c.status = s.status.clone();
                c.status_reason = s.status_reason.clone();
            }
        }
        Ok(clusters.into_values().collect())
    }

    /// Creates the cluster stack (`cluster.yaml`).
    pub async fn create_cluster(&self, cluster: &str) -> ServiceResult<StackRef> {
        if !valid_name(cluster) {
            return Err(refused(format!("'{cluster}' is not a valid cluster name")));
        }
        let mut parameters = BTreeMap::new();
        parameters.insert("cluster_name".into(), serde_json::json!(cluster));
        let create = StackCreate {
            name: format!("{cluster}-cluster"),
            template: templates::yaml_to_json("cluster.yaml", templates::CLUSTER)
                .map_err(|e| ServiceError::new(ErrorKind::Config, e))?,
            parameters,
            tags: vec![format!("{TAG_CLUSTER}{cluster}"), ROLE_CLUSTER.to_string()],
            ..Default::default()
        };
        self.heat.create_stack(&create).await.map_err(err)
    }

    /// The cluster stack, if the cluster has one.
    pub async fn cluster_stack(&self, cluster: &str) -> ServiceResult<Option<StackRef>> {
        Ok(self
            .tagged(vec![
                format!("{TAG_CLUSTER}{cluster}"),
                ROLE_CLUSTER.to_string(),
            ])
            .await?
            .into_iter()
            .next())
    }

    /// The ResourceGroup's nested stack (the stack that owns the members).
    pub async fn group_stack(&self, nodegroup_stack: &StackRef) -> ServiceResult<StackRef> {
        group_stack_of(&self.heat, nodegroup_stack, GROUP_RESOURCE).await
    }

    fn stack_of(target: &NodeGroupTarget) -> ServiceResult<&StackRef> {
        target.stack.as_ref().ok_or_else(|| {
            ServiceError::new(
                ErrorKind::NotFound,
                format!("{} has no node-group stack", target.label()),
            )
        })
    }
}

/// The members of one of caldera's own node groups (the `nodes` group of its stack), as
/// nodes in member order. Needs only Heat, not a driver (no machines are built).
pub async fn member_nodes(heat: &HeatClient, target: &NodeGroupTarget) -> ServiceResult<Vec<Node>> {
    let stack = HeatNativeDriver::stack_of(target)?;
    let group = group_stack_of(heat, stack, GROUP_RESOURCE).await?;
    let resources = heat
        .list_resources(&group, &ResourceQuery::default())
        .await
        .map_err(err)?;
    let mut nodes: Vec<Node> = resources
        .iter()
        .map(|r| node_from_resource(target, &r.resource))
        .collect();
    nodes.sort_by(|a, b| member_order(&a.name, &b.name));
    Ok(nodes)
}

/// A member resource of the group's nested stack, as a node.
pub fn node_from_resource(target: &NodeGroupTarget, r: &crate::model::StackResource) -> Node {
    Node {
        key: NodeKey {
            nodegroup: target.nodegroup.clone(),
            member: r.name.clone(),
        },
        index: r.name.parse().ok(),
        name: r.name.clone(),
        zone: None,
        ip: None,
        status: r.status.clone(),
        status_reason: r.status_reason.clone(),
        image: None,
        since: r.updated_at,
        hook_paused: false,
        hook_inferred: false,
        held_by_rollout: None,
        server_id: None,
        created: None,
        stack_id: r.nested.as_ref().map(|s| s.id.clone()),
        replacing: false,
    }
}

impl Driver for HeatNativeDriver {
    fn kind(&self) -> DriverKind {
        DriverKind::HeatNative
    }

    fn find_nodegroup<'a>(
        &'a self,
        cluster: &'a str,
        nodegroup: &'a str,
    ) -> BoxFuture<'a, ServiceResult<NodeGroupTarget>> {
        async move {
            let found = self
                .tagged(vec![
                    format!("{TAG_CLUSTER}{cluster}"),
                    format!("{TAG_NODEGROUP}{nodegroup}"),
                    ROLE_NODEGROUP.to_string(),
                ])
                .await?;
            match found.as_slice() {
                [one] => self.target_of(one.clone()).await,
                [] => Err(ServiceError::new(
                    ErrorKind::NotFound,
                    format!("no Heat-native node group {cluster}/{nodegroup}"),
                )),
                many => Err(ServiceError::new(
                    ErrorKind::Config,
                    format!(
                        "{} stacks claim to be {cluster}/{nodegroup}: {}",
                        many.len(),
                        many.iter()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
            }
        }
        .boxed()
    }

    fn list_nodegroups<'a>(
        &'a self,
        cluster: &'a str,
    ) -> BoxFuture<'a, ServiceResult<Vec<NodeGroupTarget>>> {
        async move {
            Ok(self
                .describe_nodegroups(cluster)
                .await?
                .into_iter()
                .map(|(t, _)| t)
                .collect())
        }
        .boxed()
    }

    fn list_nodes<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
    ) -> BoxFuture<'a, ServiceResult<Vec<Node>>> {
        member_nodes(&self.heat, target).boxed()
    }

    fn plan_scale<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
        request: &'a ScaleRequest,
    ) -> BoxFuture<'a, ServiceResult<ScalePlan>> {
        async move {
            let stack = Self::stack_of(target)?;
            let detail = self.heat.get_stack(stack, false).await.map_err(err)?;
            if detail.summary.status.is_in_progress() {
                return Err(refused(format!(
                    "{} is {}: wait for it to settle before scaling",
                    target.label(),
                    detail.summary.status
                )));
            }
            let nodes = self.list_nodes(target).await?;
            let current: Vec<String> = nodes.into_iter().map(|n| n.name).collect();
            let previous = removal_list(&detail.parameters);
            plan_scale_pure(target, stack, &current, &previous, request)
        }
        .boxed()
    }

    fn apply_scale<'a>(&'a self, plan: &'a ScalePlan) -> BoxFuture<'a, ServiceResult<()>> {
        async move {
            let stack = Self::stack_of(&plan.target)?;
            let update = scale_update(plan.to, &plan.removal_list);
            self.heat.update_stack(stack, &update).await.map_err(err)
        }
        .boxed()
    }

    fn create_nodegroup<'a>(
        &'a self,
        spec: &'a NodeGroupSpec,
    ) -> BoxFuture<'a, ServiceResult<NodeGroupTarget>> {
        async move {
            for n in [&spec.cluster, &spec.nodegroup] {
                if !valid_name(n) {
                    return Err(refused(format!("'{n}' is not a valid name")));
                }
            }
            spec.limits.check(spec.count)?;
            let mut parameters = BTreeMap::new();
            parameters.insert("count".into(), serde_json::json!(spec.count));
            parameters.insert("image".into(), serde_json::json!(spec.image));
            parameters.insert(
                "name_prefix".into(),
                serde_json::json!(format!("{}-{}", spec.cluster, spec.nodegroup)),
            );
            if spec.action_wait_secs > 0 {
                parameters.insert(
                    "action_wait_secs".into(),
                    serde_json::json!(spec.action_wait_secs),
                );
            }
            let name = format!("{}-{}", spec.cluster, spec.nodegroup);
            let mut create = templates::nodegroup_stack(&name, self.machines, parameters)
                .map_err(|e| ServiceError::new(ErrorKind::Config, e))?;
            let mut tags = vec![
                format!("{TAG_CLUSTER}{}", spec.cluster),
                format!("{TAG_NODEGROUP}{}", spec.nodegroup),
                ROLE_NODEGROUP.to_string(),
            ];
            if spec.limits.min > 0 {
                tags.push(format!("{TAG_MIN}{}", spec.limits.min));
            }
            if let Some(max) = spec.limits.max {
                tags.push(format!("{TAG_MAX}{max}"));
            }
            create.tags = tags;
            let stack = self.heat.create_stack(&create).await.map_err(err)?;
            Ok(NodeGroupTarget {
                cluster: spec.cluster.clone(),
                nodegroup: spec.nodegroup.clone(),
                driver: DriverKind::HeatNative,
                stack: Some(stack),
                cluster_id: None,
                limits: spec.limits,
            })
        }
        .boxed()
    }

    fn delete_nodegroup<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
    ) -> BoxFuture<'a, ServiceResult<()>> {
        async move {
            let stack = Self::stack_of(target)?;
            self.heat.delete_stack(stack).await.map_err(err)
        }
        .boxed()
    }

    fn plan_upgrade<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
        to: &'a UpgradeTarget,
        options: &'a RolloutOptions,
    ) -> BoxFuture<'a, ServiceResult<UpgradePlan>> {
        async move {
            let UpgradeTarget::Image(image) = to else {
                return Err(super::unsupported(
                    "Heat-native node groups are upgraded to an image (--image)",
                ));
            };
            let stack = Self::stack_of(target)?;
            let detail = self.heat.get_stack(stack, false).await.map_err(err)?;
            if detail.summary.status.is_in_progress() {
                return Err(refused(format!(
                    "{} is {}: wait for it to settle (or reattach to its rollout)",
                    target.label(),
                    detail.summary.status
                )));
            }
            let names: Vec<String> = self
                .list_nodes(target)
                .await?
                .into_iter()
                .map(|n| n.name)
                .collect();
            Ok(UpgradePlan::Rollout(Box::new(RolloutPlan::new(
                target.clone(),
                stack.clone(),
                image,
                detail.parameters.get("image").cloned(),
                &names,
                options.clone(),
                BTreeMap::new(),
            ))))
        }
        .boxed()
    }
}

/// The nested stack of the group resource `group` of `stack` (the stack that owns the
/// members): caldera's `nodes`, or any operator's group (`kube_minions`).
pub async fn group_stack_of(
    heat: &HeatClient,
    stack: &StackRef,
    group: &str,
) -> ServiceResult<StackRef> {
    // A resource path (`roles/Compute`): each step is a resource of the previous one's
    // nested stack.
    let mut current = stack.clone();
    for step in group.split('/').filter(|s| !s.is_empty()) {
        let res = heat.get_resource(&current, step).await.map_err(err)?;
        current = res.resource.nested.ok_or_else(|| {
            ServiceError::new(
                ErrorKind::NotFound,
                format!(
                    "resource '{step}' of {} has no nested stack yet",
                    current.name
                ),
            )
        })?;
    }
    Ok(current)
}

/// The status of a node group's stack, for waiting on an action.
pub async fn stack_status(heat: &HeatClient, stack: &StackRef) -> ServiceResult<(Status, String)> {
    let d = heat.get_stack(stack, false).await.map_err(err)?;
    Ok((
        d.summary.status,
        d.summary.status_reason.unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(limits: Limits) -> NodeGroupTarget {
        NodeGroupTarget {
            cluster: "c".into(),
            nodegroup: "w".into(),
            driver: DriverKind::HeatNative,
            stack: None,
            cluster_id: None,
            limits,
        }
    }

    fn names(r: std::ops::Range<u32>) -> Vec<String> {
        r.map(|i| i.to_string()).collect()
    }

    #[test]
    fn scale_up_then_down_removing_named_members() {
        let s = StackRef {
            name: "c-w".into(),
            id: "id".into(),
        };
        let t = target(Limits::default());
        let up = plan_scale_pure(
            &t,
            &s,
            &names(0..10),
            &[],
            &ScaleRequest {
                count: Some(14),
                remove: vec![],
            },
        )
        .unwrap();
        assert_eq!(up.added, names(10..14));
        assert!(up.removed.is_empty());
        let down = plan_scale_pure(
            &t,
            &s,
            &names(0..14),
            &[],
            &ScaleRequest {
                count: Some(12),
                remove: vec!["3".into(), "7".into()],
            },
        )
        .unwrap();
        assert_eq!(down.removed, vec!["3", "7"]);
        assert!(down.added.is_empty(), "{:?}", down.added);
        assert_eq!(down.members_after.len(), 12);
        assert!(down.calls[0]
            .body
            .contains("\"resource_list\":[\"3\",\"7\"]"));
        // Growing again never reuses 3 or 7.
        let again = plan_scale_pure(
            &t,
            &s,
            &down.members_after,
            &down.removal_list,
            &ScaleRequest {
                count: Some(13),
                remove: vec![],
            },
        )
        .unwrap();
        assert_eq!(again.added, vec!["14"]);
        // Shrinking without names removes the highest members.
        let shrink = plan_scale_pure(
            &t,
            &s,
            &names(0..5),
            &[],
            &ScaleRequest {
                count: Some(3),
                remove: vec![],
            },
        )
        .unwrap();
        assert_eq!(shrink.removed, vec!["3", "4"]);
    }

    #[test]
    fn limits_and_unknown_members_refused() {
        let s = StackRef {
            name: "c-w".into(),
            id: "id".into(),
        };
        let t = target(Limits {
            min: 2,
            max: Some(5),
        });
        let e = plan_scale_pure(
            &t,
            &s,
            &names(0..3),
            &[],
            &ScaleRequest {
                count: Some(6),
                remove: vec![],
            },
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused);
        assert!(e.message.contains("maximum of 5"), "{e}");
        let e = plan_scale_pure(
            &t,
            &s,
            &names(0..3),
            &[],
            &ScaleRequest {
                count: None,
                remove: vec!["0".into(), "1".into()],
            },
        )
        .unwrap_err();
        assert!(e.message.contains("minimum of 2"), "{e}");
        let e = plan_scale_pure(
            &t,
            &s,
            &names(0..3),
            &[],
            &ScaleRequest {
                count: None,
                remove: vec!["9".into()],
            },
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound);
    }

    #[test]
    fn removal_list_parses_heat_parameter_text() {
        let mut p = BTreeMap::new();
        p.insert(
            "removal_policies".to_string(),
            r#"[{"resource_list": ["7", 3]}]"#.to_string(),
        );
        assert_eq!(removal_list(&p), vec!["3", "7"]);
        assert!(removal_list(&BTreeMap::new()).is_empty());
        assert!(valid_name("prod-a.1"));
        assert!(!valid_name("1abc"));
        assert!(!valid_name("a,b"));
    }
}
