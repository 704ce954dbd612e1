//! Errors as people and programs see them: the `error:` / `caused by:` / `hint:`
//! lines, the JSON document and the exit code, shared by the CLI and the MCP server.
//!
//! Every wing keeps its own error type, its exit class and its hints; this module
//! sits above all of them, gathers them into one [`Failure`] and renders it the one
//! way memdir reports errors (spec/cli.md#exit-codes). It must not print: the CLI
//! prints the lines, the MCP server returns them as a tool result.

use serde_json::Value;

use crate::bench::BenchError;
use crate::embed::EmbedError;
use crate::error::{Class, Error};
#[cfg(feature = "sync")]
use crate::provider::ProviderError;
#[cfg(feature = "sync")]
use crate::sync::SyncError;
use crate::sync::config::ConfigError;
#[cfg(feature = "sync")]
use crate::sync::seal::KeyFileError;

/// An error of any wing, as it reaches a front end.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The memory directory itself.
    #[error(transparent)]
    Core(#[from] Error),
    /// `.memdir/config.toml`.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Push, pull, sync, status, keys and providers.
    #[cfg(feature = "sync")]
    #[error(transparent)]
    Sync(Box<SyncError>),
    /// A benchmark run.
    #[error(transparent)]
    Bench(#[from] BenchError),
    /// `memdir index --embeddings` (a query never fails for embeddings).
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// Core errors of the parts below the engine reach a front end as core errors.
macro_rules! core_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Failure {
            fn from(e: $t) -> Self {
                Failure::Core(e.into())
            }
        }
    )*};
}
core_from!(
    crate::memory::KeyError,
    crate::memory::timeline::EventError,
    crate::exchange::blob::BlobError,
    crate::exchange::foreign::ForeignError,
    crate::clock::BadNow
);

#[cfg(feature = "sync")]
impl From<SyncError> for Failure {
    fn from(e: SyncError) -> Self {
        // A sync error that is only a wrapped core error reports as the core error.
        match e {
            SyncError::Core(e) => Failure::Core(e),
            e => Failure::Sync(Box::new(e)),
        }
    }
}

#[cfg(feature = "sync")]
impl From<ProviderError> for Failure {
    fn from(e: ProviderError) -> Self {
        SyncError::from(e).into()
    }
}

#[cfg(feature = "sync")]
impl From<KeyFileError> for Failure {
    fn from(e: KeyFileError) -> Self {
        SyncError::from(e).into()
    }
}

impl Failure {
    /// The class of the error, which decides the exit code.
    pub fn class(&self) -> Class {
        match self {
            Failure::Core(e) => e.class(),
            Failure::Config(e) => e.class(),
            #[cfg(feature = "sync")]
            Failure::Sync(e) => e.class(),
            Failure::Bench(BenchError::Memory(e)) => e.class(),
            Failure::Bench(BenchError::Embed {
                source: EmbedError::Config { .. } | EmbedError::NotBuilt,
            }) => Class::Input,
            Failure::Bench(BenchError::Embed { .. }) => Class::Remote,
            Failure::Bench(_) => Class::Input,
            Failure::Embed(EmbedError::Config { .. } | EmbedError::NotBuilt) => Class::Input,
            Failure::Embed(_) => Class::Remote,
        }
    }

    /// A hint on what to do about the error, when there is a useful one.
    pub fn hint(&self) -> Option<String> {
        match self {
            Failure::Core(e) => e.hint(),
            Failure::Config(e) => e.hint(),
            #[cfg(feature = "sync")]
            Failure::Sync(e) => e.hint(),
            Failure::Bench(BenchError::Memory(e)) => e.hint(),
            Failure::Bench(_) => None,
            Failure::Embed(_) => Some(
                "see spec/ranking.md#hybrid-recall; recall keeps working with keyword ranking"
                    .into(),
            ),
        }
    }

    /// The error's report: its `error:` / `caused by:` / `hint:` lines (the CLI's
    /// stderr, an MCP tool error's text) and the JSON document (`--json`, an MCP
    /// tool error's structured content).
    pub fn report(&self) -> (Vec<String>, Value) {
        let message = self.to_string();
        let mut lines = vec![format!("error: {message}")];
        let mut causes = Vec::new();
        let mut src = std::error::Error::source(self);
        while let Some(s) = src {
            let msg = s.to_string();
            // A transparent wrapper repeats its source's message; say it once.
            if !message.contains(&msg) {
                lines.push(format!("caused by: {msg}"));
            }
            causes.push(msg);
            src = s.source();
        }
        let hint = self.hint();
        if let Some(h) = &hint {
            lines.push(format!("hint: {h}"));
        }
        let doc = serde_json::json!({"error": {
            "message": message,
            "causes": causes,
            "hint": hint,
            "exit_code": self.class().exit_code(),
        }});
        (lines, doc)
    }
}
