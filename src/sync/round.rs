//! Sync: pull the latest version when it is new, merge, then push the result.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use cid::Cid;

use crate::engine::Memory;
use crate::exchange::merge::Strategy;
use crate::provider::ProviderError;
use crate::sync::error::Result;
use crate::sync::error::SyncError;
use crate::sync::pull::pull;
use crate::sync::push::push;
use crate::sync::remote::{Remote, SyncReport, open_conflicts};
use crate::sync::state::State;

/// Rounds of pull and push `sync` tries when another device moves the head in between.
pub const SYNC_ROUNDS: u32 = 5;

/// Pulls the provider's head (or `from`) when this directory has not synced it, merges,
/// then pushes the result and records it as the new base.
///
/// A head this directory already passed is behind: it is not applied, and the push
/// moves the head forward over it. When another device moves the head between this
/// pull and this push (the swap finds it changed), the round starts again, at most
/// [`SYNC_ROUNDS`] times (spec/sync.md#heads).
pub fn sync(
    mem: &Memory,
    remote: &Remote<'_>,
    from: Option<&Cid>,
    strategy: Strategy,
) -> Result<SyncReport> {
    let mut round = 0;
    loop {
        round += 1;
        match sync_once(mem, remote, from, strategy) {
            Ok(mut r) => {
                r.rounds = round;
                return Ok(r);
            }
            Err(SyncError::HeadMoved { .. } | SyncError::RemoteAhead { .. })
                if from.is_none() && round < SYNC_ROUNDS =>
            {
                // Another device won this round: back off a little (more each time,
                // apart per process) and merge its version.
                let ms = 20 * u64::from(round) + u64::from(std::process::id() % 17) * 3;
                std::thread::sleep(std::time::Duration::from_millis(ms));
            }
            Err(e) => return Err(e),
        }
    }
}

fn sync_once(
    mem: &Memory,
    remote: &Remote<'_>,
    from: Option<&Cid>,
    strategy: Strategy,
) -> Result<SyncReport> {
    let state = State::load(mem.backend())?;
    let base_network = state.base.as_ref().map(|b| b.network_root);
    let head = match from {
        Some(c) => Some(*c),
        None => match remote.provider.head(remote.channel) {
            Ok(h) => h,
            Err(ProviderError::Unsupported { .. }) => {
                return Err(SyncError::NoHead {
                    provider: remote.provider.name().to_string(),
                });
            }
            Err(e) => return Err(e.into()),
        },
    };
    let mut behind = None;
    let pulled = match head {
        Some(h) if Some(h) != base_network && state.has_seen(&h) => {
            behind = Some(h.to_string());
            None
        }
        Some(h) if Some(h) != base_network => Some(pull(mem, remote, &h, strategy, false)?),
        _ => None,
    };
    // Never forced: if the provider's head is newer than the CID given by hand, the
    // push is refused and says so, rather than hiding that version.
    let pushed = push(mem, remote, false)?;
    Ok(SyncReport {
        pulled,
        pushed,
        behind,
        rounds: 1,
        open_conflicts: open_conflicts(mem)?,
    })
}
