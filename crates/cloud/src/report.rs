//! What the cloud layer reports to everything above it: its errors (worded for an operator,
//! never holding a secret), the connected cloud's facts and the request budget's use.

use crate::health;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of failure, so the console can word it and decide on retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorKind {
    /// Bad or missing configuration.
    Config,
    /// Authentication failed or the token could not be renewed.
    Auth,
    /// The server answered with an HTTP error (status in the message).
    Http,
    /// Timeout, connection refused or reset, TLS failure.
    Transport,
    /// The body could not be understood (truncated, malformed, missing field).
    Decode,
    /// The thing asked for does not exist.
    NotFound,
    /// The operation is not offered by this cloud or driver.
    Unsupported,
    /// Blocked by a guard rail (read-only mode, confirmation missing).
    Refused,
}

/// An error the console can show and clone. It never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ServiceError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ServiceError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServiceError {}

pub type ServiceResult<T> = Result<T, ServiceError>;

/// Facts about the connected cloud for the console's header.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CloudInfo {
    /// The clouds.yaml name, `simulator`, or `standalone`.
    pub cloud: String,
    pub region: Option<String>,
    pub project: Option<String>,
    /// e.g. `container-infra 1.10`, `heat v1`.
    pub api_versions: Vec<String>,
    pub is_simulator: bool,
    pub read_only: bool,
    /// Whether a Magnum endpoint is present (else clusters come from Heat-native stacks only).
    pub has_magnum: bool,
    /// Each service's last known state (a slow or dead one is shown in the header).
    #[serde(default)]
    pub services: Vec<health::ServiceHealth>,
}

/// Request budget use, for the header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetStats {
    pub in_flight: u32,
    pub max_in_flight: u32,
    /// Requests started in the last second.
    pub per_second: f64,
    pub max_per_second: f64,
    pub total_requests: u64,
    pub total_retries: u64,
}
