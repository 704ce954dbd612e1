//! The arguments of the first seven tools (their JSON Schemas come from the
//! `schemars` derives and doc comments), the filter they describe and the paging
//! cursor of `list_memories` and `resources/list`. It must not call the engine.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Map;
use serde_json::Value;

use memdir::Error;
use memdir::{Filter, FilterError};

/// Arguments of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// snake_case key, `<type>_<topic>` (e.g. user_role); also the file name. An existing key is refused unless replace or expected_hash.
    pub key: String,
    /// Short title.
    pub name: String,
    /// One line: what it holds (shown in the index).
    pub description: String,
    /// user (who they are), feedback (how to work), project (work, decisions), reference (where things are).
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["user", "feedback", "project", "reference"]))]
    pub kind: String,
    /// The memory, in Markdown.
    pub body: String,
    /// Replaces the tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// true: always salient.
    #[serde(default)]
    pub important: Option<bool>,
    /// Recency half-life: `never` or `<N>d` (default 7d).
    #[serde(default)]
    pub decay: Option<String>,
    /// Where it came from.
    #[serde(default)]
    pub source: Option<String>,
    /// Keys of older memories this one replaces (they are then left out); [] clears.
    #[serde(default)]
    pub supersedes: Option<Vec<String>>,
    /// Last day it holds, YYYY-MM-DD ("" clears).
    #[serde(default)]
    pub valid_until: Option<String>,
    /// true: replace the memory this key holds (else an existing key is refused).
    #[serde(default)]
    pub replace: Option<bool>,
    /// Replace only if the memory's hash (from read_memory) is this one.
    #[serde(default)]
    pub expected_hash: Option<String>,
    /// This memory summarizes a session: memory_context shows it instead of the session's events.
    #[serde(default)]
    pub summarizes: Option<SummarizesArg>,
}

/// `summarizes` of `remember`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizesArg {
    /// The session id given to note.
    pub session: String,
    /// RFC 3339 time of the last event covered (default: the newest).
    #[serde(default)]
    pub through: Option<String>,
}

/// The filters of `recall`, `memory_context` and `list_memories`
/// (spec/mcp.md#filters): which memories may appear, decided before ranking. All
/// given filters must hold.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct FilterArgs {
    /// Only these types.
    #[serde(default)]
    pub types: Option<Vec<String>>,
    /// Only memories with all these tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Updated on or after, YYYY-MM-DD.
    #[serde(default)]
    pub since: Option<String>,
    /// Updated on or before, YYYY-MM-DD.
    #[serde(default)]
    pub until: Option<String>,
    /// true: only important ones.
    #[serde(default)]
    pub important: Option<bool>,
    /// Minimum salience, 0 to 1.
    #[serde(default)]
    pub min_salience: Option<f64>,
    /// true: also superseded ones.
    #[serde(default)]
    pub include_superseded: Option<bool>,
    /// true: also expired ones.
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
                .extend(memdir::parse_types(t).map_err(bad("types"))?);
        }
        f.tags = self.tags.clone().unwrap_or_default();
        if f.tags.iter().any(|t| t.trim().is_empty()) {
            return Err(bad("tags")(FilterError::EmptyTag));
        }
        f.since = self
            .since
            .as_deref()
            .map(memdir::parse_date)
            .transpose()
            .map_err(bad("since"))?;
        f.until = self
            .until
            .as_deref()
            .map(memdir::parse_date)
            .transpose()
            .map_err(bad("until"))?;
        f.important = self.important.unwrap_or(false);
        f.include_superseded = self.include_superseded.unwrap_or(false);
        f.include_expired = self.include_expired.unwrap_or(false);
        f.min_salience = self
            .min_salience
            .map(memdir::check_salience)
            .transpose()
            .map_err(bad("min_salience"))?;
        f.check().map_err(bad("since/until"))?;
        Ok(f)
    }
}

/// Arguments of `recall`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// Words or a phrase.
    pub query: String,
    /// Hits at most, 1 to 1000 (default 10).
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// Arguments of `read_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The memory's key.
    pub key: String,
}

/// Arguments of `forget`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// The memory's key.
    pub key: String,
    /// Why (logged).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Arguments of `note`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoteArgs {
    /// Event type, e.g. user_said, decision.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's fields (any JSON).
    #[serde(default)]
    pub fields: Option<Map<String, Value>>,
    /// Session id (default: MEMDIR_SESSION).
    #[serde(default)]
    pub session: Option<String>,
}

/// Arguments of `memory_context`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// Token budget (tokens ≈ characters / 4).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The user's message: relevant memories first.
    #[serde(default)]
    pub query: Option<String>,
    #[serde(flatten)]
    pub filter: FilterArgs,
}

/// Arguments of `list_memories`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only this type.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Page size, 1 to 1000 (default 100).
    #[serde(default)]
    pub limit: Option<u64>,
    /// next_cursor of the previous page.
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
