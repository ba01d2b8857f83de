//! Magnum container-infra API v1 at `/container-infra/v1`, microversions 1.1-1.14.
//! Clusters and node groups are views of the Heat world: their statuses come from their
//! stacks, their addresses from the members; resize and upgrade drive the node-group stack.
//! A cluster run by a Cluster API driver (`World::clusters[c].capi`) shows no stack: its
//! driver's cluster name where a stack id would be, no node addresses, and the driver's
//! habit of never failing a create (see `shape_cluster`).

use crate::clock::iso_offset;
use crate::reply::{magnum_error, Reply, Req};
use crate::shared::{lock, Shared};
use crate::world::group::{self, Phase, UpdateRequest};
use crate::world::{Action, State, Status, World};
use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

pub const MIN_MINOR: u32 = 1;
pub const MAX_MINOR: u32 = 14;
/// Magnum's `[api] max_limit`.
const MAX_LIMIT: usize = 1000;

/// (sort key, uuid, index) of a listed item.
type SortItem = (String, String, usize);

/// Magnum names itself `container-infrastructure-management` in the version headers it
/// sends (the first of its service strings; it takes `container-infra` too), as a real
/// Magnum 22 answered.
const SERVICE_STRING: &str = "container-infrastructure-management";

fn version_headers(r: Reply, minor: u32) -> Reply {
    r.with_header(
        "OpenStack-API-Minimum-Version",
        format!("{SERVICE_STRING} 1.{MIN_MINOR}"),
    )
    .with_header(
        "OpenStack-API-Maximum-Version",
        format!("{SERVICE_STRING} 1.{MAX_MINOR}"),
    )
    .with_header(
        "OpenStack-API-Version",
        format!("{SERVICE_STRING} 1.{minor}"),
    )
    .with_header("Vary", "OpenStack-API-Version")
}

/// The requested microversion: `OpenStack-API-Version: container-infra 1.N` (or the older
/// `X-OpenStack-Magnum-API-Version`), `latest`, or the minimum when absent.
fn negotiate(req: &Req) -> Result<u32, Reply> {
    let raw = req
        .header("openstack-api-version")
        .and_then(|v| {
            v.split(',')
                .map(str::trim)
                .find_map(|p| {
                    let (service, v) = p.split_once(' ')?;
                    [
                        SERVICE_STRING,
                        "container-infrastructure",
                        "container-infra",
                    ]
                    .contains(&service)
                    .then_some(v)
                })
                .map(str::trim)
        })
        .or_else(|| req.header("x-openstack-magnum-api-version").map(str::trim));
    let Some(raw) = raw else { return Ok(MIN_MINOR) };
    if raw == "latest" {
        return Ok(MAX_MINOR);
    }
    let parsed = raw
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    match parsed {
        Some((1, minor)) if (MIN_MINOR..=MAX_MINOR).contains(&minor) => Ok(minor),
        Some((_, _)) => Err(magnum_error(
            StatusCode::NOT_ACCEPTABLE,
            &format!("Version {raw} was requested but the minor version is not supported by this service. The supported version range is: [1.{MIN_MINOR}, 1.{MAX_MINOR}]."),
        )),
        None => Err(magnum_error(StatusCode::BAD_REQUEST, &format!("Invalid value for OpenStack-API-Version header: {raw}"))),
    }
}

pub fn handle(sh: &Shared, req: &Req) -> Reply {
    let minor = match negotiate(req) {
        Ok(m) => m,
        Err(e) => return version_headers(e, MAX_MINOR),
    };
    let base = &sh.cfg.base;
    let reply = match (req.method, req.segs.as_slice()) {
        (&Method::GET, []) => Reply::ok(json!({
            "name": "OpenStack Magnum API",
            "description": "Magnum is an OpenStack project which aims to provide container cluster management.",
            "default_version": version_entry(base),
            "versions": [version_entry(base)],
        })),
        (&Method::GET, ["v1"]) => Reply::ok(json!({
            "id": "v1",
            "media_types": [{"base": "application/json", "type": "application/vnd.openstack.magnum.v1+json"}],
            "links": [{"href": format!("{base}/container-infra/v1/"), "rel": "self"}],
            "clusters": [{"href": format!("{base}/container-infra/v1/clusters/"), "rel": "self"}],
            "clustertemplates": [{"href": format!("{base}/container-infra/v1/clustertemplates/"), "rel": "self"}],
        })),
        (_, ["v1", rest @ ..]) => {
            let mut w = lock(&sh.world);
            w.tick();
            route(&mut w, sh, req, rest, minor)
        }
        _ => magnum_error(StatusCode::NOT_FOUND, "The resource could not be found."),
    };
    version_headers(reply, minor)
}

