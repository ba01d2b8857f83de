//! HeatClient against the fault server, serving bodies captured from a real Heat 27.

use super::*;
use crate::api::http::{Transport, TransportConfig};
use crate::api_error::ApiError;
use crate::fetch::{BudgetConfig, RequestBudget, RetryPolicy};
use crate::model::{StackRef, StatusState};
use crate::testing::fault_server::{FaultServer, Hit, Reply};
use futures::TryStreamExt;
use serde_json::json;
use std::time::Duration;

const STACK_SHOW: &str = include_str!("../../../../../tests/fixtures/heat/stack-show.json");
const OUTPUT_IPS: &str = include_str!("../../../../../tests/fixtures/heat/output-show-ips.json");
const RESOURCES_DETAIL: &str =
    include_str!("../../../../../tests/fixtures/heat/resources-nested2-detail-type-value.json");
const RESOURCES_TOP: &str = include_str!("../../../../../tests/fixtures/heat/resources-top.json");
const CREATED: &str = include_str!("../../../../../tests/fixtures/heat/stack-create-response.json");
const EVENTS_ASC: &str =
    include_str!("../../../../../tests/fixtures/heat/events-nested1-asc-limit6.json");
const STACK_LIST: &str = include_str!("../../../../../tests/fixtures/heat/stack-list-limit3.json");
const OUTPUTS_LIST: &str = include_str!("../../../../../tests/fixtures/heat/outputs-list.json");

const BIG50: &str = "8c565576-5ca1-4cf3-8ec8-0d7cc15df1d3";
const D0N100: &str = "4932605d-246b-411d-93b7-cb934f956a05";

fn client(server: &FaultServer) -> HeatClient {
    let transport = Transport::new(&TransportConfig {
        timeout: Duration::from_secs(5),
        budget: RequestBudget::new(BudgetConfig {
            max_in_flight: 8,
            max_per_second: None,
        }),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
        },
        ..TransportConfig::default()
    })
    .unwrap();
    HeatClient::new(transport, &server.url("/v1/admin")).unwrap()
}

fn big50() -> StackRef {
    StackRef {
        name: "big50".into(),
        id: BIG50.into(),
    }
}

fn d0n100() -> StackRef {
    StackRef {
        name: "d0n100".into(),
        id: D0N100.into(),
    }
}

fn not_found(what: &str) -> Reply {
    Reply::json(
        404,
        json!({"code": 404, "title": "Not Found", "explanation": "The resource could not be found.",
               "error": {"type": "EntityNotFound", "traceback": null,
                         "message": format!("The Stack ({what}) could not be found.")}})
        .to_string(),
    )
}

/// A marker-paged stack list of `n` generated stacks, like Heat's (ids `s000`...).
fn stack_pages(hit: &Hit, n: usize) -> Reply {
    let limit: usize = hit.param("limit").and_then(|l| l.parse().ok()).unwrap_or(n);
    let start = match hit.param("marker") {
        Some(m) => m.trim_start_matches('s').parse::<usize>().unwrap() + 1,
        None => 0,
    };
    let stacks: Vec<_> = (start..n)
        .take(limit)
        .map(|i| {
            json!({"id": format!("s{i:03}"), "stack_name": format!("st{i}"),
                   "stack_status": "CREATE_COMPLETE", "stack_status_reason": "",
                   "creation_time": "2026-11-21T12:19:51Z", "updated_time": null,
                   "parent": null, "links": [], "tags": null, "future_field": {"x": 1}})
        })
        .collect();
    Reply::ok(json!({ "stacks": stacks }))
}

