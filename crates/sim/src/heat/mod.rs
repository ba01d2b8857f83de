//! Heat orchestration API v1 at `/orchestration/v1/{project}`.
//!
//! Routing follows Heat's: a stack is addressed as `{name}/{id}`; a name alone answers
//! 302 to `{name}/{id}[/resources|events|template|actions|environment|files]` (keeping the
//! query), and 404 for anything else (e.g. `outputs`, as Heat 27 does).

mod check;
mod deployments;
mod event_list;
mod resources;
mod shapes;
pub(crate) mod stack_routes;

use crate::reply::{heat_error, Reply, Req};
use crate::shared::{lock, Shared};
use crate::world::{stack_not_found, World};
use axum::http::{Method, StatusCode};
use serde_json::json;

pub fn handle(sh: &Shared, req: &Req) -> Reply {
    let base = sh.cfg.base.as_str();
    match req.segs.as_slice() {
        [] => return versions(base),
        ["v1"] => return versions(base),
        _ => {}
    }
    let [v1, project, rest @ ..] = req.segs.as_slice() else {
        return not_found_path();
    };
    if *v1 != "v1" {
        return not_found_path();
    }
    if *project != sh.cfg.project_id && *project != sh.cfg.project_name {
        return heat_error(
            StatusCode::FORBIDDEN,
            "HTTPForbidden",
            "You are not authorized to complete this action.",
        );
    }
    let mut w = lock(&sh.world);
    // Bring the world up to date so every answer reflects "now".
    w.tick();
    route(&mut w, sh, req, rest)
}

fn versions(base: &str) -> Reply {
    Reply::json(
        StatusCode::MULTIPLE_CHOICES,
        json!({"versions": [{"id": "v1.0", "status": "CURRENT", "links": [{"rel": "self", "href": format!("{base}/orchestration/v1/")}]}]}),
    )
}

fn not_found_path() -> Reply {
    heat_error(
        StatusCode::NOT_FOUND,
        "HTTPNotFound",
        "The resource could not be found.",
    )
}

pub(crate) fn stack_404(ident: &str) -> Reply {
    heat_error(
        StatusCode::NOT_FOUND,
        "EntityNotFound",
        &stack_not_found(ident),
    )
}

/// Sub-paths Heat's name-only lookup redirects.
const LOOKUP_PATHS: &[&str] = &[
    "resources",
    "events",
    "template",
    "actions",
    "environment",
    "files",
];

fn route(w: &mut World, sh: &Shared, req: &Req, rest: &[&str]) -> Reply {
    let m = req.method;
    match rest {
        ["software_deployments"] if m == Method::GET => deployments::list(w, req),
        ["software_deployments", id] if m == Method::GET => deployments::show(w, id),
        ["software_deployments", id] if m == Method::PUT => deployments::update(w, req, id),
        ["software_configs", id] if m == Method::GET => deployments::config(w, id),
        ["stacks"] if m == Method::GET => stack_routes::list(w, sh, req),
        ["stacks"] if m == Method::POST => stack_routes::create(w, sh, req),
        // Name-only lookups redirect whatever the method (measured: PATCH too).
        ["stacks", name] => redirect(w, sh, req, name, &[]),
        ["stacks", name, second, tail @ ..] => {
            // `{name}/{id}` when `second` is that stack's id; otherwise a name lookup.
            // A Cluster API cluster's machines run on stacks Heat does not have.
            match w.stack_by_id(second).filter(|ix| !w.heat_hidden(*ix)) {
                Some(ix) => {
                    let ok = w
                        .stack(ix)
                        .map(|s| s.name == *name || s.id == *name)
                        .unwrap_or(false);
                    if !ok {
                        return stack_404(name);
                    }
                    stack_route(w, sh, req, ix, tail)
                }
                None if LOOKUP_PATHS.contains(second) => {
                    let mut sub = vec![*second];
                    sub.extend_from_slice(tail);
                    redirect(w, sh, req, name, &sub)
                }
                // Heat reads `second` as a stack id and reports the stack by name.
                None => stack_404(name),
            }
        }
        _ => not_found_path(),
    }
}

