//! Heat-native clusters and node groups as the console's rows, and the cluster list that
//! joins them with Magnum's. Kept apart from `live.rs` so the mapping can be tested alone.

use super::{ServiceError, ServiceResult};
use crate::api::heat::StackDetail;
use crate::drivers::heat_native::HeatNativeDriver;
use crate::drivers::NodeGroupTarget;
use crate::model::{Cluster, NodeGroup, Role};

/// A node-group stack as a row: its size is the stack's `count` parameter (what Heat is
/// converging to, as Magnum's node_count is), its image the `image` parameter. The row's id
/// is the node-group stack's id, which is also what the node stream lists members from.
pub fn nodegroup_row(target: &NodeGroupTarget, detail: &StackDetail) -> NodeGroup {
    let param = |k: &str| detail.parameters.get(k).filter(|v| !v.is_empty()).cloned();
    let stack_id = target
        .stack
        .as_ref()
        .map_or_else(|| detail.summary.stack.id.clone(), |s| s.id.clone());
    NodeGroup {
        id: stack_id.clone(),
        name: target.nodegroup.clone(),
        cluster_id: target.cluster.clone(),
        role: Role::Worker,
        flavor: param("flavor"),
        image: param("image"),
        version: None,
        zone: param("availability_zone"),
        node_count: param("count")
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(0),
        min_node_count: Some(target.limits.min),
        max_node_count: target.limits.max,
        status: detail.summary.status.clone(),
        status_reason: detail.summary.status_reason.clone(),
        is_default: false,
        stack_id: Some(stack_id),
        capi: None,
        node_labels: Default::default(),
        node_taints: Vec::new(),
        created_at: detail.summary.created_at,
        updated_at: detail.summary.updated_at,
    }
}

/// The image every member of a node group has, when that can be known from the group's
/// stack alone: its `image` parameter once the stack is settled (not in progress, not
/// failed), since Heat then brought every member to it. During an update or after a failed
/// one, members differ and only their own stacks know (one request each, which the node
/// list does not spend on a large group): `None`.
pub fn settled_image(detail: &StackDetail) -> Option<String> {
    if !crate::progress::at_rest(&detail.summary.status) {
        return None;
    }
    detail
        .parameters
        .get("image")
        .filter(|i| !i.is_empty())
        .cloned()
}

/// The node groups of a Heat-native cluster (the console's cluster id is its name).
pub async fn list_nodegroups(
    driver: &HeatNativeDriver,
    cluster: &Cluster,
) -> ServiceResult<Vec<NodeGroup>> {
    Ok(driver
        .describe_nodegroups(&cluster.name)
        .await?
        .iter()
        .map(|(t, d)| nodegroup_row(t, d))
        .collect())
}