#[test]
fn stack_refs_come_from_links() {
    assert_eq!(
        heat_client::stack_ref_from_href(
            "http://127.0.0.1:8004/v1/admin/stacks/d0n100-nodes-5cir4o4473df/88abcbe7-324d-4bed-98e7-efc91f70a937"
        ),
        Some(StackRef {
            name: "d0n100-nodes-5cir4o4473df".into(),
            id: "88abcbe7-324d-4bed-98e7-efc91f70a937".into()
        })
    );
    assert_eq!(
        heat_client::stack_ref_from_href("http://h/v1/p/stacks/a/b/resources/x").map(|r| r.path()),
        Some("a/b".to_string())
    );
    assert_eq!(
        heat_client::stack_ref_from_href("http://h/v1/p/stacks/a"),
        None
    );
    assert_eq!(heat_client::stack_ref_from_href("not a url"), None);
}

#[tokio::test]
async fn list_stacks_pages_through_every_stack_once() {
    let server = FaultServer::start(|hit| stack_pages(hit, 250)).await;
    let heat = client(&server);
    let stacks: Vec<_> = heat
        .list_stacks(StackListQuery::default())
        .try_collect()
        .await
        .unwrap();
    let ids: Vec<String> = stacks.iter().map(|s| s.stack.id.clone()).collect();
    let expected: Vec<String> = (0..250).map(|i| format!("s{i:03}")).collect();
    assert_eq!(ids, expected);
    let hits = server.hits();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].param("marker"), None);
    assert_eq!(hits[1].param("marker").as_deref(), Some("s099"));
    assert_eq!(hits[2].param("marker").as_deref(), Some("s199"));
    assert!(hits
        .iter()
        .all(|h| h.param("limit").as_deref() == Some("100")));
    assert_eq!(stacks[0].status.state, StatusState::Complete);
    assert_eq!(stacks[0].status_reason, None, "empty reason is no reason");
}

#[tokio::test]
async fn list_stacks_sends_every_query_parameter() {
    let server = FaultServer::start(|_| Reply::json(200, STACK_LIST)).await;
    let heat = client(&server);
    let query = StackListQuery {
        limit: Some(3),
        sort_keys: vec!["stack_name".into(), "creation_time".into()],
        sort_dir: Some(SortDir::Asc),
        filters: vec![
            ("status".into(), "FAILED".into()),
            ("status".into(), "COMPLETE".into()),
        ],
        show_nested: true,
        show_hidden: true,
        with_count: true,
        tags: vec!["a".into(), "b".into()],
        tags_any: vec!["c".into()],
        not_tags: vec!["d".into()],
        not_tags_any: vec!["e".into()],
        global_tenant: true,
    };
    let page = heat.list_stacks_page(&query, Some("m1")).await.unwrap();
    let hit = &server.hits()[0];
    assert_eq!(hit.path, "/v1/admin/stacks");
    let params = hit.params();
    let p = |k: &str| -> Vec<String> {
        params
            .iter()
            .filter(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .collect()
    };
    assert_eq!(p("limit"), ["3"]);
    assert_eq!(p("marker"), ["m1"]);
    assert_eq!(p("sort_keys"), ["stack_name", "creation_time"]);
    assert_eq!(p("sort_dir"), ["asc"]);
    assert_eq!(p("status"), ["FAILED", "COMPLETE"]);
    for flag in ["show_nested", "show_hidden", "with_count", "global_tenant"] {
        assert_eq!(p(flag), ["true"], "{flag}");
    }
    assert_eq!(p("tags"), ["a,b"]);
    assert_eq!(p("tags_any"), ["c"]);
    assert_eq!(p("not_tags"), ["d"]);
    assert_eq!(p("not_tags_any"), ["e"]);
    // The captured real list (one stack, `tags: null`) decodes.
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].stack.name, "d0n100");
    assert_eq!(page.items[0].status.raw, "CREATE_IN_PROGRESS");
    assert_eq!(page.next, None, "a short page ends the list");
}

