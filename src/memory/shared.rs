//! [`SharedStr`]: a memory's text owned, or read in place from shared bytes (the
//! mapped search index of a one-shot call), so that a load does not copy every
//! memory's text into fresh memory when a call reads only a few of them
//! (spec/architecture.md#search-index). Must not read files: the bytes are handed in.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// Bytes text and arrays can be read from in place (a mapped index file), shared by
/// everything read from them and kept as long as one of those lives. Whoever hands
/// them out promises they never change while shared, and that `as_ref` gives the
/// same slice every time (a map, a vector): memdir replaces an index file only by
/// renaming a new one over it (`store::disk::map`). [`SharedStr`]'s reads rely on both.
pub(crate) type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Where `raw` starts in `bytes`, when it is a slice of them (`None` otherwise): what
/// a text or an array read in place keeps instead of a pointer.
pub(crate) fn offset_in(bytes: &SharedBytes, raw: &[u8]) -> Option<usize> {
    let all: &[u8] = (**bytes).as_ref();
    (raw.as_ptr() as usize)
        .checked_sub(all.as_ptr() as usize)
        .filter(|&at| {
            at.checked_add(raw.len())
                .and_then(|end| all.get(at..end))
                .is_some_and(|s| std::ptr::eq(s, raw))
        })
}

/// Text that is a `String` of its own or valid UTF-8 inside the shared bytes of a
/// mapped index; it reads as a `&str` either way (`Deref`), compares by its text, and
/// is cheap to clone and to slice when shared.
#[derive(Clone)]
pub struct SharedStr(Repr);

#[derive(Clone)]
enum Repr {
    Owned(String),
    Shared {
        bytes: SharedBytes,
        start: usize,
        len: usize,
    },
}

impl SharedStr {
    /// The text of `raw` (a slice of `bytes`), read in place; copied when `raw` is
    /// not a slice of `bytes`. `None` when it is not UTF-8.
    pub(crate) fn read(bytes: &SharedBytes, raw: &[u8]) -> Option<SharedStr> {
        let text = std::str::from_utf8(raw).ok()?;
        Some(match offset_in(bytes, raw) {
            Some(start) => SharedStr(Repr::Shared {
                bytes: Arc::clone(bytes),
                start,
                len: raw.len(),
            }),
            None => SharedStr(Repr::Owned(text.to_string())),
        })
    }

    /// `text`, shared: its slices ([`SharedStr::slice`]) are read in place from it,
    /// and it is freed when the last of them is dropped.
    pub(crate) fn shared(text: String) -> SharedStr {
        let len = text.len();
        SharedStr(Repr::Shared {
            bytes: Arc::new(text),
            start: 0,
            len,
        })
    }

    /// The text as a `&str`.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Owned(s) => s,
            Repr::Shared { bytes, start, len } => {
                let raw = &(**bytes).as_ref()[*start..*start + *len];
                // SAFETY: `read` checked these bytes are UTF-8, `shared` took them
                // from a `String` (and `slice` cuts only at char boundaries of them),
                // and shared bytes never change while shared (`SharedBytes`).
                unsafe { std::str::from_utf8_unchecked(raw) }
            }
        }
    }

    /// The part `range` of the text (byte offsets at char boundaries, as
    /// `&str[range]` takes): in place when shared, copied when owned. Panics where
    /// `&self[range]` would.
    pub fn slice(&self, range: Range<usize>) -> SharedStr {
        let part = &self.as_str()[range.clone()];
        match &self.0 {
            Repr::Owned(_) => SharedStr(Repr::Owned(part.to_string())),
            Repr::Shared { bytes, start, .. } => SharedStr(Repr::Shared {
                bytes: Arc::clone(bytes),
                start: start + range.start,
                len: part.len(),
            }),
        }
    }

    /// The text as a `String` of its own (copied when shared).
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(s) => s,
            Repr::Shared { .. } => self.as_str().to_string(),
        }
    }

    /// Whether the text is read in place from shared bytes.
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared { .. })
    }

    /// The same text owned, so that it no longer keeps the shared bytes (a process
    /// that keeps records for long holds no map).
    pub fn detach(&mut self) {
        if self.is_shared() {
            self.0 = Repr::Owned(self.as_str().to_string());
        }
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Default for SharedStr {
    fn default() -> SharedStr {
        SharedStr(Repr::Owned(String::new()))
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> SharedStr {
        SharedStr(Repr::Owned(s))
    }
}

impl From<&str> for SharedStr {
    fn from(s: &str) -> SharedStr {
        SharedStr(Repr::Owned(s.to_string()))
    }
}

impl From<SharedStr> for String {
    fn from(s: SharedStr) -> String {
        s.into_string()
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq for SharedStr {
    fn eq(&self, other: &SharedStr) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedStr {}

impl std::hash::Hash for SharedStr {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedStr> for &str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<SharedStr> for String {
    fn eq(&self, other: &SharedStr) -> bool {
        self.as_str() == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(b: &[u8]) -> SharedBytes {
        Arc::new(b.to_vec())
    }

    #[test]
    fn text_inside_the_bytes_is_read_in_place_and_sliced_in_place() {
        let bytes = shared("head: ünïcode body\ntail".as_bytes());
        let all: &[u8] = (*bytes).as_ref();
        let s = SharedStr::read(&bytes, &all[6..]).unwrap();
        assert!(s.is_shared());
        assert_eq!(s, "ünïcode body\ntail");
        let body = s.slice(0..s.find('\n').unwrap());
        assert!(body.is_shared());
        assert_eq!(body, "ünïcode body");
        assert_eq!(body.into_string(), "ünïcode body");
        let mut d = s.clone();
        d.detach();
        assert!(!d.is_shared());
        assert_eq!(d, s);
    }

    #[test]
    fn text_outside_the_bytes_is_copied_and_bad_utf8_is_refused() {
        let bytes = shared(b"abc");
        let other = b"xyz".to_vec();
        let s = SharedStr::read(&bytes, &other).unwrap();
        assert!(!s.is_shared());
        assert_eq!(s, "xyz");
        let bad = shared(&[b'a', 0xff, b'b']);
        let all: &[u8] = (*bad).as_ref();
        assert!(SharedStr::read(&bad, all).is_none());
        // A slice of a valid text cut inside a char panics as `&str[..]` does.
        let u = SharedStr::from("é");
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| u.slice(0..1))).is_err());
    }
}
