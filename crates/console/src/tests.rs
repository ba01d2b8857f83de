//! Console tests over the fake cloud: snapshots of every pane at 80x24 and 200x60 with
//! a fixed clock, plus behaviour (navigation, generations, selection by id, input).

use super::config::{resolve, ConsoleOptions};
use super::keys::KeyAction;
use super::message::{Action, Reply, Request};
use super::state::view::ViewKind;
use super::state::{App, Mode};
use super::worker::Worker;
use crate::service::fake::{demo_epoch, FakeCloud, FakeOp};
use crate::service::{CloudService, ErrorKind, ServiceError};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;

struct Harness {
    app: App,
    fake: FakeCloud,
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
    fn new(fake: FakeCloud) -> Harness {
        let svc: Arc<dyn CloudService> = Arc::new(fake.clone());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let worker = Worker::new(svc.clone(), tx);
        let mut app = App::new(svc.info(), resolve(&options()), demo_epoch());
        app.set_budget(svc.budget());
        Harness {
            app,
            fake,
            worker,
            rx,
            outstanding: 0,
        }
    }

    fn demo(nodes: u32) -> Harness {
        Harness::new(FakeCloud::demo(nodes))
    }

    /// Hand the app's requests to the worker and apply every answer until quiet.
    async fn settle(&mut self) {
        loop {
            for req in self.app.take_requests() {
                if !matches!(req, Request::StopNodes { .. }) {
                    self.outstanding += 1;
                }
                self.worker.submit(req);
            }
            if self.outstanding == 0 {
                break;
            }
            let reply = tokio::time::timeout(std::time::Duration::from_secs(10), self.rx.recv())
                .await
                .expect("worker answered")
                .expect("channel open");
            if !matches!(reply, Reply::Nodes { .. }) {
                self.outstanding -= 1;
            }
            self.app.update(Action::Reply(reply));
        }
    }

    fn key(&mut self, k: KeyAction) {
        self.app.update(Action::Key(k));
    }

    fn press(&mut self, code: KeyCode) {
        self.app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
    }

    fn type_str(&mut self, s: &str) {
        for c in s.chars() {
            self.press(KeyCode::Char(c));
        }
    }

    fn render(&mut self, w: u16, h: u16) -> String {
        self.app.update(Action::Resize(w, h));
        self.app.prepare();
        let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        terminal.draw(|f| self.app.draw(f)).expect("draw");
        terminal.backend().to_string()
    }

    /// Takes the app's requests: hands all but the node streams to the worker and returns
    /// those (node group id and generation), for a test to answer itself.
    fn node_streams(&mut self) -> Vec<(String, u64)> {
        let mut streams = Vec::new();
        for req in self.app.take_requests() {
            match req {
                Request::Nodes { nodegroup, gen } => streams.push((nodegroup.id, gen)),
                other => {
                    if !matches!(other, Request::StopNodes { .. }) {
                        self.outstanding += 1;
                    }
                    self.worker.submit(other);
                }
            }
        }
        streams
    }

    /// Open prod-k8s (first cluster) and go to `view`.
    async fn open_prod(&mut self) {
        self.settle().await;
        self.key(KeyAction::Open);
        self.settle().await;
        // The dashboard asks for nodes once the node groups are known.
        self.app.plan_refresh(false);
        self.settle().await;
    }
}

macro_rules! snap {
    ($h:expr, $name:literal) => {
        insta::assert_snapshot!(concat!($name, "_80x24"), $h.render(80, 24));
        insta::assert_snapshot!(concat!($name, "_200x60"), $h.render(200, 60));
    };
}

// ------------------------------------------------------------------ snapshots

#[tokio::test]
async fn snapshot_clusters_loading_loaded_error_empty() {
    let mut h = Harness::demo(1000);
    snap!(h, "clusters_loading");
    h.settle().await;
    snap!(h, "clusters");

    let mut h = Harness::demo(1000);
    h.fake.set_error(
        FakeOp::ListClusters,
        Some(ServiceError::new(
            ErrorKind::Transport,
            "GET /v1/clusters: connection refused",
        )),
    );
    h.settle().await;
    snap!(h, "clusters_error");

    let mut h = Harness::new(FakeCloud::default());
    h.app.info_mut().has_magnum = true;
    h.settle().await;
    snap!(h, "clusters_empty");
    assert!(!h.render(80, 24).contains("No Magnum endpoint"));
}

/// #26: at 40 columns the header line, pane titles and column headings are cut, each cut
/// marked `…` (the terminal's edge and the pane's border used to cut them silently).
#[tokio::test]
async fn at_40_columns_every_cut_is_marked() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    let screen = h.render(40, 24);
    insta::assert_snapshot!("clusters_40x24", screen);
    let lines: Vec<&str> = screen.lines().collect();
    // The header (its first segment alone is wider than 40 columns), the title, the headings.
    assert!(lines[0].contains('…'), "{screen}");
    assert!(lines[3].contains("…"), "{screen}");
    h.open_prod().await;
    insta::assert_snapshot!("dashboard_1000_40x24", h.render(40, 24));
}

/// #26: the help box is as wide as its widest row, up to the terminal: on 200 columns
/// nothing in it is cut (the `:cloud` row's aliases were, at a fixed 100); where two columns
/// of it fit side by side and one does not fit the height, it takes two, and scrolls half
/// as far.
#[tokio::test]
async fn the_help_is_sized_by_its_rows_in_two_columns_when_wide() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.press(KeyCode::Char('?'));
    let rows = h.app.help_text().rows.len();
    h.render(200, 60);
    h.press(KeyCode::Char('G'));
    let screen = h.render(200, 60);
    let cloud = screen
        .lines()
        .find(|l| l.contains(":cloud "))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(cloud.contains("(also :ctx)"), "{cloud}");
    h.press(KeyCode::Char('g'));
    let screen = h.render(240, 50);
    insta::assert_snapshot!("help_240x50", screen);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("│Global ") && l.contains(" Journal ")),
        "{screen}"
    );
    let (page, last) = h.app.help_page();
    // Split at the section nearest the middle: about half the lines to scroll.
    let lines = usize::from(page + last);
    assert!(
        lines < rows * 2 / 3,
        "{lines} lines of {rows} rows:\n{screen}"
    );
}

#[tokio::test]
async fn heat_only_cloud_says_why_there_are_no_clusters() {
    let mut h = Harness::new(FakeCloud::default());
    h.app.info_mut().has_magnum = false;
    h.settle().await;
    let screen = h.render(100, 24);
    assert!(
        screen.contains("No Magnum endpoint on this cloud") && screen.contains(":stacks"),
        "{screen}"
    );
}

#[tokio::test]
async fn snapshot_stale_after_failed_refresh() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.fake.set_error(
        FakeOp::ListClusters,
        Some(ServiceError::new(
            ErrorKind::Http,
            "HTTP 503 from container-infra",
        )),
    );
    h.key(KeyAction::Refresh);
    h.settle().await;
    snap!(h, "clusters_stale");
}

#[tokio::test]
async fn snapshot_dashboard_1000_nodes() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    assert!(matches!(h.app.view().kind, ViewKind::Dashboard { .. }));
    snap!(h, "dashboard_1000");
}

/// #15: during the Magnum upgrade the dashboard's line says old / updating / new, each node
/// group's nodes against its own image (the sum of what each group's nodes pane says), and
/// the heat map goes by image with its legend; once every node is on its group's image the
/// map and the line go back to statuses.
#[tokio::test]
async fn dashboard_counts_by_image_during_an_upgrade_only() {
    use crate::model::{ImagePhase, Status};
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    let c = h.fake.list_clusters().await.unwrap()[0].clone();
    let groups = h.fake.list_nodegroups(c).await.unwrap();
    // Only the groups with a member on another image are being upgraded: their members on
    // the image are new, those held on a hook held; another group's members are idle.
    let (new, held, total) = h.fake.with_data(|d| {
        let mut out = (0, 0, 0);
        for g in &groups {
            let nodes = d.nodes.get(&g.id).map(Vec::as_slice).unwrap_or(&[]);
            out.2 += nodes.len();
            let phase = |n: &crate::model::Node| n.image_phase(g.image.as_deref());
            if !nodes.iter().any(|n| phase(n) == Some(ImagePhase::Old)) {
                continue;
            }
            let ok = |n: &&crate::model::Node| !n.status.is_failed();
            out.0 += nodes
                .iter()
                .filter(ok)
                .filter(|n| phase(n) == Some(ImagePhase::New))
                .count();
            out.1 += nodes.iter().filter(ok).filter(|n| n.hook_paused).count();
        }
        out
    });
    assert!(new > 0 && held > 0, "{new} {held}");
    let screen = h.render(200, 60);
    let line = format!("█ new {new}/{total}  ▓ updating");
    assert!(screen.contains(&line), "{line}\n{screen}");
    assert!(screen.contains(&format!("‖ held {held}")), "{screen}");
    assert!(
        screen.contains("Fleet heat map █ new ▓ updating ‖ held"),
        "{screen}"
    );
    // The upgrade is over: every node on its group's image, done.
    h.fake.with_data(|d| {
        for g in &groups {
            for n in d.nodes.get_mut(&g.id).into_iter().flatten() {
                n.image.clone_from(&g.image);
                n.status = Status::parse("UPDATE_COMPLETE");
                n.hook_paused = false;
            }
        }
    });
    h.app.plan_refresh(true);
    h.settle().await;
    let screen = h.render(200, 60);
    assert!(!screen.contains("‖ held"), "{screen}");
    assert!(screen.contains("█ complete 1003"), "{screen}");
}

