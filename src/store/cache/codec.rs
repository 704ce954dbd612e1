//! The binary format of the search index (`MDX5`, spec/architecture.md#search-index):
//! a header (version, generation, base, vocabulary, removals) and chunks of entries,
//! each prefixed by its length so that chunks are encoded and decoded on several
//! threads, every part followed or prefixed by its CRC-32. It must not read or write
//! files, nor decide what is saved (`delta` does); bytes it cannot decode are `None`,
//! never a panic, and a part whose checksum fails is dropped, never decoded.

use crate::retrieval::search::DocData;
use crate::store::Stat;
use crate::store::cache::{Entry, IndexFile, Item, Saved};

/// The header of an index file: everything before the chunks.
pub(super) fn encode_head(
    version: &str,
    generation: u64,
    (base, vocab_start): (u64, u32),
    terms: &[String],
    removed: &[String],
    chunks: usize,
) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    w.0.extend_from_slice(MAGIC);
    w.str(version);
    w.u64(generation);
    w.u64(base);
    w.u32(vocab_start);
    w.strs(terms);
    w.strs(removed);
    w.u64(chunks as u64);
    let crc = crc32fast::hash(&w.0);
    w.u32(crc);
    w.0
}

/// Bytes before a chunk's entries: its length (8) and its CRC-32 (4).
const CHUNK_HEAD: usize = 12;

/// One chunk of entries, prefixed by its length in bytes and the CRC-32 of that
/// length and the entries.
pub(super) fn encode_chunk<E: EncodeEntry>(entries: &[E]) -> Vec<u8> {
    // Room for the length and the checksum, filled in once known.
    let mut c = Writer(vec![0; CHUNK_HEAD]);
    c.u64(entries.len() as u64);
    for e in entries {
        e.encode_entry(&mut c);
    }
    let len = ((c.0.len() - CHUNK_HEAD) as u64).to_le_bytes();
    c.0[..8].copy_from_slice(&len);
    let crc = chunk_crc(&len, &c.0[CHUNK_HEAD..]);
    c.0[8..CHUNK_HEAD].copy_from_slice(&crc.to_le_bytes());
    c.0
}

/// The checksum of a chunk: CRC-32 of its length's bytes, then its entries.
fn chunk_crc(len: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(len);
    h.update(payload);
    h.finalize()
}

/// What can be written as one entry of an index file: a saved entry, or a file of a
/// load (the same bytes as its [`Saved::of`]).
pub(super) trait EncodeEntry {
    fn encode_entry(&self, w: &mut Writer);
}

impl EncodeEntry for Saved {
    fn encode_entry(&self, w: &mut Writer) {
        self.encode(w);
    }
}

impl EncodeEntry for &Item<'_> {
    fn encode_entry(&self, w: &mut Writer) {
        let stat = self.stat.unwrap_or_default();
        w.str(self.file);
        encode_stat(w, &stat, self.checked);
        w.str(self.key);
        // The text in its parts, as one string.
        w.u64(self.text.iter().map(|p| p.len()).sum::<usize>() as u64);
        for p in self.text {
            w.0.extend_from_slice(p.as_bytes());
        }
        Entry::from_meta(self.meta, self.warnings).encode(w);
        encode_opt_data(w, self.data);
    }
}

fn encode_stat(w: &mut Writer, stat: &Stat, checked: i64) {
    w.u64(stat.size);
    w.u64(stat.mtime_ns as u64);
    w.u64(stat.ctime_ns as u64);
    w.u64(stat.ino);
    w.u64(checked as u64);
}

fn encode_opt_data(w: &mut Writer, data: Option<&DocData>) {
    match data {
        None => w.0.push(0),
        Some(d) => {
            w.0.push(1);
            encode_data(w, d);
        }
    }
}

const MAGIC: &[u8; 4] = b"MDX5";

