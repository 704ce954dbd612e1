//! Relevance: tokenizing, stemming, BM25F over name, description, tags and body, and
//! line-level scores for query-aware context.
//!
//! `recall` and query-aware `context` rank by relevance first and use salience and
//! recency as bounded boosts (spec/ranking.md explains the blend and its weights).
//! Every memory whose name, description or body contains the whole query
//! (case-insensitive) is a hit, whatever its BM25 score. [`Corpus`] scores every body
//! line as a passage of its own (line-level IDF, label boost, bigrams, one round of
//! pseudo-relevance feedback), for choosing excerpts. Pure code: no IO, no clock.

use foldhash::{HashMap, HashMapExt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

use crate::memory::Record;
use crate::retrieval::postings::{LinePost, Postings, Terms};

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalization.
pub const B: f64 = 0.75;
/// Field weights: a term in the name counts three body occurrences.
pub const W_NAME: f64 = 3.0;
pub const W_DESCRIPTION: f64 = 2.0;
pub const W_TAGS: f64 = 2.0;
pub const W_BODY: f64 = 1.0;
/// Share of relevance that comes from BM25; the rest is the whole-phrase hit.
pub const W_BM25: f64 = 0.7;
pub const W_PHRASE: f64 = 0.3;
/// Boosts applied to relevance: score = relevance × (BASE + W_SAL × salience + W_REC × recency).
pub const BOOST_BASE: f64 = 0.8;
pub const BOOST_SALIENCE: f64 = 0.15;
pub const BOOST_RECENCY: f64 = 0.05;

const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have",
    "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of",
    "on", "or", "our", "she", "so", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "too", "us", "was", "we", "were", "what", "when", "where",
    "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// The maximal runs of alphanumeric characters of `text` (the non-empty pieces of
/// `text.split(|c: char| !c.is_alphanumeric())`), with ASCII tested byte by byte.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        let mut start = None;
        while i < b.len() {
            let (alnum, width) = if b[i].is_ascii() {
                (b[i].is_ascii_alphanumeric(), 1)
            } else {
                let c = text[i..].chars().next().unwrap_or_default();
                (c.is_alphanumeric(), c.len_utf8())
            };
            match (alnum, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    let word = &text[s..i];
                    i += width;
                    return Some(word);
                }
                _ => {}
            }
            i += width;
        }
        start.map(|s| &text[s..])
    })
}

/// The length of the longest stop word, in bytes.
const STOPWORD_MAX_LEN: usize = 5;

/// Light English stemming: folds plurals and common verb endings so that `runs`,
/// `running` and `run` meet. Applied identically to documents and queries, so it
/// only needs to be consistent, not linguistically perfect.
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() {
        return word.to_string();
    }
    let plural = strip_plural(word);
    strip_verb(plural)
}

fn strip_plural(w: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if let Some(s) = w.strip_suffix("ies").filter(|s| s.len() >= 2) {
        return Cow::Owned(format!("{s}y"));
    }
    if let Some(s) = w.strip_suffix("sses") {
        return Cow::Owned(format!("{s}ss"));
    }
    if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        return Cow::Borrowed(w);
    }
    if let Some(s) = w.strip_suffix("es").filter(|s| {
        s.len() >= 3 && (s.ends_with(['s', 'x', 'z']) || s.ends_with("ch") || s.ends_with("sh"))
    }) {
        return Cow::Borrowed(s);
    }
    match w.strip_suffix('s').filter(|s| s.len() >= 3) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Borrowed(w),
    }
}

fn strip_verb(w: std::borrow::Cow<'_, str>) -> String {
    // A doubled final consonant left by the suffix is undone: running -> runn -> run.
    let undouble = |s: &str| -> String {
        let b = s.as_bytes();
        let n = b.len();
        if n >= 3 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z') {
            s[..n - 1].to_string()
        } else {
            s.to_string()
        }
    };
    for suffix in ["ing", "ed"] {
        if let Some(s) = w.strip_suffix(suffix).filter(|s| s.len() >= 3) {
            return undouble(s);
        }
    }
    if let Some(s) = w.strip_suffix("ly").filter(|s| s.len() >= 3) {
        return s.to_string();
    }
    // A final silent `e` goes too, so that `hike` meets `hiking` (both `hik`) and
    // `dance` meets `dancing`.
    if let Some(s) = w
        .strip_suffix('e')
        .filter(|s| s.len() >= 3 && !s.ends_with('e'))
    {
        return s.to_string();
    }
    w.into_owned()
}

/// Splits text into lowercase, stemmed terms, without stopwords.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lower = String::new();
    for raw in words(text) {
        // ASCII lowercases in place (what `to_lowercase` does to ASCII).
        lower.clear();
        if raw.is_ascii() {
            lower.push_str(raw);
            lower.make_ascii_lowercase();
        } else {
            lower.push_str(&raw.to_lowercase());
        }
        if lower.len() <= STOPWORD_MAX_LEN && STOPWORDS.binary_search(&lower.as_str()).is_ok() {
            continue;
        }
        let short = if lower.is_ascii() {
            lower.len() < 2
        } else {
            lower.chars().count() < 2
        };
        if short && !lower.chars().all(|c| c.is_numeric()) {
            continue;
        }
        out.push(stem(&lower));
    }
    out
}

