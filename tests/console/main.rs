//! The console: the real `caldera` binary in a pseudo-terminal (end to end, read through a
//! terminal emulator) and the console's state machine under faults. One test binary; each module
//! is what used to be one `tests/<module>.rs` binary, so `cargo test --test console console_net::`
//! runs what `--test console_net` did.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The shared test support (tests/support/), the parts this binary uses.
#[path = "../support"]
mod support {
    // The command line beside the console (`nodegroups`, `rollout status`).
    #[allow(dead_code)]
    pub mod cli;
    pub mod pty;
    // The operator-action scenarios run whole by the offline and real_heat binaries; these
    // cases drive the same flows their own way and use only the environment and checks.
    #[allow(dead_code)]
    pub mod scenarios;
    // The console's cases start from the Heat-native groups, not the Magnum cluster.
    #[allow(dead_code)]
    pub mod sim_group;
}

mod console_actions_e2e;
mod console_e2e;
mod console_hardening;
mod console_heat_controls_e2e;
mod console_net;
mod fleet_console_e2e;
mod hostile_text;
mod observed_progress_e2e;
mod reliability_iii;
