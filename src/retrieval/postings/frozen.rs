//! Postings saved with the search index's main file and read in place
//! ([`Frozen`]): every term's memories and lines in one run of arrays per kind, a
//! term's runs checked against its own CRC-32 the first time a query needs them, so a
//! one-shot call reads only the postings of its query's terms
//! (spec/architecture.md#search-index). Must not read files: the arrays are handed in.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::retrieval::postings::{LinePost, SavedPost, Terms, line_posts};
use crate::retrieval::search::Arr;

/// A term's runs not checked yet, checked and whole, or damaged.
const UNCHECKED: u8 = 0;
const WHOLE: u8 = 1;
const DAMAGED: u8 = 2;

/// The postings of the memories of one main index file, by slot (the entry's
/// position in that file), in the layout the file keeps them in.
#[derive(Debug)]
pub(crate) struct Frozen {
    parts: FrozenParts,
    /// Per term: whether its runs were checked against their CRC, and how it went.
    state: Vec<AtomicU8>,
}

/// The arrays of [`Frozen`]: what the index's postings file holds.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct FrozenParts {
    /// Slots the postings were made for (the main file's entries).
    pub slots: u32,
    /// Per term id, where its memories start in `doc_slot` and `doc_tf` (one more
    /// entry at the end: the total).
    pub doc_start: Arr<u32>,
    pub doc_slot: Arr<u32>,
    /// (Each a weighted frequency, exact in 32 bits: field weights are small
    /// integers.)
    pub doc_tf: Arr<f32>,
    /// Per term id, where its lines start in `line_post` (and the total).
    pub line_start: Arr<u32>,
    /// `[slot, line, len | count << 16, positions]` ([`LinePost::to_saved`]).
    pub line_post: Arr<SavedPost>,
    /// Per term id, the CRC-32 of its runs: its `doc_slot`, `doc_tf` and `line_post`
    /// items as little-endian bytes, in that order.
    pub crc: Arr<u32>,
}

