//! Hybrid recall against a loopback `/v1/embeddings` server (spec/ranking.md#hybrid-recall).
//!
//! The server here is a deterministic stand-in, not a model: it embeds a text as a
//! hashed bag of its words, with a few drink words folded into one bucket so that a
//! memory can be similar to a query without sharing a word with it. It runs on
//! 127.0.0.1 only, and every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use memdir::{Clock, ContextRequest, Draft, Memory, Recall, RecallRequest};
use serde_json::{Value, json};

use crate::common::{memdir, run, stderr, stdout};

const DIMS: usize = 256;

#[derive(Clone, Copy)]
pub enum Behaviour {
    Good,
    ServerError,
    Hang,
    WrongDims,
    /// The vector of the second text is all zeros.
    Zeros,
    /// The vector of the second text holds 1e39, which overflows an f32.
    Overflow,
    /// The vector of the second text is finite but too long to compare (1e20 each).
    Huge,
    /// Good, but a request with a text that holds [`REFUSED_WORD`] gets a server
    /// error: a question's query embedding can fail after its store was embedded.
    RefuseWord,
}

/// The word [`Behaviour::RefuseWord`] refuses to embed.
pub const REFUSED_WORD: &str = "Cappuccino";

pub struct Server {
    pub url: String,
    requests: Arc<AtomicUsize>,
    texts: Arc<AtomicUsize>,
    /// The last `authorization` header seen.
    auth: Arc<std::sync::Mutex<String>>,
}

/// The stand-in's vector of a text.
fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0_f32; DIMS];
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let w = w.to_lowercase();
        let w = match w.as_str() {
            "coffee" | "espresso" | "latte" | "flat" | "white" | "drink" | "cappuccino" => "drink",
            other => other,
        };
        let h = w.bytes().fold(0xcbf29ce484222325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        });
        v[(h % DIMS as u64) as usize] += 1.0;
    }
    v
}

pub fn serve(behaviour: Behaviour) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let texts = Arc::new(AtomicUsize::new(0));
    let auth = Arc::new(std::sync::Mutex::new(String::new()));
    let (r, t, a) = (requests.clone(), texts.clone(), auth.clone());
    std::thread::spawn(move || {
        // Bounded: a test makes few requests; the thread ends with the test binary.
        for stream in listener.incoming().take(200) {
            let Ok(stream) = stream else { continue };
            let (r, t, a) = (r.clone(), t.clone(), a.clone());
            std::thread::spawn(move || handle(stream, behaviour, &r, &t, &a));
        }
    });
    Server {
        url,
        requests,
        texts,
        auth,
    }
}

