//! Supersede, expiry, prune, consolidate and the access log through the library
//! (spec/memory-format.md#supersedes, spec/ranking.md#superseded-and-expired,
//! spec/cli.md#prune, spec/cli.md#consolidate, spec/cli.md#access-log).

use std::collections::BTreeMap;
use std::path::Path;

use memdir::{
    Clock, ContextRequest, Draft, Filter, ListRequest, Memory, PruneCriteria, PruneReason,
    RecallRequest,
};

fn at(t: &str) -> Clock {
    Clock::fixed(t.parse().unwrap())
}

fn draft(key: &str, body: &str) -> Draft {
    Draft {
        key: key.into(),
        name: key.replace('_', " "),
        description: format!("about {key}"),
        kind: "project".into(),
        body: body.into(),
        ..Draft::default()
    }
}

/// A store on disk: `old` superseded by `new` (written a day later), `promo` valid
/// until 2026-04-20, `other` current. Returns the store read on 2026-05-15.
fn store(dir: &Path) -> Memory {
    let m = Memory::open(dir)
        .unwrap()
        .with_clock(at("2026-04-01T09:00:00Z"));
    m.write(&draft("old", "deploys go out on friday")).unwrap();
    m.write(&Draft {
        valid_until: Some("2026-04-20".into()),
        ..draft("promo", "the deploys promo code runs in april")
    })
    .unwrap();
    m.write(&draft("other", "the deploys pipeline is green"))
        .unwrap();
    let m = m.with_clock(at("2026-04-02T09:00:00Z"));
    m.write(&Draft {
        supersedes: Some(vec!["old".into()]),
        ..draft("new", "deploys go out on monday")
    })
    .unwrap();
    m.with_clock(at("2026-05-15T09:00:00Z"))
}

fn keys<T>(items: &[T], key: impl Fn(&T) -> &str) -> Vec<String> {
    let mut k: Vec<String> = items.iter().map(|i| key(i).to_string()).collect();
    k.sort();
    k
}

#[test]
fn superseded_and_expired_are_left_out_unless_included() {
    // spec/ranking.md#superseded-and-expired
    let tmp = tempfile::tempdir().unwrap();
    let m = store(&tmp.path().join("m"));

    let l = m.list(&ListRequest::new()).unwrap().memories;
    assert_eq!(keys(&l, |i| &i.key), ["new", "other"]);
    let l = m
        .list(
            &ListRequest::new()
                .with_filter(Filter::default().include_superseded().include_expired()),
        )
        .unwrap()
        .memories;
    assert_eq!(keys(&l, |i| &i.key), ["new", "old", "other", "promo"]);
    let old = l.iter().find(|i| i.key == "old").unwrap();
    assert_eq!(old.superseded_by, ["new"]);
    assert!(!old.expired);
    assert!(l.iter().find(|i| i.key == "promo").unwrap().expired);
    let l = m
        .list(&ListRequest::new().with_filter(Filter::default().include_expired()))
        .unwrap()
        .memories;
    assert_eq!(keys(&l, |i| &i.key), ["new", "other", "promo"]);

    let h = m.recall(&RecallRequest::new("deploys", 10)).unwrap().hits;
    assert_eq!(keys(&h, |i| &i.key), ["new", "other"]);
    let h = m
        .recall(
            &RecallRequest::new("deploys", 10).with_filter(Filter::default().include_superseded()),
        )
        .unwrap()
        .hits;
    assert_eq!(keys(&h, |i| &i.key), ["new", "old", "other"]);
    assert!(
        h.iter()
            .any(|i| i.to_string().ends_with("[superseded by new]"))
    );

    let b = m.context(&ContextRequest::new(4000)).unwrap().block;
    assert_eq!(keys(&b.memories, |i| &i.key), ["new", "other"]);
    let b = m
        .context(
            &ContextRequest::new(4000)
                .with_query("deploys")
                .with_filter(Filter::default().include_superseded().include_expired()),
        )
        .unwrap()
        .block;
    assert_eq!(
        keys(&b.memories, |i| &i.key),
        ["new", "old", "other", "promo"]
    );
    assert!(b.text.contains("## old [superseded by new] (key: old,"));
    assert!(
        b.text
            .contains("## promo [expired after 2026-04-20] (key: promo,")
    );

    // On 2026-04-20 itself the promo still holds.
    let m = m.with_clock(at("2026-04-20T23:00:00Z"));
    let l = m.list(&ListRequest::new()).unwrap().memories;
    assert_eq!(keys(&l, |i| &i.key), ["new", "other", "promo"]);
}

