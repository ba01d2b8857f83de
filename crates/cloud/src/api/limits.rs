//! What one request may cost: time, by phase and by purpose, and memory, per response and for
//! every response held at once.
//!
//! Time. A request has three phases with different normal durations, so one whole-request
//! timeout is either too short for a big listing or far too long for a dead service:
//! - connect (TCP and TLS): milliseconds on a live cloud;
//! - first byte (the response headers): the service thinks; Heat builds a whole nested
//!   listing before it sends anything, Magnum and Keystone answer from a database row;
//! - the body: proportional to its size, so it gets a deadline that grows with every byte
//!   received (a trickling proxy cannot hold a request forever) and an idle limit between
//!   two pieces.
//!
//! The first byte's limit depends on who is asked and why: each service has its own, a
//! discovery probe (a static version document) gets a short one and is not retried on a
//! timeout, and an event follower's poll gets its own (the follower retries forever on its
//! own schedule, see `cli::follow`).
//!
//! Memory. Every response body is read chunk by chunk into memory reserved from one pool
//! shared by the whole process ([`ResponseMemory`]); a body waits a little for room when the
//! pool is full, then fails with an error naming the limit. A per-response cap still applies.

use crate::health::Api;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a request is sent: decides its first-byte timeout and whether a timeout is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Purpose {
    /// An ordinary call: the service's first-byte timeout; a timeout is retried once.
    #[default]
    Call,
    /// Service discovery (a version document): the probe timeout, never retried on timeout.
    Probe,
    /// One request of an event follower's poll: the follow timeout.
    Follow,
}

/// Timeouts by phase, service and purpose. The first-byte timeout of a service without its
/// own is the transport's `timeout`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub keystone: Option<Duration>,
    pub heat: Option<Duration>,
    pub magnum: Option<Duration>,
    pub nova: Option<Duration>,
    /// A service's version document: static, answered in milliseconds by a live service.
    pub probe: Duration,
    /// One request of an event follower's poll (pages of at most a few MB, newest first).
    pub follow: Duration,
    /// The longest wait for the next piece of a body.
    pub body_idle: Duration,
    /// A body may take this long, plus a second for every `body_min_rate` bytes received.
    pub body_base: Duration,
    pub body_min_rate: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            // Token issue and catalog: a database read and a signature.
            keystone: Some(Duration::from_secs(30)),
            // Heat: the transport's timeout (60 s); the known slow calls (outputs resolved,
            // nested resource listings) ask for 300 s themselves.
            heat: None,
            magnum: Some(Duration::from_secs(30)),
            nova: Some(Duration::from_secs(30)),
            probe: Duration::from_secs(10),
            follow: Duration::from_secs(30),
            body_idle: Duration::from_secs(30),
            body_base: Duration::from_secs(60),
            // 64 KiB/s: a 256 MB body may take 70 minutes; a trickle of a byte a second
            // fails after about a minute.
            body_min_rate: 64 * 1024,
        }
    }
}

impl Timeouts {
    /// A service's own first-byte timeout, when it has one.
    pub fn service(&self, api: Api) -> Option<Duration> {
        match api {
            Api::Keystone => self.keystone,
            Api::Heat => self.heat,
            Api::Magnum => self.magnum,
            Api::Nova => self.nova,
        }
    }

    pub fn set_service(&mut self, api: Api, d: Duration) {
        let slot = match api {
            Api::Keystone => &mut self.keystone,
            Api::Heat => &mut self.heat,
            Api::Magnum => &mut self.magnum,
            Api::Nova => &mut self.nova,
        };
        *slot = Some(d);
    }

    /// How long a body of `received` bytes so far may have taken.
    pub fn body_deadline(&self, received: usize) -> Duration {
        let rate = self.body_min_rate.max(1) as f64;
        self.body_base + Duration::from_secs_f64(received as f64 / rate)
    }
}

