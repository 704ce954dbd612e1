//! The token-budgeted context block an agent puts in its system prompt (spec/ranking.md#packing-the-context-block).
//!
//! Layout: MEMORY.md (its first 200 lines, then a line saying how many were cut),
//! then memories, each whole under a heading naming its name, key, type and updated
//! date, then the most recent timeline events that still fit, oldest first. Without
//! a query the memories come in rank order. With one, [`Prepared::block`] chooses the
//! best lines of the relevant memories across all of them and shows each memory whole
//! or as a marked excerpt of those lines (spec/ranking.md#query-aware-context-measured-on-locomo).
//! Tokens are estimated as ceil(chars / 4), counting Unicode scalar values, and every
//! character of the output counts: the output never exceeds `max_tokens × 4`
//! characters unless the index alone does. Pure code: no IO, no clock.

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::memory::Record;
use crate::memory::index;
use crate::memory::timeline::Event;
use crate::retrieval::rank;
use crate::retrieval::search::{self, Corpus, QueryScores};

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
        let index_text = index::render(&records);
        Prepared::with_index(records, index_text, events, now)
    }

    /// Like [`Prepared::new`] with MEMORY.md already rendered from `records`.
    pub fn with_index(
        records: Vec<Record>,
        index_text: String,
        events: Vec<Event>,
        now: DateTime<Utc>,
    ) -> Prepared {
        Prepared {
            index_text,
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

    /// The context block for a budget and an optional query (spec/ranking.md#packing-the-context-block).
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

/// The length in characters of [`whole`]`(r)`, without building it.
fn whole_len(r: &Record) -> usize {
    let body = r.body.chars().count();
    heading(r).chars().count() + if body == 0 { 0 } else { body + 2 }
}

/// The shortest a memory's section can be: a heading with an empty name and type and
/// a one-character key (`\n##  (key: x, type: , updated: YYYY-MM-DD)\n`).
const MIN_SECTION: usize = 43;

fn whole(r: &Record) -> String {
    let mut s = heading(r);
    if !r.body.is_empty() {
        s.push('\n');
        s.push_str(&r.body);
        s.push('\n');
    }
    s
}

/// Query-aware packing (spec/ranking.md#query-aware-context-measured-on-locomo): a
/// line's value is its own score, plus this share of the better of its two
/// neighbours' scores (the reply to a matching line often holds the answer)...
pub const NEIGHBOUR: f64 = 0.5;
/// ...plus this share of the better of the lines two away...
pub const NEIGHBOUR_2: f64 = 0.25;
/// ...plus this share of its memory's relevance (the memory's topic counts).
pub const MEMORY_PRIOR: f64 = 1.0;
/// A relevant memory whose whole section is at most this many characters, and at
/// most [`SHORT_SHARE`] of the room left after MEMORY.md, goes in whole rather than
/// as an excerpt.
pub const SHORT_CHARS: usize = 1200;
pub const SHORT_SHARE: f64 = 0.25;

/// The line that closes an excerpt and says where the whole memory is.
fn excerpt_footer(r: &Record, shown: usize, total: usize) -> String {
    format!(
        "[excerpt: {shown} of {total} lines; the whole memory is `{}`]\n",
        r.key
    )
}

/// Marks a run of lines an excerpt leaves out.
const GAP: &str = "…\n";

/// A memory's lines with their lengths in characters, as the excerpt planner sees them.
struct Body<'a> {
    record: &'a Record,
    lines: Vec<&'a str>,
    chars: Vec<usize>,
    /// Characters of the memory's whole section.
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

    /// Characters of the excerpt showing the sorted lines `shown`: the heading, a
    /// blank line, `…` before each run of lines left out before a shown line, the
    /// shown lines, and the footer.
    fn excerpt_cost(&self, shown: &[usize]) -> usize {
        let n = self.lines.len();
        let mut c = heading(self.record).chars().count()
            + 1
            + excerpt_footer(self.record, shown.len(), n).chars().count();
        let mut prev: Option<usize> = None;
        for &i in shown {
            if prev.map_or(i > 0, |p| i > p + 1) {
                c += GAP.chars().count();
            }
            c += self.chars[i] + 1;
            prev = Some(i);
        }
        c
    }

    /// The cheaper of the excerpt showing `shown` and the whole memory, and whether
    /// that is the whole.
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
        let mut s = heading(self.record);
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
        s.push_str(&excerpt_footer(self.record, shown.len(), n));
        debug_assert_eq!(s.chars().count(), self.excerpt_cost(shown));
        s
    }
}

/// What goes in for one memory: all of it, or some of its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Whole,
    Lines(Vec<usize>),
}

