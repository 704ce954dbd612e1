//! Claude's memory tool (`memory_20250818`) as text (spec/memory-tool.md): the six
//! commands read from their JSON, `/memories` paths mapped to names in the memory
//! directory, and every reply the reference implementation gives, byte for byte
//! (numbered views, human sizes, the `str_replace` snippet, the error texts).
//!
//! Pure: it must not touch the store or decide what a name holds. The engine runs a
//! command against the store (`Memory::memory_tool`) and builds its reply here.

use serde_json::Value;

/// The folder every path of the tool starts with.
pub const ROOT: &str = "/memories";
/// The width line numbers are right-aligned to (the digits of [`MAX_LINES`]).
pub const LINE_NUMBER_WIDTH: usize = 6;
/// The most lines a file may have to be viewed.
pub const MAX_LINES: usize = 999_999;
/// The frontmatter key that records how a memory's text, as the tool wrote it,
/// differs at its edges from the body memdir stores (spec/memory-tool.md#text).
pub const EDGES_KEY: &str = "tool_text";
/// The longest name memdir derives from a memory's first line, in characters.
pub const NAME_CHARS: usize = 80;
/// The longest description memdir derives, in characters.
pub const DESCRIPTION_CHARS: usize = 200;

/// One command of the tool, read from the JSON the model sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `view`: a file's numbered lines, or a folder's listing.
    View {
        /// The tool path.
        path: String,
        /// `[start, end]`, 1-based, `end` −1 for the end of the file.
        view_range: Option<(i64, i64)>,
    },
    /// `create`: write a file whole.
    Create {
        /// The tool path.
        path: String,
        /// The file's text.
        file_text: String,
    },
    /// `str_replace`: replace the one occurrence of a text.
    StrReplace {
        /// The tool path.
        path: String,
        /// The text to find, exactly once.
        old_str: String,
        /// What replaces it.
        new_str: String,
    },
    /// `insert`: insert text after a line.
    Insert {
        /// The tool path.
        path: String,
        /// The line after which the text goes (0: at the start).
        insert_line: i64,
        /// The text inserted.
        insert_text: String,
    },
    /// `delete`: remove a file.
    Delete {
        /// The tool path.
        path: String,
    },
    /// `rename`: move a file to a new path.
    Rename {
        /// The tool path of the file.
        old_path: String,
        /// Its new tool path.
        new_path: String,
    },
}