fn handle(
    stream: TcpStream,
    behaviour: Behaviour,
    requests: &AtomicUsize,
    texts: &AtomicUsize,
    auth: &std::sync::Mutex<String>,
) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut len = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if l.starts_with("authorization:") {
            *auth.lock().unwrap() = line.trim_end()["authorization:".len()..].trim().to_string();
        }
    }
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    requests.fetch_add(1, Ordering::SeqCst);
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let input: Vec<String> = req["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    texts.fetch_add(input.len(), Ordering::SeqCst);
    let refused = matches!(behaviour, Behaviour::RefuseWord)
        && input.iter().any(|t| t.contains(REFUSED_WORD));
    let (status, doc) = match behaviour {
        _ if refused => ("500 Internal Server Error", json!({"error": "refused"})),
        Behaviour::ServerError => ("500 Internal Server Error", json!({"error": "boom"})),
        Behaviour::Hang => {
            std::thread::sleep(Duration::from_secs(3));
            return;
        }
        _ => {
            let data: Vec<Value> = input
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut v: Vec<Value> = vector(t).into_iter().map(|x| json!(x)).collect();
                    match behaviour {
                        Behaviour::WrongDims => v.truncate(DIMS / 2),
                        Behaviour::Zeros if i == 1 => v.fill(json!(0.0)),
                        Behaviour::Overflow if i == 1 => v[3] = json!(1e39_f64),
                        Behaviour::Huge if i == 1 => v.fill(json!(1e20_f64)),
                        _ => {}
                    }
                    json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            (
                "200 OK",
                json!({"object": "list", "data": data, "model": req["model"]}),
            )
        }
    };
    let body = doc.to_string();
    let mut s = stream;
    let _ = write!(
        s,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

impl Server {
    /// Texts embedded so far, over all requests.
    pub fn texts(&self) -> usize {
        self.texts.load(Ordering::SeqCst)
    }
}

pub fn configure(dir: &Path, url: &str, extra: &str) {
    std::fs::create_dir_all(dir.join(".memdir")).unwrap();
    std::fs::write(
        dir.join(".memdir/config.toml"),
        format!(
            "[embeddings]\nurl = \"{url}\"\nmodel = \"stand-in\"\ndimensions = {DIMS}\n{extra}"
        ),
    )
    .unwrap();
}

fn store(dir: &Path) -> Memory {
    let m = Memory::open(dir)
        .unwrap()
        .with_clock(Clock::fixed("2026-04-01T09:00:00Z".parse().unwrap()));
    for (key, name, body) in [
        (
            "caroline_mornings",
            "Caroline's mornings",
            "Caroline always starts her day with a flat white.",
        ),
        (
            "football",
            "Saturday football",
            "The team plays football on Saturday mornings.",
        ),
        (
            "deploys",
            "Deploy schedule",
            "Deploys go out on Friday after review.",
        ),
    ] {
        m.write(&Draft {
            key: key.into(),
            name: name.into(),
            description: name.into(),
            kind: "user".into(),
            body: body.into(),
            ..Draft::default()
        })
        .unwrap();
    }
    m
}

fn keys(r: &Recall) -> Vec<&str> {
    r.hits.iter().map(|h| h.key.as_str()).collect()
}

// spec/ranking.md#hybrid-recall: nothing configured, nothing changes.
#[test]
fn without_configuration_recall_is_keyword_and_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    let r = m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    assert!(r.embeddings.is_none());
    assert!(r.hits.is_empty());
    let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
    assert_eq!(keys(&r), ["football"]);
}

// spec/ranking.md#hybrid-recall: a vector-only hit above the floor is found; below
// the floor nothing is; vectors live only in the cache.
#[test]
fn hybrid_finds_a_vector_only_hit_and_keeps_nothing_relevant_honest() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    configure(dir.path(), &server.url, "");
    let r = m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    let e = r.embeddings.clone().unwrap();
    assert_eq!(e.mode, "hybrid", "{e:?}");
    assert_eq!(e.pending, 0);
    assert_eq!(keys(&r), ["caroline_mornings"]);
    // Query plus three memories, in one request.
    assert_eq!(server.texts.load(Ordering::SeqCst), 4);

    // Nothing shares a word or a bucket with this query: still no hits.
    let r = m.recall(&RecallRequest::new("zebra quantum", 10)).unwrap();
    assert_eq!(r.embeddings.clone().unwrap().mode, "hybrid");
    assert!(r.hits.is_empty(), "{:?}", keys(&r));
    // The memories' vectors came from the cache: only the query was embedded.
    assert_eq!(server.texts.load(Ordering::SeqCst), 5);

    // Keyword hits stay hits.
    let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
    assert_eq!(keys(&r)[0], "football");

    let cache: Vec<_> = std::fs::read_dir(dir.path().join(".memdir/cache"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("vectors-") && n.ends_with(".bin"))
        .collect();
    assert_eq!(cache.len(), 1, "{cache:?}");
    let memory = std::fs::read_to_string(dir.path().join("caroline_mornings.md")).unwrap();
    assert!(!memory.contains("embedding"));
}

// A corrupt cache is rebuilt, not an error.
#[test]
fn a_corrupt_vector_cache_is_rebuilt() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    configure(dir.path(), &server.url, "");
    m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    for e in std::fs::read_dir(dir.path().join(".memdir/cache")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("vectors-")
        {
            std::fs::write(&p, b"garbage").unwrap();
        }
    }
    let r = m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    assert_eq!(r.embeddings.clone().unwrap().mode, "hybrid");
    assert_eq!(keys(&r), ["caroline_mornings"]);
}

