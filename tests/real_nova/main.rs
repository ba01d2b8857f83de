//! caldera's Nova client and node views against a REAL OpenStack Nova (34, fake virt driver)
//! on 127.0.0.1.
//!
//! `scripts/real-nova-suite.sh` installs and starts it (scripts/nova-standalone.sh, with a
//! small `[api] max_limit`: NOVA_MAX_LIMIT, 3 there) and runs these with `--ignored`; a plain
//! `cargo test` skips them. They read NOVA_URL (`http://127.0.0.1:8774/v2.1`) and
//! NOVA_MAX_LIMIT from the environment.
//!
//! Each test boots its own servers through Nova's API (microversion 2.37, `"networks":
//! "none"`: the stand-in Neutron makes no ports, so no server has an address), names them
//! with a prefix of its own, then reads them the caldera way (its Nova client, the live
//! service's server detail, the Cluster API node matching and stall verdict) and checks what
//! caldera says against Nova's own answers, read here with plain HTTP.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::nova::{NovaClient, ServerInfo, ServerQuery};
use caldera::model::{CapiCluster, CapiDriver, ConsoleTail, NodeKey, Role, ServerTarget, Status};
use caldera::ops::capi_nodes;
use caldera::ops::capi_stall::{assess, ServerLook, Verdict};
use caldera::service::live::LiveService;
use caldera::service::CloudService;
use futures::TryStreamExt;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

mod heat_on_nova;
use std::time::{Duration, Instant};

/// The stand-in Glance's first image (scripts/nova_standins.py).
const IMAGE: &str = "2b4c6a7e-9d1f-4c3b-8a5e-0f6d7c8b9a01";
const FLAVOR: &str = "caldera.small";
/// A fake-driver build takes seconds; a failed spawn about 4 s. Bounded, with room for a busy
/// machine.
const SETTLE: Duration = Duration::from_secs(120);

fn nova_url() -> String {
    std::env::var("NOVA_URL")
        .expect("NOVA_URL must point at a real Nova (scripts/real-nova-suite.sh starts one)")
        .trim_end_matches('/')
        .to_string()
}

/// Nova's `[api] max_limit` as the suite started it.
fn max_limit() -> usize {
    std::env::var("NOVA_MAX_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// Names unique on a shared Nova: lower-case letters and digits (Cluster API's alphabet).
fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{tag}{}{}", std::process::id() % 1000, token(nanos as u64))
}

/// Five of `[a-z0-9]`, from `seed`.
fn token(seed: u64) -> String {
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut n = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..5)
        .map(|_| {
            n = n.wrapping_mul(6364136223846793005).wrapping_add(1);
            alphabet[((n >> 33) % 36) as usize] as char
        })
        .collect()
}

/// Plain HTTP to Nova, as the identity middleware of scripts/nova_standalone.py reads it.
struct Raw {
    http: reqwest::Client,
    base: String,
}

impl Raw {
    fn new() -> Raw {
        Raw {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .no_proxy()
                .build()
                .unwrap(),
            base: nova_url(),
        }
    }

