//! Line scoring for query-aware context: every body line scored as a passage of its
//! own (BM25 with line-level IDF, label boost, bigrams, one round of pseudo-relevance
//! feedback), by a scan or through the postings, with the same scores bit for bit.
//!
//! Must not change the memory scores or the corpus statistics (scoring owns them).
//! Pure code: no IO, no clock.

use foldhash::{HashMap, HashMapExt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use std::sync::Arc;

use crate::memory::Record;
use crate::retrieval::postings::{LinePost, Postings};
use crate::retrieval::search::scoring::{B, Corpus, K1};
use crate::retrieval::search::vocab::{DocData, DocView};
use crate::retrieval::search::{TermBits, terms};

/// Relevance of memories and of their lines to one query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryScores {
    /// Relevance of each memory, as `Corpus::relevance` computes it: 0 means "not a hit".
    pub memory: Vec<f64>,
    /// How much weight the memories' relevance has against the lines' own scores.
    pub prior: f64,
    /// `lines.of(r)[l]`: score of line `l` of memory `r` as a passage of its own
    /// (BM25 with line-level IDF, label boost, bigrams, feedback terms), divided by the
    /// best line's score, so the best line has 1 and a line without a query term 0.
    pub lines: LineScores,
    /// The query's distinct terms with their IDF, for cutting long lines to the part
    /// that matches.
    pub terms: Vec<(String, f64)>,
}

impl Corpus {
    /// Scores every memory and every line for `query`. `records` must be the records
    /// the corpus serves.
    pub fn score(&self, records: &[Record], query: &str) -> QueryScores {
        let (memory, prior) = self.relevance_and_strength(records, query);
        QueryScores {
            memory,
            prior,
            lines: self.line_relevance(query),
            terms: self.query_weights(query),
        }
    }
}

impl Corpus {
    /// The distinct terms of `query` that some memory holds, with their IDF, in the
    /// order of the query.
    pub fn query_weights(&self, query: &str) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::new();
        for t in terms(query) {
            let idf = self.idf(&t);
            if idf > 0.0 && !out.iter().any(|(u, _)| *u == t) {
                out.push((t, idf));
            }
        }
        out
    }
}

/// Line scores: a line whose label (`Caroline` in `[D3:5] Caroline: …`) is a query
/// term scores this much more (× 1.5): in a transcript, what a person said answers a
/// question about that person.
pub(super) const LABEL_BOOST: f64 = 0.5;
/// Two query terms next to each other in the query and in a line add this share of
/// their IDFs.
pub(super) const W_BIGRAM: f64 = 0.5;
/// Pseudo-relevance feedback: the best this many lines...
pub(super) const PRF_LINES: usize = 10;
/// ...give their this many most weighted terms (not in the query, in at least two
/// lines)...
pub(super) const PRF_TERMS: usize = 10;
/// ...added to the query with at most this share of their IDF.
pub(super) const PRF_WEIGHT: f64 = 0.2;

/// A positive score and a place as one integer: the greater key is the higher
/// score and, among equal scores, the earlier place (`a`, then `b`), the order of
/// [`by_score_desc`]. The bits of a positive `f64` order as the numbers do.
pub(crate) fn best_key(score: f64, a: usize, b: usize) -> u128 {
    debug_assert!(score > 0.0);
    debug_assert!(u32::try_from(a).is_ok() && u32::try_from(b).is_ok());
    (u128::from(score.to_bits()) << 64) | (u128::from(!(a as u32)) << 32) | u128::from(!(b as u32))
}

/// The score and the place of a [`best_key`].
pub(crate) fn key_parts(key: u128) -> (f64, (usize, usize)) {
    let score = f64::from_bits((key >> 64) as u64);
    (score, (!(key >> 32) as u32 as usize, !key as u32 as usize))
}

fn by_score_desc<T: Ord>(a: &(f64, T), b: &(f64, T)) -> std::cmp::Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(std::cmp::Ordering::Equal)
        .then(a.1.cmp(&b.1))
}

impl Corpus {
    fn avg_line_len(&self) -> f64 {
        if self.n_lines == 0 {
            1.0
        } else {
            (self.line_tokens as f64 / self.n_lines as f64).max(1.0)
        }
    }