/// The first member list of a load mid-upgrade comes before the images and hook marks (the
/// stream's `Listed`): Heat calls the members not reached yet complete and the held ones in
/// progress, so the line says that both are still being read and claims no pace or
/// percentiles; the full list then counts by image.
#[tokio::test]
async fn a_first_member_list_mid_upgrade_claims_no_done_before_the_images() {
    use crate::service::NodeUpdate;
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    h.app.plan_refresh(false);
    // Answer each node group's stream with provisional lists only, as the worker would
    // before the hook lookup (`marks` false) and the images (`Members`) come in.
    let streams = h.node_streams();
    assert!(!streams.is_empty(), "the dashboard asked for no nodes");
    let listed = |h: &mut Harness, streams: &[(String, u64)], marks: bool| {
        for (id, gen) in streams {
            let nodes = h.fake.with_data(|d| {
                let nodes = d.nodes.get(id).cloned().unwrap_or_default();
                let bare = |mut n: crate::model::Node| {
                    (n.image, n.ip) = (None, None);
                    n.hook_paused &= marks;
                    n
                };
                nodes.into_iter().map(bare).collect()
            });
            h.app.update(Action::Reply(Reply::Nodes {
                nodegroup_id: id.clone(),
                gen: *gen,
                update: Ok(NodeUpdate::Listed { nodes, marks }),
            }));
        }
    };
    listed(&mut h, &streams, false);
    let screen = h.render(200, 60);
    assert!(screen.contains("⟳ reading images and hooks"), "{screen}");
    for derived in ["ETA", "p50", "█ new"] {
        assert!(!screen.contains(derived), "{derived}: {screen}");
    }
    let narrow = h.render(80, 24);
    assert!(narrow.contains("⟳ reading images"), "{narrow}");
    // The hook lookup answered: the held members are counted, the images still awaited.
    listed(&mut h, &streams, true);
    let screen = h.render(200, 60);
    assert!(screen.contains("⟳ reading images"), "{screen}");
    assert!(!screen.contains("reading images and hooks"), "{screen}");
    assert!(!screen.contains("held 0"), "{screen}");
    // The full lists: by image, and nothing pending any more.
    h.settle().await;
    h.app.plan_refresh(true);
    h.settle().await;
    let screen = h.render(200, 60);
    assert!(screen.contains("█ new"), "{screen}");
    assert!(!screen.contains("⟳ reading"), "{screen}");
    // A refresh's provisional list keeps what was known: still by image.
    h.app.plan_refresh(true);
    let streams = h.node_streams();
    assert!(!streams.is_empty(), "the refresh asked for no nodes");
    listed(&mut h, &streams, false);
    let screen = h.render(200, 60);
    assert!(screen.contains("█ new"), "{screen}");
    assert!(!screen.contains("⟳ reading"), "{screen}");
}

/// The HOOK column says `held`, the word of the summary's count it is drawn from (it said
/// Heat's `paused` beside `2 held`): a member's cell is its phase in the group's model. A hold
/// whose pause event Heat purged is `held (inferred)`.
#[tokio::test]
async fn the_hook_column_says_which_holds_are_inferred() {
    let mut h = Harness::demo(1000);
    h.fake.with_data(|d| {
        let g = d.nodegroups.iter().find(|g| g.name == "default-worker");
        let id = g.expect("default-worker").id.clone();
        for (i, n) in d
            .nodes
            .get_mut(&id)
            .expect("its nodes")
            .iter_mut()
            .enumerate()
        {
            n.hook_paused = i < 2;
            n.hook_inferred = i == 1;
        }
    });
    h.settle().await;
    h.app
        .update(Action::Command(super::message::Command::NodeGroups));
    h.settle().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    let screen = h.render(120, 40);
    let row = |member: &str| {
        let name = format!("prod-k8s-default-worker-{member} ");
        screen
            .lines()
            .find(|l| l.contains(&name))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("0").contains(" held "), "{screen}");
    assert!(row("1").contains(" held (inferred) "), "{screen}");
    assert!(!row("2").contains("held"), "{screen}");
    assert!(!screen.contains("paused"), "{screen}");
    // The count beside the map is of the same fact.
    assert!(screen.contains("‖ 2 held"), "{screen}");
}

#[tokio::test]
async fn snapshot_nodegroups_and_nodes_1000() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.app
        .update(Action::Command(super::message::Command::NodeGroups));
    h.settle().await;
    // The next tick reads the members of the groups under an update: their rows show the
    // progress model.
    h.app.plan_refresh(false);
    h.settle().await;
    snap!(h, "nodegroups");
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    // The node groups read the members of the group under an update: shown at once.
    snap!(h, "nodes_opened");
    h.settle().await;
    assert!(
        matches!(&h.app.view().kind, ViewKind::Nodes { nodegroup, .. } if nodegroup.name == "default-worker")
    );
    snap!(h, "nodes_800");
    // Faults only.
    h.key(KeyAction::FaultsOnly);
    snap!(h, "nodes_faults_only");
}

#[tokio::test]
async fn snapshot_nodes_error_and_10000() {
    let mut h = Harness::demo(1000);
    h.fake.set_error(
        FakeOp::StreamNodes,
        Some(ServiceError::new(
            ErrorKind::Http,
            "GET stacks/prod-k8s-default-worker/resources: HTTP 500",
        )),
    );
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    snap!(h, "nodes_error");

    let mut h = Harness::demo(10_000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    snap!(h, "nodes_8000");
}

#[tokio::test]
async fn snapshot_events_tail_modes() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Events { .. }));
    snap!(h, "events");
    h.key(KeyAction::TimeMode);
    h.key(KeyAction::Wrap);
    snap!(h, "events_abs_wrap");
    h.key(KeyAction::Wrap);
    h.key(KeyAction::PausePoll);
    h.press(KeyCode::Char('/'));
    h.type_str("re:hook.*cleared|FAILED");
    snap!(h, "events_filter_typing");
    h.press(KeyCode::Enter);
    snap!(h, "events_filtered");
    // Wrapping keeps the filter (and the filtered count) in the title.
    h.key(KeyAction::Wrap);
    let screen = h.render(200, 60);
    let title = screen
        .lines()
        .find(|l| l.contains("Events of"))
        .unwrap_or_default();
    assert!(title.contains("/re:hook.*cleared|FAILED"), "{screen}");
    snap!(h, "events_filtered_wrap");
}

#[tokio::test]
async fn snapshot_tree_and_why_stuck() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Tree);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Tree { .. }));
    snap!(h, "tree");
    // Enter on the ResourceGroup drills into its nested stack.
    h.key(KeyAction::Open);
    h.settle().await;
    snap!(h, "tree_nested");
    assert_eq!(h.app.nav().len(), 4);
}

#[tokio::test]
async fn snapshot_stacks_help_palette() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.press(KeyCode::Char(':'));
    h.type_str("st");
    snap!(h, "palette_typing");
    h.press(KeyCode::Enter);
    h.settle().await;
    snap!(h, "stacks");
    h.press(KeyCode::Char('?'));
    snap!(h, "help");
    assert!(matches!(h.app.mode(), Mode::Help(0)));
    // PgDn moves a whole page (the rows the screen shows), not a fixed 10.
    let (page, last) = h.app.help_page();
    assert!(page > 10 && last > 1, "{page} {last}");
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::PageDown);
    assert!(matches!(h.app.mode(), Mode::Help(n) if *n == (page + 1).min(last)));
    snap!(h, "help_scrolled");
    // G goes to the end of the help, g back to the top; neither closes it. From the end, k
    // moves at once (the scroll stops at the last page, not far past it).
    h.press(KeyCode::Char('G'));
    assert!(matches!(h.app.mode(), Mode::Help(n) if *n == last));
    h.press(KeyCode::Char('k'));
    assert!(matches!(h.app.mode(), Mode::Help(n) if *n == last - 1));
    // Every palette command is listed, its aliases apart from what it does.
    let rows = h.app.help_text().rows;
    let names: Vec<String> = super::message::COMMANDS
        .iter()
        .map(|c| format!(":{}", c.name))
        .collect();
    assert!(names.len() >= 20);
    for name in &names {
        assert!(
            rows.iter().any(
                |r| matches!(r, crate::state::help::HelpRow::Command { name: n, .. } if n == name)
            ),
            "{name}"
        );
    }
    h.press(KeyCode::Char('g'));
    assert!(matches!(h.app.mode(), Mode::Help(0)));
    h.press(KeyCode::Esc);
    assert!(matches!(h.app.mode(), Mode::Normal));
}

#[tokio::test]
async fn snapshot_light_and_high_contrast_render() {
    let mut h = Harness::demo(100);
    h.open_prod().await;
    h.app.update(Action::Command(super::message::Command::Theme(
        "high-contrast".into(),
    )));
    snap!(h, "dashboard_high_contrast");
    assert_eq!(h.app.theme().name, "high-contrast");
}

// ------------------------------------------------------------------ behaviour

