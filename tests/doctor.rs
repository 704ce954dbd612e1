//! `memdir doctor` (spec/cli.md#doctor): a verdict per check, what to do when not
//! ok, exit 1 only when a check fails, bounded probes, and nothing written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;

/// Every file and folder under `dir`, dot entries included, with its bytes (`None`
/// for a folder): what doctor must leave as it found.
fn everything(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
        let bytes = e
            .file_type()
            .is_file()
            .then(|| std::fs::read(e.path()).unwrap());
        out.push((rel, bytes));
    }
    out
}

/// The checks of `doctor --json`: (name, verdict, detail, fix).
fn checks(o: &std::process::Output) -> Vec<(String, String, String, String)> {
    let v: serde_json::Value = serde_json::from_str(&stdout(o)).expect("doctor --json");
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("check"), s("verdict"), s("detail"), s("fix"))
        })
        .collect()
}

fn verdict_of<'a>(checks: &'a [(String, String, String, String)], name: &str) -> &'a str {
    &checks
        .iter()
        .find(|c| c.0 == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks:?}"))
        .1
}

/// A store with two memories and its search index built.
fn healthy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    assert!(run(memdir(&dir).arg("init")).status.success());
    for (k, body) in [("user_role", "Plays 5-a-side."), ("team", "Argentina fan.")] {
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
    assert!(
        run(memdir(&dir).args(["index", "--search"]))
            .status
            .success()
    );
    (tmp, dir)
}

