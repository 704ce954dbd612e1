//! Reading a frontmatter mapping into a [`Meta`]: the known keys with their types
//! checked (an error names the field and its file line), warnings for values that load
//! with a default, and the unknown keys kept with their text. It must not parse YAML
//! text nor write a file.

use serde_json::{Map, Value};

use super::Extra;
use super::FrontmatterError;
use super::KNOWN;
use super::Parsed;
use super::Split;
use super::Warning;
use super::layout::Layout;
use super::layout::chunks;
use super::layout::key_line;
use super::render::render_known;
use super::scalar_text;
use crate::memory::Decay;
use crate::memory::Kind;
use crate::memory::Meta;
use crate::memory::Stamp;

/// The memory described by a frontmatter mapping.
pub(super) fn from_map(
    map: Map<String, Value>,
    s: &Split<'_>,
    keep_layout: bool,
    with_body: bool,
) -> Result<Parsed, FrontmatterError> {
    let keys: Vec<String> = map.keys().cloned().collect();
    // Parsing every entry again to keep its text costs more than the whole first
    // parse; only a rewrite needs it.
    let layout = if keep_layout {
        chunks(s.yaml, s.first_line, &map)
    } else {
        None
    };
    let f = Fields {
        map: &map,
        yaml: s.yaml,
        first_line: s.first_line,
        layout: layout.as_ref(),
    };
    let mut warnings = Vec::new();
    let name = f.required("name")?;
    let description = f.required("description")?;
    let kind = f.kind(&mut warnings)?;
    let created = f.stamp("created")?;
    let updated = f.stamp("updated")?;
    let source = f.text("source")?;
    let decay = f.decay(&mut warnings)?;
    let tags = f.list("tags", "must be a list of text values")?;
    let important = f.important()?;
    let supersedes = f.supersedes(&mut warnings)?;
    let valid_until = f.valid_until(&mut warnings)?;

    let (extra, chunk_texts) = unknown_keys(&map, keys, layout);
    let mut meta = Meta {
        name,
        description,
        kind,
        created,
        updated,
        source,
        decay,
        tags,
        important,
        supersedes,
        valid_until,
        extra,
    };
    meta.extra.known_raw = known_raw(chunk_texts, &meta);
    Ok(Parsed {
        meta,
        body: if with_body {
            crate::memory::normalize_body(s.body).to_string()
        } else {
            String::new()
        },
        warnings,
    })
}

/// A frontmatter mapping and what is needed to name the file line of a key.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    yaml: &'a str,
    first_line: usize,
    layout: Option<&'a Layout>,
}

