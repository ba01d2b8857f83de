//! Serves the simulated cloud until Ctrl-C (`cargo run --example sim_serve -- demo 8777`).
#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_else(|| "demo".into());
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let opts = caldera::sim::SimOptions {
        scenario,
        addr: ([127, 0, 0, 1], port).into(),
        ..Default::default()
    };
    if let Err(e) = caldera::sim::run_cli(opts).await {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
