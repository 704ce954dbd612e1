//! `memdir mcp`: serve the memory to MCP clients over stdio or Streamable HTTP.

use std::path::{Path, PathBuf};

use super::{Out, Verbosity};
use crate::mcp::http::{self, HttpOptions, Token};
use crate::mcp::manifest::{self, Mode};
use crate::mcp::publish::Target;
use crate::mcp::{Config, DEFAULT_MAX_TOKENS};
use memdir::Memory;
use memdir::memory::layout::{MAX_MANIFEST, MAX_TOKEN_FILE};
use memdir::report::Failure;

/// The environment variable that may hold the bearer token of `--http`.
pub const TOKEN_VAR: &str = "MEMDIR_MCP_TOKEN";

/// Serve the MCP tools and resources over stdio, or over HTTP with --http.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Tools: remember, recall, read_memory, forget, note, memory_context,
list_memories, edit_memory, rename_memory, recent_activity, related, search, fetch,
get_state, set_state, session_transcript, memory, and sync, sync_status (listed only in
mode ipfs or encrypted-ipfs). Resources: memory://index (MEMORY.md) and memory://<key>.
The memory tool is Claude's memory tool (memory_20250818): its commands on files under
/memories, as `memdir memory-tool` runs them.
stdout carries only protocol messages; logs go to stderr. The directory is watched, so
clients hear about edits people make while the server runs.

Remote clients: --http serves MCP's Streamable HTTP transport at http://ADDR/mcp instead
of stdio (ADDR defaults to 127.0.0.1:8765; port 0 picks a free port; the address is
printed on stderr). On a loopback address a token is optional; on any other address
(0.0.0.0, a LAN address) the server refuses to start without one: --token-file PATH or
the MEMDIR_MCP_TOKEN environment variable. With a token, every request must carry
`Authorization: Bearer <token>` or gets 401. Host and Origin headers are checked against
DNS rebinding: Host must be localhost, 127.0.0.1, ::1, the bound address or a name given
with --allow-host; a browser Origin must be a page on this machine or one given with
--allow-origin. SIGINT or SIGTERM stops the server cleanly.

Sync: in mode ipfs or encrypted-ipfs (.memdir/config.toml, or the manifest), the server
pushes what its tools write a couple of seconds after the last write, in the background;
a failed push is logged on stderr and shown by the sync_status tool. The sync tool pulls,
merges and pushes on demand.

A three.ws manifest (`{\"memory\": {\"mode\", \"provider\", \"maxTokens\"}}`) is read from
--manifest, or else from manifest.json in the memory directory's parent folder when present.
Mode `none` serves an in-memory store; `local` (the default) and the sync modes serve the
directory. maxTokens is the default budget of memory_context.

Client configuration: `memdir --dir DIR mcp config --client
claude-code|claude-desktop|cursor|codex|vscode` prints the entry (absolute paths);
with --install it writes it into the client's config file."
)]
pub struct Args {
    #[command(subcommand)]
    pub action: Option<Action>,
    /// The three.ws manifest to read (default: manifest.json next to the memory directory).
    #[arg(long, value_name = "PATH")]
    pub manifest: Option<PathBuf>,
    /// Default token budget of memory_context (default: the manifest's maxTokens, else 2048).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<usize>,
    /// Tool results carry only their text, no structuredContent: for clients that hand
    /// their model the structured result instead of the text (Claude Code does;
    /// `mcp config --client claude-code` adds this).
    #[arg(long)]
    pub text_only: bool,
    /// Serve over Streamable HTTP on ADDR (default 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = http::DEFAULT_ADDR)]
    pub http: Option<String>,
    /// Read the bearer token of --http from this file (else MEMDIR_MCP_TOKEN).
    #[arg(long, value_name = "PATH", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// Also accept this Host name (or host:port) with --http; repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub allow_host: Vec<String>,
    /// Also accept requests from this browser origin (scheme://host:port, `:*` for any port) with --http; repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allow_origin: Vec<String>,
}

/// What `memdir mcp` does besides serving.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Print (or write with --install) the entry that makes an MCP client start memdir.
    Config(super::mcp_config::ConfigArgs),
}

