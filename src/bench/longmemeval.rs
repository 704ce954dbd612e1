//! The LongMemEval benchmark: real user/assistant chats, each question with its own
//! history of about fifty sessions (issue 29).
//!
//! LongMemEval (Wu et al., ICLR 2025; MIT, read from a path the caller gives and never
//! copied into the project) asks one question per instance, over a haystack of dated
//! chat sessions, and names the sessions (`answer_session_ids`) and turns
//! (`has_answer`) that hold the answer. Each instance is converted as `bench locomo`
//! converts a LoCoMo conversation, with its machinery ([`locomo::build_store_from`]):
//! one memory per session (`session_07`, dated from `haystack_dates`), one line per
//! turn carrying its id (`[S7:3] user: …`, session index in the haystack and turn
//! index, both from 1), one timeline event per turn. The question is asked at
//! `question_date` (the clock fixed there) as an agent asks it,
//! `context(max_tokens, Some(question))`, at each budget, beside the plain baseline
//! ([`super::baseline`]) on the same turn lines; and as `recall(question)`, whose
//! ranking of the sessions gives the session-level metrics others publish.
//!
//! What is measured, per answerable question (`_abs` questions, which ask about what
//! the history does not say, are reported apart):
//! - answer sessions in the block: the share of its answer sessions with at least one
//!   turn line in the block (MEMORY.md's list of sessions does not count);
//! - answer turns in the block: the share of its `has_answer` turns whose line is in it;
//! - from `recall`'s ranking of the sessions: recall_any@k (some answer session in the
//!   first k), recall_all@k (every one), NDCG@10 (binary relevance) and the reciprocal
//!   rank of the first answer session;
//! - budget steps B → 2B whose larger block lost an answer turn the smaller one held.
//!
//! The data is read one question at a time (`.jsonl.gz`, `.jsonl`, or the upstream
//! JSON array); converting and scoring are pure, [`Runner::add`] is the edge that
//! writes a temporary directory per question.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};

use super::baseline::LineIndex;
use super::locomo::{self, Conversation, Session, Turn};
use super::{BenchError, LostSteps, lost_steps};
use crate::clock::Clock;
use crate::engine::{ContextRequest, RecallRequest};

/// The suffix of an abstention question's id.
pub const ABSTENTION_SUFFIX: &str = "_abs";

/// The letter of a converted turn id (`S7:3`).
const ID_LETTER: u8 = b'S';

/// One instance as the data set writes it (fields not read here are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct Raw {
    pub question_id: String,
    pub question_type: String,
    pub question: String,
    pub question_date: String,
    pub haystack_session_ids: Vec<String>,
    pub haystack_dates: Vec<String>,
    pub haystack_sessions: Vec<Vec<RawTurn>>,
    pub answer_session_ids: Vec<String>,
}

/// One turn as the data set writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct RawTurn {
    pub role: String,
    pub content: String,
    #[serde(default)]
    pub has_answer: Option<bool>,
}

/// One question, converted: its history as a LoCoMo-shaped conversation and its
/// evidence as converted ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub id: String,
    pub kind: String,
    pub question: String,
    /// When it is asked; the data gives local times without a zone, read as UTC.
    pub asked: DateTime<Utc>,
    /// The haystack: session `n` is the n-th of `haystack_sessions` (from 1); sessions
    /// without turns are left out (they have nothing to find).
    pub history: Conversation,
    /// Per answer session id, the numbers of the haystack sessions that carry it (a
    /// haystack may hold the same session twice); answer ids the haystack lacks are
    /// left out and counted in `unknown_answer_sessions`.
    pub answer_sessions: Vec<Vec<u32>>,
    pub unknown_answer_sessions: usize,
    /// The ids of the `has_answer` turns, `S<session>:<turn>`.
    pub answer_turns: Vec<String>,
}

impl Instance {
    /// An abstention question: the history does not hold its answer.
    pub fn abstention(&self) -> bool {
        self.id.ends_with(ABSTENTION_SUFFIX)
    }
}

/// Parses a LongMemEval time such as `2023/05/20 (Sat) 02:21` (the weekday is not
/// checked).
pub fn parse_when(s: &str) -> Option<DateTime<Utc>> {
    let kept: Vec<&str> = s
        .split_whitespace()
        .filter(|w| !(w.starts_with('(') && w.ends_with(')')))
        .collect();
    NaiveDateTime::parse_from_str(&kept.join(" "), "%Y/%m/%d %H:%M")
        .ok()
        .map(|t| t.and_utc())
}

