//! What every handler shares: the world, the fault controls, the issued tokens and the server's
//! settings. The HTTP front (`server`) builds it and the services' handlers read it; neither
//! imports the other for it.

use crate::faults::FaultControl;
use crate::world::World;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Settings the handlers need besides the world.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub base: String,
    pub token_ttl: Duration,
    pub output_cost_per_member: Duration,
    pub detail_cost_per_resource: Duration,
    pub user_name: String,
    pub user_id: String,
    pub password: String,
    pub project_name: String,
    pub project_id: String,
    pub domain: String,
    pub app_cred_id: String,
    pub app_cred_secret: String,
}

pub struct Shared {
    pub world: Arc<Mutex<World>>,
    pub faults: FaultControl,
    pub tokens: Mutex<Tokens>,
    pub cfg: ServerConfig,
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A token Keystone issued (`keystone` issues, validates and revokes them).
#[derive(Debug, Clone)]
pub struct Token {
    pub issued: DateTime<Utc>,
    pub expires: DateTime<Utc>,
    pub methods: Vec<&'static str>,
    pub scoped: bool,
    pub audit_id: String,
}

/// Every token issued by this simulator's Keystone, by id.
#[derive(Default)]
pub struct Tokens {
    map: HashMap<String, Token>,
}

impl Tokens {
    /// Every token id issued and not yet forgotten.
    pub fn ids(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    pub fn get(&self, id: &str) -> Option<&Token> {
        self.map.get(id)
    }

    pub fn remove(&mut self, id: &str) -> Option<Token> {
        self.map.remove(id)
    }

    pub fn insert(&mut self, id: String, t: Token) {
        // Forget long-expired tokens so a client renewing in a loop cannot grow the map.
        let now = Utc::now();
        if self.map.len() > 10_000 {
            self.map.retain(|_, t| t.expires > now);
        }
        self.map.insert(id, t);
    }
}
