//! A Magnum cluster run by a Cluster API driver (the demo's `capi-prod`, vexxhost
//! `magnum-cluster-api` shapes): what Magnum, Heat and Nova show of it, and caldera's
//! headless `clusters`, `nodegroups` and `ips` and the nodes the console's pane streams,
//! all read from Magnum and Nova (no Heat stack exists for it).

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::cli::connect::simulator_cloud;
use caldera::model::{CapiDriver, Cluster, NodeGroup};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, NodeUpdate};
use caldera::sim::{self, SimHandle, SimOptions};
use futures::StreamExt;
use std::path::Path;
use std::process::{Command, Output};

async fn demo() -> SimHandle {
    sim::start(SimOptions::fast("demo", 1.0))
        .await
        .expect("simulator")
}

fn caldera(clouds: &Path, args: &[&str]) -> (bool, String, String) {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_caldera"))
        .env("OS_CLIENT_CONFIG_FILE", clouds)
        .env("OS_CLOUD", "simcloud")
        .env("XDG_STATE_HOME", clouds.parent().expect("dir"))
        .args(args)
        .output()
        .expect("run caldera");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A token from the simulator's Keystone, as any client gets one.
async fn token(sim: &SimHandle) -> String {
    let body = serde_json::json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": sim.username, "domain": {"name": sim.user_domain_name},
            "password": sim.password}}},
        "scope": {"project": {"name": sim.project_name, "domain": {"name": sim.project_domain_name}}}}});
    let r = reqwest::Client::new()
        .post(format!("{}/auth/tokens", sim.auth_url))
        .json(&body)
        .send()
        .await
        .expect("token");
    r.headers()["x-subject-token"]
        .to_str()
        .expect("token header")
        .to_string()
}

