//! The MCP server (`memdir mcp`): the only code that speaks JSON-RPC / MCP.
//!
//! It serves one [`Memory`] over stdio, or over Streamable HTTP (`http`), with the
//! official Rust SDK (`rmcp`): the tools `remember`, `recall`, `read_memory`, `forget`,
//! `note`, `memory_context`, `list_memories`, `sync` and `sync_status` (`server`),
//! `edit_memory`, `rename_memory`, `recent_activity`, `related`, `search` and `fetch` (`ops`),
//! `get_state`, `set_state` and `session_transcript` (`state_tools`),
//! the resources `memory://index` (MEMORY.md) and `memory://<key>` (one memory file),
//! the `memory://{key}` template with key completion and two prompts (`prompts`).
//! stdout carries protocol messages only; logs go
//! to stderr. A directory is watched while the server runs, so a client hears of a
//! person's edits (`notifications/resources/list_changed`, and
//! `notifications/resources/updated` for subscribed URIs, through `resources/subscribe`
//! on the 2025 protocol or `subscriptions/listen` on 2026-07-28). In the sync modes
//! the writes of its tools are pushed in the background (`publish`). With
//! `[embeddings]`, memories are embedded in the background (`engine::backfill`). It must not print
//! to stdout, exit the process or touch files except through the engine.
//! spec: spec/mcp.md.

pub mod changes;
pub mod core;
pub mod framing;
pub mod http;
pub mod manifest;
pub mod memory_tool;
pub mod ops;
pub mod prompts;
pub mod publish;
pub mod server;
pub mod state_tools;
pub mod sync_tools;
pub mod uri;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer, ServerInitializeError};
use tokio::sync::broadcast::error::RecvError;

use changes::{Change, Hub};
pub use core::MemoryServer;
use core::Shared;
use memdir::Backfill;
use memdir::Memory;

/// The default budget of `memory_context` when neither `--max-tokens` nor the
/// manifest's `maxTokens` says: a block that fits comfortably in any model's prompt.
pub const DEFAULT_MAX_TOKENS: usize = 2048;

/// How long the server waits for the directory watch to be in place before serving.
const ARM_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a session's change forwarder looks whether its session has ended.
const SESSION_CHECK: Duration = Duration::from_secs(5);

/// How to run the server.
#[derive(Debug, Clone)]
pub struct Config {
    /// The default budget of `memory_context`.
    pub max_tokens: usize,
    /// Tool results without `structuredContent` (`--text-only`, spec/mcp.md#text-only).
    pub text_only: bool,
    /// Only warnings and errors on stderr (`-q`): no note of a background push, nor
    /// of the HTTP server stopping.
    pub quiet: bool,
    /// Watch the directory for changes made by people and other processes.
    pub watch: bool,
    /// The manifest's sync mode and provider, over `.memdir/config.toml`.
    pub sync: publish::Target,
    /// How long after the last write the push of the sync modes starts.
    pub push_delay: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_tokens: DEFAULT_MAX_TOKENS,
            text_only: false,
            quiet: false,
            watch: true,
            sync: publish::Target::default(),
            push_delay: publish::PUSH_DELAY,
        }
    }
}

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("starting the async runtime failed: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("the MCP session could not start: {0}")]
    Session(#[source] Box<ServerInitializeError>),
    #[error("the MCP session ended abnormally: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Http(#[from] http::HttpError),
    #[error("serving MCP over HTTP failed: {0}")]
    Serve(#[source] std::io::Error),
}

fn runtime() -> Result<tokio::runtime::Runtime, ServeError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)
}

/// Serves `mem` over stdin/stdout until the client closes the connection.
pub fn serve_stdio(mem: Memory, config: Config) -> Result<(), ServeError> {
    let rt = runtime()?;
    let result = rt.block_on(serve(
        mem,
        config,
        (tokio::io::stdin(), tokio::io::stdout()),
    ));
    // Reading stdin happens on a blocking thread that cannot be interrupted; do not
    // wait for it once the session is over.
    rt.shutdown_timeout(Duration::from_millis(100));
    result
}

/// Serves `mem` over any byte transport (stdio, a pipe, an in-process duplex stream)
/// until the client closes it.
pub async fn serve<R, W>(mem: Memory, config: Config, io: (R, W)) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let side = Running::start(mem, &config, false).await;
    let shared = side.shared.clone();

    // Every line reaches rmcp through the framing, which answers those that cannot be
    // messages (spec/mcp.md#transport).
    let (io, framing) = framing::Framing::start(io);
    let result = async {
        let running = match MemoryServer::new(shared.clone()).serve(io).await {
            Ok(r) => r,
            // The client went away before initializing: nothing to serve.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(ServeError::Session(Box::new(e))),
        };
        let forwarder = tokio::spawn(forward(running.peer().clone(), shared.clone()));
        let quit = running.waiting().await;
        forwarder.abort();
        quit?;
        Ok(())
    }
    .await;
    framing.finish().await;
    side.stop().await;
    result
}

