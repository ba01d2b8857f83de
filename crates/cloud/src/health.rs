//! How each of the cloud's services is doing, as the transport last saw it: for the console's
//! header and for the words of errors. A service is judged by its own requests only, so a
//! Magnum that never answers shows as such while Heat stays green.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The OpenStack services caldera talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Api {
    Keystone,
    Heat,
    Magnum,
    Nova,
}

impl Api {
    pub const ALL: [Api; 4] = [Api::Keystone, Api::Heat, Api::Magnum, Api::Nova];

    /// The operator's name for it (`Magnum`), used in errors.
    pub fn name(self) -> &'static str {
        match self {
            Api::Keystone => "Keystone",
            Api::Heat => "Heat",
            Api::Magnum => "Magnum",
            Api::Nova => "Nova",
        }
    }

    /// The key of `--timeout KEY=SECS` and of the header (`magnum`).
    pub fn key(self) -> &'static str {
        match self {
            Api::Keystone => "keystone",
            Api::Heat => "heat",
            Api::Magnum => "magnum",
            Api::Nova => "nova",
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The last word on a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Availability {
    /// Nothing has come back yet (a probe is under way).
    Probing,
    /// It answered its last request.
    Up,
    /// Its last request timed out (no answer, or a body that trickled).
    Slow,
    /// Its last request could not connect, or it answered with a server error.
    Down,
}

/// One service's state for the header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceHealth {
    pub api: Api,
    pub health: Availability,
    /// What went wrong, when it did: `no answer within 10 s (first-byte timeout)`.
    pub detail: Option<String>,
}

impl ServiceHealth {
    /// `magnum: no answer within 10 s`, or `heat ok`.
    pub fn label(&self) -> String {
        match (&self.health, &self.detail) {
            (Availability::Up, _) => format!("{} ok", self.api.key()),
            (Availability::Probing, _) => format!("{} …", self.api.key()),
            (_, Some(detail)) => format!("{}: {detail}", self.api.key()),
            (Availability::Slow, None) => format!("{}: slow", self.api.key()),
            (Availability::Down, None) => format!("{}: down", self.api.key()),
        }
    }

    pub fn is_ok(&self) -> bool {
        self.health == Availability::Up
    }
}
