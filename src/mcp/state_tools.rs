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
use serde_json::json;

use super::core::{MAX_CONTEXT_TOKENS, MemoryServer, in_range};
use memdir::Error;
use memdir::WriteOutcome;

/// Arguments of `get_state`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetStateArgs {
    /// The state key; omit for all.
    #[serde(default)]
    pub key: Option<String>,
}

/// Arguments of `set_state`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SetStateArgs {
    /// snake_case key, e.g. current_task.
    pub key: String,
    /// The whole new value, in Markdown.
    pub value: String,
}

/// Arguments of `session_transcript`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TranscriptArgs {
    /// The session id given to note.
    pub session: String,
    /// Token budget (default 8192).
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

#[tool_router(router = state_router, vis = "pub(crate)")]
impl MemoryServer {
    #[tool(
        name = "get_state",
        description = "Read agent state, small named values kept between turns (current task, plan step): one key, or every entry when key is omitted.",
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
        description = "Set agent state key to value, replacing the old value, and log a state_set event. Read-only entries and secrets are refused.",
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
        description = "One session's events (noted with its session id), oldest first, within max_tokens (the newest kept). Read it before saving a summary with remember and summarizes.",
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
                memdir::DEFAULT_MAX_TOKENS,
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
