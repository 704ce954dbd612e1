//! LongMemEval's runner: each question's store built in a temporary directory, asked
//! at every budget and as `recall`, beside the baseline (and, with embeddings, the
//! hybrid column); the sums and the report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use serde::Serialize;

use super::Instance;
use super::metrics::{Held, Ranked, block_recall, held, rank_metrics};
use crate::bench::baseline::LineIndex;
use crate::bench::hybrid::{Column, Embeddings, HybridRun, Timing, blocks};
use crate::bench::locomo;
use crate::bench::{BenchError, LostSteps, lost_steps};
use crate::clock::Clock;
use crate::engine::{Memory, RecallRequest};
use crate::retrieval::context::Prepared;
use crate::retrieval::hybrid::Fused;

/// Evidence recall of a group of questions at one budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BlockScore {
    /// Questions in the group.
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

/// memdir's block beside the baseline's (and, with embeddings, the hybrid block).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Pair {
    /// The scores of memdir's context block.
    pub memdir: BlockScore,
    /// The scores of the baseline's block.
    pub baseline: BlockScore,
    /// With embeddings: the same blocks with the hybrid memory relevance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<BlockScore>,
}

/// Results at one budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetReport {
    /// The context budget in tokens.
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
    /// Questions in the group.
    pub questions: usize,
    /// Share of questions with an answer session among the first 5.
    pub recall_any_at_5: f64,
    /// Share of questions with every answer session among the first 5.
    pub recall_all_at_5: f64,
    /// Share of questions with an answer session among the first 10.
    pub recall_any_at_10: f64,
    /// Mean NDCG@10.
    pub ndcg_at_10: f64,
    /// Mean reciprocal rank of the first answer session.
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
    /// The benchmark's name.
    pub benchmark: String,
    /// Answerable questions scored.
    pub questions: usize,
    /// Abstention questions (`_abs`), reported apart.
    pub abstention_questions: usize,
    /// Sessions and turns over all questions' histories.
    pub sessions: usize,
    /// Turns over all questions' histories.
    pub turns: usize,
    /// Answer session ids that name no session of their haystack.
    pub unknown_answer_sessions: usize,
    /// Answerable questions without a `has_answer` turn (left out of turn recall).
    pub questions_without_answer_turns: usize,
    /// Sessions memdir refused to store (they look like they hold a credential), left
    /// out of memdir's store and the baseline's lines alike; of which answer sessions
    /// (every copy refused), which stay counted as evidence neither can find.
    pub refused_sessions: usize,
    /// Of the refused sessions, the answer sessions (every copy refused).
    pub refused_answer_sessions: usize,
    /// The scores at each budget.
    pub budgets: Vec<BudgetReport>,
    /// `recall`'s ranking of the sessions, answerable questions.
    pub recall: RankScore,
    /// The same per question type.
    pub recall_types: BTreeMap<String, RankScore>,
    /// With embeddings: `recall`'s ranking on the store configured with them
    /// (hybrid), answerable questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid_recall: Option<RankScore>,
    /// With embeddings: the same per question type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid_recall_types: Option<BTreeMap<String, RankScore>>,
    /// Budget steps whose larger block lost an answer turn the smaller held,
    /// answerable questions.
    pub lost_steps: LostSteps,
    /// With embeddings: the model and how the hybrid column ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridRun>,
}

/// Per budget and group of questions: memdir, the baseline, hybrid.
type Accs = [BlockAcc; 3];

/// Per budget: the answer turns each block of one question held (memdir, baseline,
/// hybrid).
type Found = [Vec<HashSet<String>>; 3];

/// Accumulates the report one question at a time.
pub struct Runner<'a> {
    budgets: Vec<usize>,
    /// With embeddings, the hybrid column.
    hybrid: Option<Column<'a>>,
    /// Per budget: answerable per type, abstention.
    types: Vec<BTreeMap<String, Accs>>,
    abstention: Vec<Accs>,
    /// `recall`'s ranking per type: keyword, and hybrid with embeddings.
    recall: BTreeMap<String, RankAcc>,
    hybrid_recall: BTreeMap<String, RankAcc>,
    report: Report,
    checked: bool,
}

impl Runner<'static> {
    /// A runner measuring at `budgets`.
    pub fn new(budgets: &[usize]) -> Runner<'static> {
        Runner::with_embeddings(budgets, None)
    }
}

