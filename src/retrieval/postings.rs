//! Term postings of a [`Corpus`](super::search::Corpus): for each term, the memories
//! and the body lines that contain it, so that a query looks only at what holds one
//! of its terms (spec/ranking.md#postings).
//!
//! Built by a process that stays warm; a one-shot call reads those saved with the
//! search index ([`Frozen`]) or scans. Scores computed through postings are the
//! scan's, bit for bit: every memory and every line adds its terms' shares in the
//! same order (the order of the query's weights).
//!
//! Memories are held by *slot*, a number handed out when a memory's data is added
//! and never reused, so that a memory changing or another one arriving does not
//! renumber the others' entries: a changed memory's old entries stay behind, dead,
//! until dead slots outnumber the living and everything is rebuilt.
//!
//! A one-shot call starts from the postings saved with the search index's main file
//! ([`Frozen`], slots the main file's entries) and adds those of the memories that
//! differ from it; a warm process builds its own.

mod frozen;

use std::sync::Arc;

#[cfg(test)]
pub(crate) use crate::retrieval::postings::frozen::SPLIT_FROM;
#[cfg(test)]
pub(crate) use crate::retrieval::postings::frozen::run_crc;
pub(crate) use crate::retrieval::postings::frozen::{Frozen, FrozenParts, le_words, runs_crc};

/// What postings read of a memory's term data (`search::DocData`): its weighted
/// field frequencies and its body lines.
pub(crate) trait Terms {
    /// Weighted term frequency over the fields, by term id.
    fn fields(&self) -> impl Iterator<Item = (u32, f64)>;
    /// Number of body lines.
    fn line_count(&self) -> usize;
    /// Line `l`: its label terms and its other terms.
    fn line(&self, l: usize) -> (&[u32], &[u32]);
    /// Each term of the body lines with the number of lines that hold it.
    fn line_terms(&self) -> impl Iterator<Item = (u32, u32)>;
}

/// A line post as the postings file keeps it: `[slot, line, len | count << 16,
/// positions]` ([`LinePost::to_saved`]). The positions (modulo 32) spare a query
/// the bigram test of a line where no pair's second term can follow its first.
pub(crate) type SavedPost = [u32; 4];

/// A slot whose memory is gone.
const DEAD: u32 = u32::MAX;

/// One line that contains a term: its memory's slot, the line's number in the body,
/// where in the line the term occurs (bit `p % 32` for each position `p`), the line's
/// number of terms, and `count << 1 | in_label` (how often the term occurs in the
/// line, and whether in its label). A length or count too large for 16 bits is
/// saturated (`u16::MAX`) and looked up in the memory's data instead.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinePost {
    pub slot: u32,
    pub line: u32,
    pub bits: u32,
    len: u16,
    count: u16,
}

impl LinePost {
    fn new(slot: u32, line: usize, bits: u32, len: usize, tf: usize, in_label: bool) -> LinePost {
        LinePost {
            slot,
            line: line as u32,
            bits,
            len: len.min(usize::from(u16::MAX)) as u16,
            count: if tf >= 0x7fff {
                u16::MAX
            } else {
                (tf as u16) << 1 | u16::from(in_label)
            },
        }
    }

    /// The post as the four words the postings file keeps.
    pub(crate) fn to_saved(self) -> SavedPost {
        [
            self.slot,
            self.line,
            u32::from(self.len) | u32::from(self.count) << 16,
            self.bits,
        ]
    }

    /// The post of [`LinePost::to_saved`].
    pub(crate) fn from_saved(w: SavedPost) -> LinePost {
        LinePost {
            slot: w[0],
            line: w[1],
            bits: w[3],
            len: w[2] as u16,
            count: (w[2] >> 16) as u16,
        }
    }