fn version_entry(base: &str) -> Value {
    json!({
        "id": "v1",
        "links": [{"href": format!("{base}/container-infra/v1/"), "rel": "self"}],
        "status": "CURRENT",
        "max_version": format!("1.{MAX_MINOR}"),
        "min_version": format!("1.{MIN_MINOR}"),
    })
}

fn needs(minor: u32, at_least: u32) -> Result<(), Reply> {
    if minor < at_least {
        return Err(magnum_error(
            StatusCode::NOT_ACCEPTABLE,
            &format!("This API requires microversion 1.{at_least} or later (requested 1.{minor})."),
        ));
    }
    Ok(())
}

fn route(w: &mut World, sh: &Shared, req: &Req, rest: &[&str], minor: u32) -> Reply {
    let r = (|| -> Result<Reply, Reply> {
        Ok(match (req.method, rest) {
            (&Method::GET, ["clusters"]) => list_clusters(w, sh, req, false, minor)?,
            (&Method::GET, ["clusters", "detail"]) => list_clusters(w, sh, req, true, minor)?,
            (&Method::GET, ["clusters", id]) => {
                let c = cluster(w, id)?;
                let mut v = cluster_detail(w, sh, c);
                shape_cluster(w, c, &mut v, minor, true);
                Reply::ok(v)
            }
            (&Method::GET, ["clusters", id, "nodegroups"]) => {
                needs(minor, 9)?;
                list_nodegroups(w, sh, req, cluster(w, id)?, false, minor)?
            }
            (&Method::GET, ["clusters", id, "nodegroups", "detail"]) => {
                needs(minor, 9)?;
                list_nodegroups(w, sh, req, cluster(w, id)?, true, minor)?
            }
            (&Method::GET, ["clusters", id, "nodegroups", ng]) => {
                needs(minor, 9)?;
                let c = cluster(w, id)?;
                let g = nodegroup(w, c, ng)?;
                let mut v = nodegroup_json(w, sh, g, true);
                shape_nodegroup(w, g, &mut v, minor, true);
                Reply::ok(v)
            }
            (&Method::PATCH, ["clusters", id]) => patch_cluster(w, req, cluster(w, id)?)?,
            (&Method::POST, ["clusters", id, "actions", "resize"]) => {
                needs(minor, 7)?;
                resize(w, req, cluster(w, id)?)?
            }
            (&Method::POST, ["clusters", id, "actions", "upgrade"]) => {
                needs(minor, 8)?;
                upgrade(w, req, cluster(w, id)?)?
            }
            (&Method::GET, ["clustertemplates"]) => {
                let items: Vec<Value> = (0..w.templates.len())
                    .map(|t| template_json(w, sh, t))
                    .collect();
                Reply::ok(json!({"clustertemplates": items}))
            }
            (&Method::GET, ["clustertemplates", id]) => {
                let t = w
                    .templates
                    .iter()
                    .position(|t| t.uuid == *id || t.name == *id)
                    .ok_or_else(|| {
                        magnum_error(
                            StatusCode::NOT_FOUND,
                            &format!("ClusterTemplate {id} could not be found."),
                        )
                    })?;
                Reply::ok(template_json(w, sh, t))
            }
            _ => magnum_error(StatusCode::NOT_FOUND, "The resource could not be found."),
        })
    })();
    r.unwrap_or_else(|e| e)
}

fn cluster(w: &World, ident: &str) -> Result<usize, Reply> {
    w.cluster_by_ident(ident).ok_or_else(|| {
        magnum_error(
            StatusCode::NOT_FOUND,
            &format!("Cluster {ident} could not be found."),
        )
    })
}

fn nodegroup(w: &World, c: usize, ident: &str) -> Result<usize, Reply> {
    w.clusters[c]
        .groups
        .iter()
        .copied()
        .find(|g| w.groups[*g].uuid == ident || w.groups[*g].name == ident)
        .ok_or_else(|| {
            magnum_error(
                StatusCode::NOT_FOUND,
                &format!("Nodegroup {ident} could not be found."),
            )
        })
}

fn stack_status(w: &World, ix: usize) -> (Status, String) {
    w.stack(ix)
        .map(|s| (s.status, s.reason.clone()))
        .unwrap_or((Status::new(Action::Create, State::Complete), String::new()))
}

