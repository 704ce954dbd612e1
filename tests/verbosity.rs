//! `-q` and `-v` (spec/cli.md#verbosity): `-q` leaves stderr empty on success and
//! keeps warnings and errors; `-v` says which directory and configuration are used
//! and how long the phases took; progress is drawn only on a terminal.

use crate::common::*;

fn store() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    assert!(run(memdir(&dir).arg("init")).status.success());
    for t in ["a", "b", "c"] {
        assert!(
            run(memdir(&dir).args(["note", "said", &format!("text={t}")]))
                .status
                .success()
        );
    }
    (tmp, dir)
}

#[test]
fn quiet_leaves_stderr_empty_on_success_and_keeps_the_result() {
    let (_tmp, dir) = store();
    // Without -q, timeline says on stderr that older events are not shown.
    let loud = run(memdir(&dir).args(["timeline", "--limit", "1"]));
    assert!(loud.status.success());
    assert!(
        stderr(&loud).contains("older events not shown"),
        "{}",
        stderr(&loud)
    );
    for args in [
        &["-q", "timeline", "--limit", "1"][..],
        &["timeline", "--limit", "1", "--quiet"][..],
    ] {
        let quiet = run(memdir(&dir).args(args));
        assert!(quiet.status.success(), "{args:?}");
        assert_eq!(stderr(&quiet), "", "{args:?}");
        assert_eq!(stdout(&quiet), stdout(&loud), "{args:?}");
    }
}

#[test]
fn quiet_keeps_errors_and_warnings() {
    let (_tmp, dir) = store();
    let o = run(memdir(&dir).args(["-q", "read", "nobody"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    assert!(stderr(&o).contains("hint: "), "{}", stderr(&o));
    // A malformed memory file is a warning on every load, -q or not.
    std::fs::write(dir.join("broken.md"), "---\nname: [unclosed\n---\nx\n").unwrap();
    let o = run(memdir(&dir).args(["-q", "list"]));
    assert!(stderr(&o).contains("broken.md"), "{}", stderr(&o));
}

#[test]
fn verbose_says_where_and_how_long() {
    let (_tmp, dir) = store();
    let o = run(memdir(&dir).args(["-v", "index", "--search"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "memdir: directory {} (a memory directory)",
            dir.display()
        )),
        "{err}"
    );
    assert!(err.contains("memdir: config "), "{err}");
    assert!(err.contains("(absent: the defaults)"), "{err}");
    for phase in [
        "memdir: MEMORY.md: ",
        "memdir: search index: ",
        "memdir: exit 0 after ",
    ] {
        assert!(err.contains(phase), "{phase}: {err}");
    }
    // The result on stdout is the same as without -v.
    let plain = run(memdir(&dir).args(["index", "--search"]));
    assert_eq!(stdout(&o), stdout(&plain));
    assert_eq!(stderr(&plain), "");
    let both = run(memdir(&dir).args(["-q", "-v", "list"]));
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
}

#[cfg(feature = "sync")]
#[test]
fn a_quiet_push_prints_only_the_root() {
    let (tmp, dir) = store();
    let remote = tmp.path().join("remote");
    std::fs::create_dir(&remote).unwrap();
    let push = |q: bool| {
        let mut c = memdir(&dir);
        if q {
            c.arg("-q");
        }
        c.args(["push", "--provider", "folder"])
            .env("MEMDIR_FOLDER", &remote);
        run(&mut c)
    };
    let o = push(true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert!(stdout(&o).trim().starts_with("baf"), "{}", stdout(&o));
    // Not a terminal: no progress bar either way, only the summary note without -q.
    let o = push(false);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("already holds this version"), "{err}");
    assert!(!err.contains('\r') && !err.contains("\u{1b}["), "{err:?}");
}
