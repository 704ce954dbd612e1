//! What a front end may see of the directory's files through the façade, read only
//! (`Memory::dir`, `index_text`, `file_text`, `memory_file_keys`, the search index's
//! health, the configuration's path and its `[embeddings]`), so no program outside the crate needs the
//! store's backend, which writes without the lock.
//!
//! Must not write a file (but `create`, which makes the empty folders).

use std::path::{Path, PathBuf};

use super::Memory;
use crate::embed::{Config as EmbedConfig, EmbedError};
use crate::error::Result;
use crate::memory::Key;
use crate::memory::layout::{
    CONFIG_FILE, INDEX_FILE, MAX_MEMORY_FILE, SEARCH_DELTA_FILE, SEARCH_INDEX_FILE,
};
use crate::store::cache::Cache;
use crate::store::{Backend, Found, found_name};

/// The search index under `.memdir/cache/` as `memdir doctor` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchIndexHealth {
    /// The index (and its delta, if any) reads: this many bytes of them.
    Readable {
        /// The size of the index file and its delta together.
        bytes: u64,
    },
    /// A file of the index is there but cannot be read (corrupt or from another
    /// version): the next query rebuilds it.
    Unreadable,
    /// No index yet: the first query builds it.
    Missing,
}

impl Memory {
    /// The directory on disk; `None` for a store in memory ([`Memory::in_memory`]).
    pub fn dir(&self) -> Option<&Path> {
        match &self.backend {
            Backend::Dir(p) => Some(p),
            Backend::Mem(_) => None,
        }
    }

    /// Creates the directory, `timeline/` and `.memdir/` if missing (nothing for a
    /// store in memory); writes no file.
    pub fn create(&self) -> Result<()> {
        self.backend.create()
    }

    /// MEMORY.md as it is (memdir's or the agent's), `None` when there is none;
    /// refused when over `limit` bytes. Only reads: no rebuild (see [`Memory::index`]).
    pub fn index_text(&self, limit: u64) -> Result<Option<String>> {
        self.backend.read_text(INDEX_FILE, limit)
    }

    /// The file of the memory `key` as it is (frontmatter and body), `None` when
    /// there is none; refused over a memory file's size limit. Notes no read.
    pub fn file_text(&self, key: &Key) -> Result<Option<String>> {
        self.backend.read_text(&key.file_name(), MAX_MEMORY_FILE)
    }

    /// The keys of the regular memory files in the directory (every `*.md` but
    /// MEMORY.md), sorted, without reading them.
    pub fn memory_file_keys(&self) -> Result<Vec<String>> {
        Ok(self
            .backend
            .scan_memories()?
            .iter()
            .filter(|f| matches!(f, Found::File(_)))
            .map(|f| {
                let n = found_name(f);
                n[..n.len() - 3].to_string()
            })
            .collect())
    }

    /// The path of `.memdir/config.toml`, for messages (it may not exist).
    pub fn config_path(&self) -> PathBuf {
        self.backend.display_path(CONFIG_FILE)
    }

    /// Whether the search index file exists (not whether it reads).
    pub fn has_search_index(&self) -> bool {
        self.backend.is_file(SEARCH_INDEX_FILE)
    }

    /// `[embeddings]` of `.memdir/config.toml`, validated: `None` when there is no
    /// such table (keyword recall). Only reads; no endpoint is called.
    pub fn embeddings_config(&self) -> std::result::Result<Option<EmbedConfig>, EmbedError> {
        super::hybrid::config(&self.backend)
    }

    /// Reads the search index as a query would, to say whether it is usable; writes
    /// nothing (an unreadable index stays for the next query to rebuild).
    pub fn search_index_health(&self) -> SearchIndexHealth {
        let cache = Cache::load(&self.backend, false);
        let bytes = cache.main_bytes + cache.delta_bytes;
        if bytes > 0 {
            SearchIndexHealth::Readable { bytes }
        } else if self.backend.is_file(SEARCH_INDEX_FILE) || self.backend.is_file(SEARCH_DELTA_FILE)
        {
            SearchIndexHealth::Unreadable
        } else {
            SearchIndexHealth::Missing
        }
    }
}
