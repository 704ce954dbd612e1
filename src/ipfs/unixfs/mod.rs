//! UnixFS v1 blocks for the IPIP-499 `unixfs-v1-2025` CID profile: encoding a tree
//! of files and directories into content-addressed blocks, and strictly decoding
//! such blocks back into a tree (or, from another tool's DAG, decoding any
//! well-formed UnixFS tree so that the caller can re-encode it under the profile).
//!
//! This module owns the byte-exact rules that make our CIDs equal to the ones the
//! reference IPFS importers compute: dag-pb with all Links before Data and the
//! link Name always written, the UnixFS Data message, 1 MiB raw-leaf chunks in a
//! balanced tree of 1024 links per node, flat directories up to 262144 encoded
//! bytes and HAMT shards (fanout 256, murmur3-x64-64) above that. CIDs are CIDv1
//! with sha2-256.
//!
//! It must stay pure: no filesystem, network, clock, environment or printing.
//! Callers hand it an in-memory tree (or a block map) and get blocks (or a tree)
//! back. Everything it decodes is untrusted, so the decoder never indexes without
//! a bounds check, never unwraps input-derived values, bounds all work by
//! [`Limits`] and, in the strict [`decode`], finally re-encodes what it decoded to
//! prove the DAG is the one our own encoder would have produced.

// Errors carry the CIDs that failed by value (a `Cid` is about 90 bytes), so
// some variants exceed clippy's 128-byte guideline. They are built only on the
// failure path, where copying them is irrelevant, and boxing the CIDs would
// make matching on errors clumsy for every caller.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;

use cid::Cid;
use cid::multihash::Multihash;
use sha2::{Digest, Sha256};

/// Multicodec code of raw blocks (file leaves and single-block files).
pub const CODEC_RAW: u64 = 0x55;
/// Multicodec code of dag-pb blocks (file parents, directories, HAMT shards).
pub const CODEC_DAG_PB: u64 = 0x70;
/// Multihash code of sha2-256, the only hash this profile uses.
pub const MH_SHA2_256: u64 = 0x12;
/// Multihash code of the identity "hash", which inlines data into the CID.
pub const MH_IDENTITY: u64 = 0x00;
/// Size of a file chunk; files up to this size are a single raw block.
pub const CHUNK_SIZE: usize = 1 << 20;
/// Maximum number of links in one file node of the balanced layout.
pub const MAX_LINKS: usize = 1024;
/// A directory whose flat dag-pb block would be longer than this becomes a HAMT.
pub const SHARD_THRESHOLD: usize = 262_144;
/// Number of buckets in each HAMT shard node.
pub const HAMT_FANOUT: u64 = 256;
/// Multihash code of murmur3-x64-64, the HAMT hash function.
pub const HAMT_HASH_MURMUR3: u64 = 0x22;
/// Deepest directory nesting we build and, by default, accept when decoding.
pub const MAX_DEPTH: usize = 64;

/// A 64-bit hash yields eight bucket bytes, so a HAMT cannot nest deeper than this
/// (with fanout 256; the decoder derives the bound from the fanout it reads).
const HAMT_MAX_LEVELS: usize = 8;
/// A balanced file tree of this height already addresses 2^80 bytes; anything
/// deeper is an attack on our stack, not a file.
const FILE_MAX_LEVELS: usize = 8;

/// UnixFS `Raw`: a dag-pb leaf holding file bytes, written by older importers
/// (`leafType: 'raw'`); read as file data from other tools, never written.
const TYPE_RAW: u64 = 0;
const TYPE_DIRECTORY: u64 = 1;
const TYPE_FILE: u64 = 2;
const TYPE_HAMT_SHARD: u64 = 5;
/// A HAMT fanout accepted from other tools: a power of two up to this (the profile
/// writes 256; the UnixFS spec allows any power of two, and each level then uses
/// `log2(fanout)` bits of the hash).
const FOREIGN_MAX_FANOUT: u64 = 1024;

