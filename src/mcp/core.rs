//! What the server and its tool modules share: the server's state, the server type
//! itself and the helpers that turn outcomes into tool results. The tool routers
//! (`server`, `ops`, `state_tools`, `sync_tools`) are built on it and `server`
//! composes them; nothing here knows a tool.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use super::changes::Hub;
use memdir::Error;
use memdir::Memory;
use memdir::report::{Failure, Front};

/// The largest `max_tokens` of `memory_context`.
pub const MAX_CONTEXT_TOKENS: usize = 1_000_000;
/// A count argument checked against its range `1..=max`.
pub(super) fn in_range(
    arg: &str,
    value: Option<u64>,
    default: usize,
    max: usize,
) -> Result<usize, Error> {
    match value {
        None => Ok(default),
        Some(v) if v >= 1 && v <= max as u64 => Ok(v as usize),
        Some(v) => Err(Error::Argument {
            arg: arg.into(),
            message: format!("{v} is out of range; expected 1 to {max}"),
        }),
    }
}

/// State shared by the server, its tools and the notification tasks.
#[derive(Debug)]
pub struct Shared {
    pub mem: Arc<Memory>,
    pub hub: Hub,
    /// The default budget of `memory_context`.
    pub max_tokens: usize,
    /// Tool results carry only their text (`--text-only`, spec/mcp.md#text-only).
    pub text_only: bool,
    /// URIs the client subscribed to with `resources/subscribe` (2025 protocol).
    pub subscriptions: Mutex<BTreeSet<String>>,
    /// The push that follows writes in the sync modes (`super::publish`).
    pub publisher: super::publish::Publisher,
    /// Each session that completes the handshake gets the change notifications
    /// (Streamable HTTP, where sessions come and go; stdio's one session gets them
    /// from `super::serve`).
    pub notify_each_session: bool,
}

/// The MCP server of one memory store.
#[derive(Debug, Clone)]
pub struct MemoryServer {
    pub(super) shared: Arc<Shared>,
    pub(super) tool_router: ToolRouter<Self>,
}

/// An error's report to an MCP client (lines and JSON document), via
/// [`Failure::report`]: its hints name tools, not commands.
pub(super) fn report(e: &Failure) -> (String, Value) {
    let (lines, doc) = e.report(Front::Mcp);
    (lines.join("\n"), doc)
}

pub(super) fn tool_error(e: Failure) -> CallToolResult {
    let (text, doc) = report(&e);
    let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
    r.structured_content = Some(doc);
    r
}

pub(super) fn tool_ok(text: String, doc: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(doc);
    r
}

impl MemoryServer {
    /// The state this server shares with its sessions and tasks.
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Runs `f` on the blocking pool and turns its outcome into a tool result.
    pub(super) async fn run<F>(&self, f: F) -> CallToolResult
    where
        F: FnOnce(&Shared) -> Result<(String, Value), Error> + Send + 'static,
    {
        let shared = self.shared.clone();
        match tokio::task::spawn_blocking(move || f(&shared)).await {
            Ok(Ok((text, doc))) => tool_ok(text, doc),
            Ok(Err(e)) => tool_error(e.into()),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(memdir::report::lines(
                &format!("internal error in memdir: {e}"),
                None,
            ))]),
        }
    }
}

/// A timeline event as the JSON object of its line.
pub(super) fn event_json(e: &memdir::memory::timeline::Event) -> Value {
    serde_json::from_str(&e.encode()).unwrap_or_default()
}