/// Serves `mem` over Streamable HTTP on `opts.addr` until SIGINT or SIGTERM.
/// `listening` is called with the bound address (port 0 picks a free one) once
/// clients can connect.
pub fn serve_http(
    mem: Memory,
    config: Config,
    opts: http::HttpOptions,
    listening: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServeError> {
    http::check(opts.addr, opts.token.as_ref())?;
    let rt = runtime()?;
    let result = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(opts.addr)
            .await
            .map_err(|source| http::HttpError::Bind {
                addr: opts.addr,
                source,
            })?;
        let bound = listener.local_addr().map_err(ServeError::Serve)?;
        let running = Running::start(mem, &config, true).await;
        let shared = running.shared.clone();
        // The signals are taken over before the address is printed: a script may
        // stop the server as soon as it reads it.
        let signal = http::stop_signal();
        let quiet = config.quiet;
        let stop = async move {
            signal.await;
            if !quiet {
                eprintln!("memdir mcp: stopping");
            }
        };
        listening(bound);
        let served = http::serve(listener, &opts, stop, move || {
            MemoryServer::new(shared.clone())
        })
        .await;
        running.stop().await;
        served.map_err(ServeError::Serve)
    });
    rt.shutdown_timeout(Duration::from_millis(100));
    result
}

/// What runs beside the sessions: the shared state, the directory watcher and the
/// background push.
struct Running {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
    /// The background embedding worker and the task that wakes it on changes.
    backfill: Option<(Backfill, tokio::task::JoinHandle<()>)>,
}

impl Running {
    async fn start(mem: Memory, config: &Config, notify_each_session: bool) -> Running {
        let mem = Arc::new(mem);
        let hub = Hub::new(&mem);
        let shared = Arc::new(Shared {
            mem: mem.clone(),
            hub: hub.clone(),
            max_tokens: config.max_tokens,
            text_only: config.text_only,
            subscriptions: Mutex::new(BTreeSet::new()),
            publisher: match mem.dir() {
                Some(_) => publish::Publisher::start(
                    mem.clone(),
                    config.sync.clone(),
                    config.push_delay,
                    config.quiet,
                ),
                None => publish::Publisher::disabled(),
            },
            notify_each_session,
        });

        // With [embeddings], memories without a vector are embedded in the background
        // after each change the hub announces (a tool's write or a file event), so the
        // query path rarely embeds any (spec/ranking.md#hybrid-recall). Idle otherwise.
        let backfill = mem.dir().is_some().then(|| {
            let worker = Backfill::spawn(mem.clone(), |why| {
                let why = memdir::memory::printable::escape_text(why);
                eprintln!(
                    "memdir mcp: warning: embeddings: {why}; retrying in the background with backoff (recall and memory_context rank by keywords meanwhile)"
                );
            });
            let nudge = worker.nudger();
            let mut changes = hub.subscribe();
            let waker = tokio::spawn(async move {
                loop {
                    match changes.recv().await {
                        Ok(_) | Err(RecvError::Lagged(_)) => nudge.nudge(),
                        Err(RecvError::Closed) => return,
                    }
                }
            });
            (worker, waker)
        });

        let stop = Arc::new(AtomicBool::new(false));
        let watcher = (config.watch && mem.dir().is_some()).then(|| {
            let (mem, hub, stop) = (mem.clone(), hub.clone(), stop.clone());
            let (armed_tx, armed) = std::sync::mpsc::channel();
            let thread = std::thread::spawn(move || {
                if let Err(e) = changes::watch(&mem, &hub, &stop, armed_tx) {
                    let e = memdir::memory::printable::escape_text(&e.to_string());
                    eprintln!(
                        "memdir mcp: warning: {e}; clients will not be told about edits made outside this server"
                    );
                }
            });
            (thread, armed)
        });
        // Serve only once the watch is in place: an edit made right after the client is
        // initialized must not be missed. A watcher that fails says so and drops its sender.
        let watcher = match watcher {
            Some((thread, armed)) => {
                let _ = tokio::task::spawn_blocking(move || armed.recv_timeout(ARM_TIMEOUT)).await;
                Some(thread)
            }
            None => None,
        };
        Running {
            shared,
            stop,
            watcher,
            backfill,
        }
    }

    /// Stops the watcher and waits for the last push (bounded).
    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let shared = self.shared;
        let watcher = self.watcher;
        let backfill = self.backfill.map(|(worker, waker)| {
            waker.abort();
            worker
        });
        let _ = tokio::task::spawn_blocking(move || {
            shared.publisher.finish();
            if let Some(w) = watcher {
                let _ = w.join();
            }
            if let Some(b) = backfill {
                b.stop();
            }
        })
        .await;
    }
}

/// Sends changes as plain notifications on a session opened with `initialize` (the
/// 2025 protocols): `list_changed` always, `updated` for subscribed URIs. Sessions on
/// the 2026 protocol get them through `subscriptions/listen` instead.
///
/// It ends when a send fails or, checked every few seconds, the session has ended
/// (evicted, expired or closed): otherwise every session that ever was would keep
/// its task and its place in the hub until the next change (spec/mcp.md#remote-clients).
pub(crate) async fn forward(peer: Peer<RoleServer>, shared: Arc<Shared>) {
    let mut rx = shared.hub.subscribe();
    let mut check = tokio::time::interval(SESSION_CHECK);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let received = tokio::select! {
            r = rx.recv() => r,
            _ = check.tick() => {
                if peer.is_transport_closed() {
                    return;
                }
                continue;
            }
        };
        let change = match received {
            Ok(c) => c,
            Err(RecvError::Lagged(_)) => Change::ListChanged,
            Err(RecvError::Closed) => return,
        };
        if peer.peer_info().is_none() {
            continue; // not a handshake session
        }
        let sent = match change {
            Change::ListChanged => peer.notify_resource_list_changed().await,
            Change::Updated(uri) => {
                let subscribed = shared
                    .subscriptions
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains(&uri);
                if !subscribed {
                    continue;
                }
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
            }
        };
        if sent.is_err() {
            return; // the connection is closed
        }
    }
}
