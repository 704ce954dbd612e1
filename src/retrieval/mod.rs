//! Retrieval: ranking, keyword search and the token-budgeted context block.
//!
//! Pure functions from memories, a query and `now` to an order, hits or a block.
//! Must not read files or the clock: the engine hands everything in.

pub(crate) mod context;
pub(crate) mod duplicates;
pub(crate) mod filter;
pub(crate) mod graph;
pub(crate) mod hybrid;
mod postings;
pub(crate) mod rank;
pub(crate) mod search;
pub(crate) mod state;
