//! `memdir forget`: delete a memory and log it.

use serde_json::json;

use super::Out;
use memdir::Memory;
use memdir::report::Failure;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The key of the memory to delete.
    pub key: String,
    /// Why (kept in the `forgot` timeline event).
    #[arg(long, allow_hyphen_values = true)]
    pub reason: Option<String>,
    #[command(flatten)]
    pub push: super::Offline,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let memdir::Forgotten { event, index } = mem.forget(&a.key, a.reason.as_deref())?;
    out.index_backup(&mem.root(), &index);
    let key = event.field_str("key").unwrap_or(&a.key).to_string();
    if out.is_json() {
        let ev: serde_json::Value = serde_json::from_str(&event.encode()).unwrap_or_default();
        out.json(&json!({"key": key, "event": ev}));
    } else {
        out.text(&format!("forgot {key}"));
    }
    Ok(0)
}
