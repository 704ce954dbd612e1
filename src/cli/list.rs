//! `memdir list`: memories in rank order.

use memdir::memory::printable::escape_line as esc;
use serde_json::json;

use super::Out;
use super::filter::FilterArgs;
use memdir::Memory;
use memdir::report::Failure;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  memdir list --type project,feedback
  memdir list --tag football --since 2026-04-01
  memdir list --important --json
  memdir list --include-superseded --include-expired")]
pub struct Args {
    #[command(flatten)]
    pub filter: FilterArgs,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let memdir::List {
        memories: items,
        problems,
        index,
    } = mem.list(&memdir::ListRequest::new().with_filter(a.filter.filter()?))?;
    out.problems(&mem.root(), &problems);
    out.index_backup(&mem.root(), &index);
    if out.is_json() {
        out.json(&json!({"memories": items, "problems": problems}));
        return Ok(0);
    }
    // Keys, types and names come from files: one line per memory (spec/cli.md#output).
    let rows: Vec<(String, String, String)> = items
        .iter()
        .map(|i| (esc(&i.key), esc(&i.kind), esc(&i.name)))
        .collect();
    let kw = rows
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(3)
        .max(3);
    let tw = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut s = format!(
        "{:<kw$}  {:<tw$}  {:<10}  {:>5}  name\n",
        "key", "type", "updated", "score"
    );
    for (i, (key, kind, name)) in items.iter().zip(&rows) {
        s.push_str(&format!(
            "{:<kw$}  {:<tw$}  {:<10}  {:>5.3}  {}{}\n",
            key,
            kind,
            i.updated,
            i.score,
            name,
            memdir::lifecycle_mark(&i.superseded_by, i.expired)
        ));
    }
    if items.is_empty() {
        s = "no memories\n".into();
    }
    out.text(&s);
    Ok(0)
}
