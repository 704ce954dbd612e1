//! Unit tests of the UnixFS encoder and decoder: reference vectors, round trips,
//! and the decoder's refusals.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::OnceLock;

// -- helpers ------------------------------------------------------------

pub(crate) fn file(bytes: &[u8]) -> Node {
    Node::File(bytes.to_vec())
}

pub(crate) fn dir(entries: Vec<(&str, Node)>) -> Node {
    Node::Dir(
        entries
            .into_iter()
            .map(|(n, c)| (n.to_owned(), c))
            .collect(),
    )
}

pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("test hex"))
        .collect()
}

fn cid(s: &str) -> Cid {
    s.parse().expect("test CID")
}

fn block_map(dag: &Dag) -> HashMap<Cid, Vec<u8>> {
    dag.blocks.iter().cloned().collect()
}

/// Builds `tree`, checks the root against `expected`, checks that
/// `root_cid` agrees with `build`, and that decoding gives the tree back.
fn check(tree: &Node, expected: &str) {
    let dag = build(tree).expect("build");
    assert_eq!(dag.root.to_string(), expected);
    assert_eq!(root_cid(tree).expect("root_cid"), dag.root);
    assert_eq!(dag.blocks.first().map(|b| b.0), Some(dag.root));
    let decoded = decode(&dag.root, &block_map(&dag), &Limits::default()).expect("decode");
    assert!(decoded == *tree, "decode(build(t)) != t for {expected}");
}

fn memdir(prefs: &[u8]) -> Node {
    dir(vec![
        ("MEMORY.md", file(b"# Memory index\n\n- [user-prefs](user-prefs.md)\n")),
        ("user-prefs.md", file(prefs)),
        (
            "timeline",
            dir(vec![(
                "2026-01-01.jsonl",
                file(b"{\"t\":\"2026-01-01T00:00:00Z\",\"op\":\"create\",\"file\":\"user-prefs.md\"}\n"),
            )]),
        ),
    ])
}

const PREFS: &[u8] = b"---\nname: user-prefs\ntype: user\n---\nPrefers concise answers.\n";

fn big_bin() -> &'static Vec<u8> {
    static BIG: OnceLock<Vec<u8>> = OnceLock::new();
    BIG.get_or_init(|| (0..3 * 1024 * 1024 + 17).map(|i| (i % 251) as u8).collect())
}

fn many() -> Node {
    Node::Dir(
        (0..1200)
            .map(|i| {
                (
                    format!("note-{i:04}.md"),
                    Node::File(format!("note {i}\n").into_bytes()),
                )
            })
            .collect(),
    )
}

fn huge() -> Node {
    Node::Dir(
        (0..4000)
            .map(|i| {
                (
                    format!("memory-note-with-a-fairly-long-name-{i:05}.md"),
                    Node::File(format!("---\nname: n{i}\n---\nbody {i}\n").into_bytes()),
                )
            })
            .collect(),
    )
}

/// A directory of `count` one-byte files whose flat block is exactly
/// `4 + 55 * (count - 1) + entry(last)` bytes: 11-byte names give 55-byte
/// entries, and the last name's length fine-tunes the total.
fn threshold_dir(last_name_len: usize) -> Node {
    let count = 4766;
    Node::Dir(
        (0..count)
            .map(|i| {
                let name = if i == count - 1 {
                    format!("z{:0>width$}", i, width = last_name_len - 1)
                } else {
                    format!("n{i:010}")
                };
                (name, Node::File(b"x".to_vec()))
            })
            .collect(),
    )
}

fn unixfs_type(block: &[u8]) -> u64 {
    let pb = decode_pb(block).expect("pb");
    decode_unixfs(pb.data.expect("data"), false)
        .expect("ufs")
        .kind
}

// -- encoder vectors (reference section 4) --------------------------------

#[test]
fn vectors_small() {
    let cases: Vec<(Node, &str)> = vec![
        (
            file(b"hello world"),
            "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e",
        ),
        (
            file(b"hello world\n"),
            "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4",
        ),
        (
            file(b""),
            "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
        ),
        (
            dir(vec![]),
            "bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354",
        ),
        (
            dir(vec![("hello.txt", file(b"hello world\n"))]),
            "bafybeidhkumeonuwkebh2i4fc7o7lguehauradvlk57gzake6ggjsy372a",
        ),
        (
            memdir(PREFS),
            "bafybeice34wbhavle2ljqs4fsz4em7ooyjmaekj2j6x7ieumv4bvba7ydm",
        ),
        (
            memdir(
                b"---\nname: user-prefs\ntype: user\n---\nPrefers concise answers. Uses Rust.\n",
            ),
            "bafybeie52dgrylaq7qnkg2nt6hluljz2iec3tn4us32jyos4w6yrwtyoam",
        ),
        (
            dir(vec![
                ("b.md", file(b"b\n")),
                ("a.md", file(b"a\n")),
                ("B.md", file(b"B\n")),
                ("a-b.md", file(b"ab\n")),
                ("empty.md", file(b"")),
            ]),
            "bafybeihedzy2bfbnywswsop4hmzkbufhrjv4sjfyiqe6t2g3p5776ghxw4",
        ),
        // IPIP-0550 links-first directory holding hello.txt = "hello\n".
        (
            dir(vec![("hello.txt", file(b"hello\n"))]),
            "bafybeigdcg7pksx2zk5336vrfsktjodlr4rbfz37qr3koc5xboxe5ekv24",
        ),
    ];
    for (tree, expected) in &cases {
        check(tree, expected);
    }
}

#[test]
fn vectors_big_many_huge() {
    let big = Node::File(big_bin().clone());
    check(
        &big,
        "bafybeiengxwx4jlbvzg6ykpre7r5jxqvalq7yu4qbcj2w3gzacac33gjza",
    );
    check(
        &dir(vec![("big.bin", big)]),
        "bafybeigk3id7hg3tnooartdhy3agvvzn4eyxx4cgcmsuljwnddugcnh3du",
    );
    check(
        &many(),
        "bafybeifcsr63dna7n2ulcpu4lrq5vhinetn3ye72kstjnd6k3nnexaa4gu",
    );
    let huge = huge();
    check(
        &huge,
        "bafybeib3ybyd34xumagvzha3idbgvwjmcpeclvuien7os6jzoaf57vgmfe",
    );
    let dag = build(&huge).expect("build");
    assert_eq!(unixfs_type(&dag.blocks[0].1), TYPE_HAMT_SHARD);
}

