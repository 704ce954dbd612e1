//! Remote providers that store and serve memory DAGs as CARv1 archives: Kubo RPC
//! (any Kubo-compatible node, also Filebase's IPFS RPC), Pinata, Filebase S3,
//! Storacha (through its HTTP bridge, experimental) and trustless gateways, all
//! behind the one [`Provider`] trait.
//!
//! This module owns the network edge of sync: HTTP requests with timeouts and
//! bounded retries, authentication (credentials come only from the
//! environment and never appear in errors), and the check that whatever a
//! provider says about our data is true: an upload must be reported under our
//! root CID, and every downloaded block goes through [`crate::ipfs::car::read_car`]
//! before anyone sees it. It must not touch the memory directory, decide what
//! to push or merge, or print; `sync` and the CLI do that on top of it.
//!
//! The providers are async (reqwest on tokio). The rest of memdir is
//! synchronous, so [`Blocking`] wraps any provider with a small
//! current-thread runtime. Do not call [`Blocking`] from inside an async
//! context (tokio refuses to block inside a runtime).
//!
//! Errors classify as [`crate::error::Class::Remote`] (exit 3: unreachable host, HTTP
//! error status, timeouts, refused credentials) or [`crate::error::Class::Integrity`]
//! (exit 4: a provider reported another root, a block does not match its CID,
//! a CAR is truncated or carries foreign blocks). `spec/providers.md` is the
//! user-facing description.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

mod filebase;
mod folder;
mod gateway;
mod http;
mod kubo;
mod pinata;
pub mod sigv4;
mod storacha;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use cid::Cid;
use cid::multihash::Multihash;
use sha2::{Digest, Sha256};

use crate::clock::Clock;
use crate::error::Class;
use crate::ipfs::car::{CarError, CarLimits};
use crate::ipfs::unixfs::{Dag, MH_SHA2_256};

pub use filebase::Filebase;
pub use folder::Folder;
pub use gateway::Gateways;
pub use http::HttpConfig;
pub use kubo::Kubo;
pub use pinata::Pinata;
pub use storacha::Storacha;

/// A boxed, sendable future: what [`Provider`] methods return, so that the
/// trait stays object-safe (`Box<dyn Provider>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Verified blocks of one DAG, keyed by CID (what [`crate::ipfs::car::read_car`]
/// returns and [`crate::ipfs::unixfs::decode`] takes).
pub type Blocks = HashMap<Cid, Vec<u8>>;

/// Multicodec of a CAR file, used for Storacha shard CIDs (`bagbaiera...`).
pub const CODEC_CAR: u64 = 0x0202;

/// Which way bytes are moving, for [`Progress`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Sending a CAR to a provider.
    Upload,
    /// Receiving a CAR or blocks.
    Download,
}

/// Receives transfer progress: bytes so far and the total when known.
///
/// Downloads report every chunk as it arrives. Uploads report 0 when the
/// request starts and the full size once the provider has answered (the HTTP
/// client sends the body in one piece; see `spec/providers.md`).
pub trait Progress: Sync {
    /// Called with the bytes moved so far in `direction` and the total if known.
    fn progress(&self, direction: Direction, done: u64, total: Option<u64>);
}

impl<F: Fn(Direction, u64, Option<u64>) + Sync> Progress for F {
    fn progress(&self, direction: Direction, done: u64, total: Option<u64>) {
        self(direction, done, total)
    }
}

/// A [`Progress`] that ignores every update.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn progress(&self, _: Direction, _: u64, _: Option<u64>) {}
}

/// What a provider can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// It accepts uploads ([`Provider::put_car`]); gateways do not.
    pub push: bool,
    /// It keeps the blocks we pushed earlier where a later import can use
    /// them, so [`Provider::put_car_delta`] may send only the new blocks.
    pub keeps_blocks: bool,
    /// It can remove a pin ([`Provider::unpin`]).
    pub unpin: bool,
}

