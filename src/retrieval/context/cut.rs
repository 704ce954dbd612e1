//! A long line shown as its part that matches the query: the line's tag and label
//! kept, then the window of its text richest in query terms, with `…` where text is
//! left out (spec/ranking.md#query-aware-context-measured-on-locomo, step 5).
//!
//! Must not choose which lines go in (the excerpt planner does). Pure code.

use crate::retrieval::search::{self, split_label, split_tag, terms};

/// A line longer than this many characters is shown cut to its best window.
pub(super) const LINE_CAP: usize = 200;
/// The fewest characters of a line's text worth showing in a cut.
pub(super) const MIN_WINDOW: usize = 40;
/// Marks text left out of a cut line, before and after the window.
const BEFORE: &str = "… ";
const AFTER: &str = " …";

/// The part of `line` before its text: the list marker, tag and label with their
/// `: ` (`[S5:3] assistant: `), or the marker and tag, or nothing. At most 66
/// characters ([`split_tag`], [`split_label`]), and always kept: a cut line keeps
/// the id that says where it is.
fn prefix(line: &str) -> &str {
    match split_label(line) {
        Some((before, label, after)) if after.starts_with(": ") => {
            &line[..before.len() + label.len() + 2]
        }
        _ => split_tag(line).0,
    }
}

/// `line` shown in at most `cap` characters: `None` when it is that short already
/// (it is shown whole) or when not even its prefix ([`prefix`], kept whole) and
/// [`MIN_WINDOW`] characters of text fit. Otherwise its prefix ([`prefix`]), then the window of its text of at most
/// the characters left that holds the most query terms (`weights`: stemmed term and
/// its weight, each distinct term counted once; the earliest such window), cut at
/// word boundaries, `… ` before it when text comes before, ` …` after it when text
/// follows.
pub(super) fn cut(line: &str, cap: usize, weights: &[(String, f64)]) -> Option<String> {
    let n = line.chars().count();
    if n <= cap {
        return None;
    }
    let p = prefix(line);
    let text = &line[p.len()..];
    let room = cap
        .checked_sub(p.chars().count() + BEFORE.chars().count() + AFTER.chars().count())
        .filter(|r| *r >= MIN_WINDOW)?;
    // Byte offset of every character, and the end.
    let at: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let chars = at.len() - 1;
    let words = words(text, &at, weights);
    let best = best_start(text, &at, &words, room, weights);
    let (start, end) = snap(&words, best, room, chars);
    let mut s = String::with_capacity(cap * 4);
    s.push_str(p);
    if start > 0 {
        s.push_str(BEFORE);
    }
    s.push_str(text[at[start]..at[end]].trim());
    if end < chars {
        s.push_str(AFTER);
    }
    debug_assert!(s.chars().count() <= cap, "{s:?} over {cap}");
    Some(s)
}

/// A word of a line's text: its first and one-past-last character, and which of
/// the query's terms it is (`None` for any other word).
struct Word {
    start: usize,
    end: usize,
    term: Option<usize>,
}

/// The words of `text` as the search splits them ([`search::words`]: its alphanumeric
/// runs), in character positions (`at` maps them to bytes), each with its place in
/// `weights` when its term is one of theirs.
fn words(text: &str, at: &[usize], weights: &[(String, f64)]) -> Vec<Word> {
    // A term is its word lowercased, or a stem of it: the word's first characters
    // (all but at most the term's last, `studies` → `study`). A word that starts with
    // none of the terms' heads is not analysed.
    let heads: Vec<&str> = weights
        .iter()
        .map(|(t, _)| t.char_indices().last().map_or("", |(i, _)| &t[..i]))
        .collect();
    let ascii = text.is_ascii();
    let mut from = 0;
    search::words(text)
        .map(|w| {
            let byte = w.as_ptr() as usize - text.as_ptr() as usize;
            let (start, end) = if ascii {
                (byte, byte + w.len())
            } else {
                // Words come in order: each position is searched for after the last.
                let start = from + at[from..].partition_point(|&b| b < byte);
                let end = start + at[start..].partition_point(|&b| b < byte + w.len());
                from = end;
                (start, end)
            };
            let may = !w.is_ascii()
                || heads.iter().any(|h| {
                    w.len() >= h.len() && w.as_bytes()[..h.len()].eq_ignore_ascii_case(h.as_bytes())
                });
            let term = if may {
                terms(w)
                    .into_iter()
                    .next()
                    .and_then(|t| weights.iter().position(|(q, _)| *q == t))
            } else {
                None
            };
            Word { start, end, term }
        })
        .collect()
}

/// The character where the best window of `room` characters starts: a window
/// starting at most a fifth of `room` before a matching word (at the first sentence
/// that starts there, else at the first word, or 0),
/// scored by the weights of the distinct terms of the words wholly inside it; the
/// first best, 0 when nothing matches.
fn best_start(
    text: &str,
    at: &[usize],
    words: &[Word],
    room: usize,
    weights: &[(String, f64)],
) -> usize {
    let weight = |w: &Word| w.term.map(|i| (i, weights[i].1));
    let hits: Vec<(usize, usize, usize, f64)> = words
        .iter()
        .filter_map(|w| weight(w).map(|(i, x)| (w.start, w.end, i, x)))
        .collect();
    let lead = room / 5;
    let mut best = (0.0_f64, 0usize);
    let mut seen = vec![false; weights.len()];
    for &(s, _, _, _) in &hits {
        let from = s.saturating_sub(lead);
        // The first sentence that starts in the lead, else the first word.
        let start = if from == 0 {
            0
        } else {
            let first = words.partition_point(|w| w.start < from);
            let sentence = (first..words.len())
                .take_while(|&i| words[i].start <= s)
                .find(|&i| i > 0 && sentence_starts(text, at, words[i - 1].end, words[i].start));
            words[sentence.unwrap_or(first)].start.min(s)
        };
        let end = (start + room).min(at.len() - 1);
        seen.iter_mut().for_each(|x| *x = false);
        let mut score = 0.0;
        for &(hs, he, i, x) in &hits {
            if hs >= start && he <= end && !seen[i] {
                seen[i] = true;
                score += x;
            }
        }
        if score > best.0 {
            best = (score, start);
        }
    }
    best.1
}

