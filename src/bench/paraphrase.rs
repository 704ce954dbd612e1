//! The paraphrase benchmark: questions that share no term with the memory that
//! answers them (spec/ranking.md#hybrid-recall). Keyword recall cannot find those
//! memories by construction; the benchmark measures how many hybrid recall finds.
//!
//! The set (`fixtures/paraphrase/set.json`, written for memdir) holds memories on
//! several topics and people, and questions each naming the key of its evidence
//! memory; the other memories include distractors that share a word with a question
//! and are about something else. [`run`] writes the memories into a temporary
//! directory through memdir's own write path, asks every question as `recall` with
//! keyword ranking, then, with an embeddings endpoint, configures the store, embeds
//! every memory ahead of time and asks again. Must not rank or embed by itself: the
//! engine does both, exactly as for `memdir recall`.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::BenchError;
use super::hybrid::{Embeddings, HybridRun};
use crate::clock::Clock;
use crate::engine::{Draft, Memory, RecallRequest};

/// The default number of hits a question's evidence must be among.
pub const DEFAULT_K: usize = 3;

/// One memory of the set.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Item {
    /// The memory's key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its body.
    pub body: String,
}

/// One question and the key of the memory that answers it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Probe {
    /// The question.
    pub question: String,
    /// The key of the memory that answers it.
    pub evidence: String,
}

/// The whole set.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Set {
    /// The memories.
    pub memories: Vec<Item>,
    /// The questions.
    pub questions: Vec<Probe>,
}

/// Reads the set at `path`.
pub fn load(path: &Path) -> Result<Set, BenchError> {
    let set: Set = super::read_json(path)?;
    let shape = |what: String| BenchError::Set {
        path: path.to_path_buf(),
        what,
    };
    for q in &set.questions {
        if !set.memories.iter().any(|m| m.key == q.evidence) {
            return Err(shape(format!(
                "question {:?} names no memory of the set ({:?})",
                q.question, q.evidence
            )));
        }
    }
    Ok(set)
}

/// Where one question's evidence ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The question.
    pub question: String,
    /// The key of the memory that answers it.
    pub evidence: String,
    /// Its 1-based rank among the keyword hits, if it was one of the first `k`.
    pub keyword_rank: Option<usize>,
    /// Keyword hits the question had (all distractors when the evidence is not one).
    pub keyword_hits: usize,
    /// Its rank among the hybrid hits, with an endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid_rank: Option<usize>,
}

/// The benchmark's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The benchmark's name.
    pub benchmark: String,
    /// Memories in the set.
    pub memories: usize,
    /// Questions asked.
    pub questions: usize,
    /// How many hits count (recall@k).
    pub k: usize,
    /// Share of questions whose evidence is among the first `k` keyword hits.
    pub keyword_recall: f64,
    /// The same with hybrid ranking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid_recall: Option<f64>,
    /// The hybrid column's embeddings and timings, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridRun>,
    /// Each question's outcome.
    pub outcomes: Vec<Outcome>,
}

/// The rank (from 1) of `key` among the first `k` hits of `query`, how many hits
/// there were, and whether the call ran hybrid with a vector for every memory.
fn ask(
    mem: &Memory,
    query: &str,
    key: &str,
    k: usize,
) -> Result<(Option<usize>, usize, bool), BenchError> {
    let r = mem.recall(&RecallRequest::new(query, k))?;
    let rank = r.hits.iter().position(|h| h.key == key).map(|i| i + 1);
    let hybrid = r
        .embeddings
        .is_some_and(|e| e.mode == "hybrid" && e.pending == 0);
    Ok((rank, r.hits.len(), hybrid))
}

