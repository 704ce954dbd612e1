//! `memdir cid`: the root CID of the directory, computed offline.

use serde_json::json;

use super::Out;
use memdir::Error;
use memdir::Memory;
use memdir::report::Failure;

/// Print the IPFS root CID of the directory (unixfs-v1-2025 profile), offline.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The directory is hashed as it is on disk, dot entries (.memdir/, .git/, editor
swap files) excluded: CIDv1, base32, sha2-256, raw leaves, 1 MiB chunks, 1024-link
balanced files, flat directories up to 256 KiB and HAMT shards above. The result equals
what `ipfs add -r` with the unixfs-v1-2025 profile or ipfs-unixfs-importer computes."
)]
pub struct Args {}

pub fn run(mem: &Memory, _a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let tree = mem.tree()?;
    let root = memdir::ipfs::unixfs::root_cid(&tree).map_err(|e| Error::Unixfs {
        path: mem.root(),
        source: Box::new(e),
    })?;
    if out.is_json() {
        out.json(&json!({"root": root.to_string()}));
    } else {
        out.text(&root.to_string());
    }
    Ok(0)
}