#[tokio::test]
async fn stale_generation_is_dropped_after_forced_refresh() {
    let mut h = Harness::demo(10);
    let first = h.app.take_requests();
    let Some(Request::Clusters { gen: old }) = first.first().cloned() else {
        panic!("expected a clusters request, got {first:?}");
    };
    h.key(KeyAction::Refresh);
    let second = h.app.take_requests();
    let Some(Request::Clusters { gen: new }) = second.first().cloned() else {
        panic!("expected a clusters request");
    };
    assert!(new > old);
    // The old answer arrives late with different data: dropped.
    h.app.update(Action::Reply(Reply::Clusters {
        gen: old,
        result: Ok(vec![]),
    }));
    assert!(h.app.store().clusters.data.is_none());
    assert_eq!(h.app.store().clusters.meta.dropped, 1);
    let clusters = h.fake.list_clusters().await.unwrap();
    h.app.update(Action::Reply(Reply::Clusters {
        gen: new,
        result: Ok(clusters),
    }));
    assert_eq!(h.app.store().clusters.data.as_ref().map(Vec::len), Some(4));
}

#[tokio::test]
async fn refreshes_coalesce_one_pending_per_view() {
    let mut h = Harness::demo(10);
    assert_eq!(h.app.take_requests().len(), 1);
    for s in 1..5 {
        h.app.update(Action::Tick {
            now: demo_epoch() + chrono::Duration::seconds(s * 10),
            info: Box::new(h.fake.info()),
            budget: h.fake.budget(),
        });
    }
    assert!(
        h.app.take_requests().is_empty(),
        "pending request must not be repeated"
    );
}

#[tokio::test]
async fn node_selection_survives_live_updates() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::SortNext); // sort by '#'
    h.key(KeyAction::SortNext); // by NAME
    h.key(KeyAction::SortNext); // by IP
    h.key(KeyAction::SortReverse);
    h.app.prepare();
    for _ in 0..37 {
        h.key(KeyAction::Down);
    }
    h.app.prepare();
    let before = h.app.view().table.selected_id().map(str::to_string);
    assert!(before.is_some());
    for _ in 0..3 {
        h.fake.advance();
    }
    h.key(KeyAction::Refresh);
    h.settle().await;
    h.app.prepare();
    assert_eq!(h.app.view().table.selected_id().map(str::to_string), before);
    let pos = h.app.view().table.selected_pos();
    let rows = &h
        .app
        .store()
        .nodes
        .values()
        .find(|s| s.rows.len() == 800)
        .unwrap()
        .rows;
    let sel = h
        .app
        .view()
        .table
        .selected(rows)
        .map(|r| r.node.key.member.clone());
    assert_eq!(sel, before, "selected row at {pos:?}");
}

#[tokio::test]
async fn server_names_fill_in_without_moving_rows_or_selection() {
    use crate::model::NodeAddress;
    use crate::service::NodeUpdate;
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::SortNext); // by '#'
    h.app.prepare();
    for _ in 0..37 {
        h.key(KeyAction::Down);
    }
    h.app.prepare();
    let ng = match &h.app.view().kind {
        ViewKind::Nodes { nodegroup, .. } => nodegroup.id.clone(),
        other => panic!("not the nodes pane: {other:?}"),
    };
    let members_in_view = |h: &Harness| -> Vec<String> {
        let rows = &h.app.store().nodes[&ng].rows;
        let view = h.app.view().table.view();
        view.iter()
            .map(|&i| rows[i].node.key.member.clone())
            .collect()
    };
    let order = members_in_view(&h);
    let selected = h.app.view().table.selected_id().map(str::to_string);
    assert_eq!(selected.as_deref(), Some(order[37].as_str()));

    // Names arrive in the reverse order of the members, one on an address, the rest late.
    let now = demo_epoch();
    let set = h.app.store_mut().nodes.get_mut(&ng).expect("node set");
    let gen = set.meta.gen;
    let total = set.rows.len();
    let name_of = |pos: usize| format!("srv-{:04}", total - pos);
    let rows: Vec<(String, Option<u32>)> = set
        .rows
        .iter()
        .map(|r| (r.node.key.member.clone(), r.node.index))
        .collect();
    for (pos, (member, index)) in rows.iter().enumerate() {
        let update = if pos == 0 {
            NodeUpdate::Address(NodeAddress {
                member: member.clone(),
                index: *index,
                addresses: vec!["10.99.0.1".into()],
                name: Some(name_of(pos)),
                networks: Default::default(),
                outputs: Default::default(),
                left_out: 0,
            })
        } else {
            NodeUpdate::Named {
                member: member.clone(),
                name: name_of(pos),
            }
        };
        assert!(set.apply(gen, Ok(update), now));
    }
    h.app.prepare();
    assert_eq!(
        members_in_view(&h),
        order,
        "names do not reorder a sort by '#'"
    );
    assert_eq!(
        h.app.view().table.selected_id().map(str::to_string),
        selected
    );
    let set = &h.app.store().nodes[&ng];
    assert!(set
        .rows
        .iter()
        .enumerate()
        .all(|(p, r)| r.node.name == name_of(p)));

    // A re-sent member list (names are member names there) keeps the server names.
    let resent: Vec<_> = set
        .rows
        .iter()
        .map(|r| {
            let mut n = r.node.clone();
            n.name = n.key.member.clone();
            n.ip = None;
            n
        })
        .collect();
    let set = h.app.store_mut().nodes.get_mut(&ng).expect("node set");
    assert!(set.apply(gen, Ok(NodeUpdate::Members(resent)), now));
    assert!(set
        .rows
        .iter()
        .enumerate()
        .all(|(p, r)| r.node.name == name_of(p)));

    // Sorted by NAME, the order follows the names and the selection stays on its id.
    h.key(KeyAction::SortNext);
    h.app.prepare();
    let mut by_name = order.clone();
    by_name.reverse();
    assert_eq!(members_in_view(&h), by_name);
    assert_eq!(
        h.app.view().table.selected_id().map(str::to_string),
        selected
    );
}

#[tokio::test]
async fn events_follow_new_events_and_save_to_file() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    let count = |h: &Harness| {
        h.app
            .store()
            .events
            .values()
            .map(|l| l.events.len())
            .max()
            .unwrap_or(0)
    };
    let n0 = count(&h);
    h.fake.advance();
    h.key(KeyAction::Refresh);
    h.settle().await;
    let n1 = count(&h);
    assert!(n1 > n0, "{n1} > {n0}");
    h.app.prepare();
    assert_eq!(
        h.app.view().table.selected_pos(),
        Some(n1 - 1),
        "follow keeps the newest selected"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ev.txt");
    h.key(KeyAction::Save);
    assert!(matches!(h.app.mode(), Mode::Input(_)));
    // Replace the suggested name with our path.
    h.app
        .on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    h.type_str(&path.display().to_string());
    h.press(KeyCode::Enter);
    h.settle().await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), n1);
    assert!(text.contains("UPDATE_IN_PROGRESS"));
    assert!(h.app.status().as_ref().unwrap().text.contains("saved"));
}

#[tokio::test]
async fn nodes_command_opens_any_stack_as_its_nodes() {
    // A stack that is no cluster's: `:nodes` shows its groups' members (the live service
    // streams every scaling group of the stack, see ops::discover).
    let mut h = Harness::demo(10);
    h.settle().await;
    h.press(KeyCode::Char(':'));
    h.type_str("stacks");
    h.press(KeyCode::Enter);
    h.settle().await;
    h.render(80, 24);
    let selected = {
        let v = h.app.view();
        v.table
            .selected(h.app.store().stacks.data.as_deref().unwrap_or(&[]))
            .map(|s| s.stack.clone())
            .expect("a stack selected")
    };
    h.press(KeyCode::Char(':'));
    h.type_str("nodes");
    h.press(KeyCode::Enter);
    match &h.app.view().kind {
        ViewKind::Nodes { nodegroup, .. } => {
            assert_eq!(nodegroup.stack_id.as_deref(), Some(selected.id.as_str()));
            assert_eq!(nodegroup.name, selected.name);
            assert!(crate::state::is_stack_standin(nodegroup));
        }
        other => panic!("not the nodes pane: {other:?}"),
    }
}

#[tokio::test]
async fn node_groups_and_dashboard_open_any_stack_in_context() {
    // A stack that is no cluster's: `:ng` and `:dash` open it as a cluster whose node groups
    // the service discovers (service::plain_stack), not "no cluster selected".
    let mut h = Harness::demo(10);
    h.settle().await;
    h.press(KeyCode::Char(':'));
    h.type_str("stacks");
    h.press(KeyCode::Enter);
    h.settle().await;
    h.render(80, 24);
    let selected = {
        let v = h.app.view();
        v.table
            .selected(h.app.store().stacks.data.as_deref().unwrap_or(&[]))
            .map(|s| s.stack.clone())
            .expect("a stack selected")
    };
    for (command, dashboard) in [("ng", false), ("dash", true)] {
        h.press(KeyCode::Char(':'));
        h.type_str(command);
        h.press(KeyCode::Enter);
        let cluster = match (&h.app.view().kind, dashboard) {
            (ViewKind::NodeGroups { cluster }, false) | (ViewKind::Dashboard { cluster }, true) => {
                cluster.clone()
            }
            (other, _) => panic!(":{command} opened {other:?}"),
        };
        assert_eq!(cluster.id, selected.id);
        assert_eq!(cluster.name, selected.name);
        assert!(crate::service::plain_stack::is_plain_stack(&cluster));
        h.press(KeyCode::Esc);
        assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    }
}

