//! The memory directory on disk (or in memory for the `none` mode): scanning,
//! loading with diagnostics, atomic writes, line appends and the cross-process lock.
//!
//! Every path this module touches is the directory itself or a name that came from
//! its own listing or from a validated key, so nothing outside the directory is read
//! or written; symbolic links are never followed. Writes go to a dot-named temp file
//! in the same directory, are fsynced, then renamed over the target, so a process
//! killed at any moment leaves the old or the new file, never a torn one.

pub mod cache;
pub mod config;
pub mod watch;

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::memory::layout::{INDEX_FILE, LOCK_FILE, STATE_DIR, TIMELINE_DIR};

/// Where the files live.
#[derive(Debug)]
pub enum Backend {
    /// A directory on disk.
    Dir(PathBuf),
    /// The `none` mode: everything in memory, gone with the process.
    Mem(Mutex<BTreeMap<String, Vec<u8>>>),
}

/// Size, modification and change times (nanoseconds) and inode of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
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
    pub fn changed_ns(&self) -> i64 {
        self.mtime_ns.max(self.ctime_ns)
    }
}

/// A file found by a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
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

/// Holds the cross-process write lock until dropped.
pub enum LockGuard<'a> {
    File(File),
    Mem(MutexGuard<'a, ()>),
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        if let LockGuard::File(f) = self {
            let _ = f.unlock();
        }
    }
}

pub(crate) fn is_memory_name(name: &str) -> bool {
    name.ends_with(".md") && name != INDEX_FILE && !name.starts_with('.') && name.len() > 3
}

impl Backend {
    /// The directory, for messages (`(memory)` in the `none` mode).
    pub fn root(&self) -> PathBuf {
        match self {
            Backend::Dir(p) => p.clone(),
            Backend::Mem(_) => PathBuf::from("(memory)"),
        }
    }

