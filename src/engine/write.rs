//! Creating, updating and forgetting a memory (spec/cli.md#write, spec/cli.md#forget):
//! the draft's checks, the new frontmatter from the old, and the index rebuilt before
//! the lock is released. It must not read the timeline beyond appending `forgot`.

use serde_json::{Map, Value};

use crate::engine::Memory;
use crate::engine::events::check_event_size;
use crate::engine::requests::{Forgotten, Written};
use crate::engine::types::{Draft, IfExists, IndexOutcome, WriteOutcome};
use crate::error::{Error, Result};
use crate::memory::frontmatter;
use crate::memory::layout::{MAX_BODY, MAX_MEMORY_FILE};
use crate::memory::secrets;
use crate::memory::timeline::Event;
use crate::memory::{Decay, Key, Kind, Meta, Record, Stamp};

impl Memory {
    /// Creates or replaces a memory, and says what the MEMORY.md rebuild did (a
    /// hand-edited index saved under `.memdir/backups/`). Identical content is a no-op.
    /// This is [`Memory::write_if`] with [`IfExists::Replace`]: the CLI and MCP default
    /// to [`IfExists::Refuse`] instead.
    ///
    /// Everything that can fail short of the disk itself (reading the store, checking
    /// MEMORY.md, saving a hand-edited one) happens before the memory file is written;
    /// if writing the index then fails, the memory file is put back as it was, so an
    /// error means nothing changed (spec/architecture.md#a-command-that-fails-changed-nothing).
    pub fn write(&self, d: &Draft) -> Result<Written> {
        self.write_if(d, &IfExists::Replace)
    }

    /// Writes a memory like [`Memory::write`], doing what `if_exists` says when the
    /// key already holds one: refuse (create-only), replace, or replace only the
    /// version with a given hash (compare-and-swap). The check and the write happen
    /// under the store's lock, so of two create-only writers of a new key exactly one
    /// succeeds. A refused write changed nothing.
    pub fn write_if(&self, d: &Draft, if_exists: &IfExists) -> Result<Written> {
        let key = Key::parse(&d.key)?;
        let kind = match &d.kind {
            Kind::Other(value) => {
                return Err(Error::Type {
                    value: value.clone(),
                });
            }
            k => k.clone(),
        };
        let decay = parse_decay(d.decay.as_deref())?;
        check_draft(&key, d)?;
        // A bad `index` key is refused before the directory's folders are made.
        self.index_owner()?;
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        self.write_locked_with(&key, kind, decay, d, &[], if_exists)
    }

    /// Writes the checked draft `d` as the memory `key`; the caller holds the lock.
    /// Identical content is a no-op; if writing the index fails, the memory file is
    /// put back as it was.
    pub(super) fn write_locked(
        &self,
        key: &Key,
        kind: Kind,
        decay: Option<Decay>,
        d: &Draft,
    ) -> Result<Written> {
        self.write_locked_with(key, kind, decay, d, &[], &IfExists::Replace)
    }

    /// [`Memory::write_locked`], also setting the frontmatter keys `extra` beyond the
    /// known ones (a session summary's `summarizes`, spec/memory-format.md; a `null`
    /// value removes the key, as the memory tool's `tool_text` does), and doing
    /// what `if_exists` says when the key holds a memory. Every write of a memory file
    /// passes here, so a `read_only: true` memory is refused here for all of them.
    pub(super) fn write_locked_with(
        &self,
        key: &Key,
        kind: Kind,
        decay: Option<Decay>,
        d: &Draft,
        extra: &[(&str, Value)],
        if_exists: &IfExists,
    ) -> Result<Written> {
        let key = key.clone();
        let name = key.file_name();
        let before = self.backend.read_text(&name, MAX_MEMORY_FILE)?;
        let existing = match &before {
            None => None,
            Some(text) => Some(frontmatter::parse(text).map_err(|source| Error::Malformed {
                path: self.backend.display_path(&name),
                source,
            })?),
        };
        if let Some(p) = &existing {
            refuse_read_only(&key, &p.meta, &name)?;
        }
        let today = Stamp::from_date(self.now().date_naive());
        let old = existing.as_ref().map(|p| &p.meta);
        let mut meta = draft_meta(d, kind, decay, old, &today);
        for (k, v) in extra {
            if v.is_null() {
                meta.extra.remove(k);
            } else {
                meta.extra.set(k, v.clone());
            }
        }
        if let Some(p) = &existing
            && crate::memory::content_hash(&meta, &d.body)
                == crate::memory::content_hash(&p.meta, &p.body)
        {
            return Ok(Written {
                outcome: WriteOutcome::Unchanged,
                index: IndexOutcome::default(),
            });
        }
        // After the no-op: writing what is already there replaces nothing, so a
        // retried create-only write says `unchanged`, not that the key exists.
        check_if_exists(&key, existing.as_ref(), if_exists)?;
        meta.updated = today;
        let text = frontmatter::render(&meta, &d.body);
        // The store as it will be, to plan the index before writing anything.
        let parsed = frontmatter::parse(&text).map_err(|source| Error::Malformed {
            path: self.backend.display_path(&name),
            source,
        })?;
        let mut records = self.load()?.records;
        records.retain(|r| r.key != key);
        records.push(Record {
            key: key.clone(),
            meta: parsed.meta,
            body: parsed.body.into(),
        });
        let mut plan = self.plan_index(&records)?;
        self.save_index_backup(&mut plan)?;
        self.backend.write_atomic(&name, text.as_bytes())?;
        let index = match self.write_index_file(&plan) {
            Ok(o) => o,
            Err(e) => {
                // Put the memory back so that the failure changed nothing.
                let _ = match &before {
                    Some(b) => self.backend.write_atomic(&name, b.as_bytes()),
                    None => self.backend.remove(&name),
                };
                return Err(e);
            }
        };
        let outcome = if existing.is_some() {
            WriteOutcome::Updated
        } else {
            WriteOutcome::Created
        };
        Ok(Written { outcome, index })
    }

