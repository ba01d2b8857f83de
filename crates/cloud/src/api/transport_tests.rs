//! Transport behaviour against the local fault server: retries, budget, errors, redirects,
//! cancellation.

use crate::api::http::{Redirect, Request, Transport, TransportConfig};
use crate::api_error::{ApiError, TransportKind};
use crate::fetch::{fan_out, BudgetConfig, RequestBudget, RetryPolicy};
use crate::testing::fault_server::{closed_port_url, FaultServer, Reply};
use futures::StreamExt;
use reqwest::Method;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

fn fast_retry(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    }
}

fn transport(retry: RetryPolicy, budget: BudgetConfig, timeout_ms: u64) -> Transport {
    Transport::new(&TransportConfig {
        timeout: Duration::from_millis(timeout_ms),
        connect_timeout: Duration::from_millis(500),
        verify: true,
        cacert: None,
        budget: RequestBudget::new(budget),
        retry,
        ..TransportConfig::default()
    })
    .unwrap()
}

fn unlimited() -> BudgetConfig {
    BudgetConfig {
        max_in_flight: 64,
        max_per_second: None,
    }
}

#[derive(Debug, Deserialize, PartialEq)]
struct Ok1 {
    ok: u32,
}

#[tokio::test]
async fn get_is_retried_on_5xx_until_success() {
    let server = FaultServer::start(|hit| match hit.nth {
        1 => Reply::json(500, "{}"),
        2 => Reply::json(503, "{}"),
        3 => Reply::json(502, "<html>bad gateway</html>"),
        _ => Reply::ok(json!({"ok": 1})),
    })
    .await;
    let t = transport(fast_retry(5), unlimited(), 2000);
    let got: Ok1 = t.get_json(&server.url("/x")).await.unwrap();
    assert_eq!(got, Ok1 { ok: 1 });
    assert_eq!(server.hit_count(), 4);
    assert_eq!(t.budget().stats().total_retries, 3);
    assert_eq!(t.budget().stats().total_requests, 4);
}

#[tokio::test]
async fn get_gives_up_after_max_attempts_with_last_error() {
    let server = FaultServer::start(|_| Reply::json(503, r#"{"explanation": "busy"}"#)).await;
    let t = transport(fast_retry(3), unlimited(), 2000);
    let err = t.get_json::<Ok1>(&server.url("/x")).await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert!(err.to_string().contains("busy"), "{err}");
    assert_eq!(server.hit_count(), 3);
}

#[tokio::test]
async fn post_put_patch_delete_are_never_retried() {
    let server = FaultServer::start(|_| Reply::json(503, "{}")).await;
    let t = transport(fast_retry(5), unlimited(), 2000);
    for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        let err = t
            .send_json(method.clone(), &server.url("/x"), Some(&json!({"a": 1})))
            .await
            .unwrap_err();
        assert_eq!(err.status(), Some(503), "{method}");
    }
    assert_eq!(server.hit_count(), 4);
    assert_eq!(t.budget().stats().total_retries, 0);
}

#[tokio::test]
async fn post_is_not_retried_after_a_timeout() {
    let server = FaultServer::start(|_| Reply::delay(1000, Reply::json(202, "{}"))).await;
    let t = transport(fast_retry(5), unlimited(), 200);
    let err = t
        .send_json(Method::POST, &server.url("/stacks"), Some(&json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ApiError::Transport {
                kind: TransportKind::Timeout,
                ..
            }
        ),
        "{err:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.hit_count(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = FaultServer::start(|hit| match hit.nth {
        1 => Reply::with_headers(429, &[("Retry-After", "1")], "slow down"),
        _ => Reply::ok(json!({"ok": 2})),
    })
    .await;
    // Backoff alone would wait at most 50 ms; Retry-After says one second (max_delay allows 2 s).
    let t = transport(
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(2),
        },
        unlimited(),
        2000,
    );
    let got: Ok1 = t.get_json(&server.url("/x")).await.unwrap();
    assert_eq!(got.ok, 2);
    let hits = server.hits();
    assert_eq!(hits.len(), 2);
    let gap = hits[1].at - hits[0].at;
    assert!(gap >= Duration::from_millis(950), "gap {gap:?}");
    assert!(gap < Duration::from_millis(1800), "gap {gap:?}");
}

