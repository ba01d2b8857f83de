//! Offline tests: the CLI, the clients, the services and the operator actions against the
//! in-process simulator and fakes (no terminal, no real service). One test binary; each module
//! is what used to be one `tests/<module>.rs` binary (`actions` was `tests/actions/`), so
//! `cargo test --test offline fault_matrix::` runs what `--test fault_matrix` did.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The shared test support (tests/support/), the parts this binary uses.
#[path = "../support"]
mod support {
    // Each module runs the binary its own way; none uses all of the builder.
    #[allow(dead_code)]
    pub mod cli;
    pub mod fuzzing;
    pub mod rollout_steps;
    pub mod scenarios;
    pub mod sim_group;
}

mod actions;
mod actions_cli;
mod also_held_sim;
mod capi_cluster;
mod cli_habits;
mod closing_wait_sim;
mod deployments_sim;
mod detail_views_sim;
mod event_follow;
mod fault_matrix;
mod fleet_cli;
mod fuzz_parsers;
mod heat_controls_cli;
mod hooks_purged_sim;
mod ips_stream;
mod journal_faults;
mod live_operator_sim;
mod names_cli;
mod nodegroups_progress;
mod observed_update;
mod paused_rollout_cli;
mod plain_stack_facts;
mod rollout_steps;
mod secrets;
mod stack_outputs_sim;
mod why_cli;
mod why_stuck_sim;
