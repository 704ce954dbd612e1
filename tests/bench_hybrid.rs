//! The hybrid column of `memdir bench` (spec/ranking.md#hybrid-recall) against the
//! loopback stand-in of tests/embed.rs (a hashed bag of words with drink words folded
//! together: deterministic, not a model).
//!
//! The conversation is made up for this test. Its first session talks only about
//! coffee; the question about it shares no word with it, and every session is long
//! enough that the budget holds one of them. Keyword ranking has no hit and packs the
//! newest session; hybrid ranking finds the coffee session by its vector and packs it.

use std::path::{Path, PathBuf};

use memdir::bench::BenchError;
use memdir::bench::locomo::{self, Conversation, Embeddings};
use memdir::bench::longmemeval;
use serde_json::json;

use crate::common::{memdir, run, stderr, stdout};
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
        passages: false,
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

// An endpoint that cannot embed the memories fails the run (LoCoMo's and
// LongMemEval's): a hybrid column of keyword blocks would be a wrong figure.
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
        // LongMemEval's hybrid column the same way.
        let e = embeddings(&server.url);
        let err = longmemeval::run_with(&lme_instances(), &[256], Some(&e), &mut |_| {});
        assert!(matches!(err, Err(BenchError::Embed { .. })), "{err:?}");
    }
}

/// One LongMemEval instance as the data set writes it: four dated sessions of six
/// turns, the first about coffee (its turn 1 marked `has_answer`), the others on
/// their own topics; `answer` names the answer session.
fn lme_instance(id: &str, question: &str, answer: usize) -> serde_json::Value {
    let coffee = "Espresso at dawn, latte at noon, espresso again, a flat white, \
                  then espresso with a latte and one more espresso.";
    let topics: [&[&str]; 3] = [
        &["tomatoes", "greenhouse", "watering", "seedlings"],
        &["train", "platform", "timetable", "carriage"],
        &["guitar", "chords", "rehearsal", "amplifier"],
    ];
    let mut sessions = vec![
        (1..=6)
            .map(|t| json!({"role": if t % 2 == 1 { "user" } else { "assistant" }, "content": coffee}))
            .collect::<Vec<_>>(),
    ];
    for (s, topic) in topics.iter().enumerate() {
        let turns = filler(topic, "Ana", u32::try_from(s + 2).unwrap());
        sessions.push(
            turns
                .iter()
                .enumerate()
                .map(|(t, x)| json!({"role": if t % 2 == 0 { "user" } else { "assistant" }, "content": x["text"]}))
                .collect(),
        );
    }
    sessions[answer - 1][0]["has_answer"] = json!(true);
    json!({
        "question_id": id,
        "question_type": "single-session-user",
        "question": question,
        "question_date": "2024/04/02 (Tue) 10:15",
        "haystack_session_ids": ["h1", "h2", "h3", "h4"],
        "haystack_dates": [
            "2024/03/03 (Sun) 09:00",
            "2024/03/10 (Sun) 09:00",
            "2024/03/17 (Sun) 09:00",
            "2024/03/24 (Sun) 09:00"
        ],
        "haystack_sessions": sessions,
        "answer_session_ids": [format!("h{answer}")],
    })
}

/// Two questions written as a `.jsonl` file in `dir` (made up for this test, no
/// LongMemEval data).
fn write_lme(dir: &Path) -> PathBuf {
    let path = dir.join("tiny.jsonl");
    let lines = [
        // Shares no word with session 1; similar to it only by meaning.
        lme_instance("coffee", "Cappuccino? Coffee?", 1),
        // Found by keywords in both columns.
        lme_instance("timetable", "Which timetable?", 3),
    ]
    .map(|v| v.to_string());
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// The two questions, read back as the benchmark reads its data.
fn lme_instances() -> Vec<longmemeval::Instance> {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    longmemeval::for_each(&write_lme(dir.path()), None, &mut |q| {
        out.push(q);
        Ok(())
    })
    .unwrap();
    out
}

// spec/ranking.md#a-third-benchmark-longmemevals-real-chats: `bench longmemeval`
// has the hybrid column of `bench locomo`: the blocks `context` gives with
// [embeddings] configured (checked on the first question), and `recall` on the
// configured store, beside the keyword column, which stays the plain run's.
#[test]
fn longmemeval_has_the_hybrid_column_too() {
    let server = serve(Behaviour::Good);
    let qs = lme_instances();
    let budgets = [256, 4096];
    let e = embeddings(&server.url);
    let (r, timing) = longmemeval::run_with(&qs, &budgets, Some(&e), &mut |_| {}).unwrap();
    let h = r.hybrid.as_ref().expect("the run says it ran hybrid");
    assert_eq!((h.passages, h.fallbacks), (8, 0));
    assert_eq!((timing.passages, timing.queries, timing.recalls), (8, 2, 2));
    // At 256 tokens keywords miss the coffee session; hybrid finds it; both find the
    // timetable one.
    let small = &r.budgets[0].answerable;
    let hybrid = small.hybrid.as_ref().unwrap();
    assert_eq!(
        (small.memdir.answer_sessions, small.memdir.answer_turns),
        (0.5, 0.5)
    );
    assert_eq!((hybrid.answer_sessions, hybrid.answer_turns), (1.0, 1.0));
    assert!(small.baseline.answer_sessions <= 0.5, "{small:?}");
    let typed = &r.budgets[0].types["single-session-user"];
    assert_eq!(typed.hybrid.as_ref(), Some(hybrid));
    // With room for everything, both columns hold all evidence.
    let big = &r.budgets[1].answerable;
    assert_eq!(big.memdir.answer_turns, 1.0);
    assert_eq!(big.hybrid.as_ref().unwrap().answer_turns, 1.0);
    // recall: keywords rank nothing for the coffee question; hybrid ranks it first.
    assert_eq!(r.recall.mrr, 0.5);
    let hr = r.hybrid_recall.as_ref().unwrap();
    assert_eq!((hr.questions, hr.recall_any_at_5, hr.mrr), (2, 1.0, 1.0));
    assert_eq!(r.hybrid_recall_types.as_ref().unwrap().len(), 1);
    assert_eq!(r.lost_steps.hybrid, Some(0));

    // Without an endpoint the report is the keyword one, with no hybrid fields.
    let plain = longmemeval::run(&qs, &budgets, &mut |_| {}).unwrap();
    assert!(plain.hybrid.is_none() && plain.lost_steps.hybrid.is_none());
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("hybrid"), "{text}");
    for (a, b) in plain.budgets.iter().zip(&r.budgets) {
        assert_eq!(a.answerable.memdir, b.answerable.memdir);
        assert_eq!(a.answerable.baseline, b.answerable.baseline);
    }
    assert_eq!(plain.recall, r.recall);
    assert_eq!(
        (plain.lost_steps.steps, plain.lost_steps.memdir),
        (r.lost_steps.steps, r.lost_steps.memdir)
    );
}

