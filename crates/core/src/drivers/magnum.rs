//! The Magnum driver: node groups of Magnum clusters, changed through Magnum's own actions
//! (`resize` with `nodes_to_remove`, `upgrade` with `max_batch_size`). Magnum decides which
//! members go and how batches run; caldera plans, records and follows.
//!
//! Microversions: resize needs container-infra 1.7, upgrade 1.8, naming a node group 1.9.
//! When the cloud's Magnum is older the plan says so and nothing is sent.

use super::{
    member_order, refused, unsupported, Driver, Limits, NodeGroupSpec, NodeGroupTarget, ScalePlan,
    ScaleRequest, UpgradePlan, UpgradeTarget,
};
use crate::api::heat::{HeatClient, ResourceQuery};
use crate::api::magnum::magnum_client::{
    Microversion, ResizeRequest, UpgradeRequest, NODEGROUPS, RESIZE, UPGRADE,
};
use crate::api::magnum::MagnumClient;
use crate::api::nova::NovaClient;
use crate::journal::ApiCall;
use crate::model::{CapiCluster, CapiDriver};
use crate::model::{DriverKind, Node, NodeKey, Role, StackRef, StackResource};
use crate::ops::capi_nodes;
use crate::report::{ErrorKind, ServiceError, ServiceResult};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Clone)]
pub struct MagnumDriver {
    magnum: MagnumClient,
    /// To list members of the node group's stack, where Magnum runs on Heat.
    heat: Option<HeatClient>,
    /// To list the nodes of clusters run by Cluster API drivers (Nova servers).
    nova: Option<NovaClient>,
}

fn err(e: crate::api::ApiError) -> ServiceError {
    ServiceError::from(e)
}

/// A Magnum upgrade, spelled out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MagnumUpgradePlan {
    pub target: NodeGroupTarget,
    pub cluster_template: String,
    pub max_batch_size: u32,
    pub calls: Vec<ApiCall>,
    /// The Cluster API driver that runs the cluster, when one does: it upgrades the whole
    /// cluster its own way, whatever node group and batch size the request names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capi: Option<CapiDriver>,
}

impl MagnumUpgradePlan {
    pub fn lines(&self) -> Vec<String> {
        let how = match self.capi {
            // Both drivers' upgrade_cluster take the new template for the whole cluster and
            // hand the roll to Cluster API (magnum-cluster-api: the ClusterClass topology's
            // version and image; magnum-capi-helm: a Helm upgrade of the release), with
            // their own surge settings: the request's nodegroup and max_batch_size are not
            // read (see the README's Cluster API section).
            Some(driver) => format!(
                "{}: the whole cluster, every node group replaced node by node by Cluster \
                 API; node group {} and batch size {} are ignored by this driver",
                driver.as_str(),
                self.target.nodegroup,
                self.max_batch_size
            ),
            None => format!(
                "{} node(s) at a time, batches run by Magnum",
                self.max_batch_size
            ),
        };
        let mut out = vec![
            format!(
                "upgrade {} to cluster template {} ({how})",
                self.target.label(),
                self.cluster_template,
            ),
            "  API calls:".into(),
        ];
        out.extend(self.calls.iter().map(|c| format!("    {c}")));
        out
    }
}

fn needs(v: Microversion, needed: Microversion, what: &str) -> ServiceResult<()> {
    if v < needed {
        return Err(unsupported(format!(
            "{what} needs Magnum container-infra {needed}; this cloud's Magnum serves up to {v}"
        )));
    }
    Ok(())
}

/// Scaling groups Heat can hold a node group's members in.
fn is_scaling_group(r: &StackResource) -> bool {
    matches!(
        r.resource_type.as_str(),
        "OS::Heat::ResourceGroup" | "OS::Heat::AutoScalingGroup"
    )
}

/// The ResourceGroup Magnum's Heat driver keeps a node group of `role` in. Its default
/// master and worker node groups share one cluster stack (`kubecluster.yaml` with
/// `is_cluster_stack`), masters in `kube_masters` and workers in `kube_minions`; a node group
/// added later has a stack of its own from the same template holding only the group of its
/// role (`master_only` / `worker_only` conditions). Magnum's template definitions name these
/// resources and their outputs (`kube_masters_private`, `kube_minions_private`) by role.
pub fn group_resource(role: Role) -> &'static str {
    match role {
        Role::Master => "kube_masters",
        Role::Worker | Role::Other => "kube_minions",
    }
}

