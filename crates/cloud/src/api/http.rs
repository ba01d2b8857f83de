//! The HTTP transport every client shares: one reqwest client (connection pool, TLS settings),
//! the process-wide request budget, the retry policy and the token; the timeouts of each
//! request phase and the process-wide pool of response bytes (`api::limits`); and the health
//! board that keeps each service's last outcome for the console's header (a transport made
//! `for_service` names its service in errors and on the board).
//!
//! Redirects are never followed by reqwest: Heat answers name-only stack URLs with a 302, and
//! heatclient's behaviour (resolve once, then use `name/id`) needs to see it. `get_json` follows
//! a same-origin redirect for GETs explicitly; nothing else does.

use crate::api::limits::{human, human_bytes, Held, NoRoom, Purpose, ResponseMemory, Timeouts};
use crate::api_error::{excerpt, ApiError, ApiResult, TransportKind};
use crate::config::ConfigError;
use crate::fetch::retry::{parse_retry_after, RetryPolicy};
use crate::fetch::RequestBudget;
use crate::health::{Api, Availability, ServiceHealth};
use bytes::Bytes;
use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a request waits for the first byte of an answer before a headless command says
/// what it is waiting for (a service that accepts connections and never answers would
/// otherwise leave the operator in silence for its whole first-byte timeout).
pub const WAIT_NOTICE_AFTER: Duration = Duration::from_secs(2);

/// Whether waits are announced on stderr: set by the headless commands only (the console
/// draws on the terminal and names a silent service in its header instead).
static ANNOUNCE_WAITS: AtomicBool = AtomicBool::new(false);
/// Services (name and origin) announced as silent and not heard from since: one notice per
/// silence, not one per request or retry.
static ANNOUNCED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// From now on (`on`), a request of this process with no answer after [`WAIT_NOTICE_AFTER`]
/// says on stderr which service it waits for and when it gives up:
/// `caldera: waiting for Heat at https://heat:8004 (no answer gives up after 60 s;
/// --timeout heat=SECS)`; or no more (`!on`: the console, once it has the terminal).
pub fn announce_waits_on_stderr(on: bool) {
    ANNOUNCE_WAITS.store(on, Ordering::Relaxed);
}

/// A token the transport sends as `X-Auth-Token`.
pub trait SentToken: Send + Sync {
    fn header_value(&self) -> ApiResult<HeaderValue>;
}

/// Where an authenticated transport gets its token (Keystone's `auth::TokenManager`). The
/// transport only asks for a token and reports one the service refused (401), so it need not
/// know how tokens are issued (which itself goes through a transport).
pub trait TokenSource: Send + Sync {
    /// A valid token, issued or renewed when needed.
    fn token(&self) -> BoxFuture<'_, ApiResult<Arc<dyn SentToken>>>;
    /// Forgets `stale` after a 401, so the next `token()` renews it.
    fn invalidate<'a>(&'a self, stale: &'a Arc<dyn SentToken>) -> BoxFuture<'a, ()>;
}

/// Settings for building a [`Transport`].
#[derive(Clone)]
pub struct TransportConfig {
    /// How long a service may take to send its response headers (the first byte), for a
    /// service without its own in `timeouts`; a request can ask for more (a slow call).
    pub timeout: Duration,
    /// TCP connect and TLS handshake.
    pub connect_timeout: Duration,
    /// Per service and purpose first-byte timeouts, and the body's (see `api::limits`).
    pub timeouts: Timeouts,
    /// `false` accepts any certificate (clouds.yaml `verify: false`).
    pub verify: bool,
    /// An extra root certificate (PEM), clouds.yaml `cacert`.
    pub cacert: Option<PathBuf>,
    pub budget: RequestBudget,
    pub retry: RetryPolicy,
    /// Largest response body read into memory; a longer one is an error, not an OOM kill.
    pub max_body_bytes: usize,
    /// The pool every body's bytes are reserved from (shared by the whole process).
    pub memory: ResponseMemory,
}

/// Big enough for a resource listing of a 10,000-member group with nested depth (tens of
/// MB), small enough that a broken proxy streaming garbage cannot take the console down.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            verify: true,
            cacert: None,
            timeouts: Timeouts::default(),
            budget: RequestBudget::default(),
            retry: RetryPolicy::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            memory: ResponseMemory::process(),
        }
    }
}

