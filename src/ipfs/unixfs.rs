//! UnixFS v1 blocks for the IPIP-499 `unixfs-v1-2025` CID profile: encoding a tree
//! of files and directories into content-addressed blocks, and strictly decoding
//! such blocks back into a tree.
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
//! [`Limits`] and finally re-encodes what it decoded to prove the DAG is the one
//! our own encoder would have produced.

// Errors carry the CIDs that failed by value (a `Cid` is about 90 bytes), so
// some variants exceed clippy's 128-byte guideline. They are built only on the
// failure path, where copying them is irrelevant, and boxing the CIDs would
// make matching on errors clumsy for every caller.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};

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

/// A 64-bit hash yields eight bucket bytes, so a HAMT cannot nest deeper than this.
const HAMT_MAX_LEVELS: usize = 8;
/// A balanced file tree of this height already addresses 2^80 bytes; anything
/// deeper is an attack on our stack, not a file.
const FILE_MAX_LEVELS: usize = 8;

const TYPE_DIRECTORY: u64 = 1;
const TYPE_FILE: u64 = 2;
const TYPE_HAMT_SHARD: u64 = 5;

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
    #[error("fanout is not 256")]
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
    #[error("shards nested deeper than 8 levels")]
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
    /// A CID outside the profile: not CIDv1, not raw/dag-pb, or not sha2-256.
    #[error("CID {cid} is outside the unixfs-v1-2025 profile")]
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
    /// A UnixFS type we do not support (raw, metadata, symlink, unknown).
    #[error("block {cid} has unsupported UnixFS type {type_code}")]
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

// ---------------------------------------------------------------------------
// Small shared helpers: hashing, varints, CID bytes, names.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// murmur3
// ---------------------------------------------------------------------------

/// murmur3-x64-64 as the HAMT uses it: the first 64-bit word (h1) of
/// MurmurHash3_x64_128 with seed 0. Bucket bytes are taken from its most
/// significant byte down, which is the order the reference implementations
/// read the hash's big-endian digest in.
pub fn murmur3_x64_64(data: &[u8]) -> u64 {
    murmur3_x64_128(data, 0).0
}