/// The vector cache files of the store at `dir`.
fn vector_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join(".memdir/cache"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("vectors-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The vectors a cache file holds, read by hand (`MDVEC1\n`, dimensions, count, then
/// per entry a 32-byte hash and the f32 values), so that a lenient reader cannot hide
/// what was written.
fn raw_vectors(file: &Path) -> Vec<Vec<f32>> {
    let b = std::fs::read(file).unwrap();
    let rest = b.strip_prefix(b"MDVEC1\n").expect("magic");
    let word = |at: usize| u32::from_le_bytes(rest[at..at + 4].try_into().unwrap()) as usize;
    assert_eq!(word(0), DIMS);
    let entry = 32 + 4 * DIMS;
    let body = &rest[8..];
    assert_eq!(body.len(), word(4) * entry);
    body.chunks_exact(entry)
        .map(|e| {
            e[32..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        })
        .collect()
}

// spec/ranking.md#hybrid-recall (issue 31 item 6): an answer holding a vector that
// cannot be compared (all zeros, a value over f32, a length whose square overflows, the
// wrong length) is an error naming the model, the endpoint, the text and the problem;
// recall falls back to keyword ranking, nothing of the answer is cached, and the next
// recall asks again.
#[test]
fn vectors_that_cannot_be_compared_fall_back_and_are_never_cached() {
    for (behaviour, index, why) in [
        (Behaviour::Zeros, 1, "is all zeros"),
        (
            Behaviour::Overflow,
            1,
            "holds inf at position 3, not a finite number",
        ),
        (Behaviour::Huge, 1, "is too long to compare"),
        (Behaviour::WrongDims, 0, "has 128 dimensions, not 256"),
    ] {
        let server = serve(behaviour);
        let dir = tempfile::tempdir().unwrap();
        let m = store(dir.path());
        configure(dir.path(), &server.url, "");
        for round in 0..2 {
            let asked = server.requests.load(Ordering::SeqCst);
            let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
            let e = r.embeddings.clone().unwrap();
            assert_eq!(e.mode, "keyword", "{why} (round {round}): {e:?}");
            let fallback = e.fallback.unwrap();
            for part in [
                "embedding model stand-in".to_string(),
                format!("at {}", server.url),
                format!("the vector of text {index} (of 4"),
                why.to_string(),
            ] {
                assert!(fallback.contains(&part), "{part:?} missing from {fallback}");
            }
            assert_eq!(keys(&r), ["football"]);
            assert_eq!(
                server.requests.load(Ordering::SeqCst),
                asked + 1,
                "{why} (round {round}): the endpoint was asked again"
            );
            assert!(
                vector_files(dir.path()).is_empty(),
                "{why}: {:?} was written",
                vector_files(dir.path())
            );
        }
    }
}

// spec/ranking.md#hybrid-recall (issue 31 item 6): a cache file holding a vector that
// is not a number is corrupt: it is not trusted, every vector is embedded again, and
// the file is written anew without it.
#[test]
fn a_cached_vector_that_is_not_a_number_is_dropped_and_rebuilt() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &server.url, "");
    let fresh = || {
        Memory::open(dir.path())
            .unwrap()
            .with_clock(Clock::fixed("2026-04-01T09:00:00Z".parse().unwrap()))
    };
    let r = fresh().recall(&RecallRequest::new("espresso", 10)).unwrap();
    assert_eq!(r.embeddings.unwrap().mode, "hybrid");
    assert_eq!(server.texts.load(Ordering::SeqCst), 4);
    let [file] = vector_files(dir.path()).try_into().unwrap();
    assert_eq!(raw_vectors(&file).len(), 3);
    // A NaN in the first value of the first entry.
    let mut bytes = std::fs::read(&file).unwrap();
    let at = 7 + 8 + 32;
    bytes[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&file, &bytes).unwrap();

    let r = fresh().recall(&RecallRequest::new("espresso", 10)).unwrap();
    assert_eq!(r.embeddings.clone().unwrap().mode, "hybrid");
    assert_eq!(keys(&r), ["caroline_mornings"]);
    // The query and all three memories again: nothing of the file was trusted.
    assert_eq!(server.texts.load(Ordering::SeqCst), 8);
    let rebuilt = raw_vectors(&file);
    assert_eq!(rebuilt.len(), 3);
    assert!(
        rebuilt.iter().flatten().all(|x| x.is_finite()),
        "the rebuilt file still holds a NaN"
    );
}

fn assert_fallback(behaviour: Behaviour, extra: &str, why: &str) -> Server {
    let server = serve(behaviour);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    configure(dir.path(), &server.url, extra);
    let start = Instant::now();
    let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let e = r.embeddings.clone().unwrap();
    assert_eq!(e.mode, "keyword");
    let fallback = e.fallback.unwrap();
    assert!(fallback.contains(why), "{fallback}");
    // The keyword ranking, as without embeddings.
    assert_eq!(keys(&r), ["football"]);
    server
}

// spec/ranking.md#hybrid-recall: failures fall back to keyword ranking, bounded.
#[test]
fn a_server_error_falls_back_after_bounded_retries() {
    let server = assert_fallback(Behaviour::ServerError, "", "HTTP 500");
    assert_eq!(server.requests.load(Ordering::SeqCst), 3);
}

#[test]
fn a_slow_endpoint_falls_back_at_the_timeout() {
    let server = assert_fallback(Behaviour::Hang, "timeout_ms = 300\n", "timed out");
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
}

#[test]
fn wrong_dimensions_fall_back() {
    assert_fallback(Behaviour::WrongDims, "", "dimensions");
}

#[test]
fn an_unreachable_endpoint_or_a_bad_section_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    // A port nothing listens on: bind one, then free it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    configure(dir.path(), &format!("http://127.0.0.1:{port}"), "");
    let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
    assert_eq!(r.embeddings.clone().unwrap().mode, "keyword");
    assert_eq!(keys(&r), ["football"]);
    std::fs::write(
        dir.path().join(".memdir/config.toml"),
        "[embeddings]\nurl = \"http://127.0.0.1:1\"\n",
    )
    .unwrap();
    let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
    let e = r.embeddings.clone().unwrap();
    assert_eq!(e.mode, "keyword");
    assert!(e.fallback.unwrap().contains("model"));
}

