//! Timeline repair for `check --fix` (spec/timeline-format.md#repair).
//!
//! Only what loses nothing: byte-identical duplicate lines are dropped, the lines of a
//! day are sorted by time (stable), and events filed under the wrong UTC day move to
//! the right day file. A line that does not parse (or is blank) is never changed,
//! dropped or moved: it keeps its line number where the file is still that long. The
//! plan is a pure function of the day files; the executor backs up every day file it
//! will change under `.memdir/backups/` before writing anything.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::{Memory, Problem};
use crate::error::Result;
use crate::memory::layout::BACKUPS_DIR;
use crate::memory::timeline::{self, Event};
use crate::store::Found;

/// The largest day file repair reads whole; a bigger one is left alone with a warning.
const MAX_REPAIR_FILE: u64 = 64 * 1024 * 1024;

/// What repair did (or, without `--fix`, would do) to one day file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct TimelineRepair {
    /// The day file, relative to the directory.
    pub file: String,
    /// Byte-identical duplicate lines dropped.
    pub duplicates: usize,
    /// Whether its lines were put in time order.
    pub sorted: bool,
    /// Events moved out to their own day, by file.
    pub moved_out: BTreeMap<String, usize>,
    /// Events moved in from other day files.
    pub moved_in: usize,
    /// Lines that do not parse, kept as they were.
    pub kept_malformed: usize,
    /// Where the file was saved first (with `--fix`; none for a new day file).
    pub backup: Option<String>,
}

impl TimelineRepair {
    /// One line for `check`'s report.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.duplicates > 0 {
            parts.push(format!("dropped {} duplicate line(s)", self.duplicates));
        }
        if self.sorted {
            parts.push("sorted lines by time".to_string());
        }
        for (to, n) in &self.moved_out {
            parts.push(format!("moved {n} event(s) to {to}"));
        }
        if self.moved_in > 0 {
            parts.push(format!(
                "received {} event(s) from other days",
                self.moved_in
            ));
        }
        if self.kept_malformed > 0 {
            parts.push(format!(
                "kept {} unreadable line(s) untouched",
                self.kept_malformed
            ));
        }
        let mut s = format!("{}: {}", self.file, parts.join(", "));
        if let Some(b) = &self.backup {
            s.push_str(&format!(" (backup {b})"));
        }
        s
    }
}

/// A line of a day file as repair sees it.
enum Line {
    Event(Event, Vec<u8>),
    /// Blank or unreadable: never touched.
    Other(Vec<u8>),
}

fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    if bytes.ends_with(b"\n") || bytes.is_empty() {
        v.pop();
    }
    v
}

fn classify(raw: Vec<u8>) -> Line {
    match std::str::from_utf8(&raw)
        .ok()
        .filter(|s| !s.trim().is_empty())
        .and_then(|s| timeline::parse_line(s).ok())
    {
        Some(e) => Line::Event(e, raw),
        None => Line::Other(raw),
    }
}

