//! `memdir mcp config` (spec/cli.md#mcp-config): each client's printed entry names
//! this binary and the absolute directory; `--install` keeps what else the client's
//! file holds, writes `<file>.bak` first, and refuses a file that does not parse,
//! leaving it byte-identical. Every file written is under a temp dir (`--config`, or
//! a temp current directory); HOME is a temp dir too.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::common::*;

/// `memdir --dir DIR mcp config ARGS...` run in `cwd` with HOME set to `home`.
fn config(cwd: &Path, home: &Path, dir: &str, args: &[&str]) -> Output {
    let mut c = std::process::Command::new(bin());
    c.current_dir(cwd)
        .env_remove("MEMDIR_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", home)
        .args(["--dir", dir, "mcp", "config"])
        .args(args);
    run(&mut c)
}

fn exe() -> String {
    std::fs::canonicalize(bin())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The command and args of a JSON entry.
fn command_and_args(entry: &Value) -> (String, Vec<String>) {
    let args = entry["args"]
        .as_array()
        .unwrap_or_else(|| panic!("no args in {entry}"))
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (entry["command"].as_str().unwrap().to_string(), args)
}

#[test]
fn each_client_entry_names_the_binary_and_the_absolute_directory() {
    // spec/cli.md#mcp-config
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let want_dir = home.join("agent/memory").to_string_lossy().into_owned();
    let want_args = vec!["mcp".to_string(), "--dir".into(), want_dir.clone()];
    // `~/…` is expanded with HOME; a relative path is taken from the current directory.
    for dir in ["~/agent/memory", "agent/memory"] {
        let cwd = if dir.starts_with('~') {
            tmp.path()
        } else {
            &home
        };
        for (client, key) in [
            ("claude-desktop", "mcpServers"),
            ("cursor", "mcpServers"),
            ("vscode", "servers"),
        ] {
            let o = config(cwd, &home, dir, &["--client", client]);
            assert_eq!(o.status.code(), Some(0), "{client}: {}", stderr(&o));
            let doc: Value = serde_json::from_str(&stdout(&o))
                .unwrap_or_else(|e| panic!("{client}: {e}: {}", stdout(&o)));
            let (command, args) = command_and_args(&doc[key]["memdir"]);
            assert_eq!(command, exe(), "{client}");
            assert_eq!(args, want_args, "{client}");
            if client == "vscode" {
                assert_eq!(doc[key]["memdir"]["type"], "stdio");
            }
        }
        let o = config(cwd, &home, dir, &["--client", "codex"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let doc: toml::Table = toml::from_str(&stdout(&o)).unwrap();
        let entry = &doc["mcp_servers"]["memdir"];
        assert_eq!(entry["command"].as_str(), Some(exe().as_str()));
        let args: Vec<&str> = entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args, want_args);

        let o = config(cwd, &home, dir, &["--client", "claude-code"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let line = stdout(&o);
        let words: Vec<&str> = line.split_whitespace().collect();
        // User scope: the memory is there in every project, not only in the folder
        // where the line was run (Claude Code's default scope is that folder).
        let mut want = vec!["claude", "mcp", "add", "--scope", "user", "memdir", "--"];
        let exe = exe();
        want.push(&exe);
        want.extend(want_args.iter().map(String::as_str));
        // Claude Code hands its model a result's structuredContent instead of its
        // text, so its entry asks for the text alone (spec/mcp.md#text-only).
        want.push("--text-only");
        assert_eq!(words, want, "{line}");
    }
}

#[test]
fn a_tilde_user_directory_is_refused_with_a_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let o = config(
        tmp.path(),
        tmp.path(),
        "~bob/memory",
        &["--client", "cursor"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    assert!(err.starts_with("error: --dir ~bob/memory"), "{err}");
    assert!(err.contains("\nhint: "), "{err}");
}

#[test]
fn a_missing_directory_is_named_with_the_init_command() {
    // `memdir mcp` refuses a missing directory (spec/cli.md#the-memory-directory), so
    // the entry for one comes with a warning naming `memdir init --dir DIR`; the
    // directory is not created, and an existing one gets no warning.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let o = config(tmp.path(), tmp.path(), "memory", &["--client", "cursor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("memdir init --dir {}", dir.display())),
        "{err}"
    );
    assert!(!dir.exists());
    assert!(run(memdir(&dir).arg("init")).status.success());
    let o = config(tmp.path(), tmp.path(), "memory", &["--client", "cursor"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn install_keeps_other_servers_and_writes_a_backup() {
    // spec/cli.md#mcp-config
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let dir = dir.to_str().unwrap();
    for (client, key) in [
        ("claude-desktop", "mcpServers"),
        ("cursor", "mcpServers"),
        ("vscode", "servers"),
    ] {
        let file = tmp.path().join(format!("{client}.json"));
        let before = json!({
            "theme": "dark",
            key: {
                "other": {"command": "other-server", "args": ["x"]},
                "memdir": {"command": "/old/memdir", "args": ["mcp"], "env": {"A": "1"}}
            }
        });
        let before_text = serde_json::to_string_pretty(&before).unwrap();
        std::fs::write(&file, &before_text).unwrap();
        let o = config(
            tmp.path(),
            tmp.path(),
            dir,
            &[
                "--client",
                client,
                "--install",
                "--config",
                file.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{client}: {}", stderr(&o));
        assert!(
            stdout(&o).starts_with("updated memdir in "),
            "{}",
            stdout(&o)
        );
        let bak = tmp.path().join(format!("{client}.json.bak"));
        assert_eq!(std::fs::read_to_string(&bak).unwrap(), before_text);
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(after["theme"], "dark", "{client}");
        assert_eq!(after[key]["other"], before[key]["other"], "{client}");
        let (command, args) = command_and_args(&after[key]["memdir"]);
        assert_eq!(command, exe());
        assert_eq!(args, ["mcp", "--dir", dir]);
        // The entry's own other fields stay.
        assert_eq!(after[key]["memdir"]["env"], json!({"A": "1"}));
        // Installing again changes nothing.
        let again = std::fs::read(&file).unwrap();
        let o = config(
            tmp.path(),
            tmp.path(),
            dir,
            &[
                "--client",
                client,
                "--install",
                "--config",
                file.to_str().unwrap(),
            ],
        );
        assert!(stdout(&o).starts_with("unchanged memdir"), "{}", stdout(&o));
        assert_eq!(std::fs::read(&file).unwrap(), again);
    }

    // Codex's TOML keeps its comments and other tables.
    let file = tmp.path().join("config.toml");
    let before =
        "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other\" # keep me\n";
    std::fs::write(&file, before).unwrap();
    let o = config(
        tmp.path(),
        tmp.path(),
        dir,
        &[
            "--client",
            "codex",
            "--install",
            "--config",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(before), "{after}");
    let doc: toml::Table = toml::from_str(&after).unwrap();
    assert_eq!(
        doc["mcp_servers"]["memdir"]["command"].as_str(),
        Some(exe().as_str())
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("config.toml.bak")).unwrap(),
        before
    );

    // Claude Code's project file, in the current directory, created when missing.
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let o = config(
        &project,
        tmp.path(),
        dir,
        &["--client", "claude-code", "--install"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(project.join(".mcp.json")).unwrap()).unwrap();
    let (command, args) = command_and_args(&doc["mcpServers"]["memdir"]);
    assert_eq!(command, exe());
    assert_eq!(args[..2], ["mcp", "--dir"]);
    assert_eq!(args[3..], ["--text-only"]);
    assert!(!project.join(".mcp.json.bak").exists());
}

#[test]
fn a_config_file_that_does_not_parse_is_refused_and_left_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str, &str)] = &[
        // (client, file, content, what the error names)
        (
            "cursor",
            "mcp.json",
            "{\n  \"mcpServers\": {\n    \"a\": 1,,\n",
            ":3: not valid JSON",
        ),
        (
            "vscode",
            "mcp.json",
            "// a comment\n{\"servers\": {}}\n",
            ":1: not valid JSON",
        ),
        (
            "claude-desktop",
            "c.json",
            "{\"mcpServers\": []}",
            "`mcpServers` is not a JSON object",
        ),
        (
            "codex",
            "config.toml",
            "model = \"o3\"\n[mcp_servers\ncommand = 1\n",
            ":2: not valid TOML",
        ),
        (
            "codex",
            "config.toml",
            "mcp_servers = 3\n",
            "`mcp_servers` is not a table",
        ),
    ];
    for (client, name, content, names) in cases {
        let file = tmp.path().join(name);
        std::fs::write(&file, content).unwrap();
        let o = config(
            tmp.path(),
            tmp.path(),
            "/srv/memory",
            &[
                "--client",
                client,
                "--install",
                "--config",
                file.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{client}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with(&format!("error: {}", file.display())) && err.contains(names),
            "{client}: {err}"
        );
        assert!(err.contains("\nhint: "), "{err}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            *content,
            "{client}"
        );
        let mut bak = file.clone().into_os_string();
        bak.push(".bak");
        assert!(
            !Path::new(&bak).exists(),
            "{client}: a refused install wrote a backup"
        );
    }
}
