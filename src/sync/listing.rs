//! Flat listings of a directory tree and the changes between two of them.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use cid::Cid;
use serde::Serialize;

use crate::engine::Memory;
use crate::error::Error;
use crate::ipfs::car::{self, CarLimits};
use crate::ipfs::unixfs::{self, Dag, Node};
use crate::memory::layout::MAX_NAME_BYTES;
use crate::provider::Blocks;
use crate::sync::error::Result;
use crate::sync::plan::{self, FileClass, Listing};
use crate::sync::state::{State, base_car_name};

/// Calls `f` with the `/`-separated relative path and the bytes of every file in
/// `node`, in path order.
pub fn for_each_file(node: &Node, f: &mut impl FnMut(&str, &[u8])) {
    fn walk(prefix: &str, node: &Node, f: &mut impl FnMut(&str, &[u8])) {
        match node {
            Node::File(b) => f(prefix, b),
            Node::Dir(entries) => {
                for (name, child) in entries {
                    let path = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}/{name}")
                    };
                    walk(&path, child, f);
                }
            }
        }
    }
    walk("", node, f);
}

/// A directory tree as a listing: `/`-separated relative path → bytes.
pub fn listing(node: &Node) -> Listing {
    let mut out = Listing::new();
    for_each_file(node, &mut |path, bytes| {
        out.insert(path.to_string(), bytes.to_vec());
    });
    out
}

pub(super) fn build(tree: &Node, mem: &Memory) -> Result<Dag> {
    Ok(unixfs::build(tree).map_err(|e| Error::Unixfs {
        path: mem.root(),
        source: Box::new(e),
    })?)
}

/// The verified blocks of the base recorded in the state, or `None` with a warning
/// when its CAR is missing or damaged: then every difference counts as new and a
/// conflict keeps both versions, so nothing is lost.
pub(super) fn base_blocks(
    mem: &Memory,
    state: &State,
    warnings: &mut Vec<String>,
) -> Option<(Cid, Blocks)> {
    let root = state.base.as_ref()?.root;
    let name = base_car_name(&root);
    let loaded = match mem.backend().read(&name, u64::MAX) {
        Ok(Some(bytes)) => {
            car::read_car(bytes.as_slice(), &root, &CarLimits::default()).map_err(|e| e.to_string())
        }
        Ok(None) => Err("missing".to_string()),
        Err(e) => Err(e.to_string()),
    };
    match loaded {
        Ok(blocks) => Some((root, blocks)),
        Err(e) => {
            warnings.push(no_base(&name, &e));
            None
        }
    }
}

/// The files of the base (empty when there is none, see [`base_blocks`]).
pub(super) fn base_listing(
    mem: &Memory,
    state: &State,
    warnings: &mut Vec<String>,
) -> (bool, Listing) {
    let Some((root, blocks)) = base_blocks(mem, state, warnings) else {
        return (false, Listing::new());
    };
    match unixfs::decode(&root, &blocks, &unixfs::Limits::default()) {
        Ok(tree) => (true, listing(&tree)),
        Err(e) => {
            warnings.push(no_base(&base_car_name(&root), &e.to_string()));
            (false, Listing::new())
        }
    }
}

pub(super) fn no_base(name: &str, problem: &str) -> String {
    format!("{name}: {problem}; syncing without a base (every difference counts as new)")
}

/// A change of the directory since the last synced root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The file's path in the directory.
    pub path: String,
    /// `added`, `changed` or `deleted`.
    pub change: &'static str,
}

/// Files that differ between `base` and `local`, ignoring the index and dot entries.
pub fn changes(base: &Listing, local: &Listing) -> Vec<Change> {
    let relevant = |p: &str| matches!(plan::classify(p), FileClass::File | FileClass::Timeline);
    let mut out = Vec::new();
    for (path, bytes) in local.iter().filter(|(p, _)| relevant(p)) {
        match base.get(path) {
            None => out.push(Change {
                path: path.clone(),
                change: "added",
            }),
            Some(b) if b != bytes => out.push(Change {
                path: path.clone(),
                change: "changed",
            }),
            _ => {}
        }
    }
    for path in base
        .keys()
        .filter(|p| relevant(p) && !local.contains_key(*p))
    {
        out.push(Change {
            path: path.clone(),
            change: "deleted",
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The first thing in `tree` a memory directory may not hold, as (the path, control
/// characters escaped; why), or `None`.
pub(crate) fn tree_problem(tree: &Node) -> Option<(String, String)> {
    fn walk(prefix: &str, node: &Node) -> Option<(String, String)> {
        let Node::Dir(entries) = node else {
            return None;
        };
        for (name, child) in entries {
            let path = format!("{prefix}{name}");
            let bad = |reason: String| Some((crate::memory::printable::escape_line(&path), reason));
            if name.len() > MAX_NAME_BYTES {
                return bad(format!(
                    "a name of {} bytes (at most {MAX_NAME_BYTES})",
                    name.len()
                ));
            }
            if name.chars().any(char::is_control) {
                return bad("a control character in the name".into());
            }
            let is_dir = matches!(child, Node::Dir(_));
            if prefix.is_empty() {
                if name == crate::memory::layout::INDEX_FILE && is_dir {
                    return bad("a folder where the index file goes".into());
                }
                if name == "timeline" && !is_dir {
                    return bad("a file where the timeline folder goes".into());
                }
                if name.ends_with(".md") && is_dir {
                    return bad("a folder named like a memory file".into());
                }
            }
            if prefix == "timeline/" && is_dir && crate::memory::timeline::is_day_file_name(name) {
                return bad("a folder named like a timeline day file".into());
            }
            if let Some(p) = walk(&format!("{path}/"), child) {
                return Some(p);
            }
        }
        None
    }
    walk("", tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn changes_ignore_index_and_dot_entries() {
        let l = |v: &[(&str, &str)]| -> Listing {
            v.iter()
                .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
                .collect()
        };
        let base = l(&[("a.md", "1"), ("b.md", "1"), ("MEMORY.md", "x")]);
        let local = l(&[
            ("a.md", "2"),
            ("c.md", "1"),
            ("MEMORY.md", "y"),
            (".memdir/x", "1"),
        ]);
        let got: Vec<(String, &str)> = changes(&base, &local)
            .into_iter()
            .map(|c| (c.path, c.change))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a.md".into(), "changed"),
                ("b.md".into(), "deleted"),
                ("c.md".into(), "added")
            ]
        );
    }

    #[test]
    fn listing_flattens_nested_directories() {
        let mut sub = BTreeMap::new();
        sub.insert("2026-01-01.jsonl".to_string(), Node::File(b"e".to_vec()));
        let mut root = BTreeMap::new();
        root.insert("a.md".to_string(), Node::File(b"a".to_vec()));
        root.insert("timeline".to_string(), Node::Dir(sub));
        let got: Vec<String> = listing(&Node::Dir(root)).into_keys().collect();
        assert_eq!(got, vec!["a.md", "timeline/2026-01-01.jsonl"]);
    }
}
