//! `memdir bench`: benchmarks on public data sets (one subcommand each).

use std::path::PathBuf;
use std::time::Instant;

use super::Out;
use crate::bench::locomo::{self, DEFAULT_BUDGETS, Report};
use crate::error::Error;
use crate::report::Failure;

/// Measure memdir on a public benchmark.
#[derive(Debug, clap::Subcommand)]
pub enum Args {
    /// Evidence recall of query-aware context blocks on LoCoMo.
    Locomo(LocomoArgs),
    /// The same measure on generated user/assistant chats (no data needed).
    Chats(ChatsArgs),
}

/// Generate long user/assistant chats with facts said in passing, facts that change
/// later and facts spread over sessions, then measure them as `locomo` does.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Categories: 1 a fact said once in passing; 2 a fact that changed (the current
value, or the one before); 3 a preference asked in other words than it was said;
4 a fact spread over two or three sessions. The baseline is BM25 over single turn
lines packed to the same budget, run on the same conversations in the same run.
The data is drawn from --seed: the same seed gives the same chats everywhere.
Example:
  memdir bench chats --seed 1 --conversations 10 --budgets 512,1024,2048,4096"
)]
pub struct ChatsArgs {
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How many conversations to generate.
    #[arg(long, default_value_t = 10)]
    pub conversations: usize,
    /// Token budgets to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_BUDGETS)]
    pub budgets: Vec<usize>,
}

/// Turn each LoCoMo conversation into a memory directory (one memory per session,
/// one timeline event per turn), ask every question as `context --query`, and report
/// the share of its evidence turns the block contains.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The data set (locomo10.json, CC BY-NC 4.0) is read from --data and never
copied; the memory directories live in temporary directories that are removed
afterwards. Categories 1-4 are the headline; category 5 (adversarial) is reported
apart. Example:
  memdir bench locomo --data ../shared/bench-data/locomo10.json --budgets 1024,4096"
)]
pub struct LocomoArgs {
    /// The LoCoMo data file (locomo10.json).
    #[arg(long, value_name = "PATH")]
    pub data: PathBuf,
    /// Token budgets to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_BUDGETS)]
    pub budgets: Vec<usize>,
}

pub fn run(a: &Args, out: &mut Out) -> Result<i32, Failure> {
    match a {
        Args::Locomo(a) => run_locomo(a, out),
        Args::Chats(a) => run_chats(a, out),
    }
}

fn run_chats(a: &ChatsArgs, out: &mut Out) -> Result<i32, Failure> {
    check_budgets(&a.budgets)?;
    if a.conversations == 0 {
        return Err(Error::Usage("--conversations must be at least 1").into());
    }
    let start = Instant::now();
    let conversations = crate::bench::chats::generate(a.seed, a.conversations);
    let report = locomo::run_named("chats", &conversations, &a.budgets, &mut |id| {
        out.note(&format!("bench: {id} done"));
    })?;
    out.note(&format!(
        "bench: {} questions × {} budgets in {:.1} s (seed {})",
        report.questions,
        a.budgets.len(),
        start.elapsed().as_secs_f64(),
        a.seed
    ));
    if out.is_json() {
        out.json(&report);
    } else {
        out.text(&table(&report, "Generated chats"));
    }
    Ok(0)
}

fn check_budgets(budgets: &[usize]) -> Result<(), Failure> {
    if budgets.is_empty() || budgets.contains(&0) {
        return Err(Error::Usage("--budgets must be positive token counts, e.g. 512,1024").into());
    }
    Ok(())
}

fn run_locomo(a: &LocomoArgs, out: &mut Out) -> Result<i32, Failure> {
    check_budgets(&a.budgets)?;
    let start = Instant::now();
    let conversations = locomo::load(&a.data)?;
    let total = conversations.len();
    let mut done = 0;
    let report = locomo::run(&conversations, &a.budgets, &mut |id| {
        done += 1;
        out.note(&format!("bench: {id} done ({done}/{total})"));
    })?;
    out.note(&format!(
        "bench: {} questions × {} budgets in {:.1} s",
        report.questions,
        a.budgets.len(),
        start.elapsed().as_secs_f64()
    ));
    if out.is_json() {
        out.json(&report);
    } else {
        out.text(&table(&report, "LoCoMo"));
    }
    Ok(0)
}

/// The report as tables: one row per budget, memdir beside the baseline.
fn table(r: &Report, title: &str) -> String {
    let mut s = format!(
        "{title} evidence recall: {} conversations, {} sessions, {} turns, {} questions \
         ({} without evidence left out)\ncontext --query QUESTION --max-tokens BUDGET, MEMORY.md included;\n\
         baseline: BM25 over single turn lines, packed to the same budget\n\n",
        r.conversations, r.sessions, r.turns, r.questions, r.questions_without_evidence
    );
    let cats: Vec<u8> = r
        .budgets
        .first()
        .map(|b| {
            b.categories
                .keys()
                .copied()
                .filter(|c| *c != locomo::ADVERSARIAL)
                .collect()
        })
        .unwrap_or_default();
    let adversarial = r
        .budgets
        .first()
        .is_some_and(|b| b.categories.contains_key(&locomo::ADVERSARIAL));
    s.push_str("budget  recall 1-4  baseline 1-4  all-evidence  tokens  index");
    for c in &cats {
        s.push_str(&format!("  cat {c} (base)"));
    }
    if adversarial {
        s.push_str("  cat 5 (adversarial)");
    }
    s.push('\n');
    for b in &r.budgets {
        s.push_str(&format!(
            "{:>6}  {:>10.3}  {:>12.3}  {:>12.3}  {:>6.0}  {:>5.0}",
            b.max_tokens,
            b.answerable.evidence_recall,
            b.baseline.evidence_recall,
            b.answerable.all_evidence,
            b.answerable.mean_tokens,
            b.index_tokens
        ));
        for c in &cats {
            let v = b.categories.get(c).map_or(0.0, |x| x.evidence_recall);
            let w = b
                .baseline_categories
                .get(c)
                .map_or(0.0, |x| x.evidence_recall);
            s.push_str(&format!("  {v:>5.3} ({w:.3})"));
        }
        if adversarial {
            s.push_str(&format!("  {:>19.3}", b.adversarial.evidence_recall));
        }
        s.push('\n');
    }
    s.push_str(
        "\nrecall: mean share of a question's evidence turns in the block; all-evidence: share of\n\
         questions with every evidence turn in it; tokens: mean estimated tokens of the block;\n\
         index: of which MEMORY.md; (base): the baseline's recall in that category\n",
    );
    s
}
