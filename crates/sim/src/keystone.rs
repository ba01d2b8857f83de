//! Keystone v3 at `/identity`: version discovery (keystoneauth does it), password and
//! application-credential authentication, token validation and revocation, and a
//! catalog pointing at the simulated Heat, Magnum and Nova.

use crate::reply::{keystone_error, Reply, Req};
use crate::shared::{lock, Shared, Token};
use axum::http::{Method, StatusCode};
use chrono::{DateTime, SecondsFormat, Utc};
use rand::Rng;
use serde_json::{json, Value};

pub fn token_valid(sh: &Shared, token: Option<&str>) -> bool {
    let Some(token) = token else { return false };
    let tokens = lock(&sh.tokens);
    matches!(tokens.get(token), Some(t) if t.expires > Utc::now())
}

fn ts(t: DateTime<Utc>) -> String {
    // Keystone prints microseconds: 2026-11-21T13:18:37.000000Z
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn version_doc(base: &str) -> Value {
    json!({
        "id": "v3.14",
        "status": "stable",
        "updated": "2020-04-07T00:00:00Z",
        "links": [{"rel": "self", "href": format!("{base}/identity/v3/")}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}],
    })
}

pub fn catalog(sh: &Shared) -> Value {
    let base = &sh.cfg.base;
    let svc = |ty: &str, name: &str, url: String, id: &str| {
        let eps: Vec<Value> = ["public", "internal", "admin"]
            .iter()
            .enumerate()
            .map(|(i, iface)| json!({"id": format!("{id}{i}"), "interface": iface, "region_id": "RegionOne", "region": "RegionOne", "url": url}))
            .collect();
        json!({"endpoints": eps, "id": id, "type": ty, "name": name})
    };
    json!([
        svc(
            "identity",
            "keystone",
            format!("{base}/identity"),
            "5e1d0c0a0b0c4d0e8f101112131415a1"
        ),
        svc(
            "orchestration",
            "heat",
            format!("{base}/orchestration/v1/{}", sh.cfg.project_id),
            "5e1d0c0a0b0c4d0e8f101112131415a2"
        ),
        svc(
            "container-infra",
            "magnum",
            format!("{base}/container-infra/v1"),
            "5e1d0c0a0b0c4d0e8f101112131415a3"
        ),
        svc(
            "compute",
            "nova",
            format!("{base}/compute/v2.1"),
            "5e1d0c0a0b0c4d0e8f101112131415a4"
        ),
    ])
}

fn token_body(sh: &Shared, t: &Token) -> Value {
    let c = &sh.cfg;
    let domain = json!({"id": "default", "name": c.domain});
    let mut tok = json!({
        "methods": t.methods,
        "user": {"domain": domain, "id": c.user_id, "name": c.user_name, "password_expires_at": null},
        "audit_ids": [t.audit_id],
        "expires_at": ts(t.expires),
        "issued_at": ts(t.issued),
    });
    if t.scoped {
        tok["project"] = json!({"domain": domain, "id": c.project_id, "name": c.project_name});
        tok["is_domain"] = json!(false);
        tok["roles"] = json!([
            {"id": "9fe2ff9ee4384b1894a90878d3e92bab", "name": "member"},
            {"id": "b6f1e1a4c2d84f8fa1f5b1d0a9e8c7d6", "name": "reader"},
        ]);
        tok["catalog"] = catalog(sh);
    }
    if t.methods.contains(&"application_credential") {
        tok["application_credential"] =
            json!({"id": c.app_cred_id, "name": "caldera-sim", "restricted": true});
    }
    json!({ "token": tok })
}

