//! MagnumClient against the fault server. Bodies follow the Magnum api-ref examples.

use super::magnum_client::*;
use crate::api::http::{Transport, TransportConfig};
use crate::api_error::ApiError;
use crate::fetch::{BudgetConfig, RequestBudget, RetryPolicy};
use crate::model::{DriverKind, Health, Role, StatusState};
use crate::testing::fault_server::{FaultServer, Hit, Reply};
use futures::TryStreamExt;
use serde_json::json;
use std::time::Duration;

fn client(server: &FaultServer) -> MagnumClient {
    let transport = Transport::new(&TransportConfig {
        timeout: Duration::from_secs(5),
        budget: RequestBudget::new(BudgetConfig {
            max_in_flight: 8,
            max_per_second: None,
        }),
        retry: RetryPolicy::never(),
        ..TransportConfig::default()
    })
    .unwrap();
    MagnumClient::new(transport, &server.url("/v1")).unwrap()
}

fn versioned(min: &'static str, max: &'static str, status: u16, body: serde_json::Value) -> Reply {
    Reply::with_headers(
        status,
        &[
            ("content-type", "application/json"),
            ("OpenStack-API-Minimum-Version", min),
            ("OpenStack-API-Maximum-Version", max),
        ],
        body.to_string(),
    )
}

fn cluster_json(i: usize, base: &str) -> serde_json::Value {
    json!({"status": "CREATE_COMPLETE", "uuid": format!("c{i}"), "name": format!("k8s-{i}"),
        "links": [{"href": format!("{base}/v1/clusters/c{i}"), "rel": "self"}],
        "stack_id": format!("stack-{i}"), "keypair": "kp", "master_count": 3,
        "cluster_template_id": "tmpl-1", "node_count": 10 + i, "create_timeout": 60,
        "health_status": "HEALTHY", "labels": {"kube_tag": "v1.27.8", "some_number": 3},
        "flavor_id": "m1.large", "master_flavor_id": "m1.medium"})
}

