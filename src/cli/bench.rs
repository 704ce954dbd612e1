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
    }
}

fn run_locomo(a: &LocomoArgs, out: &mut Out) -> Result<i32, Failure> {
    if a.budgets.is_empty() || a.budgets.contains(&0) {
        return Err(Error::Usage("--budgets must be positive token counts, e.g. 512,1024").into());
    }
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
        out.text(&table(&report));
    }
    Ok(0)
}

/// The report as a table: one row per budget.
fn table(r: &Report) -> String {
    let mut s = format!(
        "LoCoMo evidence recall: {} conversations, {} sessions, {} turns, {} questions \
         ({} without evidence left out)\ncontext --query QUESTION --max-tokens BUDGET, MEMORY.md included\n\n",
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
    s.push_str("budget  recall 1-4  all-evidence  tokens  index");
    for c in &cats {
        s.push_str(&format!("  cat {c}"));
    }
    s.push_str("  cat 5 (adversarial)\n");
    for b in &r.budgets {
        s.push_str(&format!(
            "{:>6}  {:>10.3}  {:>12.3}  {:>6.0}  {:>5.0}",
            b.max_tokens,
            b.answerable.evidence_recall,
            b.answerable.all_evidence,
            b.answerable.mean_tokens,
            b.index_tokens
        ));
        for c in &cats {
            let v = b.categories.get(c).map_or(0.0, |x| x.evidence_recall);
            s.push_str(&format!("  {v:>5.3}"));
        }
        s.push_str(&format!("  {:>19.3}\n", b.adversarial.evidence_recall));
    }
    s.push_str(
        "\nrecall: mean share of a question's evidence turns in the block; all-evidence: share of\n\
         questions with every evidence turn in it; tokens: mean estimated tokens of the block;\n\
         index: of which MEMORY.md\n",
    );
    s
}
