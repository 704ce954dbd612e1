//! The `encrypted-ipfs` envelope: keys, key files, and sealing a plaintext CAR so a
//! provider only ever sees ciphertext.
//!
//! Plaintext and ciphertext are different types: a [`Plain`] (plaintext root CID + CAR
//! bytes) has no way to hand out bytes for upload; only a [`Sealed`] does. [`seal`] turns
//! the first into the second and [`open`] goes back, checking everything on the way.
//!
//! # Key file (`memdir-key-v1`)
//!
//! A UTF-8 text file, mode 0600, kept outside the memory directory:
//!
//! ```text
//! memdir-key-v1
//! # memdir encrypted-ipfs key. Anyone holding this file can read your synced memory;
//! # there is no recovery if you lose it.
//! secret: <standard base64 with padding of the 32-byte X25519 secret key>
//! public: <standard base64 with padding of the 32-byte X25519 public key>
//! ```
//!
//! - Line 1 is exactly `memdir-key-v1`.
//! - Blank lines and lines starting with `#` are ignored; a trailing `\r` is stripped.
//! - Every other line is `name: value`; `secret` and `public` must each appear exactly
//!   once (any order); any other name is an error.
//! - `public` must be the public key of `secret` (a typo in either is caught).
//! - Errors name the line number (1-based) and what was wrong.
//! - [`read_key_file`] refuses a file that is group- or world-accessible
//!   (`mode & 0o077 != 0`); [`write_key_file`] creates the file with mode 0600, never
//!   overwrites an existing file, and refuses a path inside the memory directory (the
//!   parent is canonicalized, so `dir/../dir/key` and symlinked parents are caught).
//!
//! # Envelope (the plaintext inside the sealed box)
//!
//! All integers are big-endian.
//!
//! ```text
//! offset        size      field
//! 0             13        magic "MEMDIR-SEAL-1" (ASCII)
//! 13            2         r = length of the root CID in bytes (1..=255)
//! 15            r         plaintext root CID, binary form (CIDv1)
//! 15+r          8         c = length of the CAR in bytes
//! 23+r          c         CAR bytes
//! 23+r+c        32        MAC = HMAC-SHA256(mac_key, bytes [0, 23+r+c))
//! 55+r+c        p         zero bytes, so that the total is bucket(55+r+c)
//! ```
//!
//! Version 2 (magic `MEMDIR-SEAL-2`, what a push seals) adds the lineage of the version
//! (spec/sync.md#lineage) between the root and the CAR, under the same MAC, so a blob
//! replayed from the past carries its own, older lineage and is recognised:
//!
//! ```text
//! 15+r          2         n = number of lineage roots (0..=256)
//! 17+r          ...       n times: 1 byte length l (1..=255), then l bytes of a CID
//! then          8 + c     CAR length and CAR, then the MAC over everything before it
//! ```
//!
//! `mac_key = HMAC-SHA256(key = secret key (32 bytes), msg = "memdir-seal-1 mac key")`.
//! The sealed box is anonymous (anyone with the public key can make one), so the MAC,
//! keyed by something only the secret key holder can derive, is what proves the blob
//! was written by one of the user's own devices.
//!
//! The padded envelope is then sealed with libsodium `crypto_box_seal` to the key's public
//! key: `ephemeral_pk (32) || XSalsa20-Poly1305 box (16-byte tag + ciphertext)`, 48 bytes
//! of overhead. PyNaCl's `SealedBox` opens it (see `ci/seal/`).
//!
//! # Padding rule
//!
//! `bucket(n)` = 4 KiB if `n <= 4 KiB`; the next power of two if `n <= 1 MiB`; otherwise
//! `n` rounded up to a multiple of 64 KiB. Small stores (the common case, a few KB to a
//! few hundred KB) then reveal only their size class, at a cost of at most 2× on a blob
//! that is at most 1 MiB; above 1 MiB doubling would add up to megabytes per push, so
//! the step becomes a fixed 64 KiB (at most 6.25% overhead, size hidden to 64 KiB).
//! The padding is stripped exactly: the explicit CAR length says where the MAC ends, the
//! rest must be all zero and the total must be exactly `bucket` of the unpadded length.
//!
//! # Checks on open, in order (each failure its own [`SealError`] variant)
//!
//! length ≥ 48 + 4096 ([`SealError::Truncated`]) → box opens with our secret key
//! ([`SealError::Decrypt`]: wrong key or any changed byte; the two cannot be told apart)
//! → magic ([`SealError::BadMagic`]) → length fields fit ([`SealError::EnvelopeTruncated`])
//! → MAC ([`SealError::MacMismatch`]: sealed by someone without the secret key) →
//! padding length ([`SealError::PaddingLength`]) and content ([`SealError::PaddingNotZero`])
//! → root parses as a canonical CID ([`SealError::BadRoot`]) → expected root
//! ([`SealError::RootMismatch`]).
//!
//! This module is pure apart from [`generate_key`] and [`seal`] (which draw randomness from
//! the OS) and the two key-file functions.