#[tokio::test]
async fn resolve_reads_the_redirect_or_a_direct_body() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        "/v1/admin/stacks/d0n100" => Reply::with_headers(
            302,
            &[(
                "Location",
                "http://127.0.0.1:8004/v1/admin/stacks/d0n100/4932605d-246b-411d-93b7-cb934f956a05",
            )],
            "",
        ),
        "/v1/admin/stacks/big50" => Reply::json(200, STACK_SHOW),
        "/v1/admin/stacks/nope" => not_found("nope"),
        _ => Reply::status(500),
    })
    .await;
    let heat = client(&server);
    assert_eq!(heat.resolve("d0n100").await.unwrap(), d0n100());
    assert_eq!(heat.resolve("big50").await.unwrap(), big50());
    let err = heat.resolve("nope").await.unwrap_err();
    assert!(err.is_not_found());
    assert!(
        err.to_string()
            .ends_with("/v1/admin/stacks/nope: HTTP 404: The Stack (nope) could not be found."),
        "{err}"
    );
    let se: crate::report::ServiceError = err.into();
    assert_eq!(se.kind, crate::report::ErrorKind::NotFound);
}

#[tokio::test]
async fn get_stack_decodes_a_real_show() {
    let server = FaultServer::start(|_| Reply::json(200, STACK_SHOW)).await;
    let heat = client(&server);
    let detail = heat.get_stack(&big50(), true).await.unwrap();
    assert_eq!(
        server.hits()[0].path,
        format!("/v1/admin/stacks/big50/{BIG50}")
    );
    assert_eq!(server.hits()[0].param("resolve_outputs"), None);
    assert_eq!(detail.summary.stack, big50());
    assert_eq!(detail.summary.status.raw, "CREATE_COMPLETE");
    assert_eq!(
        detail.summary.status_reason.as_deref(),
        Some("Stack CREATE completed successfully")
    );
    assert_eq!(
        detail.parameters.get("count").map(String::as_str),
        Some("50")
    );
    assert_eq!(
        detail.parameters.get("image").map(String::as_str),
        Some("img-v1")
    );
    assert_eq!(detail.disable_rollback, Some(true));
    let outputs = detail.outputs.unwrap();
    let ips = outputs.iter().find(|o| o.key == "ips").unwrap();
    assert_eq!(ips.value.as_array().map(|a| a.len()), Some(50));
    assert_eq!(ips.error, None);

    heat.get_stack(&big50(), false).await.unwrap();
    assert_eq!(
        server.hits()[1].param("resolve_outputs").as_deref(),
        Some("false")
    );
}

#[tokio::test]
async fn outputs_list_and_show() {
    let server = FaultServer::start(|hit| {
        if hit.path.ends_with("/outputs") {
            Reply::json(200, OUTPUTS_LIST)
        } else if hit.path.ends_with("/outputs/ips") {
            Reply::json(200, OUTPUT_IPS)
        } else if hit.path.ends_with("/outputs/broken") {
            Reply::ok(
                json!({"output": {"output_key": "broken", "description": "x",
                "output_value": null, "output_error": "Resource nodes is in FAILED state"}}),
            )
        } else {
            Reply::status(404)
        }
    })
    .await;
    let heat = client(&server);
    let list = heat.list_outputs(&d0n100()).await.unwrap();
    assert_eq!(
        list.iter().map(|o| o.key.as_str()).collect::<Vec<_>>()[..3],
        ["refs_map", "count", "ips"]
    );
    let ips = heat.show_output(&big50(), "ips").await.unwrap();
    assert_eq!(ips.key, "ips");
    assert_eq!(ips.value[0], "10.0.0.10");
    let broken = heat.show_output(&big50(), "broken").await.unwrap();
    assert_eq!(
        broken.error.as_deref(),
        Some("Resource nodes is in FAILED state")
    );
}

