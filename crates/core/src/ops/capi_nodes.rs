//! Nodes of Magnum clusters run by Cluster API drivers, read from Nova.
//!
//! Neither driver keeps a Heat stack, and Magnum lists no nodes (`node_addresses` stays
//! empty). Every node is a Nova server created by Cluster API's OpenStack provider (CAPO),
//! which names the server after its `OpenStackMachine`, itself named after the Cluster API
//! `Machine`. CAPO adds no tags or metadata of its own (`InstanceTags`: only the tags of the
//! machine spec and of the `OpenStackCluster` spec) and neither driver sets any, so the
//! server's name is the only link to its cluster and node group. The names:
//!
//! - vexxhost `magnum-cluster-api` (`magnum_cluster_api/resources.py`,
//!   `mutate_machine_deployment`: one `MachineDeployment` per worker node group, topology
//!   name = the node group's name; the control plane is the cluster's
//!   `KubeadmControlPlane`), a ClusterClass cluster named `cluster.stack_id`
//!   (`kube-xxxxx`). Cluster API names topology-managed objects
//!   `{cluster}-{topology name}-{random}` (MachineDeployment) and `{cluster}-{random}`
//!   (control plane), MachineSets `{deployment}-{random}` and Machines `{owner}-{random}`
//!   (random: 5 of `[a-z0-9]`). So a worker of node group `ng` is
//!   `{cluster}-{ng}-{r}-{r}-{r}` and a control-plane node `{cluster}-{r}-{r}`.
//! - `magnum-capi-helm` (`magnum_capi_helm/driver.py` with the capi-helm-charts'
//!   `openstack-cluster` chart): release = `cluster.stack_id`, the control plane
//!   `{release}-control-plane`, a node group's MachineDeployment `{release}-{ng}` with `ng`
//!   sanitised (`driver_utils.sanitized_name`: lower case, runs of other characters to `-`).
//!   So a worker is `{release}-{ng}-{r}-{r}` and a control-plane node
//!   `{release}-control-plane-{r}`.
//!
//! The drivers' sources fix the object names; the random suffixes are Cluster API's naming
//! and were not checked against a running Cluster API (see README, known differences).

use crate::api::error::ApiResult;
use crate::api::nova::{NovaClient, ServerInfo, ServerQuery};
use crate::model::{CapiCluster, CapiDriver, Node, NodeKey, Role, Status, StatusState};
use futures::TryStreamExt;

/// Servers listed per Nova page.
const PAGE: u32 = 500;

/// Cluster API's random name suffixes: lower-case letters and digits.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 10
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// `rest` is exactly `n` random tokens joined by `-`.
fn tokens(rest: &str, n: usize) -> bool {
    let parts: Vec<&str> = rest.split('-').collect();
    parts.len() == n && parts.iter().all(|p| is_token(p))
}

/// magnum-capi-helm's `sanitized_name`.
pub fn sanitized(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    out.trim_matches('-').to_string()
}

fn vexxhost_member(cluster: &str, nodegroup: &str, role: Role, server: &str) -> bool {
    let Some(rest) = server
        .strip_prefix(cluster)
        .and_then(|r| r.strip_prefix('-'))
    else {
        return false;
    };
    match role {
        Role::Master => tokens(rest, 2),
        _ => rest
            .strip_prefix(nodegroup)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|r| tokens(r, 3)),
    }
}

fn capi_helm_member(release: &str, nodegroup: &str, role: Role, server: &str) -> bool {
    let Some(rest) = server
        .strip_prefix(release)
        .and_then(|r| r.strip_prefix('-'))
    else {
        return false;
    };
    let (owner, n) = match role {
        Role::Master => ("control-plane".to_string(), 1),
        _ => (sanitized(nodegroup), 2),
    };
    rest.strip_prefix(owner.as_str())
        .and_then(|r| r.strip_prefix('-'))
        .is_some_and(|r| tokens(r, n))
}

/// Whether Nova server `server` is a node of node group `nodegroup` (of `role`) of the
/// Cluster API cluster `capi`, by the naming rules above. An unknown driver accepts either.
pub fn is_member(capi: &CapiCluster, nodegroup: &str, role: Role, server: &str) -> bool {
    match capi.driver {
        CapiDriver::MagnumClusterApi => vexxhost_member(&capi.name, nodegroup, role, server),
        CapiDriver::CapiHelm => capi_helm_member(&capi.name, nodegroup, role, server),
        CapiDriver::Unknown => {
            vexxhost_member(&capi.name, nodegroup, role, server)
                || capi_helm_member(&capi.name, nodegroup, role, server)
        }
    }
}