/// Proof that a provider holds a DAG: what `push` records per provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// [`Provider::name`] of the provider that accepted the upload.
    pub provider: String,
    /// The root CID, equal to the one we computed (checked).
    pub root: Cid,
    /// The provider's handle for the pin: Pinata's file id, the Filebase
    /// object key, the Storacha shard CID, the root again for Kubo. Empty when
    /// unknown; [`Provider::unpin`] then looks the pin up by root.
    pub provider_id: String,
    /// Size of the CAR the provider accepted.
    pub car_bytes: u64,
    /// Whether that CAR was a delta (only blocks the provider lacked).
    pub delta: bool,
}

impl Receipt {
    /// A receipt for `root` with no provider handle, to unpin a root whose
    /// receipt was lost.
    pub fn for_root(provider: &str, root: Cid) -> Receipt {
        Receipt {
            provider: provider.to_string(),
            root,
            provider_id: String::new(),
            car_bytes: 0,
            delta: false,
        }
    }
}

/// A place that stores and serves memory DAGs.
///
/// Implementations check everything a remote party says: an upload whose
/// reported root differs from `root` fails with
/// [`ProviderError::WrongRoot`], and a download returns only blocks that
/// [`crate::ipfs::car::read_car`] verified against `root`. Every request has a
/// timeout and transient failures (connection errors, 408, 429, 5xx) are
/// retried a bounded number of times with exponential backoff.
pub trait Provider: Send + Sync {
    /// Short lowercase name: `kubo`, `pinata`, `filebase`, `storacha`, `gateway`.
    fn name(&self) -> &str;

    /// What this provider can do.
    fn capabilities(&self) -> Capabilities;

    /// Uploads a complete CARv1 whose DAG has root `root`, pins it and checks
    /// that the provider reports exactly `root`.
    fn put_car<'a>(
        &'a self,
        root: &'a Cid,
        car: &'a [u8],
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Receipt, ProviderError>>;

    /// Uploads `delta` (a CAR with root `root` holding only the blocks the
    /// provider does not have yet) where the provider keeps earlier blocks,
    /// and falls back to `full` when the delta is refused or does not finish
    /// in time. The default sends `full`.
    fn put_car_delta<'a>(
        &'a self,
        root: &'a Cid,
        delta: &'a [u8],
        full: &'a [u8],
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Receipt, ProviderError>> {
        let _ = delta;
        self.put_car(root, full, progress)
    }

    /// Downloads the DAG under `root` and returns its blocks, every one
    /// verified, bounded by `limits`.
    fn get_car<'a>(
        &'a self,
        root: &'a Cid,
        limits: &'a CarLimits,
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Blocks, ProviderError>>;

    /// Whether the provider holds (pins) `root`.
    fn has<'a>(&'a self, root: &'a Cid) -> BoxFuture<'a, Result<bool, ProviderError>>;

    /// Removes the pin a receipt describes. Unpinning something already gone
    /// succeeds.
    fn unpin<'a>(&'a self, receipt: &'a Receipt) -> BoxFuture<'a, Result<(), ProviderError>>;

    /// The root last published under `channel` with [`Provider::set_head`]
    /// (what `sync` pulls), or `None` when nothing was published yet. The
    /// default: the provider keeps no head ([`ProviderError::Unsupported`]).
    fn head<'a>(&'a self, channel: &'a str) -> BoxFuture<'a, Result<Option<Cid>, ProviderError>> {
        let _ = channel;
        Box::pin(async move {
            Err(ProviderError::Unsupported {
                provider: self.name().to_string(),
                operation: "keep a head pointer (pass the CID to pull or sync)",
            })
        })
    }

