//! Hybrid relevance on the query path and `memdir index --embeddings`
//! (spec/ranking.md#hybrid-recall): reads `[embeddings]`, embeds the query and, within
//! a budget, memories without a cached vector, and hands the fused relevance back.
//!
//! Never fails a call: no configuration is keyword ranking with no report; anything
//! else that goes wrong (bad section, unreachable or slow endpoint, wrong dimensions)
//! is keyword ranking with a `fallback` reason. Writes never come here, and the network
//! is reached with no lock held (see [`State`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::embed::cache::{self, Vectors, text_hash};
use crate::embed::{Config, EmbedError, Embedder};
use crate::memory::Record;
use crate::retrieval::hybrid;

/// Which ranking a query used, when embeddings are configured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `keyword` or `hybrid`.
    pub mode: &'static str,
    /// Why it fell back to keyword ranking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Memories without a vector yet (ranked by keywords only this time).
    #[serde(skip_serializing_if = "is_zero")]
    pub pending: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What `index --embeddings` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub model: String,
    pub dimensions: usize,
    pub memories: usize,
    /// Texts embedded by this run.
    pub embedded: usize,
    /// Vectors in the cache after it.
    pub cached: usize,
}

/// The text of a memory that is embedded: name, description and body.
pub fn text_of(r: &Record) -> String {
    format!("{}\n{}\n{}", r.meta.name, r.meta.description, r.body)
}

/// Hybrid relevance for one query, in three steps so that the network call runs
/// outside the warm store's lock: [`State::start`] (the configuration),
/// [`State::prepare`] (which memories lack a vector; needs the records, no network),
/// [`State::fetch`] (embeds the query and those memories; no records, no lock),
/// [`State::finish`] (fuses; needs the records again, no network).
pub enum State {
    /// No `[embeddings]`: keyword ranking, nothing to report.
    Off,
    /// Keyword ranking, and why.
    Fallback(String),
    /// Configured; `missing` holds the texts to embed once prepared.
    Planned {
        config: Config,
        embedder: Box<dyn Embedder>,
        path: PathBuf,
        vectors: Vectors,
        missing: Option<Vec<([u8; 32], String)>>,
    },
    /// The query's vector is known.
    Fetched {
        config: Config,
        vectors: Vectors,
        query: Vec<f32>,
    },
}

impl State {
    /// Reads `[embeddings]` and makes the provider.
    pub fn start(root: &Path) -> State {
        let config = match Config::load(root) {
            Ok(None) => return State::Off,
            Ok(Some(c)) => c,
            Err(e) => return State::Fallback(e.to_string()),
        };
        let embedder = match config.embedder() {
            Ok(e) => e,
            Err(e) => return State::Fallback(e.to_string()),
        };
        let path = cache::path(root, &config.model, config.dimensions);
        let vectors = Vectors::read(&path, config.dimensions);
        State::Planned {
            config,
            embedder,
            path,
            vectors,
            missing: None,
        }
    }

    /// Whether [`State::prepare`] and [`State::fetch`] have work to do.
    pub fn wants_records(&self) -> bool {
        matches!(self, State::Planned { .. })
    }

    /// Notes the memories without a cached vector, at most `query_budget` of them.
    pub fn prepare(&mut self, records: &[Record]) {
        if let State::Planned {
            config,
            vectors,
            missing,
            ..
        } = self
        {
            let mut seen = HashSet::new();
            *missing = Some(
                records
                    .iter()
                    .map(text_of)
                    .filter_map(|t| {
                        let h = text_hash(&t);
                        (vectors.get(&h).is_none() && seen.insert(h)).then_some((h, t))
                    })
                    .take(config.query_budget)
                    .collect(),
            );
        }
    }