/// A cluster's status: the most pressing of its own stack's and its node groups' stacks
/// (in progress, then failed, then the latest completed).
fn cluster_status(w: &World, c: usize) -> (Status, String) {
    let cl = &w.clusters[c];
    let mut all: Vec<(Status, String, i64)> = Vec::new();
    for ix in std::iter::once(cl.stack).chain(cl.groups.iter().map(|g| w.groups[*g].ng_stack)) {
        if let Some(s) = w.stack(ix) {
            all.push((
                s.status,
                s.reason.clone(),
                s.updated_ms.unwrap_or(s.created_ms),
            ));
        }
    }
    let rank = |s: &Status| match s.state {
        State::InProgress => 2,
        State::Failed => 1,
        State::Complete => 0,
    };
    all.into_iter()
        .max_by_key(|(s, _, t)| (rank(s), *t))
        .map(|(s, r, _)| (s, r))
        .unwrap_or((Status::new(Action::Create, State::Complete), String::new()))
}

fn health(w: &World, c: usize) -> (&'static str, Value) {
    let cl = &w.clusters[c];
    let (status, _) = cluster_status(w, c);
    if status == Status::new(Action::Create, State::InProgress) {
        return ("UNKNOWN", Value::Null);
    }
    let mut reason = serde_json::Map::new();
    reason.insert(
        "api".into(),
        json!(if cl.health_reason_override.is_some() {
            "unreachable"
        } else {
            "ok"
        }),
    );
    let mut healthy = cl.health_reason_override.is_none();
    // Magnum's health poller asks Kubernetes: a node that failed, or whose machine is
    // being rebuilt right now, is not Ready. (Magnum lists every node; only the not-Ready
    // ones are listed here, to keep 1000-node clusters' bodies small.)
    for g in &cl.groups {
        for m in w.groups[*g].members.values() {
            let not_ready = matches!(
                m.phase,
                Phase::Failed(_)
                    | Phase::Running {
                        action: Action::Update | Action::Create,
                        ..
                    }
            ) && m.replacement.is_none();
            if not_ready {
                healthy = false;
                reason.insert(format!("{}.Ready", m.server_name), json!("False"));
            }
        }
    }
    (
        if healthy { "HEALTHY" } else { "UNHEALTHY" },
        Value::Object(reason),
    )
}

fn counts(w: &World, c: usize) -> (u32, u32) {
    let mut nodes = 0;
    let mut masters = 0;
    for g in &w.clusters[c].groups {
        let n = node_count(w, *g);
        if w.groups[*g].role == "master" {
            masters += n;
        } else {
            nodes += n;
        }
    }
    (nodes, masters)
}

