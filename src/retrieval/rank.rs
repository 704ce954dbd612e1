//! Salience, recency and the query-less rank order (spec/ranking.md#salience).
//!
//! salience = 1.0 if `important`, else min(0.5 + bonus(type) + min(0.05 × tags, 0.2), 1.0);
//! recency = 0.5 ^ (age / half-life), age = now − `updated` (never negative), half-life
//! 7 days or the memory's `decay`, `decay: never` → 1; score = salience × recency;
//! ties by `updated` (newer first), then key. Pure functions of the memory and `now`.

use std::cmp::{Ordering, Reverse};

use chrono::{DateTime, Utc};

use crate::memory::{Decay, Kind, Meta, Record};

pub(crate) mod standing;

/// Default recency half-life in days.
pub(crate) const HALF_LIFE_DAYS: f64 = 7.0;

/// Salience of a memory, in [0.5, 1.0].
pub(crate) fn salience(meta: &Meta) -> f64 {
    // Agent state is always salient (spec/ranking.md#salience).
    if meta.important || meta.kind == Kind::State {
        return 1.0;
    }
    // Evaluated in this order (base, then tags) so that results are bit-for-bit those
    // of the formula as written.
    let base = 0.5 + meta.kind.bonus();
    let tags = (0.05 * meta.tags.len() as f64).min(0.2);
    (base + tags).min(1.0)
}

/// Recency of a memory at `now`, in (0, 1].
pub(crate) fn recency(meta: &Meta, now: DateTime<Utc>) -> f64 {
    let Some(half_life) = half_life(meta) else {
        return 1.0;
    };
    let age_ms = (now - meta.updated.at).num_milliseconds().max(0) as f64;
    let age_days = age_ms / 86_400_000.0;
    0.5_f64.powf(age_days / half_life)
}

/// The half-life in days a memory's recency decays with; `None` when it does not
/// decay (recency is always 1).
pub(crate) fn half_life(meta: &Meta) -> Option<f64> {
    // Agent state does not decay (spec/ranking.md#salience).
    if meta.kind == Kind::State {
        return None;
    }
    // A memory without `updated` (a Claude Code file) has no known age: memdir does
    // not invent one, so it does not decay (spec/ranking.md#salience).
    if meta.updated.is_undated() {
        return None;
    }
    match meta.decay {
        Some(Decay::Never) => None,
        Some(Decay::Days(n)) => Some(f64::from(n)),
        None => Some(HALF_LIFE_DAYS),
    }
}

/// Rank score: salience × recency.
pub(crate) fn score(meta: &Meta, now: DateTime<Utc>) -> f64 {
    salience(meta) * recency(meta, now)
}

/// Orders two memories with given scores: higher score first, then newer `updated`,
/// then key. Total, so sorting is deterministic.
pub(crate) fn compare(a: (&Record, f64), b: (&Record, f64)) -> Ordering {
    b.1.partial_cmp(&a.1)
        .unwrap_or(Ordering::Equal)
        .then(b.0.meta.updated.at.cmp(&a.0.meta.updated.at))
        .then(a.0.key.cmp(&b.0.key))
}

/// What [`sort_key`] gives: less is better.
pub(crate) type SortKey = (Reverse<u64>, Reverse<(i64, u32)>, u32);

/// A sort key that orders as [`compare`] does, for scores that are not NaN:
/// `key_rank` is the memory's place in key order ([`key_ranks`]).
pub(crate) fn sort_key(r: &Record, score: f64, key_rank: u32) -> SortKey {
    // -0.0 and 0.0 compare equal; for the others the sign-flipped bits order as
    // the values do.
    let bits = (score + 0.0).to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    let at = &r.meta.updated.at;
    (
        Reverse(ordered),
        Reverse((at.timestamp(), at.timestamp_subsec_nanos())),
        key_rank,
    )
}

/// Each memory's place in key order (the order [`compare`] ends with).
pub(crate) fn key_ranks(records: &[Record]) -> Vec<u32> {
    if records.windows(2).all(|w| w[0].key < w[1].key) {
        return (0..records.len() as u32).collect();
    }
    let mut by_key: Vec<usize> = (0..records.len()).collect();
    by_key.sort_by(|&a, &b| records[a].key.cmp(&records[b].key));
    let mut ranks = vec![0u32; records.len()];
    for (rank, i) in by_key.into_iter().enumerate() {
        ranks[i] = rank as u32;
    }
    ranks
}

