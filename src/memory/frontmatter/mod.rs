//! YAML frontmatter: split a memory file, parse its frontmatter, render it back.
//!
//! This is the only module that calls the YAML library (serde-saphyr), so a change of
//! YAML crate touches one file. Reading is lenient where it is safe (UTF-8 BOM, CRLF,
//! quotes, lists, colons in quoted values, unknown keys) and strict where guessing
//! would corrupt data (duplicate keys, malformed YAML, wrong field types): those are
//! errors with the file line and column. Writing quotes every value a YAML 1.1 reader
//! could misread (`no`, `12:30`, `1.10`, ...), and keeps unknown keys with their
//! original text and order. No IO, no clock.
//!
//! Here: the types, splitting a file at its fences and the entry points. The YAML
//! library is called only in `yaml`; `layout` finds each entry's text, `fields` reads
//! the known keys into a [`Meta`], `render` writes a file back and `portable` reads
//! and writes the `memory/0.1` blob format of the three.ws runtime.

mod fields;
mod layout;
mod portable;
mod render;
mod yaml;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::memory::Meta;
use fields::from_map;
pub use portable::Portable;
pub use portable::parse_portable;
pub use portable::render_portable;
pub use render::render;
use yaml::parse_yaml;

/// Keys memdir gives a meaning to, in the order it writes them.
const KNOWN: [&str; 11] = [
    "name",
    "description",
    "type",
    "created",
    "updated",
    "source",
    "decay",
    "tags",
    "important",
    "supersedes",
    "valid_until",
];

/// Why a file's frontmatter could not be read. Lines are 1-based lines of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The file does not start with a `---` line.
    #[error("no frontmatter: the file must start with a `---` line")]
    Missing,
    /// The opening `---` has no closing `---`.
    #[error("frontmatter opened on line 1 is never closed with a `---` line")]
    Unclosed,
    /// The frontmatter is not valid YAML.
    #[error("line {line} column {column}: {message}")]
    Yaml {
        /// The line (1-based, in the file).
        line: usize,
        /// The column.
        column: usize,
        /// The YAML library's message.
        message: String,
    },
    /// The frontmatter is not a mapping.
    #[error("line {line}: frontmatter must be a mapping of `key: value` lines")]
    NotAMapping {
        /// The line.
        line: usize,
    },
    /// A required field is missing.
    #[error("required field `{field}` is missing")]
    MissingField {
        /// The field.
        field: &'static str,
    },
    /// The values cannot be written back as YAML that reads the same.
    #[error("its values cannot be written as YAML that reads back the same")]
    NotRewritable,
    /// A field with a value of the wrong kind.
    #[error("line {line}: `{field}` {problem}")]
    Field {
        /// The field.
        field: &'static str,
        /// Its line.
        line: usize,
        /// What is wrong with the value.
        problem: &'static str,
    },
}

impl FrontmatterError {
    /// The file line the error points at, when it points at one.
    pub fn line(&self) -> Option<usize> {
        match self {
            FrontmatterError::Missing | FrontmatterError::Unclosed => Some(1),
            FrontmatterError::Yaml { line, .. }
            | FrontmatterError::NotAMapping { line }
            | FrontmatterError::Field { line, .. } => Some(*line),
            FrontmatterError::MissingField { .. } | FrontmatterError::NotRewritable => Some(2),
        }
    }
}

/// A problem that does not stop the memory from loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Its line.
    pub line: usize,
    /// What was wrong and what was used instead.
    pub message: String,
}

