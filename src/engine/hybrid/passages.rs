//! Passages (spec/ranking.md#passages): which lines of the best memories a context
//! compares with the query, embedding them with no lock held, the query's similarity
//! to each, and the hashes the vector cache keeps for them.
//!
//! Must not rank (`retrieval::hybrid` fuses) or hold a lock during a request.

use std::collections::HashSet;

use super::{Loaded, State, save_vectors, text_hash_of};
use crate::embed::cache::{Vectors, text_hash};
use crate::memory::Record;
use crate::retrieval::hybrid::{self, Passages};

/// The hashes whose vectors the cache keeps when it drops what no memory uses:
/// `hashes` (each record's text's) and, with passages on, those of every record's
/// non-blank lines (spec/ranking.md#passages).
pub(crate) fn live_hashes(
    records: &[Record],
    hashes: &[[u8; 32]],
    passages: bool,
) -> Vec<[u8; 32]> {
    let mut live = hashes.to_vec();
    if passages {
        live.extend(records.iter().flat_map(passages_of).map(|(_, _, h)| h));
    }
    live
}

/// A record's passages (spec/ranking.md#passages): each non-blank line's number, its
/// text as embedded, and the hash its vector is cached under.
fn passages_of(r: &Record) -> impl Iterator<Item = (usize, &str, [u8; 32])> {
    r.body
        .lines()
        .enumerate()
        .filter_map(|(l, line)| hybrid::passage(line).map(|t| (l, t, text_hash(t))))
}

impl State<'_> {
    /// Whether ranking is hybrid so far and a context compares the best memories'
    /// lines with the query too (`passages = true`, spec/ranking.md#passages).
    pub(crate) fn wants_passages(&self) -> bool {
        matches!(self, State::Fetched { config, .. } if config.passages)
    }

    /// The lines of the best memories by `relevance` (the fused relevance of their
    /// whole texts) and, at most the query budget of them, those without a vector in
    /// this call's cache or the warm store's `loaded` one.
    pub(crate) fn plan_passages(
        &self,
        records: &[Record],
        relevance: &[f64],
        loaded: Option<&Loaded>,
    ) -> PassagePlan {
        let State::Fetched {
            config, vectors, ..
        } = self
        else {
            return PassagePlan::default();
        };
        let v = vectors.as_ref().or(loaded.map(|l| &l.vectors));
        let has = |h: &[u8; 32]| v.is_some_and(|v| v.get(h).is_some());
        let mut seen = HashSet::new();
        let mut plan = PassagePlan::default();
        for r in hybrid::top(relevance, hybrid::PASSAGE_MEMORIES) {
            let Some(record) = records.get(r) else {
                continue;
            };
            let mut lines = Vec::new();
            for (l, text, h) in passages_of(record) {
                lines.push((l, h));
                if !has(&h) && plan.missing.len() < config.query_budget && seen.insert(h) {
                    plan.missing.push((h, text.to_string()));
                }
            }
            plan.memories.push(PlannedMemory {
                record: r,
                hash: text_hash_of(record),
                lines,
            });
        }
        plan
    }

    /// Embeds the plan's passages without a vector (the network, with no lock
    /// held), a batch at a time, and keeps what comes back (written to the cache file
    /// here when it was read here); a failure leaves the rest pending.
    pub(crate) fn fetch_passages(&mut self, plan: &mut PassagePlan) {
        let State::Fetched {
            config,
            embedder,
            backend,
            rel,
            vectors,
            fresh,
            lines_failed,
            ..
        } = self
        else {
            return;
        };
        let missing = std::mem::take(&mut plan.missing);
        let mut got: Vec<([u8; 32], Vec<f32>)> = Vec::new();
        for chunk in missing.chunks(config.batch_size) {
            let texts: Vec<String> = chunk.iter().map(|(_, t)| t.clone()).collect();
            let out = match embedder.embed_within(&texts, config.timeout) {
                Ok(out) => out,
                Err(e) => {
                    *lines_failed = Some(e.to_string());
                    break;
                }
            };
            let complete = out.len() == chunk.len();
            got.extend(chunk.iter().map(|(h, _)| *h).zip(out));
            if !complete {
                break;
            }
        }
        match vectors {
            Some(v) if !got.is_empty() => {
                for (h, x) in got {
                    v.insert(h, x);
                }
                save_vectors(backend, rel, v);
            }
            Some(_) => {}
            None => fresh.extend(got),
        }
    }
}

/// The lines a context compares with the query (spec/ranking.md#passages): the best
/// memories by the fused relevance of their whole texts, with their non-blank lines,
/// and the passages to embed.
#[derive(Debug, Default)]
pub(crate) struct PassagePlan {
    memories: Vec<PlannedMemory>,
    /// Passages without a vector, each text once, at most the query budget.
    pub(super) missing: Vec<([u8; 32], String)>,
}

#[derive(Debug)]
struct PlannedMemory {
    record: usize,
    /// The hash of the memory's embedded text: a warm store that changed since the
    /// plan is not given another memory's lines.
    hash: [u8; 32],
    /// Each non-blank line's number and the hash of its passage.
    lines: Vec<(usize, [u8; 32])>,
}

/// [`hybrid::Passages`] and how many of the planned lines had no vector.
pub(super) struct Compared {
    pub(super) passages: Passages,
    pub(super) pending: usize,
}

impl PassagePlan {
    /// The query's similarity to each planned line that has a vector in `vectors`.
    pub(super) fn similarities(
        &self,
        records: &[Record],
        vectors: &Vectors,
        query: &[f32],
        floor: f32,
    ) -> Compared {
        let qn = hybrid::norm(query);
        let mut sims: Vec<Option<Vec<Option<f32>>>> = vec![None; records.len()];
        let mut pending = 0;
        for m in &self.memories {
            let Some(record) = records.get(m.record).filter(|r| text_hash_of(r) == m.hash) else {
                continue;
            };
            let mut of = vec![None; record.body.lines().count()];
            for &(l, h) in &m.lines {
                match (vectors.get_normed(&h), of.get_mut(l)) {
                    (Some((v, n)), Some(slot)) => {
                        *slot = Some(hybrid::cosine_normed(query, qn, v, n));
                    }
                    _ => pending += 1,
                }
            }
            sims[m.record] = Some(of);
        }
        Compared {
            passages: Passages { sims, floor },
            pending,
        }
    }
}