// Errors carry CIDs by value (see `car.rs`); they are built only on the failure path.
#![allow(clippy::result_large_err)]

use std::fmt;

use cid::Cid;
use crypto_box::aead::OsRng;
use crypto_box::{PublicKey, SecretKey};
use data_encoding::BASE64;
use sha2::{Digest, Sha256};

/// The envelope's first bytes.
pub const MAGIC: &[u8; 13] = b"MEMDIR-SEAL-1";
/// The first bytes of an envelope that carries a lineage.
pub const MAGIC_2: &[u8; 13] = b"MEMDIR-SEAL-2";
/// Lineage roots an envelope may carry.
pub const MAX_LINEAGE: usize = 256;
/// The first line of a key file.
pub const KEY_FILE_HEADER: &str = "memdir-key-v1";
/// Hashed before the public key in [`Key::fingerprint`].
pub const FINGERPRINT_LABEL: &[u8] = b"memdir key fingerprint v1";
/// HMAC message that derives the MAC key from the secret key.
pub const MAC_KEY_LABEL: &[u8] = b"memdir-seal-1 mac key";
/// Bytes `crypto_box_seal` adds: ephemeral public key (32) + Poly1305 tag (16).
pub const SEAL_OVERHEAD: usize = 48;
/// Smallest padded envelope.
pub const MIN_BUCKET: usize = 4096;
/// Above this, buckets grow in [`LARGE_STEP`] steps instead of doubling.
pub const POW2_LIMIT: usize = 1 << 20;
/// Bucket step above [`POW2_LIMIT`].
pub const LARGE_STEP: usize = 64 << 10;
const MAC_LEN: usize = 32;
const MAX_ROOT_LEN: usize = 255;

/// A user's encrypted-ipfs keypair (X25519). `Debug` never prints the secret.
#[derive(Clone)]
pub struct Key {
    secret: SecretKey,
    public: PublicKey,
}

impl Key {
    /// The key for a 32-byte secret.
    pub fn from_secret_bytes(secret: [u8; 32]) -> Key {
        let secret = SecretKey::from(secret);
        let public = secret.public_key();
        Key { secret, public }
    }

    /// The public key, 32 bytes.
    pub fn public_bytes(&self) -> [u8; 32] {
        self.public.to_bytes()
    }

    /// The public key (what boxes are sealed to).
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// Which key this is, without revealing it: `x25519-sha256:` and the first 16
    /// bytes (hex) of SHA-256 over [`FINGERPRINT_LABEL`] and the public key. The sync
    /// state records it per push, so a push with another key re-seals
    /// (spec/sync.md#key-rotation).
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        h.update(FINGERPRINT_LABEL);
        h.update(self.public.as_bytes());
        let digest = h.finalize();
        format!(
            "x25519-sha256:{}",
            data_encoding::HEXLOWER.encode(&digest[..16])
        )
    }

    /// The key file text (format in the module docs).
    pub fn to_file_text(&self) -> String {
        format!(
            "{KEY_FILE_HEADER}\n\
             # memdir encrypted-ipfs key. Anyone holding this file can read your synced memory;\n\
             # there is no recovery if you lose it.\n\
             secret: {}\npublic: {}\n",
            BASE64.encode(&self.secret.to_bytes()),
            BASE64.encode(self.public.as_bytes()),
        )
    }

    fn mac_key(&self) -> [u8; 32] {
        hmac_sha256(&self.secret.to_bytes(), MAC_KEY_LABEL)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("public", &BASE64.encode(self.public.as_bytes()))
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.secret.to_bytes() == other.secret.to_bytes()
    }
}

