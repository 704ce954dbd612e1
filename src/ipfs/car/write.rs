//! Writing CARv1: the header and the blocks of a DAG, in the order a streaming
//! reader can verify.

// Errors carry CIDs by value; see the note in the module above.
#![allow(clippy::result_large_err)]

use std::io::{self, Write};

use cid::Cid;

use crate::ipfs::unixfs::{Dag, put_cid, put_varint};

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