pub(super) struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, n: u64) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn u32(&mut self, n: u32) {
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt(&mut self, s: &Option<String>) {
        match s {
            None => self.0.push(0),
            Some(s) => {
                self.0.push(1);
                self.str(s);
            }
        }
    }
    fn strs(&mut self, v: &[String]) {
        self.u64(v.len() as u64);
        for s in v {
            self.str(s);
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn str(&mut self) -> Option<String> {
        let n = usize::try_from(self.u64()?).ok()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
    fn opt(&mut self) -> Option<Option<String>> {
        match self.byte()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }
    /// A count of items of at least `size` bytes each (bounded by what is left).
    fn count_of(&mut self, size: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.0.len() / size.max(1)).then_some(n)
    }
    fn count(&mut self) -> Option<usize> {
        self.count_of(8)
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        (0..self.count()?).map(|_| self.str()).collect()
    }
    fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.count_of(4)?;
        let b = self.take(n * 4)?;
        Some(
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect(),
        )
    }
}

impl Entry {
    fn encode(&self, w: &mut Writer) {
        w.str(&self.name);
        w.str(&self.description);
        w.str(&self.kind);
        w.str(&self.created);
        w.str(&self.updated);
        w.opt(&self.source);
        w.opt(&self.decay);
        w.strs(&self.tags);
        w.0.push(u8::from(self.important));
        w.strs(&self.supersedes);
        w.opt(&self.valid_until);
        w.strs(&self.order);
        w.u64(self.extra.len() as u64);
        for (k, v) in &self.extra {
            w.str(k);
            w.str(&v.to_string());
        }
        w.u64(self.warnings.len() as u64);
        for (line, msg) in &self.warnings {
            w.u64(*line as u64);
            w.str(msg);
        }
    }

    fn decode(r: &mut Reader<'_>) -> Option<Entry> {
        Some(Entry {
            name: r.str()?,
            description: r.str()?,
            kind: r.str()?,
            created: r.str()?,
            updated: r.str()?,
            source: r.opt()?,
            decay: r.opt()?,
            tags: r.strs()?,
            important: match r.byte()? {
                0 => false,
                1 => true,
                _ => return None,
            },
            supersedes: r.strs()?,
            valid_until: r.opt()?,
            order: r.strs()?,
            extra: (0..r.count()?)
                .map(|_| Some((r.str()?, serde_json::from_str(&r.str()?).ok()?)))
                .collect::<Option<_>>()?,
            warnings: (0..r.count()?)
                .map(|_| Some((usize::try_from(r.u64()?).ok()?, r.str()?)))
                .collect::<Option<_>>()?,
        })
    }
}

fn encode_data(w: &mut Writer, d: &DocData) {
    w.u64(d.tf.len() as u64);
    for &(t, f) in &d.tf {
        w.u32(t);
        w.0.extend_from_slice(&f.to_le_bytes());
    }
    w.0.extend_from_slice(&d.len.to_le_bytes());
    w.u64(d.tokens.len() as u64);
    for &t in &d.tokens {
        w.u32(t);
    }
    w.u64(d.lines.len() as u64);
    for &(end, label, tag) in &d.lines {
        w.u32(end);
        w.u32(label);
        w.u32(tag);
    }
    w.u64(d.line_df.len() as u64);
    for &(t, n) in &d.line_df {
        w.u32(t);
        w.u32(n);
    }
    w.u32(d.n_lines);
}

/// Skips the term data of an entry, checking only that it is all there.
fn skip_data(r: &mut Reader<'_>) -> Option<()> {
    let n = r.count_of(12)?;
    r.take(n * 12)?;
    r.take(8)?;
    let n = r.count_of(4)?;
    r.take(n * 4)?;
    let n = r.count_of(12)?;
    r.take(n * 12)?;
    let n = r.count_of(8)?;
    r.take(n * 8)?;
    r.take(4)?;
    Some(())
}

fn decode_data(r: &mut Reader<'_>) -> Option<DocData> {
    let n = r.count_of(12)?;
    let mut tf = Vec::with_capacity(n);
    for _ in 0..n {
        let t = r.u32()?;
        let f = f64::from_le_bytes(r.take(8)?.try_into().ok()?);
        tf.push((t, f));
    }
    let len = f64::from_le_bytes(r.take(8)?.try_into().ok()?);
    let tokens = r.u32s()?;
    let n = r.count_of(12)?;
    let mut lines = Vec::with_capacity(n);
    for _ in 0..n {
        lines.push((r.u32()?, r.u32()?, r.u32()?));
    }
    let n = r.count_of(8)?;
    let mut line_df = Vec::with_capacity(n);
    for _ in 0..n {
        line_df.push((r.u32()?, r.u32()?));
    }
    Some(DocData {
        tf,
        len,
        tokens,
        lines,
        line_df,
        n_lines: r.u32()?,
    })
}

/// Entries per chunk of an index file.
pub(super) const CHUNK: usize = 512;

impl Saved {
    fn encode(&self, w: &mut Writer) {
        w.str(&self.file);
        encode_stat(w, &self.stat, self.checked);
        w.str(&self.key);
        w.str(&self.text);
        self.meta.encode(w);
        encode_opt_data(w, self.data.as_ref());
    }

    /// Decodes an entry; its term data only given the size of the vocabulary it
    /// may use (data that uses more, or is malformed, is dropped: read again).
    fn decode(r: &mut Reader<'_>, terms: Option<usize>) -> Option<Saved> {
        let file = r.str()?;
        let stat = Stat {
            size: r.u64()?,
            mtime_ns: r.i64()?,
            ctime_ns: r.i64()?,
            ino: r.u64()?,
        };
        let checked = r.i64()?;
        let key = r.str()?;
        let text = r.str()?;
        let meta = Entry::decode(r)?;
        let (data, has_data) = match (r.byte()?, terms) {
            (0, _) => (None, false),
            (1, Some(n)) => {
                let d = decode_data(r)?;
                if d.is_valid(n) {
                    (Some(d), true)
                } else {
                    (None, false)
                }
            }
            (1, None) => {
                skip_data(r)?;
                (None, true)
            }
            _ => return None,
        };
        Some(Saved {
            file,
            stat,
            checked,
            key,
            text,
            meta,
            data,
            has_data,
        })
    }
}

/// Decodes chunks of entries, on as many threads as there are cores (up to 8); a
/// chunk that does not decode is left out (`false` then: the file was damaged).
fn decode_chunks(chunks: &[&[u8]], with_terms: Option<usize>) -> (Vec<Saved>, bool) {
    let one = |c: &[u8]| -> Option<Vec<Saved>> {
        let mut r = Reader(c);
        let n = r.count_of(1)?;
        // Bounded by the chunk's bytes (one byte per entry at least).
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(Saved::decode(&mut r, with_terms)?);
        }
        r.0.is_empty().then_some(out)
    };
    let parts: Vec<Option<Vec<Saved>>> = crate::store::par_map(chunks, 2, |c| one(c));
    let whole = parts.iter().all(Option::is_some);
    let mut out = Vec::with_capacity(parts.iter().flatten().map(Vec::len).sum());
    for p in parts.into_iter().flatten() {
        out.extend(p);
    }
    (out, whole)
}