/// Memories (indices into `records`) with scores, in [`compare`]'s order. The
/// records' key order is computed once for any number of `lists`; each is sorted on
/// precomputed keys (distinct, so an unstable sort gives the one order there is).
pub(crate) fn sorted<const N: usize>(
    records: &[Record],
    lists: [Vec<(usize, f64)>; N],
) -> [Vec<(usize, f64)>; N] {
    let ranks = key_ranks(records);
    lists.map(|list| {
        let mut keyed: Vec<_> = list
            .into_iter()
            .map(|(i, s)| (sort_key(&records[i], s, ranks[i]), (i, s)))
            .collect();
        keyed.sort_unstable_by_key(|k| k.0);
        keyed.into_iter().map(|(_, x)| x).collect()
    })
}

/// Indices of `records` in rank order at `now`, with their scores.
pub(crate) fn order(records: &[Record], now: DateTime<Utc>) -> Vec<(usize, f64)> {
    let scored = records
        .iter()
        .enumerate()
        .map(|(i, r)| (i, score(&r.meta, now)))
        .collect();
    let [v] = sorted(records, [scored]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::frontmatter::Extra;
    use crate::memory::{Key, Stamp};

    #[test]
    fn sort_keys_order_as_compare() {
        // Scores that tie (0.0 and -0.0 too), dates that tie, keys where one is the
        // other's prefix (file-name order differs there), in no order at all.
        let keys = ["a", "a-b", "a.b", "b", "a_b", "ab", "c", "a-a"];
        let dates = [
            "2026-01-01",
            "2026-01-02T10:00:00Z",
            "2026-01-02T10:00:00.5Z",
        ];
        let scores = [0.5, 0.0, -0.0, 0.25, 0.5, 1e-300, 0.25, 2.0];
        let records: Vec<Record> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let mut r = crate::memory::index::tests::rec(k, "user", "N", "d", "2026-01-01");
                r.meta.updated = Stamp::parse(dates[i % dates.len()]).unwrap();
                r
            })
            .collect();
        let mut by_compare: Vec<usize> = (0..records.len()).collect();
        by_compare.sort_by(|&a, &b| compare((&records[a], scores[a]), (&records[b], scores[b])));
        let scored = (0..records.len()).map(|i| (i, scores[i])).collect();
        let [by_key] = sorted(&records, [scored]);
        let by_key: Vec<usize> = by_key.into_iter().map(|(i, _)| i).collect();
        assert_eq!(by_compare, by_key);
    }

    fn meta(kind: &str, tags: usize, important: bool, updated: &str, decay: Option<Decay>) -> Meta {
        Meta {
            name: "n".into(),
            description: "d".into(),
            kind: Kind::parse(kind),
            created: Stamp::parse("2026-01-01").unwrap(),
            updated: Stamp::parse(updated).unwrap(),
            source: None,
            decay,
            tags: (0..tags).map(|i| format!("t{i}")).collect(),
            important,
            supersedes: Vec::new(),
            valid_until: None,
            extra: Extra::default(),
        }
    }

    fn now() -> DateTime<Utc> {
        "2026-04-15T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn salience_formula() {
        // spec/ranking.md#salience
        let cases = [
            ("user", 5, false, 0.8999999999999999),
            ("feedback", 1, false, 0.8500000000000001),
            ("reference", 0, false, 0.5),
            ("ops", 1, false, 0.55),
            ("project", 2, false, 0.7),
            ("feedback", 9, false, 1.0),
            ("reference", 0, true, 1.0),
        ];
        for (kind, tags, imp, want) in cases {
            let got = salience(&meta(kind, tags, imp, "2026-04-15", None));
            assert_eq!(got, want, "{kind} {tags} {imp}");
        }
    }

    #[test]
    fn recency_formula() {
        // spec/ranking.md#recency
        let cases = [
            ("2026-04-15", None, 1.0),
            ("2026-04-08", None, 0.5),
            ("2026-04-01", None, 0.25),
            ("2026-04-20", None, 1.0), // future dates never count as negative age
            ("2026-03-16", Some(Decay::Days(30)), 0.5),
            ("2020-01-01", Some(Decay::Never), 1.0),
        ];
        for (updated, decay, want) in cases {
            let got = recency(&meta("user", 0, false, updated, decay), now());
            assert!((got - want).abs() < 1e-12, "{updated}: {got} != {want}");
        }
    }

    #[test]
    fn order_breaks_ties_by_updated_then_key() {
        let rec = |k: &str, updated: &str| Record {
            key: Key::from_file_stem(k),
            meta: meta("user", 0, false, updated, Some(Decay::Never)),
            body: Default::default(),
        };
        let rs = vec![
            rec("b", "2026-01-01"),
            rec("a", "2026-01-01"),
            rec("c", "2026-02-01"),
        ];
        let keys: Vec<&str> = order(&rs, now())
            .iter()
            .map(|(i, _)| rs[*i].key.as_str())
            .collect();
        assert_eq!(keys, vec!["c", "a", "b"]);
    }
}