/// A vocabulary: every term a corpus has met, by id. Ids are handed out in order of
/// first appearance and never reused, so a vocabulary saved with term ids (the
/// search index under `.memdir/cache/`) can grow as memories change.
#[derive(Debug, Clone, Default)]
pub struct Vocab {
    ids: HashMap<String, u32>,
    terms: Vec<String>,
}

impl Vocab {
    /// A vocabulary of `terms`, by position; `None` when a term repeats.
    pub fn from_terms(terms: Vec<String>) -> Option<Vocab> {
        let mut ids = HashMap::with_capacity(terms.len());
        for (i, t) in terms.iter().enumerate() {
            if ids.insert(t.clone(), i as u32).is_some() {
                return None;
            }
        }
        Some(Vocab { ids, terms })
    }

    /// Every term, by id.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Number of terms.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether the vocabulary has no term.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The id of a term, if known.
    pub fn get(&self, term: &str) -> Option<u32> {
        self.ids.get(term).copied()
    }

    /// The id of a term, added when new.
    pub fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.terms.len() as u32;
        self.terms.push(term.to_string());
        self.ids.insert(term.to_string(), id);
        id
    }
}

/// What one memory brings to a [`Corpus`], in term ids of a [`Vocab`]: the weighted
/// term frequencies of its fields (BM25F) and the terms of every body line. It
/// depends only on the memory's text, so it is computed once per content and kept in
/// the search index under `.memdir/cache/`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocData {
    /// Weighted term frequency over the fields, by term id, ascending.
    pub tf: Vec<(u32, f64)>,
    /// Weighted length.
    pub len: f64,
    /// The terms of every body line, one line after the other; a line's label terms
    /// come first, then its tag's ([`split_tag`]), then the rest.
    pub tokens: Vec<u32>,
    /// One entry per body line (`str::lines` of the body, blank ones included): where
    /// its terms end in `tokens`, how many of them are its label and how many its tag.
    pub lines: Vec<(u32, u32, u32)>,
    /// For each term of the body, by id ascending: how many lines contain it.
    pub line_df: Vec<(u32, u32)>,
    /// Lines with at least one term.
    pub n_lines: u32,
}

/// A memory's terms as text, in the order [`DocData::of`] interns them: the part of
/// the analysis that needs no vocabulary, so that many memories can be analyzed on
/// several threads and interned after, in order, to the same ids.
#[derive(Debug, Clone, Default)]
pub struct Analyzed {
    /// Each field's terms with the field's weight: name, description, each tag, body.
    fields: Vec<(Vec<String>, f64)>,
    /// Each body line's terms (its label's first, then its tag's), how many are the
    /// label's and how many the tag's.
    lines: Vec<(Vec<String>, usize, usize)>,
}

impl Analyzed {
    pub fn of(r: &Record) -> Analyzed {
        let mut fields = vec![
            (terms(&r.meta.name), W_NAME),
            (terms(&r.meta.description), W_DESCRIPTION),
        ];
        for t in &r.meta.tags {
            fields.push((terms(t), W_TAGS));
        }
        fields.push((terms(&r.body), W_BODY));
        let lines = r
            .body
            .lines()
            .map(|line| match split_label(line) {
                Some((before, label, after)) => {
                    let mut t = terms(label);
                    let n = t.len();
                    t.extend(terms(before));
                    let tag = t.len() - n;
                    t.extend(terms(after));
                    (t, n, tag)
                }
                None => {
                    let (before, after) = split_tag(line);
                    let mut t = terms(before);
                    let tag = t.len();
                    t.extend(terms(after));
                    (t, 0, tag)
                }
            })
            .collect();
        Analyzed { fields, lines }
    }
}

impl DocData {
    /// The terms of a memory, interned in `vocab`.
    pub fn of(r: &Record, vocab: &mut Vocab) -> DocData {
        DocData::intern(&Analyzed::of(r), vocab)
    }

    /// An analyzed memory's terms, interned in `vocab` in the order they were found.
    pub fn intern(a: &Analyzed, vocab: &mut Vocab) -> DocData {
        let mut d = DocData::default();
        let mut tf: HashMap<u32, f64> = HashMap::new();
        let mut len = 0.0;
        for (ts, weight) in &a.fields {
            for t in ts {
                *tf.entry(vocab.intern(t)).or_insert(0.0) += weight;
                len += weight;
            }
        }
        d.len = len;
        d.tf = tf.into_iter().collect();
        d.tf.sort_unstable_by_key(|x| x.0);
        for (ts, label, tag) in &a.lines {
            d.tokens.extend(ts.iter().map(|t| vocab.intern(t)));
            d.lines
                .push((d.tokens.len() as u32, *label as u32, *tag as u32));
        }
        d.count_lines();
        d
    }

    /// Fills `line_df` and `n_lines` from the lines.
    fn count_lines(&mut self) {
        let mut df: HashMap<u32, u32> = HashMap::new();
        let mut uniq: Vec<u32> = Vec::new();
        let mut n_lines = 0;
        for l in 0..self.lines.len() {
            let (label, text) = self.line(l);
            if label.is_empty() && text.is_empty() {
                continue;
            }
            n_lines += 1;
            uniq.clear();
            uniq.extend(label.iter().chain(text));
            uniq.sort_unstable();
            uniq.dedup();
            for &t in &uniq {
                *df.entry(t).or_insert(0) += 1;
            }
        }
        self.n_lines = n_lines;
        self.line_df = df.into_iter().collect();
        self.line_df.sort_unstable();
    }