/// Cheap to clone; clones share the connection pool, the budget and the token.
#[derive(Clone)]
pub struct Transport {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    budget: RequestBudget,
    retry: RetryPolicy,
    auth: Option<Arc<dyn TokenSource>>,
    /// Sent on every request (no-auth identity headers).
    headers: HeaderMap,
    max_body_bytes: usize,
    connect_timeout: Duration,
    default_timeout: Duration,
    timeouts: Timeouts,
    memory: ResponseMemory,
    /// Which service this transport talks to (names it in errors, keeps its health).
    service: Option<Api>,
    /// The purpose of requests that do not state one.
    purpose: Purpose,
    health: Arc<HealthBoard>,
}

/// Each service's last outcome, shared by every transport derived from one.
#[derive(Default)]
pub struct HealthBoard {
    states: Mutex<BTreeMap<Api, ServiceHealth>>,
}

impl HealthBoard {
    /// Notes a service being probed, before anything is known of it (a service nobody has
    /// asked anything yet is not listed: the header stays quiet about it).
    pub fn expect(&self, api: Api) {
        if let Ok(mut m) = self.states.lock() {
            m.entry(api).or_insert(ServiceHealth {
                api,
                health: Availability::Probing,
                detail: None,
            });
        }
    }

    fn record(&self, api: Api, health: Availability, detail: Option<String>) {
        if let Ok(mut m) = self.states.lock() {
            m.insert(
                api,
                ServiceHealth {
                    api,
                    health,
                    detail,
                },
            );
        }
    }

    /// Every known service, in a fixed order.
    pub fn snapshot(&self) -> Vec<ServiceHealth> {
        self.states
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    pub fn get(&self, api: Api) -> Option<ServiceHealth> {
        self.states.lock().ok().and_then(|m| m.get(&api).cloned())
    }
}

/// One request to send. `Debug` shows no header values and no body: a Keystone request body
/// holds a password.
#[derive(Clone)]
pub struct Request {
    pub method: Method,
    pub url: String,
    pub headers: HeaderMap,
    /// A JSON body.
    pub body: Option<Bytes>,
    /// Overrides the first-byte timeout (e.g. a stack show that resolves outputs).
    pub timeout: Option<Duration>,
    /// Why it is sent (`None`: the transport's default purpose).
    pub purpose: Option<Purpose>,
}

impl Request {
    pub fn new(method: Method, url: impl Into<String>) -> Request {
        Request {
            method,
            url: url.into(),
            headers: HeaderMap::new(),
            body: None,
            timeout: None,
            purpose: None,
        }
    }

    pub fn get(url: impl Into<String>) -> Request {
        Request::new(Method::GET, url)
    }

    /// Serialises `body` as JSON.
    pub fn json<B: Serialize + ?Sized>(mut self, body: &B) -> ApiResult<Request> {
        let bytes = serde_json::to_vec(body).map_err(|e| ApiError::Decode {
            method: self.method.clone(),
            url: self.url.clone(),
            detail: format!("cannot encode request body: {e}"),
        })?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }

    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Request {
        self.headers.insert(name, value);
        self
    }

