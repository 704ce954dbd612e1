//! Reading CARv1 strictly: bounded input, canonical DAG-CBOR header, every block
//! verified against its CID, only blocks reachable from the root kept.

// Errors carry CIDs by value; see the note in the module above.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::io::{self, BufReader, Read};

use cid::Cid;
use cid::multihash::Multihash;
use sha2::{Digest, Sha256};

use crate::ipfs::unixfs::{
    CODEC_DAG_PB, CODEC_RAW, MH_IDENTITY, MH_SHA2_256, decode_pb, is_inline_raw, is_supported_cid,
    read_varint,
};

use super::*;

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
                // An inline raw leaf carries its bytes in the CID: no block to wait for.
                if is_inline_raw(&link) {
                    continue;
                }
                if !is_supported_cid(&link) {
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
/// a CIDv0, or a CIDv1 raw or dag-pb block, whose sha2-256 digest matches, no larger than
/// `limits.max_block_size`; the whole stream may not exceed
/// `limits.max_total_bytes`. Duplicates are tolerated; blocks may arrive in
/// any order, but at the end every block must be reachable from `root` and
/// every link under `root` must have arrived.
pub fn read_car<R: Read>(
    input: R,
    root: &Cid,
    limits: &CarLimits,
) -> Result<HashMap<Cid, Vec<u8>>, CarError> {
    if !is_supported_cid(root) {
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
    if version == MH_SHA2_256 {
        // 0x12 here starts a CIDv0: a bare sha2-256 multihash naming a dag-pb block,
        // as other tools write (spec/sync.md#foreign-dags). It is verified the same way.
        let digest_len = input.varint_in(section)?;
        if digest_len != 32 {
            return Err(CarError::UnsupportedCid {
                offset: section,
                version: 0,
                codec: CODEC_DAG_PB,
                hash_code: MH_SHA2_256,
                digest_len,
            });
        }
        let mut digest = [0u8; 32];
        input.exact(&mut digest, section)?;
        let hash = Multihash::<64>::wrap(MH_SHA2_256, &digest)
            .expect("a 32-byte digest fits a 64-byte multihash");
        return Cid::new_v0(hash).map_err(|_| CarError::UnsupportedCid {
            offset: section,
            version: 0,
            codec: CODEC_DAG_PB,
            hash_code: MH_SHA2_256,
            digest_len,
        });
    }
    if version != 1 {
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
