//! The fleet view over a fake fleet: rows stream in as each cloud answers (the slow cloud
//! last), a dead cloud and a refused one are rows saying so, and a new scan replaces a
//! cloud's rows in place. Snapshots at 80x24, 120x40 and 200x60.

use super::config::{resolve, ConsoleOptions};
use super::keys::KeyAction;
use super::message::{Action, Command, Reply, Request};
use super::state::view::ViewKind;
use super::state::App;
use super::worker::Worker;
use crate::service::fake::{demo_epoch, FakeCloud};
use crate::service::fleet_scan::{FixedFleet, FleetAnswer, FleetReport, SharedFleet};
use crate::service::CloudService;
use crate::tests::Drive;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

fn report(cloud: &str, region: &str, answer: FleetAnswer) -> FleetReport {
    FleetReport {
        cloud: cloud.into(),
        region: Some(region.into()),
        answer,
    }
}

/// Four clouds in the order they answer: two with clusters, one refusing the credentials,
/// one down; `prod` answers last (its clusters after the dead cloud's row).
async fn four_clouds() -> Vec<(Duration, FleetReport)> {
    let fake = FakeCloud::demo(3);
    let clusters = fake.list_clusters().await.expect("demo clusters");
    let ms = Duration::from_millis;
    let prod = report("prod", "RegionOne", FleetAnswer::Clusters(clusters.clone()));
    let staging = report(
        "staging",
        "RegionTwo",
        FleetAnswer::Clusters(clusters.into_iter().take(1).collect()),
    );
    let dead = report(
        "dr-site",
        "RegionOne",
        FleetAnswer::Unreachable(
            "connection failed at 10.9.0.5:5000: Connection refused (os error 111)".into(),
        ),
    );
    let locked = report(
        "locked",
        "RegionOne",
        FleetAnswer::AuthFailed(
            "Keystone answered HTTP 401 (check this cloud's credentials in clouds.yaml)".into(),
        ),
    );
    vec![
        (ms(20), staging),
        (ms(20), locked),
        (ms(20), dead),
        (ms(40), prod),
    ]
}

struct Fleet {
    app: App,
    worker: Worker,
    rx: UnboundedReceiver<Reply>,
}

impl Drive for Fleet {
    fn app(&mut self) -> &mut App {
        &mut self.app
    }
}

impl Fleet {
    fn new(fleet: Option<SharedFleet>) -> Fleet {
        let svc: Arc<dyn CloudService> = Arc::new(FakeCloud::demo(3));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let worker = Worker::new(svc.clone(), tx).with_fleet(fleet);
        let options = ConsoleOptions {
            no_config: true,
            theme_dir: Some(std::path::PathBuf::from("/nonexistent")),
            ..ConsoleOptions::default()
        };
        let app = App::new(svc.info(), resolve(&options), demo_epoch());
        Fleet { app, worker, rx }
    }

    /// Opens `:fleet` and hands its request to the worker; returns how many were sent.
    fn open(&mut self) -> usize {
        self.app.update(Action::Command(Command::Fleet));
        self.submit()
    }

    fn submit(&mut self) -> usize {
        let requests = self.app.take_requests();
        let n = requests
            .iter()
            .filter(|r| matches!(r, Request::Fleet { .. }))
            .count();
        for r in requests {
            self.worker.submit(r);
        }
        n
    }

    /// Applies answers up to the fleet's next one (the root view's cluster list may come
    /// first); whether it was the end of the scan.
    async fn next(&mut self) -> bool {
        loop {
            let reply = tokio::time::timeout(Duration::from_secs(10), self.rx.recv())
                .await
                .expect("worker answered")
                .expect("channel open");
            let fleet = matches!(reply, Reply::FleetCloud { .. } | Reply::FleetDone { .. });
            let done = matches!(reply, Reply::FleetDone { .. });
            self.app.update(Action::Reply(reply));
            if fleet {
                return done;
            }
        }
    }

    async fn until_done(&mut self) {
        while !self.next().await {}
    }

    fn clouds(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for r in &self.app.store().fleet.rows {
            if seen.last() != Some(&r.cloud) {
                seen.push(r.cloud.clone());
            }
        }
        seen
    }
}

