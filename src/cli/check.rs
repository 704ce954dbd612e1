//! `memdir check`: report (and with --fix, repair) problems.

use super::Out;
use memdir::memory::printable::escape_line as esc;
use memdir::report::Failure;
use memdir::{Memory, Severity};

/// Report malformed memory files and timeline lines, with path:line.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "--fix repairs only what is safe: it rebuilds MEMORY.md (saving a hand-edited one
under .memdir/backups/) and removes temporary files left by interrupted writes, holding
the write lock so that no write in progress loses its file (in .memdir/ and
.memdir/cache/, only temp files untouched for 10 minutes). It never rewrites a memory
file a person wrote. Exit code 1 when an error remains."
)]
pub struct Args {
    /// Repair what is safe and say what was done.
    #[arg(long)]
    pub fix: bool,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let report = mem.check(a.fix)?;
    let code = if report.has_errors() { 1 } else { 0 };
    if out.is_json() {
        out.json(&report);
        return Ok(code);
    }
    let root = mem.root();
    let mut s = String::new();
    for p in &report.problems {
        let level = match p.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        s.push_str(&format!(
            "{level}: {}: {}\n",
            esc(&root.join(p.location()).display().to_string()),
            esc(&p.message)
        ));
    }
    for f in &report.fixed {
        s.push_str(&format!("fixed: {}\n", esc(f)));
    }
    let errors = report
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    let warnings = report.problems.len() - errors;
    s.push_str(&format!(
        "{} memories, {} timeline events: {errors} errors, {warnings} warnings\n",
        report.memories, report.events
    ));
    out.text(&s);
    Ok(code)
}
