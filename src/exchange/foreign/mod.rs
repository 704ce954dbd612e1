//! The formats of other memory tools that `memdir import` reads and `memdir export`
//! writes (spec/import-formats.md): a Claude Code memory folder, the MCP reference
//! memory server's `memory.jsonl`, and a basic-memory project.
//!
//! Owns format detection and the conversion of each format into the same validated
//! [`Incoming`] a blob decodes to, so one import path (plan, secrets, dry run,
//! strategies) serves them all. Every input is read as a whole before anything is
//! decided: a malformed line refuses the input, naming its file and line. Pure code:
//! the front end reads the files, the engine writes; no IO, no clock (`today` is
//! passed in).

pub mod basic_memory;
pub mod claude_code;
pub mod mcp_memory;

use std::collections::HashSet;

use chrono::NaiveDate;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::exchange::blob::{self, Incoming, IncomingFile};
use crate::memory::frontmatter::{self, Extra, FrontmatterError};
use crate::memory::{Key, Kind, Meta, Stamp};

/// An input format of `memdir import`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The portable `memory/0.1` blob (memdir, three.ws).
    Blob,
    /// A Claude Code memory folder: `*.md` files with `name`/`description`/`type`.
    ClaudeCode,
    /// The `memory.jsonl` of @modelcontextprotocol/server-memory.
    McpMemory,
    /// A basic-memory project folder.
    BasicMemory,
}

impl Format {
    /// Every format, in the order `--from` lists them.
    pub const ALL: [Format; 4] = [
        Format::Blob,
        Format::ClaudeCode,
        Format::McpMemory,
        Format::BasicMemory,
    ];

    /// Parses a `--from` value.
    pub fn parse(s: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The `--from` name of the format.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Blob => "blob",
            Format::ClaudeCode => "claude-code",
            Format::McpMemory => "mcp-memory",
            Format::BasicMemory => "basic-memory",
        }
    }

    /// Whether the format is a folder (else one file).
    pub fn is_folder(self) -> bool {
        matches!(self, Format::ClaudeCode | Format::BasicMemory)
    }
}

/// One Markdown file of a folder being imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The path relative to the folder, `/`-separated.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// What is being imported, as the front end read it.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// One file (`name` is how errors call it).
    File {
        /// How errors call it.
        name: &'a str,
        /// Its bytes.
        bytes: &'a [u8],
    },
    /// A folder's `*.md` files, in path order.
    Folder {
        /// How errors call it.
        name: &'a str,
        /// Its Markdown files.
        files: &'a [SourceFile],
    },
}

impl Source<'_> {
    /// How errors and the `imported` event call the input.
    pub fn name(&self) -> &str {
        match self {
            Source::File { name, .. } | Source::Folder { name, .. } => name,
        }
    }
}

/// Why a foreign input was refused as a whole; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForeignError {
    /// A line that cannot be read; `file` is the input file or the folder's file.
    #[error("{file}:{line}: {message}")]
    Line {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A file that is not UTF-8 text.
    #[error("{file}: not valid UTF-8 text")]
    NotUtf8 {
        /// The file.
        file: String,
    },
    /// An input whose format cannot be told.
    #[error("cannot tell the format of {name}: {why}")]
    Unknown {
        /// The input.
        name: String,
        /// Why it matches no format.
        why: &'static str,
    },
    /// An input that matches two formats.
    #[error("{name} could be {first} ({first_file}) or {second} ({second_file})")]
    Ambiguous {
        /// The input.
        name: String,
        /// The first format it matches.
        first: &'static str,
        /// The file that makes it look like the first.
        first_file: String,
        /// The second format it matches.
        second: &'static str,
        /// The file that makes it look like the second.
        second_file: String,
    },
    /// An input with more items than the limit.
    #[error("{name} has {count} {what}, over the limit of {limit}")]
    TooMuch {
        /// The input.
        name: String,
        /// What there are too many of.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// An input that is not of the shape its format reads.
    #[error("{format} reads {wants}, and {name} is not one")]
    Shape {
        /// The format.
        format: &'static str,
        /// What the format reads.
        wants: &'static str,
        /// The input.
        name: String,
    },
}

impl ForeignError {
    /// A hint on what to do about the error.
    pub fn hint(&self) -> Option<String> {
        match self {
            ForeignError::Unknown { .. } | ForeignError::Ambiguous { .. } => Some(
                "name the format: --from blob|claude-code|mcp-memory|basic-memory (see `memdir import --help`)".into(),
            ),
            ForeignError::Line { .. } | ForeignError::NotUtf8 { .. } => {
                Some("fix that line (or remove the file) and import again; nothing was written".into())
            }
            ForeignError::Shape { .. } | ForeignError::TooMuch { .. } => None,
        }
    }
}

/// Tells the format of an input from its content (spec/import-formats.md#detection).
pub fn detect(source: &Source) -> Result<Format, ForeignError> {
    match *source {
        Source::File { name, bytes } => detect_file(name, bytes),
        Source::Folder { name, files } => detect_folder(name, files),
    }
}

fn detect_file(name: &str, bytes: &[u8]) -> Result<Format, ForeignError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ForeignError::NotUtf8 {
        file: name.to_string(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) {
        if m.contains_key("version") || m.contains_key("files") {
            return Ok(Format::Blob);
        }
        if mcp_memory::is_record(&m) {
            return Ok(Format::McpMemory);
        }
    }
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        None => Err(ForeignError::Unknown {
            name: name.to_string(),
            why: "it is empty",
        }),
        Some(line) => match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) if mcp_memory::is_record(&m) => Ok(Format::McpMemory),
            _ => Err(ForeignError::Unknown {
                name: name.to_string(),
                why: "it is neither a memory/0.1 blob (a JSON object with \"version\") nor an MCP memory.jsonl (its first line is not an entity or relation)",
            }),
        },
    }
}

