//! The hybrid column of `memdir bench` (spec/ranking.md#hybrid-recall) against the
//! loopback stand-in of tests/embed.rs (a hashed bag of words with drink words folded
//! together: deterministic, not a model).
//!
//! The conversation is made up for this test. Its first session talks only about
//! coffee; the question about it shares no word with it, and every session is long
//! enough that the budget holds one of them. Keyword ranking has no hit and packs the
//! newest session; hybrid ranking finds the coffee session by its vector and packs it.

use memdir::bench::BenchError;
use memdir::bench::locomo::{self, Conversation, Embeddings};
use serde_json::json;

use crate::embed::{Behaviour, serve};

/// Enough text for a session to fill most of a 256-token budget by itself.
fn filler(topic: &[&str], speaker: &str, session: u32) -> Vec<serde_json::Value> {
    (1..=6)
        .map(|t| {
            json!({
                "speaker": if t % 2 == 1 { speaker } else { "Ben" },
                "dia_id": format!("D{session}:{t}"),
                "text": format!(
                    "{} {} {} {} {} {} {} {} {} {} {} {}.",
                    topic[0], topic[1], topic[2], topic[0], topic[3], topic[1],
                    topic[2], topic[3], topic[0], topic[1], topic[2], topic[3]
                ),
            })
        })
        .collect()
}

fn conversation() -> Vec<Conversation> {
    let coffee: Vec<serde_json::Value> = (1..=6)
        .map(|t| {
            json!({
                "speaker": if t % 2 == 1 { "Ana" } else { "Ben" },
                "dia_id": format!("D1:{t}"),
                "text": "Espresso at dawn, latte at noon, espresso again, a flat white, \
                         then espresso with a latte and one more espresso.",
            })
        })
        .collect();
    let data = json!([{
        "sample_id": "stand-in",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "9:00 am on 3 March, 2024",
            "session_1": coffee,
            "session_2_date_time": "9:00 am on 10 March, 2024",
            "session_2": filler(&["tomatoes", "greenhouse", "watering", "seedlings"], "Ana", 2),
            "session_3_date_time": "9:00 am on 17 March, 2024",
            "session_3": filler(&["train", "platform", "timetable", "carriage"], "Ana", 3),
            "session_4_date_time": "9:00 am on 24 March, 2024",
            "session_4": filler(&["guitar", "chords", "rehearsal", "amplifier"], "Ana", 4),
        },
        "qa": [
            // Shares no word with session 1; similar to it only by meaning (the stand-in's drink bucket).
            {"question": "Cappuccino? Coffee?", "evidence": ["D1:1"], "category": 1},
            // Found by keywords in both columns.
            {"question": "Which timetable?", "evidence": ["D3:1"], "category": 2},
        ]
    }]);
    locomo::parse(&data).unwrap()
}

fn embeddings(url: &str) -> Embeddings {
    Embeddings {
        builtin: false,
        url: url.to_string(),
        model: "stand-in".into(),
        dimensions: 256,
        timeout_ms: 5_000,
    }
}

// spec/ranking.md#hybrid-recall: the hybrid column scores the blocks `context` gives
// with [embeddings] configured (the bench asserts that equality on each conversation's
// first question), and it differs from the keyword column where only a vector finds
// the evidence.
#[test]
fn the_hybrid_column_finds_what_only_vectors_find() {
    let server = serve(Behaviour::Good);
    let convs = conversation();
    let budgets = [256, 4096];
    let (r, timing) = locomo::run_with(
        "t",
        &convs,
        &budgets,
        Some(&embeddings(&server.url)),
        &mut |_| {},
    )
    .unwrap();
    let h = r.hybrid.as_ref().expect("the run says it ran hybrid");
    assert_eq!((h.passages, h.fallbacks), (4, 0));
    assert_eq!((timing.passages, timing.queries), (4, 2));
    let small = &r.budgets[0];
    let cat = |m: &std::collections::BTreeMap<u8, locomo::Score>, c: u8| m[&c].evidence_recall;
    let hybrid = small.hybrid_categories.as_ref().unwrap();
    // The coffee question: missed by keywords at 256 tokens, found by hybrid.
    assert_eq!(cat(&small.categories, 1), 0.0, "{small:?}");
    assert_eq!(cat(hybrid, 1), 1.0, "{small:?}");
    // The timetable question: both find it.
    assert_eq!(cat(&small.categories, 2), 1.0, "{small:?}");
    assert_eq!(cat(hybrid, 2), 1.0, "{small:?}");
    assert_eq!(small.answerable.evidence_recall, 0.5);
    assert_eq!(small.hybrid.as_ref().unwrap().evidence_recall, 1.0);
    // With room for everything, both columns hold all evidence.
    let big = &r.budgets[1];
    assert_eq!(big.answerable.evidence_recall, 1.0);
    assert_eq!(big.hybrid.as_ref().unwrap().evidence_recall, 1.0);

    // Without an endpoint the report is the keyword one, with no hybrid fields at all.
    let plain = locomo::run_named("t", &convs, &budgets, &mut |_| {}).unwrap();
    assert!(plain.hybrid.is_none());
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("hybrid"), "{text}");
    // And its keyword column is the hybrid run's keyword column.
    for (a, b) in plain.budgets.iter().zip(&r.budgets) {
        assert_eq!(a.answerable, b.answerable);
        assert_eq!(a.categories, b.categories);
        assert_eq!(a.baseline, b.baseline);
    }
}

// An endpoint that cannot embed the memories fails the run: a hybrid column of
// keyword blocks would be a wrong figure.
#[test]
fn the_hybrid_column_fails_when_memories_cannot_be_embedded() {
    for behaviour in [Behaviour::WrongDims, Behaviour::ServerError] {
        let server = serve(behaviour);
        let err = locomo::run_with(
            "t",
            &conversation(),
            &[256],
            Some(&embeddings(&server.url)),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(matches!(err, BenchError::Embed { .. }), "{err}");
    }
}