#[tokio::test]
async fn palette_history_and_unknown_command() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.press(KeyCode::Char(':'));
    h.type_str("bogus");
    h.press(KeyCode::Enter);
    assert!(h
        .app
        .status()
        .as_ref()
        .unwrap()
        .text
        .contains("unknown command"));
    h.press(KeyCode::Char(':'));
    h.type_str("stacks");
    h.press(KeyCode::Enter);
    assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    h.press(KeyCode::Char(':'));
    h.press(KeyCode::Up);
    let Mode::Input(input) = h.app.mode() else {
        panic!("palette open");
    };
    assert_eq!(input.text(), "stacks");
    h.press(KeyCode::Up);
    let Mode::Input(input) = h.app.mode() else {
        panic!("palette open");
    };
    assert_eq!(input.text(), "bogus");
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char(':'));
    h.type_str("q");
    h.press(KeyCode::Enter);
    assert!(h.app.should_quit());
}

#[tokio::test]
async fn back_clears_filter_first_then_pops() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    assert_eq!(h.app.nav().len(), 2);
    h.press(KeyCode::Char('/'));
    h.type_str("!master");
    h.press(KeyCode::Enter);
    h.app.prepare();
    assert_eq!(h.app.view().table.len(), 2);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.nav().len(), 2);
    h.app.prepare();
    assert_eq!(h.app.view().table.len(), 3);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.nav().len(), 1);
}

/// `/` starts a fresh filter, as in less and k9s: the input opens empty (it opened holding
/// the last filter, so typing appended to it), the current filter stays applied until a new
/// one is entered, Esc keeps it, and Enter on the empty input clears it.
#[tokio::test]
async fn slash_starts_a_fresh_filter_and_keeps_the_old_until_enter() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    let all = {
        h.app.prepare();
        h.app.view().table.len()
    };
    let shown = |h: &mut Harness| {
        h.app.prepare();
        h.app.view().table.len()
    };
    h.press(KeyCode::Char('/'));
    h.type_str("!master");
    h.press(KeyCode::Enter);
    let filtered = shown(&mut h);
    assert!(filtered < all, "{filtered} of {all}");
    // A fresh input: nothing in it, the old filter still applied (and said in the prompt).
    h.press(KeyCode::Char('/'));
    let Mode::Input(input) = h.app.mode() else {
        panic!("the filter input is open");
    };
    assert_eq!(input.text(), "");
    assert_eq!(shown(&mut h), filtered);
    let screen = h.render(120, 30);
    assert!(screen.contains("now /!master"), "{screen}");
    // Typing shows the new one; Esc keeps the old.
    h.type_str("gpu");
    assert_ne!(shown(&mut h), filtered);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.view().table.filter().raw(), "!master");
    assert_eq!(shown(&mut h), filtered);
    // A new one replaces it (not appended to it).
    h.press(KeyCode::Char('/'));
    h.type_str("gpu");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.view().table.filter().raw(), "gpu");
    // Enter on the empty input clears it.
    h.press(KeyCode::Char('/'));
    h.press(KeyCode::Enter);
    assert_eq!(h.app.view().table.filter().raw(), "");
    assert_eq!(shown(&mut h), all);
}

#[tokio::test]
async fn config_problems_show_in_status_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "theme = \"dark\"\n[keys]\nquit = [\"q\"]\nzap = [\"z\"]\n",
    )
    .unwrap();
    let fake = FakeCloud::demo(10);
    let opts = ConsoleOptions {
        config_path: Some(cfg.clone()),
        theme_dir: Some(dir.path().to_path_buf()),
        ..ConsoleOptions::default()
    };
    let app = App::new(fake.info(), resolve(&opts), demo_epoch());
    let status = app.status().as_ref().unwrap().text.clone();
    assert!(
        status.contains(&format!("{}:4:", cfg.display())),
        "{status}"
    );
    assert!(status.contains("zap"), "{status}");
}

#[tokio::test]
async fn ten_thousand_nodes_stay_cheap_per_frame() {
    use std::time::Instant;
    let mut h = Harness::demo(10_000);
    h.open_prod().await;
    let frame = |h: &mut Harness, n: u32| {
        let t = Instant::now();
        for _ in 0..n {
            h.render(120, 40);
        }
        t.elapsed() / n
    };
    let dash = frame(&mut h, 5);
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    let nodes = frame(&mut h, 5);
    // A new member list (live update) with a filter and a sort active: full recompute.
    h.press(KeyCode::Char('/'));
    h.type_str("fedora");
    h.press(KeyCode::Enter);
    h.key(KeyAction::SortNext);
    h.key(KeyAction::SortNext);
    h.key(KeyAction::SortNext);
    let t = Instant::now();
    h.fake.advance();
    h.key(KeyAction::Refresh);
    h.settle().await;
    let refresh = t.elapsed();
    let recompute = frame(&mut h, 1);
    let t = Instant::now();
    for _ in 0..1000 {
        h.key(KeyAction::Down);
    }
    let keys = t.elapsed() / 1000;
    eprintln!(
        "10k nodes (120x40, debug build): dashboard frame {dash:?}, nodes frame {nodes:?}, \
         refresh+stream of 8000 nodes {refresh:?}, frame after refresh {recompute:?}, key {keys:?}"
    );
    assert!(h.app.view().table.len() == 8000);
    assert!(dash.as_millis() < 500 && nodes.as_millis() < 500 && keys.as_millis() < 20);
}

#[tokio::test]
async fn snapshot_empty_panes_and_read_only() {
    let mut h = Harness::demo(1000);
    h.app.set_read_only(true);
    h.settle().await;
    h.key(KeyAction::Down); // staging: healthy, no events
    h.key(KeyAction::Open);
    h.settle().await;
    h.app.plan_refresh(false);
    h.settle().await;
    snap!(h, "dashboard_no_events_read_only");
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    snap!(h, "events_empty");
    let mut h = Harness::demo(1000);
    h.fake
        .with_data(|d| d.nodegroups.retain(|g| !g.cluster_id.starts_with("edge")));
    h.settle().await;
    h.key(KeyAction::Bottom); // edge-native: no node groups left
    h.app
        .update(Action::Command(super::message::Command::NodeGroups));
    h.settle().await;
    snap!(h, "nodegroups_empty");
}

#[tokio::test]
async fn statuses_are_coloured_from_the_theme() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.app.update(Action::Resize(120, 20));
    h.app.prepare();
    let mut terminal = Terminal::new(TestBackend::new(120, 20)).unwrap();
    terminal.draw(|f| h.app.draw(f)).unwrap();
    let buf = terminal.backend().buffer().clone();
    let find = |text: &str| -> (u16, u16) {
        for y in 0..buf.area.height {
            let line: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            if let Some(x) = line.find(text) {
                return (line[..x].chars().count() as u16, y);
            }
        }
        panic!("{text} not on screen");
    };
    let (x, y) = find("CREATE_FAILED");
    assert_eq!(buf[(x, y)].fg, h.app.theme().failed);
    let (x, y) = find("UPDATE_IN_PROGRESS");
    assert_eq!(buf[(x, y)].fg, h.app.theme().in_progress);
    let (x, y) = find(" HEALTHY");
    assert_eq!(buf[(x + 1, y)].fg, h.app.theme().healthy);
    let (x, y) = find("SIMULATOR");
    assert_eq!(buf[(x, y)].bg, h.app.theme().simulator_bg);
}

#[tokio::test]
async fn freeze_keeps_the_screen_and_applies_on_thaw() {
    let mut h = Harness::demo(10);
    h.key(KeyAction::Freeze);
    h.settle().await;
    assert!(
        h.app.store().clusters.data.is_none(),
        "frozen: answers wait"
    );
    h.key(KeyAction::Freeze);
    assert_eq!(h.app.store().clusters.data.as_ref().map(Vec::len), Some(4));
}

#[tokio::test]
async fn every_view_draws_at_tiny_sizes_without_panicking() {
    let mut h = Harness::demo(300);
    h.settle().await;
    let sizes = [(1, 1), (10, 3), (30, 8), (45, 12)];
    let draw_all = |h: &mut Harness| {
        for (w, hh) in sizes {
            h.render(w, hh);
        }
    };
    draw_all(&mut h);
    h.key(KeyAction::Open);
    h.settle().await;
    h.app.plan_refresh(false);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Tree);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Events);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Wrap);
    draw_all(&mut h);
    h.key(KeyAction::Help);
    draw_all(&mut h);
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char(':'));
    draw_all(&mut h);
}