fn detect_folder(name: &str, files: &[SourceFile]) -> Result<Format, ForeignError> {
    let mut claude: Option<&str> = None;
    let mut basic: Option<&str> = None;
    for f in files {
        if f.path == crate::memory::layout::INDEX_FILE {
            continue;
        }
        match frontmatter::parse_map(&f.text) {
            Ok(Some((m, body))) => {
                if m.contains_key("title") || m.contains_key("permalink") {
                    basic.get_or_insert(&f.path);
                } else if m.contains_key("name") && m.contains_key("description") {
                    claude.get_or_insert(&f.path);
                } else if basic_memory::has_semantic_lines(&body) {
                    basic.get_or_insert(&f.path);
                }
            }
            Ok(None) if basic_memory::has_semantic_lines(&f.text) => {
                basic.get_or_insert(&f.path);
            }
            _ => {}
        }
    }
    match (claude, basic) {
        (Some(_), None) => Ok(Format::ClaudeCode),
        (None, Some(_)) => Ok(Format::BasicMemory),
        (Some(c), Some(b)) => Err(ForeignError::Ambiguous {
            name: name.to_string(),
            first: Format::ClaudeCode.as_str(),
            first_file: c.to_string(),
            second: Format::BasicMemory.as_str(),
            second_file: b.to_string(),
        }),
        (None, None) => Err(ForeignError::Unknown {
            name: name.to_string(),
            why: if files.is_empty() {
                "the folder has no `*.md` files"
            } else {
                "no `*.md` file has Claude Code frontmatter (name, description) or basic-memory frontmatter (title, permalink) or observation/relation lines"
            },
        }),
    }
}

/// Converts a foreign input into validated incoming memories. `today` dates the
/// memories whose input has no dates. A blob is decoded by [`blob::decode`], not here.
pub fn decode(format: Format, source: &Source, today: NaiveDate) -> Result<Incoming, ForeignError> {
    let shape = |wants| ForeignError::Shape {
        format: format.as_str(),
        wants,
        name: source.name().to_string(),
    };
    match (format, *source) {
        (Format::McpMemory, Source::File { name, bytes }) => {
            let text = std::str::from_utf8(bytes).map_err(|_| ForeignError::NotUtf8 {
                file: name.to_string(),
            })?;
            mcp_memory::decode(name, text, today)
        }
        (Format::ClaudeCode, Source::Folder { name, files }) => {
            claude_code::decode(files, today).map_err(|e| in_folder(name, e))
        }
        (Format::BasicMemory, Source::Folder { name, files }) => {
            basic_memory::decode(files, today).map_err(|e| in_folder(name, e))
        }
        (Format::McpMemory | Format::Blob, Source::Folder { .. }) => Err(shape("one file")),
        (_, _) => Err(shape("a folder")),
    }
}

/// An error about a folder's file, naming the file by its path from the working
/// directory rather than from the folder.
fn in_folder(folder: &str, e: ForeignError) -> ForeignError {
    match e {
        ForeignError::Line {
            file,
            line,
            message,
        } => ForeignError::Line {
            file: format!("{}/{file}", folder.trim_end_matches('/')),
            line,
            message,
        },
        other => other,
    }
}