/// The name of a UnixFS type code, for messages.
fn type_name(code: u64) -> &'static str {
    match code {
        0 => "raw",
        1 => "directory",
        2 => "file",
        3 => "metadata",
        4 => "symlink",
        5 => "HAMT shard",
        _ => "unknown",
    }
}

/// A file or directory tree; directory keys are the raw entry names.
///
/// A `BTreeMap<String, _>` iterates in byte order of the UTF-8 names, which is
/// exactly the link order dag-pb directories require.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// A regular file with its full content.
    File(Vec<u8>),
    /// A directory mapping entry names to children.
    Dir(BTreeMap<String, Node>),
}

/// The blocks of one tree: the root CID and every block in depth-first order
/// from the root, each block exactly once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dag {
    /// CID of the root block (a raw block for small files, dag-pb otherwise).
    pub root: Cid,
    /// `(cid, bytes)` in pre-order DFS from the root, deduplicated.
    pub blocks: Vec<(Cid, Vec<u8>)>,
}

/// Bounds on the work [`decode`] is willing to do for untrusted input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Deepest directory nesting accepted (the root directory is depth 0).
    /// Values above [`MAX_DEPTH`] act as [`MAX_DEPTH`]: we never build deeper
    /// trees, so deeper ones cannot pass the canonical check anyway, and the
    /// cap keeps the recursive decoder's stack use bounded.
    pub max_depth: usize,
    /// Most directory entries (files and directories) in the whole tree.
    pub max_entries: u64,
    /// Most block bytes visited, counting a block again each time it is reached.
    ///
    /// Shared subtrees make a small block map expand into a large tree, so this
    /// counts visits rather than distinct blocks; it also bounds the file bytes
    /// produced, which are a subset of the visited bytes.
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: MAX_DEPTH,
            max_entries: 1_000_000,
            max_total_bytes: 1 << 30,
        }
    }
}

/// Why a protobuf message (a dag-pb node or a UnixFS Data message) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {offset}")]
pub struct PbError {
    /// Byte offset inside the message where the problem was found.
    pub offset: usize,
    /// What was wrong there.
    pub kind: PbErrorKind,
}

/// The kinds of malformed protobuf we reject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PbErrorKind {
    /// The message ends inside a field.
    #[error("truncated message")]
    Truncated,
    /// A varint does not fit in 64 bits.
    #[error("varint overflows 64 bits")]
    VarintOverflow,
    /// A varint carries redundant trailing zero groups.
    #[error("non-minimal varint")]
    NonMinimalVarint,
    /// A known field has the wrong wire type (for example packed blocksizes).
    #[error("field {field} has wire type {wire}")]
    WrongWireType {
        /// Field number.
        field: u64,
        /// Wire type found.
        wire: u8,
    },
    /// A field this profile never writes.
    #[error("unknown field {field}")]
    UnknownField {
        /// Field number.
        field: u64,
    },
    /// UnixFS mode (field 7) or mtime (field 8) metadata, which the profile never writes.
    #[error(
        "UnixFS {} metadata (field {field}) is not supported: the unixfs-v1-2025 profile writes no mode or mtime",
        if *field == 7 { "mode" } else { "mtime" }
    )]
    Metadata {
        /// Field number (7 or 8).
        field: u64,
    },
    /// A field that is repeated although it may appear once, or comes after a
    /// field with a higher number.
    #[error("field {field} repeated or out of order")]
    FieldOrder {
        /// Field number.
        field: u64,
    },
    /// A required field is absent.
    #[error("required field {field} missing")]
    MissingField {
        /// Field number.
        field: u64,
    },
    /// A link's Hash bytes are not exactly one CID.
    #[error("link hash is not a valid CID")]
    InvalidCid,
}

/// Problems specific to HAMT shard nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HamtProblem {
    /// fanout is absent or not 256.
    #[error("fanout is not 256 (or, from another tool, a power of two up to 1024)")]
    Fanout,
    /// hashType is absent or not murmur3-x64-64.
    #[error("hash type is not murmur3-x64-64")]
    HashType,
    /// More links than buckets.
    #[error("more than 256 links")]
    TooManyLinks,
    /// A link name does not start with two upper-case hex digits.
    #[error("link name lacks a two-digit bucket prefix")]
    BadPrefix,
    /// Sub-shards nest deeper than a 64-bit hash allows.
    #[error("shards nested deeper than a 64-bit hash allows")]
    TooDeep,
    /// A sub-shard holds fewer than two entries, which no canonical HAMT does.
    #[error("sub-shard holds fewer than two entries")]
    SparseSubShard,
}

