//! `memdir mcp`: serve the memory to an MCP client over stdio.

use std::path::{Path, PathBuf};

use super::Out;
use crate::engine::Memory;
use crate::error::Error;
use crate::mcp::manifest::{self, Mode};
use crate::mcp::{Config, DEFAULT_MAX_TOKENS};
use crate::report::Failure;

/// Serve the MCP tools and resources over stdio (for Claude Desktop and other clients).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Tools: remember, recall, read_memory, forget, note, memory_context,
list_memories. Resources: memory://index (MEMORY.md) and memory://<key>. stdout carries
only protocol messages; logs go to stderr. The directory is watched, so clients hear about
edits people make while the server runs.

A three.ws manifest (`{\"memory\": {\"mode\", \"provider\", \"maxTokens\"}}`) is read from
--manifest, or else from manifest.json in the memory directory's parent folder when present.
Mode `none` serves an in-memory store; `local` (the default) and the sync modes serve the
directory. maxTokens is the default budget of memory_context.

Client configuration (Claude Desktop, claude_desktop_config.json):
  {\"mcpServers\": {\"memory\": {\"command\": \"memdir\",
      \"args\": [\"mcp\", \"--dir\", \"/home/me/agent/memory\"]}}}"
)]
pub struct Args {
    /// The three.ws manifest to read (default: manifest.json next to the memory directory).
    #[arg(long, value_name = "PATH")]
    pub manifest: Option<PathBuf>,
    /// Default token budget of memory_context (default: the manifest's maxTokens, else 2048).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<usize>,
}

/// Where the manifest is, if anywhere: `--manifest`, or `<dir>/../manifest.json`.
fn manifest_path(dir: &Path, a: &Args) -> Option<PathBuf> {
    if let Some(p) = &a.manifest {
        return Some(p.clone());
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let p = parent.join("manifest.json");
    p.is_file().then_some(p)
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let dir = mem.root();
    let mut cfg = manifest::MemoryConfig::default();
    if let Some(path) = manifest_path(&dir, a) {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io {
            path: path.clone(),
            source: e,
        })?;
        match manifest::parse(&text) {
            Ok((c, warnings)) => {
                for w in warnings {
                    out.note(&format!("memdir mcp: warning: {}: {w}", path.display()));
                }
                cfg = c;
            }
            // An explicit manifest must be readable; a discovered one is only a hint.
            Err(msg) if a.manifest.is_some() => {
                out.note(&format!("error: {}: {msg}", path.display()));
                return Ok(1);
            }
            Err(msg) => out.note(&format!(
                "memdir mcp: warning: {}: {msg}; ignored",
                path.display()
            )),
        }
    }
    let max_tokens = a
        .max_tokens
        .or(cfg.max_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);

    let served = match &cfg.mode {
        Some(Mode::None) => {
            out.note(
                "memdir mcp: mode none: serving an in-memory store; nothing is written to disk",
            );
            Memory::in_memory().with_clock(crate::clock::Clock::from_env()?)
        }
        other => {
            match other {
                Some(Mode::Sync(m)) => out.note(&format!(
                    "memdir mcp: note: mode `{m}`{} is synced by `memdir sync`, not by the MCP server; serving the local directory",
                    cfg.provider
                        .as_deref()
                        .map(|p| format!(" (provider {p})"))
                        .unwrap_or_default()
                )),
                Some(Mode::Unknown(m)) => out.note(&format!(
                    "memdir mcp: warning: unknown memory mode `{m}` (expected none, local, ipfs or encrypted-ipfs); serving the local directory"
                )),
                _ => {}
            }
            // A long-running server: keep the loaded store between calls.
            let m = Memory::open(&dir)?.keep_warm();
            if !dir.exists() {
                m.init()?;
                out.note(&format!(
                    "memdir mcp: created the memory directory {}",
                    dir.display()
                ));
            }
            m
        }
    };
    out.note(&format!(
        "memdir mcp: serving {} over stdio (memory_context budget {max_tokens} tokens)",
        served.root().display()
    ));
    let config = Config {
        max_tokens,
        watch: true,
    };
    match crate::mcp::serve_stdio(served, config) {
        Ok(()) => Ok(0),
        Err(e) => {
            out.note(&format!("error: {e}"));
            Ok(1)
        }
    }
}
