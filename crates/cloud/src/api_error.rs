//! Errors of the HTTP layer and the typed clients.
//!
//! Messages say what was asked (method and URL) and what the server said, in the server's own
//! words when it gave any. Tokens only ever travel in headers, and headers are never part of an
//! error, so nothing here can carry a secret.

use crate::config::ConfigError;
use crate::report::{ErrorKind, ServiceError};
use reqwest::Method;
use std::fmt;
use std::time::Duration;

/// Why a request did not get an HTTP answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    Timeout,
    Connect,
    Tls,
    /// Resets, truncated bodies, protocol errors.
    Other,
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportKind::Timeout => "timed out",
            TransportKind::Connect => "connection failed",
            TransportKind::Tls => "TLS error",
            TransportKind::Other => "transport error",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The server answered with a non-success status.
    #[error("{method} {url}: HTTP {status}: {message}")]
    Http {
        method: Method,
        url: String,
        status: u16,
        /// The server's own message when the body had one, else a short excerpt of the body.
        message: String,
        /// `Retry-After`, when the server sent one (429/503).
        retry_after: Option<Duration>,
    },

    #[error("{method} {url}: {kind}: {detail}")]
    Transport {
        method: Method,
        url: String,
        kind: TransportKind,
        detail: String,
    },

    /// The body was not what we expected: malformed, truncated, or missing a required field.
    #[error("{method} {url}: unexpected response: {detail}")]
    Decode {
        method: Method,
        url: String,
        detail: String,
    },

    #[error("authentication failed: {0}")]
    Auth(String),

    #[error(transparent)]
    Config(#[from] ConfigError),

    /// The server does not offer what was asked (e.g. a Magnum microversion too old for resize).
    #[error("{0}")]
    Unsupported(String),

    #[error("request cancelled")]
    Cancelled,

    /// What the caller named is not there, as the cloud's answers show (a group path no
    /// stack holds): no server said 404.
    #[error("{0}")]
    NotFound(String),
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// The HTTP status, for HTTP errors.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Heat (or another service) answered 404, or caldera found what was named is not there.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404) || matches!(self, ApiError::NotFound(_))
    }

    /// Builds an HTTP error from a response body, extracting the server's message.
    pub fn http(
        method: Method,
        url: &str,
        status: u16,
        body: &[u8],
        retry_after: Option<Duration>,
    ) -> ApiError {
        ApiError::Http {
            method,
            url: redact_url(url),
            status,
            message: server_message(body),
            retry_after,
        }
    }

    /// Classifies a reqwest error that happened before or while reading a response.
    pub fn from_reqwest(method: Method, url: &str, err: &reqwest::Error) -> ApiError {
        let kind = if err.is_timeout() {
            TransportKind::Timeout
        } else if is_tls(err) {
            TransportKind::Tls
        } else if err.is_connect() {
            TransportKind::Connect
        } else {
            TransportKind::Other
        };
        // reqwest's own words name the URL ("error sending request for url (…)"): the error
        // names it once already, redacted (was: printed twice, the second unredacted).
        let mut detail = match err.url() {
            Some(u) => error_chain(err).replacen(&format!(" for url ({u})"), "", 1),
            None => error_chain(err),
        };
        if detail.contains("InvalidContentType") {
            // rustls got a plain-HTTP answer to its ClientHello.
            detail.push_str(
                " (the server does not speak TLS on this port; should the URL be http://?)",
            );
        }
        ApiError::Transport {
            method,
            url: redact_url(url),
            kind,
            detail,
        }
    }
}

/// reqwest reports TLS failures as connect errors; the certificate wording lives in the sources.
fn is_tls(err: &reqwest::Error) -> bool {
    let chain = error_chain(err).to_ascii_lowercase();
    // rustls's own wording for handshakes that go wrong before any certificate is seen.
    [
        "certificate",
        "tls",
        "handshake",
        "corrupt message",
        "fatal alert",
        "peer is incompatible",
        "peer misbehaved",
    ]
    .iter()
    .any(|w| chain.contains(w))
}

