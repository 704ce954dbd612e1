//! The token-budgeted context block an agent puts in its system prompt (DESIGN 3).
//!
//! Layout: MEMORY.md (its first 200 lines, then a line saying how many were cut),
//! then memories in the order given, each whole under a heading naming its name,
//! key, type and updated date (or, for a query hit too long to fit, a marked excerpt
//! of its most relevant lines), then the most recent timeline events that still fit,
//! oldest first. Tokens are estimated as ceil(chars / 4), counting Unicode scalar
//! values, and every character of the output counts: the output never exceeds
//! `max_tokens × 4` characters unless the index alone does. Pure code.

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::index;
use crate::memory::Record;
use crate::rank;
use crate::search::{self, Corpus, QueryScores};
use crate::timeline::Event;

/// How many lines of MEMORY.md the block includes at most.
pub const INDEX_LINE_CAP: usize = 200;
/// Default budget in tokens.
pub const DEFAULT_MAX_TOKENS: usize = 8192;

/// Estimated tokens of a text: ceil(chars / 4).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// One memory to consider, in the order the caller ranked them.
pub struct Candidate<'a> {
    pub record: &'a Record,
}

/// What the block contains.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    pub text: String,
    /// Keys of the memories included, in output order, and whether each is an excerpt.
    pub memories: Vec<Included>,
    /// Number of timeline events included.
    pub events: usize,
    /// Lines of MEMORY.md left out by the 200-line cap.
    pub index_lines_cut: usize,
    /// Estimated tokens of `text`.
    pub tokens: usize,
    pub max_tokens: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Included {
    pub key: String,
    pub excerpt: bool,
}

/// A loaded store, ready to build any number of context blocks: the memories, the
/// rendered index, the timeline and the time, plus the term statistics of every
/// memory and line (built on the first query and kept). Building a block from it is
/// exactly what `Memory::context` does after loading the store.
#[derive(Debug)]
pub struct Prepared {
    records: Vec<Record>,
    index_text: String,
    events: Vec<Event>,
    now: DateTime<Utc>,
    corpus: OnceLock<Corpus>,
}

impl Prepared {
    /// `events` in time order (oldest first); only the newest that fit are used, so
    /// passing more than a budget needs changes nothing.
    pub fn new(records: Vec<Record>, events: Vec<Event>, now: DateTime<Utc>) -> Prepared {
        Prepared {
            index_text: index::render(&records),
            records,
            events,
            now,
            corpus: OnceLock::new(),
        }
    }

    /// The memories the blocks are built from.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The context block for a budget and an optional query (DESIGN 3).
    pub fn block(&self, max_tokens: usize, query: Option<&str>) -> Block {
        let Some(q) = query.filter(|q| !q.trim().is_empty()) else {
            let candidates: Vec<Candidate<'_>> = rank::order(&self.records, self.now)
                .into_iter()
                .map(|(i, _)| Candidate {
                    record: &self.records[i],
                })
                .collect();
            return build(&self.index_text, &candidates, &self.events, max_tokens);
        };
        let corpus = self.corpus.get_or_init(|| Corpus::new(&self.records));
        let scores = corpus.score(&self.records, q);
        let order = query_order(&self.records, &scores.memory, self.now);
        build_for_query(
            &self.index_text,
            &self.records,
            &order,
            &scores,
            &self.events,
            max_tokens,
        )
    }
}

