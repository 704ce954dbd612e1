//! A basic-memory project folder, read (spec/import-formats.md#basic-memory).
//!
//! Each Markdown note has optional frontmatter (`title`, `type`, `permalink`, `tags`),
//! observation lines `- [category] content #tag (context)` and relation lines
//! `- relation_type [[Target Title]] (context)`. A note becomes a memory; a relation
//! line becomes `- relation_type:: [[key]]` (spec/memory-format.md#links) with its target resolved by
//! exact title or permalink among the imported notes, or kept as written and reported.
//! Pure: text in, values out.

use std::collections::HashMap;

use chrono::NaiveDate;
use serde_json::Value;

use crate::exchange::blob::{Converted, Incoming, Skipped};
use crate::exchange::foreign::{self, ForeignError, Parts, SourceFile};
use crate::memory::{Key, Stamp, frontmatter};

/// Frontmatter keys with a meaning in both tools: read from basic-memory's values
/// (dates) or replaced by memdir's own (the rest), never copied as unknown keys.
const MEMDIR_KEYS: [&str; 9] = [
    "name",
    "description",
    "created",
    "updated",
    "source",
    "decay",
    "important",
    "entity_type",
    "type",
];

/// An observation line: `- [category] content`.
fn observation(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("- [")?;
    let (category, content) = rest.split_once("] ")?;
    (!category.is_empty() && !category.contains('[') && !content.trim().is_empty())
        .then_some(content.trim())
}

/// A relation line: `- relation_type [[Target]]` with an optional ` (context)`:
/// (relation as written, target, the rest of the line after `]]`).
fn relation(line: &str) -> Option<(&str, &str, &str)> {
    let rest = line.strip_prefix("- ")?;
    if rest.starts_with('[') {
        return None;
    }
    let (rel, rest) = rest.split_once(" [[")?;
    let (target, after) = rest.split_once("]]")?;
    if rel.trim().is_empty() || rel.contains("::") || target.trim().is_empty() {
        return None;
    }
    if !(after.is_empty() || after.starts_with(" (")) {
        return None;
    }
    Some((rel.trim(), target, after))
}

/// Whether a note's text has basic-memory's observation or relation lines (used by
/// format detection).
pub fn has_semantic_lines(text: &str) -> bool {
    text.lines()
        .map(str::trim_end)
        .any(|l| observation(l).is_some() || relation(l).is_some())
}

struct Note<'a> {
    file: &'a SourceFile,
    title: String,
    permalink: Option<String>,
    entity_type: String,
    tags: Vec<String>,
    created: Option<Stamp>,
    updated: Option<Stamp>,
    extra: Vec<(String, Value)>,
    ignored: Vec<String>,
    body: String,
    /// How many file lines come before the body's first line.
    body_offset: usize,
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn read_note(f: &SourceFile) -> Result<Note<'_>, ForeignError> {
    let parsed =
        frontmatter::parse_map(&f.text).map_err(|e| foreign::frontmatter_error(&f.path, e))?;
    let (map, body) = match parsed {
        Some((m, b)) => (m, b),
        None => (
            serde_json::Map::new(),
            frontmatter::normalize_text(&f.text).into_owned(),
        ),
    };
    let body_offset = frontmatter::normalize_text(&f.text)
        .lines()
        .count()
        .saturating_sub(body.lines().count());
    let stem = f.path.rsplit('/').next().unwrap_or(&f.path);
    let stem = stem.strip_suffix(".md").unwrap_or(stem);
    let title = map
        .get("title")
        .and_then(scalar)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| stem.to_string());
    let permalink = map
        .get("permalink")
        .and_then(scalar)
        .filter(|p| !p.trim().is_empty());
    let entity_type = map
        .get("type")
        .and_then(scalar)
        .unwrap_or_else(|| "note".into());
    let tags: Vec<String> = match map.get("tags") {
        Some(Value::Array(a)) => a.iter().filter_map(scalar).collect(),
        Some(Value::String(s)) => s.split(',').map(str::to_string).collect(),
        _ => Vec::new(),
    };
    let tags: Vec<String> = tags
        .into_iter()
        .map(|t| t.trim().trim_start_matches('#').to_string())
        .filter(|t| !t.is_empty())
        .collect();
    let stamp = |k: &str| map.get(k).and_then(scalar).and_then(|s| Stamp::parse(&s));
    let mut extra = vec![(
        "entity_type".to_string(),
        Value::String(entity_type.clone()),
    )];
    let mut ignored = Vec::new();
    for (k, v) in &map {
        match k.as_str() {
            "title" | "tags" => {}
            k if MEMDIR_KEYS.contains(&k) => {
                let used = k == "type" || matches!(k, "created" | "updated") && stamp(k).is_some();
                if !used {
                    ignored.push(k.to_string());
                }
            }
            _ => extra.push((k.clone(), v.clone())),
        }
    }
    Ok(Note {
        file: f,
        title,
        permalink,
        entity_type,
        tags,
        created: stamp("created"),
        updated: stamp("updated"),
        extra,
        ignored,
        body,
        body_offset,
    })
}