/// MurmurHash3_x64_128 returning `(h1, h2)`.
pub fn murmur3_x64_128(data: &[u8], seed: u64) -> (u64, u64) {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let mut h1 = seed;
    let mut h2 = seed;
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        let (a, b) = block.split_at(8);
        let mut k1 = u64::from_le_bytes(a.try_into().unwrap_or([0; 8]));
        let mut k2 = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    // Tail bytes are read little-endian into k1 (bytes 0..8) and k2 (8..16).
    let mut k1: u64 = 0;
    let mut k2: u64 = 0;
    for (i, &byte) in tail.iter().enumerate() {
        if i < 8 {
            k1 |= u64::from(byte) << (8 * i);
        } else {
            k2 |= u64::from(byte) << (8 * (i - 8));
        }
    }
    if tail.len() > 8 {
        h2 ^= k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
    }
    if !tail.is_empty() {
        h1 ^= k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

// ---------------------------------------------------------------------------
// dag-pb encoding
// ---------------------------------------------------------------------------

/// One outgoing link while encoding.
struct LinkOut<'a> {
    cid: &'a Cid,
    name: &'a [u8],
    tsize: u64,
}

/// Length of a PBLink message body: Hash, Name (always written), Tsize.
fn link_body_len(link: &LinkOut<'_>) -> usize {
    let cl = cid_len(link.cid);
    let nl = link.name.len();
    1 + varint_len(cl as u64) + cl + 1 + varint_len(nl as u64) + nl + 1 + varint_len(link.tsize)
}

/// Exact length of the dag-pb node [`encode_pb`] writes.
fn pb_len(links: &[LinkOut<'_>], data_len: usize) -> usize {
    let links_len: usize = links
        .iter()
        .map(|l| {
            let body = link_body_len(l);
            1 + varint_len(body as u64) + body
        })
        .sum();
    links_len + 1 + varint_len(data_len as u64) + data_len
}

/// Encodes a dag-pb node in the order every UnixFS v1 implementation uses:
/// all Links (field 2) first, then Data (field 1). Each link writes Hash, then
/// Name even when empty (`12 00`), then Tsize; the CIDs depend on those bytes.
fn encode_pb(links: &[LinkOut<'_>], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(pb_len(links, data.len()));
    for link in links {
        out.push(0x12);
        put_varint(&mut out, link_body_len(link) as u64);
        out.push(0x0a);
        put_varint(&mut out, cid_len(link.cid) as u64);
        put_cid(&mut out, link.cid);
        out.push(0x12);
        put_varint(&mut out, link.name.len() as u64);
        out.extend_from_slice(link.name);
        out.push(0x18);
        put_varint(&mut out, link.tsize);
    }
    out.push(0x0a);
    put_varint(&mut out, data.len() as u64);
    out.extend_from_slice(data);
    out
}

// ---------------------------------------------------------------------------
// Building
// ---------------------------------------------------------------------------

/// Layout parameters. The public API always uses [`PROFILE`]; tests shrink
/// them to exercise deep file trees and HAMTs with little data.
#[derive(Clone, Copy, Debug)]
struct Params {
    chunk_size: usize,
    max_links: usize,
    shard_threshold: usize,
}

const PROFILE: Params = Params {
    chunk_size: CHUNK_SIZE,
    max_links: MAX_LINKS,
    shard_threshold: SHARD_THRESHOLD,
};

/// Receives each block as it is produced (children before parents).
trait BlockSink {
    fn put(&mut self, cid: &Cid, bytes: &[u8], links: &[Cid]);
}

/// Keeps nothing: computing a root CID needs no block storage, so large files
/// are hashed without a single copy.
struct Discard;

impl BlockSink for Discard {
    fn put(&mut self, _: &Cid, _: &[u8], _: &[Cid]) {}
}

/// Keeps each distinct block once, with its outgoing links so the blocks can
/// later be emitted in DFS order without reparsing them.
#[derive(Default)]
struct Collector {
    blocks: HashMap<Cid, (Vec<u8>, Vec<Cid>)>,
}

impl BlockSink for Collector {
    fn put(&mut self, cid: &Cid, bytes: &[u8], links: &[Cid]) {
        self.blocks
            .entry(*cid)
            .or_insert_with(|| (bytes.to_vec(), links.to_vec()));
    }
}

impl Collector {
    /// Pre-order DFS from `root`; removing a block when it is emitted makes
    /// shared blocks (identical files) appear once, at their first use.
    fn into_dag(mut self, root: Cid) -> Dag {
        let mut blocks = Vec::with_capacity(self.blocks.len());
        let mut stack = vec![root];
        while let Some(cid) = stack.pop() {
            if let Some((bytes, links)) = self.blocks.remove(&cid) {
                stack.extend(links.iter().rev().copied());
                blocks.push((cid, bytes));
            }
        }
        Dag { root, blocks }
    }
}

/// A finished node: its CID, its Tsize (block length plus all descendants'
/// block lengths) and, for files, its content length.
#[derive(Clone, Copy, Debug)]
struct Built {
    cid: Cid,
    tsize: u64,
    content: u64,
}

struct Builder<'s, S: BlockSink> {
    params: Params,
    sink: &'s mut S,
}

impl<S: BlockSink> Builder<'_, S> {
    fn node(&mut self, node: &Node, depth: usize) -> Result<Built, UnixfsError> {
        match node {
            Node::File(data) => Ok(self.file(data)),
            Node::Dir(entries) => self.dir(entries, depth),
        }
    }

    fn put_block(&mut self, codec: u64, bytes: &[u8], links: &[Cid]) -> Cid {
        let cid = block_cid(codec, bytes);
        self.sink.put(&cid, bytes, links);
        cid
    }

    /// Fixed-size chunker with raw leaves and the balanced layout: group
    /// consecutive nodes `max_links` at a time until one node remains.
    fn file(&mut self, data: &[u8]) -> Built {
        let size = data.len() as u64;
        if data.len() <= self.params.chunk_size {
            let cid = self.put_block(CODEC_RAW, data, &[]);
            return Built {
                cid,
                tsize: size,
                content: size,
            };
        }
        let mut level: Vec<Built> = data
            .chunks(self.params.chunk_size)
            .map(|chunk| {
                let len = chunk.len() as u64;
                Built {
                    cid: self.put_block(CODEC_RAW, chunk, &[]),
                    tsize: len,
                    content: len,
                }
            })
            .collect();
        while level.len() > 1 {
            level = level
                .chunks(self.params.max_links)
                .map(|group| self.file_parent(group))
                .collect();
        }
        // The loop ends with exactly one node because there were at least two chunks.
        level
            .pop()
            .expect("a multi-chunk file always reduces to one root")
    }

    fn file_parent(&mut self, children: &[Built]) -> Built {
        let filesize: u64 = children.iter().map(|c| c.content).sum();
        let mut data = Vec::with_capacity(4 + 11 * (children.len() + 1));
        data.extend_from_slice(&[0x08, TYPE_FILE as u8, 0x18]);
        put_varint(&mut data, filesize);
        for child in children {
            // blocksizes are written unpacked, one tag per entry, as the
            // reference encoders do.
            data.push(0x20);
            put_varint(&mut data, child.content);
        }
        // File links carry an empty but present Name.
        let links: Vec<(&[u8], Built)> = children.iter().map(|c| (&b""[..], *c)).collect();
        self.pb_node(&links, &data, filesize)
    }

    /// Encodes and stores one dag-pb node over `(link name, child)` pairs.
    /// Its Tsize is its own length plus the children's Tsizes.
    fn pb_node<N: AsRef<[u8]>>(
        &mut self,
        children: &[(N, Built)],
        data: &[u8],
        content: u64,
    ) -> Built {
        let block = encode_pb(&link_outs(children), data);
        let cids: Vec<Cid> = children.iter().map(|(_, b)| b.cid).collect();
        let cid = self.put_block(CODEC_DAG_PB, &block, &cids);
        let tsize = block.len() as u64 + children.iter().map(|(_, b)| b.tsize).sum::<u64>();
        Built {
            cid,
            tsize,
            content,
        }
    }

    fn dir(
        &mut self,
        entries: &BTreeMap<String, Node>,
        depth: usize,
    ) -> Result<Built, UnixfsError> {
        if depth > MAX_DEPTH {
            return Err(UnixfsError::BuildTooDeep { limit: MAX_DEPTH });
        }
        // BTreeMap order is byte order of the names, the link order dag-pb
        // directories require.
        let mut children: Vec<(&str, Built)> = Vec::with_capacity(entries.len());
        for (name, child) in entries {
            if !is_safe_name(name) {
                return Err(UnixfsError::UnsafeName { name: name.clone() });
            }
            children.push((name.as_str(), self.node(child, depth + 1)?));
        }
        const DIR_DATA: [u8; 2] = [0x08, TYPE_DIRECTORY as u8];
        // The profile's `block-bytes` estimate is the exact length of the flat
        // block; only strictly larger directories are sharded.
        if pb_len(&link_outs(&children), DIR_DATA.len()) <= self.params.shard_threshold {
            return Ok(self.pb_node(&children, &DIR_DATA, 0));
        }
        let mut hashed: Vec<(u64, &str, Built)> = children
            .into_iter()
            .map(|(name, built)| (murmur3_x64_64(name.as_bytes()), name, built))
            .collect();
        // Buckets are successive hash bytes from the most significant one, so
        // sorting by hash once groups every level's buckets contiguously and
        // in ascending order.
        hashed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        self.shard(&hashed, 0)
    }

    /// One HAMT shard node over `entries` (sorted by hash) at `level`: one
    /// link per occupied bucket, in bucket order; a bucket with one entry
    /// links it directly under the name `XX<name>`, a bucket with more holds
    /// a sub-shard one level deeper under the name `XX`.
    fn shard(
        &mut self,
        entries: &[(u64, &str, Built)],
        level: usize,
    ) -> Result<Built, UnixfsError> {
        let bucket_of = |hash: u64| (hash >> (56 - 8 * level)) as u8;
        let mut bitfield = [0u8; 32];
        let mut links: Vec<(String, Built)> = Vec::new();
        let mut rest = entries;
        while let Some(&(hash, name, built)) = rest.first() {
            let bucket = bucket_of(hash);
            let run = rest.iter().take_while(|e| bucket_of(e.0) == bucket).count();
            let (group, tail) = rest.split_at(run);
            rest = tail;
            bitfield[31 - usize::from(bucket / 8)] |= 1 << (bucket % 8);
            if let [_] = group {
                links.push((format!("{bucket:02X}{name}"), built));
                continue;
            }
            // Two names sharing all eight hash bytes cannot be separated; the
            // reference importer would rehash, which never happens in practice.
            if level + 1 >= HAMT_MAX_LEVELS {
                let second = group.get(1).map(|e| e.1).unwrap_or_default();
                return Err(UnixfsError::HashCollision {
                    first: name.to_owned(),
                    second: second.to_owned(),
                });
            }
            let sub = self.shard(group, level + 1)?;
            links.push((format!("{bucket:02X}"), sub));
        }
        // The bitfield is a big-endian integer with leading zero bytes stripped.
        let first_set = bitfield
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(bitfield.len());
        let bits = bitfield.get(first_set..).unwrap_or_default();
        let mut data = Vec::with_capacity(bits.len() + 12);
        data.extend_from_slice(&[0x08, TYPE_HAMT_SHARD as u8, 0x12]);
        put_varint(&mut data, bits.len() as u64);
        data.extend_from_slice(bits);
        data.push(0x28);
        put_varint(&mut data, HAMT_HASH_MURMUR3);
        data.push(0x30);
        put_varint(&mut data, HAMT_FANOUT);
        Ok(self.pb_node(&links, &data, 0))
    }
}

/// Borrowed link descriptions for `(name, child)` pairs.
fn link_outs<N: AsRef<[u8]>>(children: &[(N, Built)]) -> Vec<LinkOut<'_>> {
    children
        .iter()
        .map(|(name, built)| LinkOut {
            cid: &built.cid,
            name: name.as_ref(),
            tsize: built.tsize,
        })
        .collect()
}