/// "outer: inner: innermost", because reqwest's top-level message alone ("error sending request")
/// does not say what went wrong.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Drops any user:password part of a URL, and the query values of keys that look secret.
/// Our own URLs never carry either; this guards URLs that come from configuration or servers.
pub fn redact_url(raw: &str) -> String {
    let Ok(mut url) = url::Url::parse(raw) else {
        return raw.to_string();
    };
    if !url.username().is_empty() || url.password().is_some() {
        let _ = url.set_username("");
        let _ = url.set_password(None);
    }
    let secretish = |k: &str| {
        let k = k.to_ascii_lowercase();
        k.contains("token") || k.contains("secret") || k.contains("password")
    };
    if url.query_pairs().any(|(k, _)| secretish(&k)) {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| {
                let v = if secretish(&k) {
                    "***".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.to_string()
}

/// The message of an OpenStack error body.
///
/// - Heat: `{"explanation": "...", "error": {"message": "...", "type": "..."}, "title": ...}`
/// - Magnum: `{"errors": [{"detail": "...", "title": "..."}]}`
/// - Keystone: `{"error": {"message": "...", "title": ...}}`
/// - anything else: a short excerpt of the body.
pub fn server_message(body: &[u8]) -> String {
    // Arbitrary JSON is acceptable here: error bodies vary by service and version.
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) {
        let text = |v: Option<&serde_json::Value>| {
            v.and_then(|v| v.as_str())
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        if let Some(errors) = value.get("errors").and_then(|e| e.as_array()) {
            let msgs: Vec<String> = errors
                .iter()
                .filter_map(|e| text(e.get("detail")).or_else(|| text(e.get("title"))))
                .collect();
            if !msgs.is_empty() {
                return msgs.join("; ");
            }
        }
        if let Some(err) = value.get("error") {
            if let Some(msg) = text(err.get("message")) {
                // Heat's message can be a multi-line traceback-ish text; the first line says it.
                return first_line(&msg);
            }
            if let Some(msg) = text(Some(err)) {
                return first_line(&msg);
            }
        }
        for key in ["explanation", "message", "faultstring", "title"] {
            if let Some(msg) = text(value.get(key)) {
                return first_line(&msg);
            }
        }
        // Nova-style `{"itemNotFound": {"message": ...}}`.
        if let Some(obj) = value.as_object() {
            if obj.len() == 1 {
                if let Some(msg) = obj.values().next().and_then(|v| text(v.get("message"))) {
                    return first_line(&msg);
                }
            }
        }
    }
    excerpt(body)
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).trim().to_string()
}

/// At most 200 characters of the body with whitespace collapsed, for messages.
pub fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        return "(empty body)".to_string();
    }
    let mut out: String = collapsed.chars().take(200).collect();
    if collapsed.chars().count() > 200 {
        out.push('…');
    }
    out
}

impl From<ApiError> for ServiceError {
    fn from(err: ApiError) -> ServiceError {
        let kind = match &err {
            ApiError::Http { status: 404, .. } => ErrorKind::NotFound,
            ApiError::Http { status: 401, .. } => ErrorKind::Auth,
            // 406 on Magnum means the microversion we asked for is not served; 501 not implemented.
            ApiError::Http {
                status: 406 | 501, ..
            } => ErrorKind::Unsupported,
            ApiError::Http { .. } => ErrorKind::Http,
            ApiError::Transport { .. } | ApiError::Cancelled => ErrorKind::Transport,
            ApiError::Decode { .. } => ErrorKind::Decode,
            ApiError::Auth(_) => ErrorKind::Auth,
            ApiError::Config(_) => ErrorKind::Config,
            ApiError::Unsupported(_) => ErrorKind::Unsupported,
            ApiError::NotFound(_) => ErrorKind::NotFound,
        };
        ServiceError::new(kind, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_error_body_gives_heat_message() {
        let body = br#"{"explanation": "The resource could not be found.", "code": 404,
            "error": {"message": "The Stack (nope) could not be found.", "traceback": null,
            "type": "EntityNotFound"}, "title": "Not Found"}"#;
        assert_eq!(server_message(body), "The Stack (nope) could not be found.");
        let err = ApiError::http(Method::GET, "http://h/v1/p/stacks/nope", 404, body, None);
        assert_eq!(
            err.to_string(),
            "GET http://h/v1/p/stacks/nope: HTTP 404: The Stack (nope) could not be found."
        );
        let se: ServiceError = err.into();
        assert_eq!(se.kind, ErrorKind::NotFound);
    }

    #[test]
    fn heat_explanation_used_when_no_error_message() {
        let body = br#"{"explanation": "The server could not comply with the request since it is either malformed or otherwise incorrect.", "code": 400, "title": "Bad Request"}"#;
        assert!(server_message(body).starts_with("The server could not comply"));
    }

    #[test]
    fn magnum_error_body_gives_detail() {
        let body = br#"{"errors": [{"request_id": "", "code": "client", "status": 404,
            "title": "Cluster abc could not be found", "detail": "Cluster abc could not be found.",
            "links": []}]}"#;
        assert_eq!(server_message(body), "Cluster abc could not be found.");
    }

    #[test]
    fn keystone_error_body_gives_message() {
        let body = br#"{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}"#;
        assert_eq!(
            server_message(body),
            "The request you have made requires authentication."
        );
        let se: ServiceError =
            ApiError::http(Method::POST, "http://k/v3/auth/tokens", 401, body, None).into();
        assert_eq!(se.kind, ErrorKind::Auth);
    }

    #[test]
    fn non_json_body_gives_excerpt() {
        let body = b"<html>\n  <body>502   Bad Gateway</body></html>";
        assert_eq!(
            server_message(body),
            "<html> <body>502 Bad Gateway</body></html>"
        );
        let long = vec![b'x'; 500];
        assert_eq!(server_message(&long).chars().count(), 201);
        assert_eq!(server_message(b""), "(empty body)");
    }

    #[test]
    fn urls_lose_credentials_and_secret_query_values() {
        assert_eq!(
            redact_url("http://user:pw@h:5000/v3?x=1&token=abc"),
            "http://h:5000/v3?x=1&token=***"
        );
        assert_eq!(
            redact_url("http://h/v1/p/stacks?limit=5"),
            "http://h/v1/p/stacks?limit=5"
        );
    }
}
