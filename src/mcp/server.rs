//! The MCP server: the first seven tools and the `memory://` resources over one
//! [`Memory`](crate::Memory) (more tools: `ops.rs`, `sync_tools.rs`; prompts, template, completion:
//! `prompts.rs`).
//!
//! Every tool runs the same engine call as the CLI command it mirrors, on the
//! blocking thread pool (the engine does file IO and may wait for the cross-process
//! lock). A tool's text content is what the command prints; its structured content is
//! what the command prints with `--json`. A failure is a tool result flagged
//! `isError` whose text is exactly what the CLI prints on stderr (`error:`, `caused
//! by:`, `hint:`), so the model can correct itself; nothing a caller sends can crash
//! the server.

use std::sync::Arc;

use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::changes::Change;
use super::core::{MAX_CONTEXT_TOKENS, MemoryServer, Shared, event_json, in_range, report};
use super::uri::{self, Target};
use super::{ops, prompts};
use crate::engine::{Draft, WriteOutcome};
use crate::error::{Class, Error};
use crate::memory::Key;
use crate::memory::layout::{INDEX_FILE, MAX_MEMORY_FILE};
use crate::report::Failure;
use crate::retrieval::filter::{self, Filter, FilterError};

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

/// Arguments of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// The memory's key and file name: lowercase snake_case, `^[a-z0-9][a-z0-9_-]{0,99}$`, by convention `<type>_<topic>` (for example `user_role`, `feedback_tone`). Writing an existing key updates that memory.
    pub key: String,
    /// A short human title, e.g. "Role".
    pub name: String,
    /// One line saying what the memory holds; shown in the index and used for relevance.
    pub description: String,
    /// `user` (who the user is), `feedback` (how they want you to work), `project` (ongoing work, decisions) or `reference` (where to find things).
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["user", "feedback", "project", "reference"]))]
    pub kind: String,
    /// The memory itself, in Markdown. For feedback, say why and how to apply it.
    pub body: String,
    /// Tags; replaces the memory's tags. Omit to keep the existing ones.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// true pins the memory's salience to the maximum; omit to keep the current flag.
    #[serde(default)]
    pub important: Option<bool>,
    /// Recency half-life: `never` or `<N>d` such as `30d` (default 7 days). Omit to keep.
    #[serde(default)]
    pub decay: Option<String>,
    /// Which conversation or event produced the memory. Omit to keep.
    #[serde(default)]
    pub source: Option<String>,
    /// Keys of older memories this one replaces: they stay on disk but are left out of recall, context and lists (unless included). Replaces the list; [] clears it; omit to keep.
    #[serde(default)]
    pub supersedes: Option<Vec<String>>,
    /// The last day this memory holds, `YYYY-MM-DD`; after it the memory is expired and left out. "" clears it; omit to keep.
    #[serde(default)]
    pub valid_until: Option<String>,
    /// This memory is the summary of a session: memory_context then shows it (through a `compacted` event) instead of that session's events up to `through`. The events are kept.
    #[serde(default)]
    pub summarizes: Option<SummarizesArg>,
}

/// `summarizes` of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizesArg {
    /// The session id (as given to note).
    pub session: String,
    /// RFC 3339 time of the newest event the summary covers; omit for the session's newest event.
    #[serde(default)]
    pub through: Option<String>,
}

/// The filters of `recall`, `memory_context` and `list_memories`
/// (spec/mcp.md#filters): which memories may appear, decided before ranking. All
/// given filters must hold.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct FilterArgs {
    /// Only memories of these types (any of them), e.g. ["project", "feedback"].
    #[serde(default)]
    pub types: Option<Vec<String>>,
    /// Only memories that have every one of these tags (case-insensitive).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Only memories updated on or after this day, `YYYY-MM-DD`.
    #[serde(default)]
    pub since: Option<String>,
    /// Only memories updated on or before this day, `YYYY-MM-DD`.
    #[serde(default)]
    pub until: Option<String>,
    /// true: only memories marked important.
    #[serde(default)]
    pub important: Option<bool>,
    /// Only memories whose salience is at least this, from 0 to 1 (feedback is 0.8, important memories 1).
    #[serde(default)]
    pub min_salience: Option<f64>,
    /// true: also memories another memory supersedes (left out by default; marked `superseded_by`).
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// true: also memories whose `valid_until` day has passed (left out by default; marked `expired`).
    #[serde(default)]
    pub include_expired: Option<bool>,
}

