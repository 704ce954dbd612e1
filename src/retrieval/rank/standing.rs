//! A kept store's standing (spec/ranking.md#salience, spec/architecture.md#warm-processes):
//! the memories in classes whose order does not change with time, and each memory's
//! place in key order, so that a call takes the query-less rank order at its `now`
//! lazily, only as far as it reads, in exactly [`compare`](super::compare)'s order,
//! instead of scoring and sorting every memory.
//!
//! Must not read the clock (a call gives its `now`) or decide when a standing is
//! stale (its keeper drops it when the records change).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use chrono::{DateTime, Utc};

use super::{SortKey, half_life, key_ranks, salience, score, sort_key};
use crate::memory::Record;

/// How far (relatively) a memory's computed score may lie above what its class key
/// promises: the age in whole milliseconds (at most 8 × 10⁻⁹ of a one-day half-life),
/// the rounding of the key and of `powf` are all far below it. A wider slack only
/// makes a call look at a few more memories.
const SLACK: f64 = 1e-6;
/// Scores below this are bounded by it (where the relative bound above no longer
/// holds, among subnormal numbers).
const FLOOR: f64 = 1e-300;

/// The query-less order of a store's records, kept between calls: at any `now` not
/// before `since`, memories of one class (the same half-life, or none) stand in the
/// order of a key that does not change with time, so the order at `now` is a merge
/// of the classes ([`Standing::in_order`]).
#[derive(Debug, Clone)]
pub(crate) struct Standing {
    /// Each record's place in key order.
    key_ranks: Vec<u32>,
    /// Memories by class, each best first. A memory that decays with half-life h
    /// scores salience × 0.5^(age / h) = 2^((k − now) / h) with k = h ×
    /// log2(salience) plus `updated` in days, so within its class the greater k
    /// scores more at every `now` after `updated`; one that does not decay scores
    /// its salience.
    classes: Vec<Class>,
    /// Memories whose score is not kept in order (dated after `since`: their age is
    /// 0 until `now` passes `updated`), scored by every call.
    volatile: Vec<u32>,
    /// The time the classes hold from.
    since: DateTime<Utc>,
}

/// The memories of one class: (key, record), the greatest key first.
#[derive(Debug, Clone)]
struct Class {
    /// The half-life's bits (0: no decay).
    id: u64,
    members: Vec<(f64, u32)>,
}

/// Where a memory stands: in a class (its id) with a key, or among the volatile.
fn place(r: &Record, since: DateTime<Utc>) -> Option<(u64, f64)> {
    let sal = salience(&r.meta);
    if !(sal.is_finite() && sal > 0.0) {
        return None;
    }
    match half_life(&r.meta) {
        None => Some((0, sal)),
        Some(h) if h.is_finite() && h > 0.0 && r.meta.updated.at <= since => {
            let days = r.meta.updated.at.timestamp_millis() as f64 / 86_400_000.0;
            Some((h.to_bits().max(1), h * sal.log2() + days))
        }
        Some(_) => None,
    }
}

impl Standing {
    /// The standing of `records` from `since` on.
    pub(crate) fn of(records: &[Record], since: DateTime<Utc>) -> Standing {
        // (class, key, record): class 0 does not decay, others by the half-life's bits.
        let mut keyed: Vec<(u64, f64, u32)> = Vec::with_capacity(records.len());
        let mut volatile = Vec::new();
        for (i, r) in records.iter().enumerate() {
            match place(r, since) {
                Some((class, key)) => keyed.push((class, key, i as u32)),
                None => volatile.push(i as u32),
            }
        }
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut classes: Vec<Class> = Vec::new();
        for (id, key, i) in keyed {
            match classes.last_mut() {
                Some(c) if c.id == id => c.members.push((key, i)),
                _ => classes.push(Class {
                    id,
                    members: vec![(key, i)],
                }),
            }
        }
        Standing {
            key_ranks: key_ranks(records),
            classes,
            volatile,
            since,
        }
    }

    /// Whether this standing gives the order of `records` at `now`: made for as many
    /// records (its keeper drops it when they change), and `now` not before `since`.
    pub(crate) fn holds(&self, records: &[Record], now: DateTime<Utc>) -> bool {
        self.key_ranks.len() == records.len() && now >= self.since
    }

