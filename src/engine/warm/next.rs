//! The next warm store a refresh builds from the last one, memory by memory in
//! file order: memories carried as loaded, read again (kept when their content did
//! not change, else parsed and analyzed) or retired, and what MEMORY.md and the
//! corpus need to follow.
//!
//! Must not decide which files to look at (the warm store's look does).

use std::collections::BTreeMap;

use super::{FileInfo, Kept, push_problems, same_entry};
use crate::engine::Memory;
use crate::engine::hybrid;
use crate::engine::types::{Problem, short_io};
use crate::memory::frontmatter;
use crate::memory::layout::MAX_MEMORY_FILE;
use crate::memory::{Key, Record};
use crate::retrieval::search::{DocData, Vocab};
use crate::store::cache;

/// The store [`Warm::carry`] builds, memory by memory in file order.
pub(super) struct Next {
    /// Wall-clock time (ns) taken before the reads.
    pub(super) checked: i64,
    /// Whether text hashes are kept (a hybrid call asked for them).
    pub(super) hashed: bool,
    pub(super) texts: BTreeMap<String, String>,
    pub(super) vocab: Vocab,
    pub(super) files: Vec<FileInfo>,
    pub(super) records: Vec<Record>,
    pub(super) hashes: Vec<Option<[u8; 32]>>,
    pub(super) docs: Vec<DocData>,
    /// For each memory kept with its term data, its position in the old corpus.
    pub(super) origin: Vec<Option<usize>>,
    /// The term data of old memories not carried (changed or gone).
    pub(super) gone: Vec<DocData>,
    pub(super) problems: Vec<Problem>,
    pub(super) failed: Vec<String>,
    /// Whether MEMORY.md as rendered stays the same: no memory came or went, and
    /// none changed what its index line and its place there are made of.
    pub(super) same_index: bool,
}

impl Next {
    pub(super) fn new(
        n: usize,
        checked: i64,
        hashed: bool,
        texts: BTreeMap<String, String>,
        vocab: Vocab,
    ) -> Next {
        Next {
            checked,
            hashed,
            texts,
            vocab,
            files: Vec::with_capacity(n),
            records: Vec::with_capacity(n),
            hashes: Vec::with_capacity(n),
            docs: Vec::with_capacity(n),
            origin: Vec::with_capacity(n),
            gone: Vec::new(),
            problems: Vec::new(),
            failed: Vec::new(),
            same_index: true,
        }
    }

    /// Carries an old memory over as it was loaded (its warnings reported again).
    pub(super) fn carry(&mut self, name: &str, (f, (r, h), d): Kept) {
        push_problems(name, &f.warnings, &mut self.problems);
        self.files.push(f);
        self.records.push(r);
        self.hashes.push(h);
        self.docs.push(d.0);
        self.origin.push(Some(d.1));
    }

    /// An old memory not carried: see [`retire`]; MEMORY.md may change.
    pub(super) fn retire(&mut self, k: Option<Kept>) {
        retire(k, &mut self.texts, &mut self.gone);
        self.same_index = false;
    }

    /// Reads the file `name` again (`was`: the memory as it was loaded, if it was):
    /// kept as loaded when its content did not change, else parsed and analyzed.
    pub(super) fn read(&mut self, mem: &Memory, name: String, mut was: Option<Kept>) {
        let (text, stat) = match mem.backend.read_text_stat(&name, MAX_MEMORY_FILE) {
            Ok(Some(x)) => x,
            // Gone since it was listed.
            Ok(None) => return self.retire(was),
            Err(e) => {
                self.problems
                    .push(Problem::error(&name, None, short_io(&e)));
                self.failed.push(name);
                return self.retire(was);
            }
        };
        let key = cache::content_key(text.as_bytes());
        if let Some((mut f, r, d)) = was.take_if(|(f, _, _)| f.key == key) {
            f.stat = stat;
            f.checked = self.checked;
            self.texts.insert(r.0.key.to_string(), text);
            return self.carry(&name, (f, r, d));
        }
        match frontmatter::parse_read(&text) {
            Ok(p) => {
                let record = Record {
                    key: Key::from_file_stem(&name[..name.len() - 3]),
                    meta: p.meta,
                    body: p.body.into(),
                };
                push_problems(&name, &p.warnings, &mut self.problems);
                self.docs.push(DocData::of(&record, &mut self.vocab));
                self.origin.push(None);
                match was.take() {
                    Some((_, (r, _), d)) => {
                        self.same_index &= same_entry(&r, &record);
                        self.gone.push(d.0);
                    }
                    None => self.same_index = false,
                }
                self.texts.insert(record.key.to_string(), text);
                // Hashed only here: a file whose content did not change keeps its hash.
                self.hashes
                    .push(self.hashed.then(|| hybrid::text_hash_of(&record)));
                self.records.push(record);
                self.files.push(FileInfo {
                    name,
                    stat,
                    checked: self.checked,
                    key,
                    warnings: p.warnings,
                });
            }
            Err(e) => {
                self.problems
                    .push(Problem::error(&name, e.line(), format!("not loaded: {e}")));
                self.failed.push(name);
                self.retire(was.take());
            }
        }
    }
}

/// An old memory that is not carried into the new store: its text goes, its term
/// data is kept for taking its share out of the frequencies.
pub(super) fn retire(
    k: Option<Kept>,
    texts: &mut BTreeMap<String, String>,
    gone: &mut Vec<DocData>,
) {
    if let Some((_, (r, _), d)) = k {
        texts.remove(r.key.as_str());
        gone.push(d.0);
    }
}
