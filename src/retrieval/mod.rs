//! Retrieval: ranking, keyword search and the token-budgeted context block.
//!
//! Pure functions from memories, a query and `now` to an order, hits or a block.
//! Must not read files or the clock: the engine hands everything in.

pub mod context;
pub mod duplicates;
pub mod filter;
pub mod graph;
pub mod hybrid;
mod postings;
pub mod rank;
pub mod search;
pub mod state;
