//! The real Heat making real Nova servers, and caldera's rollout of them judged by Nova's own
//! record.
//!
//! `scripts/real-nova-suite.sh` starts a real Heat 27 beside the real Nova (HEAT_URL), its
//! noauth middleware handing Heat a token whose catalog names this Nova and the stand-in
//! Glance (`scripts/nova-standalone.sh token-response`). Requests to that Heat carry an
//! `X-Auth-Token` (`admin:admin`) which Heat passes on to Nova; caldera sends it with
//! `--auth-token`.
//!
//! What only a real Nova can say: a server Heat rebuilt for a new image keeps its id and gets a
//! `rebuild` in its instance actions (Nova's audit log of what was done to it, with times).
//! So "each member updated once, one at a time, nothing else touched" is read from Nova, not
//! from caldera's journal or Heat's events.

use super::*;
use caldera::model::{Node, NodeGroup};
use caldera::service::NodeUpdate;
use futures::StreamExt;

/// The stand-in Glance's images (scripts/nova_standins.py): what a stack names, and the ids
/// Nova records on a server.
const IMAGE_A: (&str, &str) = ("caldera-image-a", IMAGE);
const IMAGE_B: (&str, &str) = ("caldera-image-b", "2b4c6a7e-9d1f-4c3b-8a5e-0f6d7c8b9a02");
/// The token Heat hands on to Nova (Nova's stand-in identity reads `user:project`).
const TOKEN: &str = "admin:admin";
/// Seconds caldera watches after each node before releasing the next: the window in which
/// the test reads a half-done group.
const GATE_SECS: &str = "12";

fn heat_url() -> String {
    std::env::var("HEAT_URL")
        .expect("HEAT_URL must point at a real Heat on this Nova (scripts/real-nova-suite.sh)")
        .trim_end_matches('/')
        .to_string()
}

/// `caldera ARGS` on this Heat and Nova, with the token Heat hands on to Nova.
fn caldera(args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"));
    c.args(["--heat-url", &heat_url(), "--nova-url", &nova_url()])
        .args(args)
        .env("CALDERA_AUTH_TOKEN", TOKEN);
    c
}

/// `caldera ips STACK` succeeds with a `(no network)` row for each server named, and says
/// `0 failed`: servers booted with no network are nodes with no address, not failures.
fn assert_no_network_rows(stack: &str, servers: &[String]) {
    let ips = caldera(&["ips", stack]).output().expect("run caldera ips");
    let listed = String::from_utf8_lossy(&ips.stdout);
    let said = String::from_utf8_lossy(&ips.stderr);
    assert!(ips.status.success(), "ips:\n{listed}\n{said}");
    for server in servers {
        let row = listed
            .lines()
            .find(|l| l.contains(server.as_str()))
            .unwrap_or_else(|| panic!("a row named as server {server}:\n{listed}\n{said}"));
        assert!(row.contains("(no network)"), "{row}");
    }
    assert!(said.contains("0 failed"), "{said}");
}

/// Plain HTTP to Heat, with the token it hands on to Nova.
struct HeatRaw {
    http: reqwest::Client,
    base: String,
}

