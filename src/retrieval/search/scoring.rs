//! Memory scoring: the corpus statistics ([`Corpus`]: document and line
//! frequencies, kept up to date memory by memory), BM25F over the fields, relevance
//! blended with the whole-query phrase hit, the strength of a query's best match,
//! and the blend with salience and recency.
//!
//! Must not tokenize (the text module does) or score lines (the line scoring does).
//! Pure code: no IO, no clock.

use std::sync::OnceLock;

use crate::memory::Record;
use crate::retrieval::postings::{Frozen, Postings};
use crate::retrieval::search::line_scoring::Pool;
use crate::retrieval::search::text::phrase_hits;
use crate::retrieval::search::vocab::DocData;
use crate::retrieval::search::vocab::Vocab;
use crate::retrieval::search::{TermBits, terms};

/// BM25 term-frequency saturation.
pub(super) const K1: f64 = 1.2;
/// BM25 length normalization.
pub(super) const B: f64 = 0.75;

/// Share of relevance that comes from BM25; the rest is the whole-phrase hit.
pub(super) const W_BM25: f64 = 0.7;
pub(super) const W_PHRASE: f64 = 0.3;
/// Boosts applied to relevance: score = relevance × (BASE + W_SAL × salience + W_REC × recency).
pub(super) const BOOST_BASE: f64 = 0.8;
pub(super) const BOOST_SALIENCE: f64 = 0.15;
pub(super) const BOOST_RECENCY: f64 = 0.05;

/// The blended score of a relevant memory.
pub(crate) fn blend(relevance: f64, salience: f64, recency: f64) -> f64 {
    relevance * (BOOST_BASE + BOOST_SALIENCE * salience + BOOST_RECENCY * recency)
}

/// Term statistics of every memory and of every line of every body: what query-aware
/// context and recall need that does not depend on the query. Built from
/// [`DocData`], one per memory in the order of the records it serves; kept up to date
/// memory by memory ([`Corpus::set`], [`Corpus::insert`], [`Corpus::remove`]) by a
/// process that stays warm.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    pub(super) vocab: Vocab,
    pub(super) docs: Vec<DocData>,
    /// Number of memories containing each term (by id).
    df: Vec<u32>,
    /// Number of non-empty lines containing each term (by id).
    pub(super) line_df: Vec<u32>,
    pub(super) n_lines: usize,
    pub(super) line_tokens: usize,
    /// Term postings, for a corpus that serves many queries ([`Corpus::keep_postings`]):
    /// built on the first query.
    postings: Option<OnceLock<Postings>>,
    /// Postings saved with the search index, for a corpus that serves one call
    /// ([`Corpus::attach_saved`]).
    saved: Option<Postings>,
    /// The arrays line scoring through the postings sums in, kept between calls
    /// (all zero at rest); a new pool when the memories change.
    pub(super) lines: Pool,
}

/// Memories from which [`Counts::of`] counts on two threads.
const PARALLEL_COUNT: usize = 4096;

/// The frequencies a corpus keeps, counted over many memories at once (the search
/// index keeps those of its main file's memories, so that a load need not count
/// them again: [`Corpus::from_counted`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counts {
    /// Memories holding each term (by id).
    pub df: Vec<u32>,
    /// Non-empty lines holding each term (by id).
    pub line_df: Vec<u32>,
    pub n_lines: usize,
    pub line_tokens: usize,
}

impl Counts {
    /// The counts of `docs` over a vocabulary of `n` terms: on two threads from
    /// [`PARALLEL_COUNT`] memories, each half counted alone and the two added (sums of
    /// integers: the counts one pass gives).
    pub(crate) fn of<D: std::borrow::Borrow<DocData> + Sync>(docs: &[D], n: usize) -> Counts {
        if docs.len() < PARALLEL_COUNT {
            return Counts::one(docs, n);
        }
        let (a, b) = docs.split_at(docs.len() / 2);
        let (mut x, y) = std::thread::scope(|s| {
            let second = s.spawn(|| Counts::one(b, n));
            let first = Counts::one(a, n);
            let second = second
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            (first, second)
        });
        for (p, q) in x.df.iter_mut().zip(&y.df) {
            *p = p.saturating_add(*q);
        }
        for (p, q) in x.line_df.iter_mut().zip(&y.line_df) {
            *p = p.saturating_add(*q);
        }
        x.n_lines += y.n_lines;
        x.line_tokens += y.line_tokens;
        x
    }

