//! The terms of memories as ids: the vocabulary ([`Vocab`]), a memory's analyzed
//! terms ([`Analyzed`]) and its term data ([`DocData`]: weighted field frequencies
//! and the terms of every body line), which the postings read through [`Terms`].
//!
//! Must not score: no corpus statistics, no IDF, no BM25 (that is the scoring's).
//! Pure code.

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use foldhash::{HashMap, HashMapExt};
use hashbrown::hash_table::{Entry, HashTable};

use crate::memory::Record;
use crate::retrieval::postings::Terms;
use crate::retrieval::search::arrays::Arr;
use crate::retrieval::search::text::split_label;
use crate::retrieval::search::text::split_tag;
use crate::retrieval::search::text::{TermList, terms_into};

/// Field weights: a term in the name counts three body occurrences.
pub(super) const W_NAME: f64 = 3.0;
pub(super) const W_DESCRIPTION: f64 = 2.0;
pub(super) const W_TAGS: f64 = 2.0;
pub(super) const W_BODY: f64 = 1.0;

/// A vocabulary: every term a corpus has met, by id. Ids are handed out in order of
/// first appearance and never reused, so a vocabulary saved with term ids (the
/// search index under `.memdir/cache/`) can grow as memories change.
#[derive(Debug, Clone, Default)]
pub struct Vocab {
    /// Each term's id, found by the term's hash and compared with `terms`: the
    /// table holds ids only, so no term is kept twice.
    ids: HashTable<u32>,
    hasher: RandomState,
    pub(super) terms: Vec<String>,
}

impl Vocab {
    /// A vocabulary of `terms`, by position; `None` when a term repeats.
    pub fn from_terms(terms: Vec<String>) -> Option<Vocab> {
        let mut v = Vocab {
            ids: HashTable::with_capacity(terms.len()),
            hasher: RandomState::default(),
            terms: Vec::with_capacity(terms.len()),
        };
        for t in terms {
            match entry(&mut v.ids, &v.hasher, &v.terms, &t) {
                Entry::Occupied(_) => return None,
                Entry::Vacant(e) => {
                    e.insert(v.terms.len() as u32);
                }
            }
            v.terms.push(t);
        }
        Some(v)
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
        let hash = self.hasher.hash_one(term);
        self.ids
            .find(hash, |&id| self.terms[id as usize] == term)
            .copied()
    }

    /// The id of a term, added when new.
    pub fn intern(&mut self, term: &str) -> u32 {
        match entry(&mut self.ids, &self.hasher, &self.terms, term) {
            Entry::Occupied(o) => *o.get(),
            Entry::Vacant(e) => {
                let id = self.terms.len() as u32;
                e.insert(id);
                self.terms.push(term.to_string());
                id
            }
        }
    }
}

/// `term`'s place in `ids`, the table of the ids of `terms` (by their hashes).
fn entry<'a>(
    ids: &'a mut HashTable<u32>,
    hasher: &RandomState,
    terms: &[String],
    term: &str,
) -> Entry<'a, u32> {
    ids.entry(
        hasher.hash_one(term),
        |&id| terms[id as usize] == term,
        |&id| hasher.hash_one(terms[id as usize].as_str()),
    )
}

/// What one memory brings to a [`Corpus`](crate::retrieval::search::Corpus), in term
/// ids of a [`Vocab`]: the weighted
/// term frequencies of its fields (BM25F) and the terms of every body line. It
/// depends only on the memory's text, so it is computed once per content and kept in
/// the search index under `.memdir/cache/`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocData {
    /// The terms of the fields, by id ascending...
    pub tf_terms: Arr<u32>,
    /// ...and each one's weighted frequency over the fields.
    pub tf_weights: Arr<f64>,
    /// Weighted length.
    pub len: f64,
    /// The terms of every body line, one line after the other; a line's label terms
    /// come first, then its tag's ([`split_tag`]), then the rest.
    pub tokens: Arr<u32>,
    /// One entry per body line (`str::lines` of the body, blank ones included): where
    /// its terms end in `tokens`, how many of them are its label and how many its tag.
    pub lines: Arr<[u32; 3]>,
    /// For each term of the body, by id ascending: the term and how many lines
    /// contain it.
    pub line_df: Arr<[u32; 2]>,
    /// Lines with at least one term.
    pub n_lines: u32,
}