fn node_count(w: &World, g: usize) -> u32 {
    w.stack(w.groups[g].ng_stack)
        .and_then(|s| s.params.get(w.groups[g].layout.key("count")))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn default_group(w: &World, c: usize, role: &str) -> Option<usize> {
    let gs = &w.clusters[c].groups;
    gs.iter()
        .copied()
        .find(|g| w.groups[*g].role == role && w.groups[*g].is_default)
        .or_else(|| gs.iter().copied().find(|g| w.groups[*g].role == role))
}

fn cluster_summary(w: &World, sh: &Shared, c: usize) -> Value {
    let cl = &w.clusters[c];
    let (status, _) = cluster_status(w, c);
    let (nodes, masters) = counts(w, c);
    let flavor = default_group(w, c, "worker").map(|g| w.groups[g].flavor.clone());
    let mflavor = default_group(w, c, "master").map(|g| w.groups[g].flavor.clone());
    let url = format!("{}/container-infra/v1/clusters/{}", sh.cfg.base, cl.uuid);
    json!({
        "uuid": cl.uuid,
        "name": cl.name,
        "cluster_template_id": w.templates[cl.template].uuid,
        "keypair": cl.keypair,
        "node_count": nodes,
        "master_count": masters,
        "docker_volume_size": cl.docker_volume_size,
        "labels": cl.labels,
        "labels_overridden": {},
        "labels_skipped": {},
        "labels_added": {},
        "master_flavor_id": mflavor,
        "flavor_id": flavor,
        "create_timeout": cl.create_timeout,
        "status": status.to_string(),
        "health_status": health(w, c).0,
        "stack_id": w.stack(cl.stack).map(|s| s.id.clone()),
        "master_lb_enabled": true,
        "project_id": w.cfg.project_id,
        "links": [{"href": url, "rel": "self"}, {"href": url.replace("/v1/", "/"), "rel": "bookmark"}],
    })
}

fn cluster_detail(w: &World, sh: &Shared, c: usize) -> Value {
    let cl = &w.clusters[c];
    let mut v = cluster_summary(w, sh, c);
    let (status, reason) = cluster_status(w, c);
    let (h, hr) = health(w, c);
    let mut workers = Vec::new();
    let mut masters = Vec::new();
    let mut faults = serde_json::Map::new();
    for g in &cl.groups {
        let grp = &w.groups[*g];
        for m in grp.members.values() {
            if grp.role == "master" {
                masters.push(m.ip.clone());
            } else {
                workers.push(m.ip.clone());
            }
            if let Some(f) = &m.fault {
                faults.insert(m.server_name.clone(), json!(f));
            }
        }
    }
    v["status"] = json!(status.to_string());
    v["status_reason"] = json!(reason);
    v["api_address"] = json!(cl.api_address);
    v["node_addresses"] = json!(workers);
    v["master_addresses"] = json!(masters);
    v["health_status"] = json!(h);
    v["health_status_reason"] = hr;
    v["coe_version"] = json!(w.templates[cl.template].coe_version);
    v["container_version"] = json!("1.12.6");
    v["discovery_url"] = json!(format!(
        "https://discovery.etcd.io/{}",
        cl.uuid.replace('-', "")
    ));
    v["faults"] = Value::Object(faults);
    v["fixed_network"] = Value::Null;
    v["fixed_subnet"] = Value::Null;
    v["floating_ip_enabled"] = json!(false);
    v["master_lb_enabled"] = json!(true);
    v["created_at"] = json!(iso_offset(cl.created_ms));
    // Magnum's conductor saves the cluster (so `updated_at` moves) when its own API changes it
    // and when it syncs a status change from Heat: the latest of the two here.
    let synced = std::iter::once(cl.stack)
        .chain(cl.groups.iter().map(|g| w.groups[*g].ng_stack))
        .filter_map(|ix| w.stack(ix).and_then(|s| s.updated_ms))
        .max();
    v["updated_at"] = json!(cl.updated_ms.max(synced).map(iso_offset));
    v["user_id"] = json!(w.cfg.user_id);
    v
}

/// Magnum's paging: `limit` (capped at `max_limit`), `marker` (a uuid), `sort_key`,
/// `sort_dir`; a `next` link when the page is full.
fn page<'a>(
    req: &Req,
    items: &'a mut [SortItem],
    url: &str,
) -> Result<(&'a [SortItem], Option<String>), Reply> {
    let limit = match req.q("limit") {
        Some(l) => match l.parse::<i64>() {
            Ok(n) if n > 0 => (n as usize).min(MAX_LIMIT),
            Ok(_) => return Err(magnum_error(StatusCode::BAD_REQUEST, "Limit must be positive")),
            Err(_) => return Err(magnum_error(StatusCode::BAD_REQUEST, &format!("Invalid input for field/attribute limit. Value: '{l}'. unable to convert to int"))),
        },
        None => MAX_LIMIT,
    };
    let desc = match req.q("sort_dir").unwrap_or("asc") {
        "asc" => false,
        "desc" => true,
        d => {
            return Err(magnum_error(
                StatusCode::BAD_REQUEST,
                &format!("Invalid sort direction: {d}. Acceptable values are 'asc' or 'desc'"),
            ))
        }
    };
    items.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    if desc {
        items.reverse();
    }
    let start = match req.q("marker") {
        Some(m) => match items.iter().position(|i| i.1 == m) {
            Some(p) => p + 1,
            None => {
                return Err(magnum_error(
                    StatusCode::NOT_FOUND,
                    &format!("Cluster {m} could not be found."),
                ))
            }
        },
        None => 0,
    };
    let end = (start + limit).min(items.len());
    let slice = &items[start..end];
    let next = if slice.len() == limit {
        slice.last().map(|last| {
            let mut n = format!("{url}?limit={limit}&marker={}", last.1);
            if let Some(k) = req.q("sort_key") {
                n.push_str(&format!("&sort_key={k}"));
            }
            if let Some(d) = req.q("sort_dir") {
                n.push_str(&format!("&sort_dir={d}"));
            }
            n
        })
    } else {
        None
    };
    Ok((slice, next))
}

/// Microversion and driver shapes of a cluster body. 1.13 replaces `stack_id` by
/// `cluster_id` (the same id). A Cluster API cluster (vexxhost `magnum-cluster-api`) shows its
/// Cluster API name there (`driver.py`: `cluster.stack_id = generate_cluster_api_name()`),
/// no node addresses (the driver never fills them), and a create that failed stays
/// `CREATE_IN_PROGRESS` with the latest machine event as its reason (Cluster API keeps
/// reconciling; neither driver marks a create failed).
fn shape_cluster(w: &World, c: usize, v: &mut Value, minor: u32, detail: bool) {
    let cl = &w.clusters[c];
    if let Some(capi) = &cl.capi {
        v["stack_id"] = json!(capi.name);
        if detail {
            v["node_addresses"] = json!([]);
            v["master_addresses"] = json!([]);
            v["faults"] = json!({});
        }
        let (status, _) = cluster_status(w, c);
        let stalled = status.state == State::Failed;
        if stalled || status.state == State::InProgress {
            let shown = if stalled {
                Status::new(status.action, State::InProgress)
            } else {
                status
            };
            v["status"] = json!(shown.to_string());
            if detail {
                v["status_reason"] = json!(capi_reason(w, c));
            }
        } else if detail {
            v["status_reason"] = Value::Null;
        }
    }
    if minor >= 13 {
        if let Some(obj) = v.as_object_mut() {
            let id = obj.remove("stack_id").unwrap_or(Value::Null);
            obj.insert("cluster_id".into(), id);
        }
    }
}

