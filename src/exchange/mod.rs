//! Exchange: the portable `memory/0.1` blob, the formats of other memory tools, and
//! import planning.
//!
//! Owns decoding and encoding the blob and the foreign formats (whole-input validation
//! before anything is written) and the pure merge plan an import carries out. Must not
//! touch the filesystem: the front end reads the input, the engine applies the plan.

pub mod blob;
pub mod foreign;
pub mod memory_tool;
pub mod merge;