/// Clusters c0..c4 served `limit` at a time with Magnum-style `next` links.
fn clusters(hit: &Hit, base: &str) -> Reply {
    let limit: usize = hit
        .param("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(1000);
    let start = hit
        .param("marker")
        .map(|m| m.trim_start_matches('c').parse::<usize>().unwrap() + 1)
        .unwrap_or(0);
    let items: Vec<_> = (start..5)
        .take(limit)
        .map(|i| cluster_json(i, base))
        .collect();
    let last = start + items.len();
    let mut body = json!({ "clusters": items });
    if last < 5 {
        body["next"] = json!(format!(
            "{base}/v1/clusters?limit={limit}&sort_key=id&sort_dir=asc&marker=c{}",
            last - 1
        ));
    }
    versioned("container-infra 1.1", "container-infra 1.11", 200, body)
}

async fn magnum_server() -> FaultServer {
    let base = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let b = base.clone();
    let server = FaultServer::start(move |hit| {
        let base = b.lock().unwrap().clone();
        match (hit.method.as_str(), hit.path.as_str()) {
            ("GET", "/v1") => versioned("container-infra 1.1", "container-infra 1.11", 200, json!({"id": "v1"})),
            ("GET", "/v1/clusters") => clusters(hit, &base),
            ("GET", "/v1/clusters/c1") => {
                let mut c = cluster_json(1, &base);
                c["status"] = json!("UPDATE_FAILED");
                c["status_reason"] = json!("Resource UPDATE failed: ResourceInError: resources.kube_minions.resources[3]");
                c["health_status"] = json!("UNHEALTHY");
                c["health_status_reason"] = json!({"api": "ok", "k8s-1-node-3.Ready": "False"});
                c["api_address"] = json!("https://172.24.4.10:6443");
                c["coe_version"] = json!("v1.27.8");
                c["created_at"] = json!("2026-11-20T10:00:00+00:00");
                c["updated_at"] = json!(null);
                versioned("container-infra 1.1", "container-infra 1.11", 200, c)
            }
            ("GET", "/v1/clusters/c1/nodegroups") => versioned("container-infra 1.1", "container-infra 1.11", 200, json!({
                "nodegroups": [
                    {"uuid": "ng-m", "name": "default-master", "flavor_id": "m1.medium", "image_id": "fcos-38",
                     "node_count": 3, "role": "master", "is_default": true, "status": "CREATE_COMPLETE", "stack_id": "s-m"},
                    {"uuid": "ng-w", "name": "default-worker", "flavor_id": "m1.large", "image_id": "fcos-38",
                     "node_count": 11, "role": "worker", "is_default": true, "status": "UPDATE_IN_PROGRESS", "stack_id": "s-w",
                     "labels": {"availability_zone": "az-2"}, "version": null, "min_node_count": 1, "max_node_count": null}
                ]})),
            ("GET", "/v1/clusters/c1/nodegroups/ng-w") => versioned("container-infra 1.1", "container-infra 1.11", 200, json!({
                "uuid": "ng-w", "name": "default-worker", "cluster_id": "c1", "role": "worker", "node_count": 11,
                "status": "UPDATE_IN_PROGRESS", "status_reason": null, "version": "v1.28.1", "labels": {}})),
            ("GET", "/v1/clusters/gone") => versioned("container-infra 1.1", "container-infra 1.11", 404, json!({
                "errors": [{"request_id": "", "code": "client", "status": 404, "title": "Cluster gone could not be found",
                            "detail": "Cluster gone could not be found.", "links": []}]})),
            ("POST", p) if p.ends_with("/actions/resize") || p.ends_with("/actions/upgrade") => {
                versioned("container-infra 1.1", "container-infra 1.11", 202, json!({"uuid": "c1"}))
            }
            _ => Reply::status(500),
        }
    })
    .await;
    *base.lock().unwrap() = server.url("");
    server
}

#[test]
fn microversions_parse_and_negotiate() {
    assert_eq!(
        Microversion::parse("container-infra 1.11"),
        Some(Microversion::new(1, 11))
    );
    // What a real Magnum 22 answers (captured from the API and read in its
    // versions.py: the first of its service strings).
    assert_eq!(
        Microversion::parse("container-infrastructure-management 1.12"),
        Some(Microversion::new(1, 12))
    );
    assert_eq!(
        Microversion::parse("container-infrastructure 1.3"),
        Some(Microversion::new(1, 3))
    );
    assert_eq!(Microversion::parse("compute 2.1"), None);
    assert_eq!(Microversion::parse(" 1.2 "), Some(Microversion::new(1, 2)));
    assert_eq!(Microversion::parse("latest"), None);
    assert!(Microversion::new(1, 9) > Microversion::new(1, 10).min(Microversion::new(1, 8)));
    assert_eq!(
        negotiate(Microversion::new(1, 1), Microversion::new(1, 11)).unwrap(),
        Microversion::new(1, 11)
    );
    assert_eq!(
        negotiate(Microversion::new(1, 1), Microversion::new(1, 13)).unwrap(),
        Microversion::new(1, 13)
    );
    assert_eq!(OUR_MAX, Microversion::new(1, 14));
    assert_eq!(
        negotiate(Microversion::new(1, 1), Microversion::new(1, 20)).unwrap(),
        OUR_MAX
    );
    let err = negotiate(Microversion::new(1, 20), Microversion::new(1, 30)).unwrap_err();
    assert!(
        err.to_string()
            .contains("serves container-infra 1.20 to 1.30"),
        "{err}"
    );
}

#[tokio::test]
async fn every_request_carries_the_negotiated_version() {
    let server = magnum_server().await;
    let magnum = client(&server);
    let all: Vec<_> = magnum.list_clusters(Some(2)).try_collect().await.unwrap();
    assert_eq!(
        all.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["c0", "c1", "c2", "c3", "c4"]
    );
    let hits = server.hits();
    // One version probe, then three pages (2 + 2 + 1) following the `next` markers.
    assert_eq!(hits.len(), 4);
    assert_eq!(hits[0].path, "/v1");
    assert_eq!(hits[2].param("marker").as_deref(), Some("c1"));
    assert_eq!(hits[3].param("marker").as_deref(), Some("c3"));
    for h in &hits[1..] {
        assert_eq!(
            h.header("openstack-api-version"),
            Some("container-infra 1.11")
        );
    }
    assert_eq!(
        magnum.version_label().await.unwrap(),
        "container-infra 1.11"
    );
    assert_eq!(server.hit_count(), 4, "the version is negotiated once");
    let c = &all[0];
    assert_eq!(c.driver, DriverKind::Magnum);
    assert_eq!((c.master_count, c.node_count), (3, 10));
    assert_eq!(
        c.coe_version.as_deref(),
        Some("v1.27.8"),
        "from kube_tag when the list has no coe_version"
    );
    assert_eq!(c.stack_id.as_deref(), Some("stack-0"));
}

#[tokio::test]
async fn cluster_show_maps_reasons_and_health() {
    let server = magnum_server().await;
    let magnum = client(&server);
    let c = magnum.get_cluster("c1").await.unwrap();
    assert_eq!(c.status.state, StatusState::Failed);
    assert!(c
        .status_reason
        .as_deref()
        .unwrap()
        .contains("ResourceInError"));
    assert_eq!(c.health, Health::Unhealthy);
    assert_eq!(
        c.health_reason.as_deref(),
        Some("api: ok, k8s-1-node-3.Ready: False")
    );
    assert_eq!(c.api_address.as_deref(), Some("https://172.24.4.10:6443"));
    assert!(c.created_at.is_some());
    assert_eq!(c.updated_at, None);
}

#[tokio::test]
async fn nodegroups_map_zone_flavor_image_version() {
    let server = magnum_server().await;
    let magnum = client(&server);
    let ngs = magnum
        .list_nodegroups("c1", Some(Role::Worker))
        .await
        .unwrap();
    assert_eq!(
        server.hits().last().unwrap().param("role").as_deref(),
        Some("worker")
    );
    assert_eq!(ngs.len(), 2);
    let w = &ngs[1];
    assert_eq!(w.role, Role::Worker);
    assert_eq!(w.cluster_id, "c1");
    assert_eq!(w.zone.as_deref(), Some("az-2"));
    assert_eq!(w.flavor.as_deref(), Some("m1.large"));
    assert_eq!(w.image.as_deref(), Some("fcos-38"));
    assert_eq!(
        (w.node_count, w.min_node_count, w.max_node_count),
        (11, Some(1), None)
    );
    assert!(w.status.is_in_progress());
    assert_eq!(ngs[0].role, Role::Master);
    let one = magnum.get_nodegroup("c1", "ng-w").await.unwrap();
    assert_eq!(one.version.as_deref(), Some("v1.28.1"));
}

#[tokio::test]
async fn resize_and_upgrade_send_magnum_bodies() {
    let server = magnum_server().await;
    let magnum = client(&server);
    let uuid = magnum
        .resize(
            "c1",
            &ResizeRequest {
                node_count: 9,
                nodes_to_remove: vec!["3".into(), "srv-7".into()],
                nodegroup: Some("default-worker".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(uuid, "c1");
    magnum
        .upgrade(
            "c1",
            &UpgradeRequest {
                cluster_template: "tmpl-2".into(),
                max_batch_size: Some(1),
                nodegroup: None,
            },
        )
        .await
        .unwrap();
    let hits = server.hits();
    let resize = &hits[1];
    assert_eq!(resize.path, "/v1/clusters/c1/actions/resize");
    assert_eq!(
        resize.json(),
        json!({"node_count": 9, "nodes_to_remove": ["3", "srv-7"], "nodegroup": "default-worker"})
    );
    assert_eq!(
        resize.header("openstack-api-version"),
        Some("container-infra 1.11")
    );
    assert_eq!(
        hits[2].json(),
        json!({"cluster_template": "tmpl-2", "max_batch_size": 1})
    );
}

#[tokio::test]
async fn magnum_errors_show_the_detail() {
    let server = magnum_server().await;
    let magnum = client(&server);
    let err = magnum.get_cluster("gone").await.unwrap_err();
    assert!(err.is_not_found());
    assert!(
        err.to_string()
            .ends_with("HTTP 404: Cluster gone could not be found."),
        "{err}"
    );
}

#[tokio::test]
async fn old_magnum_refuses_features_without_a_request_and_406_is_explained() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        "/v1" => versioned("container-infra 1.1", "container-infra 1.6", 200, json!({})),
        _ => versioned(
            "container-infra 1.1",
            "container-infra 1.6",
            406,
            json!({"errors": [{"detail": "Version 1.6 was requested but the minor version is not supported"}]}),
        ),
    })
    .await;
    let magnum = client(&server);
    let err = magnum
        .resize("c1", &ResizeRequest::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ApiError::Unsupported(_)));
    assert_eq!(
        err.to_string(),
        "resize needs Magnum container-infra 1.7; this Magnum serves up to 1.6"
    );
    assert_eq!(server.hit_count(), 1, "only the version probe");
    let err = magnum.get_cluster("c1").await.unwrap_err();
    assert_eq!(err.status(), Some(406));
    assert!(
        err.to_string()
            .contains("Magnum refused microversion 'container-infra 1.6'"),
        "{err}"
    );
}

