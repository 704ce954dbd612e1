//! YAML frontmatter: split a memory file, parse its frontmatter, render it back.
//!
//! This is the only module that calls the YAML library (serde-saphyr), so a change of
//! YAML crate touches one file. Reading is lenient where it is safe (UTF-8 BOM, CRLF,
//! quotes, lists, colons in quoted values, unknown keys) and strict where guessing
//! would corrupt data (duplicate keys, malformed YAML, wrong field types): those are
//! errors with the file line and column. Writing quotes every value a YAML 1.1 reader
//! could misread (`no`, `12:30`, `1.10`, ...), and keeps unknown keys with their
//! original text and order. No IO, no clock.

use serde_json::{Map, Value};

use crate::memory::{Decay, Kind, Meta, Stamp};

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
    #[error("no frontmatter: the file must start with a `---` line")]
    Missing,
    #[error("frontmatter opened on line 1 is never closed with a `---` line")]
    Unclosed,
    #[error("line {line} column {column}: {message}")]
    Yaml {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("line {line}: frontmatter must be a mapping of `key: value` lines")]
    NotAMapping { line: usize },
    #[error("required field `{field}` is missing")]
    MissingField { field: &'static str },
    #[error("its values cannot be written as YAML that reads back the same")]
    NotRewritable,
    #[error("line {line}: `{field}` {problem}")]
    Field {
        field: &'static str,
        line: usize,
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
    pub line: usize,
    pub message: String,
}

/// Frontmatter keys memdir does not know, and the layout needed to rewrite the file
/// without disturbing what a person wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra {
    /// Unknown keys: name, original YAML text of the entry (key line included) when
    /// recorded, value.
    entries: Vec<(String, Option<String>, Value)>,
    /// Every top-level key in the order the file had them.
    order: Vec<String>,
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

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every top-level key in file order (known keys included).
    pub fn order(&self) -> &[String] {
        &self.order
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
            self.order.push(key.to_string());
        }
    }

    /// Removes an unknown key.
    pub fn remove(&mut self, key: &str) {
        if KNOWN.contains(&key) {
            return;
        }
        self.entries.retain(|(k, _, _)| k != key);
        self.order.retain(|k| k != key);
    }

    /// Rebuilds the read-only form (no original text) from keys and values, as the
    /// cache stores it.
    pub fn from_values(order: Vec<String>, entries: Vec<(String, Value)>) -> Extra {
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
    pub meta: Meta,
    pub body: String,
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

fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    // YAML 1.2 booleans: `no` stays the string "no"; `important: no` is an error.
    o.strict_booleans = true;
    // `0755` stays a string rather than becoming the number 755.
    o.leading_zero_numbers_as_strings = true;
    o
}

fn parse_yaml(yaml: &str, first_line: usize) -> Result<Value, FrontmatterError> {
    serde_saphyr::from_str_with_options::<Value>(yaml, yaml_options()).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line() as usize, l.column() as usize))
            .unwrap_or((1, 1));
        FrontmatterError::Yaml {
            line: line + first_line - 1,
            column,
            message: bare_message(&e.without_snippet().to_string()),
        }
    })
}

/// The library's message without its own `error: line L column C:` prefix, which we
/// replace by file-relative positions.
fn bare_message(s: &str) -> String {
    let mut s = s.lines().next().unwrap_or(s);
    s = s.strip_prefix("error: ").unwrap_or(s);
    if let Some(rest) = s.strip_prefix("line ")
        && let Some(pos) = rest.find(": ")
    {
        s = &rest[pos + 2..];
    }
    // The library adds positions relative to the YAML block and advice about its own
    // options; neither helps a person editing the file.
    if let Some(pos) = s.rfind(" at line ") {
        s = &s[..pos];
    }
    if let Some(key) = s.strip_prefix("duplicate mapping key: ") {
        let key = key.split(',').next().unwrap_or(key);
        return format!("duplicate key `{key}`");
    }
    s.to_string()
}

/// One top-level entry of the YAML block: its key, text and first line.
struct Chunk {
    key: String,
    text: String,
    line: usize,
}

