//! The vector cache, `.memdir/cache/vectors-<model-hash>.bin`: the SHA-256 of an
//! embedded text → its vector, for one model and dimension count.
//!
//! A pure codec: the engine reads and writes the file through the store (whole, through
//! a temporary file, fsync and a rename, so a reader never sees half a file; two
//! writers racing only lose vectors that are embedded again later, so no lock is
//! taken). Disposable: a missing, foreign or corrupt file reads as empty and is rebuilt;
//! a file holding any vector [`vector_problem`] refuses (a NaN, all zeros, an
//! overflowing length) is corrupt too.
//! Format: `MDVEC1\n`, dimensions (u32 LE), count (u32 LE), then per entry the 32-byte
//! hash and the vector as f32 LE.

use foldhash::{HashMap, HashMapExt, HashSet};
use sha2::{Digest, Sha256};

use crate::memory::layout::vectors_file;

const MAGIC: &[u8] = b"MDVEC1\n";

/// Most entries read from one file (a bound against a corrupt count).
const MAX_ENTRIES: usize = 10_000_000;

/// The largest vector length accepted: the square of a longer vector's length
/// overflows an f32, and so would the dot products that compare it.
const MAX_NORM: f64 = 1.8e19;

/// What is wrong with `v` as a vector of `dimensions` values, `None` when nothing is:
/// the wrong length, a value that is not a finite number, all zeros (no direction to
/// compare), or a length whose square overflows an f32 (every similarity would be 0).
pub(crate) fn vector_problem(v: &[f32], dimensions: usize) -> Option<String> {
    if v.len() != dimensions {
        return Some(format!("has {} dimensions, not {dimensions}", v.len()));
    }
    if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Some(format!("holds {x} at position {i}, not a finite number"));
    }
    let n = crate::retrieval::hybrid::norm(v);
    if n == 0.0 {
        return Some("is all zeros".into());
    }
    if n > MAX_NORM {
        return Some(format!(
            "is too long to compare (length {n:.3e}; its squares overflow)"
        ));
    }
    None
}