/// Frontmatter keys memdir does not know, and the layout needed to rewrite the file
/// without disturbing what a person wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra {
    /// Unknown keys: name, original YAML text of the entry (key line included) when
    /// recorded, value.
    entries: Vec<(String, Option<String>, Value)>,
    /// Every top-level key in the order the file had them: shared, since most
    /// memories of a store have the same keys in the same order (a load from the
    /// search index hands one list to all of them).
    order: Arc<[String]>,
    /// Comment lines before the first key.
    preamble: String,
    /// Known keys as the file had them: name, how memdir would write the value the
    /// file held, and the original text. Unchanged values are written back as they were.
    known_raw: Vec<(String, String, String)>,
    /// Keys whose original text refers by alias to an anchor in another entry, so
    /// copying one without the other could leave the alias dangling.
    linked: Vec<String>,
}

impl Extra {
    /// Unknown keys and their values as JSON text (stable across reformatting).
    pub fn iter(&self) -> impl Iterator<Item = (&str, String)> {
        self.entries
            .iter()
            .map(|(k, _, v)| (k.as_str(), v.to_string()))
    }

    /// Unknown keys and their values.
    pub fn values(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, _, v)| (k.as_str(), v))
    }

    /// Whether there are no unknown keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every top-level key in file order (known keys included).
    pub fn order(&self) -> &[String] {
        &self.order
    }

    /// [`Extra::order`], shared.
    pub fn order_shared(&self) -> Arc<[String]> {
        Arc::clone(&self.order)
    }

    /// The value of an unknown key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, _, v)| v)
    }

    /// Sets an unknown key (memdir-known keys are fields of [`Meta`]): a key the file
    /// had keeps its place and is written afresh; a new key goes after the others (on
    /// a new memory, after the known keys).
    pub fn set(&mut self, key: &str, value: Value) {
        if KNOWN.contains(&key) {
            return;
        }
        match self.entries.iter_mut().find(|(k, _, _)| k == key) {
            Some(e) => {
                if e.2 != value {
                    e.1 = None;
                    e.2 = value;
                }
            }
            None => {
                if self.order.is_empty() {
                    self.order = KNOWN.iter().map(|k| k.to_string()).collect();
                }
                self.entries.push((key.to_string(), None, value));
            }
        }
        if !self.order.iter().any(|k| k == key) {
            let mut order = self.order.to_vec();
            order.push(key.to_string());
            self.order = order.into();
        }
    }

    /// Removes an unknown key.
    pub fn remove(&mut self, key: &str) {
        if KNOWN.contains(&key) {
            return;
        }
        self.entries.retain(|(k, _, _)| k != key);
        if self.order.iter().any(|k| k == key) {
            self.order = self.order.iter().filter(|k| *k != key).cloned().collect();
        }
    }

    /// Rebuilds the read-only form (no original text) from keys and values, as the
    /// cache stores it.
    pub fn from_values(order: Arc<[String]>, entries: Vec<(String, Value)>) -> Extra {
        Extra {
            entries: entries.into_iter().map(|(k, v)| (k, None, v)).collect(),
            order,
            preamble: String::new(),
            known_raw: Vec::new(),
            linked: Vec::new(),
        }
    }
}

/// The text values of a list field held as an unknown key (`aliases`, `supersedes`):
/// a list of scalars, or one scalar; anything else is no values.
pub fn list_values(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().filter_map(scalar_text).collect(),
        Value::Null => Vec::new(),
        v => scalar_text(v).into_iter().collect(),
    }
}

impl Meta {
    /// The `aliases:` of a memory (spec/memory-format.md#links): other names its links
    /// may use. Kept with the unknown keys, so a file is rewritten as it was written.
    pub fn aliases(&self) -> Vec<String> {
        self.extra
            .get("aliases")
            .map(list_values)
            .unwrap_or_default()
    }
}

/// A parsed memory file.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The frontmatter read.
    pub meta: Meta,
    /// The body after the frontmatter.
    pub body: String,
    /// Values loaded with a default, and why.
    pub warnings: Vec<Warning>,
}

/// The frontmatter text, the file line it starts on, and the body.
struct Split<'a> {
    yaml: &'a str,
    first_line: usize,
    body: &'a str,
}

