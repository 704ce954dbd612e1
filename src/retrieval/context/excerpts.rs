//! Excerpts for a query: each line's value (its score, its neighbours', its memory's
//! relevance), lines taken best first, and the plan of which memories go in whole and
//! which as marked excerpts within the room given (spec/ranking.md#query-aware-context-measured-on-locomo).
//!
//! Must not score (the search module does) or lay out the index, state or timeline
//! (assembly does). Pure code.

use foldhash::{HashMap, HashMapExt};

use crate::memory::Record;
use crate::retrieval::context::cut;
use crate::retrieval::context::head::{Head, take_first};
use crate::retrieval::context::section::{MIN_SECTION, heading, heading_len, whole_len};
use crate::retrieval::hybrid::{self, Passages};
use crate::retrieval::search::{self, QueryScores};

/// Query-aware packing (spec/ranking.md#query-aware-context-measured-on-locomo): a
/// line's value is its own score plus this share of its memory's relevance (the
/// memory's topic counts). Its neighbours' scores no longer count: measured on the
/// three data sets, they helped LoCoMo only (spec/ranking.md#results-since-issue-29).
pub(super) const MEMORY_PRIOR: f64 = 1.0;
/// A relevant memory whose whole section is at most this many characters goes in
/// whole rather than as an excerpt.
pub(super) const SHORT_CHARS: usize = 1200;

/// The line that closes an excerpt: how many of the memory's lines it shows, and how
/// many of those are cut to their matching part (the heading above names the key).
fn excerpt_footer(shown: usize, total: usize, cut: usize) -> String {
    if cut == 0 {
        format!("[excerpt: {shown} of {total} lines]\n")
    } else {
        format!("[excerpt: {shown} of {total} lines, {cut} cut]\n")
    }
}

/// Marks a run of lines an excerpt leaves out.
const GAP: &str = "…\n";

/// A line an excerpt shows: whole, or cut to its matching part ([`cut::cut`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shown {
    pub(super) line: usize,
    /// The line as shown when it is cut, and its length in characters.
    pub(super) cut: Option<(String, usize)>,
}

impl Shown {
    fn whole(line: usize) -> Shown {
        Shown { line, cut: None }
    }
}

/// A memory's lines with their lengths in characters, as the excerpt planner sees them.
pub(super) struct Body<'a> {
    record: &'a Record,
    lines: Vec<&'a str>,
    chars: Vec<usize>,
    /// Characters of the memory's whole section.
    whole: usize,
    /// Characters of the heading.
    heading: usize,
}