    /// `(status, body)`; `microversion` None sends no header (2.1, what caldera asks for).
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        microversion: Option<&str>,
    ) -> (u16, Value) {
        let url = if path.starts_with("http") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        };
        assert!(url.starts_with("http://127.0.0.1:"), "loopback only: {url}");
        let mut req = self
            .http
            .request(method, &url)
            .header("X-Auth-Token", "admin:admin");
        if let Some(mv) = microversion {
            req = req.header("OpenStack-API-Version", format!("compute {mv}"));
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("Nova answers");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        let (status, body) = self.call(Method::GET, path, None, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    async fn ensure_flavor(&self) {
        let (status, _) = self
            .call(Method::GET, &format!("/flavors/{FLAVOR}"), None, None)
            .await;
        if status == 200 {
            return;
        }
        let (status, body) = self
            .call(
                Method::POST,
                "/flavors",
                Some(json!({"flavor": {"name": FLAVOR, "id": FLAVOR, "ram": 512, "vcpus": 1, "disk": 1}})),
                None,
            )
            .await;
        // 409: a test running alongside made it first.
        assert!(status == 200 || status == 409, "flavor: {status} {body}");
    }

    /// Boots a server (2.37, no networks); returns its id.
    async fn boot(&self, name: &str, metadata: Value) -> String {
        let (status, body) = self
            .call(
                Method::POST,
                "/servers",
                Some(json!({"server": {
                    "name": name, "flavorRef": FLAVOR, "imageRef": IMAGE,
                    "networks": "none", "metadata": metadata}})),
                Some("2.37"),
            )
            .await;
        assert_eq!(status, 202, "boot {name}: {body}");
        body["server"]["id"]
            .as_str()
            .expect("server id")
            .to_string()
    }

    /// Waits (bounded) until the server leaves BUILD; returns Nova's answer for it (2.1).
    async fn settled(&self, id: &str) -> Value {
        let deadline = Instant::now() + SETTLE;
        loop {
            let s = self.get(&format!("/servers/{id}")).await;
            let status = s["server"]["status"].as_str().unwrap_or("").to_string();
            if status != "BUILD" && s["server"]["OS-EXT-STS:task_state"].is_null() {
                return s["server"].clone();
            }
            assert!(
                Instant::now() < deadline,
                "{id} still {status} after {SETTLE:?}"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Every server matching `query` (`name=...`), following Nova's own next links (bounded).
    async fn list_all(&self, query: &str) -> (Vec<Value>, usize) {
        let mut out = Vec::new();
        let mut url = format!("{}/servers/detail?{query}", self.base);
        let mut pages = 0;
        loop {
            pages += 1;
            assert!(pages <= 100, "more than 100 pages for {query}");
            let body = self.get(&url).await;
            out.extend(body["servers"].as_array().cloned().unwrap_or_default());
            let next = body["servers_links"]
                .as_array()
                .and_then(|l| l.iter().find(|l| l["rel"] == "next"))
                .and_then(|l| l["href"].as_str())
                .map(str::to_string);
            match next {
                Some(n) => url = n,
                None => return (out, pages),
            }
        }
    }

    async fn delete_all(&self, ids: &[String]) {
        for id in ids {
            let _ = self
                .call(Method::DELETE, &format!("/servers/{id}"), None, None)
                .await;
        }
    }
}

/// caldera's connection to this Nova, the no-auth way (the Heat URL is never called here).
async fn connection() -> CloudConnection {
    let endpoints = NoAuthEndpoints {
        nova_url: Some(nova_url()),
        ..NoAuthEndpoints::heat_only("http://127.0.0.1:9/v1/admin")
    };
    CloudConnection::no_auth(&endpoints, &ConnectOptions::default())
        .await
        .expect("connect")
}

async fn nova_client() -> NovaClient {
    connection().await.nova.expect("a Nova client")
}

fn ids_of(servers: &[Value]) -> Vec<String> {
    servers
        .iter()
        .map(|s| s["id"].as_str().unwrap_or("").to_string())
        .collect()
}

async fn collect(nova: &NovaClient, limit: Option<u32>, name: &str) -> Vec<ServerInfo> {
    nova.list_servers_detail(ServerQuery {
        limit,
        filters: vec![("name".into(), name.into())],
    })
    .try_collect()
    .await
    .expect("caldera lists servers")
}

/// Paging past Nova's `max_limit` (no limit asked, a limit above it, a limit below it) gets
/// every server exactly once, in Nova's order; `name` is a regular expression.
#[tokio::test]
#[ignore = "needs a real Nova: run scripts/real-nova-suite.sh"]
async fn lists_every_server_once_past_max_limit_and_filters_by_regex() {
    let raw = Raw::new();
    raw.ensure_flavor().await;
    let prefix = unique("pg");
    let max = max_limit();
    let n = max * 2 + 1;
    assert!(
        n <= 15,
        "start Nova with a small max_limit (NOVA_MAX_LIMIT), not {max}"
    );
    let mut booted = BTreeSet::new();
    for i in 0..n {
        booted.insert(raw.boot(&format!("{prefix}-{i}"), json!({})).await);
    }
    let ids: Vec<String> = booted.iter().cloned().collect();
    // Listed while some are still build requests (not yet in a cell), Nova's marker paging
    // skips servers that move into the cell between two pages (seen here: 5 of 7): wait until
    // every server is in its cell and built.
    for id in &ids {
        raw.settled(id).await;
    }
    let all = format!("^{prefix}-");

    // Nova's own answer: no page holds more than max_limit; its next links reach them all.
    let first = raw
        .get(&format!("/servers/detail?name={}", urlenc(&all)))
        .await;
    assert_eq!(
        first["servers"].as_array().map(Vec::len),
        Some(max),
        "Nova caps a page at max_limit: {first}"
    );
    let (nova_all, pages) = raw.list_all(&format!("name={}", urlenc(&all))).await;
    assert!(pages > 1, "paged");
    let nova_order = ids_of(&nova_all);
    assert_eq!(
        nova_order.iter().cloned().collect::<BTreeSet<_>>(),
        booted,
        "Nova's pages"
    );
    assert_eq!(nova_order.len(), n, "Nova's pages hold each server once");

    let nova = nova_client().await;
    for limit in [None, Some(500), Some(2)] {
        let got = collect(&nova, limit, &all).await;
        let got_ids: Vec<String> = got.iter().map(|s| s.id.clone()).collect();
        assert_eq!(got_ids, nova_order, "caldera with limit {limit:?}");
        for s in &got {
            let wire = nova_all.iter().find(|w| w["id"] == s.id.as_str()).unwrap();
            assert_eq!(s.name, wire["name"].as_str().unwrap());
            assert!(s.addresses.is_empty(), "no networks: {:?}", s.addresses);
            assert_eq!(s.image.as_deref(), Some(IMAGE));
        }
    }

    // A regular expression, not a prefix: an alternation and an anchor at the end.
    let re = format!("^{prefix}-(1|{})$", n - 1);
    let nova_re = ids_of(&raw.list_all(&format!("name={}", urlenc(&re))).await.0);
    assert_eq!(nova_re.len(), 2, "Nova's regex match");
    let got = collect(&nova, Some(1), &re).await;
    assert_eq!(
        got.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        nova_re
    );
    let mut names: Vec<String> = got.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(
        names,
        [format!("{prefix}-1"), format!("{prefix}-{}", n - 1)]
    );
    // Unanchored: the regex matches anywhere in the name.
    let inner = format!("{}-1", &prefix[2..]);
    let got = collect(&nova, None, &inner).await;
    assert!(
        got.iter().any(|s| s.name == format!("{prefix}-1")),
        "{got:?}"
    );

    raw.delete_all(&ids).await;
}

fn urlenc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A server whose spawn fails is in ERROR with Nova's fault; caldera's node detail (the live
/// service's `server_detail`, what the console's server view reads) shows Nova's fault and
/// its answer to os-getConsoleOutput; an ACTIVE server's console log is the fake driver's.
#[tokio::test]
#[ignore = "needs a real Nova: run scripts/real-nova-suite.sh"]
async fn error_server_detail_and_console_match_nova() {
    let raw = Raw::new();
    raw.ensure_flavor().await;
    let prefix = unique("er");
    let bad = raw
        .boot(
            &format!("{prefix}-bad"),
            json!({"caldera_fail_spawn": "real-nova: hypervisor refused"}),
        )
        .await;
    let good = raw.boot(&format!("{prefix}-good"), json!({})).await;
    let wire = raw.settled(&bad).await;
    assert_eq!(wire["status"], "ERROR", "{wire}");
    let fault = &wire["fault"];
    let message = fault["message"].as_str().expect("Nova's fault message");
    // The fake driver's exception text, as Nova records a failed spawn (code 500, the
    // traceback in `details` for an admin).
    assert_eq!(message, "real-nova: hypervisor refused", "{fault}");

    let service = LiveService::new(connection().await);
    let target = |id: &str, name: &str| ServerTarget {
        key: NodeKey {
            nodegroup: "ng".into(),
            member: name.into(),
        },
        name: name.into(),
        server_id: Some(id.into()),
        member_stack: None,
        group_stack: None,
    };
    let d = service
        .server_detail(target(&bad, &format!("{prefix}-bad")))
        .await
        .expect("caldera's server detail");
    assert_eq!(d.id, bad);
    assert_eq!(d.name, wire["name"].as_str().unwrap());
    assert_eq!(d.status, "ERROR");
    assert_eq!(d.vm_state.as_deref(), wire["OS-EXT-STS:vm_state"].as_str());
    assert_eq!(
        d.host.as_deref(),
        wire["OS-EXT-SRV-ATTR:host"]
            .as_str()
            .filter(|h| !h.is_empty())
    );
    assert_eq!(d.image.as_deref(), Some(IMAGE));
    assert_eq!(d.flavor.as_deref(), wire["flavor"]["id"].as_str());
    assert!(d.addresses.is_empty());
    let f = d.fault.expect("caldera shows the fault");
    assert_eq!(f.message, message);
    assert_eq!(f.code.map(u64::from), fault["code"].as_u64());
    assert_eq!(
        f.details.as_deref(),
        fault["details"].as_str().filter(|s| !s.is_empty()),
        "the admin's traceback"
    );
    assert!(f.created.is_some(), "fault time {fault}");

    // The console log of the ERROR server: whatever Nova answers, caldera says the same.
    let (cstatus, cbody) = raw
        .call(
            Method::POST,
            &format!("/servers/{bad}/action"),
            Some(json!({"os-getConsoleOutput": {"length": 50}})),
            None,
        )
        .await;
    match (&d.console, cstatus) {
        (ConsoleTail::Lines(lines), 200) => assert_eq!(
            lines,
            &caldera::model::server::console_lines(cbody["output"].as_str().unwrap(), 50)
        ),
        (ConsoleTail::Unavailable(why), s) if s >= 400 => {
            assert!(why.contains(&format!("{s}")), "{why} vs {s} {cbody}");
            let nova_says = cbody
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(|v| v["message"].as_str())
                .unwrap_or("");
            assert!(why.contains(nova_says), "{why} vs {cbody}");
        }
        (other, s) => panic!("caldera {other:?}, Nova {s} {cbody}"),
    }
    println!("ERROR server console: Nova {cstatus} {cbody}; fault {fault}");

    // An ACTIVE server: the fake driver's log, line for line.
    let w = raw.settled(&good).await;
    assert_eq!(w["status"], "ACTIVE", "{w}");
    let d = service
        .server_detail(target(&good, &format!("{prefix}-good")))
        .await
        .expect("caldera's server detail");
    assert_eq!(d.status, "ACTIVE");
    assert_eq!(d.fault, None);
    assert_eq!(d.power_state.as_deref(), Some("running"));
    let (_, cbody) = raw
        .call(
            Method::POST,
            &format!("/servers/{good}/action"),
            Some(json!({"os-getConsoleOutput": {"length": 50}})),
            None,
        )
        .await;
    let out = cbody["output"].as_str().expect("console output");
    assert!(out.contains("FAKE CONSOLE OUTPUT"), "{out}");
    assert_eq!(
        d.console,
        ConsoleTail::Lines(caldera::model::server::console_lines(out, 50))
    );

    raw.delete_all(&[bad, good]).await;
}

/// The Cluster API path's Nova side: servers named the way magnum-capi-helm's machines are
/// (`{release}-{nodegroup}-{r5}-{r5}`, `{release}-control-plane-{r5}`) are found as their node
/// group's members, and the verdict on a node group with one in ERROR is "failed" with Nova's
/// fault.
#[tokio::test]
#[ignore = "needs a real Nova: run scripts/real-nova-suite.sh"]
async fn capi_node_group_members_and_failed_verdict_from_nova() {
    let raw = Raw::new();
    raw.ensure_flavor().await;
    let release = unique("kube");
    let seed = release.len() as u64 * 7919;
    let r = |i: u64| token(seed + i);
    let workers = [
        format!("{release}-default-worker-{}-{}", r(1), r(2)),
        format!("{release}-default-worker-{}-{}", r(1), r(3)),
    ];
    let failing = format!("{release}-default-worker-{}-{}", r(1), r(4));
    let control = format!("{release}-control-plane-{}", r(5));
    let other_group = format!("{release}-gpu-{}-{}", r(6), r(7));
    // Not the cluster's: its name only starts with the release's.
    let stranger = format!("{release}x-default-worker-{}-{}", r(8), r(9));
    let mut ids = Vec::new();
    for name in workers.iter().chain([&control, &other_group, &stranger]) {
        ids.push(raw.boot(name, json!({})).await);
    }
    let bad = raw
        .boot(
            &failing,
            json!({"caldera_fail_spawn": "real-nova: no capacity for this machine"}),
        )
        .await;
    ids.push(bad.clone());
    for id in &ids {
        raw.settled(id).await;
    }
    let bad_wire = raw.get(&format!("/servers/{bad}")).await;
    assert_eq!(bad_wire["server"]["status"], "ERROR", "{bad_wire}");
    let fault = bad_wire["server"]["fault"]["message"]
        .as_str()
        .expect("fault")
        .to_string();

    let capi = CapiCluster {
        driver: CapiDriver::CapiHelm,
        name: release.clone(),
    };
    let nova = nova_client().await;
    let servers = capi_nodes::cluster_servers(&nova, &capi)
        .await
        .expect("caldera lists the cluster's servers");
    // Nova's answer to the same name filter.
    let (wire, _) = raw
        .list_all(&format!("name={}", urlenc(&capi_nodes::name_filter(&capi))))
        .await;
    let mut got: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    got.sort();
    let mut want: Vec<String> = wire
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert!(!got.contains(&stranger), "the filter is `^{release}-`");
    assert_eq!(got.len(), 5);

    let nodes =
        capi_nodes::nodegroup_nodes(&capi, "ng-1", "default-worker", Role::Worker, &servers);
    let mut names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    names.sort();
    let mut expected = vec![workers[0].clone(), workers[1].clone(), failing.clone()];
    expected.sort();
    assert_eq!(names, expected, "the node group's members");
    for n in &nodes {
        let w = wire.iter().find(|w| w["name"] == n.name.as_str()).unwrap();
        assert_eq!(n.server_id.as_deref(), w["id"].as_str());
        assert_eq!(n.status.raw, w["status"].as_str().unwrap());
    }
    let masters =
        capi_nodes::nodegroup_nodes(&capi, "ng-0", "default-master", Role::Master, &servers);
    assert_eq!(
        masters.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(),
        [control.as_str()]
    );

    // The verdict, from the servers (the watch's way) and from the nodes (the progress way).
    let status = Status::parse("CREATE_IN_PROGRESS");
    let now = chrono::Utc::now();
    let member_servers: Vec<&ServerInfo> = servers
        .iter()
        .filter(|s| expected.contains(&s.name))
        .collect();
    let looks: Vec<ServerLook> = member_servers
        .iter()
        .map(|s| ServerLook::from(*s))
        .collect();
    let from_nodes: Vec<ServerLook> = nodes.iter().filter_map(ServerLook::of_node).collect();
    for looks in [looks, from_nodes] {
        match assess(&status, Some(now), &looks, None, now) {
            Verdict::Failed { servers } => {
                assert_eq!(servers, vec![(failing.clone(), fault.clone())])
            }
            other => panic!("want failed, got {other:?}"),
        }
    }

    raw.delete_all(&ids).await;
}

/// The same on vexxhost's magnum-cluster-api names: a ClusterClass cluster named after the
/// Magnum stack id (`kube-xxxxx`), workers `{cluster}-{ng}-{r}-{r}-{r}` (MachineDeployment,
/// MachineSet and Machine suffixes), the control plane `{cluster}-{r}-{r}`. A node group whose
/// name is one token (`gpu`) cannot be taken for the control plane: its servers have three
/// suffixes after it, the control plane's two after the cluster.
#[tokio::test]
#[ignore = "needs a real Nova: run scripts/real-nova-suite.sh"]
async fn capi_vexxhost_names_find_each_group_and_the_control_plane_in_nova() {
    let raw = Raw::new();
    raw.ensure_flavor().await;
    let cluster = format!("kube-{}", unique(""));
    let seed = cluster.len() as u64 * 104_729;
    let r = |i: u64| token(seed + i);
    let workers = [
        format!("{cluster}-default-worker-{}-{}-{}", r(1), r(2), r(3)),
        format!("{cluster}-default-worker-{}-{}-{}", r(1), r(2), r(4)),
    ];
    let gpu = format!("{cluster}-gpu-{}-{}-{}", r(5), r(6), r(7));
    let control = [
        format!("{cluster}-{}-{}", r(8), r(9)),
        format!("{cluster}-{}-{}", r(8), r(10)),
    ];
    let stranger = format!("{cluster}0-default-worker-{}-{}-{}", r(1), r(2), r(3));
    let mut ids = Vec::new();
    for name in workers
        .iter()
        .chain(control.iter())
        .chain([&gpu, &stranger])
    {
        ids.push(raw.boot(name, json!({})).await);
    }
    for id in &ids {
        raw.settled(id).await;
    }
    let capi = CapiCluster {
        driver: CapiDriver::MagnumClusterApi,
        name: cluster.clone(),
    };
    let nova = nova_client().await;
    let servers = capi_nodes::cluster_servers(&nova, &capi)
        .await
        .expect("caldera lists the cluster's servers");
    let mut got: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    got.sort();
    assert!(!got.contains(&stranger), "{got:?}");
    assert_eq!(got.len(), 5, "{got:?}");
    let names = |ng: &str, role: Role| {
        let mut n: Vec<String> = capi_nodes::nodegroup_nodes(&capi, ng, ng, role, &servers)
            .iter()
            .map(|n| n.name.clone())
            .collect();
        n.sort();
        n
    };
    let mut want_workers = workers.to_vec();
    want_workers.sort();
    assert_eq!(names("default-worker", Role::Worker), want_workers);
    assert_eq!(names("gpu", Role::Worker), vec![gpu.clone()]);
    let mut want_control = control.to_vec();
    want_control.sort();
    assert_eq!(names("default-master", Role::Master), want_control);
    raw.delete_all(&ids).await;
}