impl Fields<'_> {
    /// The file line of a key (for messages only: it may scan the block).
    fn line_of(&self, key: &str) -> usize {
        self.layout
            .and_then(|l| l.chunks.iter().find(|c| c.key == key).map(|c| c.line))
            .or_else(|| key_line(self.yaml, self.first_line, key))
            .unwrap_or(self.first_line)
    }

    /// A one-line text field; absent or null is `None`.
    fn text(&self, field: &'static str) -> Result<Option<String>, FrontmatterError> {
        match self.map.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => scalar_text(v)
                .map(Some)
                .ok_or_else(|| FrontmatterError::Field {
                    field,
                    line: self.line_of(field),
                    problem: "must be text, not a list or mapping",
                }),
        }
    }

    fn required(&self, field: &'static str) -> Result<String, FrontmatterError> {
        self.text(field)?
            .ok_or(FrontmatterError::MissingField { field })
    }

    /// `created` / `updated`; absent or null is [`Stamp::undated`] (a Claude Code
    /// file has no dates, memory-format.md#fields).
    fn stamp(&self, field: &'static str) -> Result<Stamp, FrontmatterError> {
        let Some(text) = self.text(field)? else {
            return Ok(Stamp::undated());
        };
        Stamp::parse(&text).ok_or_else(|| FrontmatterError::Field {
            field,
            line: self.line_of(field),
            problem: "must be a date (YYYY-MM-DD) or an RFC 3339 timestamp",
        })
    }

    /// `type`, with a warning for a type memdir does not know.
    fn kind(&self, warnings: &mut Vec<Warning>) -> Result<Kind, FrontmatterError> {
        let kind = Kind::parse(self.required("type")?.trim());
        if let Kind::Other(t) = &kind {
            warnings.push(Warning {
                line: self.line_of("type"),
                message: format!(
                    "unknown type `{t}` (expected user, feedback, project, reference or state); it gets no salience bonus"
                ),
            });
        }
        Ok(kind)
    }

    /// `decay`; a value that is not one is a warning and the default.
    fn decay(&self, warnings: &mut Vec<Warning>) -> Result<Option<Decay>, FrontmatterError> {
        Ok(match self.text("decay")? {
            None => None,
            Some(d) => match Decay::parse(&d) {
                Some(d) => Some(d),
                None => {
                    warnings.push(Warning {
                        line: self.line_of("decay"),
                        message: format!(
                            "decay `{d}` is not `never` or `<N>d`; the default 7-day half-life applies"
                        ),
                    });
                    None
                }
            },
        })
    }

    /// A list of text values, or one value; anything else is `problem`.
    fn list(
        &self,
        field: &'static str,
        problem: &'static str,
    ) -> Result<Vec<String>, FrontmatterError> {
        // The line is looked up (a scan of the block) only for an error: looking it up
        // for every tag made loading quadratic in the number of tags.
        let bad = || FrontmatterError::Field {
            field,
            line: self.line_of(field),
            problem,
        };
        Ok(match self.map.get(field) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    values.push(scalar_text(item).ok_or_else(bad)?);
                }
                values
            }
            Some(v) => vec![scalar_text(v).ok_or_else(bad)?],
        })
    }

    fn important(&self) -> Result<bool, FrontmatterError> {
        match self.map.get("important") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(FrontmatterError::Field {
                field: "important",
                line: self.line_of("important"),
                problem: "must be true or false",
            }),
        }
    }

    /// `supersedes`, with a warning for a value that is not a memory key.
    fn supersedes(&self, warnings: &mut Vec<Warning>) -> Result<Vec<String>, FrontmatterError> {
        let supersedes = self.list("supersedes", "must be a list of memory keys")?;
        if let Some(bad) = supersedes
            .iter()
            .find(|k| crate::memory::Key::parse(k).is_err())
        {
            warnings.push(Warning {
                line: self.line_of("supersedes"),
                message: format!(
                    "supersedes `{bad}` is not a memory key (a-z, 0-9, `_`, `-`); it replaces nothing"
                ),
            });
        }
        Ok(supersedes)
    }

    /// `valid_until`, with a warning for a value that is not a day.
    fn valid_until(&self, warnings: &mut Vec<Warning>) -> Result<Option<String>, FrontmatterError> {
        let valid_until = self.text("valid_until")?;
        if let Some(v) = &valid_until
            && crate::memory::parse_day(v).is_none()
        {
            warnings.push(Warning {
                line: self.line_of("valid_until"),
                message: format!(
                    "valid_until `{v}` is not a date (YYYY-MM-DD); the memory does not expire"
                ),
            });
        }
        Ok(valid_until)
    }
}

/// The unknown keys with their text (when the layout was kept), and every entry's
/// text by key for [`known_raw`].
fn unknown_keys(
    map: &Map<String, Value>,
    keys: Vec<String>,
    layout: Option<Layout>,
) -> (Extra, Vec<(String, String)>) {
    let (preamble, chunk_texts, linked) = match layout {
        Some(l) => (
            l.preamble,
            l.chunks.into_iter().map(|c| (c.key, c.text)).collect(),
            l.linked,
        ),
        None => (String::new(), Vec::new(), Vec::new()),
    };
    let mut entries = Vec::new();
    for (k, v) in map {
        if KNOWN.contains(&k.as_str()) {
            continue;
        }
        let raw = chunk_texts
            .iter()
            .find(|(ck, _)| ck == k)
            .map(|(_, t): &(String, String)| t.clone());
        entries.push((k.clone(), raw, v.clone()));
    }
    let extra = Extra {
        entries,
        order: keys.into(),
        preamble,
        known_raw: Vec::new(),
        linked,
    };
    (extra, chunk_texts)
}

/// The known keys as the file had them: name, how memdir writes the value read, and
/// the original text.
fn known_raw(chunk_texts: Vec<(String, String)>, meta: &Meta) -> Vec<(String, String, String)> {
    chunk_texts
        .into_iter()
        .filter(|(k, _)| KNOWN.contains(&k.as_str()))
        .filter_map(|(k, raw)| render_known(&k, meta).map(|canonical| (k, canonical, raw)))
        .collect()
}
