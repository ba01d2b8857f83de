//! The console: a k9s-like terminal UI over a [`CloudService`].
//!
//! - `state`: the one app state, typed actions in, requests out (`state/`);
//! - `draw`: a pure function of the state (`draw/`);
//! - `widgets`: the data table (state / sort / filter / draw) and the heat map;
//! - `keys`: the key table (handling, `?` help and footer hints come from it);
//! - `theme`, `config`: themes and the config file, with file:line:col errors;
//! - `worker`: background tasks doing all I/O through the service;
//! - `runtime`: terminal setup, panic hook and the event loop.

pub mod action;
pub mod columns;
pub mod config;
mod draw;
pub mod keys;
mod runtime;
pub mod state;
pub mod theme;
pub mod widgets;
pub mod worker;

pub use config::ConsoleOptions;
pub use runtime::{init_logging, log_path, run, ConsoleError};

#[cfg(test)]
mod tests;
