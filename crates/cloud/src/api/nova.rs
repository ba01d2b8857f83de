//! Nova: just enough to find servers and their addresses (for node IPs when Heat outputs do not
//! carry them, and for reconciliation).

use crate::api::http::Transport;
use crate::api_error::{ApiError, ApiResult};
use crate::fetch::{paginate, Page};
use crate::model::server::{power_state_name, ServerAddr};
use crate::model::{ConsoleTail, ServerDetail, ServerFault};
use futures::Stream;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use url::Url;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    Fixed,
    Floating,
    Unknown,
}

/// One address of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAddress {
    pub network: String,
    pub addr: String,
    pub kind: AddressKind,
    /// 4 or 6.
    pub version: Option<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    pub id: String,
    pub name: String,
    pub status: String,
    /// Flattened over networks, in Nova's order within each network.
    pub addresses: Vec<ServerAddress>,
    pub metadata: BTreeMap<String, String>,
    /// `OS-EXT-STS:task_state` (`scheduling`, `spawning`, `deleting`...), when busy.
    pub task_state: Option<String>,
    /// The fault's message of a server in ERROR (`fault.message`).
    pub fault: Option<String>,
    /// The image id the server was booted from (empty for boot-from-volume).
    pub image: Option<String>,
    pub zone: Option<String>,
    pub created: Option<chrono::DateTime<chrono::Utc>>,
    pub updated: Option<chrono::DateTime<chrono::Utc>>,
}

impl ServerInfo {
    /// Fixed addresses as plain strings (what the nodes view shows).
    pub fn fixed_ips(&self) -> Vec<String> {
        self.addresses
            .iter()
            .filter(|a| a.kind != AddressKind::Floating)
            .map(|a| a.addr.clone())
            .collect()
    }
}

// ---- wire ----

#[derive(Debug, Deserialize)]
struct ServerList {
    servers: Vec<ServerWire>,
    #[serde(default)]
    servers_links: Vec<LinkWire>,
}

#[derive(Debug, Deserialize)]
struct LinkWire {
    href: String,
    #[serde(default)]
    rel: String,
}

#[derive(Debug, Deserialize)]
struct ServerWire {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    status: String,
    #[serde(default, deserialize_with = "de_null_map")]
    addresses: BTreeMap<String, Vec<AddressWire>>,
    #[serde(default, deserialize_with = "de_null_map")]
    metadata: BTreeMap<String, String>,
    #[serde(rename = "OS-EXT-STS:task_state", default)]
    task_state: Option<String>,
    #[serde(default)]
    fault: Option<FaultWire>,
    /// `{"id": ...}`, or `""` for a server booted from a volume.
    #[serde(default)]
    image: Option<serde_json::Value>,
    #[serde(rename = "OS-EXT-AZ:availability_zone", default)]
    zone: Option<String>,
    #[serde(default, deserialize_with = "crate::api::time::de_opt_time")]
    created: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default, deserialize_with = "crate::api::time::de_opt_time")]
    updated: Option<chrono::DateTime<chrono::Utc>>,
    /// `{"id": ...}` before microversion 2.47, `{"original_name": ...}` from it.
    #[serde(default)]
    flavor: Option<FlavorWire>,
    /// Admin-only: the compute host the server runs on.
    #[serde(rename = "OS-EXT-SRV-ATTR:host", default)]
    host: Option<String>,
    #[serde(rename = "OS-EXT-STS:vm_state", default)]
    vm_state: Option<String>,
    #[serde(rename = "OS-EXT-STS:power_state", default)]
    power_state: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct FaultWire {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<u16>,
    /// The traceback; Nova shows it to admins only, and not for every code.
    #[serde(default)]
    details: Option<String>,
    #[serde(default, deserialize_with = "crate::api::time::de_opt_time")]
    created: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Deserialize)]
