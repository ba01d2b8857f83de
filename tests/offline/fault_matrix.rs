//! The fault matrix: every fault the simulator can inject, through the real client stack
//! (clouds.yaml-style `CloudConfig` → Keystone → `CloudConnection` → typed clients,
//! `LiveService`, `stream_ips`, the event follower), checking for each that the call either
//! succeeds after safe retries or fails with an error that says what happened, and that only
//! idempotent requests were repeated (counted on the server side).
//!
//! Everything runs on 127.0.0.1; every loop is bounded in count and time.

use bytes::Bytes;
use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::api::error::ApiError;
use caldera::api::heat::{StackCreate, StackListQuery, StackUpdate};
use caldera::fetch::RetryPolicy;
use caldera::ops::ips::{stream_group_ips, IpEvent, IpOptions};
use caldera::service::live::LiveService;
use caldera::service::{CloudService, ErrorKind, EventCursor};
use caldera::sim::{self, Fault, FaultKind, SimHandle, SimOptions};
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

fn fast(scenario: &str) -> SimOptions {
    SimOptions {
        scenario: scenario.into(),
        speed: 20.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        create_median: Duration::from_secs(2),
        update_median: Duration::from_secs(2),
        ..SimOptions::default()
    }
}

/// Short backoff so the matrix runs quickly; `max_delay` also caps honoured Retry-After.
fn quick_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(3),
    }
}

fn options() -> ConnectOptions {
    ConnectOptions {
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        retry: quick_retry(),
        ..ConnectOptions::default()
    }
}

async fn start(opts: SimOptions) -> SimHandle {
    sim::start(opts).await.expect("simulator starts")
}

async fn connect_with(sim: &SimHandle, opts: &ConnectOptions) -> CloudConnection {
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), opts)
        .await
        .expect("connect through the simulator's Keystone");
    sim.faults().reset_requests();
    conn
}

async fn connect(sim: &SimHandle) -> CloudConnection {
    connect_with(sim, &options()).await
}

fn stacks_path(sim: &SimHandle) -> String {
    format!("/orchestration/v1/{}/stacks", sim.project_id)
}

/// One page of the stack list: exactly one request per attempt.
async fn list_page(conn: &CloudConnection) -> Result<usize, ApiError> {
    conn.heat
        .list_stacks_page(&StackListQuery::default(), None)
        .await
        .map(|p| p.items.len())
}

fn assert_words(err: &dyn std::fmt::Display, words: &[&str]) {
    let text = err.to_string();
    for w in words {
        assert!(text.contains(w), "error {text:?} should mention {w:?}");
    }
}

// ------------------------------------------------------------------ statuses

#[tokio::test]
async fn server_errors_are_retried_for_gets_then_reported() {
    let sim = start(fast("small")).await;
    let conn = connect(&sim).await;
    let f = sim.faults();
    let want = list_page(&conn).await.expect("baseline");
    assert!(want > 0);

    for status in [500u16, 502, 503, 504] {
        f.reset_requests();
        f.fail_next(2, status);
        assert_eq!(list_page(&conn).await.expect("recovers"), want);
        assert_eq!(
            f.requests("GET", &stacks_path(&sim)),
            3,
            "two failures + one success for {status}"
        );
    }

    // A fault that does not clear: every attempt is used, then the server's words come back.
    f.reset_requests();
    f.error_rate(1.0, 500);
    let err = list_page(&conn).await.expect_err("persistent 500");
    assert_eq!(err.status(), Some(500));
    assert_words(&err, &["GET", "/stacks", "HTTP 500", "Simulated fault"]);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 4, "max_attempts");
    f.clear();

    // Not retryable: a 4xx is answered once.
    f.reset_requests();
    f.fail_next(1, 403);
    let err = list_page(&conn).await.expect_err("403");
    assert_words(&err, &["HTTP 403"]);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 1);

    // Magnum's error shape through the service layer.
    f.fail_next(10, 503);
    let svc = LiveService::new(conn.clone());
    let err = svc.list_clusters().await.expect_err("persistent 503");
    assert_words(&err, &["HTTP 503", "Simulated fault"]);
    assert_eq!(err.kind, ErrorKind::Http);
    f.clear();
    sim.shutdown().await;
}

#[tokio::test]
async fn throttling_honours_retry_after() {
    let sim = start(fast("small")).await;
    let conn = connect(&sim).await;
    let f = sim.faults();
    f.throttle_next(1, 1);
    let t = Instant::now();
    list_page(&conn).await.expect("recovers after Retry-After");
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "waited the server's Retry-After, not the 10 ms backoff: {:?}",
        t.elapsed()
    );
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 2);

    // A Retry-After longer than we are willing to wait is capped by max_delay (3 s): the
    // call ends with the 429 in bounded time.
    f.reset_requests();
    f.add(Fault::new(FaultKind::Throttle {
        retry_after_secs: 3600,
    }));
    let conn2 = connect_with(
        &sim,
        &ConnectOptions {
            retry: RetryPolicy {
                max_attempts: 2,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(300),
            },
            ..options()
        },
    )
    .await;
    let t = Instant::now();
    let err = list_page(&conn2).await.expect_err("still throttled");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_words(&err, &["HTTP 429", "Rate limit"]);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 2);
    f.clear();
    sim.shutdown().await;
}

// ------------------------------------------------------------------ writes are never repeated

