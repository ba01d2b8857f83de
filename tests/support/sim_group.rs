//! A Heat-native node group of our test template on an in-process simulator, as the tests
//! of Heat's controls and hooks start from (`tests/heat_controls_cli.rs`,
//! `tests/hooks_purged_sim.rs`, `tests/console_heat_controls_e2e.rs`). The caller waits for
//! the create in its own way.

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::api::heat::HeatClient;
use caldera::drivers::heat_native::HeatNativeDriver;
use caldera::drivers::{Driver, Limits, NodeGroupSpec};
use caldera::model::StackRef;
use caldera::sim::{self, SimHandle, SimOptions};
use caldera::templates::Machines;

/// Starts a simulator with `opts` and creates node group `workers` of cluster `cluster` with
/// `count` members on image `img-v1`; returns the simulator, its Heat and the group's stack.
pub async fn start_group(
    opts: SimOptions,
    cluster: &str,
    count: u32,
) -> (SimHandle, HeatClient, StackRef) {
    let sim = sim::start(opts).await.expect("simulator");
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect");
    let driver = HeatNativeDriver::new(conn.heat.clone(), Machines::Test);
    let t = driver
        .create_nodegroup(&NodeGroupSpec {
            cluster: cluster.into(),
            nodegroup: "workers".into(),
            count,
            image: "img-v1".into(),
            limits: Limits::default(),
            action_wait_secs: 0,
        })
        .await
        .expect("create");
    (sim, conn.heat.clone(), t.stack.expect("stack"))
}
