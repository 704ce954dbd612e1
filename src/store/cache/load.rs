//! Loading the search index ([`Cache::load`]): the main file, then the delta when it
//! applies to that main file, merged into one table of entries by file (a delta entry
//! replaces the main file's, a recorded removal hides it). It must not fail: a
//! missing, corrupt or foreign index loads as empty, and a chunk of either file that
//! fails its checksum is left out (its files are read again; for the delta, the main
//! file's entry stands in, as trustworthy as any: by its stat or its content key).

use std::collections::HashSet;

use crate::memory::layout::{
    MAX_SEARCH_INDEX, SEARCH_DELTA_FILE, SEARCH_INDEX_FILE, SEARCH_POSTINGS_FILE,
};
use std::sync::Arc;

use crate::retrieval::search::{IN_PLACE, SharedBytes, Vocab};
use crate::store::cache::counts::MainCounts;
use crate::store::cache::{Cache, IndexFile, Loaded, Saved, postings};
use crate::store::{Backend, Stat};

impl Cache {
    /// Loads the index of a store (empty, and never written, in memory); the term
    /// data only with `terms` (a load that does not rank by a query skips it).
    pub(crate) fn load(backend: &Backend, terms: bool) -> Cache {
        if matches!(backend, Backend::Mem(_)) {
            return Cache::default();
        }
        // An index with nothing loaded yet (what a missing or foreign one loads as).
        let empty = || Cache {
            enabled: true,
            terms,
            ..Cache::default()
        };
        let mut cache = empty();
        let read = |rel: &str| {
            backend.map(rel, MAX_SEARCH_INDEX).ok().flatten().map(|b| {
                let shared: SharedBytes = Arc::new(b);
                let len = (*shared).as_ref().len() as u64;
                (len, IndexFile::decode_shared(&shared, terms))
            })
        };
        let Some((bytes, Some(main))) = read(SEARCH_INDEX_FILE) else {
            return cache;
        };
        if main.base != 0 || main.vocab_start != 0 {
            return cache;
        }
        cache.main_bytes = bytes;
        cache.main_damaged = main.damaged;
        // Counts that hold every entry's data as loaded.
        if !(main.damaged || main.data_dropped) {
            cache.counts = main.counts.map(MainCounts::new);
        }
        cache.generation = main.generation;
        // The vocabulary's map is built on a thread of its own while the main file's
        // entries go into the table (they do not need it; the delta's terms do).
        let (terms_of_main, entries) = (main.terms, main.entries);
        let n_main = entries.len();
        let vocab = std::thread::scope(|scope| {
            let vocab = scope.spawn(move || Vocab::from_terms(terms_of_main));
            cache.merge(entries, Vec::new());
            vocab
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
        });
        // The postings of the main file's entries, by their place in it: the place
        // of each in the table (a file twice in the main file would shift them).
        // Only where they are read in place: a copy of every run would cost more
        // than the scan they spare.
        cache.main_entries = n_main;
        if IN_PLACE && terms && cache.counts.is_some() && cache.saved.len() == n_main {
            cache.postings_wanted = true;
            if let Some(b) = backend
                .map_sparse(SEARCH_POSTINGS_FILE, MAX_SEARCH_INDEX)
                .ok()
                .flatten()
            {
                let shared: SharedBytes = Arc::new(b);
                cache.frozen = postings::read(&shared, cache.generation, n_main);
                if cache.frozen.is_some() {
                    cache.postings_bytes = (*shared).as_ref().len() as u64;
                }
            }
        }
        let Some(vocab) = vocab else {
            return empty();
        };
        cache.main_vocab_len = vocab.len();
        cache.vocab = vocab;
        let delta = read(SEARCH_DELTA_FILE).and_then(|(dbytes, d)| cache.take_delta(dbytes, d?));
        cache.loaded_vocab_len = cache.vocab.len();
        let (delta_entries, removed) =
            delta.map_or((Vec::new(), Vec::new()), |d| (d.entries, d.removed));
        cache.merge(Vec::new(), delta_entries);
        cache.hide_removed(removed);
        cache
    }

    /// The delta file of `dbytes` bytes when it is a delta on the loaded main file,
    /// its terms then interned (`None`, and nothing changed, otherwise).
    fn take_delta(&mut self, dbytes: u64, d: IndexFile) -> Option<IndexFile> {
        if d.base != self.generation || d.vocab_start as usize != self.vocab.len() {
            return None;
        }
        // The delta's terms are all new, and new once each.
        let mut seen = HashSet::with_capacity(d.terms.len());
        if !d
            .terms
            .iter()
            .all(|t| self.vocab.get(t).is_none() && seen.insert(t.as_str()))
        {
            return None;
        }
        for t in &d.terms {
            self.vocab.intern(t);
        }
        self.delta_bytes = dbytes;
        self.delta_files = d.entries.len() + d.removed.len();
        Some(d)
    }

    /// Adds the main file's entries, then the delta's, each replacing the main
    /// file's entry for its file (a load adds the main file's, then, once the
    /// vocabulary is known, the delta's: the same as both in one call).
    #[allow(clippy::vec_box)] // see `IndexFile::entries`
    fn merge(&mut self, main: Vec<Box<Saved>>, delta: Vec<Box<Saved>>) {
        let total = main.len() + delta.len();
        self.saved.reserve(total);
        self.by_file.reserve(total);
        self.loaded.reserve(total);
        for (in_delta, e) in main
            .into_iter()
            .map(|e| (false, e))
            .chain(delta.into_iter().map(|e| (true, e)))
        {
            // An entry of the delta replaces the main file's entry for its file.
            let in_main = match self.by_file.get(&e.file) {
                Some(_) if in_delta => true,
                _ => !in_delta,
            };
            self.add(e, in_main, in_delta);
        }
    }

    /// Records the files the delta says were removed from the main file.
    fn hide_removed(&mut self, removed: Vec<String>) {
        for f in removed {
            // Removed from the main file (a file the delta also holds stays).
            if let Some(&i) = self.by_file.get(&f)
                && !self.loaded[i].in_delta
            {
                let old = self.saved[i].take();
                if let Some(c) = &mut self.counts {
                    c.set(i, false, old);
                }
                self.loaded[i] = Loaded {
                    stat: Stat::default(),
                    checked: 0,
                    key: String::new(),
                    has_data: false,
                    in_main: true,
                    in_delta: true,
                };
            }
        }
    }

    /// Adds one loaded entry (its term data checked against its file's vocabulary
    /// when decoded: the loaded vocabulary extends it), in the place of the entry
    /// already there for its file.
    fn add(&mut self, e: Box<Saved>, in_main: bool, in_delta: bool) {
        let info = Loaded {
            stat: e.stat,
            checked: e.checked,
            key: e.key.clone(),
            has_data: e.has_data,
            in_main,
            in_delta,
        };
        let counted = !in_delta && e.data.is_some();
        match self.by_file.get(&e.file) {
            Some(&i) => {
                self.loaded[i] = info;
                let old = self.saved[i].replace(e);
                if let Some(c) = &mut self.counts {
                    c.set(i, counted, old);
                }
            }
            None => {
                if let Some(c) = &mut self.counts {
                    c.set(self.saved.len(), counted, None);
                }
                self.by_file.insert(e.file.clone(), self.saved.len());
                self.loaded.push(info);
                self.saved.push(Some(e));
            }
        }
    }
}
