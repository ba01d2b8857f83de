//! Text from the cloud cannot drive the operator's terminal.
//!
//! The simulator's `hostile` scenario puts a screen wipe, a window-title change, a C1 CSI,
//! a right-to-left override, a CR and DEL ([`HOSTILE`]) in every piece of text the APIs
//! return: Heat stack, resource and type names, reasons, descriptions, output values and
//! event fields; Magnum cluster, node group and template names, status and health
//! reasons; Nova server names and faults. Then:
//! - every headless command (the real binary) prints tables and CSV with those characters
//!   escaped and nothing a terminal obeys, while JSON keeps the exact text;
//! - every console view, drawn *without* the last-line backstop, has no such character in
//!   any cell: each view escaped its text itself (and the backstop is proven separately);
//! - the real console in a pseudo-terminal never writes the attacker's sequences and its
//!   window title is not the attacker's.

use crate::support::pty;

use caldera::api::cloud::{CloudConnection, ConnectOptions};
use caldera::model::text::is_unsafe_char;
use caldera::service::live::LiveService;
use caldera::service::CloudService;
use caldera::sim::scenario::HOSTILE;
use caldera::sim::{self, SimHandle, SimOptions};
use caldera::tui::config::resolve;
use caldera::tui::keys::KeyAction;
use caldera::tui::message::{Action, Command, OperatorRequest, Reply, Request};
use caldera::tui::state::action_dialogs::Dialog;
use caldera::tui::state::{App, Mode};
use caldera::tui::worker::Worker;
use caldera::tui::ConsoleOptions;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

async fn hostile_sim() -> SimHandle {
    sim::start(SimOptions {
        scenario: "hostile".into(),
        output_cost_per_member: Duration::ZERO,
        detail_cost_per_resource: Duration::ZERO,
        ..SimOptions::default()
    })
    .await
    .expect("simulator")
}

/// A clouds.yaml for the simulator, readable by its owner only.
fn clouds_yaml(sim: &SimHandle, dir: &Path) -> PathBuf {
    let path = dir.join("clouds.yaml");
    std::fs::write(&path, sim.clouds_yaml("hostile")).expect("write clouds.yaml");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

/// The ids the commands are run on: the cluster, its stack and its node groups' stacks.
struct Ids {
    cluster: String,
    cluster_stack: String,
    group_stacks: Vec<String>,
}

fn ids(sim: &SimHandle) -> Ids {
    sim.with_world(|w| {
        let c = &w.clusters[0];
        Ids {
            cluster: c.uuid.clone(),
            cluster_stack: w.stack(c.stack).expect("cluster stack").id.clone(),
            group_stacks: c
                .groups
                .iter()
                .map(|g| {
                    w.stack(w.groups[*g].ng_stack)
                        .expect("group stack")
                        .id
                        .clone()
                })
                .collect(),
        }
    })
}

/// Runs the real binary against the simulator; (stdout, stderr, success).
async fn caldera(clouds: &Path, args: Vec<String>) -> (Vec<u8>, Vec<u8>, bool) {
    let clouds = clouds.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let home = clouds.parent().expect("dir").to_path_buf();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
            .args(&args)
            .env("OS_CLIENT_CONFIG_FILE", &clouds)
            .env("OS_CLOUD", "hostile")
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_STATE_HOME", home.join("state"))
            .output()
            .expect("run caldera");
        (out.stdout, out.stderr, out.status.success())
    })
    .await
    .expect("join")
}

