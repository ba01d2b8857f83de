//! caldera: a terminal console for operators of OpenStack Magnum and Heat.
//!
//! The code is a workspace whose crates are its layers, from the wire up; each may use only the
//! ones before it, and the compiler enforces that:
//! - `caldera-cloud` (`crates/cloud`): `config`, `api` (transport and typed clients), `fetch`
//!   (the chunked, paginated, concurrent fetcher), `model` (domain types);
//! - `caldera-core` (`crates/core`): `ops`, `drivers`, `rollout`, `journal`, `lifecycle`,
//!   `service` (the seam the console and commands use), `templates`;
//! - `caldera-sim` (`crates/sim`): the built-in simulated cloud;
//! - `caldera-console` (`crates/console`): the console (`tui`);
//! - this package: the binary, its headless commands (`cli`) and benchmarks (`bench`).
//! - `caldera-testkit` (`crates/testkit`): fakes and the fault server, for tests only.
//!
//! This library re-exports the layers under their module names (`caldera::api`, `caldera::tui`,
//! …) for the binary, the integration tests and the examples.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub use caldera_cloud::{api, config, fetch, health, model, report};
pub use caldera_console as tui;
pub use caldera_core::{
    command_line, drivers, journal, lifecycle, ops, parameter_value, progress, rollout, service,
    templates,
};
pub use caldera_sim as sim;

pub mod bench;
pub mod cli;