async fn get(sim: &SimHandle, url: &str, version: &str) -> serde_json::Value {
    let mut req = reqwest::Client::new()
        .get(url)
        .header("X-Auth-Token", token(sim).await);
    if !version.is_empty() {
        req = req.header("OpenStack-API-Version", version);
    }
    req.send().await.expect("get").json().await.expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn magnum_shows_a_cluster_api_name_and_heat_no_stack() {
    let sim = demo().await;
    let cluster_url = format!("{}/clusters/capi-prod", sim.magnum_url());
    let c = get(&sim, &cluster_url, "container-infra 1.14").await;
    let name = c["cluster_id"]
        .as_str()
        .expect("cluster_id at 1.13+")
        .to_string();
    assert!(
        name.starts_with("kube-") && name.len() == 10,
        "magnum-cluster-api's name: {name}"
    );
    assert!(c.get("stack_id").is_none(), "1.13 replaces stack_id: {c}");
    assert_eq!(c["node_addresses"], serde_json::json!([]));
    // One gpu machine cannot be placed: a Cluster API create never fails, it stalls.
    assert_eq!(c["status"], "CREATE_IN_PROGRESS");
    let reason = c["status_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("No valid host"), "{reason}");
    let old = get(&sim, &cluster_url, "container-infra 1.12").await;
    assert_eq!(old["stack_id"].as_str(), Some(name.as_str()));
    let ng = get(
        &sim,
        &format!("{cluster_url}/nodegroups/default-worker"),
        "container-infra 1.14",
    )
    .await;
    assert!(ng["stack_id"].is_null());
    assert_eq!(
        ng["node_labels"]["node.cluster.x-k8s.io/nodegroup"],
        "default-worker"
    );
    // Heat knows none of it.
    let stacks = get(
        &sim,
        &format!("{}/stacks?show_nested=true", sim.heat_url()),
        "",
    )
    .await;
    let listed = stacks["stacks"].as_array().expect("stacks");
    assert!(!listed.is_empty(), "Heat lists the other clusters' stacks");
    assert!(
        listed.iter().all(|s| !s["stack_name"]
            .as_str()
            .unwrap_or_default()
            .starts_with("capi-prod")),
        "Heat lists no stack of capi-prod"
    );
    sim.shutdown().await;
}

async fn capi_cluster(service: &LiveService) -> (Cluster, Vec<NodeGroup>) {
    let clusters = service.list_clusters().await.expect("clusters");
    let c = clusters
        .into_iter()
        .find(|c| c.name == "capi-prod")
        .expect("capi-prod listed");
    let groups = service.list_nodegroups(c.clone()).await.expect("groups");
    (c, groups)
}

async fn nodes(service: &LiveService, g: &NodeGroup) -> (Vec<caldera::model::Node>, usize) {
    let (nodes, addresses, _) = nodes_and_failures(service, g).await;
    (nodes, addresses)
}

async fn nodes_and_failures(
    service: &LiveService,
    g: &NodeGroup,
) -> (Vec<caldera::model::Node>, usize, Vec<String>) {
    let mut stream = service.stream_nodes(g.clone());
    let mut nodes = Vec::new();
    let mut addresses = 0;
    let mut failed = Vec::new();
    let mut done = false;
    while let Some(u) = stream.next().await {
        match u.expect("node update") {
            NodeUpdate::Members(n) => nodes = n,
            NodeUpdate::Address(_) => addresses += 1,
            NodeUpdate::AddressFailed { member, .. } => failed.push(member),
            NodeUpdate::Done => done = true,
            _ => {}
        }
    }
    assert!(done, "the stream settles");
    (nodes, addresses, failed)
}

/// What the console's clusters and nodes panes read (the same `LiveService`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nodes_pane_reads_nodes_from_nova() {
    let sim = demo().await;
    let conn = CloudConnection::from_cloud(&simulator_cloud(&sim), &ConnectOptions::default())
        .await
        .expect("connect");
    let service = LiveService::new(conn);
    let (c, groups) = capi_cluster(&service).await;
    let capi = c.capi.clone().expect("a Cluster API cluster");
    assert_eq!(capi.driver, CapiDriver::MagnumClusterApi);
    assert_eq!(c.stack_id, None);
    assert_eq!(groups.len(), 3);
    assert!(groups
        .iter()
        .all(|g| g.capi.as_ref() == Some(&capi) && g.stack_id.is_none()));
    let by_name = |n: &str| groups.iter().find(|g| g.name == n).expect("group").clone();

    let (workers, addressed) = nodes(&service, &by_name("default-worker")).await;
    assert_eq!(workers.len(), 5);
    assert_eq!(addressed, 5);
    let prefix = format!("{}-default-worker-", capi.name);
    for n in &workers {
        assert!(n.name.starts_with(&prefix), "{}", n.name);
        assert_eq!(n.status.raw, "ACTIVE");
        assert_eq!(n.image.as_deref(), Some("ubuntu-2204-kube-v1.30.2"));
        assert!(n.since.is_some());
    }
    let (masters, _) = nodes(&service, &by_name("default-master")).await;
    assert_eq!(masters.len(), 3);
    assert!(masters.iter().all(|n| !n.name.contains("default-worker")));
    // The stalled group: one machine in ERROR with Nova's fault, one ready.
    let (gpu, addressed, no_address) = nodes_and_failures(&service, &by_name("gpu")).await;
    assert_eq!(gpu.len(), 2);
    assert_eq!(addressed, 1);
    let failed: Vec<_> = gpu.iter().filter(|n| n.status.is_failed()).collect();
    assert_eq!(failed.len(), 1, "{gpu:?}");
    assert!(failed[0]
        .status_reason
        .as_deref()
        .is_some_and(|r| r.contains("No valid host")));
    assert_eq!(
        no_address,
        [failed[0].name.clone()],
        "the unplaced server has no address"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_clusters_nodegroups_and_ips() {
    let sim = demo().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("write clouds.yaml");

    let (ok, out, err) = caldera(&clouds, &["clusters", "--format", "csv"]);
    assert!(ok, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("capi-prod,"))
        .unwrap_or_else(|| panic!("capi-prod listed: {out}"));
    assert!(row.contains("CREATE_IN_PROGRESS"), "{row}");
    assert!(
        err.contains("capi-prod (magnum-cluster-api, kube-"),
        "{err}"
    );

    let (ok, out, err) = caldera(&clouds, &["nodegroups", "capi-prod", "--format", "csv"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("runs on Cluster API (magnum-cluster-api"),
        "{err}"
    );
    // The cluster says CREATE_IN_PROGRESS; its gpu server in ERROR says it failed.
    assert!(
        err.contains("node group gpu failed: 1 server(s) in ERROR")
            && err.contains("-gpu-")
            && err.contains(": No valid host was found."),
        "{err}"
    );
    assert!(!err.contains("node group default-worker"), "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows.iter().all(|r| r.ends_with(',')), "no stack_id: {out}");

    let (ok, out, err) = caldera(
        &clouds,
        &["ips", "capi-prod/default-worker", "--format", "csv"],
    );
    assert!(ok, "{err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 5, "{out}\n{err}");
    for r in &rows {
        let cols: Vec<&str> = r.split(',').collect();
        assert_eq!(cols[0], "capi-prod/default-worker");
        assert!(
            cols[1].starts_with("kube-") && cols[1].contains("-default-worker-"),
            "{r}"
        );
        assert!(cols[3].starts_with("10."), "{r}");
    }
    assert!(err.contains("5/5 addresses"), "{err}");

    // Every node group: the gpu machine Nova could not place has no address, said once.
    let (ok, out, err) = caldera(&clouds, &["ips", "capi-prod", "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().skip(1).count(), 3 + 5 + 1, "{out}\n{err}");
    assert!(err.contains("9/10 addresses"), "{err}");
    assert!(
        err.contains("1 server(s) without a fixed address yet"),
        "{err}"
    );

    // Events: there is no Heat stack to follow, and it says why.
    let (ok, _, err) = caldera(&clouds, &["events", "capi-prod"]);
    assert!(!ok);
    assert!(err.contains("runs on Cluster API"), "{err}");
    sim.shutdown().await;
}

/// The Magnum driver (what scale/upgrade plans build on) lists a Cluster API node group's
/// nodes from Nova and sends `nodes_to_remove` as the driver reads it: Nova server ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_lists_nodes_and_removes_chosen_ones_by_server_id() {
    use caldera::drivers::resolve::Drivers;
    use caldera::drivers::{Driver, ScaleRequest};
    let sim = demo().await;
    let conn = CloudConnection::from_cloud(&simulator_cloud(&sim), &ConnectOptions::default())
        .await
        .expect("connect");
    let drivers = Drivers::new(&conn);
    let magnum = drivers.magnum().expect("magnum");
    let target = magnum
        .find_nodegroup("capi-prod", "default-worker")
        .await
        .expect("target");
    assert_eq!(target.stack, None);
    let nodes = magnum.list_nodes(&target).await.expect("nodes");
    assert_eq!(nodes.len(), 5);
    let chosen = nodes[2].name.clone();
    let id = sim.with_world(|w| {
        w.groups
            .iter()
            .flat_map(|g| g.members.values())
            .find(|m| m.server_name == chosen)
            .map(|m| m.server_id.clone())
            .expect("server")
    });
    let plan = magnum
        .plan_scale(
            &target,
            &ScaleRequest {
                count: None,
                remove: vec![chosen.clone()],
            },
        )
        .await
        .expect("plan");
    assert_eq!((plan.from, plan.to), (5, 4));
    assert_eq!(plan.removed, std::slice::from_ref(&id));
    let body = &plan.calls[0].body;
    assert!(
        body.contains(&format!("\"nodes_to_remove\":[\"{id}\"]")),
        "{body}"
    );
    // A node of another group is refused before anything is sent.
    let gpu = sim.with_world(|w| {
        w.groups
            .iter()
            .flat_map(|g| g.members.values())
            .find(|m| m.server_name.contains("-gpu-"))
            .map(|m| m.server_name.clone())
            .expect("gpu server")
    });
    let e = magnum
        .plan_scale(
            &target,
            &ScaleRequest {
                count: None,
                remove: vec![gpu],
            },
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("not a node of default-worker"), "{e}");

    // An upgrade plan says what the driver does with it: the whole cluster, whatever node
    // group and batch size are asked for.
    let plan = magnum
        .plan_upgrade(&target, "k8s-v1.31", 2)
        .await
        .expect("upgrade plan");
    assert_eq!(plan.capi, Some(CapiDriver::MagnumClusterApi));
    let head = &plan.lines()[0];
    assert!(
        head.contains("magnum-cluster-api: the whole cluster, every node group replaced node by node by Cluster API;")
            && head.contains("node group default-worker and batch size 2 are ignored"),
        "{head}"
    );
    assert!(!head.contains("batches run by Magnum"), "{head}");
    // A Magnum cluster on Heat keeps Magnum's batches.
    let heat_target = magnum
        .find_nodegroup("prod-east", "default-worker")
        .await
        .expect("heat-backed target");
    let plan = magnum
        .plan_upgrade(&heat_target, "k8s-v1.31", 2)
        .await
        .expect("upgrade plan");
    assert_eq!(plan.capi, None);
    assert!(plan.lines()[0].contains("2 node(s) at a time, batches run by Magnum"));
    sim.shutdown().await;
}
