//! Push: publish the directory to a provider and move the head.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use std::collections::HashSet;

use cid::Cid;

use crate::engine::Memory;
use crate::ipfs::car::{self};
use crate::ipfs::unixfs::Node;
use crate::provider::{HeadSwap, ProviderError, Receipt};
use crate::sync::config::Mode;
use crate::sync::error::Result;
use crate::sync::plan::{self, FileClass};
use crate::sync::seal::{self, Plain};

use super::*;

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
    let (tree, mut state) = mem.with_lock(|| -> Result<_> {
        mem.rebuild_index_locked()?;
        Ok((backend.tree()?, State::load(backend)?))
    })?;
    let mut secret = None;
    for_each_file(&tree, &mut |path, bytes| {
        if secret.is_none()
            && matches!(plan::classify(path), FileClass::File | FileClass::Timeline)
            && let Some(kind) = crate::memory::secrets::find_secret(&String::from_utf8_lossy(bytes))
        {
            secret = Some(SyncError::Secret {
                path: path.to_string(),
                kind,
            });
        }
    });
    if let Some(e) = secret {
        return Err(e);
    }
    // What every other device would refuse to pull is not published (spec/sync.md#pull).
    if let Some((path, reason)) = super::pull::tree_problem(&tree) {
        return Err(SyncError::Unsyncable { path, reason });
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
    // A head this directory already passed (a rolled-back head) is pushed over: its
    // content is already part of ours (spec/sync.md#lineage).
    if let Some(h) = head
        && !force
        && Some(h) != base_network
        && !state.has_seen(&h)
        && !(remote.mode() == Mode::Ipfs && h == dag.root)
    {
        return Err(SyncError::RemoteAhead {
            provider,
            channel: remote.channel.to_string(),
            head: h,
            base: base_network,
        });
    }
    // What this version was built on: the base, the versions before it and those
    // merged into it (spec/sync.md#lineage).
    let lineage = state.lineage();
    let (network_root, receipt, full_len) = if remote.encrypted() {
        let sealed_lineage: Vec<Cid> = lineage
            .iter()
            .take(seal::MAX_LINEAGE)
            .filter_map(|r| Cid::try_from(r.as_str()).ok())
            .collect();
        let plain = Plain::new(dag.root, plain_car.clone()).with_lineage(sealed_lineage);
        let sealed = seal::seal(&plain, remote.key()?).map_err(|source| SyncError::Seal {
            root: dag.root,
            source,
        })?;
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
    if !remote.encrypted() {
        // Plain mode: next to the version. (Encrypted: sealed in the envelope, where
        // the MAC covers it; a file beside it could be forged.)
        match remote
            .provider
            .put_lineage(&network_root, &super::lineage::encode(&lineage))
        {
            Ok(()) | Err(ProviderError::Unsupported { .. }) => {}
            Err(e) => warnings.push(format!("could not store the lineage of this version: {e}")),
        }
    }
    // The head moves only from the version read above (spec/sync.md#heads).
    match remote
        .provider
        .swap_head(remote.channel, head.as_ref(), &network_root)
    {
        Ok(HeadSwap::Moved) => report.head_updated = true,
        Ok(HeadSwap::Changed { found }) => {
            return Err(SyncError::HeadMoved {
                provider,
                channel: remote.channel.to_string(),
                read: head,
                found,
                pushed: network_root,
            });
        }
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
    state.remember(None);
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
