//! Issue 31 item 7: a `.memdir/config.toml` that does not parse (a stray line, a
//! duplicate table, an integer over i64) never silently turns hybrid ranking or sync
//! off. Every command that reads the file names it with the line and says what it
//! did instead, by class (spec/cli.md#configuration-errors): ranking falls back to
//! keywords with a warning, `index --embeddings` and the sync commands refuse with
//! nothing changed, `doctor` fails its config check, and `memdir mcp` serves with a
//! warning that says what it serves without. Commands that do not read it (`list`)
//! answer as they would without it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::*;

/// Each bad file, with the line its error is on. Each holds an `[embeddings]` table
/// (so hybrid would be on) and a sync mode.
const BAD: [(&str, usize); 3] = [
    (
        "mode = \"ipfs\"\nstray line\n[embeddings]\nurl = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
        2,
    ),
    (
        "mode = \"ipfs\"\n[embeddings]\nurl = \"http://127.0.0.1:9/v1\"\n[embeddings]\nmodel = \"m\"\n",
        4,
    ),
    (
        "keep_versions = 99999999999999999999\nmode = \"ipfs\"\n[embeddings]\nurl = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
        1,
    ),
];

/// A store with two memories, its index built, and `config` as its config.toml.
fn store(config: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    assert!(run(memdir(&dir).arg("init")).status.success());
    for (k, body) in [
        ("pitch", "Plays 5-a-side football."),
        ("team", "Argentina fan."),
    ] {
        let o = run(memdir(&dir).args([
            "write",
            k,
            "--name",
            k,
            "--type",
            "user",
            "--description",
            "d",
            "--body",
            body,
        ]));
        assert!(o.status.success(), "{}", stderr(&o));
    }
    std::fs::write(dir.join(".memdir/config.toml"), config).unwrap();
    (tmp, dir)
}

/// Every file under `dir` with its bytes, dot entries included.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        // The search index is derived data any read may refresh.
        .filter(|e| !e.path().to_string_lossy().contains(".memdir/cache"))
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn names_line(text: &str, line: usize) -> bool {
    text.contains(&format!(".memdir/config.toml:{line}: "))
}

// Ranking: keyword ranking, a warning naming the file and line, exit 0.
#[test]
fn ranking_falls_back_to_keywords_and_names_the_line() {
    for (config, line) in BAD {
        let (_tmp, dir) = store(config);
        for args in [
            &["recall", "football"][..],
            &["context", "--query", "football"][..],
        ] {
            let o = run(memdir(&dir).args(args));
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(names_line(&err, line), "{args:?} {config:?}: {err}");
            assert!(err.contains("keyword ranking used"), "{args:?}: {err}");
            assert!(stdout(&o).contains("pitch"), "{args:?}: {}", stdout(&o));
            let mut json = vec!["--json"];
            json.extend_from_slice(args);
            let v: serde_json::Value =
                serde_json::from_str(&stdout(&run(memdir(&dir).args(&json)))).unwrap();
            assert_eq!(v["mode"], "keyword", "{v}");
            assert!(names_line(v["fallback"].as_str().unwrap(), line), "{v}");
        }
    }
}

// `list` does not read the configuration: the same output as without one.
#[test]
fn list_does_not_read_it() {
    let (_tmp, good) = store("");
    let want = stdout(&run(memdir(&good).arg("list")));
    for (config, _) in BAD {
        let (_tmp, dir) = store(config);
        let o = run(memdir(&dir).arg("list"));
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(stdout(&o), want);
        assert_eq!(stderr(&o), "");
    }
}

// `index --embeddings` and the sync commands refuse (exit 1), naming the file and
// line, with nothing changed.
#[test]
fn embeddings_and_sync_commands_refuse_and_change_nothing() {
    for (config, line) in BAD {
        let (tmp, dir) = store(config);
        let before = snapshot(&dir);
        for args in [
            &["index", "--embeddings"][..],
            &["status"][..],
            &["sync"][..],
            &["push"][..],
        ] {
            let o = run(memdir(&dir)
                .env("MEMDIR_FOLDER", tmp.path().join("remote"))
                .args(args));
            assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.starts_with("error: ") && names_line(&err, line),
                "{args:?} {config:?}: {err}"
            );
            assert_eq!(snapshot(&dir), before, "{args:?} changed the directory");
        }
        assert!(!tmp.path().join("remote").exists());
    }
}

// `doctor`: the config check fails with the line, and says the sync and embeddings
// checks were not made.
#[test]
fn doctor_fails_the_config_check_and_says_what_it_skipped() {
    for (config, line) in BAD {
        let (_tmp, dir) = store(config);
        let o = run(memdir(&dir).arg("doctor"));
        assert_eq!(o.status.code(), Some(1));
        let text = stdout(&o);
        let config_line = text
            .lines()
            .find(|l| l.starts_with("fail  config"))
            .unwrap();
        assert!(names_line(config_line, line), "{text}");
        assert!(
            text.contains("sync and embeddings not checked"),
            "{config:?}: {text}"
        );
    }
}

/// `memdir mcp` on `dir`, asked to recall and for the sync status: (stderr, the
/// recall result, the sync_status result).
fn mcp(dir: &Path) -> (String, serde_json::Value, serde_json::Value) {
    let mut child = memdir(dir)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"recall","arguments":{"query":"football"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sync_status","arguments":{}}}"#,
    ] {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let replies: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let reply = |id: u64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["result"].clone())
            .unwrap_or_else(|| panic!("no reply {id}: {replies:?}"))
    };
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        reply(2),
        reply(3),
    )
}

// `memdir mcp` starts, says on stderr which line is wrong and what it serves without
// (no sync: nothing is pushed; keyword ranking); its tools answer by their class.
#[test]
fn the_mcp_server_starts_and_says_what_it_falls_back_to() {
    for (config, line) in BAD {
        let (_tmp, dir) = store(config);
        let (err, recall, status) = mcp(&dir);
        let sync_line = err
            .lines()
            .find(|l| names_line(l, line) && !l.contains("embeddings"))
            .unwrap_or_else(|| panic!("{config:?}: no line about the file: {err}"));
        assert!(
            sync_line.contains("nothing is pushed"),
            "{config:?}: {sync_line}"
        );
        let sc = &recall["structuredContent"];
        assert_eq!(sc["mode"], "keyword", "{recall}");
        assert!(
            names_line(sc["fallback"].as_str().unwrap(), line),
            "{recall}"
        );
        assert_eq!(status["isError"], true, "{status}");
        let msg = status["structuredContent"]["error"]["message"]
            .as_str()
            .unwrap();
        assert!(names_line(msg, line), "{status}");
    }
}

// `memdir watch` keeps MEMORY.md rebuilt, and says that nothing is embedded until
// the file parses.
#[test]
fn watch_says_nothing_is_embedded_meanwhile() {
    use std::io::BufRead;
    let (config, line) = BAD[0];
    let (_tmp, dir) = store(config);
    let mut child = memdir(&dir)
        .arg("watch")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = Vec::new();
    let found = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if names_line(&l, line) => break Some(l),
            Ok(l) => seen.push(l),
            Err(_) => break None,
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let found = found.unwrap_or_else(|| panic!("no warning naming the line: {seen:?}"));
    assert!(found.contains("nothing is embedded"), "{found}");
}
