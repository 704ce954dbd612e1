//! The agent-state section of the context block and the session view of the timeline
//! (spec/ranking.md#agent-state-in-the-block, spec/timeline-format.md#sessions).
//!
//! Pure functions of records and events: the state section (each entry within its
//! `limit`, the section within the room it is given, with a line saying what was left
//! out), the events a compacted session no longer shows, the list of sessions and a
//! budgeted transcript. No IO, no clock.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::memory::timeline::{Event, format_ts};
use crate::memory::{Kind, Record};

/// The heading of the state section.
pub(crate) const STATE_HEADING: &str = "\n## Agent state\n";

/// The state key of a state memory: its file key without `state_`.
pub(crate) fn state_key(r: &Record) -> &str {
    r.key
        .as_str()
        .strip_prefix("state_")
        .unwrap_or(r.key.as_str())
}

/// Indices of the state entries of `records`, by key.
pub(crate) fn state_entries(records: &[Record]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..records.len())
        .filter(|&i| records[i].meta.kind == Kind::State)
        .collect();
    v.sort_by(|&a, &b| records[a].key.cmp(&records[b].key));
    v
}

/// One entry of the state section: its heading and its value, cut to its `limit`
/// as a marked excerpt when longer.
fn entry_text(r: &Record) -> (String, bool) {
    let key = state_key(r);
    let mut s = format!("\n### {key}\n");
    let total = r.body.chars().count();
    if total == 0 {
        return (s, false);
    }
    s.push('\n');
    match r.meta.state_limit() {
        Some(limit) if total > limit => {
            s.extend(r.body.chars().take(limit));
            s.push_str(&format!(
                "\n[… excerpt: the first {limit} of {total} characters (its limit); `memdir state get {key}` shows all]\n"
            ));
            (s, true)
        }
        _ => {
            s.push_str(&r.body);
            s.push('\n');
            (s, false)
        }
    }
}

/// The state section within `room` characters, and the entries it shows (key, excerpt).
///
/// Entries are shown in key order, each within its `limit`. When not all fit, the
/// shortest go in, up to the first that does not fit (so a larger room shows every
/// entry a smaller one does), and a last line says how many are left out and how to
/// see them. The section never exceeds `room`; when not even the heading and
/// that line fit, it is empty.
pub(crate) fn state_part(
    records: &[Record],
    entries: &[usize],
    room: usize,
) -> (String, Vec<(String, bool)>) {
    if entries.is_empty() {
        return (String::new(), Vec::new());
    }
    let texts: Vec<(String, bool)> = entries.iter().map(|&i| entry_text(&records[i])).collect();
    let all: usize =
        STATE_HEADING.chars().count() + texts.iter().map(|(t, _)| t.chars().count()).sum::<usize>();
    if all <= room {
        let mut s = STATE_HEADING.to_string();
        let mut shown = Vec::new();
        for (&i, (t, ex)) in entries.iter().zip(texts) {
            s.push_str(&t);
            shown.push((records[i].key.to_string(), ex));
        }
        return (s, shown);
    }
    // Not everything fits: keep room for the line that says so (its longest form).
    let left_line = |n: usize| {
        format!(
            "\n… {n} state {} not shown (over the budget; `memdir state list` shows all)\n",
            if n == 1 { "entry" } else { "entries" }
        )
    };
    let reserve = left_line(entries.len()).chars().count();
    let head = STATE_HEADING.chars().count();
    if head + reserve > room {
        return (String::new(), Vec::new());
    }
    // The shortest entries first, up to the first that does not fit: what a budget
    // shows, a larger one shows too. They are shown in key order.
    let lens: Vec<usize> = texts.iter().map(|(t, _)| t.chars().count()).collect();
    let mut by_len: Vec<usize> = (0..entries.len()).collect();
    by_len.sort_by_key(|&j| (lens[j], j));
    let mut used = head + reserve;
    let mut chosen = vec![false; entries.len()];
    for j in by_len {
        if used + lens[j] > room {
            break;
        }
        used += lens[j];
        chosen[j] = true;
    }
    let mut s = STATE_HEADING.to_string();
    let mut shown = Vec::new();
    for ((&i, (t, ex)), _) in entries.iter().zip(texts).zip(&chosen).filter(|(_, c)| **c) {
        s.push_str(&t);
        shown.push((records[i].key.to_string(), ex));
    }
    s.push_str(&left_line(entries.len() - shown.len()));
    (s, shown)
}

