//! The built-in simulated cloud: Keystone v3, Heat v1, Magnum v1 and Nova v2.1 served
//! over real HTTP on a loopback port, backed by one in-memory world whose node groups
//! create, update, pause on hooks and fail as simulated time passes.
//!
//! `cargo run` with no cloud configured opens the console on it, and every scale and
//! fault test runs against it, so it answers with the real services' shapes (field
//! names, links, status and reason texts, error bodies, paging) rather than a
//! convenient approximation. Heat behaviour was checked against a real Heat 27
//! (tests/fixtures/heat/ and crates/sim/tests/http/). Where it deviates, the module that does
//! so says why.
//!
//! - Scenarios ([`scenario_names`]): `demo` (a 1000-worker rolling upgrade held by three
//!   pre-update hooks, a scale-out, a stuck update, a failed create, a healthy cluster),
//!   `small`, `empty`, `bench-N`. A name may carry fault modifiers: `demo+flaky+slow`
//!   (see [`scenario::MODIFIERS`]).
//! - Faults at runtime: [`SimHandle::faults`] ([`FaultControl`]): statuses, 429, latency,
//!   dropped connections, truncated bodies, failing and stuck nodes.
//! - Timing: a simulated clock (`speed`), log-normal member durations, Heat's one-second
//!   leaf delay between member starts, output resolution that costs time per member.
//! - Layout: `server` (HTTP, faults, auth), `keystone`, `heat/`, `magnum`, `nova` (wire
//!   formats), `world/` (state and dynamics), `scenario`, `clock`, `faults`.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

// The layers below, named as `crate::api`, `crate::drivers`, … so paths read the same in every
// crate.
pub(crate) use caldera_cloud::{api, config};
pub(crate) use caldera_core::{drivers, service, templates};

pub mod clock;
pub mod faults;
mod front;
mod heat;
mod keystone;
mod magnum;
mod nova;
mod reply;
pub mod scenario;
pub mod seed;
mod shared;
pub mod world;

pub use faults::{Fault, FaultControl, FaultKind};

use front::{ConnKill, KillableListener};
use shared::{ServerConfig, Shared};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use world::{Ids, World, WorldConfig};

#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Where to listen; port 0 picks a free one.
    pub addr: SocketAddr,
    pub scenario: String,
    pub seed: u64,
    /// Simulated seconds per real second.
    pub speed: f64,
    pub token_ttl: Duration,
    pub max_events_per_stack: usize,
    /// What resolving outputs costs per member (stack show, output show), like Heat.
    pub output_cost_per_member: Duration,
    /// What resolving a resource's attributes costs (`with_detail=true`).
    pub detail_cost_per_resource: Duration,
    /// Median simulated durations of a member's create and update (log-normal).
    pub create_median: Duration,
    pub update_median: Duration,
    /// Simulated time between two member starts (Heat 27 starts the leaves of a
    /// traversal one per second); zero starts them all at once.
    pub leaf_delay: Duration,
    /// Faults active from the start.
    pub faults: Vec<Fault>,
    /// The fake user's password and application-credential secret (tests pick unusual
    /// ones so they can search output for them).
    pub password: String,
    pub app_cred_secret: String,
    /// With the `demo` scenario, also create the Heat-native cluster `hn-demo` through the
    /// simulator's own Heat API once it is up ([`seed`]). The console and `caldera sim`
    /// turn it on; it is off by default so that tests of the Magnum-shaped demo world see
    /// exactly what the scenario builds.
    pub heat_native_demo: bool,
    /// Magnum's cluster members get a floating IP each, as with Magnum's
    /// `enable_floating_ip.yaml`: an `OS::Neutron::FloatingIP` on the member's port, read by
    /// the member output `kube_minion_external_ip` (`kube_master_external_ip`). Off: the
    /// members hold no such resource and that output is null.
    pub floating_ips: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            scenario: "demo".into(),
            seed: 42,
            speed: 1.0,
            token_ttl: Duration::from_secs(3600),
            max_events_per_stack: 1000,
            output_cost_per_member: Duration::from_millis(50),
            detail_cost_per_resource: Duration::from_millis(5),
            create_median: Duration::from_secs(90),
            update_median: Duration::from_secs(45),
            leaf_delay: Duration::from_secs(1),
            faults: vec![],
            password: "caldera-sim".into(),
            app_cred_secret: "caldera-sim-secret".into(),
            heat_native_demo: false,
            floating_ips: false,
        }
    }
}

