//! `memdir prune`: list memories that could go (`--plan`), or forget exactly that
//! plan (`--apply`); nothing is pruned automatically (spec/cli.md#prune).

use memdir::memory::printable::escape_line as esc;
use std::path::PathBuf;

use serde_json::json;

use super::Out;
use memdir::Error;
use memdir::Memory;
use memdir::memory::layout::MAX_PLAN_FILE;
use memdir::report::Failure;
use memdir::{DEFAULT_SUPERSEDED_DAYS, PruneCriteria, PrunePlan};

/// List prune candidates, or forget exactly the planned ones.
#[derive(Debug, clap::Args)]
#[command(
    group(clap::ArgGroup::new("mode").required(true).args(["plan", "apply"])),
    after_help = "A memory is a candidate when it is expired, superseded for more than
--superseded-days days, scores below --below, or ranks beyond --cap (important memories
are never below the threshold or beyond the cap). --apply recomputes the plan under the
lock and forgets exactly it, each with a `forgot` event whose reason is `prune`. With
--plan-file (the output of `prune --plan --json`) it uses that plan's criteria and
refuses, forgetting nothing, when the plan has changed since.

Examples:
  memdir prune --plan
  memdir prune --plan --below 0.1 --cap 500 --json > plan.json
  memdir prune --apply --plan-file plan.json"
)]
pub struct Args {
    /// List the candidates with their reasons; change nothing.
    #[arg(long)]
    pub plan: bool,
    /// Forget the candidates.
    #[arg(long)]
    pub apply: bool,
    /// Superseded memories become candidates after this many days (counted from the
    /// `updated` day of the memory that supersedes them).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SUPERSEDED_DAYS)]
    pub superseded_days: u32,
    /// Memories whose rank score is below this (0 to 1) are candidates.
    #[arg(long, value_name = "SCORE")]
    pub below: Option<f64>,
    /// Keep at most this many memories: the lowest ranked beyond it are candidates.
    #[arg(long, value_name = "N")]
    pub cap: Option<usize>,
    /// With --apply: the plan shown earlier (`prune --plan --json`); its criteria are
    /// used and the apply is refused if the plan changed.
    #[arg(long, value_name = "FILE", requires = "apply", conflicts_with_all = ["superseded_days", "below", "cap"])]
    pub plan_file: Option<PathBuf>,
    #[command(flatten)]
    pub push: super::Offline,
}

pub fn run(mem: &Memory, a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let criteria = PruneCriteria {
        superseded_days: a.superseded_days,
        below: a.below,
        cap: a.cap,
    };
    if a.plan {
        let memdir::Loaded {
            value: plan,
            problems,
        } = mem.prune_plan(&criteria)?;
        out.problems(&mem.root(), &problems);
        if out.is_json() {
            out.json(&plan);
        } else {
            let mut s = String::new();
            for c in &plan.candidates {
                let why: Vec<String> = c.reasons.iter().map(|r| r.to_string()).collect();
                s.push_str(&format!(
                    "{}  {}  ({})\n",
                    esc(&c.key),
                    esc(&c.name),
                    why.join("; ")
                ));
            }
            s.push_str(&format!(
                "{} of {} memories would be forgotten; `memdir prune --apply` with the same flags forgets them\n",
                plan.candidates.len(),
                plan.memories
            ));
            out.text(&s);
        }
        return Ok(0);
    }
    let (criteria, expect) = match &a.plan_file {
        None => (criteria, None),
        Some(path) => {
            let text = super::input::read_file_text(path, MAX_PLAN_FILE)?;
            let plan: PrunePlan = serde_json::from_str(&text).map_err(|e| Error::Argument {
                arg: "--plan-file".into(),
                message: format!(
                    "{} is not a plan from `memdir prune --plan --json`: {e}",
                    path.display()
                ),
            })?;
            let keys = plan.keys();
            (plan.criteria, Some(keys))
        }
    };
    let applied = mem.prune_apply(&criteria, expect.as_deref())?;
    if out.is_json() {
        out.json(&json!({"forgot": applied.forgot}));
    } else if applied.forgot.is_empty() {
        out.text("nothing to prune");
    } else {
        let s: String = applied
            .forgot
            .iter()
            .map(|k| format!("forgot {k}\n"))
            .collect();
        out.text(&s);
    }
    Ok(0)
}
