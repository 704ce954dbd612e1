//! Hybrid relevance on the query path and `memdir index --embeddings`
//! (spec/ranking.md#hybrid-recall): reads `[embeddings]`, embeds the query and, within
//! a budget, memories without a cached vector, and hands the fused relevance back.
//!
//! Never fails a call: no configuration is keyword ranking with no report; anything
//! else that goes wrong (bad section, unreachable or slow endpoint, wrong dimensions)
//! is keyword ranking with a `fallback` reason. Writes never come here.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use crate::embed::cache::{self, Vectors, text_hash};
use crate::embed::{Config, EmbedError};
use crate::memory::Record;
use crate::retrieval::hybrid;

/// Which ranking a query used, when embeddings are configured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `keyword` or `hybrid`.
    pub mode: &'static str,
    /// Why it fell back to keyword ranking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Memories without a vector yet (ranked by keywords only this time).
    #[serde(skip_serializing_if = "is_zero")]
    pub pending: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What `index --embeddings` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub model: String,
    pub dimensions: usize,
    pub memories: usize,
    /// Texts embedded by this run.
    pub embedded: usize,
    /// Vectors in the cache after it.
    pub cached: usize,
}

/// The text of a memory that is embedded: name, description and body.
pub fn text_of(r: &Record) -> String {
    format!("{}\n{}\n{}", r.meta.name, r.meta.description, r.body)
}

fn fallback(keyword: Vec<f64>, why: String) -> (Vec<f64>, Option<Report>) {
    (
        keyword,
        Some(Report {
            mode: "keyword",
            fallback: Some(why),
            pending: 0,
        }),
    )
}

/// Whether `[embeddings]` is present (a bad section counts: it falls back and says so).
pub fn enabled(root: &Path) -> bool {
    !matches!(Config::load(root), Ok(None))
}

/// The relevance a recall uses: `keyword` unchanged (and no report) when embeddings
/// are not configured; otherwise fused with vector similarity, or `keyword` with the
/// reason it fell back.
pub fn relevance(
    root: &Path,
    records: &[Record],
    keyword: Vec<f64>,
    query: &str,
) -> (Vec<f64>, Option<Report>) {
    let config = match Config::load(root) {
        Ok(None) => return (keyword, None),
        Ok(Some(c)) => c,
        Err(e) => return fallback(keyword, e.to_string()),
    };
    let embedder = match config.embedder() {
        Ok(e) => e,
        Err(e) => return fallback(keyword, e.to_string()),
    };
    let path = cache::path(root, &config.model, config.dimensions);
    let mut vectors = Vectors::read(&path, config.dimensions);
    let hashes: Vec<[u8; 32]> = records.iter().map(|r| text_hash(&text_of(r))).collect();
    let mut seen = HashSet::new();
    let missing: Vec<usize> = (0..records.len())
        .filter(|&i| vectors.get(&hashes[i]).is_none() && seen.insert(hashes[i]))
        .take(config.query_budget)
        .collect();
    let mut texts = vec![query.to_string()];
    texts.extend(missing.iter().map(|&i| text_of(&records[i])));
    let out = match embedder.embed(&texts) {
        Ok(v) => v,
        Err(e) => return fallback(keyword, e.to_string()),
    };
    let mut out = out.into_iter();
    let Some(q) = out.next().filter(|q| q.len() == embedder.dimensions()) else {
        return fallback(keyword, "the endpoint returned no query vector".into());
    };
    for (&i, v) in missing.iter().zip(out) {
        vectors.insert(hashes[i], v);
    }
    vectors.save(&path);
    let sims: Vec<Option<f32>> = hashes
        .iter()
        .map(|h| vectors.get(h).map(|v| hybrid::cosine(&q, v)))
        .collect();
    let pending = sims.iter().filter(|s| s.is_none()).count();
    let rel = hybrid::fuse(&keyword, &sims, config.floor);
    (
        rel,
        Some(Report {
            mode: "hybrid",
            fallback: None,
            pending,
        }),
    )
}

/// Embeds every memory without a cached vector and drops vectors no memory has.
pub fn index(root: &Path, records: &[Record]) -> Result<Summary, EmbedError> {
    let config = Config::load(root)?.ok_or_else(|| EmbedError::Config {
        path: root.join(crate::memory::layout::CONFIG_FILE),
        reason: "no [embeddings] section (url, model, dimensions)".into(),
    })?;
    let embedder = config.embedder()?;
    let path = cache::path(root, &config.model, config.dimensions);
    let mut vectors = Vectors::read(&path, config.dimensions);
    let live: HashSet<[u8; 32]> = records.iter().map(|r| text_hash(&text_of(r))).collect();
    vectors.retain(&live);
    let mut seen = HashSet::new();
    let missing: Vec<(String, [u8; 32])> = records
        .iter()
        .map(text_of)
        .filter_map(|t| {
            let h = text_hash(&t);
            (vectors.get(&h).is_none() && seen.insert(h)).then_some((t, h))
        })
        .collect();
    let mut embedded = 0;
    let mut result = Ok(());
    for chunk in missing.chunks(crate::embed::BATCH) {
        let texts: Vec<String> = chunk.iter().map(|(t, _)| t.clone()).collect();
        match embedder.embed(&texts) {
            Ok(vs) => {
                for ((_, h), v) in chunk.iter().zip(vs) {
                    vectors.insert(*h, v);
                }
                embedded += chunk.len();
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // What was embedded before a failure is kept.
    vectors.save(&path);
    result?;
    Ok(Summary {
        model: embedder.model_id().to_string(),
        dimensions: config.dimensions,
        memories: records.len(),
        embedded,
        cached: vectors.count(),
    })
}