/// Normalizes a file's text: strips a UTF-8 BOM and turns CRLF into LF.
pub fn normalize_text(text: &str) -> std::borrow::Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\r') {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

fn is_fence(line: &str) -> bool {
    line.trim_end() == "---"
}

fn split(text: &str) -> Result<Split<'_>, FrontmatterError> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontmatterError::Missing)?;
    if !is_fence(first) {
        return Err(FrontmatterError::Missing);
    }
    let start = first.len();
    let mut offset = start;
    for line in lines {
        let end = offset + line.len();
        if is_fence(line) || line.trim_end() == "..." {
            return Ok(Split {
                yaml: &text[start..offset],
                first_line: 2,
                body: &text[end..],
            });
        }
        offset = end;
    }
    Err(FrontmatterError::Unclosed)
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Parses a memory file (text already decoded as UTF-8).
///
/// ```
/// let text = "---\nname: Tone\ndescription: wants direct critique\ntype: feedback\n\
///             created: 2026-03-22\nupdated: 2026-04-14\n---\n\nLead with the issue.\n";
/// let parsed = memdir::memory::frontmatter::parse(text).unwrap();
/// assert_eq!(parsed.meta.name, "Tone");
/// assert_eq!(parsed.body, "Lead with the issue.");
/// ```
pub fn parse(text: &str) -> Result<Parsed, FrontmatterError> {
    parse_mode(text, true, true)
}

/// Parses a memory file for reading only: the same result as [`parse`] except that
/// the original text of each entry is not recorded, so [`render`] would re-serialize
/// unknown keys instead of copying them. Several times faster; use [`parse`] before
/// rewriting a file.
pub fn parse_read(text: &str) -> Result<Parsed, FrontmatterError> {
    parse_mode(text, false, true)
}

/// [`parse_read`] with the body left empty (the same errors and warnings): for a
/// caller that takes the body in place from `text` where [`body_span`] finds it,
/// instead of a copy of every body.
pub fn parse_read_meta(text: &str) -> Result<Parsed, FrontmatterError> {
    parse_mode(text, false, false)
}

fn parse_mode(text: &str, keep_layout: bool, with_body: bool) -> Result<Parsed, FrontmatterError> {
    let text = normalize_text(text);
    let s = split(&text)?;
    let value = if s.yaml.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        parse_yaml(s.yaml, s.first_line)?
    };
    let map = match value {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => {
            return Err(FrontmatterError::NotAMapping { line: s.first_line });
        }
    };
    from_map(map, &s, keep_layout, with_body)
}

/// The body of a memory file without parsing its frontmatter (for files whose
/// frontmatter is already known, e.g. from the cache).
pub fn body_of(text: &str) -> Result<String, FrontmatterError> {
    let text = normalize_text(text);
    let s = split(&text)?;
    Ok(crate::memory::normalize_body(s.body).to_string())
}

/// Where [`body_of`]'s body lies in `text`, when it is a slice of it (no BOM, no
/// carriage return, the frontmatter closed): `text[start..end]` is the body.
pub fn body_span(text: &str) -> Option<(usize, usize)> {
    if text.starts_with('\u{feff}') || text.contains('\r') {
        return None;
    }
    let s = split(text).ok()?;
    let open = text.len() - s.body.len();
    let lead = s.body.trim_start_matches(['\n', '\r']);
    let start = open + (s.body.len() - lead.len());
    let body = crate::memory::normalize_body(s.body);
    debug_assert_eq!(&text[start..start + body.len()], body);
    Some((start, start + body.len()))
}

/// A note from another tool: its frontmatter as a JSON map, and its body.
pub type ForeignNote = (Map<String, Value>, String);

