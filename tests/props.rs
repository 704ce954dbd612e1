//! Property tests: the frontmatter round trip, import idempotence, the mcp-memory
//! round trip, foreign decoders never panicking, and the hard
//! budget of the context block.

use proptest::prelude::*;

use memdir::{Clock, ContextRequest, Draft, Memory, Strategy};

fn text() -> impl proptest::strategy::Strategy<Value = String> {
    // Printable text including YAML- and Markdown-significant characters.
    "[a-zA-Z0-9 :#'\"\\-*_\\[\\]{}|>&!%@`~,.?/\\\\ü😀中]{1,40}"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// spec/memory-format.md#writing — what memdir writes, it reads back the same.
    #[test]
    fn frontmatter_round_trip(
        name in text(),
        description in text(),
        tags in proptest::collection::vec(text(), 0..4),
        body in "[a-zA-Z0-9 \\n:#*-]{0,200}",
        important in any::<bool>(),
        source in proptest::option::of(text()),
    ) {
        prop_assume!(!name.trim().is_empty() && !description.trim().is_empty());
        prop_assume!(memdir::memory::secrets::find_secret(&format!("{name}{description}{body}{tags:?}{source:?}")).is_none());
        let mem = Memory::in_memory().with_clock(Clock::fixed("2026-04-14T12:00:00Z".parse().unwrap()));
        mem.write(&Draft {
            key: "k".into(), name: name.clone(), description: description.clone(), kind: "project".into(),
            body: body.clone(), tags: Some(tags.clone()), important: Some(important), decay: Some("30d".into()),
            source: source.clone(), supersedes: Some(vec!["older_k".into()]), valid_until: Some("2026-12-31".into()),
        }).unwrap();
        let r = mem.read("k").unwrap();
        prop_assert_eq!(&r.meta.supersedes, &vec!["older_k".to_string()]);
        prop_assert_eq!(r.meta.valid_until.as_deref(), Some("2026-12-31"));
        let one_line = |s: &str| s.split(['\n', '\r']).map(str::trim).filter(|p| !p.is_empty()).collect::<Vec<_>>().join(" ");
        prop_assert_eq!(r.meta.name, one_line(&name));
        prop_assert_eq!(r.meta.description, one_line(&description));
        prop_assert_eq!(r.meta.tags, tags);
        prop_assert_eq!(r.meta.important, important);
        prop_assert_eq!(r.meta.source, source);
        prop_assert_eq!(r.body, memdir::memory::normalize_body(&body));
        // Writing what was read is a no-op.
        let again = mem.write(&Draft {
            key: "k".into(), name: name.clone(), description: description.clone(), kind: "project".into(),
            body, tags: None, important: None, decay: None, source: None, supersedes: None, valid_until: None,
        }).unwrap();
        prop_assert_eq!(again.outcome, memdir::WriteOutcome::Unchanged);
    }

    /// spec/cli.md#import — importing the same blob twice changes nothing the second time.
    #[test]
    fn import_is_idempotent(
        items in proptest::collection::vec(("[a-z][a-z0-9_]{0,8}", text(), "[a-z ]{0,50}", 0u8..4), 1..8),
        events in proptest::collection::vec(("[a-z_]{1,8}", "[a-z ]{0,20}", 0i64..1_000_000), 0..10),
        replace in any::<bool>(),
        local_first in any::<bool>(),
    ) {
        let clock = Clock::fixed("2026-04-14T12:00:00Z".parse().unwrap());
        let src = Memory::in_memory().with_clock(clock);
        for (key, name, body, kind) in &items {
            prop_assume!(!name.trim().is_empty());
            let kind = ["user", "feedback", "project", "reference"][*kind as usize];
            src.write(&Draft { key: key.clone(), name: name.clone(), description: "d".into(), kind: kind.into(), body: body.clone(), ..Draft::default() }).unwrap();
        }
        for (kind, text, secs) in &events {
            let at = Clock::fixed(chrono::DateTime::from_timestamp(1_770_000_000 + secs, 0).unwrap());
            let m = Memory::in_memory().with_clock(at);
            let mut f = serde_json::Map::new();
            f.insert("text".into(), text.clone().into());
            let e = m.note(kind, f).unwrap();
            let blob = format!(r#"{{"version":"memory/0.1","files":{{}},"timeline":[{}]}}"#, e.encode());
            src.import(blob.as_bytes(), Strategy::Merge, false).unwrap();
        }
        let blob = src.export().unwrap().text;
        let dst = Memory::in_memory().with_clock(clock);
        if local_first {
            dst.write(&Draft { key: items[0].0.clone(), name: "local".into(), description: "d".into(), kind: "user".into(), body: "local".into(), ..Draft::default() }).unwrap();
        }
        let strategy = if replace { Strategy::Replace } else { Strategy::Merge };
        dst.import(blob.as_bytes(), strategy, false).unwrap();
        let after_first = dst.export().unwrap().text;
        let second = dst.import(blob.as_bytes(), strategy, false).unwrap();
        let after_second = dst.export().unwrap().text;
        prop_assert_eq!(&after_first, &after_second);
        prop_assert_eq!(second.counts.added + second.counts.updated, 0);
        prop_assert_eq!(second.events_added, 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// spec/ranking.md#budget — whatever the store holds, the block never exceeds
    /// max_tokens × 4 characters, with or without a query or filters.
    #[test]
    fn the_block_never_exceeds_the_budget(
        items in proptest::collection::vec(
            ("[a-z][a-z0-9_]{0,12}", text(), "[a-zA-Z ü😀]{0,160}", "[a-z é😀\\n]{0,600}", 0u8..5, any::<bool>()),
            0..25,
        ),
        events in proptest::collection::vec("[a-z é]{0,80}", 0..12),
        budgets in proptest::collection::vec(0usize..1500, 1..6),
        query in proptest::option::of("[a-z ]{1,20}"),
        only_user in any::<bool>(),
    ) {
        let mem = Memory::in_memory().with_clock(Clock::fixed("2026-04-14T12:00:00Z".parse().unwrap()));
        for (key, name, description, body, kind, important) in &items {
            prop_assume!(!name.trim().is_empty() && !description.trim().is_empty());
            prop_assume!(memdir::memory::secrets::find_secret(&format!("{name}{description}{body}")).is_none());
            let kind = ["user", "feedback", "project", "reference", "state"][*kind as usize];
            mem.write(&Draft {
                key: key.clone(), name: name.clone(), description: description.clone(),
                kind: kind.into(), body: body.clone(), important: Some(*important),
                ..Draft::default()
            }).unwrap();
        }
        for text in &events {
            let mut f = serde_json::Map::new();
            f.insert("text".into(), text.clone().into());
            mem.note("user_said", f).unwrap();
        }
        let filter = if only_user { memdir::Filter::default().types(["user"]) } else { memdir::Filter::default() };
        for max in budgets {
            let b = mem.context(&ContextRequest { query: query.as_deref().map(Into::into), ..ContextRequest::new(max) }.with_filter(filter.clone())).unwrap().block;
            prop_assert!(b.text.chars().count() <= max * 4, "max {} got {}: {:?}", max, b.text.chars().count(), b.text);
            prop_assert!(b.tokens <= max);
        }
    }
}

/// A name or observation as people write them: words with unicode and punctuation,
/// no leading, trailing or repeated white space (import writes those on one line).
fn words() -> impl proptest::strategy::Strategy<Value = String> {
    proptest::strategy::Strategy::prop_map(
        proptest::collection::vec("[a-zA-Z0-9äöüßé中😀'#&.,!?()-]{1,8}", 1..4),
        |w| w.join(" "),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, .. ProptestConfig::default() })]

    /// spec/import-formats.md#export — an mcp-memory graph imported and exported again
    /// keeps its entities, observations and relations (names kept unique here: the
    /// server treats duplicates as one, and import merges them).
    #[test]
    fn mcp_memory_round_trip(
        entities in proptest::collection::vec(
            (words(), "[a-z]{1,10}", proptest::collection::vec(words(), 0..4)), 1..6),
        relations in proptest::collection::vec((0usize..8, 0usize..8, "[a-z]{1,8}(_[a-z]{1,6})?"), 0..8),
    ) {
        use std::collections::HashSet;
        let mut seen = HashSet::new();
        let entities: Vec<_> = entities.into_iter().filter(|(n, _, _)| seen.insert(n.clone())).collect();
        let name_of = |i: usize| match entities.get(i) {
            Some((n, _, _)) => n.clone(),
            // A target that is not an entity: kept as written.
            None => format!("Ghost {i}"),
        };
        let mut lines: Vec<String> = entities.iter().map(|(n, t, o)| {
            serde_json::json!({"type": "entity", "name": n, "entityType": t, "observations": o}).to_string()
        }).collect();
        let mut rels = HashSet::new();
        for (from, to, rel) in &relations {
            if *from < entities.len() && rels.insert((*from, *to, rel.clone())) {
                lines.push(serde_json::json!({"type": "relation", "from": name_of(*from), "to": name_of(*to), "relationType": rel}).to_string());
            }
        }
        let text = lines.join("\n") + "\n";
        prop_assume!(memdir::memory::secrets::find_secret(&text).is_none());
        let today = chrono::NaiveDate::from_ymd_opt(2026, 4, 14).unwrap();
        let inc = memdir::exchange::foreign::mcp_memory::decode("m.jsonl", &text, today).unwrap();
        let records: Vec<memdir::Record> = inc.files.iter().map(|f| memdir::Record {
            key: f.key.clone(), meta: f.parsed.meta.clone(), body: f.parsed.body.clone().into(),
        }).collect();
        let back = memdir::exchange::foreign::mcp_memory::encode(&records);
        let mut want: Vec<&str> = text.lines().collect();
        let mut got: Vec<&str> = back.lines().collect();
        want.sort();
        got.sort();
        prop_assert_eq!(got, want);
    }

    /// No panic is reachable from file contents: any text is either refused with a
    /// line or converted.
    #[test]
    fn foreign_decoders_never_panic(text in "(\\{\"type\":\"(entity|relation)\"[ -~äö\\n]{0,60}\\}\\n?|---\\n[ -~\\n]{0,40}|[ -~\\n\\r]{0,40}){0,4}") {
        let today = chrono::NaiveDate::from_ymd_opt(2026, 4, 14).unwrap();
        let _ = memdir::exchange::foreign::mcp_memory::decode("m.jsonl", &text, today);
        let files = [memdir::exchange::foreign::SourceFile { path: "a.md".into(), text: text.clone() }];
        let _ = memdir::exchange::foreign::claude_code::decode(&files, today);
        let _ = memdir::exchange::foreign::basic_memory::decode(&files, today);
        let _ = memdir::exchange::foreign::detect(&memdir::exchange::foreign::Source::Folder { name: "d", files: &files });
        let _ = memdir::exchange::foreign::detect(&memdir::exchange::foreign::Source::File { name: "f", bytes: text.as_bytes() });
    }
}

/// A line of a memory's body: its id `[L<memory>.<line>]`, then words of a small
/// vocabulary (so that queries match), sometimes long enough to be cut.
fn body_line() -> impl proptest::strategy::Strategy<Value = Vec<&'static str>> {
    const WORDS: &[&str] = &[
        "cello",
        "garden",
        "parrot",
        "trip",
        "paris",
        "dinner",
        "alice",
        "bob",
        "the",
        "of",
        "blue",
        "music",
        "spotify",
        "lately",
        "job",
        "interview",
        "rain",
    ];
    proptest::collection::vec(proptest::sample::select(WORDS), 1..120)
}

