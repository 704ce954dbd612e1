//! The binary format of the search index (`MDX8`, spec/architecture.md#search-index):
//! a header (version, generation, base, vocabulary, removals), the term counts of the
//! main file's memories, and chunks of entries,
//! each prefixed by its length so that chunks are encoded and decoded on several
//! threads, every part followed or prefixed by its CRC-32. Chunks start at multiples
//! of 8 bytes and every array of term data at a multiple of its item's alignment, so
//! that a mapped file's arrays are read in place ([`Arr`]). It must not read or write
//! files, nor decide what is saved (`delta` does); bytes it cannot decode are `None`,
//! never a panic, and a part whose checksum fails is dropped, never decoded.

use std::sync::Arc;

use crate::memory::SharedStr;
use crate::retrieval::search::{Arr, ArrItem, Counts, DocData, SharedBytes};
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
    // Zeros up to the first chunk, which starts at a multiple of 8.
    w.align(ALIGN);
    w.0
}

/// Bytes before a chunk's entries: its length (8), its CRC-32 (4) and four zeros.
const CHUNK_HEAD: usize = 16;

/// Chunks start, and end, at multiples of this many bytes of the file.
const ALIGN: usize = 8;

/// One chunk of entries, prefixed by its length in bytes and the CRC-32 of that
/// length and the entries.
pub(super) fn encode_chunk<E: EncodeEntry>(entries: &[E]) -> Vec<u8> {
    encode_chunk_into(entries, Vec::new())
}

/// [`encode_chunk`] into `buf` (cleared first): a writer that encodes chunk after
/// chunk hands the same buffers back, so that their memory, once grown, is reused
/// instead of taken fresh (and zeroed by the system) for every chunk.
pub(super) fn encode_chunk_into<E: EncodeEntry>(entries: &[E], mut buf: Vec<u8>) -> Vec<u8> {
    buf.clear();
    // Room for the length and the checksum, filled in once known.
    buf.resize(CHUNK_HEAD, 0);
    let mut c = Writer(buf);
    c.u64(entries.len() as u64);
    for e in entries {
        e.encode_entry(&mut c);
    }
    framed(c)
}

/// The term counts of a main file's memories with data ([`Counts`]), framed as a
/// chunk is; a delta's part holds none. The payload: whether there are counts (8),
/// the lines and line tokens (8 each), then the memory and line frequencies as
/// arrays of 4-byte words.
pub(super) fn encode_counts(counts: Option<&Counts>) -> Vec<u8> {
    let mut c = Writer(vec![0; CHUNK_HEAD]);
    match counts {
        None => c.u64(0),
        Some(n) => {
            c.u64(1);
            c.u64(n.n_lines as u64);
            c.u64(n.line_tokens as u64);
            c.words(n.df.len(), n.df.iter().copied());
            c.words(n.line_df.len(), n.line_df.iter().copied());
        }
    }
    framed(c)
}

/// A part whose payload follows [`CHUNK_HEAD`] bytes, padded to [`ALIGN`] and with
/// its length and checksum filled in.
fn framed(mut c: Writer) -> Vec<u8> {
    c.align(ALIGN);
    let len = ((c.0.len() - CHUNK_HEAD) as u64).to_le_bytes();
    c.0[..8].copy_from_slice(&len);
    let crc = chunk_crc(&len, &c.0[CHUNK_HEAD..]);
    c.0[8..12].copy_from_slice(&crc.to_le_bytes());
    c.0
}

