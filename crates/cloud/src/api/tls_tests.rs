//! TLS settings of the transport against a local TLS server whose certificate is signed by a
//! test CA (tests/fixtures/tls): default verification refuses it, `cacert` trusts it,
//! `verify: false` accepts it.

use crate::api::http::{Transport, TransportConfig};
use crate::api_error::{ApiError, TransportKind};
use crate::fetch::RetryPolicy;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SERVER_PEM: &[u8] = include_bytes!("../../../../tests/fixtures/tls/server.pem");
const SERVER_KEY: &[u8] = include_bytes!("../../../../tests/fixtures/tls/server.key");

fn ca_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/tls/ca.pem")
}

/// Serves `{"ok": 1}` over HTTPS on 127.0.0.1 to every request; counts handshakes that succeed.
async fn tls_server() -> (String, Arc<AtomicUsize>) {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(SERVER_PEM)
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let s = served.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let s = s.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                s.fetch_add(1, Ordering::SeqCst);
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let body = br#"{"ok": 1}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tls.write_all(head.as_bytes()).await;
                let _ = tls.write_all(body).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (format!("https://127.0.0.1:{}/", addr.port()), served)
}

fn transport(verify: bool, cacert: Option<PathBuf>) -> Transport {
    Transport::new(&TransportConfig {
        verify,
        cacert,
        retry: RetryPolicy::default(),
        ..TransportConfig::default()
    })
    .unwrap()
}

#[derive(serde::Deserialize, Debug)]
struct Ok1 {
    ok: u32,
}

#[tokio::test]
async fn unknown_ca_is_a_tls_error_and_not_retried() {
    let (url, served) = tls_server().await;
    let t = transport(true, None);
    let err = t.get_json::<Ok1>(&url).await.unwrap_err();
    assert!(
        matches!(
            err,
            ApiError::Transport {
                kind: TransportKind::Tls,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    assert_eq!(served.load(Ordering::SeqCst), 0);
    assert_eq!(t.budget().stats().total_retries, 0);
}

#[tokio::test]
async fn cacert_trusts_the_cloud_ca() {
    let (url, served) = tls_server().await;
    let t = transport(true, Some(ca_path()));
    assert_eq!(t.get_json::<Ok1>(&url).await.unwrap().ok, 1);
    assert_eq!(served.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn verify_false_accepts_any_certificate() {
    let (url, _) = tls_server().await;
    let t = transport(false, None);
    assert_eq!(t.get_json::<Ok1>(&url).await.unwrap().ok, 1);
}
