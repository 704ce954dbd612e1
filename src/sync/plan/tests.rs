//! Unit tests of the sync planner: the sync.md case table, line-wise merges and the
//! planner's laws as property tests.

use super::*;
use proptest::prelude::{prop, prop_assert, prop_assert_eq, prop_oneof, proptest};
use proptest::strategy::Strategy as Gen;

fn listing(v: &[(&str, &str)]) -> Listing {
    v.iter()
        .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
        .collect()
}

/// One op as a short line, with contents shown as text; conflict copies by content.
fn show(op: &Op) -> String {
    let s = |c: &[u8]| String::from_utf8_lossy(c).replace('\n', "|");
    match op {
        Op::SaveConflict { path, content, .. } => format!("save {path} {}", s(content)),
        Op::Delete { path } => format!("delete {path}"),
        Op::Write { path, content } => format!("write {path} {}", s(content)),
        Op::RebuildIndex => "rebuild".into(),
    }
}

fn check(
    base: &[(&str, &str)],
    local: &[(&str, &str)],
    remote: &[(&str, &str)],
    strategy: Strategy,
    expect: &[&str],
) -> Plan {
    let p = plan(&listing(base), &listing(local), &listing(remote), strategy);
    let got: Vec<String> = p.ops.iter().map(show).collect();
    assert_eq!(
        got, expect,
        "base {base:?} local {local:?} remote {remote:?} {strategy:?}"
    );
    p
}

const M: Strategy = Strategy::Merge;
const R: Strategy = Strategy::Replace;
const E1: &str = r#"{"ts":"2026-01-01T10:00:00.000Z","type":"a"}"#;
const E2: &str = r#"{"ts":"2026-01-01T11:00:00.000Z","type":"b"}"#;
const E3: &str = r#"{"ts":"2026-01-01T12:00:00.000Z","type":"c"}"#;
const T: &str = "timeline/2026-01-01.jsonl";

