//! Partial edits of a memory's body: append, prepend, replace a Markdown section,
//! find and replace (spec/cli.md#edit).
//!
//! Pure functions from a body to a new body, or an error saying why the edit cannot
//! apply (a heading that is not there, a count that differs). The engine applies
//! them under the lock and writes the result through the same path as `write`.

/// Why a body edit cannot apply. Nothing is written when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// No section has the heading.
    #[error("no section headed `{heading}`{}", list_headings(.headings))]
    NoSection {
        /// The heading asked for.
        heading: String,
        /// The headings the body has, as written (without `#`).
        headings: Vec<String>,
    },
    #[error(
        "the heading `{heading}` appears {count} times; give its level (e.g. `## {heading}`) or make it unique"
    )]
    /// The heading names more than one section.
    AmbiguousSection {
        /// The heading.
        heading: String,
        /// How many sections it names.
        count: usize,
    },
    /// An empty heading.
    #[error("the heading to replace is empty")]
    EmptyHeading,
    /// An empty text to find.
    #[error("the text to find is empty")]
    EmptyFind,
    /// The text to find does not occur.
    #[error("the text to find ({}) does not occur in the body", quote(.find))]
    NotFound {
        /// The text to find.
        find: String,
    },
    /// The text to find occurs a number of times other than expected.
    #[error("the text to find ({}) occurs {}, expected {expected}", quote(.find), times(*.found))]
    Count {
        /// The text to find.
        find: String,
        /// How many times it occurs.
        found: usize,
        /// How many times it was expected to.
        expected: usize,
    },
}

fn list_headings(h: &[String]) -> String {
    if h.is_empty() {
        "; the body has no headings".into()
    } else {
        let shown: Vec<String> = h.iter().take(20).map(|t| format!("`{t}`")).collect();
        format!("; its headings are {}", shown.join(", "))
    }
}

fn times(n: usize) -> String {
    match n {
        1 => "once".into(),
        n => format!("{n} times"),
    }
}

/// A short quotation of `s` for an error message (at most 60 characters).
fn quote(s: &str) -> String {
    let cut: String = s.chars().take(60).collect();
    if cut.len() < s.len() {
        format!("`{cut}…`")
    } else {
        format!("`{cut}`")
    }
}

/// `text` added after the body, on a new line (an empty body becomes `text`).
pub fn append(body: &str, text: &str) -> String {
    let body = body.trim_end();
    if body.is_empty() {
        text.to_string()
    } else {
        format!("{body}\n{text}")
    }
}

/// `text` added before the body, on its own line.
pub fn prepend(body: &str, text: &str) -> String {
    let text = text.trim_end_matches(['\n', '\r']);
    if body.trim().is_empty() {
        text.to_string()
    } else {
        format!("{text}\n{body}")
    }
}

/// Replaces every occurrence of `find` with `replace`; with `expected`, refuses
/// unless there are exactly that many. Returns the new body and the count.
pub fn find_replace(
    body: &str,
    find: &str,
    replace: &str,
    expected: Option<usize>,
) -> Result<(String, usize), EditError> {
    if find.is_empty() {
        return Err(EditError::EmptyFind);
    }
    let found = body.matches(find).count();
    match expected {
        Some(n) if n != found => {
            return Err(EditError::Count {
                find: find.to_string(),
                found,
                expected: n,
            });
        }
        None if found == 0 => {
            return Err(EditError::NotFound {
                find: find.to_string(),
            });
        }
        _ => {}
    }
    Ok((body.replace(find, replace), found))
}

/// An ATX heading: its level (1–6) and text, or `None` for any other line.
fn heading(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let t = &line[indent..];
    let level = t.len() - t.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    // An optional closing sequence of `#` preceded by a space.
    let mut text = rest.trim();
    let stripped = text.trim_end_matches('#');
    if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
        text = stripped.trim_end();
    }
    Some((level, text))
}

/// The headings of a body, with their line numbers (0-based), skipping fenced code.
fn headings(lines: &[&str]) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<(char, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let marker = t.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(c) = marker {
            let n = t.len() - t.trim_start_matches(c).len();
            if n >= 3 {
                match fence {
                    None => {
                        fence = Some((c, n));
                        continue;
                    }
                    Some((fc, fnum))
                        if fc == c && n >= fnum && t.trim_start_matches(c).trim().is_empty() =>
                    {
                        fence = None;
                        continue;
                    }
                    _ => {}
                }
            }
        }
        if fence.is_some() {
            continue;
        }
        if let Some((level, text)) = heading(line) {
            out.push((i, level, text.to_string()));
        }
    }
    out
}

