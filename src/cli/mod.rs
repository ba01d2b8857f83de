//! Headless commands: data on stdout, progress on stderr.

pub mod args;
pub mod output;