impl Eq for Key {}

/// A fresh random key from the OS RNG.
pub fn generate_key() -> Key {
    let secret = SecretKey::generate(&mut OsRng);
    let public = secret.public_key();
    Key { secret, public }
}

/// Plaintext: the envelope's input and [`open`]'s output. It deliberately has no method
/// that returns bytes to upload; only [`Sealed`] does.
#[derive(Clone, PartialEq, Eq)]
pub struct Plain {
    root: Cid,
    car: Vec<u8>,
    lineage: Option<Vec<Cid>>,
}

impl Plain {
    /// A plaintext root CID and the CAR whose root it is.
    pub fn new(root: Cid, car: Vec<u8>) -> Plain {
        Plain {
            root,
            car,
            lineage: None,
        }
    }

    /// The same, with the lineage of the version (sealed as `MEMDIR-SEAL-2`).
    pub fn with_lineage(mut self, lineage: Vec<Cid>) -> Plain {
        self.lineage = Some(lineage);
        self
    }

    /// The lineage sealed with it (`None` for a `MEMDIR-SEAL-1` envelope).
    pub fn lineage(&self) -> Option<&[Cid]> {
        self.lineage.as_deref()
    }

    /// The plaintext root CID.
    pub fn root(&self) -> &Cid {
        &self.root
    }

    /// The CAR bytes.
    pub fn car(&self) -> &[u8] {
        &self.car
    }

    /// Root and CAR.
    pub fn into_parts(self) -> (Cid, Vec<u8>) {
        (self.root, self.car)
    }
}

impl fmt::Debug for Plain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plain")
            .field("root", &self.root.to_string())
            .field("car_len", &self.car.len())
            .finish()
    }
}

/// Ciphertext: what may be uploaded, and what a download is before [`open`].
#[derive(Clone, PartialEq, Eq)]
pub struct Sealed(Vec<u8>);

impl Sealed {
    /// Wraps downloaded bytes (nothing is checked until [`open`]).
    pub fn from_bytes(bytes: Vec<u8>) -> Sealed {
        Sealed(bytes)
    }

    /// The ciphertext.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The ciphertext, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when empty (never for a [`seal`] output).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Sealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sealed({} bytes)", self.0.len())
    }
}

