//! The memory directory on disk (or in memory for the `none` mode): scanning,
//! loading with diagnostics, atomic writes, line appends and the cross-process lock.
//!
//! Every path this module touches is the directory itself or a name that came from
//! its own listing or from a validated key, so nothing outside the directory is read
//! or written; symbolic links are never followed. Writes go to a dot-named temp file
//! in the same directory, are fsynced, then renamed over the target, so a process
//! killed at any moment leaves the old or the new file, never a torn one.
//!
//! This file holds [`Backend`] and the types its answers use; each method hands its
//! work to the directory side (`disk`) or the in-memory side (`mem`). The lock is in
//! `lock`, the UnixFS tree of the directory in `tree`, the line reader in `lines`,
//! `.memdir/config.toml`'s one reader in `config`, the search index in `cache`.

pub(crate) mod cache;
pub(crate) mod config;
mod disk;
mod lines;
mod lock;
mod mem;
mod threads;
mod tree;
pub(crate) mod watch;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::memory::layout::{INDEX_FILE, TEMP_PREFIX, TEMP_SUFFIX, TIMELINE_DIR};

pub(crate) use lines::Line;
pub(crate) use threads::drop_later;
pub(crate) use threads::par_map;
pub(crate) use threads::par_map_owned;

/// A file's bytes as [`Backend::map`] gives them: mapped read-only, or a copy.
pub(crate) enum Bytes {
    /// The file mapped read-only.
    Mapped(memmap2::Mmap),
    /// A copy (a store in memory, or an empty file).
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// Where the files live.
#[derive(Debug)]
pub(crate) enum Backend {
    /// A directory on disk.
    Dir(PathBuf),
    /// The `none` mode: everything in memory, gone with the process.
    Mem(Mutex<BTreeMap<String, Vec<u8>>>),
}

/// What a name in the directory is ([`Backend::entry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
    /// A folder, a FIFO, a device: anything else.
    Other,
}

/// Size, modification and change times (nanoseconds) and inode of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Stat {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
}

impl Stat {
    fn of(m: &fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        Stat {
            size: m.len(),
            mtime_ns: m
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
            ctime_ns: m
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.ctime_nsec()),
            ino: m.ino(),
        }
    }

    /// The later of the modification and change times.
    pub(crate) fn changed_ns(&self) -> i64 {
        self.mtime_ns.max(self.ctime_ns)
    }
}

/// A file found by a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A regular file, by name relative to the directory.
    File(String),
    /// A symbolic link: reported, never followed.
    Symlink(String),
    /// A name that is not valid UTF-8 (lossy form for the report).
    BadName(String),
    /// An entry with the name of a memory or day file that is not a regular file
    /// (a folder, a FIFO, a socket): reported, never read or replaced.
    NotAFile(String),
}

pub(crate) fn is_memory_name(name: &str) -> bool {
    name.ends_with(".md") && name != INDEX_FILE && !name.starts_with('.') && name.len() > 3
}

/// Writes `data` as the file `name` in the folder `dir` the way memdir replaces its
/// own files (a temporary file beside it, fsync, rename, fsync of the folder), for a
/// file a person names (`memdir export -o`). The folder is created if missing; a
/// symbolic link, FIFO, device or socket at the target is refused; a failed write
/// leaves the old file as it was.
pub fn write_atomic(dir: &std::path::Path, name: &str, data: &[u8]) -> Result<()> {
    disk::write_atomic(dir, name, data)
}

/// The name of a scan result.
pub(crate) fn found_name(f: &Found) -> &str {
    match f {
        Found::File(n) | Found::Symlink(n) | Found::BadName(n) | Found::NotAFile(n) => n,
    }
}

/// Size and SHA-256 of a file, computed while streaming it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileDigest {
    pub len: u64,
    pub sha256: [u8; 32],
}

impl FileDigest {
    /// The digest of bytes in memory.
    pub(crate) fn of(bytes: &[u8]) -> FileDigest {
        use sha2::Digest;
        FileDigest {
            len: bytes.len() as u64,
            sha256: sha2::Sha256::digest(bytes).into(),
        }
    }

    /// The SHA-256 in lowercase hex.
    pub(crate) fn hex(&self) -> String {
        data_encoding::HEXLOWER.encode(&self.sha256)
    }
}

