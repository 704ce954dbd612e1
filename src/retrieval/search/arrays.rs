//! The arrays of a memory's term data ([`Arr`]): owned, or read in place from the
//! bytes of a mapped search index (spec/architecture.md#search-index), so that a
//! one-shot call that loads the index does not copy them into fresh memory. Must not
//! read files: the bytes are handed in.

use std::ops::Deref;
use std::sync::Arc;

pub(crate) use crate::memory::SharedBytes;
use crate::memory::offset_in;

/// An item of a term data array: plain bytes, stored little-endian.
pub trait Item: bytemuck::Pod {
    /// The item from its little-endian bytes (the bytes of `Self`, in order).
    fn from_le(bytes: &[u8]) -> Self;
}

impl Item for u32 {
    fn from_le(b: &[u8]) -> u32 {
        u32::from_le_bytes(b.try_into().expect("4 bytes"))
    }
}

impl Item for f32 {
    fn from_le(b: &[u8]) -> f32 {
        f32::from_le_bytes(b.try_into().expect("4 bytes"))
    }
}

impl Item for f64 {
    fn from_le(b: &[u8]) -> f64 {
        f64::from_le_bytes(b.try_into().expect("8 bytes"))
    }
}

impl<const N: usize> Item for [u32; N]
where
    [u32; N]: bytemuck::Pod,
{
    fn from_le(b: &[u8]) -> [u32; N] {
        std::array::from_fn(|i| <u32 as Item>::from_le(&b[i * 4..i * 4 + 4]))
    }
}

/// An array of term data: a vector, or `len` items at byte `start` of shared bytes.
pub struct Arr<T: Item>(Repr<T>);

enum Repr<T> {
    Owned(Vec<T>),
    Shared {
        bytes: SharedBytes,
        start: usize,
        len: usize,
    },
}

/// Whether arrays can be read in place: the file's little-endian items are this
/// machine's, and a mapped file can be renamed over while mapped (Unix; on Windows a
/// mapping would stop the next save from replacing the file).
pub(crate) const IN_PLACE: bool = cfg!(all(unix, target_endian = "little"));

impl<T: Item> Arr<T> {
    /// The items of `raw` (little-endian, `size_of::<T>()` bytes each, a slice of
    /// `bytes`): read in place when they are aligned for `T`, else copied. `None`
    /// when `raw` is not a whole number of items.
    pub fn read(bytes: &SharedBytes, raw: &[u8]) -> Option<Arr<T>> {
        let size = size_of::<T>();
        if !raw.len().is_multiple_of(size) {
            return None;
        }
        if let Some(start) = offset_in(bytes, raw)
            && IN_PLACE
            && bytemuck::try_cast_slice::<u8, T>(raw).is_ok()
        {
            return Some(Arr(Repr::Shared {
                bytes: Arc::clone(bytes),
                start,
                len: raw.len() / size,
            }));
        }
        Some(Arr::copied(raw))
    }

    /// The items of `raw` (little-endian, a whole number of items), copied.
    pub fn copied(raw: &[u8]) -> Arr<T> {
        Arr(Repr::Owned(
            raw.chunks_exact(size_of::<T>()).map(T::from_le).collect(),
        ))
    }

    /// Whether the items are read in place from shared bytes.
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared { .. })
    }

    /// The same items in a vector of their own (the shared bytes no longer kept).
    pub fn into_owned(self) -> Arr<T> {
        match self.0 {
            Repr::Owned(v) => Arr(Repr::Owned(v)),
            Repr::Shared { .. } => Arr(Repr::Owned(self.to_vec())),
        }
    }
}

impl<T: Item> Deref for Arr<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match &self.0 {
            Repr::Owned(v) => v,
            // Checked to be in range and aligned when read; the bytes never change.
            Repr::Shared { bytes, start, len } => {
                bytemuck::cast_slice(&(**bytes).as_ref()[*start..*start + *len * size_of::<T>()])
            }
        }
    }
}

impl<T: Item> From<Vec<T>> for Arr<T> {
    fn from(v: Vec<T>) -> Arr<T> {
        Arr(Repr::Owned(v))
    }
}

impl<T: Item> Default for Arr<T> {
    fn default() -> Arr<T> {
        Arr(Repr::Owned(Vec::new()))
    }
}

impl<T: Item> Clone for Arr<T> {
    fn clone(&self) -> Arr<T> {
        match &self.0 {
            Repr::Owned(v) => Arr(Repr::Owned(v.clone())),
            Repr::Shared { bytes, start, len } => Arr(Repr::Shared {
                bytes: Arc::clone(bytes),
                start: *start,
                len: *len,
            }),
        }
    }
}

impl<T: Item + std::fmt::Debug> std::fmt::Debug for Arr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Item + PartialEq> PartialEq for Arr<T> {
    fn eq(&self, other: &Arr<T>) -> bool {
        **self == **other
    }
}

impl<'a, T: Item> IntoIterator for &'a Arr<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> std::slice::Iter<'a, T> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(items: &[u32]) -> Vec<u8> {
        items.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn aligned_items_are_read_in_place_and_others_copied() {
        // Eight bytes of padding, then the items: at offset 8 they are aligned for
        // u32 (a vector's buffer is), at offset 9 not.
        let mut raw = vec![0u8; 8];
        raw.extend(le(&[1, 2, 0xdead_beef]));
        raw.push(0);
        let bytes: SharedBytes = Arc::new(raw);
        let all: &[u8] = (*bytes).as_ref();
        let aligned = Arr::<u32>::read(&bytes, &all[8..20]).unwrap();
        assert_eq!(&*aligned, &[1, 2, 0xdead_beef]);
        assert_eq!(aligned.is_shared(), IN_PLACE);
        let moved: Vec<u8> = all[8..20].to_vec();
        let mut odd = vec![0u8; 9];
        odd.extend(&moved);
        let odd_bytes: SharedBytes = Arc::new(odd);
        let odd_all: &[u8] = (*odd_bytes).as_ref();
        let unaligned = Arr::<u32>::read(&odd_bytes, &odd_all[9..21]).unwrap();
        assert!(!unaligned.is_shared());
        assert_eq!(unaligned, aligned);
        // Not a whole number of items.
        assert!(Arr::<u32>::read(&bytes, &all[8..19]).is_none());
        // Not a slice of the shared bytes: copied.
        let elsewhere = Arr::<u32>::read(&bytes, &moved).unwrap();
        assert!(!elsewhere.is_shared());
        assert_eq!(elsewhere, aligned);
        let owned = aligned.clone().into_owned();
        assert!(!owned.is_shared());
        assert_eq!(owned, aligned);
    }

    #[test]
    fn items_of_several_words_read_in_order() {
        let bytes: SharedBytes = Arc::new(le(&[1, 2, 3, 4, 5, 6]));
        let all: &[u8] = (*bytes).as_ref();
        let lines = Arr::<[u32; 3]>::read(&bytes, all).unwrap();
        assert_eq!(&*lines, &[[1, 2, 3], [4, 5, 6]]);
        assert_eq!(&*Arr::<[u32; 3]>::copied(all), &*lines);
        let weights: Vec<u8> = [0.5f64, -2.25]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(&*Arr::<f64>::copied(&weights), &[0.5, -2.25]);
    }
}
