//! Links and facts of one memory (spec/memory-format.md#links), and the one-line body
//! edits of `link` / `unlink`.
//!
//! Owns the link syntax: a typed edge is a list line `- rel:: [[target]] (context)`, a
//! fact a list line `- pred:: literal`, any other `[[target]]` in a body a `links_to`
//! edge, and a frontmatter value written `"[[target]]"` an edge named by its field. It
//! parses text only: no IO, and it does not resolve targets (which needs every memory;
//! see `retrieval::graph`).

use serde::Serialize;

use crate::memory::Meta;

/// The relation of a `[[target]]` that is not on a typed line.
pub const LINKS_TO: &str = "links_to";

/// Longest relation or predicate name.
pub const MAX_REL_LEN: usize = 64;

/// Where a link was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A `- rel:: [[target]]` line.
    Typed,
    /// A `[[target]]` elsewhere in the body (`links_to`).
    Inline,
    /// A frontmatter value `"[[target]]"` (the relation is the field).
    Field,
}

/// A link from a memory, as written (the target is not resolved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Link {
    /// The relation (`links_to` for a bare `[[link]]`, the field for a frontmatter value).
    pub rel: String,
    /// The target as written, without `|label` or `#heading`.
    pub target: String,
    /// The `(context)` after a typed link, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The body line (1-based), `None` for a frontmatter field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Where it was written.
    pub origin: Origin,
}

/// A `- pred:: literal` line: a fact whose subject is the memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// The predicate.
    pub predicate: String,
    /// The literal value.
    pub value: String,
    /// The body line (1-based).
    pub line: usize,
}

/// Whether `s` is a relation or predicate name: snake_case ASCII, `[a-z][a-z0-9_]*`.
pub fn is_rel(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|c| c.is_ascii_lowercase())
        && c.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.len() <= MAX_REL_LEN
}

/// A line with fences and block quote markers understood: the text to scan, or `None`
/// inside (or on) a fenced code block.
struct Lines {
    /// The open fence: its character and length.
    fence: Option<(char, usize)>,
}

impl Lines {
    /// The content of `line` once `>` markers and indentation are stripped, or `None`
    /// when it is code (a fence line or inside a fence).
    fn content<'a>(&mut self, line: &'a str) -> Option<&'a str> {
        let mut t = line.trim_start();
        while let Some(rest) = t.strip_prefix('>') {
            t = rest.trim_start();
        }
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        match self.fence {
            Some((c, n)) => {
                if run(c) >= n && t.trim_start_matches(c).trim().is_empty() {
                    self.fence = None;
                }
                None
            }
            None => {
                for c in ['`', '~'] {
                    let n = run(c);
                    // A backtick fence's info string may not hold a backtick.
                    if n >= 3 && !(c == '`' && t[n..].contains('`')) {
                        self.fence = Some((c, n));
                        return None;
                    }
                }
                Some(t)
            }
        }
    }
}

/// The list item's text after `- `, `* ` or `+ `.
fn list_item(t: &str) -> Option<&str> {
    let rest = t.strip_prefix(['-', '*', '+'])?;
    rest.strip_prefix([' ', '\t']).map(str::trim_start)
}

/// `rel:: rest` of a list item.
fn field_line(item: &str) -> Option<(&str, &str)> {
    let (rel, rest) = item.split_once("::")?;
    if !is_rel(rel) {
        return None;
    }
    Some((rel, rest.trim()))
}

