//! The fleet: the clusters of every cloud in clouds.yaml at once.
//!
//! Each cloud is asked on its own: its own connection (so its own request budget, token and
//! timeouts), and a bound on the whole look (authenticate, find the endpoints, list the
//! clusters). A cloud that is down, slow or refuses the credentials becomes one row saying
//! so; it never holds up the others, and the answers stream in the order they come.
//!
//! A connection, once made, is kept for the next scans (the console scans every minute):
//! Keystone is asked for a token on the first scan, then only when the token nears its
//! expiry or a call answers 401 (the connection's token manager renews it). A cloud that
//! could not be logged in to (Keystone down, the credentials refused) has no connection to
//! keep, so the next scan tries it afresh; one whose credentials are refused later loses
//! its connection. A failed listing (Heat down, too slow) keeps it: its token is still good.

use crate::api::cloud::{CloudConnection, ConnectOptions};
use crate::config::clouds::list_clouds;
use crate::config::{load_cloud, CloudConfig, ConfigError, DiscoveryEnv};
use crate::model::{short_duration, state_since, Cluster, DriverKind};
use crate::report::{ErrorKind, ServiceError};
use crate::service::live::LiveService;
use crate::service::CloudService;
use caldera_cloud::api_error::{self, ApiError};
use chrono::{DateTime, Utc};
use futures::stream::{BoxStream, FuturesUnordered, StreamExt};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long one cloud may take to answer, by default: a Keystone that does not answer
/// costs the fleet this much, not the 60 s a single-cloud command waits.
pub const DEFAULT_CLOUD_TIMEOUT: Duration = Duration::from_secs(20);

/// What one cloud answered.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetAnswer {
    Clusters(Vec<Cluster>),
    /// Keystone refused the credentials (or the token could not be had).
    AuthFailed(String),
    /// Nothing usable in time: refused, timed out, an HTTP error, no Heat endpoint.
    Unreachable(String),
    /// Its clouds.yaml entry cannot be used as written.
    BadConfig(String),
}

/// One cloud's answer, named.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetReport {
    pub cloud: String,
    pub region: Option<String>,
    pub answer: FleetAnswer,
}

/// One line of the fleet: a cluster of a cloud, or a cloud that gave none (`cluster` empty,
/// `status` saying why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetRow {
    pub cloud: String,
    pub region: String,
    pub cluster: String,
    pub status: String,
    /// How long in this status (`12m`), empty when unknown.
    pub in_state: String,
    /// Since when in this status (what `in_state` counts from, and what the console sorts
    /// by: `3h` is longer than `12m`, whatever the text says), `None` when unknown.
    pub since: Option<DateTime<Utc>>,
    pub health: String,
    pub masters: Option<u32>,
    pub workers: Option<u32>,
    pub driver: String,
    /// Whether the cloud answered (a cluster's row, or `no clusters`); `false` for a cloud
    /// unreachable, refusing the credentials or misconfigured.
    pub answered: bool,
}

impl FleetRow {
    /// `masters/workers` (`3/12`), empty for a cloud's own row.
    pub fn counts(&self) -> String {
        match (self.masters, self.workers) {
            (Some(m), Some(w)) => format!("{m}/{w}"),
            _ => String::new(),
        }
    }

    /// Whether this row says a cloud gave no answer (rather than listing a cluster).
    pub fn is_cloud_problem(&self) -> bool {
        !self.answered
    }
}

/// The driver column: Cluster API drivers by name, else Magnum or caldera's Heat-native.
pub fn driver_label(c: &Cluster) -> String {
    match (&c.capi, c.driver) {
        (Some(k), _) => k.driver.as_str().to_string(),
        (None, DriverKind::Magnum) => "magnum".into(),
        (None, DriverKind::HeatNative) => "heat-native".into(),
    }
}

impl FleetReport {
    /// Its rows: one per cluster; a cloud with no cluster or no answer is one row saying so.
    pub fn rows(&self, now: DateTime<Utc>) -> Vec<FleetRow> {
        let region = self.region.clone().unwrap_or_default();
        let cloud_row = |status: String, answered: bool| FleetRow {
            cloud: self.cloud.clone(),
            region: region.clone(),
            cluster: String::new(),
            status,
            in_state: String::new(),
            since: None,
            health: String::new(),
            masters: None,
            workers: None,
            driver: String::new(),
            answered,
        };
        let clusters = match &self.answer {
            FleetAnswer::Clusters(c) if c.is_empty() => {
                return vec![cloud_row("no clusters".into(), true)]
            }
            FleetAnswer::Clusters(c) => c,
            FleetAnswer::AuthFailed(why) => {
                return vec![cloud_row(format!("auth failed: {why}"), false)]
            }
            FleetAnswer::Unreachable(why) => {
                return vec![cloud_row(format!("unreachable: {why}"), false)]
            }
            FleetAnswer::BadConfig(why) => {
                return vec![cloud_row(format!("bad config: {why}"), false)]
            }
        };
        clusters
            .iter()
            .map(|c| {
                let since = state_since(c.created_at, c.updated_at);
                FleetRow {
                    cloud: self.cloud.clone(),
                    region: region.clone(),
                    cluster: c.name.clone(),
                    status: c.status.raw.clone(),
                    in_state: since
                        .map(|t| short_duration((now - t).num_seconds()))
                        .unwrap_or_default(),
                    since,
                    health: c.health.as_str().to_string(),
                    masters: Some(c.master_count),
                    workers: Some(c.node_count),
                    driver: driver_label(c),
                    answered: true,
                }
            })
            .collect()
    }
}

