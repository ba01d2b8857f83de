//! `CloudConnection`: everything needed to talk to one cloud — the shared transport and budget,
//! the Heat client and, when the cloud has them, the Magnum and Nova clients.
//!
//! Built either from a clouds.yaml cloud (Keystone token + catalog) or from explicit no-auth
//! URLs for a standalone Heat (`--heat-url`), which identifies itself with `X-Auth-User` /
//! `X-Auth-Project` headers the way Heat's noauth middleware expects.

use crate::api::auth::TokenManager;
use crate::api::heat::HeatClient;
use crate::api::http::{Transport, TransportConfig};
use crate::api::limits::{Purpose, ResponseMemory, Timeouts};
use crate::api::magnum::MagnumClient;
use crate::api::nova::NovaClient;
use crate::api_error::{ApiError, ApiResult};
use crate::config::clouds::permission_warnings;
use crate::config::{CalderaSettings, CloudConfig};
use crate::fetch::{AbortOnDrop, BudgetConfig, RequestBudget, RetryPolicy};
use crate::health::Api;
use crate::report::{BudgetStats, CloudInfo};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Transport settings shared by both ways of connecting.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// First-byte timeout of a service without its own in `timeouts` (Heat by default).
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Per service and purpose timeouts, and the body's (see `api::limits`).
    pub timeouts: Timeouts,
    pub budget: BudgetConfig,
    pub retry: RetryPolicy,
    /// Largest single response body.
    pub max_body_bytes: usize,
    /// The pool all response bodies are held in (by default the process's own).
    pub memory: ResponseMemory,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        let t = TransportConfig::default();
        ConnectOptions {
            timeout: t.timeout,
            connect_timeout: t.connect_timeout,
            timeouts: t.timeouts,
            budget: BudgetConfig::default(),
            retry: RetryPolicy::default(),
            max_body_bytes: t.max_body_bytes,
            memory: t.memory,
        }
    }
}

/// The keys of `--timeout KEY=SECS`.
pub const TIMEOUT_KEYS: &str = "connect, keystone, heat, magnum, nova, probe, follow, body, idle";

impl ConnectOptions {
    /// Applies one `KEY=SECS` (`magnum=5`, `connect=2.5`); the error says what is accepted.
    pub fn set_timeout(&mut self, spec: &str) -> Result<(), String> {
        let (key, value) = spec.split_once('=').ok_or_else(|| {
            format!("--timeout {spec}: expected KEY=SECS, KEY one of {TIMEOUT_KEYS}")
        })?;
        let d = crate::config::bounds::parse_seconds(value, 0.001, 86400.0)
            .map_err(|e| format!("--timeout {spec}: {e}"))?;
        let t = &mut self.timeouts;
        match key.trim().to_ascii_lowercase().as_str() {
            "connect" => self.connect_timeout = d,
            "keystone" => t.set_service(Api::Keystone, d),
            "heat" => t.set_service(Api::Heat, d),
            "magnum" => t.set_service(Api::Magnum, d),
            "nova" => t.set_service(Api::Nova, d),
            "probe" => t.probe = d,
            "follow" => t.follow = d,
            "body" => t.body_base = d,
            "idle" => t.body_idle = d,
            other => {
                return Err(format!(
                    "--timeout {spec}: unknown key '{other}', expected one of {TIMEOUT_KEYS}"
                ))
            }
        }
        Ok(())
    }

    fn transport_config(
        &self,
        verify: bool,
        cacert: Option<std::path::PathBuf>,
    ) -> TransportConfig {
        TransportConfig {
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            timeouts: self.timeouts,
            verify,
            cacert,
            budget: RequestBudget::new(self.budget),
            retry: self.retry,
            max_body_bytes: self.max_body_bytes,
            memory: self.memory.clone(),
        }
    }
}

/// A failed first login, with the cloud's name. Keystone answers a wrong password, a disabled
/// user, an unknown project or an expired application credential alike with a bare 401
/// ("The request you have made requires authentication."), so the message says what to check.
fn login_error(cloud: &CloudConfig, e: ApiError) -> ApiError {
    let name = &cloud.name;
    match e {
        ApiError::Auth(msg) if msg.contains("HTTP 401") => ApiError::Auth(format!(
            "cloud '{name}': {msg} (Keystone gives no reason: check the user, password or \
             application credential, their domains and the project in {}, and that the user \
             is enabled and the credential not expired)",
            cloud.source.display()
        )),
        ApiError::Auth(msg) => ApiError::Auth(format!("cloud '{name}': {msg}")),
        // Transport errors keep their kind (retries, offline handling); they name the URL.
        other => other,
    }
}

