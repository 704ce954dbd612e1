//! The `memory/0.1` blob format of the three.ws runtime, whose writer puts values raw
//! on `key: value` lines: reading a blob's file as its writer meant it, and writing
//! one both readers read to the same values. It must not call the YAML library
//! except through `yaml`, nor touch memdir's own rendering rules.

use serde_json::{Map, Value};

use super::FrontmatterError;
use super::KNOWN;
use super::Parsed;
use super::fields::from_map;
use super::normalize_text;
use super::parse;
use super::render::one_line;
use super::render::push_line;
use super::render::render;
use super::render::render_entry;
use super::split;
use super::yaml::parse_value;
use super::yaml::parse_yaml;
use crate::memory::Meta;

/// Fields whose value is one line of text. The three.ws runtime writes them raw
/// (`name: Runbook: deploys`) and reads every line by splitting it at the first `:`
/// and trimming; for these the two readings of one line can differ.
const TEXT_FIELDS: [&str; 8] = [
    "name",
    "description",
    "type",
    "created",
    "updated",
    "source",
    "decay",
    "valid_until",
];

/// A memory file from another tool (a `memory/0.1` blob), read as its writer meant it.
#[derive(Debug, Clone)]
pub struct Portable {
    /// The file read.
    pub parsed: Parsed,
    /// The text to store: the file as it was (with a final newline), or rewritten as
    /// YAML when a value had to be read the three.ws way.
    pub text: String,
    /// Why the file was rewritten, one sentence per value; empty when it was not.
    pub conversions: Vec<String>,
}

/// Whether memdir's own YAML writer quotes `value` (so quotes around it in a file
/// are YAML quoting, not part of the value).
fn writer_quotes(key: &str, value: &str) -> bool {
    render_entry(key, &Value::String(value.to_string())) != format!("{key}: {value}\n")
}

fn is_quoted(raw: &str) -> bool {
    raw.len() >= 2
        && ((raw.starts_with('"') && raw.ends_with('"'))
            || (raw.starts_with('\'') && raw.ends_with('\'')))
}

/// Whether the YAML value `yaml` of a one-line text field is what its writer meant,
/// given the three.ws reading `raw` of the same line: when both agree, or when the
/// quotes the runtime keeps are quoting memdir's writer would have needed.
fn yaml_meant(key: &str, yaml: &Value, raw: &str) -> bool {
    match yaml {
        Value::String(y) => y == raw || (is_quoted(raw) && writer_quotes(key, y)),
        _ => false,
    }
}

fn describe_yaml(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "nothing (null)".into(),
        Value::Object(_) => "a mapping".into(),
        Value::Array(_) => "a list".into(),
        other => format!(
            "the {} {other}",
            if other.is_boolean() {
                "boolean"
            } else {
                "number"
            }
        ),
    }
}

