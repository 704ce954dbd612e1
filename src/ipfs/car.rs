//! CARv1 archives of UnixFS DAGs: a writer for uploads and a strict streaming
//! reader for downloads.
//!
//! The writer emits the dag-cbor header `{roots: [root], version: 1}` (written
//! by hand; it is a fixed shape) and then each block once, in depth-first order
//! from the root, so the archive can be verified incrementally by whoever reads
//! it (`order=dfs; dups=n` in gateway terms).
//!
//! The reader treats every byte as hostile. It verifies each block's sha2-256
//! digest against its CID, accepts only CIDv1 raw/dag-pb sha2-256 blocks (never
//! identity CIDs), bounds each block and the whole stream, ignores the header's
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

use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};

use cid::Cid;
use cid::multihash::Multihash;
use sha2::{Digest, Sha256};

use crate::ipfs::unixfs::{
    CODEC_DAG_PB, CODEC_RAW, Dag, MH_IDENTITY, MH_SHA2_256, PbError, decode_pb, is_profile_cid,
    put_cid, put_varint, read_varint,
};

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
    /// A block CID outside the profile (version, codec or hash).
    #[error(
        "unsupported CID (version {version}, codec {codec:#x}, hash {hash_code:#x}/{digest_len}) at byte {offset}"
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
    /// The root the caller asked for is itself outside the profile.
    #[error("requested root {cid} is outside the unixfs-v1-2025 profile")]
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
    /// A reachable block links to a CID outside the profile.
    #[error("block {parent} links to unsupported CID {link}")]
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

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------

/// The CARv1 header for one root: varint length, then the dag-cbor map
/// `{"roots": [CID], "version": 1}` with keys in dag-cbor order (shorter first).
pub fn car_header(root: &Cid) -> Vec<u8> {
    let mut cid_bytes = Vec::with_capacity(root.encoded_len() + 1);
    // Tag 42 wraps the binary CID prefixed with the 0x00 identity multibase.
    cid_bytes.push(0x00);
    put_cid(&mut cid_bytes, root);
    let mut map = Vec::with_capacity(cid_bytes.len() + 24);
    map.push(0xa2);
    map.push(0x65);
    map.extend_from_slice(b"roots");
    map.push(0x81);
    map.extend_from_slice(&[0xd8, 0x2a]);
    put_cbor_head(&mut map, 2, cid_bytes.len() as u64);
    map.extend_from_slice(&cid_bytes);
    map.push(0x67);
    map.extend_from_slice(b"version");
    map.push(0x01);
    let mut out = Vec::with_capacity(map.len() + 2);
    put_varint(&mut out, map.len() as u64);
    out.extend_from_slice(&map);
    out
}

