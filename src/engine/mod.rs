//! The `Memory` façade: the operations of spec/cli.md#commands over a store.
//!
//! It composes the pure core (frontmatter, index, timeline, rank, search, context,
//! merge) with the store's IO. Every mutation takes the cross-process lock, re-reads
//! what it changes, and rebuilds MEMORY.md before releasing the lock, so several
//! processes writing at once lose nothing. Nothing here prints.

pub mod access;
pub mod backfill;
mod graph;
pub mod hybrid;
mod ops;
pub mod prune;
mod repair;
mod state;
mod warm;
pub mod watch;

pub use graph::MAX_DEPTH as MAX_GRAPH_DEPTH;
pub use ops::{Activity, ActivityQuery, Edit, FindReplace, SectionEdit};
pub use repair::TimelineRepair;
pub use state::{Compacted, StateEntry};

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::exchange::blob::{self, Skipped};
use crate::exchange::foreign::{self, Format, Source};
use crate::exchange::merge::{self, Action, Counts, Decision, Strategy};
use crate::memory::frontmatter::{self, Extra, Parsed};
use crate::memory::index;
use crate::memory::layout::{
    BACKUPS_DIR, BLOB_ORDER_FILE, CACHE_DIR, INDEX_FILE, INDEX_HASH_FILE, MAX_BODY, MAX_EVENT,
    MAX_MEMORY_FILE, MAX_TIMELINE_LINE, STALE_TEMP, STATE_DIR, TIMELINE_DIR,
};
use crate::memory::secrets;
use crate::memory::timeline::{self, Event};
use crate::memory::{Decay, Key, Kind, Meta, Record, Stamp};
use crate::retrieval::context::{self, Block};
use crate::retrieval::filter::{Filter, Lifecycle};
use crate::retrieval::rank;
use crate::retrieval::search;
use crate::store::cache::{self, Cache};
use crate::store::{self, Backend, FileDigest, Found};

/// The store while this process holds its lock: the few changes sync makes (atomic
/// writes, removals, the index rebuild) and the snapshot it plans from. Only
/// [`Memory::with_lock`] hands one out, so sync changes nothing without the lock and
/// reaches files only through `store` (spec/architecture.md#locking).
#[cfg(feature = "sync")]
pub(crate) struct Locked<'a> {
    mem: &'a Memory,
}

#[cfg(feature = "sync")]
impl Locked<'_> {
    /// Replaces (or creates) a file atomically.
    pub(crate) fn write_atomic(&self, rel: &str, bytes: &[u8]) -> Result<()> {
        self.mem.backend.write_atomic(rel, bytes)
    }

    /// Removes a file; a missing file is not an error.
    pub(crate) fn remove(&self, rel: &str) -> Result<()> {
        self.mem.backend.remove(rel)
    }

    /// The directory as a tree (dot entries excluded), read under the lock.
    pub(crate) fn tree(&self) -> Result<crate::ipfs::unixfs::Node> {
        self.mem.backend.tree()
    }

    /// Rebuilds MEMORY.md from the memory files.
    pub(crate) fn rebuild_index(&self) -> Result<IndexOutcome> {
        let snap = self.mem.load()?;
        self.mem.write_index(&snap.records)
    }
}

/// What a folder (or FIFO, socket) named like a memory or day file is told: memdir
/// cannot write that key or day while it is there (spec/architecture.md#nothing-outside-the-directory).
const NOT_A_FILE: &str = "not a regular file (a folder?): memdir neither reads nor replaces it, and cannot write this name while it is there; rename or remove it";

/// What a scan reports of an entry that is not a regular memory file (`None` for
/// one that is).
pub(crate) fn found_problem(found: Found) -> Option<Problem> {
    match found {
        Found::File(_) => None,
        Found::Symlink(n) => Some(Problem::error(
            &n,
            None,
            "symbolic link not followed; memdir only reads regular files inside the directory",
        )),
        Found::BadName(n) => Some(Problem::error(
            &n,
            None,
            "file name is not valid UTF-8; skipped",
        )),
        Found::NotAFile(n) => Some(Problem::error(&n, None, NOT_A_FILE)),
    }
}

/// Folders where `check` looks for temp files, and whether memdir writes there only
/// under the lock (then, with the lock held, a temp file there is provably left over).
const TEMP_FOLDERS: [(&str, bool); 5] = [
    (".", true),
    (TIMELINE_DIR, true),
    (BACKUPS_DIR, true),
    (STATE_DIR, false),
    (CACHE_DIR, false),
];

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The file or line is not loaded.
    Error,
    /// Loaded, but something deserves attention.
    Warning,
}

/// A problem found while loading: which file and line, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Path relative to the memory directory.
    pub path: String,
    pub line: Option<usize>,
    pub severity: Severity,
    pub message: String,
}

impl Problem {
    fn error(path: &str, line: Option<usize>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.to_string(),
            line,
            severity: Severity::Error,
            message: message.into(),
        }
    }

    fn warning(path: &str, line: Option<usize>, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(path, line, message)
        }
    }

    /// `path:line: message`.
    pub fn location(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.path),
            None => self.path.clone(),
        }
    }
}

/// What bringing the search index up to date took ([`Memory::search_index`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SearchIndexReport {
    /// Memories loaded.
    pub memories: usize,
    /// Files the index vouched for by their stat (not opened).
    pub vouched: usize,
    /// Files read (new, changed, or too recently changed to be vouched for).
    pub read: usize,
    /// Files parsed (read, and of content the index did not have).
    pub parsed: usize,
    /// Memories whose term data was computed.
    pub analyzed: usize,
    /// Terms in the vocabulary.
    pub terms: usize,
    /// Size of the index files afterwards, in bytes.
    pub bytes: u64,
}

/// The memories of a store and the problems met loading them.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub records: Vec<Record>,
    /// File text of each record, by key, exactly as read (for export and resources).
    pub texts: BTreeMap<String, String>,
    pub problems: Vec<Problem>,
}

/// Timeline events and the problems met reading them.
#[derive(Debug, Clone, Default)]
pub struct Events {
    /// In time order (stable for equal times: file order).
    pub events: Vec<Event>,
    pub problems: Vec<Problem>,
}

/// How far back [`Memory::read_events`] reads, newest day first.
enum Until<'a> {
    /// Every day.
    All,
    /// Until the lines read add up to this many characters.
    Chars(usize),
    /// Until `count` events pass `keep`, or the days before `since`.
    Matching {
        since: Option<chrono::NaiveDate>,
        keep: &'a dyn Fn(&Event) -> bool,
        count: usize,
    },
}

/// A request to create or update a memory.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub key: String,
    pub name: String,
    pub description: String,
    /// `user`, `feedback`, `project` or `reference`.
    pub kind: String,
    pub body: String,
    /// `None` keeps the existing tags (none for a new memory).
    pub tags: Option<Vec<String>>,
    /// `None` keeps the existing flag.
    pub important: Option<bool>,
    /// `never` or `<N>d`; `None` keeps the existing value.
    pub decay: Option<String>,
    /// `None` keeps the existing value.
    pub source: Option<String>,
    /// Keys of the memories this one replaces (spec/memory-format.md#supersedes);
    /// `None` keeps the existing list, `Some(vec![])` clears it.
    pub supersedes: Option<Vec<String>>,
    /// The last day the memory holds (`YYYY-MM-DD`); `None` keeps the existing
    /// value, `Some("")` clears it.
    pub valid_until: Option<String>,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteOutcome {
    Created,
    Updated,
    /// Identical content: nothing was touched.
    Unchanged,
}

impl WriteOutcome {
    /// `created`, `updated` or `unchanged`: the word the outputs use (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            WriteOutcome::Created => "created",
            WriteOutcome::Updated => "updated",
            WriteOutcome::Unchanged => "unchanged",
        }
    }
}

/// What an index rebuild did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct IndexOutcome {
    /// MEMORY.md was (re)written.
    pub written: bool,
    /// Where a hand-edited MEMORY.md was saved before being replaced.
    pub backup: Option<String>,
}

/// One memory in a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub description: String,
    pub updated: String,
    pub score: f64,
    /// Keys of the memories that supersede this one (listed only with
    /// `include_superseded`; spec/ranking.md#superseded-and-expired).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded_by: Vec<String>,
    /// Its `valid_until` day has passed (listed only with `include_expired`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// When this device last read it (`.memdir/cache/access.jsonl`; spec/cli.md#access-log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_read: Option<String>,
}

/// The result of a recall: hits, the problems met loading, and the ranking that ran.
#[derive(Debug, Clone)]
pub struct Recall {
    pub hits: Vec<Hit>,
    pub problems: Vec<Problem>,
    /// `None` when embeddings are not configured (keyword ranking, nothing to say).
    pub embeddings: Option<hybrid::Report>,
}

/// A context block, the problems met loading, and the ranking that ran.
#[derive(Debug, Clone)]
pub struct Context {
    pub block: Block,
    pub problems: Vec<Problem>,
    /// `None` without `[embeddings]` or without a query (nothing to say).
    pub embeddings: Option<hybrid::Report>,
}

/// One recall hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub key: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub description: String,
    pub updated: String,
    /// Relevance blended with salience and recency (spec/ranking.md).
    pub score: f64,
    pub relevance: f64,
    /// Keys of the memories that supersede this one (only with `include_superseded`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded_by: Vec<String>,
    /// Its `valid_until` day has passed (only with `include_expired`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
}

/// The text marker of a superseded or expired memory: ` [superseded by k; expired]`,
/// or nothing.
pub fn lifecycle_mark(superseded_by: &[String], expired: bool) -> String {
    let mut parts = Vec::new();
    if !superseded_by.is_empty() {
        parts.push(format!("superseded by {}", superseded_by.join(", ")));
    }
    if expired {
        parts.push("expired".to_string());
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" [{}]", parts.join("; "))
    }
}

