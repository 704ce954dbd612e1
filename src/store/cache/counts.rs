//! The term counts a main index file keeps of its memories ([`Counts`]), carried
//! through a load: which entries of the table are still the main file's counted
//! ones, what left the table, and the corpus of a load's memories from those counts
//! and the differences (spec/architecture.md#search-index). It must not read files
//! nor decide what is saved.

use crate::retrieval::search::Frozen;
use crate::retrieval::search::{Corpus, Counts, DocData, Vocab};
use crate::store::cache::{Cache, Saved};

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
