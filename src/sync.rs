//! Push, pull, sync and status: the memory directory on a provider, by content address.
//!
//! Owns the sync state under `.memdir/sync/` (the last synced root and its files, the
//! roots pushed to each provider), the order of operations that keeps a failure from
//! changing anything, and the executor that applies a [`crate::sync_plan`] plan to the
//! directory under the store's lock. It must not decide merges (the planner does),
//! speak HTTP (the providers do) or print (the CLI does).
//!
//! Every download is verified block by block, decoded strictly and planned before the
//! first byte of the directory changes; in `encrypted-ipfs` mode the sealed blob is
//! opened, its MAC checked and the inner CAR verified against the root it names first.
//! A failure before that point leaves the directory and the state as they were. The
//! writes themselves are one atomic rename per file and the new base is recorded only
//! after the last one: if the process dies half way, the next `sync` plans again
//! against the old base, and the files already written compare equal to the remote.
//!
//! `spec/sync.md` is the user-facing description.

// Errors carry CIDs by value; see the note in `crate::car`.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use cid::Cid;
use serde::{Deserialize, Serialize};

use crate::car::{self, CarError, CarLimits};
use crate::config::Mode;
use crate::engine::Memory;
use crate::error::{Class, Error, Result};
use crate::merge::Strategy;
use crate::provider::{Blocking, Blocks, Progress, ProviderError, Receipt};
use crate::seal::{self, Key, Plain, SealError, Sealed};
use crate::store::Backend;
use crate::sync_plan::{self, Decision, FileClass, Listing, Op};
use crate::unixfs::{self, Dag, Node, UnixfsError};

/// The sync state, relative to the memory directory.
pub const STATE_FILE: &str = ".memdir/sync/state.json";

/// Folder of the base CAR (`base-<root>.car`: the files of the last synced root).
pub const SYNC_DIR: &str = ".memdir/sync";

const STATE_VERSION: u32 = 1;
const MAX_STATE: u64 = 16 << 20;

/// Why a sync operation refused or failed (besides provider and file errors).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The provider's head moved since our last sync: pushing would hide those changes.
    #[error(
        "{provider} has {head} as the latest version of channel `{channel}`, which this directory has not pulled (last synced: {})",
        .base.map(|c| c.to_string()).unwrap_or_else(|| "never".into())
    )]
    RemoteAhead {
        provider: String,
        channel: String,
        head: Cid,
        base: Option<Cid>,
    },
    /// A plain pull found a file where a directory was expected.
    #[error("{root} is a single file, not a memory directory")]
    NotADirectory { root: Cid },
    /// An encrypted pull found a directory where the sealed file was expected.
    #[error("{root} is a directory, not a sealed memdir blob")]
    NotSealed { root: Cid },
    /// The downloaded DAG did not decode strictly.
    #[error("{root} failed strict decoding: {source}")]
    Decode {
        root: Cid,
        #[source]
        source: Box<UnixfsError>,
    },
    /// The sealed blob did not open or did not verify.
    #[error("{root}: {source}")]
    Open {
        root: Cid,
        #[source]
        source: SealError,
    },
    /// Sealing the plaintext CAR for an encrypted push failed.
    #[error("sealing {root} for an encrypted push failed: {source}")]
    Seal {
        root: Cid,
        #[source]
        source: SealError,
    },
    /// The CAR inside a sealed blob did not verify against its root.
    #[error("the CAR sealed in {root} failed verification: {source}")]
    InnerCar {
        root: Cid,
        #[source]
        source: CarError,
    },
    /// `encrypted-ipfs` without a key.
    #[error("encrypted-ipfs needs a key file and none was found at {path}")]
    NoKey { path: String },
    /// No provider named on the command line or in the configuration.
    #[error(
        "no provider: pass --provider, or set one with `memdir init --mode ipfs --provider NAME`"
    )]
    NoProvider,
    /// `sync` without a CID on a provider that keeps no head pointer.
    #[error("{provider} keeps no head pointer, so `sync` cannot find the latest version")]
    NoHead { provider: String },
    /// The state file is unreadable.
    #[error("{path}: {message}")]
    State { path: String, message: String },
    /// A file about to be pushed holds what looks like a credential.
    #[error("refused to push: {path} contains what looks like {}", .kind.describe())]
    Secret {
        path: String,
        kind: crate::secrets::SecretKind,
    },
}

