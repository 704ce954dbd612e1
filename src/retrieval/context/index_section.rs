//! The index section of the block: MEMORY.md, its first 200 lines, whole when it fits
//! its share of the budget, else the most useful entries that fit and a line saying
//! how many are not shown.
//!
//! Must not decide the share or pack memories (assembly does). Pure code.

use crate::memory::Record;
use crate::memory::index;

/// How many lines of MEMORY.md the block includes at most.
pub(super) const INDEX_LINE_CAP: usize = 200;

/// The index part: MEMORY.md capped at 200 lines; `None`, without reading past
/// them, when those lines alone (each with its newline) are more than `share`
/// characters, which the part, at least as long, cannot fit in.
fn index_part(index: &str, share: usize) -> Option<(String, usize)> {
    let mut lines = index.lines();
    let head: Vec<&str> = lines.by_ref().take(INDEX_LINE_CAP).collect();
    if head.iter().map(|l| l.chars().count() + 1).sum::<usize>() > share {
        return None;
    }
    let cut = lines.count();
    if cut == 0 {
        let mut s = index.to_string();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        return Some((s, 0));
    }
    let mut s = head.join("\n");
    s.push('\n');
    s.push_str(&format!(
        "… {cut} more lines of MEMORY.md not shown (the memories are still ranked below)\n"
    ));
    Some((s, cut))
}

/// The line that ends an index section that left entries out.
fn hidden_line(hidden: usize, total: usize) -> String {
    format!(
        "… {hidden} of {total} entries not shown: `memdir list` lists them all, `memdir recall <words>` finds them\n"
    )
}

/// The index section of a block.
pub(super) struct IndexSection {
    pub(super) text: String,
    pub(super) lines_cut: usize,
    pub(super) entries_hidden: usize,
}

/// MEMORY.md (its first 200 lines) when that fits in `share` characters.
pub(super) fn whole_index(index: &str, share: usize) -> Option<IndexSection> {
    let (text, lines_cut) = index_part(index, share)?;
    (text.chars().count() <= share).then_some(IndexSection {
        text,
        lines_cut,
        entries_hidden: 0,
    })
}

/// The characters reserved for an index that does not fit whole: its share, or the
/// least a section that says what it leaves out needs (the title and the hidden line),
/// when that is more and still fits in the budget; 0 when not even that fits.
pub(super) fn index_room(records: &[Record], share: usize, budget: usize) -> usize {
    let n = records.len();
    let least = index::TITLE.chars().count() + 1 + hidden_line(n, n).chars().count();
    if least > budget { 0 } else { share.max(least) }
}

/// The index section of an index that does not fit whole, within `room` characters:
/// the title, then the entries of `priority` (indices into `records`, most useful
/// first) that fit, each under its type's heading and in index order, at most 200
/// lines, then the line saying how many are not shown. Empty when `room` is 0.
pub(super) fn partial_index(
    records: &[Record],
    priority: impl Iterator<Item = usize>,
    room: usize,
) -> IndexSection {
    let n = records.len();
    if room == 0 {
        return IndexSection {
            text: String::new(),
            lines_cut: 0,
            entries_hidden: n,
        };
    }
    let title = format!("{}\n", index::TITLE);
    // The hidden count is at most n, so its line is at most this long.
    let mut used = title.chars().count() + hidden_line(n, n).chars().count();
    let mut lines = 1usize;
    let mut shown: Vec<Option<String>> = vec![None; n];
    let mut sections: Vec<&crate::memory::Kind> = Vec::new();
    let mut count = 0usize;
    // No index line is shorter than `- [](x.md)` plus its newline.
    const MIN_ENTRY: usize = 12;
    // Entries that no longer fit are skipped and the next tried, but not forever: on a
    // store of 100,000 memories the rest of the list rarely holds a line short enough.
    const MAX_MISSES: usize = 1000;
    let mut misses = 0usize;
    for i in priority {
        if room.saturating_sub(used) < MIN_ENTRY || lines >= INDEX_LINE_CAP || misses >= MAX_MISSES
        {
            break;
        }
        if shown[i].is_some() {
            continue;
        }
        let kind = &records[i].meta.kind;
        let line = index::entry_line(&records[i]);
        let new_section = !sections.contains(&kind);
        let heading = if new_section {
            index::section_heading(kind).chars().count()
        } else {
            0
        };
        let extra = if new_section { 2 } else { 0 };
        let cost = line.chars().count() + 1 + heading;
        if used + cost <= room && lines + 1 + extra <= INDEX_LINE_CAP {
            used += cost;
            lines += 1 + extra;
            if new_section {
                sections.push(kind);
            }
            shown[i] = Some(line);
            count += 1;
            misses = 0;
        } else {
            misses += 1;
        }
    }
    let mut text = title;
    let mut current: Option<&crate::memory::Kind> = None;
    // Only the entries shown are put in index order.
    let mut chosen: Vec<usize> = (0..n).filter(|&i| shown[i].is_some()).collect();
    chosen.sort_by(|&a, &b| index::compare(&records[a], &records[b]));
    for i in chosen {
        let Some(line) = shown[i].take() else {
            continue;
        };
        let kind = &records[i].meta.kind;
        if current != Some(kind) {
            text.push_str(&index::section_heading(kind));
            current = Some(kind);
        }
        text.push_str(&line);
        text.push('\n');
    }
    let hidden = n - count;
    if hidden > 0 {
        text.push_str(&hidden_line(hidden, n));
    }
    debug_assert!(text.chars().count() <= room);
    IndexSection {
        text,
        lines_cut: 0,
        entries_hidden: hidden,
    }
}