#[test]
fn case_table_files() {
    // spec/sync.md#three-way-merge-case-table — rows 1 to 14, for a memory file.
    // Each row: base, local, remote (absent = deleted / never existed), strategy, ops.
    type V = Option<&'static str>;
    type Row = (u8, V, V, V, Strategy, Vec<&'static str>);
    let rows: Vec<Row> = vec![
        (1, Some("A"), Some("A"), Some("A"), M, vec![]),
        (1, Some("A"), Some("A"), Some("A"), R, vec![]),
        (
            2,
            Some("A"),
            Some("A"),
            Some("B"),
            M,
            vec!["write a.md B", "rebuild"],
        ),
        (
            2,
            Some("A"),
            Some("A"),
            Some("B"),
            R,
            vec!["write a.md B", "rebuild"],
        ),
        (3, Some("A"), Some("B"), Some("A"), M, vec![]),
        (3, Some("A"), Some("B"), Some("A"), R, vec![]),
        (4, Some("A"), Some("B"), Some("B"), M, vec![]),
        (4, Some("A"), Some("B"), Some("B"), R, vec![]),
        (
            5,
            Some("A"),
            Some("B"),
            Some("C"),
            M,
            vec!["save a.md C", "rebuild"],
        ),
        (
            5,
            Some("A"),
            Some("B"),
            Some("C"),
            R,
            vec!["save a.md B", "write a.md C", "rebuild"],
        ),
        (
            6,
            Some("A"),
            Some("A"),
            None,
            M,
            vec!["delete a.md", "rebuild"],
        ),
        (
            6,
            Some("A"),
            Some("A"),
            None,
            R,
            vec!["delete a.md", "rebuild"],
        ),
        (7, Some("A"), None, Some("A"), M, vec![]),
        (7, Some("A"), None, Some("A"), R, vec![]),
        (8, Some("A"), None, None, M, vec![]),
        (
            9,
            Some("A"),
            None,
            Some("B"),
            M,
            vec!["write a.md B", "rebuild"],
        ),
        (
            9,
            Some("A"),
            None,
            Some("B"),
            R,
            vec!["write a.md B", "rebuild"],
        ),
        (10, Some("A"), Some("B"), None, M, vec![]),
        (10, Some("A"), Some("B"), None, R, vec![]),
        (
            11,
            None,
            None,
            Some("B"),
            M,
            vec!["write a.md B", "rebuild"],
        ),
        (12, None, Some("B"), None, M, vec![]),
        (12, None, Some("B"), None, R, vec![]),
        (13, None, Some("B"), Some("B"), R, vec![]),
        (
            14,
            None,
            Some("B"),
            Some("C"),
            M,
            vec!["save a.md C", "rebuild"],
        ),
        (
            14,
            None,
            Some("B"),
            Some("C"),
            R,
            vec!["save a.md B", "write a.md C", "rebuild"],
        ),
    ];
    for (row, b, l, r, s, expect) in rows {
        let one = |v: V| v.map(|c| vec![("a.md", c)]).unwrap_or_default();
        let p = check(&one(b), &one(l), &one(r), s, &expect);
        // Every row but the unchanged one reports the path.
        assert_eq!(p.report.len(), usize::from(row != 1), "row {row}");
    }
}

fn memory(tags: &str, updated: &str, body: &str) -> String {
    format!(
        "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: {updated}\ntags: [{tags}]\n---\n\n{body}\n"
    )
}

#[test]
fn case_table_line_wise_merge() {
    // spec/sync.md#line-wise-merge — row 5a: two devices each add a link and a tag.
    let base = memory("a", "2026-01-01", "Bob.");
    let local = memory("a, l", "2026-01-02", "Bob.\n- works_at:: [[acme]]");
    let remote = memory("a, r", "2026-01-03", "Bob.\n- knows:: [[carol]]");
    for s in [M, R] {
        let p = plan(
            &listing(&[("bob.md", &base)]),
            &listing(&[("bob.md", &local)]),
            &listing(&[("bob.md", &remote)]),
            s,
        );
        let (Op::Write { path, content }, Some(Op::RebuildIndex), 2) =
            (&p.ops[0], p.ops.get(1), p.ops.len())
        else {
            panic!("{s:?}: {:?}", p.ops.iter().map(show).collect::<Vec<_>>());
        };
        assert_eq!(path, "bob.md");
        let got = crate::memory::frontmatter::parse(std::str::from_utf8(content).unwrap()).unwrap();
        assert_eq!(got.meta.tags, vec!["a", "l", "r"]);
        assert_eq!(got.meta.updated.text, "2026-01-03");
        assert_eq!(got.body, "Bob.\n- works_at:: [[acme]]\n- knows:: [[carol]]");
        assert_eq!(p.report[0].outcome, Outcome::Merged);
        assert_eq!(p.conflicts().count(), 0);
    }
    // The other device, merging the result against its own version, converges.
    let p = plan(
        &listing(&[("bob.md", &base)]),
        &listing(&[("bob.md", &remote)]),
        &listing(&[("bob.md", &local)]),
        M,
    );
    let merged = apply(&listing(&[("bob.md", &remote)]), &p.ops);
    let text = String::from_utf8(merged["bob.md"].clone()).unwrap();
    assert!(text.contains("- a\n- r\n- l\n"), "{text}");
    assert!(text.contains("- works_at:: [[acme]]") && text.contains("- knows:: [[carol]]"));
    // The same line changed differently: row 5 (a conflict copy) as before.
    let l2 = memory("a", "2026-01-02", "Bob L.");
    let r2 = memory("a", "2026-01-02", "Bob R.");
    let p = plan(
        &listing(&[("bob.md", &base)]),
        &listing(&[("bob.md", &l2)]),
        &listing(&[("bob.md", &r2)]),
        M,
    );
    assert_eq!(p.conflicts().count(), 1);
    // A file under a folder, or not a memory, is never merged line-wise.
    let p = plan(
        &listing(&[("notes/bob.md", &base)]),
        &listing(&[("notes/bob.md", &local)]),
        &listing(&[("notes/bob.md", &remote)]),
        M,
    );
    assert_eq!(p.conflicts().count(), 1);
}

#[test]
fn case_table_outcomes() {
    // spec/sync.md#three-way-merge-case-table — the report column.
    let a = |v: &'static str| vec![("a.md", v)];
    let none: Vec<(&str, &str)> = vec![];
    type Files = Vec<(&'static str, &'static str)>;
    let rows: Vec<(Files, Files, Files, Outcome)> = vec![
        (a("A"), a("A"), a("B"), Outcome::TookRemote),
        (a("A"), a("B"), a("A"), Outcome::KeptLocal),
        (a("A"), a("B"), a("B"), Outcome::Converged),
        (a("A"), none.clone(), none.clone(), Outcome::Converged),
        (a("A"), a("A"), none.clone(), Outcome::Forgotten),
        (
            a("A"),
            none.clone(),
            a("B"),
            Outcome::EditBeatsDelete {
                edited: Side::Remote,
            },
        ),
        (
            a("A"),
            a("B"),
            none.clone(),
            Outcome::EditBeatsDelete {
                edited: Side::Local,
            },
        ),
        (
            none.clone(),
            a("B"),
            a("C"),
            Outcome::Conflict {
                winner: Side::Local,
                copy: conflict_copy_path("a.md", b"C"),
            },
        ),
    ];
    for (b, l, r, want) in rows {
        let p = plan(&listing(&b), &listing(&l), &listing(&r), M);
        assert_eq!(p.report[0].outcome, want, "{b:?} {l:?} {r:?}");
    }
}

#[test]
fn case_table_timelines() {
    // spec/sync.md#three-way-merge-case-table — rows 15 to 17.
    let t = |lines: &[&str]| -> String { lines.iter().map(|l| format!("{l}\n")).collect() };
    let (e1, e12, e13, e123) = (t(&[E1]), t(&[E1, E2]), t(&[E1, E3]), t(&[E1, E2, E3]));
    let want = format!("write {T} {}", e123.replace('\n', "|"));
    // Row 15: changed on both sides: union in time order, under either strategy.
    for s in [M, R] {
        check(&[(T, &e1)], &[(T, &e13)], &[(T, &e12)], s, &[&want]);
    }
    // Row 16: added on both sides / first sync: union.
    check(&[], &[(T, &e13)], &[(T, &e12)], M, &[&want]);
    // The union equals the local file: nothing to write.
    check(&[(T, &e1)], &[(T, &e123)], &[(T, &e12)], M, &[]);
    // The local side adds nothing to the remote one: the remote file as it is,
    // out of time order too (re-sorted, it would be written again by the next
    // plan, whose base is this one's result).
    let e31 = t(&[E3, E1]);
    check(
        &[(T, &t(&[E1, E3]))],
        &[(T, "")],
        &[(T, &e31)],
        M,
        &[&format!("write {T} {}", e31.replace('\n', "|"))],
    );
    // Row 17: one-sided changes and deletes follow rows 2 to 10 (no index rebuild).
    check(
        &[(T, &e1)],
        &[(T, &e1)],
        &[(T, &e12)],
        M,
        &[&format!("write {T} {}", e12.replace('\n', "|"))],
    );
    check(&[(T, &e1)], &[(T, &e1)], &[], M, &[&format!("delete {T}")]);
    check(
        &[(T, &e1)],
        &[],
        &[(T, &e12)],
        M,
        &[&format!("write {T} {}", e12.replace('\n', "|"))],
    );
    // A file under timeline/ that is not a day file is an ordinary file.
    check(
        &[],
        &[("timeline/x.jsonl", "B")],
        &[("timeline/x.jsonl", "C")],
        M,
        &["save timeline/x.jsonl C", "rebuild"],
    );
}

#[test]
fn timeline_union_keeps_unparseable_lines_and_dedups_events() {
    // spec/sync.md#three-way-merge-case-table — row 15, details.
    let local = format!("{E1}\nnot json\n{E3}\n");
    // Same event as E1 with another timestamp spelling; E2; a different bad line.
    let remote = format!("{{\"ts\":\"2026-01-01T10:00:00Z\",\"type\":\"a\"}}\n\n{E2}\n{{broken\n");
    let got = String::from_utf8(union_lines(local.as_bytes(), remote.as_bytes())).unwrap();
    assert_eq!(got, format!("{E1}\nnot json\n{E2}\n{{broken\n{E3}\n"));
    // A bad line before any event sorts first.
    let got = String::from_utf8(union_lines(b"junk\n", E2.as_bytes())).unwrap();
    assert_eq!(got, format!("junk\n{E2}\n"));
}

#[test]
fn index_and_dot_entries_are_never_planned() {
    // spec/sync.md#three-way-merge-case-table — rows 18 and 19.
    let ix = |v: &'static str| vec![(INDEX_FILE, v)];
    check(&ix("A"), &ix("B"), &ix("C"), R, &[]);
    check(&[], &[], &ix("C"), R, &[]);
    check(&ix("A"), &ix("A"), &[], R, &[]);
    let dot = |v: &'static str| vec![(".memdir/state", v), (".git/x", v)];
    check(&dot("A"), &dot("B"), &dot("C"), R, &[]);
    // Timeline changes alone do not rebuild the index; memory changes do, once.
    let p = check(
        &[],
        &[],
        &[("a.md", "A"), ("b.md", "B"), (INDEX_FILE, "X")],
        M,
        &["write a.md A", "write b.md B", "rebuild"],
    );
    assert_eq!(p.report.len(), 2);
}

#[test]
fn conflict_copies_sync_and_are_deterministic() {
    // spec/sync.md#conflict-copies: a file of the directory (synced, not a memory).
    let p = conflict_copy_path("user_role.md", b"C");
    assert!(p.starts_with("conflicts/user_role."), "{p}");
    assert!(p.ends_with(".md") && p.len() == "conflicts/user_role.".len() + 12 + 3);
    assert_eq!(p, conflict_copy_path("user_role.md", b"C"));
    assert_ne!(p, conflict_copy_path("user_role.md", b"D"));
    assert_eq!(classify(&p), FileClass::File);
    let q = conflict_copy_path("notes/README", b"C");
    assert!(q.starts_with("conflicts/notes/README."), "{q}");
    let plan = plan(
        &listing(&[]),
        &listing(&[("a.md", "B")]),
        &listing(&[("a.md", "C")]),
        R,
    );
    let copies: Vec<(&str, &str)> = plan.conflicts().collect();
    assert_eq!(
        copies,
        vec![("a.md", conflict_copy_path("a.md", b"B").as_str())]
    );
}

#[test]
fn ops_are_sorted_across_paths() {
    let p = check(
        &[("b.md", "A"), ("c.md", "A")],
        &[("b.md", "A"), ("c.md", "L"), ("d.md", "L")],
        &[("a.md", "R"), ("c.md", "R"), ("d.md", "R")],
        R,
        &[
            "write a.md R",
            "delete b.md",
            "save c.md L",
            "write c.md R",
            "save d.md L",
            "write d.md R",
            "rebuild",
        ],
    );
    let paths: Vec<&str> = p.report.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, vec!["a.md", "b.md", "c.md", "d.md"]);
}

