//! Duplicate detection for `consolidate --plan` (spec/cli.md#consolidate): groups of
//! memories with the same normalized body (exact), with bodies whose word shingles
//! overlap by at least a Jaccard threshold (near), or with the same name.
//!
//! Pure and bounded: near duplicates are found with MinHash signatures and
//! locality-sensitive hashing (bands of rows), so the work grows with the number of
//! memories and the size of the candidate buckets, not with all pairs; every
//! candidate pair is then checked with the exact Jaccard of its shingle sets, so a
//! reported pair always clears the threshold. memdir never merges: the agent does,
//! with `supersedes`.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use serde::Serialize;

use crate::memory::Record;

/// Words per shingle.
const SHINGLE: usize = 3;
/// LSH bands × rows = MinHash signature length. 32 bands of 4 rows find a pair of
/// Jaccard 0.5 with probability 0.87, of 0.6 with 0.99.
const BANDS: usize = 32;
const ROWS: usize = 4;
/// Past this many members, a bucket is compared member-to-first only (a template
/// shared by thousands of memories would otherwise cost all their pairs).
const MAX_BUCKET_PAIRS: usize = 64;
/// The default near-duplicate threshold.
pub const DEFAULT_THRESHOLD: f64 = 0.6;

/// Why memories were grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Why {
    /// The same normalized body.
    Exact,
    /// Bodies whose shingles overlap by at least the threshold.
    Near,
    /// The same name (case and spacing aside).
    Name,
}

/// A group of memories that may hold the same thing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Group {
    pub why: Why,
    /// Indices into the records, sorted.
    #[serde(skip)]
    pub members: Vec<usize>,
    /// The lowest Jaccard similarity of a pair that joined the group (1 for exact
    /// and name groups).
    pub similarity: f64,
}