struct FlavorWire {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    original_name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ServerOne {
    server: ServerWire,
}

/// `os-getConsoleOutput`'s answer.
#[derive(Debug, Deserialize)]
struct ConsoleWire {
    #[serde(default)]
    output: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AddressWire {
    addr: String,
    #[serde(default)]
    version: Option<u8>,
    #[serde(rename = "OS-EXT-IPS:type", default)]
    kind: Option<String>,
}

fn de_null_map<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
    d: D,
) -> Result<BTreeMap<String, V>, D::Error> {
    Ok(Option::<BTreeMap<String, V>>::deserialize(d)?.unwrap_or_default())
}

/// A server's detail for the node view; the console log is filled in by the caller.
fn detail_from(s: ServerWire) -> ServerDetail {
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let addresses = s
        .addresses
        .iter()
        .flat_map(|(network, addrs)| {
            addrs.iter().map(move |a| ServerAddr {
                network: network.clone(),
                addr: a.addr.clone(),
                kind: a.kind.clone().unwrap_or_default(),
            })
        })
        .collect();
    let flavor = s
        .flavor
        .as_ref()
        .and_then(|f| nonempty(f.original_name.clone()).or_else(|| nonempty(f.id.clone())));
    let image = s
        .image
        .as_ref()
        .and_then(|i| i.get("id"))
        .and_then(|i| i.as_str())
        .map(str::to_string);
    let fault = s.fault.as_ref().and_then(|f| {
        let message = nonempty(f.message.clone())?;
        Some(ServerFault {
            code: f.code,
            message,
            details: nonempty(f.details.clone()),
            created: f.created,
        })
    });
    ServerDetail {
        id: s.id,
        name: s.name,
        status: s.status,
        task_state: nonempty(s.task_state),
        vm_state: nonempty(s.vm_state),
        power_state: s.power_state.map(power_state_name),
        host: nonempty(s.host),
        zone: nonempty(s.zone),
        flavor,
        image: nonempty(image),
        image_name: None,
        fault,
        addresses,
        created: s.created,
        updated: s.updated,
        console: ConsoleTail::Unavailable("not asked".into()),
        deployments: crate::model::server::ServerDeployments::NotRead("not asked".into()),
    }
}

fn server_from(s: ServerWire) -> ServerInfo {
    let addresses = s
        .addresses
        .into_iter()
        .flat_map(|(network, addrs)| {
            addrs.into_iter().map(move |a| ServerAddress {
                network: network.clone(),
                addr: a.addr,
                kind: match a.kind.as_deref() {
                    Some("fixed") => AddressKind::Fixed,
                    Some("floating") => AddressKind::Floating,
                    _ => AddressKind::Unknown,
                },
                version: a.version,
            })
        })
        .collect();
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    ServerInfo {
        id: s.id,
        name: s.name,
        status: s.status,
        addresses,
        metadata: s.metadata,
        task_state: nonempty(s.task_state),
        fault: nonempty(s.fault.and_then(|f| f.message)),
        image: nonempty(
            s.image
                .as_ref()
                .and_then(|i| i.get("id"))
                .and_then(|i| i.as_str())
                .map(str::to_string),
        ),
        zone: nonempty(s.zone),
        created: s.created,
        updated: s.updated,
    }
}

#[derive(Clone)]
pub struct NovaClient {
    transport: Transport,
    base: Url,
    /// Image names by id, as Nova's image proxy gave them (shared by every clone): a fleet
    /// runs a handful of images, asked about once each.
    image_names: std::sync::Arc<std::sync::Mutex<BTreeMap<String, Option<String>>>>,
}

/// Image ids whose names are remembered; past this, names are asked again (bounded memory
/// against a cloud with unbounded images).
const IMAGE_NAMES_KEPT: usize = 1024;

/// `GET /images/{id}` through Nova's image proxy.
#[derive(Debug, Deserialize)]
struct ImageOne {
    image: ImageWire,
}

#[derive(Debug, Deserialize)]
struct ImageWire {
    #[serde(default)]
    name: Option<String>,
}

/// Filters for `GET /servers/detail`, e.g. `("name", "^k8s-1-")` (Nova treats name as a regex).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerQuery {
    pub limit: Option<u32>,
    pub filters: Vec<(String, String)>,
}

impl NovaClient {
    /// `endpoint` is the compute catalog URL (`.../v2.1` or `.../v2.1/{project}`).
    pub fn new(transport: Transport, endpoint: &str) -> ApiResult<NovaClient> {
        let base = Url::parse(endpoint.trim_end_matches('/')).map_err(|e| {
            ApiError::Config(crate::config::ConfigError::Invalid(format!(
                "Nova endpoint '{endpoint}' is not a URL: {e}"
            )))
        })?;
        Ok(NovaClient {
            transport,
            base,
            image_names: Default::default(),
        })
    }

