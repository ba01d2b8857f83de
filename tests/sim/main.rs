//! Tests of the simulated cloud, talking to it over HTTP on 127.0.0.1 with plain reqwest.

mod common;
mod faults;
mod fixtures;
mod heat;
mod keystone;
mod magnum;
mod nova;
mod perf;
