//! Claude Code's memory directory, in place (spec/index-format.md#agent-index): a
//! directory laid out as Claude Code keeps `~/.claude/projects/<project>/memory/`
//! (`fixtures/claude-code/memory`: files with only `name`, `description`, `type`, and a
//! MEMORY.md the agent writes in its own style). Every command leaves that MEMORY.md
//! byte-identical, the memories load without dates, `check` checks the agent's index,
//! and two directories sync sealed through the folder provider with nothing lost.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{copy_tree, fixture, memdir, run, stderr, stdout, tree};

/// A copy of the fixture at `<tmp>/memory`, and its MEMORY.md bytes.
fn fixture_copy() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    copy_tree(&fixture("claude-code/memory"), &dir);
    let index = std::fs::read(dir.join("MEMORY.md")).unwrap();
    (tmp, dir, index)
}

fn ok(dir: &Path, args: &[&str]) -> Output {
    let o = run(memdir(dir).args(args));
    assert!(
        o.status.success(),
        "memdir {args:?}: exit {:?}\n{}{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    o
}

fn with_stdin(dir: &Path, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut c = memdir(dir);
    c.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The commands of a session on the directory, each followed by the check that
/// MEMORY.md is still the agent's bytes and nothing was saved as a "hand-edited" index.
fn every_command_leaves(dir: &Path, index: &[u8]) {
    let same = |what: &str| {
        assert_eq!(
            std::fs::read(dir.join("MEMORY.md")).unwrap(),
            index,
            "MEMORY.md changed by {what}"
        );
        assert!(
            !dir.join(".memdir/backups").exists(),
            "{what} saved MEMORY.md as hand-edited"
        );
    };
    let steps: &[&[&str]] = &[
        &["list"],
        &["context"],
        &["context", "--query", "postgres"],
        &["recall", "postgres"],
        &["check"],
        &["check", "--fix"],
        &["index"],
        &[
            "write",
            "project_ci_cache",
            "--name",
            "CI cache",
            "--description",
            "the CI cache lives in the ci-cache bucket",
            "--type",
            "project",
            "--body",
            "Builds restore from the ci-cache bucket.",
        ],
        &[
            "edit",
            "user_role",
            "--append",
            "Prefers table-driven tests.",
        ],
        &["forget", "project_ci_cache"],
        &["rename", "feedback_terse_replies", "feedback_short_replies"],
        &["rename", "feedback_short_replies", "feedback_terse_replies"],
        &["prune", "--plan"],
        &["list"],
    ];
    for args in steps {
        ok(dir, args);
        same(&args.join(" "));
    }
    let blob = dir.parent().unwrap().join("blob.json");
    let blob = blob.to_str().unwrap();
    ok(dir, &["export", "-o", blob]);
    ok(dir, &["import", blob]);
    same("export, import");
    let o = with_stdin(
        dir,
        &["memory-tool"],
        r##"{"command":"create","path":"/memories/reference_dashboards.md","file_text":"# Dashboards\nLatency board is grafana/d/api.\n"}"##,
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    same("memory-tool create");
    let o = with_stdin(
        dir,
        &["memory-tool"],
        r#"{"command":"delete","path":"/memories/reference_dashboards.md"}"#,
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    same("memory-tool delete");
    #[cfg(feature = "mcp")]
    {
        use crate::mcp::{Server, is_error, text};
        let mut s = Server::start(dir, &[]);
        s.initialize();
        let calls = [
            ("list_memories", serde_json::json!({})),
            (
                "memory_context",
                serde_json::json!({"query": "release freeze"}),
            ),
            ("recall", serde_json::json!({"query": "mocks"})),
            (
                "remember",
                serde_json::json!({"key": "user_timezone", "name": "Timezone",
                    "description": "works from Lisbon", "type": "user",
                    "body": "The user works from Lisbon (WET)."}),
            ),
            ("forget", serde_json::json!({"key": "user_timezone"})),
        ];
        for (tool, args) in calls {
            let r = s.call(tool, args);
            assert!(!is_error(&r), "{tool}: {}", text(&r));
            same(tool);
        }
    }
}

// spec/index-format.md#agent-index: without configuration, a MEMORY.md memdir never
// wrote and not made of its generator's lines is the agent's.
#[test]
fn detected_every_command_leaves_the_agents_index_byte_identical() {
    let (_tmp, dir, index) = fixture_copy();
    every_command_leaves(&dir, &index);
    assert!(!dir.join(".memdir/index.sha256").exists());
}

// spec/index-format.md#agent-index: `init --claude-code` writes `index = "agent"`, and
// `init` itself leaves the agent's index alone.
#[test]
fn configured_every_command_leaves_the_agents_index_byte_identical() {
    let (_tmp, dir, index) = fixture_copy();
    let o = ok(&dir, &["init", "--claude-code"]);
    assert!(
        stdout(&o).contains("MEMORY.md is the agent's"),
        "{}",
        stdout(&o)
    );
    let config = std::fs::read_to_string(dir.join(".memdir/config.toml")).unwrap();
    assert!(config.contains("index = \"agent\""), "{config}");
    assert_eq!(std::fs::read(dir.join("MEMORY.md")).unwrap(), index);
    every_command_leaves(&dir, &index);
    // The memory files themselves are as Claude Code wrote them, except those memdir
    // changed (edit gave `user_role` today's dates, keeping everything else).
    for (path, bytes) in tree(&fixture("claude-code/memory")) {
        let now = std::fs::read(dir.join(&path)).unwrap();
        if path == "user_role.md" {
            let text = String::from_utf8(now).unwrap();
            let want = String::from_utf8(bytes).unwrap().replace(
                "type: user\n---",
                "type: user\ncreated: 2026-04-14\nupdated: 2026-04-14\n---",
            );
            assert_eq!(text, format!("{}Prefers table-driven tests.\n", want));
        } else {
            assert_eq!(now, bytes, "{path}");
        }
    }
}

// spec/memory-format.md#undated: the fixture's memories load without dates and are found.
#[test]
fn recall_and_context_find_the_fixtures_memories() {
    let (_tmp, dir, index) = fixture_copy();
    let o = ok(&dir, &["--json", "recall", "postgres mocks"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let first = &v["hits"][0];
    assert_eq!(first["key"], "feedback_real_db_tests", "{v}");
    let o = ok(&dir, &["check"]);
    assert!(
        stdout(&o).contains("5 memories") && stdout(&o).contains("0 errors, 0 warnings"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    // The context block's index section is the agent's MEMORY.md, as written.
    let block = stdout(&ok(&dir, &["context", "--query", "release freeze"]));
    let agent = String::from_utf8(index).unwrap();
    assert!(block.contains(&agent), "{block}");
    assert!(
        block.contains(
            "## Release freeze (key: project_release_freeze, type: project, updated: unknown)"
        ),
        "{block}"
    );
    assert!(block.contains("Non-critical merges are frozen"), "{block}");
}

// spec/index-format.md#agent-index: `check` reports the agent's index problems as
// warnings (exit 0) and neither `check` nor `check --fix` changes it.
#[test]
fn check_warns_about_the_agents_index_and_fixes_nothing_in_it() {
    let (_tmp, dir, _) = fixture_copy();
    let mut index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    index.push_str("- [Deploys](project_deploys.md) — deploy checklist\n");
    index.push_str("- See `[not a link](x.md)` and [docs](https://example.com/a.md)\n");
    std::fs::write(dir.join("MEMORY.md"), &index).unwrap();
    std::fs::write(
        dir.join("user_editor.md"),
        "---\nname: Editor\ndescription: uses Helix\ntype: user\n---\n\nHelix.\n",
    )
    .unwrap();
    for args in [&["check"][..], &["check", "--fix"]] {
        let o = ok(&dir, args);
        let err = stdout(&o) + &stderr(&o);
        assert!(
            err.contains(
                "MEMORY.md:8: links to project_deploys.md, which is not in the memory directory"
            ),
            "{err}"
        );
        assert!(
            err.contains("user_editor.md: not listed in MEMORY.md (the agent's index)"),
            "{err}"
        );
        assert_eq!(err.matches("warning:").count(), 2, "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
            index
        );
    }
    // Past what Claude Code loads: 200 lines.
    let mut long = index.clone();
    for i in 0..200 {
        long.push_str(&format!("- note {i}\n"));
    }
    std::fs::write(dir.join("MEMORY.md"), &long).unwrap();
    let o = ok(&dir, &["check"]);
    let err = stdout(&o) + &stderr(&o);
    assert!(
        err.contains("MEMORY.md:201: 209 lines") && err.contains("first 200 lines or 25000 bytes"),
        "{err}"
    );
}

// spec/index-format.md#agent-index: the index section of the context block is what
// Claude Code loads, the first 200 lines or 25 KB.
#[test]
fn context_shows_what_claude_code_loads_of_a_long_index() {
    let (_tmp, dir, _) = fixture_copy();
    let line = |i: usize| format!("- note {i:03} {}\n", "x".repeat(180));
    let text: String = std::iter::once("# Memory Index\n".to_string())
        .chain((0..150).map(line))
        .collect();
    std::fs::write(dir.join("MEMORY.md"), &text).unwrap();
    let block = stdout(&ok(&dir, &["context", "--max-tokens", "100000"]));
    // 25,000 bytes hold the title (15 bytes) and 130 lines of 192 bytes.
    assert!(block.contains("- note 129 "), "{block}");
    assert!(!block.contains("- note 130 "), "{block}");
}

// spec/index-format.md#agent-index: `index = "memdir"` keeps memdir's own index (the
// hand-edited one is saved and replaced); a bad value is refused with file and line,
// nothing changed.
#[test]
fn the_index_key_overrides_detection_and_a_bad_value_is_refused() {
    let (_tmp, dir, index) = fixture_copy();
    std::fs::create_dir_all(dir.join(".memdir")).unwrap();
    std::fs::write(
        dir.join(".memdir/config.toml"),
        "mode = \"local\"\nindex = \"claude\"\n",
    )
    .unwrap();
    let before = tree(&dir);
    let o = run(memdir(&dir).args([
        "write",
        "user_x",
        "--name",
        "X",
        "--description",
        "x",
        "--type",
        "user",
        "--body",
        "x",
    ]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("config.toml:2: index `claude` is not `agent`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(tree(&dir), before);
    assert!(!dir.join("timeline").exists());

    std::fs::write(dir.join(".memdir/config.toml"), "index = \"memdir\"\n").unwrap();
    let o = ok(&dir, &["list"]);
    assert!(
        stderr(&o).contains("MEMORY.md had been edited by hand"),
        "{}",
        stderr(&o)
    );
    let now = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(now.starts_with("# Agent Memory\n"), "{now}");
    let backups: Vec<_> = std::fs::read_dir(dir.join(".memdir/backups"))
        .unwrap()
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(
        std::fs::read(backups[0].as_ref().unwrap().path()).unwrap(),
        index
    );
}

#[cfg(feature = "sync")]
/// One "laptop": a Claude Code memory directory syncing through the shared folder.
struct Laptop {
    dir: PathBuf,
    remote: PathBuf,
    key: PathBuf,
    home: PathBuf,
}

#[cfg(feature = "sync")]
impl Laptop {
    fn cmd(&self) -> std::process::Command {
        let mut c = memdir(&self.dir);
        c.env("MEMDIR_FOLDER", &self.remote)
            .env("MEMDIR_KEY_FILE", &self.key)
            .env("HOME", &self.home)
            .env_remove("MEMDIR_OFFLINE")
            .env_remove("XDG_CONFIG_HOME");
        c
    }

    fn ok(&self, args: &[&str]) -> Output {
        let o = run(self.cmd().args(args));
        assert!(
            o.status.success(),
            "memdir {args:?} in {}: exit {:?}\n{}{}",
            self.dir.display(),
            o.status.code(),
            stdout(&o),
            stderr(&o)
        );
        o
    }
}

#[cfg(feature = "sync")]
/// The memory files of a directory (every top-level `*.md` but MEMORY.md).
fn memory_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    tree(dir)
        .into_iter()
        .filter(|(p, _)| p.ends_with(".md") && p != "MEMORY.md" && !p.contains('/'))
        .collect()
}

// spec/sync.md#claude-codes-memory-directory: two laptops share one Claude Code memory
// through `memdir sync`, sealed (encrypted-ipfs, folder provider): every memory file
// reaches both byte for byte, and each laptop's MEMORY.md stays its agent's.
#[cfg(feature = "sync")]
#[test]
fn two_laptops_share_one_claude_code_memory_sealed() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let key = tmp.path().join("memdir.key");
    let laptop = |name: &str| {
        let home = tmp.path().join(format!("{name}-home"));
        std::fs::create_dir_all(&home).unwrap();
        Laptop {
            dir: tmp.path().join(name),
            remote: remote.clone(),
            key: key.clone(),
            home,
        }
    };
    let a = laptop("a");
    let b = laptop("b");
    copy_tree(&fixture("claude-code/memory"), &a.dir);
    // B's Claude Code has a memory of its own, in its own index.
    std::fs::create_dir_all(&b.dir).unwrap();
    let b_index = "# Memory\n\n- [Editor](user_editor.md) — edits in Helix\n";
    std::fs::write(b.dir.join("MEMORY.md"), b_index).unwrap();
    std::fs::write(
        b.dir.join("user_editor.md"),
        "---\nname: Editor\ndescription: edits in Helix\ntype: user\n---\n\nThe user edits in Helix.\n",
    )
    .unwrap();
    let a_index = std::fs::read(a.dir.join("MEMORY.md")).unwrap();
    a.ok(&["keygen", "--out", key.to_str().unwrap()]);
    for l in [&a, &b] {
        l.ok(&[
            "init",
            "--claude-code",
            "--mode",
            "encrypted-ipfs",
            "--provider",
            "folder",
        ]);
    }
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    // A's Claude Code learns something new; B's edits one of A's memories.
    std::fs::write(
        a.dir.join("project_api_v2.md"),
        "---\nname: API v2\ndescription: v2 endpoints ship behind the api_v2 flag\ntype: project\n---\n\nThe v2 endpoints ship behind the `api_v2` feature flag.\n",
    )
    .unwrap();
    let role = b.dir.join("user_role.md");
    let edited = std::fs::read_to_string(&role).unwrap() + "Reviews PRs in the morning.\n";
    std::fs::write(&role, &edited).unwrap();
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    a.ok(&["sync"]);

    let files = memory_files(&a.dir);
    assert_eq!(files, memory_files(&b.dir));
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "feedback_real_db_tests.md",
            "feedback_terse_replies.md",
            "project_api_v2.md",
            "project_release_freeze.md",
            "reference_incident_tracker.md",
            "user_editor.md",
            "user_role.md",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(a.dir.join("user_role.md")).unwrap(),
        edited
    );
    // Nothing sealed travels in the clear.
    for car in std::fs::read_dir(remote.join("cars")).unwrap() {
        let bytes = std::fs::read(car.unwrap().path()).unwrap();
        for needle in [&b"Reviews PRs"[..], b"api_v2", b"Memory Index", b"Helix"] {
            assert!(!bytes.windows(needle.len()).any(|w| w == needle));
        }
    }
    // Each laptop's MEMORY.md is its agent's, untouched by memdir.
    assert_eq!(std::fs::read(a.dir.join("MEMORY.md")).unwrap(), a_index);
    assert_eq!(
        std::fs::read_to_string(b.dir.join("MEMORY.md")).unwrap(),
        b_index
    );
    assert!(!a.dir.join(".memdir/backups").exists() && !b.dir.join(".memdir/backups").exists());
    // `check` on B names what B's agent does not list yet.
    let o = b.ok(&["check"]);
    let err = stdout(&o) + &stderr(&o);
    assert!(
        err.contains("project_api_v2.md: not listed in MEMORY.md"),
        "{err}"
    );
    // Recall on B finds A's memory.
    let found = stdout(&b.ok(&["recall", "feature flag"]));
    assert!(found.contains("project_api_v2"), "{found}");

    // A third laptop whose Claude has no index yet starts from the one pushed last
    // (A's), as Claude Code loads it; then it is that laptop's own.
    let c = laptop("c");
    c.ok(&[
        "init",
        "--claude-code",
        "--mode",
        "encrypted-ipfs",
        "--provider",
        "folder",
    ]);
    assert!(!c.dir.join("MEMORY.md").exists());
    let o = c.ok(&["sync"]);
    assert!(
        stdout(&o).contains("MEMORY.md: took remote"),
        "{}",
        stdout(&o)
    );
    assert_eq!(std::fs::read(c.dir.join("MEMORY.md")).unwrap(), a_index);
    assert_eq!(memory_files(&c.dir), files);
    let c_index = "# Memory Index\n\n- [API v2](project_api_v2.md) — behind a flag\n";
    std::fs::write(c.dir.join("MEMORY.md"), c_index).unwrap();
    c.ok(&["sync"]);
    a.ok(&["sync"]);
    assert_eq!(
        std::fs::read_to_string(c.dir.join("MEMORY.md")).unwrap(),
        c_index
    );
    assert_eq!(std::fs::read(a.dir.join("MEMORY.md")).unwrap(), a_index);
}

// spec/memory-tool.md, spec/mcp.md#resources: the memory tool refuses to change the
// agent's MEMORY.md in words that say whose it is, and `memory://index` reads the
// agent's file within a memory file's limit (it is not memdir's generated text, whose
// size the memories bound).
#[test]
fn the_agents_index_is_refused_by_the_memory_tool_and_read_within_a_limit() {
    let (_tmp, dir, index) = fixture_copy();
    let o = with_stdin(
        &dir,
        &["memory-tool"],
        r#"{"command":"str_replace","path":"/memories/MEMORY.md","old_str":"Memory","new_str":"X"}"#,
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("/memories/MEMORY.md is the agent's own index"),
        "{}",
        stdout(&o)
    );
    assert_eq!(std::fs::read(dir.join("MEMORY.md")).unwrap(), index);
    #[cfg(feature = "mcp")]
    {
        use crate::mcp::Server;
        let mut s = Server::start(&dir, &[]);
        s.initialize();
        let uri = serde_json::json!({"uri": "memory://index"});
        let r = s.request("resources/read", uri.clone());
        assert_eq!(
            r["result"]["contents"][0]["text"].as_str(),
            Some(String::from_utf8(index.clone()).unwrap().as_str()),
            "{r}"
        );
        // Over 4 MiB: refused, never read whole.
        let big = format!("# Memory Index\n{}", "- [x](x.md) — y\n".repeat(300_000));
        std::fs::write(dir.join("MEMORY.md"), &big).unwrap();
        let r = s.request("resources/read", uri);
        assert!(r.get("error").is_some(), "{}", &r.to_string()[..200]);
        assert_eq!(
            std::fs::read(dir.join("MEMORY.md")).unwrap(),
            big.as_bytes()
        );
    }
}
