//! The demo's Heat-native cluster, made the way an operator would make one: through the
//! simulator's own Keystone and Heat APIs with caldera's templates (`HeatNativeDriver`),
//! after the server is up. The scenario builder works on the world directly and cannot
//! reach the HTTP API, so this runs as a second step of `sim::start`.

use super::SimHandle;
use crate::api::cloud::{CloudConnection, ConnectOptions};
use crate::drivers::heat_native::HeatNativeDriver;
use crate::drivers::{Driver, Limits, NodeGroupSpec};
use crate::templates::Machines;

/// The Heat-native cluster of the `demo` scenario.
pub const DEMO_CLUSTER: &str = "hn-demo";
pub const DEMO_NODEGROUP: &str = "workers";
pub const DEMO_MEMBERS: u32 = 12;
/// The members' image: the demo's older one, so that a rollout to `fedora-coreos-40` (the
/// Magnum clusters' new template's image) has something to do.
pub const DEMO_IMAGE: &str = "fedora-coreos-39";
/// Simulated seconds each test machine takes to create or update: long enough to watch a
/// node-by-node rollout, short enough that twelve members take about a minute.
pub const DEMO_ACTION_SECS: u32 = 3;

/// Creates `hn-demo` (a cluster stack and one node group of test machines). Returns once
/// Heat accepted the stacks; the members come up as simulated time passes.
pub async fn heat_native_demo(h: &SimHandle) -> Result<(), String> {
    let conn = CloudConnection::from_cloud(&h.cloud_config(), &ConnectOptions::default())
        .await
        .map_err(|e| format!("connecting to the simulator to seed {DEMO_CLUSTER}: {e}"))?;
    let driver = HeatNativeDriver::new(conn.heat.clone(), Machines::Test);
    let seed = |e: crate::service::ServiceError| format!("seeding {DEMO_CLUSTER}: {e}");
    driver.create_cluster(DEMO_CLUSTER).await.map_err(seed)?;
    driver
        .create_nodegroup(&NodeGroupSpec {
            cluster: DEMO_CLUSTER.into(),
            nodegroup: DEMO_NODEGROUP.into(),
            count: DEMO_MEMBERS,
            image: DEMO_IMAGE.into(),
            limits: Limits {
                min: 1,
                max: Some(40),
            },
            action_wait_secs: DEMO_ACTION_SECS,
        })
        .await
        .map_err(seed)?;
    Ok(())
}