impl FilterArgs {
    /// The filter these arguments describe; a bad value is an error naming its
    /// argument. `kind` is `list_memories`' older single `type`.
    fn filter(&self, kind: Option<&str>) -> Result<Filter, Error> {
        let bad = |arg: &str| {
            let arg = arg.to_string();
            move |source| Error::Filter { arg, source }
        };
        let mut f = Filter::default().types(kind);
        for t in self.types.iter().flatten() {
            f.types
                .extend(filter::parse_types(t).map_err(bad("types"))?);
        }
        f.tags = self.tags.clone().unwrap_or_default();
        if f.tags.iter().any(|t| t.trim().is_empty()) {
            return Err(bad("tags")(FilterError::EmptyTag));
        }
        f.since = self
            .since
            .as_deref()
            .map(filter::parse_date)
            .transpose()
            .map_err(bad("since"))?;
        f.until = self
            .until
            .as_deref()
            .map(filter::parse_date)
            .transpose()
            .map_err(bad("until"))?;
        f.important = self.important.unwrap_or(false);
        f.include_superseded = self.include_superseded.unwrap_or(false);
        f.include_expired = self.include_expired.unwrap_or(false);
        f.min_salience = self
            .min_salience
            .map(filter::check_salience)
            .transpose()
            .map_err(bad("min_salience"))?;
        f.check().map_err(bad("since/until"))?;
        Ok(f)
    }
}

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// What to look for: words or a phrase.
    pub query: String,
    /// How many hits at most, from 1 to 1000 (default 10).
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// Arguments of `read_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The key of the memory (as listed by list_memories or recall).
    pub key: String,
}

/// Arguments of `forget`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// The key of the memory to delete.
    pub key: String,
    /// Why it is forgotten (kept in the timeline's `forgot` event).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Arguments of `note`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoteArgs {
    /// The event type, e.g. `user_said`, `assistant_did`, `decision` (letters, digits, `_`, `-`, `.`, `:`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's fields, any JSON values, e.g. {"text": "how's my form?"}. `ts` and `type` are set by memdir.
    #[serde(default)]
    pub fields: Option<Map<String, Value>>,
    /// The session the event belongs to (stored as its `session` field; see session_transcript). Omit for the server's MEMDIR_SESSION, if set.
    #[serde(default)]
    pub session: Option<String>,
}

/// Arguments of `memory_context`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// Token budget of the whole block (tokens ≈ characters / 4), from 1 to 1000000. Omit for the server's default, which the tool description states.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The user's current message: memories relevant to it come first.
    #[serde(default)]
    pub query: Option<String>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// Arguments of `list_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only memories of this type (user, feedback, project, reference).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// How many memories at most on this page, from 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Where the page starts: the `next_cursor` a previous call returned, as it was. Omit for the first page.
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// `list_memories`' page size when `limit` is omitted (spec/mcp.md#paging).
pub const LIST_DEFAULT_LIMIT: usize = 100;
/// The largest `limit` of `list_memories`.
pub const LIST_MAX_LIMIT: usize = 1000;
/// How many resources one `resources/list` page holds.
pub const RESOURCES_PAGE: usize = 200;

/// An opaque cursor for the page starting at `offset`.
fn cursor_at(offset: usize) -> String {
    format!("o{offset}")
}

/// The offset a cursor names; an error naming `arg` when it is not one memdir made.
fn cursor_offset(arg: &str, cursor: Option<&str>) -> Result<usize, Error> {
    let Some(c) = cursor else { return Ok(0) };
    c.strip_prefix('o')
        .filter(|n| !n.starts_with('+'))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Error::Argument {
            arg: arg.into(),
            message: format!(
                "`{c}` is not a cursor memdir returned; pass the next cursor of the previous page as it was, or omit it for the first page"
            ),
        })
}

