//! The postings file of the search index (`MDP2`, spec/architecture.md#search-index):
//! the postings of the main file's memories ([`FrozenParts`]) under the main file's
//! generation, so that a one-shot query reads only its terms' postings in place. A
//! header with its CRC-32, a table of where each term's runs start with its own
//! CRC-32 and each term's CRC-32, then the runs, every array at a multiple of its
//! item's alignment. A term's runs are checked against their CRC when a query first
//! needs them (`Frozen::check`). It must not decide when the file is written (`delta`
//! does); bytes it cannot decode are `None`, never a panic.

use std::io::Write;

use crate::memory::layout::SEARCH_POSTINGS_FILE;
use crate::retrieval::search::{
    Arr, ArrItem, DocData, FrozenParts, IN_PLACE, SavedPost, SharedBytes, le_words, runs_crc,
};
use crate::store::Backend;

/// `MDP2` since the line posts keep their positions (`MDP1` left them out).
const MAGIC: &[u8; 4] = b"MDP2";

/// Bytes of a line post.
const LINE_POST: usize = std::mem::size_of::<SavedPost>();

/// Bytes of the header: magic, four zeros, generation, slots, terms, memory
/// posts, line posts, the header's CRC-32 and the table's.
const HEAD: usize = 48;

/// The file of the postings `parts` (of disjoint slots, in slot order: each term's
/// run is theirs one after the other) for the main file of `generation`, written
/// to `w`.
pub(super) fn write(
    w: &mut dyn Write,
    generation: u64,
    parts: &[FrozenParts],
) -> std::io::Result<()> {
    let terms = parts.first().map_or(0, FrozenParts::terms);
    let slots = parts.first().map_or(0, |p| p.slots);
    let total = |f: fn(&FrozenParts, usize) -> u32, t: usize| -> u32 {
        parts.iter().map(|p| f(p, t)).sum()
    };
    let mut table = Vec::with_capacity(4 * (3 * terms + 2));
    for t in 0..=terms {
        table.extend_from_slice(&total(|p, t| p.doc_start[t], t).to_le_bytes());
    }
    for t in 0..=terms {
        table.extend_from_slice(&total(|p, t| p.line_start[t], t).to_le_bytes());
    }
    for t in 0..terms {
        // A whole part's own CRC, else one over the parts' runs.
        let crc = match parts {
            [one] if one.crc.len() == terms => one.crc[t],
            _ => runs_crc(&parts.iter().map(|p| p.runs(t)).collect::<Vec<_>>()),
        };
        table.extend_from_slice(&crc.to_le_bytes());
    }
    let posts = |f: fn(&FrozenParts) -> usize| parts.iter().map(f).sum::<usize>() as u64;
    let mut head = Vec::with_capacity(HEAD);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&[0; 4]);
    head.extend_from_slice(&generation.to_le_bytes());
    head.extend_from_slice(&slots.to_le_bytes());
    head.extend_from_slice(&(terms as u32).to_le_bytes());
    head.extend_from_slice(&posts(|p| p.doc_slot.len()).to_le_bytes());
    head.extend_from_slice(&posts(|p| p.line_post.len()).to_le_bytes());
    let crc = crc32fast::hash(&head);
    head.extend_from_slice(&crc.to_le_bytes());
    head.extend_from_slice(&crc32fast::hash(&table).to_le_bytes());
    w.write_all(&head)?;
    w.write_all(&table)?;
    w.write_all(&[0; 8][..pad8(HEAD + table.len())])?;
    // Each array term after term, each term's run the parts' in turn.
    for t in 0..terms {
        for p in parts {
            words(w, p.runs(t).1)?;
        }
    }
    for t in 0..terms {
        for p in parts {
            words(w, p.runs(t).0)?;
        }
    }
    for t in 0..terms {
        for p in parts {
            words(w, p.runs(t).2)?;
        }
    }
    Ok(())
}

/// Writes items of 4-byte words as their little-endian bytes.
fn words<T: bytemuck::Pod>(w: &mut dyn Write, items: &[T]) -> std::io::Result<()> {
    le_words(items, |b| w.write_all(b))
}

/// Builds and writes the postings file of `docs` (each `(slot, data)`, slots ascending
/// and below `slots`, over `terms` term ids) for the main file of `generation`; the
/// bytes written, 0 when nothing was (failures are ignored: a query then scans).
pub(super) fn save(
    backend: &Backend,
    generation: u64,
    slots: u32,
    terms: usize,
    docs: &[(u32, &DocData)],
) -> u64 {
    // Not read where arrays cannot be read in place (see `Cache::load`).
    if !IN_PLACE {
        return 0;
    }
    // Built once the file can be written (a folder that cannot be written, or a
    // FIFO at the path, costs no build).
    let mut size = 0;
    let written = backend.write_atomic_with(SEARCH_POSTINGS_FILE, |w| {
        let parts = build(slots, terms, docs)
            .ok_or_else(|| std::io::Error::other("no postings for this data"))?;
        size = file_len(&parts);
        write(w, generation, &parts)
    });
    match written {
        Ok(()) => size as u64,
        Err(_) => 0,
    }
}