    /// The line's number of terms, the term's count in it and whether it is in the
    /// label; `d` is the memory's data and `t` the term.
    #[inline]
    pub(super) fn stats(self, d: &impl Terms, t: u32) -> (u32, u32, bool) {
        if self.len < u16::MAX && self.count < u16::MAX {
            return (
                u32::from(self.len),
                u32::from(self.count >> 1),
                self.count & 1 == 1,
            );
        }
        let (label, text) = d.line(self.line as usize);
        let tf = label.iter().chain(text).filter(|&&x| x == t).count();
        (
            (label.len() + text.len()) as u32,
            tf as u32,
            label.contains(&t),
        )
    }
}

/// The postings of a corpus's memories.
#[derive(Debug, Clone, Default)]
pub(crate) struct Postings {
    /// The postings saved with the index's main file, for its slots.
    frozen: Option<Arc<Frozen>>,
    /// Per term id: each memory that has it in a field, as (slot, the term's
    /// weighted frequency).
    docs: Vec<Vec<(u32, f64)>>,
    /// Per term id: each body line that contains it.
    lines: Vec<Vec<LinePost>>,
    /// Slot → position of its memory in the corpus, [`DEAD`] when gone.
    index: Vec<u32>,
    /// Position in the corpus → slot.
    slots: Vec<u32>,
    dead: usize,
}

impl Postings {
    /// The postings of `docs`, in corpus order.
    pub(super) fn new(docs: &[impl Terms]) -> Postings {
        let mut p = Postings::default();
        let mut scratch = Vec::new();
        for (i, d) in docs.iter().enumerate() {
            let slot = p.index.len() as u32;
            p.index.push(i as u32);
            p.slots.push(slot);
            p.add(slot, d, &mut scratch);
        }
        p
    }

    /// The postings of a corpus of `docs` from the postings saved with the index's
    /// main file: `origin[j]` is the slot (the main file's entry) whose data `docs[j]`
    /// is, `None` for data the main file does not hold (added here).
    pub(crate) fn from_frozen(
        frozen: Frozen,
        origin: &[Option<usize>],
        docs: &[impl Terms],
    ) -> Postings {
        let n = frozen.slots() as usize;
        let saved = Postings {
            frozen: Some(Arc::new(frozen)),
            index: (0..n as u32).collect(),
            slots: (0..n as u32).collect(),
            ..Postings::default()
        };
        // A slot past the main file's is data it does not hold.
        let origin: Vec<Option<usize>> = origin.iter().map(|o| o.filter(|&s| s < n)).collect();
        saved.carry(&origin, docs)
    }

    /// Whether the lists of the terms `terms` can be read: those saved with the
    /// index checked against their CRC (a query whose terms are not all whole is
    /// answered by the scan).
    pub(crate) fn check(&self, terms: impl IntoIterator<Item = u32>) -> bool {
        match &self.frozen {
            Some(f) => terms.into_iter().all(|t| f.check(t)),
            None => true,
        }
    }

    /// Each memory that has term `t` in a field: (slot, weighted frequency).
    #[inline]
    pub(crate) fn each_doc(&self, t: u32, mut f: impl FnMut(u32, f64)) {
        if let Some(fz) = &self.frozen {
            for (slot, tf) in fz.docs(t) {
                f(slot, tf);
            }
        }
        for &(slot, tf) in self.docs.get(t as usize).map_or(&[][..], Vec::as_slice) {
            f(slot, tf);
        }
    }

    /// How many memories have term `t` in a field (the dead included).
    pub(crate) fn doc_count(&self, t: u32) -> usize {
        self.frozen.as_ref().map_or(0, |f| f.doc_count(t))
            + self.docs.get(t as usize).map_or(0, Vec::len)
    }

    /// Each body line that contains term `t`.
    #[inline]
    pub(crate) fn each_line(&self, t: u32, mut f: impl FnMut(LinePost)) {
        if let Some(fz) = &self.frozen {
            for post in fz.lines(t) {
                f(post);
            }
        }
        for &post in self.lines.get(t as usize).map_or(&[][..], Vec::as_slice) {
            f(post);
        }
    }

    /// The position in the corpus of a slot's memory, `None` when it is gone.
    #[inline]
    pub(super) fn position(&self, slot: u32) -> Option<usize> {
        let i = self.index[slot as usize];
        (i != DEAD).then_some(i as usize)
    }

