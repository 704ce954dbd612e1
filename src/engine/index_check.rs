//! The MEMORY.md check (`.memdir/cache/index-check`): what MEMORY.md was last found to
//! hold, so that a one-shot `context` reads it instead of rendering it from every
//! record (spec/index-format.md#rebuild). The check names the store's contents (a
//! digest of every memory's key and content hash, which the index is a pure function
//! of) and MEMORY.md's stat when a render found it holding exactly their index. It
//! vouches only while MEMORY.md has that stat, and not for a file changed within
//! [`RACY_NS`] of the check, the search index's rule. Derived: a missing, damaged or
//! foreign check only costs a render. It must not write MEMORY.md.

use sha2::{Digest, Sha256};

use crate::memory::Record;
use crate::memory::layout::{INDEX_CHECK_FILE, INDEX_FILE, MAX_INDEX_CHECK, MAX_SEARCH_INDEX};
use crate::store::cache::RACY_NS;
use crate::store::{Backend, Stat};

/// What the check's first line says: this format, of this version of memdir (whose
/// index rendering it vouches for).
const HEADER: &str = concat!("memdir index-check 1 ", env!("CARGO_PKG_VERSION"));

/// The contents of a store: the SHA-256 of every memory's key and content key, in
/// record order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Contents(String);

/// The contents of `records`, whose files had the content keys `keys`; `None` when
/// the two do not pair up.
pub(super) fn contents(records: &[Record], keys: &[String]) -> Option<Contents> {
    if records.len() != keys.len() {
        return None;
    }
    let mut h = Sha256::new();
    for (r, k) in records.iter().zip(keys) {
        // Neither a key nor a content key holds a NUL or a newline.
        h.update(r.key.as_str().as_bytes());
        h.update([0]);
        h.update(k.as_bytes());
        h.update([b'\n']);
    }
    Some(Contents(data_encoding::HEXLOWER.encode(&h.finalize())))
}

/// MEMORY.md's text when the check vouches that it is the index of `contents`:
/// recorded for them, with the stat MEMORY.md has as it is read, and that stat older
/// than the check by more than the racy window.
pub(super) fn vouched(backend: &Backend, contents: &Contents) -> Option<String> {
    let (found, checked) = read(backend, contents)?;
    let (text, stat) = backend
        .read_text_stat(INDEX_FILE, MAX_SEARCH_INDEX)
        .ok()
        .flatten()?;
    let stat = stat?;
    (stat == found && stat.changed_ns() < checked - RACY_NS && text.len() as u64 == stat.size)
        .then_some(text)
}

/// Records that MEMORY.md, with the stat `stat` (taken at or after `checked`, before
/// its content was read), holds the index of `contents`. A check that cannot be
/// written is left out: the next call renders again.
pub(super) fn record(backend: &Backend, contents: &Contents, stat: &Stat, checked: i64) {
    let text = format!(
        "{HEADER}\n{}\n{} {} {} {} {checked}\n",
        contents.0, stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino
    );
    let _ = backend.write_atomic(INDEX_CHECK_FILE, text.as_bytes());
}

/// The stat and check time recorded for `contents`; `None` when the check is
/// missing, damaged, of another format or version, or for other contents.
fn read(backend: &Backend, contents: &Contents) -> Option<(Stat, i64)> {
    let text = backend
        .read_text(INDEX_CHECK_FILE, MAX_INDEX_CHECK)
        .ok()
        .flatten()?;
    let mut lines = text.split('\n');
    if lines.next()? != HEADER || lines.next()? != contents.0 {
        return None;
    }
    let mut nums = lines.next()?.split(' ');
    let mut num = || nums.next()?.parse::<i64>().ok();
    let (size, mtime_ns, ctime_ns, ino, checked) = (num()?, num()?, num()?, num()?, num()?);
    if nums.next().is_some() || !lines.next()?.is_empty() || lines.next().is_some() {
        return None;
    }
    let stat = Stat {
        size: u64::try_from(size).ok()?,
        mtime_ns,
        ctime_ns,
        ino: u64::try_from(ino).ok()?,
    };
    Some((stat, checked))
}

#[cfg(test)]
mod tests {
    use super::{contents, vouched};
    use crate::engine::testing::{dir_store, draft};
    use crate::engine::{ContextRequest, Memory};
    use crate::memory::index;
    use crate::memory::layout::INDEX_CHECK_FILE;

    /// Past the racy window of a file written now.
    fn wait_out_racy() {
        std::thread::sleep(std::time::Duration::from_millis(2100));
    }

    /// The contents of the store as a one-shot `context` loads them.
    fn loaded(mem: &Memory) -> (Vec<crate::memory::Record>, super::Contents) {
        let (snap, _, keys) = mem.load_records_keyed(true).unwrap();
        let c = contents(&snap.records, &keys).unwrap();
        (snap.records, c)
    }

    fn block(mem: &Memory) -> String {
        let mut req = ContextRequest::new(4096);
        req.query = Some("tea".into());
        mem.context(&req).unwrap().block.text
    }

