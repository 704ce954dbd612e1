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
use crate::engine::{
    ActivityQuery, Edit, FindReplace, Loaded, RecallRequest, SectionEdit, WriteOutcome,
};
use crate::error::Error;
use crate::memory::Key;
use crate::retrieval::filter;
use crate::retrieval::graph::{self, Direction};

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
    /// The heading of the section: its text (`Why`), or with its level (`## Why`) when the text appears at several levels.
    pub heading: String,
    /// The section's new text; the heading line is kept, and the section ends at the next heading of the same or a higher level.
    pub content: String,
}

/// A find-and-replace in `edit_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindReplaceArg {
    /// Exact text to find in the body (case-sensitive).
    pub find: String,
    /// What replaces every occurrence.
    pub replace: String,
    /// Apply only if `find` occurs exactly this many times; omit to replace every occurrence (at least one must exist).
    #[serde(default)]
    pub expected_count: Option<u64>,
}

/// Arguments of `edit_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditArgs {
    /// The key of the memory to edit (it must exist; use remember to create one).
    pub key: String,
    /// Text added after the body, on a new line (start it with an empty line for a new paragraph).
    #[serde(default)]
    pub append: Option<String>,
    /// Text added before the body, on its own line.
    #[serde(default)]
    pub prepend: Option<String>,
    /// Replace the text of one Markdown section of the body.
    #[serde(default)]
    pub replace_section: Option<SectionArg>,
    /// Replace a phrase in the body.
    #[serde(default)]
    pub find_replace: Option<FindReplaceArg>,
    /// New title. Omit to keep.
    #[serde(default)]
    pub name: Option<String>,
    /// New one-line description. Omit to keep.
    #[serde(default)]
    pub description: Option<String>,
    /// New type. Omit to keep.
    #[serde(default, rename = "type")]
    #[schemars(extend("enum" = ["user", "feedback", "project", "reference"]))]
    pub kind: Option<String>,
    /// New tags; replaces the memory's tags. Omit to keep.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// true pins salience to the maximum, false clears it. Omit to keep.
    #[serde(default)]
    pub important: Option<bool>,
    /// Recency half-life: `never` or `<N>d`. Omit to keep.
    #[serde(default)]
    pub decay: Option<String>,
    /// Which conversation or event produced the memory. Omit to keep.
    #[serde(default)]
    pub source: Option<String>,
}

/// Arguments of `rename_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RenameArgs {
    /// The memory's current key.
    pub key: String,
    /// The new key: lowercase snake_case, `^[a-z0-9][a-z0-9_-]{0,99}$`, not already taken.
    pub new_key: String,
}

/// Arguments of `recent_activity`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ActivityArgs {
    /// How many events at most, from 1 to 1000 (default 20).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Only events on or after this UTC day, `YYYY-MM-DD`.
    #[serde(default)]
    pub since: Option<String>,
    /// Only events of these types (any of them), e.g. ["user_said", "forgot", "renamed"].
    #[serde(default)]
    pub types: Option<Vec<String>>,
}

/// Arguments of `search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for: words or a phrase.
    pub query: String,
}

/// Arguments of `fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FetchArgs {
    /// The id of a search result (a memory key).
    pub id: String,
}

/// Arguments of `related`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RelatedArgs {
    /// The key of the memory to start from.
    pub key: String,
    /// How many links to follow, from 1 to 3 (default 1).
    #[serde(default)]
    pub depth: Option<u64>,
    /// Follow only links of this relation (snake_case, e.g. works_at; links_to for plain `[[key]]` links).
    #[serde(default)]
    pub rel: Option<String>,
    /// out: links written in the memory; in: memories that link to it; both (default).
    #[serde(default)]
    #[schemars(extend("enum" = ["in", "out", "both"]))]
    pub direction: Option<String>,
    /// Token budget of the answer (tokens ≈ characters / 4), from 1 to 1000000 (default 2048); the nearest memories are kept.
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

/// `related`'s budget when none is given.
pub const RELATED_DEFAULT_TOKENS: usize = 2048;

