//! Nova compute v2.1 at `/compute/v2.1`: the servers behind node-group members.

use crate::clock::iso_z;
use crate::reply::{nova_error, Reply, Req};
use crate::shared::{lock, Shared};
use crate::world::group::Member;
use crate::world::{Action, Phase, World};
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
        (&Method::POST, ["v2.1", "servers", id, "action"]) => {
            let mut w = lock(&sh.world);
            w.tick();
            server_action(&w, req, id)
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

/// The status Nova shows for server `id` (`ACTIVE`, `ERROR`, `BUILD`...), for Heat's
/// `stack check` of an `OS::Nova::Server`, which compares it with `ACTIVE`.
pub(crate) fn server_status(w: &World, id: &str) -> Option<&'static str> {
    server_view(w, id).map(|v| v.status)
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
    // Admin-only fields (the simulator's user is an admin): where the server runs. A server
    // the scheduler could not place has no host.
    v["OS-EXT-SRV-ATTR:host"] = match host_of(w, r.group, r.index).filter(|_| !m.unplaced) {
        Some(h) => json!(h),
        None => Value::Null,
    };
    if let Some(f) = m.fault {
        // Admins also see the traceback (`details`) of a 500 fault.
        v["fault"] = json!({"code": 500, "message": f, "created": iso_z(m.since_ms), "details": fault_details(f)});
    }
    Some(v)
}

/// The compute host of a member's server; `None` while it is not scheduled yet or when the
/// scheduler found no host for it (a failed create).
fn host_of(w: &World, group: usize, index: u32) -> Option<String> {
    let grp = &w.groups[group];
    let m = grp.members.get(&index)?;
    match m.phase {
        Phase::Failed(Action::Create)
        | Phase::Starting {
            action: Action::Create,
            ..
        }
        | Phase::Paused(Action::Create, _) => None,
        _ => Some(format!("compute-{}-{:02}", grp.zone, index % 17)),
    }
}

/// A Nova fault's traceback as an admin sees it (conductor's scheduling failure).
fn fault_details(message: &str) -> String {
    format!(
        "Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/nova/conductor/manager.py\", line 1654, in schedule_and_build_instances\n    host_lists = self._schedule_instances(context, request_specs[0],\n  File \"/usr/lib/python3/dist-packages/nova/conductor/manager.py\", line 942, in _schedule_instances\n    host_lists = self.query_client.select_destinations(\n  File \"/usr/lib/python3/dist-packages/nova/scheduler/client/query.py\", line 41, in select_destinations\n    return self.scheduler_rpcapi.select_destinations(context, spec_obj,\nnova.exception_Remote.NoValidHost_Remote: {message}\n"
    )
}

/// `POST /servers/{id}/action`: only `os-getConsoleOutput` (`{"output": "..."}`, the last
/// `length` lines). A server without a host has no console: 409, as Nova's
/// `InstanceNotReady`.
fn server_action(w: &World, req: &Req, id: &str) -> Reply {
    let Some(r) = w.servers.get(id) else {
        return nova_error(
            StatusCode::NOT_FOUND,
            &format!("Instance {id} could not be found."),
        );
    };
    let body: Value = match serde_json::from_slice(req.body) {
        Ok(v) => v,
        Err(_) => return nova_error(StatusCode::BAD_REQUEST, "Malformed request body"),
    };
    let Some(args) = body.get("os-getConsoleOutput") else {
        return nova_error(
            StatusCode::BAD_REQUEST,
            "There is no such action in the simulator",
        );
    };
    // `length`: an integer (or its string), null or -1 for the whole log.
    let length = match args.get("length") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => match s.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                return nova_error(
                    StatusCode::BAD_REQUEST,
                    "Invalid input for field/attribute length.",
                )
            }
        },
        Some(_) => {
            return nova_error(
                StatusCode::BAD_REQUEST,
                "Invalid input for field/attribute length.",
            )
        }
    };
    let Some(host) = host_of(w, r.group, r.index) else {
        return nova_error(StatusCode::CONFLICT, &format!("Instance {id} is not ready"));
    };
    let grp = &w.groups[r.group];
    let Some(m) = grp.members.get(&r.index) else {
        return nova_error(
            StatusCode::NOT_FOUND,
            &format!("Instance {id} could not be found."),
        );
    };
    let log = console_log(&m.server_name, &m.ip, &m.image, &host);
    let lines: Vec<&str> = log.lines().collect();
    let keep = match length {
        Some(n) if n >= 0 => (n as usize).min(lines.len()),
        _ => lines.len(),
    };
    let mut output = lines[lines.len() - keep..].join("\n");
    output.push('\n');
    Reply::ok(json!({"output": output}))
}

/// A boot log as a cloud image's serial console prints it (systemd colours its status).
fn console_log(name: &str, ip: &str, image: &str, host: &str) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "[    0.000000] Linux version 5.15.0-105-generic (buildd@{host})\r\n"
    ));
    out.push_str("[    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz root=LABEL=cloudimg-rootfs console=ttyS0\r\n");
    for unit in [
        "systemd-journald.service",
        "systemd-networkd.service",
        "cloud-init-local.service",
        "cloud-init.service",
    ] {
        out.push_str(&format!(
            "[\u{1b}[0;32m  OK  \u{1b}[0m] Started {unit}.\r\n"
        ));
    }
    out.push_str("cloud-init[712]: Cloud-init v. 23.4 running 'init' ... Up 6.12 seconds.\r\n");
    out.push_str(&format!(
        "ci-info: |  ens3  | True | {ip} | 255.255.255.0 | global | fa:16:3e |\r\n"
    ));
    out.push_str(&format!(
        "cloud-init[712]: image {image}, hostname {name}\r\n"
    ));
    out.push_str("[\u{1b}[0;32m  OK  \u{1b}[0m] Started kubelet.service - kubelet: The Kubernetes Node Agent.\r\n");
    out.push_str(&format!("{name} login: \r\n"));
    out
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
            // Nova's next link keeps the request's filters (`name`, `status`, ...) and its
            // limit, with the last server as the marker.
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            q.append_pair("limit", &limit.to_string());
            for (k, v) in req
                .query
                .iter()
                .filter(|(k, _)| k != "limit" && k != "marker")
            {
                q.append_pair(k, v);
            }
            q.append_pair("marker", &l);
            body["servers_links"] = json!([{"rel": "next", "href": format!("{}/compute/v2.1/{path}?{}", sh.cfg.base, q.finish())}]);
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
