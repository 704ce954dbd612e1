//! `memdir index`: rebuild MEMORY.md.

use super::Out;
use crate::engine::Memory;
use crate::report::Failure;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(mem: &Memory, _a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let outcome = mem.index()?;
    out.index_backup(&mem.root(), &outcome);
    if out.is_json() {
        out.json(&outcome);
    } else if outcome.written {
        out.text("rebuilt MEMORY.md");
    } else {
        out.text("MEMORY.md is up to date");
    }
    Ok(0)
}
