//! Stack list, create, show, update (PUT/PATCH), outputs, template and actions.

use super::shapes::{
    output_members, output_value, outputs, stack_detail, stack_summary, stack_url,
};
use super::stack_404;
use crate::reply::{heat_error, Reply, Req};
use crate::shared::Shared;
use crate::world::build::create_group;
use crate::world::group::{self, hooks_from_env, UpdateRequest};
use crate::world::siblings;
use crate::world::{completed, started, Action, GroupSpec, StackRole, State, Status, World};
use axum::http::StatusCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn bad(msg: &str) -> Reply {
    heat_error(StatusCode::BAD_REQUEST, "HTTPBadRequest", msg)
}

pub(crate) fn int_param(req: &Req, key: &str) -> Result<Option<i64>, Reply> {
    match req.q(key) {
        None => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .map(Some)
            .map_err(|_| bad(&format!("Only integer is acceptable by '{key}'."))),
    }
}

pub(crate) fn sort_dir(req: &Req, default_desc: bool) -> Result<bool, Reply> {
    match req.q("sort_dir") {
        None => Ok(default_desc),
        Some("asc") => Ok(false),
        Some("desc") => Ok(true),
        // Heat 27 lets a ValueError escape here: the body has no message (measured).
        Some(_) => Err(Reply::json(
            StatusCode::BAD_REQUEST,
            json!({
                "code": 400,
                "title": "Bad Request",
                "explanation": "The server could not comply with the request since it is either malformed or otherwise incorrect.",
                "error": {"type": "ValueError", "traceback": null},
            }),
        )),
    }
}

pub fn list(w: &mut World, sh: &Shared, req: &Req) -> Reply {
    let limit = match int_param(req, "limit") {
        Ok(l) => l,
        Err(r) => return r,
    };
    let keys: Vec<&str> = req
        .q_all("sort_keys")
        .into_iter()
        .flat_map(|k| k.split(','))
        .filter(|k| {
            matches!(
                *k,
                "stack_name" | "stack_status" | "creation_time" | "updated_time"
            )
        })
        .collect();
    // Heat's stack query defaults to desc whatever the keys (unlike events).
    let desc = match sort_dir(req, true) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let show_nested = req.q_bool("show_nested").unwrap_or(false);
    let show_deleted = req.q_bool("show_deleted").unwrap_or(false);
    let f = |k: &str| req.q_all(k);
    let (ids, names, actions, owners) = (f("id"), f("name"), f("action"), f("owner_id"));
    // `status` and `stack_status` both filter (bare or ACTION_STATE form), as measured.
    let mut statuses = f("status");
    statuses.extend(f("stack_status"));
    let tenants: Vec<&str> = f("tenant");
    let users: Vec<&str> = f("username");
    // Tag filters take comma-separated lists: all of `tags`, any of `tags_any`, etc.
    let tag_list = |k: &str| -> Vec<String> {
        req.q(k)
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default()
    };
    let (all_t, any_t, not_all_t, not_any_t) = (
        tag_list("tags"),
        tag_list("tags_any"),
        tag_list("not_tags"),
        tag_list("not_tags_any"),
    );
    let tags_ok = |t: &[String]| {
        (all_t.is_empty() || all_t.iter().all(|x| t.contains(x)))
            && (any_t.is_empty() || any_t.iter().any(|x| t.contains(x)))
            && (not_all_t.is_empty() || !not_all_t.iter().all(|x| t.contains(x)))
            && (not_any_t.is_empty() || !not_any_t.iter().any(|x| t.contains(x)))
    };
    let mut items: Vec<usize> = w
        .stacks()
        .filter(|(ix, _)| !w.heat_hidden(*ix))
        .filter(|(_, s)| show_nested || s.parent.is_none())
        .filter(|(_, s)| show_deleted || s.deleted_ms.is_none())
        .filter(|(_, s)| ids.is_empty() || ids.contains(&s.id.as_str()))
        .filter(|(_, s)| names.is_empty() || names.contains(&s.name.as_str()))
        .filter(|(_, s)| super::status_matches(&statuses, s.status, "status"))
        .filter(|(_, s)| super::status_matches(&actions, s.status, "action"))
        .filter(|(_, s)| {
            owners.is_empty()
                || s.parent
                    .and_then(|p| w.stack(p))
                    .map(|p| owners.contains(&p.id.as_str()))
                    .unwrap_or(false)
        })
        .filter(|_| tenants.is_empty() || tenants.contains(&w.cfg.project_id.as_str()))
        .filter(|_| users.is_empty() || users.contains(&w.cfg.user_name.as_str()))
        .filter(|(_, s)| tags_ok(&s.tags))
        .map(|(i, _)| i)
        .collect();
    let keyed = |ix: usize| -> (Vec<String>, String) {
        let Some(s) = w.stack(ix) else {
            return (Vec::new(), String::new());
        };
        let mut k = Vec::new();
        let ks: &[&str] = if keys.is_empty() {
            &["creation_time"]
        } else {
            &keys
        };
        for key in ks {
            k.push(match *key {
                "stack_name" => s.name.clone(),
                "stack_status" => s.status.to_string(),
                "updated_time" => format!("{:020}", s.updated_ms.unwrap_or(0)),
                _ => format!("{:020}", s.created_ms),
            });
        }
        (k, s.id.clone())
    };
    let mut sorted: Vec<((Vec<String>, String), usize)> =
        items.drain(..).map(|i| (keyed(i), i)).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    if desc {
        sorted.reverse();
    }
    let count = sorted.len();
    let start = match req.q("marker") {
        Some(m) => sorted
            .iter()
            .position(|(k, _)| k.1 == m)
            .map(|p| p + 1)
            .unwrap_or(0),
        None => 0,
    };
    let end = match limit {
        Some(l) if l >= 0 => start.saturating_add(l as usize).min(count),
        _ => count,
    };
    let page: Vec<Value> = sorted[start.min(count)..end.max(start.min(count))]
        .iter()
        .map(|(_, ix)| stack_summary(w, &sh.cfg.base, *ix))
        .collect();
    let mut body = json!({ "stacks": page });
    if req.q_bool("with_count").unwrap_or(false) {
        body["count"] = json!(count);
    }
    Reply::ok(body)
}