/// Endpoints of a cloud without Keystone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoAuthEndpoints {
    /// Including `/v1/{project}`, e.g. `http://127.0.0.1:8004/v1/admin`.
    pub heat_url: String,
    pub magnum_url: Option<String>,
    pub nova_url: Option<String>,
    pub user: String,
    pub project: String,
    /// Sent as `X-Auth-Token` when given. A noauth Heat ignores it for itself but hands it on
    /// to the services it calls for a stack (Nova, Glance, Neutron): without one, a stack of
    /// servers fails "No valid authentication is available" at Heat's first call to Nova.
    pub token: Option<crate::config::Secret>,
}

impl NoAuthEndpoints {
    pub fn heat_only(heat_url: impl Into<String>) -> NoAuthEndpoints {
        NoAuthEndpoints {
            heat_url: heat_url.into(),
            magnum_url: None,
            nova_url: None,
            user: "admin".into(),
            project: "admin".into(),
            token: None,
        }
    }
}

#[derive(Clone)]
pub struct CloudConnection {
    pub heat: HeatClient,
    pub magnum: Option<MagnumClient>,
    pub nova: Option<NovaClient>,
    pub settings: CalderaSettings,
    /// Heat for event followers: the follow timeout on every request.
    follower_heat: HeatClient,
    transport: Transport,
    info: CloudInfo,
    /// What the background probes learned (`container-infra 1.11`).
    probed: Arc<Mutex<Vec<String>>>,
    probes: Option<Arc<Probes>>,
    warnings: Vec<String>,
}

/// The background discovery of optional services; aborted with the last clone of the
/// connection.
struct Probes {
    task: tokio::sync::Mutex<Option<AbortOnDrop<()>>>,
}

impl CloudConnection {
    /// Authenticates with Keystone and finds Heat (required), Magnum and Nova (optional) in the
    /// catalog for the cloud's interface and region.
    pub async fn from_cloud(
        cloud: &CloudConfig,
        opts: &ConnectOptions,
    ) -> ApiResult<CloudConnection> {
        let plain = Transport::new(&opts.transport_config(cloud.verify, cloud.cacert.clone()))?;
        let tokens = TokenManager::new(
            plain.for_service(Api::Keystone),
            &cloud.auth_url,
            cloud.credentials.clone(),
        );
        let token = tokens.token().await.map_err(|e| login_error(cloud, e))?;
        let transport = plain.with_auth(tokens);
        let region = cloud.region_name.as_deref();
        let find = |service: &str| token.catalog.endpoint(service, &cloud.interface, region);
        let heat_url = find("orchestration").ok_or_else(|| {
            let offered = token.catalog.offered("orchestration");
            ApiError::Unsupported(format!(
                "cloud '{}': the service catalog has no orchestration (Heat) endpoint for interface '{}'{}; {} (set region_name and interface in {})",
                cloud.name,
                cloud.interface,
                region.map(|r| format!(" in region '{r}'")).unwrap_or_default(),
                if offered.is_empty() {
                    "it has none at all".to_string()
                } else {
                    format!("it has {}", offered.join(", "))
                },
                cloud.source.display()
            ))
        })?;
        let heat = HeatClient::new(transport.for_service(Api::Heat), &heat_url)?;
        let follower_heat = HeatClient::new(
            transport
                .for_service(Api::Heat)
                .for_purpose(Purpose::Follow),
            &heat_url,
        )?;
        let magnum = find("container-infra")
            .map(|u| MagnumClient::new(transport.for_service(Api::Magnum), &u))
            .transpose()?;
        let nova = find("compute")
            .map(|u| NovaClient::new(transport.for_service(Api::Nova), &u))
            .transpose()?;
        let warnings = permission_warnings(cloud);
        let mut conn = CloudConnection {
            heat,
            magnum,
            nova,
            settings: cloud.caldera.clone(),
            follower_heat,
            transport,
            info: CloudInfo {
                cloud: cloud.name.clone(),
                region: cloud.region_name.clone(),
                project: token
                    .project
                    .as_ref()
                    .map(|p| p.name.clone().unwrap_or_else(|| p.id.clone())),
                api_versions: vec!["heat v1".into()],
                is_simulator: false,
                read_only: cloud.caldera.read_only,
                has_magnum: false,
                services: Vec::new(),
            },
            probed: Arc::default(),
            probes: None,
            warnings,
        };
        conn.probe_magnum();
        Ok(conn)
    }