fn pattern(size: usize) -> Vec<u8> {
    (0..size).map(|i| (i % 251) as u8).collect()
}

/// Trees from `ci/oracle/gen_trees.py`, rebuilt here; the expected CIDs
/// are what `ci/oracle/oracle.mjs` (ipfs-unixfs-importer 17.1.1,
/// `unixfs-v1-2025`) printed for the generated directories.
#[test]
fn vectors_from_oracle() {
    let chunks = dir(vec![
        ("exactly-1mib.bin", Node::File(pattern(CHUNK_SIZE))),
        ("1mib-plus-1.bin", Node::File(pattern(CHUNK_SIZE + 1))),
        ("zeros-2mib.bin", Node::File(vec![0; 2 * CHUNK_SIZE])),
    ]);
    let unicode_names = [
        "cafe\u{301}.md",
        "caf\u{e9}.md",
        "🦀 crab notes.md",
        "👩\u{200d}💻.md",
        "日本語のメモ.md",
        "中文笔记.md",
        "한국어.md",
        "مرحبا.md",
    ];
    let mut unicode: BTreeMap<String, Node> = unicode_names
        .iter()
        .map(|n| (n.to_string(), Node::File(Vec::new())))
        .collect();
    // Contents follow the generator's enumeration order (NFC first).
    let order = [1, 0, 2, 3, 4, 5, 6, 7];
    for (name, i) in unicode_names.iter().zip(order) {
        unicode.insert(
            name.to_string(),
            Node::File(format!("unicode {i}\n").into_bytes()),
        );
    }
    unicode.insert(
        "\u{dc}n\u{ef}c\u{f6}d\u{e9}".into(),
        dir(vec![("\u{df}.md", file(b"unicode 8\n"))]),
    );
    let mixed = dir(vec![
        ("empty.md", file(b"")),
        ("empty-dir", dir(vec![])),
        ("only-hidden", dir(vec![])),
        (
            "a",
            dir(vec![(
                "b",
                dir(vec![
                    ("sibling.md", file(b"sibling\n")),
                    (
                        "c",
                        dir(vec![(
                            "d",
                            dir(vec![(
                                "e",
                                dir(vec![("f", dir(vec![("deep.md", file(b"deep\n"))]))]),
                            )]),
                        )]),
                    ),
                ]),
            )]),
        ),
    ]);
    let archive = Node::Dir(
        (0..4200)
            .map(|i| {
                let name = format!("archived-memory-with-a-long-descriptive-name-{i:05}.md");
                let content = format!("{name}\n").into_bytes();
                (name, Node::File(content))
            })
            .collect(),
    );
    let nested = dir(vec![
        ("archive", archive),
        ("MEMORY.md", file(b"# Memory index\n")),
        ("attachment.bin", Node::File(pattern(CHUNK_SIZE + 4096))),
    ]);
    let huge4500 = Node::Dir(
        (0..4500)
            .map(|i| {
                (
                    format!("memory-note-with-a-fairly-long-name-{i:05}.md"),
                    Node::File(format!("---\nname: n{i}\n---\nbody {i}\n").into_bytes()),
                )
            })
            .collect(),
    );
    let cases: Vec<(Node, &str)> = vec![
        (
            threshold_dir(21),
            "bafybeifeilfa3k35hhmavmmozqlw66f7rec3jcto5bdtero5xt445e7cwu",
        ),
        (
            threshold_dir(22),
            "bafybeifnxp7g7shjliume5ljdjiajriud5w62prqufytzjabjfgtfqoqga",
        ),
        (
            chunks,
            "bafybeihyf44rjd2ya72tsboitjmjrmgxca3eps25vdmonvqo5khze72ufy",
        ),
        (
            Node::Dir(unicode),
            "bafybeiecdjponvybztbtiznger42l4rtv7jowtmv5gspyvjqsxufllt3ti",
        ),
        (
            mixed,
            "bafybeids2qdhbjlztqxnll36wynh7jqwekro5ignoe3swuhzcfgllxe65q",
        ),
        (
            nested,
            "bafybeiasrs4a6tci6vxx2zxl2lzhzxlu34gg4wlzd7cmm3rmt45xp3fuq4",
        ),
        (
            huge4500,
            "bafybeiei2akosjoe2cztk6shogzvrr36hxlrc4xpqbwnp5vywmnbrwaqii",
        ),
    ];
    for (tree, expected) in &cases {
        check(tree, expected);
    }
}

#[test]
fn big_bin_root_block_bytes() {
    let data = big_bin();
    let dag = build(&Node::File(data.clone())).expect("build");
    let mut expected = Vec::new();
    // Three full chunks (Tsize 1 MiB = `80 80 40`), then the 17-byte tail,
    // whose shorter Tsize makes its link two bytes shorter.
    for (i, chunk) in data.chunks(CHUNK_SIZE).enumerate() {
        let (head, tail) = if i < 3 {
            ("12 2c 0a 24", "12 00 18 80 80 40")
        } else {
            ("12 2a 0a 24", "12 00 18 11")
        };
        expected.extend_from_slice(&hex(head));
        expected.extend_from_slice(&block_cid(CODEC_RAW, chunk).to_bytes());
        expected.extend_from_slice(&hex(tail));
    }
    expected.extend_from_slice(&hex(
        "0a 15 08 02 18 91 80 c0 01 20 80 80 40 20 80 80 40 20 80 80 40 20 11",
    ));
    assert_eq!(dag.blocks[0].1, expected);
    // Pre-order DFS: root, then the four leaves in file order.
    let leaves: Vec<Cid> = data
        .chunks(CHUNK_SIZE)
        .map(|c| block_cid(CODEC_RAW, c))
        .collect();
    let order: Vec<Cid> = dag.blocks.iter().skip(1).map(|b| b.0).collect();
    assert_eq!(order, leaves);
}

#[test]
fn ipip0550_hamt_one_entry_block() {
    // shardSplitThresholdBytes: 0 turns even a one-entry directory into a HAMT.
    let params = Params {
        shard_threshold: 0,
        ..PROFILE
    };
    let tree = dir(vec![("hello.txt", file(b"hello\n"))]);
    let dag = build_with(&tree, params).expect("build");
    assert_eq!(
        dag.root.to_string(),
        "bafybeicjwkfslu7gwyywffvqgse5kiibojtktxcdqhgv7ldj5fjdacuceq"
    );
    assert_eq!(
        dag.blocks[0].1,
        hex(
            "12350a24015512205891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\
             120b444668656c6c6f2e74787418060a250805121c8000000000000000000000000000000000000000\
             00000000000000002822308002"
        )
    );
    let decoded = decode_with(&dag.root, &block_map(&dag), &Limits::default(), params);
    assert_eq!(decoded, Ok(tree));
}