#[tokio::test]
async fn resources_carry_owner_nested_parent_and_attributes() {
    let server = FaultServer::start(|hit| {
        if hit.param("with_detail").is_some() {
            Reply::json(200, RESOURCES_DETAIL)
        } else {
            Reply::json(200, RESOURCES_TOP)
        }
    })
    .await;
    let heat = client(&server);
    let top = heat
        .list_resources(&d0n100(), &ResourceQuery::default())
        .await
        .unwrap();
    assert_eq!(top.len(), 1);
    let nodes = &top[0].resource;
    assert_eq!(nodes.name, "nodes");
    assert_eq!(nodes.resource_type, "OS::Heat::ResourceGroup");
    assert_eq!(nodes.owner, Some(d0n100()));
    assert_eq!(
        nodes.nested.as_ref().map(|n| n.path()),
        Some("d0n100-nodes-5cir4o4473df/88abcbe7-324d-4bed-98e7-efc91f70a937".to_string())
    );
    assert!(top[0].attributes.is_none());

    let query = ResourceQuery {
        nested_depth: Some(2),
        with_detail: true,
        filters: vec![
            ("type".into(), "OS::Heat::Value".into()),
            ("status".into(), "COMPLETE".into()),
        ],
    };
    let detail = heat.list_resources(&big50(), &query).await.unwrap();
    let hit = &server.hits()[1];
    assert_eq!(hit.param("nested_depth").as_deref(), Some("2"));
    assert_eq!(hit.param("type").as_deref(), Some("OS::Heat::Value"));
    assert_eq!(hit.param("status").as_deref(), Some("COMPLETE"));
    assert_eq!(detail.len(), 50);
    let first = &detail[0];
    assert_eq!(first.resource.parent_resource.as_deref(), Some("36"));
    assert_eq!(
        first.resource.owner.as_ref().map(|o| o.name.as_str()),
        Some("big50-nodes-y5lqgg4lfhpp-36-g4s5gfpkywxj")
    );
    assert_eq!(
        first
            .attributes
            .as_ref()
            .and_then(|a| a.get("value"))
            .and_then(|v| v.as_str()),
        Some("10.0.0.46")
    );
}

#[tokio::test]
async fn events_decode_with_their_owning_stack() {
    // The stack show says it is a root (`parent` null): its nested events can be listed.
    let server = FaultServer::start(|hit| match hit.path.ends_with("/events") {
        true => Reply::json(200, EVENTS_ASC),
        false => Reply::json(200, STACK_SHOW),
    })
    .await;
    let heat = client(&server);
    let query = EventQuery {
        limit: Some(6),
        marker: Some("m0".into()),
        sort_keys: vec!["event_time".into()],
        sort_dir: Some(SortDir::Asc),
        nested_depth: Some(1),
        filters: vec![("resource_status".into(), "FAILED".into())],
    };
    let events = heat.list_events_page(&d0n100(), &query).await.unwrap();
    let hit = &server.hits()[1];
    assert_eq!(hit.path, format!("/v1/admin/stacks/d0n100/{D0N100}/events"));
    for (k, v) in [
        ("limit", "6"),
        ("marker", "m0"),
        ("sort_keys", "event_time"),
        ("sort_dir", "asc"),
        ("nested_depth", "1"),
        ("resource_status", "FAILED"),
    ] {
        assert_eq!(hit.param(k).as_deref(), Some(v), "{k}");
    }
    assert_eq!(events.len(), 6);
    assert_eq!(events[0].resource_name, "d0n100");
    assert_eq!(events[0].status.raw, "CREATE_IN_PROGRESS");
    assert_eq!(
        events[0].status_reason.as_deref(),
        Some("Stack CREATE started")
    );
    assert_eq!(events[0].stack, Some(d0n100()));
    assert_eq!(events[3].resource_name, "97");
    assert_eq!(
        events[3].stack.as_ref().map(|s| s.name.as_str()),
        Some("d0n100-nodes-5cir4o4473df")
    );
    assert!(events.iter().all(|e| e.path.is_empty()));

    heat.resource_events(&d0n100(), "nodes", &EventQuery::default())
        .await
        .unwrap();
    assert_eq!(
        server.hits()[2].path,
        format!("/v1/admin/stacks/d0n100/{D0N100}/resources/nodes/events")
    );
}

