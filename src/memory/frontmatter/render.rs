//! Writing a memory file: known keys as memdir writes them, unknown keys (and known
//! keys whose value did not change) with their original text and order, and a check
//! that entries copied with aliases still resolve. It must not read fields or decide
//! what a value means.

use serde_json::{Map, Value};

use super::KNOWN;
use super::split;
use super::yaml::parse_yaml;
use super::yaml::to_text;
use crate::memory::Meta;
use crate::memory::Stamp;

/// YAML text of one `key: value` entry, ending with a newline.
pub(super) fn render_entry(key: &str, value: &Value) -> String {
    let mut m = Map::new();
    m.insert(key.to_string(), value.clone());
    let mut s = to_text(&Value::Object(m)).unwrap_or_else(|| {
        // Serializing a JSON value cannot fail in practice; fall back to JSON, which is
        // valid YAML, rather than lose the value.
        format!("{key}: {value}\n")
    });
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

fn render_stamp(key: &str, stamp: &Stamp) -> String {
    // A plain date is written bare, as people write it; anything else is quoted by
    // the YAML writer.
    if Stamp::parse(&stamp.text).is_some_and(|s| s.text.len() == 10) {
        format!("{key}: {}\n", stamp.text)
    } else {
        render_entry(key, &Value::String(stamp.text.clone()))
    }
}

pub(super) fn render_known(key: &str, meta: &Meta) -> Option<String> {
    let s = |v: &str| Some(render_entry(key, &Value::String(v.to_string())));
    match key {
        // A description is one line: the index shows it on one line.
        "name" => s(&one_line(&meta.name)),
        "description" => s(&one_line(&meta.description)),
        "type" => s(meta.kind.as_str()),
        // A date the file did not have is not invented on a rewrite.
        "created" => (!meta.created.is_undated()).then(|| render_stamp(key, &meta.created)),
        "updated" => (!meta.updated.is_undated()).then(|| render_stamp(key, &meta.updated)),
        "source" => meta.source.as_deref().and_then(s),
        "decay" => meta.decay.map(|d| format!("decay: {d}\n")),
        "tags" if !meta.tags.is_empty() => Some(render_entry(
            key,
            &Value::Array(meta.tags.iter().cloned().map(Value::String).collect()),
        )),
        "important" if meta.important => Some("important: true\n".to_string()),
        "supersedes" if !meta.supersedes.is_empty() => Some(render_entry(
            key,
            &Value::Array(meta.supersedes.iter().cloned().map(Value::String).collect()),
        )),
        "valid_until" => meta.valid_until.as_deref().map(|v| {
            // A day is written bare, as people write it; anything else is quoted.
            if crate::memory::parse_day(v).is_some() {
                format!("{key}: {}\n", v.trim())
            } else {
                render_entry(key, &Value::String(v.to_string()))
            }
        }),
        _ => None,
    }
}

pub(super) fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
}

pub(super) fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Renders a memory file: frontmatter then body, ending with one newline.
///
/// Keys keep the order of `meta.extra` (the order of the file being rewritten), with
/// unknown keys written back as they were; keys the file did not have yet follow in
/// memdir's order.
pub fn render(meta: &Meta, body: &str) -> String {
    let out = render_with(meta, body, Keep::All);
    if meta.extra.linked.is_empty() {
        return out;
    }
    // An entry copied as it was may hold an alias whose anchor was in an entry that
    // changed: keep the copied text only if the result reads back to the same values
    // as writing every entry afresh; else write the entries holding aliases afresh
    // (an anchor nothing refers to is harmless); else everything.
    let fresh = render_with(meta, body, Keep::Nothing);
    let frontmatter = |text: &str| {
        split(text)
            .ok()
            .and_then(|s| parse_yaml(s.yaml, s.first_line).ok())
    };
    let want = frontmatter(&fresh);
    if want.is_some() && frontmatter(&out) == want {
        return out;
    }
    let unlinked = render_with(meta, body, Keep::Unlinked);
    if want.is_some() && frontmatter(&unlinked) == want {
        return unlinked;
    }
    fresh
}

/// Which entries [`render_with`] copies with their original text.
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    All,
    /// All but those holding an alias to another entry's anchor.
    Unlinked,
    Nothing,
}

