//! A Magnum cluster run by a Cluster API driver (the demo's `capi-prod`, vexxhost
//! `magnum-cluster-api` shapes): what Magnum, Heat and Nova show of it, and caldera's
//! headless `clusters`, `nodegroups` and `ips` and the nodes the console's pane streams,
//! all read from Magnum and Nova (no Heat stack exists for it).

use crate::support::cli::{on_cloud as caldera, Caldera};
use crate::support::sim_group;
use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::model::{CapiDriver, Cluster, NodeGroup};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, NodeUpdate};
use caldera::sim::{self, SimHandle, SimOptions};
use futures::StreamExt;

async fn demo() -> SimHandle {
    sim::start(SimOptions::fast("demo", 1.0))
        .await
        .expect("simulator")
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
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
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

    // `why` judges each node group from the same listing of Nova, in the same words: the
    // gpu group failed (exit 6), the workers settled.
    let (code, why, err) = Caldera::cloud(&clouds).args(["why", "capi-prod"]).run();
    assert_eq!(code, Some(6), "{why}\n{err}");
    assert!(
        why.contains("capi-prod/gpu") && why.contains("failed: 1 server(s) in ERROR"),
        "{why}"
    );
    let (code, why, err) = Caldera::cloud(&clouds)
        .args(["why", "capi-prod/default-worker"])
        .run();
    assert_eq!(code, Some(0), "{why}\n{err}");
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
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
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
    // A Magnum cluster on Heat whose update runs (prod-east's rollout) is not upgraded
    // beside it: refused, naming what to look at (was: planned and sent).
    let busy = magnum
        .find_nodegroup("prod-east", "default-worker")
        .await
        .expect("heat-backed target");
    let e = magnum
        .plan_upgrade(&busy, "k8s-v1.31", 2)
        .await
        .expect_err("refused while its update runs");
    assert!(
        e.message
            .contains("UPDATE_IN_PROGRESS: wait for it to settle before upgrading"),
        "{e}"
    );
    // A settled one keeps Magnum's batches.
    let heat_target = magnum
        .find_nodegroup("dev-small", "default-worker")
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

async fn post(sim: &SimHandle, url: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let r = reqwest::Client::new()
        .post(url)
        .header("X-Auth-Token", token(sim).await)
        .header("OpenStack-API-Version", "container-infra 1.14")
        .json(&body)
        .send()
        .await
        .expect("post");
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or_default())
}

/// One server as the test reads Nova: name, status, task, image.
#[derive(Debug, Clone)]
struct Seen {
    id: String,
    name: String,
    status: String,
    task: Option<String>,
    image: String,
}

impl Seen {
    fn up(&self) -> bool {
        self.status == "ACTIVE" && self.task.is_none()
    }
}

/// Every server of the Cluster API cluster `capi`, from Nova (as `capi_nodes` lists them).
async fn servers(sim: &SimHandle, capi: &str) -> Vec<Seen> {
    let url = format!("{}/servers/detail?name=%5E{capi}-", sim.nova_url());
    let body = get(sim, &url, "compute 2.96").await;
    body["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .map(|s| Seen {
            id: s["id"].as_str().unwrap_or_default().into(),
            name: s["name"].as_str().unwrap_or_default().into(),
            status: s["status"].as_str().unwrap_or_default().into(),
            task: s["OS-EXT-STS:task_state"].as_str().map(str::to_string),
            image: s["image"]["id"].as_str().unwrap_or_default().into(),
        })
        .collect()
}

/// The servers of node group `ng` (`None`: the control plane, `{capi}-{kcp}-{r}`).
fn of_group<'a>(all: &'a [Seen], capi: &str, ng: Option<&str>) -> Vec<&'a Seen> {
    all.iter()
        .filter(|s| match ng {
            Some(ng) => s.name.starts_with(&format!("{capi}-{ng}-")),
            None => s.name.split('-').count() == 4,
        })
        .collect()
}

async fn cluster_json(sim: &SimHandle) -> serde_json::Value {
    let url = format!("{}/clusters/capi-prod", sim.magnum_url());
    get(sim, &url, "container-infra 1.14").await
}

