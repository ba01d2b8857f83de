//! Heat's software-config API: `GET /software_deployments[?server_id=]`,
//! `GET|PUT /software_deployments/{id}`, `GET /software_configs/{id}`, shaped as Heat 27
//! answers them (`format_software_deployment`, `format_software_config` in
//! heat/engine/api.py). A PUT stores what it is given, as Heat's API update does; the
//! deployment resource then follows its row, as Heat's resource does when it polls it.

use crate::clock::iso_z;
use crate::reply::{heat_error, Reply, Req};
use crate::world::deployments::{SimConfig, SimDeployment};
use crate::world::{State, Status, World};
use axum::http::StatusCode;
use serde_json::{json, Value};

fn state_str(s: State) -> &'static str {
    match s {
        State::InProgress => "IN_PROGRESS",
        State::Complete => "COMPLETE",
        State::Failed => "FAILED",
    }
}

fn deployment_json(d: &SimDeployment) -> Value {
    let mut v = json!({
        "id": d.id,
        "server_id": d.server_id,
        "config_id": d.config_id,
        "input_values": {},
        "output_values": d.output_values,
        "action": d.action.as_str(),
        "status": state_str(d.status),
        "status_reason": d.status_reason,
        "creation_time": iso_z(d.created_ms),
    });
    if let Some(u) = d.updated_ms {
        v["updated_time"] = json!(iso_z(u));
    }
    v
}

fn config_json(c: &SimConfig) -> Value {
    json!({
        "id": c.id,
        "name": c.name,
        "group": c.group,
        "config": c.config,
        "inputs": [
            {"name": "deploy_server_id", "type": "String", "value": c.server_id},
            {"name": "deploy_action", "type": "String", "value": "CREATE"},
            {"name": "deploy_signal_transport", "type": "String", "value": c.transport},
        ],
        "outputs": [],
        "options": {},
        "creation_time": "",
    })
}

fn not_found(kind: &str, id: &str) -> Reply {
    heat_error(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("{kind} with id {id} not found"),
    )
}

pub fn list(w: &World, req: &Req) -> Reply {
    let server = req.q("server_id");
    let rows: Vec<Value> = w
        .sw_deployments
        .iter()
        .filter(|d| server.is_none_or(|s| d.server_id == s))
        .map(deployment_json)
        .collect();
    Reply::ok(json!({ "software_deployments": rows }))
}

pub fn show(w: &World, id: &str) -> Reply {
    match w.sw_deployments.iter().find(|d| d.id == id) {
        Some(d) => Reply::ok(json!({ "software_deployment": deployment_json(d) })),
        None => not_found("Software deployment", id),
    }
}

pub fn config(w: &World, id: &str) -> Reply {
    match w.sw_configs.iter().find(|c| c.id == id) {
        Some(c) => Reply::ok(json!({ "software_config": config_json(c) })),
        None => not_found("Software config", id),
    }
}

/// The API's update: `status`, `status_reason`, `output_values`, `action` as given (keys
/// left out or null keep their value); `updated_time` is now.
pub fn update(w: &mut World, req: &Req, id: &str) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return heat_error(StatusCode::BAD_REQUEST, "HTTPBadRequest", &e),
    };
    let now = w.now();
    let Some(d) = w.sw_deployments.iter_mut().find(|d| d.id == id) else {
        return not_found("Software deployment", id);
    };
    if let Some(s) = body.get("status").and_then(Value::as_str) {
        d.status = match s {
            "COMPLETE" => State::Complete,
            "FAILED" => State::Failed,
            _ => State::InProgress,
        };
    }
    if let Some(r) = body.get("status_reason").and_then(Value::as_str) {
        d.status_reason = r.to_string();
    }
    if let Some(o) = body.get("output_values").filter(|o| o.is_object()) {
        d.output_values = o.clone();
    }
    if let Some(a) = body.get("action").and_then(Value::as_str) {
        if let Some(st) = Status::parse(&format!("{a}_COMPLETE")) {
            d.action = st.action;
        }
    }
    d.updated_ms = Some(now);
    let (row, reply) = (d.clone(), deployment_json(d));
    follow_row(w, &row, now);
    Reply::ok(json!({ "software_deployment": reply }))
}

/// The deployment resource whose physical id is the row's follows it, as Heat's resource
/// does when it polls its deployment while in progress.
fn follow_row(w: &mut World, row: &SimDeployment, now: i64) {
    if row.status == State::InProgress {
        return;
    }
    let ix = (0..w.stack_count()).find(|&ix| {
        w.stack(ix).is_some_and(|s| {
            s.resources
                .iter()
                .any(|r| r.physical_id == row.id && r.status.state == State::InProgress)
        })
    });
    let Some(ix) = ix else { return };
    if let Some(st) = w.stack_mut(ix) {
        for r in st.resources.iter_mut().filter(|r| r.physical_id == row.id) {
            r.status = Status::new(r.status.action, row.status);
            r.reason = row.status_reason.clone();
            r.updated_ms = now;
        }
    }
}