    /// The path of a file for messages.
    pub fn display_path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn mem(&self) -> Option<MutexGuard<'_, BTreeMap<String, Vec<u8>>>> {
        match self {
            Backend::Mem(m) => Some(m.lock().unwrap_or_else(|e| e.into_inner())),
            Backend::Dir(_) => None,
        }
    }

    /// Whether the directory exists.
    pub fn exists(&self) -> bool {
        match self {
            Backend::Dir(p) => p.is_dir(),
            Backend::Mem(_) => true,
        }
    }

    /// Creates the directory, `timeline/` and `.memdir/` if missing.
    pub fn create(&self) -> Result<()> {
        if let Backend::Dir(p) = self {
            if p.exists() && !p.is_dir() {
                return Err(Error::NotADir { path: p.clone() });
            }
            for sub in ["", TIMELINE_DIR, STATE_DIR] {
                let d = p.join(sub);
                // A linked folder is left alone here; reads and writes through it are
                // refused where they happen.
                if !sub.is_empty()
                    && fs::symlink_metadata(&d).is_ok_and(|m| m.file_type().is_symlink())
                {
                    continue;
                }
                fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
            }
        }
        Ok(())
    }

    /// Lists the memory files directly in the directory (every `*.md` but MEMORY.md,
    /// dot entries excluded), sorted by name.
    pub fn scan_memories(&self) -> Result<Vec<Found>> {
        self.scan(".", is_memory_name)
    }

    /// Lists the timeline day files (`timeline/*.jsonl`), sorted by name; `rel` names
    /// are relative to the directory.
    pub fn scan_timeline(&self) -> Result<Vec<Found>> {
        self.scan(TIMELINE_DIR, |n| {
            n.ends_with(".jsonl") && !n.starts_with('.')
        })
    }

    fn scan(&self, sub: &str, keep: impl Fn(&str) -> bool) -> Result<Vec<Found>> {
        let prefix = if sub == "." {
            String::new()
        } else {
            format!("{sub}/")
        };
        match self {
            Backend::Mem(_) => {
                let m = self.mem().expect("mem backend");
                Ok(m.keys()
                    .filter_map(|k| k.strip_prefix(&prefix).map(|n| (k, n)))
                    .filter(|(_, n)| !n.contains('/') && keep(n))
                    .map(|(k, _)| Found::File(k.clone()))
                    .collect())
            }
            Backend::Dir(root) => {
                let dir = root.join(sub);
                if sub != "." {
                    match fs::symlink_metadata(&dir) {
                        Ok(m) if m.file_type().is_symlink() => {
                            return Err(Error::Symlink { path: dir });
                        }
                        Ok(m) if !m.is_dir() => return Err(Error::NotADir { path: dir }),
                        _ => {}
                    }
                }
                let rd = match fs::read_dir(&dir) {
                    Ok(rd) => rd,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && sub != "." => {
                        return Ok(Vec::new());
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(Error::NoDir { path: root.clone() });
                    }
                    Err(e) => return Err(Error::io(&dir, e)),
                };
                let mut out = Vec::new();
                for entry in rd {
                    let entry = entry.map_err(|e| Error::io(&dir, e))?;
                    let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                        let lossy = entry.file_name().to_string_lossy().into_owned();
                        if !lossy.starts_with('.') {
                            out.push(Found::BadName(format!("{prefix}{lossy}")));
                        }
                        continue;
                    };
                    if !keep(&name) {
                        continue;
                    }
                    let ft = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
                    if ft.is_symlink() {
                        out.push(Found::Symlink(format!("{prefix}{name}")));
                    } else if ft.is_file() {
                        out.push(Found::File(format!("{prefix}{name}")));
                    } else {
                        out.push(Found::NotAFile(format!("{prefix}{name}")));
                    }
                }
                out.sort_by(|a, b| found_name(a).cmp(found_name(b)));
                Ok(out)
            }
        }
    }

    /// What the file system says of a regular file (`None` for anything else, a
    /// missing file, or the in-memory backend): what the search index compares to
    /// decide whether a file must be read again (spec/architecture.md#search-index).
    pub fn stat(&self, rel: &str) -> Option<Stat> {
        match self {
            Backend::Mem(_) => None,
            Backend::Dir(root) => fs::symlink_metadata(root.join(rel))
                .ok()
                .filter(|m| m.file_type().is_file())
                .map(|m| Stat::of(&m)),
        }
    }

    /// [`Backend::stat`] of many files of one folder (names without `/`), with one
    /// open folder and `fstatat` per file, on up to two threads: the per-call cost of
    /// a warm search index (spec/architecture.md#search-index).
    pub fn stats(&self, names: &[String]) -> Vec<Option<Stat>> {
        let Backend::Dir(root) = self else {
            return vec![None; names.len()];
        };
        let Ok(dir) = File::open(root) else {
            return names.iter().map(|n| self.stat(n)).collect();
        };
        use std::os::fd::AsRawFd;
        let fd = dir.as_raw_fd();
        let one = |n: &String| -> Option<Stat> {
            if n.contains('/') {
                return self.stat(n);
            }
            let c = std::ffi::CString::new(n.as_bytes()).ok()?;
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: `fd` is an open folder for the whole call, `c` a valid C string
            // and `st` a writable stat buffer.
            let r = unsafe { libc::fstatat(fd, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
            if r != 0 || (st.st_mode & libc::S_IFMT) != libc::S_IFREG {
                return None;
            }
            Some(Stat {
                size: st.st_size as u64,
                mtime_ns: (st.st_mtime as i64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(st.st_mtime_nsec as i64),
                ctime_ns: (st.st_ctime as i64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(st.st_ctime_nsec as i64),
                ino: st.st_ino as u64,
            })
        };
        if names.len() < 512 {
            return names.iter().map(one).collect();
        }
        let half = names.len().div_ceil(2);
        std::thread::scope(|scope| {
            let h = scope.spawn(|| names[half..].iter().map(one).collect::<Vec<_>>());
            let mut out: Vec<Option<Stat>> = names[..half].iter().map(one).collect();
            out.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            out
        })
    }

    /// Reads a text file like [`Backend::read_text`], with the file's [`Stat`] as it
    /// was when opened (before the read; `None` in memory).
    pub fn read_text_stat(&self, rel: &str, limit: u64) -> Result<Option<(String, Option<Stat>)>> {
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
    pub fn read(&self, rel: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        Ok(self.read_stat(rel, limit)?.map(|(b, _)| b))
    }

    /// [`Backend::read`], with the file's [`Stat`] as it was when opened.
    fn read_stat(&self, rel: &str, limit: u64) -> Result<Option<(Vec<u8>, Option<Stat>)>> {
        match self {
            Backend::Mem(_) => {
                let m = self.mem().expect("mem backend");
                match m.get(rel) {
                    None => Ok(None),
                    Some(b) if b.len() as u64 > limit => Err(Error::TooLarge {
                        path: self.display_path(rel),
                        size: b.len() as u64,
                        limit,
                    }),
                    Some(b) => Ok(Some((b.clone(), None))),
                }
            }
            Backend::Dir(root) => {
                let Some((mut f, path)) = self.open_regular(root, rel)? else {
                    return Ok(None);
                };
                let meta = f.metadata().map_err(|e| Error::io(&path, e))?;
                if meta.len() > limit {
                    return Err(Error::TooLarge {
                        path,
                        size: meta.len(),
                        limit,
                    });
                }
                let mut buf = Vec::with_capacity(meta.len() as usize);
                // Bound the read too: the file may have grown since the metadata call.
                Read::by_ref(&mut f)
                    .take(limit.saturating_add(1))
                    .read_to_end(&mut buf)
                    .map_err(|e| Error::io(&path, e))?;
                if buf.len() as u64 > limit {
                    return Err(Error::TooLarge {
                        path,
                        size: buf.len() as u64,
                        limit,
                    });
                }
                Ok(Some((buf, Some(Stat::of(&meta)))))
            }
        }
    }

    /// Reads a text file, refusing non-UTF-8 content.
    pub fn read_text(&self, rel: &str, limit: u64) -> Result<Option<String>> {
        match self.read(rel, limit)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b).map(Some).map_err(|_| Error::NotUtf8 {
                path: self.display_path(rel),
            }),
        }
    }

    /// Replaces a file atomically: temp file, fsync, rename, fsync of the directory.
    pub fn write_atomic(&self, rel: &str, data: &[u8]) -> Result<()> {
        match self {
            Backend::Mem(_) => {
                self.mem()
                    .expect("mem backend")
                    .insert(rel.to_string(), data.to_vec());
                Ok(())
            }
            Backend::Dir(root) => {
                let (path, dir) = writable_target(root, rel)?;
                // A dot name keeps the temp file out of scans, the DAG and the watcher.
                let mut tmp = tempfile::Builder::new()
                    .prefix(".memdir-")
                    .suffix(".tmp")
                    .tempfile_in(&dir)
                    .map_err(|e| Error::io(&dir, e))?;
                set_mode(tmp.as_file(), &path);
                tmp.write_all(data).map_err(|e| Error::io(tmp.path(), e))?;
                tmp.as_file()
                    .sync_all()
                    .map_err(|e| Error::io(tmp.path(), e))?;
                tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
                sync_dir(&dir)?;
                Ok(())
            }
        }
    }

    /// Removes a file; a missing file is not an error.
    pub fn remove(&self, rel: &str) -> Result<()> {
        match self {
            Backend::Mem(_) => {
                self.mem().expect("mem backend").remove(rel);
                Ok(())
            }
            Backend::Dir(root) => {
                check_parent(root, rel)?;
                let path = root.join(rel);
                match fs::remove_file(&path) {
                    Ok(()) => sync_dir(path.parent().unwrap_or(root)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(Error::io(&path, e)),
                }
            }
        }
    }

    /// Appends one line (a newline is added) with a single write, so concurrent
    /// appenders never interleave; callers also hold the lock.
    pub fn append_line(&self, rel: &str, line: &str) -> Result<()> {
        let mut data = Vec::with_capacity(line.len() + 1);
        data.extend_from_slice(line.as_bytes());
        data.push(b'\n');
        match self {
            Backend::Mem(_) => {
                self.mem()
                    .expect("mem backend")
                    .entry(rel.to_string())
                    .or_default()
                    .extend_from_slice(&data);
                Ok(())
            }
            Backend::Dir(root) => {
                let (path, _) = writable_target(root, rel)?;
                // Not through a link put there after the check above.
                let mut o = OpenOptions::new();
                o.create(true).append(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    o.custom_flags(libc::O_NOFOLLOW);
                }
                let mut f = o.open(&path).map_err(|e| Error::io(&path, e))?;
                // A file that does not end in a newline (a torn line from a crash or a
                // hand edit) would glue our line to it; start on a fresh line instead.
                let len = f.metadata().map_err(|e| Error::io(&path, e))?.len();
                if len > 0 && !ends_with_newline(&path, len)? {
                    data.insert(0, b'\n');
                }
                f.write_all(&data).map_err(|e| Error::io(&path, e))?;
                f.sync_data().map_err(|e| Error::io(&path, e))?;
                Ok(())
            }
        }
    }

    /// Appends lines to a log that may lose lines but must never block or slow a
    /// read: no lock, no fsync, one `write` of the whole buffer on an `O_APPEND`
    /// descriptor (lines shorter than `PIPE_BUF` never interleave). Past `max_bytes`
    /// the file is first renamed to `old` (replacing it), so the two together stay
    /// under about twice `max_bytes`. Nothing is created when the directory itself
    /// does not exist. Every failure is ignored: this is for derived, device-local data.
    pub fn append_log(&self, rel: &str, old: &str, data: &[u8], max_bytes: u64) {
        match self {
            Backend::Mem(_) => {
                let mut m = self.mem().expect("mem backend");
                if m.get(rel).is_some_and(|b| b.len() as u64 > max_bytes)
                    && let Some(b) = m.remove(rel)
                {
                    m.insert(old.to_string(), b);
                }
                m.entry(rel.to_string())
                    .or_default()
                    .extend_from_slice(data);
            }
            Backend::Dir(root) => {
                if !root.is_dir() {
                    return;
                }
                let Ok((path, _)) = writable_target(root, rel) else {
                    return;
                };
                if fs::symlink_metadata(&path).is_ok_and(|m| m.len() > max_bytes)
                    && check_parent(root, old).is_ok()
                {
                    let _ = fs::rename(&path, root.join(old));
                }
                let mut o = OpenOptions::new();
                o.create(true).append(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    o.custom_flags(libc::O_NOFOLLOW);
                }
                if let Ok(mut f) = o.open(&path) {
                    let _ = f.write_all(data);
                }
            }
        }
    }

    /// Takes the cross-process write lock (`.memdir/lock`), waiting for it.
    pub fn lock<'a>(&self, mem_lock: &'a Mutex<()>) -> Result<LockGuard<'a>> {
        match self {
            Backend::Mem(_) => Ok(LockGuard::Mem(
                mem_lock.lock().unwrap_or_else(|e| e.into_inner()),
            )),
            Backend::Dir(root) => {
                check_parent(root, LOCK_FILE)?;
                let dir = root.join(STATE_DIR);
                fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                let path = dir.join("lock");
                let mut o = OpenOptions::new();
                o.create(true).truncate(false).write(true);
                // A link in the lock's place (even a dangling one) would make the
                // open create or lock a file outside the directory.
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    o.custom_flags(libc::O_NOFOLLOW);
                }
                let f = o.open(&path).map_err(|e| {
                    if is_link_error(&e) {
                        Error::Symlink { path: path.clone() }
                    } else {
                        Error::io(&path, e)
                    }
                })?;
                f.lock().map_err(|e| Error::io(&path, e))?;
                Ok(LockGuard::File(f))
            }
        }
    }
}