impl SyncError {
    /// Exit class: refused operations are input or usage, bad data is integrity.
    pub fn class(&self) -> Class {
        match self {
            SyncError::RemoteAhead { .. }
            | SyncError::State { .. }
            | SyncError::Secret { .. }
            | SyncError::Seal { .. } => Class::Input,
            SyncError::NoKey { .. } | SyncError::NoProvider | SyncError::NoHead { .. } => {
                Class::Usage
            }
            SyncError::NotADirectory { .. }
            | SyncError::NotSealed { .. }
            | SyncError::Decode { .. }
            | SyncError::Open { .. }
            | SyncError::InnerCar { .. } => Class::Integrity,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            SyncError::RemoteAhead { .. } => "run `memdir sync` to pull, merge and push; `push --force` publishes this directory over it (the other version stays pinned)".into(),
            SyncError::NotADirectory { .. } => "if it was pushed in encrypted-ipfs mode, pull with --mode encrypted-ipfs; nothing was changed".into(),
            SyncError::NotSealed { .. } => "it looks like a plain push: pull with --mode ipfs; nothing was changed".into(),
            SyncError::Decode { .. } | SyncError::InnerCar { .. } => "the data was rejected before anything was written; nothing was changed".into(),
            SyncError::Seal { .. } => "nothing was sent; the directory is over what one sealed blob can hold".into(),
            SyncError::Open { .. } => "it was sealed to another key, or altered; check MEMDIR_KEY_FILE / key_file in .memdir/config.toml. Nothing was changed".into(),
            SyncError::NoKey { .. } => "create one with `memdir keygen`, or copy the key file from the device that pushed and point MEMDIR_KEY_FILE at it".into(),
            SyncError::NoProvider => "providers: kubo, pinata, filebase, storacha, folder (and gateway for pulls)".into(),
            SyncError::NoHead { .. } => "pass the root CID: `memdir sync CID` (push prints it)".into(),
            SyncError::Secret { path, .. } => format!("memdir never publishes credentials: remove it from {path} (or `memdir forget` the memory), then push again; nothing was sent"),
            SyncError::State { .. } => "the file is memdir's own; delete it to start over (the next sync treats every difference as new, keeping both versions of a conflict)".into(),
        })
    }
}

impl From<SyncError> for Error {
    fn from(e: SyncError) -> Self {
        Error::Sync(Box::new(e))
    }
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/// The last synced version: what the three-way merge compares against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Base {
    /// Root of the plaintext directory DAG.
    pub root: String,
    /// Root the provider holds: equal to `root` in `ipfs` mode, the sealed blob's root
    /// in `encrypted-ipfs` mode.
    pub network_root: String,
    pub mode: Mode,
    pub provider: String,
    /// `push` or `pull`.
    pub via: String,
    pub at: DateTime<Utc>,
}

/// One push a provider accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pushed {
    /// Root the provider holds (pinned).
    pub root: String,
    /// The plaintext root it carries.
    pub plain_root: String,
    /// The provider's handle for the pin.
    pub provider_id: String,
    /// Bytes sent.
    pub car_bytes: u64,
    /// Whether only new blocks were sent.
    pub delta: bool,
    pub at: DateTime<Utc>,
}

/// `.memdir/sync/state.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    #[serde(default)]
    pub base: Option<Base>,
    /// Per provider, oldest first: the pins memdir made and has not removed.
    #[serde(default)]
    pub pushes: BTreeMap<String, Vec<Pushed>>,
}

fn parse_cid(s: &str, path: &str) -> Result<Cid> {
    Cid::try_from(s).map_err(|e| {
        SyncError::State {
            path: path.to_string(),
            message: format!("`{s}` is not a CID: {e}"),
        }
        .into()
    })
}

impl Base {
    /// The plaintext root.
    pub fn root_cid(&self) -> Result<Cid> {
        parse_cid(&self.root, STATE_FILE)
    }

    /// The root on the network.
    pub fn network_cid(&self) -> Result<Cid> {
        parse_cid(&self.network_root, STATE_FILE)
    }
}

fn base_car_name(root: &Cid) -> String {
    format!("{SYNC_DIR}/base-{root}.car")
}

