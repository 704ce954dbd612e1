//! The Streamable HTTP transport (`memdir mcp --http ADDR`): who may connect and how
//! the server stops.
//!
//! rmcp's own `StreamableHttpService` speaks the protocol (sessions, SSE, the
//! `MCP-Protocol-Version` header) and checks `Host` and `Origin` against DNS
//! rebinding; hyper serves it over HTTP/1.1. This module owns the rules around it:
//! a server on a non-loopback address needs a bearer token, a configured token is
//! required on every request (compared in constant time), the allowed hosts and
//! origins, the limits that keep idle or abandoned clients from using up the
//! process (a header and idle timeout, caps on connections in total and per client
//! address, a cap on live sessions with the least recently used evicted), and a
//! clean stop on SIGINT or SIGTERM. It must not interpret MCP messages (rmcp does)
//! or print to stdout. spec: spec/mcp.md#remote-clients.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{
    SessionId, SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use sha2::{Digest, Sha256};

/// The address `--http` binds when it is given without one.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8765";

/// The path the MCP endpoint is served at (any path answers; this is the one we name).
pub const ENDPOINT: &str = "/mcp";

/// How long a stop waits for open requests and streams to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long a connection may take to send a request's headers, counted from when it
/// opens and again from the end of each response: a connection that sends nothing,
/// or sits idle between requests this long, is closed. A response being streamed
/// (an event stream) is not idle. Clients open a new connection when they need one.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The most connections open at once (fewer when the process may open few files:
/// at most half its limit, so the store and the watcher keep the rest).
pub const MAX_CONNECTIONS: usize = 256;

/// The most connections open at once from one client address (an MCP client holds
/// one or two: its requests and its event stream).
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 64;

/// The most live sessions; a new one evicts the least recently used. A session costs
/// about half a MiB, so this bounds them at some 32 MiB.
pub const MAX_SESSIONS: usize = 64;

/// A session nobody used for this long ends (rmcp's keep-alive); its client's next
/// request gets 404 and, as the protocol asks, starts a new session.
pub const SESSION_IDLE: Duration = Duration::from_secs(300);

/// Refusals closer together than this are one burst, warned about once.
const BURST_QUIET: Duration = HEADER_TIMEOUT;

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

/// The cap on connections open at once: [`MAX_CONNECTIONS`], or half the number of
/// files the process may open when that is lower (never below 8).
fn connection_cap() -> usize {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the limit into `lim`, which lives across the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0
            && lim.rlim_cur != libc::RLIM_INFINITY
        {
            let half = usize::try_from(lim.rlim_cur / 2).unwrap_or(usize::MAX);
            return MAX_CONNECTIONS.min(half).max(8);
        }
    }
    MAX_CONNECTIONS
}

/// The connections open now, counted in total and per client address, against caps.
#[derive(Debug)]
struct Connections {
    total_cap: usize,
    per_address_cap: usize,
    state: Mutex<ConnectionCount>,
}

#[derive(Debug, Default)]
struct ConnectionCount {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
    /// When the last connection was refused (the current burst, if recent).
    last_refusal: Option<Instant>,
}

/// A refused connection: whether it starts a burst (warn), and the counts.
#[derive(Debug, PartialEq)]
struct Refusal {
    warn: bool,
    total: usize,
    from_address: usize,
}

/// An admitted connection's place in the count, given back when it is dropped.
#[derive(Debug)]
struct Admitted {
    connections: Arc<Connections>,
    ip: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut c = self.connections.lock();
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_address.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                c.by_address.remove(&self.ip);
            }
        }
    }
}

