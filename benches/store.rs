//! Store benchmark: generates memory directories of 1,000, 10,000 and 100,000
//! realistic memories (bodies 200–2,000 characters) and measures, as medians, opening
//! the store, rebuilding MEMORY.md, `context --max-tokens 8192`, `context` with a
//! query and `recall`, in-process and as one-shot CLI calls, against the floor of
//! reading every file of the store once; it prints the ratio and the peak RSS of the
//! CLI. A second table is the retrieval engine: the first build of the search index
//! and its size, a warm process (what `memdir mcp` does per call) with and without an
//! edit before the call, and one-shot calls after an edit.
//!
//! With `MEMDIR_BENCH_EMBED_URL` set (an OpenAI-compatible `/v1/embeddings` server,
//! e.g. `ci/embed/server.py`; model and dimensions from `MEMDIR_BENCH_EMBED_MODEL` and
//! `MEMDIR_BENCH_EMBED_DIM`, default all-MiniLM-L6-v2 and 384; `builtin` for the model
//! built in with the `embed-builtin` feature), a third table prices
//! hybrid ranking for stores of up to 10,000 memories: embedding throughput building
//! every vector (`index --embeddings`), the vector cache's size, and a warm
//! `context --query` (what `memory_context` with a query does), keyword vs hybrid.
//!
//! Every size is measured on two corpora (issue 30): the generator's, and real chats:
//! the exchanges (a user turn and the reply) of the LongMemEval dev half's sessions
//! as memories, dated with their session, asked that file's first 20 questions in
//! turn (`MEMDIR_BENCH_LME`, else `../shared/bench-data/longmemeval_s_dev.jsonl.gz`;
//! without it only the generator's corpus runs, with a note).
//!
//! Run: `cargo bench --bench store` (add `-- --quick` for fewer rounds, `-- --sizes
//! 1000,10000` to choose the sizes, `-- --corpus generated|real|both`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memdir::{ContextRequest, Memory, RecallRequest};

mod common;
use common::{clock, generate, generate_real, median, ms, real_data, time};

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if e.file_type().is_file() {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn read_every_file(dir: &Path) -> usize {
    let mut total = 0;
    for e in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        if e.file_type().is_file() && !e.path().components().any(|c| c.as_os_str() == ".memdir") {
            total += std::fs::read(e.path()).unwrap().len();
        }
    }
    total
}

/// Runs the CLI once; returns its wall time and peak RSS in KiB.
// The child is reaped by `wait4` below (which also gives its own peak RSS), not by
// `Child::wait`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn cli(dir: &Path, args: &[&str]) -> (Duration, i64) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_memdir"));
    let t = Instant::now();
    let child = Command::new(bin)
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env("MEMDIR_NOW", "2026-04-14T12:00:00Z")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // wait4 gives this child's own peak RSS (getrusage would give the max over all).
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let took = t.elapsed();
    assert_eq!(r, pid);
    assert_eq!(status, 0, "memdir {args:?} failed");
    (took, usage.ru_maxrss)
}

fn cli_median(rounds: usize, dir: &Path, args: &[&str]) -> (Duration, i64) {
    cli_median_q(rounds, dir, &[String::new()], |_| {
        args.iter().map(|a| a.to_string()).collect()
    })
}

/// [`cli_median`] of the arguments `make` gives for each query of `qs`, taken in turn.
fn cli_median_q(
    rounds: usize,
    dir: &Path,
    qs: &[String],
    make: impl Fn(&str) -> Vec<String>,
) -> (Duration, i64) {
    let mut q = in_turn(qs);
    let mut run = || {
        let args = make(&q());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cli(dir, &args)
    };
    let _ = run();
    let runs: Vec<(Duration, i64)> = (0..rounds).map(|_| run()).collect();
    let rss = runs.iter().map(|r| r.1).max().unwrap_or(0);
    (median(runs.into_iter().map(|r| r.0).collect()), rss)
}

const QUERY: &str = "what did the physio say about knee recovery and tempo training";