pub fn show(w: &mut World, sh: &Shared, req: &Req, ix: usize) -> Reply {
    let resolve = req.q_bool("resolve_outputs").unwrap_or(true);
    let body = json!({ "stack": stack_detail(w, &sh.cfg.base, ix, resolve) });
    let keys: Vec<String> = w
        .stack(ix)
        .map(|s| s.outputs.iter().map(|o| o.key.to_string()).collect())
        .unwrap_or_default();
    let mut r = Reply::ok(body);
    if resolve && !keys.is_empty() {
        // Heat evaluates every output of the stack, walking each member: the slow call.
        let cost = keys
            .iter()
            .map(|k| output_cost(w, sh, ix, k))
            .max()
            .unwrap_or_default();
        r = r.with_delay(cost);
    }
    r
}

/// What resolving output `key` of stack `ix` costs now. Heat walks every member the first
/// time and then keeps the value until the stack changes (measured on Heat 27: 12 s for 200
/// members cold, 0.05 s after); a request while it is still resolving waits for the rest.
fn output_cost(w: &mut World, sh: &Shared, ix: usize, key: &str) -> std::time::Duration {
    let full = sh
        .cfg
        .output_cost_per_member
        .saturating_mul(output_members(w, ix) as u32);
    let Some(stack) = w.stack(ix) else {
        return full;
    };
    // Only a settled stack keeps its values (an action clears them), and only an output over
    // a group is worth keeping: one member's output costs Heat about the same every time.
    if stack.status.state != crate::world::State::Complete || output_members(w, ix) < 2 {
        return full;
    }
    let version = format!(
        "{}|{:?}|{}",
        stack.status,
        stack.updated_ms,
        output_members(w, ix)
    );
    let now = std::time::Instant::now();
    let slot = (ix, key.to_string());
    match w.resolved_outputs.get(&slot) {
        Some((v, ready)) if *v == version => ready.saturating_duration_since(now),
        _ => {
            w.resolved_outputs.insert(slot, (version, now + full));
            full
        }
    }
}

pub fn outputs_list(w: &mut World, ix: usize) -> Reply {
    Reply::ok(json!({ "outputs": outputs(w, ix, false) }))
}