/// Reads the project's notes (every `*.md` file, subfolders included). A note whose
/// frontmatter cannot be read refuses the whole folder, naming the file and line.
pub fn decode(files: &[SourceFile], today: NaiveDate) -> Result<Incoming, ForeignError> {
    let mut out = Incoming::default();
    let notes: Vec<Note> = files
        .iter()
        .filter(|f| f.path.ends_with(".md"))
        .map(read_note)
        .collect::<Result<_, _>>()?;
    let bases: Vec<String> = notes
        .iter()
        .map(|n| n.permalink.clone().unwrap_or_else(|| n.title.clone()))
        .collect();
    let base_refs: Vec<&str> = bases.iter().map(String::as_str).collect();
    let keys = foreign::keys_for(&base_refs, "note");
    let (by_title, by_link) = name_index(&notes, &keys, &mut out);
    let resolve = |target: &str| {
        by_title
            .get(target)
            .or_else(|| by_link.get(target))
            .map(|&i| keys[i].0.to_string())
    };

    let today = foreign::today_stamp(today);
    let mut renamed: std::collections::BTreeSet<(String, String)> = Default::default();
    for (n, (key, why)) in notes.iter().zip(&keys) {
        let body = convert_body(n, key, &resolve, &mut renamed, &mut out);
        note_file(n, key, why, body, &today, &mut out);
    }
    for (from, to) in renamed {
        out.converted.push(Converted {
            item: "relations".into(),
            reason: format!(
                "relation type {from:?} written as `{to}` (link relations are snake_case)"
            ),
        });
    }
    Ok(out)
}

/// Targets resolve by exact title, then exact permalink, then the file's path
/// without `.md`; the first note (in path order) holding a name wins. Returns the
/// notes by title and by permalink or path.
fn name_index<'n>(
    notes: &'n [Note],
    keys: &[(Key, Option<String>)],
    out: &mut Incoming,
) -> (HashMap<&'n str, usize>, HashMap<&'n str, usize>) {
    let mut by_title: HashMap<&str, usize> = HashMap::new();
    let mut by_link: HashMap<&str, usize> = HashMap::new();
    for (i, n) in notes.iter().enumerate() {
        if let Some(&first) = by_title.get(n.title.as_str()) {
            out.converted.push(Converted {
                item: n.file.path.clone(),
                reason: format!(
                    "another note ({}) has the title {:?}; links to that title go to `{}`",
                    notes[first].file.path, n.title, keys[first].0
                ),
            });
        } else {
            by_title.insert(&n.title, i);
        }
        if let Some(p) = &n.permalink {
            by_link.entry(p.as_str()).or_insert(i);
        }
        by_link
            .entry(n.file.path.strip_suffix(".md").unwrap_or(&n.file.path))
            .or_insert(i);
    }
    (by_title, by_link)
}

/// A note's body with its relation lines rewritten as memdir links, and the first
/// observation and first line of prose (candidates for the description).
struct Body {
    lines: Vec<String>,
    first_observation: Option<String>,
    first_prose: Option<String>,
}

/// Rewrites a note's relation lines (outside code fences) as `- rel:: [[key]]`,
/// recording renamed relation types in `renamed` and unresolved targets in `out`.
fn convert_body(
    n: &Note,
    key: &Key,
    resolve: &dyn Fn(&str) -> Option<String>,
    renamed: &mut std::collections::BTreeSet<(String, String)>,
    out: &mut Incoming,
) -> Body {
    let mut lines: Vec<String> = Vec::new();
    let mut in_code = false;
    let mut first_observation: Option<String> = None;
    let mut first_prose: Option<String> = None;
    for (i, line) in n.body.lines().enumerate() {
        let t = line.trim_end();
        if t.trim_start().starts_with("```") {
            in_code = !in_code;
            lines.push(line.to_string());
            continue;
        }
        if !in_code && let Some((rel, target, after)) = relation(t) {
            let Some(rel_name) = foreign::rel_name(rel) else {
                lines.push(line.to_string());
                continue;
            };
            if rel_name != rel {
                renamed.insert((rel.to_string(), rel_name.clone()));
            }
            let target_key = match resolve(target) {
                Some(k) => k,
                None => {
                    out.unresolved.push(Skipped {
                        item: format!("{key}.md"),
                        reason: format!(
                            "`{rel_name}:: [[{target}]]` ({}:{}): no imported note has that title or permalink; kept as written",
                            n.file.path,
                            n.body_offset + i + 1
                        ),
                    });
                    target.to_string()
                }
            };
            lines.push(format!("- {rel_name}:: [[{target_key}]]{after}"));
            continue;
        }
        if !in_code {
            if let Some(o) = observation(t) {
                first_observation.get_or_insert_with(|| o.to_string());
            } else if first_prose.is_none()
                && !t.trim().is_empty()
                && !t.starts_with('#')
                && !t.starts_with("- ")
            {
                first_prose = Some(t.trim().to_string());
            }
        }
        lines.push(line.to_string());
    }
    Body {
        lines,
        first_observation,
        first_prose,
    }
}