/// A protocol error for a resource request, carrying the CLI's message.
fn resource_error(e: Failure) -> McpError {
    let (text, _) = report(&e);
    match e {
        Failure::Core(Error::NotFound { .. }) => McpError::resource_not_found(text, None),
        _ if e.class() == Class::Input || e.class() == Class::Usage => {
            McpError::invalid_params(text, None)
        }
        _ => McpError::internal_error(text, None),
    }
}

impl MemoryServer {
    pub fn new(shared: Arc<Shared>) -> MemoryServer {
        // The first seven tools, then those of `ops.rs` and `sync_tools.rs`.
        let mut tool_router = Self::tool_router()
            + Self::ops_router()
            + Self::state_router()
            + super::sync_tools::router();
        for route in tool_router.map.values_mut() {
            let mut schema = Value::Object((*route.attr.input_schema).clone());
            portable(&mut schema);
            if let Value::Object(o) = schema {
                route.attr.input_schema = Arc::new(o);
            }
            if let Some(d) = route.attr.description.as_mut()
                && d.contains("{default}")
            {
                *d = d
                    .replace("{default}", &shared.max_tokens.to_string())
                    .into();
            }
            if let Some(Value::Object(o)) = output_schema(&route.attr.name)
                .or_else(|| ops::output_schema(&route.attr.name))
                .or_else(|| super::state_tools::output_schema(&route.attr.name))
            {
                route.attr.output_schema = Some(Arc::new(o));
            }
            if let Some(o) = route.attr.output_schema.take() {
                route.attr.output_schema = Some(Arc::new(admit_error_document((*o).clone())));
            }
        }
        MemoryServer {
            shared,
            tool_router,
        }
    }

    /// Runs `f` on the blocking pool for a resource request.
    async fn blocking<T, F>(&self, f: F) -> Result<T, McpError>
    where
        T: Send + 'static,
        F: FnOnce(&Shared) -> Result<T, Error> + Send + 'static,
    {
        let shared = self.shared.clone();
        match tokio::task::spawn_blocking(move || f(&shared)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(resource_error(e.into())),
            Err(e) => Err(McpError::internal_error(
                format!("internal error in memdir: {e}"),
                None,
            )),
        }
    }
}