    /// The weighted frequency of a term id in the fields.
    pub fn tf(&self, term: u32) -> Option<f64> {
        self.tf
            .binary_search_by_key(&term, |x| x.0)
            .ok()
            .map(|i| self.tf[i].1)
    }

    /// Line `l`: its label terms and its other terms (its tag's first).
    #[inline]
    fn line(&self, l: usize) -> (&[u32], &[u32]) {
        let start = if l == 0 {
            0
        } else {
            self.lines[l - 1].0 as usize
        };
        let (end, label, _) = self.lines[l];
        let all = &self.tokens[start..end as usize];
        all.split_at(label as usize)
    }

    /// Line `l`'s terms without its tag's: its label's and what it says.
    fn content(&self, l: usize) -> (&[u32], &[u32]) {
        let (label, text) = self.line(l);
        (label, &text[self.lines[l].2 as usize..])
    }

    /// Whether the data is consistent (offsets in order and in range, ids below
    /// `vocab_len`): a check for data read back from a cache.
    pub fn is_valid(&self, vocab_len: usize) -> bool {
        let mut prev = 0u32;
        for &(end, label, tag) in &self.lines {
            if end < prev
                || end as usize > self.tokens.len()
                || u64::from(label) + u64::from(tag) > u64::from(end - prev)
            {
                return false;
            }
            prev = end;
        }
        self.tf.windows(2).all(|w| w[0].0 < w[1].0)
            && self.tf.iter().all(|x| (x.0 as usize) < vocab_len)
            && self.tokens.iter().all(|&t| (t as usize) < vocab_len)
            && self.line_df.iter().all(|x| (x.0 as usize) < vocab_len)
            && self.n_lines as usize <= self.lines.len()
    }
}

impl Terms for DocData {
    fn fields(&self) -> &[(u32, f64)] {
        &self.tf
    }

    fn line_count(&self) -> usize {
        self.lines.len()
    }

    fn line(&self, l: usize) -> (&[u32], &[u32]) {
        DocData::line(self, l)
    }
}

/// Whether the memory contains the whole query, case-insensitively, in its name,
/// description or body.
pub fn phrase_hit(r: &Record, query_lower: &str) -> bool {
    contains_lower(&r.meta.name, query_lower)
        || contains_lower(&r.meta.description, query_lower)
        || contains_lower(&r.body, query_lower)
}

fn contains_lower(hay: &str, needle_lower: &str) -> bool {
    if hay.is_ascii() && needle_lower.is_ascii() {
        // Fast path without allocating a lowercase copy of the body: jump to each
        // occurrence of the first byte in either case, then compare.
        let (h, n) = (hay.as_bytes(), needle_lower.as_bytes());
        let Some(&first) = n.first() else {
            return true;
        };
        if h.len() < n.len() {
            return false;
        }
        let last = h.len() - n.len();
        return memchr::memchr2_iter(first, first.to_ascii_uppercase(), &h[..=last])
            .any(|i| h[i..i + n.len()].eq_ignore_ascii_case(n));
    }
    hay.to_lowercase().contains(needle_lower)
}

/// The blended score of a relevant memory.
pub fn blend(relevance: f64, salience: f64, recency: f64) -> f64 {
    relevance * (BOOST_BASE + BOOST_SALIENCE * salience + BOOST_RECENCY * recency)
}

/// Line scores: a line whose label (`Caroline` in `[D3:5] Caroline: …`) is a query
/// term scores this much more (× 1.5): in a transcript, what a person said answers a
/// question about that person.
pub const LABEL_BOOST: f64 = 0.5;
/// Two query terms next to each other in the query and in a line add this share of
/// their IDFs.
pub const W_BIGRAM: f64 = 0.5;
/// Pseudo-relevance feedback: the best this many lines...
pub const PRF_LINES: usize = 10;
/// ...give their this many most weighted terms (not in the query, in at least two
/// lines)...
pub const PRF_TERMS: usize = 10;
/// ...added to the query with at most this share of their IDF.
pub const PRF_WEIGHT: f64 = 0.2;

/// Term statistics of every memory and of every line of every body: what query-aware
/// context and recall need that does not depend on the query. Built from
/// [`DocData`], one per memory in the order of the records it serves; kept up to date
/// memory by memory ([`Corpus::set`], [`Corpus::insert`], [`Corpus::remove`]) by a
/// process that stays warm.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    vocab: Vocab,
    docs: Vec<DocData>,
    /// Number of memories containing each term (by id).
    df: Vec<u32>,
    /// Number of non-empty lines containing each term (by id).
    line_df: Vec<u32>,
    n_lines: usize,
    line_tokens: usize,
    /// Term postings, for a corpus that serves many queries ([`Corpus::keep_postings`]):
    /// built on the first query.
    postings: Option<OnceLock<Postings>>,
}

