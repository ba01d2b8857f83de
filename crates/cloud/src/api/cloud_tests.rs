//! CloudConnection against a fake Keystone whose catalog points back at the fault server.

use crate::api::cloud::*;
use crate::api::heat::StackListQuery;
use crate::api_error::ApiError;
use crate::config::clouds::{Credentials, DomainRef, ProjectScope, UserRef};
use crate::config::{CalderaSettings, CloudConfig, Secret};
use crate::fetch::RetryPolicy;
use crate::testing::fault_server::{FaultServer, Reply};
use futures::TryStreamExt;
use serde_json::json;
use std::sync::{Arc, Mutex};

async fn fake_cloud(with_magnum: bool) -> FaultServer {
    let base = Arc::new(Mutex::new(String::new()));
    let b = base.clone();
    let server = FaultServer::start(move |hit| {
        let base = b.lock().unwrap().clone();
        match (hit.method.as_str(), hit.path.as_str()) {
            ("POST", "/v3/auth/tokens") => {
                let mut catalog = vec![json!({"type": "orchestration", "endpoints": [
                    {"interface": "public", "region_id": "RegionOne", "url": format!("{base}/heat1/v1/p1")},
                    {"interface": "public", "region_id": "RegionTwo", "url": format!("{base}/heat2/v1/p1")}]})];
                if with_magnum {
                    catalog.push(json!({"type": "container-infra", "endpoints": [
                        {"interface": "public", "region_id": "RegionOne", "url": format!("{base}/magnum/v1")}]}));
                }
                Reply::with_headers(
                    201,
                    &[("X-Subject-Token", "tok-abc"), ("content-type", "application/json")],
                    json!({"token": {"expires_at": "2999-01-01T00:00:00.000000Z",
                        "project": {"id": "p1", "name": "k8s"}, "catalog": catalog}})
                    .to_string(),
                )
            }
            ("GET", "/magnum/v1") => Reply::with_headers(
                200,
                &[
                    ("content-type", "application/json"),
                    ("OpenStack-API-Minimum-Version", "container-infra 1.1"),
                    ("OpenStack-API-Maximum-Version", "container-infra 1.11"),
                ],
                "{}",
            ),
            ("GET", p) if p.ends_with("/stacks") => Reply::ok(json!({"stacks": [
                {"id": "i1", "stack_name": "s1", "stack_status": "CREATE_COMPLETE"}]})),
            _ => Reply::status(404),
        }
    })
    .await;
    *base.lock().unwrap() = server.url("");
    server
}

fn cloud(server: &FaultServer, region: Option<&str>) -> CloudConfig {
    CloudConfig {
        name: "prod".into(),
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
        region_name: region.map(str::to_string),
        interface: "public".into(),
        verify: true,
        cacert: None,
        caldera: CalderaSettings {
            read_only: true,
            production: true,
            ..Default::default()
        },
        secret_files: vec![],
    }
}

fn opts() -> ConnectOptions {
    ConnectOptions {
        retry: RetryPolicy::never(),
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn connects_through_keystone_and_the_catalog() {
    let server = fake_cloud(true).await;
    let conn = CloudConnection::from_cloud(&cloud(&server, Some("RegionOne")), &opts())
        .await
        .unwrap();
    // Magnum's version is negotiated in the background; the header learns it when done.
    conn.probes_done().await;
    let info = conn.info();
    assert_eq!(info.cloud, "prod");
    assert_eq!(info.region.as_deref(), Some("RegionOne"));
    assert_eq!(info.project.as_deref(), Some("k8s"));
    assert_eq!(info.api_versions, ["heat v1", "container-infra 1.11"]);
    assert!(info.has_magnum && info.read_only && !info.is_simulator);
    assert!(conn.settings.production);
    assert!(conn.nova.is_none());
    assert!(conn.warnings().is_empty());
    let stacks: Vec<_> = conn
        .heat
        .list_stacks(StackListQuery::default())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(stacks.len(), 1);
    let hit = server.hits().into_iter().last().unwrap();
    assert_eq!(hit.path, "/heat1/v1/p1/stacks");
    assert_eq!(hit.header("x-auth-token"), Some("tok-abc"));
    assert!(conn.budget().total_requests >= 3);
}

#[tokio::test]
async fn region_picks_the_endpoint_and_magnum_is_optional() {
    let server = fake_cloud(false).await;
    let conn = CloudConnection::from_cloud(&cloud(&server, Some("RegionTwo")), &opts())
        .await
        .unwrap();
    assert!(!conn.info().has_magnum);
    assert!(conn.magnum.is_none());
    assert_eq!(conn.heat.base(), server.url("/heat2/v1/p1"));
}

#[tokio::test]
async fn missing_heat_endpoint_is_a_clear_error() {
    let server = fake_cloud(true).await;
    let err = CloudConnection::from_cloud(&cloud(&server, Some("RegionThree")), &opts())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ApiError::Unsupported(_)));
    let msg = err.to_string();
    assert!(
        msg.starts_with(
            "cloud 'prod': the service catalog has no orchestration (Heat) endpoint for interface 'public' in region 'RegionThree'; it has "
        ),
        "{msg}"
    );
    // What the catalog does offer, so the operator can pick a region and interface.
    assert!(
        msg.contains("public in RegionOne") && msg.contains("public in RegionTwo"),
        "{msg}"
    );
}

