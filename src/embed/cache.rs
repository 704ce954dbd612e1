//! The vector cache, `.memdir/cache/vectors-<model-hash>.bin`: the SHA-256 of an
//! embedded text → its vector, for one model and dimension count.
//!
//! Disposable: a missing, foreign or corrupt file reads as empty and is rebuilt. Written
//! whole through a temporary file and a rename, so a reader never sees half a file; two
//! writers racing only lose vectors that are embedded again later, so no lock is taken.
//! Format: `MDVEC1\n`, dimensions (u32 LE), count (u32 LE), then per entry the 32-byte
//! hash and the vector as f32 LE.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::memory::layout::CACHE_DIR;

const MAGIC: &[u8] = b"MDVEC1\n";

/// Most entries read from one file (a bound against a corrupt count).
const MAX_ENTRIES: usize = 10_000_000;

/// The SHA-256 of a text.
pub fn text_hash(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Vectors of one model, by text hash.
#[derive(Debug, Default)]
pub struct Vectors {
    dimensions: usize,
    map: HashMap<[u8; 32], Stored>,
    dirty: bool,
}

/// A vector and its length, found once when it is read or added (a ranking compares
/// the query with every vector).
#[derive(Debug)]
struct Stored {
    v: Vec<f32>,
    norm: f64,
}

impl Stored {
    fn new(v: Vec<f32>) -> Stored {
        Stored {
            norm: crate::retrieval::hybrid::norm(&v),
            v,
        }
    }
}

/// The cache file of `model` with `dimensions` under `root`.
pub fn path(root: &Path, model: &str, dimensions: usize) -> PathBuf {
    let h = Sha256::digest(format!("{model}\n{dimensions}").as_bytes());
    let hex: String = h[..8].iter().map(|b| format!("{b:02x}")).collect();
    root.join(CACHE_DIR).join(format!("vectors-{hex}.bin"))
}

impl Vectors {
    /// An empty cache for vectors of `dimensions`.
    pub fn new(dimensions: usize) -> Vectors {
        Vectors {
            dimensions,
            map: HashMap::new(),
            dirty: false,
        }
    }

    /// Reads the file at `path`; anything unreadable is an empty cache.
    pub fn read(path: &Path, dimensions: usize) -> Vectors {
        std::fs::read(path)
            .ok()
            .and_then(|b| Vectors::decode(&b, dimensions))
            .unwrap_or_else(|| Vectors::new(dimensions))
    }

    fn decode(b: &[u8], dimensions: usize) -> Option<Vectors> {
        let rest = b.strip_prefix(MAGIC)?;
        let word = |s: &[u8], at: usize| -> Option<usize> {
            Some(u32::from_le_bytes(s.get(at..at + 4)?.try_into().ok()?) as usize)
        };
        if word(rest, 0)? != dimensions {
            return None;
        }
        let count = word(rest, 4)?;
        let entry = 32 + 4 * dimensions;
        let body = rest.get(8..)?;
        if count > MAX_ENTRIES || body.len() != count.checked_mul(entry)? {
            return None;
        }
        let mut map = HashMap::with_capacity(count);
        for e in body.chunks_exact(entry) {
            let key: [u8; 32] = e[..32].try_into().ok()?;
            let v: Vec<f32> = e[32..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            map.insert(key, Stored::new(v));
        }
        Some(Vectors {
            dimensions,
            map,
            dirty: false,
        })
    }

    /// The vector of a text hash.
    pub fn get(&self, hash: &[u8; 32]) -> Option<&[f32]> {
        self.map.get(hash).map(|s| s.v.as_slice())
    }

    /// The vector of a text hash and its length ([`crate::retrieval::hybrid::norm`]).
    pub fn get_normed(&self, hash: &[u8; 32]) -> Option<(&[f32], f64)> {
        self.map.get(hash).map(|s| (s.v.as_slice(), s.norm))
    }

    /// Keeps a vector (one of the wrong length is dropped).
    pub fn insert(&mut self, hash: [u8; 32], v: Vec<f32>) {
        if v.len() == self.dimensions && v.iter().all(|x| x.is_finite()) {
            self.map.insert(hash, Stored::new(v));
            self.dirty = true;
        }
    }

    /// Keeps only the hashes in `live` (vectors of texts no memory has any more go).
    pub fn retain(&mut self, live: impl IntoIterator<Item = [u8; 32]>) {
        let live: std::collections::HashSet<[u8; 32]> = live.into_iter().collect();
        let before = self.map.len();
        self.map.retain(|k, _| live.contains(k));
        self.dirty |= self.map.len() != before;
    }

    /// How many vectors it holds.
    pub fn count(&self) -> usize {
        self.map.len()
    }

    /// The length of every vector.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Adds the vectors of `other` this cache lacks (what another process wrote),
    /// keeping its own; dirty when `other` lacks some of this cache's.
    pub fn merge(&mut self, other: Vectors) {
        if other.dimensions != self.dimensions {
            return;
        }
        let mine = self.map.len();
        let mut common = 0;
        for (k, v) in other.map {
            match self.map.entry(k) {
                std::collections::hash_map::Entry::Occupied(_) => common += 1,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(v);
                }
            }
        }
        self.dirty |= common != mine;
    }

    /// Writes the cache to `path` if it changed; failures are ignored (it is a cache).
    pub fn save(&mut self, path: &Path) {
        if let Some(bytes) = self.encode_if_dirty()
            && !write(path, &bytes)
        {
            self.dirty = true;
        }
    }

    /// The file's bytes when the cache changed since it was last encoded (it is then
    /// clean: a caller that fails to write them marks it with [`Vectors::touch`]).
    pub fn encode_if_dirty(&mut self) -> Option<Vec<u8>> {
        if !self.dirty {
            return None;
        }
        self.dirty = false;
        let mut keys: Vec<&[u8; 32]> = self.map.keys().collect();
        keys.sort();
        let mut out = Vec::with_capacity(16 + keys.len() * (32 + 4 * self.dimensions));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.dimensions as u32).to_le_bytes());
        out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
        for k in keys {
            out.extend_from_slice(k);
            for x in &self.map[k].v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        Some(out)
    }

    /// Marks the cache as changed (its last encoding was not written).
    pub fn touch(&mut self) {
        self.dirty = true;
    }
}

