//! Hybrid relevance on the query path and `memdir index --embeddings`
//! (spec/ranking.md#hybrid-recall): reads `[embeddings]`, embeds the query and, within
//! a budget, memories without a cached vector, and hands the fused relevance back.
//!
//! Never fails a call: no configuration is keyword ranking with no report; anything
//! else that goes wrong (bad section, unreachable or slow endpoint, wrong dimensions)
//! is keyword ranking with a `fallback` reason. Writes never come here, and the network
//! is reached with no lock held (see [`State`]). A warm store keeps the cache loaded
//! ([`Loaded`]): read once, merged again only when another process wrote the file.

mod passages;

use std::collections::HashSet;

use serde::Serialize;

use crate::embed::cache::{self, Vectors, text_hash};
use crate::embed::{Config, EmbedError, Embedder};
use crate::memory::Record;
use crate::memory::layout::{CONFIG_FILE, MAX_VECTOR_FILE};
use crate::retrieval::hybrid::{self, Passages};
use crate::store::config::ConfigError;
use crate::store::{Backend, Stat};
use passages::Compared;
pub(crate) use passages::{PassagePlan, live_hashes};

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
    /// With passages on: lines of the best memories without a vector yet (chosen by
    /// keywords only this time).
    #[serde(skip_serializing_if = "is_zero")]
    pub pending_lines: usize,
    /// Why embedding those lines failed this time, when it did (they are then
    /// pending past the budget too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_fallback: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Report {
    /// Adds `mode`, and `fallback` and `pending` when they say something, to a JSON
    /// result (`recall --json`, `context --json`, the MCP results).
    pub fn add_to(&self, doc: &mut serde_json::Value) {
        doc["mode"] = serde_json::json!(self.mode);
        if let Some(why) = &self.fallback {
            doc["fallback"] = serde_json::json!(why);
        }
        if self.pending > 0 {
            doc["pending"] = serde_json::json!(self.pending);
        }
        if self.pending_lines > 0 {
            doc["pending_lines"] = serde_json::json!(self.pending_lines);
        }
        if let Some(why) = &self.lines_fallback {
            doc["lines_fallback"] = serde_json::json!(why);
        }
    }

    /// The one warning a fallback gives, when it fell back (or, with passages, when
    /// the lines could not be embedded).
    pub fn warning(&self) -> Option<String> {
        match (&self.fallback, &self.lines_fallback) {
            (Some(why), _) => Some(format!(
                "embeddings unavailable, keyword ranking used: {why}"
            )),
            (None, Some(why)) => Some(format!(
                "{} lines could not be embedded, chosen by keywords this time: {why}",
                self.pending_lines
            )),
            (None, None) => None,
        }
    }
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
pub(crate) fn text_of(r: &Record) -> String {
    format!("{}\n{}\n{}", r.meta.name, r.meta.description, r.body)
}

/// The vector cache a warm process keeps loaded (`memdir mcp`): read once, re-read
/// and merged only when another process changed the file, written back whole
/// when it gained vectors.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The cache file, relative to the directory ([`cache::file`]).
    rel: String,
    pub vectors: Vectors,
    /// The file as last read or written here.
    seen: Option<FileId>,
    /// The rows of the store's text hashes, in the store's order, while
    /// [`Vectors::generation`] is the same.
    arranged: Option<Arranged>,
}

/// What [`Loaded::rows`] keeps between queries.
#[derive(Debug)]
struct Arranged {
    generation: u64,
    hashes: Vec<[u8; 32]>,
    rows: Vec<Option<usize>>,
}

/// What tells one version of the cache file from another: its stat (`None` in the
/// `none` mode, where no other process writes it).
pub(crate) type FileId = Stat;

/// `[embeddings]` of the directory's configuration, as its one reader
/// (`store::config`) hands it over: `Ok(None)` when there is none. A file that does
/// not parse is an error naming its line, never a silent "off".
pub(crate) fn config(backend: &Backend) -> Result<Option<Config>, EmbedError> {
    match crate::store::config::read(backend) {
        Ok(None) => Ok(None),
        Ok(Some(f)) => Config::from_section(f.embeddings(), &f.path),
        Err(ConfigError::Invalid {
            path,
            line,
            message,
        }) => Err(EmbedError::ConfigFile {
            path,
            line,
            message,
        }),
        Err(ConfigError::Read(e)) => Err(EmbedError::ConfigFile {
            path: backend.display_path(CONFIG_FILE),
            line: None,
            message: e.to_string(),
        }),
    }
}

