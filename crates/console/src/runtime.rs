//! Terminal setup and teardown, the panic hook, logging, and the event loop: one
//! `tokio::select!` over terminal events, worker answers, signals, a clock tick and a
//! render timer capped at the configured FPS; drawing happens only when something changed.
//!
//! Signals: SIGTERM, SIGHUP, SIGINT and SIGQUIT quit cleanly (terminal restored, exit
//! code 0; SIGQUIT's default action would dump core and leave the terminal raw); every
//! other signal whose default action ends the process (SIGUSR1, SIGUSR2, SIGALRM,
//! SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGIO, SIGPWR, SIGSYS, the real-time ones…) also
//! restores the terminal first, then the process exits with the conventional 128 + the
//! signal's number ([`ending_signal`]). SIGPIPE is ignored by Rust programs (a write
//! fails instead); SIGKILL and SIGSTOP cannot be caught; SIGSEGV, SIGBUS, SIGILL, SIGFPE,
//! SIGTRAP and SIGABRT are faults of the process itself, left to their default.
//! SIGTSTP and ctrl-z give the terminal back and stop the process, SIGCONT (`fg`) takes
//! the terminal again and redraws everything.

use super::config::{resolve, Connector, ConsoleOptions, Reconnected};
use super::message::{Action, Request};
use super::state::App;
use super::worker::Worker;
use crate::service::operator::Operator;
use crate::service::CloudService;
use crossterm::event::{Event, EventStream, KeyEventKind};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use futures::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{stdout, Stdout, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The signal that ended the console, 0 for none.
static ENDED_BY: AtomicI32 = AtomicI32::new(0);

/// The signal (beyond SIGTERM, SIGHUP, SIGINT and SIGQUIT, which quit with 0) that ended
/// the console once the terminal was restored: the binary exits with 128 + its number,
/// as a shell reports a process a signal ended.
pub fn ending_signal() -> Option<i32> {
    Some(ENDED_BY.load(Ordering::Relaxed)).filter(|s| *s > 0)
}

/// Signals whose default action ends the process, beyond the four that quit cleanly, and
/// that a process may catch (see the module's doc for those left out, and why).
fn other_ending_signals() -> Vec<i32> {
    let mut sigs = vec![
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGIO,
        libc::SIGSYS,
    ];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        sigs.extend([libc::SIGPWR, libc::SIGSTKFLT]);
        sigs.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    }
    sigs
}

/// One channel for every signal of [`other_ending_signals`]: its number, when it comes.
fn listen_ending() -> tokio::sync::mpsc::UnboundedReceiver<i32> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for sig in other_ending_signals() {
        if let Some(mut stream) = listen(SignalKind::from_raw(sig)) {
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(sig).is_err() {
                        break;
                    }
                }
            });
        }
    }
    rx
}

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// `$XDG_STATE_HOME/caldera/caldera.log` (data dir as a fallback).
pub fn log_path() -> Option<PathBuf> {
    dirs::state_dir()
        .or_else(dirs::data_dir)
        .map(|d| d.join("caldera").join("caldera.log"))
}

/// Log to the file (never the terminal). `filter` is an env-filter string such as
/// `info` or `caldera=debug`; `RUST_LOG` wins when set. Keep the guard alive.
pub fn init_logging(filter: &str) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    init_logging_to(&log_path()?, filter)
}

/// Like [`init_logging`], to a given file.
pub fn init_logging_to(
    path: &std::path::Path,
    filter: &str,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir).ok()?;
    let file = tracing_appender::rolling::never(dir, path.file_name()?);
    let (writer, guard) = tracing_appender::non_blocking(file);
    let env = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    tracing_subscriber::fmt()
        .with_env_filter(env)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}

/// Whether the terminal is in raw mode on the alternate screen (ours to restore).
static TERMINAL_ACTIVE: AtomicBool = AtomicBool::new(false);

/// Leave the alternate screen, disable raw mode, show the cursor. Runs once per setup
/// (leaving the alternate screen twice would move the cursor over printed text).
fn restore_terminal() {
    if !TERMINAL_ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), LeaveAlternateScreen, crossterm::cursor::Show);
}

/// Raw mode on the alternate screen; [`restore_terminal`] undoes it.
fn enter_terminal() -> std::io::Result<()> {
    enable_raw_mode()?;
    TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
    execute!(stdout(), EnterAlternateScreen)
}

static UI_THREAD: OnceLock<std::thread::ThreadId> = OnceLock::new();

