//! Benchmarks that measure memdir on public data sets.
//!
//! A benchmark reads its data from a path the caller gives (never from the project:
//! benchmark data keeps its own licence and stays outside the repository), builds
//! memory directories through memdir's own write path in temporary directories, and
//! returns a report; printing it is the CLI's job. Results are deterministic: clocks
//! are fixed and every order is total.

pub mod baseline;
pub mod chats;
pub mod locomo;
pub mod paraphrase;

use std::path::{Path, PathBuf};

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Building or reading a memory directory failed.
    #[error(transparent)]
    Memory(#[from] crate::error::Error),
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not valid JSON: {source}", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: {what} (is this the LoCoMo `locomo10.json`?)", .path.display())]
    Shape { path: PathBuf, what: String },
    /// The hybrid column's memories could not be embedded.
    #[error("embedding a benchmark store: {source}")]
    Embed {
        #[source]
        source: crate::embed::EmbedError,
    },
    /// A paraphrase set that does not hold together.
    #[error("{}: {what}", .path.display())]
    Set { path: PathBuf, what: String },
    #[error("a temporary directory could not be created: {source}")]
    TempDir {
        #[source]
        source: std::io::Error,
    },
}

/// Reads the JSON file at `path` into `T`: a read or parse failure names the file.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| BenchError::Json {
        path: path.to_path_buf(),
        source,
    })
}