/// [`render`], copying original entry text as `keep` allows.
fn render_with(meta: &Meta, body: &str, keep: Keep) -> String {
    let keep_text = |key: &str| match keep {
        Keep::All => true,
        Keep::Unlinked => !meta.extra.linked.iter().any(|k| k == key),
        Keep::Nothing => false,
    };
    let mut out = String::from("---\n");
    if keep != Keep::Nothing {
        out.push_str(&meta.extra.preamble);
    }
    let mut written: Vec<&str> = Vec::new();
    for key in meta.extra.order.iter() {
        if KNOWN.contains(&key.as_str()) {
            if let Some(text) = render_known(key, meta) {
                let original = meta
                    .extra
                    .known_raw
                    .iter()
                    .find(|(k, canonical, _)| k == key && *canonical == text);
                match original {
                    Some((_, _, raw)) if keep_text(key) => push_line(&mut out, raw),
                    _ => out.push_str(&text),
                }
            }
        } else if let Some((k, raw, v)) = meta.extra.entries.iter().find(|(k, _, _)| k == key) {
            match raw {
                Some(raw) if keep_text(key) => push_line(&mut out, raw),
                _ => out.push_str(&render_entry(k, v)),
            }
        }
        written.push(key);
    }
    for key in KNOWN {
        if !written.contains(&key)
            && let Some(text) = render_known(key, meta)
        {
            out.push_str(&text);
        }
    }
    out.push_str("---\n");
    let body = crate::memory::normalize_body(body);
    if !body.is_empty() {
        out.push('\n');
        out.push_str(body);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::frontmatter::parse;
    use crate::memory::frontmatter::tests::GOOD;
    use crate::memory::frontmatter::tests::meta_of;

    #[test]
    fn rewrite_keeps_unknown_keys_text_and_order() {
        let text = "---\n# my notes\nzeta: 1.10   # version\nname: Tone\nowner:\n  team: core\n  ids: [1, 2]\ndescription: d\ntype: user\ncreated: 2026-01-01T08:00:00Z\nupdated: 2026-01-01\n---\n\nbody\n";
        let p = parse(text).unwrap();
        assert_eq!(render(&p.meta, &p.body), text);
        let mut meta = p.meta.clone();
        meta.name = "no".into();
        meta.tags = vec!["yes".into()];
        let out = render(&meta, "new body");
        assert_eq!(
            out,
            "---\n# my notes\nzeta: 1.10   # version\nname: \"no\"\nowner:\n  team: core\n  ids: [1, 2]\ndescription: d\ntype: user\ncreated: 2026-01-01T08:00:00Z\nupdated: 2026-01-01\ntags:\n- \"yes\"\n---\n\nnew body\n"
        );
        assert_eq!(parse(&out).unwrap().meta.name, "no");
    }

    // spec/memory-format.md#writing: an anchor and its alias in different keys do not
    // make a body-only rewrite re-serialize the frontmatter.
    #[test]
    fn rewrite_keeps_text_when_keys_share_an_anchor() {
        let text = "---\n# my notes\nname: Tone\nversion: &v 1.10   # pinned\ndescription: d\nsame: *v\ntype: user\nowner: &o\n  team: core\nalso: *o\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\nbody\n";
        let p = parse(text).unwrap();
        assert_eq!(render(&p.meta, "body"), text);
        let out = render(&p.meta, "new body");
        assert_eq!(out, text.replace("\nbody\n", "\nnew body\n"));
        // A known key holding the alias keeps its text too while unchanged.
        let text = "---\nname: &n Tone\ndescription: *n\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nx: 1.10\n---\n\nbody\n";
        let p = parse(text).unwrap();
        assert_eq!(p.meta.description, "Tone");
        assert_eq!(render(&p.meta, "body"), text);
    }

    // Changing the key that holds the anchor must not leave the alias dangling.
    #[test]
    fn rewrite_never_leaves_an_alias_without_its_anchor() {
        let text = "---\nname: &n Tone\ndescription: d\nnick: *n\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nx: 1.10\n---\n\nbody\n";
        let p = parse(text).unwrap();
        let mut meta = p.meta.clone();
        meta.name = "Voice".into();
        let out = render(&meta, "b");
        let back = parse(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(back.meta.name, "Voice");
        let nick: Vec<_> = back.meta.extra.iter().collect();
        assert!(
            nick.contains(&("nick", "\"Tone\"".to_string())),
            "{nick:?}\n{out}"
        );
        assert!(out.contains("x: 1.10\n"), "{out}");
    }

    // spec/memory-format.md#reading: loading is linear in the number of tags; the
    // line of a field is looked up (a scan of the block up to it) only to report a
    // problem. Looking it up for every tag was quadratic once `tags:` came after a
    // long entry (5,000 notes then 5,000 tags: 36.6e9 instructions, 0.5e9 after).
    #[test]
    fn ambiguous_values_are_quoted() {
        for v in [
            "no", "yes", "on", "12:30", "1.10", "2024", "null", "~", "- x", "a # b", "x: y", "'q'",
            " lead", "@x", "`x`", "*bold*",
        ] {
            let mut meta = meta_of(GOOD);
            meta.name = v.to_string();
            let text = render(&meta, "b");
            let back = parse(&text).unwrap_or_else(|e| panic!("{v:?}: {e}\n{text}"));
            assert_eq!(back.meta.name, v.trim(), "{text}");
        }
    }

    #[test]
    fn newlines_in_name_and_description_become_spaces() {
        let mut meta = meta_of(GOOD);
        meta.description = "one\ntwo\n---\nthree".into();
        let back = parse(&render(&meta, "")).unwrap();
        assert_eq!(back.meta.description, "one two --- three");
        assert_eq!(back.body, "");
    }
}