impl<'a> Body<'a> {
    pub(super) fn new(record: &'a Record) -> Body<'a> {
        let lines: Vec<&str> = record.body.lines().collect();
        let chars = lines.iter().map(|l| l.chars().count()).collect();
        let heading = heading_len(record);
        let body = record.body.chars().count();
        Body {
            record,
            lines,
            chars,
            whole: heading + if body == 0 { 0 } else { body + 2 },
            heading,
        }
    }

    /// Characters of the excerpt showing the sorted lines `shown`: the heading, a
    /// blank line, `…` before each run of lines left out before a shown line, the
    /// shown lines, and the footer.
    fn excerpt_cost(&self, shown: &[Shown]) -> usize {
        let cut = shown.iter().filter(|s| s.cut.is_some()).count();
        let footer = excerpt_footer(shown.len(), self.lines.len(), cut);
        let mut c = self.heading + 1 + footer.chars().count();
        let mut prev: Option<usize> = None;
        for s in shown {
            let i = s.line;
            if prev.map_or(i > 0, |p| i > p + 1) {
                c += GAP.chars().count();
            }
            c += s.cut.as_ref().map_or(self.chars[i], |(_, n)| *n) + 1;
            prev = Some(i);
        }
        c
    }

    /// The cheaper of the excerpt showing `shown` and the whole memory, and whether
    /// that is the whole.
    fn cost(&self, shown: &[Shown]) -> (usize, bool) {
        if shown.len() == self.lines.len() && shown.iter().all(|s| s.cut.is_none()) {
            return (self.whole, true);
        }
        let e = self.excerpt_cost(shown);
        if self.whole <= e {
            (self.whole, true)
        } else {
            (e, false)
        }
    }

    /// Line `l` as the plan shows it: cut to `cap` characters when longer.
    fn shown(&self, l: usize, cap: usize, terms: &[(String, f64)]) -> Option<Shown> {
        if self.chars[l] <= cap {
            return Some(Shown::whole(l));
        }
        let c = cut::cut(self.lines[l], cap, terms)?;
        let n = c.chars().count();
        Some(Shown {
            line: l,
            cut: Some((c, n)),
        })
    }

    pub(super) fn excerpt(&self, shown: &[Shown]) -> String {
        let n = self.lines.len();
        let mut s = heading(self.record);
        s.push('\n');
        let mut prev: Option<usize> = None;
        for sh in shown {
            let i = sh.line;
            if prev.map_or(i > 0, |p| i > p + 1) {
                s.push_str(GAP);
            }
            s.push_str(sh.cut.as_ref().map_or(self.lines[i], |(c, _)| c.as_str()));
            s.push('\n');
            prev = Some(i);
        }
        let cut = shown.iter().filter(|s| s.cut.is_some()).count();
        s.push_str(&excerpt_footer(shown.len(), n, cut));
        debug_assert_eq!(s.chars().count(), self.excerpt_cost(shown));
        s
    }
}

/// What goes in for one memory: all of it, or some of its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Whole,
    Lines(Vec<Shown>),
}

/// Lines best first ([`search::best_key`]'s order, a line's memory known by its id in
/// the head: equal values go by the head's order of their memories), a sorted chunk
/// at a time: the best few thousand are selected and sorted, then four times as many
/// of the rest, and so on, so that a plan that fills after a few thousand lines never
/// orders the others. Yields (id in the head, line).
struct BestFirst<'h> {
    rest: Vec<u128>,
    chunk: std::vec::IntoIter<u128>,
    size: usize,
    head: &'h Head,
}

impl BestFirst<'_> {
    /// Lines in the first chunk.
    const FIRST: usize = 8192;

    fn new(keys: Vec<u128>, head: &Head) -> BestFirst<'_> {
        BestFirst {
            rest: keys,
            chunk: Vec::new().into_iter(),
            size: BestFirst::FIRST,
            head,
        }
    }

    /// The best `size` keys left (with a keyed head, and every other key of their
    /// least value), sorted.
    fn next_chunk(&mut self) -> Vec<u128> {
        // The greater key first.
        let mut chunk = take_first(&mut self.rest, self.size, |a, b| b.cmp(a));
        self.size = self.size.saturating_mul(4);
        let keyed = !self.head.ids_in_order();
        // In place: the rest is in no order.
        if let Some(least) = chunk.iter().map(|k| k >> 64).min().filter(|_| keyed) {
            let mut i = 0;
            while i < self.rest.len() {
                if self.rest[i] >> 64 == least {
                    chunk.push(self.rest.swap_remove(i));
                } else {
                    i += 1;
                }
            }
        }
        // Equal values by the head's order of their memories, then by line.
        chunk.sort_unstable_by(|a, b| b.cmp(a));
        let head = self.head;
        let runs = chunk.chunk_by_mut(|a, b| keyed && a >> 64 == b >> 64);
        for run in runs.filter(|r| r.len() > 1) {
            run.sort_unstable_by(|a, b| {
                let ((_, (ia, la)), (_, (ib, lb))) = (search::key_parts(*a), search::key_parts(*b));
                head.cmp(ia, ib).then(la.cmp(&lb))
            });
        }
        chunk
    }
}

