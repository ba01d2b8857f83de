//! `CloudConnection`: everything needed to talk to one cloud — the shared transport and budget,
//! the Heat client and, when the cloud has them, the Magnum and Nova clients.
//!
//! Built either from a clouds.yaml cloud (Keystone token + catalog) or from explicit no-auth
//! URLs for a standalone Heat (`--heat-url`), which identifies itself with `X-Auth-User` /
//! `X-Auth-Project` headers the way Heat's noauth middleware expects.

use crate::api::auth::TokenManager;
use crate::api::error::{ApiError, ApiResult};
use crate::api::heat::HeatClient;
use crate::api::http::{Transport, TransportConfig};
use crate::api::magnum::MagnumClient;
use crate::api::nova::NovaClient;
use crate::config::clouds::permission_warnings;
use crate::config::{CalderaSettings, CloudConfig};
use crate::fetch::{BudgetConfig, RequestBudget, RetryPolicy};
use crate::service::{BudgetStats, CloudInfo};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::time::Duration;

/// Transport settings shared by both ways of connecting.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub budget: BudgetConfig,
    pub retry: RetryPolicy,
    pub max_body_bytes: usize,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        let t = TransportConfig::default();
        ConnectOptions {
            timeout: t.timeout,
            connect_timeout: t.connect_timeout,
            budget: BudgetConfig::default(),
            retry: RetryPolicy::default(),
            max_body_bytes: t.max_body_bytes,
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
}

impl NoAuthEndpoints {
    pub fn heat_only(heat_url: impl Into<String>) -> NoAuthEndpoints {
        NoAuthEndpoints {
            heat_url: heat_url.into(),
            magnum_url: None,
            nova_url: None,
            user: "admin".into(),
            project: "admin".into(),
        }
    }
}

#[derive(Clone)]
pub struct CloudConnection {
    pub heat: HeatClient,
    pub magnum: Option<MagnumClient>,
    pub nova: Option<NovaClient>,
    pub settings: CalderaSettings,
    transport: Transport,
    info: CloudInfo,
    warnings: Vec<String>,
}

impl CloudConnection {
    /// Authenticates with Keystone and finds Heat (required), Magnum and Nova (optional) in the
    /// catalog for the cloud's interface and region.
    pub async fn from_cloud(
        cloud: &CloudConfig,
        opts: &ConnectOptions,
    ) -> ApiResult<CloudConnection> {
        let plain = Transport::new(&TransportConfig {
            timeout: opts.timeout,
            connect_timeout: opts.connect_timeout,
            verify: cloud.verify,
            cacert: cloud.cacert.clone(),
            budget: RequestBudget::new(opts.budget),
            retry: opts.retry,
            max_body_bytes: opts.max_body_bytes,
        })?;
        let tokens = TokenManager::new(plain.clone(), &cloud.auth_url, cloud.credentials.clone());
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
        let heat = HeatClient::new(transport.clone(), &heat_url)?;
        let magnum = find("container-infra")
            .map(|u| MagnumClient::new(transport.clone(), &u))
            .transpose()?;
        let nova = find("compute")
            .map(|u| NovaClient::new(transport.clone(), &u))
            .transpose()?;
        let warnings = permission_warnings(cloud);
        let mut conn = CloudConnection {
            heat,
            magnum,
            nova,
            settings: cloud.caldera.clone(),
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
            },
            warnings,
        };
        conn.probe_magnum().await;
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
        let transport = Transport::new(&TransportConfig {
            timeout: opts.timeout,
            connect_timeout: opts.connect_timeout,
            verify: true,
            cacert: None,
            budget: RequestBudget::new(opts.budget),
            retry: opts.retry,
            max_body_bytes: opts.max_body_bytes,
        })?
        .with_headers(headers);
        let heat = HeatClient::new(transport.clone(), &endpoints.heat_url)?;
        let magnum = endpoints
            .magnum_url
            .as_deref()
            .map(|u| MagnumClient::new(transport.clone(), u))
            .transpose()?;
        let nova = endpoints
            .nova_url
            .as_deref()
            .map(|u| NovaClient::new(transport.clone(), u))
            .transpose()?;
        let mut conn = CloudConnection {
            heat,
            magnum,
            nova,
            settings: CalderaSettings::default(),
            transport,
            info: CloudInfo {
                cloud: "standalone".into(),
                region: None,
                project: Some(endpoints.project.clone()),
                api_versions: vec!["heat v1".into()],
                is_simulator: false,
                read_only: false,
                has_magnum: false,
            },
            warnings: Vec::new(),
        };
        conn.probe_magnum().await;
        Ok(conn)
    }

    /// Negotiates Magnum's microversion for the header. A Magnum that does not answer is kept
    /// (it may come back) but noted in the warnings rather than failing the whole connection.
    async fn probe_magnum(&mut self) {
        let Some(magnum) = &self.magnum else {
            return;
        };
        self.info.has_magnum = true;
        match magnum.version_label().await {
            Ok(label) => self.info.api_versions.push(label),
            Err(e) => self
                .warnings
                .push(format!("Magnum version negotiation failed: {e}")),
        }
    }

    pub fn info(&self) -> CloudInfo {
        self.info.clone()
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

    /// Marks the connection read-only (e.g. `--read-only` on the command line).
    /// Marks this connection as the built-in simulator (the console's header says so).
    pub fn set_simulator(&mut self) {
        self.info.is_simulator = true;
        self.info.cloud = "simulator".into();
    }

    pub fn set_read_only(&mut self, read_only: bool) {
        self.info.read_only = read_only || self.settings.read_only;
    }
}
