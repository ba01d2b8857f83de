//! When and how long to wait before retrying a failed request.
//!
//! Only idempotent requests (GET, HEAD) are retried automatically: a POST that timed out may
//! have created a stack, and sending it again would create a second one. The one exception is a
//! 401 answered before the request was processed, which the transport retries once after
//! renewing the token (see `api::http`).

use crate::api_error::{ApiError, TransportKind};
use rand::Rng;
use reqwest::Method;
use std::time::{Duration, SystemTime};

/// Attempts of a request that timed out (whatever `max_attempts` allows for other faults).
pub const TIMEOUT_ATTEMPTS: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts including the first; 1 means never retry.
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    pub fn never() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    pub fn is_idempotent(method: &Method) -> bool {
        *method == Method::GET || *method == Method::HEAD || *method == Method::OPTIONS
    }

    /// Statuses that mean "try again later": overload, gateway trouble, rate limiting.
    pub fn is_retryable_status(status: u16) -> bool {
        matches!(status, 429 | 500 | 502 | 503 | 504)
    }

    /// Whether this error, after `attempt` attempts (1-based), deserves another try.
    pub fn should_retry(&self, method: &Method, err: &ApiError, attempt: u32) -> bool {
        if attempt >= self.max_attempts || !Self::is_idempotent(method) {
            return false;
        }
        match err {
            ApiError::Http { status, .. } => Self::is_retryable_status(*status),
            // A bad certificate will not get better by asking again.
            ApiError::Transport {
                kind: TransportKind::Tls,
                ..
            } => false,
            // A service that did not answer within its timeout rarely answers the next
            // request sooner: one more try, so a dead service costs two timeouts, not four.
            ApiError::Transport {
                kind: TransportKind::Timeout,
                ..
            } => attempt < TIMEOUT_ATTEMPTS,
            ApiError::Transport { .. } => true,
            _ => false,
        }
    }

    /// Exponential backoff with full jitter: uniform in `[0, min(max, base * 2^(attempt-1))]`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(20);
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        let ms = ceiling.as_millis() as u64;
        if ms == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(rand::thread_rng().gen_range(0..=ms))
    }

    /// The wait before the next attempt: the server's `Retry-After` when it gave one
    /// (capped by `max_delay`, so a hostile or confused server cannot park us for an hour),
    /// else the jittered backoff.
    pub fn delay(&self, attempt: u32, err: &ApiError) -> Duration {
        match err {
            ApiError::Http {
                retry_after: Some(after),
                ..
            } => (*after).min(self.max_delay),
            _ => self.backoff(attempt),
        }
    }
}

/// Parses `Retry-After`: delta seconds or an HTTP date (RFC 7231).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let when = SystemTime::from(date.with_timezone(&chrono::Utc));
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16) -> ApiError {
        ApiError::http(Method::GET, "http://x/", status, b"", None)
    }

    #[test]
    fn retries_only_idempotent_methods_on_transient_errors() {
        let p = RetryPolicy::default();
        for s in [429, 500, 502, 503, 504] {
            assert!(p.should_retry(&Method::GET, &http(s), 1), "{s}");
            assert!(!p.should_retry(&Method::POST, &http(s), 1), "{s}");
            assert!(!p.should_retry(&Method::PATCH, &http(s), 1), "{s}");
            assert!(!p.should_retry(&Method::PUT, &http(s), 1), "{s}");
            assert!(!p.should_retry(&Method::DELETE, &http(s), 1), "{s}");
        }
        for s in [400, 401, 403, 404, 409, 501] {
            assert!(!p.should_retry(&Method::GET, &http(s), 1), "{s}");
        }
        let timeout = ApiError::Transport {
            method: Method::GET,
            url: "u".into(),
            kind: TransportKind::Timeout,
            detail: String::new(),
        };
        assert!(p.should_retry(&Method::HEAD, &timeout, 1));
        assert!(!p.should_retry(&Method::GET, &timeout, p.max_attempts));
        assert!(
            !p.should_retry(&Method::GET, &timeout, TIMEOUT_ATTEMPTS),
            "a timeout is tried twice, not max_attempts times"
        );
        let tls = ApiError::Transport {
            method: Method::GET,
            url: "u".into(),
            kind: TransportKind::Tls,
            detail: String::new(),
        };
        assert!(!p.should_retry(&Method::GET, &tls, 1));
    }

    #[test]
    fn backoff_is_bounded_and_jittered() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(800),
        };
        let mut seen = std::collections::HashSet::new();
        for attempt in 1..10 {
            for _ in 0..50 {
                let d = p.backoff(attempt);
                let cap = Duration::from_millis(100 * (1 << (attempt - 1).min(3)));
                assert!(d <= cap, "attempt {attempt}: {d:?} > {cap:?}");
                seen.insert(d);
            }
        }
        assert!(seen.len() > 20, "backoff is not jittered");
    }

    #[test]
    fn retry_after_seconds_and_date_capped() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_400);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        // 2015-10-21T07:28:00Z is 1_445_412_480.
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(80))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        let p = RetryPolicy {
            max_delay: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let err = ApiError::http(Method::GET, "u", 429, b"", Some(Duration::from_secs(80)));
        assert_eq!(p.delay(1, &err), Duration::from_secs(5));
        let err = ApiError::http(Method::GET, "u", 429, b"", Some(Duration::from_secs(2)));
        assert_eq!(p.delay(1, &err), Duration::from_secs(2));
    }
}
