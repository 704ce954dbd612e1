//! The search index: for every memory file, its [`Stat`], content hash, text, parsed
//! frontmatter and term data ([`DocData`]), in `.memdir/cache/index-v2.bin` plus a
//! delta file of what changed since (spec/architecture.md#search-index).
//!
//! A file whose stat (size, modification and change times in nanoseconds, inode) is
//! what it was when it was last read, and which had not changed for [`RACY_NS`] before
//! that read, is taken from the index without being opened. Any other file is read and
//! hashed; when the hash is the one recorded, the parse and the term data are reused.
//! The margin is git's rule for racily clean entries made safe for any timestamp
//! granularity: an edit made after a read always moves the file's times past the
//! ones recorded, unless the recorded times were less than the margin before the
//! read, and those entries are never trusted by stat alone.
//!
//! The index is derived data: a missing, unreadable, corrupt or foreign-version file is
//! ignored and rebuilt, and deleting it at any time loses nothing. Writes are atomic
//! and need no lock: a lost race costs only reads. After a change, only the changed
//! entries are written, to the delta file; the delta is folded into the main file when
//! it grows past a share of it.

use foldhash::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::memory::frontmatter::{Extra, Warning};
use crate::memory::layout::{
    LEGACY_PARSE_CACHE, MAX_SEARCH_INDEX, SEARCH_DELTA_FILE, SEARCH_INDEX_FILE,
};
use crate::memory::{Decay, Kind, Meta, Stamp};
use crate::retrieval::search::{DocData, Vocab};
use crate::store::{Backend, Stat};

/// A file whose modification or change time is less than this before the moment it
/// was read is read again next time, whatever its stat says (two seconds: the
/// coarsest timestamp granularity of common file systems).
pub const RACY_NS: i64 = 2_000_000_000;

/// The delta is folded into the main file when it holds more than this share of
/// the entries (or more than [`FOLD_MIN`] when the store is small).
const FOLD_SHARE: usize = 8;
const FOLD_MIN: usize = 256;

/// Parsed frontmatter as saved.
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
    supersedes: Vec<String>,
    valid_until: Option<String>,
    /// Every top-level key in file order.
    order: Vec<String>,
    extra: Vec<(String, Value)>,
    warnings: Vec<(usize, String)>,
}

/// One memory file as saved.
#[derive(Debug, Clone, PartialEq)]
struct Saved {
    file: String,
    stat: Stat,
    /// Wall-clock time (ns) taken before the stat that went with the last read.
    checked: i64,
    key: String,
    text: String,
    meta: Entry,
    data: Option<DocData>,
    /// Whether the file holds term data for it (decoded into `data` only when the
    /// load asked for terms).
    has_data: bool,
}

/// One index file: the main file (`base` 0) or a delta on the main file of
/// generation `base`.
#[derive(Debug, Default, PartialEq)]
struct IndexFile {
    version: String,
    generation: u64,
    base: u64,
    /// Terms from id `vocab_start` on (0 in the main file: the whole vocabulary).
    vocab_start: u32,
    terms: Vec<String>,
    entries: Vec<Saved>,
    /// Files removed since the main file (delta only).
    removed: Vec<String>,
}

/// A file found in the index.
pub struct Hit {
    pub key: String,
    pub text: String,
    pub meta: Meta,
    pub warnings: Vec<Warning>,
    pub data: Option<DocData>,
    /// When it was last read (wall clock, ns).
    pub checked: i64,
}

/// What a load saves into the index for one file.
pub struct Item<'a> {
    pub file: &'a str,
    pub stat: Option<Stat>,
    pub checked: i64,
    pub key: &'a str,
    /// The file's text: these parts joined.
    pub text: [&'a str; 3],
    pub meta: &'a Meta,
    pub warnings: &'a [Warning],
    pub data: Option<&'a DocData>,
}

/// A file's saved entry, taken by [`Cache::by_stat`]: turned into a [`Hit`] on
/// whatever thread needs it.
pub struct Vouched(Saved);

impl Vouched {
    /// The entry as a hit; `None` when its metadata no longer parses (the file is
    /// then read).
    pub fn hit(self) -> Option<Hit> {
        self.0.into_hit()
    }
}

