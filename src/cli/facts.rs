//! `memdir facts`: list the `- pred:: literal` facts of the memories.

use memdir::memory::printable::escape_line as esc;
use serde_json::json;

use super::Out;
use memdir::Memory;
use memdir::report::Failure;

/// List facts: body lines `- predicate:: value` whose value is not a link.
#[derive(Debug, clap::Args)]
#[command(after_help = "The subject of a fact is the memory it is written in.

Examples:
  memdir facts --subject user_alice
  memdir facts --predicate born --json")]
pub struct Args {
    /// Only the facts of this memory.
    #[arg(long, value_name = "KEY")]
    pub subject: Option<String>,
    /// Only facts with this predicate.
    #[arg(long, value_name = "PRED")]
    pub predicate: Option<String>,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let memdir::Loaded {
        value: facts,
        problems,
    } = mem.facts(a.subject.as_deref(), a.predicate.as_deref())?;
    out.problems(&mem.root(), &problems);
    if out.is_json() {
        out.json(&json!({"facts": facts}));
        return Ok(0);
    }
    if facts.is_empty() {
        out.text("no facts");
        return Ok(0);
    }
    let s: String = facts
        .iter()
        .map(|f| {
            format!(
                "{}  {}  {}\n",
                esc(&f.subject),
                esc(&f.predicate),
                esc(&f.value)
            )
        })
        .collect();
    out.text(&s);
    Ok(0)
}