    /// Line-level inverse document frequency of a term id.
    fn line_idf(&self, id: u32) -> f64 {
        let n = self.n_lines as f64;
        let df = f64::from(self.line_df.get(id as usize).copied().unwrap_or(0));
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln().max(1e-6)
    }

    /// Score of every line for weighted terms (`(term, weight)`, distinct terms; a
    /// query term's weight is its IDF) and adjacent pairs (`(first, second, weight)`),
    /// not normalized. `query` are the query's own terms, whose presence in a label
    /// boosts the line. Each line's terms are looked up once in a table of the
    /// weighted terms; the sum runs in the order of `weights`. A large corpus is
    /// scored on two threads, each line exactly as on one.
    fn line_scores(
        &self,
        weights: &[(u32, f64)],
        pairs: &[(u32, u32, f64)],
        query: &[u32],
        carry: &mut Carry,
    ) -> LineScores {
        // slot[t]: 1 + the position of term t in `weights`, 0 when not weighted.
        let mut slot = vec![0u32; self.vocab.len()];
        // The weighted terms as a bit each: a line's terms are tested in it and
        // only weighted terms are looked up in `slot`.
        let weighted = TermBits::new(self.vocab.len(), weights.iter().map(|w| w.0));
        for (i, &(t, _)) in weights.iter().enumerate() {
            slot[t as usize] = i as u32 + 1;
        }
        // ends[s]: the pairs (a bit each) whose first term, and those whose second
        // term, is the term in slot s; a pair's terms are query terms, so weighted.
        let mut ends = vec![(0u64, 0u64); weights.len() + 1];
        if pairs.len() <= 64 {
            for (j, &(a, b, _)) in pairs.iter().enumerate() {
                ends[slot[a as usize] as usize].0 |= 1 << j;
                ends[slot[b as usize] as usize].1 |= 1 << j;
            }
        }
        let scorer = LineScorer {
            slot: &slot,
            weighted: &weighted,
            ends: &ends,
            weights,
            pairs,
            query,
            avg: self.avg_line_len(),
        };
        let postings = (weights.len() < 64)
            .then(|| self.postings_for(weights.iter().map(|w| w.0)))
            .flatten();
        // The buffers a pass through the postings summed in: a next pass through
        // them goes on in them, a scan gives them back.
        let met = carry.met.take();
        if let Some(p) = postings {
            let (mut b, pool, done) = met.unwrap_or_else(|| {
                let pool = self.lines.share();
                (pool.take(&self.docs), pool, 0)
            });
            debug_assert!(done <= weights.len());
            scorer.postings(p, &self.docs, &mut b, done);
            return LineScores(Held::Met(b, pool));
        }
        if let Some((b, pool, _)) = met {
            pool.give(b);
        }
        self.scan(&scorer, carry)
    }

    /// [`Corpus::line_scores`] by a scan of every line.
    fn scan(&self, scorer: &LineScorer<'_>, carry: &mut Carry) -> LineScores {
        // A scan whose weights extend the last pass's starts from its scores: a
        // memory none of whose lines holds a new term keeps them (the same terms,
        // weights, pair sums and boost: the same sums).
        let last = carry
            .scores
            .take()
            .filter(|(_, done)| *done <= scorer.weights.len());
        let done = last.as_ref().map_or(0, |(_, done)| *done);
        let (mut lines, kept) = LineScores::new(self.docs.iter(), last.map(|(s, _)| s));
        let from = if kept { done } else { 0 };
        let pair_memo = &mut carry.pairs;
        let start = Arc::clone(lines.start());
        let out = lines.all_mut();
        let total = out.len();
        // The first pass keeps each line's pair sum, the second reads it.
        let (mut fill, known) = match pair_memo {
            Some(m) => (Vec::new(), Some(m.as_slice())),
            None => (vec![0.0; total], None),
        };
        if total < PARALLEL_LINES {
            let memo = match known {
                Some(m) => Pairs::Known(m),
                None => Pairs::Fill(&mut fill),
            };
            scorer.docs(&self.docs, out, memo, from);
            if known.is_none() {
                *pair_memo = Some(fill);
            }
            return lines;
        }
        // Two halves of about the same number of lines.
        let mut acc = 0usize;
        let cut = self
            .docs
            .iter()
            .position(|d| {
                acc += d.lines.len();
                acc * 2 >= total
            })
            .map_or(self.docs.len(), |i| i + 1);
        let (first, second) = self.docs.split_at(cut);
        let at = start[cut];
        let (a, b) = out.split_at_mut(at);
        let (memo_a, memo_b) = match known {
            Some(m) => (Pairs::Known(&m[..at]), Pairs::Known(&m[at..])),
            None => {
                let (x, y) = fill.split_at_mut(at);
                (Pairs::Fill(x), Pairs::Fill(y))
            }
        };
        std::thread::scope(|s| {
            let other = s.spawn(|| scorer.docs(second, b, memo_b, from));
            scorer.docs(first, a, memo_a, from);
            if let Err(e) = other.join() {
                std::panic::resume_unwind(e)
            }
        });
        if known.is_none() {
            *pair_memo = Some(fill);
        }
        lines
    }

