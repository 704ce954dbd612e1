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

// spec/cli.md#import: a file name that could address a path outside the directory is
// skipped and reported; the rest of the blob imports and nothing lands outside.
#[test]
fn a_blob_naming_a_path_outside_imports_the_rest_and_nothing_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    write_file(&dir, "good.md", GOOD.as_bytes());
    for name in [
        "../../etc/passwd",
        "../escape.md",
        ".memdir.md",
        "a\\\\b.md",
        "..md",
    ] {
        let blob = format!(
            r#"{{"version":"memory/0.1","files":{{"fine.md":"---\nname: f\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n","{name}":"---\nname: x\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n"}},"timeline":[{{"ts":"2026-01-01T00:00:00Z","type":"a"}}]}}"#
        );
        let p = tmp.path().join("blob.json");
        std::fs::write(&p, blob).unwrap();
        let o = run(memdir(&dir).arg("import").arg(&p));
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("unsafe file name"),
            "{name}: {}",
            stdout(&o)
        );
        let mut files: Vec<String> = tree(&dir)
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| p.ends_with(".md") && !p.contains('/'))
            .collect();
        files.sort();
        assert_eq!(files, vec!["MEMORY.md", "fine.md", "good.md"], "{name}");
    }
    assert!(!tmp.path().join("escape.md").exists());
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n == "m" || n == "blob.json"),
        "{names:?}"
    );
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
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let want = text
        .replace("updated: 2026-01-01", "updated: 2026-04-14")
        .replace("old body", "new body");
    assert_eq!(std::fs::read_to_string(dir.join("tone.md")).unwrap(), want);
}