#[test]
fn supersedes_and_valid_until_round_trip_and_are_checked() {
    // spec/memory-format.md#supersedes
    let m = Memory::in_memory().with_clock(at("2026-04-01T09:00:00Z"));
    let e = m
        .write(&Draft {
            valid_until: Some("20-04-2026".into()),
            ..draft("a", "x")
        })
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "valid_until `20-04-2026` is not a date; expected YYYY-MM-DD"
    );
    let e = m
        .write(&Draft {
            supersedes: Some(vec!["a".into()]),
            ..draft("a", "x")
        })
        .unwrap_err();
    assert_eq!(e.to_string(), "memory `a` cannot supersede itself");
    assert!(
        m.write(&Draft {
            supersedes: Some(vec!["../x".into()]),
            ..draft("a", "x")
        })
        .is_err()
    );
    m.write(&Draft {
        supersedes: Some(vec!["b".into(), "c.md".into(), "b".into()]),
        valid_until: Some("2026-12-31".into()),
        ..draft("a", "x")
    })
    .unwrap();
    let r = m.read("a").unwrap();
    assert_eq!(r.meta.supersedes, ["b", "c"]);
    assert_eq!(r.meta.valid_until.as_deref(), Some("2026-12-31"));
    // Omitted keeps them; empty clears them.
    m.write(&draft("a", "y")).unwrap();
    let r = m.read("a").unwrap();
    assert_eq!(r.meta.supersedes, ["b", "c"]);
    m.write(&Draft {
        supersedes: Some(vec![]),
        valid_until: Some(String::new()),
        ..draft("a", "y")
    })
    .unwrap();
    let r = m.read("a").unwrap();
    assert!(r.meta.supersedes.is_empty());
    assert_eq!(r.meta.valid_until, None);
}