/// Runs the set: keyword recall@`k`, and with `embeddings` hybrid recall@`k`.
pub fn run(set: &Set, k: usize, embeddings: Option<&Embeddings>) -> Result<Report, BenchError> {
    let tmp = tempfile::tempdir().map_err(|source| BenchError::TempDir { source })?;
    let at = "2026-01-15T09:00:00Z"
        .parse::<DateTime<Utc>>()
        .unwrap_or_default();
    let mem = Memory::open(tmp.path())?.with_clock(Clock::fixed(at));
    for m in &set.memories {
        mem.write(&Draft {
            key: m.key.clone(),
            name: m.name.clone(),
            description: m.description.clone(),
            kind: "user".into(),
            body: m.body.clone(),
            ..Draft::default()
        })?;
    }
    let mut outcomes = Vec::new();
    for q in &set.questions {
        let (keyword_rank, keyword_hits, _) = ask(&mem, &q.question, &q.evidence, k)?;
        outcomes.push(Outcome {
            question: q.question.clone(),
            evidence: q.evidence.clone(),
            keyword_rank,
            keyword_hits,
            hybrid_rank: None,
        });
    }
    let mut hybrid = None;
    if let Some(e) = embeddings {
        e.configure(tmp.path())?;
        let summary = mem
            .index_embeddings()?
            .map_err(|source| BenchError::Embed { source })?;
        let mut run = HybridRun {
            model: e.model.clone(),
            dimensions: e.dimensions,
            passages: summary.embedded,
            fallbacks: 0,
        };
        for o in &mut outcomes {
            let (rank, _, ok) = ask(&mem, &o.question, &o.evidence, k)?;
            o.hybrid_rank = rank;
            run.fallbacks += usize::from(!ok);
        }
        hybrid = Some(run);
    }
    let n = outcomes.len().max(1) as f64;
    let share = |f: &dyn Fn(&Outcome) -> bool| {
        let c = outcomes.iter().filter(|o| f(o)).count() as f64;
        (c / n * 10_000.0).round() / 10_000.0
    };
    Ok(Report {
        benchmark: "paraphrase".into(),
        memories: set.memories.len(),
        questions: set.questions.len(),
        k,
        keyword_recall: share(&|o| o.keyword_rank.is_some()),
        hybrid_recall: hybrid
            .is_some()
            .then(|| share(&|o| o.hybrid_rank.is_some())),
        hybrid,
        outcomes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::search::terms;
    use std::collections::HashSet;

    fn set() -> Set {
        serde_json::from_str(include_str!("../../fixtures/paraphrase/set.json")).unwrap()
    }

    fn terms_of(text: &str) -> HashSet<String> {
        terms(text).into_iter().collect()
    }

    // spec/ranking.md#hybrid-recall: the set is a test of meaning only if no question
    // shares a term with its evidence, as memdir's own tokenizer (stopwords, stemming)
    // sees them, over every field keyword relevance reads.
    #[test]
    fn no_question_shares_a_term_with_its_evidence() {
        let s = set();
        assert!(s.memories.len() >= 20 && s.questions.len() >= 20);
        let keys: HashSet<&str> = s.memories.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys.len(), s.memories.len(), "keys are unique");
        let mut evidence = HashSet::new();
        for q in &s.questions {
            let m = s.memories.iter().find(|m| m.key == q.evidence).unwrap();
            let mt = terms_of(&format!("{}\n{}\n{}", m.name, m.description, m.body));
            let qt = terms_of(&q.question);
            assert!(!qt.is_empty(), "{:?} has content words", q.question);
            let shared: Vec<&String> = qt.intersection(&mt).collect();
            assert!(
                shared.is_empty(),
                "{:?} shares {shared:?} with {}",
                q.question,
                m.key
            );
            evidence.insert(q.evidence.as_str());
        }
        assert_eq!(evidence.len(), s.questions.len(), "one question per memory");
        assert!(
            s.memories.len() > s.questions.len(),
            "memories that answer no question"
        );
    }

    // Keyword recall of the evidence is zero by construction, and the distractors
    // are real: most questions get keyword hits, all of them wrong.
    #[test]
    fn keyword_recall_is_zero_and_the_distractors_answer() {
        let s = set();
        let r = run(&s, DEFAULT_K, None).unwrap();
        assert_eq!(r.keyword_recall, 0.0, "{:#?}", r.outcomes);
        assert!(r.hybrid_recall.is_none() && r.hybrid.is_none());
        let with_hits = r.outcomes.iter().filter(|o| o.keyword_hits > 0).count();
        assert!(
            with_hits * 4 >= s.questions.len() * 3,
            "{with_hits} questions with distractor hits"
        );
        // Not a property of k: no keyword hit of any rank is the evidence.
        let all = run(&s, s.memories.len(), None).unwrap();
        assert_eq!(all.keyword_recall, 0.0);
    }

    #[test]
    fn a_question_naming_no_memory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("set.json");
        std::fs::write(
            &p,
            r#"{"memories": [{"key": "a", "name": "A", "description": "a", "body": "x"}],
                "questions": [{"question": "q?", "evidence": "b"}]}"#,
        )
        .unwrap();
        assert!(matches!(load(&p), Err(BenchError::Set { .. })));
    }
}
