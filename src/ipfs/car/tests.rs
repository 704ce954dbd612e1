//! Unit tests of the CAR writer and the strict reader.

use super::*;
use crate::ipfs::unixfs::tests::{dir, file, hex};
use crate::ipfs::unixfs::{Dag, Limits, Node, block_cid, build, decode, put_varint, read_varint};
use proptest::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

/// A small tree with a multi-chunk file, nesting and a duplicated file.
fn sample() -> Node {
    let big: Vec<u8> = (0..(crate::ipfs::unixfs::CHUNK_SIZE + 100))
        .map(|i| (i % 251) as u8)
        .collect();
    dir(vec![
        ("MEMORY.md", file(b"# Memory index\n")),
        ("a.md", file(b"same\n")),
        ("b.md", file(b"same\n")),
        ("big.bin", Node::File(big)),
        (
            "timeline",
            dir(vec![
                ("2026-01-01.jsonl", file(b"{}\n")),
                ("empty", dir(vec![])),
            ]),
        ),
    ])
}

/// Raw CAR section for arbitrary CID bytes and data.
fn section(cid_bytes: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, (cid_bytes.len() + data.len()) as u64);
    out.extend_from_slice(cid_bytes);
    out.extend_from_slice(data);
    out
}

fn read(bytes: &[u8], root: &Cid) -> Result<HashMap<Cid, Vec<u8>>, CarError> {
    read_car(bytes, root, &CarLimits::default())
}

fn expect_err(bytes: &[u8], root: &Cid, limits: &CarLimits) -> CarError {
    read_car(bytes, root, limits).expect_err("read_car must fail")
}

fn as_map(dag: &Dag) -> HashMap<Cid, Vec<u8>> {
    dag.blocks.iter().cloned().collect()
}

#[test]
fn header_bytes() {
    let root: Cid = "bafybeice34wbhavle2ljqs4fsz4em7ooyjmaekj2j6x7ieumv4bvba7ydm"
        .parse()
        .expect("cid");
    let mut expected = hex("3a a2 65");
    expected.extend_from_slice(b"roots");
    expected.extend_from_slice(&hex("81 d8 2a 58 25 00"));
    expected.extend_from_slice(&root.to_bytes());
    expected.push(0x67);
    expected.extend_from_slice(b"version");
    expected.push(0x01);
    assert_eq!(car_header(&root), expected);
    assert_eq!(expected.len(), 1 + 58);
}

#[test]
fn round_trip_and_order() {
    let tree = sample();
    let dag = build(&tree).expect("build");
    let car = car_bytes(&dag);
    let mut streamed = Vec::new();
    write_car(&dag, &mut streamed).expect("write");
    assert_eq!(streamed, car);

    // The duplicated file is stored once, and the sections follow the DAG order.
    let same = block_cid(crate::ipfs::unixfs::CODEC_RAW, b"same\n");
    assert_eq!(dag.blocks.iter().filter(|(c, _)| *c == same).count(), 1);
    let mut pos = car_header(&dag.root).len();
    for (cid, data) in &dag.blocks {
        let mut len_pos = pos;
        let len = read_varint(&car, &mut len_pos).expect("varint");
        assert_eq!(len as usize, cid.encoded_len() + data.len());
        assert_eq!(
            &car[len_pos..len_pos + cid.encoded_len()],
            cid.to_bytes().as_slice()
        );
        pos = len_pos + len as usize;
    }
    assert_eq!(pos, car.len());

    let blocks = read(&car, &dag.root).expect("read");
    assert_eq!(blocks, as_map(&dag));
    assert_eq!(decode(&dag.root, &blocks, &Limits::default()), Ok(tree));
}

