//! The token-budgeted context block an agent puts in its system prompt (spec/ranking.md#packing-the-context-block).
//!
//! Layout: the index section (MEMORY.md, its first 200 lines, whole when it fits in
//! its share of the budget, else its most useful lines and a line saying how many are
//! not shown), then memories, each whole under a heading naming its name, key, type
//! and updated date, then the most recent timeline events that still fit, oldest
//! first. Without a query the memories come in rank order. With one,
//! [`Prepared::block`] chooses the best lines of the relevant memories across all of
//! them and shows each memory whole or as a marked excerpt of those lines
//! (spec/ranking.md#query-aware-context-measured-on-locomo). A [`Filter`] decides
//! which memories may be packed at all. Tokens are estimated as ceil(chars / 4),
//! counting Unicode scalar values, and every character of the output counts: the
//! output never exceeds `max_tokens × 4` characters (spec/ranking.md#budget). Pure
//! code: no IO, no clock.

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::memory::Record;
use crate::memory::index;
use crate::memory::timeline::Event;
use crate::retrieval::filter::{Filter, Lifecycle};
use crate::retrieval::rank;
use crate::retrieval::search::{self, Corpus, QueryScores};
use crate::retrieval::state;

/// How many lines of MEMORY.md the block includes at most.
pub const INDEX_LINE_CAP: usize = 200;
/// Default budget in tokens.
pub const DEFAULT_MAX_TOKENS: usize = 8192;
/// The share of the budget MEMORY.md may take in a block without a query
/// (spec/ranking.md#budget).
pub const INDEX_SHARE: f64 = 0.5;
/// The share of the budget MEMORY.md may take in a block with a query: less, since
/// the evidence for the query matters more (measured on LoCoMo, spec/ranking.md#budget).
pub const INDEX_SHARE_QUERY: f64 = 0.25;

/// Estimated tokens of a text: ceil(chars / 4).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// What the block contains.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    pub text: String,
    /// Keys of the memories included, in output order, and whether each is an excerpt.
    pub memories: Vec<Included>,
    /// Agent state entries included (spec/ranking.md#agent-state-in-the-block), in
    /// output order, and whether each is an excerpt (over its `limit`).
    pub state: Vec<Included>,
    /// Agent state entries left out because the budget was too small.
    pub state_hidden: usize,
    /// Number of timeline events included.
    pub events: usize,
    /// Lines of MEMORY.md left out by the 200-line cap.
    pub index_lines_cut: usize,
    /// Entries of MEMORY.md left out because the index did not fit in its share of
    /// the budget (the block says so in a line of its own).
    pub index_entries_hidden: usize,
    /// Characters of the index section (the start of `text`).
    #[serde(skip)]
    pub index_chars: usize,
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

    /// Uses `corpus` (the term statistics of exactly these records, in their order)
    /// instead of computing it on the first query.
    pub fn set_corpus(&mut self, corpus: Corpus) {
        debug_assert_eq!(corpus.len(), self.records.len());
        self.corpus = OnceLock::from(corpus);
    }

    /// The memories the blocks are built from.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The context block for a budget and an optional query (spec/ranking.md#packing-the-context-block).
    pub fn block(&self, max_tokens: usize, query: Option<&str>) -> Block {
        self.block_filtered(max_tokens, query, &Filter::default())
    }

    /// The context block with only the memories that pass `filter` packed
    /// (spec/ranking.md#filters). Scores are those of the whole store; the index
    /// section stays the store's index under the budget rule.
    pub fn block_filtered(&self, max_tokens: usize, query: Option<&str>, filter: &Filter) -> Block {
        self.block_with(max_tokens, query, filter, None)
    }

    /// The keyword relevance of every memory to `query` (spec/ranking.md#recall).
    pub fn keyword_relevance(&self, query: &str) -> Vec<f64> {
        self.corpus
            .get_or_init(|| Corpus::new(&self.records))
            .relevance(&self.records, query)
    }

    /// [`Prepared::block_filtered`] with the memories' relevance given (see [`build_with`]).
    pub fn block_with(
        &self,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
        relevance: Option<Vec<f64>>,
    ) -> Block {
        build_with(&self.parts(query), max_tokens, query, filter, relevance)
    }

    /// [`Prepared::block_with`] with MEMORY.md's text from `index` (given the records),
    /// found while the memories and lines are scored ([`build_while`]); the text this
    /// was prepared with is not used.
    pub fn block_while<E: Send>(
        &self,
        index: impl FnOnce(&[Record]) -> Result<String, E> + Send,
        max_tokens: usize,
        query: Option<&str>,
        filter: &Filter,
        relevance: Option<Vec<f64>>,
    ) -> Result<Block, E> {
        build_while(
            &self.parts(query),
            index,
            max_tokens,
            query,
            filter,
            relevance,
        )
    }

    /// The borrowed parts for a block, with the term statistics when there is a query
    /// (computed on the first one).
    fn parts(&self, query: Option<&str>) -> Parts<'_> {
        let has_query = query.is_some_and(|q| !q.trim().is_empty());
        let corpus = has_query.then(|| self.corpus.get_or_init(|| Corpus::new(&self.records)));
        Parts {
            records: &self.records,
            corpus,
            index_text: &self.index_text,
            events: &self.events,
            now: self.now,
        }
    }
}