/// Refuses a path whose folder inside the directory (`timeline/`, `.memdir/`, …) is
/// a symbolic link: following it would read or write outside the directory.
fn check_parent(root: &Path, rel: &str) -> Result<()> {
    let mut cur = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        cur.push(part);
        if fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::Symlink { path: cur });
        }
    }
    Ok(())
}

/// The path of a file about to be written and its folder (created if missing),
/// refusing a linked folder or a link in the file's place.
fn writable_target(root: &Path, rel: &str) -> Result<(PathBuf, PathBuf)> {
    check_parent(root, rel)?;
    let path = root.join(rel);
    let dir = path.parent().unwrap_or(root).to_path_buf();
    fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::Symlink { path });
    }
    Ok((path, dir))
}

/// Opens a file for reading, failing (ELOOP) if the last component is a link.
fn open_nofollow(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW);
    }
    o.open(path)
}

fn is_link_error(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

fn ends_with_newline(path: &Path, len: u64) -> Result<bool> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    f.seek(SeekFrom::Start(len - 1))
        .map_err(|e| Error::io(path, e))?;
    let mut b = [0u8; 1];
    f.read_exact(&mut b).map_err(|e| Error::io(path, e))?;
    Ok(b[0] == b'\n')
}

/// The name of a scan result.
pub fn found_name(f: &Found) -> &str {
    match f {
        Found::File(n) | Found::Symlink(n) | Found::BadName(n) | Found::NotAFile(n) => n,
    }
}

