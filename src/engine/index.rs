//! MEMORY.md through the façade: planning a rebuild, saving a hand-edited index under
//! `.memdir/backups/`, and writing it with its hash record (spec/index-format.md#rebuild).
//! Who keeps MEMORY.md (memdir, or the agent: spec/index-format.md#agent-index) is
//! decided here too. It must not write memory files or the timeline.

use crate::engine::Memory;
use crate::engine::index_check;
use crate::engine::requests::Indexed;
use crate::engine::types::IndexOutcome;
use crate::error::Error;
use crate::error::Result;
use crate::memory::Record;
use crate::memory::index;
use crate::memory::layout::{
    AGENT_INDEX_BYTES, AGENT_INDEX_LINES, BACKUPS_DIR, INDEX_FILE, INDEX_HASH_FILE, MAX_MEMORY_FILE,
};
use crate::store::FileDigest;

/// Who keeps MEMORY.md (spec/index-format.md#agent-index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexOwner {
    /// memdir renders it from the memory files and rebuilds it after every change.
    Memdir,
    /// The agent (Claude Code) writes it; memdir never writes, replaces or backs it
    /// up, and only checks it.
    Agent,
}

impl IndexOwner {
    /// The owner an `index` value of `.memdir/config.toml` names; for any other value,
    /// the message that says which values there are.
    pub fn parse(value: &str) -> std::result::Result<IndexOwner, String> {
        match value {
            "agent" => Ok(IndexOwner::Agent),
            "memdir" => Ok(IndexOwner::Memdir),
            _ => Err(format!(
                "index `{value}` is not `agent` (the agent keeps MEMORY.md) or `memdir` (memdir generates it)"
            )),
        }
    }
}

impl Memory {
    /// Who keeps MEMORY.md: the `index` key of `.memdir/config.toml` (`"agent"` or
    /// `"memdir"`); without one, the agent when MEMORY.md exists, memdir has never
    /// written an index here (no `.memdir/index.sha256`) and the file is not made of
    /// lines memdir's generator writes (spec/index-format.md#agent-index).
    pub fn index_owner(&self) -> Result<IndexOwner> {
        let configured = match crate::store::config::read(&self.backend) {
            Ok(None) => None,
            Ok(Some(f)) => match f.table.get("index") {
                None => None,
                Some(v) => {
                    let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    Some(IndexOwner::parse(&shown).map_err(|message| {
                        Error::Config {
                            line: f
                                .text
                                .lines()
                                .position(|l| l.trim_start().starts_with("index"))
                                .map(|i| i + 1),
                            path: f.path,
                            message,
                        }
                    })?)
                }
            },
            // A file that does not parse is the sync and embeddings commands' to
            // refuse (`list` and `context` do not read it, spec/cli.md): the owner is
            // then detected, which keeps an agent's index safe all the same.
            Err(_) => None,
        };
        if let Some(owner) = configured {
            return Ok(owner);
        }
        let detected = self.backend.stat(INDEX_FILE).is_some_and(|s| s.size > 0)
            && !self.backend.is_file(INDEX_HASH_FILE)
            && !self.index_lines_are_generated()?;
        Ok(if detected {
            IndexOwner::Agent
        } else {
            IndexOwner::Memdir
        })
    }

    /// The part of the agent's MEMORY.md it loads at each session start: the first
    /// 200 lines or 25 KB, whichever comes first (cut at a line end); empty when
    /// there is none. Read streamed: any size is fine.
    pub(super) fn agent_index_text(&self) -> Result<String> {
        let mut out = String::new();
        let mut lines = 0;
        let mut full = false;
        if !self.backend.is_file(INDEX_FILE) {
            return Ok(out);
        }
        self.backend
            .for_each_line(INDEX_FILE, MAX_MEMORY_FILE, |l| {
                if full {
                    return;
                }
                let Ok(bytes) = l.bytes else {
                    // A line over the limit is far past 25 KB: nothing after it loads.
                    full = true;
                    return;
                };
                let text = String::from_utf8_lossy(bytes).into_owned();
                let text = text.strip_suffix('\r').unwrap_or(&text);
                if lines == AGENT_INDEX_LINES || out.len() + text.len() + 1 > AGENT_INDEX_BYTES {
                    full = true;
                    return;
                }
                out.push_str(text);
                out.push('\n');
                lines += 1;
            })?;
        Ok(out)
    }

    /// Rebuilds MEMORY.md if it differs from what the memories say, and returns the
    /// problems met loading the store on the way (one load serves both).
    pub fn index(&self) -> Result<Indexed> {
        self.require_dir()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        // The records alone: MEMORY.md is rendered from them, not from the texts.
        let (snap, _, load) = self.load_records(false)?;
        Ok(Indexed {
            outcome: self.write_index(&snap.records)?,
            problems: snap.problems,
            load,
        })
    }