/// The counts of [`encode_counts`] from its payload, for a vocabulary of `terms`;
/// `None` when there are none or they are malformed or of another vocabulary.
fn decode_counts(payload: &[u8], file: &[u8], terms: usize) -> Option<Counts> {
    let mut r = Reader::new(payload, file);
    if r.u64()? != 1 {
        return None;
    }
    let n_lines = usize::try_from(r.u64()?).ok()?;
    let line_tokens = usize::try_from(r.u64()?).ok()?;
    let mut words = || -> Option<Vec<u32>> {
        let n = r.count_of(4)?;
        let raw = r.array(n, 4, 4)?;
        Some(raw.chunks_exact(4).map(<u32 as ArrItem>::from_le).collect())
    };
    let (df, line_df) = (words()?, words()?);
    r.align(ALIGN)?;
    (r.rest.is_empty() && df.len() == terms && line_df.len() == terms).then_some(Counts {
        df,
        line_df,
        n_lines,
        line_tokens,
    })
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

impl EncodeEntry for Box<Saved> {
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
        w.str(self.text);
        encode_body(w, crate::memory::frontmatter::body_span(self.text));
        Entry::from_meta(self.meta, self.warnings).encode(w);
        encode_opt_data(w, self.data);
    }
}

/// Where an entry's body is in its text, when it has one (`frontmatter::body_span`).
fn encode_body(w: &mut Writer, body: Option<(usize, usize)>) {
    match body {
        None => w.0.push(0),
        Some((start, end)) => {
            w.0.push(1);
            w.u64(start as u64);
            w.u64(end as u64);
        }
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

const MAGIC: &[u8; 4] = b"MDX8";

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
    /// Zeros up to the next multiple of `n` bytes (of the chunk, which starts at a
    /// multiple of 8 in the file).
    fn align(&mut self, n: usize) {
        let pad = self.0.len().next_multiple_of(n) - self.0.len();
        self.0.resize(self.0.len() + pad, 0);
    }
    /// An array of `count` items made of 4-byte words (`words`, every item's in
    /// turn): the count, then the words from a multiple of 4.
    fn words(&mut self, count: usize, words: impl Iterator<Item = u32>) {
        self.u64(count as u64);
        self.align(4);
        for x in words {
            self.u32(x);
        }
    }
}

/// A reader of part of a file: the bytes left, and where the file starts in memory
/// (positions in the file decide the padding before an array).
#[derive(Clone, Copy)]
struct Reader<'a> {
    rest: &'a [u8],
    file: usize,
}