/// The postings of `docs` as [`save`] builds them, `None` when there are none to
/// write: where arrays cannot be read in place (see `Cache::load`), or for data
/// that does not fit them.
pub(super) fn build(
    slots: u32,
    terms: usize,
    docs: &[(u32, &DocData)],
) -> Option<Vec<FrozenParts>> {
    if !IN_PLACE {
        return None;
    }
    FrozenParts::build_split(slots, terms, docs)
}

/// Writes the postings file of `parts` (built by [`build`]) for the main file of
/// `generation`; the bytes written, 0 when nothing was.
pub(super) fn save_built(backend: &Backend, generation: u64, parts: &[FrozenParts]) -> u64 {
    let written = backend.write_atomic_with(SEARCH_POSTINGS_FILE, |w| write(w, generation, parts));
    match written {
        Ok(()) => file_len(parts) as u64,
        Err(_) => 0,
    }
}

/// Bytes of the file of `parts`.
fn file_len(parts: &[FrozenParts]) -> usize {
    let terms = parts.first().map_or(0, FrozenParts::terms);
    let table_end = HEAD + 4 * (3 * terms + 2);
    let runs: usize = parts
        .iter()
        .map(|p| 4 * p.doc_tf.len() + 4 * p.doc_slot.len() + LINE_POST * p.line_post.len())
        .sum();
    table_end + pad8(table_end) + runs
}

/// Zeros from `len` up to a multiple of 8.
fn pad8(len: usize) -> usize {
    (8 - len % 8) % 8
}

