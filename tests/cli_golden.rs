//! Data-driven CLI tests: each folder under fixtures/cli/ has a `cmd` script, an
//! optional `input/` memory directory, and `expected.txt` holding every command's
//! stdout, stderr (lines marked `!`) and exit code, then the files left in the
//! directory. `UPDATE_EXPECT=1 cargo test` rewrites the golden files; the diff is the
//! review. Temp paths are redacted to `[ROOT]`.
//!
//! Script lines: `memdir ARGS…` runs the binary on the case's directory;
//! `@now TIME` sets MEMDIR_NOW for the following commands; `@file PATH "TEXT"`
//! writes a file (as a person or another tool would); `@show PATH` prints a file,
//! dot paths included; `@fixture SRC DEST` copies `fixtures/SRC` (a file or folder) to
//! DEST (relative to the memory directory); `@stdin "TEXT"` feeds the next
//! command's standard input; `# …` is a comment.

use std::io::Write;
use std::process::Stdio;

use crate::common::*;

fn run_case(name: &str) {
    let case = fixture("cli").join(name);
    let script = std::fs::read_to_string(case.join("cmd")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    if case.join("input").is_dir() {
        copy_tree(&case.join("input"), &dir);
    }
    // Commands run from a sibling folder, so `../x` means the same file to the script's
    // `@file` lines (relative to the memory directory) and to memdir's arguments.
    let cwd = tmp.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let root = tmp.path().to_string_lossy().into_owned();
    let mut now = NOW.to_string();
    let mut stdin: Option<String> = None;
    let mut log = String::new();
    for line in script.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words = split_words(line);
        match words[0].as_str() {
            "@now" => now = words[1].clone(),
            "@stdin" => stdin = Some(words[1].clone()),
            "@show" => {
                let p = dir.join(&words[1]);
                log.push_str(&format!("@show {}\n", words[1]));
                match std::fs::read_to_string(&p) {
                    Ok(t) => log.push_str(&t),
                    Err(e) => log.push_str(&format!("(cannot read: {})\n", e.kind())),
                }
                log.push('\n');
            }
            "@fixture" => {
                let from = fixture(&words[1]);
                let to = dir.join(&words[2]);
                if from.is_dir() {
                    copy_tree(&from, &to);
                } else {
                    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                    std::fs::copy(&from, &to).unwrap();
                }
            }
            "@file" => {
                let p = dir.join(&words[1]);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, &words[2]).unwrap();
            }
            "memdir" => {
                let mut c = memdir(&dir);
                c.env("MEMDIR_NOW", &now);
                c.current_dir(&cwd);
                c.args(&words[1..]);
                let out = match stdin.take() {
                    None => run(&mut c),
                    Some(text) => {
                        c.stdin(Stdio::piped())
                            .stdout(Stdio::piped())
                            .stderr(Stdio::piped());
                        let mut child = c.spawn().unwrap();
                        child
                            .stdin
                            .take()
                            .unwrap()
                            .write_all(text.as_bytes())
                            .unwrap();
                        child.wait_with_output().unwrap()
                    }
                };
                log.push_str(&format!("$ {line}\n"));
                log.push_str(&stdout(&out));
                if !out.stdout.is_empty() && !out.stdout.ends_with(b"\n") {
                    log.push_str("[no newline at end]\n");
                }
                for l in stderr(&out).lines() {
                    log.push_str(&format!("! {l}\n"));
                }
                log.push_str(&format!("[exit {}]\n\n", out.status.code().unwrap_or(-1)));
            }
            other => panic!("{name}/cmd: unknown line `{other}`"),
        }
    }
    log.push_str("== files ==\n");
    for (rel, bytes) in tree(&dir) {
        log.push_str(&format!("--- {rel}\n"));
        log.push_str(&String::from_utf8_lossy(&bytes));
        if !bytes.ends_with(b"\n") && !bytes.is_empty() {
            log.push_str("\n[no newline at end]\n");
        }
    }
    let log = log.replace(&root, "[ROOT]");
    assert_golden(&case.join("expected.txt"), &log);
}

#[test]
fn every_case_has_a_test() {
    let this = include_str!("cli_golden.rs");
    for e in std::fs::read_dir(fixture("cli")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            this.contains(&format!("case!({name});")),
            "fixtures/cli/{name} has no case! line"
        );
    }
}

macro_rules! case {
    ($name:ident) => {
        #[test]
        fn $name() {
            run_case(stringify!($name));
        }
    };
}

case!(write_read_list);
case!(context_example);
case!(recall_example);
case!(forget_and_note);
case!(errors_and_exit_codes);
case!(check_bad_files);
case!(import_export);
case!(index_backup);
case!(filters);
case!(context_budget);
case!(edit_rename_timeline);
case!(import_formats);
case!(state_and_sessions);
case!(timeline_repair);
case!(hyphen_values);
case!(links_graph);
case!(prune_consolidate);
