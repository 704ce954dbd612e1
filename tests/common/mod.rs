//! Shared helpers: running the built binary with a fixed clock, temp memory
//! directories made from fixtures, and output redaction for golden files.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The clock every test runs at unless it says otherwise.
pub const NOW: &str = "2026-04-14T12:00:00Z";

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memdir"))
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> PathBuf {
    manifest_dir().join("fixtures").join(rel)
}

/// A command for the binary on `dir`, with MEMDIR_NOW fixed and a clean environment.
pub fn memdir(dir: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("--dir").arg(dir);
    c.env_remove("MEMDIR_DIR");
    c.env("MEMDIR_NOW", NOW);
    c.stdin(Stdio::null());
    c
}

/// Runs a command and returns its output.
pub fn run(c: &mut Command) -> Output {
    c.output().expect("run memdir")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Copies a directory tree (regular files and folders only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let ft = e.file_type().unwrap();
        let dest = to.join(e.file_name());
        if ft.is_dir() {
            copy_tree(&e.path(), &dest);
        } else if ft.is_file() {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A temp dir holding a copy of the bundled example memory at `<tmp>/memory`.
pub fn example_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    copy_tree(&fixture("example"), &dir);
    (tmp, dir)
}

/// Every regular file under `dir` (dot entries excluded), relative, sorted, with content.
pub fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(root: &Path, d: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    if dir.is_dir() {
        walk(dir, dir, &mut out);
    }
    out
}

/// Compares `actual` with the golden file, or rewrites it when UPDATE_EXPECT=1.
pub fn assert_golden(path: &Path, actual: &str) {
    if std::env::var("UPDATE_EXPECT").as_deref() == Ok("1") {
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|_| {
        panic!(
            "missing golden file {}; run with UPDATE_EXPECT=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let exp: Vec<&str> = expected.lines().collect();
        let act: Vec<&str> = actual.lines().collect();
        let first = exp
            .iter()
            .zip(act.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(exp.len().min(act.len()));
        panic!(
            "{} differs at line {}:\n  expected: {:?}\n  actual:   {:?}\n(run with UPDATE_EXPECT=1 to accept; review the diff)\n--- actual ---\n{actual}",
            path.display(),
            first + 1,
            exp.get(first),
            act.get(first)
        );
    }
}

/// Splits a command line into words: whitespace separates, double quotes group,
/// `\"` and `\\` escape inside quotes, `\n` inside quotes is a newline.
pub fn split_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_q = false;
    let mut has = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_q = !in_q;
                has = true;
            }
            '\\' if in_q => match chars.next() {
                Some('n') => cur.push('\n'),
                Some(o) => cur.push(o),
                None => {}
            },
            c if c.is_whitespace() && !in_q => {
                if has {
                    out.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            c => {
                cur.push(c);
                has = true;
            }
        }
    }
    if has {
        out.push(cur);
    }
    out
}

/// A small deterministic generator for kill delays and random choices in tests (no
/// randomness crate needed).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}