    /// Terms to add to a query: the most weighted terms of the best lines (not
    /// their tags'), each weighted by the line's score and its own IDF, with at most [`PRF_WEIGHT`] of
    /// its IDF (the best one; the others in proportion). Ties go to the term that
    /// sorts first, so the choice does not depend on the order ids were handed out.
    fn feedback(&self, lines: &LineScores, query: &[u32]) -> Vec<(u32, f64)> {
        // The best PRF_LINES lines, kept in a heap whose least is the first out
        // (lines are distinct, so the order is total and the choice a full sort's).
        let mut kept: BinaryHeap<Reverse<u128>> = BinaryHeap::with_capacity(PRF_LINES + 1);
        lines.each_scored(|r, l, s| {
            let key = best_key(s, r, l);
            if kept.len() < PRF_LINES {
                kept.push(Reverse(key));
            } else if let Some(mut least) = kept.peek_mut()
                && key > least.0
            {
                *least = Reverse(key);
            }
        });
        let mut ranked: Vec<(f64, (usize, usize))> =
            kept.into_iter().map(|Reverse(k)| key_parts(k)).collect();
        ranked.sort_by(by_score_desc);
        let Some(&(top, _)) = ranked.first() else {
            return Vec::new();
        };
        let mut acc: HashMap<u32, f64> = HashMap::new();
        let mut uniq: Vec<u32> = Vec::new();
        for &(s, (r, l)) in ranked.iter().take(PRF_LINES) {
            // Not the tag's terms: a turn id or a date would draw in the lines of
            // the same session or day, whatever they say.
            let (label, text) = self.docs[r].content(l);
            uniq.clear();
            uniq.extend(label.iter().chain(text));
            uniq.sort_unstable();
            uniq.dedup();
            for &t in &uniq {
                if !query.contains(&t) && self.line_df[t as usize] >= 2 {
                    *acc.entry(t).or_insert(0.0) += s / top * self.line_idf(t);
                }
            }
        }
        let mut terms: Vec<(f64, &str, u32)> = acc
            .into_iter()
            .map(|(t, w)| (w, self.vocab.terms[t as usize].as_str(), t))
            .collect();
        terms.sort_by(|a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.1.cmp(b.1))
        });
        terms.truncate(PRF_TERMS);
        let best = terms.first().map_or(1.0, |x| x.0);
        terms
            .into_iter()
            .map(|(w, _, t)| (t, PRF_WEIGHT * self.line_idf(t) * w / best))
            .collect()
    }

    /// The line scores of [`Corpus::score`]: each line's score divided by the best
    /// line's.
    pub fn line_relevance(&self, query: &str) -> LineScores {
        self.line_relevance_by(query, true)
    }

    /// [`Corpus::line_relevance`]; with `reuse`, the feedback pass of a scan starts
    /// from the first pass's scores (the same scores: tested).
    fn line_relevance_by(&self, query: &str, reuse: bool) -> LineScores {
        let seq: Vec<u32> = terms(query)
            .iter()
            .filter_map(|t| self.vocab.get(t))
            .collect();
        // In the order of the terms themselves, so that sums do not depend on the
        // order ids were handed out in.
        let mut q = seq.clone();
        q.sort_unstable_by(|a, b| {
            self.vocab.terms[*a as usize].cmp(&self.vocab.terms[*b as usize])
        });
        q.dedup();
        let mut weights: Vec<(u32, f64)> = q.iter().map(|&t| (t, self.line_idf(t))).collect();
        let pairs: Vec<(u32, u32, f64)> = seq
            .windows(2)
            .filter(|w| w[0] != w[1])
            .map(|w| {
                let idf = self.line_idf(w[0]) + self.line_idf(w[1]);
                (w[0], w[1], W_BIGRAM * idf)
            })
            .collect();
        // What the first pass leaves for the second: each line's pair sum, and
        // (through the postings) its sums over the query's terms.
        let mut carry = Carry::default();
        let mut lines = self.line_scores(&weights, &pairs, &q, &mut carry);
        let extra = self.feedback(&lines, &q);
        if !extra.is_empty() {
            lines.hand_over(&mut carry, weights.len(), reuse);
            weights.extend(extra);
            lines = self.line_scores(&weights, &pairs, &q, &mut carry);
        }
        lines.normalize();
        lines
    }
}

