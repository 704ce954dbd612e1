//! `memdir export`: write the portable blob, or the MCP memory server's JSONL.

use std::path::PathBuf;

use serde_json::json;

use super::Out;
use memdir::Error;
use memdir::Memory;
use memdir::report::Failure;

/// Write the memories as a memory/0.1 blob (default) or an MCP memory.jsonl.
#[derive(Debug, clap::Args)]
#[command(after_help = "Formats (--format):
  memory-0.1  the portable blob (memory files, timeline), compatible with the three.ws
              runtime; `memdir import` reads it back
  mcp-memory  the memory.jsonl of @modelcontextprotocol/server-memory: one entity per
              memory (name; entity_type, else the memdir type; observations from the
              body's `- ` lines, else its paragraphs) and one relation per
              `- rel:: [[key]]` line

Examples:
  memdir export -o backup.json
  memdir export --format mcp-memory -o memory.jsonl")]
pub struct Args {
    /// memory-0.1 (the portable blob) or mcp-memory (the MCP memory server's JSONL).
    #[arg(long, default_value = "memory-0.1", value_parser = ["memory-0.1", "mcp-memory"])]
    pub format: String,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let memdir::Export { text, problems } = match a.format.as_str() {
        "mcp-memory" => mem.export_mcp_memory()?,
        _ => mem.export()?,
    };
    out.problems(&mem.root(), &problems);
    match &a.output {
        None => out.text(&text),
        Some(path) => {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or(Error::Usage("-o needs a file name"))?;
            memdir::write_atomic(dir, name, text.as_bytes())?;
            if out.is_json() {
                out.json(&json!({"path": path, "bytes": text.len()}));
            } else {
                out.text(&format!("wrote {} ({} bytes)", path.display(), text.len()));
            }
        }
    }
    Ok(0)
}