/// Relevance of memories and of their lines to one query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryScores {
    /// Relevance of each memory, as [`relevance`] computes it: 0 means "not a hit".
    pub memory: Vec<f64>,
    /// How much weight the memories' relevance has against the lines' own scores.
    pub prior: f64,
    /// `lines.of(r)[l]`: score of line `l` of memory `r` as a passage of its own
    /// (BM25 with line-level IDF, label boost, bigrams, feedback terms), divided by the
    /// best line's score, so the best line has 1 and a line without a query term 0.
    pub lines: LineScores,
}

/// A score for every line of every memory, one memory after the other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineScores {
    scores: Vec<f64>,
    /// Where each memory's lines start in `scores`, and the end.
    start: Vec<usize>,
}

impl LineScores {
    /// All zero, for memories of these numbers of lines.
    fn zeros<'a>(lines: impl Iterator<Item = &'a DocData>) -> LineScores {
        let mut start = vec![0];
        let mut total = 0;
        for d in lines {
            total += d.lines.len();
            start.push(total);
        }
        LineScores {
            scores: vec![0.0; total],
            start,
        }
    }

    /// Lines of every memory.
    pub fn total(&self) -> usize {
        self.scores.len()
    }

    /// The scores of memory `r`'s lines.
    pub fn of(&self, r: usize) -> &[f64] {
        &self.scores[self.start[r]..self.start[r + 1]]
    }

    /// Number of memories.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Whether there is no memory.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each memory's scores, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[f64]> {
        self.start.windows(2).map(|w| &self.scores[w[0]..w[1]])
    }
}

/// Splits off a line's list marker and tag: a bracketed word of at most 20
/// characters at its start (`[D3:5]`, `[2026-03-01]`, `[09:30]`), which says where
/// or when the line is, not what it says. Returns the marker and tag (empty when
/// there is neither) and the rest.
pub fn split_tag(line: &str) -> (&str, &str) {
    let t = line.trim_start();
    let t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .unwrap_or(t);
    let t = match t.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((tag, rest)) if tag.chars().count() <= 20 => rest,
        _ => t,
    };
    line.split_at(line.len() - t.len())
}