    /// A store of one memory whose check vouches for MEMORY.md, with its contents.
    fn vouched_store() -> (tempfile::TempDir, Memory, super::Contents) {
        let (tmp, mem) = dir_store();
        mem.init().unwrap();
        mem.write(&draft("tea", "user", "green tea")).unwrap();
        wait_out_racy();
        block(&mem);
        let (_, c) = loaded(&mem);
        (tmp, mem, c)
    }

    /// The check vouches for MEMORY.md only for the contents it was recorded for, only
    /// while MEMORY.md has the stat it had, and never for a MEMORY.md changed within
    /// the racy window; a block built while it vouches is the block a render gives.
    #[test]
    fn the_check_vouches_only_for_its_contents_and_the_file_it_saw() {
        let (tmp, mem) = dir_store();
        let dir = tmp.path().join("m");
        mem.init().unwrap();
        for (k, body) in [("tea", "green tea at noon"), ("walk", "a walk with tea")] {
            mem.write(&draft(k, "user", body)).unwrap();
        }
        // Recorded just after MEMORY.md was written: racy, never vouched for.
        let first = block(&mem);
        let (records, c) = loaded(&mem);
        assert!(dir.join(INDEX_CHECK_FILE).is_file());
        assert_eq!(vouched(&mem.backend, &c), None);
        wait_out_racy();
        let rendered = block(&mem);
        assert_eq!(rendered, first);
        let text = vouched(&mem.backend, &c).expect("vouched once past the racy window");
        assert_eq!(text, index::render(&records));
        // The block read through the check is the rendered one.
        assert_eq!(block(&mem), rendered);

        // Other contents: a memory file changed behind memdir's back.
        let other = dir.join("walk.md");
        let t = std::fs::read_to_string(&other).unwrap();
        std::fs::write(
            &other,
            t.replace("a walk with tea", "a walk with tea, then rain"),
        )
        .unwrap();
        std::fs::write(
            dir.join("new.md"),
            "---\nname: new one\ndescription: fresh tea\ntype: user\n---\n\nnew tea\n",
        )
        .unwrap();
        let (records, c2) = loaded(&mem);
        assert_ne!(c2, c);
        assert_eq!(vouched(&mem.backend, &c2), None);
        let after = block(&mem);
        assert!(after.contains("new one"), "{after}");
        // MEMORY.md was rebuilt for the new contents, and the old check says nothing
        // of them.
        assert_eq!(
            std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
            index::render(&records)
        );
        assert_eq!(vouched(&mem.backend, &c), None);
    }

    /// A MEMORY.md rewritten after the check (even with the same bytes, even with
    /// its old modification time) is not vouched for: its stat is another.
    #[test]
    fn a_rewritten_index_is_not_vouched_for() {
        let (tmp, mem, c) = vouched_store();
        let dir = tmp.path().join("m");
        let text = vouched(&mem.backend, &c).expect("vouched");
        let path = dir.join("MEMORY.md");
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        // Replaced by a copy with the same bytes and times: another inode and ctime.
        let tmp_copy = dir.join("MEMORY.md.copy");
        std::fs::write(&tmp_copy, &text).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&tmp_copy)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        std::fs::rename(&tmp_copy, &path).unwrap();
        assert_eq!(vouched(&mem.backend, &c), None);
        // Edited in place by a person, same length: not vouched for, and the block
        // shows the index of the memories, not the edit.
        wait_out_racy();
        block(&mem);
        assert!(vouched(&mem.backend, &c).is_some());
        let edited = text.replacen("tea", "TEA", 1);
        assert_eq!(edited.len(), text.len());
        std::fs::write(&path, &edited).unwrap();
        assert_eq!(vouched(&mem.backend, &c), None);
        let b = block(&mem);
        assert!(!b.contains("TEA"), "{b}");
    }

    /// A check that is damaged, cut short, of another version or names other
    /// contents vouches for nothing.
    #[test]
    fn a_damaged_or_foreign_check_vouches_for_nothing() {
        let (tmp, mem, c) = vouched_store();
        let dir = tmp.path().join("m");
        assert!(vouched(&mem.backend, &c).is_some());
        let good = std::fs::read_to_string(dir.join(INDEX_CHECK_FILE)).unwrap();
        let damaged = [
            good[..good.len() - 1].to_string(),
            good[..good.len() / 2].to_string(),
            good.replacen("index-check 1", "index-check 2", 1),
            good.replacen(env!("CARGO_PKG_VERSION"), "0.0.0-other", 1),
            format!("{good}extra\n"),
            good.replacen(&c.0, &"0".repeat(64), 1),
            good.replace(' ', "  "),
            String::from_utf8_lossy(&[0xff, 0xfe, 0x00]).into_owned(),
            String::new(),
        ];
        for d in damaged {
            std::fs::write(dir.join(INDEX_CHECK_FILE), &d).unwrap();
            assert_eq!(vouched(&mem.backend, &c), None, "{d:?}");
        }
        // The next render records it again.
        block(&mem);
        assert!(vouched(&mem.backend, &c).is_some());
    }
}
