//! The directory as a UnixFS tree ([`Backend::tree`](super::Backend::tree)), what
//! `cid`, `push` and `status` hash: every entry but dot entries, folders holding no
//! file left out. It must not skip anything silently (a link or a non-UTF-8 name is an
//! error), nor write.

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};
use crate::ipfs::unixfs::Node;
use crate::store::Backend;
use crate::store::mem;

impl Backend {
    /// The directory as a UnixFS tree: every entry except dot entries, recursively,
    /// leaving out folders that hold no file (recursively: a folder holding only
    /// empty folders too), which are not part of the memory (spec/sync.md#content-addressing-memdir-cid-srcipfsunixfsrs):
    /// `pull` never creates one, so `cid`, `push` and `status` must not count one.
    /// Symbolic links and names that are not UTF-8 are errors (a snapshot must be
    /// exact, so nothing is skipped silently).
    pub(crate) fn tree(&self) -> Result<Node> {
        match self {
            Backend::Mem(m) => {
                let m = mem::lock(m);
                let mut root = std::collections::BTreeMap::new();
                for (path, bytes) in m.iter() {
                    if path.split('/').any(|p| p.starts_with('.')) {
                        continue;
                    }
                    insert_path(&mut root, path, bytes.clone());
                }
                Ok(Node::Dir(root))
            }
            Backend::Dir(root) => {
                if !root.is_dir() {
                    return Err(Error::NoDir { path: root.clone() });
                }
                dir_tree(root)
            }
        }
    }
}

fn insert_path(dir: &mut std::collections::BTreeMap<String, Node>, path: &str, bytes: Vec<u8>) {
    match path.split_once('/') {
        None => {
            dir.insert(path.to_string(), Node::File(bytes));
        }
        Some((first, rest)) => {
            let sub = dir
                .entry(first.to_string())
                .or_insert_with(|| Node::Dir(Default::default()));
            if let Node::Dir(m) = sub {
                insert_path(m, rest, bytes);
            }
        }
    }
}

fn dir_tree(dir: &Path) -> Result<Node> {
    let mut out = std::collections::BTreeMap::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(Error::NotUtf8 { path });
        };
        if name.starts_with('.') {
            continue;
        }
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_symlink() {
            return Err(Error::Symlink { path });
        } else if ft.is_dir() {
            let sub = dir_tree(&path)?;
            if !matches!(&sub, Node::Dir(entries) if entries.is_empty()) {
                out.insert(name, sub);
            }
        } else if ft.is_file() {
            let bytes = fs::read(&path).map_err(|e| Error::io(&path, e))?;
            out.insert(name, Node::File(bytes));
        }
    }
    Ok(Node::Dir(out))
}