/// Reads a memory file from a blob the way its writer meant it (spec/cli.md#import).
///
/// A blob is the three.ws runtime's format: its writer puts values raw on `key: value`
/// lines, memdir's writer puts YAML. Each one-line text field (`name`, `description`,
/// `type`, `created`, `updated`, `source`, `decay`) is read both ways; the YAML value
/// is taken when the two agree or when the quotes the runtime would keep are quoting
/// memdir's writer needs, otherwise the runtime's reading (so `#42`, a leading `&co` or
/// `!urgent`, `1.10`, `null`, `{braces}` or an empty value stay what the runtime
/// showed). Other entries (`tags`, `important`, unknown keys, multi-line values) are
/// YAML, or the runtime's reading of their line when that line is not YAML. A file
/// read any other way than as YAML is rewritten as YAML, and that text must read back
/// to the same values; the file is refused otherwise.
pub fn parse_portable(text: &str) -> Result<Portable, FrontmatterError> {
    let norm = normalize_text(text);
    let s = split(&norm)?;
    let whole = parse(&norm);
    // One-line entries as three.ws reads them.
    let mut entries: Vec<(usize, String)> = Vec::new();
    for (i, line) in s.yaml.split_inclusive('\n').enumerate() {
        let starts_key = line
            .chars()
            .next()
            .is_some_and(|c| !matches!(c, ' ' | '\t' | '-' | '#' | '\n'));
        if starts_key {
            entries.push((s.first_line + i, line.to_string()));
        } else if let Some(last) = entries.last_mut() {
            last.1.push_str(line);
        }
    }
    let runtime_reading = |entry: &str| -> Option<(String, String)> {
        let line = entry.trim_end_matches('\n');
        if line.contains('\n') {
            return None;
        }
        let (k, v) = line.split_once(':')?;
        Some((k.trim().to_string(), v.trim().to_string()))
    };
    if let Ok(p) = &whole {
        let map = parse_yaml(s.yaml, s.first_line)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let agrees = entries.iter().all(|(_, e)| match runtime_reading(e) {
            Some((k, raw)) if TEXT_FIELDS.contains(&k.as_str()) => {
                map.get(&k).is_none_or(|y| yaml_meant(&k, y, &raw))
            }
            _ => true,
        });
        if agrees {
            let mut text = norm.into_owned();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            return Ok(Portable {
                parsed: p.clone(),
                text,
                conversions: Vec::new(),
            });
        }
    }
    let mut map = Map::new();
    let mut conversions = Vec::new();
    for (line, entry) in &entries {
        let alone = parse_value(entry).and_then(|v| match v {
            Value::Object(m) if m.len() == 1 => m.into_iter().next(),
            _ => None,
        });
        match (alone, runtime_reading(entry)) {
            (Some((k, y)), Some((rk, raw))) if k == rk && TEXT_FIELDS.contains(&k.as_str()) => {
                if yaml_meant(&k, &y, &raw) {
                    map.insert(k, y);
                } else {
                    conversions.push(format!(
                        "`{k}` is {raw:?} as three.ws reads line {line} (YAML would read {})",
                        describe_yaml(&y)
                    ));
                    map.insert(k, Value::String(raw));
                }
            }
            (Some((k, y)), _) => {
                map.insert(k, y);
            }
            (None, Some((k, raw))) if !k.is_empty() => {
                conversions.push(format!(
                    "line {line} is not YAML; `{k}` is {raw:?} as three.ws reads it"
                ));
                map.insert(k, Value::String(raw));
            }
            _ => {
                return Err(match whole {
                    Err(e) => e,
                    Ok(_) => FrontmatterError::NotAMapping { line: *line },
                });
            }
        }
    }
    let parsed = from_map(map, &s, false, true)?;
    let text = render(&parsed.meta, &parsed.body);
    let back = parse(&text)?;
    if !same_values(&back.meta, &back.body, &parsed.meta, &parsed.body) {
        return Err(FrontmatterError::NotRewritable);
    }
    Ok(Portable {
        parsed: back,
        text,
        conversions,
    })
}

fn same_values(a: &Meta, a_body: &str, b: &Meta, b_body: &str) -> bool {
    crate::memory::content_hash(a, a_body) == crate::memory::content_hash(b, b_body)
        && a.created.text == b.created.text
        && a.updated.text == b.updated.text
}

/// A YAML flow list on one line, `[a, "b, c"]`: the three.ws runtime reads it as one
/// value of its key; YAML reads the list.
fn flow_list(items: &[String]) -> String {
    let item = |t: &String| {
        let plain = !t.is_empty()
            && t.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '_' | '.' | '-'))
            && !t.starts_with(['-', ' ', '.'])
            && !t.ends_with(' ')
            && !writer_quotes("t", t);
        if plain {
            t.clone()
        } else {
            Value::String(t.clone()).to_string()
        }
    };
    format!(
        "[{}]",
        items.iter().map(item).collect::<Vec<_>>().join(", ")
    )
}

