//! The agent-state and session tools: `get_state`, `set_state` and
//! `session_transcript` (spec/mcp.md#state-and-sessions).
//!
//! A router of their own (`state_router`), merged by [`MemoryServer::new`]; same rules
//! as the others: the text is what the CLI prints, the structured content what it
//! prints with `--json`, errors are tool results with the CLI's message. They must not
//! print or touch files except through the engine.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::core::{MAX_CONTEXT_TOKENS, MemoryServer, in_range};
use crate::engine::WriteOutcome;
use crate::error::Error;

/// Arguments of `get_state`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetStateArgs {
    /// The state key, e.g. `mood` (the file `state_mood.md`). Omit to list every state entry.
    #[serde(default)]
    pub key: Option<String>,
}

/// Arguments of `set_state`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SetStateArgs {
    /// The state key: lowercase snake_case, e.g. `mood` or `current_task` (the file `state_<key>.md`).
    pub key: String,
    /// The new value, in Markdown (the whole value: it replaces the old one).
    pub value: String,
}

/// Arguments of `session_transcript`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TranscriptArgs {
    /// The session id given to note (its `session` argument).
    pub session: String,
    /// Token budget of the transcript (tokens ≈ characters / 4), from 1 to 1000000, default 8192. The newest events are kept.
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

#[tool_router(router = state_router, vis = "pub(crate)")]
impl MemoryServer {
    #[tool(
        name = "get_state",
        description = "Read agent state: small named values you keep between turns (current task, mood, plan step), stored as state_<key>.md with type state. With key, returns its value (found is false when there is none); without, every entry. State entries are shown right after the index in memory_context, each within its limit.",
        annotations(title = "Get state", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_state(&self, Parameters(a): Parameters<GetStateArgs>) -> CallToolResult {
        self.run(move |s| match a.key {
            Some(key) => match s.mem.state(&key)? {
                Some(e) => Ok((e.value.clone(), json!({"found": true, "entries": [e]}))),
                None => Ok((
                    format!("no state `{key}`"),
                    json!({"found": false, "entries": []}),
                )),
            },
            None => {
                let entries = s.mem.states()?.entries;
                let text = if entries.is_empty() {
                    "no state entries".to_string()
                } else {
                    entries
                        .iter()
                        .map(|e| format!("{}: {}", e.key, e.value.lines().next().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                Ok((
                    text,
                    json!({"found": !entries.is_empty(), "entries": entries}),
                ))
            }
        })
        .await
    }

    #[tool(
        name = "set_state",
        description = "Set agent state `key` to `value` (replacing the old value) and log a `state_set` event. An entry a person marked read_only is refused and nothing changes. Secrets are refused. Returns created, updated or unchanged.",
        annotations(
            title = "Set state",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn set_state(&self, Parameters(a): Parameters<SetStateArgs>) -> CallToolResult {
        self.run(move |s| {
            let (outcome, _) = s.mem.set_state(&a.key, &a.value)?;
            if outcome != WriteOutcome::Unchanged {
                s.hub.refresh(&s.mem);
            }
            let word = outcome.as_str();
            Ok((
                format!("{word} state {}", a.key),
                json!({"key": a.key, "outcome": outcome}),
            ))
        })
        .await
    }

    #[tool(
        name = "session_transcript",
        description = "The events of one session (those noted with its session id), oldest first, as JSON lines within a token budget: when they do not all fit, the newest are kept and a line says how many older ones are left out. Read it before writing a summary, then save the summary with remember and summarizes {session, through} so memory_context shows the summary instead of those events.",
        annotations(
            title = "Session transcript",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn session_transcript(
        &self,
        Parameters(a): Parameters<TranscriptArgs>,
    ) -> CallToolResult {
        self.run(move |s| {
            let max = in_range(
                "max_tokens",
                a.max_tokens,
                crate::retrieval::context::DEFAULT_MAX_TOKENS,
                MAX_CONTEXT_TOKENS,
            )?;
            if a.session.trim().is_empty() {
                return Err(Error::Empty { field: "session" });
            }
            let t = s.mem.session_transcript(&a.session, max)?;
            let doc = serde_json::to_value(&t).unwrap_or_default();
            Ok((t.text, doc))
        })
        .await
    }
}

/// The output schema of the tools of this router.
pub fn output_schema(tool: &str) -> Option<Value> {
    let (props, required): (Value, &[&str]) = match tool {
        "get_state" => (
            json!({"found": {"type": "boolean"}, "entries": {"type": "array"}}),
            &["found", "entries"],
        ),
        "set_state" => (
            json!({"key": {"type": "string"}, "outcome": {"type": "string"}}),
            &["key", "outcome"],
        ),
        "session_transcript" => (
            json!({
                "session": {"type": "string"},
                "text": {"type": "string"},
                "events": {"type": "integer"},
                "shown": {"type": "integer"},
                "max_tokens": {"type": "integer"}
            }),
            &["session", "text", "events", "shown"],
        ),
        _ => return None,
    };
    Some(json!({"type": "object", "properties": props, "required": required}))
}