/// The `[L…]` ids of the lines a block shows.
fn shown_ids(text: &str) -> std::collections::BTreeSet<String> {
    text.split("[L")
        .skip(1)
        .filter_map(|s| s.split_once(']').map(|(id, _)| id.to_string()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    /// spec/ranking.md#query-aware-context-measured-on-locomo — more budget never
    /// shows less: every line a query's block shows at a budget, the block at any
    /// larger budget shows too (whole, or cut to its matching part), whatever the
    /// store, with state entries taking their room first.
    #[test]
    fn more_budget_never_shows_less(
        memories in proptest::collection::vec(
            (proptest::collection::vec(body_line(), 1..25), 0u8..6),
            1..14,
        ),
        query in proptest::collection::vec(
            proptest::sample::select(&["cello", "garden", "paris", "alice", "music", "lately", "rain", "job"][..]),
            1..4,
        ),
        budgets in proptest::collection::vec(8usize..2500, 2..6),
    ) {
        let mem = Memory::in_memory().with_clock(Clock::fixed("2026-04-14T12:00:00Z".parse().unwrap()));
        for (m, (lines, kind)) in memories.iter().enumerate() {
            let kind = ["user", "feedback", "project", "reference", "user", "state"][*kind as usize];
            let body: Vec<String> = lines
                .iter()
                .enumerate()
                .map(|(i, words)| format!("[L{m}.{i}] Ana: {}", words.join(" ")))
                .collect();
            mem.write(&Draft {
                key: format!("m{m}"), name: format!("Memory {m}"), description: "notes".into(),
                kind: kind.into(), body: body.join("\n"),
                ..Draft::default()
            }).unwrap();
        }
        let query = query.join(" ");
        let mut budgets = budgets;
        budgets.sort_unstable();
        let shown: Vec<(usize, std::collections::BTreeSet<String>, String)> = budgets
            .iter()
            .map(|&max| {
                let asked = ContextRequest::new(max).with_query(query.as_str());
                let b = mem.context(&asked).unwrap().block;
                (max, shown_ids(&b.text), b.text)
            })
            .collect();
        // Without state, any larger budget; with state (its section grows with the
        // budget, up to its share), twice the budget or more.
        let state = memories.iter().any(|(_, kind)| *kind == 5);
        for (i, (small, held, text)) in shown.iter().enumerate() {
            for (large, ids, larger) in &shown[i + 1..] {
                if state && *large < 2 * small {
                    continue;
                }
                let lost: Vec<&String> = held.difference(ids).collect();
                prop_assert!(lost.is_empty(), "{} → {}: lost {:?}\n{}\n=====\n{}", small, large, lost, text, larger);
            }
        }
    }
}