/// Why sealing or opening failed. Every variant is a distinct cause.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// Shorter than the smallest possible sealed envelope.
    #[error("sealed blob is {len} bytes; the smallest possible is {min} (truncated?)")]
    Truncated {
        /// The blob's length.
        len: usize,
        /// The smallest sealed envelope.
        min: usize,
    },
    /// The box did not open with our secret key: a wrong key or altered ciphertext.
    #[error("sealed blob does not open with this key (wrong key, or the blob was altered)")]
    Decrypt,
    /// The opened envelope does not start with [`MAGIC`].
    #[error("sealed blob opened but is not a memdir envelope (bad magic)")]
    BadMagic,
    /// A length field points past the end of the envelope.
    #[error("memdir envelope is truncated in its {field} (needs {needed} bytes, has {available})")]
    EnvelopeTruncated {
        /// The field that is cut short.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left.
        available: usize,
    },
    /// The root CID field is empty, too long, or not a CID.
    #[error("memdir envelope root CID is invalid: {reason}")]
    BadRoot {
        /// What is wrong with it.
        reason: String,
    },
    /// The MAC does not match: the box was sealed by someone without our secret key.
    #[error("memdir envelope MAC does not match: it was not sealed with this secret key (forged?)")]
    MacMismatch,
    /// The padded length is not the bucket of the unpadded length.
    #[error("memdir envelope padding: total {actual} bytes, expected {expected}")]
    PaddingLength {
        /// The padded length.
        actual: usize,
        /// The bucket of the unpadded length.
        expected: usize,
    },
    /// A padding byte is not zero.
    #[error("memdir envelope padding byte at offset {offset} is not zero")]
    PaddingNotZero {
        /// Where the byte is.
        offset: usize,
    },
    /// The envelope's root is not the one the caller expected.
    #[error("memdir envelope root is {found}, expected {expected}")]
    RootMismatch {
        /// The root the caller expected.
        expected: Cid,
        /// The root the envelope names.
        found: Cid,
    },
    /// `crypto_box_seal` itself failed (message too large for the cipher).
    #[error("crypto_box_seal failed on a {len}-byte envelope")]
    Seal {
        /// The envelope's length.
        len: usize,
    },
    /// A lineage root in the envelope is not a CID, or there are too many.
    #[error("memdir envelope lineage is invalid: {reason}")]
    BadLineage {
        /// What is wrong with it.
        reason: String,
    },
    /// The plaintext root CID is too long for the envelope's length field.
    #[error("plaintext root CID is {len} bytes; at most {MAX_ROOT_LEN} fit")]
    RootTooLong {
        /// The CID's length in bytes.
        len: usize,
    },
}

/// The padded size for an unpadded envelope of `n` bytes (see the module docs).
pub fn bucket(n: usize) -> usize {
    if n <= MIN_BUCKET {
        MIN_BUCKET
    } else if n <= POW2_LIMIT {
        n.next_power_of_two()
    } else {
        n.div_ceil(LARGE_STEP) * LARGE_STEP
    }
}

/// The padded envelope for `plain` (deterministic; the plaintext inside the box).
fn envelope(plain: &Plain, key: &Key) -> Result<Vec<u8>, SealError> {
    envelope_with_mac_key(plain, &key.mac_key())
}

fn envelope_with_mac_key(plain: &Plain, mac_key: &[u8; 32]) -> Result<Vec<u8>, SealError> {
    let root = plain.root.to_bytes();
    if root.len() > MAX_ROOT_LEN {
        return Err(SealError::RootTooLong { len: root.len() });
    }
    let mut lineage = Vec::new();
    if let Some(l) = &plain.lineage {
        if l.len() > MAX_LINEAGE {
            return Err(SealError::BadLineage {
                reason: format!("{} roots, at most {MAX_LINEAGE}", l.len()),
            });
        }
        lineage.extend_from_slice(&(l.len() as u16).to_be_bytes());
        for c in l {
            let b = c.to_bytes();
            if b.is_empty() || b.len() > MAX_ROOT_LEN {
                return Err(SealError::RootTooLong { len: b.len() });
            }
            lineage.push(b.len() as u8);
            lineage.extend_from_slice(&b);
        }
    }
    let unpadded = MAGIC.len() + 2 + root.len() + lineage.len() + 8 + plain.car.len() + MAC_LEN;
    let mut out = Vec::with_capacity(bucket(unpadded));
    out.extend_from_slice(if plain.lineage.is_some() {
        MAGIC_2
    } else {
        MAGIC
    });
    out.extend_from_slice(&(root.len() as u16).to_be_bytes());
    out.extend_from_slice(&root);
    out.extend_from_slice(&lineage);
    out.extend_from_slice(&(plain.car.len() as u64).to_be_bytes());
    out.extend_from_slice(&plain.car);
    let mac = hmac_sha256(mac_key, &out);
    out.extend_from_slice(&mac);
    out.resize(bucket(unpadded), 0);
    Ok(out)
}

/// Seals `plain` to `key`'s public key, with a MAC from its secret key.
pub fn seal(plain: &Plain, key: &Key) -> Result<Sealed, SealError> {
    let env = envelope(plain, key)?;
    seal_raw(&env, &key.public).map(Sealed)
}