fn build_with(tree: &Node, params: Params) -> Result<Dag, UnixfsError> {
    let mut sink = Collector::default();
    let built = Builder {
        params,
        sink: &mut sink,
    }
    .node(tree, 0)?;
    Ok(sink.into_dag(built.cid))
}

fn root_cid_with(tree: &Node, params: Params) -> Result<Cid, UnixfsError> {
    Builder {
        params,
        sink: &mut Discard,
    }
    .node(tree, 0)
    .map(|b| b.cid)
}

/// Encodes `tree` (a file or a directory) into its `unixfs-v1-2025` blocks.
///
/// Directory names must satisfy [`is_safe_name`]: hidden entries are excluded
/// by the profile, so the caller filters them out before building.
pub fn build(tree: &Node) -> Result<Dag, UnixfsError> {
    build_with(tree, PROFILE)
}

/// The root CID of `tree`, without keeping any block: each chunk is hashed
/// once and never copied, so this runs at sha2-256 speed.
pub fn root_cid(tree: &Node) -> Result<Cid, UnixfsError> {
    root_cid_with(tree, PROFILE)
}

// ---------------------------------------------------------------------------
// Strict protobuf decoding
// ---------------------------------------------------------------------------

/// A decoded dag-pb node, borrowing from its block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PbNode<'a> {
    /// Links in block order.
    pub links: Vec<PbLink<'a>>,
    /// The Data field, if present.
    pub data: Option<&'a [u8]>,
}

