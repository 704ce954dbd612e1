//! MEMORY.md: the index of all memories, as a pure function of the memories.
//!
//! The output is byte-identical for the same memories (sections in a fixed order,
//! entries by `created` then key), so it diffs cleanly in git, and every name and
//! description is escaped so that a CommonMark parser reads back exactly the same
//! links. This module renders only; deciding when to write and backing up a
//! hand-edited index is the store's job.

use crate::memory::layout::{AGENT_INDEX_BYTES, AGENT_INDEX_LINES};
use crate::memory::{Kind, Record};

/// The first line of every index.
pub const TITLE: &str = "# Agent Memory";

/// Renders MEMORY.md for the given memories.
///
/// ```
/// let index = memdir::memory::index::render(&[]);
/// assert_eq!(index, "# Agent Memory\n");
/// ```
pub fn render(records: &[Record]) -> String {
    let mut out = String::with_capacity(TITLE.len() + 1 + records.len() * 96);
    out.push_str(TITLE);
    out.push('\n');
    let mut current: Option<&Kind> = None;
    for r in order(records).into_iter().map(|i| &records[i]) {
        if current != Some(&r.meta.kind) {
            out.push_str(&section_heading(&r.meta.kind));
            current = Some(&r.meta.kind);
        }
        push_entry_line(&mut out, r);
        out.push('\n');
    }
    out
}

/// Indices of `records` in the order of their index lines: by section (User,
/// Feedback, Project, Reference, then other types alphabetically), then `created`,
/// then key.
pub fn order(records: &[Record]) -> Vec<usize> {
    // Keys are unique, so the keyed sort is [`compare`]'s order exactly.
    let mut keyed: Vec<_> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                section_key(&r.meta.kind),
                r.meta.created.at,
                r.key.as_str(),
                i,
            )
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|k| k.3).collect()
}

/// The index's order of two memories: by section, then creation, then key.
pub fn compare(a: &Record, b: &Record) -> std::cmp::Ordering {
    section_key(&a.meta.kind)
        .cmp(&section_key(&b.meta.kind))
        .then(a.meta.created.at.cmp(&b.meta.created.at))
        .then(a.key.cmp(&b.key))
}

/// The lines that open a type's section: a blank line and `## <Type>`.
pub fn section_heading(kind: &Kind) -> String {
    format!("\n## {}\n", heading(kind))
}

/// One index line: `- [Name](key.md) — description`.
pub fn entry_line(r: &Record) -> String {
    let mut line = String::new();
    push_entry_line(&mut line, r);
    line
}

/// Appends [`entry_line`] to `out`.
fn push_entry_line(out: &mut String, r: &Record) {
    out.push_str("- [");
    push_escaped_inline(out, &r.meta.name);
    out.push_str("](");
    // The file name, `<key>.md`, without building it (`.md` needs no escape).
    push_escaped_href(out, r.key.as_str());
    out.push_str(".md");
    out.push(')');
    let at = out.len();
    out.push_str(" — ");
    let start = out.len();
    push_escaped_inline(out, &r.meta.description);
    if out.len() == start {
        out.truncate(at);
    }
}

fn section_key(kind: &Kind) -> (u8, &str) {
    (kind.section_rank(), kind.as_str())
}

fn heading(kind: &Kind) -> String {
    match kind {
        Kind::User => "User".into(),
        Kind::Feedback => "Feedback".into(),
        Kind::Project => "Project".into(),
        Kind::Reference => "Reference".into(),
        Kind::State => "State".into(),
        Kind::Other(t) => escape_inline(t),
    }
}

/// Whether a text has only lines the renderer produces (title, blank lines, section
/// headings, entry lines), so replacing it loses nothing a person typed beyond what the
/// memory files already say. Used when memdir has no record of the last index it wrote.
pub fn looks_generated(text: &str) -> bool {
    let mut check = GeneratedLines::default();
    for l in text.lines() {
        check.line(l);
    }
    check.finish(text.ends_with('\n'))
}

