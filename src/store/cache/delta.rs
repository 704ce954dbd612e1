//! Saving the search index ([`Cache::save`]): whether anything changed since the load,
//! and then either a delta file on the loaded main file (what differs from it) or,
//! past the delta's share, a new main file streamed from the load's items, with its
//! postings; and the postings of a loaded main file that has none of its own
//! ([`Cache::save_missing_postings`]). It must not
//! fail a load (every failure is ignored) nor know the bytes of the format (that is
//! `codec`'s).

use std::collections::HashSet;

use std::sync::atomic::Ordering;

use crate::memory::layout::{LEGACY_PARSE_CACHE, SEARCH_DELTA_FILE, SEARCH_INDEX_FILE};
use crate::retrieval::search::{Corpus, Counts, DocData, Vocab};
use crate::store::Backend;
use crate::store::cache::codec::{CHUNK, encode_chunk_into, encode_counts, encode_head};
use crate::store::cache::{Cache, IndexFile, Item, Saved, postings};

/// The delta is folded into the main file when it holds more than this share of
/// the entries (or more than [`FOLD_MIN`] when the store is small).
const FOLD_SHARE: usize = 8;
const FOLD_MIN: usize = 256;

/// Chunks encoded at a time when a main file is written.
const WRITE_WINDOW: usize = 8;

fn new_generation(old: u64) -> u64 {
    let t = crate::clock::Clock::wall()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let g = t ^ (u64::from(std::process::id()) << 32) ^ old.rotate_left(17);
    if g == 0 || g == old {
        old.wrapping_add(1).max(1)
    } else {
        g
    }
}

