//! The read-only queries of the façade: `list`, `recall` and `context`
//! (spec/ranking.md), on the warm store when there is one and on a fresh load
//! otherwise. It must not change a memory file (only a stale MEMORY.md is rebuilt).

use chrono::{DateTime, Utc};

use crate::engine::Memory;
use crate::engine::access;
use crate::engine::hybrid;
use crate::engine::requests::{ContextRequest, List, ListRequest, RecallRequest};
use crate::engine::types::{Context, Hit, Listed, Problem, Recall};
use crate::error::{Error, Result};
use crate::memory::Record;
use crate::retrieval::context;
use crate::retrieval::filter::{Filter, Lifecycle};
use crate::retrieval::hybrid::{Fused, Passages};
use crate::retrieval::rank;
use crate::retrieval::search;
use crate::store;

impl Memory {
    /// Lists the memories that pass the request's filter, in rank order
    /// (spec/ranking.md#filters), and says what bringing a stale MEMORY.md up to
    /// date did. An unknown type in the filter is an error.
    pub fn list(&self, req: &ListRequest) -> Result<List> {
        let filter = &req.filter;
        let snap = self.load()?;
        check_filter(filter, &snap.records)?;
        let (_, index) = self.refresh_index_if_stale(&snap.records)?;
        let now = self.now();
        let life = Lifecycle::of(&snap.records, now.date_naive());
        let last_read = access::last_reads(&self.backend);
        let out = rank::order(&snap.records, now)
            .into_iter()
            .map(|(i, score)| (&snap.records[i], score))
            .filter(|(r, _)| filter.admits(r, &life))
            .map(|(r, score)| Listed {
                key: r.key.to_string(),
                kind: r.meta.kind.to_string(),
                name: r.meta.name.clone(),
                description: r.meta.description.clone(),
                updated: r.meta.updated.text.clone(),
                score,
                superseded_by: life.superseded_by(r.key.as_str()).to_vec(),
                expired: life.expired(r),
                last_read: last_read.get(r.key.as_str()).cloned(),
            })
            .collect();
        Ok(List {
            memories: out,
            problems: snap.problems,
            index,
        })
    }

    /// Memories that pass the request's filter and are relevant to its query, best
    /// first (spec/ranking.md#recall, spec/ranking.md#filters: the others are left
    /// out before the limit is applied; scores do not change), with the ranking that
    /// ran: with `[embeddings]` configured, keyword and vector ranks fused, or keyword
    /// ranking and why it fell back (spec/ranking.md#hybrid-recall). Embeddings never
    /// fail the call.
    pub fn recall(&self, req: &RecallRequest) -> Result<Recall> {
        let (query, limit, filter) = (req.query.as_str(), req.limit, &req.filter);
        if query.trim().is_empty() {
            return Err(Error::EmptyQuery);
        }
        // With [embeddings], the records are looked at once to find what to embed, the
        // network is reached with no lock held, and the ranking runs on the records as
        // they are then (spec/ranking.md#hybrid-recall). Without, this is one pass.
        let mut hy = hybrid::State::start(&self.backend);
        if hy.wants_records()
            && let Some(r) = self.with_warm(|w| {
                w.prepare_hybrid(&mut hy);
                Ok(())
            })
        {
            r?;
            hy.fetch(query);
        }
        let warm = self.with_warm(|w| {
            check_filter(filter, w.records())?;
            let keyword = w.corpus().relevance(w.records(), query);
            let (rel, report, _) = w.finish_hybrid(&mut hy, keyword, None);
            let hits = recall_rel(w.records(), rel, query, limit, filter, self.now());
            Ok(((hits, report), w.problems().to_vec()))
        });
        let ((hits, embeddings), problems) = match warm {
            Some(r) => {
                let out = r?;
                self.save_warm_vectors();
                out
            }
            None => {
                let (snap, corpus, _) = self.load_records(true)?;
                check_filter(filter, &snap.records)?;
                let corpus = corpus.expect("a corpus was asked for");
                if hy.wants_records() {
                    hy.prepare(&snap.records);
                    hy.fetch(query);
                }
                let keyword = corpus.relevance(&snap.records, query);
                let (rel, report, _) = hy.finish(&snap.records, keyword, None);
                let hits = recall_rel(&snap.records, rel, query, limit, filter, self.now());
                store::drop_later((snap.records, corpus));
                ((hits, report), snap.problems)
            }
        };
        access::record(
            &self.backend,
            self.now(),
            hits.iter().map(|h| h.key.as_str()),
            access::Via::Recall,
        );
        Ok(Recall {
            hits,
            problems,
            embeddings,
        })
    }

