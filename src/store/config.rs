//! `.memdir/config.toml`, read in one place. The file is read through the backend
//! (bounded, never followed through a link; the `none` mode's map holds none unless
//! written), parsed as TOML once, and each wing is handed its part: `sync::config` the
//! top-level keys, `embed` the `[embeddings]` table. A file that does not parse is the
//! same error, naming the file and line, for every wing that reads it.
//!
//! Must not: interpret a wing's keys (each wing validates its own).

use std::path::{Path, PathBuf};

use crate::error::{Class, Error};
use crate::memory::layout::{CONFIG_FILE, MAX_CONFIG};
use crate::store::Backend;

/// What to do about an invalid configuration file.
const CONFIG_HINT: &str = "keys: mode (local, ipfs, encrypted-ipfs), provider, channel, keep_versions, key_file, index (agent, memdir), and the [embeddings] table; `memdir init --help` shows how to set them";

/// The configuration file as read: its text (wings that point at a line need it)
/// and its TOML table.
#[derive(Debug, Clone)]
pub(crate) struct ConfigFile {
    /// The file, for messages.
    pub path: PathBuf,
    pub text: String,
    pub table: toml::Table,
}

/// A configuration file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is not valid: a TOML error, an unknown key or a bad value.
    #[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// The configuration file.
        path: PathBuf,
        /// The line, when the error has one.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] Error),
}

impl ConfigError {
    /// The exit class: a read failure keeps its own, an invalid file is bad input.
    pub fn class(&self) -> Class {
        match self {
            ConfigError::Read(e) => e.class(),
            ConfigError::Invalid { .. } => Class::Input,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            ConfigError::Read(e) => e.hint(),
            ConfigError::Invalid { .. } => Some(CONFIG_HINT.into()),
        }
    }

    /// A TOML error in `text` (the file at `path`), at the line its span starts on.
    pub fn toml(text: &str, path: &Path, e: &toml::de::Error) -> ConfigError {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message: e.message().trim().to_string(),
        }
    }
}

/// Reads and parses the directory's configuration: `Ok(None)` when there is none.
pub(crate) fn read(backend: &Backend) -> Result<Option<ConfigFile>, ConfigError> {
    let Some(text) = backend.read_text(CONFIG_FILE, MAX_CONFIG)? else {
        return Ok(None);
    };
    let path = backend.display_path(CONFIG_FILE);
    let table =
        toml::from_str::<toml::Table>(&text).map_err(|e| ConfigError::toml(&text, &path, &e))?;
    Ok(Some(ConfigFile { path, text, table }))
}

impl ConfigFile {
    /// The value under `embeddings`, when there is one: the embed wing checks that it
    /// is a table and validates its keys.
    pub(crate) fn embeddings(&self) -> Option<&toml::Value> {
        self.table.get("embeddings")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem_with(text: &str) -> Backend {
        let b = Backend::Mem(std::sync::Mutex::new(Default::default()));
        b.write_atomic(CONFIG_FILE, text.as_bytes()).unwrap();
        b
    }

    #[test]
    fn a_missing_file_is_none() {
        let b = Backend::Mem(std::sync::Mutex::new(Default::default()));
        assert!(read(&b).unwrap().is_none());
    }

    #[test]
    fn the_table_and_its_sections_are_handed_out() {
        let f = read(&mem_with(
            "mode = \"ipfs\"\n[embeddings]\nprovider = \"builtin\"\n",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(f.table["mode"].as_str(), Some("ipfs"));
        let e = f.embeddings().and_then(|v| v.as_table()).unwrap();
        assert_eq!(e["provider"].as_str(), Some("builtin"));
    }

    #[test]
    fn a_file_that_does_not_parse_names_its_line() {
        // A stray line, a duplicate table, an integer over i64 (spec/sync.md#configuration).
        for (text, line) in [
            ("mode = \"local\"\nstray line\n", 2),
            ("[embeddings]\nurl = \"a\"\n[embeddings]\n", 3),
            ("keep_versions = 99999999999999999999\n", 1),
        ] {
            let e = read(&mem_with(text)).unwrap_err();
            match &e {
                ConfigError::Invalid { line: l, .. } => assert_eq!(*l, Some(line), "{text:?}: {e}"),
                other => panic!("{other:?}"),
            }
            assert!(
                e.to_string().contains(&format!("config.toml:{line}: ")),
                "{e}"
            );
        }
    }
}
