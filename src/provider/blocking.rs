//! The blocking entry point: a provider with its own runtime, for callers without
//! async.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cid::Cid;

use crate::ipfs::car::CarLimits;
use crate::provider::{
    Blocks, BoxFuture, Capabilities, Direction, HeadSwap, Progress, Provider, ProviderError,
    Receipt, Settings, Waiting, from_env, process_env,
};

/// A provider with its own small runtime, for synchronous callers.
pub struct Blocking {
    runtime: tokio::runtime::Runtime,
    provider: Box<dyn Provider>,
    deadline: Duration,
    wait_every: Duration,
}

/// Environment variable: seconds one whole transfer (a CAR up or down, retries
/// included) may take before it is abandoned (exit 3).
pub const DEADLINE_VAR: &str = "MEMDIR_TRANSFER_DEADLINE";

/// The default of [`DEADLINE_VAR`]: what a person at a terminal would wait.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);

/// How often a download that has received nothing yet says so
/// ([`Progress::waiting`]).
pub const WAIT_NOTE_EVERY: Duration = Duration::from_secs(10);

/// Passes progress on and remembers whether any bytes arrived.
struct Watch<'a> {
    inner: &'a dyn Progress,
    moved: AtomicBool,
}

impl Progress for Watch<'_> {
    fn progress(&self, direction: Direction, done: u64, total: Option<u64>) {
        if done > 0 {
            self.moved.store(true, Ordering::Relaxed);
        }
        self.inner.progress(direction, done, total);
    }

    fn waiting(&self, waiting: &Waiting<'_>) {
        self.inner.waiting(waiting);
    }
}

impl fmt::Debug for Blocking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blocking")
            .field("provider", &self.provider.name())
            .finish()
    }
}

