//! The portable `memory/0.1` blob, compatible with the three.ws runtime (spec/cli.md#import).
//!
//! `{"version":"memory/0.1","index":"…","files":{"user_role.md":"---\n…"},"timeline":[…]}`
//!
//! Decoding validates the whole blob before anything is written: a file name that
//! could address a path outside the directory, or a blob over the size bounds,
//! refuses the blob as a whole (a key three.ws allows and memdir does not is mapped); a memory with malformed
//! frontmatter or a timeline entry without `ts`/`type` is reported and skipped.
//! Pure code: bytes in, values out.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::memory::Key;
use crate::memory::frontmatter::{self, Parsed};
use crate::memory::timeline::{self, Event};

/// The version string of the format.
pub const VERSION: &str = "memory/0.1";
/// Largest blob accepted, in bytes.
pub const MAX_BLOB_BYTES: usize = 256 * 1024 * 1024;
/// Largest memory file accepted, in bytes (the same bound as for files on disk).
pub const MAX_FILE_BYTES: usize = crate::memory::layout::MAX_MEMORY_FILE as usize;
/// Most files in one blob.
pub const MAX_FILES: usize = 100_000;
/// Most timeline events in one blob.
pub const MAX_EVENTS: usize = 1_000_000;

/// Why a blob was refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// The blob is over the size limit.
    #[error("the blob is {size} bytes, over the limit of {MAX_BLOB_BYTES}")]
    TooLarge {
        /// Its size in bytes.
        size: usize,
    },
    /// The blob is not valid JSON.
    #[error("the blob is not valid JSON: {0}")]
    Json(String),
    /// The blob is not a JSON object.
    #[error("the blob is not a JSON object")]
    NotAnObject,
    /// The blob's `version` is not `memory/0.1`.
    #[error("unsupported blob version {0:?} (expected \"memory/0.1\")")]
    Version(String),
    /// A files field that is not an object of file name to text.
    #[error("`{0}` must be a JSON object of file name to file text")]
    FilesShape(&'static str),
    /// `timeline` is not an array.
    #[error("`timeline` must be a JSON array of events")]
    TimelineShape,
    /// A file name that could escape the directory or is not a memory file name.
    #[error("unsafe file name {name:?} in the blob: {why}")]
    UnsafeName {
        /// The name.
        name: String,
        /// Why it is unsafe.
        why: &'static str,
    },
    /// A file whose content is not text.
    #[error("file {name:?} in the blob is not text")]
    NotText {
        /// The file's name.
        name: String,
    },
    /// A file over the size limit of one file.
    #[error("file {name:?} in the blob is {size} bytes, over the limit of {MAX_FILE_BYTES}")]
    FileTooLarge {
        /// The file's name.
        name: String,
        /// Its size in bytes.
        size: usize,
    },
    /// More files or events than the limit.
    #[error("the blob has {count} {what}, over the limit of {limit}")]
    TooMany {
        /// What there are too many of.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The limit.
        limit: usize,
    },
}

/// A memory file from a blob that passed validation.
#[derive(Debug, Clone)]
pub struct IncomingFile {
    /// The memory's key (its file name without `.md`).
    pub key: Key,
    /// The text to write: the blob's (with a final newline), or its YAML rewrite.
    pub text: String,
    /// The text read.
    pub parsed: Parsed,
}

/// Something in the blob that was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// File name, or `timeline[N]`.
    pub item: String,
    /// Why it was skipped.
    pub reason: String,
}

/// A file from the blob that was rewritten as YAML, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Converted {
    /// The file's name.
    pub item: String,
    /// Why it was rewritten.
    pub reason: String,
}

/// A decoded, validated blob.
#[derive(Debug, Clone, Default)]
pub struct Incoming {
    /// The memory files.
    pub files: Vec<IncomingFile>,
    /// The timeline events.
    pub events: Vec<Event>,
    /// What was skipped, and why.
    pub skipped: Vec<Skipped>,
    /// Files with a value read the three.ws way rather than as YAML; they are
    /// imported rewritten as YAML (spec/cli.md#import).
    pub converted: Vec<Converted>,
    /// Links of a foreign import whose target is not among the imported memories,
    /// kept as written (spec/import-formats.md); always empty for a blob.
    pub unresolved: Vec<Skipped>,
}

/// Checks a file name from a blob: a plain `*.md` name, nothing that could address a
/// path outside the directory.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty name");
    }
    if name.contains('/') || name.contains('\\') {
        return Err("contains a path separator");
    }
    if name.contains('\0') {
        return Err("contains NUL");
    }
    if name.contains("..") {
        return Err("contains `..`");
    }
    if name.starts_with('.') {
        return Err("is a dot name");
    }
    if name.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    if !name.ends_with(".md") || name.len() <= 3 {
        return Err("is not a `*.md` file name");
    }
    Ok(())
}

