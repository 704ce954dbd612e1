//! Edit, rename and recent activity: the operations an agent needs beside `write`
//! and `forget` (spec/cli.md#edit, #rename, #timeline).
//!
//! An edit changes part of a memory and goes through the same locked write path as
//! `write` (secrets refused, identical content a no-op, `updated` bumped, MEMORY.md
//! rebuilt). A rename moves a memory to a new key: the new file is written before the
//! old one is removed, so a process killed in between leaves both, never neither.
//! Recent activity reads the timeline newest first, only as far back as it needs.

use chrono::NaiveDate;
use serde_json::{Map, Value};

use super::{Draft, Events, Memory, Problem, Renamed, Written, check_draft, parse_decay};
use crate::error::{Error, Result};
use crate::memory::edit::{self, EditError};
use crate::memory::timeline::Event;
use crate::memory::{Key, Kind, Record};

/// A section of a memory's body to replace: everything under the heading up to the
/// next heading of the same or a higher level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectionEdit {
    /// The heading's text (`Why`), or with its level (`## Why`).
    pub heading: String,
    /// The section's new text (the heading line is kept).
    pub content: String,
}

/// Replace every occurrence of `find` with `replace`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindReplace {
    /// The text to find.
    pub find: String,
    /// What replaces it.
    pub replace: String,
    /// When given, the edit applies only if `find` occurs exactly this many times.
    pub expected_count: Option<usize>,
}

/// A partial edit of a memory. Body changes apply in this order: `find_replace`,
/// `replace_section`, `prepend`, `append`; fields left `None` keep their value.
#[derive(Debug, Clone, Default)]
pub struct Edit {
    /// Added after the body, on a new line.
    pub append: Option<String>,
    /// Added before the body, on its own line.
    pub prepend: Option<String>,
    /// Replaces the body of one Markdown section.
    pub replace_section: Option<SectionEdit>,
    /// Replaces text found in the body.
    pub find_replace: Option<FindReplace>,
    /// Replaces the name.
    pub name: Option<String>,
    /// Replaces the description.
    pub description: Option<String>,
    /// `user`, `feedback`, `project` or `reference`.
    pub kind: Option<String>,
    /// Replaces the tags.
    pub tags: Option<Vec<String>>,
    /// Replaces `important`.
    pub important: Option<bool>,
    /// `never` or `<N>d`.
    pub decay: Option<String>,
    /// Replaces `source`.
    pub source: Option<String>,
}

impl Edit {
    /// Whether the edit asks for no change at all.
    pub fn is_empty(&self) -> bool {
        self.append.is_none()
            && self.prepend.is_none()
            && self.replace_section.is_none()
            && self.find_replace.is_none()
            && self.name.is_none()
            && self.description.is_none()
            && self.kind.is_none()
            && self.tags.is_none()
            && self.important.is_none()
            && self.decay.is_none()
            && self.source.is_none()
    }

    /// The body after the body changes, or why they cannot apply.
    fn apply(&self, body: &str) -> Result<String, EditError> {
        let mut body = body.to_string();
        if let Some(f) = &self.find_replace {
            body = edit::find_replace(&body, &f.find, &f.replace, f.expected_count)?.0;
        }
        if let Some(s) = &self.replace_section {
            body = edit::replace_section(&body, &s.heading, &s.content)?;
        }
        if let Some(t) = &self.prepend {
            body = edit::prepend(&body, t);
        }
        if let Some(t) = &self.append {
            body = edit::append(&body, t);
        }
        Ok(body)
    }
}

/// What `activity` asks for (spec/cli.md#timeline).
#[derive(Debug, Clone)]
pub struct ActivityQuery {
    /// At most this many events.
    pub limit: usize,
    /// Only events on or after this UTC day.
    pub since: Option<NaiveDate>,
    /// Only events of these types (any of them); empty for all.
    pub types: Vec<String>,
    /// Stop adding events once their lines reach this many characters (the first
    /// event is always included).
    pub max_chars: usize,
}

/// Recent timeline events, newest first.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    /// The events, newest first.
    pub events: Vec<Event>,
    /// More events match than were returned (the limit or the size bound cut them).
    pub more: bool,
    /// What was wrong with the timeline files read.
    pub problems: Vec<Problem>,
}