    /// Embeds every memory without a cached vector (`memdir index --embeddings`,
    /// spec/ranking.md#hybrid-recall).
    pub fn index_embeddings(
        &self,
    ) -> Result<std::result::Result<hybrid::Summary, crate::embed::EmbedError>> {
        self.index_embeddings_with(&mut |_, _| {})
    }

    /// [`Memory::index_embeddings`], calling `progress(done, total)` before the first
    /// batch and after each: texts embedded so far, of those that had no vector.
    pub fn index_embeddings_with(
        &self,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<std::result::Result<hybrid::Summary, crate::embed::EmbedError>> {
        let (snap, _, _) = self.load_with(false)?;
        Ok(hybrid::index(&self.backend, &snap.records, progress))
    }

    /// Builds the context block (spec/ranking.md#packing-the-context-block) with only
    /// the memories that pass the request's filter packed (spec/ranking.md#filters;
    /// the index section stays the store's), the problems met loading the store, and
    /// the ranking that ran: with `[embeddings]` configured and a query, the memory
    /// order by hybrid relevance, or by keyword relevance and why it fell back
    /// (spec/ranking.md#hybrid-recall).
    pub fn context(&self, req: &ContextRequest) -> Result<Context> {
        let (max_tokens, query, filter) = (req.max_tokens, req.query.as_deref(), &req.filter);
        // Hybrid memory order as for recall: the network with no lock held.
        let query_text = query.filter(|q| !q.trim().is_empty());
        let mut hy = match query_text {
            Some(_) => hybrid::State::start(&self.backend),
            None => hybrid::State::Off,
        };
        if let Some(q) = query_text
            && hy.wants_records()
            && let Some(r) = self.with_warm(|w| {
                w.prepare_hybrid(&mut hy);
                Ok(())
            })
        {
            r?;
            hy.fetch(q);
        }
        // With passages on, the best memories' lines are planned on the warm store
        // and embedded with no lock held (spec/ranking.md#passages).
        let mut plan = None;
        if let Some(q) = query_text
            && hy.wants_passages()
            && let Some(r) = self.with_warm(|w| {
                let keyword = w.corpus().relevance(w.records(), q);
                let (first, _, _) = w.finish_hybrid(&mut hy, keyword, None);
                Ok(w.plan_passages(&hy, &first))
            })
        {
            let mut p = r?;
            hy.fetch_passages(&mut p);
            plan = Some(p);
        }
        if let Some(out) = self.context_warm(max_tokens, query, filter, &mut hy, plan.as_ref()) {
            if let Ok(c) = &out {
                self.save_warm_vectors();
                access::record(
                    &self.backend,
                    self.now(),
                    c.block.memories.iter().map(|m| m.key.as_str()),
                    access::Via::Context,
                );
            }
            return out;
        }
        self.context_loaded(max_tokens, query, filter, &mut hy)
    }

    /// Loads the store once for many context blocks (a benchmark, a server answering
    /// many turns): `prepared.block(max_tokens, query)` is exactly what
    /// [`Memory::context`] returns (its block) for the store as it was loaded here.
    pub fn prepare_context(&self) -> Result<(context::Prepared, Vec<Problem>)> {
        let (snap, corpus, _) = self.load_with(true)?;
        self.refresh_index_if_stale(&snap.records)?;
        let events = self.events()?;
        let mut problems = snap.problems;
        problems.extend(events.problems);
        let mut prepared = context::Prepared::new(snap.records, events.events, self.now());
        if let Some(c) = corpus {
            prepared.set_corpus(c);
        }
        Ok((prepared, problems))
    }
}

/// The hits of a recall from the relevance of every record.
fn recall_rel(
    records: &[Record],
    rel: Vec<f64>,
    query: &str,
    limit: usize,
    filter: &Filter,
    now: DateTime<Utc>,
) -> Vec<Hit> {
    let terms = search::terms(query);
    let life = Lifecycle::of(records, now.date_naive());
    let mut hits: Vec<(usize, f64, f64)> = rel
        .iter()
        .enumerate()
        .filter(|(i, r)| **r > 0.0 && filter.admits(&records[*i], &life))
        .map(|(i, r)| {
            let m = &records[i].meta;
            (
                i,
                search::blend(*r, rank::salience(m), rank::recency(m, now)),
                *r,
            )
        })
        .collect();
    hits.sort_by(|a, b| rank::compare((&records[a.0], a.1), (&records[b.0], b.1)));
    hits.truncate(limit);
    hits.into_iter()
        .map(|(i, score, relevance)| {
            let r = &records[i];
            Hit {
                key: r.key.to_string(),
                kind: r.meta.kind.to_string(),
                name: r.meta.name.clone(),
                description: r.meta.description.clone(),
                updated: r.meta.updated.text.clone(),
                score,
                relevance,
                superseded_by: life.superseded_by(r.key.as_str()).to_vec(),
                expired: life.expired(r),
                line: search::matching_line(&r.body, &terms),
            }
        })
        .collect()
}

/// The relevance a context block is built with: the fused one (with the lines'
/// similarities when passages are on) when hybrid ranking ran; none when it fell
/// back, so that the block is the keyword block exactly (its memory prior weighed
/// by the keyword match's strength, spec/ranking.md).
fn fused(
    memory: Vec<f64>,
    report: Option<&hybrid::Report>,
    passages: Option<Passages>,
) -> Option<Fused> {
    report
        .is_some_and(|r| r.mode == "hybrid")
        .then_some(Fused { memory, passages })
}

/// The one-shot hybrid path over a loaded store (spec/ranking.md#hybrid-recall):
/// with `hy` started, the memories without a vector prepared and the query embedded
/// (the network reached here, with no lock held), then the keyword relevance of
/// `query` fused with vector similarity. The relevance is `None` without
/// `[embeddings]` or when ranking fell back, so the block is the keyword block
/// exactly. `Memory::context` on a fresh load and the LoCoMo benchmark (through
/// [`Memory::context_relevance`]) both take this path; the warm store takes the
/// same steps on the vectors it keeps.
fn prepared_relevance(
    hy: &mut hybrid::State,
    prepared: &context::Prepared,
    query: &str,
) -> (Option<Fused>, Option<hybrid::Report>) {
    if matches!(*hy, hybrid::State::Off) {
        return (None, None);
    }
    let records = prepared.records();
    if hy.wants_records() {
        hy.prepare(records);
        hy.fetch(query);
    }
    let keyword = prepared.keyword_relevance(query);
    // With passages on, the best memories by the first fusion have their lines
    // embedded and compared (spec/ranking.md#passages).
    let plan = hy.wants_passages().then(|| {
        let (first, _, _) = hy.finish(records, keyword.clone(), None);
        let mut plan = hy.plan_passages(records, &first, None);
        hy.fetch_passages(&mut plan);
        plan
    });
    let (rel, report, passages) = hy.finish(records, keyword, plan.as_ref());
    (fused(rel, report.as_ref(), passages), report)
}

impl Memory {
    /// The relevance a context block over `prepared` (this store, loaded by
    /// [`Memory::prepare_context`]) is built with for `query`, and the ranking that
    /// ran: what [`Memory::context`] computes on a fresh load, for a caller that
    /// builds many blocks from one load (the LoCoMo benchmark).
    #[cfg(feature = "bench")]
    pub(crate) fn context_relevance(
        &self,
        prepared: &context::Prepared,
        query: &str,
    ) -> (Option<Fused>, Option<hybrid::Report>) {
        let mut hy = hybrid::State::start(&self.backend);
        prepared_relevance(&mut hy, prepared, query)
    }
}

/// A filter's values that need the store: its types must be standard or present.
fn check_filter(filter: &Filter, records: &[Record]) -> Result<()> {
    let bad = |source| Error::Filter {
        arg: String::new(),
        source,
    };
    filter.check().map_err(bad)?;
    filter
        .unknown_type(records.iter().map(|r| &r.meta.kind))
        .map_err(bad)
}

/// The steps of [`Memory::context`].
impl Memory {
    /// The context block on the warm store, with `hy` prepared and fetched;
    /// `None` when this memory is not kept warm.
    fn context_warm(
        &self,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
        hy: &mut hybrid::State,
        plan: Option<&hybrid::PassagePlan>,
    ) -> Option<Result<Context>> {
        let query_text = query.filter(|q| !q.trim().is_empty());
        self.with_warm(|w| {
            check_filter(filter, w.records())?;
            w.refresh_index_text(self)?;
            w.prepare_standing(self.now());
            let events = self.recent_events(max_tokens.saturating_mul(4))?;
            let mut problems = w.problems().to_vec();
            problems.extend(events.problems);
            // `None` without [embeddings]: the keyword block exactly.
            let (relevance, embeddings) = match query_text {
                Some(q) if !matches!(*hy, hybrid::State::Off) => {
                    let keyword = w.corpus().relevance(w.records(), q);
                    let (rel, report, passages) = w.finish_hybrid(hy, keyword, plan);
                    (fused(rel, report.as_ref(), passages), report)
                }
                _ => (None, None),
            };
            let parts = context::Parts {
                records: w.records(),
                corpus: Some(w.corpus()),
                standing: w.standing(),
                index_text: w.index_text(),
                events: &events.events,
                now: self.now(),
            };
            Ok(Context {
                block: context::build_with(&parts, max_tokens, query, filter, relevance),
                problems,
                embeddings,
            })
        })
    }