// A question whose embedding fails after its store was embedded is a fallback, its
// hybrid block the keyword block; abstention questions count as the others do.
#[test]
fn longmemeval_counts_each_question_that_fell_back() {
    let server = serve(Behaviour::RefuseWord);
    let raw = lme_instance("coffee", "Cappuccino? Coffee?", 1);
    let mut abs = raw.clone();
    abs["question_id"] = json!("coffee_abs");
    let qs: Vec<longmemeval::Instance> = [raw, abs]
        .iter()
        .map(|v| longmemeval::convert(&serde_json::from_value(v.clone()).unwrap()).unwrap())
        .collect();
    let e = embeddings(&server.url);
    let (r, _) = longmemeval::run_with(&qs, &[256], Some(&e), &mut |_| {}).unwrap();
    assert_eq!((r.questions, r.abstention_questions), (1, 1));
    assert_eq!(r.hybrid.as_ref().unwrap().fallbacks, 2);
    let b = &r.budgets[0];
    assert_eq!(b.answerable.hybrid.as_ref(), Some(&b.answerable.memdir));
    assert_eq!(b.abstention.hybrid.as_ref(), Some(&b.abstention.memdir));
}

// spec/cli.md: `bench longmemeval --embed-url` prints the hybrid column beside the
// keyword one and the baseline, its recall table, its lost steps and, on stderr, where
// its time went; `--json` carries the same figures.
#[test]
fn bench_longmemeval_prints_the_hybrid_column() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let data = write_lme(dir.path());
    let args = |json: bool| {
        let mut a: Vec<String> = [
            "bench",
            "longmemeval",
            "--data",
            data.to_str().unwrap(),
            "--budgets",
            "256,4096",
            "--embed-url",
            &server.url,
            "--embed-model",
            "stand-in",
            "--embed-dim",
            "256",
        ]
        .map(String::from)
        .to_vec();
        if json {
            a.push("--json".into());
        }
        a
    };
    let o = run(memdir(dir.path()).args(args(false)));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for want in [
        "budget  sessions  hybrid  (base)  turns  hybrid  (base)",
        "   256     0.500   1.000",
        "memdir (hybrid, baseline)",
        "recall QUESTION on the store configured with the embeddings (hybrid ranking)",
        "stand-in, 256 dimensions; 8 memories embedded, 0 questions fell back",
        ", hybrid 0, baseline",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
    let err = stderr(&o);
    assert!(
        err.contains("embedded 8 memories") && err.contains("hybrid recall of 2 questions"),
        "{err}"
    );
    let o = run(memdir(dir.path()).args(args(true)));
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["hybrid"]["passages"], 8, "{r}");
    assert_eq!(
        r["budgets"][0]["answerable"]["hybrid"]["answer_turns"], 1.0,
        "{r}"
    );
    assert_eq!(r["hybrid_recall"]["mrr"], 1.0, "{r}");
    assert_eq!(r["lost_steps"]["hybrid"], 0, "{r}");
}

// spec/ranking.md#passages: `--embed-passages` configures each store with passages
// and a budget no question exceeds, so the lines are embedded and no question falls
// back; without an embedder the flag is refused before anything runs.
#[test]
fn bench_embed_passages_embeds_the_lines_and_needs_an_embedder() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let data = write_lme(dir.path());
    let base = |extra: &[&str]| {
        let mut a: Vec<String> = ["bench", "longmemeval", "--data", data.to_str().unwrap()]
            .map(String::from)
            .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let embed = [
        "--embed-url",
        &server.url,
        "--embed-model",
        "stand-in",
        "--embed-dim",
        "256",
        "--json",
    ];
    let o = run(memdir(dir.path()).args(base(&embed)));
    assert!(o.status.success(), "{}", stderr(&o));
    let without = server.texts();
    let o = run(memdir(dir.path()).args(base(&[&embed[..], &["--embed-passages"]].concat())));
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["hybrid"]["fallbacks"], 0, "{r}");
    // The same memories and questions, and the lines besides.
    assert!(
        server.texts() - without > without,
        "{without} texts without passages, {} with",
        server.texts() - without
    );
    let o = run(memdir(dir.path()).args(base(&["--embed-passages"])));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--embed-builtin"), "{}", stderr(&o));
}