/// The events view through an outage: polls fail, the status line says for how long the
/// follower has been reconnecting and when it tries next (backing off), the events already
/// shown stay, and when the cloud answers again the follower carries on from its cursor.
#[tokio::test]
async fn events_view_reconnects_with_backoff_and_says_so() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    let shown = |h: &Harness| h.app.store().events.values().map(|l| l.events.len()).max();
    let before = shown(&h).expect("events shown");
    h.fake.set_error(
        FakeOp::PollEvents,
        Some(ServiceError::new(
            ErrorKind::Transport,
            "GET http://heat/v1/p/stacks/x/events: connection failed",
        )),
    );
    let mut now = demo_epoch();
    let mut tick = |h: &mut Harness, secs: i64| {
        now += chrono::Duration::seconds(secs);
        h.app.update(Action::Tick {
            now,
            info: Box::new(h.fake.info()),
            budget: h.fake.budget(),
        });
    };
    let mut waits = Vec::new();
    for _ in 0..4 {
        // Past any refresh interval: the follower polls when its backoff says so.
        tick(&mut h, 40);
        h.settle().await;
        let status = h.app.status().cloned().expect("a status line");
        assert!(
            status.text.contains("events: reconnecting for")
                && status.text.contains("connection failed"),
            "{}",
            status.text
        );
        let next = status
            .text
            .split("next try in ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .expect("next try");
        waits.push(next);
    }
    assert_eq!(waits, vec![1, 2, 4, 8], "the wait doubles while it fails");
    assert_eq!(shown(&h), Some(before), "what was shown stays");
    // The backoff holds the next poll back: a second later nothing is asked.
    tick(&mut h, 1);
    assert!(
        !h.app
            .take_requests()
            .iter()
            .any(|r| matches!(r, Request::Events { .. })),
        "polled before the backoff elapsed"
    );
    h.fake.set_error(FakeOp::PollEvents, None);
    h.fake.advance();
    tick(&mut h, 10);
    h.settle().await;
    let status = h.app.status().cloned().expect("a status line");
    assert!(
        status.text.starts_with("events: reconnected after"),
        "{}",
        status.text
    );
    assert!(
        shown(&h) > Some(before),
        "new events arrive after the outage"
    );
}

/// A service that timed out is named in the header, next to the cloud.
#[tokio::test]
async fn header_names_a_service_that_does_not_answer() {
    use crate::service::health::{Api, Availability, ServiceHealth};
    let mut h = Harness::demo(10);
    h.settle().await;
    let mut info = h.fake.info();
    info.services = vec![
        ServiceHealth {
            api: Api::Heat,
            health: Availability::Up,
            detail: None,
        },
        ServiceHealth {
            api: Api::Magnum,
            health: Availability::Slow,
            detail: Some("no answer within 10 s".into()),
        },
    ];
    h.app.update(Action::Tick {
        now: demo_epoch(),
        info: Box::new(info),
        budget: h.fake.budget(),
    });
    let screen = h.render(120, 30);
    let header = screen.lines().next().unwrap_or_default();
    assert!(header.contains("magnum: no answer within 10 s"), "{header}");
    assert!(
        !header.contains("heat ok"),
        "healthy services stay quiet: {header}"
    );
}

// ------------------------------------------------------------------ node detail

/// A failed server as Nova shows it to an admin: a long fault, its traceback, two networks
/// and a console log with colours and hostile bytes in it.
fn failed_server(name: &str) -> crate::model::ServerDetail {
    use crate::model::server::{console_lines, ServerAddr};
    use crate::model::{ConsoleTail, ServerDetail, ServerFault};
    let at = demo_epoch() - chrono::Duration::minutes(42);
    let console = "[    0.000000] Linux version 5.15.0\r\n\u{1b}[0;32m[  OK  ]\u{1b}[0m Started cloud-init.service.\r\n\u{1b}]0;owned\u{7}cloud-init[712]: failed to fetch metadata from http://169.254.169.254/openstack/latest/meta_data.json after 120 attempts, giving up and continuing without it\r\nlogin: \n";
    ServerDetail {
        id: "5b1c0e9a-2f4d-4c1b-9a77-0d3e6f1a2b3c".into(),
        name: name.into(),
        status: "ERROR".into(),
        task_state: None,
        vm_state: Some("error".into()),
        power_state: Some("nostate".into()),
        host: Some("compute-az-2-05".into()),
        zone: Some("az-2".into()),
        flavor: Some("r1.2xlarge".into()),
        image: Some("fedora-coreos-38".into()),
        fault: Some(ServerFault {
            code: Some(500),
            message: "Build of instance 5b1c0e9a-2f4d-4c1b-9a77-0d3e6f1a2b3c aborted: Failed to allocate the network(s) with error Maximum number of ports exceeded for network private, not rescheduling.\u{1b}[2J".into(),
            details: Some("Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/nova/compute/manager.py\", line 2441, in _build_and_run_instance\n    with self._build_resources(context, instance,\nnova.exception.BuildAbortException: Build of instance aborted: Failed to allocate the network(s)\n".into()),
            created: Some(at),
        }),
        addresses: vec![
            ServerAddr { network: "private".into(), addr: "10.0.3.17".into(), kind: "fixed".into() },
            ServerAddr { network: "storage".into(), addr: "fd00:5::17".into(), kind: "fixed".into() },
            ServerAddr { network: "private".into(), addr: "172.24.4.201".into(), kind: "floating".into() },
        ],
        created: Some(at - chrono::Duration::minutes(3)),
        updated: Some(at),
        console: ConsoleTail::Lines(console_lines(console, 50)),
    }
}

/// Enter on a node opens its Nova server: status, host, fault with its traceback wrapped,
/// addresses and the console log tail, nothing from the cloud reaching the terminal raw.
#[tokio::test]
async fn snapshot_node_detail_of_a_failed_server() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::FaultsOnly);
    h.key(KeyAction::Top);
    h.app.prepare();
    let ViewKind::Nodes { nodegroup, .. } = &h.app.view().kind else {
        panic!("not in the nodes view")
    };
    let rows = &h.app.store().nodes[&nodegroup.id].rows;
    let node = h
        .app
        .view()
        .table
        .selected(rows)
        .expect("a failed node")
        .node
        .clone();
    h.fake.with_data(|d| {
        d.servers
            .insert(node.name.clone(), failed_server(&node.name));
    });
    h.key(KeyAction::Open);
    assert!(matches!(&h.app.view().kind, ViewKind::Server { target } if target.key == node.key));
    h.settle().await;
    snap!(h, "node_detail_failed");
    insta::assert_snapshot!("node_detail_failed_120x40", h.render(120, 40));
    let screen = h.render(200, 60);
    assert!(
        screen.contains("Maximum number of ports exceeded"),
        "{screen}"
    );
    assert!(
        screen.contains("\\e[2J"),
        "the fault's escape is shown, not obeyed"
    );
    assert!(
        !screen.contains("owned"),
        "an OSC title sequence is dropped: {screen}"
    );
    // Scrolled to the end at 80x24: the console's last line shows.
    h.render(80, 24);
    h.key(KeyAction::Bottom);
    let end = h.render(80, 24);
    assert!(end.contains("login:"), "{end}");
    // Back returns to the nodes.
    h.key(KeyAction::Back);
    assert!(matches!(h.app.view().kind, ViewKind::Nodes { .. }));
}

/// Nova refusing the console log (policy, not ready) and a node whose server cannot be
/// found are said in the view.
#[tokio::test]
async fn node_detail_says_why_there_is_no_console_or_server() {
    let mut h = Harness::demo(1000);
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    let screen = h.render(120, 40);
    assert!(
        screen.contains("Could not load:") && screen.contains("no Nova server named"),
        "{screen}"
    );
    h.key(KeyAction::Back);
    h.app.prepare();
    let ViewKind::Nodes { nodegroup, .. } = &h.app.view().kind else {
        panic!("not in the nodes view")
    };
    let rows = &h.app.store().nodes[&nodegroup.id].rows;
    let name = h
        .app
        .view()
        .table
        .selected(rows)
        .expect("a node")
        .node
        .name
        .clone();
    let mut detail = failed_server(&name);
    detail.console = crate::model::ConsoleTail::Unavailable(
        "Nova's policy does not let this user read the console log (403): Policy doesn't allow os_compute_api:os-console-output to be performed.".into(),
    );
    h.fake.with_data(|d| {
        d.servers.insert(name.clone(), detail);
    });
    h.key(KeyAction::Open);
    h.settle().await;
    let screen = h.render(120, 40);
    assert!(screen.contains("Policy doesn't allow"), "{screen}");
}

// ------------------------------------------------------------------ Cluster API stalls

/// prod-k8s made a Cluster API cluster in `CREATE_IN_PROGRESS` for two hours: its workers
/// are Nova servers, three ACTIVE after 3-4 minutes, one in BUILD for 1h50m.
fn stalled_capi(h: &Harness) {
    use crate::model::{CapiCluster, CapiDriver, Node, NodeKey, Status, StatusState};
    let now = demo_epoch();
    h.fake.with_data(|d| {
        let capi = CapiCluster {
            driver: CapiDriver::MagnumClusterApi,
            name: "kube-ab12c".into(),
        };
        let c = &mut d.clusters[0];
        c.capi = Some(capi.clone());
        c.stack_id = None;
        c.status = Status::parse("CREATE_IN_PROGRESS");
        c.status_reason = Some("WaitingForMachines: 1 machine(s) not ready".into());
        c.created_at = Some(now - chrono::Duration::hours(2));
        let cid = c.id.clone();
        let mut ids = Vec::new();
        for g in d.nodegroups.iter_mut().filter(|g| g.cluster_id == cid) {
            g.capi = Some(capi.clone());
            g.stack_id = None;
            g.status = Status::parse("CREATE_IN_PROGRESS");
            g.status_reason = None;
            // Being created, not upgraded: the servers boot the group's own image.
            g.image = Some("ubuntu-2204-kube-v1.30.2".into());
            ids.push((g.id.clone(), g.name.clone()));
        }
        for (id, name) in ids {
            let nova = |raw: &str, state| Status {
                action: "NOVA".into(),
                state,
                raw: raw.into(),
            };
            let nodes: Vec<Node> = (0..4u32)
                .map(|i| {
                    let created = now - chrono::Duration::minutes(115 - i as i64);
                    let building = i == 3;
                    let server = format!("kube-ab12c-{name}-x7k2p-{i}q9zt");
                    Node {
                        key: NodeKey {
                            nodegroup: id.clone(),
                            member: server.clone(),
                        },
                        index: None,
                        name: server,
                        zone: Some("az-1".into()),
                        ip: None,
                        status: if building {
                            nova("BUILD", StatusState::InProgress)
                        } else {
                            nova("ACTIVE", StatusState::Complete)
                        },
                        status_reason: building.then(|| "task: spawning".into()),
                        image: Some("ubuntu-2204-kube-v1.30.2".into()),
                        since: Some(if building {
                            created
                        } else {
                            created + chrono::Duration::minutes(3 + i as i64 % 2)
                        }),
                        hook_paused: false,
                        hook_inferred: false,
                        stack_id: None,
                        server_id: Some(format!("srv-{i}")),
                        created: Some(created),
                    }
                })
                .collect();
            d.nodes.insert(id, nodes);
        }
    });
}

