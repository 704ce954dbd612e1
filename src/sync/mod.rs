//! Push, pull, sync and status: the memory directory on a provider, by content address.
//!
//! Owns the sync state under `.memdir/sync/` (the last synced root and its files, the
//! roots pushed to each provider), the order of operations that keeps a failure from
//! changing anything, and the executor that applies a [`crate::sync::plan`] plan to the
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

pub mod config;
pub mod lineage;
pub mod plan;
#[cfg(feature = "sync")]
pub mod seal;

#[cfg(feature = "sync")]
mod error;
#[cfg(feature = "sync")]
mod listing;
#[cfg(feature = "sync")]
mod open;
#[cfg(feature = "sync")]
mod pull;
#[cfg(feature = "sync")]
mod push;
#[cfg(feature = "sync")]
mod remote;
#[cfg(feature = "sync")]
mod state;
#[cfg(feature = "sync")]
mod status;

#[cfg(feature = "sync")]
pub use error::SyncError;
#[cfg(feature = "sync")]
pub use listing::{Change, changes, for_each_file, listing};
#[cfg(feature = "sync")]
pub use open::{Choice, Opened, default_key_path, open, open_provider, push_after_write};
#[cfg(feature = "sync")]
pub use pull::pull;
#[cfg(feature = "sync")]
pub use push::push;
#[cfg(feature = "sync")]
pub use remote::{ConflictCopy, PullReport, PushReport, Remote, Seal, SkippedFile, SyncReport};
#[cfg(feature = "sync")]
pub use state::{Base, HISTORY_MAX, Pushed, State};
#[cfg(feature = "sync")]
pub use status::{Status, status};

#[cfg(feature = "sync")]
mod round;
#[cfg(feature = "sync")]
pub use round::{SYNC_ROUNDS, sync};
