//! `memdir rename`: move a memory to a new key.

use serde_json::json;

use super::Out;
use memdir::Memory;
use memdir::report::Failure;

/// Move a memory to a new key (its file is renamed; its content is unchanged).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Refused when NEW is not a valid key or is already taken, or OLD does not
exist. The new file is written before the old one is removed, and a `renamed` event
(from, to) is logged, so an older copy of OLD does not come back on import.

Example:
  memdir rename user_sport user_football"
)]
pub struct Args {
    /// The current key.
    pub old: String,
    /// The new key, `^[a-z0-9][a-z0-9_-]{0,99}$`.
    pub new: String,
    #[command(flatten)]
    pub push: super::Offline,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let memdir::Renamed { event, index } = mem.rename(&a.old, &a.new)?;
    out.index_backup(&mem.root(), &index);
    let from = event.field_str("from").unwrap_or(&a.old).to_string();
    let to = event.field_str("to").unwrap_or(&a.new).to_string();
    if out.is_json() {
        let ev: serde_json::Value = serde_json::from_str(&event.encode()).unwrap_or_default();
        out.json(&json!({"from": from, "to": to, "event": ev}));
    } else {
        out.text(&format!("renamed {from} to {to}"));
    }
    Ok(0)
}
