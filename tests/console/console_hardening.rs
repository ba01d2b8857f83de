//! The console under faults and abuse, driven through its public state machine:
//! - on the live service against the simulator with injected faults, the app shows the
//!   error where the data would be and recovers once the fault clears;
//! - resize storms (random and degenerate sizes, every view, keys in between) never panic
//!   and never draw outside the frame.

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::fetch::RetryPolicy;
use caldera::service::live::LiveService;
use caldera::service::CloudService;
use caldera::sim::{self, Fault, FaultKind, SimOptions};
use caldera::tui::config::resolve;
use caldera::tui::keys::KeyAction;
use caldera::tui::message::{Action, Command, Reply, Request};
use caldera::tui::state::App;
use caldera::tui::worker::Worker;
use caldera::tui::ConsoleOptions;
use caldera_testkit::fake::{demo_epoch, FakeCloud};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

struct Harness {
    app: App,
    worker: Worker,
    rx: UnboundedReceiver<Reply>,
    outstanding: usize,
}

fn options() -> ConsoleOptions {
    ConsoleOptions {
        no_config: true,
        theme_dir: Some(std::path::PathBuf::from("/nonexistent")),
        ..ConsoleOptions::default()
    }
}

impl Harness {
    fn new(svc: Arc<dyn CloudService>, now: chrono::DateTime<chrono::Utc>) -> Harness {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let worker = Worker::new(svc.clone(), tx);
        let mut app = App::new(svc.info(), resolve(&options()), now);
        app.set_budget(svc.budget());
        Harness {
            app,
            worker,
            rx,
            outstanding: 0,
        }
    }

    /// Hands the app's requests to the worker and applies answers until quiet (bounded).
    async fn settle(&mut self) {
        for _ in 0..10_000 {
            for req in self.app.take_requests() {
                if !matches!(req, Request::StopNodes { .. }) {
                    self.outstanding += 1;
                }
                self.worker.submit(req);
            }
            if self.outstanding == 0 {
                return;
            }
            let reply = tokio::time::timeout(Duration::from_secs(20), self.rx.recv())
                .await
                .expect("worker answered in time")
                .expect("channel open");
            if !matches!(reply, Reply::Nodes { .. }) {
                self.outstanding -= 1;
            }
            self.app.update(Action::Reply(reply));
        }
        panic!("the console did not settle");
    }

    fn key(&mut self, k: KeyAction) {
        self.app.update(Action::Key(k));
    }

    fn render(&mut self, w: u16, h: u16) -> String {
        self.app.update(Action::Resize(w, h));
        self.app.prepare();
        let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        terminal.draw(|f| self.app.draw(f)).expect("draw");
        terminal.backend().to_string()
    }
}