/// One line per hit, as the CLI prints it and the MCP `recall` tool returns it:
/// `score  key  name — description`.
impl std::fmt::Display for Hit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.3}  {}  {} — {}{}",
            self.score,
            self.key,
            self.name,
            self.description,
            lifecycle_mark(&self.superseded_by, self.expired)
        )
    }
}

/// The result of `check`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    pub memories: usize,
    pub events: usize,
    pub problems: Vec<Problem>,
    /// What `--fix` repaired.
    pub fixed: Vec<String>,
    /// Timeline day files repaired by `--fix` (without it: that need repair),
    /// spec/timeline-format.md#repair.
    pub timeline_repairs: Vec<TimelineRepair>,
}

impl CheckReport {
    /// Whether any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }
}

/// The result of an import.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// The input format (`blob`, `claude-code`, `mcp-memory`, `basic-memory`).
    pub format: &'static str,
    pub strategy: Strategy,
    pub dry_run: bool,
    #[serde(flatten)]
    pub counts: Counts,
    pub events_added: usize,
    pub plan: Vec<Decision>,
    /// What was skipped and why (the count is `skipped`).
    pub skipped_items: Vec<Skipped>,
    /// Files with a value read the three.ws way rather than as YAML, imported
    /// rewritten as YAML, each with the reason.
    pub converted: Vec<blob::Converted>,
    /// Links of a foreign import whose target was not imported, kept as written
    /// (spec/import-formats.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<Skipped>,
}

/// Where a foreign import came from, for its `imported` timeline event.
struct Origin<'a> {
    format: Format,
    name: &'a str,
}

/// A memory directory (or an in-memory store) and the operations on it.
///
/// ```
/// use memdir::{Memory, Draft};
/// let mem = Memory::in_memory();
/// mem.write(&Draft {
///     key: "user_role".into(),
///     name: "Role".into(),
///     description: "plays 5-a-side on Saturdays".into(),
///     kind: "user".into(),
///     body: "Argentina fan.".into(),
///     ..Draft::default()
/// })?;
/// let block = mem.context(1024, None)?;
/// assert!(block.text.contains("Argentina fan."));
/// # Ok::<(), memdir::Error>(())
/// ```
#[derive(Debug)]
pub struct Memory {
    backend: Backend,
    clock: Clock,
    mem_lock: Mutex<()>,
    /// The loaded store of a long-running process ([`Memory::keep_warm`]).
    warm: Option<Mutex<warm::Slot>>,
}

impl Memory {
    /// Opens the memory directory at `dir` (it need not exist yet: writes create it).
    /// The clock is the system clock, or `MEMDIR_NOW` when set.
    pub fn open(dir: impl AsRef<Path>) -> Result<Memory> {
        let clock = Clock::from_env()?;
        Ok(Memory {
            backend: Backend::Dir(dir.as_ref().to_path_buf()),
            clock,
            mem_lock: Mutex::new(()),
            warm: None,
        })
    }

    /// A store that keeps everything in memory (the `none` mode).
    pub fn in_memory() -> Memory {
        Memory {
            backend: Backend::Mem(Mutex::new(BTreeMap::new())),
            clock: Clock::system(),
            mem_lock: Mutex::new(()),
            warm: None,
        }
    }

    /// Replaces the clock (tests, benchmarks, reproducible runs).
    pub fn with_clock(mut self, clock: Clock) -> Memory {
        self.clock = clock;
        self
    }

    /// The current time of this store's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The directory (`(memory)` for the `none` mode).
    pub fn root(&self) -> PathBuf {
        self.backend.root()
    }

    /// The store's backend, for the wings inside the crate that need the raw files
    /// (sync, the front ends). Not public: a program outside the crate writes through
    /// `Memory`'s methods, under the lock.
    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The directory as a UnixFS tree (dot entries left out), as `memdir cid` hashes
    /// it and a push publishes it (spec/sync.md). Reads only.
    pub fn tree(&self) -> Result<crate::ipfs::unixfs::Node> {
        self.backend.tree()
    }

    fn require_dir(&self) -> Result<()> {
        match &self.backend {
            Backend::Dir(p) if !p.is_dir() => Err(Error::NoDir { path: p.clone() }),
            _ => Ok(()),
        }
    }

    /// Creates the directory with MEMORY.md, `timeline/` and `.memdir/`. Returns
    /// whether anything was created.
    pub fn init(&self) -> Result<bool> {
        let existed = self.backend.exists() && self.backend.is_file(INDEX_FILE);
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let snap = self.load()?;
        let out = self.write_index(&snap.records)?;
        Ok(!existed || out.written)
    }

    /// Loads every memory, collecting problems instead of failing on bad files.
    ///
    /// A file the search index vouches for by its stat is not opened; the others are
    /// read and hashed on all cores, and parsed (on all cores) unless the index has
    /// the parse for that content (spec/architecture.md#search-index).
    pub fn load(&self) -> Result<Snapshot> {
        self.load_with(false).map(|(snap, _, _)| snap)
    }

    /// The memory files of the directory, with a problem for each entry that is not
    /// one memdir reads.
    fn scan_names(&self, problems: &mut Vec<Problem>) -> Result<Vec<String>> {
        let mut names: Vec<String> = Vec::new();
        for found in self.backend.scan_memories()? {
            match found {
                Found::File(n) => names.push(n),
                other => problems.extend(found_problem(other)),
            }
        }
        Ok(names)
    }

    /// Brings the search index under `.memdir/cache/` up to date, term data included,
    /// and says what that took (spec/architecture.md#search-index). Every query does
    /// the same on its way; this is for building it ahead of time and for measuring.
    pub fn search_index(&self) -> Result<SearchIndexReport> {
        let (_, _, report) = self.load_with(true)?;
        Ok(report)
    }

    /// Loads like [`Memory::load`]; with `terms`, also the corpus of term statistics
    /// query-aware calls need, from the search index where it has them and computed
    /// (and saved) for the rest.
    fn load_with(
        &self,
        terms: bool,
    ) -> Result<(Snapshot, Option<search::Corpus>, SearchIndexReport)> {
        self.load_files(terms, true)
            .map(|(snap, corpus, report, _)| (snap, corpus, report))
    }

    /// [`Memory::load_with`] without the files' texts (`Snapshot::texts` empty): for
    /// a read that needs only the records.
    fn load_records(
        &self,
        terms: bool,
    ) -> Result<(Snapshot, Option<search::Corpus>, SearchIndexReport)> {
        self.load_files(terms, false)
            .map(|(snap, corpus, report, _)| (snap, corpus, report))
    }