// --- properties -------------------------------------------------------------

const PATHS: [&str; 4] = ["a.md", "b.md", T, INDEX_FILE];

fn content() -> impl Gen<Value = Vec<u8>> {
    let lines = prop::collection::vec(
        prop::sample::select(vec![
            E1,
            E2,
            E3,
            "bad line",
            r#"{"ts":"2026-01-01T11:00:00Z","type":"b"}"#,
        ]),
        0..4,
    );
    prop_oneof![
        prop::sample::select(vec!["A", "B", "C"]).prop_map(|s| s.as_bytes().to_vec()),
        lines.prop_map(|v| v
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
            .into_bytes()),
    ]
}

fn listing_strategy() -> impl Gen<Value = Listing> {
    prop::collection::btree_map(
        prop::sample::select(PATHS.to_vec()).prop_map(String::from),
        content(),
        0..4,
    )
}

fn strategy() -> impl Gen<Value = Strategy> {
    prop::sample::select(vec![M, R])
}

proptest! {
    #[test]
    fn same_everywhere_plans_nothing(a in listing_strategy(), s in strategy()) {
        // spec/sync.md#three-way-merge-case-table — row 1.
        prop_assert_eq!(plan(&a, &a, &a, s), Plan::default());
    }

    #[test]
    fn planning_is_deterministic_and_sorted(
        b in listing_strategy(), l in listing_strategy(), r in listing_strategy(), s in strategy()
    ) {
        let p = plan(&b, &l, &r, s);
        prop_assert_eq!(&p, &plan(&b, &l, &r, s));
        prop_assert!(p.ops.windows(2).all(|w| w[0].order() <= w[1].order()));
        prop_assert!(p.report.windows(2).all(|w| w[0].path < w[1].path));
        // Nothing is planned on the index or on dot entries but the rebuild.
        prop_assert!(p.ops.iter().all(|o| *o == Op::RebuildIndex || classify(o.path()) != FileClass::Index));
    }

    #[test]
    fn applying_the_plan_reaches_a_fixed_point(
        b in listing_strategy(), l in listing_strategy(), r in listing_strategy(), s in strategy()
    ) {
        // Apply once, then plan again against the same base and remote: every op of
        // the second plan is a no-op on the result.
        let once = apply(&l, &plan(&b, &l, &r, s).ops);
        let again = plan(&b, &once, &r, s);
        prop_assert_eq!(apply(&once, &again.ops), once.clone());
        // After the result is pushed (remote = base = result) nothing is planned.
        prop_assert_eq!(plan(&once, &once, &once, s), Plan::default());
        // No version is lost: every local and remote memory-file version is either
        // at its path or saved as a conflict copy, unless it was deleted or lost to
        // an edit-beats-delete / one-sided change.
        for (path, v) in l.iter().chain(r.iter()) {
            if classify(path) != FileClass::File { continue; }
            let (bv, lv, rv) = (b.get(path), l.get(path), r.get(path));
            let both_changed = lv != bv && rv != bv && lv.is_some() && rv.is_some();
            if both_changed {
                let at_path = once.get(path) == Some(v);
                let copied = once.get(&conflict_copy_path(path, v)) == Some(v);
                prop_assert!(at_path || copied, "{} lost", path);
            }
        }
    }

    #[test]
    fn union_is_idempotent_and_the_same_size_either_way(
        x in content(), y in content()
    ) {
        let u = union_lines(&x, &y);
        prop_assert_eq!(union_lines(&u, &y), u.clone());
        prop_assert_eq!(union_lines(&u, &x), u.clone());
        let mut a: Vec<&[u8]> = u.split(|c| *c == b'\n').collect();
        let v = union_lines(&y, &x);
        let mut b: Vec<&[u8]> = v.split(|c| *c == b'\n').collect();
        a.sort();
        b.sort();
        // The same set of events either way (spelling may differ only by which side
        // wrote a duplicate first).
        prop_assert_eq!(a.len(), b.len());
    }
}
