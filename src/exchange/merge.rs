//! Import planning: (local memories, local forgets, incoming memories, strategy) → plan.
//!
//! A pure function from states to a sorted list of decisions, tested as a case table
//! (spec/cli.md#import). The engine executes the plan; `--dry-run` prints it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::exchange::blob::IncomingFile;
use crate::memory::timeline::Event;
use crate::memory::{Meta, Record};

/// How conflicts (same key, different content) are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Add what is missing; on conflict the local memory wins.
    #[default]
    Merge,
    /// Add what is missing; on conflict the incoming memory wins.
    Replace,
}

impl Strategy {
    /// Reads `merge` or `replace`.
    pub fn parse(s: &str) -> Option<Strategy> {
        match s {
            "merge" => Some(Strategy::Merge),
            "replace" => Some(Strategy::Replace),
            _ => None,
        }
    }
}

/// What happens to one incoming memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Not present locally: written.
    Added,
    /// Conflict, incoming wins (`replace`): written over the local memory.
    Updated,
    /// Conflict, local wins (`merge`): nothing written.
    Kept,
    /// Same content as the local memory: nothing written.
    Unchanged,
    /// Forgotten locally after the incoming version was last updated: not brought back.
    Forgotten,
}

/// One line of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The memory's key.
    pub key: String,
    /// What happens to it.
    pub action: Action,
}

/// Fields memdir has that the three.ws runtime cannot carry: its `write` drops them
/// (and `decay` unless given) when it rewrites a memory.
pub const LOCAL_ONLY: [&str; 4] = ["source", "decay", "tags", "important"];

/// Completes an incoming version of a local memory with the local values of the
/// [`LOCAL_ONLY`] fields the incoming file does not have at all (an absent key, not an
/// empty value), so a memory the runtime rewrote keeps what the runtime cannot carry
/// (spec/cli.md#import). Returns the fields taken from the local memory.
pub fn keep_local_only(local: &Meta, incoming: &mut Meta) -> Vec<&'static str> {
    let absent = |f: &str| !incoming.extra.order().iter().any(|k| k == f);
    let mut taken = Vec::new();
    for f in LOCAL_ONLY {
        if !absent(f) {
            continue;
        }
        let took = match f {
            "source" if local.source.is_some() => {
                incoming.source = local.source.clone();
                true
            }
            "decay" if local.decay.is_some() => {
                incoming.decay = local.decay;
                true
            }
            "tags" if !local.tags.is_empty() => {
                incoming.tags = local.tags.clone();
                true
            }
            "important" if local.important => {
                incoming.important = true;
                true
            }
            _ => false,
        };
        if took {
            taken.push(f);
        }
    }
    taken
}

/// The latest time every key was forgotten in a timeline: a `forgot` event's `key`,
/// or a `renamed` event's `from` (the memory left that key).
pub fn forgotten(events: &[Event]) -> HashMap<String, DateTime<Utc>> {
    let mut m: HashMap<String, DateTime<Utc>> = HashMap::new();
    for e in events {
        let gone = match e.kind.as_str() {
            "forgot" => e.field_str("key"),
            "renamed" => e.field_str("from"),
            _ => None,
        };
        if let Some(k) = gone {
            let slot = m.entry(k.to_string()).or_insert(e.ts);
            if e.ts > *slot {
                *slot = e.ts;
            }
        }
    }
    m
}

/// Plans an import. The result is sorted by key.
///
/// `forgotten` holds the local forgets; `incoming_forgotten` the forgets in the blob's
/// own timeline. A forget is compared with the incoming `updated` by timestamp; when
/// `updated` is only a date on the forget's day, the blob's timeline decides: if it
/// holds that forget (or a later one) and still has the memory, the memory was written
/// again after it (a forget deletes the file) and is added.
pub fn plan(
    local: &[Record],
    forgotten: &HashMap<String, DateTime<Utc>>,
    incoming_forgotten: &HashMap<String, DateTime<Utc>>,
    incoming: &[IncomingFile],
    strategy: Strategy,
) -> Vec<Decision> {
    let by_key: HashMap<&str, &Record> = local.iter().map(|r| (r.key.as_str(), r)).collect();
    let mut out: Vec<Decision> = incoming
        .iter()
        .map(|inc| {
            let action = match by_key.get(inc.key.as_str()) {
                None => match forgotten.get(inc.key.as_str()) {
                    // An `updated` date counts as the start of its day, so a version
                    // updated on the day of the forget does not come back.
                    Some(t)
                        if inc.parsed.meta.updated.at <= *t
                            && incoming_forgotten
                                .get(inc.key.as_str())
                                .is_none_or(|seen| seen < t) =>
                    {
                        Action::Forgotten
                    }
                    _ => Action::Added,
                },
                Some(l) => {
                    let same = crate::memory::content_hash(&inc.parsed.meta, &inc.parsed.body)
                        == l.content_hash();
                    match (same, strategy) {
                        (true, _) => Action::Unchanged,
                        (false, Strategy::Merge) => Action::Kept,
                        (false, Strategy::Replace) => Action::Updated,
                    }
                }
            };
            Decision {
                key: inc.key.to_string(),
                action,
            }
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// An event as a value: its JSON with every number as a float, so that `1`, `1.0`
/// and `1e2`/`100` (which JavaScript re-prints as `1` and `100`) are the same event.
fn event_value(e: &Event) -> String {
    fn norm(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::Number(n) => match n.as_f64().and_then(serde_json::Number::from_f64) {
                Some(f) => Value::Number(f),
                None => Value::Number(n),
            },
            Value::Array(a) => Value::Array(a.into_iter().map(norm).collect()),
            Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, norm(v))).collect()),
            other => other,
        }
    }
    serde_json::from_str::<serde_json::Value>(&e.encode())
        .map(|v| norm(v).to_string())
        .unwrap_or_else(|_| e.encode())
}