/// A memory's line data as slices, taken once where every line is read.
#[derive(Debug, Clone, Copy)]
pub struct DocView<'a> {
    pub tokens: &'a [u32],
    pub lines: &'a [[u32; 3]],
}

/// A memory's terms as text, in the order [`DocData::of`] interns them: the part of
/// the analysis that needs no vocabulary, so that many memories can be analyzed on
/// several threads and interned after, in order, to the same ids.
#[derive(Debug, Clone, Default)]
pub struct Analyzed {
    /// Every term found: the name's, the description's, each tag's, then the body's
    /// in the order they come (found once, line after line: the body field's terms
    /// and the lines' are the same words).
    terms: TermList,
    /// Each field's terms but the body's (where they end in `terms`) with the field's
    /// weight: name, description, each tag. The body's are the rest.
    fields: Vec<(usize, f64)>,
    /// Each body line's terms (where they end in `terms`), in the line's order: how
    /// many are its tag's (the first ones) and how many its label's (the next ones).
    lines: Vec<(usize, usize, usize)>,
}

impl Analyzed {
    pub fn of(r: &Record) -> Analyzed {
        let mut a = Analyzed::default();
        let field = |a: &mut Analyzed, text: &str, weight: f64| {
            terms_into(text, &mut a.terms);
            a.fields.push((a.terms.len(), weight));
        };
        field(&mut a, &r.meta.name, W_NAME);
        field(&mut a, &r.meta.description, W_DESCRIPTION);
        for t in &r.meta.tags {
            field(&mut a, t, W_TAGS);
        }
        // The line's pieces cover it and split it between words (at a space or `: `),
        // so the lines' terms one after the other are the body's.
        for line in r.body.lines() {
            let start = a.terms.len();
            let (before, label, after) = match split_label(line) {
                Some(parts) => parts,
                None => {
                    let (before, after) = split_tag(line);
                    (before, "", after)
                }
            };
            terms_into(before, &mut a.terms);
            let tag = a.terms.len() - start;
            terms_into(label, &mut a.terms);
            let label = a.terms.len() - start - tag;
            terms_into(after, &mut a.terms);
            a.lines.push((a.terms.len(), tag, label));
        }
        a
    }

    /// The id of every term in `vocab`, in the order found (the fields' terms, then
    /// the lines'), new terms added as they come: the one step of interning that
    /// must run memory after memory, in file order, for the ids to be those of one
    /// pass ([`DocData::of_ids`] does the rest).
    pub fn ids(&self, vocab: &mut Vocab) -> Vec<u32> {
        (0..self.terms.len())
            .map(|i| vocab.intern(self.terms.get(i)))
            .collect()
    }
}

impl DocData {
    /// The terms of a memory, interned in `vocab`.
    pub fn of(r: &Record, vocab: &mut Vocab) -> DocData {
        DocData::intern(&Analyzed::of(r), vocab)
    }

    /// An analyzed memory's terms, interned in `vocab` in the order they were found.
    pub fn intern(a: &Analyzed, vocab: &mut Vocab) -> DocData {
        DocData::of_ids(a, &a.ids(vocab))
    }