/// With a query: hits first, by relevance blended with salience and recency; the
/// rest keep the query-less rank order.
fn query_order(records: &[Record], relevance: &[f64], now: DateTime<Utc>) -> Vec<usize> {
    let base: Vec<f64> = records.iter().map(|r| rank::score(&r.meta, now)).collect();
    let blended: Vec<f64> = records
        .iter()
        .zip(relevance)
        .map(|(r, rel)| {
            if *rel > 0.0 {
                search::blend(*rel, rank::salience(&r.meta), rank::recency(&r.meta, now))
            } else {
                0.0
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by(|&a, &b| {
        let (ha, hb) = (blended[a] > 0.0, blended[b] > 0.0);
        hb.cmp(&ha).then_with(|| {
            if ha {
                rank::compare((&records[a], blended[a]), (&records[b], blended[b]))
            } else {
                rank::compare((&records[a], base[a]), (&records[b], base[b]))
            }
        })
    });
    order
}

/// The index part: MEMORY.md capped at 200 lines.
fn index_part(index: &str) -> (String, usize) {
    let lines: Vec<&str> = index.lines().collect();
    if lines.len() <= INDEX_LINE_CAP {
        let mut s = index.to_string();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        return (s, 0);
    }
    let cut = lines.len() - INDEX_LINE_CAP;
    let mut s = lines[..INDEX_LINE_CAP].join("\n");
    s.push('\n');
    s.push_str(&format!(
        "… {cut} more lines of MEMORY.md not shown (the memories are still ranked below)\n"
    ));
    (s, cut)
}

fn heading(r: &Record) -> String {
    let name = r.meta.name.split_whitespace().collect::<Vec<_>>().join(" ");
    format!(
        "\n## {} (key: {}, type: {}, updated: {})\n",
        name,
        r.key,
        r.meta.kind,
        r.meta.updated.date()
    )
}

fn whole(r: &Record) -> String {
    let mut s = heading(r);
    if !r.body.is_empty() {
        s.push('\n');
        s.push_str(&r.body);
        s.push('\n');
    }
    s
}

/// The heading of an excerpt: the whole-memory heading plus how much is shown.
fn excerpt_heading(r: &Record, shown: usize, total: usize) -> String {
    let mut h = heading(r);
    h.pop();
    h.push_str(&format!(" — excerpt: {shown} of {total} lines\n"));
    h
}

/// Marks a run of lines an excerpt leaves out.
const GAP: &str = "…\n";

/// A memory's lines with their lengths in characters, as the excerpt planner sees them.
struct Body<'a> {
    record: &'a Record,
    lines: Vec<&'a str>,
    chars: Vec<usize>,
    whole: usize,
}

impl<'a> Body<'a> {
    fn new(record: &'a Record) -> Body<'a> {
        let lines: Vec<&str> = record.body.lines().collect();
        let chars = lines.iter().map(|l| l.chars().count()).collect();
        Body {
            record,
            lines,
            chars,
            whole: whole(record).chars().count(),
        }
    }

    /// Characters of the excerpt showing the sorted lines `shown`.
    fn excerpt_cost(&self, shown: &[usize]) -> usize {
        let n = self.lines.len();
        let mut c = excerpt_heading(self.record, shown.len(), n).chars().count() + 1;
        let mut prev: Option<usize> = None;
        for &i in shown {
            if prev.map_or(i > 0, |p| i > p + 1) {
                c += GAP.chars().count();
            }
            c += self.chars[i] + 1;
            prev = Some(i);
        }
        if prev.is_some_and(|p| p + 1 < n) {
            c += GAP.chars().count();
        }
        c
    }

    /// The cheaper of the excerpt and the whole memory, and whether that is the whole.
    fn cost(&self, shown: &[usize]) -> (usize, bool) {
        if shown.len() == self.lines.len() {
            return (self.whole, true);
        }
        let e = self.excerpt_cost(shown);
        if self.whole <= e {
            (self.whole, true)
        } else {
            (e, false)
        }
    }

    fn excerpt(&self, shown: &[usize]) -> String {
        let n = self.lines.len();
        let mut s = excerpt_heading(self.record, shown.len(), n);
        s.push('\n');
        let mut prev: Option<usize> = None;
        for &i in shown {
            if prev.map_or(i > 0, |p| i > p + 1) {
                s.push_str(GAP);
            }
            s.push_str(self.lines[i]);
            s.push('\n');
            prev = Some(i);
        }
        if prev.is_some_and(|p| p + 1 < n) {
            s.push_str(GAP);
        }
        debug_assert_eq!(s.chars().count(), self.excerpt_cost(shown));
        s
    }
}

/// Development knobs (`MEMDIR_TUNE=name=value,...`), read once.
pub fn knob(name: &str, default: f64) -> f64 {
    static KNOBS: OnceLock<Vec<(String, f64)>> = OnceLock::new();
    let knobs = KNOBS.get_or_init(|| {
        std::env::var("MEMDIR_TUNE")
            .unwrap_or_default()
            .split(',')
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                Some((k.trim().to_string(), v.trim().parse().ok()?))
            })
            .collect()
    });
    knobs
        .iter()
        .find(|(k, _)| k == name)
        .map_or(default, |(_, v)| *v)
}

/// Chooses, for a query, which memories go in whole and which lines of the others
/// go in as excerpts, within `room` characters. Returns, in output order, each
/// included memory (by index into `records`) with its shown lines (`None`: whole).
fn plan(
    records: &[Record],
    order: &[usize],
    scores: &QueryScores,
    room: usize,
    budget: usize,
) -> Vec<(usize, Option<Vec<usize>>)> {
    let alpha = knob("alpha", 0.0);
    let beta = knob("beta", 0.0);
    let whole_share = knob("whole_share", 0.0);
    let bodies: Vec<Body<'_>> = records.iter().map(Body::new).collect();
    // shown[r]: None = not included; Some(lines) included (all lines = whole).
    let mut shown: Vec<Option<Vec<usize>>> = vec![None; records.len()];
    let mut is_whole = vec![false; records.len()];
    let mut used = 0usize;
    // Short relevant memories go in whole first.
    for &r in order {
        if scores.memory[r] <= 0.0 {
            break;
        }
        let b = &bodies[r];
        if (b.whole as f64) <= whole_share * budget as f64 && used + b.whole <= room {
            used += b.whole;
            shown[r] = Some((0..b.lines.len()).collect());
            is_whole[r] = true;
        }
    }
    // Then lines, best first, from every relevant memory.
    let mut cands: Vec<(f64, usize, usize, usize)> = Vec::new();
    let win = knob("win", 1.0) as usize;
    let beta2 = knob("beta2", 0.0);
    let gamma = knob("gamma", 0.0);
    for (pos, &r) in order.iter().enumerate() {
        let m = scores.memory[r];
        if m <= 0.0 || is_whole[r] {
            continue;
        }
        let ls = &scores.lines[r];
        let b = &bodies[r];
        for l in 0..ls.len() {
            let at = |d: isize| -> f64 {
                let i = l as isize + d;
                if i < 0 {
                    0.0
                } else {
                    ls.get(i as usize).copied().unwrap_or(0.0)
                }
            };
            let mut nb = at(-1).max(at(1));
            if win >= 2 {
                nb = nb.max(beta2 / beta.max(1e-9) * at(-2).max(at(2)));
            }
            let v = ls[l] + beta * nb;
            if v <= 0.0 {
                continue;
            }
            let mut val = v + alpha * m;
            if gamma > 0.0 {
                val /= ((b.chars[l] + 1) as f64 / 120.0).powf(gamma);
            }
            cands.push((val, pos, r, l));
        }
    }
    cands.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
            .then(a.3.cmp(&b.3))
    });
    let div = knob("div", 1.0);
    let mut taken = vec![0i32; records.len()];
    // (value, base value, `taken[r]` when valued, position, memory, line)
    let mut queue: std::collections::VecDeque<(f64, f64, i32, usize, usize, usize)> = cands
        .into_iter()
        .map(|(v, pos, r, l)| (v, v, 0, pos, r, l))
        .collect();
    while let Some((_, base, stamp, pos, r, l)) = queue.pop_front() {
        if used >= room {
            break;
        }
        if is_whole[r] {
            continue;
        }
        if stamp != taken[r] {
            let nv = base * div.powi(taken[r]);
            if queue.front().is_some_and(|f| f.0 > nv) {
                let at = queue.partition_point(|f| f.0 > nv);
                queue.insert(at, (nv, base, taken[r], pos, r, l));
                continue;
            }
        }
        let b = &bodies[r];
        let before = shown[r].as_ref().map_or(0, |s| b.cost(s).0);
        let mut next = shown[r].clone().unwrap_or_default();
        let at = next.binary_search(&l).unwrap_or_else(|e| e);
        next.insert(at, l);
        let (after, w) = b.cost(&next);
        if used - before + after <= room {
            used = used - before + after;
            is_whole[r] = w;
            taken[r] += 1;
            shown[r] = Some(if w {
                (0..b.lines.len()).collect()
            } else {
                next
            });
        }
    }
    // Whatever room is left goes to whole memories in order, as without a query.
    for &r in order {
        if shown[r].is_none() && used + bodies[r].whole <= room {
            used += bodies[r].whole;
            shown[r] = Some((0..bodies[r].lines.len()).collect());
            is_whole[r] = true;
        }
    }
    order
        .iter()
        .filter_map(|&r| {
            let s = shown[r].take()?;
            Some((r, if is_whole[r] { None } else { Some(s) }))
        })
        .collect()
}

