//! Heat's JSON shapes for stacks, resources, outputs and events (field names, links and
//! texts as captured from a real Heat 27; see tests/fixtures/heat/).

use crate::clock::iso_z;
use crate::world::{format_uuid, group, Action, Event, Layout, Resource, StackRole, World};
use serde_json::{json, Map, Value};

pub fn stack_url(w: &World, base: &str, ix: usize) -> String {
    match w.stack(ix) {
        Some(s) => format!(
            "{base}/orchestration/v1/{}/stacks/{}/{}",
            w.cfg.project_id,
            quote(&s.name),
            s.id
        ),
        None => String::new(),
    }
}

/// A path segment percent-encoded like Python's `urllib.parse.quote` (what Heat's links
/// and redirects carry): a name with a space or a control character stays one valid URL.
fn quote(seg: &str) -> std::borrow::Cow<'_, str> {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
    if seg.bytes().all(plain) {
        return std::borrow::Cow::Borrowed(seg);
    }
    let mut out = String::with_capacity(seg.len() * 3);
    for b in seg.bytes() {
        if plain(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    std::borrow::Cow::Owned(out)
}

fn opt_time(t: Option<i64>) -> Value {
    t.map(|t| Value::String(iso_z(t))).unwrap_or(Value::Null)
}

/// The fields of a stack list item.
pub fn stack_summary(w: &World, base: &str, ix: usize) -> Value {
    let Some(s) = w.stack(ix) else {
        return Value::Null;
    };
    json!({
        "id": s.id,
        "stack_name": s.name,
        "links": [{"href": stack_url(w, base, ix), "rel": "self"}],
        "creation_time": iso_z(s.created_ms),
        "updated_time": opt_time(s.updated_ms),
        "deletion_time": opt_time(s.deleted_ms),
        // Heat 27 lists every stack with an empty description (stack show has the real one).
        "description": "",
        "stack_owner": w.cfg.user_name,
        "parent": s.parent.and_then(|p| w.stack(p)).map(|p| Value::String(p.id.clone())).unwrap_or(Value::Null),
        "stack_user_project_id": w.cfg.project_id,
        // Heat 27 lists an empty tag list as null (stack show says []).
        "tags": if s.tags.is_empty() { Value::Null } else { json!(s.tags) },
        "project": w.cfg.project_id,
        "stack_status": s.status.to_string(),
        "stack_status_reason": s.reason,
    })
}

/// How many members resolving this stack's outputs walks through.
pub fn output_members(w: &World, ix: usize) -> usize {
    match w.stack(ix).map(|s| s.role) {
        Some(StackRole::Group(g)) => w.groups[g].members.len().max(1),
        Some(StackRole::NodeGroup(_)) | Some(StackRole::Cluster(_)) => w
            .stack_groups(ix)
            .iter()
            .map(|g| w.groups[*g].members.len())
            .sum::<usize>()
            .max(1),
        _ => 1,
    }
}

/// Whether member `m`'s address resource exists yet (a member that failed first has none,
/// and Heat resolves its address to null).
fn addressed(w: &World, g: usize, m: &group::Member) -> bool {
    let address = w.groups[g].layout.address().0;
    w.stack(m.stack)
        .and_then(|st| st.resource(address))
        .map(|r| r.status.action != Action::Init)
        .unwrap_or(false)
}

/// A member's floating IP, null where it has none (the cluster has no floating IPs) or not
/// yet (its resource is not created).
fn floating_ip(w: &World, g: usize, m: &group::Member) -> Value {
    let created = w.groups[g]
        .layout
        .floating()
        .and_then(|name| w.stack(m.stack)?.resource(name))
        .is_some_and(|r| r.status.action != Action::Init);
    match created
        .then(|| m.ip.parse::<std::net::Ipv4Addr>().ok())
        .flatten()
    {
        // Deterministic, on another network than the fixed address: 172.16-31.x.y.
        Some(ip) => {
            let [_, b, c, d] = ip.octets();
            json!(format!("172.{}.{c}.{d}", 16 + b % 16))
        }
        None => Value::Null,
    }
}

/// A member's address as its template's output gives it, null until created.
fn member_ip(w: &World, g: usize, m: &group::Member) -> Value {
    if addressed(w, g, m) {
        json!(m.ip)
    } else {
        Value::Null
    }
}

/// A member template output: caldera's node.yaml (`ip`, `name`...) or Magnum's
/// kubemaster/kubeminion.yaml (`kube_minion_ip` from the port's fixed_ips,
/// `kube_minion_external_ip` from a floating IP Magnum's clusters here do not have, null;
/// `OS::stack_id` = the Nova server id, so removal policies can name servers).
fn member_output(w: &World, g: usize, m: &group::Member, key: &str) -> Option<Value> {
    match (w.groups[g].layout, key) {
        (Layout::Caldera, "ip") => Some(json!(m.ip)),
        (Layout::Caldera, "image") => Some(json!(m.image)),
        (Layout::Caldera, "name") => Some(json!(m.server_name)),
        (Layout::Caldera, "server_id") => Some(json!(m.server_id)),
        (Layout::MagnumMasters, "kube_master_ip") | (Layout::MagnumMinions, "kube_minion_ip") => {
            Some(member_ip(w, g, m))
        }
        (Layout::MagnumMasters, "kube_master_external_ip")
        | (Layout::MagnumMinions, "kube_minion_external_ip") => Some(floating_ip(w, g, m)),
        (l, "OS::stack_id") if l.is_magnum() => Some(json!(m.server_id)),
        _ => None,
    }
}

pub fn output_value(w: &World, ix: usize, key: &str) -> Option<Value> {
    let s = w.stack(ix)?;
    // Magnum's aggregate outputs: `{get_attr: [kube_minions, kube_minion_ip]}` and friends,
    // one entry per member in member order.
    for g in w.stack_groups(ix) {
        let layout = w.groups[g].layout;
        let Some((private, public)) = layout.stack_outputs() else {
            continue;
        };
        let member_key = match layout {
            Layout::MagnumMasters => ("kube_master_ip", "kube_master_external_ip"),
            _ => ("kube_minion_ip", "kube_minion_external_ip"),
        };
        let attr = if key == private {
            member_key.0
        } else if key == public {
            member_key.1
        } else {
            continue;
        };
        return Some(Value::Array(
            w.groups[g]
                .members
                .values()
                .map(|m| member_output(w, g, m, attr).unwrap_or(Value::Null))
                .collect(),
        ));
    }
    match (s.role, key) {
        // A member whose address was never created (it failed first) is null, like Heat.
        (StackRole::NodeGroup(g), "ips") => Some(Value::Array(
            w.groups[g]
                .members
                .values()
                .map(|m| member_ip(w, g, m))
                .collect(),
        )),
        (StackRole::NodeGroup(g), "names") => Some(json!(w.groups[g]
            .members
            .values()
            .map(|m| m.server_name.as_str())
            .collect::<Vec<_>>())),
        // `get_param: count`, so the requested count even while members come and go.
        (StackRole::NodeGroup(_), "count") => Some(json!(s
            .params
            .get("count")
            .and_then(|c| c.parse::<u64>().ok())
            .unwrap_or(0))),
        (StackRole::NodeGroup(g), "refs_map") => Some(group::refs_map(w, g)),
        (StackRole::Member(g, i), key) => w.groups[g]
            .members
            .get(&i)
            .and_then(|m| member_output(w, g, m, key)),
        (StackRole::Cluster(c), "api_address") => Some(json!(w.clusters[c].api_address)),
        _ => None,
    }
}

/// An output's expression as the stack's template writes it (`GET .../template`), mirroring
/// `templates/cluster/`: what a client reads to learn where values come from.
pub fn output_expression(role: StackRole, key: &str) -> Option<Value> {
    match (role, key) {
        (StackRole::NodeGroup(_), "ips") => Some(json!({"get_attr": ["nodes", "ip"]})),
        (StackRole::NodeGroup(_), "names") => Some(json!({"get_attr": ["nodes", "name"]})),
        (StackRole::NodeGroup(_), "refs_map") => Some(json!({"get_attr": ["nodes", "refs_map"]})),
        (StackRole::NodeGroup(_), "count") => Some(json!({"get_param": "count"})),
        (StackRole::Member(..), "ip") => Some(json!({"get_attr": ["address", "value"]})),
        (StackRole::Member(..), "image") => Some(json!({"get_param": "image"})),
        (StackRole::Member(..), "name") => Some(json!({"get_param": "name"})),
        (StackRole::Member(..), "server_id") => Some(json!({"get_resource": "server"})),
        // Magnum's kubecluster.yaml and kubemaster/kubeminion.yaml.
        (_, "kube_masters_private") => {
            Some(json!({"get_attr": ["kube_masters", "kube_master_ip"]}))
        }
        (_, "kube_masters") => {
            Some(json!({"get_attr": ["kube_masters", "kube_master_external_ip"]}))
        }
        (_, "kube_minions_private") => {
            Some(json!({"get_attr": ["kube_minions", "kube_minion_ip"]}))
        }
        (_, "kube_minions") => {
            Some(json!({"get_attr": ["kube_minions", "kube_minion_external_ip"]}))
        }
        (StackRole::Cluster(_), "api_address") => {
            Some(json!({"get_attr": ["api_address_floating_switch", "value"]}))
        }
        (StackRole::Member(..), "kube_master_ip") => {
            Some(json!({"get_attr": ["kube_master_eth0", "fixed_ips", 0, "ip_address"]}))
        }
        (StackRole::Member(..), "kube_minion_ip") => {
            Some(json!({"get_attr": ["kube_minion_eth0", "fixed_ips", 0, "ip_address"]}))
        }
        (StackRole::Member(..), "kube_master_external_ip") => {
            Some(json!({"get_attr": ["kube_master_floating", "floating_ip_address"]}))
        }
        (StackRole::Member(..), "kube_minion_external_ip") => {
            Some(json!({"get_attr": ["kube_minion_floating", "floating_ip_address"]}))
        }
        _ => None,
    }
}

pub fn outputs(w: &World, ix: usize, resolve: bool) -> Value {
    let Some(s) = w.stack(ix) else {
        return json!([]);
    };
    Value::Array(
        s.outputs
            .iter()
            .map(|o| {
                let mut v = json!({"output_key": o.key, "description": o.description});
                if resolve {
                    v["output_value"] = output_value(w, ix, o.key).unwrap_or(Value::Null);
                }
                v
            })
            .collect(),
    )
}

pub fn stack_detail(w: &World, base: &str, ix: usize, resolve_outputs: bool) -> Value {
    let Some(s) = w.stack(ix) else {
        return Value::Null;
    };
    let mut v = stack_summary(w, base, ix);
    if let Some(o) = v.as_object_mut() {
        o.remove("project");
    }
    v["description"] = json!(s.description);
    v["tags"] = json!(s.tags);
    let params: Map<String, Value> = s
        .params
        .iter()
        .map(|(k, v)| match s.hidden_params.contains(k) {
            // Heat never gives a hidden parameter's value back.
            true => (k.clone(), Value::String("******".into())),
            false => (k.clone(), Value::String(v.clone())),
        })
        .collect();
    v["parameters"] = Value::Object(params);
    v["template_description"] = json!(s.description);
    v["notification_topics"] = json!([]);
    v["capabilities"] = json!([]);
    v["disable_rollback"] = json!(s.disable_rollback);
    v["timeout_mins"] = json!(s.timeout_mins);
    // Heat leaves `outputs` out entirely when they are not resolved.
    if resolve_outputs {
        v["outputs"] = outputs(w, ix, true);
    }
    v
}

/// Attributes of a resource, as `with_detail=true` and resource show resolve them.
pub fn attributes(w: &World, stack_ix: usize, r: &Resource) -> Value {
    let Some(s) = w.stack(stack_ix) else {
        return json!({});
    };
    match (s.role, &*r.rtype) {
        (_, "OS::Heat::Value") => json!({"value": r.value}),
        (StackRole::Member(g, i), "OS::Nova::Server") => match w.groups[g].members.get(&i) {
            Some(m) => {
                json!({"name": m.server_name, "networks": {"private": [m.ip]}, "first_address": m.ip})
            }
            None => json!({}),
        },
        // A member (template resource) exposes its nested stack's outputs.
        (StackRole::Group(g), _) => {
            let idx: Option<u32> = r.name.parse().ok();
            match idx.and_then(|i| w.groups[g].members.get(&i)) {
                Some(m) => {
                    let mut out = Map::new();
                    for key in w.groups[g].layout.member_outputs() {
                        let v = if *key == "ip" {
                            member_ip(w, g, m)
                        } else {
                            member_output(w, g, m, key).unwrap_or(Value::Null)
                        };
                        out.insert(key.to_string(), v);
                    }
                    Value::Object(out)
                }
                None => json!({}),
            }
        }
        // A Neutron port: its fixed_ips hold the member's address (Magnum's members).
        (StackRole::Member(g, i), "OS::Neutron::Port") => match w.groups[g].members.get(&i) {
            Some(m) => json!({
                "fixed_ips": if addressed(w, g, m) {
                    json!([{"subnet_id": w.groups[g].uuid, "ip_address": m.ip}])
                } else {
                    Value::Null
                },
                "name": format!("{}-port", m.server_name),
                "status": "ACTIVE",
            }),
            None => json!({}),
        },
        // Neutron's floating IP, associated with the member's port.
        (StackRole::Member(g, i), "OS::Neutron::FloatingIP") => match w.groups[g].members.get(&i) {
            Some(m) => json!({"floating_ip_address": floating_ip(w, g, m)}),
            None => json!({}),
        },
        // What Heat 27 shows for the group without naming an attribute (measured): the
        // list-valued attributes come out null.
        (StackRole::NodeGroup(_) | StackRole::Cluster(_), "OS::Heat::ResourceGroup") => {
            match w.group_by_resource(stack_ix, &r.name) {
                Some(g) => json!({
                    "refs_map": null,
                    "refs": null,
                    "removed_rsrc_list": w.groups[g].blacklist.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
                    "attributes": null,
                }),
                None => json!({}),
            }
        }
        _ => json!({}),
    }
}

pub fn resource_json(
    w: &World,
    base: &str,
    stack_ix: usize,
    r: &Resource,
    detail: bool,
    nested_item: bool,
) -> Value {
    let surl = stack_url(w, base, stack_ix);
    let mut links = vec![
        json!({"href": format!("{surl}/resources/{}", r.name), "rel": "self"}),
        json!({"href": surl, "rel": "stack"}),
    ];
    if let Some(n) = r.nested.filter(|n| w.stack(*n).is_some()) {
        links.push(json!({"href": stack_url(w, base, n), "rel": "nested"}));
    }
    let mut v = json!({
        "updated_time": iso_z(r.updated_ms),
        "creation_time": iso_z(r.created_ms),
        "logical_resource_id": &*r.name,
        "resource_name": &*r.name,
        "physical_resource_id": r.physical_id,
        "resource_status": r.status.to_string(),
        "resource_status_reason": r.reason,
        "resource_type": &*r.rtype,
        "links": links,
        "required_by": r.required_by.iter().map(|x| &**x).collect::<Vec<_>>(),
    });
    if nested_item {
        if let Some(owner) = w.stack(stack_ix).and_then(|s| s.owner_resource.clone()) {
            v["parent_resource"] = json!(&*owner);
        }
    }
    if detail {
        v["description"] = json!(r.description);
        v["attributes"] = attributes(w, stack_ix, r);
    }
    v
}

pub fn event_json(
    w: &World,
    base: &str,
    stack_ix: usize,
    e: &Event,
    root: Option<usize>,
    detail: bool,
) -> Value {
    let surl = stack_url(w, base, stack_ix);
    let id = format_uuid(e.id);
    let mut links = vec![
        json!({"href": format!("{surl}/resources/{}/events/{id}", e.resource_name), "rel": "self"}),
        json!({"href": format!("{surl}/resources/{}", e.resource_name), "rel": "resource"}),
        json!({"href": surl, "rel": "stack"}),
    ];
    if let Some(r) = root {
        links.push(json!({"href": stack_url(w, base, r), "rel": "root_stack"}));
    }
    let mut v = json!({
        "id": id,
        "event_time": iso_z(e.time_ms),
        "resource_name": &*e.resource_name,
        "logical_resource_id": &*e.resource_name,
        "physical_resource_id": &*e.physical_id,
        "resource_status": e.status.to_string(),
        "resource_status_reason": &*e.reason,
        "links": links,
    });
    if detail {
        v["resource_type"] = json!(&*e.rtype);
        v["resource_properties"] = json!({});
    }
    v
}