impl State {
    /// Reads the state; a missing file is a directory that never synced.
    pub fn load(backend: &Backend) -> Result<State> {
        let Some(bytes) = backend.read(STATE_FILE, MAX_STATE)? else {
            return Ok(State {
                version: STATE_VERSION,
                ..State::default()
            });
        };
        let path = backend.display_path(STATE_FILE).display().to_string();
        let state: State = serde_json::from_slice(&bytes).map_err(|e| SyncError::State {
            path: path.clone(),
            message: format!("line {} column {}: {e}", e.line(), e.column()),
        })?;
        if state.version != STATE_VERSION {
            return Err(SyncError::State {
                path,
                message: format!(
                    "version {} is not {STATE_VERSION} (written by another memdir)",
                    state.version
                ),
            }
            .into());
        }
        Ok(state)
    }

    fn save(&self, backend: &Backend) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("state serializes");
        text.push('\n');
        backend.write_atomic(STATE_FILE, text.as_bytes())
    }

    /// Records `base` with its plaintext CAR: the CAR first under a name of its own,
    /// then the state that points at it, then the old CAR is removed. Whatever the
    /// moment of a crash, the state names a CAR that is complete.
    fn record_base(
        &mut self,
        backend: &Backend,
        base: Base,
        plain_root: &Cid,
        plain_car: &[u8],
    ) -> Result<()> {
        let old = self.base.as_ref().and_then(|b| b.root_cid().ok());
        backend.write_atomic(&base_car_name(plain_root), plain_car)?;
        self.base = Some(base);
        self.save(backend)?;
        if let Some(old) = old.filter(|o| o != plain_root) {
            let _ = backend.remove(&base_car_name(&old));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Listings
// ---------------------------------------------------------------------------

/// Calls `f` with the `/`-separated relative path and the bytes of every file in
/// `node`, in path order.
pub fn for_each_file(node: &Node, f: &mut impl FnMut(&str, &[u8])) {
    fn walk(prefix: &str, node: &Node, f: &mut impl FnMut(&str, &[u8])) {
        match node {
            Node::File(b) => f(prefix, b),
            Node::Dir(entries) => {
                for (name, child) in entries {
                    let path = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}/{name}")
                    };
                    walk(&path, child, f);
                }
            }
        }
    }
    walk("", node, f);
}

/// A directory tree as a listing: `/`-separated relative path → bytes.
pub fn listing(node: &Node) -> Listing {
    let mut out = Listing::new();
    for_each_file(node, &mut |path, bytes| {
        out.insert(path.to_string(), bytes.to_vec());
    });
    out
}

fn build(tree: &Node, mem: &Memory) -> Result<Dag> {
    unixfs::build(tree).map_err(|e| Error::Unixfs {
        path: mem.root(),
        source: Box::new(e),
    })
}

/// The verified blocks of the base recorded in the state, or `None` with a warning
/// when its CAR is missing or damaged: then every difference counts as new and a
/// conflict keeps both versions, so nothing is lost.
fn base_blocks(mem: &Memory, state: &State, warnings: &mut Vec<String>) -> Option<(Cid, Blocks)> {
    let root = state.base.as_ref()?.root_cid().ok()?;
    let name = base_car_name(&root);
    let loaded = match mem.backend().read(&name, u64::MAX) {
        Ok(Some(bytes)) => {
            car::read_car(bytes.as_slice(), &root, &CarLimits::default()).map_err(|e| e.to_string())
        }
        Ok(None) => Err("missing".to_string()),
        Err(e) => Err(e.to_string()),
    };
    match loaded {
        Ok(blocks) => Some((root, blocks)),
        Err(e) => {
            warnings.push(no_base(&name, &e));
            None
        }
    }
}

/// The files of the base (empty when there is none, see [`base_blocks`]).
fn base_listing(mem: &Memory, state: &State, warnings: &mut Vec<String>) -> (bool, Listing) {
    let Some((root, blocks)) = base_blocks(mem, state, warnings) else {
        return (false, Listing::new());
    };
    match unixfs::decode(&root, &blocks, &unixfs::Limits::default()) {
        Ok(tree) => (true, listing(&tree)),
        Err(e) => {
            warnings.push(no_base(&base_car_name(&root), &e.to_string()));
            (false, Listing::new())
        }
    }
}

