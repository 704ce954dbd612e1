//! `memdir status`: mode, provider, last synced root, unpushed changes, conflicts.

use serde_json::json;

use super::Out;
use memdir::Memory;
use memdir::memory::printable::escape_line as escape;
use memdir::report::Failure;
use memdir::sync::config::{Config, Mode};

/// Show the sync status (offline): what is unpushed, what is in conflict.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Compares the directory with the last synced version recorded under
.memdir/sync/; no network. In encrypted-ipfs mode both roots are shown: the sealed
blob's (what the network holds) and the plaintext one (what only your devices know)."
)]
pub struct Args {}

pub fn run(mem: &Memory, _a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let config = Config::load(mem)?;
    let st = memdir::sync::status(mem)?;
    for w in &st.warnings {
        out.warn(&format!("warning: {w}"));
    }
    if out.is_json() {
        out.json(&json!({
            "mode": config.mode,
            "provider": config.provider,
            "channel": config.channel(),
            "local_root": st.local_root,
            "base": st.base,
            "unpushed": st.unpushed,
            "conflicts": st.conflicts,
            "pushes": st.pushes,
        }));
        return Ok(0);
    }
    let mut t = Vec::new();
    t.push(format!(
        "mode: {}  provider: {}  channel: {}",
        config.mode,
        config.provider.as_deref().unwrap_or("(none)"),
        config.channel()
    ));
    t.push(format!("local root: {}", st.local_root));
    match &st.base {
        None => t.push("last synced: never".into()),
        Some(b) => {
            t.push(format!(
                "last synced: {} ({} {} {}, {})",
                b.network_root,
                b.via,
                if b.via == "push" { "to" } else { "from" },
                b.provider,
                b.at.format("%Y-%m-%dT%H:%M:%SZ")
            ));
            if b.network_root != b.root {
                if b.mode == Mode::Ipfs {
                    // spec/sync.md#foreign-dags: another tool's DAG, re-encoded by memdir.
                    t.push(format!("  re-encoded under unixfs-v1-2025 as: {}", b.root));
                } else {
                    t.push(format!("  plaintext root (local only): {}", b.root));
                }
            }
        }
    }
    if st.unpushed.is_empty() {
        t.push("unpushed changes: none".into());
    } else {
        t.push(format!("unpushed changes: {}", st.unpushed.len()));
        for c in &st.unpushed {
            t.push(format!("  {:<8} {}", c.change, escape(&c.path)));
        }
    }
    if st.conflicts.is_empty() {
        t.push("conflicts: none".into());
    } else {
        t.push(format!(
            "conflicts: {} open (compare, keep what you want in the file, then delete the copy; the deletion resolves it on every device)",
            st.conflicts.len()
        ));
        for c in &st.conflicts {
            t.push(format!(
                "  {}  (other version of {})",
                escape(&c.copy),
                escape(&c.path)
            ));
        }
    }
    for (provider, pins) in &st.pushes {
        if let Some(last) = pins.last() {
            t.push(format!(
                "pinned on {provider} by this device: {} version(s), newest {} (another device may have pushed since: `memdir sync`)",
                pins.len(),
                last.root
            ));
        }
    }
    out.text(&t.join("\n"));
    Ok(0)
}
