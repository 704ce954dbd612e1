//! The MCP server: the first seven tools and the `memory://` resources over one
//! [`Memory`](memdir::Memory) (more tools: `ops.rs`, `sync_tools.rs`; prompts, template, completion:
//! `prompts.rs`).
//!
//! Every tool runs the same engine call as the CLI command it mirrors, on the
//! blocking thread pool (the engine does file IO and may wait for the cross-process
//! lock). A tool's text content is what the command prints; its structured content is
//! what the command prints with `--json`. A failure is a tool result flagged
//! `isError` whose text is exactly what the CLI prints on stderr (`error:`, `caused
//! by:`, `hint:`), so the model can correct itself; nothing a caller sends can crash
//! the server.
//!
//! Here: the server's instructions, the composition of the routers and the protocol
//! handler. `args` holds the tool arguments, `tools` the first seven handlers,
//! `schema` the input schemas and argument errors, `resources` the `memory://` resources.

mod args;
mod resources;
mod schema;
mod tools;

use std::sync::Arc;

use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams,
    CompleteResult, ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ResourceContents, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool_handler};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::changes::Change;
use super::core::{MemoryServer, Shared};
use super::prompts;
use super::uri;
use args::{cursor_at, cursor_offset};
pub use resources::RESOURCES_PAGE;
use resources::{resource_text, resources, unknown_uri};
pub use schema::portable;
use schema::{explain_argument_error, unknown_arguments};

/// What the server tells the model about itself (MCP `instructions`).
const INSTRUCTIONS: &str = "memdir is your durable memory: Markdown files a person can read and edit. \
At the start of a conversation (and whenever the topic changes) call memory_context with the user's \
message as query and treat the block as background knowledge. When you learn something worth keeping \
across conversations (who the user is, how they want you to work, a project's state, where to find \
things), call remember; update a memory by writing its key again, or change part of it with edit_memory \
(append, replace a section, find and replace), move it to a better key with rename_memory, and forget \
memories that turned out wrong. Use note to log what happened in a turn, and recent_activity to see \
what happened lately. Keep small working values (current task, plan step) with set_state and read them \
with get_state; give note a session id, and when a session grows long read it with session_transcript \
and save your summary with remember and summarizes. Link memories with `- rel:: [[key]]` lines in a body \
(e.g. `- works_at:: [[org_acme]]`) and call related to walk the memories linked to one. Never store \
secrets: they are refused.";

