//! Tests against a real OpenStack Heat on 127.0.0.1 (and their simulator halves, which run in a
//! plain `cargo test`). `scripts/real-heat-suite.sh` starts the Heat and runs the ignored ones with
//! `--ignored`; HEAT_URL must point at it. Each module is what used to be one
//! `tests/real_heat_<module>.rs` binary (`basics` was `tests/real_heat.rs`), so
//! `cargo test --test real_heat -- --ignored api::` runs what `--test real_heat_api` did.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The shared test support (tests/support/), the parts this binary uses.
#[path = "../support"]
mod support {
    // The builder of a `caldera` run; these cases use only part of it.
    #[allow(dead_code)]
    pub mod cli;
    pub mod heat_wait;
    // The console in a pseudo-terminal, for what the operator sees of an action.
    #[allow(dead_code)]
    pub mod pty;
    pub mod real_heat_client;
    pub mod real_heat_env;
    pub mod rollout_steps;
    pub mod scenarios;
}

mod actions;
mod any_group;
mod api;
mod basics;
mod conformance;
mod control;
mod corpus;
mod deployments;
mod details;
mod discovery;
mod events;
mod hostile;
mod magnum;
mod manual;
mod net;
mod outside_shapes;
mod purged_hooks;
mod safety;
mod shapes;
mod steps;