fn redirect(w: &World, sh: &Shared, req: &Req, name: &str, sub: &[&str]) -> Reply {
    let Some(ix) = w.find_stack(name).filter(|ix| !w.heat_hidden(*ix)) else {
        return stack_404(name);
    };
    let mut loc = shapes::stack_url(w, &sh.cfg.base, ix);
    for s in sub {
        loc.push('/');
        loc.push_str(s);
    }
    if let Some(q) = req.raw_query.filter(|q| !q.is_empty()) {
        loc.push('?');
        loc.push_str(q);
    }
    // webob renders its status pages as JSON for JSON clients, as text otherwise.
    let reply = if wants_json(req) {
        Reply::json(
            StatusCode::FOUND,
            json!({
                "message": format!("The resource was found at <a href=\"{loc}\">{loc}</a>;\nyou should be redirected automatically.\n\n"),
                "code": "302 Found",
                "title": "Found",
            }),
        )
    } else {
        Reply::text(
            StatusCode::FOUND,
            format!("302 Found\n\nThe resource was found at {loc}; you should be redirected automatically.  "),
        )
    };
    reply.with_header("Location", loc)
}

pub(crate) fn wants_json(req: &Req) -> bool {
    req.header("accept")
        .map(|a| a.contains("json"))
        .unwrap_or(false)
}

/// Heat's 202 for updates (a webob status page).
pub(crate) fn accepted(req: &Req) -> Reply {
    if wants_json(req) {
        Reply::json(
            StatusCode::ACCEPTED,
            json!({
                "message": "The request is accepted for processing.<br /><br />\n\n\n",
                "code": "202 Accepted",
                "title": "Accepted",
            }),
        )
    } else {
        Reply::accepted()
    }
}

fn stack_route(w: &mut World, sh: &Shared, req: &Req, ix: usize, tail: &[&str]) -> Reply {
    let m = req.method;
    match tail {
        [] if m == Method::GET => stack_routes::show(w, sh, req, ix),
        [] if m == Method::PATCH => stack_routes::update(w, sh, req, ix, true),
        [] if m == Method::PUT => stack_routes::update(w, sh, req, ix, false),
        ["preview"] if m == Method::PATCH => stack_routes::preview(w, req, ix),
        [] if m == Method::DELETE => stack_routes::delete(w, ix),
        ["outputs"] if m == Method::GET => stack_routes::outputs_list(w, ix),
        ["outputs", key] if m == Method::GET => stack_routes::output_show(w, sh, ix, key),
        ["template"] if m == Method::GET => stack_routes::template(w, ix),
        ["environment"] if m == Method::GET => stack_routes::environment(w, ix),
        ["files"] if m == Method::GET => Reply::ok(json!({})),
        ["actions"] if m == Method::POST => stack_routes::action(w, req, ix),
        ["resources"] if m == Method::GET => resources::list(w, sh, req, ix),
        ["resources", r] if m == Method::GET => resources::show(w, sh, req, ix, r),
        ["resources", r] if m == Method::PATCH => resources::mark_unhealthy(w, req, ix, r),
        ["resources", r, "metadata"] if m == Method::GET => resources::metadata(w, ix, r),
        ["resources", r, "signal"] if m == Method::POST => resources::signal(w, req, ix, r),
        ["resources", r, "events"] if m == Method::GET => event_list::list(w, sh, req, ix, Some(r)),
        ["resources", r, "events", id] if m == Method::GET => event_list::show(w, sh, ix, r, id),
        ["events"] if m == Method::GET => event_list::list(w, sh, req, ix, None),
        [] | ["outputs", ..] | ["resources", ..] | ["events"] | ["actions"] => heat_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "HTTPMethodNotAllowed",
            "The server does not support the method requested.",
        ),
        _ => not_found_path(),
    }
}

/// Heat's list filters: a value may be repeated; `status`/`action` match Heat's separate
/// columns, and a full `ACTION_STATE` is accepted too for convenience.
pub(crate) fn status_matches(values: &[&str], status: crate::world::Status, part: &str) -> bool {
    values.is_empty()
        || values.iter().any(|v| {
            let full = status.to_string();
            match part {
                "status" => *v == status.state.as_str() || *v == full,
                // Events keep action and status apart: `CREATE_FAILED` matches nothing
                // there (measured), unlike resources and stacks.
                "event_status" => *v == status.state.as_str(),
                "event_action" => *v == status.action.as_str(),
                _ => *v == status.action.as_str() || *v == full,
            }
        })
}
