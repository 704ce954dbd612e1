//! The term counts a main index file keeps of its memories ([`Counts`]), carried
//! through a load: which entries of the table are still the main file's counted
//! ones, what left the table, and the corpus of a load's memories from those counts
//! and the differences (spec/architecture.md#search-index). It must not read files
//! nor decide what is saved.

use crate::retrieval::search::Frozen;
use crate::retrieval::search::{Corpus, Counts, DocData, Vocab};
use crate::store::Backend;
use crate::store::cache::{Cache, Saved, postings};

/// The main file's counts and what a load changed of the memories they count.
#[derive(Debug, Default)]
pub(super) struct MainCounts {
    base: Counts,
    /// By position in the table: whether the entry there is a main file's entry
    /// whose term data the counts hold.
    counted: Vec<bool>,
    /// The data of counted entries that left the table (replaced by the delta's, or
    /// removed), each counted once.
    gone: Vec<DocData>,
}

impl MainCounts {
    pub(super) fn new(base: Counts) -> MainCounts {
        MainCounts {
            base,
            ..MainCounts::default()
        }
    }

    /// Entry `i` of the table was set (a main file's entry with data, when
    /// `counted`), replacing `old` when there was one.
    pub(super) fn set(&mut self, i: usize, counted: bool, old: Option<Box<Saved>>) {
        if self.counted.len() <= i {
            self.counted.resize(i + 1, false);
        }
        if std::mem::replace(&mut self.counted[i], counted)
            && let Some(d) = old.and_then(|e| e.data)
        {
            self.gone.push(d);
        }
    }
}

impl Cache {
    /// Position `i` of the table when it holds a counted entry: the origin of the
    /// data handed out from it.
    pub(super) fn origin(&self, i: usize) -> Option<usize> {
        self.counts
            .as_ref()
            .filter(|c| c.counted.get(i) == Some(&true))
            .map(|_| i)
    }

    /// The corpus of `docs` (interned in `vocab`): from the main file's counts when
    /// it had them, where `origins[j]` is the position in the table of the counted
    /// entry whose data `docs[j]` is (`None`: data the counts do not hold); counted
    /// anew otherwise, or when a counted entry's data was handed out and dropped
    /// (its share could not be taken away). Also says how many memories' counts
    /// were the index's (0 when counted anew).
    pub(crate) fn corpus(
        &mut self,
        vocab: Vocab,
        docs: Vec<DocData>,
        origins: &[Option<usize>],
    ) -> (Corpus, usize) {
        let Some(mc) = self.counts.take().filter(|_| origins.len() == docs.len()) else {
            return (Corpus::from_parts(vocab, docs), 0);
        };
        let mut uses = vec![0u32; mc.counted.len()];
        let mut add: Vec<usize> = Vec::new();
        for (j, o) in origins.iter().enumerate() {
            match o {
                Some(i) => {
                    uses[*i] += 1;
                    // A copy of a file: its data counted once more.
                    if uses[*i] > 1 {
                        add.push(j);
                    }
                }
                None => add.push(j),
            }
        }
        let mut sub: Vec<&DocData> = mc.gone.iter().collect();
        for (i, _) in mc
            .counted
            .iter()
            .enumerate()
            .filter(|(i, c)| **c && uses[*i] == 0)
        {
            match self.saved[i].as_ref().and_then(|e| e.data.as_ref()) {
                Some(d) => sub.push(d),
                None => return (Corpus::from_parts(vocab, docs), 0),
            }
        }
        // Every main entry with data is a memory's here: postings made of these
        // memories are the main file's whole.
        self.all_of_main = sub.is_empty();
        let kept = docs.len() - add.len();
        let mut corpus = Corpus::from_counted(vocab, docs, mc.base, &add, sub);
        if let Some(f) = self.frozen.take().and_then(Frozen::new) {
            corpus.attach_saved(f, origins);
        }
        (corpus, kept)
    }
}

impl Cache {
    /// Writes the postings of the loaded main file when it has none of its own (an
    /// index written before them, or their file lost or of another generation) and
    /// this load's memories hold every main entry's data (`origins[j]`: the entry
    /// whose data memory `j` of `corpus` has). Not when this load wrote a new main
    /// file (written with it). Failures are ignored. Returns the bytes written.
    pub(crate) fn save_missing_postings(
        &self,
        backend: &Backend,
        corpus: &Corpus,
        origins: &[Option<usize>],
    ) -> u64 {
        if !self.postings_wanted
            || self.postings_bytes > 0
            || !self.all_of_main
            || self.wrote_main.load(std::sync::atomic::Ordering::Relaxed)
        {
            return 0;
        }
        let (vocab, docs) = corpus.parts();
        if origins.len() != docs.len() {
            return 0;
        }
        let mut by_slot: Vec<(u32, &DocData)> = Vec::with_capacity(docs.len());
        for (d, o) in docs.iter().zip(origins) {
            if let Some(s) = o {
                by_slot.push((*s as u32, d));
            }
        }
        by_slot.sort_by_key(|x| x.0);
        by_slot.dedup_by_key(|x| x.0);
        let Ok(slots) = u32::try_from(self.main_entries) else {
            return 0;
        };
        if by_slot.last().is_some_and(|x| x.0 >= slots) {
            return 0;
        }
        postings::save(backend, self.generation, slots, vocab.len(), &by_slot)
    }
}
