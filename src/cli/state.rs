//! `memdir state`: get, set, list and unset agent state entries (spec/cli.md#state).

use std::io::IsTerminal;
use std::path::PathBuf;

use serde_json::json;

use super::{Out, input};
use memdir::Error;
use memdir::Memory;
use memdir::memory::layout::MAX_BODY;
use memdir::report::Failure;

/// Get, set, list or unset agent state (the memories `state_<key>.md`, type `state`).
#[derive(Debug, clap::Subcommand)]
pub enum Args {
    /// Print the value of a state entry.
    Get(Get),
    /// Set a state entry (the value from an argument, --value-file or standard input);
    /// appends a `state_set` event. A read-only entry is refused.
    Set(Set),
    /// List the state entries.
    List,
    /// Remove a state entry: forgets `state_<key>.md` (a `forgot` event with reason
    /// `state unset`). A read-only entry is refused.
    Unset(Get),
}

#[derive(Debug, clap::Args)]
pub struct Get {
    /// The state key (`mood` is the file `state_mood.md`).
    pub key: String,
}

#[derive(Debug, clap::Args)]
pub struct Set {
    /// The state key (`mood` is the file `state_mood.md`).
    pub key: String,
    /// The value (the body of the file).
    #[arg(
        conflicts_with = "value_file",
        allow_hyphen_values = true,
        value_parser = super::text_value
    )]
    pub value: Option<String>,
    /// Read the value from a file.
    #[arg(long, value_name = "FILE")]
    pub value_file: Option<PathBuf>,
    #[command(flatten)]
    pub push: super::Offline,
}

impl Args {
    /// The `--offline` switch of a command that changes the store.
    pub fn push(&self) -> Option<&super::Offline> {
        match self {
            Args::Set(s) => Some(&s.push),
            _ => None,
        }
    }
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    match a {
        Args::Get(g) => {
            let Some(e) = mem.state(&g.key)? else {
                return Err(Error::NotFound {
                    key: format!("state_{}", g.key),
                }
                .into());
            };
            if out.is_json() {
                out.json(&e);
            } else {
                out.text(&e.value);
            }
        }
        Args::Set(s) => {
            let value = match (&s.value, &s.value_file) {
                (Some(v), _) => v.clone(),
                (None, Some(f)) => input::read_file_text(f, MAX_BODY as u64)?,
                (None, None) => {
                    if std::io::stdin().is_terminal() {
                        out.note("reading the value from standard input (end with Ctrl-D; or pass VALUE / --value-file)");
                    }
                    input::read_stdin_text(MAX_BODY as u64)?
                }
            };
            let (outcome, event) = mem.set_state(&s.key, &value)?;
            if out.is_json() {
                out.json(&json!({
                    "key": s.key,
                    "outcome": outcome,
                    "event": event.map(|e| serde_json::from_str::<serde_json::Value>(&e.encode()).unwrap_or_default()),
                }));
            } else {
                let word = outcome.as_str();
                out.text(&format!("{word} state {}", s.key));
            }
        }
        Args::List => {
            let memdir::States { entries, problems } = mem.states()?;
            out.problems(&mem.root(), &problems);
            if out.is_json() {
                out.json(&entries);
            } else {
                let mut s = String::new();
                for e in &entries {
                    let first = e.value.lines().next().unwrap_or("");
                    let more = if e.value.lines().nth(1).is_some() {
                        " …"
                    } else {
                        ""
                    };
                    let mut flags = Vec::new();
                    if let Some(l) = e.limit {
                        flags.push(format!("limit {l}"));
                    }
                    if e.read_only {
                        flags.push("read-only".to_string());
                    }
                    let flags = if flags.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", flags.join(", "))
                    };
                    s.push_str(&format!(
                        "{}{flags}: {}{more}\n",
                        memdir::memory::printable::escape_line(&e.key),
                        memdir::memory::printable::escape_line(first)
                    ));
                }
                if entries.is_empty() {
                    s.push_str("no state entries\n");
                }
                out.text(s.trim_end());
            }
        }
        Args::Unset(g) => {
            let event = mem.unset_state(&g.key)?;
            let line = event.encode();
            if out.is_json() {
                out.json(&serde_json::from_str::<serde_json::Value>(&line).unwrap_or_default());
            } else {
                out.text(&format!("unset state {}", g.key));
            }
        }
    }
    Ok(0)
}
