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
//! ignored and rebuilt, and deleting it at any time loses nothing. Every part of a
//! file (its header, each chunk of entries) carries a CRC-32: a part that fails it is
//! dropped, its entries read again from the memory files, never trusted. Writes are atomic
//! and need no lock: a lost race costs only reads. After a change, only the changed
//! entries are written, to the delta file; the delta is folded into the main file when
//! it grows past a share of it.
//!
//! This file holds the index's types and its lookups; `load` reads the main file and
//! the delta, `counts` carries the main file's term counts through a load, `delta`
//! decides what a save writes, `codec` is the binary format (`MDX8`,
//! spec/architecture.md#search-index) and its parallel decode.

mod codec;
mod counts;
mod delta;
mod load;
mod postings;

use foldhash::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::memory::frontmatter::{Extra, Warning};
use crate::memory::{Decay, Kind, Meta, SharedStr, Stamp};
use crate::retrieval::search::FrozenParts;
use crate::retrieval::search::{Counts, DocData, Vocab};
use crate::store::Stat;

/// A file whose modification or change time is less than this before the moment it
/// was read is read again next time, whatever its stat says (two seconds: the
/// coarsest timestamp granularity of common file systems).
pub(crate) const RACY_NS: i64 = 2_000_000_000;

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
    /// Every top-level key in file order (one list for the entries that have the
    /// same, as decoded).
    order: std::sync::Arc<[String]>,
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
    /// Read in place from the mapped index file where it can be.
    text: SharedStr,
    /// Where the body is in `text` (`frontmatter::body_span`): found when the entry
    /// is made from a file and saved with it, so a load does not look for it again.
    body: Option<(usize, usize)>,
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
    /// The term counts of the entries' data (main file only; decoded only with the
    /// term data, and `None` when their part failed its checksum).
    counts: Option<Counts>,
    /// Boxed (an entry is some 650 bytes): a load moves every entry from the decode
    /// to the table by file to the files it vouches for, and each move is then a
    /// pointer's, not a copy into fresh memory.
    #[allow(clippy::vec_box)]
    entries: Vec<Box<Saved>>,
    /// Files removed since the main file (delta only).
    removed: Vec<String>,
    /// Whether a part failed its checksum or was cut short when it was read (its
    /// entries were left out).
    damaged: bool,
    /// Whether an entry's term data was dropped as it was read (its terms are not
    /// all the file's).
    data_dropped: bool,
}

/// A file found in the index.
pub(crate) struct Hit {
    pub key: String,
    pub text: SharedStr,
    /// Where the body is in `text` (`frontmatter::body_span`).
    pub body: Option<(usize, usize)>,
    pub meta: Meta,
    pub warnings: Vec<Warning>,
    pub data: Option<DocData>,
    /// When it was last read (wall clock, ns).
    pub checked: i64,
    /// Where `data` comes from when the main file's counts hold it
    /// ([`Cache::corpus`]).
    pub origin: Option<usize>,
}

/// What a load saves into the index for one file.
#[derive(Clone, Copy)]
pub(crate) struct Item<'a> {
    pub file: &'a str,
    pub stat: Option<Stat>,
    pub checked: i64,
    pub key: &'a str,
    /// The file's text.
    pub text: &'a str,
    pub meta: &'a Meta,
    pub warnings: &'a [Warning],
    pub data: Option<&'a DocData>,
}

/// A file's saved entry, taken by [`Cache::by_stat`]: turned into a [`Hit`] on
/// whatever thread needs it.
pub(crate) struct Vouched(Box<Saved>, Option<usize>);

impl Vouched {
    /// The entry as a hit; `None` when its metadata no longer parses (the file is
    /// then read).
    pub(crate) fn hit(self) -> Option<Hit> {
        self.0.into_hit(self.1)
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
    /// Whether a file of stat `stat` is this entry on its stat alone: a memory
    /// entry (not a recorded removal) of that very stat, settled more than
    /// [`RACY_NS`] before it was read.
    fn vouches(&self, stat: &Stat) -> bool {
        !self.key.is_empty()
            && self.stat == *stat
            && self.stat.changed_ns() < self.checked - RACY_NS
    }

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
pub(crate) struct Cache {
    saved: Vec<Option<Box<Saved>>>,
    /// File → position in `saved` and `loaded` (the one copy of each name besides
    /// the entry's own).
    by_file: HashMap<String, usize>,
    /// What the load said of each file, by position.
    loaded: Vec<Loaded>,
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
    /// Whether a part of the main file was left out (failed its checksum, or was
    /// cut short): the next save that can writes a new main file.
    main_damaged: bool,
    /// The main file's term counts, when it had them whole and the load decoded
    /// the term data of every entry (`counts`).
    counts: Option<counts::MainCounts>,
    /// The postings saved for the main file's entries, when whole and of its
    /// generation (handed to the corpus by [`Cache::corpus`]).
    frozen: Option<FrozenParts>,
    /// Whether the main file's entries are the ones postings are saved for (a main
    /// file whole, with its counts): its postings are written when missing.
    postings_wanted: bool,
    /// Bytes of the postings file as loaded.
    postings_bytes: u64,
    /// Entries of the main file as loaded.
    main_entries: usize,
    /// Whether every main entry with data is one of this load's memories (found
    /// by [`Cache::corpus`]).
    all_of_main: bool,
    /// Whether this load's save wrote a new main file (and its postings).
    wrote_main: std::sync::atomic::AtomicBool,
}

/// A saved `created` / `updated` text: empty is a file without the field.
fn stamp(text: &str) -> Option<Stamp> {
    if text.is_empty() {
        Some(Stamp::undated())
    } else {
        Stamp::parse(text)
    }
}

/// Hex SHA-256 of a file's bytes: the content key.
pub(crate) fn content_key(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(bytes))
}

impl Cache {
    /// The vocabulary the saved term data uses; new data interns into it.
    pub(crate) fn take_vocab(&mut self) -> Vocab {
        std::mem::take(&mut self.vocab)
    }