impl FrozenParts {
    /// The postings of `docs`, each `(slot, data)` with slots below `slots` and in
    /// ascending order, over a vocabulary of `terms` ids; `None` when a weighted
    /// frequency is not exact in 32 bits, or a memory's count of the lines that
    /// hold a term is not the number of its lines that do.
    pub(crate) fn build<'a, D: Terms + 'a>(
        slots: u32,
        terms: usize,
        docs: &[(u32, &'a D)],
    ) -> Option<FrozenParts> {
        let mut parts = FrozenParts::runs_of(slots, terms, docs)?;
        let crc: Vec<u32> = (0..terms)
            .map(|t| {
                let (slots, tf, lines) = parts.runs(t);
                run_crc(slots, tf, lines)
            })
            .collect();
        parts.crc = crc.into();
        Some(parts)
    }

    /// [`FrozenParts::build`] without the CRCs (`crc` left empty): a part of the
    /// postings that a file's CRCs are computed over with the others'.
    fn runs_of<'a, D: Terms + 'a>(
        slots: u32,
        terms: usize,
        docs: &[(u32, &'a D)],
    ) -> Option<FrozenParts> {
        // Counted first (from the memories' own counts), so that each run is
        // written in place, in slot order.
        let mut doc_n = vec![0u32; terms + 1];
        let mut line_n = vec![0u32; terms + 1];
        for (_, d) in docs {
            for (t, _) in d.fields() {
                *doc_n.get_mut(t as usize)? += 1;
            }
            for (t, n) in d.line_terms() {
                let c = line_n.get_mut(t as usize)?;
                *c = c.checked_add(n)?;
            }
        }
        let doc_start = starts(&doc_n)?;
        let line_start = starts(&line_n)?;
        let mut doc_at: Vec<u32> = doc_start[..terms].to_vec();
        let mut line_at: Vec<u32> = line_start[..terms].to_vec();
        let mut doc_slot = vec![0u32; doc_start[terms] as usize];
        let mut doc_tf = vec![0f32; doc_start[terms] as usize];
        let mut line_post: Vec<SavedPost> = vec![[0; 4]; line_start[terms] as usize];
        let mut scratch = Vec::new();
        let mut fits = true;
        for &(slot, d) in docs {
            for (t, tf) in d.fields() {
                let at = &mut doc_at[t as usize];
                let narrow = tf as f32;
                if f64::from(narrow) != tf {
                    return None;
                }
                doc_slot[*at as usize] = slot;
                doc_tf[*at as usize] = narrow;
                *at += 1;
            }
            for l in 0..d.line_count() {
                let (label, text) = d.line(l);
                line_posts(slot, l, label, text, &mut scratch, |t, p| {
                    let t = t as usize;
                    // A post past its term's run: the counts were wrong.
                    match line_at.get_mut(t) {
                        Some(at) if *at < line_start[t + 1] => {
                            line_post[*at as usize] = p.to_saved();
                            *at += 1;
                        }
                        _ => fits = false,
                    }
                });
            }
        }
        // Every run filled to its end.
        let full = |at: &[u32], start: &[u32]| at.iter().zip(&start[1..]).all(|(a, e)| a == e);
        if !fits || !full(&line_at, &line_start) || !full(&doc_at, &doc_start) {
            return None;
        }
        Some(FrozenParts {
            slots,
            doc_start: doc_start.into(),
            doc_slot: doc_slot.into(),
            doc_tf: doc_tf.into(),
            line_start: line_start.into(),
            line_post: line_post.into(),
            crc: Arr::default(),
        })
    }

    /// [`FrozenParts::build`] of `docs` in two halves by slot, built on two threads
    /// from [`SPLIT_FROM`] memories: the postings are the halves' runs of each term,
    /// one after the other (what a postings file of them holds, its CRCs computed
    /// over both as it is written; the halves have none of their own). One part
    /// below.
    pub(crate) fn build_split<'a, D: Terms + Sync + 'a>(
        slots: u32,
        terms: usize,
        docs: &[(u32, &'a D)],
    ) -> Option<Vec<FrozenParts>> {
        if docs.len() < SPLIT_FROM {
            return Some(vec![FrozenParts::build(slots, terms, docs)?]);
        }
        let (a, b) = docs.split_at(docs.len() / 2);
        let (a, b) = std::thread::scope(|s| {
            let first = s.spawn(|| FrozenParts::runs_of(slots, terms, a));
            let second = FrozenParts::runs_of(slots, terms, b);
            let first = first
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            (first, second)
        });
        Some(vec![a?, b?])
    }

    /// Number of term ids.
    pub(crate) fn terms(&self) -> usize {
        self.doc_start.len().saturating_sub(1)
    }

    /// Term `t`'s runs: its memories' slots and frequencies, and its lines.
    pub(crate) fn runs(&self, t: usize) -> Runs<'_> {
        let (d, l) = (run(&self.doc_start, t), run(&self.line_start, t));
        (
            &self.doc_slot[d.clone()],
            &self.doc_tf[d],
            &self.line_post[l],
        )
    }
}

/// A term's runs: its memories' slots, their frequencies, its lines.
pub(crate) type Runs<'a> = (&'a [u32], &'a [f32], &'a [SavedPost]);

/// Memories from which [`FrozenParts::build_split`] builds on two threads.
pub(crate) const SPLIT_FROM: usize = 4096;

/// Where each term's run starts, from each term's count (one more entry: the total);
/// `None` past 32 bits.
fn starts(n: &[u32]) -> Option<Vec<u32>> {
    let mut s = Vec::with_capacity(n.len());
    let mut total = 0u32;
    for &x in &n[..n.len() - 1] {
        s.push(total);
        total = total.checked_add(x)?;
    }
    s.push(total);
    Some(s)
}

/// The items of term `t`'s run, from its start and the next term's.
fn run(start: &[u32], t: usize) -> std::ops::Range<usize> {
    start[t] as usize..start[t + 1] as usize
}

/// The CRC-32 of one term's runs.
pub(crate) fn run_crc(slots: &[u32], tf: &[f32], lines: &[SavedPost]) -> u32 {
    runs_crc(&[(slots, tf, lines)])
}

/// The CRC-32 of one term's runs made of pieces (one per part, in order): every
/// piece's slots, then every piece's frequencies, then every piece's lines.
pub(crate) fn runs_crc(pieces: &[Runs<'_>]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for &(slots, _, _) in pieces {
        put_words(&mut h, slots);
    }
    for &(_, tf, _) in pieces {
        put_words(&mut h, tf);
    }
    for &(_, _, lines) in pieces {
        put_words(&mut h, lines);
    }
    h.finalize()
}

/// Adds items of 4-byte words to a CRC, as their little-endian bytes.
fn put_words<T: bytemuck::Pod>(h: &mut crc32fast::Hasher, items: &[T]) {
    le_words(items, |b| {
        h.update(b);
        Ok(())
    })
    .expect("a CRC takes every byte");
}

/// Hands `out` the little-endian bytes of items of 4-byte words: all at once on a
/// little-endian machine, a word at a time elsewhere; stops at `out`'s first error.
pub(crate) fn le_words<T: bytemuck::Pod>(
    items: &[T],
    mut out: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let bytes: &[u8] = bytemuck::cast_slice(items);
    if cfg!(target_endian = "little") {
        return out(bytes);
    }
    for w in bytes.chunks_exact(4) {
        out(&[w[3], w[2], w[1], w[0]])?;
    }
    Ok(())
}

impl Frozen {
    /// The postings of `parts`; `None` when the arrays do not fit together (starts
    /// that go back or past the runs, lengths that differ).
    pub(crate) fn new(parts: FrozenParts) -> Option<Frozen> {
        let terms = parts.crc.len();
        let fits = |start: &[u32], len: usize| {
            start.len() == terms + 1
                && start.first() == Some(&0)
                && start.windows(2).all(|w| w[0] <= w[1])
                && start.last().is_some_and(|&e| e as usize == len)
        };
        let whole = parts.doc_slot.len() == parts.doc_tf.len()
            && fits(&parts.doc_start, parts.doc_slot.len())
            && fits(&parts.line_start, parts.line_post.len());
        whole.then(|| Frozen {
            state: (0..terms).map(|_| AtomicU8::new(UNCHECKED)).collect(),
            parts,
        })
    }

    /// Slots the postings were made for.
    pub(crate) fn slots(&self) -> u32 {
        self.parts.slots
    }

    /// Whether term `t`'s runs are whole: their CRC is the one saved and every slot
    /// is below [`Frozen::slots`] (checked once; a term past the postings has none,
    /// and is whole).
    pub(crate) fn check(&self, t: u32) -> bool {
        let t = t as usize;
        let Some(state) = self.state.get(t) else {
            return true;
        };
        match state.load(Ordering::Relaxed) {
            WHOLE => return true,
            DAMAGED => return false,
            _ => {}
        }
        let p = &self.parts;
        let (slots, tf, lines) = p.runs(t);
        let ok = run_crc(slots, tf, lines) == p.crc[t]
            && slots.iter().all(|&s| s < p.slots)
            && lines.iter().all(|w| w[0] < p.slots);
        state.store(if ok { WHOLE } else { DAMAGED }, Ordering::Relaxed);
        ok
    }

    /// Term `t`'s memories: (slot, weighted frequency).
    pub(crate) fn docs(&self, t: u32) -> impl Iterator<Item = (u32, f64)> + '_ {
        let r = self.run_of(&self.parts.doc_start, t);
        self.parts.doc_slot[r.clone()]
            .iter()
            .copied()
            .zip(self.parts.doc_tf[r].iter().map(|&x| f64::from(x)))
    }

    /// Number of term `t`'s memories.
    pub(crate) fn doc_count(&self, t: u32) -> usize {
        self.run_of(&self.parts.doc_start, t).len()
    }

    /// Term `t`'s lines.
    pub(crate) fn lines(&self, t: u32) -> impl Iterator<Item = LinePost> + '_ {
        let r = self.run_of(&self.parts.line_start, t);
        self.parts.line_post[r]
            .iter()
            .map(|&w| LinePost::from_saved(w))
    }

    /// The run of term `t` (empty past the postings).
    fn run_of(&self, start: &[u32], t: u32) -> std::ops::Range<usize> {
        let t = t as usize;
        if t + 1 < start.len() {
            run(start, t)
        } else {
            0..0
        }
    }
}
