//! The per-line arrays line scoring sums in through the postings, kept by a corpus
//! between its calls: all zero at rest, each call writes only the lines its terms
//! meet and, done, sets those back to zero. A call thus does the work of the lines
//! it meets, not of every line of the store (spec/architecture.md#warm-processes).
//!
//! Pure code: no IO, no clock.

use std::sync::{Arc, Mutex, PoisonError};

use crate::retrieval::search::vocab::DocData;

/// The lines met are listed, and read one by one, while fewer than one in this
/// many is met.
const SPARSE: usize = 16;

/// A line score's arrays: by line, in the order of the memories, then of their
/// lines (`start`).
#[derive(Debug)]
pub(super) struct Buffers {
    /// Where each memory's lines start, and the end.
    pub start: Arc<[usize]>,
    /// Each line's score.
    pub scores: Vec<f64>,
    /// Each line's sum over the weights scored so far, before its pair sum and
    /// label boost.
    pub acc: Vec<f64>,
    /// The weights met in each line (a bit each, and the label bit).
    pub mask: Vec<u64>,
    /// Each line's pair sum.
    pub pairs: Vec<f64>,
    /// Scratch for the pairs: the positions of a pair's first term in a line
    /// (set back to zero by the pass that sets it).
    pub first: Vec<u32>,
    /// The lines met, while few.
    pub met: Met,
}

/// The lines met (a weight's term in them), as (place, memory), each once: the
/// only lines whose entries are not zero. A list that fills stops; the lines are
/// then read in a walk over all.
#[derive(Debug)]
pub(super) struct Met {
    /// The lines, the first `listed`; the last slot is written past the room.
    list: Vec<(u32, u32)>,
    listed: usize,
}

impl Met {
    /// A list of room `room`.
    fn new(room: usize) -> Met {
        Met {
            list: vec![(0, 0); room + 1],
            listed: 0,
        }
    }

    /// Lists line `at` of memory `r` when `fresh` (its first weight), with no
    /// branch (a line's being fresh is a coin toss when half the lines are met).
    #[inline]
    pub(super) fn meet(&mut self, at: usize, r: usize, fresh: bool) {
        let room = self.list.len() - 1;
        self.list[self.listed.min(room)] = (at as u32, r as u32);
        self.listed = (self.listed + usize::from(fresh)).min(room);
    }

    /// Whether the list holds every line met: few lines were, and read one by
    /// one they cost less than a walk over every line (past that, a walk in
    /// order through all the arrays costs less than reading the lines met, in the
    /// order their terms meet them, a few times over).
    pub(super) fn whole(&self) -> bool {
        self.listed < self.list.len() - 1
    }

    /// The lines met, when [`Met::whole`].
    pub(super) fn lines(&self) -> &[(u32, u32)] {
        &self.list[..self.listed]
    }
}

impl Buffers {
    /// All zero, for memories of these lines.
    fn new(docs: &[DocData]) -> Buffers {
        let mut start = Vec::with_capacity(docs.len() + 1);
        start.push(0);
        let mut total = 0;
        for d in docs {
            total += d.lines.len();
            start.push(total);
        }
        Buffers {
            start: start.into(),
            scores: vec![0.0; total],
            acc: vec![0.0; total],
            mask: vec![0; total],
            pairs: vec![0.0; total],
            first: vec![0; total],
            met: Met::new(total / SPARSE),
        }
    }

    /// At least the number of lines met.
    pub(super) fn met_at_most(&self) -> usize {
        if self.met.whole() {
            self.met.listed
        } else {
            self.scores.len()
        }
    }

    /// Sets the lines met back to zero: the arrays are all zero again.
    fn clear(&mut self) {
        if !self.met.whole() {
            self.scores.fill(0.0);
            self.acc.fill(0.0);
            self.mask.fill(0);
            self.pairs.fill(0.0);
            self.met.listed = 0;
            return;
        }
        for &(at, _) in self.met.lines() {
            let at = at as usize;
            self.scores[at] = 0.0;
            self.acc[at] = 0.0;
            self.mask[at] = 0;
            self.pairs[at] = 0.0;
        }
        self.met.listed = 0;
    }
}

/// Where a corpus keeps its [`Buffers`] between calls: one set, taken by a call
/// and given back when its scores are dropped (a call that finds it taken makes
/// its own). A corpus whose memories change starts a new pool (the lines moved).
/// A clone starts empty.
#[derive(Debug, Default)]
pub(crate) struct Pool(Arc<Mutex<Option<Box<Buffers>>>>);

impl Clone for Pool {
    fn clone(&self) -> Pool {
        Pool::default()
    }
}

impl Pool {
    /// The same pool, for scores to go back to.
    pub(super) fn share(&self) -> Pool {
        Pool(Arc::clone(&self.0))
    }

    /// The pool's buffers, or new ones; all zero, for the lines of `docs` (the
    /// memories the pool was made for).
    pub(super) fn take(&self, docs: &[DocData]) -> Box<Buffers> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        match kept {
            Some(b) if b.start.len() == docs.len() + 1 => b,
            _ => Box::new(Buffers::new(docs)),
        }
    }

    /// Takes `b` back, set to zero, unless the pool holds a set already.
    pub(super) fn give(&self, mut b: Box<Buffers>) {
        b.clear();
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_of_lines_met_stops_when_full() {
        let mut b = Buffers {
            start: Arc::from([0usize, 40]),
            scores: vec![0.0; 40],
            acc: vec![0.0; 40],
            mask: vec![0; 40],
            pairs: vec![0.0; 40],
            first: vec![0; 40],
            met: Met::new(40 / SPARSE),
        };
        b.met.meet(3, 0, true);
        b.met.meet(3, 0, false);
        b.met.meet(9, 0, true);
        assert!(!b.met.whole(), "a list of room 2 is full");
        assert_eq!(b.met_at_most(), 40);
        for at in [3usize, 9, 20] {
            b.scores[at] = 1.0;
            b.acc[at] = 0.5;
            b.mask[at] = 1;
            b.pairs[at] = 0.25;
        }
        b.clear();
        assert!(
            b.scores
                .iter()
                .chain(&b.acc)
                .chain(&b.pairs)
                .all(|&x| x == 0.0)
        );
        assert!(b.mask.iter().all(|&m| m == 0) && b.met.whole() && b.met.lines().is_empty());
        b.met.meet(5, 0, true);
        b.met.meet(5, 0, false);
        assert_eq!((b.met.lines(), b.met.whole()), (&[(5, 0)][..], true));
    }
}
