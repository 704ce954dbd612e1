//! LongMemEval's data set read and converted: the instances as the data set writes
//! them, its dates, one instance turned into a LoCoMo-shaped history with converted
//! evidence, and the file read one question at a time (gzip'd or not, JSON lines or
//! one JSON array).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Deserialize;

use super::{ID_LETTER, Instance};
use crate::bench::BenchError;
use crate::bench::locomo::{Conversation, Session, Turn};

/// One instance as the data set writes it (fields not read here are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct Raw {
    /// `question_id`.
    pub question_id: String,
    /// `question_type`.
    pub question_type: String,
    /// `question`.
    pub question: String,
    /// `question_date`.
    pub question_date: String,
    /// `haystack_session_ids`.
    pub haystack_session_ids: Vec<String>,
    /// `haystack_dates`.
    pub haystack_dates: Vec<String>,
    /// `haystack_sessions`: each session's turns.
    pub haystack_sessions: Vec<Vec<RawTurn>>,
    /// `answer_session_ids`.
    pub answer_session_ids: Vec<String>,
}

/// One turn as the data set writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct RawTurn {
    /// `role`: `user` or `assistant`.
    pub role: String,
    /// `content`.
    pub content: String,
    /// `has_answer`, where the data set marks a turn.
    #[serde(default)]
    pub has_answer: Option<bool>,
}

/// checked).
pub fn parse_when(s: &str) -> Option<DateTime<Utc>> {
    let kept: Vec<&str> = s
        .split_whitespace()
        .filter(|w| !(w.starts_with('(') && w.ends_with(')')))
        .collect();
    NaiveDateTime::parse_from_str(&kept.join(" "), "%Y/%m/%d %H:%M")
        .ok()
        .map(|t| t.and_utc())
}

/// Converts one instance.
pub fn convert(raw: &Raw) -> Result<Instance, String> {
    let n = raw.haystack_sessions.len();
    if raw.haystack_dates.len() != n || raw.haystack_session_ids.len() != n {
        return Err(format!(
            "{n} haystack sessions but {} dates and {} session ids",
            raw.haystack_dates.len(),
            raw.haystack_session_ids.len()
        ));
    }
    let asked = parse_when(&raw.question_date).ok_or(format!(
        "question_date {:?} is not a date",
        raw.question_date
    ))?;
    let mut sessions = Vec::new();
    let mut answer_turns = Vec::new();
    for (i, (turns, date)) in raw
        .haystack_sessions
        .iter()
        .zip(&raw.haystack_dates)
        .enumerate()
    {
        let number = u32::try_from(i + 1).map_err(|_| "too many sessions".to_string())?;
        let at = parse_when(date).ok_or(format!("haystack date {date:?} is not a date"))?;
        let turns: Vec<Turn> = turns
            .iter()
            .enumerate()
            .map(|(j, t)| {
                let id = format!("{}{number}:{}", char::from(ID_LETTER), j + 1);
                if t.has_answer == Some(true) {
                    answer_turns.push(id.clone());
                }
                Turn {
                    id,
                    speaker: t.role.clone(),
                    text: t.content.clone(),
                    image: None,
                }
            })
            .collect();
        if !turns.is_empty() {
            sessions.push(Session { number, at, turns });
        }
    }
    let mut answer_sessions = Vec::new();
    let mut unknown_answer_sessions = 0;
    let mut seen = HashSet::new();
    for a in &raw.answer_session_ids {
        if !seen.insert(a) {
            continue;
        }
        let copies: Vec<u32> = raw
            .haystack_session_ids
            .iter()
            .enumerate()
            .filter(|(_, h)| *h == a)
            .filter_map(|(i, _)| u32::try_from(i + 1).ok())
            .collect();
        if copies.is_empty() {
            unknown_answer_sessions += 1;
        } else {
            answer_sessions.push(copies);
        }
    }
    Ok(Instance {
        id: raw.question_id.clone(),
        kind: raw.question_type.clone(),
        question: raw.question.clone(),
        asked,
        history: Conversation {
            sample_id: raw.question_id.clone(),
            speakers: ["user".into(), "assistant".into()],
            sessions,
            questions: Vec::new(),
        },
        answer_sessions,
        unknown_answer_sessions,
        answer_turns,
    })
}

