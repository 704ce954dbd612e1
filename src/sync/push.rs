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
use crate::sync::error::SyncError;
use crate::sync::listing::{base_blocks, build, for_each_file, tree_problem};
use crate::sync::plan::{self, FileClass};
use crate::sync::remote::{Outgoing, PushReport, Remote};
use crate::sync::state::{Base, Pushed, State};

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
    let (tree, mut state) = mem.with_lock(|files| -> Result<_> {
        files.rebuild_index()?;
        Ok((files.tree()?, State::load(backend)?))
    })?;
    refuse_unpublishable(&tree)?;
    let dag = build(&tree, mem)?;
    let plain_car = car::car_bytes(&dag);
    let provider = remote.provider.name().to_string();
    let base = state.base.clone();
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
    let key = remote.key_fingerprint();
    let decision = plan_push(&PushInputs {
        state: &state,
        root: &dag.root,
        mode: remote.mode(),
        key: key.as_deref(),
        provider: &provider,
        head,
        force,
        keeps_blocks: remote.provider.capabilities().keeps_blocks,
    })?;
    let upload = match decision {
        PushPlan::UpToDate { network_root } => {
            report.up_to_date = true;
            report.network_root = network_root;
            return Ok(report);
        }
        PushPlan::RemoteAhead { head, base } => {
            return Err(SyncError::RemoteAhead {
                provider,
                channel: remote.channel.to_string(),
                head,
                base,
            });
        }
        PushPlan::Upload(u) => u,
    };
    // What this version was built on: the base, the versions before it and those
    // merged into it (spec/sync.md#lineage).
    let lineage = state.lineage();
    let outgoing = remote.outgoing(&dag, &plain_car, &lineage, mem)?;
    let full_len = outgoing.car.len() as u64;
    let known = known_blocks(mem, remote, &state, &upload, &base, &mut warnings);
    let receipt = send(remote, &outgoing, &known)?;
    let network_root = outgoing.root;
    report.network_root = network_root.to_string();
    report.car_bytes = receipt.car_bytes;
    report.full_car_bytes = full_len;
    report.delta = receipt.delta;
    if !remote.encrypted() {
        store_lineage(remote, &network_root, &lineage, &mut warnings);
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
    let roots = [network_root, dag.root];
    record(mem, &mut state, remote, &receipt, roots, &plain_car)?;
    unpin_old(mem, &mut state, remote, &mut report, &mut warnings)?;
    report.warnings = warnings;
    Ok(report)
}

