//! The LoCoMo retrieval benchmark: does the context block an agent gets for a
//! question contain the conversation turns that answer it?
//!
//! LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, read from a path the caller
//! gives and never copied into the project) holds 10 long two-person conversations,
//! each a series of dated sessions of numbered turns (`D3:5` is turn 5 of session
//! 3), and questions whose evidence is a list of turn ids. Each conversation becomes
//! a memory directory through memdir's own write path, with the clock fixed at each
//! session's date: one memory per session (`session_03`), one line per turn carrying
//! its id (`[D3:5] Caroline: …`), and one timeline event per turn. Then, at a time
//! just after the last session, every question is asked as an agent asks it,
//! `context(max_tokens, Some(question))`, for each budget, and the benchmark counts
//! which evidence ids the block contains.
//!
//! With an embeddings endpoint ([`Embeddings`]), each store also gets it as its
//! `[embeddings]` section, every memory is embedded ahead of time (what
//! `memdir index --embeddings` does), and the same questions are scored a second time
//! with the hybrid memory relevance `context` uses then (spec/ranking.md#hybrid-recall):
//! the hybrid column, beside the keyword one and the baseline.
//!
//! The parsing and scoring are pure; [`run`] is the edge that writes the temporary
//! directories. Results are deterministic (fixed clocks, total orders; the hybrid
//! column as deterministic as the endpoint), timings are returned apart.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::{Duration as Elapsed, Instant};

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use super::baseline::LineIndex;
use super::{BenchError, LostSteps, lost_steps};
use crate::clock::Clock;
use crate::engine::{ContextRequest, Draft, Memory};
use crate::error::Error;
use crate::retrieval::context::Prepared;
use crate::retrieval::filter::Filter;

/// Budgets measured when none are given.
pub const DEFAULT_BUDGETS: [usize; 4] = [512, 1024, 2048, 4096];

/// The adversarial category: questions about things the conversation does not say.
pub const ADVERSARIAL: u8 = 5;

/// Seconds between two turns of a session on the timeline.
const TURN_SECONDS: i64 = 30;

/// One conversation of the data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub sample_id: String,
    pub speakers: [String; 2],
    /// In session order.
    pub sessions: Vec<Session>,
    pub questions: Vec<Question>,
}

/// One dated session of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub number: u32,
    /// When it started; the data gives local times without a zone, read as UTC.
    pub at: DateTime<Utc>,
    pub turns: Vec<Turn>,
}

/// One turn of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Normalized turn id, `D<session>:<turn>`.
    pub id: String,
    pub speaker: String,
    pub text: String,
    /// What an image shared with the turn shows (the data set's own caption).
    pub image: Option<String>,
}

/// One question with the turns that answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub text: String,
    pub category: u8,
    /// Normalized turn ids, deduplicated, each a turn of the conversation.
    pub evidence: Vec<String>,
    /// Evidence ids given by the data set that name no turn of the conversation.
    pub unknown_evidence: usize,
}

/// Parses the data set (the JSON array of `locomo10.json`).
pub fn parse(data: &Value) -> Result<Vec<Conversation>, String> {
    let items = data
        .as_array()
        .ok_or("the top level is not a JSON array of conversations")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_conversation(item).map_err(|e| format!("conversation {i}: {e}")))
        .collect()
}

fn parse_conversation(item: &Value) -> Result<Conversation, String> {
    let sample_id = item
        .get("sample_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let conv = item
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or("no `conversation` object")?;
    let speaker = |k: &str| {
        conv.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(format!("no `{k}`"))
    };
    let speakers = [speaker("speaker_a")?, speaker("speaker_b")?];
    let mut sessions = Vec::new();
    for (k, v) in conv {
        let Some(number) = k
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let turns = v
            .as_array()
            .ok_or(format!("`{k}` is not a list of turns"))?;
        if turns.is_empty() {
            continue;
        }
        let when = conv
            .get(&format!("{k}_date_time"))
            .and_then(Value::as_str)
            .ok_or(format!("no `{k}_date_time`"))?;
        let at = parse_when(when).ok_or(format!("`{k}_date_time` {when:?} is not a date"))?;
        let turns = turns
            .iter()
            .map(parse_turn)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{k}: {e}"))?;
        sessions.push(Session { number, at, turns });
    }
    sessions.sort_by_key(|s| s.number);
    let ids: HashSet<&str> = sessions
        .iter()
        .flat_map(|s| s.turns.iter().map(|t| t.id.as_str()))
        .collect();
    let questions = item
        .get("qa")
        .and_then(Value::as_array)
        .ok_or("no `qa` list")?
        .iter()
        .map(|q| parse_question(q, &ids))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Conversation {
        sample_id,
        speakers,
        sessions,
        questions,
    })
}

