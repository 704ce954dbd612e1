//! The LongMemEval benchmark: real user/assistant chats, each question with its own
//! history of about fifty sessions (issue 29).
//!
//! LongMemEval (Wu et al., ICLR 2025; MIT, read from a path the caller gives and never
//! copied into the project) asks one question per instance, over a haystack of dated
//! chat sessions, and names the sessions (`answer_session_ids`) and turns
//! (`has_answer`) that hold the answer. Each instance is converted as `bench locomo`
//! converts a LoCoMo conversation, with its machinery ([`locomo::build_store_from`](super::locomo::build_store_from)):
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
//! With embeddings ([`Embeddings`]), as in `bench locomo`: each question's store is
//! configured with them and embedded ahead of time, and every block is scored a
//! second time with the hybrid memory relevance `context` uses then (the hybrid
//! column), and `recall` is asked a second time on the configured store (its hybrid
//! ranking); the keyword `recall` is asked before the store is configured.
//!
//! The data is read one question at a time (`.jsonl.gz`, `.jsonl`, or the upstream
//! JSON array); converting and scoring are pure, [`Runner::add`] is the edge that
//! writes a temporary directory per question.
//!
//! The module is in three rooms: `data` reads and converts the data set, `metrics`
//! scores one block or ranking, `runner` builds each question's store and sums the
//! report.

use chrono::{DateTime, Utc};

use super::BenchError;
use super::hybrid::{Embeddings, Timing};
use super::locomo::Conversation;

mod data;
mod metrics;
mod runner;

pub use data::{Raw, RawTurn, convert, for_each, parse_when};
pub use metrics::{Held, Ranked, block_recall, held, rank_metrics};
pub use runner::{BlockScore, BudgetReport, Pair, RankScore, Report, Runner};

/// The suffix of an abstention question's id.
pub const ABSTENTION_SUFFIX: &str = "_abs";

/// The letter of a converted turn id (`S7:3`).
const ID_LETTER: u8 = b'S';

/// One question, converted: its history as a LoCoMo-shaped conversation and its
/// evidence as converted ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// The question's id.
    pub id: String,
    /// The question's type.
    pub kind: String,
    /// The question.
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
    /// Answer session ids the haystack lacks.
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

/// Runs the benchmark over `instances` at each budget; `progress` is called after
/// each question with its id.
pub fn run(
    instances: &[Instance],
    budgets: &[usize],
    progress: &mut dyn FnMut(&str),
) -> Result<Report, BenchError> {
    run_with(instances, budgets, None, progress).map(|(r, _)| r)
}

/// [`run`], and with `embeddings` the hybrid column too; returns the report and
/// where the embedding time went.
pub fn run_with(
    instances: &[Instance],
    budgets: &[usize],
    embeddings: Option<&Embeddings>,
    progress: &mut dyn FnMut(&str),
) -> Result<(Report, Timing), BenchError> {
    let mut runner = Runner::with_embeddings(budgets, embeddings);
    for q in instances {
        runner.add(q)?;
        progress(&q.id);
    }
    Ok(runner.finish_timed())
}