/// Removes the demo's stalled gpu machine (the one Nova cannot place) with a resize naming
/// its server id, as magnum-cluster-api takes `nodes_to_remove`, and waits for the cluster
/// to settle: its create never finished, a resize does.
async fn remove_stalled_gpu(sim: &SimHandle, capi: &str) {
    let all = servers(sim, capi).await;
    let gpu = of_group(&all, capi, Some("gpu"));
    let stalled = gpu.iter().find(|s| s.status == "ERROR").expect("stalled");
    let url = format!("{}/clusters/capi-prod/actions/resize", sim.magnum_url());
    let body =
        serde_json::json!({"node_count": 1, "nodegroup": "gpu", "nodes_to_remove": [stalled.id]});
    let (code, reply) = post(sim, &url, body).await;
    assert_eq!(code, 202, "{reply}");
    for _ in 0..400 {
        let all = servers(sim, capi).await;
        if of_group(&all, capi, Some("gpu")).len() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let all = servers(sim, capi).await;
    let left = of_group(&all, capi, Some("gpu"));
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].up() && left[0].name != stalled.name);
    assert_eq!(cluster_json(sim).await["status"], "UPDATE_COMPLETE");
}

fn tokens(name: &str) -> Vec<&str> {
    name.rsplitn(3, '-').collect()
}

