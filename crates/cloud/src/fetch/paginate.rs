//! A generic paginated stream: items are yielded as each page arrives, so a view can show the
//! first hundred stacks while the next page is still on the wire.

use crate::api_error::ApiError;
use futures::stream::{self, Stream, StreamExt};
use std::future::Future;

/// One page of a list and the marker that fetches the next one (`None` at the end).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
    /// The total count, when the server was asked for it (Heat `with_count`).
    pub total: Option<u64>,
}

impl<T> Page<T> {
    /// A page from a marker-paged API: the next marker is the last item's id, unless the page
    /// came back short (fewer than `limit`), which means the list is exhausted.
    pub fn by_marker(items: Vec<T>, limit: Option<usize>, id: impl Fn(&T) -> String) -> Page<T> {
        let full = match limit {
            Some(limit) => items.len() >= limit && limit > 0,
            // Without a limit the server sent everything it was going to send.
            None => false,
        };
        let next = if full { items.last().map(id) } else { None };
        Page {
            items,
            next,
            total: None,
        }
    }
}

struct State<F> {
    fetch: F,
    marker: Option<String>,
    done: bool,
}

/// Calls `fetch(None)`, then `fetch(Some(next))` while pages carry a next marker, yielding every
/// item. Stops on an empty page, a page without a next marker, a marker that repeats (a server
/// that ignores `marker` would otherwise loop forever), or after the first error (yielded).
pub fn paginate<T, F, Fut>(fetch: F) -> impl Stream<Item = Result<T, ApiError>>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<Page<T>, ApiError>>,
{
    let state = State {
        fetch,
        marker: None,
        done: false,
    };
    stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        let result = (st.fetch)(st.marker.clone()).await;
        let items: Vec<Result<T, ApiError>> = match result {
            Ok(page) => {
                match page.next {
                    Some(next) if !page.items.is_empty() && Some(&next) != st.marker.as_ref() => {
                        st.marker = Some(next)
                    }
                    _ => st.done = true,
                }
                page.items.into_iter().map(Ok).collect()
            }
            Err(e) => {
                st.done = true;
                vec![Err(e)]
            }
        };
        Some((stream::iter(items), st))
    })
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use std::sync::{Arc, Mutex};

    /// A fake marker-paged list of `n` items: ids 0..n, served `limit` at a time.
    fn fake_pages(
        n: usize,
        limit: usize,
        calls: Arc<Mutex<Vec<Option<String>>>>,
    ) -> impl FnMut(Option<String>) -> futures::future::Ready<Result<Page<usize>, ApiError>> {
        move |marker| {
            calls.lock().unwrap().push(marker.clone());
            let start = marker.map(|m| m.parse::<usize>().unwrap() + 1).unwrap_or(0);
            let items: Vec<usize> = (start..n).take(limit).collect();
            futures::future::ready(Ok(Page::by_marker(items, Some(limit), |i| i.to_string())))
        }
    }

    #[tokio::test]
    async fn yields_every_item_once_across_pages() {
        for (n, limit) in [(0, 5), (1, 5), (5, 5), (12, 5), (100, 7)] {
            let calls = Arc::new(Mutex::new(Vec::new()));
            let got: Vec<usize> = paginate(fake_pages(n, limit, calls.clone()))
                .try_collect()
                .await
                .unwrap();
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "n={n} limit={limit}");
            // Full pages need one more request to see the end; short pages stop at once.
            let expected_calls = n / limit + 1;
            assert_eq!(
                calls.lock().unwrap().len(),
                expected_calls,
                "n={n} limit={limit}"
            );
        }
    }

    #[tokio::test]
    async fn error_is_yielded_after_earlier_items_and_ends_the_stream() {
        let mut calls = 0;
        let s = paginate(move |_marker| {
            calls += 1;
            let page = if calls == 1 {
                Ok(Page {
                    items: vec![1, 2],
                    next: Some("2".into()),
                    total: None,
                })
            } else {
                Err(ApiError::Cancelled)
            };
            futures::future::ready(page)
        });
        let all: Vec<_> = s.collect().await;
        assert_eq!(all.len(), 3);
        assert!(matches!(all[2], Err(ApiError::Cancelled)));
    }

    #[tokio::test]
    async fn repeated_marker_stops() {
        let s = paginate(|_marker| {
            futures::future::ready(Ok(Page {
                items: vec![1],
                next: Some("same".to_string()),
                total: None,
            }))
        });
        let all: Vec<_> = s.take(10).collect().await;
        assert_eq!(all.len(), 2, "second page repeats the marker; must stop");
    }
}