#[tool_router]
impl MemoryServer {
    #[tool(
        name = "remember",
        description = "Save or update a durable memory: one Markdown file in the memory directory, which a person can also read and edit. Use it for what is worth keeping across conversations: who the user is (type user), how they want you to work (feedback), ongoing work and decisions (project), where to find things (reference). Writing an existing key updates that memory (fields you omit keep their value); identical content changes nothing. Content that looks like a secret (API key, token, private key) is refused. Returns created, updated or unchanged.",
        annotations(
            title = "Remember",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remember(&self, Parameters(a): Parameters<RememberArgs>) -> CallToolResult {
        self.run(move |s| {
            let draft = Draft {
                key: a.key.clone(),
                name: a.name,
                description: a.description,
                kind: a.kind,
                body: a.body,
                tags: a.tags,
                important: a.important,
                decay: a.decay,
                source: a.source,
                supersedes: a.supersedes,
                valid_until: a.valid_until,
            };
            let outcome = match a.summarizes {
                None => s.mem.write(&draft)?,
                Some(sum) => {
                    let through = match sum.through.as_deref() {
                        None => None,
                        Some(t) => Some(
                            chrono::DateTime::parse_from_rfc3339(t.trim())
                                .map_err(|_| Error::Argument {
                                    arg: "summarizes.through".into(),
                                    message: format!("`{t}` is not an RFC 3339 time"),
                                })?
                                .with_timezone(&chrono::Utc),
                        ),
                    };
                    s.mem
                        .compact_session(&sum.session, &draft, through)?
                        .outcome
                }
            };
            let key = Key::parse(&a.key)?;
            if outcome != WriteOutcome::Unchanged {
                s.hub.refresh(&s.mem);
            }
            let word = outcome.as_str();
            Ok((
                format!("{word} {key}"),
                json!({"key": key, "outcome": outcome}),
            ))
        })
        .await
    }

    #[tool(
        name = "recall",
        description = "Search the memories for a query (words or a phrase) and return the best matches, best first, with key, type, name, description and score. Matching is by words, not substrings: a memory is a hit when its name, description, tags or body shares a word with the query (case-insensitive and lightly stemmed, so runs and running match run; common words such as the and of are ignored), or contains the whole query as written; memories matching more and rarer words rank higher. Optional filters (types, tags, since, until, important, min_salience) keep only the memories that pass them; superseded and expired memories are left out unless include_superseded / include_expired. Use read_memory for a hit's full text.",
        annotations(title = "Recall", read_only_hint = true, open_world_hint = false)
    )]
    async fn recall(&self, Parameters(a): Parameters<RecallArgs>) -> CallToolResult {
        self.run(move |s| {
            let recall = s.mem.recall_report(
                &a.query,
                in_range("limit", a.limit, 10, 1000)?,
                &a.filter.filter(None)?,
            )?;
            let (hits, problems) = (recall.hits, recall.problems);
            let mut text = String::new();
            for h in &hits {
                text.push_str(&format!("{h}\n"));
            }
            if hits.is_empty() {
                text = "no hits".into();
            }
            let mut doc = json!({"query": a.query, "hits": hits, "problems": problems});
            // Only with [embeddings] configured (spec/mcp.md, spec/ranking.md#hybrid-recall).
            if let Some(e) = &recall.embeddings {
                e.add_to(&mut doc);
                if let Some(w) = e.warning() {
                    text.push_str(&format!("\n(warning: {w})"));
                }
            }
            Ok((text, doc))
        })
        .await
    }

    #[tool(
        name = "read_memory",
        description = "Read one memory in full: its frontmatter (name, description, type, created and updated dates, tags, ...) and its Markdown body.",
        annotations(title = "Read memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn read_memory(&self, Parameters(a): Parameters<ReadArgs>) -> CallToolResult {
        self.run(move |s| {
            let r = s
                .mem
                .read_via(&a.key, crate::engine::access::Via::McpRead)?;
            Ok((
                crate::memory::frontmatter::render(&r.meta, &r.body),
                json!({"key": r.key, "meta": r.meta.to_json(), "body": r.body}),
            ))
        })
        .await
    }

    #[tool(
        name = "forget",
        description = "Delete a memory that is wrong, outdated or that the user wants gone. The deletion is logged in the timeline (with the reason), and the memory does not come back from an older copy on sync.",
        annotations(
            title = "Forget",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn forget(&self, Parameters(a): Parameters<ForgetArgs>) -> CallToolResult {
        self.run(move |s| {
            let event = s.mem.forget(&a.key, a.reason.as_deref())?;
            s.hub.refresh(&s.mem);
            let key = event.field_str("key").unwrap_or(&a.key).to_string();
            Ok((
                format!("forgot {key}"),
                json!({"key": key, "event": event_json(&event)}),
            ))
        })
        .await
    }

    #[tool(
        name = "note",
        description = "Append an event to the timeline, the append-only log of what happened (one JSON object per line, stamped with the time). Example: type \"user_said\" with fields {\"text\": \"how's my form?\"}. Recent events appear at the end of memory_context. Use remember for facts that should last, note for what happened.",
        annotations(
            title = "Note",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn note(&self, Parameters(a): Parameters<NoteArgs>) -> CallToolResult {
        self.run(move |s| {
            let mut fields = a.fields.unwrap_or_default();
            let session = a
                .session
                .or_else(|| std::env::var("MEMDIR_SESSION").ok())
                .filter(|id| !id.trim().is_empty());
            if let Some(id) = session
                && !fields.contains_key("session")
            {
                fields.insert("session".into(), Value::String(id));
            }
            let event = s.mem.note(&a.kind, fields)?;
            Ok((event.encode(), event_json(&event)))
        })
        .await
    }

    #[tool(
        name = "memory_context",
        description = "Get the memory context block to read before answering: the index of all memories (under a small budget, its most useful lines and how many are not shown), then the agent state entries (each within its limit), then the most salient and recent memories in full, then recent timeline events (a compacted session's events replaced by its `compacted` pointer to the summary), all within a token budget (max_tokens; {default} tokens by default). Pass the user's current message as query to put the memories relevant to it first. Optional filters (types, tags, since, until, important, min_salience) choose which memories may be packed; superseded and expired memories are left out unless include_superseded / include_expired.",
        annotations(
            title = "Memory context",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_context(&self, Parameters(a): Parameters<ContextArgs>) -> CallToolResult {
        self.run(move |s| {
            let max = in_range("max_tokens", a.max_tokens, s.max_tokens, MAX_CONTEXT_TOKENS)?;
            let query = a.query.as_deref().filter(|q| !q.trim().is_empty());
            let filter = a.filter.filter(None)?;
            let c = s.mem.context_report(max, query, &filter)?;
            let mut doc = serde_json::to_value(&c.block).unwrap_or_default();
            // Only with [embeddings] configured and a query (spec/mcp.md,
            // spec/ranking.md#hybrid-recall). The text stays the block alone: it goes
            // into a prompt as it is.
            if let Some(e) = &c.embeddings {
                e.add_to(&mut doc);
            }
            Ok((c.block.text, doc))
        })
        .await
    }

    #[tool(
        name = "list_memories",
        description = "List the memories, most salient and recent first: key, type, updated date, score, name and description. Returns at most limit memories (default 100, at most 1000); when more remain, next_cursor is set: pass it as cursor to get the next page. Optional filters: type or types, tags (all must match), since/until (YYYY-MM-DD, on the updated date), important, min_salience. Superseded and expired memories are left out unless include_superseded / include_expired.",
        annotations(
            title = "List memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_memories(&self, Parameters(a): Parameters<ListArgs>) -> CallToolResult {
        self.run(move |s| {
            let limit = in_range(
                "limit",
                a.limit,
                LIST_DEFAULT_LIMIT,
                LIST_MAX_LIMIT,
            )?;
            let start = cursor_offset("cursor", a.cursor.as_deref())?;
            let filter = a.filter.filter(a.kind.as_deref())?;
            let (items, problems) = s.mem.list_filtered(&filter)?;
            let total = items.len();
            let page: Vec<_> = items.into_iter().skip(start).take(limit).collect();
            let end = start.saturating_add(page.len());
            let mut text = String::new();
            for i in &page {
                text.push_str(&format!(
                    "{}  ({}, updated {}, score {:.3})  {} — {}{}\n",
                    i.key,
                    i.kind,
                    i.updated,
                    i.score,
                    i.name,
                    i.description,
                    crate::engine::lifecycle_mark(&i.superseded_by, i.expired)
                ));
            }
            let mut doc = json!({"memories": page, "problems": problems, "total": total});
            if end < total {
                let next = cursor_at(end);
                text.push_str(&format!(
                    "… {} more not shown; call list_memories again with cursor \"{next}\" for the next page\n",
                    total - end
                ));
                doc["next_cursor"] = json!(next);
            }
            if text.is_empty() {
                text = "no memories".into();
            }
            Ok((text, doc))
        })
        .await
    }
}

/// The resources of the store: the index first, then every memory by key.
fn resources(s: &Shared) -> Result<Vec<Resource>, Error> {
    let snap = s.mem.load()?;
    let mut out = vec![
        Resource::new(uri::INDEX, "MEMORY.md")
            .with_title("Memory index")
            .with_description("MEMORY.md: every memory by type, one line each")
            .with_mime_type("text/markdown"),
    ];
    let mut records = snap.records;
    records.sort_by(|a, b| a.key.cmp(&b.key));
    for r in records {
        let key = r.key.as_str();
        let mut res = Resource::new(uri::for_key(key), key)
            .with_title(r.meta.name.clone())
            .with_description(r.meta.description.clone())
            .with_mime_type("text/markdown");
        if let Some(t) = snap.texts.get(key) {
            res = res.with_size(t.len() as u64);
        }
        out.push(res);
    }
    Ok(out)
}

/// The text behind a resource URI: the index as it is on disk after a rebuild if
/// stale, or a memory's file byte for byte.
fn resource_text(s: &Shared, target: &Target) -> Result<String, Error> {
    match target {
        Target::Index => {
            s.mem.index()?;
            // Generated, so bounded by the memories themselves: no file-size limit
            // (spec/index-format.md#rebuild).
            Ok(s.mem
                .backend()
                .read_text(INDEX_FILE, u64::MAX)?
                .unwrap_or_default())
        }
        Target::Memory(key) => {
            let r = s.mem.read_via(key, crate::engine::access::Via::Resource)?;
            s.mem
                .backend()
                .read_text(&r.key.file_name(), MAX_MEMORY_FILE)?
                .ok_or_else(|| Error::NotFound {
                    key: r.key.to_string(),
                })
        }
    }
}

/// Arguments a tool does not take (not a property of its input schema), refused
/// before the call with an error naming them (spec/mcp.md#errors).
fn unknown_arguments(
    tool: &rmcp::model::Tool,
    args: Option<&Map<String, Value>>,
) -> Option<CallToolResult> {
    let props = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)?;
    let unknown: Vec<String> = args?
        .keys()
        .filter(|k| !props.contains_key(k.as_str()))
        .map(|k| format!("`{k}`"))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let known: Vec<&str> = props.keys().map(String::as_str).collect();
    let (noun, them) = if unknown.len() == 1 {
        ("argument", "it")
    } else {
        ("arguments", "them")
    };
    Some(argument_error(
        &tool.name,
        &format!(
            "unknown {noun} {}; `{}` takes {}; remove {them}",
            unknown.join(", "),
            tool.name,
            known.join(", ")
        ),
    ))
}

/// A usage error about a tool's arguments, as the CLI reports it.
fn argument_error(tool: &str, detail: &str) -> CallToolResult {
    let message = format!("invalid arguments for `{tool}`: {}", detail.trim());
    let hint =
        format!("the input schema of `{tool}` (tools/list) names its fields and their types");
    let mut out = CallToolResult::error(vec![ContentBlock::text(format!(
        "error: {message}\nhint: {hint}"
    ))]);
    out.structured_content = Some(json!({"error": {
        "message": message,
        "causes": [],
        "hint": hint,
        "exit_code": Class::Usage.exit_code(),
    }}));
    out
}

/// The JSON Schema formats (draft 2020-12) that validators such as Ajv know.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Makes a generated input schema portable (spec/mcp.md#schemas): no format outside
/// the standard ones (schemars writes `uint`, `double`), and no `type` arrays with
/// `null` nor `anyOf` alternatives that are `null` (an optional argument is omitted,
/// never null), so strict validators and strict function-calling schemas take it.
pub fn portable(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            if o.get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                o.remove("format");
            }
            if let Some(Value::Array(types)) = o.get("type") {
                let mut rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                let t = if rest.len() == 1 {
                    rest.remove(0)
                } else {
                    Value::Array(rest)
                };
                o.insert("type".into(), t);
                if o.get("default") == Some(&Value::Null) {
                    o.remove("default");
                }
            }
            // An optional nested object is `anyOf: [{$ref}, {type: null}]`: keep the
            // schema without the null.
            if let Some(Value::Array(any)) = o.get_mut("anyOf") {
                any.retain(|v| v.get("type").and_then(Value::as_str) != Some("null"));
                if any.len() == 1
                    && let Some(Value::Object(only)) = any.pop()
                {
                    o.remove("anyOf");
                    for (k, v) in only {
                        o.entry(k).or_insert(v);
                    }
                }
            }
            o.values_mut().for_each(portable);
        }
        Value::Array(a) => a.iter_mut().for_each(portable),
        _ => {}
    }
}

