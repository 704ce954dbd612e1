//! The Streamable HTTP transport (`memdir mcp --http ADDR`): who may connect and how
//! the server stops.
//!
//! rmcp's own `StreamableHttpService` speaks the protocol (sessions, SSE, the
//! `MCP-Protocol-Version` header) and checks `Host` and `Origin` against DNS
//! rebinding; hyper serves it over HTTP/1.1. This module owns the rules around it:
//! a server on a non-loopback address needs a bearer token, a configured token is
//! required on every request (compared in constant time), the allowed hosts and
//! origins, and a clean stop on SIGINT or SIGTERM. It must not interpret MCP
//! messages (rmcp does) or print to stdout. spec: spec/mcp.md#remote-clients.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};

/// The address `--http` binds when it is given without one.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8765";

/// The path the MCP endpoint is served at (any path answers; this is the one we name).
pub const ENDPOINT: &str = "/mcp";

/// How long a stop waits for open requests and streams to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A bearer token. Its text is never printed (Debug shows it redacted).
#[derive(Clone)]
pub struct Token {
    digest: [u8; 32],
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// The token in `text`, surrounding white space (a file's trailing newline)
    /// removed; `None` when nothing is left or it holds a character an HTTP header
    /// cannot carry (a client could never send it).
    pub fn new(text: &str) -> Option<Token> {
        let t = text.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        Some(Token {
            digest: Sha256::digest(t.as_bytes()).into(),
        })
    }

    /// Whether an `Authorization` header carries this token as `Bearer <token>`. The
    /// comparison is of SHA-256 digests, byte by byte without an early exit, so its
    /// time says nothing about how much of the token a guess got right (nor its
    /// length).
    pub fn accepts(&self, header: Option<&HeaderValue>) -> bool {
        let Some(value) = header.and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let Some((scheme, given)) = value.trim().split_once(' ') else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return false;
        }
        let given: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
        let diff = self
            .digest
            .iter()
            .zip(given.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

/// Where and for whom to serve.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to bind (port 0: any free port, printed on stderr).
    pub addr: SocketAddr,
    /// The bearer token every request must carry, if any.
    pub token: Option<Token>,
    /// Extra `Host` names or `host:port` authorities to accept (for a server reached
    /// by a name other than its address).
    pub allow_hosts: Vec<String>,
    /// Extra browser origins to accept (`https://app.example:443`, `:*` for any port).
    pub allow_origins: Vec<String>,
}

/// Why `--http` cannot serve as asked.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("`{addr}` is not an address to listen on: {reason}")]
    BadAddress { addr: String, reason: String },
    #[error(
        "refusing to serve MCP over HTTP on {addr} without a bearer token: it is not a loopback address, so other machines can connect"
    )]
    TokenRequired { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl HttpError {
    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            HttpError::BadAddress { .. } => {
                "give an address and port such as 127.0.0.1:8765, [::1]:8765 or 0.0.0.0:8765 (a port alone binds 127.0.0.1)"
            }
            HttpError::TokenRequired { .. } => {
                "put a long random token in a file and pass --token-file PATH (or set MEMDIR_MCP_TOKEN); clients send it as `Authorization: Bearer <token>`. Or serve on 127.0.0.1"
            }
            HttpError::Bind { .. } => {
                "another process may be listening there; pick another port (port 0 picks a free one)"
            }
        }
    }
}

/// Parses `--http`'s address: `host:port`, `[v6]:port`, a name that resolves, or a
/// port alone (on 127.0.0.1).
pub fn parse_addr(text: &str) -> Result<SocketAddr, HttpError> {
    let bad = |reason: String| HttpError::BadAddress {
        addr: text.to_string(),
        reason,
    };
    let t = text.trim();
    if let Ok(port) = t.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(a) = t.parse::<SocketAddr>() {
        return Ok(a);
    }
    let mut addrs = t.to_socket_addrs().map_err(|e| bad(e.to_string()))?;
    addrs
        .next()
        .ok_or_else(|| bad("the name resolves to no address".into()))
}

/// The rule for who may connect (spec/mcp.md#remote-clients): a loopback address
/// serves with or without a token; any other address only with one.
pub fn check(addr: SocketAddr, token: Option<&Token>) -> Result<(), HttpError> {
    if addr.ip().is_loopback() || token.is_some() {
        Ok(())
    } else {
        Err(HttpError::TokenRequired { addr })
    }
}

/// The `Host` values accepted: the loopback names, the bound address and the extra
/// ones. `None` (any) for an unspecified address (`0.0.0.0`, `::`) without extra
/// names: there the token is required, and the names a machine answers to are not
/// knowable here.
fn allowed_hosts(opts: &HttpOptions) -> Option<Vec<String>> {
    let ip = opts.addr.ip();
    if ip.is_unspecified() && opts.allow_hosts.is_empty() {
        return None;
    }
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    if !ip.is_loopback() && !ip.is_unspecified() {
        hosts.push(match ip {
            IpAddr::V4(v4) => v4.to_string(),
            IpAddr::V6(v6) => v6.to_string(),
        });
    }
    hosts.extend(opts.allow_hosts.iter().cloned());
    Some(hosts)
}

