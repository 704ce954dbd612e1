//! The layout of a YAML block: its top-level entries with their original text and
//! first line, and the line of a key found without parsing (for messages). It must not
//! decide what a value means, nor write a file.

use serde_json::{Map, Value};

use super::yaml::parse_value;

/// One top-level entry of the YAML block: its key, text and first line.
pub(super) struct Chunk {
    pub(super) key: String,
    pub(super) text: String,
    pub(super) line: usize,
}

/// Splits a YAML block mapping into its top-level entries, so unknown keys can be
/// written back exactly as a person wrote them. Returns the preamble (comments before
/// the first key) and the chunks, or `None` when the layout is not the plain
/// one-key-per-column-0-line shape (then values are re-serialized instead).
///
/// A chunk holding an alias (`*x`) whose anchor (`&x`) is in an earlier entry cannot
/// parse alone; it is checked by parsing the entries up to it instead, and the layout
/// is marked `linked` so [`render`](super::render) checks that its output still resolves every alias.
pub(super) fn chunks(yaml: &str, first_line: usize, map: &Map<String, Value>) -> Option<Layout> {
    let keys: Vec<&String> = map.keys().collect();
    let mut preamble = String::new();
    let mut out: Vec<Chunk> = Vec::new();
    for (i, line) in yaml.split_inclusive('\n').enumerate() {
        let starts_key = line
            .chars()
            .next()
            .is_some_and(|c| !matches!(c, ' ' | '\t' | '-' | '#' | '\n'));
        if starts_key {
            let key = (*keys.get(out.len())?).clone();
            out.push(Chunk {
                key,
                text: line.to_string(),
                line: first_line + i,
            });
        } else if let Some(last) = out.last_mut() {
            last.text.push_str(line);
        } else {
            preamble.push_str(line);
        }
    }
    if out.len() != keys.len() {
        return None;
    }
    // Each chunk must parse on its own to exactly its key; anything else means the
    // split guessed wrong (a multi-line flow value, a complex key, ...).
    let mut linked = Vec::new();
    for (i, c) in out.iter().enumerate() {
        let alone = parse_value(&c.text);
        match alone {
            Some(v) => {
                let m = v.as_object()?;
                if m.len() != 1 || !m.contains_key(&c.key) {
                    return None;
                }
            }
            // Probably an alias to an earlier entry's anchor: the entries up to this
            // one must parse to exactly their keys, this one to its value in the file.
            // Bounded, since each check parses everything before it.
            None if linked.len() < MAX_LINKED_CHUNKS && c.text.contains('*') => {
                linked.push(c.key.clone());
                let upto: String = out[..=i].iter().map(|c| c.text.as_str()).collect();
                let v = parse_value(&upto)?;
                let m = v.as_object()?;
                if m.len() != i + 1
                    || !m.keys().zip(&keys).all(|(a, b)| a == *b)
                    || m.get(&c.key) != map.get(&c.key)
                {
                    return None;
                }
            }
            None => return None,
        }
    }
    Some(Layout {
        preamble,
        chunks: out,
        linked,
    })
}

/// How many entries may hold an alias to another entry before the layout is given up
/// (each costs a parse of the entries before it).
const MAX_LINKED_CHUNKS: usize = 32;

/// The top-level entries of a YAML block with their text (see [`chunks`]).
pub(super) struct Layout {
    pub(super) preamble: String,
    pub(super) chunks: Vec<Chunk>,
    /// Entries that refer by alias to an anchor in another entry.
    pub(super) linked: Vec<String>,
}

#[cfg(test)]
thread_local! {
    /// How many times [`key_line`] scanned a YAML block (tests bound it).
    pub(super) static KEY_LINE_SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The file line of a top-level key, found without parsing (for messages).
pub(super) fn key_line(yaml: &str, first_line: usize, key: &str) -> Option<usize> {
    #[cfg(test)]
    KEY_LINE_SCANS.with(|c| c.set(c.get() + 1));
    yaml.lines()
        .position(|l| {
            l.split_once(':').is_some_and(|(k, _)| {
                !l.starts_with([' ', '\t', '-', '#']) && k.trim().trim_matches(['"', '\'']) == key
            })
        })
        .map(|i| first_line + i)
}