/// The frontmatter of a Markdown note from another tool, as a JSON map, and its body
/// (text normalized: BOM dropped, CRLF as LF). `Ok(None)` when the file has no
/// frontmatter at all (a plain note); an unclosed or malformed block is an error with
/// its file line (spec/import-formats.md).
pub fn parse_map(text: &str) -> Result<Option<ForeignNote>, FrontmatterError> {
    let text = normalize_text(text);
    let s = match split(&text) {
        Ok(s) => s,
        Err(FrontmatterError::Missing) => return Ok(None),
        Err(e) => return Err(e),
    };
    let value = if s.yaml.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        parse_yaml(s.yaml, s.first_line)?
    };
    match value {
        Value::Object(m) => Ok(Some((m, s.body.to_string()))),
        Value::Null => Ok(Some((Map::new(), s.body.to_string()))),
        _ => Err(FrontmatterError::NotAMapping { line: s.first_line }),
    }
}

/// A memory file that may lack `created` and `updated` (Claude Code writes only
/// `name`, `description` and `type`) with the missing ones added as `date`, before
/// the closing fence; the rest of the text is kept as it is (spec/import-formats.md).
pub fn with_dates(text: &str, date: &str) -> Result<String, FrontmatterError> {
    let text = normalize_text(text);
    let s = split(&text)?;
    let value = if s.yaml.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        parse_yaml(s.yaml, s.first_line)?
    };
    let map = match value {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err(FrontmatterError::NotAMapping { line: s.first_line }),
    };
    let mut yaml = s.yaml.to_string();
    if !yaml.is_empty() && !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    for field in ["created", "updated"] {
        if !map.contains_key(field) {
            yaml.push_str(&format!("{field}: {date}\n"));
        }
    }
    Ok(format!("---\n{yaml}---\n{}", s.body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Decay;
    use crate::memory::Kind;
    use layout::KEY_LINE_SCANS;

    pub(super) const GOOD: &str = "---\nname: Tone\ndescription: user wants direct critique\ntype: feedback\ncreated: 2026-03-22\nupdated: 2026-04-14\n---\n\nUser prefers direct critique.\n\n**Why:** corrected twice.\n";

    fn check_err(text: &str, want: &str) {
        match parse(text) {
            Ok(p) => panic!("expected error {want:?}, parsed {p:?}"),
            Err(e) => assert_eq!(e.to_string(), want, "input: {text:?}"),
        }
    }

    pub(super) fn meta_of(text: &str) -> Meta {
        parse(text).unwrap().meta
    }

    #[test]
    fn body_span_is_the_body_when_the_text_needs_no_normalizing() {
        let head = "---\nname: A\n---";
        let dots = "---\nname: A\n...\nbody";
        let (a, b) = body_span(dots).unwrap();
        assert_eq!(&dots[a..b], "body");
        for body in [
            "",
            "x",
            "x\n",
            "\n\n  x y\n\n z \t\n\n",
            " lead",
            "a\n---\nb",
        ] {
            for close in ["\n", "\n\n", "  \n", "\n\n\n"] {
                let text = format!("{head}{close}{body}");
                let (a, b) = body_span(&text).expect(&text);
                assert_eq!(&text[a..b], body_of(&text).unwrap(), "{text:?}");
            }
        }
        for text in [
            "\u{feff}---\nname: A\n---\nx",
            "---\r\nname: A\r\n---\r\nx\r\n",
        ] {
            assert!(body_of(text).is_ok());
            assert_eq!(body_span(text), None, "{text:?}");
        }
        assert_eq!(body_span("no frontmatter"), None);
        assert_eq!(body_span("---\nname: A\n"), None);
    }

    #[test]
    fn reads_the_design_example() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.meta.name, "Tone");
        assert_eq!(p.meta.kind, Kind::Feedback);
        assert_eq!(p.meta.created.text, "2026-03-22");
        assert_eq!(
            p.body,
            "User prefers direct critique.\n\n**Why:** corrected twice."
        );
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn crlf_and_bom_load_like_lf() {
        let crlf = GOOD.replace('\n', "\r\n");
        let bom = format!("\u{feff}{crlf}");
        assert_eq!(parse(&crlf).unwrap(), parse(GOOD).unwrap());
        assert_eq!(parse(&bom).unwrap(), parse(GOOD).unwrap());
    }

    #[test]
    fn real_yaml_values() {
        let m = meta_of(
            "---\nname: \"Runbook: deploys\"\ndescription: 'it''s: fine'\ntype: project\ncreated: 2026-01-01\nupdated: 2026-01-02T10:00:00Z\ntags: [a, \"b c\", 2024]\nimportant: true\ndecay: 30d\nsource: chat 12\n---\n",
        );
        assert_eq!(m.name, "Runbook: deploys");
        assert_eq!(m.description, "it's: fine");
        assert_eq!(m.tags, vec!["a", "b c", "2024"]);
        assert!(m.important);
        assert_eq!(m.decay, Some(Decay::Days(30)));
        assert_eq!(m.source.as_deref(), Some("chat 12"));
        assert_eq!(m.updated.at.to_rfc3339(), "2026-01-02T10:00:00+00:00");
        let block = meta_of(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\ntags:\n  - x\n  - y\n---\n",
        );
        assert_eq!(block.tags, vec!["x", "y"]);
    }

    #[test]
    fn errors_name_the_line() {
        // spec/memory-format.md#errors
        check_err(
            "no fence\n",
            "no frontmatter: the file must start with a `---` line",
        );
        check_err(
            "---\nname: x\n",
            "frontmatter opened on line 1 is never closed with a `---` line",
        );
        check_err(
            "---\nname: x\nname: y\n---\n",
            "line 3 column 1: duplicate key `name`",
        );
        check_err(
            "---\nname: Re: x\n---\n",
            "line 2 column 9: mapping values are not allowed in this context",
        );
        check_err(
            "---\n- a\n---\n",
            "line 2: frontmatter must be a mapping of `key: value` lines",
        );
        check_err(
            "---\nname: n\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n",
            "required field `description` is missing",
        );
        check_err(
            "---\nname: n\ndescription: d\ntype: user\ncreated: yesterday\nupdated: 2026-01-01\n---\n",
            "line 5: `created` must be a date (YYYY-MM-DD) or an RFC 3339 timestamp",
        );
        check_err(
            "---\nname: [a]\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n",
            "line 2: `name` must be text, not a list or mapping",
        );
        check_err(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nimportant: no\n---\n",
            "line 7: `important` must be true or false",
        );
        check_err("---\n---\n", "required field `name` is missing");
    }

    // spec/memory-format.md#undated: a Claude Code file (no dates) loads, and a
    // rewrite does not invent dates for it.
    #[test]
    fn a_file_without_dates_is_undated_and_renders_back_as_written() {
        let text =
            "---\nname: Role\ndescription: backend engineer\ntype: user\n---\n\nWrites Go.\n";
        let p = parse(text).unwrap();
        assert!(p.meta.created.is_undated() && p.meta.updated.is_undated());
        assert_eq!(p.meta.updated.at, chrono::DateTime::UNIX_EPOCH);
        assert!(p.warnings.is_empty());
        assert_eq!(render(&p.meta, &p.body), text);
        // Null is absent too; one date present keeps it.
        let p =
            parse("---\nname: a\ndescription: b\ntype: user\ncreated:\nupdated: 2026-01-02\n---\n")
                .unwrap();
        assert!(p.meta.created.is_undated());
        assert_eq!(p.meta.updated.text, "2026-01-02");
    }

    #[test]
    fn warnings_do_not_stop_loading() {
        let p = parse("---\nname: n\ndescription: d\ntype: ops\ncreated: 2026-01-01\nupdated: 2026-01-01\ndecay: soon\n---\n").unwrap();
        assert_eq!(p.meta.kind, Kind::Other("ops".into()));
        assert_eq!(p.meta.decay, None);
        let lines: Vec<usize> = p.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, vec![4, 7]);
    }

    #[test]
    fn supersedes_and_valid_until() {
        // spec/memory-format.md#supersedes, spec/memory-format.md#valid_until
        let base =
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n";
        let p = parse(&format!(
            "{base}supersedes: [old_a, \"old_b\"]   # merged\nvalid_until: 2026-04-20\n---\n"
        ))
        .unwrap();
        assert_eq!(p.meta.supersedes, ["old_a", "old_b"]);
        assert_eq!(p.meta.valid_until.as_deref(), Some("2026-04-20"));
        assert!(p.warnings.is_empty());
        assert!(
            p.meta
                .expired(chrono::NaiveDate::from_ymd_opt(2026, 4, 21).unwrap())
        );
        assert!(
            !p.meta
                .expired(chrono::NaiveDate::from_ymd_opt(2026, 4, 20).unwrap())
        );
        // Unchanged values keep their text (comment and flow style included).
        let text = format!(
            "{base}supersedes: [old_a, \"old_b\"]   # merged\nvalid_until: 2026-04-20\n---\n"
        );
        assert_eq!(render(&p.meta, &p.body), text);
        // A single scalar is one key.
        let p = parse(&format!("{base}supersedes: old_a\n---\n")).unwrap();
        assert_eq!(p.meta.supersedes, ["old_a"]);
        // Bad values are warnings on their line, kept on rewrite, and expire nothing.
        let text = format!("{base}supersedes: [Not A Key]\nvalid_until: soon\n---\n");
        let p = parse(&text).unwrap();
        let w: Vec<(usize, &str)> = p
            .warnings
            .iter()
            .map(|w| (w.line, w.message.as_str()))
            .collect();
        assert_eq!(
            w,
            [
                (
                    7,
                    "supersedes `Not A Key` is not a memory key (a-z, 0-9, `_`, `-`); it replaces nothing"
                ),
                (
                    8,
                    "valid_until `soon` is not a date (YYYY-MM-DD); the memory does not expire"
                ),
            ]
        );
        assert!(
            !p.meta
                .expired(chrono::NaiveDate::from_ymd_opt(2030, 1, 1).unwrap())
        );
        assert_eq!(render(&p.meta, &p.body), text);
        // A nested value is an error with the line.
        check_err(
            &format!("{base}supersedes: [[a]]\n---\n"),
            "line 7: `supersedes` must be a list of memory keys",
        );
        // New values are written in memdir's order, after the other known keys.
        let mut meta = parse(&format!("{base}---\n")).unwrap().meta;
        meta.supersedes = vec!["x".into()];
        meta.valid_until = Some("2026-05-01".into());
        assert_eq!(
            render(&meta, ""),
            format!("{base}supersedes:\n- x\nvalid_until: 2026-05-01\n---\n")
        );
    }

    #[test]
    fn many_tags_load_without_rescanning_the_block() {
        let notes: String = (0..20_000).map(|i| format!("  - note {i}\n")).collect();
        let tags: String = (0..20_000).map(|i| format!("  - t{i}\n")).collect();
        let text = format!(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nnotes:\n{notes}tags:\n{tags}---\n"
        );
        for keep_layout in [false, true] {
            KEY_LINE_SCANS.with(|c| c.set(0));
            let p = parse_mode(&text, keep_layout, true).unwrap();
            assert_eq!(p.meta.tags.len(), 20_000);
            assert_eq!(
                KEY_LINE_SCANS.with(|c| c.get()),
                0,
                "keep_layout {keep_layout}"
            );
        }
        // A bad tag is still reported at its field's line, with one scan.
        let bad = text.replace("  - t7\n", "  - [x]\n");
        KEY_LINE_SCANS.with(|c| c.set(0));
        assert_eq!(
            parse_read(&bad).unwrap_err().to_string(),
            "line 20008: `tags` must be a list of text values"
        );
        assert_eq!(KEY_LINE_SCANS.with(|c| c.get()), 1);
    }
}
