//! Pull: download, verify, plan and apply a remote version.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use cid::Cid;

use crate::engine::{IndexOwner, Locked, Memory};
use crate::exchange::merge::Strategy;
use crate::ipfs::car::{self, CarLimits};
use crate::ipfs::unixfs::{self, Node};
use crate::memory::layout::INDEX_FILE;
use crate::provider::Blocks;
use crate::store::Backend;
use crate::sync::error::Result;
use crate::sync::error::SyncError;
use crate::sync::lineage::{self, Relation};
use crate::sync::listing::{base_listing, build, listing, tree_problem};
use crate::sync::plan::{self, Op};
use crate::sync::remote::{ConflictCopy, PullReport, Remote, SkippedFile};
use crate::sync::seal::{self, Sealed};
use crate::sync::state::{Base, State};

/// A verified, decoded download: the plaintext tree and its CAR.
struct Fetched {
    plain_root: Cid,
    tree: Node,
    plain_car: Vec<u8>,
    /// The lineage sealed in the envelope (`encrypted-ipfs`), authenticated by its MAC.
    lineage: Option<Vec<Cid>>,
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
    let decode = |root: &Cid, blocks: &Blocks| {
        unixfs::decode(root, blocks, &expansion_limits(blocks)).map_err(|e| SyncError::Decode {
            root: *root,
            source: Box::new(e),
        })
    };
    if remote.encrypted() {
        // A sealed blob is memdir's own, so it is decoded strictly.
        let Node::File(bytes) = decode(root, &blocks)? else {
            return Err(SyncError::NotSealed { root: *root });
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
        let lineage = plain.lineage().map(<[Cid]>::to_vec);
        let (plain_root, plain_car) = plain.into_parts();
        let inner = car::read_car(plain_car.as_slice(), &plain_root, &CarLimits::default())
            .map_err(|source| SyncError::InnerCar {
                root: *root,
                source,
            })?;
        let tree = decode(&plain_root, &inner)?;
        if matches!(tree, Node::File(_)) {
            return Err(SyncError::NotADirectory { root: plain_root });
        }
        check_tree(root, &tree)?;
        Ok(Fetched {
            plain_root,
            tree,
            plain_car,
            lineage,
        })
    } else {
        // Any well-formed UnixFS DAG is read, whichever tool made it (spec/sync.md#foreign-dags),
        // and re-encoded under the profile: a memdir DAG re-encodes to its own root, another
        // tool's to the profile root memdir records beside the root it was pulled by.
        let outer =
            unixfs::decode_foreign(root, &blocks, &expansion_limits(&blocks)).map_err(|e| {
                SyncError::Decode {
                    root: *root,
                    source: Box::new(e),
                }
            })?;
        if matches!(outer, Node::File(_)) {
            return Err(SyncError::NotADirectory { root: *root });
        }
        check_tree(root, &outer)?;
        let dag = build(&outer, mem)?;
        Ok(Fetched {
            plain_root: dag.root,
            plain_car: car::car_bytes(&dag),
            tree: outer,
            lineage: None,
        })
    }
}

/// Bytes a downloaded tree may expand to, beyond what was stored.
const EXPAND_BASE: u64 = 16 << 20;
/// ... and per byte stored: names sharing one block make a small CAR a large tree.
const EXPAND_FACTOR: u64 = 16;

/// Decoding limits for `blocks`: the expanded tree is bounded by what was downloaded
/// (spec/sync.md#pull), so a few shared blocks cannot become gigabytes of files.
fn expansion_limits(blocks: &Blocks) -> unixfs::Limits {
    let stored: u64 = blocks.values().map(|b| b.len() as u64).sum();
    unixfs::Limits {
        max_total_bytes: EXPAND_BASE
            .saturating_add(EXPAND_FACTOR.saturating_mul(stored))
            .min(CarLimits::default().max_total_bytes),
        ..unixfs::Limits::default()
    }
}

/// Checks a downloaded tree against what a memory directory may contain before any of
/// it is applied (spec/sync.md#pull): names of at most 255 bytes without control
/// characters, `MEMORY.md` and `*.md` at the top and timeline day files are files,
/// `timeline` is a folder.
fn check_tree(root: &Cid, tree: &Node) -> Result<()> {
    match tree_problem(tree) {
        Some((path, reason)) => Err(SyncError::Foreign {
            root: *root,
            path,
            reason,
        }),
        None => Ok(()),
    }
}

/// A write the plan makes that the local directory's shape would stop half way: a
/// folder where a file goes, or a file where a folder goes.
fn shape_conflict(path: &str, local: &plan::Listing) -> Option<String> {
    let mut at = 0;
    while let Some(i) = path[at..].find('/') {
        let parent = &path[..at + i];
        if local.contains_key(parent) {
            return Some(format!("{parent} is a file here"));
        }
        at += i + 1;
    }
    let dir = format!("{path}/");
    local
        .range(dir.clone()..)
        .next()
        .filter(|(k, _)| k.starts_with(&dir))
        .map(|_| format!("{path} is a folder here"))
}

/// Whether a remote file may be written: memdir never stores what looks like a secret.
fn refuse_secret(path: &str, content: &[u8]) -> Option<SkippedFile> {
    let text = String::from_utf8_lossy(content);
    crate::memory::secrets::find_secret(&text).map(|kind| SkippedFile {
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
    let base_network = state0.base.as_ref().map(|b| b.network_root);
    // spec/sync.md#lineage: a version this directory already passed (a restored
    // backup, a rolled-back head, a replayed blob) is never applied as new.
    if base_network.is_some_and(|b| b != *root) && state0.has_seen(root) {
        return Ok(behind_report(remote, root, strategy, dry_run));
    }
    let expected_plain = state0
        .base
        .as_ref()
        .filter(|b| b.network_root == *root)
        .map(|b| b.root);
    let fetched = fetch(mem, remote, root, expected_plain)?;
    let mut warnings = Vec::new();
    let remote_lineage = remote_lineage(remote, root, &fetched, &mut warnings);
    let relation = lineage::relate(
        base_network.as_ref(),
        &state0.lineage(),
        root,
        remote_lineage.as_deref(),
    );
    let common_listing = common_listing(mem, remote, &relation, &mut warnings);
    let diverged = matches!(relation, Relation::Diverged { .. });
    let remote_listing = listing(&fetched.tree);
    // A dry run reads only: it creates nothing, not even the directory or its lock.
    // The plan is made under the lock with the handle that writes; a dry run makes
    // it without either, and stops before the first write.
    let run = |f: &mut dyn FnMut(Option<&Locked<'_>>) -> Result<PullReport>| -> Result<PullReport> {
        if dry_run {
            f(None)
        } else {
            backend.create()?;
            mem.with_lock(|files| f(Some(files)))
        }
    };
    run(&mut |files| {
        let mut state = State::load(backend)?;
        let (had_base, base_listing) = plan_base(
            mem,
            &state,
            root,
            diverged.then_some(&common_listing),
            &mut warnings,
        );
        let local_listing = local_listing(backend, dry_run)?;
        let mut plan = plan::plan(&base_listing, &local_listing, &remote_listing, strategy);
        // Without a line of descent (diverged, or a first sync) deletions cross only
        // as recorded forgets (spec/sync.md#tombstones).
        if diverged || relation == Relation::First {
            plan = lineage::make_safe(plan, had_base, &local_listing, &remote_listing);
        }
        seed_agent_index(mem, &local_listing, &remote_listing, &mut plan)?;
        let mut report = PullReport {
            provider: remote.provider.name().to_string(),
            mode: remote.mode(),
            strategy,
            dry_run,
            root: root.to_string(),
            plain_root: fetched.plain_root.to_string(),
            re_encoded: !remote.encrypted() && fetched.plain_root != *root,
            had_base,
            behind: false,
            diverged,
            decisions: plan.report.clone(),
            written: 0,
            deleted: 0,
            conflicts: Vec::new(),
            open_conflicts: Vec::new(),
            skipped: Vec::new(),
            warnings: std::mem::take(&mut warnings),
        };
        let ops = refuse_secrets(plan.ops, &local_listing, &mut report.skipped);
        check_shapes(root, &ops, &local_listing)?;
        count(&ops, &mut report);
        report.open_conflicts = open_after(mem, &local_listing, &ops)?;
        let Some(files) = files else {
            return Ok(report);
        };
        apply(files, &ops)?;
        files.rebuild_index()?;
        record(
            mem,
            files,
            &mut state,
            remote,
            root,
            &fetched,
            &remote_lineage,
        )?;
        Ok(report)
    })
}

/// With the agent's index (spec/sync.md#claude-codes-memory-directory), MEMORY.md is
/// left per device; only a device that has none starts from the remote's, cut to what
/// Claude Code loads (200 lines or 25 KB), so memdir never writes an index past it.
fn seed_agent_index(
    mem: &Memory,
    local: &plan::Listing,
    remote: &plan::Listing,
    plan: &mut plan::Plan,
) -> Result<()> {
    if local.contains_key(INDEX_FILE) || mem.index_owner()? != IndexOwner::Agent {
        return Ok(());
    }
    let Some(text) = remote.get(INDEX_FILE) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(text);
    let part = crate::memory::index::agent_loaded_part(&text);
    if !part.is_empty() {
        plan.ops.insert(
            0,
            Op::Write {
                path: INDEX_FILE.to_string(),
                content: part.as_bytes().to_vec(),
            },
        );
        plan.report.push(plan::Decision {
            path: INDEX_FILE.to_string(),
            outcome: plan::Outcome::TookRemote,
        });
    }
    Ok(())
}

/// This directory's listing; a dry run on a directory not created yet sees it empty
/// (it creates nothing).
fn local_listing(backend: &Backend, dry_run: bool) -> Result<plan::Listing> {
    Ok(if dry_run && !backend.exists() {
        plan::Listing::new()
    } else {
        listing(&backend.tree()?)
    })
}

/// The listing the plan takes as the common base, and whether there is one: the
/// last synced version's, or when the remote diverged (`diverged` holds the common
/// ancestor's listing, if one was found) that of the version both descend from.
fn plan_base(
    mem: &Memory,
    state: &State,
    root: &Cid,
    diverged: Option<&Option<plan::Listing>>,
    warnings: &mut Vec<String>,
) -> (bool, plan::Listing) {
    let Some(common_listing) = diverged else {
        return base_listing(mem, state, warnings);
    };
    warnings.push(format!(
        "{root} does not descend from this directory's last synced version (another device pushed beside it): merged without deleting or reverting anything here but recorded forgets"
    ));
    match common_listing {
        Some(l) => (true, l.clone()),
        None => (false, plan::Listing::new()),
    }
}

/// Records `root` as the new base, and it and its lineage as versions this directory
/// has passed.
fn record(
    mem: &Memory,
    files: &Locked<'_>,
    state: &mut State,
    remote: &Remote<'_>,
    root: &Cid,
    fetched: &Fetched,
    remote_lineage: &Option<Vec<Cid>>,
) -> Result<()> {
    let now = mem.now();
    let new_base = Base {
        root: fetched.plain_root,
        network_root: *root,
        mode: remote.mode(),
        provider: remote.provider.name().to_string(),
        via: "pull".into(),
        at: now,
        // It opened with this key, and its MAC says a holder of this key sealed it.
        key_fingerprint: remote.key_fingerprint(),
    };
    let mut learned = vec![*root];
    learned.extend(remote_lineage.iter().flatten().copied());
    state.remember(learned);
    state.record_base(files, new_base, &fetched.plain_root, &fetched.plain_car)?;
    Ok(())
}

/// The report of a pull that found `root` among the versions this directory already
/// passed: nothing fetched, nothing applied.
fn behind_report(remote: &Remote<'_>, root: &Cid, strategy: Strategy, dry_run: bool) -> PullReport {
    PullReport {
        provider: remote.provider.name().to_string(),
        mode: remote.mode(),
        strategy,
        dry_run,
        root: root.to_string(),
        plain_root: String::new(),
        re_encoded: false,
        had_base: true,
        behind: true,
        diverged: false,
        decisions: Vec::new(),
        written: 0,
        deleted: 0,
        conflicts: Vec::new(),
        open_conflicts: Vec::new(),
        skipped: Vec::new(),
        warnings: Vec::new(),
    }
}

/// The lineage of the fetched version: sealed in the envelope (`encrypted-ipfs`), or
/// what the provider stores beside a plain root; `None`, with a warning, when it
/// cannot be read.
fn remote_lineage(
    remote: &Remote<'_>,
    root: &Cid,
    fetched: &Fetched,
    warnings: &mut Vec<String>,
) -> Option<Vec<Cid>> {
    if remote.encrypted() {
        fetched.lineage.clone()
    } else {
        match remote.provider.lineage(root) {
            Ok(Some(bytes)) => match lineage::decode(&bytes) {
                Ok(v) => Some(v),
                Err(e) => {
                    warnings.push(format!(
                        "the lineage stored for {root} is unreadable ({e}); merged as a version of unknown lineage"
                    ));
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                warnings.push(format!("could not read the lineage of {root}: {e}"));
                None
            }
        }
    }
}

/// A diverged version is merged against the nearest version both sides include,
/// when it can still be fetched; otherwise without a base.
fn common_listing(
    mem: &Memory,
    remote: &Remote<'_>,
    relation: &Relation,
    warnings: &mut Vec<String>,
) -> Option<plan::Listing> {
    match relation {
        Relation::Diverged { common: Some(c) } => match fetch(mem, remote, c, None) {
            Ok(f) => Some(listing(&f.tree)),
            Err(e) => {
                warnings.push(format!(
                    "could not fetch {c}, the last version both sides share ({e}); merged without a base"
                ));
                None
            }
        },
        _ => None,
    }
}

/// The plan's operations less the writes of remote bytes that look like a secret,
/// each of those recorded in `skipped`.
fn refuse_secrets(ops: Vec<Op>, local: &plan::Listing, skipped: &mut Vec<SkippedFile>) -> Vec<Op> {
    let mut kept = Vec::new();
    for op in ops {
        match &op {
            Op::Write { path, content } | Op::SaveConflict { path, content, .. } => {
                // Only remote bytes can bring a secret in; local ones are already here.
                if local.get(path) != Some(content)
                    && let Some(s) = refuse_secret(path, content)
                {
                    skipped.push(s);
                    continue;
                }
            }
            _ => {}
        }
        kept.push(op);
    }
    kept
}

/// Refuses the whole pull, before anything is written, when a write would meet a
/// folder where a file goes or a file where a folder goes.
fn check_shapes(root: &Cid, ops: &[Op], local: &plan::Listing) -> Result<()> {
    for op in ops {
        if let Op::Write { path, .. } | Op::SaveConflict { copy: path, .. } = op
            && let Some(reason) = shape_conflict(path, local)
        {
            return Err(SyncError::Foreign {
                root: *root,
                path: crate::memory::printable::escape_line(path),
                reason,
            });
        }
    }
    Ok(())
}

/// Counts the writes, deletions and conflict copies into the report.
fn count(ops: &[Op], report: &mut PullReport) {
    for op in ops {
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
}

/// The conflicts open once `ops` are applied to `local`: the synced copies under
/// `conflicts/` the directory will hold, and the copies an older memdir saved under
/// `.memdir/conflicts/` (which no pull touches).
fn open_after(mem: &Memory, local: &plan::Listing, ops: &[Op]) -> Result<Vec<ConflictCopy>> {
    use crate::memory::layout::{CONFLICTS_DIR, conflict_original};
    let prefix = format!("{CONFLICTS_DIR}/");
    let mut copies: std::collections::BTreeSet<&str> = local
        .keys()
        .map(String::as_str)
        .filter(|p| p.starts_with(&prefix))
        .collect();
    for op in ops {
        match op {
            Op::Delete { path } => {
                copies.remove(path.as_str());
            }
            Op::Write { path: p, .. } | Op::SaveConflict { copy: p, .. }
                if p.starts_with(&prefix) =>
            {
                copies.insert(p);
            }
            _ => {}
        }
    }
    let mut open: Vec<ConflictCopy> = copies
        .into_iter()
        .map(|c| ConflictCopy {
            path: conflict_original(&c[prefix.len()..]),
            copy: c.to_string(),
        })
        .collect();
    open.extend(
        crate::sync::remote::open_conflicts(mem)?
            .into_iter()
            .filter(|c| !c.copy.starts_with(&prefix)),
    );
    open.sort_by(|a, b| a.copy.cmp(&b.copy));
    Ok(open)
}

/// Applies the operations under the lock; the index is rebuilt after.
fn apply(files: &Locked<'_>, ops: &[Op]) -> Result<()> {
    for op in ops {
        match op {
            Op::SaveConflict { copy, content, .. } => files.write_atomic(copy, content)?,
            Op::Delete { path } => files.remove(path)?,
            Op::Write { path, content } => files.write_atomic(path, content)?,
            Op::RebuildIndex => {}
        }
    }
    Ok(())
}
