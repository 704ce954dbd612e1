//! `memdir pull CID`: download, verify, merge.

// Errors carry CIDs by value; see the note in `memdir::ipfs::car`.
#![allow(clippy::result_large_err)]

use cid::Cid;

use super::Out;
use super::remote::{self, RemoteArgs};
use memdir::Error;
use memdir::Memory;
use memdir::exchange::merge::Strategy;
use memdir::memory::printable::escape_line as escape;
use memdir::report::Failure;
use memdir::sync::PullReport;
use memdir::sync::plan::Outcome;

/// Download a pushed version by CID, verify every block, and merge it in.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Every block is checked against its CID, the DAG is decoded (unsafe names and
oversize data are refused; a DAG another IPFS tool made, CIDv0 or with other chunking,
sharding or mtime, is re-encoded under unixfs-v1-2025 and both roots are reported;
encrypted blobs are decoded strictly) and, in encrypted-ipfs mode,
the blob is opened with your key and its MAC and inner root checked, all before a file
changes. A failure changes nothing and exits with code 4 (integrity) or 3 (network).

The merge is three-way against the last synced version (.memdir/sync/): a file changed
on one side only is taken from that side; changed on both, the strategy's winner stays
and the other version is saved under conflicts/, which syncs: the conflict is open on
every device (`status`, `pull`, `sync` and `check` list it) until the copy is deleted;
deleted on one side and unchanged on the other, it is deleted; timelines are
unioned; MEMORY.md is rebuilt. Without --provider or --gateway, the configured provider
is used, else the gateways in MEMDIR_GATEWAYS (or public ones).

Examples:
  memdir pull bafybei... --provider kubo
  memdir pull bafybei... --gateway http://127.0.0.1:8080 --dry-run
  memdir pull bafkrei... --mode encrypted-ipfs --strategy replace"
)]
pub struct Args {
    /// The root CID that `push` printed.
    pub cid: String,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Pull through this trustless gateway (`?format=car`) instead of a provider.
    #[arg(long, value_name = "URL", conflicts_with = "provider")]
    pub gateway: Option<String>,
    /// On a conflict: merge keeps the local version, replace takes the remote one.
    #[arg(long, default_value = "merge", value_parser = ["merge", "replace"])]
    pub strategy: String,
    /// Show what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Parses a CID argument, naming it in the error.
pub fn parse_cid(s: &str) -> Result<Cid, Error> {
    Cid::try_from(s.trim())
        .map_err(|_| Error::Usage("the CID is not valid (expected e.g. bafybei...)"))
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let root = parse_cid(&a.cid)?;
    let opened = out.timed("open the provider", || {
        remote::open(mem, &a.remote, Some("gateway"), a.gateway.as_deref())
    })?;
    let bar = remote::Bar::new(out);
    let r = out.timed("pull", || {
        memdir::sync::pull(
            mem,
            &opened.remote(&bar),
            &root,
            Strategy::parse(&a.strategy).unwrap_or_default(),
            a.dry_run,
        )
    })?;
    drop(bar);
    drop(opened);
    if out.is_json() {
        out.json(&r);
    } else {
        print(&r, out);
        print_open(&r.open_conflicts, out);
    }
    Ok(0)
}

/// Prints the conflicts open after a pull or a sync (none: nothing), so that the
/// device whose edit lost hears of it too (spec/sync.md#conflict-copies).
pub fn print_open(open: &[memdir::sync::ConflictCopy], out: &mut Out) {
    if open.is_empty() {
        return;
    }
    out.text(&format!(
        "{} open conflict(s): keep what you want in the file, then delete the copy (the deletion resolves it on every device)",
        open.len()
    ));
    for c in open {
        out.text(&format!(
            "  {}: the other version is {}",
            escape(&c.path),
            escape(&c.copy)
        ));
    }
}

/// Prints a pull report as text.
pub fn print(r: &PullReport, out: &mut Out) {
    if r.behind {
        out.text(&format!(
            "the remote is behind: {} is a version this directory already passed (it was rolled back, or restored from a backup); nothing applied",
            r.root
        ));
        out.note("run `memdir push` (or `memdir sync`) to publish this directory over it");
        return;
    }
    for w in &r.warnings {
        out.warn(&format!("warning: {w}"));
    }
    for s in &r.skipped {
        out.note(&format!("skipped {}: {}", escape(&s.path), s.reason));
    }
    let mut lines = Vec::new();
    for d in &r.decisions {
        let what = match &d.outcome {
            Outcome::Converged => "same on both sides".to_string(),
            Outcome::KeptLocal => "kept local".to_string(),
            Outcome::TookRemote => "took remote".to_string(),
            Outcome::Forgotten => "deleted (forgotten on the other side)".to_string(),
            Outcome::EditBeatsDelete { edited } => format!(
                "kept the {} edit over the other side's delete",
                edited.as_str()
            ),
            Outcome::Conflict { winner, copy } => format!(
                "CONFLICT: kept {}, other version saved as {}",
                winner.as_str(),
                escape(copy)
            ),
            Outcome::Unioned => "timeline lines unioned".to_string(),
            Outcome::Merged => "changes of both sides merged".to_string(),
        };
        lines.push(format!("  {}: {what}", escape(&d.path)));
    }
    let verb = if r.dry_run { "would pull" } else { "pulled" };
    let mut head = format!(
        "{verb} {} from {} ({}, {}): {} written, {} deleted, {} conflicts",
        r.root,
        r.provider,
        r.mode,
        if r.diverged {
            "diverged: nothing deleted but recorded forgets"
        } else if r.had_base {
            "three-way"
        } else {
            "first sync, two-way"
        },
        r.written,
        r.deleted,
        r.conflicts.len()
    );
    if r.decisions.is_empty() {
        head.push_str("; already in sync");
    }
    if r.re_encoded {
        out.note(&format!(
            "{} was made by another tool; re-encoded under unixfs-v1-2025 as {} (recorded with it as the base; the next push publishes that root)",
            r.root, r.plain_root
        ));
    }
    out.text(&head);
    for l in lines {
        out.text(&l);
    }
}