/// A weighted term's share of a line's score: its weight `w`, saturated by its
/// count `tf` in a line of normalization `norm`. The scan and the pass through the
/// postings both take it from here, so their sums agree bit for bit.
#[inline]
fn saturated(w: f64, tf: f64, norm: f64) -> f64 {
    w * tf * (K1 + 1.0) / (tf + norm)
}

/// Lines in a corpus from which [`Corpus::line_scores`] uses two threads.
const PARALLEL_LINES: usize = 20_000;

/// The counts (1 to this) and line lengths (below this) whose shares a pass
/// through the postings computes once per term.
const SHARE_COUNTS: usize = 4;
const SHARE_LENS: usize = 256;

/// The bit of a line's weight mask (see [`Carry`]) set when a query term is in its
/// label.
const LABEL: u64 = 1 << 63;

/// What one pass of [`Corpus::line_scores`] leaves for the next, whose weights
/// extend its own.
#[derive(Default)]
struct Carry {
    /// Each line's pair sum (a line without a query term has none, so a line the
    /// first pass left at 0 has 0).
    pairs: Option<Vec<f64>>,
    /// Through the postings: the buffers summed in (each line's sum over the
    /// weights scored so far, the weights met in it, its pair sum), their pool,
    /// and how many weights that was. A pass that extends those weights adds only
    /// the new ones' postings: the sums come out as a pass over all of them would
    /// give, the same additions in the same order.
    met: Option<(Box<Buffers>, Pool, usize)>,
    /// By a scan: the last pass's scores (before they are divided by the best), and
    /// how many weights it scored.
    scores: Option<(Vec<f64>, usize)>,
}

/// Each line's pair sum: kept by a first pass, read by the next (a line without a
/// query term has none, so a line the first pass left at 0 has 0).
enum Pairs<'a> {
    Fill(&'a mut [f64]),
    Known(&'a [f64]),
}

/// What scoring a line needs (see [`Corpus::line_scores`]).
struct LineScorer<'a> {
    slot: &'a [u32],
    /// Whether term `t` is weighted (its `slot` is not 0).
    weighted: &'a TermBits,
    /// By slot: the pairs starting with, and those ending with, its term.
    ends: &'a [(u64, u64)],
    weights: &'a [(u32, f64)],
    pairs: &'a [(u32, u32, f64)],
    query: &'a [u32],
    avg: f64,
}

