//! The in-memory side of [`Backend`](super::Backend) (the `none` mode): the map of
//! relative path → bytes that stands in for the directory, gone with the process. It
//! must not touch the file system; it answers what the directory side answers, so the
//! engine cannot tell the two apart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::store::lines::{Line, stream_lines};
use crate::store::{Found, TempFile, is_temp_name};

/// The files of the `none` mode, by path relative to the (absent) directory.
pub(super) type Files = BTreeMap<String, Vec<u8>>;

/// What stands for the directory in messages.
pub(super) const ROOT: &str = "(memory)";

/// The path of a file for messages.
pub(super) fn display_path(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

/// The map, locked (a poisoned lock is taken over: the map stays consistent).
pub(super) fn lock(m: &Mutex<Files>) -> MutexGuard<'_, Files> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The files directly under `prefix` (`sub/`, or nothing) whose names `keep`
/// accepts, sorted by name.
pub(super) fn scan(m: &Files, prefix: &str, keep: impl Fn(&str) -> bool) -> Vec<Found> {
    m.keys()
        .filter_map(|k| k.strip_prefix(prefix).map(|n| (k, n)))
        .filter(|(_, n)| !n.contains('/') && keep(n))
        .map(|(k, _)| Found::File(k.clone()))
        .collect()
}

/// A file's bytes, refusing one over `limit` bytes. `Ok(None)` when it does not exist.
pub(super) fn read(m: &Files, rel: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    match m.get(rel) {
        None => Ok(None),
        Some(b) if b.len() as u64 > limit => Err(Error::TooLarge {
            path: display_path(rel),
            size: b.len() as u64,
            limit,
        }),
        Some(b) => Ok(Some(b.clone())),
    }
}

/// Appends bytes to a file, rotating it to `old` first when it is past `max_bytes`.
pub(super) fn append_log(m: &mut Files, rel: &str, old: &str, data: &[u8], max_bytes: u64) {
    if m.get(rel).is_some_and(|b| b.len() as u64 > max_bytes)
        && let Some(b) = m.remove(rel)
    {
        m.insert(old.to_string(), b);
    }
    m.entry(rel.to_string())
        .or_default()
        .extend_from_slice(data);
}

/// Calls `f` on every line of a file. Returns false when the file does not exist.
pub(super) fn for_each_line(
    m: &Files,
    rel: &str,
    line_limit: u64,
    mut f: impl FnMut(Line<'_>),
) -> Result<bool> {
    let Some(bytes) = m.get(rel) else {
        return Ok(false);
    };
    let mut reader = std::io::Cursor::new(bytes.as_slice());
    stream_lines(&mut reader, line_limit, &mut f).map_err(|e| Error::io(display_path(rel), e))?;
    Ok(true)
}

/// Temp files directly under `prefix`, unsorted.
pub(super) fn temp_files(m: &Files, prefix: &str) -> Vec<TempFile> {
    let mut out = Vec::new();
    for k in m.keys() {
        if let Some(n) = k.strip_prefix(prefix)
            && !n.contains('/')
            && is_temp_name(n)
        {
            out.push(TempFile {
                rel: k.clone(),
                modified: None,
            });
        }
    }
    out
}

/// Every file under `prefix`, relative to it, sorted.
pub(super) fn files_under(m: &Files, prefix: &str) -> Vec<String> {
    m.keys()
        .filter_map(|k| k.strip_prefix(prefix).map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use crate::store::Backend;
    use crate::store::FileDigest;

    #[test]
    fn the_memory_backend_streams_digests_and_copies_too() {
        let b = Backend::Mem(Mutex::new(BTreeMap::new()));
        b.write_atomic("MEMORY.md", b"x\ny\n").unwrap();
        assert_eq!(
            b.digest("MEMORY.md").unwrap(),
            Some(FileDigest::of(b"x\ny\n"))
        );
        assert_eq!(b.digest("nope").unwrap(), None);
        assert!(b.holds("MEMORY.md", b"x\ny\n").unwrap().0);
        assert!(!b.holds("MEMORY.md", b"x\ny").unwrap().0);
        assert!(!b.holds("nope", b"").unwrap().0);
        b.copy_atomic("MEMORY.md", ".memdir/backups/a").unwrap();
        assert_eq!(b.read(".memdir/backups/a", 10).unwrap().unwrap(), b"x\ny\n");
        b.write_atomic(".memdir/cache/.memdir-1.tmp", b"").unwrap();
        let t = b.temp_files(".memdir/cache").unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].rel, ".memdir/cache/.memdir-1.tmp");
        assert_eq!(b.files_under(".memdir/backups").unwrap(), ["a"]);
    }
}
