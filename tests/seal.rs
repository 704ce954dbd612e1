//! The encrypted-ipfs envelope (`memdir::sync::seal`): round trips, tamper and forgery
//! rejection, key files, and the Rust half of the PyNaCl interop run (`ci/seal/run.sh`).

use std::path::Path;

use cid::Cid;
use crypto_box::aead::OsRng;
use memdir::sync::seal::{
    self, Key, KeyFileError, MAC_KEY_LABEL, MAGIC, Plain, SEAL_OVERHEAD, SealError, Sealed, bucket,
    hmac_sha256,
};
use proptest::prelude::*;

fn raw_cid(data: &[u8]) -> Cid {
    memdir::ipfs::unixfs::block_cid(memdir::ipfs::unixfs::CODEC_RAW, data)
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// An independent writer of the envelope format (module docs of `memdir::sync::seal`), with the
/// MAC key derived from `mac_secret`.
pub(crate) fn build_envelope(root: &Cid, car: &[u8], mac_secret: &[u8; 32]) -> Vec<u8> {
    let root = root.to_bytes();
    let mut env = MAGIC.to_vec();
    env.extend_from_slice(&(root.len() as u16).to_be_bytes());
    env.extend_from_slice(&root);
    env.extend_from_slice(&(car.len() as u64).to_be_bytes());
    env.extend_from_slice(car);
    let mac = hmac_sha256(&hmac_sha256(mac_secret, MAC_KEY_LABEL), &env);
    env.extend_from_slice(&mac);
    let padded = bucket(env.len());
    env.resize(padded, 0);
    env
}

pub(crate) fn raw_seal(env: &[u8], key: &Key) -> Sealed {
    Sealed::from_bytes(key.public_key().seal(&mut OsRng, env).unwrap())
}

fn variant(e: &SealError) -> &'static str {
    match e {
        SealError::Truncated { .. } => "Truncated",
        SealError::Decrypt => "Decrypt",
        SealError::BadMagic => "BadMagic",
        SealError::EnvelopeTruncated { .. } => "EnvelopeTruncated",
        SealError::BadRoot { .. } => "BadRoot",
        SealError::MacMismatch => "MacMismatch",
        SealError::PaddingLength { .. } => "PaddingLength",
        SealError::PaddingNotZero { .. } => "PaddingNotZero",
        SealError::RootMismatch { .. } => "RootMismatch",
        SealError::Seal { .. } => "Seal",
        SealError::RootTooLong { .. } => "RootTooLong",
        SealError::BadLineage { .. } => "BadLineage",
    }
}

#[test]
fn round_trip_small_and_sizes() {
    let key = seal::generate_key();
    for n in [0, 1, 4000, 4041, 5000, 70_000] {
        let car = bytes(n, 1);
        let plain = Plain::new(raw_cid(&car), car);
        let sealed = seal::seal(&plain, &key).unwrap();
        let unpadded = MAGIC.len() + 2 + plain.root().to_bytes().len() + 8 + n + 32;
        assert_eq!(sealed.len(), bucket(unpadded) + SEAL_OVERHEAD, "n={n}");
        let opened = seal::open(&sealed, &key, Some(plain.root())).unwrap();
        assert_eq!(opened, plain);
        // The independent writer produces what the box contains.
        let again = raw_seal(&build_envelope(plain.root(), plain.car(), &[0; 32]), &key);
        assert_eq!(
            variant(&seal::open(&again, &key, None).unwrap_err()),
            "MacMismatch"
        );
    }
}

#[test]
fn independent_envelope_writer_matches() {
    let key = Key::from_secret_bytes([5; 32]);
    let car = bytes(1234, 9);
    let root = raw_cid(&car);
    let sealed = raw_seal(&build_envelope(&root, &car, &[5; 32]), &key);
    let plain = seal::open(&sealed, &key, Some(&root)).unwrap();
    assert_eq!(plain.car(), &car[..]);
}

#[test]
fn sizes_are_bucketed() {
    let key = seal::generate_key();
    let a = seal::seal(&Plain::new(raw_cid(b"a"), vec![0; 10]), &key).unwrap();
    let b = seal::seal(&Plain::new(raw_cid(b"b"), vec![0; 3000]), &key).unwrap();
    assert_eq!(a.len(), b.len());
    assert_eq!(a.len(), 4096 + 48);
}