/// The questions of a real-text store (written next to it by `--generate … --real`),
/// else the generator's one query. Calls take them in turn.
fn queries(dir: &Path) -> Vec<String> {
    let file = dir.with_file_name("queries.txt");
    match std::fs::read_to_string(file) {
        Ok(t) => t.lines().map(str::to_string).collect(),
        Err(_) => vec![QUERY.to_string()],
    }
}

/// A short query made from a question: its two longest words of three letters or
/// more (the first of equal length), in the question's order, as an agent's
/// keyword query would be. Such a query has no inner word the index can look up
/// for the phrase test (spec/architecture.md#search-index).
fn two_words(q: &str) -> String {
    let words: Vec<&str> = q
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 3)
        .collect();
    let mut by_len: Vec<usize> = (0..words.len()).collect();
    by_len.sort_by_key(|&i| (std::cmp::Reverse(words[i].chars().count()), i));
    let mut two: Vec<usize> = by_len.into_iter().take(2).collect();
    two.sort_unstable();
    two.iter().map(|&i| words[i]).collect::<Vec<_>>().join(" ")
}

/// The queries taken in turn: each call to the closure gives the next.
fn in_turn(qs: &[String]) -> impl FnMut() -> String + '_ {
    let mut k = 0;
    move || {
        k += 1;
        qs[k % qs.len()].clone()
    }
}

/// In-process timings, run in a child process (see `main`): prints one line of
/// milliseconds: open, rebuild, context, context + query, recall, warm context +
/// query, the same after an edit, warm context + a two-word query.
fn inproc(dir: &Path, rounds: usize) {
    let qs = queries(dir);
    let mut q = in_turn(&qs);
    let mem = Memory::open(dir).unwrap().with_clock(clock());
    let open = time(rounds, || {
        Memory::open(dir)
            .unwrap()
            .with_clock(clock())
            .load()
            .unwrap()
            .records
            .len()
    });
    let rebuild = time(rounds, || {
        std::fs::remove_file(dir.join("MEMORY.md")).unwrap();
        mem.index().unwrap()
    });
    let ctx = time(rounds, || {
        mem.context(&ContextRequest::new(8192))
            .unwrap()
            .block
            .text
            .len()
    });
    // The length of a context block with a query (what each timed call gives back).
    let block_with_query = |m: &Memory, query: &str| {
        m.context(&ContextRequest::new(8192).with_query(query))
            .unwrap()
            .block
            .text
            .len()
    };
    let ctxq = time(rounds, || block_with_query(&mem, &q()));
    let rec = time(rounds, || {
        mem.recall(&RecallRequest::new(q().as_str(), 10))
            .unwrap()
            .hits
            .len()
    });
    // A warm process: the first call loads, the others check stats and answer.
    let warm = Memory::open(dir).unwrap().with_clock(clock()).keep_warm();
    let warm_q = time(rounds, || block_with_query(&warm, &q()));
    let short: Vec<String> = qs.iter().map(|q| two_words(q)).collect();
    let mut s = in_turn(&short);
    let warm_short = time(rounds, || block_with_query(&warm, &s()));
    // One memory edited before each call.
    let warm_edit = timed_after_edits(rounds, dir, 0, || block_with_query(&warm, &q()));
    let v: Vec<String> = [open, rebuild, ctx, ctxq, rec, warm_q, warm_edit, warm_short]
        .iter()
        .map(|d| format!("{}", d.as_secs_f64() * 1000.0))
        .collect();
    println!("{}", v.join(" "));
}

/// The embedding endpoint of the hybrid table, its model and dimensions.
fn embed_endpoint() -> Option<(String, String, usize)> {
    let url = std::env::var("MEMDIR_BENCH_EMBED_URL")
        .ok()
        .filter(|u| !u.is_empty())?;
    if url == "builtin" {
        return Some((
            url,
            memdir::BUILTIN_MODEL.to_string(),
            memdir::BUILTIN_DIMENSIONS,
        ));
    }
    let model =
        std::env::var("MEMDIR_BENCH_EMBED_MODEL").unwrap_or_else(|_| "all-MiniLM-L6-v2".into());
    let dims = std::env::var("MEMDIR_BENCH_EMBED_DIM")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(384);
    Some((url, model, dims))
}

