//! `memdir timeline`: the most recent timeline events, newest first.

use chrono::NaiveDate;
use serde_json::{Value, json};

use super::Out;
use memdir::FilterError;
use memdir::report::Failure;
use memdir::{ActivityQuery, Memory};

/// The default number of events `timeline` prints.
pub const DEFAULT_LIMIT: u64 = 20;
/// Event lines `timeline` prints at most, in characters (the newest event is always
/// printed whole).
pub const MAX_CHARS: usize = 1 << 20;

/// Print the most recent timeline events, newest first.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  memdir timeline
  memdir timeline --limit 50 --since 2026-04-01 --type user_said,forgot")]
pub struct Args {
    /// How many events at most (default 20).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub limit: u64,
    /// Only events on or after this UTC day.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_date)]
    pub since: Option<NaiveDate>,
    /// Only events of this type; repeat the flag or separate with commas.
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    pub types: Vec<String>,
}

fn parse_date(s: &str) -> Result<NaiveDate, FilterError> {
    memdir::parse_date(s)
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let activity = mem.activity(&ActivityQuery {
        limit: a.limit as usize,
        since: a.since,
        types: a.types.iter().map(|t| t.trim().to_string()).collect(),
        max_chars: MAX_CHARS,
    })?;
    out.problems(&mem.root(), &activity.problems);
    if out.is_json() {
        let events: Vec<Value> = activity
            .events
            .iter()
            .map(|e| serde_json::from_str(&e.encode()).unwrap_or_default())
            .collect();
        out.json(&json!({"events": events, "more": activity.more, "problems": activity.problems}));
    } else if activity.events.is_empty() {
        out.text("no events");
    } else {
        let lines: Vec<String> = activity.events.iter().map(|e| e.encode()).collect();
        out.json_text(&lines.join("\n"));
        if activity.more {
            out.note("note: older events not shown; raise --limit or narrow with --since / --type");
        }
    }
    Ok(0)
}
