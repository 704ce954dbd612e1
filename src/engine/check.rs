//! `check` and `check --fix` (spec/cli.md#check): what is wrong with the store, and
//! the safe repairs under the lock; and the list of sync's conflict copies. It must not
//! change a memory file.

use crate::clock::Clock;
use crate::engine::IndexOwner;
use crate::engine::Memory;
use crate::engine::TimelineRepair;
use crate::engine::graph;
use crate::engine::state;
use crate::engine::types::{CheckReport, Events, Problem, short_io};
use crate::error::{Error, Result};
use crate::memory::Record;
use crate::memory::index;
use crate::memory::layout::{
    AGENT_INDEX_BYTES, AGENT_INDEX_LINES, BACKUPS_DIR, CACHE_DIR, INDEX_FILE, MAX_MEMORY_FILE,
    STALE_TEMP, STATE_DIR, TIMELINE_DIR,
};
use crate::store::{self, FileDigest};

/// Folders where `check` looks for temp files, and whether memdir writes there only
/// under the lock (then, with the lock held, a temp file there is provably left over).
const TEMP_FOLDERS: [(&str, bool); 5] = [
    (".", true),
    (TIMELINE_DIR, true),
    (BACKUPS_DIR, true),
    (STATE_DIR, false),
    (CACHE_DIR, false),
];

impl Memory {
    /// What is wrong with a MEMORY.md the agent keeps, as warnings (it is the agent's
    /// to fix: memdir never writes it, spec/index-format.md#agent-index): a link to a
    /// file that is not there, a memory it does not list, and text past what Claude
    /// Code loads at session start (200 lines or 25 KB). Read streamed.
    fn agent_index_problems(&self, records: &[Record]) -> Result<Vec<Problem>> {
        let mut out = Vec::new();
        if !self.backend.is_file(INDEX_FILE) {
            if !records.is_empty() {
                out.push(Problem::warning(
                    INDEX_FILE,
                    None,
                    "missing: the agent keeps MEMORY.md here (index = \"agent\"), so memdir does not write it; the agent loads no index at session start",
                ));
            }
            return Ok(out);
        }
        let mut listed = std::collections::BTreeSet::new();
        let mut links: Vec<(usize, String)> = Vec::new();
        let (mut lines, mut bytes, mut cut_at) = (0usize, 0usize, None);
        self.backend
            .for_each_line(INDEX_FILE, MAX_MEMORY_FILE, |l| {
                lines += 1;
                let len = match l.bytes {
                    Ok(b) => b.len() as u64,
                    Err(n) => n,
                };
                bytes += len as usize + usize::from(l.terminated);
                if cut_at.is_none() && (lines > AGENT_INDEX_LINES || bytes > AGENT_INDEX_BYTES) {
                    cut_at = Some(lines);
                }
                if let Some(Ok(text)) = l.bytes.ok().map(std::str::from_utf8) {
                    for target in index::linked_files(text) {
                        listed.insert(target.clone());
                        links.push((lines, target));
                    }
                }
            })?;
        for (line, target) in links {
            let inside = !target.split('/').any(|c| c == ".." || c.is_empty());
            if inside && !self.backend.is_file(&target) {
                out.push(Problem::warning(
                    INDEX_FILE,
                    Some(line),
                    format!("links to {target}, which is not in the memory directory"),
                ));
            }
        }
        if let Some(line) = cut_at {
            out.push(Problem::warning(
                INDEX_FILE,
                Some(line),
                format!(
                    "{lines} lines, {bytes} bytes: Claude Code loads only the first {AGENT_INDEX_LINES} lines or {AGENT_INDEX_BYTES} bytes at session start, so this line and those after it are not loaded"
                ),
            ));
        }
        for r in records {
            let file = format!("{}.md", r.key);
            if !listed.contains(&file) {
                out.push(Problem::warning(
                    &file,
                    None,
                    "not listed in MEMORY.md (the agent's index): the agent does not see it at session start",
                ));
            }
        }
        Ok(out)
    }