/// The newest summary of each compacted session: session → (through, summary key).
/// Two summaries of one session (two devices compacted it) both count; the later
/// `through` hides more.
pub(crate) fn compactions(records: &[Record]) -> BTreeMap<String, (DateTime<Utc>, String)> {
    let mut out: BTreeMap<String, (DateTime<Utc>, String)> = BTreeMap::new();
    for r in records {
        if let Some(s) = r.meta.summarizes() {
            let e = out
                .entry(s.session)
                .or_insert((s.through, r.key.to_string()));
            if s.through > e.0 {
                *e = (s.through, r.key.to_string());
            }
        }
    }
    out
}

/// Whether the context block leaves `e` out: an event of a compacted session up to
/// the summary's `through` (the `compacted` event itself stays, as the pointer).
pub(crate) fn hidden_by_compaction(
    e: &Event,
    compacted: &BTreeMap<String, (DateTime<Utc>, String)>,
) -> bool {
    if compacted.is_empty() || e.kind == "compacted" {
        return false;
    }
    e.field_str("session")
        .and_then(|s| compacted.get(s))
        .is_some_and(|(through, _)| e.ts <= *through)
}

/// One session of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    /// The session id its events carry.
    pub id: String,
    /// The time of its first event.
    pub first: String,
    /// The time of its last event.
    pub last: String,
    /// How many events it has.
    pub count: usize,
    /// Event types, in order of first appearance.
    pub types: Vec<String>,
}

/// The sessions of `events` (in time order), by first time.
pub(crate) fn sessions(events: &[Event]) -> Vec<Session> {
    let mut by_id: BTreeMap<&str, Session> = BTreeMap::new();
    for e in events {
        let Some(id) = e.field_str("session") else {
            continue;
        };
        let ts = format_ts(&e.ts);
        let s = by_id.entry(id).or_insert_with(|| Session {
            id: id.to_string(),
            first: ts.clone(),
            last: ts.clone(),
            count: 0,
            types: Vec::new(),
        });
        s.count += 1;
        s.last = ts;
        if !s.types.contains(&e.kind) {
            s.types.push(e.kind.clone());
        }
    }
    let mut v: Vec<Session> = by_id.into_values().collect();
    v.sort_by(|a, b| a.first.cmp(&b.first).then(a.id.cmp(&b.id)));
    v
}

/// A budgeted transcript of one session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Transcript {
    /// The session id.
    pub session: String,
    /// The transcript, within the budget.
    pub text: String,
    /// Events of the session.
    pub events: usize,
    /// Events shown (the newest).
    pub shown: usize,
    /// The budget it was cut to.
    pub max_tokens: usize,
}

