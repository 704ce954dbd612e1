//! The parse cache: parsed frontmatter of memory files, keyed by the SHA-256 of the
//! file's bytes, in `.memdir/cache/frontmatter-v1.bin`.
//!
//! Loading a store reads every file anyway (the body is needed), so keying by content
//! hash costs one hash per file and catches every edit, including one that keeps the
//! size and the modification time. What it saves is the YAML parse, by far the largest
//! part of loading. The cache is an optimization only: a missing, unreadable,
//! corrupt or foreign-version cache is ignored and rebuilt, and deleting it at any time
//! loses nothing. Writes are atomic and need no lock (a lost race only costs misses).

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::memory::frontmatter::{Extra, Warning};
use crate::memory::layout::PARSE_CACHE_FILE;
use crate::memory::{Decay, Kind, Meta, Stamp};
use crate::store::Backend;

/// Where the cache lives, relative to the memory directory.
/// Largest cache file read (a corrupt or hostile one is ignored past this).
const MAX_CACHE_BYTES: u64 = 512 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    name: String,
    description: String,
    kind: String,
    created: String,
    updated: String,
    source: Option<String>,
    decay: Option<String>,
    tags: Vec<String>,
    important: bool,
    /// Every top-level key in file order.
    order: Vec<String>,
    extra: Vec<(String, Value)>,
    warnings: Vec<(usize, String)>,
}

#[derive(Debug, Default, PartialEq)]
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
            .read(PARSE_CACHE_FILE, MAX_CACHE_BYTES)
            .ok()
            .flatten()
            .and_then(|b| File::decode(&b))
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
            // The encoding has no `supersedes` / `valid_until` yet: a memory that has
            // them is parsed on every load instead of being read back without them.
            entries: items
                .filter(|i| i.meta.supersedes.is_empty() && i.meta.valid_until.is_none())
                .map(|i| {
                    (
                        i.name.to_string(),
                        i.key.to_string(),
                        Entry::from_meta(i.meta, i.warnings),
                    )
                })
                .collect(),
        };
        let _ = backend.write_atomic(PARSE_CACHE_FILE, &file.encode());
    }
}

/// Magic bytes of the cache format.
const MAGIC: &[u8; 4] = b"MDC1";

/// Length-prefixed little-endian encoding; every read is bounds-checked and a bad
/// file decodes to `None` (and is then ignored and rewritten).
struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt(&mut self, s: &Option<String>) {
        match s {
            None => self.0.push(0),
            Some(s) => {
                self.0.push(1);
                self.str(s);
            }
        }
    }
    fn strs(&mut self, v: &[String]) {
        self.u64(v.len() as u64);
        for s in v {
            self.str(s);
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn str(&mut self) -> Option<String> {
        let n = usize::try_from(self.u64()?).ok()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    fn opt(&mut self) -> Option<Option<String>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }
    /// A count, bounded by what the remaining bytes could hold (8 bytes at least each).
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.0.len() / 8).then_some(n)
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        (0..self.count()?).map(|_| self.str()).collect()
    }
}

impl File {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.0.extend_from_slice(MAGIC);
        w.str(&self.version);
        w.u64(self.entries.len() as u64);
        for (name, key, e) in &self.entries {
            w.str(name);
            w.str(key);
            w.str(&e.name);
            w.str(&e.description);
            w.str(&e.kind);
            w.str(&e.created);
            w.str(&e.updated);
            w.opt(&e.source);
            w.opt(&e.decay);
            w.strs(&e.tags);
            w.0.push(u8::from(e.important));
            w.strs(&e.order);
            w.u64(e.extra.len() as u64);
            for (k, v) in &e.extra {
                w.str(k);
                w.str(&v.to_string());
            }
            w.u64(e.warnings.len() as u64);
            for (line, msg) in &e.warnings {
                w.u64(*line as u64);
                w.str(msg);
            }
        }
        w.0
    }

    fn decode(bytes: &[u8]) -> Option<File> {
        let mut r = Reader(bytes.strip_prefix(MAGIC)?);
        let version = r.str()?;
        if version != env!("CARGO_PKG_VERSION") {
            return None;
        }
        let n = r.count()?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.str()?;
            let key = r.str()?;
            let e = Entry {
                name: r.str()?,
                description: r.str()?,
                kind: r.str()?,
                created: r.str()?,
                updated: r.str()?,
                source: r.opt()?,
                decay: r.opt()?,
                tags: r.strs()?,
                important: match r.byte()? {
                    0 => false,
                    1 => true,
                    _ => return None,
                },
                order: r.strs()?,
                extra: (0..r.count()?)
                    .map(|_| Some((r.str()?, serde_json::from_str(&r.str()?).ok()?)))
                    .collect::<Option<_>>()?,
                warnings: (0..r.count()?)
                    .map(|_| Some((usize::try_from(r.u64()?).ok()?, r.str()?)))
                    .collect::<Option<_>>()?,
            };
            entries.push((name, key, e));
        }
        r.0.is_empty().then_some(File { version, entries })
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
            // Not in the cache's encoding yet: memories that have them are not cached
            // (see `save`).
            supersedes: Vec::new(),
            valid_until: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> Entry {
        Entry {
            name: format!("name {i} ünï"),
            description: "d".into(),
            kind: "user".into(),
            created: "2026-01-01".into(),
            updated: "2026-01-02T10:00:00Z".into(),
            source: i.is_multiple_of(2).then(|| "chat".into()),
            decay: Some("30d".into()),
            tags: vec!["a".into(), "b".into()],
            important: i.is_multiple_of(3),
            order: vec!["name".into(), "owner".into()],
            extra: vec![("owner".into(), serde_json::json!({"team": [1, "x"]}))],
            warnings: vec![(4, "unknown type".into())],
        }
    }

    #[test]
    fn the_format_round_trips_and_rejects_damage() {
        let f = File {
            version: env!("CARGO_PKG_VERSION").into(),
            entries: (0..5)
                .map(|i| (format!("k{i}.md"), format!("{i:064}"), entry(i)))
                .collect(),
        };
        let bytes = f.encode();
        assert_eq!(File::decode(&bytes), Some(f));
        // Any truncation, a foreign version, a huge count: ignored, never a panic.
        for cut in (0..bytes.len()).step_by(7) {
            assert_eq!(File::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut other = bytes.clone();
        other[12] ^= 0x20; // the first byte of the version string
        assert_eq!(File::decode(&other), None);
        let mut w = Writer(MAGIC.to_vec());
        w.str(env!("CARGO_PKG_VERSION"));
        w.u64(u64::MAX);
        assert_eq!(File::decode(&w.0), None);
    }
}
