//! The engine's public result types (`Problem`, `Snapshot`, `Draft`, `Hit`,
//! `CheckReport`, `ImportReport`, …) and the wording of a problem found on a file.
//! It must not read or write the store: these are plain data.

use crate::memory::printable::escape_line;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::TimelineRepair;
use crate::engine::hybrid;
use crate::error::Error;
use crate::exchange::blob::{self, Skipped};
use crate::exchange::merge::{Counts, Decision, Strategy};
use crate::memory::timeline::Event;
use crate::memory::{Kind, Record};
use crate::retrieval::context::Block;
use crate::store::Found;

/// What a folder (or FIFO, socket) named like a memory or day file is told: memdir
/// cannot write that key or day while it is there (spec/architecture.md#nothing-outside-the-directory).
pub(super) const NOT_A_FILE: &str = "not a regular file (a folder?): memdir neither reads nor replaces it, and cannot write this name while it is there; rename or remove it";

/// What a scan reports of an entry that is not a regular memory file (`None` for
/// one that is).
pub(crate) fn found_problem(found: Found) -> Option<Problem> {
    match found {
        Found::File(_) => None,
        Found::Symlink(n) => Some(Problem::error(
            &n,
            None,
            "symbolic link not followed; memdir only reads regular files inside the directory",
        )),
        Found::BadName(n) => Some(Problem::error(
            &n,
            None,
            "file name is not valid UTF-8; skipped",
        )),
        Found::NotAFile(n) => Some(Problem::error(&n, None, NOT_A_FILE)),
    }
}

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The file or line is not loaded.
    Error,
    /// Loaded, but something deserves attention.
    Warning,
}

/// A problem found while loading: which file and line, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Path relative to the memory directory.
    pub path: String,
    /// The line in the file, when the problem has one.
    pub line: Option<usize>,
    /// Whether it is an error or a warning.
    pub severity: Severity,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    pub(super) fn error(path: &str, line: Option<usize>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.to_string(),
            line,
            severity: Severity::Error,
            message: message.into(),
        }
    }

    pub(super) fn warning(path: &str, line: Option<usize>, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(path, line, message)
        }
    }

    /// `path:line: message`.
    pub fn location(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.path),
            None => self.path.clone(),
        }
    }
}

/// What bringing the search index up to date took
/// ([`Memory::search_index`](super::Memory::search_index)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SearchIndexReport {
    /// Memories loaded.
    pub memories: usize,
    /// Files the index vouched for by their stat (not opened).
    pub vouched: usize,
    /// Files read (new, changed, or too recently changed to be vouched for).
    pub read: usize,
    /// Files parsed (read, and of content the index did not have).
    pub parsed: usize,
    /// Memories whose term data was computed.
    pub analyzed: usize,
    /// Memories whose share of the term statistics the index kept (not counted
    /// again; spec/architecture.md#search-index).
    pub counted: usize,
    /// Terms in the vocabulary.
    pub terms: usize,
    /// Size of the index files afterwards, in bytes.
    pub bytes: u64,
}

/// The memories of a store and the problems met loading them.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The memories that loaded, in key order.
    pub records: Vec<Record>,
    /// File text of each record, by key, exactly as read (for export and resources).
    pub texts: BTreeMap<String, String>,
    /// What was wrong with the files that did not load, or loaded with warnings.
    pub problems: Vec<Problem>,
}

/// Timeline events and the problems met reading them.
#[derive(Debug, Clone, Default)]
pub struct Events {
    /// In time order (stable for equal times: file order).
    pub events: Vec<Event>,
    pub problems: Vec<Problem>,
}

/// A request to create or update a memory.
#[derive(Debug, Clone)]
pub struct Draft {
    /// The memory's key (its file name without `.md`).
    pub key: String,
    /// Its name.
    pub name: String,
    /// Its one-line description.
    pub description: String,
    /// The memory's type: `user`, `feedback`, `project`, `reference` or `state`;
    /// `write` refuses any other ([`Kind::Other`]) with `Error::Type`.
    pub kind: Kind,
    /// Its body (Markdown).
    pub body: String,
    /// `None` keeps the existing tags (none for a new memory).
    pub tags: Option<Vec<String>>,
    /// `None` keeps the existing flag.
    pub important: Option<bool>,
    /// `never` or `<N>d`; `None` keeps the existing value.
    pub decay: Option<String>,
    /// `None` keeps the existing value.
    pub source: Option<String>,
    /// Keys of the memories this one replaces (spec/memory-format.md#supersedes);
    /// `None` keeps the existing list, `Some(vec![])` clears it.
    pub supersedes: Option<Vec<String>>,
    /// The last day the memory holds (`YYYY-MM-DD`); `None` keeps the existing
    /// value, `Some("")` clears it.
    pub valid_until: Option<String>,
}

