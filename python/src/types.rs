//! What `Memory`'s methods give back to Python: read-only classes made from the
//! library's results (`Hit`, `Context`, `Record`, `ToolReply`, `SyncReport`). They
//! hold copies, never a reference into the store.

use pyo3::prelude::*;

/// One recall hit, best first.
#[pyclass(frozen, get_all, module = "memdir")]
pub struct Hit {
    pub key: String,
    #[pyo3(name = "type")]
    pub kind: String,
    pub name: String,
    pub description: String,
    pub updated: String,
    pub score: f64,
    pub relevance: f64,
    /// The body line that matched the query, when one did.
    pub line: Option<String>,
}

#[pymethods]
impl Hit {
    fn __repr__(&self) -> String {
        format!(
            "Hit(key={:?}, type={:?}, name={:?}, score={:.3})",
            self.key, self.kind, self.name, self.score
        )
    }
}

impl From<memdir::Hit> for Hit {
    fn from(h: memdir::Hit) -> Hit {
        Hit {
            key: h.key,
            kind: h.kind,
            name: h.name,
            description: h.description,
            updated: h.updated,
            score: h.score,
            relevance: h.relevance,
            line: h.line,
        }
    }
}

/// A context block: its text and what went into it.
#[pyclass(frozen, get_all, module = "memdir")]
pub struct Context {
    /// The block to put in the system prompt.
    pub text: String,
    /// Its estimated tokens (as memdir counts them), never over `max_tokens`.
    pub tokens: usize,
    pub max_tokens: usize,
    /// Keys of the memories included, in output order.
    pub memories: Vec<String>,
    /// Keys of the included memories that are excerpts (cut to fit).
    pub excerpts: Vec<String>,
    /// Timeline events included.
    pub events: usize,
    /// Problems met loading the store (`path:line: message`).
    pub problems: Vec<String>,
}

#[pymethods]
impl Context {
    fn __str__(&self) -> &str {
        &self.text
    }

    fn __repr__(&self) -> String {
        format!(
            "Context(tokens={}, max_tokens={}, memories={:?})",
            self.tokens, self.max_tokens, self.memories
        )
    }
}

impl From<memdir::Context> for Context {
    fn from(c: memdir::Context) -> Context {
        let b = c.block;
        Context {
            memories: b.memories.iter().map(|m| m.key.clone()).collect(),
            excerpts: b
                .memories
                .iter()
                .filter(|m| m.excerpt)
                .map(|m| m.key.clone())
                .collect(),
            text: b.text,
            tokens: b.tokens,
            max_tokens: b.max_tokens,
            events: b.events,
            problems: c
                .problems
                .iter()
                .map(|p| format!("{}: {}", p.location(), p.message))
                .collect(),
        }
    }
}

/// One memory as stored: its frontmatter fields and its Markdown body.
#[pyclass(frozen, get_all, module = "memdir")]
pub struct Record {
    pub key: String,
    pub name: String,
    pub description: String,
    #[pyo3(name = "type")]
    pub kind: String,
    pub body: String,
    pub tags: Vec<String>,
    pub important: bool,
    /// As the file writes it (`YYYY-MM-DD` or an RFC 3339 timestamp).
    pub created: String,
    pub updated: String,
    pub source: Option<String>,
    /// `never` or `<N>d`; None: the default.
    pub decay: Option<String>,
    pub supersedes: Vec<String>,
    pub valid_until: Option<String>,
    /// The version hash a compare-and-swap write names (64 hex digits).
    pub hash: String,
}

#[pymethods]
impl Record {
    fn __repr__(&self) -> String {
        format!(
            "Record(key={:?}, type={:?}, name={:?})",
            self.key, self.kind, self.name
        )
    }
}

impl From<memdir::Record> for Record {
    fn from(r: memdir::Record) -> Record {
        let hash = r.hash();
        let m = r.meta;
        Record {
            key: r.key.as_str().to_string(),
            name: m.name,
            description: m.description,
            kind: m.kind.to_string(),
            body: r.body.into_string(),
            tags: m.tags,
            important: m.important,
            created: m.created.text,
            updated: m.updated.text,
            source: m.source,
            decay: m.decay.map(|d| d.to_string()),
            supersedes: m.supersedes,
            valid_until: m.valid_until,
            hash,
        }
    }
}

/// The reply of one memory-tool command: the text the model reads, and whether it
/// is an error reply.
#[pyclass(frozen, get_all, module = "memdir")]
pub struct ToolReply {
    pub text: String,
    pub is_error: bool,
}

#[pymethods]
impl ToolReply {
    fn __str__(&self) -> &str {
        &self.text
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolReply(text={:?}, is_error={})",
            self.text, self.is_error
        )
    }
}

impl From<memdir::ToolReply> for ToolReply {
    fn from(r: memdir::ToolReply) -> ToolReply {
        ToolReply {
            text: r.text,
            is_error: r.is_error,
        }
    }
}

/// What one sync did: the head pulled (if any), what it wrote and deleted here,
/// and the version pushed.
#[pyclass(frozen, get_all, module = "memdir")]
pub struct SyncReport {
    /// The root pulled and merged, or None when the remote had nothing new.
    pub pulled: Option<String>,
    /// Files written and deleted here by the pull.
    pub written: usize,
    pub deleted: usize,
    /// The plaintext root of this directory as pushed.
    pub pushed: String,
    /// The root on the remote (the sealed blob's in `encrypted-ipfs` mode).
    pub network_root: String,
    /// The remote already held this version: nothing was sent.
    pub up_to_date: bool,
    /// Conflict copies open after the sync (paths relative to the directory).
    pub conflicts: Vec<String>,
    pub rounds: u32,
}

#[pymethods]
impl SyncReport {
    fn __repr__(&self) -> String {
        format!(
            "SyncReport(pulled={:?}, written={}, deleted={}, pushed={:?})",
            self.pulled, self.written, self.deleted, self.pushed
        )
    }
}

impl From<memdir::sync::SyncReport> for SyncReport {
    fn from(r: memdir::sync::SyncReport) -> SyncReport {
        let (pulled, written, deleted) = match &r.pulled {
            Some(p) => (Some(p.root.clone()), p.written, p.deleted),
            None => (None, 0, 0),
        };
        SyncReport {
            pulled,
            written,
            deleted,
            pushed: r.pushed.root,
            network_root: r.pushed.network_root,
            up_to_date: r.pushed.up_to_date,
            conflicts: r.open_conflicts.into_iter().map(|c| c.copy).collect(),
            rounds: r.rounds,
        }
    }
}
