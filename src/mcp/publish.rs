//! The push that follows the server's writes in the `ipfs` and `encrypted-ipfs`
//! modes, off the request path (spec/mcp.md#sync).
//!
//! A tool that changed the memory pokes the [`Publisher`]; its thread waits until no
//! poke came for [`PUSH_DELAY`] (a burst of writes is one push), then pushes with the
//! configured provider, as `memdir write` does after its change. A write's response
//! never waits for the network. A failed push leaves the change local, is logged on
//! stderr and kept as the last attempt, which the `sync_status` tool shows. The
//! `sync` tool takes the same network slot, so a background push and a sync never
//! run at once. It must not decide merges or speak HTTP: `memdir::sync` does.

// Built without the `sync` feature, the server lists no sync tool and never
// pushes: the parts of this module only sync uses are then unused.
#![cfg_attr(not(feature = "sync"), allow(dead_code, unused_imports))]

use memdir::memory::printable::escape_text;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use memdir::Memory;
use memdir::sync::config::Mode;

/// How long after the last write the push starts.
pub const PUSH_DELAY: Duration = Duration::from_secs(2);

/// How long the end of a session waits for the last push.
const FINAL_PUSH_TIMEOUT: Duration = Duration::from_secs(20);

/// What the server was told about syncing besides `.memdir/config.toml` (the
/// three.ws manifest's `mode` and `provider`, which override the file).
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub mode: Option<Mode>,
    pub provider: Option<String>,
}

/// One push the server made (or tried).
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// When it ended (RFC 3339, UTC).
    pub at: String,
    pub ok: bool,
    /// The network root pushed (on success).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Nothing had to be sent.
    pub up_to_date: bool,
    /// The CLI's error document (`{"message", "causes", "hint", "exit_code"}`) on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

#[derive(Debug, Default)]
struct State {
    /// When the last unpushed write happened.
    dirty_since: Option<Instant>,
    running: bool,
    stop: bool,
    last: Option<Attempt>,
}