/// Gives the temp file the mode of the file it replaces, or 0644 for a new file
/// (temp files start as 0600, which would hide memories from other tools).
fn set_mode(tmp: &File, target: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(target)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        let _ = tmp.set_permissions(fs::Permissions::from_mode(mode));
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    // Persist the rename itself; without this a crash can lose the new directory entry.
    #[cfg(unix)]
    {
        let f = File::open(dir).map_err(|e| Error::io(dir, e))?;
        f.sync_all().map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

impl Backend {
    /// The directory as a UnixFS tree: every entry except dot entries, recursively,
    /// leaving out folders that hold no file (recursively: a folder holding only
    /// empty folders too), which are not part of the memory (spec/sync.md#content-addressing-memdir-cid-srcipfsunixfsrs):
    /// `pull` never creates one, so `cid`, `push` and `status` must not count one.
    /// Symbolic links and names that are not UTF-8 are errors (a snapshot must be
    /// exact, so nothing is skipped silently).
    pub fn tree(&self) -> Result<crate::ipfs::unixfs::Node> {
        use crate::ipfs::unixfs::Node;
        match self {
            Backend::Mem(_) => {
                let m = self.mem().expect("mem backend");
                let mut root = std::collections::BTreeMap::new();
                for (path, bytes) in m.iter() {
                    if path.split('/').any(|p| p.starts_with('.')) {
                        continue;
                    }
                    insert_path(&mut root, path, bytes.clone());
                }
                Ok(Node::Dir(root))
            }
            Backend::Dir(root) => {
                if !root.is_dir() {
                    return Err(Error::NoDir { path: root.clone() });
                }
                dir_tree(root)
            }
        }
    }
}

fn insert_path(
    dir: &mut std::collections::BTreeMap<String, crate::ipfs::unixfs::Node>,
    path: &str,
    bytes: Vec<u8>,
) {
    use crate::ipfs::unixfs::Node;
    match path.split_once('/') {
        None => {
            dir.insert(path.to_string(), Node::File(bytes));
        }
        Some((first, rest)) => {
            let sub = dir
                .entry(first.to_string())
                .or_insert_with(|| Node::Dir(Default::default()));
            if let Node::Dir(m) = sub {
                insert_path(m, rest, bytes);
            }
        }
    }
}

fn dir_tree(dir: &Path) -> Result<crate::ipfs::unixfs::Node> {
    use crate::ipfs::unixfs::Node;
    let mut out = std::collections::BTreeMap::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(Error::NotUtf8 { path });
        };
        if name.starts_with('.') {
            continue;
        }
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_symlink() {
            return Err(Error::Symlink { path });
        } else if ft.is_dir() {
            let sub = dir_tree(&path)?;
            if !matches!(&sub, Node::Dir(entries) if entries.is_empty()) {
                out.insert(name, sub);
            }
        } else if ft.is_file() {
            let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
            out.insert(name, Node::File(bytes));
        }
    }
    Ok(Node::Dir(out))
}