#[test]
fn file_chunk_boundaries() {
    // (size, root codec, links in the root)
    let cases = [
        (CHUNK_SIZE - 1, CODEC_RAW, 0),
        (CHUNK_SIZE, CODEC_RAW, 0),
        (CHUNK_SIZE + 1, CODEC_DAG_PB, 2),
        (2 * CHUNK_SIZE, CODEC_DAG_PB, 2),
    ];
    for (size, codec, links) in cases {
        let tree = Node::File(vec![7u8; size]);
        let dag = build(&tree).expect("build");
        assert_eq!(dag.root.codec(), codec, "size {size}");
        let pb = decode_pb(&dag.blocks[0].1)
            .map(|n| n.links.len())
            .unwrap_or(0);
        assert_eq!(
            if codec == CODEC_RAW { 0 } else { pb },
            links,
            "size {size}"
        );
        // Identical chunks are one block.
        let distinct = if size > CHUNK_SIZE && size % CHUNK_SIZE == 0 {
            2
        } else {
            dag.blocks.len()
        };
        assert_eq!(dag.blocks.len(), distinct, "size {size}");
    }
}

#[test]
fn balanced_layout_shape() {
    // With 1-byte chunks, 1025 chunks need a root of two children, the
    // second a parent holding a single leaf (as the profile specifies).
    let params = Params {
        chunk_size: 1,
        ..PROFILE
    };
    let data: Vec<u8> = (0..1025u32).map(|i| (i % 256) as u8).collect();
    let dag = build_with(&Node::File(data.clone()), params).expect("build");
    let blocks = block_map(&dag);
    let root = decode_pb(&blocks[&dag.root]).expect("root");
    assert_eq!(root.links.len(), 2);
    let second = decode_pb(&blocks[&root.links[1].cid]).expect("second");
    assert_eq!(second.links.len(), 1);
    let decoded = decode_with(&dag.root, &blocks, &Limits::default(), params);
    assert_eq!(decoded, Ok(Node::File(data)));

    // Three levels: chunk 2 bytes, 3 links per node, 19 bytes = 10 chunks
    // -> 4 parents -> 2 parents -> root.
    let params = Params {
        chunk_size: 2,
        max_links: 3,
        shard_threshold: SHARD_THRESHOLD,
    };
    let data: Vec<u8> = (0..19u8).collect();
    let dag = build_with(&Node::File(data.clone()), params).expect("build");
    assert_eq!(dag.blocks.len(), 10 + 4 + 2 + 1);
    let decoded = decode_with(&dag.root, &block_map(&dag), &Limits::default(), params);
    assert_eq!(decoded, Ok(Node::File(data)));
}

#[test]
fn shard_threshold_is_strictly_greater() {
    for (last, flat) in [(21, true), (22, false)] {
        let tree = threshold_dir(last);
        let dag = build(&tree).expect("build");
        let root = &dag.blocks[0].1;
        if flat {
            assert_eq!(root.len(), SHARD_THRESHOLD);
            assert!(root.ends_with(&[0x0a, 0x02, 0x08, 0x01]));
        } else {
            assert_eq!(unixfs_type(root), TYPE_HAMT_SHARD);
            // The flat form would have been one byte over.
            let x = Built {
                cid: block_cid(CODEC_RAW, b"x"),
                tsize: 1,
                content: 1,
            };
            let Node::Dir(entries) = &tree else {
                panic!("threshold_dir is a directory")
            };
            let children: Vec<(&str, Built)> = entries.keys().map(|n| (n.as_str(), x)).collect();
            assert_eq!(pb_len(&link_outs(&children), 2), SHARD_THRESHOLD + 1);
        }
        let decoded = decode(&dag.root, &block_map(&dag), &Limits::default());
        assert!(decoded.as_ref() == Ok(&tree));
    }
}

#[test]
fn murmur3_known_values() {
    // Values from @multiformats/murmur3 (murmur3-x64-64 digest, big-endian h1).
    let cases: [(&str, u64); 9] = [
        ("", 0),
        ("hello.txt", 0xdf19ab11523994d9),
        ("hello", 0xcbd8a7b341bd9b02),
        ("a", 0x85555565f6597889),
        ("abcdefghijklmno", 0x8abe2451890c2ffb),
        ("abcdefghijklmnop", 0xc4ca3ca3224cb723),
        ("abcdefghijklmnopq", 0x7564747f88bda657),
        (
            "memory-note-with-a-fairly-long-name-00000.md",
            0xd4fdb6353ad1952c,
        ),
        ("é日本🦀", 0x719f29f16dcbde04),
    ];
    for (input, expected) in cases {
        assert_eq!(murmur3_x64_64(input.as_bytes()), expected, "{input:?}");
    }
    assert_eq!(murmur3_x64_128(b"hello", 0).1, 0x5b1e906a48ae1d19);
}

#[test]
fn varints() {
    for v in [
        0u64,
        1,
        127,
        128,
        300,
        16383,
        16384,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let mut buf = Vec::new();
        put_varint(&mut buf, v);
        assert_eq!(buf.len(), varint_len(v), "{v}");
        let mut pos = 0;
        assert_eq!(read_varint(&buf, &mut pos), Ok(v));
        assert_eq!(pos, buf.len());
    }
    let bad: [(&str, PbErrorKind); 4] = [
        ("80", PbErrorKind::Truncated),
        ("80 00", PbErrorKind::NonMinimalVarint),
        ("ff ff ff ff ff ff ff ff ff 02", PbErrorKind::VarintOverflow),
        (
            "ff ff ff ff ff ff ff ff ff ff 01",
            PbErrorKind::VarintOverflow,
        ),
    ];
    for (input, kind) in bad {
        assert_eq!(read_varint(&hex(input), &mut 0), Err(kind), "{input}");
    }
}

#[test]
fn safe_names() {
    let cases = [
        ("a.md", true),
        ("日本語.md", true),
        ("🦀", true),
        ("a b", true),
        ("", false),
        (".", false),
        ("..", false),
        (".hidden", false),
        ("a/b", false),
        ("a\\b", false),
        ("a\0b", false),
    ];
    for (name, safe) in cases {
        assert_eq!(is_safe_name(name), safe, "{name:?}");
        let tree = dir(vec![(name, file(b"x"))]);
        assert_eq!(build(&tree).is_ok(), safe, "{name:?}");
    }
}