/// Chooses, for a query, which memories go in whole and which lines of the others
/// go in as excerpts, within `room` characters. Returns the included memories (by
/// index into `records`) in `order`, each with its part.
///
/// Every line of a relevant memory gets a value (its score, its neighbours', its
/// memory's relevance); lines go in best first, each costing its characters plus
/// what it adds to its memory's excerpt (the heading and footer for the first line,
/// a `…` marker for a new run), skipping any that no longer fits. A memory whose
/// lines all go in, or whose whole section costs no more than its excerpt, goes in
/// whole, and so does a short relevant memory ([`SHORT_CHARS`]). Room left after
/// that takes whole memories in order, as without a query.
fn plan(
    records: &[Record],
    order: &[usize],
    scores: &QueryScores,
    room: usize,
) -> Vec<(usize, Part)> {
    let bodies: Vec<Body<'_>> = records.iter().map(Body::new).collect();
    let short_cap = (SHORT_CHARS as f64).min(room as f64 * SHORT_SHARE);
    // (value, (position in order, line)), for lines of relevant memories.
    let mut values: Vec<(f64, (usize, usize))> = Vec::new();
    for (pos, &r) in order.iter().enumerate() {
        let relevance = scores.memory[r];
        if relevance <= 0.0 {
            continue;
        }
        let ls = &scores.lines[r];
        let at = |i: Option<usize>| i.and_then(|i| ls.get(i)).copied().unwrap_or(0.0);
        for (l, own) in ls.iter().enumerate() {
            let near = at(l.checked_sub(1)).max(at(Some(l + 1)));
            let far = at(l.checked_sub(2)).max(at(Some(l + 2)));
            let v = own + NEIGHBOUR * near + NEIGHBOUR_2 * far;
            if v > 0.0 {
                values.push((v + MEMORY_PRIOR * relevance, (pos, l)));
            }
        }
    }
    values.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    let mut parts: Vec<Option<Part>> = vec![None; records.len()];
    let mut used = 0usize;
    for (_, (pos, l)) in values {
        if used >= room {
            break;
        }
        let r = order[pos];
        let b = &bodies[r];
        let mut shown = match &parts[r] {
            Some(Part::Whole) => continue,
            Some(Part::Lines(s)) => s.clone(),
            None => Vec::new(),
        };
        let before = if shown.is_empty() {
            0
        } else {
            b.cost(&shown).0
        };
        if shown.is_empty() && (b.whole as f64) <= short_cap && used + b.whole <= room {
            used += b.whole;
            parts[r] = Some(Part::Whole);
            continue;
        }
        let at = shown.binary_search(&l).unwrap_or_else(|e| e);
        shown.insert(at, l);
        let (after, is_whole) = b.cost(&shown);
        if used - before + after <= room {
            used = used - before + after;
            parts[r] = Some(if is_whole {
                Part::Whole
            } else {
                Part::Lines(shown)
            });
        }
    }
    for &r in order {
        if parts[r].is_none() && used + bodies[r].whole <= room {
            used += bodies[r].whole;
            parts[r] = Some(Part::Whole);
        }
    }
    order
        .iter()
        .filter_map(|&r| parts[r].take().map(|p| (r, p)))
        .map(|(r, p)| match p {
            Part::Lines(l) if l.len() == bodies[r].lines.len() => (r, Part::Whole),
            p => (r, p),
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
        // Once no section could fit, the rest need not be measured (10,000 memories).
        if budget.saturating_sub(used) < MIN_SECTION {
            break;
        }
        let n = whole_len(c.record);
        if n <= budget - used {
            text.push_str(&whole(c.record));
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
    for (r, part) in plan(records, order, scores, room) {
        let rec = &records[r];
        memories.push(Included {
            key: rec.key.to_string(),
            excerpt: part != Part::Whole,
        });
        match part {
            Part::Whole => text.push_str(&whole(rec)),
            Part::Lines(l) => text.push_str(&Body::new(rec).excerpt(&l)),
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
    use crate::memory::index::tests::rec;

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

    fn now() -> DateTime<Utc> {
        "2026-01-02T00:00:00Z".parse().unwrap()
    }

    /// A memory of `n` filler lines, with `special` lines replaced.
    fn long(key: &str, n: usize, special: &[(usize, &str)]) -> Record {
        let mut r = rec(key, "user", key, "d", "2026-01-01");
        r.body = (0..n)
            .map(|i| match special.iter().find(|(at, _)| *at == i) {
                Some((_, t)) => t.to_string(),
                None => format!("[{key}:{i}] Bo: filler words about nothing much, line {i}"),
            })
            .collect::<Vec<_>>()
            .join("\n");
        r
    }

    #[test]
    fn query_takes_the_best_lines_of_every_memory() {
        // spec/ranking.md#query-aware-context-measured-on-locomo
        let rs = vec![
            long("a", 40, &[(10, "[a:10] Ana: my cello teacher is strict")]),
            long("b", 40, &[(30, "[b:30] Ana: sold the old cello today")]),
            long("c", 40, &[]),
        ];
        let p = Prepared::new(rs, vec![], now());
        let b = p.block(300, Some("Ana's cello"));
        assert!(b.text.contains("[a:10] Ana: my cello teacher is strict\n"));
        assert!(b.text.contains("[b:30] Ana: sold the old cello today\n"));
        assert_eq!(
            b.memories,
            vec![
                Included {
                    key: "a".into(),
                    excerpt: true
                },
                Included {
                    key: "b".into(),
                    excerpt: true
                }
            ]
        );
        // Each excerpt is marked: `…` where lines are left out, a footer with the key.
        assert!(b.text.contains("\n\n…\n[a:"));
        assert!(b.text.contains("; the whole memory is `a`]\n"));
        assert!(b.text.contains("; the whole memory is `b`]\n"));
        assert!(b.text.chars().count() <= 300 * 4);
    }

    #[test]
    fn neighbours_of_a_matching_line_come_with_it() {
        let rs = vec![long(
            "a",
            40,
            &[
                (20, "[a:20] Bo: how did the cello recital go?"),
                (21, "[a:21] Ana: I played Bach and nobody coughed"),
            ],
        )];
        let p = Prepared::new(rs, vec![], now());
        let b = p.block(120, Some("cello recital"));
        assert!(
            b.text
                .contains("[a:20] Bo: how did the cello recital go?\n[a:21] Ana: I played")
        );
        assert!(!b.text.contains("[a:5]"), "{}", b.text);
    }

    #[test]
    fn short_relevant_memories_go_in_whole() {
        let mut short = rec("user_music", "user", "Music", "instruments", "2026-01-01");
        short.body = "Plays the cello.\nPractises on Sundays.\nWants a new bow.".into();
        let rs = vec![short, long("log", 60, &[(7, "[log:7] Ana: cello day")])];
        let p = Prepared::new(rs, vec![], now());
        let b = p.block(400, Some("cello"));
        assert!(
            b.text
                .contains("Plays the cello.\nPractises on Sundays.\nWants a new bow.\n")
        );
        assert!(b.memories.contains(&Included {
            key: "user_music".into(),
            excerpt: false
        }));
        assert!(b.memories.contains(&Included {
            key: "log".into(),
            excerpt: true
        }));
    }

    #[test]
    fn query_blocks_never_exceed_the_budget() {
        let rs = vec![
            long("a", 50, &[(3, "cello é😀 cello"), (4, "cello")]),
            long("b", 5, &[(1, "cello")]),
            long("c", 200, &[(199, "cello at the very end")]),
        ];
        let events: Vec<Event> = (0..30)
            .map(|i| {
                let mut f = serde_json::Map::new();
                f.insert("i".into(), i.into());
                Event::new(now(), "e", f).unwrap()
            })
            .collect();
        let p = Prepared::new(rs, events, now());
        let index_chars = p.block(1, None).text.chars().count();
        for max in [1, 30, 40, 50, 64, 100, 128, 200, 333, 512, 1000, 5000] {
            for q in ["cello", "the very end", "nothing matches"] {
                let b = p.block(max, Some(q));
                let n = b.text.chars().count();
                assert!(n <= (max * 4).max(index_chars), "max {max} {q}: {n}");
                assert_eq!(b.tokens, estimate_tokens(&b.text));
            }
        }
    }

    #[test]
    fn a_blank_query_is_no_query() {
        let rs = vec![long("a", 5, &[]), long("b", 3, &[])];
        let p = Prepared::new(rs, vec![], now());
        assert_eq!(p.block(100, Some("  ")), p.block(100, None));
    }

    #[test]
    fn whole_len_is_the_length_of_whole() {
        for body in ["", "x", "é😀\nline", "a\n\nb"] {
            for name in ["N", "Long name with ünïcode"] {
                let mut r = rec("k", "user", name, "d", "2026-01-01");
                r.body = body.into();
                assert_eq!(whole_len(&r), whole(&r).chars().count());
                assert!(whole_len(&r) >= MIN_SECTION);
            }
        }
        let r = rec("x", "", "", "d", "2026-01-01");
        assert_eq!(whole_len(&r), MIN_SECTION);
    }
}
