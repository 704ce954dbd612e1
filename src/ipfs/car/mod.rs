//! CARv1 archives of UnixFS DAGs: a writer for uploads and a strict streaming
//! reader for downloads.
//!
//! The writer emits the dag-cbor header `{roots: [root], version: 1}` (written
//! by hand; it is a fixed shape) and then each block once, in depth-first order
//! from the root, so the archive can be verified incrementally by whoever reads
//! it (`order=dfs; dups=n` in gateway terms).
//!
//! The reader treats every byte as hostile. It verifies each block's sha2-256
//! digest against its CID, accepts only CIDv0 and CIDv1 raw/dag-pb sha2-256 blocks
//! (never identity CIDs or other hashes, which it cannot verify the same way), bounds each block and the whole stream, ignores the header's
//! roots in favour of the root the caller asked for (as the trustless gateway
//! spec requires), tolerates duplicate blocks, keeps only blocks reachable from
//! that root and fails unless every link under the root is present.
//!
//! This module must stay pure: it reads from an `io::Read` and writes to an
//! `io::Write` it is given, and never opens files or sockets, looks at the
//! clock or environment, or prints. UnixFS meaning (names, sizes, canonical
//! form) is `crate::ipfs::unixfs`'s job; this module only checks block integrity and
//! reachability.

// Errors carry the CIDs that failed by value (a `Cid` is about 90 bytes), so
// some variants exceed clippy's 128-byte guideline. They are built only on the
// failure path, where copying them is irrelevant, and boxing the CIDs would
// make matching on errors clumsy for every caller.
#![allow(clippy::result_large_err)]

use std::io;

use cid::Cid;

use crate::ipfs::unixfs::PbError;

/// Default bound on one block's data, as the trustless gateway spec suggests.
pub const DEFAULT_MAX_BLOCK_SIZE: usize = 2 << 20;
/// Default bound on all bytes read from one archive.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 256 << 20;
/// A CARv1 header is a tiny map; anything this large is not one.
const MAX_HEADER_LEN: u64 = 64 << 10;
/// Nesting bound while skipping unknown header values.
const MAX_CBOR_DEPTH: usize = 16;

/// Bounds for [`read_car`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CarLimits {
    /// Largest block data accepted (the CID is not counted).
    pub max_block_size: usize,
    /// Most bytes read from the stream in total, header and duplicates included.
    /// Blocks that arrive before their parent are buffered, and this bound is
    /// also what bounds that buffer.
    pub max_total_bytes: u64,
}

impl Default for CarLimits {
    fn default() -> Self {
        CarLimits {
            max_block_size: DEFAULT_MAX_BLOCK_SIZE,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

/// Why an archive was rejected. Offsets are byte positions in the stream where
/// the offending header or block section starts.
#[derive(Debug, thiserror::Error)]
pub enum CarError {
    /// The underlying reader failed.
    #[error("I/O error at byte {offset}: {source}")]
    Io {
        /// Position reached in the stream.
        offset: u64,
        /// The reader's error.
        source: io::Error,
    },
    /// The stream ends inside a length varint.
    #[error("stream ends inside a varint at byte {offset}")]
    TruncatedVarint {
        /// Where the varint starts.
        offset: u64,
    },
    /// A varint is overlong, non-minimal or overflows 64 bits.
    #[error("malformed varint at byte {offset}")]
    BadVarint {
        /// Where the varint starts.
        offset: u64,
    },
    /// The stream ends inside the header or a block section.
    #[error("stream ends inside the section starting at byte {offset}")]
    Truncated {
        /// Where the section starts.
        offset: u64,
    },
    /// The header is longer than any CARv1 header we accept.
    #[error("header of {len} bytes is too large")]
    HeaderTooLarge {
        /// Declared header length.
        len: u64,
    },
    /// The header is not a well-formed `{roots, version}` dag-cbor map.
    #[error("malformed CAR header near byte {offset}")]
    BadHeader {
        /// Stream position of the problem.
        offset: u64,
    },
    /// The header's version is not 1 (CARv2 and others are not supported).
    #[error("unsupported CAR version {version}")]
    UnsupportedVersion {
        /// The version found.
        version: u64,
    },
    /// A block section of length zero.
    #[error("empty block section at byte {offset}")]
    EmptySection {
        /// Where the section starts.
        offset: u64,
    },
    /// A block section larger than the limit.
    #[error("block section at byte {offset} is {len} bytes, over the limit of {limit}")]
    BlockTooLarge {
        /// Where the section starts.
        offset: u64,
        /// Section or data length found.
        len: u64,
        /// The block size limit.
        limit: usize,
    },
    /// The stream holds more bytes than the total limit.
    #[error("archive exceeds {limit} bytes at byte {offset}")]
    TotalTooLarge {
        /// Where the section that crossed the limit starts.
        offset: u64,
        /// The limit.
        limit: u64,
    },
    /// A block with an identity CID (data inlined in the CID), which is never
    /// accepted from the network.
    #[error("identity CID in block section at byte {offset}")]
    IdentityCid {
        /// Where the section starts.
        offset: u64,
    },
    /// A block CID memdir cannot verify or decode (version, codec or hash).
    #[error(
        "unsupported CID (version {version}, codec {codec:#x}, hash {hash_code:#x}/{digest_len}) at byte {offset}: memdir reads raw and dag-pb blocks hashed with sha2-256"
    )]
    UnsupportedCid {
        /// Where the section starts.
        offset: u64,
        /// CID version.
        version: u64,
        /// Multicodec.
        codec: u64,
        /// Multihash code.
        hash_code: u64,
        /// Digest length.
        digest_len: u64,
    },
    /// The root the caller asked for is not a CID memdir can verify or decode.
    #[error(
        "requested root {cid} is not supported: {}",
        crate::ipfs::unixfs::cid_problem(cid)
    )]
    UnsupportedRoot {
        /// The requested root.
        cid: Cid,
    },
    /// A block's bytes do not hash to its CID.
    #[error("block {cid} at byte {offset} does not match its hash")]
    HashMismatch {
        /// The CID claimed for the block.
        cid: Cid,
        /// Where the section starts.
        offset: u64,
    },
    /// A reachable dag-pb block cannot be parsed, so its links are unknown.
    #[error("dag-pb block {cid} is malformed: {source}")]
    DagPb {
        /// The block.
        cid: Cid,
        /// What was wrong.
        source: PbError,
    },
    /// A reachable block links to a CID memdir cannot verify or decode.
    #[error(
        "block {parent} links to unsupported CID {link}: {}",
        crate::ipfs::unixfs::cid_problem(link)
    )]
    UnsupportedLink {
        /// The linking block.
        parent: Cid,
        /// The link target.
        link: Cid,
    },
    /// A valid block that nothing under the requested root links to.
    #[error("block {cid} is not reachable from the requested root")]
    Unreachable {
        /// The first such block in stream order.
        cid: Cid,
    },
    /// The root or a linked block never arrived.
    #[error("block {cid} is missing")]
    MissingBlock {
        /// The root, or the first missing link in discovery order.
        cid: Cid,
    },
}

mod read;
#[cfg(test)]
mod tests;
mod write;

pub use read::read_car;
pub use write::{car_bytes, car_header, write_car, write_car_blocks};