impl SimOptions {
    /// For tests of actions: `scenario` on a clock `speed` times real time, no per-request
    /// cost, member creates and updates of about 10 simulated seconds.
    pub fn fast(scenario: &str, speed: f64) -> SimOptions {
        SimOptions {
            scenario: scenario.into(),
            speed,
            output_cost_per_member: Duration::ZERO,
            detail_cost_per_resource: Duration::ZERO,
            create_median: Duration::from_secs(10),
            update_median: Duration::from_secs(10),
            ..SimOptions::default()
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Scenario(String),
    #[error("the scenario builder failed: {0}")]
    Build(String),
}

pub fn scenario_names() -> &'static [&'static str] {
    scenario::NAMES
}

pub struct SimHandle {
    pub addr: SocketAddr,
    /// `http://addr/identity/v3`
    pub auth_url: String,
    pub username: String,
    pub password: String,
    pub project_name: String,
    pub project_id: String,
    pub user_domain_name: String,
    pub project_domain_name: String,
    pub application_credential_id: String,
    pub application_credential_secret: String,
    faults: FaultControl,
    world: Arc<Mutex<World>>,
    shared: Arc<Shared>,
    stop: CancellationToken,
    server: tokio::task::JoinHandle<()>,
    ticker: tokio::task::JoinHandle<()>,
}

impl SimHandle {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
    pub fn heat_url(&self) -> String {
        format!("http://{}/orchestration/v1/{}", self.addr, self.project_id)
    }
    pub fn magnum_url(&self) -> String {
        format!("http://{}/container-infra/v1", self.addr)
    }
    pub fn nova_url(&self) -> String {
        format!("http://{}/compute/v2.1", self.addr)
    }
    pub fn faults(&self) -> FaultControl {
        self.faults.clone()
    }

    /// Runs `f` on the world (tests use it to check state the API does not show).
    pub fn with_world<T>(&self, f: impl FnOnce(&mut World) -> T) -> T {
        f(&mut shared::lock(&self.world))
    }

    /// Stops the simulated clock where it stands: from now on the world moves only when
    /// [`SimHandle::advance_clock`] says, so a test sees every step of a change however
    /// loaded the machine (a late tick would otherwise run several steps at once).
    pub fn freeze_clock(&self) {
        self.with_world(|w| w.virtual_now = Some(w.now()));
    }

    /// Moves a frozen clock on by `ms` simulated milliseconds and advances the world to it:
    /// a state that lasts longer than `ms` is seen by a look between two advances.
    pub fn advance_clock(&self, ms: i64) {
        self.with_world(|w| {
            w.virtual_now = Some(w.now() + ms);
            w.tick();
        });
    }

    /// The ids of the tokens Keystone has issued (tests look for them where they must not be).
    pub fn issued_tokens(&self) -> Vec<String> {
        shared::lock(&self.shared.tokens).ids()
    }

    /// The world itself, for observers that outlive a borrow of the handle (benchmarks read
    /// every event as it is emitted, before Heat-like purging drops it).
    pub fn world_handle(&self) -> Arc<Mutex<World>> {
        self.world.clone()
    }

    /// The cloud configuration of this simulator (its fake user and project), as if read
    /// from clouds.yaml.
    pub fn cloud_config(&self) -> crate::config::CloudConfig {
        use crate::config::clouds::{DomainRef, ProjectScope, UserRef};
        use crate::config::{CalderaSettings, CloudConfig, Credentials, Secret};
        CloudConfig {
            name: "simulator".into(),
            source: std::path::PathBuf::from("(built-in simulator)"),
            secure_source: None,
            auth_url: self.auth_url.clone(),
            credentials: Credentials::Password {
                user: UserRef::Name {
                    name: self.username.clone(),
                    domain: DomainRef::Name(self.user_domain_name.clone()),
                },
                password: Secret::new(self.password.clone()),
                scope: Some(ProjectScope::Name {
                    name: self.project_name.clone(),
                    domain: DomainRef::Name(self.project_domain_name.clone()),
                }),
            },
            region_name: Some("RegionOne".into()),
            interface: "public".into(),
            verify: true,
            cacert: None,
            caldera: CalderaSettings::default(),
            secret_files: Vec::new(),
        }
    }

    /// A clouds.yaml entry for this simulator.
    pub fn clouds_yaml(&self, cloud: &str) -> String {
        format!(
            "clouds:\n  {cloud}:\n    auth_type: password\n    auth:\n      auth_url: {}\n      username: {}\n      password: {}\n      project_name: {}\n      user_domain_name: {}\n      project_domain_name: {}\n    region_name: RegionOne\n    interface: public\n    identity_api_version: 3\n",
            self.auth_url, self.username, self.password, self.project_name, self.user_domain_name, self.project_domain_name
        )
    }

    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.server.await;
        let _ = self.ticker.await;
    }
}