#[tokio::test]
async fn rows_stream_in_as_each_cloud_answers() {
    let mut f = Fleet::new(Some(Arc::new(FixedFleet(four_clouds().await))));
    assert_eq!(f.open(), 1);
    assert!(matches!(f.app.view().kind, ViewKind::Fleet));
    assert!(f.render(80, 24).contains("Loading"), "{}", f.render(80, 24));
    // The fastest cloud first: its rows are on screen while the others are still asked.
    assert!(!f.next().await);
    assert_eq!(f.clouds(), ["staging"]);
    let screen = f.render(120, 40);
    assert!(screen.contains("1 clouds answered, asking"), "{screen}");
    f.until_done().await;
    assert_eq!(f.clouds(), ["staging", "locked", "dr-site", "prod"]);
    let fleet = &f.app.store().fleet;
    assert!(!fleet.meta.in_flight);
    assert_eq!(fleet.answered, 4);
    assert_eq!(fleet.clouds_down(), 2);
    let dead = fleet
        .rows
        .iter()
        .find(|r| r.cloud == "dr-site")
        .expect("row");
    assert!(dead.status.starts_with("unreachable: connection failed"));
    // The footer offers no key that needs a cluster of this connection.
    let screen = f.render(200, 60);
    assert!(
        !screen.contains("d dash") && !screen.contains("space mark"),
        "{screen}"
    );
    insta::assert_snapshot!("fleet_80x24", f.render(80, 24));
    insta::assert_snapshot!("fleet_120x40", f.render(120, 40));
    insta::assert_snapshot!("fleet_200x60", f.render(200, 60));
}

#[tokio::test]
async fn a_rescan_replaces_each_clouds_rows_in_place() {
    let mut f = Fleet::new(Some(Arc::new(FixedFleet(four_clouds().await))));
    f.open();
    f.until_done().await;
    let before = f.app.store().fleet.rows.clone();
    // A periodic plan within the minute asks nothing; `r` asks again.
    f.app.plan_refresh(false);
    assert_eq!(f.submit(), 0);
    f.app.plan_refresh(true);
    assert_eq!(f.submit(), 1);
    assert!(!f.next().await);
    // Mid-scan, the clouds not yet answered keep their rows: nothing disappears.
    assert_eq!(f.app.store().fleet.rows, before);
    assert_eq!(f.app.store().fleet.answered, 1);
    f.until_done().await;
    assert_eq!(f.app.store().fleet.rows, before);
}

#[tokio::test]
async fn without_clouds_yaml_the_view_says_so() {
    let mut f = Fleet::new(None);
    f.open();
    assert!(f.next().await);
    let fleet = &f.app.store().fleet;
    assert!(fleet.rows.is_empty());
    let error = fleet.meta.error.clone().expect("error");
    assert!(error.contains("no clouds.yaml"), "{error}");
    let screen = f.render(120, 40);
    assert!(screen.contains("no clouds.yaml"), "{screen}");
    // The fleet asks every cloud once a minute, not at the views' refresh: the box says so.
    assert!(screen.contains("retrying every 60s"), "{screen}");
}

#[tokio::test]
async fn enter_shows_a_dead_clouds_whole_reason() {
    let mut f = Fleet::new(Some(Arc::new(FixedFleet(four_clouds().await))));
    f.open();
    f.until_done().await;
    // The third row is the dead cloud's; at 80 columns its reason is cut.
    let cut = f.render(80, 24);
    assert!(!cut.contains("os error 111"), "{cut}");
    f.app.update(Action::Key(KeyAction::Down));
    f.app.update(Action::Key(KeyAction::Down));
    f.app.update(Action::Key(KeyAction::Open));
    let screen = f.render(120, 40);
    assert!(screen.contains("cloud dr-site"), "{screen}");
    assert!(screen.contains("os error 111"), "{screen}");
}

/// Applies every answer until the worker has nothing more to say for a while.
async fn drain(app: &mut App, worker: &mut Worker, rx: &mut UnboundedReceiver<Reply>) {
    loop {
        for r in app.take_requests() {
            worker.submit(r);
        }
        match tokio::time::timeout(Duration::from_millis(300), rx.recv()).await {
            Ok(Some(reply)) => app.update(Action::Reply(reply)),
            _ => return,
        }
    }
}