/// Where fleet answers come from: clouds.yaml and the network, or a fake in tests.
pub trait FleetSource: Send + Sync {
    /// Asks every cloud; each answer is yielded as it comes, then the stream ends.
    fn scan(&self) -> BoxStream<'static, FleetReport>;
}

/// The clouds of clouds.yaml, each entry loaded (or why it cannot be), with the connection
/// the last scan made to it.
pub struct LiveFleet {
    clouds: Vec<FleetCloud>,
    options: ConnectOptions,
    per_cloud: Duration,
}

/// One cloud of the fleet: its entry, and its connection once one scan made it.
struct FleetCloud {
    name: String,
    config: Result<CloudConfig, String>,
    session: Session,
}

/// A cloud's kept connection (token, catalog, budget), shared by the scans. The lock is
/// only held to take a copy or put one back, never across a request.
#[derive(Clone, Default)]
struct Session(Arc<Mutex<Option<LiveService>>>);

impl Session {
    fn get(&self) -> Option<LiveService> {
        self.0.lock().ok()?.clone()
    }

    fn keep(&self, service: Option<LiveService>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = service;
        }
    }
}

impl LiveFleet {
    /// Every cloud of the clouds.yaml `env` finds; `options` are each connection's (each gets
    /// its own budget from them), `per_cloud` bounds each cloud's whole answer.
    pub fn discover(
        env: &DiscoveryEnv,
        options: ConnectOptions,
        per_cloud: Duration,
    ) -> Result<LiveFleet, ConfigError> {
        let (_, names) = list_clouds(env)?;
        let clouds = names
            .into_iter()
            .map(|name| {
                let config = load_cloud(env, Some(&name)).map_err(|e| e.to_string());
                FleetCloud {
                    name,
                    config,
                    session: Session::default(),
                }
            })
            .collect();
        Ok(LiveFleet {
            clouds,
            options,
            per_cloud,
        })
    }

    /// The cloud names, in clouds.yaml's order.
    pub fn names(&self) -> Vec<String> {
        self.clouds.iter().map(|c| c.name.clone()).collect()
    }
}

impl FleetSource for LiveFleet {
    fn scan(&self) -> BoxStream<'static, FleetReport> {
        let asks: FuturesUnordered<_> = self
            .clouds
            .iter()
            .map(|cloud| {
                let name = cloud.name.clone();
                let ask = Ask {
                    name: name.clone(),
                    config: cloud.config.clone(),
                    session: cloud.session.clone(),
                    options: self.options.clone(),
                    per_cloud: self.per_cloud,
                };
                // Each cloud on its own task: a slow TLS handshake on one cannot starve the
                // others' polling.
                let task = tokio::spawn(ask.run());
                async move {
                    task.await.unwrap_or_else(|e| FleetReport {
                        cloud: name,
                        region: None,
                        answer: FleetAnswer::Unreachable(format!("the look failed: {e}")),
                    })
                }
            })
            .collect();
        asks.boxed()
    }
}

/// One cloud's look in one scan: everything it needs, owned, so it runs on its own task.
struct Ask {
    name: String,
    config: Result<CloudConfig, String>,
    session: Session,
    options: ConnectOptions,
    per_cloud: Duration,
}

impl Ask {
    /// The cloud's answer within `per_cloud` (connecting, when it has no connection yet,
    /// counts against the bound).
    async fn run(self) -> FleetReport {
        let cloud = match self.config {
            Ok(c) => c,
            Err(why) => {
                return FleetReport {
                    cloud: self.name,
                    region: None,
                    answer: FleetAnswer::BadConfig(why),
                }
            }
        };
        let region = cloud.region_name.clone();
        let look = list_one(&cloud, &self.options, &self.session);
        let answer = match tokio::time::timeout(self.per_cloud, look).await {
            Ok(answer) => answer,
            Err(_) => FleetAnswer::Unreachable(format!(
                "no answer within {}",
                crate::api::limits::human(self.per_cloud)
            )),
        };
        FleetReport {
            cloud: self.name,
            region,
            answer,
        }
    }
}

