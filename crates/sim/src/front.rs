//! The HTTP front: a listener whose connections can be cut on purpose (dropped-connection
//! and truncated-body faults), one dispatcher that applies faults, checks tokens and hands
//! the request to the service that owns the path, and the background clock ticker.

use crate::faults::FaultKind;
use crate::reply::{parse_query, service_error, Body, Reply, Req};
use crate::shared::{lock, Shared};
use crate::world::World;
use crate::{heat, keystone, magnum, nova};
use axum::body::Body as AxBody;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::serve::{IncomingStream, Listener};
use bytes::Bytes;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A TCP stream that can be cut from a handler: once killed, writes fail and the peer
/// sees the connection close mid-exchange.
pub struct KillableIo {
    inner: TcpStream,
    kill: Arc<AtomicBool>,
}

impl AsyncRead for KillableIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.kill.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.kill.load(Ordering::Relaxed) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "fault: connection dropped",
            )));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

pub struct KillableListener(pub TcpListener);

impl Listener for KillableListener {
    type Io = KillableIo;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((s, a)) => {
                    let _ = s.set_nodelay(true);
                    return (
                        KillableIo {
                            inner: s,
                            kill: Arc::new(AtomicBool::new(false)),
                        },
                        a,
                    );
                }
                // Out of file descriptors and the like: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// The kill switch of the connection a request arrived on.
#[derive(Clone)]
pub struct ConnKill(Arc<AtomicBool>);

impl axum::extract::connect_info::Connected<IncomingStream<'_, KillableListener>> for ConnKill {
    fn connect_info(stream: IncomingStream<'_, KillableListener>) -> Self {
        ConnKill(stream.io().kill.clone())
    }
}

pub async fn dispatch(
    State(sh): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<ConnKill>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    sh.faults.record(method.as_str(), &path);
    let decision = sh.faults.decide(&path);
    if !decision.latency.is_zero() {
        tokio::time::sleep(decision.latency).await;
    }
    let mut truncate = false;
    let mut mangle = None;
    match decision.action {
        Some(FaultKind::Drop) => {
            conn.0.store(true, Ordering::Relaxed);
            return to_response(Reply::empty(StatusCode::INTERNAL_SERVER_ERROR), false);
        }
        Some(FaultKind::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return to_response(
                service_error(
                    &path,
                    status,
                    "Simulated fault: the service failed this request.",
                ),
                false,
            );
        }
        Some(FaultKind::Throttle { retry_after_secs }) => {
            let r = service_error(
                &path,
                StatusCode::TOO_MANY_REQUESTS,
                "Rate limit exceeded: too many requests.",
            )
            .with_header("Retry-After", retry_after_secs.to_string());
            return to_response(r, false);
        }
        Some(FaultKind::Raw {
            status,
            content_type,
            body,
        }) => {
            let mut resp = Response::new(AxBody::from(body));
            *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            if let Ok(v) = HeaderValue::from_str(&content_type) {
                resp.headers_mut().insert("content-type", v);
            }
            return resp;
        }
        Some(FaultKind::Mangle(f)) => mangle = Some(f),
        Some(FaultKind::Truncate) => truncate = true,
        Some(FaultKind::Latency(_)) | None => {}
    }
    let query = parse_query(uri.query());
    let mut reply = route(&sh, &method, &path, uri.query(), query, &headers, &body);
    if let (Some(f), Body::Json(v)) = (mangle, &mut reply.body) {
        f(v);
    }
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    to_response(reply, truncate)
}

fn route(
    sh: &Shared,
    method: &Method,
    path: &str,
    raw_query: Option<&str>,
    query: Vec<(String, String)>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Reply {
    // Segments are percent-decoded, as the real services' routers do (a name with a space
    // or a control character arrives as `%20`, `%1B`).
    let decoded: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let service = segs.first().copied().unwrap_or("");
    let mk = |skip: usize| Req {
        method,
        segs: segs.iter().skip(skip).copied().collect(),
        query: query.clone(),
        headers,
        body,
        raw_query,
    };
    if service == "identity" {
        return keystone::handle(sh, &mk(1));
    }
    if !matches!(service, "orchestration" | "container-infra" | "compute") {
        return root_or_404(sh, path);
    }
    // Version documents are public, like the real services.
    let is_root = segs.len() == 1
        || (service == "container-infra"
            && segs.len() == 2
            && segs[1] == "v1"
            && method == Method::GET);
    if !is_root {
        let token = headers.get("x-auth-token").and_then(|v| v.to_str().ok());
        if !keystone::token_valid(sh, token) {
            return crate::reply::keystone_error(
                StatusCode::UNAUTHORIZED,
                "The request you have made requires authentication.",
            )
            .with_header(
                "WWW-Authenticate",
                format!("Keystone uri=\"{}/identity/v3\"", sh.cfg.base),
            );
        }
    }
    match service {
        "orchestration" => heat::handle(sh, &mk(1)),
        "container-infra" => magnum::handle(sh, &mk(1)),
        _ => nova::handle(sh, &mk(1)),
    }
}

/// `%XX` escapes of one path segment decoded (invalid UTF-8 replaced).
fn percent_decode(seg: &str) -> String {
    if !seg.contains('%') {
        return seg.to_string();
    }
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn root_or_404(sh: &Shared, path: &str) -> Reply {
    if path == "/" {
        return Reply::ok(serde_json::json!({
            "name": "caldera simulated cloud",
            "identity": format!("{}/identity/v3", sh.cfg.base),
        }));
    }
    crate::reply::keystone_error(StatusCode::NOT_FOUND, "The resource could not be found.")
}

fn to_response(reply: Reply, truncate: bool) -> Response {
    let (bytes, ctype) = match reply.body {
        Body::Empty => (Bytes::new(), "application/json"),
        Body::Json(v) => (
            Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
            "application/json",
        ),
        Body::Text(t) => (Bytes::from(t), "text/plain; charset=UTF-8"),
    };
    let len = bytes.len();
    let body = if truncate && len > 1 {
        // Half the body, then an error: hyper closes the connection short of Content-Length.
        // The pause lets the headers and the first half leave before the connection dies.
        use futures::StreamExt;
        let half = bytes.slice(..len / 2);
        let first = futures::stream::once(async move { Ok::<Bytes, io::Error>(half) });
        let fail = futures::stream::once(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err::<Bytes, io::Error>(io::Error::other("fault: truncated body"))
        });
        AxBody::from_stream(first.chain(fail))
    } else {
        AxBody::from(bytes)
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = reply.status;
    let h = resp.headers_mut();
    if len > 0 {
        h.insert("content-type", HeaderValue::from_static(ctype));
        h.insert("content-length", HeaderValue::from(len));
    }
    for (k, v) in reply.headers {
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(&v),
        ) {
            h.append(k, v);
        }
    }
    resp
}

/// Advances the world every 100 ms of real time.
pub async fn ticker(world: Arc<Mutex<World>>, stop: tokio_util::sync::CancellationToken) {
    let mut iv = tokio::time::interval(Duration::from_millis(100));
    iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = iv.tick() => lock(&world).tick(),
        }
    }
}