/// The stack parameter holding the image of a node group of `role` in Magnum's templates
/// (`master_image` / `minion_image`, from the node group's `image_id`).
pub fn image_parameter(role: Role) -> &'static str {
    match role {
        Role::Master => "master_image",
        Role::Worker | Role::Other => "minion_image",
    }
}

/// Picks a node group's scaling group out of its stack's top-level resources: the only one
/// when there is one, else the one Magnum keeps the role in. `Ok(None)` when the stack has
/// no scaling group.
pub fn pick_group<'a>(
    top: &'a [StackResource],
    role: Role,
    nodegroup: &str,
) -> ServiceResult<Option<&'a StackResource>> {
    let groups: Vec<&StackResource> = top.iter().filter(|r| is_scaling_group(r)).collect();
    match groups.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        several => {
            let wanted = group_resource(role);
            match several.iter().find(|r| r.name == wanted) {
                Some(r) => Ok(Some(r)),
                None => Err(ServiceError::new(
                    ErrorKind::NotFound,
                    format!(
                        "node group {nodegroup} ({}) has no group {wanted} in its stack; \
                         the stack's scaling groups are {}",
                        role.as_str(),
                        several
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
            }
        }
    }
}

/// The role a node group named `nodegroup` has in a stack of Magnum's templates, from the
/// parameters Magnum gave it (`master_nodegroup_name` / `worker_nodegroup_name`).
pub fn role_in_stack(
    parameters: &std::collections::BTreeMap<String, String>,
    nodegroup: &str,
) -> Option<Role> {
    let named = |k: &str| parameters.get(k).is_some_and(|v| v == nodegroup);
    if named("master_nodegroup_name") {
        Some(Role::Master)
    } else if named("worker_nodegroup_name") {
        Some(Role::Worker)
    } else {
        None
    }
}

/// The image parameter of a node group named `nodegroup` in a stack of Magnum's templates.
pub fn image_in_stack(
    parameters: &std::collections::BTreeMap<String, String>,
    nodegroup: &str,
) -> Option<String> {
    let role = role_in_stack(parameters, nodegroup)?;
    parameters
        .get(image_parameter(role))
        .filter(|v| !v.is_empty())
        .cloned()
}

/// Where a Magnum node group's members are in its stack: the resource name (path) of its
/// scaling group and that group's nested stack, when the stack holds several groups
/// (Magnum's cluster stack); `None` when it holds at most one (any lister of the stack finds
/// its members).
pub async fn group_in_stack(
    heat: &HeatClient,
    stack: &StackRef,
    role: Role,
    nodegroup: &str,
) -> ServiceResult<Option<(String, StackRef)>> {
    let top: Vec<StackResource> = heat
        .list_resources(stack, &ResourceQuery::default())
        .await
        .map_err(err)?
        .into_iter()
        .map(|r| r.resource)
        .collect();
    if top.iter().filter(|r| is_scaling_group(r)).count() < 2 {
        return Ok(None);
    }
    let group = pick_group(&top, role, nodegroup)?;
    Ok(group.and_then(|g| Some((g.name.clone(), g.nested.clone()?))))
}

/// The stack whose resources are a Magnum node group's members: its group's nested stack
/// when its stack holds several groups, `None` when the stack itself lists them.
pub async fn members_stack(
    heat: &HeatClient,
    stack: &StackRef,
    role: Role,
    nodegroup: &str,
) -> ServiceResult<Option<StackRef>> {
    Ok(group_in_stack(heat, stack, role, nodegroup)
        .await?
        .map(|(_, nested)| nested))
}

/// `nodes_to_remove` as the Cluster API driver reads it, from the nodes the operator chose
/// (server names or ids) among the node group's Nova servers.
///
/// - vexxhost `magnum-cluster-api` (`driver.py` `resize_cluster`) marks for deletion the
///   node group's Machines whose `providerID` ends in one of the given ids: Nova server
///   UUIDs. Names are translated; a node that is not the group's is refused (the driver would
///   silently ignore it, and the count alone would pick another node).
/// - `magnum-capi-helm` (`driver.py` `resize_cluster`) ignores the list ("Removing specific
///   nodes is not currently supported"): refused, saying so, rather than sent and ignored.
pub fn capi_nodes_to_remove(
    capi: &CapiCluster,
    nodegroup: &str,
    role: Role,
    servers: &[crate::api::nova::ServerInfo],
    wanted: &[String],
) -> ServiceResult<Vec<String>> {
    match capi.driver {
        CapiDriver::CapiHelm => {
            return Err(unsupported(format!(
                "magnum-capi-helm ignores nodes_to_remove (its resize_cluster only logs \
                 \"Removing specific nodes is not currently supported\"): Cluster API would \
                 pick the nodes to remove; resize {nodegroup} by count instead"
            )))
        }
        CapiDriver::Unknown => {
            return Err(unsupported(format!(
                "cluster {} runs on a Cluster API driver caldera cannot tell: whether it \
                 honours nodes_to_remove is unknown; resize {nodegroup} by count instead",
                capi.name
            )))
        }
        CapiDriver::MagnumClusterApi => {}
    }
    let ours: Vec<&crate::api::nova::ServerInfo> = servers
        .iter()
        .filter(|s| capi_nodes::is_member(capi, nodegroup, role, &s.name))
        .collect();
    let mut ids = Vec::new();
    let mut unknown = Vec::new();
    for w in wanted {
        match ours.iter().find(|s| s.id == *w || s.name == *w) {
            Some(s) if !ids.contains(&s.id) => ids.push(s.id.clone()),
            Some(_) => {}
            None => unknown.push(w.clone()),
        }
    }
    if !unknown.is_empty() {
        return Err(refused(format!(
            "not a node of {nodegroup}: {} (magnum-cluster-api removes nodes by Nova server \
             id and would ignore these)",
            unknown.join(", ")
        )));
    }
    Ok(ids)
}

impl MagnumDriver {
    pub fn new(magnum: MagnumClient, heat: Option<HeatClient>) -> MagnumDriver {
        MagnumDriver {
            magnum,
            heat,
            nova: None,
        }
    }

    /// Nova, for the nodes of clusters without a Heat stack (Cluster API drivers).
    pub fn with_nova(mut self, nova: Option<NovaClient>) -> MagnumDriver {
        self.nova = nova;
        self
    }

    /// The cluster's Cluster API identity, when a Cluster API driver runs it.
    async fn capi_of(&self, cluster_id: &str) -> ServiceResult<Option<CapiCluster>> {
        let mut c = self.magnum.get_cluster(cluster_id).await.map_err(err)?;
        self.magnum.refine_backend(&mut c).await;
        Ok(c.capi)
    }

    /// The nodes of a Cluster API cluster's node group, from Nova.
    async fn capi_nodes(
        &self,
        capi: &CapiCluster,
        target: &NodeGroupTarget,
    ) -> ServiceResult<Vec<Node>> {
        let Some(nova) = &self.nova else {
            return Err(unsupported(format!(
                "{} runs on Cluster API ({}): its nodes are Nova servers, and this cloud \
                 has no Nova endpoint",
                target.label(),
                capi.driver.as_str()
            )));
        };
        let id = Self::cluster_id(target)?;
        let ng = self
            .magnum
            .get_nodegroup(id, &target.nodegroup)
            .await
            .map_err(err)?;
        let servers = capi_nodes::cluster_servers(nova, capi).await.map_err(err)?;
        Ok(capi_nodes::nodegroup_nodes(
            capi,
            &target.nodegroup,
            &ng.name,
            ng.role,
            &servers,
        ))
    }

    fn cluster_id(target: &NodeGroupTarget) -> ServiceResult<&str> {
        target
            .cluster_id
            .as_deref()
            .ok_or_else(|| ServiceError::new(ErrorKind::NotFound, "no Magnum cluster id"))
    }

    /// The cluster, when neither it nor the node group `ng` is being updated. An upgrade,
    /// a resize or a caldera rollout of the cluster's stack under way (the node group's or
    /// the cluster's update in progress): `doing` now would race it, as for a Heat-native
    /// group. A create is not: a Cluster API cluster that cannot be built stays
    /// CREATE_IN_PROGRESS for good, and a resize may be how it is mended.
    async fn settled(
        &self,
        target: &NodeGroupTarget,
        id: &str,
        ng: &crate::model::NodeGroup,
        doing: &str,
    ) -> ServiceResult<crate::model::Cluster> {
        let updating = |s: &crate::model::Status| s.is_in_progress() && s.action == "UPDATE";
        if updating(&ng.status) {
            return Err(refused(format!(
                "{} is {}: wait for it to settle before {doing} (`caldera rollout status {}` \
                 says what runs)",
                target.label(),
                ng.status,
                target.label()
            )));
        }
        let cluster = self.magnum.get_cluster(id).await.map_err(err)?;
        if updating(&cluster.status) {
            return Err(refused(format!(
                "cluster {} is {}: wait for it to settle before {doing} {} (`caldera rollout \
                 status {}` says what runs)",
                cluster.name,
                cluster.status,
                target.nodegroup,
                target.label()
            )));
        }
        Ok(cluster)
    }

    pub async fn plan_upgrade(
        &self,
        target: &NodeGroupTarget,
        cluster_template: &str,
        max_batch_size: u32,
    ) -> ServiceResult<MagnumUpgradePlan> {
        let v = self.magnum.version().await.map_err(err)?;
        needs(v, UPGRADE, "upgrading a cluster")?;
        needs(v, NODEGROUPS, "upgrading one node group")?;
        let id = Self::cluster_id(target)?;
        // (Was: sent while a caldera rollout of the cluster's stack stood paused, the
        // cluster UPDATE_IN_PROGRESS.)
        let ng = self
            .magnum
            .get_nodegroup(id, &target.nodegroup)
            .await
            .map_err(err)?;
        self.settled(target, id, &ng, "upgrading").await?;
        let body = UpgradeRequest {
            cluster_template: cluster_template.to_string(),
            max_batch_size: Some(max_batch_size.max(1)),
            nodegroup: Some(target.nodegroup.clone()),
        };
        let capi = match target.stack {
            Some(_) => None,
            None => self.capi_of(id).await?.map(|c| c.driver),
        };
        Ok(MagnumUpgradePlan {
            target: target.clone(),
            cluster_template: cluster_template.to_string(),
            max_batch_size: max_batch_size.max(1),
            capi,
            calls: vec![ApiCall::new(
                "POST",
                format!("/v1/clusters/{id}/actions/upgrade"),
                serde_json::to_string(&body).unwrap_or_default(),
            )],
        })
    }

    pub async fn apply_upgrade(&self, plan: &MagnumUpgradePlan) -> ServiceResult<()> {
        let id = Self::cluster_id(&plan.target)?;
        let body = UpgradeRequest {
            cluster_template: plan.cluster_template.clone(),
            max_batch_size: Some(plan.max_batch_size),
            nodegroup: Some(plan.target.nodegroup.clone()),
        };
        self.magnum.upgrade(id, &body).await.map_err(err)?;
        Ok(())
    }
}

impl Driver for MagnumDriver {
    fn kind(&self) -> DriverKind {
        DriverKind::Magnum
    }

    fn find_nodegroup<'a>(
        &'a self,
        cluster: &'a str,
        nodegroup: &'a str,
    ) -> BoxFuture<'a, ServiceResult<NodeGroupTarget>> {
        async move {
            let c = self.magnum.get_cluster(cluster).await.map_err(err)?;
            let ng = self
                .magnum
                .get_nodegroup(&c.id, nodegroup)
                .await
                .map_err(err)?;
            let stack = match (&self.heat, &ng.stack_id) {
                (Some(heat), Some(id)) => heat.resolve(id).await.ok(),
                _ => None,
            };
            Ok(NodeGroupTarget {
                cluster: c.name,
                nodegroup: ng.name,
                driver: DriverKind::Magnum,
                stack,
                cluster_id: Some(c.id),
                limits: Limits {
                    min: ng.min_node_count.unwrap_or(0),
                    max: ng.max_node_count,
                },
            })
        }
        .boxed()
    }

    fn list_nodegroups<'a>(
        &'a self,
        cluster: &'a str,
    ) -> BoxFuture<'a, ServiceResult<Vec<NodeGroupTarget>>> {
        async move {
            let c = self.magnum.get_cluster(cluster).await.map_err(err)?;
            let groups = self
                .magnum
                .list_nodegroups(&c.id, None)
                .await
                .map_err(err)?;
            Ok(groups
                .into_iter()
                .map(|ng| NodeGroupTarget {
                    cluster: c.name.clone(),
                    nodegroup: ng.name,
                    driver: DriverKind::Magnum,
                    stack: None,
                    cluster_id: Some(c.id.clone()),
                    limits: Limits {
                        min: ng.min_node_count.unwrap_or(0),
                        max: ng.max_node_count,
                    },
                })
                .collect())
        }
        .boxed()
    }

    fn list_nodes<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
    ) -> BoxFuture<'a, ServiceResult<Vec<Node>>> {
        async move {
            // Magnum does not list nodes. A Cluster API driver's nodes are Nova servers
            // named after their Machines; where the node group runs on a Heat stack, its
            // members are those of its ResourceGroup there.
            if target.stack.is_none() {
                if let Some(capi) = self.capi_of(Self::cluster_id(target)?).await? {
                    return self.capi_nodes(&capi, target).await;
                }
            }
            let (Some(heat), Some(stack)) = (&self.heat, &target.stack) else {
                return Err(unsupported(format!(
                    "Magnum does not list the nodes of {}; its Heat stack is not reachable",
                    target.label()
                )));
            };
            // Which of the stack's groups is this node group's: Magnum's cluster stack
            // holds the default masters and workers side by side.
            let id = Self::cluster_id(target)?;
            let ng = self
                .magnum
                .get_nodegroup(id, &target.nodegroup)
                .await
                .map_err(err)?;
            let top: Vec<StackResource> = heat
                .list_resources(stack, &ResourceQuery::default())
                .await
                .map_err(err)?
                .into_iter()
                .map(|r| r.resource)
                .collect();
            let Some(group) =
                pick_group(&top, ng.role, &target.nodegroup)?.and_then(|r| r.nested.clone())
            else {
                return Ok(Vec::new());
            };
            let members = heat
                .list_resources(&group, &ResourceQuery::default())
                .await
                .map_err(err)?;
            let mut nodes: Vec<Node> = members
                .into_iter()
                .map(|r| Node {
                    key: NodeKey {
                        nodegroup: target.nodegroup.clone(),
                        member: r.resource.name.clone(),
                    },
                    index: r.resource.name.parse().ok(),
                    name: r.resource.name.clone(),
                    zone: None,
                    ip: None,
                    status: r.resource.status.clone(),
                    status_reason: r.resource.status_reason.clone(),
                    image: None,
                    since: r.resource.updated_at,
                    hook_paused: false,
                    hook_inferred: false,
                    held_by_rollout: None,
                    server_id: None,
                    created: None,
                    stack_id: r.resource.nested.as_ref().map(|s| s.id.clone()),
                    replacing: false,
                })
                .collect();
            nodes.sort_by(|a, b| member_order(&a.name, &b.name));
            Ok(nodes)
        }
        .boxed()
    }

    fn plan_scale<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
        request: &'a ScaleRequest,
    ) -> BoxFuture<'a, ServiceResult<ScalePlan>> {
        async move {
            let v = self.magnum.version().await.map_err(err)?;
            needs(v, RESIZE, "resizing a cluster")?;
            needs(v, NODEGROUPS, "resizing one node group")?;
            let id = Self::cluster_id(target)?;
            let ng = self
                .magnum
                .get_nodegroup(id, &target.nodegroup)
                .await
                .map_err(err)?;
            let mut cluster = self.settled(target, id, &ng, "scaling").await?;
            let from = ng.node_count;
            let to = request
                .count
                .unwrap_or_else(|| from.saturating_sub(request.remove.len() as u32));
            target.limits.check(to)?;
            // A Cluster API driver reads nodes_to_remove its own way (or not at all).
            let mut remove = request.remove.clone();
            if !remove.is_empty() && target.stack.is_none() {
                // The cluster read above, told apart by its backend (no second read).
                self.magnum.refine_backend(&mut cluster).await;
                if let Some(capi) = cluster.capi {
                    let Some(nova) = &self.nova else {
                        return Err(unsupported(format!(
                            "{} runs on Cluster API: choosing nodes needs Nova, and this \
                             cloud has no Nova endpoint",
                            target.label()
                        )));
                    };
                    let servers = capi_nodes::cluster_servers(nova, &capi)
                        .await
                        .map_err(err)?;
                    remove = capi_nodes_to_remove(&capi, &ng.name, ng.role, &servers, &remove)?;
                }
            }
            let body = ResizeRequest {
                node_count: to,
                nodes_to_remove: remove.clone(),
                nodegroup: Some(target.nodegroup.clone()),
            };
            // Magnum picks the members to add and, beyond `nodes_to_remove`, which to remove;
            // the plan names what is known.
            let known: BTreeSet<String> = remove.iter().cloned().collect();
            Ok(ScalePlan {
                target: target.clone(),
                from,
                to,
                members_after: Vec::new(),
                added: Vec::new(),
                removed: known.into_iter().collect(),
                removal_list: Vec::new(),
                calls: vec![ApiCall::new(
                    "POST",
                    format!("/v1/clusters/{id}/actions/resize"),
                    serde_json::to_string(&body).unwrap_or_default(),
                )],
                stack_group: None,
            })
        }
        .boxed()
    }

    fn apply_scale<'a>(&'a self, plan: &'a ScalePlan) -> BoxFuture<'a, ServiceResult<()>> {
        async move {
            let id = Self::cluster_id(&plan.target)?;
            let body = ResizeRequest {
                node_count: plan.to,
                nodes_to_remove: plan.removed.clone(),
                nodegroup: Some(plan.target.nodegroup.clone()),
            };
            self.magnum.resize(id, &body).await.map_err(err)?;
            Ok(())
        }
        .boxed()
    }

    fn create_nodegroup<'a>(
        &'a self,
        spec: &'a NodeGroupSpec,
    ) -> BoxFuture<'a, ServiceResult<NodeGroupTarget>> {
        async move {
            Err(unsupported(format!(
                "creating Magnum node group {}/{} is not offered by caldera yet \
                 (use `openstack coe nodegroup create`)",
                spec.cluster, spec.nodegroup
            )))
        }
        .boxed()
    }

    fn delete_nodegroup<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
    ) -> BoxFuture<'a, ServiceResult<()>> {
        async move {
            Err(unsupported(format!(
                "deleting Magnum node group {} is not offered by caldera yet \
                 (use `openstack coe nodegroup delete`)",
                target.label()
            )))
        }
        .boxed()
    }

    fn plan_upgrade<'a>(
        &'a self,
        target: &'a NodeGroupTarget,
        to: &'a UpgradeTarget,
        options: &'a crate::drivers::rollout_plan::RolloutOptions,
    ) -> BoxFuture<'a, ServiceResult<UpgradePlan>> {
        async move {
            let UpgradeTarget::ClusterTemplate(template) = to else {
                return Err(unsupported(
                    "Magnum node groups are upgraded to a cluster template (--template); \
                     Magnum runs the batches, node-by-node hooks are for Heat-native node groups",
                ));
            };
            let batch = u32::try_from(options.batch_size.max(1)).unwrap_or(u32::MAX);
            Ok(UpgradePlan::Magnum(
                MagnumDriver::plan_upgrade(self, target, template, batch).await?,
            ))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;

    fn res(name: &str, rtype: &str) -> StackResource {
        StackResource {
            name: name.into(),
            logical_id: name.into(),
            physical_id: None,
            resource_type: rtype.into(),
            status: Status::parse("CREATE_COMPLETE"),
            status_reason: None,
            updated_at: None,
            owner: None,
            nested: None,
            parent_resource: None,
            required_by: vec![],
        }
    }

    /// Magnum picks the members a resize adds (and those it removes beyond the named
    /// ones): the plan counts them all the same, not "add 0" for a 2 -> 3 scale.
    #[test]
    fn a_resize_plan_counts_the_members_magnum_picks() {
        let plan = |from, to, removed: &[&str]| ScalePlan {
            target: NodeGroupTarget {
                cluster: "c".into(),
                nodegroup: "default-worker".into(),
                driver: DriverKind::Magnum,
                stack: None,
                cluster_id: Some("u".into()),
                limits: Limits::default(),
            },
            from,
            to,
            members_after: Vec::new(),
            added: Vec::new(),
            removed: removed.iter().map(|s| s.to_string()).collect(),
            removal_list: Vec::new(),
            calls: Vec::new(),
            stack_group: None,
        };
        let up = plan(2, 3, &[]).lines();
        assert!(
            up.contains(&"  add    1: picked by Magnum".to_string()),
            "{up:?}"
        );
        assert!(up.contains(&"  remove 0: -".to_string()), "{up:?}");
        let down = plan(3, 1, &["node-3"]).lines();
        assert!(down.contains(&"  add    0: -".to_string()), "{down:?}");
        assert!(
            down.contains(&"  remove 2: node-3, and 1 picked by Magnum".to_string()),
            "{down:?}"
        );
        // Named removals with the count to match: nothing left to Magnum.
        let named = plan(3, 2, &["node-3"]).lines();
        assert!(
            named.contains(&"  remove 1: node-3".to_string()),
            "{named:?}"
        );
        assert!(named.contains(&"  add    0: -".to_string()), "{named:?}");
    }

    #[test]
    fn the_cluster_stack_holds_masters_and_workers_apart() {
        let top = [
            res("network", "network.yaml"),
            res("kube_masters", "OS::Heat::ResourceGroup"),
            res("kube_minions", "OS::Heat::ResourceGroup"),
        ];
        let pick = |role| pick_group(&top, role, "ng").unwrap().unwrap().name.clone();
        assert_eq!(pick(Role::Master), "kube_masters");
        assert_eq!(pick(Role::Worker), "kube_minions");
        // A node group's own stack holds one group: that one, whatever its name.
        let own = [res("kube_minions", "OS::Heat::ResourceGroup")];
        assert_eq!(
            pick_group(&own, Role::Master, "x").unwrap().unwrap().name,
            "kube_minions"
        );
        assert!(
            pick_group(&[res("network", "network.yaml")], Role::Worker, "x")
                .unwrap()
                .is_none()
        );
        // Several groups, none of Magnum's: say which there are.
        let odd = [
            res("a", "OS::Heat::ResourceGroup"),
            res("b", "OS::Heat::AutoScalingGroup"),
        ];
        let e = pick_group(&odd, Role::Worker, "ng")
            .unwrap_err()
            .to_string();
        assert!(e.contains("kube_minions") && e.contains("a, b"), "{e}");
    }

    #[test]
    fn role_and_image_from_magnums_parameters() {
        let params: std::collections::BTreeMap<String, String> = [
            ("master_nodegroup_name", "default-master"),
            ("worker_nodegroup_name", "default-worker"),
            ("master_image", "fcos-39"),
            ("minion_image", "fcos-40"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(role_in_stack(&params, "default-master"), Some(Role::Master));
        assert_eq!(role_in_stack(&params, "default-worker"), Some(Role::Worker));
        assert_eq!(role_in_stack(&params, "gpu"), None);
        assert_eq!(
            image_in_stack(&params, "default-worker").as_deref(),
            Some("fcos-40")
        );
        assert_eq!(
            image_in_stack(&params, "default-master").as_deref(),
            Some("fcos-39")
        );
    }

    fn server(id: &str, name: &str) -> crate::api::nova::ServerInfo {
        crate::api::nova::ServerInfo {
            id: id.into(),
            name: name.into(),
            status: "ACTIVE".into(),
            addresses: vec![],
            metadata: Default::default(),
            task_state: None,
            fault: None,
            image: None,
            zone: None,
            created: None,
            updated: None,
        }
    }

    #[test]
    fn cluster_api_nodes_to_remove_are_what_each_driver_reads() {
        let servers = [
            server("u-1", "kube-7xk2q-default-worker-aaaaa-bbbbb-ccccc"),
            server("u-2", "kube-7xk2q-default-worker-aaaaa-bbbbb-ddddd"),
            server("u-3", "kube-7xk2q-gpu-aaaaa-bbbbb-ccccc"),
        ];
        let vexx = CapiCluster {
            driver: CapiDriver::MagnumClusterApi,
            name: "kube-7xk2q".into(),
        };
        // Names become Nova server ids (the Machine's providerID), ids stay.
        let ids = capi_nodes_to_remove(
            &vexx,
            "default-worker",
            Role::Worker,
            &servers,
            &[
                "kube-7xk2q-default-worker-aaaaa-bbbbb-ddddd".into(),
                "u-1".into(),
            ],
        )
        .unwrap();
        assert_eq!(ids, ["u-2", "u-1"]);
        // Another group's node is refused, not sent to be ignored.
        let e = capi_nodes_to_remove(
            &vexx,
            "default-worker",
            Role::Worker,
            &servers,
            &["u-3".into()],
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused);
        assert!(
            e.message.contains("not a node of default-worker: u-3"),
            "{e}"
        );
        let helm = CapiCluster {
            driver: CapiDriver::CapiHelm,
            name: "ml-pyd4ltgh3qbm".into(),
        };
        let e = capi_nodes_to_remove(
            &helm,
            "default-worker",
            Role::Worker,
            &servers,
            &["u-1".into()],
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(
            e.message
                .contains("magnum-capi-helm ignores nodes_to_remove"),
            "{e}"
        );
    }
}