/// The SHA-256 of a text.
pub(crate) fn text_hash(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Vectors of one model, by text hash: one block of rows, so that a ranking that
/// compares the query with every vector reads memory in order.
#[derive(Debug, Default)]
pub(crate) struct Vectors {
    dimensions: usize,
    /// The row of each text hash.
    rows: HashMap<[u8; 32], usize>,
    /// The vectors, `dimensions` values per row.
    data: Vec<f32>,
    /// Each row's length, found once when it is read or added.
    norms: Vec<f64>,
    dirty: bool,
    /// Counts the changes of rows (a vector added, replaced or dropped), so that a
    /// caller keeping rows from [`Vectors::arrange`] knows when they went stale.
    generation: u64,
}

/// The cache file of `model` with `dimensions`, relative to the memory directory.
pub(crate) fn file(model: &str, dimensions: usize) -> String {
    let h = Sha256::digest(format!("{model}\n{dimensions}").as_bytes());
    let hex: String = h[..8].iter().map(|b| format!("{b:02x}")).collect();
    vectors_file(&hex)
}

impl Vectors {
    /// An empty cache for vectors of `dimensions`.
    pub(crate) fn new(dimensions: usize) -> Vectors {
        Vectors {
            dimensions,
            rows: HashMap::new(),
            data: Vec::new(),
            norms: Vec::new(),
            dirty: false,
            generation: 0,
        }
    }

    /// The cache a file's bytes hold (`None`: no file); anything that does not
    /// decode is an empty cache.
    pub(crate) fn from_bytes(bytes: Option<&[u8]>, dimensions: usize) -> Vectors {
        bytes
            .and_then(|b| Vectors::decode(b, dimensions))
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
        let mut out = Vectors::new(dimensions);
        out.rows.reserve(count);
        out.data.reserve(count * dimensions);
        out.norms.reserve(count);
        for e in body.chunks_exact(entry) {
            let key: [u8; 32] = e[..32].try_into().ok()?;
            let v: Vec<f32> = e[32..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            if vector_problem(&v, dimensions).is_some() {
                return None;
            }
            out.put(key, v);
        }
        out.dirty = false;
        Some(out)
    }

    /// Sets the row of `hash` to `v` (`dimensions` values), adding a row if it has none.
    fn put(&mut self, hash: [u8; 32], v: impl IntoIterator<Item = f32>) {
        let d = self.dimensions;
        match self.rows.get(&hash) {
            Some(&row) => {
                for (slot, x) in self.data[row * d..(row + 1) * d].iter_mut().zip(v) {
                    *slot = x;
                }
                self.norms[row] = crate::retrieval::hybrid::norm(self.row(row));
            }
            None => {
                let row = self.norms.len();
                self.data.extend(v.into_iter().take(d));
                self.data.resize((row + 1) * d, 0.0);
                self.norms
                    .push(crate::retrieval::hybrid::norm(self.row(row)));
                self.rows.insert(hash, row);
            }
        }
        self.dirty = true;
        self.generation += 1;
    }

    fn row(&self, row: usize) -> &[f32] {
        &self.data[row * self.dimensions..(row + 1) * self.dimensions]
    }

    /// The vector of a text hash.
    pub(crate) fn get(&self, hash: &[u8; 32]) -> Option<&[f32]> {
        self.rows.get(hash).map(|&r| self.row(r))
    }

    /// The vector of a text hash and its length ([`crate::retrieval::hybrid::norm`]).
    pub(crate) fn get_normed(&self, hash: &[u8; 32]) -> Option<(&[f32], f64)> {
        self.rows.get(hash).map(|&r| (self.row(r), self.norms[r]))
    }

    /// Keeps a vector (one [`vector_problem`] refuses is dropped).
    pub(crate) fn insert(&mut self, hash: [u8; 32], v: Vec<f32>) {
        if vector_problem(&v, self.dimensions).is_none() {
            self.put(hash, v);
        }
    }

    /// Keeps only the hashes in `live` (vectors of texts no memory has any more go).
    pub(crate) fn retain(&mut self, live: impl IntoIterator<Item = [u8; 32]>) {
        let live: HashSet<[u8; 32]> = live.into_iter().collect();
        if self.rows.keys().all(|k| live.contains(k)) {
            return;
        }
        // In row order, so that an arranged cache stays arranged.
        let mut by_row: Vec<(usize, &[u8; 32])> = self
            .rows
            .iter()
            .filter(|(k, _)| live.contains(*k))
            .map(|(k, &r)| (r, k))
            .collect();
        by_row.sort_unstable();
        let mut kept = Vectors::new(self.dimensions);
        for (r, k) in by_row {
            kept.put(*k, self.row(r).iter().copied());
        }
        kept.dirty = true;
        kept.generation = self.generation + 1;
        *self = kept;
    }

    /// Moves the rows of `hashes` to the front, in that order (a hash listed twice
    /// keeps its first place), so that a pass over them reads memory straight through;
    /// returns each one's row for [`Vectors::row_normed`]. The vectors, the file's
    /// encoding and [`Vectors::generation`] are unchanged.
    pub(crate) fn arrange(&mut self, hashes: &[[u8; 32]]) -> Vec<Option<usize>> {
        let mut next = Vectors::new(self.dimensions);
        next.data.reserve(self.data.len());
        next.norms.reserve(self.norms.len());
        next.rows.reserve(self.rows.len());
        let move_row = |next: &mut Vectors, h: &[u8; 32], old: usize| {
            let row = next.norms.len();
            next.data.extend_from_slice(self.row(old));
            next.norms.push(self.norms[old]);
            next.rows.insert(*h, row);
            row
        };
        let out = hashes
            .iter()
            .map(|h| match next.rows.get(h) {
                Some(&r) => Some(r),
                None => self.rows.get(h).map(|&old| move_row(&mut next, h, old)),
            })
            .collect();
        for (h, &old) in &self.rows {
            if !next.rows.contains_key(h) {
                move_row(&mut next, h, old);
            }
        }
        next.dirty = self.dirty;
        next.generation = self.generation;
        *self = next;
        out
    }

    /// The row of a text hash (for [`Vectors::row_normed`]).
    pub(crate) fn row_of(&self, hash: &[u8; 32]) -> Option<usize> {
        self.rows.get(hash).copied()
    }

    /// The vector in `row` (from [`Vectors::arrange`]) and its length.
    pub(crate) fn row_normed(&self, row: usize) -> (&[f32], f64) {
        (self.row(row), self.norms[row])
    }

    /// Changes with every vector added, replaced or dropped.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// How many vectors it holds.
    pub(crate) fn count(&self) -> usize {
        self.rows.len()
    }

    /// The length of every vector.
    pub(crate) fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Adds the vectors of `other` this cache lacks (what another process wrote),
    /// keeping its own; dirty when `other` lacks some of this cache's.
    pub(crate) fn merge(&mut self, other: Vectors) {
        if other.dimensions != self.dimensions {
            return;
        }
        let (mine, was_dirty) = (self.rows.len(), self.dirty);
        let mut common = 0;
        for (k, &r) in &other.rows {
            if self.rows.contains_key(k) {
                common += 1;
            } else {
                self.put(*k, other.row(r).iter().copied());
            }
        }
        self.dirty = was_dirty || common != mine;
    }

    /// The file's bytes when the cache changed since it was last encoded (it is then
    /// clean: a caller that fails to write them marks it with [`Vectors::touch`]).
    pub(crate) fn encode_if_dirty(&mut self) -> Option<Vec<u8>> {
        if !self.dirty {
            return None;
        }
        self.dirty = false;
        let mut keys: Vec<(&[u8; 32], usize)> = self.rows.iter().map(|(k, &r)| (k, r)).collect();
        keys.sort_unstable();
        let mut out = Vec::with_capacity(16 + keys.len() * (32 + 4 * self.dimensions));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.dimensions as u32).to_le_bytes());
        out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
        for (k, r) in keys {
            out.extend_from_slice(k);
            for x in self.row(r) {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        Some(out)
    }

    /// Marks the cache as changed (its last encoding was not written).
    pub(crate) fn touch(&mut self) {
        self.dirty = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let mut v = Vectors::new(2);
        v.insert(text_hash("a"), vec![1.0, 2.0]);
        v.insert(text_hash("b"), vec![1.0]); // wrong length: dropped
        let b = v.encode_if_dirty().unwrap();
        assert!(v.encode_if_dirty().is_none(), "clean once encoded");
        let r = Vectors::from_bytes(Some(&b), 2);
        assert_eq!(r.count(), 1);
        assert_eq!(r.get(&text_hash("a")), Some(&[1.0, 2.0][..]));
        // Another dimension count reads as empty, and so does no file.
        assert!(Vectors::from_bytes(Some(&b), 3).count() == 0);
        assert!(Vectors::from_bytes(None, 2).count() == 0);
        // A truncated file reads as empty.
        assert!(Vectors::from_bytes(Some(&b[..b.len() - 1]), 2).count() == 0);
        // The file is named by model and dimensions, under the cache folder.
        let f = file("m", 2);
        assert!(
            f.starts_with(".memdir/cache/vectors-") && f.ends_with(".bin"),
            "{f}"
        );
        assert_ne!(f, file("m", 3));
    }

    // Issue 31 item 6: a vector that cannot be compared is never kept, and a file
    // holding one is corrupt (read as empty, so it is rebuilt).
    #[test]
    fn invalid_vectors_are_refused_and_a_file_holding_one_is_corrupt() {
        for (bad, why) in [
            (vec![0.0, 0.0], "all zeros"),
            (vec![f32::NAN, 1.0], "not a finite number"),
            (vec![f32::INFINITY, 1.0], "not a finite number"),
            (vec![1e20, 1e20], "too long"),
            (vec![1.0], "dimensions"),
        ] {
            assert!(
                vector_problem(&bad, 2).is_some_and(|p| p.contains(why)),
                "{bad:?}"
            );
            let mut v = Vectors::new(2);
            v.insert(text_hash("bad"), bad.clone());
            assert_eq!(v.count(), 0, "{bad:?} was kept");
        }
        assert_eq!(vector_problem(&[3.0, -4.0], 2), None);
        let mut v = Vectors::new(2);
        v.insert(text_hash("a"), vec![1.0, 2.0]);
        v.insert(text_hash("b"), vec![3.0, 4.0]);
        let good = v.encode_if_dirty().unwrap();
        assert_eq!(Vectors::from_bytes(Some(&good), 2).count(), 2);
        // Plant a NaN in the last value of the file.
        let mut bad = good.clone();
        let at = bad.len() - 4;
        bad[at..].copy_from_slice(&f32::NAN.to_le_bytes());
        assert_eq!(Vectors::from_bytes(Some(&bad), 2).count(), 0);
        bad[at..].copy_from_slice(&0f32.to_le_bytes());
        let zeroed = Vectors::from_bytes(Some(&bad), 2);
        // [x, 0] is still a direction: only all zeros is refused.
        assert_eq!(zeroed.count(), 2);
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

    // The rows of the listed hashes come first, in list order, each vector unchanged;
    // a hash listed twice shares its row; unlisted vectors stay; the file's bytes and
    // the generation do not change, and any later change of rows moves the generation.
    #[test]
    fn arrange_puts_the_listed_rows_first_and_changes_nothing_else() {
        let mut v = Vectors::new(2);
        for (t, x) in [("a", 1.0), ("b", 2.0), ("c", 3.0)] {
            v.insert(text_hash(t), vec![x, -x]);
        }
        let bytes = v.encode_if_dirty().unwrap();
        let generation = v.generation();
        let [a, b, c, z] = ["a", "b", "c", "z"].map(text_hash);
        let rows = v.arrange(&[c, z, a, c]);
        assert_eq!(rows, vec![Some(0), None, Some(1), Some(0)]);
        assert_eq!(v.row_normed(0), (&[3.0, -3.0][..], 18f64.sqrt()));
        assert_eq!(v.row_normed(1).0, &[1.0, -1.0][..]);
        assert_eq!(v.get(&b), Some(&[2.0, -2.0][..]));
        assert_eq!(v.count(), 3);
        assert_eq!(v.generation(), generation);
        assert!(v.encode_if_dirty().is_none());
        v.touch();
        assert_eq!(v.encode_if_dirty().unwrap(), bytes);
        v.insert(z, vec![0.5, 0.5]);
        assert_ne!(v.generation(), generation);
        let g = v.generation();
        v.retain([a, z]);
        assert_ne!(v.generation(), g);
        // Dropping rows keeps the others in their order.
        assert!(v.row_of(&c).is_none());
        assert!(v.row_of(&a) < v.row_of(&z));
        assert_eq!(v.arrange(&[z, b, a]), vec![Some(0), None, Some(1)]);
        assert_eq!(v.row_normed(0).0, &[0.5, 0.5][..]);
    }
}