    /// An analyzed memory's data from the ids of its terms ([`Analyzed::ids`]): the
    /// part of [`DocData::intern`] that needs no vocabulary, so that it can run on
    /// several threads once the ids are found in order.
    pub fn of_ids(a: &Analyzed, ids: &[u32]) -> DocData {
        debug_assert_eq!(ids.len(), a.terms.len());
        // Room for every term at once: a table grown as terms come rehashes
        // several times per memory.
        let mut tf: HashMap<u32, f64> = HashMap::with_capacity(ids.len());
        let mut len = 0.0;
        let mut start = 0;
        let body = ids.len();
        let fields = a.fields.iter().copied().chain([(body, W_BODY)]);
        for (end, weight) in fields {
            for &id in &ids[start..end] {
                *tf.entry(id).or_insert(0.0) += weight;
                len += weight;
            }
            start = end;
        }
        let mut start = a.fields.last().map_or(0, |f| f.0);
        let mut tokens = Vec::with_capacity(body - start);
        let mut lines = Vec::with_capacity(a.lines.len());
        for &(end, tag, label) in &a.lines {
            // A line's label terms first, then its tag's, then the rest.
            let line = &ids[start..end];
            tokens.extend_from_slice(&line[tag..tag + label]);
            tokens.extend_from_slice(&line[..tag]);
            tokens.extend_from_slice(&line[tag + label..]);
            lines.push([tokens.len() as u32, label as u32, tag as u32]);
            start = end;
        }
        DocData::from_parts(tf, len, tokens, lines)
    }

    /// The data of weighted field frequencies, a length and lines; `line_df` and
    /// `n_lines` counted from the lines.
    fn from_parts(
        tf: HashMap<u32, f64>,
        len: f64,
        tokens: Vec<u32>,
        lines: Vec<[u32; 3]>,
    ) -> DocData {
        let mut tf: Vec<(u32, f64)> = tf.into_iter().collect();
        tf.sort_unstable_by_key(|x| x.0);
        let mut d = DocData {
            tf_terms: tf.iter().map(|x| x.0).collect::<Vec<_>>().into(),
            tf_weights: tf.iter().map(|x| x.1).collect::<Vec<_>>().into(),
            len,
            tokens: tokens.into(),
            lines: lines.into(),
            ..DocData::default()
        };
        d.count_lines();
        d
    }

    /// Fills `line_df` and `n_lines` from the lines.
    fn count_lines(&mut self) {
        let mut df: HashMap<u32, u32> = HashMap::with_capacity(self.tokens.len());
        let mut uniq: Vec<u32> = Vec::new();
        let mut n_lines = 0;
        let v = self.view();
        for l in 0..v.lines.len() {
            let (label, text) = v.line(l);
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
        let mut line_df: Vec<[u32; 2]> = df.into_iter().map(|(t, n)| [t, n]).collect();
        line_df.sort_unstable();
        self.n_lines = n_lines;
        self.line_df = line_df.into();
    }

    /// The line arrays as slices.
    #[inline]
    pub fn view(&self) -> DocView<'_> {
        DocView {
            tokens: &self.tokens,
            lines: &self.lines,
        }
    }

    /// The weighted frequency of a term id in the fields.
    pub fn tf(&self, term: u32) -> Option<f64> {
        let terms: &[u32] = &self.tf_terms;
        terms.binary_search(&term).ok().map(|i| self.tf_weights[i])
    }

    /// Line `l`: its label terms and its other terms (its tag's first).
    pub(super) fn line(&self, l: usize) -> (&[u32], &[u32]) {
        self.view().line(l)
    }

    /// Line `l`'s terms without its tag's: its label's and what it says.
    pub(super) fn content(&self, l: usize) -> (&[u32], &[u32]) {
        self.view().content(l)
    }

    /// The same data with arrays of its own: nothing read in place from a mapped
    /// index is kept (for a process that keeps its data for long).
    pub fn into_owned(self) -> DocData {
        DocData {
            tf_terms: self.tf_terms.into_owned(),
            tf_weights: self.tf_weights.into_owned(),
            tokens: self.tokens.into_owned(),
            lines: self.lines.into_owned(),
            line_df: self.line_df.into_owned(),
            ..self
        }
    }

