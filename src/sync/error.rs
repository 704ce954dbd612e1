//! The sync wing's error: why a push, pull or sync refused or failed.
//!
//! It wraps the errors of what sync composes (the core, providers, the
//! configuration, key files) so that one type travels up to `report`; the core
//! error never knows about it.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use cid::Cid;

use crate::error::{Class, Error};
use crate::provider::ProviderError;
use crate::sync::config::ConfigError;
use crate::sync::seal::KeyFileError;

/// Results of the sync wing.
pub(crate) type Result<T, E = SyncError> = std::result::Result<T, E>;
use crate::ipfs::car::CarError;
use crate::ipfs::unixfs::UnixfsError;
use crate::sync::seal::SealError;

/// Why a sync operation refused or failed (besides provider and file errors).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The memory directory itself failed (a file, the lock, a bad memory).
    #[error(transparent)]
    Core(#[from] Error),
    /// A remote provider failed (exit 3) or delivered data that did not verify (exit 4).
    #[error(transparent)]
    Provider(Box<ProviderError>),
    /// `.memdir/config.toml` is unreadable or invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The encrypted-ipfs key file could not be made or read.
    #[error(transparent)]
    KeyFile(#[from] KeyFileError),
    /// The provider's head moved since our last sync: pushing would hide those changes.
    #[error(
        "{provider} has {head} as the latest version of channel `{channel}`, which this directory has not pulled (last synced: {})",
        .base.map(|c| c.to_string()).unwrap_or_else(|| "never".into())
    )]
    RemoteAhead {
        /// The provider's name.
        provider: String,
        /// The channel.
        channel: String,
        /// The provider's latest version.
        head: Cid,
        /// The version this directory last synced, if it ever did.
        base: Option<Cid>,
    },
    /// Another device moved the head between our read and our swap: it was left as it
    /// is (spec/sync.md#heads).
    #[error(
        "another device pushed to {provider} channel `{channel}` at the same time: the head moved from {} to {} before ours could, so {pushed} was uploaded but not published and nothing was recorded here",
        .read.map(|c| c.to_string()).unwrap_or_else(|| "(none)".into()),
        .found.map(|c| c.to_string()).unwrap_or_else(|| "(none)".into())
    )]
    HeadMoved {
        /// The provider's name.
        provider: String,
        /// The channel.
        channel: String,
        /// The head as read before the swap.
        read: Option<Cid>,
        /// The head found at the swap.
        found: Option<Cid>,
        /// The root uploaded but not published.
        pushed: Cid,
    },
    /// The downloaded tree holds what a memory directory may not (or what this one
    /// cannot take): refused before anything is applied.
    #[error("{root} is not a memory directory memdir can apply: {path}: {reason}")]
    Foreign {
        /// The downloaded root.
        root: Cid,
        /// The path in the tree that is refused.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// The directory holds a name or shape no other device would pull.
    #[error("refused to push: {path}: {reason}, which no other device would pull")]
    Unsyncable {
        /// The path in the directory.
        path: String,
        /// Why no other device would pull it.
        reason: String,
    },
    /// A plain pull found a file where a directory was expected.
    #[error("{root} is a single file, not a memory directory")]
    NotADirectory {
        /// The downloaded root.
        root: Cid,
    },
    /// An encrypted pull found a directory where the sealed file was expected.
    #[error("{root} is a directory, not a sealed memdir blob")]
    NotSealed {
        /// The downloaded root.
        root: Cid,
    },
    /// The downloaded DAG is not a UnixFS tree memdir reads (decoded strictly in
    /// `encrypted-ipfs`, as any tool's DAG in `ipfs` mode: spec/sync.md#foreign-dags).
    #[error("{root} is not a UnixFS DAG memdir can apply: {source}")]
    Decode {
        /// The downloaded root.
        root: Cid,
        /// Why it does not decode.
        #[source]
        source: Box<UnixfsError>,
    },
    /// The sealed blob did not open or did not verify.
    #[error("{root}: {source}")]
    Open {
        /// The downloaded root.
        root: Cid,
        /// Why it did not open.
        #[source]
        source: SealError,
    },
    /// Sealing the plaintext CAR for an encrypted push failed.
    #[error("sealing {root} for an encrypted push failed: {source}")]
    Seal {
        /// The root of the plaintext CAR.
        root: Cid,
        /// Why sealing failed.
        #[source]
        source: SealError,
    },
    /// The CAR inside a sealed blob did not verify against its root.
    #[error("the CAR sealed in {root} failed verification: {source}")]
    InnerCar {
        /// The root of the sealed blob.
        root: Cid,
        /// Why the CAR did not verify.
        #[source]
        source: CarError,
    },
    /// `encrypted-ipfs` without a key.
    #[error("encrypted-ipfs needs a key file and none was found at {path}")]
    NoKey {
        /// Where the key file was looked for.
        path: String,
    },
    /// No provider named on the command line or in the configuration.
    #[error(
        "no provider: pass --provider, or set one with `memdir init --mode ipfs --provider NAME`"
    )]
    NoProvider,
    /// `sync` without a CID on a provider that keeps no head pointer.
    #[error("{provider} keeps no head pointer, so `sync` cannot find the latest version")]
    NoHead {
        /// The provider's name.
        provider: String,
    },
    /// The state file is unreadable.
    #[error("{path}: {message}")]
    State {
        /// The state file.
        path: String,
        /// Why it is unreadable.
        message: String,
    },
    /// A file about to be pushed holds what looks like a credential.
    #[error("refused to push: {path} contains what looks like {}", .kind.describe())]
    Secret {
        /// The file.
        path: String,
        /// What kind of credential it looks like (never the value).
        kind: crate::memory::secrets::SecretKind,
    },
}