impl Default for Draft {
    /// An empty draft, for `..Draft::default()`. Its type is empty too
    /// (`Kind::Other("")`): a write that does not set one is refused, as it was when
    /// the type was text.
    fn default() -> Draft {
        Draft {
            key: String::new(),
            name: String::new(),
            description: String::new(),
            kind: Kind::Other(String::new()),
            body: String::new(),
            tags: None,
            important: None,
            decay: None,
            source: None,
            supersedes: None,
            valid_until: None,
        }
    }
}

/// What a write does when the key already holds a memory (spec/cli.md#write).
/// Writing exactly what the memory already holds is `unchanged` under every one.
///
/// The CLI's `write` and MCP's `remember` default to [`IfExists::Refuse`];
/// [`Memory::write`](crate::Memory::write) replaces, as it always has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfExists {
    /// Refuse with [`Error::AlreadyExists`](crate::Error::AlreadyExists): only a new
    /// memory is written.
    Refuse,
    /// Replace the memory (fields the draft leaves `None` keep their value).
    Replace,
    /// Replace the memory only if its current version's hash
    /// ([`Record::hash`](crate::Record::hash), lowercase hex) is this one; otherwise
    /// (another version, or no memory) refuse with
    /// [`Error::HashMismatch`](crate::Error::HashMismatch). Compare-and-swap.
    ReplaceIfHash(String),
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteOutcome {
    /// The key held no memory: a new file.
    Created,
    /// The memory changed.
    Updated,
    /// Identical content: nothing was touched.
    Unchanged,
}

impl WriteOutcome {
    /// `created`, `updated` or `unchanged`: the word the outputs use (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            WriteOutcome::Created => "created",
            WriteOutcome::Updated => "updated",
            WriteOutcome::Unchanged => "unchanged",
        }
    }
}

/// What an index rebuild did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct IndexOutcome {
    /// MEMORY.md was (re)written.
    pub written: bool,
    /// Where a hand-edited MEMORY.md was saved before being replaced.
    pub backup: Option<String>,
}

/// One memory in a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed {
    /// The memory's key.
    pub key: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its one-line description.
    pub description: String,
    /// When it last changed, as written in its frontmatter.
    pub updated: String,
    /// Its rank score (salience × recency).
    pub score: f64,
    /// Keys of the memories that supersede this one (listed only with
    /// `include_superseded`; spec/ranking.md#superseded-and-expired).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded_by: Vec<String>,
    /// Its `valid_until` day has passed (listed only with `include_expired`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// When this device last read it (`.memdir/cache/access.jsonl`; spec/cli.md#access-log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_read: Option<String>,
}

/// The result of a recall: hits, the problems met loading, and the ranking that ran.
#[derive(Debug, Clone)]
pub struct Recall {
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// What was wrong with files of the store (the hits are from the rest).
    pub problems: Vec<Problem>,
    /// `None` when embeddings are not configured (keyword ranking, nothing to say).
    pub embeddings: Option<hybrid::Report>,
}

/// A context block, the problems met loading, and the ranking that ran.
#[derive(Debug, Clone)]
pub struct Context {
    /// The context block.
    pub block: Block,
    /// What was wrong with files of the store (the block is built from the rest).
    pub problems: Vec<Problem>,
    /// `None` without `[embeddings]` or without a query (nothing to say).
    pub embeddings: Option<hybrid::Report>,
}

/// One recall hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The memory's key.
    pub key: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its one-line description.
    pub description: String,
    /// When it last changed, as written in its frontmatter.
    pub updated: String,
    /// Relevance blended with salience and recency (spec/ranking.md).
    pub score: f64,
    /// Relevance to the query alone.
    pub relevance: f64,
    /// Keys of the memories that supersede this one (only with `include_superseded`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded_by: Vec<String>,
    /// Its `valid_until` day has passed (only with `include_expired`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// The body line that matched the query (spec/ranking.md#recall), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

/// The text marker of a superseded or expired memory: ` [superseded by k; expired]`,
/// or nothing.
pub fn lifecycle_mark(superseded_by: &[String], expired: bool) -> String {
    let mut parts = Vec::new();
    if !superseded_by.is_empty() {
        parts.push(format!("superseded by {}", superseded_by.join(", ")));
    }
    if expired {
        parts.push("expired".to_string());
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" [{}]", parts.join("; "))
    }
}

/// One line per hit, as the CLI prints it and the MCP `recall` tool returns it:
/// `score  key  name — description`.
impl std::fmt::Display for Hit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.3}  {}  {} — {}{}",
            self.score,
            escape_line(&self.key),
            escape_line(&self.name),
            escape_line(&self.description),
            lifecycle_mark(&self.superseded_by, self.expired)
        )
    }
}

/// The result of `check`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckReport {
    /// How many memories loaded.
    pub memories: usize,
    /// How many timeline events were read.
    pub events: usize,
    /// Everything found wrong, in file order.
    pub problems: Vec<Problem>,
    /// What `--fix` repaired.
    pub fixed: Vec<String>,
    /// Timeline day files repaired by `--fix` (without it: that need repair),
    /// spec/timeline-format.md#repair.
    pub timeline_repairs: Vec<TimelineRepair>,
}