/// Finds a line's label: `Name` in `Name: text`, optionally after a list marker or a
/// tag ([`split_tag`]: `[D3:5] Name: text`). A label is one to three words of letters,
/// digits, spaces, `-`, `_`, `'` or `.` before the first `: `, of at most 40
/// characters. Returns the text before the label, the label and the text after it.
pub fn split_label(line: &str) -> Option<(&str, &str, &str)> {
    let (_, t) = split_tag(line);
    let (label, _) = t.split_once(": ")?;
    let ok = (1..=3).contains(&label.split_whitespace().count())
        && label.chars().count() <= 40
        && label
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '\'' | '.'));
    if !ok {
        return None;
    }
    let start = line.len() - t.len();
    let end = start + label.len();
    Some((&line[..start], label, &line[end..]))
}

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
    /// Builds the statistics of `records`.
    pub fn new(records: &[Record]) -> Corpus {
        let mut vocab = Vocab::default();
        let docs = records.iter().map(|r| DocData::of(r, &mut vocab)).collect();
        Corpus::from_parts(vocab, docs)
    }

    /// Builds the statistics from each memory's [`DocData`] (whose ids are `vocab`'s).
    pub fn from_parts(vocab: Vocab, docs: Vec<DocData>) -> Corpus {
        let mut c = Corpus {
            df: vec![0; vocab.len()],
            line_df: vec![0; vocab.len()],
            vocab,
            docs: Vec::with_capacity(docs.len()),
            n_lines: 0,
            line_tokens: 0,
            postings: None,
        };
        for d in docs {
            c.count(&d, 1);
            c.docs.push(d);
        }
        c
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
    /// the scores are the same).
    pub fn keep_postings(&mut self) {
        if self.postings.is_none() {
            self.postings = Some(OnceLock::new());
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
        for &(t, _) in &d.tf {
            apply(&mut self.df[t as usize]);
        }
        for &(t, n) in &d.line_df {
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

    fn avg_line_len(&self) -> f64 {
        if self.n_lines == 0 {
            1.0
        } else {
            (self.line_tokens as f64 / self.n_lines as f64).max(1.0)
        }
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
        if let Some(p) = self.postings() {
            // Term at a time, in the order of `idfs`: each memory adds its terms'
            // shares in the order of the scan below, so the sums are equal.
            let mut out = vec![0.0; self.docs.len()];
            let norms: Vec<f64> = self
                .docs
                .iter()
                .map(|d| K1 * (1.0 - B + B * d.len / avg_len))
                .collect();
            for (t, idf) in &idfs {
                let Some(list) = t.and_then(|t| p.docs.get(t as usize)) else {
                    continue;
                };
                for &(slot, tf) in list {
                    let Some(i) = p.position(slot) else { continue };
                    out[i] += idf * tf * (K1 + 1.0) / (tf + norms[i]);
                }
            }
            return out;
        }
        self.docs
            .iter()
            .map(|d| {
                let norm = K1 * (1.0 - B + B * d.len / avg_len);
                idfs.iter()
                    .map(|(t, idf)| match t.and_then(|t| d.tf(t)) {
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
        let rel = records
            .iter()
            .zip(bm25)
            .zip(&self.docs)
            .map(|((r, s), d)| {
                let lexical = if max > 0.0 { s / max } else { 0.0 };
                let may = inner
                    .as_ref()
                    .is_some_and(|ids| ids.iter().all(|&t| d.tf(t).is_some()));
                let phrase = if !q_lower.is_empty() && may && phrase_hit(r, &q_lower) {
                    1.0
                } else {
                    0.0
                };
                W_BM25 * lexical + W_PHRASE * phrase
            })
            .collect();
        (rel, strength)
    }

    /// The postings, when kept (built on the first call).
    fn postings(&self) -> Option<&Postings> {
        self.postings
            .as_ref()
            .map(|p| p.get_or_init(|| Postings::new(&self.docs)))
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
        pair_memo: &mut Option<Vec<f64>>,
    ) -> LineScores {
        // slot[t]: 1 + the position of term t in `weights`, 0 when not weighted.
        let mut slot = vec![0u32; self.vocab.len()];
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
            ends: &ends,
            weights,
            pairs,
            query,
            avg: self.avg_line_len(),
        };
        let mut out = LineScores::zeros(self.docs.iter());
        if let Some(p) = self.postings().filter(|_| weights.len() < 64) {
            scorer.postings(p, &self.docs, &mut out, pair_memo);
            return out;
        }
        let total = out.scores.len();
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
            scorer.docs(&self.docs, &mut out.scores, memo);
            if known.is_none() {
                *pair_memo = Some(fill);
            }
            return out;
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
        let at = out.start[cut];
        let (a, b) = out.scores.split_at_mut(at);
        let (memo_a, memo_b) = match known {
            Some(m) => (Pairs::Known(&m[..at]), Pairs::Known(&m[at..])),
            None => {
                let (x, y) = fill.split_at_mut(at);
                (Pairs::Fill(x), Pairs::Fill(y))
            }
        };
        std::thread::scope(|s| {
            let other = s.spawn(|| scorer.docs(second, b, memo_b));
            scorer.docs(first, a, memo_a);
            if let Err(e) = other.join() {
                std::panic::resume_unwind(e)
            }
        });
        if known.is_none() {
            *pair_memo = Some(fill);
        }
        out
    }

    /// Terms to add to a query: the most weighted terms of the best lines (not
    /// their tags'), each weighted by the line's score and its own IDF, with at most [`PRF_WEIGHT`] of
    /// its IDF (the best one; the others in proportion). Ties go to the term that
    /// sorts first, so the choice does not depend on the order ids were handed out.
    fn feedback(&self, lines: &LineScores, query: &[u32]) -> Vec<(u32, f64)> {
        // The best PRF_LINES lines, kept in a heap whose least is the first out
        // (lines are distinct, so the order is total and the choice a full sort's).
        let mut kept: BinaryHeap<Reverse<u128>> = BinaryHeap::with_capacity(PRF_LINES + 1);
        for (r, per) in lines.iter().enumerate() {
            for (l, &s) in per.iter().enumerate() {
                if s > 0.0 {
                    let key = best_key(s, r, l);
                    if kept.len() < PRF_LINES {
                        kept.push(Reverse(key));
                    } else if let Some(mut least) = kept.peek_mut()
                        && key > least.0
                    {
                        *least = Reverse(key);
                    }
                }
            }
        }
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

    /// Scores every memory and every line for `query`. `records` must be the records
    /// the corpus serves.
    pub fn score(&self, records: &[Record], query: &str) -> QueryScores {
        let (memory, prior) = self.relevance_and_strength(records, query);
        QueryScores {
            memory,
            prior,
            lines: self.line_relevance(query),
        }
    }

    /// The line scores of [`Corpus::score`]: each line's score divided by the best
    /// line's.
    pub fn line_relevance(&self, query: &str) -> LineScores {
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
        // The pairs' sums of each line, kept from the first pass for the second.
        let mut pair_memo = None;
        let mut lines = self.line_scores(&weights, &pairs, &q, &mut pair_memo);
        let extra = self.feedback(&lines, &q);
        if !extra.is_empty() {
            weights.extend(extra);
            lines = self.line_scores(&weights, &pairs, &q, &mut pair_memo);
        }
        let best = lines.scores.iter().copied().fold(0.0_f64, f64::max);
        if best > 0.0 {
            for s in &mut lines.scores {
                *s /= best;
            }
        }
        lines
    }
}

/// Lines in a corpus from which [`Corpus::line_scores`] uses two threads.
const PARALLEL_LINES: usize = 20_000;

/// Each line's pair sum: kept by a first pass, read by the next (a line without a
/// query term has none, so a line the first pass left at 0 has 0).
enum Pairs<'a> {
    Fill(&'a mut [f64]),
    Known(&'a [f64]),
}

/// What scoring a line needs (see [`Corpus::line_scores`]).
struct LineScorer<'a> {
    slot: &'a [u32],
    /// By slot: the pairs starting with, and those ending with, its term.
    ends: &'a [(u64, u64)],
    weights: &'a [(u32, f64)],
    pairs: &'a [(u32, u32, f64)],
    query: &'a [u32],
    avg: f64,
}

impl LineScorer<'_> {
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
            let (first, second) = self.ends[self.slot[t as usize] as usize];
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
    /// label). `pair_memo` keeps each line's pair sum from a first pass for the next,
    /// whose weights start with the same terms.
    fn postings(
        &self,
        p: &Postings,
        docs: &[DocData],
        out: &mut LineScores,
        pair_memo: &mut Option<Vec<f64>>,
    ) {
        const LABEL: u64 = 1 << 63;
        let offsets = &out.start;
        let total = out.scores.len();
        let acc = &mut out.scores;
        let mut mask = vec![0u64; total];
        for (i, &(t, w)) in self.weights.iter().enumerate() {
            let Some(list) = p.lines.get(t as usize) else {
                continue;
            };
            let in_query = self.query.contains(&t);
            for &post in list {
                let Some(r) = p.position(post.slot) else {
                    continue;
                };
                let at = offsets[r] + post.line as usize;
                let (len, tf, in_label) = post.stats(&docs[r], t);
                let norm = K1 * (1.0 - B + B * f64::from(len) / self.avg);
                let tf = f64::from(tf);
                acc[at] += w * tf * (K1 + 1.0) / (tf + norm);
                mask[at] |= 1 << i;
                if in_query && in_label {
                    mask[at] |= LABEL;
                }
            }
        }
        // Only a line where a pair's second term follows its first can have the
        // pair: the positions (modulo 32) of the two terms say which lines may.
        let memo = pair_memo.get_or_insert_with(|| {
            let mut sums = vec![0.0; total];
            let mut first = vec![0u32; total];
            let mut may: Vec<(usize, usize)> = Vec::new();
            let list = |t: u32| p.lines.get(t as usize).map_or(&[][..], Vec::as_slice);
            let at = |post: &LinePost| {
                p.position(post.slot)
                    .map(|r| (r, offsets[r] + post.line as usize))
            };
            for &(a, b, _) in self.pairs {
                for post in list(a) {
                    if let Some((_, at)) = at(post) {
                        first[at] = post.bits;
                    }
                }
                for post in list(b) {
                    if let Some((r, at)) = at(post)
                        && first[at].rotate_left(1) & post.bits != 0
                    {
                        may.push((r, post.line as usize));
                    }
                }
                for post in list(a) {
                    if let Some((_, at)) = at(post) {
                        first[at] = 0;
                    }
                }
            }
            may.sort_unstable();
            may.dedup();
            for (r, l) in may {
                sums[offsets[r] + l] = self.pair_sum(docs[r].line(l).1);
            }
            sums
        });
        for ((s, m), pair) in acc.iter_mut().zip(mask).zip(memo.iter()) {
            // A line without a weighted term keeps its 0.
            if m != 0 {
                *s += pair;
                if m & LABEL != 0 {
                    *s *= 1.0 + LABEL_BOOST;
                }
            }
        }
    }

    /// Scores the lines of `docs` into `out`, one after the other, with their pair
    /// sums kept in or read from `pairs` (the same layout).
    fn docs(&self, docs: &[DocData], out: &mut [f64], mut pairs: Pairs<'_>) {
        // counts[s]: occurrences in the line of the term in slot s; `seen` the slots
        // met, so that only they are summed and reset.
        let mut counts = vec![0u32; self.weights.len() + 1];
        let mut seen: Vec<u32> = Vec::new();
        let mut at = 0;
        for d in docs {
            for l in 0..d.lines.len() {
                out[at] = self.line(d, l, &mut counts, &mut seen, &mut pairs, at);
                at += 1;
            }
        }
    }

    fn line(
        &self,
        d: &DocData,
        l: usize,
        counts: &mut [u32],
        seen: &mut Vec<u32>,
        pairs: &mut Pairs<'_>,
        at: usize,
    ) -> f64 {
        let (label, text) = d.line(l);
        seen.clear();
        for &t in label.iter().chain(text) {
            let s = self.slot[t as usize];
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
        let len = (label.len() + text.len()) as f64;
        let norm = K1 * (1.0 - B + B * len / self.avg);
        let mut s = 0.0;
        for &slot in seen.iter() {
            let w = self.weights[slot as usize - 1].1;
            let tf = f64::from(std::mem::take(&mut counts[slot as usize]));
            s += w * tf * (K1 + 1.0) / (tf + norm);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The non-empty pieces of `text` split at every character that is not
    /// alphanumeric: what [`words`] must give.
    fn split_words(text: &str) -> Vec<&str> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect()
    }

    #[test]
    fn words_are_the_alphanumeric_runs() {
        for t in ["", "a", "  ", "..x..", "x", "Hello, wörld! x2 ÀB—cd"] {
            assert_eq!(words(t).collect::<Vec<_>>(), split_words(t), "{t:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// Random strings over ASCII letters, digits, punctuation and non-ASCII
        /// letters, digits, marks and spaces, and any printable text.
        #[test]
        fn words_are_the_alphanumeric_runs_of_any_text(
            t in "[aZ09 ,._\\-\n\té日٣\u{2003}\u{301}—ß]{0,24}|\\PC{0,40}"
        ) {
            proptest::prop_assert_eq!(words(&t).collect::<Vec<_>>(), split_words(&t));
        }
    }

    #[test]
    fn stopwords_are_sorted() {
        let mut s = STOPWORDS.to_vec();
        s.sort();
        assert_eq!(s, STOPWORDS);
        let longest = STOPWORDS.iter().map(|w| w.len()).max();
        assert_eq!(longest, Some(STOPWORD_MAX_LEN));
    }

    #[test]
    fn stemming() {
        for (w, want) in [
            ("runs", "run"),
            ("running", "run"),
            ("ran", "ran"),
            ("stories", "story"),
            ("classes", "class"),
            ("boxes", "box"),
            ("walked", "walk"),
            ("quickly", "quick"),
            ("focus", "focus"),
            ("analysis", "analysis"),
            ("pottery", "pottery"),
            ("painting", "paint"),
            ("paintings", "paint"),
            ("café", "café"),
            // A final silent e folds, so verb forms meet (spec/ranking.md).
            ("hike", "hik"),
            ("hikes", "hik"),
            ("hiking", "hik"),
            ("dance", "danc"),
            ("dancing", "danc"),
            ("agree", "agree"),
        ] {
            assert_eq!(stem(w), want, "{w}");
        }
    }

    #[test]
    fn terms_drop_stopwords_and_punctuation() {
        assert_eq!(
            terms("What did Caroline paint, in 2023? A sunset!"),
            vec!["carolin", "paint", "2023", "sunset"]
        );
        assert_eq!(terms("Ünï-code 中文"), vec!["ünï", "cod", "中文"]);
    }

    #[test]
    fn labels() {
        for (line, want) in [
            ("[D3:5] Caroline: went hiking", Some("Caroline")),
            ("Caroline: went hiking", Some("Caroline")),
            ("- User: prefers tea", Some("User")),
            ("Mary Ann Lee: hi", Some("Mary Ann Lee")),
            ("Note that x: y", Some("Note that x")),
            ("one two three four: y", None),
            ("no label here", None),
            ("http://example.com: y", None),
            ("[a very long bracketed tag indeed] Bo: y", None),
            (": empty", None),
        ] {
            assert_eq!(split_label(line).map(|(_, l, _)| l), want, "{line}");
        }
        let (before, label, after) = split_label("[D1:2] Bo: hi").unwrap();
        assert_eq!((before, label, after), ("[D1:2] ", "Bo", ": hi"));
    }

    #[test]
    fn tags() {
        for (line, want) in [
            ("[D3:5] Caroline: went hiking", "[D3:5] "),
            ("- [2026-03-01] met Bo", "- [2026-03-01] "),
            ("  * [09:30] standup", "  * [09:30] "),
            ("[a very long bracketed tag indeed] Bo: y", ""),
            ("[D3:5]no space", ""),
            ("plain [D3:5] later", ""),
        ] {
            let (tag, rest) = split_tag(line);
            assert_eq!(tag, want, "{line}");
            assert_eq!(format!("{tag}{rest}"), line);
        }
        // Label terms first, then the tag's, then the rest; with or without a label.
        let mut r = numbered(0);
        r.body = "[D3:5] Ann: went hiking\n[2026-03-01] met Bo\nno tag".into();
        let d = DocData::of(&r, &mut Vocab::default());
        assert_eq!(
            d.lines.iter().map(|l| (l.1, l.2)).collect::<Vec<_>>(),
            [(1, 2), (0, 3), (0, 0)]
        );
        let words = |ids: &[u32], v: &Vocab| {
            ids.iter()
                .map(|&t| v.terms[t as usize].clone())
                .collect::<Vec<_>>()
        };
        let mut v = Vocab::default();
        let d = DocData::of(&r, &mut v);
        let (label, text) = d.content(0);
        assert_eq!(
            (words(label, &v), words(text, &v)),
            (
                vec!["ann".to_string()],
                vec!["went".to_string(), "hik".to_string()]
            )
        );
        assert_eq!(words(d.content(1).1, &v), ["met", "bo"]);
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

    #[test]
    fn feedback_takes_no_terms_from_tags() {
        // The best lines for `parrot` are D7:1 and D7:2. Their content brings `kiwi`
        // (so D2:1 scores); their tags would bring `d7`, `1` and `2`, which would
        // lift D7:3 and D2:2, which say nothing of the kind.
        let mut a = numbered(0);
        a.body = "[D7:1] Ana: I adopted a parrot, Kiwi\n[D7:2] Ana: the parrot squawks at dawn\n[D7:3] Bo: the weather was grey".into();
        let mut b = numbered(1);
        b.body = "[D2:1] Cy: Kiwi likes apples\n[D2:2] Cy: a grey morning".into();
        let records = vec![a, b];
        for c in [Corpus::new(&records), with_postings(&records)] {
            let lines = c.line_relevance("parrot");
            assert!(lines.of(0)[0] > 0.0 && lines.of(0)[1] > 0.0);
            assert!(
                lines.of(1)[0] > 0.0,
                "feedback from what the best lines say"
            );
            assert_eq!(lines.of(0)[2], 0.0, "the tag D7 is not fed back");
            assert_eq!(lines.of(1)[1], 0.0, "the tag's number is not fed back");
        }
    }

    /// A user memory keyed `m<i>`, named `N`, described `d`.
    fn numbered(i: usize) -> Record {
        crate::memory::index::tests::rec(&format!("m{i}"), "user", "N", "d", "2026-01-01")
    }

    /// A corpus of `records` that keeps postings.
    fn with_postings(records: &[Record]) -> Corpus {
        let mut c = Corpus::new(records);
        c.keep_postings();
        c
    }

    /// Asserts that two corpora of `records` give every query the same scores.
    fn same_scores(a: &Corpus, b: &Corpus, records: &[Record], queries: &[&str], what: &str) {
        for q in queries {
            assert_eq!(a.score(records, q), b.score(records, q), "{what}, {q}");
        }
    }

    /// Scores the lines of one-memory-per-body records for `query`; returns each
    /// memory's line scores.
    fn line_scores(bodies: &[&str], query: &str) -> Vec<Vec<f64>> {
        let records: Vec<Record> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut r = numbered(i);
                r.body = b.to_string();
                r
            })
            .collect();
        Corpus::new(&records)
            .score(&records, query)
            .lines
            .iter()
            .map(<[f64]>::to_vec)
            .collect()
    }

    /// Records of random bodies over a small vocabulary (so terms repeat within and
    /// across lines), some lines labelled; a small xorshift keeps it reproducible.
    fn random_records(seed: u64, n: usize) -> Vec<Record> {
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
                r.body = lines.join("\n");
                r
            })
            .collect()
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
            // A corpus carried over after changes scores as a new one.
            let next = random_records(seed + 100, 10);
            let mut records2: Vec<Record> = records.clone();
            let mut origin: Vec<Option<usize>> = (0..records.len()).map(Some).collect();
            for (k, r) in next.into_iter().enumerate() {
                let at = (k * 7) % records2.len();
                if k % 3 == 0 {
                    records2.insert(at, r);
                    origin.insert(at, None);
                } else if k % 3 == 1 {
                    records2[at] = r;
                    origin[at] = None;
                } else {
                    records2.remove(at);
                    origin.remove(at);
                }
            }
            let (mut vocab, old) = kept.take_parts();
            let docs: Vec<DocData> = records2
                .iter()
                .zip(&origin)
                .map(|(r, o)| match o {
                    Some(i) => old[*i].clone(),
                    None => DocData::of(r, &mut vocab),
                })
                .collect();
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
        records[2].body = format!("Ana: {}\nknee tempo", "cello tempo ".repeat(40_000));
        records[3].body = format!("{}knee", "zebra ".repeat(70_000));
        let queries = ["cello tempo", "Ana cello", "zebra knee", "knee tempo"];
        same_scores(
            &Corpus::new(&records),
            &with_postings(&records),
            &records,
            &queries,
            "huge",
        );
    }

    #[test]
    fn best_keys_order_as_by_score_desc() {
        // Scores across magnitudes, with ties broken by place.
        let scores = [
            1e-300,
            1e-9,
            0.25,
            0.5,
            0.5000000000000001,
            1.0,
            2.0,
            7.5,
            1e300,
        ];
        let mut items: Vec<(f64, (usize, usize))> = Vec::new();
        for (i, &s) in scores.iter().enumerate() {
            for place in [(0, 0), (0, 1), (1, 0), (i, 3), (u32::MAX as usize, 7)] {
                items.push((s, place));
            }
        }
        for &(s, p) in &items {
            assert_eq!(key_parts(best_key(s, p.0, p.1)), (s, p));
        }
        let mut want = items.clone();
        want.sort_by(by_score_desc);
        let mut keys: Vec<u128> = items.iter().map(|&(s, (a, b))| best_key(s, a, b)).collect();
        keys.sort_unstable_by(|a, b| b.cmp(a));
        let got: Vec<_> = keys.into_iter().map(key_parts).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn line_scores_cases() {
        // spec/ranking.md#query-aware-context-measured-on-locomo
        // The best line scores 1; a line without any query term (or feedback term) 0.
        let s = line_scores(
            &["Ana: cello lessons\nBen: weather is nice\nAna: pizza"],
            "cello",
        );
        assert_eq!(s[0][0], 1.0);
        assert_eq!(s[0][1], 0.0);
        // What the named person said beats the same words said to them.
        let s = line_scores(
            &["Ben: Ana, your cello sounds great\nAna: my cello sounds great\nBo: x"],
            "Ana cello",
        );
        assert!(s[0][1] > s[0][0], "{s:?}");
        // Query words next to each other in a line beat the same words apart.
        let s = line_scores(
            &["the art show opens\nshow me your art\nunrelated\nmore unrelated"],
            "art show",
        );
        assert!(s[0][0] > s[0][1], "{s:?}");
        // Feedback: a term shared by the best lines reaches a line without query terms.
        let s = line_scores(
            &["cello and zebra\nzebra stripes\nnothing here\nor here\nnor here"],
            "cello",
        );
        assert!(s[0][1] > 0.0, "{s:?}");
        assert_eq!(s[0][2], 0.0);
        // Lines are scored across memories on one scale.
        let s = line_scores(&["x cello y", "cello cello\nno"], "cello");
        assert!(s[0][0] > 0.0 && s[1][0] > 0.0);
        assert_eq!(s.iter().flatten().copied().fold(0.0, f64::max), 1.0);
    }
}