/// Size and SHA-256 of a file, computed while streaming it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileDigest {
    pub len: u64,
    pub sha256: [u8; 32],
}

impl FileDigest {
    /// The digest of bytes in memory.
    pub fn of(bytes: &[u8]) -> FileDigest {
        use sha2::Digest;
        FileDigest {
            len: bytes.len() as u64,
            sha256: sha2::Sha256::digest(bytes).into(),
        }
    }

    /// The SHA-256 in lowercase hex.
    pub fn hex(&self) -> String {
        data_encoding::HEXLOWER.encode(&self.sha256)
    }
}

/// One line met by [`Backend::for_each_line`].
#[derive(Debug)]
pub struct Line<'a> {
    /// 1-based line number.
    pub number: usize,
    /// The bytes without the newline, or the line's length when it is over the limit
    /// (such a line is never held in memory).
    pub bytes: std::result::Result<&'a [u8], u64>,
    /// Whether a newline ended the line (false only for the last line of a file that
    /// does not end in one).
    pub terminated: bool,
}

/// A temp file left in a folder by a write (`.memdir-*.tmp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempFile {
    /// Path relative to the directory.
    pub rel: String,
    /// Last modification (None in the `none` mode or when the system cannot say).
    pub modified: Option<std::time::SystemTime>,
}

/// Whether a file name is one of memdir's temp files.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with(".memdir-") && name.ends_with(".tmp")
}

