//! Issue 31's hardening items, each pinned through the binary: `write` never replaces
//! silently (create-only by default, `--replace`, `--expect HASH`, empty stdin
//! refused), and two processes creating one key race without loss.

use std::process::Stdio;

use serde_json::Value;

use crate::common::*;

/// `memdir write KEY` with a body, on `dir`, plus `extra` arguments.
fn write_cmd(
    dir: &std::path::Path,
    key: &str,
    body: &str,
    extra: &[&str],
) -> std::process::Command {
    let mut c = memdir(dir);
    c.args(["write", key, "--name", "N", "--type", "project"])
        .args(["--description", "d", "--body", body])
        .args(extra);
    c
}

fn new_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let o = run(memdir(&dir).arg("init"));
    assert!(o.status.success(), "{}", stderr(&o));
    (tmp, dir)
}

fn hash_of(dir: &std::path::Path, key: &str) -> String {
    let o = run(memdir(dir).args(["--json", "read", key]));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let h = v["hash"]
        .as_str()
        .expect("read --json gives a hash")
        .to_string();
    assert_eq!(h.len(), 64, "{h}");
    assert!(
        h.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    h
}

#[test]
fn write_refuses_an_existing_key_unless_replace_or_the_current_hash() {
    // spec/cli.md#write
    let (_tmp, dir) = new_store();
    let o = run(&mut write_cmd(&dir, "project_x", "first", &[]));
    assert_eq!(stdout(&o), "created project_x\n", "{}", stderr(&o));
    let before = tree(&dir);
    // The same content again replaces nothing: a retry says unchanged.
    let o = run(&mut write_cmd(&dir, "project_x", "first", &[]));
    assert_eq!(stdout(&o), "unchanged project_x\n", "{}", stderr(&o));

    let o = run(&mut write_cmd(&dir, "project_x", "second", &[]));
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("`project_x` already exists"), "{err}");
    assert!(
        err.contains("--replace") && err.contains("--expect HASH"),
        "{err}"
    );
    assert_eq!(tree(&dir), before, "a refused write changed the store");

    let h1 = hash_of(&dir, "project_x");
    // A stale or unknown hash is refused and changes nothing.
    let o = run(&mut write_cmd(
        &dir,
        "project_x",
        "second",
        &["--expect", &"0".repeat(64)],
    ));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("its hash is {h1}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&dir), before);
    // The current hash (any case) replaces it.
    let o = run(&mut write_cmd(
        &dir,
        "project_x",
        "second",
        &["--expect", &h1.to_uppercase()],
    ));
    assert_eq!(stdout(&o), "updated project_x\n", "{}", stderr(&o));
    let h2 = hash_of(&dir, "project_x");
    assert_ne!(h1, h2);
    // The hash read before that write is now stale.
    let o = run(&mut write_cmd(
        &dir,
        "project_x",
        "third",
        &["--expect", &h1],
    ));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not the version expected"),
        "{}",
        stderr(&o)
    );
    // --expect names a version: on a key with no memory it is refused.
    let o = run(&mut write_cmd(&dir, "project_y", "y", &["--expect", &h1]));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("there is no such memory"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("project_y.md").exists());
    // --replace replaces.
    let o = run(&mut write_cmd(&dir, "project_x", "third", &["--replace"]));
    assert_eq!(stdout(&o), "updated project_x\n", "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("project_x.md")).unwrap();
    assert!(text.ends_with("third\n"), "{text}");
    // Both flags at once is a usage error.
    let o = run(&mut write_cmd(
        &dir,
        "project_x",
        "4",
        &["--replace", "--expect", &h2],
    ));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn write_refuses_an_empty_body_from_stdin_unless_allowed() {
    // spec/cli.md#write
    let (_tmp, dir) = new_store();
    let before = tree(&dir);
    let args = [
        "write",
        "project_e",
        "--name",
        "E",
        "--type",
        "project",
        "--description",
        "d",
    ];
    for stdin in ["", "\n  \n"] {
        let mut c = memdir(&dir);
        c.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{:?}: {}", stdin, stdout(&o));
        assert!(stderr(&o).contains("--allow-empty"), "{}", stderr(&o));
        assert_eq!(tree(&dir), before);
    }
    // stdin is /dev/null in `memdir()`: empty.
    let o = run(memdir(&dir).args(args).arg("--allow-empty"));
    assert_eq!(stdout(&o), "created project_e\n", "{}", stderr(&o));
}

#[test]
fn two_processes_creating_one_key_never_both_succeed() {
    // spec/cli.md#write: create-only is checked under the store's lock.
    let (_tmp, dir) = new_store();
    for round in 0..50 {
        let key = format!("project_r{round}");
        let mut a = write_cmd(&dir, &key, "from a", &[]);
        let mut b = write_cmd(&dir, &key, "from b", &[]);
        let ca = a
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let cb = b
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (oa, ob) = (
            ca.wait_with_output().unwrap(),
            cb.wait_with_output().unwrap(),
        );
        let won: Vec<&std::process::Output> = [&oa, &ob]
            .into_iter()
            .filter(|o| o.status.success())
            .collect();
        assert_eq!(won.len(), 1, "round {round}: {} succeeded", won.len());
        let lost = if oa.status.success() { &ob } else { &oa };
        assert_eq!(lost.status.code(), Some(1), "round {round}");
        assert!(
            stderr(lost).contains("already exists"),
            "round {round}: {}",
            stderr(lost)
        );
        let body = if std::ptr::eq(won[0], &oa) {
            "from a"
        } else {
            "from b"
        };
        let text = std::fs::read_to_string(dir.join(format!("{key}.md"))).unwrap();
        assert!(
            text.ends_with(&format!("{body}\n")),
            "round {round}: the winner's body is lost: {text}"
        );
    }
    let o = run(memdir(&dir).args(["--json", "list"]));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["memories"].as_array().unwrap().len(), 50);
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert_eq!(index.matches("project_r").count(), 50, "{index}");
}

/// Runs `memdir` with `args` (no `--dir` added) from `cwd`, HOME set to `home`.
fn memdir_in(cwd: &std::path::Path, home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(bin());
    c.args(args)
        .current_dir(cwd)
        .env_remove("MEMDIR_DIR")
        .env("HOME", home)
        .env("MEMDIR_NOW", NOW)
        .stdin(Stdio::null());
    run(&mut c)
}

#[test]
fn a_missing_dir_is_created_only_by_init_or_create() {
    // spec/cli.md#the-memory-directory
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memroy");
    let body = tmp.path().join("body.md");
    std::fs::write(&body, "b").unwrap();
    let body = body.to_str().unwrap();
    let write = [
        "write",
        "k",
        "--name",
        "N",
        "--type",
        "user",
        "--description",
        "d",
        "--body",
        "b",
    ];
    let cases: Vec<Vec<&str>> = vec![
        write.to_vec(),
        vec!["note", "user_said", "text=hi"],
        vec!["state", "set", "mood", "calm"],
        vec!["import", body, "--from", "claude-code"],
        vec!["list"],
        vec!["recall", "x"],
        vec!["context"],
        vec!["read", "k"],
        vec!["forget", "k"],
        vec!["index"],
        vec!["check", "--fix"],
        vec!["sessions"],
        vec!["timeline"],
        vec![
            "session",
            "compact",
            "s1",
            "--key",
            "project_s",
            "--body",
            "x",
        ],
        vec!["mcp"],
    ];
    for args in &cases {
        let o = run(memdir(&dir).args(args));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{args:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "memory directory {} does not exist",
                dir.display()
            )),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("memdir init --dir") && err.contains("--create"),
            "{args:?}: {err}"
        );
        assert!(!dir.exists(), "{args:?} created the directory");
    }
    // --create (anywhere on the line) creates it, as init does.
    let o = run(memdir(&dir).args(write).arg("--create"));
    assert_eq!(stdout(&o), "created k\n", "{}", stderr(&o));
    assert!(dir.join("MEMORY.md").is_file() && dir.join("k.md").is_file());
    let other = tmp.path().join("other");
    let o = run(memdir(&other).args(["--create", "list"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(other.join("MEMORY.md").is_file());
    // init creates it.
    let third = tmp.path().join("third");
    assert!(run(memdir(&third).arg("init")).status.success());
    assert!(third.join("MEMORY.md").is_file());
}

#[test]
fn a_leading_tilde_in_dir_is_home_and_tilde_user_is_refused() {
    // spec/cli.md#the-memory-directory
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let cwd = tmp.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let o = memdir_in(&cwd, &home, &["--dir", "~/agent/memory", "init"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(home.join("agent/memory/MEMORY.md").is_file());
    assert!(!cwd.join("~").exists(), "a literal ./~ was created");
    let o = memdir_in(&cwd, &home, &["--dir=~/agent/memory", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // MEMDIR_DIR is the same value.
    let mut c = std::process::Command::new(bin());
    c.args([
        "write",
        "k",
        "--name",
        "N",
        "--type",
        "user",
        "--description",
        "d",
        "--body",
        "b",
    ])
    .current_dir(&cwd)
    .env("MEMDIR_DIR", "~/agent/memory")
    .env("HOME", &home)
    .env("MEMDIR_NOW", NOW)
    .stdin(Stdio::null());
    let o = run(&mut c);
    assert_eq!(stdout(&o), "created k\n", "{}", stderr(&o));
    assert!(home.join("agent/memory/k.md").is_file());
    // `~user` is not looked up: a usage error with a hint, nothing created.
    let o = memdir_in(&cwd, &home, &["--dir", "~bob/memory", "init"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not `~user`; give the full path"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);
}

#[test]
fn mcp_says_which_directory_it_serves_and_does_not_create_one() {
    // spec/mcp.md#running
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("work");
    std::fs::create_dir_all(cwd.join("mem")).unwrap();
    assert!(
        memdir_in(&cwd, tmp.path(), &["--dir", "mem", "init"])
            .status
            .success()
    );
    // stdin is /dev/null: the server starts, says where it serves, and ends.
    let o = memdir_in(&cwd, tmp.path(), &["--dir", "mem", "mcp"]);
    let err = stderr(&o);
    let abs = cwd.join("mem");
    assert!(
        err.contains(&format!("memdir mcp: serving {} over stdio", abs.display())),
        "{err}"
    );
    // A mistyped directory: refused, nothing created; --create creates it.
    let o = memdir_in(&cwd, tmp.path(), &["--dir", "memroy", "mcp"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!cwd.join("memroy").exists());
    let o = memdir_in(&cwd, tmp.path(), &["--dir", "memroy", "mcp", "--create"]);
    assert!(cwd.join("memroy/MEMORY.md").is_file(), "{}", stderr(&o));
}

/// A store with a read-only state entry (`state_locked`) and a read-only memory
/// (`user_pinned`), as a person would mark them.
fn read_only_store() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = new_store();
    std::fs::write(
        dir.join("state_locked.md"),
        "---\nname: locked\ndescription: agent state locked\ntype: state\ncreated: 2026-04-01\nupdated: 2026-04-01\nread_only: true\n---\n\nset by a person\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("user_pinned.md"),
        "---\nname: Pinned\ndescription: the person's own words\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\nvalid_until: 2026-04-02\nread_only: true\n---\n\nDo not change.\n",
    )
    .unwrap();
    assert!(run(memdir(&dir).arg("index")).status.success());
    (tmp, dir)
}

#[test]
fn a_read_only_memory_is_refused_by_every_cli_writing_path() {
    // spec/memory-format.md: `read_only`
    let (_tmp, dir) = read_only_store();
    let before = tree(&dir);
    let wr = |key: &str| {
        vec![
            "write".to_string(),
            key.into(),
            "--name".into(),
            "N".into(),
            "--type".into(),
            "state".into(),
            "--description".into(),
            "d".into(),
            "--body".into(),
            "agent".into(),
            "--replace".into(),
        ]
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (wr("state_locked"), "state `locked` is read-only"),
        (wr("user_pinned"), "memory `user_pinned` is read-only"),
        (
            s(&["edit", "state_locked", "--append", "more"]),
            "state `locked` is read-only",
        ),
        (
            s(&["edit", "user_pinned", "--name", "Other"]),
            "memory `user_pinned` is read-only",
        ),
        (
            s(&["forget", "state_locked"]),
            "state `locked` is read-only",
        ),
        (
            s(&["forget", "user_pinned"]),
            "memory `user_pinned` is read-only",
        ),
        (
            s(&["rename", "state_locked", "state_free"]),
            "state `locked` is read-only",
        ),
        (
            s(&["rename", "user_pinned", "user_other"]),
            "memory `user_pinned` is read-only",
        ),
        (
            s(&["link", "user_pinned", "knows", "state_locked"]),
            "memory `user_pinned` is read-only",
        ),
        (
            s(&["state", "set", "locked", "agent"]),
            "state `locked` is read-only",
        ),
        (
            s(&["state", "unset", "locked"]),
            "state `locked` is read-only",
        ),
    ];
    for (args, want) in &cases {
        let o = run(memdir(&dir).args(args));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{args:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        let err = stderr(&o);
        assert!(
            err.contains(want) && err.contains("nothing was changed"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("edit ") && err.contains("by hand"),
            "{args:?}: {err}"
        );
        assert_eq!(tree(&dir), before, "{args:?} changed the store");
    }
    // prune never offers it (it is expired), and --apply leaves it.
    let o = run(memdir(&dir).args(["prune", "--apply"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("user_pinned.md").is_file(), "{}", stdout(&o));
    // A person removes the mark by editing the file; then the agent may change it.
    let text = std::fs::read_to_string(dir.join("user_pinned.md")).unwrap();
    std::fs::write(
        dir.join("user_pinned.md"),
        text.replace("read_only: true\n", ""),
    )
    .unwrap();
    let o = run(memdir(&dir).args(["edit", "user_pinned", "--name", "Other"]));
    assert_eq!(stdout(&o), "updated user_pinned\n", "{}", stderr(&o));
}

/// Every byte below 0x20 in `out` but a newline or a tab, and DEL.
fn control_bytes(out: &[u8]) -> Vec<u8> {
    out.iter()
        .copied()
        .filter(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f)
        .collect()
}

#[test]
fn control_characters_from_files_never_reach_the_terminal() {
    // spec/cli.md#output
    let (tmp, dir) = new_store();
    // Names, descriptions, tags, link relations and session ids with ESC, BEL, CR,
    // DEL and newlines, as a hostile file or remote would hold them.
    let evil = r#"Evil\e[31m\a\x7f\r\nforged line"#;
    std::fs::write(
        dir.join("user_evil.md"),
        format!(
            "---\nname: \"{evil}\"\ndescription: \"desc \\e]0;title\\a\\nforged\"\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\ntags: [\"t\\eag\"]\n---\n\nBody with an escape \u{1b}[2J here.\n- kn\u{1b}ows:: [[user_other]]\n- likes:: tea\u{7}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("user_other.md"),
        "---\nname: \"Other\\nforged\"\ndescription: plain\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\nread_only: true\nvalid_until: 2026-04-02\n---\n\nevil too\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("state_mood.md"),
        "---\nname: mood\ndescription: agent state mood\ntype: state\ncreated: 2026-04-01\nupdated: 2026-04-01\n---\n\ncalm\u{1b}[5m\n",
    )
    .unwrap();
    let session = "s1\u{1b}[2J\nforged  2026-04-14 .. x  9 events  y";
    let ev = |i: u32| {
        serde_json::json!({"ts": format!("2026-04-14T10:0{i}:00.000Z"), "type": "user_said\u{7}", "session": session, "text": "hi\u{1b}[1m\u{7f}"})
            .to_string()
    };
    std::fs::write(
        dir.join("timeline/2026-04-14.jsonl"),
        format!("{}\n{}\n", ev(0), ev(1)),
    )
    .unwrap();
    let import = tmp.path().join("memory.jsonl");
    std::fs::write(
        &import,
        "{\"type\":\"entity\",\"name\":\"Bad\\u001b[31m\\nforged\",\"entityType\":\"per\\u0007son\",\"observations\":[\"o\\u001b\"]}\n{\"type\":\"relation\",\"from\":\"Bad\\u001b[31m\\nforged\",\"to\":\"Nobody\\u001b\\nx\",\"relationType\":\"kn\\u0007ows\"}\n",
    )
    .unwrap();
    let imp = import.to_str().unwrap();
    let cases: Vec<(Vec<&str>, Option<usize>)> = vec![
        (vec!["list"], Some(3)),
        (vec!["list", "--include-expired"], Some(4)),
        (vec!["recall", "evil"], Some(1)),
        (vec!["graph", "user_evil"], None),
        (vec!["sessions"], Some(1)),
        (vec!["session", "show", session], None),
        (vec!["facts"], None),
        (vec!["state", "list"], Some(1)),
        (vec!["state", "get", "mood"], Some(1)),
        (vec!["read", "user_evil"], None),
        (vec!["context"], None),
        (vec!["timeline"], Some(2)),
        (vec!["check"], None),
        (vec!["prune", "--plan"], None),
        (vec!["consolidate", "--plan"], None),
        (
            vec!["import", imp, "--from", "mcp-memory", "--dry-run"],
            None,
        ),
        (vec!["import", imp, "--from", "mcp-memory"], None),
        (vec!["--json", "list"], None),
        (vec!["--json", "read", "user_evil"], None),
        (vec!["--json", "sessions"], None),
    ];
    for (args, lines) in &cases {
        let o = run(memdir(&dir).args(args));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        if args[0] == "timeline" {
            for l in stdout(&o).lines() {
                let _: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            }
        }
        for (what, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let bad = control_bytes(bytes);
            assert!(
                bad.is_empty(),
                "{args:?}: {what} carries control bytes {bad:?}:\n{}",
                String::from_utf8_lossy(bytes)
            );
        }
        if let Some(n) = lines {
            let got = stdout(&o).lines().count();
            assert_eq!(
                got,
                *n,
                "{args:?}: a planted newline forged a line:\n{}",
                stdout(&o)
            );
        }
        if args[0] == "--json" {
            let _: Value = serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", stdout(&o)));
        }
    }
    // The escapes show what was there.
    let o = run(memdir(&dir).arg("sessions"));
    assert!(
        stdout(&o).contains(r"s1\u{1b}[2J\nforged"),
        "{}",
        stdout(&o)
    );
}
