//! Waiting on a real Heat stack in the real-Heat suites (`tests/real_heat/`): bounded,
//! failing at once when the stack settles in another state, and riding out a Heat that
//! stops answering for a while.
//!
//! The test Heat is one Python process (API and engine together) on a 2-core machine: when
//! many nested stacks are created and deleted at once its database pool queues every request,
//! the API's included, and a `stack show` can go unanswered for minutes (seen in CI: two
//! 60-s timeouts in a row). A wait is about the stack, not about Heat's latency, so a
//! transport error is asked again until the wait's own deadline; an HTTP error fails at once.

use caldera::api::heat::HeatClient;
use caldera::api::ApiError;
use caldera::model::StackRef;
use std::time::{Duration, Instant};

/// How long a wait lasts, Heat's silences included.
const WAIT_LIMIT: Duration = Duration::from_secs(420);

/// Waits until the stack's status is `want` (at most `WAIT_LIMIT`; a settled other state fails).
pub async fn wait_status(heat: &HeatClient, stack: &StackRef, want: &str) {
    let started = Instant::now();
    loop {
        let Some(detail) = show(heat, stack, started).await else {
            continue;
        };
        let status = detail.summary.status.raw.clone();
        if status == want {
            return;
        }
        assert!(
            detail.summary.status.is_in_progress(),
            "stack {} is {status} ({:?}), wanted {want}",
            stack.name,
            detail.summary.status_reason
        );
        assert!(
            started.elapsed() < WAIT_LIMIT,
            "stack {} still {status}",
            stack.name
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Deletes the stack and waits (bounded, never failing the test) until Heat has deleted it:
/// a test's cleanup then does not run on beside the next tests' creates, which is what queues
/// the test Heat's database pool (see the module's comment).
pub async fn delete_settled(heat: &HeatClient, stack: &StackRef) {
    if heat.delete_stack(stack).await.is_err() {
        return;
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(180) {
        tokio::time::sleep(Duration::from_secs(1)).await;
        match heat.get_stack(stack, false).await {
            Ok(detail) if detail.summary.status.is_in_progress() => {}
            Ok(_) => return,
            Err(ApiError::Transport { .. }) => {}
            Err(_) => return,
        }
    }
}

/// One `stack show`: `None` after a transport error (the caller asks again), panicking once
/// the wait's deadline has passed.
async fn show(
    heat: &HeatClient,
    stack: &StackRef,
    started: Instant,
) -> Option<caldera::api::heat::StackDetail> {
    match heat.get_stack(stack, false).await {
        Ok(detail) => Some(detail),
        Err(e @ ApiError::Transport { .. }) if started.elapsed() < WAIT_LIMIT => {
            eprintln!(
                "stack {}: Heat did not answer ({e}); asking again",
                stack.name
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
            None
        }
        Err(e) => panic!("stack show: {e}"),
    }
}