pub async fn start(opts: SimOptions) -> Result<SimHandle, SimError> {
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .map_err(|source| SimError::Bind {
            addr: opts.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| SimError::Bind {
        addr: opts.addr,
        source,
    })?;
    let base = format!("http://{addr}");
    // Identity ids come from their own stream so they do not shift with the world's.
    let mut idg = Ids::new(opts.seed ^ 0x1d3e_7717);
    let project_id = idg.hex(32);
    let user_id = idg.hex(32);
    let cfg = ServerConfig {
        base: base.clone(),
        token_ttl: opts.token_ttl,
        output_cost_per_member: opts.output_cost_per_member,
        detail_cost_per_resource: opts.detail_cost_per_resource,
        user_name: "operator".into(),
        user_id: user_id.clone(),
        password: opts.password.clone(),
        project_name: "demo".into(),
        project_id: project_id.clone(),
        domain: "Default".into(),
        app_cred_id: idg.hex(32),
        app_cred_secret: opts.app_cred_secret.clone(),
    };
    let wcfg = WorldConfig {
        project_id: project_id.clone(),
        project_name: cfg.project_name.clone(),
        user_id,
        user_name: cfg.user_name.clone(),
        max_events_per_stack: opts.max_events_per_stack,
        create_median_ms: opts.create_median.as_millis() as f64,
        update_median_ms: opts.update_median.as_millis() as f64,
        duration_sigma: 0.35,
        leaf_delay_ms: opts.leaf_delay.as_millis() as i64,
        floating_ips: opts.floating_ips,
    };
    let (scen, mut initial_faults) = scenario::parse(&opts.scenario).map_err(SimError::Scenario)?;
    let scen = scen.to_string();
    // The demo's seeding requests must not meet the scenario's own faults (`demo+flaky`):
    // those are added once it is done.
    let seeding = opts.heat_native_demo && scen == "demo";
    initial_faults.extend(opts.faults.iter().cloned());
    let (seed, speed) = (opts.seed, opts.speed);
    let world = tokio::task::spawn_blocking(move || -> Result<World, String> {
        let now = chrono::Utc::now().timestamp_millis();
        let mut w = World::new(clock::SimClock::new(now, speed), seed, wcfg);
        scenario::build(&mut w, &scen)?;
        // The live clock starts where the scenario's timeline ends: now.
        w.clock = clock::SimClock::new(chrono::Utc::now().timestamp_millis(), speed);
        Ok(w)
    })
    .await
    .map_err(|e| SimError::Build(e.to_string()))?
    .map_err(SimError::Scenario)?;
    let world = Arc::new(Mutex::new(world));
    let faults = FaultControl::new(
        opts.seed,
        world.clone(),
        if seeding {
            Vec::new()
        } else {
            std::mem::take(&mut initial_faults)
        },
    );
    let shared = Arc::new(Shared {
        world: world.clone(),
        faults: faults.clone(),
        tokens: Mutex::new(Default::default()),
        cfg: cfg.clone(),
    });
    let app = axum::Router::new()
        .fallback(front::dispatch)
        .with_state(shared.clone());
    let stop = CancellationToken::new();
    let stop2 = stop.clone();
    let server = tokio::spawn(async move {
        let svc = app.into_make_service_with_connect_info::<ConnKill>();
        let _ = axum::serve(KillableListener(listener), svc)
            .with_graceful_shutdown(async move { stop2.cancelled().await })
            .await;
    });
    let ticker = tokio::spawn(front::ticker(world.clone(), stop.clone()));
    let handle = SimHandle {
        addr,
        auth_url: format!("{base}/identity/v3"),
        username: cfg.user_name,
        password: cfg.password,
        project_name: cfg.project_name,
        project_id,
        user_domain_name: "Default".into(),
        project_domain_name: "Default".into(),
        application_credential_id: cfg.app_cred_id,
        application_credential_secret: cfg.app_cred_secret,
        faults,
        world,
        shared,
        stop,
        server,
        ticker,
    };
    if seeding {
        if let Err(e) = seed::heat_native_demo(&handle).await {
            handle.shutdown().await;
            return Err(SimError::Build(e));
        }
        for f in initial_faults {
            handle.faults.add(f);
        }
    }
    Ok(handle)
}

/// Serves until Ctrl-C, printing where and how to connect.
pub async fn run_cli(opts: SimOptions) -> Result<(), SimError> {
    let scen = opts.scenario.clone();
    let h = start(opts).await?;
    println!(
        "caldera simulated cloud (scenario '{scen}') listening on {}",
        h.base_url()
    );
    println!(
        "auth URL: {}\nusername: {}  password: {}  project: {}  domain: {}",
        h.auth_url, h.username, h.password, h.project_name, h.user_domain_name
    );
    println!(
        "application credential: id {} secret {}",
        h.application_credential_id, h.application_credential_secret
    );
    println!(
        "(these credentials are fake and only valid for this simulator)\n\n# clouds.yaml\n{}",
        h.clouds_yaml("caldera-sim")
    );
    println!(
        "# or in the environment (openstack CLI):\nexport OS_AUTH_URL={} OS_USERNAME={} OS_PASSWORD={} OS_PROJECT_NAME={} OS_USER_DOMAIN_NAME={} OS_PROJECT_DOMAIN_NAME={} OS_IDENTITY_API_VERSION=3\n",
        h.auth_url, h.username, h.password, h.project_name, h.user_domain_name, h.project_domain_name
    );
    let mods: Vec<String> = scenario::MODIFIERS
        .iter()
        .map(|(k, v)| format!("+{k} ({v})"))
        .collect();
    println!(
        "scenarios: {}; modifiers: {}",
        scenario_names().join(", "),
        mods.join(", ")
    );
    println!("Ctrl-C stops the simulator.");
    let _ = tokio::signal::ctrl_c().await;
    h.shutdown().await;
    Ok(())
}