    /// Takes in record `j` as it is now (edited in place: the same key, so the key
    /// order stands): taken out of its class and put where it now stands.
    pub(crate) fn replace(&mut self, records: &[Record], j: usize) {
        let j32 = j as u32;
        self.volatile.retain(|&i| i != j32);
        for c in &mut self.classes {
            c.members.retain(|&(_, i)| i != j32);
        }
        self.classes.retain(|c| !c.members.is_empty());
        let Some((id, key)) = place(&records[j], self.since) else {
            self.volatile.push(j32);
            return;
        };
        match self.classes.iter_mut().find(|c| c.id == id) {
            Some(c) => {
                let at = c
                    .members
                    .partition_point(|(k, _)| k.total_cmp(&key).is_gt());
                c.members.insert(at, (key, j32));
            }
            None => self.classes.push(Class {
                id,
                members: vec![(key, j32)],
            }),
        }
    }

    /// Each record's place in key order ([`key_ranks`](super::key_ranks)).
    pub(crate) fn key_ranks(&self) -> &[u32] {
        &self.key_ranks
    }

    /// The records `keep` admits in rank order at `now` (as [`order`](super::order)
    /// gives them), each found when it is asked for: a call that reads the first
    /// hundred scores a few hundred memories, not every one. `records` are the
    /// ones this standing was made of, and `now` is not before `since`.
    pub(crate) fn in_order<'a, F: Fn(usize) -> bool>(
        &'a self,
        records: &'a [Record],
        now: DateTime<Utc>,
        keep: F,
    ) -> InOrder<'a, F> {
        debug_assert!(self.holds(records, now));
        let mut it = InOrder {
            records,
            standing: self,
            now,
            keep,
            next: vec![(0, 0.0); self.classes.len()],
            ready: BinaryHeap::new(),
        };
        for c in 0..self.classes.len() {
            it.score_next(c);
        }
        for &i in &self.volatile {
            it.push(i);
        }
        it
    }
}

/// A record scored at `now`, in a heap whose top is the first in rank order.
struct Scored {
    key: Reverse<SortKey>,
    score: f64,
    record: u32,
}

impl PartialEq for Scored {
    fn eq(&self, other: &Scored) -> bool {
        self.key == other.key
    }
}

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Scored) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Scored) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// [`Standing::in_order`]: a merge of the classes. A record goes out once it ranks
/// before every record not yet scored: each class's next member bounds the scores
/// of the rest of its class (with [`SLACK`]), and a record whose score is below
/// every bound still has to wait, so ties and near ties are settled by
/// [`compare`](super::compare) itself on scores computed at `now`.
pub(crate) struct InOrder<'a, F> {
    records: &'a [Record],
    standing: &'a Standing,
    now: DateTime<Utc>,
    keep: F,
    /// Per class: where its next member is, and that member's score at `now`.
    next: Vec<(usize, f64)>,
    /// Records scored and kept, not yet given out.
    ready: BinaryHeap<Scored>,
}

impl<F: Fn(usize) -> bool> InOrder<'_, F> {
    fn score_next(&mut self, c: usize) {
        let (at, s) = &mut self.next[c];
        if let Some(&(_, i)) = self.standing.classes[c].members.get(*at) {
            *s = score(&self.records[i as usize].meta, self.now);
        }
    }

    fn push(&mut self, i: u32) {
        if !(self.keep)(i as usize) {
            return;
        }
        let r = &self.records[i as usize];
        let s = score(&r.meta, self.now);
        self.ready.push(Scored {
            key: Reverse(sort_key(r, s, self.standing.key_ranks[i as usize])),
            score: s,
            record: i,
        });
    }

    /// The class whose next member may score the most, and that bound.
    fn highest_bound(&self) -> Option<(usize, f64)> {
        let mut best: Option<(usize, f64)> = None;
        for (c, &(at, s)) in self.next.iter().enumerate() {
            if at < self.standing.classes[c].members.len() {
                let bound = s.max(FLOOR) * (1.0 + SLACK);
                if best.is_none_or(|(_, b)| bound > b) {
                    best = Some((c, bound));
                }
            }
        }
        best
    }
}

