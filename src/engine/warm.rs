//! A warm store: a long-running process (`memdir mcp`, `memdir watch`) keeps the
//! loaded memories, their term statistics and the rendered MEMORY.md in memory, so
//! that a call does the work of its query and little else
//! (spec/architecture.md#search-index).
//!
//! Each call checks the files with one `fstatat` each (no read): a file whose stat is
//! what it was when last read, and which had not changed for the index's margin
//! before that read, is kept as loaded; any other is read and hashed, and parsed and
//! analyzed only when its content changed. Files added or removed are found by the
//! same scan. The rule is the search index's, so a warm process sees exactly what a
//! fresh one would.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::engine::hybrid::{self, Loaded};
use crate::engine::{Memory, Problem, finish_problems};
use crate::error::Result;
use crate::memory::frontmatter::{self, Warning};
use crate::memory::layout::{INDEX_FILE, MAX_MEMORY_FILE};
use crate::memory::{Key, Record};
use crate::retrieval::search::{Corpus, DocData};
use crate::store::Stat;
use crate::store::cache::{self, RACY_NS};

/// What a load found of one record's file.
#[derive(Debug, Clone)]
pub(crate) struct FileInfo {
    pub name: String,
    pub stat: Option<Stat>,
    /// Wall-clock time (ns) taken before the read.
    pub checked: i64,
    /// Hex SHA-256 of the content.
    pub key: String,
    pub warnings: Vec<Warning>,
}

impl FileInfo {
    fn settled(&self, stat: &Option<Stat>) -> bool {
        match (&self.stat, stat) {
            (Some(a), Some(b)) => a == b && a.changed_ns() < self.checked - RACY_NS,
            _ => false,
        }
    }
}

/// One loaded file of the previous scan: its stat, its record and text hash, its
/// term data.
type Kept = (FileInfo, (Record, Option<[u8; 32]>), DocData);

/// The loaded store of a warm process.
#[derive(Debug)]
pub(crate) struct Warm {
    files: Vec<FileInfo>,
    records: Vec<Record>,
    /// The text hash of each record's embedded text (`hybrid::text_of`), once a
    /// hybrid call asked for them (empty until then: a keyword-only store never
    /// hashes); then computed only when a record is parsed (spec/ranking.md#hybrid-recall).
    hashes: Vec<[u8; 32]>,
    hashed: bool,
    /// The vector cache, loaded on the first hybrid call.
    pub vectors: Option<Loaded>,
    texts: BTreeMap<String, String>,
    corpus: Corpus,
    /// Problems of the last scan (file order).
    problems: Vec<Problem>,
    /// MEMORY.md as rendered from `records`, and the stat of the MEMORY.md on disk
    /// when it was last found equal to it.
    index_text: Option<String>,
    index_stat: Option<Stat>,
}

