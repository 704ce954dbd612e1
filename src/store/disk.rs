//! The directory side of [`Backend`](super::Backend): scans, bounded reads, streamed
//! lines and digests, atomic and streamed writes, line appends, temp-file and sub-folder
//! listings, and the symlink refusal every path goes through. It must not know the
//! `none` mode, nor interpret file contents.
//!
//! Every path is `root` joined with a name that came from a listing or from a validated
//! key; a folder inside the directory that is a link is refused before it is used
//! ([`check_parent`]), and files are opened without following a link.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::memory::layout::{STATE_DIR, TEMP_PREFIX, TEMP_SUFFIX, TIMELINE_DIR};
use crate::store::lines::{Line, stream_lines};
use crate::store::{Bytes, Entry, FileDigest, Found, Stat, TempFile, found_name, is_temp_name};

/// Creates the directory, `timeline/` and `.memdir/` if missing.
pub(super) fn create(p: &Path) -> Result<()> {
    if p.exists() && !p.is_dir() {
        return Err(Error::NotADir {
            path: p.to_path_buf(),
        });
    }
    for sub in ["", TIMELINE_DIR, STATE_DIR] {
        let d = p.join(sub);
        // A linked folder is left alone here; reads and writes through it are
        // refused where they happen.
        if !sub.is_empty() && fs::symlink_metadata(&d).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
    }
    Ok(())
}

/// The entries of the folder `sub` (`.` for the directory itself) whose names `keep`
/// accepts, named with `prefix` (`sub/`, or nothing), sorted by name.
pub(super) fn scan(
    root: &Path,
    sub: &str,
    prefix: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<Found>> {
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
            return Err(Error::NoDir {
                path: root.to_path_buf(),
            });
        }
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(&dir, e))?;
        // The name as read is the entry's string when there is no prefix: one
        // allocation per file of a folder of 100,000, not three.
        let name = match entry.file_name().into_string() {
            Ok(name) => name,
            Err(raw) => {
                let lossy = raw.to_string_lossy();
                if !lossy.starts_with('.') {
                    out.push(Found::BadName(format!("{prefix}{lossy}")));
                }
                continue;
            }
        };
        if !keep(&name) {
            continue;
        }
        let ft = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
        let name = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}{name}")
        };
        if ft.is_symlink() {
            out.push(Found::Symlink(name));
        } else if ft.is_file() {
            out.push(Found::File(name));
        } else {
            out.push(Found::NotAFile(name));
        }
    }
    out.sort_by(|a, b| found_name(a).cmp(found_name(b)));
    Ok(out)
}

/// The stat of a regular file (`None` for anything else or a missing file).
pub(super) fn stat(root: &Path, rel: &str) -> Option<Stat> {
    fs::symlink_metadata(root.join(rel))
        .ok()
        .filter(|m| m.file_type().is_file())
        .map(|m| Stat::of(&m))
}

