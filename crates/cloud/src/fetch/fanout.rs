//! Bounded-concurrency fan-out: run one request per key, at most `concurrency` at a time, and
//! yield results as they complete (a fast member's IP shows before a slow one's). Dropping the
//! stream drops the in-flight futures, which cancels their HTTP requests.

use futures::stream::{self, Stream, StreamExt};
use std::future::Future;

/// Yields `(key, f(key).await)` in completion order.
pub fn fan_out<K, I, F, Fut, V>(
    items: I,
    concurrency: usize,
    mut f: F,
) -> impl Stream<Item = (K, V)>
where
    I: IntoIterator<Item = K>,
    K: Clone,
    F: FnMut(K) -> Fut,
    Fut: Future<Output = V>,
{
    stream::iter(items)
        .map(move |key| {
            let fut = f(key.clone());
            async move { (key, fut.await) }
        })
        .buffer_unordered(concurrency.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn completion_order_and_bounded() {
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        // With two at a time, fast, mid and bad can only run one after the other beside slow;
        // slow is long enough (over a second of margin) that a loaded machine cannot end it
        // before them.
        let delays = vec![("slow", 1500u64), ("fast", 5), ("mid", 200), ("bad", 100)];
        let (r, p) = (running.clone(), peak.clone());
        let out: Vec<(&str, Result<u64, String>)> = fan_out(delays, 2, move |(name, ms)| {
            let (r, p) = (r.clone(), p.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                r.fetch_sub(1, Ordering::SeqCst);
                if name == "bad" {
                    Err("boom".to_string())
                } else {
                    Ok(ms)
                }
            }
        })
        .map(|((name, _), v)| (name, v))
        .collect()
        .await;
        let names: Vec<&str> = out.iter().map(|(n, _)| *n).collect();
        // Two at a time: fast ends at 5 ms and lets mid start (ends 205), which lets bad start
        // (ends 305); slow ends at 1500.
        assert_eq!(names, vec!["fast", "mid", "bad", "slow"]);
        assert_eq!(out[2].1, Err("boom".to_string()));
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }
}