    /// Deletes a memory, rebuilds the index and logs a `forgot` event; says what the
    /// MEMORY.md rebuild did.
    ///
    /// The `forgot` event is logged before the file is deleted, so a process killed in
    /// between leaves the memory and its tombstone, never a memory gone without one;
    /// everything that can fail (reading the store, the timeline folder, MEMORY.md)
    /// fails before the file is touched (spec/timeline-format.md#events-memdir-writes).
    pub fn forget(&self, key: &str, reason: Option<&str>) -> Result<Forgotten> {
        self.require_dir()?;
        let key = self.resolve_key(key)?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let name = key.file_name();
        let Some(before) = self.backend.read(&name, u64::MAX)? else {
            return Err(Error::NotFound {
                key: key.to_string(),
            });
        };
        // A file that does not parse can still be forgotten; one that says
        // `read_only: true` cannot.
        if let Some(p) = std::str::from_utf8(&before)
            .ok()
            .and_then(|t| frontmatter::parse(t).ok())
        {
            refuse_read_only(&key, &p.meta, &name)?;
        }
        let mut fields = Map::new();
        fields.insert("key".into(), Value::String(key.to_string()));
        if let Some(r) = reason {
            if let Some(kind) = secrets::find_secret(r) {
                return Err(Error::Secret {
                    key: key.to_string(),
                    field: "reason",
                    kind,
                });
            }
            fields.insert("reason".into(), Value::String(r.to_string()));
        }
        let event = Event::new(self.now(), "forgot", fields)?;
        let line = event.encode();
        check_event_size(&event, &line)?;
        let mut records = self.load()?.records;
        records.retain(|r| r.key != key);
        let mut plan = self.plan_index(&records)?;
        self.save_index_backup(&mut plan)?;
        // The intent first: a tombstone without a deletion is harmless (the memory is
        // still here), a deletion without a tombstone lets an old export bring it back.
        self.backend.append_line(&event.day_file(), &line)?;
        self.backend.remove(&name)?;
        let index = match self.write_index_file(&plan) {
            Ok(o) => o,
            Err(e) => {
                let _ = self.backend.write_atomic(&name, &before);
                return Err(e);
            }
        };
        Ok(Forgotten { event, index })
    }
}

/// Refuses to change a memory a person marked `read_only: true`: a state entry as
/// `state set` does ([`Error::ReadOnly`], its state key), any other memory with
/// [`Error::ReadOnlyMemory`]. Every path that writes, moves or deletes a memory file
/// calls it on the file's current frontmatter.
pub(super) fn refuse_read_only(key: &Key, meta: &Meta, file: &str) -> Result<()> {
    if !meta.read_only() {
        return Ok(());
    }
    Err(match key.as_str().strip_prefix("state_") {
        Some(state) if meta.kind == Kind::State => Error::ReadOnly {
            key: state.to_string(),
            file: file.to_string(),
        },
        _ => Error::ReadOnlyMemory {
            key: key.to_string(),
            file: file.to_string(),
        },
    })
}

/// Whether a write may go ahead given the memory the key holds now (`existing`).
fn check_if_exists(
    key: &Key,
    existing: Option<&frontmatter::Parsed>,
    if_exists: &IfExists,
) -> Result<()> {
    let current = existing.map(|p| crate::memory::hash_hex(&p.meta, &p.body));
    match (if_exists, current) {
        (IfExists::Replace, _) | (IfExists::Refuse, None) => Ok(()),
        (IfExists::Refuse, Some(_)) => Err(Error::AlreadyExists {
            key: key.to_string(),
        }),
        (IfExists::ReplaceIfHash(want), current) => {
            let want = want.trim().to_ascii_lowercase();
            if current.as_deref() == Some(want.as_str()) {
                Ok(())
            } else {
                Err(Error::HashMismatch {
                    key: key.to_string(),
                    expected: want,
                    actual: current,
                })
            }
        }
    }
}

