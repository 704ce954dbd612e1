//! The token-budgeted context block an agent puts in its system prompt (DESIGN 3).
//!
//! Layout: MEMORY.md (its first 200 lines, then a line saying how many were cut),
//! then memories in the order given, each whole under a heading naming its name,
//! key, type and updated date (or, for a query hit too long to fit, a marked excerpt
//! of its most relevant lines), then the most recent timeline events that still fit,
//! oldest first. Tokens are estimated as ceil(chars / 4), counting Unicode scalar
//! values, and every character of the output counts: the output never exceeds
//! `max_tokens × 4` characters unless the index alone does. Pure code.

use serde::Serialize;

use crate::memory::Record;
use crate::search::{self, Index};
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
    /// Relevance to the query (0 without a query); an excerpt is only made for hits.
    pub relevance: f64,
}

/// The query side of a request: terms and the index their weights come from.
pub struct QueryTerms<'a> {
    pub terms: Vec<String>,
    pub index: &'a Index,
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

/// The most relevant lines of a memory that fit in `room` characters, as a marked
/// excerpt, or `None` when not even one line fits.
fn excerpt(r: &Record, q: &QueryTerms<'_>, room: usize) -> Option<String> {
    let lines: Vec<&str> = r.body.lines().collect();
    let mut scored = search::score_lines(&r.body, &q.terms, q.index);
    if scored.is_empty() {
        return None;
    }
    scored.sort_by(|a, b| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.0.cmp(&b.0))
    });
    let head = heading(r);
    let total_lines = lines.len();
    let footer = |shown: usize| {
        format!(
            "[excerpt: {shown} of {total_lines} lines; the whole memory is `{}`]\n",
            r.key
        )
    };
    let cost = |chosen: &[usize]| -> usize {
        let mut sorted = chosen.to_vec();
        sorted.sort_unstable();
        let mut n = head.chars().count() + 1 + footer(sorted.len()).chars().count();
        let mut prev: Option<usize> = None;
        for &i in &sorted {
            if prev.is_none_or(|p| i != p + 1) {
                n += 2; // "…\n" marks a gap (or the lines before the first one shown)
            }
            n += lines[i].chars().count() + 1;
            prev = Some(i);
        }
        n
    };
    let mut chosen: Vec<usize> = Vec::new();
    for (i, _) in scored {
        chosen.push(i);
        if cost(&chosen) > room {
            chosen.pop();
        }
    }
    if chosen.is_empty() {
        return None;
    }
    chosen.sort_unstable();
    let mut s = head.clone();
    s.push('\n');
    let mut prev: Option<usize> = None;
    for &i in &chosen {
        if prev.is_none_or(|p| i != p + 1) {
            s.push_str("…\n");
        }
        s.push_str(lines[i]);
        s.push('\n');
        prev = Some(i);
    }
    s.push_str(&footer(chosen.len()));
    debug_assert_eq!(s.chars().count(), cost(&chosen));
    Some(s)
}

/// Builds the context block.
///
/// `events` are in time order (oldest first); the newest that fit are kept.
pub fn build(
    index: &str,
    candidates: &[Candidate<'_>],
    query: Option<&QueryTerms<'_>>,
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
        let room = budget - used;
        let section = whole(c.record);
        let n = section.chars().count();
        if n <= room {
            text.push_str(&section);
            used += n;
            memories.push(Included {
                key: c.record.key.to_string(),
                excerpt: false,
            });
            continue;
        }
        if let (Some(q), true) = (query, c.relevance > 0.0) {
            if let Some(ex) = excerpt(c.record, q, room) {
                used += ex.chars().count();
                text.push_str(&ex);
                memories.push(Included {
                    key: c.record.key.to_string(),
                    excerpt: true,
                });
            }
        }
    }
    let header = "\n## Recent timeline\n";
    let header_len = header.chars().count();
    let mut chosen: Vec<String> = Vec::new();
    for e in events.iter().rev() {
        let line = e.encode();
        let n = line.chars().count() + 1 + if chosen.is_empty() { header_len } else { 0 };
        if used + n > budget {
            break;
        }
        used += n;
        chosen.push(line);
    }
    let n_events = chosen.len();
    if !chosen.is_empty() {
        text.push_str(header);
        for line in chosen.iter().rev() {
            text.push_str(line);
            text.push('\n');
        }
    }
    let tokens = estimate_tokens(&text);
    Block {
        text,
        memories,
        events: n_events,
        index_lines_cut,
        tokens,
        max_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tests::rec;

    fn cands(rs: &[Record]) -> Vec<Candidate<'_>> {
        rs.iter()
            .map(|r| Candidate {
                record: r,
                relevance: 0.0,
            })
            .collect()
    }

    #[test]
    fn index_is_capped_at_200_lines() {
        let idx: String = (0..250).map(|i| format!("line {i}\n")).collect();
        let b = build(&idx, &[], None, &[], 1);
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
        let b = build("# Agent Memory\n", &cands(&rs), None, &[], 40);
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
        let b = build("# Agent Memory\n", &cands(&rs), None, &events, 1);
        assert_eq!(
            b.text, "# Agent Memory\n",
            "the index alone may exceed the budget"
        );
        for max in [4, 5, 10, 20, 50, 100, 300, 1000] {
            let b = build("# Agent Memory\n", &cands(&rs), None, &events, max);
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
        let b = build("# Agent Memory\n", &[], None, &events, max_chars / 4);
        let want = (max_chars / 4 * 4 - base) / line_len;
        assert_eq!(b.events, want);
        let last_two: Vec<&str> = b.text.lines().skip(3).collect();
        assert_eq!(last_two.len(), want);
        assert!(last_two.last().unwrap().contains("\"i\":4"));
    }
}