/// A decoded dag-pb link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PbLink<'a> {
    /// Target CID (any version and codec; policy is checked by the callers).
    pub cid: Cid,
    /// Name bytes, if the field is present.
    pub name: Option<&'a [u8]>,
    /// Tsize, if present.
    pub tsize: Option<u64>,
}

/// A cursor over one protobuf message that reports errors with offsets.
struct PbReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

impl<'a> PbReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        PbReader { bytes, pos: 0 }
    }

    fn err(&self, kind: PbErrorKind) -> PbError {
        PbError {
            offset: self.pos,
            kind,
        }
    }

    fn varint(&mut self) -> Result<u64, PbError> {
        read_varint(self.bytes, &mut self.pos).map_err(|kind| self.err(kind))
    }

    /// Reads the next `(field, value)`, or `None` at the end of the message.
    /// Only wire types 0 (varint) and 2 (length-delimited) exist in dag-pb and
    /// UnixFS, so every other wire type is an error.
    fn next(&mut self) -> Result<Option<(u64, Value<'a>)>, PbError> {
        if self.pos >= self.bytes.len() {
            return Ok(None);
        }
        let start = self.pos;
        let key = self.varint()?;
        let field = key >> 3;
        let wire = (key & 7) as u8;
        match wire {
            0 => Ok(Some((field, Value::Varint(self.varint()?)))),
            2 => {
                let len = self.varint()?;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|len| self.pos.checked_add(len))
                    .filter(|&end| end <= self.bytes.len())
                    .ok_or_else(|| self.err(PbErrorKind::Truncated))?;
                let value = self.bytes.get(self.pos..end).unwrap_or_default();
                self.pos = end;
                Ok(Some((field, Value::Bytes(value))))
            }
            _ => Err(PbError {
                offset: start,
                kind: PbErrorKind::WrongWireType { field, wire },
            }),
        }
    }
}