/// What the load said of one file, kept after its payload is handed out.
#[derive(Debug, Clone)]
struct Loaded {
    stat: Stat,
    checked: i64,
    key: String,
    has_data: bool,
    in_main: bool,
    in_delta: bool,
}

impl Loaded {
    /// A file the delta records as removed from the main file.
    fn is_removal(&self) -> bool {
        self.in_delta && self.key.is_empty()
    }

    /// Whether `it` is this file as loaded (its data too, when it has any).
    fn same(&self, it: &Item<'_>) -> bool {
        it.stat == Some(self.stat)
            && self.checked == it.checked
            && self.key == it.key
            && (it.data.is_none() || self.has_data)
    }
}

/// The search index of one load.
#[derive(Debug, Default)]
pub struct Cache {
    saved: Vec<Option<Saved>>,
    by_file: HashMap<String, usize>,
    loaded: HashMap<String, Loaded>,
    /// Content key → position, built only when a lookup by file fails.
    by_key: Option<HashMap<String, usize>>,
    vocab: Vocab,
    main_vocab_len: usize,
    loaded_vocab_len: usize,
    generation: u64,
    /// Entries and removals the delta file held as loaded.
    delta_files: usize,
    /// Bytes of the main file and of the delta as loaded.
    pub main_bytes: u64,
    pub delta_bytes: u64,
    enabled: bool,
    /// Whether the term data was decoded (a new main file is written only then, so
    /// that data left undecoded is never dropped from it).
    terms: bool,
}

/// Hex SHA-256 of a file's bytes: the content key.
pub fn content_key(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(bytes))
}