/// The transcript of session `id`: a heading, then its events as JSON lines, oldest
/// first, never more than `max_tokens × 4` characters; when they do not all fit, the
/// newest are kept and a line after the heading says how many older ones are not shown.
pub(crate) fn transcript(events: &[Event], id: &str, max_tokens: usize) -> Transcript {
    let budget = max_tokens.saturating_mul(4);
    let evs: Vec<&Event> = events
        .iter()
        .filter(|e| e.field_str("session") == Some(id))
        .collect();
    let heading = format!(
        "# Session {} ({} events)\n",
        crate::memory::printable::escape_line(id),
        evs.len()
    );
    let left = |n: usize| format!("… {n} older events not shown (over the budget)\n");
    let lines: Vec<String> = evs.iter().map(|e| e.encode()).collect();
    let all = heading.chars().count() + lines.iter().map(|l| l.chars().count() + 1).sum::<usize>();
    let mut chosen = lines.len();
    let mut reserve = 0;
    if all > budget {
        reserve = left(lines.len()).chars().count();
        chosen = 0;
        let mut used = heading.chars().count() + reserve;
        for l in lines.iter().rev() {
            let n = l.chars().count() + 1;
            if used + n > budget {
                break;
            }
            used += n;
            chosen += 1;
        }
    }
    let mut text = String::new();
    if heading.chars().count() + reserve <= budget {
        text.push_str(&heading);
        if chosen < lines.len() {
            text.push_str(&left(lines.len() - chosen));
        }
        for l in &lines[lines.len() - chosen..] {
            text.push_str(l);
            text.push('\n');
        }
    } else {
        chosen = 0;
    }
    Transcript {
        session: id.to_string(),
        text,
        events: lines.len(),
        shown: chosen,
        max_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::index::tests::rec;

    fn state(key: &str, body: &str, limit: Option<u64>) -> Record {
        let mut r = rec(
            &format!("state_{key}"),
            "state",
            key,
            "agent state",
            "2026-01-01",
        );
        r.body = body.into();
        if let Some(l) = limit {
            r.meta.extra.set("limit", l.into());
        }
        r
    }

    fn ev(ts: &str, kind: &str, session: Option<&str>) -> Event {
        let mut f = serde_json::Map::new();
        if let Some(s) = session {
            f.insert("session".into(), s.into());
        }
        Event::new(
            DateTime::parse_from_rfc3339(ts)
                .unwrap()
                .with_timezone(&Utc),
            kind,
            f,
        )
        .unwrap()
    }

    #[test]
    fn an_entry_over_its_limit_is_a_marked_excerpt() {
        // spec/ranking.md#agent-state-in-the-block
        let rs = vec![
            state("mood", &"x".repeat(50), Some(10)),
            state("goal", "win", None),
        ];
        let (text, shown) = state_part(&rs, &state_entries(&rs), 1000);
        assert_eq!(
            text,
            "\n## Agent state\n\n### goal\n\nwin\n\n### mood\n\nxxxxxxxxxx\n[… excerpt: the first 10 of 50 characters (its limit); `memdir state get mood` shows all]\n"
        );
        assert_eq!(
            shown,
            vec![("state_goal".into(), false), ("state_mood".into(), true)]
        );
    }

    #[test]
    fn a_section_over_its_room_says_what_was_left_out() {
        // spec/ranking.md#agent-state-in-the-block
        let rs = vec![
            state("a", &"a".repeat(30), None),
            state("b", &"b".repeat(300), None),
        ];
        let entries = state_entries(&rs);
        for room in [0, 20, 100, 150, 200, 400] {
            let (text, shown) = state_part(&rs, &entries, room);
            assert!(text.chars().count() <= room, "{room}: {text}");
            if !text.is_empty() && shown.len() < 2 {
                assert!(text.contains("state entr"), "{room}: {text}");
            }
        }
        let (text, shown) = state_part(&rs, &entries, 150);
        assert_eq!(shown, vec![("state_a".into(), false)]);
        assert!(text.ends_with(
            "\n… 1 state entry not shown (over the budget; `memdir state list` shows all)\n"
        ));
    }

    #[test]
    fn compacted_events_are_hidden_up_to_through() {
        let mut sum = rec("sum", "project", "S", "d", "2026-01-01");
        sum.meta.extra.set(
            "summarizes",
            serde_json::json!({"session": "s1", "through": "2026-01-01T10:00:00.000Z"}),
        );
        let c = compactions(&[sum]);
        assert!(hidden_by_compaction(
            &ev("2026-01-01T09:00:00Z", "note", Some("s1")),
            &c
        ));
        assert!(hidden_by_compaction(
            &ev("2026-01-01T10:00:00Z", "note", Some("s1")),
            &c
        ));
        assert!(!hidden_by_compaction(
            &ev("2026-01-01T10:00:01Z", "note", Some("s1")),
            &c
        ));
        assert!(!hidden_by_compaction(
            &ev("2026-01-01T09:00:00Z", "note", Some("s2")),
            &c
        ));
        assert!(!hidden_by_compaction(
            &ev("2026-01-01T09:00:00Z", "note", None),
            &c
        ));
        assert!(!hidden_by_compaction(
            &ev("2026-01-01T10:00:00Z", "compacted", Some("s1")),
            &c
        ));
    }

    #[test]
    fn sessions_and_transcripts() {
        let evs: Vec<Event> = (0..10)
            .map(|i| {
                ev(
                    &format!("2026-01-01T10:00:0{i}Z"),
                    if i % 2 == 0 {
                        "user_said"
                    } else {
                        "agent_said"
                    },
                    Some("s1"),
                )
            })
            .chain([
                ev("2026-01-01T09:00:00Z", "note", Some("s0")),
                ev("2026-01-01T11:00:00Z", "x", None),
            ])
            .collect();
        let mut evs = evs;
        evs.sort_by_key(|e| e.ts);
        let s = sessions(&evs);
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].id, "s1");
        assert_eq!(s[1].count, 10);
        assert_eq!(s[1].first, "2026-01-01T10:00:00.000Z");
        assert_eq!(s[1].last, "2026-01-01T10:00:09.000Z");
        assert_eq!(s[1].types, vec!["user_said", "agent_said"]);
        let whole = transcript(&evs, "s1", 10_000);
        assert_eq!(whole.shown, 10);
        assert!(!whole.text.contains("not shown"));
        for max in [0, 5, 20, 40, 80] {
            let t = transcript(&evs, "s1", max);
            assert!(t.text.chars().count() <= max * 4, "{max}");
            if t.shown > 0 {
                assert!(
                    t.text
                        .contains(&format!("… {} older events not shown", 10 - t.shown))
                );
                assert!(t.text.trim_end().ends_with(r#""session":"s1"}"#));
                assert!(t.text.contains("10:00:09.000Z"), "newest kept");
            }
        }
    }
}
