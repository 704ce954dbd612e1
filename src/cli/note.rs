//! `memdir note`: append a timeline event.

use serde_json::{Map, Value};

use super::Out;
use memdir::Error;
use memdir::Memory;
use memdir::report::Failure;

/// Append an event to today's timeline file.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  memdir note user_said text=\"how's my form?\"
  memdir note waved --data '{\"duration_ms\": 1200}'

`ts` and `type` are set by memdir and cannot be given as fields.")]
pub struct Args {
    /// The event type (a-z, A-Z, 0-9, `_`, `-`, `.`, `:`), e.g. `user_said`.
    #[arg(value_name = "TYPE")]
    pub kind: String,
    /// Fields as FIELD=VALUE (values are strings).
    #[arg(value_name = "FIELD=VALUE")]
    pub fields: Vec<String>,
    /// Fields as a JSON object (values of any JSON type).
    #[arg(long, value_name = "JSON")]
    pub data: Option<String>,
    /// The session the event belongs to (a `session` field; `memdir sessions`).
    #[arg(long, env = "MEMDIR_SESSION", value_name = "ID")]
    pub session: Option<String>,
    #[command(flatten)]
    pub push: super::Offline,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let mut fields = Map::new();
    if let Some(d) = &a.data {
        match serde_json::from_str::<Value>(d) {
            Ok(Value::Object(m)) => fields.extend(m),
            _ => {
                return Err(Error::Usage(
                    "--data must be a JSON object, e.g. '{\"text\": \"hi\"}'",
                )
                .into());
            }
        }
    }
    for f in &a.fields {
        let Some((k, v)) = f.split_once('=') else {
            return Err(Error::Usage("fields are FIELD=VALUE, e.g. text=hello").into());
        };
        if k.is_empty() {
            return Err(Error::Usage("a field name is empty (FIELD=VALUE)").into());
        }
        fields.insert(k.to_string(), Value::String(v.to_string()));
    }
    // An empty MEMDIR_SESSION means no session; a `session` field given as a field wins.
    if let Some(id) = a.session.as_deref().filter(|s| !s.trim().is_empty())
        && !fields.contains_key("session")
    {
        fields.insert("session".into(), Value::String(id.to_string()));
    }
    let event = mem.note(&a.kind, fields)?;
    let line = event.encode();
    if out.is_json() {
        let v: Value = serde_json::from_str(&line).unwrap_or_default();
        out.json(&v);
    } else {
        out.text(&line);
    }
    Ok(0)
}
