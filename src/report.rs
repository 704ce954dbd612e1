//! Errors as people and programs see them: the `error:` / `caused by:` / `hint:`
//! lines, the JSON document and the exit code, shared by the CLI and the MCP server.
//!
//! Every wing keeps its own error type, its exit class and its hints; this module
//! sits above all of them, gathers them into one [`Failure`] and renders it the one
//! way memdir reports errors (spec/cli.md#exit-codes). It must not print: the CLI
//! prints the lines, the MCP server returns them as a tool result.

use serde_json::Value;

#[cfg(feature = "bench")]
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

/// The front end an error is shown in. Hints that say what to do next name what
/// that front end offers: `memdir list` on the command line, `list_memories` to an
/// MCP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The `memdir` command line.
    Cli,
    /// The MCP server's tool results, prompts and log lines.
    Mcp,
}

/// A message and an optional hint as the `error:` / `hint:` lines every memdir
/// error is shown as; for the front ends' own errors (a tool argument, a prompt or
/// a resource that does not exist) that are no wing's error.
pub fn lines(message: &str, hint: Option<&str>) -> String {
    match hint {
        Some(h) => format!("error: {message}\nhint: {h}"),
        None => format!("error: {message}"),
    }
}

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
    #[cfg(feature = "bench")]
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
            #[cfg(feature = "bench")]
            Failure::Bench(BenchError::Memory(e)) => e.class(),
            #[cfg(feature = "bench")]
            Failure::Bench(BenchError::Embed {
                source:
                    EmbedError::Config { .. } | EmbedError::ConfigFile { .. } | EmbedError::NotBuilt,
            }) => Class::Input,
            #[cfg(feature = "bench")]
            #[cfg(feature = "bench")]
            Failure::Bench(BenchError::Embed { .. }) => Class::Remote,
            #[cfg(feature = "bench")]
            Failure::Bench(_) => Class::Input,
            Failure::Embed(
                EmbedError::Config { .. } | EmbedError::ConfigFile { .. } | EmbedError::NotBuilt,
            ) => Class::Input,
            Failure::Embed(_) => Class::Remote,
        }
    }

    /// A hint on what to do about the error, when there is a useful one, in the
    /// words of `front`: a hint that names something to do names a command for the
    /// CLI and a tool for MCP (spec/cli.md#exit-codes, spec/mcp.md#errors).
    pub fn hint(&self, front: Front) -> Option<String> {
        if let Some(h) = self.front_hint(front) {
            return Some(h);
        }
        match self {
            Failure::Core(e) => e.hint(),
            Failure::Config(e) => e.hint(),
            #[cfg(feature = "sync")]
            Failure::Sync(e) => e.hint(),
            #[cfg(feature = "bench")]
            Failure::Bench(BenchError::Memory(e)) => e.hint(),
            #[cfg(feature = "bench")]
            Failure::Bench(_) => None,
            Failure::Embed(_) => Some(
                "check the [embeddings] table of .memdir/config.toml and that its endpoint answers; recall keeps working with keyword ranking"
                    .into(),
            ),
        }
    }

    /// The hints that name a command or a tool; `None` where the wing's own hint
    /// (which names neither) is the one.
    fn front_hint(&self, front: Front) -> Option<String> {
        match self {
            Failure::Core(e) => core_hint(e, front),
            #[cfg(feature = "bench")]
            Failure::Bench(BenchError::Memory(e)) => core_hint(e, front),
            Failure::Config(ConfigError::Read(e)) => core_hint(e, front),
            #[cfg(feature = "sync")]
            Failure::Sync(e) => sync_hint(e, front),
            _ => None,
        }
    }

    /// The error's report: its `error:` / `caused by:` / `hint:` lines (the CLI's
    /// stderr, an MCP tool error's text) and the JSON document (`--json`, an MCP
    /// tool error's structured content).
    pub fn report(&self, front: Front) -> (Vec<String>, Value) {
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
        let hint = self.hint(front);
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

/// The hints of core errors that name a command or a tool.
fn core_hint(e: &Error, front: Front) -> Option<String> {
    let cli = front == Front::Cli;
    Some(match e {
        Error::NotFound { .. } if cli => "`memdir list` shows the keys".into(),
        Error::NotFound { .. } => "`list_memories` shows the keys".into(),
        Error::Malformed { .. } if cli => "memdir will not overwrite a file it cannot read; fix the frontmatter by hand (see `memdir check`) or remove the file".into(),
        Error::Malformed { .. } => "memdir will not overwrite a file it cannot read; a person must fix its frontmatter by hand or remove the file".into(),
        Error::NoDir { path } if cli => format!(
            "create it with `memdir init --dir {}` (or pass --create), or point --dir / MEMDIR_DIR at an existing memory directory",
            path.display()
        ),
        Error::NoDir { .. } => "create it with `memdir init` (or start the server with --create), or start the server with --dir / MEMDIR_DIR naming an existing memory directory".into(),
        Error::Type { .. } if cli => "pass --type user|feedback|project|reference|state".into(),
        Error::Type { .. } => "pass `type`: user, feedback, project, reference or state".into(),
        Error::Edit { key, .. } if cli => format!(
            "nothing was written; read the memory (`memdir read {key}`) to see its text and headings"
        ),
        Error::Edit { key, .. } => format!(
            "nothing was written; read the memory (`read_memory` with key `{key}`) to see its text and headings"
        ),
        Error::Link { key, .. } if cli => format!(
            "nothing was written; `memdir graph {key} --out --depth 1` shows its links"
        ),
        Error::Link { key, .. } => {
            format!("nothing was written; `related` with key `{key}` shows its links")
        }
        Error::NoSession { .. } if cli => "`memdir sessions` lists the sessions".into(),
        Error::NoSession { .. } => {
            "`recent_activity` shows the events and the sessions they were noted in".into()
        }
        Error::AlreadyExists { key } if cli => format!(
            "pass --replace to replace it, or --expect HASH (the `hash` of `memdir read {key} --json`) to replace only that version"
        ),
        Error::AlreadyExists { .. } => {
            "pass replace: true to replace it, or expected_hash (the `hash` read_memory gives) to replace only that version".into()
        }
        Error::HashMismatch { key, .. } if cli => format!(
            "another write got there first; read it again (`memdir read {key} --json`) and decide"
        ),
        Error::HashMismatch { .. } => {
            "another write got there first; read it again (read_memory) and decide".into()
        }
        Error::PlanChanged { .. } => {
            "run `memdir prune --plan` again, check the new plan, then apply it".into()
        }
        _ => return None,
    })
}

/// The hints of sync errors that name a command or a tool.
#[cfg(feature = "sync")]
fn sync_hint(e: &SyncError, front: Front) -> Option<String> {
    let cli = front == Front::Cli;
    Some(match e {
        SyncError::Core(e) | SyncError::Config(ConfigError::Read(e)) => return core_hint(e, front),
        SyncError::RemoteAhead { .. } if cli => "run `memdir sync` to pull, merge and push; `push --force` publishes this directory over it (the other version stays pinned)".into(),
        SyncError::RemoteAhead { .. } => "call `sync` to pull, merge and push".into(),
        SyncError::HeadMoved { .. } if cli => {
            "run `memdir sync` to merge both versions and push the result".into()
        }
        SyncError::HeadMoved { .. } => "call `sync` to merge both versions and push the result".into(),
        SyncError::NoHead { .. } if cli => "pass the root CID: `memdir sync CID` (push prints it)".into(),
        SyncError::NoHead { .. } => "pass the root CID as `cid` (a push reports it)".into(),
        SyncError::Secret { path, .. } if cli => format!("memdir never publishes credentials: remove it from {path} (or `memdir forget` the memory), then push again; nothing was sent"),
        SyncError::Secret { path, .. } => format!("memdir never publishes credentials: remove it from {path} (or `forget` the memory), then sync again; nothing was sent"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_front_ends_own_commands() {
        // spec/mcp.md#errors: the CLI's hint names a command, the MCP server's a tool.
        let cases: Vec<(Error, &str, &str)> = vec![
            (
                Error::NotFound { key: "k".into() },
                "`memdir list`",
                "`list_memories`",
            ),
            (
                Error::NoDir { path: "m".into() },
                "--dir",
                "start the server",
            ),
            (Error::Type { value: "x".into() }, "--type", "`type`"),
            (
                Error::NoSession {
                    session: "s".into(),
                },
                "`memdir sessions`",
                "`recent_activity`",
            ),
        ];
        for (e, cli, mcp) in cases {
            let f = Failure::Core(e);
            let (c, m) = (f.hint(Front::Cli).unwrap(), f.hint(Front::Mcp).unwrap());
            assert!(c.contains(cli), "{c}");
            assert!(m.contains(mcp), "{m}");
            // Only a person can create the server's directory; elsewhere no command.
            assert!(!m.contains("memdir ") || m.contains("`memdir init`"), "{m}");
            let (lines, doc) = f.report(Front::Mcp);
            assert_eq!(lines.last().unwrap(), &format!("hint: {m}"));
            assert_eq!(doc["error"]["hint"], m.as_str());
        }
        // A hint that names neither is the same on both.
        let f = Failure::Core(Error::Exists {
            from: "a".into(),
            to: "b".into(),
        });
        assert_eq!(f.hint(Front::Cli), f.hint(Front::Mcp));
        assert!(f.hint(Front::Cli).is_some());
    }

    #[test]
    fn lines_are_the_error_and_hint_lines() {
        assert_eq!(
            lines("no prompt `x`", Some("try y")),
            "error: no prompt `x`\nhint: try y"
        );
        assert_eq!(lines("boom", None), "error: boom");
    }
}