/// A `decay` value given by a caller, checked.
pub(super) fn parse_decay(decay: Option<&str>) -> Result<Option<Decay>> {
    match decay {
        None => Ok(None),
        Some(s) => Decay::parse(s)
            .map(Some)
            .ok_or_else(|| Error::Decay { value: s.into() }),
    }
}

/// Checks what a write would store, before the lock: required fields, the body's
/// size, and no secret in any text field.
pub(super) fn check_draft(key: &Key, d: &Draft) -> Result<()> {
    if let Some(v) = d.valid_until.as_deref().map(str::trim)
        && !v.is_empty()
        && crate::memory::parse_day(v).is_none()
    {
        return Err(Error::ValidUntil { value: v.into() });
    }
    for k in d.supersedes.iter().flatten() {
        if Key::parse(k.trim())? == *key {
            return Err(Error::SupersedesSelf {
                key: key.to_string(),
            });
        }
    }
    if d.name.trim().is_empty() {
        return Err(Error::Empty { field: "name" });
    }
    if d.description.trim().is_empty() {
        return Err(Error::Empty {
            field: "description",
        });
    }
    if d.body.len() > MAX_BODY {
        return Err(Error::BodyTooLarge {
            size: d.body.len(),
            limit: MAX_BODY,
        });
    }
    let mut fields: Vec<(&'static str, &str)> = vec![
        ("name", &d.name),
        ("description", &d.description),
        ("body", &d.body),
    ];
    if let Some(s) = &d.source {
        fields.push(("source", s));
    }
    for t in d.tags.iter().flatten() {
        fields.push(("tags", t));
    }
    for (field, text) in fields {
        if let Some(kind) = secrets::find_secret(text) {
            return Err(Error::Secret {
                key: key.to_string(),
                field,
                kind,
            });
        }
    }

    Ok(())
}