// -- strict protobuf decoding --------------------------------------------

#[test]
fn decode_pb_rejections() {
    let link = "12 2a 0a 24 01551220 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 12 00 18 06";
    let cases: Vec<(String, PbErrorKind)> = vec![
        // Data before Links (the IPIP-0550 "data-first" order).
        (format!("0a 02 08 01 {link}"), PbErrorKind::FieldOrder { field: 2 }),
        ("0a 02 08 01 0a 02 08 01".into(), PbErrorKind::FieldOrder { field: 1 }),
        ("1a 00".into(), PbErrorKind::UnknownField { field: 3 }),
        ("08 01".into(), PbErrorKind::WrongWireType { field: 1, wire: 0 }),
        ("0d 00 00 00 00".into(), PbErrorKind::WrongWireType { field: 1, wire: 5 }),
        ("0a 05 08 01".into(), PbErrorKind::Truncated),
        ("12 02 12 00".into(), PbErrorKind::MissingField { field: 1 }),
        ("12 04 0a 02 01 55".into(), PbErrorKind::InvalidCid),
        // Name before Hash inside a link.
        (
            "12 2a 12 00 0a 24 01551220 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 18 06"
                .into(),
            PbErrorKind::FieldOrder { field: 1 },
        ),
        ("12 02 20 01".into(), PbErrorKind::UnknownField { field: 4 }),
    ];
    for (input, kind) in cases {
        let got = decode_pb(&hex(&input)).map(|_| ()).map_err(|e| e.kind);
        assert_eq!(got, Err(kind), "{input}");
    }
    let bytes = hex(&format!("{link} 0a 02 08 01"));
    let ok = decode_pb(&bytes).expect("valid node");
    assert_eq!(ok.links.len(), 1);
    assert_eq!(ok.links[0].name, Some(&b""[..]));
    assert_eq!(ok.links[0].tsize, Some(6));
    assert_eq!(ok.data, Some(&[8u8, 1][..]));
}

#[test]
fn decode_unixfs_rejections() {
    let cases: [(&str, PbErrorKind); 6] = [
        ("", PbErrorKind::MissingField { field: 1 }),
        ("08 02 18 01 08 02", PbErrorKind::FieldOrder { field: 1 }),
        ("08 02 18 01 18 01", PbErrorKind::FieldOrder { field: 3 }),
        (
            "08 02 22 01 05",
            PbErrorKind::WrongWireType { field: 4, wire: 2 },
        ),
        ("08 02 38 a4 03", PbErrorKind::Metadata { field: 7 }),
        ("08 02 42 00", PbErrorKind::Metadata { field: 8 }),
    ];
    for (input, kind) in cases {
        let got = decode_unixfs(&hex(input), false)
            .map(|_| ())
            .map_err(|e| e.kind);
        assert_eq!(got, Err(kind), "{input}");
    }
    // spec/sync.md#content-addressing-memdir-cid-srcipfsunixfsrs: mode and mtime are
    // named as metadata, not as "unknown field 8".
    assert_eq!(
        PbErrorKind::Metadata { field: 8 }.to_string(),
        "UnixFS mtime metadata (field 8) is not supported: the unixfs-v1-2025 profile writes no mode or mtime"
    );
    assert_eq!(
        PbErrorKind::Metadata { field: 7 }.to_string(),
        "UnixFS mode metadata (field 7) is not supported: the unixfs-v1-2025 profile writes no mode or mtime"
    );
    let bytes = hex("08 02 18 03 20 01 20 02");
    let ok = decode_unixfs(&bytes, false).expect("file data");
    assert_eq!(
        (ok.kind, ok.filesize, ok.blocksizes),
        (2, Some(3), vec![1, 2])
    );
}

// -- strict tree decoding -------------------------------------------------

/// Hand-assembles a directory block with `(name, child)` links in the
/// given order, so tests can build DAGs our encoder never would.
fn raw_dir(entries: &[(&[u8], &Cid, u64)], data: &[u8]) -> (Cid, Vec<u8>) {
    let links: Vec<LinkOut<'_>> = entries
        .iter()
        .map(|(name, cid, tsize)| LinkOut {
            cid,
            name,
            tsize: *tsize,
        })
        .collect();
    let block = encode_pb(&links, data);
    (block_cid(CODEC_DAG_PB, &block), block)
}

fn decode_err(root: &Cid, blocks: &[(Cid, Vec<u8>)], limits: &Limits) -> UnixfsError {
    let map: HashMap<Cid, Vec<u8>> = blocks.iter().cloned().collect();
    decode(root, &map, limits).expect_err("decode must fail")
}

#[test]
fn decode_rejects_unsafe_names() {
    let leaf = block_cid(CODEC_RAW, b"x");
    for name in [&b""[..], b".", b"..", b".git", b"a/b", b"a\\b", b"a\0b"] {
        let (root, block) = raw_dir(&[(name, &leaf, 1)], &[8, 1]);
        let err = decode_err(
            &root,
            &[(root, block), (leaf, b"x".to_vec())],
            &Limits::default(),
        );
        let expected = UnixfsError::UnsafeEntryName {
            dir: root,
            name: String::from_utf8_lossy(name).into_owned(),
        };
        assert_eq!(err, expected, "{name:?}");
    }
    let (root, block) = raw_dir(&[(b"\xff", &leaf, 1)], &[8, 1]);
    let err = decode_err(
        &root,
        &[(root, block), (leaf, b"x".to_vec())],
        &Limits::default(),
    );
    assert_eq!(err, UnixfsError::NonUtf8Name { dir: root });
}