/// A memdir key for a three.ws file stem memdir does not accept as a key
/// (`UserProfile`, `user.name`, `café_notes`, `notes/today`): lower case, common Latin
/// accents folded, every other character `_`, runs of `_` collapsed, at most
/// [`crate::memory::MAX_KEY_LEN`] characters, `_2`, `_3`, ... on a clash with a key in
/// `taken` (which it joins). `None` when nothing is left.
pub fn safe_key(stem: &str, taken: &mut std::collections::HashSet<String>) -> Option<Key> {
    let fold = |c: char| -> char {
        match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
            'ç' => 'c',
            'è' | 'é' | 'ê' | 'ë' => 'e',
            'ì' | 'í' | 'î' | 'ï' => 'i',
            'ñ' => 'n',
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => 'o',
            'ù' | 'ú' | 'û' | 'ü' => 'u',
            'ý' | 'ÿ' => 'y',
            c if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' => c,
            _ => '_',
        }
    };
    let mut out = String::new();
    for c in stem.chars().flat_map(char::to_lowercase).map(fold) {
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let base: String = out
        .trim_matches(['_', '-'])
        .chars()
        .take(crate::memory::MAX_KEY_LEN - 4)
        .collect();
    if base.is_empty() {
        return None;
    }
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    let key = Key::parse(&candidate).ok()?;
    taken.insert(candidate);
    Some(key)
}

/// Decodes and validates a blob.
pub fn decode(bytes: &[u8]) -> Result<Incoming, BlobError> {
    if bytes.len() > MAX_BLOB_BYTES {
        return Err(BlobError::TooLarge { size: bytes.len() });
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|e| BlobError::Json(e.to_string()))?;
    let Value::Object(m) = v else {
        return Err(BlobError::NotAnObject);
    };
    check_version(&m)?;
    let files = match m.get("files") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(f)) => f.clone(),
        Some(_) => return Err(BlobError::FilesShape("files")),
    };
    if files.len() > MAX_FILES {
        return Err(BlobError::TooMany {
            what: "files",
            count: files.len(),
            limit: MAX_FILES,
        });
    }
    check_files(&files)?;
    let events_json = match m.get("timeline") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(BlobError::TimelineShape),
    };
    if events_json.len() > MAX_EVENTS {
        return Err(BlobError::TooMany {
            what: "timeline events",
            count: events_json.len(),
            limit: MAX_EVENTS,
        });
    }

    let mut out = Incoming::default();
    read_files(files, &mut out);
    for (i, e) in events_json.into_iter().enumerate() {
        match timeline::parse_line(&e.to_string()) {
            Ok(ev) => out.events.push(ev),
            Err(err) => out.skipped.push(Skipped {
                item: format!("timeline[{i}]"),
                reason: err.to_string(),
            }),
        }
    }
    Ok(out)
}

/// The version check: `"version"` must be `memory/0.1`.
fn check_version(m: &Map<String, Value>) -> Result<(), BlobError> {
    match m.get("version") {
        Some(Value::String(s)) if s == VERSION => Ok(()),
        Some(other) => Err(BlobError::Version(
            other
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| other.to_string()),
        )),
        None => Err(BlobError::Version(String::new())),
    }
}

/// First pass: every name and size, so that one bad entry refuses the whole blob
/// before any work is done on the others. A name that could address a path outside
/// the directory (`..`, `\`, NUL, a dot name, a control character, not `*.md`)
/// refuses the blob (spec/cli.md#import); a `/` alone is only a key three.ws allows
/// and memdir does not, mapped in [`read_files`].
fn check_files(files: &Map<String, Value>) -> Result<(), BlobError> {
    for (name, text) in files {
        if name != crate::memory::layout::INDEX_FILE
            && let Err(why) = check_name(&name.replace('/', "_"))
        {
            return Err(BlobError::UnsafeName {
                name: name.clone(),
                why,
            });
        }
        let Value::String(text) = text else {
            return Err(BlobError::NotText { name: name.clone() });
        };
        if text.len() > MAX_FILE_BYTES {
            return Err(BlobError::FileTooLarge {
                name: name.clone(),
                size: text.len(),
            });
        }
    }
    Ok(())
}