    /// The context block on a fresh load, with `hy` started (hybrid ranking
    /// prepared and fetched here, on the loaded records).
    fn context_loaded(
        &self,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
        hy: &mut hybrid::State,
    ) -> Result<Context> {
        let query_text = query.filter(|q| !q.trim().is_empty());
        let has_query = query.is_some_and(|q| !q.trim().is_empty());
        let (snap, corpus, keys) = self.load_records_keyed(has_query)?;
        check_filter(filter, &snap.records)?;
        let events = self.recent_events(max_tokens.saturating_mul(4))?;
        let mut problems = snap.problems;
        problems.extend(events.problems);
        // MEMORY.md comes with the block (`block_while`).
        let mut prepared =
            context::Prepared::with_index(snap.records, String::new(), events.events, self.now());
        if let Some(c) = corpus {
            prepared.set_corpus(c);
        }
        // With [embeddings] configured, the memory order uses hybrid relevance
        // (spec/ranking.md#hybrid-recall); without, this is `block_filtered` exactly.
        let (relevance, embeddings) = match query_text {
            Some(q) => prepared_relevance(hy, &prepared, q),
            None => (None, None),
        };
        // MEMORY.md is rendered and checked (rebuilt when stale) while the memories
        // and lines are scored.
        let block = prepared.block_while(
            |records| {
                self.refresh_index_checked(records, &keys)
                    .map(|(text, _)| text)
            },
            max_tokens,
            query,
            filter,
            relevance,
        )?;
        store::drop_later(prepared);
        access::record(
            &self.backend,
            self.now(),
            block.memories.iter().map(|m| m.key.as_str()),
            access::Via::Context,
        );
        Ok(Context {
            block,
            problems,
            embeddings,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::testing::{NOW, at, draft};
    use crate::engine::{ContextRequest, ListRequest, Memory, Recall, RecallRequest};
    use crate::error::Error;

    fn store() -> Memory {
        let mem = Memory::in_memory().with_clock(at(NOW));
        mem.write(&draft(
            "user_role",
            "user",
            "Argentina fan, plays on Saturdays.",
        ))
        .unwrap();
        mem.write(&draft(
            "project_db",
            "project",
            "The database is Postgres 16.",
        ))
        .unwrap();
        mem
    }

    // spec/ranking.md#recall: recall finds the memory that holds the query's terms,
    // and only memories that do.
    #[test]
    fn recall_finds_a_written_memory() {
        let mem = store();
        let Recall { hits, problems, .. } =
            mem.recall(&RecallRequest::new("postgres", 10)).unwrap();
        assert!(problems.is_empty());
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].key, "project_db");
        assert_eq!(hits[0].kind, "project");
        assert!(hits[0].relevance > 0.0);
        assert!(
            mem.recall(&RecallRequest::new("cricket", 10))
                .unwrap()
                .hits
                .is_empty()
        );
        assert!(matches!(
            mem.recall(&RecallRequest::new("  ", 10)),
            Err(Error::EmptyQuery)
        ));
    }

    // spec/cli.md#filters: `list` of one type lists only that type; an unknown type
    // is an error.
    #[test]
    fn list_filters_by_type() {
        let mem = store();
        let all = mem.list(&ListRequest::new()).unwrap().memories;
        let mut keys: Vec<&str> = all.iter().map(|l| l.key.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["project_db", "user_role"]);
        let users = mem
            .list(&ListRequest::of_type(Some("user")))
            .unwrap()
            .memories;
        assert_eq!(users.len(), 1);
        assert_eq!(users[0].key, "user_role");
        assert!(mem.list(&ListRequest::of_type(Some("nonsense"))).is_err());
    }

    // spec/ranking.md#packing-the-context-block: the block holds the memories'
    // bodies.
    #[test]
    fn the_context_block_holds_the_memories() {
        let mem = store();
        let block = mem
            .context(&ContextRequest::new(4096).with_query("postgres"))
            .unwrap()
            .block;
        assert!(block.text.contains("Postgres 16"));
        assert!(block.memories.iter().any(|m| m.key == "project_db"));
    }
}