#[test]
fn decode_rejections() {
    let x = block_cid(CODEC_RAW, b"x");
    let y = block_cid(CODEC_RAW, b"y");
    let xb = (x, b"x".to_vec());
    let yb = (y, b"y".to_vec());
    let limits = Limits::default();

    // Links out of order: decodes fine, but is not what we would encode.
    let (root, block) = raw_dir(&[(b"b", &x, 1), (b"a", &y, 1)], &[8, 1]);
    let (canonical, _) = raw_dir(&[(b"a", &y, 1), (b"b", &x, 1)], &[8, 1]);
    assert_eq!(
        decode_err(&root, &[(root, block), xb.clone(), yb.clone()], &limits),
        UnixfsError::NonCanonical {
            expected: root,
            rebuilt: canonical
        }
    );

    // Duplicate names.
    let (root, block) = raw_dir(&[(b"a", &x, 1), (b"a", &y, 1)], &[8, 1]);
    assert_eq!(
        decode_err(&root, &[(root, block), xb.clone(), yb.clone()], &limits),
        UnixfsError::DuplicateName {
            dir: root,
            name: "a".into()
        }
    );

    // Missing block.
    let (root, block) = raw_dir(&[(b"a", &x, 1)], &[8, 1]);
    assert_eq!(
        decode_err(&root, &[(root, block)], &limits),
        UnixfsError::MissingBlock { cid: x }
    );

    // A link to a CIDv0 and to an identity CID.
    let v0 = Cid::new_v0(*x.hash()).expect("v0");
    let identity = Cid::new_v1(CODEC_RAW, Multihash::<64>::wrap(0, b"x").expect("mh"));
    for bad in [v0, identity] {
        let (root, block) = raw_dir(&[(b"a", &bad, 1)], &[8, 1]);
        assert_eq!(
            decode_err(&root, &[(root, block)], &limits),
            UnixfsError::UnsupportedCid { cid: bad }
        );
    }

    // Unsupported type (symlink) and missing Data.
    let (root, block) = raw_dir(&[], &hex("08 04 12 01 78"));
    assert_eq!(
        decode_err(&root, &[(root, block)], &limits),
        UnixfsError::UnsupportedType {
            cid: root,
            type_code: 4
        }
    );
    let empty = block_cid(CODEC_DAG_PB, b"");
    assert_eq!(
        decode_err(&empty, &[(empty, Vec::new())], &limits),
        UnixfsError::MissingUnixfsData { cid: empty }
    );

    // File parent whose filesize disagrees with its blocksizes.
    let (root, block) = raw_dir(
        &[(b"", &x, 1), (b"", &y, 1)],
        &hex("08 02 18 03 20 01 20 01"),
    );
    assert_eq!(
        decode_err(&root, &[(root, block), xb.clone(), yb.clone()], &limits),
        UnixfsError::FileSizeMismatch {
            cid: root,
            declared: 3,
            actual: 2
        }
    );
    // Blocksize disagreeing with the child's real size.
    let (root, block) = raw_dir(
        &[(b"", &x, 1), (b"", &y, 1)],
        &hex("08 02 18 03 20 02 20 01"),
    );
    assert_eq!(
        decode_err(&root, &[(root, block), xb.clone(), yb.clone()], &limits),
        UnixfsError::FileSizeMismatch {
            cid: x,
            declared: 2,
            actual: 1
        }
    );
    // More links than blocksizes.
    let (root, block) = raw_dir(&[(b"", &x, 1), (b"", &y, 1)], &hex("08 02 18 01 20 01"));
    assert_eq!(
        decode_err(&root, &[(root, block), xb.clone(), yb.clone()], &limits),
        UnixfsError::BlocksizeCount {
            cid: root,
            links: 2,
            blocksizes: 1
        }
    );
    // A consistent two-leaf file under 1 MiB is valid UnixFS, but not canonical.
    let (root, block) = raw_dir(
        &[(b"", &x, 1), (b"", &y, 1)],
        &hex("08 02 18 02 20 01 20 01"),
    );
    assert_eq!(
        decode_err(&root, &[(root, block), xb.clone(), yb.clone()], &limits),
        UnixfsError::NonCanonical {
            expected: root,
            rebuilt: block_cid(CODEC_RAW, b"xy")
        }
    );
    // A directory where a file node is expected.
    let (d, dblock) = raw_dir(&[], &[8, 1]);
    let (root, block) = raw_dir(&[(b"", &d, 4)], &hex("08 02 18 00 20 00"));
    assert_eq!(
        decode_err(&root, &[(root, block), (d, dblock)], &limits),
        UnixfsError::WrongNodeType {
            cid: d,
            expected: "file node"
        }
    );
}

#[test]
fn decode_rejects_foreign_layouts() {
    // The same 3 MiB file chunked at 256 KiB (the importer's old default).
    let data = Node::File(big_bin().clone());
    let old = Params {
        chunk_size: 256 * 1024,
        max_links: 174,
        shard_threshold: SHARD_THRESHOLD,
    };
    let dag = build_with(&data, old).expect("build");
    let err = decode(&dag.root, &block_map(&dag), &Limits::default()).expect_err("non-canonical");
    assert_eq!(
        err,
        UnixfsError::NonCanonical {
            expected: dag.root,
            rebuilt: cid("bafybeiengxwx4jlbvzg6ykpre7r5jxqvalq7yu4qbcj2w3gzacac33gjza"),
        }
    );
    // A small directory sharded anyway (threshold 0) must be flat.
    let tree = dir(vec![("hello.txt", file(b"hello\n"))]);
    let dag = build_with(
        &tree,
        Params {
            shard_threshold: 0,
            ..PROFILE
        },
    )
    .expect("build");
    let err = decode(&dag.root, &block_map(&dag), &Limits::default()).expect_err("non-canonical");
    assert!(matches!(err, UnixfsError::NonCanonical { .. }), "{err:?}");
    // The IPIP-0550 data-first directory.
    let block = hex(
        "0a02080112330a24015512205891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\
         120968656c6c6f2e7478741806",
    );
    let root = cid("bafybeigqvyloizmfcdy6scaxnyltftzptaruqa3hnnplfzsbf4sqteiwlm");
    assert_eq!(block_cid(CODEC_DAG_PB, &block), root);
    assert!(matches!(
        decode_err(&root, &[(root, block)], &Limits::default()),
        UnixfsError::DagPb { cid, source: PbError { kind: PbErrorKind::FieldOrder { field: 2 }, .. } }
            if cid == root
    ));
}