impl Backend {
    /// Whether a regular file (not a link, not a folder) exists at `rel`.
    pub fn is_file(&self, rel: &str) -> bool {
        match self {
            Backend::Mem(_) => self.mem().expect("mem backend").contains_key(rel),
            Backend::Dir(root) => {
                fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.file_type().is_file())
            }
        }
    }

    /// Opens a regular file, refusing links and anything else. `Ok(None)` when it does
    /// not exist. It opens without following a link (O_NOFOLLOW) and checks the opened
    /// file itself: no window between a check and the open.
    fn open_regular(&self, root: &Path, rel: &str) -> Result<Option<(File, PathBuf)>> {
        check_parent(root, rel)?;
        let path = root.join(rel);
        let f = match open_nofollow(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if is_link_error(&e) => return Err(Error::Symlink { path }),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let meta = f.metadata().map_err(|e| Error::io(&path, e))?;
        if !meta.is_file() {
            return Err(Error::io(
                &path,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
            ));
        }
        Ok(Some((f, path)))
    }

    /// Whether the file holds exactly `bytes` (false when it is missing): its size
    /// first, then its content streamed, never read whole.
    pub fn holds(&self, rel: &str, bytes: &[u8]) -> Result<bool> {
        match self {
            Backend::Mem(_) => Ok(self
                .mem()
                .expect("mem backend")
                .get(rel)
                .is_some_and(|b| b.as_slice() == bytes)),
            Backend::Dir(root) => {
                let Some((mut f, path)) = self.open_regular(root, rel)? else {
                    return Ok(false);
                };
                let len = f.metadata().map_err(|e| Error::io(&path, e))?.len();
                if len != bytes.len() as u64 {
                    return Ok(false);
                }
                let mut buf = vec![0u8; 64 * 1024];
                let mut rest = bytes;
                loop {
                    let n = f.read(&mut buf).map_err(|e| Error::io(&path, e))?;
                    if n == 0 {
                        return Ok(rest.is_empty());
                    }
                    // A file that grew since its size was read holds something else.
                    let Some((head, tail)) = rest.split_at_checked(n) else {
                        return Ok(false);
                    };
                    if head != &buf[..n] {
                        return Ok(false);
                    }
                    rest = tail;
                }
            }
        }
    }

    /// Size and SHA-256 of a file, read in chunks whatever its size (never whole).
    /// `Ok(None)` when the file does not exist.
    pub fn digest(&self, rel: &str) -> Result<Option<FileDigest>> {
        use sha2::Digest;
        match self {
            Backend::Mem(_) => Ok(self
                .mem()
                .expect("mem backend")
                .get(rel)
                .map(|b| FileDigest::of(b))),
            Backend::Dir(root) => {
                let Some((mut f, path)) = self.open_regular(root, rel)? else {
                    return Ok(None);
                };
                let mut h = sha2::Sha256::new();
                let mut buf = vec![0u8; 64 * 1024];
                let mut len = 0u64;
                loop {
                    let n = f.read(&mut buf).map_err(|e| Error::io(&path, e))?;
                    if n == 0 {
                        break;
                    }
                    h.update(&buf[..n]);
                    len += n as u64;
                }
                Ok(Some(FileDigest {
                    len,
                    sha256: h.finalize().into(),
                }))
            }
        }
    }

    /// Calls `f` on every line of a file, streaming it: memory stays bounded by
    /// `line_limit` whatever the file's size, and a line over the limit is passed as
    /// its length only. Lines are bytes: a line that is not UTF-8 is the caller's to
    /// report, and spoils no other line. Returns false when the file does not exist.
    pub fn for_each_line(
        &self,
        rel: &str,
        line_limit: u64,
        mut f: impl FnMut(Line<'_>),
    ) -> Result<bool> {
        match self {
            Backend::Mem(_) => {
                let m = self.mem().expect("mem backend");
                let Some(bytes) = m.get(rel) else {
                    return Ok(false);
                };
                let mut reader = std::io::Cursor::new(bytes.as_slice());
                stream_lines(&mut reader, line_limit, &mut f)
                    .map_err(|e| Error::io(self.display_path(rel), e))?;
                Ok(true)
            }
            Backend::Dir(root) => {
                let Some((file, path)) = self.open_regular(root, rel)? else {
                    return Ok(false);
                };
                let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
                stream_lines(&mut reader, line_limit, &mut f).map_err(|e| Error::io(&path, e))?;
                Ok(true)
            }
        }
    }

    /// Replaces a file atomically with what `fill` writes (streamed: the content is
    /// never held whole), with the guarantees of [`Backend::write_atomic`].
    pub fn write_atomic_with(
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
            Backend::Dir(root) => {
                let (path, dir) = writable_target(root, rel)?;
                let tmp = tempfile::Builder::new()
                    .prefix(".memdir-")
                    .suffix(".tmp")
                    .tempfile_in(&dir)
                    .map_err(|e| Error::io(&dir, e))?;
                set_mode(tmp.as_file(), &path);
                let mut w = std::io::BufWriter::with_capacity(64 * 1024, tmp);
                fill(&mut w).map_err(|e| Error::io(&path, e))?;
                let tmp = w
                    .into_inner()
                    .map_err(|e| Error::io(&path, e.into_error()))?;
                tmp.as_file()
                    .sync_all()
                    .map_err(|e| Error::io(tmp.path(), e))?;
                tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
                sync_dir(&dir)?;
                Ok(())
            }
        }
    }

    /// Copies a file to `to` atomically, streaming it (a file of any size). Fails if
    /// `from` does not exist.
    pub fn copy_atomic(&self, from: &str, to: &str) -> Result<()> {
        match self {
            Backend::Mem(_) => {
                let bytes = self.mem().expect("mem backend").get(from).cloned();
                match bytes {
                    Some(b) => self.write_atomic(to, &b),
                    None => Err(Error::io(
                        self.display_path(from),
                        std::io::ErrorKind::NotFound.into(),
                    )),
                }
            }
            Backend::Dir(root) => {
                let Some((mut src, path)) = self.open_regular(root, from)? else {
                    return Err(Error::io(
                        root.join(from),
                        std::io::ErrorKind::NotFound.into(),
                    ));
                };
                let mut read_err = None;
                let r = self.write_atomic_with(to, |w| {
                    std::io::copy(&mut src, w).map(|_| ()).inspect_err(|e| {
                        read_err = Some(std::io::Error::new(e.kind(), e.to_string()))
                    })
                });
                match (r, read_err) {
                    (Err(_), Some(e)) => Err(Error::io(path, e)),
                    (r, _) => r,
                }
            }
        }
    }

    /// Temp files (`.memdir-*.tmp`) directly in the folder `sub` (`.` for the
    /// directory itself), sorted. A missing or linked folder has none.
    pub fn temp_files(&self, sub: &str) -> Result<Vec<TempFile>> {
        let prefix = if sub == "." {
            String::new()
        } else {
            format!("{sub}/")
        };
        let mut out = Vec::new();
        match self {
            Backend::Mem(_) => {
                for k in self.mem().expect("mem backend").keys() {
                    if let Some(n) = k.strip_prefix(&prefix)
                        && !n.contains('/')
                        && is_temp_name(n)
                    {
                        out.push(TempFile {
                            rel: k.clone(),
                            modified: None,
                        });
                    }
                }
            }
            Backend::Dir(root) => {
                let dir = root.join(sub);
                if sub != "." && (check_parent(root, &format!("{sub}/x")).is_err()) {
                    return Ok(out);
                }
                let rd = match fs::read_dir(&dir) {
                    Ok(rd) => rd,
                    // Nothing to sweep where there is no folder; `check` reports a
                    // file in a folder's place on its own.
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                        ) =>
                    {
                        return Ok(out);
                    }
                    Err(e) => return Err(Error::io(&dir, e)),
                };
                for e in rd {
                    let e = e.map_err(|e| Error::io(&dir, e))?;
                    let Some(n) = e.file_name().to_str().map(str::to_string) else {
                        continue;
                    };
                    if !is_temp_name(&n) {
                        continue;
                    }
                    let Ok(meta) = e.metadata() else { continue };
                    if !meta.is_file() {
                        continue;
                    }
                    out.push(TempFile {
                        rel: format!("{prefix}{n}"),
                        modified: meta.modified().ok(),
                    });
                }
            }
        }
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(out)
    }

    /// Every regular file under the folder `sub`, recursively, as paths relative to
    /// `sub`, sorted. Links are not followed (and not listed); a missing folder is
    /// empty.
    pub fn files_under(&self, sub: &str) -> Result<Vec<String>> {
        let prefix = format!("{sub}/");
        match self {
            Backend::Mem(_) => Ok(self
                .mem()
                .expect("mem backend")
                .keys()
                .filter_map(|k| k.strip_prefix(&prefix).map(str::to_string))
                .collect()),
            Backend::Dir(root) => {
                check_parent(root, &format!("{sub}/x"))?;
                let dir = root.join(sub);
                if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                    return Ok(Vec::new());
                }
                let mut out = Vec::new();
                for entry in walkdir::WalkDir::new(&dir).follow_links(false) {
                    let entry = entry.map_err(|e| {
                        Error::io(
                            &dir,
                            e.into_io_error()
                                .unwrap_or_else(|| std::io::Error::other("walk")),
                        )
                    })?;
                    if !entry.file_type().is_file() {
                        continue;
                    }
                    let Ok(rel) = entry.path().strip_prefix(&dir) else {
                        continue;
                    };
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
                out.sort();
                Ok(out)
            }
        }
    }
}

