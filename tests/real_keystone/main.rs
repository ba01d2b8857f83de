//! caldera through a real OpenStack Keystone and the real Heat behind it, on 127.0.0.1.
//! `scripts/real-keystone-suite.sh` starts both and runs these with `--ignored`. `basics` was
//! `tests/real_keystone.rs`, `actions` was `tests/real_keystone_actions.rs`.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The shared test support (tests/support/), the parts this binary uses.
#[path = "../support"]
mod support {
    // The console binary's pty driver; these cases use only part of it.
    #[allow(dead_code)]
    pub mod pty;
    pub mod real_keystone_env;
    // The operator-action scenarios run whole by the offline and real_heat binaries; these
    // cases drive the same flows their own way and use only the environment and checks.
    #[allow(dead_code)]
    pub mod scenarios;
}

mod actions;
mod basics;