/// The latest machine event of a Cluster API cluster, as the drivers put Cluster API's
/// conditions into `status_reason`: a machine in error with its fault, else what it waits on.
fn capi_reason(w: &World, c: usize) -> String {
    let mut waiting = 0;
    let (mut outdated, mut current) = (0, 0);
    for g in &w.clusters[c].groups {
        let image = w.groups[*g].image(w);
        for m in w.groups[*g].members.values() {
            if let Some((f, r)) = m
                .replacement
                .as_ref()
                .and_then(|r| r.fault.as_ref().map(|f| (f, r)))
            {
                return format!("InstanceCreateFailed: {f} (Machine {})", r.server_name);
            }
            if let (Phase::Failed(_), Some(f)) = (m.phase, &m.fault) {
                return format!("InstanceCreateFailed: {f} (Machine {})", m.server_name);
            }
            if m.image == image {
                current += 1;
            } else {
                outdated += 1;
            }
            if !matches!(m.phase, Phase::Idle) {
                waiting += 1;
            }
        }
    }
    // Cluster API's wording of a rolling update (KubeadmControlPlane's
    // `MachinesSpecUpToDate` condition).
    if outdated > 0 {
        return format!(
            "RollingUpdateInProgress: Rolling {outdated} replicas with outdated spec \
             ({current} replicas up to date)"
        );
    }
    format!("WaitingForMachines: {waiting} machine(s) not ready")
}

/// Microversion and driver shapes of a node-group body: a Cluster API cluster's groups have
/// no stack and no addresses; 1.14 adds the nodes' Kubernetes labels and taints (for
/// vexxhost's driver, the labels its MachineDeployments give: `node-role.kubernetes.io/{role}`
/// and `node.cluster.x-k8s.io/nodegroup`, `resources.py` `mutate_machine_deployment`).
fn shape_nodegroup(w: &World, g: usize, v: &mut Value, minor: u32, detail: bool) {
    let grp = &w.groups[g];
    let capi = grp
        .cluster
        .and_then(|c| w.clusters.get(c))
        .is_some_and(|c| c.capi.is_some());
    if capi {
        v["stack_id"] = Value::Null;
        if detail {
            v["node_addresses"] = json!([]);
        }
    }
    if minor >= 14 && detail {
        let mut labels = serde_json::Map::new();
        let mut taints = Vec::new();
        if capi {
            labels.insert(format!("node-role.kubernetes.io/{}", grp.role), json!(""));
            labels.insert("node.cluster.x-k8s.io/nodegroup".into(), json!(grp.name));
            if grp.role == "master" {
                taints.push(json!({"key": "node-role.kubernetes.io/control-plane", "value": "", "effect": "NoSchedule"}));
            }
        }
        v["node_labels"] = Value::Object(labels);
        v["node_taints"] = json!(taints);
    }
}

fn list_clusters(
    w: &World,
    sh: &Shared,
    req: &Req,
    detail: bool,
    minor: u32,
) -> Result<Reply, Reply> {
    let key = req.q("sort_key").unwrap_or("id");
    let mut items: Vec<(String, String, usize)> = (0..w.clusters.len())
        .map(|c| {
            let cl = &w.clusters[c];
            let k = match key {
                "name" => cl.name.clone(),
                "status" => cluster_status(w, c).0.to_string(),
                "created_at" => format!("{:020}", cl.created_ms),
                "node_count" => format!("{:010}", counts(w, c).0),
                // Magnum's default sort key is the integer id, i.e. creation order.
                _ => format!("{c:010}"),
            };
            (k, cl.uuid.clone(), c)
        })
        .collect();
    let url = format!(
        "{}/container-infra/v1/clusters{}",
        sh.cfg.base,
        if detail { "/detail" } else { "" }
    );
    let (slice, next) = page(req, &mut items, &url)?;
    let list: Vec<Value> = slice
        .iter()
        .map(|(_, _, c)| {
            let mut v = if detail {
                cluster_detail(w, sh, *c)
            } else {
                cluster_summary(w, sh, *c)
            };
            shape_cluster(w, *c, &mut v, minor, detail);
            v
        })
        .collect();
    let mut body = json!({"clusters": list});
    if let Some(n) = next {
        body["next"] = json!(n);
    }
    Ok(Reply::ok(body))
}