// spec/ranking.md#hybrid-recall: only a budget of memories is embedded per query; the
// rest are `pending` until a later call or `memdir index --embeddings`.
#[test]
fn the_query_path_embeds_within_a_budget_and_index_embeds_the_rest() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    configure(dir.path(), &server.url, "query_budget = 1\n");
    let r = m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    let e = r.embeddings.clone().unwrap();
    assert_eq!((e.mode, e.pending), ("hybrid", 2));
    let s = m.index_embeddings().unwrap().unwrap();
    assert_eq!((s.memories, s.embedded, s.cached), (3, 2, 3));
    let r = m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    assert_eq!(r.embeddings.clone().unwrap().pending, 0);
    assert_eq!(keys(&r), ["caroline_mornings"]);
}

// spec/cli.md#recall: `mode` and `fallback` in --json, one warning on stderr, exit 0.
#[test]
fn cli_recall_json_says_which_mode_ran() {
    let good = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &good.url, "");
    let o = run(memdir(dir.path())
        .env("MEMDIR_EMBED_API_KEY", "sk-test-not-a-key")
        .args(["recall", "espresso", "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["mode"], "hybrid");
    assert_eq!(doc["hits"][0]["key"], "caroline_mornings");
    // The key goes only into the request header, never into a file.
    assert_eq!(*good.auth.lock().unwrap(), "Bearer sk-test-not-a-key");
    // Every file, `.memdir/` (config, cache, access log) included.
    for e in walkdir::WalkDir::new(dir.path())
        .into_iter()
        .filter_map(|e| e.ok())
    {
        if e.file_type().is_file() {
            let bytes = std::fs::read(e.path()).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains("sk-test"),
                "{}",
                e.path().display()
            );
        }
    }

    let bad = serve(Behaviour::ServerError);
    configure(dir.path(), &bad.url, "");
    let o = run(memdir(dir.path()).args(["recall", "football", "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["mode"], "keyword");
    assert!(doc["fallback"].as_str().unwrap().contains("500"));
    assert_eq!(stderr(&o).matches("warning: embeddings").count(), 1);

    // With nothing cached, `index --embeddings` must reach the endpoint: it fails (exit 3).
    std::fs::remove_dir_all(dir.path().join(".memdir/cache")).unwrap();
    let o = run(memdir(dir.path()).args(["index", "--embeddings"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));

    configure(dir.path(), &good.url, "");
    let o = run(memdir(dir.path()).args(["index", "--embeddings", "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["embeddings"]["memories"], 3);
}

// spec/ranking.md#hybrid-recall: with embeddings, context orders memories by the
// hybrid relevance; without, by the keyword one (here: no hit, so the plain order).
#[test]
fn context_orders_memories_by_hybrid_relevance() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    // Written last and important elsewhere: only relevance puts Caroline first.
    let m = m.with_clock(Clock::fixed("2026-04-02T09:00:00Z".parse().unwrap()));
    m.write(&Draft {
        key: "release".into(),
        name: "Release".into(),
        description: "Release".into(),
        kind: "project".into(),
        body: "The release is on Monday.".into(),
        important: Some(true),
        ..Draft::default()
    })
    .unwrap();
    let first = |m: &Memory| {
        let b = m
            .context(&ContextRequest::new(4000).with_query("espresso"))
            .unwrap()
            .block;
        b.memories[0].key.clone()
    };
    assert_eq!(first(&m), "release");
    configure(dir.path(), &server.url, "");
    assert_eq!(first(&m), "caroline_mornings");
}

// A library caller inside a tokio runtime gets hybrid recall too (no nested-runtime panic).
#[test]
fn recall_inside_an_async_runtime_works() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    configure(dir.path(), &server.url, "");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(async { m.recall(&RecallRequest::new("espresso", 10)) });
    let r = r.unwrap();
    assert_eq!(r.embeddings.clone().unwrap().mode, "hybrid");
    assert_eq!(keys(&r), ["caroline_mornings"]);
}

/// The vectors held by the cache files under `dir` (from their headers:
/// `MDVEC1\n`, dimensions, count).
pub fn vector_count(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir.join(".memdir/cache")) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("vectors-"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| {
            let c = b.strip_prefix(b"MDVEC1\n")?.get(4..8)?;
            Some(u32::from_le_bytes(c.try_into().ok()?) as usize)
        })
        .sum()
}

fn draft(key: &str, body: &str) -> Draft {
    Draft {
        key: key.into(),
        name: key.replace('_', " "),
        description: key.replace('_', " "),
        kind: "user".into(),
        body: body.into(),
        ..Draft::default()
    }
}

/// A recall's keys, scores and report, to compare two stores by.
fn ranking(m: &Memory, query: &str) -> (Vec<(String, String)>, Option<Value>) {
    let r = m.recall(&RecallRequest::new(query, 10)).unwrap();
    (
        r.hits
            .iter()
            .map(|h| (h.key.clone(), format!("{:.9}", h.score)))
            .collect(),
        r.embeddings.map(|e| serde_json::to_value(e).unwrap()),
    )
}

/// A context block's text and its embeddings report, to compare two stores by.
fn context_of(m: &Memory, query: &str) -> (String, Value) {
    context_within(m, 4000, query)
}

/// [`context_of`] within `max_tokens`.
pub fn context_within(m: &Memory, max_tokens: usize, query: &str) -> (String, Value) {
    let c = m
        .context(&ContextRequest::new(max_tokens).with_query(query))
        .unwrap();
    (c.block.text, serde_json::to_value(c.embeddings).unwrap())
}

// spec/ranking.md#hybrid-recall: a warm store (memdir mcp) keeps the vectors and text
// hashes in memory, and ranks exactly as a fresh process does after edits, additions
// and deletions.
#[test]
fn a_warm_store_ranks_as_a_fresh_one_after_edits() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &server.url, "");
    let clock = || Clock::fixed("2026-04-01T09:00:00Z".parse().unwrap());
    let warm = Memory::open(dir.path())
        .unwrap()
        .with_clock(clock())
        .keep_warm();
    let fresh = || Memory::open(dir.path()).unwrap().with_clock(clock());
    let (hits, report) = ranking(&warm, "espresso");
    assert_eq!(report.unwrap()["mode"], "hybrid");
    assert_eq!(hits[0].0, "caroline_mornings");
    assert_eq!(ranking(&warm, "espresso"), ranking(&fresh(), "espresso"));

    // Edit one memory so that it becomes similar, add one, forget one.
    warm.write(&draft(
        "football",
        "The team plays football on Saturday mornings, then a cappuccino.",
    ))
    .unwrap();
    warm.write(&draft("tea", "A latte, an espresso.")).unwrap();
    warm.forget("deploys", None).unwrap();
    for query in ["espresso", "football", "afternoon tea", "zebra"] {
        let w = ranking(&warm, query);
        assert_eq!(w, ranking(&fresh(), query), "{query}");
        assert_eq!(w.1.unwrap()["mode"], "hybrid", "{query}");
    }
    let (hits, _) = ranking(&warm, "espresso");
    let keys: Vec<&str> = hits.iter().map(|(k, _)| k.as_str()).collect();
    // The new memory is a vector-only hit; the forgotten one is gone.
    assert!(keys.contains(&"tea"), "{keys:?}");
    assert!(!keys.contains(&"deploys"));
    // The context block too.
    assert_eq!(
        context_of(&warm, "espresso"),
        context_of(&fresh(), "espresso")
    );
}

// spec/ranking.md#hybrid-recall: the warm store does not read the cache file again:
// with the file gone, nothing is embedded again but the query.
#[test]
fn a_warm_store_keeps_its_vectors_in_memory() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &server.url, "");
    let warm = Memory::open(dir.path()).unwrap().keep_warm();
    ranking(&warm, "espresso");
    assert_eq!(server.texts.load(Ordering::SeqCst), 4);
    assert_eq!(vector_count(dir.path()), 3);
    std::fs::remove_dir_all(dir.path().join(".memdir/cache")).unwrap();
    let (hits, report) = ranking(&warm, "espresso");
    assert_eq!(hits[0].0, "caroline_mornings");
    assert!(report.unwrap().get("pending").is_none());
    assert_eq!(server.texts.load(Ordering::SeqCst), 5);
    // A fresh process has only the file, which is gone: it embeds all three again.
    ranking(&Memory::open(dir.path()).unwrap(), "espresso");
    assert_eq!(server.texts.load(Ordering::SeqCst), 9);
}

// spec/ranking.md#hybrid-recall: a warm context call with nothing cached embeds the
// query and the memories; its block is the fresh process's block, the vectors it
// embedded are kept (the next call embeds only the query), and with the endpoint down
// it falls back to the keyword block with the fresh process's report.
#[test]
fn a_warm_context_embeds_on_its_first_call_and_keeps_the_vectors() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &server.url, "");
    let clock = || Clock::fixed("2026-04-01T09:00:00Z".parse().unwrap());
    let warm = Memory::open(dir.path())
        .unwrap()
        .with_clock(clock())
        .keep_warm();
    let first = context_of(&warm, "espresso");
    assert_eq!(first.1["mode"], "hybrid");
    assert!(first.1.get("pending").is_none(), "{:?}", first.1);
    // The query and the three memories.
    assert_eq!(server.texts.load(Ordering::SeqCst), 4);
    // Nothing cached before: the fresh process embeds the three memories again.
    std::fs::remove_dir_all(dir.path().join(".memdir/cache")).unwrap();
    let fresh = Memory::open(dir.path()).unwrap().with_clock(clock());
    assert_eq!(context_of(&fresh, "espresso"), first);
    assert_eq!(server.texts.load(Ordering::SeqCst), 8);
    // The warm store kept its vectors: only the query now.
    assert_eq!(
        context_of(&warm, "football"),
        context_of(&fresh, "football")
    );
    assert_eq!(server.texts.load(Ordering::SeqCst), 8 + 1 + 1);

    let down = serve(Behaviour::ServerError);
    configure(dir.path(), &down.url, "");
    let (text, report) = context_of(&warm, "espresso");
    assert_eq!(report["mode"], "keyword");
    assert!(report["fallback"].as_str().unwrap().contains("500"));
    assert_eq!((text.clone(), report), context_of(&fresh, "espresso"));
    std::fs::write(dir.path().join(".memdir/config.toml"), "").unwrap();
    let keyword = warm
        .context(&ContextRequest::new(4000).with_query("espresso"))
        .unwrap();
    assert_eq!(keyword.block.text, text);
    assert!(keyword.embeddings.is_none());
}