/// On a panic of the UI thread: restore the terminal first, then let the previous hook
/// print. Panics of worker threads are logged (the screen stays usable).
fn install_panic_hook() {
    let _ = UI_THREAD.set(std::thread::current().id());
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if UI_THREAD.get() == Some(&std::thread::current().id()) {
            restore_terminal();
            previous(info);
        } else {
            tracing::error!("worker panicked: {info}");
        }
    }));
}

struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Run the console until the user quits.
///
/// `operator` does the console's actions (scale, upgrade, rollouts, node actions, the
/// journal); without one the console only reads.
pub async fn run(
    service: Arc<dyn CloudService>,
    operator: Option<Arc<dyn Operator>>,
    options: ConsoleOptions,
) -> Result<(), ConsoleError> {
    let resolved = resolve(&options);
    for p in &resolved.problems {
        tracing::warn!("config: {p}");
    }
    let fps = resolved.fps;
    let mut app = App::new(service.info(), resolved, chrono::Utc::now());
    app.set_budget(service.budget());
    app.update(Action::Operator(operator.as_ref().map(|o| o.guard())));
    install_panic_hook();
    let _guard = TerminalGuard;
    enter_terminal()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
    terminal.clear()?;
    let size = terminal.size()?;
    app.update(Action::Resize(size.width, size.height));
    tracing::info!(
        "console started on {} ({}x{}, read-only: {})",
        app.info().cloud,
        size.width,
        size.height,
        app.read_only()
    );
    let fleet = options.fleet.as_ref().map(|f| f.0.clone());
    let reach = Reach {
        fleet,
        connector: options.connector.clone(),
    };
    let result = event_loop(&mut terminal, &mut app, service, operator, reach, fps).await;
    match &result {
        Ok(()) => tracing::info!("console closed"),
        Err(e) => tracing::error!("console failed: {e}"),
    }
    // Not an error worth reporting: after a hang-up there is no terminal to show it on,
    // and restoring the terminal (the guard) shows the cursor again anyway.
    let _ = terminal.show_cursor();
    result
}

async fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    app: &mut App,
    service: Arc<dyn CloudService>,
    operator: Option<Arc<dyn Operator>>,
    reach: Reach,
    fps: u32,
) -> Result<(), ConsoleError> {
    let mut service = service;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(service.clone(), tx)
        .with_operator(operator)
        .with_fleet(reach.fleet.clone());
    let (switch_tx, mut switch_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut events = EventStream::new();
    let mut render = tokio::time::interval(Duration::from_secs_f64(1.0 / fps.max(1) as f64));
    render.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sigterm = listen(SignalKind::terminate());
    let mut sighup = listen(SignalKind::hangup());
    let mut sigint = listen(SignalKind::interrupt());
    let mut sigquit = listen(SignalKind::quit());
    let mut sigtstp = listen(SignalKind::from_raw(signal_hook::consts::SIGTSTP));
    let mut ending = listen_ending();
    loop {
        for req in app.take_requests() {
            match req {
                Request::SwitchCloud { name, region } => {
                    connect(reach.connector.as_ref(), name, region, switch_tx.clone())
                }
                other => worker.submit(other),
            }
        }
        tokio::select! {
            Some((cloud, result)) = switch_rx.recv() => match result {
                Ok(Reconnected { service: next, operator, notices, retire }) => {
                    worker.replace(next.clone(), operator.clone());
                    // The old cloud's requests are stopped: what it needed can end now.
                    if let Some(retire) = retire {
                        tokio::spawn(retire);
                    }
                    service = next;
                    app.update(Action::Switched {
                        info: Box::new(service.info()),
                        guard: operator.map(|o| o.guard()),
                        notices,
                    });
                    app.set_budget(service.budget());
                }
                Err(error) => app.update(Action::SwitchFailed { cloud, error }),
            },
            Some(()) = received(&mut sigterm) => {
                tracing::info!("SIGTERM: quitting");
                break;
            },
            Some(()) = received(&mut sighup) => {
                tracing::info!("SIGHUP: quitting");
                break;
            },
            Some(()) = received(&mut sigint) => {
                tracing::info!("SIGINT: quitting");
                break;
            },
            Some(()) = received(&mut sigquit) => {
                tracing::info!("SIGQUIT: quitting");
                break;
            },
            Some(()) = received(&mut sigtstp) => app.request_suspend(),
            Some(sig) = ending.recv() => {
                let name = signal_hook::low_level::signal_name(sig)
                    .map_or_else(|| format!("signal {sig}"), str::to_string);
                tracing::info!("{name}: quitting (exit status {})", 128 + sig);
                ENDED_BY.store(sig, Ordering::Relaxed);
                break;
            },
            ev = events.next() => match ev {
                Some(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => app.on_key(key),
                Some(Ok(Event::Resize(w, h))) => app.update(Action::Resize(w, h)),
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    tracing::error!("terminal event error: {e}");
                    break;
                }
                None => break,
            },
            Some(reply) = rx.recv() => {
                app.update(Action::Reply(reply));
                // Drain a burst (e.g. streamed addresses) without starving input.
                for _ in 0..4096 {
                    match rx.try_recv() {
                        Ok(r) => app.update(Action::Reply(r)),
                        Err(_) => break,
                    }
                }
            },
            _ = tick.tick() => app.update(Action::Tick {
                now: chrono::Utc::now(),
                info: Box::new(service.info()),
                budget: service.budget(),
            }),
            _ = render.tick() => {
                if app.dirty() {
                    app.prepare();
                    terminal.draw(|f| app.draw(f))?;
                    app.drawn();
                }
            }
        }
        if let Some(clip) = app.take_clipboard() {
            copy(terminal, &clip)?;
        }
        if app.should_quit() {
            break;
        }
        if app.take_suspend() {
            suspend(terminal, app)?;
        }
    }
    worker.shutdown();
    Ok(())
}

/// What the console reaches beyond its cloud: every cloud (the fleet view) and another
/// one (`:cloud`).
struct Reach {
    fleet: Option<crate::service::fleet_scan::SharedFleet>,
    connector: Option<Connector>,
}

/// How long `:cloud` waits for the new cloud (Keystone, the catalog) before giving up; the
/// console stays on its cloud, usable, meanwhile.
const SWITCH_TIMEOUT: Duration = Duration::from_secs(60);

/// Connects to `name` in the background; the answer comes back on `tx`.
fn connect(
    connector: Option<&Connector>,
    name: String,
    region: Option<String>,
    tx: tokio::sync::mpsc::UnboundedSender<(String, Result<Reconnected, String>)>,
) {
    let Some(connector) = connector.cloned() else {
        let _ = tx.send((
            name,
            Err("this console cannot reconnect (started without clouds.yaml)".into()),
        ));
        return;
    };
    tokio::spawn(async move {
        let connecting = (connector.0)(name.clone(), region);
        let result = match tokio::time::timeout(SWITCH_TIMEOUT, connecting).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} s", SWITCH_TIMEOUT.as_secs())),
        };
        let _ = tx.send((name, result));
    });
}

/// Puts `clip` on the operator's clipboard: the OSC 52 sequence, written through the
/// backend the frames go through and between two frames (never inside one).
fn copy(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    clip: &super::clipboard::Clip,
) -> Result<(), ConsoleError> {
    let backend = terminal.backend_mut();
    backend.write_all(clip.osc52().as_bytes())?;
    backend.flush()?;
    Ok(())
}

/// A signal stream, or none (logged) if it cannot be set up: the console still runs.
fn listen(kind: SignalKind) -> Option<Signal> {
    signal(kind)
        .inspect_err(|e| tracing::warn!("cannot listen for signal {kind:?}: {e}"))
        .ok()
}

/// The next delivery of a signal; never, for one that could not be set up.
async fn received(sig: &mut Option<Signal>) -> Option<()> {
    match sig {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// Give the terminal back to the shell, stop until SIGCONT, then take it again.
fn suspend(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    app: &mut App,
) -> Result<(), ConsoleError> {
    tracing::info!("suspending");
    restore_terminal();
    // SIGSTOP, not SIGTSTP: our own SIGTSTP listener would catch that one. The shell
    // sees a stopped job either way. Only this process stops (not its process group),
    // which is the whole job when started from a shell.
    if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGSTOP) {
        tracing::error!("cannot stop: {e}");
    }
    // Running again: the shell had the screen, so everything is drawn anew, at the
    // size the terminal has now.
    tracing::info!("resumed");
    enter_terminal()?;
    terminal.clear()?;
    // ratatui believes the cursor is still hidden; leaving raw mode showed it.
    terminal.hide_cursor()?;
    let size = terminal.size()?;
    app.update(Action::Resize(size.width, size.height));
    app.redraw();
    Ok(())
}
