//! Tests of `engine::hybrid`: the cache rows, and passages (spec/ranking.md#passages)
//! with an embedder of hand-set vectors.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::embed::Provider;
use crate::memory::index::tests::rec;

#[test]
fn rows_are_scattered_when_more_than_one_in_sixteen_go_back() {
    let inc: Vec<Option<usize>> = (0..32).map(Some).collect();
    assert!(!scattered(&inc));
    // A memory edited (its new vector appended) and one without a vector yet.
    let mut edited = inc.clone();
    edited[5] = Some(40);
    edited[9] = None;
    assert!(!scattered(&edited));
    // The order of a file sorted by hash.
    let shuffled: Vec<Option<usize>> = (0..32).map(|i| Some((i * 7) % 32)).collect();
    assert!(scattered(&shuffled));
    assert!(!scattered(&[]));
}

/// Hand-set vectors: a memory's text by its name, a line by what it says, the
/// query "espresso" along the first axis. Counts the texts it is asked for.
struct Fixed(std::sync::Arc<AtomicUsize>);

/// A text [`Fixed`] refuses: the request that holds it fails.
const REFUSED: &str = "refuse this line";

impl Embedder for Fixed {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.iter().any(|t| t == REFUSED) {
            return Err(EmbedError::Endpoint {
                url: "fixed".into(),
                reason: "refused this batch".into(),
            });
        }
        self.0.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| match t.as_str() {
                "espresso" => vec![1.0, 0.0],
                t if t.starts_with("Notes\n") => vec![0.6, 0.8],
                t if t.starts_with("Cafe\n") => vec![0.9, 0.44],
                t if t.contains('\n') => vec![0.1, 1.0],
                t if t.contains("flat white") => vec![1.0, 0.1],
                _ => vec![0.0, 1.0],
            })
            .collect())
    }
    fn dimensions(&self) -> usize {
        2
    }
    fn model_id(&self) -> &str {
        "fixed"
    }
}

fn with_body(key: &str, name: &str, body: &str) -> Record {
    let mut r = rec(key, "user", name, name, "2026-04-01T09:00:00Z");
    r.body = body.into();
    r
}

fn passages_store() -> Vec<Record> {
    vec![
        with_body(
            "diary",
            "Diary",
            "Caroline went to the market.\nShe always starts with a flat white.\n\nThe weather was grey.",
        ),
        with_body(
            "notes",
            "Notes",
            "Caroline Caroline notes about Caroline and work.",
        ),
        with_body("cafe", "Cafe", "Opening hours are nine to five."),
        with_body("deploys", "Deploys", "Deploys go out on Friday."),
    ]
}

/// A one-shot state for `records` on `backend`, the query and memories embedded.
fn fetched<'a>(
    backend: &'a Backend,
    records: &[Record],
    budget: usize,
    texts: &std::sync::Arc<AtomicUsize>,
) -> State<'a> {
    let config = Config {
        provider: Provider::OpenAi,
        url: String::new(),
        model: "fixed".into(),
        dimensions: 2,
        api_key_env: "MEMDIR_TEST_UNSET_KEY_VAR".into(),
        timeout: std::time::Duration::from_secs(5),
        floor: 0.3,
        query_budget: budget,
        batch_size: 2,
        passages: true,
    };
    let mut hy = State::Planned {
        rel: cache::file(&config.model, config.dimensions),
        config,
        embedder: Box::new(Fixed(texts.clone())),
        backend,
        vectors: None,
        missing: None,
        hashes: None,
    };
    hy.prepare(records);
    hy.fetch("espresso");
    hy
}

