//! Pulling CARs other IPFS tools made (spec/sync.md#foreign-dags): the fixtures under
//! fixtures/foreign/ were written by ipfs-unixfs-importer and @helia/unixfs with
//! their own options (fixtures/foreign/README.md); memdir verifies every block,
//! re-encodes the tree under unixfs-v1-2025 and records both roots.

use std::path::Path;

use memdir::ipfs::car::{CarLimits, read_car, write_car_blocks};
use memdir::ipfs::unixfs::{self, Node};
use serde_json::Value;

use super::*;
use crate::common::{fixture, tree};

struct Case {
    name: String,
    root: String,
    profile_root: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(fixture("foreign/roots.jsonl")).unwrap();
    let out: Vec<Case> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Case {
                name: v["case"].as_str().unwrap().into(),
                root: v["root"].as_str().unwrap().into(),
                profile_root: v["profile_root"].as_str().unwrap().into(),
            }
        })
        .collect();
    assert!(out.len() >= 7, "{} fixtures", out.len());
    out
}

fn source(case: &str) -> std::path::PathBuf {
    fixture(if case == "cidv0-dagpb-256k" {
        "foreign/source-long"
    } else {
        "foreign/source"
    })
}

/// A fresh device on an empty folder remote holding `car` as `root`.
fn device_with(tmp: &Path, root: &str, car: &[u8]) -> Device {
    let remote = tmp.join("remote");
    std::fs::create_dir_all(remote.join("cars")).unwrap();
    std::fs::write(remote.join("cars").join(format!("{root}.car")), car).unwrap();
    let d = Device::new(tmp, "d", &remote);
    d.ok(&["init", "--provider", "folder"]);
    d
}

fn state(d: &Device) -> Value {
    serde_json::from_slice(&std::fs::read(d.dir.join(".memdir/sync/state.json")).unwrap()).unwrap()
}

// spec/sync.md#foreign-dags: each fixture pulls to the files it was made from, is
// re-encoded to the profile root the reference importer computes for them, and both
// roots are reported and recorded; the next push publishes the profile root.
#[test]
fn cars_from_other_tools_are_pulled_and_re_encoded() {
    for c in cases() {
        let tmp = tempfile::tempdir().unwrap();
        let car = std::fs::read(fixture(&format!("foreign/{}.car", c.name))).unwrap();
        let d = device_with(tmp.path(), &c.root, &car);
        let o = d.ok(&["pull", &c.root, "--json"]);
        let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(r["root"], c.root.as_str(), "{}", c.name);
        assert_eq!(r["plain_root"], c.profile_root.as_str(), "{}", c.name);
        let foreign = c.root != c.profile_root;
        assert_eq!(
            r["re_encoded"].as_bool().unwrap_or(false),
            foreign,
            "{}",
            c.name
        );
        assert_eq!(tree(&d.dir), tree(&source(&c.name)), "{}", c.name);
        let base = &state(&d)["base"];
        assert_eq!(base["network_root"], c.root.as_str(), "{}", c.name);
        assert_eq!(base["root"], c.profile_root.as_str(), "{}", c.name);
        assert_eq!(stdout(&d.ok(&["cid"])).trim(), c.profile_root, "{}", c.name);
        if foreign {
            let st = d.ok(&["status"]);
            let text = stdout(&st) + &stderr(&st);
            assert!(
                text.contains(&format!(
                    "re-encoded under unixfs-v1-2025 as: {}",
                    c.profile_root
                )),
                "{}: {text}",
                c.name
            );
        }
        // The next push publishes the profile root, even though nothing changed.
        let o = d.ok(&["push", "--json"]);
        let p: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(p["root"], c.profile_root.as_str(), "{}", c.name);
        assert!(
            d.remote
                .join(format!("cars/{}.car", c.profile_root))
                .is_file(),
            "{}",
            c.name
        );
    }
}

// spec/sync.md#foreign-dags: the text output names both roots.
#[test]
fn a_re_encoded_pull_says_so() {
    let c = cases()
        .into_iter()
        .find(|c| c.name == "cidv0-dagpb-256k")
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let car = std::fs::read(fixture("foreign/cidv0-dagpb-256k.car")).unwrap();
    let d = device_with(tmp.path(), &c.root, &car);
    let o = d.ok(&["pull", &c.root]);
    let all = stdout(&o) + &stderr(&o);
    assert!(
        all.contains(&format!(
            "{} was made by another tool; re-encoded under unixfs-v1-2025 as {}",
            c.root, c.profile_root
        )),
        "{all}"
    );
}

