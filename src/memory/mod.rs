//! The memory data model: keys, types, decay, dates and the parsed record.
//!
//! This module owns the invariants of a single memory (what a valid key is, what a
//! `type` or `decay` value means, how a memory is normalized for the "identical
//! content is a no-op" rule). It does no IO and never reads the clock.

pub mod edit;
pub mod frontmatter;
pub mod index;
pub mod layout;
pub mod links;
pub mod merge;
pub mod printable;
pub mod secrets;
mod shared;
pub mod timeline;

use std::fmt;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::memory::frontmatter::Extra;
pub use crate::memory::shared::SharedStr;
pub(crate) use crate::memory::shared::{SharedBytes, offset_in};

/// Longest key memdir writes (the key pattern allows 100 characters).
pub const MAX_KEY_LEN: usize = 100;

/// The key of a memory: its file stem.
///
/// Keys written through memdir match `^[a-z0-9][a-z0-9_-]{0,99}$`; [`Key::parse`]
/// enforces that. Files a person created with other names are still loaded, with a
/// key made by [`Key::from_file_stem`], so that they can be read and forgotten.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Key(String);

/// Why a key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key is empty.
    #[error("key is empty")]
    Empty,
    /// The key is longer than the limit.
    #[error("key `{key}` is longer than {MAX_KEY_LEN} characters")]
    TooLong {
        /// The key.
        key: String,
    },
    #[error(
        "key `{key}` must start with a lowercase letter or digit and contain only a-z, 0-9, `_` and `-`"
    )]
    /// The key has a character outside the pattern or starts with `_` or `-`.
    Pattern {
        /// The key.
        key: String,
    },
}

