//! IPFS helpers for the mocks: reading CAR sections and header roots the way
//! a service would, walking a block store depth-first, and a trustless
//! gateway (honest, or hostile in one chosen way).

use std::collections::{HashMap, HashSet};

use cid::Cid;
use memdir::ipfs::unixfs::{CODEC_DAG_PB, CODEC_RAW, block_cid, decode_pb};
use sha2::{Digest, Sha256};

use super::http::{Framing, Request, Response};

pub type Store = HashMap<Cid, Vec<u8>>;

fn varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// The first root named in a CARv1 header (`d8 2a 58 <len> 00 <cid>`).
pub fn car_root(car: &[u8]) -> Option<Cid> {
    let mut pos = 0;
    let len = varint(car, &mut pos)? as usize;
    let header = car.get(pos..pos + len)?;
    let tag = header.windows(2).position(|w| w == [0xd8, 0x2a])?;
    let rest = header.get(tag + 2..)?;
    let (n, skip) = match rest.first()? {
        0x58 => (*rest.get(1)? as usize, 2),
        b @ 0x40..=0x57 => ((b - 0x40) as usize, 1),
        _ => return None,
    };
    let cid_bytes = rest.get(skip..skip + n)?;
    Cid::try_from(cid_bytes.get(1..)?).ok()
}

/// Every block section of a CAR, hashes checked; the header is skipped.
pub fn sections(car: &[u8]) -> Result<Vec<(Cid, Vec<u8>)>, String> {
    let mut pos = 0;
    let hlen = varint(car, &mut pos).ok_or("bad header length")? as usize;
    pos += hlen;
    let mut out = Vec::new();
    while pos < car.len() {
        let len = varint(car, &mut pos).ok_or("bad section length")? as usize;
        let section = car.get(pos..pos + len).ok_or("truncated section")?;
        let mut cursor = std::io::Cursor::new(section);
        let cid = Cid::read_bytes(&mut cursor).map_err(|e| format!("bad CID: {e}"))?;
        let data = section[cursor.position() as usize..].to_vec();
        if Sha256::digest(&data).as_slice() != cid.hash().digest() {
            return Err(format!("block {cid} does not match its hash"));
        }
        out.push((cid, data));
        pos += len;
    }
    Ok(out)
}

/// The blocks under `root` in depth-first pre-order, each once, and whether
/// every linked block was present.
pub fn dfs(store: &Store, root: &Cid) -> (Vec<(Cid, Vec<u8>)>, bool) {
    fn walk(
        store: &Store,
        cid: &Cid,
        seen: &mut HashSet<Cid>,
        out: &mut Vec<(Cid, Vec<u8>)>,
        complete: &mut bool,
    ) {
        if !seen.insert(*cid) {
            return;
        }
        let Some(data) = store.get(cid) else {
            *complete = false;
            return;
        };
        out.push((*cid, data.clone()));
        if cid.codec() == CODEC_DAG_PB
            && let Ok(node) = decode_pb(data)
        {
            let links: Vec<Cid> = node.links.iter().map(|l| l.cid).collect();
            for link in links {
                walk(store, &link, seen, out, complete);
            }
        }
    }
    let mut out = Vec::new();
    let mut complete = true;
    walk(store, root, &mut HashSet::new(), &mut out, &mut complete);
    (out, complete)
}

/// A CAR section for arbitrary bytes under `cid`.
pub fn section(cid: &Cid, data: &[u8]) -> Vec<u8> {
    let cid_bytes = cid.to_bytes();
    let mut out = Vec::new();
    put_varint(&mut out, (cid_bytes.len() + data.len()) as u64);
    out.extend_from_slice(&cid_bytes);
    out.extend_from_slice(data);
    out
}

/// A CARv1 with `root` in the header and `blocks` in order.
pub fn car_of(root: &Cid, blocks: &[(Cid, Vec<u8>)]) -> Vec<u8> {
    let mut out = memdir::ipfs::car::car_header(root);
    for (cid, data) in blocks {
        out.extend_from_slice(&section(cid, data));
    }
    out
}

