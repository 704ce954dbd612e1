//! HTTPS as memdir's clients speak it: rustls with ring as its crypto provider
//! (spec/decisions.md, "TLS through ring"). A TLS front on 127.0.0.1 holds a
//! certificate from a test CA (fixtures/tls/) and relays each request to the loopback
//! embedding server of tests/embed.rs; the `memdir` binary trusts the CA only through
//! `SSL_CERT_FILE`, as a person with a private CA would set it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memdir::{Clock, Draft, Memory};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::Value;

use crate::common::{fixture, memdir, run, stderr, stdout};
use crate::embed::{Behaviour, configure, serve};

/// The largest request or answer the relay passes on.
const MAX: usize = 4 << 20;

/// Serves HTTPS on 127.0.0.1 in front of the plain HTTP server at `backend`.
fn tls_front(backend: &str) -> String {
    let cert = CertificateDer::from(include_bytes!("../fixtures/tls/server.der").to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        include_bytes!("../fixtures/tls/server.key.der").to_vec(),
    ));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let backend = backend.trim_start_matches("http://").to_string();
    std::thread::spawn(move || {
        // Bounded: a test makes few connections; the thread ends with the test binary.
        for stream in listener.incoming().take(50) {
            let Ok(stream) = stream else { continue };
            let (config, backend) = (config.clone(), backend.clone());
            std::thread::spawn(move || relay(stream, config, &backend));
        }
    });
    url
}

/// One request per connection (the server behind answers `connection: close`):
/// decrypt the request, pass it on, encrypt the answer. A failed handshake ends here.
fn relay(stream: TcpStream, config: Arc<rustls::ServerConfig>, backend: &str) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let Ok(conn) = rustls::ServerConnection::new(config) else {
        return;
    };
    let mut tls = rustls::StreamOwned::new(conn, stream);
    let mut request = Vec::new();
    let mut buf = [0u8; 8192];
    let mut wanted = None;
    while wanted.is_none_or(|n| request.len() < n) && request.len() < MAX {
        let Ok(n) = tls.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        request.extend_from_slice(&buf[..n]);
        if wanted.is_none() {
            wanted = head_and_body_len(&request);
        }
    }
    let Ok(mut plain) = TcpStream::connect(backend) else {
        return;
    };
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = Vec::new();
    if plain.write_all(&request).is_err()
        || (&mut plain)
            .take(MAX as u64)
            .read_to_end(&mut answer)
            .is_err()
    {
        return;
    }
    let _ = tls.write_all(&answer);
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// The length of a whole request once its head has arrived: the head plus its
/// `content-length`.
fn head_and_body_len(request: &[u8]) -> Option<usize> {
    let end = request.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
    let body = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    Some(end + body)
}

/// A memory that matches "espresso" only by meaning (the stand-in folds drinks into
/// one bucket), so a hybrid hit proves the endpoint answered.
fn store(dir: &Path) {
    let m = Memory::open(dir)
        .unwrap()
        .with_clock(Clock::fixed("2026-04-01T09:00:00Z".parse().unwrap()));
    for (key, body) in [
        (
            "caroline_mornings",
            "Caroline starts her day with a flat white.",
        ),
        ("football", "The team plays football on Saturday mornings."),
    ] {
        m.write(&Draft {
            key: key.into(),
            name: key.into(),
            description: key.into(),
            kind: "user".into(),
            body: body.into(),
            ..Draft::default()
        })
        .unwrap();
    }
}

fn recall(dir: &Path, ca: Option<&Path>) -> Value {
    let mut c = memdir(dir);
    c.env_remove("SSL_CERT_DIR").env_remove("SSL_CERT_FILE");
    if let Some(ca) = ca {
        c.env("SSL_CERT_FILE", ca);
    }
    let o = run(c.args(["recall", "espresso", "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

// An HTTPS endpoint whose chain leads to a trusted CA is used; one whose certificate
// nothing trusts is refused by certificate verification, and recall falls back.
#[test]
fn an_https_endpoint_is_verified_and_used() {
    let plain = serve(Behaviour::Good);
    let url = tls_front(&plain.url);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &url, "");

    let doc = recall(dir.path(), Some(&fixture("tls/ca.pem")));
    assert_eq!(doc["mode"], "hybrid", "{doc}");
    assert_eq!(doc["hits"][0]["key"], "caroline_mornings", "{doc}");

    std::fs::remove_dir_all(dir.path().join(".memdir/cache")).unwrap();
    let doc = recall(dir.path(), None);
    assert_eq!(doc["mode"], "keyword", "{doc}");
    let why = doc["fallback"].as_str().unwrap_or_default();
    assert!(why.contains("certificate"), "{doc}");
}

// The TLS stack compiles no C library but ring's few files: no AWS-LC (minutes of C
// and, on Windows, CMake and NASM), no OpenSSL, no CMake. Cargo.lock holds every
// feature's packages, embed-builtin's included.
#[test]
fn the_lock_file_holds_no_aws_lc_openssl_or_cmake() {
    let lock = std::fs::read_to_string(crate::common::manifest_dir().join("Cargo.lock")).unwrap();
    let names: Vec<&str> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .collect();
    assert!(names.contains(&"ring"), "no ring in Cargo.lock");
    for banned in ["aws-lc-sys", "aws-lc-rs", "openssl-sys", "cmake"] {
        assert!(!names.contains(&banned), "{banned} is in Cargo.lock");
    }
}