/// Writes encoded vectors to `path` through a temporary file and a rename; `false`
/// when that failed (ignored by callers beyond a retry: it is a cache).
pub fn write(path: &Path, bytes: &[u8]) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return false;
    };
    tmp.write_all(bytes).is_ok() && tmp.persist(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), "m", 2);
        let mut v = Vectors::new(2);
        v.insert(text_hash("a"), vec![1.0, 2.0]);
        v.insert(text_hash("b"), vec![1.0]); // wrong length: dropped
        v.save(&p);
        let r = Vectors::read(&p, 2);
        assert_eq!(r.count(), 1);
        assert_eq!(r.get(&text_hash("a")), Some(&[1.0, 2.0][..]));
        // Another dimension count reads as empty.
        assert!(Vectors::read(&p, 3).count() == 0);
        // A truncated file reads as empty.
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() - 1]).unwrap();
        assert!(Vectors::read(&p, 2).count() == 0);
    }

    #[test]
    fn merge_keeps_both_and_says_when_the_file_lacks_some() {
        let mut mine = Vectors::new(1);
        mine.insert(text_hash("a"), vec![1.0]);
        mine.encode_if_dirty();
        let mut file = Vectors::new(1);
        file.insert(text_hash("a"), vec![1.0]);
        file.insert(text_hash("b"), vec![2.0]);
        mine.merge(file);
        assert_eq!(mine.count(), 2);
        // Everything it held was in the file: nothing to write back.
        assert!(mine.encode_if_dirty().is_none());
        mine.insert(text_hash("c"), vec![3.0]);
        mine.encode_if_dirty();
        let mut file = Vectors::new(1);
        file.insert(text_hash("a"), vec![1.0]);
        mine.merge(file);
        assert_eq!(mine.count(), 3);
        assert!(mine.encode_if_dirty().is_some());
    }
}
