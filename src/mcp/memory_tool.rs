//! The MCP tool `memory`: Claude's memory tool (`memory_20250818`) with the built-in
//! tool's input schema, so a model that knows the built-in tool uses it unchanged
//! (spec/mcp.md#memory, spec/memory-tool.md). The arguments go to
//! `Memory::memory_tool` as they came; its reply is the result's one text, flagged
//! as an error when it is one: byte for byte what `memdir memory-tool` prints.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::{tool, tool_router};
use serde_json::{Value, json};

use super::core::MemoryServer;

/// The tool's router, merged with the others by `MemoryServer::new`.
pub fn router() -> rmcp::handler::server::router::tool::ToolRouter<MemoryServer> {
    MemoryServer::memory_tool_router()
}

/// The input schema: one object, `command` and the fields each command takes.
fn schema() -> Arc<JsonObject> {
    let s = |d: &str| json!({"type": "string", "description": d});
    let v = json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "enum": ["view", "create", "str_replace", "insert", "delete", "rename"]
            },
            "path": s("/memories or /memories/<key>.md"),
            "view_range": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 2,
                "maxItems": 2,
                "description": "view: [start, end]; end -1 = to the end"
            },
            "file_text": s("create: the text"),
            "old_str": s("str_replace: text found once"),
            "new_str": s("str_replace: its replacement"),
            "insert_line": {"type": "integer", "description": "insert: after this line (0 = top)"},
            "insert_text": s("insert: the text"),
            "old_path": s("rename: from"),
            "new_path": s("rename: to")
        },
        "required": ["command"]
    });
    match v {
        Value::Object(o) => Arc::new(o),
        _ => Arc::new(JsonObject::new()),
    }
}

#[tool_router(router = memory_tool_router, vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        name = "memory",
        description = "Claude's memory tool (memory_20250818): view, create, str_replace, insert, delete, rename files under /memories; /memories/<key>.md is memory <key>.",
        input_schema = schema(),
        annotations(
            title = "Memory files",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn memory(&self, Parameters(args): Parameters<JsonObject>) -> CallToolResult {
        let shared = self.shared().clone();
        let run = tokio::task::spawn_blocking(move || {
            let command = Value::Object(args);
            let reply = shared.mem.memory_tool(&command);
            let view = command.get("command").and_then(Value::as_str) == Some("view");
            if !reply.is_error && !view {
                shared.hub.refresh(&shared.mem);
            }
            reply
        })
        .await;
        match run {
            Ok(reply) if reply.is_error => {
                CallToolResult::error(vec![ContentBlock::text(reply.text)])
            }
            Ok(reply) => CallToolResult::success(vec![ContentBlock::text(reply.text)]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(memdir::report::lines(
                &format!("internal error in memdir: {e}"),
                None,
            ))]),
        }
    }
}
