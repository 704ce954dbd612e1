//! Bad input gets a clear error naming the file or key, nothing outside the
//! directory is read or written, and a person's file is never rewritten.

use std::path::Path;

use crate::common::*;

fn write_file(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

const GOOD: &str = "---\nname: Good\ndescription: fine\ntype: user\ncreated: 2026-01-01\nupdated: 2026-04-01\n---\n\nA good memory.\n";

#[test]
fn a_50_mb_file_is_reported_and_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    write_file(&dir, "good.md", GOOD.as_bytes());
    let mut big = GOOD.as_bytes().to_vec();
    big.extend(std::iter::repeat_n(b'x', 50 * 1024 * 1024));
    write_file(&dir, "huge.md", &big);
    let o = run(memdir(&dir).args(["context", "--max-tokens", "200"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("A good memory."));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "huge.md: not loaded: {} bytes is over the limit of 4194304 bytes",
            big.len()
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(dir.join("huge.md")).unwrap().len(),
        big.len() as u64
    );
}

#[test]
fn a_symlink_out_of_the_directory_is_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    write_file(&dir, "good.md", GOOD.as_bytes());
    let secret = tmp.path().join("outside.md");
    std::fs::write(&secret, GOOD.replace("A good memory.", "OUTSIDE SECRET")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("link.md")).unwrap();
    std::os::unix::fs::symlink(tmp.path(), dir.join("timeline")).unwrap();
    let o = run(memdir(&dir).args(["context"]));
    assert_eq!(o.status.code(), Some(0));
    assert!(!stdout(&o).contains("OUTSIDE SECRET"));
    assert!(
        stderr(&o).contains("link.md: symbolic link not followed"),
        "{}",
        stderr(&o)
    );
    // Writing through a linked name is refused; the target is untouched.
    let before = std::fs::read(&secret).unwrap();
    let o = run(memdir(&dir).args([
        "write",
        "link",
        "--name",
        "n",
        "--type",
        "user",
        "--description",
        "d",
        "--body",
        "b",
    ]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("link.md: is a symbolic link"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&secret).unwrap(), before);
    // A note would append into timeline/, which is a link out of the directory.
    let o = run(memdir(&dir).args(["note", "x", "a=b"]));
    assert_ne!(o.status.code(), Some(0));
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".jsonl"))
    );
}

#[test]
fn malformed_and_non_utf8_files_are_never_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let broken = b"---\nname: Re: broken\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\nbody\n";
    let binary = b"---\nname: b\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\xff\n";
    write_file(&dir, "broken.md", broken);
    write_file(&dir, "binary.md", binary);
    for args in [
        vec!["index"],
        vec!["check", "--fix"],
        vec![
            "write",
            "broken",
            "--name",
            "n",
            "--type",
            "user",
            "--description",
            "d",
            "--body",
            "x",
        ],
        vec![
            "write",
            "binary",
            "--name",
            "n",
            "--type",
            "user",
            "--description",
            "d",
            "--body",
            "x",
        ],
        vec!["import", "-"],
    ] {
        let _ = run(memdir(&dir).args(&args));
    }
    assert_eq!(std::fs::read(dir.join("broken.md")).unwrap(), broken);
    assert_eq!(std::fs::read(dir.join("binary.md")).unwrap(), binary);
    let o = run(memdir(&dir).args([
        "write",
        "broken",
        "--name",
        "n",
        "--type",
        "user",
        "--description",
        "d",
        "--body",
        "x",
    ]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err.contains("broken.md: line 2 column 9: mapping values are not allowed"),
        "{err}"
    );
    assert!(
        err.contains("hint: memdir will not overwrite a file it cannot read"),
        "{err}"
    );
}

