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
use caldera::cli::connect::simulator_cloud;
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
    let conn = CloudConnection::from_cloud(&simulator_cloud(sim), opts)
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

    // Latency beyond the client timeout, twice, then fine.
    f.reset_requests();
    f.add(Fault::new(FaultKind::Latency(Duration::from_secs(2))).times(2));
    assert_eq!(list_page(&conn).await.expect("third attempt"), want);
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 3);
    f.reset_requests();
    f.set_latency(Duration::from_secs(2));
    let t = Instant::now();
    let err = list_page(&conn).await.expect_err("always slow");
    assert_words(&err, &["GET", "timed out"]);
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert_eq!(f.requests("GET", &stacks_path(&sim)), 4);
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

    let mut cloud = simulator_cloud(&sim);
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
        let mut cloud = simulator_cloud(&sim);
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