// spec/ranking.md#hybrid-recall: a warm store picks up vectors another process
// wrote (`memdir index --embeddings`) instead of embedding them again.
#[test]
fn a_warm_store_merges_vectors_another_process_wrote() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    configure(dir.path(), &server.url, "query_budget = 0\n");
    let warm = Memory::open(dir.path()).unwrap().keep_warm();
    let (_, report) = ranking(&warm, "espresso");
    assert_eq!(report.unwrap()["pending"], 3);
    let s = Memory::open(dir.path())
        .unwrap()
        .index_embeddings()
        .unwrap()
        .unwrap();
    assert_eq!(s.embedded, 3);
    let before = server.texts.load(Ordering::SeqCst);
    let (hits, report) = ranking(&warm, "espresso");
    assert!(report.unwrap().get("pending").is_none());
    assert_eq!(hits[0].0, "caroline_mornings");
    assert_eq!(server.texts.load(Ordering::SeqCst), before + 1);
}

// spec/ranking.md#hybrid-recall: context with a query reports the mode like recall;
// without a query or without [embeddings] it reports nothing.
#[test]
fn context_reports_which_mode_ran() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    let report = |m: &Memory, q: Option<&str>| {
        m.context(&ContextRequest {
            query: q.map(Into::into),
            ..ContextRequest::new(4000)
        })
        .unwrap()
        .embeddings
    };
    assert!(report(&m, Some("espresso")).is_none());
    let good = serve(Behaviour::Good);
    configure(dir.path(), &good.url, "query_budget = 1\n");
    let e = report(&m, Some("espresso")).unwrap();
    assert_eq!((e.mode, e.pending), ("hybrid", 2));
    assert!(report(&m, None).is_none());
    let bad = serve(Behaviour::ServerError);
    configure(dir.path(), &bad.url, "");
    let e = report(&m, Some("espresso")).unwrap();
    assert_eq!(e.mode, "keyword");
    assert!(e.fallback.unwrap().contains("HTTP 500"));

    // The CLI: `mode` and `fallback` in --json, one warning on stderr, exit 0.
    let o = run(memdir(dir.path()).args(["context", "--query", "espresso", "--json"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["mode"], "keyword");
    assert!(doc["fallback"].as_str().unwrap().contains("500"));
    assert!(doc["text"].as_str().is_some());
    assert_eq!(stderr(&o).matches("warning: embeddings").count(), 1);
    configure(dir.path(), &good.url, "");
    let o = run(memdir(dir.path()).args(["context", "--query", "espresso", "--json"]));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["mode"], "hybrid");
    assert!(doc.get("fallback").is_none() && doc.get("pending").is_none());
    assert_eq!(doc["memories"][0]["key"], "caroline_mornings");
    // Without a query: the plain block, no mode.
    let o = run(memdir(dir.path()).args(["context", "--json"]));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(doc.get("mode").is_none(), "{doc}");
}

