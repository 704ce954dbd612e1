//! The library API end to end: the `none` mode, the clock, no-op writes, filters, and the
//! worked example of spec/ranking.md (which is also this test).

use memdir::{Clock, ContextRequest, Draft, ListRequest, Memory, RecallRequest, WriteOutcome};

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
            .unwrap()
            .outcome,
        WriteOutcome::Created
    );
    assert_eq!(
        mem.write(&draft("user_role", "user", "Argentina fan"))
            .unwrap()
            .outcome,
        WriteOutcome::Unchanged
    );
    assert_eq!(
        mem.write(&draft("user_role", "user", "Boca fan"))
            .unwrap()
            .outcome,
        WriteOutcome::Updated
    );
    mem.note("user_said", serde_json::Map::new()).unwrap();
    let block = mem.context(&ContextRequest::new(1000)).unwrap().block;
    assert!(block.text.contains("Boca fan"));
    assert_eq!(block.events, 1);
    mem.forget("user_role", None).unwrap();
    assert!(mem.read("user_role").is_err());
    let blob = mem.export().unwrap().text;
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
        mem.write(&draft("k", "user", "body\n\n")).unwrap().outcome,
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
    let list = later.list(&ListRequest::new()).unwrap().memories;
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
        let blob = w.export().unwrap().text;
        store
            .import(blob.as_bytes(), memdir::Strategy::Merge, false)
            .unwrap();
    }
    let list = store.list(&ListRequest::new()).unwrap().memories;
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
    let list = mem
        .list(&ListRequest::new().with_filter(f.clone()))
        .unwrap()
        .memories;
    assert_eq!(
        keys(list.into_iter().map(|l| l.key).collect()),
        "user_role project_recital"
    );
    let hits = mem
        .recall(&RecallRequest::new("cello", 10).with_filter(Filter::default().tag("MUSIC")))
        .unwrap()
        .hits;
    assert_eq!(
        keys(hits.into_iter().map(|h| h.key).collect()),
        "project_recital"
    );
    let f = Filter::default().min_salience(0.7).unwrap();
    let block = mem
        .context(
            &ContextRequest::new(1000)
                .with_query("cello")
                .with_filter(f.clone()),
        )
        .unwrap()
        .block;
    let packed: Vec<String> = block.memories.into_iter().map(|m| m.key).collect();
    assert_eq!(keys(packed), "user_role feedback_tone");
    // The index section stays the store's.
    assert!(block.text.contains("[project recital](project_recital.md)"));

    // Unfiltered calls are the filtered ones with the empty filter.
    assert_eq!(
        mem.context(&ContextRequest::new(300).with_query("cello"))
            .unwrap()
            .block,
        mem.context(&ContextRequest::new(300).with_query("cello"))
            .unwrap()
            .block
    );
    // An unknown type is an error listing the known ones, for list's old argument too.
    for e in [
        mem.list(&ListRequest::of_type(Some("projects")))
            .unwrap_err(),
        mem.recall(&RecallRequest::new("x", 5).with_filter(Filter::default().types(["chores"])))
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
        .context(&ContextRequest::new(100).with_filter(Filter {
            min_salience: Some(7.0),
            ..Filter::default()
        }))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "7 is not a salience; expected a number from 0 to 1"
    );
}

// spec/cli.md#edit, #rename, #timeline: the operations beside write and forget.

fn edit_store() -> (tempfile::TempDir, std::path::PathBuf, Memory) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mem = Memory::open(&dir)
        .unwrap()
        .with_clock(at("2026-04-14T12:00:00Z"));
    mem.init().unwrap();
    let mut d = draft(
        "feedback_tone",
        "feedback",
        "Lead with the issue.\n\n## Why\n\nCorrected twice.\n\n### Detail\n\nin April\n\n## How\n\nIssue first, then the fix.",
    );
    d.tags = Some(vec!["style".into()]);
    mem.write(&d).unwrap();
    (tmp, dir, mem)
}

#[test]
fn edit_changes_only_what_it_names() {
    use memdir::{Edit, FindReplace, SectionEdit};
    let (_tmp, dir, mem) = edit_store();
    let mem = mem.with_clock(at("2026-04-20T09:00:00Z"));
    let edit = Edit {
        replace_section: Some(SectionEdit {
            heading: "Why".into(),
            content: "Corrected three times.".into(),
        }),
        append: Some("- Applies to code review too.".into()),
        ..Edit::default()
    };
    assert_eq!(
        mem.edit("feedback_tone", &edit).unwrap().outcome,
        WriteOutcome::Updated
    );
    let r = mem.read("feedback_tone").unwrap();
    assert_eq!(
        r.body,
        "Lead with the issue.\n\n## Why\n\nCorrected three times.\n\n## How\n\nIssue first, then the fix.\n- Applies to code review too."
    );
    assert_eq!(r.meta.updated.text, "2026-04-20");
    assert_eq!(r.meta.created.text, "2026-04-14");
    assert_eq!(r.meta.tags, vec!["style".to_string()]);
    assert_eq!(r.meta.name, "feedback tone");

    // Fields only; the body stays.
    let fields = Edit {
        description: Some("direct critique".into()),
        important: Some(true),
        kind: Some("user".into()),
        ..Edit::default()
    };
    mem.edit("feedback_tone", &fields).unwrap();
    let r2 = mem.read("feedback_tone").unwrap();
    assert_eq!(r2.body, r.body);
    assert_eq!(r2.meta.description, "direct critique");
    assert!(r2.meta.important);
    assert_eq!(r2.meta.kind.to_string(), "user");
    assert!(
        std::fs::read_to_string(dir.join("MEMORY.md"))
            .unwrap()
            .contains("direct critique")
    );

    // A find/replace that replaces with the same text is a no-op: the file is not touched.
    let before = std::fs::read(dir.join("feedback_tone.md")).unwrap();
    let same = Edit {
        find_replace: Some(FindReplace {
            find: "fix".into(),
            replace: "fix".into(),
            expected_count: Some(1),
        }),
        ..Edit::default()
    };
    assert_eq!(
        mem.edit("feedback_tone", &same).unwrap().outcome,
        WriteOutcome::Unchanged
    );
    assert_eq!(std::fs::read(dir.join("feedback_tone.md")).unwrap(), before);
}