impl HeatRaw {
    fn new() -> HeatRaw {
        let base = heat_url();
        assert!(
            base.starts_with("http://127.0.0.1:"),
            "loopback only: {base}"
        );
        HeatRaw {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .no_proxy()
                .build()
                .unwrap(),
            base,
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("X-Auth-Token", TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("Heat answers");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Creates the stack and waits (bounded) for it to settle; returns its id.
    async fn create(&self, name: &str, count: u32, policy: Policy) -> String {
        let template = json!({
            "heat_template_version": "2021-04-16",
            "parameters": {
                "image": {"type": "string", "default": IMAGE_A.0},
                "count": {"type": "number", "default": count}
            },
            "resources": {"workers": {"type": "OS::Heat::ResourceGroup", "properties": {
                "count": {"get_param": "count"},
                "resource_def": {"type": "OS::Nova::Server", "properties": {
                    "name": format!("{name}-w-%index%"),
                    "image": {"get_param": "image"},
                    "image_update_policy": policy.heat_word(),
                    "flavor": FLAVOR,
                    "networks": [{"allocate_network": "none"}]}}}}}
        });
        let (status, body) = self
            .call(
                Method::POST,
                "/stacks",
                Some(json!({"stack_name": name, "timeout_mins": 10, "template": template})),
            )
            .await;
        assert_eq!(status, 201, "create {name}: {body}");
        let id = body["stack"]["id"].as_str().expect("stack id").to_string();
        let stack = self.settled(name, &id).await;
        assert_eq!(stack["stack_status"], "CREATE_COMPLETE", "{stack}");
        id
    }

    async fn stack(&self, name: &str, id: &str) -> Value {
        let (status, body) = self
            .call(Method::GET, &format!("/stacks/{name}/{id}"), None)
            .await;
        assert_eq!(status, 200, "stack {name}: {body}");
        body["stack"].clone()
    }

    async fn settled(&self, name: &str, id: &str) -> Value {
        let deadline = Instant::now() + SETTLE;
        loop {
            let stack = self.stack(name, id).await;
            if !stack["stack_status"]
                .as_str()
                .unwrap_or("")
                .ends_with("_IN_PROGRESS")
            {
                return stack;
            }
            assert!(Instant::now() < deadline, "{name} not settled: {stack}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The group's members as Heat lists them: member name → the server's id in Nova.
    async fn members(&self, name: &str, id: &str) -> BTreeMap<String, String> {
        let (status, body) = self
            .call(
                Method::GET,
                &format!("/stacks/{name}/{id}/resources?nested_depth=1"),
                None,
            )
            .await;
        assert_eq!(status, 200, "resources: {body}");
        body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["resource_type"] == "OS::Nova::Server")
            .map(|r| {
                (
                    r["resource_name"].as_str().unwrap().to_string(),
                    r["physical_resource_id"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// The stack's stored environment: what every later update of it inherits.
    async fn environment(&self, name: &str, id: &str) -> Value {
        let (status, body) = self
            .call(
                Method::GET,
                &format!("/stacks/{name}/{id}/environment"),
                None,
            )
            .await;
        assert_eq!(status, 200, "environment: {body}");
        body
    }

    async fn delete(&self, name: &str, id: &str) {
        let _ = self
            .call(Method::DELETE, &format!("/stacks/{name}/{id}"), None)
            .await;
    }
}

/// What Nova says of one server: its image id and its instance actions (oldest first).
#[derive(Debug)]
struct NovaRecord {
    image: String,
    status: String,
    actions: Vec<(String, String)>,
}

async fn nova_record(raw: &Raw, id: &str) -> NovaRecord {
    let server = raw.get(&format!("/servers/{id}")).await;
    let (status, actions) = raw
        .call(
            Method::GET,
            &format!("/servers/{id}/os-instance-actions"),
            None,
            Some("2.58"),
        )
        .await;
    assert_eq!(status, 200, "instance actions of {id}: {actions}");
    let mut actions: Vec<(String, String)> = actions["instanceActions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["start_time"].as_str().unwrap_or("").to_string(),
                a["action"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    actions.sort();
    NovaRecord {
        image: server["server"]["image"]["id"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        status: server["server"]["status"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        actions,
    }
}

/// caldera's connection to this Heat and Nova, as `--heat-url --nova-url --auth-token`.
async fn heat_connection() -> CloudConnection {
    let endpoints = NoAuthEndpoints {
        nova_url: Some(nova_url()),
        token: Some(caldera::config::Secret::new(TOKEN)),
        ..NoAuthEndpoints::heat_only(heat_url())
    };
    CloudConnection::no_auth(&endpoints, &ConnectOptions::default())
        .await
        .expect("connect")
}

/// The stack as the console's nodes pane reads a plain stack: one node group of every scaling
/// group in it.
fn stack_nodes(id: &str, name: &str) -> NodeGroup {
    NodeGroup::of_stack(id, name, Role::Other)
}

/// The nodes pane's last member list for the group (bounded).
async fn nodes_of(service: &LiveService, group: NodeGroup) -> Vec<Node> {
    let mut stream = service.stream_nodes(group);
    let mut last = Vec::new();
    let deadline = Instant::now() + SETTLE;
    while let Some(update) = tokio::time::timeout_at(deadline.into(), stream.next())
        .await
        .expect("the node stream ends in time")
    {
        match update.expect("a node update") {
            NodeUpdate::Members(nodes) => last = nodes,
            NodeUpdate::Listed { nodes, .. } => last = nodes,
            NodeUpdate::Done => break,
            NodeUpdate::Address(_)
            | NodeUpdate::Named { .. }
            | NodeUpdate::AddressFailed { .. } => {}
        }
    }
    last
}

/// The nodes once Heat has made `member`'s replacement. While Heat replaces a member its
/// listing may still give the old row (with the reason `… requires replacement.`, then
/// `DELETE_IN_PROGRESS`, then `DELETE_COMPLETE` until the whole update ends: all three seen
/// in CI); caldera reads the replacement from Heat's events (`caldera::ops::replaced`), which
/// name the new server once Heat has created it. Nova can have the new server ACTIVE a moment
/// before that: the nodes are read again while the replacement is still being made, or not
/// begun (bounded by `SETTLE`). A deleted old row is not waited out: caldera must see past it.
async fn settled_nodes(service: &LiveService, group: NodeGroup, member: &str) -> Vec<Node> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let nodes = nodes_of(service, group.clone()).await;
        replacements_count_as_updating(&nodes, &group);
        let being_made = |n: &Node| {
            n.status.raw == "CREATE_IN_PROGRESS"
                || n.status_reason
                    .as_deref()
                    .is_some_and(|r| r.ends_with("requires replacement."))
        };
        let waiting = nodes
            .iter()
            .any(|n| n.key.member == member && being_made(n));
        if !waiting || Instant::now() >= deadline {
            return nodes;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// No scale runs in these rollouts: a member Heat shows being created is a replacement, which
/// caldera marks as such (from Heat's events) and counts as a member being updated, never as
/// one a scale adds.
fn replacements_count_as_updating(nodes: &[Node], group: &NodeGroup) {
    let made: Vec<&Node> = nodes
        .iter()
        .filter(|n| n.status.action == "CREATE" && n.status.is_in_progress())
        .collect();
    assert!(made.iter().all(|n| n.replacing), "{made:#?}");
    let counts = caldera::progress::of_nodes(nodes.iter(), group, &[], chrono::Utc::now()).counts;
    assert_eq!(counts.creating, 0, "{counts:?} of {nodes:#?}");
}

/// Whether caldera shows `image` for a member: by the name Nova's image proxy gives for the
/// id Nova has on the server (a plain stack's group has no image of its own, so names are
/// for the operator's eyes).
fn shows(nodes: &[Node], member: &str, image: (&str, &str)) -> bool {
    nodes
        .iter()
        .find(|n| n.key.member == member)
        .and_then(|n| n.image.as_deref())
        .is_some_and(|i| i == image.0)
}

fn rebuilds(record: &NovaRecord) -> Vec<&str> {
    record
        .actions
        .iter()
        .filter(|(_, a)| a == "rebuild")
        .map(|(t, _)| t.as_str())
        .collect()
}

/// How Heat changes a server's image (`OS::Nova::Server` `image_update_policy`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Policy {
    /// Nova rebuilds the server in place: same id, a `rebuild` instance action.
    Rebuild,
    /// Heat makes a new server (a new id, Nova's `create`) and deletes the old one.
    Replace,
}

impl Policy {
    fn heat_word(self) -> &'static str {
        match self {
            Policy::Rebuild => "REBUILD",
            Policy::Replace => "REPLACE",
        }
    }
}

/// A rollout of a Heat group of real Nova servers, rebuilt in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Nova and Heat: run scripts/real-nova-suite.sh"]
async fn a_rollout_rebuilds_each_real_server_once_one_at_a_time() {
    rollout_on_nova(Policy::Rebuild, "hr").await;
}

/// The same rollout where Heat replaces each server: new servers, the old ones gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Nova and Heat: run scripts/real-nova-suite.sh"]
async fn a_rollout_replaces_each_real_server_once_one_at_a_time() {
    rollout_on_nova(Policy::Replace, "hp").await;
}

/// The members (by the index in their server's name, `{stack}-w-{index}`) whose server Nova
/// has ACTIVE on image B, with each one's server id.
async fn on_new_image(raw: &Raw, name: &str) -> BTreeMap<String, String> {
    let (servers, _) = raw.list_all(&format!("name=^{name}-w-")).await;
    servers
        .iter()
        .filter(|s| s["image"]["id"] == IMAGE_B.1 && s["status"] == "ACTIVE")
        .filter_map(|s| {
            let member = s["name"].as_str()?.rsplit('-').next()?.to_string();
            Some((member, s["id"].as_str()?.to_string()))
        })
        .collect()
}

/// Nova rebuilds (or Heat replaces) each server exactly once, one at a time in caldera's
/// order with the gate between; midway caldera's nodes show the changed server's new image
/// and the others' old one as Nova has them; at the end no hook is left in the stack's
/// environment and the node detail is Nova's.
async fn rollout_on_nova(policy: Policy, tag: &str) {
    let raw = Raw::new();
    raw.ensure_flavor().await;
    let heat = HeatRaw::new();
    let name = unique(tag);
    let id = heat.create(&name, 3, policy).await;
    let members = heat.members(&name, &id).await;
    assert_eq!(members.len(), 3, "{members:?}");
    for server in members.values() {
        let r = nova_record(&raw, server).await;
        assert_eq!((r.image.as_str(), r.status.as_str()), (IMAGE_A.1, "ACTIVE"));
        assert!(rebuilds(&r).is_empty(), "{r:?}");
    }

    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("none.toml"), "").expect("none.toml");
    let target = format!("{name}/workers");
    let child = caldera(&["rollout", "start", &target, "--image", IMAGE_B.0])
        .args(["--gate-secs", GATE_SECS, "--poll-secs", "0.5", "--yes"])
        .env("CALDERA_JOURNAL", dir.path().join("journal.jsonl"))
        .env("CALDERA_ACTIONS_CONFIG", dir.path().join("none.toml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run caldera");

    // Midway: one server on the new image (Nova says so), the gate holding the next.
    let deadline = Instant::now() + SETTLE;
    let first = loop {
        let changed = on_new_image(&raw, &name).await;
        assert!(
            changed.len() < 2,
            "two servers changed at once: {changed:?}"
        );
        if let Some(member) = changed.keys().next() {
            break member.clone();
        }
        assert!(Instant::now() < deadline, "no server changed in {SETTLE:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let service = LiveService::new(heat_connection().await);
    let group = stack_nodes(&id, &name);
    let nodes = settled_nodes(&service, group.clone(), &first).await;
    for member in members.keys() {
        let expect = if *member == first { IMAGE_B } else { IMAGE_A };
        assert!(
            shows(&nodes, member, expect),
            "member {member}: caldera should show {expect:?} as Nova has it: {nodes:#?}"
        );
    }

    let out = child.wait_with_output().expect("caldera ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(": completed"), "{stdout}");

    // Nova's record: each member changed once, one after another.
    let after = heat.members(&name, &id).await;
    assert_eq!(after.len(), 3, "{after:?}");
    let mut starts = vec![];
    for (member, server) in &after {
        let r = nova_record(&raw, server).await;
        assert_eq!((r.image.as_str(), r.status.as_str()), (IMAGE_B.1, "ACTIVE"));
        let when = match policy {
            Policy::Rebuild => {
                assert_eq!(server, &members[member], "rebuilt in place: the same id");
                let times = rebuilds(&r);
                assert_eq!(times.len(), 1, "member {member} rebuilt once: {r:?}");
                times[0].to_string()
            }
            Policy::Replace => {
                assert_ne!(server, &members[member], "replaced: a new server");
                let (status, _) = raw
                    .call(
                        Method::GET,
                        &format!("/servers/{}", members[member]),
                        None,
                        None,
                    )
                    .await;
                assert_eq!(status, 404, "the old server of {member} is gone");
                assert_eq!(rebuilds(&r).len(), 0, "{r:?}");
                r.actions
                    .first()
                    .map(|(t, _)| t.clone())
                    .expect("its create")
            }
        };
        starts.push((when, member.clone()));
    }
    // Exactly one server per member on Nova now: nothing made twice, nothing left over.
    let (all, _) = raw.list_all(&format!("name=^{name}-w-")).await;
    assert_eq!(all.len(), 3, "{all:#?}");
    starts.sort();
    assert_eq!(starts[0].1, first, "{starts:?}");
    for pair in starts.windows(2) {
        let gap = gap_secs(&pair[0].0, &pair[1].0);
        assert!(
            gap >= GATE_SECS.parse::<f64>().unwrap() - 1.0,
            "the next server waited for the gate: {starts:?}"
        );
    }

    // Their addresses: none, as they were booted with no network (`allocate_network: none`):
    // each a row that says so, named as Nova names its server, and no failure.
    let servers: Vec<String> = members.keys().map(|m| format!("{name}-w-{m}")).collect();
    assert_no_network_rows(&name, &servers);

    // Nothing left behind: no hook in what the stack's next update inherits.
    let environment = heat.environment(&name, &id).await;
    assert!(
        !environment.to_string().contains("hooks"),
        "hooks left in the environment: {environment}"
    );

    // The nodes and the node detail after: Nova's image for every member, Nova's server.
    let nodes = nodes_of(&service, group.clone()).await;
    for member in members.keys() {
        assert!(shows(&nodes, member, IMAGE_B), "{member}: {nodes:#?}");
    }
    let node = nodes.iter().find(|n| n.key.member == first).unwrap();
    let detail = service
        .server_detail(ServerTarget::of_node(node, group.stack_id.clone()))
        .await
        .expect("the node detail of a Heat-made server");
    assert_eq!(detail.id, after[&first]);
    assert_eq!(detail.status, "ACTIVE");
    assert_eq!(detail.image.as_deref(), Some(IMAGE_B.1));
    heat.delete(&name, &id).await;
}

/// Seconds from one of Nova's times (`2026-11-27T13:35:08.884703`) to another.
fn gap_secs(a: &str, b: &str) -> f64 {
    let parse = |t: &str| {
        chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f")
            .unwrap_or_else(|e| panic!("Nova time {t}: {e}"))
    };
    (parse(b) - parse(a)).num_milliseconds() as f64 / 1000.0
}

/// A server Nova fails to spawn, made by Heat (`action_retry_limit` 0 in this suite's Heat,
/// so the failure comes back in seconds): `caldera why` says failed (exit 6) at the member,
/// with Nova's own fault under it, and the node detail shows the fault Nova recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Nova and Heat: run scripts/real-nova-suite.sh"]
async fn why_and_the_node_detail_give_novas_fault_of_a_server_heat_made() {
    let raw = Raw::new();
    raw.ensure_flavor().await;
    let heat = HeatRaw::new();
    let name = unique("hf");
    let fault = "real-nova: no GPU left on the host";
    let server = |group: &str, metadata: Value| {
        json!({"type": "OS::Heat::ResourceGroup", "properties": {"count": 1, "resource_def": {
            "type": "OS::Nova::Server", "properties": {
                "name": format!("{name}-{group}-%index%"), "image": IMAGE_A.0, "flavor": FLAVOR,
                "metadata": metadata, "networks": [{"allocate_network": "none"}]}}}})
    };
    let template = json!({
        "heat_template_version": "2021-04-16",
        "resources": {
            "workers": server("w", json!({})),
            "gpu": server("gpu", json!({"caldera_fail_spawn": fault}))
        }
    });
    let (status, body) = heat
        .call(
            Method::POST,
            "/stacks",
            Some(json!({"stack_name": name, "timeout_mins": 10, "template": template})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let id = body["stack"]["id"].as_str().unwrap().to_string();
    let stack = heat.settled(&name, &id).await;
    assert_eq!(stack["stack_status"], "CREATE_FAILED", "{stack}");
    let (_, listing) = heat
        .call(
            Method::GET,
            &format!("/stacks/{name}/{id}/resources?nested_depth=1&type=OS::Nova::Server"),
            None,
        )
        .await;
    let bad = listing["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource_status"] == "CREATE_FAILED")
        .and_then(|r| r["physical_resource_id"].as_str())
        .expect("Heat names the failed server")
        .to_string();
    let wire = raw.settled(&bad).await;
    assert_eq!(wire["status"], "ERROR", "{wire}");
    let code = wire["fault"]["code"].as_u64().expect("Nova's fault code");

    let out = caldera(&["why", &name]).output().expect("run caldera");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "failed: {stdout}");
    let lines: Vec<&str> = stdout.lines().map(str::trim).collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("failed: gpu > 0"))
        .unwrap_or_else(|| panic!("the failed member first: {stdout}"));
    assert_eq!(
        lines.get(at + 1).copied(),
        Some(format!("└ Nova ERROR: {fault} ({code})").as_str()),
        "Nova's word under it: {stdout}"
    );

    let service = LiveService::new(heat_connection().await);
    let nodes = nodes_of(&service, stack_nodes(&id, &name)).await;
    let node = nodes
        .iter()
        .find(|n| n.key.member.ends_with('0') && n.status.is_failed())
        .unwrap_or_else(|| panic!("the failed member among {nodes:#?}"));
    let group = stack_nodes(&id, &name);
    let detail = service
        .server_detail(ServerTarget::of_node(node, group.stack_id.clone()))
        .await
        .expect("the failed node's detail");
    assert_eq!(detail.id, bad);
    assert_eq!(detail.status, "ERROR");
    let f = detail.fault.expect("Nova's fault");
    assert_eq!(
        (f.message.as_str(), f.code.map(u64::from)),
        (fault, Some(code))
    );
    heat.delete(&name, &id).await;
}

/// Members that are templates holding their server (Magnum's and caldera's layout): Nova names
/// the servers, and a server Nova has ACTIVE with no address on any network is a node with no
/// network in `caldera ips`, not a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real Nova and Heat: run scripts/real-nova-suite.sh"]
async fn ips_of_template_members_whose_servers_have_no_network() {
    let raw = Raw::new();
    raw.ensure_flavor().await;
    let heat = HeatRaw::new();
    let name = unique("hn");
    let member = json!({
        "heat_template_version": "2021-04-16",
        "parameters": {"index": {"type": "string"}},
        "resources": {"server": {"type": "OS::Nova::Server", "properties": {
            "name": {"list_join": ["-", [name.as_str(), "m", {"get_param": "index"}]]},
            "image": IMAGE_A.0, "flavor": FLAVOR,
            "networks": [{"allocate_network": "none"}]}}},
        "outputs": {"ip": {"value": {"get_attr": ["server", "first_address"]}}}
    });
    let template = json!({
        "heat_template_version": "2021-04-16",
        "resources": {"nodes": {"type": "OS::Heat::ResourceGroup", "properties": {
            "count": 2,
            "resource_def": {"type": "member.yaml", "properties": {"index": "%index%"}}}}}
    });
    let (status, body) = heat
        .call(
            Method::POST,
            "/stacks",
            Some(
                json!({"stack_name": name, "timeout_mins": 10, "template": template,
                        "files": {"member.yaml": member.to_string()}}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let id = body["stack"]["id"].as_str().unwrap().to_string();
    let stack = heat.settled(&name, &id).await;
    assert_eq!(stack["stack_status"], "CREATE_COMPLETE", "{stack}");
    let servers: Vec<String> = (0..2).map(|i| format!("{name}-m-{i}")).collect();
    assert_no_network_rows(&name, &servers);
    heat.delete(&name, &id).await;
}