    /// Rebuilds MEMORY.md only when it is stale (cheap check without the lock first).
    /// Returns the generated text and what the rebuild did. The check compares the
    /// file's size, then streams it against the rendered text, so an index of any size
    /// is fine (spec/index-format.md#rebuild).
    pub(super) fn refresh_index_if_stale(
        &self,
        records: &[Record],
    ) -> Result<(String, IndexOutcome)> {
        self.refresh_index_with(records, None)
    }

    /// [`Memory::refresh_index_if_stale`] for records whose files had the content
    /// keys `keys` (in record order): when `.memdir/cache/index-check` says MEMORY.md,
    /// as it is now (by its stat), was found holding what these contents render to,
    /// its text is read instead of rendered; a render that finds MEMORY.md up to date
    /// records that (spec/index-format.md#rebuild).
    pub(super) fn refresh_index_checked(
        &self,
        records: &[Record],
        keys: &[String],
    ) -> Result<(String, IndexOutcome)> {
        self.refresh_index_with(records, index_check::contents(records, keys).as_ref())
    }

    fn refresh_index_with(
        &self,
        records: &[Record],
        contents: Option<&index_check::Contents>,
    ) -> Result<(String, IndexOutcome)> {
        if self.index_owner()? == IndexOwner::Agent {
            return Ok((self.agent_index_text()?, IndexOutcome::default()));
        }
        if let Some(text) = contents.and_then(|c| index_check::vouched(&self.backend, c)) {
            return Ok((text, IndexOutcome::default()));
        }
        // Taken before the stat, as for the search index: a MEMORY.md changed within
        // the racy window of it is never vouched for by its stat.
        let checked = crate::engine::warm::now_ns();
        let want = index::render(records);
        // The stat is the compared file's, taken before its content was read.
        let (holds, stat) = self
            .backend
            .holds(INDEX_FILE, want.as_bytes())
            .unwrap_or((false, None));
        let outcome = if !holds {
            self.index()?.outcome
        } else {
            if let (Some(c), Some(st)) = (contents, stat) {
                index_check::record(&self.backend, c, &st, checked);
            }
            IndexOutcome::default()
        };
        Ok((want, outcome))
    }

    /// Writes MEMORY.md for `records`; caller holds the lock. A MEMORY.md that memdir
    /// did not write (a person edited it) is saved under `.memdir/backups/` first.
    pub(super) fn write_index(&self, records: &[Record]) -> Result<IndexOutcome> {
        let mut plan = self.plan_index(records)?;
        self.save_index_backup(&mut plan)?;
        self.write_index_file(&plan)
    }

    /// Decides what rebuilding MEMORY.md for `records` takes, reading but writing
    /// nothing, so a command can fail before it changes anything. MEMORY.md is streamed,
    /// never read whole: any size is fine.
    pub(super) fn plan_index(&self, records: &[Record]) -> Result<IndexPlan> {
        if self.index_owner()? == IndexOwner::Agent {
            // The agent's MEMORY.md is never written, replaced or saved.
            return Ok(IndexPlan {
                want: String::new(),
                want_digest: FileDigest::of(b""),
                have: None,
                replace: false,
                backup: false,
                backup_name: None,
            });
        }
        let want = index::render(records);
        let want_digest = FileDigest::of(want.as_bytes());
        let have = self.backend.digest(INDEX_FILE)?;
        let (replace, backup) = match have {
            Some(h) if h == want_digest => (false, false),
            None => (true, false),
            Some(h) => (true, !self.index_is_ours(&h)?),
        };
        Ok(IndexPlan {
            want,
            want_digest,
            have,
            replace,
            backup,
            backup_name: None,
        })
    }

    /// Whether the MEMORY.md on disk (digest `have`) is one memdir wrote: its hash is
    /// recorded in `.memdir/index.sha256`, or, with no record (a fresh clone), it holds
    /// only lines the generator produces (checked while streaming it).
    fn index_is_ours(&self, have: &FileDigest) -> Result<bool> {
        let record = self
            .backend
            .read_text(INDEX_HASH_FILE, 1024)
            .ok()
            .flatten()
            .unwrap_or_default();
        let hashes: Vec<&str> = record
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        if !hashes.is_empty() {
            return Ok(hashes.contains(&have.hex().as_str()));
        }
        self.index_lines_are_generated()
    }

    /// Whether MEMORY.md holds only lines memdir's generator produces (streamed).
    fn index_lines_are_generated(&self) -> Result<bool> {
        let mut check = index::GeneratedLines::default();
        let mut ends_with_newline = true;
        self.backend
            .for_each_line(INDEX_FILE, MAX_MEMORY_FILE, |l| {
                ends_with_newline = l.terminated;
                match l.bytes.ok().map(std::str::from_utf8) {
                    Some(Ok(t)) => check.line(t.strip_suffix('\r').unwrap_or(t)),
                    _ => check.bad_line(),
                }
            })?;
        Ok(check.finish(ends_with_newline))
    }