#[tokio::test]
async fn timeout_is_retried_for_get() {
    let server = FaultServer::start(|hit| match hit.nth {
        1 => Reply::delay(1500, Reply::ok(json!({"ok": 0}))),
        _ => Reply::ok(json!({"ok": 3})),
    })
    .await;
    let t = transport(fast_retry(3), unlimited(), 300);
    let got: Ok1 = t.get_json(&server.url("/x")).await.unwrap();
    assert_eq!(got.ok, 3);
    assert_eq!(server.hit_count(), 2);
}

#[tokio::test]
async fn timeout_error_names_method_and_url() {
    let server = FaultServer::start(|_| Reply::delay(1500, Reply::ok(json!({})))).await;
    let t = transport(RetryPolicy::never(), unlimited(), 200);
    let err = t.get_json::<Ok1>(&server.url("/slow")).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("GET http://127.0.0.1:"), "{msg}");
    assert!(msg.contains("/slow: timed out"), "{msg}");
}

#[tokio::test]
async fn dropped_connection_is_a_transport_error_and_retried() {
    let server = FaultServer::start(|hit| match hit.nth {
        1 => Reply::Drop(r#"{"ok": "#.to_string()),
        _ => Reply::ok(json!({"ok": 4})),
    })
    .await;
    let t = transport(RetryPolicy::never(), unlimited(), 2000);
    let err = t.get_json::<Ok1>(&server.url("/x")).await.unwrap_err();
    assert!(
        matches!(
            err,
            ApiError::Transport {
                kind: TransportKind::Other,
                ..
            }
        ),
        "{err:?}"
    );
    let t = transport(fast_retry(3), unlimited(), 2000);
    let got: Ok1 = t.get_json(&server.url("/x")).await.unwrap();
    assert_eq!(got.ok, 4);
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    let url = closed_port_url().await;
    let t = transport(fast_retry(2), unlimited(), 1000);
    let err = t.get_json::<Ok1>(&format!("{url}/x")).await.unwrap_err();
    assert!(
        matches!(
            err,
            ApiError::Transport {
                kind: TransportKind::Connect,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(t.budget().stats().total_retries, 1);
}

#[tokio::test]
async fn truncated_json_is_a_decode_error_saying_truncated() {
    let server =
        FaultServer::start(|_| Reply::json(200, r#"{"stacks": [{"id": "a", "stack_na"#)).await;
    let t = transport(RetryPolicy::never(), unlimited(), 2000);
    let err = t
        .get_json::<serde_json::Value>(&server.url("/stacks"))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ApiError::Decode { .. }), "{err:?}");
    assert!(msg.contains("truncated body"), "{msg}");
    assert!(msg.contains("/stacks"), "{msg}");
}

#[tokio::test]
async fn wrong_content_type_is_named() {
    let server = FaultServer::start(|_| {
        Reply::with_headers(
            200,
            &[("content-type", "text/html")],
            "<html>login page</html>",
        )
    })
    .await;
    let t = transport(RetryPolicy::never(), unlimited(), 2000);
    let err = t.get_json::<Ok1>(&server.url("/x")).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("expected JSON but got content type 'text/html'"),
        "{msg}"
    );
    assert!(msg.contains("login page"), "{msg}");
}

#[tokio::test]
async fn missing_field_names_its_path() {
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        id: String,
        status: String,
    }
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct List {
        items: Vec<Item>,
    }
    let server = FaultServer::start(|_| {
        Reply::ok(json!({"items": [{"id": "a", "status": "X", "extra": 1}, {"id": "b"}]}))
    })
    .await;
    let t = transport(RetryPolicy::never(), unlimited(), 2000);
    let err = t.get_json::<List>(&server.url("/x")).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("at items[1]"), "{msg}");
    assert!(msg.contains("missing field `status`"), "{msg}");
}

#[tokio::test]
async fn budget_max_in_flight_is_enforced_server_side() {
    let server = FaultServer::start(|_| Reply::delay(80, Reply::ok(json!({"ok": 1})))).await;
    let t = transport(
        RetryPolicy::never(),
        BudgetConfig {
            max_in_flight: 3,
            max_per_second: None,
        },
        5000,
    );
    let url = server.url("/x");
    let results: Vec<_> = fan_out(0..15, 15, |_| {
        let t = t.clone();
        let url = url.clone();
        async move { t.get_json::<Ok1>(&url).await }
    })
    .collect()
    .await;
    assert!(results.iter().all(|(_, r)| r.is_ok()));
    assert_eq!(server.hit_count(), 15);
    assert_eq!(server.peak_in_flight(), 3);
}

#[tokio::test]
async fn budget_per_second_limit_is_enforced_server_side() {
    let server = FaultServer::start(|_| Reply::ok(json!({"ok": 1}))).await;
    let t = transport(
        RetryPolicy::never(),
        BudgetConfig {
            max_in_flight: 32,
            max_per_second: Some(8),
        },
        5000,
    );
    let url = server.url("/x");
    let _: Vec<_> = fan_out(0..20, 20, |_| {
        let t = t.clone();
        let url = url.clone();
        async move { t.get_json::<Ok1>(&url).await }
    })
    .collect()
    .await;
    let times: Vec<Duration> = server.hits().iter().map(|h| h.at).collect();
    assert_eq!(times.len(), 20);
    // Arrival times lag start times by a little; allow a small slack on the window.
    for (i, start) in times.iter().enumerate() {
        let window = times[i..]
            .iter()
            .filter(|t| **t < *start + Duration::from_millis(950))
            .count();
        assert!(
            window <= 8,
            "{window} requests within a second from {start:?}"
        );
    }
    let span = times
        .iter()
        .max()
        .unwrap()
        .saturating_sub(*times.iter().min().unwrap());
    assert!(
        span >= Duration::from_millis(1900),
        "20 at 8/s took only {span:?}"
    );
}

#[tokio::test]
async fn dropping_a_fan_out_stops_requests() {
    let server = FaultServer::start(|_| Reply::delay(300, Reply::ok(json!({"ok": 1})))).await;
    let t = transport(RetryPolicy::never(), unlimited(), 5000);
    let base = server.url("/member/");
    let mut stream = Box::pin(fan_out(0..200, 4, move |i| {
        let t = t.clone();
        let url = format!("{base}{i}");
        async move { t.get_json::<Ok1>(&url).await }
    }));
    let first = stream.next().await;
    assert!(first.is_some());
    drop(stream);
    let seen = server.hit_count();
    assert!(seen <= 8, "{seen} requests started for one result");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        server.hit_count(),
        seen,
        "requests kept starting after the stream was dropped"
    );
    // The server also sees the outstanding requests go away (client closed the connections).
    assert_eq!(server.in_flight(), 0);
}

