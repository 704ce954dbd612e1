//! `memdir init`: create the memory directory, optionally with sync settings.

use serde_json::json;

use super::Out;
use memdir::Error;
use memdir::Memory;
use memdir::report::Failure;
use memdir::sync::config::{Config, Mode, PROVIDERS};

/// Create the memory directory (MEMORY.md, timeline/, .memdir/).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "With --mode, --provider or --channel, also writes .memdir/config.toml (keys
already there are kept). In ipfs and encrypted-ipfs mode, write, forget and note push
after every change unless --offline is given. Credentials never go in the file.

With --claude-code, the directory is one Claude Code keeps (~/.claude/projects/<project>/memory):
MEMORY.md is the agent's; memdir never writes it and `check` only checks it (index = \"agent\").

Examples:
  memdir init --mode ipfs --provider kubo
  memdir --dir ~/.claude/projects/my-project/memory init --claude-code"
)]
pub struct Args {
    /// local (no sync), ipfs or encrypted-ipfs.
    #[arg(long, value_parser = ["local", "ipfs", "encrypted-ipfs"])]
    pub mode: Option<String>,
    /// The default provider: kubo, pinata, filebase, storacha, gateway or folder.
    #[arg(long, value_parser = PROVIDERS)]
    pub provider: Option<String>,
    /// The head pointer's name on the provider (devices on one channel sync together).
    #[arg(long)]
    pub channel: Option<String>,
    /// The agent keeps MEMORY.md (Claude Code's memory directory): write `index = "agent"`.
    #[arg(long)]
    pub claude_code: bool,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    if a.channel
        .as_deref()
        .is_some_and(|ch| !memdir::memory::layout::valid_channel(ch))
    {
        return Err(
            Error::Usage("--channel must be 1-64 characters of a-z, 0-9, `-` and `_`").into(),
        );
    }
    // The configuration is read (and refused when invalid) before anything is created.
    let mut config = None;
    if a.mode.is_some() || a.provider.is_some() || a.channel.is_some() || a.claude_code {
        config = Some(Config::load(mem)?);
    }
    // With --claude-code the key is written first, so that `init` itself leaves the
    // agent's MEMORY.md alone.
    if let Some(c) = config.as_mut()
        && a.claude_code
    {
        c.index = Some("agent".into());
        mem.create()?;
        c.save(mem)?;
    }
    let created = mem.init()?;
    let root = mem.root();
    if let Some(mut c) = config.take() {
        if let Some(m) = a.mode.as_deref().and_then(Mode::parse) {
            c.mode = m;
        }
        if let Some(p) = &a.provider {
            c.provider = Some(p.clone());
        }
        if let Some(ch) = &a.channel {
            c.channel = Some(ch.clone());
        }
        c.save(mem)?;
        config = Some(c);
    }
    if out.is_json() {
        out.json(&json!({"dir": root, "created": created, "config": config}));
        return Ok(0);
    }
    if created {
        out.text(&format!("initialized memory directory {}", root.display()));
    } else {
        out.text(&format!(
            "memory directory {} is already initialized",
            root.display()
        ));
    }
    if let Some(c) = config {
        if c.index.as_deref() == Some("agent") {
            out.text("MEMORY.md is the agent's: memdir never writes it, `check` checks it (index = \"agent\" in .memdir/config.toml)");
        }
        if a.mode.is_some() || a.provider.is_some() || a.channel.is_some() {
            out.text(&format!(
                "sync: mode {}, provider {}, channel {} (.memdir/config.toml)",
                c.mode,
                c.provider.as_deref().unwrap_or("(none)"),
                c.channel()
            ));
        }
    }
    Ok(0)
}
