//! Packing the block within its budget: scoring the memories and lines for a query
//! (while MEMORY.md is found, for `build_while`), the order of the memories, then
//! the index section, the state, the memories (whole or planned) and the timeline,
//! never past `max_tokens × 4` characters.
//!
//! Must not choose lines (the excerpt planner does) or lay out the index section
//! (the index section does). Pure code: no IO, no clock.

use chrono::{DateTime, Utc};

use crate::memory::Record;
use crate::memory::timeline::Event;
use crate::retrieval::context::excerpts::plan;
use crate::retrieval::context::excerpts::{Body, Part};
use crate::retrieval::context::head::{Head, Order, Rest};
use crate::retrieval::context::index_section::{index_room, partial_index, whole_index};
use crate::retrieval::context::section::{MIN_SECTION, whole, whole_len};
use crate::retrieval::context::{
    Block, INDEX_SHARE, INDEX_SHARE_QUERY, Included, Parts, STATE_SHARE, estimate_tokens,
};
use crate::retrieval::filter::{Filter, Lifecycle};
use crate::retrieval::hybrid::{Fused, Passages};
use crate::retrieval::rank;
use crate::retrieval::rank::standing::Standing;
use crate::retrieval::search::{self, Corpus, QueryScores};
use crate::retrieval::state;

/// The context block of
/// [`Prepared::block_filtered`](crate::retrieval::context::Prepared::block_filtered),
/// from borrowed parts. A query
/// without `parts.corpus` gets one computed for this call. `relevance`, when given,
/// is the memories' relevance to the query (the hybrid relevance of
/// spec/ranking.md#hybrid-recall, one value per record) used instead of the keyword
/// one; the line scores stay the keyword ones, fused with the query's similarity to
/// the lines when it has passages (spec/ranking.md#passages). `None` is the keyword
/// block.
pub(crate) fn build_with(
    parts: &Parts<'_>,
    max_tokens: usize,
    query: Option<&str>,
    filter: &Filter,
    relevance: Option<Fused>,
) -> Block {
    type Ready = fn(&[Record]) -> Result<String, std::convert::Infallible>;
    match build_inner(parts, None::<Ready>, max_tokens, query, filter, relevance) {
        Ok(b) => b,
        Err(e) => match e {},
    }
}

/// [`build_with`] with MEMORY.md still to be found: `index` (given the records)
/// returns its text, on a thread of its own while the memories and lines are scored;
/// `parts.index_text` is not used. A one-shot call renders and checks MEMORY.md
/// meanwhile. The block is [`build_with`]'s for the text `index` returns; its error
/// is returned as is.
pub(crate) fn build_while<E: Send>(
    parts: &Parts<'_>,
    index: impl FnOnce(&[Record]) -> Result<String, E> + Send,
    max_tokens: usize,
    query: Option<&str>,
    filter: &Filter,
    relevance: Option<Fused>,
) -> Result<Block, E> {
    build_inner(parts, Some(index), max_tokens, query, filter, relevance)
}

/// How the memories go in: whole in order, or planned for a query.
enum Pack {
    Whole(Vec<usize>),
    Plan(Head, QueryScores, Option<Passages>),
}

fn build_inner<E: Send>(
    parts: &Parts<'_>,
    index: Option<impl FnOnce(&[Record]) -> Result<String, E> + Send>,
    max_tokens: usize,
    query: Option<&str>,
    filter: &Filter,
    relevance: Option<Fused>,
) -> Result<Block, E> {
    let records = parts.records;
    let life = Lifecycle::of(records, parts.now.date_naive());
    let marked = marked(records, filter, &life);
    let packed: &[Record] = marked.as_deref().unwrap_or(records);
    let q = query.filter(|q| !q.trim().is_empty());
    let owned;
    let corpus = match (q, parts.corpus) {
        (None, _) => None,
        (Some(_), Some(c)) => Some(c),
        (Some(_), None) => {
            owned = Corpus::new(records);
            Some(&owned)
        }
    };
    let score = || order_and_pack(parts, q.zip(corpus), filter, &life, relevance);
    // MEMORY.md, when it is still to be found, while the scoring runs.
    let ((order, pack, admitted), found) = match index {
        None => (score(), None),
        Some(index) => std::thread::scope(|s| {
            let index = s.spawn(|| index(records));
            let scored = score();
            match index.join() {
                Ok(found) => (scored, Some(found)),
                Err(e) => std::panic::resume_unwind(e),
            }
        }),
    };
    let found = found.transpose()?;
    let index_text = found.as_deref().unwrap_or(parts.index_text);
    // Whether a memory may be packed: from the records' pass when the order is full,
    // else judged for each memory as the order reaches it.
    let admit = |i: usize| match &admitted {
        Some(a) => a[i],
        None => admits(&records[i], filter, &life),
    };
    Ok(pack_block(
        index_text,
        packed,
        &order,
        pack,
        &admit,
        parts.events,
        max_tokens,
    ))
}