fn nodegroup_json(w: &World, sh: &Shared, g: usize, detail: bool) -> Value {
    let grp = &w.groups[g];
    let c = grp.cluster.unwrap_or(0);
    let cl_uuid = w
        .clusters
        .get(c)
        .map(|c| c.uuid.clone())
        .unwrap_or_default();
    let (status, reason) = stack_status(w, grp.ng_stack);
    let url = format!(
        "{}/container-infra/v1/clusters/{}/nodegroups/{}",
        sh.cfg.base, cl_uuid, grp.uuid
    );
    let mut v = json!({
        "uuid": grp.uuid,
        "name": grp.name,
        "flavor_id": grp.flavor,
        "image_id": grp.image(w),
        "node_count": node_count(w, g),
        "role": grp.role,
        "is_default": grp.is_default,
        "status": status.to_string(),
        "stack_id": w.stack(grp.ng_stack).map(|s| s.id.clone()),
        "links": [{"href": url, "rel": "self"}, {"href": url.replace("/v1/", "/"), "rel": "bookmark"}],
    });
    if detail {
        v["cluster_id"] = json!(cl_uuid);
        v["project_id"] = json!(w.cfg.project_id);
        v["docker_volume_size"] = json!(50);
        v["labels"] = json!(grp.labels);
        v["labels_overridden"] = json!({});
        v["labels_skipped"] = json!({});
        v["labels_added"] = json!({});
        v["node_addresses"] = json!(grp.ips());
        v["min_node_count"] = json!(grp.min_count);
        v["max_node_count"] = json!(grp.max_count);
        v["status_reason"] = json!(reason);
        v["version"] = json!(grp.version);
        v["merge_labels"] = json!(false);
        v["created_at"] = json!(iso_offset(grp.created_ms));
        v["updated_at"] = json!(w
            .stack(grp.ng_stack)
            .and_then(|s| s.updated_ms)
            .map(iso_offset));
    }
    v
}

fn list_nodegroups(
    w: &World,
    sh: &Shared,
    req: &Req,
    c: usize,
    detail: bool,
    minor: u32,
) -> Result<Reply, Reply> {
    let role = req.q("role");
    let key = req.q("sort_key").unwrap_or("id");
    let mut items: Vec<(String, String, usize)> = w.clusters[c]
        .groups
        .iter()
        .copied()
        .filter(|g| role.map(|r| w.groups[*g].role == r).unwrap_or(true))
        .map(|g| {
            let grp = &w.groups[g];
            let k = match key {
                "name" => grp.name.clone(),
                "role" => grp.role.clone(),
                "node_count" => format!("{:010}", node_count(w, g)),
                _ => format!("{g:010}"),
            };
            (k, grp.uuid.clone(), g)
        })
        .collect();
    let url = format!(
        "{}/container-infra/v1/clusters/{}/nodegroups",
        sh.cfg.base, w.clusters[c].uuid
    );
    let (slice, next) = page(req, &mut items, &url)?;
    let list: Vec<Value> = slice
        .iter()
        .map(|(_, _, g)| {
            let mut v = nodegroup_json(w, sh, *g, detail);
            shape_nodegroup(w, *g, &mut v, minor, detail);
            v
        })
        .collect();
    let mut body = json!({"nodegroups": list});
    if let Some(n) = next {
        body["next"] = json!(n);
    }
    Ok(Reply::ok(body))
}

fn template_json(w: &World, sh: &Shared, t: usize) -> Value {
    let tp = &w.templates[t];
    let url = format!(
        "{}/container-infra/v1/clustertemplates/{}",
        sh.cfg.base, tp.uuid
    );
    json!({
        "uuid": tp.uuid,
        "name": tp.name,
        "image_id": tp.image,
        "coe": "kubernetes",
        "labels": {"kube_tag": tp.coe_version},
        "network_driver": "calico",
        "server_type": "vm",
        "public": false,
        "hidden": false,
        "created_at": iso_offset(tp.created_ms),
        "links": [{"href": url, "rel": "self"}],
    })
}

fn busy(w: &World, c: usize, g: usize) -> Option<Reply> {
    let (st, _) = stack_status(w, w.groups[g].ng_stack);
    if st.state == State::InProgress {
        return Some(magnum_error(
            StatusCode::CONFLICT,
            &format!(
                "Cluster {} has a nodegroup {} with status {st}: wait for it to finish.",
                w.clusters[c].name, w.groups[g].name
            ),
        ));
    }
    None
}