/// Everything that can go wrong building or decoding UnixFS.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnixfsError {
    /// `build` was given an entry name that `decode` would reject.
    #[error("unsafe entry name {name:?}")]
    UnsafeName {
        /// The offending name.
        name: String,
    },
    /// `build` was given a tree nested deeper than [`MAX_DEPTH`].
    #[error("directory nesting deeper than {limit}")]
    BuildTooDeep {
        /// The depth limit.
        limit: usize,
    },
    /// Two names have the same 64-bit murmur3 hash, so no HAMT can hold both.
    #[error("HAMT hash collision between {first:?} and {second:?}")]
    HashCollision {
        /// One of the names.
        first: String,
        /// The other name.
        second: String,
    },
    /// A linked block is not in the block map.
    #[error("block {cid} is missing")]
    MissingBlock {
        /// The missing block.
        cid: Cid,
    },
    /// A CID memdir does not read here: outside the profile in a strict decode; in a
    /// decode of another tool's DAG, a codec other than raw/dag-pb, a hash other than
    /// sha2-256, or an identity (inline) CID.
    #[error("CID {cid} is not supported: {}", cid_problem(cid))]
    UnsupportedCid {
        /// The offending CID.
        cid: Cid,
    },
    /// A dag-pb block is malformed.
    #[error("dag-pb block {cid}: {source}")]
    DagPb {
        /// The block.
        cid: Cid,
        /// What was wrong.
        source: PbError,
    },
    /// The UnixFS Data message of a block is malformed.
    #[error("UnixFS data of {cid}: {source}")]
    UnixfsData {
        /// The block.
        cid: Cid,
        /// What was wrong.
        source: PbError,
    },
    /// A dag-pb block has no Data field, so it is not UnixFS.
    #[error("dag-pb block {cid} has no UnixFS data")]
    MissingUnixfsData {
        /// The block.
        cid: Cid,
    },
    /// A UnixFS type we do not support (metadata, symlink, unknown; raw in a strict decode).
    #[error(
        "block {cid} is a UnixFS {} node (type {type_code}), which a memory directory cannot hold",
        type_name(*type_code)
    )]
    UnsupportedType {
        /// The block.
        cid: Cid,
        /// The Type value found.
        type_code: u64,
    },
    /// A block of the wrong kind where a specific kind is required (a
    /// directory inside a file, a file where a sub-shard belongs, ...).
    #[error("block {cid} should be a {expected}")]
    WrongNodeType {
        /// The block.
        cid: Cid,
        /// What was required there.
        expected: &'static str,
    },
    /// A file node's blocksizes do not pair up with its links.
    #[error("file node {cid} has {links} links but {blocksizes} blocksizes")]
    BlocksizeCount {
        /// The block.
        cid: Cid,
        /// Number of links.
        links: usize,
        /// Number of blocksizes.
        blocksizes: usize,
    },
    /// A file node declares a size its content does not have.
    #[error("file node {cid} declares {declared} bytes but holds {actual}")]
    FileSizeMismatch {
        /// The block.
        cid: Cid,
        /// Declared size (filesize, or a blocksize for the child).
        declared: u64,
        /// Size actually found.
        actual: u64,
    },
    /// A directory entry name is not UTF-8.
    #[error("directory {dir} has an entry name that is not UTF-8")]
    NonUtf8Name {
        /// The directory (or shard) block.
        dir: Cid,
    },
    /// A directory entry name is unsafe to materialize.
    #[error("directory {dir} has unsafe entry name {name:?}")]
    UnsafeEntryName {
        /// The directory (or shard) block.
        dir: Cid,
        /// The name.
        name: String,
    },
    /// A directory holds the same name twice.
    #[error("directory {dir} holds {name:?} twice")]
    DuplicateName {
        /// The directory (or shard) block.
        dir: Cid,
        /// The name.
        name: String,
    },
    /// A malformed HAMT shard.
    #[error("HAMT shard {cid}: {problem}")]
    BadHamt {
        /// The shard block.
        cid: Cid,
        /// What was wrong.
        problem: HamtProblem,
    },
    /// Directories or file trees nest deeper than allowed.
    #[error("block {cid} is nested deeper than {limit}")]
    DepthLimit {
        /// The block at which the limit was exceeded.
        cid: Cid,
        /// The limit.
        limit: usize,
    },
    /// More directory entries than [`Limits::max_entries`].
    #[error("more than {limit} entries (at {cid})")]
    EntryLimit {
        /// The block at which the limit was exceeded.
        cid: Cid,
        /// The limit.
        limit: u64,
    },
    /// More bytes visited than [`Limits::max_total_bytes`].
    #[error("more than {limit} bytes (at {cid})")]
    SizeLimit {
        /// The block at which the limit was exceeded.
        cid: Cid,
        /// The limit.
        limit: u64,
    },
    /// The decoded tree re-encodes to a different root, so the DAG was not
    /// produced with this profile (other chunker, field order, sharding, ...).
    #[error("DAG {expected} is not canonical unixfs-v1-2025 (re-encodes to {rebuilt})")]
    NonCanonical {
        /// The root we were asked to decode.
        expected: Cid,
        /// The root our encoder produces for the decoded tree.
        rebuilt: Cid,
    },
}

