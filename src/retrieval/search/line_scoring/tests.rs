//! Tests of line scoring: the feedback pass (what it rescans, what it feeds back),
//! the order of best-line keys, and line scores case by case.

use super::*;
use crate::memory::Record;
use crate::retrieval::search::tests::numbered;
use crate::retrieval::search::tests::random_records;
use crate::retrieval::search::tests::with_postings;

/// The feedback pass of a scan rescans only the memories with a line that holds
/// a fed-back term; the others keep the first pass's scores, which are what a
/// rescan gives them, bit for bit.
#[test]
fn a_feedback_pass_keeps_the_scores_of_memories_without_a_new_term() {
    let bodies = [
        "cello and zebra\nzebra stripes",
        "cello tempo",
        "zebra crossing",
    ];
    let records: Vec<Record> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut r = numbered(i);
            r.body = (*b).into();
            r
        })
        .collect();
    let c = Corpus::new(&records);
    let reused = c.line_relevance_by("cello", true);
    // `zebra` is fed back: m1 (no zebra) keeps its first-pass score, m2 (zebra
    // only) is rescanned.
    assert!(reused.of(1)[0] > 0.0 && reused.of(2)[0] > 0.0, "{reused:?}");
    assert_eq!(reused, c.line_relevance_by("cello", false));
    let queries = [
        "cello",
        "Ana cello tempo",
        "knee physio tempo run",
        "flat white",
        "Paris dog",
    ];
    for seed in 1..=12 {
        let records = random_records(seed, 40);
        let c = Corpus::new(&records);
        for q in queries {
            let (a, b) = (c.line_relevance_by(q, true), c.line_relevance_by(q, false));
            // Bit for bit (0.0 and -0.0 apart too).
            let bits = |l: &LineScores| l.all().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "seed {seed}, {q:?}");
        }
    }
}

#[test]
fn feedback_takes_no_terms_from_tags() {
    // The best lines for `parrot` are D7:1 and D7:2. Their content brings `kiwi`
    // (so D2:1 scores); their tags would bring `d7`, `1` and `2`, which would
    // lift D7:3 and D2:2, which say nothing of the kind.
    let mut a = numbered(0);
    a.body = "[D7:1] Ana: I adopted a parrot, Kiwi\n[D7:2] Ana: the parrot squawks at dawn\n[D7:3] Bo: the weather was grey".into();
    let mut b = numbered(1);
    b.body = "[D2:1] Cy: Kiwi likes apples\n[D2:2] Cy: a grey morning".into();
    let records = vec![a, b];
    for c in [Corpus::new(&records), with_postings(&records)] {
        let lines = c.line_relevance("parrot");
        assert!(lines.of(0)[0] > 0.0 && lines.of(0)[1] > 0.0);
        assert!(
            lines.of(1)[0] > 0.0,
            "feedback from what the best lines say"
        );
        assert_eq!(lines.of(0)[2], 0.0, "the tag D7 is not fed back");
        assert_eq!(lines.of(1)[1], 0.0, "the tag's number is not fed back");
    }
}

/// Scores the lines of one-memory-per-body records for `query`; returns each
/// memory's line scores.
fn line_scores(bodies: &[&str], query: &str) -> Vec<Vec<f64>> {
    let records: Vec<Record> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut r = numbered(i);
            r.body = (b.to_string()).into();
            r
        })
        .collect();
    Corpus::new(&records)
        .score(&records, query)
        .lines
        .iter()
        .map(<[f64]>::to_vec)
        .collect()
}

#[test]
fn best_keys_order_as_by_score_desc() {
    // Scores across magnitudes, with ties broken by place.
    let scores = [
        1e-300,
        1e-9,
        0.25,
        0.5,
        0.5000000000000001,
        1.0,
        2.0,
        7.5,
        1e300,
    ];
    let mut items: Vec<(f64, (usize, usize))> = Vec::new();
    for (i, &s) in scores.iter().enumerate() {
        for place in [(0, 0), (0, 1), (1, 0), (i, 3), (u32::MAX as usize, 7)] {
            items.push((s, place));
        }
    }
    for &(s, p) in &items {
        assert_eq!(key_parts(best_key(s, p.0, p.1)), (s, p));
    }
    let mut want = items.clone();
    want.sort_by(by_score_desc);
    let mut keys: Vec<u128> = items.iter().map(|&(s, (a, b))| best_key(s, a, b)).collect();
    keys.sort_unstable_by(|a, b| b.cmp(a));
    let got: Vec<_> = keys.into_iter().map(key_parts).collect();
    assert_eq!(got, want);
}