fn group_create(name: &str, count: u32) -> StackCreate {
    StackCreate {
        name: name.into(),
        template: json!({}),
        parameters: BTreeMap::from([
            ("count".to_string(), json!(count)),
            ("image".to_string(), json!("img-v1")),
        ]),
        ..Default::default()
    }
}

#[tokio::test]
async fn writes_are_sent_once_whatever_the_fault() {
    let sim = start(fast("empty")).await;
    let conn = connect_with(
        &sim,
        &ConnectOptions {
            timeout: Duration::from_millis(600),
            ..options()
        },
    )
    .await;
    let f = sim.faults();
    let faults: Vec<(&str, Fault, &[&str])> = vec![
        ("500", Fault::new(FaultKind::Status(500)), &["HTTP 500"]),
        ("503", Fault::new(FaultKind::Status(503)), &["HTTP 503"]),
        (
            "429",
            Fault::new(FaultKind::Throttle {
                retry_after_secs: 1,
            }),
            &["HTTP 429"],
        ),
        ("drop", Fault::new(FaultKind::Drop), &["POST"]),
        (
            "timeout",
            Fault::new(FaultKind::Latency(Duration::from_secs(2))),
            &["timed out"],
        ),
    ];
    for (label, fault, words) in faults {
        f.reset_requests();
        f.add(fault.times(1));
        let err = conn
            .heat
            .create_stack(&group_create(&format!("g-{label}"), 1))
            .await
            .expect_err(label);
        assert_words(&err, words);
        assert_eq!(
            f.requests("POST", &stacks_path(&sim)),
            1,
            "{label}: a POST is never repeated"
        );
        f.clear();
    }
    // The same for PATCH (update) of an existing stack.
    let stack = conn
        .heat
        .create_stack(&group_create("g-ok", 1))
        .await
        .expect("create");
    f.reset_requests();
    f.fail_next(1, 503);
    let update = StackUpdate {
        existing: true,
        parameters: BTreeMap::from([("image".to_string(), json!("img-v2"))]),
        ..Default::default()
    };
    let err = conn
        .heat
        .update_stack(&stack, &update)
        .await
        .expect_err("503");
    assert_words(&err, &["PATCH", "HTTP 503"]);
    assert_eq!(f.requests("PATCH", &stacks_path(&sim)), 1);
    sim.shutdown().await;
}

// ------------------------------------------------------------------ transport faults

#[tokio::test]
async fn timeouts_resets_and_truncated_bodies() {
    let sim = start(fast("small")).await;
    let conn = connect_with(
        &sim,
        &ConnectOptions {
            timeout: Duration::from_millis(400),
            ..options()
        },
    )
    .await;
    let f = sim.faults();
    let want = list_page(&conn).await.expect("baseline");

    // Latency beyond the client's first-byte timeout once, then fine.
    f.reset_requests();
    f.add(Fault::new(FaultKind::Latency(Duration::from_secs(2))).times(1));
    assert_eq!(list_page(&conn).await.expect("second attempt"), want);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 2);
    // Always slow: a timeout is tried twice (not max_attempts times), and the error names
    // the service, the URL and the timeout that elapsed.
    f.reset_requests();
    f.set_latency(Duration::from_secs(2));
    let err = list_page(&conn).await.expect_err("always slow");
    assert_words(
        &err,
        &[
            "GET",
            "/stacks",
            "timed out",
            "Heat no answer within 400 ms",
        ],
    );
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 2);
    f.clear();

    // Connections closed without an answer.
    f.reset_requests();
    f.drop_next(3);
    assert_eq!(list_page(&conn).await.expect("fourth attempt"), want);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 4);
    f.add(Fault::new(FaultKind::Drop));
    let err = list_page(&conn).await.expect_err("always dropped");
    assert_words(&err, &["GET", "transport error"]);
    f.clear();

    // Bodies cut short of their Content-Length.
    f.reset_requests();
    f.truncate_next(2);
    assert_eq!(list_page(&conn).await.expect("third attempt"), want);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 3);
    f.add(Fault::new(FaultKind::Truncate));
    let err = list_page(&conn).await.expect_err("always truncated");
    assert_words(&err, &["GET", "/stacks"]);
    f.clear();
    sim.shutdown().await;
}

// ------------------------------------------------------------------ bodies

fn raw(status: u16, content_type: &str, body: impl Into<Bytes>) -> Fault {
    Fault::new(FaultKind::Raw {
        status,
        content_type: content_type.into(),
        body: body.into(),
    })
    .times(1)
}

fn null_status(v: &mut Value) {
    if let Some(s) = v.pointer_mut("/stacks/0/stack_status") {
        *s = Value::Null;
    }
}

fn drop_first_id(v: &mut Value) {
    if let Some(s) = v.pointer_mut("/stacks/0").and_then(Value::as_object_mut) {
        s.remove("id");
    }
}

fn null_optionals(v: &mut Value) {
    for s in v
        .get_mut("stacks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for k in [
            "stack_status_reason",
            "creation_time",
            "updated_time",
            "parent",
            "links",
            "tags",
            "description",
        ] {
            s[k] = Value::Null;
        }
    }
}

fn null_clusters(v: &mut Value) {
    if let Some(c) = v.get_mut("clusters") {
        *c = Value::Null;
    }
}

