//! Test helpers: a local HTTP server on 127.0.0.1 that misbehaves on request.

pub mod fault_server;
