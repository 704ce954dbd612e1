//! Property tests: the frontmatter round trip, import idempotence and the hard
//! budget of the context block.

use proptest::prelude::*;

use memdir::{Clock, Draft, Memory, Strategy};

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
            source: source.clone(),
        }).unwrap();
        let r = mem.read("k").unwrap();
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
            body, tags: None, important: None, decay: None, source: None,
        }).unwrap();
        prop_assert_eq!(again, memdir::WriteOutcome::Unchanged);
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
        let (blob, _) = src.export().unwrap();
        let dst = Memory::in_memory().with_clock(clock);
        if local_first {
            dst.write(&Draft { key: items[0].0.clone(), name: "local".into(), description: "d".into(), kind: "user".into(), body: "local".into(), ..Draft::default() }).unwrap();
        }
        let strategy = if replace { Strategy::Replace } else { Strategy::Merge };
        dst.import(blob.as_bytes(), strategy, false).unwrap();
        let (after_first, _) = dst.export().unwrap();
        let second = dst.import(blob.as_bytes(), strategy, false).unwrap();
        let (after_second, _) = dst.export().unwrap();
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
            let kind = ["user", "feedback", "project", "reference", "user"][*kind as usize];
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
            let (b, _) = mem.context_filtered(max, query.as_deref(), &filter).unwrap();
            prop_assert!(b.text.chars().count() <= max * 4, "max {} got {}: {:?}", max, b.text.chars().count(), b.text);
            prop_assert!(b.tokens <= max);
        }
    }
}
