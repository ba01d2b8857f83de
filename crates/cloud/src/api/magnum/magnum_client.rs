//! `MagnumClient`: container-infra v1 with microversion negotiation.
//!
//! Magnum's features arrive by microversion (1.7 resize, 1.8 upgrade, 1.9 node groups, 1.10
//! zero-node groups, 1.12 credential rotation, 1.13 replaces `stack_id` by `cluster_id`,
//! 1.14 node labels and taints). We speak up to 1.14 and ask for `min(1.14, server max)` on
//! every request; asking for `latest` would silently change the shape of responses on newer
//! Magnums.

use super::backend::{self, Backing, TemplateFacts};
use super::magnum_wire as wire;
use crate::api::http::{Request, Transport};
use crate::api::limits::Purpose;
use crate::api_error::{ApiError, ApiResult};
use crate::fetch::{paginate, Page};
use crate::model::{Cluster, DriverKind, Health, NodeGroup, Role, Status};
use futures::Stream;
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Method;
use serde::Serialize;
use std::fmt;
use std::sync::Arc;
use tokio::sync::OnceCell;
use url::Url;

pub const VERSION_HEADER: &str = "OpenStack-API-Version";
const MIN_HEADER: &str = "OpenStack-API-Minimum-Version";
const MAX_HEADER: &str = "OpenStack-API-Maximum-Version";
const SERVICE: &str = "container-infra";
/// The service names Magnum reads in `OpenStack-API-Version` and writes in its version
/// headers (the first): `magnum/api/controllers/versions.py`, `Version.service_strings`.
const SERVICE_NAMES: [&str; 3] = [
    "container-infrastructure-management",
    "container-infrastructure",
    SERVICE,
];

/// A `major.minor` microversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Microversion {
    pub major: u32,
    pub minor: u32,
}

impl Microversion {
    pub const fn new(major: u32, minor: u32) -> Microversion {
        Microversion { major, minor }
    }

    /// Parses `container-infrastructure-management 1.12` (what Magnum answers: the first of
    /// its service strings, `magnum/api/controllers/versions.py`), `container-infra 1.12`
    /// (what it also takes, and what caldera sends), or `1.12`.
    pub fn parse(raw: &str) -> Option<Microversion> {
        let mut words = raw.split_whitespace();
        let v = match (words.next(), words.next(), words.next()) {
            (Some(v), None, _) => v,
            (Some(service), Some(v), None) if SERVICE_NAMES.contains(&service) => v,
            _ => return None,
        };
        let (major, minor) = v.split_once('.')?;
        Some(Microversion {
            major: major.trim().parse().ok()?,
            minor: minor.trim().parse().ok()?,
        })
    }
}

impl fmt::Display for Microversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The newest microversion caldera understands.
pub const OUR_MAX: Microversion = Microversion::new(1, 14);
pub const RESIZE: Microversion = Microversion::new(1, 7);
pub const UPGRADE: Microversion = Microversion::new(1, 8);
pub const NODEGROUPS: Microversion = Microversion::new(1, 9);

/// Picks the version to use from the server's range.
pub fn negotiate(server_min: Microversion, server_max: Microversion) -> ApiResult<Microversion> {
    let chosen = server_max.min(OUR_MAX);
    if chosen < server_min {
        return Err(ApiError::Unsupported(format!(
            "Magnum serves {SERVICE} {server_min} to {server_max}; caldera speaks up to {OUR_MAX}"
        )));
    }
    Ok(chosen)
}

