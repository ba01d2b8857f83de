//! The console: a k9s-like terminal UI over a [`CloudService`](crate::service::CloudService).
//!
//! ```no_run
//! # async fn demo(svc: std::sync::Arc<dyn caldera_core::service::CloudService>) {
//! let _log = caldera_console::init_logging("info"); // $XDG_STATE_HOME/caldera/caldera.log
//! caldera_console::run(svc, None, caldera_console::ConsoleOptions::default()).await.ok();
//! # }
//! ```
//!
//! Layout of the module:
//! - `state`: the one app state; typed [`message::Action`]s in, [`message::Request`]s out,
//!   worker [`message::Reply`]s tagged with a generation (stale ones dropped);
//! - `draw`: a pure function of the state (`App::draw(&self, frame)`);
//! - `widgets`: the data table (state / sort / filter / draw kept apart) and the heat map;
//! - `keys`: the key table (handling, `?` help and footer hints all come from it);
//! - `theme`, `config`: TOML themes (`themes/*.toml` built in, user ones in
//!   `$XDG_CONFIG_HOME/caldera/themes`) and `$XDG_CONFIG_HOME/caldera/config.toml`,
//!   with `file:line:col` errors and fallback to the defaults;
//! - `worker`: background tasks doing all I/O through the service;
//! - `runtime`: terminal setup, panic hook, logging and the event loop.
//!
//! Try it without a cloud: `cargo run --example fake_console -- --nodes 1000`.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

// The layers below, named as `crate::api`, `crate::service`, … so paths read the same in every
// crate. The console never names the simulator.
pub(crate) use caldera_cloud::model;
pub(crate) use caldera_core::{drivers, journal, lifecycle, ops, progress, rollout};
/// The read/act seam, plus (in this crate's own tests) the in-memory fakes.
pub(crate) mod service {
    pub use caldera_core::service::*;
    #[cfg(test)]
    pub use caldera_testkit::{fake, fake_operator};
}

mod action_columns;
mod cell_text;
pub mod clipboard;
pub mod config;
mod draw;
pub mod keys;
pub mod message;
pub mod resource_columns;
mod runtime;
pub mod state;
pub mod theme;
mod views;
pub mod widgets;
pub mod worker;

pub use config::ConsoleOptions;
pub use draw::backstop;
pub use runtime::{ending_signal, init_logging, init_logging_to, log_path, run, ConsoleError};

#[cfg(test)]
mod actions_tests;
#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod tests;