/// Nova's `name` filter (a regular expression) for every server of the cluster.
pub fn name_filter(capi: &CapiCluster) -> String {
    let mut escaped = String::new();
    for c in capi.name.chars() {
        if ".^$*+?()[]{}|\\".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    format!("^{escaped}-")
}

/// Every Nova server whose name starts with the cluster's Cluster API name.
pub async fn cluster_servers(nova: &NovaClient, capi: &CapiCluster) -> ApiResult<Vec<ServerInfo>> {
    nova.list_servers_detail(ServerQuery {
        limit: Some(PAGE),
        filters: vec![("name".into(), name_filter(capi))],
    })
    .try_collect()
    .await
}

/// The `action` of a node status read from Nova (its `raw` is Nova's status).
pub const NOVA_ACTION: &str = "NOVA";

/// A Nova status as a node status: `ACTIVE` is settled, `BUILD`/`REBUILD`/`RESIZE`/... and
/// an `ACTIVE` server with a task (`deleting`) are in progress, `ERROR` failed.
pub fn server_status(s: &ServerInfo) -> Status {
    let state = match s.status.as_str() {
        "ERROR" => StatusState::Failed,
        "ACTIVE" if s.task_state.is_some() => StatusState::InProgress,
        "ACTIVE" | "SHUTOFF" | "PAUSED" | "SUSPENDED" => StatusState::Complete,
        "BUILD" | "REBUILD" | "RESIZE" | "VERIFY_RESIZE" | "MIGRATING" | "REBOOT"
        | "HARD_REBOOT" | "DELETED" => StatusState::InProgress,
        _ => StatusState::Unknown,
    };
    Status {
        action: NOVA_ACTION.into(),
        state,
        raw: s.status.clone(),
    }
}

/// A node from its Nova server: identity = the server name (one per Machine), status from
/// Nova, the fault or the task as its reason, the image it runs, when it last changed.
pub fn node_from_server(nodegroup_id: &str, s: &ServerInfo) -> Node {
    let reason = s
        .fault
        .clone()
        .or_else(|| s.task_state.as_ref().map(|t| format!("task: {t}")));
    Node {
        key: NodeKey {
            nodegroup: nodegroup_id.to_string(),
            member: s.name.clone(),
        },
        index: None,
        name: s.name.clone(),
        zone: s.zone.clone(),
        ip: s.fixed_ips().into_iter().next(),
        status: server_status(s),
        status_reason: reason,
        image: s.image.clone(),
        since: s.updated.or(s.created),
        hook_paused: false,
        hook_inferred: false,
        held_by_rollout: None,
        server_id: Some(s.id.clone()),
        created: s.created,
        stack_id: None,
        replacing: false,
    }
}

/// The nodes of one node group among a cluster's servers, oldest first (then by name).
pub fn nodegroup_nodes(
    capi: &CapiCluster,
    nodegroup_id: &str,
    nodegroup: &str,
    role: Role,
    servers: &[ServerInfo],
) -> Vec<Node> {
    let mut picked: Vec<&ServerInfo> = servers
        .iter()
        .filter(|s| is_member(capi, nodegroup, role, &s.name))
        .collect();
    picked.sort_by(|a, b| (a.created, &a.name).cmp(&(b.created, &b.name)));
    picked
        .into_iter()
        .map(|s| node_from_server(nodegroup_id, s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capi(driver: CapiDriver, name: &str) -> CapiCluster {
        CapiCluster {
            driver,
            name: name.into(),
        }
    }

    #[test]
    fn vexxhost_names_workers_after_their_machine_deployment() {
        let c = capi(CapiDriver::MagnumClusterApi, "kube-7xk2q");
        let w = "kube-7xk2q-default-worker-4hq9z-8d2kx-p5mzt";
        assert!(is_member(&c, "default-worker", Role::Worker, w));
        assert!(!is_member(&c, "default-worker", Role::Master, w));
        // A node group whose name is a prefix of another's does not take its nodes.
        let gpu_large = "kube-7xk2q-gpu-large-4hq9z-8d2kx-p5mzt";
        assert!(!is_member(&c, "gpu", Role::Worker, gpu_large));
        assert!(is_member(&c, "gpu-large", Role::Worker, gpu_large));
        let cp = "kube-7xk2q-b7r4c-x2m9q";
        assert!(is_member(&c, "default-master", Role::Master, cp));
        assert!(!is_member(&c, "default-worker", Role::Worker, cp));
        assert!(!is_member(
            &c,
            "default-worker",
            Role::Worker,
            "kube-7xk2qq-default-worker-a-b-c"
        ));
    }

    #[test]
    fn capi_helm_names_from_the_release() {
        let c = capi(CapiDriver::CapiHelm, "ml-pyd4ltgh3qbm");
        assert!(is_member(
            &c,
            "GPU_nodes",
            Role::Worker,
            "ml-pyd4ltgh3qbm-gpu-nodes-5f7c9d8b4x-k2j9s"
        ));
        assert!(is_member(
            &c,
            "default-master",
            Role::Master,
            "ml-pyd4ltgh3qbm-control-plane-q8w2e"
        ));
        assert!(!is_member(
            &c,
            "default-worker",
            Role::Worker,
            "ml-pyd4ltgh3qbm-control-plane-q8w2e"
        ));
        assert_eq!(sanitized("GPU__nodes."), "gpu-nodes");
        assert_eq!(name_filter(&c), "^ml-pyd4ltgh3qbm-");
        assert_eq!(name_filter(&capi(CapiDriver::Unknown, "a.b")), "^a\\.b-");
    }

    /// Nova's servers of a vexxhost cluster (fixture written from the driver's and Nova's
    /// sources, tests/fixtures/magnum-capi/README.md) through the Nova client and the rule.
    #[tokio::test]
    async fn nodes_from_novas_servers_by_the_drivers_names() {
        use crate::api::http::{Transport, TransportConfig};
        use crate::fetch::RetryPolicy;
        use crate::testing::fault_server::{FaultServer, Reply};
        let body: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/magnum-capi/servers-detail-magnum-cluster-api.json"
        ))
        .unwrap();
        let server = FaultServer::start(move |_| Reply::ok(body.clone())).await;
        let t = Transport::new(&TransportConfig {
            retry: RetryPolicy::never(),
            ..TransportConfig::default()
        })
        .unwrap();
        let nova = NovaClient::new(t, &server.url("/v2.1")).unwrap();
        let c = capi(CapiDriver::MagnumClusterApi, "kube-7xk2q");
        let servers = cluster_servers(&nova, &c).await.unwrap();
        assert_eq!(
            server.hits()[0].param("name").as_deref(),
            Some("^kube-7xk2q-")
        );
        let workers = nodegroup_nodes(&c, "ng-w", "default-worker", Role::Worker, &servers);
        let names: Vec<&str> = workers.iter().map(|n| n.name.as_str()).collect();
        // Oldest first; the other cluster's `kube-7xk2qz-...` is not ours.
        assert_eq!(
            names,
            [
                "kube-7xk2q-default-worker-4hq9z-8d2kx-p5mzt",
                "kube-7xk2q-default-worker-4hq9z-8d2kx-q7n2w"
            ]
        );
        let ready = &workers[0];
        assert_eq!(ready.status.raw, "ACTIVE");
        assert!(ready.status.is_complete());
        assert_eq!(ready.ip.as_deref(), Some("10.6.0.21"));
        assert_eq!(ready.image.as_deref(), Some("ubuntu-2204-kube-v1.30.2"));
        assert_eq!(ready.zone.as_deref(), Some("az-1"));
        assert_eq!(
            ready.key.member, ready.name,
            "one identity: the Machine's name"
        );
        let building = &workers[1];
        assert!(building.status.is_in_progress());
        assert_eq!(building.status_reason.as_deref(), Some("task: spawning"));
        assert_eq!(building.ip, None);
        let masters = nodegroup_nodes(&c, "ng-m", "default-master", Role::Master, &servers);
        assert_eq!(masters.len(), 1);
        assert_eq!(masters[0].name, "kube-7xk2q-b7r4c-x2m9q");
        let gpu = nodegroup_nodes(&c, "ng-g", "gpu", Role::Worker, &servers);
        assert_eq!(gpu.len(), 1);
        assert!(gpu[0].status.is_failed());
        assert_eq!(
            gpu[0].status_reason.as_deref(),
            Some("No valid host was found. There are not enough hosts available.")
        );
        assert_eq!(gpu[0].zone, None, "an empty zone is no zone");
    }
}