    /// Whether the data is consistent (offsets in order and in range, ids below
    /// `vocab_len`): a check for data read back from a cache.
    pub fn is_valid(&self, vocab_len: usize) -> bool {
        let mut prev = 0u32;
        for &[end, label, tag] in &self.lines {
            if end < prev
                || end as usize > self.tokens.len()
                || u64::from(label) + u64::from(tag) > u64::from(end - prev)
            {
                return false;
            }
            prev = end;
        }
        // Each array's greatest id against the vocabulary: a reduction without a
        // branch per item, which the compiler vectorizes (every load checks every
        // token of the store).
        let below = |ids: &[u32]| {
            ids.is_empty() || (ids.iter().fold(0, |m, &t| m.max(t)) as usize) < vocab_len
        };
        let df_below = self.line_df.is_empty()
            || (self.line_df.iter().fold(0, |m, x| m.max(x[0])) as usize) < vocab_len;
        self.tf_terms.len() == self.tf_weights.len()
            && self.tf_terms.windows(2).all(|w| w[0] < w[1])
            && below(&self.tf_terms)
            && below(&self.tokens)
            && df_below
            && self.n_lines as usize <= self.lines.len()
    }
}

impl<'a> DocView<'a> {
    /// Line `l`: its label terms and its other terms (its tag's first).
    #[inline]
    pub fn line(&self, l: usize) -> (&'a [u32], &'a [u32]) {
        let start = if l == 0 {
            0
        } else {
            self.lines[l - 1][0] as usize
        };
        let [end, label, _] = self.lines[l];
        let all = &self.tokens[start..end as usize];
        all.split_at(label as usize)
    }

    /// Line `l`'s terms without its tag's: its label's and what it says.
    pub fn content(&self, l: usize) -> (&'a [u32], &'a [u32]) {
        let (label, text) = self.line(l);
        (label, &text[self.lines[l][2] as usize..])
    }
}

impl Terms for DocData {
    fn fields(&self) -> impl Iterator<Item = (u32, f64)> {
        self.tf_terms
            .iter()
            .copied()
            .zip(self.tf_weights.iter().copied())
    }

    fn line_count(&self) -> usize {
        self.lines.len()
    }

    fn line(&self, l: usize) -> (&[u32], &[u32]) {
        DocData::line(self, l)
    }