/// Splits a YAML block mapping into its top-level entries, so unknown keys can be
/// written back exactly as a person wrote them. Returns the preamble (comments before
/// the first key) and the chunks, or `None` when the layout is not the plain
/// one-key-per-column-0-line shape (then values are re-serialized instead).
///
/// A chunk holding an alias (`*x`) whose anchor (`&x`) is in an earlier entry cannot
/// parse alone; it is checked by parsing the entries up to it instead, and the layout
/// is marked `linked` so [`render`] checks that its output still resolves every alias.
fn chunks(yaml: &str, first_line: usize, map: &Map<String, Value>) -> Option<Layout> {
    let keys: Vec<&String> = map.keys().collect();
    let mut preamble = String::new();
    let mut out: Vec<Chunk> = Vec::new();
    for (i, line) in yaml.split_inclusive('\n').enumerate() {
        let starts_key = line
            .chars()
            .next()
            .is_some_and(|c| !matches!(c, ' ' | '\t' | '-' | '#' | '\n'));
        if starts_key {
            let key = (*keys.get(out.len())?).clone();
            out.push(Chunk {
                key,
                text: line.to_string(),
                line: first_line + i,
            });
        } else if let Some(last) = out.last_mut() {
            last.text.push_str(line);
        } else {
            preamble.push_str(line);
        }
    }
    if out.len() != keys.len() {
        return None;
    }
    // Each chunk must parse on its own to exactly its key; anything else means the
    // split guessed wrong (a multi-line flow value, a complex key, ...).
    let mut linked = Vec::new();
    for (i, c) in out.iter().enumerate() {
        let alone = serde_saphyr::from_str_with_options::<Value>(&c.text, yaml_options());
        match alone {
            Ok(v) => {
                let m = v.as_object()?;
                if m.len() != 1 || !m.contains_key(&c.key) {
                    return None;
                }
            }
            // Probably an alias to an earlier entry's anchor: the entries up to this
            // one must parse to exactly their keys, this one to its value in the file.
            // Bounded, since each check parses everything before it.
            Err(_) if linked.len() < MAX_LINKED_CHUNKS && c.text.contains('*') => {
                linked.push(c.key.clone());
                let upto: String = out[..=i].iter().map(|c| c.text.as_str()).collect();
                let v = serde_saphyr::from_str_with_options::<Value>(&upto, yaml_options()).ok()?;
                let m = v.as_object()?;
                if m.len() != i + 1
                    || !m.keys().zip(&keys).all(|(a, b)| a == *b)
                    || m.get(&c.key) != map.get(&c.key)
                {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
    Some(Layout {
        preamble,
        chunks: out,
        linked,
    })
}

/// How many entries may hold an alias to another entry before the layout is given up
/// (each costs a parse of the entries before it).
const MAX_LINKED_CHUNKS: usize = 32;

/// The top-level entries of a YAML block with their text (see [`chunks`]).
struct Layout {
    preamble: String,
    chunks: Vec<Chunk>,
    /// Entries that refer by alias to an anchor in another entry.
    linked: Vec<String>,
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
    parse_mode(text, true)
}

/// Parses a memory file for reading only: the same result as [`parse`] except that
/// the original text of each entry is not recorded, so [`render`] would re-serialize
/// unknown keys instead of copying them. Several times faster; use [`parse`] before
/// rewriting a file.
pub fn parse_read(text: &str) -> Result<Parsed, FrontmatterError> {
    parse_mode(text, false)
}

fn parse_mode(text: &str, keep_layout: bool) -> Result<Parsed, FrontmatterError> {
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
    from_map(map, &s, keep_layout)
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
/// Fields whose value is one line of text. The three.ws runtime writes them raw
/// (`name: Runbook: deploys`) and reads every line by splitting it at the first `:`
/// and trimming; for these the two readings of one line can differ.
const TEXT_FIELDS: [&str; 8] = [
    "name",
    "description",
    "type",
    "created",
    "updated",
    "source",
    "decay",
    "valid_until",
];

/// A memory file from another tool (a `memory/0.1` blob), read as its writer meant it.
#[derive(Debug, Clone)]
pub struct Portable {
    pub parsed: Parsed,
    /// The text to store: the file as it was (with a final newline), or rewritten as
    /// YAML when a value had to be read the three.ws way.
    pub text: String,
    /// Why the file was rewritten, one sentence per value; empty when it was not.
    pub conversions: Vec<String>,
}

/// Whether memdir's own YAML writer quotes `value` (so quotes around it in a file
/// are YAML quoting, not part of the value).
fn writer_quotes(key: &str, value: &str) -> bool {
    render_entry(key, &Value::String(value.to_string())) != format!("{key}: {value}\n")
}

fn is_quoted(raw: &str) -> bool {
    raw.len() >= 2
        && ((raw.starts_with('"') && raw.ends_with('"'))
            || (raw.starts_with('\'') && raw.ends_with('\'')))
}

/// Whether the YAML value `yaml` of a one-line text field is what its writer meant,
/// given the three.ws reading `raw` of the same line: when both agree, or when the
/// quotes the runtime keeps are quoting memdir's writer would have needed.
fn yaml_meant(key: &str, yaml: &Value, raw: &str) -> bool {
    match yaml {
        Value::String(y) => y == raw || (is_quoted(raw) && writer_quotes(key, y)),
        _ => false,
    }
}

fn describe_yaml(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "nothing (null)".into(),
        Value::Object(_) => "a mapping".into(),
        Value::Array(_) => "a list".into(),
        other => format!(
            "the {} {other}",
            if other.is_boolean() {
                "boolean"
            } else {
                "number"
            }
        ),
    }
}

/// Reads a memory file from a blob the way its writer meant it (spec/cli.md#import).
///
/// A blob is the three.ws runtime's format: its writer puts values raw on `key: value`
/// lines, memdir's writer puts YAML. Each one-line text field (`name`, `description`,
/// `type`, `created`, `updated`, `source`, `decay`) is read both ways; the YAML value
/// is taken when the two agree or when the quotes the runtime would keep are quoting
/// memdir's writer needs, otherwise the runtime's reading (so `#42`, a leading `&co` or
/// `!urgent`, `1.10`, `null`, `{braces}` or an empty value stay what the runtime
/// showed). Other entries (`tags`, `important`, unknown keys, multi-line values) are
/// YAML, or the runtime's reading of their line when that line is not YAML. A file
/// read any other way than as YAML is rewritten as YAML, and that text must read back
/// to the same values; the file is refused otherwise.
pub fn parse_portable(text: &str) -> Result<Portable, FrontmatterError> {
    let norm = normalize_text(text);
    let s = split(&norm)?;
    let whole = parse(&norm);
    // One-line entries as three.ws reads them.
    let mut entries: Vec<(usize, String)> = Vec::new();
    for (i, line) in s.yaml.split_inclusive('\n').enumerate() {
        let starts_key = line
            .chars()
            .next()
            .is_some_and(|c| !matches!(c, ' ' | '\t' | '-' | '#' | '\n'));
        if starts_key {
            entries.push((s.first_line + i, line.to_string()));
        } else if let Some(last) = entries.last_mut() {
            last.1.push_str(line);
        }
    }
    let runtime_reading = |entry: &str| -> Option<(String, String)> {
        let line = entry.trim_end_matches('\n');
        if line.contains('\n') {
            return None;
        }
        let (k, v) = line.split_once(':')?;
        Some((k.trim().to_string(), v.trim().to_string()))
    };
    if let Ok(p) = &whole {
        let map = parse_yaml(s.yaml, s.first_line)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let agrees = entries.iter().all(|(_, e)| match runtime_reading(e) {
            Some((k, raw)) if TEXT_FIELDS.contains(&k.as_str()) => {
                map.get(&k).is_none_or(|y| yaml_meant(&k, y, &raw))
            }
            _ => true,
        });
        if agrees {
            let mut text = norm.into_owned();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            return Ok(Portable {
                parsed: p.clone(),
                text,
                conversions: Vec::new(),
            });
        }
    }
    let mut map = Map::new();
    let mut conversions = Vec::new();
    for (line, entry) in &entries {
        let alone = serde_saphyr::from_str_with_options::<Value>(entry, yaml_options())
            .ok()
            .and_then(|v| match v {
                Value::Object(m) if m.len() == 1 => m.into_iter().next(),
                _ => None,
            });
        match (alone, runtime_reading(entry)) {
            (Some((k, y)), Some((rk, raw))) if k == rk && TEXT_FIELDS.contains(&k.as_str()) => {
                if yaml_meant(&k, &y, &raw) {
                    map.insert(k, y);
                } else {
                    conversions.push(format!(
                        "`{k}` is {raw:?} as three.ws reads line {line} (YAML would read {})",
                        describe_yaml(&y)
                    ));
                    map.insert(k, Value::String(raw));
                }
            }
            (Some((k, y)), _) => {
                map.insert(k, y);
            }
            (None, Some((k, raw))) if !k.is_empty() => {
                conversions.push(format!(
                    "line {line} is not YAML; `{k}` is {raw:?} as three.ws reads it"
                ));
                map.insert(k, Value::String(raw));
            }
            _ => {
                return Err(match whole {
                    Err(e) => e,
                    Ok(_) => FrontmatterError::NotAMapping { line: *line },
                });
            }
        }
    }
    let parsed = from_map(map, &s, false)?;
    let text = render(&parsed.meta, &parsed.body);
    let back = parse(&text)?;
    if !same_values(&back.meta, &back.body, &parsed.meta, &parsed.body) {
        return Err(FrontmatterError::NotRewritable);
    }
    Ok(Portable {
        parsed: back,
        text,
        conversions,
    })
}

fn same_values(a: &Meta, a_body: &str, b: &Meta, b_body: &str) -> bool {
    crate::memory::content_hash(a, a_body) == crate::memory::content_hash(b, b_body)
        && a.created.text == b.created.text
        && a.updated.text == b.updated.text
}

/// A YAML flow list on one line, `[a, "b, c"]`: the three.ws runtime reads it as one
/// value of its key; YAML reads the list.
fn flow_list(items: &[String]) -> String {
    let item = |t: &String| {
        let plain = !t.is_empty()
            && t.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '_' | '.' | '-'))
            && !t.starts_with(['-', ' ', '.'])
            && !t.ends_with(' ')
            && !writer_quotes("t", t);
        if plain {
            t.clone()
        } else {
            Value::String(t.clone()).to_string()
        }
    };
    format!(
        "[{}]",
        items.iter().map(item).collect::<Vec<_>>().join(", ")
    )
}

/// The file text for a `memory/0.1` blob: frontmatter the three.ws runtime reads to
/// the same values memdir does (spec/cli.md#export). One-line text fields are written
/// raw, as the runtime writes them; tags (and any multi-line value) go on one line as
/// YAML flow, which the runtime sees as one value; the body follows a blank line with
/// no final newline, as the runtime writes it. [`parse_portable`] reads that text back
/// to the same values; when it would not (a value no text is read the same way by
/// both), the file is written as memdir stores it instead.
pub fn render_portable(meta: &Meta, body: &str) -> String {
    let text_of = |key: &str| -> Option<String> {
        match key {
            "name" => Some(one_line(&meta.name)),
            "description" => Some(one_line(&meta.description)),
            "type" => Some(meta.kind.as_str().to_string()),
            "created" => Some(meta.created.text.clone()),
            "updated" => Some(meta.updated.text.clone()),
            "source" => meta.source.as_deref().map(one_line),
            "decay" => meta.decay.map(|d| d.to_string()),
            "tags" if !meta.tags.is_empty() => Some(flow_list(&meta.tags)),
            "important" if meta.important => Some("true".into()),
            "supersedes" if !meta.supersedes.is_empty() => Some(flow_list(&meta.supersedes)),
            "valid_until" => meta.valid_until.as_deref().map(one_line),
            _ => None,
        }
    };
    let mut out = String::from("---\n");
    let mut written: Vec<&str> = Vec::new();
    for key in &meta.extra.order {
        if KNOWN.contains(&key.as_str()) {
            if let Some(v) = text_of(key) {
                out.push_str(&format!("{key}: {v}\n"));
            }
        } else if let Some((k, raw, v)) = meta.extra.entries.iter().find(|(k, _, _)| k == key) {
            match raw {
                Some(raw) if !raw.trim_end().contains('\n') => push_line(&mut out, raw),
                _ => {
                    let plain = k
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
                    let k = if plain {
                        k.clone()
                    } else {
                        Value::String(k.clone()).to_string()
                    };
                    out.push_str(&format!("{k}: {v}\n"));
                }
            }
        }
        written.push(key);
    }
    for key in KNOWN {
        if !written.contains(&key)
            && let Some(v) = text_of(key)
        {
            out.push_str(&format!("{key}: {v}\n"));
        }
    }
    out.push_str("---\n\n");
    out.push_str(crate::memory::normalize_body(body));
    let reads_back = parse_portable(&out).is_ok_and(|p| {
        same_values(&p.parsed.meta, &p.parsed.body, meta, body)
            && p.parsed.meta.extra.values().eq(meta.extra.values())
    });
    if reads_back { out } else { render(meta, body) }
}

/// The memory described by a frontmatter mapping.
fn from_map(
    map: Map<String, Value>,
    s: &Split<'_>,
    keep_layout: bool,
) -> Result<Parsed, FrontmatterError> {
    let keys: Vec<String> = map.keys().cloned().collect();
    // Parsing every entry again to keep its text costs more than the whole first
    // parse; only a rewrite needs it.
    let layout = if keep_layout {
        chunks(s.yaml, s.first_line, &map)
    } else {
        None
    };
    let line_of = |key: &str| -> usize {
        layout
            .as_ref()
            .and_then(|l| l.chunks.iter().find(|c| c.key == key).map(|c| c.line))
            .or_else(|| key_line(s.yaml, s.first_line, key))
            .unwrap_or(s.first_line)
    };
    let mut warnings = Vec::new();

    let text_field = |field: &'static str| -> Result<Option<String>, FrontmatterError> {
        match map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => scalar_text(v)
                .map(Some)
                .ok_or_else(|| FrontmatterError::Field {
                    field,
                    line: line_of(field),
                    problem: "must be text, not a list or mapping",
                }),
        }
    };
    let required = |field: &'static str| -> Result<String, FrontmatterError> {
        text_field(field)?.ok_or(FrontmatterError::MissingField { field })
    };
    let stamp = |field: &'static str| -> Result<Stamp, FrontmatterError> {
        Stamp::parse(&required(field)?).ok_or_else(|| FrontmatterError::Field {
            field,
            line: line_of(field),
            problem: "must be a date (YYYY-MM-DD) or an RFC 3339 timestamp",
        })
    };

    let name = required("name")?;
    let description = required("description")?;
    let kind = Kind::parse(required("type")?.trim());
    if let Kind::Other(t) = &kind {
        warnings.push(Warning {
            line: line_of("type"),
            message: format!(
                "unknown type `{t}` (expected user, feedback, project, reference or state); it gets no salience bonus"
            ),
        });
    }
    let created = stamp("created")?;
    let updated = stamp("updated")?;
    let source = text_field("source")?;
    let decay = match text_field("decay")? {
        None => None,
        Some(d) => match Decay::parse(&d) {
            Some(d) => Some(d),
            None => {
                warnings.push(Warning {
                    line: line_of("decay"),
                    message: format!(
                        "decay `{d}` is not `never` or `<N>d`; the default 7-day half-life applies"
                    ),
                });
                None
            }
        },
    };
    // The line is looked up (a scan of the block) only for an error: looking it up for
    // every tag made loading quadratic in the number of tags.
    let bad_tags = || FrontmatterError::Field {
        field: "tags",
        line: line_of("tags"),
        problem: "must be a list of text values",
    };
    let tags = match map.get("tags") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut tags = Vec::with_capacity(items.len());
            for item in items {
                tags.push(scalar_text(item).ok_or_else(bad_tags)?);
            }
            tags
        }
        Some(v) => vec![scalar_text(v).ok_or_else(bad_tags)?],
    };
    let important = match map.get("important") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(FrontmatterError::Field {
                field: "important",
                line: line_of("important"),
                problem: "must be true or false",
            });
        }
    };

    let bad_supersedes = || FrontmatterError::Field {
        field: "supersedes",
        line: line_of("supersedes"),
        problem: "must be a list of memory keys",
    };
    let supersedes: Vec<String> = match map.get("supersedes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut keys = Vec::with_capacity(items.len());
            for item in items {
                keys.push(scalar_text(item).ok_or_else(bad_supersedes)?);
            }
            keys
        }
        Some(v) => vec![scalar_text(v).ok_or_else(bad_supersedes)?],
    };
    if let Some(bad) = supersedes
        .iter()
        .find(|k| crate::memory::Key::parse(k).is_err())
    {
        warnings.push(Warning {
            line: line_of("supersedes"),
            message: format!(
                "supersedes `{bad}` is not a memory key (a-z, 0-9, `_`, `-`); it replaces nothing"
            ),
        });
    }
    let valid_until = text_field("valid_until")?;
    if let Some(v) = &valid_until
        && crate::memory::parse_day(v).is_none()
    {
        warnings.push(Warning {
            line: line_of("valid_until"),
            message: format!(
                "valid_until `{v}` is not a date (YYYY-MM-DD); the memory does not expire"
            ),
        });
    }

    let (preamble, chunk_texts, linked) = match layout {
        Some(l) => (
            l.preamble,
            l.chunks.into_iter().map(|c| (c.key, c.text)).collect(),
            l.linked,
        ),
        None => (String::new(), Vec::new(), Vec::new()),
    };
    let mut entries = Vec::new();
    for (k, v) in &map {
        if KNOWN.contains(&k.as_str()) {
            continue;
        }
        let raw = chunk_texts
            .iter()
            .find(|(ck, _)| ck == k)
            .map(|(_, t): &(String, String)| t.clone());
        entries.push((k.clone(), raw, v.clone()));
    }

    let mut meta = Meta {
        name,
        description,
        kind,
        created,
        updated,
        source,
        decay,
        tags,
        important,
        supersedes,
        valid_until,
        extra: Extra {
            entries,
            order: keys,
            preamble,
            known_raw: Vec::new(),
            linked,
        },
    };
    meta.extra.known_raw = chunk_texts
        .into_iter()
        .filter(|(k, _)| KNOWN.contains(&k.as_str()))
        .filter_map(|(k, raw)| render_known(&k, &meta).map(|canonical| (k, canonical, raw)))
        .collect();
    Ok(Parsed {
        meta,
        body: crate::memory::normalize_body(s.body).to_string(),
        warnings,
    })
}

