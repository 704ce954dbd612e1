//! Watching a memory directory: rebuild MEMORY.md when memory files change.
//!
//! Editor saves (write-temp-then-rename), `git checkout` and hand edits all arrive as
//! bursts of file events; notify's debouncer folds a burst into one batch and one
//! rebuild. memdir's own writes cannot loop: a rebuild writes MEMORY.md only when its
//! content would change, so the event our own write causes finds nothing to do. Dot
//! entries (our temp files, `.memdir/`, `.git/`) and the timeline are ignored.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};

use crate::engine::{IndexOutcome, Indexed, Memory};
use crate::error::{Error, Result};

/// Debounce window: long enough to fold an editor's save into one event, short
/// enough that the index is rebuilt within half a second of the save.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// What the watcher did after a batch of changes.
#[derive(Debug, Clone)]
pub struct Rebuild {
    /// The files whose change triggered the rebuild.
    pub changed: Vec<PathBuf>,
    /// What the rebuild of MEMORY.md did.
    pub outcome: IndexOutcome,
    /// Problems met loading the store, if any (a malformed file a person is editing).
    pub problems: Vec<crate::engine::Problem>,
}

/// Whether a changed path can affect the index: a non-dot `*.md` directly in `root`.
fn relevant(root: &Path, p: &Path) -> bool {
    let parent_ok = p.parent().is_some_and(|d| d == root || d.ends_with(root));
    let name_ok = p
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".md") && !n.starts_with('.'));
    parent_ok && name_ok
}

/// Watches the store until `stop` is set (or `limit` elapses), calling `on_rebuild`
/// after each batch of relevant changes. The index is brought up to date first, once
/// the watch is armed (the first `on_rebuild` call says so).
pub fn watch(
    mem: &Memory,
    stop: &AtomicBool,
    limit: Option<Duration>,
    mut on_rebuild: impl FnMut(Rebuild),
) -> Result<()> {
    let root = mem.root();
    if !root.is_dir() {
        return Err(Error::NoDir { path: root });
    }
    // Canonical form, so that event paths (absolute) compare with the root.
    let root = root.canonicalize().map_err(|e| Error::io(&root, e))?;
    let (tx, rx) = mpsc::channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(DEBOUNCE, None, tx).map_err(|e| Error::Watch {
        path: root.clone(),
        message: e.to_string(),
    })?;
    debouncer
        .watch(&root, RecursiveMode::NonRecursive)
        .map_err(|e| Error::Watch {
            path: root.clone(),
            message: e.to_string(),
        })?;
    // The watch is armed before the first rebuild, so an edit made as soon as the
    // first report arrives is never missed.
    let Indexed {
        outcome, problems, ..
    } = mem.index()?;
    on_rebuild(Rebuild {
        changed: Vec::new(),
        outcome,
        problems,
    });
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) && limit.is_none_or(|l| started.elapsed() < l) {
        let batch = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Ok(events)) => events,
            Ok(Err(errors)) => {
                return Err(Error::Watch {
                    path: root.clone(),
                    message: errors
                        .iter()
                        .map(|e| e.to_string())
                        .collect::<Vec<_>>()
                        .join("; "),
                });
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut changed: Vec<PathBuf> = batch
            .iter()
            // Reading files (ours included: every rebuild reads them all) raises access
            // events; only changes count, or each rebuild would trigger the next.
            .filter(|e| !matches!(e.kind, notify::EventKind::Access(_)))
            .flat_map(|e| e.paths.iter())
            .filter(|p| relevant(&root, p))
            .cloned()
            .collect();
        changed.sort();
        changed.dedup();
        if changed.is_empty() {
            continue;
        }
        let Indexed {
            outcome, problems, ..
        } = mem.index()?;
        on_rebuild(Rebuild {
            changed,
            outcome,
            problems,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_top_level_memory_files_are_relevant() {
        let root = Path::new("/m");
        for (p, want) in [
            ("/m/user_role.md", true),
            ("/m/MEMORY.md", true),
            ("/m/.memdir-abc.tmp", false),
            ("/m/.user_role.md.swp", false),
            ("/m/timeline/2026-01-01.jsonl", false),
            ("/m/.git/index", false),
            ("/m/sub/x.md", false),
            ("/m/notes.txt", false),
        ] {
            assert_eq!(relevant(root, Path::new(p)), want, "{p}");
        }
    }
}