/// Whether a sentence ends between a word ending at `end` and the next starting at
/// `start` (character positions): a `.`, `!` or `?` there.
fn sentence_starts(text: &str, at: &[usize], end: usize, start: usize) -> bool {
    text[at[end]..at[start]].contains(['.', '!', '?'])
}

/// The window from `start`, at most `room` characters, ending at the end of a word
/// when one ends in its second half (else where the room ends).
fn snap(words: &[Word], start: usize, room: usize, chars: usize) -> (usize, usize) {
    let limit = (start + room).min(chars);
    if limit == chars {
        return (start, chars);
    }
    let end = words
        .iter()
        .map(|w| w.end)
        .rfind(|&e| e <= limit && e > start + room / 2)
        .unwrap_or(limit);
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(terms: &[&str]) -> Vec<(String, f64)> {
        terms.iter().map(|t| (t.to_string(), 1.0)).collect()
    }

    #[test]
    fn a_short_line_is_not_cut() {
        assert_eq!(cut("[S1:1] user: hello there", 600, &w(&["hello"])), None);
    }

    #[test]
    fn a_long_line_keeps_its_id_and_label_and_the_matching_part() {
        let filler = "lorem ipsum dolor sit amet ".repeat(40);
        let line =
            format!("[S5:3] assistant: {filler}I have been listening to Spotify lately. {filler}");
        let c = cut(&line, 200, &w(&["spotify", "listen"])).unwrap();
        assert!(c.starts_with("[S5:3] assistant: … "), "{c}");
        assert!(c.contains("Spotify lately"), "{c}");
        assert!(c.ends_with(" …"), "{c}");
        assert!(c.chars().count() <= 200, "{}", c.chars().count());
    }

    #[test]
    fn without_a_match_the_line_starts_the_window() {
        let line = format!("Ana: {}", "word ".repeat(100));
        let c = cut(&line, 100, &w(&["absent"])).unwrap();
        assert!(c.starts_with("Ana: word word"), "{c}");
        assert!(c.ends_with(" …") && c.chars().count() <= 100, "{c}");
    }

    #[test]
    fn no_cut_leaves_less_than_the_least_window() {
        let line = "x".repeat(500);
        assert_eq!(cut(&line, MIN_WINDOW + 3, &w(&[])), None);
        assert!(cut(&line, MIN_WINDOW + 4, &w(&[])).is_some());
        // The id and label are never cut away: no room for them is no cut.
        let line = format!("[S12:30] assistant: {}", "y ".repeat(300));
        let least = "[S12:30] assistant: ".len() + MIN_WINDOW + 4;
        assert_eq!(cut(&line, least - 1, &w(&[])), None);
        assert!(
            cut(&line, least, &w(&[]))
                .unwrap()
                .starts_with("[S12:30] assistant: ")
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        // `words` skips the analysis of words that start with no term's head and
        // counts positions in bytes on ASCII text: the words and terms it finds are
        // those of every word analysed and every position counted in characters.
        #[test]
        fn words_are_those_of_the_full_analysis(
            tokens in proptest::collection::vec(proptest::sample::select(vec![
                "Studies", "study", "running", "RUN", "classes", "class", "hike",
                "Hiking", "flies", "fly", "anomalies", "the", "a", "5", "x1", "é", "日本",
                "Été", "rocks.", "Rock,", "qzx",
            ]), 0..60),
            seps in "[ .,!?é]{1,3}",
            picks in proptest::collection::vec(0usize..64, 0..5),
        ) {
            let text = tokens.join(&seps);
            let all: Vec<String> = search::words(&text).flat_map(terms).collect();
            let mut weights: Vec<(String, f64)> = Vec::new();
            for p in picks {
                let t = all.get(p).cloned().unwrap_or_else(|| format!("zz{p}"));
                if !weights.iter().any(|(u, _)| *u == t) {
                    weights.push((t, 1.0));
                }
            }
            let at: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
            let char_at = |byte: usize| at.partition_point(|&b| b < byte);
            let expected: Vec<(usize, usize, Option<usize>)> = search::words(&text)
                .map(|w| {
                    let byte = w.as_ptr() as usize - text.as_ptr() as usize;
                    let term = terms(w).into_iter().next();
                    let i = term.and_then(|t| weights.iter().position(|(q, _)| *q == t));
                    (char_at(byte), char_at(byte + w.len()), i)
                })
                .collect();
            let got: Vec<(usize, usize, Option<usize>)> = words(&text, &at, &weights)
                .into_iter()
                .map(|w| (w.start, w.end, w.term))
                .collect();
            proptest::prop_assert_eq!(got, expected);
        }

        #[test]
        fn a_cut_never_exceeds_its_cap(
            line in "[a-z é日:\\[\\]0-9]{0,400}",
            cap in 0usize..300,
        ) {
            if let Some(c) = cut(&line, cap, &w(&["ab", "é"])) {
                proptest::prop_assert!(c.chars().count() <= cap);
            }
        }
    }
}