/// Wall-clock time in nanoseconds: when a read happened, for the search index's rule.
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl Warm {
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    pub fn corpus(&self) -> &Corpus {
        &self.corpus
    }

    /// The texts without a vector in the cache at `path` of `dimensions`, each
    /// once, in store order (the background worker's list, `backfill`).
    pub fn missing_vectors(&mut self, path: &Path, dimensions: usize) -> Vec<([u8; 32], String)> {
        self.hash();
        let l = Loaded::sync(&mut self.vectors, path, dimensions);
        hybrid::missing_of(&self.records, &self.hashes, &l.vectors, usize::MAX)
    }

    /// Keeps vectors embedded by the background worker (dropped when the cache
    /// now loaded is another model's).
    pub fn add_vectors(&mut self, path: &Path, vectors: Vec<([u8; 32], Vec<f32>)>) {
        if let Some(l) = self.vectors.as_mut().filter(|l| l.path() == path) {
            for (h, v) in vectors {
                l.vectors.insert(h, v);
            }
        }
    }

    /// Hashes every record's embedded text, the first time only.
    fn hash(&mut self) {
        if !self.hashed {
            self.hashes = hybrid::hashes_of(&self.records);
            self.hashed = true;
        }
    }

    /// Hybrid ranking's first step on this store ([`hybrid::State::prepare_warm`]).
    pub fn prepare_hybrid(&mut self, hy: &mut hybrid::State) {
        self.hash();
        hy.prepare_warm(&self.records, &self.hashes, &mut self.vectors);
    }

    /// Hybrid ranking's last step on this store ([`hybrid::State::finish_warm`]).
    pub fn finish_hybrid(
        &mut self,
        hy: &mut hybrid::State,
        keyword: Vec<f64>,
    ) -> (Vec<f64>, Option<hybrid::Report>) {
        self.hash();
        hy.finish_warm(&self.records, &self.hashes, &mut self.vectors, keyword)
    }

    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// MEMORY.md for the records, rebuilt on disk when it is stale: checked against
    /// the file only when the records or the file changed since the last check.
    pub fn index_text(&mut self, mem: &Memory) -> Result<&str> {
        let stat = mem.backend.stat(INDEX_FILE);
        if self.index_text.is_none() || stat.is_none() || stat != self.index_stat {
            let (text, _) = mem.refresh_index_if_stale(&self.records)?;
            self.index_text = Some(text);
            self.index_stat = mem.backend.stat(INDEX_FILE);
        }
        Ok(self.index_text.as_deref().unwrap_or_default())
    }

    /// The warm store as of now: `prev` brought up to date, or a first load through
    /// the search index.
    fn refresh(mem: &Memory, prev: Option<Warm>) -> Result<Warm> {
        let Some(prev) = prev else {
            let (snap, corpus, _, files) = mem.load_files(true)?;
            return Ok(Warm {
                files,
                hashes: Vec::new(),
                hashed: false,
                vectors: None,
                records: snap.records,
                texts: snap.texts,
                corpus: corpus.expect("a corpus was asked for"),
                problems: snap.problems,
                index_text: None,
                index_stat: None,
            });
        };
        mem.require_dir()?;
        let checked = now_ns();
        let mut problems = Vec::new();
        let names = mem.scan_names(&mut problems)?;
        let stats = mem.backend.stats(&names);
        let unchanged = names.len() == prev.files.len()
            && problems.is_empty()
            && prev.problems.is_empty()
            && names
                .iter()
                .zip(&stats)
                .zip(&prev.files)
                .all(|((n, st), f)| *n == f.name && f.settled(st));
        if unchanged {
            return Ok(prev);
        }
        let Warm {
            files: prev_files,
            records: prev_records,
            hashes: prev_hashes,
            hashed,
            vectors,
            mut texts,
            corpus,
            index_stat,
            ..
        } = prev;
        let (mut vocab, prev_docs) = corpus.into_parts();
        let at: HashMap<String, usize> = prev_files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), i))
            .collect();
        let mut old: Vec<Option<Kept>> = prev_files
            .into_iter()
            .zip(
                prev_records.into_iter().zip(
                    prev_hashes
                        .into_iter()
                        .map(Some)
                        .chain(std::iter::repeat(None)),
                ),
            )
            .zip(prev_docs)
            .map(|((f, r), d)| Some((f, r, d)))
            .collect();
        let mut files = Vec::with_capacity(names.len());
        let mut records = Vec::with_capacity(names.len());
        let mut hashes = Vec::with_capacity(names.len());
        let mut docs = Vec::with_capacity(names.len());
        let mut new_texts = BTreeMap::new();
        for (name, stat) in names.into_iter().zip(stats) {
            let mut was = at.get(&name).and_then(|&j| old[j].take());
            if let Some((f, (r, h), d)) = was.take_if(|(f, _, _)| f.settled(&stat)) {
                if let Some(t) = texts.remove(r.key.as_str()) {
                    new_texts.insert(r.key.to_string(), t);
                }
                push_problems(&name, &f.warnings, &mut problems);
                files.push(f);
                records.push(r);
                hashes.push(h);
                docs.push(d);
                continue;
            }
            let (text, stat) = match mem.backend.read_text_stat(&name, MAX_MEMORY_FILE) {
                Ok(Some(x)) => x,
                Ok(None) => continue,
                Err(e) => {
                    problems.push(Problem::error(&name, None, super::short_io(&e)));
                    continue;
                }
            };
            let key = cache::content_key(text.as_bytes());
            if let Some((mut f, (r, h), d)) = was.take_if(|(f, _, _)| f.key == key) {
                f.stat = stat;
                f.checked = checked;
                push_problems(&name, &f.warnings, &mut problems);
                new_texts.insert(r.key.to_string(), text);
                files.push(f);
                records.push(r);
                hashes.push(h);
                docs.push(d);
                continue;
            }
            match frontmatter::parse_read(&text) {
                Ok(p) => {
                    let record = Record {
                        key: Key::from_file_stem(&name[..name.len() - 3]),
                        meta: p.meta,
                        body: p.body,
                    };
                    push_problems(&name, &p.warnings, &mut problems);
                    docs.push(DocData::of(&record, &mut vocab));
                    new_texts.insert(record.key.to_string(), text);
                    // Hashed only here: a file whose content did not change keeps its hash.
                    hashes.push(hashed.then(|| hybrid::text_hash_of(&record)));
                    records.push(record);
                    files.push(FileInfo {
                        name,
                        stat,
                        checked,
                        key,
                        warnings: p.warnings,
                    });
                }
                Err(e) => {
                    problems.push(Problem::error(&name, e.line(), format!("not loaded: {e}")))
                }
            }
        }
        finish_problems(&mut problems, &records);
        Ok(Warm {
            files,
            hashes: if hashed {
                records
                    .iter()
                    .zip(hashes)
                    .map(|(r, h)| h.unwrap_or_else(|| hybrid::text_hash_of(r)))
                    .collect()
            } else {
                Vec::new()
            },
            records,
            hashed,
            vectors,
            texts: new_texts,
            corpus: Corpus::from_parts(vocab, docs),
            problems,
            index_text: None,
            index_stat,
        })
    }
}