#[test]
fn unsafe_keys_write_nothing_anywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    std::fs::create_dir_all(&dir).unwrap();
    for key in ["../x", "/etc/passwd", "a/b", "..", ".hidden", "CON", ""] {
        let o = run(memdir(&dir).args([
            "write",
            key,
            "--name",
            "n",
            "--type",
            "user",
            "--description",
            "d",
            "--body",
            "b",
        ]));
        assert_eq!(o.status.code(), Some(1), "{key:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("error: key"),
            "{key:?}: {}",
            stderr(&o)
        );
    }
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["m"]);
    assert!(tree(&dir).is_empty());
}

// spec/cli.md#import : a name that could address a path outside the
// directory refuses the whole blob, exit 1, nothing written; a `/` alone is a three.ws
// key separator and is mapped (blob.rs::runtime_keys_are_mapped_to_safe_keys).
#[test]
fn a_blob_naming_a_path_outside_is_refused_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    write_file(&dir, "good.md", GOOD.as_bytes());
    let before = tree(&dir);
    for name in [
        "../../etc/passwd",
        "../escape.md",
        "sub/../../x.md",
        ".memdir.md",
        "a\\\\b.md",
        "..md",
    ] {
        let blob = format!(
            r#"{{"version":"memory/0.1","files":{{"fine.md":"---\nname: f\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n","{name}":"x"}},"timeline":[{{"ts":"2026-01-01T00:00:00Z","type":"a"}}]}}"#
        );
        let p = tmp.path().join("blob.json");
        std::fs::write(&p, blob).unwrap();
        let o = run(memdir(&dir).arg("import").arg(&p));
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("unsafe file name"),
            "{name}: {}",
            stderr(&o)
        );
        assert_eq!(tree(&dir), before, "{name}: something was written");
    }
    assert!(!tmp.path().join("escape.md").exists());
    assert!(!tmp.path().join("x.md").exists());
}