fn no_base(name: &str, problem: &str) -> String {
    format!("{name}: {problem}; syncing without a base (every difference counts as new)")
}

/// A change of the directory since the last synced root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub path: String,
    /// `added`, `changed` or `deleted`.
    pub change: &'static str,
}

/// Files that differ between `base` and `local`, ignoring the index and dot entries.
pub fn changes(base: &Listing, local: &Listing) -> Vec<Change> {
    let relevant = |p: &str| {
        matches!(
            sync_plan::classify(p),
            FileClass::File | FileClass::Timeline
        )
    };
    let mut out = Vec::new();
    for (path, bytes) in local.iter().filter(|(p, _)| relevant(p)) {
        match base.get(path) {
            None => out.push(Change {
                path: path.clone(),
                change: "added",
            }),
            Some(b) if b != bytes => out.push(Change {
                path: path.clone(),
                change: "changed",
            }),
            _ => {}
        }
    }
    for path in base
        .keys()
        .filter(|p| relevant(p) && !local.contains_key(*p))
    {
        out.push(Change {
            path: path.clone(),
            change: "deleted",
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

// ---------------------------------------------------------------------------
// Remote
// ---------------------------------------------------------------------------

/// Where and how to sync.
pub struct Remote<'a> {
    /// The provider (with its own runtime).
    pub provider: &'a Blocking,
    /// `Ipfs` or `EncryptedIpfs` (`Local` is treated as `Ipfs`).
    pub mode: Mode,
    /// The key, required in `encrypted-ipfs` mode.
    pub key: Option<&'a Key>,
    /// The head pointer's name on the provider.
    pub channel: &'a str,
    /// Pins kept per provider; older ones are removed after a push.
    pub keep_versions: u32,
    /// Transfer progress.
    pub progress: &'a dyn Progress,
}

impl Remote<'_> {
    fn encrypted(&self) -> bool {
        self.mode == Mode::EncryptedIpfs
    }

    fn key(&self) -> Result<&Key> {
        self.key.ok_or_else(|| {
            SyncError::NoKey {
                path: "(no key given)".into(),
            }
            .into()
        })
    }

    /// The provider's head, `None` when nothing is published or the provider keeps
    /// no head.
    fn head(&self) -> Result<Option<Cid>> {
        match self.provider.head(self.channel) {
            Ok(h) => Ok(h),
            Err(ProviderError::Unsupported { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn mode(&self) -> Mode {
        if self.encrypted() {
            Mode::EncryptedIpfs
        } else {
            Mode::Ipfs
        }
    }
}

/// What `push` did.
#[derive(Debug, Clone, Serialize)]
pub struct PushReport {
    pub provider: String,
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
    pub warnings: Vec<String>,
}

/// A file from the remote side that was not written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// What `pull` did (or would do, with `dry_run`).
#[derive(Debug, Clone, Serialize)]
pub struct PullReport {
    pub provider: String,
    pub mode: Mode,
    pub strategy: Strategy,
    pub dry_run: bool,
    /// The CID asked for.
    pub root: String,
    /// The plaintext root it holds.
    pub plain_root: String,
    /// Whether a recorded base took part (otherwise a first sync: two-way).
    pub had_base: bool,
    /// One line per path whose versions differed.
    pub decisions: Vec<Decision>,
    /// Files written, deleted and conflict copies saved.
    pub written: usize,
    pub deleted: usize,
    pub conflicts: Vec<ConflictCopy>,
    pub skipped: Vec<SkippedFile>,
    pub warnings: Vec<String>,
}

/// A losing version saved by a merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConflictCopy {
    pub path: String,
    pub copy: String,
}

/// What `sync` did.
#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    /// The head pulled, if the provider had one this directory had not synced.
    pub pulled: Option<PullReport>,
    pub pushed: PushReport,
}

// ---------------------------------------------------------------------------
// Push
// ---------------------------------------------------------------------------

/// Uploads the directory and records it as the new base.
///
/// Refuses (unless `force`) when the provider's head names a version this directory
/// has not synced, since publishing over it would hide that version's changes from
/// the next `sync`. With a provider that keeps earlier blocks only the new blocks are
/// sent (with a full-CAR fallback). After the upload the head is moved (where the
/// provider keeps one) and pins beyond `keep_versions` are removed.
pub fn push(mem: &Memory, remote: &Remote<'_>, force: bool) -> Result<PushReport> {
    let backend = mem.backend();
    let mut warnings = Vec::new();
    // MEMORY.md is derived: bring it up to date so that what is pushed is consistent.
    let (tree, mut state) = mem.with_lock(|| {
        mem.rebuild_index_locked()?;
        Ok((backend.tree()?, State::load(backend)?))
    })?;
    let mut secret = None;
    for_each_file(&tree, &mut |path, bytes| {
        if secret.is_none()
            && matches!(
                sync_plan::classify(path),
                FileClass::File | FileClass::Timeline
            )
            && let Some(kind) = crate::secrets::find_secret(&String::from_utf8_lossy(bytes))
        {
            secret = Some(SyncError::Secret {
                path: path.to_string(),
                kind,
            });
        }
    });
    if let Some(e) = secret {
        return Err(e.into());
    }
    let dag = build(&tree, mem)?;
    let plain_car = car::car_bytes(&dag);
    let provider = remote.provider.name().to_string();
    let base = state.base.clone();
    let base_network = base.as_ref().map(|b| b.network_cid()).transpose()?;
    let head = remote.head()?;
    let mut report = PushReport {
        provider: provider.clone(),
        mode: remote.mode(),
        root: dag.root.to_string(),
        network_root: String::new(),
        up_to_date: false,
        car_bytes: 0,
        full_car_bytes: 0,
        delta: false,
        head_updated: false,
        unpinned: Vec::new(),
        warnings: Vec::new(),
    };
    // Already there: the base is this exact version and it is the provider's head (or,
    // without a head, a pin we made on this provider).
    if let Some(b) = &base
        && b.root == report.root
        && b.mode == remote.mode()
    {
        let pinned_here = state
            .pushes
            .get(&provider)
            .is_some_and(|v| v.iter().any(|p| p.root == b.network_root));
        let head_is_base = head.is_some_and(|h| Some(h) == base_network);
        if head_is_base || (head.is_none() && pinned_here) {
            report.up_to_date = true;
            report.network_root = b.network_root.clone();
            return Ok(report);
        }
    }
    if let Some(h) = head
        && !force
        && Some(h) != base_network
        && !(remote.mode() == Mode::Ipfs && h == dag.root)
    {
        return Err(SyncError::RemoteAhead {
            provider,
            channel: remote.channel.to_string(),
            head: h,
            base: base_network,
        }
        .into());
    }
    let (network_root, receipt, full_len) = if remote.encrypted() {
        let sealed = seal::seal(&Plain::new(dag.root, plain_car.clone()), remote.key()?).map_err(
            |source| SyncError::Seal {
                root: dag.root,
                source,
            },
        )?;
        let blob = build(&Node::File(sealed.into_bytes()), mem)?;
        let blob_car = car::car_bytes(&blob);
        let receipt = remote
            .provider
            .put_car(&blob.root, &blob_car, remote.progress)?;
        (blob.root, receipt, blob_car.len() as u64)
    } else {
        // The provider keeps our earlier blocks when it holds the base: send the rest.
        // It is asked first (one cheap call), so a node that lost the base gets the
        // full CAR at once instead of after the delta's timeout.
        let still_pinned = |b: &Base| {
            b.network_cid()
                .is_ok_and(|c| remote.provider.has(&c).unwrap_or(false))
        };
        let known: HashSet<Cid> = match (&base, remote.provider.capabilities().keeps_blocks) {
            (Some(b), true)
                if b.mode == Mode::Ipfs && base_on(&state, b, &provider) && still_pinned(b) =>
            {
                base_blocks(mem, &state, &mut warnings)
                    .map(|(_, blocks)| blocks.into_keys().collect())
                    .unwrap_or_default()
            }
            _ => HashSet::new(),
        };
        let receipt = if known.is_empty() {
            remote
                .provider
                .put_car(&dag.root, &plain_car, remote.progress)?
        } else {
            let delta = crate::provider::delta_car(&dag, &known);
            remote
                .provider
                .put_car_delta(&dag.root, &delta, &plain_car, remote.progress)?
        };
        (dag.root, receipt, plain_car.len() as u64)
    };
    report.network_root = network_root.to_string();
    report.car_bytes = receipt.car_bytes;
    report.full_car_bytes = full_len;
    report.delta = receipt.delta;
    match remote.provider.set_head(remote.channel, &network_root) {
        Ok(()) => report.head_updated = true,
        Err(ProviderError::Unsupported { .. }) => {}
        Err(e) => warnings.push(format!(
            "the upload is pinned but the head pointer was not moved: {e}"
        )),
    }
    // Record: the pin, then the new base with its CAR, in one state write.
    let now = mem.now();
    let list = state.pushes.entry(provider.clone()).or_default();
    list.retain(|p| p.root != report.network_root);
    list.push(Pushed {
        root: report.network_root.clone(),
        plain_root: report.root.clone(),
        provider_id: receipt.provider_id.clone(),
        car_bytes: receipt.car_bytes,
        delta: receipt.delta,
        at: now,
    });
    let new_base = Base {
        root: report.root.clone(),
        network_root: report.network_root.clone(),
        mode: remote.mode(),
        provider: provider.clone(),
        via: "push".into(),
        at: now,
    };
    mem.with_lock(|| state.record_base(backend, new_base, &dag.root, &plain_car))?;
    // Unpin what is beyond the versions to keep; a failure keeps the record to retry.
    let keep = remote.keep_versions.max(1) as usize;
    let list = state.pushes.get(&provider).cloned().unwrap_or_default();
    if list.len() > keep && remote.provider.capabilities().unpin {
        let (old, _) = list.split_at(list.len() - keep);
        let mut gone = Vec::new();
        for p in old {
            let Ok(root) = Cid::try_from(p.root.as_str()) else {
                continue;
            };
            let receipt = Receipt {
                provider_id: p.provider_id.clone(),
                ..Receipt::for_root(&provider, root)
            };
            match remote.provider.unpin(&receipt) {
                Ok(()) => gone.push(p.root.clone()),
                Err(e) => warnings.push(format!("could not unpin {}: {e}", p.root)),
            }
        }
        if !gone.is_empty() {
            if let Some(v) = state.pushes.get_mut(&provider) {
                v.retain(|p| !gone.contains(&p.root));
            }
            mem.with_lock(|| state.save(backend))?;
            report.unpinned = gone;
        }
    }
    report.warnings = warnings;
    Ok(report)
}

/// Whether `provider` holds the base's blocks: it was pushed there or pulled from there.
fn base_on(state: &State, base: &Base, provider: &str) -> bool {
    base.provider == provider
        || state
            .pushes
            .get(provider)
            .is_some_and(|v| v.iter().any(|p| p.root == base.network_root))
}

// ---------------------------------------------------------------------------
// Pull
// ---------------------------------------------------------------------------

/// A verified, decoded download: the plaintext tree and its CAR.
struct Fetched {
    plain_root: Cid,
    tree: Node,
    plain_car: Vec<u8>,
}

/// Downloads `root`, verifies and decodes it; in `encrypted-ipfs` mode opens the blob.
/// Touches nothing local.
fn fetch(
    mem: &Memory,
    remote: &Remote<'_>,
    root: &Cid,
    expected_plain: Option<Cid>,
) -> Result<Fetched> {
    let blocks = remote
        .provider
        .get_car(root, &CarLimits::default(), remote.progress)?;
    let limits = unixfs::Limits::default();
    let decode = |root: &Cid, blocks: &Blocks| {
        unixfs::decode(root, blocks, &limits).map_err(|e| SyncError::Decode {
            root: *root,
            source: Box::new(e),
        })
    };
    let outer = decode(root, &blocks)?;
    if remote.encrypted() {
        let Node::File(bytes) = outer else {
            return Err(SyncError::NotSealed { root: *root }.into());
        };
        let plain = seal::open(
            &Sealed::from_bytes(bytes),
            remote.key()?,
            expected_plain.as_ref(),
        )
        .map_err(|source| SyncError::Open {
            root: *root,
            source,
        })?;
        let (plain_root, plain_car) = plain.into_parts();
        let inner = car::read_car(plain_car.as_slice(), &plain_root, &CarLimits::default())
            .map_err(|source| SyncError::InnerCar {
                root: *root,
                source,
            })?;
        let tree = decode(&plain_root, &inner)?;
        if matches!(tree, Node::File(_)) {
            return Err(SyncError::NotADirectory { root: plain_root }.into());
        }
        Ok(Fetched {
            plain_root,
            tree,
            plain_car,
        })
    } else {
        if matches!(outer, Node::File(_)) {
            return Err(SyncError::NotADirectory { root: *root }.into());
        }
        // The strict decoder proved the blocks canonical, so rebuilding them gives the
        // same root and the same CAR the other device pushed.
        let dag = build(&outer, mem)?;
        Ok(Fetched {
            plain_root: *root,
            plain_car: car::car_bytes(&dag),
            tree: outer,
        })
    }
}

/// Whether a remote file may be written: memdir never stores what looks like a secret.
fn refuse_secret(path: &str, content: &[u8]) -> Option<SkippedFile> {
    let text = String::from_utf8_lossy(content);
    crate::secrets::find_secret(&text).map(|kind| SkippedFile {
        path: path.to_string(),
        reason: format!("contains what looks like {}; not written", kind.describe()),
    })
}

/// Downloads `root`, verifies it, merges it into the directory three-way against the
/// last synced root, rebuilds the index and records `root` as the new base.
pub fn pull(
    mem: &Memory,
    remote: &Remote<'_>,
    root: &Cid,
    strategy: Strategy,
    dry_run: bool,
) -> Result<PullReport> {
    let backend = mem.backend();
    let state0 = State::load(backend)?;
    let expected_plain = state0
        .base
        .as_ref()
        .filter(|b| b.network_root == root.to_string())
        .and_then(|b| b.root_cid().ok());
    let fetched = fetch(mem, remote, root, expected_plain)?;
    let remote_listing = listing(&fetched.tree);
    backend.create()?;
    mem.with_lock(|| {
        let mut state = State::load(backend)?;
        let mut warnings = Vec::new();
        let (had_base, base_listing) = base_listing(mem, &state, &mut warnings);
        let local_listing = listing(&backend.tree()?);
        let plan = sync_plan::plan(&base_listing, &local_listing, &remote_listing, strategy);
        let mut report = PullReport {
            provider: remote.provider.name().to_string(),
            mode: remote.mode(),
            strategy,
            dry_run,
            root: root.to_string(),
            plain_root: fetched.plain_root.to_string(),
            had_base,
            decisions: plan.report.clone(),
            written: 0,
            deleted: 0,
            conflicts: Vec::new(),
            skipped: Vec::new(),
            warnings,
        };
        let mut ops = Vec::new();
        for op in plan.ops {
            match &op {
                Op::Write { path, content } | Op::SaveConflict { path, content, .. } => {
                    // Only remote bytes can bring a secret in; local ones are already here.
                    if local_listing.get(path) != Some(content)
                        && let Some(s) = refuse_secret(path, content)
                    {
                        report.skipped.push(s);
                        continue;
                    }
                }
                _ => {}
            }
            ops.push(op);
        }
        for op in &ops {
            match op {
                Op::SaveConflict { path, copy, .. } => report.conflicts.push(ConflictCopy {
                    path: path.clone(),
                    copy: copy.clone(),
                }),
                Op::Write { .. } => report.written += 1,
                Op::Delete { .. } => report.deleted += 1,
                Op::RebuildIndex => {}
            }
        }
        if dry_run {
            return Ok(report);
        }
        for op in &ops {
            match op {
                Op::SaveConflict { copy, content, .. } => backend.write_atomic(copy, content)?,
                Op::Delete { path } => backend.remove(path)?,
                Op::Write { path, content } => backend.write_atomic(path, content)?,
                Op::RebuildIndex => {}
            }
        }
        mem.rebuild_index_locked()?;
        let now = mem.now();
        let new_base = Base {
            root: fetched.plain_root.to_string(),
            network_root: root.to_string(),
            mode: remote.mode(),
            provider: remote.provider.name().to_string(),
            via: "pull".into(),
            at: now,
        };
        state.record_base(backend, new_base, &fetched.plain_root, &fetched.plain_car)?;
        Ok(report)
    })
}

// ---------------------------------------------------------------------------
// Sync
// ---------------------------------------------------------------------------

/// Pulls the provider's head (or `from`) when this directory has not synced it, merges,
/// then pushes the result and records it as the new base.
pub fn sync(
    mem: &Memory,
    remote: &Remote<'_>,
    from: Option<&Cid>,
    strategy: Strategy,
) -> Result<SyncReport> {
    let state = State::load(mem.backend())?;
    let base_network = state.base.as_ref().map(|b| b.network_cid()).transpose()?;
    let head = match from {
        Some(c) => Some(*c),
        None => match remote.provider.head(remote.channel) {
            Ok(h) => h,
            Err(ProviderError::Unsupported { .. }) => {
                return Err(SyncError::NoHead {
                    provider: remote.provider.name().to_string(),
                }
                .into());
            }
            Err(e) => return Err(e.into()),
        },
    };
    let pulled = match head {
        Some(h) if Some(h) != base_network => Some(pull(mem, remote, &h, strategy, false)?),
        _ => None,
    };
    // Never forced: if the provider's head is newer than the CID given by hand, the
    // push is refused and says so, rather than hiding that version.
    let pushed = push(mem, remote, false)?;
    Ok(SyncReport { pulled, pushed })
}

// ---------------------------------------------------------------------------
// Status
// ---------------------------------------------------------------------------

/// What `status` shows; computed offline.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The root the directory has now.
    pub local_root: String,
    pub base: Option<Base>,
    /// Changes since the base (everything, when never synced).
    pub unpushed: Vec<Change>,
    /// Losing versions kept by merges.
    pub conflicts: Vec<ConflictCopy>,
    /// Pins per provider, oldest first.
    pub pushes: BTreeMap<String, Vec<Pushed>>,
    pub warnings: Vec<String>,
}

/// The sync status of the directory, without the network.
pub fn status(mem: &Memory) -> Result<Status> {
    let backend = mem.backend();
    let state = State::load(backend)?;
    let tree = backend.tree()?;
    let local_root = build(&tree, mem)?.root;
    let mut warnings = Vec::new();
    let unpushed = if state
        .base
        .as_ref()
        .is_some_and(|b| b.root == local_root.to_string())
    {
        Vec::new()
    } else {
        changes(&base_listing(mem, &state, &mut warnings).1, &listing(&tree))
    };
    Ok(Status {
        local_root: local_root.to_string(),
        base: state.base,
        unpushed,
        conflicts: mem
            .conflicts()?
            .into_iter()
            .map(|(path, copy)| ConflictCopy { path, copy })
            .collect(),
        pushes: state.pushes,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_ignore_index_and_dot_entries() {
        let l = |v: &[(&str, &str)]| -> Listing {
            v.iter()
                .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
                .collect()
        };
        let base = l(&[("a.md", "1"), ("b.md", "1"), ("MEMORY.md", "x")]);
        let local = l(&[
            ("a.md", "2"),
            ("c.md", "1"),
            ("MEMORY.md", "y"),
            (".memdir/x", "1"),
        ]);
        let got: Vec<(String, &str)> = changes(&base, &local)
            .into_iter()
            .map(|c| (c.path, c.change))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a.md".into(), "changed"),
                ("b.md".into(), "deleted"),
                ("c.md".into(), "added")
            ]
        );
    }

    #[test]
    fn listing_flattens_nested_directories() {
        let mut sub = BTreeMap::new();
        sub.insert("2026-01-01.jsonl".to_string(), Node::File(b"e".to_vec()));
        let mut root = BTreeMap::new();
        root.insert("a.md".to_string(), Node::File(b"a".to_vec()));
        root.insert("timeline".to_string(), Node::Dir(sub));
        let got: Vec<String> = listing(&Node::Dir(root)).into_keys().collect();
        assert_eq!(got, vec!["a.md", "timeline/2026-01-01.jsonl"]);
    }

    #[test]
    fn state_round_trip_and_version_check() {
        let mem = Memory::in_memory();
        let s = State::load(mem.backend()).unwrap();
        assert_eq!(s.version, STATE_VERSION);
        assert!(s.base.is_none());
        mem.backend()
            .write_atomic(STATE_FILE, br#"{"version": 9}"#)
            .unwrap();
        let e = State::load(mem.backend()).unwrap_err();
        assert!(e.to_string().contains("version 9"), "{e}");
        mem.backend()
            .write_atomic(STATE_FILE, b"{\n  nope")
            .unwrap();
        let e = State::load(mem.backend()).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert_eq!(e.class(), Class::Input);
    }
}