/// A temp file left in a folder by a write (`.memdir-*.tmp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TempFile {
    /// Path relative to the directory.
    pub rel: String,
    /// Last modification (None in the `none` mode or when the system cannot say).
    pub modified: Option<std::time::SystemTime>,
}

/// Whether a file name is one of memdir's temp files.
pub(crate) fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX)
}

/// The folder `sub` (`.` for the directory itself) as a prefix of relative paths.
fn prefix_of(sub: &str) -> String {
    if sub == "." {
        String::new()
    } else {
        format!("{sub}/")
    }
}

impl Backend {
    /// The directory, for messages (`(memory)` in the `none` mode).
    pub(crate) fn root(&self) -> PathBuf {
        match self {
            Backend::Dir(p) => p.clone(),
            Backend::Mem(_) => PathBuf::from(mem::ROOT),
        }
    }

    /// The path of a file for messages.
    pub(crate) fn display_path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Whether the directory exists.
    pub(crate) fn exists(&self) -> bool {
        match self {
            Backend::Dir(p) => p.is_dir(),
            Backend::Mem(_) => true,
        }
    }

    /// Creates the directory, `timeline/` and `.memdir/` if missing.
    pub(crate) fn create(&self) -> Result<()> {
        if let Backend::Dir(p) = self {
            disk::create(p)?;
        }
        Ok(())
    }

    /// Lists the memory files directly in the directory (every `*.md` but MEMORY.md,
    /// dot entries excluded), sorted by name.
    pub(crate) fn scan_memories(&self) -> Result<Vec<Found>> {
        self.scan(".", is_memory_name)
    }

    /// Lists the timeline day files (`timeline/*.jsonl`), sorted by name; `rel` names
    /// are relative to the directory.
    pub(crate) fn scan_timeline(&self) -> Result<Vec<Found>> {
        self.scan(TIMELINE_DIR, |n| {
            n.ends_with(".jsonl") && !n.starts_with('.')
        })
    }

    fn scan(&self, sub: &str, keep: impl Fn(&str) -> bool) -> Result<Vec<Found>> {
        let prefix = prefix_of(sub);
        match self {
            Backend::Mem(m) => Ok(mem::scan(&mem::lock(m), &prefix, keep)),
            Backend::Dir(root) => disk::scan(root, sub, &prefix, keep),
        }
    }

    /// What the file system says of a regular file (`None` for anything else, a
    /// missing file, or the in-memory backend): what the search index compares to
    /// decide whether a file must be read again (spec/architecture.md#search-index).
    pub(crate) fn stat(&self, rel: &str) -> Option<Stat> {
        match self {
            Backend::Mem(_) => None,
            Backend::Dir(root) => disk::stat(root, rel),
        }
    }

    /// What the name `rel` is in the directory, without following a link:
    /// `Ok(None)` when nothing has that name (a warm process looks at each name a
    /// change event mentions).
    pub(crate) fn entry(&self, rel: &str) -> std::io::Result<Option<Entry>> {
        match self {
            Backend::Mem(_) => Ok(self.is_file(rel).then_some(Entry::File)),
            Backend::Dir(root) => disk::entry(root, rel),
        }
    }

    /// [`Backend::stat`] of many files of one folder (names without `/`), with one
    /// open folder and `fstatat` per file, on up to two threads: the per-call cost of
    /// a warm search index (spec/architecture.md#search-index).
    pub(crate) fn stats(&self, names: &[String]) -> Vec<Option<Stat>> {
        let Backend::Dir(root) = self else {
            return vec![None; names.len()];
        };
        disk::stats(root, names)
    }

    /// Reads a text file like [`Backend::read_text`], with the file's [`Stat`] as it
    /// was when opened (before the read; `None` in memory).
    pub(crate) fn read_text_stat(
        &self,
        rel: &str,
        limit: u64,
    ) -> Result<Option<(String, Option<Stat>)>> {
        match self.read_stat(rel, limit)? {
            None => Ok(None),
            Some((b, stat)) => {
                String::from_utf8(b)
                    .map(|t| Some((t, stat)))
                    .map_err(|_| Error::NotUtf8 {
                        path: self.display_path(rel),
                    })
            }
        }
    }