#[tool_router(router = ops_router, vis = "pub(crate)")]
impl MemoryServer {
    #[tool(
        name = "edit_memory",
        description = "Change part of an existing memory without restating the rest: append text to its body, prepend text, replace one Markdown section (the text under a heading, up to the next heading of the same or a higher level), or find and replace a phrase (with expected_count, only if it occurs exactly that many times), and/or change fields (name, description, type, tags, important, decay, source). Give at least one change; everything not given is kept. Body changes apply in the order find_replace, replace_section, prepend, append. A heading that is not there, a phrase that is not found or a count that differs is an error naming the memory, and nothing is written. Secrets are refused; identical content changes nothing. Returns updated or unchanged.",
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
        description = "Move a memory to a new key (its file is renamed; its content is unchanged) and log a `renamed` event with both keys. Refused when the new key is not a valid key or is already taken, or the memory does not exist. Use it to fix a key that no longer fits, e.g. user_sport to user_football.",
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
        description = "The most recent timeline events, newest first: what was said, done, noted, forgotten or renamed. Returns at most limit events (default 20, at most 1000) and at most about 100000 characters of them; `more` is true when older matching events were left out. Optional since (YYYY-MM-DD, UTC day, inclusive) and types (event types, any of them).",
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
                .map(filter::parse_date)
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
        description = "Search the memories (the search tool of ChatGPT connectors and deep research). Returns one text item whose text is JSON {\"results\": [{\"id\", \"title\", \"url\"}]}: the best matches first, at most 20, where id is the memory key (pass it to fetch), title its name and url its memory:// URI. Matching is by words, as in recall.",
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
        description = "Fetch one memory in full by the id a search result gave (the fetch tool of ChatGPT connectors and deep research). Returns one text item whose text is JSON {\"id\", \"title\", \"text\", \"url\", \"metadata\"}: text is the memory's Markdown body, metadata its frontmatter (type, description, dates, tags, ...).",
        annotations(title = "Fetch", read_only_hint = true, open_world_hint = false)
    )]
    async fn fetch(&self, Parameters(a): Parameters<FetchArgs>) -> CallToolResult {
        self.run(move |s| {
            let r = s.mem.read_via(&a.id, crate::engine::access::Via::McpRead)?;
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
        description = "Walk the links around a memory: typed links written as `- rel:: [[key]]` lines, plain [[key]] links (relation links_to) and frontmatter values \"[[key]]\" (relation = the field), in both directions by default (incoming links are derived from the memories that link here). Breadth-first up to depth steps (1 to 3), each memory once with its depth and the path to it, nearest first, within max_tokens; cut says how many memories did not fit. Use read_memory for a memory's full text.",
        annotations(
            title = "Related memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn related(&self, Parameters(a): Parameters<RelatedArgs>) -> CallToolResult {
        self.run(move |s| {
            let depth = in_range("depth", a.depth, 1, crate::engine::MAX_GRAPH_DEPTH)?;
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
            let shown = graph::render(&walk, graph::Format::Text, max);
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

/// The output schema of the tools of this router (the shape of their
/// `structuredContent` on success).
pub fn output_schema(tool: &str) -> Option<Value> {
    let (props, required): (Value, &[&str]) = match tool {
        "edit_memory" => (
            json!({"key": {"type": "string"}, "outcome": {"type": "string"}}),
            &["key", "outcome"],
        ),
        "rename_memory" => (
            json!({"from": {"type": "string"}, "to": {"type": "string"}, "event": {"type": "object"}}),
            &["from", "to", "event"],
        ),
        "recent_activity" => (
            json!({"events": {"type": "array"}, "more": {"type": "boolean"}, "problems": {"type": "array"}}),
            &["events", "more"],
        ),
        "search" => (
            json!({"results": {"type": "array", "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "url": {"type": "string"}},
                "required": ["id", "title", "url"]
            }}}),
            &["results"],
        ),
        "fetch" => (
            json!({
                "id": {"type": "string"},
                "title": {"type": "string"},
                "text": {"type": "string"},
                "url": {"type": "string"},
                "metadata": {"type": "object"}
            }),
            &["id", "title", "text", "url"],
        ),
        "related" => (
            json!({
                "start": {"type": "string"},
                "depth": {"type": "integer"},
                "direction": {"type": "string"},
                "nodes": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "key": {"type": "string"},
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "depth": {"type": "integer"},
                        "path": {"type": "array"}
                    },
                    "required": ["key", "depth", "path"]
                }},
                "edges": {"type": "array"},
                "cut": {"type": "integer"},
                "problems": {"type": "array"}
            }),
            &["start", "nodes", "edges", "cut"],
        ),
        _ => return None,
    };
    Some(json!({"type": "object", "properties": props, "required": required}))
}