// spec/ranking.md#hybrid-recall: the background worker's round embeds every memory
// without a vector, in batches of the configured size, and nothing twice.
#[test]
fn a_backfill_round_embeds_every_memory_in_batches() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    m.write(&draft("tea", "Tea in the afternoon.")).unwrap();
    m.write(&draft("chess", "Chess on Sundays.")).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Not configured: nothing to do, no request.
    assert_eq!(m.backfill_round(&stop).unwrap(), 0);
    configure(dir.path(), &server.url, "batch_size = 2\n");
    assert_eq!(m.backfill_round(&stop).unwrap(), 5);
    assert_eq!(server.requests.load(Ordering::SeqCst), 3);
    assert_eq!(vector_count(dir.path()), 5);
    assert_eq!(m.backfill_round(&stop).unwrap(), 0);
    assert_eq!(server.requests.load(Ordering::SeqCst), 3);
    // A recall now embeds only its query.
    let r = m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    assert!(r.embeddings.unwrap().pending == 0);
    assert_eq!(server.texts.load(Ordering::SeqCst), 6);
    // A forgotten memory's vector and an edited memory's old one go with the next
    // finished round; the edit's new text is embedded.
    m.forget("tea", None).unwrap();
    m.write(&draft("chess", "Chess on Saturdays now.")).unwrap();
    assert_eq!(m.backfill_round(&stop).unwrap(), 1);
    assert_eq!(vector_count(dir.path()), 4);
    assert_eq!(server.texts.load(Ordering::SeqCst), 7);
    // A round stopped before it ends drops nothing.
    m.forget("chess", None).unwrap();
    stop.store(true, Ordering::SeqCst);
    assert_eq!(m.backfill_round(&stop).unwrap(), 0);
    assert_eq!(vector_count(dir.path()), 4);
    stop.store(false, Ordering::SeqCst);
    assert_eq!(m.backfill_round(&stop).unwrap(), 0);
    assert_eq!(vector_count(dir.path()), 3);
    // A failing endpoint is an error of the round, never of a write.
    let bad = serve(Behaviour::ServerError);
    configure(dir.path(), &bad.url, "");
    m.write(&draft("golf", "Golf in May.")).unwrap();
    let e = m.backfill_round(&stop).unwrap_err().to_string();
    assert!(e.contains("HTTP 500"), "{e}");
}

