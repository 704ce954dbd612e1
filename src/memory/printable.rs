//! Text as it may be printed to a terminal: the one escaping of control characters
//! that every front end uses for what came from a file, a remote or an argument
//! (spec/cli.md#output). It must not decide where text goes or what it means.

/// Whether `c` must not reach a terminal as itself: a control character (C0, DEL,
/// C1: ESC sequences, BEL, CR, a newline inside a value) or a bidirectional
/// override or isolate, which reorders what is shown.
pub fn unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape_except(s: &str, keep: &[char]) -> String {
    if !s.chars().any(|c| unprintable(c) && !keep.contains(&c)) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unprintable(c) && !keep.contains(&c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// One value on one line (a key, name, description, tag, session id, path): every
/// control character escaped as Rust writes it (`\n`, `\t`, `\u{1b}`), so a value
/// can neither drive the terminal nor forge a line of the report around it.
pub fn escape_line(s: &str) -> String {
    escape_except(s, &[])
}

/// Text of several lines (a memory's body, a whole report): newlines and tabs kept,
/// every other control character escaped as [`escape_line`] does. The last guard
/// of everything the CLI prints.
pub fn escape_text(s: &str) -> String {
    escape_except(s, &['\n', '\t'])
}

/// JSON text (a document, or JSON lines) as it may be printed: serde_json already
/// escapes the C0 controls inside strings; the other characters [`escape_line`]
/// escapes (DEL, C1, bidi overrides) get a JSON `\uXXXX` escape, so the text stays
/// the same JSON. Newlines (the layout between values) are kept.
pub fn escape_json(s: &str) -> String {
    if !s.chars().any(|c| c != '\n' && unprintable(c)) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c != '\n' && unprintable(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, line: &str, text: &str) {
        assert_eq!(escape_line(input), line, "line {input:?}");
        assert_eq!(escape_text(input), text, "text {input:?}");
    }

    #[test]
    fn control_characters_are_escaped() {
        check("plain é 日本", "plain é 日本", "plain é 日本");
        check("a\nb", "a\\nb", "a\nb");
        check("a\tb", "a\\tb", "a\tb");
        check(
            "\u{1b}[31mred\u{7}",
            "\\u{1b}[31mred\\u{7}",
            "\\u{1b}[31mred\\u{7}",
        );
        check("over\rwrite", "over\\rwrite", "over\\rwrite");
        check("nul\0", "nul\\u{0}", "nul\\u{0}");
        check(
            "del\u{7f} c1\u{9b}",
            "del\\u{7f} c1\\u{9b}",
            "del\\u{7f} c1\\u{9b}",
        );
        check("rtl\u{202e}x", "rtl\\u{202e}x", "rtl\\u{202e}x");
        check("", "", "");
    }

    #[test]
    fn json_stays_json() {
        assert_eq!(
            escape_json("{\"a\": \"x\u{7f}\u{9b}\u{202e}\"}\n"),
            "{\"a\": \"x\\u007f\\u009b\\u202e\"}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&escape_json("\"\u{7f}\"")).unwrap();
        assert_eq!(v, "\u{7f}");
    }
}