    /// Publishes `root` as the head of `channel`, replacing the previous one.
    fn set_head<'a>(
        &'a self,
        channel: &'a str,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        let _ = (channel, root);
        Box::pin(async move {
            Err(ProviderError::Unsupported {
                provider: self.name().to_string(),
                operation: "keep a head pointer (pass the CID to pull or sync)",
            })
        })
    }

    /// Moves the head of `channel` from `expected` (`None`: no head yet) to `root`,
    /// and only if it still names `expected` (spec/sync.md#heads). A provider that
    /// can compare and swap atomically does so; the default reads the head and sets
    /// it when it matches, which leaves a short window that the next sync's lineage
    /// check covers.
    fn swap_head<'a>(
        &'a self,
        channel: &'a str,
        expected: Option<&'a Cid>,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<HeadSwap, ProviderError>> {
        Box::pin(async move {
            let found = self.head(channel).await?;
            if found.as_ref() != expected {
                return Ok(HeadSwap::Changed { found });
            }
            self.set_head(channel, root).await?;
            Ok(HeadSwap::Moved)
        })
    }

    /// Stores the lineage of `root` (the versions it was built on, nearest first;
    /// spec/sync.md#lineage) next to it. The default keeps none.
    fn put_lineage<'a>(
        &'a self,
        root: &'a Cid,
        lineage: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        let _ = (root, lineage);
        Box::pin(async move {
            Err(ProviderError::Unsupported {
                provider: self.name().to_string(),
                operation: "keep the lineage of a version",
            })
        })
    }

    /// The lineage stored for `root` by [`Provider::put_lineage`], `None` when there
    /// is none (or the provider keeps none).
    fn lineage<'a>(
        &'a self,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, ProviderError>> {
        let _ = root;
        Box::pin(async move { Ok(None) })
    }
}

/// What [`Provider::swap_head`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadSwap {
    /// The head named the expected root and now names the new one.
    Moved,
    /// The head had moved since it was read (another device pushed): it was left as
    /// it is and names `found`.
    Changed { found: Option<Cid> },
}

