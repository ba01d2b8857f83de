//! The `caldera` binary: the console by default, headless commands as subcommands.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

use caldera::cli::args::ActionArgs;
use caldera::cli::args::{Cli, Command};
use caldera::cli::output::is_closed_pipe;
use caldera::cli::{commands, connect, operate};
use caldera::model::terminal_safe_lines;
use caldera::service::live::LiveService;
use caldera::service::live_operator::LiveOperator;
use caldera::service::operator::Operator;
use caldera::sim::SimOptions;
use caldera::tui::{self, ConsoleOptions};
use clap::Parser;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("caldera: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // Don't wait for stray blocking tasks (e.g. a stdin reader) once the work is done.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        // The console quit on a signal that ends a process (terminal restored): the status
        // a shell gives a process that signal ended.
        Ok(()) => match tui::ending_signal() {
            Some(sig) => ExitCode::from(u8::try_from(128 + sig).unwrap_or(u8::MAX)),
            None => ExitCode::SUCCESS,
        },
        // `caldera events | head`: the reader has what it wanted.
        Err(e) if is_closed_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors quote the cloud (a stack name, Heat's message): shown, never obeyed.
            eprintln!("caldera: {}", terminal_safe_lines(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> commands::CmdResult {
    // Logs go to a file, never to the terminal the console draws on.
    let _log = match &cli.console.log_file {
        Some(path) => tui::init_logging_to(path, "info"),
        None => tui::init_logging("info"),
    };
    match cli.command {
        Some(Command::Sim {
            addr,
            scenario,
            seed,
            speed,
        }) => {
            let options = SimOptions {
                addr,
                scenario,
                seed,
                speed,
                heat_native_demo: true,
                ..SimOptions::default()
            };
            caldera::sim::run_cli(options).await?;
            Ok(())
        }
        // Benchmarks start their own simulators and connections.
        Some(Command::Bench(args)) => caldera::bench::run(args).await,
        Some(Command::Journal { repair: true, .. }) => operate::journal_repair(&cli.actions).await,
        // Every cloud of clouds.yaml, each on its own connection.
        Some(Command::Fleet {
            cloud_timeout,
            format,
        }) => {
            caldera::api::http::announce_waits_on_stderr(true);
            caldera::cli::fleet_cmd::run(&cli.conn, cloud_timeout, format).await
        }
        Some(Command::Journal { follow, format, .. }) => {
            operate::journal(&cli.actions, follow, format).await
        }
        Some(command) => {
            // A service that accepts and never answers is named on stderr within seconds,
            // with its deadline, not after a silence as long as its timeout.
            caldera::api::http::announce_waits_on_stderr(true);
            let endpoint = connect::choose(&cli.conn, false)?;
            let early = early_warnings(&endpoint);
            let opened = connect::open(&endpoint, &cli.conn).await?;
            for warning in opened.conn.warnings() {
                if !early.contains(warning) {
                    eprintln!("warning: {}", terminal_safe_lines(&warning.to_string()));
                }
            }
            let mut conn = opened.conn.clone();
            if cli.console.read_only {
                conn.set_read_only(true);
            }
            let result = match command {
                Command::Scale { .. } | Command::Rollout { .. } | Command::Heat { .. } => {
                    operate::run(command, conn, &cli.actions).await
                }
                other => commands::run(other, conn, &cli.actions).await,
            };
            opened.close().await;
            result
        }
        None => {
            let endpoint = connect::choose(&cli.conn, true)?;
            if matches!(endpoint, connect::Endpoint::Simulator) && !cli.conn.simulator {
                eprintln!("caldera: no cloud configured; starting the built-in simulated cloud");
            }
            early_warnings(&endpoint);
            // Connecting happens before the console takes the terminal: a silent Keystone is
            // named on stderr, as for the headless commands; once connected, the header does.
            caldera::api::http::announce_waits_on_stderr(true);
            let opened = connect::open(&endpoint, &cli.conn).await;
            caldera::api::http::announce_waits_on_stderr(false);
            let connect::Opened {
                mut conn,
                simulator,
            } = opened?;
            let simulator = connect::BuiltInSim::new(simulator);
            if cli.console.read_only {
                conn.set_read_only(true);
            }
            let mut notices: Vec<String> =
                conn.warnings().iter().map(ToString::to_string).collect();
            // NaN and out-of-range values fall back to the default rather than panicking.
            let poll = std::time::Duration::try_from_secs_f64(
                cli.console.rollout_poll_secs.clamp(0.01, 3600.0),
            )
            .unwrap_or(std::time::Duration::from_secs(2));
            let operator = console_operator(&conn, &cli.actions, poll, &mut notices);
            let options = ConsoleOptions {
                theme: cli.console.theme.clone(),
                read_only: cli.console.read_only || conn.info().read_only,
                notices,
                fleet: console_fleet(&cli.conn),
                connector: Some(console_connector(&cli, poll, simulator.clone())),
                ..ConsoleOptions::default()
            };
            let service = Arc::new(LiveService::new(conn));
            let result = tui::run(service, operator, options).await;
            simulator.shutdown().await;
            result.map_err(Into::into)
        }
    }
}

/// Every cloud of clouds.yaml for the `:fleet` view, each asked on its own connection;
/// `None` (the view says so) when there is no clouds.yaml.
fn console_fleet(args: &caldera::cli::args::ConnectArgs) -> Option<tui::config::FleetHandle> {
    use caldera::service::fleet_scan::{LiveFleet, DEFAULT_CLOUD_TIMEOUT};
    let options = connect::connect_options(args).ok()?;
    let env = caldera::config::DiscoveryEnv::from_process();
    let fleet = LiveFleet::discover(&env, options, DEFAULT_CLOUD_TIMEOUT).ok()?;
    Some(tui::config::FleetHandle(Arc::new(fleet)))
}

/// How `:cloud NAME [REGION]` reconnects the console: the cloud from clouds.yaml (the
/// region, when given, instead of its `region_name`), connected with the same flags, its
/// actions through the same journal and hooks, `--read-only` kept. Leaving the built-in
/// simulator ends it (nothing leads back to it).
fn console_connector(
    cli: &Cli,
    poll: std::time::Duration,
    simulator: connect::BuiltInSim,
) -> tui::config::Connector {
    let conn_args = cli.conn.clone();
    let actions = cli.actions.clone();
    let read_only = cli.console.read_only;
    tui::config::Connector(Arc::new(move |name, region| {
        let (conn_args, actions) = (conn_args.clone(), actions.clone());
        let simulator = simulator.clone();
        Box::pin(async move {
            let env = caldera::config::DiscoveryEnv::from_process();
            let mut cloud =
                caldera::config::load_cloud(&env, Some(&name)).map_err(|e| e.to_string())?;
            if region.is_some() {
                cloud.region_name = region;
            }
            let options = connect::connect_options(&conn_args).map_err(|e| e.to_string())?;
            let mut conn = caldera::api::cloud::CloudConnection::from_cloud(&cloud, &options)
                .await
                .map_err(|e| e.to_string())?;
            if read_only {
                conn.set_read_only(true);
            }
            let mut notices: Vec<String> =
                conn.warnings().iter().map(ToString::to_string).collect();
            let operator = console_operator(&conn, &actions, poll, &mut notices);
            let service: Arc<dyn caldera::service::CloudService> = Arc::new(LiveService::new(conn));
            Ok(tui::config::Reconnected {
                service,
                operator,
                notices,
                retire: simulator.retire(),
            })
        })
    }))
}

/// Warnings about the configuration itself (a password file others can read), printed
/// before authenticating: they hold whether or not the credentials still work. Returned so
/// that the connection's own list does not print them twice.
fn early_warnings(endpoint: &connect::Endpoint) -> Vec<String> {
    let connect::Endpoint::Cloud(cloud) = endpoint else {
        return Vec::new();
    };
    let warnings = caldera::config::clouds::permission_warnings(cloud);
    for w in &warnings {
        eprintln!("warning: {}", terminal_safe_lines(w));
    }
    warnings
}

/// The console's actions over the same connection: the journal (`--journal` or the default),
/// the lifecycle hooks (`--actions-config` or the default file) and the guard rails (the
/// cloud's `caldera:` settings and `--read-only`, already on the connection). A hooks file
/// that does not parse turns actions off with a notice: running a rollout without the
/// operator's drain or health hooks would be worse than not running it.
fn console_operator(
    conn: &caldera::api::cloud::CloudConnection,
    args: &ActionArgs,
    poll: std::time::Duration,
    notices: &mut Vec<String>,
) -> Option<Arc<dyn Operator>> {
    match operate::actions_config(args) {
        Ok(config) => Some(Arc::new(LiveOperator::new(
            conn,
            operate::action_context(conn, args),
            config,
            poll,
        ))),
        Err(e) => {
            notices.push(format!("actions are off: {e} (fix the file and restart)"));
            None
        }
    }
}