pub fn handle(sh: &Shared, req: &Req) -> Reply {
    let base = &sh.cfg.base;
    match (req.method, req.segs.as_slice()) {
        (&Method::GET, []) => Reply::json(
            StatusCode::MULTIPLE_CHOICES,
            json!({"versions": {"values": [version_doc(base)]}}),
        ),
        (&Method::GET, ["v3"]) => Reply::ok(json!({"version": version_doc(base)})),
        (&Method::POST, ["v3", "auth", "tokens"]) => authenticate(sh, req),
        (&Method::GET | &Method::HEAD, ["v3", "auth", "tokens"]) => validate(sh, req),
        (&Method::DELETE, ["v3", "auth", "tokens"]) => {
            let Some(subject) = req.header("x-subject-token") else {
                return keystone_error(StatusCode::NOT_FOUND, "Could not find token.");
            };
            if !token_valid(sh, req.header("x-auth-token")) {
                return unauthorized(sh);
            }
            match lock(&sh.tokens).remove(subject) {
                Some(_) => Reply::empty(StatusCode::NO_CONTENT),
                None => keystone_error(
                    StatusCode::NOT_FOUND,
                    &format!("Could not find token: {subject}."),
                ),
            }
        }
        (&Method::GET, ["v3", "auth", "catalog"]) => {
            if !token_valid(sh, req.header("x-auth-token")) {
                return unauthorized(sh);
            }
            Reply::ok(
                json!({"catalog": catalog(sh), "links": {"self": format!("{base}/identity/v3/auth/catalog")}}),
            )
        }
        (&Method::GET, ["v3", "auth", "projects"]) => {
            if !token_valid(sh, req.header("x-auth-token")) {
                return unauthorized(sh);
            }
            Reply::ok(
                json!({"projects": [{"id": sh.cfg.project_id, "name": sh.cfg.project_name, "domain_id": "default", "enabled": true, "is_domain": false}]}),
            )
        }
        _ => keystone_error(StatusCode::NOT_FOUND, "The resource could not be found."),
    }
}

/// Keystone's 401, with the `WWW-Authenticate` header the real one sends (same bare message
/// for a wrong password, a disabled user, an unknown project or an expired credential).
fn unauthorized(sh: &Shared) -> Reply {
    keystone_error(
        StatusCode::UNAUTHORIZED,
        "The request you have made requires authentication.",
    )
    .with_header(
        "WWW-Authenticate",
        format!("Keystone uri=\"{}/identity/v3\"", sh.cfg.base),
    )
}

fn validate(sh: &Shared, req: &Req) -> Reply {
    if !token_valid(sh, req.header("x-auth-token")) {
        return unauthorized(sh);
    }
    let Some(subject) = req.header("x-subject-token") else {
        return keystone_error(StatusCode::NOT_FOUND, "Could not find token.");
    };
    let t = lock(&sh.tokens).get(subject).cloned();
    match t {
        Some(t) if t.expires > Utc::now() => {
            Reply::ok(token_body(sh, &t)).with_header("X-Subject-Token", subject)
        }
        _ => keystone_error(
            StatusCode::NOT_FOUND,
            &format!("Could not find token: {subject}."),
        ),
    }
}

/// Keystone's 400 for a request body missing `what`.
fn expecting(what: &str) -> String {
    format!("Expecting to find {what}. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.")
}