/// Second pass over the checked files: each becomes an incoming memory under its
/// key (mapped to a memdir key where it is not one), or a skip.
fn read_files(files: Map<String, Value>, out: &mut Incoming) {
    // Keys that are memdir keys as they are, reserved before any other is mapped.
    let mut taken: std::collections::HashSet<String> = files
        .keys()
        .filter_map(|n| n.strip_suffix(".md"))
        .filter(|stem| Key::parse(stem).is_ok_and(|k| k.as_str() == *stem))
        .map(str::to_string)
        .collect();
    for (name, text) in files {
        let Value::String(text) = text else { continue };
        if name == crate::memory::layout::INDEX_FILE {
            // The index is always rebuilt, never imported.
            continue;
        }
        let stem = &name[..name.len() - 3];
        let mut mapped = None;
        let key = match Key::parse(stem) {
            Ok(k) if k.as_str() == stem => k,
            _ => match safe_key(stem, &mut taken) {
                Some(k) => {
                    mapped = Some(format!(
                        "`{stem}` is not a memdir key (a-z, 0-9, `_`, `-`); imported as `{k}`"
                    ));
                    k
                }
                None => {
                    out.skipped.push(Skipped {
                        item: name.clone(),
                        reason: "the key has no letter or digit memdir can keep".into(),
                    });
                    continue;
                }
            },
        };
        match frontmatter::parse_portable(&text) {
            Ok(p) => {
                let mut reasons: Vec<String> = mapped.into_iter().collect();
                if !p.conversions.is_empty() {
                    reasons.push(format!("{}; stored as YAML", p.conversions.join("; ")));
                }
                if !reasons.is_empty() {
                    out.converted.push(Converted {
                        item: name.clone(),
                        reason: reasons.join("; "),
                    });
                }
                out.files.push(IncomingFile {
                    key,
                    text: p.text,
                    parsed: p.parsed,
                });
            }
            Err(e) => out.skipped.push(Skipped {
                item: name.clone(),
                reason: format!("malformed frontmatter: {e}"),
            }),
        }
    }
}