#[tokio::test]
async fn event_stream_follows_markers() {
    let server = FaultServer::start(|hit| {
        let all: Vec<_> = (0..7)
            .map(|i| {
                json!({"id": format!("e{i}"), "event_time": "2026-11-21T12:19:51Z",
                "resource_name": "r", "resource_status": "CREATE_COMPLETE", "links": []})
            })
            .collect();
        let start = hit
            .param("marker")
            .map(|m| m.trim_start_matches('e').parse::<usize>().unwrap() + 1)
            .unwrap_or(0);
        let limit: usize = hit.param("limit").unwrap().parse().unwrap();
        let page: Vec<_> = all.into_iter().skip(start).take(limit).collect();
        Reply::ok(json!({ "events": page }))
    })
    .await;
    let heat = client(&server);
    let events: Vec<_> = heat
        .list_events(
            d0n100(),
            EventQuery {
                limit: Some(3),
                marker: Some("e0".into()),
                ..EventQuery::default()
            },
        )
        .try_collect()
        .await
        .unwrap();
    let ids: Vec<_> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["e1", "e2", "e3", "e4", "e5", "e6"]);
}

#[tokio::test]
async fn create_update_delete_and_actions_send_the_right_requests() {
    let server = FaultServer::start(|hit| match (hit.method.as_str(), hit.path.as_str()) {
        ("POST", "/v1/admin/stacks") => Reply::json(201, CREATED),
        ("PUT" | "PATCH", p) if p.ends_with("/preview") => Reply::ok(json!({"resource_changes": {
            "added": [], "deleted": [], "replaced": [{"resource_name": "nodes", "resource_type": "OS::Heat::ResourceGroup"}],
            "unchanged": [{"resource_name": "a"}], "updated": null}})),
        ("PUT" | "PATCH", _) => Reply::json(202, ""),
        ("DELETE", _) => Reply::status(204),
        ("POST", _) => Reply::json(200, ""),
        _ => Reply::status(405),
    })
    .await;
    let heat = client(&server);
    let create = StackCreate {
        name: "big50".into(),
        template: json!({"heat_template_version": "2021-04-16", "resources": {}}),
        files: [("node.yaml".to_string(), "x".to_string())].into(),
        environment: Some(json!({"parameters": {}})),
        parameters: [("count".to_string(), json!(50))].into(),
        timeout_mins: Some(30),
        disable_rollback: Some(true),
        tags: vec!["caldera".into(), "ng".into()],
    };
    assert_eq!(heat.create_stack(&create).await.unwrap(), big50());
    let body = server.hits()[0].json();
    assert_eq!(body["stack_name"], "big50");
    assert_eq!(body["parameters"]["count"], 50);
    assert_eq!(body["files"]["node.yaml"], "x");
    assert_eq!(body["timeout_mins"], 30);
    assert_eq!(body["disable_rollback"], true);
    assert_eq!(body["tags"], "caldera,ng");

    let mut update = StackUpdate {
        parameters: [("image".to_string(), json!("img-v2"))].into(),
        existing: true,
        ..StackUpdate::default()
    };
    heat.update_stack(&big50(), &update).await.unwrap();
    update.existing = false;
    update.template = Some(json!({}));
    heat.update_stack(&big50(), &update).await.unwrap();
    let preview = heat.preview_update(&big50(), &update).await.unwrap();
    assert_eq!(preview.replaced, ["nodes"]);
    assert_eq!(preview.unchanged, ["a"]);
    heat.delete_stack(&big50()).await.unwrap();
    heat.action(&big50(), StackAction::CancelWithoutRollback)
        .await
        .unwrap();
    let member_stack = StackRef {
        name: "big50-nodes-x".into(),
        id: "nid".into(),
    };
    heat.unset_hook(&member_stack, "17", "pre-update")
        .await
        .unwrap();
    heat.mark_unhealthy(&member_stack, "17", true, "disk died")
        .await
        .unwrap();

    let hits = server.hits();
    let stack_path = format!("/v1/admin/stacks/big50/{BIG50}");
    assert_eq!(
        (hits[1].method.as_str(), hits[1].path.as_str()),
        ("PATCH", stack_path.as_str())
    );
    assert_eq!(hits[1].json(), json!({"parameters": {"image": "img-v2"}}));
    assert_eq!(hits[2].method, "PUT");
    assert_eq!(hits[3].path, format!("{stack_path}/preview"));
    assert_eq!(
        (hits[4].method.as_str(), hits[4].path.as_str()),
        ("DELETE", stack_path.as_str())
    );
    assert_eq!(hits[5].path, format!("{stack_path}/actions"));
    assert_eq!(hits[5].json(), json!({"cancel_without_rollback": null}));
    assert_eq!(
        hits[6].path,
        "/v1/admin/stacks/big50-nodes-x/nid/resources/17/signal"
    );
    assert_eq!(hits[6].json(), json!({"unset_hook": "pre-update"}));
    assert_eq!(
        (hits[7].method.as_str(), hits[7].path.as_str()),
        ("PATCH", "/v1/admin/stacks/big50-nodes-x/nid/resources/17")
    );
    assert_eq!(
        hits[7].json(),
        json!({"mark_unhealthy": true, "resource_status_reason": "disk died"})
    );
    assert_eq!(hits.len(), 8);
}

