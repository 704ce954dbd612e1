//! The LoCoMo retrieval benchmark: does the context block an agent gets for a
//! question contain the conversation turns that answer it?
//!
//! LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, read from a path the caller
//! gives and never copied into the project) holds 10 long two-person conversations,
//! each a series of dated sessions of numbered turns (`D3:5` is turn 5 of session
//! 3), and questions whose evidence is a list of turn ids. Each conversation becomes
//! a memory directory through memdir's own write path, with the clock fixed at each
//! session's date: one memory per session (`session_03`), one line per turn carrying
//! its id (`[D3:5] Caroline: …`), and one timeline event per turn. Then, at a time
//! just after the last session, every question is asked as an agent asks it,
//! `context(max_tokens, Some(question))`, for each budget, and the benchmark counts
//! which evidence ids the block contains.
//!
//! With an embeddings endpoint ([`Embeddings`]), each store also gets it as its
//! `[embeddings]` section, every memory is embedded ahead of time (what
//! `memdir index --embeddings` does), and the same questions are scored a second time
//! with the hybrid memory relevance `context` uses then (spec/ranking.md#hybrid-recall):
//! the hybrid column, beside the keyword one and the baseline.
//!
//! The parsing and scoring are pure; [`run`] is the edge that writes the temporary
//! directories. Results are deterministic (fixed clocks, total orders; the hybrid
//! column as deterministic as the endpoint), timings are returned apart.
//!
//! The module is in two rooms (its hybrid column is [`crate::bench::hybrid`], shared
//! with `longmemeval`): this one reads the data set, finds turn ids and
//! builds a conversation's store; `runner` asks the questions and sums the report.

use std::collections::HashSet;
use std::path::Path;

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use serde_json::{Map, Value};

use super::BenchError;
use crate::clock::Clock;
use crate::engine::{Draft, Memory};
use crate::error::Error;

mod runner;

pub use super::hybrid::{BENCH_EMBED_TIMEOUT_MS, Embeddings, HybridRun, Timing};
pub use runner::{BudgetReport, Report, Score, run, run_named, run_with};

/// Budgets measured when none are given.
pub const DEFAULT_BUDGETS: [usize; 4] = [512, 1024, 2048, 4096];

/// The adversarial category: questions about things the conversation does not say.
pub const ADVERSARIAL: u8 = 5;

/// Seconds between two turns of a session on the timeline.
const TURN_SECONDS: i64 = 30;

/// One conversation of the data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The data set's id of the conversation.
    pub sample_id: String,
    /// Its two speakers.
    pub speakers: [String; 2],
    /// In session order.
    pub sessions: Vec<Session>,
    /// Its questions.
    pub questions: Vec<Question>,
}

/// One dated session of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The session's number (from 1).
    pub number: u32,
    /// When it started; the data gives local times without a zone, read as UTC.
    pub at: DateTime<Utc>,
    /// Its turns, in order.
    pub turns: Vec<Turn>,
}

/// One turn of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Normalized turn id, `D<session>:<turn>`.
    pub id: String,
    /// Who spoke.
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// What an image shared with the turn shows (the data set's own caption).
    pub image: Option<String>,
}

/// One question with the turns that answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question.
    pub text: String,
    /// The data set's question category.
    pub category: u8,
    /// Normalized turn ids, deduplicated, each a turn of the conversation.
    pub evidence: Vec<String>,
    /// Evidence ids given by the data set that name no turn of the conversation.
    pub unknown_evidence: usize,
}

/// Parses the data set (the JSON array of `locomo10.json`).
pub fn parse(data: &Value) -> Result<Vec<Conversation>, String> {
    let items = data
        .as_array()
        .ok_or("the top level is not a JSON array of conversations")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_conversation(item).map_err(|e| format!("conversation {i}: {e}")))
        .collect()
}

fn parse_conversation(item: &Value) -> Result<Conversation, String> {
    let sample_id = item
        .get("sample_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let conv = item
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or("no `conversation` object")?;
    let speaker = |k: &str| {
        conv.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(format!("no `{k}`"))
    };
    let speakers = [speaker("speaker_a")?, speaker("speaker_b")?];
    let mut sessions = Vec::new();
    for (k, v) in conv {
        let Some(number) = k
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let turns = v
            .as_array()
            .ok_or(format!("`{k}` is not a list of turns"))?;
        if turns.is_empty() {
            continue;
        }
        let when = conv
            .get(&format!("{k}_date_time"))
            .and_then(Value::as_str)
            .ok_or(format!("no `{k}_date_time`"))?;
        let at = parse_when(when).ok_or(format!("`{k}_date_time` {when:?} is not a date"))?;
        let turns = turns
            .iter()
            .map(parse_turn)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{k}: {e}"))?;
        sessions.push(Session { number, at, turns });
    }
    sessions.sort_by_key(|s| s.number);
    let ids: HashSet<&str> = sessions
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| t.id.as_str()))
        .collect();
    let questions = item
        .get("qa")
        .and_then(Value::as_array)
        .ok_or("no `qa` list")?
        .iter()
        .map(|q| parse_question(q, &ids))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Conversation {
        sample_id,
        speakers,
        sessions,
        questions,
    })
}

