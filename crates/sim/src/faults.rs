//! Fault injection: latency, error statuses (500/503 by rate or next-N), 429 with
//! Retry-After, dropped connections and truncated bodies at the HTTP layer, plus failing
//! and stuck nodes in the world. Controlled at runtime through [`FaultControl`] (tests)
//! and by scenarios. Draws come from a seeded RNG so a run is reproducible.

use crate::world::World;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

#[derive(Debug, Clone)]
pub enum FaultKind {
    /// Answer with this HTTP status (500, 503, ...) and the service's error body.
    Status(u16),
    /// 429 Too Many Requests with `Retry-After: secs`.
    Throttle { retry_after_secs: u64 },
    /// Close the connection without answering.
    Drop,
    /// Send the headers and half of the body, then close the connection.
    Truncate,
    /// Delay the answer.
    Latency(Duration),
    /// Answer with exactly this status, content type and body instead of the service's
    /// answer: malformed JSON, HTML error pages from a proxy, enormous bodies.
    Raw {
        status: u16,
        content_type: String,
        body: bytes::Bytes,
    },
    /// The service's real answer with its JSON body passed through this function first:
    /// nulls and missing fields where the real services would never leave them out.
    Mangle(fn(&mut serde_json::Value)),
}

#[derive(Debug, Clone)]
pub struct Fault {
    pub kind: FaultKind,
    /// How many more requests it applies to; `None` = until cleared.
    pub remaining: Option<u32>,
    /// Probability that a matching request is hit (1.0 = every one).
    pub rate: f64,
    /// Only requests whose path starts with this; `None` = every API except Keystone
    /// (so clients can still authenticate while the services misbehave).
    pub path_prefix: Option<String>,
}

impl Fault {
    pub fn new(kind: FaultKind) -> Fault {
        Fault {
            kind,
            remaining: None,
            rate: 1.0,
            path_prefix: None,
        }
    }
    pub fn times(mut self, n: u32) -> Fault {
        self.remaining = Some(n);
        self
    }
    pub fn rate(mut self, rate: f64) -> Fault {
        self.rate = rate;
        self
    }
    pub fn on_path(mut self, prefix: &str) -> Fault {
        self.path_prefix = Some(prefix.to_string());
        self
    }
    fn matches(&self, path: &str) -> bool {
        match &self.path_prefix {
            Some(p) => path.starts_with(p.as_str()),
            None => !path.starts_with("/identity"),
        }
    }
}

/// What the server does with one request.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub latency: Duration,
    pub action: Option<FaultKind>,
}

pub(crate) struct FaultState {
    faults: Vec<Fault>,
    rng: StdRng,
    injected: u64,
    /// Requests seen per (method, path), so tests can check what a client sent (retries,
    /// no repeated POSTs). Bounded by the number of distinct paths the world has.
    requests: HashMap<(String, String), u64>,
    /// Every request the server saw (benchmarks count a client's requests with it).
    seen: u64,
}