/// [`looks_generated`] fed one line at a time, so a file of any size can be checked
/// while it is streamed.
#[derive(Debug, Default)]
pub struct GeneratedLines {
    seen: usize,
    bad: bool,
}

impl GeneratedLines {
    /// Feeds the next line (without its newline).
    pub fn line(&mut self, l: &str) {
        self.seen += 1;
        if self.bad {
            return;
        }
        let ok = if self.seen == 1 {
            l == TITLE
        } else {
            l.is_empty()
                || (l.starts_with("## ") && l.len() > 3)
                || (l.starts_with("- [")
                    && l.contains("](")
                    && (l.ends_with(')') || l.contains(") — ")))
        };
        self.bad = !ok;
    }

    /// Feeds a line that is not UTF-8 (never generated).
    pub fn bad_line(&mut self) {
        self.seen += 1;
        self.bad = true;
    }

    /// The verdict, given whether the text ended with a newline.
    pub fn finish(&self, ends_with_newline: bool) -> bool {
        self.seen > 0 && !self.bad && ends_with_newline
    }
}

/// The part of an agent's MEMORY.md Claude Code loads at each session start: the
/// first 200 lines or 25,000 bytes, whichever comes first, cut at a line end
/// (spec/index-format.md#agent-index).
///
/// ```
/// let long: String = (0..300).map(|i| format!("- line {i}\n")).collect();
/// let part = memdir::memory::index::agent_loaded_part(&long);
/// assert_eq!(part.lines().count(), 200);
/// ```
pub fn agent_loaded_part(text: &str) -> &str {
    let mut end = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n == AGENT_INDEX_LINES || end + line.len() > AGENT_INDEX_BYTES {
            break;
        }
        end += line.len();
    }
    &text[..end]
}

/// The local files a line of an agent's MEMORY.md links to: the target of each
/// inline link `[text](target)` that is a relative path (no scheme, not absolute),
/// without its `#fragment`, percent-decoded. Links inside code spans are skipped.
/// Used to check an index the agent keeps (spec/index-format.md#agent-index).
///
/// ```
/// let l = memdir::memory::index::linked_files("- [Role](user_role.md) — see [docs](https://x.y/a.md)");
/// assert_eq!(l, vec!["user_role.md".to_string()]);
/// ```
pub fn linked_files(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    let mut rest = line;
    while let Some(i) = rest.find(['`', ']']) {
        let c = rest.as_bytes()[i];
        rest = &rest[i + 1..];
        if c == b'`' {
            in_code = !in_code;
            continue;
        }
        if in_code || !rest.starts_with('(') {
            continue;
        }
        let Some(end) = rest.find(')') else { break };
        let target = rest[1..end].trim();
        // `[a](b.md "title")`: the title is not part of the target.
        let target = target.split_whitespace().next().unwrap_or_default();
        let target = target.split('#').next().unwrap_or_default();
        rest = &rest[end + 1..];
        if target.is_empty() || target.contains(':') || target.starts_with('/') {
            continue;
        }
        out.push(percent_decode(target));
    }
    out
}

/// `%XX` escapes decoded (an invalid one is kept as written).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Escapes text for an inline position: newlines become spaces, runs of white space
/// collapse, and every character that could open inline markup is backslash-escaped.
pub fn escape_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_escaped_inline(&mut out, s);
    out
}

/// Appends [`escape_inline`] of `s` to `out`.
fn push_escaped_inline(out: &mut String, s: &str) {
    // Most names and descriptions need nothing: plain ASCII words and single spaces.
    let b = s.as_bytes();
    let plain = !b.is_empty()
        && b[0] != b' '
        && b[b.len() - 1] != b' '
        && !b.windows(2).any(|w| w == b"  ")
        && b.iter()
            .all(|&c| c.is_ascii_graphic() && !needs_escape(c as char) || c == b' ');
    if plain {
        out.push_str(s);
        return;
    }
    let start = out.len();
    let mut last_space = true;
    for c in s.chars() {
        if c.is_whitespace() || c.is_control() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
            continue;
        }
        last_space = false;
        if needs_escape(c) {
            out.push('\\');
        }
        out.push(c);
    }
    let trimmed = start + out[start..].trim_end().len();
    out.truncate(trimmed);
}

