//! The `caldera` binary: the console by default, headless commands as subcommands.

use caldera::cli::args::{Cli, Command};
use caldera::cli::{commands, connect};
use caldera::service::live::LiveService;
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
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("caldera: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> commands::CmdResult {
    match cli.command {
        Some(Command::Sim { .. }) => Err("the simulator is not built into this binary yet".into()),
        Some(command) => {
            let endpoint = connect::choose(&cli.conn, false)?;
            let conn = connect::connect(&endpoint, &cli.conn).await?;
            for warning in conn.warnings() {
                eprintln!("warning: {warning}");
            }
            commands::run(command, conn).await
        }
        None => {
            let endpoint = connect::choose(&cli.conn, false)?;
            let conn = connect::connect(&endpoint, &cli.conn).await?;
            let notices = conn.warnings().iter().map(ToString::to_string).collect();
            let service = Arc::new(LiveService::new(conn));
            let _log = match &cli.console.log_file {
                Some(path) => tui::init_logging_to(path, "info"),
                None => tui::init_logging("info"),
            };
            let options = ConsoleOptions {
                theme: cli.console.theme.clone(),
                read_only: cli.console.read_only,
                notices,
                ..ConsoleOptions::default()
            };
            tui::run(service, options)
                .await
                .map_err(|e| e.to_string().into())
        }
    }
}
