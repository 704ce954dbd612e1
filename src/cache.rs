//! The parse cache: parsed frontmatter of memory files, keyed by the SHA-256 of the
//! file's bytes, in `.memdir/cache/frontmatter-v1.json`.
//!
//! Loading a store reads every file anyway (the body is needed), so keying by content
//! hash costs one hash per file and catches every edit, including one that keeps the
//! size and the modification time. What it saves is the YAML parse, by far the largest
//! part of loading. The cache is an optimization only: a missing, unreadable,
//! corrupt or foreign-version cache is ignored and rebuilt, and deleting it at any time
//! loses nothing. Writes are atomic and need no lock (a lost race only costs misses).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::frontmatter::{Extra, Warning};
use crate::memory::{Decay, Kind, Meta, Stamp};
use crate::store::Backend;

/// Where the cache lives, relative to the memory directory.
pub const CACHE_FILE: &str = ".memdir/cache/frontmatter-v1.json";
/// Largest cache file read (a corrupt or hostile one is ignored past this).
const MAX_CACHE_BYTES: u64 = 512 * 1024 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    name: String,
    description: String,
    #[serde(rename = "type")]
    kind: String,
    created: String,
    updated: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decay: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    important: bool,
    /// Every top-level key in file order.
    order: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    extra: Vec<(String, Value)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<(usize, String)>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    /// The memdir version that wrote the cache; another version's cache is ignored.
    version: String,
    /// File name, content key, frontmatter; in the store's scan order, so that an
    /// unchanged store is matched position by position without hashing lookups.
    entries: Vec<(String, String, Entry)>,
}

/// The parse cache of one load.
#[derive(Debug, Default)]
pub struct Cache {
    entries: Vec<(String, String, Option<Entry>)>,
    /// Content key → position, built only when a lookup by position fails.
    by_key: Option<HashMap<String, usize>>,
    changed: bool,
    enabled: bool,
}

/// What a load saves into the cache for one file.
pub struct Item<'a> {
    pub name: &'a str,
    pub key: &'a str,
    pub meta: &'a Meta,
    pub warnings: &'a [Warning],
}

/// Hex SHA-256 of a file's bytes: the cache key.
pub fn content_key(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(bytes))
}

impl Cache {
    /// Loads the cache of a store (empty, and never written, in the `none` mode).
    pub fn load(backend: &Backend) -> Cache {
        if matches!(backend, Backend::Mem(_)) {
            return Cache::default();
        }
        let entries = backend
            .read(CACHE_FILE, MAX_CACHE_BYTES)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<File>(&b).ok())
            .filter(|f| f.version == env!("CARGO_PKG_VERSION"))
            .map(|f| {
                f.entries
                    .into_iter()
                    .map(|(n, k, e)| (n, k, Some(e)))
                    .collect()
            })
            .unwrap_or_default();
        Cache {
            entries,
            enabled: true,
            ..Cache::default()
        }
    }

    /// The cached frontmatter of the file at position `pos` of the scan, with this
    /// name and content key.
    pub fn get(&mut self, pos: usize, name: &str, key: &str) -> Option<(Meta, Vec<Warning>)> {
        let at = match self.entries.get(pos) {
            Some((n, k, Some(_))) if n == name && k == key => pos,
            _ => {
                // Files added, removed or unreadable shift positions; fall back to the key.
                let entries = &self.entries;
                let by_key = self.by_key.get_or_insert_with(|| {
                    entries
                        .iter()
                        .enumerate()
                        .map(|(i, (_, k, _))| (k.clone(), i))
                        .collect()
                });
                *by_key.get(key)?
            }
        };
        let out = self.entries[at].2.take()?.into_meta();
        if out.is_none() {
            self.changed = true;
        }
        out
    }

    /// Notes a file that was not in the cache (the cache will be written back).
    pub fn miss(&mut self) {
        self.changed = true;
    }

    /// Whether [`Cache::save`] would write: something was missed, moved or is gone.
    pub fn needs_save(&self) -> bool {
        self.enabled && (self.changed || self.entries.iter().any(|(_, _, e)| e.is_some()))
    }

    /// Writes the cache for exactly these files when it changed. Failures are ignored
    /// (a read-only directory simply has no cache).
    pub fn save<'a>(self, backend: &Backend, items: impl Iterator<Item = Item<'a>>) {
        if !self.needs_save() {
            return;
        }
        let file = File {
            version: env!("CARGO_PKG_VERSION").to_string(),
            entries: items
                .map(|i| {
                    (
                        i.name.to_string(),
                        i.key.to_string(),
                        Entry::from_meta(i.meta, i.warnings),
                    )
                })
                .collect(),
        };
        if let Ok(bytes) = serde_json::to_vec(&file) {
            let _ = backend.write_atomic(CACHE_FILE, &bytes);
        }
    }
}

impl Entry {
    fn from_meta(m: &Meta, warnings: &[Warning]) -> Entry {
        Entry {
            name: m.name.clone(),
            description: m.description.clone(),
            kind: m.kind.as_str().to_string(),
            created: m.created.text.clone(),
            updated: m.updated.text.clone(),
            source: m.source.clone(),
            decay: m.decay.map(|d| d.to_string()),
            tags: m.tags.clone(),
            important: m.important,
            order: m.extra.order().to_vec(),
            extra: m
                .extra
                .values()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            warnings: warnings
                .iter()
                .map(|w| (w.line, w.message.clone()))
                .collect(),
        }
    }

    /// `None` when the entry does not describe a valid memory (a corrupt cache).
    fn into_meta(self) -> Option<(Meta, Vec<Warning>)> {
        let decay = match &self.decay {
            None => None,
            Some(d) => Some(Decay::parse(d)?),
        };
        let meta = Meta {
            created: Stamp::parse(&self.created)?,
            updated: Stamp::parse(&self.updated)?,
            name: self.name,
            description: self.description,
            kind: Kind::parse(&self.kind),
            source: self.source,
            decay,
            tags: self.tags,
            important: self.important,
            extra: Extra::from_values(self.order, self.extra),
        };
        let warnings = self
            .warnings
            .into_iter()
            .map(|(line, message)| Warning { line, message })
            .collect();
        Some((meta, warnings))
    }
}
