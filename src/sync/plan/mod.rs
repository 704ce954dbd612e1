//! Sync planning: (base, local, remote listings, strategy) → a sorted plan for the local
//! directory.
//!
//! Owns the three-way merge rules of spec/sync.md#three-way-merge-case-table: which side
//! wins for each path, when a memory file both sides changed is merged line by line
//! (row 5a, through `memory::merge`), where the losing side of a conflict is saved, how
//! timeline day files are unioned, and that `MEMORY.md` is rebuilt rather than merged. It is a pure
//! function of its inputs: it must not touch the filesystem, the network, the clock or
//! the provider, and it must not decide what the base is (the sync state does). The
//! executor that applies a [`Plan`] to the directory lives at the edges; [`apply`] is
//! only the in-memory model of it, for tests and dry runs.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::exchange::merge::Strategy;
use crate::memory::layout::{INDEX_FILE, conflict_copy_path};
use crate::memory::merge;
use crate::memory::timeline;

/// A listing of the memory directory: relative path (`/`-separated) → file bytes.
pub type Listing = BTreeMap<String, Vec<u8>>;

/// Which side of a sync a version comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// This directory.
    Local,
    /// The provider's head.
    Remote,
}

impl Side {
    /// `local` or `remote`, as in the JSON report.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Local => "local",
            Side::Remote => "remote",
        }
    }
}

/// What the planner does with a kind of path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileClass {
    /// `MEMORY.md`: ignored by the merge; the plan says "rebuild index".
    Index,
    /// `timeline/YYYY-MM-DD.jsonl`: lines are unioned, never a conflict.
    Timeline,
    /// Anything else: merged as opaque bytes, except that a top-level memory file
    /// (`*.md`) both sides changed is first merged line by line (`memory::merge`).
    File,
    /// A dot entry anywhere in the path: local state, never synced, ignored.
    Ignored,
}

/// Classifies a listing path.
pub fn classify(path: &str) -> FileClass {
    if path.split('/').any(|c| c.starts_with('.')) {
        FileClass::Ignored
    } else if path == INDEX_FILE {
        FileClass::Index
    } else if path
        .strip_prefix("timeline/")
        .is_some_and(timeline::is_day_file_name)
    {
        FileClass::Timeline
    } else {
        FileClass::File
    }
}

/// One operation on the local directory. A plan lists them in the order they must run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Save the losing version of a conflict at `copy` (under [`CONFLICTS_DIR`](crate::memory::layout::CONFLICTS_DIR)) before
    /// `path` is (possibly) overwritten.
    SaveConflict {
        /// The path whose version loses.
        path: String,
        /// Where the losing version is saved.
        copy: String,
        /// The losing version's bytes.
        #[serde(skip)]
        content: Vec<u8>,
    },
    /// Delete `path` (a forget on the remote side).
    Delete {
        /// The path.
        path: String,
    },
    /// Write `content` to `path` (the remote version, or a merged timeline).
    Write {
        /// The path.
        path: String,
        /// The bytes written.
        #[serde(skip)]
        content: Vec<u8>,
    },
    /// Regenerate `MEMORY.md` from the memory files; always the last operation.
    RebuildIndex,
}

impl Op {
    /// The path the operation is about (`MEMORY.md` for the rebuild).
    pub fn path(&self) -> &str {
        match self {
            Op::SaveConflict { path, .. } | Op::Delete { path } | Op::Write { path, .. } => path,
            Op::RebuildIndex => INDEX_FILE,
        }
    }

    /// Sort key: by path, a conflict copy before the write that may replace the local
    /// version, the index rebuild after everything.
    fn order(&self) -> (u8, &str, u8) {
        match self {
            Op::SaveConflict { path, .. } => (0, path, 0),
            Op::Delete { path } => (0, path, 1),
            Op::Write { path, .. } => (0, path, 2),
            Op::RebuildIndex => (1, "", 0),
        }
    }
}