    /// Size of the index files as loaded, in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.main_bytes + self.delta_bytes + self.postings_bytes
    }

    /// Whether the index holds a file whose stat alone vouches for it (what
    /// [`Cache::by_stat`] decides; its tests ask it here).
    #[cfg(test)]
    pub(crate) fn trusted(&self, file: &str, stat: &Stat) -> bool {
        self.info(file).is_some_and(|e| e.vouches(stat))
    }

    /// The file as saved, when its stat vouches for it ([`Loaded::vouches`]).
    pub(crate) fn by_stat(&mut self, file: &str, stat: &Stat) -> Option<Vouched> {
        // One lookup: the entry's position, then what was loaded there.
        let i = *self.by_file.get(file)?;
        if !self.loaded[i].vouches(stat) {
            return None;
        }
        let origin = self.origin(i);
        self.saved[i].take().map(|e| Vouched(e, origin))
    }

    /// The parse and term data saved for this content, read under the name `file`
    /// (or under another name: a renamed file).
    pub(crate) fn by_content(&mut self, file: &str, key: &str) -> Option<Hit> {
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
        (**self.saved[at].as_ref()?)
            .clone()
            .into_hit(self.origin(at))
    }

    /// Whether a save of `items` (the files of this load, made only as they are
    /// looked at) with `vocab` would write nothing: the usual read, found without
    /// gathering the items ([`Cache::save`] then).
    pub(crate) fn holds<'a>(
        &self,
        vocab: &Vocab,
        items: impl IntoIterator<Item = Item<'a>>,
    ) -> bool {
        !self.enabled || (vocab.len() == self.loaded_vocab_len && self.unchanged(items))
    }

    /// [`Cache::holds`] of `n` files that were all vouched for by their stat
    /// ([`Cache::by_stat`]) and none analyzed since: each is then the entry loaded
    /// under its name, taken once, so they are what was loaded when they are as many
    /// as the loaded files.
    pub(crate) fn holds_vouched(&self, vocab: &Vocab, n: usize) -> bool {
        !self.enabled || (vocab.len() == self.loaded_vocab_len && n == self.live_entries())
    }

    /// How many loaded entries are files (not recorded removals).
    fn live_entries(&self) -> usize {
        self.loaded.iter().filter(|e| !e.is_removal()).count()
    }

    /// What the load said of `file`.
    fn info(&self, file: &str) -> Option<&Loaded> {
        self.by_file.get(file).map(|&i| &self.loaded[i])
    }

    /// Every file the load said something of, with what it said.
    fn infos(&self) -> impl Iterator<Item = (&String, &Loaded)> {
        self.by_file.iter().map(|(f, &i)| (f, &self.loaded[i]))
    }

    /// Whether an item is what the load found for its file.
    fn same(&self, it: &Item<'_>) -> bool {
        self.info(it.file).is_some_and(|e| e.same(it))
    }

    /// Whether `items` (distinct files) are exactly what was loaded: none changed,
    /// none added, none of the loaded files gone. One lookup per item, no set of
    /// names: the usual case of a read, decided before anything else is built.
    fn unchanged<'a>(&self, items: impl IntoIterator<Item = Item<'a>>) -> bool {
        let mut live_hits = 0usize;
        for it in items {
            match self.info(it.file) {
                Some(e) if e.same(&it) => live_hits += usize::from(!e.is_removal()),
                _ => return false,
            }
        }
        // Every loaded file that is not a recorded removal is among the items.
        live_hits == self.live_entries()
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
            text: it.text.into(),
            body: crate::memory::frontmatter::body_span(it.text),
            meta: Entry::from_meta(it.meta, it.warnings),
            data: it.data.cloned(),
            has_data: it.data.is_some(),
        })
    }

    fn into_hit(self, origin: Option<usize>) -> Option<Hit> {
        let (meta, warnings) = self.meta.into_meta()?;
        Some(Hit {
            key: self.key,
            body: self.body,
            text: self.text,
            meta,
            warnings,
            origin: origin.filter(|_| self.data.is_some()),
            data: self.data,
            checked: self.checked,
        })
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
            supersedes: m.supersedes.clone(),
            valid_until: m.valid_until.clone(),
            order: m.extra.order_shared(),
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
            created: stamp(&self.created)?,
            updated: stamp(&self.updated)?,
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

#[cfg(test)]
mod tests {
    use super::*;

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
            c.by_file.insert(file.into(), c.loaded.len());
            c.loaded.push(Loaded {
                stat: stat(changed),
                checked,
                key: "k".into(),
                has_data: false,
                in_main: true,
                in_delta: false,
            });
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