#[test]
fn a_failing_edit_leaves_the_file_byte_identical() {
    use memdir::{Edit, FindReplace, SectionEdit};
    let (_tmp, dir, mem) = edit_store();
    let file = dir.join("feedback_tone.md");
    let before = std::fs::read(&file).unwrap();
    let index = std::fs::read(dir.join("MEMORY.md")).unwrap();
    let cases: Vec<(Edit, &str)> = vec![
        (
            Edit {
                // The append would apply, the section does not exist: nothing is written.
                append: Some("more".into()),
                replace_section: Some(SectionEdit {
                    heading: "When".into(),
                    content: "x".into(),
                }),
                ..Edit::default()
            },
            "cannot edit `feedback_tone`: no section headed `When`; its headings are `Why`, `Detail`, `How`",
        ),
        (
            Edit {
                find_replace: Some(FindReplace {
                    find: "the".into(),
                    replace: "a".into(),
                    expected_count: Some(1),
                }),
                ..Edit::default()
            },
            "cannot edit `feedback_tone`: the text to find (`the`) occurs 3 times, expected 1",
        ),
        (
            Edit {
                find_replace: Some(FindReplace {
                    find: "nowhere".into(),
                    replace: "a".into(),
                    expected_count: None,
                }),
                ..Edit::default()
            },
            "cannot edit `feedback_tone`: the text to find (`nowhere`) does not occur in the body",
        ),
        (
            Edit {
                append: Some("key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD".into()),
                ..Edit::default()
            },
            "refused to store feedback_tone: the body contains what looks like",
        ),
        (
            Edit {
                kind: Some("person".into()),
                append: Some("x".into()),
                ..Edit::default()
            },
            "type `person` is not one of",
        ),
        (
            Edit {
                name: Some("  ".into()),
                ..Edit::default()
            },
            "`name` must not be empty",
        ),
        (Edit::default(), "nothing to edit in `feedback_tone`"),
    ];
    for (edit, want) in cases {
        let err = mem.edit("feedback_tone", &edit).unwrap_err().to_string();
        assert!(err.starts_with(want), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{want}");
        assert_eq!(std::fs::read(dir.join("MEMORY.md")).unwrap(), index);
    }
    let err = mem
        .edit(
            "user_nobody",
            &Edit {
                append: Some("x".into()),
                ..Edit::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "no memory with key `user_nobody`");
    assert!(!dir.join("user_nobody.md").exists());
}

#[test]
fn rename_moves_the_file_logs_it_and_refuses_what_it_must() {
    let (_tmp, dir, mem) = edit_store();
    mem.write(&draft("user_role", "user", "Argentina fan"))
        .unwrap();
    let before = std::fs::read(dir.join("feedback_tone.md")).unwrap();
    let event = mem.rename("feedback_tone", "feedback_style").unwrap().event;
    assert_eq!(
        event.encode(),
        r#"{"ts":"2026-04-14T12:00:00.000Z","type":"renamed","from":"feedback_tone","to":"feedback_style"}"#
    );
    assert!(!dir.join("feedback_tone.md").exists());
    assert_eq!(
        std::fs::read(dir.join("feedback_style.md")).unwrap(),
        before
    );
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(index.contains("(feedback_style.md)") && !index.contains("feedback_tone"));
    let day = std::fs::read_to_string(dir.join("timeline/2026-04-14.jsonl")).unwrap();
    assert!(day.contains(r#""type":"renamed","from":"feedback_tone""#));

    let refuse = |from: &str, to: &str, want: &str| {
        let err = mem.rename(from, to).unwrap_err().to_string();
        assert_eq!(err, want);
    };
    refuse(
        "feedback_style",
        "user_role",
        "cannot rename `feedback_style` to `user_role`: a memory with key `user_role` already exists",
    );
    refuse("user_nobody", "user_x", "no memory with key `user_nobody`");
    refuse(
        "user_role",
        "User Role",
        "key `User Role` must start with a lowercase letter or digit and contain only a-z, 0-9, `_` and `-`",
    );
    refuse(
        "user_role",
        "user_role",
        "cannot rename `user_role` to itself",
    );
    assert!(dir.join("user_role.md").exists() && dir.join("feedback_style.md").exists());
    assert!(!dir.join("user_x.md").exists());
}

#[cfg(unix)]
#[test]
fn a_rename_that_cannot_log_leaves_the_old_file_and_no_new_one() {
    let (_tmp, dir, mem) = edit_store();
    let before = std::fs::read(dir.join("feedback_tone.md")).unwrap();
    let index = std::fs::read(dir.join("MEMORY.md")).unwrap();
    // A `timeline` that is a file: the `renamed` event cannot be appended.
    std::fs::remove_dir_all(dir.join("timeline")).unwrap();
    std::fs::write(dir.join("timeline"), "not a folder").unwrap();
    assert!(mem.rename("feedback_tone", "feedback_style").is_err());
    assert_eq!(std::fs::read(dir.join("feedback_tone.md")).unwrap(), before);
    assert!(!dir.join("feedback_style.md").exists());
    assert_eq!(std::fs::read(dir.join("MEMORY.md")).unwrap(), index);
}

#[test]
fn an_import_does_not_bring_back_a_renamed_key() {
    let (_tmp, _dir, mem) = edit_store();
    let blob = mem.export().unwrap().text;
    mem.rename("feedback_tone", "feedback_style").unwrap();
    let report = mem
        .import(blob.as_bytes(), memdir::Strategy::Merge, false)
        .unwrap();
    assert_eq!(report.counts.skipped, 1, "{:?}", report.plan);
    assert!(mem.read("feedback_tone").is_err());
    assert!(mem.read("feedback_style").is_ok());
}

#[test]
fn activity_is_newest_first_within_its_limits() {
    use memdir::ActivityQuery;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    for (t, kind) in [
        ("2026-04-10T08:00:00Z", "user_said"),
        ("2026-04-12T08:00:00Z", "assistant_did"),
        ("2026-04-12T09:00:00Z", "user_said"),
        ("2026-04-14T07:00:00Z", "user_said"),
        ("2026-04-14T08:00:00Z", "decision"),
    ] {
        let mem = Memory::open(&dir).unwrap().with_clock(at(t));
        let mut f = serde_json::Map::new();
        f.insert("at".into(), t.into());
        mem.note(kind, f).unwrap();
    }
    let mem = Memory::open(&dir).unwrap();
    let q = |limit, since: Option<&str>, types: &[&str]| {
        let a = mem
            .activity(&ActivityQuery {
                limit,
                since: since.map(|s| s.parse().unwrap()),
                types: types.iter().map(|t| t.to_string()).collect(),
                max_chars: 1 << 20,
            })
            .unwrap();
        let at: Vec<String> = a
            .events
            .iter()
            .map(|e| e.field_str("at").unwrap()[5..13].to_string())
            .collect();
        (at, a.more)
    };
    assert_eq!(
        q(10, None, &[]),
        (
            vec!["04-14T08", "04-14T07", "04-12T09", "04-12T08", "04-10T08"]
                .into_iter()
                .map(String::from)
                .collect(),
            false
        )
    );
    assert_eq!(q(2, None, &[]).0, vec!["04-14T08", "04-14T07"]);
    assert!(q(2, None, &[]).1);
    assert_eq!(
        q(10, None, &["user_said"]).0,
        vec!["04-14T07", "04-12T09", "04-10T08"]
    );
    assert_eq!(
        q(10, Some("2026-04-12"), &["user_said", "assistant_did"]).0,
        vec!["04-14T07", "04-12T09", "04-12T08"]
    );
    assert_eq!(q(10, Some("2026-04-15"), &[]).0, Vec::<String>::new());
    // The size bound: the first event always, then only while the lines fit.
    let a = mem
        .activity(&ActivityQuery {
            limit: 10,
            since: None,
            types: vec![],
            max_chars: 100,
        })
        .unwrap();
    assert_eq!(a.events.len(), 1);
    assert!(a.more);
}

#[test]
fn edit_rename_and_activity_work_in_the_none_mode() {
    use memdir::{ActivityQuery, Edit};
    let mem = Memory::in_memory().with_clock(at("2026-04-14T12:00:00Z"));
    mem.write(&draft("user_role", "user", "Argentina fan"))
        .unwrap();
    let append = Edit {
        append: Some("Plays on Saturdays.".into()),
        ..Edit::default()
    };
    assert_eq!(
        mem.edit("user_role", &append).unwrap().outcome,
        WriteOutcome::Updated
    );
    mem.rename("user_role", "user_fan").unwrap();
    assert_eq!(
        mem.read("user_fan").unwrap().body,
        "Argentina fan\nPlays on Saturdays."
    );
    assert!(mem.read("user_role").is_err());
    let a = mem
        .activity(&ActivityQuery {
            limit: 5,
            since: None,
            types: vec![],
            max_chars: 1000,
        })
        .unwrap();
    assert_eq!(a.events.len(), 1);
    assert_eq!(a.events[0].kind, "renamed");
}
