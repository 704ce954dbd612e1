//! Claude's memory tool through its three ways in (spec/memory-tool.md): one script of
//! commands gives byte-identical replies through the library call, `memdir
//! memory-tool` and the MCP tool `memory`, and leaves the same files; two processes
//! editing one memory at once lose no edit.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common::*;

/// The script: every command, its successes and its refusals, in an order that
/// builds on itself.
fn script() -> Vec<Value> {
    let c = |v: Value| v;
    vec![
        c(json!({"command": "view", "path": "/memories"})),
        c(
            json!({"command": "create", "path": "/memories/user_coffee.md", "file_text": "# Coffee\nLikes it black.\nNo sugar.\n"}),
        ),
        c(
            json!({"command": "create", "path": "/memories/progress.md", "file_text": "step one\nstep two\nsee [[user_coffee]]"}),
        ),
        c(json!({"command": "create", "path": "/memories/user_coffee.md", "file_text": "again"})),
        c(json!({"command": "create", "path": "/memories/notes.txt", "file_text": "x"})),
        c(json!({"command": "create", "path": "/memories/sub/a.md", "file_text": "x"})),
        c(
            json!({"command": "create", "path": "/memories/user_key.md", "file_text": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}),
        ),
        c(json!({"command": "view", "path": "/memories"})),
        c(json!({"command": "view", "path": "/memories/user_coffee.md"})),
        c(json!({"command": "view", "path": "/memories/progress.md", "view_range": [2, -1]})),
        c(json!({"command": "view", "path": "/memories/MEMORY.md"})),
        // A reply that ends with a newline: the lines picked are none.
        c(json!({"command": "view", "path": "/memories/progress.md", "view_range": [7, 9]})),
        c(json!({"command": "view", "path": "/memories/timeline"})),
        c(
            json!({"command": "str_replace", "path": "/memories/progress.md", "old_str": "step", "new_str": "x"}),
        ),
        c(
            json!({"command": "str_replace", "path": "/memories/progress.md", "old_str": "step three", "new_str": "x"}),
        ),
        c(
            json!({"command": "str_replace", "path": "/memories/progress.md", "old_str": "step two", "new_str": "step two: done"}),
        ),
        c(
            json!({"command": "insert", "path": "/memories/progress.md", "insert_line": 0, "insert_text": "# Progress\n"}),
        ),
        c(
            json!({"command": "insert", "path": "/memories/progress.md", "insert_line": 9, "insert_text": "x"}),
        ),
        c(json!({"command": "view", "path": "/memories/progress.md"})),
        c(
            json!({"command": "rename", "old_path": "/memories/user_coffee.md", "new_path": "/memories/progress.md"}),
        ),
        c(
            json!({"command": "rename", "old_path": "/memories/user_coffee.md", "new_path": "/memories/user_drinks.md"}),
        ),
        c(json!({"command": "delete", "path": "/memories"})),
        c(json!({"command": "delete", "path": "/memories/progress.md"})),
        c(json!({"command": "delete", "path": "/memories/progress.md"})),
        c(json!({"command": "view", "path": "/etc/passwd"})),
        c(json!({"command": "view", "path": "/memories/../etc/passwd"})),
        c(json!({"command": "launch"})),
        c(json!({"command": "view", "path": "/memories"})),
    ]
}

/// A reply: its text and whether it is an error.
type Reply = (String, bool);

fn through_library(dir: &Path) -> Vec<Reply> {
    let now = NOW.parse::<chrono::DateTime<chrono::Utc>>().unwrap();
    let mem = memdir::Memory::open(dir)
        .unwrap()
        .with_clock(memdir::Clock::fixed(now));
    mem.init().unwrap();
    script()
        .iter()
        .map(|c| {
            let r = mem.memory_tool(c);
            (r.text, r.is_error)
        })
        .collect()
}