/// Magnum's clusters (`None` on a cloud without Magnum) and the Heat-native ones, as one
/// list. One kind failing does not hide the other: its error is logged and the list shows
/// what the other found. It is an error when every source failed, and also when the one
/// that answered found nothing: an empty list would read as "no clusters" when the truth
/// is "Magnum did not answer".
pub fn join_clusters(
    magnum: Option<ServiceResult<Vec<Cluster>>>,
    heat_native: ServiceResult<Vec<Cluster>>,
) -> ServiceResult<Vec<Cluster>> {
    match (magnum, heat_native) {
        (None, heat) => heat,
        (Some(Ok(mut m)), Ok(h)) => {
            m.extend(h);
            Ok(m)
        }
        (Some(Ok(found)), Err(e)) | (Some(Err(e)), Ok(found)) if found.is_empty() => Err(e),
        (Some(Ok(m)), Err(e)) => {
            tracing::warn!("Heat-native clusters could not be listed: {e}");
            Ok(m)
        }
        (Some(Err(e)), Ok(h)) => {
            tracing::warn!("Magnum clusters could not be listed: {e}");
            Ok(h)
        }
        (Some(Err(m)), Err(h)) => Err(ServiceError::new(
            m.kind,
            format!("Magnum clusters: {m}; Heat-native clusters: {h}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::Limits;
    use crate::model::{DriverKind, Health, StackRef, StackSummary, Status};
    use crate::service::ErrorKind;

    fn cluster(name: &str, driver: DriverKind) -> Cluster {
        Cluster {
            id: name.into(),
            name: name.into(),
            driver,
            status: Status::parse("CREATE_COMPLETE"),
            status_reason: None,
            health: Health::Unknown,
            health_reason: None,
            master_count: 0,
            node_count: 0,
            nodegroup_count: None,
            template_id: None,
            coe_version: None,
            api_address: None,
            stack_id: None,
            created_at: None,
            updated_at: None,
            capi: None,
        }
    }

    #[test]
    fn one_kind_failing_leaves_the_other_and_both_failing_names_both() {
        let m = cluster("m", DriverKind::Magnum);
        let h = cluster("h", DriverKind::HeatNative);
        let down = |what: &str| ServiceError::new(ErrorKind::Http, format!("{what} answered 503"));
        let names = |r: ServiceResult<Vec<Cluster>>| -> Vec<String> {
            r.expect("a list").into_iter().map(|c| c.name).collect()
        };
        assert_eq!(
            names(join_clusters(
                Some(Ok(vec![m.clone()])),
                Ok(vec![h.clone()])
            )),
            ["m", "h"]
        );
        assert_eq!(names(join_clusters(None, Ok(vec![h.clone()]))), ["h"]);
        assert_eq!(
            names(join_clusters(Some(Err(down("magnum"))), Ok(vec![h]))),
            ["h"]
        );
        assert_eq!(
            names(join_clusters(Some(Ok(vec![m])), Err(down("heat")))),
            ["m"]
        );
        let e = join_clusters(Some(Err(down("magnum"))), Err(down("heat"))).unwrap_err();
        assert!(
            e.message.contains("magnum answered 503") && e.message.contains("heat answered 503"),
            "{e}"
        );
        assert!(join_clusters(None, Err(down("heat"))).is_err());
        // Nothing found by the one that answered: the other's failure is the news.
        let e = join_clusters(Some(Err(down("magnum"))), Ok(vec![])).unwrap_err();
        assert!(e.message.contains("magnum answered 503"), "{e}");
        let e = join_clusters(Some(Ok(vec![])), Err(down("heat"))).unwrap_err();
        assert!(e.message.contains("heat answered 503"), "{e}");
    }

    #[test]
    fn a_nodegroup_stack_becomes_a_row_with_its_parameters() {
        let stack = StackRef {
            name: "hn-workers".into(),
            id: "0f0f".into(),
        };
        let target = NodeGroupTarget {
            cluster: "hn".into(),
            nodegroup: "workers".into(),
            driver: DriverKind::HeatNative,
            stack: Some(stack.clone()),
            cluster_id: None,
            limits: Limits {
                min: 1,
                max: Some(20),
            },
        };
        let summary = StackSummary {
            stack,
            status: Status::parse("UPDATE_IN_PROGRESS"),
            status_reason: None,
            created_at: None,
            updated_at: None,
            parent: None,
        };
        let detail = StackDetail {
            summary,
            description: None,
            parameters: [
                ("count", "12"),
                ("image", "fedora-coreos-40"),
                ("flavor", ""),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            outputs: None,
            disable_rollback: None,
            timeout_mins: None,
            tags: vec![],
            links: vec![],
        };
        let row = nodegroup_row(&target, &detail);
        assert_eq!(row.name, "workers");
        assert_eq!(row.cluster_id, "hn");
        assert_eq!(row.node_count, 12);
        assert_eq!(row.image.as_deref(), Some("fedora-coreos-40"));
        assert_eq!(row.flavor, None, "an empty parameter is no value");
        assert_eq!(
            (row.min_node_count, row.max_node_count),
            (Some(1), Some(20))
        );
        assert_eq!(row.stack_id.as_deref(), Some("0f0f"));
        assert_eq!(row.id, "0f0f");
        assert!(row.status.is_in_progress());
    }

    #[test]
    fn only_a_settled_group_tells_its_members_image() {
        let mut detail = StackDetail {
            summary: StackSummary {
                stack: StackRef {
                    name: "g".into(),
                    id: "1".into(),
                },
                status: Status::parse("UPDATE_COMPLETE"),
                status_reason: None,
                created_at: None,
                updated_at: None,
                parent: None,
            },
            description: None,
            parameters: [("image".to_string(), "img-v2".to_string())].into(),
            outputs: None,
            disable_rollback: None,
            timeout_mins: None,
            tags: vec![],
            links: vec![],
        };
        assert_eq!(settled_image(&detail).as_deref(), Some("img-v2"));
        for raw in ["UPDATE_IN_PROGRESS", "UPDATE_FAILED", "CREATE_IN_PROGRESS"] {
            detail.summary.status = Status::parse(raw);
            assert_eq!(settled_image(&detail), None, "{raw}");
        }
        detail.summary.status = Status::parse("CREATE_COMPLETE");
        detail.parameters.clear();
        assert_eq!(settled_image(&detail), None, "no image parameter");
    }
}
