//! `memdir read`: print a memory.

use serde_json::{Map, Value, json};

use super::Out;
use crate::engine::Memory;
use crate::error::Error;
use crate::memory::Record;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The key of the memory (its file stem).
    pub key: String,
}

/// The frontmatter of a memory as JSON: known fields, then unknown keys.
pub fn meta_json(r: &Record) -> Value {
    let m = &r.meta;
    let mut o = Map::new();
    o.insert("name".into(), json!(m.name));
    o.insert("description".into(), json!(m.description));
    o.insert("type".into(), json!(m.kind.as_str()));
    o.insert("created".into(), json!(m.created.text));
    o.insert("updated".into(), json!(m.updated.text));
    if let Some(s) = &m.source {
        o.insert("source".into(), json!(s));
    }
    if let Some(d) = m.decay {
        o.insert("decay".into(), json!(d.to_string()));
    }
    o.insert("tags".into(), json!(m.tags));
    o.insert("important".into(), json!(m.important));
    for (k, v) in m.extra.values() {
        o.insert(k.to_string(), v.clone());
    }
    Value::Object(o)
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Error> {
    let r = mem.read(&a.key)?;
    if out.is_json() {
        out.json(&json!({"key": r.key, "meta": meta_json(&r), "body": r.body}));
    } else {
        out.text(&crate::frontmatter::render(&r.meta, &r.body));
    }
    Ok(0)
}
