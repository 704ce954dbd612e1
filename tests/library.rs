//! The library API end to end: the `none` mode, the clock, no-op writes, filters, and the
//! worked example of spec/ranking.md (which is also this test).

use memdir::{Clock, Draft, Memory, WriteOutcome};

fn at(t: &str) -> Clock {
    Clock::fixed(t.parse().unwrap())
}

fn draft(key: &str, kind: &str, body: &str) -> Draft {
    Draft {
        key: key.into(),
        name: key.replace('_', " "),
        description: format!("about {key}"),
        kind: kind.into(),
        body: body.into(),
        ..Draft::default()
    }
}

#[test]
fn none_mode_keeps_everything_in_memory() {
    let mem = Memory::in_memory().with_clock(at("2026-04-14T12:00:00Z"));
    assert_eq!(
        mem.write(&draft("user_role", "user", "Argentina fan"))
            .unwrap(),
        WriteOutcome::Created
    );
    assert_eq!(
        mem.write(&draft("user_role", "user", "Argentina fan"))
            .unwrap(),
        WriteOutcome::Unchanged
    );
    assert_eq!(
        mem.write(&draft("user_role", "user", "Boca fan")).unwrap(),
        WriteOutcome::Updated
    );
    mem.note("user_said", serde_json::Map::new()).unwrap();
    let block = mem.context(1000, None).unwrap();
    assert!(block.text.contains("Boca fan"));
    assert_eq!(block.events, 1);
    mem.forget("user_role", None).unwrap();
    assert!(mem.read("user_role").is_err());
    let (blob, _) = mem.export().unwrap();
    assert!(blob.contains("\"forgot\""));
    assert!(!blob.contains("Boca fan"));
    assert_eq!(mem.root().to_string_lossy(), "(memory)");
}

#[test]
fn an_identical_write_does_not_touch_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mem = Memory::open(tmp.path().join("m"))
        .unwrap()
        .with_clock(at("2026-04-14T12:00:00Z"));
    mem.write(&draft("k", "user", "body")).unwrap();
    let path = tmp.path().join("m/k.md");
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mem = mem.with_clock(at("2026-05-01T00:00:00Z"));
    assert_eq!(
        mem.write(&draft("k", "user", "body\n\n")).unwrap(),
        WriteOutcome::Unchanged
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        before
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert!(text.contains("updated: 2026-04-14"));
}

#[test]
fn the_clock_sets_dates_recency_and_timestamps() {
    let mem = Memory::in_memory().with_clock(at("2026-04-14T23:59:59.250Z"));
    mem.write(&draft("k", "feedback", "b")).unwrap();
    let r = mem.read("k").unwrap();
    assert_eq!(r.meta.created.text, "2026-04-14");
    assert_eq!(r.meta.updated.text, "2026-04-14");
    let e = mem.note("x", serde_json::Map::new()).unwrap();
    assert_eq!(
        e.encode(),
        r#"{"ts":"2026-04-14T23:59:59.250Z","type":"x"}"#
    );
    let later = mem.with_clock(at("2026-04-21T23:59:59.250Z"));
    let (list, _) = later.list(None).unwrap();
    // feedback salience 0.8, seven days and 23:59:59.25 after midnight of the 14th.
    let age_days = 7.0 + (86_399.25 / 86_400.0);
    let want = 0.8 * 0.5_f64.powf(age_days / 7.0);
    assert!(
        (list[0].score - want).abs() < 1e-9,
        "{} vs {want}",
        list[0].score
    );
}