/// Encodes a blob: files in name order, events as given (time order).
pub fn encode(index: &str, files: &[(String, String)], events: &[Event]) -> String {
    let mut f = Map::new();
    for (name, text) in files {
        f.insert(name.clone(), Value::String(text.clone()));
    }
    let timeline: Vec<Value> = events
        .iter()
        .map(|e| serde_json::from_str(&e.encode()).unwrap_or(Value::Null))
        .collect();
    let mut m = Map::new();
    m.insert("version".into(), Value::String(VERSION.into()));
    m.insert("index".into(), Value::String(index.into()));
    m.insert("files".into(), Value::Object(f));
    m.insert("timeline".into(), Value::Array(timeline));
    let mut s = Value::Object(m).to_string();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(files: &str) -> Vec<u8> {
        format!(r#"{{"version":"memory/0.1","index":"","files":{files},"timeline":[]}}"#)
            .into_bytes()
    }

    // spec/cli.md#import: a name that could address a path outside the directory
    // refuses the whole blob (nothing is written).
    #[test]
    fn unsafe_names_refuse_the_blob() {
        let good = "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\nb";
        for name in [
            "../../etc/passwd",
            "a\\\\b.md",
            ".hidden.md",
            "x..md",
            "a\\u0000.md",
            "notes.txt",
            ".md",
            "",
        ] {
            let b = blob(&format!(
                r#"{{"ok.md":{},"{name}":"y"}}"#,
                Value::String(good.into())
            ));
            match decode(&b) {
                Err(BlobError::UnsafeName { .. }) => {}
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    // spec/cli.md#import: keys the runtime allows and memdir does not are mapped to
    // safe keys and reported; clashes get a suffix.
    #[test]
    fn runtime_keys_are_mapped_to_safe_keys() {
        let good = Value::String("---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\nb".into());
        let names = [
            "UserProfile.md",
            "user.name.md",
            "café_notes.md",
            "notes/today.md",
            "user_name.md",
            "User Name.md",
            "☕.md",
        ];
        let files: Map<String, Value> = names
            .iter()
            .map(|n| (n.to_string(), good.clone()))
            .collect();
        let b = serde_json::json!({"version": "memory/0.1", "files": files}).to_string();
        let inc = decode(b.as_bytes()).unwrap();
        let keys: Vec<&str> = inc.files.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "userprofile",
                "user_name_2",
                "cafe_notes",
                "notes_today",
                "user_name",
                "user_name_3"
            ]
        );
        assert_eq!(inc.converted.len(), 5);
        assert_eq!(
            inc.converted[0].reason,
            "`UserProfile` is not a memdir key (a-z, 0-9, `_`, `-`); imported as `userprofile`"
        );
        assert_eq!(inc.skipped.len(), 1);
        assert_eq!(inc.skipped[0].item, "☕.md");
    }

    #[test]
    fn shape_errors() {
        assert!(matches!(decode(b"[]"), Err(BlobError::NotAnObject)));
        assert!(matches!(decode(b"{"), Err(BlobError::Json(_))));
        assert!(matches!(
            decode(br#"{"version":"memory/9"}"#),
            Err(BlobError::Version(_))
        ));
        assert!(matches!(
            decode(br#"{"version":"memory/0.1","files":[]}"#),
            Err(BlobError::FilesShape(_))
        ));
        assert!(matches!(
            decode(br#"{"version":"memory/0.1","files":{"a.md":3}}"#),
            Err(BlobError::NotText { .. })
        ));
        assert!(matches!(
            decode(br#"{"version":"memory/0.1","timeline":{}}"#),
            Err(BlobError::TimelineShape)
        ));
    }

    #[test]
    fn malformed_memories_and_events_are_skipped() {
        let b = br#"{"version":"memory/0.1","files":{"good.md":"---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\nb","bad.md":"no frontmatter","Bad Name.md":"x"},"timeline":[{"ts":"2026-01-01T00:00:00Z","type":"a"},{"type":"no ts"},7]}"#;
        let inc = decode(b).unwrap();
        assert_eq!(inc.files.len(), 1);
        assert_eq!(inc.events.len(), 1);
        let items: Vec<&str> = inc.skipped.iter().map(|s| s.item.as_str()).collect();
        assert_eq!(
            items,
            vec!["bad.md", "Bad Name.md", "timeline[1]", "timeline[2]"]
        );
    }

    // spec/cli.md#import: a value YAML would cut or drop is read as the runtime reads
    // it, and a value memdir could not load is stored quoted; nothing is refused.
    #[test]
    fn threews_values_keep_their_meaning_and_always_load() {
        let file = |n: &str| {
            format!(
                "---\nname: {n}\ndescription: d\ntype: user\ncreated: 2026-04-12\nupdated: 2026-04-14\n---\n\nb"
            )
        };
        let mut files = Map::new();
        for (i, n) in [
            "#general",
            "null",
            "~",
            "{braces}",
            "",
            "Tracking issue #42",
        ]
        .iter()
        .enumerate()
        {
            files.insert(format!("k{i}.md"), Value::String(file(n)));
        }
        let b = serde_json::json!({"version": "memory/0.1", "files": files}).to_string();
        let inc = decode(b.as_bytes()).unwrap();
        assert!(inc.skipped.is_empty(), "{:?}", inc.skipped);
        let names: Vec<&str> = inc
            .files
            .iter()
            .map(|f| f.parsed.meta.name.as_str())
            .collect();
        assert_eq!(
            names,
            vec![
                "#general",
                "null",
                "~",
                "{braces}",
                "",
                "Tracking issue #42"
            ]
        );
        assert_eq!(inc.converted.len(), 6);
        for f in &inc.files {
            let back = crate::memory::frontmatter::parse(&f.text).unwrap();
            assert_eq!(back.meta.name, f.parsed.meta.name, "{}", f.text);
        }
    }

    #[test]
    fn threews_plain_lines_are_read_and_rewritten_as_yaml() {
        let b = br#"{"version":"memory/0.1","files":{"ops_runbook.md":"---\nname: Runbook: deploys\ndescription: time: 10:30 UTC\ntype: project\ncreated: 2026-04-12\nupdated: 2026-04-14\n---\n\nRun it."}}"#;
        let inc = decode(b).unwrap();
        // spec/cli.md#import: each converted file is reported with the reason.
        assert_eq!(
            inc.converted,
            vec![Converted {
                item: "ops_runbook.md".into(),
                reason: "line 2 is not YAML; `name` is \"Runbook: deploys\" as three.ws reads it; line 3 is not YAML; `description` is \"time: 10:30 UTC\" as three.ws reads it; stored as YAML".into(),
            }]
        );
        let f = &inc.files[0];
        assert_eq!(f.parsed.meta.name, "Runbook: deploys");
        assert_eq!(f.parsed.meta.description, "time: 10:30 UTC");
        assert_eq!(
            f.text,
            "---\nname: \"Runbook: deploys\"\ndescription: \"time: 10:30 UTC\"\ntype: project\ncreated: 2026-04-12\nupdated: 2026-04-14\n---\n\nRun it.\n"
        );
        assert_eq!(
            crate::memory::frontmatter::parse(&f.text)
                .unwrap()
                .meta
                .name,
            f.parsed.meta.name
        );
    }
}
