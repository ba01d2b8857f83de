//! Any Heat stack, one caldera did not write, seen by the console as a cluster of node groups:
//! the same discovery as `caldera nodegroups STACK` and `caldera ips STACK`
//! (`crate::ops::discover`), so the node-groups pane, the dashboard and the scale form show
//! what the CLI says. The console makes such a cluster of the stack in context
//! (`Cluster.id` = `Cluster.stack_id` = the stack's id); a node group row is one scaling
//! group whose members are nodes, named by its resource path, its id and `stack_id` the
//! group's nested stack (whose resources are the members).

use super::{ServiceError, ServiceResult};
use crate::api::heat::HeatClient;
use crate::drivers::any_group;
use crate::model::{Cluster, DriverKind, NodeGroup, Role, StackRef};
use crate::ops::discover::{discover_groups, GroupShape};
use crate::ops::ips::group_label;
use crate::ops::node_tree::is_server_type;
use serde_json::Value;

/// Stack `id` (named `name`) seen as a cluster: not a cluster of any driver, so no action
/// reaches it by name; its figures come from [`cluster_row`].
pub fn cluster_of(id: &str, name: &str) -> Cluster {
    let unknown = crate::model::Status::parse("");
    Cluster {
        id: id.to_string(),
        name: name.to_string(),
        driver: DriverKind::HeatNative,
        status: unknown,
        status_reason: None,
        health: crate::model::Health::Unknown,
        health_reason: None,
        master_count: 0,
        node_count: 0,
        nodegroup_count: None,
        template_id: None,
        coe_version: None,
        api_address: None,
        stack_id: Some(id.to_string()),
        created_at: None,
        updated_at: None,
        capi: None,
    }
}

/// Whether the console's cluster is a plain stack seen as one ([`cluster_of`]).
pub fn is_plain_stack(cluster: &Cluster) -> bool {
    cluster.driver == DriverKind::HeatNative && cluster.stack_id.as_deref() == Some(&cluster.id)
}

async fn stack_of(heat: &HeatClient, cluster: &Cluster) -> ServiceResult<StackRef> {
    heat.resolve(&cluster.id).await.map_err(ServiceError::from)
}

/// The stack's node groups as rows, each with its members' image.
pub async fn nodegroups(heat: &HeatClient, cluster: &Cluster) -> ServiceResult<Vec<NodeGroup>> {
    let stack = stack_of(heat, cluster).await?;
    let groups = discover_groups(heat, &stack).await?;
    let images = futures::future::join_all(groups.iter().map(|g| member_image(heat, g))).await;
    Ok(groups
        .iter()
        .zip(images)
        .map(|(g, image)| row(cluster, g, image))
        .collect())
}

/// The stack as the dashboard's cluster line: its status, and nodes counted over its node
/// groups.
pub async fn cluster_row(heat: &HeatClient, cluster: &Cluster) -> ServiceResult<Cluster> {
    let stack = stack_of(heat, cluster).await?;
    let (detail, groups) = futures::join!(heat.get_stack(&stack, false), async {
        discover_groups(heat, &stack).await
    });
    let (detail, groups) = (detail?, groups?);
    let mut row = cluster.clone();
    row.name = stack.name.clone();
    row.status = detail.summary.status.clone();
    row.status_reason = detail.summary.status_reason.clone();
    row.created_at = detail.summary.created_at;
    row.updated_at = detail.summary.updated_at;
    row.node_count =
        u32::try_from(groups.iter().map(|g| g.members.len()).sum::<usize>()).unwrap_or(u32::MAX);
    row.nodegroup_count = Some(u32::try_from(groups.len()).unwrap_or(u32::MAX));
    Ok(row)
}

fn row(cluster: &Cluster, g: &GroupShape, image: Option<String>) -> NodeGroup {
    let group_stack = g.stack.as_ref().map(|s| s.id.clone());
    let mut row = NodeGroup::of_stack(
        group_stack.as_deref().unwrap_or(&g.owner.id),
        &group_label(g),
        Role::Other,
    );
    row.cluster_id = cluster.id.clone();
    row.stack_id = group_stack;
    row.image = image;
    row.node_count = u32::try_from(g.members.len()).unwrap_or(u32::MAX);
    row.status = g.status.clone();
    row.updated_at = g.updated_at;
    row
}

/// Each node group's members' image (see [`member_image`]), by group path.
pub async fn group_images(
    heat: &HeatClient,
    stack: &StackRef,
) -> std::collections::HashMap<String, String> {
    let groups = match discover_groups(heat, stack).await {
        Ok(groups) => groups,
        Err(e) => {
            tracing::info!("node group images of {}: {e}", stack.name);
            return Default::default();
        }
    };
    let images = futures::future::join_all(groups.iter().map(|g| member_image(heat, g))).await;
    groups
        .into_iter()
        .zip(images)
        .filter_map(|(g, image)| Some((g.path, image?)))
        .collect()
}

/// The image the group's members boot, as Heat resolved it. A group whose definition is a
/// server: Heat writes the group's nested template itself, one resource per member holding
/// the definition with every value resolved (`image: fedora-40`). Otherwise the first
/// member's servers, followed down through its nested stacks as a rollout follows them
/// ([`any_group::member_image`]): one walk gives both the parameter a rollout sets and the
/// image shown here. `None` when no server reads an image so (a group whose first member is
/// not yet created, a computed image), and while the group is under an update or after one
/// failed (its members may differ).
pub async fn member_image(heat: &HeatClient, g: &GroupShape) -> Option<String> {
    // Under an update, or after one that failed, the members may boot different images
    // (a rollout goes member by member): one member's is not the group's, so none is said;
    // the progress model counts old and new.
    if g.status.is_in_progress() || g.status.is_failed() {
        return None;
    }
    let group_stack = g.stack.as_ref()?;
    let first = g.members.first()?;
    let generated = heat.get_template(group_stack).await.ok()?;
    let definition = generated.get("resources")?.get(&first.name)?;
    let member_type = definition.get("type")?.as_str()?;
    if is_server_type(member_type) {
        return text(definition.get("properties")?.get("image")?);
    }
    let member_stack = first.stack.as_ref()?;
    let template = heat.get_template(member_stack).await.ok()?;
    match any_group::member_image(heat, member_stack, &template, &g.path).await {
        Ok(found) => found?.value,
        Err(e) => {
            tracing::info!("the image of {}'s members: {e}", g.path);
            None
        }
    }
}

fn text(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}