#[tokio::test]
async fn switching_cloud_drops_every_views_data_and_fetches_it_from_the_new_cloud() {
    let mut f = Fleet::new(None);
    drain(&mut f.app, &mut f.worker, &mut f.rx).await;
    let old = f.app.store().clusters.data.clone().expect("clusters");
    assert!(old.len() > 1);
    f.app.update(Action::Command(Command::Stacks));
    drain(&mut f.app, &mut f.worker, &mut f.rx).await;
    assert_eq!(f.app.nav().len(), 2);

    f.app.update(Action::Command(Command::Cloud {
        name: "dr-site".into(),
        region: Some("RegionTwo".into()),
    }));
    let asked = f.app.take_requests();
    assert!(
        asked
            .iter()
            .any(|r| matches!(r, Request::SwitchCloud { name, region }
            if name == "dr-site" && region.as_deref() == Some("RegionTwo"))),
        "{asked:?}"
    );
    assert!(f
        .render(120, 40)
        .contains("connecting to dr-site (RegionTwo)"));

    // What the runtime does once connected: the worker on the new service, the app told.
    let mut other = FakeCloud::demo(3).with_data(|d| d.clone());
    other.info.cloud = "dr-site".into();
    other.info.region = Some("RegionTwo".into());
    other.clusters.truncate(1);
    other.clusters[0].name = "only-on-dr".into();
    let next: Arc<dyn CloudService> = Arc::new(FakeCloud::new(other));
    f.worker.replace(next.clone(), None);
    f.app.update(Action::Switched {
        info: Box::new(next.info()),
        guard: None,
        notices: vec!["a notice of the new cloud".into()],
    });
    // Back at the root, nothing of the old cloud left on screen or in the store.
    assert_eq!(f.app.nav().len(), 1);
    assert!(matches!(f.app.view().kind, ViewKind::Clusters));
    assert!(f.app.store().clusters.data.is_none());
    assert!(f.app.store().stacks.data.is_none());
    drain(&mut f.app, &mut f.worker, &mut f.rx).await;
    let names: Vec<String> = f
        .app
        .store()
        .clusters
        .data
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(names, ["only-on-dr"]);
    let screen = f.render(120, 40);
    assert!(screen.contains("dr-site · RegionTwo"), "{screen}");
    assert!(
        screen.contains("now on cloud dr-site (RegionTwo)"),
        "{screen}"
    );
}

#[tokio::test]
async fn a_failed_switch_stays_on_the_cloud() {
    let mut f = Fleet::new(None);
    drain(&mut f.app, &mut f.worker, &mut f.rx).await;
    let before = f.app.store().clusters.data.clone();
    f.app.update(Action::SwitchFailed {
        cloud: "dr-site".into(),
        error: "connection failed at 10.9.0.5:5000".into(),
    });
    assert_eq!(f.app.store().clusters.data, before);
    let screen = f.render(120, 40);
    assert!(
        screen.contains("cannot switch to cloud dr-site: connection failed"),
        "{screen}"
    );
}

#[tokio::test]
async fn no_switch_while_a_rollout_driven_here_releases_nodes() {
    use crate::message::RolloutDriver;
    use crate::rollout::{RolloutState, RolloutStatus};
    use crate::state::rollout_control::RolloutSlot;
    let fake = FakeCloud::demo(3);
    let cluster = fake.list_clusters().await.expect("clusters").remove(0);
    let nodegroup = fake
        .list_nodegroups(cluster.clone())
        .await
        .expect("node groups")
        .remove(0);
    let mut f = Fleet::new(None);
    let slot = |state: RolloutState| RolloutSlot {
        cluster: cluster.clone(),
        nodegroup: nodegroup.clone(),
        plan: None,
        status: Some(RolloutStatus::new(
            "r1".into(),
            "t".into(),
            "img".into(),
            state,
            Vec::new(),
            1,
            demo_epoch(),
        )),
        driver: Some(RolloutDriver::Here),
        searched: true,
        observed: None,
        expect_update: false,
        meta: Default::default(),
    };
    let key = nodegroup.id.clone();
    f.app
        .store_mut()
        .rollouts
        .insert(key.clone(), slot(RolloutState::Running));
    f.app.take_requests();
    let cloud = || {
        Action::Command(Command::Cloud {
            name: "dr-site".into(),
            region: None,
        })
    };
    f.app.update(cloud());
    assert!(!f
        .app
        .take_requests()
        .iter()
        .any(|r| matches!(r, Request::SwitchCloud { .. })));
    let screen = f.render(200, 60);
    assert!(screen.contains("a rollout runs here on"), "{screen}");
    // Paused, it lives in Heat's hooks: the console may leave.
    let paused = RolloutState::Paused {
        reason: "operator".into(),
    };
    f.app.store_mut().rollouts.insert(key, slot(paused));
    f.app.update(cloud());
    assert!(f
        .app
        .take_requests()
        .iter()
        .any(|r| matches!(r, Request::SwitchCloud { .. })));
}