    /// Reads a file as bytes, refusing links and files over `limit` bytes. `Ok(None)`
    /// when the file does not exist.
    pub(crate) fn read(&self, rel: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        Ok(self.read_stat(rel, limit)?.map(|(b, _)| b))
    }

    /// [`Backend::read`] without the copy where it can: the file mapped into memory
    /// (a store in memory gives a copy). For the search index, which a one-shot call
    /// decodes once and drops.
    pub(crate) fn map(&self, rel: &str, limit: u64) -> Result<Option<Bytes>> {
        self.map_pages(rel, limit, true)
    }

    /// [`Backend::map`] for a file of which a call reads only some pages (the
    /// postings of the search index): each page is read when first touched.
    pub(crate) fn map_sparse(&self, rel: &str, limit: u64) -> Result<Option<Bytes>> {
        self.map_pages(rel, limit, false)
    }

    /// [`Backend::map`], every page mapped at once with `populate`.
    fn map_pages(&self, rel: &str, limit: u64, populate: bool) -> Result<Option<Bytes>> {
        match self {
            Backend::Mem(m) => Ok(mem::read(&mem::lock(m), rel, limit)?.map(Bytes::Owned)),
            Backend::Dir(root) => disk::map(root, rel, limit, populate),
        }
    }

    /// [`Backend::read`], with the file's [`Stat`] as it was when opened.
    fn read_stat(&self, rel: &str, limit: u64) -> Result<Option<(Vec<u8>, Option<Stat>)>> {
        match self {
            Backend::Mem(m) => Ok(mem::read(&mem::lock(m), rel, limit)?.map(|b| (b, None))),
            Backend::Dir(root) => {
                Ok(disk::read_stat(root, rel, limit)?.map(|(b, stat)| (b, Some(stat))))
            }
        }
    }