    fn servers_url(&self, query: &ServerQuery, marker: Option<&str>) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut p) = url.path_segments_mut() {
            p.pop_if_empty();
            p.extend(["servers", "detail"]);
        }
        {
            let mut q = url.query_pairs_mut();
            if let Some(limit) = query.limit {
                q.append_pair("limit", &limit.to_string());
            }
            if let Some(m) = marker {
                q.append_pair("marker", m);
            }
            for (k, v) in &query.filters {
                q.append_pair(k, v);
            }
        }
        url
    }

    pub async fn list_servers_page(
        &self,
        query: &ServerQuery,
        marker: Option<&str>,
    ) -> ApiResult<Page<ServerInfo>> {
        let url = self.servers_url(query, marker);
        let list: ServerList = self.transport.get_json(url.as_str()).await?;
        // Nova adds a `next` link while more servers remain; its marker is the last id.
        let next = list
            .servers_links
            .iter()
            .find(|l| l.rel == "next")
            .and_then(|l| Url::parse(&l.href).ok())
            .and_then(|u| {
                u.query_pairs()
                    .find(|(k, _)| k == "marker")
                    .map(|(_, v)| v.into_owned())
            });
        Ok(Page {
            items: list.servers.into_iter().map(server_from).collect(),
            next,
            total: None,
        })
    }

    fn server_url(&self, id: &str, action: bool) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut p) = url.path_segments_mut() {
            p.pop_if_empty();
            p.extend(["servers", id]);
            if action {
                p.push("action");
            }
        }
        url
    }

    /// `GET /servers/{id}`: one server with everything the node detail shows.
    pub async fn get_server(&self, id: &str) -> ApiResult<ServerDetail> {
        let one: ServerOne = self
            .transport
            .get_json(self.server_url(id, false).as_str())
            .await?;
        Ok(detail_from(one.server))
    }

    /// The name of the image `id`, as an operator wrote it in a template or a cluster
    /// template (Nova names a server's image by id only). Nova's image proxy
    /// (`GET /images/{id}`, there up to microversion 2.35; caldera speaks 2.1) answers it, so
    /// no Glance endpoint is needed. `None` when the image is gone (404) or has no name;
    /// remembered either way. Other errors are not remembered.
    pub async fn image_name(&self, id: &str) -> ApiResult<Option<String>> {
        if let Some(known) = self
            .image_names
            .lock()
            .ok()
            .and_then(|m| m.get(id).cloned())
        {
            return Ok(known);
        }
        let mut url = self.base.clone();
        if let Ok(mut p) = url.path_segments_mut() {
            p.pop_if_empty();
            p.extend(["images", id]);
        }
        let name = match self.transport.get_json::<ImageOne>(url.as_str()).await {
            Ok(one) => one.image.name.filter(|n| !n.is_empty()),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        if let Ok(mut m) = self.image_names.lock() {
            if m.len() >= IMAGE_NAMES_KEPT {
                m.clear();
            }
            m.insert(id.to_string(), name.clone());
        }
        Ok(name)
    }

    /// The last `lines` lines of the server's console log:
    /// `POST /servers/{id}/action {"os-getConsoleOutput": {"length": N}}`, answered
    /// `{"output": "..."}`. Nova refuses with 403 (policy), 409 (the server has no host
    /// yet, e.g. it never got scheduled) or 501 (the hypervisor keeps no log).
    pub async fn console_output(&self, id: &str, lines: usize) -> ApiResult<String> {
        let body = serde_json::json!({"os-getConsoleOutput": {"length": lines}});
        let resp = self
            .transport
            .send_json(
                reqwest::Method::POST,
                self.server_url(id, true).as_str(),
                Some(&body),
            )
            .await?;
        let out: ConsoleWire = resp.json()?;
        Ok(out.output.unwrap_or_default())
    }

    /// Every server matching `query`, page by page.
    pub fn list_servers_detail(
        &self,
        query: ServerQuery,
    ) -> impl Stream<Item = ApiResult<ServerInfo>> + Send + 'static {
        let client = self.clone();
        paginate(move |marker| {
            let client = client.clone();
            let query = query.clone();
            async move { client.list_servers_page(&query, marker.as_deref()).await }
        })
    }
}