/// Runs `memdir memory-tool` with `command` on standard input.
fn cli(dir: &Path, command: &Value) -> std::process::Output {
    let mut c = memdir(dir);
    c.arg("memory-tool")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(command.to_string().as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn through_cli(dir: &Path) -> Vec<Reply> {
    let o = run(memdir(dir).arg("init"));
    assert!(o.status.success(), "{}", stderr(&o));
    script()
        .iter()
        .map(|c| {
            let o = cli(dir, c);
            let code = o.status.code();
            assert!(code == Some(0) || code == Some(1), "{c}: {o:?}");
            let out = stdout(&o);
            // The reply and the newline a line of output ends with.
            let text = out.strip_suffix('\n').unwrap_or(&out).to_string();
            (text, code == Some(1))
        })
        .collect()
}

#[cfg(feature = "mcp")]
fn through_mcp(dir: &Path) -> Vec<Reply> {
    use crate::mcp::{Server, is_error, text};
    let mut s = Server::start(dir, &[]);
    s.initialize();
    script()
        .iter()
        .map(|c| {
            let r = s.call("memory", c.clone());
            assert_eq!(r["content"].as_array().map(Vec::len), Some(1), "{r}");
            (text(&r), is_error(&r))
        })
        .collect()
}

/// The files of a directory but `.memdir/` (caches and locks differ by process).
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(".memdir"))
        .collect()
}

#[test]
fn one_script_gives_the_same_replies_through_library_cli_and_mcp() {
    // spec/memory-tool.md: byte-identical replies for the same commands on the same
    // directory, and the same files afterwards.
    let tmp = tempfile::tempdir().unwrap();
    let lib_dir = tmp.path().join("lib");
    let cli_dir = tmp.path().join("cli");
    let lib = through_library(&lib_dir);
    let by_cli = through_cli(&cli_dir);
    let n = script().len();
    assert_eq!(lib.len(), n);
    for (i, (a, b)) in lib.iter().zip(&by_cli).enumerate() {
        assert_eq!(a, b, "command {i}: {}", script()[i]);
    }
    assert_eq!(files(&lib_dir), files(&cli_dir));
    #[cfg(feature = "mcp")]
    {
        let mcp_dir = tmp.path().join("mcp");
        let by_mcp = through_mcp(&mcp_dir);
        for (i, (a, b)) in lib.iter().zip(&by_mcp).enumerate() {
            assert_eq!(a, b, "command {i}: {}", script()[i]);
        }
        assert_eq!(files(&lib_dir), files(&mcp_dir));
    }
    // The script did what it says: some replies are errors, some not, and the
    // replies are the reference's texts.
    let errors = lib.iter().filter(|(_, e)| *e).count();
    assert!(errors > 10 && errors < n - 8, "{lib:?}");
    assert_eq!(
        lib[1].0,
        "File created successfully at: /memories/user_coffee.md"
    );
    assert_eq!(lib[3].0, "File /memories/user_coffee.md already exists");
    assert_eq!(
        lib[8].0,
        "Here's the content of /memories/user_coffee.md with line numbers:\n     1\t# Coffee\n     2\tLikes it black.\n     3\tNo sugar.\n     4\t"
    );
    assert_eq!(
        lib[18].0,
        "Here's the content of /memories/progress.md with line numbers:\n     1\t# Progress\n     2\tstep one\n     3\tstep two: done\n     4\tsee [[user_coffee]]\n     5\t"
    );
    assert!(
        lib[20]
            .0
            .ends_with("Links to [[user_coffee]] now dangle in: /memories/progress.md line 4. Edit them to name the new key."),
        "{:?}",
        lib[20]
    );
}