pub fn output_show(w: &mut World, sh: &Shared, ix: usize, key: &str) -> Reply {
    let Some(desc) = w
        .stack(ix)
        .and_then(|s| s.outputs.iter().find(|o| o.key == key))
        .map(|o| o.description)
    else {
        return heat_error(
            StatusCode::NOT_FOUND,
            "NotFound",
            // Sic: Heat 27 does not fill in the key (measured).
            "Specified output key {} not found.",
        );
    };
    let value = output_value(w, ix, key).unwrap_or(Value::Null);
    let cost = output_cost(w, sh, ix, key);
    Reply::ok(json!({"output": {"output_key": key, "description": desc, "output_value": value}}))
        .with_delay(cost)
}

pub fn template(w: &mut World, ix: usize) -> Reply {
    let Some(s) = w.stack(ix) else {
        return stack_404("");
    };
    let mut resources = serde_json::Map::new();
    for r in &s.resources {
        let mut definition = json!({"type": &*r.rtype});
        if let Some(properties) = server_properties(w, s.role, &r.name) {
            definition["properties"] = properties;
        }
        if let Some(properties) = group_properties(w, r) {
            definition["properties"] = properties;
        }
        resources.insert(r.name.to_string(), definition);
    }
    let params: serde_json::Map<String, Value> = s
        .params
        .keys()
        .filter(|k| !k.starts_with("OS::"))
        .map(|k| {
            let kind = declared_type(s, k);
            match s.hidden_params.contains(k) {
                true => (k.clone(), json!({"type": kind, "hidden": true})),
                false => (k.clone(), json!({"type": kind})),
            }
        })
        .collect();
    Reply::ok(json!({
        "heat_template_version": "2021-04-16",
        "description": s.description,
        "parameters": params,
        "resources": resources,
        "outputs": s.outputs.iter().map(|o| {
            let mut out = json!({"description": o.description});
            if let Some(value) = super::shapes::output_expression(s.role, o.key) {
                out["value"] = value;
            }
            (o.key.to_string(), out)
        }).collect::<serde_json::Map<_, _>>(),
    }))
}

/// The type a stack's template declares for parameter `k`: the submitted template's; for a
/// seeded stack, what caldera's `nodegroup.yaml` declares (its numbers), else `string`.
fn declared_type<'a>(s: &'a crate::world::Stack, k: &str) -> &'a str {
    const SEEDED_NUMBERS: [&str; 3] = ["count", "node_fail_index", "action_wait_secs"];
    match s.param_types.get(k) {
        Some(kind) => kind,
        None if SEEDED_NUMBERS.contains(&k) => "number",
        None => "string",
    }
}

/// A member's server as its template writes it: the image from the member's parameter
/// (caldera's node.yaml `image`, Magnum's kubeminion.yaml `server_image`, which an update
/// sets), the group's flavor as a literal (the simulator never changes it).
fn server_properties(w: &World, role: StackRole, resource: &str) -> Option<Value> {
    let StackRole::Member(g, _) = role else {
        return None;
    };
    let group = w.groups.get(g)?;
    if resource != group.layout.server() {
        return None;
    }
    let image = match group.layout.is_magnum() {
        true => "server_image",
        false => "image",
    };
    Some(json!({"image": {"get_param": image}, "flavor": group.flavor}))
}

/// A ResourceGroup as its template writes it: its count from the stack's parameter, and the
/// member's definition passing the image parameter on (caldera's nodegroup.yaml `image:
/// {get_param: image}`, Magnum's kubecluster.yaml `server_image: {get_param: minion_image}`,
/// or the scenario's shared image parameter), so what reads the stack's template finds which
/// parameter reaches which group's members, as on a real Heat.
fn group_properties(w: &World, r: &crate::world::Resource) -> Option<Value> {
    let nested = r.nested?;
    let group = w.groups.iter().find(|g| g.rg_stack == nested)?;
    let member_image = match group.layout.is_magnum() {
        true => "server_image",
        false => "image",
    };
    Some(json!({
        "count": {"get_param": group.layout.key("count")},
        "resource_def": {
            "type": group.layout.member_type(),
            "properties": {member_image: {"get_param": group.image_key()}},
        },
    }))
}

