//! Where every byte the CLI prints goes through: stdout for results, stderr for
//! warnings and errors. A closed stdout (a pipe into `head`) ends output quietly.
//! No control character but a newline or a tab leaves here as itself
//! (`memory::printable`); commands escape each value on its line before that.

use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::json;

use crate::engine::{Problem, Severity};
use crate::memory::printable::{escape_json, escape_line, escape_text};
use crate::report::{Failure, Front};

/// The CLI's output channel.
pub struct Out {
    json: bool,
    closed: bool,
}

impl Out {
    pub fn new(json: bool) -> Out {
        Out {
            json,
            closed: false,
        }
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

    /// Prints `s` on stdout as it is (a newline is added when missing).
    fn raw(&mut self, s: &str) {
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
    pub fn index_backup(&mut self, root: &Path, outcome: &crate::engine::IndexOutcome) {
        if let Some(b) = &outcome.backup {
            self.note(&format!(
                "note: MEMORY.md had been edited by hand; your version is saved as {}",
                root.join(b).display()
            ));
        }
    }

    /// A note on stderr that is not part of the result (progress, what was saved).
    pub fn note(&mut self, s: &str) {
        eprintln!("{}", escape_text(s));
    }

    /// Prints load problems on stderr as `warning:` / `error:` lines with path:line.
    pub fn problems(&mut self, root: &Path, problems: &[Problem]) {
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
    pub fn warn_error(&mut self, context: &str, e: &Failure) {
        eprintln!("warning: {}", escape_text(context));
        let (lines, _) = e.report(Front::Cli);
        for l in lines {
            eprintln!("  {}", escape_text(&l));
        }
    }

    /// Prints an error: `error:`, its causes, and a hint, on stderr; with `--json`
    /// also a JSON document on stdout so that a program reading stdout sees it.
    pub fn error(&mut self, e: &Failure) {
        let (lines, doc) = e.report(Front::Cli);
        for l in lines {
            eprintln!("{}", escape_text(&l));
        }
        if self.json {
            self.json(&doc);
        }
    }
}