    fn add(&mut self, slot: u32, d: &impl Terms, scratch: &mut Vec<(u32, u32)>) {
        for (t, tf) in d.fields() {
            let t = t as usize;
            if t >= self.docs.len() {
                self.docs.resize_with(t + 1, Vec::new);
            }
            self.docs[t].push((slot, tf));
        }
        let lines = &mut self.lines;
        for l in 0..d.line_count() {
            let (label, text) = d.line(l);
            line_posts(slot, l, label, text, scratch, |t, post| {
                let t = t as usize;
                if t >= lines.len() {
                    lines.resize_with(t + 1, Vec::new);
                }
                lines[t].push(post);
            });
        }
    }

    /// Memory `i` of `docs` changed: its old entries die, its new ones come under a
    /// new slot.
    pub(super) fn replace(&mut self, i: usize, docs: &[impl Terms]) {
        let old = self.slots[i];
        self.index[old as usize] = DEAD;
        self.dead += 1;
        let slot = self.index.len() as u32;
        self.index.push(i as u32);
        self.slots[i] = slot;
        self.add(slot, &docs[i], &mut Vec::new());
        self.compact_if_due(docs);
    }

    /// Rebuilds when dead slots outnumber the living (and are many): the entries
    /// left behind then cost more to pass over than a rebuild (the saved postings
    /// then left behind too).
    fn compact_if_due(&mut self, docs: &[impl Terms]) {
        if self.dead > 1024 && self.dead > self.slots.len() {
            *self = Postings::new(docs);
        }
    }

    /// Memories carried into a new corpus: `origin[j]` is the position in this
    /// corpus of the new corpus's memory `j` when its data is the same, `None` for a
    /// memory whose data is new (`docs[j]`). The postings of the new corpus, sharing
    /// the entries of the memories carried.
    pub(super) fn carry(mut self, origin: &[Option<usize>], docs: &[impl Terms]) -> Postings {
        let mut index = vec![DEAD; self.index.len()];
        let mut slots = Vec::with_capacity(origin.len());
        let mut fresh = Vec::new();
        for (j, o) in origin.iter().enumerate() {
            match o.and_then(|i| self.slots.get(i).copied()) {
                Some(slot) if index[slot as usize] == DEAD => {
                    index[slot as usize] = j as u32;
                    slots.push(slot);
                }
                _ => {
                    slots.push(DEAD);
                    fresh.push(j);
                }
            }
        }
        self.dead = index.iter().filter(|&&x| x == DEAD).count();
        self.index = index;
        self.slots = slots;
        let mut scratch = Vec::new();
        for j in fresh {
            let slot = self.index.len() as u32;
            self.index.push(j as u32);
            self.slots[j] = slot;
            self.add(slot, &docs[j], &mut scratch);
        }
        self.compact_if_due(docs);
        self
    }
}

/// The posts of line `l` of a memory in slot `slot` (its label terms `label`, then
/// `text`), one per distinct term, in term order; `scratch` is room for the line's
/// (term, position) pairs.
pub(crate) fn line_posts(
    slot: u32,
    l: usize,
    label: &[u32],
    text: &[u32],
    scratch: &mut Vec<(u32, u32)>,
    mut emit: impl FnMut(u32, LinePost),
) {
    // (term, position in the line), label first.
    scratch.clear();
    scratch.extend(label.iter().chain(text).zip(0u32..).map(|(&t, p)| (t, p)));
    scratch.sort_unstable();
    let len = scratch.len();
    let mut k = 0;
    while k < len {
        let t = scratch[k].0;
        let mut end = k;
        let mut bits = 0u32;
        while end < len && scratch[end].0 == t {
            bits |= 1 << (scratch[end].1 % 32);
            end += 1;
        }
        // Positions are sorted within a term: the first says whether any is in the
        // label.
        let in_label = (scratch[k].1 as usize) < label.len();
        emit(t, LinePost::new(slot, l, bits, len, end - k, in_label));
        k = end;
    }
}
