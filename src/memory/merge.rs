//! The three-way merge of one memory file (spec/sync.md#line-wise-merge).
//!
//! Given the common ancestor and two descendants of a memory file, merges the body line
//! by line (changes to different lines are both kept; only changes to the same lines
//! are a conflict) and the frontmatter field by field: `tags`, `aliases` and
//! `supersedes` as sets (each side's additions and removals applied), `updated` as the
//! later of the two, every other field taken from the side that changed it. It returns
//! `None` for a conflict, and the caller keeps its conflict-copy behaviour. Pure: no IO,
//! no clock; lines are compared with the `similar` crate's Myers diff.

use serde_json::Value;
use similar::{Algorithm, DiffOp};

use crate::memory::Meta;
use crate::memory::frontmatter::{self, list_values};

/// Fields merged as sets rather than as single values.
pub const SET_FIELDS: [&str; 3] = ["tags", "aliases", "supersedes"];

/// Bodies longer than this many lines are not merged line by line (the diff is
/// quadratic in the worst case); they conflict as whole files, as before.
const MAX_LINES: usize = 20_000;

/// Merges three versions of a memory file. `None` when both sides changed the same
/// lines or the same field differently, or when a version does not parse.
pub fn merge_file(base: &str, local: &str, remote: &str) -> Option<String> {
    let b = frontmatter::parse(base).ok()?;
    let l = frontmatter::parse(local).ok()?;
    let r = frontmatter::parse(remote).ok()?;
    let body = merge_lines(&b.body, &l.body, &r.body)?;
    let meta = merge_meta(&b.meta, &l.meta, &r.meta)?;
    if !agrees(&b.meta, &l.meta, &r.meta, &meta) {
        return None;
    }
    let text = frontmatter::render(&meta, &body);
    // The merge must read back: a merged file that does not parse would turn a sync
    // into data loss, so it is a conflict instead.
    frontmatter::parse(&text).ok()?;
    Some(text)
}

/// One side's change to the base: lines `start..end` of the base become `lines`.
#[derive(Debug, Clone, PartialEq)]
struct Hunk<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
    local: bool,
}

fn hunks<'a>(base: &[&'a str], side: &[&'a str], local: bool) -> Vec<Hunk<'a>> {
    let ops = similar::capture_diff_slices(Algorithm::Myers, base, side);
    let mut out: Vec<Hunk<'a>> = Vec::new();
    for op in ops {
        let (start, end, new) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => (old_index, old_index + old_len, new_index..new_index),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index, old_index, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                old_index,
                old_index + old_len,
                new_index..new_index + new_len,
            ),
        };
        // Ops that touch (no equal line between them) are one change.
        match out.last_mut() {
            Some(h) if h.end == start => {
                h.end = end;
                h.lines.extend_from_slice(&side[new]);
            }
            _ => out.push(Hunk {
                start,
                end,
                lines: side[new].to_vec(),
                local,
            }),
        }
    }
    out
}

fn split(s: &str) -> Vec<&str> {
    if s.is_empty() {
        Vec::new()
    } else {
        s.split('\n').collect()
    }
}

/// Whether changes from the two sides overlap: they replace common base lines, or one
/// inserts strictly inside the lines the other replaces. Changes that only touch (one
/// ends where the other starts) do not overlap.
fn overlap(a: &Hunk, b: &Hunk) -> bool {
    let inside = |p: usize, h: &Hunk| h.start < p && p < h.end;
    match (a.start == a.end, b.start == b.end) {
        (false, false) => a.start < b.end && b.start < a.end,
        (true, false) => inside(a.start, b),
        (false, true) => inside(b.start, a),
        (true, true) => false,
    }
}