    /// Embeds the query and the prepared memories in one call and keeps their vectors.
    pub fn fetch(&mut self, query: &str) {
        let State::Planned {
            config,
            embedder,
            path,
            vectors,
            missing,
        } = std::mem::replace(self, State::Off)
        else {
            return;
        };
        let missing = missing.unwrap_or_default();
        let mut texts = vec![query.to_string()];
        texts.extend(missing.iter().map(|(_, t)| t.clone()));
        let out = match embedder.embed(&texts) {
            Ok(v) => v,
            Err(e) => {
                *self = State::Fallback(e.to_string());
                return;
            }
        };
        let mut out = out.into_iter();
        let Some(q) = out.next().filter(|q| q.len() == embedder.dimensions()) else {
            *self = State::Fallback("the endpoint returned no query vector".into());
            return;
        };
        let mut vectors = vectors;
        for ((h, _), v) in missing.iter().zip(out) {
            vectors.insert(*h, v);
        }
        vectors.save(&path);
        *self = State::Fetched {
            config,
            vectors,
            query: q,
        };
    }

    /// The relevance to rank by: `keyword` unchanged (and no report) when off,
    /// fused with vector similarity when fetched, else `keyword` and the reason.
    pub fn finish(&self, records: &[Record], keyword: Vec<f64>) -> (Vec<f64>, Option<Report>) {
        match self {
            State::Off => (keyword, None),
            State::Fallback(why) => fallback(keyword, why.clone()),
            State::Planned { .. } => fallback(keyword, "the query was not embedded".into()),
            State::Fetched {
                config,
                vectors,
                query,
            } => {
                let sims: Vec<Option<f32>> = records
                    .iter()
                    .map(|r| {
                        vectors
                            .get(&text_hash(&text_of(r)))
                            .map(|v| hybrid::cosine(query, v))
                    })
                    .collect();
                let pending = sims.iter().filter(|s| s.is_none()).count();
                (
                    hybrid::fuse(&keyword, &sims, config.floor),
                    Some(Report {
                        mode: "hybrid",
                        fallback: None,
                        pending,
                    }),
                )
            }
        }
    }
}

fn fallback(keyword: Vec<f64>, why: String) -> (Vec<f64>, Option<Report>) {
    (
        keyword,
        Some(Report {
            mode: "keyword",
            fallback: Some(why),
            pending: 0,
        }),
    )
}

/// Embeds every memory without a cached vector and drops vectors no memory has.
pub fn index(root: &Path, records: &[Record]) -> Result<Summary, EmbedError> {
    let config = Config::load(root)?.ok_or_else(|| EmbedError::Config {
        path: root.join(crate::memory::layout::CONFIG_FILE),
        reason: "no [embeddings] section (url, model, dimensions)".into(),
    })?;
    let embedder = config.embedder()?;
    let path = cache::path(root, &config.model, config.dimensions);
    let mut vectors = Vectors::read(&path, config.dimensions);
    let live: HashSet<[u8; 32]> = records.iter().map(|r| text_hash(&text_of(r))).collect();
    vectors.retain(&live);
    let mut seen = HashSet::new();
    let missing: Vec<(String, [u8; 32])> = records
        .iter()
        .map(text_of)
        .filter_map(|t| {
            let h = text_hash(&t);
            (vectors.get(&h).is_none() && seen.insert(h)).then_some((t, h))
        })
        .collect();
    let mut embedded = 0;
    let mut result = Ok(());
    for chunk in missing.chunks(crate::embed::BATCH) {
        let texts: Vec<String> = chunk.iter().map(|(t, _)| t.clone()).collect();
        match embedder.embed(&texts) {
            Ok(vs) => {
                for ((_, h), v) in chunk.iter().zip(vs) {
                    vectors.insert(*h, v);
                }
                embedded += chunk.len();
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // What was embedded before a failure is kept.
    vectors.save(&path);
    result?;
    Ok(Summary {
        model: embedder.model_id().to_string(),
        dimensions: config.dimensions,
        memories: records.len(),
        embedded,
        cached: vectors.count(),
    })
}