/// Refuses a tree that must not be published: a memory or timeline file that looks
/// like it holds a secret, or what every other device would refuse to pull
/// (spec/sync.md#pull).
fn refuse_unpublishable(tree: &Node) -> Result<()> {
    let mut secret = None;
    for_each_file(tree, &mut |path, bytes| {
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
    if let Some((path, reason)) = tree_problem(tree) {
        return Err(SyncError::Unsyncable { path, reason });
    }
    Ok(())
}

/// The blocks the provider keeps from the base, when the plan allows a delta and the
/// provider still holds the base: send the rest. It is asked first (one cheap call),
/// so a node that lost the base gets the full CAR at once instead of after the
/// delta's timeout. Empty when the whole CAR goes.
fn known_blocks(
    mem: &Memory,
    remote: &Remote<'_>,
    state: &State,
    upload: &Upload,
    base: &Option<Base>,
    warnings: &mut Vec<String>,
) -> HashSet<Cid> {
    match (upload, base) {
        (Upload::DeltaIfBasePinned, Some(b))
            if remote.provider.has(&b.network_root).unwrap_or(false) =>
        {
            base_blocks(mem, state, warnings)
                .map(|(_, blocks)| blocks.into_keys().collect())
                .unwrap_or_default()
        }
        _ => HashSet::new(),
    }
}

/// Uploads what leaves the device: the blocks beyond `known` as a delta (the provider
/// falls back to the whole CAR), or the whole CAR.
fn send(remote: &Remote<'_>, outgoing: &Outgoing<'_>, known: &HashSet<Cid>) -> Result<Receipt> {
    Ok(match &outgoing.dag {
        Some(dag) if !known.is_empty() => {
            let delta = crate::provider::delta_car(dag, known);
            remote
                .provider
                .put_car_delta(&outgoing.root, &delta, &outgoing.car, remote.progress)?
        }
        _ => remote
            .provider
            .put_car(&outgoing.root, &outgoing.car, remote.progress)?,
    })
}

/// Plain mode: the lineage goes next to the version. (Encrypted: sealed in the
/// envelope, where the MAC covers it; a file beside it could be forged.)
fn store_lineage(
    remote: &Remote<'_>,
    network_root: &Cid,
    lineage: &[Cid],
    warnings: &mut Vec<String>,
) {
    match remote
        .provider
        .put_lineage(network_root, &super::lineage::encode(lineage))
    {
        Ok(()) | Err(ProviderError::Unsupported { .. }) => {}
        Err(e) => warnings.push(format!("could not store the lineage of this version: {e}")),
    }
}

/// Records the pin of `[network root, plaintext root]`, then the new base with its
/// CAR, in one state write.
fn record(
    mem: &Memory,
    state: &mut State,
    remote: &Remote<'_>,
    receipt: &Receipt,
    [network_root, plain_root]: [Cid; 2],
    plain_car: &[u8],
) -> Result<()> {
    let now = mem.now();
    let provider = &remote.provider.name().to_string();
    let list = state.pushes.entry(provider.clone()).or_default();
    list.retain(|p| p.root != network_root);
    list.push(Pushed {
        root: network_root,
        plain_root,
        provider_id: receipt.provider_id.clone(),
        car_bytes: receipt.car_bytes,
        delta: receipt.delta,
        at: now,
        key_fingerprint: remote.key_fingerprint(),
    });
    let new_base = Base {
        root: plain_root,
        network_root,
        mode: remote.mode(),
        provider: provider.clone(),
        via: "push".into(),
        at: now,
        key_fingerprint: remote.key_fingerprint(),
    };
    state.remember(None);
    mem.with_lock(|files| state.record_base(files, new_base, &plain_root, plain_car))?;
    Ok(())
}

/// Unpins what is beyond the versions to keep; a failure keeps the record to retry.
fn unpin_old(
    mem: &Memory,
    state: &mut State,
    remote: &Remote<'_>,
    report: &mut PushReport,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let provider = report.provider.clone();
    let list = state.pushes.get(&provider).cloned().unwrap_or_default();
    let old = unpin_plan(&list, remote.keep_versions);
    if !old.is_empty() && remote.provider.capabilities().unpin {
        let mut gone = Vec::new();
        for p in old {
            let receipt = Receipt {
                provider_id: p.provider_id.clone(),
                ..Receipt::for_root(&provider, p.root)
            };
            match remote.provider.unpin(&receipt) {
                Ok(()) => gone.push(p.root),
                Err(e) => warnings.push(format!("could not unpin {}: {e}", p.root)),
            }
        }
        if !gone.is_empty() {
            if let Some(v) = state.pushes.get_mut(&provider) {
                v.retain(|p| !gone.contains(&p.root));
            }
            mem.with_lock(|files| state.save(files))?;
            report.unpinned = gone.iter().map(Cid::to_string).collect();
        }
    }
    Ok(())
}

/// What a push reads before it decides: the sync state, the version to publish, and
/// what the provider said.
pub(crate) struct PushInputs<'a> {
    pub state: &'a State,
    /// The plaintext root of the directory.
    pub root: &'a Cid,
    pub mode: Mode,
    /// The fingerprint of the key this push seals to (`None` in `ipfs` mode).
    pub key: Option<&'a str>,
    pub provider: &'a str,
    /// The provider's head, `None` when it keeps none or has nothing.
    pub head: Option<Cid>,
    pub force: bool,
    /// Whether the provider keeps earlier blocks (a delta can be sent).
    pub keeps_blocks: bool,
}

/// What a push does (spec/sync.md#push).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PushPlan {
    /// The provider already has this version: nothing is sent.
    UpToDate { network_root: String },
    /// The head names a version this directory has not pulled: refused. `base` is
    /// the network root this directory last synced, for the message.
    RemoteAhead { head: Cid, base: Option<Cid> },
    /// Send it.
    Upload(Upload),
}

/// How the version is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Upload {
    /// The whole CAR (sealed or plain).
    Full,
    /// Only the blocks the provider lacks, when it still pins the base (asked just
    /// before the upload); else the whole CAR.
    DeltaIfBasePinned,
}