#[tokio::test]
async fn failed_create_is_not_retried_and_shows_heat_explanation() {
    let server = FaultServer::start(|_| {
        Reply::json(400, json!({"code": 400, "title": "Bad Request",
            "explanation": "The server could not comply with the request since it is either malformed or otherwise incorrect.",
            "error": {"type": "StackValidationFailed", "traceback": null,
                      "message": "Property error: resources.nodes.properties.count: \"x\" is not an integer"}}).to_string())
    })
    .await;
    let heat = client(&server);
    let err = heat
        .create_stack(&StackCreate {
            name: "bad".into(),
            ..StackCreate::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert!(
        err.to_string()
            .contains("Property error: resources.nodes.properties.count"),
        "{err}"
    );
    assert_eq!(server.hit_count(), 1);
}

#[tokio::test]
async fn malformed_bodies_name_the_field() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        "/v1/admin/stacks" => Reply::ok(json!({"stacks": [
            {"id": "a", "stack_name": "a", "stack_status": "CREATE_COMPLETE"},
            {"id": "b", "stack_name": "b"}]})),
        p if p.ends_with("/events") => Reply::ok(json!({"events": [
            {"id": "e", "event_time": "last tuesday", "resource_name": "r", "resource_status": "X"}]})),
        _ => Reply::ok(json!({"resources": [{"resource_name": "r"}]})),
    })
    .await;
    let heat = client(&server);
    let err = heat
        .list_stacks_page(&StackListQuery::default(), None)
        .await
        .unwrap_err();
    assert!(matches!(err, ApiError::Decode { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("stacks[1]") && msg.contains("missing field `stack_status`"),
        "{msg}"
    );
    let err = heat
        .list_events_page(&d0n100(), &EventQuery::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("events[0].event_time") && err.contains("last tuesday"),
        "{err}"
    );
    let err = heat
        .list_resources(&d0n100(), &ResourceQuery::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("resources[0]") && err.contains("missing field"),
        "{err}"
    );
}

#[tokio::test]
async fn dropping_the_stack_stream_stops_paging() {
    use futures::StreamExt;
    let server = FaultServer::start(|hit| Reply::delay(50, stack_pages(hit, 1000))).await;
    let heat = client(&server);
    let stream = heat.list_stacks(StackListQuery {
        limit: Some(10),
        ..StackListQuery::default()
    });
    let first: Vec<_> = stream.take(15).collect().await;
    assert_eq!(first.len(), 15);
    // Two pages were needed for fifteen stacks; none is fetched after the stream is dropped.
    assert_eq!(server.hit_count(), 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.hit_count(), 2);
}

#[tokio::test]
async fn first_page_arrives_before_the_last_is_fetched() {
    use futures::StreamExt;
    let server = FaultServer::start(|hit| Reply::delay(150, stack_pages(hit, 30))).await;
    let heat = client(&server);
    let mut stream = Box::pin(heat.list_stacks(StackListQuery {
        limit: Some(10),
        ..StackListQuery::default()
    }));
    let t0 = std::time::Instant::now();
    let first = stream.next().await.unwrap().unwrap();
    let first_at = t0.elapsed();
    assert_eq!(first.stack.id, "s000");
    let rest: Vec<_> = stream.collect().await;
    assert_eq!(rest.len(), 29);
    // The first item came with the first page, not after all four requests.
    assert!(first_at < Duration::from_millis(400), "{first_at:?}");
    assert!(
        t0.elapsed() >= Duration::from_millis(550),
        "{:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn environment_hooks_are_read_by_path_from_the_bare_environment_object() {
    // `GET .../environment` answers the stored `env_as_dict()` with no wrapping key.
    let body = json!({
        "parameters": {"v": "b", "secret": "******"},
        "parameter_defaults": {},
        "event_sinks": [],
        "encrypted_param_names": [],
        "resource_registry": {"resources": {"nodes": {"*": {"hooks": ["pre-update"]}}}}
    })
    .to_string();
    let server = FaultServer::start(move |hit| match hit.path.as_str() {
        "/v1/admin/stacks/big50/8c565576-5ca1-4cf3-8ec8-0d7cc15df1d3/environment" => {
            Reply::json(200, &body)
        }
        _ => Reply::status(500),
    })
    .await;
    let heat = client(&server);
    let hooks = heat.get_environment_hooks(&big50()).await.unwrap();
    assert!(hooks.matches(&["nodes", "12"], "pre-update"));
    assert!(!hooks.matches(&["nodes", "12"], "pre-create"));
    assert!(!hooks.matches(&["nodes"], "pre-update"));
    assert_eq!(server.hits().len(), 1);
}

/// Reads `d0n100`'s events with `nested_depth` 2 twice from a server whose stack show is
/// `show`: the `nested_depth` each events read sent, and how many stack shows were asked.
async fn events_read_twice(show: Reply) -> (Vec<Option<String>>, usize) {
    let server = FaultServer::start(move |hit| match hit.path.ends_with("/events") {
        true => Reply::json(200, EVENTS_ASC),
        false => show.clone(),
    })
    .await;
    let heat = client(&server);
    let query = EventQuery {
        nested_depth: Some(2),
        ..Default::default()
    };
    for _ in 0..2 {
        let events = heat.list_events_page(&d0n100(), &query).await.unwrap();
        assert_eq!(events.len(), 6);
    }
    let hits = server.hits();
    let (reads, shows): (Vec<_>, Vec<_>) = hits.iter().partition(|h| h.path.ends_with("/events"));
    let depths = reads.iter().map(|h| h.param("nested_depth")).collect();
    (depths, shows.len())
}

/// Heat lists nothing for `nested_depth` on a nested stack (it filters on the resources'
/// root stack): such a stack's events are read without it, its own, and whether a stack is
/// a root is asked once.
#[tokio::test]
async fn a_nested_stacks_events_are_read_without_nested_depth() {
    let nested = STACK_SHOW.replace(
        "\"parent\": null",
        "\"parent\": \"0b4ea1a1-0000-4000-8000-000000000000\"",
    );
    assert_ne!(nested, STACK_SHOW, "the fixture names its parent");
    let (depths, shows) = events_read_twice(Reply::json(200, &nested)).await;
    assert_eq!(depths, [None, None]);
    assert_eq!(shows, 1, "root-ness asked once");
}

/// A stack that cannot be shown (a deleted one, whose events Heat still lists by id) is read
/// as a root: its events as asked, and the question asked again next time.
#[tokio::test]
async fn a_stack_that_cannot_be_shown_is_read_as_a_root() {
    let (depths, shows) = events_read_twice(not_found("d0n100")).await;
    assert_eq!(depths, [Some("2".to_string()), Some("2".to_string())]);
    assert_eq!(shows, 2, "not remembered");
}