/// The vector cache file `rel` of `dimensions`, read through the store; a missing
/// or unreadable file is an empty cache.
pub(crate) fn read_vectors(backend: &Backend, rel: &str, dimensions: usize) -> Vectors {
    let bytes = backend.read(rel, MAX_VECTOR_FILE).ok().flatten();
    Vectors::from_bytes(bytes.as_deref(), dimensions)
}

/// Writes the cache's bytes when it changed since its last encoding; a failure
/// leaves it marked changed (it is a cache: a later write tries again).
pub(crate) fn save_vectors(backend: &Backend, rel: &str, vectors: &mut Vectors) {
    if let Some(bytes) = vectors.encode_if_dirty()
        && backend.write_atomic(rel, &bytes).is_err()
    {
        vectors.touch();
    }
}

/// One write of the cache at a time in this process, so that an older encoding
/// never replaces a newer one.
static SAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Loaded {
    /// `slot` as the cache file `rel` of `dimensions`: loaded on first use (or when
    /// the configuration names another model), and merged with the file when another
    /// process wrote it since.
    pub(crate) fn sync<'a>(
        slot: &'a mut Option<Loaded>,
        backend: &Backend,
        rel: &str,
        dimensions: usize,
    ) -> &'a mut Loaded {
        let now = backend.stat(rel);
        let fits = slot
            .as_ref()
            .is_some_and(|l| l.rel == rel && l.vectors.dimensions() == dimensions);
        if !fits {
            *slot = Some(Loaded {
                rel: rel.to_string(),
                vectors: read_vectors(backend, rel, dimensions),
                seen: now,
                arranged: None,
            });
        }
        let l = slot.as_mut().expect("set above");
        if now.is_some() && now != l.seen {
            l.vectors.merge(read_vectors(backend, rel, dimensions));
            l.seen = now;
        }
        l
    }

    /// The row of each of `hashes` (a warm store's, one per record), kept until the
    /// store's hashes or the vectors change, so that a query looks nothing up; the
    /// rows are laid out in that order ([`Vectors::arrange`]) when they are found
    /// out of order, so that it compares with every vector in one pass through memory.
    fn rows(&mut self, hashes: &[[u8; 32]]) -> (&[Option<usize>], &Vectors) {
        let generation = self.vectors.generation();
        let current = self
            .arranged
            .as_ref()
            .is_some_and(|a| a.generation == generation && a.hashes == hashes);
        if !current {
            // Where the rows are now; laid out again only when too many are out of
            // order (a first load, a store reordered), not for each memory edited or
            // vector added, which would copy every vector again.
            let found: Vec<Option<usize>> = hashes.iter().map(|h| self.vectors.row_of(h)).collect();
            let rows = if scattered(&found) {
                self.vectors.arrange(hashes)
            } else {
                found
            };
            self.arranged = Some(Arranged {
                generation,
                hashes: hashes.to_vec(),
                rows,
            });
        }
        let rows = &self.arranged.as_ref().expect("set above").rows;
        (rows, &self.vectors)
    }

    /// The cosine similarity of `query` to the vector of each of `hashes` (`None`:
    /// none cached).
    fn similarities(&mut self, hashes: &[[u8; 32]], query: &[f32]) -> Vec<Option<f32>> {
        let (rows, vectors) = self.rows(hashes);
        hybrid::similarities(query, rows.iter().map(|r| r.map(|r| vectors.row_normed(r))))
    }

    /// The cache file, relative to the directory.
    pub(crate) fn rel(&self) -> &str {
        &self.rel
    }

    /// What to write when the vectors changed since they were last written.
    pub(crate) fn take_save(&mut self) -> Option<(String, Vec<u8>)> {
        Some((self.rel.clone(), self.vectors.encode_if_dirty()?))
    }

    /// Notes a write of [`Loaded::take_save`]'s bytes (or its failure).
    pub(crate) fn saved(&mut self, rel: &str, written: Option<Option<FileId>>) {
        if self.rel != rel {
            return;
        }
        match written {
            Some(id) => self.seen = id,
            None => self.vectors.touch(),
        }
    }
}

