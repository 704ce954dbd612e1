//! dag-pb: encoding links and data byte-exactly as the reference importers do, and
//! strict protobuf decoding of untrusted blocks.

// Errors carry CIDs by value; see the note in the module above.
#![allow(clippy::result_large_err)]

use cid::Cid;

use super::*;

/// One outgoing link while encoding.
pub(super) struct LinkOut<'a> {
    pub(super) cid: &'a Cid,
    pub(super) name: &'a [u8],
    pub(super) tsize: u64,
}

/// Length of a PBLink message body: Hash, Name (always written), Tsize.
fn link_body_len(link: &LinkOut<'_>) -> usize {
    let cl = cid_len(link.cid);
    let nl = link.name.len();
    1 + varint_len(cl as u64) + cl + 1 + varint_len(nl as u64) + nl + 1 + varint_len(link.tsize)
}

/// Exact length of the dag-pb node [`encode_pb`] writes.
pub(super) fn pb_len(links: &[LinkOut<'_>], data_len: usize) -> usize {
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
pub(super) fn encode_pb(links: &[LinkOut<'_>], data: &[u8]) -> Vec<u8> {
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

/// A decoded UnixFS Data message (mode and mtime are refused in a strict decode,
/// since the profile does not write them, and skipped in a decode of another tool's
/// DAG, since a memory keeps neither).
#[derive(Debug, Default)]
pub(super) struct UnixfsData<'a> {
    pub(super) kind: u64,
    pub(super) data: Option<&'a [u8]>,
    pub(super) filesize: Option<u64>,
    pub(super) blocksizes: Vec<u64>,
    pub(super) hash_type: Option<u64>,
    pub(super) fanout: Option<u64>,
}

/// Strictly decodes UnixFS Data: fields in ascending order, each at most once
/// except consecutive unpacked blocksizes; Type required. With `metadata`, mode
/// (7, varint) and mtime (8, a message) are accepted and ignored.
pub(super) fn decode_unixfs(bytes: &[u8], metadata: bool) -> Result<UnixfsData<'_>, PbError> {
    let mut reader = PbReader::new(bytes);
    let mut out = UnixfsData::default();
    let mut last_field = 0;
    let mut have_type = false;
    loop {
        let offset = reader.pos;
        let Some((field, value)) = reader.next()? else {
            break;
        };
        if metadata && matches!(field, 7 | 8) && field > last_field {
            match (field, value) {
                (7, Value::Varint(_)) | (8, Value::Bytes(_)) => {
                    last_field = field;
                    continue;
                }
                (_, value) => return Err(wrong_wire(offset, field, &value)),
            }
        }
        if !(1..=6).contains(&field) {
            let kind = if matches!(field, 7 | 8) {
                PbErrorKind::Metadata { field }
            } else {
                PbErrorKind::UnknownField { field }
            };
            return Err(PbError { offset, kind });
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