#[test]
fn wrong_key_is_rejected() {
    let key = seal::generate_key();
    let other = seal::generate_key();
    let plain = Plain::new(raw_cid(b"r"), b"car".to_vec());
    let sealed = seal::seal(&plain, &key).unwrap();
    assert!(matches!(
        seal::open(&sealed, &other, None),
        Err(SealError::Decrypt)
    ));
}

#[test]
fn root_mismatch_is_rejected() {
    let key = seal::generate_key();
    let plain = Plain::new(raw_cid(b"r"), b"car".to_vec());
    let sealed = seal::seal(&plain, &key).unwrap();
    let other = raw_cid(b"other");
    match seal::open(&sealed, &key, Some(&other)) {
        Err(SealError::RootMismatch { expected, found }) => {
            assert_eq!(expected, other);
            assert_eq!(&found, plain.root());
        }
        r => panic!("{r:?}"),
    }
}

/// Sealed boxes are anonymous: anyone with our public key can make one. Without our
/// secret key the MAC is wrong, and the blob is rejected.
#[test]
fn anonymous_forgery_is_rejected() {
    let key = seal::generate_key();
    let car = b"attacker's car".to_vec();
    let root = raw_cid(&car);
    for forger_secret in [[0u8; 32], [1; 32], [0x42; 32]] {
        let forged = raw_seal(&build_envelope(&root, &car, &forger_secret), &key);
        assert!(matches!(
            seal::open(&forged, &key, Some(&root)),
            Err(SealError::MacMismatch)
        ));
    }
    // The forger can also guess the MAC key from the *public* key; still wrong.
    let forged = raw_seal(&build_envelope(&root, &car, &key.public_bytes()), &key);
    assert!(matches!(
        seal::open(&forged, &key, None),
        Err(SealError::MacMismatch)
    ));
}

/// Every byte position of a (smallest-bucket) sealed box, flipped: all must fail. Opening
/// costs an X25519 multiplication, slow in debug builds, so the positions are split
/// across threads; `random_single_byte_change_is_rejected` covers other flip values.
#[test]
fn every_single_byte_change_is_rejected() {
    let key = seal::generate_key();
    let plain = Plain::new(raw_cid(b"small"), b"tiny car".to_vec());
    let sealed = seal::seal(&plain, &key).unwrap().into_bytes();
    assert_eq!(sealed.len(), 4096 + 48);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let positions: Vec<usize> = (0..sealed.len()).collect();
    std::thread::scope(|s| {
        for chunk in positions.chunks(sealed.len().div_ceil(threads)) {
            let (key, sealed) = (&key, &sealed);
            s.spawn(move || {
                for &i in chunk {
                    let mut bad = sealed.clone();
                    bad[i] ^= 0x01;
                    let r = seal::open(&Sealed::from_bytes(bad), key, None);
                    assert!(matches!(r, Err(SealError::Decrypt)), "byte {i}: {r:?}");
                }
            });
        }
    });
}

#[test]
fn truncated_and_extended_inputs_are_rejected() {
    let key = seal::generate_key();
    let sealed = seal::seal(&Plain::new(raw_cid(b"t"), vec![7; 100]), &key)
        .unwrap()
        .into_bytes();
    for n in [0, 1, 47, 48, 100, 4096, sealed.len() - 1] {
        let r = seal::open(&Sealed::from_bytes(sealed[..n].to_vec()), &key, None);
        let want = if n < 4096 + 48 {
            "Truncated"
        } else {
            "Decrypt"
        };
        assert_eq!(variant(&r.unwrap_err()), want, "n={n}");
    }
    let mut longer = sealed.clone();
    longer.push(0);
    let r = seal::open(&Sealed::from_bytes(longer), &key, None);
    assert_eq!(variant(&r.unwrap_err()), "Decrypt");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn seal_open_round_trip(n in 0usize..300_000, seed: u8, secret: [u8; 32]) {
        let key = Key::from_secret_bytes(secret);
        let car = bytes(n, seed);
        let plain = Plain::new(raw_cid(&car[..n.min(64)]), car);
        let sealed = seal::seal(&plain, &key).unwrap();
        prop_assert_eq!(seal::open(&sealed, &key, Some(plain.root())).unwrap(), plain);
    }

    #[test]
    fn random_single_byte_change_is_rejected(n in 0usize..20_000, pos: prop::sample::Index, flip in 1u8..=255) {
        let key = seal::generate_key();
        let plain = Plain::new(raw_cid(b"p"), bytes(n, 3));
        let mut sealed = seal::seal(&plain, &key).unwrap().into_bytes();
        let i = pos.index(sealed.len());
        sealed[i] ^= flip;
        let r = seal::open(&Sealed::from_bytes(sealed), &key, None);
        prop_assert!(matches!(r, Err(SealError::Decrypt)), "{:?}", r);
    }
}