fn wrong_wire(offset: usize, field: u64, value: &Value<'_>) -> PbError {
    let wire = match value {
        Value::Varint(_) => 0,
        Value::Bytes(_) => 2,
    };
    PbError {
        offset,
        kind: PbErrorKind::WrongWireType { field, wire },
    }
}

/// Strictly decodes a dag-pb block: only Links (2) then at most one Data (1);
/// each link has Hash, then optional Name and Tsize, each at most once and in
/// ascending field order; unknown fields and wrong wire types are errors.
pub fn decode_pb(block: &[u8]) -> Result<PbNode<'_>, PbError> {
    let mut reader = PbReader::new(block);
    let mut node = PbNode {
        links: Vec::new(),
        data: None,
    };
    loop {
        let offset = reader.pos;
        let Some((field, value)) = reader.next()? else {
            break;
        };
        match (field, value) {
            (2, Value::Bytes(bytes)) => {
                if node.data.is_some() {
                    return Err(PbError {
                        offset,
                        kind: PbErrorKind::FieldOrder { field },
                    });
                }
                let link = decode_pb_link(bytes).map_err(|e| PbError {
                    offset: offset + e.offset,
                    kind: e.kind,
                })?;
                node.links.push(link);
            }
            (1, Value::Bytes(bytes)) => {
                if node.data.is_some() {
                    return Err(PbError {
                        offset,
                        kind: PbErrorKind::FieldOrder { field },
                    });
                }
                node.data = Some(bytes);
            }
            (1 | 2, value) => return Err(wrong_wire(offset, field, &value)),
            _ => {
                return Err(PbError {
                    offset,
                    kind: PbErrorKind::UnknownField { field },
                });
            }
        }
    }
    Ok(node)
}

fn decode_pb_link(bytes: &[u8]) -> Result<PbLink<'_>, PbError> {
    let mut reader = PbReader::new(bytes);
    let mut cid = None;
    let mut name = None;
    let mut tsize = None;
    let mut last_field = 0;
    loop {
        let offset = reader.pos;
        let Some((field, value)) = reader.next()? else {
            break;
        };
        if !(1..=3).contains(&field) {
            return Err(PbError {
                offset,
                kind: PbErrorKind::UnknownField { field },
            });
        }
        if field <= last_field {
            return Err(PbError {
                offset,
                kind: PbErrorKind::FieldOrder { field },
            });
        }
        last_field = field;
        match (field, value) {
            (1, Value::Bytes(b)) => {
                cid = Some(parse_cid(b).ok_or(PbError {
                    offset,
                    kind: PbErrorKind::InvalidCid,
                })?);
            }
            (2, Value::Bytes(b)) => name = Some(b),
            (3, Value::Varint(v)) => tsize = Some(v),
            (_, value) => return Err(wrong_wire(offset, field, &value)),
        }
    }
    let cid = cid.ok_or(PbError {
        offset: 0,
        kind: PbErrorKind::MissingField { field: 1 },
    })?;
    Ok(PbLink { cid, name, tsize })
}

/// A decoded UnixFS Data message (mode and mtime are never accepted: the
/// profile does not write them).
#[derive(Debug, Default)]
struct UnixfsData<'a> {
    kind: u64,
    data: Option<&'a [u8]>,
    filesize: Option<u64>,
    blocksizes: Vec<u64>,
    hash_type: Option<u64>,
    fanout: Option<u64>,
}

