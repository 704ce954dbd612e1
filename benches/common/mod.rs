//! What the benchmarks share: the generator of realistic memory stores (seeded, so
//! every run measures the same bytes) and median timing.

#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use memdir::{Clock, Memory};

pub const WORDS: &[&str] = &[
    "the",
    "user",
    "prefers",
    "short",
    "answers",
    "project",
    "deadline",
    "meeting",
    "weekly",
    "football",
    "training",
    "race",
    "coffee",
    "morning",
    "evening",
    "review",
    "draft",
    "budget",
    "travel",
    "flight",
    "hotel",
    "daughter",
    "school",
    "piano",
    "lesson",
    "garden",
    "tomatoes",
    "rust",
    "compiler",
    "deploy",
    "server",
    "database",
    "migration",
    "backup",
    "invoice",
    "client",
    "design",
    "feedback",
    "direct",
    "critique",
    "tone",
    "metric",
    "units",
    "running",
    "10k",
    "pace",
    "tempo",
    "recovery",
    "knee",
    "physio",
    "stretching",
    "dinner",
    "recipe",
    "vegetarian",
    "allergy",
    "peanuts",
    "birthday",
    "anniversary",
    "gift",
    "book",
    "novel",
    "chapter",
    "editor",
    "publisher",
    "contract",
    "salary",
    "promotion",
    "manager",
    "team",
    "standup",
    "sprint",
    "release",
    "bug",
    "regression",
    "test",
    "coverage",
    "laptop",
    "monitor",
    "keyboard",
    "ergonomic",
    "desk",
    "remote",
    "office",
    "commute",
    "bicycle",
    "train",
    "weather",
];

/// A deterministic generator (no randomness crate needed).
pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| WORDS[self.below(WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Writes `n` memories (bodies 200–2,000 characters, YAML frontmatter, tags), a
/// 600-event timeline and MEMORY.md into `dir`, through memdir's import path.
pub fn generate(dir: &Path, n: usize) {
    let mut rng = Lcg(n as u64);
    let kinds = ["user", "feedback", "project", "reference"];
    let mut blob_files = serde_json::Map::new();
    // Write through the import path (one lock, one index rebuild) rather than n writes.
    for i in 0..n {
        let kind = kinds[rng.below(4) as usize];
        let day = 1 + rng.below(365);
        let date = chrono::NaiveDate::from_ymd_opt(2025, 4, 14).unwrap()
            + chrono::Duration::days(day as i64);
        let target = 200 + rng.below(1800) as usize;
        let mut body = String::new();
        while body.len() < target {
            let n = 8 + rng.below(10) as usize;
            body.push_str(&rng.words(n));
            body.push_str(if rng.below(4) == 0 { ".\n\n" } else { ". " });
        }
        body.truncate(target);
        let tags: Vec<String> = (0..rng.below(4)).map(|_| rng.words(1)).collect();
        let text = format!(
            "---\nname: {}\ndescription: {}\ntype: {kind}\ncreated: {date}\nupdated: {date}\n{}---\n\n{}\n",
            rng.words(3),
            rng.words(9),
            if tags.is_empty() {
                String::new()
            } else {
                format!("tags: [{}]\n", tags.join(", "))
            },
            body.trim()
        );
        blob_files.insert(format!("{kind}_{i:05}.md"), text.into());
    }
    let mut events = Vec::new();
    for d in 0..30 {
        for k in 0..20 {
            events.push(serde_json::json!({
                "ts": format!("2026-03-{:02}T{:02}:{:02}:00.000Z", 1 + d % 28, 8 + k / 4, (k * 7) % 60),
                "type": "user_said",
                "text": rng.words(12),
            }));
        }
    }
    let blob =
        serde_json::json!({"version": "memory/0.1", "files": blob_files, "timeline": events});
    let mem = Memory::open(dir).unwrap().with_clock(clock());
    mem.import(blob.to_string().as_bytes(), memdir::Strategy::Merge, false)
        .unwrap();
}

/// The clock of generated stores.
pub fn clock() -> Clock {
    Clock::fixed("2026-04-14T12:00:00Z".parse().unwrap())
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The median of `rounds` runs of `f`, after one warm-up run.
pub fn time<T>(rounds: usize, mut f: impl FnMut() -> T) -> Duration {
    let _ = f(); // warm the page cache and the allocator
    median(
        (0..rounds)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed()
            })
            .collect(),
    )
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The LongMemEval dev half's chats as memories (issue 30): the file the store
/// benchmark reads for its real-text corpus (`MEMDIR_BENCH_LME`, else the shared
/// bench-data copy next to the repository). `None` when it is not there.
pub fn real_data() -> Option<std::path::PathBuf> {
    let p = std::env::var_os("MEMDIR_BENCH_LME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/bench-data/longmemeval_s_dev.jsonl.gz")
        });
    p.is_file().then_some(p)
}

/// One memory of the real-text corpus: an exchange of a chat (a user turn and the
/// assistant's reply), dated with its session.
struct Exchange {
    date: chrono::NaiveDate,
    lines: Vec<String>,
}

/// Every distinct exchange of the data set's sessions (a session that several
/// questions share is taken once), in file order, and the questions.
fn exchanges(data: &Path) -> (Vec<Exchange>, Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut questions = Vec::new();
    memdir::bench::longmemeval::for_each(data, None, &mut |q| {
        questions.push(q.question.clone());
        for s in &q.history.sessions {
            let first = s.turns.first().map(|t| t.text.as_str()).unwrap_or("");
            if !seen.insert((s.at, first.to_string())) {
                continue;
            }
            for pair in s.turns.chunks(2) {
                let lines = pair
                    .iter()
                    .map(|t| {
                        let text = t.text.split_whitespace().collect::<Vec<_>>().join(" ");
                        format!("{}: {text}", t.speaker)
                    })
                    .collect();
                out.push(Exchange {
                    date: s.at.date_naive(),
                    lines,
                });
            }
        }
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{}: {e}", data.display()));
    (out, questions)
}

/// Writes `n` memories cut from real chats into `dir` (one exchange each: a user turn
/// and the reply, the session's date; a name from the user's first words), through the
/// import path as [`generate`] does, and returns the data set's questions, to ask of
/// the store. When the data holds fewer exchanges than `n`, they are used again under
/// other keys.
pub fn generate_real(dir: &Path, n: usize, data: &Path) -> Vec<String> {
    let (exchanges, questions) = exchanges(data);
    assert!(!exchanges.is_empty(), "{}: no turns", data.display());
    let kinds = ["user", "project", "reference", "feedback"];
    let mut files = serde_json::Map::new();
    for i in 0..n {
        let x = &exchanges[i % exchanges.len()];
        let kind = kinds[i % 4];
        let words: Vec<&str> = x.lines[0]
            .split_whitespace()
            .skip(1)
            .take(6)
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .collect();
        let name = if words.is_empty() {
            format!("Exchange {i}")
        } else {
            words.join(" ")
        };
        let text = format!(
            "---\nname: {}\ndescription: {}\ntype: {kind}\ncreated: {d}\nupdated: {d}\n---\n\n{}\n",
            serde_json::Value::String(name),
            serde_json::Value::String(format!("a chat of {}", x.date)),
            x.lines.join("\n"),
            d = x.date,
        );
        files.insert(format!("{kind}_chat_{i:06}.md"), text.into());
    }
    let blob = serde_json::json!({"version": "memory/0.1", "files": files, "timeline": []});
    let mem = Memory::open(dir).unwrap().with_clock(clock());
    mem.import(blob.to_string().as_bytes(), memdir::Strategy::Merge, false)
        .unwrap();
    questions
}
