//! A scriptable HTTP server on 127.0.0.1:0 for transport and client tests.
//!
//! A handler closure decides each reply from the request (method, path, query, how many times
//! this path has been hit) and can inject the faults a real cloud produces: 5xx, 429 with
//! `Retry-After`, slow answers, answers that never come, bodies that trickle, oversized
//! bodies generated on the fly, connections dropped mid-body, truncated JSON, HTML where JSON
//! was expected. The server counts requests in flight so budget limits can be checked from
//! the server's side.
//!
//! Self-contained on purpose: `tests/offline/fault_matrix.rs` compiles this same file by path (the
//! library's `testing` module exists only in its own unit tests), so it uses no `crate::` item.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use futures::StreamExt;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the handler sees it.
#[derive(Debug, Clone)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// 1 for the first request to this method+path, 2 for the second, ...
    pub nth: usize,
    /// When the request arrived, relative to the server's start.
    pub at: Duration,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The value of query parameter `key` (first occurrence), decoded.
    pub fn param(&self, key: &str) -> Option<String> {
        self.params()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    pub fn params(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(self.query.as_deref().unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// What to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Status, extra headers, JSON body text (Content-Type application/json).
    Json(u16, String),
    /// Status, headers, body, with whatever content type the headers say.
    Raw(u16, Vec<(String, String)>, String),
    /// Wait, then answer.
    Delay(Duration, Box<Reply>),
    /// Send a 200 head and `prefix` of the body, then break the connection.
    Drop(String),
    /// Never answer: the request is held until the client gives up (a service that hangs).
    Hang,
    /// A 200 JSON head at once, then the body `chunk` bytes at a time, one piece every
    /// `every` (a proxy or service that trickles).
    Trickle {
        body: String,
        chunk: usize,
        every: Duration,
    },
    /// A 200 JSON body of `prefix`, `len` filler bytes and `suffix`, generated as it is sent
    /// in 64 KiB pieces without a Content-Length (an oversized answer that costs the server
    /// nothing to hold).
    Huge {
        prefix: String,
        len: usize,
        suffix: String,
    },
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::Json(status, body.into())
    }
    pub fn ok(body: serde_json::Value) -> Reply {
        Reply::Json(200, body.to_string())
    }
    pub fn status(status: u16) -> Reply {
        Reply::Raw(status, vec![], String::new())
    }
    pub fn with_headers(status: u16, headers: &[(&str, &str)], body: impl Into<String>) -> Reply {
        Reply::Raw(
            status,
            headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body.into(),
        )
    }
    pub fn delay(ms: u64, then: Reply) -> Reply {
        Reply::Delay(Duration::from_millis(ms), Box::new(then))
    }
    pub fn trickle(body: impl Into<String>, chunk: usize, every_ms: u64) -> Reply {
        Reply::Trickle {
            body: body.into(),
            chunk: chunk.max(1),
            every: Duration::from_millis(every_ms),
        }
    }
    /// `{"output": {"output_key": KEY, "output_value": "xxx…"}}` of about `len` bytes: Heat's
    /// output show with an enormous value.
    pub fn huge_output(key: &str, len: usize) -> Reply {
        Reply::Huge {
            prefix: format!(r#"{{"output": {{"output_key": "{key}", "output_value": ""#),
            len,
            suffix: r#""}}"#.to_string(),
        }
    }
}

/// The pieces of a generated body: `prefix`, then `len` bytes of `x` in 64 KiB pieces, then
/// `suffix`.
fn huge_stream(
    prefix: String,
    len: usize,
    suffix: String,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    const PIECE: usize = 64 * 1024;
    let filler = Bytes::from(vec![b'x'; PIECE]);
    let pieces = len.div_ceil(PIECE);
    let body = (0..pieces).map(move |i| {
        let n = PIECE.min(len - i * PIECE);
        Ok(filler.slice(..n))
    });
    futures::stream::iter(
        std::iter::once(Ok(Bytes::from(prefix)))
            .chain(body)
            .chain(std::iter::once(Ok(Bytes::from(suffix)))),
    )
}

type Handler = dyn Fn(&Hit) -> Reply + Send + Sync;

struct ServerState {
    handler: Box<Handler>,
    start: Instant,
    hits: Mutex<Vec<Hit>>,
    counts: Mutex<HashMap<String, usize>>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

pub struct FaultServer {
    pub addr: SocketAddr,
    state: Arc<ServerState>,
    task: tokio::task::JoinHandle<()>,
}

/// Decrements the in-flight count when the handler finishes or is dropped (client went away).
struct InFlight(Arc<ServerState>);
impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(
    State(st): State<Arc<ServerState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let now = st.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    st.peak.fetch_max(now, Ordering::SeqCst);
    let _guard = InFlight(st.clone());
    let key = format!("{} {}", method, uri.path());
    let nth = {
        let mut counts = st.counts.lock().unwrap_or_else(|e| e.into_inner());
        let c = counts.entry(key).or_insert(0);
        *c += 1;
        *c
    };
    let hit = Hit {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().map(str::to_string),
        headers,
        body,
        nth,
        at: st.start.elapsed(),
    };
    st.hits
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(hit.clone());
    let mut reply = (st.handler)(&hit);
    loop {
        match reply {
            Reply::Delay(d, then) => {
                tokio::time::sleep(d).await;
                reply = *then;
            }
            // Held until the client hangs up, which drops this future (bounded by the test).
            Reply::Hang => std::future::pending::<()>().await,
            other => return render(other),
        }
    }
}

fn render(reply: Reply) -> Response {
    let (status, headers, body) = match reply {
        Reply::Json(status, body) => (
            status,
            vec![("content-type".to_string(), "application/json".to_string())],
            Body::from(body),
        ),
        Reply::Raw(status, headers, body) => (status, headers, Body::from(body)),
        Reply::Drop(prefix) => {
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from(prefix)),
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "fault server drops the connection",
                )),
            ];
            (
                200,
                vec![("content-type".to_string(), "application/json".to_string())],
                Body::from_stream(futures::stream::iter(chunks)),
            )
        }
        Reply::Trickle { body, chunk, every } => {
            let pieces: Vec<Bytes> = body
                .into_bytes()
                .chunks(chunk)
                .map(Bytes::copy_from_slice)
                .collect();
            let stream = futures::stream::iter(pieces).then(move |piece| async move {
                tokio::time::sleep(every).await;
                Ok::<Bytes, std::io::Error>(piece)
            });
            (
                200,
                vec![("content-type".to_string(), "application/json".to_string())],
                Body::from_stream(stream),
            )
        }
        Reply::Huge {
            prefix,
            len,
            suffix,
        } => (
            200,
            vec![("content-type".to_string(), "application/json".to_string())],
            Body::from_stream(huge_stream(prefix, len, suffix)),
        ),
        Reply::Delay(..) | Reply::Hang => (500, vec![], Body::from("nested delay")),
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
            resp.headers_mut().insert(k, v);
        }
    }
    resp
}

impl FaultServer {
    pub async fn start(handler: impl Fn(&Hit) -> Reply + Send + Sync + 'static) -> FaultServer {
        let state = Arc::new(ServerState {
            handler: Box::new(handler),
            start: Instant::now(),
            hits: Mutex::new(Vec::new()),
            counts: Mutex::new(HashMap::new()),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0 for the test server");
        let addr = listener.local_addr().expect("test server address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FaultServer { addr, state, task }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state
            .hits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn hit_count(&self) -> usize {
        self.state
            .hits
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    pub fn peak_in_flight(&self) -> usize {
        self.state.peak.load(Ordering::SeqCst)
    }

    pub fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A 127.0.0.1 port with nothing listening (bound, then released).
pub async fn closed_port_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{addr}")
}