fn param_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `GET .../environment`: the stack's environment as Heat answers it, `env_as_dict()` with no
/// wrapping key and every section present (`parameters`, `parameter_defaults`,
/// `event_sinks`, `encrypted_param_names`, `resource_registry` with `resources`), hidden
/// parameters as `******`. A nested stack's is what Heat stores for it
/// (`get_child_environment`): its parent's registry narrowed to the resource owning it, so
/// `nodes: {"*": {hooks}}` of the node group's stack reads `"*": {hooks}` in the group's.
pub fn environment(w: &World, ix: usize) -> Reply {
    match w.stack(ix) {
        Some(st) => {
            let mut env = json!({
                "parameters": {},
                "parameter_defaults": {},
                "event_sinks": [],
                "encrypted_param_names": [],
                "resource_registry": {"resources": registry_resources(w, ix, 0)},
            });
            for section in ["parameters", "parameter_defaults"] {
                if let Some(given) = st.environment.get(section).and_then(Value::as_object) {
                    let masked: serde_json::Map<String, Value> = given
                        .iter()
                        .map(|(k, v)| match st.hidden_params.contains(k) {
                            true => (k.clone(), json!("******")),
                            false => (k.clone(), v.clone()),
                        })
                        .collect();
                    env[section] = Value::Object(masked);
                }
            }
            Reply::ok(env)
        }
        None => stack_404(&ix.to_string()),
    }
}

