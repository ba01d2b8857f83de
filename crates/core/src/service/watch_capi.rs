//! Watching a Magnum upgrade or resize of a Cluster API cluster (no Heat stack) from Magnum
//! and Nova, for `watch`. Each look costs three requests whatever the node
//! group's size: Magnum's cluster (its status), Magnum's node group (the image it asks for)
//! and one paged listing of the cluster's servers (`capi_nodes::cluster_servers`, 500 a
//! page). What the node-by-node classification means is in `rollout::observed_nova`.
//!
//! Magnum's `image_id` is compared with the image Nova booted each server from: a template
//! naming its image by name rather than by id would show every server on an "old image"
//! (Nova lists image ids; telling them apart would need Glance).

use super::{ErrorKind, ServiceError, ServiceResult};
use crate::api::magnum::MagnumClient;
use crate::api::nova::{NovaClient, ServerInfo};
use crate::drivers::NodeGroupTarget;
use crate::model::DriverKind;
use crate::ops::capi_nodes;
use crate::rollout::observed::{ObservedUpdate, UpdateKind, UpdateSource};
use crate::rollout::observed_nova::{capi_status, NovaFacts, ServerFact, Sightings};
use crate::rollout::RolloutStatus;
use chrono::Utc;

fn cluster_id(target: &NodeGroupTarget) -> ServiceResult<&str> {
    target
        .cluster_id
        .as_deref()
        .ok_or_else(|| ServiceError::new(ErrorKind::NotFound, "no Magnum cluster id"))
}

/// Magnum's update of `target`'s Cluster API cluster, when Magnum says one is under way
/// (`UPDATE_IN_PROGRESS`) or the last one failed. `None` for a node group with a stack, a
/// cluster on Heat, or a cluster that is not being updated (a create, a settled cluster).
pub async fn find_update(
    magnum: &MagnumClient,
    target: &NodeGroupTarget,
) -> ServiceResult<Option<ObservedUpdate>> {
    if target.stack.is_some() || target.driver != DriverKind::Magnum {
        return Ok(None);
    }
    let id = cluster_id(target)?;
    let mut cluster = magnum.get_cluster(id).await?;
    magnum.refine_backend(&mut cluster).await;
    let Some(capi) = cluster.capi else {
        return Ok(None);
    };
    let status = &cluster.status;
    if status.action != "UPDATE" || !(status.is_in_progress() || status.is_failed()) {
        return Ok(None);
    }
    let ng = magnum.get_nodegroup(id, &target.nodegroup).await?;
    Ok(Some(ObservedUpdate {
        target: target.clone(),
        kind: UpdateKind::MagnumCapi,
        source: UpdateSource::Nova {
            capi,
            role: ng.role,
        },
    }))
}

fn fact(s: &ServerInfo) -> ServerFact {
    ServerFact {
        name: s.name.clone(),
        status: s.status.clone(),
        task_state: s.task_state.clone(),
        image: s.image.clone(),
        fault: s.fault.clone(),
        created: s.created,
    }
}

/// One look: Magnum's cluster and node group and Nova's servers, classified node by node
/// with what earlier looks saw (`seen`, updated).
pub async fn observe_update(
    magnum: &MagnumClient,
    nova: Option<&NovaClient>,
    seen: &mut Sightings,
    update: &ObservedUpdate,
) -> ServiceResult<RolloutStatus> {
    let UpdateSource::Nova { capi, .. } = &update.source else {
        return Err(ServiceError::new(
            ErrorKind::Unsupported,
            "not a Cluster API update",
        ));
    };
    let Some(nova) = nova else {
        return Err(ServiceError::new(
            ErrorKind::Unsupported,
            format!(
                "{} runs on Cluster API ({}): its nodes are Nova servers, and this cloud has \
                 no Nova endpoint",
                update.target.label(),
                capi.driver.as_str()
            ),
        ));
    };
    let id = cluster_id(&update.target)?;
    let (cluster, ng, servers) = futures::join!(
        magnum.get_cluster(id),
        magnum.get_nodegroup(id, &update.target.nodegroup),
        capi_nodes::cluster_servers(nova, capi)
    );
    let (cluster, ng, servers) = (cluster?, ng?, servers?);
    let mut servers: Vec<ServerFact> = servers
        .iter()
        .filter(|s| capi_nodes::is_member(capi, &ng.name, ng.role, &s.name))
        .map(fact)
        .collect();
    // Magnum's `image_id` is often a name; Nova's servers say ids.
    crate::ops::image_names::as_target_says(
        nova,
        ng.image.as_deref(),
        servers.iter_mut().filter_map(|s| s.image.as_mut()),
    )
    .await;
    let now = Utc::now();
    seen.ingest(&servers, now);
    let facts = NovaFacts {
        id: update.id(),
        target: update.target.label(),
        image: ng.image.clone().unwrap_or_else(|| "?".into()),
        cluster_status: cluster.status.clone(),
        cluster_reason: cluster.status_reason.clone().unwrap_or_default(),
        servers,
    };
    Ok(capi_status(&facts, seen, now))
}
