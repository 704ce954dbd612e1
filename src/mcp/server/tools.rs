//! The handlers of the first seven tools (`remember`, `recall`, `read_memory`,
//! `forget`, `note`, `memory_context`, `list_memories`) in their own router
//! (`tool_router`), composed with the others in [`MemoryServer::new`]. Each runs the
//! engine call of the CLI command it mirrors; it must not print or touch files except
//! through the engine.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};
use serde_json::{Value, json};

use super::super::core::{MAX_CONTEXT_TOKENS, MemoryServer, event_json, in_range};
use super::args::{
    ContextArgs, ForgetArgs, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, ListArgs, NoteArgs, ReadArgs,
    RecallArgs, RememberArgs, cursor_at, cursor_offset,
};
use memdir::Error;
use memdir::memory::Key;
use memdir::{ContextRequest, Draft, IfExists, List, ListRequest, RecallRequest, WriteOutcome};

#[tool_router(router = tool_router, vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        name = "remember",
        description = "Save a durable memory: one Markdown file a person can also read and edit. An existing key is refused unless replace: true or expected_hash (from read_memory) is given; optional fields you omit keep their value. Secrets are refused.",
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
                kind: a.kind.into(),
                body: a.body,
                tags: a.tags,
                important: a.important,
                decay: a.decay,
                source: a.source,
                supersedes: a.supersedes,
                valid_until: a.valid_until,
            };
            let if_exists = match (a.expected_hash, a.replace) {
                (Some(_), Some(true)) => {
                    return Err(Error::Argument {
                        arg: "expected_hash".into(),
                        message: "give replace or expected_hash, not both".into(),
                    });
                }
                (Some(h), _) => IfExists::ReplaceIfHash(h),
                (None, Some(true)) => IfExists::Replace,
                (None, _) => IfExists::Refuse,
            };
            let outcome = match a.summarizes {
                None => s.mem.write_if(&draft, &if_exists)?.outcome,
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
                        .compact_session(&sum.session, &draft, through, &if_exists)?
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
        description = "Search the memories by words (stemmed, case-insensitive) or a phrase, best first; each hit carries the body line that matched best. Filters narrow the set. read_memory gives a hit's full text.",
        annotations(title = "Recall", read_only_hint = true, open_world_hint = false)
    )]
    async fn recall(&self, Parameters(a): Parameters<RecallArgs>) -> CallToolResult {
        self.run(move |s| {
            let recall = s.mem.recall(&RecallRequest {
                query: a.query.clone(),
                limit: in_range("limit", a.limit, 10, 1000)?,
                filter: a.filter.filter(None)?,
            })?;
            let (hits, problems) = (recall.hits, recall.problems);
            let mut text = String::new();
            for h in &hits {
                text.push_str(&format!("{h}\n"));
                // What matched, so the model need not read the memory to see it.
                if let Some(line) = &h.line {
                    text.push_str(&format!("    {line}\n"));
                }
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
        description = "Read one memory in full: its frontmatter and Markdown body.",
        annotations(title = "Read memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn read_memory(&self, Parameters(a): Parameters<ReadArgs>) -> CallToolResult {
        self.run(move |s| {
            let r = s.mem.read_via(&a.key, memdir::Via::McpRead)?;
            Ok((
                memdir::memory::frontmatter::render(&r.meta, &r.body),
                json!({"key": r.key, "hash": r.hash(), "meta": r.meta.to_json(), "body": r.body}),
            ))
        })
        .await
    }

    #[tool(
        name = "forget",
        description = "Delete a memory that is wrong or unwanted; the deletion is logged in the timeline with the reason.",
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
            let event = s.mem.forget(&a.key, a.reason.as_deref())?.event;
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
        description = "Append an event to the timeline (what happened), e.g. type user_said with fields {\"text\": \"...\"}. Use remember for facts that should last.",
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
        description = "The memory block to read before answering: index, state, the memories most relevant to query, recent events, within a token budget (max_tokens; {default} tokens by default). Pass the user's message as query.",
        annotations(
            title = "Memory context",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_context(&self, Parameters(a): Parameters<ContextArgs>) -> CallToolResult {
        self.run(move |s| {
            let max = in_range("max_tokens", a.max_tokens, s.max_tokens, MAX_CONTEXT_TOKENS)?;
            let c = s.mem.context(&ContextRequest {
                max_tokens: max,
                query: a.query.filter(|q| !q.trim().is_empty()),
                filter: a.filter.filter(None)?,
            })?;
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
        description = "List memories, most salient and recent first, a page at a time (limit; pass next_cursor back as cursor). Filters narrow the set.",
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
            let List {
                memories: items,
                problems,
                ..
            } = s.mem.list(&ListRequest::new().with_filter(filter))?;
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
                    memdir::lifecycle_mark(&i.superseded_by, i.expired)
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