/// No character a terminal obeys, only the line feeds ending lines.
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Some((i, c)) = text
        .char_indices()
        .find(|(_, c)| *c != '\n' && is_unsafe_char(*c))
    {
        panic!("{what}: {c:?} at byte {i}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_output_escapes_every_field_and_json_stays_exact() {
    let sim = hostile_sim().await;
    let dir = tempfile::tempdir().unwrap();
    let clouds = clouds_yaml(&sim, dir.path());
    let ids = ids(&sim);
    let mut commands: Vec<Vec<String>> = vec![
        vec!["clusters".into()],
        vec!["nodegroups".into(), ids.cluster.clone()],
        vec!["stacks".into(), "--nested".into()],
        vec![
            "events".into(),
            ids.cluster_stack.clone(),
            "--nested-depth".into(),
            "3".into(),
        ],
        vec!["failures".into(), ids.cluster_stack.clone()],
        vec!["ips".into(), ids.cluster.clone()],
    ];
    for s in &ids.group_stacks {
        commands.push(vec![
            "events".into(),
            s.clone(),
            "--nested-depth".into(),
            "3".into(),
        ]);
        commands.push(vec!["failures".into(), s.clone()]);
    }
    let visible = "\\e[2J\\e]0;pwned\\x07\\u{9b}31m\\u{202e}\\r\\x7f";
    let mut not_shown = Vec::new();
    for cmd in &commands {
        for format in ["table", "csv"] {
            let mut args = cmd.clone();
            args.extend(["--format".to_string(), format.to_string()]);
            let (mut out, err, ok) = caldera(&clouds, args.clone()).await;
            // `ips` fails (one member never got an address): its rows still print.
            assert!(
                ok || cmd[0] == "ips",
                "{args:?}: {}",
                String::from_utf8_lossy(&err)
            );
            assert_inert(&format!("{args:?} stdout"), &out);
            assert_inert(&format!("{args:?} stderr"), &err);
            // (A stack without failures is named on stderr.)
            out.extend_from_slice(&err);
            if !String::from_utf8_lossy(&out).contains(visible) {
                not_shown.push(format!("{args:?}:\n{}", String::from_utf8_lossy(&out)));
            }
        }
    }
    // Every command shows the hostile text, escaped (not dropped), in both formats.
    assert!(not_shown.is_empty(), "{}", not_shown.join("\n"));

    // JSON: the exact text, escaped by JSON itself.
    let (out, _, ok) = caldera(
        &clouds,
        vec!["clusters".into(), "--format".into(), "json".into()],
    )
    .await;
    assert!(ok);
    assert!(
        !out.contains(&0x1b) && !out.contains(&0x07),
        "raw control bytes in JSON"
    );
    let v: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(v[0]["name"], serde_json::json!(format!("evil{HOSTILE}")));
    assert!(v[0]["status_reason"]
        .as_str()
        .is_some_and(|r| r.contains(HOSTILE)));
    let (out, _, ok) = caldera(
        &clouds,
        vec![
            "events".into(),
            ids.cluster_stack.clone(),
            "--format".into(),
            "json".into(),
        ],
    )
    .await;
    assert!(ok);
    let names: Vec<serde_json::Value> = String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .collect();
    assert!(
        names.iter().any(
            |e| e["resource_name"] == serde_json::json!(format!("res{HOSTILE}"))
                && e["reason"] == serde_json::json!(format!("state changed{HOSTILE}"))
        ),
        "{names:?}"
    );
    sim.shutdown().await;
}

struct Harness {
    app: App,
    worker: Worker,
    rx: tokio::sync::mpsc::UnboundedReceiver<Reply>,
    outstanding: usize,
}

impl Harness {
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

    /// Draws every view without the backstop; returns the screen as text after checking
    /// that no cell holds a character the terminal would obey.
    fn frame(&mut self, what: &str, w: u16, h: u16) -> String {
        self.app.update(Action::Resize(w, h));
        self.app.prepare();
        let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        terminal.draw(|f| self.app.draw_views(f)).expect("draw");
        let buf = terminal.backend().buffer().clone();
        for (i, cell) in buf.content.iter().enumerate() {
            let bad = cell.symbol().chars().find(|c| is_unsafe_char(*c));
            assert!(
                bad.is_none(),
                "{what}: cell {i} ({}, {}) holds {bad:?}:\n{}",
                i as u16 % w,
                i as u16 / w,
                terminal.backend()
            );
        }
        terminal.backend().to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_view_escapes_what_the_cloud_sent() {
    let sim = hostile_sim().await;
    let conn = CloudConnection::from_cloud(&sim.cloud_config(), &ConnectOptions::default())
        .await
        .expect("connect");
    let svc: Arc<dyn CloudService> = Arc::new(LiveService::new(conn));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let worker = Worker::new(svc.clone(), tx);
    let options = ConsoleOptions {
        no_config: true,
        theme_dir: Some(PathBuf::from("/nonexistent")),
        ..ConsoleOptions::default()
    };
    let mut app = App::new(svc.info(), resolve(&options), chrono::Utc::now());
    app.set_budget(svc.budget());
    let mut h = Harness {
        app,
        worker,
        rx,
        outstanding: 0,
    };
    h.settle().await;
    let mut seen = String::new();
    seen += &h.frame("clusters", 200, 40);
    assert!(seen.contains("evil\\e[2J"), "{seen}");
    // Into the cluster: the dashboard (cluster line, node groups, heat map, event tail).
    h.app.update(Action::Key(KeyAction::Open));
    h.settle().await;
    h.app.plan_refresh(false);
    h.settle().await;
    seen += &h.frame("dashboard", 200, 50);
    for cmd in [
        Command::NodeGroups,
        Command::Nodes,
        Command::Events,
        Command::Tree,
        Command::Dashboard,
        Command::Stacks,
    ] {
        let name = format!("{cmd:?}");
        h.app.update(Action::Command(cmd));
        h.settle().await;
        seen += &h.frame(&name, 200, 50);
        seen += &h.frame(&format!("{name} narrow"), 60, 20);
    }
    // From the cluster list, `:events` and `:tree` are the cluster's own stack (the one
    // with the hostile resource): events as a table and wrapped, then the tree.
    h.app.update(Action::Command(Command::Clusters));
    h.settle().await;
    h.app.update(Action::Command(Command::Events));
    h.settle().await;
    seen += &h.frame("events table", 200, 50);
    h.app.update(Action::Key(KeyAction::Wrap));
    seen += &h.frame("events wrapped", 120, 50);
    h.app.update(Action::Command(Command::Clusters));
    h.settle().await;
    h.app.update(Action::Command(Command::Tree));
    h.settle().await;
    seen += &h.frame("tree and why-stuck", 200, 50);
    // A filter typed over hostile rows, the help, the status line and a text dialog.
    h.app.set_status(
        caldera::tui::state::Level::Error,
        format!("Heat says: {HOSTILE}"),
    );
    seen += &h.frame("status line", 200, 50);
    h.app.open_dialog(Dialog::Text {
        title: format!("hook output {HOSTILE}"),
        lines: vec![format!("FAILED: {HOSTILE}"), format!("line two{HOSTILE}")],
        scroll: 0,
    });
    seen += &h.frame("text dialog", 200, 50);
    h.app.close_overlay();

    // The journal view and an entry's detail: targets, errors and hook output recorded from
    // the cloud and from hooks.
    h.app.update(Action::Command(Command::Journal));
    let gen = h
        .app
        .take_requests()
        .into_iter()
        .find_map(|r| match r {
            Request::Operator(OperatorRequest::Journal { gen, .. }) => Some(gen),
            _ => None,
        })
        .expect("the journal is asked for");
    let entry = caldera::journal::Entry {
        time: chrono::Utc::now(),
        cloud: format!("cloud{HOSTILE}"),
        user: "operator".into(),
        host: format!("host{HOSTILE}"),
        action: "hook.post_node".into(),
        target: format!("evil{HOSTILE}/worker{HOSTILE}/1"),
        rollout: None,
        plan: vec![format!("plan line{HOSTILE}")],
        spec: None,
        calls: vec![],
        outcome: caldera::journal::Outcome::Failed {
            error: format!("hook said{HOSTILE}"),
        },
        output: Some(format!("hook output{HOSTILE}\nsecond{HOSTILE}")),
        since: None,
    };
    h.app.update(Action::Reply(Reply::Journal {
        gen,
        result: Ok((vec![entry], 1)),
    }));
    seen += &h.frame("journal", 200, 50);
    h.app.update(Action::Key(KeyAction::JournalDetail));
    assert!(
        matches!(h.app.mode(), Mode::Dialog(_)),
        "the entry's detail opened"
    );
    seen += &h.frame("journal entry", 200, 50);
    h.app.close_overlay();

    // Each field the APIs carry reached a screen, escaped.
    for field in [
        "evil\\e[2J",          // Magnum cluster name
        "worker\\e[2J",        // node group name
        "res\\e[2J",           // Heat resource name
        "My::Type\\e[2J",      // resource type
        "state changed\\e[2J", // event and resource reason
        "No valid host\\e[2J", // Nova fault / Heat failure reason
        "\\u{202e}",           // the bidi override
        "hook said\\e[2J",     // a journal entry's error
        "hook output\\e[2J",   // a hook's output, in the entry's detail
    ] {
        assert!(seen.contains(field), "{field} never shown:\n{seen}");
    }
    h.worker.shutdown();
    sim.shutdown().await;
}

#[test]
fn the_backstop_neutralizes_any_cell_a_view_forgot() {
    use ratatui::widgets::Paragraph;
    let options = ConsoleOptions {
        no_config: true,
        theme_dir: Some(PathBuf::from("/nonexistent")),
        ..ConsoleOptions::default()
    };
    let fake = caldera_testkit::fake::FakeCloud::demo(3);
    let app = App::new(fake.info(), resolve(&options), chrono::Utc::now());
    let mut terminal = Terminal::new(TestBackend::new(40, 3)).expect("terminal");
    terminal
        .draw(|f| {
            app.draw(f);
            // A view that forgot to escape, drawn before the backstop would run.
            f.render_widget(Paragraph::new(format!("x{HOSTILE}y")), f.area());
            caldera::tui::backstop(f.buffer_mut());
        })
        .expect("draw");
    let buf = terminal.backend().buffer();
    assert!(buf
        .content
        .iter()
        .all(|c| !c.symbol().chars().any(is_unsafe_char)));
    let shown = terminal.backend().to_string();
    assert!(shown.contains("pwned") && shown.contains('y'), "{shown}");
}

/// The real console in a pseudo-terminal on the hostile cloud: the attacker's names are on
/// screen as visible escapes, the bytes written never hold the attacker's sequences, the
/// window title is untouched; then SIGQUIT ends it like SIGTERM, terminal restored.
#[test]
fn real_console_shows_hostile_names_and_sigquit_restores_the_terminal() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sim = rt.block_on(hostile_sim());
    let dir = tempfile::tempdir().unwrap();
    let clouds = clouds_yaml(&sim, dir.path());
    let mut c = pty::Console::start_with(
        160,
        45,
        &[],
        &[
            ("OS_CLIENT_CONFIG_FILE", clouds.as_os_str()),
            ("OS_CLOUD", std::ffi::OsStr::new("hostile")),
        ],
        |_| {},
    );
    c.wait_for("the hostile cluster, escaped", |s| {
        s.alternate && s.has("evil\\e[2J\\e]0;pwned\\x07") && s.has("Clusters [1]")
    });
    // `t` on the cluster: its stack's tree, where the tenant's resource is.
    c.press("t", "the tree with the hostile resource", |s| {
        s.has("res\\e[2J") && s.has("My::Type\\e[2J") && s.has("Why stuck")
    });
    c.press("\x1b", "back to the clusters", |s| s.has("Clusters [1]"));
    c.press(
        "\r",
        "the dashboard with hostile group names and events",
        |s| s.has("worker\\e[2J") && s.has("master\\e[2J") && s.has("state changed\\e[2J"),
    );
    let screen = c.screen();
    assert_eq!(screen.title, "", "the window title was changed");
    let raw = c.raw();
    for (what, seq) in [
        ("OSC title", &b"\x1b]0;"[..]),
        ("BEL", b"\x07"),
        ("C1 CSI", "\u{9b}".as_bytes()),
        ("RLO", "\u{202e}".as_bytes()),
        ("DEL", b"\x7f"),
    ] {
        assert!(
            !raw.windows(seq.len()).any(|w| w == seq),
            "{what} reached the terminal"
        );
    }
    c.signal(libc::SIGQUIT);
    let status = c.wait_exit();
    assert!(status.success(), "exit status {status}");
    c.assert_restored();
    let log = std::fs::read_to_string(c.log_path()).unwrap_or_default();
    assert!(log.contains("SIGQUIT: quitting"), "{log}");
    rt.block_on(sim.shutdown());
}