fn resize(w: &mut World, req: &Req, c: usize) -> Result<Reply, Reply> {
    let body = req
        .json_body()
        .map_err(|e| magnum_error(StatusCode::BAD_REQUEST, &e))?;
    resize_body(w, &body, c)
}

/// `PATCH /clusters/{id}` with a JSON patch: only `replace /node_count` (the pre-1.7 way
/// to resize the default worker group, `openstack coe cluster update ... replace node_count=N`).
fn patch_cluster(w: &mut World, req: &Req, c: usize) -> Result<Reply, Reply> {
    let body = req
        .json_body()
        .map_err(|e| magnum_error(StatusCode::BAD_REQUEST, &e))?;
    let ops = body.as_array().ok_or_else(|| {
        magnum_error(
            StatusCode::BAD_REQUEST,
            "The request body must be a JSON patch (a list of operations).",
        )
    })?;
    let mut count = None;
    for op in ops {
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let verb = op.get("op").and_then(Value::as_str).unwrap_or("");
        match (verb, path) {
            ("replace", "/node_count") => {
                count = op.get("value").and_then(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())));
                if count.is_none() {
                    return Err(magnum_error(StatusCode::BAD_REQUEST, "Invalid input for field/attribute node_count."));
                }
            }
            _ => {
                return Err(magnum_error(
                    StatusCode::BAD_REQUEST,
                    &format!("Updating {path} is not supported by the caldera simulator (only replace /node_count)."),
                ))
            }
        }
    }
    match count {
        Some(n) => resize_body(w, &json!({ "node_count": n }), c),
        None => Err(magnum_error(StatusCode::BAD_REQUEST, "Nothing to update.")),
    }
}

fn resize_body(w: &mut World, body: &Value, c: usize) -> Result<Reply, Reply> {
    let count = body.get("node_count").and_then(Value::as_u64).ok_or_else(|| magnum_error(StatusCode::BAD_REQUEST, "Invalid input for field/attribute node_count. Value: None. Mandatory field missing."))? as u32;
    let g = match body.get("nodegroup").and_then(Value::as_str) {
        Some(ng) => nodegroup(w, c, ng)?,
        None => default_group(w, c, "worker").ok_or_else(|| {
            magnum_error(StatusCode::BAD_REQUEST, "Cluster has no worker nodegroup")
        })?,
    };
    let grp = &w.groups[g];
    if count > crate::heat::stack_routes::MAX_MEMBERS {
        return Err(magnum_error(
            StatusCode::BAD_REQUEST,
            "node_count is larger than the simulator holds.",
        ));
    }
    if grp.role == "master" {
        return Err(magnum_error(
            StatusCode::BAD_REQUEST,
            "Resizing a nodegroup with role master is not supported.",
        ));
    }
    if count < grp.min_count {
        return Err(magnum_error(
            StatusCode::BAD_REQUEST,
            &format!(
                "Resizing {} below its min_node_count ({}) is not allowed.",
                grp.name, grp.min_count
            ),
        ));
    }
    if let Some(max) = grp.max_count.filter(|m| count > *m) {
        return Err(magnum_error(
            StatusCode::BAD_REQUEST,
            &format!(
                "Resizing {} above its max_node_count ({max}) is not allowed.",
                grp.name
            ),
        ));
    }
    if let Some(r) = busy(w, c, g) {
        return Err(r);
    }
    // Nodes to remove may be given as server ids, server names or member indices.
    let mut remove: Vec<String> = Vec::new();
    for n in body
        .get("nodes_to_remove")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = match n {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => continue,
        };
        let idx = grp
            .members
            .iter()
            .find(|(i, m)| m.server_id == s || m.server_name == s || i.to_string() == s)
            .map(|(i, _)| *i);
        match idx {
            Some(i) => remove.push(i.to_string()),
            None => {
                return Err(magnum_error(
                    StatusCode::BAD_REQUEST,
                    &format!("Node {s} is not a member of nodegroup {}.", grp.name),
                ))
            }
        }
    }
    // Magnum's resize: a stack update of the node group's stack with
    // `number_of_minions` and `minions_to_remove` (k8s_template_def.get_scale_params).
    let ng = grp.ng_stack;
    let layout = grp.layout;
    let mut params = w.stack(ng).map(|s| s.params.clone()).unwrap_or_default();
    params.insert(layout.key("count").into(), count.to_string());
    if let Some(key) = layout.removal_key() {
        let value = if layout.is_magnum() {
            json!(remove)
        } else {
            json!([{ "resource_list": remove }])
        };
        params.insert(key.into(), value.to_string());
    }
    group::start_update(
        w,
        g,
        UpdateRequest {
            params,
            hooks: None,
            action: Action::Update,
        },
    )
    .map_err(|e| magnum_error(StatusCode::BAD_REQUEST, &e))?;
    let now = w.now();
    w.clusters[c].updated_ms = Some(now);
    Ok(Reply::json(
        StatusCode::ACCEPTED,
        json!({"uuid": w.clusters[c].uuid}),
    ))
}