#[test]
fn the_cli_prints_the_reply_and_exits_1_on_an_error_reply() {
    // spec/cli.md#memory-tool
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let o = cli(
        &dir,
        &json!({"command": "view", "path": "/memories/none.md"}),
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "The path /memories/none.md does not exist. Please provide a valid path.\n"
    );
    assert_eq!(stderr(&o), "");
    let mut c = memdir(&dir);
    c.args(["--json", "memory-tool"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(br#"{"command": "create", "path": "/memories/a.md", "file_text": "hi"}"#)
            .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        json!({"text": "File created successfully at: /memories/a.md", "is_error": false})
    );
    // Input that is not JSON is an error reply too.
    let mut c = memdir(&dir);
    c.arg("memory-tool")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"view /memories")
            .unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).starts_with("Invalid memory tool command: not JSON:"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn two_processes_editing_one_memory_lose_no_edit() {
    // spec/memory-tool.md#concurrency: each edit reads, changes and writes under the
    // lock. Two processes, each ROUNDS times: insert a line of its own at the top,
    // then str_replace it (a unique text) with its done form.
    const ROUNDS: usize = 25;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let o = cli(
        &dir,
        &json!({"command": "create", "path": "/memories/log.md", "file_text": "# Log\n"}),
    );
    assert!(o.status.success(), "{o:?}");
    let workers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|who| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut failed = Vec::new();
                for i in 0..ROUNDS {
                    let line = format!("{who}{i} todo");
                    for cmd in [
                        json!({"command": "insert", "path": "/memories/log.md", "insert_line": 1, "insert_text": line}),
                        json!({"command": "str_replace", "path": "/memories/log.md", "old_str": line, "new_str": format!("{who}{i} done")}),
                    ] {
                        let o = cli(&dir, &cmd);
                        if !o.status.success() {
                            failed.push(format!("{cmd}: {}{}", stdout(&o), stderr(&o)));
                        }
                    }
                }
                failed
            })
        })
        .collect();
    let failed: Vec<String> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let mem = memdir::Memory::open(&dir).unwrap();
    let body = mem.read("log").unwrap().body;
    for who in ["a", "b"] {
        for i in 0..ROUNDS {
            assert!(
                body.lines().any(|l| l == format!("{who}{i} done")),
                "{who}{i} lost:\n{body}"
            );
        }
    }
    assert!(!body.contains("todo"), "{body}");
    assert_eq!(body.lines().count(), 1 + 2 * ROUNDS, "{body}");
}

#[test]
fn the_readme_memory_tool_block_works_as_written() {
    // README "Claude's memory tool": each line of its sh block, run by `sh` in a
    // fresh folder with this memdir first on PATH, succeeds; the view lists the
    // memory and recall finds the edit.
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let start = readme.find("## Claude's memory tool").expect("the section");
    let block = &readme[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let cwd = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut outputs = Vec::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let o = run(std::process::Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(cwd.path())
            .env("PATH", &path)
            .env_remove("MEMDIR_DIR")
            .env("MEMDIR_NOW", NOW)
            .stdin(Stdio::null()));
        assert_eq!(
            o.status.code(),
            Some(0),
            "{line}\n{}{}",
            stdout(&o),
            stderr(&o)
        );
        outputs.push(stdout(&o));
    }
    assert_eq!(outputs.len(), 5, "{block}");
    assert_eq!(
        outputs[1],
        "File created successfully at: /memories/user_coffee.md\n"
    );
    assert!(
        outputs[3].ends_with("/memories/user_coffee.md\n"),
        "{}",
        outputs[3]
    );
    assert!(outputs[4].contains("user_coffee"), "{}", outputs[4]);
}

#[test]
fn of_several_processes_creating_one_path_exactly_one_succeeds() {
    // spec/memory-tool.md#concurrency: create checks again under the lock.
    const PROCESSES: usize = 6;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let path = "/memories/race.md";
    let workers: Vec<_> = (0..PROCESSES)
        .map(|i| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let o = cli(
                    &dir,
                    &json!({"command": "create", "path": path, "file_text": format!("writer {i}\n")}),
                );
                (i, o.status.code(), stdout(&o))
            })
        })
        .collect();
    let results: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let won: Vec<_> = results.iter().filter(|(_, c, _)| *c == Some(0)).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    for (_, code, out) in &results {
        if *code != Some(0) {
            assert_eq!(out, "File /memories/race.md already exists\n");
        }
    }
    let winner = won[0].0;
    let o = cli(&dir, &json!({"command": "view", "path": path}));
    assert!(
        stdout(&o).contains(&format!("     1\twriter {winner}\n")),
        "{}",
        stdout(&o)
    );
}