    /// Saves a hand-edited MEMORY.md under `.memdir/backups/` (streamed), when the
    /// plan says so; caller holds the lock.
    pub(super) fn save_index_backup(&self, plan: &mut IndexPlan) -> Result<()> {
        if !plan.backup || plan.backup_name.is_some() {
            return Ok(());
        }
        let name = format!(
            "{BACKUPS_DIR}/MEMORY.md.{}",
            self.now().format("%Y%m%dT%H%M%S%.3fZ")
        );
        let name = self.unused_name(&name)?;
        self.backend.copy_atomic(INDEX_FILE, &name)?;
        plan.backup_name = Some(name);
        Ok(())
    }

    /// Writes MEMORY.md as planned; caller holds the lock and has saved the backup.
    /// The new hash is recorded before the rename, next to the hash of the file being
    /// replaced, so a process killed between the two writes leaves a MEMORY.md that
    /// the record still calls memdir's (no false "edited by hand" backup).
    pub(super) fn write_index_file(&self, plan: &IndexPlan) -> Result<IndexOutcome> {
        if !plan.replace {
            // An up-to-date index memdir has no record of (a fresh clone, a copy) is
            // recorded as memdir's now, so that a later edit of it by hand is saved
            // and replaced, not taken for an agent's index (#agent-index).
            if plan.have.is_some() && !self.backend.is_file(INDEX_HASH_FILE) {
                let mut record = plan.want_digest.hex();
                record.push('\n');
                self.backend
                    .write_atomic(INDEX_HASH_FILE, record.as_bytes())?;
            }
            return Ok(IndexOutcome::default());
        }
        let mut record = plan.want_digest.hex();
        record.push('\n');
        if let Some(h) = &plan.have {
            record.push_str(&h.hex());
            record.push('\n');
        }
        self.backend
            .write_atomic(INDEX_HASH_FILE, record.as_bytes())?;
        self.backend
            .write_atomic(INDEX_FILE, plan.want.as_bytes())?;
        Ok(IndexOutcome {
            written: true,
            backup: plan.backup_name.clone(),
        })
    }

    pub(super) fn unused_name(&self, base: &str) -> Result<String> {
        let mut name = base.to_string();
        let mut i = 1;
        while self.backend.is_file(&name) {
            name = format!("{base}.{i}");
            i += 1;
        }
        Ok(name)
    }
}

/// What rebuilding MEMORY.md takes, decided before anything is written.
#[derive(Debug)]
pub(super) struct IndexPlan {
    want: String,
    want_digest: FileDigest,
    /// The MEMORY.md on disk now.
    have: Option<FileDigest>,
    /// MEMORY.md differs from `want`.
    replace: bool,
    /// MEMORY.md was edited by hand and must be saved first.
    backup: bool,
    /// Where it was saved.
    backup_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use crate::engine::testing::{dir_store, draft};
    use crate::memory::index;
    use crate::memory::layout::{BACKUPS_DIR, INDEX_FILE};

    // spec/index-format.md#rebuild: every write rebuilds MEMORY.md; a MEMORY.md
    // memdir did not write is saved under `.memdir/backups/` before it is replaced.
    #[test]
    fn the_index_is_rebuilt_on_write_and_a_hand_edited_one_is_saved() {
        let (_tmp, mem) = dir_store();
        let index_path = mem.root().join(INDEX_FILE);
        let out = mem.write(&draft("a", "user", "x")).unwrap().index;
        assert!(out.written);
        assert_eq!(out.backup, None);
        let want = index::render(&mem.load().unwrap().records);
        assert_eq!(std::fs::read_to_string(&index_path).unwrap(), want);
        assert!(want.contains("about a"));
        // Nothing to do when it is up to date.
        assert!(!mem.index().unwrap().outcome.written);

        let edited = format!("{want}my own notes\n");
        std::fs::write(&index_path, &edited).unwrap();
        let out = mem.write(&draft("b", "user", "y")).unwrap().index;
        let backup = format!("{BACKUPS_DIR}/MEMORY.md.20260414T120000.000Z");
        assert_eq!(out.backup.as_deref(), Some(backup.as_str()));
        assert_eq!(
            std::fs::read_to_string(mem.root().join(&backup)).unwrap(),
            edited
        );
        let want = index::render(&mem.load().unwrap().records);
        assert!(want.contains("about b"));
        assert_eq!(std::fs::read_to_string(&index_path).unwrap(), want);
        // memdir's own index is not saved again.
        let out = mem.write(&draft("c", "user", "z")).unwrap().index;
        assert_eq!(out.backup, None);
    }
}
