//! A provider, a mode and a key, ready for push and pull; the reports they return.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use cid::Cid;
use serde::Serialize;

use crate::exchange::merge::Strategy;
use crate::provider::{Blocking, Progress, ProviderError};
use crate::sync::config::Mode;
use crate::sync::error::Result;
use std::borrow::Cow;

use crate::engine::Memory;
use crate::ipfs::car;
use crate::ipfs::unixfs::{Dag, Node};
use crate::sync::error::SyncError;
use crate::sync::listing::build;
use crate::sync::plan::Decision;
use crate::sync::seal::Key;
use crate::sync::seal::{self, Plain};

/// Plain or sealed: what leaves this device. An `encrypted-ipfs` directory holds
/// its key here, so a push cannot forget to seal (spec/sync.md#encrypted-ipfs).
pub enum Seal {
    /// `ipfs`: the plaintext DAG is published.
    Plain,
    /// `encrypted-ipfs`: the CAR is sealed to this key and published as one blob.
    Sealed(Key),
}

impl Seal {
    /// The sync mode this seal stands for.
    pub fn mode(&self) -> Mode {
        match self {
            Seal::Plain => Mode::Ipfs,
            Seal::Sealed(_) => Mode::EncryptedIpfs,
        }
    }
}

/// Where and how to sync.
pub struct Remote<'a> {
    /// The provider (with its own runtime).
    pub provider: &'a Blocking,
    /// Plain or sealed to a key.
    pub seal: &'a Seal,
    /// The head pointer's name on the provider.
    pub channel: &'a str,
    /// Pins kept per provider; older ones are removed after a push.
    pub keep_versions: u32,
    /// Transfer progress.
    pub progress: &'a dyn Progress,
}

impl Remote<'_> {
    pub(super) fn encrypted(&self) -> bool {
        matches!(self.seal, Seal::Sealed(_))
    }

    pub(super) fn key(&self) -> Result<&Key> {
        match self.seal {
            Seal::Sealed(key) => Ok(key),
            Seal::Plain => Err(SyncError::NoKey {
                path: "(no key given)".into(),
            }),
        }
    }

    /// The fingerprint of the key a push seals to and a pull opens with; `None` in
    /// `ipfs` mode.
    pub(super) fn key_fingerprint(&self) -> Option<String> {
        match self.seal {
            Seal::Sealed(key) => Some(key.fingerprint()),
            Seal::Plain => None,
        }
    }

    /// The provider's head, `None` when nothing is published or the provider keeps
    /// no head.
    pub(super) fn head(&self) -> Result<Option<Cid>> {
        match self.provider.head(self.channel) {
            Ok(h) => Ok(h),
            Err(ProviderError::Unsupported { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn mode(&self) -> Mode {
        self.seal.mode()
    }

    /// What leaves the device for one push, decided by the remote's [`Seal`] alone:
    /// the plaintext DAG's CAR in `ipfs` mode, the sealed blob (with the version's
    /// lineage under the MAC) in `encrypted-ipfs` mode. Push sends only what this
    /// returns, so an encrypted directory cannot put plaintext on the network.
    pub(super) fn outgoing<'a>(
        &self,
        dag: &'a Dag,
        plain_car: &'a [u8],
        lineage: &[Cid],
        mem: &Memory,
    ) -> Result<Outgoing<'a>> {
        match self.seal {
            Seal::Plain => Ok(Outgoing {
                root: dag.root,
                car: Cow::Borrowed(plain_car),
                dag: Some(dag),
            }),
            Seal::Sealed(key) => {
                let sealed_lineage: Vec<Cid> =
                    lineage.iter().take(seal::MAX_LINEAGE).copied().collect();
                let plain = Plain::new(dag.root, plain_car.to_vec()).with_lineage(sealed_lineage);
                let sealed = seal::seal(&plain, key).map_err(|source| SyncError::Seal {
                    root: dag.root,
                    source,
                })?;
                let blob = build(&Node::File(sealed.into_bytes()), mem)?;
                Ok(Outgoing {
                    root: blob.root,
                    car: Cow::Owned(car::car_bytes(&blob)),
                    dag: None,
                })
            }
        }
    }
}

/// The bytes one push sends, made only by [`Remote::outgoing`].
pub(super) struct Outgoing<'a> {
    /// The root on the network (the sealed blob's in `encrypted-ipfs` mode).
    pub root: Cid,
    /// The whole CAR.
    pub car: Cow<'a, [u8]>,
    /// The plaintext DAG, so that a delta can be cut from it; `None` when sealed.
    pub dag: Option<&'a Dag>,
}

