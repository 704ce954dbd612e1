//! Agent state and sessions on the `Memory` façade (spec/cli.md#state,
//! spec/cli.md#sessions).
//!
//! A state entry is the memory `state_<key>.md` with `type: state`; a session summary
//! is a memory with `summarizes: {session, through}` plus a `compacted` event. Both
//! are ordinary memory files and timeline lines, so sync merges them like any other.
//! Owns the rules of `state set|unset` (read-only refused, a `state_set` event per
//! change) and of `session compact`; the rendering is retrieval's.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::engine::{
    Draft, IfExists, Memory, Problem, Sessions, States, WriteOutcome, check_draft, check_event_size,
};
use crate::error::{Error, Result};
use crate::memory::frontmatter;
use crate::memory::layout::MAX_MEMORY_FILE;
use crate::memory::timeline::{Event, format_ts};
use crate::memory::{Key, Kind, Record};
use crate::retrieval::state::{self as view, Transcript};

/// One agent state entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateEntry {
    /// The state key (`mood` for `state_mood.md`).
    pub key: String,
    /// The memory key of its file (`state_mood`).
    pub file_key: String,
    /// Its value (the file's body).
    pub value: String,
    /// `limit:` in characters, when set.
    pub limit: Option<usize>,
    /// `read_only: true`: `set_state` refuses to change it.
    pub read_only: bool,
    /// When it last changed, as written in its frontmatter.
    pub updated: String,
}

impl StateEntry {
    fn of(r: &Record) -> StateEntry {
        StateEntry {
            key: view::state_key(r).to_string(),
            file_key: r.key.to_string(),
            value: r.body.to_string(),
            limit: r.meta.state_limit(),
            read_only: r.meta.read_only(),
            updated: r.meta.updated.text.clone(),
        }
    }
}

/// What `session compact` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compacted {
    /// The session compacted.
    pub session: String,
    /// The summary memory.
    pub key: String,
    /// The time of the newest event summarized.
    pub through: String,
    /// Events of the session up to `through`.
    pub events: usize,
    /// Whether the summary memory was created or updated.
    pub outcome: WriteOutcome,
}

/// The memory key of state `key`: `state_<key>`.
fn file_key(key: &str) -> Result<Key> {
    let key = key.strip_suffix(".md").unwrap_or(key);
    Key::parse(key)?;
    Ok(Key::parse(&format!("state_{key}"))?)
}

