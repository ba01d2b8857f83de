//! Tests of the simulated cloud, talking to it over HTTP on 127.0.0.1 with plain reqwest
//! (`cargo test -p caldera-sim --test http`; it was `tests/sim/` of the root package).

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod faults_cases;
mod fixtures;
mod heat_cases;
mod keystone_cases;
mod magnum_cases;
mod nova_cases;
mod perf;
