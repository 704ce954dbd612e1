//! The MCP tools added beside the first seven (spec/mcp.md#more-tools): `edit_memory`,
//! `rename_memory`, `recent_activity`, `related` (the graph walk), and the `search` / `fetch` pair that ChatGPT
//! connectors and deep-research clients look for.
//!
//! They live in their own router (`ops_router`), merged with the main one by
//! [`MemoryServer::new`], and follow the same rules: the text is what the CLI prints,
//! the structured content what it prints with `--json` (or, for `search` and
//! `fetch`, the JSON document their convention asks for, also as the text), errors are
//! tool results with the CLI's message.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::core::{MemoryServer, event_json, in_range};
use super::uri;
use memdir::Direction;
use memdir::Error;
use memdir::memory::Key;
use memdir::{ActivityQuery, Edit, FindReplace, Loaded, RecallRequest, SectionEdit, WriteOutcome};

/// `recent_activity`'s limit when none is given.
pub const ACTIVITY_DEFAULT_LIMIT: usize = 20;
/// The largest `limit` of `recent_activity`.
pub const ACTIVITY_MAX_LIMIT: usize = 1000;
/// `recent_activity` stops adding events once their lines reach this many characters
/// (the newest event is always returned whole).
pub const ACTIVITY_MAX_CHARS: usize = 100_000;
/// How many results `search` returns at most.
pub const SEARCH_LIMIT: usize = 20;

/// A section to replace in `edit_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionArg {
    /// Heading text (`Why`), or with its level (`## Why`).
    pub heading: String,
    /// New text under the heading.
    pub content: String,
}

/// A find-and-replace in `edit_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindReplaceArg {
    /// Exact text to find.
    pub find: String,
    /// Its replacement.
    pub replace: String,
    /// Apply only if found exactly this many times.
    #[serde(default)]
    pub expected_count: Option<u64>,
}

/// Arguments of `edit_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// The memory's key.
    pub key: String,
    /// Text added after the body.
    #[serde(default)]
    pub append: Option<String>,
    /// Text added before the body.
    #[serde(default)]
    pub prepend: Option<String>,
    /// Replace one Markdown section.
    #[serde(default)]
    pub replace_section: Option<SectionArg>,
    /// Replace a phrase.
    #[serde(default)]
    pub find_replace: Option<FindReplaceArg>,
    /// New title.
    #[serde(default)]
    pub name: Option<String>,
    /// New description.
    #[serde(default)]
    pub description: Option<String>,
    /// New type.
    #[serde(default, rename = "type")]
    #[schemars(extend("enum" = ["user", "feedback", "project", "reference"]))]
    pub kind: Option<String>,
    /// New tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Set or clear important.
    #[serde(default)]
    pub important: Option<bool>,
    /// `never` or `<N>d`.
    #[serde(default)]
    pub decay: Option<String>,
    /// Where it came from.
    #[serde(default)]
    pub source: Option<String>,
}

/// Arguments of `rename_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RenameArgs {
    /// The current key.
    pub key: String,
    /// The new snake_case key, not taken.
    pub new_key: String,
}

/// Arguments of `recent_activity`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ActivityArgs {
    /// Events at most, 1 to 1000 (default 20).
    #[serde(default)]
    pub limit: Option<u64>,
    /// On or after this UTC day, YYYY-MM-DD.
    #[serde(default)]
    pub since: Option<String>,
    /// Only these event types.
    #[serde(default)]
    pub types: Option<Vec<String>>,
}

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Words or a phrase.
    pub query: String,
}

/// Arguments of `fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FetchArgs {
    /// A search result's id.
    pub id: String,
}

/// Arguments of `related`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RelatedArgs {
    /// The memory to start from.
    pub key: String,
    /// Links to follow, 1 to 3 (default 1).
    #[serde(default)]
    pub depth: Option<u64>,
    /// Only this relation (links_to for plain `[[key]]`).
    #[serde(default)]
    pub rel: Option<String>,
    /// out, in or both (default).
    #[serde(default)]
    #[schemars(extend("enum" = ["in", "out", "both"]))]
    pub direction: Option<String>,
    /// Token budget (default 2048).
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

/// `related`'s budget when none is given.
pub const RELATED_DEFAULT_TOKENS: usize = 2048;