impl<'a> Runner<'a> {
    /// A runner measuring at `budgets`, and with `embeddings` the hybrid column too:
    /// each question's store is configured with them and embedded ahead of time.
    pub fn with_embeddings(budgets: &[usize], embeddings: Option<&'a Embeddings>) -> Runner<'a> {
        Runner {
            budgets: budgets.to_vec(),
            hybrid: embeddings.map(Column::new),
            types: vec![BTreeMap::new(); budgets.len()],
            abstention: vec![Default::default(); budgets.len()],
            recall: BTreeMap::new(),
            hybrid_recall: BTreeMap::new(),
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
                hybrid_recall: None,
                hybrid_recall_types: None,
                lost_steps: LostSteps {
                    hybrid: embeddings.map(|_| 0),
                    ..LostSteps::default()
                },
                hybrid: None,
            },
            checked: false,
        }
    }

    /// Builds the question's store in a temporary directory (with embeddings,
    /// configured with them and embedded ahead of time), asks it at every budget and
    /// as `recall`, and counts what it finds.
    pub fn add(&mut self, q: &Instance) -> Result<(), BenchError> {
        let h = &q.history;
        self.count_question(q);
        let tmp = tempfile::tempdir().map_err(|source| BenchError::TempDir { source })?;
        let (mem, refused) = locomo::build_store_skipping_secrets("LongMemEval", h, tmp.path())?;
        let mem = mem.with_clock(Clock::fixed(q.asked));
        let r = &mut self.report;
        r.refused_sessions += refused.len();
        r.refused_answer_sessions += q
            .answer_sessions
            .iter()
            .filter(|copies| copies.iter().all(|n| refused.contains(n)))
            .count();
        // `recall` before the store is configured with embeddings ranks by keywords:
        // the keyword column's ranking (reading a memory does not change ranking).
        let keyword_ranking = if q.abstention() {
            None
        } else {
            Some(ranking(&mem, q)?)
        };
        if let Some(c) = self.hybrid.as_mut() {
            c.embed_store(&mem, tmp.path())?;
        }
        let (prepared, _) = mem.prepare_context()?;
        // The baseline reads the same sessions as memdir: a refused one is in neither.
        let lines: Vec<String> = h
            .sessions
            .iter()
            .filter(|s| !refused.contains(&s.number))
            .flat_map(|s| s.turns.iter().map(locomo::turn_line))
            .collect();
        let baseline = LineIndex::new(&lines);
        // The hybrid relevance does not depend on the budget: one query embedding.
        let hybrid = self
            .hybrid
            .as_mut()
            .map(|c| c.relevance(&mem, &prepared, &q.question));
        let rel = hybrid.as_ref().map(|(rel, _)| rel);
        let found = self.ask(&mem, &prepared, &baseline, q, rel)?;
        let context_ok = hybrid.is_none_or(|(_, ok)| ok);
        let Some(keyword_ranking) = keyword_ranking else {
            // An abstention question: hybrid blocks, no recall; its fallback counts.
            if let Some(c) = self.hybrid.as_mut() {
                c.run.fallbacks += usize::from(!context_ok);
            }
            return Ok(());
        };
        if !q.answer_turns.is_empty() {
            self.count_lost_steps(&found);
        }
        self.recall
            .entry(q.kind.clone())
            .or_default()
            .add(&rank_metrics(&keyword_ranking, &q.answer_sessions));
        if let Some(c) = self.hybrid.as_mut() {
            // `recall` on the configured store: the hybrid ranking, as a user gets it.
            let start = Instant::now();
            let (ranked, recall_ok) = hybrid_ranking(&mem, q)?;
            c.timing.recall_time += start.elapsed();
            c.timing.recalls += 1;
            c.run.fallbacks += usize::from(!(context_ok && recall_ok));
            self.hybrid_recall
                .entry(q.kind.clone())
                .or_default()
                .add(&rank_metrics(&ranked, &q.answer_sessions));
        }
        Ok(())
    }

    /// Counts the question and its history in the report.
    fn count_question(&mut self, q: &Instance) {
        let r = &mut self.report;
        let h = &q.history;
        r.sessions += h.sessions.len();
        r.turns += h.sessions.iter().map(|s| s.turns.len()).sum::<usize>();
        r.unknown_answer_sessions += q.unknown_answer_sessions;
        if q.abstention() {
            r.abstention_questions += 1;
        } else {
            r.questions += 1;
            r.questions_without_answer_turns += usize::from(q.answer_turns.is_empty());
        }
    }