    /// [`Memory::load_with`], with what was found of each record's file; the
    /// files' texts (`Snapshot::texts`) only with `texts`.
    fn load_files(
        &self,
        terms: bool,
        texts: bool,
    ) -> Result<(
        Snapshot,
        Option<search::Corpus>,
        SearchIndexReport,
        Vec<warm::FileInfo>,
    )> {
        self.require_dir()?;
        // Taken before any stat: what the index records as the time of the read.
        let checked = warm::now_ns();
        let mut snap = Snapshot::default();
        // The index is read and decoded while the directory is listed and stat'ed.
        let (mut cache, listed) = std::thread::scope(|scope| {
            let cache = scope.spawn(|| Cache::load(&self.backend, terms));
            let mut problems = Vec::new();
            let listed = self.scan_names(&mut problems).map(|names| {
                let stats: Vec<Option<store::Stat>> = self.backend.stats(&names);
                (names, stats, problems)
            });
            let cache = cache
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            (cache, listed)
        });
        let (mut names, stats, problems) = listed?;
        snap.problems.extend(problems);
        // What the index vouches for by stat (taken from the index in order, then
        // turned into files on all cores); the rest is read.
        let vouched: Vec<Option<(store::Stat, cache::Vouched)>> = names
            .iter()
            .zip(&stats)
            .map(|(n, st)| {
                let st = (*st)?;
                Some((st, cache.by_stat(n, &st)?))
            })
            .collect();
        let mut files: Vec<Option<LoadedFile>> =
            store::par_map_owned(vouched, PARALLEL_FROM, |vouched| {
                let (st, vouched) = vouched?;
                let hit = vouched.hit()?;
                let (text, body) = match frontmatter::body_span(&hit.text).filter(|_| !texts) {
                    // The text becomes the body in place; the file's text is kept as
                    // what surrounds it.
                    Some((start, end)) => {
                        let mut body = hit.text;
                        let tail = body[end..].to_string();
                        body.truncate(end);
                        let head = body[..start].to_string();
                        body.drain(..start);
                        (Text::Around { head, tail }, Ok(body))
                    }
                    None => {
                        let body = frontmatter::body_of(&hit.text);
                        (Text::Whole(hit.text), body)
                    }
                };
                Some(LoadedFile {
                    stat: Some(st),
                    checked: hit.checked,
                    key: hit.key,
                    parsed: body.map(|body| Parsed {
                        meta: hit.meta,
                        body,
                        warnings: hit.warnings,
                    }),
                    text,
                    warnings: Vec::new(),
                    data: hit.data,
                })
            });
        let to_read: Vec<usize> = (0..names.len()).filter(|&i| files[i].is_none()).collect();
        let mut report = SearchIndexReport {
            vouched: names.len() - to_read.len(),
            read: to_read.len(),
            ..SearchIndexReport::default()
        };
        type Read = Result<Option<(String, String, Option<store::Stat>)>>;
        let read: Vec<Read> = store::par_map(&to_read, PARALLEL_FROM, |&i| {
            Ok(self
                .backend
                .read_text_stat(&names[i], MAX_MEMORY_FILE)?
                .map(|(t, st)| (cache::content_key(t.as_bytes()), t, st)))
        });
        // Index lookups by content are serial (cheap); the parses of what missed run
        // in parallel.
        let mut misses: Vec<(usize, String, String, Option<store::Stat>)> = Vec::new();
        let mut gone: Vec<bool> = vec![false; names.len()];
        for (&i, r) in to_read.iter().zip(read) {
            match r {
                Ok(Some((key, text, st))) => match cache.by_content(&names[i], &key) {
                    Some(hit) => {
                        files[i] = Some(LoadedFile {
                            stat: st,
                            checked,
                            parsed: frontmatter::body_of(&text).map(|body| Parsed {
                                meta: hit.meta,
                                body,
                                warnings: hit.warnings,
                            }),
                            key,
                            text: Text::Whole(text),
                            warnings: Vec::new(),
                            data: hit.data,
                        });
                    }
                    None => misses.push((i, key, text, st)),
                },
                Ok(None) => gone[i] = true, // removed between the scan and the read
                Err(e) => {
                    gone[i] = true;
                    snap.problems
                        .push(Problem::error(&names[i], None, short_io(&e)));
                }
            }
        }
        report.parsed = misses.len();
        let parsed: Vec<std::result::Result<Parsed, frontmatter::FrontmatterError>> =
            store::par_map(&misses, PARALLEL_FROM, |(_, _, text, _)| {
                frontmatter::parse_read(text)
            });
        for ((i, key, text, st), parsed) in misses.into_iter().zip(parsed) {
            files[i] = Some(LoadedFile {
                stat: st,
                checked,
                key,
                text: Text::Whole(text),
                parsed,
                warnings: Vec::new(),
                data: None,
            });
        }
        // Records, with their files' data, in file order.
        let mut kept: Vec<(usize, LoadedFile)> = Vec::with_capacity(names.len());
        for (i, f) in files.into_iter().enumerate() {
            if gone[i] {
                continue;
            }
            let Some(mut f) = f else { continue };
            match std::mem::replace(&mut f.parsed, Err(frontmatter::FrontmatterError::Missing)) {
                Ok(p) => {
                    let name = &names[i];
                    let key = Key::from_file_stem(&name[..name.len() - 3]);
                    warm::push_problems(name, &p.warnings, &mut snap.problems);
                    f.warnings = p.warnings;
                    snap.records.push(Record {
                        key,
                        meta: p.meta,
                        body: p.body,
                    });
                    kept.push((i, f));
                }
                Err(e) => snap.problems.push(Problem::error(
                    &names[i],
                    e.line(),
                    format!("not loaded: {e}"),
                )),
            }
        }
        let mut vocab = cache.take_vocab();
        if terms {
            // Tokenized on all cores, then interned in file order (the ids a
            // one-thread analysis gives).
            let todo: Vec<usize> = (0..kept.len())
                .filter(|&k| kept[k].1.data.is_none())
                .collect();
            // In batches, so that the terms as text of a large store are never all
            // held at once.
            for batch in todo.chunks(2048) {
                let analyzed = store::par_map(batch, PARALLEL_FROM, |&k| {
                    search::Analyzed::of(&snap.records[k])
                });
                for (&k, a) in batch.iter().zip(analyzed) {
                    kept[k].1.data = Some(search::DocData::intern(&a, &mut vocab));
                    report.analyzed += 1;
                }
            }
        }
        let items: Vec<cache::Item<'_>> = kept
            .iter()
            .zip(&snap.records)
            .map(|((i, f), r)| cache::Item {
                file: &names[*i],
                stat: f.stat,
                checked: f.checked,
                key: &f.key,
                text: f.text.parts(&r.body),
                meta: &r.meta,
                warnings: &f.warnings,
                data: f.data.as_ref(),
            })
            .collect();
        report.bytes = cache.save(&self.backend, &vocab, &items);
        report.memories = items.len();
        report.terms = vocab.len();
        drop(items);
        let mut docs = Vec::with_capacity(kept.len());
        let mut infos = Vec::with_capacity(kept.len());
        for ((i, f), r) in kept.into_iter().zip(&snap.records) {
            docs.push(f.data);
            if texts {
                snap.texts.insert(r.key.to_string(), f.text.whole(&r.body));
            }
            infos.push(warm::FileInfo {
                name: std::mem::take(&mut names[i]),
                stat: f.stat,
                checked: f.checked,
                key: f.key,
                warnings: f.warnings,
            });
        }
        finish_problems(&mut snap.problems, &snap.records);
        let corpus = terms.then(|| {
            search::Corpus::from_parts(
                vocab,
                docs.into_iter().map(Option::unwrap_or_default).collect(),
            )
        });
        Ok((snap, corpus, report, infos))
    }

    /// Reads every timeline event, oldest first.
    pub fn events(&self) -> Result<Events> {
        self.read_events(Until::All)
    }

    /// Reads the newest events whose lines add up to at least `chars` characters
    /// (or all of them), oldest first: enough to fill a context block.
    fn recent_events(&self, chars: usize) -> Result<Events> {
        self.read_events(Until::Chars(chars))
    }

    /// Reads the newest day files, newest first, until `count` events pass `keep`
    /// (or the days before `since` are reached), and returns their events oldest first.
    fn read_events_until(
        &self,
        since: Option<chrono::NaiveDate>,
        keep: &dyn Fn(&Event) -> bool,
        count: usize,
    ) -> Result<Events> {
        self.read_events(Until::Matching { since, keep, count })
    }