/// A raw-leaf CID that is not ours, for "wrong root" answers.
pub fn other_cid() -> Cid {
    block_cid(CODEC_RAW, b"not your data\n")
}

/// How a mock gateway misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GatewayMode {
    #[default]
    Honest,
    /// The last block's bytes altered (its CID kept).
    WrongBlock,
    /// The stream is cut in the middle of the last block, cleanly framed.
    Truncated,
    /// A valid block nothing links to is appended.
    ExtraBlock,
    /// A 3 MiB block (valid CID) is sent first.
    HugeBlock,
    /// The last block is left out (ends at a block boundary); `?format=raw`
    /// serves it honestly.
    EarlyEnd,
    /// As `EarlyEnd`, and `?format=raw` serves altered bytes.
    EarlyEndBadRaw,
    /// Answers the file bytes as text/plain, like a plain path gateway.
    NotCar,
}

/// Serves `GET /ipfs/<cid>?format=car|raw` from `store`; `None` for other paths.
pub fn serve_gateway(req: &Request, store: &Store, mode: GatewayMode) -> Option<Response> {
    let rest = req.path.strip_prefix("/ipfs/")?;
    if req.method != "GET" && req.method != "HEAD" {
        return Some(Response::text(405, "method not allowed"));
    }
    let Ok(cid) = Cid::try_from(rest.trim_end_matches('/')) else {
        return Some(Response::text(400, "bad CID"));
    };
    let accept = req.header("accept").unwrap_or("");
    let format = req.query("format").unwrap_or("");
    let want_raw = format == "raw" || accept.contains("application/vnd.ipld.raw");
    let want_car = format == "car" || accept.contains("application/vnd.ipld.car");
    if want_raw {
        let Some(data) = store.get(&cid) else {
            return Some(Response::text(404, "block not found"));
        };
        let mut data = data.clone();
        if mode == GatewayMode::EarlyEndBadRaw
            && let Some(b) = data.last_mut()
        {
            *b ^= 0xff;
        }
        return Some(Response::bytes(200, "application/vnd.ipld.raw", data));
    }
    if !want_car {
        return Some(Response::text(
            400,
            "this mock serves only format=car and format=raw",
        ));
    }
    if !store.contains_key(&cid) {
        return Some(Response::text(404, "root not found"));
    }
    let (mut blocks, _) = dfs(store, &cid);
    let ct = "application/vnd.ipld.car; version=1; order=dfs; dups=n";
    let mut framing = Framing::Length;
    let mut body = match mode {
        GatewayMode::Honest => car_of(&cid, &blocks),
        GatewayMode::WrongBlock => {
            if let Some((_, data)) = blocks.last_mut() {
                match data.last_mut() {
                    Some(b) => *b ^= 0x01,
                    None => data.push(0),
                }
            }
            car_of(&cid, &blocks)
        }
        GatewayMode::Truncated => {
            let car = car_of(&cid, &blocks);
            let last = blocks.last().map(|(_, d)| d.len()).unwrap_or(0);
            framing = Framing::Close;
            car[..car.len() - last / 2 - 1].to_vec()
        }
        GatewayMode::ExtraBlock => {
            let extra = b"an unrelated block\n".to_vec();
            blocks.push((block_cid(CODEC_RAW, &extra), extra));
            car_of(&cid, &blocks)
        }
        GatewayMode::HugeBlock => {
            let huge: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8).collect();
            blocks.insert(0, (block_cid(CODEC_RAW, &huge), huge));
            car_of(&cid, &blocks)
        }
        GatewayMode::EarlyEnd | GatewayMode::EarlyEndBadRaw => {
            if blocks.len() > 1 {
                blocks.pop();
            }
            car_of(&cid, &blocks)
        }
        GatewayMode::NotCar => {
            return Some(Response::bytes(
                200,
                "text/plain",
                store.get(&cid).cloned().unwrap_or_default(),
            ));
        }
    };
    if req.method == "HEAD" {
        body.clear();
    }
    let mut resp = Response::bytes(200, ct, body);
    resp.framing = framing;
    Some(resp)
}
