//! A block's order of memories: a head (every candidate, or a query's hits), a list
//! in order or (from a kept standing) the hits with the keys that order them, sorted
//! only as far as they are read; then, from a kept standing, the rest as it gives them.
//!
//! Must not choose lines or pack memories (the excerpt planner and assembly do).
//! Pure code.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};

use crate::memory::Record;
use crate::retrieval::context::Parts;
use crate::retrieval::rank::SortKey;
use crate::retrieval::rank::standing::Standing;

/// Memories in order, each known by its place in the head (its id).
#[derive(Debug, Clone)]
pub(super) enum Head {
    /// Memories (indices into the records) in order; a memory's id is its position.
    Sorted(Vec<usize>),
    /// Memories with the keys that order them (less first), in no order; a memory's
    /// id is its place in this list.
    Keyed(Vec<(SortKey, usize)>),
}

impl Head {
    /// The memory of id `id`.
    pub(super) fn memory(&self, id: usize) -> usize {
        match self {
            Head::Sorted(v) => v[id],
            Head::Keyed(v) => v[id].1,
        }
    }

    /// The order of two ids' memories.
    pub(super) fn cmp(&self, a: usize, b: usize) -> Ordering {
        match self {
            Head::Sorted(_) => a.cmp(&b),
            Head::Keyed(v) => v[a].0.cmp(&v[b].0),
        }
    }

    /// Whether ids are in order (a sorted head).
    pub(super) fn ids_in_order(&self) -> bool {
        matches!(self, Head::Sorted(_))
    }

    /// (id, memory) in order: a keyed head is sorted a chunk at a time as it is
    /// read (the first few hundred selected and sorted, then four times as many of
    /// the rest, and so on: the order of a full sort, without ordering what is
    /// never read).
    pub(super) fn in_order(&self) -> InOrder<'_> {
        InOrder {
            head: self,
            at: 0,
            rest: None,
            chunk: Vec::new().into_iter(),
            size: InOrder::FIRST,
        }
    }

    /// The memories in order, all of them.
    pub(super) fn sorted(&self) -> Vec<usize> {
        self.in_order().map(|(_, r)| r).collect()
    }
}

/// The `k` first of `rest` in the order `first` (less first), taken out of it in no
/// order; every one left comes after all of them. What both the head's order and
/// the planner's lines are read a chunk at a time with.
pub(super) fn take_first<T>(
    rest: &mut Vec<T>,
    k: usize,
    mut first: impl FnMut(&T, &T) -> Ordering,
) -> Vec<T> {
    let at = rest.len() - k.min(rest.len());
    if at > 0 {
        rest.select_nth_unstable_by(at, |a, b| first(b, a));
    }
    rest.split_off(at)
}

/// [`Head::in_order`].
pub(super) struct InOrder<'a> {
    head: &'a Head,
    /// A sorted head: the next position.
    at: usize,
    /// A keyed head: what is not read yet (taken on the first read), ids with keys.
    rest: Option<Vec<(SortKey, u32)>>,
    chunk: std::vec::IntoIter<(SortKey, u32)>,
    size: usize,
}

impl InOrder<'_> {
    /// Memories in the first chunk of a keyed head.
    const FIRST: usize = 256;
}

impl Iterator for InOrder<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let keyed = match self.head {
            Head::Sorted(v) => {
                let r = *v.get(self.at)?;
                self.at += 1;
                return Some((self.at - 1, r));
            }
            Head::Keyed(v) => v,
        };
        if let Some((_, id)) = self.chunk.next() {
            return Some((id as usize, keyed[id as usize].1));
        }
        let rest = self.rest.get_or_insert_with(|| {
            keyed
                .iter()
                .enumerate()
                .map(|(id, (k, _))| (*k, id as u32))
                .collect()
        });
        // Keys are distinct: the order is total.
        let mut chunk = take_first(rest, self.size, Ord::cmp);
        chunk.sort_unstable();
        self.chunk = chunk.into_iter();
        self.size = self.size.saturating_mul(4);
        let (_, id) = self.chunk.next()?;
        Some((id as usize, keyed[id as usize].1))
    }
}

/// The memories in order: `head`, then, from a kept standing, the others, found
/// only as far as they are read.
pub(super) struct Order<'a> {
    pub(super) head: Head,
    pub(super) rest: Option<Rest<'a>>,
}

impl Order<'_> {
    pub(super) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let rest = self.rest.iter().flat_map(|r| r.iter(|_| true));
        self.head.in_order().map(|(_, r)| r).chain(rest)
    }
}

/// The memories a kept standing gives after an order's head, in rank order.
pub(super) struct Rest<'a> {
    records: &'a [Record],
    standing: &'a Standing,
    now: DateTime<Utc>,
    /// The memories in the head, a bit each (empty: none).
    head: Vec<u64>,
}

impl<'a> Rest<'a> {
    /// The rest after a head of these memories (a bit each), with a standing.
    pub(super) fn of(
        parts: &Parts<'a>,
        standing: Option<&'a Standing>,
        head: Vec<u64>,
    ) -> Option<Rest<'a>> {
        standing.map(|standing| Rest {
            records: parts.records,
            standing,
            now: parts.now,
            head,
        })
    }

    /// The memories not in the head that `keep` admits.
    pub(super) fn iter<'s>(
        &'s self,
        keep: impl Fn(usize) -> bool + 's,
    ) -> impl Iterator<Item = usize> + 's {
        let in_head = |i: usize| {
            self.head
                .get(i / 64)
                .is_some_and(|w| w >> (i % 64) & 1 == 1)
        };
        self.standing
            .in_order(self.records, self.now, move |i| !in_head(i) && keep(i))
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// A keyed head read in order is its list sorted by key, read whole or in
        /// part, through the chunks' edges; ids and memories match.
        #[test]
        fn a_keyed_head_reads_in_key_order(
            keys in prop::collection::hash_set((0u64..50, 0i64..5, 0u32..2000), 0..1500),
            take in 0usize..1600,
        ) {
            let list: Vec<(SortKey, usize)> = keys
                .into_iter()
                .enumerate()
                .map(|(i, (s, at, rank))| ((Reverse(s), Reverse((at, 0)), rank), i * 3))
                .collect();
            let head = Head::Keyed(list.clone());
            let mut want = list.clone();
            want.sort();
            let want: Vec<usize> = want.into_iter().map(|(_, r)| r).take(take).collect();
            let got: Vec<(usize, usize)> = head.in_order().take(take).collect();
            for &(id, r) in &got {
                prop_assert_eq!(head.memory(id), r);
            }
            let got: Vec<usize> = got.into_iter().map(|(_, r)| r).collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_sorted_head_reads_as_it_is() {
        let head = Head::Sorted(vec![7, 3, 9]);
        assert_eq!(
            head.in_order().collect::<Vec<_>>(),
            [(0, 7), (1, 3), (2, 9)]
        );
        assert_eq!(head.cmp(0, 2), Ordering::Less);
        assert_eq!(head.sorted(), [7, 3, 9]);
    }
}
