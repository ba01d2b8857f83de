//! Console tests over the fake cloud: snapshots of every pane at 80x24 and 200x60 with
//! a fixed clock, plus behaviour (navigation, generations, selection by id, input).

use crate::config::{resolve, ConsoleOptions};
use crate::keys::KeyAction;
use crate::message::{Action, Reply, Request};
use crate::service::fake::{demo_epoch, FakeCloud, FakeOp};
use crate::service::{CloudService, ErrorKind, ServiceError};
use crate::state::view::ViewKind;
use crate::state::{App, Mode};
use crate::worker::Worker;
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

/// The views on screen draw every text from the cloud escaped themselves (nothing left for
/// the last-line backstop to catch) and survive tiny terminals.
fn escaped_everywhere(h: &mut Harness) {
    h.render(120, 40);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let frame = terminal.draw(|f| h.app.draw_views(f)).expect("draw");
    let mut buf = frame.buffer.clone();
    assert_eq!(crate::draw::backstop(&mut buf), 0);
    for (w, hh) in [(1, 1), (10, 3), (30, 8), (45, 12)] {
        h.render(w, hh);
    }
}

/// What every console test harness does to its [`App`]: keys, typed text, and a frame drawn
/// at a size (the text of the screen).
pub(crate) trait Drive {
    fn app(&mut self) -> &mut App;

    fn key(&mut self, k: KeyAction) {
        self.app().update(Action::Key(k));
    }

    fn press(&mut self, code: KeyCode) {
        self.app().on_key(KeyEvent::new(code, KeyModifiers::NONE));
    }

    fn type_str(&mut self, s: &str) {
        for c in s.chars() {
            self.press(KeyCode::Char(c));
        }
    }

    /// `:LINE` and Enter, as typed in the palette.
    fn command(&mut self, line: &str) {
        self.press(KeyCode::Char(':'));
        self.type_str(line);
        self.press(KeyCode::Enter);
    }

    fn render(&mut self, w: u16, h: u16) -> String {
        let app = self.app();
        app.update(Action::Resize(w, h));
        app.prepare();
        let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        terminal.draw(|f| app.draw(f)).expect("draw");
        terminal.backend().to_string()
    }
}

impl Drive for Harness {
    fn app(&mut self) -> &mut App {
        &mut self.app
    }
}

macro_rules! snap {
    ($h:expr, $name:literal) => {
        insta::assert_snapshot!(concat!($name, "_80x24"), $h.render(80, 24));
        insta::assert_snapshot!(concat!($name, "_200x60"), $h.render(200, 60));
    };
}

/// [`snap!`] with a middle size, 120x40, between the two (in that order).
macro_rules! snap3 {
    ($h:expr, $name:literal) => {
        insta::assert_snapshot!(concat!($name, "_80x24"), $h.render(80, 24));
        insta::assert_snapshot!(concat!($name, "_120x40"), $h.render(120, 40));
        insta::assert_snapshot!(concat!($name, "_200x60"), $h.render(200, 60));
    };
}

mod capi;
mod chrome;
mod clusters;
mod dashboard;
mod detail;
mod events;
mod node_detail;
mod nodes;
mod outputs;
mod refresh;
mod tree;
mod yank;
