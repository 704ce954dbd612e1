//! The token-budgeted context block an agent puts in its system prompt (spec/ranking.md#packing-the-context-block).
//!
//! Layout: the index section (MEMORY.md, its first 200 lines, whole when it fits in
//! its share of the budget, else its most useful lines and a line saying how many are
//! not shown), then memories, each whole under a heading naming its name, key, type
//! and updated date, then the most recent timeline events that still fit, oldest
//! first. Without a query the memories come in rank order. With one,
//! [`Prepared::block`] chooses the best lines of the relevant memories across all of
//! them and shows each memory whole or as a marked excerpt of those lines
//! (spec/ranking.md#query-aware-context-measured-on-locomo). A [`Filter`] decides
//! which memories may be packed at all. Tokens are estimated as ceil(chars / 4),
//! counting Unicode scalar values, and every character of the output counts: the
//! output never exceeds `max_tokens × 4` characters (spec/ranking.md#budget). Pure
//! code: no IO, no clock.

mod assembly;
mod cut;
mod excerpts;
mod head;
mod index_section;
mod section;

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::memory::Record;
use crate::memory::index;
use crate::memory::timeline::Event;
use crate::retrieval::filter::Filter;
use crate::retrieval::hybrid::Fused;
use crate::retrieval::rank::standing::Standing;
use crate::retrieval::search::Corpus;

pub(crate) use crate::retrieval::context::assembly::build_while;
pub(crate) use crate::retrieval::context::assembly::build_with;

/// Default budget in tokens.
pub const DEFAULT_MAX_TOKENS: usize = 8192;
/// The share of the budget MEMORY.md may take in a block without a query
/// (spec/ranking.md#budget).
pub(crate) const INDEX_SHARE: f64 = 0.5;
/// The share of the budget MEMORY.md may take in a block with a query: less, since
/// the evidence for the query matters more (measured on the three data sets,
/// spec/ranking.md#budget).
pub(crate) const INDEX_SHARE_QUERY: f64 = 0.125;
/// The most of the budget the agent state section takes (spec/ranking.md#agent-state-in-the-block).
pub(crate) const STATE_SHARE: f64 = 0.25;

/// Estimated tokens of a text: ceil(chars / 4).
pub(crate) fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// What the block contains.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    /// The block as the agent gets it (Markdown).
    pub text: String,
    /// Keys of the memories included, in output order, and whether each is an excerpt.
    pub memories: Vec<Included>,
    /// Agent state entries included (spec/ranking.md#agent-state-in-the-block), in
    /// output order, and whether each is an excerpt (over its `limit`).
    pub state: Vec<Included>,
    /// Agent state entries left out because the budget was too small.
    pub state_hidden: usize,
    /// Number of timeline events included.
    pub events: usize,
    /// Lines of MEMORY.md left out by the 200-line cap.
    pub index_lines_cut: usize,
    /// Entries of MEMORY.md left out because the index did not fit in its share of
    /// the budget (the block says so in a line of its own).
    pub index_entries_hidden: usize,
    /// Characters of the index section (the start of `text`).
    #[serde(skip)]
    pub index_chars: usize,
    /// Estimated tokens of `text`.
    pub tokens: usize,
    /// The budget it was built for (`tokens` is at most this).
    pub max_tokens: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Included {
    pub key: String,
    pub excerpt: bool,
}

/// A loaded store, ready to build any number of context blocks: the memories, the
/// rendered index, the timeline and the time, plus the term statistics of every
/// memory and line (built on the first query and kept). Building a block from it is
/// exactly what `Memory::context` does after loading the store.
#[derive(Debug)]
pub struct Prepared {
    records: Vec<Record>,
    index_text: String,
    events: Vec<Event>,
    now: DateTime<Utc>,
    corpus: OnceLock<Corpus>,
}

impl Prepared {
    /// `events` in time order (oldest first); only the newest that fit are used, so
    /// passing more than a budget needs changes nothing.
    pub fn new(records: Vec<Record>, events: Vec<Event>, now: DateTime<Utc>) -> Prepared {
        let index_text = index::render(&records);
        Prepared::with_index(records, index_text, events, now)
    }

    /// Like [`Prepared::new`] with MEMORY.md already rendered from `records`.
    pub fn with_index(
        records: Vec<Record>,
        index_text: String,
        events: Vec<Event>,
        now: DateTime<Utc>,
    ) -> Prepared {
        Prepared {
            index_text,
            records,
            events,
            now,
            corpus: OnceLock::new(),
        }
    }

