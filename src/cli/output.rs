//! Where every byte the CLI prints goes through: stdout for results, stderr for
//! notes, progress, warnings and errors. A closed stdout (a pipe into `head`) ends
//! output quietly. The verbosity (`-q`, `-v`) is decided here: `-q` drops notes and
//! progress, never warnings or errors; `-v` adds what is being done and how long it took.
//! No control character but a newline or a tab leaves here as itself
//! (`memory::printable`); commands escape each value on its line before that.

use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::json;

use memdir::memory::printable::{escape_json, escape_line, escape_text};
use memdir::report::{Failure, Front};
use memdir::{Problem, Severity};

/// How much goes to stderr besides results, warnings and errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// `-q`: warnings and errors only; no notes, no progress.
    Quiet,
    /// Notes and progress (on a terminal).
    Normal,
    /// `-v`: also which directory and configuration, and phase timings.
    Verbose,
}

/// The CLI's output channel.
pub struct Out {
    json: bool,
    closed: bool,
    verbosity: Verbosity,
    /// The spinner of the work under way, cleared before anything is printed.
    spinner: Option<super::progress::Spinner>,
}

impl Out {
    pub fn new(json: bool) -> Out {
        Out {
            json,
            closed: false,
            verbosity: Verbosity::Normal,
            spinner: None,
        }
    }

    /// Shows a spinner saying `message` if the work that follows lasts more than a
    /// second, on a terminal, without `-q`; it is cleared by the next line printed,
    /// or by [`Out::done`].
    pub fn spinner(&mut self, message: &str) {
        let draw = super::progress::wanted(self.verbosity);
        self.spinner = Some(super::progress::Spinner::start(message, draw));
    }

    /// Clears the spinner.
    pub fn done(&mut self) {
        self.spinner = None;
    }

    /// The same channel at `verbosity`.
    pub fn with_verbosity(mut self, verbosity: Verbosity) -> Out {
        self.verbosity = verbosity;
        self
    }

    /// The verbosity `-q` / `-v` chose.
    pub fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    /// Whether `--json` was given.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// Prints text on stdout (a newline is added when missing); control characters
    /// other than newlines and tabs are escaped.
    pub fn text(&mut self, s: &str) {
        self.raw(&escape_text(s));
    }

    /// Prints JSON text (a document or JSON lines) on stdout, still valid JSON with
    /// every control character escaped (`memory::printable::escape_json`).
    pub fn json_text(&mut self, s: &str) {
        self.raw(&escape_json(s));
    }

    /// Prints `s` on stdout as it is (a newline is added when missing), after
    /// clearing the spinner.
    fn raw(&mut self, s: &str) {
        self.done();
        if self.closed {
            return;
        }
        let mut so = std::io::stdout().lock();
        let r = so.write_all(s.as_bytes()).and_then(|_| {
            if s.ends_with('\n') || s.is_empty() {
                Ok(())
            } else {
                so.write_all(b"\n")
            }
        });
        if r.and_then(|_| so.flush()).is_err() {
            // Broken pipe: the reader has gone; stop printing, exit normally.
            self.closed = true;
        }
    }

    /// Prints one JSON document on stdout.
    pub fn json<T: Serialize>(&mut self, v: &T) {
        let s = serde_json::to_string_pretty(v).unwrap_or_else(|e| {
            json!({"error": {"message": format!("could not encode output: {e}")}}).to_string()
        });
        self.json_text(&s);
    }

    /// Says on stderr that a hand-edited MEMORY.md was saved before being replaced
    /// (every command that can rebuild the index says it the same way).
    pub fn index_backup(&mut self, root: &Path, outcome: &memdir::IndexOutcome) {
        if let Some(b) = &outcome.backup {
            self.note(&format!(
                "note: MEMORY.md had been edited by hand; your version is saved as {}",
                root.join(b).display()
            ));
        }
    }

    /// A note on stderr that is not part of the result (progress, what was saved);
    /// dropped under `-q`.
    pub fn note(&mut self, s: &str) {
        self.done();
        if self.verbosity > Verbosity::Quiet {
            eprintln!("{}", escape_text(s));
        }
    }

    /// A line of progress on stderr (`bench: conv-26 done (3/10)`): only on a terminal
    /// and not under `-q`, so a log gets the summary alone.
    pub fn progress_line(&mut self, s: &str) {
        if super::progress::wanted(self.verbosity) {
            self.note(s);
        }
    }

    /// A warning or a failure's lines on stderr: printed at every verbosity.
    pub fn warn(&mut self, s: &str) {
        self.done();
        eprintln!("{}", escape_text(s));
    }

    /// What is being done, on stderr as `memdir: …`, only under `-v`.
    pub fn verbose(&mut self, s: &str) {
        if self.verbosity == Verbosity::Verbose {
            self.done();
            eprintln!("memdir: {}", escape_text(s));
        }
    }

    /// Runs `f` and, under `-v`, says how long `phase` took.
    pub fn timed<T>(&mut self, phase: &str, f: impl FnOnce() -> T) -> T {
        let start = std::time::Instant::now();
        let r = f();
        self.verbose(&format!(
            "{phase}: {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        ));
        r
    }

    /// Prints load problems on stderr as `warning:` / `error:` lines with path:line.
    pub fn problems(&mut self, root: &Path, problems: &[Problem]) {
        if !problems.is_empty() {
            self.done();
        }
        for p in problems {
            let level = match p.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            };
            let path = escape_line(&root.join(&p.path).display().to_string());
            let loc = match p.line {
                Some(l) => format!("{path}:{l}"),
                None => path,
            };
            eprintln!("{level}: {loc}: {}", escape_line(&p.message));
        }
    }

    /// Prints an error that did not fail the command as `warning:` lines on stderr:
    /// what it means for the user, then the error's own lines.
    #[cfg(feature = "sync")]
    pub fn warn_error(&mut self, context: &str, e: &Failure) {
        self.done();
        eprintln!("warning: {}", escape_text(context));
        let (lines, _) = e.report(Front::Cli);
        for l in lines {
            eprintln!("  {}", escape_text(&l));
        }
    }

    /// Prints an error: `error:`, its causes, and a hint, on stderr; with `--json`
    /// also a JSON document on stdout so that a program reading stdout sees it.
    pub fn error(&mut self, e: &Failure) {
        self.done();
        let (lines, doc) = e.report(Front::Cli);
        for l in lines {
            eprintln!("{}", escape_text(&l));
        }
        if self.json {
            self.json(&doc);
        }
    }
}

/// A word as a POSIX shell reads it back: as it is when it is plain, else in single quotes.
pub fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}