impl SyncError {
    /// Exit class: refused operations are input or usage, bad data is integrity.
    pub fn class(&self) -> Class {
        match self {
            SyncError::Core(e) => e.class(),
            SyncError::Provider(e) => e.class(),
            SyncError::Config(e) => e.class(),
            SyncError::KeyFile(_) => Class::Input,
            SyncError::RemoteAhead { .. }
            | SyncError::HeadMoved { .. }
            | SyncError::Unsyncable { .. }
            | SyncError::State { .. }
            | SyncError::Secret { .. }
            | SyncError::Seal { .. } => Class::Input,
            SyncError::NoKey { .. } | SyncError::NoProvider | SyncError::NoHead { .. } => {
                Class::Usage
            }
            SyncError::NotADirectory { .. }
            | SyncError::Foreign { .. }
            | SyncError::NotSealed { .. }
            | SyncError::Decode { .. }
            | SyncError::Open { .. }
            | SyncError::InnerCar { .. } => Class::Integrity,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            SyncError::Core(e) => return e.hint(),
            // These name a command or a tool: `report` words them for its front end.
            SyncError::RemoteAhead { .. }
            | SyncError::HeadMoved { .. }
            | SyncError::NoHead { .. }
            | SyncError::Secret { .. } => return None,
            SyncError::Provider(e) => return e.hint(),
            SyncError::Config(e) => return e.hint(),
            SyncError::KeyFile(KeyFileError::Exists { .. }) => "memdir never overwrites a key: pass another --out, or move the old key away (and keep it if anything was synced with it)".into(),
            SyncError::KeyFile(KeyFileError::InsideMemoryDir { .. }) => "keep the key outside the memory directory: the directory is synced, the key must never be".into(),
            SyncError::KeyFile(_) => return None,
            SyncError::Unsyncable { .. } => "rename or remove it (a memory key is a-z, 0-9, `_`, `-`), then push again; nothing was sent".into(),
            SyncError::NotADirectory { .. } => "if it was pushed in encrypted-ipfs mode, pull with --mode encrypted-ipfs; nothing was changed".into(),
            SyncError::NotSealed { .. } => "it looks like a plain push: pull with --mode ipfs; nothing was changed".into(),
            SyncError::Foreign { .. } => "it was refused before anything was written; nothing was changed. If it is yours, fix the name on the device that pushed it and push again".into(),
            SyncError::Decode { .. } | SyncError::InnerCar { .. } => "the data was rejected before anything was written; nothing was changed".into(),
            SyncError::Seal { .. } => "nothing was sent; the directory is over what one sealed blob can hold".into(),
            SyncError::Open { source: SealError::Decrypt, .. } => "it was sealed to another key, or altered; check MEMDIR_KEY_FILE / key_file in .memdir/config.toml. After a key rotation on another device, copy the new key file here and point one of them at it. Nothing was changed".into(),
            SyncError::Open { .. } => "it was sealed to another key, or altered; check MEMDIR_KEY_FILE / key_file in .memdir/config.toml. Nothing was changed".into(),
            SyncError::NoKey { .. } => "create one with `memdir keygen`, or copy the key file from the device that pushed and point MEMDIR_KEY_FILE at it".into(),
            SyncError::NoProvider => "providers: kubo, pinata, filebase, storacha, folder (and gateway for pulls)".into(),
            SyncError::State { .. } => "the file is memdir's own; delete it to start over (the next sync treats every difference as new, keeping both versions of a conflict)".into(),
        })
    }
}

impl From<ProviderError> for SyncError {
    fn from(e: ProviderError) -> Self {
        SyncError::Provider(Box::new(e))
    }
}