#[derive(Clone)]
pub struct MagnumClient {
    transport: Transport,
    /// `.../v1`
    base: Url,
    version: Arc<OnceCell<Microversion>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResizeRequest {
    pub node_count: u32,
    /// Server ids or member indexes to remove first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes_to_remove: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodegroup: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UpgradeRequest {
    pub cluster_template: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodegroup: Option<String>,
}

/// Page size for cluster lists (Magnum's default server max is 1000).
pub const DEFAULT_PAGE: u32 = 200;

fn cluster_from(c: wire::ClusterItem) -> Cluster {
    // 1.13+ says `cluster_id`, older Magnums `stack_id`: the same id either way.
    let backing = c.cluster_id.clone().or_else(|| c.stack_id.clone());
    let (stack_id, capi) = match backend::classify(backing.as_deref(), None) {
        Backing::Heat(id) => (Some(id), None),
        Backing::ClusterApi(capi) => (None, Some(capi)),
        Backing::Unknown => (None, None),
    };
    Cluster {
        id: c.uuid,
        name: c.name,
        driver: DriverKind::Magnum,
        status: Status::parse(c.status.as_deref().unwrap_or("UNKNOWN")),
        status_reason: c.status_reason,
        health: Health::parse(c.health_status.as_deref()),
        health_reason: c.health_status_reason,
        master_count: c.master_count.unwrap_or(0),
        node_count: c.node_count.unwrap_or(0),
        nodegroup_count: None,
        template_id: c.cluster_template_id,
        coe_version: c.coe_version.or_else(|| c.labels.get("kube_tag").cloned()),
        api_address: c.api_address,
        stack_id,
        created_at: c.created_at,
        updated_at: c.updated_at,
        capi,
    }
}

fn nodegroup_from(n: wire::NodeGroupItem, cluster_id: &str) -> NodeGroup {
    NodeGroup {
        zone: n
            .labels
            .get("availability_zone")
            .filter(|z| !z.is_empty())
            .cloned(),
        version: n.version.or_else(|| n.labels.get("kube_tag").cloned()),
        id: n.uuid,
        name: n.name,
        cluster_id: n.cluster_id.unwrap_or_else(|| cluster_id.to_string()),
        role: Role::parse(n.role.as_deref().unwrap_or("")),
        flavor: n.flavor_id,
        image: n.image_id,
        node_count: n.node_count.unwrap_or(0),
        min_node_count: n.min_node_count,
        max_node_count: n.max_node_count,
        status: Status::parse(n.status.as_deref().unwrap_or("UNKNOWN")),
        status_reason: n.status_reason,
        is_default: n.is_default.unwrap_or(false),
        stack_id: n.stack_id,
        capi: None,
        node_labels: n.node_labels,
        node_taints: n.node_taints,
        created_at: n.created_at,
        updated_at: n.updated_at,
    }
}

/// The `marker` of a `next` link.
fn marker_of(next: &str) -> Option<String> {
    Url::parse(next)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == "marker")
        .map(|(_, v)| v.into_owned())
}