#[cfg(unix)]
#[test]
fn key_files() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let mem = tmp.path().join("memory");
    std::fs::create_dir(&mem).unwrap();
    let key = seal::generate_key();
    let path = tmp.path().join("memdir.key");
    seal::write_key_file(&path, &key, &mem).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(seal::read_key_file(&path).unwrap(), key);

    // Never overwrite.
    let other = seal::generate_key();
    assert!(matches!(
        seal::write_key_file(&path, &other, &mem),
        Err(KeyFileError::Exists { .. })
    ));
    assert_eq!(seal::read_key_file(&path).unwrap(), key);

    // Never inside the memory directory, however the path is spelled.
    for inside in [
        mem.join("k"),
        mem.join("..").join("memory").join("k"),
        mem.join(".").join("k"),
    ] {
        assert!(
            matches!(
                seal::write_key_file(&inside, &key, &mem),
                Err(KeyFileError::InsideMemoryDir { .. })
            ),
            "{}",
            inside.display()
        );
        assert!(!inside.exists());
    }
    // Nor through a symlinked parent.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&mem, &link).unwrap();
    assert!(matches!(
        seal::write_key_file(&link.join("k"), &key, &mem),
        Err(KeyFileError::InsideMemoryDir { .. })
    ));
    // Nor where a memory directory that does not exist yet will be.
    let later = tmp.path().join("later");
    assert!(matches!(
        seal::write_key_file(&later, &key, &tmp.path().join(".").join("later")),
        Err(KeyFileError::InsideMemoryDir { .. })
    ));
    assert!(!later.exists());
    let sub = tmp.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    assert!(matches!(
        seal::write_key_file(&sub.join("k"), &key, &sub.join("..").join("sub")),
        Err(KeyFileError::InsideMemoryDir { .. })
    ));
    assert!(matches!(
        seal::write_key_file(&sub.join("k"), &key, &sub.join("mem")),
        Ok(())
    ));
    // Nor with a missing parent.
    assert!(matches!(
        seal::write_key_file(&tmp.path().join("nope/k"), &key, &mem),
        Err(KeyFileError::Io { .. })
    ));

    // Group/world-readable key files are refused, with the fix in the message.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = seal::read_key_file(&path).unwrap_err();
    assert!(matches!(e, KeyFileError::Permissions { mode: 0o644, .. }));
    assert!(e.to_string().contains("chmod 600"), "{e}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();

    // A damaged file names its line.
    let bad = tmp.path().join("bad.key");
    std::fs::write(&bad, "memdir-key-v1\nsecret: nope\n").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let e = seal::read_key_file(&bad).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}