/// Reads lines from `r` into a buffer of at most `limit` bytes each; longer lines are
/// skipped to their end and passed as their length.
fn stream_lines(
    r: &mut impl std::io::BufRead,
    limit: u64,
    f: &mut impl FnMut(Line<'_>),
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut len: u64 = 0;
    let mut number = 0usize;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if len > 0 {
                number += 1;
                let bytes = if len > limit { Err(len) } else { Ok(&buf[..]) };
                f(Line {
                    number,
                    bytes,
                    terminated: false,
                });
            }
            return Ok(());
        }
        let (part, used, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        len += part.len() as u64;
        if len <= limit {
            buf.extend_from_slice(part);
        }
        r.consume(used);
        if end {
            number += 1;
            let bytes = if len > limit { Err(len) } else { Ok(&buf[..]) };
            f(Line {
                number,
                bytes,
                terminated: true,
            });
            buf.clear();
            len = 0;
        }
    }
}

/// Drops `x` on a thread of its own: freeing a large store's memory takes
/// milliseconds, and a one-shot command need not wait for it (when the process ends
/// first, its memory goes back at once). Dropped in place when no thread starts.
pub(crate) fn drop_later<T: Send + 'static>(x: T) {
    // On failure the closure, and `x` with it, is dropped here.
    let _ = std::thread::Builder::new()
        .name("memdir-drop".into())
        .spawn(move || drop(x));
}

