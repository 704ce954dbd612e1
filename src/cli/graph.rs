//! `memdir graph`: walk the links around a memory, within a token budget.

use serde_json::json;

use super::Out;
use memdir::Memory;
use memdir::report::Failure;
use memdir::{Direction, GraphFormat as Format, render_graph as render};

/// Walk the links around a memory breadth-first and print the memories reached.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Edges are the typed links `- rel:: [[key]]`, other `[[key]]` links
(`links_to`) and frontmatter values `\"[[key]]\"`; incoming edges are derived from the
memories that link here. Each memory is printed once, with its depth and the first
(shortest) path to it. Nearest memories first: what does not fit in --max-tokens is cut
and the output says how many were.

Examples:
  memdir graph user_alice --depth 2
  memdir graph user_alice --rel knows --out --format mermaid
  memdir graph user_alice --format dot | dot -Tsvg > alice.svg"
)]
pub struct Args {
    /// The memory to start from.
    pub key: String,
    /// How many steps to walk (1 to 3).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=3))]
    pub depth: u8,
    /// Follow only this relation.
    #[arg(long, value_name = "REL")]
    pub rel: Option<String>,
    /// Follow incoming links only (memories that link here).
    #[arg(long = "in", conflicts_with_all = ["outgoing", "both"])]
    pub incoming: bool,
    /// Follow outgoing links only (links written in the memory).
    #[arg(long = "out", conflicts_with = "both")]
    pub outgoing: bool,
    /// Follow both (the default).
    #[arg(long)]
    pub both: bool,
    /// Token budget of the output.
    #[arg(long, default_value_t = 2048)]
    pub max_tokens: usize,
    /// Output format: text, mermaid or dot (ignored with --json).
    #[arg(long, default_value = "text", value_parser = ["text", "mermaid", "dot"])]
    pub format: String,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let dir = if a.incoming {
        Direction::In
    } else if a.outgoing {
        Direction::Out
    } else {
        Direction::Both
    };
    let memdir::Loaded {
        value: walk,
        problems,
    } = mem.graph(&a.key, usize::from(a.depth), a.rel.as_deref(), dir)?;
    out.problems(&mem.root(), &problems);
    let format = Format::parse(&a.format).unwrap_or_default();
    let shown = render(&walk, format, a.max_tokens);
    if out.is_json() {
        let w = walk.truncated(shown.shown);
        out.json(&json!({
            "start": w.start,
            "depth": a.depth,
            "direction": dir,
            "rel": a.rel,
            "nodes": w.nodes,
            "edges": w.edges,
            "cut": shown.cut,
        }));
    } else {
        out.text(&shown.text);
    }
    Ok(0)
}