/// A CBOR head with the minimal argument encoding dag-cbor requires.
fn put_cbor_head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let major = major << 5;
    match arg {
        0..=23 => out.push(major | arg as u8),
        24..=0xff => out.extend_from_slice(&[major | 24, arg as u8]),
        0x100..=0xffff => {
            out.push(major | 25);
            out.extend_from_slice(&(arg as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(major | 26);
            out.extend_from_slice(&(arg as u32).to_be_bytes());
        }
        _ => {
            out.push(major | 27);
            out.extend_from_slice(&arg.to_be_bytes());
        }
    }
}

/// Writes a CARv1 with `root` in the header and `blocks` in the given order.
///
/// This is the general form behind [`write_car`]; it also writes delta CARs
/// (the new root with only the blocks a provider does not have yet).
pub fn write_car_blocks<'a, W, I>(root: &Cid, blocks: I, out: &mut W) -> io::Result<()>
where
    W: Write + ?Sized,
    I: IntoIterator<Item = (&'a Cid, &'a [u8])>,
{
    out.write_all(&car_header(root))?;
    let mut prefix = Vec::with_capacity(64);
    for (cid, data) in blocks {
        prefix.clear();
        put_varint(&mut prefix, (cid.encoded_len() + data.len()) as u64);
        put_cid(&mut prefix, cid);
        out.write_all(&prefix)?;
        out.write_all(data)?;
    }
    Ok(())
}

/// Writes `dag` as a CARv1: header with its root, then its blocks in DFS order
/// (as [`crate::ipfs::unixfs::build`] already orders and deduplicates them).
pub fn write_car<W: Write + ?Sized>(dag: &Dag, out: &mut W) -> io::Result<()> {
    write_car_blocks(
        &dag.root,
        dag.blocks.iter().map(|(cid, data)| (cid, data.as_slice())),
        out,
    )
}

/// [`write_car`] into a new byte vector.
pub fn car_bytes(dag: &Dag) -> Vec<u8> {
    let len = car_header(&dag.root).len()
        + dag
            .blocks
            .iter()
            .map(|(c, d)| 10 + c.encoded_len() + d.len())
            .sum::<usize>();
    let mut out = Vec::with_capacity(len);
    // Writing into a Vec cannot fail.
    let _ = write_car(dag, &mut out);
    out
}

// ---------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------

/// A buffered reader that knows its position, for error offsets.
struct Input<R: Read> {
    inner: BufReader<R>,
    offset: u64,
}

impl<R: Read> Input<R> {
    fn io(&self, source: io::Error) -> CarError {
        CarError::Io {
            offset: self.offset,
            source,
        }
    }

    /// One byte, or `None` at the end of the stream.
    fn byte(&mut self) -> Result<Option<u8>, CarError> {
        let mut buf = [0u8; 1];
        loop {
            match self.inner.read(&mut buf) {
                Ok(0) => return Ok(None),
                Ok(_) => {
                    self.offset += 1;
                    return Ok(Some(buf[0]));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
    }

    /// A varint; `None` only if the stream ends cleanly before its first byte.
    fn varint(&mut self) -> Result<Option<u64>, CarError> {
        let start = self.offset;
        let mut buf = [0u8; 10];
        for i in 0..buf.len() {
            let Some(byte) = self.byte()? else {
                return if i == 0 {
                    Ok(None)
                } else {
                    Err(CarError::TruncatedVarint { offset: start })
                };
            };
            buf[i] = byte;
            if byte & 0x80 == 0 {
                let mut pos = 0;
                return read_varint(&buf[..=i], &mut pos)
                    .map(Some)
                    .map_err(|_| CarError::BadVarint { offset: start });
            }
        }
        Err(CarError::BadVarint { offset: start })
    }

    /// A varint that must be there (inside a section).
    fn varint_in(&mut self, section: u64) -> Result<u64, CarError> {
        match self.varint()? {
            Some(v) => Ok(v),
            None => Err(CarError::Truncated { offset: section }),
        }
    }

    /// Exactly `buf.len()` bytes of the section starting at `section`.
    fn exact(&mut self, buf: &mut [u8], section: u64) -> Result<(), CarError> {
        match self.inner.read_exact(buf) {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(CarError::Truncated { offset: section })
            }
            Err(e) => Err(self.io(e)),
        }
    }
}

/// Minimal CBOR reader for the header: definite lengths only.
struct Cbor<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cbor<'a> {
    fn bad(&self) -> CarError {
        CarError::BadHeader {
            offset: self.base + self.pos as u64,
        }
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], CarError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.bad())?;
        let out = self.bytes.get(self.pos..end).ok_or_else(|| self.bad())?;
        self.pos = end;
        Ok(out)
    }

    /// `(major type, argument)`; indefinite lengths and reserved values are errors.
    fn head(&mut self) -> Result<(u8, u64), CarError> {
        let bad = self.bad();
        let first = *self.take(1)?.first().ok_or(bad)?;
        let info = first & 0x1f;
        let arg = match info {
            0..=23 => u64::from(info),
            24..=27 => {
                let width = 1u64 << (info - 24);
                self.take(width)?
                    .iter()
                    .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
            }
            _ => return Err(self.bad()),
        };
        Ok((first >> 5, arg))
    }

    /// Skips one complete item of any kind.
    fn skip(&mut self, depth: usize) -> Result<(), CarError> {
        if depth > MAX_CBOR_DEPTH {
            return Err(self.bad());
        }
        let (major, arg) = self.head()?;
        match major {
            0 | 1 | 7 => Ok(()),
            2 | 3 => self.take(arg).map(drop),
            4 => (0..arg).try_for_each(|_| self.skip(depth + 1)),
            5 => (0..arg).try_for_each(|_| {
                self.skip(depth + 1)?;
                self.skip(depth + 1)
            }),
            _ => self.skip(depth + 1),
        }
    }

    /// Parses the header map: `version` must be 1 and `roots` must be an
    /// array of tag-42 byte strings; the roots themselves are ignored.
    fn header(&mut self) -> Result<(), CarError> {
        let (major, entries) = self.head()?;
        if major != 5 {
            return Err(self.bad());
        }
        let mut version = None;
        for _ in 0..entries {
            let (major, len) = self.head()?;
            if major != 3 {
                return Err(self.bad());
            }
            let key = self.take(len)?;
            match key {
                b"version" => {
                    let (major, value) = self.head()?;
                    if major != 0 || version.is_some() {
                        return Err(self.bad());
                    }
                    version = Some(value);
                }
                b"roots" => {
                    let (major, count) = self.head()?;
                    if major != 4 {
                        return Err(self.bad());
                    }
                    for _ in 0..count {
                        if self.head()? != (6, 42) {
                            return Err(self.bad());
                        }
                        let (major, len) = self.head()?;
                        if major != 2 {
                            return Err(self.bad());
                        }
                        self.take(len)?;
                    }
                }
                _ => self.skip(0)?,
            }
        }
        match version {
            Some(1) if self.pos == self.bytes.len() => Ok(()),
            Some(1) | None => Err(self.bad()),
            Some(version) => Err(CarError::UnsupportedVersion { version }),
        }
    }
}

