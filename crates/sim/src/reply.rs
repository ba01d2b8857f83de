//! Small HTTP helpers shared by the simulated services: a parsed request, a reply that
//! is serialised outside the world lock, and each service's error body shape.

use axum::http::{HeaderMap, Method, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};
use std::time::Duration;

pub struct Req<'a> {
    pub method: &'a Method,
    /// Path segments after the service prefix (e.g. after `/orchestration/v1/{project}`).
    pub segs: Vec<&'a str>,
    pub query: Vec<(String, String)>,
    pub headers: &'a HeaderMap,
    pub body: &'a Bytes,
    pub raw_query: Option<&'a str>,
}

impl Req<'_> {
    pub fn q(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    pub fn q_all(&self, key: &str) -> Vec<&str> {
        self.query
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }
    pub fn q_bool(&self, key: &str) -> Option<bool> {
        self.q(key).map(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "true" | "1" | "yes" | "on" | "t" | "y"
            )
        })
    }
    pub fn header(&self, key: &str) -> Option<&str> {
        self.headers.get(key).and_then(|v| v.to_str().ok())
    }
    pub fn json_body(&self) -> Result<Value, String> {
        if self.body.is_empty() {
            return Ok(json!({}));
        }
        serde_json::from_slice(self.body).map_err(|e| format!("Invalid JSON body: {e}"))
    }
}

pub fn parse_query(q: Option<&str>) -> Vec<(String, String)> {
    match q {
        Some(q) => url::form_urlencoded::parse(q.as_bytes())
            .into_owned()
            .collect(),
        None => vec![],
    }
}

pub enum Body {
    Empty,
    Json(Value),
    /// webob's plain-text bodies (Heat's 202 and 302).
    Text(String),
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// Time the real service would spend computing this (e.g. resolving outputs); the
    /// server sleeps it after releasing the world lock.
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: StatusCode, v: Value) -> Reply {
        Reply {
            status,
            headers: vec![],
            body: Body::Json(v),
            delay: Duration::ZERO,
        }
    }
    pub fn ok(v: Value) -> Reply {
        Reply::json(StatusCode::OK, v)
    }
    pub fn text(status: StatusCode, text: String) -> Reply {
        Reply {
            status,
            headers: vec![],
            body: Body::Text(text),
            delay: Duration::ZERO,
        }
    }
    /// Heat's 202 for updates.
    pub fn accepted() -> Reply {
        Reply::text(
            StatusCode::ACCEPTED,
            "202 Accepted\n\nThe request is accepted for processing.\n\n   ".into(),
        )
    }
    /// Heat's `null` body (signal, actions).
    pub fn null() -> Reply {
        Reply::json(StatusCode::OK, Value::Null)
    }
    pub fn empty(status: StatusCode) -> Reply {
        Reply {
            status,
            headers: vec![],
            body: Body::Empty,
            delay: Duration::ZERO,
        }
    }
    pub fn with_header(mut self, k: &str, v: impl Into<String>) -> Reply {
        self.headers.push((k.to_string(), v.into()));
        self
    }
    pub fn with_delay(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

fn title(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("Error")
}

/// Heat's FaultWrapper body.
pub fn heat_error(status: StatusCode, err_type: &str, message: &str) -> Reply {
    let explanation = match status.as_u16() {
        400 => "The server could not comply with the request since it is either malformed or otherwise incorrect.",
        403 => "Access was denied to this resource.",
        404 => "The resource could not be found.",
        405 => "The server does not support the method requested.",
        409 => "There was a conflict when trying to complete your request.",
        429 => "Too many requests.",
        503 => "The server is currently unavailable. Please try again at a later time.",
        _ => "The server has either erred or is incapable of performing the requested operation.",
    };
    Reply::json(
        status,
        json!({
            "explanation": explanation,
            "code": status.as_u16(),
            "error": {"message": message, "traceback": null, "type": err_type},
            "title": title(status),
        }),
    )
}

/// Magnum's (WSME) error body.
pub fn magnum_error(status: StatusCode, detail: &str) -> Reply {
    Reply::json(
        status,
        json!({"errors": [{
            "request_id": "",
            "code": if status.is_server_error() { "server" } else { "client" },
            "status": status.as_u16(),
            "title": title(status),
            "detail": detail,
            "links": [],
        }]}),
    )
}

/// Nova's error body: `{"itemNotFound": {"code": 404, "message": ...}}`.
pub fn nova_error(status: StatusCode, message: &str) -> Reply {
    let key = match status.as_u16() {
        400 => "badRequest",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "itemNotFound",
        409 => "conflictingRequest",
        429 => "overLimit",
        503 => "serviceUnavailable",
        _ => "computeFault",
    };
    Reply::json(
        status,
        json!({ key: {"code": status.as_u16(), "message": message} }),
    )
}

/// Keystone's (and keystonemiddleware's) error body.
pub fn keystone_error(status: StatusCode, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": {"code": status.as_u16(), "message": message, "title": title(status)}}),
    )
}

/// The error shape of whichever service owns `path`.
pub fn service_error(path: &str, status: StatusCode, message: &str) -> Reply {
    if path.starts_with("/orchestration") {
        heat_error(
            status,
            if status.is_server_error() {
                "HTTPInternalServerError"
            } else {
                "HTTPClientError"
            },
            message,
        )
    } else if path.starts_with("/container-infra") {
        magnum_error(status, message)
    } else if path.starts_with("/compute") {
        nova_error(status, message)
    } else {
        keystone_error(status, message)
    }
}
