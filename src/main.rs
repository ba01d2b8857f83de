//! The `caldera` binary: the console by default, headless commands as subcommands.

use caldera::cli::args::{Cli, Command};
use caldera::cli::{commands, connect};
use clap::Parser;
use std::process::ExitCode;

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
        None => Err("the console is not built into this binary yet".into()),
    }
}
