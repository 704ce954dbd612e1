//! The store never bricks and never acts then fails (issue 11, sections 3–5): an index
//! of any size, a pasted MEMORY.md, commands that fail having changed nothing, forgets
//! that always leave their tombstone, imports that read everything first, `check --fix`
//! next to live writers, and timeline days read line by line.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use memdir::memory::frontmatter;
use memdir::memory::{Key, Kind, Meta, Stamp};

use crate::common::*;

fn write_args<'a>(key: &'a str, desc: &'a str) -> Vec<&'a str> {
    vec![
        "write",
        key,
        "--name",
        "N",
        "--type",
        "project",
        "--description",
        desc,
        "--body",
        "b",
    ]
}

fn ok(o: &std::process::Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// Writes `n` memory files the way memdir renders them, with long descriptions.
fn many_memories(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        let day = Stamp::parse("2026-04-01").unwrap();
        let meta = Meta {
            name: format!("Memory number {i}"),
            description: format!("{i} {}", "a long description of what this holds ".repeat(9)),
            kind: Kind::parse("project"),
            created: day.clone(),
            updated: day,
            source: None,
            decay: None,
            tags: vec![],
            important: false,
            supersedes: Vec::new(),
            valid_until: None,
            extra: Default::default(),
        };
        std::fs::write(
            dir.join(Key::parse(&format!("m{i:05}")).unwrap().file_name()),
            frontmatter::render(&meta, "body"),
        )
        .unwrap();
    }
}

fn backups(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir.join(".memdir/backups")) {
        Err(_) => Vec::new(),
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("MEMORY.md."))
            .collect(),
    }
}

#[test]
fn an_index_over_4_mib_is_written_read_and_kept_up_to_date() {
    // spec/index-format.md#rebuild: the generated index is written whatever its size
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    many_memories(&dir, 14_000);
    ok(&run(memdir(&dir).arg("index")));
    let size = std::fs::metadata(dir.join("MEMORY.md")).unwrap().len();
    assert!(size > 4 * 1024 * 1024, "index is only {size} bytes");
    let o = run(memdir(&dir).arg("check"));
    ok(&o);
    assert!(!stdout(&o).contains("MEMORY.md"), "{}", stdout(&o));
    ok(&run(memdir(&dir).args(write_args("zz_new", "added last"))));
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(index.contains("(zz_new.md) — added last"));
    ok(&run(memdir(&dir).args(["forget", "m00007"])));
    assert!(
        !std::fs::read_to_string(dir.join("MEMORY.md"))
            .unwrap()
            .contains("(m00007.md)")
    );
    ok(&run(memdir(&dir).arg("list")));
    let o = run(memdir(&dir).args(["context", "--max-tokens", "300"]));
    ok(&o);
    // spec/ranking.md#budget: the index gives way within the hard budget.
    assert!(stdout(&o).contains("entries not shown"), "{}", stdout(&o));
    assert!(stdout(&o).trim_end().chars().count() <= 300 * 4);
    assert!(backups(&dir).is_empty(), "{:?}", backups(&dir));
}

#[test]
fn a_pasted_5_mb_index_is_saved_and_replaced_by_a_write() {
    // spec/index-format.md#rebuild: a hand-edited index of any size is backed up
    let (_tmp, dir) = example_copy();
    ok(&run(memdir(&dir).arg("index")));
    let pasted: String = (0..130_000)
        .map(|i| format!("my own line {i} of notes I pasted here\n"))
        .collect();
    assert!(pasted.len() > 4 * 1024 * 1024);
    std::fs::write(dir.join("MEMORY.md"), &pasted).unwrap();
    let o = run(memdir(&dir).arg("check"));
    assert!(
        stdout(&o).contains("MEMORY.md: stale"),
        "check must not call a present index missing: {}",
        stdout(&o)
    );
    let o = run(memdir(&dir).args(write_args("user_new", "new one")));
    ok(&o);
    assert!(
        stderr(&o).contains("note: MEMORY.md had been edited by hand; your version is saved as"),
        "{}",
        stderr(&o)
    );
    let saved = backups(&dir);
    assert_eq!(saved.len(), 1, "{saved:?}");
    let copy = std::fs::read(dir.join(".memdir/backups").join(&saved[0])).unwrap();
    assert!(
        copy == pasted.as_bytes(),
        "the backup is not the pasted file"
    );
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(index.starts_with("# Agent Memory\n") && index.contains("(user_new.md)"));
}

