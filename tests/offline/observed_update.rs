//! Observed updates against the in-process simulator: a Magnum update caldera does not drive
//! (the demo's `prod-east` upgrade held by three hooks, and one started here through Magnum)
//! is found, its figures match what the simulated cloud holds, and a look costs a bounded
//! number of requests on a 1000-node group.

use crate::support::scenarios;
use crate::support::sim_group;
use caldera::api::cloud::CloudConnection;
use caldera::drivers::UpgradePlan;
use caldera::journal::Journal;
use caldera::model::{Cluster, NodeGroup};
use caldera::rollout::observed::UpdateKind;
use caldera::rollout::{NodePhase, RolloutOptions, RolloutState, RolloutStatus};
use caldera::service::live::LiveService;
use caldera::service::live_operator::LiveOperator;
use caldera::service::operator::Operator;
use caldera::service::{CloudService, ErrorKind};
use caldera::sim::world::group::Phase;
use caldera::sim::{SimHandle, SimOptions};
use std::time::{Duration, Instant};

struct Env {
    sim: SimHandle,
    conn: CloudConnection,
    service: LiveService,
    op: LiveOperator,
    _dir: tempfile::TempDir,
}

/// `speed`: simulated seconds per real second.
async fn start(scenario: &str, speed: f64) -> Env {
    let (sim, conn) = sim_group::connected(SimOptions::fast(scenario, speed)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let op = scenarios::live_operator(
        &conn,
        scenarios::action_context(Journal::open(dir.path().join("journal.jsonl")), "tester"),
        Duration::from_millis(50),
    );
    Env {
        service: LiveService::new(conn.clone()),
        conn,
        sim,
        op,
        _dir: dir,
    }
}

impl Env {
    async fn group(&self, cluster: &str, ng: &str) -> (Cluster, NodeGroup) {
        let c = self
            .service
            .list_clusters()
            .await
            .expect("clusters")
            .into_iter()
            .find(|c| c.name == cluster)
            .unwrap_or_else(|| panic!("cluster {cluster} listed"));
        let g = self
            .service
            .list_nodegroups(c.clone())
            .await
            .expect("node groups")
            .into_iter()
            .find(|g| g.name == ng)
            .unwrap_or_else(|| panic!("node group {ng} listed"));
        (c, g)
    }

    /// The simulated cloud's own truth for a node group: members at `image` and idle,
    /// members held on a hook, by name.
    fn truth(&self, cluster: &str, ng: &str, image: &str) -> (usize, Vec<String>) {
        self.sim.with_world(|w| {
            let c = w.cluster_by_ident(cluster).expect("cluster in the world");
            let g = w.clusters[c]
                .groups
                .iter()
                .copied()
                .find(|&g| w.groups[g].name == ng)
                .expect("group in the world");
            let members = &w.groups[g].members;
            let done = members
                .values()
                .filter(|m| m.image == image && matches!(m.phase, Phase::Idle))
                .count();
            let mut held: Vec<String> = members
                .iter()
                .filter(|(_, m)| matches!(m.phase, Phase::Paused(..)))
                .map(|(i, _)| i.to_string())
                .collect();
            held.sort();
            (done, held)
        })
    }

    fn requests(&self) -> u64 {
        self.conn.budget().total_requests
    }
}

fn names(s: &RolloutStatus, phase: NodePhase) -> Vec<String> {
    let mut v: Vec<String> = s
        .nodes
        .iter()
        .filter(|n| n.phase == phase)
        .map(|n| n.name.clone())
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demos_magnum_upgrade_is_observed_at_a_bounded_cost() {
    let env = start("demo", 50.0).await;
    let (c, g) = env.group("prod-east", "default-worker").await;
    assert!(env
        .op
        .find_rollout(c.clone(), g.clone())
        .await
        .expect("find")
        .is_none());
    let update = env
        .op
        .find_update(c.clone(), g.clone())
        .await
        .expect("find update")
        .expect("the demo's upgrade is under way");
    assert_eq!(update.kind, UpdateKind::Magnum);

    // The first look reads the group's retained events; later looks only what is new.
    let (done_before, _) = env.truth("prod-east", "default-worker", "fedora-coreos-40");
    let before = env.requests();
    let first = env
        .op
        .observe_update(update.clone())
        .await
        .expect("observe");
    let first_cost = env.requests() - before;
    let (done_after, held) = env.truth("prod-east", "default-worker", "fedora-coreos-40");
    assert_eq!(first.nodes.len(), 1000);
    assert_eq!(first.image, "fedora-coreos-40");
    assert_eq!(first.stack_status, "UPDATE_IN_PROGRESS");
    assert!(
        (done_before..=done_after).contains(&first.done),
        "observed {} done, the cloud had {done_before}..{done_after}",
        first.done
    );
    assert!(first.done > 400, "{}", first.done);
    assert_eq!(held, ["412", "433", "447"]);
    assert_eq!(names(&first, NodePhase::Paused), held);
    assert_eq!(first.batches, 20, "1000 members in batches of 50");
    assert!(first.p50_ms.is_some() && first.throughput_per_min.is_some());
    // stack show + member listing + at most 5 pages of 200 retained events (1000 kept).
    assert!(first_cost <= 7, "first look cost {first_cost} requests");

    let before = env.requests();
    let second = env.op.observe_update(update).await.expect("observe again");
    let second_cost = env.requests() - before;
    assert!(second_cost <= 4, "a later look cost {second_cost} requests");
    assert_eq!(names(&second, NodePhase::Paused), held);
    assert!(second.done >= first.done);
    println!("requests per look on 1000 members: first {first_cost}, then {second_cost}");
    env.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_magnum_upgrade_started_here_is_observed_to_its_end() {
    // Slow enough that the update (3 members, one at a time, ~10 s each simulated) is still
    // under way when it is first looked for.
    let env = start("demo", 5.0).await;
    let (c, g) = env.group("dev-small", "default-worker").await;
    assert!(env
        .op
        .find_update(c.clone(), g.clone())
        .await
        .expect("find")
        .is_none());
    let plan = env
        .op
        .plan_upgrade(
            c.clone(),
            g.clone(),
            "k8s-v1.30".into(),
            RolloutOptions::default(),
        )
        .await
        .expect("plan");
    assert!(matches!(plan, UpgradePlan::Magnum(_)), "{plan:?}");
    assert!(env
        .op
        .start_upgrade(plan, None)
        .await
        .expect("start")
        .is_none());
    let update = env
        .op
        .find_update(c, g)
        .await
        .expect("find")
        .expect("the upgrade is under way");
    // Magnum's update is not Heat's to cancel from here.
    let refused = env
        .op
        .cancel_update(update.clone(), true, None)
        .await
        .expect_err("refused");
    assert_eq!(refused.kind, ErrorKind::Unsupported);
    let deadline = Instant::now() + Duration::from_secs(60);
    let last = loop {
        let s = env
            .op
            .observe_update(update.clone())
            .await
            .expect("observe");
        if s.state.is_final() || Instant::now() > deadline {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(last.state, RolloutState::Completed, "{:?}", last.lines());
    let (done, _) = env.truth("dev-small", "default-worker", "fedora-coreos-40");
    assert_eq!((last.done, last.remaining, done), (3, 0, 3));
    assert_eq!(
        last.nodes
            .iter()
            .filter(|n| n.duration_ms().is_some())
            .count(),
        3
    );
    env.sim.shutdown().await;
}
