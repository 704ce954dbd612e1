//! Tree decoding: blocks back into a tree, bounded by `Limits`. The strict decode
//! re-encodes to prove the DAG is the one our encoder would produce; the foreign
//! decode reads any well-formed UnixFS DAG another tool made (CIDv0, dag-pb leaves,
//! any chunking and layout, HAMTs of any power-of-two fanout, mode and mtime).

// Errors carry CIDs by value; see the note in the module above.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};

use cid::Cid;

use super::*;

struct Decoder<'a> {
    blocks: &'a HashMap<Cid, Vec<u8>>,
    /// Inline raw leaves (identity CIDs) linked from `blocks`, with their bytes.
    inline: &'a HashMap<Cid, Vec<u8>>,
    limits: Limits,
    entries: u64,
    visited: u64,
    /// Reading another tool's DAG: the looser rules of [`decode_foreign`].
    foreign: bool,
}

/// A dag-pb block with its parsed node and UnixFS data.
struct Parsed<'b> {
    pb: PbNode<'b>,
    ufs: UnixfsData<'b>,
}

impl<'a> Decoder<'a> {
    /// Looks a block up, enforcing the CID policy and the work budget.
    fn block(&mut self, cid: &Cid) -> Result<&'a [u8], UnixfsError> {
        let supported = if self.foreign {
            is_supported_cid(cid) || is_inline_raw(cid)
        } else {
            is_profile_cid(cid)
        };
        if !supported {
            return Err(UnixfsError::UnsupportedCid { cid: *cid });
        }
        let store = if is_inline_raw(cid) {
            self.inline
        } else {
            self.blocks
        };
        let bytes = store
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

    fn parse(&self, cid: &Cid, bytes: &'a [u8]) -> Result<Parsed<'a>, UnixfsError> {
        let pb = decode_pb(bytes).map_err(|source| UnixfsError::DagPb { cid: *cid, source })?;
        let data = pb
            .data
            .ok_or(UnixfsError::MissingUnixfsData { cid: *cid })?;
        let ufs = decode_unixfs(data, self.foreign)
            .map_err(|source| UnixfsError::UnixfsData { cid: *cid, source })?;
        Ok(Parsed { pb, ufs })
    }

    /// Decodes any node reachable as a directory entry (or the root).
    fn node(&mut self, cid: &Cid, depth: usize) -> Result<Node, UnixfsError> {
        let bytes = self.block(cid)?;
        if cid.codec() == CODEC_RAW {
            return Ok(Node::File(bytes.to_vec()));
        }
        let parsed = self.parse(cid, bytes)?;
        match parsed.ufs.kind {
            TYPE_FILE => {
                let mut out = Vec::new();
                self.file(cid, &parsed, &mut out, 0)?;
                Ok(Node::File(out))
            }
            TYPE_RAW if self.foreign => {
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
        // A Raw-type leaf from an older importer may omit filesize; its size is then
        // what it holds.
        let implied = (self.foreign && ufs.kind == TYPE_RAW && ufs.filesize.is_none())
            .then_some(inline.len() as u64);
        let declared = ufs.filesize.or(implied).ok_or(UnixfsError::UnixfsData {
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
                let child = self.parse(&link.cid, bytes)?;
                let leaf_ok = child.ufs.kind == TYPE_RAW && self.foreign;
                if child.ufs.kind != TYPE_FILE && !leaf_ok {
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
        let fanout = parsed.ufs.fanout.unwrap_or(0);
        let fanout_ok = if self.foreign {
            fanout.is_power_of_two() && (2..=FOREIGN_MAX_FANOUT).contains(&fanout)
        } else {
            fanout == HAMT_FANOUT
        };
        if !fanout_ok {
            return Err(bad(HamtProblem::Fanout));
        }
        // Each level consumes log2(fanout) bits of the 64-bit hash.
        let max_levels = 64usize.div_ceil(fanout.trailing_zeros().max(1) as usize);
        if level >= max_levels {
            return Err(bad(HamtProblem::TooDeep));
        }
        if parsed.ufs.hash_type != Some(HAMT_HASH_MURMUR3) {
            return Err(bad(HamtProblem::HashType));
        }
        if parsed.pb.links.len() as u64 > fanout {
            return Err(bad(HamtProblem::TooManyLinks));
        }
        // Bucket prefixes are upper-case hex, as wide as `fanout - 1` written in hex.
        let width = format!("{:X}", fanout - 1).len();
        for link in &parsed.pb.links {
            let name = link.name.unwrap_or_default();
            let (prefix, rest) = name
                .split_at_checked(width)
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
                let sub = self.parse(&link.cid, bytes)?;
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
                if entries.len() - before < 2 && !self.foreign {
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

pub(super) fn decode_with(
    root: &Cid,
    blocks: &HashMap<Cid, Vec<u8>>,
    limits: &Limits,
    params: Params,
) -> Result<Node, UnixfsError> {
    let none = HashMap::new();
    let mut decoder = Decoder {
        blocks,
        inline: &none,
        limits: Limits {
            max_depth: limits.max_depth.min(MAX_DEPTH),
            ..*limits
        },
        entries: 0,
        visited: 0,
        foreign: false,
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

/// Decodes the tree under `root` from another tool's DAG (spec/sync.md#foreign-dags).
///
/// Reads any well-formed UnixFS DAG: CIDv0 or CIDv1 blocks hashed with sha2-256,
/// files as raw leaves or dag-pb File (or Raw) nodes with any chunking and layout,
/// flat directories and HAMT shards of any power-of-two fanout up to 1024, with
/// mode and mtime skipped, and inline raw leaves (identity CIDs of codec raw, whose
/// bytes are the CID itself, as `ipfs add --inline` writes small files). Everything else is checked as strictly as in
/// [`decode`] (names, sizes, duplicate entries, symlinks and other node types,
/// [`Limits`]), but the tree is not required to re-encode to `root`: the caller
/// re-encodes it under the profile and keeps both roots.
pub fn decode_foreign(
    root: &Cid,
    blocks: &HashMap<Cid, Vec<u8>>,
    limits: &Limits,
) -> Result<Node, UnixfsError> {
    // The bytes of inline leaves are their CIDs' digests; collecting them up front keeps
    // one lookup path (and one budget) for every block. Blocks that do not parse are
    // skipped here and reported by the decoder if it reaches them.
    let mut inline = HashMap::new();
    for (cid, bytes) in blocks {
        if cid.codec() != CODEC_DAG_PB {
            continue;
        }
        for link in decode_pb(bytes).map(|pb| pb.links).unwrap_or_default() {
            if is_inline_raw(&link.cid) {
                inline.insert(link.cid, link.cid.hash().digest().to_vec());
            }
        }
    }
    let mut decoder = Decoder {
        blocks,
        inline: &inline,
        limits: Limits {
            max_depth: limits.max_depth.min(MAX_DEPTH),
            ..*limits
        },
        entries: 0,
        visited: 0,
        foreign: true,
    };
    decoder.node(root, 0)
}