/// Fuzzing entry: Nova server bodies through decoding and conversion.
#[cfg(feature = "fuzzing")]
pub fn fuzz_decode(body: &[u8]) {
    let m = reqwest::Method::GET;
    let ct = Some("application/json");
    if let Ok(l) = crate::api::http::decode_json::<ServerList>(&m, "http://fuzz/servers", ct, body)
    {
        for s in l.servers {
            let s = server_from(s);
            let _ = s.fixed_ips();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::http::TransportConfig;
    use crate::fetch::RetryPolicy;
    use crate::testing::fault_server::{FaultServer, Reply};
    use futures::TryStreamExt;
    use serde_json::json;

    #[tokio::test]
    async fn pages_through_servers_and_flattens_addresses() {
        let base = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let b = base.clone();
        let server = FaultServer::start(move |hit| {
            let base = b.lock().unwrap().clone();
            let page = match hit.param("marker").as_deref() {
                None => json!({"servers": [
                    {"id": "s1", "name": "k8s-1-node-0", "status": "ACTIVE",
                     "addresses": {"private": [
                        {"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01"},
                        {"addr": "172.24.4.9", "version": 4, "OS-EXT-IPS:type": "floating"}]},
                     "metadata": {"heat_stack": "x"}, "flavor": {"id": "m1"}},
                    {"id": "s2", "name": "k8s-1-node-1", "status": "ERROR", "addresses": {}, "metadata": {}}],
                    "servers_links": [{"rel": "next", "href": format!("{base}/v2.1/servers/detail?limit=2&marker=s2")}]}),
                Some("s2") => json!({"servers": [
                    {"id": "s3", "name": "k8s-1-node-2", "status": "BUILD", "addresses": null, "metadata": null}]}),
                _ => json!({"servers": []}),
            };
            Reply::ok(page)
        })
        .await;
        *base.lock().unwrap() = server.url("");
        let t = Transport::new(&TransportConfig {
            retry: RetryPolicy::never(),
            ..TransportConfig::default()
        })
        .unwrap();
        let nova = NovaClient::new(t, &server.url("/v2.1/")).unwrap();
        let servers: Vec<ServerInfo> = nova
            .list_servers_detail(ServerQuery {
                limit: Some(2),
                filters: vec![("name".into(), "^k8s-1-".into())],
            })
            .try_collect()
            .await
            .unwrap();
        assert_eq!(
            servers.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["s1", "s2", "s3"]
        );
        let hits = server.hits();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].path, "/v2.1/servers/detail");
        assert_eq!(hits[0].param("name").as_deref(), Some("^k8s-1-"));
        assert_eq!(hits[1].param("marker").as_deref(), Some("s2"));
        let s1 = &servers[0];
        assert_eq!(s1.addresses.len(), 2);
        assert_eq!(s1.addresses[0].kind, AddressKind::Fixed);
        assert_eq!(s1.addresses[1].kind, AddressKind::Floating);
        assert_eq!(s1.addresses[1].network, "private");
        assert_eq!(s1.fixed_ips(), ["10.0.0.5"]);
        assert_eq!(s1.metadata.get("heat_stack").map(String::as_str), Some("x"));
        assert!(servers[2].addresses.is_empty());
    }

    /// `server show` with the admin fields and the fault's details (2.47 embeds the flavor),
    /// and the console log: asked with a bounded length, a policy refusal kept as Nova's 403.
    #[tokio::test]
    async fn shows_one_server_and_asks_for_its_console_log() {
        let server = FaultServer::start(move |hit| match (hit.method.as_str(), hit.path.as_str()) {
            ("GET", "/v2.1/servers/s1") => Reply::ok(json!({"server": {
                "id": "s1", "name": "n-1", "status": "ERROR",
                "OS-EXT-STS:task_state": null, "OS-EXT-STS:vm_state": "error",
                "OS-EXT-STS:power_state": 0, "OS-EXT-SRV-ATTR:host": "cmp-7",
                "OS-EXT-AZ:availability_zone": "az-1",
                "flavor": {"original_name": "m1.large", "vcpus": 4},
                "image": "",
                "addresses": {"private": [{"addr": "10.0.0.9", "version": 4, "OS-EXT-IPS:type": "fixed"}]},
                "fault": {"code": 500, "message": "No valid host was found.", "details": "Traceback\n  x", "created": "2026-01-02T03:04:05Z"},
                "created": "2026-01-02T03:00:00Z", "updated": "2026-01-02T03:04:05Z"}})),
            ("POST", "/v2.1/servers/s1/action") => Reply::ok(json!({"output": "a\nb\n"})),
            ("POST", "/v2.1/servers/s2/action") => Reply::json(
                403,
                json!({"forbidden": {"code": 403, "message": "Policy doesn't allow os_compute_api:os-console-output to be performed."}}).to_string(),
            ),
            _ => Reply::status(404),
        })
        .await;
        let t = Transport::new(&TransportConfig {
            retry: RetryPolicy::never(),
            ..TransportConfig::default()
        })
        .unwrap();
        let nova = NovaClient::new(t, &server.url("/v2.1")).unwrap();
        let d = nova.get_server("s1").await.unwrap();
        assert_eq!(d.status, "ERROR");
        assert_eq!(d.power_state.as_deref(), Some("nostate"));
        assert_eq!(d.host.as_deref(), Some("cmp-7"));
        assert_eq!(d.flavor.as_deref(), Some("m1.large"));
        assert_eq!(d.image, None, "booted from a volume");
        assert_eq!(d.addresses.len(), 1);
        let f = d.fault.unwrap();
        assert_eq!(
            (f.code, f.message.as_str()),
            (Some(500), "No valid host was found.")
        );
        assert_eq!(f.details.as_deref(), Some("Traceback\n  x"));
        assert_eq!(nova.console_output("s1", 50).await.unwrap(), "a\nb\n");
        let hits = server.hits();
        let asked = hits.iter().find(|h| h.method == "POST").unwrap().json();
        assert_eq!(asked, json!({"os-getConsoleOutput": {"length": 50}}));
        match nova.console_output("s2", 50).await {
            Err(ApiError::Http {
                status: 403,
                message,
                ..
            }) => {
                assert!(message.contains("Policy doesn't allow"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