    /// Uses `corpus` (the term statistics of exactly these records, in their order)
    /// instead of computing it on the first query.
    pub fn set_corpus(&mut self, corpus: Corpus) {
        debug_assert_eq!(corpus.len(), self.records.len());
        self.corpus = OnceLock::from(corpus);
    }

    /// The memories the blocks are built from.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The context block for a budget and an optional query (spec/ranking.md#packing-the-context-block).
    pub fn block(&self, max_tokens: usize, query: Option<&str>) -> Block {
        self.block_filtered(max_tokens, query, &Filter::default())
    }

    /// The context block with only the memories that pass `filter` packed
    /// (spec/ranking.md#filters). Scores are those of the whole store; the index
    /// section stays the store's index under the budget rule.
    pub fn block_filtered(&self, max_tokens: usize, query: Option<&str>, filter: &Filter) -> Block {
        self.block_with(max_tokens, query, filter, None)
    }

    /// The keyword relevance of every memory to `query` (spec/ranking.md#recall).
    pub fn keyword_relevance(&self, query: &str) -> Vec<f64> {
        self.corpus
            .get_or_init(|| Corpus::new(&self.records))
            .relevance(&self.records, query)
    }

    /// [`Prepared::block_filtered`] with the memories' relevance given (see [`build_with`]).
    pub fn block_with(
        &self,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
        relevance: Option<Fused>,
    ) -> Block {
        build_with(&self.parts(query), max_tokens, query, filter, relevance)
    }

    /// [`Prepared::block_with`] with MEMORY.md's text from `index` (given the records),
    /// found while the memories and lines are scored ([`build_while`]); the text this
    /// was prepared with is not used.
    pub fn block_while<E: Send>(
        &self,
        index: impl FnOnce(&[Record]) -> Result<String, E> + Send,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
        relevance: Option<Fused>,
    ) -> Result<Block, E> {
        build_while(
            &self.parts(query),
            index,
            max_tokens,
            query,
            filter,
            relevance,
        )
    }

    /// The borrowed parts for a block, with the term statistics when there is a query
    /// (computed on the first one).
    fn parts(&self, query: Option<&str>) -> Parts<'_> {
        let has_query = query.is_some_and(|q| !q.trim().is_empty());
        let corpus = has_query.then(|| self.corpus.get_or_init(|| Corpus::new(&self.records)));
        Parts {
            records: &self.records,
            corpus,
            standing: None,
            index_text: &self.index_text,
            events: &self.events,
            now: self.now,
        }
    }
}

/// What a block is built from, borrowed (a process that keeps a store warm builds
/// blocks without handing its records over).
pub(crate) struct Parts<'a> {
    pub records: &'a [Record],
    /// The term statistics of `records` (in their order); needed with a query.
    pub corpus: Option<&'a Corpus>,
    /// The query-less order of `records` kept between calls, when it holds at
    /// `now` (the memories are then taken in order only as far as the block reads;
    /// without it every memory is scored and sorted).
    pub standing: Option<&'a Standing>,
    /// MEMORY.md as rendered from `records`.
    pub index_text: &'a str,
    /// Timeline events, oldest first.
    pub events: &'a [Event],
    pub now: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use crate::memory::Record;
    use crate::memory::index::tests::rec;
    use crate::memory::timeline::Event;
    use crate::retrieval::context::Block;
    use crate::retrieval::context::INDEX_SHARE;
    use crate::retrieval::context::assembly::assemble;
    use crate::retrieval::context::assembly::pack_whole;

    /// A block without a query over `rs` in the order given, with `index` as MEMORY.md.
    pub(super) fn build(index: &str, rs: &[Record], events: &[Event], max: usize) -> Block {
        let order: Vec<usize> = (0..rs.len()).collect();
        assemble(
            index,
            rs,
            order.iter().copied(),
            INDEX_SHARE,
            events,
            max,
            |room| pack_whole(rs, order.iter().copied(), room),
        )
    }

    pub(super) fn now() -> DateTime<Utc> {
        "2026-01-02T00:00:00Z".parse().unwrap()
    }

    /// A memory of `n` filler lines, with `special` lines replaced.
    pub(super) fn long(key: &str, n: usize, special: &[(usize, &str)]) -> Record {
        let mut r = rec(key, "user", key, "d", "2026-01-01");
        r.body = (0..n)
            .map(|i| match special.iter().find(|(at, _)| *at == i) {
                Some((_, t)) => t.to_string(),
                None => format!("[{key}:{i}] Bo: filler words about nothing much, line {i}"),
            })
            .collect::<Vec<_>>()
            .join("\n")
            .into();
        r
    }
}