/// The timeline part: the newest events that fit in `room` characters, oldest first.
fn timeline_part(events: &[Event], room: usize) -> (String, usize) {
    let header = "\n## Recent timeline\n";
    let header_len = header.chars().count();
    let mut used = 0usize;
    let mut chosen: Vec<String> = Vec::new();
    for e in events.iter().rev() {
        let line = e.encode();
        let n = line.chars().count() + 1 + if chosen.is_empty() { header_len } else { 0 };
        if used + n > room {
            break;
        }
        used += n;
        chosen.push(line);
    }
    let mut text = String::new();
    if !chosen.is_empty() {
        text.push_str(header);
        for line in chosen.iter().rev() {
            text.push_str(line);
            text.push('\n');
        }
    }
    (text, chosen.len())
}

fn finish(
    text: String,
    memories: Vec<Included>,
    events: usize,
    index_lines_cut: usize,
    max_tokens: usize,
) -> Block {
    let tokens = estimate_tokens(&text);
    Block {
        text,
        memories,
        events,
        index_lines_cut,
        tokens,
        max_tokens,
    }
}

/// Builds the context block without a query: memories whole, in the order given,
/// skipping any that does not fit.
///
/// `events` are in time order (oldest first); the newest that fit are kept.
pub fn build(
    index: &str,
    candidates: &[Candidate<'_>],
    events: &[Event],
    max_tokens: usize,
) -> Block {
    let budget = max_tokens.saturating_mul(4);
    let (mut text, index_lines_cut) = index_part(index);
    let mut used = text.chars().count();
    let mut memories = Vec::new();
    for c in candidates {
        if used >= budget {
            break;
        }
        let section = whole(c.record);
        let n = section.chars().count();
        if n <= budget - used {
            text.push_str(&section);
            used += n;
            memories.push(Included {
                key: c.record.key.to_string(),
                excerpt: false,
            });
        }
    }
    let (tl, n_events) = timeline_part(events, budget.saturating_sub(used));
    text.push_str(&tl);
    finish(text, memories, n_events, index_lines_cut, max_tokens)
}

/// Builds the context block for a query: `order` ranks the memories (indices into
/// `records`), `scores` says how relevant each memory and line is.
pub fn build_for_query(
    index: &str,
    records: &[Record],
    order: &[usize],
    scores: &QueryScores,
    events: &[Event],
    max_tokens: usize,
) -> Block {
    let budget = max_tokens.saturating_mul(4);
    let (mut text, index_lines_cut) = index_part(index);
    let used = text.chars().count();
    let room = budget.saturating_sub(used);
    let mut memories = Vec::new();
    for (r, lines) in plan(records, order, scores, room, budget) {
        let rec = &records[r];
        memories.push(Included {
            key: rec.key.to_string(),
            excerpt: lines.is_some(),
        });
        match lines {
            None => text.push_str(&whole(rec)),
            Some(l) => text.push_str(&Body::new(rec).excerpt(&l)),
        }
    }
    let used = text.chars().count();
    let (tl, n_events) = timeline_part(events, budget.saturating_sub(used));
    text.push_str(&tl);
    finish(text, memories, n_events, index_lines_cut, max_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tests::rec;

    fn cands(rs: &[Record]) -> Vec<Candidate<'_>> {
        rs.iter().map(|r| Candidate { record: r }).collect()
    }

    #[test]
    fn index_is_capped_at_200_lines() {
        let idx: String = (0..250).map(|i| format!("line {i}\n")).collect();
        let b = build(&idx, &[], &[], 1);
        assert_eq!(b.index_lines_cut, 50);
        assert_eq!(b.text.lines().count(), 201);
        assert!(b.text.ends_with(
            "… 50 more lines of MEMORY.md not shown (the memories are still ranked below)\n"
        ));
    }

    #[test]
    fn skips_what_does_not_fit_and_tries_the_next() {
        // spec/ranking.md#packing
        let mut big = rec("big", "user", "Big", "d", "2026-01-01");
        big.body = "x".repeat(500);
        let mut small = rec("small", "user", "Small", "d", "2026-01-01");
        small.body = "y".into();
        let rs = vec![big, small];
        let b = build("# Agent Memory\n", &cands(&rs), &[], 40);
        assert_eq!(
            b.memories,
            vec![Included {
                key: "small".into(),
                excerpt: false
            }]
        );
        assert_eq!(
            b.text,
            "# Agent Memory\n\n## Small (key: small, type: user, updated: 2026-01-01)\n\ny\n"
        );
        assert!(b.text.chars().count() <= 160);
    }

    #[test]
    fn never_exceeds_the_budget_unless_the_index_does() {
        let mut rs = Vec::new();
        for i in 0..30 {
            let mut r = rec(&format!("k{i}"), "user", "N", "d", "2026-01-01");
            r.body = "é😀".repeat(i * 7);
            rs.push(r);
        }
        let events: Vec<Event> = (0..50)
            .map(|i| {
                let mut f = serde_json::Map::new();
                f.insert("i".into(), i.into());
                Event::new("2026-01-01T00:00:00Z".parse().unwrap(), "e", f).unwrap()
            })
            .collect();
        let b = build("# Agent Memory\n", &cands(&rs), &events, 1);
        assert_eq!(
            b.text, "# Agent Memory\n",
            "the index alone may exceed the budget"
        );
        for max in [4, 5, 10, 20, 50, 100, 300, 1000] {
            let b = build("# Agent Memory\n", &cands(&rs), &events, max);
            assert!(
                b.text.chars().count() <= max * 4,
                "max {max}: {}",
                b.text.chars().count()
            );
            assert!(b.tokens <= max);
        }
    }

    #[test]
    fn timeline_fills_the_rest_oldest_first() {
        let events: Vec<Event> = (0..5)
            .map(|i| {
                let mut f = serde_json::Map::new();
                f.insert("i".into(), i.into());
                Event::new("2026-01-01T00:00:00Z".parse().unwrap(), "e", f).unwrap()
            })
            .collect();
        let line_len = events[0].encode().chars().count() + 1;
        let base = "# Agent Memory\n".chars().count() + "\n## Recent timeline\n".chars().count();
        let max_chars = base + 2 * line_len;
        let b = build("# Agent Memory\n", &[], &events, max_chars / 4);
        let want = (max_chars / 4 * 4 - base) / line_len;
        assert_eq!(b.events, want);
        let last_two: Vec<&str> = b.text.lines().skip(3).collect();
        assert_eq!(last_two.len(), want);
        assert!(last_two.last().unwrap().contains("\"i\":4"));
    }
}