#[test]
fn prune_apply_forgets_exactly_the_plan() {
    // spec/cli.md#prune
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let m = store(&dir);
    let c = PruneCriteria::default();
    let plan = m.prune_plan(&c).unwrap().value;
    assert_eq!(plan.keys(), ["old", "promo"]);
    let old = plan.candidates.iter().find(|c| c.key == "old").unwrap();
    assert_eq!(
        old.reasons,
        [PruneReason::Superseded {
            by: vec!["new".into()],
            days: 43
        }]
    );
    // Not superseded long enough under 50 days.
    let p50 = m
        .prune_plan(&PruneCriteria {
            superseded_days: 50,
            ..c.clone()
        })
        .unwrap()
        .value;
    assert_eq!(p50.keys(), ["promo"]);

    // A plan that differs from the recomputed one is refused and nothing changes.
    let before = snapshot(&dir);
    let e = m.prune_apply(&c, Some(&["promo".to_string()])).unwrap_err();
    assert!(e.to_string().contains("the prune plan changed"), "{e}");
    assert_eq!(snapshot(&dir), before);
    let e = m.prune_apply(
        &PruneCriteria {
            below: Some(2.0),
            ..c.clone()
        },
        None,
    );
    assert!(e.is_err());
    assert_eq!(snapshot(&dir), before);

    // A timeline that cannot be appended to: the apply fails and no memory file changes.
    std::fs::rename(dir.join("timeline"), dir.join("timeline.away")).unwrap();
    std::fs::write(dir.join("timeline"), "not a folder").unwrap();
    assert!(m.prune_apply(&c, Some(&plan.keys())).is_err());
    std::fs::remove_file(dir.join("timeline")).unwrap();
    std::fs::rename(dir.join("timeline.away"), dir.join("timeline")).unwrap();
    assert_eq!(snapshot(&dir), before);

    let done = m.prune_apply(&c, Some(&plan.keys())).unwrap();
    assert_eq!(done.forgot, ["old", "promo"]);
    let after = snapshot(&dir);
    let gone: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    assert_eq!(gone, ["old.md", "promo.md"]);
    for k in ["new.md", "other.md"] {
        assert_eq!(before[k], after[k]);
    }
    let timeline: String = after
        .iter()
        .filter(|(k, _)| k.starts_with("timeline/"))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert!(timeline.contains(r#""type":"forgot","key":"old","reason":"prune""#));
    assert!(timeline.contains(r#""type":"forgot","key":"promo","reason":"prune""#));
    assert!(!String::from_utf8_lossy(&after["MEMORY.md"]).contains("(old.md)"));
    assert!(m.prune_apply(&c, None).unwrap().forgot.is_empty());
}

#[test]
fn prune_cap_and_below_spare_important_memories() {
    // spec/cli.md#prune
    let m = Memory::in_memory().with_clock(at("2026-04-01T09:00:00Z"));
    for k in ["a", "b", "c"] {
        m.write(&draft(k, k)).unwrap();
    }
    m.write(&Draft {
        important: Some(true),
        ..draft("d", "d")
    })
    .unwrap();
    let m = m.with_clock(at("2026-06-01T09:00:00Z"));
    let p = m
        .prune_plan(&PruneCriteria {
            cap: Some(2),
            ..PruneCriteria::default()
        })
        .unwrap()
        .value;
    // d is important and ranks first; the cap keeps it and one more.
    assert_eq!(p.candidates.len(), 2);
    assert!(!p.keys().contains(&"d".to_string()));
    let p = m
        .prune_plan(&PruneCriteria {
            below: Some(0.5),
            ..PruneCriteria::default()
        })
        .unwrap()
        .value;
    assert_eq!(p.keys(), ["a", "b", "c"]);
}

#[test]
fn consolidate_groups_duplicates() {
    // spec/cli.md#consolidate
    let m = Memory::in_memory().with_clock(at("2026-04-01T09:00:00Z"));
    m.write(&draft(
        "a",
        "The user drinks a flat white every morning before work.",
    ))
    .unwrap();
    m.write(&draft(
        "b",
        "the user drinks a FLAT WHITE every morning, before work",
    ))
    .unwrap();
    m.write(&draft(
        "c",
        "The user drinks a flat white every morning before work starts.",
    ))
    .unwrap();
    m.write(&draft("d", "Something else entirely about the garden."))
        .unwrap();
    let p = m.consolidate_plan(0.6).unwrap().value;
    let groups: Vec<(String, Vec<String>)> = p
        .groups
        .iter()
        .map(|g| (format!("{:?}", g.why), g.keys.clone()))
        .collect();
    assert_eq!(
        groups,
        [
            ("Exact".to_string(), vec!["a".to_string(), "b".to_string()]),
            ("Near".to_string(), vec!["a".to_string(), "c".to_string()]),
        ]
    );
    assert!(m.consolidate_plan(0.0).is_err());
}

/// Every file of the directory (the access log aside) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walk(dir) {
        let rel = e.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
        if rel.starts_with(".memdir/") {
            continue;
        }
        out.insert(rel, std::fs::read(&e).unwrap());
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn reads_log_access_and_never_touch_memory_files() {
    // spec/cli.md#access-log
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let m = store(&dir);
    m.index().unwrap();
    let files: Vec<_> = walk(&dir)
        .into_iter()
        .filter(|p| !p.starts_with(dir.join(".memdir")))
        .collect();
    let stat = |p: &Path| {
        let md = std::fs::metadata(p).unwrap();
        (std::fs::read(p).unwrap(), md.modified().unwrap(), md.len())
    };
    let before: Vec<_> = files.iter().map(|p| stat(p)).collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let every = Filter::default().include_superseded().include_expired();
    for k in ["old", "new", "promo", "other"] {
        m.read(k).unwrap();
    }
    m.recall(&RecallRequest::new("deploys", 10).with_filter(every.clone()))
        .unwrap();
    m.context(
        &ContextRequest::new(4000)
            .with_query("deploys")
            .with_filter(every.clone()),
    )
    .unwrap();
    m.context(&ContextRequest::new(4000).with_filter(every.clone()))
        .unwrap();
    m.list(&ListRequest::new().with_filter(every.clone()))
        .unwrap();
    let after: Vec<_> = files.iter().map(|p| stat(p)).collect();
    assert_eq!(before, after, "a read changed a file or its mtime");

    let log = std::fs::read_to_string(dir.join(".memdir/cache/access.jsonl")).unwrap();
    for via in ["read", "recall", "context"] {
        assert!(log.contains(&format!(r#""via":"{via}""#)), "{log}");
    }
    for line in log.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["ts"], "2026-05-15T09:00:00.000Z");
        assert!(line.len() < 512);
    }
    let l = m
        .list(&ListRequest::new().with_filter(every.clone()))
        .unwrap()
        .memories;
    assert!(
        l.iter()
            .all(|i| i.last_read.as_deref() == Some("2026-05-15T09:00:00.000Z"))
    );
    // Access does not change ranking: the scores are those of a store never read.
    let fresh = tempfile::tempdir().unwrap();
    let unread = store(&fresh.path().join("m"));
    let u = unread
        .list(&ListRequest::new().with_filter(every.clone()))
        .unwrap()
        .memories;
    let score = |l: &[memdir::Listed]| -> Vec<(String, String)> {
        l.iter()
            .map(|i| (i.key.clone(), format!("{:.12}", i.score)))
            .collect()
    };
    assert_eq!(score(&l), score(&u));
    // The log is device-local: a deleted cache loses nothing else.
    std::fs::remove_dir_all(dir.join(".memdir/cache")).unwrap();
    let l = m
        .list(&ListRequest::new().with_filter(every.clone()))
        .unwrap()
        .memories;
    assert!(l.iter().all(|i| i.last_read.is_none()));
}

#[test]
fn the_access_log_is_bounded() {
    // spec/cli.md#access-log
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let m = Memory::open(&dir)
        .unwrap()
        .with_clock(at("2026-04-01T09:00:00Z"));
    m.write(&draft(&"k".repeat(100), "body")).unwrap();
    // About 170 bytes a line: 15,000 reads write about 2.5 MB.
    for _ in 0..15_000 {
        m.read(&"k".repeat(100)).unwrap();
    }
    let size = |f: &str| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len());
    let total = size(".memdir/cache/access.jsonl") + size(".memdir/cache/access.1.jsonl");
    assert!(total <= 2 * 1024 * 1024 + 4096, "{total}");
    assert!(size(".memdir/cache/access.1.jsonl") > 0);
    let log = std::fs::read_to_string(dir.join(".memdir/cache/access.jsonl")).unwrap();
    assert!(
        log.lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );
}

#[test]
fn a_read_only_store_still_reads() {
    // spec/cli.md#access-log: failures to log are ignored.
    let m = Memory::in_memory().with_clock(at("2026-04-01T09:00:00Z"));
    m.write(&draft("a", "x")).unwrap();
    assert_eq!(m.read("a").unwrap().body, "x");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let d = Memory::open(&dir)
        .unwrap()
        .with_clock(at("2026-04-01T09:00:00Z"));
    d.write(&draft("a", "x")).unwrap();
    // A folder where the log file should be: appending fails, the read does not.
    std::fs::create_dir_all(dir.join(".memdir/cache/access.jsonl")).unwrap();
    assert_eq!(d.read("a").unwrap().body, "x");
    let l = d.list(&ListRequest::new()).unwrap().memories;
    assert_eq!(l[0].last_read, None);
}
