//! Tests of the index format: round trips, damage, entries written from items, term
//! data read in place.

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
        // Orders alike from one entry to the next, then one key fewer, then one
        // byte off: the decode shares a list only while it is the same.
        order: match i % 4 {
            0 | 1 => vec!["name".into(), "owner".into()],
            2 => vec!["name".into()],
            _ => vec!["name".into(), "ownex".into()],
        }
        .into(),
        extra: vec![("owner".into(), serde_json::json!({"team": [1, "x"]}))],
        warnings: vec![(4, "unknown type".into())],
    }
}

/// Term data small enough to write out.
fn data() -> DocData {
    DocData {
        tf_terms: vec![0, 1].into(),
        tf_weights: vec![3.0, 1.5].into(),
        len: 4.5,
        tokens: vec![1, 0, 1].into(),
        lines: vec![[2, 1, 0], [2, 0, 0], [3, 0, 1]].into(),
        line_df: vec![[0, 1], [1, 2]].into(),
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
    let texts: Vec<String> = (0..metas.len())
        .map(|i| {
            format!(
                "---\nx\n---\nbody ünï{}",
                if i % 2 == 0 { "\n" } else { "" }
            )
        })
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
            text: &texts[i],
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
    let with_data: Vec<&DocData> = kept.iter().filter_map(|it| it.data).collect();
    let counts = Counts::of(&with_data, terms.len());
    streamed.extend(encode_counts(Some(&counts)));
    // Each chunk encoded into the buffer the last one was (as `write_main` hands
    // them back), the first into one full of other bytes: a reused buffer leaves
    // nothing of what it held.
    let mut buf = vec![0xA5; 3 * CHUNK * 64];
    for c in &chunks {
        buf = encode_chunk_into(c, buf);
        assert_eq!(buf, encode_chunk(c));
        streamed.extend(&buf);
    }
    let whole = IndexFile {
        version: "v".into(),
        generation: 3,
        base: 0,
        vocab_start: 0,
        terms,
        counts: Some(counts),
        entries: items.iter().filter_map(Saved::of).map(Box::new).collect(),
        removed: Vec::new(),
        damaged: false,
        data_dropped: false,
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
        counts: Some(Counts {
            df: vec![1, 2],
            line_df: vec![3, 4],
            n_lines: 5,
            line_tokens: 6,
        }),
        entries: (0..5)
            .map(|i| {
                Box::new(Saved {
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
                    body: crate::memory::frontmatter::body_span("---\nx\n---\nbody ünï"),
                    meta: entry(i),
                    data: i.is_multiple_of(2).then(data),
                    has_data: i.is_multiple_of(2),
                })
            })
            .collect(),
        removed: vec!["gone.md".into()],
        damaged: false,
        data_dropped: false,
    };
    let bytes = f.encode();
    let head_len = bytes.len() - f.encode_parts()[1..].iter().map(Vec::len).sum::<usize>();
    let counts_end = head_len + f.encode_parts()[1].len();
    // Without terms, the data and the counts are skipped, the data said to be there.
    let lean = IndexFile::decode_with(&bytes, None, false).unwrap();
    assert!(lean.entries.iter().all(|e| e.data.is_none()) && lean.counts.is_none());
    assert_eq!(
        lean.entries.iter().map(|e| e.has_data).collect::<Vec<_>>(),
        f.entries.iter().map(|e| e.has_data).collect::<Vec<_>>()
    );
    let counts = f.counts.clone();
    let back = IndexFile::decode(&bytes).unwrap();
    let shared =
        |a: usize, b: usize| Arc::ptr_eq(&back.entries[a].meta.order, &back.entries[b].meta.order);
    assert!(shared(0, 1) && !shared(1, 2) && !shared(1, 4) && !shared(3, 4));
    assert_eq!(back, f);
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
    // A flipped bit: in the header, no file; in the counts, no counts (a damaged
    // file); in a chunk, the chunk is left out.
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 1 << (at % 8);
        match IndexFile::decode(&bad) {
            None => assert!(at < head_len, "bit at {at}"),
            Some(d) if at < counts_end => {
                assert!(
                    at >= head_len && d.damaged && d.counts.is_none(),
                    "bit at {at}"
                );
            }
            Some(d) => assert!(d.damaged && d.entries.is_empty() && d.counts == counts),
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

/// Bytes at an address that is a multiple of 8, plus `shift`: a mapped file's
/// (page-aligned) when `shift` is 0.
struct Placed(Vec<u64>, usize, usize);

impl Placed {
    fn new(bytes: &[u8], shift: usize) -> Placed {
        let mut words = vec![0u64; (bytes.len() + shift).div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[shift..shift + bytes.len()]
            .copy_from_slice(bytes);
        Placed(words, shift, bytes.len())
    }
}

impl AsRef<[u8]> for Placed {
    fn as_ref(&self) -> &[u8] {
        &bytemuck::cast_slice::<u64, u8>(&self.0)[self.1..self.1 + self.2]
    }
}

#[test]
fn term_data_of_a_mapped_file_is_read_in_place() {
    let f = IndexFile {
        version: env!("CARGO_PKG_VERSION").into(),
        generation: 1,
        base: 0,
        vocab_start: 0,
        // An odd length, so that the header needs padding.
        terms: vec!["alpha".into(), "beta".into(), "c".into()],
        counts: None,
        entries: (0..3)
            .map(|i| {
                Box::new(Saved {
                    file: format!("k{i}.md"),
                    stat: Stat::default(),
                    checked: 1,
                    key: format!("{i:063}"),
                    text: "x".repeat(i).into(),
                    body: None,
                    meta: entry(i),
                    data: Some(data()),
                    has_data: true,
                })
            })
            .collect(),
        removed: Vec::new(),
        damaged: false,
        data_dropped: false,
    };
    let bytes = f.encode();
    assert_eq!(bytes.len() % ALIGN, 0);
    // Placed like a mapped file: every array read in place (on a little-endian
    // Unix machine), the same data as a copy.
    let shared: SharedBytes = std::sync::Arc::new(Placed::new(&bytes, 0));
    let mapped = IndexFile::decode_shared(&shared, true).unwrap();
    assert_eq!(mapped, f);
    let in_place = cfg!(all(unix, target_endian = "little"));
    for e in &mapped.entries {
        let d = e.data.as_ref().unwrap();
        assert_eq!(d.tokens.is_shared(), in_place);
        assert_eq!(d.tf_weights.is_shared(), in_place);
        assert_eq!(d.lines.is_shared(), in_place);
    }
    // Bytes that start off a multiple of 8: copied, the same data.
    let shared: SharedBytes = std::sync::Arc::new(Placed::new(&bytes, 3));
    let moved = IndexFile::decode_shared(&shared, true).unwrap();
    assert_eq!(moved, f);
    assert!(
        !moved.entries[0]
            .data
            .as_ref()
            .unwrap()
            .tf_weights
            .is_shared()
    );
    // A non-zero byte where the format has padding is damage.
    let mut bad = bytes.clone();
    let pad = bad.len() - 1;
    bad[pad] = 1;
    assert!(IndexFile::decode(&bad).unwrap().damaged);
}

/// The body's place is saved with each entry; a place that is not one of the text
/// (past its end, backwards, inside a character) leaves the chunk out (its files are
/// read again), as any entry that does not decode.
#[test]
fn a_saved_body_place_outside_the_text_is_not_decoded() {
    let text = "---\nx\n---\nbody ünï";
    let file = |body: Option<(usize, usize)>| IndexFile {
        version: env!("CARGO_PKG_VERSION").into(),
        generation: 1,
        base: 0,
        vocab_start: 0,
        terms: Vec::new(),
        counts: None,
        entries: vec![Box::new(Saved {
            file: "k.md".into(),
            stat: Stat::default(),
            checked: 1,
            key: "0".repeat(64),
            text: text.into(),
            body,
            meta: entry(0),
            data: None,
            has_data: false,
        })],
        removed: Vec::new(),
        damaged: false,
        data_dropped: false,
    };
    let good = crate::memory::frontmatter::body_span(text);
    for body in [good, None, Some((0, text.len()))] {
        let back = IndexFile::decode(&file(body).encode()).unwrap();
        assert!(!back.damaged);
        assert_eq!(back.entries[0].body, body);
    }
    let inside_ü = text.find('ü').unwrap() + 1;
    for bad in [
        (0, text.len() + 1),
        (5, 4),
        (inside_ü, text.len()),
        (10, inside_ü),
    ] {
        let back = IndexFile::decode(&file(Some(bad)).encode()).unwrap();
        assert!(back.damaged && back.entries.is_empty(), "{bad:?}");
    }
}