/// Which memories may be packed, by index into `records`: state entries have their
/// own section right after the index; superseded and expired memories only when the
/// filter includes them. Judged in the records' order (a large store's records are
/// visited in memory order, not in rank order).
fn admissible(records: &[Record], filter: &Filter, life: &Lifecycle) -> Vec<bool> {
    records.iter().map(|r| admits(r, filter, life)).collect()
}

/// Whether memory `r` may be packed ([`admissible`]).
fn admits(r: &Record, filter: &Filter, life: &Lifecycle) -> bool {
    r.meta.kind != crate::memory::Kind::State && filter.admits(r, life)
}

/// The records as packed when the filter includes a superseded or expired memory
/// that is there: each such memory is packed under a marked heading
/// (`## Name [superseded by k] (key: …)`), its name carrying the marker. `None`
/// when no record needs a marker (the records are packed as they are).
fn marked(records: &[Record], filter: &Filter, life: &Lifecycle) -> Option<Vec<Record>> {
    let any_marked = (filter.include_superseded || filter.include_expired)
        && records.iter().any(|r| life.mark(r).is_some());
    any_marked.then(|| {
        records
            .iter()
            .map(|r| match life.mark(r) {
                Some(m) => {
                    let mut r = r.clone();
                    r.meta.name = format!("{} [{m}]", r.meta.name);
                    r
                }
                None => r.clone(),
            })
            .collect()
    })
}

/// The memories' order and how they go in: without a query (or corpus), the rank
/// order, whole; with one, hits first, with the scores the plan needs. `relevance`,
/// when it has one value per record, is used instead of the keyword relevance. With
/// a standing that holds, the hits keep the keys that order them and the rest is
/// left to the standing (the third part is then `None`: admission is judged memory
/// by memory); else every memory is scored and sorted, and the third part says which
/// may be packed.
fn order_and_pack<'a>(
    parts: &Parts<'a>,
    query: Option<(&str, &Corpus)>,
    filter: &Filter,
    life: &Lifecycle,
    relevance: Option<Fused>,
) -> (Order<'a>, Pack, Option<Vec<bool>>) {
    let records = parts.records;
    let standing = parts.standing.filter(|s| s.holds(records, parts.now));
    let Some((q, corpus)) = query else {
        if let Some(rest) = Rest::of(parts, standing, Vec::new()) {
            let order = Order {
                head: Head::Sorted(Vec::new()),
                rest: Some(rest),
            };
            return (order, Pack::Whole(Vec::new()), None);
        }
        let order: Vec<usize> = rank::order(records, parts.now)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        let admitted = admissible(records, filter, life);
        let candidates = order.iter().copied().filter(|&i| admitted[i]).collect();
        let order = Order {
            head: Head::Sorted(order),
            rest: None,
        };
        return (order, Pack::Whole(candidates), Some(admitted));
    };
    // The lines are scored while the memories are ranked (on two threads for a
    // large store: neither needs the other).
    let (relevance, passages) = match relevance.filter(|r| r.memory.len() == records.len()) {
        Some(Fused { memory, passages }) => (Some(memory), passages),
        None => (None, None),
    };
    let rank = || {
        let (memory, prior) = match relevance {
            Some(r) => (r, 1.0),
            None => corpus.relevance_and_strength(records, q),
        };
        let ordered = query_orders(parts, standing, &memory, filter, life);
        ((memory, prior), ordered)
    };
    let (((memory, prior), (order, candidates, admitted)), lines) =
        if records.len() >= PARALLEL_RECORDS {
            std::thread::scope(|s| {
                let lines = s.spawn(|| corpus.line_relevance(q));
                let ranked = rank();
                match lines.join() {
                    Ok(lines) => (ranked, lines),
                    Err(e) => std::panic::resume_unwind(e),
                }
            })
        } else {
            (rank(), corpus.line_relevance(q))
        };
    (
        order,
        Pack::Plan(
            candidates,
            QueryScores {
                memory,
                prior,
                lines,
                terms: corpus.query_weights(q),
            },
            passages,
        ),
        admitted,
    )
}