#[test]
fn tolerated_variations() {
    let dag = build(&sample()).expect("build");
    let want = as_map(&dag);
    let header = car_header(&dag.root);
    let body = |blocks: &[(Cid, Vec<u8>)]| {
        let mut out = Vec::new();
        for (c, d) in blocks {
            out.extend_from_slice(&section(&c.to_bytes(), d));
        }
        out
    };
    // Reverse order: every block arrives before its parent.
    let mut reversed = dag.blocks.clone();
    reversed.reverse();
    // Every block twice.
    let doubled: Vec<(Cid, Vec<u8>)> = dag
        .blocks
        .iter()
        .flat_map(|b| [b.clone(), b.clone()])
        .collect();
    // A header naming some other root, or no roots at all: both ignored.
    let other = block_cid(crate::ipfs::unixfs::CODEC_RAW, b"elsewhere");
    let no_roots = {
        let mut map = hex("a2 65");
        map.extend_from_slice(b"roots");
        map.push(0x80);
        map.push(0x67);
        map.extend_from_slice(b"version");
        map.push(0x01);
        let mut h = Vec::new();
        put_varint(&mut h, map.len() as u64);
        h.extend_from_slice(&map);
        h
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("reversed", [header.clone(), body(&reversed)].concat()),
        ("doubled", [header.clone(), body(&doubled)].concat()),
        (
            "other header root",
            [car_header(&other), body(&dag.blocks)].concat(),
        ),
        ("no header roots", [no_roots, body(&dag.blocks)].concat()),
    ];
    for (what, car) in cases {
        assert_eq!(read(&car, &dag.root).expect(what), want, "{what}");
    }
}

#[test]
fn rejections() {
    let dag = build(&sample()).expect("build");
    let car = car_bytes(&dag);
    let root = dag.root;
    let header_len = car_header(&root).len();
    let limits = CarLimits::default();
    // The last block is a leaf of `big.bin`; find the offset of its section.
    let (last_cid, last_data) = dag.blocks.last().expect("blocks").clone();
    let last_section = car.len() - last_data.len() - last_cid.encoded_len() - 1;

    // Flipped byte in the last block's data.
    let mut flipped = car.clone();
    *flipped.last_mut().expect("byte") ^= 1;
    assert!(matches!(
        expect_err(&flipped, &root, &limits),
        CarError::HashMismatch { cid, offset } if cid == last_cid && offset == last_section as u64
    ));

    // Truncated inside a block, and inside a section's length varint.
    assert!(matches!(
        expect_err(&car[..car.len() - 1], &root, &limits),
        CarError::Truncated { offset } if offset == last_section as u64
    ));
    assert!(matches!(
        expect_err(&[&car[..], &[0x80]].concat(), &root, &limits),
        CarError::TruncatedVarint { offset } if offset == car.len() as u64
    ));
    // Trailing garbage that looks like a section.
    assert!(matches!(
        expect_err(&[&car[..], &[0x05, 0x01, 0x02]].concat(), &root, &limits),
        CarError::UnsupportedCid { .. } | CarError::Truncated { .. }
    ));
    // A non-minimal length varint.
    assert!(matches!(
        expect_err(&[&car[..], &[0x81, 0x00]].concat(), &root, &limits),
        CarError::BadVarint { .. }
    ));
    // A zero-length section.
    assert!(matches!(
        expect_err(&[&car[..], &[0x00]].concat(), &root, &limits),
        CarError::EmptySection { offset } if offset == car.len() as u64
    ));

    // Oversize block under a small limit, and the total limit.
    let small = CarLimits {
        max_block_size: 1000,
        ..limits
    };
    assert!(matches!(
        expect_err(&car, &root, &small),
        CarError::BlockTooLarge { limit: 1000, .. }
    ));
    let tight = CarLimits {
        max_total_bytes: 4096,
        ..limits
    };
    assert!(matches!(
        expect_err(&car, &root, &tight),
        CarError::TotalTooLarge { limit: 4096, .. }
    ));

    // Identity CID, unknown codec (dag-cbor), CIDv0 (valid, but linked from nothing),
    // sha2-512.
    let data = b"x";
    let identity = [hex("01 55 00 01"), data.to_vec()].concat();
    let digest = Sha256::digest(data);
    let cbor = [hex("01 71 12 20"), digest.to_vec()].concat();
    let v0 = [hex("12 20"), digest.to_vec()].concat();
    let sha512 = [hex("01 55 13 40"), vec![0u8; 64]].concat();
    for (what, cid_bytes) in [
        ("identity", identity),
        ("cbor", cbor),
        ("v0", v0),
        ("sha512", sha512),
    ] {
        let bad = [&car[..], &section(&cid_bytes, data)].concat();
        let err = expect_err(&bad, &root, &limits);
        let ok = match what {
            "identity" => {
                matches!(err, CarError::IdentityCid { offset } if offset == car.len() as u64)
            }
            // spec/sync.md#foreign-dags: a CIDv0 block is read and verified like any other;
            // this one is refused only because nothing links to it.
            "v0" => {
                matches!(err, CarError::Unreachable { cid } if cid.version() == cid::Version::V0)
            }
            _ => {
                matches!(err, CarError::UnsupportedCid { offset, .. } if offset == car.len() as u64)
            }
        };
        assert!(ok, "{what}: {err:?}");
    }

    // An unrelated extra block (valid hash, not linked from the root).
    let extra = block_cid(crate::ipfs::unixfs::CODEC_RAW, b"unrelated");
    let with_extra = [&car[..], &section(&extra.to_bytes(), b"unrelated")].concat();
    assert!(matches!(
        expect_err(&with_extra, &root, &limits),
        CarError::Unreachable { cid } if cid == extra
    ));

    // A missing block: drop the last leaf.
    assert!(matches!(
        expect_err(&car[..last_section], &root, &limits),
        CarError::MissingBlock { cid } if cid == last_cid
    ));
    // Asking for a root the archive does not hold: the root is missing
    // (checked before the blocks that are unreachable from it).
    assert!(matches!(
        expect_err(&car, &extra, &limits),
        CarError::MissingBlock { cid } if cid == extra
    ));
    // Header only.
    assert!(matches!(
        expect_err(&car[..header_len], &root, &limits),
        CarError::MissingBlock { cid } if cid == root
    ));
    // The CIDv0 form of a CIDv1 root is another CID (codec and version are part of
    // it), so its block is simply not in the archive.
    let v0_root = Cid::new_v0(*root.hash()).expect("v0");
    assert!(matches!(
        expect_err(&car, &v0_root, &limits),
        CarError::MissingBlock { cid } if cid == v0_root
    ));
    // spec/sync.md#foreign-dags: a requested root memdir cannot verify names the CID and
    // the problem, never "did not match its CID".
    let sha512 = Cid::new_v1(
        crate::ipfs::unixfs::CODEC_DAG_PB,
        cid::multihash::Multihash::<64>::wrap(0x13, &[0u8; 64]).expect("mh"),
    );
    let err = expect_err(&car, &sha512, &limits);
    assert!(
        matches!(err, CarError::UnsupportedRoot { cid } if cid == sha512),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "requested root {sha512} is not supported: its hash function is 0x13 with a 64-byte digest; memdir verifies sha2-256 (0x12, 32 bytes) only"
        )
    );
}