fn authenticate(sh: &Shared, req: &Req) -> Reply {
    let body = match req.json_body() {
        Ok(b) => b,
        Err(e) => return keystone_error(StatusCode::BAD_REQUEST, &e),
    };
    let Some(identity) = body.pointer("/auth/identity") else {
        return keystone_error(StatusCode::BAD_REQUEST, "'identity' is a required property");
    };
    let methods: Vec<&str> = identity
        .get("methods")
        .and_then(|m| m.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let c = &sh.cfg;
    let (method, scoped) = if methods.contains(&"password") {
        let user = identity.pointer("/password/user");
        // Like the real Keystone, a name means nothing without its domain: a user or a
        // project given by name alone is a 400, not a refused login.
        let named_without_domain = |v: Option<&Value>| {
            v.is_some_and(|v| v.get("id").is_none() && v.get("domain").is_none())
        };
        if named_without_domain(user) {
            return keystone_error(StatusCode::BAD_REQUEST, &expecting("domain in user"));
        }
        if named_without_domain(body.pointer("/auth/scope/project")) {
            return keystone_error(StatusCode::BAD_REQUEST, &expecting("domain in project"));
        }
        let name_ok =
            user.and_then(|u| u.get("name")).and_then(|v| v.as_str()) == Some(c.user_name.as_str());
        let id_ok =
            user.and_then(|u| u.get("id")).and_then(|v| v.as_str()) == Some(c.user_id.as_str());
        let dom = user.and_then(|u| u.get("domain"));
        let dom_ok = id_ok
            || dom.and_then(|d| d.get("name")).and_then(|v| v.as_str()) == Some(c.domain.as_str())
            || dom.and_then(|d| d.get("id")).and_then(|v| v.as_str()) == Some("default");
        let pw_ok = user
            .and_then(|u| u.get("password"))
            .and_then(|v| v.as_str())
            == Some(c.password.as_str());
        if !((name_ok || id_ok) && dom_ok && pw_ok) {
            return unauthorized(sh);
        }
        let scope = body.pointer("/auth/scope/project");
        let scoped = match scope {
            None => false,
            Some(p) => {
                let by_id = p.get("id").and_then(|v| v.as_str()) == Some(c.project_id.as_str());
                let by_name =
                    p.get("name").and_then(|v| v.as_str()) == Some(c.project_name.as_str());
                if !(by_id || by_name) {
                    return unauthorized(sh);
                }
                true
            }
        };
        ("password", scoped)
    } else if methods.contains(&"application_credential") {
        let ac = identity.get("application_credential");
        // Keystone finds a credential by id, or by name within its user: a name alone is a 400.
        let has = |k: &str| ac.and_then(|a| a.get(k)).is_some();
        if !has("id") && !has("user") {
            return keystone_error(
                StatusCode::BAD_REQUEST,
                &expecting("user in application credential"),
            );
        }
        let id = ac.and_then(|a| a.get("id")).and_then(|v| v.as_str());
        let id_ok = id == Some(c.app_cred_id.as_str());
        // The real Keystone says so when a credential id does not exist (a 404, not a 401).
        if let Some(id) = id.filter(|_| !id_ok) {
            return keystone_error(
                StatusCode::NOT_FOUND,
                &format!("Could not find Application Credential: {id}."),
            );
        }
        let name_ok =
            ac.and_then(|a| a.get("name")).and_then(|v| v.as_str()) == Some("caldera-sim");
        let secret_ok = ac.and_then(|a| a.get("secret")).and_then(|v| v.as_str())
            == Some(c.app_cred_secret.as_str());
        if !((id_ok || name_ok) && secret_ok) {
            return unauthorized(sh);
        }
        // Application credentials are always scoped to their project.
        ("application_credential", true)
    } else if methods.contains(&"token") {
        let tok = identity.pointer("/token/id").and_then(|v| v.as_str());
        if !token_valid(sh, tok) {
            return unauthorized(sh);
        }
        ("token", body.pointer("/auth/scope/project").is_some())
    } else {
        return keystone_error(StatusCode::BAD_REQUEST, "Expecting to find identity in auth. The server could not comply with the request since it is either malformed or otherwise incorrect.");
    };
    let now = Utc::now();
    let ttl = chrono::Duration::from_std(c.token_ttl).unwrap_or(chrono::Duration::hours(1));
    let mut rng = rand::thread_rng();
    let token_id: String = format!(
        "gAAAAA{}",
        (0..120)
            .map(|_| rng.sample(rand::distributions::Alphanumeric) as char)
            .collect::<String>()
    );
    let audit: String = (0..22)
        .map(|_| rng.sample(rand::distributions::Alphanumeric) as char)
        .collect();
    let t = Token {
        issued: now,
        expires: now + ttl,
        methods: vec![method],
        scoped,
        audit_id: audit,
    };
    let body = token_body(sh, &t);
    lock(&sh.tokens).insert(token_id.clone(), t);
    Reply::json(StatusCode::CREATED, body).with_header("X-Subject-Token", token_id)
}
