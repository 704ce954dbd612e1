//! A warm store: a long-running process (`memdir mcp`, `memdir watch`) keeps the
//! loaded memories, their term statistics and the rendered MEMORY.md in memory, so
//! that a call does the work of its query and little else
//! (spec/architecture.md#warm-processes).
//!
//! Each call first learns which files changed. Where the folder's change events can
//! be trusted (a local file system on Linux, [`DirWatch`]), it drains them: only the
//! names they mention are looked at, and a call on an unchanged store touches no file.
//! Elsewhere, or when events were lost, it checks the files with one `fstatat` each
//! (no read): a file whose stat is what it was when last read, and which had not
//! changed for the index's margin before that read, is kept as loaded. Any other file
//! is read and hashed, and parsed and analyzed only when its content changed. Either
//! way a warm process sees exactly what a fresh one would.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

mod next;
use next::Next;

use crate::engine::Memory;
use crate::engine::found_problem;
use crate::engine::hybrid::{self, Loaded};
use crate::engine::types::Problem;
use crate::engine::types::finish_problems;
use crate::error::Result;
use crate::memory::frontmatter::{self, Warning};
use crate::memory::layout::{INDEX_FILE, MAX_MEMORY_FILE};
use crate::memory::{Key, Record};
use crate::retrieval::hybrid::Passages;
use crate::retrieval::rank::standing::Standing;
use crate::retrieval::search::{Corpus, DocData};
use crate::store::cache::{self, RACY_NS};
use crate::store::watch::{Changes, DirWatch};
use crate::store::{Backend, Entry, Found, Stat, is_memory_name};

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
/// The term data comes with its position in the old corpus.
type Kept = (FileInfo, (Record, Option<[u8; 32]>), (DocData, usize));

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
    /// The folder's change events, when they can be trusted.
    watch: Option<DirWatch>,
    /// What the last look found of names that are not regular files (links,
    /// folders), which events carry forward until the name is touched again.
    scanned: Vec<Problem>,
    /// Memory files that did not load last time (unreadable, or not parsed): looked
    /// at again on every call, as a scan would.
    failed: Vec<String>,
    /// The records' query-less order, kept until they change
    /// ([`Warm::prepare_standing`]).
    standing: Option<Standing>,
}

/// The warm slot of a [`Memory`]: how changes are found, and the store once loaded.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Check every file's stat on each call, never change events.
    by_stat: bool,
    warm: Option<Warm>,
}