/// Strictly decodes UnixFS Data: fields in ascending order, each at most once
/// except consecutive unpacked blocksizes; Type required.
fn decode_unixfs(bytes: &[u8]) -> Result<UnixfsData<'_>, PbError> {
    let mut reader = PbReader::new(bytes);
    let mut out = UnixfsData::default();
    let mut last_field = 0;
    let mut have_type = false;
    loop {
        let offset = reader.pos;
        let Some((field, value)) = reader.next()? else {
            break;
        };
        if !(1..=6).contains(&field) {
            return Err(PbError {
                offset,
                kind: PbErrorKind::UnknownField { field },
            });
        }
        if field < last_field || (field == last_field && field != 4) {
            return Err(PbError {
                offset,
                kind: PbErrorKind::FieldOrder { field },
            });
        }
        last_field = field;
        match (field, value) {
            (1, Value::Varint(v)) => {
                out.kind = v;
                have_type = true;
            }
            (2, Value::Bytes(b)) => out.data = Some(b),
            (3, Value::Varint(v)) => out.filesize = Some(v),
            (4, Value::Varint(v)) => out.blocksizes.push(v),
            (5, Value::Varint(v)) => out.hash_type = Some(v),
            (6, Value::Varint(v)) => out.fanout = Some(v),
            (_, value) => return Err(wrong_wire(offset, field, &value)),
        }
    }
    if !have_type {
        return Err(PbError {
            offset: 0,
            kind: PbErrorKind::MissingField { field: 1 },
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Strict tree decoding
// ---------------------------------------------------------------------------

struct Decoder<'a> {
    blocks: &'a HashMap<Cid, Vec<u8>>,
    limits: Limits,
    entries: u64,
    visited: u64,
}

/// A dag-pb block with its parsed node and UnixFS data.
struct Parsed<'b> {
    pb: PbNode<'b>,
    ufs: UnixfsData<'b>,
}

impl<'a> Decoder<'a> {
    /// Looks a block up, enforcing the CID policy and the work budget.
    fn block(&mut self, cid: &Cid) -> Result<&'a [u8], UnixfsError> {
        if !is_profile_cid(cid) {
            return Err(UnixfsError::UnsupportedCid { cid: *cid });
        }
        let bytes = self
            .blocks
            .get(cid)
            .ok_or(UnixfsError::MissingBlock { cid: *cid })?;
        // +1 so that even empty blocks cost something and visits stay bounded.
        self.visited = self.visited.saturating_add(bytes.len() as u64 + 1);
        if self.visited > self.limits.max_total_bytes {
            return Err(UnixfsError::SizeLimit {
                cid: *cid,
                limit: self.limits.max_total_bytes,
            });
        }
        Ok(bytes)
    }

    fn parse(cid: &Cid, bytes: &'a [u8]) -> Result<Parsed<'a>, UnixfsError> {
        let pb = decode_pb(bytes).map_err(|source| UnixfsError::DagPb { cid: *cid, source })?;
        let data = pb
            .data
            .ok_or(UnixfsError::MissingUnixfsData { cid: *cid })?;
        let ufs =
            decode_unixfs(data).map_err(|source| UnixfsError::UnixfsData { cid: *cid, source })?;
        Ok(Parsed { pb, ufs })
    }

    /// Decodes any node reachable as a directory entry (or the root).
    fn node(&mut self, cid: &Cid, depth: usize) -> Result<Node, UnixfsError> {
        let bytes = self.block(cid)?;
        if cid.codec() == CODEC_RAW {
            return Ok(Node::File(bytes.to_vec()));
        }
        let parsed = Self::parse(cid, bytes)?;
        match parsed.ufs.kind {
            TYPE_FILE => {
                let mut out = Vec::new();
                self.file(cid, &parsed, &mut out, 0)?;
                Ok(Node::File(out))
            }
            TYPE_DIRECTORY | TYPE_HAMT_SHARD => {
                if depth > self.limits.max_depth {
                    return Err(UnixfsError::DepthLimit {
                        cid: *cid,
                        limit: self.limits.max_depth,
                    });
                }
                let mut entries = BTreeMap::new();
                if parsed.ufs.kind == TYPE_DIRECTORY {
                    for link in &parsed.pb.links {
                        let name = self.entry_name(cid, link.name.unwrap_or_default())?;
                        self.insert(cid, &mut entries, name, &link.cid, depth)?;
                    }
                } else {
                    self.shard(cid, &parsed, &mut entries, 0, depth)?;
                }
                Ok(Node::Dir(entries))
            }
            type_code => Err(UnixfsError::UnsupportedType {
                cid: *cid,
                type_code,
            }),
        }
    }

    fn entry_name(&self, dir: &Cid, name: &[u8]) -> Result<String, UnixfsError> {
        let name = std::str::from_utf8(name).map_err(|_| UnixfsError::NonUtf8Name { dir: *dir })?;
        if !is_safe_name(name) {
            return Err(UnixfsError::UnsafeEntryName {
                dir: *dir,
                name: name.to_owned(),
            });
        }
        Ok(name.to_owned())
    }

    fn insert(
        &mut self,
        dir: &Cid,
        entries: &mut BTreeMap<String, Node>,
        name: String,
        child: &Cid,
        depth: usize,
    ) -> Result<(), UnixfsError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(UnixfsError::EntryLimit {
                cid: *dir,
                limit: self.limits.max_entries,
            });
        }
        if entries.contains_key(&name) {
            return Err(UnixfsError::DuplicateName { dir: *dir, name });
        }
        let node = self.node(child, depth + 1)?;
        entries.insert(name, node);
        Ok(())
    }

    /// Appends a file node's content to `out`, checking that filesize equals
    /// the sum of blocksizes and that each child produces exactly its blocksize.
    fn file(
        &mut self,
        cid: &Cid,
        parsed: &Parsed<'_>,
        out: &mut Vec<u8>,
        level: usize,
    ) -> Result<(), UnixfsError> {
        if level >= FILE_MAX_LEVELS {
            return Err(UnixfsError::DepthLimit {
                cid: *cid,
                limit: FILE_MAX_LEVELS,
            });
        }
        let ufs = &parsed.ufs;
        let links = &parsed.pb.links;
        if ufs.blocksizes.len() != links.len() {
            return Err(UnixfsError::BlocksizeCount {
                cid: *cid,
                links: links.len(),
                blocksizes: ufs.blocksizes.len(),
            });
        }
        let inline = ufs.data.unwrap_or_default();
        let declared = ufs.filesize.ok_or(UnixfsError::UnixfsData {
            cid: *cid,
            source: PbError {
                offset: 0,
                kind: PbErrorKind::MissingField { field: 3 },
            },
        })?;
        let sum = ufs
            .blocksizes
            .iter()
            .try_fold(inline.len() as u64, |acc, &s| acc.checked_add(s));
        if sum != Some(declared) {
            return Err(UnixfsError::FileSizeMismatch {
                cid: *cid,
                declared,
                actual: sum.unwrap_or(u64::MAX),
            });
        }
        let start = out.len();
        out.extend_from_slice(inline);
        for (link, &blocksize) in links.iter().zip(&ufs.blocksizes) {
            let child_start = out.len();
            let bytes = self.block(&link.cid)?;
            if link.cid.codec() == CODEC_RAW {
                out.extend_from_slice(bytes);
            } else {
                let child = Self::parse(&link.cid, bytes)?;
                if child.ufs.kind != TYPE_FILE {
                    return Err(UnixfsError::WrongNodeType {
                        cid: link.cid,
                        expected: "file node",
                    });
                }
                self.file(&link.cid, &child, out, level + 1)?;
            }
            let produced = (out.len() - child_start) as u64;
            if produced != blocksize {
                return Err(UnixfsError::FileSizeMismatch {
                    cid: link.cid,
                    declared: blocksize,
                    actual: produced,
                });
            }
        }
        // Both checks above already imply this, but the invariant is the point
        // of the whole function, so it is stated once more where it matters.
        let produced = (out.len() - start) as u64;
        if produced != declared {
            return Err(UnixfsError::FileSizeMismatch {
                cid: *cid,
                declared,
                actual: produced,
            });
        }
        Ok(())
    }

    /// Collects the entries of a HAMT shard (and its sub-shards) into `entries`.
    fn shard(
        &mut self,
        cid: &Cid,
        parsed: &Parsed<'_>,
        entries: &mut BTreeMap<String, Node>,
        level: usize,
        depth: usize,
    ) -> Result<(), UnixfsError> {
        let bad = |problem| UnixfsError::BadHamt { cid: *cid, problem };
        if level >= HAMT_MAX_LEVELS {
            return Err(bad(HamtProblem::TooDeep));
        }
        if parsed.ufs.fanout != Some(HAMT_FANOUT) {
            return Err(bad(HamtProblem::Fanout));
        }
        if parsed.ufs.hash_type != Some(HAMT_HASH_MURMUR3) {
            return Err(bad(HamtProblem::HashType));
        }
        if parsed.pb.links.len() > HAMT_FANOUT as usize {
            return Err(bad(HamtProblem::TooManyLinks));
        }
        for link in &parsed.pb.links {
            let name = link.name.unwrap_or_default();
            let (prefix, rest) = name
                .split_at_checked(2)
                .ok_or(bad(HamtProblem::BadPrefix))?;
            if !prefix
                .iter()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b))
            {
                return Err(bad(HamtProblem::BadPrefix));
            }
            if rest.is_empty() {
                let bytes = self.block(&link.cid)?;
                if link.cid.codec() != CODEC_DAG_PB {
                    return Err(UnixfsError::WrongNodeType {
                        cid: link.cid,
                        expected: "HAMT shard",
                    });
                }
                let sub = Self::parse(&link.cid, bytes)?;
                if sub.ufs.kind != TYPE_HAMT_SHARD {
                    return Err(UnixfsError::WrongNodeType {
                        cid: link.cid,
                        expected: "HAMT shard",
                    });
                }
                // A canonical sub-shard exists only because two or more names
                // share a bucket; requiring that also bounds the work a shard
                // tree full of empty sub-shards could cause.
                let before = entries.len();
                self.shard(&link.cid, &sub, entries, level + 1, depth)?;
                if entries.len() - before < 2 {
                    return Err(UnixfsError::BadHamt {
                        cid: link.cid,
                        problem: HamtProblem::SparseSubShard,
                    });
                }
            } else {
                let name = self.entry_name(cid, rest)?;
                self.insert(cid, entries, name, &link.cid, depth)?;
            }
        }
        Ok(())
    }
}