/// What the planner decided for one path whose versions were not all equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Both sides made the same change (or both deleted): nothing to do.
    Converged,
    /// Only the local side changed (or deleted): nothing to do.
    KeptLocal,
    /// Only the remote side changed or added: written locally.
    TookRemote,
    /// Deleted remotely, unchanged locally: the forget propagates.
    Forgotten,
    /// Deleted on one side, edited on the other: the edited version stays.
    EditBeatsDelete {
        /// The side that edited.
        edited: Side,
    },
    /// Both sides changed differently: `winner` stays at the path, the other version
    /// is saved at `copy`.
    Conflict {
        /// The side whose version stays at the path.
        winner: Side,
        /// Where the other version is saved.
        copy: String,
    },
    /// A timeline day file changed on both sides: lines unioned.
    Unioned,
    /// A memory file changed on both sides, in different lines or fields: both
    /// changes kept (spec/sync.md#line-wise-merge).
    Merged,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The path the decision is about.
    pub path: String,
    /// What was decided.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The operations to run on the local directory, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Sorted by [`Op::path`]; for one path a conflict copy comes first; the index
    /// rebuild is last.
    pub ops: Vec<Op>,
    /// One entry per path whose base, local and remote versions were not all equal,
    /// sorted by path. `MEMORY.md` and dot entries never appear.
    pub report: Vec<Decision>,
}

impl Plan {
    /// Paths left in conflict, with their copies (what `status` / `check` list).
    pub fn conflicts(&self) -> impl Iterator<Item = (&str, &str)> {
        self.report.iter().filter_map(|d| match &d.outcome {
            Outcome::Conflict { copy, .. } => Some((d.path.as_str(), copy.as_str())),
            _ => None,
        })
    }
}

/// Plans a three-way sync of `local` with `remote`, given `base` (the listing of the
/// last synced root; empty on a first sync). The result is deterministic and sorted.
///
/// ```
/// use memdir::sync::plan::{plan, Listing, Op};
/// use memdir::Strategy;
/// let l = |v: &[(&str, &str)]| -> Listing {
///     v.iter().map(|(p, c)| (p.to_string(), c.as_bytes().to_vec())).collect()
/// };
/// let base = l(&[("a.md", "old")]);
/// let p = plan(&base, &base, &l(&[("a.md", "new")]), Strategy::Merge);
/// assert_eq!(p.ops, vec![
///     Op::Write { path: "a.md".into(), content: b"new".to_vec() },
///     Op::RebuildIndex,
/// ]);
/// ```
pub fn plan(base: &Listing, local: &Listing, remote: &Listing, strategy: Strategy) -> Plan {
    let paths: std::collections::BTreeSet<&str> = base
        .keys()
        .chain(local.keys())
        .chain(remote.keys())
        .map(String::as_str)
        .collect();
    let mut out = Plan::default();
    let mut touches_memory = false;
    for path in paths {
        let class = classify(path);
        if matches!(class, FileClass::Index | FileClass::Ignored) {
            continue;
        }
        let (b, l, r) = (base.get(path), local.get(path), remote.get(path));
        if b == l && l == r {
            continue;
        }
        let ops_before = out.ops.len();
        let outcome = decide(path, class, b, l, r, strategy, &mut out.ops);
        touches_memory |= class == FileClass::File && out.ops.len() > ops_before;
        out.report.push(Decision {
            path: path.to_string(),
            outcome,
        });
    }
    if touches_memory {
        out.ops.push(Op::RebuildIndex);
    }
    out.ops.sort_by(|a, b| a.order().cmp(&b.order()));
    out
}