impl MagnumClient {
    /// `endpoint` is the catalog URL (`.../v1`; a bare root gets `/v1` appended).
    pub fn new(transport: Transport, endpoint: &str) -> ApiResult<MagnumClient> {
        let trimmed = endpoint.trim_end_matches('/');
        let with_v1 = if trimmed.ends_with("/v1") {
            trimmed.to_string()
        } else {
            format!("{trimmed}/v1")
        };
        let base = Url::parse(&with_v1).map_err(|e| {
            ApiError::Config(crate::config::ConfigError::Invalid(format!(
                "Magnum endpoint '{endpoint}' is not a URL: {e}"
            )))
        })?;
        Ok(MagnumClient {
            transport,
            base,
            version: Arc::new(OnceCell::new()),
        })
    }

    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty();
            path.extend(segments);
        }
        url
    }

    /// The negotiated microversion (asks the server once: `GET /v1` and its version headers).
    pub async fn version(&self) -> ApiResult<Microversion> {
        self.version
            .get_or_try_init(|| async {
                // Discovery: the short probe timeout, and no second wait on a dead Magnum.
                let req = Request::get(self.base.as_str()).purpose(Purpose::Probe);
                let resp = self.transport.send(req).await?;
                let min = resp.header(MIN_HEADER).and_then(Microversion::parse);
                let max = resp.header(MAX_HEADER).and_then(Microversion::parse);
                match (min, max) {
                    (Some(min), Some(max)) => negotiate(min, max),
                    // A Magnum without microversions (very old): 1.1 is what it speaks.
                    _ => Ok(Microversion::new(1, 1)),
                }
            })
            .await
            .copied()
    }

    /// `container-infra 1.N`, for the console's header.
    pub async fn version_label(&self) -> ApiResult<String> {
        Ok(format!("{SERVICE} {}", self.version().await?))
    }

    async fn request(&self, method: Method, url: &Url) -> ApiResult<Request> {
        let v = self.version().await?;
        let value = HeaderValue::from_str(&format!("{SERVICE} {v}")).map_err(|_| {
            ApiError::Unsupported(format!("microversion {v} is not a header value"))
        })?;
        Ok(Request::new(method, url.as_str())
            .header(HeaderName::from_static("openstack-api-version"), value))
    }

    async fn require(&self, needed: Microversion, what: &str) -> ApiResult<()> {
        let v = self.version().await?;
        if v < needed {
            return Err(ApiError::Unsupported(format!(
                "{what} needs Magnum {SERVICE} {needed}; this Magnum serves up to {v}"
            )));
        }
        Ok(())
    }

    /// Sends with the version header; a 406 (version refused) gets a message that says so.
    async fn send(&self, req: Request) -> ApiResult<crate::api::http::Response> {
        let version = req
            .headers
            .get(VERSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        match self.transport.send(req).await {
            Err(ApiError::Http {
                method,
                url,
                status: 406,
                message,
                retry_after,
            }) => Err(ApiError::Http {
                method,
                url,
                status: 406,
                message: format!("Magnum refused microversion '{version}': {message}"),
                retry_after,
            }),
            other => other,
        }
    }

    async fn get<T: serde::de::DeserializeOwned>(&self, url: &Url) -> ApiResult<T> {
        let req = self.request(Method::GET, url).await?;
        let resp = self.send(req).await?;
        resp.json()
    }

    pub async fn list_clusters_page(
        &self,
        limit: u32,
        marker: Option<&str>,
    ) -> ApiResult<Page<Cluster>> {
        let mut url = self.url(&["clusters"]);
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("limit", &limit.to_string());
            if let Some(m) = marker {
                q.append_pair("marker", m);
            }
        }
        let list: wire::ClusterList = self.get(&url).await?;
        // Magnum's `next` link says whether there is more; its marker is the last uuid.
        let next = list.next.as_deref().and_then(marker_of);
        let items = list.clusters.into_iter().map(cluster_from).collect();
        Ok(Page {
            items,
            next,
            total: None,
        })
    }

    /// Every cluster, page by page.
    pub fn list_clusters(
        &self,
        page_size: Option<u32>,
    ) -> impl Stream<Item = ApiResult<Cluster>> + Send + 'static {
        let client = self.clone();
        let limit = page_size.unwrap_or(DEFAULT_PAGE);
        paginate(move |marker| {
            let client = client.clone();
            async move { client.list_clusters_page(limit, marker.as_deref()).await }
        })
    }

    /// `GET /v1/clusters/{id}` (adds status_reason, api_address, coe_version).
    pub async fn get_cluster(&self, id_or_name: &str) -> ApiResult<Cluster> {
        let c: wire::ClusterItem = self.get(&self.url(&["clusters", id_or_name])).await?;
        Ok(cluster_from(c))
    }

    /// A cluster template's driver facts (`GET /v1/clustertemplates/{id}`).
    pub async fn template_facts(&self, id: &str) -> ApiResult<TemplateFacts> {
        let t: wire::ClusterTemplateItem = self.get(&self.url(&["clustertemplates", id])).await?;
        Ok(TemplateFacts {
            driver: t.driver,
            labels: t.labels,
        })
    }

    /// Refines a cluster whose id is not a Heat stack UUID with its template's driver facts
    /// (one template read; clusters with a stack UUID cost nothing). A failed template read
    /// keeps what the id told.
    pub async fn refine_backend(&self, cluster: &mut Cluster) {
        let backing = cluster
            .capi
            .as_ref()
            .map(|c| c.name.clone())
            .or_else(|| cluster.stack_id.clone());
        if backend::id_is_conclusive(backing.as_deref()) {
            return;
        }
        let Some(template) = cluster.template_id.clone() else {
            return;
        };
        match self.template_facts(&template).await {
            Ok(facts) => match backend::classify(backing.as_deref(), Some(&facts)) {
                Backing::ClusterApi(c) => {
                    cluster.capi = Some(c);
                    cluster.stack_id = None;
                }
                Backing::Heat(id) => {
                    cluster.capi = None;
                    cluster.stack_id = Some(id);
                }
                Backing::Unknown => {}
            },
            Err(e) => tracing::info!("cluster template {template}: {e}"),
        }
    }

    /// Node groups of a cluster, optionally of one role.
    pub async fn list_nodegroups(
        &self,
        cluster: &str,
        role: Option<Role>,
    ) -> ApiResult<Vec<NodeGroup>> {
        self.require(NODEGROUPS, "listing node groups").await?;
        let mut out = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut url = self.url(&["clusters", cluster, "nodegroups"]);
            {
                let mut q = url.query_pairs_mut();
                if let Some(role) = role {
                    q.append_pair("role", role.as_str());
                }
                if let Some(m) = &marker {
                    q.append_pair("marker", m);
                }
            }
            let list: wire::NodeGroupList = self.get(&url).await?;
            let got = list.nodegroups.len();
            out.extend(
                list.nodegroups
                    .into_iter()
                    .map(|n| nodegroup_from(n, cluster)),
            );
            match list.next.as_deref().and_then(marker_of) {
                Some(next) if got > 0 && Some(&next) != marker.as_ref() => marker = Some(next),
                _ => break,
            }
        }
        Ok(out)
    }

    pub async fn get_nodegroup(&self, cluster: &str, nodegroup: &str) -> ApiResult<NodeGroup> {
        self.require(NODEGROUPS, "showing a node group").await?;
        let n: wire::NodeGroupItem = self
            .get(&self.url(&["clusters", cluster, "nodegroups", nodegroup]))
            .await?;
        Ok(nodegroup_from(n, cluster))
    }

    /// `POST /v1/clusters/{id}/actions/resize`; returns the cluster uuid Magnum acknowledges.
    pub async fn resize(&self, cluster: &str, resize: &ResizeRequest) -> ApiResult<String> {
        self.require(RESIZE, "resize").await?;
        let url = self.url(&["clusters", cluster, "actions", "resize"]);
        let req = self.request(Method::POST, &url).await?.json(resize)?;
        let accepted: wire::ActionAccepted = self.send(req).await?.json()?;
        Ok(accepted.uuid)
    }

    /// `POST /v1/clusters/{id}/actions/upgrade`.
    pub async fn upgrade(&self, cluster: &str, upgrade: &UpgradeRequest) -> ApiResult<String> {
        self.require(UPGRADE, "upgrade").await?;
        let url = self.url(&["clusters", cluster, "actions", "upgrade"]);
        let req = self.request(Method::POST, &url).await?.json(upgrade)?;
        let accepted: wire::ActionAccepted = self.send(req).await?.json()?;
        Ok(accepted.uuid)
    }
}