fn words(body: &str) -> Vec<String> {
    body.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn hash_of<T: Hash + ?Sized>(t: &T) -> u64 {
    // DefaultHasher with fixed keys: deterministic across runs.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.hash(&mut h);
    h.finish()
}

/// The shingle hashes of a body: each run of [`SHINGLE`] words (the whole body when
/// shorter).
fn shingles(body: &str) -> HashSet<u64> {
    let w = words(body);
    if w.is_empty() {
        return HashSet::new();
    }
    if w.len() < SHINGLE {
        return std::iter::once(hash_of(&w)).collect();
    }
    w.windows(SHINGLE).map(hash_of).collect()
}

fn mix(mut x: u64) -> u64 {
    // splitmix64 finalizer.
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn signature(set: &HashSet<u64>) -> [u64; BANDS * ROWS] {
    let mut sig = [u64::MAX; BANDS * ROWS];
    // One independent-looking hash function per row: the shingle hash mixed with a
    // per-row seed (a plain xor of nearby seeds gave correlated rows).
    let seeds: Vec<u64> = (0..BANDS * ROWS).map(|i| mix(i as u64 + 1)).collect();
    for &s in set {
        for (slot, seed) in sig.iter_mut().zip(&seeds) {
            let v = mix(mix(s ^ seed));
            if v < *slot {
                *slot = v;
            }
        }
    }
    sig
}

fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

struct Sets {
    parent: Vec<usize>,
}

impl Sets {
    fn new(n: usize) -> Sets {
        Sets {
            parent: (0..n).collect(),
        }
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        self.parent[ra.max(rb)] = ra.min(rb);
        true
    }
}

/// The groups of `records`: exact groups, then near groups (bodies not already in
/// one exact group with each other, compared by one representative per exact
/// group), then name groups. Each group has at least two members; groups come
/// sorted by kind and first member.
pub(crate) fn groups(records: &[Record], threshold: f64) -> Vec<Group> {
    let (mut out, reps) = exact_groups(records);
    out.extend(near_groups(records, &reps, threshold));
    let names = name_groups(records, &out);
    out.extend(names);
    for g in &mut out {
        g.members.sort_unstable();
    }
    out.sort_by(|a, b| a.why.cmp(&b.why).then(a.members.cmp(&b.members)));
    out
}

/// Exact groups: the same normalized body (words, lowercase; empty bodies are not
/// grouped). Also returns one representative per distinct non-empty body, sorted.
fn exact_groups(records: &[Record]) -> (Vec<Group>, Vec<usize>) {
    let mut out = Vec::new();
    let norm: Vec<String> = records.iter().map(|r| words(&r.body).join(" ")).collect();
    let mut by_body: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in norm.iter().enumerate() {
        if !n.is_empty() {
            by_body.entry(n.as_str()).or_default().push(i);
        }
    }
    let mut reps: Vec<usize> = Vec::new();
    for members in by_body.values() {
        reps.push(members[0]);
        if members.len() > 1 {
            out.push(Group {
                why: Why::Exact,
                members: members.clone(),
                similarity: 1.0,
            });
        }
    }
    reps.sort_unstable();
    (out, reps)
}

/// Near groups: MinHash + LSH over one representative per distinct body (`reps`),
/// every candidate pair checked with the exact Jaccard of its shingle sets.
fn near_groups(records: &[Record], reps: &[usize], threshold: f64) -> Vec<Group> {
    let sets: Vec<HashSet<u64>> = reps.iter().map(|&i| shingles(&records[i].body)).collect();
    let buckets = lsh_buckets(&sets);
    let mut uf = Sets::new(reps.len());
    let mut low: HashMap<usize, f64> = HashMap::new();
    let mut checked: HashSet<(usize, usize)> = HashSet::new();
    let mut keys: Vec<&(usize, u64)> = buckets.keys().collect();
    keys.sort_unstable();
    for k in keys {
        let members = &buckets[k];
        if members.len() < 2 {
            continue;
        }
        for (a, b) in bucket_pairs(members) {
            if uf.find(a) == uf.find(b) || !checked.insert((a, b)) {
                continue;
            }
            let j = jaccard(&sets[a], &sets[b]);
            if j >= threshold {
                let (ra, rb) = (uf.find(a), uf.find(b));
                let l = low
                    .get(&ra)
                    .copied()
                    .unwrap_or(1.0)
                    .min(low.get(&rb).copied().unwrap_or(1.0))
                    .min(j);
                uf.union(a, b);
                let r = uf.find(a);
                low.insert(r, l);
            }
        }
    }
    let mut near: HashMap<usize, Vec<usize>> = HashMap::new();
    for (pos, &rep) in reps.iter().enumerate() {
        let r = uf.find(pos);
        near.entry(r).or_default().push(rep);
    }
    let mut out = Vec::new();
    for (root, members) in near {
        if members.len() > 1 {
            out.push(Group {
                why: Why::Near,
                members,
                similarity: (low.get(&root).copied().unwrap_or(1.0) * 1000.0).floor() / 1000.0,
            });
        }
    }
    out
}

/// The LSH buckets of shingle sets: for each band of each set's MinHash signature,
/// the sets (by position) whose band hashes alike.
fn lsh_buckets(sets: &[HashSet<u64>]) -> HashMap<(usize, u64), Vec<usize>> {
    let mut buckets: HashMap<(usize, u64), Vec<usize>> = HashMap::new();
    for (pos, set) in sets.iter().enumerate() {
        let sig = signature(set);
        for b in 0..BANDS {
            let band = hash_of(&sig[b * ROWS..(b + 1) * ROWS]);
            buckets.entry((b, band)).or_default().push(pos);
        }
    }
    buckets
}

/// The pairs of a bucket to compare: all of them, or member-to-first past
/// [`MAX_BUCKET_PAIRS`] members.
fn bucket_pairs(members: &[usize]) -> Vec<(usize, usize)> {
    if members.len() > MAX_BUCKET_PAIRS {
        members[1..].iter().map(|&m| (members[0], m)).collect()
    } else {
        let mut p = Vec::new();
        for (x, &a) in members.iter().enumerate() {
            for &b in &members[x + 1..] {
                p.push((a, b));
            }
        }
        p
    }
}

/// Name groups: the same name, case and spacing aside; a name group that repeats a
/// body group of `found` says nothing new and is left out.
fn name_groups(records: &[Record], found: &[Group]) -> Vec<Group> {
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let n = r
            .meta
            .name
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        if !n.is_empty() {
            by_name.entry(n).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for mut members in by_name.into_values() {
        members.sort_unstable();
        // A name group that repeats a body group says nothing new.
        let repeats = found.iter().any(|g| {
            let mut m = g.members.clone();
            m.sort_unstable();
            m == members
        });
        if members.len() > 1 && !repeats {
            out.push(Group {
                why: Why::Name,
                members,
                similarity: 1.0,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::index::tests::rec;

    fn with_body(key: &str, name: &str, body: &str) -> Record {
        let mut r = rec(key, "user", name, "d", "2026-01-01");
        r.body = (body.to_string()).into();
        r
    }

    #[test]
    fn exact_near_and_name_groups() {
        // spec/cli.md#consolidate
        let rs = vec![
            with_body("a", "A", "The user plays football every Saturday at ten."),
            with_body("b", "B", "the user plays FOOTBALL every saturday at ten"),
            with_body(
                "c",
                "C",
                "The user plays football every Saturday at ten in the park.",
            ),
            with_body("d", "Tone", "Completely different text about tone."),
            with_body("e", "tone", "Another unrelated memory body here."),
            with_body("f", "F", ""),
            with_body("g", "G", ""),
        ];
        let g = groups(&rs, DEFAULT_THRESHOLD);
        let got: Vec<(Why, Vec<usize>)> = g.iter().map(|g| (g.why, g.members.clone())).collect();
        assert_eq!(
            got,
            vec![
                (Why::Exact, vec![0, 1]),
                (Why::Near, vec![0, 2]),
                (Why::Name, vec![3, 4]),
            ]
        );
        assert!(g[1].similarity >= DEFAULT_THRESHOLD && g[1].similarity < 1.0);
    }

    #[test]
    fn below_the_threshold_is_no_group() {
        // spec/cli.md#consolidate
        let rs = vec![
            with_body("a", "A", "one two three four five six"),
            with_body("b", "B", "one two three four five seven"),
        ];
        // 3 shared shingles of 5: Jaccard 0.6.
        assert!(groups(&rs, 0.7).is_empty());
        assert_eq!(groups(&rs, 0.6).len(), 1);
    }
}