fn new_generation(old: u64) -> u64 {
    let t = std::time::SystemTime::now()
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
    /// Loads the index of a store (empty, and never written, in memory); the term
    /// data only with `terms` (a load that does not rank by a query skips it).
    pub fn load(backend: &Backend, terms: bool) -> Cache {
        if matches!(backend, Backend::Mem(_)) {
            return Cache::default();
        }
        let mut cache = Cache {
            enabled: true,
            terms,
            ..Cache::default()
        };
        let read = |rel: &str| {
            backend
                .read(rel, MAX_SEARCH_INDEX)
                .ok()
                .flatten()
                .map(|b| (b.len() as u64, IndexFile::decode_with(&b, terms)))
        };
        let Some((bytes, Some(main))) = read(SEARCH_INDEX_FILE) else {
            return cache;
        };
        if main.base != 0 || main.vocab_start != 0 {
            return cache;
        }
        let Some(vocab) = Vocab::from_terms(main.terms) else {
            return cache;
        };
        cache.main_bytes = bytes;
        cache.generation = main.generation;
        cache.main_vocab_len = vocab.len();
        cache.vocab = vocab;
        let mut delta = read(SEARCH_DELTA_FILE).and_then(|(dbytes, d)| {
            let d = d?;
            if d.base != main.generation || d.vocab_start as usize != cache.vocab.len() {
                return None;
            }
            // The delta's terms are all new, and new once each.
            let mut seen = std::collections::HashSet::with_capacity(d.terms.len());
            d.terms
                .iter()
                .all(|t| cache.vocab.get(t).is_none() && seen.insert(t.as_str()))
                .then_some((dbytes, d))
        });
        if let Some((dbytes, d)) = &mut delta {
            for t in &d.terms {
                cache.vocab.intern(t);
            }
            cache.delta_bytes = *dbytes;
            cache.delta_files = d.entries.len() + d.removed.len();
        }
        cache.loaded_vocab_len = cache.vocab.len();
        let (delta_entries, removed) =
            delta.map_or((Vec::new(), Vec::new()), |(_, d)| (d.entries, d.removed));
        let total = main.entries.len() + delta_entries.len();
        cache.saved.reserve(total);
        cache.by_file.reserve(total);
        cache.loaded.reserve(total);
        for (in_delta, e) in main
            .entries
            .into_iter()
            .map(|e| (false, e))
            .chain(delta_entries.into_iter().map(|e| (true, e)))
        {
            // An entry of the delta replaces the main file's entry for its file.
            let in_main = match cache.by_file.get(&e.file) {
                Some(&i) if in_delta => {
                    cache.saved[i] = None;
                    true
                }
                _ => !in_delta,
            };
            cache.add(e, in_main, in_delta);
        }
        for f in removed {
            // Removed from the main file (a file the delta also holds stays).
            if cache.loaded.get(&f).is_some_and(|l| !l.in_delta)
                && let Some(i) = cache.by_file.remove(&f)
            {
                cache.saved[i] = None;
                cache.loaded.insert(
                    f,
                    Loaded {
                        stat: Stat::default(),
                        checked: 0,
                        key: String::new(),
                        has_data: false,
                        in_main: true,
                        in_delta: true,
                    },
                );
            }
        }
        cache
    }

    /// Adds one loaded entry (its term data checked against its file's vocabulary
    /// when decoded: the loaded vocabulary extends it).
    fn add(&mut self, e: Saved, in_main: bool, in_delta: bool) {
        self.loaded.insert(
            e.file.clone(),
            Loaded {
                stat: e.stat,
                checked: e.checked,
                key: e.key.clone(),
                has_data: e.has_data,
                in_main,
                in_delta,
            },
        );
        self.by_file.insert(e.file.clone(), self.saved.len());
        self.saved.push(Some(e));
    }

    /// The vocabulary the saved term data uses; new data interns into it.
    pub fn take_vocab(&mut self) -> Vocab {
        std::mem::take(&mut self.vocab)
    }

    /// Size of the index files as loaded, in bytes.
    pub fn bytes(&self) -> u64 {
        self.main_bytes + self.delta_bytes
    }

    /// Whether the index holds a file whose stat alone vouches for it.
    pub fn trusted(&self, file: &str, stat: &Stat) -> bool {
        self.loaded.get(file).is_some_and(|e| {
            !e.key.is_empty() && e.stat == *stat && e.stat.changed_ns() < e.checked - RACY_NS
        })
    }

    /// The file as saved, when its stat vouches for it ([`Cache::trusted`]).
    pub fn by_stat(&mut self, file: &str, stat: &Stat) -> Option<Vouched> {
        if !self.trusted(file, stat) {
            return None;
        }
        let i = *self.by_file.get(file)?;
        self.saved[i].take().map(Vouched)
    }

    /// The parse and term data saved for this content, read under the name `file`
    /// (or under another name: a renamed file).
    pub fn by_content(&mut self, file: &str, key: &str) -> Option<Hit> {
        let at = match self.by_file.get(file) {
            Some(&i) if self.saved[i].as_ref().is_some_and(|e| e.key == key) => i,
            _ => {
                let saved = &self.saved;
                let by_key = self.by_key.get_or_insert_with(|| {
                    saved
                        .iter()
                        .enumerate()
                        .filter_map(|(i, e)| e.as_ref().map(|e| (e.key.clone(), i)))
                        .collect()
                });
                *by_key.get(key)?
            }
        };
        self.saved[at].as_ref()?.clone().into_hit()
    }

    /// Whether an item is what the load found for its file.
    fn same(&self, it: &Item<'_>) -> bool {
        self.loaded.get(it.file).is_some_and(|e| e.same(it))
    }

    /// Whether `items` (distinct files) are exactly what was loaded: none changed,
    /// none added, none of the loaded files gone. One lookup per item, no set of
    /// names: the usual case of a read, decided before anything else is built.
    fn unchanged(&self, items: &[Item<'_>]) -> bool {
        let mut live_hits = 0usize;
        for it in items {
            match self.loaded.get(it.file) {
                Some(e) if e.same(it) => live_hits += usize::from(!e.is_removal()),
                _ => return false,
            }
        }
        // Every loaded file that is not a recorded removal is among the items.
        live_hits == self.loaded.values().filter(|e| !e.is_removal()).count()
    }

    /// Saves the index for the files of this load (`items`, in scan order) when
    /// anything differs from what was loaded: what differs from the main file goes
    /// to the delta file, unless the delta would grow past its share; then
    /// everything goes to a new main file. `vocab` is the vocabulary the items' data
    /// uses (this cache's, grown). Failures are ignored: the index is only an
    /// optimization.
    ///
    /// Returns the size of the index files afterwards (0 in memory).
    pub fn save(&self, backend: &Backend, vocab: &Vocab, items: &[Item<'_>]) -> u64 {
        if !self.enabled {
            return 0;
        }
        if vocab.len() == self.loaded_vocab_len && self.unchanged(items) {
            return self.bytes();
        }
        let present: std::collections::HashSet<&str> = items.iter().map(|i| i.file).collect();
        let changed = items.iter().filter(|it| !self.same(it)).count();
        let removed: Vec<String> = self
            .loaded
            .iter()
            .filter(|(f, e)| e.in_main && !present.contains(f.as_str()))
            .map(|(f, _)| f.clone())
            .collect();
        let newly_removed = self
            .loaded
            .iter()
            // A file the loaded delta already records as removed is not news.
            .filter(|(f, e)| !(present.contains(f.as_str()) || e.is_removal()))
            .count();
        if changed == 0 && newly_removed == 0 && vocab.len() == self.loaded_vocab_len {
            return self.bytes();
        }
        let version = env!("CARGO_PKG_VERSION").to_string();
        let delta_size = self.delta_files + changed + newly_removed;
        if self.main_bytes > 0
            && vocab.len() >= self.main_vocab_len
            && (!self.terms || delta_size <= (items.len() / FOLD_SHARE).max(FOLD_MIN))
        {
            // Everything that differs from the main file: what the delta held (still
            // true unless changed again) and what changed now.
            let entries: Vec<Saved> = items
                .iter()
                .filter(|it| !self.same(it) || self.loaded.get(it.file).is_none_or(|e| e.in_delta))
                .filter_map(Saved::of)
                .collect();
            let mut removed = removed;
            removed.sort();
            let f = IndexFile {
                version,
                generation: self.generation,
                base: self.generation,
                vocab_start: self.main_vocab_len as u32,
                terms: vocab.terms()[self.main_vocab_len..].to_vec(),
                entries,
                removed,
            };
            let bytes = f.encode();
            return match backend.write_atomic(SEARCH_DELTA_FILE, &bytes) {
                Ok(()) => self.main_bytes + bytes.len() as u64,
                Err(_) => self.bytes(),
            };
        }
        // Streamed: a few chunks at a time are encoded (on every core) straight from
        // the items and written, so the file is never held whole, nor the entries
        // copied.
        let kept: Vec<&Item<'_>> = items.iter().filter(|it| it.stat.is_some()).collect();
        let chunks: Vec<&[&Item<'_>]> = kept.chunks(CHUNK).collect();
        let head = encode_head(
            &version,
            new_generation(self.generation),
            (0, 0),
            vocab.terms(),
            &[],
            chunks.len(),
        );
        let mut size = head.len();
        let written = backend.write_atomic_with(SEARCH_INDEX_FILE, |w| {
            w.write_all(&head)?;
            for window in chunks.chunks(WRITE_WINDOW) {
                for part in super::par_map(window, 2, |chunk| encode_chunk(chunk)) {
                    w.write_all(&part)?;
                    size += part.len();
                }
            }
            Ok(())
        });
        if written.is_ok() {
            let _ = backend.remove(SEARCH_DELTA_FILE);
            if backend.is_file(LEGACY_PARSE_CACHE) {
                let _ = backend.remove(LEGACY_PARSE_CACHE);
            }
            return size as u64;
        }
        self.bytes()
    }
}

/// Chunks encoded at a time when a main file is written.
const WRITE_WINDOW: usize = 8;

/// The header of an index file: everything before the chunks.
fn encode_head(
    version: &str,
    generation: u64,
    (base, vocab_start): (u64, u32),
    terms: &[String],
    removed: &[String],
    chunks: usize,
) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    w.0.extend_from_slice(MAGIC);
    w.str(version);
    w.u64(generation);
    w.u64(base);
    w.u32(vocab_start);
    w.strs(terms);
    w.strs(removed);
    w.u64(chunks as u64);
    w.0
}

/// One chunk of entries, prefixed by its length in bytes.
fn encode_chunk<E: EncodeEntry>(entries: &[E]) -> Vec<u8> {
    // Room for the length, filled in once known.
    let mut c = Writer(vec![0; 8]);
    c.u64(entries.len() as u64);
    for e in entries {
        e.encode_entry(&mut c);
    }
    let len = (c.0.len() - 8) as u64;
    c.0[..8].copy_from_slice(&len.to_le_bytes());
    c.0
}

/// What can be written as one entry of an index file: a saved entry, or a file of a
/// load (the same bytes as its [`Saved::of`]).
trait EncodeEntry {
    fn encode_entry(&self, w: &mut Writer);
}

impl EncodeEntry for Saved {
    fn encode_entry(&self, w: &mut Writer) {
        self.encode(w);
    }
}

impl EncodeEntry for &Item<'_> {
    fn encode_entry(&self, w: &mut Writer) {
        let stat = self.stat.unwrap_or_default();
        w.str(self.file);
        encode_stat(w, &stat, self.checked);
        w.str(self.key);
        // The text in its parts, as one string.
        w.u64(self.text.iter().map(|p| p.len()).sum::<usize>() as u64);
        for p in self.text {
            w.0.extend_from_slice(p.as_bytes());
        }
        Entry::from_meta(self.meta, self.warnings).encode(w);
        encode_opt_data(w, self.data);
    }
}

fn encode_stat(w: &mut Writer, stat: &Stat, checked: i64) {
    w.u64(stat.size);
    w.u64(stat.mtime_ns as u64);
    w.u64(stat.ctime_ns as u64);
    w.u64(stat.ino);
    w.u64(checked as u64);
}

fn encode_opt_data(w: &mut Writer, data: Option<&DocData>) {
    match data {
        None => w.0.push(0),
        Some(d) => {
            w.0.push(1);
            encode_data(w, d);
        }
    }
}

impl Saved {
    /// `None` for a file without a stat (nothing to vouch for it later).
    fn of(it: &Item<'_>) -> Option<Saved> {
        Some(Saved {
            file: it.file.to_string(),
            stat: it.stat?,
            checked: it.checked,
            key: it.key.to_string(),
            text: it.text.concat(),
            meta: Entry::from_meta(it.meta, it.warnings),
            data: it.data.cloned(),
            has_data: it.data.is_some(),
        })
    }

    fn into_hit(self) -> Option<Hit> {
        let (meta, warnings) = self.meta.into_meta()?;
        Some(Hit {
            key: self.key,
            text: self.text,
            meta,
            warnings,
            data: self.data,
            checked: self.checked,
        })
    }
}

const MAGIC: &[u8; 4] = b"MDX4";

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn u32(&mut self, n: u32) {
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
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
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
    /// A count of items of at least `size` bytes each (bounded by what is left).
    fn count_of(&mut self, size: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.0.len() / size.max(1)).then_some(n)
    }
    fn count(&mut self) -> Option<usize> {
        self.count_of(8)
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        (0..self.count()?).map(|_| self.str()).collect()
    }
    fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.count_of(4)?;
        let b = self.take(n * 4)?;
        Some(
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect(),
        )
    }
}

