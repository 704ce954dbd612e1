//! The core error: what can go wrong in the memory directory itself, and the exit
//! class every error of memdir maps to.
//!
//! Every variant carries what failed (path, key, line, field) so that `report` can
//! print a precise `error:` line and a `hint:`. The core error knows only the core:
//! sync, provider, configuration and benchmark errors live in their own wings and
//! wrap this one, never the other way round.

use std::path::PathBuf;

use crate::exchange::blob::BlobError;
use crate::memory::KeyError;
use crate::memory::edit::EditError;
use crate::memory::frontmatter::FrontmatterError;
use crate::memory::links::LinkEditError;
use crate::memory::secrets::SecretKind;
use crate::memory::timeline::EventError;
use crate::retrieval::filter::FilterError;

/// What kind of failure an error is; the CLI maps it to an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Bad input or a data problem (exit 1).
    Input,
    /// Bad usage of a command (exit 2).
    Usage,
    /// A remote failure; a retry may help (exit 3).
    Remote,
    /// Integrity failure: wrong CID, tampered or undecryptable data (exit 4).
    Integrity,
}

impl Class {
    /// The process exit code of the class (spec/cli.md#exit-codes).
    pub fn exit_code(self) -> i32 {
        match self {
            Class::Input => 1,
            Class::Usage => 2,
            Class::Remote => 3,
            Class::Integrity => 4,
        }
    }
}

