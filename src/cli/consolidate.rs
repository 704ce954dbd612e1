//! `memdir consolidate --plan`: groups of exact and near duplicates for the agent to
//! merge with `supersedes` (spec/cli.md#consolidate). memdir never merges by itself.

use super::Out;
use memdir::CONSOLIDATE_THRESHOLD as DEFAULT_THRESHOLD;
use memdir::Memory;
use memdir::report::Failure;

/// Group exact and near duplicates (changes nothing).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Groups: exact (the same body, case and punctuation aside), near (bodies
whose 3-word shingles overlap by at least --threshold, Jaccard), name (the same name).
Keys come newest first. To merge, write the kept memory with --supersedes for the others.

Examples:
  memdir consolidate --plan
  memdir consolidate --plan --threshold 0.8 --json"
)]
pub struct Args {
    /// List the groups (the only mode: memdir never merges by itself).
    #[arg(long, required = true)]
    pub plan: bool,
    /// The least Jaccard similarity of two bodies' word shingles for a near group.
    #[arg(long, value_name = "0..1", default_value_t = DEFAULT_THRESHOLD)]
    pub threshold: f64,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let memdir::Loaded {
        value: plan,
        problems,
    } = mem.consolidate_plan(a.threshold)?;
    out.problems(&mem.root(), &problems);
    if out.is_json() {
        out.json(&plan);
        return Ok(0);
    }
    let mut s = String::new();
    for g in &plan.groups {
        let why = match g.why {
            memdir::DuplicateWhy::Exact => "exact".to_string(),
            memdir::DuplicateWhy::Near => format!("near {:.3}", g.similarity),
            memdir::DuplicateWhy::Name => "name".to_string(),
        };
        s.push_str(&format!("{why}: {}\n", g.keys.join(", ")));
    }
    s.push_str(&format!(
        "{} groups in {} memories\n",
        plan.groups.len(),
        plan.memories
    ));
    out.text(&s);
    Ok(0)
}