/// Reachability bookkeeping while blocks arrive in any order.
struct Reach {
    root: Cid,
    accepted: HashMap<Cid, Vec<u8>>,
    /// Linked from an accepted block but not seen yet, with discovery order.
    wanted: HashMap<Cid, u64>,
    /// Verified but not (yet) linked from anything accepted, with arrival order.
    pending: HashMap<Cid, (u64, Vec<u8>)>,
    seq: u64,
}

impl Reach {
    fn offer(&mut self, cid: Cid, bytes: Vec<u8>) -> Result<(), CarError> {
        self.seq += 1;
        if self.accepted.contains_key(&cid) || self.pending.contains_key(&cid) {
            // Duplicates are allowed (`dups=y`); the copy was verified, so it
            // is identical and can be dropped.
            return Ok(());
        }
        if cid == self.root || self.wanted.contains_key(&cid) {
            self.accept(cid, bytes)
        } else {
            self.pending.insert(cid, (self.seq, bytes));
            Ok(())
        }
    }

    /// Accepts a reachable block, then everything buffered that it (and its
    /// newly accepted descendants) link to.
    fn accept(&mut self, cid: Cid, bytes: Vec<u8>) -> Result<(), CarError> {
        let mut work = vec![(cid, bytes)];
        while let Some((cid, bytes)) = work.pop() {
            self.wanted.remove(&cid);
            let links: Vec<Cid> = if cid.codec() == CODEC_DAG_PB {
                decode_pb(&bytes)
                    .map_err(|source| CarError::DagPb { cid, source })?
                    .links
                    .into_iter()
                    .map(|l| l.cid)
                    .collect()
            } else {
                Vec::new()
            };
            self.accepted.insert(cid, bytes);
            for link in links {
                if !is_profile_cid(&link) {
                    return Err(CarError::UnsupportedLink { parent: cid, link });
                }
                if self.accepted.contains_key(&link) || self.wanted.contains_key(&link) {
                    continue;
                }
                if let Some((_, child)) = self.pending.remove(&link) {
                    // Mark it wanted until it is popped, so a second parent
                    // in the same batch does not queue it twice.
                    self.wanted.insert(link, self.seq);
                    work.push((link, child));
                } else {
                    self.seq += 1;
                    self.wanted.insert(link, self.seq);
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<HashMap<Cid, Vec<u8>>, CarError> {
        if !self.accepted.contains_key(&self.root) {
            return Err(CarError::MissingBlock { cid: self.root });
        }
        if let Some((cid, _)) = self.wanted.iter().min_by_key(|(_, seq)| **seq) {
            return Err(CarError::MissingBlock { cid: *cid });
        }
        if let Some((cid, _)) = self.pending.iter().min_by_key(|(_, (seq, _))| *seq) {
            return Err(CarError::Unreachable { cid: *cid });
        }
        Ok(self.accepted)
    }
}

/// Reads a CARv1 stream and returns the verified blocks of the DAG under `root`.
///
/// The header's roots are parsed for well-formedness and otherwise ignored:
/// the caller's `root` is what the blocks must hang from. Every block must be
/// a CIDv1 raw or dag-pb block whose sha2-256 digest matches, no larger than
/// `limits.max_block_size`; the whole stream may not exceed
/// `limits.max_total_bytes`. Duplicates are tolerated; blocks may arrive in
/// any order, but at the end every block must be reachable from `root` and
/// every link under `root` must have arrived.
pub fn read_car<R: Read>(
    input: R,
    root: &Cid,
    limits: &CarLimits,
) -> Result<HashMap<Cid, Vec<u8>>, CarError> {
    if !is_profile_cid(root) {
        return Err(CarError::UnsupportedRoot { cid: *root });
    }
    let mut input = Input {
        inner: BufReader::with_capacity(64 << 10, input),
        offset: 0,
    };
    let total_err = |offset| CarError::TotalTooLarge {
        offset,
        limit: limits.max_total_bytes,
    };

    let header_len = input.varint()?.ok_or(CarError::Truncated { offset: 0 })?;
    if header_len > MAX_HEADER_LEN {
        return Err(CarError::HeaderTooLarge { len: header_len });
    }
    let header_start = input.offset;
    if header_start + header_len > limits.max_total_bytes {
        return Err(total_err(0));
    }
    let mut header = vec![0u8; header_len as usize];
    input.exact(&mut header, 0)?;
    Cbor {
        bytes: &header,
        pos: 0,
        base: header_start,
    }
    .header()?;

    let mut reach = Reach {
        root: *root,
        accepted: HashMap::new(),
        wanted: HashMap::new(),
        pending: HashMap::new(),
        seq: 0,
    };
    loop {
        let section = input.offset;
        let Some(len) = input.varint()? else {
            break;
        };
        if len == 0 {
            return Err(CarError::EmptySection { offset: section });
        }
        // Our CIDs take 36 bytes; 128 leaves room for any sane CID so that the
        // precise per-field checks below report the real problem.
        if len > limits.max_block_size as u64 + 128 {
            return Err(CarError::BlockTooLarge {
                offset: section,
                len,
                limit: limits.max_block_size,
            });
        }
        let body_start = input.offset;
        if body_start + len > limits.max_total_bytes {
            return Err(total_err(section));
        }
        let cid = read_block_cid(&mut input, section)?;
        let cid_len = input.offset - body_start;
        let data_len = len
            .checked_sub(cid_len)
            .ok_or(CarError::Truncated { offset: section })?;
        if data_len > limits.max_block_size as u64 {
            return Err(CarError::BlockTooLarge {
                offset: section,
                len: data_len,
                limit: limits.max_block_size,
            });
        }
        let mut data = vec![0u8; data_len as usize];
        input.exact(&mut data, section)?;
        if Sha256::digest(&data).as_slice() != cid.hash().digest() {
            return Err(CarError::HashMismatch {
                cid,
                offset: section,
            });
        }
        reach.offer(cid, data)?;
    }
    reach.finish()
}

/// Reads and checks a block's CID prefix straight from the stream, so the data
/// that follows can be read into its own buffer without shifting it.
fn read_block_cid<R: Read>(input: &mut Input<R>, section: u64) -> Result<Cid, CarError> {
    let version = input.varint_in(section)?;
    if version != 1 {
        // 0x12 here is a CIDv0 (bare sha2-256 multihash), which this profile never uses.
        return Err(CarError::UnsupportedCid {
            offset: section,
            version,
            codec: 0,
            hash_code: 0,
            digest_len: 0,
        });
    }
    let codec = input.varint_in(section)?;
    let hash_code = input.varint_in(section)?;
    let digest_len = input.varint_in(section)?;
    if hash_code == MH_IDENTITY {
        return Err(CarError::IdentityCid { offset: section });
    }
    if !(codec == CODEC_RAW || codec == CODEC_DAG_PB)
        || hash_code != MH_SHA2_256
        || digest_len != 32
    {
        return Err(CarError::UnsupportedCid {
            offset: section,
            version,
            codec,
            hash_code,
            digest_len,
        });
    }
    let mut digest = [0u8; 32];
    input.exact(&mut digest, section)?;
    // A 32-byte digest always fits the 64-byte multihash buffer.
    let hash = Multihash::<64>::wrap(MH_SHA2_256, &digest)
        .expect("a 32-byte digest fits a 64-byte multihash");
    Ok(Cid::new_v1(codec, hash))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipfs::unixfs::tests::{dir, file, hex};
    use crate::ipfs::unixfs::{Dag, Limits, Node, block_cid, build, decode};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

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

        // Identity CID, unknown codec (dag-cbor), CIDv0, sha2-512.
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
        // A requested root outside the profile.
        let v0_root = Cid::new_v0(*root.hash()).expect("v0");
        assert!(matches!(
            expect_err(&car, &v0_root, &limits),
            CarError::UnsupportedRoot { cid } if cid == v0_root
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
}