/// Why a provider operation failed.
///
/// URLs in errors never carry credentials: user info is removed and query
/// values whose names look like secrets are replaced.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The request could not be sent or its answer not received.
    #[error("{provider}: {method} {url} failed: {source}")]
    Transport {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// The client error.
        #[source]
        source: reqwest::Error,
    },
    /// No answer within the time limit.
    #[error("{provider}: {method} {url} timed out after {}", secs(.after))]
    Timeout {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// The limit that expired.
        after: Duration,
    },
    /// The provider answered with an error status.
    #[error("{provider}: {method} {url} answered HTTP {status}{}", detail_suffix(.detail))]
    Status {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// HTTP status code.
        status: u16,
        /// Start of the response body (error code or message), if any.
        detail: String,
    },
    /// The provider answered 2xx with something we cannot use.
    #[error("{provider}: {method} {url}: unexpected answer: {detail}")]
    BadResponse {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The provider understood the request and refused it (a failed UCAN
    /// task, a pin error message).
    #[error("{provider}: {operation} was refused: {detail}")]
    Rejected {
        /// Provider name.
        provider: String,
        /// What we asked for.
        operation: String,
        /// The provider's reason.
        detail: String,
    },
    /// The provider reported a root other than the one we uploaded.
    #[error("{provider} reported root {reported} for an upload whose root is {expected}")]
    WrongRoot {
        /// Provider name.
        provider: String,
        /// Our root.
        expected: Cid,
        /// What the provider said, verbatim.
        reported: String,
    },
    /// A downloaded CAR failed verification.
    #[error("{provider}: the CAR from {url} failed verification: {source}")]
    Car {
        /// Provider name.
        provider: String,
        /// Redacted URL.
        url: String,
        /// What the reader found.
        #[source]
        source: CarError,
    },
    /// A single downloaded block failed verification.
    #[error("{provider}: block {cid} from {url} {problem}")]
    BadBlock {
        /// Provider name.
        provider: String,
        /// Redacted URL.
        url: String,
        /// The block asked for.
        cid: Cid,
        /// What was wrong.
        problem: String,
    },
    /// Every source was tried and none delivered a verified DAG.
    #[error("{provider}: no source delivered {root}: {}", summary(.attempts))]
    AllFailed {
        /// Provider name.
        provider: String,
        /// The root asked for.
        root: Cid,
        /// Each source's failure, in the order tried.
        attempts: Vec<ProviderError>,
    },
    /// A folder provider could not read or write its folder (an unplugged
    /// drive, a full disk, no permission).
    #[error("folder {}: {source}", .path.display())]
    Folder {
        /// The file or folder.
        path: std::path::PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A required environment variable is not set.
    #[error("{provider} is not configured: set {var}")]
    NotConfigured {
        /// Provider name.
        provider: String,
        /// The missing variable(s).
        var: &'static str,
    },
    /// An environment variable has a value we cannot use (never a secret's value).
    #[error("{provider}: {var}={value:?} is not usable: {reason}")]
    BadConfig {
        /// Provider name.
        provider: String,
        /// The variable.
        var: &'static str,
        /// Its value (only for non-secret variables such as URLs).
        value: String,
        /// Why.
        reason: String,
    },
    /// The provider does not offer this operation.
    #[error("{provider} cannot {operation}")]
    Unsupported {
        /// Provider name.
        provider: String,
        /// The operation.
        operation: &'static str,
    },
    /// The async runtime for [`Blocking`] could not start.
    #[error("cannot start the network runtime: {source}")]
    Runtime {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

fn secs(d: &Duration) -> String {
    if d.as_millis() < 10_000 && d.subsec_millis() != 0 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs())
    }
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

fn summary(attempts: &[ProviderError]) -> String {
    attempts
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

impl ProviderError {
    /// Remote (exit 3), Integrity (exit 4) or Usage (configuration).
    pub fn class(&self) -> Class {
        match self {
            ProviderError::Transport { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::Status { .. }
            | ProviderError::BadResponse { .. }
            | ProviderError::Rejected { .. }
            | ProviderError::Folder { .. } => Class::Remote,
            ProviderError::WrongRoot { .. }
            | ProviderError::Car { .. }
            | ProviderError::BadBlock { .. } => Class::Integrity,
            ProviderError::AllFailed { attempts, .. } => {
                if attempts.iter().any(|e| e.class() == Class::Integrity) {
                    Class::Integrity
                } else {
                    Class::Remote
                }
            }
            ProviderError::NotConfigured { .. }
            | ProviderError::BadConfig { .. }
            | ProviderError::Unsupported { .. } => Class::Usage,
            ProviderError::Runtime { .. } => Class::Input,
        }
    }

    /// The HTTP status, when the provider answered with an error status.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// A hint on what to do about the error, when there is a useful one.
    pub fn hint(&self) -> Option<String> {
        match self {
            ProviderError::Status {
                provider,
                status: 401 | 403,
                ..
            } => Some(format!(
                "the provider refused the credentials: check {}",
                credential_vars(provider)
            )),
            ProviderError::Status { status, .. } if *status == 429 || *status >= 500 => {
                Some("the provider is busy or failing; try again later".into())
            }
            ProviderError::Timeout { method, .. } if method == "transfer" => Some(format!(
                "nothing was changed; check the network and that the provider holds the CID (a node that lacks it may wait for it forever); set {DEADLINE_VAR} (seconds) to allow longer"
            )),
            ProviderError::Transport { .. } | ProviderError::Timeout { .. } => Some(
                "check the network and the provider URL; set MEMDIR_HTTP_TIMEOUT to wait longer"
                    .into(),
            ),
            ProviderError::WrongRoot { .. } => {
                Some("the provider re-encoded or substituted the data; nothing was recorded".into())
            }
            ProviderError::Car { .. }
            | ProviderError::BadBlock { .. }
            | ProviderError::AllFailed { .. }
                if self.class() == Class::Integrity =>
            {
                Some("the data did not match its CID and was discarded; nothing was changed".into())
            }
            ProviderError::NotConfigured { var, .. } => {
                Some(format!("export {var} (see spec/providers.md)"))
            }
            _ => None,
        }
    }
}

fn credential_vars(provider: &str) -> &'static str {
    match provider {
        "kubo" => "IPFS_API and IPFS_API_TOKEN",
        "pinata" => "PINATA_JWT",
        "filebase" => "FILEBASE_KEY, FILEBASE_SECRET and FILEBASE_BUCKET",
        "storacha" => "WEB3_STORAGE_TOKEN, STORACHA_AUTH and STORACHA_SPACE",
        "folder" => "MEMDIR_FOLDER",
        _ => "the provider's credentials",
    }
}

// ---------------------------------------------------------------------------
// Configuration from the environment
// ---------------------------------------------------------------------------

/// A source of environment variables (the process environment, or a map in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Reads `key` from the process environment; empty values count as unset.
pub fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

/// Settings shared by every provider.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Timeouts and retries.
    pub http: HttpConfig,
    /// Time source for request signatures (Filebase S3).
    pub clock: Clock,
}

impl Settings {
    /// HTTP settings from `MEMDIR_HTTP_TIMEOUT` / `MEMDIR_HTTP_ATTEMPTS`, and the
    /// system clock.
    pub fn from_env(env: Env<'_>) -> Result<Settings, ProviderError> {
        Ok(Settings {
            http: HttpConfig::from_env(env)?,
            clock: Clock::system(),
        })
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            http: HttpConfig::default(),
            clock: Clock::system(),
        }
    }
}

/// Refuses a channel name that could not be a plain path segment on a provider.
pub(crate) fn check_channel(provider: &str, channel: &str) -> Result<(), ProviderError> {
    if crate::memory::layout::valid_channel(channel) {
        return Ok(());
    }
    Err(ProviderError::BadConfig {
        provider: provider.to_string(),
        var: "channel",
        value: channel.to_string(),
        reason: "1-64 characters of a-z, 0-9, `-` and `_`".into(),
    })
}

/// Names accepted by [`from_env`], in the order [`configured`] tries them.
pub const PROVIDER_NAMES: [&str; 6] = [
    "kubo", "pinata", "filebase", "storacha", "gateway", "folder",
];

/// Builds the provider called `name` from the environment.
pub fn from_env(
    name: &str,
    env: Env<'_>,
    settings: &Settings,
) -> Result<Box<dyn Provider>, ProviderError> {
    Ok(match name {
        "kubo" => Box::new(Kubo::from_env(env, settings)?),
        "pinata" => Box::new(Pinata::from_env(env, settings)?),
        "filebase" => Box::new(Filebase::from_env(env, settings)?),
        "storacha" => Box::new(Storacha::from_env(env, settings)?),
        "gateway" => Box::new(Gateways::from_env(env, settings)?),
        "folder" => Box::new(Folder::from_env(env)?),
        _ => {
            return Err(ProviderError::BadConfig {
                provider: name.to_string(),
                var: "provider",
                value: name.to_string(),
                reason: format!("not one of {}", PROVIDER_NAMES.join(", ")),
            });
        }
    })
}

/// Every push-capable provider whose credentials are present in `env`
/// (`IPFS_API`, `PINATA_JWT`, `FILEBASE_KEY`, `WEB3_STORAGE_TOKEN`), in
/// [`PROVIDER_NAMES`] order. A provider that is partly configured is an error.
pub fn configured(
    env: Env<'_>,
    settings: &Settings,
) -> Result<Vec<Box<dyn Provider>>, ProviderError> {
    let mut out = Vec::new();
    for (name, var) in [
        ("kubo", kubo::API_VAR),
        ("pinata", pinata::JWT_VAR),
        ("filebase", filebase::KEY_VAR),
        ("storacha", storacha::SECRET_VAR),
    ] {
        if env(var).is_some() {
            out.push(from_env(name, env, settings)?);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// CAR helpers for callers
// ---------------------------------------------------------------------------

/// A delta CAR: the header names `dag.root`, the body holds only the blocks
/// of `dag` that are not in `known` (for example the CIDs of the DAG pushed
/// last time), in the DAG's order.
pub fn delta_car(dag: &Dag, known: &HashSet<Cid>) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = crate::ipfs::car::write_car_blocks(
        &dag.root,
        dag.blocks
            .iter()
            .filter(|(cid, _)| !known.contains(cid))
            .map(|(cid, data)| (cid, data.as_slice())),
        &mut out,
    );
    out
}

/// The CID of a CAR file itself (codec 0x0202, sha2-256), as Storacha names shards.
pub fn car_cid(car: &[u8]) -> Cid {
    let digest = Sha256::digest(car);
    let hash = Multihash::<64>::wrap(MH_SHA2_256, &digest)
        .expect("a 32-byte digest fits a 64-byte multihash");
    Cid::new_v1(CODEC_CAR, hash)
}

// ---------------------------------------------------------------------------
// Blocking entry point
// ---------------------------------------------------------------------------

/// A provider with its own small runtime, for synchronous callers.
pub struct Blocking {
    runtime: tokio::runtime::Runtime,
    provider: Box<dyn Provider>,
    deadline: Duration,
}

/// Environment variable: seconds one whole transfer (a CAR up or down, retries
/// included) may take before it is abandoned (exit 3).
pub const DEADLINE_VAR: &str = "MEMDIR_TRANSFER_DEADLINE";

/// The default of [`DEADLINE_VAR`].
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(900);

impl fmt::Debug for Blocking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blocking")
            .field("provider", &self.provider.name())
            .finish()
    }
}

impl Blocking {
    /// Wraps `provider` with a current-thread runtime.
    pub fn new(provider: Box<dyn Provider>) -> Result<Blocking, ProviderError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| ProviderError::Runtime { source })?;
        let deadline = match process_env(DEADLINE_VAR) {
            None => DEFAULT_DEADLINE,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_secs(n),
                _ => {
                    return Err(ProviderError::BadConfig {
                        provider: provider.name().to_string(),
                        var: DEADLINE_VAR,
                        value: v,
                        reason: "expected a whole number of seconds above 0".into(),
                    });
                }
            },
        };
        Ok(Blocking {
            runtime,
            provider,
            deadline,
        })
    }

    /// Runs one whole transfer under the overall deadline (spec/sync.md#pull).
    fn bounded<T>(
        &self,
        what: &str,
        fut: BoxFuture<'_, Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let deadline = self.deadline;
        self.runtime.block_on(async move {
            match tokio::time::timeout(deadline, fut).await {
                Ok(r) => r,
                Err(_) => Err(ProviderError::Timeout {
                    provider: self.provider.name().to_string(),
                    method: "transfer".into(),
                    url: what.to_string(),
                    after: deadline,
                }),
            }
        })
    }

    /// The provider called `name` (see [`PROVIDER_NAMES`]), configured from
    /// the process environment, ready for synchronous use.
    pub fn from_process_env(name: &str) -> Result<Blocking, ProviderError> {
        let env = process_env;
        // Settings use the system clock even when MEMDIR_NOW is set: request
        // signatures need the real time.
        let settings = Settings::from_env(&env)?;
        Blocking::new(from_env(name, &env, &settings)?)
    }

    /// The wrapped provider.
    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// [`Provider::name`].
    pub fn name(&self) -> &str {
        self.provider.name()
    }

    /// [`Provider::capabilities`].
    pub fn capabilities(&self) -> Capabilities {
        self.provider.capabilities()
    }

    /// [`Provider::put_car`], blocking.
    pub fn put_car(
        &self,
        root: &Cid,
        car: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        self.bounded(
            &format!("of {root} (whole upload)"),
            self.provider.put_car(root, car, progress),
        )
    }

    /// [`Provider::put_car_delta`], blocking.
    pub fn put_car_delta(
        &self,
        root: &Cid,
        delta: &[u8],
        full: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        self.bounded(
            &format!("of {root} (whole upload)"),
            self.provider.put_car_delta(root, delta, full, progress),
        )
    }

    /// [`Provider::get_car`], blocking.
    pub fn get_car(
        &self,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        self.bounded(
            &format!("of {root} (whole download)"),
            self.provider.get_car(root, limits, progress),
        )
    }

    /// [`Provider::has`], blocking.
    pub fn has(&self, root: &Cid) -> Result<bool, ProviderError> {
        self.runtime.block_on(self.provider.has(root))
    }

    /// [`Provider::unpin`], blocking.
    pub fn unpin(&self, receipt: &Receipt) -> Result<(), ProviderError> {
        self.runtime.block_on(self.provider.unpin(receipt))
    }

    /// [`Provider::head`], blocking.
    pub fn head(&self, channel: &str) -> Result<Option<Cid>, ProviderError> {
        self.runtime.block_on(self.provider.head(channel))
    }

    /// [`Provider::set_head`], blocking.
    pub fn set_head(&self, channel: &str, root: &Cid) -> Result<(), ProviderError> {
        self.runtime.block_on(self.provider.set_head(channel, root))
    }

    /// [`Provider::swap_head`], blocking.
    pub fn swap_head(
        &self,
        channel: &str,
        expected: Option<&Cid>,
        root: &Cid,
    ) -> Result<HeadSwap, ProviderError> {
        self.runtime
            .block_on(self.provider.swap_head(channel, expected, root))
    }

    /// [`Provider::put_lineage`], blocking.
    pub fn put_lineage(&self, root: &Cid, lineage: &[u8]) -> Result<(), ProviderError> {
        self.runtime
            .block_on(self.provider.put_lineage(root, lineage))
    }

    /// [`Provider::lineage`], blocking.
    pub fn lineage(&self, root: &Cid) -> Result<Option<Vec<u8>>, ProviderError> {
        self.runtime.block_on(self.provider.lineage(root))
    }
}