// spec/sync.md#foreign-dags: CIDv0 (dag-pb, sha2-256) blocks and roots, as Kubo and older
// importers write them, are read and verified; a tampered one is a hash mismatch.
#[test]
fn cidv0_blocks_are_verified() {
    let leaf = b"leaf bytes".to_vec();
    let leaf_cid = block_cid(crate::ipfs::unixfs::CODEC_RAW, &leaf);
    // A dag-pb node linking the leaf: Links[{Hash, Name "", Tsize}], Data {Type: File}.
    let mut link = vec![0x0a, 36];
    link.extend_from_slice(&leaf_cid.to_bytes());
    link.extend_from_slice(&[0x12, 0x00, 0x18, leaf.len() as u8]);
    let mut node = vec![0x12, link.len() as u8];
    node.extend_from_slice(&link);
    node.extend_from_slice(&[0x0a, 0x02, 0x08, 0x02]);
    let digest = Sha256::digest(&node);
    let hash = cid::multihash::Multihash::<64>::wrap(0x12, &digest).expect("mh");
    let root = Cid::new_v0(hash).expect("v0");
    let car = |node: &[u8]| {
        let mut out = Vec::new();
        write_car_blocks(
            &root,
            [(&root, node), (&leaf_cid, leaf.as_slice())],
            &mut out,
        )
        .expect("write");
        out
    };
    let blocks = read_car(car(&node).as_slice(), &root, &CarLimits::default()).expect("read");
    assert_eq!(blocks.get(&root), Some(&node));
    assert_eq!(blocks.get(&leaf_cid), Some(&leaf));
    let mut tampered = node.clone();
    *tampered.last_mut().expect("byte") = 0x01;
    assert!(matches!(
        expect_err(&car(&tampered), &root, &CarLimits::default()),
        CarError::HashMismatch { cid, .. } if cid == root
    ));
}