/// Merges three bodies line by line; `None` on overlapping changes.
///
/// Two insertions at the same place are both kept, the local one first, the remote
/// one without the lines the local one already inserted there (two devices that each
/// add a line at the end of a memory both keep theirs).
pub fn merge_lines(base: &str, local: &str, remote: &str) -> Option<String> {
    if local == remote || remote == base {
        return Some(local.to_string());
    }
    if local == base {
        return Some(remote.to_string());
    }
    let (b, l, r) = (split(base), split(local), split(remote));
    if b.len().max(l.len()).max(r.len()) > MAX_LINES {
        return None;
    }
    let lh = hunks(&b, &l, true);
    let mut rh = hunks(&b, &r, false);
    // The same change on both sides is made once.
    rh.retain(|h| {
        !lh.iter()
            .any(|x| x.start == h.start && x.end == h.end && x.lines == h.lines)
    });
    for x in &lh {
        if rh.iter().any(|y| overlap(x, y)) {
            return None;
        }
    }
    // Two insertions at one place: the remote one keeps only lines the local one lacks.
    for y in rh.iter_mut().filter(|y| y.start == y.end) {
        if let Some(x) = lh.iter().find(|x| x.start == y.start && x.end == x.start) {
            y.lines.retain(|line| !x.lines.contains(line));
        }
    }
    let mut all: Vec<Hunk> = lh.into_iter().chain(rh).collect();
    // At one base line: insertions before replacements, local before remote.
    all.sort_by_key(|h| (h.start, h.end != h.start, !h.local));
    let mut out: Vec<&str> = Vec::new();
    let mut pos = 0;
    for h in &all {
        if h.start < pos {
            return None; // unreachable after the overlap check; never emit twice
        }
        out.extend_from_slice(&b[pos..h.start]);
        out.extend_from_slice(&h.lines);
        pos = h.end;
    }
    out.extend_from_slice(&b[pos..]);
    Some(out.join("\n").trim_end().to_string())
}

/// Three-way merge of a single value: the side that changed it wins; `None` when both
/// changed it differently.
fn pick<T: PartialEq + Clone>(base: &T, local: &T, remote: &T) -> Option<T> {
    if local == remote || remote == base {
        Some(local.clone())
    } else if local == base {
        Some(remote.clone())
    } else {
        None
    }
}

/// Three-way merge of a set kept as a list: what either side added is in, what either
/// side removed is out. Local order first, then remote additions in remote order.
pub fn merge_set(base: &[String], local: &[String], remote: &[String]) -> Vec<String> {
    let removed = |side: &[String], x: &String| base.contains(x) && !side.contains(x);
    let mut out: Vec<String> = Vec::new();
    for x in local.iter().chain(remote) {
        if !out.contains(x) && !removed(local, x) && !removed(remote, x) {
            out.push(x.clone());
        }
    }
    out
}

/// Merges the frontmatter; the local [`Meta`] is the starting point, so keys keep the
/// local file's order and formatting where their value does not change.
fn merge_meta(b: &Meta, l: &Meta, r: &Meta) -> Option<Meta> {
    let mut m = l.clone();
    m.name = pick(&b.name, &l.name, &r.name)?;
    m.description = pick(&b.description, &l.description, &r.description)?;
    m.kind = pick(&b.kind, &l.kind, &r.kind)?;
    m.source = pick(&b.source, &l.source, &r.source)?;
    m.decay = pick(&b.decay, &l.decay, &r.decay)?;
    m.important = pick(&b.important, &l.important, &r.important)?;
    m.tags = merge_set(&b.tags, &l.tags, &r.tags);
    m.supersedes = merge_set(&b.supersedes, &l.supersedes, &r.supersedes);
    m.valid_until = pick(&b.valid_until, &l.valid_until, &r.valid_until)?;
    // Two devices that created the memory separately keep the earlier date; the later
    // `updated` says when the memory last changed on either side.
    m.created = pick(&b.created, &l.created, &r.created)
        .unwrap_or_else(|| std::cmp::min_by_key(l.created.clone(), r.created.clone(), |s| s.at));
    if r.updated.at > l.updated.at {
        m.updated = r.updated.clone();
    }
    let mut keys: Vec<String> = Vec::new();
    for meta in [b, l, r] {
        for (k, _) in meta.extra.values() {
            if !keys.iter().any(|x| x == k) {
                keys.push(k.to_string());
            }
        }
    }
    for k in keys {
        let (bv, lv, rv) = (
            b.extra.get(&k).cloned(),
            l.extra.get(&k).cloned(),
            r.extra.get(&k).cloned(),
        );
        let merged = if SET_FIELDS.contains(&k.as_str()) && lv != rv {
            let list = |v: &Option<Value>| v.as_ref().map(list_values).unwrap_or_default();
            let set = merge_set(&list(&bv), &list(&lv), &list(&rv));
            if set.is_empty() && lv.is_none() && rv.is_none() {
                None
            } else {
                Some(Value::Array(set.into_iter().map(Value::String).collect()))
            }
        } else {
            pick(&bv, &lv, &rv)?
        };
        if merged != lv {
            match merged {
                Some(v) => m.extra.set(&k, v),
                None => m.extra.remove(&k),
            }
        }
    }
    Some(m)
}

