//! The `memory.jsonl` of the MCP reference memory server
//! (@modelcontextprotocol/server-memory), read and written (spec/import-formats.md#mcp-memory).
//!
//! One JSON object per line: `{"type":"entity","name","entityType","observations"}` or
//! `{"type":"relation","from","to","relationType"}`. An entity becomes a memory (its
//! observations bullet lines of the body), a relation a `- rel:: [[key]]` line in its
//! source's body (spec/memory-format.md#links); export turns them back. Pure: text in, values out.

use std::collections::HashMap;

use chrono::NaiveDate;
use serde_json::{Map, Value, json};

use crate::exchange::blob::{Converted, Incoming, Skipped};
use crate::exchange::foreign::{self, ForeignError, Parts};
use crate::memory::{Record, Stamp};

/// Whether a JSON object is an entity or relation line.
pub fn is_record(m: &Map<String, Value>) -> bool {
    matches!(
        m.get("type").and_then(Value::as_str),
        Some("entity" | "relation")
    )
}

struct Entity {
    name: String,
    entity_type: String,
    observations: Vec<String>,
    line: usize,
}

struct Relation {
    from: String,
    to: String,
    rel: String,
    line: usize,
}

fn text_field(m: &Map<String, Value>, field: &str) -> Option<String> {
    m.get(field).and_then(Value::as_str).map(str::to_string)
}

/// Reads a `memory.jsonl` (`file` names it in errors). Blank lines are skipped, as
/// the server skips them; a line that is not JSON, not an object, or an entity or
/// relation without its fields refuses the whole file with its line number. A line
/// of another `type` is reported and skipped (the server ignores it too).
pub fn decode(file: &str, text: &str, today: NaiveDate) -> Result<Incoming, ForeignError> {
    let mut out = Incoming::default();
    let (entities, relations) = read_lines(file, text, &mut out)?;
    let merged = merge_entities(file, entities, &mut out);
    let names: Vec<&str> = merged.iter().map(|e| e.name.as_str()).collect();
    let keys = foreign::keys_for(&names, "entity");
    let key_of: HashMap<&str, &crate::memory::Key> = merged
        .iter()
        .zip(&keys)
        .map(|(e, (k, _))| (e.name.as_str(), k))
        .collect();
    let links = link_lines(file, &relations, &key_of, &mut out);
    let today = foreign::today_stamp(today);
    for (e, (key, why)) in merged.iter().zip(keys) {
        if let Some(why) = why {
            out.converted.push(Converted {
                item: format!("{file}:{}", e.line),
                reason: why,
            });
        }
        entity_file(file, e, key, links.get(e.name.as_str()), &today, &mut out);
    }
    Ok(out)
}

/// The entity and relation lines of the file, in file order; a line of another
/// `type` is recorded in `out` as skipped.
fn read_lines(
    file: &str,
    text: &str,
    out: &mut Incoming,
) -> Result<(Vec<Entity>, Vec<Relation>), ForeignError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut entities: Vec<Entity> = Vec::new();
    let mut relations: Vec<Relation> = Vec::new();
    let bad = |line: usize, message: String| ForeignError::Line {
        file: file.to_string(),
        line,
        message,
    };
    for (i, raw) in text.split('\n').enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| bad(line_no, format!("not valid JSON: {e}")))?;
        let Value::Object(m) = v else {
            return Err(bad(line_no, "not a JSON object".into()));
        };
        match m.get("type").and_then(Value::as_str) {
            Some("entity") => {
                let observations = match m.get("observations") {
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|o| o.as_str().map(str::to_string))
                        .collect::<Option<Vec<String>>>(),
                    _ => None,
                };
                match (
                    text_field(&m, "name"),
                    text_field(&m, "entityType"),
                    observations,
                ) {
                    (Some(name), Some(entity_type), Some(observations)) => {
                        entities.push(Entity {
                            name,
                            entity_type,
                            observations,
                            line: line_no,
                        })
                    }
                    _ => {
                        return Err(bad(
                            line_no,
                            "an entity needs `name` (text), `entityType` (text) and `observations` (a list of text)".into(),
                        ));
                    }
                }
            }
            Some("relation") => match (
                text_field(&m, "from"),
                text_field(&m, "to"),
                text_field(&m, "relationType"),
            ) {
                (Some(from), Some(to), Some(rel)) => relations.push(Relation {
                    from,
                    to,
                    rel,
                    line: line_no,
                }),
                _ => {
                    return Err(bad(
                        line_no,
                        "a relation needs `from`, `to` and `relationType` (text)".into(),
                    ));
                }
            },
            _ => out.skipped.push(Skipped {
                item: format!("{file}:{line_no}"),
                reason: "not an entity or a relation (no \"type\": \"entity\" or \"relation\"); ignored, as the memory server ignores it".into(),
            }),
        }
    }
    Ok((entities, relations))
}