/// Maps `f` over `items` on all cores (at most 8 threads), keeping the order; on the
/// calling thread alone for fewer than `min` items.
pub(crate) fn par_map<T: Sync, R: Send>(
    items: &[T],
    min: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    par_map_owned(items.iter().collect(), min, f)
}

/// [`par_map`] over owned items, each handed to `f` by value.
pub(crate) fn par_map_owned<T: Send, R: Send>(
    mut items: Vec<T>,
    min: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    if threads < 2 || items.len() < min.max(2) {
        return items.into_iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    // The parts in order: cut from the end.
    let mut parts = Vec::new();
    while items.len() > chunk {
        parts.push(items.split_off(items.len() - chunk));
    }
    parts.push(items);
    parts.reverse();
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || part.into_iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_holds_exactly_its_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let b = Backend::Dir(tmp.path().to_path_buf());
        // Larger than the 64 KiB read buffer, so the comparison spans several reads.
        let text: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        b.write_atomic("MEMORY.md", &text).unwrap();
        assert!(b.holds("MEMORY.md", &text).unwrap());
        let mut other = text.clone();
        other[150_000] = b'!';
        assert!(!b.holds("MEMORY.md", &other).unwrap());
        assert!(!b.holds("MEMORY.md", &text[..text.len() - 1]).unwrap());
        let mut longer = text.clone();
        longer.push(b'z');
        assert!(!b.holds("MEMORY.md", &longer).unwrap());
        assert!(!b.holds("missing.md", b"").unwrap());
    }

    #[test]
    fn par_maps_keep_the_order() {
        for n in [0, 1, 2, 3, 7, 8, 9, 100, 1001] {
            let items: Vec<usize> = (0..n).collect();
            let want: Vec<usize> = items.iter().map(|i| i * 3 + 1).collect();
            assert_eq!(par_map(&items, 2, |i| i * 3 + 1), want, "n = {n}");
            assert_eq!(par_map_owned(items, 2, |i| i * 3 + 1), want, "n = {n}");
        }
    }

    /// Lines of `input` read through a 2-byte buffer (every chunk boundary) with `limit`.
    fn check(input: &[u8], limit: u64, expect: &[(usize, Result<&str, u64>, bool)]) {
        let mut r = std::io::BufReader::with_capacity(2, input);
        let mut got = Vec::new();
        stream_lines(&mut r, limit, &mut |l: Line<'_>| {
            got.push((
                l.number,
                l.bytes.map(|b| String::from_utf8_lossy(b).into_owned()),
                l.terminated,
            ))
        })
        .unwrap();
        let want: Vec<_> = expect
            .iter()
            .map(|(n, b, t)| (*n, b.map(str::to_string), *t))
            .collect();
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(input));
    }

    #[test]
    fn lines_are_streamed_one_at_a_time() {
        // spec/timeline-format.md#reading
        check(b"", 10, &[]);
        check(b"a\nbc", 10, &[(1, Ok("a"), true), (2, Ok("bc"), false)]);
        check(b"\n\n", 10, &[(1, Ok(""), true), (2, Ok(""), true)]);
        check(
            b"abcdef\nxy\n",
            3,
            &[(1, Err(6), true), (2, Ok("xy"), true)],
        );
        check(b"abc\nabcd", 3, &[(1, Ok("abc"), true), (2, Err(4), false)]);
        check(
            b"a\xffb\nc\n",
            10,
            &[(1, Ok("a\u{fffd}b"), true), (2, Ok("c"), true)],
        );
    }

    #[test]
    fn the_memory_backend_streams_digests_and_copies_too() {
        let b = Backend::Mem(Mutex::new(BTreeMap::new()));
        b.write_atomic("MEMORY.md", b"x\ny\n").unwrap();
        assert_eq!(
            b.digest("MEMORY.md").unwrap(),
            Some(FileDigest::of(b"x\ny\n"))
        );
        assert_eq!(b.digest("nope").unwrap(), None);
        assert!(b.holds("MEMORY.md", b"x\ny\n").unwrap());
        assert!(!b.holds("MEMORY.md", b"x\ny").unwrap());
        assert!(!b.holds("nope", b"").unwrap());
        b.copy_atomic("MEMORY.md", ".memdir/backups/a").unwrap();
        assert_eq!(b.read(".memdir/backups/a", 10).unwrap().unwrap(), b"x\ny\n");
        b.write_atomic(".memdir/cache/.memdir-1.tmp", b"").unwrap();
        let t = b.temp_files(".memdir/cache").unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].rel, ".memdir/cache/.memdir-1.tmp");
        assert_eq!(b.files_under(".memdir/backups").unwrap(), ["a"]);
    }
}
