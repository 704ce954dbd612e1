//! `memdir watch`: keep MEMORY.md up to date while people edit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use super::Out;
use memdir::Memory;
use memdir::backfill;
use memdir::report::Failure;

/// Rebuild the index whenever memory files change; runs until interrupted.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Editor saves and git checkouts are debounced (150 ms) into one rebuild. A
MEMORY.md edited by hand is saved under .memdir/backups/ before it is replaced.
With [embeddings] in .memdir/config.toml, memories without a vector are embedded in
the background after each change.
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
    // With [embeddings], memories without a vector are embedded beside the watch,
    // after each batch of changes (spec/ranking.md#hybrid-recall); idle otherwise.
    let (nudge, nudges) = backfill::channel();
    let embed_stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let embed_stop = &embed_stop;
        scope.spawn(move || {
            backfill::run(mem, &nudges, embed_stop, &mut |why| {
                eprintln!(
                    "warning: embeddings: {}; retrying in the background with backoff (nothing is embedded meanwhile; MEMORY.md is still rebuilt)",
                    memdir::memory::printable::escape_text(why)
                );
            })
        });
        let watched = watch_store(mem, a, out, &stop, &nudge);
        embed_stop.store(true, Ordering::Relaxed);
        nudge.nudge();
        watched
    })
}

fn watch_store(
    mem: &Memory,
    a: &Args,
    out: &mut Out,
    stop: &AtomicBool,
    nudge: &backfill::Nudge,
) -> Result<i32, Failure> {
    let root = mem.root();
    memdir::watch(mem, stop, a.seconds.map(Duration::from_secs), |r| {
        nudge.nudge();
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