/// The decision for one path whose three versions are not all equal, pushing its ops.
fn decide(
    path: &str,
    class: FileClass,
    b: Option<&Vec<u8>>,
    l: Option<&Vec<u8>>,
    r: Option<&Vec<u8>>,
    strategy: Strategy,
    ops: &mut Vec<Op>,
) -> Outcome {
    let write = |content: &[u8]| Op::Write {
        path: path.to_string(),
        content: content.to_vec(),
    };
    if l == r {
        return Outcome::Converged;
    }
    if r == b {
        return Outcome::KeptLocal;
    }
    if l == b {
        return match r {
            Some(r) => {
                ops.push(write(r));
                Outcome::TookRemote
            }
            None => {
                ops.push(Op::Delete {
                    path: path.to_string(),
                });
                Outcome::Forgotten
            }
        };
    }
    // Both sides changed, differently.
    match (l, r) {
        (None, None) => Outcome::Converged, // unreachable: l == r was handled above
        // An edit beats a delete: the edit is newer information than the version the
        // delete removed, and undoing a forget is one more `forget`, while a lost edit
        // cannot be recovered.
        (None, Some(r)) => {
            ops.push(write(r));
            Outcome::EditBeatsDelete {
                edited: Side::Remote,
            }
        }
        (Some(_), None) => Outcome::EditBeatsDelete {
            edited: Side::Local,
        },
        (Some(l), Some(r)) if class == FileClass::Timeline => {
            let merged = union_lines(l, r);
            if merged != *l {
                // When the local side adds nothing to the remote one, the remote file
                // is taken as it is: written re-sorted it would equal neither side, and
                // the next plan (local now the base) would write the remote bytes again.
                let content = if union_lines(&[], r) == merged {
                    r
                } else {
                    &merged
                };
                ops.push(write(content));
            }
            Outcome::Unioned
        }
        (Some(l), Some(r)) => {
            if let Some(merged) = b.and_then(|b| merge_memory(path, b, l, r)) {
                if merged != *l {
                    ops.push(write(&merged));
                }
                return Outcome::Merged;
            }
            let (winner, loser) = match strategy {
                Strategy::Merge => (Side::Local, r),
                Strategy::Replace => (Side::Remote, l),
            };
            let copy = conflict_copy_path(path, loser);
            ops.push(Op::SaveConflict {
                path: path.to_string(),
                copy: copy.clone(),
                content: loser.clone(),
            });
            if winner == Side::Remote {
                ops.push(write(r));
            }
            Outcome::Conflict { winner, copy }
        }
    }
}

/// The line-wise three-way merge of a memory file (a top-level `*.md`), or `None`
/// when it is not one, a version is not UTF-8 or the changes overlap.
fn merge_memory(path: &str, b: &[u8], l: &[u8], r: &[u8]) -> Option<Vec<u8>> {
    if path.contains('/') || !path.ends_with(".md") {
        return None;
    }
    let text = |v: &[u8]| std::str::from_utf8(v).ok().map(str::to_string);
    let merged = merge::merge_file(&text(b)?, &text(l)?, &text(r)?)?;
    Some(merged.into_bytes())
}

/// The union of two timeline day files: every line of either, without duplicates, in
/// time order, each line ending in `\n`.
///
/// Lines are compared by their parsed event (so `12:00:00Z` and `12:00:00.000Z` are one
/// event) and written as the first side that has them wrote them. A line that does not
/// parse is kept verbatim (compared by its text) and travels with the parsed line before
/// it in its own file, so it is never dropped and stays near its context. Blank lines
/// are dropped. The sort is stable, so equal timestamps keep local order first.
pub fn union_lines(local: &[u8], remote: &[u8]) -> Vec<u8> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut lines: Vec<(Option<DateTime<Utc>>, String)> = Vec::new();
    for side in [local, remote] {
        let text = String::from_utf8_lossy(side);
        let mut last: Option<DateTime<Utc>> = None;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let identity = match timeline::parse_line(line) {
                Ok(e) => {
                    last = Some(e.ts);
                    format!("e{}", e.encode())
                }
                Err(_) => format!("r{line}"),
            };
            if seen.insert(identity) {
                lines.push((last, line.to_string()));
            }
        }
    }
    lines.sort_by_key(|(ts, _)| *ts);
    let mut out = Vec::new();
    for (_, line) in lines {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Applies a plan to a listing in memory, the model of what the executor does to the
/// directory. Conflict copies land at their dot-prefixed paths; `RebuildIndex` is not
/// modelled (the index is derived and ignored by the planner).
pub fn apply(local: &Listing, ops: &[Op]) -> Listing {
    let mut out = local.clone();
    for op in ops {
        match op {
            Op::SaveConflict { copy, content, .. } => {
                out.insert(copy.clone(), content.clone());
            }
            Op::Delete { path } => {
                out.remove(path);
            }
            Op::Write { path, content } => {
                out.insert(path.clone(), content.clone());
            }
            Op::RebuildIndex => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
