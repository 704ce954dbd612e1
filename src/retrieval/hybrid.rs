//! Hybrid relevance (spec/ranking.md#hybrid-recall): keyword and vector rankings fused
//! with reciprocal rank fusion, and the similarity floor for vector-only hits.
//!
//! Pure functions of the keyword relevance, the cosine similarities and the floor.
//! Must not embed, read files or reach the network: the engine hands the vectors in.

/// The `k` of reciprocal rank fusion: 1 / (k + rank), rank counted from 1.
pub(crate) const RRF_K: f64 = 60.0;

/// The default cosine similarity a memory found only by vectors must reach.
pub(crate) const DEFAULT_FLOOR: f32 = 0.3;

/// With passages on, the lines of this many memories, the best by the fused
/// relevance of their whole texts, are compared with the query one by one
/// (spec/ranking.md#passages): enough for a block of several thousand tokens, few
/// enough that a query embeds at most a few hundred short texts once.
pub(crate) const PASSAGE_MEMORIES: usize = 8;

/// The query's similarity to the body lines of some memories (passage-level hybrid,
/// spec/ranking.md#passages).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Passages {
    /// `sims[r]`, for a memory whose lines were compared: one entry per body line
    /// (`None`: a blank line, or one without a vector yet).
    pub sims: Vec<Option<Vec<Option<f32>>>>,
    /// The similarity a line without a query term must reach to be a candidate.
    pub floor: f32,
}

impl Passages {
    /// The similarity of line `l` of memory `r`, when known.
    pub(crate) fn of(&self, r: usize, l: usize) -> Option<f32> {
        self.sims.get(r)?.as_ref()?.get(l).copied().flatten()
    }
}

/// The relevance a context block is built with when hybrid ranking ran: the fused
/// relevance of each memory and, with passages on, the query's similarity to the
/// lines of the best memories.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fused {
    pub memory: Vec<f64>,
    pub passages: Option<Passages>,
}

/// The text of a body line that is embedded as a passage: the line without the
/// whitespace around it; `None` for a blank line.
pub(crate) fn passage(line: &str) -> Option<&str> {
    let t = line.trim();
    (!t.is_empty()).then_some(t)
}

/// The `n` memories of highest relevance above 0, best first (ties by index).
pub(crate) fn top(relevance: &[f64], n: usize) -> Vec<usize> {
    let mut hits: Vec<(f64, usize)> = relevance
        .iter()
        .enumerate()
        .filter(|(_, r)| **r > 0.0)
        .map(|(i, r)| (*r, i))
        .collect();
    hits.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    hits.into_iter().take(n).map(|(_, i)| i).collect()
}

/// Each memory's similarity raised to its best line's, for the memories whose lines
/// were compared: a memory whose answer lies past what its own vector covers (the
/// first few hundred tokens) is found by that line.
pub(crate) fn with_passages(sims: &mut [Option<f32>], passages: &Passages) {
    for (s, lines) in sims.iter_mut().zip(&passages.sims) {
        let best = lines
            .iter()
            .flatten()
            .flatten()
            .copied()
            .fold(None, |m: Option<f32>, x| Some(m.map_or(x, |m| m.max(x))));
        if let Some(b) = best {
            *s = Some(s.map_or(b, |s| s.max(b)));
        }
    }
}

/// Cosine similarity of two vectors of lengths ([`norm`]) `norm_a` and `norm_b`: the
/// query's length is found once for a whole ranking, a cached vector's when it is read
/// or added. 0 when either is all zeros or the lengths differ.
pub(crate) fn cosine_normed(a: &[f32], norm_a: f64, b: &[f32], norm_b: f64) -> f32 {
    if a.len() != b.len() || norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    let dot = dot(a, b);
    if !dot.is_finite() {
        return 0.0;
    }
    (dot / (norm_a * norm_b)) as f32
}

/// The cosine similarity of `query` to each vector given with its length ([`norm`];
/// `None`: no vector), the query's length found once.
pub(crate) fn similarities<'v>(
    query: &[f32],
    vectors: impl Iterator<Item = Option<(&'v [f32], f64)>>,
) -> Vec<Option<f32>> {
    let qn = norm(query);
    vectors
        .map(|v| v.map(|(x, n)| cosine_normed(query, qn, x, n)))
        .collect()
}

/// The Euclidean length of a vector, summed in f64 (found once per vector).
pub(crate) fn norm(a: &[f32]) -> f64 {
    a.iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt()
}

/// Σ aᵢ·bᵢ over the shorter length: sixteen running sums in f32, which the processor
/// works on side by side (a single sum waits on each addition), added in f64 at the
/// end. For unit-length vectors of a few hundred dimensions the error stays near
/// 1e-7, far below any difference a ranking sees.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    const LANES: usize = 16;
    let mut sums = [0.0_f32; LANES];
    let (a16, b16) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail = a16.remainder().iter().zip(b16.remainder());
    for (xs, ys) in a16.zip(b16) {
        for k in 0..LANES {
            sums[k] += xs[k] * ys[k];
        }
    }
    for (k, (x, y)) in tail.enumerate() {
        sums[k] += x * y;
    }
    sums.iter().map(|&s| f64::from(s)).sum()
}