#[test]
fn line_scores_cases() {
    // spec/ranking.md#query-aware-context-measured-on-locomo
    // The best line scores 1; a line without any query term (or feedback term) 0.
    let s = line_scores(
        &["Ana: cello lessons\nBen: weather is nice\nAna: pizza"],
        "cello",
    );
    assert_eq!(s[0][0], 1.0);
    assert_eq!(s[0][1], 0.0);
    // What the named person said beats the same words said to them.
    let s = line_scores(
        &["Ben: Ana, your cello sounds great\nAna: my cello sounds great\nBo: x"],
        "Ana cello",
    );
    assert!(s[0][1] > s[0][0], "{s:?}");
    // Query words next to each other in a line beat the same words apart.
    let s = line_scores(
        &["the art show opens\nshow me your art\nunrelated\nmore unrelated"],
        "art show",
    );
    assert!(s[0][0] > s[0][1], "{s:?}");
    // Feedback: a term shared by the best lines reaches a line without query terms.
    let s = line_scores(
        &["cello and zebra\nzebra stripes\nnothing here\nor here\nnor here"],
        "cello",
    );
    assert!(s[0][1] > 0.0, "{s:?}");
    assert_eq!(s[0][2], 0.0);
    // Lines are scored across memories on one scale.
    let s = line_scores(&["x cello y", "cello cello\nno"], "cello");
    assert!(s[0][0] > 0.0 && s[1][0] > 0.0);
    assert_eq!(s.iter().flatten().copied().fold(0.0, f64::max), 1.0);
}

/// Through the postings a corpus sums in arrays it keeps between calls: a rare
/// term's few lines are listed and read one by one, a common term's lines read in a
/// walk over all. Queries of either kind, one after the other, with scores held
/// while the next are made, and after a memory changed, score as by a scan of a
/// new corpus each time (arrays given back not all zero would add to the next).
#[test]
fn kept_line_arrays_score_as_new_ones() {
    let mut records = random_records(5, 200);
    // Words no other memory has: feedback brings in no common term.
    records[17].body = "Zed: saxophone reeds\nZed: a saxophone teacher of reeds".into();
    let kept = with_postings(&records);
    let fresh = Corpus::new(&records);
    let queries = [
        "saxophone",
        "saxophone teacher",
        "teacher",
        "cello tempo",
        "Ana saxophone",
        "knee",
        "nothing",
    ];
    let mut listed = [false, false];
    for round in 0..3 {
        let mut held = Vec::new();
        for q in queries {
            let got = kept.line_relevance(q);
            if let Held::Met(b, _) = &got.0 {
                listed[usize::from(b.met.whole())] = true;
            }
            assert_eq!(got, fresh.line_relevance(q), "round {round}, {q:?}");
            if round == 1 {
                held.push(got);
            }
        }
    }
    assert_eq!(listed, [true, true], "both ways of reading the lines met");
    let mut kept = kept;
    let mut changed = records.clone();
    changed[17].body = "Zed: saxophone teacher".into();
    let d = kept.analyze(&changed[17]);
    kept.replace(17, d);
    let fresh = Corpus::new(&changed);
    for q in queries {
        assert_eq!(
            kept.line_relevance(q),
            fresh.line_relevance(q),
            "changed, {q:?}"
        );
    }
}

/// Through the postings a pass keeps each term's share by line length and count
/// (below `SHARE_LENS` and up to `SHARE_COUNTS`) and computes the others as they
/// come: lines on both sides of those bounds score as the scan, bit for bit.
#[test]
fn postings_score_lines_of_every_length_and_count_as_the_scan() {
    let filler = ["river", "stone", "lamp", "garden", "window", "bread"];
    let mut records: Vec<Record> = [1, 3, 40, SHARE_LENS - 2, SHARE_LENS + 7, 600]
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let body: Vec<String> = (1..=SHARE_COUNTS + 2)
                .map(|count| {
                    // `count` times cello (a pair with tempo once), then filler to
                    // about `len` words.
                    let mut words = vec!["cello"; count];
                    words.push("tempo");
                    words.extend((0..len).map(|k| filler[(k + count) % filler.len()]));
                    words.join(" ")
                })
                .collect();
            let mut r = numbered(i);
            r.body = body.join("\n").into();
            r
        })
        .collect();
    // Lines of 29 to 34 terms with a pair at their end, its terms at both ends, or
    // a label first: below 32 terms a post's positions are exact, from 32 on known
    // modulo 32.
    for len in 29..=34 {
        let fill = |n: usize| filler.iter().cycle().take(n).copied().collect::<Vec<_>>();
        let ends = [
            [fill(len - 2), vec!["cello", "tempo"]].concat(),
            [vec!["tempo"], fill(len - 2), vec!["cello"]].concat(),
            [vec!["cello"], fill(len - 2), vec!["tempo"]].concat(),
            [vec!["Tempo:", "cello"], fill(len - 3), vec!["tempo"]].concat(),
        ];
        let mut r = numbered(records.len());
        r.body = ends.map(|w| w.join(" ")).join("\n").into();
        records.push(r);
    }
    let (scan, through) = (Corpus::new(&records), with_postings(&records));
    // Pairs in a row (`cello lamp`, `lamp tempo`) and a term twice: lines hold the
    // first and last terms side by side without the middle one (`cello tempo`,
    // no lamp between), which no pair of the query is.
    let queries = [
        "cello",
        "cello tempo",
        "tempo cello river",
        "lamp",
        "cello lamp tempo",
        "lamp cello tempo lamp river",
    ];
    for q in queries {
        let bits = |c: &Corpus| {
            let s = c.score(&records, q);
            let lines: Vec<u64> = s.lines.all().iter().map(|x| x.to_bits()).collect();
            (s.memory, lines)
        };
        let (a, b) = (bits(&scan), bits(&through));
        assert!(a.1.iter().any(|&x| f64::from_bits(x) > 0.0), "{q}");
        assert_eq!(a, b, "{q}");
    }
}