impl Iterator for BestFirst<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let key = match self.chunk.next() {
            Some(k) => k,
            None => {
                self.chunk = self.next_chunk().into_iter();
                self.chunk.next()?
            }
        };
        Some(search::key_parts(key).1)
    }
}

/// Chooses, for a query, which memories go in whole and which lines of the others
/// go in as excerpts, within `room` characters. Returns the included memories (by
/// index into `records`) in `order`, each with its part.
///
/// Every line of a relevant memory gets a value (its score, its neighbours', its
/// memory's relevance); lines go in best first, a line longer than [`cut::LINE_CAP`]
/// cut to its matching part, each costing its characters plus what it adds to its
/// memory's excerpt (the heading and footer for the first line, a `…` marker for a
/// new run). A short relevant memory ([`SHORT_CHARS`]) goes in whole at its first
/// line. The first line that does not fit is cut to the room left (or left out when
/// not even [`cut::MIN_WINDOW`] characters of it fit) and the plan ends there: what
/// goes in at a budget is a prefix of the same sequence as at any larger one, so more
/// room never shows less (spec/ranking.md#query-aware-context-measured-on-locomo).
/// When every line with a value is in, the room left takes whole memories in
/// `order` up to the first that does not fit. With `passages`, the lines' values are
/// fused with the query's similarity to them ([`fused_line_keys`]).
pub(super) fn plan(
    records: &[Record],
    head: &Head,
    rest: impl Iterator<Item = usize>,
    scores: &QueryScores,
    passages: Option<&Passages>,
    room: usize,
) -> Vec<(usize, Part)> {
    // Passages are fused with ties by the memories' order: a keyed head is sorted.
    let sorted;
    let head = match (passages, head) {
        (Some(_), Head::Keyed(_)) => {
            sorted = Head::Sorted(head.sorted());
            &sorted
        }
        _ => head,
    };
    // Bodies are split into lines only for the memories the plan looks at.
    let mut bodies: HashMap<usize, Body<'_>> = HashMap::new();
    let keys = match (passages, head) {
        (Some(p), Head::Sorted(order)) => fused_line_keys(order, scores, p),
        _ => line_keys(head, scores),
    };
    // (memory, line) pairs are distinct, so the order is total: the lines are
    // visited in exactly the order of a full sort, and a plan that fills early sorts
    // little.
    let mut parts: HashMap<usize, Part> = HashMap::new();
    // The head's memories given a part, by id.
    let mut placed: Vec<usize> = Vec::new();
    let mut used = 0usize;
    let terms = &scores.terms;
    let mut ended = false;
    for (id, l) in BestFirst::new(keys, head) {
        let r = head.memory(id);
        let b = bodies.entry(r).or_insert_with(|| Body::new(&records[r]));
        let shown = match parts.get(&r) {
            Some(Part::Whole) => continue,
            Some(Part::Lines(s)) => s.clone(),
            None => Vec::new(),
        };
        let before = if shown.is_empty() {
            0
        } else {
            b.cost(&shown).0
        };
        // A short memory goes in whole; when it does not fit, its line is the last.
        let last = shown.is_empty() && b.whole <= SHORT_CHARS;
        if last && used + b.whole <= room {
            used += b.whole;
            parts.insert(r, Part::Whole);
            placed.push(id);
            continue;
        }
        let line = b
            .shown(l, cut::LINE_CAP, terms)
            .unwrap_or_else(|| Shown::whole(l));
        if let Some((after, with)) = fits(b, &shown, line, room - (used - before), terms) {
            used = used - before + after;
            parts.insert(r, with);
            placed.push(id);
            if !last {
                continue;
            }
        }
        ended = true;
        break;
    }
    let mut after = Vec::new();
    if !ended {
        after = fill_whole(
            records,
            head,
            rest,
            &bodies,
            &mut parts,
            &mut placed,
            used,
            room,
        );
    }
    placed.sort_unstable_by(|&a, &b| head.cmp(a, b));
    placed.dedup();
    placed
        .iter()
        .map(|&id| head.memory(id))
        .chain(after)
        .filter_map(|r| parts.remove(&r).map(|p| (r, p)))
        .collect()
}