impl Entry {
    fn encode(&self, w: &mut Writer) {
        w.str(&self.name);
        w.str(&self.description);
        w.str(&self.kind);
        w.str(&self.created);
        w.str(&self.updated);
        w.opt(&self.source);
        w.opt(&self.decay);
        w.strs(&self.tags);
        w.0.push(u8::from(self.important));
        w.strs(&self.supersedes);
        w.opt(&self.valid_until);
        w.strs(&self.order);
        w.u64(self.extra.len() as u64);
        for (k, v) in &self.extra {
            w.str(k);
            w.str(&v.to_string());
        }
        w.u64(self.warnings.len() as u64);
        for (line, msg) in &self.warnings {
            w.u64(*line as u64);
            w.str(msg);
        }
    }

    fn decode(r: &mut Reader<'_>) -> Option<Entry> {
        Some(Entry {
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
            supersedes: r.strs()?,
            valid_until: r.opt()?,
            order: r.strs()?,
            extra: (0..r.count()?)
                .map(|_| Some((r.str()?, serde_json::from_str(&r.str()?).ok()?)))
                .collect::<Option<_>>()?,
            warnings: (0..r.count()?)
                .map(|_| Some((usize::try_from(r.u64()?).ok()?, r.str()?)))
                .collect::<Option<_>>()?,
        })
    }

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
            supersedes: m.supersedes.clone(),
            valid_until: m.valid_until.clone(),
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
            supersedes: self.supersedes,
            valid_until: self.valid_until,
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

fn encode_data(w: &mut Writer, d: &DocData) {
    w.u64(d.tf.len() as u64);
    for &(t, f) in &d.tf {
        w.u32(t);
        w.0.extend_from_slice(&f.to_le_bytes());
    }
    w.0.extend_from_slice(&d.len.to_le_bytes());
    w.u64(d.tokens.len() as u64);
    for &t in &d.tokens {
        w.u32(t);
    }
    w.u64(d.lines.len() as u64);
    for &(end, label, tag) in &d.lines {
        w.u32(end);
        w.u32(label);
        w.u32(tag);
    }
    w.u64(d.line_df.len() as u64);
    for &(t, n) in &d.line_df {
        w.u32(t);
        w.u32(n);
    }
    w.u32(d.n_lines);
}

/// Skips the term data of an entry, checking only that it is all there.
fn skip_data(r: &mut Reader<'_>) -> Option<()> {
    let n = r.count_of(12)?;
    r.take(n * 12)?;
    r.take(8)?;
    let n = r.count_of(4)?;
    r.take(n * 4)?;
    let n = r.count_of(12)?;
    r.take(n * 12)?;
    let n = r.count_of(8)?;
    r.take(n * 8)?;
    r.take(4)?;
    Some(())
}

fn decode_data(r: &mut Reader<'_>) -> Option<DocData> {
    let n = r.count_of(12)?;
    let mut tf = Vec::with_capacity(n);
    for _ in 0..n {
        let t = r.u32()?;
        let f = f64::from_le_bytes(r.take(8)?.try_into().ok()?);
        tf.push((t, f));
    }
    let len = f64::from_le_bytes(r.take(8)?.try_into().ok()?);
    let tokens = r.u32s()?;
    let n = r.count_of(12)?;
    let mut lines = Vec::with_capacity(n);
    for _ in 0..n {
        lines.push((r.u32()?, r.u32()?, r.u32()?));
    }
    let n = r.count_of(8)?;
    let mut line_df = Vec::with_capacity(n);
    for _ in 0..n {
        line_df.push((r.u32()?, r.u32()?));
    }
    Some(DocData {
        tf,
        len,
        tokens,
        lines,
        line_df,
        n_lines: r.u32()?,
    })
}

/// Entries per chunk of an index file.
const CHUNK: usize = 512;

impl Saved {
    fn encode(&self, w: &mut Writer) {
        w.str(&self.file);
        encode_stat(w, &self.stat, self.checked);
        w.str(&self.key);
        w.str(&self.text);
        self.meta.encode(w);
        encode_opt_data(w, self.data.as_ref());
    }

