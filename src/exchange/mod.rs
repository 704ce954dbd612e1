//! Exchange: the portable `memory/0.1` blob and import planning.
//!
//! Owns decoding and encoding the blob (whole-blob validation before anything is
//! written) and the pure merge plan an import carries out. Must not touch the
//! filesystem: the engine applies the plan.

pub mod blob;
pub mod merge;
