//! Crash safety and concurrency: atomic writes survive SIGKILL at any moment, and
//! several processes writing and appending at once lose nothing.

use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::*;

#[test]
fn a_killed_write_leaves_the_old_or_the_new_file() {
    // spec/architecture.md#atomic-writes
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let bodies = ["A".repeat(300_000), "B".repeat(300_000)];
    let files: Vec<_> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let p = tmp.path().join(format!("body{i}"));
            std::fs::write(&p, b).unwrap();
            p
        })
        .collect();
    let write = |i: usize| {
        let mut c = memdir(&dir);
        c.args([
            "write",
            "big",
            "--name",
            "Big",
            "--type",
            "project",
            "--description",
            "d",
            "--replace",
            "--body-file",
        ])
        .arg(&files[i % 2])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        c
    };
    assert!(run(memdir(&dir).arg("init")).status.success());
    assert!(run(&mut write(0)).status.success());
    let mut rng = Lcg(7);
    let mut killed = 0;
    for i in 1..=40 {
        let mut child: Child = write(i).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.next() % 30_000));
        if child.kill().is_ok() {
            killed += 1;
        }
        let _ = child.wait();
        let text = std::fs::read_to_string(dir.join("big.md")).unwrap();
        let parsed = memdir::memory::frontmatter::parse(&text)
            .unwrap_or_else(|e| panic!("torn file after kill {i}: {e}"));
        assert!(
            parsed.body == bodies[0] || parsed.body == bodies[1],
            "kill {i}: body is neither version ({} bytes)",
            parsed.body.len()
        );
        let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
        assert!(
            index.starts_with("# Agent Memory\n"),
            "kill {i}: torn index"
        );
    }
    assert!(
        killed > 0,
        "no process was killed mid-run; the test proved nothing"
    );
    // No temp file is ever mistaken for a memory, and check can clean them up.
    let o = run(memdir(&dir).args(["check", "--fix"]));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn four_processes_times_200_operations_lose_nothing() {
    // spec/architecture.md#locking
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let procs = 4;
    let per = 100; // each iteration is a write and a note: 200 operations per process
    let mut children = Vec::new();
    for p in 0..procs {
        let script = format!(
            r#"set -e
for i in $(seq 0 {last}); do
  "$BIN" --dir "$DIR" write "p{p}_$i" --name "P{p} $i" --type project --description "from process {p}" --body "body of p{p} item $i" >/dev/null
  "$BIN" --dir "$DIR" note tick proc={p} i=$i >/dev/null
  if [ $((i % 10)) -eq 0 ]; then
    "$BIN" --dir "$DIR" write shared --replace --name Shared --type user --description "last writer p{p}" --body "p{p} at $i" >/dev/null
  fi
done"#,
            last = per - 1
        );
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .env("BIN", bin())
            .env("DIR", &dir)
            .env("MEMDIR_NOW", NOW)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        children.push(child);
    }
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "a worker failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let mem = memdir::Memory::open(&dir).unwrap();
    let snap = mem.load().unwrap();
    assert!(snap.problems.is_empty(), "{:?}", snap.problems);
    assert_eq!(snap.records.len(), procs * per + 1);
    for p in 0..procs {
        for i in 0..per {
            let r = mem.read(&format!("p{p}_{i}")).unwrap();
            assert_eq!(r.body, format!("body of p{p} item {i}"));
        }
    }
    let events = mem.events().unwrap();
    assert!(events.problems.is_empty(), "{:?}", events.problems);
    let mut seen: Vec<(String, String)> = events
        .events
        .iter()
        .map(|e| {
            (
                e.field_str("proc").unwrap().to_string(),
                e.field_str("i").unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(seen.len(), procs * per);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), procs * per, "duplicate or lost timeline lines");
    // The index lists every memory: the last rebuild saw every write.
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert_eq!(index, memdir::memory::index::render(&snap.records));
    assert_eq!(index.matches("- [").count(), procs * per + 1);
}