/// Whether more than one in sixteen of `rows` (those present) comes before the row
/// listed ahead of it: a pass over them would then jump about in memory.
fn scattered(rows: &[Option<usize>]) -> bool {
    let mut last = None;
    let mut breaks = 0usize;
    for &r in rows.iter().flatten() {
        if last.is_some_and(|l| r < l) {
            breaks += 1;
        }
        last = Some(r);
    }
    breaks * 16 > rows.len()
}

/// Held from encoding the cache to writing it (taken before the warm lock).
pub(crate) fn saving() -> std::sync::MutexGuard<'static, ()> {
    SAVING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes what [`Loaded::take_save`] gave, through the store; `Some(file id)` when
/// written.
pub(crate) fn write_save(backend: &Backend, rel: &str, bytes: &[u8]) -> Option<Option<FileId>> {
    backend
        .write_atomic(rel, bytes)
        .is_ok()
        .then(|| backend.stat(rel))
}

/// The text hash of every record, in order.
pub(crate) fn hashes_of(records: &[Record]) -> Vec<[u8; 32]> {
    records.iter().map(text_hash_of).collect()
}

/// The hash a record's vector is cached under.
pub(crate) fn text_hash_of(r: &Record) -> [u8; 32] {
    text_hash(&text_of(r))
}

/// Hybrid relevance for one query, in steps so that the network call runs outside
/// the warm store's lock: [`State::start`] (the configuration),
/// [`State::prepare`] (which memories lack a vector; needs the records, no network),
/// [`State::fetch`] (embeds the query and those memories; no records, no lock),
/// [`State::finish`] (fuses; needs the records again, no network). A warm store
/// uses [`State::prepare_warm`] and [`State::finish_warm`] with the vectors and
/// text hashes it keeps; a one-shot call reads the cache file and hashes here.
pub(crate) enum State<'a> {
    /// No `[embeddings]`: keyword ranking, nothing to report.
    Off,
    /// Keyword ranking, and why.
    Fallback(String),
    /// Configured; `missing` holds the texts to embed once prepared.
    Planned {
        config: Config,
        embedder: Box<dyn Embedder>,
        /// The store the cache file is read from and written to.
        backend: &'a Backend,
        /// The cache file ([`cache::file`]).
        rel: String,
        /// The cache read here (`None` on the warm path, which keeps its own).
        vectors: Option<Vectors>,
        missing: Option<Vec<([u8; 32], String)>>,
        /// The text hash of each record [`State::prepare`] was given (`None` on the
        /// warm path, which keeps its own).
        hashes: Option<Vec<[u8; 32]>>,
    },
    /// The query's vector is known.
    Fetched {
        config: Config,
        /// Kept for the passages of the best memories (spec/ranking.md#passages).
        embedder: Box<dyn Embedder>,
        backend: &'a Backend,
        rel: String,
        vectors: Option<Vectors>,
        /// As prepared: [`State::finish`] hashes no record again.
        hashes: Option<Vec<[u8; 32]>>,
        /// Vectors embedded by this call not yet in a warm store's cache.
        fresh: Vec<([u8; 32], Vec<f32>)>,
        query: Vec<f32>,
        /// Why the passages' embedding failed, when it did.
        lines_failed: Option<String>,
    },
}