/// An upgrade through Magnum's API (nodegroup and max_batch_size given, and ignored as
/// magnum-cluster-api ignores them): every node group's machines are replaced one at a
/// time — a new server building with the new image, then the old one deleting, then gone —
/// the workers' new machines in a new MachineSet; the observation from Nova moves one way
/// and ends completed; `caldera rollout status` shows it headless.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_replaces_machines_one_at_a_time_as_cluster_api_does() {
    use caldera::drivers::Driver;
    use caldera::service::watch::{find_any, observe_any, Watches};
    let (sim, conn) = sim_group::connected(SimOptions::fast("demo", 60.0)).await;
    let drivers = caldera::drivers::resolve::Drivers::new(&conn);
    let target = drivers
        .magnum()
        .expect("magnum")
        .find_nodegroup("capi-prod", "default-worker")
        .await
        .expect("target");
    let capi = cluster_json(&sim).await["cluster_id"]
        .as_str()
        .expect("capi name")
        .to_string();
    assert!(
        find_any(&conn, &target).await.expect("find").is_none(),
        "a stalled create is no update"
    );
    remove_stalled_gpu(&sim, &capi).await;
    let before = servers(&sim, &capi).await;
    let old_workers: Vec<String> = of_group(&before, &capi, Some("default-worker"))
        .iter()
        .map(|s| s.name.clone())
        .collect();
    let old_image = before[0].image.clone();

    let url = format!("{}/clusters/capi-prod/actions/upgrade", sim.magnum_url());
    let body = serde_json::json!({"cluster_template": "k8s-v1.31-capi", "max_batch_size": 3, "nodegroup": "gpu"});
    let (code, reply) = post(&sim, &url, body).await;
    assert_eq!(code, 202, "{reply}");
    // The test moves the clock itself from here, three simulated seconds per look (less than
    // a look took at 60 times real time): a replacement's steps last seconds (a new server's
    // BUILD about 10, the old one's deletion about 2.5), at 60 times real time a few hundred
    // milliseconds, shorter than a loaded machine may take between two looks or to start
    // `caldera rollout status`, and the upgrade could end unseen.
    sim.freeze_clock();
    let new_image = "ubuntu-2204-kube-v1.31.1";
    let c = cluster_json(&sim).await;
    assert_eq!(c["status"], "UPDATE_IN_PROGRESS");
    let update = find_any(&conn, &target)
        .await
        .expect("find")
        .expect("an update under way");
    assert_eq!(
        update.label(),
        "Magnum update through Cluster API, observed from Nova"
    );
    assert!(update.cancel_refusal().is_some());

    // Headless, while it runs.
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("write clouds.yaml");
    let (ok, out, err) = caldera(&clouds, &["rollout", "status", "capi-prod/default-worker"]);
    assert!(ok, "{out}\n{err}");
    let text = format!("{out}{err}");
    assert!(
        text.contains("Magnum update through Cluster API, observed from Nova"),
        "{text}"
    );
    assert!(text.contains("capi-prod/default-worker"), "{text}");
    eprintln!("{text}");

    let watches = Watches::default();
    let groups: [(Option<&str>, usize); 3] =
        [(Some("default-worker"), 5), (None, 3), (Some("gpu"), 1)];
    let mut prev: Vec<Seen> = before.clone();
    let mut done_before = 0;
    let mut finished = false;
    let (mut saw_building, mut saw_deleting, mut saw_replacing) = (false, false, false);
    for _ in 0..800 {
        let all = servers(&sim, &capi).await;
        saw_building |= all
            .iter()
            .any(|s| s.status == "BUILD" && s.image == new_image);
        saw_deleting |= all
            .iter()
            .any(|s| s.task.as_deref() == Some("deleting") && s.image == old_image);
        for (ng, n) in groups {
            let now = of_group(&all, &capi, ng);
            let new_building = now
                .iter()
                .filter(|s| s.image == new_image && !s.up())
                .count();
            assert!(new_building <= 1, "one replacement at a time: {now:?}");
            assert!(now.len() <= n + 1, "a surge of one: {now:?}");
            let available = now.iter().filter(|s| s.status == "ACTIVE").count();
            assert!(available >= n, "none unavailable: {now:?}");
            // An old server goes only once a new one stands for it.
            let gone_old = of_group(&prev, &capi, ng)
                .iter()
                .filter(|p| p.image == old_image && !now.iter().any(|s| s.name == p.name))
                .count();
            let new_up = now
                .iter()
                .filter(|s| s.image == new_image && s.up())
                .count();
            let old_left = now.iter().filter(|s| s.image == old_image).count();
            assert!(gone_old == 0 || new_up + old_left >= n, "{now:?}");
        }
        let status = observe_any(&conn, &watches, &update)
            .await
            .expect("observe");
        assert_eq!(status.nodes.len(), 5, "{:?}", status.nodes);
        assert!(status.done >= done_before, "done goes one way: {status:?}");
        saw_replacing |= status.nodes.iter().any(|n| {
            n.phase == caldera::rollout::NodePhase::Updating
                && n.reason.as_deref().is_some_and(|r| r.contains("replace"))
        });
        done_before = status.done;
        prev = all;
        let settled = cluster_json(&sim).await["status"] == "UPDATE_COMPLETE";
        if settled && status.state == caldera::rollout::RolloutState::Completed {
            finished = true;
            break;
        }
        sim.advance_clock(3000);
    }
    assert!(finished, "the upgrade ends");
    assert!(saw_building && saw_deleting && saw_replacing);
    let all = servers(&sim, &capi).await;
    assert_eq!(all.len(), 5 + 3 + 1);
    assert!(
        all.iter().all(|s| s.image == new_image && s.up()),
        "{all:?}"
    );
    let workers = of_group(&all, &capi, Some("default-worker"));
    // A new MachineSet: the same MachineDeployment token, another MachineSet token.
    let (old_ms, new_ms) = (tokens(&old_workers[0])[1], tokens(&workers[0].name)[1]);
    assert_ne!(old_ms, new_ms);
    assert_eq!(tokens(&old_workers[0])[2], tokens(&workers[0].name)[2]);
    assert!(workers.iter().all(|w| !old_workers.contains(&w.name)));
    let c = cluster_json(&sim).await;
    let ng = get(
        &sim,
        &format!(
            "{}/clusters/capi-prod/nodegroups/default-worker",
            sim.magnum_url()
        ),
        "container-infra 1.14",
    )
    .await;
    assert_eq!(ng["image_id"], new_image);
    let t = get(
        &sim,
        &format!("{}/clustertemplates/k8s-v1.31-capi", sim.magnum_url()),
        "container-infra 1.14",
    )
    .await;
    assert_eq!(c["cluster_template_id"], t["uuid"]);
    let status = observe_any(&conn, &watches, &update)
        .await
        .expect("observe");
    assert_eq!((status.done, status.remaining), (5, 0));
    assert!(status.nodes.iter().all(|n| old_workers.contains(&n.name)));
    sim.shutdown().await;
}

