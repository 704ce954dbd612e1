//! `memdir index`: rebuild MEMORY.md, and with `--search` the search index.

use super::Out;
use memdir::Memory;
use memdir::report::Failure;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also bring the search index under .memdir/cache/ up to date (every query does
    /// that on its way; this builds it ahead of time) and say what it took and its size.
    #[arg(long)]
    search: bool,
    /// Also embed every memory without a cached vector, for hybrid recall (needs
    /// `[embeddings]` in .memdir/config.toml).
    #[arg(long)]
    embeddings: bool,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    if a.search {
        out.spinner("reading the memories");
    }
    // MEMORY.md's load reads and parses what the index does not vouch for (and saves
    // that), the search index's then analyzes: two loads, each holding less at
    // once than one doing both.
    let indexed = out.timed("MEMORY.md", || mem.index())?;
    let outcome = indexed.outcome;
    out.index_backup(&mem.root(), &outcome);
    let search = if a.search {
        out.spinner("bringing the search index up to date");
        let s = out.timed("search index", || mem.search_index());
        out.done();
        Some(whole_command(&indexed.load, s?))
    } else {
        None
    };
    let embeddings = if a.embeddings {
        let bar = super::progress::Counter::new("embedding", out.verbosity());
        let e = out.timed("embeddings", || {
            mem.index_embeddings_with(&mut |done, total| bar.set(done, total))
        });
        drop(bar);
        Some(e??)
    } else {
        None
    };
    if out.is_json() {
        match (&search, &embeddings) {
            (None, None) => out.json(&outcome),
            _ => {
                let mut doc = serde_json::json!({
                    "written": outcome.written,
                    "backup": outcome.backup,
                });
                if let Some(s) = &search {
                    doc["search"] = serde_json::json!(s);
                }
                if let Some(e) = &embeddings {
                    doc["embeddings"] = serde_json::json!(e);
                }
                out.json(&doc);
            }
        }
        return Ok(0);
    }
    if outcome.written {
        out.text("rebuilt MEMORY.md");
    } else {
        out.text("MEMORY.md is up to date");
    }
    if let Some(s) = search {
        out.text(&format!(
            "search index: {} memories ({} unchanged, {} read, {} parsed, {} analyzed), {} terms, {} in .memdir/cache/",
            s.memories,
            s.vouched,
            s.read,
            s.parsed,
            s.analyzed,
            s.terms,
            if s.bytes >= 1_000_000 {
                format!("{:.1} MB", s.bytes as f64 / 1e6)
            } else {
                format!("{:.1} KB", s.bytes as f64 / 1e3)
            }
        ));
    }
    if let Some(e) = embeddings {
        out.text(&format!(
            "embeddings: {} memories, {} embedded now, {} vectors cached ({}, {} dimensions)",
            e.memories, e.embedded, e.cached, e.model, e.dimensions
        ));
    }
    Ok(0)
}

/// The search index's report for the whole command: its second load finds what the
/// first read and parsed vouched for, so the files read are the first load's (both
/// read a file too recently changed to be vouched for), and the parses both's (the
/// second parses only what changed in between).
fn whole_command(
    first: &memdir::SearchIndexReport,
    second: memdir::SearchIndexReport,
) -> memdir::SearchIndexReport {
    let read = first.read.max(second.read);
    memdir::SearchIndexReport {
        vouched: (second.vouched + second.read).saturating_sub(read),
        read,
        parsed: first.parsed + second.parsed,
        ..second
    }
}
