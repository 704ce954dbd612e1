//! The background embedding worker of `memdir watch` and `memdir mcp`
//! (spec/ranking.md#hybrid-recall, spec/architecture.md#vectors-optional): with
//! `[embeddings]` configured, it embeds the memories that have no cached vector, in
//! batches of the configured size, after writes and file events (a nudge) and once
//! at start, so that the query path rarely has anything left to embed.
//!
//! Must not hold a lock during a network call, make a write or a tool call wait, or
//! print: a failure goes to the caller's `log` once per run of failures, and the
//! round is retried with a doubling backoff, a bounded number of times before it waits
//! for the next nudge (and even then at most once per [`BACKOFF_MAX`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::embed::EmbedError;
use crate::embed::cache::{self, Vectors};
use crate::engine::Memory;
use crate::engine::hybrid;

/// The first wait after a failed round; each further failure doubles it.
pub const BACKOFF_START: Duration = Duration::from_secs(1);

/// The longest wait between two attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// Failed rounds in a row after which the worker waits for a nudge.
pub const MAX_FAILURES: u32 = 6;

/// How often an idle worker looks for memories without a vector anyway (an
/// `[embeddings]` section added, a file changed while no one watched).
pub const IDLE: Duration = Duration::from_secs(30);

/// Batches between two writes of the cache file during a long round.
const SAVE_EVERY: usize = 16;

/// Why a round stopped.
#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    /// The embedding provider failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The memories could not be loaded.
    #[error("loading the memories: {0}")]
    Store(#[from] crate::error::Error),
}

/// The wait before the attempt that follows `failures` failed rounds.
fn backoff(failures: u32) -> Duration {
    let doubled = BACKOFF_START.saturating_mul(1 << failures.saturating_sub(1).min(16));
    doubled.min(BACKOFF_MAX)
}

impl Memory {
    /// One round of the background worker: embeds every memory without a cached
    /// vector, a batch per request, with no lock held during a request, and keeps
    /// the vectors in the cache (and in the warm store); a round that finishes then
    /// drops the vectors no memory's text has any more. Stops between batches when
    /// `stop` is set. `Ok(0)` when `[embeddings]` is absent.
    pub fn backfill_round(&self, stop: &AtomicBool) -> Result<usize, BackfillError> {
        let backend = &self.backend;
        let Some(config) = hybrid::config(backend)? else {
            return Ok(0);
        };
        let embedder = config.embedder()?;
        let rel = cache::file(&config.model, config.dimensions);
        let warm = self.with_warm(|w| Ok(w.missing_vectors(backend, &rel, config.dimensions)));
        // Cold: the vectors and the hashes of the texts the memories have now.
        let (missing, mut cold) = match warm {
            Some(r) => (r?, None),
            None => {
                let (snap, _, _) = self.load_records(false)?;
                let vectors = hybrid::read_vectors(backend, &rel, config.dimensions);
                let hashes = hybrid::hashes_of(&snap.records);
                let has = |i: usize| vectors.get(&hashes[i]).is_some();
                let missing = hybrid::missing_of(&snap.records, &hashes, has, usize::MAX);
                let live = hybrid::live_hashes(&snap.records, &hashes, config.passages);
                (missing, Some((vectors, live)))
            }
        };
        let save = |cold: &mut Option<(Vectors, Vec<[u8; 32]>)>| match cold {
            Some((v, _)) => hybrid::save_vectors(backend, &rel, v),
            None => self.save_warm_vectors(),
        };
        let mut embedded = 0;
        for (n, chunk) in missing.chunks(config.batch_size).enumerate() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let texts: Vec<String> = chunk.iter().map(|(_, t)| t.clone()).collect();
            let vectors = match embedder.embed(&texts) {
                Ok(v) => v,
                Err(e) => {
                    // What was embedded before the failure is kept.
                    save(&mut cold);
                    return Err(e.into());
                }
            };
            let pairs: Vec<([u8; 32], Vec<f32>)> =
                chunk.iter().map(|(h, _)| *h).zip(vectors).collect();
            embedded += pairs.len();
            match &mut cold {
                Some((v, _)) => pairs.into_iter().for_each(|(h, x)| v.insert(h, x)),
                None => {
                    if let Some(r) = self.with_warm_as_is(|w| {
                        w.add_vectors(&rel, pairs);
                        Ok(())
                    }) {
                        r?;
                    }
                }
            }
            if (n + 1) % SAVE_EVERY == 0 {
                save(&mut cold);
            }
        }
        // A finished round drops the vectors of texts no memory has any more (a
        // memory forgotten or edited): the cache holds what the store can use.
        if !stop.load(Ordering::Relaxed) {
            match &mut cold {
                Some((v, hashes)) => v.retain(hashes.iter().copied()),
                None => {
                    if let Some(r) = self.with_warm_as_is(|w| {
                        w.prune_vectors(&rel, config.passages);
                        Ok(())
                    }) {
                        r?;
                    }
                }
            }
        }
        save(&mut cold);
        Ok(embedded)
    }
}