#[derive(Debug)]
struct Inner {
    #[cfg_attr(not(feature = "sync"), allow(dead_code))]
    mem: Arc<Memory>,
    target: Target,
    delay: Duration,
    /// No note of a push that went through (`-q`).
    #[cfg_attr(not(feature = "sync"), allow(dead_code))]
    quiet: bool,
    state: Mutex<State>,
    wake: Condvar,
    /// Held for every network operation of this server: a background push or a sync.
    net: Mutex<()>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What `sync_status` shows about the background push.
#[derive(Debug, Clone, Serialize)]
pub struct PushState {
    /// Writes are pushed (the mode is `ipfs` or `encrypted-ipfs`).
    pub enabled: bool,
    pub delay_ms: u64,
    /// A write is waiting for its push.
    pub pending: bool,
    /// A push is running now.
    pub running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<Attempt>,
}

/// The background push of one served directory; `None` inside for a store that
/// has no directory (mode `none`).
#[derive(Debug)]
pub struct Publisher {
    inner: Option<Arc<Inner>>,
    done: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Publisher {
    /// A publisher that never pushes (mode `none`, or a build without sync).
    pub fn disabled() -> Publisher {
        Publisher {
            inner: None,
            done: Mutex::new(None),
        }
    }

    /// Starts the push thread for `mem`; `quiet`: no note of a push that went through.
    pub fn start(mem: Arc<Memory>, target: Target, delay: Duration, quiet: bool) -> Publisher {
        let inner = Arc::new(Inner {
            mem,
            target,
            delay,
            quiet,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            net: Mutex::new(()),
        });
        let (tx, rx) = std::sync::mpsc::channel();
        let worker = inner.clone();
        std::thread::spawn(move || {
            run(&worker);
            let _ = tx.send(());
        });
        Publisher {
            inner: Some(inner),
            done: Mutex::new(Some(rx)),
        }
    }

    /// Whether this server serves a directory that can sync at all.
    #[cfg(not(feature = "sync"))]
    pub fn has_directory(&self) -> bool {
        self.inner.is_some()
    }

    /// The manifest's choices, if any.
    pub fn target(&self) -> Option<&Target> {
        self.inner.as_deref().map(|i| &i.target)
    }

    /// A tool changed the memory: push after the delay.
    pub fn poke(&self) {
        if let Some(i) = &self.inner {
            i.state().dirty_since = Some(Instant::now());
            i.wake.notify_all();
        }
    }

    /// Runs `f` holding the network slot (no background push runs meanwhile). A
    /// write made before `f` started is covered by it when `f` pushed: `covers`
    /// says so, and the pending push is dropped.
    pub fn exclusive<T>(&self, f: impl FnOnce() -> T, covers: impl Fn(&T) -> bool) -> T {
        let Some(i) = &self.inner else { return f() };
        let _net = i.net.lock().unwrap_or_else(|e| e.into_inner());
        let started = Instant::now();
        let out = f();
        if covers(&out) {
            let mut st = i.state();
            if st.dirty_since.is_some_and(|t| t <= started) {
                st.dirty_since = None;
            }
        }
        out
    }

    /// The state of the background push.
    pub fn state(&self, enabled: bool) -> PushState {
        match &self.inner {
            None => PushState {
                enabled: false,
                delay_ms: 0,
                pending: false,
                running: false,
                last: None,
            },
            Some(i) => {
                let st = i.state();
                PushState {
                    enabled,
                    delay_ms: i.delay.as_millis() as u64,
                    pending: st.dirty_since.is_some(),
                    running: st.running,
                    last: st.last.clone(),
                }
            }
        }
    }

    /// Stops the thread after the pending push, if any, waiting for it (bounded).
    pub fn finish(&self) {
        let Some(i) = &self.inner else { return };
        i.state().stop = true;
        i.wake.notify_all();
        let done = self.done.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(rx) = done
            && rx.recv_timeout(FINAL_PUSH_TIMEOUT).is_err()
        {
            eprintln!(
                "memdir mcp: warning: the last push did not finish in {}s; `memdir status` lists what is unpushed",
                FINAL_PUSH_TIMEOUT.as_secs()
            );
        }
    }
}

/// The push thread: wait for a write, wait until writes stop for the delay, push.
fn run(i: &Inner) {
    let mut st = i.state();
    loop {
        let Some(since) = st.dirty_since else {
            if st.stop {
                return;
            }
            st = i.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let due = since + i.delay;
        let now = Instant::now();
        if now < due && !st.stop {
            st = i
                .wake
                .wait_timeout(st, due - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        st.dirty_since = None;
        st.running = true;
        drop(st);
        let attempt = push(i);
        st = i.state();
        st.running = false;
        if let Some(a) = attempt {
            st.last = Some(a);
        }
    }
}

/// One push, holding the network slot; `None` when the mode does not sync.
#[cfg(feature = "sync")]
fn push(i: &Inner) -> Option<Attempt> {
    let _net = i.net.lock().unwrap_or_else(|e| e.into_inner());
    let result = push_now(&i.mem, &i.target);
    let at = i
        .mem
        .now()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    match result {
        Ok(None) => None,
        Ok(Some(r)) => {
            for w in &r.warnings {
                eprintln!("memdir mcp: warning: {}", escape_text(&w.to_string()));
            }
            if !r.up_to_date && !i.quiet {
                eprintln!("memdir mcp: pushed {} to {}", r.network_root, r.provider);
            }
            Some(Attempt {
                at,
                ok: true,
                root: Some(r.network_root),
                provider: Some(r.provider),
                up_to_date: r.up_to_date,
                error: None,
            })
        }
        Err(e) => {
            let f = memdir::report::Failure::from(e);
            let (lines, doc) = f.report(memdir::report::Front::Mcp);
            eprintln!(
                "memdir mcp: warning: the change is saved locally but was not pushed (the sync tool retries)"
            );
            for l in lines {
                eprintln!("memdir mcp: {}", escape_text(&l));
            }
            Some(Attempt {
                at,
                ok: false,
                root: None,
                provider: None,
                up_to_date: false,
                error: Some(doc.get("error").cloned().unwrap_or(doc)),
            })
        }
    }
}

#[cfg(not(feature = "sync"))]
fn push(_: &Inner) -> Option<Attempt> {
    None
}

/// The mode in force: the manifest's, else the configuration file's.
#[cfg(feature = "sync")]
#[allow(clippy::result_large_err)]
pub fn mode(mem: &Memory, target: &Target) -> Result<Mode, memdir::sync::SyncError> {
    Ok(match target.mode {
        Some(m) => m,
        None => memdir::sync::config::Config::load(mem)?.mode,
    })
}

/// The library's choice of provider and mode for this target.
#[cfg(feature = "sync")]
pub fn choice(target: &Target) -> memdir::sync::Choice {
    memdir::sync::Choice {
        provider: target.provider.clone(),
        mode: target.mode.filter(|m| m.syncs()),
        ..Default::default()
    }
}

/// Pushes when the mode syncs, as `memdir write` does after its change.
#[cfg(feature = "sync")]
#[allow(clippy::result_large_err)]
fn push_now(
    mem: &Memory,
    target: &Target,
) -> Result<Option<memdir::sync::PushReport>, memdir::sync::SyncError> {
    if !mode(mem, target)?.syncs() {
        return Ok(None);
    }
    let opened = memdir::sync::open(mem, &choice(target))?;
    let report = memdir::sync::push(mem, &opened.remote(&memdir::provider::NoProgress), false)?;
    Ok(Some(report))
}