/// Entities with the same name are one entity to the server's tools (they find the
/// first); their observations are merged into the first, in order.
fn merge_entities(file: &str, entities: Vec<Entity>, out: &mut Incoming) -> Vec<Entity> {
    let mut merged: Vec<Entity> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for e in entities {
        match by_name.get(&e.name) {
            Some(&i) => {
                let first = &mut merged[i];
                for o in e.observations {
                    if !first.observations.contains(&o) {
                        first.observations.push(o);
                    }
                }
                out.converted.push(Converted {
                    item: format!("{file}:{}", e.line),
                    reason: format!(
                        "a second entity named {:?}; its observations are merged into the one on line {}",
                        e.name, first.line
                    ),
                });
            }
            None => {
                by_name.insert(e.name.clone(), merged.len());
                merged.push(e);
            }
        }
    }
    merged
}

/// Relation lines per source entity, in file order, duplicates dropped.
fn link_lines<'r>(
    file: &str,
    relations: &'r [Relation],
    key_of: &HashMap<&str, &crate::memory::Key>,
    out: &mut Incoming,
) -> HashMap<&'r str, Vec<String>> {
    let mut links: HashMap<&str, Vec<String>> = HashMap::new();
    let mut seen: std::collections::HashSet<(&str, &str, &str)> = Default::default();
    let mut renamed: std::collections::BTreeSet<(String, String)> = Default::default();
    for r in relations {
        if !seen.insert((&r.from, &r.to, &r.rel)) {
            continue;
        }
        let item = format!("{file}:{}", r.line);
        if !key_of.contains_key(r.from.as_str()) {
            out.skipped.push(Skipped {
                item,
                reason: format!(
                    "relation from {:?}, which is not an entity in the file; nothing to attach it to",
                    r.from
                ),
            });
            continue;
        }
        let Some(rel) = foreign::rel_name(&r.rel) else {
            out.skipped.push(Skipped {
                item,
                reason: format!("relation type {:?} has no letter or digit", r.rel),
            });
            continue;
        };
        if rel != r.rel {
            renamed.insert((r.rel.clone(), rel.clone()));
        }
        let target = match key_of.get(r.to.as_str()) {
            Some(k) => k.to_string(),
            None if r.to.contains("]]") || r.to.contains('\n') || r.to.trim().is_empty() => {
                out.skipped.push(Skipped {
                    item,
                    reason: format!("relation to {:?}, which cannot be written as a link", r.to),
                });
                continue;
            }
            None => {
                out.unresolved.push(Skipped {
                    item: format!("{}.md", key_of[r.from.as_str()]),
                    reason: format!(
                        "`{rel}:: [[{}]]` ({file}:{}): no entity named {:?} in the file; kept as written",
                        r.to, r.line, r.to
                    ),
                });
                r.to.clone()
            }
        };
        links
            .entry(r.from.as_str())
            .or_default()
            .push(format!("- {rel}:: [[{target}]]"));
    }
    for (from, to) in renamed {
        out.converted.push(Converted {
            item: file.to_string(),
            reason: format!(
                "relation type {from:?} written as `{to}` (link relations are snake_case)"
            ),
        });
    }
    links
}