// spec/ranking.md#hybrid-recall: the worker of a warm process fills the cache after
// writes, within a bounded wait, and its vectors serve the next recall.
#[test]
fn the_backfill_worker_fills_the_cache_of_a_warm_store() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = std::sync::Arc::new(store(dir.path()).keep_warm());
    configure(dir.path(), &server.url, "");
    let logged = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let l = logged.clone();
    let worker = memdir::Backfill::spawn(m.clone(), move |why| {
        l.lock().unwrap().push(why.to_string())
    });
    for i in 0..10 {
        m.write(&draft(&format!("fact_{i}"), &format!("Fact number {i}.")))
            .unwrap();
        worker.nudge();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while vector_count(dir.path()) < 13 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(vector_count(dir.path()), 13);
    // Forgetting reaches the cache once the worker has run again.
    m.forget("fact_0", None).unwrap();
    worker.nudge();
    let deadline = Instant::now() + Duration::from_secs(10);
    while vector_count(dir.path()) > 12 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(vector_count(dir.path()), 12);
    worker.stop();
    assert!(logged.lock().unwrap().is_empty());
    let before = server.texts.load(Ordering::SeqCst);
    let r = m.recall(&RecallRequest::new("espresso", 10)).unwrap();
    assert!(r.embeddings.unwrap().pending == 0);
    assert_eq!(server.texts.load(Ordering::SeqCst), before + 1);
}