/// The browser origins accepted: pages served from this machine, and the extra
/// ones. A request without `Origin` (any client that is not a browser) passes.
fn allowed_origins(opts: &HttpOptions) -> Vec<String> {
    let mut origins: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .flat_map(|h| [format!("http://{h}:*"), format!("https://{h}:*")])
        .collect();
    origins.extend(opts.allow_origins.iter().cloned());
    origins
}

/// 401 with the challenge RFC 6750 names.
fn unauthorized() -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(
        Full::new(Bytes::from_static(
            b"Unauthorized: this memdir MCP server needs `Authorization: Bearer <token>`\n",
        ))
        .boxed(),
    );
    *r.status_mut() = StatusCode::UNAUTHORIZED;
    r.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"memdir\""),
    );
    r
}

/// Waits for SIGINT or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Serves one MCP server per session (made by `make`) on `listener` until SIGINT
/// or SIGTERM, then stops taking connections, ends the sessions and waits (bounded)
/// for open requests.
pub async fn serve<S, F>(
    listener: tokio::net::TcpListener,
    opts: &HttpOptions,
    make: F,
) -> std::io::Result<()>
where
    S: rmcp::ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(allowed_origins(opts))
        .enforce_origin_validation();
    config = match allowed_hosts(opts) {
        Some(hosts) => config.with_allowed_hosts(hosts),
        None => config.disable_allowed_hosts(),
    };
    let sessions = config.cancellation_token.clone();
    let service = TowerToHyperService::new(StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    let token = opts.token.clone().map(Arc::new);
    let graceful = GracefulShutdown::new();
    let stop = stop_signal();
    tokio::pin!(stop);
    loop {
        let (stream, _peer) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, go on.
                    eprintln!("memdir mcp: warning: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (service, token) = (service.clone(), token.clone());
        let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
            let (service, token) = (service.clone(), token.clone());
            async move {
                if let Some(t) = &token
                    && !t.accepts(req.headers().get(AUTHORIZATION))
                {
                    return Ok::<_, Infallible>(unauthorized());
                }
                hyper::service::Service::call(&service, req).await
            }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), handler);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    eprintln!("memdir mcp: stopping");
    drop(listener);
    // Ending the sessions closes their event streams, so connections can finish.
    sessions.cancel();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(s: &str) -> HeaderValue {
        HeaderValue::from_str(s).unwrap()
    }

    #[test]
    fn tokens() {
        let t = Token::new("s3cret-token\n").unwrap();
        assert!(t.accepts(Some(&header("Bearer s3cret-token"))));
        assert!(t.accepts(Some(&header("bearer s3cret-token"))));
        assert!(!t.accepts(Some(&header("Bearer s3cret-toke"))));
        assert!(!t.accepts(Some(&header("Bearer s3cret-token2"))));
        assert!(!t.accepts(Some(&header("Basic s3cret-token"))));
        assert!(!t.accepts(Some(&header("s3cret-token"))));
        assert!(!t.accepts(None));
        assert!(Token::new("  \n").is_none());
        assert!(Token::new("two words").is_none());
        assert_eq!(format!("{t:?}"), "Token(…)");
    }

    #[test]
    fn addresses_and_the_token_rule() {
        let a = parse_addr("8765").unwrap();
        assert_eq!(a, "127.0.0.1:8765".parse().unwrap());
        assert!(parse_addr("[::1]:0").unwrap().ip().is_loopback());
        assert!(parse_addr("nonsense").is_err());
        let t = Token::new("x").unwrap();
        assert!(check("127.0.0.1:1".parse().unwrap(), None).is_ok());
        assert!(check("[::1]:1".parse().unwrap(), None).is_ok());
        assert!(check("0.0.0.0:1".parse().unwrap(), None).is_err());
        assert!(check("192.168.1.2:1".parse().unwrap(), None).is_err());
        assert!(check("0.0.0.0:1".parse().unwrap(), Some(&t)).is_ok());
    }

    #[test]
    fn hosts_follow_the_bound_address() {
        let opts = |addr: &str, extra: &[&str]| HttpOptions {
            addr: addr.parse().unwrap(),
            token: None,
            allow_hosts: extra.iter().map(|s| s.to_string()).collect(),
            allow_origins: vec![],
        };
        assert_eq!(
            allowed_hosts(&opts("127.0.0.1:1", &[])).unwrap(),
            ["localhost", "127.0.0.1", "::1"]
        );
        assert!(
            allowed_hosts(&opts("10.0.0.5:1", &[]))
                .unwrap()
                .contains(&"10.0.0.5".to_string())
        );
        assert_eq!(allowed_hosts(&opts("0.0.0.0:1", &[])), None);
        assert!(
            allowed_hosts(&opts("0.0.0.0:1", &["memory.lan"]))
                .unwrap()
                .contains(&"memory.lan".to_string())
        );
    }
}