impl CheckReport {
    /// Whether any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }
}

/// The result of an import.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// The input format (`blob`, `claude-code`, `mcp-memory`, `basic-memory`).
    pub format: &'static str,
    /// How local and incoming memories of one key are reconciled.
    pub strategy: Strategy,
    /// Nothing was written (`--dry-run`): the report is the plan.
    pub dry_run: bool,
    /// How many memories the plan adds, updates, skips and so on.
    #[serde(flatten)]
    pub counts: Counts,
    /// Timeline events added.
    pub events_added: usize,
    /// The decision for each incoming memory.
    pub plan: Vec<Decision>,
    /// What was skipped and why (the count is `skipped`).
    pub skipped_items: Vec<Skipped>,
    /// Files with a value read the three.ws way rather than as YAML, imported
    /// rewritten as YAML, each with the reason.
    pub converted: Vec<blob::Converted>,
    /// Links of a foreign import whose target was not imported, kept as written
    /// (spec/import-formats.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<Skipped>,
}

/// An IO error as a short message for a problem line (the path is already there).
pub(super) fn short_io(e: &Error) -> String {
    match e {
        Error::TooLarge { size, limit, .. } => {
            format!("not loaded: {size} bytes is over the limit of {limit} bytes")
        }
        Error::NotUtf8 { .. } => "not loaded: not valid UTF-8 text".into(),
        Error::Symlink { .. } => "symbolic link not followed".into(),
        Error::Io { source, .. } => format!("not loaded: {source}"),
        other => format!("not loaded: {other}"),
    }
}

/// Sorts a load's problems in file order (whatever order threads met them in) and
/// adds a warning for keys that differ only by case.
pub(super) fn finish_problems(problems: &mut Vec<Problem>, records: &[Record]) {
    problems.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    // Each key lowered (borrowed when there is nothing to lower: the usual case),
    // sorted stably, so that keys equal when lowered are neighbours in record order.
    let mut lower: Vec<(std::borrow::Cow<'_, str>, &str)> = records
        .iter()
        .map(|r| {
            let k = r.key.as_str();
            let l = if k.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
                std::borrow::Cow::Borrowed(k)
            } else {
                std::borrow::Cow::Owned(k.to_lowercase())
            };
            (l, k)
        })
        .collect();
    lower.sort_by(|a, b| a.0.cmp(&b.0));
    let mut dupes: Vec<Problem> = lower
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|v| v.len() > 1)
        .map(|v| {
            let keys: Vec<&str> = v.iter().map(|x| x.1).collect();
            Problem::warning(
                &format!("{}.md", keys[0]),
                None,
                format!("keys differ only by case: {}", keys.join(", ")),
            )
        })
        .collect();
    dupes.sort_by(|a, b| a.path.cmp(&b.path));
    problems.extend(dupes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::index::tests::rec;
    use std::collections::HashMap;

    /// The warnings for keys that differ only by case, the plain way: a map from each
    /// lowered key to its keys in record order.
    fn by_map(records: &[Record]) -> Vec<Problem> {
        let mut lower: HashMap<String, Vec<&str>> = HashMap::new();
        for r in records {
            lower
                .entry(r.key.as_str().to_lowercase())
                .or_default()
                .push(r.key.as_str());
        }
        let mut dupes: Vec<Problem> = lower
            .values()
            .filter(|v| v.len() > 1)
            .map(|v| {
                Problem::warning(
                    &format!("{}.md", v[0]),
                    None,
                    format!("keys differ only by case: {}", v.join(", ")),
                )
            })
            .collect();
        dupes.sort_by(|a, b| a.path.cmp(&b.path));
        dupes
    }

    #[test]
    fn keys_that_differ_only_by_case_are_named_in_record_order() {
        let sets: [&[&str]; 4] = [
            &["alpha", "b", "c"],
            &["Alpha", "alpha", "b", "B", "ALPHA", "c"],
            &["zeta", "Émile", "émile", "ÉMILE", "x_1", "X_1", "y"],
            &["b2", "a", "B2", "A", "a-b", "A-b", "a-B"],
        ];
        for keys in sets {
            let records: Vec<Record> = keys
                .iter()
                .map(|k| rec(k, "user", k, "d", "2026-01-01"))
                .collect();
            let mut problems = Vec::new();
            finish_problems(&mut problems, &records);
            assert_eq!(problems, by_map(&records), "{keys:?}");
        }
        let records: Vec<Record> = ["Alpha", "alpha", "ALPHA"]
            .iter()
            .map(|k| rec(k, "user", k, "d", "2026-01-01"))
            .collect();
        let mut problems = Vec::new();
        finish_problems(&mut problems, &records);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "Alpha.md");
        assert_eq!(
            problems[0].message,
            "keys differ only by case: Alpha, alpha, ALPHA"
        );
    }
}