/// Runs a pull expected to be refused with exit 4, changing nothing, and returns stderr.
fn refused(d: &Device, root: &str) -> String {
    let before = d.snapshot();
    let o = d.run(&["pull", root]);
    assert_eq!(code(&o), Some(4), "{root}: {}{}", stdout(&o), stderr(&o));
    assert_eq!(d.snapshot(), before, "{root}: nothing changed");
    stderr(&o)
}

// spec/sync.md#foreign-dags: in every fixture, one flipped byte inside its largest
// block is still exit 4, naming that block, and changes nothing.
#[test]
fn every_foreign_fixture_tampered_exits_4() {
    for c in cases() {
        let car = std::fs::read(fixture(&format!("foreign/{}.car", c.name))).unwrap();
        let root: Cid = c.root.parse().unwrap();
        let blocks = read_car(car.as_slice(), &root, &CarLimits::default()).unwrap();
        let (big, data) = blocks.iter().max_by_key(|(_, b)| b.len()).unwrap();
        let at = car
            .windows(data.len())
            .position(|w| w == data.as_slice())
            .unwrap();
        let mut tampered = car.clone();
        tampered[at + data.len() / 2] ^= 1;
        let tmp = tempfile::tempdir().unwrap();
        let d = device_with(tmp.path(), &c.root, &tampered);
        let err = refused(&d, &c.root);
        assert!(err.contains(&format!("block {big}")), "{}: {err}", c.name);
        assert!(err.contains("does not match its hash"), "{}: {err}", c.name);
    }
}

// spec/sync.md#foreign-dags: a tampered block or a missing block of another tool's CAR is
// still exit 4, naming the CID.
#[test]
fn a_tampered_or_incomplete_foreign_car_exits_4() {
    let c = cases()
        .into_iter()
        .find(|c| c.name == "cidv0-dagpb-256k")
        .unwrap();
    let car = std::fs::read(fixture("foreign/cidv0-dagpb-256k.car")).unwrap();
    let root: Cid = c.root.parse().unwrap();
    let blocks = read_car(car.as_slice(), &root, &CarLimits::default()).unwrap();
    // Flip one byte of the largest block (a 256 KiB dag-pb leaf, CIDv0).
    let (big, data) = blocks.iter().max_by_key(|(_, b)| b.len()).unwrap();
    assert_eq!(big.version(), cid::Version::V0);
    let at = car.windows(64).position(|w| w == &data[..64]).unwrap() + 1000;
    let mut tampered = car.clone();
    tampered[at] ^= 1;
    let tmp = tempfile::tempdir().unwrap();
    let d = device_with(tmp.path(), &c.root, &tampered);
    let err = refused(&d, &c.root);
    assert!(err.contains(&format!("block {big}")), "{err}");
    assert!(err.contains("does not match its hash"), "{err}");
    // The same CAR without that block.
    let mut out = Vec::new();
    write_car_blocks(
        &root,
        blocks
            .iter()
            .filter(|(cid, _)| *cid != big)
            .map(|(cid, b)| (cid, b.as_slice())),
        &mut out,
    )
    .unwrap();
    std::fs::write(d.remote.join(format!("cars/{}.car", c.root)), &out).unwrap();
    let err = refused(&d, &c.root);
    assert!(err.contains(&format!("block {big} is missing")), "{err}");
    assert!(!err.contains("did not match its CID"), "{err}");
}

fn v0_of(block: &[u8]) -> Cid {
    let v1 = unixfs::block_cid(unixfs::CODEC_DAG_PB, block);
    Cid::new_v0(*v1.hash()).unwrap()
}

fn store_blocks(d: &Device, root: &Cid, blocks: &[(Cid, Vec<u8>)]) {
    let mut out = Vec::new();
    write_car_blocks(
        root,
        blocks.iter().map(|(c, b)| (c, b.as_slice())),
        &mut out,
    )
    .unwrap();
    std::fs::write(d.remote.join(format!("cars/{root}.car")), out).unwrap();
}

