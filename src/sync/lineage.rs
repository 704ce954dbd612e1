//! Lineage: what a pushed version was built on, and how a remote version relates to
//! this directory's base (spec/sync.md#lineage).
//!
//! Every push records the network roots its content includes, nearest first (the base,
//! the versions before it and those merged into it), at most [`LINEAGE_MAX`]. A remote
//! version whose lineage names our base descends from it and is merged three-way
//! against it; one this directory has already passed is behind and is never applied;
//! anything else diverged, and is merged without deleting or reverting anything here
//! except what a recorded `forget` removed (spec/sync.md#tombstones). Pure: no IO.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use cid::Cid;

use crate::memory::{frontmatter, timeline};
use crate::sync::plan::{self, FileClass, Listing};

/// Roots a lineage record holds.
pub const LINEAGE_MAX: usize = 256;

/// First line of a lineage record.
pub const LINEAGE_HEADER: &str = "memdir-lineage-1";

/// The record of `roots` (nearest first): the header, then one CID per line.
pub fn encode(roots: &[Cid]) -> Vec<u8> {
    let mut out = format!("{LINEAGE_HEADER}\n");
    for r in roots.iter().take(LINEAGE_MAX) {
        out.push_str(&r.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// Parses a lineage record; the error names the line.
pub fn decode(bytes: &[u8]) -> Result<Vec<Cid>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let mut lines = text.lines();
    if lines.next() != Some(LINEAGE_HEADER) {
        return Err(format!("line 1 is not `{LINEAGE_HEADER}`"));
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if out.len() >= LINEAGE_MAX {
            return Err(format!("more than {LINEAGE_MAX} roots"));
        }
        let cid = Cid::try_from(line).map_err(|e| format!("line {}: not a CID: {e}", i + 2))?;
        out.push(cid);
    }
    Ok(out)
}

/// How a remote version relates to this directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relation {
    /// No base yet: a first sync, two-way.
    First,
    /// The remote is this directory's base.
    Same,
    /// The remote is a version this directory already passed: never applied.
    Behind,
    /// The remote's lineage names our base: three-way against the base.
    Descends,
    /// The remote's lineage does not name our base: a version built beside ours (a
    /// lost race, `--force`, a restored backup). `common` is the nearest version both
    /// include, when the lineage names one we know.
    Diverged {
        /// The nearest version both include, when known.
        common: Option<Cid>,
    },
    /// The remote has no lineage (pushed by an older memdir, or a provider that keeps
    /// none): treated as a descendant, as before lineage existed.
    Unknown,
}

/// Relates `remote` (with its lineage, if known) to a directory whose base is
/// `base` and whose history (base first) is `seen`.
pub fn relate(base: Option<&Cid>, seen: &[Cid], remote: &Cid, lineage: Option<&[Cid]>) -> Relation {
    let Some(base) = base else {
        return Relation::First;
    };
    if remote == base {
        return Relation::Same;
    }
    if seen.contains(remote) {
        return Relation::Behind;
    }
    let Some(lineage) = lineage else {
        return Relation::Unknown;
    };
    if lineage.contains(base) {
        return Relation::Descends;
    }
    let common = lineage.iter().find(|c| seen.contains(c)).copied();
    Relation::Diverged { common }
}

/// The latest time every key was forgotten in the timeline day files of `listings`:
/// its `forgot` events, and `renamed` events that moved a memory away from it (the
/// rule `import` uses, `exchange::merge::forgotten`).
pub fn forgotten(listings: &[&Listing]) -> HashMap<String, DateTime<Utc>> {
    let mut events = Vec::new();
    for listing in listings {
        for (path, bytes) in listing.iter() {
            if plan::classify(path) != FileClass::Timeline {
                continue;
            }
            for line in String::from_utf8_lossy(bytes).lines() {
                if let Ok(e) = timeline::parse_line(line)
                    && (e.kind == "forgot" || e.kind == "renamed")
                {
                    events.push(e);
                }
            }
        }
    }
    crate::exchange::merge::forgotten(&events)
}

/// Whether the memory file `path` with `bytes` was forgotten after it was last
/// updated: a recorded `forgot` of its key at or after the start of its `updated` day
/// (the rule `import` uses). Anything that is not a memory file, or does not parse, is
/// not tombstoned.
pub fn tombstoned(path: &str, bytes: &[u8], forgotten: &HashMap<String, DateTime<Utc>>) -> bool {
    if path.contains('/') || path == crate::memory::layout::INDEX_FILE {
        return false;
    }
    let Some(key) = path.strip_suffix(".md") else {
        return false;
    };
    let Some(at) = forgotten.get(key) else {
        return false;
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    match frontmatter::parse(text) {
        Ok(p) => p.meta.updated.at <= *at,
        Err(_) => false,
    }
}

/// Makes a plan for a diverged remote safe: a delete stays only for a memory file
/// forgotten (recorded) after its last update, a timeline day file is never deleted,
/// and a remote file is not brought back when it was forgotten after its last update.
/// When the plan had no base, local memory files forgotten on the other side are
/// deleted (the forget propagates as a recorded tombstone).
pub fn make_safe(p: plan::Plan, had_base: bool, local: &Listing, remote: &Listing) -> plan::Plan {
    use plan::Op;
    use plan::{Decision, Outcome};
    let gone = forgotten(&[local, remote]);
    let mut ops: Vec<Op> = Vec::new();
    let mut report = p.report;
    let mut rebuild = false;
    let mut kept = std::collections::HashSet::new();
    for op in p.ops {
        match &op {
            Op::Delete { path } => {
                let keep_delete = local.get(path).is_some_and(|b| tombstoned(path, b, &gone));
                if !keep_delete {
                    kept.insert(path.clone());
                    continue;
                }
            }
            Op::Write { path, content }
                if !local.contains_key(path) && tombstoned(path, content, &gone) =>
            {
                kept.insert(path.clone());
                continue;
            }
            Op::RebuildIndex => {
                rebuild = true;
                continue;
            }
            _ => {}
        }
        ops.push(op);
    }
    if !had_base {
        for (path, bytes) in local {
            if !remote.contains_key(path)
                && plan::classify(path) == FileClass::File
                && tombstoned(path, bytes, &gone)
            {
                ops.push(Op::Delete { path: path.clone() });
                report.retain(|d| d.path != *path);
                report.push(Decision {
                    path: path.clone(),
                    outcome: Outcome::Forgotten,
                });
            }
        }
    }
    for d in report.iter_mut() {
        if kept.contains(&d.path) {
            d.outcome = Outcome::KeptLocal;
        }
    }
    report.sort_by(|a, b| a.path.cmp(&b.path));
    let touches_memory = ops
        .iter()
        .any(|o| plan::classify(o.path()) == FileClass::File);
    if rebuild || touches_memory {
        ops.push(Op::RebuildIndex);
    }
    ops.sort_by(|a, b| {
        let key = |o: &Op| match o {
            Op::SaveConflict { path, .. } => (0u8, path.clone(), 0u8),
            Op::Delete { path } => (0, path.clone(), 1),
            Op::Write { path, .. } => (0, path.clone(), 2),
            Op::RebuildIndex => (1, String::new(), 0),
        };
        key(a).cmp(&key(b))
    });
    plan::Plan { ops, report }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cid(n: u8) -> Cid {
        let dag = crate::ipfs::unixfs::build(&crate::ipfs::unixfs::Node::File(vec![n])).unwrap();
        dag.root
    }

    #[test]
    fn record_round_trip_and_errors() {
        // spec/sync.md#lineage
        let roots: Vec<Cid> = (0..3).map(cid).collect();
        let got = decode(&encode(&roots)).unwrap();
        assert_eq!(got, roots);
        assert!(decode(b"nope\n").unwrap_err().contains("line 1"));
        let bad = format!("{LINEAGE_HEADER}\n{}\nxyz\n", roots[0]);
        assert!(decode(bad.as_bytes()).unwrap_err().contains("line 3"));
        let many: Vec<Cid> = (0..300).map(|_| roots[0]).collect();
        assert_eq!(decode(&encode(&many)).unwrap().len(), LINEAGE_MAX);
    }

    fn memory(updated: &str) -> Vec<u8> {
        format!(
            "---\nname: x\ndescription: d\ntype: user\ncreated: 2026-04-01\nupdated: {updated}\n---\nbody\n"
        )
        .into_bytes()
    }

    fn forgot(key: &str, day: &str) -> Vec<u8> {
        format!("{{\"ts\":\"{day}T12:00:00.000Z\",\"type\":\"forgot\",\"key\":\"{key}\"}}\n")
            .into_bytes()
    }

    fn show(p: &plan::Plan) -> Vec<String> {
        p.ops
            .iter()
            .map(|o| match o {
                plan::Op::SaveConflict { path, .. } => format!("save {path}"),
                plan::Op::Delete { path } => format!("delete {path}"),
                plan::Op::Write { path, .. } => format!("write {path}"),
                plan::Op::RebuildIndex => "rebuild".into(),
            })
            .collect()
    }

    #[test]
    fn diverged_merges_delete_only_recorded_forgets() {
        // spec/sync.md#tombstones
        let l = |v: Vec<(&str, Vec<u8>)>| -> Listing {
            v.into_iter().map(|(p, b)| (p.to_string(), b)).collect()
        };
        let (t1, t2) = ("timeline/2026-04-12.jsonl", "timeline/2026-04-13.jsonl");
        let m = crate::exchange::merge::Strategy::Merge;
        // Without a base: a stays (never forgotten), b is deleted (forgotten on the
        // other side after its update), c is not brought back (forgotten here), d is
        // new; the other side's day file is taken.
        let local = l(vec![
            ("a.md", memory("2026-04-10")),
            ("b.md", memory("2026-04-10")),
            (t1, forgot("c", "2026-04-12")),
        ]);
        let remote = l(vec![
            ("c.md", memory("2026-04-10")),
            ("d.md", memory("2026-04-10")),
            (t2, forgot("b", "2026-04-13")),
        ]);
        let p = make_safe(
            plan::plan(&Listing::new(), &local, &remote, m),
            false,
            &local,
            &remote,
        );
        assert_eq!(
            show(&p),
            vec![
                "delete b.md",
                "write d.md",
                format!("write {t2}").as_str(),
                "rebuild"
            ]
        );
        let outcome = |path: &str| {
            p.report
                .iter()
                .find(|d| d.path == path)
                .map(|d| d.outcome.clone())
        };
        assert_eq!(outcome("b.md"), Some(plan::Outcome::Forgotten));
        assert_eq!(outcome("c.md"), Some(plan::Outcome::KeptLocal));
        // With a shared base: the other side lacks a (no forget recorded: kept), b
        // (forgotten: deleted) and the base's day file (never deleted).
        let base = l(vec![
            ("a.md", memory("2026-04-10")),
            ("b.md", memory("2026-04-10")),
            (t1, forgot("z", "2026-04-12")),
        ]);
        let remote = l(vec![(t2, forgot("b", "2026-04-13"))]);
        let p = make_safe(plan::plan(&base, &base, &remote, m), true, &base, &remote);
        assert_eq!(
            show(&p),
            vec!["delete b.md", format!("write {t2}").as_str(), "rebuild"]
        );
        // A rename tombstones the key it left, not the one it went to.
        let renamed = r#"{"ts":"2026-04-12T10:00:00.000Z","type":"renamed","from":"b","to":"c"}"#;
        let gone = forgotten(&[&l(vec![(t1, format!("{renamed}\n").into_bytes())])]);
        assert!(tombstoned("b.md", &memory("2026-04-12"), &gone));
        assert!(!tombstoned("c.md", &memory("2026-04-01"), &gone));
        // A memory updated after the day of its forget is not tombstoned.
        let gone = forgotten(&[&l(vec![(t1, forgot("b", "2026-04-12"))])]);
        assert!(tombstoned("b.md", &memory("2026-04-12"), &gone));
        assert!(!tombstoned("b.md", &memory("2026-04-13"), &gone));
        assert!(!tombstoned("notes/b.md", &memory("2026-04-01"), &gone));
        assert!(!tombstoned("b.md", b"not a memory", &gone));
    }

    #[test]
    fn relations() {
        // spec/sync.md#lineage — the relation table.
        let (h, a, b) = (cid(1), cid(2), cid(3));
        let seen_a = vec![a, h];
        assert_eq!(relate(None, &[], &b, None), Relation::First);
        assert_eq!(relate(Some(&a), &seen_a, &a, None), Relation::Same);
        assert_eq!(relate(Some(&a), &seen_a, &h, None), Relation::Behind);
        assert_eq!(relate(Some(&a), &seen_a, &b, None), Relation::Unknown);
        assert_eq!(
            relate(Some(&a), &seen_a, &b, Some(&[a, h])),
            Relation::Descends
        );
        assert_eq!(
            relate(Some(&a), &seen_a, &b, Some(&[h])),
            Relation::Diverged { common: Some(h) }
        );
        assert_eq!(
            relate(Some(&a), &seen_a, &b, Some(&[cid(9)])),
            Relation::Diverged { common: None }
        );
    }
}
