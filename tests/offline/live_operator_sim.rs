//! The console's live seams against the in-process simulator (fast clock): `LiveService`
//! lists Heat-native clusters beside Magnum's and streams their nodes with IPs, and
//! `LiveOperator` plans, applies, rolls out, reattaches, runs node actions and reads the
//! journal through the same guarded, journaled paths as the headless commands.

use crate::support::scenarios;
use crate::support::sim_group;
use caldera::api::cloud::CloudConnection;
use caldera::api::heat::ResourceQuery;
use caldera::api::nova::{ServerInfo, ServerQuery};
use caldera::drivers::apply::ActionContext;
use caldera::drivers::guard::Guard;
use caldera::drivers::heat_native::HeatNativeDriver;
use caldera::drivers::{Driver, Limits, NodeGroupSpec, ScaleRequest, UpgradePlan};
use caldera::journal::{Journal, Outcome};
use caldera::model::{Cluster, DriverKind, Node, NodeGroup};
use caldera::progress;
use caldera::rollout::{Control, NodePhase, RolloutOptions, RolloutState};
use caldera::service::live::LiveService;
use caldera::service::live_operator::LiveOperator;
use caldera::service::operator::Operator;
use caldera::service::{CloudService, ErrorKind, NodeUpdate};
use caldera::sim::faults::{Fault, FaultKind};
use caldera::sim::seed::{DEMO_CLUSTER, DEMO_IMAGE, DEMO_MEMBERS, DEMO_NODEGROUP};
use caldera::sim::{self, SimHandle, SimOptions};
use caldera::templates::Machines;
use futures::{StreamExt, TryStreamExt};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const NEW_IMAGE: &str = "fedora-coreos-40";
const SETTLE: Duration = Duration::from_secs(60);

struct Env {
    sim: SimHandle,
    conn: CloudConnection,
    service: LiveService,
    _dir: tempfile::TempDir,
    journal: Journal,
}

impl Env {
    async fn start(scenario: &str) -> Env {
        Env::start_with(SimOptions::fast(scenario, 50.0)).await
    }

    async fn start_with(options: SimOptions) -> Env {
        let (sim, conn) = sim_group::connected(options).await;
        let dir = tempfile::tempdir().expect("temp dir");
        let journal = Journal::open(dir.path().join("journal.jsonl"));
        Env {
            service: LiveService::new(conn.clone()),
            conn,
            sim,
            _dir: dir,
            journal,
        }
    }

    /// An empty simulator holding the demo's Heat-native cluster, created and settled.
    async fn with_heat_native() -> Env {
        let env = Env::start("empty").await;
        sim::seed::heat_native_demo(&env.sim)
            .await
            .expect("seed hn-demo");
        env.settle().await;
        env
    }

    fn operator(&self, guard: Guard) -> LiveOperator {
        let ctx = ActionContext {
            guard,
            ..scenarios::action_context(self.journal.clone(), "tester")
        };
        scenarios::live_operator(&self.conn, ctx, Duration::from_millis(50))
    }