    /// Decodes an entry; its term data only given the size of the vocabulary it
    /// may use (data that uses more, or is malformed, is dropped: read again).
    fn decode(r: &mut Reader<'_>, terms: Option<usize>) -> Option<Saved> {
        let file = r.str()?;
        let stat = Stat {
            size: r.u64()?,
            mtime_ns: r.i64()?,
            ctime_ns: r.i64()?,
            ino: r.u64()?,
        };
        let checked = r.i64()?;
        let key = r.str()?;
        let text = r.str()?;
        let meta = Entry::decode(r)?;
        let (data, has_data) = match r.byte()? {
            0 => (None, false),
            1 if let Some(n) = terms => {
                let d = decode_data(r)?;
                if d.is_valid(n) {
                    (Some(d), true)
                } else {
                    (None, false)
                }
            }
            1 => {
                skip_data(r)?;
                (None, true)
            }
            _ => return None,
        };
        Some(Saved {
            file,
            stat,
            checked,
            key,
            text,
            meta,
            data,
            has_data,
        })
    }
}

/// Decodes chunks of entries, on as many threads as there are cores (up to 8).
fn decode_chunks(chunks: &[&[u8]], with_terms: Option<usize>) -> Option<Vec<Saved>> {
    let one = |c: &[u8]| -> Option<Vec<Saved>> {
        let mut r = Reader(c);
        let n = r.count_of(1)?;
        // Bounded by the chunk's bytes (one byte per entry at least).
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(Saved::decode(&mut r, with_terms)?);
        }
        r.0.is_empty().then_some(out)
    };
    let parts: Vec<Vec<Saved>> = super::par_map(chunks, 2, |c| one(c))
        .into_iter()
        .collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        out.extend(p);
    }
    Some(out)
}