impl<'a> Reader<'a> {
    /// A reader of `part`, a slice of the file that starts at `file`.
    fn new(part: &'a [u8], file: &[u8]) -> Reader<'a> {
        Reader {
            rest: part,
            file: file.as_ptr() as usize,
        }
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(head)
    }
    /// Skips the zeros up to the next multiple of `n` bytes of the file (`None`
    /// when they are missing or not zeros).
    fn align(&mut self, n: usize) -> Option<()> {
        let at = (self.rest.as_ptr() as usize).checked_sub(self.file)?;
        let pad = at.next_multiple_of(n) - at;
        self.take(pad)?.iter().all(|&b| b == 0).then_some(())
    }
    /// An array of `n` items of `size` bytes, after its padding to a multiple of
    /// `align`.
    fn array(&mut self, n: usize, size: usize, align: usize) -> Option<&'a [u8]> {
        self.align(align)?;
        self.take(n.checked_mul(size)?)
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
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
    /// The bytes of a string, in place.
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
    /// A string read in place from `shared` (the file's bytes) when given, else
    /// copied.
    fn text(&mut self, shared: Option<&SharedBytes>) -> Option<SharedStr> {
        let n = usize::try_from(self.u64()?).ok()?;
        let raw = self.take(n)?;
        match shared {
            Some(b) => SharedStr::read(b, raw),
            None => Some(String::from_utf8(raw.to_vec()).ok()?.into()),
        }
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
        (n <= self.rest.len() / size.max(1)).then_some(n)
    }
    fn count(&mut self) -> Option<usize> {
        self.count_of(8)
    }
    fn strs(&mut self) -> Option<Vec<String>> {
        (0..self.count()?).map(|_| self.str()).collect()
    }
    /// [`Reader::strs`] as a shared list: `last` (the list decoded before) again when
    /// the strings are its, else a new one, which becomes `last`.
    fn strs_shared(&mut self, last: &mut Option<Arc<[String]>>) -> Option<Arc<[String]>> {
        let n = self.count()?;
        if let Some(l) = last.as_ref().filter(|l| l.len() == n) {
            let mut probe = *self;
            if l.iter().all(|s| probe.bytes() == Some(s.as_bytes())) {
                *self = probe;
                return Some(Arc::clone(l));
            }
        }
        let v: Arc<[String]> = (0..n).map(|_| self.str()).collect::<Option<_>>()?;
        *last = Some(Arc::clone(&v));
        Some(v)
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

    /// `order` is the key order decoded last, shared when this entry's is the same.
    fn decode(r: &mut Reader<'_>, order: &mut Option<Arc<[String]>>) -> Option<Entry> {
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
            order: r.strs_shared(order)?,
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
    w.words(d.tf_terms.len(), d.tf_terms.iter().copied());
    w.align(8);
    for f in &d.tf_weights {
        w.0.extend_from_slice(&f.to_le_bytes());
    }
    w.0.extend_from_slice(&d.len.to_le_bytes());
    w.words(d.tokens.len(), d.tokens.iter().copied());
    w.words(d.lines.len(), d.lines.iter().flatten().copied());
    w.words(d.line_df.len(), d.line_df.iter().flatten().copied());
    w.u32(d.n_lines);
}

/// The arrays of an entry's term data, as bytes of the file: field terms and
/// weights, length, tokens, lines, line frequencies, lines with terms.
struct RawData<'a> {
    tf_terms: &'a [u8],
    tf_weights: &'a [u8],
    len: f64,
    tokens: &'a [u8],
    lines: &'a [u8],
    line_df: &'a [u8],
    n_lines: u32,
}

/// Reads the term data of an entry as bytes of the file, checking only that it is
/// all there and its padding zeros.
fn raw_data<'a>(r: &mut Reader<'a>) -> Option<RawData<'a>> {
    let n = r.count_of(12)?;
    let tf_terms = r.array(n, 4, 4)?;
    let tf_weights = r.array(n, 8, 8)?;
    let len = f64::from_le_bytes(r.take(8)?.try_into().ok()?);
    let n = r.count_of(4)?;
    let tokens = r.array(n, 4, 4)?;
    let n = r.count_of(12)?;
    let lines = r.array(n, 12, 4)?;
    let n = r.count_of(8)?;
    let line_df = r.array(n, 8, 4)?;
    Some(RawData {
        tf_terms,
        tf_weights,
        len,
        tokens,
        lines,
        line_df,
        n_lines: r.u32()?,
    })
}

