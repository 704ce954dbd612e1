//! `memdir sync`: pull the provider's latest version, merge, push.

// Errors carry CIDs by value; see the note in `memdir::ipfs::car`.
#![allow(clippy::result_large_err)]

use serde_json::json;

use super::Out;
use super::remote::{self, RemoteArgs};
use memdir::Memory;
use memdir::exchange::merge::Strategy;
use memdir::report::Failure;

/// Pull the provider's latest version (its head), merge it in, push the result.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The head is kept by the provider under the channel in .memdir/config.toml
(`default` unless set): kubo keeps it in its MFS at /memdir/<channel>, folder in
heads/<channel>. Providers without a head (pinata, filebase, storacha) need the CID:
`memdir sync CID`. The merged result is pushed and recorded as the new base in one
step, so a conflict's resolution is not undone by the next sync.

Examples:
  memdir sync                       # provider and mode from .memdir/config.toml
  memdir sync --provider kubo --strategy replace"
)]
pub struct Args {
    /// Pull this CID instead of the provider's head.
    pub cid: Option<String>,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// On a conflict: merge keeps the local version, replace takes the remote one.
    #[arg(long, default_value = "merge", value_parser = ["merge", "replace"])]
    pub strategy: String,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let from = a.cid.as_deref().map(super::pull::parse_cid).transpose()?;
    mem.create()?;
    let opened = out.timed("open the provider", || {
        remote::open(mem, &a.remote, None, None)
    })?;
    let bar = remote::Bar::new(out);
    let r = out.timed("sync", || {
        memdir::sync::sync(
            mem,
            &opened.remote(&bar),
            from.as_ref(),
            Strategy::parse(&a.strategy).unwrap_or_default(),
        )
    })?;
    drop(bar);
    drop(opened);
    if out.is_json() {
        let mut v = json!({
            "pulled": r.pulled,
            "pushed": super::push::json_of(&r.pushed),
            "open_conflicts": r.open_conflicts,
        });
        if let Some(h) = &r.behind {
            v["behind"] = json!(h);
        }
        if r.rounds > 1 {
            v["rounds"] = json!(r.rounds);
        }
        out.json(&v);
        return Ok(0);
    }
    match (&r.pulled, &r.behind) {
        (Some(p), _) => super::pull::print(p, out),
        (None, Some(h)) => out.note(&format!(
            "the remote is behind: its head {h} is a version this directory already passed; not applied, pushed over"
        )),
        (None, None) => out.note("nothing new on the provider"),
    }
    if r.rounds > 1 {
        out.note(&format!(
            "another device pushed at the same time: merged and pushed again ({} rounds)",
            r.rounds
        ));
    }
    super::push::print(&r.pushed, out);
    super::pull::print_open(&r.open_conflicts, out);
    Ok(0)
}