#[cfg(test)]
thread_local! {
    /// How many times [`key_line`] scanned a YAML block (tests bound it).
    static KEY_LINE_SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The file line of a top-level key, found without parsing (for messages).
fn key_line(yaml: &str, first_line: usize, key: &str) -> Option<usize> {
    #[cfg(test)]
    KEY_LINE_SCANS.with(|c| c.set(c.get() + 1));
    yaml.lines()
        .position(|l| {
            l.split_once(':').is_some_and(|(k, _)| {
                !l.starts_with([' ', '\t', '-', '#']) && k.trim().trim_matches(['"', '\'']) == key
            })
        })
        .map(|i| first_line + i)
}

/// YAML text of one `key: value` entry, ending with a newline.
fn render_entry(key: &str, value: &Value) -> String {
    let mut m = Map::new();
    m.insert(key.to_string(), value.clone());
    let mut s = serde_saphyr::to_string(&Value::Object(m)).unwrap_or_else(|_| {
        // Serializing a JSON value cannot fail in practice; fall back to JSON, which is
        // valid YAML, rather than lose the value.
        format!("{key}: {value}\n")
    });
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

fn render_stamp(key: &str, stamp: &Stamp) -> String {
    // A plain date is written bare, as people write it; anything else is quoted by
    // the YAML writer.
    if Stamp::parse(&stamp.text).is_some_and(|s| s.text.len() == 10) {
        format!("{key}: {}\n", stamp.text)
    } else {
        render_entry(key, &Value::String(stamp.text.clone()))
    }
}

fn render_known(key: &str, meta: &Meta) -> Option<String> {
    let s = |v: &str| Some(render_entry(key, &Value::String(v.to_string())));
    match key {
        // A description is one line: the index shows it on one line.
        "name" => s(&one_line(&meta.name)),
        "description" => s(&one_line(&meta.description)),
        "type" => s(meta.kind.as_str()),
        "created" => Some(render_stamp(key, &meta.created)),
        "updated" => Some(render_stamp(key, &meta.updated)),
        "source" => meta.source.as_deref().and_then(s),
        "decay" => meta.decay.map(|d| format!("decay: {d}\n")),
        "tags" if !meta.tags.is_empty() => Some(render_entry(
            key,
            &Value::Array(meta.tags.iter().cloned().map(Value::String).collect()),
        )),
        "important" if meta.important => Some("important: true\n".to_string()),
        "supersedes" if !meta.supersedes.is_empty() => Some(render_entry(
            key,
            &Value::Array(meta.supersedes.iter().cloned().map(Value::String).collect()),
        )),
        "valid_until" => meta.valid_until.as_deref().map(|v| {
            // A day is written bare, as people write it; anything else is quoted.
            if crate::memory::parse_day(v).is_some() {
                format!("{key}: {}\n", v.trim())
            } else {
                render_entry(key, &Value::String(v.to_string()))
            }
        }),
        _ => None,
    }
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
}

fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Renders a memory file: frontmatter then body, ending with one newline.
///
/// Keys keep the order of `meta.extra` (the order of the file being rewritten), with
/// unknown keys written back as they were; keys the file did not have yet follow in
/// memdir's order.
pub fn render(meta: &Meta, body: &str) -> String {
    let out = render_with(meta, body, Keep::All);
    if meta.extra.linked.is_empty() {
        return out;
    }
    // An entry copied as it was may hold an alias whose anchor was in an entry that
    // changed: keep the copied text only if the result reads back to the same values
    // as writing every entry afresh; else write the entries holding aliases afresh
    // (an anchor nothing refers to is harmless); else everything.
    let fresh = render_with(meta, body, Keep::Nothing);
    let frontmatter = |text: &str| {
        split(text)
            .ok()
            .and_then(|s| parse_yaml(s.yaml, s.first_line).ok())
    };
    let want = frontmatter(&fresh);
    if want.is_some() && frontmatter(&out) == want {
        return out;
    }
    let unlinked = render_with(meta, body, Keep::Unlinked);
    if want.is_some() && frontmatter(&unlinked) == want {
        return unlinked;
    }
    fresh
}

/// Which entries [`render_with`] copies with their original text.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    All,
    /// All but those holding an alias to another entry's anchor.
    Unlinked,
    Nothing,
}

/// [`render`], copying original entry text as `keep` allows.
fn render_with(meta: &Meta, body: &str, keep: Keep) -> String {
    let keep_text = |key: &str| match keep {
        Keep::All => true,
        Keep::Unlinked => !meta.extra.linked.iter().any(|k| k == key),
        Keep::Nothing => false,
    };
    let mut out = String::from("---\n");
    if keep != Keep::Nothing {
        out.push_str(&meta.extra.preamble);
    }
    let mut written: Vec<&str> = Vec::new();
    for key in &meta.extra.order {
        if KNOWN.contains(&key.as_str()) {
            if let Some(text) = render_known(key, meta) {
                let original = meta
                    .extra
                    .known_raw
                    .iter()
                    .find(|(k, canonical, _)| k == key && *canonical == text);
                match original {
                    Some((_, _, raw)) if keep_text(key) => push_line(&mut out, raw),
                    _ => out.push_str(&text),
                }
            }
        } else if let Some((k, raw, v)) = meta.extra.entries.iter().find(|(k, _, _)| k == key) {
            match raw {
                Some(raw) if keep_text(key) => push_line(&mut out, raw),
                _ => out.push_str(&render_entry(k, v)),
            }
        }
        written.push(key);
    }
    for key in KNOWN {
        if !written.contains(&key)
            && let Some(text) = render_known(key, meta)
        {
            out.push_str(&text);
        }
    }
    out.push_str("---\n");
    let body = crate::memory::normalize_body(body);
    if !body.is_empty() {
        out.push('\n');
        out.push_str(body);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nname: Tone\ndescription: user wants direct critique\ntype: feedback\ncreated: 2026-03-22\nupdated: 2026-04-14\n---\n\nUser prefers direct critique.\n\n**Why:** corrected twice.\n";

    fn check_err(text: &str, want: &str) {
        match parse(text) {
            Ok(p) => panic!("expected error {want:?}, parsed {p:?}"),
            Err(e) => assert_eq!(e.to_string(), want, "input: {text:?}"),
        }
    }

    fn meta_of(text: &str) -> Meta {
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
    fn rewrite_keeps_unknown_keys_text_and_order() {
        let text = "---\n# my notes\nzeta: 1.10   # version\nname: Tone\nowner:\n  team: core\n  ids: [1, 2]\ndescription: d\ntype: user\ncreated: 2026-01-01T08:00:00Z\nupdated: 2026-01-01\n---\n\nbody\n";
        let p = parse(text).unwrap();
        assert_eq!(render(&p.meta, &p.body), text);
        let mut meta = p.meta.clone();
        meta.name = "no".into();
        meta.tags = vec!["yes".into()];
        let out = render(&meta, "new body");
        assert_eq!(
            out,
            "---\n# my notes\nzeta: 1.10   # version\nname: \"no\"\nowner:\n  team: core\n  ids: [1, 2]\ndescription: d\ntype: user\ncreated: 2026-01-01T08:00:00Z\nupdated: 2026-01-01\ntags:\n- \"yes\"\n---\n\nnew body\n"
        );
        assert_eq!(parse(&out).unwrap().meta.name, "no");
    }

    // spec/memory-format.md#writing: an anchor and its alias in different keys do not
    // make a body-only rewrite re-serialize the frontmatter.
    #[test]
    fn rewrite_keeps_text_when_keys_share_an_anchor() {
        let text = "---\n# my notes\nname: Tone\nversion: &v 1.10   # pinned\ndescription: d\nsame: *v\ntype: user\nowner: &o\n  team: core\nalso: *o\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\nbody\n";
        let p = parse(text).unwrap();
        assert_eq!(render(&p.meta, "body"), text);
        let out = render(&p.meta, "new body");
        assert_eq!(out, text.replace("\nbody\n", "\nnew body\n"));
        // A known key holding the alias keeps its text too while unchanged.
        let text = "---\nname: &n Tone\ndescription: *n\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nx: 1.10\n---\n\nbody\n";
        let p = parse(text).unwrap();
        assert_eq!(p.meta.description, "Tone");
        assert_eq!(render(&p.meta, "body"), text);
    }

    // Changing the key that holds the anchor must not leave the alias dangling.
    #[test]
    fn rewrite_never_leaves_an_alias_without_its_anchor() {
        let text = "---\nname: &n Tone\ndescription: d\nnick: *n\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nx: 1.10\n---\n\nbody\n";
        let p = parse(text).unwrap();
        let mut meta = p.meta.clone();
        meta.name = "Voice".into();
        let out = render(&meta, "b");
        let back = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(back.meta.name, "Voice");
        let nick: Vec<_> = back.meta.extra.iter().collect();
        assert!(
            nick.contains(&("nick", "\"Tone\"".to_string())),
            "{nick:?}\n{out}"
        );
        assert!(out.contains("x: 1.10\n"), "{out}");
    }

    // spec/memory-format.md#reading: loading is linear in the number of tags; the
    // line of a field is looked up (a scan of the block up to it) only to report a
    // problem. Looking it up for every tag was quadratic once `tags:` came after a
    // long entry (5,000 notes then 5,000 tags: 36.6e9 instructions, 0.5e9 after).
    #[test]
    fn many_tags_load_without_rescanning_the_block() {
        let notes: String = (0..20_000).map(|i| format!("  - note {i}\n")).collect();
        let tags: String = (0..20_000).map(|i| format!("  - t{i}\n")).collect();
        let text = format!(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nnotes:\n{notes}tags:\n{tags}---\n"
        );
        for keep_layout in [false, true] {
            KEY_LINE_SCANS.with(|c| c.set(0));
            let p = parse_mode(&text, keep_layout).unwrap();
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

    #[test]
    fn ambiguous_values_are_quoted() {
        for v in [
            "no", "yes", "on", "12:30", "1.10", "2024", "null", "~", "- x", "a # b", "x: y", "'q'",
            " lead", "@x", "`x`", "*bold*",
        ] {
            let mut meta = meta_of(GOOD);
            meta.name = v.to_string();
            let text = render(&meta, "b");
            let back = parse(&text).unwrap_or_else(|e| panic!("{v:?}: {e}\n{text}"));
            assert_eq!(back.meta.name, v.trim(), "{text}");
        }
    }

    /// The three.ws reader: each frontmatter line split at its first colon, trimmed.
    fn threews_read(text: &str) -> Vec<(String, String)> {
        let rest = text.strip_prefix("---\n").unwrap();
        let fm = &rest[..rest.find("\n---").unwrap()];
        fm.lines()
            .filter_map(|l| l.split_once(':'))
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    }

    fn runtime_file(name: &str, description: &str) -> String {
        format!(
            "---\nname: {name}\ndescription: {description}\ntype: user\ncreated: 2026-11-22\nupdated: 2026-11-22\n---\n\nbody"
        )
    }

    // spec/cli.md#import: each line of a blob's file is read both ways; the runtime's
    // reading wins unless the YAML one agrees or its quotes are memdir's own quoting.
    #[test]
    fn portable_reads_each_value_as_its_writer_meant() {
        for (raw, want) in [
            ("Tracking issue #42", "Tracking issue #42"),
            ("#general", "#general"),
            (
                "announcements go to #general",
                "announcements go to #general",
            ),
            ("'single quoted'", "'single quoted'"),
            ("\"double\" and it's fine", "\"double\" and it's fine"),
            ("\"Runbook: deploys\"", "Runbook: deploys"),
            ("\"no\"", "no"),
            ("Runbook: deploys", "Runbook: deploys"),
            ("1.10", "1.10"),
            ("&co partners", "&co partners"),
            ("!urgent fix", "!urgent fix"),
            ("*bold*", "*bold*"),
            ("null", "null"),
            ("~", "~"),
            ("{braces}", "{braces}"),
            ("[brackets]", "[brackets]"),
            ("", ""),
            ("Café ☕", "Café ☕"),
            ("plain", "plain"),
        ] {
            let text = runtime_file(raw, raw);
            let p = parse_portable(&text).unwrap_or_else(|e| panic!("{raw:?}: {e}"));
            assert_eq!(p.parsed.meta.name, want, "{raw:?}");
            assert_eq!(p.parsed.meta.description, want, "{raw:?}");
            // Whatever is stored loads, to the same values.
            let back = parse(&p.text).unwrap_or_else(|e| panic!("{raw:?}: {e}\n{}", p.text));
            assert_eq!(back.meta.name, want, "{raw:?}");
            assert_eq!(back.body, "body");
            let agrees = parse(&text).is_ok_and(|y| y.meta.name == want);
            assert_eq!(
                p.conversions.is_empty(),
                agrees,
                "{raw:?}: {:?}",
                p.conversions
            );
        }
        // A file both readers agree on is stored as it was, with a final newline.
        let text = runtime_file("Role", "plays on Saturdays");
        assert_eq!(parse_portable(&text).unwrap().text, format!("{text}\n"));
        // The reason names the field, both readings and the line.
        let p = parse_portable(&runtime_file("Tracking issue #42", "d")).unwrap();
        assert_eq!(
            p.conversions,
            vec![
                "`name` is \"Tracking issue #42\" as three.ws reads line 2 (YAML would read \"Tracking issue\")"
            ]
        );
    }

    // spec/cli.md#export: what the runtime reads equals what memdir reads, and tags
    // are one value of one line.
    #[test]
    fn portable_text_reads_the_same_in_both_readers() {
        let values = [
            "Runbook: deploys",
            "Tracking issue #42, see #general",
            "'quoted' words",
            "\"double\" and it's fine",
            "&co",
            "!urgent: ping @ops",
            "no",
            "1.10",
            "null",
            "",
            "Café ☕ 日本語",
        ];
        for v in values {
            let mut meta = meta_of(GOOD);
            meta.name = v.into();
            meta.description = v.into();
            meta.source = Some(format!("chat: {v} (ok)"));
            meta.tags = vec![
                "football".into(),
                "a, b".into(),
                "#x".into(),
                "no".into(),
                v.into(),
            ];
            meta.important = true;
            meta.decay = Some(Decay::Days(30));
            let text = render_portable(&meta, "line one\n\nline two\n");
            let theirs = threews_read(&text);
            let get = |k: &str| {
                theirs
                    .iter()
                    .find(|(tk, _)| tk == k)
                    .map(|(_, v)| v.as_str())
            };
            assert_eq!(get("name"), Some(v), "{text}");
            assert_eq!(get("description"), Some(v), "{text}");
            assert_eq!(
                get("source"),
                Some(format!("chat: {v} (ok)").as_str()),
                "{text}"
            );
            assert_eq!(get("decay"), Some("30d"));
            assert!(
                theirs.iter().all(|(k, _)| KNOWN.contains(&k.as_str())),
                "{theirs:?}"
            );
            assert!(text.ends_with("---\n\nline one\n\nline two"), "{text}");
            let back = parse_portable(&text).unwrap();
            assert_eq!(back.parsed.meta.name, v);
            assert_eq!(back.parsed.meta.tags, meta.tags, "{text}");
            assert!(back.parsed.meta.important);
            assert_eq!(back.parsed.meta.source, meta.source);
            assert_eq!(back.parsed.body, "line one\n\nline two");
        }
        // Unknown keys and multi-line values go on one line each.
        let p = parse(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nowner:\n  team: core\n  ids: [1, 2]\nzeta: 1.10\ntags:\n- a\n---\n\nb\n",
        )
        .unwrap();
        let text = render_portable(&p.meta, &p.body);
        assert!(
            text.contains("\nowner: {\"team\":\"core\",\"ids\":[1,2]}\nzeta: 1.10\ntags: [a]\n"),
            "{text}"
        );
        let back = parse_portable(&text).unwrap().parsed.meta;
        assert!(back.extra.values().eq(p.meta.extra.values()));
    }

    #[test]
    fn newlines_in_name_and_description_become_spaces() {
        let mut meta = meta_of(GOOD);
        meta.description = "one\ntwo\n---\nthree".into();
        let back = parse(&render(&meta, "")).unwrap();
        assert_eq!(back.meta.description, "one two --- three");
        assert_eq!(back.body, "");
    }
}
