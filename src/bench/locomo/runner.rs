//! The LoCoMo runner: each conversation's store built in a temporary directory,
//! every question asked at every budget (keyword, baseline and, with embeddings,
//! hybrid), and the sums turned into the report.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::{ADVERSARIAL, Conversation, Question, build_store, evidence_held, turn_line};
use crate::bench::baseline::LineIndex;
use crate::bench::hybrid::{Column, Embeddings, HybridRun, Timing, blocks};
use crate::bench::{BenchError, LostSteps, lost_steps};
use crate::engine::Memory;
use crate::retrieval::context::Prepared;
use crate::retrieval::hybrid::Fused;

/// Evidence recall of a group of questions at one budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Score {
    /// Questions in the group.
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
    /// The context budget in tokens.
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
    /// The plain baseline on the same conversations and questions: BM25 over single
    /// turn lines packed to the same budget ([`crate::bench::baseline`]), categories
    /// 1–4 together.
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
    /// The benchmark's name.
    pub benchmark: String,
    /// Conversations in the data set.
    pub conversations: usize,
    /// Sessions over all conversations.
    pub sessions: usize,
    /// Turns over all conversations.
    pub turns: usize,
    /// Questions scored (those with at least one known evidence id).
    pub questions: usize,
    /// Questions left out because none of their evidence ids names a turn.
    pub questions_without_evidence: usize,
    /// Evidence ids left out because they name no turn of their conversation.
    pub unknown_evidence_ids: usize,
    /// The scores at each budget.
    pub budgets: Vec<BudgetReport>,
    /// Budget steps (question, B → next larger budget) whose larger block lost an
    /// evidence turn the smaller held, categories 1–4.
    pub lost_steps: LostSteps,
    /// With embeddings: the model and how the hybrid column ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridRun>,
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
    let mut run = Run::new(benchmark, conversations.len(), budgets, embeddings);
    for c in conversations {
        run.conversation(c)?;
        progress(&c.sample_id);
    }
    Ok(run.finish())
}

/// A run in progress: what it measures at, and what it has counted so far.
struct Run<'a> {
    budgets: &'a [usize],
    /// With embeddings, the hybrid column.
    hybrid: Option<Column<'a>>,
    report: Report,
    // accs[budget][category], for memdir, the baseline and memdir hybrid.
    accs: Vec<BTreeMap<u8, Acc>>,
    base: Vec<BTreeMap<u8, Acc>>,
    hyb: Vec<BTreeMap<u8, Acc>>,
    index_tokens: Vec<usize>,
}

/// The evidence each block of one question held, per budget: memdir, baseline,
/// hybrid.
type Held = [Vec<HashSet<String>>; 3];

