//! Sync benchmark: how fast memdir computes the root CID of a store (read + CID,
//! and CID alone on the in-memory tree) against `sha256sum` over the same files,
//! for a generated 10,000-memory store and for ~200 MiB of multi-chunk files; and
//! how many bytes a push sends after one edit (full CAR against delta CAR).
//!
//! With `IPFS_API` set (a Kubo-compatible node, e.g. `ci/ipfs-node/start.sh`), it
//! also pushes the store to the node: the full CAR, the edited version as a delta,
//! and a delta whose base the node never saw (which must fall back to the full CAR).
//!
//! Run: `cargo bench --bench sync` (add `-- --quick` for fewer rounds).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cid::Cid;
use memdir::Memory;
use memdir::ipfs::car::car_bytes;
use memdir::ipfs::unixfs::{self, Dag};
use memdir::provider::{self, Blocking, NoProgress, Receipt, Settings, delta_car};
use memdir::sync::{Remote, Seal};

mod common;
use common::{generate, ms, time};

/// Files larger than one 1 MiB chunk, so that chunking and the balanced file
/// layout are measured: `count` files of 4 MiB plus an uneven tail each.
fn generate_blobs(dir: &Path, count: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..count {
        let len = (4 << 20) + i * 1009;
        let mut data = Vec::with_capacity(len + 8);
        while data.len() < len {
            // xorshift64: random-looking, incompressible, deterministic.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.extend_from_slice(&x.to_le_bytes());
        }
        data.truncate(len);
        std::fs::write(dir.join(format!("blob_{i:03}.bin")), data).unwrap();
    }
}

