//! Heat-native node groups of our test template on an in-process simulator, as the tests of
//! the headless commands and of Heat's controls and hooks start from (`tests/offline/actions_cli.rs`,
//! `tests/offline/names_cli.rs`, `tests/offline/heat_controls_cli.rs`, `tests/offline/hooks_purged_sim.rs`,
//! `tests/console/console_heat_controls_e2e.rs`). Callers wait for a create in their own way.
//! Also the operator-action scenarios' environment on an empty simulator ([`sim_env`]).

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::api::heat::HeatClient;
use caldera::drivers::heat_native::HeatNativeDriver;
use caldera::drivers::{Driver, Limits, NodeGroupSpec, NodeGroupTarget};
use caldera::model::StackRef;
use caldera::sim::{self, SimHandle, SimOptions};
use caldera::templates::Machines;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::scenarios::Env;

/// A simulator started with `opts`, and a connection to it through its Keystone.
pub async fn connected(opts: SimOptions) -> (SimHandle, CloudConnection) {
    let sim = sim::start(opts).await.expect("simulator starts");
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect to the simulator");
    (sim, conn)
}

/// The simulator's Magnum cluster `one-image` (scenario `magnum-one-image`: its masters and
/// minions read one image parameter): the simulator, a connection, the cluster's stack.
pub async fn one_image_cluster() -> (SimHandle, CloudConnection, StackRef) {
    let (sim, conn) = connected(SimOptions::fast("magnum-one-image", 50.0)).await;
    let magnum = conn.magnum.clone().expect("simulator has Magnum");
    let cluster = magnum.get_cluster("one-image").await.expect("cluster");
    let stack = conn
        .heat
        .resolve(cluster.stack_id.as_deref().expect("cluster stack"))
        .await
        .expect("resolve");
    (sim, conn, stack)
}

/// A simulator started with `opts` and caldera's Heat-native driver on it.
pub async fn sim_driver(opts: SimOptions) -> (SimHandle, HeatNativeDriver) {
    let (sim, conn) = connected(opts).await;
    (
        sim,
        HeatNativeDriver::new(conn.heat.clone(), Machines::Test),
    )
}

/// Asks for node group `nodegroup` of cluster `cluster`, `count` members on image `img-v1`.
pub async fn create_group(
    driver: &HeatNativeDriver,
    cluster: &str,
    nodegroup: &str,
    count: u32,
) -> NodeGroupTarget {
    driver
        .create_nodegroup(&NodeGroupSpec {
            cluster: cluster.into(),
            nodegroup: nodegroup.into(),
            count,
            image: "img-v1".into(),
            limits: Limits::default(),
            action_wait_secs: 0,
        })
        .await
        .expect("create")
}

/// A simulator started with `opts` holding node group `workers` of cluster `cluster`
/// (`count` members): the simulator, its Heat and the group's stack.
pub async fn start_group(
    opts: SimOptions,
    cluster: &str,
    count: u32,
) -> (SimHandle, HeatClient, StackRef) {
    let (sim, driver) = sim_driver(opts).await;
    let t = create_group(&driver, cluster, "workers", count).await;
    (sim, driver.heat().clone(), t.stack.expect("stack"))
}

/// An empty simulator whose clock runs `speed` times real time, and the operator-action
/// scenarios' environment on its Heat: settles polled every 50 ms, none longer than 60 s of
/// the test's time, test machines that take no time per action.
pub async fn sim_env(speed: f64) -> (SimHandle, Env) {
    let (sim, conn) = connected(SimOptions::fast("empty", speed)).await;
    let env = Env::new(
        conn.heat.clone(),
        Duration::from_millis(50),
        Duration::from_secs(60),
        0,
    );
    (sim, env)
}

/// Writes into `dir` a clouds.yaml naming `sim` as cloud `simcloud`, with `caldera` appended
/// as the cloud's `caldera:` settings (empty: none); its path (one file per settings'
/// length, so a test may write several).
pub fn write_clouds_yaml(dir: &Path, sim: &SimHandle, caldera: &str) -> PathBuf {
    let mut text = sim.clouds_yaml("simcloud");
    if !caldera.is_empty() {
        text.push_str(&format!("    caldera: {caldera}\n"));
    }
    let p = dir.join(format!("clouds-{}.yaml", caldera.len()));
    std::fs::write(&p, text).expect("write clouds.yaml");
    p
}
