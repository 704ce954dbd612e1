//! The timeline through the façade: reading day files newest first as far as a call
//! needs (spec/timeline-format.md#reading), appending a `note`, and inserting imported
//! events in time order. It must not touch memory files or MEMORY.md.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::engine::Memory;
use crate::engine::types::{Events, NOT_A_FILE, Problem, short_io};
use crate::error::{Error, Result};
use crate::memory::layout::{MAX_EVENT, MAX_TIMELINE_LINE, TIMELINE_DIR};
use crate::memory::secrets;
use crate::memory::timeline::{self, Event};
use crate::store::Found;

/// How far back [`Memory::read_events`] reads, newest day first.
enum Until<'a> {
    /// Every day.
    All,
    /// Until the lines read add up to this many characters.
    Chars(usize),
    /// Until `count` events pass `keep`, or the days before `since`.
    Matching {
        since: Option<chrono::NaiveDate>,
        keep: &'a dyn Fn(&Event) -> bool,
        count: usize,
    },
}

impl Memory {
    /// Reads every timeline event, oldest first.
    pub fn events(&self) -> Result<Events> {
        self.read_events(Until::All)
    }

    /// Reads the newest events whose lines add up to at least `chars` characters
    /// (or all of them), oldest first: enough to fill a context block.
    pub(super) fn recent_events(&self, chars: usize) -> Result<Events> {
        self.read_events(Until::Chars(chars))
    }

    /// Reads the newest day files, newest first, until `count` events pass `keep`
    /// (or the days before `since` are reached), and returns their events oldest first.
    pub(super) fn read_events_until(
        &self,
        since: Option<chrono::NaiveDate>,
        keep: &dyn Fn(&Event) -> bool,
        count: usize,
    ) -> Result<Events> {
        self.read_events(Until::Matching { since, keep, count })
    }