impl IndexFile {
    pub(super) fn encode(&self) -> Vec<u8> {
        self.encode_parts().concat()
    }

    /// The encoded file in parts that, written one after the other, are the file:
    /// the header, then each chunk of entries prefixed by its length in bytes (so
    /// that chunks can be decoded on several threads; they are encoded on several).
    fn encode_parts(&self) -> Vec<Vec<u8>> {
        let chunks: Vec<&[Saved]> = self.entries.chunks(CHUNK).collect();
        let head = encode_head(
            &self.version,
            self.generation,
            (self.base, self.vocab_start),
            &self.terms,
            &self.removed,
            chunks.len(),
        );
        let mut parts = vec![head];
        parts.extend(crate::store::par_map(&chunks, 2, |chunk| {
            encode_chunk(chunk)
        }));
        parts
    }

    #[cfg(test)]
    fn decode(bytes: &[u8]) -> Option<IndexFile> {
        IndexFile::decode_with(bytes, true)
    }

    /// Decodes an index file; the term data only with `terms` (it is skipped, and
    /// the entry says it has some, otherwise). `None` when the header is not this
    /// version's or fails its checksum; a chunk that fails its checksum (or is cut
    /// short) is left out, with `damaged` set, and its entries are read again from
    /// the memory files.
    pub(super) fn decode_with(bytes: &[u8], with_terms: bool) -> Option<IndexFile> {
        let mut r = Reader(bytes.strip_prefix(MAGIC)?);
        let version = r.str()?;
        if version != env!("CARGO_PKG_VERSION") {
            return None;
        }
        let generation = r.u64()?;
        let base = r.u64()?;
        let vocab_start = r.u32()?;
        let terms = r.strs()?;
        let removed = r.strs()?;
        let count = r.u64()?;
        let head_len = bytes.len() - r.0.len();
        if r.u32()? != crc32fast::hash(&bytes[..head_len]) {
            return None;
        }
        let (chunks, framed) = split_chunks(&mut r, count);
        let vocab = with_terms.then(|| vocab_start as usize + terms.len());
        let (entries, whole) = decode_chunks(&chunks, vocab);
        Some(IndexFile {
            version,
            generation,
            base,
            vocab_start,
            terms,
            entries,
            removed,
            damaged: !(framed && whole && r.0.is_empty()),
        })
    }
}