    /// The counts of `docs`, on this thread.
    fn one<D: std::borrow::Borrow<DocData>>(docs: &[D], n: usize) -> Counts {
        let mut c = Counts {
            df: vec![0; n],
            line_df: vec![0; n],
            n_lines: 0,
            line_tokens: 0,
        };
        for d in docs {
            let d = d.borrow();
            for &t in &d.tf_terms {
                let x = &mut c.df[t as usize];
                *x = x.saturating_add(1);
            }
            for &[t, k] in &d.line_df {
                let x = &mut c.line_df[t as usize];
                *x = x.saturating_add(k);
            }
            c.n_lines += d.n_lines as usize;
            c.line_tokens += d.tokens.len();
        }
        c
    }
}

impl Corpus {
    /// Builds the statistics of `records`.
    pub fn new(records: &[Record]) -> Corpus {
        let mut vocab = Vocab::default();
        let docs = records.iter().map(|r| DocData::of(r, &mut vocab)).collect();
        Corpus::from_parts(vocab, docs)
    }

    /// Builds the statistics from each memory's [`DocData`] (whose ids are `vocab`'s).
    pub fn from_parts(vocab: Vocab, docs: Vec<DocData>) -> Corpus {
        let counts = Counts::of(&docs, vocab.len());
        Corpus {
            df: counts.df,
            line_df: counts.line_df,
            vocab,
            docs,
            n_lines: counts.n_lines,
            line_tokens: counts.line_tokens,
            postings: None,
            saved: None,
            lines: Pool::default(),
        }
    }