fn decode_with(
    root: &Cid,
    blocks: &HashMap<Cid, Vec<u8>>,
    limits: &Limits,
    params: Params,
) -> Result<Node, UnixfsError> {
    let mut decoder = Decoder {
        blocks,
        limits: Limits {
            max_depth: limits.max_depth.min(MAX_DEPTH),
            ..*limits
        },
        entries: 0,
        visited: 0,
    };
    let tree = decoder.node(root, 0)?;
    // Re-encoding is the cheapest complete canonicality check: if our encoder
    // reproduces the root, every block under it is byte-identical to what we
    // would have written, so the next push of this tree keeps the same CID.
    let rebuilt = root_cid_with(&tree, params)?;
    if rebuilt != *root {
        return Err(UnixfsError::NonCanonical {
            expected: *root,
            rebuilt,
        });
    }
    Ok(tree)
}

/// Decodes the tree under `root` from `blocks`, strictly.
///
/// Rejects CIDs outside the profile, malformed or unknown protobuf fields,
/// unsupported UnixFS types, unsafe or duplicate names, inconsistent file sizes,
/// anything beyond `limits`, and finally any DAG that our own encoder would not
/// have produced byte for byte ([`UnixfsError::NonCanonical`]).
pub fn decode(
    root: &Cid,
    blocks: &HashMap<Cid, Vec<u8>>,
    limits: &Limits,
) -> Result<Node, UnixfsError> {
    decode_with(root, blocks, limits, PROFILE)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
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
        decode_unixfs(pb.data.expect("data")).expect("ufs").kind
    }

    // -- encoder vectors (reference section 4) --------------------------------

    #[test]
    fn vectors_small() {
        let cases: Vec<(Node, &str)> = vec![
            (file(b"hello world"), "bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e"),
            (file(b"hello world\n"), "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4"),
            (file(b""), "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"),
            (dir(vec![]), "bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354"),
            (
                dir(vec![("hello.txt", file(b"hello world\n"))]),
                "bafybeidhkumeonuwkebh2i4fc7o7lguehauradvlk57gzake6ggjsy372a",
            ),
            (memdir(PREFS), "bafybeice34wbhavle2ljqs4fsz4em7ooyjmaekj2j6x7ieumv4bvba7ydm"),
            (
                memdir(b"---\nname: user-prefs\ntype: user\n---\nPrefers concise answers. Uses Rust.\n"),
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
                let children: Vec<(&str, Built)> =
                    entries.keys().map(|n| (n.as_str(), x)).collect();
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
            ("08 02 38 a4 03", PbErrorKind::UnknownField { field: 7 }),
            ("08 02 42 00", PbErrorKind::UnknownField { field: 8 }),
        ];
        for (input, kind) in cases {
            let got = decode_unixfs(&hex(input)).map(|_| ()).map_err(|e| e.kind);
            assert_eq!(got, Err(kind), "{input}");
        }
        let bytes = hex("08 02 18 03 20 01 20 02");
        let ok = decode_unixfs(&bytes).expect("file data");
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
        let err =
            decode(&dag.root, &block_map(&dag), &Limits::default()).expect_err("non-canonical");
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
        let err =
            decode(&dag.root, &block_map(&dag), &Limits::default()).expect_err("non-canonical");
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

        #[test]
        fn decode_pb_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_pb(&bytes);
            let _ = decode_unixfs(&bytes);
            let _ = parse_cid(&bytes);
        }
    }
}