#[test]
fn a_healthy_store_is_all_ok_and_left_byte_identical() {
    let (_tmp, dir) = healthy();
    let before = everything(&dir);
    let o = run(memdir(&dir).arg("doctor"));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    for line in text.lines().filter(|l| !l.starts_with(' ')) {
        assert!(line.starts_with("ok "), "{text}");
    }
    for name in ["directory", "config", "sync", "embeddings", "index"] {
        assert!(text.contains(name), "{name}: {text}");
    }
    assert!(text.contains("2 memory files"), "{text}");
    assert!(text.contains("search index readable"), "{text}");
    let o = run(memdir(&dir).args(["doctor", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let cs = checks(&o);
    assert!(cs.len() >= 5, "{cs:?}");
    assert!(cs.iter().all(|c| c.1 == "ok"), "{cs:?}");
    assert_eq!(everything(&dir), before, "doctor changed the directory");
}

#[test]
fn a_broken_config_is_named_with_its_line_and_fails() {
    let (_tmp, dir) = healthy();
    std::fs::write(
        dir.join(".memdir/config.toml"),
        "mode = \"local\"\n\nprovider = kubo\n",
    )
    .unwrap();
    let before = everything(&dir);
    let o = run(memdir(&dir).args(["doctor", "--json"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let cs = checks(&o);
    assert_eq!(verdict_of(&cs, "config"), "fail", "{cs:?}");
    let config = cs.iter().find(|c| c.0 == "config").unwrap();
    assert!(config.2.contains("config.toml:3:"), "{config:?}");
    assert!(config.3.contains("memdir init --help"), "{config:?}");
    assert_eq!(verdict_of(&cs, "directory"), "ok");
    assert_eq!(everything(&dir), before, "doctor changed the directory");
}

#[test]
fn a_newline_in_the_directory_cannot_forge_a_check() {
    // spec/cli.md#output: each value on a line of a report is escaped, so a path
    // holding a newline stays on its check's line.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("x\nok    index       fine");
    let o = run(memdir(&dir).arg("doctor"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("x\\nok"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("ok")), "{text}");
}

#[test]
fn a_missing_directory_fails_with_the_init_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nowhere");
    let o = run(memdir(&dir).arg("doctor"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("fail  directory"), "{text}");
    assert!(
        text.contains(&format!("fix: memdir init --dir {}", dir.display())),
        "{text}"
    );
    assert!(!dir.exists(), "doctor created the directory");
    // A folder without MEMORY.md is not a memory directory either.
    std::fs::create_dir(&dir).unwrap();
    let o = run(memdir(&dir).arg("doctor"));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("has no MEMORY.md"), "{}", stdout(&o));
    assert_eq!(
        everything(&dir).len(),
        1,
        "doctor wrote into {}",
        dir.display()
    );
}

/// A syncing store whose provider is kubo at `api`.
#[cfg(feature = "sync")]
fn kubo_store(api: &str) -> (tempfile::TempDir, PathBuf, std::process::Command) {
    let (tmp, dir) = healthy();
    let o = run(memdir(&dir).args(["init", "--mode", "ipfs", "--provider", "kubo"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut c = memdir(&dir);
    c.args(["doctor", "--json"]).env("IPFS_API", api);
    (tmp, dir, c)
}

#[cfg(feature = "sync")]
#[test]
fn an_unreachable_provider_fails_fast() {
    // A port nobody listens on: the connection is refused at once.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (_tmp, dir, mut c) = kubo_store(&format!("http://127.0.0.1:{port}"));
    let before = everything(&dir);
    let start = Instant::now();
    let o = run(&mut c);
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let cs = checks(&o);
    assert_eq!(verdict_of(&cs, "sync"), "ok", "{cs:?}");
    assert_eq!(verdict_of(&cs, "provider"), "fail", "{cs:?}");
    let p = cs.iter().find(|c| c.0 == "provider").unwrap();
    assert!(p.2.contains(&format!("127.0.0.1:{port}")), "{p:?}");
    assert!(!p.3.is_empty(), "no fix: {p:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(everything(&dir), before, "doctor changed the directory");
}

#[cfg(feature = "sync")]
#[test]
fn a_provider_that_never_answers_is_given_up_on_within_the_limit() {
    // Accepts connections (the kernel's backlog) and never answers a request.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let (_tmp, _dir, mut c) = kubo_store(&format!("http://127.0.0.1:{port}"));
    let start = Instant::now();
    let o = run(&mut c);
    let took = start.elapsed();
    drop(silent);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(verdict_of(&checks(&o), "provider"), "fail");
    // The probe's limit is 5 s; the rest of doctor takes well under a second.
    assert!(took < Duration::from_secs(7), "took {took:?}");
}

#[cfg(feature = "sync")]
#[test]
fn a_folder_provider_and_a_private_key_are_ok_and_a_readable_key_fails() {
    let (tmp, dir) = healthy();
    let remote = tmp.path().join("remote");
    std::fs::create_dir(&remote).unwrap();
    let key = tmp.path().join("key");
    assert!(
        run(memdir(&dir).args(["keygen", "--out"]).arg(&key))
            .status
            .success()
    );
    let o = run(memdir(&dir).args(["init", "--mode", "encrypted-ipfs", "--provider", "folder"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let doctor = || {
        let mut c = memdir(&dir);
        c.args(["doctor", "--json"])
            .env("MEMDIR_FOLDER", &remote)
            .env("MEMDIR_KEY_FILE", &key);
        run(&mut c)
    };
    let o = doctor();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let cs = checks(&o);
    assert!(cs.iter().all(|c| c.1 == "ok"), "{cs:?}");
    assert_eq!(verdict_of(&cs, "key"), "ok");
    assert_eq!(verdict_of(&cs, "provider"), "ok");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let o = doctor();
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let cs = checks(&o);
        let k = cs.iter().find(|c| c.0 == "key").unwrap();
        assert_eq!(k.1, "fail", "{k:?}");
        assert!(k.3.starts_with("chmod 600 "), "{k:?}");
    }
    std::fs::remove_file(&key).unwrap();
    let o = doctor();
    assert_eq!(o.status.code(), Some(1));
    let k = checks(&o).into_iter().find(|c| c.0 == "key").unwrap();
    assert!(
        k.2.contains("does not exist") && k.3.contains("memdir keygen"),
        "{k:?}"
    );
}

#[test]
fn an_unreadable_search_index_is_a_warning_not_a_failure() {
    let (_tmp, dir) = healthy();
    std::fs::write(dir.join(".memdir/cache/index-v2.bin"), b"not an index").unwrap();
    let o = run(memdir(&dir).args(["doctor", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let cs = checks(&o);
    let i = cs.iter().find(|c| c.0 == "index").unwrap();
    assert_eq!(i.1, "warn", "{i:?}");
    assert!(i.3.contains("memdir index --search"), "{i:?}");
}

#[cfg(feature = "sync")]
#[test]
fn an_embedding_endpoint_that_is_down_fails() {
    let (_tmp, dir) = healthy();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    std::fs::write(
        dir.join(".memdir/config.toml"),
        format!("[embeddings]\nurl = \"http://127.0.0.1:{port}\"\nmodel = \"m\"\ndimensions = 8\n"),
    )
    .unwrap();
    let start = Instant::now();
    let o = run(memdir(&dir).args(["doctor", "--json"]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let cs = checks(&o);
    let e = cs.iter().find(|c| c.0 == "embeddings").unwrap();
    assert_eq!(e.1, "fail", "{e:?}");
    assert!(e.2.contains(&format!("127.0.0.1:{port}")), "{e:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[cfg(feature = "mcp")]
#[test]
fn the_readme_first_hour_works_as_written() {
    // The README's "The first hour" block, run line by line with ~/agent/memory in a
    // temporary HOME: every command succeeds and the recall finds the memory written.
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let start = readme.find("## The first hour").expect("the section");
    let block = &readme[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let home = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let code = line.split(" # ").next().unwrap();
        let words = split_words(code);
        assert_eq!(words[0], "memdir", "{line}");
        let args: Vec<String> = words[1..]
            .iter()
            .map(|w| w.replace("~/", &format!("{}/", home.path().display())))
            .collect();
        let o = run(std::process::Command::new(bin())
            .args(&args)
            .env("HOME", home.path())
            .env_remove("MEMDIR_DIR")
            .env_remove("MEMDIR_KEY_FILE")
            .stdin(std::process::Stdio::null()));
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
    assert!(outputs[1].starts_with("ok "), "doctor: {}", outputs[1]);
    assert!(
        outputs[2].starts_with("claude mcp add --scope user memdir"),
        "{}",
        outputs[2]
    );
    assert!(outputs[4].contains("user_role"), "recall: {}", outputs[4]);
}

#[cfg(feature = "sync")]
#[test]
fn an_answering_embedding_endpoint_is_ok() {
    let (_tmp, dir) = healthy();
    let server = crate::embed::serve(crate::embed::Behaviour::Good);
    crate::embed::configure(&dir, &server.url, "");
    let before = everything(&dir);
    let o = run(memdir(&dir).args(["doctor", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let cs = checks(&o);
    let e = cs.iter().find(|c| c.0 == "embeddings").unwrap();
    assert_eq!(e.1, "ok", "{e:?}");
    assert!(e.2.contains("stand-in, 256 dimensions"), "{e:?}");
    // No vector cache is written by the probe.
    assert_eq!(everything(&dir), before, "doctor changed the directory");
}