/// Errors of memdir's library API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("type `{value}` is not one of user, feedback, project, reference, state")]
    Type { value: String },
    #[error("decay `{value}` is not `never` or `<N>d` (for example 30d)")]
    Decay { value: String },
    #[error("valid_until `{value}` is not a date; expected YYYY-MM-DD")]
    ValidUntil { value: String },
    #[error("memory `{key}` cannot supersede itself")]
    SupersedesSelf { key: String },
    #[error("the prune plan changed since it was shown (now also: [{}]; no longer: [{}]); nothing was forgotten", .added.join(", "), .removed.join(", "))]
    PlanChanged {
        added: Vec<String>,
        removed: Vec<String>,
    },
    #[error("`{field}` must not be empty")]
    Empty { field: &'static str },
    #[error("refused to store {}: the {field} contains what looks like {}", .key, .kind.describe())]
    Secret {
        key: String,
        field: &'static str,
        kind: SecretKind,
    },
    #[error("no memory with key `{key}`")]
    NotFound { key: String },
    #[error("{}: {source}", .path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        source: FrontmatterError,
    },
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {size} bytes is over the limit of {limit} bytes", .path.display())]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{}: not valid UTF-8 text", .path.display())]
    NotUtf8 { path: PathBuf },
    #[error("{}: is a symbolic link; memdir does not follow links", .path.display())]
    Symlink { path: PathBuf },
    #[error("memory directory {} does not exist", .path.display())]
    NoDir { path: PathBuf },
    #[error("{}: not a directory", .path.display())]
    NotADir { path: PathBuf },
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// A foreign import input refused as a whole (spec/import-formats.md).
    #[error(transparent)]
    Foreign(#[from] crate::exchange::foreign::ForeignError),
    #[error("the query is empty")]
    EmptyQuery,
    /// A filter value that cannot be used, named by the flag or argument it came from
    /// (`--since`, `since`); `arg` is empty when the filter came from the library.
    #[error("{}{source}", if arg.is_empty() { String::new() } else { format!("{arg}: ") })]
    Filter {
        arg: String,
        #[source]
        source: FilterError,
    },
    #[error("the body is {size} bytes, over the limit of {limit} bytes")]
    BodyTooLarge { size: usize, limit: usize },
    #[error(
        "the `{kind}` event is {size} bytes, over the limit of {limit} bytes per timeline event"
    )]
    EventTooLarge {
        kind: String,
        size: usize,
        limit: usize,
    },
    /// A timeline file (or the folder) that an import must read could not be read.
    #[error("{}: {message}; import reads the whole timeline before writing (forgotten keys must be known), so nothing was written", .path.display())]
    TimelineUnreadable { path: PathBuf, message: String },
    #[error("watching {} failed: {message}", .path.display())]
    Watch { path: PathBuf, message: String },
    #[error("{0}")]
    Usage(&'static str),
    /// A partial edit that cannot apply to the memory (spec/cli.md#edit).
    #[error("cannot edit `{key}`: {source}")]
    Edit {
        key: String,
        #[source]
        source: EditError,
    },
    /// A `link` or `unlink` that cannot apply (spec/cli.md#link).
    #[error("cannot change the links of `{key}`: {source}")]
    Link {
        key: String,
        #[source]
        source: LinkEditError,
    },
    #[error("nothing to edit in `{key}`: give at least one change")]
    NothingToEdit { key: String },
    #[error("cannot rename `{from}` to `{to}`: a memory with key `{to}` already exists")]
    Exists { from: String, to: String },
    /// A create-only write of a key that already holds a memory (spec/cli.md#write).
    #[error("memory `{key}` already exists; nothing was changed")]
    AlreadyExists { key: String },
    /// A compare-and-swap write whose expected hash is not the current version's
    /// (`actual` is `None` when there is no memory).
    #[error("memory `{key}` is not the version expected ({expected}): {}; nothing was changed", match .actual { Some(a) => format!("its hash is {a}"), None => "there is no such memory".to_string() })]
    HashMismatch {
        key: String,
        expected: String,
        actual: Option<String>,
    },
    /// A `read_only: true` state entry asked to change (spec/cli.md#state).
    #[error("state `{key}` is read-only (`read_only: true` in {file}); nothing was changed")]
    ReadOnly { key: String, file: String },
    /// A write, edit, rename or forget of a `read_only: true` memory (spec/memory-format.md).
    #[error("memory `{key}` is read-only (`read_only: true` in {file}); nothing was changed")]
    ReadOnlyMemory { key: String, file: String },
    /// A session with no events to compact or show.
    #[error("no timeline events with session `{session}`")]
    NoSession { session: String },
    #[error("cannot rename `{key}` to itself")]
    SameKey { key: String },
    /// An argument (of an MCP tool or request) with a value that cannot be used,
    /// named with what was expected.
    #[error("{arg}: {message}")]
    Argument { arg: String, message: String },
    /// A key of `.memdir/config.toml` the core reads (`index`) with a value that
    /// cannot be used, or a file that does not parse, with its line.
    #[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Config {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error(transparent)]
    Clock(#[from] crate::clock::BadNow),
    #[error("{}: {source}", .path.display())]
    Unixfs {
        path: PathBuf,
        #[source]
        source: Box<crate::ipfs::unixfs::UnixfsError>,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The class of the error, which decides the exit code.
    pub fn class(&self) -> Class {
        match self {
            Error::Usage(_)
            | Error::NothingToEdit { .. }
            | Error::Argument { .. }
            | Error::EmptyQuery
            | Error::Clock(_)
            | Error::Filter { .. } => Class::Usage,
            _ => Class::Input,
        }
    }

    /// A hint on what to do about the error that names no command or tool (those
    /// are the front end's words: `report::Failure::hint`), when there is one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Key(_) => Some(
                "use snake_case keys such as `user_role` (convention: <type>_<topic>)".into(),
            ),
            Error::Secret { .. } => Some(
                "memdir never stores credentials; describe the secret instead (\"the user keeps the API key in 1Password\")".into(),
            ),
            Error::NothingToEdit { .. } => Some(
                "pass append, prepend, replace_section, find_replace, or a field to change (name, description, type, tags, important, decay, source)".into(),
            ),
            Error::Exists { .. } => Some(
                "choose another key, or fold one memory into the other (edit) and forget the one left over".into(),
            ),
            Error::ReadOnly { file, .. } | Error::ReadOnlyMemory { file, .. } => Some(format!(
                "a person marked it read-only; edit {file} by hand to change or unmark it"
            )),
            Error::Foreign(e) => e.hint(),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