// Small shared helpers of the codec's parts: hashing, varints, CID bytes, names.

/// The CIDv1 (sha2-256) of `bytes` under `codec`.
pub fn block_cid(codec: u64, bytes: &[u8]) -> Cid {
    let digest = Sha256::digest(bytes);
    // A 32-byte digest always fits the 64-byte multihash buffer, so this cannot fail.
    let hash = Multihash::<64>::wrap(MH_SHA2_256, digest.as_slice())
        .expect("a 32-byte digest fits a 64-byte multihash");
    Cid::new_v1(codec, hash)
}

/// Whether `cid` is one this profile produces: CIDv1, raw or dag-pb, sha2-256
/// with a 32-byte digest. Everything else (CIDv0, identity CIDs, other codecs)
/// is refused wherever it appears.
pub fn is_profile_cid(cid: &Cid) -> bool {
    cid.version() == cid::Version::V1
        && (cid.codec() == CODEC_RAW || cid.codec() == CODEC_DAG_PB)
        && cid.hash().code() == MH_SHA2_256
        && cid.hash().size() == 32
}

/// Whether memdir reads `cid` from another tool's DAG: CIDv0 or CIDv1, raw or dag-pb,
/// sha2-256 with a 32-byte digest. Every such block is verified against its digest
/// like a profile block; identity (inline) CIDs and other hashes are refused.
pub fn is_supported_cid(cid: &Cid) -> bool {
    (cid.codec() == CODEC_RAW || cid.codec() == CODEC_DAG_PB)
        && cid.hash().code() == MH_SHA2_256
        && cid.hash().size() == 32
}

/// Whether `cid` is an inline raw leaf: CIDv1, codec raw, identity "hash", so the
/// CID carries the bytes themselves (at most 64, the multihash bound). Nothing needs
/// verifying; other tools' DAGs may link small files this way.
pub fn is_inline_raw(cid: &Cid) -> bool {
    cid.version() == cid::Version::V1
        && cid.codec() == CODEC_RAW
        && cid.hash().code() == MH_IDENTITY
}

