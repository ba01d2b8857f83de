//! Headless commands: data on stdout, progress on stderr.

pub mod args;
pub mod commands;
pub mod connect;
pub mod deployments;
pub mod fleet_cmd;
pub mod follow;
pub mod ips_table;
pub mod operate;
pub mod output;
pub mod targets;
pub mod why;