/// Hybrid costs, run in a child process (see `main`): embeds every memory, then
/// times a warm `context --query` with and without `[embeddings]`. Prints one line:
/// passages embedded, seconds taken, vector cache bytes, keyword ms, hybrid ms.
fn hybrid(dir: &Path, rounds: usize) {
    let (url, model, dims) = embed_endpoint().expect("MEMDIR_BENCH_EMBED_URL");
    let config = dir.join(".memdir/config.toml");
    let before = std::fs::read_to_string(&config).unwrap_or_default();
    // A CPU model takes seconds per batch: a generous timeout, so that the build
    // measures the model and not a fallback.
    let section = if url == "builtin" {
        "[embeddings]\nprovider = \"builtin\"\n".to_string()
    } else {
        format!(
            "[embeddings]\nurl = \"{url}\"\nmodel = \"{model}\"\ndimensions = {dims}\ntimeout_ms = 600000\n"
        )
    };
    std::fs::write(&config, format!("{before}\n{section}")).unwrap();
    let mem = Memory::open(dir).unwrap().with_clock(clock());
    let t = Instant::now();
    let summary = mem
        .index_embeddings()
        .unwrap()
        .unwrap_or_else(|e| panic!("index --embeddings: {e}"));
    let took = t.elapsed();
    let cache_bytes: u64 = std::fs::read_dir(dir.join(".memdir/cache"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("vectors-"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    let warm = Memory::open(dir).unwrap().with_clock(clock()).keep_warm();
    let qs = queries(dir);
    let mut q = in_turn(&qs);
    let mut call = || {
        warm.context(&ContextRequest::new(8192).with_query(q().as_str()))
            .unwrap()
    };
    let c = call();
    let e = c.embeddings.expect("[embeddings] is configured");
    assert_eq!((e.mode, e.pending), ("hybrid", 0), "{:?}", e.fallback);
    let hybrid = time(rounds, || call().block.text.len());
    // One memory edited before each call: its new text is embedded on the query path
    // and the vectors' layout follows (spec/architecture.md#vectors-optional).
    let victim = first_memory(dir);
    let original = std::fs::read_to_string(&victim).unwrap();
    let hybrid_edit = timed_after_edits(rounds, dir, 0, || {
        let c = call();
        assert_eq!(c.embeddings.map(|e| e.pending), Some(0));
        c.block.text.len()
    });
    std::fs::write(&victim, original).unwrap();
    std::fs::write(&config, &before).unwrap();
    assert!(call().embeddings.is_none());
    let keyword = time(rounds, || call().block.text.len());
    println!(
        "{} {} {} {} {} {}",
        summary.embedded,
        took.as_secs_f64(),
        cache_bytes,
        keyword.as_secs_f64() * 1000.0,
        hybrid.as_secs_f64() * 1000.0,
        hybrid_edit.as_secs_f64() * 1000.0
    );
}

/// The first memory file of a store.
fn first_memory(dir: &Path) -> PathBuf {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "md")
                && p.file_name().is_some_and(|n| n != "MEMORY.md")
        })
        .collect();
    names.sort();
    names.remove(0)
}

/// Rewrites a memory's body with a round number in it (a real edit every time).
fn edit(path: &Path, n: usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let base = text
        .split("\nedit round ")
        .next()
        .unwrap()
        .trim_end()
        .to_string();
    std::fs::write(path, format!("{base}\nedit round {n}\n")).unwrap();
}

/// The median time of `f` over `rounds` runs, each after `before` (not timed).
fn timed_after<T>(rounds: usize, mut before: impl FnMut(), mut f: impl FnMut() -> T) -> Duration {
    let mut runs = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        before();
        let t = Instant::now();
        std::hint::black_box(f());
        runs.push(t.elapsed());
    }
    median(runs)
}