/// A Cluster API cluster whose Magnum status says only `CREATE_IN_PROGRESS`: the dashboard
/// and the nodes pane say it is stalled and name the slowest server.
#[tokio::test]
async fn snapshot_stalled_capi_cluster() {
    let mut h = Harness::demo(1000);
    stalled_capi(&h);
    h.open_prod().await;
    let screen = h.render(200, 60);
    assert!(
        screen.contains(
            "default-master: stalled for 1h52m: kube-ab12c-default-master-x7k2p-3q9zt in BUILD"
        ),
        "{screen}"
    );
    snap!(h, "capi_stalled_dashboard");
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Nodes { .. }));
    snap!(h, "capi_stalled_nodes");
    insta::assert_snapshot!("capi_stalled_nodes_120x40", h.render(120, 40));
}

// ------------------------------------------------------------------ why stuck

/// prod-k8s's default workers reshaped: the first members updated in 36-50 s (their events
/// say so), the last three held on the pre-update hook for 12 minutes and, when `stalled`,
/// the one before them 20 minutes in UPDATE_IN_PROGRESS with a Nova fault on its server.
fn reshaped_workers(h: &Harness, stalled: bool) {
    use crate::model::{StackEvent, StackRef, Status};
    let now = demo_epoch();
    let ago = |s: i64| now - chrono::Duration::seconds(s);
    h.fake.with_data(|d| {
        let Some(g) = d.nodegroups.iter().find(|g| g.name == "default-worker") else {
            panic!("no default-worker group");
        };
        let (gid, stack_id) = (g.id.clone(), g.stack_id.clone().expect("stack"));
        let sref = StackRef {
            name: "prod-k8s-default-worker".into(),
            id: stack_id.clone(),
        };
        let nodes = d.nodes.get_mut(&gid).expect("nodes");
        let n = nodes.len();
        let mut events = Vec::new();
        let mut ev = |member: &str, t: i64, status: &str, reason: &str| {
            events.push(StackEvent {
                id: format!("ev-{member}-{status}-{t}"),
                time: ago(t),
                resource_name: member.into(),
                logical_id: member.into(),
                physical_id: None,
                status: Status::parse(status),
                status_reason: Some(reason.into()),
                stack: Some(sref.clone()),
                path: vec!["nodes".into()],
            });
        };
        for (i, node) in nodes.iter_mut().enumerate() {
            let m = node.key.member.clone();
            let (status, reason, since) = if i + 3 >= n {
                let pause = "UPDATE paused until Hook pre-update is cleared";
                ev(&m, 720, "UPDATE_IN_PROGRESS", pause);
                ("UPDATE_COMPLETE", "state changed", 7200)
            } else if i + 4 == n && stalled {
                ev(&m, 1200, "UPDATE_IN_PROGRESS", "state changed");
                ("UPDATE_IN_PROGRESS", "state changed", 1200)
            } else {
                let start = 1800 - 60 * i as i64;
                let took = [36, 50, 42, 40][i % 4];
                ev(&m, start, "UPDATE_IN_PROGRESS", "state changed");
                ev(&m, start - took, "UPDATE_COMPLETE", "state changed");
                ("UPDATE_COMPLETE", "state changed", start - took)
            };
            node.status = Status::parse(status);
            node.status_reason = Some(reason.into());
            node.since = Some(ago(since));
            node.hook_paused = false;
        }
        events.sort_by_key(|e| e.time);
        d.events.insert(stack_id, events);
        if stalled {
            let server = format!("{}-server", n - 4);
            d.servers.insert(server.clone(), failed_server(&server));
        }
    });
}

async fn open_worker_tree(h: &mut Harness) {
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Tree);
    h.settle().await;
    // The tree asks for the Nova servers of its first causes once it is assessed.
    h.app.plan_refresh(true);
    h.settle().await;
}

/// Members held on a hook are a count with names and a time, and marked in the tree; a
/// group busy only with held members is not reported as stuck work.
#[tokio::test]
async fn snapshot_tree_hook_held() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, false);
    open_worker_tree(&mut h).await;
    let screen = h.render(200, 60);
    assert!(
        screen.contains("3 members of nodes held on pre-update hook since"),
        "{screen}"
    );
    assert!(screen.contains("‖ pre-update"), "{screen}");
    assert!(screen.contains("0 in progress"), "{screen}");
    snap!(h, "tree_hook_held");
}

/// #26 item 9: "releasing 3 held members takes ~24 keys": with rows marked, `H` plans the
/// release of every marked member's hook at once.
#[tokio::test]
async fn marked_members_hooks_are_released_in_one_plan() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, false);
    open_worker_tree(&mut h).await;
    let (stack_id, held): (String, Vec<String>) = {
        let ViewKind::Tree { stack, .. } = &h.app.view().kind else {
            panic!("not the tree");
        };
        let tree = h.app.store().trees[&stack.id].data.clone().expect("tree");
        let held = tree
            .rows
            .iter()
            .filter(|r| r.hook.is_some())
            .map(|r| r.path.clone())
            .collect();
        (stack.id.clone(), held)
    };
    assert_eq!(held.len(), 3, "{held:?}");
    let rows = h.app.store().trees[&stack_id]
        .data
        .clone()
        .expect("tree")
        .rows;
    // As an operator does: down the tree, `space` on the first two held members.
    h.key(KeyAction::Top);
    let mut marked = 0;
    for _ in 0..rows.len() {
        let selected = h.app.view().table.selected(&rows).map(|r| r.path.clone());
        if selected.is_some_and(|p| held[..2].contains(&p)) {
            h.key(KeyAction::Mark);
            marked += 1;
            if marked == 2 {
                break;
            }
            continue;
        }
        h.key(KeyAction::Down);
    }
    assert_eq!(h.app.view().table.marks().len(), 2);
    h.app.take_requests();
    // Actions on this connection (the demo harness has no operator of its own).
    h.app.update(Action::Operator(Some(
        crate::drivers::guard::Guard::default(),
    )));
    h.press(KeyCode::Char('H'));
    let reqs = h.app.take_requests();
    let [Request::PlanControl {
        request: crate::drivers::manual::Request::ClearHook { patterns, .. },
        ..
    }] = &reqs[..]
    else {
        panic!("{reqs:?} {:?}", h.app.status());
    };
    let mut want: Vec<String> = held[..2].iter().map(|p| p.replace(" > ", "/")).collect();
    want.sort();
    assert_eq!(patterns, &want);
}

/// #26 item 9: a jump from a why-stuck line to its resource: `n` selects the row of the
/// next line (the stalled server here), and round again.
#[tokio::test]
async fn n_jumps_to_the_resource_of_the_next_why_stuck_line() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, true);
    open_worker_tree(&mut h).await;
    h.key(KeyAction::Top);
    let mut seen = Vec::new();
    for _ in 0..3 {
        h.press(KeyCode::Char('n'));
        seen.push(
            h.app
                .view()
                .table
                .selected_id()
                .map(str::to_string)
                .unwrap_or_default(),
        );
    }
    // The panel's order: the hold (its first member), then the stalled server; then round.
    let first_held = h.app.store().trees.values().find_map(|t| {
        let t = t.data.as_ref()?;
        let i = *t.stuck.holds.first()?.members.first()?;
        Some(t.rows[i].path.clone())
    });
    assert_eq!(
        seen,
        [
            first_held.clone().unwrap_or_default(),
            "nodes > 4 > server".to_string(),
            first_held.unwrap_or_default()
        ]
    );
}

/// A stalled server: its time in progress against how long its siblings took, and Nova's
/// fault under it.
#[tokio::test]
async fn snapshot_tree_stalled_with_sibling_durations() {
    let mut h = Harness::demo(10);
    reshaped_workers(&h, true);
    open_worker_tree(&mut h).await;
    let screen = h.render(200, 60);
    assert!(screen.contains("stalled 20m"), "{screen}");
    assert!(
        screen.contains("stalled 20m; siblings of 4 took 36-50 s (median 41 s)"),
        "{screen}"
    );
    assert!(screen.contains("Nova ERROR: Build of instance"), "{screen}");
    assert!(
        !screen.contains("\u{1b}[2J"),
        "the fault's escape is not obeyed"
    );
    snap!(h, "tree_stalled_siblings");
}

