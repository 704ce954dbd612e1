//! Sync: pull the latest version when it is new, merge, then push the result.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use cid::Cid;

use crate::engine::Memory;
use crate::exchange::merge::Strategy;
use crate::provider::ProviderError;
use crate::sync::error::Result;

use super::*;

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
                });
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