#[tokio::test]
async fn fan_out_yields_fast_before_slow_and_reports_failures() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        "/m/slow" => Reply::delay(400, Reply::ok(json!({"ok": 1}))),
        "/m/fast" => Reply::ok(json!({"ok": 2})),
        "/m/gone" => Reply::json(404, r#"{"error": {"message": "no such member"}}"#),
        _ => Reply::delay(100, Reply::ok(json!({"ok": 3}))),
    })
    .await;
    let t = transport(RetryPolicy::never(), unlimited(), 5000);
    let base = server.url("/m/");
    let out: Vec<(&str, Result<Ok1, ApiError>)> =
        fan_out(["slow", "fast", "gone", "mid"], 4, |k| {
            let t = t.clone();
            let url = format!("{base}{k}");
            async move { t.get_json::<Ok1>(&url).await }
        })
        .collect()
        .await;
    let order: Vec<&str> = out.iter().map(|(k, _)| *k).collect();
    assert_eq!(order, ["fast", "gone", "mid", "slow"]);
    let gone = out[1].1.as_ref().unwrap_err();
    assert!(gone.to_string().contains("no such member"));
    assert_eq!(out[3].1.as_ref().unwrap().ok, 1);
}

#[tokio::test]
async fn redirects_are_reported_or_followed_explicitly() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        "/v1/p/stacks/web" => {
            Reply::with_headers(302, &[("Location", "/v1/p/stacks/web/1234")], "")
        }
        "/v1/p/stacks/away" => Reply::with_headers(302, &[("Location", "http://192.0.2.1/x")], ""),
        "/v1/p/stacks/web/1234" => Reply::ok(json!({"ok": 9})),
        _ => Reply::status(404),
    })
    .await;
    let t = transport(RetryPolicy::never(), unlimited(), 2000);
    match t
        .get_redirect_location(&server.url("/v1/p/stacks/web"))
        .await
        .unwrap()
    {
        Redirect::Location(l) => assert_eq!(l, server.url("/v1/p/stacks/web/1234")),
        Redirect::Direct(r) => panic!("expected a redirect, got {}", r.status),
    }
    let got: Ok1 = t.get_json(&server.url("/v1/p/stacks/web")).await.unwrap();
    assert_eq!(got.ok, 9);
    let err = t
        .get_json::<Ok1>(&server.url("/v1/p/stacks/away"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("another host"), "{err}");
    // A POST answered with a redirect is returned as is, never re-sent.
    let resp = t
        .send(Request::new(Method::POST, server.url("/v1/p/stacks/web")))
        .await
        .unwrap();
    assert_eq!(resp.status, 302);
}

