//! Nova compute v2.1 at `/compute/v2.1`: the servers behind node-group members.

use crate::sim::clock::iso_z;
use crate::sim::http::{nova_error, Reply, Req};
use crate::sim::server::{lock, Shared};
use crate::sim::world::group::Member;
use crate::sim::world::{Action, Phase, World};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use std::cmp::Reverse;

/// Nova's `osapi_max_limit`.
const MAX_LIMIT: usize = 1000;

/// Newest compute microversion the simulator claims.
const MAX_MINOR: u32 = 96;

/// The requested microversion (`OpenStack-API-Version: compute 2.N`, the older
/// `X-OpenStack-Nova-API-Version`, or `latest`); 2.1 when absent.
fn negotiate(req: &Req) -> Result<u32, Reply> {
    let raw = req
        .header("openstack-api-version")
        .and_then(|v| {
            v.split(',')
                .map(str::trim)
                .find_map(|p| p.strip_prefix("compute "))
        })
        .or_else(|| req.header("x-openstack-nova-api-version"))
        .map(str::trim);
    let Some(raw) = raw else { return Ok(1) };
    if raw == "latest" {
        return Ok(MAX_MINOR);
    }
    match raw.split_once('.').map(|(a, b)| (a.parse::<u32>(), b.parse::<u32>())) {
        Some((Ok(2), Ok(m))) if (1..=MAX_MINOR).contains(&m) => Ok(m),
        Some((Ok(_), Ok(_))) => Err(nova_error(
            StatusCode::NOT_ACCEPTABLE,
            &format!("Version {raw} is not supported by the API. Minimum is 2.1 and maximum is 2.{MAX_MINOR}."),
        )),
        _ => Err(nova_error(StatusCode::BAD_REQUEST, &format!("Invalid API version request string {raw}"))),
    }
}

pub fn handle(sh: &Shared, req: &Req) -> Reply {
    let base = &sh.cfg.base;
    let minor = match negotiate(req) {
        Ok(m) => m,
        Err(e) => return e,
    };
    let r = match (req.method, req.segs.as_slice()) {
        (&Method::GET, []) => Reply::json(
            StatusCode::MULTIPLE_CHOICES,
            json!({"choices": [version(base)]}),
        ),
        (&Method::GET, ["v2.1"]) => Reply::ok(json!({"version": version(base)})),
        (&Method::GET, ["v2.1", "servers"]) => list(sh, req, false, minor),
        (&Method::GET, ["v2.1", "servers", "detail"]) => list(sh, req, true, minor),
        (&Method::GET, ["v2.1", "servers", id]) => {
            let mut w = lock(&sh.world);
            w.tick();
            match server_json(&w, base, id, true, minor) {
                Some(v) => Reply::ok(json!({"server": v})),
                None => nova_error(
                    StatusCode::NOT_FOUND,
                    &format!("Instance {id} could not be found."),
                ),
            }
        }
        _ => nova_error(StatusCode::NOT_FOUND, "The resource could not be found."),
    };
    r.with_header("OpenStack-API-Version", format!("compute 2.{minor}"))
        .with_header("X-OpenStack-Nova-API-Version", format!("2.{minor}"))
        .with_header(
            "Vary",
            "OpenStack-API-Version, X-OpenStack-Nova-API-Version",
        )
}

fn version(base: &str) -> Value {
    json!({
        "id": "v2.1", "status": "CURRENT", "version": "2.96", "min_version": "2.1", "updated": "2013-07-23T11:33:21Z",
        "links": [{"rel": "self", "href": format!("{base}/compute/v2.1/")}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}],
    })
}

fn status_of(phase: Phase) -> (&'static str, Value) {
    match phase {
        Phase::Running {
            action: Action::Create,
            ..
        }
        | Phase::Paused(Action::Create, _)
        | Phase::Starting {
            action: Action::Create,
            ..
        } => ("BUILD", json!("scheduling")),
        Phase::Running {
            action: Action::Delete,
            ..
        } => ("ACTIVE", json!("deleting")),
        Phase::Running { .. } => ("REBUILD", json!("rebuilding")),
        Phase::Failed(_) => ("ERROR", Value::Null),
        _ => ("ACTIVE", Value::Null),
    }
}

