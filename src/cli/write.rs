//! `memdir write`: create a memory, or replace one with `--replace` / `--expect HASH`.

use std::io::IsTerminal;
use std::path::PathBuf;

use serde_json::json;

use super::{Out, input};
use memdir::memory::layout::MAX_BODY;
use memdir::report::Failure;
use memdir::{Draft, IfExists, Memory};

/// Create a memory (or replace one with --replace or --expect HASH).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The body comes from --body, --body-file, or standard input when neither is given
(an empty standard input is refused unless --allow-empty).
An existing key is refused unless --replace, or --expect HASH names its current version
(the `hash` of `memdir read KEY --json`). Optional fields that are not given keep their
current value on a replace.

Example:
  memdir write feedback_tone --type feedback --name Tone \\
    --description \"wants direct critique\" --tag style --body-file tone.md"
)]
pub struct Args {
    /// The key: the file stem, `^[a-z0-9][a-z0-9_-]{0,99}$`, e.g. `user_role`.
    pub key: String,
    /// Human title.
    #[arg(long, allow_hyphen_values = true)]
    pub name: String,
    /// One line, shown in the index and used for relevance.
    #[arg(long, allow_hyphen_values = true)]
    pub description: String,
    /// user, feedback, project, reference or state.
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: String,
    /// A tag (repeat for several); replaces the memory's tags.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Pin salience to 1.0.
    #[arg(long, conflicts_with = "not_important")]
    pub important: bool,
    /// Clear the `important` flag.
    #[arg(long)]
    pub not_important: bool,
    /// Recency half-life: `never` or `<N>d` (default 7d).
    #[arg(long)]
    pub decay: Option<String>,
    /// Which conversation or event produced the memory.
    #[arg(long, allow_hyphen_values = true)]
    pub source: Option<String>,
    /// The key of a memory this one replaces (repeat for several); replaces the
    /// memory's list. `--supersedes ''` clears it.
    #[arg(long, value_name = "KEY")]
    pub supersedes: Vec<String>,
    /// The last day the memory holds (YYYY-MM-DD); after it the memory is expired.
    /// An empty value clears it.
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub valid_until: Option<String>,
    /// The Markdown body.
    #[arg(long, conflicts_with = "body_file", allow_hyphen_values = true)]
    pub body: Option<String>,
    /// Read the body from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Replace the memory if the key already holds one (without it, an existing key
    /// is refused).
    #[arg(long, conflicts_with = "expect")]
    pub replace: bool,
    /// Replace the memory only if its current version has this hash (the `hash` of
    /// `memdir read KEY --json`); refused if it has changed since.
    #[arg(long, value_name = "HASH")]
    pub expect: Option<String>,
    /// Accept an empty body from standard input (refused otherwise).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub push: super::Offline,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let body = match (&a.body, &a.body_file) {
        (Some(b), _) => b.clone(),
        (None, Some(f)) => input::read_file_text(f, MAX_BODY as u64)?,
        (None, None) => {
            if std::io::stdin().is_terminal() {
                out.note("reading the body from standard input (end with Ctrl-D; or pass --body / --body-file)");
            }
            let text = input::read_stdin_text(MAX_BODY as u64)?;
            if text.trim().is_empty() && !a.allow_empty {
                return Err(memdir::Error::Usage(
                    "the body from standard input is empty; pass --body, --body-file, or --allow-empty to write an empty body",
                )
                .into());
            }
            text
        }
    };
    let if_exists = match (&a.expect, a.replace) {
        (Some(h), _) => IfExists::ReplaceIfHash(h.clone()),
        (None, true) => IfExists::Replace,
        (None, false) => IfExists::Refuse,
    };
    let draft = Draft {
        key: a.key.clone(),
        name: a.name.clone(),
        description: a.description.clone(),
        kind: a.kind.as_str().into(),
        body,
        tags: if a.tags.is_empty() {
            None
        } else {
            Some(a.tags.clone())
        },
        important: if a.important {
            Some(true)
        } else if a.not_important {
            Some(false)
        } else {
            None
        },
        decay: a.decay.clone(),
        source: a.source.clone(),
        supersedes: if a.supersedes.is_empty() {
            None
        } else {
            Some(
                a.supersedes
                    .iter()
                    .filter(|k| !k.trim().is_empty())
                    .cloned()
                    .collect(),
            )
        },
        valid_until: a.valid_until.clone(),
    };
    let memdir::Written { outcome, index } = mem.write_if(&draft, &if_exists)?;
    out.index_backup(&mem.root(), &index);
    let key = memdir::memory::Key::parse(&a.key)?;
    if out.is_json() {
        out.json(&json!({"key": key, "outcome": outcome}));
    } else {
        let word = outcome.as_str();
        out.text(&format!("{word} {key}"));
    }
    Ok(0)
}
