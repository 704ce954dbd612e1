//! The search index under `.memdir/cache/` is invisible: edits that keep the size and
//! the modification time are seen, files the index vouches for by their stat are not
//! read, an edit made while queries run is seen by the next call, and deleting or
//! corrupting the index loses nothing (spec/architecture.md#search-index).

use std::time::SystemTime;

use memdir::{Clock, ContextRequest, Draft, ListRequest, Memory, RecallRequest};

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
        .to_string()
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
        dir.join(memdir::memory::layout::SEARCH_INDEX_FILE).exists(),
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
    let cache = dir.join(memdir::memory::layout::SEARCH_INDEX_FILE);
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

fn write_raw(dir: &std::path::Path, key: &str, name: &str, body: &str) {
    std::fs::write(
        dir.join(format!("{key}.md")),
        format!(
            "---\nname: {name}\ndescription: about {name}\ntype: project\ncreated: 2026-04-01\nupdated: 2026-04-01\n---\n\n{body}\n"
        ),
    )
    .unwrap();
}

/// A store whose files are older than the index's margin for recent changes, so
/// that the index vouches for them by stat.
fn settled_store(n: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    mem(&dir).init().unwrap();
    for i in 0..n {
        write_raw(
            &dir,
            &format!("k{i}"),
            &format!("Note {i}"),
            &format!("line one of {i}\nzebra {i} and more"),
        );
    }
    // memdir reads a file again while its times are within two seconds of the
    // moment it was last read (spec/architecture.md#search-index).
    std::thread::sleep(std::time::Duration::from_millis(2100));
    (tmp, dir)
}