/// The Rust half of `ci/seal/run.sh`; does nothing unless `MEMDIR_SEAL_INTEROP_DIR` is set.
/// Phase `export` writes a key file and boxes for PyNaCl to open; phase `import` opens the
/// boxes PyNaCl sealed and records each result in `rust-results.txt`.
#[test]
fn pynacl_interop() {
    let Ok(dir) = std::env::var("MEMDIR_SEAL_INTEROP_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    let phase = std::env::var("MEMDIR_SEAL_INTEROP_PHASE").unwrap_or_default();
    match phase.as_str() {
        "export" => interop_export(dir),
        "import" => interop_import(dir),
        other => panic!("MEMDIR_SEAL_INTEROP_PHASE must be export or import, not {other:?}"),
    }
}

fn interop_export(dir: &Path) {
    let mem = dir.join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    let key = seal::generate_key();
    seal::write_key_file(&dir.join("memdir.key"), &key, &mem).unwrap();
    let mut names = String::new();
    for (i, n) in [0usize, 5, 4000, 30_000, 200_000, 1_100_000]
        .into_iter()
        .enumerate()
    {
        let car = bytes(n, i as u8);
        let plain = Plain::new(raw_cid(&car), car);
        let sealed = seal::seal(&plain, &key).unwrap();
        let name = format!("rust-{i}");
        std::fs::write(dir.join(format!("{name}.root")), plain.root().to_bytes()).unwrap();
        std::fs::write(dir.join(format!("{name}.car")), plain.car()).unwrap();
        std::fs::write(dir.join(format!("{name}.sealed")), sealed.as_bytes()).unwrap();
        names.push_str(&name);
        names.push('\n');
    }
    // MEMDIR-SEAL-2: the same with a lineage (`.lineage`: each CID as 1 length byte and
    // its bytes), none and three roots.
    for (i, n) in [(0usize, 10usize), (3, 5000)] {
        let car = bytes(n, 40 + i as u8);
        let lineage: Vec<Cid> = (0..i).map(|j| raw_cid(&[j as u8; 3])).collect();
        let plain = Plain::new(raw_cid(&car), car).with_lineage(lineage.clone());
        let sealed = seal::seal(&plain, &key).unwrap();
        let name = format!("rust-l{i}");
        std::fs::write(dir.join(format!("{name}.root")), plain.root().to_bytes()).unwrap();
        std::fs::write(dir.join(format!("{name}.car")), plain.car()).unwrap();
        std::fs::write(dir.join(format!("{name}.lineage")), lineage_file(&lineage)).unwrap();
        std::fs::write(dir.join(format!("{name}.sealed")), sealed.as_bytes()).unwrap();
        names.push_str(&name);
        names.push('\n');
    }
    std::fs::write(dir.join("rust-cases.txt"), names).unwrap();
}

fn lineage_file(lineage: &[Cid]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in lineage {
        let b = c.to_bytes();
        out.push(b.len() as u8);
        out.extend_from_slice(&b);
    }
    out
}

fn parse_lineage_file(mut bytes: &[u8]) -> Vec<Cid> {
    let mut out = Vec::new();
    while let Some((&n, rest)) = bytes.split_first() {
        out.push(Cid::try_from(&rest[..n as usize]).unwrap());
        bytes = &rest[n as usize..];
    }
    out
}

fn interop_import(dir: &Path) {
    let key = seal::read_key_file(&dir.join("memdir.key")).unwrap();
    let manifest = std::fs::read_to_string(dir.join("py-cases.txt")).unwrap();
    let mut out = String::new();
    let mut failed = 0;
    for line in manifest.lines().filter(|l| !l.trim().is_empty()) {
        let (name, expect) = line.split_once(' ').unwrap();
        let read = |ext: &str| std::fs::read(dir.join(format!("{name}.{ext}"))).unwrap();
        let root = Cid::try_from(read("root").as_slice()).unwrap();
        let car = read("car");
        let sealed = Sealed::from_bytes(read("sealed"));
        let lineage = std::fs::read(dir.join(format!("{name}.lineage")))
            .ok()
            .map(|b| parse_lineage_file(&b));
        let got = match seal::open(&sealed, &key, Some(&root)) {
            Ok(plain)
                if plain.car() == car
                    && plain.root() == &root
                    && plain.lineage() == lineage.as_deref() =>
            {
                "ok".to_string()
            }
            Ok(_) => "opened-but-different".to_string(),
            Err(e) => variant(&e).to_string(),
        };
        if got == expect {
            out.push_str(&format!("pass rust opens {name}: {got}\n"));
        } else {
            failed += 1;
            out.push_str(&format!(
                "fail rust opens {name}: expected {expect}, got {got}\n"
            ));
        }
    }
    std::fs::write(dir.join("rust-results.txt"), out).unwrap();
    assert_eq!(failed, 0, "see rust-results.txt");
}