/// Parses a CID a provider reported and compares it with ours; CIDs are
/// compared as values, so base32 and base58btc spellings of one CID agree.
pub(crate) fn check_root(
    provider: &str,
    expected: &Cid,
    reported: &str,
) -> Result<(), ProviderError> {
    match Cid::try_from(reported.trim()) {
        Ok(cid) if cid == *expected => Ok(()),
        _ => Err(ProviderError::WrongRoot {
            provider: provider.to_string(),
            expected: *expected,
            reported: reported.chars().take(200).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipfs::unixfs::{Node, build};

    #[test]
    fn delta_car_has_only_new_blocks() {
        let mut files = std::collections::BTreeMap::new();
        files.insert("a.md".to_string(), Node::File(b"a\n".to_vec()));
        let v1 = build(&Node::Dir(files.clone())).expect("build");
        files.insert("b.md".to_string(), Node::File(b"b\n".to_vec()));
        let v2 = build(&Node::Dir(files)).expect("build");
        let known: HashSet<Cid> = v1.blocks.iter().map(|(c, _)| *c).collect();
        let delta = delta_car(&v2, &known);
        let full = crate::ipfs::car::car_bytes(&v2);
        assert!(delta.len() < full.len());
        // The delta is a valid CAR that lacks `a.md`'s block.
        match crate::ipfs::car::read_car(delta.as_slice(), &v2.root, &CarLimits::default()) {
            Err(CarError::MissingBlock { cid }) => assert!(known.contains(&cid)),
            other => panic!("expected a missing block, got {other:?}"),
        }
    }

    #[test]
    fn unknown_provider_name() {
        let err = Blocking::from_process_env("ftp").expect_err("no such provider");
        assert_eq!(err.class(), Class::Usage);
        assert!(err.to_string().contains("kubo, pinata"), "{err}");
    }

    #[test]
    fn car_cid_is_a_car_codec_cid() {
        let cid = car_cid(b"");
        assert_eq!(cid.codec(), CODEC_CAR);
        assert!(cid.to_string().starts_with("bagbaiera"));
    }

    #[test]
    fn check_root_accepts_any_base() {
        let cid: Cid = "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
            .parse()
            .expect("cid");
        assert!(
            check_root(
                "t",
                &cid,
                "zb2rhj7crUKTQYRGCRATFaQ6YFLTde2YzdqbbhAASkL9uRDXn"
            )
            .is_ok()
        );
        let err = check_root(
            "t",
            &cid,
            "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
        )
        .expect_err("other root");
        assert_eq!(err.class(), Class::Integrity);
        assert!(check_root("t", &cid, "garbage").is_err());
    }

    #[test]
    fn classes_and_hints() {
        let status = |status| ProviderError::Status {
            provider: "pinata".into(),
            method: "POST".into(),
            url: "https://uploads.pinata.cloud/v3/files".into(),
            status,
            detail: String::new(),
        };
        assert_eq!(status(401).class(), Class::Remote);
        assert!(status(401).hint().expect("hint").contains("PINATA_JWT"));
        assert_eq!(
            ProviderError::AllFailed {
                provider: "gateway".into(),
                root: car_cid(b""),
                attempts: vec![status(500)],
            }
            .class(),
            Class::Remote
        );
    }
}
