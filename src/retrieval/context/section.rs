//! A memory's section in the block: its heading (name, key, type, updated date) and
//! its whole text, and their lengths in characters without building them.
//!
//! Must not choose what goes in (assembly and the excerpt planner do). Pure code.

use crate::memory::Record;

/// What a memory without an `updated` date (a Claude Code file) shows for it.
const UNDATED: &str = "unknown";

pub(super) fn heading(r: &Record) -> String {
    let name = r.meta.name.split_whitespace().collect::<Vec<_>>().join(" ");
    let updated = if r.meta.updated.is_undated() {
        UNDATED.to_string()
    } else {
        r.meta.updated.date().to_string()
    };
    format!(
        "\n## {} (key: {}, type: {}, updated: {})\n",
        name, r.key, r.meta.kind, updated
    )
}

/// The length in characters of `s`'s words joined by single spaces.
fn joined_len(s: &str) -> usize {
    let (mut chars, mut words) = (0usize, 0usize);
    if s.is_ascii() {
        // ASCII's white space, as `char::is_whitespace` has it: tab to carriage
        // return, and the space.
        let mut in_word = false;
        for &b in s.as_bytes() {
            let space = matches!(b, b'\t'..=b'\r' | b' ');
            if !space {
                chars += 1;
                words += usize::from(!in_word);
            }
            in_word = !space;
        }
    } else {
        for w in s.split_whitespace() {
            chars += w.chars().count();
            words += 1;
        }
    }
    chars + words.saturating_sub(1)
}

/// The length in characters of [`heading`]`(r)`, without building it.
pub(super) fn heading_len(r: &Record) -> usize {
    use chrono::Datelike;
    let name = joined_len(&r.meta.name);
    let date = r.meta.updated.date();
    let date = if r.meta.updated.is_undated() {
        UNDATED.len()
    } else if (0..=9999).contains(&date.year()) {
        10
    } else {
        date.to_string().chars().count()
    };
    let kind = r.meta.kind.as_str().chars().count();
    // `\n## `, ` (key: `, `, type: `, `, updated: `, `)\n`: 32 characters.
    32 + name + r.key.as_str().chars().count() + kind + date
}

/// The length in characters of [`whole`]`(r)`, without building it.
pub(super) fn whole_len(r: &Record) -> usize {
    let body = r.body.chars().count();
    heading_len(r) + if body == 0 { 0 } else { body + 2 }
}

/// The shortest a memory's section can be: a heading with an empty name and type and
/// a one-character key (`\n##  (key: x, type: , updated: YYYY-MM-DD)\n`).
pub(super) const MIN_SECTION: usize = 43;

pub(super) fn whole(r: &Record) -> String {
    let mut s = heading(r);
    if !r.body.is_empty() {
        s.push('\n');
        s.push_str(&r.body);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::index::tests::rec;

    #[test]
    fn heading_len_is_the_headings_length() {
        let mut r = crate::memory::index::tests::rec("k_é", "user", "N", "d", "2026-01-01");
        for name in [
            "",
            "  Café  au\tlait \n x ",
            "名前",
            "one",
            " a\x0b b\x0c\rc  d\t",
            "\t\n",
            "plain words here",
        ] {
            for kind in ["user", "custom-kind", "state", "ünï"] {
                r.meta.name = name.to_string();
                r.meta.kind = crate::memory::Kind::parse(kind);
                assert_eq!(
                    heading_len(&r),
                    heading(&r).chars().count(),
                    "{name:?} {kind:?}"
                );
            }
        }
    }

    #[test]
    fn whole_len_is_the_length_of_whole() {
        for body in ["", "x", "é😀\nline", "a\n\nb"] {
            for name in ["N", "Long name with ünïcode"] {
                let mut r = rec("k", "user", name, "d", "2026-01-01");
                r.body = body.into();
                assert_eq!(whole_len(&r), whole(&r).chars().count());
                assert!(whole_len(&r) >= MIN_SECTION);
            }
        }
        let r = rec("x", "", "", "d", "2026-01-01");
        assert_eq!(whole_len(&r), MIN_SECTION);
    }
}