/// The order with a query, the memories it may pack, and which those are: from a
/// kept standing, the hits with the keys that order them and the rest left to it
/// (admission is then judged memory by memory: `None`); else every memory scored
/// and sorted.
fn query_orders<'a>(
    parts: &Parts<'a>,
    standing: Option<&'a Standing>,
    memory: &[f64],
    filter: &Filter,
    life: &Lifecycle,
) -> (Order<'a>, Head, Option<Vec<bool>>) {
    let records = parts.records;
    let kept = standing.and_then(|st| hits_first(records, memory, parts.now, st));
    if let Some((hits, head)) = kept {
        let candidates = hits
            .iter()
            .filter(|(_, i)| admits(&records[*i], filter, life))
            .copied()
            .collect();
        let order = Order {
            head: Head::Keyed(hits),
            rest: Rest::of(parts, standing, head),
        };
        return (order, Head::Keyed(candidates), None);
    }
    let order = query_order(records, memory, parts.now);
    let admitted = admissible(records, filter, life);
    let candidates = order.iter().copied().filter(|&i| admitted[i]).collect();
    let order = Order {
        head: Head::Sorted(order),
        rest: None,
    };
    (order, Head::Sorted(candidates), Some(admitted))
}

/// The block of the memories `pack` says, with MEMORY.md's `index_text`: whole
/// memories under the query-less index share, planned ones under the query's. The
/// memories `pack` lists come first, then those of `order`'s rest that `admit`
/// admits.
fn pack_block(
    index_text: &str,
    packed: &[Record],
    order: &Order<'_>,
    pack: Pack,
    admit: &dyn Fn(usize) -> bool,
    events: &[Event],
    max_tokens: usize,
) -> Block {
    let rest = || order.rest.iter().flat_map(|r| r.iter(admit));
    match pack {
        Pack::Whole(candidates) => assemble(
            index_text,
            packed,
            order.iter(),
            INDEX_SHARE,
            events,
            max_tokens,
            |room| pack_whole(packed, candidates.iter().copied().chain(rest()), room),
        ),
        Pack::Plan(candidates, scores, passages) => assemble(
            index_text,
            packed,
            order.iter(),
            INDEX_SHARE_QUERY,
            events,
            max_tokens,
            |room| {
                plan(
                    packed,
                    &candidates,
                    rest(),
                    &scores,
                    passages.as_ref(),
                    room,
                )
            },
        ),
    }
}

/// Memories from which a query's lines are scored on a thread of their own.
const PARALLEL_RECORDS: usize = 2_000;

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
    // Hits first, each part in `rank::compare`'s order.
    let (hits, rest): (Vec<_>, Vec<_>) = (0..records.len())
        .map(|i| (i, blended[i]))
        .partition(|&(_, b)| b > 0.0);
    let rest = rest.into_iter().map(|(i, _)| (i, base[i])).collect();
    let [hits, rest] = rank::sorted(records, [hits, rest]);
    hits.into_iter().chain(rest).map(|(i, _)| i).collect()
}

/// A memory with the key that orders it ([`rank::sort_key`]).
type Keyed = (rank::SortKey, usize);

/// [`query_order`]'s hits with the keys that order them (a kept standing's key
/// order ends them), in the store's order, and the hits as a bit each (the
/// standing gives the rest). `None` when a relevant memory's blend is not above 0
/// (only the full order places it among the rest).
fn hits_first(
    records: &[Record],
    relevance: &[f64],
    now: DateTime<Utc>,
    standing: &Standing,
) -> Option<(Vec<Keyed>, Vec<u64>)> {
    let mut hits = Vec::new();
    let mut bits = vec![0u64; records.len().div_ceil(64)];
    for (i, &rel) in relevance.iter().enumerate() {
        if rel > 0.0 {
            let m = &records[i].meta;
            let b = search::blend(rel, rank::salience(m), rank::recency(m, now));
            if b.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                return None;
            }
            let key = rank::sort_key(&records[i], b, standing.key_ranks()[i]);
            hits.push((key, i));
            bits[i / 64] |= 1 << (i % 64);
        }
    }
    Some((hits, bits))
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

/// The memories packed for a block: (index into `records`, part), in output order.
type Packed = Vec<(usize, Part)>;

/// Without a query: memories whole, in the order given, skipping any that does not
/// fit in `room` characters and trying the next.
pub(super) fn pack_whole(
    records: &[Record],
    candidates: impl Iterator<Item = usize>,
    room: usize,
) -> Packed {
    let mut used = 0usize;
    let mut out = Vec::new();
    for i in candidates {
        // Once no section could fit, the rest need not be measured (10,000 memories).
        if room.saturating_sub(used) < MIN_SECTION {
            break;
        }
        let n = whole_len(&records[i]);
        if n <= room - used {
            used += n;
            out.push((i, Part::Whole));
        }
    }
    out
}