    /// Reports malformed files and timeline lines; with `fix`, repairs what is safe.
    ///
    /// `fix` holds the lock throughout, so no memdir write is in flight while it
    /// removes temp files: in the folders memdir writes only under the lock, every temp
    /// file is left over; in `.memdir/` and `.memdir/cache/` (written without the lock)
    /// only those untouched for [`STALE_TEMP`] are removed.
    pub fn check(&self, fix: bool) -> Result<CheckReport> {
        if fix {
            self.require_dir()?;
            self.backend.create()?;
        }
        let _g = if fix {
            Some(self.backend.lock(&self.mem_lock)?)
        } else {
            None
        };
        let snap = self.load()?;
        let events = self.check_events()?;
        let mut report = CheckReport {
            memories: snap.records.len(),
            events: events.events.len(),
            problems: snap.problems,
            fixed: Vec::new(),
            timeline_repairs: Vec::new(),
        };
        report.problems.extend(events.problems);
        let (repairs, repair_problems) = self.repair_timeline(fix)?;
        report.problems.extend(repair_problems);
        if fix {
            report
                .fixed
                .extend(repairs.iter().map(TimelineRepair::describe));
        }
        report.timeline_repairs = repairs;
        report
            .problems
            .extend(state::compaction_problems(&snap.records));
        let agent = self.index_owner()? == IndexOwner::Agent;
        if agent {
            report
                .problems
                .extend(self.agent_index_problems(&snap.records)?);
        } else if !fix {
            let want = FileDigest::of(index::render(&snap.records).as_bytes());
            let message = match self.backend.digest(INDEX_FILE) {
                Ok(Some(have)) if have == want => None,
                Ok(Some(_)) => Some("stale; `index` or `check --fix` rebuilds it".to_string()),
                Ok(None) => Some("missing; `index` or `check --fix` rebuilds it".to_string()),
                Err(e) => Some(format!("cannot be read ({})", short_io(&e))),
            };
            if let Some(m) = message {
                report.problems.push(Problem::warning(INDEX_FILE, None, m));
            }
        }
        self.check_temp_files(fix, &mut report)?;
        if fix && !agent {
            let out = self.write_index(&snap.records)?;
            if out.written {
                report.fixed.push("rebuilt MEMORY.md".into());
            }
            if let Some(b) = out.backup {
                report
                    .fixed
                    .push(format!("saved the hand-edited MEMORY.md as {b}"));
            }
        }
        report
            .problems
            .extend(graph::dangling_problems(&snap.records, &snap.texts));
        for (path, copy) in self.conflicts()? {
            report.problems.push(Problem::warning(
                &copy,
                None,
                format!(
                    "conflict copy: the version of {path} that lost a sync merge; keep what you want in {path}, then delete this file"
                ),
            ));
        }
        Ok(report)
    }

    /// Open conflicts: losing versions kept by sync merges, as (the path they lost
    /// at, the copy), sorted by copy. Copies are named `<stem>.<12 hex>.<ext>` under
    /// `conflicts/` (synced), or under `.memdir/conflicts/` where an older memdir saved
    /// them (spec/sync.md#conflict-copies). A conflict is open while its copy exists.
    pub fn conflicts(&self) -> Result<Vec<(String, String)>> {
        use crate::memory::layout::{CONFLICTS_DIR, LEGACY_CONFLICTS_DIR};
        let mut out = Vec::new();
        for dir in [CONFLICTS_DIR, LEGACY_CONFLICTS_DIR] {
            out.extend(
                self.backend
                    .files_under(dir)?
                    .into_iter()
                    // Temporary and dot files are nobody's conflict copy.
                    .filter(|rel| !rel.split('/').any(|c| c.starts_with('.')))
                    .filter(|rel| !store::is_temp_name(rel.rsplit('/').next().unwrap_or(rel)))
                    .map(|rel| {
                        (
                            crate::memory::layout::conflict_original(&rel),
                            format!("{dir}/{rel}"),
                        )
                    }),
            );
        }
        out.sort_by(|a, b| a.1.cmp(&b.1));
        Ok(out)
    }
}