impl<'a> Run<'a> {
    fn new(
        benchmark: &str,
        conversations: usize,
        budgets: &'a [usize],
        embeddings: Option<&'a Embeddings>,
    ) -> Run<'a> {
        Run {
            budgets,
            hybrid: embeddings.map(Column::new),
            report: Report {
                benchmark: benchmark.to_string(),
                conversations,
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
            },
            accs: vec![BTreeMap::new(); budgets.len()],
            base: vec![BTreeMap::new(); budgets.len()],
            hyb: vec![BTreeMap::new(); budgets.len()],
            index_tokens: vec![0usize; budgets.len()],
        }
    }

    /// Builds the conversation's store in a temporary directory (embedded ahead of
    /// time with embeddings) and asks each of its questions.
    fn conversation(&mut self, c: &Conversation) -> Result<(), BenchError> {
        self.report.sessions += c.sessions.len();
        self.report.turns += c.sessions.iter().map(|s| s.turns.len()).sum::<usize>();
        let tmp = tempfile::tempdir().map_err(|source| BenchError::TempDir { source })?;
        let mem = build_store(c, tmp.path())?;
        if let Some(h) = self.hybrid.as_mut() {
            h.embed_store(&mem, tmp.path())?;
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
            self.report.unknown_evidence_ids += q.unknown_evidence;
            if q.evidence.is_empty() {
                self.report.questions_without_evidence += 1;
                continue;
            }
            self.report.questions += 1;
            // The hybrid relevance does not depend on the budget: one query embedding.
            let hybrid = self.hybrid.as_mut().map(|h| {
                let (rel, ok) = h.relevance(&mem, &prepared, &q.text);
                h.run.fallbacks += usize::from(!ok);
                rel
            });
            let held = self.ask(&mem, &prepared, &baseline, q, &hybrid, qi == 0)?;
            if q.category != ADVERSARIAL {
                self.count_lost_steps(&held);
            }
        }
        Ok(())
    }

    /// Asks `q` at every budget (with `hybrid`, the question's hybrid relevance, the
    /// hybrid block too), counts what each block holds, and returns the evidence each
    /// held; with `check`, first checks the block is what `context` returns.
    fn ask(
        &mut self,
        mem: &Memory,
        prepared: &Prepared,
        baseline: &LineIndex,
        q: &Question,
        hybrid: &Option<Option<Fused>>,
        check: bool,
    ) -> Result<Held, BenchError> {
        let mut held: Held = Default::default();
        for (bi, &b) in self.budgets.iter().enumerate() {
            let (block, hybrid_block) = blocks(mem, prepared, b, &q.text, hybrid.as_ref(), check)?;
            if let Some(h) = &hybrid_block {
                let found = evidence_held(&h.text, &q.evidence);
                self.hyb[bi].entry(q.category).or_default().add(
                    found.len(),
                    q.evidence.len(),
                    h.tokens,
                );
                held[2].push(found);
            }
            let found = evidence_held(&block.text, &q.evidence);
            self.accs[bi].entry(q.category).or_default().add(
                found.len(),
                q.evidence.len(),
                block.tokens,
            );
            held[0].push(found);
            self.index_tokens[bi] += block.index_chars.div_ceil(4);
            let b_found = evidence_held(&baseline.block(&q.text, b), &q.evidence);
            self.base[bi]
                .entry(q.category)
                .or_default()
                .add(b_found.len(), q.evidence.len(), 0);
            held[1].push(b_found);
        }
        Ok(held)
    }

    /// Counts the budget steps whose larger block lost evidence the smaller held.
    fn count_lost_steps(&mut self, held: &Held) {
        let budgets = self.budgets;
        let steps = &mut self.report.lost_steps;
        let (lost, n) = lost_steps(budgets, &held[0]);
        steps.steps += n;
        steps.memdir += lost;
        steps.baseline += lost_steps(budgets, &held[1]).0;
        if let Some(h) = steps.hybrid.as_mut() {
            *h += lost_steps(budgets, &held[2]).0;
        }
    }

    /// The sums at budget number `bi` (`b` tokens) as scores.
    fn budget_report(&self, bi: usize, b: usize) -> BudgetReport {
        let mut answerable = Acc::default();
        let mut adversarial = Acc::default();
        for (cat, a) in &self.accs[bi] {
            if *cat == ADVERSARIAL {
                adversarial.merge(a);
            } else {
                answerable.merge(a);
            }
        }
        let mut baseline = Acc::default();
        for (_, a) in self.base[bi].iter().filter(|(c, _)| **c != ADVERSARIAL) {
            baseline.merge(a);
        }
        let mut hybrid = Acc::default();
        for (_, a) in self.hyb[bi].iter().filter(|(c, _)| **c != ADVERSARIAL) {
            hybrid.merge(a);
        }
        let with_hybrid = self.hybrid.is_some();
        BudgetReport {
            max_tokens: b,
            answerable: answerable.score(),
            adversarial: adversarial.score(),
            categories: self.accs[bi].iter().map(|(c, a)| (*c, a.score())).collect(),
            index_tokens: (self.index_tokens[bi] as f64 / self.report.questions.max(1) as f64
                * 10.0)
                .round()
                / 10.0,
            baseline: baseline.score(),
            baseline_categories: self.base[bi].iter().map(|(c, a)| (*c, a.score())).collect(),
            hybrid: with_hybrid.then(|| hybrid.score()),
            hybrid_categories: with_hybrid
                .then(|| self.hyb[bi].iter().map(|(c, a)| (*c, a.score())).collect()),
        }
    }

    /// The report of everything asked, and where the embedding time went.
    fn finish(mut self) -> (Report, Timing) {
        for (bi, &b) in self.budgets.iter().enumerate() {
            let r = self.budget_report(bi, b);
            self.report.budgets.push(r);
        }
        let (run, timing) = self.hybrid.map(|h| (h.run, h.timing)).unzip();
        self.report.hybrid = run;
        (self.report, timing.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::locomo::{parse, tests::sample};

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