/// [`timed_after`] with an edit of the store's first memory before each run, the
/// edits numbered from `from + 1`.
fn timed_after_edits<T>(rounds: usize, dir: &Path, from: usize, f: impl FnMut() -> T) -> Duration {
    let victim = first_memory(dir);
    let mut n = from;
    timed_after(
        rounds,
        || {
            n += 1;
            edit(&victim, n);
        },
        f,
    )
}

/// Runs this bench binary again for one phase, so that the parent process never
/// holds a store in memory: a child forked from a large parent reports the parent's
/// resident size as its own peak (fork copies the page table before exec).
fn phase(args: &[&str]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "bench phase {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

fn main() {
    // As the memdir binary does with the builtin model (src/main.rs).
    if std::env::var("MEMDIR_BENCH_EMBED_URL").as_deref() == Ok("builtin")
        && std::env::var_os("RAYON_NUM_THREADS").is_none()
    {
        // SAFETY: the first statement of `main`: no other thread exists yet.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };
    }
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--generate") {
        let (n, dir) = (args[i + 1].parse().unwrap(), Path::new(&args[i + 2]));
        match args.iter().position(|a| a == "--real") {
            Some(r) => {
                let qs = generate_real(dir, n, Path::new(&args[r + 1]));
                // The first 20 questions, asked in turn (one per call).
                let first: Vec<&str> = qs.iter().take(20).map(String::as_str).collect();
                std::fs::write(dir.with_file_name("queries.txt"), first.join("\n")).unwrap();
            }
            None => generate(dir, n),
        }
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--inproc") {
        inproc(Path::new(&args[i + 2]), args[i + 1].parse().unwrap());
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--hybrid") {
        hybrid(Path::new(&args[i + 2]), args[i + 1].parse().unwrap());
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let rounds = if quick { 5 } else { 21 };
    let sizes: Vec<usize> = match args.iter().position(|a| a == "--sizes") {
        Some(i) => args[i + 1].split(',').map(|x| x.parse().unwrap()).collect(),
        None => vec![1_000, 10_000, 100_000],
    };
    // Both corpora by default: the generator's and real chats (issue 30).
    let corpus = args
        .iter()
        .position(|a| a == "--corpus")
        .map_or("both", |i| args[i + 1].as_str());
    let real = real_data();
    let mut corpora: Vec<Option<PathBuf>> = Vec::new();
    if corpus != "real" {
        corpora.push(None);
    }
    if corpus != "generated" {
        match &real {
            Some(p) => corpora.push(Some(p.clone())),
            None => println!(
                "note: no real-text corpus: set MEMDIR_BENCH_LME to longmemeval_s_dev.jsonl.gz\n"
            ),
        }
    }
    println!("memdir store benchmark ({rounds} rounds, medians; 2-core machine)\n");
    let mut engine_rows = Vec::new();
    let mut hybrid_rows = Vec::new();
    println!(
        "| corpus | memories | store MB | read every file (floor) | open | rebuild MEMORY.md | context 8192 | context + query | recall | CLI `context` | CLI / floor | CLI `context --query` | CLI `recall` | CLI peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let runs = corpora
        .iter()
        .flat_map(|c| sizes.iter().map(move |&n| (c.clone(), n)));
    for (real, n) in runs {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("memory");
        let d = dir.to_str().unwrap();
        let name = if real.is_some() {
            "real chats"
        } else {
            "generated"
        };
        match &real {
            Some(p) => phase(&[
                "--generate",
                &n.to_string(),
                d,
                "--real",
                p.to_str().unwrap(),
            ]),
            None => phase(&["--generate", &n.to_string(), d]),
        };
        let qs = queries(&dir);
        let with_q = |cmd: &'static [&'static str]| {
            move |q: &str| -> Vec<String> {
                cmd.iter()
                    .map(|a| a.to_string())
                    .chain([q.to_string()])
                    .collect()
            }
        };
        // MEMDIR_BENCH_KEEP=DIR keeps a copy of each generated store (for profiling).
        if let Ok(keep) = std::env::var("MEMDIR_BENCH_KEEP") {
            let dest = Path::new(&keep).join(format!("store-{n}"));
            let _ = std::fs::remove_dir_all(&dest);
            copy_dir(&dir, &dest);
        }
        // The search index vouches for files by stat only once they are two seconds
        // older than their last read (spec/architecture.md#search-index).
        std::thread::sleep(Duration::from_millis(2100));
        // The first build of the search index, from no cache at all.
        let _ = std::fs::remove_dir_all(dir.join(".memdir/cache"));
        let t = Instant::now();
        let out = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_memdir")))
            .arg("--dir")
            .arg(&dir)
            .args(["index", "--search", "--json"])
            .env("MEMDIR_NOW", "2026-04-14T12:00:00Z")
            .output()
            .unwrap();
        let build = t.elapsed();
        assert!(out.status.success(), "index --search failed");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let index_bytes = report["search"]["bytes"].as_u64().unwrap_or(0);
        let bytes = read_every_file(&dir);
        let floor = time(rounds, || read_every_file(&dir));
        let inproc: Vec<f64> = phase(&["--inproc", &rounds.to_string(), d])
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let (cli_ctx, rss) = cli_median(rounds, &dir, &["context", "--max-tokens", "8192"]);
        let ctx_q: &[&str] = &["context", "--max-tokens", "8192", "--query"];
        let (cli_q, _) = cli_median_q(rounds, &dir, &qs, with_q(ctx_q));
        let (cli_r, _) = cli_median_q(rounds, &dir, &qs, with_q(&["recall"]));
        // Round numbers past the in-process phase's, so that every edit changes the file.
        let mut q = in_turn(&qs);
        let cli_edit = timed_after_edits(rounds, &dir, 1000, || {
            let args = with_q(ctx_q)(&q());
            cli(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
        });
        let f = |x: f64| format!("{x:.1} ms");
        println!(
            "| {name} | {n} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {:.2}× | {} | {} | {:.1} MiB |",
            bytes as f64 / 1e6,
            ms(floor),
            f(inproc[0]),
            f(inproc[1]),
            f(inproc[2]),
            f(inproc[3]),
            f(inproc[4]),
            ms(cli_ctx),
            cli_ctx.as_secs_f64() / floor.as_secs_f64(),
            ms(cli_q),
            ms(cli_r),
            rss as f64 / 1024.0
        );
        engine_rows.push(format!(
            "| {name} | {n} | {} | {:.1} MB | {} | {} | {} | {} | {} | {} |",
            ms(build),
            index_bytes as f64 / 1e6,
            f(inproc[5]),
            f(inproc[7]),
            f(inproc[6]),
            ms(cli_q),
            ms(cli_edit),
            ms(cli_r),
        ));
        // Hybrid costs, last (the phase leaves the store's configuration as it was).
        if let Some((_, model, dims)) = embed_endpoint().filter(|_| n <= 10_000) {
            let h: Vec<f64> = phase(&["--hybrid", &rounds.to_string(), d])
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            hybrid_rows.push(format!(
                "| {name} | {n} | {model} ({dims}) | {:.0} in {:.1} s: {:.1} passages/s | {:.1} MB | {} | {} | {} |",
                h[0],
                h[1],
                h[0] / h[1],
                h[2] / 1e6,
                f(h[3]),
                f(h[4]),
                f(h[5]),
            ));
        }
    }
    println!("\nRetrieval engine (search index under .memdir/cache/):\n");
    println!(
        "| corpus | memories | first index build | index size | warm `context --query` | warm, two-word query | warm, one memory edited before | CLI `context --query` | CLI, one memory edited before | CLI `recall` |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in engine_rows {
        println!("{r}");
    }
    if !hybrid_rows.is_empty() {
        println!("\nHybrid ranking (MEMDIR_BENCH_EMBED_URL; warm = what `memory_context` does):\n");
        println!(
            "| corpus | memories | model (dimensions) | embedding every memory (`index --embeddings`) | vector cache | warm `context --query`, keyword | warm `context --query`, hybrid | hybrid, one memory edited before |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for r in hybrid_rows {
            println!("{r}");
        }
    }
}