/// The node group stack's parameters for an upgrade of group `g` to `image`, `batch`
/// members at a time (no removals pending), and whether the image changes.
fn image_update(
    w: &World,
    g: usize,
    image: &str,
    batch: u64,
) -> (std::collections::BTreeMap<String, String>, bool) {
    let layout = w.groups[g].layout;
    let mut params = w
        .stack(w.groups[g].ng_stack)
        .map(|s| s.params.clone())
        .unwrap_or_default();
    let changed = params.get(layout.key("image")).map(String::as_str) != Some(image);
    params.insert(layout.key("image").into(), image.to_string());
    params.insert("update_max_batch_size".into(), batch.to_string());
    if let Some(key) = layout.removal_key() {
        params.insert(key.into(), "[]".into());
    }
    (params, changed)
}

/// vexxhost `magnum-cluster-api`'s `upgrade_cluster`: the cluster's Cluster API topology
/// gets the template's version and image, whatever `nodegroup` and `max_batch_size` say,
/// and Cluster API rolls every node group (control plane and each MachineDeployment) one
/// new machine at a time (`group::Replacement`). Cluster API's order (control plane first,
/// then the MachineDeployments) is not simulated: all groups roll at once.
fn upgrade_capi(w: &mut World, c: usize, t: usize) -> Result<Reply, Reply> {
    let groups = w.clusters[c].groups.clone();
    if let Some(r) = groups.iter().find_map(|g| busy(w, c, *g)) {
        return Err(r);
    }
    let image = w.templates[t].image.clone();
    for g in groups {
        let (params, changed) = image_update(w, g, &image, 1);
        if changed {
            crate::world::capi::new_machine_set(w, g);
        }
        group::start_update(
            w,
            g,
            UpdateRequest {
                params,
                hooks: None,
                action: Action::Update,
            },
        )
        .map_err(|e| magnum_error(StatusCode::BAD_REQUEST, &e))?;
        w.groups[g].version = w.templates[t].coe_version.clone();
    }
    w.clusters[c].template = t;
    let now = w.now();
    w.clusters[c].updated_ms = Some(now);
    Ok(Reply::json(
        StatusCode::ACCEPTED,
        json!({"uuid": w.clusters[c].uuid}),
    ))
}

fn upgrade(w: &mut World, req: &Req, c: usize) -> Result<Reply, Reply> {
    let body = req
        .json_body()
        .map_err(|e| magnum_error(StatusCode::BAD_REQUEST, &e))?;
    let tid = body.get("cluster_template").and_then(Value::as_str).ok_or_else(|| magnum_error(StatusCode::BAD_REQUEST, "Invalid input for field/attribute cluster_template. Value: None. Mandatory field missing."))?;
    let t = w
        .templates
        .iter()
        .position(|t| t.uuid == tid || t.name == tid)
        .ok_or_else(|| {
            magnum_error(
                StatusCode::NOT_FOUND,
                &format!("ClusterTemplate {tid} could not be found."),
            )
        })?;
    if w.clusters[c].capi.is_some() {
        return upgrade_capi(w, c, t);
    }
    let batch = match body.get("max_batch_size") {
        None | Some(Value::Null) => 1,
        Some(v) => v.as_u64().filter(|b| *b > 0).ok_or_else(|| {
            magnum_error(
                StatusCode::BAD_REQUEST,
                "max_batch_size must be a positive integer",
            )
        })?,
    };
    let g = match body.get("nodegroup").and_then(Value::as_str) {
        Some(ng) => nodegroup(w, c, ng)?,
        None => default_group(w, c, "worker").ok_or_else(|| {
            magnum_error(StatusCode::BAD_REQUEST, "Cluster has no worker nodegroup")
        })?,
    };
    if let Some(r) = busy(w, c, g) {
        return Err(r);
    }
    let image = w.templates[t].image.clone();
    let (params, _) = image_update(w, g, &image, batch);
    group::start_update(
        w,
        g,
        UpdateRequest {
            params,
            hooks: None,
            action: Action::Update,
        },
    )
    .map_err(|e| magnum_error(StatusCode::BAD_REQUEST, &e))?;
    w.groups[g].version = w.templates[t].coe_version.clone();
    if w.groups[g].is_default {
        w.clusters[c].template = t;
    }
    let now = w.now();
    w.clusters[c].updated_ms = Some(now);
    Ok(Reply::json(
        StatusCode::ACCEPTED,
        json!({"uuid": w.clusters[c].uuid}),
    ))
}
