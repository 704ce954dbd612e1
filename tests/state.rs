//! Agent state, sessions and timeline repair end to end (spec/memory-format.md#agent-state,
//! spec/ranking.md#agent-state-in-the-block, spec/timeline-format.md#sessions and #repair,
//! spec/cli.md#state and #sessions): the library, the CLI and the MCP example.

use memdir::{Clock, ContextRequest, Draft, Error, Export, ListRequest, Memory, WriteOutcome};
use serde_json::{Map, Value, json};

use crate::common::{memdir, run, stderr, stdout};

fn at(t: &str) -> Clock {
    Clock::fixed(t.parse().unwrap())
}

fn fields(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn on_disk() -> (tempfile::TempDir, Memory) {
    let tmp = tempfile::tempdir().unwrap();
    let mem = Memory::open(tmp.path().join("memory"))
        .unwrap()
        .with_clock(at("2026-04-14T12:00:00Z"));
    mem.init().unwrap();
    (tmp, mem)
}

#[test]
fn state_set_get_list_unset_and_read_only() {
    // spec/cli.md#state
    let (tmp, mem) = on_disk();
    let dir = tmp.path().join("memory");
    assert_eq!(mem.state("mood").unwrap(), None);
    let (o, e) = mem.set_state("mood", "calm").unwrap();
    assert_eq!(o, WriteOutcome::Created);
    let e = e.unwrap();
    assert_eq!(e.kind, "state_set");
    assert_eq!(e.field_str("key"), Some("state_mood"));
    let (o, e) = mem.set_state("mood", "calm").unwrap();
    assert_eq!(
        (o, e),
        (WriteOutcome::Unchanged, None),
        "no event for no change"
    );
    mem.set_state("mood", "focused").unwrap();
    let got = mem.state("mood").unwrap().unwrap();
    assert_eq!(got.value, "focused");
    assert_eq!(got.file_key, "state_mood");
    let text = std::fs::read_to_string(dir.join("state_mood.md")).unwrap();
    assert!(text.contains("\ntype: state\n"), "{text}");
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert_eq!(
        index,
        "# Agent Memory\n\n## State\n- [mood](state_mood.md) — agent state mood\n"
    );
    // A person marks it read-only: set and unset are refused and change nothing.
    std::fs::write(
        dir.join("state_mood.md"),
        text.replace("type: state\n", "type: state\nread_only: true\nlimit: 5\n"),
    )
    .unwrap();
    let before = std::fs::read(dir.join("state_mood.md")).unwrap();
    let events_before = mem.events().unwrap().events.len();
    let err = mem.set_state("mood", "angry").unwrap_err();
    assert!(matches!(err, Error::ReadOnly { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "state `mood` is read-only (`read_only: true` in state_mood.md); nothing was changed"
    );
    assert!(matches!(
        mem.unset_state("mood").unwrap_err(),
        Error::ReadOnly { .. }
    ));
    assert_eq!(std::fs::read(dir.join("state_mood.md")).unwrap(), before);
    assert_eq!(mem.events().unwrap().events.len(), events_before);
    let list = mem.states().unwrap().entries;
    assert_eq!(list.len(), 1);
    assert!(list[0].read_only);
    assert_eq!(list[0].limit, Some(5));
    // Unset forgets the file with a `forgot` event (a tombstone sync carries).
    mem.set_state("task", "plan").unwrap();
    let ev = mem.unset_state("task").unwrap();
    assert_eq!(ev.kind, "forgot");
    assert_eq!(ev.field_str("reason"), Some("state unset"));
    assert!(!dir.join("state_task.md").exists());
    // A memory of another type under a state file name is not overwritten.
    mem.write(&Draft {
        key: "state_x".into(),
        name: "x".into(),
        description: "d".into(),
        kind: "user".into(),
        body: "b".into(),
        ..Draft::default()
    })
    .unwrap();
    assert!(mem.set_state("x", "y").is_err());
    assert_eq!(mem.state("x").unwrap(), None);
}

#[test]
fn state_ranks_with_salience_one_and_no_decay() {
    // spec/ranking.md#salience
    let (_tmp, mem) = on_disk();
    mem.set_state("mood", "calm").unwrap();
    let later = Memory::open(mem.root())
        .unwrap()
        .with_clock(at("2027-04-14T12:00:00Z"));
    let list = later.list(&ListRequest::new()).unwrap().memories;
    assert_eq!(list[0].key, "state_mood");
    assert_eq!(list[0].score, 1.0);
}

#[test]
fn the_block_shows_state_within_limits_and_the_hard_budget() {
    // spec/ranking.md#agent-state-in-the-block
    let (tmp, mem) = on_disk();
    let dir = tmp.path().join("memory");
    mem.write(&Draft {
        key: "user_role".into(),
        name: "Role".into(),
        description: "plays on Saturdays".into(),
        kind: "user".into(),
        body: "Plays 5-a-side.".into(),
        ..Draft::default()
    })
    .unwrap();
    mem.set_state("goal", "win the league").unwrap();
    mem.set_state("notes", &"n".repeat(3000)).unwrap();
    // A limit of 100 characters on `notes`.
    let p = dir.join("state_notes.md");
    let t = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, t.replace("type: state\n", "type: state\nlimit: 100\n")).unwrap();

    let b = mem.context(&ContextRequest::new(2000)).unwrap().block;
    let state_at = b.text.find("\n## Agent state\n").expect("state section");
    assert_eq!(
        b.text[..state_at].chars().count(),
        b.index_chars,
        "right after the index section"
    );
    assert!(
        b.text[state_at..]
            .starts_with("\n## Agent state\n\n### goal\n\nwin the league\n\n### notes\n\n")
    );
    assert!(b.text.contains(&format!(
        "{}\n[… excerpt: the first 100 of 3000 characters (its limit); `memdir state get notes` shows all]\n",
        "n".repeat(100)
    )));
    assert!(!b.text.contains(&"n".repeat(101)));
    assert_eq!(
        b.state
            .iter()
            .map(|i| (i.key.as_str(), i.excerpt))
            .collect::<Vec<_>>(),
        [("state_goal", false), ("state_notes", true)]
    );
    assert!(
        b.memories.iter().all(|m| !m.key.starts_with("state_")),
        "not twice"
    );
    assert!(b.text.contains("Plays 5-a-side."));

    // Without a limit, the 3000-character value is larger than the whole budget:
    // the block stays within max_tokens × 4 and says what was left out.
    std::fs::write(&p, t).unwrap();
    for max in [1, 10, 50, 100, 200, 400, 700, 1000] {
        for query in [None, Some("league")] {
            let b = mem
                .context(&ContextRequest {
                    query: query.map(Into::into),
                    ..ContextRequest::new(max)
                })
                .unwrap()
                .block;
            assert!(
                b.text.chars().count() <= max * 4,
                "{max} {query:?}: {} chars",
                b.text.chars().count()
            );
            if b.state_hidden > 0 && b.text.contains("## Agent state") {
                assert!(
                    b.text.contains("state entr") && b.text.contains("not shown (over the budget"),
                    "{max}: {}",
                    b.text
                );
            }
        }
    }
    let b = mem.context(&ContextRequest::new(400)).unwrap().block;
    assert_eq!(b.state_hidden, 1);
    assert!(b.text.contains("win the league"));
    assert!(b.text.contains(
        "\n… 1 state entry not shown (over the budget; `memdir state list` shows all)\n"
    ));
}

#[test]
fn a_compacted_session_shows_its_summary_not_its_events() {
    // spec/ranking.md#budget (4. timeline), spec/timeline-format.md#sessions
    let (_tmp, mem) = on_disk();
    for i in 0..6 {
        let m = Memory::open(mem.root())
            .unwrap()
            .with_clock(at(&format!("2026-04-14T10:0{i}:00Z")));
        m.note(
            "user_said",
            fields(json!({"text": format!("turn {i}"), "session": "s1"})),
        )
        .unwrap();
    }
    let m = Memory::open(mem.root())
        .unwrap()
        .with_clock(at("2026-04-14T11:00:00Z"));
    m.note(
        "user_said",
        fields(json!({"text": "other", "session": "s2"})),
    )
    .unwrap();
    let before = m.context(&ContextRequest::new(4000)).unwrap().block;
    assert!(before.text.contains("turn 3"));
    let sessions = m.sessions().unwrap().sessions;
    assert_eq!(sessions.len(), 2);
    assert_eq!((sessions[0].id.as_str(), sessions[0].count), ("s1", 6));

    let done = m
        .compact_session(
            "s1",
            &Draft {
                key: "project_s1".into(),
                name: "Session s1".into(),
                description: "summary of s1".into(),
                kind: "project".into(),
                body: "Six turns about football.".into(),
                ..Draft::default()
            },
            None,
            &memdir::IfExists::Replace,
        )
        .unwrap();
    assert_eq!(done.through, "2026-04-14T10:05:00.000Z");
    assert_eq!(done.events, 6);
    let r = m.read("project_s1").unwrap();
    assert_eq!(
        r.meta
            .summarizes()
            .map(|s| (s.session, s.through.to_rfc3339())),
        Some(("s1".into(), "2026-04-14T10:05:00+00:00".into()))
    );
    let after = m.context(&ContextRequest::new(4000)).unwrap().block;
    assert!(!after.text.contains("turn 3"), "{}", after.text);
    assert!(after.text.contains("Six turns about football."));
    assert!(after.text.contains(
        r#""type":"compacted","session":"s1","key":"project_s1","through":"2026-04-14T10:05:00.000Z""#
    ));
    assert!(
        after.text.contains(r#""text":"other""#),
        "other sessions stay"
    );
    // The source events are still on disk.
    // (The transcript also lists the session's `compacted` event.)
    assert_eq!(m.session_transcript("s1", 10_000).unwrap().events, 7);
    // An event of the session after `through` is shown again.
    let m2 = Memory::open(mem.root())
        .unwrap()
        .with_clock(at("2026-04-14T12:00:00Z"));
    m2.note(
        "user_said",
        fields(json!({"text": "turn 6", "session": "s1"})),
    )
    .unwrap();
    let later = m2.context(&ContextRequest::new(4000)).unwrap().block;
    assert!(later.text.contains("turn 6") && !later.text.contains("turn 5"));
    // No such session: an error, nothing written.
    assert!(matches!(
        m2.compact_session(
            "nope",
            &Draft {
                key: "k".into(),
                name: "n".into(),
                description: "d".into(),
                kind: "project".into(),
                ..Draft::default()
            },
            None,
            &memdir::IfExists::Replace,
        ),
        Err(Error::NoSession { .. })
    ));
    assert!(m2.read("k").is_err());
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let dst = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

#[test]
fn check_fix_repairs_a_damaged_timeline_losing_nothing() {
    // spec/timeline-format.md#repair
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    copy_dir(&crate::common::fixture("timeline/damaged"), &dir);
    let day14 = dir.join("timeline/2026-04-14.jsonl");
    let day15 = dir.join("timeline/2026-04-15.jsonl");
    let orig14 = std::fs::read_to_string(&day14).unwrap();
    let orig15 = std::fs::read_to_string(&day15).unwrap();
    let bad = orig14.lines().nth(3).unwrap().to_string();

    // Without --fix: reported, nothing touched.
    let o = run(memdir(&dir).args(["check"]));
    let out = stdout(&o);
    assert!(out.contains("2026-04-14.jsonl: timeline needs repair; `check --fix` would: dropped 1 duplicate line(s), sorted lines by time, moved 1 event(s) to timeline/2026-04-15.jsonl, kept 1 unreadable line(s) untouched"), "{out}");
    assert_eq!(std::fs::read_to_string(&day14).unwrap(), orig14);

    let o = run(memdir(&dir).args(["--json", "check", "--fix"]));
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let repairs = report["timeline_repairs"].as_array().unwrap();
    assert_eq!(repairs.len(), 2, "{report}");
    assert_eq!(repairs[0]["file"], "timeline/2026-04-14.jsonl");
    assert_eq!(repairs[0]["duplicates"], 1);
    assert_eq!(repairs[0]["sorted"], true);
    assert_eq!(repairs[1]["moved_in"], 1);
    assert_eq!(
        std::fs::read_to_string(&day14).unwrap(),
        [
            r#"{"ts":"2026-04-14T10:00:00.000Z","type":"user_said","text":"first"}"#,
            r#"{"ts":"2026-04-14T11:00:00.000Z","type":"user_said","text":"second"}"#,
            r#"{"ts":"2026-04-14T12:00:00.000Z","type":"user_said","text":"third"}"#,
            &bad,
            ""
        ]
        .join("\n")
    );
    assert_eq!(
        std::fs::read_to_string(&day15).unwrap(),
        [
            r#"{"ts":"2026-04-15T08:00:00.000Z","type":"user_said","text":"filed under the wrong day"}"#,
            r#"{"ts":"2026-04-15T09:00:00.000Z","type":"user_said","text":"next day"}"#,
            ""
        ]
        .join("\n")
    );
    // Backups of both day files, byte for byte, and named in the report.
    for (r, orig) in repairs.iter().zip([&orig14, &orig15]) {
        let b = r["backup"].as_str().unwrap();
        assert!(b.starts_with(".memdir/backups/timeline-2026-04-1"), "{b}");
        assert_eq!(&std::fs::read_to_string(dir.join(b)).unwrap(), orig);
    }
    // The malformed line is still reported, and a second repair does nothing.
    let o = run(memdir(&dir).args(["check", "--fix"]));
    let out = stdout(&o);
    assert!(
        out.contains("2026-04-14.jsonl:4: timeline line skipped"),
        "{out}{}",
        stderr(&o)
    );
    assert!(!out.contains("fixed: timeline"), "{out}");
}

#[test]
fn cli_note_session_env_sessions_show_and_compact() {
    // spec/cli.md#sessions
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    assert!(run(memdir(&dir).arg("init")).status.success());
    for i in 0..4 {
        let o = run(memdir(&dir)
            .env("MEMDIR_SESSION", "env-session")
            .env("MEMDIR_NOW", format!("2026-04-14T10:0{i}:00Z"))
            .args(["note", "user_said", &format!("text=turn {i}")]));
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains(r#""session":"env-session""#));
    }
    let o = run(memdir(&dir).env("MEMDIR_SESSION", "env-session").args([
        "note",
        "--session",
        "flag",
        "x",
    ]));
    assert!(stdout(&o).contains(r#""session":"flag""#), "the flag wins");
    let o = run(memdir(&dir).args(["--json", "sessions"]));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v[0]["id"], "env-session");
    assert_eq!(v[0]["count"], 4);
    assert_eq!(v[0]["types"], json!(["user_said"]));
    let o = run(memdir(&dir).args(["session", "show", "env-session", "--max-tokens", "50"]));
    let t = stdout(&o);
    assert!(t.chars().count() <= 200 + 1, "{t}");
    assert!(
        t.contains("older events not shown") && t.contains("turn 3"),
        "{t}"
    );
    let o = run(memdir(&dir).args(["session", "show", "nope"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no timeline events with session `nope`"));
    let o = run(memdir(&dir).args([
        "session",
        "compact",
        "env-session",
        "--key",
        "project_env",
        "--body",
        "four turns",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("project_env.md")).unwrap();
    assert!(
        text.contains(
            "summarizes:\n  session: env-session\n  through: \"2026-04-14T10:03:00.000Z\"\n"
        ),
        "{text}"
    );
    // state through the CLI, the value from stdin.
    let mut c = memdir(&dir);
    c.args(["state", "set", "mood"])
        .stdin(std::process::Stdio::piped());
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(stdout(&o).trim(), "created state mood");
    let o = run(memdir(&dir).args(["state", "get", "mood"]));
    assert_eq!(stdout(&o).trim(), "from stdin");
}

#[cfg(feature = "mcp")]
#[allow(dead_code)]
#[path = "../examples/session_compaction.rs"]
mod example;

#[cfg(feature = "mcp")]
#[test]
fn the_session_compaction_example_runs() {
    // examples/session_compaction.rs against the binary under test.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let out = example::run(&crate::common::bin(), &dir).unwrap();
    assert!(
        out.transcript
            .starts_with(&format!("# Session {} (10 events)", example::SESSION))
    );
    assert!(
        out.transcript.contains("older events not shown"),
        "{}",
        out.transcript
    );
    assert!(out.context_before.contains("Tom brings the ball"));
    assert!(
        out.context_before
            .contains("\n## Agent state\n\n### current_task\n\nhelp plan the Saturday match\n")
    );
    assert!(
        !out.context_after.contains("Tom brings the ball, I bring"),
        "{}",
        out.context_after
    );
    assert!(
        out.context_after
            .contains("Tom brings the ball, the user brings bibs.")
    );
    assert!(out.context_after.contains(r#""type":"compacted""#));
    let check = run(memdir(&dir).args(["check"]));
    assert!(check.status.success(), "{}", stdout(&check));
}

#[test]
fn state_and_summaries_round_trip_through_the_blob() {
    // spec/memory-format.md#agent-state, spec/cli.md#import: a memory/0.1 blob carries
    // `type: state`, `limit`, `read_only` and `summarizes` as they are.
    let (tmp, mem) = on_disk();
    let dir = tmp.path().join("memory");
    mem.set_state("mood", "calm").unwrap();
    let p = dir.join("state_mood.md");
    let t = std::fs::read_to_string(&p).unwrap();
    std::fs::write(
        &p,
        t.replace("type: state\n", "type: state\nlimit: 3\nread_only: true\n"),
    )
    .unwrap();
    mem.note("user_said", fields(json!({"text": "hi", "session": "s1"})))
        .unwrap();
    mem.compact_session(
        "s1",
        &Draft {
            key: "project_s1".into(),
            name: "S1".into(),
            description: "summary".into(),
            kind: "project".into(),
            body: "said hi".into(),
            ..Draft::default()
        },
        None,
        &memdir::IfExists::Replace,
    )
    .unwrap();
    let Export {
        text: blob,
        problems,
        ..
    } = mem.export().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let other = Memory::in_memory().with_clock(at("2026-04-15T12:00:00Z"));
    other
        .import(blob.as_bytes(), memdir::Strategy::Merge, false)
        .unwrap();
    let s = other.state("mood").unwrap().unwrap();
    assert_eq!(
        (s.value.as_str(), s.limit, s.read_only),
        ("calm", Some(3), true)
    );
    let r = other.read("project_s1").unwrap();
    assert_eq!(r.meta.summarizes().unwrap().session, "s1");
    let b = other.context(&ContextRequest::new(2000)).unwrap().block;
    assert!(
        b.text
            .contains("\n### mood\n\ncal\n[… excerpt: the first 3 of 4 characters")
    );
    assert!(
        !b.text.contains(r#""text":"hi""#),
        "the compaction holds after import"
    );
}