/// The HTTP options `--http` and its companions ask for; an error line and hint
/// when they cannot be used.
fn http_options(addr: &str, a: &Args) -> Result<HttpOptions, (String, String)> {
    let addr = http::parse_addr(addr).map_err(|e| (e.to_string(), e.hint().to_string()))?;
    let token = match &a.token_file {
        Some(path) => {
            let text = crate::cli::input::read_file_text(path, MAX_TOKEN_FILE).map_err(|e| {
                (
                    format!("cannot read the token file {}: {e}", path.display()),
                    "pass a readable file holding the token (one line)".to_string(),
                )
            })?;
            Some(Token::new(&text).ok_or_else(|| {
                (
                    format!(
                        "the token file {} holds no usable token",
                        path.display()
                    ),
                    "put one line of printable characters without spaces in it, e.g. the output of `openssl rand -hex 32`".to_string(),
                )
            })?)
        }
        None => match std::env::var(TOKEN_VAR) {
            Ok(v) if !v.trim().is_empty() => Some(Token::new(&v).ok_or_else(|| {
                (
                    format!("{TOKEN_VAR} holds no usable token"),
                    "use printable characters without spaces".to_string(),
                )
            })?),
            _ => None,
        },
    };
    let opts = HttpOptions {
        addr,
        token,
        allow_hosts: a.allow_host.clone(),
        allow_origins: a.allow_origin.clone(),
    };
    http::check(opts.addr, opts.token.as_ref())
        .map_err(|e| (e.to_string(), e.hint().to_string()))?;
    Ok(opts)
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

/// Serves `mem`'s directory; `create` (`--create`) creates it when missing, which
/// is an error otherwise.
pub fn run(mem: &Memory, a: &Args, create: bool, out: &mut Out) -> Result<i32, Failure> {
    let dir = mem.root();
    let Some(cfg) = read_manifest(&dir, a, out)? else {
        return Ok(1);
    };
    let max_tokens = a
        .max_tokens
        .or(cfg.max_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);

    // Check the HTTP options before anything is opened or created.
    let quiet = out.verbosity() == Verbosity::Quiet;
    let http = match a
        .http
        .as_deref()
        .map(|addr| http_options(addr, a))
        .transpose()
    {
        Ok(h) => h,
        Err((message, hint)) => {
            out.warn(&memdir::report::lines(&message, Some(&hint)));
            return Ok(2);
        }
    };
    let (served, sync) = open_served(&dir, &cfg, create, out)?;
    let in_memory = served.dir().is_none();
    if !in_memory {
        out.note(&push_note(&served, &sync));
    }
    let config = Config {
        max_tokens,
        text_only: a.text_only,
        quiet,
        sync,
        ..Config::default()
    };
    let result = serve(served, config, http, out);
    Ok(exit_code(result, out))
}

/// The manifest's memory settings (defaults when there is none), with its warnings
/// noted; `None` when an explicit `--manifest` cannot be used (the error is noted).
fn read_manifest(
    dir: &Path,
    a: &Args,
    out: &mut Out,
) -> Result<Option<manifest::MemoryConfig>, Failure> {
    let mut cfg = manifest::MemoryConfig::default();
    if let Some(path) = manifest_path(dir, a) {
        let text = crate::cli::input::read_file_text(&path, MAX_MANIFEST)?;
        match manifest::parse(&text) {
            Ok((c, warnings)) => {
                for w in warnings {
                    out.warn(&format!("memdir mcp: warning: {}: {w}", path.display()));
                }
                cfg = c;
            }
            // An explicit manifest must be readable; a discovered one is only a hint.
            Err(msg) if a.manifest.is_some() => {
                out.warn(&memdir::report::lines(
                    &format!("{}: {msg}", path.display()),
                    None,
                ));
                return Ok(None);
            }
            Err(msg) => out.warn(&format!(
                "memdir mcp: warning: {}: {msg}; ignored",
                path.display()
            )),
        }
    }
    Ok(Some(cfg))
}

/// The memory to serve as the manifest's mode asks (an in-memory store, or the
/// directory, created when missing only if `create`) and the sync target it names.
fn open_served(
    dir: &Path,
    cfg: &manifest::MemoryConfig,
    create: bool,
    out: &mut Out,
) -> Result<(Memory, Target), Failure> {
    let mut sync = Target::default();
    let served = match &cfg.mode {
        Some(Mode::None) => {
            out.note(
                "memdir mcp: mode none: serving an in-memory store; nothing is written to disk",
            );
            Memory::in_memory().with_clock(memdir::Clock::from_env()?)
        }
        other => {
            match other {
                Some(Mode::Sync(m)) => {
                    sync = Target {
                        mode: memdir::sync::config::Mode::parse(m),
                        provider: cfg.provider.clone(),
                    };
                }
                Some(Mode::Local) => {
                    sync.mode = Some(memdir::sync::config::Mode::Local);
                }
                Some(Mode::Unknown(m)) => out.warn(&format!(
                    "memdir mcp: warning: unknown memory mode `{m}` (expected none, local, ipfs or encrypted-ipfs); serving the local directory"
                )),
                _ => {}
            }
            // A long-running server: keep the loaded store between calls.
            let m = Memory::open(dir)?.keep_warm();
            if !dir.exists() {
                if !create {
                    return Err(memdir::Error::NoDir {
                        path: dir.to_path_buf(),
                    }
                    .into());
                }
                m.init()?;
                out.note(&format!(
                    "memdir mcp: created the memory directory {}",
                    dir.display()
                ));
            }
            m
        }
    };
    Ok((served, sync))
}

/// Serves `served` over stdio, or over HTTP with `http`, until the client leaves or
/// the server is stopped; says on stderr where it serves.
fn serve(
    served: Memory,
    config: Config,
    http: Option<HttpOptions>,
    out: &mut Out,
) -> Result<(), crate::mcp::ServeError> {
    // The directory as an absolute path, so a person sees which one a client's
    // relative `--dir` named.
    let root = match served.dir() {
        Some(p) => std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()),
        None => served.root(),
    };
    let max_tokens = config.max_tokens;
    let shown = memdir::memory::printable::escape_line(&root.display().to_string());
    match http {
        None => {
            out.note(&format!(
                "memdir mcp: serving {shown} over stdio (memory_context budget {max_tokens} tokens)"
            ));
            crate::mcp::serve_stdio(served, config)
        }
        Some(opts) => {
            let token = if opts.token.is_some() {
                "bearer token required"
            } else {
                "no token"
            };
            crate::mcp::serve_http(served, config, opts, |bound| {
                // Printed once the socket is bound: scripts wait for this line.
                eprintln!(
                    "memdir mcp: serving {shown} on http://{bound}{} ({token}; memory_context budget {max_tokens} tokens)",
                    http::ENDPOINT
                );
            })
        }
    }
}