/// Every file `Backend::tree` includes (no dot entries), relative to `dir`, sorted.
fn data_files(dir: &Path) -> (Vec<PathBuf>, u64) {
    let mut files = Vec::new();
    let mut bytes = 0;
    for e in walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'))
    {
        let e = e.unwrap();
        if e.file_type().is_file() {
            bytes += e.metadata().unwrap().len();
            files.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    (files, bytes)
}

fn on_path(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs `program lead.. files..` in `dir`, output discarded.
fn hash_files(dir: &Path, program: &str, lead: &[&str], files: &[PathBuf]) {
    let status = Command::new(program)
        .current_dir(dir)
        .args(lead)
        .args(files)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{program} failed");
}

fn sha256sum(dir: &Path, files: &[PathBuf]) {
    hash_files(dir, "sha256sum", &["--"], files);
}

/// A second reference: OpenSSL's SHA-256 uses the CPU's SHA extensions where
/// coreutils' `sha256sum` may not.
fn openssl_sha256(dir: &Path, files: &[PathBuf]) {
    hash_files(dir, "openssl", &["dgst", "-sha256"], files);
}

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

struct CidRow {
    name: &'static str,
    files: usize,
    bytes: u64,
    e2e: Duration,
    cid_only: Duration,
    sha: Option<Duration>,
    openssl: Option<Duration>,
}

fn measure_cid(name: &'static str, dir: &Path, rounds: usize, sha: bool, openssl: bool) -> CidRow {
    let (files, bytes) = data_files(dir);
    let mem = Memory::open(dir).unwrap();
    let root = unixfs::root_cid(&mem.tree().unwrap()).unwrap();
    let e2e = time(rounds, || unixfs::root_cid(&mem.tree().unwrap()).unwrap());
    let tree = mem.tree().unwrap();
    let cid_only = time(rounds, || unixfs::root_cid(&tree).unwrap());
    drop(tree);
    let sha = sha.then(|| time(rounds, || sha256sum(dir, &files)));
    let openssl = openssl.then(|| time(rounds, || openssl_sha256(dir, &files)));
    let row = CidRow {
        name,
        files: files.len(),
        bytes,
        e2e,
        cid_only,
        sha,
        openssl,
    };
    println!(
        "{name}: {} files, {} bytes ({:.1} MB), root {root}",
        row.files,
        bytes,
        bytes as f64 / 1e6
    );
    println!(
        "  read + CID (Backend::tree + unixfs::root_cid): {:>10}  {:>8.1} MB/s",
        ms(e2e),
        mbps(bytes, e2e)
    );
    println!(
        "  CID only (unixfs::root_cid, in-memory tree):   {:>10}  {:>8.1} MB/s",
        ms(cid_only),
        mbps(bytes, cid_only)
    );
    match sha {
        Some(s) => {
            println!(
                "  sha256sum (external, same files):             {:>10}  {:>8.1} MB/s",
                ms(s),
                mbps(bytes, s)
            );
            println!(
                "  speed ratio read+CID / sha256sum: {:.0}%   CID-only / sha256sum: {:.0}%   (target: >= 50%)",
                100.0 * s.as_secs_f64() / e2e.as_secs_f64(),
                100.0 * s.as_secs_f64() / cid_only.as_secs_f64()
            );
        }
        None => println!("  sha256sum: skipped (not on PATH)"),
    }
    if let Some(o) = openssl {
        println!(
            "  reference, not the target: openssl dgst -sha256 (same files): {} {:.1} MB/s; read+CID / openssl: {:.0}%",
            ms(o),
            mbps(bytes, o),
            100.0 * o.as_secs_f64() / e2e.as_secs_f64()
        );
    }
    row
}

fn cids(dag: &Dag) -> HashSet<Cid> {
    dag.blocks.iter().map(|(c, _)| *c).collect()
}

/// Replaces the first three words of the memory's body (after the frontmatter).
fn edit_body(path: &Path, words: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find("\n---\n").expect("frontmatter end") + 5;
    let body = &text[start..];
    let lead = body.len() - body.trim_start().len();
    let mut cut = start + lead;
    for _ in 0..3 {
        let rest = &text[cut..];
        let skip = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        let word = rest[skip..]
            .find(char::is_whitespace)
            .unwrap_or(rest.len() - skip);
        cut += skip + word;
    }
    let edited = format!("{}{words}{}", &text[..start + lead], &text[cut..]);
    assert_ne!(edited, text);
    std::fs::write(path, edited).unwrap();
}

fn dag_of(mem: &Memory) -> Dag {
    unixfs::build(&mem.tree().unwrap()).unwrap()
}

fn receipt_line(label: &str, r: &Receipt, took: Duration, sent_full: usize, delta: usize) {
    println!(
        "  {label}: receipt car_bytes = {} (full CAR {sent_full}, delta CAR {delta}), delta = {}, wall {}",
        r.car_bytes,
        r.delta,
        ms(took)
    );
}

struct PushRow {
    label: &'static str,
    car_bytes: u64,
    delta: bool,
    took: Duration,
}

/// Part 2 against a real node: full push, delta push, delta without its base.
fn push_to_node(
    mem: &Memory,
    dir: &Path,
    v1: (&Dag, &[u8]),
    v2: (&Dag, &[u8], &[u8]),
    edit: &Path,
) -> Vec<PushRow> {
    let p = Blocking::new(
        provider::from_env("kubo", &provider::process_env, &Settings::default())
            .expect("kubo from IPFS_API"),
    )
    .expect("runtime");
    let mut rows = Vec::new();
    println!(
        "\npush to the node at IPFS_API ({}), through memdir::sync::push (what `memdir push` runs):",
        p.name()
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let channel = format!("bench-{}-{nanos}", std::process::id());
    let remote = Remote {
        provider: &p,
        seal: &Seal::Plain,
        channel: &channel,
        keep_versions: 10,
        progress: &NoProgress,
    };
    // The directory holds v2 now; the first push of a directory sends everything.
    let t = Instant::now();
    let r1 = memdir::sync::push(mem, &remote, false).expect("first push");
    let took = t.elapsed();
    println!(
        "  first push (v2, full)  : sent {} bytes of a {}-byte CAR, delta = {}, wall {}",
        r1.car_bytes,
        r1.full_car_bytes,
        r1.delta,
        ms(took)
    );
    assert_eq!(r1.root, v2.0.root.to_string());
    println!("    has(root) = {}", p.has(&v2.0.root).expect("has v2"));
    rows.push(PushRow {
        label: "first push (full CAR)",
        car_bytes: r1.car_bytes,
        delta: r1.delta,
        took,
    });
    // Edit one memory and push again: only the new blocks go.
    edit_body(&dir.join(edit), "edited again before the second push");
    let t = Instant::now();
    let r2 = memdir::sync::push(mem, &remote, false).expect("second push");
    let took = t.elapsed();
    println!(
        "  push after one edit    : sent {} bytes of a {}-byte CAR, delta = {}, wall {}",
        r2.car_bytes,
        r2.full_car_bytes,
        r2.delta,
        ms(took)
    );
    rows.push(PushRow {
        label: "push after one edit (base on node)",
        car_bytes: r2.car_bytes,
        delta: r2.delta,
        took,
    });
    let _ = v1;
    let pushed2 = dag_of(mem);

    // A base the node never saw: v2 plus an edit of another memory (with a tag
    // unique to this run, so that a reused node cannot hold it), never pushed;
    // v3 edits one more memory on top, and its delta is computed against that
    // base, so the delta lacks the block of the unpushed edit.
    let (files, _) = data_files(dir);
    let memories: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md") && *f != Path::new("MEMORY.md"))
        .collect();
    let other = memories
        .iter()
        .find(|f| f.as_path() != edit)
        .expect("a second memory");
    let third = memories
        .iter()
        .rev()
        .find(|f| f.as_path() != edit)
        .expect("a third memory");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    edit_body(
        &dir.join(other),
        &format!("never pushed {}-{nanos}", std::process::id()),
    );
    let base = dag_of(mem);
    edit_body(&dir.join(third), "third version edit");
    let v3 = dag_of(mem);
    let full3 = car_bytes(&v3);
    let delta3 = delta_car(&v3, &cids(&base));
    let base_cids = cids(&base);
    let mut on_node = cids(v2.0);
    on_node.extend(cids(&pushed2));
    let lacked = v3.blocks.iter().filter(|(c, _)| !on_node.contains(c));
    let omitted = lacked
        .clone()
        .filter(|(c, _)| base_cids.contains(c))
        .count();
    println!(
        "  v3: delta against an unpushed base: {} bytes; the node lacked {} of v3's blocks, {} of them not in the delta",
        delta3.len(),
        lacked.count(),
        omitted
    );
    let t = Instant::now();
    let r3 = p
        .put_car_delta(&v3.root, &delta3, &full3, &NoProgress)
        .expect("fallback push");
    let took = t.elapsed();
    receipt_line(
        "v3 put_car_delta, no base",
        &r3,
        took,
        full3.len(),
        delta3.len(),
    );
    println!("    has(v3 root) = {}", p.has(&v3.root).expect("has v3"));
    rows.push(PushRow {
        label: "v3 put_car_delta, base missing",
        car_bytes: r3.car_bytes,
        delta: r3.delta,
        took,
    });
    rows
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let rounds = if quick { 3 } else { 11 };
    println!("memdir sync benchmark ({rounds} rounds, medians; MB = 10^6 bytes)\n");

    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("memory");
    let blobs = tmp.path().join("blobs");
    let t = Instant::now();
    generate(&store, 10_000);
    println!("generated the 10,000-memory store in {}", ms(t.elapsed()));
    let t = Instant::now();
    generate_blobs(&blobs, 50);
    println!("generated the blob set in {}\n", ms(t.elapsed()));

    // Part 1: CID throughput against sha256sum.
    let sha = on_path("sha256sum", "--version");
    let openssl = on_path("openssl", "version");
    if !sha {
        println!("sha256sum is not on PATH: skipping the sha256sum comparison\n");
    }
    let mut rows = vec![measure_cid(
        "10,000-memory store",
        &store,
        rounds,
        sha,
        openssl,
    )];
    println!();
    rows.push(measure_cid(
        "blob set (50 x ~4 MiB)",
        &blobs,
        rounds,
        sha,
        openssl,
    ));
    let _ = std::fs::remove_dir_all(&blobs);

    // Part 2: bytes pushed after one edit.
    println!("\npush bytes after one edit (10,000-memory store):");
    let mem = Memory::open(&store).unwrap();
    let build = time(rounds, || dag_of(&mem).blocks.len());
    let v1 = dag_of(&mem);
    let full1 = car_bytes(&v1);
    let (files, _) = data_files(&store);
    let edit = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md") && *f != Path::new("MEMORY.md"))
        .nth(5000)
        .expect("a memory")
        .clone();
    edit_body(&store.join(&edit), "changed these words");
    let v2 = dag_of(&mem);
    let full2 = car_bytes(&v2);
    let known = cids(&v1);
    let delta2 = delta_car(&v2, &known);
    let new_blocks = v2.blocks.iter().filter(|(c, _)| !known.contains(c)).count();
    println!(
        "  DAG build (Backend::tree + unixfs::build): {} ({} blocks)",
        ms(build),
        v1.blocks.len()
    );
    println!("  v1 root {}", v1.root);
    println!("  v2 root {} (edited {})", v2.root, edit.display());
    println!("  full CAR v1:          {:>10} bytes", full1.len());
    println!("  full CAR v2:          {:>10} bytes", full2.len());
    println!(
        "  delta CAR v2 vs v1:   {:>10} bytes  ({} new blocks of {})",
        delta2.len(),
        new_blocks,
        v2.blocks.len()
    );
    println!(
        "  delta / full: {:.3}%  (full is {:.0}x the delta)",
        100.0 * delta2.len() as f64 / full2.len() as f64,
        full2.len() as f64 / delta2.len() as f64
    );

    let pushes = if provider::process_env("IPFS_API").is_some() {
        push_to_node(&mem, &store, (&v1, &full1), (&v2, &full2, &delta2), &edit)
    } else {
        println!("\nIPFS_API is not set: skipping the pushes to a real node");
        Vec::new()
    };

    // Summary.
    println!("\n## Summary\n");
    println!(
        "| data set | files | MB | read+CID | CID only | sha256sum | read+CID MB/s | CID-only MB/s | sha256sum MB/s | read+CID vs sha256sum | CID-only vs sha256sum | openssl MB/s (reference) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let (sha_t, sha_s, e2e_pct, cid_pct) = match r.sha {
            Some(s) => (
                ms(s),
                format!("{:.1}", mbps(r.bytes, s)),
                format!("{:.0}%", 100.0 * s.as_secs_f64() / r.e2e.as_secs_f64()),
                format!("{:.0}%", 100.0 * s.as_secs_f64() / r.cid_only.as_secs_f64()),
            ),
            None => ("skipped".into(), "-".into(), "-".into(), "-".into()),
        };
        let ossl = r
            .openssl
            .map_or("-".to_string(), |o| format!("{:.1}", mbps(r.bytes, o)));
        println!(
            "| {} | {} | {:.1} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} |",
            r.name,
            r.files,
            r.bytes as f64 / 1e6,
            ms(r.e2e),
            ms(r.cid_only),
            sha_t,
            mbps(r.bytes, r.e2e),
            mbps(r.bytes, r.cid_only),
            sha_s,
            e2e_pct,
            cid_pct,
            ossl
        );
    }
    println!();
    println!("| push after one edit | bytes |");
    println!("|---|---|");
    println!("| full CAR (v2) | {} |", full2.len());
    println!(
        "| delta CAR (v2 vs v1) | {} ({} new blocks) |",
        delta2.len(),
        new_blocks
    );
    println!(
        "| delta / full | {:.3}% |",
        100.0 * delta2.len() as f64 / full2.len() as f64
    );
    if !pushes.is_empty() {
        println!();
        println!("| push to node | receipt car_bytes | delta | wall |");
        println!("|---|---|---|---|");
        for p in &pushes {
            println!(
                "| {} | {} | {} | {} |",
                p.label,
                p.car_bytes,
                p.delta,
                ms(p.took)
            );
        }
    }
}