/// The `[[…]]` links of a text outside code spans and not escaped: byte range of the
/// whole link and its target.
fn wikilinks(text: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'`' => {
                let n = b[i..].iter().take_while(|&&c| c == b'`').count();
                // A code span ends at the next run of exactly n backticks; without one
                // the backticks are literal text.
                let mut j = i + n;
                let mut end = None;
                while j < b.len() {
                    if b[j] == b'`' {
                        let m = b[j..].iter().take_while(|&&c| c == b'`').count();
                        if m == n {
                            end = Some(j + m);
                            break;
                        }
                        j += m;
                    } else {
                        j += 1;
                    }
                }
                i = end.unwrap_or(i + n);
            }
            b'[' if b.get(i + 1) == Some(&b'[') => {
                let start = i;
                let inner = i + 2;
                let close = text[inner..].find("]]").map(|p| inner + p);
                match close {
                    Some(c) if !text[inner..c].contains(['[', ']', '\n']) => {
                        if let Some(t) = target_of(&text[inner..c]) {
                            out.push((start..c + 2, t));
                        }
                        i = c + 2;
                    }
                    _ => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The target of a link's inner text: before any `|label` or `#heading`, trimmed.
fn target_of(inner: &str) -> Option<String> {
    let t = inner.split(['|', '#']).next().unwrap_or("").trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// A typed line's links and context: every link in `rest`, and the text of a trailing
/// `(…)`; `None` when `rest` does not start with a link (then the line is a fact).
fn typed(rest: &str) -> Option<(Vec<String>, Option<String>)> {
    if !rest.starts_with("[[") {
        return None;
    }
    let links = wikilinks(rest);
    let first = links.first()?;
    if first.0.start != 0 {
        return None;
    }
    let after = &rest[links.last().map(|l| l.0.end).unwrap_or(0)..];
    let context = after
        .trim()
        .strip_prefix('(')
        .and_then(|c| c.strip_suffix(')'))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty());
    Some((links.into_iter().map(|(_, t)| t).collect(), context))
}

/// The links and facts of a body, in line order. Lines may end in `\r\n`.
pub fn parse_body(body: &str) -> (Vec<Link>, Vec<Fact>) {
    let mut links = Vec::new();
    let mut facts = Vec::new();
    let mut lines = Lines { fence: None };
    for (i, raw) in body.split('\n').enumerate() {
        let line = i + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let Some(t) = lines.content(raw) else {
            continue;
        };
        if let Some((rel, rest)) = list_item(t).and_then(field_line) {
            match typed(rest) {
                Some((targets, context)) => {
                    for target in targets {
                        links.push(Link {
                            rel: rel.to_string(),
                            target,
                            context: context.clone(),
                            line: Some(line),
                            origin: Origin::Typed,
                        });
                    }
                }
                None if !rest.is_empty() => facts.push(Fact {
                    predicate: rel.to_string(),
                    value: rest.to_string(),
                    line,
                }),
                None => {}
            }
            continue;
        }
        for (_, target) in wikilinks(t) {
            links.push(Link {
                rel: LINKS_TO.to_string(),
                target,
                context: None,
                line: Some(line),
                origin: Origin::Inline,
            });
        }
    }
    (links, facts)
}

/// The links of frontmatter values written `"[[target]]"` (or lists of them), each
/// named by its field. `aliases` holds names, not links.
pub fn field_links(meta: &Meta) -> Vec<Link> {
    let mut out = Vec::new();
    for (field, v) in meta.extra.values() {
        if field == "aliases" || !is_rel(field) {
            continue;
        }
        let items: Vec<&serde_json::Value> = match v {
            serde_json::Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        for item in items {
            let Some(s) = item.as_str() else { continue };
            let s = s.trim();
            if let Some(inner) = s.strip_prefix("[[").and_then(|x| x.strip_suffix("]]"))
                && !inner.contains(['[', ']'])
                && let Some(target) = target_of(inner)
            {
                out.push(Link {
                    rel: field.to_string(),
                    target,
                    context: None,
                    line: None,
                    origin: Origin::Field,
                });
            }
        }
    }
    out
}

/// Every link of a memory: body links in line order, then frontmatter links.
pub fn links_of(meta: &Meta, body: &str) -> Vec<Link> {
    let mut l = parse_body(body).0;
    l.extend(field_links(meta));
    l
}

/// Why `link` or `unlink` cannot change a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkEditError {
    #[error(
        "relation `{rel}` must be snake_case: a lowercase letter, then a-z, 0-9 or `_` (at most {MAX_REL_LEN})"
    )]
    /// A relation that is not snake_case.
    Rel {
        /// The relation.
        rel: String,
    },
    #[error(
        "target `{target}` cannot be written in a link (empty, a line break, `[`, `]`, `|` or `#`)"
    )]
    /// A target that cannot be written in a link.
    Target {
        /// The target.
        target: String,
    },
    /// A context with a line break or a parenthesis.
    #[error("context cannot hold a line break, `(` or `)`")]
    Context,
    /// An unlink of a line that is not there.
    #[error("no `- {rel}:: [[{target}]]` line to remove")]
    NotLinked {
        /// The relation.
        rel: String,
        /// The target.
        target: String,
    },
}