/// `memdir index --search` reports what the whole command read, parsed and analyzed:
/// from no index, every file, though MEMORY.md's rebuild loads them too.
#[test]
fn index_search_reports_the_work_of_the_whole_command() {
    use crate::common::{memdir, run};
    let (_tmp, dir) = settled_store(12);
    let report = || {
        let o = run(memdir(&dir).args(["--json", "index", "--search"]));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let s = &v["search"];
        let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
        (n("vouched"), n("read"), n("parsed"), n("analyzed"))
    };
    assert_eq!(report(), (0, 12, 12, 12));
    assert_eq!(report(), (12, 0, 0, 0));
    std::fs::remove_dir_all(dir.join(".memdir/cache")).unwrap();
    assert_eq!(report(), (0, 12, 12, 12));
    let text = run(memdir(&dir).args(["index", "--search"]));
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("search index: 12 memories (12 unchanged, 0 read, 0 parsed, 0 analyzed)"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}

#[test]
fn unchanged_files_are_vouched_for_and_changed_ones_read() {
    let (_tmp, dir) = settled_store(30);
    let first = mem(&dir).search_index().unwrap();
    assert_eq!((first.memories, first.read, first.parsed), (30, 30, 30));
    let second = mem(&dir).search_index().unwrap();
    assert_eq!(
        (second.vouched, second.read, second.analyzed),
        (30, 0, 0),
        "{second:?}"
    );
    // Calls without a query skip the term data and never drop it: after an edit
    // seen by them, a query analyzes that file alone.
    write_raw(&dir, "k5", "Five", "a changed body");
    mem(&dir).list(&ListRequest::new()).unwrap();
    mem(&dir).context(&ContextRequest::new(2000)).unwrap();
    let kept = mem(&dir).search_index().unwrap();
    assert_eq!((kept.parsed, kept.analyzed), (0, 1), "{kept:?}");
    // One edit: that file alone is read, parsed and analyzed again, and seen.
    write_raw(&dir, "k7", "Seven", "rewritten body about a walrus");
    let third = mem(&dir).search_index().unwrap();
    assert_eq!(
        (third.vouched, third.read, third.parsed, third.analyzed),
        (28, 2, 1, 1),
        "{third:?}"
    );
    let hits = mem(&dir)
        .recall(&RecallRequest::new("walrus", 5))
        .unwrap()
        .hits;
    assert_eq!(
        hits.iter().map(|h| h.key.as_str()).collect::<Vec<_>>(),
        ["k7"]
    );
    // A removed file is gone, a new one found.
    std::fs::remove_file(dir.join("k3.md")).unwrap();
    write_raw(&dir, "k99", "New", "a narwhal");
    let fourth = mem(&dir).search_index().unwrap();
    assert_eq!(fourth.memories, 30);
    assert!(
        mem(&dir)
            .recall(&RecallRequest::new("zebra 3", 50))
            .unwrap()
            .hits
            .iter()
            .all(|h| h.key != "k3")
    );
    assert_eq!(
        mem(&dir)
            .recall(&RecallRequest::new("narwhal", 5))
            .unwrap()
            .hits[0]
            .key,
        "k99"
    );
    // The delta file holds the changes; the main file was not rewritten.
    assert!(dir.join(memdir::memory::layout::SEARCH_DELTA_FILE).exists());
}

#[test]
fn a_removal_alone_is_recorded_by_the_next_read() {
    // spec/architecture.md#search-index: nothing else changed, yet the index must
    // stop holding the removed file (a read that finds all the rest as loaded is
    // not "unchanged").
    let (_tmp, dir) = settled_store(12);
    mem(&dir).search_index().unwrap();
    let delta = dir.join(memdir::memory::layout::SEARCH_DELTA_FILE);
    assert!(!delta.exists());
    std::fs::remove_file(dir.join("k3.md")).unwrap();
    mem(&dir).list(&ListRequest::new()).unwrap();
    assert!(delta.exists(), "the removal was not recorded");
    let after = std::fs::read(&delta).unwrap();
    // Recorded once: the next read finds nothing new to write.
    let next = mem(&dir).search_index().unwrap();
    assert_eq!((next.memories, next.vouched, next.read), (11, 11, 0));
    assert_eq!(std::fs::read(&delta).unwrap(), after);
}

#[test]
fn a_one_shot_context_rebuilds_a_stale_memory_md() {
    // spec/index-format.md#rebuild: MEMORY.md is checked (and rebuilt) while the block
    // is scored; the block shows the index as rebuilt, and so does the file.
    let (_tmp, dir) = settled_store(4);
    let index = dir.join("MEMORY.md");
    for (i, query) in [None, Some("walrus")].into_iter().enumerate() {
        let key = format!("fresh{i}");
        write_raw(&dir, &key, &format!("Fresh {i}"), "a walrus was here");
        let before = std::fs::read_to_string(&index).unwrap_or_default();
        assert!(!before.contains(&key));
        let block = mem(&dir)
            .context(&ContextRequest {
                query: query.map(Into::into),
                ..ContextRequest::new(4000)
            })
            .unwrap()
            .block;
        let after = std::fs::read_to_string(&index).unwrap();
        assert!(after.contains(&format!("({key}.md)")), "{query:?}: {after}");
        assert!(block.text.contains(&format!("({key}.md)")), "{query:?}");
    }
}

#[test]
fn a_same_size_edit_inside_the_margin_is_seen() {
    let (_tmp, dir) = settled_store(3);
    mem(&dir).search_index().unwrap();
    // Edit, then read at once (inside the margin): read again, not vouched for.
    let path = dir.join("k1.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let edited = text.replace("zebra 1", "okapi 1");
    assert_eq!(edited.len(), text.len());
    std::fs::write(&path, &edited).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let r = mem(&dir).search_index().unwrap();
    assert_eq!(r.read, 1, "{r:?}");
    assert_eq!(
        mem(&dir)
            .recall(&RecallRequest::new("okapi", 5))
            .unwrap()
            .hits[0]
            .key,
        "k1"
    );
    // And again on the next call, as long as the change is recent.
    let again = mem(&dir).search_index().unwrap();
    assert_eq!(again.read, 1, "{again:?}");
    assert_eq!(again.parsed, 0, "{again:?}");
}

#[test]
fn damaged_index_files_are_ignored_and_rebuilt() {
    let (_tmp, dir) = settled_store(12);
    let m = mem(&dir);
    m.search_index().unwrap();
    write_raw(&dir, "k2", "Two", "a changed body");
    m.search_index().unwrap();
    let want = m.load().unwrap().records;
    let want_hits = m
        .recall(&RecallRequest::new("changed body", 5))
        .unwrap()
        .hits;
    let main = dir.join(memdir::memory::layout::SEARCH_INDEX_FILE);
    let delta = dir.join(memdir::memory::layout::SEARCH_DELTA_FILE);
    let good_main = std::fs::read(&main).unwrap();
    let good_delta = std::fs::read(&delta).unwrap();
    for (file, good) in [(&main, &good_main), (&delta, &good_delta)] {
        for damage in [0usize, 5, good.len() / 2, good.len() - 1] {
            let mut bad = good.clone();
            bad[damage] ^= 0x5a;
            std::fs::write(file, &bad).unwrap();
            assert_eq!(
                mem(&dir).load().unwrap().records,
                want,
                "damage at {damage}"
            );
            assert_eq!(
                mem(&dir)
                    .recall(&RecallRequest::new("changed body", 5))
                    .unwrap()
                    .hits,
                want_hits
            );
            std::fs::write(&main, &good_main).unwrap();
            std::fs::write(&delta, &good_delta).unwrap();
        }
        std::fs::write(file, b"").unwrap();
        assert_eq!(mem(&dir).load().unwrap().records, want);
        std::fs::write(&main, &good_main).unwrap();
        std::fs::write(&delta, &good_delta).unwrap();
    }
    // A delta written against another main file is ignored.
    std::fs::remove_file(&main).unwrap();
    assert_eq!(
        mem(&dir)
            .recall(&RecallRequest::new("changed body", 5))
            .unwrap()
            .hits,
        want_hits
    );
    std::fs::remove_dir_all(dir.join(".memdir/cache")).unwrap();
    assert_eq!(mem(&dir).load().unwrap().records, want);
    assert_eq!(
        mem(&dir)
            .recall(&RecallRequest::new("changed body", 5))
            .unwrap()
            .hits,
        want_hits
    );
}

#[test]
fn the_delta_is_folded_into_the_main_file_when_it_grows() {
    let (_tmp, dir) = settled_store(300);
    let m = mem(&dir);
    m.search_index().unwrap();
    let main = dir.join(memdir::memory::layout::SEARCH_INDEX_FILE);
    let delta = dir.join(memdir::memory::layout::SEARCH_DELTA_FILE);
    let before = std::fs::read(&main).unwrap();
    for i in 0..10 {
        write_raw(&dir, &format!("k{i}"), "Changed", &format!("edit {i}"));
    }
    m.search_index().unwrap();
    assert_eq!(
        std::fs::read(&main).unwrap(),
        before,
        "ten edits rewrote the main file"
    );
    assert!(delta.exists());
    for i in 0..300 {
        write_raw(
            &dir,
            &format!("k{i}"),
            "Changed again",
            &format!("second edit {i}"),
        );
    }
    m.search_index().unwrap();
    assert_ne!(std::fs::read(&main).unwrap(), before);
    assert!(!delta.exists(), "the delta was not folded");
    let hits = m
        .recall(&RecallRequest::new("second edit 250", 3))
        .unwrap()
        .hits;
    assert_eq!(hits[0].key, "k250");
}

/// A read that keeps only the records (recall, context) reads each vouched-for
/// body in place, a slice of its saved text in the mapped index; a new main file
/// written by such a read still holds every file's exact text.
#[test]
fn a_main_file_written_by_a_query_holds_the_exact_texts() {
    let (_tmp, dir) = settled_store(300);
    let m = mem(&dir);
    assert_eq!(
        m.recall(&RecallRequest::new("zebra 7", 1)).unwrap().hits[0].key,
        "k7"
    );
    // k0..k39 stay vouched for by stat; the rest change, so the next query folds
    // everything into a new main file.
    for i in 40..300 {
        write_raw(
            &dir,
            &format!("k{i}"),
            "Changed",
            &format!("edit {i}\n\n  tail  "),
        );
    }
    let main = dir.join(memdir::memory::layout::SEARCH_INDEX_FILE);
    let before = std::fs::read(&main).unwrap();
    assert_eq!(
        m.recall(&RecallRequest::new("zebra 7", 1)).unwrap().hits[0].key,
        "k7"
    );
    let index = std::fs::read(&main).unwrap();
    assert_ne!(index, before, "the query did not write a new main file");
    for i in 0..300 {
        let text = std::fs::read(dir.join(format!("k{i}.md"))).unwrap();
        assert!(
            index.windows(text.len()).any(|w| w == text),
            "k{i}'s text is not in the index as it is on disk"
        );
    }
    // And a later load reads the bodies from it.
    for i in [0, 39] {
        let want = format!("line one of {i}\nzebra {i} and more");
        assert_eq!(body_of(&dir, &format!("k{i}")), want);
    }
    for i in [40, 299] {
        assert_eq!(
            body_of(&dir, &format!("k{i}")),
            format!("edit {i}\n\n  tail")
        );
    }
}

/// Queries in other processes while files change under them: every call answers
/// (exit 0), and once the edits stop the next call sees exactly the files.
#[test]
fn edits_made_while_queries_run_are_seen() {
    let (_tmp, dir) = settled_store(200);
    mem(&dir).search_index().unwrap();
    // Queries answered so far by both readers: each write waits for one more, so
    // the edits and the queries interleave however loaded the machine is.
    let readers = Readers::start(
        &dir,
        [
            &["recall", "zebra"],
            &["context", "--query", "zebra edit", "--max-tokens", "2000"],
        ],
        200,
    );
    // Same-size rewrites, each while the readers' queries run.
    let mut seen = readers.answered_past(0);
    for round in 0..40 {
        let k = round % 10;
        write_raw(
            &dir,
            &format!("k{k}"),
            &format!("Note {k}"),
            &format!("line one of {k}\nzebra {k} r{round:02}"),
        );
        seen = readers.answered_past(seen);
    }
    let calls = readers.stop();
    assert!(calls > 40, "only {calls} queries ran beside the 40 edits");
    let got = mem(&dir).load().unwrap().records;
    std::fs::remove_dir_all(dir.join(".memdir/cache")).unwrap();
    let fresh = mem(&dir).load().unwrap().records;
    assert_eq!(got, fresh);
    for k in 0..10 {
        let r = got
            .iter()
            .find(|r| r.key.as_str() == format!("k{k}"))
            .unwrap();
        let last = (0..40).filter(|round| round % 10 == k).max().unwrap();
        assert!(
            r.body.ends_with(&format!("r{last:02}")),
            "{}: {}",
            r.key,
            r.body
        );
    }
}

/// The index files rebuilt and renamed over while other processes query them (issue
/// 30): the main file and the delta (and every other time the postings) are removed
/// again and again, each time rebuilt by
/// `index --search` and by whichever reader comes first, so readers map files that are
/// being replaced, and several processes write them at once. The store does not
/// change, so every answer must be the one a fresh index gives, scores and term
/// counts included (a reader that mixed the counts of one file with the entries of
/// another would answer differently).
#[test]
fn queries_beside_index_rebuilds_answer_as_a_fresh_index() {
    use crate::common::{memdir, run};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let (_tmp, dir) = settled_store(300);
    let recall: &[&str] = &["recall", "zebra line 17", "--json"];
    let context: &[&str] = &["context", "--query", "zebra one", "--max-tokens", "1500"];
    let answer = |args: &[&str]| {
        let o = run(memdir(&dir).args(args));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    // What a fresh index answers (built by the first call), then a second time.
    let want = [answer(recall), answer(context)];
    assert_eq!([answer(recall), answer(context)], want);
    let main = dir.join(memdir::memory::layout::SEARCH_INDEX_FILE);
    let delta = dir.join(memdir::memory::layout::SEARCH_DELTA_FILE);
    let postings = dir.join(memdir::memory::layout::SEARCH_POSTINGS_FILE);
    assert!(postings.is_file(), "a fresh index has its postings");
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let done = std::sync::Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (dir, want) = (dir.clone(), want.clone());
            let (stop, done) = (stop.clone(), done.clone());
            std::thread::spawn(move || {
                let mut wrong = 0;
                let mut calls = 0;
                while !stop.load(Ordering::Relaxed) && calls < 150 {
                    let args = if (r + calls) % 2 == 0 {
                        recall
                    } else {
                        context
                    };
                    let o = run(memdir(&dir).args(args));
                    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                    wrong += usize::from(o.stdout != want[(r + calls) % 2]);
                    calls += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                (calls, wrong)
            })
        })
        .collect();
    let mut rebuilt = 0;
    for _ in 0..20 {
        // Each round waits for the readers to answer twice more (at most a minute).
        let seen = done.load(Ordering::Relaxed);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while done.load(Ordering::Relaxed) < seen + 2 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let _ = std::fs::remove_file(&delta);
        let _ = std::fs::remove_file(&main);
        // Every other round the postings are lost too; in the others the new main
        // file's are written beside the old ones' (readers meet a pair of files of
        // different generations).
        if rebuilt % 2 == 1 {
            let _ = std::fs::remove_file(&postings);
        }
        let o = run(memdir(&dir).args(["index", "--search"]));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        rebuilt += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let (calls, wrong) = readers
        .into_iter()
        .map(|h| h.join().unwrap())
        .fold((0, 0), |(c, w), (c2, w2)| (c + c2, w + w2));
    assert!(
        calls >= 40,
        "only {calls} queries ran beside {rebuilt} rebuilds"
    );
    assert_eq!(
        wrong, 0,
        "{wrong} of {calls} answers differed from a fresh index's"
    );
    // And the index left behind answers as a fresh one.
    assert_eq!([answer(recall), answer(context)], want);
}

/// A memory kept warm answers exactly as a fresh load does, through edits (same size
/// or not), additions and removals, files that do not parse or are links, inside and
/// outside the margin for recent changes: by change events (the default where they
/// can be trusted) and by stat.
#[test]
fn a_warm_memory_answers_as_a_fresh_one() {
    warm_agrees_with_fresh(|m| m.keep_warm(), 7);
}

#[test]
fn a_warm_memory_by_stat_answers_as_a_fresh_one() {
    warm_agrees_with_fresh(|m| m.keep_warm_by_stat(), 11);
}

fn warm_agrees_with_fresh(keep: impl Fn(Memory) -> Memory, seed: u64) {
    let (tmp, dir) = settled_store(40);
    let outside = tmp.path().join("outside.md");
    std::fs::write(&outside, "not a memory of this folder\n").unwrap();
    let warm = keep(mem(&dir));
    let mut rng = crate::common::Lcg(seed);
    let filter = memdir::Filter::default();
    let check = |round: usize| {
        let fresh = mem(&dir);
        for q in ["zebra 3", "walrus", "line one", "Note 12"] {
            let recall = RecallRequest::new(q, 10);
            let (w, f) = (
                warm.recall(&recall).unwrap(),
                fresh.recall(&recall).unwrap(),
            );
            assert_eq!(
                (w.hits, w.problems),
                (f.hits, f.problems),
                "recall {q:?}, round {round}"
            );
            let context = ContextRequest::new(1500)
                .with_query(q)
                .with_filter(filter.clone());
            let (w, f) = (
                warm.context(&context).unwrap(),
                fresh.context(&context).unwrap(),
            );
            assert_eq!(
                (w.block, w.problems),
                (f.block, f.problems),
                "context and problems {q:?}, round {round}"
            );
        }
    };
    check(0);
    for round in 1..=60 {
        let k = rng.next() % 50;
        let path = dir.join(format!("k{k}.md"));
        match rng.next() % 8 {
            0 => {
                let _ = std::fs::remove_file(&path);
            }
            1 => write_raw(
                &dir,
                &format!("k{k}"),
                "Walrus",
                &format!("a walrus, round {round}"),
            ),
            // A file that does not parse, then (some rounds later) fixed or removed.
            2 => {
                let _ = std::fs::remove_file(&path);
                std::fs::write(&path, "---\nname: [unclosed\n---\nwalrus\n").unwrap();
            }
            // A link where a memory was: reported, not followed.
            3 => {
                let _ = std::fs::remove_file(&path);
                std::os::unix::fs::symlink(&outside, &path).unwrap();
            }
            _ => {
                let _ = std::fs::remove_file(&path);
                write_raw(
                    &dir,
                    &format!("k{k}"),
                    &format!("Note {k}"),
                    &format!("line one of {k}\nzebra {k} r{round:02}"),
                )
            }
        }
        check(round);
    }
    // Settled again: the warm memory keeps what it has and still agrees.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    check(61);
    let _ = std::fs::remove_file(dir.join("k1.md"));
    write_raw(&dir, "k1", "Walrus", "walrus after the pause");
    check(62);
}

/// What a store answers: `recall` hits (as JSON, scores included) and the `context`
/// block for a query.
fn answers(dir: &std::path::Path) -> String {
    let m = mem(dir);
    let q = "zebra walrus line";
    let r = m.recall(&RecallRequest::new(q, 10)).unwrap();
    let c = m
        .context(&ContextRequest {
            query: Some(q.into()),
            ..ContextRequest::new(1500)
        })
        .unwrap();
    format!(
        "{}\n{}",
        serde_json::to_string(&r.hits).unwrap(),
        c.block.text
    )
}

// Issue 31 item 6: every part of the index files carries a checksum. One bit
// flipped at any byte of the main file, of the delta or of the postings file
// (issue 30) is never trusted: the
// answers are those of a fresh index, and neither `index --search` nor
// `check --fix` writes the damaged entry forward; a truncated file is rebuilt.
#[test]
fn a_flipped_bit_anywhere_in_the_index_changes_no_answer() {
    let (_tmp, dir) = settled_store(5);
    mem(&dir).search_index().unwrap();
    write_raw(&dir, "k2", "Two", "a walrus body\nzebra 2 again");
    mem(&dir).search_index().unwrap();
    // Settled again, so that the delta's entry is vouched for by its stat too.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    mem(&dir).search_index().unwrap();
    let main = dir.join(memdir::memory::layout::SEARCH_INDEX_FILE);
    let delta = dir.join(memdir::memory::layout::SEARCH_DELTA_FILE);
    let postings = dir.join(memdir::memory::layout::SEARCH_POSTINGS_FILE);
    let good_main = std::fs::read(&main).unwrap();
    let good_delta = std::fs::read(&delta).unwrap();
    let good_postings = std::fs::read(&postings).unwrap();
    let want = answers(&dir);
    let restore = || {
        std::fs::write(&main, &good_main).unwrap();
        std::fs::write(&delta, &good_delta).unwrap();
        std::fs::write(&postings, &good_postings).unwrap();
    };
    // A fresh index answers the same.
    std::fs::remove_dir_all(dir.join(".memdir/cache")).unwrap();
    assert_eq!(answers(&dir), want);
    restore();
    let mut wrong = Vec::new();
    let mut trials = 0;
    for (file, good) in [
        (&main, &good_main),
        (&delta, &good_delta),
        (&postings, &good_postings),
    ] {
        // About 120 byte offsets spread over each file (a main file of 3.5 KB and a
        // delta of 0.8 KB here: every 30th and every 7th byte), one bit each (which bit
        // varies with the offset). Bounded so that the test takes seconds, not the
        // minutes every offset takes (all of them pass too).
        for (i, at) in (0..good.len()).step_by(good.len() / 120 + 1).enumerate() {
            trials += 3;
            let mut bad = good.clone();
            bad[at] ^= 1 << (i % 8);
            for then in ["answer", "index --search", "check --fix"] {
                std::fs::write(file, &bad).unwrap();
                match then {
                    "index --search" => drop(mem(&dir).search_index().unwrap()),
                    "check --fix" => drop(mem(&dir).check(true).unwrap()),
                    _ => {}
                }
                if answers(&dir) != want {
                    wrong.push(format!("{} byte {at} then {then}", file.display()));
                }
                restore();
            }
        }
        // Truncated anywhere: the same answers, and the index is whole again after.
        for cut in (0..good.len()).step_by(good.len() / 23 + 1) {
            std::fs::write(file, &good[..cut]).unwrap();
            assert_eq!(answers(&dir), want, "{} cut at {cut}", file.display());
            let r = mem(&dir).search_index().unwrap();
            assert_eq!((r.vouched, r.read), (5, 0), "cut at {cut}: {r:?}");
            restore();
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {trials} trials answered differently: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
}

/// The postings beside the main index file (spec/architecture.md#search-index): written
/// with it, written again by the next read when lost, and of no effect on any answer
/// (a one-shot query through them answers as the scan of every memory).
#[test]
fn lost_postings_are_written_again_and_change_no_answer() {
    let (_tmp, dir) = settled_store(40);
    let postings = dir.join(memdir::memory::layout::SEARCH_POSTINGS_FILE);
    let first = mem(&dir).search_index().unwrap();
    assert!(postings.is_file(), "written with the main file");
    let size = std::fs::metadata(&postings).unwrap().len();
    let main = std::fs::metadata(dir.join(memdir::memory::layout::SEARCH_INDEX_FILE)).unwrap();
    assert!(
        first.bytes >= size + main.len(),
        "{} bytes reported",
        first.bytes
    );
    let want = answers(&dir);
    std::fs::remove_file(&postings).unwrap();
    // Without them, the scan: the same answers; and the read writes them again.
    assert_eq!(answers(&dir), want);
    assert_eq!(std::fs::metadata(&postings).unwrap().len(), size);
    assert_eq!(answers(&dir), want);
    // Postings of another main file (a rebuild's) are not read.
    let old = std::fs::read(&postings).unwrap();
    std::fs::remove_file(dir.join(memdir::memory::layout::SEARCH_INDEX_FILE)).unwrap();
    mem(&dir).search_index().unwrap();
    let new = std::fs::read(&postings).unwrap();
    assert_ne!(old, new, "a new main file, new postings");
    std::fs::write(&postings, &old).unwrap();
    assert_eq!(answers(&dir), want);
    // An edit goes to the delta; the postings stay the main file's, and answer the
    // memories the delta does not hold.
    write_raw(&dir, "k3", "Three", "a walrus zebra line");
    let edited = answers(&dir);
    std::fs::write(&postings, &new).unwrap();
    assert_eq!(answers(&dir), edited);
    std::fs::remove_dir_all(dir.join(".memdir/cache")).unwrap();
    assert_eq!(answers(&dir), edited, "a fresh index answers the same");
}

/// The MEMORY.md check (`.memdir/cache/index-check`) under races: `context` calls in
/// other processes record and use it while memories are written through memdir (which
/// rewrites MEMORY.md) and behind its back (which does not), the last of each round
/// once the check vouches for MEMORY.md as it is. After each round the block and
/// MEMORY.md list every memory written: the check never vouches for an index of other
/// contents (spec/index-format.md#rebuild).
#[test]
fn the_index_check_never_vouches_for_a_stale_index_under_races() {
    use crate::common::{memdir, run};
    use std::time::Duration;
    let (_tmp, dir) = settled_store(30);
    let block = |dir: &std::path::Path| {
        let o = run(memdir(dir).args(["context", "--query", "zebra", "--max-tokens", "8000"]));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let rounds = 4;
    let mut written: Vec<String> = Vec::new();
    for round in 0..rounds {
        // Writes through memdir and behind its back while two readers query.
        let writes = |written: &mut Vec<String>| {
            for i in 0..3 {
                let name = format!("Written r{round} n{i}");
                let o = run(memdir(&dir).args([
                    "write",
                    &format!("w{round}-{i}"),
                    "--type",
                    "project",
                    "--name",
                    &name,
                    "--description",
                    "zebra notes",
                    "--body",
                    "zebra written",
                ]));
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                written.push(name);
                let name = format!("Raw r{round} n{i}");
                write_raw(&dir, &format!("raw{round}-{i}"), &name, "zebra raw");
                written.push(name);
            }
        };
        with_readers(&dir, || writes(&mut written));
        // Past the racy window: a render records the check, which then vouches for
        // MEMORY.md; a memory written behind memdir's back while readers query.
        std::thread::sleep(Duration::from_millis(2100));
        block(&dir);
        let name = format!("Late r{round}");
        with_readers(&dir, || {
            write_raw(&dir, &format!("late{round}"), &name, "zebra late")
        });
        written.push(name);
        for _ in 0..2 {
            let b = block(&dir);
            let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
            let missing: Vec<&String> = written
                .iter()
                .filter(|n| !b.contains(n.as_str()) || !index.contains(n.as_str()))
                .collect();
            assert!(
                missing.is_empty(),
                "round {round}: {} of {} written memories missing: {missing:?}",
                missing.len(),
                written.len()
            );
        }
    }
    assert_eq!(written.len(), rounds * 7);
}

/// Runs `f` while two threads run `memdir context` in a loop (at most 100 calls each,
/// at least one after `f` returns), every call answering.
fn with_readers(dir: &std::path::Path, f: impl FnOnce()) {
    const CONTEXT: &[&str] = &["context", "--query", "zebra"];
    let readers = Readers::start(dir, [CONTEXT, CONTEXT], 100);
    let seen = readers.answered_past(0);
    f();
    readers.answered_past(seen + 1);
    readers.stop();
}

/// Two threads calling `memdir` in a loop on a store, the first with `args[0]`, the
/// second with `args[1]`, until stopped or `max` calls each; every call must answer.
struct Readers {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    done: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<usize>>,
}

impl Readers {
    fn start(dir: &std::path::Path, args: [&'static [&'static str]; 2], max: usize) -> Readers {
        use crate::common::{memdir, run};
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads = args
            .into_iter()
            .map(|args| {
                let dir = dir.to_path_buf();
                let (stop, done) = (stop.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut calls = 0;
                    while !stop.load(Ordering::Relaxed) && calls < max {
                        let o = run(memdir(&dir).args(args));
                        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                        calls += 1;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    calls
                })
            })
            .collect();
        Readers {
            stop,
            done,
            threads,
        }
    }

    /// Waits (at most a minute) until the readers have answered more than `n`
    /// calls in all; returns how many they have answered.
    fn answered_past(&self, n: usize) -> usize {
        use std::sync::atomic::Ordering;
        use std::time::{Duration, Instant};
        let until = Instant::now() + Duration::from_secs(60);
        while self.done.load(Ordering::Relaxed) <= n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        self.done.load(Ordering::Relaxed)
    }

    /// Stops the readers; returns how many calls they made.
    fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.threads.into_iter().map(|h| h.join().unwrap()).sum()
    }
}