    /// A standalone Heat (and optionally Magnum/Nova) without Keystone.
    pub async fn no_auth(
        endpoints: &NoAuthEndpoints,
        opts: &ConnectOptions,
    ) -> ApiResult<CloudConnection> {
        let header = |v: &str, what: &str| {
            HeaderValue::from_str(v).map_err(|_| {
                ApiError::Config(crate::config::ConfigError::Invalid(format!(
                    "{what} '{v}' cannot be sent as a header"
                )))
            })
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("x-auth-user"),
            header(&endpoints.user, "user")?,
        );
        headers.insert(
            HeaderName::from_static("x-auth-project"),
            header(&endpoints.project, "project")?,
        );
        if let Some(token) = &endpoints.token {
            // Never echo the token in an error: it is a secret.
            let mut value = HeaderValue::from_str(token.expose()).map_err(|_| {
                ApiError::Config(crate::config::ConfigError::Invalid(
                    "the token cannot be sent as a header (it has characters a header cannot \
                     carry); it is not shown"
                        .into(),
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-auth-token"), value);
        }
        let transport = Transport::new(&opts.transport_config(true, None))?.with_headers(headers);
        let heat = HeatClient::new(transport.for_service(Api::Heat), &endpoints.heat_url)?;
        let follower_heat = HeatClient::new(
            transport
                .for_service(Api::Heat)
                .for_purpose(Purpose::Follow),
            &endpoints.heat_url,
        )?;
        let magnum = endpoints
            .magnum_url
            .as_deref()
            .map(|u| MagnumClient::new(transport.for_service(Api::Magnum), u))
            .transpose()?;
        let nova = endpoints
            .nova_url
            .as_deref()
            .map(|u| NovaClient::new(transport.for_service(Api::Nova), u))
            .transpose()?;
        let mut conn = CloudConnection {
            heat,
            magnum,
            nova,
            settings: CalderaSettings::default(),
            follower_heat,
            transport,
            info: CloudInfo {
                cloud: "standalone".into(),
                region: None,
                project: Some(endpoints.project.clone()),
                api_versions: vec!["heat v1".into()],
                is_simulator: false,
                read_only: false,
                has_magnum: false,
                services: Vec::new(),
            },
            probed: Arc::default(),
            probes: None,
            warnings: Vec::new(),
        };
        conn.probe_magnum();
        Ok(conn)
    }

    /// Negotiates Magnum's microversion in the background, so neither the console's first
    /// frame nor a command that needs only Heat waits for a Magnum that does not answer. The
    /// header shows the version once known, or Magnum's state (the health board) if not; a
    /// command that needs Magnum negotiates again and fails with Magnum's error.
    fn probe_magnum(&mut self) {
        let Some(magnum) = self.magnum.clone() else {
            return;
        };
        self.info.has_magnum = true;
        self.transport.health().expect(Api::Magnum);
        let probed = self.probed.clone();
        let task = tokio::spawn(async move {
            match magnum.version_label().await {
                Ok(label) => {
                    if let Ok(mut p) = probed.lock() {
                        p.push(label);
                    }
                }
                Err(e) => tracing::warn!("Magnum version negotiation failed: {e}"),
            }
        });
        self.probes = Some(Arc::new(Probes {
            task: tokio::sync::Mutex::new(Some(AbortOnDrop(task))),
        }));
    }

    /// Waits for the background probes to end (tests, and commands about those services).
    pub async fn probes_done(&self) {
        let Some(probes) = &self.probes else {
            return;
        };
        let mut task = probes.task.lock().await;
        if let Some(t) = task.as_mut() {
            let _ = (&mut t.0).await;
        }
        *task = None;
    }

    /// The cloud as known now: versions the probes found, each service's last state.
    pub fn info(&self) -> CloudInfo {
        let mut info = self.info.clone();
        if let Ok(p) = self.probed.lock() {
            info.api_versions.extend(p.iter().cloned());
        }
        info.services = self.transport.health().snapshot();
        info
    }

    /// The Heat client for event followers: each request within the follow timeout.
    pub fn follower_heat(&self) -> &HeatClient {
        &self.follower_heat
    }

    pub fn budget(&self) -> BudgetStats {
        self.transport.budget().stats()
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// Things the operator should know at startup (exposed password files, Magnum problems).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Marks this connection as the built-in simulator (the console's header says so).
    pub fn set_simulator(&mut self) {
        self.info.is_simulator = true;
        self.info.cloud = "simulator".into();
    }

    /// Marks the connection read-only (e.g. `--read-only` on the command line).
    pub fn set_read_only(&mut self, read_only: bool) {
        self.info.read_only = read_only || self.settings.read_only;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standalone token is a secret: never in a debug print, nor in the error a token
    /// that cannot be a header gets.
    #[tokio::test]
    async fn the_standalone_token_is_never_printed() {
        let mut endpoints = NoAuthEndpoints::heat_only("http://127.0.0.1:9/v1/admin");
        endpoints.token = Some(crate::config::Secret::new("s3cret-token"));
        assert!(!format!("{endpoints:?}").contains("s3cret"));
        endpoints.token = Some(crate::config::Secret::new("s3cret\nline"));
        let err = CloudConnection::no_auth(&endpoints, &ConnectOptions::default())
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("token cannot be sent"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
    }
}