    async fn cluster(&self, name: &str) -> Cluster {
        self.service
            .list_clusters()
            .await
            .expect("clusters")
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("cluster {name} listed"))
    }

    async fn nodegroup(&self, cluster: &Cluster, name: &str) -> NodeGroup {
        self.service
            .list_nodegroups(cluster.clone())
            .await
            .expect("node groups")
            .into_iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("node group {name} listed"))
    }

    async fn hn(&self) -> (Cluster, NodeGroup) {
        let c = self.cluster(DEMO_CLUSTER).await;
        let g = self.nodegroup(&c, DEMO_NODEGROUP).await;
        (c, g)
    }

    /// Waits for the Heat-native node group's stack to leave IN_PROGRESS; returns its row.
    async fn settle(&self) -> NodeGroup {
        let t0 = Instant::now();
        loop {
            let (_, g) = self.hn().await;
            if !g.status.is_in_progress() {
                return g;
            }
            assert!(t0.elapsed() < SETTLE, "{} still {}", g.name, g.status);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Members with their addresses, from the console's node stream.
    async fn nodes(&self, g: &NodeGroup) -> Vec<Node> {
        let mut stream = self.service.stream_nodes(g.clone());
        let mut nodes: Vec<Node> = Vec::new();
        let mut ips: BTreeMap<String, String> = BTreeMap::new();
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        while let Some(update) = stream.next().await {
            match update.expect("node update") {
                NodeUpdate::Members(m) | NodeUpdate::Listed { nodes: m, .. } => nodes = m,
                NodeUpdate::Address(a) => {
                    if let Some(name) = a.name {
                        assert!(names.insert(a.member.clone(), name).is_none());
                    }
                    ips.insert(a.member, a.addresses.first().cloned().unwrap_or_default());
                }
                NodeUpdate::Named { member, name } => {
                    assert!(
                        names.insert(member.clone(), name).is_none(),
                        "{member} named twice"
                    );
                }
                NodeUpdate::AddressFailed { member, error } => panic!("{member}: {error}"),
                NodeUpdate::Done => break,
            }
        }
        for n in &mut nodes {
            n.ip = ips.get(&n.key.member).cloned();
            if let Some(name) = names.get(&n.key.member) {
                n.name.clone_from(name);
            }
        }
        nodes
    }

    /// Each member's image, from its own stack's `image` parameter.
    async fn member_images(&self, g: &NodeGroup) -> BTreeMap<String, String> {
        let heat = &self.conn.heat;
        let stack = heat
            .resolve(g.stack_id.as_deref().expect("stack id"))
            .await
            .expect("node group stack");
        let group = heat
            .get_resource(&stack, "nodes")
            .await
            .expect("group resource")
            .resource
            .nested
            .expect("group stack");
        let mut out = BTreeMap::new();
        for m in heat
            .list_resources(&group, &ResourceQuery::default())
            .await
            .expect("members")
        {
            let member = m.resource.nested.clone().expect("member stack");
            let d = heat.get_stack(&member, false).await.expect("member");
            out.insert(
                m.resource.name.clone(),
                d.parameters.get("image").cloned().unwrap_or_default(),
            );
        }
        out
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_native_clusters_and_nodegroups_are_listed_and_nodes_stream_with_ips() {
    let env = Env::with_heat_native().await;
    let c = env.cluster(DEMO_CLUSTER).await;
    assert_eq!(c.driver, DriverKind::HeatNative);
    assert_eq!(c.node_count, DEMO_MEMBERS);
    assert_eq!(c.nodegroup_count, Some(1));

    let groups = env
        .service
        .list_nodegroups(c.clone())
        .await
        .expect("groups");
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = &groups[0];
    assert_eq!(g.name, DEMO_NODEGROUP);
    assert_eq!(g.node_count, DEMO_MEMBERS);
    assert_eq!(g.image.as_deref(), Some(DEMO_IMAGE));
    assert_eq!((g.min_node_count, g.max_node_count), (Some(1), Some(40)));
    assert_eq!(g.status.raw, "CREATE_COMPLETE");

    let nodes = env.nodes(g).await;
    let members: Vec<&str> = nodes.iter().map(|n| n.key.member.as_str()).collect();
    let expected: Vec<String> = (0..DEMO_MEMBERS).map(|i| i.to_string()).collect();
    assert_eq!(members, expected);
    // NAME is the Nova server's name (as the simulator names hn-demo's servers), not the
    // member's resource name.
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let expected: Vec<String> = (0..DEMO_MEMBERS)
        .map(|i| format!("node-{DEMO_CLUSTER}-{DEMO_NODEGROUP}-{i}"))
        .collect();
    assert_eq!(names, expected);
    // A settled group's members carry its image (the IMAGE column).
    assert!(
        nodes.iter().all(|n| n.image.as_deref() == Some(DEMO_IMAGE)),
        "{nodes:?}"
    );
    // Every member has its own address (the simulator numbers a group's members from .10).
    let ips: std::collections::BTreeSet<&str> =
        nodes.iter().filter_map(|n| n.ip.as_deref()).collect();
    assert_eq!(ips.len(), nodes.len(), "{nodes:?}");
    for n in &nodes {
        let i = n.index.expect("index");
        let ip = n.ip.as_deref().expect("address");
        assert!(ip.ends_with(&format!(".{}", i + 10)), "{ip} for member {i}");
    }
    // Each member is a template holding its server: Heat's listing of the group gives the
    // member's stack, Nova the server's id, which the node keeps (what `y` copies, what the
    // node's detail opens). Before, a node carried only its member stack's id.
    let servers: std::collections::BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n.server_id.as_deref())
        .collect();
    assert_eq!(servers.len(), nodes.len(), "{nodes:?}");
    assert!(nodes.iter().all(|n| n.server_id != n.stack_id), "{nodes:?}");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn magnum_nodes_stream_with_their_server_names() {
    // The demo's 1000-node Magnum group mid-rollout: Nova names every member's server as
    // Magnum's Heat driver does, and the node stream carries those names to the rows.
    let env = Env::start("demo").await;
    let c = env.cluster("prod-east").await;
    let g = env.nodegroup(&c, "default-worker").await;
    let nova = env.conn.nova.clone().expect("the simulator has Nova");
    let servers: Vec<ServerInfo> = nova
        .list_servers_detail(ServerQuery::default())
        .try_collect()
        .await
        .expect("servers");
    // Nova's own word, independent of Heat: each server's member from its metadata.
    let truth: BTreeMap<String, String> = servers
        .into_iter()
        .filter(|s| {
            s.metadata.get("cluster") == Some(&c.name)
                && s.metadata.get("nodegroup") == Some(&g.name)
        })
        .filter_map(|s| Some((s.metadata.get("member")?.clone(), s.name)))
        .collect();
    assert_eq!(truth.len(), g.node_count as usize);

    let nodes = env.nodes(&g).await;
    assert_eq!(nodes.len(), truth.len());
    for n in &nodes {
        assert_eq!(
            Some(&n.name),
            truth.get(&n.key.member),
            "member {}",
            n.key.member
        );
        assert_ne!(n.name, n.key.member);
    }
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heat_native_node_groups_are_described_side_by_side_when_listing() {
    const GROUPS: u32 = 6;
    const LATENCY: Duration = Duration::from_millis(150);
    let env = Env::start("empty").await;
    let driver = HeatNativeDriver::new(env.conn.heat.clone(), Machines::Test);
    driver.create_cluster("wide").await.expect("cluster");
    for i in 0..GROUPS {
        driver
            .create_nodegroup(&NodeGroupSpec {
                cluster: "wide".into(),
                nodegroup: format!("g{i}"),
                count: 1,
                image: DEMO_IMAGE.into(),
                limits: Limits::default(),
                action_wait_secs: 0,
            })
            .await
            .expect("node group");
    }
    let t0 = Instant::now();
    let listed = loop {
        let clusters = driver.list_clusters().await.expect("clusters");
        match clusters.into_iter().find(|c| c.name == "wide") {
            Some(c) if !c.status.is_in_progress() && c.nodegroup_count == Some(GROUPS) => break c,
            _ => {}
        }
        assert!(t0.elapsed() < SETTLE, "wide never settled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(listed.node_count, GROUPS);

    // Every Heat request now takes LATENCY: one stack listing plus three requests per group,
    // which one after the other take (1 + 3 * GROUPS) * LATENCY.
    env.sim
        .faults()
        .add(Fault::new(FaultKind::Latency(LATENCY)).on_path("/orchestration"));
    // The settle polls above spent this second's request starts (25 a second); the listing
    // below (19 starts) is measured against the concurrency, not the rate limit.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let before = env.conn.budget().total_requests;
    // How many requests are in flight at once, sampled while the listing runs: one after
    // the other never has more than one (a structural check, not a timing one).
    let conn = env.conn.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(conn.budget().in_flight);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            peak
        })
    };
    let t0 = Instant::now();
    let again = driver.list_clusters().await.expect("clusters");
    let took = t0.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.await.expect("sampler");
    let requests = env.conn.budget().total_requests - before;
    eprintln!("list_clusters: {GROUPS} groups, {requests} requests in {took:?}, {peak} at once");
    assert_eq!(again, vec![listed]);
    assert_eq!(
        requests,
        u64::from(1 + 3 * GROUPS),
        "same requests as before"
    );
    assert!(
        peak >= 2,
        "the groups were described one after the other (at most {peak} request in flight; \
         {took:?} for {GROUPS} groups)"
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_is_planned_journaled_applied_and_refused_when_read_only() {
    let env = Env::with_heat_native().await;
    let (c, g) = env.hn().await;
    let op = env.operator(Guard::default());
    let plan = op
        .plan_scale(
            c.clone(),
            g.clone(),
            ScaleRequest {
                count: Some(14),
                remove: vec!["3".into()],
            },
        )
        .await
        .expect("plan");
    assert_eq!((plan.from, plan.to), (12, 14));
    assert_eq!(plan.removed, ["3"]);
    assert_eq!(plan.added, ["12", "13", "14"]);
    assert!(
        env.journal.read_all().expect("journal").is_empty(),
        "a plan changes nothing"
    );

    op.apply_scale(plan.clone(), None).await.expect("apply");
    let entries = env.journal.read_all().expect("journal");
    let started = entries
        .iter()
        .find(|e| e.action == "scale" && e.outcome == Outcome::Started)
        .expect("the plan was journaled");
    assert_eq!(started.plan, plan.lines());
    assert_eq!(started.calls, plan.calls);
    let g = env.settle().await;
    assert_eq!(g.status.raw, "UPDATE_COMPLETE");
    assert_eq!(g.node_count, 14);
    let members: Vec<String> = env
        .nodes(&g)
        .await
        .into_iter()
        .map(|n| n.key.member)
        .collect();
    assert_eq!(members, plan.members_after);

    // Read-only: refused, journaled as refused, and Heat is not asked.
    let ro = env.operator(Guard {
        read_only: true,
        production: false,
    });
    let plan = ro
        .plan_scale(
            c,
            g.clone(),
            ScaleRequest {
                count: Some(16),
                remove: vec![],
            },
        )
        .await
        .expect("planning is allowed read-only");
    let before = env.journal.read_all().expect("journal").len();
    let e = ro.apply_scale(plan, None).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Refused, "{e}");
    let after = env.journal.read_all().expect("journal");
    assert_eq!(after.len(), before + 1);
    assert!(matches!(
        after.last().expect("entry").outcome,
        Outcome::Refused { .. }
    ));
    let (c, g2) = env.hn().await;
    assert_eq!(
        (g2.status.raw.as_str(), g2.node_count),
        ("UPDATE_COMPLETE", 14)
    );

    // A plan confirmed after the group moved (another scale went first): read again before
    // anything is sent, refused and journaled; the group keeps what it has.
    let to = |n| ScaleRequest {
        count: Some(n),
        remove: vec![],
    };
    let stale = op
        .plan_scale(c.clone(), g2.clone(), to(16))
        .await
        .expect("plan to 16");
    let first = op
        .plan_scale(c, g2.clone(), to(15))
        .await
        .expect("plan to 15");
    op.apply_scale(first, None).await.expect("apply 15");
    let g3 = env.settle().await;
    assert_eq!(g3.node_count, 15);
    let before = env.journal.read_all().expect("journal").len();
    let e = op.apply_scale(stale, None).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Refused, "{e}");
    assert!(
        e.message
            .contains("has 15 members now (the plan said 14 -> 16); nothing was sent"),
        "{e}"
    );
    let after = env.journal.read_all().expect("journal");
    assert_eq!(after.len(), before + 1);
    let (_, g4) = env.hn().await;
    assert_eq!(g4.node_count, 15);
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_runs_node_by_node_to_completion() {
    let env = Env::with_heat_native().await;
    let (c, g) = env.hn().await;
    let op = env.operator(Guard::default());
    let options = RolloutOptions {
        batch_size: 4,
        canary: 1,
        ..RolloutOptions::default()
    };
    let plan = op
        .plan_upgrade(c, g.clone(), NEW_IMAGE.into(), options)
        .await
        .expect("plan");
    let UpgradePlan::Rollout(rollout) = &plan else {
        panic!("a Heat-native upgrade is a rollout: {plan:?}")
    };
    assert_eq!(rollout.batches[0].len(), 1, "the canary first");
    let handle = op
        .start_upgrade(plan, None)
        .await
        .expect("start")
        .expect("a rollout has a handle");
    let end = tokio::time::timeout(SETTLE, handle.wait())
        .await
        .expect("the rollout ends in time");
    assert_eq!(end.state, RolloutState::Completed, "{:?}", end.lines());
    assert!(end.nodes.iter().all(|n| n.phase == NodePhase::Done));
    let images = env.member_images(&g).await;
    assert_eq!(images.len(), DEMO_MEMBERS as usize);
    assert!(images.values().all(|i| i == NEW_IMAGE), "{images:?}");
    let g = env.settle().await;
    let nodes = env.nodes(&g).await;
    assert!(
        nodes.iter().all(|n| n.image.as_deref() == Some(NEW_IMAGE)),
        "{nodes:?}"
    );
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_rollout_is_found_paused_by_request_and_finished_by_reattaching() {
    let env = Env::with_heat_native().await;
    let (c, g) = env.hn().await;
    let op = env.operator(Guard::default());
    assert!(
        op.find_rollout(c.clone(), g.clone())
            .await
            .expect("find")
            .is_none(),
        "nothing under way yet"
    );
    let plan = op
        .plan_upgrade(
            c.clone(),
            g.clone(),
            NEW_IMAGE.into(),
            RolloutOptions::default(),
        )
        .await
        .expect("plan");
    let mut handle = op
        .start_upgrade(plan, None)
        .await
        .expect("start")
        .expect("handle");
    let seen = tokio::time::timeout(
        SETTLE,
        handle.wait_for(|s| {
            s.nodes
                .iter()
                .filter(|n| n.phase == NodePhase::Done)
                .count()
                >= 2
        }),
    )
    .await
    .expect("two members updated in time");
    assert!(!seen.state.is_final(), "{:?}", seen.state);
    let id = seen.id.clone();
    handle.kill().await;

    let found = op
        .find_rollout(c.clone(), g.clone())
        .await
        .expect("find")
        .expect("the killed rollout is still under way");
    assert_eq!(found.id, id);
    let observed = op.observe_rollout(found.clone()).await.expect("observe");
    assert_eq!(observed.id, id);
    assert!(
        observed
            .nodes
            .iter()
            .filter(|n| n.phase == NodePhase::Done)
            .count()
            >= 2
    );

    // Nobody drives it now: status says so, and a pause nobody would read fails loudly
    // (nothing is written that a later driver could mistake for a fresh request).
    assert!(
        matches!(
            observed.driver,
            Some(caldera::rollout::progress::DriverInfo::Nobody { .. })
        ),
        "{:?}",
        observed.driver
    );
    let before = env.journal.read_all().expect("journal").len();
    let e = op
        .request_rollout(found.clone(), Control::Pause)
        .await
        .expect_err("a pause with no driver is refused");
    assert!(
        e.message.contains("no process on this machine drives"),
        "{e}"
    );
    assert_eq!(env.journal.read_all().expect("journal").len(), before);

    // An engine attached now takes it over.
    let handle = op.reattach_rollout(found, vec![]).await.expect("reattach");
    let end = tokio::time::timeout(SETTLE, handle.wait())
        .await
        .expect("the reattached rollout ends in time");
    assert_eq!(end.state, RolloutState::Completed, "{:?}", end.lines());
    let images = env.member_images(&g).await;
    assert!(images.values().all(|i| i == NEW_IMAGE), "{images:?}");
    assert!(op.find_rollout(c, g).await.expect("find").is_none());
    env.sim.shutdown().await;
}

/// A Heat update nobody drives through hooks (a plain PATCH from the CLI) is not a rollout:
/// `find_rollout` leaves it alone and `find_update` observes it; a caldera rollout that is
/// only in Heat (another operator's journal) is found from its hooks and can be taken over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_heat_update_is_observed_and_a_hooked_one_is_a_rollout() {
    use caldera::api::heat::StackUpdate;
    let env = Env::with_heat_native().await;
    let (c, g) = env.hn().await;
    let op = env.operator(Guard::default());
    let heat = &env.conn.heat;
    let stack = heat
        .resolve(g.stack_id.as_deref().expect("stack id"))
        .await
        .expect("node group stack");
    // Slow machines (200 s each on the simulator's fast clock: 4 s here), so the update
    // is still running when looked at.
    let mut update = StackUpdate {
        existing: true,
        ..StackUpdate::default()
    };
    update
        .parameters
        .insert("image".into(), "plain-patch".into());
    update
        .parameters
        .insert("action_wait_secs".into(), serde_json::json!(200));
    heat.update_stack(&stack, &update).await.expect("PATCH");
    assert!(
        op.find_rollout(c.clone(), g.clone())
            .await
            .expect("find")
            .is_none(),
        "a plain PATCH must not be taken for a rollout (its hooks would never come)"
    );
    let observed = op
        .find_update(c.clone(), g.clone())
        .await
        .expect("find update")
        .expect("the plain update is observed");
    let status = op.observe_update(observed).await.expect("observe");
    assert_eq!(status.nodes.len(), DEMO_MEMBERS as usize);
    let deadline = Instant::now() + SETTLE;
    while !heat
        .get_stack(&stack, false)
        .await
        .expect("stack")
        .summary
        .status
        .is_complete()
    {
        assert!(Instant::now() < deadline, "the plain update settles");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A caldera rollout started by someone else (another journal): found from Heat.
    let theirs = scenarios::live_operator(
        &env.conn,
        scenarios::action_context(
            Journal::open(env._dir.path().join("theirs.jsonl")),
            "someone-else",
        ),
        Duration::from_millis(50),
    );
    let mut plan = theirs
        .plan_upgrade(
            c.clone(),
            g.clone(),
            NEW_IMAGE.into(),
            RolloutOptions::default(),
        )
        .await
        .expect("plan");
    // Quick machines again (the plain PATCH above left them slow).
    if let UpgradePlan::Rollout(p) = &mut plan {
        p.extra_parameters.insert(
            "action_wait_secs".into(),
            caldera::parameter_value::ParameterValue::json(3.into()),
        );
    }
    let handle = theirs
        .start_upgrade(plan, None)
        .await
        .expect("start")
        .expect("handle");
    handle.kill().await;
    let deadline = Instant::now() + SETTLE;
    let found = loop {
        // Until Heat pauses the first member there is no hook to tell it by.
        if let Some(p) = op.find_rollout(c.clone(), g.clone()).await.expect("find") {
            break p;
        }
        assert!(Instant::now() < deadline, "the hooked update is found");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(found.image, NEW_IMAGE);
    let end = tokio::time::timeout(
        SETTLE,
        op.reattach_rollout(found, vec![])
            .await
            .expect("take over")
            .wait(),
    )
    .await
    .expect("the taken-over rollout ends");
    assert_eq!(end.state, RolloutState::Completed, "{:?}", end.lines());
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_action_runs_with_the_node_variables_and_the_journal_reads_on() {
    let env = Env::with_heat_native().await;
    let (c, g) = env.hn().await;
    let op = env.operator(Guard::default());
    assert_eq!(op.journal_path(), env.journal.path());
    let (entries, start) = op.read_journal(0).await.expect("read");
    assert!(entries.is_empty());

    let nodes: Vec<Node> = env
        .nodes(&g)
        .await
        .into_iter()
        .filter(|n| n.key.member == "2" || n.key.member == "7")
        .collect();
    assert_eq!(nodes.len(), 2);
    let expected: Vec<String> = nodes
        .iter()
        .map(|n| {
            // The node's name (its server's where known, what `kubectl` calls it) and
            // its member name in the group.
            format!(
                "node_action hn-demo/workers {} {} #{} {}",
                n.name,
                n.key.member,
                n.index.expect("numeric member"),
                n.ip.as_deref().expect("streamed address")
            )
        })
        .collect();
    let runs = op
        .node_action(
            c,
            g,
            "echo \"$CALDERA_HOOK $CALDERA_CLUSTER/$CALDERA_NODEGROUP \
             $CALDERA_NODE_NAME $CALDERA_NODE_MEMBER #$CALDERA_NODE_INDEX $CALDERA_NODE_IP\""
                .into(),
            nodes,
            1,
        )
        .await
        .expect("node action");
    let outputs: Vec<&str> = runs.iter().map(|r| r.output.trim()).collect();
    assert_eq!(outputs, expected);
    assert!(runs.iter().all(|r| r.ok()));

    let (entries, next) = op.read_journal(start).await.expect("read");
    let targets: Vec<&str> = entries.iter().map(|e| e.target.as_str()).collect();
    assert_eq!(
        targets,
        ["hn-demo/workers", "hn-demo/workers/2", "hn-demo/workers/7"]
    );
    assert!(next > start);
    let (again, same) = op.read_journal(next).await.expect("read");
    assert!(again.is_empty());
    assert_eq!(same, next);
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn magnum_node_groups_are_planned_through_magnum() {
    let env = Env::start("small").await;
    let c = env.cluster("small").await;
    assert_eq!(c.driver, DriverKind::Magnum);
    let g = env.nodegroup(&c, "default-worker").await;
    let op = env.operator(Guard::default());
    let plan = op
        .plan_scale(
            c.clone(),
            g.clone(),
            ScaleRequest {
                count: Some(4),
                remove: vec!["1".into()],
            },
        )
        .await
        .expect("plan");
    assert_eq!(plan.target.driver, DriverKind::Magnum);
    assert_eq!((plan.from, plan.to), (3, 4));
    assert!(plan.calls[0].path.ends_with("/actions/resize"), "{plan:?}");
    assert!(plan.calls[0].body.contains("\"nodes_to_remove\":[\"1\"]"));

    let up = op
        .plan_upgrade(
            c.clone(),
            g.clone(),
            "k8s-v1.30".into(),
            RolloutOptions::default(),
        )
        .await
        .expect("upgrade plan");
    assert!(matches!(up, UpgradePlan::Magnum(_)), "{up:?}");
    assert!(op.find_rollout(c, g).await.expect("find").is_none());
    assert!(env.journal.read_all().expect("journal").is_empty());
    env.sim.shutdown().await;
}

/// The console's demo (`--simulator`, `caldera sim`): the Magnum clusters and `hn-demo`,
/// listed together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_holds_a_heat_native_cluster_beside_magnum() {
    let (sim, conn) = sim_group::connected(SimOptions {
        scenario: "demo".into(),
        speed: 50.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        heat_native_demo: true,
        ..SimOptions::default()
    })
    .await;
    let service = LiveService::new(conn);
    let clusters = service.list_clusters().await.expect("clusters");
    let mut names: Vec<(&str, DriverKind)> = clusters
        .iter()
        .map(|c| (c.name.as_str(), c.driver))
        .collect();
    names.sort_by_key(|(n, _)| *n);
    assert_eq!(
        names,
        [
            ("batch-jobs", DriverKind::Magnum),
            // Magnum on Cluster API (no Heat stack): still a Magnum cluster.
            ("capi-prod", DriverKind::Magnum),
            ("dev-small", DriverKind::Magnum),
            ("hn-demo", DriverKind::HeatNative),
            ("prod-east", DriverKind::Magnum),
            ("staging", DriverKind::Magnum),
        ]
    );
    sim.shutdown().await;
}

/// #15 item 4: a settle burst follows one cluster with `cluster()`, not the list (whose
/// cost grows with the clusters: a detail and a node-group listing each). One Magnum cluster
/// costs its detail, its node-group listing and, for a cluster without a Heat stack UUID,
/// its template; a Heat-native one its own node-group stacks. Each row is the list's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_cluster_is_read_for_a_few_requests_as_the_list_shows_it() {
    let (sim, conn) = sim_group::connected(SimOptions {
        scenario: "demo".into(),
        speed: 1.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        heat_native_demo: true,
        ..SimOptions::default()
    })
    .await;
    let service = LiveService::new(conn.clone());
    let before = conn.budget().total_requests;
    let clusters = service.list_clusters().await.expect("clusters");
    let list_cost = conn.budget().total_requests - before;
    assert!(clusters.len() > 1, "{clusters:?}");
    for listed in &clusters {
        let before = conn.budget().total_requests;
        let alone = service.cluster(listed.clone()).await.expect("one cluster");
        let cost = conn.budget().total_requests - before;
        eprintln!("{}: {cost} requests (the list: {list_cost})", listed.name);
        let most = match listed.driver {
            DriverKind::HeatNative => 1 + 3 * u64::from(listed.nodegroup_count.unwrap_or(0)),
            _ => 3,
        };
        assert!(cost <= most, "{}: {cost} requests", listed.name);
        assert_eq!(&alone, listed, "{}", listed.name);
    }
    let unknown = Cluster {
        id: "no-such-cluster".into(),
        name: "no-such-cluster".into(),
        ..clusters[0].clone()
    };
    assert!(service.cluster(unknown).await.is_err());
    sim.shutdown().await;
}

/// #15: mid-upgrade, the nodes' counts by image (Nova's, against the node group's) say as
/// many nodes are still on the old image as the rollout says remain; "complete" by status
/// alone would have counted them done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mid_upgrade_the_nodes_count_old_and_new_by_image_as_the_rollout_does() {
    let env = Env::with_heat_native().await;
    let (c, g) = env.hn().await;
    let op = env.operator(Guard::default());
    let options = RolloutOptions {
        batch_size: 2,
        canary: 1,
        ..RolloutOptions::default()
    };
    let plan = op
        .plan_upgrade(c, g.clone(), NEW_IMAGE.into(), options)
        .await
        .expect("plan");
    let mut handle = op
        .start_upgrade(plan, None)
        .await
        .expect("start")
        .expect("a rollout has a handle");
    let done = |s: &caldera::rollout::RolloutStatus| {
        s.nodes
            .iter()
            .filter(|n| n.phase == NodePhase::Done)
            .count()
    };
    tokio::time::timeout(SETTLE, handle.wait_for(|s| done(s) >= 2))
        .await
        .expect("two nodes updated in time");
    handle.send(Control::Pause).expect("pause");
    // Paused, with the nodes it had released finished: nothing moves while we look.
    let mid = tokio::time::timeout(
        SETTLE,
        handle.wait_for(|s| {
            matches!(s.state, RolloutState::Paused { .. })
                && s.nodes.iter().all(|n| n.phase != NodePhase::Updating)
        }),
    )
    .await
    .expect("paused in time");
    assert!(
        matches!(mid.state, RolloutState::Paused { .. }),
        "{:?}",
        mid.state
    );
    let total = DEMO_MEMBERS as usize;
    assert!(
        mid.remaining > 0 && mid.remaining < total,
        "{:?}",
        mid.lines()
    );

    let (_, g) = env.hn().await;
    assert_eq!(
        g.image.as_deref(),
        Some(NEW_IMAGE),
        "the group's target image"
    );
    let nodes = env.nodes(&g).await;
    assert_eq!(nodes.len(), total);
    let image = g.image.as_deref();
    assert!(
        nodes.iter().all(|n| n.image_phase(image).is_some()),
        "every node's image is known: {nodes:?}"
    );
    // The nodes' model and the rollout's say the same: as many left, as many new.
    let counts = progress::of_nodes(nodes.iter(), &g, &[], chrono::Utc::now()).counts;
    assert_eq!(counts.updating, 0, "{counts:?}");
    assert_eq!(
        counts.left(),
        mid.remaining,
        "{counts:?} vs {:?}",
        mid.lines()
    );
    assert_eq!(counts.new, mid.done, "{counts:?}");
    assert_eq!(counts.total(), total);
    // By status alone every one of them is complete: what the pane used to say.
    assert!(nodes.iter().all(|n| n.status.is_complete()), "{nodes:?}");
    handle.kill().await;
    env.sim.shutdown().await;
}

/// Magnum (Heat driver) members have their server's image from Nova: mid-upgrade (the
/// node group's stack in progress, when its image parameter says nothing of the members) the
/// IMAGE column and the counts by image still tell old nodes from new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn magnum_nodes_mid_upgrade_carry_their_servers_image() {
    // Members that take a few seconds each to update, so that a look lands mid-upgrade.
    let env = Env::start_with(SimOptions {
        update_median: Duration::from_secs(150),
        ..SimOptions::fast("small", 50.0)
    })
    .await;
    let c = env.cluster("small").await;
    let g = env.nodegroup(&c, "default-worker").await;
    let old = g.image.clone().expect("Magnum's node group image");
    let op = env.operator(Guard::default());
    let plan = op
        .plan_upgrade(c.clone(), g, "k8s-v1.30".into(), RolloutOptions::default())
        .await
        .expect("upgrade plan");
    assert!(matches!(plan, UpgradePlan::Magnum(_)), "{plan:?}");
    op.start_upgrade(plan, None).await.expect("start");
    let t0 = Instant::now();
    loop {
        let g = env.nodegroup(&c, "default-worker").await;
        let nodes = env.nodes(&g).await;
        assert!(!nodes.is_empty());
        let image = g.image.as_deref();
        assert!(
            nodes.iter().all(|n| n.image_phase(image).is_some()),
            "every node's image is known: {nodes:?}"
        );
        let counts = progress::of_nodes(nodes.iter(), &g, &[], chrono::Utc::now()).counts;
        assert_eq!(counts.total(), nodes.len());
        if g.status.is_in_progress() && counts.pending + counts.held > 0 {
            assert_ne!(g.image.as_deref(), Some(old.as_str()), "the target image");
            assert!(
                nodes
                    .iter()
                    .any(|n| n.image.as_deref() == Some(old.as_str())),
                "{nodes:?}"
            );
            break;
        }
        assert!(
            t0.elapsed() < SETTLE,
            "no mid-point seen: {counts:?} {}",
            g.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    env.sim.shutdown().await;
}

/// #15 as seen: the demo's prod-east is rolling 1000 Magnum workers to a new image. The nodes'
/// counts by image say as many are left as the rollout view (an observed Heat update) does;
/// by status alone nearly all of them were "complete". The update moves while we look, so
/// the nodes' look is taken between two looks of the update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_upgrade_nodes_left_on_the_old_image_match_the_rollout_view() {
    let env = Env::start_with(SimOptions::fast("demo", 1.0)).await;
    let c = env.cluster("prod-east").await;
    let g = env.nodegroup(&c, "default-worker").await;
    let op = env.operator(Guard::default());
    let update = op
        .find_update(c, g.clone())
        .await
        .expect("find")
        .expect("an upgrade under way");
    let before = op.observe_update(update.clone()).await.expect("observe");
    let nodes = env.nodes(&g).await;
    let after = op.observe_update(update).await.expect("observe");
    let image = g.image.as_deref();
    assert!(nodes.iter().all(|n| n.image_phase(image).is_some()));
    let counts = progress::of_nodes(nodes.iter(), &g, &[], chrono::Utc::now()).counts;
    assert_eq!(counts.total(), nodes.len());
    let left = counts.left();
    assert!(
        after.remaining <= left && left <= before.remaining,
        "{counts:?}: the rollout view said {} then {} remain",
        before.remaining,
        after.remaining
    );
    assert!(
        before.done <= counts.new && counts.new <= after.done,
        "{counts:?}"
    );
    assert!(left > 100, "mid-upgrade: {counts:?}");
    let complete = nodes.iter().filter(|n| n.status.is_complete()).count();
    assert!(
        complete > counts.new + 100,
        "status alone: {complete} complete"
    );
    env.sim.shutdown().await;
}

/// #26 item 9: a Magnum node group in the middle of an upgrade (the demo's prod-east rolls
/// its workers) is not resized: the resize would race the upgrade, and it is refused as it is
/// for a Heat-native group, saying what to wait for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_magnum_node_group_mid_upgrade_is_not_scaled() {
    let env = Env::start_with(SimOptions::fast("demo", 1.0)).await;
    let c = env.cluster("prod-east").await;
    assert_eq!(c.driver, DriverKind::Magnum);
    let g = env.nodegroup(&c, "default-worker").await;
    let op = env.operator(Guard::default());
    let refused = op
        .plan_scale(
            c,
            g,
            ScaleRequest {
                count: Some(1200),
                remove: vec![],
            },
        )
        .await
        .expect_err("refused mid-upgrade");
    assert!(
        refused.message.contains("UPDATE_IN_PROGRESS")
            && refused
                .message
                .contains("wait for it to settle before scaling"),
        "{refused}"
    );
    env.sim.shutdown().await;
}

/// A scale while Heat creates the new members: a member Heat has declared but not built
/// (`INIT_COMPLETE`) or is building (`CREATE_IN_PROGRESS`) counts as being created, never as
/// new or complete; the counts add up to the members at every look; once settled, the new
/// members are complete and no update is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_counts_members_being_created_not_complete() {
    // Members take about two seconds each to build: the looks land mid-scale.
    let env = Env::start_with(SimOptions::fast("empty", 5.0)).await;
    sim::seed::heat_native_demo(&env.sim)
        .await
        .expect("seed hn-demo");
    env.settle().await;
    let (c, g) = env.hn().await;
    let op = env.operator(Guard::default());
    let to = g.node_count + 4;
    let plan = op
        .plan_scale(
            c,
            g,
            ScaleRequest {
                count: Some(to),
                remove: vec![],
            },
        )
        .await
        .expect("plan");
    op.apply_scale(plan, None).await.expect("apply");
    let t0 = Instant::now();
    let mut seen_creating = 0;
    loop {
        let (_, g) = env.hn().await;
        let nodes = env.nodes(&g).await;
        let p = progress::of_nodes(nodes.iter(), &g, &[], chrono::Utc::now());
        assert_eq!(p.counts.total(), nodes.len());
        for n in &nodes {
            let building = n.status.action == "INIT"
                || (n.status.action == "CREATE" && n.status.is_in_progress());
            if building {
                assert_eq!(
                    p.phase_of(&n.key.member),
                    Some(progress::Phase::Creating),
                    "{n:?}"
                );
            }
        }
        seen_creating = seen_creating.max(p.counts.creating);
        if !g.status.is_in_progress() {
            assert_eq!(p.counts.creating, 0, "{:?}", p.counts);
            assert_eq!(nodes.len(), to as usize);
            assert_eq!(p.state, progress::State::Idle, "{:?}", p.state);
            break;
        }
        assert!(t0.elapsed() < SETTLE, "the scale never settled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen_creating > 0, "no look landed while members were built");
    env.sim.shutdown().await;
}
