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

/// A store of three memories with `[embeddings]` at the loopback stand-in, and no
/// search index yet.
#[cfg(feature = "sync")]
fn embedding_store() -> (tempfile::TempDir, std::path::PathBuf, crate::embed::Server) {
    let (tmp, dir) = store();
    for k in ["coffee", "tea", "football"] {
        let o = run(memdir(&dir).args([
            "write",
            k,
            "--name",
            k,
            "--type",
            "user",
            "--description",
            k,
            "--body",
            k,
        ]));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let _ = std::fs::remove_file(dir.join(".memdir/cache/index-v2.bin"));
    let _ = std::fs::remove_file(dir.join(".memdir/cache/index-v2.delta.bin"));
    let server = crate::embed::serve(crate::embed::Behaviour::Good);
    crate::embed::configure(&dir, &server.url, "");
    (tmp, dir, server)
}

#[cfg(feature = "sync")]
#[test]
fn no_progress_is_drawn_when_stderr_is_not_a_terminal() {
    // The embedding bar draws from the first batch on a terminal (the next test); in
    // captured stderr there is nothing.
    let (_tmp, dir, _server) = embedding_store();
    let o = run(memdir(&dir).args(["index", "--search", "--embeddings"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("embeddings: 3 memories, 3 embedded now"),
        "{}",
        stdout(&o)
    );
    assert_eq!(stderr(&o), "");
    let _ = std::fs::remove_file(dir.join(".memdir/cache/index-v2.bin"));
    let o = run(memdir(&dir).args(["recall", "football"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

/// Runs memdir with stderr on a pseudo-terminal and returns what it drew there.
#[cfg(all(feature = "sync", target_os = "linux"))]
fn stderr_on_a_terminal(mut c: std::process::Command) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the integers it is given; the
    // other arguments may be null.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    let (master, slave) = unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::process::Stdio::from(std::fs::File::from_raw_fd(slave)),
        )
    };
    let mut child = c
        .stdout(std::process::Stdio::null())
        .stderr(slave)
        .spawn()
        .unwrap();
    // The child holds the only other end once the command is gone: reading ends
    // (EIO) when it exits.
    drop(c);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = (&master).take(1 << 20).read_to_end(&mut all);
        let _ = tx.send(all);
    });
    let status = child.wait().unwrap();
    let drawn = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the terminal's other end closes when memdir exits");
    (status, String::from_utf8_lossy(&drawn).into_owned())
}

#[cfg(all(feature = "sync", target_os = "linux"))]
#[test]
fn the_embedding_bar_is_drawn_on_a_terminal_and_not_under_quiet() {
    let (_tmp, dir, _server) = embedding_store();
    let (status, drawn) = {
        let mut c = memdir(&dir);
        c.args(["index", "--embeddings"]);
        stderr_on_a_terminal(c)
    };
    assert!(status.success(), "{drawn}");
    assert!(drawn.contains("embedding"), "{drawn:?}");
    assert!(drawn.contains("3/3"), "{drawn:?}");
    let (_tmp, dir, _server) = embedding_store();
    let (status, drawn) = {
        let mut c = memdir(&dir);
        c.args(["-q", "index", "--embeddings"]);
        stderr_on_a_terminal(c)
    };
    assert!(status.success(), "{drawn}");
    assert_eq!(drawn, "");
}