impl Cache {
    /// Saves the index for the files of this load (`items`, in scan order) when
    /// anything differs from what was loaded: what differs from the main file goes
    /// to the delta file, unless the delta would grow past its share; then
    /// everything goes to a new main file. `vocab` is the vocabulary the items' data
    /// uses (this cache's, grown). Failures are ignored: the index is only an
    /// optimization.
    ///
    /// Returns the size of the index files afterwards (0 in memory).
    pub(crate) fn save(&self, backend: &Backend, vocab: &Vocab, items: &[Item<'_>]) -> u64 {
        if !self.enabled {
            return 0;
        }
        if vocab.len() == self.loaded_vocab_len && self.unchanged(items.iter().copied()) {
            return self.bytes();
        }
        let present: HashSet<&str> = items.iter().map(|i| i.file).collect();
        let changed = items.iter().filter(|it| !self.same(it)).count();
        let removed: Vec<String> = self
            .infos()
            .filter(|(f, e)| e.in_main && !present.contains(f.as_str()))
            .map(|(f, _)| f.clone())
            .collect();
        let newly_removed = self
            .infos()
            // A file the loaded delta already records as removed is not news.
            .filter(|(f, e)| !(present.contains(f.as_str()) || e.is_removal()))
            .count();
        if changed == 0 && newly_removed == 0 && vocab.len() == self.loaded_vocab_len {
            return self.bytes();
        }
        let version = env!("CARGO_PKG_VERSION").to_string();
        let delta_size = self.delta_files + changed + newly_removed;
        if self.main_bytes > 0
            && !(self.main_damaged && self.terms)
            && vocab.len() >= self.main_vocab_len
            && (!self.terms || delta_size <= (items.len() / FOLD_SHARE).max(FOLD_MIN))
        {
            return self.write_delta(backend, vocab, items, version, removed);
        }
        self.write_main(backend, vocab, items, &version)
    }

    /// Writes the delta file: everything that differs from the main file, what the
    /// delta held (still true unless changed again) and what changed now, and the
    /// files `removed` from the main file.
    fn write_delta(
        &self,
        backend: &Backend,
        vocab: &Vocab,
        items: &[Item<'_>],
        version: String,
        mut removed: Vec<String>,
    ) -> u64 {
        let entries: Vec<Box<Saved>> = items
            .iter()
            .filter(|it| !self.same(it) || self.info(it.file).is_none_or(|e| e.in_delta))
            .filter_map(Saved::of)
            .map(Box::new)
            .collect();
        removed.sort();
        let f = IndexFile {
            version,
            generation: self.generation,
            base: self.generation,
            vocab_start: self.main_vocab_len as u32,
            terms: vocab.terms()[self.main_vocab_len..].to_vec(),
            counts: None,
            entries,
            removed,
            damaged: false,
            data_dropped: false,
        };
        let bytes = f.encode();
        match backend.write_atomic(SEARCH_DELTA_FILE, &bytes) {
            Ok(()) => self.main_bytes + self.postings_bytes + bytes.len() as u64,
            Err(_) => self.bytes(),
        }
    }

    /// Writes a new main file of every item with a stat, and removes the delta (and
    /// the legacy parse cache) once it is written.
    fn write_main(
        &self,
        backend: &Backend,
        vocab: &Vocab,
        items: &[Item<'_>],
        version: &str,
    ) -> u64 {
        // Streamed: a few chunks at a time are encoded (on every core) straight from
        // the items and written, so the file is never held whole, nor the entries
        // copied.
        let kept: Vec<&Item<'_>> = items.iter().filter(|it| it.stat.is_some()).collect();
        let chunks: Vec<&[&Item<'_>]> = kept.chunks(CHUNK).collect();
        // The term counts of the data written, so that a load need not count them.
        let data: Vec<&DocData> = kept.iter().filter_map(|it| it.data).collect();
        let counts = encode_counts(Some(&Counts::of(&data, vocab.len())));
        let generation = new_generation(self.generation);
        let head = encode_head(
            version,
            generation,
            (0, 0),
            vocab.terms(),
            &[],
            chunks.len(),
        );
        let mut size = head.len() + counts.len();
        // The postings, of the same items under the same generation, are built on
        // a thread of their own while the main file is encoded and written (once
        // its file could be made: a folder that cannot be written costs no build).
        let docs = if self.terms {
            postings_docs(&kept)
        } else {
            None
        };
        let (written, parts) = std::thread::scope(|scope| {
            let mut building = None;
            let written = backend.write_atomic_with(SEARCH_INDEX_FILE, |w| {
                if let Some((slots, docs)) = &docs {
                    building = Some(scope.spawn(|| postings::build(*slots, vocab.len(), docs)));
                }
                w.write_all(&head)?;
                w.write_all(&counts)?;
                // The window's buffers, handed back to the next window's chunks.
                let mut bufs: Vec<Vec<u8>> = Vec::new();
                for window in chunks.chunks(WRITE_WINDOW) {
                    bufs.resize_with(window.len().max(bufs.len()), Vec::new);
                    let jobs: Vec<(&[&Item<'_>], Vec<u8>)> =
                        window.iter().copied().zip(bufs.drain(..)).collect();
                    let parts = crate::store::par_map_owned(jobs, 2, |(chunk, buf)| {
                        encode_chunk_into(chunk, buf)
                    });
                    for part in parts {
                        w.write_all(&part)?;
                        size += part.len();
                        bufs.push(part);
                    }
                }
                Ok(())
            });
            let parts =
                building.and_then(|b| b.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            (written, parts)
        });
        if written.is_ok() {
            self.wrote_main.store(true, Ordering::Relaxed);
            let _ = backend.remove(SEARCH_DELTA_FILE);
            if backend.is_file(LEGACY_PARSE_CACHE) {
                let _ = backend.remove(LEGACY_PARSE_CACHE);
            }
            // Without postings (none could be built) a one-shot query scans.
            let postings = parts.map_or(0, |p| postings::save_built(backend, generation, &p));
            return size as u64 + postings;
        }
        self.bytes()
    }
}

/// The slots and data of `kept` (a new main file's entries, in order) its postings
/// are built from; `None` past 32-bit slots (no postings: a one-shot query then
/// scans).
fn postings_docs<'a>(kept: &[&Item<'a>]) -> Option<(u32, Vec<(u32, &'a DocData)>)> {
    let slots = u32::try_from(kept.len()).ok()?;
    let docs = kept
        .iter()
        .enumerate()
        .filter_map(|(k, it)| it.data.map(|d| (k as u32, d)))
        .collect();
    Some((slots, docs))
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
