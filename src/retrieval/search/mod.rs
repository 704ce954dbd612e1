//! Relevance: tokenizing, stemming, BM25F over name, description, tags and body, and
//! line-level scores for query-aware context.
//!
//! `recall` and query-aware `context` rank by relevance first and use salience and
//! recency as bounded boosts (spec/ranking.md explains the blend and its weights).
//! Every memory whose name, description or body contains the whole query
//! (case-insensitive) is a hit, whatever its BM25 score. [`Corpus`] scores every body
//! line as a passage of its own (line-level IDF, label boost, bigrams, one round of
//! pseudo-relevance feedback), for choosing excerpts. Pure code: no IO, no clock.

mod arrays;
mod line_scoring;
mod scoring;
mod text;
mod vocab;

pub(crate) use crate::retrieval::search::arrays::{Arr, Item as ArrItem, SharedBytes};
pub(crate) use crate::retrieval::search::line_scoring::QueryScores;
pub(crate) use crate::retrieval::search::line_scoring::best_key;
pub(crate) use crate::retrieval::search::line_scoring::key_parts;
pub(crate) use crate::retrieval::search::scoring::{Corpus, blend};
pub(crate) use crate::retrieval::search::text::matching_line;
pub(crate) use crate::retrieval::search::text::terms;
pub(crate) use crate::retrieval::search::text::{split_label, split_tag, words};
pub(crate) use crate::retrieval::search::vocab::{Analyzed, DocData, Vocab};

#[cfg(test)]
mod tests {
    use crate::memory::Record;
    use crate::retrieval::search::Corpus;

    /// A user memory keyed `m<i>`, named `N`, described `d`.
    pub(super) fn numbered(i: usize) -> Record {
        crate::memory::index::tests::rec(&format!("m{i}"), "user", "N", "d", "2026-01-01")
    }

    /// A corpus of `records` that keeps postings.
    pub(super) fn with_postings(records: &[Record]) -> Corpus {
        let mut c = Corpus::new(records);
        c.keep_postings();
        c
    }
}