// spec/architecture.md#nothing-outside-the-directory: a `.memdir/lock` that is a link
// (even a dangling one) is refused, and nothing is created where it points.
#[test]
fn a_linked_lock_file_is_refused_and_nothing_is_created_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    write_file(&dir, "good.md", GOOD.as_bytes());
    std::fs::create_dir_all(dir.join(".memdir")).unwrap();
    let target = tmp.path().join("planted-lock");
    std::os::unix::fs::symlink(&target, dir.join(".memdir/lock")).unwrap();
    let o = run(memdir(&dir).args(["note", "seen"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(".memdir/lock: is a symbolic link"),
        "{}",
        stderr(&o)
    );
    assert!(
        std::fs::symlink_metadata(&target).is_err(),
        "a file was created outside the directory"
    );
    let days = std::fs::read_dir(dir.join("timeline")).map_or(0, |d| d.count());
    assert_eq!(days, 0, "the note was written anyway");
}

// spec/memory-format.md#writing: a write that changes only the body keeps the text of
// every unchanged key, also when keys share a YAML anchor (`1.10` stays `1.10`,
// comments stay).
#[test]
fn a_body_only_write_keeps_anchored_frontmatter_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let text = "---\n# pinned by ops\nname: Tone\nversion: &v 1.10   # do not bump\ndescription: d\nsame: *v\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\nold body\n";
    write_file(&dir, "tone.md", text.as_bytes());
    let o = run(memdir(&dir).args([
        "write",
        "tone",
        "--name",
        "Tone",
        "--type",
        "user",
        "--description",
        "d",
        "--body",
        "new body",
        "--replace",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let want = text
        .replace("updated: 2026-01-01", "updated: 2026-04-14")
        .replace("old body", "new body");
    assert_eq!(std::fs::read_to_string(dir.join("tone.md")).unwrap(), want);
}

// spec/architecture.md#nothing-outside-the-directory: a folder named like a memory or a
// day file, or a `timeline` that is a file, is reported by `check` (path named) instead
// of being skipped in silence or stopping the check; the good memory still loads.
#[test]
fn check_sees_folders_named_like_files_and_a_timeline_that_is_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    write_file(&dir, "good.md", GOOD.as_bytes());
    std::fs::create_dir_all(dir.join("user_role.md")).unwrap();
    std::fs::create_dir_all(dir.join("timeline/2026-01-01.jsonl")).unwrap();
    let o = run(memdir(&dir).arg("check"));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = format!("{}{}", stdout(&o), stderr(&o));
    for path in ["user_role.md", "timeline/2026-01-01.jsonl"] {
        assert!(
            out.lines()
                .any(|l| l.contains(path) && l.contains("not a regular file")),
            "{path} not reported:\n{out}"
        );
    }
    let o = run(memdir(&dir).args(["read", "good"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    std::fs::remove_dir_all(dir.join("timeline")).unwrap();
    std::fs::write(dir.join("timeline"), b"not a folder").unwrap();
    let o = run(memdir(&dir).arg("check"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        out.lines()
            .any(|l| l.contains("timeline") && l.contains("not a folder")),
        "{out}"
    );
    assert!(
        out.contains("user_role.md"),
        "the rest was still checked:\n{out}"
    );
    // A note cannot go anywhere; it fails with the path and writes nothing.
    let o = run(memdir(&dir).args(["note", "seen"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("timeline"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(dir.join("timeline")).unwrap(),
        b"not a folder"
    );
}

// ---------------------------------------------------------------------------
// Bounded inputs and derived files that cannot block (issue 31, items 4 and 5).
// spec/cli.md#inputs: a file named on the command line and standard input are read
// up to the limit and one byte more, and only a regular file is read where a file is
// expected. spec/architecture.md#search-index: a derived file that is not a regular
// file is treated as absent, never waited on and never removed.

/// What a bounded run of the binary gave: its output and whether it was killed (for
/// time or memory).
struct Bounded {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    killed: Option<&'static str>,
}

/// Runs `c` as a child, killing it after `secs` seconds or past 512 MiB of resident
/// memory, so that a hang or an unbounded read fails the test instead of the machine.
/// With `endless_stdin`, standard input is an endless stream of `x`.
fn run_bounded(c: &mut std::process::Command, secs: u64, endless_stdin: bool) -> Bounded {
    use std::io::{Read, Write};
    use std::process::Stdio;
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    if endless_stdin {
        c.stdin(Stdio::piped());
    }
    let mut child = c.spawn().expect("spawn memdir");
    let pid = child.id();
    if let Some(mut si) = child.stdin.take() {
        std::thread::spawn(move || {
            let chunk = vec![b'x'; 64 * 1024];
            while si.write_all(&chunk).is_ok() {}
        });
    }
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let ho = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = so.read_to_end(&mut s);
        s
    });
    let he = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = se.read_to_end(&mut s);
        s
    });
    let start = std::time::Instant::now();
    let mut killed = None;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for memdir") {
            break status;
        }
        let rss_kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0);
        if killed.is_none() && rss_kib > 512 * 1024 {
            killed = Some("memory");
        } else if killed.is_none() && start.elapsed().as_secs() >= secs {
            killed = Some("time");
        }
        if killed.is_some() {
            let _ = child.kill();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let code = status.code();
    Bounded {
        code,
        stdout: String::from_utf8_lossy(&ho.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&he.join().unwrap()).into_owned(),
        killed,
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

const WRITE_ARGS: [&str; 7] = [
    "write",
    "new_key",
    "--name",
    "N",
    "--type",
    "user",
    "--description",
];

/// Every command that reads a body or value from a file the user names, with FILE
/// standing for it.
fn file_inputs() -> Vec<Vec<&'static str>> {
    let mut write: Vec<&str> = WRITE_ARGS.to_vec();
    write.extend(["d", "--body-file", "FILE"]);
    vec![
        write,
        vec!["state", "set", "mood", "--value-file", "FILE"],
        vec![
            "session",
            "compact",
            "s1",
            "--key",
            "new_key",
            "--body-file",
            "FILE",
        ],
        vec!["import", "FILE"],
        vec!["prune", "--apply", "--plan-file", "FILE"],
    ]
}

/// A bounded run of `args` that was refused as an input must be: it ended by itself
/// (a kill means it `hung`), with exit 1, every one of `says` in its stderr, and
/// `dir` as it was (`before`).
fn assert_refused(
    b: &Bounded,
    args: &[&str],
    hung: &str,
    says: &[&str],
    dir: &Path,
    before: &[(String, Vec<u8>)],
) {
    assert_eq!(b.killed, None, "{args:?} {hung}");
    assert_eq!(b.code, Some(1), "{args:?}: {}", b.stderr);
    for s in says {
        assert!(b.stderr.contains(s), "{args:?}: {}", b.stderr);
    }
    assert_eq!(tree(dir), before, "{args:?} wrote something");
}

fn with_file<'a>(args: &[&'a str], file: &'a str) -> Vec<&'a str> {
    args.iter()
        .map(|a| if *a == "FILE" { file } else { a })
        .collect()
}

#[test]
fn a_fifo_named_as_an_input_file_is_refused_without_waiting() {
    let (tmp, dir) = example_copy();
    let fifo = tmp.path().join("body.fifo");
    mkfifo(&fifo);
    let before = tree(&dir);
    for args in file_inputs() {
        let b = run_bounded(
            memdir(&dir).args(with_file(&args, fifo.to_str().unwrap())),
            15,
            false,
        );
        let says = format!("{}: a FIFO, not a regular file", fifo.display());
        assert_refused(&b, &args, "hung on a FIFO", &[&says], &dir, &before);
    }
    assert!(is_fifo(&fifo));
}

#[test]
fn a_device_named_as_an_input_file_is_refused_without_reading_it() {
    let (_tmp, dir) = example_copy();
    let before = tree(&dir);
    for args in file_inputs() {
        let b = run_bounded(memdir(&dir).args(with_file(&args, "/dev/zero")), 15, false);
        let says = "/dev/zero: a character device, not a regular file";
        assert_refused(&b, &args, "read /dev/zero", &[says], &dir, &before);
    }
}

#[test]
fn an_input_file_over_the_limit_is_refused_before_it_is_read() {
    let (tmp, dir) = example_copy();
    // 4 GiB, sparse: costs no disk, and reading it whole would pass the 512 MiB
    // of memory `run_bounded` allows.
    let big = tmp.path().join("big.md");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    // An import takes a blob of up to 256 MiB: its file is one byte more, sparse too.
    let huge = tmp.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len((256 << 20) + 1)
        .unwrap();
    let before = tree(&dir);
    for args in file_inputs() {
        let file = if args[0] == "import" { &huge } else { &big };
        let size = std::fs::metadata(file).unwrap().len();
        let b = run_bounded(
            memdir(&dir).args(with_file(&args, file.to_str().unwrap())),
            15,
            false,
        );
        let says = format!("{}: {size} bytes is over the limit of ", file.display());
        let why = "read the file before the size check";
        assert_refused(&b, &args, why, &[&says], &dir, &before);
    }
    // The body's limit is the one a write takes (1 MiB).
    let mut write: Vec<&str> = WRITE_ARGS.to_vec();
    write.extend(["d", "--body-file", big.to_str().unwrap()]);
    let b = run_bounded(memdir(&dir).args(&write), 15, false);
    assert!(
        b.stderr.contains("over the limit of 1048576 bytes"),
        "{}",
        b.stderr
    );
}

#[test]
fn endless_standard_input_is_refused_at_the_limit() {
    let (_tmp, dir) = example_copy();
    let before = tree(&dir);
    let mut write: Vec<&str> = WRITE_ARGS.to_vec();
    write.push("d");
    // (`import -` reads the same way, up to the 256 MiB of a blob: too much memory
    // for a test.)
    for args in [write, vec!["state", "set", "mood"]] {
        let b = run_bounded(memdir(&dir).args(&args), 15, true);
        let says = ["<stdin>: more than ", " bytes, over the limit"];
        let why = "read standard input without end";
        assert_refused(&b, &args, why, &says, &dir, &before);
    }
}

#[test]
fn an_input_at_the_limit_is_still_read() {
    let (tmp, dir) = example_copy();
    let body = tmp.path().join("body.md");
    std::fs::write(&body, "x".repeat(1024 * 1024)).unwrap();
    let mut write: Vec<&str> = WRITE_ARGS.to_vec();
    write.extend(["d", "--body-file", body.to_str().unwrap()]);
    let b = run_bounded(memdir(&dir).args(&write), 30, false);
    assert_eq!(b.code, Some(0), "{}", b.stderr);
    assert!(
        std::fs::read_to_string(dir.join("new_key.md"))
            .unwrap()
            .contains(&"x".repeat(1024 * 1024))
    );
}

#[test]
fn import_of_a_folder_reads_only_regular_files() {
    let (tmp, dir) = example_copy();
    let src = tmp.path().join("claude");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("user_x.md"),
        "---\nname: X\ndescription: d\ntype: user\n---\n\nbody\n",
    )
    .unwrap();
    mkfifo(&src.join("pipe.md"));
    let b = run_bounded(
        memdir(&dir).args(["import", src.to_str().unwrap(), "--dry-run"]),
        15,
        false,
    );
    assert_eq!(b.killed, None, "import waited on a FIFO in the folder");
    assert_eq!(b.code, Some(0), "{}", b.stderr);
    assert!(b.stdout.contains("user_x"), "{}", b.stdout);
}

/// The derived files a FIFO is planted at, relative to the memory directory.
const DERIVED: [&str; 5] = [
    ".memdir/cache/access.jsonl",
    ".memdir/cache/index-v2.bin",
    ".memdir/cache/index-v2.delta.bin",
    ".memdir/cache/postings-v1.bin",
    ".memdir/cache/vectors-0123456789abcdef.bin",
];

/// The commands that read (or append to) the derived files.
fn derived_readers() -> Vec<Vec<&'static str>> {
    vec![
        vec!["read", "user_role"],
        vec!["recall", "football"],
        vec!["context", "--max-tokens", "400"],
        vec!["list"],
        vec![
            "write",
            "new_key",
            "--name",
            "N",
            "--type",
            "user",
            "--description",
            "d",
            "--body",
            "hello",
        ],
    ]
}

#[test]
fn a_fifo_at_a_derived_path_is_not_waited_on() {
    for rel in DERIVED {
        // Twin directories, warmed the same way (the search index and its delta
        // written), one with a FIFO at `rel`: each command answers in time on both,
        // with the same output.
        let (_t1, plain) = example_copy();
        let (_t2, fifoed) = example_copy();
        for d in [&plain, &fifoed] {
            for args in [vec!["list"], vec!["note", "warm", "a=b"], vec!["list"]] {
                let o = run(memdir(d).args(&args));
                assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            }
        }
        let path = fifoed.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        mkfifo(&path);
        for args in derived_readers() {
            let want = run_bounded(memdir(&plain).args(&args), 30, false);
            assert_eq!(want.code, Some(0), "{args:?}: {}", want.stderr);
            let got = run_bounded(memdir(&fifoed).args(&args), 15, false);
            assert_eq!(got.killed, None, "{args:?} blocked on a FIFO at {rel}");
            assert_eq!(
                got.code,
                Some(0),
                "{args:?} with a FIFO at {rel}: {}",
                got.stderr
            );
            assert_eq!(got.stdout, want.stdout, "{args:?} with a FIFO at {rel}");
            assert!(is_fifo(&path), "{args:?} removed the FIFO at {rel}");
        }
        assert_eq!(tree(&fifoed), tree(&plain), "with a FIFO at {rel}");
    }
}