/// Why a command was refused: the reference's error texts, and memdir's own for
/// what memdir does not allow (each names the path and what to do instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A command that cannot be read from its JSON.
    #[error("Invalid memory tool command: {detail}")]
    Command {
        /// What is wrong with it.
        detail: String,
    },
    /// A path outside `/memories`.
    #[error("Path must start with /memories, got: {path}")]
    Prefix {
        /// The tool path.
        path: String,
    },
    /// A path that would escape `/memories` (`..`).
    #[error("Path {path} would escape /memories directory")]
    Escape {
        /// The tool path.
        path: String,
    },
    /// A path through a symbolic link.
    #[error("Path would escape /memories directory via symlink")]
    Symlink,
    /// A path that does not exist (`view`, `str_replace`, `insert`).
    #[error("The path {path} does not exist. Please provide a valid path.")]
    Missing {
        /// The tool path.
        path: String,
    },
    /// A path that does not exist (`delete`, `rename`).
    #[error("The path {path} does not exist")]
    Gone {
        /// The tool path.
        path: String,
    },
    /// A path that is not a file.
    #[error("The path {path} is not a file.")]
    NotAFile {
        /// The tool path.
        path: String,
    },
    /// A `create` of a file that exists.
    #[error("File {path} already exists")]
    Exists {
        /// The tool path.
        path: String,
    },
    /// A `rename` onto a path that exists.
    #[error("The destination {path} already exists")]
    Destination {
        /// The tool path.
        path: String,
    },
    /// A `delete` of `/memories` itself.
    #[error("Cannot delete the /memories directory itself")]
    DeleteRoot,
    /// A `rename` of `/memories` itself.
    #[error("Cannot rename the /memories directory itself")]
    RenameRoot,
    /// A `str_replace` whose text does not occur.
    #[error("No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")]
    NoMatch {
        /// The text to find.
        old: String,
        /// The tool path.
        path: String,
    },
    /// A `str_replace` whose text occurs more than once.
    #[error(
        "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
        lines.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    Multiple {
        /// The text to find.
        old: String,
        /// The lines it occurs on.
        lines: Vec<usize>,
    },
    /// An `insert` line outside the file.
    #[error("Invalid `insert_line` parameter: {line}. It should be within the range [0, {max}].")]
    InsertLine {
        /// The line given.
        line: i64,
        /// The file's number of lines (the largest line accepted).
        max: usize,
    },
    /// A file over the most lines the tool views.
    #[error("File {path} exceeds maximum line limit of 999,999 lines.")]
    TooLong {
        /// The tool path.
        path: String,
    },
    /// A path that is not a memory file directly in `/memories`.
    #[error(
        "{path} is not a memory file: memdir keeps each memory as /memories/<key>.md directly in /memories, where <key> is 1 to 100 lowercase letters, digits, `_` or `-`, starting with a letter or digit (e.g. /memories/user_preferences.md)"
    )]
    NotAMemory {
        /// The tool path.
        path: String,
    },
    /// A change to memdir's MEMORY.md.
    #[error(
        "{path} is memdir's index of the memory files, rebuilt after every change: view it, but change the memory files instead"
    )]
    Index {
        /// The tool path.
        path: String,
    },
    /// A change to the agent's own MEMORY.md.
    #[error(
        "{path} is the agent's own index (Claude Code keeps it, memdir never changes it): view it; the memory tool changes the memory files only"
    )]
    AgentIndex {
        /// The tool path.
        path: String,
    },
    /// Text with a carriage return.
    #[error(
        "The {field} holds a carriage return (\\r): memdir keeps memory files with \\n line endings; send the text with \\n only"
    )]
    CarriageReturn {
        /// The argument that holds it.
        field: &'static str,
    },
}

/// Where a tool path points in the memory directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// `/memories` itself.
    Root,
    /// A name directly in the directory (`MEMORY.md`, `user_role.md`, `notes.txt`).
    Name(String),
    /// A path below a folder of the directory (`timeline/2026-04-14.jsonl`): the
    /// memory tool sees no folders (spec/memory-tool.md#paths).
    Nested(String),
}

/// The string field `name` of a command, or why it is missing.
fn string(v: &Value, name: &str) -> Result<String, Refusal> {
    match v.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Refusal::Command {
            detail: format!("`{name}` must be a string, got {other}"),
        }),
        None => Err(Refusal::Command {
            detail: format!("missing field `{name}`"),
        }),
    }
}

/// The integer field `name` of a command.
fn integer(v: &Value, name: &str) -> Result<i64, Refusal> {
    match v.get(name) {
        Some(n) if n.as_i64().is_some() => Ok(n.as_i64().unwrap_or_default()),
        Some(other) => Err(Refusal::Command {
            detail: format!("`{name}` must be an integer, got {other}"),
        }),
        None => Err(Refusal::Command {
            detail: format!("missing field `{name}`"),
        }),
    }
}

