//! The hybrid column of `bench locomo`, `chats` and `longmemeval`: the embeddings
//! each store gets as its `[embeddings]` section, the store embedded ahead of time,
//! the hybrid relevance `context` computes with them and the blocks built with it,
//! and what the column ran on and where its time went.

use std::path::Path;
use std::time::{Duration as Elapsed, Instant};

use serde::Serialize;

use crate::bench::BenchError;
use crate::engine::{ContextRequest, Memory};
use crate::retrieval::context::{Block, Prepared};
use crate::retrieval::filter::Filter;
use crate::retrieval::hybrid::Fused;

/// The embeddings of the hybrid column, an OpenAI-compatible endpoint or the builtin
/// model: each store the benchmark builds gets it as its `[embeddings]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// `provider = "builtin"` (the rest is then left out).
    pub builtin: bool,
    /// The endpoint (empty for the builtin model).
    pub url: String,
    /// The model.
    pub model: String,
    /// The length of its vectors.
    pub dimensions: usize,
    /// Per request: a batch of 64 long memories on a CPU takes tens of seconds, far
    /// over the default meant for a query.
    pub timeout_ms: u64,
    /// `passages = true`: the lines of each question's best memories are compared
    /// with it too (spec/ranking.md#passages), embedded the first time a question
    /// needs them, with no limit on how many one question embeds.
    pub passages: bool,
}

/// The query budget of a benchmark store with passages: more than the lines of the
/// best memories of any question, so that no block is scored with lines pending.
const BENCH_PASSAGE_BUDGET: i64 = 1 << 20;

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
        if self.passages {
            t.insert("passages".into(), toml::Value::Boolean(true));
            t.insert(
                "query_budget".into(),
                toml::Value::Integer(BENCH_PASSAGE_BUDGET),
            );
            if self.builtin {
                // The builtin model stops between texts once a call's time is spent.
                t.insert(
                    "timeout_ms".into(),
                    toml::Value::Integer(i64::try_from(self.timeout_ms).unwrap_or(i64::MAX)),
                );
            }
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
fn hybrid_relevance(mem: &Memory, prepared: &Prepared, query: &str) -> (Option<Fused>, bool) {
    // The engine's one-shot path: a block that fell back is the keyword block.
    let (rel, report) = mem.context_relevance(prepared, query);
    let ok = report.is_some_and(|r| r.mode == "hybrid" && r.pending == 0 && r.pending_lines == 0);
    (rel, ok)
}

/// What the hybrid column ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HybridRun {
    /// The model.
    pub model: String,
    /// The length of its vectors.
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
    /// How long embedding the memories took.
    pub passage_time: Elapsed,
    /// Questions embedded (one request each, with nothing else), and how long.
    pub queries: usize,
    /// How long embedding the questions took.
    pub query_time: Elapsed,
    /// Questions asked as `recall` on the configured store (`bench longmemeval`:
    /// one query embedding and the hybrid ranking each), and how long.
    pub recalls: usize,
    /// How long the recalls took.
    pub recall_time: Elapsed,
}

/// The hybrid column of a run in progress: its embeddings, what it ran on so far and
/// where its time went.
#[derive(Debug, Clone)]
pub(super) struct Column<'a> {
    pub embeddings: &'a Embeddings,
    pub run: HybridRun,
    pub timing: Timing,
}

impl<'a> Column<'a> {
    /// A column that has run on nothing yet.
    pub(crate) fn new(embeddings: &'a Embeddings) -> Column<'a> {
        Column {
            embeddings,
            run: HybridRun {
                model: embeddings.model.clone(),
                dimensions: embeddings.dimensions,
                ..HybridRun::default()
            },
            timing: Timing::default(),
        }
    }

    /// Configures the store at `root` (opened as `mem`) with the embeddings and
    /// embeds every memory ahead of time (what `memdir index --embeddings` does); an
    /// endpoint that cannot embed them fails the run.
    pub(crate) fn embed_store(&mut self, mem: &Memory, root: &Path) -> Result<(), BenchError> {
        self.embeddings.configure(root)?;
        let start = Instant::now();
        let summary = mem
            .index_embeddings()?
            .map_err(|source| BenchError::Embed { source })?;
        self.timing.passage_time += start.elapsed();
        self.timing.passages += summary.embedded;
        self.run.passages += summary.embedded;
        Ok(())
    }

    /// The hybrid relevance of every memory of `prepared` to `query` (one query
    /// embedding, timed), and whether it ran hybrid with a vector for every memory;
    /// the caller counts a question that did not as a fallback.
    pub(crate) fn relevance(
        &mut self,
        mem: &Memory,
        prepared: &Prepared,
        query: &str,
    ) -> (Option<Fused>, bool) {
        let start = Instant::now();
        let out = hybrid_relevance(mem, prepared, query);
        self.timing.query_time += start.elapsed();
        self.timing.queries += 1;
        out
    }
}

/// The block at `max_tokens` for `query` and, with `hybrid` (the question's hybrid
/// relevance, `None` inside when it fell back), the hybrid block beside it. With
/// `check`, first checks that the block `context` returns for the store as it is
/// configured (hybrid when it is) is the one scored.
pub(super) fn blocks(
    mem: &Memory,
    prepared: &Prepared,
    max_tokens: usize,
    query: &str,
    hybrid: Option<&Option<Fused>>,
    check: bool,
) -> Result<(Block, Option<Block>), BenchError> {
    let (block, hybrid_block) = match hybrid {
        None => (prepared.block(max_tokens, Some(query)), None),
        Some(rel) => {
            let filter = Filter::default();
            let keyword = prepared.block_with(max_tokens, Some(query), &filter, None);
            let hybrid = prepared.block_with(max_tokens, Some(query), &filter, rel.clone());
            (keyword, Some(hybrid))
        }
    };
    if check {
        let want = hybrid_block.as_ref().unwrap_or(&block);
        let asked = ContextRequest::new(max_tokens).with_query(query);
        assert_eq!(want, &mem.context(&asked)?.block);
    }
    Ok((block, hybrid_block))
}