// ------------------------------------------------------------------ stack outputs

/// Every demo stack gets three outputs: an address list (JSON text), a kubeconfig-like
/// value longer than any pane, and one whose value carries terminal escapes.
fn give_outputs(h: &Harness) {
    use crate::service::StackOutput;
    let output = |key: &str, description: Option<&str>, value: String| {
        let o = StackOutput {
            key: key.into(),
            description: description.map(Into::into),
        };
        (o, value)
    };
    let kubeconfig: String = (0..120)
        .map(|i| format!("    - name: user-{i}\n      token: {}\n", "x".repeat(70)))
        .collect();
    h.fake.with_data(|d| {
        for s in &d.stacks {
            let outputs = vec![
                output(
                    "api_address",
                    Some("The Kubernetes API endpoint"),
                    "https://10.0.0.5:6443".into(),
                ),
                output(
                    "kubeconfig",
                    Some("Admin credentials for the cluster (long)"),
                    format!("apiVersion: v1\nusers:\n{kubeconfig}"),
                ),
                output(
                    "motd",
                    None,
                    "hello \u{1b}]0;pwned\u{7} world\r\n\u{202e}desrever".into(),
                ),
            ];
            d.outputs.insert(s.stack.id.clone(), outputs);
        }
    });
}

/// Open the stack list, its first stack's outputs (`O`), and evaluate the `n`-th output.
async fn open_outputs(h: &mut Harness) {
    h.settle().await;
    h.app
        .update(Action::Command(super::message::Command::Stacks));
    h.settle().await;
    h.press(KeyCode::Char('O'));
    h.settle().await;
}

#[tokio::test]
async fn snapshot_stack_outputs_list_resolving_and_values() {
    let mut h = Harness::demo(100);
    give_outputs(&h);
    open_outputs(&mut h).await;
    assert!(matches!(
        h.app.view().kind,
        ViewKind::Outputs { shown: None, .. }
    ));
    insta::assert_snapshot!("outputs_80x24", h.render(80, 24));
    insta::assert_snapshot!("outputs_120x40", h.render(120, 40));
    insta::assert_snapshot!("outputs_200x60", h.render(200, 60));

    // Enter on the long one: "resolving…" until Heat answers, then the value, wrapped and
    // cut to the pane.
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    let waiting = h.render(80, 24);
    assert!(waiting.contains("resolving…"), "{waiting}");
    h.settle().await;
    insta::assert_snapshot!("outputs_long_value_80x24", h.render(80, 24));
    insta::assert_snapshot!("outputs_long_value_120x40", h.render(120, 40));
    insta::assert_snapshot!("outputs_long_value_200x60", h.render(200, 60));

    // The value with escapes: shown escaped, nothing for the backstop to catch.
    h.press(KeyCode::Down);
    h.press(KeyCode::Enter);
    h.settle().await;
    let text = h.render(120, 40);
    assert!(text.contains("hello \\e]0;pwned\\x07 world\\r"), "{text}");
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let frame = terminal.draw(|f| h.app.draw_views(f)).expect("draw");
    let mut buf = frame.buffer.clone();
    assert_eq!(super::draw::backstop(&mut buf), 0);
    // Tiny terminals: the value pane and the list share what there is, without a panic.
    for (w, hh) in [(1, 1), (10, 3), (30, 8), (45, 12)] {
        h.render(w, hh);
    }
}