impl Command {
    /// Reads a command from the JSON the model sends (`{"command": "view", "path":
    /// "/memories"}`). Fields a command does not use are ignored, as the reference does.
    pub fn parse(v: &Value) -> Result<Command, Refusal> {
        if !v.is_object() {
            return Err(Refusal::Command {
                detail: format!("expected a JSON object, got {v}"),
            });
        }
        let command = string(v, "command")?;
        Ok(match command.as_str() {
            "view" => Command::View {
                path: string(v, "path")?,
                view_range: view_range(v.get("view_range"))?,
            },
            "create" => Command::Create {
                path: string(v, "path")?,
                file_text: string(v, "file_text")?,
            },
            "str_replace" => Command::StrReplace {
                path: string(v, "path")?,
                old_str: string(v, "old_str")?,
                new_str: string(v, "new_str")?,
            },
            "insert" => Command::Insert {
                path: string(v, "path")?,
                insert_line: integer(v, "insert_line")?,
                insert_text: string(v, "insert_text")?,
            },
            "delete" => Command::Delete {
                path: string(v, "path")?,
            },
            "rename" => Command::Rename {
                old_path: string(v, "old_path")?,
                new_path: string(v, "new_path")?,
            },
            other => {
                return Err(Refusal::Command {
                    detail: format!(
                        "unknown command `{other}`; expected view, create, str_replace, insert, delete or rename"
                    ),
                });
            }
        })
    }
}

/// `view_range`: absent or null, or two integers.
fn view_range(v: Option<&Value>) -> Result<Option<(i64, i64)>, Refusal> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    match v.as_array().map(Vec::as_slice) {
        Some([a, b]) if a.is_i64() && b.is_i64() => Ok(Some((
            a.as_i64().unwrap_or_default(),
            b.as_i64().unwrap_or_default(),
        ))),
        _ => Err(Refusal::Command {
            detail: format!("`view_range` must be two integers [start, end], got {v}"),
        }),
    }
}

/// Where `path` points: the prefix checked (as the reference does, the text after
/// `/memories` with its leading slashes dropped is the relative path), `.` and `..`
/// resolved without leaving the directory.
pub fn place(path: &str) -> Result<Place, Refusal> {
    let Some(rest) = path.strip_prefix(ROOT) else {
        return Err(Refusal::Prefix { path: path.into() });
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(Refusal::Escape { path: path.into() });
                }
            }
            p => parts.push(p),
        }
    }
    Ok(match parts.as_slice() {
        [] => Place::Root,
        [name] => Place::Name((*name).to_string()),
        _ => Place::Nested(parts.join("/")),
    })
}

/// A size as the reference shows it: `0B`, `512B`, `4.0K`, `1.5M` (powers of 1024,
/// one decimal unless whole).
pub fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".into();
    }
    const UNITS: [&str; 4] = ["B", "K", "M", "G"];
    let i = ((63 - bytes.leading_zeros()) / 10).min(3);
    let size = bytes as f64 / 1024f64.powi(i as i32);
    if size.fract() == 0.0 {
        format!("{}{}", size as u64, UNITS[i as usize])
    } else {
        format!("{size:.1}{}", UNITS[i as usize])
    }
}

/// One numbered line: the number right-aligned to [`LINE_NUMBER_WIDTH`], a tab, the line.
fn numbered(n: usize, line: &str) -> String {
    format!("{n:>LINE_NUMBER_WIDTH$}\t{line}")
}

/// The reply to `view` of a directory: the header, the directory's own line, then
/// one `{size}\t{path}/{name}` line per entry (in the order given).
pub fn view_dir(path: &str, entries: &[(String, u64)]) -> String {
    let total: u64 = entries.iter().map(|(_, s)| s).sum();
    let mut out = format!(
        "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{}\t{path}",
        format_size(total)
    );
    for (name, size) in entries {
        out.push_str(&format!("\n{}\t{path}/{name}", format_size(*size)));
    }
    out
}

/// A Python slice bound (`lines[start:end]`) clamped to `0..=len`.
fn slice_bound(i: i64, len: usize) -> usize {
    let len_i = len as i64;
    let i = if i < 0 { i + len_i } else { i };
    i.clamp(0, len_i) as usize
}