impl IndexFile {
    fn encode(&self) -> Vec<u8> {
        self.encode_parts().concat()
    }

    /// The encoded file in parts that, written one after the other, are the file:
    /// the header, then each chunk of entries prefixed by its length in bytes (so
    /// that chunks can be decoded on several threads; they are encoded on several).
    fn encode_parts(&self) -> Vec<Vec<u8>> {
        let chunks: Vec<&[Saved]> = self.entries.chunks(CHUNK).collect();
        let head = encode_head(
            &self.version,
            self.generation,
            (self.base, self.vocab_start),
            &self.terms,
            &self.removed,
            chunks.len(),
        );
        let mut parts = vec![head];
        parts.extend(super::par_map(&chunks, 2, |chunk| encode_chunk(chunk)));
        parts
    }

    #[cfg(test)]
    fn decode(bytes: &[u8]) -> Option<IndexFile> {
        IndexFile::decode_with(bytes, true)
    }

    /// Decodes an index file; the term data only with `terms` (it is skipped, and
    /// the entry says it has some, otherwise).
    fn decode_with(bytes: &[u8], with_terms: bool) -> Option<IndexFile> {
        let mut r = Reader(bytes.strip_prefix(MAGIC)?);
        let version = r.str()?;
        if version != env!("CARGO_PKG_VERSION") {
            return None;
        }
        let generation = r.u64()?;
        let base = r.u64()?;
        let vocab_start = r.u32()?;
        let terms = r.strs()?;
        let removed = r.strs()?;
        let mut chunks: Vec<&[u8]> = Vec::new();
        for _ in 0..r.count()? {
            let n = usize::try_from(r.u64()?).ok()?;
            chunks.push(r.take(n)?);
        }
        let vocab = with_terms.then(|| vocab_start as usize + terms.len());
        let entries = decode_chunks(&chunks, vocab)?;
        r.0.is_empty().then_some(IndexFile {
            version,
            generation,
            base,
            vocab_start,
            terms,
            entries,
            removed,
        })
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
            supersedes: vec!["older".into()],
            valid_until: i.is_multiple_of(2).then(|| "2026-12-31".into()),
            order: vec!["name".into(), "owner".into()],
            extra: vec![("owner".into(), serde_json::json!({"team": [1, "x"]}))],
            warnings: vec![(4, "unknown type".into())],
        }
    }

    /// Term data small enough to write out.
    fn data() -> DocData {
        DocData {
            tf: vec![(0, 3.0), (1, 1.5)],
            len: 4.5,
            tokens: vec![1, 0, 1],
            lines: vec![(2, 1, 0), (2, 0, 0), (3, 0, 1)],
            line_df: vec![(0, 1), (1, 2)],
            n_lines: 2,
        }
    }

    #[test]
    fn entries_encoded_from_items_are_those_of_their_saved_copies() {
        // A main file is streamed from the items; it must be the file their
        // `Saved` copies encode to, byte for byte.
        let metas: Vec<(Meta, Vec<Warning>)> =
            (0..1100).map(|i| entry(i).into_meta().unwrap()).collect();
        let data = data();
        let names: Vec<(String, String)> = (0..metas.len())
            .map(|i| (format!("k{i}.md"), format!("{i:064}")))
            .collect();
        let items: Vec<Item<'_>> = metas
            .iter()
            .zip(&names)
            .enumerate()
            .map(|(i, ((meta, warnings), (file, key)))| Item {
                file,
                stat: (i % 7 != 3).then_some(Stat {
                    size: i as u64,
                    mtime_ns: -1,
                    ctime_ns: 1 << 60,
                    ino: 9,
                }),
                checked: 12,
                key,
                text: [
                    "---\nx\n---\n",
                    "body ünï",
                    if i % 2 == 0 { "\n" } else { "" },
                ],
                meta,
                warnings,
                data: (i % 3 != 0).then_some(&data),
            })
            .collect();
        let kept: Vec<&Item<'_>> = items.iter().filter(|it| it.stat.is_some()).collect();
        let chunks: Vec<&[&Item<'_>]> = kept.chunks(CHUNK).collect();
        assert!(chunks.len() > 1);
        let terms = vec!["alpha".to_string(), "beta".to_string()];
        let mut streamed = encode_head("v", 3, (0, 0), &terms, &[], chunks.len());
        for c in &chunks {
            streamed.extend(encode_chunk(c));
        }
        let whole = IndexFile {
            version: "v".into(),
            generation: 3,
            base: 0,
            vocab_start: 0,
            terms,
            entries: items.iter().filter_map(Saved::of).collect(),
            removed: Vec::new(),
        };
        assert_eq!(streamed, whole.encode());
    }

    #[test]
    fn the_format_round_trips_and_rejects_damage() {
        let f = IndexFile {
            version: env!("CARGO_PKG_VERSION").into(),
            generation: 7,
            base: 0,
            vocab_start: 0,
            terms: vec!["alpha".into(), "beta".into()],
            entries: (0..5)
                .map(|i| Saved {
                    file: format!("k{i}.md"),
                    stat: Stat {
                        size: i as u64,
                        mtime_ns: -1,
                        ctime_ns: 1 << 60,
                        ino: 9,
                    },
                    checked: 12,
                    key: format!("{i:064}"),
                    text: "---\nx\n---\nbody ünï".into(),
                    meta: entry(i),
                    data: i.is_multiple_of(2).then(data),
                    has_data: i.is_multiple_of(2),
                })
                .collect(),
            removed: vec!["gone.md".into()],
        };
        let bytes = f.encode();
        // Without terms, the data is skipped and said to be there.
        let lean = IndexFile::decode_with(&bytes, false).unwrap();
        assert!(lean.entries.iter().all(|e| e.data.is_none()));
        assert_eq!(
            lean.entries.iter().map(|e| e.has_data).collect::<Vec<_>>(),
            f.entries.iter().map(|e| e.has_data).collect::<Vec<_>>()
        );
        assert_eq!(IndexFile::decode(&bytes), Some(f));
        // Any truncation, a foreign version, a huge count: ignored, never a panic.
        for cut in (0..bytes.len()).step_by(7) {
            assert_eq!(IndexFile::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut other = bytes.clone();
        other[12] ^= 0x20; // the first byte of the version string
        assert_eq!(IndexFile::decode(&other), None);
        let mut w = Writer(MAGIC.to_vec());
        w.str(env!("CARGO_PKG_VERSION"));
        w.u64(1);
        w.u64(0);
        w.u32(0);
        w.u64(u64::MAX);
        assert_eq!(IndexFile::decode(&w.0), None);
    }

    #[test]
    fn only_entries_settled_before_their_read_are_vouched_for() {
        let stat = |changed: i64| Stat {
            size: 10,
            mtime_ns: changed,
            ctime_ns: changed - 5,
            ino: 3,
        };
        let mut c = Cache::default();
        let mut add = |file: &str, changed: i64, checked: i64| {
            c.loaded.insert(
                file.into(),
                Loaded {
                    stat: stat(changed),
                    checked,
                    key: "k".into(),
                    has_data: false,
                    in_main: true,
                    in_delta: false,
                },
            );
        };
        let t = 1_000 * RACY_NS;
        add("old.md", t, t + RACY_NS + 1);
        add("racy.md", t, t + RACY_NS);
        add("recent.md", t, t + 1);
        assert!(c.trusted("old.md", &stat(t)));
        // Within the margin (git's racily clean entries): read again.
        assert!(!c.trusted("racy.md", &stat(t)));
        assert!(!c.trusted("recent.md", &stat(t)));
        // Any difference in the stat: read again.
        let mut other = stat(t);
        other.ino = 4;
        assert!(!c.trusted("old.md", &other));
        other = stat(t);
        other.size = 11;
        assert!(!c.trusted("old.md", &other));
        other = stat(t);
        other.ctime_ns += 1;
        assert!(!c.trusted("old.md", &other));
        assert!(!c.trusted("missing.md", &stat(t)));
    }
}