fn parse_turn(t: &Value) -> Result<Turn, String> {
    let field = |k: &str| t.get(k).and_then(Value::as_str);
    let raw_id = field("dia_id").ok_or("a turn has no `dia_id`")?;
    let id = turn_ids(raw_id)
        .into_iter()
        .next()
        .ok_or(format!("turn id {raw_id:?} is not D<session>:<turn>"))?;
    Ok(Turn {
        id,
        speaker: field("speaker")
            .ok_or("a turn has no `speaker`")?
            .to_string(),
        text: field("text").unwrap_or("").to_string(),
        image: field("blip_caption")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string),
    })
}

fn parse_question(q: &Value, ids: &HashSet<&str>) -> Result<Question, String> {
    let text = q
        .get("question")
        .and_then(Value::as_str)
        .ok_or("a question has no `question` text")?
        .to_string();
    let category = q
        .get("category")
        .and_then(Value::as_u64)
        .and_then(|c| u8::try_from(c).ok())
        .ok_or(format!("question {text:?} has no numeric `category`"))?;
    let mut evidence = Vec::new();
    let mut unknown_evidence = 0;
    for e in q
        .get("evidence")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for id in turn_ids(e.as_str().unwrap_or("")) {
            if !ids.contains(id.as_str()) {
                unknown_evidence += 1;
            } else if !evidence.contains(&id) {
                evidence.push(id);
            }
        }
    }
    Ok(Question {
        text,
        category,
        evidence,
        unknown_evidence,
    })
}

/// Parses a session time such as `1:56 pm on 8 May, 2023`.
pub fn parse_when(s: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s.trim(), "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|t| t.and_utc())
}

/// Every turn id in a text, normalized to `D<session>:<turn>` without leading zeros.
///
/// The data set writes a few ids irregularly (`D:11:26`, `D30:05`, several ids in one
/// string separated by `;` or spaces); this reads them all. The same scan finds the
/// ids in a context block, so `D3:5` is never mistaken for part of `D3:50`.
pub fn turn_ids(text: &str) -> Vec<String> {
    prefixed_turn_ids(text, b'D')
}