/// #26 item 9: Enter on a fleet row opens that cluster: at once on this cloud; on another,
/// after the console has moved there and that cloud's cluster list has arrived.
#[tokio::test]
async fn enter_on_a_fleet_row_opens_its_cluster_here_or_on_its_cloud() {
    let mut f = Fleet::new(Some(Arc::new(FixedFleet(four_clouds().await))));
    drain(&mut f.app, &mut f.worker, &mut f.rx).await;
    let here = f.app.info().cloud.clone();
    f.open();
    f.until_done().await;
    // A row of another cloud: the console moves there first.
    let rows = f.app.store().fleet.rows.clone();
    let first = rows
        .iter()
        .position(|r| r.cloud == "staging" && !r.cluster.is_empty());
    let Some(pos) = first else {
        panic!("a staging row: {rows:?}")
    };
    for _ in 0..pos {
        f.app.update(Action::Key(KeyAction::Down));
    }
    let wanted = rows[pos].cluster.clone();
    f.app.update(Action::Key(KeyAction::Open));
    let asked = f.app.take_requests();
    assert!(
        asked
            .iter()
            .any(|r| matches!(r, Request::SwitchCloud { name, region }
            if name == "staging" && region.as_deref() == Some("RegionTwo"))),
        "{asked:?}"
    );
    let mut other = FakeCloud::demo(3).with_data(|d| d.clone());
    other.info.cloud = "staging".into();
    other.info.region = Some("RegionTwo".into());
    let next: Arc<dyn CloudService> = Arc::new(FakeCloud::new(other));
    f.worker.replace(next.clone(), None);
    f.app.update(Action::Switched {
        info: Box::new(next.info()),
        guard: None,
        notices: vec![],
    });
    drain(&mut f.app, &mut f.worker, &mut f.rx).await;
    match &f.app.view().kind {
        ViewKind::Dashboard { cluster } => assert_eq!(cluster.name, wanted),
        other => panic!("not the cluster's dashboard: {other:?}"),
    }
    assert_ne!(here, "staging");
}

/// #26 item 9: `:cloud` with no name lists the clouds of clouds.yaml, this one marked.
#[tokio::test]
async fn cloud_with_no_name_lists_the_clouds() {
    let mut f = Fleet::new(None);
    drain(&mut f.app, &mut f.worker, &mut f.rx).await;
    f.app.update(Action::Command(
        Command::parse(":cloud").expect("a command"),
    ));
    let asked = f.app.take_requests();
    assert!(matches!(&asked[..], [Request::ListClouds]), "{asked:?}");
    let here = f.app.info().cloud.clone();
    f.app.update(Action::Reply(Reply::Clouds {
        result: Ok((
            std::path::PathBuf::from("/etc/openstack/clouds.yaml"),
            vec!["dr-site".into(), here.clone()],
        )),
    }));
    let screen = f.render(120, 40);
    assert!(screen.contains("/etc/openstack/clouds.yaml:"), "{screen}");
    assert!(screen.contains("  dr-site"), "{screen}");
    assert!(
        screen.contains(&format!("● {here}  (this console's)")),
        "{screen}"
    );
    assert!(
        screen.contains(":cloud NAME [REGION] moves the console there"),
        "{screen}"
    );
}