/// `resource_registry.resources` of stack `ix`: its own for a top-level stack; for a nested
/// one, its parent's narrowed as `remove_resources_except(owner)` does (the dicts of every
/// pattern matching the owner merged one level deep, the exact name's last).
fn registry_resources(w: &World, ix: usize, depth: usize) -> Value {
    let Some(st) = w.stack(ix) else {
        return json!({});
    };
    let (Some(parent), Some(owner)) = (st.parent, st.owner_resource.as_deref()) else {
        return st
            .environment
            .pointer("/resource_registry/resources")
            .filter(|v| v.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
    };
    if depth > 16 {
        return json!({});
    }
    let above = registry_resources(w, parent, depth + 1);
    let mut out = serde_json::Map::new();
    let Some(entries) = above.as_object() else {
        return json!({});
    };
    let matching = entries
        .iter()
        .filter(|(pattern, _)| group::fnmatch(pattern, owner) && pattern.as_str() != owner)
        .chain(entries.get_key_value(owner));
    for (_, v) in matching {
        if let Some(level) = v.as_object() {
            for (k, v) in level {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// `ResourceRegistry.load` (heat/engine/environment.py) on `resources`: a dict is merged key
/// by key into the stored one, a `hooks` value (or any other non-dict) replaces the stored
/// one, and a `null` removes the stored key, unless the key ends in `*`, where Heat removes
/// only type mappings matching the glob (never a dict of hooks). Bounded in depth.
fn load_registry(
    dst: &mut serde_json::Map<String, Value>,
    src: &serde_json::Map<String, Value>,
    depth: usize,
) {
    if depth > 16 {
        return;
    }
    for (k, v) in src {
        match v {
            Value::Null => {
                if !k.ends_with('*') {
                    dst.remove(k);
                }
            }
            Value::Object(inner) if k != "hooks" => {
                let slot = dst.entry(k.clone()).or_insert_with(|| json!({}));
                if !slot.is_object() {
                    *slot = json!({});
                }
                if let Some(slot) = slot.as_object_mut() {
                    load_registry(slot, inner, depth + 1);
                }
            }
            other => {
                dst.insert(k.clone(), other.clone());
            }
        }
    }
}

/// Merges `environment.resource_registry.resources` of a PATCH into the stack's.
fn merge_env(old: &Value, new: &Value) -> Value {
    let mut out = old.clone();
    if let Some(res) = new
        .pointer("/resource_registry/resources")
        .and_then(|v| v.as_object())
    {
        if out.pointer("/resource_registry/resources").is_none() {
            out["resource_registry"] = json!({"resources": {}});
        }
        if let Some(dst) = out
            .pointer_mut("/resource_registry/resources")
            .and_then(|v| v.as_object_mut())
        {
            load_registry(dst, res, 0);
        }
    }
    if let Some(p) = new.get("parameters").and_then(|v| v.as_object()) {
        if !out
            .get("parameters")
            .map(|v| v.is_object())
            .unwrap_or(false)
        {
            out["parameters"] = json!({});
        }
        if let Some(dst) = out.get_mut("parameters").and_then(|v| v.as_object_mut()) {
            for (k, v) in p {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

/// Builds the parameters of an update: PATCH merges into the existing ones, PUT starts
/// from the template defaults; unknown names are refused like Heat does.
fn merged_params(
    current: &BTreeMap<String, String>,
    defaults: &BTreeMap<String, String>,
    body: &Value,
    patch: bool,
) -> Result<BTreeMap<String, String>, Reply> {
    let mut params = if patch {
        current.clone()
    } else {
        defaults.clone()
    };
    for k in current.keys().filter(|k| k.starts_with("OS::")) {
        params.insert(k.clone(), current[k].clone());
    }
    for c in body
        .get("clear_parameters")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(k) = c.as_str() {
            if let Some(d) = defaults.get(k) {
                params.insert(k.to_string(), d.clone());
            }
        }
    }
    let mut given: Vec<(String, String)> = Vec::new();
    if let Some(p) = body
        .pointer("/environment/parameters")
        .and_then(|v| v.as_object())
    {
        given.extend(p.iter().map(|(k, v)| (k.clone(), param_string(v))));
    }
    if let Some(p) = body.get("parameters").and_then(|v| v.as_object()) {
        given.extend(p.iter().map(|(k, v)| (k.clone(), param_string(v))));
    }
    for (k, v) in given {
        // Heat 27 answers 202 to unknown parameters on PATCH and drops them (measured).
        if !current.contains_key(&k) || k.starts_with("OS::") {
            continue;
        }
        params.insert(k, v);
    }
    Ok(params)
}

/// Largest node group the simulator agrees to build.
pub(crate) const MAX_MEMBERS: u32 = 100_000;

/// Validates `count` the way Heat's number parameter does (Python float conversion,
/// then the template's `range: {min: 0}` constraint).
fn count_param(raw: &str) -> Result<u32, Reply> {
    let invalid = |msg: String| {
        heat_error(
            StatusCode::BAD_REQUEST,
            "StackValidationFailed",
            &format!("Parameter 'count' is invalid: {msg}"),
        )
    };
    let v: f64 = raw
        .trim()
        .parse()
        .map_err(|_| invalid(format!("could not convert string to float: '{raw}'")))?;
    if v < 0.0 {
        return Err(invalid(format!("{v} is out of range (min: 0, max: None).")));
    }
    // Not Heat's limit but the simulator's: a typo must not make it build 10^9 members.
    if v > MAX_MEMBERS as f64 {
        return Err(invalid(format!(
            "{v} is more members than the simulator holds ({MAX_MEMBERS})."
        )));
    }
    Ok(v as u32)
}

/// An update with nothing underneath to change completes at once, as Heat does when no
/// resource needs work.
fn complete_at_once(w: &mut World, ix: usize, params: BTreeMap<String, String>) {
    if let Some(s) = w.stack_mut(ix) {
        s.params = params;
    }
    w.set_stack_status(
        ix,
        Status::new(Action::Update, State::InProgress),
        started(Action::Update),
    );
    w.set_stack_status(
        ix,
        Status::new(Action::Update, State::Complete),
        completed(Action::Update),
    );
}

fn group_defaults(current: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut d = current.clone();
    // Magnum's kubecluster.yaml defaults, where the stack is one of its.
    if d.contains_key("is_cluster_stack") {
        if d.contains_key("minions_to_remove") {
            d.insert("minions_to_remove".into(), String::new());
        }
        d.insert("update_max_batch_size".into(), "1".into());
        return d;
    }
    d.insert("removal_policies".into(), "[]".into());
    d.insert("update_max_batch_size".into(), "0".into());
    d
}

pub fn update(w: &mut World, sh: &Shared, req: &Req, ix: usize, patch: bool) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return bad(&e),
    };
    if !patch && body.get("template").is_none() && body.get("template_url").is_none() {
        return bad("No template specified");
    }
    let Some(st) = w.stack(ix) else {
        return stack_404("");
    };
    if st.deleted_ms.is_some() {
        return stack_404(&st.name.clone());
    }
    // No 409 here: Heat 27 (convergence) accepts an update while one is in progress and
    // lets the new traversal supersede the old one (measured).
    let role = st.role;
    let current = st.params.clone();
    let env = match (patch, body.get("environment")) {
        (true, Some(e)) => merge_env(&st.environment, e),
        (false, Some(e)) => e.clone(),
        (true, None) => st.environment.clone(),
        (false, None) => json!({"parameters": {}, "resource_registry": {"resources": {}}}),
    };
    let defaults = group_defaults(&current);
    let mut params = match merged_params(&current, &defaults, &body, patch) {
        Ok(p) => p,
        Err(r) => return r,
    };
    if let Some(tags) = body.get("tags") {
        let tags = tag_values(Some(tags));
        if let Some(s) = w.stack_mut(ix) {
            s.tags = tags;
        }
    }
    if let Some(s) = w.stack_mut(ix) {
        s.previous_environment = Some(std::mem::replace(&mut s.environment, env.clone()));
        if let Some(t) = body.get("timeout_mins").and_then(|v| v.as_u64()) {
            s.timeout_mins = Some(t as u32);
        }
        if let Some(d) = body.get("disable_rollback").and_then(|v| v.as_bool()) {
            s.disable_rollback = d;
        }
    }
    let groups = w.stack_groups(ix);
    match role {
        StackRole::Group(_) | StackRole::Member(..) => {
            return heat_error(
                StatusCode::BAD_REQUEST,
                "NotSupported",
                "Updating a nested stack directly is not supported; update its parent.",
            );
        }
        StackRole::NodeGroup(_) | StackRole::Cluster(_) if !groups.is_empty() => {
            for &g in &groups {
                let key = w.groups[g].layout.key("count").to_string();
                if let Some(c) = params.get(&key).cloned() {
                    match count_param(&c) {
                        Ok(n) => {
                            params.insert(key, n.to_string());
                        }
                        Err(e) => return e,
                    }
                }
                if let Err(e) = group::removal_from(w, g, &params) {
                    return bad(&e);
                }
            }
            // A PATCH while an update runs begins a new traversal all the same: Heat
            // (convergence) says `Stack UPDATE started` again and sets the stack's
            // `updated_time` (measured on Heat 27: what a driver tells another update by).
            // One not under way is started by its first group below.
            let updating = Status::new(Action::Update, State::InProgress);
            if w.stack(ix).is_some_and(|s| s.status == updating) {
                w.set_stack_status(ix, updating, started(Action::Update));
            }
            // Resources beside the groups whose parameter changed start first: a group
            // with nothing to do must not complete the stack while they work.
            siblings::start_updates(w, ix, &params);
            // Every group of the stack is updated, as Heat does (measured on Magnum's layout:
            // the group whose inputs did not change goes UPDATE_IN_PROGRESS ->
            // UPDATE_COMPLETE with none of its members touched).
            let reqs = groups
                .iter()
                .map(|&g| {
                    let hooks = hooks_from_env(&env, w.groups[g].layout.resource());
                    let req = UpdateRequest {
                        params: params.clone(),
                        hooks: Some(hooks),
                        action: Action::Update,
                    };
                    (g, req)
                })
                .collect();
            if let Err(e) = group::start_updates(w, reqs) {
                return bad(&e);
            }
        }
        StackRole::NodeGroup(_) | StackRole::Cluster(_) => complete_at_once(w, ix, params),
    }
    let _ = sh;
    super::accepted(req)
}

pub fn action(w: &mut World, req: &Req, ix: usize) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return bad(&e),
    };
    let Some(obj) = body.as_object() else {
        return bad("Invalid action");
    };
    if obj.len() != 1 {
        return bad("Multiple actions specified");
    }
    let key = obj.keys().next().map(String::as_str).unwrap_or("");
    let Some(st) = w.stack(ix) else {
        return stack_404("");
    };
    let (role, status) = (st.role, st.status);
    match key {
        "cancel_update" | "cancel_without_rollback" => {
            let rollback = key == "cancel_update";
            match (role, w.stack_groups(ix).first()) {
                (StackRole::NodeGroup(_) | StackRole::Cluster(_), Some(&g)) => {
                    match group::cancel(w, g, rollback) {
                        Ok(()) => Reply::null(),
                        Err(e) => heat_error(StatusCode::BAD_REQUEST, "NotSupported", &e),
                    }
                }
                _ => heat_error(
                    StatusCode::BAD_REQUEST,
                    "NotSupported",
                    // Heat 27, measured: `... is CREATE_COMPLETE is not supported.`
                    &format!("Cancelling update when stack is {status} is not supported."),
                ),
            }
        }
        "check" => {
            if status.state == State::InProgress {
                return heat_error(
                    StatusCode::CONFLICT,
                    "ActionInProgress",
                    &format!(
                        "Stack {} already has an action ({}) in progress.",
                        st.name,
                        status.action.as_str()
                    ),
                );
            }
            super::check::check_stack(w, ix);
            Reply::null()
        }
        "suspend" | "resume" => heat_error(
            StatusCode::BAD_REQUEST,
            "NotSupported",
            &format!("{key} is not supported by the caldera simulator"),
        ),
        other => bad(&format!("Invalid action {other} specified")),
    }
}

/// `POST /stacks`: creates a standalone node group (the shape caldera's templates make)
/// from its parameters; the template body itself is not interpreted.
pub fn create(w: &mut World, sh: &Shared, req: &Req) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return bad(&e),
    };
    let Some(name) = body.get("stack_name").and_then(|v| v.as_str()) else {
        return bad("No stack name specified");
    };
    if w.find_stack(name).is_some() {
        return heat_error(
            StatusCode::CONFLICT,
            "StackExists",
            &format!("The Stack ({name}) already exists."),
        );
    }
    let p = body.get("parameters").cloned().unwrap_or(json!({}));
    let get = |k: &str, d: &str| p.get(k).map(param_string).unwrap_or_else(|| d.to_string());
    // A template without a `nodes` group (caldera's cluster.yaml) makes a stack with no
    // members: an empty group is the simulator's closest shape for it.
    let has_group = body
        .pointer("/template/resources/nodes")
        .is_some_and(|r| !r.is_null());
    let default_count = if has_group { "1" } else { "0" };
    let count = match count_param(&get("count", default_count)) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let mut spec = GroupSpec::new(
        name,
        "worker",
        count,
        &get("image", "img-v1"),
        &get("flavor", "m1.small"),
        &get("availability_zone", "nova"),
    );
    if let Some(env) = body.get("environment") {
        spec.hooks = hooks_from_env(env, "nodes");
    }
    spec.node_fail_index = get("node_fail_index", "-1").trim().parse().unwrap_or(-1);
    spec.action_wait_secs = get("action_wait_secs", "0").trim().parse().unwrap_or(0);
    let g = create_group(w, None, spec, Some(name.to_string()));
    let ix = w.groups[g].ng_stack;
    let tags = tag_values(body.get("tags"));
    let hidden = hidden_params(&body);
    if let Some(s) = w.stack_mut(ix) {
        s.tags = tags;
        // A hidden parameter is kept (Heat keeps it, encrypted) and shown as `******`.
        for k in &hidden {
            if let Some(v) = p.get(k) {
                s.params.insert(k.clone(), param_string(v));
            }
        }
        s.hidden_params = hidden;
        s.param_types = declared_types(&body);
    }
    if has_group {
        // The template's own parameters, so PATCHes naming them are accepted like Heat's.
        if let Some(s) = w.stack_mut(ix) {
            for (k, d) in [("node_fail_index", "-1"), ("action_wait_secs", "0")] {
                s.params.insert(k.to_string(), get(k, d));
            }
        }
    }
    // Slow resources beside the group (`OS::Heat::TestResource` reading a parameter), with
    // the value the parameter has (given, else the template's default).
    if let Some(template) = body.get("template") {
        for (name, param, secs) in siblings::declared(template, "nodes") {
            let default = template
                .pointer(&format!("/parameters/{param}/default"))
                .map(param_string)
                .unwrap_or_default();
            let value = p.get(&param).map(param_string).unwrap_or(default);
            if let Some(s) = w.stack_mut(ix) {
                s.params.insert(param.clone(), value.clone());
            }
            siblings::add(w, ix, &name, &param, secs, &value);
        }
    }
    let id = w.stack(ix).map(|s| s.id.clone()).unwrap_or_default();
    let url = stack_url(w, &sh.cfg.base, ix);
    Reply::json(
        StatusCode::CREATED,
        json!({"stack": {"id": id, "links": [{"href": url, "rel": "self"}]}}),
    )
    .with_header("Location", url)
}

/// `DELETE /stacks/{name}/{id}`: 204; node groups delete their members over time.
pub fn delete(w: &mut World, ix: usize) -> Reply {
    let Some(st) = w.stack(ix) else {
        return stack_404("");
    };
    if st.deleted_ms.is_some() {
        return Reply::empty(StatusCode::NO_CONTENT);
    }
    match (st.role, w.stack_groups(ix).first()) {
        (StackRole::NodeGroup(_) | StackRole::Cluster(_), Some(&g)) => {
            if let Err(e) = group::delete(w, g) {
                return bad(&e);
            }
        }
        (StackRole::NodeGroup(_) | StackRole::Cluster(_), None) => {
            w.set_stack_status(
                ix,
                Status::new(Action::Delete, State::InProgress),
                started(Action::Delete),
            );
            w.set_stack_status(
                ix,
                Status::new(Action::Delete, State::Complete),
                completed(Action::Delete),
            );
            w.mark_deleted(ix);
        }
        (StackRole::Group(_) | StackRole::Member(..), _) => {
            return heat_error(
                StatusCode::BAD_REQUEST,
                "NotSupported",
                "Deleting a nested stack directly is not supported; update or delete its parent.",
            );
        }
    }
    Reply::empty(StatusCode::NO_CONTENT)
}

/// The type of each parameter the submitted template declares.
fn declared_types(body: &Value) -> BTreeMap<String, String> {
    let declared = body
        .pointer("/template/parameters")
        .and_then(Value::as_object);
    declared
        .into_iter()
        .flatten()
        .filter_map(|(k, d)| Some((k.clone(), d.get("type")?.as_str()?.to_string())))
        .collect()
}

/// The parameters the submitted template declares `hidden: true`.
fn hidden_params(body: &Value) -> std::collections::BTreeSet<String> {
    let declared = body
        .pointer("/template/parameters")
        .and_then(Value::as_object);
    declared
        .into_iter()
        .flatten()
        .filter(|(_, d)| d.get("hidden").and_then(Value::as_bool) == Some(true))
        .map(|(k, _)| k.clone())
        .collect()
}

/// `tags` as Heat takes them: a comma-separated string or a list.
fn tag_values(tags: Option<&Value>) -> Vec<String> {
    match tags {
        Some(Value::String(s)) => s
            .split(',')
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect(),
        _ => vec![],
    }
}

/// `PATCH .../preview` (Heat's preview of a PATCH update): what the update would do, nothing
/// changed. Heat 27 answers it for a top-level stack (a nested one is refused as its update
/// is); it lists every resource that owns a nested stack as `updated` whatever changed (Heat
/// hands each nested stack the update and lets its members decide), a resource beside the
/// groups as `updated` when the parameter it reads changes, and the others as `unchanged`.
/// A count Heat's parameter refuses is refused as the update refuses it.
pub fn preview(w: &World, req: &Req, ix: usize) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return bad(&e),
    };
    let Some(st) = w.stack(ix) else {
        return stack_404("");
    };
    if st.deleted_ms.is_some() {
        return stack_404(&st.name.clone());
    }
    if matches!(st.role, StackRole::Group(_) | StackRole::Member(..)) {
        return heat_error(
            StatusCode::BAD_REQUEST,
            "NotSupported",
            "Updating a nested stack directly is not supported; update its parent.",
        );
    }
    let defaults = group_defaults(&st.params);
    let params = match merged_params(&st.params, &defaults, &body, true) {
        Ok(p) => p,
        Err(r) => return r,
    };
    for &g in &w.stack_groups(ix) {
        if let Some(c) = params.get(w.groups[g].layout.key("count")) {
            if let Err(r) = count_param(c) {
                return r;
            }
        }
    }
    let changed_sibling = |name: &str| {
        w.siblings
            .iter()
            .filter(|s| s.stack == ix && s.name == name)
            .any(|s| params.get(&s.param).is_some_and(|v| *v != s.value))
    };
    let (mut updated, mut unchanged) = (Vec::new(), Vec::new());
    for r in &st.resources {
        let entry = json!({
            "resource_name": &*r.name,
            "logical_resource_id": &*r.name,
            "resource_type": &*r.rtype,
            "physical_resource_id": "",
            "resource_action": "INIT",
            "resource_status": "COMPLETE",
            "resource_status_reason": "",
            "required_by": r.required_by.iter().map(|n| &**n).collect::<Vec<_>>(),
            "description": r.description,
            "stack_name": &st.name,
        });
        if r.nested.is_some() || changed_sibling(&r.name) {
            updated.push(entry);
        } else {
            unchanged.push(entry);
        }
    }
    Reply::ok(json!({
        "resource_changes": {
            "added": [],
            "deleted": [],
            "replaced": [],
            "unchanged": unchanged,
            "updated": updated,
        }
    }))
}