#[cfg(test)]
mod tests {
    use crate::memory::Record;
    use crate::memory::index;
    use crate::memory::index::tests::rec;
    use crate::retrieval::context::tests::build;
    use crate::retrieval::context::tests::now;
    use crate::retrieval::context::{Block, INDEX_SHARE, INDEX_SHARE_QUERY, Prepared};

    #[test]
    fn index_is_capped_at_200_lines() {
        let idx: String = (0..250).map(|i| format!("line {i}\n")).collect();
        let b = build(&idx, &[], &[], 2000);
        assert_eq!(b.index_lines_cut, 50);
        assert_eq!(b.text.lines().count(), 201);
        assert!(b.text.ends_with(
            "… 50 more lines of MEMORY.md not shown (the memories are still ranked below)\n"
        ));
    }

    /// `whole_index` at every share around the part's length, for indexes of up to
    /// 200 lines and over, with `\r\n`, a last line without its newline and empty
    /// lines: whole exactly when the capped index (as a plain cut of every line
    /// gives it) fits, the same text, though a head over the share is not read on.
    #[test]
    fn the_index_is_whole_exactly_when_its_capped_part_fits() {
        fn part(index: &str) -> String {
            let lines: Vec<&str> = index.lines().collect();
            if lines.len() <= super::INDEX_LINE_CAP {
                let mut s = index.to_string();
                if !s.ends_with('\n') {
                    s.push('\n');
                }
                return s;
            }
            let cut = lines.len() - super::INDEX_LINE_CAP;
            format!(
                "{}\n… {cut} more lines of MEMORY.md not shown (the memories are still ranked below)\n",
                lines[..super::INDEX_LINE_CAP].join("\n")
            )
        }
        let lines = |n: usize, end: &str| -> String {
            (0..n)
                .map(|i| format!("- é {}{end}", "x".repeat(i % 7)))
                .collect()
        };
        let indexes = [
            String::new(),
            lines(3, "\n"),
            lines(200, "\n"),
            lines(200, "\r\n"),
            lines(201, "\n"),
            format!("{}\n\nlast", lines(250, "\r\n")),
            lines(1000, "\n"),
        ];
        for idx in &indexes {
            let want = part(idx);
            let n = want.chars().count();
            for share in n.saturating_sub(300)..n + 3 {
                let got = super::whole_index(idx, share).map(|s| s.text);
                assert_eq!(
                    got,
                    (n <= share).then(|| want.clone()),
                    "share {share} of {n}"
                );
            }
        }
    }

    /// 30 memories with one-sentence descriptions: an index of about 1,100 tokens.
    fn sentences() -> Vec<Record> {
        (0..30)
            .map(|i| {
                let kind = ["user", "feedback", "project", "reference"][i % 4];
                let desc = format!(
                    "one sentence of about a hundred and thirty characters describing memory number {i} in some detail, as people write them"
                );
                let mut r = rec(&format!("{kind}_m{i:02}"), kind, &format!("Memory {i}"), &desc, "2026-01-01");
                let mut body = format!("The body of memory {i}: the evidence an agent needs.");
                if i == 17 {
                    body.push_str(" The cello lives in the hall cupboard.");
                }
                r.body = body.into();
                r
            })
            .collect()
    }