#[tokio::test]
async fn bad_cacert_path_is_a_config_error_naming_it() {
    let err = Transport::new(&TransportConfig {
        cacert: Some("/nonexistent/ca.pem".into()),
        ..TransportConfig::default()
    })
    .err()
    .unwrap();
    assert!(matches!(err, ApiError::Config(_)));
    assert!(
        err.to_string()
            .starts_with("cacert /nonexistent/ca.pem: cannot read"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, "not a certificate").unwrap();
    let err = Transport::new(&TransportConfig {
        cacert: Some(path.clone()),
        ..TransportConfig::default()
    })
    .err()
    .unwrap();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn transport_headers_are_sent_and_bodies_are_json() {
    let server = FaultServer::start(|_| Reply::ok(json!({"ok": 1}))).await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "X-Auth-User",
        reqwest::header::HeaderValue::from_static("admin"),
    );
    let t = transport(RetryPolicy::never(), unlimited(), 2000).with_headers(headers);
    t.send_json(Method::POST, &server.url("/x"), Some(&json!({"a": [1]})))
        .await
        .unwrap();
    let hit = &server.hits()[0];
    assert_eq!(hit.header("x-auth-user"), Some("admin"));
    assert_eq!(hit.header("content-type"), Some("application/json"));
    assert_eq!(hit.json(), json!({"a": [1]}));
}

/// A body without Content-Length (chunked) that keeps coming is cut off at the limit while
/// it is read, not after it has all been buffered.
#[tokio::test]
async fn streamed_body_over_the_limit_is_refused_while_reading() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf).await;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
        if s.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let chunk = format!("400\r\n{}\r\n", "x".repeat(1024));
        // Bounded: 1 MB at most, far past the 8 KB limit.
        for _ in 0..1024 {
            if s.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let t = Transport::new(&TransportConfig {
        timeout: Duration::from_secs(5),
        retry: RetryPolicy::never(),
        max_body_bytes: 8192,
        ..TransportConfig::default()
    })
    .unwrap();
    let err = t
        .send(Request::get(format!("http://{addr}/big")))
        .await
        .expect_err("over the limit");
    assert!(matches!(err, ApiError::Decode { .. }), "{err:?}");
    assert!(
        err.to_string().contains("exceeds the limit of 8192 bytes"),
        "{err}"
    );
    // The server's writes fail or finish once the client has hung up; either way it ends.
    let _ = server.await;
}

// ------------------------------------------------------------------ timeouts by phase

use crate::api::limits::{Purpose, ResponseMemory, Timeouts};
use crate::health::{Api, Availability};

/// A transport whose phases time out quickly; `Heat` and `Magnum` tagged clones share it.
fn phased(timeouts: Timeouts, memory: ResponseMemory, retry: RetryPolicy) -> Transport {
    Transport::new(&TransportConfig {
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_millis(500),
        timeouts,
        retry,
        memory,
        budget: RequestBudget::new(unlimited()),
        ..TransportConfig::default()
    })
    .unwrap()
}

