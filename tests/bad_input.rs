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