#[test]
fn decode_limits() {
    let tree = dir(vec![(
        "a",
        dir(vec![("b", dir(vec![("c", file(b"12345"))]))]),
    )]);
    let dag = build(&tree).expect("build");
    let blocks = block_map(&dag);
    let ok = Limits::default();
    assert_eq!(decode(&dag.root, &blocks, &ok), Ok(tree.clone()));
    let depth = decode(&dag.root, &blocks, &Limits { max_depth: 1, ..ok });
    assert!(
        matches!(depth, Err(UnixfsError::DepthLimit { limit: 1, .. })),
        "{depth:?}"
    );
    let entries = decode(
        &dag.root,
        &blocks,
        &Limits {
            max_entries: 2,
            ..ok
        },
    );
    assert!(
        matches!(entries, Err(UnixfsError::EntryLimit { limit: 2, .. })),
        "{entries:?}"
    );
    let size = decode(
        &dag.root,
        &blocks,
        &Limits {
            max_total_bytes: 100,
            ..ok
        },
    );
    assert!(
        matches!(size, Err(UnixfsError::SizeLimit { limit: 100, .. })),
        "{size:?}"
    );

    // Nesting beyond MAX_DEPTH: refused by the builder, and by the decoder
    // even when the caller asks for a higher limit.
    let mut deep = file(b"x");
    for _ in 0..=MAX_DEPTH + 1 {
        deep = dir(vec![("d", deep)]);
    }
    assert_eq!(
        build(&deep),
        Err(UnixfsError::BuildTooDeep { limit: MAX_DEPTH })
    );
    let leaf = block_cid(CODEC_RAW, b"x");
    let mut blocks = vec![(leaf, b"x".to_vec())];
    let mut top = leaf;
    for _ in 0..=MAX_DEPTH + 1 {
        let (cid, block) = raw_dir(&[(b"d", &top, 1)], &[8, 1]);
        blocks.push((cid, block));
        top = cid;
    }
    let err = decode_err(
        &top,
        &blocks,
        &Limits {
            max_depth: 10_000,
            ..ok
        },
    );
    assert!(
        matches!(
            err,
            UnixfsError::DepthLimit {
                limit: MAX_DEPTH,
                ..
            }
        ),
        "{err:?}"
    );

    // A shared subtree repeated many times expands quickly: the byte
    // budget counts every visit, so the expansion is cut off.
    let leaf = block_cid(CODEC_RAW, &[0u8; 1000]);
    let names: Vec<String> = (0..200).map(|i| format!("f{i}")).collect();
    let entries: Vec<(&[u8], &Cid, u64)> =
        names.iter().map(|n| (n.as_bytes(), &leaf, 1000)).collect();
    let (inner, inner_block) = raw_dir(&entries, &[8, 1]);
    let outer_names: Vec<String> = (0..200).map(|i| format!("d{i}")).collect();
    let outer: Vec<(&[u8], &Cid, u64)> = outer_names
        .iter()
        .map(|n| (n.as_bytes(), &inner, 1))
        .collect();
    let (root, root_block) = raw_dir(&outer, &[8, 1]);
    let blocks = [
        (root, root_block),
        (inner, inner_block),
        (leaf, vec![0u8; 1000]),
    ];
    let err = decode_err(
        &root,
        &blocks,
        &Limits {
            max_total_bytes: 10 << 20,
            ..ok
        },
    );
    assert!(matches!(err, UnixfsError::SizeLimit { .. }), "{err:?}");
}

#[test]
fn decode_rejects_bad_hamt() {
    let x = block_cid(CODEC_RAW, b"x");
    let xb = (x, b"x".to_vec());
    let limits = Limits::default();
    let cases: [(&str, HamtProblem); 3] = [
        ("08 05 12 01 01 28 22 30 80 01", HamtProblem::Fanout),
        ("08 05 12 01 01 28 23 30 80 02", HamtProblem::HashType),
        ("08 05 12 01 01 30 80 02", HamtProblem::HashType),
    ];
    for (data, problem) in cases {
        let (root, block) = raw_dir(&[(b"00a", &x, 1)], &hex(data));
        assert_eq!(
            decode_err(&root, &[(root, block), xb.clone()], &limits),
            UnixfsError::BadHamt { cid: root, problem },
            "{data}"
        );
    }
    let good = hex("08 05 12 01 01 28 22 30 80 02");
    for name in [&b"a"[..], b"zza", b"dfa"] {
        let (root, block) = raw_dir(&[(name, &x, 1)], &good);
        assert_eq!(
            decode_err(&root, &[(root, block), xb.clone()], &limits),
            UnixfsError::BadHamt {
                cid: root,
                problem: HamtProblem::BadPrefix
            },
            "{name:?}"
        );
    }
    // A sub-shard with a single entry.
    let (sub, sub_block) = raw_dir(&[(b"00a", &x, 1)], &good);
    let (root, block) = raw_dir(&[(b"00", &sub, 50)], &good);
    assert_eq!(
        decode_err(
            &root,
            &[(root, block), (sub, sub_block), xb.clone()],
            &limits
        ),
        UnixfsError::BadHamt {
            cid: sub,
            problem: HamtProblem::SparseSubShard
        }
    );
    // A raw block where a sub-shard belongs.
    let (root, block) = raw_dir(&[(b"00", &x, 1)], &good);
    assert_eq!(
        decode_err(&root, &[(root, block), xb.clone()], &limits),
        UnixfsError::WrongNodeType {
            cid: x,
            expected: "HAMT shard"
        }
    );
    // Entries placed in the wrong bucket decode, but do not re-encode.
    let (root, block) = raw_dir(
        &[(b"00hello.txt", &x, 1)],
        &hex("08 05 12 01 01 28 22 30 80 02"),
    );
    let err = decode(
        &root,
        &[(root, block), xb].into_iter().collect(),
        &Limits::default(),
    );
    assert!(
        matches!(err, Err(UnixfsError::NonCanonical { .. })),
        "{err:?}"
    );
}

// -- decoding other tools' DAGs (spec/sync.md#foreign-dags) ---------------------

fn foreign_ok(root: &Cid, blocks: &[(Cid, Vec<u8>)]) -> Node {
    let map: HashMap<Cid, Vec<u8>> = blocks.iter().cloned().collect();
    decode_foreign(root, &map, &Limits::default()).expect("foreign decode")
}

fn foreign_err(root: &Cid, blocks: &[(Cid, Vec<u8>)]) -> UnixfsError {
    let map: HashMap<Cid, Vec<u8>> = blocks.iter().cloned().collect();
    decode_foreign(root, &map, &Limits::default()).expect_err("foreign decode must fail")
}

fn v0(block: &[u8]) -> Cid {
    Cid::new_v0(*block_cid(CODEC_DAG_PB, block).hash()).expect("v0")
}

#[test]
fn foreign_layouts_decode_to_the_same_tree() {
    // The 3 MiB file at 256 KiB chunks and 174 links: refused strictly (above),
    // read as the same bytes from another tool.
    let data = Node::File(big_bin().clone());
    let old = Params {
        chunk_size: 256 * 1024,
        max_links: 174,
        shard_threshold: SHARD_THRESHOLD,
    };
    let tree = dir(vec![("big.md", data), ("a.md", file(b"a"))]);
    let dag = build_with(&tree, old).expect("build");
    assert_eq!(
        decode_foreign(&dag.root, &block_map(&dag), &Limits::default()).expect("foreign"),
        tree
    );
    // A small directory sharded anyway.
    let tree = dir(vec![("hello.md", file(b"hello\n")), ("b.md", file(b"b"))]);
    let dag = build_with(
        &tree,
        Params {
            shard_threshold: 0,
            ..PROFILE
        },
    )
    .expect("build");
    assert_eq!(foreign_ok(&dag.root, &dag.blocks), tree);
    // A profile DAG reads the same both ways.
    let dag = build(&memdir(b"x")).expect("build");
    assert_eq!(foreign_ok(&dag.root, &dag.blocks), memdir(b"x"));
}