    pub fn headers(mut self, headers: &HeaderMap) -> Request {
        for (k, v) in headers {
            self.headers.insert(k.clone(), v.clone());
        }
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Request {
        self.timeout = Some(timeout);
        self
    }

    /// A discovery probe, a follower's poll...: picks the first-byte timeout and retries.
    pub fn purpose(mut self, purpose: Purpose) -> Request {
        self.purpose = Some(purpose);
        self
    }
}

/// A response whose body has been read in full. `Debug` shows header names only: Keystone's
/// `X-Subject-Token` is a header.
#[derive(Clone)]
pub struct Response {
    pub method: Method,
    pub url: String,
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The body's bytes in the process-wide pool, returned when the last clone is dropped.
    _held: Option<Arc<Held>>,
    /// How long the service took to start answering, and how long it was allowed.
    first_byte: (Duration, Duration),
}

fn header_names(headers: &HeaderMap) -> Vec<&str> {
    headers.keys().map(|k| k.as_str()).collect()
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("url", &crate::api_error::redact_url(&self.url))
            .field("headers", &header_names(&self.headers))
            .field("body_bytes", &self.body.as_ref().map(|b| b.len()))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Response")
            .field("method", &self.method)
            .field("url", &crate::api_error::redact_url(&self.url))
            .field("status", &self.status)
            .field("headers", &header_names(&self.headers))
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Decodes the body into `T`; errors name the URL and the JSON path of the problem.
    pub fn json<T: DeserializeOwned>(&self) -> ApiResult<T> {
        decode_json(
            &self.method,
            &self.url,
            self.header(CONTENT_TYPE.as_str()),
            &self.body,
        )
    }

    pub fn is_redirect(&self) -> bool {
        (300..400).contains(&self.status)
    }
}

/// Decodes a JSON body, naming the failing field's path (`stacks[3]: missing field ...`) and
/// calling a body that ends early truncated.
pub fn decode_json<T: DeserializeOwned>(
    method: &Method,
    url: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> ApiResult<T> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let outcome: Result<T, (String, serde_json::Error)> =
        match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Ok(v) => de.end().map(|_| v).map_err(|e| (String::new(), e)),
            Err(e) => {
                let path = e.path().to_string();
                Err((path, e.into_inner()))
            }
        };
    outcome.map_err(|(path, inner)| {
        let mut detail = match inner.classify() {
            serde_json::error::Category::Eof => {
                format!("truncated body ({} bytes): {inner}", body.len())
            }
            _ if path.is_empty() || path == "." => inner.to_string(),
            _ => format!("at {path}: {inner}"),
        };
        let is_json = content_type
            .map(|ct| ct.to_ascii_lowercase().contains("json"))
            .unwrap_or(true);
        if !is_json {
            detail = format!(
                "expected JSON but got content type '{}': {detail}; body starts: {}",
                content_type.unwrap_or(""),
                excerpt(&body[..body.len().min(120)])
            );
        }
        ApiError::Decode {
            method: method.clone(),
            url: crate::api_error::redact_url(url),
            detail,
        }
    })
}

impl Transport {
    pub fn new(config: &TransportConfig) -> ApiResult<Transport> {
        // No whole-request timeout: each phase has its own (see `api::limits`).
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("caldera/", env!("CARGO_PKG_VERSION")));
        if !config.verify {
            builder = builder.danger_accept_invalid_certs(true);
        }
        if let Some(path) = &config.cacert {
            let pem = crate::config::file_limits::read_bounded_bytes(
                path,
                crate::config::file_limits::MAX_CACERT_BYTES,
            )
            .map_err(|e| ConfigError::File {
                what: "cacert".into(),
                path: path.clone(),
                detail: format!("cannot read: {e}"),
            })?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ConfigError::File {
                    what: "cacert".into(),
                    path: path.clone(),
                    detail: format!("not a PEM certificate: {e}"),
                })?;
            if certs.is_empty() {
                return Err(ConfigError::File {
                    what: "cacert".into(),
                    path: path.clone(),
                    detail: "contains no PEM certificate".into(),
                }
                .into());
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder.build().map_err(|e| {
            ApiError::Config(ConfigError::Invalid(format!(
                "cannot build the HTTP client: {e}"
            )))
        })?;
        Ok(Transport {
            inner: Arc::new(Inner {
                client,
                budget: config.budget.clone(),
                retry: config.retry,
                auth: None,
                headers: HeaderMap::new(),
                max_body_bytes: config.max_body_bytes,
                connect_timeout: config.connect_timeout,
                default_timeout: config.timeout,
                timeouts: config.timeouts,
                memory: config.memory.clone(),
                service: None,
                purpose: Purpose::Call,
                health: Arc::new(HealthBoard::default()),
            }),
        })
    }

    /// The same transport (pool, budget) authenticating with `auth`.
    pub fn with_auth(&self, auth: impl TokenSource + 'static) -> Transport {
        let auth: Arc<dyn TokenSource> = Arc::new(auth);
        self.derive(|inner| inner.auth = Some(auth))
    }

    /// The same transport sending `headers` on every request.
    pub fn with_headers(&self, headers: HeaderMap) -> Transport {
        self.derive(|inner| {
            for (k, v) in &headers {
                inner.headers.insert(k.clone(), v.clone());
            }
        })
    }

    /// The same transport with another retry policy.
    pub fn with_retry(&self, retry: RetryPolicy) -> Transport {
        self.derive(|inner| inner.retry = retry)
    }

    /// The same transport talking to `api`: its first-byte timeout, its name in errors, its
    /// health on the shared board.
    pub fn for_service(&self, api: Api) -> Transport {
        self.derive(|inner| inner.service = Some(api))
    }

