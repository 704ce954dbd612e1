//! The `Memory` façade: the operations of spec/cli.md#commands over a store.
//!
//! It composes the pure core (frontmatter, index, timeline, rank, search, context,
//! merge) with the store's IO. Every mutation takes the cross-process lock, re-reads
//! what it changes, and rebuilds MEMORY.md before releasing the lock, so several
//! processes writing at once lose nothing. Nothing here prints.
//!
//! This file keeps the `Memory` struct, its constructors, the lock handle sync uses
//! and the one-memory reads; the operations live in submodules, each an `impl Memory`
//! of its own: `load`, `events`, `index` (MEMORY.md), `write`, `query`, `check` and
//! `exchange`, with the public result types in `types`.

pub(crate) mod access;
pub mod backfill;
mod check;
mod events;
mod exchange;
mod files;
mod graph;
pub(crate) mod hybrid;
mod index;
mod index_check;
mod load;
mod memory_tool;
mod ops;
pub(crate) mod prune;
mod query;
mod repair;
mod requests;
mod state;
#[cfg(test)]
mod testing;
mod types;
mod warm;
pub(crate) mod watch;
mod write;

pub use files::SearchIndexHealth;
pub use graph::MAX_DEPTH as MAX_GRAPH_DEPTH;
pub use index::IndexOwner;
pub use memory_tool::ToolReply;
pub use ops::{Activity, ActivityQuery, Edit, FindReplace, SectionEdit};
pub use repair::TimelineRepair;
pub use requests::{
    ContextRequest, Export, Forgotten, Indexed, KnowledgeGraph, List, ListRequest, Loaded,
    RecallRequest, Renamed, Sessions, States, Written,
};
pub use state::{Compacted, StateEntry};
pub(crate) use types::Events;
pub(crate) use types::found_problem;
pub use types::lifecycle_mark;
pub use types::{
    CheckReport, Context, Draft, Hit, IfExists, ImportReport, IndexOutcome, Listed, Problem,
    Recall, SearchIndexReport, Severity, Snapshot, WriteOutcome,
};

// The helpers the other engine modules reach as `super::…` / `crate::engine::…`.
use events::check_event_size;
use write::{check_draft, parse_decay};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::memory::frontmatter::{self, Parsed};
use crate::memory::layout::{INDEX_FILE, MAX_MEMORY_FILE};
use crate::memory::{Key, Record};
use crate::store::{Backend, Found};

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

/// A memory directory (or an in-memory store) and the operations on it.
///
/// ```
/// use memdir::{ContextRequest, Draft, Memory};
/// let mem = Memory::in_memory();
/// mem.write(&Draft {
///     key: "user_role".into(),
///     name: "Role".into(),
///     description: "plays 5-a-side on Saturdays".into(),
///     kind: "user".into(),
///     body: "Argentina fan.".into(),
///     ..Draft::default()
/// })?;
/// let block = mem.context(&ContextRequest::new(1024))?.block;
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
    /// (sync). Not public: a program outside the crate (the `memdir` binary too)
    /// writes through `Memory`'s methods, under the lock, and reads through the
    /// read-only ones of `engine::files`.
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
            body: p.body.into(),
        })
    }
}
