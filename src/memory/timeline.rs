//! Timeline events and their JSONL encoding.
//!
//! An event is one JSON object on one line: `ts` (RFC 3339, UTC, `Z`, milliseconds)
//! first, `type` second, then the event's own fields in the order given. Events live
//! in `timeline/YYYY-MM-DD.jsonl`, one file per UTC day of their `ts`. This module
//! encodes, decodes and validates; appending to files is the store's job.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

/// Longest event type accepted.
pub const MAX_TYPE_LEN: usize = 64;

/// One timeline event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When it happened.
    pub ts: DateTime<Utc>,
    /// Its type (`type` in the JSON line).
    pub kind: String,
    /// Its other fields.
    pub fields: Map<String, Value>,
}

/// Why an event was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// A field memdir sets itself (`ts`, `type`) given as an event field.
    #[error("event field `{0}` is reserved: memdir sets `ts` and `type` itself")]
    Reserved(String),
    #[error(
        "event type `{0}` must be 1 to {MAX_TYPE_LEN} characters of a-z, A-Z, 0-9, `_`, `-`, `.` or `:`"
    )]
    /// An event type outside the allowed characters or length.
    BadType(String),
}

/// Why a timeline line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not valid JSON.
    #[error("not valid JSON: {0}")]
    Json(String),
    /// Not a JSON object.
    #[error("not a JSON object")]
    NotAnObject,
    /// `ts` missing or not an RFC 3339 timestamp.
    #[error("missing or invalid `ts` (an RFC 3339 timestamp is required)")]
    BadTs,
    /// `type` missing or invalid.
    #[error("missing or invalid `type`")]
    BadType,
}