fn fixture(name: &str) -> serde_json::Value {
    let path = format!(
        "{}/../../tests/fixtures/magnum-capi/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A 1.14 Magnum with clusters on Cluster API drivers (fixtures: tests/fixtures/magnum-capi,
/// each citing its sources).
async fn capi_magnum() -> FaultServer {
    FaultServer::start(|hit| {
        let v = |body| versioned("container-infra 1.1", "container-infra 1.14", 200, body);
        match hit.path.as_str() {
            "/v1" => v(json!({"id": "v1"})),
            "/v1/clusters/capi-prod" => v(fixture("cluster-show-1.13-magnum-cluster-api.json")),
            "/v1/clusters/ml-cluster" => v(fixture("cluster-show-1.12-capi-helm.json")),
            "/v1/clusters/capi-prod/nodegroups/default-worker" => {
                v(fixture("nodegroup-show-1.14-magnum-cluster-api.json"))
            }
            "/v1/clustertemplates/tmpl-helm" => v(fixture("clustertemplate-capi-helm.json")),
            _ => Reply::status(500),
        }
    })
    .await
}

#[tokio::test]
async fn cluster_api_clusters_have_no_stack_and_say_their_driver() {
    use crate::model::{CapiCluster, CapiDriver};
    let server = capi_magnum().await;
    let magnum = client(&server);
    let c = magnum.get_cluster("capi-prod").await.unwrap();
    assert_eq!(
        server.hits()[1].header("openstack-api-version"),
        Some("container-infra 1.14"),
        "min(1.14, server max)"
    );
    assert_eq!(c.stack_id, None, "cluster_id kube-7xk2q is no Heat stack");
    assert_eq!(
        c.capi,
        Some(CapiCluster {
            driver: CapiDriver::MagnumClusterApi,
            name: "kube-7xk2q".into()
        })
    );
    assert!(c.status.is_in_progress());
    let ng = magnum
        .get_nodegroup("capi-prod", "default-worker")
        .await
        .unwrap();
    assert_eq!(ng.stack_id, None);
    assert_eq!(
        ng.node_labels
            .get("node.cluster.x-k8s.io/nodegroup")
            .map(String::as_str),
        Some("default-worker")
    );
    assert_eq!(
        ng.node_taints,
        ["dedicated=gpu:NoSchedule", "legacy=x:NoExecute"]
    );
    // capi-helm: the release name's shape tells it; the template read confirms it.
    let mut helm = magnum.get_cluster("ml-cluster").await.unwrap();
    assert_eq!(
        helm.capi.as_ref().map(|k| (k.driver, k.name.as_str())),
        Some((CapiDriver::CapiHelm, "ml-cluster-pyd4ltgh3qbm"))
    );
    let before = server.hit_count();
    magnum.refine_backend(&mut helm).await;
    assert_eq!(server.hit_count(), before + 1, "one template read");
    assert_eq!(helm.capi.map(|k| k.driver), Some(CapiDriver::CapiHelm));
}

#[tokio::test]
async fn heat_backed_clusters_cost_no_template_read() {
    let server = magnum_server().await;
    let magnum = client(&server);
    let mut c = magnum.get_cluster("c1").await.unwrap();
    // The fixture's `stack-1` is not a UUID: a template read is tried, fails (500), and the
    // cluster stays Heat's, as before.
    let before = server.hit_count();
    magnum.refine_backend(&mut c).await;
    assert_eq!(c.stack_id.as_deref(), Some("stack-1"));
    assert!(c.capi.is_none());
    assert!(server.hit_count() > before);
    let mut uuid_backed = c.clone();
    uuid_backed.stack_id = Some("0b8e5b1e-7c3a-4f0e-9a57-2f1d3c4b5a69".into());
    let before = server.hit_count();
    magnum.refine_backend(&mut uuid_backed).await;
    assert_eq!(server.hit_count(), before, "a stack UUID settles it");
}