impl<F: Fn(usize) -> bool> Iterator for InOrder<'_, F> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        // Score class members until the best scored one beats every bound.
        while let Some((c, bound)) = self.highest_bound() {
            if self.ready.peek().is_some_and(|top| top.score > bound) {
                break;
            }
            let (_, i) = self.standing.classes[c].members[self.next[c].0];
            self.next[c].0 += 1;
            self.score_next(c);
            self.push(i);
        }
        self.ready.pop().map(|s| s.record as usize)
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use proptest::prelude::*;

    use super::*;
    use crate::memory::Decay;
    use crate::memory::index::tests::rec;

    /// Records of every class: types, tags, `important`, state, `decay` (never, one
    /// day, the default and long ones), undated, dated after `since`, many equal.
    fn records(spec: &[(u8, u8, u8, i64)]) -> Vec<Record> {
        let base: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
        spec.iter()
            .enumerate()
            .map(|(i, &(kind, tags, decay, minutes))| {
                let kind =
                    ["user", "feedback", "project", "reference", "state", "x"][kind as usize % 6];
                let at = base + Duration::minutes(minutes);
                let mut r = rec(
                    &format!("k{:03}", (i * 7919) % 1000),
                    kind,
                    "n",
                    "d",
                    "2026-01-01",
                );
                r.meta.updated.at = at;
                r.meta.tags = (0..tags % 5).map(|t| format!("t{t}")).collect();
                r.meta.important = tags % 7 == 6;
                r.meta.decay = match decay % 6 {
                    0 | 1 => None,
                    2 => Some(Decay::Never),
                    3 => Some(Decay::Days(1)),
                    4 => Some(Decay::Days(30)),
                    _ => Some(Decay::Days(365)),
                };
                if decay % 11 == 10 {
                    r.meta.updated.text = String::new();
                }
                r
            })
            .collect()
    }

    proptest! {
        /// The merge gives exactly `order`'s order at every `now` from `since` on, of
        /// every record or of those a filter keeps, read whole or in part.
        #[test]
        fn the_merge_is_the_sorted_order(
            spec in prop::collection::vec((0u8..6, 0u8..8, 0u8..12, 0i64..200_000), 0..300),
            since in 0i64..200_000,
            later in prop::sample::select(vec![0i64, 1, 59, 1440, 10_080, 100_000, 5_000_000, 2_000_000_000]),
            skip in 1usize..5,
            take in 0usize..400,
        ) {
            let rs = records(&spec);
            let base: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
            let since = base + Duration::minutes(since);
            let now = since + Duration::minutes(later);
            let st = Standing::of(&rs, since);
            prop_assert!(st.holds(&rs, now));
            let want: Vec<usize> = super::super::order(&rs, now).into_iter().map(|(i, _)| i).collect();
            let got: Vec<usize> = st.in_order(&rs, now, |_| true).collect();
            prop_assert_eq!(&got, &want);
            let keep = |i: usize| !i.is_multiple_of(skip);
            let want_kept: Vec<usize> = want.iter().copied().filter(|&i| keep(i)).take(take).collect();
            let got_kept: Vec<usize> = st.in_order(&rs, now, keep).take(take).collect();
            prop_assert_eq!(got_kept, want_kept);
        }
    }

    proptest! {
        /// Records edited in place (their key kept) and taken in one by one give
        /// the order a standing made anew gives: of every class to every other, into
        /// and out of the volatile ones.
        #[test]
        fn an_edited_record_stands_where_a_new_standing_puts_it(
            spec in prop::collection::vec((0u8..6, 0u8..8, 0u8..12, 0i64..200_000), 1..120),
            edits in prop::collection::vec((0usize..120, (0u8..6, 0u8..8, 0u8..12, 0i64..400_000)), 1..12),
            later in 0i64..10_000_000,
        ) {
            let mut rs = records(&spec);
            let base: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
            let since = base + Duration::minutes(200_000);
            let mut st = Standing::of(&rs, since);
            for (j, e) in edits {
                let j = j % rs.len();
                let mut r = records(&[e]).remove(0);
                r.key = rs[j].key.clone();
                rs[j] = r;
                st.replace(&rs, j);
            }
            let now = since + Duration::minutes(later);
            let want: Vec<usize> = super::super::order(&rs, now).into_iter().map(|(i, _)| i).collect();
            let got: Vec<usize> = st.in_order(&rs, now, |_| true).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_standing_holds_from_its_time_for_its_records() {
        let rs = records(&[(0, 0, 0, 10), (1, 1, 3, 20)]);
        let since: DateTime<Utc> = "2026-01-02T00:00:00Z".parse().unwrap();
        let st = Standing::of(&rs, since);
        assert!(st.holds(&rs, since));
        assert!(st.holds(&rs, since + Duration::days(400)));
        assert!(!st.holds(&rs, since - Duration::milliseconds(1)));
        assert!(!st.holds(&rs[..1], since));
    }

    /// A merge read only in part scores only some of the memories: the first ten of
    /// 5,000 memories of one class look at a handful, not all.
    #[test]
    fn reading_the_first_few_scores_few() {
        let spec: Vec<(u8, u8, u8, i64)> = (0..5000).map(|i| (0, 0, 0, i * 13)).collect();
        let rs = records(&spec);
        let since: DateTime<Utc> = "2026-03-01T00:00:00Z".parse().unwrap();
        let st = Standing::of(&rs, since);
        let mut it = st.in_order(&rs, since + Duration::hours(5), |_| true);
        let first: Vec<usize> = it.by_ref().take(10).collect();
        assert_eq!(first.len(), 10);
        let scored = it.next[0].0 + it.ready.len();
        assert!(scored < 50, "{scored} scored for the first ten");
    }
}
