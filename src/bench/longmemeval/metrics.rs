//! LongMemEval's scores of one question: which answer sessions and turns a block
//! holds, and the session-level metrics of a ranking (recall@k, NDCG@10, reciprocal
//! rank). Pure.

use std::collections::HashSet;

use super::{ID_LETTER, Instance};
use crate::bench::locomo;

/// Where a block's turn lines come from: the converted ids it holds, and the
/// sessions they belong to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    /// The turn ids.
    pub turns: HashSet<String>,
    /// The sessions they belong to.
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
    /// An answer session is among the first 5.
    pub any_at_5: bool,
    /// Every answer session is among the first 5.
    pub all_at_5: bool,
    /// An answer session is among the first 10.
    pub any_at_10: bool,
    /// NDCG@10 with the answer sessions as the relevant ones.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::longmemeval::data::{convert, tests::sample};

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
}