fn quick_timeouts() -> Timeouts {
    Timeouts {
        magnum: Some(Duration::from_millis(300)),
        probe: Duration::from_millis(200),
        body_idle: Duration::from_millis(400),
        body_base: Duration::from_millis(600),
        body_min_rate: 1024,
        ..Timeouts::default()
    }
}

fn pool() -> ResponseMemory {
    ResponseMemory::new(64 * 1024 * 1024, Duration::from_millis(200))
}

#[tokio::test]
async fn a_service_that_never_answers_is_named_with_its_timeout_and_tried_twice() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        "/magnum/v1/clusters" | "/magnum/v1" => Reply::Hang,
        _ => Reply::ok(json!({"ok": 1})),
    })
    .await;
    let base = phased(quick_timeouts(), pool(), fast_retry(4));
    let magnum = base.for_service(Api::Magnum);
    let heat = base.for_service(Api::Heat);
    let err = magnum
        .send(Request::get(server.url("/magnum/v1/clusters")))
        .await
        .expect_err("hangs");
    let text = err.to_string();
    for w in [
        "GET",
        "/magnum/v1/clusters",
        "timed out",
        "Magnum no answer within 300 ms",
        "first-byte timeout, --timeout magnum=SECS",
    ] {
        assert!(text.contains(w), "{text:?} should say {w:?}");
    }
    assert_eq!(
        server.hits().len(),
        2,
        "a timeout is retried once, not max_attempts times"
    );
    // Heat, on the same pool and budget, is not held up and stays healthy.
    let ok: Ok1 = heat.get_json(&server.url("/heat/stacks")).await.unwrap();
    assert_eq!(ok, Ok1 { ok: 1 });
    let board = base.health();
    let m = board.get(Api::Magnum).expect("magnum known");
    assert_eq!(m.health, Availability::Slow);
    assert_eq!(m.detail.as_deref(), Some("no answer within 300 ms"));
    assert_eq!(
        board.get(Api::Heat).map(|h| h.health),
        Some(Availability::Up)
    );
    // A probe takes the shorter probe timeout and is never retried on a timeout.
    let before = server.hits().len();
    let err = magnum
        .send(Request::get(server.url("/magnum/v1")).purpose(Purpose::Probe))
        .await
        .expect_err("hangs");
    assert!(
        err.to_string()
            .contains("no answer within 200 ms (probe timeout"),
        "{err}"
    );
    assert_eq!(server.hits().len(), before + 1);
}

#[tokio::test]
async fn a_trickling_body_fails_on_its_deadline_and_a_stalled_one_on_idle() {
    let body = json!({"ok": 1, "pad": "y".repeat(400)}).to_string();
    let b = body.clone();
    let server = FaultServer::start(move |hit| match hit.path.as_str() {
        // 4 bytes every 50 ms: steady, but 80 bytes/s against a floor of 1 KiB/s.
        "/trickle" => Reply::trickle(b.clone(), 4, 50),
        // The first piece at once, the next after a second: idle for longer than 400 ms.
        "/stall" => Reply::trickle(b.clone(), b.len() / 2 + 1, 1000),
        // The whole body in 8 pieces, 20 ms apart: slow-ish but well within the deadline.
        _ => Reply::trickle(b.clone(), b.len() / 8 + 1, 20),
    })
    .await;
    let t = phased(quick_timeouts(), pool(), RetryPolicy::never()).for_service(Api::Heat);
    let err = t
        .send(Request::get(server.url("/trickle")))
        .await
        .expect_err("trickles");
    let text = err.to_string();
    assert!(
        text.contains("Heat body not received within")
            && text.contains("body timeout: 600 ms plus 1 s per 1024 bytes received"),
        "{text}"
    );
    assert!(matches!(
        err,
        ApiError::Transport {
            kind: TransportKind::Timeout,
            ..
        }
    ));
    let err = t
        .send(Request::get(server.url("/stall")))
        .await
        .expect_err("stalls");
    assert!(
        err.to_string()
            .contains("body stalled: nothing for 400 ms after"),
        "{err}"
    );
    let ok: Ok1 = t.get_json(&server.url("/steady")).await.unwrap();
    assert_eq!(ok, Ok1 { ok: 1 });
}