/// Checks the merged frontmatter field by field on its JSON form, so that a field
/// [`merge_meta`] does not know yet (one a later version adds to [`Meta`]) can never
/// silently lose one side's change: every field must be the three-way pick of its
/// values (a set merge for [`SET_FIELDS`]), or the merge is refused as a conflict.
fn agrees(b: &Meta, l: &Meta, r: &Meta, m: &Meta) -> bool {
    let obj = |meta: &Meta| match meta.to_json() {
        Value::Object(o) => o,
        _ => serde_json::Map::new(),
    };
    let (bj, lj, rj, mj) = (obj(b), obj(l), obj(r), obj(m));
    let mut keys: Vec<&String> = Vec::new();
    for o in [&bj, &lj, &rj, &mj] {
        for k in o.keys() {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .filter(|k| !matches!(k.as_str(), "created" | "updated"))
        .all(|k| {
            let (bv, lv, rv, mv) = (bj.get(k), lj.get(k), rj.get(k), mj.get(k));
            if SET_FIELDS.contains(&k.as_str()) {
                let list = |v: Option<&Value>| v.map(list_values).unwrap_or_default();
                let want = merge_set(&list(bv), &list(lv), &list(rv));
                let mut got = list(mv);
                let mut want_sorted = want;
                got.sort();
                want_sorted.sort();
                got == want_sorted
            } else {
                pick(&bv, &lv, &rv).is_some_and(|w| w == mv)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_lines(base: &str, local: &str, remote: &str, expect: Option<&str>) {
        let got = merge_lines(base, local, remote);
        assert_eq!(
            got.as_deref(),
            expect,
            "base {base:?} local {local:?} remote {remote:?}"
        );
    }

    #[test]
    fn lines() {
        // spec/sync.md#line-wise-merge
        check_lines("a\nb\nc", "a\nb\nc", "a\nB\nc", Some("a\nB\nc"));
        check_lines("a\nb\nc", "A\nb\nc", "a\nb\nC", Some("A\nb\nC"));
        // Both add a line at the end: both kept, local first.
        check_lines("a", "a\nx", "a\ny", Some("a\nx\ny"));
        // Both add the same line: once.
        check_lines("a", "a\nx", "a\nx", Some("a\nx"));
        check_lines("a", "a\nx\ny", "a\ny\nz", Some("a\nx\ny\nz"));
        // Both change the same line differently: a conflict.
        check_lines("a\nb\nc", "a\nB\nc", "a\nβ\nc", None);
        // Adjacent changes do not overlap.
        check_lines("a\nb\nc\nd", "a\nB\nc\nd", "a\nb\nC\nd", Some("a\nB\nC\nd"));
        // One deletes a line, the other edits another.
        check_lines("a\nb\nc", "a\nc", "a\nb\nC", Some("a\nC"));
        // One deletes a line the other edits: a conflict.
        check_lines("a\nb\nc", "a\nc", "a\nB\nc", None);
        // An insertion inside lines the other side replaced: a conflict.
        check_lines("a\nb\nc\nd", "a\nX\nd", "a\nb\nn\nc\nd", None);
        // From empty.
        check_lines("", "x", "y", Some("x\ny"));
        // The same deletion on both sides.
        check_lines("a\nb\nc", "a\nc", "a\nc", Some("a\nc"));
        // CRLF never reaches here (files are normalized), but a `\r` is just text.
        check_lines("a\r", "a\r\nx", "a\r\ny", Some("a\r\nx\ny"));
    }

    #[test]
    fn sets() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            merge_set(&v(&["a"]), &v(&["a", "b"]), &v(&["a", "c"])),
            v(&["a", "b", "c"])
        );
        assert_eq!(
            merge_set(&v(&["a", "b"]), &v(&["b"]), &v(&["a", "b", "c"])),
            v(&["b", "c"])
        );
        assert_eq!(merge_set(&v(&[]), &v(&["x"]), &v(&["x"])), v(&["x"]));
        assert_eq!(merge_set(&v(&["a"]), &v(&[]), &v(&[])), v(&[]));
    }

    fn file(extra: &str, updated: &str, body: &str) -> String {
        format!(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: {updated}\n{extra}---\n\n{body}\n"
        )
    }

    #[test]
    fn two_devices_each_add_a_link_and_a_tag() {
        // spec/sync.md#line-wise-merge: no conflict, both kept.
        let base = file("tags: [a]\n", "2026-01-01", "Body.");
        let local = file(
            "tags: [a, l]\n",
            "2026-01-02",
            "Body.\n- works_at:: [[acme]]",
        );
        let remote = file(
            "tags: [a, r]\naliases: [Bob]\n",
            "2026-01-03",
            "Body.\n- knows:: [[carol]]",
        );
        let got = merge_file(&base, &local, &remote).unwrap();
        let p = frontmatter::parse(&got).unwrap();
        assert_eq!(p.meta.tags, vec!["a", "l", "r"]);
        assert_eq!(p.meta.aliases(), vec!["Bob"]);
        assert_eq!(p.meta.updated.text, "2026-01-03");
        assert_eq!(p.body, "Body.\n- works_at:: [[acme]]\n- knows:: [[carol]]");
        // Merging is symmetric up to the order of the added lines.
        let back = merge_file(&base, &remote, &local).unwrap();
        let q = frontmatter::parse(&back).unwrap();
        assert_eq!(q.body, "Body.\n- knows:: [[carol]]\n- works_at:: [[acme]]");
        // merge(a, a) == a
        assert_eq!(merge_file(&base, &got, &got).unwrap(), got);
    }

    #[test]
    fn set_removals_and_supersedes() {
        let base = file("supersedes: [old1, old2]\n", "2026-01-01", "x");
        let local = file("supersedes: [old2]\n", "2026-01-01", "x");
        let remote = file("supersedes: [old1, old2, old3]\n", "2026-01-01", "x");
        let got = merge_file(&base, &local, &remote).unwrap();
        let p = frontmatter::parse(&got).unwrap();
        assert_eq!(p.meta.supersedes, vec!["old2", "old3"]);
    }

    #[test]
    fn every_field_is_checked_generically() {
        let base = file("", "2026-01-01", "x");
        let l = file("", "2026-01-01", "x").replace("name: n", "name: L");
        let r = file("", "2026-01-01", "x").replace("name: n", "name: R");
        let p = |t: &str| frontmatter::parse(t).unwrap().meta;
        let (b, l, r) = (p(&base), p(&l), p(&r));
        // A merge that kept the local value of a field both sides changed is refused.
        assert!(!agrees(&b, &l, &r, &l));
        let rr = p(&file("valid_until: 2027-01-01\n", "2026-01-01", "x"));
        assert!(agrees(&b, &b, &rr, &merge_meta(&b, &b, &rr).unwrap()));
        assert!(!agrees(&b, &b, &rr, &b));
    }

    #[test]
    fn conflicting_fields_and_bodies_are_conflicts() {
        let base = file("", "2026-01-01", "x");
        let l = file("", "2026-01-01", "x").replace("name: n", "name: L");
        let r = file("", "2026-01-01", "x").replace("name: n", "name: R");
        assert_eq!(merge_file(&base, &l, &r), None);
        let l = file("owner: a\n", "2026-01-01", "x");
        let r = file("owner: b\n", "2026-01-01", "x");
        assert_eq!(merge_file(&base, &l, &r), None);
        assert_eq!(merge_file(&base, "not a memory", &r), None);
        // One side changes a field, the other the body: both kept.
        let l = file("", "2026-01-01", "x").replace("name: n", "name: L");
        let r = file("", "2026-01-02", "x\ny");
        let got = frontmatter::parse(&merge_file(&base, &l, &r).unwrap()).unwrap();
        assert_eq!((got.meta.name.as_str(), got.body.as_str()), ("L", "x\ny"));
    }

    proptest::proptest! {
        // CONVENTIONS: merge idempotence; one side unchanged takes the other; never panics.
        #[test]
        fn merge_laws(
            b in proptest::collection::vec("[abc]{0,2}", 0..8),
            l in proptest::collection::vec("[abc]{0,2}", 0..8),
            r in proptest::collection::vec("[abc]{0,2}", 0..8),
        ) {
            let (b, l, r) = (b.join("\n"), l.join("\n"), r.join("\n"));
            proptest::prop_assert_eq!(merge_lines(&b, &l, &l), Some(l.clone()));
            proptest::prop_assert_eq!(merge_lines(&b, &b, &r), Some(r.clone()));
            proptest::prop_assert_eq!(merge_lines(&b, &l, &b), Some(l.clone()));
            if let Some(m) = merge_lines(&b, &l, &r) {
                // Merging the result with either side again changes nothing.
                proptest::prop_assert_eq!(merge_lines(&b, &m, &m), Some(m.clone()));
            }
        }
    }
}