/// Converts one instance.
pub fn convert(raw: &Raw) -> Result<Instance, String> {
    let n = raw.haystack_sessions.len();
    if raw.haystack_dates.len() != n || raw.haystack_session_ids.len() != n {
        return Err(format!(
            "{n} haystack sessions but {} dates and {} session ids",
            raw.haystack_dates.len(),
            raw.haystack_session_ids.len()
        ));
    }
    let asked = parse_when(&raw.question_date).ok_or(format!(
        "question_date {:?} is not a date",
        raw.question_date
    ))?;
    let mut sessions = Vec::new();
    let mut answer_turns = Vec::new();
    for (i, (turns, date)) in raw
        .haystack_sessions
        .iter()
        .zip(&raw.haystack_dates)
        .enumerate()
    {
        let number = u32::try_from(i + 1).map_err(|_| "too many sessions".to_string())?;
        let at = parse_when(date).ok_or(format!("haystack date {date:?} is not a date"))?;
        let turns: Vec<Turn> = turns
            .iter()
            .enumerate()
            .map(|(j, t)| {
                let id = format!("{}{number}:{}", char::from(ID_LETTER), j + 1);
                if t.has_answer == Some(true) {
                    answer_turns.push(id.clone());
                }
                Turn {
                    id,
                    speaker: t.role.clone(),
                    text: t.content.clone(),
                    image: None,
                }
            })
            .collect();
        if !turns.is_empty() {
            sessions.push(Session { number, at, turns });
        }
    }
    let mut answer_sessions = Vec::new();
    let mut unknown_answer_sessions = 0;
    let mut seen = HashSet::new();
    for a in &raw.answer_session_ids {
        if !seen.insert(a) {
            continue;
        }
        let copies: Vec<u32> = raw
            .haystack_session_ids
            .iter()
            .enumerate()
            .filter(|(_, h)| *h == a)
            .filter_map(|(i, _)| u32::try_from(i + 1).ok())
            .collect();
        if copies.is_empty() {
            unknown_answer_sessions += 1;
        } else {
            answer_sessions.push(copies);
        }
    }
    Ok(Instance {
        id: raw.question_id.clone(),
        kind: raw.question_type.clone(),
        question: raw.question.clone(),
        asked,
        history: Conversation {
            sample_id: raw.question_id.clone(),
            speakers: ["user".into(), "assistant".into()],
            sessions,
            questions: Vec::new(),
        },
        answer_sessions,
        unknown_answer_sessions,
        answer_turns,
    })
}

/// Reads the data set at `path` (gzip'd or not, JSON lines or one JSON array) and
/// hands each of its first `limit` instances, converted, to `each`, one at a time.
pub fn for_each(
    path: &Path,
    limit: Option<usize>,
    each: &mut dyn FnMut(Instance) -> Result<(), BenchError>,
) -> Result<(), BenchError> {
    let read_err = |source| BenchError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut raw = BufReader::new(file);
    let gzip = raw.fill_buf().map_err(read_err)?.starts_with(&[0x1f, 0x8b]);
    let inner: Box<dyn Read> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(raw))
    } else {
        Box::new(raw)
    };
    let mut reader = BufReader::new(inner);
    let limit = limit.unwrap_or(usize::MAX);
    let convert_one = |r: &Raw| {
        convert(r).map_err(|what| BenchError::Question {
            path: path.to_path_buf(),
            question: r.question_id.clone(),
            what,
        })
    };
    // The first byte that is not white space says which of the two shapes it is.
    let array = loop {
        let buf = reader.fill_buf().map_err(read_err)?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => {
                let first = buf[i];
                reader.consume(i);
                break first == b'[';
            }
            None if buf.is_empty() => return Ok(()),
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    };
    if array {
        let all: Vec<Raw> = serde_json::from_reader(reader).map_err(|source| BenchError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        for r in all.iter().take(limit) {
            each(convert_one(r)?)?;
        }
        return Ok(());
    }
    let mut done = 0;
    for (i, line) in reader.lines().enumerate() {
        if done >= limit {
            break;
        }
        let line = line.map_err(read_err)?;
        if line.trim().is_empty() {
            continue;
        }
        let r: Raw = serde_json::from_str(&line).map_err(|source| BenchError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?;
        each(convert_one(&r)?)?;
        done += 1;
    }
    Ok(())
}

/// Where a block's turn lines come from: the converted ids it holds, and the
/// sessions they belong to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    pub turns: HashSet<String>,
    pub sessions: HashSet<u32>,
}

