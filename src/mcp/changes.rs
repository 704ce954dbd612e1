//! What changed in the resources since the client last heard: the source of
//! `notifications/resources/list_changed` and `notifications/resources/updated`.
//!
//! The tracker compares snapshots (the URI of every resource and a hash of its
//! text) instead of trusting file events: an editor's save arrives as several
//! events, our own writes echo back, and a file that turns malformed leaves the list.
//! Comparing states turns all of that into exactly the notifications a client needs.
//! A background thread runs the directory watcher (`memdir::watch`) and calls
//! [`Tracker::refresh`] after each batch; tools that change memories call it too, so
//! the client hears of its own writes at once and the watcher's echo finds nothing new.

use memdir::memory::printable::escape_line;
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::uri;
use memdir::Memory;
use memdir::memory::layout::MAX_MEMORY_FILE;

/// One notification to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A memory appeared or went away.
    ListChanged,
    /// The text behind this URI changed (or the resource appeared or went away).
    Updated(String),
}

/// The last state the client was told about.
#[derive(Debug, Default)]
pub struct Tracker {
    last: Option<BTreeMap<String, u64>>,
}

fn hash(text: &str) -> u64 {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// The URI and text hash of every resource of the store.
fn state(mem: &Memory) -> Option<BTreeMap<String, u64>> {
    let snap = mem.load().ok()?;
    let mut out: BTreeMap<String, u64> = snap
        .texts
        .iter()
        .map(|(key, text)| (uri::for_key(key), hash(text)))
        .collect();
    if let Ok(Some(index)) = mem.index_text(MAX_MEMORY_FILE) {
        out.insert(uri::INDEX.to_string(), hash(&index));
    }
    Some(out)
}

impl Tracker {
    /// Reads the store and returns what changed since the last call (nothing on the
    /// first call, which only records the state).
    pub fn refresh(&mut self, mem: &Memory) -> Vec<Change> {
        let Some(now) = state(mem) else {
            return Vec::new();
        };
        let Some(before) = self.last.replace(now.clone()) else {
            return Vec::new();
        };
        diff(&before, &now)
    }
}

/// The notifications that take a client from `before` to `now`.
fn diff(before: &BTreeMap<String, u64>, now: &BTreeMap<String, u64>) -> Vec<Change> {
    let mut out = Vec::new();
    let keys = |m: &BTreeMap<String, u64>| -> Vec<String> {
        m.keys().filter(|k| *k != uri::INDEX).cloned().collect()
    };
    if keys(before) != keys(now) {
        out.push(Change::ListChanged);
    }
    let mut uris: Vec<&String> = before.keys().chain(now.keys()).collect();
    uris.sort();
    uris.dedup();
    for u in uris {
        if before.get(u) != now.get(u) {
            out.push(Change::Updated(u.clone()));
        }
    }
    out
}

/// The tracker and the channel its changes go out on, shared by the server, its
/// tools and the watcher thread.
#[derive(Debug, Clone)]
pub struct Hub {
    tracker: Arc<Mutex<Tracker>>,
    tx: broadcast::Sender<Change>,
}

impl Hub {
    pub fn new(mem: &Memory) -> Hub {
        let (tx, _) = broadcast::channel(1024);
        let mut tracker = Tracker::default();
        tracker.refresh(mem);
        Hub {
            tracker: Arc::new(Mutex::new(tracker)),
            tx,
        }
    }

    /// Compares the store with what was last announced and announces the difference.
    pub fn refresh(&self, mem: &Memory) {
        let changes = self
            .tracker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .refresh(mem);
        for c in changes {
            // No receiver (no client listening yet) is not an error.
            let _ = self.tx.send(c);
        }
    }

    /// A receiver of every change announced from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }
}

/// Watches the directory until `stop` is set, announcing every change a person (or
/// another process) makes. Blocks: run it on its own thread.
///
/// `armed` is told once the watch is in place, so that the server can promise that no
/// edit made after it answered `initialize` goes unnoticed.
pub fn watch(
    mem: &Memory,
    hub: &Hub,
    stop: &AtomicBool,
    armed: std::sync::mpsc::Sender<()>,
) -> memdir::Result<()> {
    // A file a person is still editing stays malformed for a while: report each
    // problem once, not after every save.
    let mut reported: Vec<memdir::Problem> = Vec::new();
    memdir::watch(mem, stop, None, |rebuild| {
        for p in rebuild.problems.iter().filter(|p| !reported.contains(p)) {
            let level = match p.severity {
                memdir::Severity::Error => "error",
                memdir::Severity::Warning => "warning",
            };
            // The path and message come from the file: one line, no control character.
            eprintln!(
                "memdir mcp: {level}: {}: {}",
                escape_line(&mem.root().join(p.location()).display().to_string()),
                escape_line(&p.message)
            );
        }
        reported = rebuild.problems;
        hub.refresh(mem);
        let _ = armed.send(());
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn diffs() {
        let a = state(&[("memory://index", 1), ("memory://user_role", 2)]);
        assert_eq!(diff(&a, &a), vec![]);
        let edited = state(&[("memory://index", 1), ("memory://user_role", 3)]);
        assert_eq!(
            diff(&a, &edited),
            vec![Change::Updated("memory://user_role".into())]
        );
        let added = state(&[
            ("memory://index", 4),
            ("memory://user_role", 2),
            ("memory://user_x", 5),
        ]);
        assert_eq!(
            diff(&a, &added),
            vec![
                Change::ListChanged,
                Change::Updated("memory://index".into()),
                Change::Updated("memory://user_x".into()),
            ]
        );
        let removed = state(&[("memory://index", 6)]);
        assert_eq!(
            diff(&a, &removed),
            vec![
                Change::ListChanged,
                Change::Updated("memory://index".into()),
                Change::Updated("memory://user_role".into()),
            ]
        );
    }
}