/// The warnings a loaded file gives: a file name that is not a key, and the
/// parse's warnings (what [`Memory::load`] reports for a file that loads).
pub(crate) fn push_problems(name: &str, warnings: &[Warning], problems: &mut Vec<Problem>) {
    if !Key::from_file_stem(&name[..name.len() - 3]).is_canonical() {
        problems.push(Problem::warning(
            name,
            None,
            "file name is not a memdir key (a-z, 0-9, `_`, `-`); it loads, but memdir cannot write it",
        ));
    }
    for w in warnings {
        problems.push(Problem::warning(name, Some(w.line), w.message.clone()));
    }
}

impl Memory {
    /// Keeps the loaded store in memory between calls (a long-running process:
    /// `memdir mcp`, `memdir watch`): `recall` and `context` then check each file's
    /// stat instead of loading the store (spec/architecture.md#search-index).
    pub fn keep_warm(mut self) -> Memory {
        self.warm = Some(std::sync::Mutex::new(None));
        self
    }

    /// Runs `f` on the warm store as it is, without looking at the files (a first
    /// call loads it); `None` when this memory is not kept warm.
    pub(crate) fn with_warm_as_is<R>(
        &self,
        f: impl FnOnce(&mut Warm) -> Result<R>,
    ) -> Option<Result<R>> {
        let slot = self.warm.as_ref()?;
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            match Warm::refresh(self, None) {
                Ok(w) => *guard = Some(w),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(f(guard.as_mut().expect("loaded above")))
    }

    /// Writes the warm store's vector cache when it gained vectors: encoded under
    /// the lock, written with the lock released.
    pub(crate) fn save_warm_vectors(&self) {
        let Some(slot) = self.warm.as_ref() else {
            return;
        };
        // Encodings are written in the order they were made.
        let _one = hybrid::saving();
        let job = {
            let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
            guard
                .as_mut()
                .and_then(|w| w.vectors.as_mut())
                .and_then(Loaded::take_save)
        };
        let Some((path, bytes)) = job else { return };
        let written = hybrid::write_save(&path, &bytes);
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = guard.as_mut().and_then(|w| w.vectors.as_mut()) {
            l.saved(&path, written);
        }
    }

    /// Runs `f` on the warm store brought up to date; `None` when this memory is not
    /// kept warm.
    pub(crate) fn with_warm<R>(&self, f: impl FnOnce(&mut Warm) -> Result<R>) -> Option<Result<R>> {
        let slot = self.warm.as_ref()?;
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        let prev = guard.take();
        let mut w = match Warm::refresh(self, prev) {
            Ok(w) => w,
            Err(e) => return Some(Err(e)),
        };
        let out = f(&mut w);
        *guard = Some(w);
        Some(out)
    }
}
