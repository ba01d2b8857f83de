//! Waiting on a real Heat stack in the shape suites (`tests/real_heat/shapes.rs`,
//! `tests/real_heat/magnum.rs`): bounded, and failing at once when the stack settles in
//! another state.

use caldera::api::heat::HeatClient;
use caldera::model::StackRef;
use std::time::{Duration, Instant};

/// Waits until the stack's status is `want` (at most 300 s; a settled other state fails).
pub async fn wait_status(heat: &HeatClient, stack: &StackRef, want: &str) {
    let started = Instant::now();
    loop {
        let detail = heat.get_stack(stack, false).await.expect("stack show");
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
            started.elapsed() < Duration::from_secs(300),
            "stack {} still {status}",
            stack.name
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
