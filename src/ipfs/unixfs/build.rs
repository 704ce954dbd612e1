//! Building: a tree of files and directories into profile blocks (balanced file
//! trees of raw leaves, flat directories, HAMT shards).

// Errors carry CIDs by value; see the note in the module above.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};

use cid::Cid;

use super::*;

/// Layout parameters. The public API always uses [`PROFILE`]; tests shrink
/// them to exercise deep file trees and HAMTs with little data.
#[derive(Clone, Copy, Debug)]
pub(super) struct Params {
    pub(super) chunk_size: usize,
    pub(super) max_links: usize,
    pub(super) shard_threshold: usize,
}

pub(super) const PROFILE: Params = Params {
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
pub(super) struct Built {
    pub(super) cid: Cid,
    pub(super) tsize: u64,
    pub(super) content: u64,
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
pub(super) fn link_outs<N: AsRef<[u8]>>(children: &[(N, Built)]) -> Vec<LinkOut<'_>> {
    children
        .iter()
        .map(|(name, built)| LinkOut {
            cid: &built.cid,
            name: name.as_ref(),
            tsize: built.tsize,
        })
        .collect()
}

pub(super) fn build_with(tree: &Node, params: Params) -> Result<Dag, UnixfsError> {
    let mut sink = Collector::default();
    let built = Builder {
        params,
        sink: &mut sink,
    }
    .node(tree, 0)?;
    Ok(sink.into_dag(built.cid))
}

pub(super) fn root_cid_with(tree: &Node, params: Params) -> Result<Cid, UnixfsError> {
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
