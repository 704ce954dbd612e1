//! The parse cache under `.memdir/cache/` is invisible: edits that keep the size and
//! the modification time are seen, and deleting or corrupting the cache loses nothing.

use std::time::SystemTime;

use memdir::{Clock, Draft, Memory};

fn mem(dir: &std::path::Path) -> Memory {
    Memory::open(dir)
        .unwrap()
        .with_clock(Clock::fixed("2026-04-14T12:00:00Z".parse().unwrap()))
}

fn body_of(dir: &std::path::Path, key: &str) -> String {
    let snap = mem(dir).load().unwrap();
    snap.records
        .iter()
        .find(|r| r.key.as_str() == key)
        .unwrap()
        .body
        .clone()
}

#[test]
fn same_size_same_mtime_edits_are_seen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let m = mem(&dir);
    m.write(&Draft {
        key: "k".into(),
        name: "Nimbus".into(),
        description: "d".into(),
        kind: "user".into(),
        body: "aaaa".into(),
        ..Draft::default()
    })
    .unwrap();
    assert_eq!(body_of(&dir, "k"), "aaaa");
    assert!(
        dir.join(memdir::memory::layout::PARSE_CACHE_FILE).exists(),
        "the load wrote no cache"
    );
    let path = dir.join("k.md");
    let mtime: SystemTime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // Same length, other frontmatter value and body, same modification time.
    let edited = text
        .replace("name: Nimbus", "name: Mimbus")
        .replace("aaaa", "bbbb");
    assert_eq!(edited.len(), text.len());
    std::fs::write(&path, &edited).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    let snap = mem(&dir).load().unwrap();
    assert_eq!(snap.records[0].meta.name, "Mimbus");
    assert_eq!(snap.records[0].body, "bbbb");
}

#[test]
fn a_deleted_or_corrupt_cache_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let m = mem(&dir);
    for i in 0..20 {
        m.write(&Draft {
            key: format!("k{i}"),
            name: format!("N{i}"),
            description: "d".into(),
            kind: "project".into(),
            body: format!("body {i}"),
            tags: Some(vec!["t".into()]),
            ..Draft::default()
        })
        .unwrap();
    }
    let before = m.load().unwrap().records;
    let cache = dir.join(memdir::memory::layout::PARSE_CACHE_FILE);
    for garbage in [
        &b"not json"[..],
        b"{\"version\":\"0.1.0\",\"entries\":{\"x\":1}}",
        b"",
    ] {
        std::fs::write(&cache, garbage).unwrap();
        assert_eq!(mem(&dir).load().unwrap().records, before);
    }
    std::fs::remove_file(&cache).unwrap();
    assert_eq!(mem(&dir).load().unwrap().records, before);
    // And from the cache, the same records as from the files.
    assert!(cache.exists());
    assert_eq!(mem(&dir).load().unwrap().records, before);
}
