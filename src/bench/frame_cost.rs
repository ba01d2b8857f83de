//! The console's own cost: frame time of the nodes table and the dashboard's heat map at 1k and
//! 10k nodes, resident memory with 10k nodes loaded, and time to the first frame.
//!
//! The state is the console's `App`, fed by its `Worker` from the in-memory fake cloud exactly
//! as the console tests do, and drawn with `App::draw` into a ratatui `TestBackend` terminal
//! that is kept across frames (double-buffered and diffed, like the real one).

use super::{median, memory_mib, secs, verdict, BenchResult, Md};
use crate::service::CloudService;
use crate::tui::config::{resolve, ConsoleOptions};
use crate::tui::keys::KeyAction;
use crate::tui::message::{Action, Reply, Request};
use crate::tui::state::view::ViewKind;
use crate::tui::state::App;
use crate::tui::worker::Worker;
use caldera_testkit::fake::FakeCloud;
use clap::Args;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Node counts of the node group shown in the nodes table.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    pub nodes: Vec<u32>,
    /// Terminal size, COLSxROWS.
    #[arg(long, default_value = "200x60")]
    pub size: String,
    /// Frames drawn per measurement (the median is shown).
    #[arg(long, default_value_t = 50)]
    pub frames: usize,
    /// Runs of the end-to-end first-frame measurement.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Heat endpoint the end-to-end first frame is measured against (`caldera --heat-url`);
    /// without it the binary's `--simulator` is used.
    #[arg(long)]
    pub heat_url: Option<String>,
    /// The pty driver of the end-to-end first-frame measurement.
    #[arg(long, default_value = "scripts/first-frame.py")]
    pub first_frame_script: PathBuf,
}

/// The console state driven by its worker over the fake cloud (the console tests' harness).
struct Console {
    app: App,
    worker: Worker,
    rx: UnboundedReceiver<Reply>,
    outstanding: usize,
    terminal: Terminal<TestBackend>,
}

impl Console {
    fn new(fake: &FakeCloud, size: (u16, u16)) -> Result<Console, std::io::Error> {
        let svc: Arc<dyn CloudService> = Arc::new(fake.clone());
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let worker = Worker::new(svc.clone(), tx);
        let options = ConsoleOptions {
            no_config: true,
            theme_dir: Some(PathBuf::from("/nonexistent")),
            ..ConsoleOptions::default()
        };
        let mut app = App::new(svc.info(), resolve(&options), chrono::Utc::now());
        app.set_budget(svc.budget());
        app.update(Action::Resize(size.0, size.1));
        Ok(Console {
            app,
            worker,
            rx,
            outstanding: 0,
            terminal: Terminal::new(TestBackend::new(size.0, size.1))?,
        })
    }

    /// Hands the app's requests to the worker and applies every answer until quiet.
    async fn settle(&mut self) -> Result<(), String> {
        loop {
            for req in self.app.take_requests() {
                if !matches!(req, Request::StopNodes { .. }) {
                    self.outstanding += 1;
                }
                self.worker.submit(req);
            }
            if self.outstanding == 0 {
                return Ok(());
            }
            let reply = tokio::time::timeout(Duration::from_secs(60), self.rx.recv())
                .await
                .map_err(|_| "the worker did not answer within 60 s".to_string())?
                .ok_or("the worker went away")?;
            if !matches!(reply, Reply::Nodes { .. }) {
                self.outstanding -= 1;
            }
            self.app.update(Action::Reply(reply));
        }
    }

    /// What the event loop does per frame: prepare the visible table, then draw.
    fn frame(&mut self) -> Result<Duration, std::io::Error> {
        let t = Instant::now();
        self.app.prepare();
        let app = &self.app;
        self.terminal.draw(|f| app.draw(f))?;
        Ok(t.elapsed())
    }

    fn frames(&mut self, n: usize) -> Result<Duration, std::io::Error> {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n.max(1) {
            v.push(self.frame()?);
        }
        Ok(median(&v).unwrap_or_default())
    }
}

/// Figures for one node count.
struct Figures {
    nodes: u32,
    heatmap_cells: usize,
    load: Duration,
    dashboard: Duration,
    dashboard_first: Duration,
    table_first: Duration,
    table: Duration,
    table_scroll: Duration,
    table_update: Duration,
    rows: usize,
    rss: (f64, f64),
    rss_before: f64,
    rss_fake: f64,
}

