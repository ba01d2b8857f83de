//! Heat's JSON shapes for stacks, resources, outputs and events (field names, links and
//! texts as captured from a real Heat 27; see tests/fixtures/heat/).

use crate::sim::clock::iso_z;
use crate::sim::world::{format_uuid, group, Action, Event, Resource, StackRole, World};
use serde_json::{json, Map, Value};

pub fn stack_url(w: &World, base: &str, ix: usize) -> String {
    match w.stack(ix) {
        Some(s) => format!(
            "{base}/orchestration/v1/{}/stacks/{}/{}",
            w.cfg.project_id, s.name, s.id
        ),
        None => String::new(),
    }
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
        Some(StackRole::NodeGroup(g)) | Some(StackRole::Group(g)) => {
            w.groups[g].members.len().max(1)
        }
        _ => 1,
    }
}

pub fn output_value(w: &World, ix: usize, key: &str) -> Option<Value> {
    let s = w.stack(ix)?;
    match (s.role, key) {
        // A member whose address was never created (it failed first) is null, like Heat.
        (StackRole::NodeGroup(g), "ips") => Some(Value::Array(
            w.groups[g]
                .members
                .values()
                .map(|m| {
                    let created = w
                        .stack(m.stack)
                        .and_then(|st| st.resource("address"))
                        .map(|r| r.status.action != Action::Init)
                        .unwrap_or(false);
                    if created {
                        json!(m.ip)
                    } else {
                        Value::Null
                    }
                })
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
        (StackRole::Member(g, i), key) => w.groups[g].members.get(&i).and_then(|m| match key {
            "ip" => Some(json!(m.ip)),
            "image" => Some(json!(m.image)),
            "name" => Some(json!(m.server_name)),
            "server_id" => Some(json!(m.server_id)),
            _ => None,
        }),
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
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
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
                    let addressed = w
                        .stack(m.stack)
                        .and_then(|st| st.resource("address"))
                        .map(|a| a.status.action != Action::Init)
                        .unwrap_or(false);
                    let ip = if addressed { json!(m.ip) } else { Value::Null };
                    json!({"image": m.image, "name": m.server_name, "server_id": m.server_id, "ip": ip})
                }
                None => json!({}),
            }
        }
        // What Heat 27 shows for the group without naming an attribute (measured): the
        // list-valued attributes come out null.
        (StackRole::NodeGroup(g), "OS::Heat::ResourceGroup") => json!({
            "refs_map": null,
            "refs": null,
            "removed_rsrc_list": w.groups[g].blacklist.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
            "attributes": null,
        }),
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
