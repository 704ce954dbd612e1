//! `memdir watch`: keep MEMORY.md up to date while people edit.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::json;

use super::Out;
use crate::engine::Memory;
use crate::report::Failure;

/// Rebuild the index whenever memory files change; runs until interrupted.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Editor saves and git checkouts are debounced (150 ms) into one rebuild. A
MEMORY.md edited by hand is saved under .memdir/backups/ before it is replaced.
With --json, prints one JSON object per rebuild (JSON Lines)."
)]
pub struct Args {
    /// Stop after this many seconds (default: run until interrupted).
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<u64>,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let stop = AtomicBool::new(false);
    let root = mem.root();
    if !out.is_json() {
        out.note(&format!("watching {} (Ctrl-C to stop)", root.display()));
    }
    crate::engine::watch::watch(mem, &stop, a.seconds.map(Duration::from_secs), |r| {
        out.problems(&root, &r.problems);
        if out.is_json() {
            let line = json!({
                "changed": r.changed,
                "written": r.outcome.written,
                "backup": r.outcome.backup,
            });
            out.text(&line.to_string());
        } else {
            if let Some(b) = &r.outcome.backup {
                out.note(&format!(
                    "note: MEMORY.md had been edited by hand; your version is saved as {}",
                    root.join(b).display()
                ));
            }
            if r.outcome.written {
                out.text("rebuilt MEMORY.md");
            }
        }
    })?;
    Ok(0)
}