fn parse_size(s: &str) -> (u16, u16) {
    s.split_once('x')
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)))
        .unwrap_or((200, 60))
}

async fn measure(
    nodes: u32,
    size: (u16, u16),
    frames: usize,
) -> Result<Figures, Box<dyn std::error::Error + Send + Sync>> {
    let rss_before = memory_mib().0;
    // The demo puts 80% of its workers in `default-worker`: that group gets exactly `nodes`.
    let fake = FakeCloud::demo_at(chrono::Utc::now(), nodes * 5 / 4);
    let rss_fake = memory_mib().0;
    let heatmap_cells = fake.with_data(|d| {
        let prod = d.clusters.first().map(|c| c.id.clone()).unwrap_or_default();
        d.nodegroups
            .iter()
            .filter(|g| g.cluster_id == prod)
            .map(|g| d.nodes.get(&g.id).map(Vec::len).unwrap_or(0))
            .sum()
    });
    let mut c = Console::new(&fake, size)?;
    let t = Instant::now();
    c.settle().await?;
    // Open the first cluster (prod-k8s): the dashboard asks for every group's nodes.
    c.app.update(Action::Key(KeyAction::Open));
    c.settle().await?;
    c.app.plan_refresh(false);
    c.settle().await?;
    let load = t.elapsed();
    if !matches!(c.app.view().kind, ViewKind::Dashboard { .. }) {
        return Err("the first cluster did not open on its dashboard".into());
    }
    let dashboard_first = c.frame()?;
    let dashboard = c.frames(frames)?;
    // The node group list on the dashboard: second row is default-worker.
    c.app.update(Action::Key(KeyAction::Down));
    c.app.update(Action::Key(KeyAction::Open));
    c.settle().await?;
    let table_first = c.frame()?;
    let rows = c.app.view().table.len();
    let table = c.frames(frames)?;
    // Scrolling: a key then a frame, as when holding the down arrow.
    let mut v = Vec::new();
    for _ in 0..frames.max(1) {
        let t = Instant::now();
        c.app.update(Action::Key(KeyAction::Down));
        c.frame()?;
        v.push(t.elapsed());
    }
    let table_scroll = median(&v).unwrap_or_default();
    // A live update (the next rollout batch, re-streamed members) with a sort active: the
    // first frame after it re-sorts the whole table.
    c.app.update(Action::Key(KeyAction::SortNext));
    c.frame()?;
    fake.advance();
    c.app.update(Action::Key(KeyAction::Refresh));
    c.settle().await?;
    let table_update = c.frame()?;
    let rss = memory_mib();
    c.worker.shutdown();
    Ok(Figures {
        nodes,
        heatmap_cells,
        load,
        dashboard,
        dashboard_first,
        table_first,
        table,
        table_scroll,
        table_update,
        rows,
        rss,
        rss_before,
        rss_fake,
    })
}

/// In-process start-up: options resolved (themes, keys), state built, first frame drawn.
fn first_frame_in_process(size: (u16, u16)) -> Result<Duration, std::io::Error> {
    let t = Instant::now();
    let fake = FakeCloud::demo_at(chrono::Utc::now(), 0);
    let options = ConsoleOptions {
        no_config: true,
        theme_dir: Some(PathBuf::from("/nonexistent")),
        ..ConsoleOptions::default()
    };
    let mut app = App::new(fake.info(), resolve(&options), chrono::Utc::now());
    app.update(Action::Resize(size.0, size.1));
    app.prepare();
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1))?;
    terminal.draw(|f| app.draw(f))?;
    Ok(t.elapsed())
}