/// What is wrong with a CID memdir does not read, for messages.
pub fn cid_problem(cid: &Cid) -> String {
    let hash = cid.hash();
    if hash.code() == MH_IDENTITY {
        "it is an identity (inline) CID, which memdir reads only as an inline raw leaf (codec 0x55) of a DAG another tool made".into()
    } else if hash.code() != MH_SHA2_256 || hash.size() != 32 {
        format!(
            "its hash function is {:#x} with a {}-byte digest; memdir verifies sha2-256 (0x12, 32 bytes) only",
            hash.code(),
            hash.size()
        )
    } else if cid.codec() != CODEC_RAW && cid.codec() != CODEC_DAG_PB {
        format!(
            "its codec is {:#x}; a UnixFS DAG holds raw (0x55) and dag-pb (0x70) blocks only",
            cid.codec()
        )
    } else if cid.version() == cid::Version::V0 {
        "it is a CIDv0 (Qm…), outside the unixfs-v1-2025 profile".into()
    } else {
        "it is outside the unixfs-v1-2025 profile".into()
    }
}

/// Whether `name` can be materialized as a single path component on every
/// platform we care about and is not a hidden (dot) entry, which the profile
/// excludes from the DAG.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// Appends `v` as a minimal unsigned LEB128 varint.
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Length of `v` as a minimal varint.
pub(crate) fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Reads a minimal varint from `bytes` at `*pos`, advancing `*pos`.
///
/// Non-minimal encodings are rejected because a canonical encoder never
/// produces them, and accepting them would give one value many byte forms.
pub(crate) fn read_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, PbErrorKind> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let Some(&byte) = bytes.get(*pos + i) else {
            return Err(PbErrorKind::Truncated);
        };
        let low = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return Err(PbErrorKind::VarintOverflow);
        }
        value |= low << (7 * i);
        if byte & 0x80 == 0 {
            if byte == 0 && i > 0 {
                return Err(PbErrorKind::NonMinimalVarint);
            }
            *pos += i + 1;
            return Ok(value);
        }
    }
    Err(PbErrorKind::VarintOverflow)
}

/// Encoded length of a CID's binary form.
fn cid_len(cid: &Cid) -> usize {
    cid.encoded_len()
}

/// Appends the binary form of `cid` (no multibase prefix).
pub(crate) fn put_cid(buf: &mut Vec<u8>, cid: &Cid) {
    // CIDv0 is the bare multihash; CIDv1 prefixes version and codec. We only
    // build v1, but writing v0 correctly keeps this helper honest.
    if cid.version() == cid::Version::V1 {
        put_varint(buf, 1);
        put_varint(buf, cid.codec());
    }
    let hash = cid.hash();
    put_varint(buf, hash.code());
    put_varint(buf, u64::from(hash.size()));
    buf.extend_from_slice(hash.digest());
}

/// Parses `bytes` as exactly one binary CID (v0 or v1), or `None`.
///
/// Hand-written rather than `Cid::try_from` so that trailing bytes are an
/// error and no allocation or panic path depends on the input.
pub(crate) fn parse_cid(bytes: &[u8]) -> Option<Cid> {
    if bytes.len() == 34 && bytes.first() == Some(&0x12) && bytes.get(1) == Some(&0x20) {
        let hash = Multihash::<64>::wrap(MH_SHA2_256, bytes.get(2..)?).ok()?;
        return Cid::new_v0(hash).ok();
    }
    let mut pos = 0;
    let version = read_varint(bytes, &mut pos).ok()?;
    if version != 1 {
        return None;
    }
    let codec = read_varint(bytes, &mut pos).ok()?;
    let code = read_varint(bytes, &mut pos).ok()?;
    let size = usize::try_from(read_varint(bytes, &mut pos).ok()?).ok()?;
    let digest = bytes.get(pos..)?;
    if digest.len() != size || size > 64 {
        return None;
    }
    let hash = Multihash::<64>::wrap(code, digest).ok()?;
    Some(Cid::new_v1(codec, hash))
}

mod build;
mod decode;
mod murmur3;
mod pb;
#[cfg(test)]
pub(crate) mod tests;

pub use build::{build, root_cid};
pub use decode::{decode, decode_foreign};
pub use murmur3::{murmur3_x64_64, murmur3_x64_128};
pub use pb::{PbLink, PbNode, decode_pb};
// The parts of the codec share their private items through this module.
#[allow(unused_imports)]
use {build::*, decode::*, pb::*};
