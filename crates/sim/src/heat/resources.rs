//! Resources: list (nested_depth, with_detail, filters), show, mark-unhealthy, signal.

use super::shapes::{attributes, resource_json};
use super::stack_routes::int_param;
use crate::reply::{heat_error, Reply, Req};
use crate::shared::Shared;
use crate::world::group;
use crate::world::{Action, StackRole, State, Status, World};
use axum::http::StatusCode;
use serde_json::{json, Value};

/// Heat's `max_nested_stack_depth`.
const MAX_NESTED_DEPTH: u32 = 5;
const FILTERS: &[&str] = &[
    "type",
    "status",
    "name",
    "action",
    "id",
    "physical_resource_id",
];

pub fn list(w: &mut World, sh: &Shared, req: &Req, ix: usize) -> Reply {
    let mut invalid: Vec<&str> = req
        .query
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !FILTERS.contains(k) && *k != "nested_depth" && *k != "with_detail")
        .collect();
    invalid.dedup();
    if !invalid.is_empty() {
        let list = invalid
            .iter()
            .map(|k| format!("'{k}'"))
            .collect::<Vec<_>>()
            .join(", ");
        return heat_error(
            StatusCode::BAD_REQUEST,
            "HTTPBadRequest",
            &format!("Invalid filter parameters [{list}]"),
        );
    }
    let depth = match int_param(req, "nested_depth") {
        Ok(d) => d.unwrap_or(0).clamp(0, MAX_NESTED_DEPTH as i64) as u32,
        Err(r) => return r,
    };
    let detail = req.q_bool("with_detail").unwrap_or(false);
    let (types, statuses, names, actions, ids, phys) = (
        req.q_all("type"),
        req.q_all("status"),
        req.q_all("name"),
        req.q_all("action"),
        req.q_all("id"),
        req.q_all("physical_resource_id"),
    );
    let mut out = Vec::new();
    for (six, d) in w.nested_stacks(ix, depth) {
        let Some(st) = w.stack(six) else { continue };
        for r in &st.resources {
            let ok = (types.is_empty() || types.contains(&&*r.rtype))
                && (names.is_empty() || names.contains(&&*r.name))
                && super::status_matches(&statuses, r.status, "status")
                && super::status_matches(&actions, r.status, "action")
                && (ids.is_empty() || ids.contains(&r.physical_id.as_str()))
                && (phys.is_empty() || phys.contains(&r.physical_id.as_str()));
            if ok {
                out.push(resource_json(w, &sh.cfg.base, six, r, detail, d > 0));
            }
        }
    }
    let n = out.len() as u32;
    let mut reply = Reply::ok(json!({ "resources": out }));
    if detail {
        // Resolving attributes costs Heat time per resource (measured ~5 ms each).
        reply = reply.with_delay(sh.cfg.detail_cost_per_resource.saturating_mul(n));
    }
    reply
}

fn resource_404(w: &World, ix: usize, name: &str) -> Reply {
    let sname = w.stack(ix).map(|s| s.name.clone()).unwrap_or_default();
    heat_error(
        StatusCode::NOT_FOUND,
        "ResourceNotFound",
        &format!("The Resource ({name}) could not be found in Stack {sname}."),
    )
}

pub fn show(w: &mut World, sh: &Shared, _req: &Req, ix: usize, name: &str) -> Reply {
    let Some(r) = w.stack(ix).and_then(|s| s.resource(name)) else {
        return resource_404(w, ix, name);
    };
    // Like a nested listing item, a resource of a nested stack names its parent resource.
    let mut v = resource_json(w, &sh.cfg.base, ix, r, false, true);
    v["attributes"] = attributes(w, ix, r);
    v["description"] = json!(r.description);
    Reply::ok(json!({ "resource": v }))
}

/// `GET .../resources/{name}/metadata`: Heat answers `{"metadata": {...}}`; the simulated
/// resources carry none (no software deployments or wait conditions write to them), so
/// the map is empty, as Heat's is for such resources.
pub fn metadata(w: &World, ix: usize, name: &str) -> Reply {
    if w.stack(ix).and_then(|s| s.resource(name)).is_none() {
        return resource_404(w, ix, name);
    }
    Reply::ok(json!({ "metadata": {} }))
}