/// One entity as a memory file (its observations bullet lines, then its links), or
/// a skip when it cannot be written.
fn entity_file(
    file: &str,
    e: &Entity,
    key: crate::memory::Key,
    links: Option<&Vec<String>>,
    today: &Stamp,
    out: &mut Incoming,
) {
    let mut lines: Vec<String> = Vec::new();
    for o in &e.observations {
        let one: String = o.split_whitespace().collect::<Vec<_>>().join(" ");
        if one.is_empty() {
            continue;
        }
        if one != *o {
            out.converted.push(Converted {
                item: format!("{file}:{}", e.line),
                reason: format!(
                    "an observation of {:?} spans several lines or spaces; written on one line",
                    e.name
                ),
            });
        }
        lines.push(format!("- {one}"));
    }
    let mut body = lines.join("\n");
    if let Some(l) = links {
        if !body.is_empty() {
            body.push_str("\n\n");
        }
        body.push_str(&l.join("\n"));
    }
    let description = match e.observations.iter().find(|o| !o.trim().is_empty()) {
        Some(first) => format!("{}: {first}", e.entity_type),
        None => e.entity_type.clone(),
    };
    let draft = Parts {
        key,
        name: &e.name,
        description: &description,
        kind: foreign::kind_for(&e.entity_type),
        created: today.clone(),
        updated: today.clone(),
        source: "mcp-memory".into(),
        tags: Vec::new(),
        extra: vec![(
            "entity_type".to_string(),
            Value::String(e.entity_type.clone()),
        )],
        body,
    };
    match foreign::memory_file(draft) {
        Ok(f) => out.files.push(f),
        Err(err) => out.skipped.push(Skipped {
            item: format!("{file}:{}", e.line),
            reason: format!("the entity cannot be written as a memory: {err}"),
        }),
    }
}