/// The steps of [`Memory::check`].
impl Memory {
    /// The timeline's events and problems; a `timeline` that is not a folder is one
    /// problem.
    fn check_events(&self) -> Result<Events> {
        // A `timeline` that is not a folder is a problem to report, not a reason to
        // stop checking the rest.
        match self.events() {
            Ok(e) => Ok(e),
            Err(Error::NotADir { .. }) => Ok(Events {
                problems: vec![Problem::error(
                    TIMELINE_DIR,
                    None,
                    "not a folder: memdir keeps the timeline's day files in it and cannot note or forget while it is there; move it away",
                )],
                ..Events::default()
            }),
            Err(e) => Err(e),
        }
    }

    /// Temp files left in the folders memdir writes: with `fix`, those provably
    /// left over are removed (and listed as fixed); the others are warnings.
    fn check_temp_files(&self, fix: bool, report: &mut CheckReport) -> Result<()> {
        let wall = Clock::wall();
        for (sub, lock_only) in TEMP_FOLDERS {
            for t in self.backend.temp_files(sub)? {
                let stale = lock_only
                    || t.modified
                        .is_none_or(|m| wall.duration_since(m).is_ok_and(|age| age >= STALE_TEMP));
                if fix && stale {
                    self.backend.remove(&t.rel)?;
                    report.fixed.push(format!("removed {}", t.rel));
                    continue;
                }
                report.problems.push(Problem::warning(
                    &t.rel,
                    None,
                    if stale {
                        "temporary file left by an interrupted write".to_string()
                    } else {
                        format!(
                            "temporary file of a write that may still be running; `check --fix` removes it once untouched for {} minutes",
                            STALE_TEMP.as_secs() / 60
                        )
                    },
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::Severity;
    use crate::engine::testing::{dir_store, draft};

    // spec/cli.md#commands (`check`): a malformed memory file is an error with its
    // path and line; the good memories still load.
    #[test]
    fn check_reports_a_malformed_file_with_its_line() {
        let (_tmp, mem) = dir_store();
        mem.write(&draft("good", "user", "fine")).unwrap();
        std::fs::write(
            mem.root().join("bad.md"),
            "---\nname: bad\ndescription: [unclosed\ntype: user\n---\nbody\n",
        )
        .unwrap();
        let report = mem.check(false).unwrap();
        assert_eq!(report.memories, 1);
        assert!(report.has_errors());
        let bad: Vec<_> = report
            .problems
            .iter()
            .filter(|p| p.path == "bad.md")
            .collect();
        assert_eq!(bad.len(), 1, "{:?}", report.problems);
        assert_eq!(bad[0].severity, Severity::Error);
        // The unclosed `[` of line 3 is found where the YAML parser meets line 4.
        assert_eq!(bad[0].line, Some(4), "{}", bad[0].message);
        assert!(
            bad[0].message.starts_with("not loaded: "),
            "{}",
            bad[0].message
        );
    }

    // spec/cli.md#commands (`check --fix`): a stale MEMORY.md is a warning, and
    // `--fix` rebuilds it.
    #[test]
    fn check_fix_rebuilds_a_stale_index() {
        let (_tmp, mem) = dir_store();
        mem.write(&draft("a", "user", "x")).unwrap();
        std::fs::write(mem.root().join("MEMORY.md"), "").unwrap();
        let report = mem.check(false).unwrap();
        assert!(!report.has_errors());
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.path == "MEMORY.md" && p.severity == Severity::Warning)
        );
        let fixed = mem.check(true).unwrap();
        assert!(
            fixed.fixed.iter().any(|f| f == "rebuilt MEMORY.md"),
            "{:?}",
            fixed.fixed
        );
        assert!(
            !mem.check(false)
                .unwrap()
                .problems
                .iter()
                .any(|p| p.path == "MEMORY.md")
        );
    }
}
