//! What the façade's operations take and give back: one request struct per operation
//! with options (`ContextRequest`, `RecallRequest`, `ListRequest`) and one named
//! result per operation that returns more than one thing (`List`, `Written`,
//! `Forgotten`, `Renamed`, `Indexed`, `Export`, `Sessions`, `States`,
//! `KnowledgeGraph`, `Loaded`). It must not read or write the store: these are
//! plain data (spec/decisions.md, 2026-11-28).

use crate::engine::state::StateEntry;
use crate::engine::types::{IndexOutcome, Listed, Problem, SearchIndexReport, WriteOutcome};
use crate::memory::Record;
use crate::memory::timeline::Event;
use crate::retrieval::context::DEFAULT_MAX_TOKENS;
use crate::retrieval::filter::Filter;
use crate::retrieval::graph::Graph;
use crate::retrieval::state::Session;

/// What [`Memory::context`](crate::Memory::context) packs: a token budget, the
/// query the memories are ordered by (none: by rank), and the filter the packed
/// memories pass (the index section stays the store's; spec/ranking.md#filters).
///
/// ```
/// use memdir::ContextRequest;
/// let req = ContextRequest::new(2048).with_query("deploy steps");
/// assert_eq!(req.max_tokens, 2048);
/// assert_eq!(req.query.as_deref(), Some("deploy steps"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ContextRequest {
    /// The block's budget in tokens (spec/ranking.md#packing-the-context-block).
    pub max_tokens: usize,
    /// Orders the memories by relevance to this text; `None` or blank: by rank.
    pub query: Option<String>,
    /// Only the memories that pass it are packed.
    pub filter: Filter,
}

impl Default for ContextRequest {
    fn default() -> ContextRequest {
        ContextRequest::new(DEFAULT_MAX_TOKENS)
    }
}

impl ContextRequest {
    /// A block of at most `max_tokens` tokens, no query, no filter.
    pub fn new(max_tokens: usize) -> ContextRequest {
        ContextRequest {
            max_tokens,
            query: None,
            filter: Filter::default(),
        }
    }

    /// The same request with the memories ordered by relevance to `query`.
    pub fn with_query(mut self, query: impl Into<String>) -> ContextRequest {
        self.query = Some(query.into());
        self
    }

    /// The same request with only the memories that pass `filter` packed.
    pub fn with_filter(mut self, filter: Filter) -> ContextRequest {
        self.filter = filter;
        self
    }
}

/// What [`Memory::recall`](crate::Memory::recall) looks for: the query, how many
/// hits at most, and the filter the hits pass (applied before the limit; scores do
/// not change, spec/ranking.md#filters).
///
/// ```
/// use memdir::RecallRequest;
/// let req = RecallRequest::new("deploy", 5);
/// assert_eq!((req.query.as_str(), req.limit), ("deploy", 5));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RecallRequest {
    /// The text the memories are matched against; blank is an error.
    pub query: String,
    /// The most hits returned.
    pub limit: usize,
    /// Only the memories that pass it are hits.
    pub filter: Filter,
}

impl RecallRequest {
    /// At most `limit` memories relevant to `query`, no filter.
    pub fn new(query: impl Into<String>, limit: usize) -> RecallRequest {
        RecallRequest {
            query: query.into(),
            limit,
            filter: Filter::default(),
        }
    }

    /// The same request with only the memories that pass `filter` as hits.
    pub fn with_filter(mut self, filter: Filter) -> RecallRequest {
        self.filter = filter;
        self
    }
}

/// What [`Memory::list`](crate::Memory::list) lists: the memories that pass the
/// filter, in rank order. A stale MEMORY.md is always brought up to date on the way
/// (the listing's [`List::index`] says what that did).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListRequest {
    /// Only the memories that pass it are listed.
    pub filter: Filter,
}

impl ListRequest {
    /// The memories the default filter admits.
    pub fn new() -> ListRequest {
        ListRequest::default()
    }

    /// Only the memories that pass `filter`.
    pub fn with_filter(mut self, filter: Filter) -> ListRequest {
        self.filter = filter;
        self
    }

    /// Only the memories of type `kind` (all when `None`); an unknown type is an
    /// error of the call.
    pub fn of_type(kind: Option<&str>) -> ListRequest {
        ListRequest::new().with_filter(Filter::default().types(kind))
    }
}

/// A listing: the memories in rank order, the problems met loading, and what the
/// stale-index rebuild did.
#[derive(Debug, Clone)]
pub struct List {
    /// The memories that passed the filter, best first.
    pub memories: Vec<Listed>,
    /// The problems met loading the store.
    pub problems: Vec<Problem>,
    /// What bringing MEMORY.md up to date did (nothing when it was current).
    pub index: IndexOutcome,
}

/// What a write of one memory did (`write`, `edit`, `link`, `unlink`): the memory
/// file's outcome and the MEMORY.md rebuild's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Created, updated or unchanged.
    pub outcome: WriteOutcome,
    /// What the MEMORY.md rebuild did (a hand-edited index saved under `.memdir/backups/`).
    pub index: IndexOutcome,
}

/// What `forget` did: its `forgot` event and the MEMORY.md rebuild's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Forgotten {
    /// The `forgot` event logged.
    pub event: Event,
    /// What the MEMORY.md rebuild did.
    pub index: IndexOutcome,
}

/// What `rename` did: its `renamed` event and the MEMORY.md rebuild's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Renamed {
    /// The `renamed` event logged.
    pub event: Event,
    /// What the MEMORY.md rebuild did.
    pub index: IndexOutcome,
}

/// What `index` did, and the problems met loading the store on the way.
#[derive(Debug, Clone)]
pub struct Indexed {
    /// What the MEMORY.md rebuild did.
    pub outcome: IndexOutcome,
    /// The problems met loading the store.
    pub problems: Vec<Problem>,
    /// What the load took: files vouched for, read and parsed (no term data: it
    /// does not analyze).
    pub load: SearchIndexReport,
}

/// An export: the exported text and the problems met loading the store.
#[derive(Debug, Clone)]
pub struct Export {
    /// The blob (or the foreign file) as it is written out.
    pub text: String,
    /// The problems met loading the store (and, for a blob, the timeline).
    pub problems: Vec<Problem>,
}

/// The sessions of the timeline and the problems met reading it.
#[derive(Debug, Clone)]
pub struct Sessions {
    /// The sessions, by first time.
    pub sessions: Vec<Session>,
    /// The problems met reading the timeline.
    pub problems: Vec<Problem>,
}

/// Every state entry and the problems met loading the store.
#[derive(Debug, Clone)]
pub struct States {
    /// The entries, by key.
    pub entries: Vec<StateEntry>,
    /// The problems met loading the store.
    pub problems: Vec<Problem>,
}

/// The knowledge graph of the store, the records it was built from, and the
/// problems met loading them.
#[derive(Debug, Clone)]
pub struct KnowledgeGraph {
    /// The graph of links between memories.
    pub graph: Graph,
    /// The memories it was built from.
    pub records: Vec<Record>,
    /// The problems met loading the store.
    pub problems: Vec<Problem>,
}

/// A read-only answer computed from a fresh load (a plan, a walk, facts) and the
/// problems met loading the store.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// The answer.
    pub value: T,
    /// The problems met loading the store.
    pub problems: Vec<Problem>,
}