/// The simulator's `small` scenario, fast, and the live service on it with quick retries
/// (two attempts), so that an injected fault shows at once.
async fn small_live_sim() -> (sim::SimHandle, Arc<dyn CloudService>) {
    let sim = sim::start(SimOptions {
        scenario: "small".into(),
        speed: 20.0,
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        ..SimOptions::default()
    })
    .await
    .expect("simulator");
    let conn = CloudConnection::from_cloud(
        &sim.cloud_config(),
        &ConnectOptions {
            retry: RetryPolicy {
                max_attempts: 2,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_millis(20),
            },
            ..ConnectOptions::default()
        },
    )
    .await
    .expect("connect");
    (sim, Arc::new(LiveService::new(conn)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_console_shows_errors_in_place_and_recovers() {
    let (sim, svc) = small_live_sim().await;
    let f = sim.faults();
    f.add(Fault::new(FaultKind::Status(500)).on_path("/container-infra/v1/clusters"));
    let mut h = Harness::new(svc, chrono::Utc::now());
    h.settle().await;
    let err = h.app.store().clusters.meta.error.clone().expect("an error");
    assert!(err.contains("HTTP 500"), "{err}");
    assert!(h.app.store().clusters.data.is_none());
    let screen = h.render(160, 30);
    assert!(screen.contains("HTTP 500"), "{screen}");
    assert!(!h.app.should_quit());

    // The fault clears; a refresh brings the data and drops the error.
    f.clear();
    h.key(KeyAction::Refresh);
    h.settle().await;
    assert!(h.app.store().clusters.meta.error.is_none());
    assert_eq!(h.app.store().clusters.data.as_ref().map(Vec::len), Some(1));
    assert!(h.render(160, 30).contains("small"));

    // Heat now answers garbage: the dashboard, node groups and nodes views show errors in
    // their panes and every one of them still draws.
    f.add(Fault::new(FaultKind::Raw {
        status: 200,
        content_type: "text/html".into(),
        body: bytes::Bytes::from_static(b"<html>maintenance</html>"),
    }));
    h.key(KeyAction::Open);
    h.settle().await;
    h.app.plan_refresh(false);
    h.settle().await;
    let screen = h.render(200, 50);
    assert!(
        screen.contains("expected JSON") || screen.contains("text/html"),
        "{screen}"
    );
    for cmd in [
        Command::NodeGroups,
        Command::Nodes,
        Command::Events,
        Command::Tree,
    ] {
        h.app.update(Action::Command(cmd));
        h.settle().await;
        h.render(120, 40);
        h.render(20, 5);
    }
    // Stale data keeps its last good values with the error beside it.
    f.clear();
    f.add(Fault::new(FaultKind::Status(503)));
    h.app.update(Action::Command(Command::Clusters));
    h.key(KeyAction::Refresh);
    h.settle().await;
    assert!(h.app.store().clusters.data.is_some(), "stale data kept");
    assert!(h.app.store().clusters.meta.error.is_some());
    assert!(h.render(160, 30).contains("small"));
    assert!(!h.app.should_quit());
    f.clear();
    sim.shutdown().await;
}

/// The dashboard reads its cluster alone; when that read fails (a 503 on the cluster's own
/// path, the list still answering), the dashboard says so under the cluster's line, keeps
/// the last good figures, and drops the warning after the next good read.
#[tokio::test]
async fn a_dashboards_failed_cluster_read_is_shown_then_cleared() {
    let (sim, svc) = small_live_sim().await;
    let mut h = Harness::new(svc.clone(), chrono::Utc::now());
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    let cluster = svc.list_clusters().await.expect("clusters")[0].clone();
    let own = format!("/container-infra/v1/clusters/{}", cluster.id);
    let f = sim.faults();
    f.add(Fault::new(FaultKind::Status(503)).on_path(&own));
    h.app.plan_refresh(true);
    h.settle().await;
    let screen = h.render(200, 50);
    let line = screen
        .lines()
        .find(|l| l.contains("this cluster's last read failed"))
        .unwrap_or_else(|| panic!("no failed read shown:\n{screen}"));
    assert!(line.contains("HTTP 503"), "{line}");
    assert!(
        screen.contains(&format!("workers {}", cluster.node_count)),
        "{screen}"
    );
    f.clear();
    h.app.plan_refresh(true);
    h.settle().await;
    let screen = h.render(200, 50);
    assert!(!screen.contains("last read failed"), "{screen}");
    sim.shutdown().await;
}

/// Draws `app` at `w`x`h`, checking nothing lands outside the frame.
fn draw(app: &mut App, w: u16, h: u16) {
    app.update(Action::Resize(w, h));
    app.prepare();
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    let frame = terminal.draw(|f| app.draw(f)).expect("draw");
    assert_eq!(frame.area.width, w);
    assert_eq!(frame.area.height, h);
}

#[tokio::test]
async fn resize_storms_in_every_view_never_panic() {
    let fake = FakeCloud::demo(1000);
    let svc: Arc<dyn CloudService> = Arc::new(fake.clone());
    let mut h = Harness::new(svc, demo_epoch());
    h.settle().await;
    let mut rng = StdRng::seed_from_u64(0x5123);
    let keys = [
        KeyAction::Down,
        KeyAction::Up,
        KeyAction::PageDown,
        KeyAction::Bottom,
        KeyAction::Top,
        KeyAction::Open,
        KeyAction::Back,
        KeyAction::Help,
        KeyAction::HeatMap,
        KeyAction::Wrap,
        KeyAction::TimeMode,
        KeyAction::FaultsOnly,
        KeyAction::SortNext,
        KeyAction::Mark,
        KeyAction::Dashboard,
        KeyAction::Events,
        KeyAction::Tree,
        KeyAction::Filter,
        KeyAction::Palette,
    ];
    let commands = [
        Command::Clusters,
        Command::NodeGroups,
        Command::Nodes,
        Command::Stacks,
        Command::Events,
        Command::Tree,
        Command::Dashboard,
        Command::Help,
        Command::Faults,
    ];
    // Degenerate sizes first, in every view.
    let tiny = [
        (0, 0),
        (1, 1),
        (0, 24),
        (80, 0),
        (1, 40),
        (200, 1),
        (2, 2),
        (10, 3),
    ];
    for cmd in &commands {
        h.app.update(Action::Command(cmd.clone()));
        h.settle().await;
        for (w, ht) in tiny {
            draw(&mut h.app, w, ht);
        }
        // Back to normal mode for the next view (help and inputs are modal).
        h.key(KeyAction::Back);
    }
    // Then a storm: bursts of resizes without drawing (as a terminal being dragged sends
    // them), draws at random points, keys and views changing in between.
    let mut draws = 0;
    for round in 0..400 {
        for _ in 0..rng.gen_range(1..20) {
            let w = rng.gen_range(0..320);
            let ht = rng.gen_range(0..120);
            h.app.update(Action::Resize(w, ht));
        }
        let w = if rng.gen_bool(0.3) {
            rng.gen_range(0..12)
        } else {
            rng.gen_range(0..320)
        };
        let ht = if rng.gen_bool(0.3) {
            rng.gen_range(0..6)
        } else {
            rng.gen_range(0..120)
        };
        draw(&mut h.app, w, ht);
        draws += 1;
        if round % 7 == 0 {
            h.key(keys[rng.gen_range(0..keys.len())]);
            // Leave inputs and overlays so keys keep acting on views.
            if rng.gen_bool(0.5) {
                h.key(KeyAction::Back);
            }
        }
        if round % 23 == 0 {
            h.app.update(Action::Command(
                commands[rng.gen_range(0..commands.len())].clone(),
            ));
            fake.advance();
        }
        h.settle().await;
    }
    assert_eq!(draws, 400);
    // Still a working console: a normal-size frame shows the header.
    let screen = h.render(120, 30);
    assert!(
        screen.contains("SIMULATOR") || screen.contains("caldera"),
        "{screen}"
    );
}
