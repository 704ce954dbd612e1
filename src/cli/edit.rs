//! `memdir edit`: change part of a memory without restating the rest.

use serde_json::json;

use super::Out;
use memdir::report::Failure;
use memdir::{Edit, FindReplace, Memory, SectionEdit};

/// Change part of a memory: add to its body, replace a section or a phrase, or
/// change some fields; everything not given is kept.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Body changes apply in this order: --find/--replace, --replace-section,
--prepend, --append. A heading that is not there, or a --count that differs from the
number of occurrences, is an error and nothing is written.

Examples:
  memdir edit user_role --append \"- Also plays futsal on Wednesdays.\"
  memdir edit feedback_tone --replace-section Why --content \"Corrected three times.\"
  memdir edit project_season --find May --replace June --count 1
  memdir edit user_role --description \"Argentina fan, plays twice a week\" --tag football"
)]
pub struct Args {
    /// The key of the memory to edit.
    pub key: String,
    /// Text added after the body, on a new line (start it with an empty line for a new paragraph).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub append: Option<String>,
    /// Text added before the body, on its own line.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub prepend: Option<String>,
    /// Replace the section under this Markdown heading (`Why`, or `## Why` to name the
    /// level) up to the next heading of the same or a higher level; needs --content.
    #[arg(
        long,
        value_name = "HEADING",
        requires = "content",
        allow_hyphen_values = true
    )]
    pub replace_section: Option<String>,
    /// The new text of the section named by --replace-section.
    #[arg(
        long,
        value_name = "TEXT",
        requires = "replace_section",
        allow_hyphen_values = true
    )]
    pub content: Option<String>,
    /// Text to find in the body (every occurrence is replaced); needs --replace.
    #[arg(
        long,
        value_name = "TEXT",
        requires = "replace",
        allow_hyphen_values = true
    )]
    pub find: Option<String>,
    /// What replaces each occurrence of --find.
    #[arg(
        long,
        value_name = "TEXT",
        requires = "find",
        allow_hyphen_values = true
    )]
    pub replace: Option<String>,
    /// Replace only if --find occurs exactly N times.
    #[arg(long, value_name = "N", requires = "find")]
    pub count: Option<usize>,
    /// New human title.
    #[arg(long, allow_hyphen_values = true)]
    pub name: Option<String>,
    /// New one-line description.
    #[arg(long, allow_hyphen_values = true)]
    pub description: Option<String>,
    /// New type: user, feedback, project or reference.
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
    /// A tag (repeat for several); replaces the memory's tags.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Pin salience to 1.0.
    #[arg(long, conflicts_with = "not_important")]
    pub important: bool,
    /// Clear the `important` flag.
    #[arg(long)]
    pub not_important: bool,
    /// Recency half-life: `never` or `<N>d`.
    #[arg(long)]
    pub decay: Option<String>,
    /// Which conversation or event produced the memory.
    #[arg(long, allow_hyphen_values = true)]
    pub source: Option<String>,
    #[command(flatten)]
    pub push: super::Offline,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let edit = Edit {
        append: a.append.clone(),
        prepend: a.prepend.clone(),
        replace_section: a.replace_section.as_ref().map(|h| SectionEdit {
            heading: h.clone(),
            content: a.content.clone().unwrap_or_default(),
        }),
        find_replace: a.find.as_ref().map(|f| FindReplace {
            find: f.clone(),
            replace: a.replace.clone().unwrap_or_default(),
            expected_count: a.count,
        }),
        name: a.name.clone(),
        description: a.description.clone(),
        kind: a.kind.clone(),
        tags: (!a.tags.is_empty()).then(|| a.tags.clone()),
        important: if a.important {
            Some(true)
        } else if a.not_important {
            Some(false)
        } else {
            None
        },
        decay: a.decay.clone(),
        source: a.source.clone(),
    };
    let memdir::Written { outcome, index } = mem.edit(&a.key, &edit)?;
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
