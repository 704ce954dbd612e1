//! `memdir read`: print a memory.

use serde_json::json;

use super::Out;
use memdir::Memory;
use memdir::report::Failure;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The key of the memory (its file stem).
    pub key: String,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let r = mem.read(&a.key)?;
    if out.is_json() {
        out.json(
            &json!({"key": r.key, "hash": r.hash(), "meta": r.meta.to_json(), "body": r.body}),
        );
    } else {
        out.text(&memdir::memory::frontmatter::render(&r.meta, &r.body));
    }
    Ok(0)
}