fn parse_turn(t: &Value) -> Result<Turn, String> {
    let field = |k: &str| t.get(k).and_then(Value::as_str);
    let raw_id = field("dia_id").ok_or("a turn has no `dia_id`")?;
    let id = turn_ids(raw_id)
        .into_iter()
        .next()
        .ok_or(format!("turn id {raw_id:?} is not D<session>:<turn>"))?;
    Ok(Turn {
        id,
        speaker: field("speaker")
            .ok_or("a turn has no `speaker`")?
            .to_string(),
        text: field("text").unwrap_or("").to_string(),
        image: field("blip_caption")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string),
    })
}

fn parse_question(q: &Value, ids: &HashSet<&str>) -> Result<Question, String> {
    let text = q
        .get("question")
        .and_then(Value::as_str)
        .ok_or("a question has no `question` text")?
        .to_string();
    let category = q
        .get("category")
        .and_then(Value::as_u64)
        .and_then(|c| u8::try_from(c).ok())
        .ok_or(format!("question {text:?} has no numeric `category`"))?;
    let mut evidence = Vec::new();
    let mut unknown_evidence = 0;
    for e in q
        .get("evidence")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for id in turn_ids(e.as_str().unwrap_or("")) {
            if !ids.contains(id.as_str()) {
                unknown_evidence += 1;
            } else if !evidence.contains(&id) {
                evidence.push(id);
            }
        }
    }
    Ok(Question {
        text,
        category,
        evidence,
        unknown_evidence,
    })
}

/// Parses a session time such as `1:56 pm on 8 May, 2023`.
pub fn parse_when(s: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s.trim(), "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|t| t.and_utc())
}

/// Every turn id in a text, normalized to `D<session>:<turn>` without leading zeros.
///
/// The data set writes a few ids irregularly (`D:11:26`, `D30:05`, several ids in one
/// string separated by `;` or spaces); this reads them all. The same scan finds the
/// ids in a context block, so `D3:5` is never mistaken for part of `D3:50`.
pub fn turn_ids(text: &str) -> Vec<String> {
    prefixed_turn_ids(text, b'D')
}