impl LineScorer<'_> {
    /// BM25's length normalization of a line of `len` terms.
    #[inline]
    fn norm(&self, len: f64) -> f64 {
        K1 * (1.0 - B + B * len / self.avg)
    }

    /// Term `t`'s slot (0 when it is not weighted), looked up only for weighted
    /// terms.
    #[inline]
    fn slot_of(&self, t: u32) -> u32 {
        if self.weighted.has(t) {
            self.slot[t as usize]
        } else {
            0
        }
    }

    /// The summed weights of the pairs that occur in `text` as adjacent terms, in
    /// the order of `pairs`. A term's pairs are found on one table lookup: those
    /// starting with the term before it and ending with it.
    fn pair_sum(&self, text: &[u32]) -> f64 {
        if self.pairs.is_empty() {
            return 0.0;
        }
        if self.pairs.len() > 64 {
            return self
                .pairs
                .iter()
                .filter(|(a, b, _)| text.windows(2).any(|p| p[0] == *a && p[1] == *b))
                .map(|(_, _, w)| w)
                .sum::<f64>();
        }
        let (mut found, mut after) = (0u64, 0u64);
        for &t in text {
            let (first, second) = self.ends[self.slot_of(t) as usize];
            found |= after & second;
            after = first;
        }
        self.pairs
            .iter()
            .enumerate()
            .filter(|(j, _)| found & (1 << j) != 0)
            .map(|(_, (_, _, w))| w)
            .sum::<f64>()
    }

    /// [`LineScorer::line`] of every line, term at a time through the postings:
    /// each line adds its terms' shares in the order of `weights`, as the scan does,
    /// then its pairs and its label boost, as the scan does. Needs fewer than 64
    /// weights (a bit each in a line's mask; the top bit marks a query term in the
    /// label). `b` holds the sums of the first `done` weights (a first pass's, for
    /// a next whose weights start with the same terms; nothing when `done` is 0):
    /// only the later weights' postings are walked, and only the lines met are
    /// written (listed in `b.met`).
    fn postings(&self, p: &Postings, docs: &[DocData], b: &mut Buffers, done: usize) {
        let offsets = &b.start;
        // A post's share by its line's length and its count, for the short lines
        // most are: each value computed once per term (NaN until then) by the
        // scan's own `saturated`, so that the sums are the scan's bit for bit.
        let mut share = [f64::NAN; SHARE_COUNTS * SHARE_LENS];
        for (i, &(t, w)) in self.weights.iter().enumerate().skip(done) {
            let in_query = self.query.contains(&t);
            // Once the list is full it stays so: the term's lines need not be listed.
            let listing = b.met.whole();
            share.fill(f64::NAN);
            p.each_line(t, |post| {
                let Some((r, at)) = at(p, offsets, post) else {
                    return;
                };
                let (len, tf, in_label) = post.stats(&docs[r], t);
                let saturate =
                    |len: u32, tf: u32| saturated(w, f64::from(tf), self.norm(f64::from(len)));
                let (l, c) = (len as usize, (tf as usize).wrapping_sub(1));
                b.acc[at] += if l < SHARE_LENS && c < SHARE_COUNTS {
                    let v = &mut share[c * SHARE_LENS + l];
                    if v.is_nan() {
                        *v = saturate(len, tf);
                    }
                    *v
                } else {
                    saturate(len, tf)
                };
                if listing {
                    b.met.meet(at, r, b.mask[at] == 0);
                }
                b.mask[at] |= 1 << i;
                if in_query && in_label {
                    b.mask[at] |= LABEL;
                }
            });
        }
        // The pair sums, by the first pass (pairs are of query terms, which it
        // weighs). Only a line where a pair's second term follows its first can
        // have the pair: the positions (modulo 32) of the two terms say which lines
        // may; such a line's sum (over every pair) is taken once. A sum of 0 is
        // kept as -0.0, so that a next pair does not take it again: a line's score
        // adds its pair sum to a sum above 0, to which -0.0 adds nothing.
        if done == 0 {
            for &(x, y, _) in self.pairs {
                p.each_line(x, |post| {
                    if let Some((_, at)) = at(p, offsets, post) {
                        b.first[at] = post.bits;
                    }
                });
                p.each_line(y, |post| {
                    if let Some((r, at)) = at(p, offsets, post)
                        && b.first[at].rotate_left(1) & post.bits != 0
                        && b.pairs[at].to_bits() == 0
                    {
                        let sum = self.pair_sum(docs[r].line(at - offsets[r]).1);
                        b.pairs[at] = if sum == 0.0 { -0.0 } else { sum };
                    }
                });
                p.each_line(x, |post| {
                    if let Some((_, at)) = at(p, offsets, post) {
                        b.first[at] = 0;
                    }
                });
            }
        }
        let score = |a: f64, m: u64, pair: f64| {
            let s = a + pair;
            if m & LABEL != 0 {
                s * (1.0 + LABEL_BOOST)
            } else {
                s
            }
        };
        if b.met.whole() {
            for &(at, _) in b.met.lines() {
                let at = at as usize;
                b.scores[at] = score(b.acc[at], b.mask[at], b.pairs[at]);
            }
            return;
        }
        let lines = b.scores.iter_mut().zip(&b.acc).zip(&b.mask).zip(&b.pairs);
        for (((s, &a), &m), &pair) in lines {
            // A line without a weighted term keeps its 0.
            if m != 0 {
                *s = score(a, m, pair);
            }
        }
    }

    /// Scores the lines of `docs` into `out`, one after the other, with their pair
    /// sums kept in or read from `pairs` (the same layout). `out` holds the scores of
    /// a pass over the weights before `from` (zeros when `from` is 0): a memory none
    /// of whose lines holds a term weighted from `from` on keeps them unread.
    fn docs(&self, docs: &[DocData], out: &mut [f64], mut pairs: Pairs<'_>, from: usize) {
        // counts[s]: occurrences in the line of the term in slot s; `seen` the slots
        // met, so that only they are summed and reset.
        let mut counts = vec![0u32; self.weights.len() + 1];
        let mut seen: Vec<u32> = Vec::new();
        let mut at = 0;
        // The terms weighted from `from` on: a memory's line terms are tested in
        // them one after the other (a walk through memory, where a search of each
        // weight in them jumps about it).
        let newer;
        let fresh = if from == 0 {
            self.weighted
        } else {
            newer = TermBits::new(
                self.weighted.len(),
                self.weights[from..].iter().map(|w| w.0),
            );
            &newer
        };
        for d in docs {
            // A memory none of whose lines holds a weighted term scores 0 on every
            // line (and adds no pair): its lines are left at their zeros unread; one
            // with no newly weighted term keeps the last pass's scores.
            if !d.line_df.iter().any(|x| fresh.has(x[0])) {
                at += d.lines.len();
                continue;
            }
            // The arrays once per memory, not once per line.
            let v = d.view();
            for l in 0..v.lines.len() {
                out[at] = self.line(v, l, &mut counts, &mut seen, &mut pairs, at);
                at += 1;
            }
        }
    }

    fn line(
        &self,
        d: DocView<'_>,
        l: usize,
        counts: &mut [u32],
        seen: &mut Vec<u32>,
        pairs: &mut Pairs<'_>,
        at: usize,
    ) -> f64 {
        let (label, text) = d.line(l);
        seen.clear();
        for &t in label.iter().chain(text) {
            let s = self.slot_of(t);
            if s > 0 {
                if counts[s as usize] == 0 {
                    seen.push(s);
                }
                counts[s as usize] += 1;
            }
        }
        if seen.is_empty() {
            return 0.0;
        }
        // In slot order: the order of `weights`.
        seen.sort_unstable();
        let norm = self.norm((label.len() + text.len()) as f64);
        let mut s = 0.0;
        for &slot in seen.iter() {
            let w = self.weights[slot as usize - 1].1;
            let tf = f64::from(std::mem::take(&mut counts[slot as usize]));
            s += saturated(w, tf, norm);
        }
        s += match pairs {
            Pairs::Known(m) => m[at],
            Pairs::Fill(m) => {
                m[at] = self.pair_sum(text);
                m[at]
            }
        };
        if label.iter().any(|l| self.query.contains(l)) {
            s *= 1.0 + LABEL_BOOST;
        }
        s
    }
}

mod buffers;
mod scores;
#[cfg(test)]
mod tests;

use buffers::Buffers;
pub(crate) use buffers::Pool;
use scores::Held;
pub(super) use scores::LineScores;

/// The memory of a post and the line's place among every memory's lines (`offsets`:
/// where each memory's lines start); `None` for a memory gone, or a line past its
/// memory's (postings that do not fit the data are never read past it).
#[inline]
fn at(p: &Postings, offsets: &[usize], post: LinePost) -> Option<(usize, usize)> {
    let r = p.position(post.slot)?;
    let at = offsets[r] + post.line as usize;
    (at < offsets[r + 1]).then_some((r, at))
}