/// Characters that can open inline markup (emphasis, code, links, images, HTML,
/// entities, strikethrough). Other punctuation is harmless inside a list item line and
/// stays unescaped so the index reads naturally.
fn needs_escape(c: char) -> bool {
    matches!(
        c,
        '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '!' | '~'
    )
}

/// Percent-encodes a file name for a link destination.
pub fn escape_href(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    push_escaped_href(&mut out, name);
    out
}

/// Appends [`escape_href`] of `name` to `out`.
fn push_escaped_href(out: &mut String, name: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::memory::frontmatter::Extra;
    use crate::memory::{Key, Meta, Stamp};
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};

    // spec/index-format.md#agent-index: the files an agent's index line links to.
    #[test]
    fn linked_files_of_agent_lines() {
        let check = |line: &str, want: &[&str]| assert_eq!(linked_files(line), want, "{line:?}");
        check("- [Role](user_role.md) — data scientist", &["user_role.md"]);
        check("[a](a.md) and [b](b.md#why \"t\")", &["a.md", "b.md"]);
        check("see [x](https://example.com/x.md) or [y](/etc/y.md)", &[]);
        check(
            "`[not](a link.md)` but [this](My%20Notes.md)",
            &["My Notes.md"],
        );
        check(
            "[Grafana](reference_grafana.md): board; [bad](%zz.md)",
            &["reference_grafana.md", "%zz.md"],
        );
        check("no links here [just brackets] (and parens)", &[]);
        check("[open](never closed", &[]);
    }

    // spec/index-format.md#agent-index: what Claude Code loads of a long index.
    #[test]
    fn agent_loaded_part_cuts_at_200_lines_or_25000_bytes() {
        let lines = |n: usize, width: usize| -> String {
            (0..n).map(|i| format!("{i:0width$}\n")).collect()
        };
        assert_eq!(agent_loaded_part(""), "");
        assert_eq!(agent_loaded_part("a\nb"), "a\nb");
        let t = lines(300, 9);
        assert_eq!(agent_loaded_part(&t), &t[..200 * 10]);
        let t = lines(150, 199); // 200 bytes a line: 125 lines fit in 25,000 bytes
        assert_eq!(agent_loaded_part(&t), &t[..125 * 200]);
        let t = lines(150, 200); // 201 bytes: 124 lines
        assert_eq!(agent_loaded_part(&t), &t[..124 * 201]);
    }

    pub(crate) fn rec(key: &str, kind: &str, name: &str, desc: &str, created: &str) -> Record {
        let created = Stamp::parse(created).unwrap();
        Record {
            key: Key::from_file_stem(key),
            meta: Meta {
                name: name.into(),
                description: desc.into(),
                kind: Kind::parse(kind),
                updated: created.clone(),
                created,
                source: None,
                decay: None,
                tags: vec![],
                important: false,
                supersedes: Vec::new(),
                valid_until: None,
                extra: Extra::default(),
            },
            body: Default::default(),
        }
    }

    /// Reads the index back with a CommonMark parser: (href, link text, rest of line).
    fn links(md: &str) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        let mut in_link: Option<(String, String)> = None;
        let mut after: Option<(String, String, String)> = None;
        for ev in Parser::new(md) {
            match ev {
                Event::Start(Tag::Link { dest_url, .. }) => {
                    in_link = Some((dest_url.to_string(), String::new()))
                }
                Event::End(TagEnd::Link) => {
                    let (d, t) = in_link.take().unwrap();
                    after = Some((d, t, String::new()));
                }
                Event::Text(t) | Event::Code(t) => {
                    if let Some((_, text)) = in_link.as_mut() {
                        text.push_str(&t);
                    } else if let Some((_, _, rest)) = after.as_mut() {
                        rest.push_str(&t);
                    }
                }
                Event::End(TagEnd::Item) => {
                    if let Some(a) = after.take() {
                        out.push(a);
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn unescape_href(h: &str) -> String {
        let b = h.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                out.push(u8::from_str_radix(&h[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn layout_matches_the_design() {
        // spec/index-format.md#layout
        let recs = vec![
            rec(
                "feedback_tone",
                "feedback",
                "Tone",
                "stay warm but don't coddle",
                "2026-03-22",
            ),
            rec(
                "user_preferences",
                "user",
                "Preferences",
                "terse feedback, no emojis",
                "2026-03-02",
            ),
            rec("user_role", "user", "Role", "Argentina fan", "2026-03-01"),
            rec("zz", "ops", "Runbook", "deploys", "2026-01-01"),
            rec("aa", "archive", "Old", "", "2026-01-01"),
        ];
        assert_eq!(
            render(&recs),
            "# Agent Memory\n\n## User\n- [Role](user_role.md) — Argentina fan\n- [Preferences](user_preferences.md) — terse feedback, no emojis\n\n## Feedback\n- [Tone](feedback_tone.md) — stay warm but don't coddle\n\n## archive\n- [Old](aa.md)\n\n## ops\n- [Runbook](zz.md) — deploys\n"
        );
    }

    #[test]
    fn recognizes_generated_text() {
        let recs = vec![
            rec("a", "user", "A", "x", "2026-01-01"),
            rec("b", "ops", "B", "", "2026-01-01"),
        ];
        assert!(looks_generated(&render(&recs)));
        assert!(looks_generated("# Agent Memory\n"));
        assert!(!looks_generated("# Agent Memory\n\nmy own note\n"));
        assert!(!looks_generated("# My index\n"));
        assert!(!looks_generated("# Agent Memory"));
        assert!(!looks_generated(
            "# Agent Memory\n\n- [A](a.md) — x\n* typed list\n"
        ));
        // Fed a line at a time, as a streamed file is.
        let mut g = GeneratedLines::default();
        g.line(TITLE);
        g.line("- [A](a.md) — x");
        assert!(g.finish(true));
        assert!(!g.finish(false));
        g.bad_line();
        assert!(!g.finish(true));
        assert!(!GeneratedLines::default().finish(true));
    }

    #[test]
    fn ties_on_created_go_by_key() {
        let recs = vec![
            rec("b", "user", "B", "x", "2026-01-01"),
            rec("a", "user", "A", "x", "2026-01-01"),
        ];
        assert_eq!(
            render(&recs),
            "# Agent Memory\n\n## User\n- [A](a.md) — x\n- [B](b.md) — x\n"
        );
    }

    #[test]
    fn hostile_names_parse_back_to_the_same_links() {
        // spec/index-format.md#escaping
        let names = [
            "a](evil.md) [b",
            "*bold* _it_ `code`",
            "<script>alert(1)</script>",
            "back\\slash \\]",
            "![img](x.png)",
            "&amp; &#65;",
            "line\nbreak",
            "~~strike~~",
            "trailing \\",
            "# not a heading",
            "1. not a list",
            "ünï 😀 中文",
        ];
        let recs: Vec<Record> = names
            .iter()
            .enumerate()
            .map(|(i, n)| rec(&format!("k{i:02} (x)"), "user", n, n, "2026-01-01"))
            .collect();
        let md = render(&recs);
        let got = links(&md);
        assert_eq!(got.len(), names.len(), "{md}");
        for (i, (href, text, rest)) in got.iter().enumerate() {
            let want = names[i].split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(unescape_href(href), format!("k{i:02} (x).md"));
            assert_eq!(text, &want, "{md}");
            assert_eq!(rest, &format!(" — {want}"), "{md}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_name_parses_back(name in "\\PC{0,40}", desc in "\\PC{0,40}") {
            let r = rec("k", "user", &name, &desc, "2026-01-01");
            let got = links(&render(&[r]));
            let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            proptest::prop_assert_eq!(got.len(), 1);
            proptest::prop_assert_eq!(&got[0].1, &norm(&name));
            let want_rest = if norm(&desc).is_empty() { String::new() } else { format!(" — {}", norm(&desc)) };
            proptest::prop_assert_eq!(&got[0].2, &want_rest);
        }
    }
}