impl MemoryServer {
    pub fn new(shared: Arc<Shared>) -> MemoryServer {
        // The first seven tools, then those of `ops.rs` and `sync_tools.rs`.
        let mut tool_router = Self::tool_router()
            + Self::ops_router()
            + Self::state_router()
            + super::memory_tool::router()
            + super::sync_tools::router();
        for route in tool_router.map.values_mut() {
            let mut schema = Value::Object((*route.attr.input_schema).clone());
            portable(&mut schema);
            if let Value::Object(mut o) = schema {
                // JSON Schema 2020-12 is MCP's default dialect: naming it in every
                // schema only lengthens the list (spec/mcp.md#schemas).
                o.remove("$schema");
                route.attr.input_schema = Arc::new(o);
            }
            if let Some(d) = route.attr.description.as_mut()
                && d.contains("{default}")
            {
                *d = d
                    .replace("{default}", &shared.max_tokens.to_string())
                    .into();
            }
        }
        MemoryServer {
            shared,
            tool_router,
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
        .with_server_info(Implementation::new("memdir", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        let (page, next) = self
            .blocking(move |s| {
                let start = cursor_offset("cursor", cursor.as_deref())?;
                let all = resources(s)?;
                let end = start.saturating_add(RESOURCES_PAGE).min(all.len());
                let next = (end < all.len()).then(|| cursor_at(end));
                let page = all.into_iter().skip(start).take(RESOURCES_PAGE).collect();
                Ok((page, next))
            })
            .await?;
        let mut result = ListResourcesResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }

    /// The tools, less `sync` and `sync_status` when the directory does not sync
    /// (spec/mcp.md#tools): a model is not shown tools that can only fail.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let shared = self.shared.clone();
        let syncs = tokio::task::spawn_blocking(move || super::sync_tools::configured(&shared))
            .await
            .unwrap_or(false);
        let tools = self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|t| syncs || !super::sync_tools::SYNC_ONLY.contains(&t.name.as_ref()))
            .collect();
        // As rmcp's own listing: fresh on every call for the 2026 protocol.
        let hints = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let mut result = ListToolsResult::with_all_items(tools);
        result.ttl_ms = hints.then_some(0);
        result.cache_scope = hints.then_some(CacheScope::Public);
        Ok(result)
    }

    // Prompts, the `memory://{key}` template and completion: src/mcp/prompts.rs.

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            prompts::templates(),
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let shared = self.shared.clone();
        let name = request.name;
        let args = request.arguments;
        match tokio::task::spawn_blocking(move || prompts::get(&shared, &name, args.as_ref())).await
        {
            Ok(r) => r.map(Into::into),
            Err(e) => Err(McpError::internal_error(
                format!("internal error in memdir: {e}"),
                None,
            )),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let shared = self.shared.clone();
        match tokio::task::spawn_blocking(move || prompts::complete(&shared, &request)).await {
            Ok(r) => r.map(CompleteResult::new),
            Err(e) => Err(McpError::internal_error(
                format!("internal error in memdir: {e}"),
                None,
            )),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let target = uri::parse(&uri).ok_or_else(|| unknown_uri(&uri))?;
        let text = self.blocking(move |s| resource_text(s, &target)).await?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/markdown"),
        ])
        .into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if uri::parse(&request.uri).is_none() {
            return Err(unknown_uri(&request.uri));
        }
        self.shared
            .subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared
            .subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.uri);
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if let Some(refused) = self
            .tool_router
            .get(&name)
            .and_then(|t| unknown_arguments(t, request.arguments.as_ref()))
        {
            return Ok(refused.into());
        }
        let writes = self
            .tool_router
            .get(&name)
            .is_some_and(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) != Some(true));
        let call = ToolCallContext::new(self, request, context);
        let mut response = self.tool_router.call(call).await?;
        // `--text-only`: the text alone, for clients that would hand their model the
        // structured result instead (spec/mcp.md#text-only).
        if self.shared.text_only
            && let CallToolResponse::Complete(r) = &mut response
        {
            text_only(&name, r);
        }
        // A tool that may have changed the memory schedules the push of the sync
        // modes (spec/mcp.md#sync); `sync` pushes by itself.
        if writes
            && name != "sync"
            && matches!(&response, CallToolResponse::Complete(r) if r.is_error != Some(true))
        {
            self.shared.publisher.poke();
        }
        Ok(explain_argument_error(&name, response))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.shared.notify_each_session {
            tokio::spawn(super::forward(context.peer, self.shared.clone()));
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    /// A `subscriptions/listen` stream (2026 protocol): forwards the changes the
    /// client asked for until it cancels.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut rx = self.shared.hub.subscribe();
        let wants_list = context.accepted().resources_list_changed == Some(true);
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        loop {
            let change = tokio::select! {
                _ = context.cancelled() => return Ok(()),
                c = rx.recv() => c,
            };
            let sent = match change {
                Ok(Change::ListChanged) if wants_list => {
                    context.sink().notify_resource_list_changed().await
                }
                Ok(Change::Updated(u)) if uris.contains(&u) => {
                    context.sink().notify_resource_updated(u).await
                }
                Ok(_) => Ok(()),
                // Missed changes: say the list changed so the client refetches.
                Err(RecvError::Lagged(_)) if wants_list => {
                    context.sink().notify_resource_list_changed().await
                }
                Err(RecvError::Lagged(_)) => Ok(()),
                Err(RecvError::Closed) => return Ok(()),
            };
            if sent.is_err() {
                // The stream is gone (client cancelled or disconnected).
                return Ok(());
            }
        }
    }
}

/// A tool result as `--text-only` serves it: its structured content dropped, and for
/// `read_memory` the version hash (which only the structured result carried) added
/// as the text's last line, so `remember`'s `expected_hash` stays usable
/// (spec/mcp.md#text-only).
fn text_only(tool: &str, r: &mut CallToolResult) {
    let Some(doc) = r.structured_content.take() else {
        return;
    };
    if tool == "read_memory"
        && r.is_error != Some(true)
        && let Some(hash) = doc["hash"].as_str()
        && let Some(ContentBlock::Text(text)) = r.content.first_mut()
    {
        text.text.push_str(&format!(
            "\n(version hash, for remember's expected_hash: {hash})"
        ));
    }
}