    /// The same transport sending requests for `purpose` unless they say otherwise.
    pub fn for_purpose(&self, purpose: Purpose) -> Transport {
        self.derive(|inner| inner.purpose = purpose)
    }

    fn derive(&self, f: impl FnOnce(&mut Inner)) -> Transport {
        let i = &self.inner;
        let mut inner = Inner {
            client: i.client.clone(),
            budget: i.budget.clone(),
            retry: i.retry,
            auth: i.auth.clone(),
            headers: i.headers.clone(),
            max_body_bytes: i.max_body_bytes,
            connect_timeout: i.connect_timeout,
            default_timeout: i.default_timeout,
            timeouts: i.timeouts,
            memory: i.memory.clone(),
            service: i.service,
            purpose: i.purpose,
            health: i.health.clone(),
        };
        f(&mut inner);
        Transport {
            inner: Arc::new(inner),
        }
    }

    pub fn budget(&self) -> &RequestBudget {
        &self.inner.budget
    }

    /// Every service's last known state (shared by all transports derived from one).
    pub fn health(&self) -> &Arc<HealthBoard> {
        &self.inner.health
    }

    /// The pool response bodies are held in.
    pub fn memory(&self) -> &ResponseMemory {
        &self.inner.memory
    }

    pub fn timeouts(&self) -> &Timeouts {
        &self.inner.timeouts
    }

    /// The first-byte timeout of `req` and its name for messages.
    fn first_byte(&self, req: &Request) -> (Duration, String) {
        let t = &self.inner.timeouts;
        if let Some(d) = req.timeout {
            return (d, "the first-byte timeout of this call".into());
        }
        match req.purpose.unwrap_or(self.inner.purpose) {
            // Never longer than the service's own: an operator who shortened it meant it.
            Purpose::Probe => {
                let own = self.inner.service.and_then(|api| t.service(api));
                let d = own.map_or(t.probe, |own| own.min(t.probe));
                (d, "probe timeout, --timeout probe=SECS".into())
            }
            Purpose::Follow => (t.follow, "follow timeout, --timeout follow=SECS".into()),
            Purpose::Call => {
                let d = self
                    .inner
                    .service
                    .and_then(|api| t.service(api))
                    .unwrap_or(self.inner.default_timeout);
                let which = match self.inner.service {
                    Some(api) => format!("first-byte timeout, --timeout {}=SECS", api.key()),
                    None => "first-byte timeout".to_string(),
                };
                (d, which)
            }
        }
    }

    /// `Magnum ` or nothing, to start a message.
    fn who(&self) -> String {
        self.inner
            .service
            .map(|api| format!("{api} "))
            .unwrap_or_default()
    }

    fn record(&self, outcome: &Result<Response, ApiError>) {
        let Some(api) = self.inner.service else {
            return;
        };
        let board = &self.inner.health;
        match outcome {
            Ok(resp) if resp.status >= 500 => board.record(
                api,
                Availability::Down,
                Some(format!("HTTP {}", resp.status)),
            ),
            // Past half its allowance: it answers, but slowly enough to say so.
            Ok(resp) if resp.first_byte.0 * 2 > resp.first_byte.1 => board.record(
                api,
                Availability::Slow,
                Some(format!(
                    "answered after {} (timeout {})",
                    human(resp.first_byte.0),
                    human(resp.first_byte.1)
                )),
            ),
            Ok(_) => board.record(api, Availability::Up, None),
            Err(ApiError::Transport {
                kind: TransportKind::Timeout,
                detail,
                ..
            }) => {
                // The part before the parenthesis: "no answer within 10 s".
                let short = detail
                    .strip_prefix(&self.who())
                    .unwrap_or(detail)
                    .split(" (")
                    .next()
                    .unwrap_or("timed out")
                    .to_string();
                board.record(api, Availability::Slow, Some(short))
            }
            Err(ApiError::Transport { kind, .. }) => {
                board.record(api, Availability::Down, Some(kind.to_string()))
            }
            // It answered; what it said is another matter.
            Err(_) => board.record(api, Availability::Up, None),
        }
    }