/// The term data of an entry: its arrays read in place from `shared` (the file's
/// bytes) where they can be, copied otherwise.
fn decode_data(r: &mut Reader<'_>, shared: Option<&SharedBytes>) -> Option<DocData> {
    let raw = raw_data(r)?;
    fn arr<T: ArrItem>(shared: Option<&SharedBytes>, raw: &[u8]) -> Option<Arr<T>> {
        match shared {
            Some(b) => Arr::read(b, raw),
            None => Some(Arr::copied(raw)),
        }
    }
    Some(DocData {
        tf_terms: arr(shared, raw.tf_terms)?,
        tf_weights: arr(shared, raw.tf_weights)?,
        len: raw.len,
        tokens: arr(shared, raw.tokens)?,
        lines: arr(shared, raw.lines)?,
        line_df: arr(shared, raw.line_df)?,
        n_lines: raw.n_lines,
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
        encode_body(w, self.body);
        self.meta.encode(w);
        encode_opt_data(w, self.data.as_ref());
    }

    /// Decodes an entry; its term data only given the size of the vocabulary it
    /// may use (data that uses more, or is malformed, is dropped: read again), and
    /// its key order shared with `order`'s when the same ([`Reader::strs_shared`]).
    fn decode(
        r: &mut Reader<'_>,
        shared: Option<&SharedBytes>,
        terms: Option<usize>,
        dropped: &mut bool,
        order: &mut Option<Arc<[String]>>,
    ) -> Option<Saved> {
        let file = r.str()?;
        let stat = Stat {
            size: r.u64()?,
            mtime_ns: r.i64()?,
            ctime_ns: r.i64()?,
            ino: r.u64()?,
        };
        let checked = r.i64()?;
        let key = r.str()?;
        let text = r.text(shared)?;
        // Where the body is, found when the entry was saved (`body_span`); a span
        // that is not one of the text (a damaged file) is not decoded.
        let body = match r.byte()? {
            0 => None,
            1 => {
                let start = usize::try_from(r.u64()?).ok()?;
                let end = usize::try_from(r.u64()?).ok()?;
                let fits = start <= end && text.get(start..end).is_some();
                Some(fits.then_some((start, end))?)
            }
            _ => return None,
        };
        let meta = Entry::decode(r, order)?;
        let (data, has_data) = match (r.byte()?, terms) {
            (0, _) => (None, false),
            (1, Some(vocab)) => {
                let d = decode_data(r, shared)?;
                if d.is_valid(vocab) {
                    (Some(d), true)
                } else {
                    *dropped = true;
                    (None, false)
                }
            }
            (1, None) => {
                raw_data(r)?;
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
            body,
            meta,
            data,
            has_data,
        })
    }
}

/// Entries of decoded chunks, and whether any entry's term data was dropped.
#[allow(clippy::vec_box)] // see `IndexFile::entries`
type Decoded = (Vec<Box<Saved>>, bool);

/// Checks and decodes chunks of entries (slices of `file`), on as many threads as
/// there are cores (up to 8); a chunk whose checksum fails or that does not decode
/// is left out (`false` then: the file was damaged). Also says whether an entry's
/// term data was dropped (it uses terms past the vocabulary).
fn decode_chunks(
    file: &[u8],
    chunks: &[Framed<'_>],
    shared: Option<&SharedBytes>,
    with_terms: Option<usize>,
) -> (Decoded, bool) {
    let one = |c: &Framed<'_>| -> Option<Decoded> {
        // A chunk whose checksum fails is left out, never decoded.
        let mut r = Reader::new(c.checked()?, file);
        let n = r.count_of(1)?;
        // Bounded by the chunk's bytes (one byte per entry at least).
        let mut out = Vec::with_capacity(n);
        let mut dropped = false;
        let mut order = None;
        for _ in 0..n {
            out.push(Box::new(Saved::decode(
                &mut r,
                shared,
                with_terms,
                &mut dropped,
                &mut order,
            )?));
        }
        // Zeros up to the chunk's end, at a multiple of 8.
        r.align(ALIGN)?;
        r.rest.is_empty().then_some((out, dropped))
    };
    let parts: Vec<Option<Decoded>> = crate::store::par_map(chunks, 2, |c| one(c));
    let whole = parts.iter().all(Option::is_some);
    let mut out = Vec::with_capacity(parts.iter().flatten().map(|p| p.0.len()).sum());
    let mut dropped = false;
    for (p, d) in parts.into_iter().flatten() {
        out.extend(p);
        dropped |= d;
    }
    ((out, dropped), whole)
}

impl IndexFile {
    pub(super) fn encode(&self) -> Vec<u8> {
        self.encode_parts().concat()
    }

    /// The encoded file in parts that, written one after the other, are the file:
    /// the header, then each chunk of entries prefixed by its length in bytes (so
    /// that chunks can be decoded on several threads; they are encoded on several).
    fn encode_parts(&self) -> Vec<Vec<u8>> {
        let chunks: Vec<&[Box<Saved>]> = self.entries.chunks(CHUNK).collect();
        let head = encode_head(
            &self.version,
            self.generation,
            (self.base, self.vocab_start),
            &self.terms,
            &self.removed,
            chunks.len(),
        );
        let mut parts = vec![head, encode_counts(self.counts.as_ref())];
        parts.extend(crate::store::par_map(&chunks, 2, |chunk| {
            encode_chunk(chunk)
        }));
        parts
    }

    #[cfg(test)]
    fn decode(bytes: &[u8]) -> Option<IndexFile> {
        IndexFile::decode_with(bytes, None, true)
    }

    /// [`IndexFile::decode_with`] of the shared bytes of a mapped file, whose term
    /// data is then read in place where it can be.
    pub(super) fn decode_shared(shared: &SharedBytes, with_terms: bool) -> Option<IndexFile> {
        IndexFile::decode_with((**shared).as_ref(), Some(shared), with_terms)
    }

    /// Decodes an index file; the term data only with `terms` (it is skipped, and
    /// the entry says it has some, otherwise). `None` when the header is not this
    /// version's or fails its checksum; a chunk that fails its checksum (or is cut
    /// short) is left out, with `damaged` set, and its entries are read again from
    /// the memory files.
    pub(super) fn decode_with(
        bytes: &[u8],
        shared: Option<&SharedBytes>,
        with_terms: bool,
    ) -> Option<IndexFile> {
        let mut r = Reader::new(bytes.strip_prefix(MAGIC)?, bytes);
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
        let head_len = bytes.len() - r.rest.len();
        if r.u32()? != crc32fast::hash(&bytes[..head_len]) {
            return None;
        }
        // The zeros up to the first part belong to the header.
        r.align(ALIGN)?;
        // Term data may use the terms up to the file's last.
        let with = with_terms.then(|| vocab_start as usize + terms.len());
        // The counts, framed as a chunk is (the chunks follow them).
        let (counts_part, counts_framed) = split_chunks(&mut r, 1);
        let counts_part = counts_part.first().and_then(Framed::checked);
        let counts_whole = counts_framed && counts_part.is_some();
        let counts = counts_part
            .zip(with)
            .and_then(|(part, n)| decode_counts(part, bytes, n));
        let (chunks, framed) = split_chunks(&mut r, count);
        let ((entries, data_dropped), whole) = decode_chunks(bytes, &chunks, shared, with);
        Some(IndexFile {
            version,
            generation,
            base,
            vocab_start,
            terms,
            counts,
            entries,
            removed,
            damaged: !(counts_whole && framed && whole && r.rest.is_empty()),
            data_dropped,
        })
    }
}

/// A part as framed in the file (a chunk, or the counts): its length's bytes, the
/// checksum recorded, whether the four bytes after it are zeros, and its payload.
struct Framed<'a> {
    len: &'a [u8],
    crc: u32,
    zeros: bool,
    payload: &'a [u8],
}

impl<'a> Framed<'a> {
    /// The payload when its checksum holds (checked on whichever thread decodes it).
    fn checked(&self) -> Option<&'a [u8]> {
        (self.zeros && chunk_crc(self.len, self.payload) == self.crc).then_some(self.payload)
    }
}

/// The `count` parts next (chunks, or the one counts part), as framed, and whether
/// every one was there. Parts are read until one's length runs past the end: those
/// after it cannot be found. Their checksums are not yet checked.
fn split_chunks<'a>(r: &mut Reader<'a>, count: u64) -> (Vec<Framed<'a>>, bool) {
    let mut chunks = Vec::new();
    for _ in 0..count {
        let Some(len) = r.take(8) else {
            return (chunks, false);
        };
        let n = u64::from_le_bytes(len.try_into().expect("8 bytes"));
        let (Some(crc), Some(zeros), Some(payload)) = (
            r.u32(),
            r.take(4),
            usize::try_from(n).ok().and_then(|n| r.take(n)),
        ) else {
            return (chunks, false);
        };
        chunks.push(Framed {
            len,
            crc,
            zeros: zeros == [0; 4],
            payload,
        });
    }
    (chunks, true)
}

#[cfg(test)]
mod tests;