/// Fuses keyword relevance (`keyword[i]` in [0, 1], 0 = not a hit) with the cosine
/// similarity of each memory to the query (`None` = no vector for it) into a relevance
/// in [0, 1], 0 = not a hit.
///
/// A memory is a candidate when it is a keyword hit, or when its similarity reaches
/// `floor`. Each list ranks the candidates it knows (keyword hits by relevance, the
/// candidates with a vector by similarity; ties by index), every list adds
/// 1 / ([`RRF_K`] + rank), and the sums are scaled by the best one.
pub(crate) fn fuse(keyword: &[f64], similarity: &[Option<f32>], floor: f32) -> Vec<f64> {
    let n = keyword.len();
    let sim = |i: usize| similarity.get(i).copied().flatten();
    let mut sums = vec![0.0_f64; n];
    // Each list as (score, index), best first, ties by index: a total order, so an
    // unstable sort gives the one answer.
    let mut by_keyword: Vec<(f64, usize)> = (0..n)
        .filter(|&i| keyword[i] > 0.0)
        .map(|i| (keyword[i], i))
        .collect();
    by_keyword.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    add_ranks(&mut sums, by_keyword.iter().map(|&(_, i)| i));
    let mut by_vector: Vec<(f32, usize)> = (0..n)
        .filter_map(|i| {
            let s = sim(i)?;
            (keyword[i] > 0.0 || s >= floor).then_some((s, i))
        })
        .collect();
    by_vector.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    add_ranks(&mut sums, by_vector.iter().map(|&(_, i)| i));
    let max = sums.iter().cloned().fold(0.0_f64, f64::max);
    if max <= 0.0 {
        return sums;
    }
    sums.iter().map(|s| s / max).collect()
}

/// Adds 1 / ([`RRF_K`] + rank) to each listed memory's sum, rank counted from 1.
fn add_ranks(sums: &mut [f64], list: impl Iterator<Item = usize>) {
    for (rank, i) in list.enumerate() {
        sums[i] += 1.0 / (RRF_K + rank as f64 + 1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        cosine_normed(a, norm(a), b, norm(b))
    }

    // The eight running sums and the tail give the plain sum's value, for every length.
    #[test]
    fn cosine_is_the_plain_formula_at_every_length() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        };
        for len in 1..40 {
            let a: Vec<f32> = (0..len).map(|_| next()).collect();
            let b: Vec<f32> = (0..len).map(|_| next()).collect();
            let plain = |u: &[f32], v: &[f32]| -> f64 {
                u.iter()
                    .zip(v)
                    .map(|(p, q)| f64::from(*p) * f64::from(*q))
                    .sum()
            };
            let want = plain(&a, &b) / (plain(&a, &a).sqrt() * plain(&b, &b).sqrt());
            assert!((f64::from(cosine(&a, &b)) - want).abs() < 1e-6, "{len}");
        }
    }

    fn check(keyword: &[f64], sim: &[Option<f32>], expect_order: &[usize]) {
        let fused = fuse(keyword, sim, DEFAULT_FLOOR);
        let mut order: Vec<usize> = (0..fused.len()).filter(|&i| fused[i] > 0.0).collect();
        order.sort_by(|&a, &b| fused[b].partial_cmp(&fused[a]).unwrap().then(a.cmp(&b)));
        assert_eq!(order, expect_order, "fused {fused:?}");
    }

    #[test]
    fn cosine_basics() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }

    // spec/ranking.md#hybrid-recall: agreement of both lists wins; a vector-only hit
    // below the floor is not a hit; one above it is.
    #[test]
    fn fusion_orders_and_floor() {
        // Only keyword: the keyword order.
        check(&[0.2, 0.9, 0.0], &[None, None, None], &[1, 0]);
        // Vectors agree with keyword on 0: it overtakes 1.
        check(&[0.2, 0.9, 0.0], &[Some(0.9), Some(0.1), None], &[0, 1]);
        // Vector-only memory 2 below the floor: not a hit.
        check(&[0.0, 0.9, 0.0], &[None, Some(0.5), Some(0.29)], &[1]);
        // Vector-only memory 2 above the floor: a hit, after the one both lists found.
        check(&[0.0, 0.9, 0.0], &[None, Some(0.5), Some(0.8)], &[1, 2]);
        // Nothing relevant: nothing.
        check(&[0.0, 0.0], &[Some(0.1), Some(0.2)], &[]);
    }

    #[test]
    fn top_takes_the_best_hits_in_order() {
        assert_eq!(top(&[0.2, 0.0, 0.9, 0.2, 0.5], 3), vec![2, 4, 0]);
        assert_eq!(top(&[0.0, 0.0], 3), Vec::<usize>::new());
        assert_eq!(top(&[0.1, 0.3], 8), vec![1, 0]);
    }

    // A memory's similarity is its best line's when that is higher; memories whose
    // lines were not compared keep their own.
    #[test]
    fn a_memory_is_as_similar_as_its_best_line() {
        let passages = Passages {
            sims: vec![
                Some(vec![Some(0.2), None, Some(0.7)]),
                None,
                Some(vec![Some(0.1)]),
                Some(vec![None]),
            ],
            floor: DEFAULT_FLOOR,
        };
        let mut sims = vec![Some(0.4), Some(0.5), Some(0.3), None];
        with_passages(&mut sims, &passages);
        assert_eq!(sims, vec![Some(0.7), Some(0.5), Some(0.3), None]);
        assert_eq!(passages.of(0, 2), Some(0.7));
        assert_eq!(passages.of(0, 1), None);
        assert_eq!(passages.of(1, 0), None);
        assert_eq!(passages.of(9, 0), None);
        assert_eq!(passage("  [S1:2] user: hi \t"), Some("[S1:2] user: hi"));
        assert_eq!(passage(" \t "), None);
    }

    #[test]
    fn fused_relevance_is_scaled_to_one() {
        let f = fuse(&[0.5, 0.4], &[Some(0.9), Some(0.8)], 0.3);
        assert_eq!(f[0], 1.0);
        assert!(f[1] > 0.0 && f[1] < 1.0);
    }
}
