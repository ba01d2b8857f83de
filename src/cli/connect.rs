//! Chooses what to talk to: the built-in simulator, standalone no-auth endpoints, or a cloud
//! from clouds.yaml, in that order of explicitness.

use super::args::ConnectArgs;
use crate::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use crate::api::ApiError;
use crate::config::{load_cloud, CloudConfig, ConfigError, DiscoveryEnv};
use crate::fetch::BudgetConfig;

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
        return Ok(Endpoint::NoAuth(endpoints));
    }
    if args.magnum_url.is_some() || args.nova_url.is_some() {
        return Err(ConfigError::Invalid(
            "--magnum-url and --nova-url need --heat-url (standalone mode)".into(),
        ));
    }
    let env = DiscoveryEnv::from_process();
    match load_cloud(&env, args.cloud.as_deref()) {
        Ok(cloud) => Ok(Endpoint::Cloud(Box::new(cloud))),
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

pub fn connect_options(args: &ConnectArgs) -> ConnectOptions {
    ConnectOptions {
        budget: BudgetConfig {
            max_in_flight: args.max_in_flight.max(1),
            max_per_second: (args.max_per_second > 0).then_some(args.max_per_second),
        },
        ..ConnectOptions::default()
    }
}

/// Connects to a non-simulator endpoint.
pub async fn connect(endpoint: &Endpoint, args: &ConnectArgs) -> Result<CloudConnection, ApiError> {
    let options = connect_options(args);
    match endpoint {
        Endpoint::NoAuth(endpoints) => CloudConnection::no_auth(endpoints, &options).await,
        Endpoint::Cloud(cloud) => CloudConnection::from_cloud(cloud, &options).await,
        Endpoint::Simulator => Err(ApiError::Config(ConfigError::Invalid(
            "the simulator is started by the caller".into(),
        ))),
    }
}
