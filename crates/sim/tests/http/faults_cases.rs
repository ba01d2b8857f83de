use crate::common::{fast, Api};
use caldera_sim::{Fault, FaultKind};
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn status_faults_throttling_and_latency() {
    let api = Api::start(fast("small")).await;
    let f = api.h.faults();
    f.fail_next(2, 503);
    let r = api.get(&api.heat("/stacks")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.body["code"], 503, "Heat's error shape");
    let r = api.mget("/clusters").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.body["errors"][0]["status"], 503, "Magnum's error shape");
    assert_eq!(api.get(&api.heat("/stacks")).await.status, StatusCode::OK);

    f.throttle_next(1, 7);
    let r = api.get(&api.heat("/stacks")).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers["retry-after"], "7");
    assert_eq!(api.get(&api.heat("/stacks")).await.status, StatusCode::OK);

    f.add(
        Fault::new(FaultKind::Status(500))
            .times(1)
            .on_path("/compute"),
    );
    assert_eq!(api.get(&api.heat("/stacks")).await.status, StatusCode::OK);
    let r = api
        .get(&format!("{}/servers/detail", api.h.nova_url()))
        .await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(r.body["computeFault"]["code"], 500);

    f.set_latency(Duration::from_millis(150));
    let t = Instant::now();
    api.get(&api.heat("/stacks")).await;
    assert!(t.elapsed() >= Duration::from_millis(150));
    f.set_latency(Duration::ZERO);
    // Keystone is spared by default so clients can still log in.
    f.error_rate(1.0, 500);
    let r = crate::common::password_token(&api.http, &api.h).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(
        api.get(&api.heat("/stacks")).await.status,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    f.clear();
    assert!(f.injected() >= 6, "{}", f.injected());
    api.h.shutdown().await;
}

