//! Agent state and session summaries through sync (spec/sync.md#agent-state-and-sessions):
//! they are memory files and timeline lines, so the three-way merge and the timeline
//! union carry them like any other.

use super::{code, stdout, two_devices};

// spec/sync.md#three-way-merge-case-table, rows S1–S4.
#[test]
fn state_entries_and_summaries_merge_like_memories() {
    // S1: different state keys on two devices never conflict.
    let (_tmp, a, b) = two_devices(&[]);
    a.ok(&["state", "set", "--offline", "mood", "calm"]);
    a.ok(&["sync"]);
    b.ok(&["state", "set", "--offline", "task", "plan the match"]);
    b.ok(&["sync"]);
    a.ok(&["sync"]);
    for d in [&a, &b] {
        assert_eq!(stdout(&d.ok(&["state", "get", "mood"])).trim(), "calm");
        assert_eq!(
            stdout(&d.ok(&["state", "get", "task"])).trim(),
            "plan the match"
        );
        assert!(d.conflict_copies().is_empty());
        let index = std::fs::read_to_string(d.dir.join("MEMORY.md")).unwrap();
        assert!(
            index.contains("## State\n- [mood](state_mood.md)"),
            "{index}"
        );
    }

    // S2: one key set to different values on both devices is a conflict of one file:
    // the device that syncs second keeps its value (merge) and saves the other as a
    // conflict copy, as for any memory (row 5).
    let (_tmp, a, b) = two_devices(&[]);
    a.ok(&["state", "set", "--offline", "mood", "calm"]);
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    a.ok(&["state", "set", "--offline", "mood", "tired"]);
    a.ok(&["sync"]);
    b.ok(&["state", "set", "--offline", "mood", "happy"]);
    b.ok(&["sync"]);
    assert_eq!(stdout(&b.ok(&["state", "get", "mood"])).trim(), "happy");
    assert_eq!(b.conflict_copies().len(), 1, "{:?}", b.conflict_copies());
    a.ok(&["sync"]);
    assert_eq!(stdout(&a.ok(&["state", "get", "mood"])).trim(), "happy");

    // S4: an unset (a forget) propagates.
    a.ok(&["state", "unset", "mood"]);
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    assert_eq!(code(&b.run(&["state", "get", "mood"])), Some(1));

    // S3: one session compacted on two devices into two memories: both are kept,
    // and `check` names both.
    let (_tmp, a, b) = two_devices(&[]);
    a.ok(&[
        "note",
        "--offline",
        "--session",
        "s1",
        "user_said",
        "text=hi",
    ]);
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    a.ok(&[
        "session",
        "compact",
        "--offline",
        "s1",
        "--key",
        "project_s1_a",
        "--body",
        "said hi",
    ]);
    a.ok(&["sync"]);
    b.ok(&[
        "session",
        "compact",
        "--offline",
        "s1",
        "--key",
        "project_s1_b",
        "--body",
        "greeting",
    ]);
    b.ok(&["sync"]);
    a.ok(&["sync"]);
    for d in [&a, &b] {
        let keys: Vec<String> = d.memories().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["project_s1_a", "project_s1_b"]);
        let check = d.run(&["check"]);
        let out = stdout(&check);
        assert_eq!(code(&check), Some(0), "{out}");
        assert!(
            out.contains("session `s1` is summarized by 2 memories (project_s1_a, project_s1_b)"),
            "{out}"
        );
        // Both `compacted` events arrived by the timeline union.
        let tl = stdout(&d.ok(&["timeline", "--limit", "10"]));
        assert_eq!(tl.matches("\"type\":\"compacted\"").count(), 2, "{tl}");
    }
}