/// Decides a push from what it read, before anything is sent: pure, so the case
/// table is tested without a provider (`push::tests`).
pub(crate) fn plan_push(i: &PushInputs<'_>) -> Result<PushPlan> {
    let base = i.state.base.as_ref();
    let base_network = base.map(|b| b.network_root);
    // A plain base pulled from another tool's DAG was re-encoded: the provider holds
    // the foreign root, not ours, so the profile root is still to be published and no
    // block of ours can be assumed there (spec/sync.md#foreign-dags).
    let re_encoded = base.is_some_and(|b| b.mode == Mode::Ipfs && b.root != b.network_root);
    // Already there: the base is this exact version, sealed to this key, and it is the
    // provider's head (or, without a head, a pin we made on this provider). Sealed to
    // another key (or to a key not recorded) it is re-sealed and pushed: a device
    // holding only this key could not open it (spec/sync.md#key-rotation).
    if let Some(b) = base
        && b.root == *i.root
        && b.mode == i.mode
        && b.key_fingerprint.as_deref() == i.key
        && !re_encoded
    {
        let pinned_here = i
            .state
            .pushes
            .get(i.provider)
            .is_some_and(|v| v.iter().any(|p| p.root == b.network_root));
        let head_is_base = i.head.is_some() && i.head == base_network;
        if head_is_base || (i.head.is_none() && pinned_here) {
            return Ok(PushPlan::UpToDate {
                network_root: b.network_root.to_string(),
            });
        }
    }
    // A head this directory already passed (a rolled-back head) is pushed over: its
    // content is already part of ours (spec/sync.md#lineage).
    if let Some(h) = i.head
        && !i.force
        && Some(h) != base_network
        && !i.state.has_seen(&h)
        && !(i.mode == Mode::Ipfs && h == *i.root)
    {
        return Ok(PushPlan::RemoteAhead {
            head: h,
            base: base_network,
        });
    }
    let delta = i.mode == Mode::Ipfs
        && !re_encoded
        && i.keeps_blocks
        && base.is_some_and(|b| b.mode == Mode::Ipfs && base_on(i.state, b, i.provider));
    Ok(PushPlan::Upload(if delta {
        Upload::DeltaIfBasePinned
    } else {
        Upload::Full
    }))
}

/// The pins beyond the newest `keep` (at least one) of a provider's list, oldest
/// first: what a push unpins.
pub(crate) fn unpin_plan(pushes: &[Pushed], keep: u32) -> &[Pushed] {
    let keep = keep.max(1) as usize;
    &pushes[..pushes.len().saturating_sub(keep)]
}