/// What Nova shows of one server: a member's machine, or (on a Cluster API cluster) the
/// machine replacing it (`group::Replacement`). While a replacement runs Nova lists both:
/// the new server in `BUILD`, then `ACTIVE` while the old one is `ACTIVE` with the task
/// `deleting`; a new server that failed is in `ERROR` with its fault, the old one stands.
struct View<'a> {
    name: &'a str,
    ip: &'a str,
    image: &'a str,
    created_ms: i64,
    since_ms: i64,
    status: &'static str,
    task: Value,
    fault: Option<&'a str>,
    /// A Cluster API machine Nova could not place never got its port (CAPO creates the
    /// port, Nova fails to schedule): no address.
    unplaced: bool,
}

fn view<'a>(m: &'a Member, id: &str, capi: bool) -> Option<View<'a>> {
    if id == m.server_id {
        let (status, task) = match &m.replacement {
            Some(r) if r.ready => ("ACTIVE", json!("deleting")),
            Some(_) => ("ACTIVE", Value::Null),
            None => status_of(m.phase),
        };
        return Some(View {
            name: &m.server_name,
            ip: &m.ip,
            image: &m.image,
            created_ms: m.created_ms,
            since_ms: m.since_ms,
            status,
            task,
            fault: m.fault.as_deref(),
            unplaced: capi && matches!(m.phase, Phase::Failed(Action::Create)),
        });
    }
    let r = m.replacement.as_ref().filter(|r| r.server_id == id)?;
    let (status, task) = match (&r.fault, r.ready) {
        (Some(_), _) => ("ERROR", Value::Null),
        (None, true) => ("ACTIVE", Value::Null),
        (None, false) => ("BUILD", json!("spawning")),
    };
    Some(View {
        name: &r.server_name,
        ip: &r.ip,
        image: &r.image,
        created_ms: r.created_ms,
        since_ms: r.since_ms,
        status,
        task,
        fault: r.fault.as_deref(),
        unplaced: r.fault.is_some(),
    })
}

fn server_view<'a>(w: &'a World, id: &str) -> Option<View<'a>> {
    let r = w.servers.get(id)?;
    let grp = &w.groups[r.group];
    let capi = grp.cluster.is_some_and(|c| w.clusters[c].capi.is_some());
    view(grp.members.get(&r.index)?, id, capi)
}