impl Memory {
    /// The state entry `key` (the memory `state_<key>`), if there is one.
    pub fn state(&self, key: &str) -> Result<Option<StateEntry>> {
        let fk = file_key(key)?;
        match self.read(fk.as_str()) {
            Ok(r) if r.meta.kind == Kind::State => Ok(Some(StateEntry::of(&r))),
            Ok(_) | Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every state entry, by key, and the problems met loading the store.
    pub fn states(&self) -> Result<States> {
        let snap = self.load()?;
        let out = view::state_entries(&snap.records)
            .into_iter()
            .map(|i| StateEntry::of(&snap.records[i]))
            .collect();
        Ok(States {
            entries: out,
            problems: snap.problems,
        })
    }

    /// Sets state `key` to `value` and appends a `state_set` event (none when the
    /// value is unchanged). A `read_only: true` entry is refused and nothing changes;
    /// so is a file `state_<key>.md` that is not of type `state`. `limit` and
    /// `read_only` of an existing entry are kept.
    pub fn set_state(&self, key: &str, value: &str) -> Result<(WriteOutcome, Option<Event>)> {
        let fk = file_key(key)?;
        let key = fk.as_str().strip_prefix("state_").unwrap_or(fk.as_str());
        let name = fk.file_name();
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let old = match self.backend.read_text(&name, MAX_MEMORY_FILE)? {
            None => None,
            Some(text) => Some(
                frontmatter::parse(&text).map_err(|source| Error::Malformed {
                    path: self.backend.display_path(&name),
                    source,
                })?,
            ),
        };
        if let Some(p) = &old {
            if p.meta.kind != Kind::State {
                return Err(Error::Argument {
                    arg: "key".into(),
                    message: format!(
                        "{name} exists and is a `{}` memory, not a state entry; nothing was changed",
                        p.meta.kind
                    ),
                });
            }
            if p.meta.read_only() {
                return Err(Error::ReadOnly {
                    key: key.to_string(),
                    file: name,
                });
            }
        }
        let draft = Draft {
            key: fk.to_string(),
            name: old
                .as_ref()
                .map(|p| p.meta.name.clone())
                .unwrap_or_else(|| key.to_string()),
            description: old
                .as_ref()
                .map(|p| p.meta.description.clone())
                .unwrap_or_else(|| format!("agent state {key}")),
            kind: "state".into(),
            body: value.to_string(),
            ..Draft::default()
        };
        check_draft(&fk, &draft)?;
        let mut fields = Map::new();
        fields.insert("key".into(), Value::String(fk.to_string()));
        let event = Event::new(self.now(), "state_set", fields)?;
        let line = event.encode();
        check_event_size(&event, &line)?;
        let outcome = self.write_locked(&fk, Kind::State, None, &draft)?.outcome;
        if outcome == WriteOutcome::Unchanged {
            return Ok((outcome, None));
        }
        self.backend.append_line(&event.day_file(), &line)?;
        Ok((outcome, Some(event)))
    }

    /// Removes state `key`: the memory is forgotten (a `forgot` event with reason
    /// `state unset`, a tombstone sync carries). A read-only entry is refused.
    pub fn unset_state(&self, key: &str) -> Result<Event> {
        let fk = file_key(key)?;
        match self.state(key)? {
            None => Err(Error::NotFound {
                key: fk.to_string(),
            }),
            Some(e) if e.read_only => Err(Error::ReadOnly {
                key: e.key,
                file: fk.file_name(),
            }),
            Some(_) => Ok(self.forget(fk.as_str(), Some("state unset"))?.event),
        }
    }

    /// The sessions of the timeline (events with a `session` field), by first time.
    pub fn sessions(&self) -> Result<Sessions> {
        let ev = self.events()?;
        Ok(Sessions {
            sessions: view::sessions(&ev.events),
            problems: ev.problems,
        })
    }

    /// The budgeted transcript of session `id` (spec/cli.md#sessions).
    pub fn session_transcript(&self, id: &str, max_tokens: usize) -> Result<Transcript> {
        let ev = self.events()?;
        let t = view::transcript(&ev.events, id, max_tokens);
        if t.events == 0 {
            return Err(Error::NoSession {
                session: id.to_string(),
            });
        }
        Ok(t)
    }

    /// Stores `summary` (the agent's summary of session `id`) as a memory with
    /// `summarizes: {session: id, through}` and appends a `compacted` event
    /// `{session, key, through}`. `through` defaults to the time of the session's
    /// newest event (its `compacted` events aside). Source events are never deleted.
    /// `if_exists` says what to do when `summary`'s key already holds a memory (see
    /// [`Memory::write_if`]).
    pub fn compact_session(
        &self,
        id: &str,
        summary: &Draft,
        through: Option<chrono::DateTime<chrono::Utc>>,
        if_exists: &IfExists,
    ) -> Result<Compacted> {
        if id.trim().is_empty() {
            return Err(Error::Empty { field: "session" });
        }
        let key = Key::parse(&summary.key)?;
        let kind = match &summary.kind {
            Kind::Other(value) => {
                return Err(Error::Type {
                    value: value.clone(),
                });
            }
            k => k.clone(),
        };
        check_draft(&key, summary)?;
        let ev = self.events()?;
        let of_session: Vec<&Event> = ev
            .events
            .iter()
            .filter(|e| e.kind != "compacted" && e.field_str("session") == Some(id))
            .collect();
        let Some(newest) = of_session.last().map(|e| e.ts) else {
            return Err(Error::NoSession {
                session: id.to_string(),
            });
        };
        let through = through.unwrap_or(newest);
        let events = of_session.iter().filter(|e| e.ts <= through).count();
        let through_s = format_ts(&through);
        let mut fields = Map::new();
        fields.insert("session".into(), Value::String(id.to_string()));
        fields.insert("key".into(), Value::String(key.to_string()));
        fields.insert("through".into(), Value::String(through_s.clone()));
        let event = Event::new(self.now(), "compacted", fields)?;
        let line = event.encode();
        check_event_size(&event, &line)?;
        let mut summarizes = Map::new();
        summarizes.insert("session".into(), Value::String(id.to_string()));
        summarizes.insert("through".into(), Value::String(through_s.clone()));
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        let outcome = self
            .write_locked_with(
                &key,
                kind,
                None,
                summary,
                &[("summarizes", Value::Object(summarizes))],
                if_exists,
            )?
            .outcome;
        if outcome != WriteOutcome::Unchanged {
            self.backend.append_line(&event.day_file(), &line)?;
        }
        Ok(Compacted {
            session: id.to_string(),
            key: key.to_string(),
            through: through_s,
            events,
            outcome,
        })
    }
}

/// Warnings for sessions summarized by more than one memory (two devices compacted
/// the same session; both summaries are kept, spec/sync.md#cases).
pub(crate) fn compaction_problems(records: &[Record]) -> Vec<Problem> {
    let mut by_session: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for r in records {
        if let Some(s) = r.meta.summarizes() {
            by_session
                .entry(s.session)
                .or_default()
                .push(r.key.as_str());
        }
    }
    by_session
        .into_iter()
        .filter(|(_, keys)| keys.len() > 1)
        .map(|(session, mut keys)| {
            keys.sort();
            Problem::warning(
                &Key::from_file_stem(keys[0]).file_name(),
                None,
                format!(
                    "session `{session}` is summarized by {} memories ({}); both are kept — merge them into one and forget the other",
                    keys.len(),
                    keys.join(", ")
                ),
            )
        })
        .collect()
}