/// Every turn id `<prefix><session>:<turn>` in a text, read as [`turn_ids`] reads
/// LoCoMo's `D` ids (LongMemEval's converted turns carry `S` ids).
pub fn prefixed_turn_ids(text: &str, prefix: u8) -> Vec<String> {
    let b = text.as_bytes();
    let letter = char::from(prefix);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i] == prefix && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if b.get(j) == Some(&b':') {
            j += 1;
        }
        let (s, after_s) = digits(b, j);
        let parsed = s.and_then(|s| {
            (b.get(after_s) == Some(&b':')).then_some(())?;
            let (t, end) = digits(b, after_s + 1);
            let t = t?;
            (!b.get(end).is_some_and(u8::is_ascii_alphanumeric)).then_some((s, t, end))
        });
        match parsed {
            Some((s, t, end)) => {
                out.push(format!("{letter}{s}:{t}"));
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

/// The number written at `b[start..]` and where its digits end.
fn digits(b: &[u8], start: usize) -> (Option<u64>, usize) {
    let mut end = start;
    while end < b.len() && b[end].is_ascii_digit() && end - start < 9 {
        end += 1;
    }
    if end == start {
        return (None, end);
    }
    let n = std::str::from_utf8(&b[start..end])
        .ok()
        .and_then(|s| s.parse().ok());
    (n, end)
}

/// The key of a session's memory: `session_03`.
pub fn session_key(s: &Session) -> String {
    format!("session_{:02}", s.number)
}

/// One line of a session's body: `[D3:5] Caroline: text [image: caption]`.
pub fn turn_line(t: &Turn) -> String {
    let text = t.text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut line = format!("[{}] {}: {}", t.id, t.speaker, text);
    if let Some(c) = &t.image {
        line.push_str(&format!(" [image: {c}]"));
    }
    line
}

/// The memory a session becomes.
pub fn session_draft(c: &Conversation, s: &Session) -> Draft {
    session_draft_from("LoCoMo", c, s)
}

/// The memory a session of the data set named `data_set` becomes (its `source`
/// names the data set).
pub fn session_draft_from(data_set: &str, c: &Conversation, s: &Session) -> Draft {
    let date = s.at.format("%-d %B %Y").to_string();
    let body: Vec<String> = s.turns.iter().map(turn_line).collect();
    Draft {
        key: session_key(s),
        // The index lists every session and is in every block, so its lines stay
        // short: at 1,024 tokens the longer `Session 3 — 8 May 2023` / `Caroline and
        // Melanie talk, 1:56 pm` cost 0.04 of recall (spec/ranking.md).
        name: format!("Session {}", s.number),
        description: date,
        kind: "user".into(),
        body: body.join("\n"),
        source: Some(format!("{data_set} {} session {}", c.sample_id, s.number)),
        ..Draft::default()
    }
}

/// The timeline event of a turn.
pub fn turn_event(t: &Turn) -> Map<String, Value> {
    let mut f = Map::new();
    f.insert("id".into(), Value::String(t.id.clone()));
    f.insert("speaker".into(), Value::String(t.speaker.clone()));
    f.insert("text".into(), Value::String(t.text.clone()));
    if let Some(c) = &t.image {
        f.insert("image".into(), Value::String(c.clone()));
    }
    f
}

/// How many of `evidence` have their ids in `block`.
pub fn evidence_found(block: &str, evidence: &[String]) -> usize {
    evidence_held(block, evidence).len()
}

/// The ids of `evidence` that appear in `block`.
pub fn evidence_held(block: &str, evidence: &[String]) -> HashSet<String> {
    let present: HashSet<String> = turn_ids(block).into_iter().collect();
    evidence
        .iter()
        .filter(|e| present.contains(*e))
        .cloned()
        .collect()
}

/// Writes a conversation into the memory directory `dir` and returns the store with
/// its clock just after the last session.
pub fn build_store(c: &Conversation, dir: &Path) -> Result<Memory, Error> {
    build_store_from("LoCoMo", c, dir)
}

/// [`build_store`] for a conversation of the data set named `data_set`.
pub fn build_store_from(data_set: &str, c: &Conversation, dir: &Path) -> Result<Memory, Error> {
    build_store_with(data_set, c, dir, false).map(|(mem, _)| mem)
}

/// [`build_store_from`], leaving out each session memdir refuses to store because it
/// looks like it holds a credential (a real chat may paste a URL with a password):
/// returns the store and the numbers of the sessions left out.
pub fn build_store_skipping_secrets(
    data_set: &str,
    c: &Conversation,
    dir: &Path,
) -> Result<(Memory, Vec<u32>), Error> {
    build_store_with(data_set, c, dir, true)
}

fn build_store_with(
    data_set: &str,
    c: &Conversation,
    dir: &Path,
    skip_secrets: bool,
) -> Result<(Memory, Vec<u32>), Error> {
    let mut mem = Memory::open(dir)?;
    let mut last = DateTime::<Utc>::MIN_UTC;
    let mut refused = Vec::new();
    for s in &c.sessions {
        mem = mem.with_clock(Clock::fixed(s.at));
        match mem.write(&session_draft_from(data_set, c, s)) {
            Err(Error::Secret { .. }) if skip_secrets => {
                refused.push(s.number);
                continue;
            }
            r => r?,
        };
        for (i, t) in s.turns.iter().enumerate() {
            let ts = s.at + Duration::seconds(TURN_SECONDS * i as i64);
            mem = mem.with_clock(Clock::fixed(ts));
            mem.note("turn", turn_event(t))?;
            last = last.max(ts);
        }
    }
    Ok((
        mem.with_clock(Clock::fixed(last + Duration::minutes(1))),
        refused,
    ))
}

/// The embeddings of the hybrid column, an OpenAI-compatible endpoint or the builtin
/// model: each store the benchmark builds gets it as its `[embeddings]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// `provider = "builtin"` (the rest is then left out).
    pub builtin: bool,
    pub url: String,
    pub model: String,
    pub dimensions: usize,
    /// Per request: a batch of 64 long memories on a CPU takes tens of seconds, far
    /// over the default meant for a query.
    pub timeout_ms: u64,
}

/// The default request timeout of a benchmark's embeddings: five minutes.
pub const BENCH_EMBED_TIMEOUT_MS: u64 = 300_000;

impl Embeddings {
    /// The `[embeddings]` section, as TOML.
    pub fn section(&self) -> String {
        let mut t = toml::Table::new();
        if self.builtin {
            t.insert("provider".into(), toml::Value::String("builtin".into()));
        } else {
            t.insert("url".into(), toml::Value::String(self.url.clone()));
            t.insert("model".into(), toml::Value::String(self.model.clone()));
            t.insert(
                "dimensions".into(),
                toml::Value::Integer(i64::try_from(self.dimensions).unwrap_or(i64::MAX)),
            );
            t.insert(
                "timeout_ms".into(),
                toml::Value::Integer(i64::try_from(self.timeout_ms).unwrap_or(i64::MAX)),
            );
        }
        let mut doc = toml::Table::new();
        doc.insert("embeddings".into(), toml::Value::Table(t));
        toml::to_string(&doc).unwrap_or_default()
    }

    /// Adds the section to the store at `root` (after whatever its config holds).
    pub fn configure(&self, root: &Path) -> Result<(), BenchError> {
        let path = root.join(crate::memory::layout::CONFIG_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&self.section());
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&path, text.as_bytes())
        };
        write().map_err(|source| BenchError::Read { path, source })
    }
}

