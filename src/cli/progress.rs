//! Progress on stderr for work that can take more than a second (the first build of
//! the search index, embedding, transfers): drawn only when stderr is a terminal and
//! `-q` was not given, so logs and pipes never see it. A spinner appears only once
//! its work has lasted [`DELAY`]. Must not print anything but progress.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Verbosity;

/// How long work runs before its spinner appears.
pub const DELAY: Duration = Duration::from_secs(1);

/// Whether progress may be drawn at `verbosity`: not under `-q`, and only on a terminal.
pub fn wanted(verbosity: Verbosity) -> bool {
    verbosity > Verbosity::Quiet && std::io::stderr().is_terminal()
}

/// Where a bar draws: stderr when progress is wanted, nowhere otherwise.
pub fn target(verbosity: Verbosity) -> ProgressDrawTarget {
    if wanted(verbosity) {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// A spinner with a message and the time elapsed, shown once its work has lasted
/// [`DELAY`]; cleared when dropped.
pub struct Spinner {
    bar: ProgressBar,
    stop: Option<mpsc::Sender<()>>,
    shower: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts the clock on `message`; with `draw` false nothing is ever drawn and no
    /// thread is started.
    pub fn start(message: &str, draw: bool) -> Spinner {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.set_message(message.to_string());
        if !draw {
            return Spinner {
                bar,
                stop: None,
                shower: None,
            };
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let shown = bar.clone();
        // Waits once: shows the spinner after DELAY unless the work ended first.
        let shower = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(DELAY) {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(Duration::from_millis(120));
            }
        });
        Spinner {
            bar,
            stop: Some(stop),
            shower: Some(shower),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.shower.take() {
            let _ = h.join();
        }
        self.bar.finish_and_clear();
    }
}

/// A bar counting items of a known total (`embedding [====  ] 120/800`); cleared
/// when dropped.
pub struct Counter {
    bar: ProgressBar,
}

impl Counter {
    pub fn new(message: &str, verbosity: Verbosity) -> Counter {
        let bar = ProgressBar::with_draw_target(None, target(verbosity));
        if let Ok(style) =
            ProgressStyle::with_template("{msg:12} [{bar:30}] {pos}/{len} ({elapsed})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(message.to_string());
        Counter { bar }
    }

    /// `done` of `total`.
    pub fn set(&self, done: usize, total: usize) {
        self.bar.set_length(total as u64);
        self.bar.set_position(done as u64);
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