/// The incoming events to add, in time order. Timelines are multisets compared by
/// value (spec/timeline-format.md#import): an event logged twice stays twice, and an
/// incoming event is added only as many times as it is missing, so importing the same
/// blob again adds nothing.
pub fn new_events(existing: &[Event], incoming: &[Event]) -> Vec<Event> {
    let mut have: HashMap<String, usize> = HashMap::new();
    for e in existing {
        *have.entry(event_value(e)).or_default() += 1;
    }
    let mut out: Vec<Event> = incoming
        .iter()
        .filter(|e| match have.get_mut(&event_value(e)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect();
    out.sort_by_key(|e| e.ts);
    out
}

/// The file order after an import, as the three.ws runtime would have it: `merge`
/// keeps the known order and appends keys it did not have in blob order; `replace`
/// takes the blob's order, then the keys only memdir has (which it keeps).
pub fn blob_order(previous: &[String], incoming: &[&str], strategy: Strategy) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let (first, then): (Vec<&str>, Vec<&str>) = match strategy {
        Strategy::Merge => (
            previous.iter().map(String::as_str).collect(),
            incoming.to_vec(),
        ),
        Strategy::Replace => (
            incoming.to_vec(),
            previous.iter().map(String::as_str).collect(),
        ),
    };
    for k in first.into_iter().chain(then) {
        if seen.insert(k) {
            out.push(k.to_string());
        }
    }
    out
}

/// Sorts exported files: keys in `order` first, in that order, then the others by key.
pub fn sort_for_export<T>(files: &mut [(String, T)], order: &[String]) {
    let pos: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    files.sort_by(|(a, _), (b, _)| {
        let (pa, pb) = (pos.get(a.as_str()), pos.get(b.as_str()));
        match (pa, pb) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.cmp(b),
        }
    });
}

/// Counts of each action, for the import report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Memories added.
    pub added: usize,
    /// Memories updated (incoming won).
    pub updated: usize,
    /// Memories kept (local won).
    pub kept: usize,
    /// Memories already the same.
    pub unchanged: usize,
    /// Items skipped, and memories forgotten here that were not brought back.
    pub skipped: usize,
}