#[tokio::test]
async fn bad_bodies_are_decode_errors_naming_the_problem_and_not_retried() {
    let sim = start(fast("small")).await;
    let conn = connect(&sim).await;
    let f = sim.faults();
    let want = list_page(&conn).await.expect("baseline");
    let cases: Vec<(&str, Fault, &[&str])> = vec![
        (
            "truncated JSON",
            raw(200, "application/json", r#"{"stacks": [{"id": "a"#),
            &["unexpected response", "truncated body"],
        ),
        (
            "malformed JSON",
            raw(200, "application/json", r#"{"stacks": [}"#),
            &["unexpected response", "expected"],
        ),
        (
            "trailing garbage",
            raw(200, "application/json", r#"{"stacks": []} <html>"#),
            &["unexpected response", "trailing"],
        ),
        (
            "HTML from a proxy",
            raw(
                200,
                "text/html",
                "<html><body>Bad Gateway (proxy)</body></html>",
            ),
            &["expected JSON", "text/html", "Bad Gateway"],
        ),
        (
            "wrong shape",
            raw(200, "application/json", r#"{"stacks": {"id": 1}}"#),
            &["unexpected response", "stacks"],
        ),
        (
            "null body",
            raw(200, "application/json", "null"),
            &["unexpected response"],
        ),
        (
            "empty body",
            raw(200, "application/json", ""),
            &["unexpected response"],
        ),
        (
            "null required field",
            Fault::new(FaultKind::Mangle(null_status)).times(1),
            &["stacks[0].stack_status"],
        ),
        (
            "missing required field",
            Fault::new(FaultKind::Mangle(drop_first_id)).times(1),
            &["stacks[0]", "missing field `id`"],
        ),
    ];
    for (label, fault, words) in cases {
        f.reset_requests();
        f.add(fault);
        let err = list_page(&conn).await.expect_err(label);
        assert!(matches!(err, ApiError::Decode { .. }), "{label}: {err:?}");
        assert_words(&err, words);
        assert_eq!(
            f.requests("GET", &stacks_path(&sim)),
            1,
            "{label}: a body that does not decode will not decode better next time"
        );
        // And the next call is fine: nothing is left in a bad state.
        assert_eq!(list_page(&conn).await.expect(label), want);
    }

    // Nulls where the services may legitimately send them are accepted.
    f.add(Fault::new(FaultKind::Mangle(null_optionals)).times(1));
    assert_eq!(list_page(&conn).await.expect("optional nulls"), want);

    let svc = LiveService::new(conn.clone());
    f.add(Fault::new(FaultKind::Mangle(null_clusters)).times(1));
    let err = svc.list_clusters().await.expect_err("null list");
    assert_eq!(err.kind, ErrorKind::Decode, "{err}");
    // An HTTP error with a non-JSON body keeps a short excerpt of it.
    f.add(
        raw(
            502,
            "text/html",
            "<html><h1>502 Bad Gateway</h1> nginx</html>",
        )
        .times(9),
    );
    let err = list_page(&conn).await.expect_err("502 html");
    assert_words(&err, &["HTTP 502", "Bad Gateway"]);
    f.clear();
    sim.shutdown().await;
}

#[tokio::test]
async fn very_large_bodies_are_read_or_refused_by_the_limit() {
    let sim = start(fast("small")).await;
    let f = sim.faults();
    // 24 MB of padding around a valid listing: unknown fields are ignored, the body is read.
    let pad = "x".repeat(24 * 1024 * 1024);
    let big = format!(r#"{{"stacks": [], "padding": "{pad}"}}"#);
    let conn = connect(&sim).await;
    f.add(raw(200, "application/json", big.clone()));
    assert_eq!(list_page(&conn).await.expect("big but valid"), 0);

    // The same body past a 1 MB limit: refused, with the limit in the message, not retried.
    let small = connect_with(
        &sim,
        &ConnectOptions {
            max_body_bytes: 1024 * 1024,
            ..options()
        },
    )
    .await;
    f.add(raw(200, "application/json", big));
    let err = list_page(&small).await.expect_err("over the limit");
    assert_words(&err, &["exceeds the limit of 1048576 bytes"]);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 1);
    sim.shutdown().await;
}

// ------------------------------------------------------------------ tokens

#[tokio::test]
async fn token_expiring_in_the_middle_of_a_paginated_fetch() {
    let sim = start(SimOptions {
        token_ttl: Duration::from_millis(1500),
        ..fast("demo")
    })
    .await;
    let conn = connect(&sim).await;
    let mut query = StackListQuery {
        show_nested: true,
        ..Default::default()
    };
    let collect = |conn: CloudConnection, query: StackListQuery| async move {
        let mut out = Vec::new();
        let mut s = Box::pin(conn.heat.list_stacks(query));
        while let Some(item) = s.next().await {
            out.push(item.expect("every page").stack.id);
        }
        out
    };
    let baseline = collect(conn.clone(), query.clone()).await;
    assert!(baseline.len() >= 8, "enough stacks: {}", baseline.len());
    // About ten pages.
    let limit = baseline.len().div_ceil(10);
    query.limit = Some(limit as u32);
    let issued_before = sim.issued_tokens().len();
    // Each page now takes 350 ms: the listing spans several token lifetimes, and some
    // requests leave with a token that expires while they wait (answered 401, renewed once).
    sim.faults().set_latency(Duration::from_millis(350));
    let f = sim.faults();
    f.reset_requests();
    let t = Instant::now();
    let during = collect(conn.clone(), query).await;
    let pages = baseline.len().div_ceil(limit) as u64;
    assert_eq!(
        during, baseline,
        "same stacks, same order, no gaps or repeats"
    );
    let issued = sim.issued_tokens().len() - issued_before;
    assert!(
        issued as f64 >= (t.elapsed().as_secs_f64() / 1.5).floor() - 1.0 && issued >= 2,
        "renewed across the listing: {issued} tokens in {:?}",
        t.elapsed()
    );
    let gets = f.requests("GET", &stacks_path(&sim));
    assert!(
        gets >= pages && gets <= pages * 2,
        "each page at most once more (a 401 retry): {gets} for {pages} pages"
    );
    sim.shutdown().await;
}

// ------------------------------------------------------------------ TLS

#[tokio::test]
async fn tls_configuration_failures_are_clear() {
    let sim = start(fast("empty")).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("ca.pem");
    std::fs::write(&garbage, "not a certificate\n").expect("write");
    let missing = dir.path().join("missing.pem");

    let mut cloud = sim.cloud_config();
    cloud.cacert = Some(missing.clone());
    let err = CloudConnection::from_cloud(&cloud, &options())
        .await
        .err()
        .expect("missing cacert");
    assert_words(&err, &["cacert", "missing.pem", "cannot read"]);

    cloud.cacert = Some(garbage);
    let err = CloudConnection::from_cloud(&cloud, &options())
        .await
        .err()
        .expect("garbage cacert");
    assert_words(&err, &["cacert", "ca.pem"]);

    // https:// to a plain-HTTP server: the handshake fails, once (a TLS failure is not
    // retried), and says so. verify:false does not make it any less of a failure.
    for verify in [true, false] {
        let mut cloud = sim.cloud_config();
        cloud.auth_url = cloud.auth_url.replace("http://", "https://");
        cloud.verify = verify;
        let t = Instant::now();
        let err = CloudConnection::from_cloud(&cloud, &options())
            .await
            .err()
            .expect("TLS to plain HTTP");
        assert_words(&err, &["https://127.0.0.1", "TLS error", "http://"]);
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }
    sim.shutdown().await;
}

// ------------------------------------------------------------------ streams

#[tokio::test]
async fn ip_stream_through_faults_delivers_every_member_once() {
    let sim = start(fast("bench-40")).await;
    let conn = connect(&sim).await;
    let magnum = conn.magnum.clone().expect("magnum");
    let cluster = magnum.get_cluster("bench-40").await.expect("cluster");
    let groups = magnum
        .list_nodegroups(&cluster.id, None)
        .await
        .expect("groups");
    let worker = groups
        .iter()
        .find(|g| g.name == "default-worker")
        .expect("worker");
    let cluster_stack = conn
        .heat
        .resolve(worker.stack_id.as_deref().expect("stack id"))
        .await
        .expect("resolve");
    // Magnum's cluster stack holds the masters and the workers: the workers' group.
    let f = sim.faults();
    // A third of the requests fail in one way or another; retries absorb them.
    f.add(Fault::new(FaultKind::Status(503)).rate(0.12));
    f.add(Fault::new(FaultKind::Drop).rate(0.08));
    f.add(Fault::new(FaultKind::Truncate).rate(0.08));
    f.add(
        Fault::new(FaultKind::Throttle {
            retry_after_secs: 0,
        })
        .rate(0.05),
    );
    let events: Vec<IpEvent> = tokio::time::timeout(
        Duration::from_secs(60),
        stream_group_ips(
            conn.heat.clone(),
            None,
            cluster_stack,
            Some("kube_minions".into()),
            IpOptions::default(),
        )
        .collect::<Vec<_>>(),
    )
    .await
    .expect("bounded")
    .into_iter()
    .map(|e| e.expect("no stream error"))
    .collect();
    assert!(f.injected() > 5, "faults were hit: {}", f.injected());
    let mut seen = HashSet::new();
    let mut failed = 0;
    for e in &events {
        match e {
            IpEvent::Address(a, _) => assert!(seen.insert(a.member.clone()), "{} twice", a.member),
            IpEvent::Failed { .. } => failed += 1,
            _ => {}
        }
    }
    assert_eq!(seen.len() + failed, 40, "every member once");
    assert!(
        failed <= 2,
        "retries absorb almost every fault: {failed} failed"
    );
    sim.shutdown().await;
}

/// Follows a live rollout through bursts of faults; once they clear, what the follower
/// delivered equals the full listing: nothing dropped, nothing twice.
#[tokio::test]
async fn event_follower_through_a_fault_burst_matches_the_full_listing() {
    let sim = start(fast("empty")).await;
    let conn = connect_with(
        &sim,
        &ConnectOptions {
            // Fewer attempts, so that some polls fail outright and the follower must resume.
            retry: RetryPolicy {
                max_attempts: 2,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_millis(50),
            },
            ..options()
        },
    )
    .await;
    let stack = conn
        .heat
        .create_stack(&group_create("rollout", 12))
        .await
        .expect("create");
    let svc = LiveService::new(conn.clone());
    let f = sim.faults();
    let mut cursor = EventCursor::default();
    let mut delivered: Vec<String> = Vec::new();
    let (mut failed_polls, mut polls) = (0, 0);
    let mut updated = false;
    let t = Instant::now();
    let deadline = Duration::from_secs(60);
    let mut settled_polls = 0;
    while t.elapsed() < deadline {
        polls += 1;
        match svc.poll_events(stack.clone(), 2, cursor.clone()).await {
            Ok((events, next)) => {
                cursor = next;
                delivered.extend(events.into_iter().map(|e| e.id));
            }
            Err(e) => {
                assert!(!e.message.is_empty());
                failed_polls += 1;
            }
        }
        match polls {
            3 => {
                f.add(Fault::new(FaultKind::Status(500)).rate(0.3));
                f.add(Fault::new(FaultKind::Drop).rate(0.1));
                f.add(Fault::new(FaultKind::Truncate).rate(0.1));
                f.add(Fault::new(FaultKind::Mangle(|_| {})).rate(0.1));
            }
            // Fault-free again for the end of the rollout.
            25 => f.clear(),
            _ => {}
        }
        let status = sim.with_world(|w| {
            w.find_stack("rollout")
                .and_then(|ix| w.stack(ix))
                .map(|s| s.status.to_string())
                .unwrap_or_default()
        });
        if !status.contains("PROGRESS") && polls > 25 {
            if !updated {
                // Second act: an update rollout of every member while following.
                conn.heat
                    .update_stack(
                        &stack,
                        &StackUpdate {
                            existing: true,
                            parameters: BTreeMap::from([("image".to_string(), json!("img-v2"))]),
                            ..Default::default()
                        },
                    )
                    .await
                    .expect("update");
                updated = true;
                f.add(Fault::new(FaultKind::Status(503)).rate(0.3));
                f.add(Fault::new(FaultKind::Drop).rate(0.1));
                polls = 4;
            } else {
                settled_polls += 1;
                if settled_polls > 2 {
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(updated, "the create finished in time");
    assert!(settled_polls > 2, "the update finished in {deadline:?}");
    assert!(failed_polls > 0, "some polls failed outright");
    f.clear();

    let mut all = Vec::new();
    let mut s = Box::pin(conn.heat.list_events(
        stack.clone(),
        caldera::api::heat::EventQuery {
            nested_depth: Some(2),
            sort_dir: Some(caldera::api::heat::SortDir::Asc),
            ..Default::default()
        },
    ));
    while let Some(e) = s.next().await {
        all.push(e.expect("listing").id);
    }
    let unique: HashSet<&String> = delivered.iter().collect();
    assert_eq!(unique.len(), delivered.len(), "no event delivered twice");
    let want: HashSet<&String> = all.iter().collect();
    assert_eq!(unique, want, "the follower saw exactly the listing");
    assert!(all.len() > 12 * 4, "a real rollout: {} events", all.len());
    sim.shutdown().await;
}

// ------------------------------------------------------------------ hanging and trickling services

use caldera_testkit::fault_server;

use caldera::api::cloud::NoAuthEndpoints;
use caldera::api::limits::{ResponseMemory, Timeouts};
use caldera::model::StackRef;
use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};

/// What a run of the `caldera` binary printed, and how it ended.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// A clouds.yaml for the simulator and a private home for the binary.
fn binary_home(sim: &SimHandle) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("clouds.yaml"), sim.clouds_yaml("sim")).expect("clouds.yaml");
    dir
}

fn caldera_cmd(dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_caldera"));
    cmd.args(args)
        .arg("--log-file")
        .arg(dir.join("caldera.log"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("OS_CLIENT_CONFIG_FILE", dir.join("clouds.yaml"))
        .env("OS_CLOUD", "sim")
        .kill_on_drop(true);
    cmd
}

/// Runs the binary to its end; a run that does not end within a minute fails the test.
async fn caldera(dir: &Path, args: &[&str]) -> Run {
    let out = tokio::time::timeout(Duration::from_secs(60), caldera_cmd(dir, args).output())
        .await
        .unwrap_or_else(|_| panic!("caldera {args:?} did not finish"))
        .expect("the binary runs");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Magnum, Heat, Nova and Keystone hang in turn (the simulator holds their requests for an hour):
/// the commands that do not need the hung service finish as usual; those that do fail with
/// an error naming the service, its URL and the timeout that elapsed. Short timeouts are
/// configured on the command line; nothing asserts how long anything took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_service_holds_up_only_the_commands_that_need_it() {
    let sim = start(fast("small")).await;
    let dir = binary_home(&sim);
    let d = dir.path();
    let stack = connect(&sim)
        .await
        .heat
        .list_stacks_page(&StackListQuery::default(), None)
        .await
        .expect("stacks")
        .items[0]
        .stack
        .name
        .clone();
    let f = sim.faults();
    let hang =
        |prefix: &str| Fault::new(FaultKind::Latency(Duration::from_secs(3600))).on_path(prefix);

    // Magnum never answers, not even its version document.
    f.add(hang("/container-infra"));
    // A name Heat knows as a stack is settled by Heat (Magnum names its cluster stacks
    // `<cluster>-<suffix>`, never the cluster's name), so the hung Magnum is never asked: no
    // note about the cluster list, and the stack's events are printed. The probe timeout is
    // long, so a command that did wait on Magnum would show the note after a full minute.
    let events = caldera(d, &["events", &stack, "--timeout", "probe=50"]).await;
    assert!(events.ok, "events needs only Heat: {}", events.stderr);
    assert!(!events.stdout.is_empty(), "events were printed");
    assert!(
        !events.stderr.contains("clusters could not be listed"),
        "{}",
        events.stderr
    );
    // A name nobody knows waits for Magnum, which fails within its probe timeout and is
    // named, then the name is refused.
    let unknown = caldera(d, &["events", "no-such-thing", "--timeout", "probe=1"]).await;
    assert!(!unknown.ok, "{}", unknown.stderr);
    assert!(
        unknown
            .stderr
            .contains("note: clusters could not be listed")
            && unknown.stderr.contains("Magnum no answer within 1 s")
            && unknown.stderr.contains("neither a cluster nor a stack"),
        "{}",
        unknown.stderr
    );
    let stacks = caldera(d, &["stacks", "--timeout", "magnum=1"]).await;
    assert!(stacks.ok, "{}", stacks.stderr);
    assert!(stacks.stdout.contains(&stack));
    let clusters = caldera(d, &["clusters", "--timeout", "magnum=1"]).await;
    assert!(!clusters.ok, "clusters needs Magnum");
    for w in [
        "/container-infra/v1",
        "timed out",
        "Magnum no answer within 1 s",
        "--timeout probe=SECS",
    ] {
        assert!(clusters.stderr.contains(w), "{w:?} in {}", clusters.stderr);
    }
    f.clear();

    // Heat never answers: a Heat command fails naming Heat.
    f.add(hang("/orchestration"));
    let events = caldera(d, &["events", &stack, "--timeout", "heat=1"]).await;
    assert!(!events.ok);
    for w in [
        "/orchestration/v1/",
        "Heat no answer within 1 s",
        "first-byte timeout, --timeout heat=SECS",
    ] {
        assert!(events.stderr.contains(w), "{w:?} in {}", events.stderr);
    }
    f.clear();

    // Nova never answers: the addresses come from Heat all the same (Nova is one source of
    // three, raced, never waited for), and the stack list never asks Nova.
    f.add(hang("/compute"));
    let ips = caldera(d, &["ips", &stack, "--timeout", "nova=1"]).await;
    assert!(ips.ok, "ips needs Heat, not Nova: {}", ips.stderr);
    assert!(
        ips.stdout.lines().count() > 1,
        "addresses from Heat: {}\n{}",
        ips.stdout,
        ips.stderr
    );
    let stacks = caldera(d, &["stacks", "--timeout", "nova=1"]).await;
    assert!(
        stacks.ok && stacks.stdout.contains(&stack),
        "{}",
        stacks.stderr
    );
    f.clear();

    // Keystone never answers: nothing can start, and the error says it was Keystone.
    f.add(hang("/identity"));
    let stacks = caldera(d, &["stacks", "--timeout", "keystone=1"]).await;
    assert!(!stacks.ok);
    for w in ["/identity/v3/auth/tokens", "Keystone no answer within 1 s"] {
        assert!(stacks.stderr.contains(w), "{w:?} in {}", stacks.stderr);
    }
    f.clear();
    sim.shutdown().await;
}

/// Which service of [`per_service_cloud`] trickles its answers.
type Trickling = std::sync::Arc<std::sync::Mutex<&'static str>>;

/// A small cloud on one fault server: Keystone (catalog pointing back here), Heat (a stack
/// list), Magnum (a cluster list) and Nova (a server list); the service named in `trickling` sends its bodies two
/// bytes every 100 ms.
async fn per_service_cloud(trickling: Trickling) -> fault_server::FaultServer {
    use fault_server::Reply;
    let base = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let b = base.clone();
    let server = fault_server::FaultServer::start(move |hit| {
        let base = b.lock().unwrap().clone();
        let slow = *trickling.lock().unwrap();
        let (service, reply) = match (hit.method.as_str(), hit.path.as_str()) {
            ("POST", "/v3/auth/tokens") => (
                "keystone",
                json!({"token": {"expires_at": "2999-01-01T00:00:00.000000Z",
                    "project": {"id": "p1", "name": "ops"}, "catalog": [
                    {"type": "orchestration", "endpoints": [{"interface": "public",
                        "region_id": "RegionOne", "url": format!("{base}/heat/v1/p1")}]},
                    {"type": "container-infra", "endpoints": [{"interface": "public",
                        "region_id": "RegionOne", "url": format!("{base}/magnum/v1")}]},
                    {"type": "compute", "endpoints": [{"interface": "public",
                        "region_id": "RegionOne", "url": format!("{base}/nova/v2.1")}]}]}})
                .to_string(),
            ),
            ("GET", "/magnum/v1") => {
                return Reply::with_headers(
                    200,
                    &[
                        ("content-type", "application/json"),
                        ("OpenStack-API-Minimum-Version", "container-infra 1.1"),
                        ("OpenStack-API-Maximum-Version", "container-infra 1.11"),
                    ],
                    "{}",
                )
            }
            ("GET", "/magnum/v1/clusters") => ("magnum", json!({"clusters": []}).to_string()),
            ("GET", "/nova/v2.1/servers/detail") => (
                "nova",
                json!({"servers": [{"id": "v1", "name": "kube-minion-0", "status": "ACTIVE",
                    "addresses": {}}]})
                .to_string(),
            ),
            ("GET", p) if p.ends_with("/stacks") => (
                "heat",
                json!({"stacks": [{"id": "i1", "stack_name": "s1",
                    "stack_status": "CREATE_COMPLETE"}]})
                .to_string(),
            ),
            _ => return Reply::status(404),
        };
        let reply = if service == slow {
            Reply::trickle(reply, 2, 100)
        } else {
            Reply::json(200, reply)
        };
        if service == "keystone" {
            // Keystone's token travels in a header.
            return match reply {
                Reply::Json(status, body) => Reply::with_headers(
                    status,
                    &[
                        ("X-Subject-Token", "tok"),
                        ("content-type", "application/json"),
                    ],
                    body,
                ),
                Reply::Trickle { .. } => reply,
                other => other,
            };
        }
        reply
    })
    .await;
    *base.lock().unwrap() = server.url("");
    server
}

fn per_service_config(server: &fault_server::FaultServer) -> caldera::config::CloudConfig {
    use caldera::config::clouds::{DomainRef, ProjectScope, UserRef};
    use caldera::config::{CalderaSettings, CloudConfig, Credentials, Secret};
    CloudConfig {
        name: "trickle".into(),
        source: "/tmp/clouds.yaml".into(),
        secure_source: None,
        auth_url: server.url(""),
        credentials: Credentials::Password {
            user: UserRef::Name {
                name: "ops".into(),
                domain: DomainRef::Name("Default".into()),
            },
            password: Secret::new("pw"),
            scope: Some(ProjectScope::Id("p1".into())),
        },
        region_name: None,
        interface: "public".into(),
        verify: true,
        cacert: None,
        caldera: CalderaSettings::default(),
        secret_files: vec![],
    }
}

/// Each service in turn sends its bodies a few bytes at a time, forever slower than the
/// body's deadline allows: its calls fail naming it and the body timeout; the other
/// services' calls, on the same connection, succeed.
#[tokio::test]
async fn a_trickling_service_is_cut_off_by_the_body_deadline_and_named() {
    let trickling: Trickling = std::sync::Arc::new(std::sync::Mutex::new("none"));
    let server = per_service_cloud(trickling.clone()).await;
    let opts = ConnectOptions {
        retry: RetryPolicy::never(),
        timeouts: Timeouts {
            body_idle: Duration::from_millis(400),
            body_base: Duration::from_millis(500),
            body_min_rate: 1024,
            ..Timeouts::default()
        },
        ..options()
    };
    let cloud = per_service_config(&server);
    let heat_ok = |conn: &CloudConnection| {
        let conn = conn.clone();
        async move { list_page(&conn).await }
    };
    let magnum_ok = |conn: &CloudConnection| {
        let magnum = conn.magnum.clone().expect("magnum in the catalog");
        async move {
            magnum
                .list_clusters(None)
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
        }
    };
    let nova_ok = |conn: &CloudConnection| {
        let nova = conn.nova.clone().expect("nova in the catalog");
        async move {
            nova.list_servers_page(&Default::default(), None)
                .await
                .map(|p| p.items.len())
        }
    };
    let deadline_words = ["body not received within", "body timeout: 500 ms"];

    *trickling.lock().unwrap() = "keystone";
    let err = CloudConnection::from_cloud(&cloud, &opts)
        .await
        .err()
        .expect("Keystone trickles");
    assert_words(
        &err,
        &["/v3/auth/tokens", "Keystone body not received within"],
    );

    *trickling.lock().unwrap() = "heat";
    let conn = CloudConnection::from_cloud(&cloud, &opts)
        .await
        .expect("connect");
    let err = heat_ok(&conn).await.expect_err("Heat trickles");
    assert_words(&err, &["/heat/v1/p1/stacks", "Heat"]);
    assert_words(&err, &deadline_words);
    let clusters = magnum_ok(&conn).await;
    assert!(clusters.is_ok(), "Magnum is fine: {clusters:?}");

    *trickling.lock().unwrap() = "magnum";
    let conn = CloudConnection::from_cloud(&cloud, &opts)
        .await
        .expect("connect");
    assert_eq!(heat_ok(&conn).await.expect("Heat is fine"), 1);
    let err = magnum_ok(&conn).await.expect_err("Magnum trickles");
    assert_words(
        &err,
        &["/magnum/v1/clusters", "Magnum body not received within"],
    );
    assert_eq!(nova_ok(&conn).await.expect("Nova is fine"), 1);

    *trickling.lock().unwrap() = "nova";
    let conn = CloudConnection::from_cloud(&cloud, &opts)
        .await
        .expect("connect");
    assert_eq!(heat_ok(&conn).await.expect("Heat is fine"), 1);
    let err = nova_ok(&conn).await.expect_err("Nova trickles");
    assert_words(
        &err,
        &["/nova/v2.1/servers/detail", "Nova body not received within"],
    );
    assert!(magnum_ok(&conn).await.is_ok(), "Magnum is fine");

    // The header's view of the trickling Magnum.
    *trickling.lock().unwrap() = "magnum";
    let conn = CloudConnection::from_cloud(&cloud, &opts)
        .await
        .expect("connect");
    let _ = magnum_ok(&conn).await.expect_err("Magnum trickles");
    let magnum = conn
        .info()
        .services
        .into_iter()
        .find(|s| s.api == caldera::service::health::Api::Magnum)
        .expect("magnum listed");
    assert!(
        magnum
            .label()
            .starts_with("magnum: body not received within"),
        "{}",
        magnum.label()
    );
}

/// Every event id of the stack tree (down to `depth`) the simulator holds now.
fn world_events(sim: &SimHandle, name: &str, depth: u32) -> HashSet<String> {
    sim.with_world(|w| {
        let Some(ix) = w.find_stack(name) else {
            return HashSet::new();
        };
        w.nested_stacks(ix, depth)
            .into_iter()
            .filter_map(|(s, _)| w.stack(s))
            .flat_map(|st| {
                st.events
                    .iter()
                    .map(|e| caldera::sim::world::format_uuid(e.id))
            })
            .collect()
    })
}

/// `caldera events --follow --until-complete` through a Heat outage of a few seconds in the
/// middle of a create: it says it is reconnecting, carries on when Heat is back, ends when
/// the stack settles, and has printed every event the simulator wrote exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_follow_rides_out_an_outage_without_losing_or_repeating_events() {
    let sim = start(SimOptions {
        scenario: "empty".into(),
        speed: 1.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        // Long enough that the outage lands inside the create even on a loaded machine.
        create_median: Duration::from_secs(10),
        leaf_delay: Duration::from_millis(300),
        ..SimOptions::default()
    })
    .await;
    let conn = connect(&sim).await;
    conn.heat
        .create_stack(&group_create("outage", 12))
        .await
        .expect("create");
    let dir = binary_home(&sim);
    let mut child = caldera_cmd(
        dir.path(),
        &[
            "events",
            "outage",
            "--follow",
            "--until-complete",
            "--nested-depth",
            "2",
            "--interval",
            "0.5",
            "--format",
            "csv",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("caldera runs");
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let reader = {
        let lines = lines.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = out.next_line().await {
                lines.lock().unwrap().push(line);
            }
        })
    };
    let mut err = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let err_reader = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(Some(line)) = err.next_line().await {
            all.push(line);
        }
        all
    });
    // Wait for the first events, then take Heat away for three seconds while the create runs.
    for _ in 0..200 {
        if lines.lock().unwrap().len() > 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(lines.lock().unwrap().len() > 3, "the follower started");
    let in_progress = sim.with_world(|w| {
        w.find_stack("outage")
            .and_then(|ix| w.stack(ix))
            .is_some_and(|s| s.status.to_string().contains("IN_PROGRESS"))
    });
    assert!(in_progress, "the outage comes in the middle of the create");
    let f = sim.faults();
    f.add(Fault::new(FaultKind::Drop).on_path("/orchestration"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let injected = f.injected();
    f.clear();
    let status = tokio::time::timeout(Duration::from_secs(120), child.wait())
        .await
        .expect("the follower ends once the stack settles")
        .expect("wait");
    let _ = reader.await;
    let stderr = err_reader.await.expect("stderr").join("\n");
    assert!(status.success(), "{stderr}");
    assert!(injected > 0, "the outage was hit");
    assert!(stderr.contains("reconnecting for"), "{stderr}");
    assert!(stderr.contains("reconnected after"), "{stderr}");
    let printed: Vec<String> = lines
        .lock()
        .unwrap()
        .iter()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap_or_default().to_string())
        .collect();
    let unique: HashSet<String> = printed.iter().cloned().collect();
    let truth = world_events(&sim, "outage", 2);
    let lost: Vec<&String> = truth.difference(&unique).collect();
    let extra: Vec<&String> = unique.difference(&truth).collect();
    println!(
        "follow through a 3 s outage: {} events written, {} printed, {} lost, {} duplicated, {} requests failed by the outage",
        truth.len(),
        printed.len(),
        lost.len(),
        printed.len() - unique.len(),
        injected
    );
    assert_eq!(printed.len(), unique.len(), "an event was printed twice");
    assert!(
        lost.is_empty() && extra.is_empty(),
        "lost {lost:?}, extra {extra:?}"
    );
    assert!(
        truth.len() > 12 * 2,
        "a real create: {} events",
        truth.len()
    );
    sim.shutdown().await;
}

/// This process's peak resident set (VmHWM), in MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Twelve members' `outputs/ip` answer 40 MB each, all fetched at once (the `ips` fan-out):
/// the process never holds more than the configured pool of response bytes; answers that
/// find no room in time fail with an error naming the limit; the others decode.
#[tokio::test]
async fn oversized_answers_under_fan_out_stay_within_the_memory_bound() {
    use caldera::fetch::fan_out;
    const EACH: usize = 40 * 1024 * 1024;
    let server =
        fault_server::FaultServer::start(|_| fault_server::Reply::huge_output("ip", EACH)).await;
    let memory = ResponseMemory::new(96 * 1024 * 1024, Duration::from_secs(2));
    let conn = CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(server.url("/heat/v1/admin")),
        &ConnectOptions {
            memory: memory.clone(),
            retry: RetryPolicy::never(),
            ..options()
        },
    )
    .await
    .expect("connect");
    let before = peak_rss_mb();
    let members: Vec<StackRef> = (0..12)
        .map(|i| StackRef {
            name: format!("member-{i}"),
            id: format!("id-{i}"),
        })
        .collect();
    let results: Vec<_> = fan_out(members, 12, |m: StackRef| {
        let heat = conn.heat.clone();
        async move {
            let out = heat.show_output(&m, "ip").await?;
            Ok::<usize, ApiError>(out.value.as_str().map_or(0, str::len))
        }
    })
    .collect()
    .await;
    let (ok, refused): (Vec<_>, Vec<_>) = results.into_iter().partition(|(_, r)| r.is_ok());
    println!(
        "12 x 40 MB answers at once: {} decoded, {} refused; response bytes held at most {:.1} MB (limit {} MB); VmHWM {:.0} MB before, {:.0} MB after (whole test process)",
        ok.len(),
        refused.len(),
        memory.peak() as f64 / 1048576.0,
        memory.limit() / 1048576,
        before,
        peak_rss_mb()
    );
    assert!(memory.peak() <= memory.limit());
    assert_eq!(memory.held(), 0, "every reservation returned");
    assert!(!ok.is_empty(), "answers that fit are read");
    for (_, r) in &ok {
        assert_eq!(*r.as_ref().unwrap(), EACH);
    }
    for (m, r) in &refused {
        let e = r.as_ref().unwrap_err();
        assert_words(
            e,
            &[
                &format!("/stacks/{}/{}/outputs/ip", m.name, m.id),
                "process-wide response memory limit of 96 MB",
            ],
        );
    }
}