/// The output schema of a tool: the shape of its `structuredContent` on success.
fn output_schema(tool: &str) -> Option<Value> {
    let (props, required): (Value, &[&str]) = match tool {
        "remember" => (
            json!({"key": {"type": "string"}, "outcome": {"type": "string"}}),
            &["key", "outcome"],
        ),
        "recall" => (
            // `mode`, `fallback` and `pending` only with [embeddings] (spec/ranking.md#hybrid-recall).
            json!({"query": {"type": "string"}, "hits": {"type": "array"}, "problems": {"type": "array"},
                "mode": {"type": "string", "enum": ["keyword", "hybrid"]},
                "fallback": {"type": "string"}, "pending": {"type": "integer"}}),
            &["query", "hits"],
        ),
        "read_memory" => (
            json!({"key": {"type": "string"}, "meta": {"type": "object"}, "body": {"type": "string"}}),
            &["key", "meta", "body"],
        ),
        "forget" => (
            json!({"key": {"type": "string"}, "event": {"type": "object"}}),
            &["key", "event"],
        ),
        "note" => (
            json!({"ts": {"type": "string"}, "type": {"type": "string"}}),
            &["ts", "type"],
        ),
        "memory_context" => (
            // `mode`, `fallback` and `pending` only with [embeddings] and a query.
            json!({"text": {"type": "string"}, "memories": {"type": "array"}, "events": {"type": "integer"},
                "mode": {"type": "string", "enum": ["keyword", "hybrid"]},
                "fallback": {"type": "string"}, "pending": {"type": "integer"}}),
            &["text", "memories"],
        ),
        "list_memories" => (
            json!({
                "memories": {"type": "array"},
                "problems": {"type": "array"},
                "total": {"type": "integer"},
                "next_cursor": {"type": "string"}
            }),
            &["memories", "total"],
        ),
        _ => return None,
    };
    Some(json!({"type": "object", "properties": props, "required": required}))
}

