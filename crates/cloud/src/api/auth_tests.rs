//! Keystone token handling against a fake Keystone + service on the fault server.

use crate::api::auth::*;
use crate::api::http::{Request, Transport, TransportConfig};
use crate::api_error::ApiError;
use crate::config::Secret;
use crate::fetch::{fan_out, BudgetConfig, RequestBudget, RetryPolicy};
use crate::testing::fault_server::{FaultServer, Hit, Reply};
use chrono::{Duration as ChronoDuration, Utc};
use futures::StreamExt;
use reqwest::Method;
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PASSWORD: &str = "correct-horse-battery-staple";

fn password_creds(password: &str) -> Credentials {
    Credentials::Password {
        user: UserRef::Name {
            name: "ops".into(),
            domain: DomainRef::Name("Default".into()),
        },
        password: Secret::new(password),
        scope: Some(ProjectScope::Name {
            name: "k8s".into(),
            domain: DomainRef::Id("default".into()),
        }),
    }
}

/// Fake Keystone + Heat: tokens are `tok-N`; `valid_from` is the first token number the
/// service accepts (tokens below it count as revoked).
struct Fake {
    server: FaultServer,
    valid_from: Arc<AtomicUsize>,
    near_expiry: Arc<AtomicBool>,
}

fn token_reply(hit: &Hit, near_expiry: bool) -> Reply {
    let body = hit.json();
    let pw = &body["auth"]["identity"]["password"]["user"]["password"];
    let ac = &body["auth"]["identity"]["application_credential"]["secret"];
    if pw != PASSWORD && ac != PASSWORD {
        return Reply::json(
            401,
            json!({"error": {"code": 401, "title": "Unauthorized",
                "message": "The request you have made requires authentication."}})
            .to_string(),
        );
    }
    let now = Utc::now();
    let (issued, expires) = if near_expiry {
        (
            now - ChronoDuration::hours(1),
            now + ChronoDuration::seconds(5),
        )
    } else {
        (now, now + ChronoDuration::hours(1))
    };
    Reply::with_headers(
        201,
        &[
            ("X-Subject-Token", &format!("tok-{}", hit.nth)),
            ("content-type", "application/json"),
        ],
        json!({"token": {
            "methods": ["password"],
            "expires_at": expires.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            "issued_at": issued.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            "user": {"id": "u1", "name": "ops", "domain": {"id": "default", "name": "Default"}},
            "project": {"id": "p1", "name": "k8s", "domain": {"id": "default", "name": "Default"}},
            "catalog": [
                {"type": "orchestration", "name": "heat", "id": "s1", "endpoints": [
                    {"interface": "public", "region_id": "RegionOne", "region": "RegionOne", "url": "https://heat.example/v1/p1", "id": "e1"},
                    {"interface": "internal", "region_id": "RegionOne", "region": "RegionOne", "url": "http://heat.internal:8004/v1/p1/", "id": "e2"},
                    {"interface": "public", "region_id": "RegionTwo", "region": "RegionTwo", "url": "https://heat.two/v1/p1", "id": "e3"}]},
                {"type": "container-infra", "name": "magnum", "id": "s2", "endpoints": [
                    {"interface": "public", "region_id": "RegionOne", "url": "https://magnum.example/v1", "id": "e4"}]}
            ]}})
        .to_string(),
    )
}

async fn fake() -> Fake {
    let valid_from = Arc::new(AtomicUsize::new(1));
    let near_expiry = Arc::new(AtomicBool::new(false));
    let (vf, ne) = (valid_from.clone(), near_expiry.clone());
    let server = FaultServer::start(move |hit| {
        if hit.path == "/identity/v3/auth/tokens" && hit.method == "POST" {
            return token_reply(hit, ne.load(Ordering::SeqCst));
        }
        let token = hit.header("x-auth-token").unwrap_or("");
        let n: usize = token
            .strip_prefix("tok-")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if n == 0 || n < vf.load(Ordering::SeqCst) {
            return Reply::json(
                401,
                json!({"error": {"message": "The request you have made requires authentication."}})
                    .to_string(),
            );
        }
        Reply::delay(20, Reply::ok(json!({"token_used": token})))
    })
    .await;
    Fake {
        server,
        valid_from,
        near_expiry,
    }
}

fn base_transport() -> Transport {
    Transport::new(&TransportConfig {
        timeout: Duration::from_secs(5),
        budget: RequestBudget::new(BudgetConfig {
            max_in_flight: 32,
            max_per_second: None,
        }),
        retry: RetryPolicy::never(),
        ..TransportConfig::default()
    })
    .unwrap()
}