#[tokio::test]
async fn bodies_share_one_byte_pool_under_fan_out() {
    // 12 answers of 3 MB at once against a pool of 8 MB: never more than 8 MB held; those
    // that find no room in time fail naming the limit; the rest decode.
    let server = FaultServer::start(|_| Reply::huge_output("ip", 3 * 1024 * 1024)).await;
    let memory = ResponseMemory::new(8 * 1024 * 1024, Duration::from_millis(300));
    let t = phased(Timeouts::default(), memory.clone(), RetryPolicy::never());
    #[derive(Deserialize)]
    struct Show {
        output: serde_json::Value,
    }
    let urls: Vec<String> = (0..12).map(|i| server.url(&format!("/out/{i}"))).collect();
    let results: Vec<_> = fan_out(urls, 12, |url: String| {
        let t = t.clone();
        async move {
            let show: Show = t.get_json(&url).await?;
            // Hold the decoded answer a moment, as a caller would.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<usize, ApiError>(show.output.to_string().len())
        }
    })
    .collect()
    .await;
    assert!(memory.peak() <= memory.limit(), "{} held", memory.peak());
    assert!(
        memory.peak() > 3 * 1024 * 1024,
        "bodies were held in the pool"
    );
    assert_eq!(memory.held(), 0, "every reservation returned");
    let (ok, refused): (Vec<_>, Vec<_>) = results.into_iter().partition(|(_, r)| r.is_ok());
    assert!(!ok.is_empty(), "some answers fit");
    for (_, r) in &refused {
        let text = r.as_ref().unwrap_err().to_string();
        assert!(
            text.contains("process-wide response memory limit of 8 MB"),
            "{text}"
        );
    }
    // One answer bigger than the whole pool is refused at once, however long it would wait.
    let small = ResponseMemory::new(1024 * 1024, Duration::from_secs(30));
    let t = phased(Timeouts::default(), small, RetryPolicy::never());
    let err = t
        .send(Request::get(server.url("/out/big")))
        .await
        .expect_err("bigger than the pool");
    assert!(
        err.to_string()
            .contains("would not fit in the process-wide response memory limit of 1 MB"),
        "{err}"
    );
}

#[tokio::test]
async fn a_refused_connection_names_the_service_and_marks_it_down() {
    let url = closed_port_url().await;
    let base = phased(Timeouts::default(), pool(), RetryPolicy::never());
    let nova = base.for_service(Api::Nova);
    let err = nova
        .send(Request::get(format!("{url}/v2.1/servers")))
        .await
        .expect_err("nothing listens");
    let text = err.to_string();
    assert!(
        text.contains("/v2.1/servers") && text.contains("connection failed: Nova: "),
        "{text}"
    );
    // The URL once (was: again inside reqwest's own words).
    assert_eq!(text.matches("/v2.1/servers").count(), 1, "{text}");
    let health = base.health().get(Api::Nova).expect("nova listed");
    assert_eq!(health.health, Availability::Down);
    assert_eq!(health.label(), "nova: connection failed");
}

#[tokio::test]
async fn a_service_past_half_its_timeout_is_shown_slow_then_fine_again() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        "/slow" => Reply::delay(1100, Reply::ok(json!({"ok": 1}))),
        _ => Reply::ok(json!({"ok": 1})),
    })
    .await;
    let t = phased(
        Timeouts {
            heat: Some(Duration::from_secs(2)),
            ..Timeouts::default()
        },
        pool(),
        RetryPolicy::never(),
    );
    let heat = t.for_service(Api::Heat);
    let _: Ok1 = heat.get_json(&server.url("/slow")).await.unwrap();
    let h = t.health().get(Api::Heat).expect("heat listed");
    assert_eq!(h.health, Availability::Slow);
    assert!(
        h.label().starts_with("heat: answered after 1.") && h.label().ends_with("(timeout 2 s)"),
        "{}",
        h.label()
    );
    let _: Ok1 = heat.get_json(&server.url("/fast")).await.unwrap();
    assert_eq!(
        t.health().get(Api::Heat).map(|h| h.health),
        Some(Availability::Up)
    );
}
