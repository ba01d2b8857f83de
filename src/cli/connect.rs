//! Chooses what to talk to: the built-in simulator, standalone no-auth endpoints, or a cloud
//! from clouds.yaml, in that order of explicitness.

use super::args::ConnectArgs;
use crate::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use crate::api::limits::ResponseMemory;
use crate::config::{load_cloud, CloudConfig, ConfigError, DiscoveryEnv};
use crate::fetch::BudgetConfig;
use crate::sim::{SimHandle, SimOptions};
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};

/// Where the process will get its data from.
#[derive(Debug)]
pub enum Endpoint {
    /// `--simulator`, or nothing configured (the console only).
    Simulator,
    NoAuth(NoAuthEndpoints),
    Cloud(Box<CloudConfig>),
}

/// Decides the endpoint. With `allow_simulator`, a machine with no clouds.yaml at all (and no
/// cloud asked for by name) gets the simulator instead of an error.
pub fn choose(args: &ConnectArgs, allow_simulator: bool) -> Result<Endpoint, ConfigError> {
    if args.simulator {
        return Ok(Endpoint::Simulator);
    }
    if let Some(heat_url) = &args.heat_url {
        let mut endpoints = NoAuthEndpoints::heat_only(heat_url.clone());
        endpoints.magnum_url = args.magnum_url.clone();
        endpoints.nova_url = args.nova_url.clone();
        endpoints.token = args.auth_token.clone().map(crate::config::Secret::new);
        return Ok(Endpoint::NoAuth(endpoints));
    }
    if args.magnum_url.is_some() || args.nova_url.is_some() || args.auth_token.is_some() {
        return Err(ConfigError::Invalid(
            "--magnum-url, --nova-url and --auth-token need --heat-url (standalone mode)".into(),
        ));
    }
    let env = DiscoveryEnv::from_process();
    match load_cloud(&env, args.cloud.as_deref()) {
        Ok(mut cloud) => {
            // `--region` picks the endpoints of another region of the same cloud.
            if let Some(region) = &args.region {
                cloud.region_name = Some(region.clone());
            }
            Ok(Endpoint::Cloud(Box::new(cloud)))
        }
        Err(ConfigError::NotFound { .. }) if allow_simulator && args.cloud.is_none() => {
            Ok(Endpoint::Simulator)
        }
        Err(ConfigError::NotFound { searched }) => Err(ConfigError::NotFound {
            searched: format!(
                "{searched}. Configure a cloud in clouds.yaml (and OS_CLOUD / --cloud), \
                 give --heat-url for a standalone Heat, or use --simulator"
            ),
        }),
        Err(e) => Err(e),
    }
}

pub fn connect_options(args: &ConnectArgs) -> Result<ConnectOptions, ConfigError> {
    let mb = args.max_response_memory.clamp(1, 1 << 30);
    let memory = ResponseMemory::process();
    memory.set_limit(mb.saturating_mul(1024 * 1024));
    let mut options = ConnectOptions {
        budget: BudgetConfig {
            max_in_flight: args.max_in_flight.max(1),
            max_per_second: (args.max_per_second > 0).then_some(args.max_per_second),
        },
        memory,
        ..ConnectOptions::default()
    };
    // One response can never be bigger than all of them together.
    options.max_body_bytes = options.max_body_bytes.min(options.memory.limit());
    for spec in &args.timeouts {
        options.set_timeout(spec).map_err(ConfigError::Invalid)?;
    }
    Ok(options)
}

/// A live connection, and the in-process simulator behind it when there is one (dropping
/// the simulator's handle does not stop it; call `close`).
pub struct Opened {
    pub conn: CloudConnection,
    pub simulator: Option<SimHandle>,
}

impl Opened {
    pub async fn close(self) {
        if let Some(sim) = self.simulator {
            sim.shutdown().await;
        }
    }
}

/// The built-in simulator the console was started on, shared with `:cloud`. It is in no
/// clouds.yaml, so once the console has switched to another cloud nothing leads back to it:
/// the switch ends it (its port and its tasks), and quitting ends it if it still runs.
#[derive(Clone, Default)]
pub struct BuiltInSim(Arc<Mutex<Option<SimHandle>>>);

impl BuiltInSim {
    pub fn new(simulator: Option<SimHandle>) -> BuiltInSim {
        BuiltInSim(Arc::new(Mutex::new(simulator)))
    }

    /// Ends the simulator, if it still runs.
    pub async fn shutdown(&self) {
        let sim = self.0.lock().ok().and_then(|mut slot| slot.take());
        if let Some(sim) = sim {
            sim.shutdown().await;
        }
    }

    /// What a switch away runs once the console has moved (`None`: no simulator runs).
    pub fn retire(&self) -> Option<BoxFuture<'static, ()>> {
        let running = self.0.lock().ok().is_some_and(|slot| slot.is_some());
        let sim = self.clone();
        running.then(|| Box::pin(async move { sim.shutdown().await }) as BoxFuture<'static, ()>)
    }
}

/// Connects to the endpoint; for the simulator, starts it on a free loopback port first and
/// connects through its Keystone, exactly as to a real cloud.
pub async fn open(
    endpoint: &Endpoint,
    args: &ConnectArgs,
) -> Result<Opened, Box<dyn std::error::Error + Send + Sync>> {
    let options = connect_options(args)?;
    match endpoint {
        Endpoint::NoAuth(endpoints) => Ok(Opened {
            conn: CloudConnection::no_auth(endpoints, &options).await?,
            simulator: None,
        }),
        // A Keystone slow to answer is named on stderr by the transport, as every service
        // is (`crate::api::http::announce_waits_on_stderr`, set by the headless commands).
        Endpoint::Cloud(cloud) => Ok(Opened {
            conn: CloudConnection::from_cloud(cloud, &options).await?,
            simulator: None,
        }),
        Endpoint::Simulator => {
            let sim = crate::sim::start(SimOptions {
                heat_native_demo: true,
                ..SimOptions::default()
            })
            .await?;
            let mut conn = match CloudConnection::from_cloud(&sim.cloud_config(), &options).await {
                Ok(conn) => conn,
                Err(e) => {
                    sim.shutdown().await;
                    return Err(e.into());
                }
            };
            conn.set_simulator();
            Ok(Opened {
                conn,
                simulator: Some(sim),
            })
        }
    }
}