fn authed(fake: &Fake, creds: Credentials) -> (Transport, TokenManager) {
    let plain = base_transport();
    // Without /v3: the manager appends it.
    let tm = TokenManager::new(plain.clone(), &fake.server.url("/identity/"), creds);
    (plain.with_auth(tm.clone()), tm)
}

/// The token requests the fake Keystone received (discovery GETs left out).
fn token_posts(server: &FaultServer) -> Vec<Hit> {
    server
        .hits()
        .into_iter()
        .filter(|h| h.method == "POST" && h.path.ends_with("/auth/tokens"))
        .collect()
}

#[derive(Debug, serde::Deserialize)]
struct Used {
    token_used: String,
}

#[tokio::test]
async fn issues_a_token_and_reads_the_catalog() {
    let fake = fake().await;
    let (t, tm) = authed(&fake, password_creds(PASSWORD));
    let token = tm.token().await.unwrap();
    assert_eq!(tm.auth_url(), fake.server.url("/identity/v3"));
    assert_eq!(token.project.as_ref().map(|p| p.id.as_str()), Some("p1"));
    assert_eq!(
        token.user.as_ref().and_then(|u| u.name.as_deref()),
        Some("ops")
    );
    let c = &token.catalog;
    assert_eq!(
        c.endpoint("orchestration", "public", Some("RegionOne"))
            .as_deref(),
        Some("https://heat.example/v1/p1")
    );
    assert_eq!(
        c.endpoint("orchestration", "internalURL", Some("RegionOne"))
            .as_deref(),
        Some("http://heat.internal:8004/v1/p1")
    );
    assert_eq!(
        c.endpoint("orchestration", "public", Some("RegionTwo"))
            .as_deref(),
        Some("https://heat.two/v1/p1")
    );
    assert_eq!(
        c.endpoint("container-infra", "public", None).as_deref(),
        Some("https://magnum.example/v1")
    );
    assert_eq!(c.endpoint("compute", "public", None), None);
    // The request body had the right shape and the service gets the token in a header.
    let body = token_posts(&fake.server)[0].json();
    assert_eq!(body["auth"]["identity"]["methods"], json!(["password"]));
    assert_eq!(body["auth"]["identity"]["password"]["user"]["name"], "ops");
    assert_eq!(
        body["auth"]["identity"]["password"]["user"]["domain"]["name"],
        "Default"
    );
    assert_eq!(
        body["auth"]["scope"]["project"],
        json!({"name": "k8s", "domain": {"id": "default"}})
    );
    let used: Used = t.get_json(&fake.server.url("/v1/p1/stacks")).await.unwrap();
    assert_eq!(used.token_used, "tok-1");
    // The token is reused, not re-issued.
    let _: Used = t.get_json(&fake.server.url("/v1/p1/stacks")).await.unwrap();
    assert_eq!(tm.issued_count(), 1);
    // The token is not in any URL the server saw.
    assert!(fake.server.hits().iter().all(|h| !h
        .query
        .clone()
        .unwrap_or_default()
        .contains("tok-")));
}

#[tokio::test]
async fn renews_before_expiry() {
    let fake = fake().await;
    fake.near_expiry.store(true, Ordering::SeqCst);
    let (t, tm) = authed(&fake, password_creds(PASSWORD));
    let a: Used = t.get_json(&fake.server.url("/v1/p1/stacks")).await.unwrap();
    let b: Used = t.get_json(&fake.server.url("/v1/p1/stacks")).await.unwrap();
    // Five seconds left of an hour: under the 60 s margin, so each use renews.
    assert_eq!(
        (a.token_used.as_str(), b.token_used.as_str()),
        ("tok-1", "tok-2")
    );
    fake.near_expiry.store(false, Ordering::SeqCst);
    let c: Used = t.get_json(&fake.server.url("/v1/p1/stacks")).await.unwrap();
    let d: Used = t.get_json(&fake.server.url("/v1/p1/stacks")).await.unwrap();
    assert_eq!(
        (c.token_used.as_str(), d.token_used.as_str()),
        ("tok-3", "tok-3")
    );
    assert_eq!(tm.issued_count(), 3);
}

#[test]
fn renewal_threshold_is_the_smaller_of_margin_and_a_quarter() {
    let issued = Utc::now();
    let token =
        |lifetime_s: i64| Token::for_tests(issued, issued + ChronoDuration::seconds(lifetime_s));
    let margin = Duration::from_secs(60);
    let hour = token(3600);
    assert!(!hour.needs_renewal(issued + ChronoDuration::seconds(3500), margin));
    assert!(hour.needs_renewal(issued + ChronoDuration::seconds(3541), margin));
    // A 100 s token renews in its last 25 s, not from the start.
    let short = token(100);
    assert!(!short.needs_renewal(issued + ChronoDuration::seconds(50), margin));
    assert!(!short.needs_renewal(issued + ChronoDuration::seconds(74), margin));
    assert!(short.needs_renewal(issued + ChronoDuration::seconds(76), margin));
    assert!(short.needs_renewal(issued + ChronoDuration::seconds(200), margin));
}