#[tokio::test]
async fn truncated_bodies_and_dropped_connections() {
    let api = Api::start(fast("small")).await;
    let f = api.h.faults();
    f.truncate_next(1);
    let r = api
        .http
        .get(api.heat("/stacks"))
        .header("X-Auth-Token", &api.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the headers arrive");
    let body = r.bytes().await;
    assert!(body.is_err(), "the body is cut short of its Content-Length");

    f.drop_next(1);
    let r = api
        .http
        .get(api.heat("/stacks"))
        .header("X-Auth-Token", &api.token)
        .send()
        .await;
    assert!(r.is_err(), "no response at all: {r:?}");
    assert_eq!(api.get(&api.heat("/stacks")).await.status, StatusCode::OK);
    api.h.shutdown().await;
}

#[tokio::test]
async fn failing_and_stuck_nodes() {
    let api = Api::start(fast("empty")).await;
    let path = api.create_group("ngf", 3, None).await;
    let f = api.h.faults();
    assert!(f.fail_node("ngf", 1, "No valid host was found."));
    assert!(f.stick_node("ngf", 2));
    let r = api
        .call(
            Method::PATCH,
            &api.heat(&path),
            Some(json!({"parameters": {"image": "img-v2"}})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let st = api.wait_status(&path, "UPDATE_FAILED", 20).await;
    let reason = st["stack"]["stack_status_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Resource UPDATE failed: ")
            && reason.contains("resources.nodes.resources[1]"),
        "{reason}"
    );
    // Member 2 never finishes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = api
        .get(&api.heat(&format!(
            "{path}/resources?nested_depth=2&type=OS::Nova::Server&status=IN_PROGRESS"
        )))
        .await;
    assert_eq!(r.body["resources"].as_array().unwrap().len(), 1);
    let r = api
        .get(&api.heat(&format!("{path}/resources?nested_depth=2&status=FAILED")))
        .await;
    let names: Vec<&str> = r.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["resource_name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"nodes") && names.contains(&"1") && names.contains(&"server"),
        "{names:?}"
    );
    // Recovery as operators do it: fix the cause, PATCH again. The new traversal takes
    // over the stuck member and retries the failed one.
    assert!(f.heal_nodes("ngf"));
    let r = api
        .call(Method::PATCH, &api.heat(&path), Some(json!({})), &[])
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    api.wait_status(&path, "UPDATE_COMPLETE", 20).await;
    let r = api
        .get(&api.heat(&format!(
            "{path}/resources?nested_depth=2&type=OS::Nova::Server"
        )))
        .await;
    for x in r.body["resources"].as_array().unwrap() {
        assert_eq!(x["resource_status"], "UPDATE_COMPLETE", "{x}");
    }
    api.h.shutdown().await;
}

#[tokio::test]
async fn same_seed_same_cloud() {
    // A near-frozen clock: the comparison is about the built world, not live progress.
    let frozen = || {
        let mut o = fast("demo");
        o.speed = 1e-4;
        o
    };
    let a = Api::start(frozen()).await;
    let b = Api::start(frozen()).await;
    let ids = |api: &Api| {
        api.h.with_world(|w| {
            (
                w.stacks().map(|(_, s)| s.id.clone()).collect::<Vec<_>>(),
                w.clusters
                    .iter()
                    .map(|c| c.uuid.clone())
                    .collect::<Vec<_>>(),
                w.server_order.len(),
            )
        })
    };
    assert_eq!(ids(&a), ids(&b));
    let la = a.get(&a.heat("/stacks")).await.body["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].clone(), s["stack_status"].clone()))
        .collect::<Vec<_>>();
    let lb = b.get(&b.heat("/stacks")).await.body["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].clone(), s["stack_status"].clone()))
        .collect::<Vec<_>>();
    assert_eq!(la, lb);
    let mut o = frozen();
    o.seed = 7;
    let c = Api::start(o).await;
    assert_ne!(ids(&a).1, ids(&c).1);
    a.h.shutdown().await;
    b.h.shutdown().await;
    c.h.shutdown().await;
}

#[tokio::test]
async fn truncated_body_is_short_of_content_length_on_the_wire() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let api = Api::start(fast("small")).await;
    api.h.faults().truncate_next(1);
    let mut s = tokio::net::TcpStream::connect(api.h.addr).await.unwrap();
    let path = api.heat("/stacks").replace(&api.h.base_url(), "");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Auth-Token: {}\r\n\r\n",
        api.token
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(body.len() < len, "{} of {len} bytes", body.len());
    assert!(serde_json::from_str::<serde_json::Value>(body).is_err());
    api.h.shutdown().await;
}

#[tokio::test]
async fn scenario_modifiers_add_faults() {
    let mut o = fast("empty+slow");
    o.seed = 3;
    let api = Api::start(o).await;
    let t = Instant::now();
    assert_eq!(api.get(&api.heat("/stacks")).await.status, StatusCode::OK);
    assert!(t.elapsed() >= Duration::from_millis(200));
    assert!(caldera_sim::start(fast("empty+nope")).await.is_err());
    api.h.shutdown().await;
}

/// Malformed requests get 4xx answers, never a 5xx or a dropped connection.
#[tokio::test]
async fn hostile_requests_get_client_errors() {
    let api = Api::start(fast("small")).await;
    let ng = api
        .mget("/clusters/small/nodegroups/default-worker")
        .await
        .body["stack_id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = api.stack_path(&ng).await;
    let heat = |p: &str| api.heat(p);
    let raw = |m: Method, url: String, body: &'static str| {
        let api = &api;
        async move {
            let r = api
                .http
                .request(m, &url)
                .header("X-Auth-Token", &api.token)
                .header("OpenStack-API-Version", "container-infra 1.12")
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            r.status()
        }
    };
    let cases = vec![
        (Method::POST, heat("/stacks"), "{not json"),
        (Method::POST, heat("/stacks"), "[1,2]"),
        (
            Method::POST,
            heat("/stacks"),
            r#"{"stack_name": "x", "parameters": {"count": 1e12}}"#,
        ),
        (Method::PATCH, heat(&path), "[]"),
        (
            Method::PATCH,
            heat(&path),
            r#"{"parameters": {"count": -3}}"#,
        ),
        (
            Method::PATCH,
            heat(&path),
            r#"{"parameters": {"removal_policies": "nope"}}"#,
        ),
        (Method::PUT, heat(&path), "null"),
        (Method::POST, heat(&format!("{path}/actions")), "17"),
        (
            Method::POST,
            heat(&format!("{path}/resources/nodes/signal")),
            "\"x\"",
        ),
        (
            Method::PATCH,
            heat(&format!("{path}/resources/nodes")),
            "[true]",
        ),
        (
            Method::GET,
            heat(&format!("{path}/events?limit=99999999999999999999")),
            "",
        ),
        (
            Method::GET,
            heat(&format!(
                "{path}/events?limit=9223372036854775807&marker=zz"
            )),
            "",
        ),
        (
            Method::GET,
            heat("/stacks?limit=9223372036854775807&sort_keys=%FF"),
            "",
        ),
        (
            Method::GET,
            heat(&format!("{path}/resources?nested_depth=-5")),
            "",
        ),
        (Method::GET, heat("/stacks/%00/%00/%00"), ""),
        (Method::DELETE, heat("/stacks"), ""),
        (
            Method::POST,
            api.magnum("/clusters/small/actions/resize"),
            r#"{"node_count": "many"}"#,
        ),
        (
            Method::POST,
            api.magnum("/clusters/small/actions/resize"),
            r#"{"node_count": 4000000000}"#,
        ),
        (
            Method::POST,
            api.magnum("/clusters/small/actions/resize"),
            r#"{"node_count": 2, "nodes_to_remove": [{"a": 1}]}"#,
        ),
        (
            Method::POST,
            api.magnum("/clusters/small/actions/upgrade"),
            r#"{"cluster_template": 5}"#,
        ),
        (
            Method::PATCH,
            api.magnum("/clusters/small"),
            r#"{"op": "replace"}"#,
        ),
        (Method::GET, api.magnum("/clusters?limit=0"), ""),
        (Method::GET, api.magnum("/clusters?sort_dir=sideways"), ""),
        (
            Method::GET,
            format!("{}/servers/detail?limit=x", api.h.nova_url()),
            "",
        ),
        (
            Method::POST,
            format!("{}/auth/tokens", api.h.auth_url),
            "{}",
        ),
        (Method::POST, format!("{}/auth/tokens", api.h.auth_url), "]"),
    ];
    for (m, url, body) in cases {
        let status = raw(m.clone(), url.clone(), body).await;
        assert!(
            status.is_client_error() || status.is_success() || status.is_redirection(),
            "{m} {url} {body}: {status}"
        );
    }
    // Still serving.
    assert_eq!(api.get(&api.heat("/stacks")).await.status, StatusCode::OK);
    api.h.shutdown().await;
}