fn check_edit(rel: &str, target: &str) -> Result<(), LinkEditError> {
    if !is_rel(rel) {
        return Err(LinkEditError::Rel {
            rel: rel.to_string(),
        });
    }
    if target.trim().is_empty()
        || target.trim() != target
        || target.contains(['\n', '\r', '[', ']', '|', '#'])
    {
        return Err(LinkEditError::Target {
            target: target.to_string(),
        });
    }
    Ok(())
}

/// The line `link` writes: `- rel:: [[target]]`, then ` (context)` when given.
pub fn link_line(rel: &str, target: &str, context: Option<&str>) -> String {
    match context {
        Some(c) => format!("- {rel}:: [[{target}]] ({c})"),
        None => format!("- {rel}:: [[{target}]]"),
    }
}

/// The index of the first typed line `rel` → `target` (0-based), outside code.
fn find_typed(body: &str, rel: &str, target: &str) -> Option<usize> {
    let (links, _) = parse_body(body);
    links
        .iter()
        .find(|l| l.origin == Origin::Typed && l.rel == rel && l.target == target)
        .and_then(|l| l.line)
        .map(|l| l - 1)
}

/// The body with a `- rel:: [[target]]` line: a typed line already linking `rel` to
/// `target` is replaced (when its context differs), else the line is appended. Exactly
/// one line changes.
pub fn add_link(
    body: &str,
    rel: &str,
    target: &str,
    context: Option<&str>,
) -> Result<String, LinkEditError> {
    check_edit(rel, target)?;
    let context = context.map(str::trim).filter(|c| !c.is_empty());
    if context.is_some_and(|c| c.contains(['\n', '\r', '(', ')'])) {
        return Err(LinkEditError::Context);
    }
    let line = link_line(rel, target, context);
    let mut lines: Vec<&str> = if body.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    };
    match find_typed(body, rel, target) {
        // A line holding several links, or other text, is left alone: append.
        Some(i) if typed_alone(lines[i]) => lines[i] = &line,
        _ => lines.push(&line),
    }
    Ok(lines.join("\n"))
}

/// Whether a typed line holds exactly one link (so replacing it loses nothing else).
fn typed_alone(line: &str) -> bool {
    let t = line.trim_start();
    list_item(t)
        .and_then(field_line)
        .and_then(|(_, rest)| typed(rest))
        .is_some_and(|(targets, _)| targets.len() == 1)
}

