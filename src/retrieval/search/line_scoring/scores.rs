//! [`LineScores`]: a score for every line of every memory, held in an array of
//! their own (a scan's) or in the arrays a corpus keeps ([`Buffers`], through the
//! postings), given back when they are dropped.
//!
//! Pure code: no IO, no clock.

use std::sync::Arc;

use crate::retrieval::search::line_scoring::Carry;
use crate::retrieval::search::line_scoring::buffers::{Buffers, Pool};
use crate::retrieval::search::vocab::DocData;

/// A score for every line of every memory, one memory after the other.
#[derive(Debug, Default)]
pub struct LineScores(pub(super) Held);

/// Where a [`LineScores`]'s scores are.
#[derive(Debug)]
pub(super) enum Held {
    /// A scan's: every line's, in an array of its own.
    Dense {
        scores: Vec<f64>,
        start: Arc<[usize]>,
    },
    /// Through the postings: in a corpus's [`Buffers`], whose `met` lists the lines
    /// with a score, given back to the pool when the scores are dropped.
    Met(Box<Buffers>, Pool),
}

impl Default for Held {
    fn default() -> Held {
        Held::Dense {
            scores: Vec::new(),
            start: Arc::from([0usize]),
        }
    }
}

impl Drop for LineScores {
    fn drop(&mut self) {
        if let Held::Met(b, pool) = std::mem::take(&mut self.0) {
            pool.give(b);
        }
    }
}

/// A copy holds its scores in an array of its own.
impl Clone for LineScores {
    fn clone(&self) -> LineScores {
        LineScores(Held::Dense {
            scores: self.all().to_vec(),
            start: Arc::clone(self.start()),
        })
    }
}

/// Equal when every line scores the same (wherever the scores are held).
impl PartialEq for LineScores {
    fn eq(&self, other: &LineScores) -> bool {
        self.start() == other.start() && self.all() == other.all()
    }
}

impl LineScores {
    /// For memories of these numbers of lines: `last`, when it holds a score for
    /// every line (a pass's to start from), else all zero; and whether it was `last`.
    pub(super) fn new<'a>(
        lines: impl Iterator<Item = &'a DocData>,
        last: Option<Vec<f64>>,
    ) -> (LineScores, bool) {
        let mut start = vec![0];
        let mut total = 0;
        for d in lines {
            total += d.lines.len();
            start.push(total);
        }
        let (scores, kept) = match last {
            Some(s) if s.len() == total => (s, true),
            _ => (vec![0.0; total], false),
        };
        let start = start.into();
        (LineScores(Held::Dense { scores, start }), kept)
    }

    /// Every line's score.
    pub(super) fn all(&self) -> &[f64] {
        match &self.0 {
            Held::Dense { scores, .. } => scores,
            Held::Met(b, _) => &b.scores,
        }
    }

    pub(super) fn all_mut(&mut self) -> &mut [f64] {
        match &mut self.0 {
            Held::Dense { scores, .. } => scores,
            Held::Met(b, _) => &mut b.scores,
        }
    }

    pub(super) fn start(&self) -> &Arc<[usize]> {
        match &self.0 {
            Held::Dense { start, .. } => start,
            Held::Met(b, _) => &b.start,
        }
    }

    /// At least the number of lines with a score above 0 (the lines met, through
    /// the postings; every line, by a scan).
    pub fn scored_at_most(&self) -> usize {
        match &self.0 {
            Held::Dense { scores, .. } => scores.len(),
            Held::Met(b, _) => b.met_at_most(),
        }
    }

    /// The scores of memory `r`'s lines.
    pub fn of(&self, r: usize) -> &[f64] {
        let start = self.start();
        &self.all()[start[r]..start[r + 1]]
    }

    /// Number of memories.
    pub fn len(&self) -> usize {
        self.start().len().saturating_sub(1)
    }

    /// Whether there is no memory.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each memory's scores, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[f64]> {
        self.start().windows(2).map(|w| &self.all()[w[0]..w[1]])
    }

    /// Each line with a score above 0 as (memory, line, score), in no set order:
    /// through the postings only the lines met are read.
    pub(super) fn each_scored(&self, mut f: impl FnMut(usize, usize, f64)) {
        match &self.0 {
            Held::Dense { .. } => {
                for (r, per) in self.iter().enumerate() {
                    for (l, &s) in per.iter().enumerate() {
                        if s > 0.0 {
                            f(r, l, s);
                        }
                    }
                }
            }
            Held::Met(b, _) if !b.met.whole() => {
                let mut r = 0;
                for (at, &s) in b.scores.iter().enumerate() {
                    while b.start[r + 1] <= at {
                        r += 1;
                    }
                    if s > 0.0 {
                        f(r, at - b.start[r], s);
                    }
                }
            }
            Held::Met(b, _) => {
                for &(at, r) in b.met.lines() {
                    let (at, r) = (at as usize, r as usize);
                    let s = b.scores[at];
                    if s > 0.0 {
                        f(r, at - b.start[r], s);
                    }
                }
            }
        }
    }

    /// Each score divided by the best (scores are not below 0: a line not met,
    /// at 0, stays 0).
    pub(super) fn normalize(&mut self) {
        let best = match &self.0 {
            Held::Met(b, _) if b.met.whole() => b
                .met
                .lines()
                .iter()
                .map(|&(at, _)| b.scores[at as usize])
                .fold(0.0_f64, f64::max),
            _ => self.all().iter().copied().fold(0.0_f64, f64::max),
        };
        if best <= 0.0 {
            return;
        }
        match &mut self.0 {
            Held::Met(b, _) if b.met.whole() => {
                for &(at, _) in b.met.lines() {
                    b.scores[at as usize] /= best;
                }
            }
            _ => self.all_mut().iter_mut().for_each(|s| *s /= best),
        }
    }

    /// Leaves what a next pass (over weights that extend these `done`) starts
    /// from in `carry`: the buffers summed in, or (with `reuse`) a scan's scores.
    pub(super) fn hand_over(&mut self, carry: &mut Carry, done: usize, reuse: bool) {
        match std::mem::take(&mut self.0) {
            Held::Met(b, pool) => carry.met = Some((b, pool, done)),
            Held::Dense { scores, .. } if reuse => carry.scores = Some((scores, done)),
            Held::Dense { .. } => {}
        }
    }
}