#[tokio::test]
async fn renews_once_on_401_and_retries_even_a_post() {
    let fake = fake().await;
    let (t, tm) = authed(&fake, password_creds(PASSWORD));
    let _: Used = t.get_json(&fake.server.url("/v1/p1/stacks")).await.unwrap();
    // Keystone revoked tok-1 (e.g. the password was rotated elsewhere).
    fake.valid_from.store(2, Ordering::SeqCst);
    let resp = t
        .send_json(
            Method::POST,
            &fake.server.url("/v1/p1/stacks"),
            Some(&json!({})),
        )
        .await
        .unwrap();
    assert_eq!(resp.json::<Used>().unwrap().token_used, "tok-2");
    assert_eq!(tm.issued_count(), 2);
    let posts: Vec<_> = fake
        .server
        .hits()
        .into_iter()
        .filter(|h| h.method == "POST" && h.path == "/v1/p1/stacks")
        .collect();
    assert_eq!(posts.len(), 2, "one rejected POST and one retry");
}

#[tokio::test]
async fn persistent_401_fails_after_one_renewal() {
    let fake = fake().await;
    fake.valid_from.store(1000, Ordering::SeqCst);
    let (t, tm) = authed(&fake, password_creds(PASSWORD));
    let err = t
        .get_json::<Used>(&fake.server.url("/v1/p1/stacks"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert_eq!(tm.issued_count(), 2);
    let service_hits = fake
        .server
        .hits()
        .iter()
        .filter(|h| h.path == "/v1/p1/stacks")
        .count();
    assert_eq!(service_hits, 2);
}

#[tokio::test]
async fn concurrent_401s_share_one_renewal() {
    let fake = fake().await;
    let (t, tm) = authed(&fake, password_creds(PASSWORD));
    tm.token().await.unwrap();
    fake.valid_from.store(2, Ordering::SeqCst);
    let url = fake.server.url("/v1/p1/stacks");
    let results: Vec<_> = fan_out(0..20, 20, |_| {
        let t = t.clone();
        let url = url.clone();
        async move { t.get_json::<Used>(&url).await }
    })
    .collect()
    .await;
    assert!(results
        .iter()
        .all(|(_, r)| r.as_ref().map(|u| u.token_used == "tok-2").unwrap_or(false)));
    assert_eq!(tm.issued_count(), 2, "twenty 401s caused one renewal");
}

#[tokio::test]
async fn concurrent_first_use_issues_one_token() {
    let fake = fake().await;
    let (t, tm) = authed(&fake, password_creds(PASSWORD));
    let url = fake.server.url("/v1/p1/stacks");
    let _: Vec<_> = fan_out(0..10, 10, |_| {
        let t = t.clone();
        let url = url.clone();
        async move { t.get_json::<Used>(&url).await }
    })
    .collect()
    .await;
    assert_eq!(tm.issued_count(), 1);
}

#[tokio::test]
async fn bad_password_is_an_auth_error_with_keystones_message() {
    let fake = fake().await;
    let (t, tm) = authed(&fake, password_creds("wrong-password-123"));
    let err = t
        .send(Request::get(fake.server.url("/v1/p1/stacks")))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ApiError::Auth(_)), "{err:?}");
    assert!(
        msg.contains("HTTP 401: The request you have made requires authentication."),
        "{msg}"
    );
    assert!(!msg.contains("wrong-password-123"));
    assert_eq!(tm.issued_count(), 0);
    // The service was never called without a token (only Keystone was: discovery + token).
    assert!(fake
        .server
        .hits()
        .iter()
        .all(|h| h.path.starts_with("/identity")));
    assert_eq!(token_posts(&fake.server).len(), 1);
}

#[tokio::test]
async fn application_credential_body_has_no_scope() {
    let fake = fake().await;
    let creds = Credentials::ApplicationCredential {
        id: None,
        name: Some("caldera".into()),
        user: Some(UserRef::Id("u1".into())),
        secret: Secret::new(PASSWORD),
    };
    let (_, tm) = authed(&fake, creds);
    tm.token().await.unwrap();
    let body = token_posts(&fake.server)[0].json();
    assert_eq!(
        body["auth"]["identity"]["methods"],
        json!(["application_credential"])
    );
    assert_eq!(
        body["auth"]["identity"]["application_credential"],
        json!({"name": "caldera", "user": {"id": "u1"}, "secret": PASSWORD})
    );
    assert!(body["auth"].get("scope").is_none());
}