/// What `push` did.
#[derive(Debug, Clone, Serialize)]
pub struct PushReport {
    /// The provider's name.
    pub provider: String,
    /// The sync mode.
    pub mode: Mode,
    /// The plaintext root of the directory.
    pub root: String,
    /// The root on the network (the sealed blob's in `encrypted-ipfs` mode).
    pub network_root: String,
    /// Nothing was sent: the provider already holds this version as its head.
    pub up_to_date: bool,
    /// Bytes sent.
    pub car_bytes: u64,
    /// Size of the complete CAR (what a first push sends).
    pub full_car_bytes: u64,
    /// Whether only blocks the provider lacked were sent.
    pub delta: bool,
    /// Whether the provider's head pointer now names this version.
    pub head_updated: bool,
    /// Older roots unpinned (beyond `keep_versions`).
    pub unpinned: Vec<String>,
    /// What did not stop the push but should be known.
    pub warnings: Vec<String>,
}

/// A file from the remote side that was not written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    /// The file's path in the directory.
    pub path: String,
    /// Why it was left out.
    pub reason: String,
}

/// What `pull` did (or would do, with `dry_run`).
#[derive(Debug, Clone, Serialize)]
pub struct PullReport {
    /// The provider's name.
    pub provider: String,
    /// The sync mode.
    pub mode: Mode,
    /// How local and remote versions are reconciled.
    pub strategy: Strategy,
    /// Nothing was written: the report is the plan.
    pub dry_run: bool,
    /// The CID asked for.
    pub root: String,
    /// The plaintext root it holds, as memdir encodes it (unixfs-v1-2025): in `ipfs`
    /// mode equal to `root` unless another tool made the DAG.
    pub plain_root: String,
    /// In `ipfs` mode, `root` was made by another tool (other CID version, chunking,
    /// sharding, metadata...) and was re-encoded under the profile to `plain_root`,
    /// which is what the sync state records as the base (spec/sync.md#foreign-dags).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub re_encoded: bool,
    /// Whether a recorded base took part (otherwise a first sync: two-way).
    pub had_base: bool,
    /// The remote is a version this directory already passed: nothing was applied
    /// (spec/sync.md#lineage).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub behind: bool,
    /// The remote does not descend from this directory's base (a lost race, a forced
    /// push, a restored backup): merged without deleting or reverting anything here
    /// but recorded forgets (spec/sync.md#tombstones).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub diverged: bool,
    /// One line per path whose versions differed.
    pub decisions: Vec<Decision>,
    /// Files written, deleted and conflict copies saved.
    pub written: usize,
    /// Files deleted.
    pub deleted: usize,
    /// Conflict copies saved by this pull.
    pub conflicts: Vec<ConflictCopy>,
    /// Every conflict open after the pull (a dry run: that it would leave), this
    /// pull's and those saved before, here or on another device
    /// (spec/sync.md#conflict-copies).
    pub open_conflicts: Vec<ConflictCopy>,
    /// Files left out, and why.
    pub skipped: Vec<SkippedFile>,
    /// What did not stop the pull but should be known.
    pub warnings: Vec<String>,
}

/// A losing version saved by a merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConflictCopy {
    /// The file whose version lost.
    pub path: String,
    /// Where the losing version was saved.
    pub copy: String,
}

/// What `sync` did.
#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    /// The head pulled, if the provider had one this directory had not synced.
    pub pulled: Option<PullReport>,
    /// The provider's head when it was behind (a version this directory already
    /// passed): not applied, pushed over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<String>,
    /// Rounds of pull and push it took (more than one when another device moved the
    /// head in between).
    pub rounds: u32,
    /// The push that ended the sync.
    pub pushed: PushReport,
    /// Every conflict open after the sync (spec/sync.md#conflict-copies).
    pub open_conflicts: Vec<ConflictCopy>,
}

/// The conflicts open in `mem`'s directory now.
pub(crate) fn open_conflicts(
    mem: &crate::engine::Memory,
) -> crate::error::Result<Vec<ConflictCopy>> {
    Ok(mem
        .conflicts()?
        .into_iter()
        .map(|(path, copy)| ConflictCopy { path, copy })
        .collect())
}