    fn read_events(&self, until: Until<'_>) -> Result<Events> {
        self.require_dir()?;
        let mut out = Events::default();
        let files = match self.backend.scan_timeline() {
            Ok(f) => f,
            // A linked timeline folder points outside the directory: report, read nothing.
            Err(Error::Symlink { .. }) => {
                out.problems.push(Problem::error(
                    TIMELINE_DIR,
                    None,
                    "timeline folder is a symbolic link; not followed",
                ));
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        let mut chunks: Vec<Vec<Event>> = Vec::new();
        let mut total = 0usize;
        let mut matched = 0usize;
        for found in files.iter().rev() {
            let name = match found {
                Found::File(n) => n,
                Found::Symlink(n) => {
                    out.problems
                        .push(Problem::error(n, None, "symbolic link not followed"));
                    continue;
                }
                Found::BadName(n) => {
                    out.problems
                        .push(Problem::error(n, None, "file name is not valid UTF-8"));
                    continue;
                }
                Found::NotAFile(n) => {
                    out.problems.push(Problem::error(n, None, NOT_A_FILE));
                    continue;
                }
            };
            let base = name.rsplit('/').next().unwrap_or(name);
            if !timeline::is_day_file_name(base) {
                out.problems.push(Problem::warning(
                    name,
                    None,
                    "not a timeline day file (expected YYYY-MM-DD.jsonl); ignored",
                ));
                continue;
            }
            if let Until::Matching {
                since: Some(since), ..
            } = &until
                && chrono::NaiveDate::parse_from_str(&base[..10], "%Y-%m-%d")
                    .is_ok_and(|day| day < *since)
            {
                // Day files come newest first: every one from here on is older.
                break;
            }
            // Line by line, streamed: a bad line (not UTF-8, not JSON, too long) is
            // one bad line, and a day of any size is read (spec/timeline-format.md#reading).
            let mut evs = Vec::new();
            let read = self
                .backend
                .for_each_line(name, MAX_TIMELINE_LINE, |l| match l.bytes {
                    Err(len) => out.problems.push(Problem::error(
                        name,
                        Some(l.number),
                        format!(
                            "timeline line skipped: {len} bytes is over the limit of {MAX_TIMELINE_LINE} bytes per line"
                        ),
                    )),
                    Ok(b) if b.iter().all(u8::is_ascii_whitespace) => {}
                    Ok(b) => match std::str::from_utf8(b) {
                        Err(_) => out.problems.push(Problem::error(
                            name,
                            Some(l.number),
                            "timeline line skipped: not valid UTF-8",
                        )),
                        Ok(line) => match timeline::parse_line(line) {
                            Ok(e) => {
                                total += line.len();
                                evs.push(e);
                            }
                            Err(e) => out.problems.push(Problem::error(
                                name,
                                Some(l.number),
                                format!("timeline line skipped: {e}"),
                            )),
                        },
                    },
                });
            if let Err(e) = read {
                out.problems.push(Problem::error(name, None, short_io(&e)));
                continue;
            }
            if let Until::Matching { keep, .. } = &until {
                matched += evs.iter().filter(|e| keep(e)).count();
            }
            chunks.push(evs);
            let enough = match &until {
                Until::All => false,
                Until::Chars(n) => total >= *n,
                Until::Matching { count, .. } => matched >= *count,
            };
            if enough {
                break;
            }
        }
        for evs in chunks.into_iter().rev() {
            out.events.extend(evs);
        }
        // Files are days, but lines inside a day may have been appended out of order by
        // clocks that disagree; a stable sort keeps file order for equal times.
        out.events.sort_by_key(|e| e.ts);
        out.problems
            .sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
        Ok(out)
    }

    /// Rebuilds MEMORY.md if it differs from what the memories say.
    pub fn index(&self) -> Result<IndexOutcome> {
        self.index_with_problems().map(|(outcome, _)| outcome)
    }

    /// Rebuilds MEMORY.md like [`Memory::index`] and returns the problems met loading
    /// the store on the way (one load serves both).
    pub fn index_with_problems(&self) -> Result<(IndexOutcome, Vec<Problem>)> {
        self.require_dir()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let snap = self.load()?;
        Ok((self.write_index(&snap.records)?, snap.problems))
    }

    /// Rebuilds MEMORY.md only when it is stale (cheap check without the lock first).
    /// Returns the generated text and what the rebuild did. The check compares the
    /// file's size, then streams it against the rendered text, so an index of any size
    /// is fine (spec/index-format.md#rebuild).
    fn refresh_index_if_stale(&self, records: &[Record]) -> Result<(String, IndexOutcome)> {
        let want = index::render(records);
        let outcome = if !self
            .backend
            .holds(INDEX_FILE, want.as_bytes())
            .unwrap_or(false)
        {
            self.index()?
        } else {
            IndexOutcome::default()
        };
        Ok((want, outcome))
    }

    /// Writes MEMORY.md for `records`; caller holds the lock. A MEMORY.md that memdir
    /// did not write (a person edited it) is saved under `.memdir/backups/` first.
    fn write_index(&self, records: &[Record]) -> Result<IndexOutcome> {
        let mut plan = self.plan_index(records)?;
        self.save_index_backup(&mut plan)?;
        self.write_index_file(&plan)
    }

    /// Decides what rebuilding MEMORY.md for `records` takes, reading but writing
    /// nothing, so a command can fail before it changes anything. MEMORY.md is streamed,
    /// never read whole: any size is fine.
    fn plan_index(&self, records: &[Record]) -> Result<IndexPlan> {
        let want = index::render(records);
        let want_digest = FileDigest::of(want.as_bytes());
        let have = self.backend.digest(INDEX_FILE)?;
        let (replace, backup) = match have {
            Some(h) if h == want_digest => (false, false),
            None => (true, false),
            Some(h) => (true, !self.index_is_ours(&h)?),
        };
        Ok(IndexPlan {
            want,
            want_digest,
            have,
            replace,
            backup,
            backup_name: None,
        })
    }

    /// Whether the MEMORY.md on disk (digest `have`) is one memdir wrote: its hash is
    /// recorded in `.memdir/index.sha256`, or, with no record (a fresh clone), it holds
    /// only lines the generator produces (checked while streaming it).
    fn index_is_ours(&self, have: &FileDigest) -> Result<bool> {
        let record = self
            .backend
            .read_text(INDEX_HASH_FILE, 1024)
            .ok()
            .flatten()
            .unwrap_or_default();
        let hashes: Vec<&str> = record
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if !hashes.is_empty() {
            return Ok(hashes.contains(&have.hex().as_str()));
        }
        let mut check = index::GeneratedLines::default();
        let mut ends_with_newline = true;
        self.backend
            .for_each_line(INDEX_FILE, MAX_MEMORY_FILE, |l| {
                ends_with_newline = l.terminated;
                match l.bytes.ok().map(std::str::from_utf8) {
                    Some(Ok(t)) => check.line(t.strip_suffix('\r').unwrap_or(t)),
                    _ => check.bad_line(),
                }
            })?;
        Ok(check.finish(ends_with_newline))
    }

    /// Saves a hand-edited MEMORY.md under `.memdir/backups/` (streamed), when the
    /// plan says so; caller holds the lock.
    fn save_index_backup(&self, plan: &mut IndexPlan) -> Result<()> {
        if !plan.backup || plan.backup_name.is_some() {
            return Ok(());
        }
        let name = format!(
            "{BACKUPS_DIR}/MEMORY.md.{}",
            self.now().format("%Y%m%dT%H%M%S%.3fZ")
        );
        let name = self.unused_name(&name)?;
        self.backend.copy_atomic(INDEX_FILE, &name)?;
        plan.backup_name = Some(name);
        Ok(())
    }

    /// Writes MEMORY.md as planned; caller holds the lock and has saved the backup.
    /// The new hash is recorded before the rename, next to the hash of the file being
    /// replaced, so a process killed between the two writes leaves a MEMORY.md that
    /// the record still calls memdir's (no false "edited by hand" backup).
    fn write_index_file(&self, plan: &IndexPlan) -> Result<IndexOutcome> {
        if !plan.replace {
            return Ok(IndexOutcome::default());
        }
        let mut record = plan.want_digest.hex();
        record.push('\n');
        if let Some(h) = &plan.have {
            record.push_str(&h.hex());
            record.push('\n');
        }
        self.backend
            .write_atomic(INDEX_HASH_FILE, record.as_bytes())?;
        self.backend
            .write_atomic(INDEX_FILE, plan.want.as_bytes())?;
        Ok(IndexOutcome {
            written: true,
            backup: plan.backup_name.clone(),
        })
    }

    fn unused_name(&self, base: &str) -> Result<String> {
        let mut name = base.to_string();
        let mut i = 1;
        while self.backend.is_file(&name) {
            name = format!("{base}.{i}");
            i += 1;
        }
        Ok(name)
    }

    /// Resolves a key given by a caller to a loaded memory's key: a valid key, or
    /// the exact stem of a file a person named otherwise.
    fn resolve_key(&self, key: &str) -> Result<Key> {
        if let Ok(k) = Key::parse(key) {
            return Ok(k);
        }
        let wanted = key.strip_suffix(".md").unwrap_or(key);
        for found in self.backend.scan_memories()? {
            if let Found::File(n) = found
                && n[..n.len() - 3] == *wanted
            {
                return Ok(Key::from_file_stem(wanted));
            }
        }
        Err(Key::parse(key).unwrap_err().into())
    }

    /// Runs `f` holding the store's lock (the process mutex and `.memdir/lock`),
    /// with the narrow handle through which sync changes files.
    #[cfg(feature = "sync")]
    pub(crate) fn with_lock<R, E: From<Error>>(
        &self,
        f: impl FnOnce(&Locked<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let _g = self.backend.lock(&self.mem_lock)?;
        f(&Locked { mem: self })
    }

    /// Losing versions kept by sync merges, as (the path they lost at, the copy),
    /// sorted by copy. Copies are named `<stem>.<12 hex>.<ext>` under
    /// `.memdir/conflicts/` (spec/sync.md).
    pub fn conflicts(&self) -> Result<Vec<(String, String)>> {
        let dir = crate::memory::layout::CONFLICTS_DIR;
        let mut out: Vec<(String, String)> = self
            .backend
            .files_under(dir)?
            .into_iter()
            .filter(|rel| !store::is_temp_name(rel.rsplit('/').next().unwrap_or(rel)))
            .map(|rel| {
                (
                    crate::memory::layout::conflict_original(&rel),
                    format!("{dir}/{rel}"),
                )
            })
            .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        Ok(out)
    }

    /// Reads one memory (and notes the read in the access log, spec/cli.md#access-log).
    pub fn read(&self, key: &str) -> Result<Record> {
        self.read_via(key, access::Via::Read)
    }

    /// Reads one memory like [`Memory::read`], noting `via` as the read path in the
    /// access log. The memory file is only read.
    pub fn read_via(&self, key: &str, via: access::Via) -> Result<Record> {
        let r = self.read_quietly(key)?;
        access::record(
            &self.backend,
            self.now(),
            std::iter::once(r.key.as_str()),
            via,
        );
        Ok(r)
    }

    /// Reads and parses the file of a memory: its text and its parse, or
    /// `NotFound` / `Malformed` naming the key or the file.
    fn read_parsed(&self, key: &Key) -> Result<(String, Parsed)> {
        let name = key.file_name();
        let text = self
            .backend
            .read_text(&name, MAX_MEMORY_FILE)?
            .ok_or_else(|| Error::NotFound {
                key: key.to_string(),
            })?;
        let p = frontmatter::parse(&text).map_err(|source| Error::Malformed {
            path: self.backend.display_path(&name),
            source,
        })?;
        Ok((text, p))
    }

    /// Reads one memory without noting it in the access log.
    fn read_quietly(&self, key: &str) -> Result<Record> {
        self.require_dir()?;
        let key = self.resolve_key(key)?;
        let (_, p) = self.read_parsed(&key)?;
        Ok(Record {
            key,
            meta: p.meta,
            body: p.body,
        })
    }

    /// Creates or updates a memory. Identical content is a no-op.
    pub fn write(&self, d: &Draft) -> Result<WriteOutcome> {
        self.write_and_index(d).map(|(outcome, _)| outcome)
    }

    /// Creates or updates a memory like [`Memory::write`], and says what the MEMORY.md
    /// rebuild did (a hand-edited index saved under `.memdir/backups/`).
    ///
    /// Everything that can fail short of the disk itself (reading the store, checking
    /// MEMORY.md, saving a hand-edited one) happens before the memory file is written;
    /// if writing the index then fails, the memory file is put back as it was, so an
    /// error means nothing changed (spec/architecture.md#a-command-that-fails-changed-nothing).
    pub fn write_and_index(&self, d: &Draft) -> Result<(WriteOutcome, IndexOutcome)> {
        let key = Key::parse(&d.key)?;
        let kind = Kind::parse_strict(d.kind.trim()).ok_or_else(|| Error::Type {
            value: d.kind.clone(),
        })?;
        let decay = parse_decay(d.decay.as_deref())?;
        check_draft(&key, d)?;
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        self.write_locked(&key, kind, decay, d)
    }

    /// Writes the checked draft `d` as the memory `key`; the caller holds the lock.
    /// Identical content is a no-op; if writing the index fails, the memory file is
    /// put back as it was.
    fn write_locked(
        &self,
        key: &Key,
        kind: Kind,
        decay: Option<Decay>,
        d: &Draft,
    ) -> Result<(WriteOutcome, IndexOutcome)> {
        self.write_locked_with(key, kind, decay, d, &[])
    }

    /// [`Memory::write_locked`], also setting the frontmatter keys `extra` beyond the
    /// known ones (a session summary's `summarizes`, spec/memory-format.md).
    fn write_locked_with(
        &self,
        key: &Key,
        kind: Kind,
        decay: Option<Decay>,
        d: &Draft,
        extra: &[(&str, Value)],
    ) -> Result<(WriteOutcome, IndexOutcome)> {
        let key = key.clone();
        let name = key.file_name();
        let before = self.backend.read_text(&name, MAX_MEMORY_FILE)?;
        let existing = match &before {
            None => None,
            Some(text) => Some(frontmatter::parse(text).map_err(|source| Error::Malformed {
                path: self.backend.display_path(&name),
                source,
            })?),
        };
        let today = Stamp::from_date(self.now().date_naive());
        let old = existing.as_ref().map(|p| &p.meta);
        let mut meta = Meta {
            name: d.name.trim().to_string(),
            description: d.description.trim().to_string(),
            kind,
            created: old
                .map(|m| m.created.clone())
                .unwrap_or_else(|| today.clone()),
            updated: old
                .map(|m| m.updated.clone())
                .unwrap_or_else(|| today.clone()),
            source: d
                .source
                .clone()
                .or_else(|| old.and_then(|m| m.source.clone())),
            decay: decay.or_else(|| old.and_then(|m| m.decay)),
            tags: d
                .tags
                .clone()
                .or_else(|| old.map(|m| m.tags.clone()))
                .unwrap_or_default(),
            important: d.important.or(old.map(|m| m.important)).unwrap_or(false),
            supersedes: match &d.supersedes {
                Some(keys) => {
                    let mut out: Vec<String> = Vec::new();
                    for k in keys {
                        let k = Key::parse(k.trim())
                            .map_or_else(|_| k.trim().to_string(), |k| k.to_string());
                        if !out.contains(&k) {
                            out.push(k);
                        }
                    }
                    out
                }
                None => old.map(|m| m.supersedes.clone()).unwrap_or_default(),
            },
            valid_until: match d.valid_until.as_deref().map(str::trim) {
                Some("") => None,
                Some(v) => Some(v.to_string()),
                None => old.and_then(|m| m.valid_until.clone()),
            },
            extra: old.map(|m| m.extra.clone()).unwrap_or_else(Extra::default),
        };
        for (k, v) in extra {
            meta.extra.set(k, v.clone());
        }
        if let Some(p) = &existing
            && crate::memory::content_hash(&meta, &d.body)
                == crate::memory::content_hash(&p.meta, &p.body)
        {
            return Ok((WriteOutcome::Unchanged, IndexOutcome::default()));
        }
        meta.updated = today;
        let text = frontmatter::render(&meta, &d.body);
        // The store as it will be, to plan the index before writing anything.
        let parsed = frontmatter::parse(&text).map_err(|source| Error::Malformed {
            path: self.backend.display_path(&name),
            source,
        })?;
        let mut records = self.load()?.records;
        records.retain(|r| r.key != key);
        records.push(Record {
            key: key.clone(),
            meta: parsed.meta,
            body: parsed.body,
        });
        let mut plan = self.plan_index(&records)?;
        self.save_index_backup(&mut plan)?;
        self.backend.write_atomic(&name, text.as_bytes())?;
        let index = match self.write_index_file(&plan) {
            Ok(o) => o,
            Err(e) => {
                // Put the memory back so that the failure changed nothing.
                let _ = match &before {
                    Some(b) => self.backend.write_atomic(&name, b.as_bytes()),
                    None => self.backend.remove(&name),
                };
                return Err(e);
            }
        };
        let outcome = if existing.is_some() {
            WriteOutcome::Updated
        } else {
            WriteOutcome::Created
        };
        Ok((outcome, index))
    }

    /// Deletes a memory, rebuilds the index and logs a `forgot` event.
    pub fn forget(&self, key: &str, reason: Option<&str>) -> Result<Event> {
        self.forget_and_index(key, reason).map(|(e, _)| e)
    }

    /// Forgets like [`Memory::forget`], and says what the MEMORY.md rebuild did.
    ///
    /// The `forgot` event is logged before the file is deleted, so a process killed in
    /// between leaves the memory and its tombstone, never a memory gone without one;
    /// everything that can fail (reading the store, the timeline folder, MEMORY.md)
    /// fails before the file is touched (spec/timeline-format.md#events-memdir-writes).
    pub fn forget_and_index(
        &self,
        key: &str,
        reason: Option<&str>,
    ) -> Result<(Event, IndexOutcome)> {
        self.require_dir()?;
        let key = self.resolve_key(key)?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let name = key.file_name();
        let Some(before) = self.backend.read(&name, u64::MAX)? else {
            return Err(Error::NotFound {
                key: key.to_string(),
            });
        };
        let mut fields = Map::new();
        fields.insert("key".into(), Value::String(key.to_string()));
        if let Some(r) = reason {
            if let Some(kind) = secrets::find_secret(r) {
                return Err(Error::Secret {
                    key: key.to_string(),
                    field: "reason",
                    kind,
                });
            }
            fields.insert("reason".into(), Value::String(r.to_string()));
        }
        let event = Event::new(self.now(), "forgot", fields)?;
        let line = event.encode();
        check_event_size(&event, &line)?;
        let mut records = self.load()?.records;
        records.retain(|r| r.key != key);
        let mut plan = self.plan_index(&records)?;
        self.save_index_backup(&mut plan)?;
        // The intent first: a tombstone without a deletion is harmless (the memory is
        // still here), a deletion without a tombstone lets an old export bring it back.
        self.backend.append_line(&event.day_file(), &line)?;
        self.backend.remove(&name)?;
        let index = match self.write_index_file(&plan) {
            Ok(o) => o,
            Err(e) => {
                let _ = self.backend.write_atomic(&name, &before);
                return Err(e);
            }
        };
        Ok((event, index))
    }

    /// Appends a timeline event.
    pub fn note(&self, kind: &str, fields: Map<String, Value>) -> Result<Event> {
        let event = Event::new(self.now(), kind, fields)?;
        let line = event.encode();
        check_event_size(&event, &line)?;
        if let Some(k) = secrets::find_secret(&line) {
            return Err(Error::Secret {
                key: format!("the `{kind}` event"),
                field: "event",
                kind: k,
            });
        }
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        self.backend.append_line(&event.day_file(), &line)?;
        Ok(event)
    }

    /// Lists memories in rank order, optionally of one type (an unknown type is an
    /// error, as in [`Memory::list_filtered`]).
    pub fn list(&self, kind: Option<&str>) -> Result<(Vec<Listed>, Vec<Problem>)> {
        self.list_filtered(&Filter::default().types(kind))
    }

    /// Lists the memories that pass `filter`, in rank order (spec/ranking.md#filters).
    pub fn list_filtered(&self, filter: &Filter) -> Result<(Vec<Listed>, Vec<Problem>)> {
        self.list_and_index(filter).map(|(l, p, _)| (l, p))
    }

    /// Lists like [`Memory::list_filtered`], and says what the stale-index rebuild did.
    pub fn list_and_index(
        &self,
        filter: &Filter,
    ) -> Result<(Vec<Listed>, Vec<Problem>, IndexOutcome)> {
        let snap = self.load()?;
        check_filter(filter, &snap.records)?;
        let (_, index) = self.refresh_index_if_stale(&snap.records)?;
        let now = self.now();
        let life = Lifecycle::of(&snap.records, now.date_naive());
        let last_read = access::last_reads(&self.backend);
        let out = rank::order(&snap.records, now)
            .into_iter()
            .map(|(i, score)| (&snap.records[i], score))
            .filter(|(r, _)| filter.admits(r, &life))
            .map(|(r, score)| Listed {
                key: r.key.to_string(),
                kind: r.meta.kind.to_string(),
                name: r.meta.name.clone(),
                description: r.meta.description.clone(),
                updated: r.meta.updated.text.clone(),
                score,
                superseded_by: life.superseded_by(r.key.as_str()).to_vec(),
                expired: life.expired(r),
                last_read: last_read.get(r.key.as_str()).cloned(),
            })
            .collect();
        Ok((out, snap.problems, index))
    }

    /// Memories relevant to `query`, best first (spec/ranking.md#recall).
    pub fn recall(&self, query: &str, limit: usize) -> Result<(Vec<Hit>, Vec<Problem>)> {
        self.recall_filtered(query, limit, &Filter::default())
    }

    /// Memories that pass `filter` and are relevant to `query`, best first
    /// (spec/ranking.md#filters): the hits of [`Memory::recall`] with the others
    /// left out before the limit is applied; scores do not change.
    pub fn recall_filtered(
        &self,
        query: &str,
        limit: usize,
        filter: &Filter,
    ) -> Result<(Vec<Hit>, Vec<Problem>)> {
        self.recall_report(query, limit, filter)
            .map(|r| (r.hits, r.problems))
    }

    /// [`Memory::recall_filtered`] with the ranking that ran: with `[embeddings]`
    /// configured, keyword and vector ranks fused, or keyword ranking and why it fell
    /// back (spec/ranking.md#hybrid-recall). Embeddings never fail the call.
    pub fn recall_report(&self, query: &str, limit: usize, filter: &Filter) -> Result<Recall> {
        if query.trim().is_empty() {
            return Err(Error::EmptyQuery);
        }
        // With [embeddings], the records are looked at once to find what to embed, the
        // network is reached with no lock held, and the ranking runs on the records as
        // they are then (spec/ranking.md#hybrid-recall). Without, this is one pass.
        let mut hy = hybrid::State::start(&self.backend);
        if hy.wants_records()
            && let Some(r) = self.with_warm(|w| {
                w.prepare_hybrid(&mut hy);
                Ok(())
            })
        {
            r?;
            hy.fetch(query);
        }
        let warm = self.with_warm(|w| {
            check_filter(filter, w.records())?;
            let keyword = w.corpus().relevance(w.records(), query);
            let (rel, report) = w.finish_hybrid(&mut hy, keyword);
            let hits = recall_rel(w.records(), rel, limit, filter, self.now());
            Ok(((hits, report), w.problems().to_vec()))
        });
        let ((hits, embeddings), problems) = match warm {
            Some(r) => {
                let out = r?;
                self.save_warm_vectors();
                out
            }
            None => {
                let (snap, corpus, _) = self.load_records(true)?;
                check_filter(filter, &snap.records)?;
                let corpus = corpus.expect("a corpus was asked for");
                if hy.wants_records() {
                    hy.prepare(&snap.records);
                    hy.fetch(query);
                }
                let keyword = corpus.relevance(&snap.records, query);
                let (rel, report) = hy.finish(&snap.records, keyword);
                let hits = recall_rel(&snap.records, rel, limit, filter, self.now());
                store::drop_later((snap.records, corpus));
                ((hits, report), snap.problems)
            }
        };
        access::record(
            &self.backend,
            self.now(),
            hits.iter().map(|h| h.key.as_str()),
            access::Via::Recall,
        );
        Ok(Recall {
            hits,
            problems,
            embeddings,
        })
    }

    /// Embeds every memory without a cached vector (`memdir index --embeddings`,
    /// spec/ranking.md#hybrid-recall).
    pub fn index_embeddings(
        &self,
    ) -> Result<std::result::Result<hybrid::Summary, crate::embed::EmbedError>> {
        let (snap, _, _) = self.load_with(false)?;
        Ok(hybrid::index(&self.backend, &snap.records))
    }

    /// Builds the context block (spec/ranking.md#packing-the-context-block).
    pub fn context(&self, max_tokens: usize, query: Option<&str>) -> Result<Block> {
        self.context_with_problems(max_tokens, query)
            .map(|(b, _)| b)
    }

    /// Builds the context block and returns the problems met loading the store.
    pub fn context_with_problems(
        &self,
        max_tokens: usize,
        query: Option<&str>,
    ) -> Result<(Block, Vec<Problem>)> {
        self.context_filtered(max_tokens, query, &Filter::default())
    }

    /// Builds the context block with only the memories that pass `filter` packed
    /// (spec/ranking.md#filters; the index section stays the store's), and returns
    /// the problems met loading the store.
    pub fn context_filtered(
        &self,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
    ) -> Result<(Block, Vec<Problem>)> {
        self.context_report(max_tokens, query, filter)
            .map(|c| (c.block, c.problems))
    }

    /// [`Memory::context_filtered`] with the ranking that ran: with `[embeddings]`
    /// configured and a query, the memory order by hybrid relevance, or by keyword
    /// relevance and why it fell back (spec/ranking.md#hybrid-recall).
    pub fn context_report(
        &self,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
    ) -> Result<Context> {
        // Hybrid memory order as for recall: the network with no lock held.
        let query_text = query.filter(|q| !q.trim().is_empty());
        let mut hy = match query_text {
            Some(_) => hybrid::State::start(&self.backend),
            None => hybrid::State::Off,
        };
        if let Some(q) = query_text
            && hy.wants_records()
            && let Some(r) = self.with_warm(|w| {
                w.prepare_hybrid(&mut hy);
                Ok(())
            })
        {
            r?;
            hy.fetch(q);
        }
        if let Some(out) = self.with_warm(|w| {
            check_filter(filter, w.records())?;
            let index_text = w.index_text(self)?.to_string();
            let events = self.recent_events(max_tokens.saturating_mul(4))?;
            let mut problems = w.problems().to_vec();
            problems.extend(events.problems);
            // `None` without [embeddings]: the keyword block exactly.
            let (relevance, embeddings) = match query_text {
                Some(q) if !matches!(hy, hybrid::State::Off) => {
                    let keyword = w.corpus().relevance(w.records(), q);
                    let (rel, report) = w.finish_hybrid(&mut hy, keyword);
                    (fused(rel, report.as_ref()), report)
                }
                _ => (None, None),
            };
            let parts = context::Parts {
                records: w.records(),
                corpus: Some(w.corpus()),
                index_text: &index_text,
                events: &events.events,
                now: self.now(),
            };
            Ok(Context {
                block: context::build_with(&parts, max_tokens, query, filter, relevance),
                problems,
                embeddings,
            })
        }) {
            if let Ok(c) = &out {
                self.save_warm_vectors();
                access::record(
                    &self.backend,
                    self.now(),
                    c.block.memories.iter().map(|m| m.key.as_str()),
                    access::Via::Context,
                );
            }
            return out;
        }
        let has_query = query.is_some_and(|q| !q.trim().is_empty());
        let (snap, corpus, _) = self.load_records(has_query)?;
        check_filter(filter, &snap.records)?;
        let events = self.recent_events(max_tokens.saturating_mul(4))?;
        let mut problems = snap.problems;
        problems.extend(events.problems);
        // MEMORY.md comes with the block (`block_while`).
        let mut prepared =
            context::Prepared::with_index(snap.records, String::new(), events.events, self.now());
        if let Some(c) = corpus {
            prepared.set_corpus(c);
        }
        // With [embeddings] configured, the memory order uses hybrid relevance
        // (spec/ranking.md#hybrid-recall); without, this is `block_filtered` exactly.
        if let Some(q) = query_text
            && hy.wants_records()
        {
            hy.prepare(prepared.records());
            hy.fetch(q);
        }
        let (relevance, embeddings) = match query_text {
            Some(q) if !matches!(hy, hybrid::State::Off) => {
                let keyword = prepared.keyword_relevance(q);
                let (rel, report) = hy.finish(prepared.records(), keyword);
                (fused(rel, report.as_ref()), report)
            }
            _ => (None, None),
        };
        // MEMORY.md is rendered and checked (rebuilt when stale) while the memories
        // and lines are scored.
        let block = prepared.block_while(
            |records| self.refresh_index_if_stale(records).map(|(text, _)| text),
            max_tokens,
            query,
            filter,
            relevance,
        )?;
        store::drop_later(prepared);
        access::record(
            &self.backend,
            self.now(),
            block.memories.iter().map(|m| m.key.as_str()),
            access::Via::Context,
        );
        Ok(Context {
            block,
            problems,
            embeddings,
        })
    }

    /// Loads the store once for many context blocks (a benchmark, a server answering
    /// many turns): `prepared.block(max_tokens, query)` is exactly what
    /// [`Memory::context`] returns for the store as it was loaded here.
    pub fn prepare_context(&self) -> Result<(context::Prepared, Vec<Problem>)> {
        let (snap, corpus, _) = self.load_with(true)?;
        self.refresh_index_if_stale(&snap.records)?;
        let events = self.events()?;
        let mut problems = snap.problems;
        problems.extend(events.problems);
        let mut prepared = context::Prepared::new(snap.records, events.events, self.now());
        if let Some(c) = corpus {
            prepared.set_corpus(c);
        }
        Ok((prepared, problems))
    }

    /// Reports malformed files and timeline lines; with `fix`, repairs what is safe.
    ///
    /// `fix` holds the lock throughout, so no memdir write is in flight while it
    /// removes temp files: in the folders memdir writes only under the lock, every temp
    /// file is left over; in `.memdir/` and `.memdir/cache/` (written without the lock)
    /// only those untouched for [`STALE_TEMP`] are removed.
    pub fn check(&self, fix: bool) -> Result<CheckReport> {
        if fix {
            self.require_dir()?;
            self.backend.create()?;
        }
        let _g = if fix {
            Some(self.backend.lock(&self.mem_lock)?)
        } else {
            None
        };
        let snap = self.load()?;
        // A `timeline` that is not a folder is a problem to report, not a reason to
        // stop checking the rest.
        let events = match self.events() {
            Ok(e) => e,
            Err(Error::NotADir { .. }) => Events {
                problems: vec![Problem::error(
                    TIMELINE_DIR,
                    None,
                    "not a folder: memdir keeps the timeline's day files in it and cannot note or forget while it is there; move it away",
                )],
                ..Events::default()
            },
            Err(e) => return Err(e),
        };
        let mut report = CheckReport {
            memories: snap.records.len(),
            events: events.events.len(),
            problems: snap.problems,
            fixed: Vec::new(),
            timeline_repairs: Vec::new(),
        };
        report.problems.extend(events.problems);
        let (repairs, repair_problems) = self.repair_timeline(fix)?;
        report.problems.extend(repair_problems);
        if fix {
            report
                .fixed
                .extend(repairs.iter().map(TimelineRepair::describe));
        }
        report.timeline_repairs = repairs;
        report
            .problems
            .extend(state::compaction_problems(&snap.records));
        if !fix {
            let want = FileDigest::of(index::render(&snap.records).as_bytes());
            let message = match self.backend.digest(INDEX_FILE) {
                Ok(Some(have)) if have == want => None,
                Ok(Some(_)) => Some("stale; `index` or `check --fix` rebuilds it".to_string()),
                Ok(None) => Some("missing; `index` or `check --fix` rebuilds it".to_string()),
                Err(e) => Some(format!("cannot be read ({})", short_io(&e))),
            };
            if let Some(m) = message {
                report.problems.push(Problem::warning(INDEX_FILE, None, m));
            }
        }
        let wall = Clock::wall();
        for (sub, lock_only) in TEMP_FOLDERS {
            for t in self.backend.temp_files(sub)? {
                let stale = lock_only
                    || t.modified
                        .is_none_or(|m| wall.duration_since(m).is_ok_and(|age| age >= STALE_TEMP));
                if fix && stale {
                    self.backend.remove(&t.rel)?;
                    report.fixed.push(format!("removed {}", t.rel));
                    continue;
                }
                report.problems.push(Problem::warning(
                    &t.rel,
                    None,
                    if stale {
                        "temporary file left by an interrupted write".to_string()
                    } else {
                        format!(
                            "temporary file of a write that may still be running; `check --fix` removes it once untouched for {} minutes",
                            STALE_TEMP.as_secs() / 60
                        )
                    },
                ));
            }
        }
        if fix {
            let out = self.write_index(&snap.records)?;
            if out.written {
                report.fixed.push("rebuilt MEMORY.md".into());
            }
            if let Some(b) = out.backup {
                report
                    .fixed
                    .push(format!("saved the hand-edited MEMORY.md as {b}"));
            }
        }
        report
            .problems
            .extend(graph::dangling_problems(&snap.records, &snap.texts));
        for (path, copy) in self.conflicts()? {
            report.problems.push(Problem::warning(
                &copy,
                None,
                format!(
                    "conflict copy: the version of {path} that lost a sync merge; keep what you want in {path}, then delete this file"
                ),
            ));
        }
        Ok(report)
    }

    /// The portable blob of the store (spec/cli.md#import).
    pub fn export(&self) -> Result<(String, Vec<Problem>)> {
        let snap = self.load()?;
        let events = self.events()?;
        let mut problems = snap.problems;
        // Each file goes out as the three.ws runtime reads it to the same values
        // (spec/cli.md#export); one memdir cannot parse goes out as it is. Files come
        // in the order of the blobs imported so far, then by key.
        let mut by_key: Vec<(String, &String)> =
            snap.texts.iter().map(|(k, t)| (k.clone(), t)).collect();
        merge::sort_for_export(&mut by_key, &self.blob_order());
        let files: Vec<(String, String)> = by_key
            .into_iter()
            .map(|(k, t)| {
                let text = match frontmatter::parse(t) {
                    Ok(p) => frontmatter::render_portable(&p.meta, &p.body),
                    Err(_) => t.clone(),
                };
                (format!("{k}.md"), text)
            })
            .collect();
        problems.extend(events.problems);
        Ok((
            blob::encode(&index::render(&snap.records), &files, &events.events),
            problems,
        ))
    }

    /// The memories as the MCP reference memory server's `memory.jsonl`
    /// (spec/import-formats.md#export).
    pub fn export_mcp_memory(&self) -> Result<(String, Vec<Problem>)> {
        let snap = self.load()?;
        Ok((foreign::mcp_memory::encode(&snap.records), snap.problems))
    }

    /// The keys in the order of the blobs imported so far (empty when none was, or
    /// when the record cannot be read: it only orders an export).
    fn blob_order(&self) -> Vec<String> {
        self.backend
            .read_text(BLOB_ORDER_FILE, MAX_MEMORY_FILE)
            .ok()
            .flatten()
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// Imports a blob: validates all of it, then writes (unless `dry_run`).
    pub fn import(&self, bytes: &[u8], strategy: Strategy, dry_run: bool) -> Result<ImportReport> {
        let incoming = blob::decode(bytes)?;
        self.import_incoming(incoming, strategy, dry_run, None)
    }

    /// Imports any supported input (spec/import-formats.md): a blob, a Claude Code
    /// memory folder, an MCP `memory.jsonl` or a basic-memory project; `format` `None`
    /// detects it. Validates all of it, then writes (unless `dry_run`); a foreign
    /// import that writes a memory also logs an `imported` event.
    pub fn import_from(
        &self,
        source: &Source,
        format: Option<Format>,
        strategy: Strategy,
        dry_run: bool,
    ) -> Result<ImportReport> {
        let format = match format {
            Some(f) => f,
            None => foreign::detect(source)?,
        };
        if format == Format::Blob {
            let Source::File { bytes, .. } = *source else {
                return Err(Error::Foreign(foreign::ForeignError::Shape {
                    format: "blob",
                    wants: "one file",
                    name: source.name().to_string(),
                }));
            };
            return self.import(bytes, strategy, dry_run);
        }
        let incoming = foreign::decode(format, source, self.now().date_naive())?;
        let origin = Origin {
            format,
            name: source.name(),
        };
        self.import_incoming(incoming, strategy, dry_run, Some(origin))
    }

    fn import_incoming(
        &self,
        mut incoming: blob::Incoming,
        strategy: Strategy,
        dry_run: bool,
        origin: Option<Origin>,
    ) -> Result<ImportReport> {
        // Secrets are refused on import as on any write.
        let mut skipped = std::mem::take(&mut incoming.skipped);
        incoming
            .files
            .retain(|f| match secrets::find_secret(&f.text) {
                Some(kind) => {
                    skipped.push(Skipped {
                        item: f.key.file_name(),
                        reason: format!("contains what looks like {}", kind.describe()),
                    });
                    false
                }
                None => true,
            });
        incoming
            .events
            .retain(|e| match secrets::find_secret(&e.encode()) {
                Some(kind) => {
                    skipped.push(Skipped {
                        item: format!("timeline event at {}", timeline::format_ts(&e.ts)),
                        reason: format!("contains what looks like {}", kind.describe()),
                    });
                    false
                }
                None => true,
            });
        if !dry_run {
            self.backend.create()?;
        } else {
            self.require_dir()?;
        }
        let _g = self.backend.lock(&self.mem_lock)?;
        // Read and check everything before writing anything, in a dry run too, so
        // that `--dry-run` fails exactly where the real run would and a failed import
        // has changed nothing (spec/cli.md#import).
        let snap = self.load()?;
        let events = self.events()?;
        // Forgotten keys must all be known: a timeline file (or folder) that cannot be
        // read at all stops the import; a bad line is only that line.
        let holds_events = |path: &str| {
            path == TIMELINE_DIR
                || timeline::is_day_file_name(path.rsplit('/').next().unwrap_or(path))
        };
        if let Some(p) = events
            .problems
            .iter()
            .find(|p| p.severity == Severity::Error && p.line.is_none() && holds_events(&p.path))
        {
            return Err(Error::TimelineUnreadable {
                path: self.backend.display_path(&p.path),
                message: p.message.clone(),
            });
        }
        // A memory the three.ws runtime rewrote lacks the fields it cannot carry; the
        // local memory's values of those are kept (spec/cli.md#import).
        let local_meta: HashMap<&str, &Meta> = snap
            .records
            .iter()
            .map(|r| (r.key.as_str(), &r.meta))
            .collect();
        for f in &mut incoming.files {
            if let Some(l) = local_meta.get(f.key.as_str())
                && !merge::keep_local_only(l, &mut f.parsed.meta).is_empty()
            {
                f.text = frontmatter::render(&f.parsed.meta, &f.parsed.body);
            }
        }
        let forgotten = merge::forgotten(&events.events);
        let plan = merge::plan(
            &snap.records,
            &forgotten,
            &merge::forgotten(&incoming.events),
            &incoming.files,
            strategy,
        );
        let mut new_events = merge::new_events(&events.events, &incoming.events);
        let counts = Counts::of(&plan, skipped.len());
        // A foreign input has no timeline of its own: the import is logged as one
        // event naming the format, the input and the keys it wrote (none when it
        // writes nothing, so importing the same input again changes nothing).
        if let Some(o) = &origin {
            let written: Vec<Value> = plan
                .iter()
                .filter(|d| matches!(d.action, Action::Added | Action::Updated))
                .map(|d| Value::String(d.key.clone()))
                .collect();
            if !written.is_empty() {
                let mut fields = Map::new();
                fields.insert("from".into(), Value::String(o.format.as_str().into()));
                let base = o
                    .name
                    .trim_end_matches(['/', '\\'])
                    .rsplit(['/', '\\'])
                    .next()
                    .unwrap_or(o.name);
                fields.insert("source".into(), Value::String(base.to_string()));
                fields.insert("count".into(), Value::from(written.len()));
                fields.insert("keys".into(), Value::Array(written));
                let mut event = Event::new(self.now(), "imported", fields)?;
                // A very large import names its keys only while the event stays within
                // the size of one timeline line; the count is always there.
                if event.encode().len() > MAX_EVENT {
                    event.fields.remove("keys");
                }
                new_events.push(event);
            }
        }
        let by_key: HashMap<&str, &blob::IncomingFile> =
            incoming.files.iter().map(|f| (f.key.as_str(), f)).collect();
        let mut records = snap.records;
        for d in &plan {
            if matches!(d.action, Action::Added | Action::Updated) {
                let f = by_key[d.key.as_str()];
                records.retain(|r| r.key != f.key);
                records.push(Record {
                    key: f.key.clone(),
                    meta: f.parsed.meta.clone(),
                    body: f.parsed.body.clone(),
                });
            }
        }
        let mut index_plan = self.plan_index(&records)?;
        let present: std::collections::HashSet<String> =
            records.iter().map(|r| r.key.to_string()).collect();
        let report = ImportReport {
            format: origin.as_ref().map_or("blob", |o| o.format.as_str()),
            strategy,
            dry_run,
            counts,
            events_added: new_events.len(),
            plan,
            skipped_items: skipped,
            converted: incoming.converted.clone(),
            unresolved: incoming.unresolved.clone(),
        };
        if dry_run {
            return Ok(report);
        }
        self.save_index_backup(&mut index_plan)?;
        // Events first: a `forgot` line that lands is a tombstone the memories written
        // next cannot contradict.
        self.insert_events(&new_events)?;
        for d in &report.plan {
            if matches!(d.action, Action::Added | Action::Updated) {
                let f = by_key[d.key.as_str()];
                self.backend
                    .write_atomic(&f.key.file_name(), f.text.as_bytes())?;
            }
        }
        self.write_index_file(&index_plan)?;
        let incoming_keys: Vec<&str> = incoming.files.iter().map(|f| f.key.as_str()).collect();
        let mut order = merge::blob_order(&self.blob_order(), &incoming_keys, strategy);
        order.retain(|k| present.contains(k));
        let mut text = order.join("\n");
        text.push('\n');
        self.backend
            .write_atomic(BLOB_ORDER_FILE, text.as_bytes())?;
        Ok(report)
    }

    /// Inserts events into their day files in time order; caller holds the lock.
    /// Existing lines (including unreadable ones, byte for byte) keep their text and
    /// relative order. Day files are streamed: any size is fine.
    fn insert_events(&self, events: &[Event]) -> Result<()> {
        let mut by_day: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
        for e in events {
            by_day.entry(e.day_file()).or_default().push(e);
        }
        for (file, mut new) in by_day {
            new.sort_by_key(|e| e.ts);
            let mut read: Result<bool> = Ok(false);
            self.backend
                .write_atomic_with(&file, |w| {
                    let mut pending = new.into_iter().peekable();
                    let mut failed: Option<std::io::Error> = None;
                    read = self.backend.for_each_line(&file, u64::MAX, |l| {
                        if failed.is_some() {
                            return;
                        }
                        let Ok(bytes) = l.bytes else { return };
                        let mut put = || -> std::io::Result<()> {
                            if let Some(e) = std::str::from_utf8(bytes)
                                .ok()
                                .and_then(|t| timeline::parse_line(t).ok())
                            {
                                while let Some(n) = pending.next_if(|n| n.ts < e.ts) {
                                    w.write_all(n.encode().as_bytes())?;
                                    w.write_all(b"\n")?;
                                }
                            }
                            w.write_all(bytes)?;
                            w.write_all(b"\n")
                        };
                        if let Err(e) = put() {
                            failed = Some(e);
                        }
                    });
                    if let Some(e) = failed {
                        return Err(e);
                    }
                    if read.is_err() {
                        return Err(std::io::Error::other("reading the day file failed"));
                    }
                    for n in pending {
                        w.write_all(n.encode().as_bytes())?;
                        w.write_all(b"\n")?;
                    }
                    Ok(())
                })
                .map_err(|e| match std::mem::replace(&mut read, Ok(false)) {
                    Err(r) => r,
                    Ok(_) => e,
                })?;
        }
        Ok(())
    }
}

/// What rebuilding MEMORY.md takes, decided before anything is written.
#[derive(Debug)]
struct IndexPlan {
    want: String,
    want_digest: FileDigest,
    /// The MEMORY.md on disk now.
    have: Option<FileDigest>,
    /// MEMORY.md differs from `want`.
    replace: bool,
    /// MEMORY.md was edited by hand and must be saved first.
    backup: bool,
    /// Where it was saved.
    backup_name: Option<String>,
}

/// Files a load reads, parses or analyzes on all cores from (fewer run on the
/// calling thread: spawning costs more than it saves).
const PARALLEL_FROM: usize = 256;

/// Sorts a load's problems in file order (whatever order threads met them in) and
/// adds a warning for keys that differ only by case.
fn finish_problems(problems: &mut Vec<Problem>, records: &[Record]) {
    problems.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    let mut lower: HashMap<String, Vec<&str>> = HashMap::new();
    for r in records {
        lower
            .entry(r.key.as_str().to_lowercase())
            .or_default()
            .push(r.key.as_str());
    }
    let mut dupes: Vec<Problem> = lower
        .values()
        .filter(|v| v.len() > 1)
        .map(|v| {
            Problem::warning(
                &format!("{}.md", v[0]),
                None,
                format!("keys differ only by case: {}", v.join(", ")),
            )
        })
        .collect();
    dupes.sort_by(|a, b| a.path.cmp(&b.path));
    problems.extend(dupes);
}

/// The hits of a recall from the relevance of every record.
fn recall_rel(
    records: &[Record],
    rel: Vec<f64>,
    limit: usize,
    filter: &Filter,
    now: DateTime<Utc>,
) -> Vec<Hit> {
    let life = Lifecycle::of(records, now.date_naive());
    let mut hits: Vec<(usize, f64, f64)> = rel
        .iter()
        .enumerate()
        .filter(|(i, r)| **r > 0.0 && filter.admits(&records[*i], &life))
        .map(|(i, r)| {
            let m = &records[i].meta;
            (
                i,
                search::blend(*r, rank::salience(m), rank::recency(m, now)),
                *r,
            )
        })
        .collect();
    hits.sort_by(|a, b| rank::compare((&records[a.0], a.1), (&records[b.0], b.1)));
    hits.truncate(limit);
    hits.into_iter()
        .map(|(i, score, relevance)| {
            let r = &records[i];
            Hit {
                key: r.key.to_string(),
                kind: r.meta.kind.to_string(),
                name: r.meta.name.clone(),
                description: r.meta.description.clone(),
                updated: r.meta.updated.text.clone(),
                score,
                relevance,
                superseded_by: life.superseded_by(r.key.as_str()).to_vec(),
                expired: life.expired(r),
            }
        })
        .collect()
}

/// Refuses an event whose line is over [`MAX_EVENT`].
fn check_event_size(event: &Event, line: &str) -> Result<()> {
    if line.len() > MAX_EVENT {
        return Err(Error::EventTooLarge {
            kind: event.kind.clone(),
            size: line.len(),
            limit: MAX_EVENT,
        });
    }
    Ok(())
}

/// An IO error as a short message for a problem line (the path is already there).
fn short_io(e: &Error) -> String {
    match e {
        Error::TooLarge { size, limit, .. } => {
            format!("not loaded: {size} bytes is over the limit of {limit} bytes")
        }
        Error::NotUtf8 { .. } => "not loaded: not valid UTF-8 text".into(),
        Error::Symlink { .. } => "symbolic link not followed".into(),
        Error::Io { source, .. } => format!("not loaded: {source}"),
        other => format!("not loaded: {other}"),
    }
}

/// The relevance a context block is built with: the fused one when hybrid ranking
/// ran; none when it fell back, so that the block is the keyword block exactly
/// (its memory prior weighed by the keyword match's strength, spec/ranking.md).
fn fused(rel: Vec<f64>, report: Option<&hybrid::Report>) -> Option<Vec<f64>> {
    report.is_some_and(|r| r.mode == "hybrid").then_some(rel)
}

/// A filter's values that need the store: its types must be standard or present.
fn check_filter(filter: &Filter, records: &[Record]) -> Result<()> {
    let bad = |source| Error::Filter {
        arg: String::new(),
        source,
    };
    filter.check().map_err(bad)?;
    filter
        .unknown_type(records.iter().map(|r| &r.meta.kind))
        .map_err(bad)
}

/// A `decay` value given by a caller, checked.
fn parse_decay(decay: Option<&str>) -> Result<Option<Decay>> {
    match decay {
        None => Ok(None),
        Some(s) => Decay::parse(s)
            .map(Some)
            .ok_or_else(|| Error::Decay { value: s.into() }),
    }
}

/// Checks what a write would store, before the lock: required fields, the body's
/// size, and no secret in any text field.
fn check_draft(key: &Key, d: &Draft) -> Result<()> {
    if let Some(v) = d.valid_until.as_deref().map(str::trim)
        && !v.is_empty()
        && crate::memory::parse_day(v).is_none()
    {
        return Err(Error::ValidUntil { value: v.into() });
    }
    for k in d.supersedes.iter().flatten() {
        if Key::parse(k.trim())? == *key {
            return Err(Error::SupersedesSelf {
                key: key.to_string(),
            });
        }
    }
    if d.name.trim().is_empty() {
        return Err(Error::Empty { field: "name" });
    }
    if d.description.trim().is_empty() {
        return Err(Error::Empty {
            field: "description",
        });
    }
    if d.body.len() > MAX_BODY {
        return Err(Error::BodyTooLarge {
            size: d.body.len(),
            limit: MAX_BODY,
        });
    }
    let mut fields: Vec<(&'static str, &str)> = vec![
        ("name", &d.name),
        ("description", &d.description),
        ("body", &d.body),
    ];
    if let Some(s) = &d.source {
        fields.push(("source", s));
    }
    for t in d.tags.iter().flatten() {
        fields.push(("tags", t));
    }
    for (field, text) in fields {
        if let Some(kind) = secrets::find_secret(text) {
            return Err(Error::Secret {
                key: key.to_string(),
                field,
                kind,
            });
        }
    }

    Ok(())
}

/// One memory file during a load.
struct LoadedFile {
    stat: Option<store::Stat>,
    checked: i64,
    key: String,
    text: Text,
    parsed: std::result::Result<Parsed, frontmatter::FrontmatterError>,
    /// The parse's warnings, once the parse has become a record.
    warnings: Vec<frontmatter::Warning>,
    data: Option<search::DocData>,
}

/// A memory file's text as loaded: whole, or what surrounds its body (which the
/// record holds) when the body was taken from the text in place.
enum Text {
    Whole(String),
    Around { head: String, tail: String },
}

impl Text {
    /// The text in up to three parts, given the record's body.
    fn parts<'a>(&'a self, body: &'a str) -> [&'a str; 3] {
        match self {
            Text::Whole(t) => [t, "", ""],
            Text::Around { head, tail } => [head, body, tail],
        }
    }

    /// The whole text, given the record's body.
    fn whole(self, body: &str) -> String {
        match self {
            Text::Whole(t) => t,
            Text::Around { head, tail } => [head.as_str(), body, &tail].concat(),
        }
    }
}