/// Widens a tool's output schema so that it also admits the error document an
/// `isError` result carries (spec/mcp.md#schemas): the official TypeScript SDK
/// validates `structuredContent` against the output schema on error results too,
/// and would turn every tool error into an exception the model never sees. The
/// result: the success fields and `error` as properties, and `anyOf` the success
/// shape (with its `required`) or `{"error": {...}}`. Each branch names the
/// properties it requires, as Ajv's strict mode asks.
pub fn admit_error_document(success: Map<String, Value>) -> Map<String, Value> {
    let error = json!({
        "type": "object",
        "description": "The CLI's error document, on error results (isError) only.",
        "properties": {
            "message": {"type": "string"},
            "causes": {"type": "array", "items": {"type": "string"}},
            "hint": {"description": "What to do about it (a string), or null."},
            "exit_code": {"type": "integer"}
        },
        "required": ["message", "exit_code"]
    });
    let mut props = success
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    props.insert("error".into(), error.clone());
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(props));
    out.insert(
        "anyOf".into(),
        json!([
            Value::Object(success),
            {"type": "object", "properties": {"error": error}, "required": ["error"]}
        ]),
    );
    out
}

/// rmcp reports arguments that do not fit a tool's schema as a bare serde message;
/// say it the way the CLI reports usage errors, so the model can fix the call.
fn explain_argument_error(tool: &str, response: CallToolResponse) -> CallToolResponse {
    let CallToolResponse::Complete(r) = &response else {
        return response;
    };
    let detail = match (r.is_error, r.content.first().and_then(|c| c.as_text())) {
        (Some(true), Some(t)) => t.text.strip_prefix("failed to deserialize parameters:"),
        _ => None,
    };
    let Some(detail) = detail else {
        return response;
    };
    argument_error(tool, detail).into()
}

fn unknown_uri(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "error: no resource {uri}\nhint: the resources are memory://index and memory://<key>"
        ),
        None,
    )
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
        let response = self.tool_router.call(call).await?;
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