/// A frontmatter error at a line of `file`, its message without the line the error
/// already names.
pub fn frontmatter_error(file: &str, e: FrontmatterError) -> ForeignError {
    let line = e.line().unwrap_or(1);
    let message = match &e {
        FrontmatterError::Yaml {
            column, message, ..
        } => format!("column {column}: {message}"),
        FrontmatterError::NotAMapping { .. } => {
            "frontmatter must be a mapping of `key: value` lines".into()
        }
        FrontmatterError::Field { field, problem, .. } => format!("`{field}` {problem}"),
        other => other.to_string(),
    };
    ForeignError::Line {
        file: file.to_string(),
        line,
        message,
    }
}

/// The memdir type of a foreign entity type: a person is `user` (memdir's type for
/// facts about people), a project `project`, anything else `reference`
/// (spec/import-formats.md#types).
pub fn kind_for(entity_type: &str) -> Kind {
    match entity_type.trim().to_lowercase().as_str() {
        "person" | "people" | "human" | "user" => Kind::User,
        "project" => Kind::Project,
        _ => Kind::Reference,
    }
}

/// A relation name as spec/memory-format.md#links writes it: snake_case (`worksAt`, `works at` and
/// `Works-At` become `works_at`); `None` when nothing is left.
pub fn rel_name(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.trim().chars() {
        if c.is_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        for l in c.to_lowercase() {
            if l.is_alphanumeric() {
                out.push(l);
            } else if !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    let out = out.trim_matches('_').to_string();
    (!out.is_empty()).then_some(out)
}

/// A typed link line `- rel:: [[target]]` with an optional ` (context)` after it
/// (spec/memory-format.md#links): its relation and target.
pub fn link_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_end().strip_prefix("- ")?;
    let (rel, rest) = rest.split_once(":: [[")?;
    if rel.is_empty()
        || !rel
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let (target, after) = rest.split_once("]]")?;
    if target.is_empty() || !(after.is_empty() || after.starts_with(" (")) {
        return None;
    }
    Some((rel, target))
}

/// Keys for imported items, in input order: a name that is a memdir key as it is keeps
/// it (reserved first, so a mapped name never takes it); any other is made safe the way
/// blob keys are ([`blob::safe_key`]); a name with no letter or digit memdir can keep
/// becomes `<fallback>_<8 hex digits of its SHA-256>`. The second value says why a key
/// differs from its name.
pub fn keys_for(names: &[&str], fallback: &str) -> Vec<(Key, Option<String>)> {
    let mut taken: HashSet<String> = names
        .iter()
        .filter(|n| Key::parse(n).is_ok_and(|k| k.as_str() == **n))
        .map(|n| n.to_string())
        .collect();
    let mut reserved_used: HashSet<&str> = HashSet::new();
    names
        .iter()
        .map(|n| {
            if let Ok(k) = Key::parse(n)
                && k.as_str() == *n
                && reserved_used.insert(n)
            {
                return (k, None);
            }
            let key = blob::safe_key(n, &mut taken).unwrap_or_else(|| {
                let digest = Sha256::digest(n.as_bytes());
                let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
                let base = format!("{fallback}_{hex}");
                let mut candidate = base.clone();
                let mut i = 2;
                while taken.contains(&candidate) {
                    candidate = format!("{base}_{i}");
                    i += 1;
                }
                taken.insert(candidate.clone());
                Key::from_file_stem(&candidate)
            });
            let why = format!("`{n}` is not a memdir key; imported as `{key}`");
            (key, Some(why))
        })
        .collect()
}

/// What a foreign item becomes: the parts of its memory file.
pub struct Parts<'a> {
    /// The memory's key.
    pub key: Key,
    /// Its name.
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its type.
    pub kind: Kind,
    /// When it was created.
    pub created: Stamp,
    /// When it last changed.
    pub updated: Stamp,
    /// The `source` it is written with (it names the format it came from).
    pub source: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Unknown frontmatter keys to keep (`entity_type`, `permalink`, ...), in order.
    pub extra: Vec<(String, Value)>,
    /// Its body.
    pub body: String,
}