/// A resize adds a machine to the current MachineSet (a new server) and removes the one
/// asked for by its server id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_adds_machines_and_removes_the_chosen_server() {
    let sim = sim::start(SimOptions::fast("demo", 60.0))
        .await
        .expect("simulator");
    let capi = cluster_json(&sim).await["cluster_id"]
        .as_str()
        .expect("capi name")
        .to_string();
    let url = format!("{}/clusters/capi-prod/actions/resize", sim.magnum_url());
    let before = servers(&sim, &capi).await;
    let old: Vec<Seen> = of_group(&before, &capi, Some("default-worker"))
        .into_iter()
        .cloned()
        .collect();
    let (code, _) = post(&sim, &url, serde_json::json!({"node_count": 6})).await;
    assert_eq!(code, 202);
    let mut after = Vec::new();
    for _ in 0..400 {
        let all = servers(&sim, &capi).await;
        after = of_group(&all, &capi, Some("default-worker"))
            .into_iter()
            .cloned()
            .collect();
        if after.len() == 6 && after.iter().all(Seen::up) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(after.len(), 6);
    let added: Vec<&Seen> = after
        .iter()
        .filter(|s| !old.iter().any(|o| o.name == s.name))
        .collect();
    assert_eq!(added.len(), 1);
    // The same MachineSet: only the Machine token differs.
    assert_eq!(tokens(&added[0].name)[1], tokens(&old[0].name)[1]);
    let chosen = old[1].clone();
    let (code, reply) = post(
        &sim,
        &url,
        serde_json::json!({"node_count": 5, "nodes_to_remove": [chosen.id]}),
    )
    .await;
    assert_eq!(code, 202, "{reply}");
    let mut saw_deleting = false;
    for _ in 0..400 {
        let all = servers(&sim, &capi).await;
        let now = of_group(&all, &capi, Some("default-worker"));
        saw_deleting |= now
            .iter()
            .any(|s| s.name == chosen.name && s.task.as_deref() == Some("deleting"));
        if now.len() == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let all = servers(&sim, &capi).await;
    let now = of_group(&all, &capi, Some("default-worker"));
    assert_eq!(now.len(), 5);
    assert!(now.iter().all(|s| s.name != chosen.name));
    assert!(saw_deleting, "ACTIVE with the task deleting before it went");
    sim.shutdown().await;
}

/// `failures` of a Cluster API cluster: no Heat stack, so the verdict comes from its Nova
/// servers, as `nodegroups` gives it (stderr); stdout stays the failures table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_failures_give_the_cluster_api_verdict() {
    let sim = demo().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, sim.clouds_yaml("simcloud")).expect("write clouds.yaml");

    let (ok, out, err) = caldera(&clouds, &["failures", "capi-prod", "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "path,status,type,reason", "{out}");
    assert!(
        err.contains("runs on Cluster API (magnum-cluster-api"),
        "{err}"
    );
    assert!(
        err.contains("node group gpu failed: 1 server(s) in ERROR")
            && err.contains(": No valid host was found."),
        "{err}"
    );
    assert!(!err.contains("node group default-worker"), "{err}");

    // One node group: only its verdict; a healthy one says so.
    let (ok, out, err) = caldera(
        &clouds,
        &["failures", "capi-prod/default-worker", "--format", "json"],
    );
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "[]", "{out}");
    assert!(err.contains("no node group failed or stalled"), "{err}");
    let (ok, _, err) = caldera(&clouds, &["failures", "capi-prod/nope"]);
    assert!(!ok);
    assert!(err.contains("has no node group 'nope'"), "{err}");
    sim.shutdown().await;
}

/// Nova's next link keeps the request's filters (tests/real_nova showed it on a real Nova 34:
/// `?limit=1&name=%5Elk-&marker=...`): following the simulator's links with a `name` filter
/// and `limit=1` reaches exactly the servers one unpaged listing matches, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nova_next_links_keep_the_name_filter() {
    let sim = demo().await;
    let c = get(
        &sim,
        &format!("{}/clusters/capi-prod", sim.magnum_url()),
        "container-infra 1.14",
    )
    .await;
    let capi = c["cluster_id"].as_str().expect("cluster_id").to_string();
    let want: Vec<String> = servers(&sim, &capi)
        .await
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert!(want.len() > 1, "{want:?}");
    let mut url = format!("{}/servers/detail?name=%5E{capi}-&limit=1", sim.nova_url());
    let mut got = Vec::new();
    for _ in 0..=want.len() {
        let page = get(&sim, &url, "compute 2.96").await;
        for s in page["servers"].as_array().expect("servers") {
            let name = s["name"].as_str().unwrap_or_default();
            assert!(
                name.starts_with(&format!("{capi}-")),
                "{name} past the filter"
            );
            got.push(s["id"].as_str().unwrap_or_default().to_string());
        }
        match page["servers_links"][0]["href"].as_str() {
            Some(next) => {
                assert!(
                    next.contains("name=%5E"),
                    "the next link keeps name: {next}"
                );
                url = next.to_string();
            }
            None => break,
        }
    }
    assert_eq!(got, want);
    sim.shutdown().await;
}
