//! `memdir init`: create the memory directory.

use serde_json::json;

use super::Out;
use crate::engine::Memory;
use crate::error::Error;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(mem: &Memory, _a: &Args, out: &mut Out) -> Result<i32, Error> {
    let created = mem.init()?;
    let root = mem.root();
    if out.is_json() {
        out.json(&json!({"dir": root, "created": created}));
    } else if created {
        out.text(&format!("initialized memory directory {}", root.display()));
    } else {
        out.text(&format!(
            "memory directory {} is already initialized",
            root.display()
        ));
    }
    Ok(0)
}