// spec/sync.md#foreign-dags: what is not a UnixFS directory of a memory is refused, naming
// the CID and the problem, and a CIDv0 is never told "the data did not match its CID".
#[test]
fn what_is_not_a_memory_directory_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let d = device_with(tmp.path(), "none", b"");
    // A bare file root (CIDv0, a dag-pb File node as `ipfs add` writes it).
    let file = [0x0a, 0x08, 0x08, 0x02, 0x12, 0x02, b'h', b'i', 0x18, 0x02];
    let root = v0_of(&file);
    store_blocks(&d, &root, &[(root, file.to_vec())]);
    let err = refused(&d, &root.to_string());
    assert!(
        err.contains(&format!("{root} is a single file, not a memory directory")),
        "{err}"
    );
    assert!(!err.contains("did not match its CID"), "{err}");
    // A directory holding a symlink.
    let link = [0x0a, 0x05, 0x08, 0x04, 0x12, 0x01, b'x'];
    let lc = v0_of(&link);
    let dir = dir_block(&[("a.md", &lc)]);
    let root = v0_of(&dir);
    store_blocks(&d, &root, &[(root, dir), (lc, link.to_vec())]);
    let err = refused(&d, &root.to_string());
    assert!(
        err.contains(&format!("block {lc} is a UnixFS symlink node (type 4)")),
        "{err}"
    );
    assert!(!err.contains("did not match its CID"), "{err}");
    // A link hashed with sha2-512 (which memdir cannot verify).
    let sha512 = Cid::new_v1(
        unixfs::CODEC_RAW,
        cid::multihash::Multihash::<64>::wrap(0x13, &[0; 64]).unwrap(),
    );
    let dir = dir_block(&[("a.md", &sha512)]);
    let root = v0_of(&dir);
    store_blocks(&d, &root, &[(root, dir)]);
    let err = refused(&d, &root.to_string());
    assert!(
        err.contains(&format!("links to unsupported CID {sha512}")),
        "{err}"
    );
    assert!(err.contains("sha2-256"), "{err}");
    assert!(!err.contains("did not match its CID"), "{err}");
    // The profile's own tree still pulls (sanity: the device itself is fine).
    let tree = Node::Dir([("a.md".to_string(), Node::File(b"a\n".to_vec()))].into());
    let dag = unixfs::build(&tree).unwrap();
    store_blocks(&d, &dag.root, &dag.blocks);
    d.ok(&["pull", &dag.root.to_string()]);
}

/// A dag-pb directory block (links in the given order, then Data {Type: Directory}).
fn dir_block(entries: &[(&str, &Cid)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, cid) in entries {
        let hash = cid.to_bytes();
        let mut link = vec![0x0a, hash.len() as u8];
        link.extend_from_slice(&hash);
        link.extend_from_slice(&[0x12, name.len() as u8]);
        link.extend_from_slice(name.as_bytes());
        link.extend_from_slice(&[0x18, 0x01]);
        out.push(0x12);
        out.push(link.len() as u8);
        out.extend_from_slice(&link);
    }
    out.extend_from_slice(&[0x0a, 0x02, 0x08, 0x01]);
    out
}

// spec/sync.md#foreign-dags: a directory whose small files are inline raw leaves
// (identity CIDs, `ipfs add --inline`) pulls, and is re-encoded with real leaves.
#[test]
fn inline_leaves_are_pulled() {
    let tmp = tempfile::tempdir().unwrap();
    let d = device_with(tmp.path(), "none", b"");
    let inline = Cid::new_v1(
        unixfs::CODEC_RAW,
        cid::multihash::Multihash::<64>::wrap(0, b"inline note\n").unwrap(),
    );
    let dir = dir_block(&[("a.md", &inline)]);
    let root = v0_of(&dir);
    store_blocks(&d, &root, &[(root, dir)]);
    let o = d.ok(&["pull", &root.to_string(), "--json"]);
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(std::fs::read(d.dir.join("a.md")).unwrap(), b"inline note\n");
    let tree = Node::Dir([("a.md".to_string(), Node::File(b"inline note\n".to_vec()))].into());
    let profile = unixfs::build(&tree).unwrap().root.to_string();
    assert_eq!(r["plain_root"], profile.as_str());
    assert_eq!(r["re_encoded"], true);
}
