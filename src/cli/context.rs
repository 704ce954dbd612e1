//! `memdir context`: the block an agent puts in its system prompt.

use super::Out;
use crate::engine::Memory;
use crate::report::Failure;
use crate::retrieval::context::DEFAULT_MAX_TOKENS;

/// Print the context block: MEMORY.md, then memories by rank, then recent events.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Tokens are estimated as ceil(characters / 4); the block never exceeds
max-tokens × 4 characters unless MEMORY.md alone does. With --query (the user's
current message), memories relevant to it come first."
)]
pub struct Args {
    /// Token budget of the whole block.
    #[arg(long, default_value_t = DEFAULT_MAX_TOKENS)]
    pub max_tokens: usize,
    /// Rank by relevance to this text (blended with salience and recency).
    #[arg(long)]
    pub query: Option<String>,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let (block, problems) = mem.context_with_problems(a.max_tokens, a.query.as_deref())?;
    out.problems(&mem.root(), &problems);
    if out.is_json() {
        out.json(&block);
    } else {
        out.text(&block.text);
    }
    Ok(0)
}