/// The hybrid relevance of every memory of `prepared` to `query`, computed as
/// `context` computes it with `[embeddings]` configured (`None` when it fell back:
/// the block is then the keyword block), and whether it ran hybrid with a vector for
/// every memory (`false`: it fell back, or some memory was ranked by keywords only).
fn hybrid_relevance(mem: &Memory, prepared: &Prepared, query: &str) -> (Option<Vec<f64>>, bool) {
    // The engine's one-shot path: a block that fell back is the keyword block.
    let (rel, report) = mem.context_relevance(prepared, query);
    let ok = report.is_some_and(|r| r.mode == "hybrid" && r.pending == 0);
    (rel, ok)
}

/// What the hybrid column ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HybridRun {
    pub model: String,
    pub dimensions: usize,
    /// Memories embedded ahead of time, over all stores.
    pub passages: usize,
    /// Questions whose hybrid relevance fell back to keywords (endpoint error,
    /// timeout, wrong dimensions) or left a memory without a vector: their hybrid
    /// blocks are keyword blocks. A sound run has none.
    pub fallbacks: usize,
}

/// Where the time of the hybrid column went (not part of the deterministic report).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timing {
    /// Memories embedded ahead of time, and how long that took.
    pub passages: usize,
    pub passage_time: Elapsed,
    /// Questions embedded (one request each, with nothing else), and how long.
    pub queries: usize,
    pub query_time: Elapsed,
}

/// Evidence recall of a group of questions at one budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Score {
    pub questions: usize,
    /// Mean over questions of the share of their evidence ids in the block.
    pub evidence_recall: f64,
    /// Share of questions whose evidence is all in the block.
    pub all_evidence: f64,
    /// Mean estimated tokens of the block.
    pub mean_tokens: f64,
}

#[derive(Debug, Clone, Default)]
struct Acc {
    n: usize,
    recall: f64,
    all: usize,
    tokens: usize,
}

impl Acc {
    fn add(&mut self, found: usize, of: usize, tokens: usize) {
        self.n += 1;
        self.recall += found as f64 / of as f64;
        self.all += usize::from(found == of);
        self.tokens += tokens;
    }