/// The body without the first `- rel:: [[target]]` line.
pub fn remove_link(body: &str, rel: &str, target: &str) -> Result<String, LinkEditError> {
    check_edit(rel, target)?;
    let i = find_typed(body, rel, target).ok_or_else(|| LinkEditError::NotLinked {
        rel: rel.to_string(),
        target: target.to_string(),
    })?;
    let mut lines: Vec<&str> = body.split('\n').collect();
    if !typed_alone(lines[i]) {
        return Err(LinkEditError::NotLinked {
            rel: rel.to_string(),
            target: target.to_string(),
        });
    }
    lines.remove(i);
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each link as `rel>target@line(context)`, each fact as `pred=value@line`.
    fn check(body: &str, expect: &[&str]) {
        let (links, facts) = parse_body(body);
        let mut got: Vec<String> = links
            .iter()
            .map(|l| {
                let c = l
                    .context
                    .as_deref()
                    .map(|c| format!("({c})"))
                    .unwrap_or_default();
                format!("{}>{}@{}{c}", l.rel, l.target, l.line.unwrap_or(0))
            })
            .collect();
        got.extend(
            facts
                .iter()
                .map(|f| format!("{}={}@{}", f.predicate, f.value, f.line)),
        );
        assert_eq!(got, expect, "{body:?}");
    }

    #[test]
    fn typed_links_and_facts() {
        // spec/memory-format.md#links
        check("- works_at:: [[acme]]", &["works_at>acme@1"]);
        check(
            "- works_at:: [[acme]] (since 2024)",
            &["works_at>acme@1(since 2024)"],
        );
        check(
            "* knows:: [[bob]], [[carol]]",
            &["knows>bob@1", "knows>carol@1"],
        );
        check("+ born:: 1990", &["born=1990@1"]);
        check("- city:: Buenos Aires", &["city=Buenos Aires@1"]);
        check("- empty::", &[]);
        // Not snake_case: the line is plain text with a links_to edge.
        check("- Works At:: [[acme]]", &["links_to>acme@1"]);
        // A fact whose value mentions a link later is a fact.
        check("- note:: see [[acme]]", &["note=see [[acme]]@1"]);
        check("\n\n- a:: [[x]]", &["a>x@3"]);
    }

    #[test]
    fn inline_links() {
        check(
            "Met [[bob]] at [[acme]].",
            &["links_to>bob@1", "links_to>acme@1"],
        );
        check(
            "[[bob|Bobby]] and [[acme#History]]",
            &["links_to>bob@1", "links_to>acme@1"],
        );
        check("[[ spaced ]]", &["links_to>spaced@1"]);
        check("[[]] [[|x]] [[#h]]", &[]);
        check("[[a\n]]", &[]);
        check("[[a [b]]", &[]);
        check("[[[x]]]", &["links_to>x@1"]);
        check("unclosed [[x", &[]);
        check("![[embed]]", &["links_to>embed@1"]);
    }

    #[test]
    fn code_is_not_linked() {
        check("`[[x]]` and [[y]]", &["links_to>y@1"]);
        check("``a ` [[x]]`` [[y]]", &["links_to>y@1"]);
        check("unclosed ` [[y]]", &["links_to>y@1"]);
        check("```\n[[x]]\n- r:: [[x]]\n```\n[[y]]", &["links_to>y@5"]);
        check(
            "~~~~rust\n[[x]]\n~~~\n[[x2]]\n~~~~\n[[y]]",
            &["links_to>y@6"],
        );
        check("  ```\n  [[x]]\n  ```", &[]);
        // An unclosed fence runs to the end.
        check("```\n[[x]]", &[]);
        check("> ```\n> [[x]]\n> ```\n> [[y]]", &["links_to>y@4"]);
    }

    #[test]
    fn escapes_lists_quotes_and_crlf() {
        check(r"\[[x]] [[y]]", &["links_to>y@1"]);
        // An escaped backslash, then a link.
        check(r"\\[[x]]", &["links_to>x@1"]);
        check("- item [[x]]", &["links_to>x@1"]);
        check("  - nested:: [[x]]", &["nested>x@1"]);
        check("> - quoted:: [[x]]", &["quoted>x@1"]);
        check("> > [[x]]", &["links_to>x@1"]);
        check(
            "- a:: [[x]]\r\n- b:: 2\r\n[[y]]\r\n",
            &["a>x@1", "links_to>y@3", "b=2@2"],
        );
    }

    #[test]
    fn frontmatter_fields() {
        let p = crate::memory::frontmatter::parse(
            "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\nemployer: \"[[acme]]\"\nfriends: [\"[[bob]]\", \"[[carol|C]]\", plain]\naliases: [\"[[not_a_link]]\", Bobby]\nnote: \"see [[x]]\"\n---\n\nbody\n",
        )
        .unwrap();
        let got: Vec<String> = field_links(&p.meta)
            .iter()
            .map(|l| format!("{}>{}", l.rel, l.target))
            .collect();
        assert_eq!(got, vec!["employer>acme", "friends>bob", "friends>carol"]);
        assert_eq!(p.meta.aliases(), vec!["[[not_a_link]]", "Bobby"]);
    }

    #[test]
    fn link_and_unlink_change_one_line() {
        // spec/cli.md#link
        assert_eq!(
            add_link("", "knows", "bob", None).unwrap(),
            "- knows:: [[bob]]"
        );
        assert_eq!(
            add_link("Text.", "knows", "bob", Some("school")).unwrap(),
            "Text.\n- knows:: [[bob]] (school)"
        );
        // Linked already: the same line, or its context replaced in place.
        let b = "A\n- knows:: [[bob]]\nB";
        assert_eq!(add_link(b, "knows", "bob", None).unwrap(), b);
        assert_eq!(
            add_link(b, "knows", "bob", Some("work")).unwrap(),
            "A\n- knows:: [[bob]] (work)\nB"
        );
        // A typed line inside code does not count.
        let code = "```\n- knows:: [[bob]]\n```";
        assert_eq!(
            add_link(code, "knows", "bob", None).unwrap(),
            format!("{code}\n- knows:: [[bob]]")
        );
        assert_eq!(remove_link(b, "knows", "bob").unwrap(), "A\nB");
        assert_eq!(
            remove_link(code, "knows", "bob"),
            Err(LinkEditError::NotLinked {
                rel: "knows".into(),
                target: "bob".into()
            })
        );
        assert!(matches!(
            remove_link(b, "likes", "bob"),
            Err(LinkEditError::NotLinked { .. })
        ));
        // A line with two links is never rewritten by unlink.
        assert!(remove_link("- knows:: [[a]], [[b]]", "knows", "a").is_err());
        assert!(matches!(
            add_link("", "Knows", "b", None),
            Err(LinkEditError::Rel { .. })
        ));
        assert!(matches!(
            add_link("", "k", "a]]b", None),
            Err(LinkEditError::Target { .. })
        ));
        assert!(matches!(
            add_link("", "k", "", None),
            Err(LinkEditError::Target { .. })
        ));
        assert_eq!(
            add_link("", "k", "b", Some("x\ny")),
            Err(LinkEditError::Context)
        );
        // What `link` wrote, `parse_body` reads back.
        let body = add_link("x", "works_at", "acme", Some("since 2024")).unwrap();
        check(&body, &["works_at>acme@2(since 2024)"]);
    }

    #[test]
    fn tricky_fixture() {
        // fixtures/links/tricky.md (CRLF line endings): spec/memory-format.md#links
        check(
            include_str!("../../fixtures/links/tricky.md"),
            &[
                "links_to>alice@3",
                "links_to>bob@3",
                "links_to>acme@3",
                "works_at>acme@6(since 2024)",
                "knows>bob@7",
                "knows>carol@7",
                "mentor>dave@8",
                "links_to>erin@9",
                "links_to>frank@11",
                "born=1990@10",
                "city=Rosario [[not_a_typed_link]]@26",
            ],
        );
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "(?s).{0,200}") {
            let _ = parse_body(&s);
        }

        #[test]
        fn parse_never_panics_on_link_soup(s in "[\\[\\]`~>\\\\|#\\- :a-z\\n\\r()]{0,120}") {
            let (links, _) = parse_body(&s);
            for l in links {
                proptest::prop_assert!(!l.target.is_empty());
            }
        }
    }
}