    /// Reads a text file, refusing non-UTF-8 content.
    pub(crate) fn read_text(&self, rel: &str, limit: u64) -> Result<Option<String>> {
        match self.read(rel, limit)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b).map(Some).map_err(|_| Error::NotUtf8 {
                path: self.display_path(rel),
            }),
        }
    }

    /// Replaces a file atomically: temp file, fsync, rename, fsync of the directory.
    pub(crate) fn write_atomic(&self, rel: &str, data: &[u8]) -> Result<()> {
        match self {
            Backend::Mem(m) => {
                mem::lock(m).insert(rel.to_string(), data.to_vec());
                Ok(())
            }
            Backend::Dir(root) => disk::write_atomic(root, rel, data),
        }
    }

    /// Removes a file; a missing file is not an error.
    pub(crate) fn remove(&self, rel: &str) -> Result<()> {
        match self {
            Backend::Mem(m) => {
                mem::lock(m).remove(rel);
                Ok(())
            }
            Backend::Dir(root) => disk::remove(root, rel),
        }
    }

    /// Appends one line (a newline is added) with a single write, so concurrent
    /// appenders never interleave; callers also hold the lock.
    pub(crate) fn append_line(&self, rel: &str, line: &str) -> Result<()> {
        let mut data = Vec::with_capacity(line.len() + 1);
        data.extend_from_slice(line.as_bytes());
        data.push(b'\n');
        match self {
            Backend::Mem(m) => {
                mem::lock(m)
                    .entry(rel.to_string())
                    .or_default()
                    .extend_from_slice(&data);
                Ok(())
            }
            Backend::Dir(root) => disk::append_line(root, rel, data),
        }
    }

    /// Appends lines to a log that may lose lines but must never block or slow a
    /// read: no lock, no fsync, one `write` of the whole buffer on an `O_APPEND`
    /// descriptor (lines shorter than `PIPE_BUF` never interleave). Past `max_bytes`
    /// the file is first renamed to `old` (replacing it), so the two together stay
    /// under about twice `max_bytes`. Nothing is created when the directory itself
    /// does not exist. Every failure is ignored: this is for derived, device-local data.
    pub(crate) fn append_log(&self, rel: &str, old: &str, data: &[u8], max_bytes: u64) {
        match self {
            Backend::Mem(m) => mem::append_log(&mut mem::lock(m), rel, old, data, max_bytes),
            Backend::Dir(root) => disk::append_log(root, rel, old, data, max_bytes),
        }
    }

    /// Whether a regular file (not a link, not a folder) exists at `rel`.
    pub(crate) fn is_file(&self, rel: &str) -> bool {
        match self {
            Backend::Mem(m) => mem::lock(m).contains_key(rel),
            Backend::Dir(root) => disk::is_file(root, rel),
        }
    }

    /// Whether the file holds exactly `bytes` (false when it is missing): its size
    /// first, then its content streamed, never read whole; with its [`Stat`] as it
    /// was when opened, before the read (`None` when missing, and in memory).
    pub(crate) fn holds(&self, rel: &str, bytes: &[u8]) -> Result<(bool, Option<Stat>)> {
        match self {
            Backend::Mem(m) => Ok((
                mem::lock(m).get(rel).is_some_and(|b| b.as_slice() == bytes),
                None,
            )),
            Backend::Dir(root) => disk::holds(root, rel, bytes),
        }
    }

    /// Size and SHA-256 of a file, read in chunks whatever its size (never whole).
    /// `Ok(None)` when the file does not exist.
    pub(crate) fn digest(&self, rel: &str) -> Result<Option<FileDigest>> {
        match self {
            Backend::Mem(m) => Ok(mem::lock(m).get(rel).map(|b| FileDigest::of(b))),
            Backend::Dir(root) => disk::digest(root, rel),
        }
    }

    /// Calls `f` on every line of a file, streaming it: memory stays bounded by
    /// `line_limit` whatever the file's size, and a line over the limit is passed as
    /// its length only. Lines are bytes: a line that is not UTF-8 is the caller's to
    /// report, and spoils no other line. Returns false when the file does not exist.
    pub(crate) fn for_each_line(
        &self,
        rel: &str,
        line_limit: u64,
        f: impl FnMut(Line<'_>),
    ) -> Result<bool> {
        match self {
            Backend::Mem(m) => mem::for_each_line(&mem::lock(m), rel, line_limit, f),
            Backend::Dir(root) => disk::for_each_line(root, rel, line_limit, f),
        }
    }

    /// Replaces a file atomically with what `fill` writes (streamed: the content is
    /// never held whole), with the guarantees of [`Backend::write_atomic`].
    pub(crate) fn write_atomic_with(
        &self,
        rel: &str,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        match self {
            Backend::Mem(_) => {
                let mut buf = Vec::new();
                fill(&mut buf).map_err(|e| Error::io(self.display_path(rel), e))?;
                self.write_atomic(rel, &buf)
            }
            Backend::Dir(root) => disk::write_atomic_with(root, rel, fill),
        }
    }

    /// Copies a file to `to` atomically, streaming it (a file of any size). Fails if
    /// `from` does not exist.
    pub(crate) fn copy_atomic(&self, from: &str, to: &str) -> Result<()> {
        match self {
            Backend::Mem(m) => {
                let bytes = mem::lock(m).get(from).cloned();
                match bytes {
                    Some(b) => self.write_atomic(to, &b),
                    None => Err(Error::io(
                        self.display_path(from),
                        std::io::ErrorKind::NotFound.into(),
                    )),
                }
            }
            Backend::Dir(root) => disk::copy_atomic(root, from, to),
        }
    }

    /// Temp files (`.memdir-*.tmp`) directly in the folder `sub` (`.` for the
    /// directory itself), sorted. A missing or linked folder has none.
    pub(crate) fn temp_files(&self, sub: &str) -> Result<Vec<TempFile>> {
        let prefix = prefix_of(sub);
        let mut out = match self {
            Backend::Mem(m) => mem::temp_files(&mem::lock(m), &prefix),
            Backend::Dir(root) => disk::temp_files(root, sub, &prefix)?,
        };
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(out)
    }

    /// Every regular file under the folder `sub`, recursively, as paths relative to
    /// `sub`, sorted. Links are not followed (and not listed); a missing folder is
    /// empty.
    pub(crate) fn files_under(&self, sub: &str) -> Result<Vec<String>> {
        match self {
            Backend::Mem(m) => Ok(mem::files_under(&mem::lock(m), &format!("{sub}/"))),
            Backend::Dir(root) => disk::files_under(root, sub),
        }
    }
}
