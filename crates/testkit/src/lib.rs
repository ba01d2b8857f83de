//! Test support shared by caldera's crates and tests, never part of the shipped libraries:
//! the in-memory fake cloud and fake operator the console's tests (and `caldera bench`'s
//! render figures) drive, and the cloud layer's scriptable fault server.

// Tests may unwrap, expect and panic (the workspace denies them elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub(crate) use caldera_cloud::model;
pub(crate) use caldera_core::{drivers, journal, lifecycle, rollout};
pub(crate) mod service {
    pub use caldera_core::service::*;
}

pub mod fake;
pub mod fake_operator;
pub use caldera_cloud::testing::fault_server;