/// Lists the cloud's clusters on its kept connection, or on a new one (kept for the next
/// scans once it works). A refusal of the credentials drops the kept connection: the next
/// scan logs in afresh; any other failure (Heat down, a timeout) keeps it, its token still
/// good.
async fn list_one(cloud: &CloudConfig, options: &ConnectOptions, session: &Session) -> FleetAnswer {
    let service = match session.get() {
        Some(service) => service,
        None => match connect(cloud, options).await {
            Ok(service) => {
                session.keep(Some(service.clone()));
                service
            }
            Err(answer) => return answer,
        },
    };
    let answer = match service.list_clusters().await {
        Ok(clusters) => FleetAnswer::Clusters(clusters),
        Err(e) => from_service_error(e),
    };
    if matches!(
        answer,
        FleetAnswer::AuthFailed(_) | FleetAnswer::BadConfig(_)
    ) {
        session.keep(None);
    }
    answer
}

/// Logs in to the cloud and finds its endpoints; a failure is the cloud's answer.
async fn connect(
    cloud: &CloudConfig,
    options: &ConnectOptions,
) -> Result<LiveService, FleetAnswer> {
    match CloudConnection::from_cloud(cloud, options).await {
        Ok(conn) => Ok(LiveService::new(conn)),
        Err(ApiError::Auth(why)) => Err(FleetAnswer::AuthFailed(auth_reason(&cloud.name, &why))),
        Err(ApiError::Config(e)) => Err(FleetAnswer::BadConfig(e.to_string())),
        Err(ApiError::Transport {
            url, kind, detail, ..
        }) => Err(FleetAnswer::Unreachable(transport_reason(
            &url,
            &kind.to_string(),
            &detail,
        ))),
        Err(e) => Err(FleetAnswer::Unreachable(e.to_string())),
    }
}

/// A fleet row is one line: the endpoint and the innermost cause (`connection failed at
/// 127.0.0.1:5000: Connection refused (os error 111)`), not reqwest's whole chain.
fn transport_reason(url: &str, kind: &str, detail: &str) -> String {
    let at = url::Url::parse(url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            Some(match u.port_or_known_default() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            })
        })
        .unwrap_or_else(|| api_error::redact_url(url));
    let cause = detail.rsplit(": ").next().unwrap_or(detail);
    format!("{kind} at {at}: {cause}")
}

/// Keystone's refusal without the cloud's name (the row has it) and, for a bare 401, the
/// short version of the advice `caldera --cloud NAME` prints in full.
fn auth_reason(cloud: &str, why: &str) -> String {
    let why = why
        .strip_prefix(&format!("cloud '{cloud}': "))
        .unwrap_or(why);
    if why.contains("HTTP 401") {
        return "Keystone answered HTTP 401 (check this cloud's credentials in clouds.yaml)".into();
    }
    why.to_string()
}

fn from_service_error(e: ServiceError) -> FleetAnswer {
    match e.kind {
        ErrorKind::Auth => FleetAnswer::AuthFailed(e.message),
        ErrorKind::Config => FleetAnswer::BadConfig(e.message),
        _ => FleetAnswer::Unreachable(e.message),
    }
}

/// A fixed list of answers, yielded in order, each after its delay since the one before
/// (tests and snapshots: the order is the list's, whatever the machine's load).
pub struct FixedFleet(pub Vec<(Duration, FleetReport)>);

impl FleetSource for FixedFleet {
    fn scan(&self) -> BoxStream<'static, FleetReport> {
        futures::stream::iter(self.0.clone())
            .then(|(after, report)| async move {
                tokio::time::sleep(after).await;
                report
            })
            .boxed()
    }
}

/// A shared fleet source.
pub type SharedFleet = Arc<dyn FleetSource>;

#[cfg(test)]
mod tests {
    use super::*;

    fn report(answer: FleetAnswer) -> FleetReport {
        FleetReport {
            cloud: "prod".into(),
            region: Some("r1".into()),
            answer,
        }
    }

    #[test]
    fn a_cloud_without_clusters_is_one_row_saying_why() {
        let now = Utc::now();
        let rows = report(FleetAnswer::Unreachable("connection refused".into())).rows(now);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, "unreachable: connection refused");
        assert!(rows[0].is_cloud_problem());
        assert_eq!(rows[0].counts(), "");
        let rows = report(FleetAnswer::AuthFailed("HTTP 401".into())).rows(now);
        assert_eq!(rows[0].status, "auth failed: HTTP 401");
        let rows = report(FleetAnswer::Clusters(Vec::new())).rows(now);
        assert_eq!(rows[0].status, "no clusters");
        assert!(!rows[0].is_cloud_problem());
    }
}
