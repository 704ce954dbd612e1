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

#[cfg(test)]
mod saved;

#[cfg(test)]
pub(crate) use crate::retrieval::postings::SPLIT_FROM;
pub(crate) use crate::retrieval::postings::{Frozen, FrozenParts, SavedPost, le_words, runs_crc};
pub(crate) use crate::retrieval::search::arrays::{Arr, IN_PLACE, Item as ArrItem, SharedBytes};
pub(crate) use crate::retrieval::search::line_scoring::QueryScores;
pub(crate) use crate::retrieval::search::line_scoring::best_key;
pub(crate) use crate::retrieval::search::line_scoring::key_parts;
pub(crate) use crate::retrieval::search::scoring::{Corpus, Counts, blend};
pub(crate) use crate::retrieval::search::text::matching_line;
pub(crate) use crate::retrieval::search::text::terms;
pub(crate) use crate::retrieval::search::text::{split_label, split_tag, words};
pub(crate) use crate::retrieval::search::vocab::{Analyzed, DocData, Vocab};

/// A set of term ids as a bit per id of a vocabulary (an eighth of a kilobyte per
/// thousand terms, so it stays in cache while the terms of many memories are tested
/// in it one after the other).
pub(super) struct TermBits(Vec<u64>);

impl TermBits {
    /// The ids `ids`, each below `len`.
    pub(super) fn new(len: usize, ids: impl IntoIterator<Item = u32>) -> TermBits {
        let mut words = vec![0u64; len.div_ceil(64)];
        for t in ids {
            words[t as usize / 64] |= 1 << (t % 64);
        }
        TermBits(words)
    }

    /// How many ids the set can hold (a multiple of 64).
    pub(super) fn len(&self) -> usize {
        self.0.len() * 64
    }

    /// Whether `t` is in the set (it must be below [`TermBits::len`]).
    #[inline]
    pub(super) fn has(&self, t: u32) -> bool {
        self.0[t as usize / 64] & (1 << (t % 64)) != 0
    }
}

#[cfg(test)]
mod tests {
    use crate::memory::Record;
    use crate::retrieval::search::{Corpus, DocData, Vocab};

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

    /// `records` after `n` changes (random records of seed `seed + 100` inserted,
    /// put in the place of one, or one removed, in turn), with the position in
    /// `records` of each one kept.
    pub(super) fn changed(
        seed: u64,
        records: &[Record],
        n: usize,
    ) -> (Vec<Record>, Vec<Option<usize>>) {
        let mut out = records.to_vec();
        let mut origin: Vec<Option<usize>> = (0..records.len()).map(Some).collect();
        for (k, r) in random_records(seed + 100, n).into_iter().enumerate() {
            let at = (k * 7) % out.len();
            match k % 3 {
                0 => {
                    out.insert(at, r);
                    origin.insert(at, None);
                }
                1 => {
                    out[at] = r;
                    origin[at] = None;
                }
                _ => {
                    out.remove(at);
                    origin.remove(at);
                }
            }
        }
        (out, origin)
    }

    /// The data of `records`: `old[i]` for a record whose origin is `i`, else the
    /// record analyzed anew into `vocab`.
    pub(super) fn data_of(
        records: &[Record],
        origin: &[Option<usize>],
        old: &[DocData],
        vocab: &mut Vocab,
    ) -> Vec<DocData> {
        records
            .iter()
            .zip(origin)
            .map(|(r, o)| match o {
                Some(i) => old[*i].clone(),
                None => DocData::of(r, vocab),
            })
            .collect()
    }

    /// Records of random bodies over a small vocabulary (so terms repeat within and
    /// across lines), some lines labelled; a small xorshift keeps it reproducible.
    pub(super) fn random_records(seed: u64, n: usize) -> Vec<Record> {
        let words = [
            "cello", "zebra", "Ana", "Ben", "tempo", "knee", "physio", "coffee", "run", "art",
            "show", "lesson", "morning", "flat", "white", "trip", "Paris", "dog", "walk",
        ];
        let mut x = seed.max(1);
        let mut next = move |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        };
        (0..n)
            .map(|i| {
                let mut r = numbered(i);
                r.meta.name = words[next(words.len())].to_string();
                let lines: Vec<String> = (0..next(6))
                    .map(|_| {
                        // Some lines longer than the 32 positions postings tell apart.
                        let n = if next(5) == 0 {
                            30 + next(60)
                        } else {
                            next(12)
                        };
                        let text: Vec<&str> = (0..n).map(|_| words[next(words.len())]).collect();
                        match next(3) {
                            0 => format!("{}: {}", words[next(3)], text.join(" ")),
                            _ => text.join(" "),
                        }
                    })
                    .collect();
                r.body = (lines.join("\n")).into();
                r
            })
            .collect()
    }
}
