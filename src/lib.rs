//! memdir: a durable memory for AI agents that people can read and edit.
//!
//! A memory is one Markdown file with YAML frontmatter in a memory directory;
//! `MEMORY.md` indexes them and `timeline/YYYY-MM-DD.jsonl` logs events. The engine
//! ranks memories by salience × recency and builds a token-budgeted context block an
//! agent puts in its system prompt before every turn.
//!
//! ```
//! use memdir::{ContextRequest, Draft, Kind, Memory, RecallRequest};
//! let mem = Memory::in_memory(); // or Memory::open("memory")?
//! mem.write(&Draft { key: "user_role".into(), name: "Role".into(),
//!     description: "Argentina fan".into(), kind: Kind::User,
//!     body: "Plays 5-a-side on Saturdays.".into(), ..Draft::default() })?;
//! let hits = mem.recall(&RecallRequest::new("saturday", 5))?.hits;
//! assert_eq!(hits[0].key, "user_role");
//! let req = ContextRequest::new(2048).with_query("what does the user do on weekends?");
//! let block = mem.context(&req)?.block;
//! assert!(block.text.starts_with("# Agent Memory"));
//! # Ok::<(), memdir::Error>(())
//! ```
//!
//! The public API is what this page re-exports ([`Memory`] and its types, [`Error`],
//! [`Failure`], [`Filter`], [`watch`]) plus the wings an embedder drives directly:
//! [`sync`] (push, pull, sync, status; `open` chooses provider, mode and key),
//! [`provider`], [`ipfs`] (UnixFS and CAR), [`memory`] (the file formats),
//! [`exchange`] (the `memory/0.1` blob) and [`report`] (errors as a front end shows
//! them). The engine, store, retrieval, embed, error and clock wings are private to the
//! crate. The `memdir` binary's front ends (the command line and the MCP server) are
//! modules of the binary, not of this library: they use only this public API.
//! `spec/architecture.md` describes every module and the direction of their imports.

#![warn(unreachable_pub, missing_docs)]

#[cfg(feature = "bench")]
pub mod bench;
mod clock;
mod embed;
mod engine;
mod error;
pub mod exchange;
pub mod ipfs;
pub mod memory;
#[cfg(feature = "sync")]
pub mod provider;
pub mod report;
mod retrieval;
mod store;
pub mod sync;

pub use clock::Clock;
// Embeddings: what `[embeddings]` says (`Memory::embeddings_config`) and its provider.
pub use embed::{
    BUILTIN_DIMENSIONS, BUILTIN_MODEL, Config as EmbedConfig, EmbedError, Embedder,
    Provider as EmbedProvider, redact_url,
};
pub use engine::access::Via;
// The background embedding worker (`memdir mcp`, `memdir watch`).
pub use engine::backfill;
pub use engine::backfill::{Backfill, BackfillError};
pub use engine::prune::{
    ConsolidatePlan, DEFAULT_SUPERSEDED_DAYS, DuplicateGroup, PruneApplied, PruneCandidate,
    PruneCriteria, PrunePlan, PruneReason,
};
pub use engine::watch::{DEBOUNCE, Rebuild, watch};
pub use engine::{
    Activity, ActivityQuery, CheckReport, Compacted, Context, Draft, Edit, FindReplace, Hit,
    IfExists, ImportReport, IndexOutcome, IndexOwner, Listed, MAX_GRAPH_DEPTH, Memory, Problem,
    Recall, SearchIndexHealth, SearchIndexReport, SectionEdit, Severity, Snapshot, StateEntry,
    TimelineRepair, ToolReply, WriteOutcome, lifecycle_mark,
};
// What `Memory`'s operations take and give back (one method per operation).
pub use engine::{
    ContextRequest, Export, Forgotten, Indexed, KnowledgeGraph, List, ListRequest, Loaded,
    RecallRequest, Renamed, Sessions, States, Written,
};
pub use error::{Class, Error, Result};
pub use exchange::merge::Strategy;
pub use memory::{Decay, Key, Kind, Meta, Record};
pub use report::Failure;
pub use retrieval::context::{Block, DEFAULT_MAX_TOKENS};
pub use retrieval::duplicates::{DEFAULT_THRESHOLD as CONSOLIDATE_THRESHOLD, Why as DuplicateWhy};
pub use retrieval::filter::{
    Filter, FilterError, Lifecycle, check_salience, parse_date, parse_types,
};
pub use retrieval::graph::{
    Dangling, Direction, Edge, Format as GraphFormat, Graph, Node, Rendered, Step, SubjectFact,
    Walk, render as render_graph,
};
pub use retrieval::state::{Session, Transcript};
pub use store::write_atomic;