#[test]
fn header_rejections() {
    let dag = build(&file(b"hello")).expect("build");
    let root = dag.root;
    let body: Vec<u8> = dag
        .blocks
        .iter()
        .flat_map(|(c, d)| section(&c.to_bytes(), d))
        .collect();
    let with_header = |map: &[u8]| {
        let mut out = Vec::new();
        put_varint(&mut out, map.len() as u64);
        out.extend_from_slice(map);
        out.extend_from_slice(&body);
        out
    };
    let version = |v: &str| {
        let mut m = hex("a2 65");
        m.extend_from_slice(b"roots");
        m.push(0x80);
        m.push(0x67);
        m.extend_from_slice(b"version");
        m.extend_from_slice(&hex(v));
        m
    };
    let limits = CarLimits::default();
    assert!(read_car(&with_header(&version("01"))[..], &root, &limits).is_ok());
    assert!(matches!(
        expect_err(&with_header(&version("02")), &root, &limits),
        CarError::UnsupportedVersion { version: 2 }
    ));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not a map", hex("80")),
        (
            "no version",
            [hex("a1 65"), b"roots".to_vec(), hex("80")].concat(),
        ),
        ("version text", version("61 31")),
        ("trailing byte", [version("01"), vec![0x00]].concat()),
        (
            "indefinite",
            [hex("bf 67"), b"version".to_vec(), hex("01 ff")].concat(),
        ),
        (
            "root untagged",
            [
                hex("a2 65"),
                b"roots".to_vec(),
                hex("81 41 00 67"),
                b"version".to_vec(),
                hex("01"),
            ]
            .concat(),
        ),
        ("truncated map", hex("a2 65 72")),
    ];
    for (what, map) in cases {
        assert!(
            matches!(
                expect_err(&with_header(&map), &root, &limits),
                CarError::BadHeader { .. }
            ),
            "{what}"
        );
    }
    assert!(matches!(
        expect_err(&hex("ff ff 7f"), &root, &limits),
        CarError::HeaderTooLarge { .. }
    ));
    assert!(matches!(
        expect_err(&[], &root, &limits),
        CarError::Truncated { offset: 0 }
    ));
    // Unknown header keys are skipped.
    let extra_key = [
        hex("a3 65"),
        b"roots".to_vec(),
        hex("80 67"),
        b"version".to_vec(),
        hex("01 63"),
        b"foo".to_vec(),
        hex("82 01 a1 61 61 f6"),
    ]
    .concat();
    assert!(read_car(&with_header(&extra_key)[..], &root, &limits).is_ok());
}

#[test]
fn reachable_block_with_bad_dag_pb() {
    // A dag-pb block that hashes correctly but is not valid dag-pb: it can
    // only be the requested root, and its links are unknowable.
    let junk = b"\x0a\x05\x08".to_vec();
    let cid = block_cid(crate::ipfs::unixfs::CODEC_DAG_PB, &junk);
    let car = [car_header(&cid), section(&cid.to_bytes(), &junk)].concat();
    assert!(matches!(
        expect_err(&car, &cid, &CarLimits::default()),
        CarError::DagPb { cid: c, .. } if c == cid
    ));
}

fn name_strategy() -> impl Strategy<Value = String> {
    let alphabet: Vec<char> = "abcXYZ019-_ é日本語🦀".chars().collect();
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
    fn car_round_trip(tree in tree_strategy(), seed in any::<u64>()) {
        let dag = build(&tree).expect("build");
        let car = car_bytes(&dag);
        let blocks = read_car(&car[..], &dag.root, &CarLimits::default()).expect("read");
        prop_assert_eq!(&blocks, &as_map(&dag));
        prop_assert_eq!(decode(&dag.root, &blocks, &Limits::default()), Ok(tree));

        // Any order of the same blocks reads back the same.
        let mut shuffled = dag.blocks.clone();
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut car = car_header(&dag.root);
        for (c, d) in &shuffled {
            car.extend_from_slice(&section(&c.to_bytes(), d));
        }
        let blocks = read_car(&car[..], &dag.root, &CarLimits::default()).expect("read shuffled");
        prop_assert_eq!(blocks, as_map(&dag));
    }

    #[test]
    fn reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300), cut in any::<usize>()) {
        let dag = build(&dir(vec![("a", file(b"x"))])).expect("build");
        let _ = read_car(&bytes[..], &dag.root, &CarLimits::default());
        // Arbitrary bytes after a valid prefix of a real archive.
        let car = car_bytes(&dag);
        let prefix = &car[..cut % (car.len() + 1)];
        let _ = read_car(&[prefix, &bytes[..]].concat()[..], &dag.root, &CarLimits::default());
    }
}

#[test]
fn empty_dir_root_and_btreemap_names() {
    let tree = Node::Dir(BTreeMap::new());
    let dag = build(&tree).expect("build");
    let blocks = read(&car_bytes(&dag), &dag.root).expect("read");
    assert_eq!(decode(&dag.root, &blocks, &Limits::default()), Ok(tree));
}
