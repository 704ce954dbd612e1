//! The arguments of the first seven tools (their JSON Schemas come from the
//! `schemars` derives and doc comments), the filter they describe and the paging
//! cursor of `list_memories` and `resources/list`. It must not call the engine.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Map;
use serde_json::Value;

use crate::error::Error;
use crate::retrieval::filter::{self, Filter, FilterError};

/// Arguments of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// The memory's key and file name: lowercase snake_case, `^[a-z0-9][a-z0-9_-]{0,99}$`, by convention `<type>_<topic>` (for example `user_role`, `feedback_tone`). An existing key is refused unless replace or expected_hash.
    pub key: String,
    /// A short human title, e.g. "Role".
    pub name: String,
    /// One line saying what the memory holds; shown in the index and used for relevance.
    pub description: String,
    /// `user` (who the user is), `feedback` (how they want you to work), `project` (ongoing work, decisions) or `reference` (where to find things).
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["user", "feedback", "project", "reference"]))]
    pub kind: String,
    /// The memory itself, in Markdown. For feedback, say why and how to apply it.
    pub body: String,
    /// Tags; replaces the memory's tags. Omit to keep the existing ones.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// true pins the memory's salience to the maximum; omit to keep the current flag.
    #[serde(default)]
    pub important: Option<bool>,
    /// Recency half-life: `never` or `<N>d` such as `30d` (default 7 days). Omit to keep.
    #[serde(default)]
    pub decay: Option<String>,
    /// Which conversation or event produced the memory. Omit to keep.
    #[serde(default)]
    pub source: Option<String>,
    /// Keys of older memories this one replaces: they stay on disk but are left out of recall, context and lists (unless included). Replaces the list; [] clears it; omit to keep.
    #[serde(default)]
    pub supersedes: Option<Vec<String>>,
    /// The last day this memory holds, `YYYY-MM-DD`; after it the memory is expired and left out. "" clears it; omit to keep.
    #[serde(default)]
    pub valid_until: Option<String>,
    /// true replaces the memory if the key already holds one (otherwise an existing key is refused).
    #[serde(default)]
    pub replace: Option<bool>,
    /// Replace only if the memory's current hash (from read_memory) is this one.
    #[serde(default)]
    pub expected_hash: Option<String>,
    /// This memory is the summary of a session: memory_context then shows it (through a `compacted` event) instead of that session's events up to `through`. The events are kept.
    #[serde(default)]
    pub summarizes: Option<SummarizesArg>,
}

/// `summarizes` of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizesArg {
    /// The session id (as given to note).
    pub session: String,
    /// RFC 3339 time of the newest event the summary covers; omit for the session's newest event.
    #[serde(default)]
    pub through: Option<String>,
}

/// The filters of `recall`, `memory_context` and `list_memories`
/// (spec/mcp.md#filters): which memories may appear, decided before ranking. All
/// given filters must hold.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct FilterArgs {
    /// Only memories of these types (any of them), e.g. ["project", "feedback"].
    #[serde(default)]
    pub types: Option<Vec<String>>,
    /// Only memories that have every one of these tags (case-insensitive).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Only memories updated on or after this day, `YYYY-MM-DD`.
    #[serde(default)]
    pub since: Option<String>,
    /// Only memories updated on or before this day, `YYYY-MM-DD`.
    #[serde(default)]
    pub until: Option<String>,
    /// true: only memories marked important.
    #[serde(default)]
    pub important: Option<bool>,
    /// Only memories whose salience is at least this, from 0 to 1 (feedback is 0.8, important memories 1).
    #[serde(default)]
    pub min_salience: Option<f64>,
    /// true: also memories another memory supersedes (left out by default; marked `superseded_by`).
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// true: also memories whose `valid_until` day has passed (left out by default; marked `expired`).
    #[serde(default)]
    pub include_expired: Option<bool>,
}

impl FilterArgs {
    /// The filter these arguments describe; a bad value is an error naming its
    /// argument. `kind` is `list_memories`' older single `type`.
    pub(super) fn filter(&self, kind: Option<&str>) -> Result<Filter, Error> {
        let bad = |arg: &str| {
            let arg = arg.to_string();
            move |source| Error::Filter { arg, source }
        };
        let mut f = Filter::default().types(kind);
        for t in self.types.iter().flatten() {
            f.types
                .extend(filter::parse_types(t).map_err(bad("types"))?);
        }
        f.tags = self.tags.clone().unwrap_or_default();
        if f.tags.iter().any(|t| t.trim().is_empty()) {
            return Err(bad("tags")(FilterError::EmptyTag));
        }
        f.since = self
            .since
            .as_deref()
            .map(filter::parse_date)
            .transpose()
            .map_err(bad("since"))?;
        f.until = self
            .until
            .as_deref()
            .map(filter::parse_date)
            .transpose()
            .map_err(bad("until"))?;
        f.important = self.important.unwrap_or(false);
        f.include_superseded = self.include_superseded.unwrap_or(false);
        f.include_expired = self.include_expired.unwrap_or(false);
        f.min_salience = self
            .min_salience
            .map(filter::check_salience)
            .transpose()
            .map_err(bad("min_salience"))?;
        f.check().map_err(bad("since/until"))?;
        Ok(f)
    }
}

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// What to look for: words or a phrase.
    pub query: String,
    /// How many hits at most, from 1 to 1000 (default 10).
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// Arguments of `read_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The key of the memory (as listed by list_memories or recall).
    pub key: String,
}

/// Arguments of `forget`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// The key of the memory to delete.
    pub key: String,
    /// Why it is forgotten (kept in the timeline's `forgot` event).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Arguments of `note`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoteArgs {
    /// The event type, e.g. `user_said`, `assistant_did`, `decision` (letters, digits, `_`, `-`, `.`, `:`).
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's fields, any JSON values, e.g. {"text": "how's my form?"}. `ts` and `type` are set by memdir.
    #[serde(default)]
    pub fields: Option<Map<String, Value>>,
    /// The session the event belongs to (stored as its `session` field; see session_transcript). Omit for the server's MEMDIR_SESSION, if set.
    #[serde(default)]
    pub session: Option<String>,
}

/// Arguments of `memory_context`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// Token budget of the whole block (tokens ≈ characters / 4), from 1 to 1000000. Omit for the server's default, which the tool description states.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The user's current message: memories relevant to it come first.
    #[serde(default)]
    pub query: Option<String>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// Arguments of `list_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only memories of this type (user, feedback, project, reference).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// How many memories at most on this page, from 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Where the page starts: the `next_cursor` a previous call returned, as it was. Omit for the first page.
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// `list_memories`' page size when `limit` is omitted (spec/mcp.md#paging).
pub const LIST_DEFAULT_LIMIT: usize = 100;
/// The largest `limit` of `list_memories`.
pub const LIST_MAX_LIMIT: usize = 1000;

/// An opaque cursor for the page starting at `offset`.
pub(super) fn cursor_at(offset: usize) -> String {
    format!("o{offset}")
}

/// The offset a cursor names; an error naming `arg` when it is not one memdir made.
pub(super) fn cursor_offset(arg: &str, cursor: Option<&str>) -> Result<usize, Error> {
    let Some(c) = cursor else { return Ok(0) };
    c.strip_prefix('o')
        .filter(|n| !n.starts_with('+'))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Error::Argument {
            arg: arg.into(),
            message: format!(
                "`{c}` is not a cursor memdir returned; pass the next cursor of the previous page as it was, or omit it for the first page"
            ),
        })
}