fn seal_raw(envelope: &[u8], public: &PublicKey) -> Result<Vec<u8>, SealError> {
    public
        .seal(&mut OsRng, envelope)
        .map_err(|_| SealError::Seal {
            len: envelope.len(),
        })
}

/// Opens a sealed blob with `key`, checks its MAC and padding and, when given, that its
/// plaintext root is `expected_root`.
pub fn open(sealed: &Sealed, key: &Key, expected_root: Option<&Cid>) -> Result<Plain, SealError> {
    let min = SEAL_OVERHEAD + MIN_BUCKET;
    if sealed.0.len() < min {
        return Err(SealError::Truncated {
            len: sealed.0.len(),
            min,
        });
    }
    let env = key
        .secret
        .unseal(&sealed.0)
        .map_err(|_| SealError::Decrypt)?;
    let plain = parse_envelope(&env, &key.mac_key())?;
    if let Some(expected) = expected_root
        && *expected != plain.root
    {
        return Err(SealError::RootMismatch {
            expected: *expected,
            found: plain.root,
        });
    }
    Ok(plain)
}

fn take<'a>(
    env: &'a [u8],
    at: &mut usize,
    n: usize,
    field: &'static str,
) -> Result<&'a [u8], SealError> {
    let available = env.len() - *at;
    if n > available {
        return Err(SealError::EnvelopeTruncated {
            field,
            needed: n,
            available,
        });
    }
    let s = &env[*at..*at + n];
    *at += n;
    Ok(s)
}

fn parse_envelope(env: &[u8], mac_key: &[u8; 32]) -> Result<Plain, SealError> {
    let version2 = env.len() >= MAGIC.len() && &env[..MAGIC.len()] == MAGIC_2;
    if !version2 && (env.len() < MAGIC.len() || &env[..MAGIC.len()] != MAGIC) {
        return Err(SealError::BadMagic);
    }
    let mut at = MAGIC.len();
    let rlen = take(env, &mut at, 2, "root length")?;
    let rlen = u16::from_be_bytes([rlen[0], rlen[1]]) as usize;
    let root_bytes = take(env, &mut at, rlen, "root CID")?;
    let mut lineage_bytes: Vec<&[u8]> = Vec::new();
    if version2 {
        let n = take(env, &mut at, 2, "lineage count")?;
        let n = u16::from_be_bytes([n[0], n[1]]) as usize;
        for _ in 0..n {
            let l = take(env, &mut at, 1, "lineage CID length")?[0] as usize;
            lineage_bytes.push(take(env, &mut at, l, "lineage CID")?);
        }
    }
    let clen = take(env, &mut at, 8, "CAR length")?;
    let clen = u64::from_be_bytes(clen.try_into().expect("8 bytes"));
    let clen = usize::try_from(clen).unwrap_or(usize::MAX);
    let car = take(env, &mut at, clen, "CAR")?;
    let body_end = at;
    let mac = take(env, &mut at, MAC_LEN, "MAC")?;
    if !ct_eq(&hmac_sha256(mac_key, &env[..body_end]), mac) {
        return Err(SealError::MacMismatch);
    }
    // Authenticated from here on: the rest are checks against a buggy sealer.
    let expected = bucket(at);
    if env.len() != expected {
        return Err(SealError::PaddingLength {
            actual: env.len(),
            expected,
        });
    }
    if let Some(i) = env[at..].iter().position(|&b| b != 0) {
        return Err(SealError::PaddingNotZero { offset: at + i });
    }
    if rlen == 0 || rlen > MAX_ROOT_LEN {
        return Err(SealError::BadRoot {
            reason: format!("{rlen} bytes"),
        });
    }
    let root = Cid::try_from(root_bytes).map_err(|e| SealError::BadRoot {
        reason: e.to_string(),
    })?;
    if root.to_bytes() != root_bytes {
        return Err(SealError::BadRoot {
            reason: "not in canonical binary form".into(),
        });
    }
    if lineage_bytes.len() > MAX_LINEAGE {
        return Err(SealError::BadLineage {
            reason: format!("{} roots, at most {MAX_LINEAGE}", lineage_bytes.len()),
        });
    }
    let lineage = if version2 {
        let mut v = Vec::with_capacity(lineage_bytes.len());
        for b in lineage_bytes {
            let c = Cid::try_from(b).map_err(|e| SealError::BadLineage {
                reason: e.to_string(),
            })?;
            v.push(c);
        }
        Some(v)
    } else {
        None
    };
    Ok(Plain {
        root,
        car: car.to_vec(),
        lineage,
    })
}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// HMAC-SHA256 (RFC 2104) over `sha2`.
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(msg);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner);
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer.finalize());
    out
}