impl Connections {
    fn new(total_cap: usize, per_address_cap: usize) -> Arc<Connections> {
        Arc::new(Connections {
            total_cap,
            per_address_cap: per_address_cap.min(total_cap),
            state: Mutex::new(ConnectionCount::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, ConnectionCount> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a connection from `ip` opened at `now`, or refuses it when a cap is
    /// reached.
    fn admit(self: &Arc<Self>, ip: IpAddr, now: Instant) -> Result<Admitted, Refusal> {
        // An IPv4 client on an IPv6 socket is the same client as on an IPv4 one.
        let ip = ip.to_canonical();
        let mut c = self.lock();
        let from_address = c.by_address.get(&ip).copied().unwrap_or(0);
        if c.total >= self.total_cap || from_address >= self.per_address_cap {
            let warn = c
                .last_refusal
                .is_none_or(|last| now.saturating_duration_since(last) > BURST_QUIET);
            c.last_refusal = Some(now);
            return Err(Refusal {
                warn,
                total: c.total,
                from_address,
            });
        }
        c.total += 1;
        *c.by_address.entry(ip).or_insert(0) += 1;
        Ok(Admitted {
            connections: self.clone(),
            ip,
        })
    }
}

/// The live sessions in order of last use (a tick that grows with every use).
#[derive(Debug, Default)]
struct Recency {
    tick: u64,
    by_id: HashMap<SessionId, u64>,
    by_tick: BTreeMap<u64, SessionId>,
}

impl Recency {
    /// Marks `id` used now; false when it is not live.
    fn touch(&mut self, id: &SessionId) -> bool {
        let Some(t) = self.by_id.get_mut(id) else {
            return false;
        };
        self.by_tick.remove(t);
        self.tick += 1;
        *t = self.tick;
        self.by_tick.insert(self.tick, id.clone());
        true
    }

    /// Adds `id` as the most recently used, and takes out (returns) the least
    /// recently used ones over `cap`.
    fn insert(&mut self, id: SessionId, cap: usize) -> Vec<SessionId> {
        self.tick += 1;
        self.by_id.insert(id.clone(), self.tick);
        self.by_tick.insert(self.tick, id);
        let mut evicted = Vec::new();
        while self.by_id.len() > cap.max(1) {
            let Some((_, oldest)) = self.by_tick.pop_first() else {
                break;
            };
            self.by_id.remove(&oldest);
            evicted.push(oldest);
        }
        evicted
    }

    fn remove(&mut self, id: &SessionId) {
        if let Some(t) = self.by_id.remove(id) {
            self.by_tick.remove(&t);
        }
    }
}

/// rmcp's in-memory sessions, at most `cap` of them: creating one over the cap ends
/// the least recently used, whose next request finds no session (404, as the
/// Streamable HTTP transport asks for an unknown session). A session is used by
/// every request that names it.
struct Sessions {
    inner: Arc<LocalSessionManager>,
    cap: usize,
    recency: Mutex<Recency>,
}

impl Sessions {
    fn new(cap: usize, idle: Duration) -> Sessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle);
        Sessions {
            inner: Arc::new(inner),
            cap,
            recency: Mutex::new(Recency::default()),
        }
    }

    fn recency(&self) -> MutexGuard<'_, Recency> {
        self.recency.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks `id` used; an error (unknown session) when it is not live.
    fn touch(&self, id: &SessionId) -> Result<(), LocalSessionManagerError> {
        if self.recency().touch(id) {
            Ok(())
        } else {
            Err(LocalSessionManagerError::SessionNotFound(id.clone()))
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        let evicted = self.recency().insert(id.clone(), self.cap);
        for old in evicted {
            // Closing waits on the session's queue; the new client need not.
            let inner = self.inner.clone();
            tokio::spawn(async move {
                let _ = inner.close_session(&old).await;
            });
        }
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id)?;
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if !self.recency().touch(id) {
            return Ok(false);
        }
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.recency().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<
        impl futures_core::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        self.touch(id)?;
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id)?;
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<
        impl futures_core::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        self.touch(id)?;
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<
        impl futures_core::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        self.touch(id)?;
        self.inner.resume(id, last_event_id).await
    }
}

/// SIGINT and SIGTERM, taken over now (a signal that comes right after the server
/// said where it listens stops it cleanly, not by the default action), and a future
/// that waits for one of them. Needs the runtime.
pub fn stop_signal() -> impl std::future::Future<Output = ()> + Send {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (term, int) = (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        );
        async move {
            match (term, int) {
                (Some(mut term), Some(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                (Some(mut term), None) => {
                    term.recv().await;
                }
                (None, Some(mut int)) => {
                    int.recv().await;
                }
                (None, None) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Serves one MCP server per session (made by `make`) on `listener` until `stop`
/// ends ([`stop_signal`]: SIGINT or SIGTERM), then stops taking connections, ends the sessions and waits (bounded)
/// for open requests. A connection over a cap is closed as accepted, before any
/// read; one warning line on stderr per burst of them.
pub async fn serve<S, F>(
    listener: tokio::net::TcpListener,
    opts: &HttpOptions,
    stop: impl std::future::Future<Output = ()>,
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
        Arc::new(Sessions::new(MAX_SESSIONS, SESSION_IDLE)),
        config,
    ));
    let connections = Connections::new(connection_cap(), MAX_CONNECTIONS_PER_ADDRESS);
    let token = opts.token.clone().map(Arc::new);
    let graceful = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
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
        let admitted = match connections.admit(peer.ip(), Instant::now()) {
            Ok(a) => a,
            Err(refusal) => {
                if refusal.warn {
                    eprintln!(
                        "memdir mcp: warning: connection limit reached ({} open, {} from {}; at most {} in all, {} per address): closing new connections until some end (idle ones are closed after {}s)",
                        refusal.total,
                        refusal.from_address,
                        peer.ip().to_canonical(),
                        connections.total_cap,
                        connections.per_address_cap,
                        HEADER_TIMEOUT.as_secs()
                    );
                }
                drop(stream);
                continue;
            }
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
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .serve_connection(TokioIo::new(stream), handler);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(admitted);
        });
    }
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

    // spec/mcp.md#remote-clients (sessions): the least recently used goes first.
    #[test]
    fn sessions_are_evicted_least_recently_used_first() {
        let id = |s: &str| -> SessionId { s.into() };
        let mut r = Recency::default();
        assert!(r.insert(id("a"), 3).is_empty());
        assert!(r.insert(id("b"), 3).is_empty());
        assert!(r.insert(id("c"), 3).is_empty());
        assert!(r.touch(&id("a")));
        assert_eq!(r.insert(id("d"), 3), [id("b")]);
        assert!(!r.touch(&id("b")));
        assert_eq!(r.insert(id("e"), 3), [id("c")]);
        r.remove(&id("a"));
        assert!(!r.touch(&id("a")));
        assert!(r.insert(id("f"), 3).is_empty());
        assert_eq!(r.insert(id("g"), 1), [id("d"), id("e"), id("f")]);
        assert_eq!((r.by_id.len(), r.by_tick.len()), (1, 1));
    }

    // spec/mcp.md#remote-clients (connections): caps in all and per address; a
    // closed connection gives its place back; one warning per burst of refusals.
    #[test]
    fn connections_are_capped_in_all_and_per_address() {
        let c = Connections::new(3, 2);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t0 = Instant::now();
        let a1 = c.admit(a, t0).unwrap();
        let _a2 = c.admit(a, t0).unwrap();
        let r = c.admit(a, t0).unwrap_err();
        assert_eq!((r.warn, r.total, r.from_address), (true, 2, 2));
        // The same burst: no second warning.
        assert!(!c.admit(a, t0 + Duration::from_secs(1)).unwrap_err().warn);
        let _b1 = c.admit(b, t0).unwrap();
        assert_eq!(c.admit(b, t0).unwrap_err().total, 3);
        drop(a1);
        let _a3 = c.admit(a, t0).unwrap();
        // An IPv4 client seen on an IPv6 socket counts as itself.
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let later = t0 + Duration::from_secs(1) + BURST_QUIET * 2;
        let r = c.admit(mapped, later).unwrap_err();
        assert_eq!(
            (r.warn, r.from_address),
            (true, 2),
            "a new burst warns again"
        );
        assert!(connection_cap() >= 8 && connection_cap() <= MAX_CONNECTIONS);
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
