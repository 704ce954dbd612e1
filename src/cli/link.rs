//! `memdir link` and `memdir unlink`: add or remove one typed link line of a memory.

use serde_json::json;

use super::Out;
use memdir::report::Failure;
use memdir::{KnowledgeGraph, Memory, Written};

/// Link memory A to B with a relation: adds the line `- REL:: [[B]]` to A's body.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Changes one line of A (and its `updated`) through the same checks as
`write`; B may be a key, an alias or a name (`graph` and `check` resolve it; a link to
nothing is a dangling link that `check` reports). Linking again with another --context
replaces the context; linking again with the same one changes nothing.

Examples:
  memdir link user_alice works_at org_acme --context \"since 2024\"
  memdir graph user_alice"
)]
pub struct LinkArgs {
    /// The memory the link is written in.
    pub from: String,
    /// The relation, in snake_case (`works_at`, `knows`).
    pub rel: String,
    /// The target: a key, an alias or a name.
    pub to: String,
    /// A note written after the link: `- REL:: [[B]] (CONTEXT)`.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub context: Option<String>,
    #[command(flatten)]
    pub push: super::Offline,
}

/// Remove the line `- REL:: [[B]]` from memory A's body.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "An error, with nothing written, when A has no such line (a `[[B]]` in
running text is not a typed link and is left alone).

Example:
  memdir unlink user_alice works_at org_acme"
)]
pub struct UnlinkArgs {
    /// The memory the link is written in.
    pub from: String,
    /// The relation.
    pub rel: String,
    /// The target as written in the link.
    pub to: String,
    #[command(flatten)]
    pub push: super::Offline,
}

fn report(mem: &Memory, out: &mut Out, key: &str, Written { outcome, index }: Written) -> i32 {
    out.index_backup(&mem.root(), &index);
    if out.is_json() {
        out.json(&json!({"key": key, "outcome": outcome}));
    } else {
        let word = outcome.as_str();
        out.text(&format!("{word} {key}"));
    }
    0
}

pub fn run_link(mem: &Memory, a: &LinkArgs, out: &mut Out) -> Result<i32, Failure> {
    let r = mem.link(&a.from, &a.rel, &a.to, a.context.as_deref())?;
    let code = report(mem, out, &a.from, r);
    // Linking to a memory that does not exist yet is allowed (it may be written next),
    // but said, so a typo does not go unnoticed until `check`.
    if let Ok(KnowledgeGraph { graph, .. }) = mem.knowledge_graph()
        && graph
            .dangling
            .iter()
            .any(|d| d.from == a.from && d.link.target == a.to)
    {
        out.note(&format!(
            "note: no memory has the key, alias or name `{}` yet; `check` lists the link as dangling until one does",
            a.to
        ));
    }
    Ok(code)
}

pub fn run_unlink(mem: &Memory, a: &UnlinkArgs, out: &mut Out) -> Result<i32, Failure> {
    let r = mem.unlink(&a.from, &a.rel, &a.to)?;
    Ok(report(mem, out, &a.from, r))
}