/// Every turn id `<prefix><session>:<turn>` in a text, read as [`turn_ids`] reads
/// LoCoMo's `D` ids (LongMemEval's converted turns carry `S` ids).
pub fn prefixed_turn_ids(text: &str, prefix: u8) -> Vec<String> {
    let b = text.as_bytes();
    let letter = char::from(prefix);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i] == prefix && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if b.get(j) == Some(&b':') {
            j += 1;
        }
        let (s, after_s) = digits(b, j);
        let parsed = s.and_then(|s| {
            (b.get(after_s) == Some(&b':')).then_some(())?;
            let (t, end) = digits(b, after_s + 1);
            let t = t?;
            (!b.get(end).is_some_and(u8::is_ascii_alphanumeric)).then_some((s, t, end))
        });
        match parsed {
            Some((s, t, end)) => {
                out.push(format!("{letter}{s}:{t}"));
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

/// The number written at `b[start..]` and where its digits end.
fn digits(b: &[u8], start: usize) -> (Option<u64>, usize) {
    let mut end = start;
    while end < b.len() && b[end].is_ascii_digit() && end - start < 9 {
        end += 1;
    }
    if end == start {
        return (None, end);
    }
    let n = std::str::from_utf8(&b[start..end])
        .ok()
        .and_then(|s| s.parse().ok());
    (n, end)
}

/// The key of a session's memory: `session_03`.
pub fn session_key(s: &Session) -> String {
    format!("session_{:02}", s.number)
}

/// One line of a session's body: `[D3:5] Caroline: text [image: caption]`.
pub fn turn_line(t: &Turn) -> String {
    let text = t.text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut line = format!("[{}] {}: {}", t.id, t.speaker, text);
    if let Some(c) = &t.image {
        line.push_str(&format!(" [image: {c}]"));
    }
    line
}

/// The memory a session becomes.
pub fn session_draft(c: &Conversation, s: &Session) -> Draft {
    session_draft_from("LoCoMo", c, s)
}

/// The memory a session of the data set named `data_set` becomes (its `source`
/// names the data set).
pub fn session_draft_from(data_set: &str, c: &Conversation, s: &Session) -> Draft {
    let date = s.at.format("%-d %B %Y").to_string();
    let body: Vec<String> = s.turns.iter().map(turn_line).collect();
    Draft {
        key: session_key(s),
        // The index lists every session and is in every block, so its lines stay
        // short: at 1,024 tokens the longer `Session 3 — 8 May 2023` / `Caroline and
        // Melanie talk, 1:56 pm` cost 0.04 of recall (spec/ranking.md).
        name: format!("Session {}", s.number),
        description: date,
        kind: "user".into(),
        body: body.join("\n"),
        source: Some(format!("{data_set} {} session {}", c.sample_id, s.number)),
        ..Draft::default()
    }
}

/// The timeline event of a turn.
pub fn turn_event(t: &Turn) -> Map<String, Value> {
    let mut f = Map::new();
    f.insert("id".into(), Value::String(t.id.clone()));
    f.insert("speaker".into(), Value::String(t.speaker.clone()));
    f.insert("text".into(), Value::String(t.text.clone()));
    if let Some(c) = &t.image {
        f.insert("image".into(), Value::String(c.clone()));
    }
    f
}

/// How many of `evidence` have their ids in `block`.
pub fn evidence_found(block: &str, evidence: &[String]) -> usize {
    evidence_held(block, evidence).len()
}

/// The ids of `evidence` that appear in `block`.
pub fn evidence_held(block: &str, evidence: &[String]) -> HashSet<String> {
    let present: HashSet<String> = turn_ids(block).into_iter().collect();
    evidence
        .iter()
        .filter(|e| present.contains(*e))
        .cloned()
        .collect()
}

/// Writes a conversation into the memory directory `dir` and returns the store with
/// its clock just after the last session.
pub fn build_store(c: &Conversation, dir: &Path) -> Result<Memory, Error> {
    build_store_from("LoCoMo", c, dir)
}

/// [`build_store`] for a conversation of the data set named `data_set`.
pub fn build_store_from(data_set: &str, c: &Conversation, dir: &Path) -> Result<Memory, Error> {
    build_store_with(data_set, c, dir, false).map(|(mem, _)| mem)
}

/// [`build_store_from`], leaving out each session memdir refuses to store because it
/// looks like it holds a credential (a real chat may paste a URL with a password):
/// returns the store and the numbers of the sessions left out.
pub fn build_store_skipping_secrets(
    data_set: &str,
    c: &Conversation,
    dir: &Path,
) -> Result<(Memory, Vec<u32>), Error> {
    build_store_with(data_set, c, dir, true)
}

fn build_store_with(
    data_set: &str,
    c: &Conversation,
    dir: &Path,
    skip_secrets: bool,
) -> Result<(Memory, Vec<u32>), Error> {
    let mut mem = Memory::open(dir)?;
    let mut last = DateTime::<Utc>::MIN_UTC;
    let mut refused = Vec::new();
    for s in &c.sessions {
        mem = mem.with_clock(Clock::fixed(s.at));
        match mem.write(&session_draft_from(data_set, c, s)) {
            Err(Error::Secret { .. }) if skip_secrets => {
                refused.push(s.number);
                continue;
            }
            r => r?,
        };
        for (i, t) in s.turns.iter().enumerate() {
            let ts = s.at + Duration::seconds(TURN_SECONDS * i as i64);
            mem = mem.with_clock(Clock::fixed(ts));
            mem.note("turn", turn_event(t))?;
            last = last.max(ts);
        }
    }
    Ok((
        mem.with_clock(Clock::fixed(last + Duration::minutes(1))),
        refused,
    ))
}

/// Reads the data set at `path`.
pub fn load(path: &Path) -> Result<Vec<Conversation>, BenchError> {
    let v: Value = super::read_json(path)?;
    parse(&v).map_err(|what| BenchError::Shape {
        path: path.to_path_buf(),
        what,
    })
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::ContextRequest;

    #[test]
    fn turn_ids_are_found_and_normalized() {
        for (text, want) in [
            ("D3:5", vec!["D3:5"]),
            ("D:11:26", vec!["D11:26"]),
            ("D30:05", vec!["D30:5"]),
            ("D8:6; D9:17", vec!["D8:6", "D9:17"]),
            ("D9:1 D4:4 D4:6", vec!["D9:1", "D4:4", "D4:6"]),
            ("[D3:50] x", vec!["D3:50"]),
            ("{\"id\":\"D2:1\"}", vec!["D2:1"]),
            ("AD3:5 D3:5x D D3: D:3", vec![]),
        ] {
            assert_eq!(turn_ids(text), want, "{text}");
        }
    }

    #[test]
    fn evidence_is_matched_by_whole_id() {
        let ev = vec!["D3:5".to_string(), "D1:2".to_string()];
        assert_eq!(evidence_found("[D3:50] a\n[D1:2] b\n", &ev), 1);
        assert_eq!(evidence_found("[D3:5] a\n[D1:2] b\n", &ev), 2);
    }

    #[test]
    fn session_times_parse() {
        for (s, want) in [
            ("1:56 pm on 8 May, 2023", Some("2023-05-08T13:56:00Z")),
            (
                "12:09 am on 13 September, 2023",
                Some("2023-09-13T00:09:00Z"),
            ),
            ("10:37 am on 27 June, 2023", Some("2023-06-27T10:37:00Z")),
            ("yesterday", None),
        ] {
            let want: Option<DateTime<Utc>> = want.map(|w| w.parse().unwrap());
            assert_eq!(parse_when(s), want, "{s}");
        }
    }

    /// A made-up conversation in the data set's shape (not LoCoMo text).
    pub(crate) fn sample() -> Value {
        serde_json::json!([{
            "sample_id": "t-1",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "9:00 am on 3 March, 2024",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
                    {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started cello lessons.",
                     "blip_caption": "a photo of a cello"}
                ],
                "session_2_date_time": "6:30 pm on 10 March, 2024",
                "session_2": [
                    {"speaker": "Ben", "dia_id": "D2:1", "text": "My cello teacher moved to Oslo."},
                    {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel knocked over a plant."}
                ],
                "session_3_date_time": "1:00 pm on 1 April, 2024"
            },
            "qa": [
                {"question": "What is the name of Ana's cat?", "answer": "Pixel",
                 "evidence": ["D1:1"], "category": 4},
                {"question": "What has Ben said about the cello?", "evidence": ["D2:1; D1:2"],
                 "category": 1},
                {"question": "No evidence", "evidence": [], "category": 3},
                {"question": "Where did Ana's cat move?", "evidence": ["D2:2", "D9:9"],
                 "category": 5}
            ]
        }])
    }

    #[test]
    fn parses_the_data_set_shape() {
        let c = &parse(&sample()).unwrap()[0];
        assert_eq!(c.speakers, ["Ana".to_string(), "Ben".to_string()]);
        // A session with a date but no turns is left out.
        assert_eq!(
            c.sessions.iter().map(|s| s.number).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(
            c.sessions[0].turns[1].image.as_deref(),
            Some("a photo of a cello")
        );
        assert_eq!(c.questions[1].evidence, ["D2:1", "D1:2"]);
        assert!(c.questions[2].evidence.is_empty());
        assert_eq!(c.questions[3].evidence, ["D2:2"]);
        assert_eq!(c.questions[3].unknown_evidence, 1);
        assert!(parse(&serde_json::json!({"not": "a list"})).is_err());
        assert!(parse(&serde_json::json!([{"qa": []}])).is_err());
    }

    #[test]
    fn builds_a_store_through_the_write_path() {
        let convs = parse(&sample()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mem = build_store(&convs[0], tmp.path()).unwrap();
        let r = mem.read("session_01").unwrap();
        assert_eq!(r.meta.name, "Session 1");
        assert_eq!(r.meta.description, "3 March 2024");
        assert_eq!(r.meta.updated.text, "2024-03-03");
        assert_eq!(
            r.body,
            "[D1:1] Ana: I adopted a grey cat named Pixel.\n\
             [D1:2] Ben: Lovely! I started cello lessons. [image: a photo of a cello]"
        );
        let events = mem.events().unwrap().events;
        assert_eq!(events.len(), 4);
        assert_eq!(events[3].field_str("id"), Some("D2:2"));
        assert_eq!(
            mem.now(),
            "2024-03-10T18:31:30Z".parse::<DateTime<Utc>>().unwrap()
        );
        // The prepared snapshot gives exactly what `context` gives, for every question.
        let (prepared, _) = mem.prepare_context().unwrap();
        for q in &convs[0].questions {
            for b in [16, 64, 1024] {
                assert_eq!(
                    prepared.block(b, Some(&q.text)),
                    mem.context(&ContextRequest::new(b).with_query(q.text.as_str()))
                        .unwrap()
                        .block
                );
            }
        }
    }
}
