//! The plain baseline every retrieval benchmark reports beside memdir: BM25 over
//! single lines, packed to the same budget (spec/ranking.md#benchmarks).
//!
//! It knows nothing of memdir's ranking: lowercase words split at every character
//! that is not a letter or digit, no stemming, no stop words, the textbook BM25
//! (k1 1.2, b 0.75) with each line a document. Lines that share no word with the
//! query are left out; the rest go in best first, each whole, skipping any that no
//! longer fits (as memdir's block does), until `max_tokens × 4` characters.

use std::collections::HashMap;

use crate::retrieval::context::estimate_tokens;

const K1: f64 = 1.2;
const B: f64 = 0.75;

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Lines indexed once, queried many times.
pub struct LineIndex<'a> {
    lines: &'a [String],
    /// Per line: word → count.
    counts: Vec<HashMap<String, u32>>,
    lengths: Vec<usize>,
    avg_len: f64,
    /// Word → number of lines holding it.
    df: HashMap<String, u32>,
}

impl<'a> LineIndex<'a> {
    /// Indexes `lines` (each one document).
    pub fn new(lines: &'a [String]) -> LineIndex<'a> {
        let mut counts = Vec::with_capacity(lines.len());
        let mut lengths = Vec::with_capacity(lines.len());
        let mut df: HashMap<String, u32> = HashMap::new();
        for line in lines {
            let ws = words(line);
            lengths.push(ws.len());
            let mut c: HashMap<String, u32> = HashMap::new();
            for w in ws {
                *c.entry(w).or_default() += 1;
            }
            for w in c.keys() {
                *df.entry(w.clone()).or_default() += 1;
            }
            counts.push(c);
        }
        let avg_len = lengths.iter().sum::<usize>() as f64 / lines.len().max(1) as f64;
        LineIndex {
            lines,
            counts,
            lengths,
            avg_len,
            df,
        }
    }

    /// The BM25 score of every line for `query`.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        let mut terms = words(query);
        terms.sort();
        terms.dedup();
        let n = self.lines.len() as f64;
        let idf: Vec<(String, f64)> = terms
            .into_iter()
            .filter_map(|t| {
                let df = f64::from(*self.df.get(&t)?);
                Some((t, ((n - df + 0.5) / (df + 0.5) + 1.0).ln()))
            })
            .collect();
        self.counts
            .iter()
            .zip(&self.lengths)
            .map(|(c, &len)| {
                let norm = K1 * (1.0 - B + B * len as f64 / self.avg_len.max(1.0));
                idf.iter()
                    .map(|(t, idf)| {
                        let tf = f64::from(c.get(t).copied().unwrap_or(0));
                        idf * tf * (K1 + 1.0) / (tf + norm)
                    })
                    .sum()
            })
            .collect()
    }

    /// The baseline's block for `query` within `max_tokens`: matching lines, best
    /// first (ties in line order), each whole, skipping what no longer fits.
    pub fn block(&self, query: &str, max_tokens: usize) -> String {
        let scores = self.scores(query);
        let mut order: Vec<usize> = (0..self.lines.len()).filter(|&i| scores[i] > 0.0).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let budget = max_tokens * 4;
        let mut used = 0;
        let mut out = String::new();
        for i in order {
            let line = &self.lines[i];
            // One newline joins each line to the next.
            let cost = line.chars().count() + usize::from(!out.is_empty());
            if used + cost > budget {
                continue;
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(line);
            used += cost;
        }
        debug_assert!(estimate_tokens(&out) <= max_tokens);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn ranks_by_bm25_and_leaves_out_what_does_not_match() {
        let l = lines(&[
            "the dog is called Biscuit",
            "we talked about the weather",
            "Biscuit the dog likes the park and the dog run",
        ]);
        let idx = LineIndex::new(&l);
        let s = idx.scores("dog Biscuit");
        assert!(s[0] > 0.0 && s[2] > 0.0 && s[1] == 0.0, "{s:?}");
        // The shorter line wins at equal matches (length normalization).
        assert!(s[0] > s[2], "{s:?}");
        assert_eq!(
            idx.block("dog Biscuit", 100),
            "the dog is called Biscuit\nBiscuit the dog likes the park and the dog run"
        );
    }

    #[test]
    fn the_budget_is_hard_and_lines_are_whole() {
        let l = lines(&["aaa bbb ccc ddd", "aaa", "aaa bbb"]);
        let idx = LineIndex::new(&l);
        for max in 0..8 {
            let b = idx.block("aaa", max);
            assert!(b.chars().count() <= max * 4, "{max}: {b:?}");
            assert!(b.lines().all(|x| l.contains(&x.to_string())), "{b:?}");
        }
        assert_eq!(idx.block("aaa", 1), "aaa");
        assert_eq!(idx.block("zzz", 100), "");
    }
}