/// The turn ids and sessions of the turn lines in `block`.
pub fn held(block: &str) -> Held {
    let mut h = Held::default();
    for id in locomo::prefixed_turn_ids(block, ID_LETTER) {
        if let Some(n) = id
            .strip_prefix(char::from(ID_LETTER))
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
        {
            h.sessions.insert(n);
        }
        h.turns.insert(id);
    }
    h
}

/// A block's evidence recall for one question: the share of answer sessions with a
/// turn line in it, and the share of answer turns in it (`None` without answer turns).
pub fn block_recall(h: &Held, q: &Instance) -> (f64, Option<f64>) {
    let sessions = q
        .answer_sessions
        .iter()
        .filter(|copies| copies.iter().any(|n| h.sessions.contains(n)))
        .count() as f64
        / q.answer_sessions.len().max(1) as f64;
    let turns = (!q.answer_turns.is_empty()).then(|| {
        q.answer_turns
            .iter()
            .filter(|t| h.turns.contains(*t))
            .count() as f64
            / q.answer_turns.len() as f64
    });
    (sessions, turns)
}

/// Session-level retrieval metrics of one ranking.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ranked {
    pub any_at_5: bool,
    pub all_at_5: bool,
    pub any_at_10: bool,
    pub ndcg_at_10: f64,
    /// 1 / rank of the first answer session; 0 when none is ranked.
    pub reciprocal_rank: f64,
}

/// Scores `ranking` (session numbers, best first) against `answers` (per answer
/// session, the numbers of its copies). An answer session's rank is the first rank
/// of any of its copies; a later copy counts as not relevant. NDCG@10 uses binary
/// relevance: DCG = Σ 1 / log2(rank + 1) over answer sessions ranked in the first 10,
/// over the same sum for the best ranking (min(answer sessions, 10) at ranks 1, 2, …).
pub fn rank_metrics(ranking: &[u32], answers: &[Vec<u32>]) -> Ranked {
    let ranks: Vec<Option<usize>> = answers
        .iter()
        .map(|copies| {
            ranking
                .iter()
                .position(|n| copies.contains(n))
                .map(|p| p + 1)
        })
        .collect();
    let within =
        |k: usize| -> Vec<bool> { ranks.iter().map(|r| r.is_some_and(|r| r <= k)).collect() };
    let gain = |rank: usize| 1.0 / ((rank + 1) as f64).log2();
    let dcg: f64 = ranks
        .iter()
        .flatten()
        .filter(|&&r| r <= 10)
        .map(|&r| gain(r))
        .sum();
    let ideal: f64 = (1..=answers.len().min(10)).map(gain).sum();
    Ranked {
        any_at_5: within(5).contains(&true),
        all_at_5: !answers.is_empty() && !within(5).contains(&false),
        any_at_10: within(10).contains(&true),
        ndcg_at_10: if ideal > 0.0 { dcg / ideal } else { 0.0 },
        reciprocal_rank: ranks
            .iter()
            .flatten()
            .min()
            .map_or(0.0, |&r| 1.0 / r as f64),
    }
}

/// Evidence recall of a group of questions at one budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BlockScore {
    pub questions: usize,
    /// Mean share of a question's answer sessions with a turn line in the block.
    pub answer_sessions: f64,
    /// Mean share of a question's answer turns in the block, over the questions that
    /// have answer turns.
    pub answer_turns: f64,
    /// Mean estimated tokens of the block.
    pub mean_tokens: f64,
}

#[derive(Debug, Clone, Default)]
struct BlockAcc {
    n: usize,
    sessions: f64,
    turns_n: usize,
    turns: f64,
    tokens: usize,
}

impl BlockAcc {
    fn add(&mut self, (sessions, turns): (f64, Option<f64>), tokens: usize) {
        self.n += 1;
        self.sessions += sessions;
        if let Some(t) = turns {
            self.turns_n += 1;
            self.turns += t;
        }
        self.tokens += tokens;
    }

    fn score(&self) -> BlockScore {
        BlockScore {
            questions: self.n,
            answer_sessions: round4(self.sessions / self.n.max(1) as f64),
            answer_turns: round4(self.turns / self.turns_n.max(1) as f64),
            mean_tokens: (self.tokens as f64 / self.n.max(1) as f64 * 10.0).round() / 10.0,
        }
    }
}

/// memdir's block beside the baseline's.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Pair {
    pub memdir: BlockScore,
    pub baseline: BlockScore,
}