/// The frontmatter a write of the draft `d` stores: the draft's values, the old
/// memory's (`old`) where the draft keeps them, and `today` for a new memory's dates
/// (`updated` is set by the caller once the content is known to change).
fn draft_meta(
    d: &Draft,
    kind: Kind,
    decay: Option<Decay>,
    old: Option<&Meta>,
    today: &Stamp,
) -> Meta {
    Meta {
        name: d.name.trim().to_string(),
        description: d.description.trim().to_string(),
        kind,
        // A file without dates (Claude Code's) gets today's on its first write.
        created: old
            .map(|m| m.created.clone())
            .filter(|s| !s.is_undated())
            .unwrap_or_else(|| today.clone()),
        updated: old
            .map(|m| m.updated.clone())
            .filter(|s| !s.is_undated())
            .unwrap_or_else(|| today.clone()),
        source: d
            .source
            .clone()
            .or_else(|| old.and_then(|m| m.source.clone())),
        decay: decay.or_else(|| old.and_then(|m| m.decay)),
        tags: d
            .tags
            .clone()
            .or_else(|| old.map(|m| m.tags.clone()))
            .unwrap_or_default(),
        important: d.important.or(old.map(|m| m.important)).unwrap_or(false),
        supersedes: match &d.supersedes {
            Some(keys) => {
                let mut out: Vec<String> = Vec::new();
                for k in keys {
                    let k = Key::parse(k.trim())
                        .map_or_else(|_| k.trim().to_string(), |k| k.to_string());
                    if !out.contains(&k) {
                        out.push(k);
                    }
                }
                out
            }
            None => old.map(|m| m.supersedes.clone()).unwrap_or_default(),
        },
        valid_until: match d.valid_until.as_deref().map(str::trim) {
            Some("") => None,
            Some(v) => Some(v.to_string()),
            None => old.and_then(|m| m.valid_until.clone()),
        },
        extra: old.map(|m| m.extra.clone()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testing::{NOW, at, dir_store, draft};
    use crate::engine::{Memory, WriteOutcome};
    use crate::error::Error;

    // A draft's type is a `Kind` (issue 28: typed fields): the five types write, any
    // other is refused with the value as given, and a draft that sets none is refused
    // as it was when the type was text.
    #[test]
    fn a_drafts_type_is_a_kind() {
        use crate::engine::Draft;
        use crate::memory::Kind;
        let mem = Memory::in_memory().with_clock(at(NOW));
        for (i, kind) in [Kind::User, Kind::Feedback, Kind::Project, Kind::Reference]
            .into_iter()
            .enumerate()
        {
            let mut d = draft(&format!("m{i}"), "user", "x\n");
            d.kind = kind.clone();
            mem.write(&d).unwrap();
            assert_eq!(mem.read(&format!("m{i}")).unwrap().meta.kind, kind);
        }
        let mut d = draft("padded", "user", "x\n");
        d.kind = " project ".into();
        assert_eq!(d.kind, Kind::Project);
        mem.write(&d).unwrap();
        d.kind = "bogus".into();
        assert_eq!(d.kind, Kind::Other("bogus".into()));
        let e = mem.write(&d).unwrap_err();
        assert!(
            matches!(&e, Error::Type { value } if value == "bogus"),
            "{e}"
        );
        let e = mem
            .write(&Draft {
                key: "untyped".into(),
                name: "n".into(),
                description: "d".into(),
                body: "b".into(),
                ..Draft::default()
            })
            .unwrap_err();
        assert!(
            matches!(&e, Error::Type { value } if value.is_empty()),
            "{e}"
        );
        assert!(mem.read("untyped").is_err());
    }

    // spec/cli.md#commands (`write`, `read`): what is written reads back.
    #[test]
    fn a_write_reads_back() {
        let mem = Memory::in_memory().with_clock(at(NOW));
        let mut d = draft("user_role", "user", "Argentina fan.\n");
        d.tags = Some(vec!["football".into()]);
        d.important = Some(true);
        assert_eq!(mem.write(&d).unwrap().outcome, WriteOutcome::Created);
        let r = mem.read("user_role").unwrap();
        assert_eq!(r.key.as_str(), "user_role");
        assert_eq!(r.meta.name, "user role");
        assert_eq!(r.meta.description, "about user_role");
        assert_eq!(r.meta.kind.to_string(), "user");
        assert_eq!(r.meta.tags, vec!["football".to_string()]);
        assert!(r.meta.important);
        assert_eq!(r.meta.created.text, "2026-04-14");
        assert_eq!(r.meta.updated.text, "2026-04-14");
        assert_eq!(r.body.trim_end(), "Argentina fan.");
    }

    // spec/cli.md#commands: identical content is a no-op (`unchanged`), and keeps
    // `updated`; a change bumps `updated` and keeps `created`.
    #[test]
    fn an_identical_write_is_a_no_op() {
        let (tmp, mem) = dir_store();
        mem.write(&draft("k", "project", "body")).unwrap();
        let later = Memory::open(tmp.path().join("m"))
            .unwrap()
            .with_clock(at("2026-05-01T09:00:00Z"));
        assert_eq!(
            later.write(&draft("k", "project", "body")).unwrap().outcome,
            WriteOutcome::Unchanged
        );
        assert_eq!(later.read("k").unwrap().meta.updated.text, "2026-04-14");
        assert_eq!(
            later
                .write(&draft("k", "project", "new body"))
                .unwrap()
                .outcome,
            WriteOutcome::Updated
        );
        let r = later.read("k").unwrap();
        assert_eq!(r.meta.created.text, "2026-04-14");
        assert_eq!(r.meta.updated.text, "2026-05-01");
    }

    // spec/architecture.md#a-command-that-fails-changed-nothing: a refused draft
    // writes nothing.
    #[test]
    fn a_refused_draft_writes_nothing() {
        let (_tmp, mem) = dir_store();
        let mut d = draft("k", "user", "body");
        d.name = "  ".into();
        assert!(matches!(mem.write(&d), Err(Error::Empty { field: "name" })));
        let mut d = draft("k", "user", "body");
        d.supersedes = Some(vec!["k".into()]);
        assert!(matches!(mem.write(&d), Err(Error::SupersedesSelf { .. })));
        let d = draft("k", "nonsense", "body");
        assert!(matches!(mem.write(&d), Err(Error::Type { .. })));
        assert!(!mem.root().join("k.md").exists());
    }

    // spec/timeline-format.md#events-memdir-writes: `forget` logs a `forgot` event
    // (with its reason) and deletes the file; an unknown key changes nothing.
    #[test]
    fn forget_logs_a_forgot_event_then_deletes() {
        let (_tmp, mem) = dir_store();
        mem.write(&draft("k", "user", "body")).unwrap();
        let event = mem.forget("k", Some("outdated")).unwrap().event;
        assert_eq!(event.kind, "forgot");
        assert_eq!(event.fields["key"], "k");
        assert_eq!(event.fields["reason"], "outdated");
        assert!(!mem.root().join("k.md").exists());
        let events = mem.events().unwrap();
        assert_eq!(events.events.len(), 1);
        assert_eq!(events.events[0].kind, "forgot");
        assert!(matches!(mem.read("k"), Err(Error::NotFound { .. })));
        assert!(matches!(mem.forget("k", None), Err(Error::NotFound { .. })));
        assert_eq!(mem.events().unwrap().events.len(), 1);
    }
}