// spec/ranking.md#passages: a memory whose own vector misses the query (the diary's
// whole text) is as similar as its best line (the flat white), compared for the best
// memories only; the lines are embedded once, a batch at a time, and those past the
// budget are counted as pending.
#[test]
fn a_memory_is_ranked_by_its_best_line_when_passages_are_on() {
    let backend = Backend::Mem(Mutex::new(std::collections::BTreeMap::new()));
    let records = passages_store();
    let keyword = vec![0.5, 1.0, 0.0, 0.0];
    let texts = std::sync::Arc::new(AtomicUsize::new(0));
    let mut hy = fetched(&backend, &records, 63, &texts);
    assert!(hy.wants_passages());
    // The query and four memories.
    assert_eq!(texts.load(Ordering::SeqCst), 5);
    let (first, report, none) = hy.finish(&records, keyword.clone(), None);
    assert!(none.is_none());
    assert_eq!(report.map(|r| r.mode), Some("hybrid"));
    // By whole texts the notes come first (keywords and vectors agree), the cafe is a
    // vector-only hit, the deploys are not a hit.
    assert!(
        first[1] > first[0] && first[2] > 0.0 && first[3] == 0.0,
        "{first:?}"
    );

    let mut plan = hy.plan_passages(&records, &first, None);
    // The diary's three non-blank lines, the notes' and the cafe's one each.
    assert_eq!(plan.missing.len(), 5);
    hy.fetch_passages(&mut plan);
    assert_eq!(texts.load(Ordering::SeqCst), 10);
    let (rel, report, passages) = hy.finish(&records, keyword.clone(), Some(&plan));
    let report = report.unwrap();
    assert_eq!(
        (report.mode, report.pending, report.pending_lines),
        ("hybrid", 0, 0)
    );
    assert!(rel[0] > rel[1], "the diary's line puts it first: {rel:?}");
    let p = passages.unwrap();
    assert!(p.of(0, 1).unwrap() > 0.99, "the flat white");
    assert_eq!(p.of(0, 2), None, "a blank line is no passage");
    assert_eq!(p.of(1, 0), Some(0.0));
    assert_eq!(p.of(3, 0), None, "not a hit: its lines are not compared");
    // Cached: a second plan over the same vectors has nothing to embed.
    let again = hy.plan_passages(&records, &first, None);
    assert!(again.missing.is_empty());
    // And the cache file holds them for the next process.
    let texts2 = std::sync::Arc::new(AtomicUsize::new(0));
    let next = fetched(&backend, &records, 63, &texts2);
    assert_eq!(texts2.load(Ordering::SeqCst), 1, "only the query");
    let plan = next.plan_passages(&records, &first, None);
    assert!(plan.missing.is_empty());
    assert_eq!(next.finish(&records, keyword, Some(&plan)).0, rel);
}

#[test]
fn passages_past_the_budget_are_pending() {
    let backend = Backend::Mem(Mutex::new(std::collections::BTreeMap::new()));
    let records = passages_store();
    let keyword = vec![0.5, 1.0, 0.0, 0.0];
    let texts = std::sync::Arc::new(AtomicUsize::new(0));
    let mut hy = fetched(&backend, &records, 2, &texts);
    let (first, _, _) = hy.finish(&records, keyword.clone(), None);
    let mut plan = hy.plan_passages(&records, &first, None);
    assert_eq!(plan.missing.len(), 2);
    hy.fetch_passages(&mut plan);
    let (_, report, _) = hy.finish(&records, keyword, Some(&plan));
    // Two memories embedded (the cafe, without a vector, is no hit): the diary's
    // three lines and the notes' one, two of them embedded.
    let report = report.unwrap();
    assert_eq!((report.pending, report.pending_lines), (2, 2));
}

// spec/ranking.md#passages: a failed embedding of the lines leaves them pending and
// says why, in the report and its warning; the memories are ranked as before.
#[test]
fn a_failed_line_embedding_says_why() {
    let backend = Backend::Mem(Mutex::new(std::collections::BTreeMap::new()));
    let mut records = passages_store();
    records[0].body =
        format!("Caroline went to the market.\n{REFUSED}\nThe weather was grey.").into();
    let keyword = vec![0.5, 1.0, 0.0, 0.0];
    let texts = std::sync::Arc::new(AtomicUsize::new(0));
    let mut hy = fetched(&backend, &records, 63, &texts);
    let (first, report, _) = hy.finish(&records, keyword.clone(), None);
    assert_eq!(report.as_ref().and_then(|r| r.lines_fallback.clone()), None);
    let mut plan = hy.plan_passages(&records, &first, None);
    let at = plan
        .missing
        .iter()
        .position(|(_, t)| t == REFUSED)
        .expect("the refused line is planned");
    let planned = plan.missing.len();
    hy.fetch_passages(&mut plan);
    let (_, report, _) = hy.finish(&records, keyword, Some(&plan));
    let report = report.unwrap();
    assert_eq!(report.mode, "hybrid");
    // Batches of two: those before the refused line's were embedded; its batch and
    // the rest are pending.
    assert_eq!(report.pending_lines, planned - at / 2 * 2);
    let why = report.lines_fallback.clone().expect("a reason");
    assert!(why.contains("refused this batch"), "{why}");
    let warning = report.warning().unwrap();
    let want = format!("{} lines could not be embedded", report.pending_lines);
    assert!(warning.starts_with(&want), "{warning}");
    let mut doc = serde_json::json!({});
    report.add_to(&mut doc);
    assert_eq!(doc["lines_fallback"], serde_json::json!(why));
}

// spec/ranking.md#passages: dropping the vectors no memory uses keeps the lines'
// when passages are on.
#[test]
fn live_hashes_hold_the_lines_when_passages_are_on() {
    let records = passages_store();
    let hashes = hashes_of(&records);
    assert_eq!(live_hashes(&records, &hashes, false), hashes);
    let live = live_hashes(&records, &hashes, true);
    assert_eq!(live.len(), 4 + 3 + 1 + 1 + 1);
    assert!(live.contains(&text_hash("She always starts with a flat white.")));
}