/// Reads the data set at `path` (gzip'd or not, JSON lines or one JSON array) and
/// hands each of its first `limit` instances, converted, to `each`, one at a time.
pub fn for_each(
    path: &Path,
    limit: Option<usize>,
    each: &mut dyn FnMut(Instance) -> Result<(), BenchError>,
) -> Result<(), BenchError> {
    let read_err = |source| BenchError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut raw = BufReader::new(file);
    let gzip = raw.fill_buf().map_err(read_err)?.starts_with(&[0x1f, 0x8b]);
    let inner: Box<dyn Read> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(raw))
    } else {
        Box::new(raw)
    };
    let mut reader = BufReader::new(inner);
    let limit = limit.unwrap_or(usize::MAX);
    let convert_one = |r: &Raw| {
        convert(r).map_err(|what| BenchError::Question {
            path: path.to_path_buf(),
            question: r.question_id.clone(),
            what,
        })
    };
    // The first byte that is not white space says which of the two shapes it is.
    let array = loop {
        let buf = reader.fill_buf().map_err(read_err)?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => {
                let first = buf[i];
                reader.consume(i);
                break first == b'[';
            }
            None if buf.is_empty() => return Ok(()),
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    };
    if array {
        let all: Vec<Raw> = serde_json::from_reader(reader).map_err(|source| BenchError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        for r in all.iter().take(limit) {
            each(convert_one(r)?)?;
        }
        return Ok(());
    }
    let mut done = 0;
    for (i, line) in reader.lines().enumerate() {
        if done >= limit {
            break;
        }
        let line = line.map_err(read_err)?;
        if line.trim().is_empty() {
            continue;
        }
        let r: Raw = serde_json::from_str(&line).map_err(|source| BenchError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?;
        each(convert_one(&r)?)?;
        done += 1;
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::bench::locomo;
    use serde_json::json;

    /// A made-up instance in the data set's shape (not LongMemEval text): three
    /// sessions, the second held twice in the haystack, one answer id unknown.
    pub(crate) fn sample(id: &str) -> Raw {
        serde_json::from_value(json!({
            "question_id": id,
            "question_type": "single-session-user",
            "question": "What is the name of my grey cat?",
            "answer": "Pixel",
            "question_date": "2024/04/02 (Tue) 10:15",
            "haystack_session_ids": ["s_a", "answer_b", "s_c", "answer_b"],
            "haystack_dates": [
                "2024/03/01 (Fri) 09:00",
                "2024/03/03 (Sun) 18:30",
                "2024/03/05 (Tue) 07:45",
                "2024/03/06 (Wed) 08:00"
            ],
            "haystack_sessions": [
                [
                    {"role": "user", "content": "Can you suggest a bread recipe?"},
                    {"role": "assistant", "content": "Try a simple\n\nsourdough loaf."}
                ],
                [
                    {"role": "user", "content": "I adopted a grey cat named Pixel.", "has_answer": true},
                    {"role": "assistant", "content": "Congratulations on Pixel!", "has_answer": false}
                ],
                [],
                [
                    {"role": "user", "content": "I adopted a grey cat named Pixel.", "has_answer": true}
                ]
            ],
            "answer_session_ids": ["answer_b", "answer_gone", "answer_b"]
        }))
        .unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn times_parse_with_or_without_a_weekday() {
        for (s, want) in [
            ("2023/05/20 (Sat) 02:21", Some("2023-05-20T02:21:00Z")),
            ("2023/05/20 02:21", Some("2023-05-20T02:21:00Z")),
            // The weekday is not checked (20 May 2023 was a Saturday).
            ("2023/05/20 (Mon) 23:59", Some("2023-05-20T23:59:00Z")),
            ("2023/13/20 (Sat) 02:21", None),
            ("20 May 2023", None),
        ] {
            assert_eq!(parse_when(s), want.map(at), "{s}");
        }
    }

    #[test]
    fn converts_ids_dates_and_evidence() {
        let q = convert(&sample("q1")).unwrap();
        assert_eq!(q.asked, at("2024-04-02T10:15:00Z"));
        assert!(!q.abstention());
        let s = &q.history.sessions;
        // The empty third session is left out; numbers stay the haystack's.
        assert_eq!(s.iter().map(|s| s.number).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(s[1].at, at("2024-03-03T18:30:00Z"));
        assert_eq!(
            s[0].turns.iter().map(locomo::turn_line).collect::<Vec<_>>(),
            [
                "[S1:1] user: Can you suggest a bread recipe?",
                "[S1:2] assistant: Try a simple sourdough loaf."
            ]
        );
        // The answer session held twice is one answer session with two copies; the
        // id given twice counts once; the id the haystack lacks is counted apart.
        assert_eq!(q.answer_sessions, [vec![2, 4]]);
        assert_eq!(q.unknown_answer_sessions, 1);
        assert_eq!(q.answer_turns, ["S2:1", "S4:1"]);
        assert!(convert(&sample("q1_abs")).unwrap().abstention());

        let mut bad = sample("q2");
        bad.haystack_dates.pop();
        assert!(convert(&bad).is_err());
        let mut bad = sample("q3");
        bad.question_date = "soon".into();
        assert!(convert(&bad).is_err());
    }

    #[test]
    fn builds_each_session_as_a_dated_memory() {
        let q = convert(&sample("q1")).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mem = locomo::build_store_from("LongMemEval", &q.history, tmp.path()).unwrap();
        let r = mem.read("session_02").unwrap();
        assert_eq!(r.meta.name, "Session 2");
        assert_eq!(r.meta.updated.text, "2024-03-03");
        assert_eq!(
            r.body,
            "[S2:1] user: I adopted a grey cat named Pixel.\n\
             [S2:2] assistant: Congratulations on Pixel!"
        );
        assert_eq!(mem.events().unwrap().events.len(), 5);
    }

    #[test]
    fn reads_gzip_json_lines_and_arrays() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let line = |id: &str| serde_json::to_string(&raw_json(id)).unwrap();
        let text = format!("{}\n\n{}\n{}\n", line("a"), line("b"), line("c_abs"));
        let plain = tmp.path().join("d.jsonl");
        std::fs::write(&plain, &text).unwrap();
        let gz = tmp.path().join("d.jsonl.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        let array = tmp.path().join("d.json");
        std::fs::write(
            &array,
            format!("  [{},{},{}]", line("a"), line("b"), line("c_abs")),
        )
        .unwrap();
        let ids = |path: &Path, limit| {
            let mut v = Vec::new();
            for_each(path, limit, &mut |q| {
                v.push(q.id);
                Ok(())
            })
            .map(|_| v)
        };
        for p in [&plain, &gz, &array] {
            assert_eq!(ids(p, None).unwrap(), ["a", "b", "c_abs"], "{p:?}");
            assert_eq!(ids(p, Some(2)).unwrap(), ["a", "b"], "{p:?}");
        }
        let broken = tmp.path().join("broken.jsonl");
        std::fs::write(&broken, format!("{}\n{{\"question_id\": 1}}\n", line("a"))).unwrap();
        let err = ids(&broken, None).unwrap_err();
        assert!(matches!(err, BenchError::Line { line: 2, .. }), "{err}");
        let empty = tmp.path().join("empty.jsonl");
        std::fs::write(&empty, "\n").unwrap();
        assert!(ids(&empty, None).unwrap().is_empty());
    }

    pub(crate) fn raw_json(id: &str) -> serde_json::Value {
        json!({
            "question_id": id,
            "question_type": "multi-session",
            "question": "q?",
            "answer": 2,
            "question_date": "2024/04/02 (Tue) 10:15",
            "haystack_session_ids": ["x"],
            "haystack_dates": ["2024/03/01 (Fri) 09:00"],
            "haystack_sessions": [[{"role": "user", "content": "hi", "has_answer": true}]],
            "answer_session_ids": ["x"]
        })
    }
}
