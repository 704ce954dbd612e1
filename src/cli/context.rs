//! `memdir context`: the block an agent puts in its system prompt.

use super::Out;
use super::filter::FilterArgs;
use memdir::DEFAULT_MAX_TOKENS;
use memdir::Memory;
use memdir::report::Failure;

/// Print the context block: MEMORY.md, then memories by rank, then recent events.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Tokens are estimated as ceil(characters / 4); the block never exceeds
max-tokens × 4 characters. MEMORY.md comes whole when it fits in half the budget (an
eighth with --query); otherwise its most useful lines and a line saying how many are
not shown. With --query (the user's current message), the best lines of the memories
relevant to it come first, as marked excerpts (a line over 200 characters cut to the
part that matches, `…` where text is left out), and a larger budget never shows less. Filters choose which memories may be packed; the index stays the store's.

Examples:
  memdir context --max-tokens 1024
  memdir context --query \"how is the 10k training going?\" --max-tokens 2048
  memdir context --type project,feedback --since 2026-04-01"
)]
pub struct Args {
    /// Token budget of the whole block.
    #[arg(long, default_value_t = DEFAULT_MAX_TOKENS)]
    pub max_tokens: usize,
    /// Rank by relevance to this text (blended with salience and recency).
    #[arg(long, allow_hyphen_values = true)]
    pub query: Option<String>,
    #[command(flatten)]
    pub filter: FilterArgs,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let c = mem.context(&memdir::ContextRequest {
        max_tokens: a.max_tokens,
        query: a.query.clone(),
        filter: a.filter.filter()?,
    })?;
    out.problems(&mem.root(), &c.problems);
    // Embeddings never fail a context: a fallback is one warning (spec/ranking.md#hybrid-recall).
    if let Some(w) = c.embeddings.as_ref().and_then(|e| e.warning()) {
        out.warn(&format!("warning: {w}"));
    }
    if out.is_json() {
        let mut doc = serde_json::to_value(&c.block).unwrap_or_default();
        // Only with [embeddings] configured and a query, so other output stays as it was.
        if let Some(e) = &c.embeddings {
            e.add_to(&mut doc);
        }
        out.json(&doc);
    } else {
        out.text(&c.block.text);
    }
    Ok(0)
}