mod key_file;

pub use key_file::{KeyFileError, KeyParseError, parse_key, read_key_file, write_key_file};

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        data_encoding::HEXLOWER.encode(b)
    }

    fn raw_cid(data: &[u8]) -> Cid {
        crate::ipfs::unixfs::block_cid(crate::ipfs::unixfs::CODEC_RAW, data)
    }

    #[test]
    fn fingerprint_names_the_key_without_revealing_it() {
        let key = Key::from_secret_bytes([7; 32]);
        let fp = key.fingerprint();
        let mut h = Sha256::new();
        h.update(FINGERPRINT_LABEL);
        h.update(key.public_bytes());
        assert_eq!(fp, format!("x25519-sha256:{}", hex(&h.finalize()[..16])));
        assert_eq!(fp, Key::from_secret_bytes([7; 32]).fingerprint());
        assert_ne!(fp, Key::from_secret_bytes([8; 32]).fingerprint());
        for part in [
            hex(&[7; 32]),
            hex(&key.public_bytes()),
            BASE64.encode(&[7; 32]),
            BASE64.encode(&key.public_bytes()),
        ] {
            assert!(!fp.contains(&part[..16]), "{fp}");
        }
    }

    #[test]
    fn lineage_is_sealed_under_the_mac() {
        // spec/sync.md#keys-and-sealed-boxes — MEMDIR-SEAL-2 carries the lineage
        // (spec/sync.md#lineage) under the MAC.
        let key = generate_key();
        let root = raw_cid(b"root");
        let lineage = vec![raw_cid(b"parent"), raw_cid(b"grandparent")];
        let plain = Plain::new(root, b"car".to_vec()).with_lineage(lineage.clone());
        let opened = open(&seal(&plain, &key).unwrap(), &key, Some(&root)).unwrap();
        assert_eq!(opened.lineage(), Some(&lineage[..]));
        assert_eq!(opened.car(), b"car");
        // Version 1 has none.
        let v1 = open(
            &seal(&Plain::new(root, b"car".to_vec()), &key).unwrap(),
            &key,
            None,
        );
        assert_eq!(v1.unwrap().lineage(), None);
        // One changed lineage byte, re-sealed to the public key as anyone can: refused.
        let mut env = envelope(&plain, &key).unwrap();
        assert_eq!(&env[..13], MAGIC_2);
        let first_lineage_cid = 13 + 2 + root.to_bytes().len() + 2 + 1;
        env[first_lineage_cid + 5] ^= 1;
        let forged = Sealed(seal_raw(&env, &key.public).unwrap());
        assert!(matches!(
            open(&forged, &key, None),
            Err(SealError::MacMismatch)
        ));
        // A lineage made of zero roots is still version 2.
        let empty = Plain::new(root, b"car".to_vec()).with_lineage(Vec::new());
        let opened = open(&seal(&empty, &key).unwrap(), &key, None).unwrap();
        assert_eq!(opened.lineage(), Some(&[][..]));
    }

    #[test]
    fn hmac_rfc4231() {
        let cases: [(&[u8], &[u8], &str); 5] = [
            (
                &[0x0b; 20],
                b"Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[0xaa; 20],
                &[0xdd; 50],
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
            ),
            (
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                &[0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (key, msg, want) in cases {
            assert_eq!(hex(&hmac_sha256(key, msg)), want);
        }
    }

    #[test]
    fn bucket_rule() {
        assert_eq!(bucket(0), 4096);
        assert_eq!(bucket(4096), 4096);
        assert_eq!(bucket(4097), 8192);
        assert_eq!(bucket(700_000), 1 << 20);
        assert_eq!(bucket(1 << 20), 1 << 20);
        assert_eq!(bucket((1 << 20) + 1), (1 << 20) + (64 << 10));
        assert_eq!(bucket(5 << 20), 5 << 20);
    }

    /// Fixed vector: the envelope is deterministic. The digest was computed by the
    /// independent Python implementation in ci/seal/interop.py (`--vector`).
    #[test]
    fn envelope_fixed_vector() {
        let key = Key::from_secret_bytes([7; 32]);
        let plain = Plain::new(raw_cid(b"memdir"), b"car bytes".to_vec());
        let env = envelope(&plain, &key).unwrap();
        assert_eq!(env.len(), 4096);
        assert_eq!(&env[..13], b"MEMDIR-SEAL-1");
        assert_eq!(hex(&key.public_bytes()), ENVELOPE_VECTOR_PUBLIC);
        assert_eq!(hex(&Sha256::digest(&env)), ENVELOPE_VECTOR_SHA256);
    }

    const ENVELOPE_VECTOR_PUBLIC: &str =
        "13be4feaeaf204c7fd3358fc9c00721881d174278128227ec674f37f7fe97b6d";
    const ENVELOPE_VECTOR_SHA256: &str =
        "3ac75cc94c8c83c660e1b4dea561b0fbbda824c7210f72e68bda371f8dea8dd2";

    #[test]
    fn authenticated_but_malformed_envelopes_are_distinct_errors() {
        let key = Key::from_secret_bytes([9; 32]);
        let plain = Plain::new(raw_cid(b"x"), vec![1, 2, 3]);
        let good = envelope(&plain, &key).unwrap();
        let reseal = |env: &[u8]| Sealed(seal_raw(env, key.public_key()).unwrap());

        // Nonzero padding.
        let mut bad = good.clone();
        *bad.last_mut().unwrap() = 1;
        assert!(matches!(
            open(&reseal(&bad), &key, None),
            Err(SealError::PaddingNotZero { offset: 4095 })
        ));
        // Wrong padded length.
        let mut bad = good.clone();
        bad.extend_from_slice(&[0; 4096]);
        assert!(matches!(
            open(&reseal(&bad), &key, None),
            Err(SealError::PaddingLength {
                actual: 8192,
                expected: 4096
            })
        ));
        // Bad magic.
        let mut bad = good.clone();
        bad[0] ^= 1;
        assert!(matches!(
            open(&reseal(&bad), &key, None),
            Err(SealError::BadMagic)
        ));
        // CAR length pointing past the end.
        let mut bad = good.clone();
        let at = 13 + 2 + plain.root().to_bytes().len();
        bad[at..at + 8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(
            open(&reseal(&bad), &key, None),
            Err(SealError::EnvelopeTruncated { field: "CAR", .. })
        ));
        // A MAC'd envelope whose root is not a CID.
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&3u16.to_be_bytes());
        body.extend_from_slice(&[0xff, 0xff, 0xff]);
        body.extend_from_slice(&0u64.to_be_bytes());
        let mac = hmac_sha256(&key.mac_key(), &body);
        body.extend_from_slice(&mac);
        body.resize(4096, 0);
        assert!(matches!(
            open(&reseal(&body), &key, None),
            Err(SealError::BadRoot { .. })
        ));
        // Too short to be a box at all; and the good one still opens.
        assert!(matches!(
            open(&Sealed(vec![0; 100]), &key, None),
            Err(SealError::Truncated { len: 100, .. })
        ));
        assert_eq!(open(&reseal(&good), &key, None).unwrap(), plain);
    }
}