/// Plans the repair of day files `(name, bytes)`: the new bytes of every file that
/// changes (new day files included) and what changed in each.
pub(crate) fn plan(files: &[(String, Vec<u8>)]) -> Vec<(TimelineRepair, Vec<u8>)> {
    // Per target file: lines that stay (with original positions), events moved in.
    struct Day {
        others: Vec<(usize, Vec<u8>)>,
        events: Vec<(Event, Vec<u8>)>,
        original: Option<Vec<u8>>,
        report: TimelineRepair,
    }
    let mut days: BTreeMap<String, Day> = BTreeMap::new();
    let new_day = |file: &str, original: Option<Vec<u8>>| Day {
        others: Vec::new(),
        events: Vec::new(),
        original,
        report: TimelineRepair {
            file: file.to_string(),
            ..TimelineRepair::default()
        },
    };
    for (name, bytes) in files {
        days.entry(name.clone())
            .or_insert_with(|| new_day(name, Some(bytes.clone())));
    }
    for (name, bytes) in files {
        for (i, raw) in split_lines(bytes).into_iter().enumerate() {
            match classify(raw) {
                Line::Other(raw) => {
                    let d = days.get_mut(name).expect("every file has a day");
                    d.others.push((i, raw));
                    d.report.kept_malformed += 1;
                }
                Line::Event(e, raw) => {
                    let target = e.day_file();
                    if target != *name {
                        let from = days.get_mut(name).expect("every file has a day");
                        *from.report.moved_out.entry(target.clone()).or_default() += 1;
                        let to = days
                            .entry(target.clone())
                            .or_insert_with(|| new_day(&target, None));
                        to.report.moved_in += 1;
                        to.events.push((e, raw));
                    } else {
                        days.get_mut(name)
                            .expect("every file has a day")
                            .events
                            .push((e, raw));
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for (_, mut d) in days {
        // Staying lines come first in `events` (their file order), moved-in after.
        let mut seen = std::collections::HashSet::new();
        let before = d.events.len();
        d.events.retain(|(_, raw)| seen.insert(raw.clone()));
        d.report.duplicates = before - d.events.len();
        let mut sorted = d.events.clone();
        sorted.sort_by_key(|(e, _)| e.ts);
        d.report.sorted = sorted.iter().zip(&d.events).any(|((_, a), (_, b))| a != b);
        // Unreadable lines keep their line number where the file is still that long.
        let total = sorted.len() + d.others.len();
        let mut slots: Vec<Option<Vec<u8>>> = vec![None; total];
        let n_others = d.others.len();
        for (k, (i, raw)) in d.others.into_iter().enumerate() {
            let latest = total - (n_others - k);
            let want = i.min(latest);
            let free = (want..total).chain(0..want).find(|&p| slots[p].is_none());
            if let Some(p) = free {
                slots[p] = Some(raw);
            }
        }
        let mut events = sorted.into_iter().map(|(_, raw)| raw);
        let mut bytes = Vec::new();
        for slot in slots {
            let line = match slot {
                Some(raw) => raw,
                None => events.next().unwrap_or_default(),
            };
            bytes.extend_from_slice(&line);
            bytes.push(b'\n');
        }
        let changed = d.original.as_ref() != Some(&bytes)
            && (d.report.duplicates > 0
                || d.report.sorted
                || d.report.moved_in > 0
                || !d.report.moved_out.is_empty());
        if changed {
            out.push((d.report, bytes));
        }
    }
    out
}

impl Memory {
    /// Plans timeline repair and, with `fix`, carries it out (the caller holds the
    /// lock). Without `fix` the repairs are returned as warnings to report.
    pub(crate) fn repair_timeline(&self, fix: bool) -> Result<(Vec<TimelineRepair>, Vec<Problem>)> {
        let mut problems = Vec::new();
        let found = match self.backend.scan_timeline() {
            Ok(f) => f,
            Err(_) => return Ok((Vec::new(), problems)),
        };
        let mut files = Vec::new();
        for f in &found {
            let Found::File(name) = f else { continue };
            let base = name.rsplit('/').next().unwrap_or(name);
            if !timeline::is_day_file_name(base) {
                continue;
            }
            match self.backend.read(name, MAX_REPAIR_FILE) {
                Ok(Some(b)) => files.push((name.clone(), b)),
                Ok(None) => {}
                Err(e) => problems.push(Problem::warning(
                    name,
                    None,
                    format!("not checked for repair: {e}"),
                )),
            }
        }
        let plan = plan(&files);
        if !fix {
            for (r, _) in &plan {
                problems.push(Problem::warning(
                    &r.file,
                    None,
                    format!(
                        "timeline needs repair; `check --fix` would: {}",
                        r.describe()
                            .split_once(": ")
                            .map(|(_, d)| d.to_string())
                            .unwrap_or_default()
                    ),
                ));
            }
            return Ok((plan.into_iter().map(|(r, _)| r).collect(), problems));
        }
        // Every backup first, then the writes.
        let stamp = self.now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
        let mut done = Vec::new();
        for (mut r, bytes) in plan {
            if self.backend.is_file(&r.file) {
                let base = r.file.rsplit('/').next().unwrap_or(&r.file);
                let name = self.unused_name(&format!("{BACKUPS_DIR}/timeline-{base}.{stamp}"))?;
                self.backend.copy_atomic(&r.file, &name)?;
                r.backup = Some(name);
            }
            done.push((r, bytes));
        }
        for (r, bytes) in &done {
            self.backend.write_atomic(&r.file, bytes)?;
        }
        Ok((done.into_iter().map(|(r, _)| r).collect(), problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, lines: &[&str]) -> (String, Vec<u8>) {
        let mut b = lines.join("\n").into_bytes();
        b.push(b'\n');
        (format!("timeline/{name}.jsonl"), b)
    }

    fn text(b: &[u8]) -> &str {
        std::str::from_utf8(b).unwrap()
    }

    const A: &str = r#"{"ts":"2026-04-14T10:00:00.000Z","type":"a"}"#;
    const B: &str = r#"{"ts":"2026-04-14T11:00:00.000Z","type":"b"}"#;
    const C: &str = r#"{"ts":"2026-04-14T12:00:00.000Z","type":"c"}"#;
    const NEXT: &str = r#"{"ts":"2026-04-15T01:00:00.000Z","type":"n"}"#;
    const BAD: &str = r#"{"ts":"broken"#;

    #[test]
    fn a_clean_timeline_needs_nothing() {
        assert!(plan(&[file("2026-04-14", &[A, B, C])]).is_empty());
        assert!(plan(&[file("2026-04-14", &[A, BAD, B])]).is_empty());
    }

    #[test]
    fn drops_duplicates_sorts_and_moves_keeping_bad_lines() {
        // spec/timeline-format.md#repair
        let p = plan(&[file("2026-04-14", &[C, A, BAD, NEXT, A, B])]);
        assert_eq!(p.len(), 2);
        let (r, b) = &p[0];
        assert_eq!(r.file, "timeline/2026-04-14.jsonl");
        assert_eq!(r.duplicates, 1);
        assert!(r.sorted);
        assert_eq!(r.moved_out.get("timeline/2026-04-15.jsonl"), Some(&1));
        assert_eq!(r.kept_malformed, 1);
        assert_eq!(text(b), format!("{A}\n{B}\n{BAD}\n{C}\n"));
        let (r, b) = &p[1];
        assert_eq!(r.file, "timeline/2026-04-15.jsonl");
        assert_eq!(r.moved_in, 1);
        assert_eq!(text(b), format!("{NEXT}\n"));
        // Repairing the result changes nothing more.
        let again: Vec<(String, Vec<u8>)> =
            p.iter().map(|(r, b)| (r.file.clone(), b.clone())).collect();
        assert!(plan(&again).is_empty());
    }

    #[test]
    fn a_moved_event_already_there_is_a_duplicate() {
        // The 15th already holds the event: moving it there adds nothing, so that file
        // is left as it is and the 14th loses its copy.
        let p = plan(&[file("2026-04-14", &[A, NEXT]), file("2026-04-15", &[NEXT])]);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0.file, "timeline/2026-04-14.jsonl");
        assert_eq!(text(&p[0].1), format!("{A}\n"));
    }

    /// Applies a plan to the files, as the executor does.
    fn apply(files: &[(String, Vec<u8>)]) -> BTreeMap<String, Vec<u8>> {
        let mut out: BTreeMap<String, Vec<u8>> = files.iter().cloned().collect();
        for (r, bytes) in plan(files) {
            out.insert(r.file, bytes);
        }
        out
    }

    proptest::proptest! {
        /// spec/timeline-format.md#repair: nothing is lost (every distinct event line and
        /// every unreadable line, with its count, is still there), every event ends up in
        /// its own day in time order, and repairing twice changes nothing.
        #[test]
        fn repair_loses_nothing_and_is_idempotent(
            lines in proptest::collection::vec((0usize..3, 0u32..3, 0u32..4, 0u8..6), 0..24),
        ) {
            let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
            for (file, day, hour, what) in &lines {
                let line = if *what == 5 {
                    format!("not json {hour}")
                } else {
                    format!(
                        r#"{{"ts":"2026-04-1{}T0{}:00:00.000Z","type":"e{}"}}"#,
                        4 + day, hour, what
                    )
                };
                let f = format!("timeline/2026-04-1{}.jsonl", 4 + file);
                let b = files.entry(f).or_default();
                b.extend_from_slice(line.as_bytes());
                b.push(b'\n');
            }
            let files: Vec<(String, Vec<u8>)> = files.into_iter().collect();
            let lines_of = |m: &mut dyn Iterator<Item = &Vec<u8>>| {
                let mut events = std::collections::BTreeSet::new();
                let mut bad = Vec::new();
                for b in m {
                    for l in split_lines(b) {
                        match classify(l) {
                            Line::Event(_, raw) => { events.insert(raw); }
                            Line::Other(raw) => bad.push(raw),
                        }
                    }
                }
                bad.sort();
                (events, bad)
            };
            let after = apply(&files);
            let before_lines = lines_of(&mut files.iter().map(|(_, b)| b));
            let after_lines = lines_of(&mut after.values());
            proptest::prop_assert_eq!(before_lines, after_lines);
            for (name, bytes) in &after {
                let mut last = None;
                for l in split_lines(bytes) {
                    if let Line::Event(e, _) = classify(l) {
                        proptest::prop_assert_eq!(&e.day_file(), name);
                        proptest::prop_assert!(last.is_none_or(|t| t <= e.ts));
                        last = Some(e.ts);
                    }
                }
            }
            let again: Vec<(String, Vec<u8>)> = after.into_iter().collect();
            proptest::prop_assert!(plan(&again).is_empty());
        }
    }
}