/// Puts a block together (spec/ranking.md#budget): the index section, the memories
/// `pack` chooses for the room it is given, then the timeline in what is left.
///
/// MEMORY.md goes in whole when it fits in `share` of the budget, and the memories
/// get the rest. Otherwise the index section's room is reserved first, the memories
/// are packed into the rest, and the index section then shows the entries of the
/// packed memories, then the others in `order`, as many as fit in its room.
pub(super) fn assemble(
    index_text: &str,
    records: &[Record],
    order: impl Iterator<Item = usize>,
    share: f64,
    events: &[Event],
    max_tokens: usize,
    pack: impl FnOnce(usize) -> Packed,
) -> Block {
    let budget = max_tokens.saturating_mul(4);
    let share_chars = (budget as f64 * share).floor() as usize;
    let entries = state::state_entries(records);
    // The state section has at most its share, so that the memories' room grows with
    // the budget (spec/ranking.md#agent-state-in-the-block).
    let state_room = (budget as f64 * STATE_SHARE).floor() as usize;
    let (index, (state_text, state_shown), packed) = match whole_index(index_text, share_chars) {
        Some(ix) => {
            let room = budget - ix.text.chars().count();
            let st = state::state_part(records, &entries, room.min(state_room));
            let packed = pack(room - st.0.chars().count());
            (ix, st, packed)
        }
        None => {
            let index_room = index_room(records, share_chars, budget);
            let st = state::state_part(records, &entries, (budget - index_room).min(state_room));
            let packed = pack(budget - index_room - st.0.chars().count());
            let priority = packed.iter().map(|(i, _)| *i).chain(order);
            (partial_index(records, priority, index_room), st, packed)
        }
    };
    let index_chars = index.text.chars().count();
    let mut text = index.text;
    text.push_str(&state_text);
    let state_hidden = entries.len() - state_shown.len();
    let state = state_shown
        .into_iter()
        .map(|(key, excerpt)| Included { key, excerpt })
        .collect();
    let mut memories = Vec::new();
    for (r, part) in packed {
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
    // A compacted session's events up to its summary are left out; its `compacted`
    // event stays as the pointer to the summary (spec/ranking.md#budget).
    let compacted = state::compactions(records);
    let visible: Vec<Event>;
    let events = if compacted.is_empty() {
        events
    } else {
        visible = events
            .iter()
            .filter(|e| !state::hidden_by_compaction(e, &compacted))
            .cloned()
            .collect();
        &visible
    };
    let (tl, n_events) = timeline_part(events, budget.saturating_sub(used));
    text.push_str(&tl);
    debug_assert!(text.chars().count() <= budget);
    let tokens = estimate_tokens(&text);
    Block {
        text,
        memories,
        state,
        state_hidden,
        events: n_events,
        index_lines_cut: index.lines_cut,
        index_entries_hidden: index.entries_hidden,
        index_chars,
        tokens,
        max_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::index;
    use crate::memory::index::tests::rec;
    use crate::retrieval::context::Prepared;
    use crate::retrieval::context::tests::build;
    use crate::retrieval::context::tests::long;
    use crate::retrieval::context::tests::now;

    #[test]
    fn skips_what_does_not_fit_and_tries_the_next() {
        // spec/ranking.md#packing
        let mut big = rec("big", "user", "Big", "d", "2026-01-01");
        big.body = ("x".repeat(500)).into();
        let mut small = rec("small", "user", "Small", "d", "2026-01-01");
        small.body = "y".into();
        let rs = vec![big, small];
        let b = build("# Agent Memory\n", &rs, &[], 40);
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
    fn never_exceeds_the_budget() {
        // spec/ranking.md#budget
        let mut rs = Vec::new();
        for i in 0..30 {
            let mut r = rec(&format!("k{i}"), "user", "N", "d", "2026-01-01");
            r.body = ("é😀".repeat(i * 7)).into();
            rs.push(r);
        }
        let events: Vec<Event> = (0..50)
            .map(|i| {
                let mut f = serde_json::Map::new();
                f.insert("i".into(), i.into());
                Event::new("2026-01-01T00:00:00Z".parse().unwrap(), "e", f).unwrap()
            })
            .collect();
        let index = index::render(&rs);
        let b = build(&index, &rs, &events, 1);
        assert_eq!(b.text, "", "not even the title fits in 4 characters");
        assert_eq!(b.index_entries_hidden, 30);
        for max in [0, 4, 5, 10, 20, 50, 100, 300, 1000] {
            let b = build(&index, &rs, &events, max);
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
        for max in [1, 30, 40, 50, 64, 100, 128, 200, 333, 512, 1000, 5000] {
            for q in ["cello", "the very end", "nothing matches"] {
                let b = p.block(max, Some(q));
                let n = b.text.chars().count();
                assert!(n <= max * 4, "max {max} {q}: {n}");
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
}

/// A block built with a kept standing is the block built without one (every memory
/// scored and sorted), byte for byte: with and without a query, at every budget,
/// through filters, superseded, expired and state memories, and decays of every kind.
#[cfg(test)]
mod standing_tests {
    use chrono::Duration;
    use proptest::prelude::*;

    use super::*;
    use crate::memory::index::{self, tests::rec};
    use crate::memory::{Decay, Stamp};
    use crate::retrieval::context::tests::now;

    const WORDS: [&str; 12] = [
        "knee",
        "tempo",
        "physio",
        "football",
        "saturday",
        "argentina",
        "coffee",
        "oat",
        "milk",
        "train",
        "ride",
        "garden",
    ];

    /// (kind, tags/important, decay, minutes before now, body words, supersedes, expiry)
    type Spec = (u8, u8, u8, i64, Vec<(u8, u8)>, Option<u8>, bool);

    fn records(specs: &[Spec]) -> Vec<Record> {
        let now = now();
        specs
            .iter()
            .enumerate()
            .map(|(i, (kind, tags, decay, ago, body, sup, expired))| {
                let kind =
                    ["user", "feedback", "project", "reference", "state"][*kind as usize % 5];
                let key = format!("{kind}_{:02}", (i * 37) % 100);
                let mut r = rec(&key, kind, &format!("N{i}"), "d", "2026-01-01");
                r.meta.updated =
                    Stamp::parse(&(now - Duration::minutes(*ago)).to_rfc3339()).unwrap();
                r.meta.tags = (0..tags % 4).map(|t| format!("t{t}")).collect();
                r.meta.important = tags % 9 == 8;
                r.meta.decay = match decay % 5 {
                    0 | 1 => None,
                    2 => Some(Decay::Never),
                    3 => Some(Decay::Days(1)),
                    _ => Some(Decay::Days(90)),
                };
                if let Some(s) = sup {
                    r.meta.supersedes = vec![format!("user_{:02}", (*s as usize * 37) % 100)];
                }
                if *expired {
                    r.meta.valid_until = Some("2025-06-01".into());
                }
                let lines: Vec<String> = body
                    .chunks(3)
                    .map(|c| {
                        c.iter()
                            .map(|&(w, n)| format!("{} {n}", WORDS[w as usize % WORDS.len()]))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect();
                r.body = lines.join("\n").into();
                r
            })
            .collect()
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (
            0u8..5,
            0u8..10,
            0u8..5,
            prop_oneof![0i64..100, 0i64..200_000, -3_000i64..0],
            prop::collection::vec((0u8..12, 0u8..40), 0..24),
            prop::option::weighted(0.1, 0u8..100),
            prop::bool::weighted(0.1),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn a_kept_standing_builds_the_same_block(
            specs in prop::collection::vec(spec(), 0..60),
            query in prop::option::of(prop::collection::vec(0u8..12, 1..4)),
            max_tokens in prop_oneof![20usize..200, 200usize..3000],
            filter in 0u8..5,
            since_ago in prop_oneof![Just(0i64), 0i64..300_000],
        ) {
            let rs = records(&specs);
            let now = now();
            let corpus = Corpus::new(&rs);
            let text = index::render(&rs);
            let standing = Standing::of(&rs, now - Duration::minutes(since_ago));
            let filter = match filter {
                0 => Filter::default(),
                1 => Filter::default().include_superseded().include_expired(),
                2 => Filter::default().types(["user", "project"]),
                3 => Filter::default().tag("t1"),
                _ => Filter::default().include_expired(),
            };
            let q = query.map(|q| q.iter().map(|&w| WORDS[w as usize]).collect::<Vec<_>>().join(" "));
            let parts = |standing| Parts {
                records: &rs,
                corpus: Some(&corpus),
                standing,
                index_text: &text,
                events: &[],
                now,
            };
            let want = build_with(&parts(None), max_tokens, q.as_deref(), &filter, None);
            let got = build_with(&parts(Some(&standing)), max_tokens, q.as_deref(), &filter, None);
            prop_assert_eq!(got, want);
        }
    }
}
