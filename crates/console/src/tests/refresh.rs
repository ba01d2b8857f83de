//! Refreshes: stale generations dropped, requests coalesced, a frozen screen.

use super::*;

#[tokio::test]
async fn stale_generation_is_dropped_after_forced_refresh() {
    let mut h = Harness::demo(10);
    let first = h.app.take_requests();
    let Some(Request::Clusters { gen: old }) = first.first().cloned() else {
        panic!("expected a clusters request, got {first:?}");
    };
    h.key(KeyAction::Refresh);
    let second = h.app.take_requests();
    let Some(Request::Clusters { gen: new }) = second.first().cloned() else {
        panic!("expected a clusters request");
    };
    assert!(new > old);
    // The old answer arrives late with different data: dropped.
    h.app.update(Action::Reply(Reply::Clusters {
        gen: old,
        result: Ok(vec![]),
    }));
    assert!(h.app.store().clusters.data.is_none());
    assert_eq!(h.app.store().clusters.meta.dropped, 1);
    let clusters = h.fake.list_clusters().await.unwrap();
    h.app.update(Action::Reply(Reply::Clusters {
        gen: new,
        result: Ok(clusters),
    }));
    assert_eq!(h.app.store().clusters.data.as_ref().map(Vec::len), Some(4));
}

#[tokio::test]
async fn refreshes_coalesce_one_pending_per_view() {
    let mut h = Harness::demo(10);
    assert_eq!(h.app.take_requests().len(), 1);
    for s in 1..5 {
        h.app.update(Action::Tick {
            now: demo_epoch() + chrono::Duration::seconds(s * 10),
            info: Box::new(h.fake.info()),
            budget: h.fake.budget(),
        });
    }
    assert!(
        h.app.take_requests().is_empty(),
        "pending request must not be repeated"
    );
}

#[tokio::test]
async fn freeze_keeps_the_screen_and_applies_on_thaw() {
    let mut h = Harness::demo(10);
    h.key(KeyAction::Freeze);
    h.settle().await;
    assert!(
        h.app.store().clusters.data.is_none(),
        "frozen: answers wait"
    );
    h.key(KeyAction::Freeze);
    assert_eq!(h.app.store().clusters.data.as_ref().map(Vec::len), Some(4));
}