    /// The entry lines of a block's index section, and its hidden-entries line.
    fn index_lines(b: &Block) -> (Vec<&str>, Option<&str>) {
        let section = &b.text[..b
            .text
            .char_indices()
            .nth(b.index_chars)
            .map_or(b.text.len(), |(i, _)| i)];
        let entries = section.lines().filter(|l| l.starts_with("- [")).collect();
        (entries, section.lines().find(|l| l.starts_with("… ")))
    }

    #[test]
    fn a_large_index_gives_way_to_evidence() {
        // spec/ranking.md#budget
        let p = Prepared::new(sentences(), vec![], now());
        let whole = index::render(p.records()).chars().count();
        assert!(
            whole > 1024 * 4 / 2,
            "the index alone is over half of 1,024 tokens"
        );
        for query in [None, Some("where is the cello?")] {
            let b = p.block(1024, query);
            assert!(b.text.chars().count() <= 1024 * 4, "{query:?}");
            assert!(
                !b.memories.is_empty(),
                "{query:?}: evidence, not only the index"
            );
            let share = if query.is_some() {
                INDEX_SHARE_QUERY
            } else {
                INDEX_SHARE
            };
            assert!(b.index_chars as f64 <= 4096.0 * share, "{query:?}");
            assert!(b.text.starts_with("# Agent Memory\n\n## "), "{}", b.text);
            let (entries, hidden) = index_lines(&b);
            assert_eq!(b.index_entries_hidden, 30 - entries.len());
            assert_eq!(
                hidden,
                Some(format!(
                    "… {} of 30 entries not shown: `memdir list` lists them all, `memdir recall <words>` finds them",
                    30 - entries.len()
                ))
                .as_deref()
            );
            // The entries shown are those of the memories in the block first.
            let in_block = |l: &&str| {
                b.memories
                    .iter()
                    .any(|m| l.contains(&format!("]({}.md)", m.key)))
            };
            let first = format!("]({}.md)", b.memories[0].key);
            assert!(entries.iter().any(|l| l.contains(&first)), "{query:?}");
            if b.memories.len() > entries.len() {
                assert!(entries.iter().all(in_block), "{query:?}: {entries:?}");
            }
        }
        // With a query, the memory that answers it is in the block.
        let b = p.block(1024, Some("where is the cello?"));
        assert_eq!(b.memories[0].key, "feedback_m17");
        assert!(b.text.contains("The cello lives in the hall cupboard."));
    }

    #[test]
    fn an_index_that_fits_its_share_is_whole() {
        // spec/ranking.md#budget
        let p = Prepared::new(sentences(), vec![], now());
        let index = index::render(p.records());
        let need = index.chars().count().div_ceil(4);
        let b = p.block(need * 2, None);
        assert!(b.text.starts_with(&index));
        assert_eq!(
            (b.index_entries_hidden, b.index_chars),
            (0, index.chars().count())
        );
        let b = p.block(need * 2 - 1, None);
        assert!(!b.text.starts_with(&index));
        assert!(b.index_entries_hidden > 0);
        // With a query the share is an eighth: the index's characters are half a
        // token budget of that many.
        let chars = index.chars().count();
        let b = p.block(chars * 2, Some("cello"));
        assert!(b.text.starts_with(&index));
        let b = p.block(chars * 2 - 1, Some("cello"));
        assert!(!b.text.starts_with(&index));
    }

    #[test]
    fn tiny_budgets_are_never_exceeded() {
        // spec/ranking.md#budget
        let p = Prepared::new(sentences(), vec![], now());
        for max in [0, 1, 10, 25, 50, 60, 100] {
            for q in [None, Some("cello")] {
                let b = p.block(max, q);
                assert!(b.text.chars().count() <= max * 4, "{max} {q:?}: {}", b.text);
                if !b.text.is_empty() {
                    // Whatever shows of the index says what it leaves out.
                    assert!(index_lines(&b).1.is_some(), "{max} {q:?}: {}", b.text);
                }
            }
        }
        // 50 tokens hold the title and the line saying what is not shown.
        let b = p.block(50, None);
        assert!(b.text.starts_with("# Agent Memory\n"), "{}", b.text);
    }
}