pub fn mark_unhealthy(w: &mut World, req: &Req, ix: usize, name: &str) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return heat_error(StatusCode::BAD_REQUEST, "HTTPBadRequest", &e),
    };
    if let Some(obj) = body.as_object() {
        let bad: Vec<String> = obj
            .keys()
            .filter(|k| *k != "mark_unhealthy" && *k != "resource_status_reason")
            .map(|k| format!("'{k}'"))
            .collect();
        if !bad.is_empty() {
            return heat_error(
                StatusCode::BAD_REQUEST,
                "HTTPBadRequest",
                &format!(
                    "Invalid keys in resource mark unhealthy {{{}}}",
                    bad.join(", ")
                ),
            );
        }
    }
    let Some(mark) = body.get("mark_unhealthy") else {
        return heat_error(
            StatusCode::BAD_REQUEST,
            "HTTPBadRequest",
            "Missing mandatory (mark_unhealthy) key from mark unhealthy request",
        );
    };
    // Heat accepts booleans and their usual spellings.
    let mark = match mark {
        Value::Bool(b) => *b,
        Value::String(t)
            if matches!(
                t.to_ascii_lowercase().as_str(),
                "true" | "t" | "1" | "yes" | "y" | "on"
            ) =>
        {
            true
        }
        Value::String(t)
            if matches!(
                t.to_ascii_lowercase().as_str(),
                "false" | "f" | "0" | "no" | "n" | "off"
            ) =>
        {
            false
        }
        other => {
            let shown = match other {
                Value::String(t) => t.clone(),
                v => v.to_string(),
            };
            return heat_error(
                StatusCode::BAD_REQUEST,
                "HTTPBadRequest",
                &format!("Unrecognized value \"{shown}\" for \"mark_unhealthy\", acceptable values are: true, false."),
            );
        }
    };
    let Some(r) = w.stack(ix).and_then(|s| s.resource(name)) else {
        return resource_404(w, ix, name);
    };
    if r.status.state == State::InProgress {
        return heat_error(
            StatusCode::CONFLICT,
            "ActionInProgress",
            &format!("Resource {name} is in progress: it cannot be marked unhealthy now."),
        );
    }
    let failed = Status::new(Action::Check, State::Failed);
    if mark {
        let reason = body
            .get("resource_status_reason")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let reason = if reason.is_empty() {
            "state changed by resource_mark_unhealthy api".to_string()
        } else {
            reason.to_string()
        };
        w.set_resource_status(ix, name, failed, &reason);
    } else if r.status == failed {
        w.set_resource_status(
            ix,
            name,
            Status::new(Action::Check, State::Complete),
            "state changed by resource_mark_unhealthy api",
        );
    }
    Reply::null()
}

pub fn signal(w: &mut World, req: &Req, ix: usize, name: &str) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return heat_error(StatusCode::BAD_REQUEST, "HTTPBadRequest", &e),
    };
    if w.stack(ix).and_then(|s| s.resource(name)).is_none() {
        return resource_404(w, ix, name);
    }
    let role = w.stack(ix).map(|s| s.role);
    let label = resource_label(w, ix, name);
    let hook = body.get("unset_hook").and_then(Value::as_str);
    let not_defined = |h: &str| {
        heat_error(
            StatusCode::BAD_REQUEST,
            "InvalidBreakPointHook",
            &format!("The \"{h}\" hook is not defined on {label}"),
        )
    };
    match (role, hook) {
        (_, Some(h))
            if !matches!(
                h,
                "pre-create"
                    | "pre-update"
                    | "pre-delete"
                    | "post-create"
                    | "post-update"
                    | "post-delete"
            ) =>
        {
            heat_error(
                StatusCode::BAD_REQUEST,
                "InvalidBreakPointHook",
                &format!("Invalid hook type \"{h}\" for {label}"),
            )
        }
        (Some(StackRole::Group(g)), Some(h)) => match name.parse::<u32>() {
            Ok(i) if group::clear_hook(w, g, i, h).is_ok() => Reply::null(),
            _ => not_defined(h),
        },
        (_, Some(h)) => not_defined(h),
        (_, None) => heat_error(
            StatusCode::BAD_REQUEST,
            "ResourceActionNotSupported",
            "signal is not supported for resource.",
        ),
    }
}

/// How Heat names a resource in messages: `TemplateResource "1" [id] Stack "name" [id]`.
fn resource_label(w: &World, ix: usize, name: &str) -> String {
    let Some(st) = w.stack(ix) else {
        return name.to_string();
    };
    let Some(r) = st.resource(name) else {
        return name.to_string();
    };
    let class = match &*r.rtype {
        "OS::Heat::ResourceGroup" => "ResourceGroup",
        "OS::Nova::Server" => "Server",
        "OS::Heat::Value" => "Value",
        "OS::Heat::None" => "NoneResource",
        _ => "TemplateResource",
    };
    format!(
        "{class} \"{name}\" [{}] Stack \"{}\" [{}]",
        r.physical_id, st.name, st.id
    )
}
