//! A real Heat behind bad networks: a Magnum that never answers beside it, and the connection
//! to Heat cut for a few seconds while `caldera events --follow` follows a create.
//!
//! `scripts/real-heat-suite.sh` starts a Heat and runs these with `--ignored`; HEAT_URL must
//! point at it. Everything is on 127.0.0.1; every wait is bounded.

use crate::support::heat_wait::delete_settled;
use caldera::api::cloud::{CloudConnection, ConnectOptions, NoAuthEndpoints};
use caldera::api::heat::{EventQuery, HeatClient, SortDir};
use caldera::model::StackRef;
use caldera::templates::{nodegroup_stack, Machines};
use futures::StreamExt;
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat (scripts/real-heat-suite.sh starts one)")
}

async fn connect() -> CloudConnection {
    CloudConnection::no_auth(
        &NoAuthEndpoints::heat_only(heat_url()),
        &ConnectOptions::default(),
    )
    .await
    .expect("connect to the real Heat")
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

async fn create(heat: &HeatClient, name: &str, count: u32, wait_secs: u32) -> StackRef {
    let params: BTreeMap<String, serde_json::Value> =
        serde_json::from_value(json!({"count": count, "action_wait_secs": wait_secs}))
            .expect("parameters");
    let create = nodegroup_stack(name, Machines::Test, params).expect("templates parse");
    heat.create_stack(&create).await.expect("create accepted")
}

async fn wait_settled(heat: &HeatClient, stack: &StackRef) {
    let started = Instant::now();
    while heat
        .get_stack(stack, false)
        .await
        .expect("stack show")
        .summary
        .status
        .is_in_progress()
    {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "never settled"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every event of the stack tree as Heat lists it.
async fn heat_events(heat: &HeatClient, stack: &StackRef) -> HashSet<String> {
    let mut all = HashSet::new();
    let mut s = Box::pin(heat.list_events(
        stack.clone(),
        EventQuery {
            nested_depth: Some(2),
            sort_dir: Some(SortDir::Asc),
            ..Default::default()
        },
    ));
    while let Some(e) = s.next().await {
        all.insert(e.expect("listing").id);
    }
    all
}

/// A listener that accepts connections and never answers: a hung service.
async fn hung_service() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    (addr, task)
}

fn caldera(args: &[&str]) -> tokio::process::Command {
    let dir = std::env::temp_dir().join(unique("caldera-net"));
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_caldera"));
    cmd.args(args)
        .arg("--log-file")
        .arg(dir.join("caldera.log"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("OS_CLOUD")
        .env_remove("OS_CLIENT_CONFIG_FILE")
        .kill_on_drop(true);
    cmd
}

/// Commands that need only Heat finish as usual beside a Magnum that never answers; one
/// that needs Magnum fails naming Magnum, its URL and the probe timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn a_hung_magnum_beside_a_real_heat() {
    let conn = connect().await;
    let name = unique("rhnet");
    let stack = create(&conn.heat, &name, 3, 0).await;
    wait_settled(&conn.heat, &stack).await;
    let (magnum, _hung) = hung_service().await;
    let magnum_url = format!("http://{magnum}/v1");
    let heat = heat_url();
    let base = ["--heat-url", &heat, "--magnum-url", &magnum_url];
    let run = |extra: &[&str]| {
        let args: Vec<&str> = extra.iter().chain(base.iter()).copied().collect();
        let mut cmd = caldera(&args);
        async move {
            tokio::time::timeout(Duration::from_secs(120), cmd.output())
                .await
                .expect("the command finishes")
                .expect("the binary runs")
        }
    };
    let events = run(&["events", &name, "--nested-depth", "2"]).await;
    let stderr = String::from_utf8_lossy(&events.stderr);
    assert!(events.status.success(), "{stderr}");
    assert!(
        String::from_utf8_lossy(&events.stdout).contains("CREATE_COMPLETE"),
        "the events were printed"
    );
    let failures = run(&["failures", &name]).await;
    assert!(failures.status.success());
    let groups = run(&["nodegroups", "some-cluster", "--timeout", "probe=1"]).await;
    let stderr = String::from_utf8_lossy(&groups.stderr);
    assert!(!groups.status.success());
    for w in [
        magnum_url.as_str(),
        "Magnum no answer within 1 s",
        "probe timeout",
    ] {
        assert!(stderr.contains(w), "{w:?} in {stderr}");
    }
    delete_settled(&conn.heat, &stack).await;
}

/// A TCP proxy to Heat that can be cut (every connection dropped, the port closed) and
/// restored on the same port.
struct Cuttable {
    addr: SocketAddr,
    target: SocketAddr,
    stop: CancellationToken,
}

impl Cuttable {
    async fn start(target: SocketAddr) -> Cuttable {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = CancellationToken::new();
        tokio::spawn(Self::serve(listener, target, stop.clone()));
        Cuttable { addr, target, stop }
    }

    async fn serve(listener: TcpListener, target: SocketAddr, stop: CancellationToken) {
        loop {
            let (mut client, _) = tokio::select! {
                _ = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(c) => c,
                    Err(_) => return,
                },
            };
            let stop = stop.clone();
            tokio::spawn(async move {
                let Ok(mut upstream) = TcpStream::connect(target).await else {
                    return;
                };
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
                }
            });
        }
    }

    fn cut(&mut self) {
        self.stop.cancel();
    }

    async fn restore(&mut self) {
        self.stop = CancellationToken::new();
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) => {
                    tries += 1;
                    assert!(tries < 50, "cannot listen on {} again: {e}", self.addr);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        tokio::spawn(Self::serve(listener, self.target, self.stop.clone()));
    }
}

/// `caldera events --follow --until-complete` follows a create on the real Heat through a
/// proxy that is cut for four seconds: it reconnects, ends when the stack settles, and has
/// printed every event Heat lists for the tree exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Heat: run scripts/real-heat-suite.sh"]
async fn events_follow_through_a_cut_connection_to_a_real_heat() {
    let conn = connect().await;
    let heat = heat_url();
    let target: SocketAddr = url::Url::parse(&heat)
        .ok()
        .and_then(|u| u.socket_addrs(|| None).ok())
        .and_then(|a| a.into_iter().next())
        .expect("HEAT_URL host:port");
    let mut proxy = Cuttable::start(target).await;
    let via = heat.replacen(&target.to_string(), &proxy.addr.to_string(), 1);
    let name = unique("rhcut");
    let stack = create(&conn.heat, &name, 6, 10).await;
    let mut child = caldera(&[
        "events",
        &name,
        "--follow",
        "--until-complete",
        "--nested-depth",
        "2",
        "--interval",
        "0.5",
        "--format",
        "csv",
        "--heat-url",
        &via,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("caldera runs");
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // The first event printed (the line after the header): the stack was found and is
    // being followed, however slow the machine; only then is the connection cut.
    let (following, followed) = tokio::sync::oneshot::channel::<()>();
    let printed = tokio::spawn(async move {
        let mut ids = Vec::new();
        let mut following = Some(following);
        while let Ok(Some(line)) = out.next_line().await {
            ids.push(line);
            if ids.len() == 2 {
                if let Some(tx) = following.take() {
                    let _ = tx.send(());
                }
            }
        }
        ids
    });
    let mut err = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let stderr = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(Some(line)) = err.next_line().await {
            all.push(line);
        }
        all.join("\n")
    });
    tokio::time::timeout(Duration::from_secs(60), followed)
        .await
        .expect("an event is printed within a minute")
        .expect("the follower printed an event");
    proxy.cut();
    tokio::time::sleep(Duration::from_secs(4)).await;
    proxy.restore().await;
    let status = tokio::time::timeout(Duration::from_secs(180), child.wait())
        .await
        .expect("the follower ends once the stack settles")
        .expect("wait");
    let stderr = stderr.await.expect("stderr");
    let lines = printed.await.expect("stdout");
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("reconnecting for"), "{stderr}");
    assert!(stderr.contains("reconnected after"), "{stderr}");
    let ids: Vec<String> = lines
        .iter()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap_or_default().to_string())
        .collect();
    let unique_ids: HashSet<String> = ids.iter().cloned().collect();
    let truth = heat_events(&conn.heat, &stack).await;
    println!(
        "real Heat, connection cut 4 s during a create: {} events listed, {} printed, {} lost, {} duplicated",
        truth.len(),
        ids.len(),
        truth.difference(&unique_ids).count(),
        ids.len() - unique_ids.len()
    );
    assert_eq!(ids.len(), unique_ids.len(), "an event was printed twice");
    assert_eq!(
        unique_ids, truth,
        "the follower printed exactly Heat's events"
    );
    delete_settled(&conn.heat, &stack).await;
}
