//! `memdir memory-tool`: one command of Claude's memory tool (`memory_20250818`),
//! read as JSON on standard input, run on the directory; the reply on stdout.

use serde_json::json;

use super::Out;
use super::input::read_stdin_text;
use memdir::Memory;
use memdir::report::Failure;

/// The most standard input read for one command: a memory file's limit, with room
/// for JSON escapes.
const STDIN_LIMIT: u64 = 4 * memdir::memory::layout::MAX_MEMORY_FILE;

/// Run one memory-tool command (JSON on standard input) and print the reply.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The command is the JSON Claude's memory tool sends: view, create, \
str_replace, insert, delete or rename, with their fields. /memories is the memory directory; \
/memories/<key>.md is memory <key> (its body: memdir keeps the frontmatter). The reply is \
printed on stdout, the same text the MCP tool `memory` and the library give; an error reply \
is printed there too, and the exit code is 1. With --json: {\"text\": …, \"is_error\": …}.

Examples:
  echo '{\"command\": \"create\", \"path\": \"/memories/user_coffee.md\", \"file_text\": \"Likes it black.\"}' \\
    | memdir memory-tool
  echo '{\"command\": \"view\", \"path\": \"/memories\"}' | memdir memory-tool
  echo '{\"command\": \"str_replace\", \"path\": \"/memories/user_coffee.md\", \"old_str\": \"black\", \"new_str\": \"with milk\"}' \\
    | memdir memory-tool

An existing file is not overwritten by create; delete forgets the memory (a tombstone sync \
carries); rename reports links that now dangle."
)]
pub struct Args {
    #[command(flatten)]
    pub push: super::Offline,
}

/// Runs the command; 0, or 1 for an error reply. Whether it changed the store (a
/// successful command other than `view`) is the second value.
pub fn run(mem: &Memory, _a: &Args, out: &mut Out) -> Result<(i32, bool), Failure> {
    let input = read_stdin_text(STDIN_LIMIT)?;
    let reply = mem.memory_tool_json(&input);
    if out.is_json() {
        out.json(&json!({"text": reply.text, "is_error": reply.is_error}));
    } else {
        // Always one newline after the reply, also after one that ends with a
        // newline (an empty view range), so that the reply is stdout less its last byte.
        out.text(&format!("{}\n", reply.text));
    }
    let changed = !reply.is_error
        && serde_json::from_str::<serde_json::Value>(&input)
            .ok()
            .and_then(|v| {
                v.get("command")
                    .and_then(|c| c.as_str())
                    .map(str::to_string)
            })
            .is_some_and(|c| c != "view");
    Ok((i32::from(reply.is_error), changed))
}