/// Writes memories as a `memory.jsonl` the reference server reads: one entity per
/// memory in key order (name; `entity_type` when the memory has one, else its type;
/// observations from the body's bullet lines other than link lines, or else from its
/// paragraphs), then one relation per `- rel:: [[target]]` line (a target naming a
/// memory's key or name becomes that memory's entity name; any other stays as
/// written). Lines end with `\n`, as the server writes them.
pub fn encode(records: &[Record]) -> String {
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by(|a, b| a.key.cmp(&b.key));
    // Entity names must be unique: a later memory with a name already taken (or an
    // empty one) goes out under its key.
    let mut used: std::collections::HashSet<String> = Default::default();
    let names: Vec<String> = sorted
        .iter()
        .map(|r| {
            let name = r.meta.name.trim();
            if !name.is_empty() && used.insert(name.to_string()) {
                name.to_string()
            } else {
                used.insert(r.key.to_string());
                r.key.to_string()
            }
        })
        .collect();
    let mut entity_of: HashMap<&str, &str> = HashMap::new();
    for (r, n) in sorted.iter().zip(&names) {
        entity_of.insert(r.key.as_str(), n);
    }
    for (r, n) in sorted.iter().zip(&names) {
        entity_of.entry(r.meta.name.as_str()).or_insert(n);
    }
    let mut lines: Vec<String> = Vec::new();
    let mut relations: Vec<String> = Vec::new();
    for (r, name) in sorted.iter().zip(&names) {
        let entity_type = r
            .meta
            .extra
            .values()
            .find(|(k, _)| *k == "entity_type")
            .and_then(|(_, v)| v.as_str().map(str::to_string))
            .unwrap_or_else(|| r.meta.kind.as_str().to_string());
        let mut bullets: Vec<String> = Vec::new();
        let mut paragraphs: Vec<String> = Vec::new();
        let mut para = String::new();
        let mut in_code = false;
        for line in r.body.lines() {
            let t = line.trim_end();
            if t.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            if in_code {
                continue;
            }
            if let Some((rel, target)) = foreign::link_line(t) {
                let to = entity_of.get(target).copied().unwrap_or(target);
                relations.push(
                    json!({"type": "relation", "from": name, "to": to, "relationType": rel})
                        .to_string(),
                );
                continue;
            }
            if let Some(b) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
                bullets.push(b.trim().to_string());
                continue;
            }
            if t.trim().is_empty() || t.starts_with('#') {
                if !para.is_empty() {
                    paragraphs.push(std::mem::take(&mut para));
                }
                continue;
            }
            if !para.is_empty() {
                para.push(' ');
            }
            para.push_str(t.trim());
        }
        if !para.is_empty() {
            paragraphs.push(para);
        }
        let observations = if bullets.is_empty() {
            paragraphs
        } else {
            bullets
        };
        lines.push(
            json!({"type": "entity", "name": name, "entityType": entity_type, "observations": observations})
                .to_string(),
        );
    }
    lines.extend(relations);
    let mut s = lines.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 4, 14).unwrap()
    }

    fn body_of(inc: &Incoming, key: &str) -> String {
        inc.files
            .iter()
            .find(|f| f.key.as_str() == key)
            .map(|f| f.parsed.body.clone())
            .unwrap_or_else(|| panic!("no {key}"))
    }

    #[test]
    fn entities_and_relations_become_memories_and_link_lines() {
        let text = concat!(
            "{\"type\":\"entity\",\"name\":\"Alice Smith\",\"entityType\":\"person\",\"observations\":[\"Speaks Spanish\",\"Likes tea\"]}\r\n",
            "{\"type\":\"entity\",\"name\":\"Acme\",\"entityType\":\"organization\",\"observations\":[]}\r\n",
            "\r\n",
            "{\"type\":\"relation\",\"from\":\"Alice Smith\",\"to\":\"Acme\",\"relationType\":\"worksAt\"}\r\n",
            "{\"type\":\"relation\",\"from\":\"Alice Smith\",\"to\":\"Bob\",\"relationType\":\"knows\"}\r\n",
        );
        let inc = decode("m.jsonl", text, today()).unwrap();
        assert_eq!(inc.files.len(), 2);
        let alice = &inc.files[0];
        assert_eq!(alice.key.as_str(), "alice_smith");
        assert_eq!(alice.parsed.meta.name, "Alice Smith");
        assert_eq!(alice.parsed.meta.kind.as_str(), "user");
        assert_eq!(alice.parsed.meta.description, "person: Speaks Spanish");
        assert_eq!(
            body_of(&inc, "alice_smith"),
            "- Speaks Spanish\n- Likes tea\n\n- works_at:: [[acme]]\n- knows:: [[Bob]]"
        );
        assert_eq!(body_of(&inc, "acme"), "");
        assert_eq!(inc.unresolved.len(), 1);
        assert_eq!(inc.unresolved[0].item, "alice_smith.md");
    }

    #[test]
    fn a_malformed_line_names_its_line() {
        let text = "{\"type\":\"entity\",\"name\":\"A\",\"entityType\":\"t\",\"observations\":[]}\n{not json\n";
        match decode("m.jsonl", text, today()) {
            Err(ForeignError::Line { file, line, .. }) => {
                assert_eq!((file.as_str(), line), ("m.jsonl", 2));
            }
            other => panic!("{other:?}"),
        }
        let text = "{\"type\":\"entity\",\"name\":\"A\",\"entityType\":\"t\"}\n";
        assert!(matches!(
            decode("m.jsonl", text, today()),
            Err(ForeignError::Line { line: 1, .. })
        ));
    }

    #[test]
    fn round_trip_keeps_entities_observations_and_relations() {
        let text = "{\"type\":\"entity\",\"name\":\"Zoë Müller\",\"entityType\":\"person\",\"observations\":[\"Lives in Zürich\"]}\n{\"type\":\"entity\",\"name\":\"Acme\",\"entityType\":\"organization\",\"observations\":[]}\n{\"type\":\"relation\",\"from\":\"Zoë Müller\",\"to\":\"Acme\",\"relationType\":\"works_at\"}\n{\"type\":\"relation\",\"from\":\"Zoë Müller\",\"to\":\"Ghost\",\"relationType\":\"knows\"}\n";
        let inc = decode("m.jsonl", text, today()).unwrap();
        let records: Vec<Record> = inc
            .files
            .iter()
            .map(|f| Record {
                key: f.key.clone(),
                meta: f.parsed.meta.clone(),
                body: f.parsed.body.clone().into(),
            })
            .collect();
        let back = encode(&records);
        let mut want: Vec<&str> = text.lines().collect();
        let mut got: Vec<&str> = back.lines().collect();
        want.sort();
        got.sort();
        assert_eq!(got, want);
    }
}
