//! The watcher: an editor save or a git checkout rebuilds MEMORY.md within half a
//! second, a hand-edited index is saved first, and memdir's own writes do not loop.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::*;

fn memory_file(name: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: added in an editor\ntype: user\ncreated: 2026-04-14\nupdated: 2026-04-14\n---\n\nhello\n"
    )
}

/// Saves like an editor does: write a temp file, then rename it over the target.
fn editor_save(dir: &std::path::Path, name: &str, text: &str) {
    let tmp = dir.join(format!(".{name}.swp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn wait_for(path: &std::path::Path, needle: &str, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

#[test]
fn edits_rebuild_the_index_quickly_and_without_loops() {
    let (_tmp, dir) = example_copy();
    let mut child = memdir(&dir)
        .args(["--json", "watch", "--seconds", "300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // The first line says the watch is armed and the index is up to date.
    let first = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("watch did not start");
    assert!(first.contains("\"changed\":[]"), "{first}");

    // Editor saves: five new memories, one after the other.
    let index = dir.join("MEMORY.md");
    let mut latencies = Vec::new();
    for i in 0..5 {
        let name = format!("Edited {i}");
        editor_save(&dir, &format!("user_edit_{i}.md"), &memory_file(&name));
        let took = wait_for(
            &index,
            &format!("[{name}](user_edit_{i}.md)"),
            Duration::from_secs(5),
        )
        .unwrap_or_else(|| panic!("MEMORY.md was not rebuilt after save {i}"));
        latencies.push(took);
    }
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    assert!(
        median < Duration::from_millis(500),
        "median rebuild latency {median:?} ({latencies:?})"
    );

    // A checkout replaces several files at once: one burst, index right at the end.
    for (i, n) in ["user_edit_0.md", "user_edit_1.md"].iter().enumerate() {
        std::fs::remove_file(dir.join(n)).unwrap();
        editor_save(
            &dir,
            &format!("project_branch_{i}.md"),
            &memory_file(&format!("Branch {i}")),
        );
    }
    std::fs::remove_file(dir.join("feedback_tone.md")).unwrap();
    assert!(
        wait_for(
            &index,
            "[Branch 1](project_branch_1.md)",
            Duration::from_secs(5)
        )
        .is_some()
    );
    std::thread::sleep(Duration::from_millis(600));
    let text = std::fs::read_to_string(&index).unwrap();
    assert!(
        !text.contains("user_edit_0.md") && !text.contains("feedback_tone.md"),
        "{text}"
    );

    // A person edits MEMORY.md itself: their text is saved, the index restored.
    while rx.try_recv().is_ok() {}
    std::fs::write(&index, "# my scratch notes\n").unwrap();
    assert!(wait_for(&index, "# Agent Memory", Duration::from_secs(5)).is_some());
    let backups = std::fs::read_dir(dir.join(".memdir/backups"))
        .unwrap()
        .count();
    assert_eq!(backups, 1);

    // Quiet period: our own writes must not trigger further rebuilds.
    std::thread::sleep(Duration::from_millis(800));
    while rx.try_recv().is_ok() {}
    std::thread::sleep(Duration::from_millis(1000));
    let extra: Vec<String> = rx.try_iter().collect();
    assert!(
        extra.is_empty(),
        "rebuilds without edits (a loop?): {extra:?}"
    );
    let _ = child.kill();
    let _ = child.wait();
}