/// Results at one budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetReport {
    pub max_tokens: usize,
    /// Every answerable question.
    pub answerable: Pair,
    /// Per question type, answerable questions.
    pub types: BTreeMap<String, Pair>,
    /// Abstention questions, on the sessions and turns the data set marks anyway.
    pub abstention: Pair,
}

/// Session-level metrics of `recall`'s ranking, means over a group of questions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RankScore {
    pub questions: usize,
    pub recall_any_at_5: f64,
    pub recall_all_at_5: f64,
    pub recall_any_at_10: f64,
    pub ndcg_at_10: f64,
    pub mrr: f64,
}

#[derive(Debug, Clone, Default)]
struct RankAcc {
    n: usize,
    sums: [f64; 5],
}

impl RankAcc {
    fn add(&mut self, r: &Ranked) {
        self.n += 1;
        let v = [
            f64::from(u8::from(r.any_at_5)),
            f64::from(u8::from(r.all_at_5)),
            f64::from(u8::from(r.any_at_10)),
            r.ndcg_at_10,
            r.reciprocal_rank,
        ];
        for (s, x) in self.sums.iter_mut().zip(v) {
            *s += x;
        }
    }

    fn score(&self) -> RankScore {
        let m = |i: usize| round4(self.sums[i] / self.n.max(1) as f64);
        RankScore {
            questions: self.n,
            recall_any_at_5: m(0),
            recall_all_at_5: m(1),
            recall_any_at_10: m(2),
            ndcg_at_10: m(3),
            mrr: m(4),
        }
    }
}

/// The whole benchmark's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub benchmark: String,
    /// Answerable questions scored.
    pub questions: usize,
    /// Abstention questions (`_abs`), reported apart.
    pub abstention_questions: usize,
    /// Sessions and turns over all questions' histories.
    pub sessions: usize,
    pub turns: usize,
    /// Answer session ids that name no session of their haystack.
    pub unknown_answer_sessions: usize,
    /// Answerable questions without a `has_answer` turn (left out of turn recall).
    pub questions_without_answer_turns: usize,
    /// Sessions memdir refused to store (they look like they hold a credential), left
    /// out of memdir's store and the baseline's lines alike; of which answer sessions
    /// (every copy refused), which stay counted as evidence neither can find.
    pub refused_sessions: usize,
    pub refused_answer_sessions: usize,
    pub budgets: Vec<BudgetReport>,
    /// `recall`'s ranking of the sessions, answerable questions.
    pub recall: RankScore,
    /// The same per question type.
    pub recall_types: BTreeMap<String, RankScore>,
    /// Budget steps whose larger block lost an answer turn the smaller held,
    /// answerable questions.
    pub lost_steps: LostSteps,
}

/// Accumulates the report one question at a time.
pub struct Runner {
    budgets: Vec<usize>,
    /// Per budget: answerable per type, abstention (memdir, baseline).
    types: Vec<BTreeMap<String, [BlockAcc; 2]>>,
    abstention: Vec<[BlockAcc; 2]>,
    recall: BTreeMap<String, RankAcc>,
    report: Report,
    checked: bool,
}

impl Runner {
    /// A runner measuring at `budgets`.
    pub fn new(budgets: &[usize]) -> Runner {
        Runner {
            budgets: budgets.to_vec(),
            types: vec![BTreeMap::new(); budgets.len()],
            abstention: vec![Default::default(); budgets.len()],
            recall: BTreeMap::new(),
            report: Report {
                benchmark: "longmemeval".into(),
                questions: 0,
                abstention_questions: 0,
                sessions: 0,
                turns: 0,
                unknown_answer_sessions: 0,
                questions_without_answer_turns: 0,
                refused_sessions: 0,
                refused_answer_sessions: 0,
                budgets: Vec::new(),
                recall: RankScore::default(),
                recall_types: BTreeMap::new(),
                lost_steps: LostSteps::default(),
            },
            checked: false,
        }
    }