/// Whether `provider` holds the base's blocks: it was pushed there or pulled from there.
fn base_on(state: &State, base: &Base, provider: &str) -> bool {
    base.provider == provider
        || state
            .pushes
            .get(provider)
            .is_some_and(|v| v.iter().any(|p| p.root == base.network_root))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipfs::unixfs::block_cid;
    use chrono::{DateTime, Utc};

    fn cid(n: u8) -> Cid {
        block_cid(crate::ipfs::unixfs::CODEC_RAW, &[n])
    }

    fn base(root: &Cid, network: &Cid, mode: Mode, provider: &str) -> Base {
        Base {
            root: *root,
            network_root: *network,
            mode,
            provider: provider.into(),
            via: "push".into(),
            at: DateTime::<Utc>::UNIX_EPOCH,
            key_fingerprint: None,
        }
    }

    fn pushed(root: &Cid) -> Pushed {
        Pushed {
            root: *root,
            plain_root: *root,
            provider_id: String::new(),
            car_bytes: 1,
            delta: false,
            at: DateTime::<Utc>::UNIX_EPOCH,
            key_fingerprint: None,
        }
    }

    fn check(
        state: &State,
        root: &Cid,
        mode: Mode,
        head: Option<Cid>,
        force: bool,
        keeps_blocks: bool,
    ) -> PushPlan {
        plan_push(&PushInputs {
            state,
            root,
            mode,
            key: None,
            provider: "kubo",
            head,
            force,
            keeps_blocks,
        })
        .unwrap()
    }

    // spec/sync.md#push: the decisions of a push, one row each.
    #[test]
    fn push_plan_case_table() {
        let (a, b, h, old) = (cid(1), cid(2), cid(3), cid(4));
        let fresh = State::default();
        // First push, nothing on the provider: the whole CAR.
        assert_eq!(
            check(&fresh, &a, Mode::Ipfs, None, false, true),
            PushPlan::Upload(Upload::Full)
        );
        // First push over somebody else's head: refused, unless forced.
        assert_eq!(
            check(&fresh, &a, Mode::Ipfs, Some(h), false, true),
            PushPlan::RemoteAhead {
                head: h,
                base: None
            }
        );
        assert_eq!(
            check(&fresh, &a, Mode::Ipfs, Some(h), true, true),
            PushPlan::Upload(Upload::Full)
        );
        // The head already is this plain version (another device pushed the same files).
        assert_eq!(
            check(&fresh, &a, Mode::Ipfs, Some(a), false, false),
            PushPlan::Upload(Upload::Full)
        );

        let mut synced = State {
            base: Some(base(&a, &a, Mode::Ipfs, "kubo")),
            ..State::default()
        };
        // Unchanged and the head is the base: nothing to send.
        assert_eq!(
            check(&synced, &a, Mode::Ipfs, Some(a), false, true),
            PushPlan::UpToDate {
                network_root: a.to_string()
            }
        );
        // Unchanged, no head, but not pinned here: sent (to this provider).
        assert_eq!(
            check(&synced, &a, Mode::Ipfs, None, false, false),
            PushPlan::Upload(Upload::Full)
        );
        synced.pushes.insert("kubo".into(), vec![pushed(&a)]);
        assert_eq!(
            check(&synced, &a, Mode::Ipfs, None, false, false),
            PushPlan::UpToDate {
                network_root: a.to_string()
            }
        );
        // Changed, the head is the base: a delta when the provider keeps blocks.
        assert_eq!(
            check(&synced, &b, Mode::Ipfs, Some(a), false, true),
            PushPlan::Upload(Upload::DeltaIfBasePinned)
        );
        assert_eq!(
            check(&synced, &b, Mode::Ipfs, Some(a), false, false),
            PushPlan::Upload(Upload::Full)
        );
        // Encrypted: always the whole sealed blob.
        assert_eq!(
            check(&synced, &b, Mode::EncryptedIpfs, Some(a), false, true),
            PushPlan::Upload(Upload::Full)
        );
        // A head this directory has not seen: refused.
        assert_eq!(
            check(&synced, &b, Mode::Ipfs, Some(h), false, true),
            PushPlan::RemoteAhead {
                head: h,
                base: Some(a)
            }
        );
        // A rolled-back head (seen before): pushed over.
        synced.history.push(old);
        assert_eq!(
            check(&synced, &b, Mode::Ipfs, Some(old), false, true),
            PushPlan::Upload(Upload::DeltaIfBasePinned)
        );
        // The base came from another provider and was never pushed here: no delta.
        let elsewhere = State {
            base: Some(base(&a, &a, Mode::Ipfs, "pinata")),
            ..State::default()
        };
        assert_eq!(
            check(&elsewhere, &b, Mode::Ipfs, None, false, true),
            PushPlan::Upload(Upload::Full)
        );
        // spec/sync.md#foreign-dags: a base pulled from another tool's DAG `h`, re-encoded
        // to `a`. Unchanged, its head still `h`: the profile root is published (not
        // "up to date"), in full (the provider holds h's blocks, not a's), and the
        // head is not "ahead" (it is the base).
        let foreign = State {
            base: Some(base(&a, &h, Mode::Ipfs, "kubo")),
            ..State::default()
        };
        assert_eq!(
            check(&foreign, &a, Mode::Ipfs, Some(h), false, true),
            PushPlan::Upload(Upload::Full)
        );
        assert_eq!(
            check(&foreign, &b, Mode::Ipfs, Some(h), false, true),
            PushPlan::Upload(Upload::Full)
        );
    }

    // spec/sync.md#key-rotation: an unchanged encrypted version is up to date only when
    // the base was sealed to the key this push seals to.
    #[test]
    fn push_plan_reseals_for_another_key() {
        let (plain, sealed) = (cid(1), cid(2));
        let with_key = |key: Option<&str>| State {
            base: Some(Base {
                key_fingerprint: key.map(str::to_string),
                ..base(&plain, &sealed, Mode::EncryptedIpfs, "kubo")
            }),
            ..State::default()
        };
        let plan = |state: &State, key: &str, head: Option<Cid>| {
            plan_push(&PushInputs {
                state,
                root: &plain,
                mode: Mode::EncryptedIpfs,
                key: Some(key),
                provider: "kubo",
                head,
                force: false,
                keeps_blocks: true,
            })
            .unwrap()
        };
        let up_to_date = PushPlan::UpToDate {
            network_root: sealed.to_string(),
        };
        // Same key, the head is the base: nothing to send.
        assert_eq!(plan(&with_key(Some("k1")), "k1", Some(sealed)), up_to_date);
        // Another key: the same plaintext is sealed again and sent in full, over the
        // head it replaces (the base, so not "ahead").
        assert_eq!(
            plan(&with_key(Some("k1")), "k2", Some(sealed)),
            PushPlan::Upload(Upload::Full)
        );
        // A state written before keys were recorded: unknown, re-sealed.
        assert_eq!(
            plan(&with_key(None), "k1", Some(sealed)),
            PushPlan::Upload(Upload::Full)
        );
        // Without a head, a pin of the old key's blob does not count either.
        let mut pinned = with_key(Some("k1"));
        pinned.pushes.insert("kubo".into(), vec![pushed(&sealed)]);
        assert_eq!(plan(&pinned, "k1", None), up_to_date);
        assert_eq!(plan(&pinned, "k2", None), PushPlan::Upload(Upload::Full));
    }

    #[test]
    fn unpin_plan_keeps_the_newest() {
        let list: Vec<Pushed> = (1..=5).map(|n| pushed(&cid(n))).collect();
        assert_eq!(unpin_plan(&list, 3), &list[..2]);
        assert_eq!(unpin_plan(&list, 5), &[] as &[Pushed]);
        assert_eq!(unpin_plan(&list, 9), &[] as &[Pushed]);
        // At least the current version stays pinned.
        assert_eq!(unpin_plan(&list, 0), &list[..4]);
    }
}