impl Counts {
    /// The counts of a plan, with `skipped` items skipped before planning.
    pub fn of(plan: &[Decision], skipped: usize) -> Counts {
        let n = |a: Action| plan.iter().filter(|d| d.action == a).count();
        Counts {
            added: n(Action::Added),
            updated: n(Action::Updated),
            kept: n(Action::Kept),
            unchanged: n(Action::Unchanged),
            skipped: skipped + n(Action::Forgotten),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Key;
    use crate::memory::frontmatter;

    fn file(key: &str, body: &str, updated: &str) -> String {
        format!(
            "---\nname: {key}\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: {updated}\n---\n\n{body}\n"
        )
    }

    fn local(key: &str, body: &str, updated: &str) -> Record {
        let p = frontmatter::parse(&file(key, body, updated)).unwrap();
        Record {
            key: Key::parse(key).unwrap(),
            meta: p.meta,
            body: p.body.into(),
        }
    }

    fn incoming(key: &str, body: &str, updated: &str) -> IncomingFile {
        let text = file(key, body, updated);
        IncomingFile {
            key: Key::parse(key).unwrap(),
            parsed: frontmatter::parse(&text).unwrap(),
            text,
        }
    }

    fn ts(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn case_table() {
        // spec/cli.md#import — each row: local, forgotten at, incoming, strategy, action
        type Row = (
            Option<(&'static str, &'static str)>,
            Option<&'static str>,
            (&'static str, &'static str),
            Strategy,
            Action,
        );
        let rows: Vec<Row> = vec![
            (
                None,
                None,
                ("b", "2026-02-01"),
                Strategy::Merge,
                Action::Added,
            ),
            (
                None,
                None,
                ("b", "2026-02-01"),
                Strategy::Replace,
                Action::Added,
            ),
            (
                Some(("a", "2026-01-05")),
                None,
                ("b", "2026-02-01"),
                Strategy::Merge,
                Action::Kept,
            ),
            (
                Some(("a", "2026-01-05")),
                None,
                ("b", "2026-02-01"),
                Strategy::Replace,
                Action::Updated,
            ),
            // Same content, other dates: unchanged under both strategies.
            (
                Some(("a", "2026-01-05")),
                None,
                ("a", "2026-02-01"),
                Strategy::Merge,
                Action::Unchanged,
            ),
            (
                Some(("a", "2026-01-05")),
                None,
                ("a", "2026-02-01"),
                Strategy::Replace,
                Action::Unchanged,
            ),
            // Forgotten locally: an older or same-day version stays forgotten...
            (
                None,
                Some("2026-03-01T10:00:00Z"),
                ("b", "2026-02-01"),
                Strategy::Merge,
                Action::Forgotten,
            ),
            (
                None,
                Some("2026-03-01T10:00:00Z"),
                ("b", "2026-03-01"),
                Strategy::Replace,
                Action::Forgotten,
            ),
            // ...a version updated after the forget comes back.
            (
                None,
                Some("2026-03-01T10:00:00Z"),
                ("b", "2026-03-02"),
                Strategy::Merge,
                Action::Added,
            ),
            // A forget does not matter when the key exists locally again.
            (
                Some(("a", "2026-04-01")),
                Some("2026-03-01T10:00:00Z"),
                ("b", "2026-02-01"),
                Strategy::Merge,
                Action::Kept,
            ),
        ];
        for (i, (loc, forgot, (body, updated), strategy, want)) in rows.into_iter().enumerate() {
            let locals: Vec<Record> = loc.map(|(b, u)| local("k", b, u)).into_iter().collect();
            let mut f = HashMap::new();
            if let Some(t) = forgot {
                f.insert("k".to_string(), ts(t));
            }
            let got = plan(
                &locals,
                &f,
                &HashMap::new(),
                &[incoming("k", body, updated)],
                strategy,
            );
            assert_eq!(
                got,
                vec![Decision {
                    key: "k".into(),
                    action: want
                }],
                "row {i}"
            );
        }
    }

    #[test]
    fn plan_is_sorted_and_idempotent_inputs_are_unchanged() {
        let locals = vec![local("a", "x", "2026-01-01"), local("b", "y", "2026-01-01")];
        let inc = vec![
            incoming("b", "y", "2026-01-01"),
            incoming("a", "x", "2026-01-01"),
        ];
        let got = plan(
            &locals,
            &HashMap::new(),
            &HashMap::new(),
            &inc,
            Strategy::Replace,
        );
        assert_eq!(
            got.iter().map(|d| d.key.as_str()).collect::<Vec<_>>(),
            vec!["a", "b"]
        );
        assert!(got.iter().all(|d| d.action == Action::Unchanged));
    }

    // spec/timeline-format.md#import: multisets, compared by value, idempotent.
    #[test]
    fn events_are_unioned_as_multisets_by_value() {
        let e = |t: &str, k: &str| Event::new(ts(t), k, serde_json::Map::new()).unwrap();
        let existing = vec![
            e("2026-01-01T00:00:00Z", "a"),
            e("2026-01-03T00:00:00Z", "c"),
        ];
        let inc = vec![
            e("2026-01-03T00:00:00Z", "c"),
            e("2026-01-02T00:00:00Z", "b"),
            e("2026-01-02T00:00:00Z", "b"),
        ];
        let got: Vec<String> = new_events(&existing, &inc)
            .iter()
            .map(|e| e.kind.clone())
            .collect();
        assert_eq!(got, vec!["b", "b"]);
        // Importing again adds nothing.
        let mut all = existing.clone();
        all.extend(new_events(&existing, &inc));
        assert!(new_events(&all, &inc).is_empty());
        // Numbers compare by value, as JavaScript re-prints them.
        let n = |json: &str| {
            crate::memory::timeline::parse_line(&format!(
                r#"{{"ts":"2026-01-01T00:00:00Z","type":"w","x":{json}}}"#
            ))
            .unwrap()
        };
        assert!(new_events(&[n("1.0"), n("1e2")], &[n("1"), n("100")]).is_empty());
        assert_eq!(new_events(&[n("1.5")], &[n("1")]).len(), 1);
    }

    // spec/cli.md#import: a same-day forget is decided by the blob's own timeline.
    #[test]
    fn a_memory_written_again_after_a_forget_the_blob_knows_comes_back() {
        let mut here = HashMap::new();
        here.insert("k".to_string(), ts("2026-03-01T10:00:00Z"));
        let inc = [incoming("k", "again", "2026-03-01")];
        let act = |theirs: &HashMap<String, DateTime<Utc>>| {
            plan(&[], &here, theirs, &inc, Strategy::Merge)[0].action
        };
        // The blob does not know the forget: the same-day version stays forgotten.
        assert_eq!(act(&HashMap::new()), Action::Forgotten);
        // The blob holds that forget and still has the memory: written after it.
        assert_eq!(act(&here), Action::Added);
        let mut later = HashMap::new();
        later.insert("k".to_string(), ts("2026-03-01T11:00:00Z"));
        assert_eq!(act(&later), Action::Added);
        let mut earlier = HashMap::new();
        earlier.insert("k".to_string(), ts("2026-03-01T09:00:00Z"));
        assert_eq!(act(&earlier), Action::Forgotten);
        // A timestamp `updated` is compared exactly.
        let exact = [incoming("k", "again", "2026-03-01T10:30:00Z")];
        assert_eq!(
            plan(&[], &here, &HashMap::new(), &exact, Strategy::Merge)[0].action,
            Action::Added
        );
    }

    // spec/cli.md#import: a memory the runtime rewrote keeps memdir's own fields.
    #[test]
    fn fields_the_runtime_cannot_carry_are_kept() {
        let l = frontmatter::parse(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nsource: chat 1\ndecay: 30d\ntags: [a, b]\nimportant: true\n---\n\nold\n",
        )
        .unwrap()
        .meta;
        let mut rewritten = frontmatter::parse(&file("n", "new", "2026-02-01"))
            .unwrap()
            .meta;
        let taken = keep_local_only(&l, &mut rewritten);
        assert_eq!(taken, LOCAL_ONLY.to_vec());
        assert_eq!(rewritten.tags, vec!["a", "b"]);
        assert!(rewritten.important);
        assert_eq!(rewritten.source.as_deref(), Some("chat 1"));
        // A field the incoming file has, even empty, is its own.
        let mut cleared = frontmatter::parse(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-02-01\ntags: []\nimportant: false\n---\n\nnew\n",
        )
        .unwrap()
        .meta;
        assert_eq!(keep_local_only(&l, &mut cleared), vec!["source", "decay"]);
        assert!(cleared.tags.is_empty() && !cleared.important);
    }

    // spec/cli.md#export: the runtime's file order survives a round trip.
    #[test]
    fn blob_order_follows_the_runtime() {
        let prev = vec!["b".to_string(), "a".to_string()];
        assert_eq!(
            blob_order(&prev, &["c", "a", "d"], Strategy::Merge),
            vec!["b", "a", "c", "d"]
        );
        assert_eq!(
            blob_order(&prev, &["c", "a", "d"], Strategy::Replace),
            vec!["c", "a", "d", "b"]
        );
        let mut files = vec![
            ("z".to_string(), ()),
            ("a".to_string(), ()),
            ("d".to_string(), ()),
            ("c".to_string(), ()),
        ];
        sort_for_export(&mut files, &["d".to_string(), "c".to_string()]);
        let keys: Vec<&str> = files.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, vec!["d", "c", "a", "z"]);
    }

    #[test]
    fn latest_forget_wins() {
        let mut f1 = serde_json::Map::new();
        f1.insert("key".into(), "k".into());
        let evs = vec![
            Event::new(ts("2026-01-02T00:00:00Z"), "forgot", f1.clone()).unwrap(),
            Event::new(ts("2026-01-01T00:00:00Z"), "forgot", f1).unwrap(),
        ];
        assert_eq!(forgotten(&evs)["k"], ts("2026-01-02T00:00:00Z"));
    }

    #[test]
    fn a_rename_forgets_the_old_key_only() {
        let mut f = serde_json::Map::new();
        f.insert("from".into(), "old".into());
        f.insert("to".into(), "new".into());
        let evs = vec![Event::new(ts("2026-01-03T00:00:00Z"), "renamed", f).unwrap()];
        let gone = forgotten(&evs);
        assert_eq!(gone.get("old"), Some(&ts("2026-01-03T00:00:00Z")));
        assert_eq!(gone.get("new"), None);
    }
}