    /// Builds the question's store in a temporary directory, asks it at every
    /// budget and as `recall`, and counts what it finds.
    pub fn add(&mut self, q: &Instance) -> Result<(), BenchError> {
        let r = &mut self.report;
        let h = &q.history;
        r.sessions += h.sessions.len();
        r.turns += h.sessions.iter().map(|s| s.turns.len()).sum::<usize>();
        r.unknown_answer_sessions += q.unknown_answer_sessions;
        let abstention = q.abstention();
        if abstention {
            r.abstention_questions += 1;
        } else {
            r.questions += 1;
            r.questions_without_answer_turns += usize::from(q.answer_turns.is_empty());
        }
        let tmp = tempfile::tempdir().map_err(|source| BenchError::TempDir { source })?;
        let (mem, refused) = locomo::build_store_skipping_secrets("LongMemEval", h, tmp.path())?;
        let mem = mem.with_clock(Clock::fixed(q.asked));
        r.refused_sessions += refused.len();
        r.refused_answer_sessions += q
            .answer_sessions
            .iter()
            .filter(|copies| copies.iter().all(|n| refused.contains(n)))
            .count();
        let (prepared, _) = mem.prepare_context()?;
        // The baseline reads the same sessions as memdir: a refused one is in neither.
        let lines: Vec<String> = h
            .sessions
            .iter()
            .filter(|s| !refused.contains(&s.number))
            .flat_map(|s| s.turns.iter().map(locomo::turn_line))
            .collect();
        let baseline = LineIndex::new(&lines);
        let evidence: HashSet<&String> = q.answer_turns.iter().collect();
        let keep = |h: Held| -> HashSet<String> {
            h.turns
                .into_iter()
                .filter(|t| evidence.contains(t))
                .collect()
        };
        let mut found: [Vec<HashSet<String>>; 2] = Default::default();
        for (bi, &b) in self.budgets.iter().enumerate() {
            let block = prepared.block(b, Some(&q.question));
            if !self.checked {
                // The prepared snapshot gives what `context` gives.
                let asked = ContextRequest::new(b).with_query(q.question.as_str());
                assert_eq!(block, mem.context(&asked)?.block);
            }
            let base = baseline.block(&q.question, b);
            let accs = if abstention {
                &mut self.abstention[bi]
            } else {
                self.types[bi].entry(q.kind.clone()).or_default()
            };
            let mine = held(&block.text);
            accs[0].add(block_recall(&mine, q), block.tokens);
            let theirs = held(&base);
            accs[1].add(block_recall(&theirs, q), base.chars().count().div_ceil(4));
            found[0].push(keep(mine));
            found[1].push(keep(theirs));
        }
        self.checked = true;
        if abstention {
            return Ok(());
        }
        if !q.answer_turns.is_empty() {
            let steps = &mut self.report.lost_steps;
            let (lost, n) = lost_steps(&self.budgets, &found[0]);
            steps.steps += n;
            steps.memdir += lost;
            steps.baseline += lost_steps(&self.budgets, &found[1]).0;
        }
        let number: HashMap<String, u32> = h
            .sessions
            .iter()
            .map(|s| (locomo::session_key(s), s.number))
            .collect();
        let hits = mem
            .recall(&RecallRequest::new(
                q.question.as_str(),
                h.sessions.len().max(1),
            ))?
            .hits;
        let ranking: Vec<u32> = hits
            .iter()
            .filter_map(|hit| number.get(&hit.key).copied())
            .collect();
        self.recall
            .entry(q.kind.clone())
            .or_default()
            .add(&rank_metrics(&ranking, &q.answer_sessions));
        Ok(())
    }

    /// The report of everything added.
    pub fn finish(mut self) -> Report {
        for (bi, &b) in self.budgets.iter().enumerate() {
            let mut all: [BlockAcc; 2] = Default::default();
            for accs in self.types[bi].values() {
                for (a, x) in all.iter_mut().zip(accs) {
                    a.merge(x);
                }
            }
            let pair = |a: &[BlockAcc; 2]| Pair {
                memdir: a[0].score(),
                baseline: a[1].score(),
            };
            self.report.budgets.push(BudgetReport {
                max_tokens: b,
                answerable: pair(&all),
                types: self.types[bi]
                    .iter()
                    .map(|(k, a)| (k.clone(), pair(a)))
                    .collect(),
                abstention: pair(&self.abstention[bi]),
            });
        }
        let mut all = RankAcc::default();
        for a in self.recall.values() {
            all.n += a.n;
            for (s, x) in all.sums.iter_mut().zip(a.sums) {
                *s += x;
            }
        }
        self.report.recall = all.score();
        self.report.recall_types = self
            .recall
            .iter()
            .map(|(k, a)| (k.clone(), a.score()))
            .collect();
        self.report
    }
}

impl BlockAcc {
    fn merge(&mut self, o: &BlockAcc) {
        self.n += o.n;
        self.sessions += o.sessions;
        self.turns_n += o.turns_n;
        self.turns += o.turns;
        self.tokens += o.tokens;
    }
}