/// `10 s`, `1.5 s`, `300 ms`: how long a timeout was, in messages.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `512 MB`, `1.5 MB`, `8192 bytes`.
pub fn human_bytes(n: usize) -> String {
    const MB: usize = 1024 * 1024;
    if n >= MB {
        if n % MB == 0 {
            format!("{} MB", n / MB)
        } else {
            format!("{:.1} MB", n as f64 / MB as f64)
        }
    } else {
        format!("{n} bytes")
    }
}

/// The bytes of response bodies the whole process may hold at once. Big enough that normal
/// use (1000-node listings of a few MB, 16 at a time) never waits; small enough that a dozen
/// oversized answers cannot take the machine (3 GB was seen with no overall bound).
pub const DEFAULT_MAX_HELD_BYTES: usize = 512 * 1024 * 1024;
/// How long a body waits for room in a full pool before it fails.
pub const DEFAULT_MEMORY_WAIT: Duration = Duration::from_secs(10);

/// The pool of response-body bytes (cheap to clone; clones share it).
#[derive(Clone)]
pub struct ResponseMemory {
    inner: Arc<MemoryInner>,
}

struct MemoryInner {
    sem: Arc<Semaphore>,
    limit: AtomicUsize,
    wait: Duration,
    held: AtomicUsize,
    peak: AtomicUsize,
}

static PROCESS: OnceLock<ResponseMemory> = OnceLock::new();

impl std::fmt::Debug for ResponseMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseMemory")
            .field("limit", &self.limit())
            .field("held", &self.held())
            .finish()
    }
}

impl ResponseMemory {
    pub fn new(limit: usize, wait: Duration) -> ResponseMemory {
        // tokio's semaphore holds at most usize::MAX >> 3 permits.
        let limit = limit.clamp(1, usize::MAX >> 4);
        ResponseMemory {
            inner: Arc::new(MemoryInner {
                sem: Arc::new(Semaphore::new(limit)),
                limit: AtomicUsize::new(limit),
                wait,
                held: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
            }),
        }
    }

    /// The process's pool ([`DEFAULT_MAX_HELD_BYTES`] until `set_limit` says otherwise).
    pub fn process() -> ResponseMemory {
        PROCESS
            .get_or_init(|| ResponseMemory::new(DEFAULT_MAX_HELD_BYTES, DEFAULT_MEMORY_WAIT))
            .clone()
    }

    /// Resizes the pool (`caldera --max-response-memory`, at startup). Shrinking takes back
    /// only bytes not held at the moment; the rest shrink as they are returned.
    pub fn set_limit(&self, limit: usize) {
        let limit = limit.clamp(1, usize::MAX >> 4);
        let old = self.inner.limit.swap(limit, Ordering::SeqCst);
        if limit > old {
            self.inner.sem.add_permits(limit - old);
        } else {
            self.inner.sem.forget_permits(old - limit);
        }
    }

    pub fn limit(&self) -> usize {
        self.inner.limit.load(Ordering::SeqCst)
    }

    /// Bytes held by bodies now.
    pub fn held(&self) -> usize {
        self.inner.held.load(Ordering::SeqCst)
    }

    /// The most bytes held at once since the pool was made.
    pub fn peak(&self) -> usize {
        self.inner.peak.load(Ordering::SeqCst)
    }

    /// An empty reservation for one body.
    pub fn reserve(&self) -> Held {
        Held {
            pool: self.clone(),
            permit: None,
            bytes: 0,
        }
    }
}

