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

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use cid::Cid;

use crate::ipfs::car::CarLimits;

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

    /// Called about every ten seconds while a download has received nothing
    /// yet (see [`Waiting`]). The default ignores it.
    fn waiting(&self, _waiting: &Waiting<'_>) {}
}

/// A download that has received nothing yet, for [`Progress::waiting`].
#[derive(Clone, Copy, Debug)]
pub struct Waiting<'a> {
    /// The root asked for.
    pub root: &'a Cid,
    /// [`Provider::name`] of the provider asked.
    pub provider: &'a str,
    /// Time since the download started.
    pub elapsed: std::time::Duration,
    /// The overall deadline ([`DEADLINE_VAR`]).
    pub deadline: std::time::Duration,
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
    Changed {
        /// The head found instead of the one expected.
        found: Option<Cid>,
    },
}

mod blocking;
mod cars;
mod env;
mod error;

pub use blocking::{Blocking, DEADLINE_VAR, DEFAULT_DEADLINE, WAIT_NOTE_EVERY};
pub(crate) use cars::check_root;
pub use cars::{car_cid, delta_car};
pub(crate) use env::check_channel;
pub use env::{Env, PROVIDER_NAMES, Settings, configured, from_env, process_env};
pub use error::ProviderError;
