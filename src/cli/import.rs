//! `memdir import`: import a portable blob.

use std::io::Read;
use std::path::PathBuf;

use super::Out;
use crate::engine::Memory;
use crate::error::Error;
use crate::exchange::merge::{Action, Strategy};
use crate::report::Failure;

/// Import a memory/0.1 blob (from memdir export or the three.ws runtime).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The whole blob is validated before anything is written. A file name that could
address a path outside the directory (`..`, `\\`, a dot name) and a memory with malformed
frontmatter are reported and skipped; a name three.ws allows and memdir does not
(`UserProfile`, `user.name`, `notes/today`) is imported under a safe key and reported.
merge: on conflict (same key, other content) the local memory wins; replace: the
incoming one wins. Timeline events are unioned as multisets (idempotent).
A key forgotten here is not brought back by a version that is not newer than the forget."
)]
pub struct Args {
    /// The blob file (`-` for standard input).
    pub file: PathBuf,
    /// merge (local wins on conflict) or replace (incoming wins).
    #[arg(long, default_value = "merge", value_parser = ["merge", "replace"])]
    pub strategy: String,
    /// Show the plan and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let bytes = if a.file.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .take(crate::exchange::blob::MAX_BLOB_BYTES as u64 + 1)
            .read_to_end(&mut b)
            .map_err(|e| Error::Io {
                path: "<stdin>".into(),
                source: e,
            })?;
        b
    } else {
        let meta = std::fs::metadata(&a.file).map_err(|e| Error::Io {
            path: a.file.clone(),
            source: e,
        })?;
        if meta.len() > crate::exchange::blob::MAX_BLOB_BYTES as u64 {
            return Err(crate::exchange::blob::BlobError::TooLarge {
                size: meta.len() as usize,
            }
            .into());
        }
        std::fs::read(&a.file).map_err(|e| Error::Io {
            path: a.file.clone(),
            source: e,
        })?
    };
    let strategy = Strategy::parse(&a.strategy).unwrap_or_default();
    let report = mem.import(&bytes, strategy, a.dry_run)?;
    if out.is_json() {
        out.json(&report);
        return Ok(0);
    }
    let mut s = String::new();
    for d in &report.plan {
        let word = match d.action {
            Action::Added => "add",
            Action::Updated => "update",
            Action::Kept => "keep local",
            Action::Unchanged => "unchanged",
            Action::Forgotten => "skip (forgotten here)",
        };
        s.push_str(&format!("{word:<22} {}\n", d.key));
    }
    for c in &report.converted {
        s.push_str(&format!("{:<22} {}: {}\n", "convert", c.item, c.reason));
    }
    for k in &report.skipped_items {
        s.push_str(&format!("{:<22} {}: {}\n", "skip", k.item, k.reason));
    }
    let c = &report.counts;
    s.push_str(&format!(
        "{}{} added, {} updated, {} kept, {} unchanged, {} skipped; {} timeline events added\n",
        if report.dry_run {
            "dry run (nothing written): "
        } else {
            ""
        },
        c.added,
        c.updated,
        c.kept,
        c.unchanged,
        c.skipped,
        report.events_added
    ));
    out.text(&s);
    Ok(0)
}
