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