/// Runs the worker on this thread until `stop` is set or every nudge sender is
/// gone: a round at start, after each nudge, when idle for [`IDLE`], and after a
/// failure with backoff. `log` hears the first failure of each run of failures.
pub fn run(mem: &Memory, nudges: &Receiver<()>, stop: &AtomicBool, log: &mut dyn FnMut(&str)) {
    let mut failures: u32 = 0;
    let mut pending = true;
    let mut retry_at: Option<Instant> = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if pending && retry_at.is_none_or(|t| Instant::now() >= t) {
            pending = false;
            match mem.backfill_round(stop) {
                Ok(_) => {
                    failures = 0;
                    retry_at = None;
                }
                Err(e) => {
                    if failures == 0 {
                        log(&e.to_string());
                    }
                    failures = failures.saturating_add(1);
                    if failures < MAX_FAILURES {
                        retry_at = Some(Instant::now() + backoff(failures));
                        pending = true;
                    } else {
                        // Given up until the next nudge, and even then not at once.
                        retry_at = Some(Instant::now() + BACKOFF_MAX);
                    }
                }
            }
            continue;
        }
        let wait = match (pending, retry_at) {
            (true, Some(t)) => t.saturating_duration_since(Instant::now()),
            _ => IDLE,
        };
        match nudges.recv_timeout(wait) {
            Ok(()) => {
                while nudges.try_recv().is_ok() {}
                pending = true;
            }
            Err(RecvTimeoutError::Timeout) => pending |= failures == 0,
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// A nudge: "memories may have changed". Never blocks.
#[derive(Debug, Clone)]
pub struct Nudge(SyncSender<()>);

impl Nudge {
    /// Wakes the worker for a round; a nudge already waiting is enough.
    pub fn nudge(&self) {
        // A full channel already holds a nudge; a closed one has no worker to wake.
        match self.0.try_send(()) {
            Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// A nudge and the receiving end for [`run`].
pub fn channel() -> (Nudge, Receiver<()>) {
    let (tx, rx) = sync_channel(1);
    (Nudge(tx), rx)
}

/// The worker on a thread of its own, for a process that shares its [`Memory`].
#[derive(Debug)]
pub struct Backfill {
    nudge: Nudge,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Backfill {
    /// Starts the worker; `log` hears each run of failures once.
    pub fn spawn(mem: Arc<Memory>, mut log: impl FnMut(&str) + Send + 'static) -> Backfill {
        let (nudge, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("memdir-embed".into())
            .spawn(move || run(&mem, &rx, &s, &mut log))
            .ok();
        Backfill {
            nudge,
            stop,
            thread,
        }
    }

    /// A handle that wakes the worker.
    pub fn nudger(&self) -> Nudge {
        self.nudge.clone()
    }

    /// Wakes the worker: memories may have changed.
    pub fn nudge(&self) {
        self.nudge.nudge();
    }

    /// Stops the worker and waits for it: at most the request in flight (bounded by
    /// the configured timeout and its retries).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.nudge.nudge();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Backfill {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.nudge.nudge();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let secs: Vec<u64> = (1..=9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }
}