/// Fuzzing entry: Magnum list and show bodies through decoding and conversion.
#[cfg(feature = "fuzzing")]
pub fn fuzz_decode(body: &[u8]) {
    use crate::api::http::decode_json;
    let m = Method::GET;
    let u = "http://fuzz/v1/clusters";
    let ct = Some("application/json");
    if let Ok(l) = decode_json::<wire::ClusterList>(&m, u, ct, body) {
        for c in l.clusters {
            std::hint::black_box(cluster_from(c));
        }
        let _ = l.next.as_deref().map(marker_of);
    }
    if let Ok(c) = decode_json::<wire::ClusterItem>(&m, u, ct, body) {
        let _ = cluster_from(c);
    }
    if let Ok(l) = decode_json::<wire::NodeGroupList>(&m, u, ct, body) {
        for n in l.nodegroups {
            std::hint::black_box(nodegroup_from(n, "c"));
        }
    }
    if let Ok(n) = decode_json::<wire::NodeGroupItem>(&m, u, ct, body) {
        let _ = nodegroup_from(n, "c");
    }
    let _ = decode_json::<wire::ActionAccepted>(&m, u, ct, body);
    let _ = decode_json::<wire::ClusterTemplateItem>(&m, u, ct, body);
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = Microversion::parse(text);
        let _ = marker_of(text);
    }
}
