//! The builtin embedding model (feature `embed-builtin`, spec/ranking.md#hybrid-recall):
//! the real paraphrase-MiniLM-L3-v2 as pocket-encoder bundles it, run in process, no
//! endpoint. Compiled only with the feature (`.ci/run` runs it).

use memdir::{Clock, ContextRequest, Draft, Memory};
use serde_json::Value;

use crate::common::{fixture, memdir, run, stderr, stdout};

fn write(dir: &std::path::Path) {
    for (key, name, body) in [
        (
            "user_coffee",
            "Caroline's coffee",
            "Caroline always starts her day with a flat white.",
        ),
        (
            "project_football",
            "Saturday football",
            "The team plays football on Saturday mornings.",
        ),
        (
            "project_deploys",
            "Deploy schedule",
            "Deploys go out on Friday after review.",
        ),
    ] {
        let o = run(memdir(dir).args([
            "write",
            key,
            "--name",
            name,
            "--description",
            name,
            "--type",
            "user",
            "--body",
            body,
        ]));
        assert!(o.status.success(), "{}", stderr(&o));
    }
}

fn recall(dir: &std::path::Path, q: &str) -> Value {
    let o = run(memdir(dir).args(["recall", q, "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn keys(doc: &Value) -> Vec<String> {
    doc["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["key"].as_str().unwrap().to_string())
        .collect()
}

fn configure(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join(".memdir")).unwrap();
    std::fs::write(
        dir.join(".memdir/config.toml"),
        "[embeddings]\nprovider = \"builtin\"\n",
    )
    .unwrap();
}

// A question that shares no word with its memory: keyword recall cannot find it, the
// builtin model does, with nothing but `provider = "builtin"` configured; `index
// --embeddings` embeds every memory in process.
#[test]
fn the_builtin_model_finds_a_memory_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let q = "what does she like to drink in the morning?";
    let kw = recall(dir.path(), q);
    assert!(kw.get("mode").is_none(), "{kw}");
    assert!(!keys(&kw).contains(&"user_coffee".to_string()), "{kw}");
    configure(dir.path());
    let o = run(memdir(dir.path()).args(["index", "--embeddings", "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["embeddings"]["embedded"], 3, "{doc}");
    assert_eq!(
        doc["embeddings"]["model"],
        "pocket-encoder/minilm-l3-q4-g32-v1"
    );
    let hy = recall(dir.path(), q);
    assert_eq!(hy["mode"], "hybrid", "{hy}");
    assert!(hy.get("fallback").is_none(), "{hy}");
    assert!(keys(&hy).contains(&"user_coffee".to_string()), "{hy}");
    assert!(!keys(&hy).contains(&"project_deploys".to_string()), "{hy}");
}

// The paraphrase set (no question shares a term with its memory): keyword recall@5 is
// zero by construction; the builtin model measured 0.65 here (2026-11-24). The bar
// leaves room for numeric differences between machines, not for a broken path.
#[test]
fn the_builtin_model_finds_paraphrases() {
    let o = run(memdir(tempfile::tempdir().unwrap().path()).args([
        "bench",
        "paraphrase",
        "--data",
        fixture("paraphrase/set.json").to_str().unwrap(),
        "--k",
        "5",
        "--embed-builtin",
        "--json",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["hybrid"]["fallbacks"], 0, "{r}");
    assert_eq!(r["keyword_recall"], 0.0, "{r}");
    assert!(r["hybrid_recall"].as_f64().unwrap() >= 0.5, "{r}");
}

// A warm store (memdir mcp) with the builtin model ranks and packs as a fresh process.
#[test]
fn a_warm_store_with_the_builtin_model_answers_as_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    configure(dir.path());
    let clock = || Clock::fixed("2026-04-20T09:00:00Z".parse().unwrap());
    let warm = Memory::open(dir.path())
        .unwrap()
        .with_clock(clock())
        .keep_warm();
    let context = |m: &Memory, q: &str| {
        let c = m.context(&ContextRequest::new(2000).with_query(q)).unwrap();
        (c.block.text, serde_json::to_value(c.embeddings).unwrap())
    };
    let q = "morning drinks";
    let first = context(&warm, q);
    assert_eq!(first.1["mode"], "hybrid", "{:?}", first.1);
    warm.write(&Draft {
        key: "tea".into(),
        name: "Afternoon tea".into(),
        description: "Afternoon tea".into(),
        kind: "user".into(),
        body: "She has an Earl Grey at four.".into(),
        ..Draft::default()
    })
    .unwrap();
    let fresh = Memory::open(dir.path()).unwrap().with_clock(clock());
    for q in [q, "hot beverages", "when is the release"] {
        assert_eq!(context(&warm, q), context(&fresh, q), "{q}");
    }
}

// On the query path the builtin model embeds the query whatever the time, then
// memories while `timeout_ms` lasts: with 1 ms, none (each takes several), so they
// are pending and ranked by keywords this time, and nothing falls back.
#[test]
fn the_builtin_model_embeds_memories_on_the_query_path_within_the_time_budget() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    std::fs::write(
        dir.path().join(".memdir/config.toml"),
        "[embeddings]\nprovider = \"builtin\"\ntimeout_ms = 1\n",
    )
    .unwrap();
    let q = "what does she like to drink in the morning?";
    let first = recall(dir.path(), q);
    assert_eq!(first["mode"], "hybrid", "{first}");
    assert!(first.get("fallback").is_none(), "{first}");
    assert_eq!(first["pending"], 3, "{first}");
    configure(dir.path());
    let second = recall(dir.path(), q);
    assert!(second.get("pending").is_none(), "{second}");
    assert!(
        keys(&second).contains(&"user_coffee".to_string()),
        "{second}"
    );
}