/// Runs the benchmark over `instances` at each budget; `progress` is called after
/// each question with its id.
pub fn run(
    instances: &[Instance],
    budgets: &[usize],
    progress: &mut dyn FnMut(&str),
) -> Result<Report, BenchError> {
    let mut runner = Runner::new(budgets);
    for q in instances {
        runner.add(q)?;
        progress(&q.id);
    }
    Ok(runner.finish())
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A made-up instance in the data set's shape (not LongMemEval text): three
    /// sessions, the second held twice in the haystack, one answer id unknown.
    fn sample(id: &str) -> Raw {
        serde_json::from_value(json!({
            "question_id": id,
            "question_type": "single-session-user",
            "question": "What is the name of my grey cat?",
            "answer": "Pixel",
            "question_date": "2024/04/02 (Tue) 10:15",
            "haystack_session_ids": ["s_a", "answer_b", "s_c", "answer_b"],
            "haystack_dates": [
                "2024/03/01 (Fri) 09:00",
                "2024/03/03 (Sun) 18:30",
                "2024/03/05 (Tue) 07:45",
                "2024/03/06 (Wed) 08:00"
            ],
            "haystack_sessions": [
                [
                    {"role": "user", "content": "Can you suggest a bread recipe?"},
                    {"role": "assistant", "content": "Try a simple\n\nsourdough loaf."}
                ],
                [
                    {"role": "user", "content": "I adopted a grey cat named Pixel.", "has_answer": true},
                    {"role": "assistant", "content": "Congratulations on Pixel!", "has_answer": false}
                ],
                [],
                [
                    {"role": "user", "content": "I adopted a grey cat named Pixel.", "has_answer": true}
                ]
            ],
            "answer_session_ids": ["answer_b", "answer_gone", "answer_b"]
        }))
        .unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn times_parse_with_or_without_a_weekday() {
        for (s, want) in [
            ("2023/05/20 (Sat) 02:21", Some("2023-05-20T02:21:00Z")),
            ("2023/05/20 02:21", Some("2023-05-20T02:21:00Z")),
            // The weekday is not checked (20 May 2023 was a Saturday).
            ("2023/05/20 (Mon) 23:59", Some("2023-05-20T23:59:00Z")),
            ("2023/13/20 (Sat) 02:21", None),
            ("20 May 2023", None),
        ] {
            assert_eq!(parse_when(s), want.map(at), "{s}");
        }
    }

    #[test]
    fn converts_ids_dates_and_evidence() {
        let q = convert(&sample("q1")).unwrap();
        assert_eq!(q.asked, at("2024-04-02T10:15:00Z"));
        assert!(!q.abstention());
        let s = &q.history.sessions;
        // The empty third session is left out; numbers stay the haystack's.
        assert_eq!(s.iter().map(|s| s.number).collect::<Vec<_>>(), [1, 2, 4]);
        assert_eq!(s[1].at, at("2024-03-03T18:30:00Z"));
        assert_eq!(
            s[0].turns.iter().map(locomo::turn_line).collect::<Vec<_>>(),
            [
                "[S1:1] user: Can you suggest a bread recipe?",
                "[S1:2] assistant: Try a simple sourdough loaf."
            ]
        );
        // The answer session held twice is one answer session with two copies; the
        // id given twice counts once; the id the haystack lacks is counted apart.
        assert_eq!(q.answer_sessions, [vec![2, 4]]);
        assert_eq!(q.unknown_answer_sessions, 1);
        assert_eq!(q.answer_turns, ["S2:1", "S4:1"]);
        assert!(convert(&sample("q1_abs")).unwrap().abstention());

        let mut bad = sample("q2");
        bad.haystack_dates.pop();
        assert!(convert(&bad).is_err());
        let mut bad = sample("q3");
        bad.question_date = "soon".into();
        assert!(convert(&bad).is_err());
    }

    #[test]
    fn builds_each_session_as_a_dated_memory() {
        let q = convert(&sample("q1")).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mem = locomo::build_store_from("LongMemEval", &q.history, tmp.path()).unwrap();
        let r = mem.read("session_02").unwrap();
        assert_eq!(r.meta.name, "Session 2");
        assert_eq!(r.meta.updated.text, "2024-03-03");
        assert_eq!(
            r.body,
            "[S2:1] user: I adopted a grey cat named Pixel.\n\
             [S2:2] assistant: Congratulations on Pixel!"
        );
        assert_eq!(mem.events().unwrap().events.len(), 5);
    }

    #[test]
    fn a_block_holds_sessions_by_any_turn_line_and_turns_by_their_line() {
        let q = convert(&sample("q1")).unwrap();
        // (block, answer sessions inside, answer turns inside)
        for (block, sessions, turns) in [
            ("", 0.0, Some(0.0)),
            ("[S1:1] user: bread", 0.0, Some(0.0)),
            // A session is inside by any of its lines, even one that is not evidence.
            ("[S2:2] assistant: Congratulations", 1.0, Some(0.0)),
            // Either copy of the session counts.
            ("[S4:1] user: I adopted", 1.0, Some(0.5)),
            ("[S2:1] a\n[S4:1] b", 1.0, Some(1.0)),
            // MEMORY.md's `Session 2` entry is not a turn line; S24 is not S2.
            (
                "- [Session 2](session_02.md)\n[S24:1] y\n[S1:2] z",
                0.0,
                Some(0.0),
            ),
            // S2:10 is a line of session 2, but not the answer turn S2:1.
            ("[S2:10] x", 1.0, Some(0.0)),
        ] {
            assert_eq!(
                block_recall(&held(block), &q),
                (sessions, turns),
                "{block:?}"
            );
        }
        let mut none = q.clone();
        none.answer_turns.clear();
        assert_eq!(block_recall(&held(""), &none).1, None);
    }

    /// `rank_metrics(ranking, answers)` is `(any@5, all@5, any@10)`, NDCG@10 and the
    /// reciprocal rank.
    fn check(ranking: &[u32], answers: &[&[u32]], hits: (bool, bool, bool), ndcg: f64, rr: f64) {
        let answers: Vec<Vec<u32>> = answers.iter().map(|a| a.to_vec()).collect();
        let r = rank_metrics(ranking, &answers);
        let case = format!("{ranking:?} {answers:?}");
        assert_eq!((r.any_at_5, r.all_at_5, r.any_at_10), hits, "{case}");
        assert!(
            (r.ndcg_at_10 - ndcg).abs() < 1e-9,
            "{case}: NDCG {}",
            r.ndcg_at_10
        );
        assert!(
            (r.reciprocal_rank - rr).abs() < 1e-9,
            "{case}: RR {}",
            r.reciprocal_rank
        );
    }

    #[test]
    fn rank_metrics_on_hand_computed_cases() {
        let gain = |rank: f64| 1.0 / (rank + 1.0).log2();
        let all = (true, true, true);
        check(&[7, 1, 2], &[&[7]], all, 1.0, 1.0);
        // One answer at rank 3: DCG 1/log2 4 = 0.5 over an ideal 1.
        check(&[1, 2, 7], &[&[7]], all, 0.5, 1.0 / 3.0);
        // Two answers at ranks 2 and 6: some within 5, not all.
        check(
            &[1, 7, 2, 3, 4, 8],
            &[&[7], &[8]],
            (true, false, true),
            (gain(2.0) + gain(6.0)) / (gain(1.0) + gain(2.0)),
            0.5,
        );
        // The first answer at rank 11: nothing within 10; the reciprocal rank counts it.
        let eleven: Vec<u32> = (1..=10).chain([99]).collect();
        check(&eleven, &[&[99]], (false, false, false), 0.0, 1.0 / 11.0);
        // An answer session held twice counts once, at its best copy's rank (1); the
        // other answer is at rank 3.
        check(
            &[5, 9, 6, 4],
            &[&[4, 5], &[6]],
            all,
            (gain(1.0) + gain(3.0)) / (gain(1.0) + gain(2.0)),
            1.0,
        );
        // Not ranked at all, and nothing to find.
        check(&[1, 2], &[&[3]], (false, false, false), 0.0, 0.0);
        check(&[], &[], (false, false, false), 0.0, 0.0);
        // The ideal DCG stops at 10: twelve answers ranked first are a perfect 1.
        let twelve: Vec<u32> = (1..=12).collect();
        let answers: Vec<Vec<u32>> = twelve.iter().map(|&n| vec![n]).collect();
        let answers: Vec<&[u32]> = answers.iter().map(Vec::as_slice).collect();
        check(&twelve, &answers, (true, false, true), 1.0, 1.0);
    }

    #[test]
    fn reports_answerable_and_abstention_apart() {
        let qs = vec![
            convert(&sample("q1")).unwrap(),
            convert(&sample("q1_abs")).unwrap(),
        ];
        let r = run(&qs, &[16, 1024], &mut |_| {}).unwrap();
        assert_eq!((r.questions, r.abstention_questions), (1, 1));
        assert_eq!((r.sessions, r.turns), (6, 10));
        assert_eq!(r.unknown_answer_sessions, 2);
        let big = &r.budgets[1];
        // The whole history fits in 1,024 tokens: every answer session and turn is in.
        assert_eq!(big.answerable.memdir.questions, 1);
        assert_eq!(big.answerable.memdir.answer_sessions, 1.0);
        assert_eq!(big.answerable.memdir.answer_turns, 1.0);
        assert_eq!(big.answerable.baseline.answer_turns, 1.0);
        assert_eq!(big.abstention.memdir.questions, 1);
        assert_eq!(
            big.types.keys().collect::<Vec<_>>(),
            ["single-session-user"]
        );
        // 16 tokens hold no turn line at all.
        assert_eq!(r.budgets[0].answerable.memdir.answer_turns, 0.0);
        assert_eq!(r.recall.questions, 1);
        assert_eq!(r.recall.recall_any_at_5, 1.0);
        assert_eq!(r.recall.recall_all_at_5, 1.0);
        assert_eq!(r.lost_steps.steps, 1);
        assert_eq!((r.lost_steps.memdir, r.lost_steps.baseline), (0, 0));
    }

    // A real chat may paste a URL with a password: memdir refuses to store that
    // session, and the baseline must not read what memdir was never given.
    #[test]
    fn a_session_memdir_refuses_is_left_out_of_both_sides() {
        let mut raw: Raw = serde_json::from_value(raw_json("x")).unwrap();
        raw.question = "hi".into();
        raw.haystack_sessions[0][0].content = "hi postgres://admin:s3cret@db.example.com/x".into();
        let q = convert(&raw).unwrap();
        let r = run(&[q], &[1024], &mut |_| {}).unwrap();
        assert_eq!((r.refused_sessions, r.refused_answer_sessions), (1, 1));
        let b = &r.budgets[0].answerable;
        assert_eq!((b.memdir.answer_turns, b.baseline.answer_turns), (0.0, 0.0));
        raw.haystack_sessions[0][0].content = "hi there".into();
        let r = run(&[convert(&raw).unwrap()], &[1024], &mut |_| {}).unwrap();
        assert_eq!(r.refused_sessions, 0);
        assert_eq!(r.budgets[0].answerable.baseline.answer_turns, 1.0);
    }

    #[test]
    fn reads_gzip_json_lines_and_arrays() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let line = |id: &str| serde_json::to_string(&raw_json(id)).unwrap();
        let text = format!("{}\n\n{}\n{}\n", line("a"), line("b"), line("c_abs"));
        let plain = tmp.path().join("d.jsonl");
        std::fs::write(&plain, &text).unwrap();
        let gz = tmp.path().join("d.jsonl.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        let array = tmp.path().join("d.json");
        std::fs::write(
            &array,
            format!("  [{},{},{}]", line("a"), line("b"), line("c_abs")),
        )
        .unwrap();
        let ids = |path: &Path, limit| {
            let mut v = Vec::new();
            for_each(path, limit, &mut |q| {
                v.push(q.id);
                Ok(())
            })
            .map(|_| v)
        };
        for p in [&plain, &gz, &array] {
            assert_eq!(ids(p, None).unwrap(), ["a", "b", "c_abs"], "{p:?}");
            assert_eq!(ids(p, Some(2)).unwrap(), ["a", "b"], "{p:?}");
        }
        let broken = tmp.path().join("broken.jsonl");
        std::fs::write(&broken, format!("{}\n{{\"question_id\": 1}}\n", line("a"))).unwrap();
        let err = ids(&broken, None).unwrap_err();
        assert!(matches!(err, BenchError::Line { line: 2, .. }), "{err}");
        let empty = tmp.path().join("empty.jsonl");
        std::fs::write(&empty, "\n").unwrap();
        assert!(ids(&empty, None).unwrap().is_empty());
    }

    fn raw_json(id: &str) -> serde_json::Value {
        json!({
            "question_id": id,
            "question_type": "multi-session",
            "question": "q?",
            "answer": 2,
            "question_date": "2024/04/02 (Tue) 10:15",
            "haystack_session_ids": ["x"],
            "haystack_dates": ["2024/03/01 (Fri) 09:00"],
            "haystack_sessions": [[{"role": "user", "content": "hi", "has_answer": true}]],
            "answer_session_ids": ["x"]
        })
    }
}