/// The file text for a `memory/0.1` blob: frontmatter the three.ws runtime reads to
/// the same values memdir does (spec/cli.md#export). One-line text fields are written
/// raw, as the runtime writes them; tags (and any multi-line value) go on one line as
/// YAML flow, which the runtime sees as one value; the body follows a blank line with
/// no final newline, as the runtime writes it. [`parse_portable`] reads that text back
/// to the same values; when it would not (a value no text is read the same way by
/// both), the file is written as memdir stores it instead.
pub fn render_portable(meta: &Meta, body: &str) -> String {
    let text_of = |key: &str| -> Option<String> {
        match key {
            "name" => Some(one_line(&meta.name)),
            "description" => Some(one_line(&meta.description)),
            "type" => Some(meta.kind.as_str().to_string()),
            "created" => Some(meta.created.text.clone()),
            "updated" => Some(meta.updated.text.clone()),
            "source" => meta.source.as_deref().map(one_line),
            "decay" => meta.decay.map(|d| d.to_string()),
            "tags" if !meta.tags.is_empty() => Some(flow_list(&meta.tags)),
            "important" if meta.important => Some("true".into()),
            "supersedes" if !meta.supersedes.is_empty() => Some(flow_list(&meta.supersedes)),
            "valid_until" => meta.valid_until.as_deref().map(one_line),
            _ => None,
        }
    };
    let mut out = String::from("---\n");
    let mut written: Vec<&str> = Vec::new();
    for key in meta.extra.order.iter() {
        if KNOWN.contains(&key.as_str()) {
            if let Some(v) = text_of(key) {
                out.push_str(&format!("{key}: {v}\n"));
            }
        } else if let Some((k, raw, v)) = meta.extra.entries.iter().find(|(k, _, _)| k == key) {
            match raw {
                Some(raw) if !raw.trim_end().contains('\n') => push_line(&mut out, raw),
                _ => {
                    let plain = k
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
                    let k = if plain {
                        k.clone()
                    } else {
                        Value::String(k.clone()).to_string()
                    };
                    out.push_str(&format!("{k}: {v}\n"));
                }
            }
        }
        written.push(key);
    }
    for key in KNOWN {
        if !written.contains(&key)
            && let Some(v) = text_of(key)
        {
            out.push_str(&format!("{key}: {v}\n"));
        }
    }
    out.push_str("---\n\n");
    out.push_str(crate::memory::normalize_body(body));
    let reads_back = parse_portable(&out).is_ok_and(|p| {
        same_values(&p.parsed.meta, &p.parsed.body, meta, body)
            && p.parsed.meta.extra.values().eq(meta.extra.values())
    });
    if reads_back { out } else { render(meta, body) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Decay;
    use crate::memory::frontmatter::tests::GOOD;
    use crate::memory::frontmatter::tests::meta_of;

    /// The three.ws reader: each frontmatter line split at its first colon, trimmed.
    fn threews_read(text: &str) -> Vec<(String, String)> {
        let rest = text.strip_prefix("---\n").unwrap();
        let fm = &rest[..rest.find("\n---").unwrap()];
        fm.lines()
            .filter_map(|l| l.split_once(':'))
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    }

    fn runtime_file(name: &str, description: &str) -> String {
        format!(
            "---\nname: {name}\ndescription: {description}\ntype: user\ncreated: 2026-11-22\nupdated: 2026-11-22\n---\n\nbody"
        )
    }

    // spec/cli.md#import: each line of a blob's file is read both ways; the runtime's
    // reading wins unless the YAML one agrees or its quotes are memdir's own quoting.
    #[test]
    fn portable_reads_each_value_as_its_writer_meant() {
        for (raw, want) in [
            ("Tracking issue #42", "Tracking issue #42"),
            ("#general", "#general"),
            (
                "announcements go to #general",
                "announcements go to #general",
            ),
            ("'single quoted'", "'single quoted'"),
            ("\"double\" and it's fine", "\"double\" and it's fine"),
            ("\"Runbook: deploys\"", "Runbook: deploys"),
            ("\"no\"", "no"),
            ("Runbook: deploys", "Runbook: deploys"),
            ("1.10", "1.10"),
            ("&co partners", "&co partners"),
            ("!urgent fix", "!urgent fix"),
            ("*bold*", "*bold*"),
            ("null", "null"),
            ("~", "~"),
            ("{braces}", "{braces}"),
            ("[brackets]", "[brackets]"),
            ("", ""),
            ("Café ☕", "Café ☕"),
            ("plain", "plain"),
        ] {
            let text = runtime_file(raw, raw);
            let p = parse_portable(&text).unwrap_or_else(|e| panic!("{raw:?}: {e}"));
            assert_eq!(p.parsed.meta.name, want, "{raw:?}");
            assert_eq!(p.parsed.meta.description, want, "{raw:?}");
            // Whatever is stored loads, to the same values.
            let back = parse(&p.text).unwrap_or_else(|e| panic!("{raw:?}: {e}\n{}", p.text));
            assert_eq!(back.meta.name, want, "{raw:?}");
            assert_eq!(back.body, "body");
            let agrees = parse(&text).is_ok_and(|y| y.meta.name == want);
            assert_eq!(
                p.conversions.is_empty(),
                agrees,
                "{raw:?}: {:?}",
                p.conversions
            );
        }
        // A file both readers agree on is stored as it was, with a final newline.
        let text = runtime_file("Role", "plays on Saturdays");
        assert_eq!(parse_portable(&text).unwrap().text, format!("{text}\n"));
        // The reason names the field, both readings and the line.
        let p = parse_portable(&runtime_file("Tracking issue #42", "d")).unwrap();
        assert_eq!(
            p.conversions,
            vec![
                "`name` is \"Tracking issue #42\" as three.ws reads line 2 (YAML would read \"Tracking issue\")"
            ]
        );
    }

    // spec/cli.md#export: what the runtime reads equals what memdir reads, and tags
    // are one value of one line.
    #[test]
    fn portable_text_reads_the_same_in_both_readers() {
        let values = [
            "Runbook: deploys",
            "Tracking issue #42, see #general",
            "'quoted' words",
            "\"double\" and it's fine",
            "&co",
            "!urgent: ping @ops",
            "no",
            "1.10",
            "null",
            "",
            "Café ☕ 日本語",
        ];
        for v in values {
            let mut meta = meta_of(GOOD);
            meta.name = v.into();
            meta.description = v.into();
            meta.source = Some(format!("chat: {v} (ok)"));
            meta.tags = vec![
                "football".into(),
                "a, b".into(),
                "#x".into(),
                "no".into(),
                v.into(),
            ];
            meta.important = true;
            meta.decay = Some(Decay::Days(30));
            let text = render_portable(&meta, "line one\n\nline two\n");
            let theirs = threews_read(&text);
            let get = |k: &str| {
                theirs
                    .iter()
                    .find(|(tk, _)| tk == k)
                    .map(|(_, v)| v.as_str())
            };
            assert_eq!(get("name"), Some(v), "{text}");
            assert_eq!(get("description"), Some(v), "{text}");
            assert_eq!(
                get("source"),
                Some(format!("chat: {v} (ok)").as_str()),
                "{text}"
            );
            assert_eq!(get("decay"), Some("30d"));
            assert!(
                theirs.iter().all(|(k, _)| KNOWN.contains(&k.as_str())),
                "{theirs:?}"
            );
            assert!(text.ends_with("---\n\nline one\n\nline two"), "{text}");
            let back = parse_portable(&text).unwrap();
            assert_eq!(back.parsed.meta.name, v);
            assert_eq!(back.parsed.meta.tags, meta.tags, "{text}");
            assert!(back.parsed.meta.important);
            assert_eq!(back.parsed.meta.source, meta.source);
            assert_eq!(back.parsed.body, "line one\n\nline two");
        }
        // Unknown keys and multi-line values go on one line each.
        let p = parse(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nowner:\n  team: core\n  ids: [1, 2]\nzeta: 1.10\ntags:\n- a\n---\n\nb\n",
        )
        .unwrap();
        let text = render_portable(&p.meta, &p.body);
        assert!(
            text.contains("\nowner: {\"team\":\"core\",\"ids\":[1,2]}\nzeta: 1.10\ntags: [a]\n"),
            "{text}"
        );
        let back = parse_portable(&text).unwrap().parsed.meta;
        assert!(back.extra.values().eq(p.meta.extra.values()));
    }
}