#[tool_router(router = ops_router, vis = "pub(crate)")]
impl MemoryServer {
    #[tool(
        name = "edit_memory",
        description = "Change part of a memory without restating it: append, prepend, replace a section, find and replace, and/or set fields; the rest is kept. A missing heading or phrase is an error and changes nothing.",
        annotations(
            title = "Edit memory",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn edit_memory(&self, Parameters(a): Parameters<EditArgs>) -> CallToolResult {
        self.run(move |s| {
            let expected_count = match a.find_replace.as_ref().and_then(|f| f.expected_count) {
                Some(n) => Some(usize::try_from(n).map_err(|_| Error::Argument {
                    arg: "find_replace.expected_count".into(),
                    message: format!("{n} is out of range"),
                })?),
                None => None,
            };
            let edit = Edit {
                append: a.append,
                prepend: a.prepend,
                replace_section: a.replace_section.map(|r| SectionEdit {
                    heading: r.heading,
                    content: r.content,
                }),
                find_replace: a.find_replace.map(|f| FindReplace {
                    find: f.find,
                    replace: f.replace,
                    expected_count,
                }),
                name: a.name,
                description: a.description,
                kind: a.kind,
                tags: a.tags,
                important: a.important,
                decay: a.decay,
                source: a.source,
            };
            let outcome = s.mem.edit(&a.key, &edit)?.outcome;
            let key = Key::parse(&a.key)?;
            if outcome != WriteOutcome::Unchanged {
                s.hub.refresh(&s.mem);
            }
            Ok((
                format!("{} {key}", outcome.as_str()),
                json!({"key": key, "outcome": outcome}),
            ))
        })
        .await
    }

    #[tool(
        name = "rename_memory",
        description = "Move a memory to a new key (its content unchanged) and log a renamed event.",
        annotations(
            title = "Rename memory",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn rename_memory(&self, Parameters(a): Parameters<RenameArgs>) -> CallToolResult {
        self.run(move |s| {
            let event = s.mem.rename(&a.key, &a.new_key)?.event;
            s.hub.refresh(&s.mem);
            let from = event.field_str("from").unwrap_or(&a.key).to_string();
            let to = event.field_str("to").unwrap_or(&a.new_key).to_string();
            Ok((
                format!("renamed {from} to {to}"),
                json!({"from": from, "to": to, "event": event_json(&event)}),
            ))
        })
        .await
    }

    #[tool(
        name = "recent_activity",
        description = "The most recent timeline events, newest first: what was said, done, noted, forgotten or renamed.",
        annotations(
            title = "Recent activity",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn recent_activity(&self, Parameters(a): Parameters<ActivityArgs>) -> CallToolResult {
        self.run(move |s| {
            let limit = in_range("limit", a.limit, ACTIVITY_DEFAULT_LIMIT, ACTIVITY_MAX_LIMIT)?;
            let since = a
                .since
                .as_deref()
                .map(memdir::parse_date)
                .transpose()
                .map_err(|source| Error::Filter {
                    arg: "since".into(),
                    source,
                })?;
            let types: Vec<String> = a
                .types
                .unwrap_or_default()
                .iter()
                .flat_map(|t| t.split(','))
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            let activity = s.mem.activity(&ActivityQuery {
                limit,
                since,
                types,
                max_chars: ACTIVITY_MAX_CHARS,
            })?;
            let lines: Vec<String> = activity.events.iter().map(|e| e.encode()).collect();
            let mut text = lines.join("\n");
            if text.is_empty() {
                text = "no events".into();
            } else if activity.more {
                text.push_str(
                    "\n… older events not shown; raise limit or narrow with since / types",
                );
            }
            let events: Vec<Value> = activity.events.iter().map(event_json).collect();
            Ok((
                text,
                json!({"events": events, "more": activity.more, "problems": activity.problems}),
            ))
        })
        .await
    }

    #[tool(
        name = "search",
        description = "Search the memories (ChatGPT connector shape). Returns JSON {\"results\": [{\"id\", \"title\", \"url\"}]}; id is the memory key, for fetch.",
        annotations(title = "Search", read_only_hint = true, open_world_hint = false)
    )]
    async fn search(&self, Parameters(a): Parameters<SearchArgs>) -> CallToolResult {
        self.run(move |s| {
            let hits = s
                .mem
                .recall(&RecallRequest::new(a.query.as_str(), SEARCH_LIMIT))?
                .hits;
            let results: Vec<Value> = hits
                .iter()
                .map(|h| json!({"id": h.key, "title": h.name, "url": uri::for_key(&h.key)}))
                .collect();
            let doc = json!({ "results": results });
            Ok((doc.to_string(), doc))
        })
        .await
    }

    #[tool(
        name = "fetch",
        description = "Fetch one memory by the id a search result gave (ChatGPT connector shape): JSON {\"id\", \"title\", \"text\", \"url\", \"metadata\"}.",
        annotations(title = "Fetch", read_only_hint = true, open_world_hint = false)
    )]
    async fn fetch(&self, Parameters(a): Parameters<FetchArgs>) -> CallToolResult {
        self.run(move |s| {
            let r = s.mem.read_via(&a.id, memdir::Via::McpRead)?;
            let doc = json!({
                "id": r.key,
                "title": r.meta.name,
                "text": r.body,
                "url": uri::for_key(r.key.as_str()),
                "metadata": r.meta.to_json(),
            });
            Ok((doc.to_string(), doc))
        })
        .await
    }

    #[tool(
        name = "related",
        description = "Walk the links around a memory (`- rel:: [[key]]` lines, [[key]] links, frontmatter \"[[key]]\" values) in both directions, up to depth steps, within max_tokens.",
        annotations(
            title = "Related memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn related(&self, Parameters(a): Parameters<RelatedArgs>) -> CallToolResult {
        self.run(move |s| {
            let depth = in_range("depth", a.depth, 1, memdir::MAX_GRAPH_DEPTH)?;
            let dir = match a.direction.as_deref() {
                None => Direction::Both,
                Some(d) => Direction::parse(d).ok_or_else(|| Error::Argument {
                    arg: "direction".into(),
                    message: format!("must be in, out or both, got `{d}`"),
                })?,
            };
            let max = in_range(
                "max_tokens",
                a.max_tokens,
                RELATED_DEFAULT_TOKENS,
                1_000_000,
            )?;
            let Loaded {
                value: walk,
                problems,
            } = s.mem.graph(&a.key, depth, a.rel.as_deref(), dir)?;
            let shown = memdir::render_graph(&walk, memdir::GraphFormat::Text, max);
            let w = walk.truncated(shown.shown);
            let doc = json!({
                "start": w.start,
                "depth": depth,
                "direction": dir,
                "rel": a.rel,
                "nodes": w.nodes,
                "edges": w.edges,
                "cut": shown.cut,
                "problems": problems,
            });
            Ok((shown.text, doc))
        })
        .await
    }
}