/// Runtime handle on the simulator's faults (cheap to clone).
#[derive(Clone)]
pub struct FaultControl {
    state: Arc<Mutex<FaultState>>,
    world: Arc<Mutex<World>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock must not take the whole simulator down.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl FaultControl {
    pub(crate) fn new(seed: u64, world: Arc<Mutex<World>>, initial: Vec<Fault>) -> FaultControl {
        FaultControl {
            state: Arc::new(Mutex::new(FaultState {
                faults: initial,
                rng: StdRng::seed_from_u64(seed ^ 0x5eed_fa17),
                injected: 0,
                requests: HashMap::new(),
                seen: 0,
            })),
            world,
        }
    }

    pub fn add(&self, fault: Fault) {
        lock(&self.state).faults.push(fault);
    }

    pub fn clear(&self) {
        lock(&self.state).faults.clear();
    }

    pub fn set_latency(&self, d: Duration) {
        let mut st = lock(&self.state);
        st.faults
            .retain(|f| !matches!(f.kind, FaultKind::Latency(_)));
        if !d.is_zero() {
            st.faults.push(Fault::new(FaultKind::Latency(d)));
        }
    }

    pub fn fail_next(&self, n: u32, status: u16) {
        self.add(Fault::new(FaultKind::Status(status)).times(n));
    }

    pub fn error_rate(&self, rate: f64, status: u16) {
        self.add(Fault::new(FaultKind::Status(status)).rate(rate));
    }

    pub fn throttle_next(&self, n: u32, retry_after_secs: u64) {
        self.add(Fault::new(FaultKind::Throttle { retry_after_secs }).times(n));
    }

    pub fn drop_next(&self, n: u32) {
        self.add(Fault::new(FaultKind::Drop).times(n));
    }

    pub fn truncate_next(&self, n: u32) {
        self.add(Fault::new(FaultKind::Truncate).times(n));
    }

    /// Requests the server received with `method` on paths starting with `path_prefix`
    /// (faulted ones included).
    pub fn requests(&self, method: &str, path_prefix: &str) -> u64 {
        lock(&self.state)
            .requests
            .iter()
            .filter(|((m, p), _)| m.eq_ignore_ascii_case(method) && p.starts_with(path_prefix))
            .map(|(_, n)| *n)
            .sum()
    }

    /// Every (method, path) the server received and how many times, sorted (faulted ones
    /// included): for a test to pick requests by what their path ends with.
    pub fn request_counts(&self) -> Vec<(String, String, u64)> {
        let mut all: Vec<(String, String, u64)> = lock(&self.state)
            .requests
            .iter()
            .map(|((m, p), n)| (m.clone(), p.clone(), *n))
            .collect();
        all.sort();
        all
    }

    /// Forgets the request counts.
    pub fn reset_requests(&self) {
        lock(&self.state).requests.clear();
    }

    pub(crate) fn record(&self, method: &str, path: &str) {
        *lock(&self.state)
            .requests
            .entry((method.to_string(), path.to_string()))
            .or_insert(0) += 1;
    }

    /// How many requests a fault has hit so far.
    pub fn injected(&self) -> u64 {
        lock(&self.state).injected
    }

    /// How many requests the server has seen so far (Keystone included).
    pub fn requests_seen(&self) -> u64 {
        lock(&self.state).seen
    }

    /// Makes member `index` of a node group fail its next create/update with `reason`.
    /// `group` is a node-group stack name or id, or `cluster/nodegroup` (Magnum names).
    pub fn fail_node(&self, group: &str, index: u32, reason: &str) -> bool {
        let mut w = lock(&self.world);
        match find_group(&w, group) {
            Some(g) => {
                w.groups[g]
                    .fail
                    .insert(index, crate::world::FailSpec::nova(reason));
                true
            }
            None => false,
        }
    }

    /// Makes member `index` never finish its next create/update (a stuck stack).
    pub fn stick_node(&self, group: &str, index: u32) -> bool {
        let mut w = lock(&self.world);
        match find_group(&w, group) {
            Some(g) => {
                w.groups[g].stuck.insert(index);
                true
            }
            None => false,
        }
    }

    /// Removes node faults from a group.
    pub fn heal_nodes(&self, group: &str) -> bool {
        let mut w = lock(&self.world);
        match find_group(&w, group) {
            Some(g) => {
                w.groups[g].fail.clear();
                w.groups[g].stuck.clear();
                true
            }
            None => false,
        }
    }

    pub(crate) fn decide(&self, path: &str) -> Decision {
        let mut st = lock(&self.state);
        let mut d = Decision::default();
        st.seen += 1;
        let FaultState {
            faults,
            rng,
            injected,
            ..
        } = &mut *st;
        for f in faults.iter_mut() {
            if !f.matches(path) || f.remaining == Some(0) {
                continue;
            }
            if f.rate < 1.0 && rng.gen::<f64>() >= f.rate {
                continue;
            }
            match &f.kind {
                FaultKind::Latency(l) => d.latency += *l,
                other => {
                    if d.action.is_some() {
                        continue;
                    }
                    d.action = Some(other.clone());
                }
            }
            if let Some(r) = f.remaining.as_mut() {
                *r -= 1;
            }
            *injected += 1;
        }
        faults.retain(|f| f.remaining != Some(0));
        d
    }
}

pub(crate) fn find_group(w: &World, ident: &str) -> Option<usize> {
    if let Some((c, ng)) = ident.split_once('/') {
        let ci = w.cluster_by_ident(c)?;
        return w.clusters[ci]
            .groups
            .iter()
            .copied()
            .find(|g| w.groups[*g].name == ng || w.groups[*g].uuid == ng);
    }
    let s = w.find_stack(ident)?;
    w.groups.iter().position(|g| g.ng_stack == s)
}