    /// The corpus of `docs` (interned in `vocab`) from the counts of other memories
    /// (`base`, over a vocabulary that `vocab` extends): `add` are the positions in
    /// `docs` of the memories `base` does not count and `sub` the memories it counts
    /// that `docs` does not hold, each once for each time (the frequencies
    /// [`Corpus::from_parts`] counts, by integer sums; tested against it).
    pub(crate) fn from_counted<'a>(
        vocab: Vocab,
        docs: Vec<DocData>,
        base: Counts,
        add: &[usize],
        sub: impl IntoIterator<Item = &'a DocData>,
    ) -> Corpus {
        let n = vocab.len();
        let mut c = Corpus {
            df: base.df,
            line_df: base.line_df,
            vocab,
            docs: Vec::new(),
            n_lines: base.n_lines,
            line_tokens: base.line_tokens,
            postings: None,
            saved: None,
            lines: Pool::default(),
        };
        c.df.resize(n, 0);
        c.line_df.resize(n, 0);
        // Added first: a count taken away is then never below what it takes.
        for &j in add {
            c.count(&docs[j], 1);
        }
        for d in sub {
            c.count(d, -1);
        }
        c.docs = docs;
        c
    }

    /// Whether this corpus's frequencies are those counting its memories anew gives.
    #[cfg(test)]
    pub(crate) fn counts_hold(&self) -> bool {
        let c = Counts::of(&self.docs, self.vocab.len());
        (c.df, c.line_df, c.n_lines, c.line_tokens)
            == (
                self.df.clone(),
                self.line_df.clone(),
                self.n_lines,
                self.line_tokens,
            )
    }

    /// The vocabulary and each memory's data, for saving.
    pub fn parts(&self) -> (&Vocab, &[DocData]) {
        (&self.vocab, &self.docs)
    }

    /// The vocabulary and each memory's data, taken out (to rebuild the corpus after
    /// some memories changed, with [`Corpus::carry`]).
    pub fn take_parts(&mut self) -> (Vocab, Vec<DocData>) {
        (
            std::mem::take(&mut self.vocab),
            std::mem::take(&mut self.docs),
        )
    }

    /// The data of a memory, interned in this corpus's vocabulary (not yet added).
    pub fn analyze(&mut self, r: &Record) -> DocData {
        DocData::of(r, &mut self.vocab)
    }

    /// Number of memories.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the corpus has no memory.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Keeps term postings from the next query on, so that a query looks only at
    /// the memories and lines that hold its terms (for a process that stays warm;
    /// the scores are the same). The term data read in place from a mapped index
    /// is copied, so that the process does not keep the index file mapped.
    pub fn keep_postings(&mut self) {
        self.saved = None;
        if self.postings.is_none() {
            self.postings = Some(OnceLock::new());
        }
        for d in &mut self.docs {
            *d = std::mem::take(d).into_owned();
        }
    }

    /// The corpus of `docs` (interned in `vocab`, which grew from this corpus's
    /// after [`Corpus::take_parts`]), where `origin[j]`, when given, is the position
    /// in this corpus of a memory whose data `docs[j]` is unchanged, and `gone` is the
    /// data of every memory of this corpus not carried. The frequencies are this
    /// corpus's less `gone` plus the new memories' (the same counts as a corpus built
    /// anew), and postings kept are carried over rather than rebuilt.
    pub fn carry(
        mut self,
        vocab: Vocab,
        docs: Vec<DocData>,
        origin: &[Option<usize>],
        gone: &[DocData],
    ) -> Corpus {
        self.vocab = vocab;
        self.saved = None;
        self.lines = Pool::default();
        for d in gone {
            self.count(d, -1);
        }
        for (d, _) in docs.iter().zip(origin).filter(|(_, o)| o.is_none()) {
            self.count(d, 1);
        }
        self.postings = self.postings.take().map(|p| match p.into_inner() {
            Some(p) => OnceLock::from(p.carry(origin, &docs)),
            None => OnceLock::new(),
        });
        self.docs = docs;
        self
    }

    /// Replaces memory `i`'s data (interned with [`Corpus::analyze`]): its share
    /// of the frequencies and its postings.
    pub fn replace(&mut self, i: usize, d: DocData) {
        let old = std::mem::take(&mut self.docs[i]);
        self.count(&old, -1);
        self.count(&d, 1);
        self.docs[i] = d;
        self.saved = None;
        self.lines = Pool::default();
        if let Some(p) = self.postings.as_mut().and_then(OnceLock::get_mut) {
            p.replace(i, &self.docs);
        }
    }

    /// Adds (`sign` 1) or takes away (-1) a memory's share of the frequencies.
    fn count(&mut self, d: &DocData, sign: i64) {
        let n = self.vocab.len();
        self.df.resize(n, 0);
        self.line_df.resize(n, 0);
        let apply = |x: &mut u32| *x = (i64::from(*x) + sign).max(0) as u32;
        for &t in &d.tf_terms {
            apply(&mut self.df[t as usize]);
        }
        for &[t, n] in &d.line_df {
            let x = &mut self.line_df[t as usize];
            *x = (i64::from(*x) + sign * i64::from(n)).max(0) as u32;
        }
        let tokens = d.tokens.len();
        if sign > 0 {
            self.n_lines += d.n_lines as usize;
            self.line_tokens += tokens;
        } else {
            self.n_lines = self.n_lines.saturating_sub(d.n_lines as usize);
            self.line_tokens = self.line_tokens.saturating_sub(tokens);
        }
    }

    fn avg_len(&self) -> f64 {
        if self.docs.is_empty() {
            return 1.0;
        }
        let total: f64 = self.docs.iter().map(|d| d.len).sum();
        (total / self.docs.len() as f64).max(1.0)
    }

    /// Inverse document frequency of a term (BM25's, floored at a small positive value
    /// so that a term present everywhere still counts a little).
    pub fn idf(&self, term: &str) -> f64 {
        let df = self.vocab.get(term).map_or(0, |t| self.df[t as usize]);
        let n = self.docs.len() as f64;
        let df = f64::from(df);
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln().max(1e-6)
    }

    /// BM25F score of every memory for the query terms.
    pub fn bm25(&self, query: &[String]) -> Vec<f64> {
        let mut unique: Vec<&String> = query.iter().collect();
        unique.sort();
        unique.dedup();
        let idfs: Vec<(Option<u32>, f64)> = unique
            .iter()
            .map(|t| (self.vocab.get(t), self.idf(t)))
            .collect();
        let avg_len = self.avg_len();
        if let Some(p) = self.postings_for(idfs.iter().filter_map(|x| x.0)) {
            // Term at a time, in the order of `idfs`: each memory adds its terms'
            // shares in the order of the scan below, so the sums are equal.
            let mut out = vec![0.0; self.docs.len()];
            let norms: Vec<f64> = self
                .docs
                .iter()
                .map(|d| K1 * (1.0 - B + B * d.len / avg_len))
                .collect();
            for (t, idf) in &idfs {
                let Some(t) = *t else { continue };
                p.each_doc(t, |slot, tf| {
                    if let Some(i) = p.position(slot) {
                        out[i] += idf * tf * (K1 + 1.0) / (tf + norms[i]);
                    }
                });
            }
            return out;
        }
        // Each memory's terms are walked once, in order, and tested in the query's
        // (a walk through memory, where a search of each query term in them jumps
        // about it); the sum then runs in the order of `idfs`, as before.
        let in_query = TermBits::new(self.vocab.len(), idfs.iter().filter_map(|x| x.0));
        let mut tfs: Vec<Option<f64>> = vec![None; idfs.len()];
        self.docs
            .iter()
            .map(|d| {
                tfs.fill(None);
                for (&t, &w) in d.tf_terms.iter().zip(d.tf_weights.iter()) {
                    if in_query.has(t)
                        && let Some(k) = idfs.iter().position(|(u, _)| *u == Some(t))
                    {
                        tfs[k] = Some(w);
                    }
                }
                let norm = K1 * (1.0 - B + B * d.len / avg_len);
                idfs.iter()
                    .zip(&tfs)
                    .map(|((_, idf), tf)| match *tf {
                        Some(tf) => idf * tf * (K1 + 1.0) / (tf + norm),
                        None => 0.0,
                    })
                    .sum()
            })
            .collect()
    }

    /// Relevance of every memory to a query, in [0, 1]; 0 means "not a hit": BM25F
    /// scaled by the best memory's, blended with whether the memory contains the
    /// whole query. `records` must be the records the corpus serves.
    pub fn relevance(&self, records: &[Record], query: &str) -> Vec<f64> {
        self.relevance_and_strength(records, query).0
    }

    /// [`Corpus::relevance`], and how much of the query the best memory explains:
    /// its BM25F score as a share of the most the query's known terms can give
    /// (each term's IDF × (k1 + 1), what it gives at any frequency short of
    /// infinite), in [0, 1].
    pub fn relevance_and_strength(&self, records: &[Record], query: &str) -> (Vec<f64>, f64) {
        let q_terms = terms(query);
        let bm25 = self.bm25(&q_terms);
        let max = bm25.iter().cloned().fold(0.0_f64, f64::max);
        // Terms some memory holds (the vocabulary keeps the terms of memories gone).
        let mut known: Vec<&String> = q_terms
            .iter()
            .filter(|t| self.vocab.get(t).is_some_and(|id| self.df[id as usize] > 0))
            .collect();
        known.sort();
        known.dedup();
        let most: f64 = known.iter().map(|t| self.idf(t) * (K1 + 1.0)).sum();
        let strength = if most > 0.0 {
            (max / most).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let q_lower = query.trim().to_lowercase();
        // A memory that contains the query contains every word of it that has a
        // separator on both sides as a whole term: memories without one of those
        // terms are not searched (exact for ASCII queries; the others are searched).
        let inner: Option<Vec<u32>> = if q_lower.is_ascii() {
            let segments: Vec<&str> = q_lower.split(|c: char| !c.is_alphanumeric()).collect();
            let mut ids = Vec::new();
            let mut possible = true;
            for seg in segments
                .iter()
                .skip(1)
                .take(segments.len().saturating_sub(2))
            {
                if let Some(t) = terms(seg).first() {
                    match self.vocab.get(t) {
                        Some(id) => ids.push(id),
                        None => possible = false,
                    }
                }
            }
            possible.then_some(ids)
        } else {
            Some(Vec::new())
        };
        let mut hits = self.may_contain(inner.as_deref());
        phrase_hits(records, &mut hits, &q_lower);
        let rel = bm25
            .into_iter()
            .zip(hits)
            .take(records.len())
            .map(|(s, hit)| {
                let lexical = if max > 0.0 { s / max } else { 0.0 };
                W_BM25 * lexical + if hit { W_PHRASE } else { 0.0 }
            })
            .collect();
        (rel, strength)
    }

    /// Whether each memory holds every term of `inner` (`None`: none may hold the
    /// query). With postings, only the memories on the shortest of the terms' lists are
    /// looked at; the answer is the scan's.
    fn may_contain(&self, inner: Option<&[u32]>) -> Vec<bool> {
        let Some(ids) = inner else {
            return vec![false; self.docs.len()];
        };
        // The rarest term first: most memories lack it, and are done after one
        // lookup (the answer does not depend on the order).
        let mut ids = ids.to_vec();
        ids.sort_by_key(|&t| (self.df.get(t as usize).copied().unwrap_or(0), t));
        ids.dedup();
        let holds_all = |d: &DocData| ids.iter().all(|&t| d.tf(t).is_some());
        let shortest = self.postings_for(ids.iter().copied()).and_then(|p| {
            let t = ids.iter().copied().min_by_key(|&t| p.doc_count(t))?;
            Some((p, t))
        });
        match shortest {
            Some((p, t)) => {
                let mut may = vec![false; self.docs.len()];
                p.each_doc(t, |slot, _| {
                    if let Some(i) = p.position(slot) {
                        may[i] = holds_all(&self.docs[i]);
                    }
                });
                may
            }
            None => self.docs.iter().map(holds_all).collect(),
        }
    }

    /// The postings, when kept (built on the first call), else those saved with
    /// the search index when they were attached.
    pub(super) fn postings(&self) -> Option<&Postings> {
        match &self.postings {
            Some(p) => Some(p.get_or_init(|| Postings::new(&self.docs))),
            None => self.saved.as_ref(),
        }
    }

    /// [`Corpus::postings`] when the lists of `terms` are whole (the saved ones
    /// checked against their CRC): else a query scans, with the same scores.
    pub(super) fn postings_for(&self, terms: impl IntoIterator<Item = u32>) -> Option<&Postings> {
        self.postings().filter(|p| p.check(terms))
    }

    /// Answers queries through the postings saved with the search index's main
    /// file (`origins[j]`: the main file's entry whose data memory `j` has), for a
    /// corpus that serves one call: it reads only its terms' postings, not every
    /// memory's data (unless more than a quarter of the memories are not the main
    /// file's: then it scans). Dropped by [`Corpus::keep_postings`] (a warm process builds
    /// its own, and does not keep the index mapped).
    pub(crate) fn attach_saved(&mut self, frozen: Frozen, origins: &[Option<usize>]) {
        // The memories the saved postings do not hold get theirs built for the
        // call, which costs a few scans each: past a quarter of the corpus, scan.
        let slots = frozen.slots() as usize;
        let fresh = origins
            .iter()
            .filter(|o| o.is_none_or(|s| s >= slots))
            .count();
        if origins.len() == self.docs.len() && fresh <= self.docs.len() / 4 {
            self.saved = Some(Postings::from_frozen(frozen, origins, &self.docs));
        }
    }

    /// Whether the corpus answers through postings saved with the search index.
    #[cfg(test)]
    pub(crate) fn has_saved_postings(&self) -> bool {
        self.saved.is_some()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::retrieval::search::tests::numbered;
    use crate::retrieval::search::tests::random_records;
    use crate::retrieval::search::tests::with_postings;
    use crate::retrieval::search::tests::{changed, data_of};
    use crate::retrieval::search::text::PARALLEL_PHRASE;

    #[test]
    fn counts_on_two_threads_are_the_counts_of_one_memory_at_a_time() {
        let words = ["kiwi", "parrot", "garden", "work", "hike", "tea", "rain"];
        let records: Vec<Record> = (0..PARALLEL_COUNT + 37)
            .map(|i| {
                let mut r = numbered(i);
                r.body = (0..1 + i % 5)
                    .map(|l| format!("{} {} line {l}", words[(i + l) % 7], words[i * l % 7]))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .into();
                r
            })
            .collect();
        let c = Corpus::new(&records);
        // One memory at a time, as a warm process adds them.
        let mut one = Corpus {
            vocab: c.vocab.clone(),
            ..Corpus::default()
        };
        for d in &c.docs {
            one.count(d, 1);
        }
        assert!(c.docs.len() >= PARALLEL_COUNT);
        assert_eq!(
            (&c.df, &c.line_df, c.n_lines, c.line_tokens),
            (&one.df, &one.line_df, one.n_lines, one.line_tokens)
        );
        assert!(c.line_tokens > 0 && c.df.iter().any(|&n| n as usize > PARALLEL_COUNT / 2));
    }

    #[test]
    fn the_phrase_test_on_two_threads_finds_what_one_memory_at_a_time_does() {
        // Memories holding the phrase in each field, across case and with the two
        // characters that lowercase to ASCII, spread over both halves.
        const PHRASES: [&str; 4] = [
            "Parrot Kiwi",
            "parrot kiwi",
            "PARROT \u{212A}IWİ",
            "parrot  kiwi",
        ];
        let records: Vec<Record> = (0..2 * PARALLEL_PHRASE + 11)
            .map(|i| {
                let mut r = numbered(i);
                let phrase = PHRASES[i % 4];
                match i % 7 {
                    0 => r.meta.name = format!("a {phrase}"),
                    1 => r.meta.description = format!("{phrase}!"),
                    2 | 3 => r.body = format!("line\nthe {phrase} sings").into(),
                    _ => r.body = "parrot\nkiwi".into(),
                }
                r
            })
            .collect();
        for q in "parrot kiwi,kiwi,rot ki,parrot kiwi sings,zebra,".split(',') {
            let one: Vec<bool> = records
                .iter()
                .map(|r| {
                    [&r.meta.name, &r.meta.description, &*r.body]
                        .iter()
                        .any(|t| t.to_lowercase().contains(q))
                })
                .collect();
            let mut all = vec![true; records.len()];
            phrase_hits(&records, &mut all, q);
            let half = records.len() / 2;
            if q.is_empty() {
                assert!(all.iter().all(|&h| !h), "an empty phrase is no hit");
                continue;
            }
            assert_eq!(all, one, "{q}");
            if q != "zebra" {
                assert!(one[..half].contains(&true) && one[half..].contains(&true));
                assert!(q == "kiwi" || one.contains(&false), "{q}");
            }
            // Only the memories that may hold it are tested: the rest stay out.
            let mut every_other: Vec<bool> = (0..records.len()).map(|i| i % 2 == 0).collect();
            phrase_hits(&records, &mut every_other, q);
            let expected: Vec<bool> = one
                .iter()
                .enumerate()
                .map(|(i, &h)| h && i % 2 == 0)
                .collect();
            assert_eq!(every_other, expected, "{q}");
        }
        assert!(
            records.len() / 2 >= PARALLEL_PHRASE,
            "both halves on two threads"
        );
    }

    #[test]
    fn strength_is_the_share_of_the_query_the_best_memory_explains() {
        let mut records: Vec<Record> = (0..4).map(numbered).collect();
        records[0].body = "a parrot called Kiwi".into();
        records[1].body = "work, work and more work".into();
        records[2].body = "work".into();
        records[3].body = "the garden".into();
        let mut c = Corpus::new(&records);
        let strength = |q: &str| c.relevance_and_strength(&records, q).1;
        let (rel, s) = c.relevance_and_strength(&records, "parrot");
        assert_eq!(rel, c.relevance(&records, "parrot"), "the same relevance");
        assert!(s > 0.0 && s < 1.0, "{s}");
        // A second term the best memory does not hold: less of the query explained.
        assert!(strength("parrot work") < s);
        // Words no memory holds are no part of what could be explained.
        assert_eq!(strength("parrot zebra"), s);
        assert_eq!(strength("zebra"), 0.0);
        // More of the term, more explained; never past all of it.
        assert!(strength("work") > strength("garden"));
        assert!(strength("work") < 1.0);
        // A corpus that outlived a memory (its terms stay in the vocabulary) gives
        // what a new corpus of the memories left gives.
        let (vocab, mut docs) = c.take_parts();
        docs.remove(0);
        let carried = Corpus::from_parts(vocab, docs);
        let left = &records[1..];
        let fresh = Corpus::new(left);
        for q in ["parrot work", "kiwi garden", "parrot"] {
            assert_eq!(
                carried.relevance_and_strength(left, q),
                fresh.relevance_and_strength(left, q),
                "{q}"
            );
        }
    }

    /// Asserts that two corpora of `records` give every query the same scores.
    pub(in crate::retrieval::search) fn same_scores(
        a: &Corpus,
        b: &Corpus,
        records: &[Record],
        queries: &[&str],
        what: &str,
    ) {
        for q in queries {
            assert_eq!(a.score(records, q), b.score(records, q), "{what}, {q}");
        }
    }

    #[test]
    fn postings_score_as_the_scan() {
        // spec/ranking.md#postings: the same scores, bit for bit, through postings.
        let queries = [
            "cello",
            "Ana cello tempo",
            "knee physio tempo run",
            "what did Ben say about the morning coffee in Paris",
            "flat white",
            "nothing matches",
        ];
        for seed in 1..=12 {
            let records = random_records(seed, 40);
            let mut kept = with_postings(&records);
            let what = format!("seed {seed}");
            same_scores(&Corpus::new(&records), &kept, &records, &queries, &what);
            // Queries that some memory holds whole (the phrase part of relevance,
            // whose candidates the postings find).
            let phrases: Vec<String> = records
                .iter()
                .flat_map(|r| r.body.lines())
                .filter_map(|l| {
                    let w: Vec<&str> = l.split(' ').filter(|w| !w.ends_with(':')).collect();
                    (w.len() >= 5).then(|| w[1..5].join(" "))
                })
                .take(8)
                .collect();
            assert!(!phrases.is_empty(), "{what}");
            let phrases: Vec<&str> = phrases.iter().map(String::as_str).collect();
            same_scores(&Corpus::new(&records), &kept, &records, &phrases, &what);
            // A corpus carried over after changes scores as a new one.
            let (records2, origin) = changed(seed, &records, 10);
            let (mut vocab, old) = kept.take_parts();
            let docs = data_of(&records2, &origin, &old, &mut vocab);
            let gone: Vec<DocData> = (0..old.len())
                .filter(|i| !origin.contains(&Some(*i)))
                .map(|i| old[i].clone())
                .collect();
            let counted = Corpus::from_parts(vocab.clone(), docs.clone());
            let carried = kept.carry(vocab, docs, &origin, &gone);
            // The same frequencies as counting anew.
            assert_eq!(
                (
                    &carried.df,
                    &carried.line_df,
                    carried.n_lines,
                    carried.line_tokens
                ),
                (
                    &counted.df,
                    &counted.line_df,
                    counted.n_lines,
                    counted.line_tokens
                )
            );
            let fresh = Corpus::new(&records2);
            same_scores(
                &fresh,
                &carried,
                &records2,
                &queries,
                &format!("carried, {what}"),
            );
            // A memory replaced where it is scores as in a new corpus too.
            let mut replaced = carried;
            let mut records3 = records2.clone();
            let at = seed as usize % records3.len();
            records3[at] = random_records(seed + 200, 1).remove(0);
            let d = replaced.analyze(&records3[at]);
            replaced.replace(at, d);
            let fresh = Corpus::new(&records3);
            same_scores(
                &fresh,
                &replaced,
                &records3,
                &queries,
                &format!("replaced, {what}"),
            );
        }
    }

    #[test]
    fn postings_of_huge_lines() {
        // A line of more terms, and a term counted more often, than postings hold in
        // 16 bits: looked up in the memory's data, same scores.
        let mut records = random_records(7, 5);
        records[2].body = (format!("Ana: {}\nknee tempo", "cello tempo ".repeat(40_000))).into();
        records[3].body = (format!("{}knee", "zebra ".repeat(70_000))).into();
        let queries = ["cello tempo", "Ana cello", "zebra knee", "knee tempo"];
        same_scores(
            &Corpus::new(&records),
            &with_postings(&records),
            &records,
            &queries,
            "huge",
        );
    }
}
