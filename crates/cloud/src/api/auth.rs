//! Keystone v3: issue a token (password or application credential), find endpoints in the
//! service catalog, and keep the token fresh.
//!
//! [`TokenManager`] holds the token in memory only. It renews shortly before `expires_at`, and
//! once after a 401 (the transport then retries that request once). Renewal happens under one
//! lock, so a hundred requests that find the token stale share one Keystone call.

use crate::api::http::{Request, SentToken, TokenSource, Transport};
use crate::api_error::{ApiError, ApiResult};
pub use crate::config::clouds::{Credentials, DomainRef, ProjectScope, UserRef};
use crate::config::Secret;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use reqwest::header::HeaderValue;
use reqwest::Method;
use serde::Deserialize;
use serde_json::json;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn domain_json(d: &DomainRef) -> serde_json::Value {
    match d {
        DomainRef::Id(id) => json!({ "id": id }),
        DomainRef::Name(name) => json!({ "name": name }),
    }
}

fn user_json(u: &UserRef) -> serde_json::Value {
    match u {
        UserRef::Id(id) => json!({ "id": id }),
        UserRef::Name { name, domain } => json!({ "name": name, "domain": domain_json(domain) }),
    }
}

impl Credentials {
    /// The `POST /v3/auth/tokens` body.
    fn request_body(&self) -> serde_json::Value {
        match self {
            Credentials::Password {
                user,
                password,
                scope,
            } => {
                let mut u = user_json(user);
                u["password"] = json!(password.expose());
                let mut auth = json!({
                    "identity": { "methods": ["password"], "password": { "user": u } }
                });
                if let Some(scope) = scope {
                    auth["scope"] = match scope {
                        ProjectScope::Id(id) => json!({ "project": { "id": id } }),
                        ProjectScope::Name { name, domain } => {
                            json!({ "project": { "name": name, "domain": domain_json(domain) } })
                        }
                    };
                }
                json!({ "auth": auth })
            }
            Credentials::ApplicationCredential {
                id,
                name,
                user,
                secret,
            } => {
                let mut ac = json!({ "secret": secret.expose() });
                if let Some(id) = id {
                    ac["id"] = json!(id);
                } else {
                    if let Some(name) = name {
                        ac["name"] = json!(name);
                    }
                    if let Some(user) = user {
                        ac["user"] = user_json(user);
                    }
                }
                json!({ "auth": { "identity": {
                    "methods": ["application_credential"],
                    "application_credential": ac
                } } })
            }
        }
    }
}

// ---- wire ----

#[derive(Debug, Deserialize)]
struct TokenBody {
    token: TokenWire,
}

#[derive(Debug, Deserialize)]
struct TokenWire {
    expires_at: DateTime<Utc>,
    #[serde(default)]
    issued_at: Option<DateTime<Utc>>,
    #[serde(default)]
    catalog: Vec<CatalogService>,
    #[serde(default)]
    project: Option<NamedRef>,
    #[serde(default)]
    user: Option<NamedRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NamedRef {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CatalogService {
    #[serde(rename = "type")]
    pub service_type: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub endpoints: Vec<CatalogEndpoint>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CatalogEndpoint {
    pub interface: String,
    #[serde(default)]
    pub region_id: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    pub url: String,
}

/// The service catalog of a token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub services: Vec<CatalogService>,
}

impl Catalog {
    /// The endpoint URL of `service_type` for `interface` (`public`, `internal`, `admin`;
    /// `publicURL` style accepted) in `region` (any region when `None`).
    pub fn endpoint(
        &self,
        service_type: &str,
        interface: &str,
        region: Option<&str>,
    ) -> Option<String> {
        let interface = interface.trim_end_matches("URL");
        self.services
            .iter()
            .filter(|s| s.service_type == service_type)
            .flat_map(|s| s.endpoints.iter())
            .find(|e| {
                e.interface == interface
                    && region.is_none_or(|r| {
                        e.region_id.as_deref() == Some(r) || e.region.as_deref() == Some(r)
                    })
            })
            .map(|e| e.url.trim_end_matches('/').to_string())
    }

    /// Where `service_type` is offered, as `interface in region` (for "no endpoint" errors).
    pub fn offered(&self, service_type: &str) -> Vec<String> {
        self.services
            .iter()
            .filter(|s| s.service_type == service_type)
            .flat_map(|s| s.endpoints.iter())
            .map(|e| {
                let region = e.region_id.as_deref().or(e.region.as_deref());
                format!("{} in {}", e.interface, region.unwrap_or("no region"))
            })
            .collect()
    }
}

/// An issued token. `Debug` never shows the token itself.
pub struct Token {
    value: Secret,
    pub expires_at: DateTime<Utc>,
    pub issued_at: DateTime<Utc>,
    pub catalog: Catalog,
    pub project: Option<NamedRef>,
    pub user: Option<NamedRef>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("value", &"***")
            .field("expires_at", &self.expires_at)
            .field("project", &self.project)
            .field("user", &self.user)
            .field("catalog_services", &self.catalog.services.len())
            .finish()
    }
}

impl Token {
    /// The `X-Auth-Token` header value, marked sensitive so HTTP-level debugging hides it.
    pub fn header_value(&self) -> ApiResult<HeaderValue> {
        let mut v = HeaderValue::from_str(self.value.expose()).map_err(|_| {
            ApiError::Auth("Keystone returned a token that is not a valid header value".into())
        })?;
        v.set_sensitive(true);
        Ok(v)
    }