/// The reply to `view` of a file whose text is `text`: every line (split on `\n`, so
/// a final newline shows as an empty last line) numbered, or those of `range`.
pub fn view_file(path: &str, text: &str, range: Option<(i64, i64)>) -> Result<String, Refusal> {
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.len() > MAX_LINES {
        return Err(Refusal::TooLong { path: path.into() });
    }
    let (mut start, mut end) = (0, lines.len());
    if let Some((a, b)) = range {
        let first = a.max(1) - 1;
        start = slice_bound(first, lines.len());
        end = if b == -1 {
            lines.len()
        } else {
            slice_bound(b, lines.len())
        };
    }
    let shown: Vec<String> = lines
        .get(start..end.max(start))
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, line)| numbered(start + i + 1, line))
        .collect();
    Ok(format!(
        "Here's the content of {path} with line numbers:\n{}",
        shown.join("\n")
    ))
}

/// The byte offsets where `needle` starts in `text`, overlapping matches included
/// (an empty needle matches before every character and at the end).
fn starts(text: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut from = 0;
    while from <= text.len() {
        let Some(i) = text[from..].find(needle) else {
            break;
        };
        let at = from + i;
        out.push(at);
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    out
}

/// How many times `needle` occurs in `text` without overlapping (Python's
/// `str.count`: an empty needle counts once per character, plus one).
fn count(text: &str, needle: &str) -> usize {
    if needle.is_empty() {
        text.chars().count() + 1
    } else {
        text.matches(needle).count()
    }
}

/// `str_replace` on a file whose text is `text`: the new text and the reply with its
/// snippet (two lines either side of the first changed line), or why nothing changed.
pub fn str_replace(
    path: &str,
    text: &str,
    old: &str,
    new: &str,
) -> Result<(String, String), Refusal> {
    match count(text, old) {
        0 => {
            return Err(Refusal::NoMatch {
                old: old.into(),
                path: path.into(),
            });
        }
        1 => {}
        _ => {
            let lines = starts(text, old)
                .into_iter()
                .map(|at| text[..at].matches('\n').count() + 1)
                .collect();
            return Err(Refusal::Multiple {
                old: old.into(),
                lines,
            });
        }
    }
    let at = text.find(old).unwrap_or_default();
    let changed = text[..at].matches('\n').count();
    let replaced = text.replacen(old, new, 1);
    let lines: Vec<&str> = replaced.split('\n').collect();
    let first = changed.saturating_sub(2);
    let last = (changed + 3).min(lines.len());
    let snippet: Vec<String> = (first..last).map(|i| numbered(i + 1, lines[i])).collect();
    let reply = format!(
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}",
        snippet.join("\n")
    );
    Ok((replaced, reply))
}

/// `insert` of `insert_text` (its trailing newlines dropped) after line `line` (0:
/// at the top) of `text`; the new text ends with a newline.
pub fn insert(text: &str, line: i64, insert_text: &str) -> Result<String, Refusal> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let at = usize::try_from(line)
        .ok()
        .filter(|&n| n <= lines.len())
        .ok_or(Refusal::InsertLine {
            line,
            max: lines.len(),
        })?;
    lines.insert(at, insert_text.trim_end_matches('\n'));
    let mut out = lines.join("\n");
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The reply to a successful `create`.
pub fn created(path: &str) -> String {
    format!("File created successfully at: {path}")
}

/// The reply to a successful `insert`.
pub fn edited(path: &str) -> String {
    format!("The file {path} has been edited.")
}

/// The reply to a successful `delete`.
pub fn deleted(path: &str) -> String {
    format!("Successfully deleted {path}")
}

/// The reply to a successful `rename`.
pub fn renamed(old: &str, new: &str) -> String {
    format!("Successfully renamed {old} to {new}")
}

/// Refuses text that holds a carriage return (memdir stores `\n` line endings, so
/// such text could not be shown back as it was written).
pub fn check_text(field: &'static str, text: &str) -> Result<(), Refusal> {
    if text.contains('\r') {
        return Err(Refusal::CarriageReturn { field });
    }
    Ok(())
}

