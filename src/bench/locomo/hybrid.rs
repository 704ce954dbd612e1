//! The hybrid column of `bench locomo`: the embeddings each store gets as its
//! `[embeddings]` section, the hybrid relevance `context` computes with them, and
//! what the column ran on and where its time went.

use std::path::Path;
use std::time::Duration as Elapsed;

use serde::Serialize;

use crate::bench::BenchError;
use crate::engine::Memory;
use crate::retrieval::context::Prepared;

/// The embeddings of the hybrid column, an OpenAI-compatible endpoint or the builtin
/// model: each store the benchmark builds gets it as its `[embeddings]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// `provider = "builtin"` (the rest is then left out).
    pub builtin: bool,
    pub url: String,
    pub model: String,
    pub dimensions: usize,
    /// Per request: a batch of 64 long memories on a CPU takes tens of seconds, far
    /// over the default meant for a query.
    pub timeout_ms: u64,
}

/// The default request timeout of a benchmark's embeddings: five minutes.
pub const BENCH_EMBED_TIMEOUT_MS: u64 = 300_000;

impl Embeddings {
    /// The `[embeddings]` section, as TOML.
    pub fn section(&self) -> String {
        let mut t = toml::Table::new();
        if self.builtin {
            t.insert("provider".into(), toml::Value::String("builtin".into()));
        } else {
            t.insert("url".into(), toml::Value::String(self.url.clone()));
            t.insert("model".into(), toml::Value::String(self.model.clone()));
            t.insert(
                "dimensions".into(),
                toml::Value::Integer(i64::try_from(self.dimensions).unwrap_or(i64::MAX)),
            );
            t.insert(
                "timeout_ms".into(),
                toml::Value::Integer(i64::try_from(self.timeout_ms).unwrap_or(i64::MAX)),
            );
        }
        let mut doc = toml::Table::new();
        doc.insert("embeddings".into(), toml::Value::Table(t));
        toml::to_string(&doc).unwrap_or_default()
    }

    /// Adds the section to the store at `root` (after whatever its config holds).
    pub fn configure(&self, root: &Path) -> Result<(), BenchError> {
        let path = root.join(crate::memory::layout::CONFIG_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&self.section());
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&path, text.as_bytes())
        };
        write().map_err(|source| BenchError::Read { path, source })
    }
}

/// The hybrid relevance of every memory of `prepared` to `query`, computed as
/// `context` computes it with `[embeddings]` configured (`None` when it fell back:
/// the block is then the keyword block), and whether it ran hybrid with a vector for
/// every memory (`false`: it fell back, or some memory was ranked by keywords only).
pub(super) fn hybrid_relevance(
    mem: &Memory,
    prepared: &Prepared,
    query: &str,
) -> (Option<Vec<f64>>, bool) {
    // The engine's one-shot path: a block that fell back is the keyword block.
    let (rel, report) = mem.context_relevance(prepared, query);
    let ok = report.is_some_and(|r| r.mode == "hybrid" && r.pending == 0);
    (rel, ok)
}

/// What the hybrid column ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HybridRun {
    pub model: String,
    pub dimensions: usize,
    /// Memories embedded ahead of time, over all stores.
    pub passages: usize,
    /// Questions whose hybrid relevance fell back to keywords (endpoint error,
    /// timeout, wrong dimensions) or left a memory without a vector: their hybrid
    /// blocks are keyword blocks. A sound run has none.
    pub fallbacks: usize,
}

/// Where the time of the hybrid column went (not part of the deterministic report).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timing {
    /// Memories embedded ahead of time, and how long that took.
    pub passages: usize,
    pub passage_time: Elapsed,
    /// Questions embedded (one request each, with nothing else), and how long.
    pub queries: usize,
    pub query_time: Elapsed,
}