fn valid_type(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= MAX_TYPE_LEN
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

impl Event {
    /// Builds an event, refusing fields named `ts` or `type` and malformed types.
    ///
    /// ```
    /// use memdir::memory::timeline::Event;
    /// let now = "2026-04-14T12:03:12.512Z".parse().unwrap();
    /// let mut fields = serde_json::Map::new();
    /// fields.insert("text".into(), "how's my form?".into());
    /// let e = Event::new(now, "user_said", fields).unwrap();
    /// assert_eq!(e.encode(), r#"{"ts":"2026-04-14T12:03:12.512Z","type":"user_said","text":"how's my form?"}"#);
    /// ```
    pub fn new(
        ts: DateTime<Utc>,
        kind: &str,
        fields: Map<String, Value>,
    ) -> Result<Event, EventError> {
        if !valid_type(kind) {
            return Err(EventError::BadType(kind.to_string()));
        }
        for reserved in ["ts", "type"] {
            if fields.contains_key(reserved) {
                return Err(EventError::Reserved(reserved.to_string()));
            }
        }
        Ok(Event {
            ts,
            kind: kind.to_string(),
            fields,
        })
    }

    /// The JSON line of the event, without the trailing newline.
    pub fn encode(&self) -> String {
        let mut m = Map::with_capacity(self.fields.len() + 2);
        m.insert("ts".into(), Value::String(format_ts(&self.ts)));
        m.insert("type".into(), Value::String(self.kind.clone()));
        for (k, v) in &self.fields {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m).to_string()
    }

    /// The file this event belongs in, relative to the memory directory.
    pub fn day_file(&self) -> String {
        day_file(&self.ts)
    }

    /// The value of a string field, if present.
    pub fn field_str(&self, name: &str) -> Option<&str> {
        self.fields.get(name).and_then(Value::as_str)
    }
}

/// `timeline/YYYY-MM-DD.jsonl` for the UTC day of `ts`.
pub fn day_file(ts: &DateTime<Utc>) -> String {
    format!("timeline/{}.jsonl", ts.format("%Y-%m-%d"))
}

/// Whether a file name is a timeline day file (`YYYY-MM-DD.jsonl`).
pub fn is_day_file_name(name: &str) -> bool {
    name.strip_suffix(".jsonl")
        .is_some_and(|d| d.len() == 10 && chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok())
}

/// RFC 3339 in UTC with milliseconds and `Z`, the one format memdir writes.
pub fn format_ts(ts: &DateTime<Utc>) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses one line of a timeline file.
pub fn parse_line(line: &str) -> Result<Event, LineError> {
    let v: Value = serde_json::from_str(line).map_err(|e| LineError::Json(e.to_string()))?;
    let Value::Object(mut m) = v else {
        return Err(LineError::NotAnObject);
    };
    let ts = m
        .shift_remove("ts")
        .and_then(|v| v.as_str().map(str::to_string))
        .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
        .ok_or(LineError::BadTs)?
        .with_timezone(&Utc);
    let kind = match m.shift_remove("type") {
        Some(Value::String(s)) if !s.is_empty() => s,
        _ => return Err(LineError::BadType),
    };
    Ok(Event {
        ts,
        kind,
        fields: m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn encodes_ts_then_type_then_fields() {
        // spec/timeline-format.md#lines
        let mut f = Map::new();
        f.insert("z".into(), 1.into());
        f.insert("a".into(), "x\ny".into());
        let e = Event::new(ts("2026-04-14T23:59:59.9999Z"), "note", f).unwrap();
        assert_eq!(
            e.encode(),
            r#"{"ts":"2026-04-14T23:59:59.999Z","type":"note","z":1,"a":"x\ny"}"#
        );
        assert_eq!(e.day_file(), "timeline/2026-04-14.jsonl");
    }

    #[test]
    fn day_is_the_utc_day() {
        let e = Event::new(ts("2026-04-14T23:30:00-02:00"), "x", Map::new()).unwrap();
        assert_eq!(e.day_file(), "timeline/2026-04-15.jsonl");
    }

    #[test]
    fn reserved_and_bad_types_are_refused() {
        let mut f = Map::new();
        f.insert("ts".into(), "x".into());
        assert_eq!(
            Event::new(ts("2026-01-01T00:00:00Z"), "a", f).unwrap_err(),
            EventError::Reserved("ts".into())
        );
        let mut f = Map::new();
        f.insert("type".into(), "x".into());
        assert!(Event::new(ts("2026-01-01T00:00:00Z"), "a", f).is_err());
        for bad in ["", "has space", "ünï", &"x".repeat(65)] {
            assert!(Event::new(ts("2026-01-01T00:00:00Z"), bad, Map::new()).is_err());
        }
    }

    #[test]
    fn parses_lines() {
        let e = parse_line(r#"{"ts":"2026-04-14T12:03:12Z","type":"forgot","key":"k"}"#).unwrap();
        assert_eq!(e.kind, "forgot");
        assert_eq!(e.field_str("key"), Some("k"));
        assert_eq!(
            e.encode(),
            r#"{"ts":"2026-04-14T12:03:12.000Z","type":"forgot","key":"k"}"#
        );
        for (line, err) in [
            ("{", "not valid JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"type":"x"}"#, "missing or invalid `ts`"),
            (
                r#"{"ts":"yesterday","type":"x"}"#,
                "missing or invalid `ts`",
            ),
            (
                r#"{"ts":"2026-01-01T00:00:00Z"}"#,
                "missing or invalid `type`",
            ),
            (
                r#"{"ts":"2026-01-01T00:00:00Z","type":3}"#,
                "missing or invalid `type`",
            ),
        ] {
            let got = parse_line(line).unwrap_err().to_string();
            assert!(got.starts_with(err), "{line}: {got}");
        }
    }

    #[test]
    fn day_file_names() {
        assert!(is_day_file_name("2026-04-14.jsonl"));
        assert!(!is_day_file_name("2026-4-14.jsonl"));
        assert!(!is_day_file_name("2026-04-14.json"));
        assert!(!is_day_file_name("notes.jsonl"));
    }
}