/// The memory's part with `line` added to `shown`, and its cost, when that costs at
/// most `room`; else with the line cut to what `room` leaves, when that is at least
/// [`cut::MIN_WINDOW`] characters of text; else `None`.
fn fits(
    b: &Body<'_>,
    shown: &[Shown],
    line: Shown,
    room: usize,
    terms: &[(String, f64)],
) -> Option<(usize, Part)> {
    let l = line.line;
    let mut len = line.cut.as_ref().map_or(b.chars[l], |(_, n)| *n);
    let mut line = line;
    // A cut line's footer says so: at most two tries to take that into account.
    for _ in 0..3 {
        let mut with = shown.to_vec();
        let at = with.partition_point(|s| s.line < l);
        with.insert(at, line);
        let (after, is_whole) = b.cost(&with);
        if after <= room {
            return Some((
                after,
                if is_whole {
                    Part::Whole
                } else {
                    Part::Lines(with)
                },
            ));
        }
        len = len.checked_sub(after - room)?;
        line = b.shown(l, len, terms)?;
        // Shorter than its own length, a line is always cut.
        line.cut.as_ref()?;
    }
    None
}

/// Each line of a relevant memory, memories in `order`: the memory's position there,
/// the memory, the line, and the line's keyword value, its own score and its memory's
/// relevance weighed by the query's strength (0 for a line without a query term).
fn relevant_lines<'s>(
    order: &'s [usize],
    scores: &'s QueryScores,
) -> impl Iterator<Item = (usize, usize, usize, f64)> + 's {
    order
        .iter()
        .enumerate()
        .filter_map(|(pos, &r)| Some((pos, r, memory_prior(scores, r)?)))
        .flat_map(move |(pos, r, prior)| {
            scores
                .lines
                .of(r)
                .iter()
                .enumerate()
                .map(move |(l, &own)| (pos, r, l, line_value(own, prior)))
        })
}

/// What memory `r`'s relevance adds to each of its lines with a query term, when it
/// is relevant (`None` otherwise: its lines have no value).
fn memory_prior(scores: &QueryScores, r: usize) -> Option<f64> {
    (scores.memory[r] > 0.0).then(|| MEMORY_PRIOR * scores.prior * scores.memory[r])
}

/// A line's keyword value: its own score and its memory's prior (0 for a line
/// without a query term).
fn line_value(own: f64, prior: f64) -> f64 {
    if own > 0.0 { own + prior } else { 0.0 }
}

/// The keys of the lines of relevant memories with a query term
/// ([`search::best_key`] of the line's keyword value ([`relevant_lines`]), its
/// memory's position in `order` and the line).
///
/// The memories are walked in their own order, not in `order`: each one's line
/// scores then follow the last one's in memory, where a walk in `order` would jump
/// about all the lines of the store for every memory. The keys are the same, and
/// their order is total ([`BestFirst`] visits them sorted), so where each is made
/// does not matter.
fn line_keys(head: &Head, scores: &QueryScores) -> Vec<u128> {
    let mut keys: Vec<u128> = Vec::with_capacity(scores.lines.scored_at_most());
    let mut push = |r: usize, pos: usize| {
        if let Some(prior) = memory_prior(scores, r) {
            for (l, &own) in scores.lines.of(r).iter().enumerate() {
                let value = line_value(own, prior);
                if value > 0.0 {
                    keys.push(search::best_key(value, pos, l));
                }
            }
        }
    };
    match head {
        Head::Sorted(order) => {
            const ABSENT: usize = usize::MAX;
            let mut pos_of = vec![ABSENT; scores.memory.len()];
            for (pos, &r) in order.iter().enumerate() {
                pos_of[r] = pos;
            }
            for (r, &pos) in pos_of.iter().enumerate() {
                if pos != ABSENT {
                    push(r, pos);
                }
            }
        }
        // Listed in the store's order already.
        Head::Keyed(hits) => {
            for (id, &(_, r)) in hits.iter().enumerate() {
                push(r, id);
            }
        }
    }
    keys
}