fn server_json(w: &World, base: &str, id: &str, detail: bool, minor: u32) -> Option<Value> {
    let r = w.servers.get(id)?;
    let grp = &w.groups[r.group];
    let m = server_view(w, id)?;
    let url = format!("{base}/compute/v2.1/servers/{id}");
    let mut v = json!({
        "id": id,
        "name": m.name,
        "links": [{"rel": "self", "href": url}, {"rel": "bookmark", "href": url.replace("/v2.1/", "/")}],
    });
    if !detail {
        return Some(v);
    }
    let (status, task) = (m.status, m.task.clone());
    let cluster = grp.cluster.map(|c| w.clusters[c].name.clone());
    // Cluster API's OpenStack provider sets no metadata of its own (and neither Magnum
    // driver asks for any): such a server is known by its name alone.
    let capi = grp.cluster.is_some_and(|c| w.clusters[c].capi.is_some());
    let mut meta = serde_json::Map::new();
    if !capi {
        meta.insert("nodegroup".into(), json!(grp.name));
        meta.insert("nodegroup_uuid".into(), json!(grp.uuid));
        meta.insert("member".into(), json!(r.index.to_string()));
        if let Some(c) = &cluster {
            meta.insert("cluster".into(), json!(c));
        }
    }
    v["status"] = json!(status);
    v["addresses"] = if m.unplaced {
        json!({})
    } else {
        json!({"private": [{"addr": m.ip, "version": 4, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": mac(m.ip)}]})
    };
    v["metadata"] = Value::Object(meta);
    v["image"] = json!({"id": m.image, "links": [{"rel": "bookmark", "href": format!("{base}/compute/images/{}", m.image)}]});
    // From 2.47 Nova embeds the flavor instead of linking it.
    v["flavor"] = if minor >= 47 {
        let (vcpus, ram, disk) = flavor_size(&grp.flavor);
        json!({"original_name": grp.flavor, "vcpus": vcpus, "ram": ram, "disk": disk, "ephemeral": 0, "swap": 0, "extra_specs": {}})
    } else {
        json!({"id": grp.flavor, "links": [{"rel": "bookmark", "href": format!("{base}/compute/flavors/{}", grp.flavor)}]})
    };
    v["created"] = json!(iso_z(m.created_ms));
    v["updated"] = json!(iso_z(m.since_ms));
    v["tenant_id"] = json!(w.cfg.project_id);
    v["user_id"] = json!(w.cfg.user_id);
    v["hostId"] = json!("");
    v["key_name"] = json!("ops-key");
    v["accessIPv4"] = json!("");
    v["accessIPv6"] = json!("");
    v["OS-EXT-AZ:availability_zone"] = json!(grp.zone);
    v["OS-EXT-STS:task_state"] = task;
    v["OS-EXT-STS:vm_state"] = json!(match status {
        "ERROR" => "error",
        "BUILD" => "building",
        _ => "active",
    });
    v["OS-EXT-STS:power_state"] = json!(if status == "ACTIVE" { 1 } else { 0 });
    v["progress"] = json!(0);
    if let Some(f) = m.fault {
        v["fault"] = json!({"code": 500, "message": f, "created": iso_z(m.since_ms)});
    }
    Some(v)
}

fn mac(ip: &str) -> String {
    let o: Vec<u8> = ip.split('.').filter_map(|x| x.parse().ok()).collect();
    match o.as_slice() {
        [a, b, c, d] => format!("fa:16:3e:{a:02x}:{:02x}:{:02x}", b ^ c, d),
        _ => "fa:16:3e:00:00:00".into(),
    }
}

fn list(sh: &Shared, req: &Req, detail: bool, minor: u32) -> Reply {
    let limit = match req.q("limit") {
        None => MAX_LIMIT,
        Some(l) => match l.parse::<usize>() {
            Ok(n) => n.min(MAX_LIMIT),
            Err(_) => return nova_error(StatusCode::BAD_REQUEST, "limit param must be an integer"),
        },
    };
    let status_f = req.q("status").map(|s| s.to_ascii_uppercase());
    let name_re = match req.q("name").map(regex::Regex::new).transpose() {
        Ok(r) => r,
        Err(_) => return nova_error(StatusCode::BAD_REQUEST, "Invalid name filter"),
    };
    let mut w = lock(&sh.world);
    w.tick();
    let w: &World = &w;
    let start_key = match req.q("marker") {
        Some(m) => match w.servers.get(m) {
            Some(r) => Some((Reverse(r.created_ms), Reverse(m.to_string()))),
            None => return nova_error(StatusCode::BAD_REQUEST, &format!("marker [{m}] not found")),
        },
        None => None,
    };
    let iter: Box<dyn Iterator<Item = &(Reverse<i64>, Reverse<String>)>> = match &start_key {
        Some(k) => Box::new(w.server_order.range(k..).skip(1)),
        None => Box::new(w.server_order.iter()),
    };
    let filtered = status_f.is_some() || name_re.is_some();
    let mut out = Vec::new();
    let mut last = None;
    for (_, Reverse(id)) in iter {
        if out.len() >= limit {
            break;
        }
        if filtered {
            let Some(m) = server_view(w, id) else {
                continue;
            };
            if status_f.as_deref().map(|s| m.status != s).unwrap_or(false) {
                continue;
            }
            if name_re
                .as_ref()
                .map(|re| !re.is_match(m.name))
                .unwrap_or(false)
            {
                continue;
            }
        }
        if let Some(v) = server_json(w, &sh.cfg.base, id, detail, minor) {
            out.push(v);
            last = Some(id.clone());
        }
    }
    let mut body = json!({"servers": out});
    if out_len(&body) == limit {
        if let Some(l) = last {
            let path = if detail { "servers/detail" } else { "servers" };
            body["servers_links"] = json!([{"rel": "next", "href": format!("{}/compute/v2.1/{path}?limit={limit}&marker={l}", sh.cfg.base)}]);
        }
    }
    Reply::ok(body)
}

fn out_len(body: &Value) -> usize {
    body["servers"].as_array().map(Vec::len).unwrap_or(0)
}

/// vCPUs, RAM (MiB) and disk (GiB) for the flavor names the scenarios use.
fn flavor_size(name: &str) -> (u32, u32, u32) {
    let size = name.rsplit('.').next().unwrap_or("");
    match size {
        "small" => (1, 2048, 20),
        "medium" => (2, 4096, 40),
        "large" => (4, 8192, 80),
        "xlarge" => (8, 16384, 160),
        "2xlarge" => (16, 65536, 160),
        _ => (2, 4096, 40),
    }
}