#[tokio::test]
async fn secrets_never_appear_in_debug_or_display() {
    let fake = fake().await;
    let creds = password_creds(PASSWORD);
    let (_, tm) = authed(&fake, creds.clone());
    let token = tm.token().await.unwrap();
    for text in [
        format!("{creds:?}"),
        format!("{tm:?}"),
        format!("{token:?}"),
        format!("{:?}", Secret::new(PASSWORD)),
        format!("{}", Secret::new(PASSWORD)),
        format!(
            "{:?}",
            Credentials::ApplicationCredential {
                id: Some("i".into()),
                name: None,
                user: None,
                secret: Secret::new(PASSWORD)
            }
        ),
    ] {
        assert!(!text.contains(PASSWORD), "{text}");
        assert!(!text.contains("tok-1"), "{text}");
    }
    // The token header value is marked sensitive (hidden from HTTP debug output).
    let hv = token.header_value().unwrap();
    assert!(hv.is_sensitive());
    assert!(!format!("{hv:?}").contains("tok-1"));
}

#[test]
fn auth_urls_are_normalised_to_v3() {
    assert_eq!(v3_root("https://k:5000"), "https://k:5000/v3");
    assert_eq!(v3_root("https://k:5000/"), "https://k:5000/v3");
    assert_eq!(v3_root("https://k:5000/v3/"), "https://k:5000/v3");
    assert_eq!(v3_root("https://k/identity/v2.0"), "https://k/identity/v3");
    assert_eq!(v3_root("https://k/identity"), "https://k/identity/v3");
}

#[tokio::test]
async fn requests_and_responses_do_not_debug_print_secrets() {
    let fake = fake().await;
    let req = Request::new(Method::POST, fake.server.url("/identity/v3/auth/tokens"))
        .json(&json!({"auth": {"identity": {"password": {"user": {"password": PASSWORD}}}}}))
        .unwrap();
    assert!(!format!("{req:?}").contains(PASSWORD));
    // The raw Keystone response carries the token in X-Subject-Token.
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"password": PASSWORD}}}}});
    let resp = base_transport()
        .send(
            Request::new(Method::POST, fake.server.url("/identity/v3/auth/tokens"))
                .json(&body)
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.header("x-subject-token"), Some("tok-1"));
    let dbg = format!("{resp:?}");
    assert!(
        !dbg.contains("tok-1") && dbg.contains("x-subject-token"),
        "{dbg}"
    );
}

#[tokio::test]
async fn keystone_version_discovery_finds_v3() {
    let base = Arc::new(std::sync::Mutex::new(String::new()));
    let b = base.clone();
    let server = FaultServer::start(move |hit| {
        let base = b.lock().unwrap().clone();
        match (hit.method.as_str(), hit.path.as_str()) {
            ("GET", "/") => Reply::json(
                300,
                json!({"versions": {"values": [
                    {"id": "v2.0", "status": "deprecated", "links": [{"rel": "self", "href": format!("{base}/v2.0/")}]},
                    {"id": "v3.14", "status": "stable", "links": [{"rel": "self", "href": format!("{base}/keystone-v3/")}]}
                ]}})
                .to_string(),
            ),
            ("POST", "/keystone-v3/auth/tokens") => token_reply(hit, false),
            _ => Reply::status(404),
        }
    })
    .await;
    *base.lock().unwrap() = server.url("");
    let tm = TokenManager::new(base_transport(), &server.url("/"), password_creds(PASSWORD));
    tm.token().await.unwrap();
    assert_eq!(tm.auth_url(), server.url("/keystone-v3"));
    // Discovery happens once.
    tm.invalidate(&tm.token().await.unwrap()).await;
    tm.token().await.unwrap();
    let gets = server.hits().iter().filter(|h| h.method == "GET").count();
    assert_eq!(gets, 1);
    assert_eq!(tm.issued_count(), 2);
}

#[tokio::test]
async fn keystone_without_a_version_document_gets_v3_appended() {
    let fake = fake().await;
    let tm = TokenManager::new(
        base_transport(),
        &fake.server.url("/identity"),
        password_creds(PASSWORD),
    );
    tm.token().await.unwrap();
    assert_eq!(tm.auth_url(), fake.server.url("/identity/v3"));
    // Given with /v3, no discovery request at all.
    let fresh = self::fake().await;
    let tm = TokenManager::new(
        base_transport(),
        &fresh.server.url("/identity/v3/"),
        password_creds(PASSWORD),
    );
    tm.token().await.unwrap();
    assert!(fresh.server.hits().iter().all(|h| h.method == "POST"));
}