    /// Whether to renew now: less than `margin` or a quarter of the lifetime left, whichever
    /// is smaller (so short-lived tokens are not renewed on every request). A quarter, not
    /// less: the token a request carries is used by the service after it was accepted — Heat
    /// makes its trust with it a second or more into a stack create, and answers 500 when the
    /// token expired in between — so a token sent must outlive the request by some seconds.
    pub fn needs_renewal(&self, now: DateTime<Utc>, margin: Duration) -> bool {
        let lifetime = (self.expires_at - self.issued_at)
            .to_std()
            .unwrap_or_default();
        let threshold = margin.min(lifetime / 4);
        match (self.expires_at - now).to_std() {
            Ok(left) => left <= threshold,
            Err(_) => true,
        }
    }
}

#[cfg(test)]
impl Token {
    pub(crate) fn for_tests(issued_at: DateTime<Utc>, expires_at: DateTime<Utc>) -> Token {
        Token {
            value: Secret::new("test-token"),
            expires_at,
            issued_at,
            catalog: Catalog::default(),
            project: None,
            user: None,
        }
    }
}

/// Normalises an auth URL to its v3 root: `https://k:5000`, `.../v3/`, `.../identity` all work.
pub fn v3_root(auth_url: &str) -> String {
    let trimmed = auth_url.trim_end_matches('/');
    if trimmed.ends_with("/v3") {
        trimmed.to_string()
    } else if let Some(base) = trimmed.strip_suffix("/v2.0") {
        format!("{base}/v3")
    } else {
        format!("{trimmed}/v3")
    }
}

/// Keeps one token fresh for all requests of a cloud. Clones share the token.
#[derive(Clone)]
pub struct TokenManager {
    inner: Arc<TmInner>,
}

struct TmInner {
    /// A transport without auth (for Keystone itself).
    transport: Transport,
    /// The auth URL as configured.
    given_url: String,
    /// The v3 root, found by version discovery on first use.
    v3: tokio::sync::OnceCell<String>,
    credentials: Credentials,
    margin: Duration,
    current: tokio::sync::Mutex<Option<Arc<Token>>>,
    issued: AtomicU64,
}

impl fmt::Debug for TokenManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenManager")
            .field("auth_url", &self.inner.given_url)
            .field("credentials", &self.inner.credentials)
            .finish()
    }
}

impl TokenManager {
    /// `transport` must not itself carry a `TokenManager`.
    pub fn new(transport: Transport, auth_url: &str, credentials: Credentials) -> TokenManager {
        TokenManager {
            inner: Arc::new(TmInner {
                transport,
                given_url: auth_url.trim_end_matches('/').to_string(),
                v3: tokio::sync::OnceCell::new(),
                credentials,
                margin: Duration::from_secs(60),
                current: tokio::sync::Mutex::new(None),
                issued: AtomicU64::new(0),
            }),
        }
    }

    /// The Keystone v3 root in use (after discovery), or the configured URL before first use.
    pub fn auth_url(&self) -> &str {
        self.inner
            .v3
            .get()
            .map(String::as_str)
            .unwrap_or(&self.inner.given_url)
    }

    /// The v3 root: the configured URL when it ends in `/v3`; else what Keystone's version
    /// document at that URL points to; else the URL with `/v3` appended.
    async fn v3_url(&self) -> &str {
        self.inner
            .v3
            .get_or_init(|| async {
                let given = &self.inner.given_url;
                if given.ends_with("/v3") {
                    return given.clone();
                }
                match self.discover(given).await {
                    Some(found) => found,
                    None => v3_root(given),
                }
            })
            .await
    }

