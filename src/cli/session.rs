//! `memdir sessions` and `memdir session show|compact` (spec/cli.md#sessions).

use memdir::memory::printable::escape_line;
use std::path::PathBuf;

use serde_json::json;

use super::Out;
use memdir::DEFAULT_MAX_TOKENS;
use memdir::Error;
use memdir::memory::layout::MAX_BODY;
use memdir::report::Failure;
use memdir::{Draft, Memory};

/// List the sessions of the timeline: id, first and last time, event count, types.
#[derive(Debug, clap::Args)]
pub struct ListArgs {}

/// Show or compact one session.
#[derive(Debug, clap::Subcommand)]
pub enum Args {
    /// Print a session's events within a token budget (the newest kept).
    Show(Show),
    /// Store the agent's summary of a session as a memory (`summarizes:`) and append a
    /// `compacted` event; the context block then shows the summary's pointer instead
    /// of the session's events. Source events are never deleted.
    Compact(Compact),
}

#[derive(Debug, clap::Args)]
pub struct Show {
    /// The session id.
    pub id: String,
    /// The budget in tokens (characters / 4).
    #[arg(long, default_value_t = DEFAULT_MAX_TOKENS)]
    pub max_tokens: usize,
}

#[derive(Debug, clap::Args)]
pub struct Compact {
    /// The session id.
    pub id: String,
    /// The key of the summary memory.
    #[arg(long)]
    pub key: String,
    /// The summary (Markdown).
    #[arg(
        long,
        conflicts_with = "body_file",
        required_unless_present = "body_file",
        allow_hyphen_values = true
    )]
    pub body: Option<String>,
    /// Read the summary from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Human title (default `Session <ID>`).
    #[arg(long, allow_hyphen_values = true)]
    pub name: Option<String>,
    /// One line for the index (default `summary of session <ID>`).
    #[arg(long, allow_hyphen_values = true)]
    pub description: Option<String>,
    /// The summary's type (default project).
    #[arg(long = "type", value_name = "TYPE", default_value = "project")]
    pub kind: String,
    #[command(flatten)]
    pub push: super::Offline,
}

pub fn list(mem: &Memory, _a: &ListArgs, out: &mut Out) -> Result<i32, Failure> {
    let memdir::Sessions { sessions, problems } = mem.sessions()?;
    out.problems(&mem.root(), &problems);
    if out.is_json() {
        out.json(&sessions);
        return Ok(0);
    }
    let mut s = String::new();
    for x in &sessions {
        // The id and types come from the timeline: one line per session, whatever
        // they hold (spec/cli.md#output).
        s.push_str(&format!(
            "{}  {} .. {}  {} events  {}\n",
            escape_line(&x.id),
            x.first,
            x.last,
            x.count,
            escape_line(&x.types.join(","))
        ));
    }
    if sessions.is_empty() {
        s.push_str("no sessions (events get one with `note --session ID` or MEMDIR_SESSION)\n");
    }
    out.text(s.trim_end());
    Ok(0)
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    match a {
        Args::Show(s) => {
            let t = mem.session_transcript(&s.id, s.max_tokens)?;
            if out.is_json() {
                out.json(&t);
            } else {
                // A heading (its id escaped) and JSON lines.
                out.json_text(t.text.trim_end());
            }
        }
        Args::Compact(c) => {
            let body = match (&c.body, &c.body_file) {
                (Some(b), _) => b.clone(),
                (None, Some(f)) => super::input::read_file_text(f, MAX_BODY as u64)?,
                (None, None) => return Err(Error::Usage("give --body or --body-file").into()),
            };
            let draft = Draft {
                key: c.key.clone(),
                name: c
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("Session {}", c.id)),
                description: c
                    .description
                    .clone()
                    .unwrap_or_else(|| format!("summary of session {}", c.id)),
                kind: c.kind.as_str().into(),
                body,
                ..Draft::default()
            };
            let done = mem.compact_session(&c.id, &draft, None, &memdir::IfExists::Replace)?;
            if out.is_json() {
                out.json(&done);
            } else {
                out.text(&format!(
                    "compacted session {} into {} ({} events through {}; {})",
                    done.session,
                    done.key,
                    done.events,
                    done.through,
                    json!(done.outcome).as_str().unwrap_or("")
                ));
            }
        }
    }
    Ok(0)
}