    fn merge(&mut self, o: &Acc) {
        self.n += o.n;
        self.recall += o.recall;
        self.all += o.all;
        self.tokens += o.tokens;
    }

    fn score(&self) -> Score {
        let d = self.n.max(1) as f64;
        Score {
            questions: self.n,
            evidence_recall: round4(self.recall / d),
            all_evidence: round4(self.all as f64 / d),
            mean_tokens: (self.tokens as f64 / d * 10.0).round() / 10.0,
        }
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The results at one budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetReport {
    pub max_tokens: usize,
    /// Categories 1–4 together: the headline.
    pub answerable: Score,
    /// Category 5 (adversarial).
    pub adversarial: Score,
    /// Each category on its own.
    pub categories: BTreeMap<u8, Score>,
    /// Mean estimated tokens of the index section of the block (MEMORY.md whole, or
    /// its most useful lines when it does not fit in its share).
    pub index_tokens: f64,
    /// The plain baseline on the same conversations and questions: BM25 over
    /// single turn lines packed to the same budget ([`super::baseline`]),
    /// categories 1–4 together.
    pub baseline: Score,
    /// The baseline per category.
    pub baseline_categories: BTreeMap<u8, Score>,
    /// With embeddings: the same blocks with the hybrid memory relevance,
    /// categories 1–4 together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<Score>,
    /// With embeddings: the hybrid blocks per category.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid_categories: Option<BTreeMap<u8, Score>>,
}

/// The whole benchmark's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub benchmark: String,
    pub conversations: usize,
    pub sessions: usize,
    pub turns: usize,
    /// Questions scored (those with at least one known evidence id).
    pub questions: usize,
    /// Questions left out because none of their evidence ids names a turn.
    pub questions_without_evidence: usize,
    /// Evidence ids left out because they name no turn of their conversation.
    pub unknown_evidence_ids: usize,
    pub budgets: Vec<BudgetReport>,
    /// Budget steps (question, B → next larger budget) whose larger block lost an
    /// evidence turn the smaller held, categories 1–4.
    pub lost_steps: LostSteps,
    /// With embeddings: the model and how the hybrid column ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridRun>,
}

/// Reads the data set at `path`.
pub fn load(path: &Path) -> Result<Vec<Conversation>, BenchError> {
    let v: Value = super::read_json(path)?;
    parse(&v).map_err(|what| BenchError::Shape {
        path: path.to_path_buf(),
        what,
    })
}

/// Runs the benchmark over `conversations` at each budget. `progress` is called
/// after each conversation with its sample id.
pub fn run(
    conversations: &[Conversation],
    budgets: &[usize],
    progress: &mut dyn FnMut(&str),
) -> Result<Report, BenchError> {
    run_named("locomo", conversations, budgets, progress)
}

/// [`run`] for any data set in LoCoMo's shape, reported under `benchmark`.
pub fn run_named(
    benchmark: &str,
    conversations: &[Conversation],
    budgets: &[usize],
    progress: &mut dyn FnMut(&str),
) -> Result<Report, BenchError> {
    run_with(benchmark, conversations, budgets, None, progress).map(|(r, _)| r)
}

/// [`run_named`], and with `embeddings` the hybrid column too; returns the report
/// and where the embedding time went.
pub fn run_with(
    benchmark: &str,
    conversations: &[Conversation],
    budgets: &[usize],
    embeddings: Option<&Embeddings>,
    progress: &mut dyn FnMut(&str),
) -> Result<(Report, Timing), BenchError> {
    // accs[budget][category], for memdir, the baseline and memdir hybrid.
    let mut accs: Vec<BTreeMap<u8, Acc>> = vec![BTreeMap::new(); budgets.len()];
    let mut base: Vec<BTreeMap<u8, Acc>> = vec![BTreeMap::new(); budgets.len()];
    let mut hyb: Vec<BTreeMap<u8, Acc>> = vec![BTreeMap::new(); budgets.len()];
    let mut timing = Timing::default();
    let mut hybrid_run = embeddings.map(|e| HybridRun {
        model: e.model.clone(),
        dimensions: e.dimensions,
        ..HybridRun::default()
    });
    let mut index_tokens = vec![0usize; budgets.len()];
    let mut report = Report {
        benchmark: benchmark.to_string(),
        conversations: conversations.len(),
        sessions: 0,
        turns: 0,
        questions: 0,
        questions_without_evidence: 0,
        unknown_evidence_ids: 0,
        budgets: Vec::new(),
        lost_steps: LostSteps {
            hybrid: embeddings.map(|_| 0),
            ..LostSteps::default()
        },
        hybrid: None,
    };
    for c in conversations {
        report.sessions += c.sessions.len();
        report.turns += c.sessions.iter().map(|s| s.turns.len()).sum::<usize>();
        let tmp = tempfile::tempdir().map_err(|source| BenchError::TempDir { source })?;
        let mem = build_store(c, tmp.path())?;
        if let Some(e) = embeddings {
            e.configure(tmp.path())?;
            let start = Instant::now();
            let summary = mem
                .index_embeddings()?
                .map_err(|source| BenchError::Embed { source })?;
            timing.passage_time += start.elapsed();
            timing.passages += summary.embedded;
            if let Some(h) = hybrid_run.as_mut() {
                h.passages += summary.embedded;
            }
        }
        // Everything that does not depend on the question is loaded once; the first
        // question of each conversation checks that this is what `context` returns.
        let (prepared, _) = mem.prepare_context()?;
        let lines: Vec<String> = c
            .sessions
            .iter()
            .flat_map(|s| s.turns.iter().map(turn_line))
            .collect();
        let baseline = LineIndex::new(&lines);
        for (qi, q) in c.questions.iter().enumerate() {
            report.unknown_evidence_ids += q.unknown_evidence;
            if q.evidence.is_empty() {
                report.questions_without_evidence += 1;
                continue;
            }
            report.questions += 1;
            // The hybrid relevance does not depend on the budget: one query embedding.
            let hybrid = match &mut hybrid_run {
                Some(h) => {
                    let start = Instant::now();
                    let (rel, ok) = hybrid_relevance(&mem, &prepared, &q.text);
                    timing.query_time += start.elapsed();
                    timing.queries += 1;
                    h.fallbacks += usize::from(!ok);
                    Some(rel)
                }
                None => None,
            };
            // The evidence each block held, per budget: memdir, baseline, hybrid.
            let mut held: [Vec<HashSet<String>>; 3] = Default::default();
            for (bi, &b) in budgets.iter().enumerate() {
                let (block, hybrid_block) = match &hybrid {
                    None => (prepared.block(b, Some(&q.text)), None),
                    Some(rel) => {
                        let filter = Filter::default();
                        let keyword = prepared.block_with(b, Some(&q.text), &filter, None);
                        let hybrid = prepared.block_with(b, Some(&q.text), &filter, rel.clone());
                        (keyword, Some(hybrid))
                    }
                };
                if qi == 0 {
                    // `context` on the store as configured: hybrid when it is.
                    let want = hybrid_block.as_ref().unwrap_or(&block);
                    assert_eq!(
                        want,
                        &mem.context(&ContextRequest::new(b).with_query(q.text.as_str()))?
                            .block
                    );
                }
                if let Some(h) = &hybrid_block {
                    let found = evidence_held(&h.text, &q.evidence);
                    hyb[bi].entry(q.category).or_default().add(
                        found.len(),
                        q.evidence.len(),
                        h.tokens,
                    );
                    held[2].push(found);
                }
                let found = evidence_held(&block.text, &q.evidence);
                accs[bi].entry(q.category).or_default().add(
                    found.len(),
                    q.evidence.len(),
                    block.tokens,
                );
                held[0].push(found);
                index_tokens[bi] += block.index_chars.div_ceil(4);
                let b_found = evidence_held(&baseline.block(&q.text, b), &q.evidence);
                base[bi]
                    .entry(q.category)
                    .or_default()
                    .add(b_found.len(), q.evidence.len(), 0);
                held[1].push(b_found);
            }
            if q.category != ADVERSARIAL {
                let steps = &mut report.lost_steps;
                let (lost, n) = lost_steps(budgets, &held[0]);
                steps.steps += n;
                steps.memdir += lost;
                steps.baseline += lost_steps(budgets, &held[1]).0;
                if let Some(h) = steps.hybrid.as_mut() {
                    *h += lost_steps(budgets, &held[2]).0;
                }
            }
        }
        progress(&c.sample_id);
    }
    for (bi, &b) in budgets.iter().enumerate() {
        let mut answerable = Acc::default();
        let mut adversarial = Acc::default();
        for (cat, a) in &accs[bi] {
            if *cat == ADVERSARIAL {
                adversarial.merge(a);
            } else {
                answerable.merge(a);
            }
        }
        let mut baseline = Acc::default();
        for (_, a) in base[bi].iter().filter(|(c, _)| **c != ADVERSARIAL) {
            baseline.merge(a);
        }
        let mut hybrid = Acc::default();
        for (_, a) in hyb[bi].iter().filter(|(c, _)| **c != ADVERSARIAL) {
            hybrid.merge(a);
        }
        let with_hybrid = embeddings.is_some();
        report.budgets.push(BudgetReport {
            max_tokens: b,
            answerable: answerable.score(),
            adversarial: adversarial.score(),
            categories: accs[bi].iter().map(|(c, a)| (*c, a.score())).collect(),
            index_tokens: (index_tokens[bi] as f64 / report.questions.max(1) as f64 * 10.0).round()
                / 10.0,
            baseline: baseline.score(),
            baseline_categories: base[bi].iter().map(|(c, a)| (*c, a.score())).collect(),
            hybrid: with_hybrid.then(|| hybrid.score()),
            hybrid_categories: with_hybrid
                .then(|| hyb[bi].iter().map(|(c, a)| (*c, a.score())).collect()),
        });
    }
    report.hybrid = hybrid_run;
    Ok((report, timing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_ids_are_found_and_normalized() {
        for (text, want) in [
            ("D3:5", vec!["D3:5"]),
            ("D:11:26", vec!["D11:26"]),
            ("D30:05", vec!["D30:5"]),
            ("D8:6; D9:17", vec!["D8:6", "D9:17"]),
            ("D9:1 D4:4 D4:6", vec!["D9:1", "D4:4", "D4:6"]),
            ("[D3:50] x", vec!["D3:50"]),
            ("{\"id\":\"D2:1\"}", vec!["D2:1"]),
            ("AD3:5 D3:5x D D3: D:3", vec![]),
        ] {
            assert_eq!(turn_ids(text), want, "{text}");
        }
    }

    #[test]
    fn evidence_is_matched_by_whole_id() {
        let ev = vec!["D3:5".to_string(), "D1:2".to_string()];
        assert_eq!(evidence_found("[D3:50] a\n[D1:2] b\n", &ev), 1);
        assert_eq!(evidence_found("[D3:5] a\n[D1:2] b\n", &ev), 2);
    }

    #[test]
    fn session_times_parse() {
        for (s, want) in [
            ("1:56 pm on 8 May, 2023", Some("2023-05-08T13:56:00Z")),
            (
                "12:09 am on 13 September, 2023",
                Some("2023-09-13T00:09:00Z"),
            ),
            ("10:37 am on 27 June, 2023", Some("2023-06-27T10:37:00Z")),
            ("yesterday", None),
        ] {
            let want: Option<DateTime<Utc>> = want.map(|w| w.parse().unwrap());
            assert_eq!(parse_when(s), want, "{s}");
        }
    }

    /// A made-up conversation in the data set's shape (not LoCoMo text).
    fn sample() -> Value {
        serde_json::json!([{
            "sample_id": "t-1",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "9:00 am on 3 March, 2024",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
                    {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started cello lessons.",
                     "blip_caption": "a photo of a cello"}
                ],
                "session_2_date_time": "6:30 pm on 10 March, 2024",
                "session_2": [
                    {"speaker": "Ben", "dia_id": "D2:1", "text": "My cello teacher moved to Oslo."},
                    {"speaker": "Ana", "dia_id": "D2:2", "text": "Pixel knocked over a plant."}
                ],
                "session_3_date_time": "1:00 pm on 1 April, 2024"
            },
            "qa": [
                {"question": "What is the name of Ana's cat?", "answer": "Pixel",
                 "evidence": ["D1:1"], "category": 4},
                {"question": "What has Ben said about the cello?", "evidence": ["D2:1; D1:2"],
                 "category": 1},
                {"question": "No evidence", "evidence": [], "category": 3},
                {"question": "Where did Ana's cat move?", "evidence": ["D2:2", "D9:9"],
                 "category": 5}
            ]
        }])
    }

    #[test]
    fn parses_the_data_set_shape() {
        let c = &parse(&sample()).unwrap()[0];
        assert_eq!(c.speakers, ["Ana".to_string(), "Ben".to_string()]);
        // A session with a date but no turns is left out.
        assert_eq!(
            c.sessions.iter().map(|s| s.number).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(
            c.sessions[0].turns[1].image.as_deref(),
            Some("a photo of a cello")
        );
        assert_eq!(c.questions[1].evidence, ["D2:1", "D1:2"]);
        assert!(c.questions[2].evidence.is_empty());
        assert_eq!(c.questions[3].evidence, ["D2:2"]);
        assert_eq!(c.questions[3].unknown_evidence, 1);
        assert!(parse(&serde_json::json!({"not": "a list"})).is_err());
        assert!(parse(&serde_json::json!([{"qa": []}])).is_err());
    }

    #[test]
    fn builds_a_store_through_the_write_path() {
        let convs = parse(&sample()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mem = build_store(&convs[0], tmp.path()).unwrap();
        let r = mem.read("session_01").unwrap();
        assert_eq!(r.meta.name, "Session 1");
        assert_eq!(r.meta.description, "3 March 2024");
        assert_eq!(r.meta.updated.text, "2024-03-03");
        assert_eq!(
            r.body,
            "[D1:1] Ana: I adopted a grey cat named Pixel.\n\
             [D1:2] Ben: Lovely! I started cello lessons. [image: a photo of a cello]"
        );
        let events = mem.events().unwrap().events;
        assert_eq!(events.len(), 4);
        assert_eq!(events[3].field_str("id"), Some("D2:2"));
        assert_eq!(
            mem.now(),
            "2024-03-10T18:31:30Z".parse::<DateTime<Utc>>().unwrap()
        );
        // The prepared snapshot gives exactly what `context` gives, for every question.
        let (prepared, _) = mem.prepare_context().unwrap();
        for q in &convs[0].questions {
            for b in [16, 64, 1024] {
                assert_eq!(
                    prepared.block(b, Some(&q.text)),
                    mem.context(&ContextRequest::new(b).with_query(q.text.as_str()))
                        .unwrap()
                        .block
                );
            }
        }
    }

    #[test]
    fn reports_recall_per_category() {
        let convs = parse(&sample()).unwrap();
        let r = run(&convs, &[1024], &mut |_| {}).unwrap();
        assert_eq!((r.conversations, r.sessions, r.turns), (1, 2, 4));
        assert_eq!(r.questions, 3);
        assert_eq!(r.questions_without_evidence, 1);
        assert_eq!(r.unknown_evidence_ids, 1);
        let b = &r.budgets[0];
        // The whole conversation fits in 1,024 tokens: every evidence turn is there.
        assert_eq!(b.answerable.questions, 2);
        assert_eq!(b.answerable.evidence_recall, 1.0);
        assert_eq!(b.answerable.all_evidence, 1.0);
        assert_eq!(b.adversarial.questions, 1);
        assert_eq!(b.categories.keys().copied().collect::<Vec<_>>(), [1, 4, 5]);
        // One step per answerable question from 16 to 1,024 tokens; the larger block
        // holds everything, so no step loses evidence.
        let r = run(&convs, &[1024, 16], &mut |_| {}).unwrap();
        assert_eq!(
            r.lost_steps,
            LostSteps {
                steps: 2,
                memdir: 0,
                baseline: 0,
                hybrid: None
            }
        );
    }
}