impl Key {
    /// Validates a key for writing (`^[a-z0-9][a-z0-9_-]{0,99}$`).
    ///
    /// ```
    /// use memdir::Key;
    /// assert!(Key::parse("user_role").is_ok());
    /// assert!(Key::parse("../x").is_err());
    /// assert!(Key::parse("User").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Key, KeyError> {
        // A trailing `.md` is a common slip (the file name instead of the key); accept it.
        let s = s.strip_suffix(".md").unwrap_or(s);
        if s.is_empty() {
            return Err(KeyError::Empty);
        }
        if s.chars().count() > MAX_KEY_LEN {
            return Err(KeyError::TooLong { key: s.to_string() });
        }
        if !Key::pattern_holds(s) {
            return Err(KeyError::Pattern { key: s.to_string() });
        }
        Ok(Key(s.to_string()))
    }

    /// Whether `s` starts with a lowercase letter or digit and holds only those,
    /// `_` and `-`.
    fn pattern_holds(s: &str) -> bool {
        let mut chars = s.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        first_ok
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    }

    /// Whether `stem` (a file name less `.md`) is a key memdir writes, as
    /// [`Key::is_canonical`] says of its key, without building one.
    pub(crate) fn is_canonical_stem(stem: &str) -> bool {
        Key::pattern_holds(stem) && stem.len() <= MAX_KEY_LEN
    }

    /// The key of a file found in the directory, whatever its name.
    ///
    /// Only names that came from a directory listing go through here, so the key can
    /// never address a path outside the directory.
    pub fn from_file_stem(stem: &str) -> Key {
        Key(stem.to_string())
    }

    /// Whether this key matches the pattern memdir writes.
    pub fn is_canonical(&self) -> bool {
        Key::is_canonical_stem(&self.0)
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The file name of this memory (`<key>.md`).
    pub fn file_name(&self) -> String {
        format!("{}.md", self.0)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `type` of a memory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `type: user`.
    User,
    /// `type: feedback`.
    Feedback,
    /// `type: project`.
    Project,
    /// `type: reference`.
    Reference,
    /// Agent state (`state_<key>.md`, spec/memory-format.md#agent-state): salience 1,
    /// no decay, shown right after the index in the context block.
    State,
    /// Any other value: loads with a warning and gets no salience bonus.
    Other(String),
}

impl Kind {
    /// Parses a `type` value; unknown values become [`Kind::Other`].
    pub fn parse(s: &str) -> Kind {
        match s {
            "user" => Kind::User,
            "feedback" => Kind::Feedback,
            "project" => Kind::Project,
            "reference" => Kind::Reference,
            "state" => Kind::State,
            other => Kind::Other(other.to_string()),
        }
    }

    /// Parses a `type` value for writing: only the known types are accepted (the four
    /// three.ws types and `state`).
    pub fn parse_strict(s: &str) -> Option<Kind> {
        match Kind::parse(s) {
            Kind::Other(_) => None,
            k => Some(k),
        }
    }

    /// The type as written in frontmatter (`user`, `feedback`, …, or the other value).
    pub fn as_str(&self) -> &str {
        match self {
            Kind::User => "user",
            Kind::Feedback => "feedback",
            Kind::Project => "project",
            Kind::Reference => "reference",
            Kind::State => "state",
            Kind::Other(s) => s,
        }
    }

    /// Salience bonus of the type (spec/ranking.md#salience).
    pub fn bonus(&self) -> f64 {
        match self {
            Kind::Feedback => 0.3,
            Kind::User => 0.2,
            Kind::Project => 0.1,
            Kind::Reference | Kind::State | Kind::Other(_) => 0.0,
        }
    }

    /// Position of the type's section in MEMORY.md: the four known types first.
    pub fn section_rank(&self) -> u8 {
        match self {
            Kind::User => 0,
            Kind::Feedback => 1,
            Kind::Project => 2,
            Kind::Reference => 3,
            Kind::State => 4,
            Kind::Other(_) => 5,
        }
    }
}

/// A `type` value as a person or a program gives it (`"user".into()`): surrounding
/// blanks are dropped, then it reads as [`Kind::parse`] does; a value that is no
/// type is [`Kind::Other`], which `Memory::write` refuses.
impl From<&str> for Kind {
    fn from(s: &str) -> Kind {
        Kind::parse(s.trim())
    }
}

/// As `From<&str>`.
impl From<String> for Kind {
    fn from(s: String) -> Kind {
        Kind::from(s.as_str())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The recency half-life of a memory (`decay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decay {
    /// `decay: never`: recency is always 1.
    Never,
    /// `decay: <N>d`: a half-life of N days (N ≥ 1).
    Days(u32),
}

impl Decay {
    /// Parses `never` or `<N>d`.
    pub fn parse(s: &str) -> Option<Decay> {
        let s = s.trim();
        if s == "never" {
            return Some(Decay::Never);
        }
        let days = s.strip_suffix('d')?;
        if days.is_empty() || !days.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match days.parse::<u32>() {
            Ok(n) if n >= 1 => Some(Decay::Days(n)),
            _ => None,
        }
    }
}

impl fmt::Display for Decay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decay::Never => f.write_str("never"),
            Decay::Days(n) => write!(f, "{n}d"),
        }
    }
}

/// A `created` / `updated` value: the instant it denotes and the text it was written as.
///
/// memdir writes plain dates (`2026-04-14`); a full RFC 3339 timestamp is accepted on
/// read. A date denotes the start of that day in UTC. The original text is kept so
/// that rewriting a memory does not change how a person wrote its `created` date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The instant.
    pub at: DateTime<Utc>,
    /// The text it was written as.
    pub text: String,
}

impl Stamp {
    /// Parses `YYYY-MM-DD` or an RFC 3339 timestamp.
    pub fn parse(s: &str) -> Option<Stamp> {
        let s = s.trim();
        // Fast path for the common `YYYY-MM-DD` (chrono's format parser is slow enough
        // to show when a store of 10,000 memories loads).
        let b = s.as_bytes();
        if b.len() == 10 && b[4] == b'-' && b[7] == b'-' {
            let num = |r: std::ops::Range<usize>| -> Option<u32> {
                b[r].iter().try_fold(0u32, |acc, &c| {
                    c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
                })
            };
            let d = NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)?;
            return Some(Stamp {
                at: d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
                text: s.to_string(),
            });
        }
        if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d")
            && s.len() == 10
        {
            return Some(Stamp::from_date(d));
        }
        let t = DateTime::parse_from_rfc3339(s).ok()?;
        Some(Stamp {
            at: t.with_timezone(&Utc),
            text: s.to_string(),
        })
    }

    /// The stamp of a plain date.
    pub fn from_date(d: NaiveDate) -> Stamp {
        Stamp {
            at: d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
            text: d.format("%Y-%m-%d").to_string(),
        }
    }

    /// The stamp of a file without the field (Claude Code writes no dates,
    /// memory-format.md#fields): the Unix epoch for ordering and recency, an empty
    /// text, and never written back by memdir.
    pub fn undated() -> Stamp {
        Stamp {
            at: DateTime::UNIX_EPOCH,
            text: String::new(),
        }
    }

    /// Whether the file had no value for the field ([`Stamp::undated`]).
    pub fn is_undated(&self) -> bool {
        self.text.is_empty()
    }

    /// The UTC calendar date of the stamp.
    pub fn date(&self) -> NaiveDate {
        self.at.date_naive()
    }
}

/// Frontmatter of a memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// A short name.
    pub name: String,
    /// The one-line description the index lists.
    pub description: String,
    /// The memory's type.
    pub kind: Kind,
    /// When it was created.
    pub created: Stamp,
    /// When it last changed.
    pub updated: Stamp,
    /// Where it came from, if recorded.
    pub source: Option<String>,
    /// Its recency half-life (`decay`), when set.
    pub decay: Option<Decay>,
    /// Its tags.
    pub tags: Vec<String>,
    /// `important: true`: salience 1, and never pruned.
    pub important: bool,
    /// Keys of the memories this one replaces (`supersedes:`; spec/memory-format.md#supersedes),
    /// as written in the file.
    pub supersedes: Vec<String>,
    /// The last day this memory holds (`valid_until:`), as written in the file; see
    /// [`Meta::valid_until_date`]. A value that is not a date loads with a warning,
    /// is kept on rewrite and expires nothing.
    pub valid_until: Option<String>,
    /// Keys memdir does not know, kept with their original text and order.
    pub extra: Extra,
}

/// Parses a plain `YYYY-MM-DD` day (a `valid_until` value).
pub fn parse_day(s: &str) -> Option<NaiveDate> {
    let t = s.trim();
    (t.len() == 10)
        .then(|| NaiveDate::parse_from_str(t, "%Y-%m-%d").ok())
        .flatten()
}

impl Meta {
    /// The `valid_until` day, when it is one.
    pub fn valid_until_date(&self) -> Option<NaiveDate> {
        self.valid_until.as_deref().and_then(parse_day)
    }

    /// Whether the memory has expired on `today`: its `valid_until` day is before it
    /// (spec/memory-format.md#valid_until).
    pub fn expired(&self, today: NaiveDate) -> bool {
        self.valid_until_date().is_some_and(|d| d < today)
    }

    /// The frontmatter as JSON: the known fields, then unknown keys in file order
    /// (the `meta` of `memdir read --json` and of the MCP `read_memory` tool).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{Map, Value, json};
        let mut o = Map::new();
        o.insert("name".into(), json!(self.name));
        o.insert("description".into(), json!(self.description));
        o.insert("type".into(), json!(self.kind.as_str()));
        o.insert("created".into(), json!(self.created.text));
        o.insert("updated".into(), json!(self.updated.text));
        if let Some(s) = &self.source {
            o.insert("source".into(), json!(s));
        }
        if let Some(d) = self.decay {
            o.insert("decay".into(), json!(d.to_string()));
        }
        o.insert("tags".into(), json!(self.tags));
        o.insert("important".into(), json!(self.important));
        if !self.supersedes.is_empty() {
            o.insert("supersedes".into(), json!(self.supersedes));
        }
        if let Some(v) = &self.valid_until {
            o.insert("valid_until".into(), json!(v));
        }
        for (k, v) in self.extra.values() {
            o.insert(k.to_string(), v.clone());
        }
        Value::Object(o)
    }
}

/// What a session summary summarizes (`summarizes: {session, through}`,
/// spec/memory-format.md#session-summaries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarizes {
    /// The session summarized.
    pub session: String,
    /// The time of the newest event the summary covers.
    pub through: DateTime<Utc>,
}

impl Meta {
    /// `limit:` of a state entry: the most characters the context block shows of it
    /// (spec/memory-format.md#agent-state). A positive whole number; anything else is
    /// no limit.
    pub fn state_limit(&self) -> Option<usize> {
        match self.extra.get("limit")? {
            serde_json::Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|n| *n > 0)
    }

    /// `read_only: true`: a person's mark; every path that writes, moves or deletes
    /// the memory refuses it (spec/memory-format.md).
    pub fn read_only(&self) -> bool {
        matches!(
            self.extra.get("read_only"),
            Some(serde_json::Value::Bool(true))
        )
    }

    /// `summarizes: {session: ID, through: TS}` of a session summary, when well formed.
    pub fn summarizes(&self) -> Option<Summarizes> {
        let m = self.extra.get("summarizes")?.as_object()?;
        let session = match m.get("session")? {
            serde_json::Value::String(s) if !s.trim().is_empty() => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let through = DateTime::parse_from_rfc3339(m.get("through")?.as_str()?.trim())
            .ok()?
            .with_timezone(&Utc);
        Some(Summarizes { session, through })
    }
}

/// A memory loaded from a file: key, frontmatter and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The memory's key.
    pub key: Key,
    /// Its frontmatter.
    pub meta: Meta,
    /// The Markdown body, without the blank line that separates it from the
    /// frontmatter and without trailing white space.
    pub body: SharedStr,
}

impl Record {
    /// SHA-256 of the normalized memory: every field but the dates, and the body.
    ///
    /// Two writes with the same hash are the same memory, so the second is a no-op.
    pub fn content_hash(&self) -> [u8; 32] {
        content_hash(&self.meta, &self.body)
    }

    /// The version hash a compare-and-swap write names (`write --expect`, MCP
    /// `expected_hash`): [`Record::content_hash`] as 64 lowercase hex digits, shown by
    /// `read --json` and MCP `read_memory` as `hash` (spec/memory-format.md#version-hash).
    pub fn hash(&self) -> String {
        hash_hex(&self.meta, &self.body)
    }
}

/// SHA-256 of the normalized content of a memory (see [`Record::content_hash`]).
pub fn content_hash(meta: &Meta, body: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    // Length-prefix every field so that no two different memories can collide by
    // shifting text from one field into the next.
    let mut field = |tag: &str, value: &str| {
        h.update(tag.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value.as_bytes());
    };
    field("name", meta.name.trim());
    field("description", meta.description.trim());
    field("type", meta.kind.as_str());
    field("source", meta.source.as_deref().unwrap_or(""));
    field(
        "decay",
        &meta.decay.map(|d| d.to_string()).unwrap_or_default(),
    );
    for t in &meta.tags {
        field("tag", t);
    }
    field("important", if meta.important { "true" } else { "false" });
    // Only when present, so the hash of every memory without them is unchanged.
    for k in &meta.supersedes {
        field("supersedes", k);
    }
    if let Some(v) = &meta.valid_until {
        field("valid_until", v);
    }
    for (k, v) in meta.extra.iter() {
        field("extra-key", k);
        field("extra-value", &v);
    }
    field("body", normalize_body(body));
    h.finalize().into()
}

/// [`content_hash`] as 64 lowercase hex digits (see [`Record::hash`]).
pub fn hash_hex(meta: &Meta, body: &str) -> String {
    content_hash(meta, body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The body as compared and stored: no leading blank lines, no trailing white space.
pub fn normalize_body(body: &str) -> &str {
    body.trim_start_matches(['\n', '\r']).trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_key(input: &str, ok: Option<&str>) {
        match (Key::parse(input), ok) {
            (Ok(k), Some(want)) => assert_eq!(k.as_str(), want, "{input}"),
            (Err(_), None) => {}
            (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn keys() {
        // spec/memory-format.md#keys
        check_key("user_role", Some("user_role"));
        check_key("a", Some("a"));
        check_key("0-x_y", Some("0-x_y"));
        check_key("user_role.md", Some("user_role"));
        check_key(&"a".repeat(100), Some(&"a".repeat(100)));
        check_key(&"a".repeat(101), None);
        check_key("", None);
        check_key(".md", None);
        check_key("_x", None);
        check_key("-x", None);
        check_key("User", None);
        check_key("../x", None);
        check_key("a/b", None);
        check_key("a b", None);
        check_key("a.b", None);
        check_key("é", None);
        check_key("a\0", None);
    }

    #[test]
    fn decay_values() {
        assert_eq!(Decay::parse("never"), Some(Decay::Never));
        assert_eq!(Decay::parse("30d"), Some(Decay::Days(30)));
        assert_eq!(Decay::parse("1d"), Some(Decay::Days(1)));
        assert_eq!(Decay::parse("0d"), None);
        assert_eq!(Decay::parse("d"), None);
        assert_eq!(Decay::parse("-3d"), None);
        assert_eq!(Decay::parse("30"), None);
        assert_eq!(Decay::parse("99999999999d"), None);
        assert_eq!(Decay::Days(90).to_string(), "90d");
    }

    #[test]
    fn stamps() {
        let d = Stamp::parse("2026-04-14").unwrap();
        assert_eq!(d.at.to_rfc3339(), "2026-04-14T00:00:00+00:00");
        assert_eq!(d.text, "2026-04-14");
        let t = Stamp::parse("2026-04-14T23:30:00-02:00").unwrap();
        assert_eq!(t.date().to_string(), "2026-04-15");
        assert!(Stamp::parse("2026-4-14").is_none());
        assert!(Stamp::parse("yesterday").is_none());
        assert!(Stamp::parse("2026-02-30").is_none());
    }
}