#[test]
fn list_says_when_it_replaces_a_hand_edited_index() {
    // spec/index-format.md#rebuild: every rebuild that saves a backup says so
    let (_tmp, dir) = example_copy();
    ok(&run(memdir(&dir).arg("index")));
    std::fs::write(dir.join("MEMORY.md"), "# Mine\n\ntyped\n").unwrap();
    let o = run(memdir(&dir).arg("list"));
    ok(&o);
    assert!(
        stderr(&o).contains("note: MEMORY.md had been edited by hand; your version is saved as"),
        "{}",
        stderr(&o)
    );
    assert_eq!(backups(&dir).len(), 1);
}

#[test]
fn a_write_or_forget_that_fails_has_changed_nothing() {
    // spec/architecture.md#a-command-that-fails-changed-nothing
    let (_tmp, dir) = example_copy();
    ok(&run(memdir(&dir).arg("index")));
    // A hand-edited index must be saved first, and saving it cannot work.
    std::fs::write(dir.join("MEMORY.md"), "# Mine\n").unwrap();
    std::fs::write(dir.join(".memdir/backups"), "in the way").unwrap();
    let before = tree(&dir);
    let o = run(memdir(&dir).args(write_args("user_new", "new one")));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(tree(&dir), before, "a failed write changed files");
    let o = run(memdir(&dir).args(["forget", "user_role"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(tree(&dir), before, "a failed forget changed files");
}

#[cfg(unix)]
#[test]
fn forget_with_a_linked_timeline_fails_and_deletes_nothing() {
    // spec/timeline-format.md#events-memdir-writes: the intent is logged first
    let (tmp, dir) = example_copy();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::remove_dir_all(dir.join("timeline")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("timeline")).unwrap();
    let o = run(memdir(&dir).args(["forget", "user_role"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(dir.join("user_role.md").exists(), "the memory is gone");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_killed_forget_never_loses_a_memory_without_its_tombstone() {
    // spec/timeline-format.md#events-memdir-writes
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let rounds = 120;
    let mem = memdir::Memory::open(&dir).unwrap();
    for i in 0..rounds {
        mem.write(&memdir::Draft {
            key: format!("k{i}"),
            name: "K".into(),
            description: "d".into(),
            kind: "project".into(),
            body: "b".into(),
            ..Default::default()
        })
        .unwrap();
    }
    let forget = |i: usize| {
        let mut c = memdir(&dir);
        c.args(["forget", &format!("k{i}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    // How long a forget takes here, to aim the kills inside it.
    let t = Instant::now();
    ok(&run(&mut forget(0)));
    let span = t.elapsed().as_micros() as u64 + 1;
    let mut rng = Lcg(11);
    let (mut killed, mut gone_mid_run) = (0, 0);
    for i in 1..rounds {
        let file = dir.join(format!("k{i}.md"));
        let mut child = forget(i).spawn().unwrap();
        if i % 2 == 0 {
            std::thread::sleep(Duration::from_micros(rng.next() % span));
        } else {
            // Aim: kill the moment the file disappears, before anything after it.
            let deadline = Instant::now() + Duration::from_secs(5);
            while file.exists() && Instant::now() < deadline && child.try_wait().unwrap().is_none()
            {
            }
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        if !status.success() {
            killed += 1;
            if !dir.join(format!("k{i}.md")).exists() {
                gone_mid_run += 1;
            }
        }
    }
    let events = mem.events().unwrap();
    let tombstones = memdir::exchange::merge::forgotten(&events.events);
    let lost: Vec<usize> = (0..rounds)
        .filter(|i| !dir.join(format!("k{i}.md")).exists())
        .filter(|i| !tombstones.contains_key(&format!("k{i}")))
        .collect();
    eprintln!(
        "forget kills: {killed} of {} killed, {gone_mid_run} deleted before the kill, {} lost without a tombstone",
        rounds - 1,
        lost.len()
    );
    assert!(
        killed > 10,
        "only {killed} kills landed; the test proved little"
    );
    assert!(
        lost.is_empty(),
        "memories gone without a `forgot` event: {lost:?}"
    );
}

#[test]
fn a_kill_around_the_index_rename_makes_no_false_backup() {
    // spec/index-format.md#rebuild: the hash is recorded before the rename
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    ok(&run(memdir(&dir).arg("init")));
    let write = |i: usize| {
        let mut c = memdir(&dir);
        c.args(write_args(&format!("k{i}"), "d"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let t = Instant::now();
    ok(&run(&mut write(0)));
    let span = t.elapsed().as_micros() as u64 + 1;
    let mut rng = Lcg(5);
    let mut killed = 0;
    let rounds = 150;
    for i in 1..rounds {
        let mut child = write(i).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.next() % span));
        let _ = child.kill();
        if !child.wait().unwrap().success() {
            killed += 1;
        }
        // The next command sees whatever the kill left.
        ok(&run(memdir(&dir).arg("index")));
    }
    eprintln!(
        "index kills: {killed} of {} killed, {} false backups",
        rounds - 1,
        backups(&dir).len()
    );
    assert!(
        killed > 10,
        "only {killed} kills landed; the test proved little"
    );
    assert_eq!(
        backups(&dir),
        Vec::<String>::new(),
        "false 'edited by hand' backups"
    );
}

#[cfg(unix)]
#[test]
fn import_reads_the_whole_timeline_before_writing_and_dry_run_fails_alike() {
    // spec/cli.md#import: validate and read everything first
    let (tmp, dir) = example_copy();
    ok(&run(memdir(&dir).arg("index")));
    let blob = tmp.path().join("blob.json");
    ok(&run(memdir(&dir).args(["export", "-o"]).arg(&blob)));
    // A new memory and an event on a day whose file cannot be read.
    let src = tmp.path().join("src");
    copy_tree(&dir, &src);
    ok(&run(memdir(&src).args(write_args("user_new", "new one"))));
    ok(&run(memdir(&src)
        .env("MEMDIR_NOW", "2026-04-10T08:00:00Z")
        .args(["note", "hello", "text=x"])));
    ok(&run(memdir(&src).args(["export", "-o"]).arg(&blob)));
    let outside = tmp.path().join("outside.jsonl");
    std::fs::write(&outside, "").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("timeline/2026-04-10.jsonl")).unwrap();
    let before = tree_no_links(&dir);
    for dry in [true, false] {
        let mut c = memdir(&dir);
        c.arg("import").arg(&blob);
        if dry {
            c.arg("--dry-run");
        }
        let o = run(&mut c);
        assert_eq!(o.status.code(), Some(1), "dry run {dry}: {}", stdout(&o));
        assert!(stderr(&o).contains("2026-04-10.jsonl"), "{}", stderr(&o));
        assert_eq!(tree_no_links(&dir), before, "dry run {dry} changed files");
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"");
    // A linked timeline/ folder stops it the same way.
    std::fs::remove_file(dir.join("timeline/2026-04-10.jsonl")).unwrap();
    let moved = tmp.path().join("moved-timeline");
    std::fs::rename(dir.join("timeline"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, dir.join("timeline")).unwrap();
    let before = tree_no_links(&dir);
    let o = run(memdir(&dir).arg("import").arg(&blob));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("timeline"), "{}", stderr(&o));
    assert_eq!(tree_no_links(&dir), before);
    assert!(!dir.join("user_new.md").exists());
}

/// Like `tree`, but a link is listed by name rather than followed.
fn tree_no_links(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["", "timeline"] {
        if std::fs::symlink_metadata(dir.join(sub)).is_ok_and(|m| m.file_type().is_symlink()) {
            continue;
        }
        let mut entries: Vec<_> = std::fs::read_dir(dir.join(sub))
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let rel = format!("{sub}/{}", e.file_name().to_string_lossy());
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.push((rel, b"<link>".to_vec()));
            } else if ft.is_file() {
                out.push((rel, std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out
}

#[test]
fn check_fix_next_to_live_writers_breaks_no_write() {
    // spec/architecture.md#atomic-writes: check --fix takes the lock
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    ok(&run(memdir(&dir).arg("init")));
    let writers = 2;
    let per = 100;
    let mut children = Vec::new();
    for p in 0..writers {
        let script = format!(
            r#"fails=0
for i in $(seq 1 {per}); do
  "$BIN" --dir "$DIR" write "p{p}_$i" --name N --type project --description "d $i" --body "body $i" >/dev/null 2>&1 || fails=$((fails+1))
done
echo $fails"#
        );
        children.push(
            std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .env("BIN", bin())
                .env("DIR", &dir)
                .env("MEMDIR_NOW", NOW)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut checks = 0;
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        assert!(Instant::now() < deadline, "writers did not finish");
        let _ = run(memdir(&dir).args(["check", "--fix"]));
        checks += 1;
    }
    let failed: usize = children
        .into_iter()
        .map(|c| {
            stdout(&c.wait_with_output().unwrap())
                .trim()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    let present = (0..writers)
        .flat_map(|p| (1..=per).map(move |i| format!("p{p}_{i}.md")))
        .filter(|n| dir.join(n).exists())
        .count();
    eprintln!(
        "check --fix x{checks} next to {} writes: {failed} failed, {present} present",
        writers * per
    );
    assert!(checks > 5, "check --fix ran only {checks} times");
    assert_eq!(failed, 0, "writes failed next to check --fix");
    assert_eq!(present, writers * per);
}

#[test]
fn check_fix_cleans_temp_files_in_every_folder_but_spares_fresh_lock_free_ones() {
    // spec/architecture.md#atomic-writes
    let (_tmp, dir) = example_copy();
    ok(&run(memdir(&dir).arg("index")));
    let old = SystemTime::now() - Duration::from_secs(3600);
    let mk = |rel: &str, aged: bool| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "partial").unwrap();
        if aged {
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(old).unwrap();
        }
    };
    mk(".memdir-a.tmp", false);
    mk("timeline/.memdir-b.tmp", false);
    mk(".memdir/backups/.memdir-c.tmp", false);
    mk(".memdir/.memdir-d.tmp", true);
    mk(".memdir/cache/.memdir-e.tmp", true);
    mk(".memdir/.memdir-fresh.tmp", false);
    mk(".memdir/cache/.memdir-fresh.tmp", false);
    let o = run(memdir(&dir).args(["check", "--fix"]));
    ok(&o);
    for gone in [
        ".memdir-a.tmp",
        "timeline/.memdir-b.tmp",
        ".memdir/backups/.memdir-c.tmp",
        ".memdir/.memdir-d.tmp",
        ".memdir/cache/.memdir-e.tmp",
    ] {
        assert!(!dir.join(gone).exists(), "{gone} left: {}", stdout(&o));
        assert!(stdout(&o).contains(&format!("fixed: removed {gone}")));
    }
    for kept in [
        ".memdir/.memdir-fresh.tmp",
        ".memdir/cache/.memdir-fresh.tmp",
    ] {
        assert!(dir.join(kept).exists(), "{kept} removed while maybe in use");
        assert!(stdout(&o).contains(kept), "{}", stdout(&o));
    }
}

#[test]
fn a_non_utf8_byte_spoils_one_timeline_line_only() {
    // spec/timeline-format.md#reading
    let (_tmp, dir) = example_copy();
    let day = dir.join("timeline/2026-04-12.jsonl");
    let mut bytes = b"{\"ts\":\"2026-04-12T10:00:00.000Z\",\"type\":\"a\"}\n".to_vec();
    bytes.extend_from_slice(
        b"{\"ts\":\"2026-04-12T10:01:00.000Z\",\"type\":\"b\",\"t\":\"\xff\"}\n",
    );
    bytes.extend_from_slice(b"{\"ts\":\"2026-04-12T10:02:00.000Z\",\"type\":\"c\"}\n");
    std::fs::write(&day, &bytes).unwrap();
    let mem = memdir::Memory::open(&dir).unwrap();
    let ev = mem.events().unwrap();
    let kinds: Vec<&str> = ev
        .events
        .iter()
        .filter(|e| e.ts.format("%F").to_string() == "2026-04-12")
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(kinds, ["a", "c"]);
    assert_eq!(ev.problems.len(), 1, "{:?}", ev.problems);
    assert_eq!(ev.problems[0].location(), "timeline/2026-04-12.jsonl:2");
    assert!(ev.problems[0].message.contains("not valid UTF-8"));
    assert_eq!(
        std::fs::read(&day).unwrap(),
        bytes,
        "the day file was rewritten"
    );
}

#[test]
fn a_day_over_64_mib_is_read_line_by_line() {
    // spec/timeline-format.md#reading: day files are streamed, whatever their size
    let (_tmp, dir) = example_copy();
    let line = format!(
        "{{\"ts\":\"2026-04-12T10:00:00.000Z\",\"type\":\"n\",\"text\":\"{}\"}}\n",
        "x".repeat(1000)
    );
    let n = (65 * 1024 * 1024) / line.len() + 1;
    let mut text = String::with_capacity(n * line.len() + 200);
    text.push_str("{\"ts\":\"2026-04-12T09:00:00.000Z\",\"type\":\"forgot\",\"key\":\"old\"}\n");
    for _ in 0..n {
        text.push_str(&line);
    }
    std::fs::write(dir.join("timeline/2026-04-12.jsonl"), &text).unwrap();
    drop(text);
    let mem = memdir::Memory::open(&dir).unwrap();
    let ev = mem.events().unwrap();
    assert!(ev.problems.is_empty(), "{:?}", ev.problems);
    let day = ev
        .events
        .iter()
        .filter(|e| e.ts.format("%F").to_string() == "2026-04-12")
        .count();
    assert_eq!(day, n + 1);
}

#[test]
fn a_note_is_bounded_at_write_time() {
    // spec/timeline-format.md#lines: one event is at most 1 MiB
    let (_tmp, dir) = example_copy();
    let before = tree(&dir);
    // Ten fields of 110 kB: one argument may not exceed 128 KiB on Linux.
    let fields: Vec<String> = (0..10)
        .map(|i| format!("f{i}={}", "y".repeat(110_000)))
        .collect();
    let o = run(memdir(&dir).args(["note", "big"]).args(&fields));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("over the limit of 1048576 bytes per timeline event"),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&dir), before);
    let mem = memdir::Memory::open(&dir).unwrap();
    let mut f = serde_json::Map::new();
    f.insert("text".into(), "z".repeat(2 * 1024 * 1024).into());
    let err = mem.note("big", f).unwrap_err().to_string();
    assert!(err.contains("per timeline event"), "{err}");
    let reason = "r".repeat(1024 * 1024 + 1);
    let err = mem
        .forget("user_role", Some(&reason))
        .unwrap_err()
        .to_string();
    assert!(err.contains("per timeline event"), "{err}");
    assert_eq!(tree(&dir), before);
}

#[test]
fn a_tombstone_in_a_damaged_day_still_stops_an_old_import() {
    // spec/timeline-format.md#reading, spec/cli.md#import
    let (tmp, dir) = example_copy();
    ok(&run(memdir(&dir).arg("index")));
    let blob = tmp.path().join("old.json");
    ok(&run(memdir(&dir).args(["export", "-o"]).arg(&blob)));
    ok(&run(memdir(&dir).args(["forget", "user_role"])));
    // Someone else's bad line lands in the same day.
    let day = dir.join("timeline").join(format!("{}.jsonl", &NOW[..10]));
    let mut bytes = std::fs::read(&day).unwrap();
    bytes.extend_from_slice(
        b"{\"ts\":\"2026-04-14T12:30:00.000Z\",\"type\":\"x\",\"t\":\"\xfe\"}\n",
    );
    std::fs::write(&day, &bytes).unwrap();
    let o = run(memdir(&dir).arg("import").arg(&blob));
    ok(&o);
    assert!(
        !dir.join("user_role.md").exists(),
        "the forgotten memory came back"
    );
    assert!(
        stdout(&o).contains("skip (forgotten here)"),
        "{}",
        stdout(&o)
    );
    // The bad line is still there, byte for byte.
    let after = std::fs::read(&day).unwrap();
    assert!(after.windows(4).any(|w| w == b"\"\xfe\"}"));
}

#[test]
fn a_killed_rename_never_loses_the_memory() {
    // spec/cli.md#rename: the new file is written before the old one is removed.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let rounds = 80;
    let mem = memdir::Memory::open(&dir).unwrap();
    for i in 0..rounds {
        mem.write(&memdir::Draft {
            key: format!("k{i}"),
            name: "K".into(),
            description: "d".into(),
            kind: "project".into(),
            body: format!("body {i}"),
            ..Default::default()
        })
        .unwrap();
    }
    let original: Vec<Vec<u8>> = (0..rounds)
        .map(|i| std::fs::read(dir.join(format!("k{i}.md"))).unwrap())
        .collect();
    let rename = |i: usize| {
        let mut c = memdir(&dir);
        c.args(["rename", &format!("k{i}"), &format!("n{i}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let t = Instant::now();
    ok(&run(&mut rename(0)));
    let span = t.elapsed().as_micros() as u64 + 1;
    let mut rng = Lcg(17);
    let (mut killed, mut both) = (0, 0);
    for i in 1..rounds {
        let new = dir.join(format!("n{i}.md"));
        let mut child = rename(i).spawn().unwrap();
        if i % 2 == 0 {
            std::thread::sleep(Duration::from_micros(rng.next() % span));
        } else {
            // Aim: kill the moment the new file appears, before the old one goes.
            let deadline = Instant::now() + Duration::from_secs(5);
            while !new.exists() && Instant::now() < deadline && child.try_wait().unwrap().is_none()
            {
            }
        }
        let _ = child.kill();
        if !child.wait().unwrap().success() {
            killed += 1;
            if new.exists() && dir.join(format!("k{i}.md")).exists() {
                both += 1;
            }
        }
    }
    let mut lost = Vec::new();
    for (i, want) in original.iter().enumerate() {
        let kept: Vec<Vec<u8>> = [format!("k{i}.md"), format!("n{i}.md")]
            .iter()
            .filter_map(|n| std::fs::read(dir.join(n)).ok())
            .collect();
        if !kept.contains(want) {
            lost.push(i);
        }
    }
    eprintln!(
        "rename kills: {killed} of {} killed, {both} left both files, {} lost",
        rounds - 1,
        lost.len()
    );
    assert!(
        killed > 10,
        "only {killed} kills landed; the test proved little"
    );
    assert!(
        lost.is_empty(),
        "memories lost by a killed rename: {lost:?}"
    );
    // Whatever the kills left, the store loads and the index can be rebuilt.
    ok(&run(memdir(&dir).args(["check", "--fix"])));
}