/// Replaces the body of the section under `wanted` (the text of an ATX heading,
/// optionally with its `#`s to name the level) up to the next heading of the same or
/// a higher level, keeping the heading line. Headings inside fenced code are not
/// headings.
pub fn replace_section(body: &str, wanted: &str, content: &str) -> Result<String, EditError> {
    let wanted = wanted.trim();
    let (want_level, want_text) = match heading(wanted) {
        Some((l, t)) if wanted.starts_with('#') => (Some(l), t),
        _ => (None, wanted),
    };
    if want_text.is_empty() {
        return Err(EditError::EmptyHeading);
    }
    let lines: Vec<&str> = body.lines().collect();
    let all = headings(&lines);
    let hits: Vec<&(usize, usize, String)> = all
        .iter()
        .filter(|(_, l, t)| t == want_text && want_level.is_none_or(|w| w == *l))
        .collect();
    let (start, level) = match hits.as_slice() {
        [] => {
            return Err(EditError::NoSection {
                heading: wanted.to_string(),
                headings: all.iter().map(|h| h.2.clone()).collect(),
            });
        }
        [(i, l, _)] => (*i, *l),
        many => {
            return Err(EditError::AmbiguousSection {
                heading: want_text.to_string(),
                count: many.len(),
            });
        }
    };
    let end = all
        .iter()
        .find(|(i, l, _)| *i > start && *l <= level)
        .map(|h| h.0);
    let mut out: Vec<String> = lines[..=start].iter().map(|l| l.to_string()).collect();
    let content = content.trim_matches(['\n', '\r']).trim_end();
    if !content.is_empty() {
        out.push(String::new());
        out.push(content.to_string());
    }
    if let Some(e) = end {
        out.push(String::new());
        out.extend(lines[e..].iter().map(|l| l.to_string()));
    }
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(body: &str, h: &str, content: &str, want: Result<&str, &str>) {
        match (replace_section(body, h, content), want) {
            (Ok(got), Ok(w)) => assert_eq!(got, w, "{h}"),
            (Err(e), Err(w)) => assert_eq!(e.to_string(), w, "{h}"),
            (got, w) => panic!("{h}: got {got:?}, want {w:?}"),
        }
    }

    const DOC: &str = "Intro.\n\n## Why\n\nold why\nmore\n\n### Detail\n\nd\n\n## How\n\nhow text";

    #[test]
    fn sections() {
        section(
            DOC,
            "Why",
            "new why",
            Ok("Intro.\n\n## Why\n\nnew why\n\n## How\n\nhow text"),
        );
        section(
            DOC,
            "## How",
            "steps\n",
            Ok("Intro.\n\n## Why\n\nold why\nmore\n\n### Detail\n\nd\n\n## How\n\nsteps"),
        );
        section(
            DOC,
            "Detail",
            "e",
            Ok("Intro.\n\n## Why\n\nold why\nmore\n\n### Detail\n\ne\n\n## How\n\nhow text"),
        );
        section(
            DOC,
            "Detail",
            "",
            Ok("Intro.\n\n## Why\n\nold why\nmore\n\n### Detail\n\n## How\n\nhow text"),
        );
        section(
            DOC,
            "When",
            "x",
            Err("no section headed `When`; its headings are `Why`, `Detail`, `How`"),
        );
        section(
            DOC,
            "### Why",
            "x",
            Err("no section headed `### Why`; its headings are `Why`, `Detail`, `How`"),
        );
        section(
            "plain",
            "Why",
            "x",
            Err("no section headed `Why`; the body has no headings"),
        );
        section(
            "# A\n\nx\n\n# A\n\ny",
            "A",
            "z",
            Err("the heading `A` appears 2 times; give its level (e.g. `## A`) or make it unique"),
        );
        section("# A", " ", "z", Err("the heading to replace is empty"));
        // Closing hashes, and a heading-like line inside fenced code is not a heading.
        section(
            "## Notes ##\n\n```\n# not a heading\n```\n\n## Next\nn",
            "Notes",
            "fresh",
            Ok("## Notes ##\n\nfresh\n\n## Next\nn"),
        );
        section(
            "```\n## Why\n```",
            "Why",
            "x",
            Err("no section headed `Why`; the body has no headings"),
        );
        // `#tag` is not a heading.
        section("#tag\n# Real\nr", "Real", "s", Ok("#tag\n# Real\n\ns"));
    }

    #[test]
    fn find_and_replace() {
        assert_eq!(
            find_replace("a b a", "a", "c", None),
            Ok(("c b c".to_string(), 2))
        );
        assert_eq!(
            find_replace("a b a", "a", "c", Some(2)),
            Ok(("c b c".to_string(), 2))
        );
        assert_eq!(
            find_replace("a b a", "a", "c", Some(1))
                .unwrap_err()
                .to_string(),
            "the text to find (`a`) occurs 2 times, expected 1"
        );
        assert_eq!(
            find_replace("a b a", "z", "c", None)
                .unwrap_err()
                .to_string(),
            "the text to find (`z`) does not occur in the body"
        );
        assert_eq!(
            find_replace("a", "z", "c", Some(0)),
            Ok(("a".to_string(), 0))
        );
        assert_eq!(find_replace("a", "", "c", None), Err(EditError::EmptyFind));
        let long = "x".repeat(100);
        assert!(
            find_replace("a", &long, "c", None)
                .unwrap_err()
                .to_string()
                .contains(&format!("`{}…`", "x".repeat(60)))
        );
    }

    #[test]
    fn append_and_prepend() {
        assert_eq!(append("a", "- b"), "a\n- b");
        assert_eq!(append("", "b"), "b");
        assert_eq!(append("a\n", "\nnew paragraph"), "a\n\nnew paragraph");
        assert_eq!(prepend("a", "b"), "b\na");
        assert_eq!(prepend("", "b\n"), "b");
    }
}