    /// Asks `q` at every budget (with `hybrid`, the question's hybrid relevance, the
    /// hybrid block too), counts what each block holds, and returns the answer turns
    /// each held. The first question checks each block is what `context` returns.
    fn ask(
        &mut self,
        mem: &Memory,
        prepared: &Prepared,
        baseline: &LineIndex,
        q: &Instance,
        hybrid: Option<&Option<Fused>>,
    ) -> Result<Found, BenchError> {
        let evidence: HashSet<&String> = q.answer_turns.iter().collect();
        let keep = |h: Held| -> HashSet<String> {
            h.turns
                .into_iter()
                .filter(|t| evidence.contains(t))
                .collect()
        };
        let mut found: Found = Default::default();
        for (bi, &b) in self.budgets.iter().enumerate() {
            let (block, hybrid_block) =
                blocks(mem, prepared, b, &q.question, hybrid, !self.checked)?;
            let base = baseline.block(&q.question, b);
            let accs = if q.abstention() {
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
            if let Some(hb) = hybrid_block {
                let hyb = held(&hb.text);
                accs[2].add(block_recall(&hyb, q), hb.tokens);
                found[2].push(keep(hyb));
            }
        }
        self.checked = true;
        Ok(found)
    }

    /// Counts the budget steps whose larger block lost an answer turn the smaller held.
    fn count_lost_steps(&mut self, found: &Found) {
        let steps = &mut self.report.lost_steps;
        let (lost, n) = lost_steps(&self.budgets, &found[0]);
        steps.steps += n;
        steps.memdir += lost;
        steps.baseline += lost_steps(&self.budgets, &found[1]).0;
        if let Some(h) = steps.hybrid.as_mut() {
            *h += lost_steps(&self.budgets, &found[2]).0;
        }
    }

    /// The report of everything added.
    pub fn finish(self) -> Report {
        self.finish_timed().0
    }

    /// The report of everything added, and where the hybrid column's time went.
    pub fn finish_timed(mut self) -> (Report, Timing) {
        let with_hybrid = self.hybrid.is_some();
        for (bi, &b) in self.budgets.iter().enumerate() {
            let mut all: Accs = Default::default();
            for accs in self.types[bi].values() {
                for (a, x) in all.iter_mut().zip(accs) {
                    a.merge(x);
                }
            }
            let pair = |a: &Accs| Pair {
                memdir: a[0].score(),
                baseline: a[1].score(),
                hybrid: with_hybrid.then(|| a[2].score()),
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
        let (all, types) = rank_scores(&self.recall);
        self.report.recall = all;
        self.report.recall_types = types;
        if with_hybrid {
            let (all, types) = rank_scores(&self.hybrid_recall);
            self.report.hybrid_recall = Some(all);
            self.report.hybrid_recall_types = Some(types);
        }
        let (run, timing) = self.hybrid.map(|h| (h.run, h.timing)).unzip();
        self.report.hybrid = run;
        (self.report, timing.unwrap_or_default())
    }
}

/// `recall`'s ranking of the sessions of `q`'s store (session numbers, best first).
fn ranking(mem: &Memory, q: &Instance) -> Result<Vec<u32>, BenchError> {
    Ok(ranked_sessions(mem, q)?.0)
}

/// `recall`'s ranking on the store configured with embeddings, and whether it ran
/// hybrid (with a vector for every memory).
fn hybrid_ranking(mem: &Memory, q: &Instance) -> Result<(Vec<u32>, bool), BenchError> {
    let (ranked, report) = ranked_sessions(mem, q)?;
    let ok = report.is_some_and(|r| r.mode == "hybrid" && r.pending == 0);
    Ok((ranked, ok))
}

/// `recall(question)` with room for every session, as session numbers best first,
/// and the ranking that ran.
fn ranked_sessions(
    mem: &Memory,
    q: &Instance,
) -> Result<(Vec<u32>, Option<crate::engine::hybrid::Report>), BenchError> {
    let h = &q.history;
    let number: HashMap<String, u32> = h
        .sessions
        .iter()
        .map(|s| (locomo::session_key(s), s.number))
        .collect();
    let recall = mem.recall(&RecallRequest::new(
        q.question.as_str(),
        h.sessions.len().max(1),
    ))?;
    let ranking = recall
        .hits
        .iter()
        .filter_map(|hit| number.get(&hit.key).copied())
        .collect();
    Ok((ranking, recall.embeddings))
}

/// The scores of all questions together and per type.
fn rank_scores(per_type: &BTreeMap<String, RankAcc>) -> (RankScore, BTreeMap<String, RankScore>) {
    let mut all = RankAcc::default();
    for a in per_type.values() {
        all.n += a.n;
        for (s, x) in all.sums.iter_mut().zip(a.sums) {
            *s += x;
        }
    }
    let types = per_type
        .iter()
        .map(|(k, a)| (k.clone(), a.score()))
        .collect();
    (all.score(), types)
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

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use crate::bench::longmemeval::data::tests::{raw_json, sample};
    use crate::bench::longmemeval::{Raw, convert, run};

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
}
