//! Benchmarks that measure memdir on public data sets.
//!
//! A benchmark reads its data from a path the caller gives (never from the project:
//! benchmark data keeps its own licence and stays outside the repository), builds
//! memory directories through memdir's own write path in temporary directories, and
//! returns a report; printing it is the CLI's job. Results are deterministic: clocks
//! are fixed and every order is total.

pub mod baseline;
pub mod chats;
pub mod hybrid;
pub mod locomo;
pub mod longmemeval;
pub mod paraphrase;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Building or reading a memory directory failed.
    #[error(transparent)]
    Memory(#[from] crate::error::Error),
    /// A data file could not be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A data file is not valid JSON.
    #[error("{}: not valid JSON: {source}", .path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A data file that is not of the shape the benchmark reads.
    #[error("{}: {what} (is this the LoCoMo `locomo10.json`?)", .path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The hybrid column's memories could not be embedded.
    #[error("embedding a benchmark store: {source}")]
    Embed {
        /// The embedding error.
        #[source]
        source: crate::embed::EmbedError,
    },
    /// A line of a JSON-lines file that is not the JSON it should be.
    #[error("{}:{line}: {source}", .path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A LongMemEval question that does not hold together.
    #[error("{}: question {question}: {what} (is this LongMemEval's S or M set?)", .path.display())]
    Question {
        /// The file.
        path: PathBuf,
        /// The question's id.
        question: String,
        /// What is wrong with it.
        what: String,
    },
    /// A paraphrase set that does not hold together.
    #[error("{}: {what}", .path.display())]
    Set {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// A temporary directory for a benchmark store could not be created.
    #[error("a temporary directory could not be created: {source}")]
    TempDir {
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Reads the JSON file at `path` into `T`: a read or parse failure names the file.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| BenchError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Budget steps that lost evidence (issue 29: more budget never costs evidence): per question
/// and each step from one measured budget to the next larger one (B → 2B with the
/// default budgets), whether the larger block lost an evidence turn the smaller one
/// held. More budget should never cost evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LostSteps {
    /// (question, step) pairs measured.
    pub steps: usize,
    /// Of which memdir's larger block lost an evidence turn.
    pub memdir: usize,
    /// Of which the baseline's larger block did.
    pub baseline: usize,
    /// Of which the hybrid column's did (with embeddings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<usize>,
}

/// How many steps from one budget to the next larger one lost evidence, and how many
/// steps there are: `held[i]` is the evidence found in the block at `budgets[i]`
/// (budgets in any order; a budget given twice is one budget).
pub fn lost_steps(budgets: &[usize], held: &[HashSet<String>]) -> (usize, usize) {
    let mut order: Vec<usize> = (0..budgets.len().min(held.len())).collect();
    order.sort_by_key(|&i| budgets[i]);
    order.dedup_by_key(|i| budgets[*i]);
    let steps = order.len().saturating_sub(1);
    let lost = order
        .windows(2)
        .filter(|w| !held[w[0]].is_subset(&held[w[1]]))
        .count();
    (lost, steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(v: &[&[&str]]) -> Vec<HashSet<String>> {
        v.iter()
            .map(|ids| ids.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    /// `lost_steps(budgets, held) == (lost, steps)`.
    fn check(budgets: &[usize], h: &[&[&str]], want: (usize, usize)) {
        assert_eq!(lost_steps(budgets, &held(h)), want, "{budgets:?} {h:?}");
    }

    // Issue 29 item 3: a step loses evidence when the larger block misses
    // an evidence turn the smaller one held; finding other turns does not make up.
    #[test]
    fn steps_that_lose_evidence_are_counted() {
        check(&[512, 1024, 2048], &[&[], &["a"], &["a", "b"]], (0, 2));
        check(&[512, 1024, 2048], &[&["a"], &["b"], &["a", "b"]], (1, 2));
        check(&[512, 1024, 2048], &[&["a"], &[], &["b"]], (1, 2));
        check(
            &[512, 1024, 2048, 4096],
            &[&["a"], &["b"], &["c"], &["d"]],
            (3, 3),
        );
        // Budgets in any order: the steps run from small to large.
        check(&[2048, 512, 1024], &[&["a", "b"], &["a"], &["b"]], (1, 2));
        check(&[2048, 512, 1024], &[&["a"], &["a", "b"], &["b"]], (2, 2));
        check(
            &[2048, 512, 1024],
            &[&["a", "b"], &["a"], &["a", "b"]],
            (0, 2),
        );
        // One budget: no step. A budget given twice is one budget.
        check(&[1024], &[&["a"]], (0, 0));
        check(&[1024, 1024, 2048], &[&["a"], &["a"], &[]], (1, 1));
        check(&[], &[], (0, 0));
    }
}