/// Wall-clock time in nanoseconds: when a read happened, for the search index's rule.
pub(crate) fn now_ns() -> i64 {
    crate::clock::Clock::wall()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl Warm {
    pub(crate) fn records(&self) -> &[Record] {
        &self.records
    }

    pub(crate) fn corpus(&self) -> &Corpus {
        &self.corpus
    }

    /// The texts without a vector in the cache file `rel` of `dimensions` (read
    /// through `backend`), each once, in store order (the background worker's list,
    /// `backfill`).
    pub(crate) fn missing_vectors(
        &mut self,
        backend: &Backend,
        rel: &str,
        dimensions: usize,
    ) -> Vec<([u8; 32], String)> {
        self.hash();
        let l = Loaded::sync(&mut self.vectors, backend, rel, dimensions);
        let (records, hashes) = (&self.records, &self.hashes);
        hybrid::missing_of(
            records,
            hashes,
            |i| l.vectors.get(&hashes[i]).is_some(),
            usize::MAX,
        )
    }

    /// Keeps vectors embedded by the background worker (dropped when the cache
    /// now loaded is another model's).
    pub(crate) fn add_vectors(&mut self, rel: &str, vectors: Vec<([u8; 32], Vec<f32>)>) {
        if let Some(l) = self.vectors.as_mut().filter(|l| l.rel() == rel) {
            for (h, v) in vectors {
                l.vectors.insert(h, v);
            }
        }
    }

    /// Drops the vectors of texts no memory has any more from the vectors of the
    /// cache file `rel` (those of another model's cache are left alone); with
    /// `passages`, a memory's lines are among its texts.
    pub(crate) fn prune_vectors(&mut self, rel: &str, passages: bool) {
        self.hash();
        if let Some(l) = self.vectors.as_mut().filter(|l| l.rel() == rel) {
            l.vectors
                .retain(hybrid::live_hashes(&self.records, &self.hashes, passages));
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
    pub(crate) fn prepare_hybrid(&mut self, hy: &mut hybrid::State) {
        self.hash();
        hy.prepare_warm(&self.records, &self.hashes, &mut self.vectors);
    }

    /// Hybrid ranking's last step on this store ([`hybrid::State::finish_warm`]).
    pub(crate) fn finish_hybrid(
        &mut self,
        hy: &mut hybrid::State,
        keyword: Vec<f64>,
        plan: Option<&hybrid::PassagePlan>,
    ) -> (Vec<f64>, Option<hybrid::Report>, Option<Passages>) {
        self.hash();
        hy.finish_warm(
            &self.records,
            &self.hashes,
            &mut self.vectors,
            keyword,
            plan,
        )
    }

    /// The lines a context compares with the query on this store, for the fused
    /// `relevance` of its memories ([`hybrid::State::plan_passages`]).
    pub(crate) fn plan_passages(
        &self,
        hy: &hybrid::State,
        relevance: &[f64],
    ) -> hybrid::PassagePlan {
        hy.plan_passages(&self.records, relevance, self.vectors.as_ref())
    }

    /// Makes the records' standing for calls at `now` (and later) unless the one
    /// kept holds (spec/architecture.md#warm-processes).
    pub(crate) fn prepare_standing(&mut self, now: DateTime<Utc>) {
        if !self
            .standing
            .as_ref()
            .is_some_and(|s| s.holds(&self.records, now))
        {
            self.standing = Some(Standing::of(&self.records, now));
        }
    }

    /// The standing [`Warm::prepare_standing`] made.
    pub(crate) fn standing(&self) -> Option<&Standing> {
        self.standing.as_ref()
    }

    pub(crate) fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Brings MEMORY.md for the records up to date, rebuilt on disk when it is
    /// stale: checked against the file only when the records or the file changed
    /// since the last check. [`Warm::index_text`] then reads it.
    pub(crate) fn refresh_index_text(&mut self, mem: &Memory) -> Result<()> {
        let stat = mem.backend.stat(INDEX_FILE);
        if self.index_text.is_none() || stat.is_none() || stat != self.index_stat {
            let (text, _) = mem.refresh_index_if_stale(&self.records)?;
            self.index_text = Some(text);
            self.index_stat = mem.backend.stat(INDEX_FILE);
        }
        Ok(())
    }

    /// MEMORY.md as of the last [`Warm::refresh_index_text`], read in place (at
    /// 100,000 memories it is some 10 MB, which a copy per call would write anew).
    pub(crate) fn index_text(&self) -> &str {
        self.index_text.as_deref().unwrap_or_default()
    }

    /// The warm store as of now: `prev` brought up to date, or a first load through
    /// the search index.
    fn refresh(mem: &Memory, prev: Option<Warm>, by_stat: bool) -> Result<Warm> {
        let Some(mut prev) = prev else {
            return Warm::first_load(mem, by_stat);
        };
        mem.require_dir()?;
        let checked = now_ns();
        match prev.look(mem, checked)? {
            None => Ok(prev),
            Some(look) => Ok(prev.carry(mem, look, checked)),
        }
    }

    /// The first load of a warm store, through the search index.
    fn first_load(mem: &Memory, by_stat: bool) -> Result<Warm> {
        // Watching starts before the load, so a change made during it is an
        // event for the next call.
        let watch = match &mem.backend {
            Backend::Dir(root) if !by_stat => DirWatch::new(root),
            _ => None,
        };
        let load = mem.load_files(true, true)?;
        let (snap, corpus, files) = (load.snap, load.corpus, load.infos);
        // What is not a regular file, and what did not load, for the events.
        let mut scanned = Vec::new();
        let names = if watch.is_some() {
            mem.scan_names(&mut scanned)?
        } else {
            Vec::new()
        };
        let loaded: std::collections::HashSet<&str> =
            files.iter().map(|f| f.name.as_str()).collect();
        let failed = names
            .into_iter()
            .filter(|n| !loaded.contains(n.as_str()))
            .collect();
        Ok(Warm {
            files,
            hashes: Vec::new(),
            hashed: false,
            vectors: None,
            records: snap.records,
            texts: snap.texts,
            corpus: {
                let mut c = corpus.expect("a corpus was asked for");
                c.keep_postings();
                c
            },
            problems: snap.problems,
            index_text: None,
            index_stat: None,
            watch,
            scanned,
            failed,
            standing: None,
        })
    }

    /// Which files to look at: by the folder's change events when they can be
    /// trusted, else by a scan. `None` when the store is as it was (events that
    /// touched no memory, edits taken in place, or a scan whose stats all vouch).
    fn look(&mut self, mem: &Memory, checked: i64) -> Result<Option<Look>> {
        let events = match self.watch.as_mut().map(DirWatch::drain) {
            Some(Changes::Names(n)) => Some(n),
            _ => None,
        };
        let mut scanned = Vec::new();
        Ok(match events.and_then(|n| by_events(mem, self, n)) {
            Some(None) => None,
            Some(Some(ev)) if self.edit_in_place(mem, &ev, checked) => None,
            Some(Some(ev)) => Some(Look {
                stats: vec![None; ev.names.len()],
                names: ev.names,
                touched: Some(ev.touched),
                scanned: ev.scanned,
            }),
            None => {
                let names = mem.scan_names(&mut scanned)?;
                let stats = mem.backend.stats(&names);
                let unchanged = names.len() == self.files.len()
                    && scanned.is_empty()
                    && self.problems.is_empty()
                    && names
                        .iter()
                        .zip(&stats)
                        .zip(&self.files)
                        .all(|((n, st), f)| *n == f.name && f.settled(st));
                if unchanged {
                    None
                } else {
                    Some(Look {
                        names,
                        stats,
                        touched: None,
                        scanned,
                    })
                }
            }
        })
    }

    /// The store after `look`: each memory kept as loaded when no event names it
    /// (or, without events, when its stat vouches for it), else read again, and
    /// parsed and analyzed only when its content changed.
    fn carry(self, mem: &Memory, look: Look, checked: i64) -> Warm {
        let Look {
            names,
            stats,
            touched,
            scanned,
        } = look;
        // A file is kept as loaded when no event names it, or (without events) when
        // its stat vouches for it.
        let keep = |name: &str, f: &FileInfo, stat: &Option<Stat>| match &touched {
            Some(t) => !t.contains(name),
            None => f.settled(stat),
        };
        let Warm {
            files: prev_files,
            records: prev_records,
            hashes: prev_hashes,
            hashed,
            vectors,
            texts,
            mut corpus,
            index_text,
            index_stat,
            watch,
            ..
        } = self;
        let (vocab, prev_docs) = corpus.take_parts();
        let mut next = Next::new(names.len(), checked, hashed, texts, vocab);
        next.problems.extend(scanned.iter().cloned());
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
            .enumerate()
            .map(|(i, ((f, r), d))| Some((f, r, (d, i))))
            .collect();
        for (name, stat) in names.into_iter().zip(stats) {
            let mut was = at.get(&name).and_then(|&j| old[j].take());
            if let Some(k) = was.take_if(|(f, _, _)| keep(&name, f, &stat)) {
                next.carry(&name, k);
                continue;
            }
            next.read(mem, name, was);
        }
        // Memories whose file is gone.
        for k in old.into_iter().flatten() {
            next.retire(Some(k));
        }
        finish_problems(&mut next.problems, &next.records);
        let Next {
            files,
            records,
            hashes,
            docs,
            origin,
            gone,
            problems,
            failed,
            texts,
            vocab,
            same_index,
            ..
        } = next;
        Warm {
            files,
            hashes: all_hashes(hashed, &records, hashes),
            records,
            hashed,
            vectors,
            texts,
            corpus: corpus.carry(vocab, docs, &origin, &gone),
            problems,
            // Still checked against the file when its stat changed.
            index_text: index_text.filter(|_| same_index),
            index_stat,
            watch,
            scanned,
            failed,
            standing: None,
        }
    }

    /// Takes in the events' changes where they only edited memories that load
    /// cleanly before and after (no file came or went, nothing reported about them,
    /// no warning now): each edited memory is replaced where it is, its term data
    /// updated in the corpus. Returns false, having changed nothing, when the
    /// changes need the whole look of `refresh`.
    fn edit_in_place(&mut self, mem: &Memory, ev: &ByEvents, checked: i64) -> bool {
        if ev.names.len() != self.files.len()
            || ev.scanned != self.scanned
            || !self.failed.is_empty()
            || ev.touched.len() > IN_PLACE_MAX
        {
            return false;
        }
        let mut edits = Vec::with_capacity(ev.touched.len());
        for name in &ev.touched {
            let Ok(j) = self.files.binary_search_by(|f| f.name.as_str().cmp(name)) else {
                return false;
            };
            if self.problems.iter().any(|p| p.path == *name) {
                return false;
            }
            let Ok(Some((text, stat))) = mem.backend.read_text_stat(name, MAX_MEMORY_FILE) else {
                return false;
            };
            let key = cache::content_key(text.as_bytes());
            if key == self.files[j].key {
                edits.push((j, stat, key, None));
                continue;
            }
            match frontmatter::parse_read(&text) {
                Ok(p) if p.warnings.is_empty() => {
                    let record = Record {
                        key: Key::from_file_stem(&name[..name.len() - 3]),
                        meta: p.meta,
                        body: p.body.into(),
                    };
                    edits.push((j, stat, key, Some((record, text))));
                }
                _ => return false,
            }
        }
        for (j, stat, key, changed) in edits {
            let f = &mut self.files[j];
            f.stat = stat;
            f.checked = checked;
            f.key = key;
            let Some((record, text)) = changed else {
                continue;
            };
            if !same_entry(&self.records[j], &record) {
                self.index_text = None;
            }
            if self.hashed {
                self.hashes[j] = hybrid::text_hash_of(&record);
            }
            let d = self.corpus.analyze(&record);
            self.corpus.replace(j, d);
            self.texts.insert(record.key.to_string(), text);
            self.records[j] = record;
            if let Some(s) = &mut self.standing {
                s.replace(&self.records, j);
            }
        }
        true
    }
}

/// Which files a refresh looks at: the memory files now (sorted, as a scan lists
/// them) with their stats when a scan took them, the names events touched (`None`
/// without events), and what is not a regular file.
struct Look {
    names: Vec<String>,
    stats: Vec<Option<Stat>>,
    touched: Option<std::collections::BTreeSet<String>>,
    scanned: Vec<Problem>,
}

/// Every record's text hash when hashes are kept (those not carried computed now),
/// else none.
fn all_hashes(hashed: bool, records: &[Record], hashes: Vec<Option<[u8; 32]>>) -> Vec<[u8; 32]> {
    if !hashed {
        return Vec::new();
    }
    records
        .iter()
        .zip(hashes)
        .map(|(r, h)| h.unwrap_or_else(|| hybrid::text_hash_of(r)))
        .collect()
}

/// The most memories one call edits in place; more are looked at as a whole.
const IN_PLACE_MAX: usize = 64;

/// Whether two versions of a memory have the same MEMORY.md entry in the same place:
/// what `index::render` reads of a record besides its key.
fn same_entry(a: &Record, b: &Record) -> bool {
    a.meta.name == b.meta.name
        && a.meta.description == b.meta.description
        && a.meta.kind == b.meta.kind
        && a.meta.created.at == b.meta.created.at
}

/// A look by events: the memory files after them, the names to read again, and what
/// is not a regular file.
struct ByEvents {
    /// Sorted, as a scan lists them.
    names: Vec<String>,
    touched: std::collections::BTreeSet<String>,
    scanned: Vec<Problem>,
}

/// The look after the events naming `events`: `Some(None)` when they touched no
/// memory file and nothing failed to load last time; `None` when only a scan can say
/// (a name that cannot be looked up).
fn by_events(
    mem: &Memory,
    prev: &Warm,
    events: std::collections::BTreeSet<String>,
) -> Option<Option<ByEvents>> {
    let mut touched: std::collections::BTreeSet<String> =
        events.into_iter().filter(|n| is_memory_name(n)).collect();
    touched.extend(prev.failed.iter().cloned());
    if touched.is_empty() {
        return Some(None);
    }
    if !matches!(mem.backend, Backend::Dir(_)) {
        return None;
    }
    let mut names: std::collections::BTreeSet<&str> =
        prev.files.iter().map(|f| f.name.as_str()).collect();
    let mut scanned: Vec<Problem> = prev
        .scanned
        .iter()
        .filter(|p| !touched.contains(&p.path))
        .cloned()
        .collect();
    for n in &touched {
        match mem.backend.entry(n) {
            Ok(Some(Entry::File)) => {
                names.insert(n);
            }
            Ok(Some(kind)) => {
                names.remove(n.as_str());
                let found = if kind == Entry::Symlink {
                    Found::Symlink(n.clone())
                } else {
                    Found::NotAFile(n.clone())
                };
                scanned.extend(found_problem(found));
            }
            Ok(None) => {
                names.remove(n.as_str());
            }
            Err(_) => return None,
        }
    }
    Some(Some(ByEvents {
        names: names.into_iter().map(str::to_string).collect(),
        touched,
        scanned,
    }))
}

/// The warnings a loaded file gives: a file name that is not a key, and the
/// parse's warnings (what [`Memory::load`] reports for a file that loads).
pub(crate) fn push_problems(name: &str, warnings: &[Warning], problems: &mut Vec<Problem>) {
    if !Key::is_canonical_stem(&name[..name.len() - 3]) {
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
    /// `memdir mcp`, `memdir watch`): `recall` and `context` then look only at the
    /// files that changed, found by the directory's change events where they can be
    /// trusted and by each file's stat elsewhere, instead of loading the store
    /// (spec/architecture.md#warm-processes).
    pub fn keep_warm(mut self) -> Memory {
        self.warm = Some(std::sync::Mutex::new(Slot {
            by_stat: false,
            warm: None,
        }));
        self
    }

    /// [`Memory::keep_warm`], finding changes by each file's stat on every call and
    /// never by change events: for a folder whose changes may raise no event here
    /// (memdir already does this by itself on network and FUSE file systems and off
    /// Linux).
    pub fn keep_warm_by_stat(mut self) -> Memory {
        self.warm = Some(std::sync::Mutex::new(Slot {
            by_stat: true,
            warm: None,
        }));
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
        if guard.warm.is_none() {
            match Warm::refresh(self, None, guard.by_stat) {
                Ok(w) => guard.warm = Some(w),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(f(guard.warm.as_mut().expect("loaded above")))
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
                .warm
                .as_mut()
                .and_then(|w| w.vectors.as_mut())
                .and_then(Loaded::take_save)
        };
        let Some((path, bytes)) = job else { return };
        let written = hybrid::write_save(&self.backend, &path, &bytes);
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = guard.warm.as_mut().and_then(|w| w.vectors.as_mut()) {
            l.saved(&path, written);
        }
    }

    /// Runs `f` on the warm store brought up to date; `None` when this memory is not
    /// kept warm.
    pub(crate) fn with_warm<R>(&self, f: impl FnOnce(&mut Warm) -> Result<R>) -> Option<Result<R>> {
        let slot = self.warm.as_ref()?;
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        let prev = guard.warm.take();
        let mut w = match Warm::refresh(self, prev, guard.by_stat) {
            Ok(w) => w,
            Err(e) => return Some(Err(e)),
        };
        let out = f(&mut w);
        guard.warm = Some(w);
        Some(out)
    }
}