/// [`line_keys`] fused with the query's similarity to the lines that have a vector
/// (spec/ranking.md#passages): the lines of relevant memories that have a query term
/// ranked by their keyword value, those with a vector ranked by similarity, a line
/// without a query term a candidate when its similarity reaches the floor; the two
/// rankings fused as memories are ([`hybrid::fuse`]).
fn fused_line_keys(order: &[usize], scores: &QueryScores, passages: &Passages) -> Vec<u128> {
    let mut keyword: Vec<f64> = Vec::new();
    let mut similarity: Vec<Option<f32>> = Vec::new();
    let mut place: Vec<(usize, usize)> = Vec::new();
    for (pos, r, l, value) in relevant_lines(order, scores) {
        let sim = passages.of(r, l);
        if value > 0.0 || sim.is_some() {
            keyword.push(value);
            similarity.push(sim);
            place.push((pos, l));
        }
    }
    hybrid::fuse(&keyword, &similarity, passages.floor)
        .into_iter()
        .zip(place)
        .filter(|(v, _)| *v > 0.0)
        .map(|(v, (pos, l))| search::best_key(v, pos, l))
        .collect()
}

/// Room left after the lines takes whole memories in the head's order, then `rest`,
/// as without a query: each memory not in yet whose whole section fits in what is
/// left of `room` (from `used`) goes in whole, up to the first that does not fit (so
/// that more room never shows less). The head's memories it puts in are added to
/// `placed` (by id); returns the memories of `rest` it looked at, in order.
#[allow(clippy::too_many_arguments)]
fn fill_whole(
    records: &[Record],
    head: &Head,
    rest: impl Iterator<Item = usize>,
    bodies: &HashMap<usize, Body<'_>>,
    parts: &mut HashMap<usize, Part>,
    placed: &mut Vec<usize>,
    mut used: usize,
    room: usize,
) -> Vec<usize> {
    let mut seen = Vec::new();
    let from_head = head.in_order().map(|(id, r)| (r, Some(id)));
    for (r, id) in from_head.chain(rest.map(|r| (r, None))) {
        if used + MIN_SECTION > room {
            break;
        }
        if id.is_none() {
            seen.push(r);
        }
        if let std::collections::hash_map::Entry::Vacant(part) = parts.entry(r) {
            let whole = bodies
                .get(&r)
                .map_or_else(|| whole_len(&records[r]), |b| b.whole);
            if used + whole > room {
                break;
            }
            used += whole;
            part.insert(Part::Whole);
            placed.extend(id);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::index::tests::rec;
    use crate::retrieval::context::tests::long;
    use crate::retrieval::context::tests::now;
    use crate::retrieval::context::{Included, Prepared};
    use crate::retrieval::search::Corpus;

    /// With a keyed head, lines of equal value go by their memories' keys, also where
    /// a tie straddles the first chunk's edge (20,000 lines of three values).
    #[test]
    fn best_first_orders_ties_by_a_keyed_head_across_chunks() {
        use std::cmp::Reverse;
        let keyed = |id: usize| {
            (
                (Reverse(id as u64 * 7919 % 1000), Reverse((0, 0)), id as u32),
                id,
            )
        };
        let head = Head::Keyed((0..500).map(keyed).collect());
        let mut want: Vec<(f64, (usize, usize))> = (0..20_000)
            .map(|i| ([0.5, 0.25, 0.125][i % 3], (i % 500, i / 500)))
            .collect();
        let keys = want
            .iter()
            .map(|&(v, (id, l))| search::best_key(v, id, l))
            .collect();
        want.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then(head.cmp(a.1.0, b.1.0))
                .then(a.1.1.cmp(&b.1.1))
        });
        let got: Vec<(usize, usize)> = BestFirst::new(keys, &head).collect();
        assert_eq!(got, want.into_iter().map(|(_, p)| p).collect::<Vec<_>>());
    }

    #[test]
    fn best_first_is_the_order_of_a_full_sort() {
        // Sizes around and past the chunks (8,192, then 32,768 more), with ties in
        // value broken by place.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for n in [0, 1, 5, 8191, 8192, 8193, 45_000] {
            let lines: Vec<(f64, (usize, usize))> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (
                        (x % 50) as f64 / 7.0 + 1e-9,
                        (((x >> 8) % 1000) as usize, i),
                    )
                })
                .collect();
            // The higher value first, then the earlier place.
            let mut want = lines.clone();
            want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let keys = lines
                .iter()
                .map(|&(v, (p, l))| search::best_key(v, p, l))
                .collect();
            let got: Vec<(usize, usize)> =
                BestFirst::new(keys, &Head::Sorted(Vec::new())).collect();
            assert_eq!(got.len(), n);
            assert!(got.iter().zip(&want).all(|(g, w)| *g == w.1), "n = {n}");
        }
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
        // Each excerpt is marked: `…` where lines are left out, and a footer saying
        // how many lines it shows, after a heading that names the key.
        assert!(b.text.contains("\n\n…\n[a:"));
        for key in ["a", "b"] {
            let at = b.text.find(&format!("(key: {key}, type:")).unwrap();
            let section = b.text[at..].split("\n## ").next().unwrap();
            let footer = section.lines().last().unwrap();
            assert!(
                footer.starts_with("[excerpt: ") && footer.ends_with(" of 40 lines]"),
                "{section}"
            );
        }
        assert!(b.text.chars().count() <= 300 * 4);
    }

    #[test]
    fn only_lines_with_a_query_term_are_chosen() {
        // A reply next to a matching line comes only when it matches too
        // (spec/ranking.md#results-since-issue-29: neighbours helped LoCoMo only).
        let rs = vec![long(
            "a",
            40,
            &[
                (20, "[a:20] Di: how did the cello recital go?"),
                (21, "[a:21] Cy: I played Bach and nobody coughed"),
                (30, "[a:30] Ana: the recital hall was cold"),
            ],
        )];
        let p = Prepared::new(rs, vec![], now());
        let b = p.block(120, Some("cello recital"));
        assert!(
            b.text
                .contains("[a:20] Di: how did the cello recital go?\n")
        );
        assert!(b.text.contains("[a:30] Ana: the recital hall was cold\n"));
        assert!(!b.text.contains("[a:21]"), "{}", b.text);
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
    fn the_memory_prior_weighs_as_the_query_match_is_strong() {
        // spec/ranking.md#query-aware-context-measured-on-locomo, step 4: with the
        // prior at full weight the better memory's weaker line goes first; weighed
        // by a weak match's strength, the better line does.
        let mut records: Vec<Record> = (0..2)
            .map(|i| {
                rec(
                    &format!("s{i}"),
                    "user",
                    &format!("Session {i}"),
                    "",
                    "2026-01-01",
                )
            })
            .collect();
        records[0].body =
            "Ana: the garden is large and green and full of old trees and weeds\nAna: one two"
                .into();
        records[1].body = "Ana: our parrot\nAna: three four".into();
        let corpus = Corpus::new(&records);
        let mut scores = corpus.score(&records, "parrot garden");
        let (a, b) = (scores.lines.of(0)[0], scores.lines.of(1)[0]);
        assert_eq!(b, 1.0, "the short line is the best");
        assert!(a > 0.31 && a < 0.93, "{a}");
        scores.memory = vec![0.7, 0.01];
        // Room for one of the two sections, not both.
        let mut first = |prior: f64| {
            scores.prior = prior;
            let p = plan(
                &records,
                &Head::Sorted(vec![0, 1]),
                std::iter::empty(),
                &scores,
                None,
                160,
            );
            assert_eq!(p.len(), 1, "{p:?}");
            p[0].0
        };
        assert_eq!(first(1.0), 0);
        assert_eq!(first(0.1), 1);
    }

    /// The line keys made memory by memory in the store's order are the keys of
    /// `relevant_lines` (a walk in `order`), for an order that skips memories and
    /// one with a memory of no relevance.
    #[test]
    fn line_keys_are_the_keys_of_the_relevant_lines() {
        let rs = vec![
            long(
                "a",
                8,
                &[
                    (2, "[a:2] Ana: the cello lesson"),
                    (5, "[a:5] cello strings"),
                ],
            ),
            long("b", 6, &[(3, "[b:3] Cy: a cello for sale")]),
            long(
                "c",
                9,
                &[(1, "[c:1] cello"), (8, "[c:8] Dan: the cello again")],
            ),
            long("d", 4, &[(0, "[d:0] Eve: scales")]),
        ];
        let corpus = Corpus::new(&rs);
        let mut scores = corpus.score(&rs, "cello lesson");
        scores.memory[1] = 0.0;
        for order in [vec![2, 0, 1, 3], vec![3, 2], vec![1, 0], vec![]] {
            let mut want: Vec<u128> = relevant_lines(&order, &scores)
                .filter(|&(_, _, _, value)| value > 0.0)
                .map(|(pos, _, l, value)| search::best_key(value, pos, l))
                .collect();
            let mut got = line_keys(&Head::Sorted(order.clone()), &scores);
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{order:?}");
        }
        assert!(!line_keys(&Head::Sorted(vec![2, 0]), &scores).is_empty());
    }

    // spec/ranking.md#passages: with the lines' similarities, a line without a query
    // term is a candidate when it reaches the floor, and the two rankings are fused;
    // a memory whose lines were not compared keeps its keyword keys.
    #[test]
    fn passages_add_similar_lines_and_fuse_the_rankings() {
        let rs = vec![
            long(
                "a",
                10,
                &[
                    (2, "[a:2] Ana: the cello lesson"),
                    (5, "[a:5] Eve: she practised scales for an hour"),
                    (7, "[a:7] Dan: cello cello strings"),
                ],
            ),
            long("b", 10, &[(3, "[b:3] Cy: a cello for sale")]),
        ];
        let corpus = Corpus::new(&rs);
        let scores = corpus.score(&rs, "cello");
        let order = [0, 1];
        let sorted = Head::Sorted(order.to_vec());
        let places =
            |keys: Vec<u128>| -> Vec<(usize, usize)> { BestFirst::new(keys, &sorted).collect() };
        let keyword = places(line_keys(&sorted, &scores));
        assert!(!keyword.contains(&(0, 5)), "no query term: {keyword:?}");
        let mut sims = vec![None; 10];
        sims[2] = Some(0.95);
        sims[5] = Some(0.9);
        sims[7] = Some(0.1);
        sims[8] = Some(0.29);
        let passages = Passages {
            sims: vec![Some(sims), None],
            floor: 0.3,
        };
        let fused = places(fused_line_keys(&order, &scores, &passages));
        // The scales line is in (above the floor), the line below it is not, and
        // every keyword candidate stays one.
        assert!(fused.contains(&(0, 5)), "{fused:?}");
        assert!(!fused.contains(&(0, 8)), "{fused:?}");
        assert_eq!(fused.len(), keyword.len() + 1);
        // Line 2 of a, second by keywords and first by similarity, goes before
        // line 7, first by keywords and last by similarity; the scales line, in one
        // list only, after both.
        assert_eq!(fused[..3], [(0, 2), (0, 7), (0, 5)], "{fused:?}");
        // No similarity at all: the keyword keys' order.
        let none = Passages {
            sims: vec![None, None],
            floor: 0.3,
        };
        assert_eq!(places(fused_line_keys(&order, &scores, &none)), keyword);
    }
}