#[tokio::test]
async fn bad_cacert_fails_before_any_request() {
    let server = fake_cloud(true).await;
    let mut c = cloud(&server, None);
    c.cacert = Some("/nonexistent/prod-ca.pem".into());
    let err = CloudConnection::from_cloud(&c, &opts())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ApiError::Config(_)));
    assert!(err.to_string().contains("/nonexistent/prod-ca.pem"));
    assert_eq!(server.hit_count(), 0);
}

#[tokio::test]
async fn no_auth_sends_identity_headers() {
    let server = fake_cloud(false).await;
    let mut endpoints = NoAuthEndpoints::heat_only(server.url("/heat1/v1/admin"));
    endpoints.magnum_url = Some(server.url("/magnum"));
    let conn = CloudConnection::no_auth(&endpoints, &opts()).await.unwrap();
    conn.probes_done().await;
    let info = conn.info();
    assert_eq!(info.cloud, "standalone");
    assert_eq!(info.project.as_deref(), Some("admin"));
    assert_eq!(info.api_versions, ["heat v1", "container-infra 1.11"]);
    let page = conn
        .heat
        .list_stacks_page(&StackListQuery::default(), None)
        .await
        .unwrap();
    assert_eq!(page.items[0].stack.name, "s1");
    let hit = server.hits().into_iter().last().unwrap();
    assert_eq!(hit.header("x-auth-user"), Some("admin"));
    assert_eq!(hit.header("x-auth-project"), Some("admin"));
    assert_eq!(hit.header("x-auth-token"), None);
}

/// A Magnum that never answers: the connection is made at once (nothing waits for Magnum),
/// Heat works, the header shows Magnum as probing then as not answering, and a Magnum call
/// fails naming Magnum, its URL and the timeout that elapsed.
#[tokio::test]
async fn a_hung_magnum_blocks_neither_the_connection_nor_heat() {
    let server = FaultServer::start(|hit| match hit.path.as_str() {
        p if p.starts_with("/magnum") => Reply::Hang,
        p if p.ends_with("/stacks") => Reply::ok(json!({"stacks": []})),
        _ => Reply::status(404),
    })
    .await;
    let mut endpoints = NoAuthEndpoints::heat_only(server.url("/heat1/v1/admin"));
    endpoints.magnum_url = Some(server.url("/magnum"));
    let mut o = opts();
    o.timeouts.probe = std::time::Duration::from_millis(300);
    let conn = CloudConnection::no_auth(&endpoints, &o).await.unwrap();
    let services = conn.info().services;
    let magnum = services
        .iter()
        .find(|s| s.api == crate::health::Api::Magnum)
        .expect("magnum listed");
    assert_eq!(
        magnum.health,
        crate::health::Availability::Probing,
        "connected before Magnum answered"
    );
    let page = conn
        .heat
        .list_stacks_page(&StackListQuery::default(), None)
        .await
        .expect("Heat answers");
    assert!(page.items.is_empty());
    conn.probes_done().await;
    let info = conn.info();
    assert_eq!(info.api_versions, ["heat v1"], "no Magnum version learned");
    let magnum = info
        .services
        .iter()
        .find(|s| s.api == crate::health::Api::Magnum)
        .expect("magnum listed");
    assert_eq!(magnum.label(), "magnum: no answer within 300 ms");
    let err = conn
        .magnum
        .as_ref()
        .expect("magnum client")
        .list_nodegroups("c1", None)
        .await
        .expect_err("Magnum hangs");
    let text = err.to_string();
    assert!(
        text.contains("/magnum/v1") && text.contains("Magnum no answer within 300 ms"),
        "{text}"
    );
}

#[test]
fn timeouts_are_set_by_key_and_bad_ones_are_named() {
    use std::time::Duration;
    let mut o = ConnectOptions::default();
    for spec in [
        "connect=2.5",
        "magnum=5",
        "HEAT=90",
        "probe=3",
        "follow=12",
        "body=30",
        "idle=7",
        "keystone=20",
        "nova=9",
    ] {
        o.set_timeout(spec)
            .unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
    assert_eq!(o.connect_timeout, Duration::from_millis(2500));
    let t = o.timeouts;
    assert_eq!(
        (t.magnum, t.heat, t.keystone, t.nova),
        (
            Some(Duration::from_secs(5)),
            Some(Duration::from_secs(90)),
            Some(Duration::from_secs(20)),
            Some(Duration::from_secs(9))
        )
    );
    assert_eq!(
        (t.probe, t.follow, t.body_base, t.body_idle),
        (
            Duration::from_secs(3),
            Duration::from_secs(12),
            Duration::from_secs(30),
            Duration::from_secs(7)
        )
    );
    for (spec, says) in [
        ("magnum", "expected KEY=SECS"),
        ("glance=5", "unknown key 'glance'"),
        ("heat=soon", "expected a number of seconds, got \"soon\""),
        ("heat=0", "from 0.001 to 86400, got 0"),
        ("heat=-1", "from 0.001 to 86400, got -1"),
        ("heat=NaN", "got NaN"),
        ("heat=1e308", "got 1e308"),
    ] {
        let err = o.set_timeout(spec).expect_err(spec);
        assert!(err.contains(says) && err.contains(spec), "{spec}: {err}");
    }
}