impl Blocking {
    /// Wraps `provider` with a current-thread runtime.
    pub fn new(provider: Box<dyn Provider>) -> Result<Blocking, ProviderError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| ProviderError::Runtime { source })?;
        let deadline = match process_env(DEADLINE_VAR) {
            None => DEFAULT_DEADLINE,
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_secs(n),
                _ => {
                    return Err(ProviderError::BadConfig {
                        provider: provider.name().to_string(),
                        var: DEADLINE_VAR,
                        value: v,
                        reason: "expected a whole number of seconds above 0".into(),
                    });
                }
            },
        };
        Ok(Blocking {
            runtime,
            provider,
            deadline,
            wait_every: WAIT_NOTE_EVERY,
        })
    }

    /// The same, with another overall deadline (instead of [`DEADLINE_VAR`]).
    pub fn with_deadline(mut self, deadline: Duration) -> Blocking {
        self.deadline = deadline;
        self
    }

    /// The same, saying a download is still waiting every `every` instead of
    /// every [`WAIT_NOTE_EVERY`].
    pub fn with_wait_every(mut self, every: Duration) -> Blocking {
        self.wait_every = every.max(Duration::from_millis(10));
        self
    }

    /// The overall deadline of one transfer.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    fn expired(&self, what: &str) -> ProviderError {
        ProviderError::Timeout {
            provider: self.provider.name().to_string(),
            method: "transfer".into(),
            url: what.to_string(),
            after: self.deadline,
        }
    }

    /// Runs one whole transfer under the overall deadline (spec/sync.md#pull).
    fn bounded<T>(
        &self,
        what: &str,
        fut: BoxFuture<'_, Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let deadline = self.deadline;
        self.runtime.block_on(async move {
            tokio::time::timeout(deadline, fut)
                .await
                .unwrap_or_else(|_| Err(self.expired(what)))
        })
    }

    /// The provider called `name` (see [`PROVIDER_NAMES`](crate::provider::PROVIDER_NAMES)), configured from
    /// the process environment, ready for synchronous use.
    pub fn from_process_env(name: &str) -> Result<Blocking, ProviderError> {
        let env = process_env;
        // Settings use the system clock even when MEMDIR_NOW is set: request
        // signatures need the real time.
        let settings = Settings::from_env(&env)?;
        Blocking::new(from_env(name, &env, &settings)?)
    }

    /// The wrapped provider.
    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// [`Provider::name`].
    pub fn name(&self) -> &str {
        self.provider.name()
    }

    /// [`Provider::capabilities`].
    pub fn capabilities(&self) -> Capabilities {
        self.provider.capabilities()
    }

    /// [`Provider::put_car`], blocking.
    pub fn put_car(
        &self,
        root: &Cid,
        car: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        self.bounded(
            &format!("of {root} (whole upload)"),
            self.provider.put_car(root, car, progress),
        )
    }

    /// [`Provider::put_car_delta`], blocking.
    pub fn put_car_delta(
        &self,
        root: &Cid,
        delta: &[u8],
        full: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        self.bounded(
            &format!("of {root} (whole upload)"),
            self.provider.put_car_delta(root, delta, full, progress),
        )
    }

    /// [`Provider::get_car`], blocking, under the overall deadline; while
    /// nothing has arrived, `progress` hears [`Progress::waiting`] every
    /// [`WAIT_NOTE_EVERY`].
    pub fn get_car(
        &self,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        let watch = Watch {
            inner: progress,
            moved: AtomicBool::new(false),
        };
        let (deadline, every) = (self.deadline, self.wait_every);
        self.runtime.block_on(async {
            let start = tokio::time::Instant::now();
            let download =
                tokio::time::timeout(deadline, self.provider.get_car(root, limits, &watch));
            tokio::pin!(download);
            let mut tick = tokio::time::interval_at(start + every, every);
            // Ends when the download does, at the latest at the deadline.
            loop {
                tokio::select! {
                    biased;
                    done = &mut download => {
                        return done.unwrap_or_else(|_| {
                            Err(self.expired(&format!("of {root} (whole download)")))
                        });
                    }
                    _ = tick.tick() => {
                        if !watch.moved.load(Ordering::Relaxed) && start.elapsed() < deadline {
                            progress.waiting(&Waiting {
                                root,
                                provider: self.provider.name(),
                                elapsed: start.elapsed(),
                                deadline,
                            });
                        }
                    }
                }
            }
        })
    }

    /// [`Provider::has`], blocking.
    pub fn has(&self, root: &Cid) -> Result<bool, ProviderError> {
        self.runtime.block_on(self.provider.has(root))
    }

    /// [`Provider::unpin`], blocking.
    pub fn unpin(&self, receipt: &Receipt) -> Result<(), ProviderError> {
        self.runtime.block_on(self.provider.unpin(receipt))
    }

    /// [`Provider::head`], blocking.
    pub fn head(&self, channel: &str) -> Result<Option<Cid>, ProviderError> {
        self.runtime.block_on(self.provider.head(channel))
    }

    /// [`Provider::set_head`], blocking.
    pub fn set_head(&self, channel: &str, root: &Cid) -> Result<(), ProviderError> {
        self.runtime.block_on(self.provider.set_head(channel, root))
    }

    /// [`Provider::swap_head`], blocking.
    pub fn swap_head(
        &self,
        channel: &str,
        expected: Option<&Cid>,
        root: &Cid,
    ) -> Result<HeadSwap, ProviderError> {
        self.runtime
            .block_on(self.provider.swap_head(channel, expected, root))
    }

    /// [`Provider::put_lineage`], blocking.
    pub fn put_lineage(&self, root: &Cid, lineage: &[u8]) -> Result<(), ProviderError> {
        self.runtime
            .block_on(self.provider.put_lineage(root, lineage))
    }

    /// [`Provider::lineage`], blocking.
    pub fn lineage(&self, root: &Cid) -> Result<Option<Vec<u8>>, ProviderError> {
        self.runtime.block_on(self.provider.lineage(root))
    }
}