/// The `count` chunks after the header whose checksums hold, and whether every one
/// did. Chunks are read until one's length runs past the end: those after it cannot
/// be found.
fn split_chunks<'a>(r: &mut Reader<'a>, count: u64) -> (Vec<&'a [u8]>, bool) {
    let mut chunks = Vec::new();
    let mut whole = true;
    for _ in 0..count {
        let Some(len) = r.take(8) else {
            return (chunks, false);
        };
        let n = u64::from_le_bytes(len.try_into().expect("8 bytes"));
        let (Some(crc), Some(payload)) = (r.u32(), usize::try_from(n).ok().and_then(|n| r.take(n)))
        else {
            return (chunks, false);
        };
        if chunk_crc(len, payload) == crc {
            chunks.push(payload);
        } else {
            whole = false;
        }
    }
    (chunks, whole)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Meta;
    use crate::memory::frontmatter::Warning;

    fn entry(i: usize) -> Entry {
        Entry {
            name: format!("name {i} ünï"),
            description: "d".into(),
            kind: "user".into(),
            created: "2026-01-01".into(),
            updated: "2026-01-02T10:00:00Z".into(),
            source: i.is_multiple_of(2).then(|| "chat".into()),
            decay: Some("30d".into()),
            tags: vec!["a".into(), "b".into()],
            important: i.is_multiple_of(3),
            supersedes: vec!["older".into()],
            valid_until: i.is_multiple_of(2).then(|| "2026-12-31".into()),
            order: vec!["name".into(), "owner".into()],
            extra: vec![("owner".into(), serde_json::json!({"team": [1, "x"]}))],
            warnings: vec![(4, "unknown type".into())],
        }
    }

    /// Term data small enough to write out.
    fn data() -> DocData {
        DocData {
            tf: vec![(0, 3.0), (1, 1.5)],
            len: 4.5,
            tokens: vec![1, 0, 1],
            lines: vec![(2, 1, 0), (2, 0, 0), (3, 0, 1)],
            line_df: vec![(0, 1), (1, 2)],
            n_lines: 2,
        }
    }

    #[test]
    fn entries_encoded_from_items_are_those_of_their_saved_copies() {
        // A main file is streamed from the items; it must be the file their
        // `Saved` copies encode to, byte for byte.
        let metas: Vec<(Meta, Vec<Warning>)> =
            (0..1100).map(|i| entry(i).into_meta().unwrap()).collect();
        let data = data();
        let names: Vec<(String, String)> = (0..metas.len())
            .map(|i| (format!("k{i}.md"), format!("{i:064}")))
            .collect();
        let items: Vec<Item<'_>> = metas
            .iter()
            .zip(&names)
            .enumerate()
            .map(|(i, ((meta, warnings), (file, key)))| Item {
                file,
                stat: (i % 7 != 3).then_some(Stat {
                    size: i as u64,
                    mtime_ns: -1,
                    ctime_ns: 1 << 60,
                    ino: 9,
                }),
                checked: 12,
                key,
                text: [
                    "---\nx\n---\n",
                    "body ünï",
                    if i % 2 == 0 { "\n" } else { "" },
                ],
                meta,
                warnings,
                data: (i % 3 != 0).then_some(&data),
            })
            .collect();
        let kept: Vec<&Item<'_>> = items.iter().filter(|it| it.stat.is_some()).collect();
        let chunks: Vec<&[&Item<'_>]> = kept.chunks(CHUNK).collect();
        assert!(chunks.len() > 1);
        let terms = vec!["alpha".to_string(), "beta".to_string()];
        let mut streamed = encode_head("v", 3, (0, 0), &terms, &[], chunks.len());
        for c in &chunks {
            streamed.extend(encode_chunk(c));
        }
        let whole = IndexFile {
            version: "v".into(),
            generation: 3,
            base: 0,
            vocab_start: 0,
            terms,
            entries: items.iter().filter_map(Saved::of).collect(),
            removed: Vec::new(),
            damaged: false,
        };
        assert_eq!(streamed, whole.encode());
    }

    #[test]
    fn the_format_round_trips_and_rejects_damage() {
        let f = IndexFile {
            version: env!("CARGO_PKG_VERSION").into(),
            generation: 7,
            base: 0,
            vocab_start: 0,
            terms: vec!["alpha".into(), "beta".into()],
            entries: (0..5)
                .map(|i| Saved {
                    file: format!("k{i}.md"),
                    stat: Stat {
                        size: i as u64,
                        mtime_ns: -1,
                        ctime_ns: 1 << 60,
                        ino: 9,
                    },
                    checked: 12,
                    key: format!("{i:064}"),
                    text: "---\nx\n---\nbody ünï".into(),
                    meta: entry(i),
                    data: i.is_multiple_of(2).then(data),
                    has_data: i.is_multiple_of(2),
                })
                .collect(),
            removed: vec!["gone.md".into()],
            damaged: false,
        };
        let bytes = f.encode();
        let head_len = bytes.len() - f.encode_parts()[1..].iter().map(Vec::len).sum::<usize>();
        // Without terms, the data is skipped and said to be there.
        let lean = IndexFile::decode_with(&bytes, false).unwrap();
        assert!(lean.entries.iter().all(|e| e.data.is_none()));
        assert_eq!(
            lean.entries.iter().map(|e| e.has_data).collect::<Vec<_>>(),
            f.entries.iter().map(|e| e.has_data).collect::<Vec<_>>()
        );
        assert_eq!(IndexFile::decode(&bytes), Some(f));
        // Any truncation: the header cut is no file, a chunk cut is left out (a
        // damaged file); never a panic.
        for cut in 0..bytes.len() {
            match IndexFile::decode(&bytes[..cut]) {
                None => assert!(cut < head_len, "cut at {cut}"),
                Some(d) => {
                    assert!(cut >= head_len && d.damaged, "cut at {cut}");
                    assert!(d.entries.is_empty(), "one chunk: cut at {cut}");
                }
            }
        }
        // A flipped bit: in the header, no file; in a chunk, the chunk is left out.
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << (at % 8);
            match IndexFile::decode(&bad) {
                None => assert!(at < head_len, "bit at {at}"),
                Some(d) => assert!(at >= head_len && d.damaged && d.entries.is_empty()),
            }
        }
        let mut other = bytes.clone();
        other[12] ^= 0x20; // the first byte of the version string
        assert_eq!(IndexFile::decode(&other), None);
        let mut w = Writer(MAGIC.to_vec());
        w.str(env!("CARGO_PKG_VERSION"));
        w.u64(1);
        w.u64(0);
        w.u32(0);
        w.u64(u64::MAX);
        assert_eq!(IndexFile::decode(&w.0), None);
    }
}
