//! Events of a stack or of one resource: filters, nested_depth (with `root_stack`
//! links), sorting and marker paging as Heat's DB layer does them.

use super::shapes::event_json;
use super::stack_routes::{int_param, sort_dir};
use crate::reply::{heat_error, Reply, Req};
use crate::shared::Shared;
use crate::world::{parse_uuid, Event, World};
use axum::http::StatusCode;
use serde_json::json;

pub fn list(w: &mut World, sh: &Shared, req: &Req, ix: usize, resource: Option<&str>) -> Reply {
    let w: &World = w;
    let limit = match int_param(req, "limit") {
        Ok(l) => l,
        Err(r) => return r,
    };
    let depth = match int_param(req, "nested_depth") {
        Ok(d) => d,
        Err(r) => return r,
    };
    let keys: Vec<&str> = req
        .q_all("sort_keys")
        .into_iter()
        .flat_map(|k| k.split(','))
        .filter(|k| matches!(*k, "event_time" | "resource_type"))
        .collect();
    // Heat: created_at desc by default; a sort key without a direction sorts ascending.
    let desc = match sort_dir(req, keys.is_empty() && req.q("sort_keys").is_none()) {
        Ok(d) => d,
        Err(r) => return r,
    };
    let by_type = keys.first() == Some(&"resource_type");
    let (st_f, act_f, name_f, type_f) = (
        req.q_all("resource_status"),
        req.q_all("resource_action"),
        req.q_all("resource_name"),
        req.q_all("resource_type"),
    );

    if let Some(r) = resource {
        let exists = w
            .stack(ix)
            .map(|s| s.resource(r).is_some() || s.events.iter().any(|e| &*e.resource_name == r))
            .unwrap_or(false);
        if !exists {
            return heat_error(
                StatusCode::NOT_FOUND,
                "HTTPNotFound",
                &format!("No events found for resource {r}"),
            );
        }
    }
    // Heat lists nested events from a root only: it takes the stacks whose resources carry
    // this one as their root_stack_id (heat/engine/service.py `list_events`), so asked of a
    // nested stack it lists nothing at all.
    let nested = w.stack(ix).is_some_and(|s| s.parent.is_some());
    let stacks: Vec<usize> = match (depth, resource) {
        (Some(d), None) if d > 0 && nested => Vec::new(),
        (Some(d), None) if d > 0 => w
            .nested_stacks(ix, d.min(5) as u32)
            .into_iter()
            .map(|(s, _)| s)
            .collect(),
        _ => vec![ix],
    };
    let root = depth.filter(|d| *d > 0).map(|_| ix);
    let mut evs: Vec<(usize, &Event)> = Vec::new();
    for s in stacks {
        let Some(st) = w.stack(s) else { continue };
        for e in &st.events {
            let ok = resource.map(|r| &*e.resource_name == r).unwrap_or(true)
                && super::status_matches(&st_f, e.status, "event_status")
                && super::status_matches(&act_f, e.status, "event_action")
                && (name_f.is_empty() || name_f.contains(&&*e.resource_name))
                && (type_f.is_empty() || type_f.contains(&&*e.rtype));
            if ok {
                evs.push((s, e));
            }
        }
    }
    // Order as Heat's query does (sort key, then insertion id), in the requested direction.
    let cmp = |a: &(usize, &Event), b: &(usize, &Event)| {
        let o = if by_type {
            (&*a.1.rtype, a.1.seq).cmp(&(&*b.1.rtype, b.1.seq))
        } else {
            (a.1.time_ms, a.1.seq).cmp(&(b.1.time_ms, b.1.seq))
        };
        if desc {
            o.reverse()
        } else {
            o
        }
    };
    // A marker Heat no longer has (purged) is ignored: the answer starts from the top.
    let marker = req
        .q("marker")
        .and_then(parse_uuid)
        .and_then(|m| evs.iter().find(|(_, e)| e.id == m).copied());
    if let Some(m) = marker {
        evs.retain(|x| cmp(x, &m) == std::cmp::Ordering::Greater);
    }
    // Only the page needs sorting: select it first (nested listings can hold 100k events).
    if let Some(l) = limit.filter(|l| *l >= 0).map(|l| l as usize) {
        if l < evs.len() {
            if l == 0 {
                evs.clear();
            } else {
                evs.select_nth_unstable_by(l - 1, cmp);
                evs.truncate(l);
            }
        }
    }
    evs.sort_by(cmp);
    let (start, end) = (0, evs.len());
    let page: Vec<serde_json::Value> = evs[start.min(end)..end]
        .iter()
        .map(|(s, e)| event_json(w, &sh.cfg.base, *s, e, root, false))
        .collect();
    Reply::ok(json!({ "events": page }))
}

pub fn show(w: &mut World, sh: &Shared, ix: usize, resource: &str, id: &str) -> Reply {
    let found = parse_uuid(id).and_then(|u| {
        w.stack(ix).and_then(|s| {
            s.events
                .iter()
                .find(|e| e.id == u && &*e.resource_name == resource)
        })
    });
    match found {
        Some(e) => Reply::ok(json!({ "event": event_json(w, &sh.cfg.base, ix, e, None, true) })),
        None => heat_error(
            StatusCode::NOT_FOUND,
            "EntityNotFound",
            &format!("The Event ({id}) could not be found."),
        ),
    }
}
