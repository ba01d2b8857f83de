//! Background producers tied to their consumer: a producer task whose results are streamed,
//! cancelled (with every request it has in flight) as soon as the consumer drops the stream.

use futures::stream::{BoxStream, StreamExt};
use std::future::Future;
use tokio::sync::mpsc;

/// Spawns `produce(tx)` and returns its items as a stream. Dropping the stream drops the
/// producer future, which cancels its outstanding requests.
pub fn spawn_stream<T, F, Fut>(buffer: usize, produce: F) -> BoxStream<'static, T>
where
    T: Send + 'static,
    F: FnOnce(mpsc::Sender<T>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(buffer.max(1));
    let closed = tx.clone();
    let work = produce(tx);
    tokio::spawn(async move {
        tokio::select! {
            _ = work => {}
            _ = closed.closed() => {}
        }
    });
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed()
}

/// Aborts a spawned task when dropped, so abandoned work leaves no request behind.
pub struct AbortOnDrop<T>(pub tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn dropping_the_stream_stops_the_producer() {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let mut stream = spawn_stream(1, |tx| async move {
            for i in 0..1000u32 {
                if tx.send(i).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            flag.store(true, Ordering::SeqCst);
        });
        assert_eq!(stream.next().await, Some(0));
        drop(stream);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!finished.load(Ordering::SeqCst));
    }
}