    fn read_events(&self, until: Until<'_>) -> Result<Events> {
        self.require_dir()?;
        let mut out = Events::default();
        let files = match self.backend.scan_timeline() {
            Ok(f) => f,
            // A linked timeline folder points outside the directory: report, read nothing.
            Err(Error::Symlink { .. }) => {
                out.problems.push(Problem::error(
                    TIMELINE_DIR,
                    None,
                    "timeline folder is a symbolic link; not followed",
                ));
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        let mut chunks: Vec<Vec<Event>> = Vec::new();
        let mut total = 0usize;
        let mut matched = 0usize;
        for found in files.iter().rev() {
            let Some((name, base)) = day_file(found, &mut out.problems) else {
                continue;
            };
            if let Until::Matching {
                since: Some(since), ..
            } = &until
                && chrono::NaiveDate::parse_from_str(&base[..10], "%Y-%m-%d")
                    .is_ok_and(|day| day < *since)
            {
                // Day files come newest first: every one from here on is older.
                break;
            }
            let evs = match self.read_day(name, &mut out.problems, &mut total) {
                Ok(evs) => evs,
                Err(e) => {
                    out.problems.push(Problem::error(name, None, short_io(&e)));
                    continue;
                }
            };
            if let Until::Matching { keep, .. } = &until {
                matched += evs.iter().filter(|e| keep(e)).count();
            }
            chunks.push(evs);
            let enough = match &until {
                Until::All => false,
                Until::Chars(n) => total >= *n,
                Until::Matching { count, .. } => matched >= *count,
            };
            if enough {
                break;
            }
        }
        for evs in chunks.into_iter().rev() {
            out.events.extend(evs);
        }
        // Files are days, but lines inside a day may have been appended out of order by
        // clocks that disagree; a stable sort keeps file order for equal times.
        out.events.sort_by_key(|e| e.ts);
        out.problems
            .sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
        Ok(out)
    }

    /// Appends a timeline event.
    pub fn note(&self, kind: &str, fields: Map<String, Value>) -> Result<Event> {
        let event = Event::new(self.now(), kind, fields)?;
        let line = event.encode();
        check_event_size(&event, &line)?;
        if let Some(k) = secrets::find_secret(&line) {
            return Err(Error::Secret {
                key: format!("the `{kind}` event"),
                field: "event",
                kind: k,
            });
        }
        self.backend.create()?;
        let _g = self.backend.lock(&self.mem_lock)?;
        self.backend.append_line(&event.day_file(), &line)?;
        Ok(event)
    }

    /// Inserts events into their day files in time order; caller holds the lock.
    /// Existing lines (including unreadable ones, byte for byte) keep their text and
    /// relative order. Day files are streamed: any size is fine.
    pub(super) fn insert_events(&self, events: &[Event]) -> Result<()> {
        let mut by_day: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
        for e in events {
            by_day.entry(e.day_file()).or_default().push(e);
        }
        for (file, mut new) in by_day {
            new.sort_by_key(|e| e.ts);
            let mut read: Result<bool> = Ok(false);
            self.backend
                .write_atomic_with(&file, |w| {
                    let mut pending = new.into_iter().peekable();
                    let mut failed: Option<std::io::Error> = None;
                    read = self.backend.for_each_line(&file, u64::MAX, |l| {
                        if failed.is_some() {
                            return;
                        }
                        let Ok(bytes) = l.bytes else { return };
                        let mut put = || -> std::io::Result<()> {
                            if let Some(e) = std::str::from_utf8(bytes)
                                .ok()
                                .and_then(|t| timeline::parse_line(t).ok())
                            {
                                while let Some(n) = pending.next_if(|n| n.ts < e.ts) {
                                    w.write_all(n.encode().as_bytes())?;
                                    w.write_all(b"\n")?;
                                }
                            }
                            w.write_all(bytes)?;
                            w.write_all(b"\n")
                        };
                        if let Err(e) = put() {
                            failed = Some(e);
                        }
                    });
                    if let Some(e) = failed {
                        return Err(e);
                    }
                    if read.is_err() {
                        return Err(std::io::Error::other("reading the day file failed"));
                    }
                    for n in pending {
                        w.write_all(n.encode().as_bytes())?;
                        w.write_all(b"\n")?;
                    }
                    Ok(())
                })
                .map_err(|e| match std::mem::replace(&mut read, Ok(false)) {
                    Err(r) => r,
                    Ok(_) => e,
                })?;
        }
        Ok(())
    }
}

/// Refuses an event whose line is over [`MAX_EVENT`].
pub(super) fn check_event_size(event: &Event, line: &str) -> Result<()> {
    if line.len() > MAX_EVENT {
        return Err(Error::EventTooLarge {
            kind: event.kind.clone(),
            size: line.len(),
            limit: MAX_EVENT,
        });
    }
    Ok(())
}

/// The steps of [`Memory::read_events`].
impl Memory {
    /// The events of one day file, line by line, streamed: a bad line (not UTF-8,
    /// not JSON, too long) is one bad line with a problem, and a day of any size is
    /// read (spec/timeline-format.md#reading). Adds the length of each event's line
    /// to `total`.
    fn read_day(
        &self,
        name: &str,
        problems: &mut Vec<Problem>,
        total: &mut usize,
    ) -> Result<Vec<Event>> {
        let mut evs = Vec::new();
        self.backend
            .for_each_line(name, MAX_TIMELINE_LINE, |l| match l.bytes {
                Err(len) => problems.push(Problem::error(
                    name,
                    Some(l.number),
                    format!(
                        "timeline line skipped: {len} bytes is over the limit of {MAX_TIMELINE_LINE} bytes per line"
                    ),
                )),
                Ok(b) if b.iter().all(u8::is_ascii_whitespace) => {}
                Ok(b) => match std::str::from_utf8(b) {
                    Err(_) => problems.push(Problem::error(
                        name,
                        Some(l.number),
                        "timeline line skipped: not valid UTF-8",
                    )),
                    Ok(line) => match timeline::parse_line(line) {
                        Ok(e) => {
                            *total += line.len();
                            evs.push(e);
                        }
                        Err(e) => problems.push(Problem::error(
                            name,
                            Some(l.number),
                            format!("timeline line skipped: {e}"),
                        )),
                    },
                },
            })?;
        Ok(evs)
    }
}

/// A timeline entry's name and base name when it is a day file; otherwise a problem
/// (an error for what is not a regular file, a warning for another name) and `None`.
fn day_file<'a>(found: &'a Found, problems: &mut Vec<Problem>) -> Option<(&'a str, &'a str)> {
    let name = match found {
        Found::File(n) => n,
        Found::Symlink(n) => {
            problems.push(Problem::error(n, None, "symbolic link not followed"));
            return None;
        }
        Found::BadName(n) => {
            problems.push(Problem::error(n, None, "file name is not valid UTF-8"));
            return None;
        }
        Found::NotAFile(n) => {
            problems.push(Problem::error(n, None, NOT_A_FILE));
            return None;
        }
    };
    let base = name.rsplit('/').next().unwrap_or(name);
    if !timeline::is_day_file_name(base) {
        problems.push(Problem::warning(
            name,
            None,
            "not a timeline day file (expected YYYY-MM-DD.jsonl); ignored",
        ));
        return None;
    }
    Some((name, base))
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use crate::engine::testing::dir_store;

    // spec/timeline-format.md#reading: a bad line is one problem with its line
    // number; the good lines around it are read.
    #[test]
    fn a_bad_timeline_line_is_skipped_with_its_number() {
        let (_tmp, mem) = dir_store();
        let first = mem.note("user_said", Map::new()).unwrap();
        let day = mem.root().join(first.day_file());
        let mut text = std::fs::read_to_string(&day).unwrap();
        text.push_str("not json\n");
        std::fs::write(&day, text).unwrap();
        mem.note("agent_did", Map::new()).unwrap();
        let events = mem.events().unwrap();
        let kinds: Vec<&str> = events.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["user_said", "agent_did"]);
        assert_eq!(events.problems.len(), 1, "{:?}", events.problems);
        assert_eq!(events.problems[0].path, first.day_file());
        assert_eq!(events.problems[0].line, Some(2));
        assert!(
            events.problems[0]
                .message
                .starts_with("timeline line skipped: ")
        );
    }
}