/// One note as a memory file (or a skip when it cannot be written), with what was
/// converted on the way reported.
fn note_file(
    n: &Note,
    key: &Key,
    why: &Option<String>,
    body: Body,
    today: &Stamp,
    out: &mut Incoming,
) {
    let mut reasons: Vec<String> = why.iter().cloned().collect();
    if !n.ignored.is_empty() {
        reasons.push(format!(
            "frontmatter {} replaced by memdir's own",
            n.ignored
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !reasons.is_empty() {
        out.converted.push(Converted {
            item: n.file.path.clone(),
            reason: reasons.join("; "),
        });
    }
    let description = body
        .first_observation
        .or(body.first_prose)
        .unwrap_or_else(|| format!("{}: {}", n.entity_type, n.title));
    let mut extra = n.extra.clone();
    if n.permalink.is_none() {
        extra.retain(|(k, _)| k != "permalink");
    }
    let created = n.created.clone().unwrap_or_else(|| today.clone());
    let updated = n.updated.clone().unwrap_or_else(|| created.clone());
    let draft = Parts {
        key: key.clone(),
        name: &n.title,
        description: &description,
        kind: foreign::kind_for(&n.entity_type),
        created,
        updated,
        source: format!("basic-memory:{}", n.file.path),
        tags: n.tags.clone(),
        extra,
        body: body.lines.join("\n"),
    };
    match foreign::memory_file(draft) {
        Ok(f) => out.files.push(f),
        Err(err) => out.skipped.push(Skipped {
            item: n.file.path.clone(),
            reason: format!("the note cannot be written as a memory: {err}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> SourceFile {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 4, 14).unwrap()
    }

    #[test]
    fn lines() {
        assert_eq!(
            observation("- [method] Pour over #coffee (taste)"),
            Some("Pour over #coffee (taste)")
        );
        assert_eq!(observation("- plain"), None);
        assert_eq!(
            relation("- relates_to [[Coffee Bean Origins]]"),
            Some(("relates_to", "Coffee Bean Origins", ""))
        );
        assert_eq!(
            relation("- depends on [[X]] (since v2)"),
            Some(("depends on", "X", " (since v2)"))
        );
        assert_eq!(relation("- [x] [[Y]]"), None);
        assert_eq!(relation("- see [[Y]] and more"), None);
        assert_eq!(relation("- works_at:: [[acme]]"), None);
    }

    #[test]
    fn relations_resolve_by_title_and_permalink() {
        let files = [
            file(
                "coffee/brewing.md",
                "---\ntitle: Coffee Brewing Methods\ntype: note\ntags: [coffee, brewing]\npermalink: coffee/coffee-brewing-methods\n---\n\n# Coffee Brewing Methods\n\n## Observations\n- [method] Pour over gives clarity #brewing\n\n## Relations\n- relates_to [[Coffee Bean Origins]]\n- requires [[grinding]]\n- contrasts_with [[Tea Brewing Methods]] (different leaves)\n",
            ),
            file(
                "coffee/origins.md",
                "---\ntitle: Coffee Bean Origins\npermalink: coffee-bean-origins\n---\n\nEthiopia first.\n",
            ),
            file("grinding.md", "# Grinding\n\n- [tip] Burr grinders\n"),
        ];
        let inc = decode(&files, today()).unwrap();
        let keys: Vec<&str> = inc.files.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "coffee_coffee-brewing-methods",
                "coffee-bean-origins",
                "grinding"
            ]
        );
        let brew = &inc.files[0];
        assert_eq!(brew.parsed.meta.name, "Coffee Brewing Methods");
        assert_eq!(
            brew.parsed.meta.description,
            "Pour over gives clarity #brewing"
        );
        assert_eq!(brew.parsed.meta.tags, vec!["coffee", "brewing"]);
        assert!(
            brew.parsed
                .body
                .contains("- relates_to:: [[coffee-bean-origins]]\n")
        );
        assert!(brew.parsed.body.contains("- requires:: [[grinding]]\n"));
        assert!(
            brew.parsed
                .body
                .ends_with("- contrasts_with:: [[Tea Brewing Methods]] (different leaves)")
        );
        assert_eq!(inc.unresolved.len(), 1);
        assert_eq!(inc.files[2].parsed.meta.name, "grinding");
    }
}
