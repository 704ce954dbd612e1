//! IPFS data structures: UnixFS `unixfs-v1-2025` DAGs and CIDs (and other tools' UnixFS
//! DAGs, read for re-encoding), CARv1 streams.
//!
//! Pure encoders and strict, verifying decoders of untrusted bytes. Must not do
//! network or filesystem IO: providers move the bytes, sync decides what to move.

pub mod car;
pub mod unixfs;