/// What a block is built from, borrowed (a process that keeps a store warm builds
/// blocks without handing its records over).
pub struct Parts<'a> {
    pub records: &'a [Record],
    /// The term statistics of `records` (in their order); needed with a query.
    pub corpus: Option<&'a Corpus>,
    /// MEMORY.md as rendered from `records`.
    pub index_text: &'a str,
    /// Timeline events, oldest first.
    pub events: &'a [Event],
    pub now: DateTime<Utc>,
}

/// The context block of [`Prepared::block_filtered`], from borrowed parts. A query
/// without `parts.corpus` gets one computed for this call. `relevance`, when given,
/// is the memories' relevance to the query (the hybrid relevance of
/// spec/ranking.md#hybrid-recall, one value per record) used instead of the keyword
/// one; the line scores, and so the line packer, stay the keyword ones. `None` is the
/// keyword block.
pub fn build_with(
    parts: &Parts<'_>,
    max_tokens: usize,
    query: Option<&str>,
    filter: &Filter,
    relevance: Option<Vec<f64>>,
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
pub fn build_while<E: Send>(
    parts: &Parts<'_>,
    index: impl FnOnce(&[Record]) -> Result<String, E> + Send,
    max_tokens: usize,
    query: Option<&str>,
    filter: &Filter,
    relevance: Option<Vec<f64>>,
) -> Result<Block, E> {
    build_inner(parts, Some(index), max_tokens, query, filter, relevance)
}

/// How the memories go in: whole in order, or planned for a query.
enum Pack {
    Whole(Vec<usize>),
    Plan(Vec<usize>, QueryScores),
}

fn build_inner<E: Send>(
    parts: &Parts<'_>,
    index: Option<impl FnOnce(&[Record]) -> Result<String, E> + Send>,
    max_tokens: usize,
    query: Option<&str>,
    filter: &Filter,
    relevance: Option<Vec<f64>>,
) -> Result<Block, E> {
    let records = parts.records;
    let life = Lifecycle::of(records, parts.now.date_naive());
    // State entries have their own section right after the index; superseded and
    // expired memories only when the filter includes them. Judged in the records'
    // order (a large store's records are visited in memory order, not in rank order).
    let admitted = || -> Vec<bool> {
        records
            .iter()
            .map(|r| r.meta.kind != crate::memory::Kind::State && filter.admits(r, &life))
            .collect()
    };
    // An included superseded or expired memory is packed under a marked heading
    // (`## Name [superseded by k] (key: …)`): the name carries the marker.
    let any_marked = (filter.include_superseded || filter.include_expired)
        && records.iter().any(|r| life.mark(r).is_some());
    let marked: Option<Vec<Record>> = any_marked.then(|| {
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
    });
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
    let score = || -> (Vec<usize>, Pack) {
        let (Some(q), Some(corpus)) = (q, corpus) else {
            let order: Vec<usize> = rank::order(records, parts.now)
                .into_iter()
                .map(|(i, _)| i)
                .collect();
            let admitted = admitted();
            let candidates = order.iter().copied().filter(|&i| admitted[i]).collect();
            return (order, Pack::Whole(candidates));
        };
        // The lines are scored while the memories are ranked (on two threads for a
        // large store: neither needs the other).
        let rank = || {
            let (memory, prior) = match relevance.filter(|r| r.len() == records.len()) {
                Some(r) => (r, 1.0),
                None => corpus.relevance_and_strength(records, q),
            };
            let order = query_order(records, &memory, parts.now);
            ((memory, prior), order, admitted())
        };
        let (((memory, prior), order, admitted), lines) = if records.len() >= PARALLEL_RECORDS {
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
        let candidates = order.iter().copied().filter(|&i| admitted[i]).collect();
        (
            order,
            Pack::Plan(
                candidates,
                QueryScores {
                    memory,
                    prior,
                    lines,
                },
            ),
        )
    };
    // MEMORY.md, when it is still to be found, while the scoring runs.
    let ((order, pack), found) = match index {
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
    Ok(match pack {
        Pack::Whole(candidates) => assemble(
            index_text,
            packed,
            &order,
            INDEX_SHARE,
            parts.events,
            max_tokens,
            |room| pack_whole(packed, &candidates, room),
        ),
        Pack::Plan(candidates, scores) => assemble(
            index_text,
            packed,
            &order,
            INDEX_SHARE_QUERY,
            parts.events,
            max_tokens,
            |room| plan(packed, &candidates, &scores, room),
        ),
    })
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

/// The line that ends an index section that left entries out.
fn hidden_line(hidden: usize, total: usize) -> String {
    format!(
        "… {hidden} of {total} entries not shown: `memdir list` lists them all, `memdir recall <words>` finds them\n"
    )
}

/// The index section of a block.
struct IndexSection {
    text: String,
    lines_cut: usize,
    entries_hidden: usize,
}

/// MEMORY.md (its first 200 lines) when that fits in `share` characters.
fn whole_index(index: &str, share: usize) -> Option<IndexSection> {
    let (text, lines_cut) = index_part(index);
    (text.chars().count() <= share).then_some(IndexSection {
        text,
        lines_cut,
        entries_hidden: 0,
    })
}

/// The characters reserved for an index that does not fit whole: its share, or the
/// least a section that says what it leaves out needs (the title and the hidden line),
/// when that is more and still fits in the budget; 0 when not even that fits.
fn index_room(records: &[Record], share: usize, budget: usize) -> usize {
    let n = records.len();
    let least = index::TITLE.chars().count() + 1 + hidden_line(n, n).chars().count();
    if least > budget { 0 } else { share.max(least) }
}

/// The index section of an index that does not fit whole, within `room` characters:
/// the title, then the entries of `priority` (indices into `records`, most useful
/// first) that fit, each under its type's heading and in index order, at most 200
/// lines, then the line saying how many are not shown. Empty when `room` is 0.
fn partial_index(
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

/// The length in characters of `s`'s words joined by single spaces.
fn joined_len(s: &str) -> usize {
    let (mut chars, mut words) = (0usize, 0usize);
    if s.is_ascii() {
        // ASCII's white space, as `char::is_whitespace` has it: tab to carriage
        // return, and the space.
        let mut in_word = false;
        for &b in s.as_bytes() {
            let space = matches!(b, b'\t'..=b'\r' | b' ');
            if !space {
                chars += 1;
                words += usize::from(!in_word);
            }
            in_word = !space;
        }
    } else {
        for w in s.split_whitespace() {
            chars += w.chars().count();
            words += 1;
        }
    }
    chars + words.saturating_sub(1)
}

/// The length in characters of [`heading`]`(r)`, without building it.
fn heading_len(r: &Record) -> usize {
    use chrono::Datelike;
    let name = joined_len(&r.meta.name);
    let date = r.meta.updated.date();
    let date = if (0..=9999).contains(&date.year()) {
        10
    } else {
        date.to_string().chars().count()
    };
    let kind = r.meta.kind.as_str().chars().count();
    // `\n## `, ` (key: `, `, type: `, `, updated: `, `)\n`: 32 characters.
    32 + name + r.key.as_str().chars().count() + kind + date
}

/// The length in characters of [`whole`]`(r)`, without building it.
fn whole_len(r: &Record) -> usize {
    let body = r.body.chars().count();
    heading_len(r) + if body == 0 { 0 } else { body + 2 }
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

/// The line that closes an excerpt: how many of the memory's lines it shows (the
/// heading above names the memory's key).
fn excerpt_footer(shown: usize, total: usize) -> String {
    format!("[excerpt: {shown} of {total} lines]\n")
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
    /// Characters of the heading, and of the footer when it says `0 of N lines`.
    heading: usize,
    footer_0: usize,
}

impl<'a> Body<'a> {
    fn new(record: &'a Record) -> Body<'a> {
        let lines: Vec<&str> = record.body.lines().collect();
        let chars = lines.iter().map(|l| l.chars().count()).collect();
        let n = lines.len();
        let heading = heading_len(record);
        let body = record.body.chars().count();
        Body {
            record,
            lines,
            chars,
            whole: heading + if body == 0 { 0 } else { body + 2 },
            heading,
            footer_0: excerpt_footer(0, n).chars().count(),
        }
    }

    /// Characters of the excerpt showing the sorted lines `shown`: the heading, a
    /// blank line, `…` before each run of lines left out before a shown line, the
    /// shown lines, and the footer.
    fn excerpt_cost(&self, shown: &[usize]) -> usize {
        // The footer names the number of lines shown: one digit for 0.
        let digits = shown.len().checked_ilog10().map_or(1, |d| d as usize + 1);
        let mut c = self.heading + 1 + self.footer_0 - 1 + digits;
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
        s.push_str(&excerpt_footer(shown.len(), n));
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

/// Lines best first ([`search::best_key`]'s order), a sorted chunk at a time: the best few
/// thousand are selected and sorted, then four times as many of the rest, and so on,
/// so that a plan that fills after a few thousand lines never orders the others.
/// Yields (position in order, line).
struct BestFirst {
    rest: Vec<u128>,
    chunk: std::vec::IntoIter<u128>,
    size: usize,
}

impl BestFirst {
    /// Lines in the first chunk.
    const FIRST: usize = 8192;

    fn new(keys: Vec<u128>) -> BestFirst {
        BestFirst {
            rest: keys,
            chunk: Vec::new().into_iter(),
            size: BestFirst::FIRST,
        }
    }
}

impl Iterator for BestFirst {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let key = match self.chunk.next() {
            Some(k) => k,
            None => {
                let k = self.size.min(self.rest.len());
                let at = self.rest.len() - k;
                if at > 0 {
                    // Everything after `at` is better than everything before it.
                    self.rest.select_nth_unstable(at);
                }
                let mut chunk = self.rest.split_off(at);
                chunk.sort_unstable_by(|a, b| b.cmp(a));
                self.chunk = chunk.into_iter();
                self.size = self.size.saturating_mul(4);
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
    // Bodies are split into lines only for the memories the plan looks at.
    let mut bodies: Vec<Option<Body<'_>>> = (0..records.len()).map(|_| None).collect();
    let short_cap = (SHORT_CHARS as f64).min(room as f64 * SHORT_SHARE);
    // The keys of the lines of relevant memories (value, position in order, line).
    let mut keys: Vec<u128> = Vec::with_capacity(scores.lines.total());
    for (pos, &r) in order.iter().enumerate() {
        let relevance = scores.memory[r];
        if relevance <= 0.0 {
            continue;
        }
        let ls = scores.lines.of(r);
        // A line before the first or after the last scores 0.
        let at = |i: usize| ls.get(i).copied().unwrap_or(0.0);
        for (l, own) in ls.iter().enumerate() {
            let near = at(l.wrapping_sub(1)).max(at(l + 1));
            let far = at(l.wrapping_sub(2)).max(at(l + 2));
            let v = own + NEIGHBOUR * near + NEIGHBOUR_2 * far;
            if v > 0.0 {
                keys.push(search::best_key(
                    v + MEMORY_PRIOR * scores.prior * relevance,
                    pos,
                    l,
                ));
            }
        }
    }
    // (position, line) pairs are distinct, so the order is total: the lines are
    // visited in exactly the order of a full sort, and a plan that fills early sorts
    // little.
    let best = BestFirst::new(keys);
    let mut parts: Vec<Option<Part>> = vec![None; records.len()];
    // The heading's length: no memory not yet in goes in for less.
    let mut least: Vec<usize> = vec![0; records.len()];
    let mut used = 0usize;
    for (pos, l) in best {
        if used >= room {
            break;
        }
        let r = order[pos];
        if parts[r].is_none() {
            // No section is shorter than MIN_SECTION.
            if used + MIN_SECTION > room {
                continue;
            }
            if least[r] == 0 {
                least[r] = heading_len(&records[r]);
            }
            if used + least[r] > room {
                continue;
            }
        }
        let b = bodies[r].get_or_insert_with(|| Body::new(&records[r]));
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
        if used + MIN_SECTION > room {
            break;
        }
        if parts[r].is_none() {
            let whole = bodies[r]
                .as_ref()
                .map_or_else(|| whole_len(&records[r]), |b| b.whole);
            if used + whole <= room {
                used += whole;
                parts[r] = Some(Part::Whole);
            }
        }
    }
    order
        .iter()
        .filter_map(|&r| parts[r].take().map(|p| (r, p)))
        .map(|(r, p)| match p {
            Part::Lines(l) if bodies[r].as_ref().is_some_and(|b| l.len() == b.lines.len()) => {
                (r, Part::Whole)
            }
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

/// The memories packed for a block: (index into `records`, part), in output order.
type Packed = Vec<(usize, Part)>;

/// Without a query: memories whole, in the order given, skipping any that does not
/// fit in `room` characters and trying the next.
fn pack_whole(records: &[Record], candidates: &[usize], room: usize) -> Packed {
    let mut used = 0usize;
    let mut out = Vec::new();
    for &i in candidates {
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
fn assemble(
    index_text: &str,
    records: &[Record],
    order: &[usize],
    share: f64,
    events: &[Event],
    max_tokens: usize,
    pack: impl FnOnce(usize) -> Packed,
) -> Block {
    let budget = max_tokens.saturating_mul(4);
    let share_chars = (budget as f64 * share).floor() as usize;
    let entries = state::state_entries(records);
    let (index, (state_text, state_shown), packed) = match whole_index(index_text, share_chars) {
        Some(ix) => {
            let room = budget - ix.text.chars().count();
            let st = state::state_part(records, &entries, room);
            let packed = pack(room - st.0.chars().count());
            (ix, st, packed)
        }
        None => {
            let index_room = index_room(records, share_chars, budget);
            let st = state::state_part(records, &entries, budget - index_room);
            let packed = pack(budget - index_room - st.0.chars().count());
            let priority = packed.iter().map(|(i, _)| *i).chain(order.iter().copied());
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
            let got: Vec<(usize, usize)> = BestFirst::new(keys).collect();
            assert_eq!(got.len(), n);
            assert!(got.iter().zip(&want).all(|(g, w)| *g == w.1), "n = {n}");
        }
    }

    #[test]
    fn heading_len_is_the_headings_length() {
        let mut r = crate::memory::index::tests::rec("k_é", "user", "N", "d", "2026-01-01");
        for name in [
            "",
            "  Café  au\tlait \n x ",
            "名前",
            "one",
            " a\x0b b\x0c\rc  d\t",
            "\t\n",
            "plain words here",
        ] {
            for kind in ["user", "custom-kind", "state", "ünï"] {
                r.meta.name = name.to_string();
                r.meta.kind = crate::memory::Kind::parse(kind);
                assert_eq!(
                    heading_len(&r),
                    heading(&r).chars().count(),
                    "{name:?} {kind:?}"
                );
            }
        }
    }
    use crate::memory::index::tests::rec;

    /// A block without a query over `rs` in the order given, with `index` as MEMORY.md.
    fn build(index: &str, rs: &[Record], events: &[Event], max: usize) -> Block {
        let order: Vec<usize> = (0..rs.len()).collect();
        assemble(index, rs, &order, INDEX_SHARE, events, max, |room| {
            pack_whole(rs, &order, room)
        })
    }

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

    #[test]
    fn skips_what_does_not_fit_and_tries_the_next() {
        // spec/ranking.md#packing
        let mut big = rec("big", "user", "Big", "d", "2026-01-01");
        big.body = "x".repeat(500);
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
            let p = plan(&records, &[0, 1], &scores, 160);
            assert_eq!(p.len(), 1, "{p:?}");
            p[0].0
        };
        assert_eq!(first(1.0), 0);
        assert_eq!(first(0.1), 1);
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
                r.body = format!("The body of memory {i}: the evidence an agent needs.");
                if i == 17 {
                    r.body.push_str(" The cello lives in the hall cupboard.");
                }
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
        let b = p.block(need * 4, Some("cello"));
        assert!(b.text.starts_with(&index));
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