    fn line_terms(&self) -> impl Iterator<Item = (u32, u32)> {
        self.line_df.iter().map(|&[t, n]| (t, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::search::tests::numbered;

    #[test]
    fn a_vocabulary_finds_each_term_by_its_id_and_refuses_a_repeat() {
        let terms: Vec<String> = (0..5_000).map(|i| format!("t{i}")).collect();
        let mut v = Vocab::from_terms(terms.clone()).expect("distinct terms");
        for (i, t) in terms.iter().enumerate() {
            assert_eq!(v.get(t), Some(i as u32));
            assert_eq!(v.intern(t), i as u32, "a known term keeps its id");
        }
        assert_eq!(v.get("t5000"), None);
        assert_eq!(v.intern("t5000"), 5_000, "a new term gets the next id");
        assert_eq!((v.get("t5000"), v.len()), (Some(5_000), 5_001));
        assert_eq!(v.terms()[5_000], "t5000");
        // A copy answers as the original, and a vocabulary read with a term twice
        // is refused.
        assert_eq!(v.clone().get("t4999"), Some(4_999));
        let mut twice = terms;
        twice.push("t17".to_string());
        assert!(Vocab::from_terms(twice).is_none());
        assert!(Vocab::from_terms(Vec::new()).is_some_and(|v| v.get("t0").is_none()));
    }

    #[test]
    fn data_is_valid_only_with_every_id_below_the_vocabulary() {
        let mut r = numbered(0);
        r.body = "[D3:5] Ann: went hiking\nmet Bo again".into();
        let mut v = Vocab::default();
        let d = DocData::of(&r, &mut v);
        let n = v.len();
        assert!(d.is_valid(n));
        assert!(
            !d.is_valid(n - 1),
            "the last id is past a shorter vocabulary"
        );
        assert!(DocData::default().is_valid(0), "no ids at all");
        // One id past the vocabulary in any one array, wherever it is.
        let past = u32::try_from(n).unwrap();
        for at in 0..d.tokens.len() {
            let mut bad = d.clone();
            let mut tokens = bad.tokens.to_vec();
            tokens[at] = past;
            bad.tokens = tokens.into();
            assert!(!bad.is_valid(n), "token {at}");
        }
        for at in 0..d.line_df.len() {
            let mut bad = d.clone();
            let mut df = bad.line_df.to_vec();
            df[at][0] = past;
            bad.line_df = df.into();
            assert!(!bad.is_valid(n), "line term {at}");
        }
        let mut bad = d.clone();
        let mut tf = bad.tf_terms.to_vec();
        *tf.last_mut().unwrap() = past;
        bad.tf_terms = tf.into();
        assert!(!bad.is_valid(n), "field term");
    }

    #[test]
    fn tags() {
        // Label terms first, then the tag's, then the rest; with or without a label.
        let mut r = numbered(0);
        r.body = "[D3:5] Ann: went hiking\n[2026-03-01] met Bo\nno tag".into();
        let d = DocData::of(&r, &mut Vocab::default());
        assert_eq!(
            d.lines.iter().map(|l| (l[1], l[2])).collect::<Vec<_>>(),
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

    /// What the analysis must give, written the plain way: a vector of strings per
    /// field and per line, interned field by field, then line by line.
    fn reference(r: &Record, vocab: &mut Vocab) -> DocData {
        use crate::retrieval::search::text::terms;
        let mut fields = vec![(terms(&r.meta.name), W_NAME)];
        fields.push((terms(&r.meta.description), W_DESCRIPTION));
        fields.extend(r.meta.tags.iter().map(|t| (terms(t), W_TAGS)));
        fields.push((terms(&r.body), W_BODY));
        let mut tf: HashMap<u32, f64> = HashMap::new();
        let mut len = 0.0;
        for (ts, weight) in &fields {
            for t in ts {
                *tf.entry(vocab.intern(t)).or_insert(0.0) += weight;
                len += weight;
            }
        }
        let (mut tokens, mut lines) = (Vec::new(), Vec::new());
        for line in r.body.lines() {
            let (mut t, label, tag) = match split_label(line) {
                Some((before, label, after)) => {
                    let l = terms(label);
                    let b = terms(before);
                    let (nl, nb) = (l.len(), b.len());
                    ([l, b, terms(after)].concat(), nl, nb)
                }
                None => {
                    let (before, after) = split_tag(line);
                    let b = terms(before);
                    let nb = b.len();
                    ([b, terms(after)].concat(), 0, nb)
                }
            };
            tokens.extend(t.drain(..).map(|t| vocab.intern(&t)));
            lines.push([tokens.len() as u32, label as u32, tag as u32]);
        }
        DocData::from_parts(tf, len, tokens, lines)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// The analysis into one string of terms interns exactly what a string per
        /// term does: the same ids in the same order, frequencies, lengths and lines.
        #[test]
        fn the_analysis_is_the_plain_one(
            name in "\\PC{0,30}",
            description in "\\PC{0,40}",
            tags in proptest::collection::vec("[a-zé ]{0,12}", 0..3),
            lines in proptest::collection::vec(
                "(\t| |\u{a0})?(- |\\* )?(\\[[A-Z0-9:]{1,6}\\] )?([A-Z][a-z]{1,8}: )?([a-zA-Z0-9éß ,.'-]{0,40}|\\PC{0,30})",
                0..8,
            ),
            crlf in proptest::bool::ANY,
        ) {
            let mut r = numbered(0);
            r.meta.name = name;
            r.meta.description = description;
            r.meta.tags = tags;
            r.body = (lines.join(if crlf { "\r\n" } else { "\n" })).into();
            let (mut a, mut b) = (Vocab::default(), Vocab::default());
            // Two memories into one vocabulary, so that ids already given are met too.
            for _ in 0..2 {
                proptest::prop_assert_eq!(DocData::of(&r, &mut a), reference(&r, &mut b));
            }
            proptest::prop_assert_eq!(a.terms, b.terms);
        }
    }
}