/// spec/ranking.md#worked-example — the table in the spec is this test's.
#[test]
fn worked_example() {
    let mk = |t: &str| Memory::in_memory().with_clock(at(t));
    // (key, type, tags, important, decay, day written)
    let files = [
        ("user_role", "user", 2, false, None, "2026-04-13"),
        ("feedback_tone", "feedback", 0, false, None, "2026-04-01"),
        (
            "project_launch",
            "project",
            1,
            false,
            Some("30d"),
            "2026-03-15",
        ),
        (
            "reference_docs",
            "reference",
            0,
            false,
            Some("never"),
            "2025-01-01",
        ),
        ("user_name", "user", 0, true, None, "2026-02-01"),
    ];
    // Each memory is written on its own day, then imported into one store, so that
    // each keeps its own `updated` date.
    let store = mk("2026-04-15T00:00:00Z");
    for (key, kind, tags, important, decay, day) in files {
        let w = mk(&format!("{day}T10:00:00Z"));
        let mut d = draft(key, kind, "body");
        d.tags = Some((0..tags).map(|i| format!("t{i}")).collect());
        d.important = Some(important);
        d.decay = decay.map(str::to_string);
        w.write(&d).unwrap();
        let (blob, _) = w.export().unwrap();
        store
            .import(blob.as_bytes(), memdir::Strategy::Merge, false)
            .unwrap();
    }
    let (list, _) = store.list(None).unwrap();
    let got: Vec<(&str, String)> = list
        .iter()
        .map(|l| (l.key.as_str(), format!("{:.4}", l.score)))
        .collect();
    assert_eq!(
        got,
        vec![
            ("user_role", "0.6563".to_string()),
            ("reference_docs", "0.5000".to_string()),
            ("project_launch", "0.3176".to_string()),
            ("feedback_tone", "0.2000".to_string()),
            ("user_name", "0.0007".to_string()),
        ]
    );
}

#[test]
fn filters_through_the_library() {
    // spec/ranking.md#filters
    use memdir::{Class, Filter};
    let mem = Memory::in_memory().with_clock(at("2026-04-14T12:00:00Z"));
    mem.write(&draft("user_role", "user", "plays the cello on Saturdays"))
        .unwrap();
    mem.write(&Draft {
        tags: Some(vec!["music".into()]),
        ..draft("project_recital", "project", "cello recital in May")
    })
    .unwrap();
    mem.write(&draft("feedback_tone", "feedback", "direct critique"))
        .unwrap();
    let keys = |v: Vec<String>| v.join(" ");

    let f = Filter::default().types(["project", "user"]);
    let (list, _) = mem.list_filtered(&f).unwrap();
    assert_eq!(
        keys(list.into_iter().map(|l| l.key).collect()),
        "user_role project_recital"
    );
    let (hits, _) = mem
        .recall_filtered("cello", 10, &Filter::default().tag("MUSIC"))
        .unwrap();
    assert_eq!(
        keys(hits.into_iter().map(|h| h.key).collect()),
        "project_recital"
    );
    let f = Filter::default().min_salience(0.7).unwrap();
    let (block, _) = mem.context_filtered(1000, Some("cello"), &f).unwrap();
    let packed: Vec<String> = block.memories.into_iter().map(|m| m.key).collect();
    assert_eq!(keys(packed), "user_role feedback_tone");
    // The index section stays the store's.
    assert!(block.text.contains("[project recital](project_recital.md)"));

    // Unfiltered calls are the filtered ones with the empty filter.
    assert_eq!(
        mem.context(300, Some("cello")).unwrap(),
        mem.context_filtered(300, Some("cello"), &Filter::default())
            .unwrap()
            .0
    );
    // An unknown type is an error listing the known ones, for list's old argument too.
    for e in [
        mem.list(Some("projects")).unwrap_err(),
        mem.recall_filtered("x", 5, &Filter::default().types(["chores"]))
            .unwrap_err(),
    ] {
        assert_eq!(e.class(), Class::Usage);
        assert!(
            e.to_string()
                .contains("in the type filter; known types: user, feedback, project, reference"),
            "{e}"
        );
    }
    let e = mem
        .context_filtered(
            100,
            None,
            &Filter {
                min_salience: Some(7.0),
                ..Filter::default()
            },
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "7 is not a salience; expected a number from 0 to 1"
    );
}