    /// Reads Keystone's version document (`300 Multiple Choices` at the root, or a single
    /// `version`) and returns the `self` link of the v3 entry.
    async fn discover(&self, url: &str) -> Option<String> {
        #[derive(Deserialize)]
        struct Link {
            href: String,
            #[serde(default)]
            rel: String,
        }
        #[derive(Deserialize)]
        struct Version {
            id: String,
            #[serde(default)]
            links: Vec<Link>,
        }
        #[derive(Deserialize)]
        struct Values {
            values: Vec<Version>,
        }
        #[derive(Deserialize)]
        struct Doc {
            versions: Option<Values>,
            version: Option<Version>,
        }
        let resp = self.inner.transport.send(Request::get(url)).await.ok()?;
        let doc: Doc = resp.json().ok()?;
        let mut versions = doc.versions.map(|v| v.values).unwrap_or_default();
        versions.extend(doc.version);
        let v3 = versions.into_iter().find(|v| v.id.starts_with("v3"))?;
        let href = v3.links.into_iter().find(|l| l.rel == "self")?.href;
        tracing::debug!(auth_url = %url, v3 = %href, "keystone version discovered");
        Some(href.trim_end_matches('/').to_string())
    }

    /// How many tokens have been issued (for tests and the header).
    pub fn issued_count(&self) -> u64 {
        self.inner.issued.load(Ordering::Relaxed)
    }

    /// A valid token, issuing or renewing one when needed. Concurrent callers wait for the
    /// same renewal.
    ///
    /// Boxed because issuing goes through `Transport::send`, which calls back here for
    /// authenticated transports (never for Keystone's own, but the types cannot know that).
    pub fn token(&self) -> BoxFuture<'_, ApiResult<Arc<Token>>> {
        Box::pin(async move {
            let mut current = self.inner.current.lock().await;
            if let Some(token) = current.as_ref() {
                if !token.needs_renewal(Utc::now(), self.inner.margin) {
                    return Ok(token.clone());
                }
            }
            let token = Arc::new(self.issue().await?);
            *current = Some(token.clone());
            Ok(token)
        })
    }

    /// Forgets `stale` (after a 401) so the next `token()` renews. If another caller already
    /// replaced it, nothing happens: one 401 storm causes one renewal.
    pub async fn invalidate(&self, stale: &Arc<Token>) {
        let mut current = self.inner.current.lock().await;
        if current.as_ref().is_some_and(|t| Arc::ptr_eq(t, stale)) {
            *current = None;
        }
    }

    async fn issue(&self) -> ApiResult<Token> {
        let url = format!("{}/auth/tokens", self.v3_url().await);
        let req = Request::new(Method::POST, &url).json(&self.inner.credentials.request_body())?;
        let resp = match self.inner.transport.send(req).await {
            Ok(resp) => resp,
            Err(ApiError::Http {
                status, message, ..
            }) => {
                return Err(ApiError::Auth(format!(
                    "Keystone {url} answered HTTP {status}: {message}"
                )))
            }
            Err(e) => return Err(e),
        };
        let value = resp
            .header("X-Subject-Token")
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                ApiError::Auth(format!(
                    "Keystone {url} answered HTTP {} without an X-Subject-Token header",
                    resp.status
                ))
            })?
            .to_string();
        let body: TokenBody = resp.json()?;
        self.inner.issued.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(auth_url = %self.auth_url(), expires_at = %body.token.expires_at, "token issued");
        Ok(Token {
            value: Secret::new(value),
            expires_at: body.token.expires_at,
            issued_at: body.token.issued_at.unwrap_or_else(Utc::now),
            catalog: Catalog {
                services: body.token.catalog,
            },
            project: body.token.project,
            user: body.token.user,
        })
    }
}

impl SentToken for Token {
    fn header_value(&self) -> ApiResult<HeaderValue> {
        Token::header_value(self)
    }
}

impl TokenSource for TokenManager {
    fn token(&self) -> BoxFuture<'_, ApiResult<Arc<dyn SentToken>>> {
        Box::pin(async move {
            TokenManager::token(self)
                .await
                .map(|t| t as Arc<dyn SentToken>)
        })
    }

    fn invalidate<'a>(&'a self, stale: &'a Arc<dyn SentToken>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut current = self.inner.current.lock().await;
            if current
                .as_ref()
                .is_some_and(|t| std::ptr::addr_eq(Arc::as_ptr(t), Arc::as_ptr(stale)))
            {
                *current = None;
            }
        })
    }
}

/// Fuzzing entry: a Keystone token body (catalog included) and endpoint lookup.
#[cfg(feature = "fuzzing")]
pub fn fuzz_decode(body: &[u8]) {
    let m = reqwest::Method::POST;
    let ct = Some("application/json");
    if let Ok(b) =
        crate::api::http::decode_json::<TokenBody>(&m, "http://fuzz/v3/auth/tokens", ct, body)
    {
        let catalog = Catalog {
            services: b.token.catalog,
        };
        for (service, interface) in [("orchestration", "public"), ("compute", "internalURL")] {
            let _ = catalog.endpoint(service, interface, Some("RegionOne"));
            let _ = catalog.endpoint(service, interface, None);
        }
    }
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = v3_root(text);
    }
}