#[test]
fn foreign_cidv0_dag_pb_leaves_and_metadata() {
    // dag-pb File leaves holding data (Type File and Type Raw), under a CIDv0 parent
    // with mode and mtime, in a CIDv0 directory with mode: what `ipfs add` without
    // raw leaves and importers with `leafType: 'raw'` write.
    let leaf1 = encode_pb(&[], &hex("08 02 12 02 68 69 18 02")); // File, data "hi", filesize 2
    let leaf2 = encode_pb(&[], &hex("08 00 12 01 21")); // Raw, data "!", no filesize
    let (l1, l2) = (v0(&leaf1), v0(&leaf2));
    let parent = encode_pb(
        &[
            LinkOut {
                cid: &l1,
                name: b"",
                tsize: leaf1.len() as u64,
            },
            LinkOut {
                cid: &l2,
                name: b"",
                tsize: leaf2.len() as u64,
            },
        ],
        // File, filesize 3, blocksizes 2 and 1, mode 0o644, mtime {secs: 1}.
        &hex("08 02 18 03 20 02 20 01 38 a4 03 42 02 08 01"),
    );
    let p = v0(&parent);
    let root_block = encode_pb(
        &[LinkOut {
            cid: &p,
            name: b"note.md",
            tsize: 1,
        }],
        &hex("08 01 38 ed 03"),
    );
    let root = v0(&root_block);
    let blocks = [
        (root, root_block.clone()),
        (p, parent.clone()),
        (l1, leaf1),
        (l2, leaf2),
    ];
    assert_eq!(
        foreign_ok(&root, &blocks),
        dir(vec![("note.md", file(b"hi!"))])
    );
    // The strict decoder names what it refuses: the CIDv0 first.
    assert_eq!(
        decode_err(&root, &blocks, &Limits::default()),
        UnixfsError::UnsupportedCid { cid: root }
    );
    assert!(
        UnixfsError::UnsupportedCid { cid: root }
            .to_string()
            .contains("it is a CIDv0 (Qm…), outside the unixfs-v1-2025 profile")
    );
    // A blocksize that disagrees with the leaf is still refused.
    let bad_parent = encode_pb(
        &[
            LinkOut {
                cid: &l1,
                name: b"",
                tsize: 1,
            },
            LinkOut {
                cid: &l2,
                name: b"",
                tsize: 1,
            },
        ],
        &hex("08 02 18 04 20 03 20 01"),
    );
    let bp = v0(&bad_parent);
    let err = foreign_err(
        &bp,
        &[(bp, bad_parent), blocks[2].clone(), blocks[3].clone()],
    );
    assert!(
        matches!(err, UnixfsError::FileSizeMismatch { cid, .. } if cid == l1),
        "{err:?}"
    );
}

#[test]
fn foreign_refusals_name_the_cid_and_the_problem() {
    let x = block_cid(CODEC_RAW, b"x");
    // A symlink entry.
    let link = encode_pb(&[], &hex("08 04 12 01 78"));
    let lc = block_cid(CODEC_DAG_PB, &link);
    let (root, block) = raw_dir(&[(b"a.md", &lc, 1)], &[8, 1]);
    let err = foreign_err(&root, &[(root, block), (lc, link)]);
    assert_eq!(
        err,
        UnixfsError::UnsupportedType {
            cid: lc,
            type_code: 4
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "block {lc} is a UnixFS symlink node (type 4), which a memory directory cannot hold"
        )
    );
    // Identity (inline) dag-pb nodes and sha2-512 links.
    let identity = Cid::new_v1(CODEC_DAG_PB, Multihash::<64>::wrap(0, b"x").expect("mh"));
    let sha512 = Cid::new_v1(
        CODEC_RAW,
        Multihash::<64>::wrap(0x13, &[0; 64]).expect("mh"),
    );
    for (bad, says) in [
        (identity, "identity (inline) CID"),
        (sha512, "hash function is 0x13"),
    ] {
        let (root, block) = raw_dir(&[(b"a.md", &bad, 1)], &[8, 1]);
        let err = foreign_err(&root, &[(root, block)]);
        assert_eq!(err, UnixfsError::UnsupportedCid { cid: bad });
        assert!(err.to_string().contains(says), "{err}");
    }
    // A missing block is named.
    let (root, block) = raw_dir(&[(b"a.md", &x, 1)], &[8, 1]);
    assert_eq!(
        foreign_err(&root, &[(root, block)]),
        UnixfsError::MissingBlock { cid: x }
    );
    // Metadata nodes and unknown fields stay refused.
    let (root, block) = raw_dir(&[], &hex("08 03"));
    assert_eq!(
        foreign_err(&root, &[(root, block)]),
        UnixfsError::UnsupportedType {
            cid: root,
            type_code: 3
        }
    );
    let (root, block) = raw_dir(&[], &hex("08 01 48 01"));
    assert!(matches!(
        foreign_err(&root, &[(root, block)]),
        UnixfsError::UnixfsData {
            source: PbError {
                kind: PbErrorKind::UnknownField { field: 9 },
                ..
            },
            ..
        }
    ));
    // Size limits hold: a file that expands past max_total_bytes.
    let big = vec![7u8; 4096];
    let bc = block_cid(CODEC_RAW, &big);
    let (root, block) = raw_dir(&[(b"a.md", &bc, 4096), (b"b.md", &bc, 4096)], &[8, 1]);
    let map: HashMap<Cid, Vec<u8>> = [(root, block), (bc, big)].into_iter().collect();
    let tight = Limits {
        max_total_bytes: 6000,
        ..Limits::default()
    };
    assert!(matches!(
        decode_foreign(&root, &map, &tight),
        Err(UnixfsError::SizeLimit { limit: 6000, .. })
    ));
}

