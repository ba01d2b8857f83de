//! The process-wide request budget: how many requests may be in flight at once and how many
//! may start per second. Every HTTP request takes a permit, so a refresh storm from many views
//! queues here instead of hammering Heat (whose API workers are few).

use crate::report::BudgetStats;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Limits for a [`RequestBudget`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetConfig {
    pub max_in_flight: u32,
    /// Starts allowed in any one-second window; `None` for no rate limit.
    pub max_per_second: Option<u32>,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            max_in_flight: 8,
            max_per_second: Some(25),
        }
    }
}

/// Shared (cheap to clone) request budget.
#[derive(Clone)]
pub struct RequestBudget {
    inner: Arc<Inner>,
}

struct Inner {
    config: BudgetConfig,
    slots: Arc<Semaphore>,
    /// Serialises waiters for a rate slot so they start in arrival order.
    gate: tokio::sync::Mutex<()>,
    /// Start times within the last second (sliding window).
    starts: Mutex<VecDeque<Instant>>,
    total: AtomicU64,
    retries: AtomicU64,
}

const WINDOW: Duration = Duration::from_secs(1);

/// Held for the duration of one request; returns its in-flight slot when dropped.
pub struct BudgetPermit {
    _slot: Option<OwnedSemaphorePermit>,
}

impl RequestBudget {
    pub fn new(config: BudgetConfig) -> Self {
        let max = config.max_in_flight.max(1);
        RequestBudget {
            inner: Arc::new(Inner {
                config: BudgetConfig {
                    max_in_flight: max,
                    max_per_second: config.max_per_second.map(|n| n.max(1)),
                },
                slots: Arc::new(Semaphore::new(max as usize)),
                gate: tokio::sync::Mutex::new(()),
                starts: Mutex::new(VecDeque::new()),
                total: AtomicU64::new(0),
                retries: AtomicU64::new(0),
            }),
        }
    }

    pub fn config(&self) -> BudgetConfig {
        self.inner.config
    }

    /// Waits for an in-flight slot, then for a start slot within the per-second limit.
    /// Cancel-safe: dropping the future before it resolves consumes nothing.
    pub async fn acquire(&self) -> BudgetPermit {
        // The semaphore is never closed, so this is always Ok; if it were closed, running
        // unbudgeted beats failing the request.
        let slot = self.inner.slots.clone().acquire_owned().await.ok();
        if let Some(limit) = self.inner.config.max_per_second {
            let _gate = self.inner.gate.lock().await;
            loop {
                let now = Instant::now();
                let wait = {
                    let mut starts = lock(&self.inner.starts);
                    prune(&mut starts, now);
                    if starts.len() < limit as usize {
                        starts.push_back(now);
                        None
                    } else {
                        starts
                            .front()
                            .map(|oldest| (*oldest + WINDOW).saturating_duration_since(now))
                    }
                };
                match wait {
                    None => break,
                    Some(d) => tokio::time::sleep(d.max(Duration::from_millis(1))).await,
                }
            }
        } else {
            let now = Instant::now();
            let mut starts = lock(&self.inner.starts);
            prune(&mut starts, now);
            starts.push_back(now);
        }
        self.inner.total.fetch_add(1, Ordering::Relaxed);
        BudgetPermit { _slot: slot }
    }

    /// Waits until a request could start now (an in-flight slot and a start slot within the
    /// per-second limit are free), without taking either: for a request that should wait
    /// its turn but must not be held up once it is sent.
    pub async fn until_free(&self) {
        loop {
            let now = Instant::now();
            let wait = {
                let mut starts = lock(&self.inner.starts);
                prune(&mut starts, now);
                match self.inner.config.max_per_second {
                    Some(limit) if starts.len() >= limit as usize => starts
                        .front()
                        .map(|oldest| (*oldest + WINDOW).saturating_duration_since(now)),
                    _ if self.inner.slots.available_permits() == 0 => {
                        Some(Duration::from_millis(10))
                    }
                    _ => None,
                }
            };
            match wait {
                None => return,
                Some(d) => tokio::time::sleep(d.max(Duration::from_millis(1))).await,
            }
        }
    }

    /// Counts one automatic retry (for the header's statistics).
    pub fn record_retry(&self) {
        self.inner.retries.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stats(&self) -> BudgetStats {
        let in_flight = self
            .inner
            .config
            .max_in_flight
            .saturating_sub(self.inner.slots.available_permits() as u32);
        let per_second = {
            let mut starts = lock(&self.inner.starts);
            prune(&mut starts, Instant::now());
            starts.len() as f64
        };
        BudgetStats {
            in_flight,
            max_in_flight: self.inner.config.max_in_flight,
            per_second,
            max_per_second: self
                .inner
                .config
                .max_per_second
                .map(f64::from)
                .unwrap_or(f64::INFINITY),
            total_requests: self.inner.total.load(Ordering::Relaxed),
            total_retries: self.inner.retries.load(Ordering::Relaxed),
        }
    }
}

impl Default for RequestBudget {
    fn default() -> Self {
        RequestBudget::new(BudgetConfig::default())
    }
}

fn prune(starts: &mut VecDeque<Instant>, now: Instant) {
    while let Some(front) = starts.front() {
        if now.duration_since(*front) >= WINDOW {
            starts.pop_front();
        } else {
            break;
        }
    }
}

/// A poisoned lock only means another thread panicked mid-update of a counter list; the data
/// is still usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[tokio::test]
    async fn in_flight_never_exceeds_limit() {
        let budget = RequestBudget::new(BudgetConfig {
            max_in_flight: 3,
            max_per_second: None,
        });
        let current = Arc::new(AtomicU32::new(0));
        let peak = Arc::new(AtomicU32::new(0));
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let (b, c, p) = (budget.clone(), current.clone(), peak.clone());
            tasks.push(tokio::spawn(async move {
                let _permit = b.acquire().await;
                let now = c.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                c.fetch_sub(1, Ordering::SeqCst);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        assert_eq!(budget.stats().total_requests, 12);
        assert_eq!(budget.stats().in_flight, 0);
    }

    #[tokio::test]
    async fn per_second_limit_spreads_starts() {
        let budget = RequestBudget::new(BudgetConfig {
            max_in_flight: 100,
            max_per_second: Some(5),
        });
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..12 {
            let _p = budget.acquire().await;
            starts.push(t0.elapsed());
        }
        // 12 starts at 5/s need at least two full windows.
        assert!(
            t0.elapsed() >= Duration::from_millis(1990),
            "{:?}",
            t0.elapsed()
        );
        // No one-second window holds more than five starts.
        for (i, s) in starts.iter().enumerate() {
            let in_window = starts[i..].iter().filter(|t| **t < *s + WINDOW).count();
            assert!(in_window <= 5, "window starting at {s:?} has {in_window}");
        }
        let stats = budget.stats();
        assert!(stats.per_second <= 5.0);
        assert_eq!(stats.max_per_second, 5.0);
    }
}