/// The postings of the file `shared` when it is whole and made for the main file of
/// `generation` with `slots` entries: header and table checked against their
/// CRC-32, sizes against the file's; the runs are read in place.
pub(super) fn read(shared: &SharedBytes, generation: u64, slots: usize) -> Option<FrozenParts> {
    let bytes: &[u8] = (**shared).as_ref();
    let head = bytes.get(..HEAD)?;
    let word = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().expect("4 bytes"));
    let long = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    if &head[..4] != MAGIC || crc32fast::hash(&head[..40]) != word(40) {
        return None;
    }
    if long(8) != generation || word(16) as usize != slots {
        return None;
    }
    let terms = word(20) as usize;
    let (docs, lines) = (
        usize::try_from(long(24)).ok()?,
        usize::try_from(long(32)).ok()?,
    );
    let table_len = terms.checked_mul(3)?.checked_add(2)?.checked_mul(4)?;
    let table_end = HEAD.checked_add(table_len)?;
    let table = bytes.get(HEAD..table_end)?;
    if crc32fast::hash(table) != word(44) {
        return None;
    }
    let mut at = table_end + pad8(table_end);
    // Every byte is checked: the padding is zeros.
    if bytes.get(table_end..at)?.iter().any(|&b| b != 0) {
        return None;
    }
    let mut take = |n: usize, size: usize| -> Option<&[u8]> {
        let end = at.checked_add(n.checked_mul(size)?)?;
        let raw = bytes.get(at..end)?;
        at = end;
        Some(raw)
    };
    let doc_tf = take(docs, 4)?;
    let doc_slot = take(docs, 4)?;
    let line_post = take(lines, LINE_POST)?;
    if at != bytes.len() {
        return None;
    }
    fn arr<T: ArrItem>(shared: &SharedBytes, raw: &[u8]) -> Option<Arr<T>> {
        Arr::read(shared, raw)
    }
    let starts = 4 * (terms + 1);
    Some(FrozenParts {
        slots: slots as u32,
        doc_start: arr(shared, &table[..starts])?,
        line_start: arr(shared, &table[starts..2 * starts])?,
        crc: arr(shared, &table[2 * starts..])?,
        doc_tf: arr(shared, doc_tf)?,
        doc_slot: arr(shared, doc_slot)?,
        line_post: arr(shared, line_post)?,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::index::tests::rec;
    use crate::retrieval::search::Vocab;

    fn parts() -> FrozenParts {
        parts_of(6)
    }

    /// The postings of `n` memories (an odd `n` makes an odd number of terms here,
    /// and a table padded to 8 bytes).
    fn parts_of(n: usize) -> FrozenParts {
        let (vocab, docs) = docs_of(n);
        let by_slot: Vec<(u32, &DocData)> = docs.iter().zip(0..).map(|(d, s)| (s, d)).collect();
        FrozenParts::build(n as u32, vocab.len(), &by_slot).unwrap()
    }

    /// `n` memories' data.
    fn docs_of(n: usize) -> (Vocab, Vec<DocData>) {
        let mut vocab = Vocab::default();
        let docs: Vec<DocData> = (0..n)
            .map(|i| {
                let mut r = rec(&format!("m{i}"), "user", "Ann", "d", "2026-01-01");
                r.body = format!("[D1:{i}] Ann: cello at {i}\nthe tempo went up {i}").into();
                DocData::of(&r, &mut vocab)
            })
            .collect();
        (vocab, docs)
    }

    fn file(p: &FrozenParts, generation: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out, generation, std::slice::from_ref(p)).unwrap();
        assert_eq!(out.len(), file_len(std::slice::from_ref(p)));
        out
    }

    fn shared(bytes: Vec<u8>) -> SharedBytes {
        Arc::new(bytes)
    }

    /// The postings of memories in parts (as two threads build them) are written
    /// as the postings of them all.
    #[test]
    fn parts_are_written_as_one() {
        let (vocab, docs) = docs_of(9);
        let by_slot: Vec<(u32, &DocData)> = docs.iter().zip(0..).map(|(d, s)| (s, d)).collect();
        let whole = FrozenParts::build(9, vocab.len(), &by_slot).unwrap();
        for cut in [0, 1, 4, 9] {
            let (a, b) = by_slot.split_at(cut);
            let parts = [
                FrozenParts::build(9, vocab.len(), a).unwrap(),
                FrozenParts::build(9, vocab.len(), b).unwrap(),
            ];
            let mut out = Vec::new();
            write(&mut out, 3, &parts).unwrap();
            assert_eq!(out.len(), file_len(&parts));
            assert_eq!(out, file(&whole, 3), "cut at {cut}");
        }
        // The halves two threads build (without CRCs of their own) too.
        let n = crate::retrieval::search::SPLIT_FROM + 3;
        let (vocab, docs) = docs_of(n);
        let by_slot: Vec<(u32, &DocData)> = docs.iter().zip(0..).map(|(d, s)| (s, d)).collect();
        let halves = FrozenParts::build_split(n as u32, vocab.len(), &by_slot).unwrap();
        assert_eq!(halves.len(), 2);
        let mut out = Vec::new();
        write(&mut out, 3, &halves).unwrap();
        let whole = FrozenParts::build(n as u32, vocab.len(), &by_slot).unwrap();
        assert_eq!(out, file(&whole, 3), "two halves");
    }

    #[test]
    fn a_written_file_reads_back_for_its_main_file_only() {
        let p = parts();
        let bytes = file(&p, 77);
        assert_eq!(read(&shared(bytes.clone()), 77, 6), Some(p.clone()));
        assert_eq!(
            read(&shared(bytes.clone()), 78, 6),
            None,
            "another generation"
        );
        assert_eq!(
            read(&shared(bytes), 77, 7),
            None,
            "another number of entries"
        );
    }

    #[test]
    fn a_damaged_or_cut_file_is_refused_or_caught_by_its_runs() {
        let odd = [6, 7].iter().any(|&n| parts_of(n).terms() % 2 == 1);
        assert!(odd, "one of them has a padded table");
        for n in [6, 7] {
            damage(&parts_of(n), n);
        }
    }

    fn damage(p: &FrozenParts, n: usize) {
        let good = file(p, 5);
        assert_eq!(read(&shared(good.clone()), 5, n), Some(p.clone()));
        for cut in 0..good.len() {
            assert_eq!(
                read(&shared(good[..cut].to_vec()), 5, n),
                None,
                "cut at {cut}"
            );
        }
        let mut longer = good.clone();
        longer.extend([0; 8]);
        assert_eq!(read(&shared(longer), 5, n), None, "bytes past the runs");
        // A flipped bit in the header or the table: refused; in a run: read, and
        // that term's check fails (no other's).
        let runs_from =
            good.len() - 4 * p.doc_tf.len() - 4 * p.doc_slot.len() - LINE_POST * p.line_post.len();
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 1 << (at % 8);
            match read(&shared(bad), 5, n) {
                None => assert!(
                    at < runs_from,
                    "a flip at {at} in the runs refused the file"
                ),
                Some(q) => {
                    assert!(at >= runs_from, "a flip at {at} before the runs was read");
                    let f = crate::retrieval::search::Frozen::new(q).unwrap();
                    let damaged = (0..p.terms() as u32).filter(|&t| !f.check(t)).count();
                    assert_eq!(damaged, 1, "a flip at {at}");
                }
            }
        }
    }
}
