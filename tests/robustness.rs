//! Untrusted bytes never panic a parser, and what a parser accepts is well-formed.
//!
//! Every parser of untrusted input gets arbitrary input and mutated valid input:
//! frontmatter (files a person or another tool wrote), timeline lines, the import blob,
//! CAR streams and dag-pb blocks (network responses). A panic fails the property; so
//! does accepting something that breaks the parser's own guarantee. (Coverage-guided
//! fuzzing needs a nightly toolchain this project does not use; these run in `cargo test`.)

use std::collections::BTreeMap;

use proptest::prelude::*;
use sha2::{Digest, Sha256};

use memdir::exchange::blob;
use memdir::ipfs::car::{CarLimits, car_bytes, read_car};
use memdir::ipfs::unixfs::{Node, build, decode_pb};
use memdir::memory::{frontmatter, timeline};

const VALID: &str = "---\nname: Tone\ndescription: direct critique\ntype: feedback\ncreated: 2026-03-22\nupdated: 2026-04-14\ntags: [a, b]\nowner:\n  team: core\n---\n\nBody line.\n";

fn mutate(base: &[u8], edits: &[(usize, u8)], cut: usize) -> Vec<u8> {
    let mut b = base.to_vec();
    for &(i, v) in edits {
        if !b.is_empty() {
            let n = b.len();
            b[i % n] = v;
        }
    }
    b.truncate(cut.min(b.len()));
    b
}

fn sample_car() -> (cid::Cid, Vec<u8>) {
    let mut m = BTreeMap::new();
    m.insert(
        "MEMORY.md".to_string(),
        Node::File(b"# Agent Memory\n".to_vec()),
    );
    m.insert(
        "user_role.md".to_string(),
        Node::File(VALID.as_bytes().to_vec()),
    );
    let mut t = BTreeMap::new();
    t.insert(
        "2026-04-14.jsonl".to_string(),
        Node::File(b"{\"ts\":\"2026-04-14T12:00:00Z\",\"type\":\"x\"}\n".to_vec()),
    );
    m.insert("timeline".to_string(), Node::Dir(t));
    let dag = build(&Node::Dir(m)).unwrap();
    (dag.root, car_bytes(&dag))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn frontmatter_never_panics_and_accepted_files_round_trip(
        text in "(---\n)?[ -~\n\t:#\\-\\[\\]{}\"'|>&*!%@`,]{0,300}(\n---\n)?[ -~\n]{0,50}",
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in any::<usize>(),
    ) {
        // A blob's file is read both ways; whatever it takes must load as written.
        if let Ok(p) = frontmatter::parse_portable(&text) {
            prop_assert_eq!(frontmatter::parse(&p.text).unwrap().meta.name, p.parsed.meta.name);
        }
        if let Ok(p) = frontmatter::parse(&text) {
            let again = frontmatter::parse(&frontmatter::render(&p.meta, &p.body)).unwrap();
            prop_assert_eq!(again.meta.name, p.meta.name);
            prop_assert_eq!(again.body, p.body);
            prop_assert_eq!(frontmatter::parse_read(&text).unwrap().meta.description, p.meta.description);
        }
        let bytes = mutate(VALID.as_bytes(), &edits, cut);
        if let Ok(t) = std::str::from_utf8(&bytes) {
            let _ = frontmatter::parse(t);
            let _ = frontmatter::parse_read(t);
        }
    }

    #[test]
    fn timeline_lines_never_panic_and_accepted_lines_re_encode(
        line in "\\PC{0,120}",
        json_ish in "\\{[ -~]{0,80}\\}",
        frac in "[0-9]{0,9}",
        extra in "[a-z]{1,8}",
    ) {
        let event = format!(r#"{{"ts":"2026-04-14T12:00:00.{frac}Z","type":"{extra}","{extra}":[1,{{"a":null}}]}}"#);
        for l in [&line, &json_ish, &event] {
            if let Ok(e) = timeline::parse_line(l) {
                // Encoding normalizes `ts` to milliseconds; after that it is stable.
                let back = timeline::parse_line(&e.encode()).unwrap();
                prop_assert_eq!(back.encode(), e.encode());
            }
        }
    }

    #[test]
    fn blobs_never_panic_and_accepted_names_are_safe(
        raw in proptest::collection::vec(any::<u8>(), 0..200),
        names in proptest::collection::vec("[ -~]{0,12}", 0..5),
    ) {
        let _ = blob::decode(&raw);
        let files: Vec<String> = names.iter().map(|n| format!("{n:?}: {:?}", VALID)).collect();
        let doc = format!(r#"{{"version":"memory/0.1","files":{{{}}},"timeline":[]}}"#, files.join(","));
        if let Ok(inc) = blob::decode(doc.as_bytes()) {
            for f in &inc.files {
                prop_assert!(blob::check_name(&f.key.file_name()).is_ok());
            }
        }
    }

    #[test]
    fn car_reader_never_panics_and_accepts_only_verified_blocks(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in any::<usize>(),
        noise in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let (root, car) = sample_car();
        let limits = CarLimits::default();
        for input in [mutate(&car, &edits, cut), noise.clone()] {
            if let Ok(blocks) = read_car(&input[..], &root, &limits) {
                for (cid, data) in &blocks {
                    let digest = Sha256::digest(data);
                    prop_assert_eq!(cid.hash().digest(), &digest[..]);
                }
                prop_assert!(blocks.contains_key(&root));
            }
        }
        let _ = decode_pb(&noise);
    }
}