// spec/sync.md#foreign-dags: inline raw leaves (identity CIDs, `ipfs add --inline`)
// are read from the CID itself, as a whole small file and as a chunk of a larger one.
#[test]
fn foreign_inline_raw_leaves() {
    let inline =
        |bytes: &[u8]| Cid::new_v1(CODEC_RAW, Multihash::<64>::wrap(0, bytes).expect("mh"));
    let (hi, rest) = (inline(b"hi "), inline(b"there"));
    let parent = encode_pb(
        &[
            LinkOut {
                cid: &hi,
                name: b"",
                tsize: 3,
            },
            LinkOut {
                cid: &rest,
                name: b"",
                tsize: 5,
            },
        ],
        &hex("08 02 18 08 20 03 20 05"),
    );
    let p = block_cid(CODEC_DAG_PB, &parent);
    let small = inline(b"tiny\n");
    let (root, block) = raw_dir(&[(b"a.md", &p, 9), (b"b.md", &small, 5)], &[8, 1]);
    let blocks = [(root, block), (p, parent)];
    assert_eq!(
        foreign_ok(&root, &blocks),
        dir(vec![("a.md", file(b"hi there")), ("b.md", file(b"tiny\n"))])
    );
    // The strict decoder still refuses them.
    assert_eq!(
        decode_err(&root, &blocks, &Limits::default()),
        UnixfsError::UnsupportedCid { cid: hi }
    );
}

#[test]
fn foreign_hamt_fanouts() {
    let x = block_cid(CODEC_RAW, b"x");
    let xb = (x, b"x".to_vec());
    // Fanout 16: one hex digit of bucket prefix; murmur3 required as always.
    let f16 = hex("08 05 12 01 01 28 22 30 10");
    let (root, block) = raw_dir(&[(b"0a.md", &x, 1), (b"Fb.md", &x, 1)], &f16);
    assert_eq!(
        foreign_ok(&root, &[(root, block), xb.clone()]),
        dir(vec![("a.md", file(b"x")), ("b.md", file(b"x"))])
    );
    // A single-entry sub-shard (left behind by a removal) is read.
    let good = hex("08 05 12 01 01 28 22 30 80 02");
    let (sub, sub_block) = raw_dir(&[(b"00a.md", &x, 1)], &good);
    let (root, block) = raw_dir(&[(b"00", &sub, 50)], &good);
    assert_eq!(
        foreign_ok(&root, &[(root, block), (sub, sub_block), xb.clone()]),
        dir(vec![("a.md", file(b"x"))])
    );
    // Fanout 3 (not a power of two) and 4096 (too wide) are refused.
    for data in [
        "08 05 12 01 01 28 22 30 03",
        "08 05 12 01 01 28 22 30 80 20",
    ] {
        let (root, block) = raw_dir(&[(b"0a.md", &x, 1)], &hex(data));
        assert_eq!(
            foreign_err(&root, &[(root, block), xb.clone()]),
            UnixfsError::BadHamt {
                cid: root,
                problem: HamtProblem::Fanout
            },
            "{data}"
        );
    }
    // A chain of sub-shards deeper than the hash allows (fanout 256: 8 levels).
    let mut blocks = vec![xb.clone()];
    let (mut top, b) = raw_dir(&[(b"00a.md", &x, 1)], &good);
    blocks.push((top, b));
    for _ in 0..9 {
        let (c, b) = raw_dir(&[(b"00", &top, 1)], &good);
        blocks.push((c, b));
        top = c;
    }
    assert!(matches!(
        foreign_err(&top, &blocks),
        UnixfsError::BadHamt {
            problem: HamtProblem::TooDeep,
            ..
        }
    ));
}

// -- properties -------------------------------------------------------------

fn name_strategy() -> impl Strategy<Value = String> {
    let alphabet: Vec<char> = "abcXYZ019-_ é日本語🦀ÅÅ".chars().collect();
    prop::collection::vec(prop::sample::select(alphabet), 1..8)
        .prop_map(|chars| chars.into_iter().collect())
}

fn tree_strategy() -> impl Strategy<Value = Node> {
    let leaf = prop::collection::vec(any::<u8>(), 0..64).prop_map(Node::File);
    leaf.prop_recursive(4, 48, 8, |inner| {
        prop::collection::btree_map(name_strategy(), inner, 0..8).prop_map(Node::Dir)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn decode_build_roundtrip(tree in tree_strategy()) {
        let dag = build(&tree).expect("build");
        prop_assert_eq!(root_cid(&tree).expect("root"), dag.root);
        let decoded = decode(&dag.root, &block_map(&dag), &Limits::default());
        prop_assert_eq!(decoded, Ok(tree));
    }

    /// Tiny chunks, narrow nodes and a tiny shard threshold exercise deep
    /// file trees and nested HAMTs with little data.
    #[test]
    fn decode_build_roundtrip_small_params(
        tree in tree_strategy(),
        chunk_size in 1usize..8,
        max_links in 2usize..5,
        shard_threshold in 0usize..200,
    ) {
        let params = Params { chunk_size, max_links, shard_threshold };
        let dag = build_with(&tree, params).expect("build");
        prop_assert_eq!(root_cid_with(&tree, params).expect("root"), dag.root);
        let decoded = decode_with(&dag.root, &block_map(&dag), &Limits::default(), params);
        prop_assert_eq!(decoded, Ok(tree));
    }

    /// spec/sync.md#foreign-dags: whatever chunking, width and sharding another tool
    /// used, the foreign decoder gives the tree back, and re-encoding it gives the
    /// profile root.
    #[test]
    fn foreign_decode_reads_any_params(
        tree in tree_strategy(),
        chunk_size in 1usize..8,
        max_links in 2usize..5,
        shard_threshold in 0usize..200,
    ) {
        let params = Params { chunk_size, max_links, shard_threshold };
        let dag = build_with(&tree, params).expect("build");
        let decoded = decode_foreign(&dag.root, &block_map(&dag), &Limits::default());
        prop_assert_eq!(decoded.as_ref(), Ok(&tree));
        prop_assert_eq!(root_cid(&decoded.expect("decoded")).expect("root"), root_cid(&tree).expect("root"));
    }

    #[test]
    fn decode_pb_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_pb(&bytes);
        let _ = decode_unixfs(&bytes, false);
        let _ = decode_unixfs(&bytes, true);
        let _ = parse_cid(&bytes);
    }

    /// The foreign decoder on a random block as the root, and as the only child of a
    /// directory: an error or a tree, never a panic.
    #[test]
    fn foreign_decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let cid = block_cid(CODEC_DAG_PB, &bytes);
        let map: HashMap<Cid, Vec<u8>> = [(cid, bytes)].into_iter().collect();
        let _ = decode_foreign(&cid, &map, &Limits::default());
    }
}