impl<'a> State<'a> {
    /// Reads `[embeddings]` of `backend`'s configuration and makes the provider.
    pub(crate) fn start(backend: &'a Backend) -> State<'a> {
        let config = match config(backend) {
            Ok(None) => return State::Off,
            Ok(Some(c)) => c,
            Err(e) => return State::Fallback(e.to_string()),
        };
        let embedder = match config.embedder() {
            Ok(e) => e,
            Err(e) => return State::Fallback(e.to_string()),
        };
        let rel = cache::file(&config.model, config.dimensions);
        State::Planned {
            config,
            embedder,
            backend,
            rel,
            vectors: None,
            missing: None,
            hashes: None,
        }
    }

    /// Whether [`State::prepare`] and [`State::fetch`] have work to do.
    pub(crate) fn wants_records(&self) -> bool {
        matches!(self, State::Planned { .. })
    }

    /// Reads the cache and notes the memories without a vector, at most
    /// `query_budget` of them.
    pub(crate) fn prepare(&mut self, records: &[Record]) {
        if let State::Planned {
            config,
            backend,
            rel,
            vectors,
            missing,
            hashes,
            ..
        } = self
        {
            let v = vectors.get_or_insert_with(|| read_vectors(backend, rel, config.dimensions));
            let hashes = hashes.insert(hashes_of(records));
            *missing = Some(missing_of(
                records,
                hashes,
                |i| v.get(&hashes[i]).is_some(),
                config.query_budget,
            ));
        }
    }

    /// [`State::prepare`] with a warm store's text hashes and its loaded cache.
    pub(crate) fn prepare_warm(
        &mut self,
        records: &[Record],
        hashes: &[[u8; 32]],
        slot: &mut Option<Loaded>,
    ) {
        if let State::Planned {
            config,
            backend,
            rel,
            missing,
            ..
        } = self
        {
            let (rows, _) = Loaded::sync(slot, backend, rel, config.dimensions).rows(hashes);
            *missing = Some(missing_of(
                records,
                hashes,
                |i| rows.get(i).copied().flatten().is_some(),
                config.query_budget,
            ));
        }
    }

    /// Embeds the query and the prepared memories in one call and keeps their vectors
    /// (written to the cache file here when it was read here).
    pub(crate) fn fetch(&mut self, query: &str) {
        let State::Planned {
            config,
            embedder,
            backend,
            rel,
            vectors,
            missing,
            hashes,
        } = std::mem::replace(self, State::Off)
        else {
            return;
        };
        let missing = missing.unwrap_or_default();
        let mut texts = vec![query.to_string()];
        texts.extend(missing.iter().map(|(_, t)| t.clone()));
        let out = match embedder.embed_within(&texts, config.timeout) {
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
        let mut fresh: Vec<([u8; 32], Vec<f32>)> =
            missing.iter().map(|(h, _)| *h).zip(out).collect();
        let vectors = vectors.map(|mut v| {
            for (h, x) in fresh.drain(..) {
                v.insert(h, x);
            }
            save_vectors(backend, &rel, &mut v);
            v
        });
        *self = State::Fetched {
            config,
            embedder,
            backend,
            rel,
            vectors,
            hashes,
            fresh,
            query: q,
            lines_failed: None,
        };
    }

    /// The relevance to rank by: `keyword` unchanged (and no report) when off,
    /// fused with vector similarity when fetched, else `keyword` and the reason.
    /// With `plan` (a context with passages on, spec/ranking.md#passages), each
    /// planned memory's similarity is raised to its best line's before fusing, and the
    /// lines' similarities come back for the planner. `records` are those
    /// [`State::prepare`] was given, when it ran (their hashes are not found again).
    pub(crate) fn finish(
        &self,
        records: &[Record],
        keyword: Vec<f64>,
        plan: Option<&PassagePlan>,
    ) -> (Vec<f64>, Option<Report>, Option<Passages>) {
        match self {
            State::Fetched {
                vectors: Some(v),
                query,
                config,
                hashes,
                ..
            } => {
                // The hashes [`State::prepare`] found for these records, else found here.
                let found;
                let hashes = match hashes.as_deref().filter(|h| h.len() == records.len()) {
                    Some(h) => h,
                    None => {
                        found = hashes_of(records);
                        &found
                    }
                };
                let sims = hybrid::similarities(query, hashes.iter().map(|h| v.get_normed(h)));
                let passages = plan.map(|p| p.similarities(records, v, query, config.floor));
                self.fuse(sims, keyword, passages)
            }
            _ => self.finish_without(keyword),
        }
    }

    /// [`State::finish`] with a warm store's text hashes and loaded cache, which
    /// keeps the vectors this call embedded.
    pub(crate) fn finish_warm(
        &mut self,
        records: &[Record],
        hashes: &[[u8; 32]],
        slot: &mut Option<Loaded>,
        keyword: Vec<f64>,
        plan: Option<&PassagePlan>,
    ) -> (Vec<f64>, Option<Report>, Option<Passages>) {
        if let (
            State::Fetched {
                config,
                vectors: None,
                fresh,
                query,
                ..
            },
            Some(l),
        ) = (&mut *self, slot.as_mut())
            && l.vectors.dimensions() == config.dimensions
        {
            for (h, x) in fresh.drain(..) {
                l.vectors.insert(h, x);
            }
            let passages = plan.map(|p| p.similarities(records, &l.vectors, query, config.floor));
            let sims = l.similarities(hashes, query);
            return self.fuse(sims, keyword, passages);
        }
        self.finish(records, keyword, plan)
    }

    fn finish_without(&self, keyword: Vec<f64>) -> (Vec<f64>, Option<Report>, Option<Passages>) {
        let (rel, report) = match self {
            State::Off => (keyword, None),
            State::Fallback(why) => fallback(keyword, why.clone()),
            State::Planned { .. } => fallback(keyword, "the query was not embedded".into()),
            State::Fetched { .. } => fallback(keyword, "the vector cache was not loaded".into()),
        };
        (rel, report, None)
    }

    /// Fuses `keyword` with each memory's cosine similarity to the query (`None`:
    /// no vector yet), raised to its best line's where `passages` has its lines.
    fn fuse(
        &self,
        mut sims: Vec<Option<f32>>,
        keyword: Vec<f64>,
        passages: Option<Compared>,
    ) -> (Vec<f64>, Option<Report>, Option<Passages>) {
        let State::Fetched {
            config,
            lines_failed,
            ..
        } = self
        else {
            return self.finish_without(keyword);
        };
        let pending = sims.iter().filter(|s| s.is_none()).count();
        let mut pending_lines = 0;
        if let Some(p) = &passages {
            hybrid::with_passages(&mut sims, &p.passages);
            pending_lines = p.pending;
        }
        (
            hybrid::fuse(&keyword, &sims, config.floor),
            Some(Report {
                mode: "hybrid",
                fallback: None,
                pending,
                pending_lines,
                lines_fallback: lines_failed.clone().filter(|_| pending_lines > 0),
            }),
            passages.map(|p| p.passages),
        )
    }
}

/// The records (text hash and text) for which `has_vector(index)` is false, each text
/// once, at most `budget`.
pub(crate) fn missing_of(
    records: &[Record],
    hashes: &[[u8; 32]],
    has_vector: impl Fn(usize) -> bool,
    budget: usize,
) -> Vec<([u8; 32], String)> {
    let mut seen = HashSet::new();
    records
        .iter()
        .zip(hashes)
        .enumerate()
        .filter(|(i, (_, h))| !has_vector(*i) && seen.insert(**h))
        .map(|(_, (r, h))| (*h, text_of(r)))
        .take(budget)
        .collect()
}

fn fallback(keyword: Vec<f64>, why: String) -> (Vec<f64>, Option<Report>) {
    (
        keyword,
        Some(Report {
            mode: "keyword",
            fallback: Some(why),
            pending: 0,
            pending_lines: 0,
            lines_fallback: None,
        }),
    )
}

/// Embeds every memory without a cached vector and drops vectors no memory has,
/// calling `progress(done, total)` before the first batch and after each.
pub(crate) fn index(
    backend: &Backend,
    records: &[Record],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Summary, EmbedError> {
    let config = config(backend)?.ok_or_else(|| EmbedError::Config {
        path: backend.display_path(CONFIG_FILE),
        reason: "no [embeddings] section (url, model, dimensions)".into(),
    })?;
    let embedder = config.embedder()?;
    let rel = cache::file(&config.model, config.dimensions);
    let mut vectors = read_vectors(backend, &rel, config.dimensions);
    vectors.retain(live_hashes(records, &hashes_of(records), config.passages));
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
    progress(0, missing.len());
    for chunk in missing.chunks(config.batch_size) {
        let texts: Vec<String> = chunk.iter().map(|(t, _)| t.clone()).collect();
        match embedder.embed(&texts) {
            Ok(vs) => {
                for ((_, h), v) in chunk.iter().zip(vs) {
                    vectors.insert(*h, v);
                }
                embedded += chunk.len();
                progress(embedded, missing.len());
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // What was embedded before a failure is kept.
    save_vectors(backend, &rel, &mut vectors);
    result?;
    Ok(Summary {
        model: embedder.model_id().to_string(),
        dimensions: config.dimensions,
        memories: records.len(),
        embedded,
        cached: vectors.count(),
    })
}

#[cfg(test)]
mod tests;
