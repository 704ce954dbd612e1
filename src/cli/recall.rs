//! `memdir recall`: ranked hits for a query.

use serde_json::json;

use super::Out;
use super::filter::FilterArgs;
use memdir::Memory;
use memdir::report::Failure;

/// Find memories relevant to a query.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Every memory whose name, description or body contains the query (case-insensitive)
is a hit; beyond that, hits are ranked by BM25 relevance blended with salience and
recency. Filters choose which memories may be hits before the
limit applies; scores stay those of the whole store.

Examples:
  memdir recall \"saturday football\"
  memdir recall race --type project --since 2026-04-01
  memdir recall tone --tag work --tag style --min-salience 0.8"
)]
pub struct Args {
    /// What to look for.
    #[arg(allow_hyphen_values = true, value_parser = super::text_value)]
    pub query: String,
    /// How many hits at most.
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    #[command(flatten)]
    pub filter: FilterArgs,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let recall = mem.recall(&memdir::RecallRequest {
        query: a.query.clone(),
        limit: a.limit,
        filter: a.filter.filter()?,
    })?;
    let (hits, problems) = (recall.hits, recall.problems);
    out.problems(&mem.root(), &problems);
    // Embeddings never fail a recall: a fallback is one warning (spec/ranking.md#hybrid-recall).
    if let Some(w) = recall.embeddings.as_ref().and_then(|e| e.warning()) {
        out.warn(&format!("warning: {w}"));
    }
    if out.is_json() {
        let mut doc = json!({"query": a.query, "hits": hits, "problems": problems});
        // Only with [embeddings] configured, so keyword-only output stays as it was.
        if let Some(e) = &recall.embeddings {
            e.add_to(&mut doc);
        }
        out.json(&doc);
        return Ok(0);
    }
    if hits.is_empty() {
        out.text("no hits");
        return Ok(0);
    }
    let mut s = String::new();
    for h in &hits {
        s.push_str(&format!("{h}\n"));
    }
    out.text(&s);
    Ok(0)
}