impl Memory {
    /// Changes part of a memory (spec/cli.md#edit): `updated`, or `unchanged` when
    /// the result is identical, and what the MEMORY.md rebuild did. A failed edit (a
    /// missing heading, a count that differs, a secret) writes nothing.
    pub fn edit(&self, key: &str, e: &Edit) -> Result<Written> {
        self.require_dir()?;
        let key = Key::parse(key)?;
        if e.is_empty() {
            return Err(Error::NothingToEdit {
                key: key.to_string(),
            });
        }
        let new_kind = match &e.kind {
            None => None,
            Some(k) => {
                Some(Kind::parse_strict(k.trim()).ok_or_else(|| Error::Type { value: k.clone() })?)
            }
        };
        let decay = parse_decay(e.decay.as_deref())?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let (_, p) = self.read_parsed(&key)?;
        let body = e.apply(&p.body).map_err(|source| Error::Edit {
            key: key.to_string(),
            source,
        })?;
        let kind = new_kind.unwrap_or_else(|| p.meta.kind.clone());
        let draft = Draft {
            key: key.to_string(),
            name: e.name.clone().unwrap_or_else(|| p.meta.name.clone()),
            description: e
                .description
                .clone()
                .unwrap_or_else(|| p.meta.description.clone()),
            kind: kind.clone(),
            body,
            tags: e.tags.clone(),
            important: e.important,
            decay: e.decay.clone(),
            source: e.source.clone(),
            ..Draft::default()
        };
        check_draft(&key, &draft)?;
        self.write_locked(&key, kind, decay, &draft)
    }

    /// Moves the memory `from` to the key `to` (spec/cli.md#rename), logs a
    /// `renamed` event with both keys, and says what the MEMORY.md rebuild did.
    ///
    /// Under the lock: everything is read and checked first; then the new file is
    /// written (the old file's bytes), the `renamed` event appended, the old file
    /// removed and MEMORY.md rebuilt. A process killed at any point leaves the memory
    /// under at least one key; a step that fails undoes the ones before it.
    pub fn rename(&self, from: &str, to: &str) -> Result<Renamed> {
        self.require_dir()?;
        let old = self.resolve_key(from)?;
        let new = Key::parse(to)?;
        if old == new {
            return Err(Error::SameKey {
                key: old.to_string(),
            });
        }
        let _g = self.backend.lock(&self.mem_lock)?;
        let (old_name, new_name) = (old.file_name(), new.file_name());
        let (text, p) = self.read_parsed(&old)?;
        super::write::refuse_read_only(&old, &p.meta, &old_name)?;
        let taken = self.backend.scan_memories()?.iter().any(|f| {
            let n = crate::store::found_name(f);
            n == new_name || (n.eq_ignore_ascii_case(&new_name) && n != old_name)
        });
        if taken {
            return Err(Error::Exists {
                from: old.to_string(),
                to: new.to_string(),
            });
        }
        let mut fields = Map::new();
        fields.insert("from".into(), Value::String(old.to_string()));
        fields.insert("to".into(), Value::String(new.to_string()));
        let event = Event::new(self.now(), "renamed", fields)?;
        let line = event.encode();
        let mut records = self.load()?.records;
        records.retain(|r| r.key != old);
        records.push(Record {
            key: new.clone(),
            meta: p.meta,
            body: p.body.into(),
        });
        let mut plan = self.plan_index(&records)?;
        self.save_index_backup(&mut plan)?;
        // The new file first: a process killed after it leaves two copies, never none.
        self.backend.write_atomic(&new_name, text.as_bytes())?;
        if let Err(e) = self.backend.append_line(&event.day_file(), &line) {
            let _ = self.backend.remove(&new_name);
            return Err(e);
        }
        if let Err(e) = self.backend.remove(&old_name) {
            let _ = self.backend.remove(&new_name);
            return Err(e);
        }
        let index = match self.write_index_file(&plan) {
            Ok(o) => o,
            Err(e) => {
                let _ = self.backend.write_atomic(&old_name, text.as_bytes());
                let _ = self.backend.remove(&new_name);
                return Err(e);
            }
        };
        Ok(Renamed { event, index })
    }

    /// The most recent timeline events, newest first, within `q`'s limit, day and
    /// types (spec/cli.md#timeline). Day files are read newest first and only as far
    /// back as needed.
    pub fn activity(&self, q: &ActivityQuery) -> Result<Activity> {
        let keep = |e: &Event| {
            q.since.is_none_or(|d| e.ts.date_naive() >= d)
                && (q.types.is_empty() || q.types.contains(&e.kind))
        };
        let Events { events, problems } =
            self.read_events_until(q.since, &|e| keep(e), q.limit.saturating_add(1))?;
        let mut matching: Vec<Event> = events.into_iter().filter(|e| keep(e)).collect();
        matching.reverse();
        let mut out = Activity {
            problems,
            ..Activity::default()
        };
        let mut chars = 0usize;
        let total = matching.len();
        for e in matching.into_iter().take(q.limit) {
            let len = e.encode().len();
            if !out.events.is_empty() && chars.saturating_add(len) > q.max_chars {
                break;
            }
            chars += len;
            out.events.push(e);
        }
        out.more = total > out.events.len();
        Ok(out)
    }
}