/// What `rel` is, without following a link; `Ok(None)` when nothing has that name.
pub(super) fn entry(root: &Path, rel: &str) -> std::io::Result<Option<Entry>> {
    match fs::symlink_metadata(root.join(rel)) {
        Ok(m) if m.file_type().is_file() => Ok(Some(Entry::File)),
        Ok(m) if m.file_type().is_symlink() => Ok(Some(Entry::Symlink)),
        Ok(_) => Ok(Some(Entry::Other)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`stat`] of many files of one folder, with one open folder and `fstatat` per
/// file, on up to two threads.
pub(super) fn stats(root: &Path, names: &[String]) -> Vec<Option<Stat>> {
    let Ok(dir) = File::open(root) else {
        return names.iter().map(|n| stat(root, n)).collect();
    };
    use std::os::fd::AsRawFd;
    let fd = dir.as_raw_fd();
    let one = |n: &String| -> Option<Stat> {
        if n.contains('/') {
            return stat(root, n);
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

/// Reads a file as bytes with its stat as it was when opened, refusing links and
/// files over `limit` bytes. `Ok(None)` when the file does not exist.
pub(super) fn read_stat(root: &Path, rel: &str, limit: u64) -> Result<Option<(Vec<u8>, Stat)>> {
    let Some((mut f, path)) = open_regular(root, rel)? else {
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
    Ok(Some((buf, Stat::of(&meta))))
}

/// Maps a file read-only ([`Bytes::Mapped`]), every page at once with `populate`,
/// refusing links and files over `limit` bytes; an empty file is an empty copy (an
/// empty mapping is an error on some systems). `Ok(None)` when the file does not
/// exist.
pub(super) fn map(root: &Path, rel: &str, limit: u64, populate: bool) -> Result<Option<Bytes>> {
    let Some((f, path)) = open_regular(root, rel)? else {
        return Ok(None);
    };
    let len = f.metadata().map_err(|e| Error::io(&path, e))?.len();
    if len > limit {
        return Err(Error::TooLarge {
            path,
            size: len,
            limit,
        });
    }
    if len == 0 {
        return Ok(Some(Bytes::Owned(Vec::new())));
    }
    // SAFETY: the map is read-only and private to this process. memdir replaces the
    // files it maps (the search index) only by renaming a new file over them, so
    // their bytes do not change while mapped; a program that rewrote one in place
    // could change what a decode sees (caught by the checksums, or an answer read
    // from a torn index, never memory unsafety in the bounds-checked decoder), and
    // one that truncated it could stop the process with SIGBUS
    // (spec/architecture.md#search-index).
    // Populated when every page will be read (by the checksums): mapped by one
    // call, where they would otherwise be faulted in one at a time.
    let mut options = memmap2::MmapOptions::new();
    if populate {
        options.populate();
    }
    let map = unsafe { options.map(&f) }.map_err(|e| Error::io(&path, e))?;
    Ok(Some(Bytes::Mapped(map)))
}

/// Replaces a file atomically: temp file, fsync, rename, fsync of the folder.
pub(super) fn write_atomic(root: &Path, rel: &str, data: &[u8]) -> Result<()> {
    let (path, dir) = writable_target(root, rel)?;
    // A dot name keeps the temp file out of scans, the DAG and the watcher.
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
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

/// Removes a file; a missing file is not an error, a FIFO, device or socket one.
pub(super) fn remove(root: &Path, rel: &str) -> Result<()> {
    check_parent(root, rel)?;
    let path = root.join(rel);
    // A FIFO, device or socket is not memdir's to remove.
    if fs::symlink_metadata(&path)
        .is_ok_and(|m| !m.is_file() && !m.is_dir() && !m.file_type().is_symlink())
    {
        return Err(not_regular(&path));
    }
    match fs::remove_file(&path) {
        Ok(()) => sync_dir(path.parent().unwrap_or(root)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Appends `data` (a line and its newline) with a single write, on a fresh line.
pub(super) fn append_line(root: &Path, rel: &str, mut data: Vec<u8>) -> Result<()> {
    let (path, _) = writable_target(root, rel)?;
    // Not through a link put there after the check above.
    let mut f = open_append(&path).map_err(|e| Error::io(&path, e))?;
    // A file that does not end in a newline (a torn line from a crash or a
    // hand edit) would glue our line to it; start on a fresh line instead.
    let meta = f.metadata().map_err(|e| Error::io(&path, e))?;
    if !meta.is_file() {
        return Err(not_regular(&path));
    }
    set_blocking(&f);
    let len = meta.len();
    if len > 0 && !ends_with_newline(&path, len)? {
        data.insert(0, b'\n');
    }
    f.write_all(&data).map_err(|e| Error::io(&path, e))?;
    f.sync_data().map_err(|e| Error::io(&path, e))?;
    Ok(())
}

/// Appends to a log, rotating it to `old` past `max_bytes`; every failure ignored.
pub(super) fn append_log(root: &Path, rel: &str, old: &str, data: &[u8], max_bytes: u64) {
    if !root.is_dir() {
        return;
    }
    let Ok((path, _)) = writable_target(root, rel) else {
        return;
    };
    // Only a regular file is the log: anything else in its place (a FIFO someone
    // made) is left where it is, neither rotated nor written to nor waited on.
    if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() > max_bytes)
        && check_parent(root, old).is_ok()
    {
        let _ = fs::rename(&path, root.join(old));
    }
    if let Ok(mut f) = open_append(&path)
        && f.metadata().is_ok_and(|m| m.is_file())
    {
        set_blocking(&f);
        let _ = f.write_all(data);
    }
}

/// Opens a file for appending, creating it, without following a link and without
/// waiting (O_NONBLOCK: a FIFO with no reader fails at once with ENXIO, one with a
/// reader opens, for the caller to refuse by its type).
fn open_append(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    o.open(path)
}

/// Replaces a file atomically with what `fill` writes, streamed, with the guarantees
/// of [`write_atomic`].
pub(super) fn write_atomic_with(
    root: &Path,
    rel: &str,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let (path, dir) = writable_target(root, rel)?;
    let tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
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

/// Copies a file to `to` atomically, streaming it. Fails if `from` does not exist.
pub(super) fn copy_atomic(root: &Path, from: &str, to: &str) -> Result<()> {
    let Some((mut src, path)) = open_regular(root, from)? else {
        return Err(Error::io(
            root.join(from),
            std::io::ErrorKind::NotFound.into(),
        ));
    };
    let mut read_err = None;
    let r = write_atomic_with(root, to, |w| {
        std::io::copy(&mut src, w)
            .map(|_| ())
            .inspect_err(|e| read_err = Some(std::io::Error::new(e.kind(), e.to_string())))
    });
    match (r, read_err) {
        (Err(_), Some(e)) => Err(Error::io(path, e)),
        (r, _) => r,
    }
}

/// Temp files directly in the folder `sub`, named with `prefix`, unsorted. A missing
/// or linked folder has none.
pub(super) fn temp_files(root: &Path, sub: &str, prefix: &str) -> Result<Vec<TempFile>> {
    let mut out = Vec::new();
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
    Ok(out)
}

/// Every regular file under the folder `sub`, recursively, relative to `sub`, sorted;
/// links are not followed, a missing folder is empty.
pub(super) fn files_under(root: &Path, sub: &str) -> Result<Vec<String>> {
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

/// Whether a regular file (not a link, not a folder) exists at `rel`.
pub(super) fn is_file(root: &Path, rel: &str) -> bool {
    fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.file_type().is_file())
}

/// Opens a regular file, refusing links and anything else. `Ok(None)` when it does
/// not exist. It opens without following a link (O_NOFOLLOW) and checks the opened
/// file itself: no window between a check and the open.
fn open_regular(root: &Path, rel: &str) -> Result<Option<(File, PathBuf)>> {
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
        return Err(not_regular(&path));
    }
    set_blocking(&f);
    Ok(Some((f, path)))
}

/// Whether the file holds exactly `bytes` (false when it is missing): its size
/// first, then its content streamed, never read whole; with the file's stat as it
/// was when opened, before its content was read (`None` when it is missing).
pub(super) fn holds(root: &Path, rel: &str, bytes: &[u8]) -> Result<(bool, Option<Stat>)> {
    let Some((mut f, path)) = open_regular(root, rel)? else {
        return Ok((false, None));
    };
    let stat = Stat::of(&f.metadata().map_err(|e| Error::io(&path, e))?);
    if stat.size != bytes.len() as u64 {
        return Ok((false, Some(stat)));
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut rest = bytes;
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(&path, e))?;
        if n == 0 {
            return Ok((rest.is_empty(), Some(stat)));
        }
        // A file that grew since its size was read holds something else.
        let Some((head, tail)) = rest.split_at_checked(n) else {
            return Ok((false, Some(stat)));
        };
        if head != &buf[..n] {
            return Ok((false, Some(stat)));
        }
        rest = tail;
    }
}

/// Size and SHA-256 of a file, read in chunks whatever its size (never whole).
/// `Ok(None)` when the file does not exist.
pub(super) fn digest(root: &Path, rel: &str) -> Result<Option<FileDigest>> {
    use sha2::Digest;
    let Some((mut f, path)) = open_regular(root, rel)? else {
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

/// Calls `f` on every line of a file, streaming it. Returns false when the file does
/// not exist.
pub(super) fn for_each_line(
    root: &Path,
    rel: &str,
    line_limit: u64,
    mut f: impl FnMut(Line<'_>),
) -> Result<bool> {
    let Some((file, path)) = open_regular(root, rel)? else {
        return Ok(false);
    };
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    stream_lines(&mut reader, line_limit, &mut f).map_err(|e| Error::io(&path, e))?;
    Ok(true)
}

/// Refuses a path whose folder inside the directory (`timeline/`, `.memdir/`, …) is
/// a symbolic link: following it would read or write outside the directory.
pub(super) fn check_parent(root: &Path, rel: &str) -> Result<()> {
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
    match fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => return Err(Error::Symlink { path }),
        // A FIFO, device or socket is not memdir's to replace.
        Ok(m) if !m.is_file() && !m.is_dir() => return Err(not_regular(&path)),
        _ => {}
    }
    Ok((path, dir))
}

/// Opens a file for reading, failing (ELOOP) if the last component is a link. It
/// never waits: a FIFO with no writer opens at once (O_NONBLOCK), for the caller to
/// refuse by its type ([`open_regular`]).
fn open_nofollow(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    o.open(path)
}

/// Clears O_NONBLOCK on a file found to be regular, whose reads and writes never wait
/// anyway, so it behaves as any other (every file the store opens without waiting;
/// the binary's `cli::input` keeps its own copy for the files a person names).
fn set_blocking(f: &File) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        // SAFETY: `fd` is open for the whole call; F_GETFL/F_SETFL take no pointer.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = f;
}

/// The error for a file that is there but is not a regular file (a FIFO, a device, a
/// socket, a folder): memdir neither reads it, nor writes through it, nor replaces it.
fn not_regular(path: &Path) -> Error {
    Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
    )
}

pub(super) fn is_link_error(e: &std::io::Error) -> bool {
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

#[cfg(test)]
mod tests {
    use crate::store::Backend;

    #[test]
    fn a_file_holds_exactly_its_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let b = Backend::Dir(tmp.path().to_path_buf());
        // Larger than the 64 KiB read buffer, so the comparison spans several reads.
        let text: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        b.write_atomic("MEMORY.md", &text).unwrap();
        assert!(b.holds("MEMORY.md", &text).unwrap().0);
        let mut other = text.clone();
        other[150_000] = b'!';
        assert!(!b.holds("MEMORY.md", &other).unwrap().0);
        assert!(!b.holds("MEMORY.md", &text[..text.len() - 1]).unwrap().0);
        let mut longer = text.clone();
        longer.push(b'z');
        assert!(!b.holds("MEMORY.md", &longer).unwrap().0);
        assert!(!b.holds("missing.md", b"").unwrap().0);
        // The stat of the file compared, whether or not it holds the bytes.
        let stat = b.stat("MEMORY.md");
        assert!(stat.is_some());
        assert_eq!(b.holds("MEMORY.md", &text).unwrap().1, stat);
        assert_eq!(b.holds("MEMORY.md", &other).unwrap().1, stat);
        assert_eq!(b.holds("missing.md", b"").unwrap().1, None);
    }
}
