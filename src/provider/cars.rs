//! CARs for callers: the delta of a DAG against blocks a provider already holds, the
//! CID of a CAR, and the check that a provider stored the root it was sent.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use std::collections::HashSet;

use cid::Cid;
use cid::multihash::Multihash;
use sha2::{Digest, Sha256};

use crate::ipfs::unixfs::{Dag, MH_SHA2_256};
use crate::provider::{CODEC_CAR, ProviderError};

/// A delta CAR: the header names `dag.root`, the body holds only the blocks
/// of `dag` that are not in `known` (for example the CIDs of the DAG pushed
/// last time), in the DAG's order.
pub fn delta_car(dag: &Dag, known: &HashSet<Cid>) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = crate::ipfs::car::write_car_blocks(
        &dag.root,
        dag.blocks
            .iter()
            .filter(|(cid, _)| !known.contains(cid))
            .map(|(cid, data)| (cid, data.as_slice())),
        &mut out,
    );
    out
}

/// The CID of a CAR file itself (codec 0x0202, sha2-256), as Storacha names shards.
pub fn car_cid(car: &[u8]) -> Cid {
    let digest = Sha256::digest(car);
    let hash = Multihash::<64>::wrap(MH_SHA2_256, &digest)
        .expect("a 32-byte digest fits a 64-byte multihash");
    Cid::new_v1(CODEC_CAR, hash)
}

/// Parses a CID a provider reported and compares it with ours; CIDs are
/// compared as values, so base32 and base58btc spellings of one CID agree.
pub(crate) fn check_root(
    provider: &str,
    expected: &Cid,
    reported: &str,
) -> Result<(), ProviderError> {
    match Cid::try_from(reported.trim()) {
        Ok(cid) if cid == *expected => Ok(()),
        _ => Err(ProviderError::WrongRoot {
            provider: provider.to_string(),
            expected: *expected,
            reported: reported.chars().take(200).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Class;
    use crate::ipfs::car::{CarError, CarLimits};
    use crate::ipfs::unixfs::{Node, build};
    use crate::provider::Blocking;

    #[test]
    fn delta_car_has_only_new_blocks() {
        let mut files = std::collections::BTreeMap::new();
        files.insert("a.md".to_string(), Node::File(b"a\n".to_vec()));
        let v1 = build(&Node::Dir(files.clone())).expect("build");
        files.insert("b.md".to_string(), Node::File(b"b\n".to_vec()));
        let v2 = build(&Node::Dir(files)).expect("build");
        let known: HashSet<Cid> = v1.blocks.iter().map(|(c, _)| *c).collect();
        let delta = delta_car(&v2, &known);
        let full = crate::ipfs::car::car_bytes(&v2);
        assert!(delta.len() < full.len());
        // The delta is a valid CAR that lacks `a.md`'s block.
        match crate::ipfs::car::read_car(delta.as_slice(), &v2.root, &CarLimits::default()) {
            Err(CarError::MissingBlock { cid }) => assert!(known.contains(&cid)),
            other => panic!("expected a missing block, got {other:?}"),
        }
    }

    #[test]
    fn unknown_provider_name() {
        let err = Blocking::from_process_env("ftp").expect_err("no such provider");
        assert_eq!(err.class(), Class::Usage);
        assert!(err.to_string().contains("kubo, pinata"), "{err}");
    }

    #[test]
    fn car_cid_is_a_car_codec_cid() {
        let cid = car_cid(b"");
        assert_eq!(cid.codec(), CODEC_CAR);
        assert!(cid.to_string().starts_with("bagbaiera"));
    }

    #[test]
    fn check_root_accepts_any_base() {
        let cid: Cid = "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"
            .parse()
            .expect("cid");
        assert!(
            check_root(
                "t",
                &cid,
                "zb2rhj7crUKTQYRGCRATFaQ6YFLTde2YzdqbbhAASkL9uRDXn"
            )
            .is_ok()
        );
        let err = check_root(
            "t",
            &cid,
            "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku",
        )
        .expect_err("other root");
        assert_eq!(err.class(), Class::Integrity);
        assert!(check_root("t", &cid, "garbage").is_err());
    }

    #[test]
    fn classes_and_hints() {
        let status = |status| ProviderError::Status {
            provider: "pinata".into(),
            method: "POST".into(),
            url: "https://uploads.pinata.cloud/v3/files".into(),
            status,
            detail: String::new(),
        };
        assert_eq!(status(401).class(), Class::Remote);
        assert!(status(401).hint().expect("hint").contains("PINATA_JWT"));
        assert_eq!(
            ProviderError::AllFailed {
                provider: "gateway".into(),
                root: car_cid(b""),
                attempts: vec![status(500)],
            }
            .class(),
            Class::Remote
        );
    }
}
