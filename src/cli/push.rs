//! `memdir push`: upload the directory and print its root CID.

// Errors carry CIDs by value; see the note in `memdir::ipfs::car`.
#![allow(clippy::result_large_err)]

use serde_json::json;

use super::Out;
use super::remote::{self, RemoteArgs};
use memdir::Memory;
use memdir::report::Failure;
use memdir::sync::PushReport;

/// Upload the directory to a provider and print the root CID to pull it by.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The directory (dot entries excluded) is built as a UnixFS DAG, sent as a CARv1
and recorded as the last synced version under .memdir/sync/. A provider that keeps
earlier blocks (kubo) gets only the new blocks, with a full-CAR fallback. In
encrypted-ipfs mode the CAR is sealed to your key and sent as one opaque file; the
printed CID is then the sealed blob's.

If the provider's head (what `sync` pulls) names a version this directory has not
pulled, push refuses: run `memdir sync`, or `push --force` to publish over it.

Examples:
  IPFS_API=http://127.0.0.1:5001 memdir push --provider kubo
  memdir push --mode encrypted-ipfs        # key from MEMDIR_KEY_FILE or `memdir keygen`"
)]
pub struct Args {
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Publish even when the provider's head has a version not pulled here.
    #[arg(long)]
    pub force: bool,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    mem.create()?;
    let opened = out.timed("open the provider", || {
        remote::open(mem, &a.remote, None, None)
    })?;
    let bar = remote::Bar::new(out);
    let r = out.timed("push", || {
        memdir::sync::push(mem, &opened.remote(&bar), a.force)
    })?;
    drop(bar);
    drop(opened);
    print(&r, out);
    Ok(0)
}

/// Prints a push report: warnings and a summary on stderr, the root on stdout.
pub fn print(r: &PushReport, out: &mut Out) {
    for w in &r.warnings {
        out.warn(&format!("warning: {w}"));
    }
    if out.is_json() {
        out.json(&json_of(r));
        return;
    }
    if r.up_to_date {
        out.note(&format!("{} already holds this version", r.provider));
    } else {
        let how = if r.delta {
            format!(
                "{} bytes (new blocks only; the full CAR is {} bytes)",
                r.car_bytes, r.full_car_bytes
            )
        } else {
            format!("{} bytes", r.car_bytes)
        };
        out.note(&format!("pushed to {} ({}): {how}", r.provider, r.mode));
        if r.network_root != r.root {
            out.note(&format!("plaintext root (never sent): {}", r.root));
        }
        for u in &r.unpinned {
            out.note(&format!("unpinned old version {u}"));
        }
    }
    out.text(&r.network_root);
}

/// The JSON document of a push: `root` is what to pull by.
pub fn json_of(r: &PushReport) -> serde_json::Value {
    json!({
        "root": r.network_root,
        "plain_root": r.root,
        "provider": r.provider,
        "mode": r.mode,
        "up_to_date": r.up_to_date,
        "car_bytes": r.car_bytes,
        "full_car_bytes": r.full_car_bytes,
        "delta": r.delta,
        "head_updated": r.head_updated,
        "unpinned": r.unpinned,
        "warnings": r.warnings,
    })
}