// spec/ranking.md#hybrid-recall, spec/cli.md#watch: `memdir watch` embeds the
// memories it finds at start and those saved while it watches.
#[test]
fn watch_embeds_memories_in_the_background() {
    let server = serve(Behaviour::Good);
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    configure(dir.path(), &server.url, "");
    let mut child = memdir(dir.path())
        .args(["--json", "watch", "--seconds", "60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let wait_for = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while vector_count(dir.path()) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        vector_count(dir.path())
    };
    let at_start = wait_for(3);
    m.write(&draft("tea", "A latte, an espresso.")).unwrap();
    let after_write = wait_for(4);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!((at_start, after_write), (3, 4));
}

// spec/architecture.md#what-is-absent-on-purpose: `Memory::in_memory()` touches no
// disk and no network, whatever configuration lies in the working directory. The
// scenario runs in a child process of this test binary, so that changing its working
// directory cannot disturb the tests running beside it.
#[test]
fn in_memory_touches_no_disk_and_no_network() {
    const CHILD: &str = "MEMDIR_TEST_IN_MEMORY_CWD";
    if let Ok(cwd) = std::env::var(CHILD) {
        std::env::set_current_dir(&cwd).unwrap();
        let m = Memory::in_memory();
        m.write(&draft("user_sport", "Plays football on Saturdays."))
            .unwrap();
        let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
        assert_eq!(keys(&r), ["user_sport"]);
        assert!(
            r.embeddings.is_none(),
            "no [embeddings] in memory: {:?}",
            r.embeddings
        );
        let c = m
            .context(&ContextRequest::new(1024).with_query("football"))
            .unwrap();
        assert!(c.block.text.contains("football"));
        return;
    }
    let server = serve(Behaviour::Good);
    let cwd = tempfile::tempdir().unwrap();
    // A configuration where a process might look for one: ./memory (the CLI's
    // default directory) and ./(memory) (the name the none mode shows).
    for dir in ["memory", "(memory)"] {
        configure(&cwd.path().join(dir), &server.url, "");
    }
    let before = listing(cwd.path());
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "embed::in_memory_touches_no_disk_and_no_network",
            "--nocapture",
        ])
        .env(CHILD, cwd.path())
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        server.requests.load(Ordering::SeqCst),
        0,
        "the endpoint was called"
    );
    assert_eq!(
        listing(cwd.path()),
        before,
        "a file changed in the working directory"
    );
}

/// Every path under `dir` with its bytes.
fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        let bytes = if e.file_type().is_file() {
            std::fs::read(e.path()).unwrap()
        } else {
            Vec::new()
        };
        out.push((e.path().to_path_buf(), bytes));
    }
    out
}

// A configuration file that does not parse is not a silent "off": hybrid ranking
// falls back to keywords and says why, naming the file and line (one reader,
// `store::config`, for every wing).
#[test]
fn a_config_that_does_not_parse_falls_back_and_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let m = store(dir.path());
    let server = serve(Behaviour::Good);
    configure(dir.path(), &server.url, "stray line\n");
    let r = m.recall(&RecallRequest::new("football", 10)).unwrap();
    let e = r
        .embeddings
        .clone()
        .expect("a report: the file says something about embeddings");
    assert_eq!(e.mode, "keyword");
    let why = e.fallback.unwrap();
    assert!(why.contains("config.toml:5:"), "{why}");
    assert_eq!(keys(&r), ["football"]);
    assert_eq!(server.requests.load(Ordering::SeqCst), 0);
}
