//! Passages (spec/ranking.md#passages): with `[embeddings] passages = true`, a context
//! with a query compares the lines of its best memories with the query, against the
//! loopback stand-in of `tests/embed.rs` (127.0.0.1 only, every wait bounded).

use std::path::Path;

use memdir::{Clock, Draft, Memory};
use serde_json::Value;

use crate::embed::{Behaviour, configure, context_within, serve};

fn clock() -> Clock {
    Clock::fixed("2026-04-01T09:00:00Z".parse().unwrap())
}

/// A long memory with two lines about Caroline and a drink line that shares no word
/// with the query, and two short memories.
fn store(dir: &Path) -> Memory {
    let m = Memory::open(dir).unwrap().with_clock(clock());
    let mut body = String::new();
    for i in 0..24 {
        let line = match i {
            3 => "[d:3] Caroline talked about the garden plot with the neighbours.".to_string(),
            11 => "[d:11] Caroline sold the old bicycle to a student.".to_string(),
            17 => "[d:17] She always starts with a flat white.".to_string(),
            _ => format!("[d:{i}] The weather report said rain for the afternoon, part {i}."),
        };
        body.push_str(&line);
        body.push('\n');
    }
    for (key, body) in [
        ("caroline_diary", body.as_str()),
        ("football", "Caroline plays football on Saturday mornings."),
        ("deploys", "Deploys go out on Friday after review."),
    ] {
        m.write(&Draft {
            key: key.into(),
            name: key.replace('_', " "),
            description: key.replace('_', " "),
            kind: "user".into(),
            body: body.into(),
            ..Draft::default()
        })
        .unwrap();
    }
    m
}

fn context_of(m: &Memory) -> (String, Value) {
    context_within(m, 300, "Caroline espresso")
}

// The drink line, which shares no word with the query, is chosen only with passages
// on. The lines of the best memories are embedded once and kept in the cache (also
// through `index --embeddings`, which drops only what no memory uses); a warm store
// embeds them outside its lock and gives the fresh process's block; without
// `passages` the call embeds no line.
#[test]
fn lines_are_embedded_once_and_a_warm_store_gives_the_fresh_block() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &server.url, "");
    let fresh = Memory::open(dir.path()).unwrap().with_clock(clock());
    let plain = context_of(&fresh);
    assert_eq!(plain.1["mode"], "hybrid");
    assert!(plain.0.contains("[d:11] Caroline sold"), "{}", plain.0);
    assert!(!plain.0.contains("flat white"), "{}", plain.0);
    // The query and three memories, no line.
    assert_eq!(server.texts(), 4);

    configure(
        dir.path(),
        &server.url,
        "passages = true\nquery_budget = 100\n",
    );
    let first = context_of(&fresh);
    assert_eq!(first.1["mode"], "hybrid");
    assert!(first.1.get("pending_lines").is_none(), "{:?}", first.1);
    assert!(
        first
            .0
            .contains("[d:17] She always starts with a flat white.\n"),
        "{}",
        first.0
    );
    // The query, then the 24 lines of the diary and the football memory's one (both
    // keyword hits); the deploys are no hit.
    assert_eq!(server.texts(), 4 + 1 + 25);
    // Cached: the next call embeds the query alone.
    assert_eq!(context_of(&fresh), first);
    assert_eq!(server.texts(), 4 + 1 + 25 + 1);

    // `index --embeddings` keeps the lines' vectors.
    fresh.index_embeddings().unwrap().unwrap();
    assert_eq!(context_of(&fresh), first);
    assert_eq!(server.texts(), 4 + 1 + 25 + 1 + 1);

    // A warm store with an empty cache embeds what the fresh one did, and its block
    // and report are the fresh one's.
    std::fs::remove_dir_all(dir.path().join(".memdir/cache")).unwrap();
    let warm = Memory::open(dir.path())
        .unwrap()
        .with_clock(clock())
        .keep_warm();
    let before = server.texts();
    assert_eq!(context_of(&warm), first);
    assert_eq!(server.texts(), before + 4 + 25);
    assert_eq!(context_of(&warm), first);
    assert_eq!(server.texts(), before + 4 + 25 + 1);
}

// A budget too small for the lines leaves some pending, counted in the report, and
// the next call embeds the rest.
#[test]
fn lines_past_the_budget_are_pending_until_a_later_call() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    configure(
        dir.path(),
        &server.url,
        "passages = true\nquery_budget = 10\n",
    );
    let first = context_of(&m);
    assert_eq!(first.1["mode"], "hybrid");
    assert_eq!(first.1["pending_lines"], 25 - 10, "{:?}", first.1);
    let second = context_of(&m);
    assert_eq!(second.1["pending_lines"], 25 - 20, "{:?}", second.1);
    let third = context_of(&m);
    assert!(third.1.get("pending_lines").is_none(), "{:?}", third.1);
}