/// Bytes reserved for one body; returned to the pool when dropped.
pub struct Held {
    pool: ResponseMemory,
    permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

/// Why a body could not get room.
#[derive(Debug)]
pub enum NoRoom {
    /// More than the whole pool.
    TooBig { limit: usize },
    /// Still no room after waiting.
    Full {
        limit: usize,
        held: usize,
        waited: Duration,
    },
}

impl Held {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Grows the reservation to `total` bytes, waiting up to the pool's wait for room.
    /// Returns how long it waited.
    pub async fn grow_to(&mut self, total: usize) -> Result<Duration, NoRoom> {
        let pool = &self.pool.inner;
        let limit = self.pool.limit();
        if total <= self.bytes {
            return Ok(Duration::ZERO);
        }
        if total > limit {
            return Err(NoRoom::TooBig { limit });
        }
        let delta = total - self.bytes;
        let n = u32::try_from(delta).map_err(|_| NoRoom::TooBig { limit })?;
        let started = std::time::Instant::now();
        let permit = match pool.sem.clone().try_acquire_many_owned(n) {
            Ok(p) => p,
            Err(_) => {
                match tokio::time::timeout(pool.wait, pool.sem.clone().acquire_many_owned(n)).await
                {
                    Ok(Ok(p)) => p,
                    _ => {
                        return Err(NoRoom::Full {
                            limit,
                            held: pool.held.load(Ordering::SeqCst),
                            waited: started.elapsed(),
                        })
                    }
                }
            }
        };
        match &mut self.permit {
            Some(p) => p.merge(permit),
            None => self.permit = Some(permit),
        }
        self.bytes = total;
        let now = pool.held.fetch_add(delta, Ordering::SeqCst) + delta;
        pool.peak.fetch_max(now, Ordering::SeqCst);
        Ok(started.elapsed())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.pool.inner.held.fetch_sub(self.bytes, Ordering::SeqCst);
        // The permit returns its bytes to the semaphore as it drops.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reservations_share_one_pool_and_return_on_drop() {
        let pool = ResponseMemory::new(1000, Duration::from_millis(50));
        let mut a = pool.reserve();
        let mut b = pool.reserve();
        a.grow_to(600).await.expect("fits");
        assert_eq!(pool.held(), 600);
        // 600 + 500 > 1000: waits, then fails naming the pool's state.
        match b.grow_to(500).await {
            Err(NoRoom::Full { limit, held, .. }) => assert_eq!((limit, held), (1000, 600)),
            other => panic!("expected Full, got {other:?}"),
        }
        assert!(matches!(
            b.grow_to(1001).await,
            Err(NoRoom::TooBig { limit: 1000 })
        ));
        b.grow_to(400).await.expect("exactly fits");
        assert_eq!((pool.held(), pool.peak()), (1000, 1000));
        drop(a);
        assert_eq!(pool.held(), 400);
        // Growing keeps what was held and adds the difference.
        b.grow_to(900).await.expect("room again");
        assert_eq!(b.bytes(), 900);
        drop(b);
        assert_eq!(pool.held(), 0);
        assert_eq!(pool.peak(), 1000);
    }

    #[tokio::test]
    async fn the_pool_can_be_resized_at_startup() {
        let pool = ResponseMemory::new(100, Duration::from_millis(20));
        pool.set_limit(300);
        let mut a = pool.reserve();
        a.grow_to(300).await.expect("the new size");
        drop(a);
        pool.set_limit(50);
        let mut b = pool.reserve();
        assert!(matches!(
            b.grow_to(60).await,
            Err(NoRoom::TooBig { limit: 50 })
        ));
        b.grow_to(50).await.expect("fits");
        let mut c = pool.reserve();
        assert!(matches!(c.grow_to(1).await, Err(NoRoom::Full { .. })));
    }

    #[tokio::test]
    async fn a_waiting_body_gets_room_when_another_finishes() {
        let pool = ResponseMemory::new(100, Duration::from_secs(5));
        let mut a = pool.reserve();
        a.grow_to(80).await.expect("fits");
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut b = pool.reserve();
                b.grow_to(50).await.map(|_| b.bytes())
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(a);
        assert_eq!(waiter.await.expect("task").expect("room"), 50);
    }

    #[test]
    fn durations_and_sizes_read_well() {
        assert_eq!(human(Duration::from_secs(10)), "10 s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human(Duration::from_millis(300)), "300 ms");
        assert_eq!(human_bytes(512 * 1024 * 1024), "512 MB");
        assert_eq!(human_bytes(8192), "8192 bytes");
        let t = Timeouts::default();
        assert_eq!(t.body_deadline(0), Duration::from_secs(60));
        assert_eq!(t.body_deadline(64 * 1024 * 10), Duration::from_secs(70));
    }
}