/// A text as the tool sees it, split into what memdir stores as the body (no
/// leading newlines, no trailing white space) and the edges around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edges {
    /// The newlines before the body.
    pub lead: String,
    /// The white space after the body.
    pub trail: String,
}

impl Edges {
    /// The edges of a body memdir wrote: none before, one newline after (as in the
    /// file), none at all around an empty body.
    pub fn usual(body: &str) -> Edges {
        Edges {
            lead: String::new(),
            trail: if body.is_empty() { "" } else { "\n" }.into(),
        }
    }

    /// Splits a text (without carriage returns) into its body and edges, so that
    /// `lead + body + trail` is the text.
    pub fn split(text: &str) -> (String, Edges) {
        let body = text.trim_start_matches('\n');
        let lead = &text[..text.len() - body.len()];
        let trimmed = body.trim_end();
        let trail = &body[trimmed.len()..];
        (
            trimmed.to_string(),
            Edges {
                lead: lead.into(),
                trail: trail.into(),
            },
        )
    }

    /// The edges recorded in a memory's frontmatter value (`tool_text: {lead, trail}`),
    /// or the usual ones when there is none or it is not what memdir writes (a
    /// person's edit cannot make the tool show text that is not white space).
    pub fn read(value: Option<&Value>, body: &str) -> Edges {
        let mut e = Edges::usual(body);
        let Some(map) = value.and_then(Value::as_object) else {
            return e;
        };
        let get = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(lead) = get("lead").filter(|s| s.chars().all(|c| c == '\n')) {
            e.lead = lead;
        }
        if let Some(trail) = get("trail").filter(|s| s.chars().all(char::is_whitespace)) {
            e.trail = trail;
        }
        e
    }

    /// The frontmatter value that records these edges for `body`: `None` when they
    /// are the usual ones (no key is written), else only the parts that differ.
    pub fn value(&self, body: &str) -> Option<Value> {
        let usual = Edges::usual(body);
        if *self == usual {
            return None;
        }
        let mut map = serde_json::Map::new();
        if self.lead != usual.lead {
            map.insert("lead".into(), Value::String(self.lead.clone()));
        }
        if self.trail != usual.trail {
            map.insert("trail".into(), Value::String(self.trail.clone()));
        }
        Some(Value::Object(map))
    }

    /// The text the tool sees: `lead + body + trail`.
    pub fn join(&self, body: &str) -> String {
        format!("{}{body}{}", self.lead, self.trail)
    }
}

/// `text` cut to at most `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out = out.trim_end().to_string();
    out.push('…');
    out
}

/// The name and description memdir gives a memory whose text the tool wrote
/// without them: the name from the first non-blank line (heading marks dropped),
/// the description from the next non-blank line that is not a heading (else the
/// name); `fallback` (the key) for a text with no words.
pub fn derive_fields(body: &str, fallback: &str) -> (String, String) {
    let mut lines = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .filter(|l| !l.is_empty() && *l != "---");
    let name = lines
        .next()
        .map_or_else(|| fallback.to_string(), |l| cut(l, NAME_CHARS));
    let description = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && *l != "---")
        .map(|l| cut(l, DESCRIPTION_CHARS))
        .find(|l| *l != name)
        .unwrap_or_else(|| name.clone());
    (name, description)
}

/// The memory type a new memory gets from its key's prefix (the `<type>_<topic>`
/// convention): `user_`, `feedback_`, `project_`, `reference_`; else `project`.
pub fn kind_of_key(key: &str) -> &'static str {
    for kind in ["user", "feedback", "project", "reference"] {
        if key
            .strip_prefix(kind)
            .is_some_and(|rest| rest.starts_with(['_', '-']))
        {
            return kind;
        }
    }
    "project"
}

#[cfg(test)]
mod tests;