/// Renders a draft as memdir writes a memory and reads it back, so what is imported
/// is exactly what a later load sees.
pub fn memory_file(d: Parts) -> Result<IncomingFile, FrontmatterError> {
    let one_line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut order: Vec<String> = [
        "name",
        "description",
        "type",
        "created",
        "updated",
        "source",
        "tags",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    order.extend(d.extra.iter().map(|(k, _)| k.clone()));
    let meta = Meta {
        name: one_line(d.name),
        description: one_line(d.description),
        kind: d.kind,
        created: d.created,
        updated: d.updated,
        source: Some(d.source),
        decay: None,
        tags: d.tags,
        important: false,
        supersedes: Vec::new(),
        valid_until: None,
        extra: Extra::from_values(order.into(), d.extra),
    };
    let text = frontmatter::render(&meta, &d.body);
    let parsed = frontmatter::parse(&text)?;
    Ok(IncomingFile {
        key: d.key,
        text,
        parsed,
    })
}

/// The stamp of `today`.
pub fn today_stamp(today: NaiveDate) -> Stamp {
    Stamp::from_date(today)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_rel(input: &str, want: Option<&str>) {
        assert_eq!(rel_name(input).as_deref(), want, "{input}");
    }

    #[test]
    fn relation_names_are_snake_case() {
        check_rel("works_at", Some("works_at"));
        check_rel("worksAt", Some("works_at"));
        check_rel("works at", Some("works_at"));
        check_rel("Works-At", Some("works_at"));
        check_rel("travaille_à", Some("travaille_à"));
        check_rel("  ", None);
        check_rel("->", None);
    }

    fn check_link(input: &str, want: Option<(&str, &str)>) {
        assert_eq!(link_line(input), want, "{input}");
    }

    // spec/memory-format.md#links: `- rel:: [[key]]`, optional ` (context)`.
    #[test]
    fn link_lines() {
        check_link("- works_at:: [[acme]]", Some(("works_at", "acme")));
        check_link(
            "- knows:: [[Zoë Müller]] (met in 2024)",
            Some(("knows", "Zoë Müller")),
        );
        check_link("- works at:: [[acme]]", None);
        check_link("- note:: plain fact", None);
        check_link("- [[acme]]", None);
        check_link("- rel:: [[acme]] trailing", None);
        check_link("- rel:: [[]]", None);
    }

    #[test]
    fn keys_are_deterministic_and_collisions_numbered() {
        let names = ["Alice", "alice", "Zoë Müller", "東京", "東京", "user_role"];
        let keys: Vec<String> = keys_for(&names, "entity")
            .into_iter()
            .map(|(k, _)| k.to_string())
            .collect();
        // A name that is a key as it is keeps it; the other takes the next suffix.
        assert_eq!(keys[0], "alice_2");
        assert_eq!(keys[1], "alice");
        assert_eq!(keys[2], "zoe_muller");
        assert!(keys[3].starts_with("entity_") && keys[3].len() == "entity_".len() + 8);
        assert_eq!(keys[4], format!("{}_2", keys[3]));
        assert_eq!(keys[5], "user_role");
        assert_eq!(keys_for(&names, "entity"), keys_for(&names, "entity"));
    }

    #[test]
    fn kinds() {
        assert_eq!(kind_for("person"), Kind::User);
        assert_eq!(kind_for("Person"), Kind::User);
        assert_eq!(kind_for("project"), Kind::Project);
        assert_eq!(kind_for("organization"), Kind::Reference);
        assert_eq!(kind_for("note"), Kind::Reference);
    }

    #[test]
    fn detection() {
        let file = |t: &str| {
            detect(&Source::File {
                name: "x",
                bytes: t.as_bytes(),
            })
        };
        assert_eq!(
            file(r#"{"version":"memory/0.1","files":{}}"#),
            Ok(Format::Blob)
        );
        assert_eq!(
            file(
                "{\"type\":\"entity\",\"name\":\"a\",\"entityType\":\"t\",\"observations\":[]}\n{\"type\":\"relation\",\"from\":\"a\",\"to\":\"b\",\"relationType\":\"r\"}\n"
            ),
            Ok(Format::McpMemory)
        );
        assert!(matches!(file(""), Err(ForeignError::Unknown { .. })));
        assert!(matches!(file("hello"), Err(ForeignError::Unknown { .. })));
        let folder = |files: &[(&str, &str)]| {
            let files: Vec<SourceFile> = files
                .iter()
                .map(|(p, t)| SourceFile {
                    path: p.to_string(),
                    text: t.to_string(),
                })
                .collect();
            detect(&Source::Folder {
                name: "d",
                files: &files,
            })
        };
        let cc = "---\nname: n\ndescription: d\ntype: user\n---\n\nb\n";
        let bm = "---\ntitle: T\npermalink: t\n---\n\n- [fact] x\n";
        assert_eq!(folder(&[("a.md", cc)]), Ok(Format::ClaudeCode));
        assert_eq!(folder(&[("a.md", bm)]), Ok(Format::BasicMemory));
        assert_eq!(
            folder(&[("a.md", "# T\n\n- relates_to [[U]]\n")]),
            Ok(Format::BasicMemory)
        );
        assert!(matches!(
            folder(&[("a.md", cc), ("b.md", bm)]),
            Err(ForeignError::Ambiguous { .. })
        ));
        assert!(matches!(
            folder(&[("a.md", "just text")]),
            Err(ForeignError::Unknown { .. })
        ));
    }
}
