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
    /// A key that is not a valid memory key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A `type` that is not one of the five memory types.
    #[error("type `{value}` is not one of user, feedback, project, reference, state")]
    Type {
        /// The value given.
        value: String,
    },
    /// A `decay` that is neither `never` nor `<N>d`.
    #[error("decay `{value}` is not `never` or `<N>d` (for example 30d)")]
    Decay {
        /// The value given.
        value: String,
    },
    /// A `valid_until` that is not a `YYYY-MM-DD` date.
    #[error("valid_until `{value}` is not a date; expected YYYY-MM-DD")]
    ValidUntil {
        /// The value given.
        value: String,
    },
    /// A memory that names itself in `supersedes`.
    #[error("memory `{key}` cannot supersede itself")]
    SupersedesSelf {
        /// The memory's key.
        key: String,
    },
    /// A prune whose plan, recomputed under the lock, differs from the one shown.
    #[error("the prune plan changed since it was shown (now also: [{}]; no longer: [{}]); nothing was forgotten", .added.join(", "), .removed.join(", "))]
    PlanChanged {
        /// Keys the plan now also holds.
        added: Vec<String>,
        /// Keys the plan no longer holds.
        removed: Vec<String>,
    },
    /// A required field left empty.
    #[error("`{field}` must not be empty")]
    Empty {
        /// The field's name.
        field: &'static str,
    },
    /// A write refused because a field looks like it holds a credential.
    #[error("refused to store {}: the {field} contains what looks like {}", .key, .kind.describe())]
    Secret {
        /// The memory's key.
        key: String,
        /// The field the credential was found in.
        field: &'static str,
        /// What kind of credential it looks like (never the value).
        kind: SecretKind,
    },
    /// No memory has this key.
    #[error("no memory with key `{key}`")]
    NotFound {
        /// The key asked for.
        key: String,
    },
    /// A memory file whose frontmatter does not parse.
    #[error("{}: {source}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with its frontmatter.
        #[source]
        source: FrontmatterError,
    },
    /// A timeline event that cannot be encoded or decoded.
    #[error(transparent)]
    Event(#[from] EventError),
    /// An I/O error on a file or folder.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file over its size limit.
    #[error("{}: {size} bytes is over the limit of {limit} bytes", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// A file that is not valid UTF-8.
    #[error("{}: not valid UTF-8 text", .path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// A symbolic link where memdir expects a file or folder; links are never followed.
    #[error("{}: is a symbolic link; memdir does not follow links", .path.display())]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The memory directory does not exist.
    #[error("memory directory {} does not exist", .path.display())]
    NoDir {
        /// The directory.
        path: PathBuf,
    },
    /// A path that should be a directory and is not.
    #[error("{}: not a directory", .path.display())]
    NotADir {
        /// The path.
        path: PathBuf,
    },
    /// A `memory/0.1` blob that cannot be read or written.
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// A foreign import input refused as a whole (spec/import-formats.md).
    #[error(transparent)]
    Foreign(#[from] crate::exchange::foreign::ForeignError),
    /// A search with an empty query.
    #[error("the query is empty")]
    EmptyQuery,
    /// A filter value that cannot be used, named by the flag or argument it came from
    /// (`--since`, `since`); `arg` is empty when the filter came from the library.
    #[error("{}{source}", if arg.is_empty() { String::new() } else { format!("{arg}: ") })]
    Filter {
        /// The flag or argument the value came from (empty for the library).
        arg: String,
        /// What is wrong with the value.
        #[source]
        source: FilterError,
    },
    /// A memory body over the size limit.
    #[error("the body is {size} bytes, over the limit of {limit} bytes")]
    BodyTooLarge {
        /// The body's size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    #[error(
        "the `{kind}` event is {size} bytes, over the limit of {limit} bytes per timeline event"
    )]
    /// A timeline event over the size limit of one event.
    EventTooLarge {
        /// The event's kind.
        kind: String,
        /// Its encoded size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// A timeline file (or the folder) that an import must read could not be read.
    #[error("{}: {message}; import reads the whole timeline before writing (forgotten keys must be known), so nothing was written", .path.display())]
    TimelineUnreadable {
        /// The file or folder.
        path: PathBuf,
        /// Why it could not be read.
        message: String,
    },
    /// Watching the directory for changes failed.
    #[error("watching {} failed: {message}", .path.display())]
    Watch {
        /// The directory watched.
        path: PathBuf,
        /// The watcher's error.
        message: String,
    },
    /// A command used wrongly; the message says how.
    #[error("{0}")]
    Usage(&'static str),
    /// A partial edit that cannot apply to the memory (spec/cli.md#edit).
    #[error("cannot edit `{key}`: {source}")]
    Edit {
        /// The memory's key.
        key: String,
        /// What keeps the edit from applying.
        #[source]
        source: EditError,
    },
    /// A `link` or `unlink` that cannot apply (spec/cli.md#link).
    #[error("cannot change the links of `{key}`: {source}")]
    Link {
        /// The memory's key.
        key: String,
        /// What keeps the link change from applying.
        #[source]
        source: LinkEditError,
    },
    /// An edit that asks for no change.
    #[error("nothing to edit in `{key}`: give at least one change")]
    NothingToEdit {
        /// The memory's key.
        key: String,
    },
    /// A rename onto a key that already holds a memory.
    #[error("cannot rename `{from}` to `{to}`: a memory with key `{to}` already exists")]
    Exists {
        /// The key renamed.
        from: String,
        /// The key asked for, already taken.
        to: String,
    },
    /// A create-only write of a key that already holds a memory (spec/cli.md#write).
    #[error("memory `{key}` already exists; nothing was changed")]
    AlreadyExists {
        /// The memory's key.
        key: String,
    },
    /// A compare-and-swap write whose expected hash is not the current version's
    /// (`actual` is `None` when there is no memory).
    #[error("memory `{key}` is not the version expected ({expected}): {}; nothing was changed", match .actual { Some(a) => format!("its hash is {a}"), None => "there is no such memory".to_string() })]
    HashMismatch {
        /// The memory's key.
        key: String,
        /// The hash the write expected.
        expected: String,
        /// The current version's hash, if there is a memory.
        actual: Option<String>,
    },
    /// A `read_only: true` state entry asked to change (spec/cli.md#state).
    #[error("state `{key}` is read-only (`read_only: true` in {file}); nothing was changed")]
    ReadOnly {
        /// The state entry's key.
        key: String,
        /// Its file.
        file: String,
    },
    /// A write, edit, rename or forget of a `read_only: true` memory (spec/memory-format.md).
    #[error("memory `{key}` is read-only (`read_only: true` in {file}); nothing was changed")]
    ReadOnlyMemory {
        /// The memory's key.
        key: String,
        /// Its file.
        file: String,
    },
    /// A session with no events to compact or show.
    #[error("no timeline events with session `{session}`")]
    NoSession {
        /// The session asked for.
        session: String,
    },
    /// A rename of a key to itself.
    #[error("cannot rename `{key}` to itself")]
    SameKey {
        /// The key.
        key: String,
    },
    /// An argument (of an MCP tool or request) with a value that cannot be used,
    /// named with what was expected.
    #[error("{arg}: {message}")]
    Argument {
        /// The argument's name.
        arg: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// A key of `.memdir/config.toml` the core reads (`index`) with a value that
    /// cannot be used, or a file that does not parse, with its line.
    #[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// The line, when the error has one.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A `MEMDIR_NOW` that is not a time.
    #[error(transparent)]
    Clock(#[from] crate::clock::BadNow),
    /// A directory that cannot be hashed as a UnixFS tree.
    #[error("{}: {source}", .path.display())]
    Unixfs {
        /// The directory.
        path: PathBuf,
        /// What went wrong building the tree.
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

/// The result of memdir's library calls: the core [`Error`] unless a wing has its own.
pub type Result<T, E = Error> = std::result::Result<T, E>;