    /// Sends a request through the budget with retries and token renewal. Answers with status
    /// 2xx or 3xx are returned; others become [`ApiError::Http`].
    pub async fn send(&self, req: Request) -> ApiResult<Response> {
        let mut attempt: u32 = 0;
        let mut renewed = false;
        let purpose = req.purpose.unwrap_or(self.inner.purpose);
        loop {
            attempt += 1;
            // Take the token before the budget permit: a renewal is itself a request, and holding
            // a permit while waiting for it could starve a budget of one.
            let token = match &self.inner.auth {
                Some(auth) => Some(auth.token().await?),
                None => None,
            };
            let permit = self.inner.budget.acquire().await;
            let mut builder = self
                .inner
                .client
                .request(req.method.clone(), &req.url)
                .headers(self.inner.headers.clone())
                .headers(req.headers.clone());
            if let Some(token) = &token {
                builder = builder.header("X-Auth-Token", token.header_value()?);
            }
            if let Some(body) = &req.body {
                builder = builder
                    .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                    .body(body.clone());
            }
            let started = Instant::now();
            let outcome = self.exchange(builder, &req).await;
            drop(permit);
            self.record(&outcome);
            let elapsed_ms = started.elapsed().as_millis() as u64;
            let err = match outcome {
                Ok(resp) => {
                    tracing::debug!(method = %req.method, url = %req.url, status = resp.status, elapsed_ms, attempt, "http");
                    if resp.status < 400 {
                        return Ok(resp);
                    }
                    if resp.status == 401 && !renewed {
                        if let (Some(auth), Some(token)) = (&self.inner.auth, &token) {
                            // A 401 means the request was not processed, so repeating it (even a
                            // POST) once with a fresh token is safe.
                            auth.invalidate(token).await;
                            renewed = true;
                            attempt -= 1;
                            continue;
                        }
                    }
                    let retry_after = resp
                        .header(RETRY_AFTER.as_str())
                        .and_then(|v| parse_retry_after(v, SystemTime::now()));
                    ApiError::http(
                        req.method.clone(),
                        &req.url,
                        resp.status,
                        &resp.body,
                        retry_after,
                    )
                }
                Err(err) => {
                    tracing::debug!(method = %req.method, url = %req.url, elapsed_ms, attempt, error = %err, "http failed");
                    err
                }
            };
            // A probe that timed out says what it had to say: the service is not answering.
            let probe_timeout = purpose == Purpose::Probe
                && matches!(
                    err,
                    ApiError::Transport {
                        kind: TransportKind::Timeout,
                        ..
                    }
                );
            if !probe_timeout && self.inner.retry.should_retry(&req.method, &err, attempt) {
                self.inner.budget.record_retry();
                let delay = self.inner.retry.delay(attempt, &err);
                tracing::debug!(method = %req.method, url = %req.url, attempt, delay_ms = delay.as_millis() as u64, "retrying");
                tokio::time::sleep(delay).await;
                continue;
            }
            return Err(err);
        }
    }

    /// The service and origin a request waits on (`Heat at http://heat:8004`).
    fn wait_key(&self, req: &Request) -> String {
        let name = self.inner.service.map_or("the cloud", Api::name);
        let redacted = crate::api_error::redact_url(&req.url);
        let origin = url::Url::parse(&redacted)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or(redacted);
        format!("{name} at {}", crate::model::text::terminal_safe(&origin))
    }

    /// Says on stderr, once per silence of a service, what is waited for and until when.
    fn announce_wait(&self, req: &Request, first_byte: Duration, which: &str) {
        // Looked at again: the console may have taken the terminal since the request began.
        if !ANNOUNCE_WAITS.load(Ordering::Relaxed) {
            return;
        }
        let key = self.wait_key(req);
        let first = ANNOUNCED
            .lock()
            .map(|mut announced| announced.insert(key.clone()))
            .unwrap_or(true);
        if first {
            // "first-byte timeout, --timeout heat=SECS": the flag is what the operator needs.
            let how = which.strip_prefix("first-byte timeout, ").unwrap_or(which);
            eprintln!(
                "caldera: waiting for {key} (no answer gives up after {}; {how})",
                human(first_byte)
            );
        }
    }

    /// A transport error naming the service it was talking to (`... connection failed:
    /// Magnum: ...`).
    fn named(&self, err: ApiError) -> ApiError {
        match (err, self.inner.service) {
            (
                ApiError::Transport {
                    method,
                    url,
                    kind,
                    detail,
                },
                Some(api),
            ) => ApiError::Transport {
                method,
                url,
                kind,
                detail: format!("{api}: {detail}"),
            },
            (err, _) => err,
        }
    }

    fn timed_out(&self, req: &Request, detail: String) -> ApiError {
        ApiError::Transport {
            method: req.method.clone(),
            url: crate::api_error::redact_url(&req.url),
            kind: TransportKind::Timeout,
            detail: format!("{}{detail}", self.who()),
        }
    }