/// End to end: the real binary in a pseudo-terminal, from spawn to the first frame on screen.
async fn first_frame_e2e(args: &RenderArgs) -> Result<(Vec<Duration>, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd_args: Vec<String> = vec![exe.display().to_string()];
    let how = match &args.heat_url {
        Some(url) => {
            cmd_args.extend(["--heat-url".into(), url.clone()]);
            format!("caldera --heat-url {url}")
        }
        None => {
            cmd_args.push("--simulator".into());
            "caldera --simulator (starts the demo simulator in-process first)".into()
        }
    };
    if !args.first_frame_script.is_file() {
        return Err(format!("{} not found", args.first_frame_script.display()));
    }
    let mut out = Vec::new();
    for _ in 0..args.runs.max(1) {
        let run = tokio::process::Command::new("python3")
            .arg(&args.first_frame_script)
            .args(&cmd_args)
            .output()
            .await
            .map_err(|e| format!("python3: {e}"))?;
        let text = String::from_utf8_lossy(&run.stdout);
        let ms = text
            .lines()
            .find_map(|l| l.strip_prefix("first_frame_ms "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .ok_or_else(|| {
                format!(
                    "no first frame: {}",
                    String::from_utf8_lossy(&run.stderr).trim()
                )
            })?;
        out.push(Duration::from_secs_f64(ms / 1000.0));
    }
    Ok((out, how))
}

pub async fn run(args: RenderArgs) -> BenchResult {
    let size = parse_size(&args.size);
    let mut counts = args.nodes.clone();
    // The largest first: the process's high-water mark then belongs to it.
    counts.sort_by(|a, b| b.cmp(a));
    let mut figures = Vec::new();
    for n in counts {
        eprintln!("{n} nodes...");
        figures.push(measure(n, size, args.frames).await?);
    }
    figures.sort_by_key(|f| f.nodes);
    println!(
        "\n### Console rendering ({}x{} TestBackend, release build, median of {} frames)\n",
        size.0, size.1, args.frames
    );
    let mut t = Md::new(&[
        "nodes in table",
        "heat map cells",
        "load (fake cloud)",
        "dashboard first frame",
        "dashboard frame",
        "nodes table first frame",
        "nodes table frame",
        "key + frame (scroll)",
        "frame after live update (re-sort)",
    ]);
    for f in &figures {
        t.row(vec![
            format!("{} ({} rows)", f.nodes, f.rows),
            f.heatmap_cells.to_string(),
            secs(f.load),
            secs(f.dashboard_first),
            secs(f.dashboard),
            secs(f.table_first),
            secs(f.table),
            secs(f.table_scroll),
            secs(f.table_update),
        ]);
    }
    t.print();
    println!();
    let mut t = Md::new(&[
        "nodes",
        "VmRSS before",
        "after the fake cloud's data",
        "after loading the console",
        "VmHWM",
    ]);
    for f in &figures {
        t.row(vec![
            f.nodes.to_string(),
            format!("{:.1} MiB", f.rss_before),
            format!("{:.1} MiB", f.rss_fake),
            format!("{:.1} MiB", f.rss.0),
            format!("{:.1} MiB", f.rss.1),
        ]);
    }
    t.print();
    println!("\n(one process, largest count measured first; VmHWM also holds the fake cloud's own copy of the nodes, which a real console does not have)\n");

    let mut v = Vec::new();
    for _ in 0..args.runs.max(1) {
        v.push(first_frame_in_process(size)?);
    }
    let in_process = median(&v).unwrap_or_default();
    let e2e = first_frame_e2e(&args).await;
    let mut t = Md::new(&["first frame", "median", "runs"]);
    t.row(vec![
        "in process: options, state, first draw".into(),
        secs(in_process),
        v.len().to_string(),
    ]);
    let e2e_median = match &e2e {
        Ok((samples, how)) => {
            let m = median(samples);
            t.row(vec![
                format!("end to end in a pty: `{how}` spawned to first frame"),
                super::opt_secs(m),
                samples.len().to_string(),
            ]);
            m
        }
        Err(e) => {
            eprintln!("end-to-end first frame not measured: {e}");
            None
        }
    };
    t.print();
    println!();
    if let Some(big) = figures.iter().find(|f| f.nodes >= 10_000) {
        let worst = big.table.max(big.dashboard);
        println!(
            "- frame at {} nodes: {} (target < 4 ms: {})",
            big.nodes,
            secs(worst),
            verdict(worst < Duration::from_millis(4))
        );
        println!(
            "- resident with {} nodes: VmHWM {:.1} MiB (target < 80 MB: {})",
            big.nodes,
            big.rss.1,
            verdict(big.rss.1 * 1.048_576 < 80.0)
        );
    }
    if let Some(m) = e2e_median.or(Some(in_process)) {
        println!(
            "- first frame: {} (target < 150 ms: {})",
            secs(m),
            verdict(m < Duration::from_millis(150))
        );
    }
    Ok(())
}