/// The exit code of a served session, with its error noted.
fn exit_code(result: Result<(), crate::mcp::ServeError>, out: &mut Out) -> i32 {
    match result {
        Ok(()) => 0,
        Err(crate::mcp::ServeError::Http(e)) => {
            out.warn(&memdir::report::lines(&e.to_string(), Some(e.hint())));
            if matches!(e, http::HttpError::Bind { .. }) {
                1
            } else {
                2
            }
        }
        Err(e) => {
            out.warn(&memdir::report::lines(&e.to_string(), None));
            1
        }
    }
}

/// Says on stderr whether the server pushes what it writes.
fn push_note(mem: &Memory, sync: &Target) -> String {
    let mode = match sync.mode {
        Some(m) => Ok(m),
        None => memdir::sync::config::Config::load(mem).map(|c| c.mode),
    };
    match mode {
        Ok(m) if m.syncs() => format!(
            "memdir mcp: mode {m}: writes are pushed {}s after the last one; the sync tool pulls and merges",
            crate::mcp::publish::PUSH_DELAY.as_secs()
        ),
        Ok(m) => format!("memdir mcp: mode {m}: nothing is pushed"),
        // What it serves without (spec/cli.md#configuration-errors).
        Err(e) => format!(
            "memdir mcp: warning: {e}; serving without sync until it parses: nothing is pushed, and the sync tools are not listed (called, they answer with this error)"
        ),
    }
}