    /// One attempt: connect, wait for the headers within the first-byte timeout, then read
    /// the body into memory reserved from the process-wide pool, within the body timeouts.
    async fn exchange(
        &self,
        builder: reqwest::RequestBuilder,
        req: &Request,
    ) -> ApiResult<Response> {
        let (first_byte, which) = self.first_byte(req);
        let asked = Instant::now();
        let sending = tokio::time::timeout(first_byte, builder.send());
        let announce = ANNOUNCE_WAITS.load(Ordering::Relaxed);
        let sent = if announce && first_byte > WAIT_NOTICE_AFTER {
            let mut sending = std::pin::pin!(sending);
            tokio::select! {
                sent = &mut sending => sent,
                () = tokio::time::sleep(WAIT_NOTICE_AFTER) => {
                    self.announce_wait(req, first_byte, &which);
                    sending.await
                }
            }
        } else {
            sending.await
        };
        if announce && matches!(sent, Ok(Ok(_))) {
            if let Ok(mut announced) = ANNOUNCED.lock() {
                announced.remove(&self.wait_key(req));
            }
        }
        let mut resp = match sent {
            Err(_) => {
                return Err(self.timed_out(
                    req,
                    format!("no answer within {} ({which})", human(first_byte)),
                ))
            }
            Ok(Err(e)) if e.is_connect() && e.is_timeout() => {
                return Err(self.timed_out(
                    req,
                    format!(
                        "could not connect within {} (connect timeout, --timeout connect=SECS)",
                        human(self.inner.connect_timeout)
                    ),
                ))
            }
            Ok(Err(e)) => {
                return Err(self.named(ApiError::from_reqwest(req.method.clone(), &req.url, &e)))
            }
            Ok(Ok(resp)) => resp,
        };
        let answered_after = asked.elapsed();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let limit = self.inner.max_body_bytes;
        let decode = |detail: String| ApiError::Decode {
            method: req.method.clone(),
            url: crate::api_error::redact_url(&req.url),
            detail,
        };
        let too_big = |len: u64| {
            decode(format!(
                "response body of {len}+ bytes exceeds the limit of {limit} bytes"
            ))
        };
        let no_room = |e: NoRoom, need: usize| {
            match e {
            NoRoom::TooBig { limit } => decode(format!(
                "response body of {}+ would not fit in the process-wide response memory limit of {} (--max-response-memory)",
                human_bytes(need),
                human_bytes(limit)
            )),
            NoRoom::Full { limit, held, waited } => decode(format!(
                "response body of {}+ found no room within {} under the process-wide response memory limit of {} ({} held by other responses; --max-response-memory)",
                human_bytes(need),
                human(waited),
                human_bytes(limit),
                human_bytes(held)
            )),
        }
        };
        // Refuse early when the server says how long the body is; count otherwise.
        let declared = resp.content_length();
        if let Some(len) = declared.filter(|l| *l > limit as u64) {
            return Err(too_big(len));
        }
        let t = self.inner.timeouts;
        let mut held = self.inner.memory.reserve();
        let started = Instant::now();
        // Time spent waiting for room in the pool is not the server's.
        let mut waited = Duration::ZERO;
        let mut body: Vec<u8> = Vec::new();
        if let Some(len) = declared.map(|l| l as usize).filter(|l| *l > 0) {
            waited += held.grow_to(len).await.map_err(|e| no_room(e, len))?;
            body.reserve_exact(len);
        }
        loop {
            let allowed = t.body_deadline(body.len()) + waited;
            let left = allowed.saturating_sub(started.elapsed());
            let wait = left.min(t.body_idle);
            let chunk = match tokio::time::timeout(wait, resp.chunk()).await {
                Err(_) if wait < t.body_idle => {
                    return Err(self.timed_out(
                        req,
                        format!(
                            "body not received within {} ({} bytes arrived; body timeout: {} plus 1 s per {} received)",
                            human(allowed),
                            body.len(),
                            human(t.body_base),
                            human_bytes(t.body_min_rate as usize)
                        ),
                    ))
                }
                Err(_) => {
                    return Err(self.timed_out(
                        req,
                        format!(
                            "body stalled: nothing for {} after {} bytes (body idle timeout)",
                            human(t.body_idle),
                            body.len()
                        ),
                    ))
                }
                Ok(Err(e)) => {
                    return Err(self.named(ApiError::from_reqwest(
                        req.method.clone(),
                        &req.url,
                        &e,
                    )))
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
            let need = body.len() + chunk.len();
            if need > limit {
                return Err(too_big(need as u64));
            }
            if need > body.capacity() {
                // Grow by half again (amortised copies, at most a third of the reservation
                // unused) and reserve what the buffer will really allocate.
                let cap = (body.capacity() + body.capacity() / 2)
                    .max(need)
                    .max(16 * 1024)
                    .min(limit);
                waited += held.grow_to(cap).await.map_err(|e| no_room(e, need))?;
                body.reserve_exact(cap - body.len());
            }
            body.extend_from_slice(&chunk);
        }
        let body = Bytes::from(body);
        Ok(Response {
            method: req.method.clone(),
            url: req.url.clone(),
            status,
            headers,
            body,
            _held: (held.bytes() > 0).then(|| Arc::new(held)),
            first_byte: (answered_after, first_byte),
        })
    }

    /// GETs `url` and decodes the JSON body, following up to three same-origin redirects.
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> ApiResult<T> {
        self.get_json_with(Request::get(url)).await.map(|(v, _)| v)
    }

    /// Like [`get_json`](Self::get_json) for a prepared GET request; returns the headers too.
    pub async fn get_json_with<T: DeserializeOwned>(
        &self,
        req: Request,
    ) -> ApiResult<(T, HeaderMap)> {
        let resp = self.get_following(req).await?;
        let value = resp.json()?;
        Ok((value, resp.headers))
    }

    /// Sends a GET, following same-origin redirects (at most three) explicitly.
    pub async fn get_following(&self, mut req: Request) -> ApiResult<Response> {
        for _ in 0..=3 {
            let resp = self.send(req.clone()).await?;
            if !resp.is_redirect() {
                return Ok(resp);
            }
            let next = redirect_target(&resp)?;
            let same_origin = match (url::Url::parse(&req.url), url::Url::parse(&next)) {
                (Ok(a), Ok(b)) => a.origin() == b.origin(),
                _ => false,
            };
            if !same_origin {
                return Err(ApiError::Decode {
                    method: req.method.clone(),
                    url: crate::api_error::redact_url(&req.url),
                    detail: format!(
                        "redirected to another host ({}), not followed",
                        crate::api_error::redact_url(&next)
                    ),
                });
            }
            req.url = next;
        }
        Err(ApiError::Decode {
            method: req.method.clone(),
            url: crate::api_error::redact_url(&req.url),
            detail: "too many redirects".into(),
        })
    }

    /// Sends `method url` with an optional JSON body; the response is returned undecoded
    /// (Heat answers actions with an empty 200/202 body, creates with JSON).
    pub async fn send_json<B: Serialize + ?Sized>(
        &self,
        method: Method,
        url: &str,
        body: Option<&B>,
    ) -> ApiResult<Response> {
        let mut req = Request::new(method, url);
        if let Some(body) = body {
            req = req.json(body)?;
        }
        self.send(req).await
    }

    /// GETs `url` without following a redirect: the redirect's absolute `Location`, or the
    /// response itself when the server answered 200 directly.
    pub async fn get_redirect_location(&self, url: &str) -> ApiResult<Redirect> {
        let resp = self.send(Request::get(url)).await?;
        if resp.is_redirect() {
            Ok(Redirect::Location(redirect_target(&resp)?))
        } else {
            Ok(Redirect::Direct(resp))
        }
    }
}

/// What `get_redirect_location` found.
#[derive(Debug, Clone)]
pub enum Redirect {
    Location(String),
    Direct(Response),
}

/// The absolute URL a 3xx points to (relative `Location`s are resolved against the request).
fn redirect_target(resp: &Response) -> ApiResult<String> {
    let decode_err = |detail: &str| ApiError::Decode {
        method: resp.method.clone(),
        url: crate::api_error::redact_url(&resp.url),
        detail: detail.to_string(),
    };
    let location = resp
        .header(LOCATION.as_str())
        .ok_or_else(|| decode_err(&format!("HTTP {} without a Location header", resp.status)))?;
    let base = url::Url::parse(&resp.url).map_err(|_| decode_err("request URL is not a URL"))?;
    let target = base
        .join(location)
        .map_err(|_| decode_err(&format!("bad Location header '{location}'")))?;
    Ok(target.to_string())
}
