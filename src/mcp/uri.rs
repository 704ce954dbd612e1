//! Resource URIs: `memory://index` is MEMORY.md, `memory://<key>` one memory file.
//!
//! Keys memdir writes (`[a-z0-9][a-z0-9_-]*`) appear as they are. A file a person named
//! otherwise (`My Notes.md`) is percent-encoded (`memory://My%20Notes`); `.` is always
//! encoded, so the only literal dot is an optional `.md` suffix. A memory whose key
//! is `index` would collide with the index, so it is `memory://index.md`; every key
//! also answers to `memory://<key>.md`.

/// The URI scheme prefix.
pub const PREFIX: &str = "memory://";

/// The URI of MEMORY.md.
pub const INDEX: &str = "memory://index";

/// What a resource URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Index,
    /// A memory, by key (file stem), decoded.
    Memory(String),
}

/// The URI of the memory with this key.
pub fn for_key(key: &str) -> String {
    let enc = encode(key);
    if enc == "index" {
        format!("{PREFIX}index.md")
    } else {
        format!("{PREFIX}{enc}")
    }
}

/// Parses a resource URI; `None` when it is not one of ours.
pub fn parse(uri: &str) -> Option<Target> {
    let rest = uri.strip_prefix(PREFIX)?;
    if rest == "index" {
        return Some(Target::Index);
    }
    let stem = rest.strip_suffix(".md").unwrap_or(rest);
    if stem.is_empty() || stem.contains(['/', '?', '#', '.']) {
        return None;
    }
    decode(stem).map(Target::Memory)
}

fn encode(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(out).ok()?;
    // A decoded path separator or NUL could name a file outside the directory.
    if text.is_empty() || text.contains(['/', '\\', '\0']) || text.starts_with('.') {
        return None;
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(key: &str, uri: &str) {
        assert_eq!(for_key(key), uri);
        assert_eq!(parse(uri), Some(Target::Memory(key.to_string())), "{uri}");
    }

    #[test]
    fn round_trips() {
        check("user_role", "memory://user_role");
        check("feedback-tone-2", "memory://feedback-tone-2");
        check("index", "memory://index.md");
        check("My Notes", "memory://My%20Notes");
        check("notes.md", "memory://notes%2Emd");
        check("café", "memory://caf%C3%A9");
    }

    #[test]
    fn other_uris() {
        assert_eq!(parse("memory://index"), Some(Target::Index));
        assert_eq!(
            parse("memory://user_role.md"),
            Some(Target::Memory("user_role".into()))
        );
        for bad in [
            "file:///etc/passwd",
            "memory://",
            "memory://.md",
            "memory://a/b",
            "memory://..%2Fx",
            "memory://%2E%2E%2Fx",
            "memory://a%2Fb",
            "memory://a%00",
            "memory://%ZZ",
            "memory://%C3",
            "memory://a.b",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