#[tokio::test]
async fn outputs_key_from_the_tree_evaluates_only_the_output_asked_for() {
    let mut h = Harness::demo(100);
    give_outputs(&h);
    h.settle().await;
    h.app
        .update(Action::Command(super::message::Command::Stacks));
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    let ViewKind::Tree { stack, .. } = h.app.view().kind.clone() else {
        panic!("enter on a stack opens its tree");
    };
    h.press(KeyCode::Char('O'));
    let listed: Vec<Request> = h.app.take_requests();
    // Listing the outputs evaluates none of them.
    assert!(listed
        .iter()
        .any(|r| matches!(r, Request::Outputs { stack: s, .. } if s.id == stack.id)));
    assert!(!listed.iter().any(|r| matches!(r, Request::Output { .. })));
    for r in listed {
        h.outstanding += 1;
        h.worker.submit(r);
    }
    h.settle().await;
    assert_eq!(h.app.screen().crumb(), format!("outputs {}", stack.label()));
    assert_eq!(h.app.screen().title(), "Outputs");

    h.press(KeyCode::Enter);
    let asked: Vec<Request> = h.app.take_requests();
    let keys: Vec<&str> = asked
        .iter()
        .filter_map(|r| match r {
            Request::Output { key, .. } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(keys, ["api_address"]);
    for r in asked {
        h.outstanding += 1;
        h.worker.submit(r);
    }
    h.settle().await;
    assert!(h.render(120, 40).contains("https://10.0.0.5:6443"));
    // A tick does not evaluate it again; `r` does.
    h.app.plan_refresh(false);
    assert!(!h
        .app
        .take_requests()
        .iter()
        .any(|r| matches!(r, Request::Output { .. })));
    h.key(KeyAction::Refresh);
    assert!(h
        .app
        .take_requests()
        .iter()
        .any(|r| matches!(r, Request::Output { key, .. } if key == "api_address")));
    // Back to the tree it came from.
    h.press(KeyCode::Esc);
    assert!(matches!(h.app.view().kind, ViewKind::Tree { .. }));
}

/// `y` / `Y` in the view on screen: the status line and the text handed to the runtime.
fn yank(h: &mut Harness, k: KeyAction) -> (String, String) {
    h.key(k);
    let clip = h.app.take_clipboard().map(|c| c.text).unwrap_or_default();
    assert!(h.app.take_clipboard().is_none(), "a copy is written once");
    let status = h.app.status().map(|s| s.text.clone());
    (status.unwrap_or_default(), clip)
}

#[tokio::test]
async fn yank_copies_what_each_view_selects() {
    let mut h = Harness::demo(40);
    h.settle().await;
    let (status, text) = yank(&mut h, KeyAction::YankName);
    assert_eq!(text, "prod-k8s");
    assert_eq!(status, "copied cluster name prod-k8s");
    let (status, text) = yank(&mut h, KeyAction::Yank);
    let cluster = h.app.store().clusters.data.as_deref().unwrap_or(&[])[0].clone();
    assert_eq!(text, cluster.id);
    assert!(status.starts_with("copied cluster id "), "{status}");

    // The dashboard: its node groups.
    h.open_prod().await;
    let groups = h.app.store().nodegroups[&cluster.id]
        .data
        .clone()
        .unwrap_or_default();
    let (status, text) = yank(&mut h, KeyAction::YankName);
    assert!(groups.iter().any(|g| g.name == text), "{text}");
    assert!(status.starts_with("copied node group name"), "{status}");

    // Nodes: the server id (or the member's stack) and the address.
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    let ViewKind::Nodes { nodegroup, .. } = h.app.view().kind.clone() else {
        panic!("{:?}", h.app.view().kind)
    };
    let (status, ip) = yank(&mut h, KeyAction::YankName);
    assert!(ip.parse::<std::net::IpAddr>().is_ok(), "{status}: {ip}");
    assert!(status.starts_with("copied address "), "{status}");
    let node = h.app.store().nodes[&nodegroup.id]
        .rows
        .iter()
        .map(|r| &r.node)
        .find(|n| n.ip.as_deref() == Some(ip.as_str()))
        .cloned()
        .expect("the copied address is a node's");
    let (status, id) = yank(&mut h, KeyAction::Yank);
    let expected = node
        .server_id
        .clone()
        .or(node.stack_id.clone())
        .unwrap_or(node.key.member.clone());
    assert_eq!(id, expected, "{status}");
    // Once the node's detail was opened (Nova asked), `y` copies the server's id even where
    // the listing named only the member's stack, as the README says.
    h.fake.with_data(|d| {
        d.servers
            .insert(node.name.clone(), failed_server(&node.name));
    });
    h.key(KeyAction::Open);
    h.settle().await;
    // In the server's own view, `y` copies the id shown there, not the member's index.
    let (status, in_view) = yank(&mut h, KeyAction::Yank);
    assert!(status.starts_with("copied server id "), "{status}");
    h.key(KeyAction::Back);
    let asked = h
        .app
        .store()
        .servers
        .get(&node.key)
        .and_then(|slot| slot.data.as_ref())
        .map(|d| d.id.clone());
    assert!(
        node.server_id.is_none(),
        "the listing named the member's stack only"
    );
    let asked = asked.expect("Nova was asked for the node's server");
    assert_eq!(in_view, asked);
    let (status, id) = yank(&mut h, KeyAction::Yank);
    assert_eq!(id, asked, "{status}");
    assert!(status.starts_with("copied server id "), "{status}");

    // Events: the event's id and its resource's name.
    h.key(KeyAction::Back);
    h.key(KeyAction::Events);
    h.settle().await;
    let ViewKind::Events { stack } = h.app.view().kind.clone() else {
        panic!("{:?}", h.app.view().kind)
    };
    let (_, id) = yank(&mut h, KeyAction::Yank);
    let (status, name) = yank(&mut h, KeyAction::YankName);
    let events = &h.app.store().events[&stack.id].events;
    assert!(
        events.iter().any(|e| e.id == id && e.resource_name == name),
        "{status}: {id} {name}"
    );

    // The stack tree: the resource's physical id and its name.
    h.key(KeyAction::Back);
    h.key(KeyAction::Tree);
    h.settle().await;
    let ViewKind::Tree { stack, .. } = h.app.view().kind.clone() else {
        panic!("{:?}", h.app.view().kind)
    };
    let (_, id) = yank(&mut h, KeyAction::Yank);
    let (status, name) = yank(&mut h, KeyAction::YankName);
    let rows = &h.app.store().trees[&stack.id]
        .data
        .as_ref()
        .expect("tree")
        .rows;
    assert!(
        rows.iter()
            .any(|r| r.resource.physical_id.as_deref() == Some(id.as_str())
                && r.resource.name == name),
        "{status}: {id} {name}"
    );

    // The stack list: the stack's id and name.
    h.type_str(":stacks");
    h.press(KeyCode::Enter);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    // A top-level list: from deep in a stack, `:stacks` goes back to it, the trail does not
    // grow `… › stacks › … › stacks`.
    let depth = h.app.nav_depth();
    h.press(KeyCode::Enter);
    h.settle().await;
    h.type_str(":stacks");
    h.press(KeyCode::Enter);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    assert_eq!(h.app.nav_depth(), depth);
    let (_, id) = yank(&mut h, KeyAction::Yank);
    let (status, name) = yank(&mut h, KeyAction::YankName);
    let stacks = h.app.store().stacks.data.as_deref().unwrap_or(&[]);
    assert!(
        stacks
            .iter()
            .any(|s| s.stack.id == id && s.stack.name == name),
        "{status}: {id} {name}"
    );
}

/// The request budget in the header: spelled out where the whole header has room, the
/// short form otherwise, and the help screen says what the short form means.
#[tokio::test]
async fn the_request_budget_explains_itself() {
    let mut h = Harness::demo(40);
    h.settle().await;
    h.app.set_budget(crate::service::BudgetStats {
        in_flight: 0,
        max_in_flight: 16,
        per_second: 0.0,
        max_per_second: 50.0,
        ..Default::default()
    });
    let header = |screen: &str| screen.lines().next().unwrap_or_default().to_string();
    let wide = header(&h.render(200, 60));
    assert!(
        wide.contains("requests 0 in flight (max 16) · 0/s (limit 50/s)"),
        "{wide}"
    );
    let narrow = header(&h.render(100, 30));
    assert!(narrow.contains("req 0/16 0/50/s"), "{narrow}");
    assert!(!narrow.contains("requests"), "{narrow}");
    h.key(KeyAction::Help);
    h.press(KeyCode::Char('G'));
    let help = h.render(200, 60);
    assert!(
        help.contains("In flight (at most 16 at once) · started in the last second (limit 50/s)"),
        "{help}"
    );
}

#[path = "detail_tests.rs"]
mod detail_tests;

/// Issue 25: a cluster's IN STATE is its upgrade's age, not reset by a scale of another group
/// during it. prod-k8s's default-worker upgrade started 23 minutes ago; gpu-worker's scale 3
/// minutes ago saved the cluster again (Magnum's `updated_at`). The clusters list, the node
/// groups and the dashboard's groups say 23m for the cluster and the upgraded group, 3m for the
/// scaled one.
#[tokio::test]
async fn a_scale_during_an_upgrade_does_not_reset_the_clusters_time_in_state() {
    let mut h = Harness::demo(40);
    let now = demo_epoch();
    let ago = |m: i64| Some(now - chrono::Duration::minutes(m));
    h.fake.with_data(|d| {
        let c = d.clusters.first_mut().expect("prod-k8s");
        c.status = crate::model::Status::parse("UPDATE_IN_PROGRESS");
        c.updated_at = ago(3);
        let cid = c.id.clone();
        for g in d.nodegroups.iter_mut().filter(|g| g.cluster_id == cid) {
            (g.status, g.updated_at) = match g.name.as_str() {
                "default-worker" => (crate::model::Status::parse("UPDATE_IN_PROGRESS"), ago(23)),
                "gpu-worker" => (crate::model::Status::parse("UPDATE_IN_PROGRESS"), ago(3)),
                _ => (g.status.clone(), g.updated_at),
            };
        }
    });
    h.settle().await;
    // The cluster's groups are read (the dashboard), then the clusters list again.
    h.key(KeyAction::Open);
    h.settle().await;
    h.key(KeyAction::Back);
    h.settle().await;
    let row = |screen: &str, name: &str| -> String {
        screen
            .lines()
            .find(|l| l.contains(&format!("  {name} ")))
            .unwrap_or_default()
            .to_string()
    };
    let clusters = h.render(200, 60);
    let prod = row(&clusters, "prod-k8s");
    assert!(prod.contains("UPDATE_IN_PROGRESS   23m "), "{clusters}");
    h.key(KeyAction::Open);
    h.settle().await;
    let dash = h.render(200, 60);
    assert!(row(&dash, "default-worker").contains(" 23m "), "{dash}");
    assert!(row(&dash, "gpu-worker").contains(" 3m "), "{dash}");
}

/// The events view of prod-k8s's default worker, with (`magnum`) a Magnum member's server
/// and port (members 406 and 405) as Heat names them.
async fn worker_events(magnum: bool) -> Harness {
    let mut h = Harness::demo(1000);
    if magnum {
        add_magnum_events(&h);
    }
    h.open_prod().await;
    h.key(KeyAction::Down);
    h.key(KeyAction::Events);
    h.settle().await;
    assert!(matches!(h.app.view().kind, ViewKind::Events { .. }));
    h
}

fn add_magnum_events(h: &Harness) {
    // A Magnum member's server and port (member 406 and 405), as Heat names them.
    h.fake.with_data(|d| {
        let (id, sref) = d
            .events
            .iter()
            .find_map(|(id, evs)| {
                let sref = evs.first()?.stack.clone()?;
                (sref.name == "prod-k8s-default-worker").then(|| (id.clone(), sref))
            })
            .expect("the worker stack's events");
        let events = d.events.entry(id).or_default();
        let now = d.now;
        for (k, (member, resource)) in [
            ("405", "kube-minion"),
            ("406", "kube-minion"),
            ("406", "kube-minion-port"),
        ]
        .into_iter()
        .enumerate()
        {
            events.push(crate::model::StackEvent {
                id: format!("ev-magnum-{k}"),
                time: now - chrono::Duration::seconds(30 - k as i64),
                resource_name: resource.into(),
                logical_id: resource.into(),
                physical_id: None,
                status: crate::model::Status::parse("UPDATE_IN_PROGRESS"),
                status_reason: Some("state changed".into()),
                stack: Some(sref.clone()),
                path: vec!["kube_minions".into(), member.into()],
            });
        }
    });
}

/// #26 item 8: the events table's widths by need. At 40 columns TIME and STATUS keep their
/// natural width (they were `TI…` and `S…`: RESOURCE took 28 columns for 12 of text); at 60
/// RESOURCE keeps what tells a member's server from its port and from another member's
/// (`…406 > kube-minion-port`), REASON what is left; at 80 the paths keep the same and REASON
/// a few words; at 200 nothing that fits is cut. Every cut is marked.
#[tokio::test]
async fn events_columns_get_widths_by_need_at_40_80_and_200() {
    let mut h = worker_events(false).await;
    let narrow = h.render(40, 20);
    insta::assert_snapshot!("events_by_need_40x20", narrow);
    let heading = narrow.lines().nth(3).unwrap_or_default();
    assert!(
        heading.contains(" TIME ") && heading.contains(" STATUS "),
        "{narrow}"
    );
    let body: Vec<&str> = narrow.lines().skip(4).take(13).collect();
    for l in &body {
        assert!(
            l.contains(" ago ") && l.contains("UPDATE_COMPLETE "),
            "{narrow}"
        );
        // The member (what tells the rows apart), its group's name cut, marked.
        let member = l.split_whitespace().any(|w| {
            w.strip_prefix('…')
                .is_some_and(|n| n.parse::<u32>().is_ok())
        });
        assert!(member, "the member is shown: {narrow}");
    }
    let mut h = worker_events(true).await;
    let mid = h.render(60, 20);
    let row = |end: &str| {
        mid.lines()
            .find(|l| l.contains(end))
            .unwrap_or_else(|| panic!("no row with {end}:\n{mid}"))
            .to_string()
    };
    for end in [
        "405 > kube-minion ",
        "406 > kube-minion ",
        "406 > kube-minion-port ",
    ] {
        let r = row(end);
        assert!(
            r.contains(" ago ") && r.contains(" UPDATE_IN_PROGRESS "),
            "{r}"
        );
        assert!(r.contains('…'), "the cut path is marked: {r}");
    }
    insta::assert_snapshot!("events_by_need_60x20", mid);
    insta::assert_snapshot!("events_by_need_80x24", h.render(80, 24));
    let wide = h.render(200, 60);
    insta::assert_snapshot!("events_by_need_200x60", wide);
    assert!(
        wide.contains("kube_minions > 406 > kube-minion-port state changed")
            && !wide
                .lines()
                .any(|l| l.contains("kube_minions") && l.contains('…')),
        "{wide}"
    );
}
