//! `memdir mcp` driven over its stdio with newline-delimited JSON-RPC, as an MCP client
//! does (spec/mcp.md): the handshake, the tools and their schemas, tool errors as
//! `isError` results carrying the CLI's message, resources, notifications for edits a
//! person makes, two servers on one directory, and the manifest. Every wait is bounded.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

const WAIT: Duration = Duration::from_secs(20);

/// One server process and a minimal JSON-RPC client on its stdio (tests/memory_tool.rs
/// drives one too).
pub(crate) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
    next_id: u64,
    /// Notifications received while waiting for responses.
    notifications: Vec<Value>,
}

impl Server {
    pub(crate) fn start(dir: &Path, extra: &[&str]) -> Server {
        let mut cmd = memdir(dir);
        // The tests' directories are new: `--create` makes them, as a client
        // configuration for a fresh store would (spec/mcp.md#running).
        cmd.args(["mcp", "--create"]).args(extra);
        Server::spawn(cmd)
    }

    fn spawn(mut cmd: std::process::Command) -> Server {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start memdir mcp");
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (etx, stderr) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if etx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            child,
            stdin: Some(stdin),
            lines,
            stderr,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    fn send(&mut self, msg: &Value) {
        let mut s = serde_json::to_string(msg).unwrap();
        s.push('\n');
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(s.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// The next message on stdout; every line must be one JSON-RPC message.
    fn recv(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = self.lines.recv_timeout(left).ok()?;
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        Some(v)
    }

    /// Sends a request and returns its response (`result` or `error` object).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + WAIT;
        loop {
            let v = self
                .recv(deadline)
                .unwrap_or_else(|| panic!("no response to {method} within {WAIT:?}"));
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
            if v.get("method").is_some() && v.get("id").is_none() {
                self.notifications.push(v);
            }
        }
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
    }

    pub(crate) fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "memdir-tests", "version": "0"}
            }),
        );
        self.notify("notifications/initialized");
        r["result"].clone()
    }

    /// Calls a tool and returns its result object.
    pub(crate) fn call(&mut self, name: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        assert!(r.get("error").is_none(), "{name}: protocol error {r}");
        r["result"].clone()
    }

    /// Waits for a notification matching `pred` (already received ones count).
    fn wait_notification(&mut self, limit: Duration, pred: impl Fn(&Value) -> bool) -> bool {
        if let Some(i) = self.notifications.iter().position(&pred) {
            self.notifications.remove(i);
            return true;
        }
        let deadline = Instant::now() + limit;
        while let Some(v) = self.recv(deadline) {
            if pred(&v) {
                return true;
            }
            if v.get("method").is_some() {
                self.notifications.push(v);
            }
        }
        false
    }

    /// Closes stdin and waits (bounded) for the server to exit; returns its stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        let code = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("memdir mcp did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // stdout must hold nothing but protocol messages, to the end.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            serde_json::from_str::<Value>(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}"));
        }
        let mut err = String::new();
        while let Ok(l) = self.stderr.recv_timeout(Duration::from_millis(200)) {
            err.push_str(&l);
            err.push('\n');
        }
        (code, err)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

#[test]
fn remember_refuses_an_existing_key_unless_replace_or_expected_hash() {
    // spec/mcp.md#remember
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    assert_eq!(text(&s.call("remember", role_args())), "created user_role");
    let file = || std::fs::read_to_string(dir.join("user_role.md")).unwrap();
    let before = file();
    let mut other = role_args();
    other["body"] = json!("Plays tennis now.");
    let r = s.call("remember", other.clone());
    assert!(is_error(&r), "{r}");
    let t = text(&r);
    assert!(t.contains("`user_role` already exists"), "{t}");
    assert!(
        t.contains("replace: true") && t.contains("expected_hash"),
        "{t}"
    );
    assert_eq!(file(), before);

    let read = s.call("read_memory", json!({"key": "user_role"}));
    let hash = read["structuredContent"]["hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(hash.len(), 64);
    let mut stale = other.clone();
    stale["expected_hash"] = json!("f".repeat(64));
    let r = s.call("remember", stale);
    assert!(is_error(&r) && text(&r).contains(&hash), "{r}");
    assert_eq!(file(), before);
    let mut both = other.clone();
    both["expected_hash"] = json!(hash);
    both["replace"] = json!(true);
    assert!(is_error(&s.call("remember", both)));
    let mut cas = other.clone();
    cas["expected_hash"] = json!(hash);
    assert_eq!(text(&s.call("remember", cas.clone())), "updated user_role");
    assert!(file().contains("Plays tennis now."));
    // The hash just used is stale now.
    cas["body"] = json!("Plays golf.");
    assert!(is_error(&s.call("remember", cas)));
    let mut replace = other;
    replace["body"] = json!("Plays chess.");
    replace["replace"] = json!(true);
    assert_eq!(text(&s.call("remember", replace)), "updated user_role");
    assert!(file().contains("Plays chess."));
    s.finish();
}

#[test]
fn text_only_results_carry_the_text_alone() {
    // spec/mcp.md#text-only: Claude Code hands its model a result's structured content
    // instead of its text; with --text-only the text is all there is, the same text.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let calls = [
        ("recall", json!({"query": "football"})),
        (
            "memory_context",
            json!({"query": "football", "max_tokens": 512}),
        ),
        ("list_memories", json!({})),
        ("forget", json!({"key": "nobody"})),
    ];
    let mut both = Server::start(&dir, &[]);
    both.initialize();
    assert_eq!(
        text(&both.call("remember", role_args())),
        "created user_role"
    );
    let mut plain = Server::start(&dir, &["--text-only"]);
    plain.initialize();
    for (tool, args) in &calls {
        let (a, b) = (
            both.call(tool, args.clone()),
            plain.call(tool, args.clone()),
        );
        assert!(a.get("structuredContent").is_some(), "{tool}: {a}");
        assert!(b.get("structuredContent").is_none(), "{tool}: {b}");
        assert_eq!(a["isError"], b["isError"], "{tool}");
        assert_eq!(text(&a), text(&b), "{tool}");
        assert!(!text(&b).is_empty(), "{tool}");
    }
    // read_memory's version hash, which only the structured result holds, ends the
    // text, and it is the one remember's expected_hash takes.
    let full = both.call("read_memory", json!({"key": "user_role"}));
    let hash = full["structuredContent"]["hash"]
        .as_str()
        .unwrap()
        .to_string();
    let r = plain.call("read_memory", json!({"key": "user_role"}));
    assert!(r.get("structuredContent").is_none(), "{r}");
    let t = text(&r);
    assert_eq!(
        t,
        format!(
            "{}\n(version hash, for remember's expected_hash: {hash})",
            text(&full)
        )
    );
    let mut cas = role_args();
    cas["body"] = json!("Plays tennis now.");
    cas["expected_hash"] = json!(hash);
    assert_eq!(text(&plain.call("remember", cas)), "updated user_role");
    both.finish();
    plain.finish();
}

#[test]
fn a_read_only_memory_is_refused_by_every_mcp_writing_tool() {
    // spec/memory-format.md: `read_only`
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    std::fs::write(
        dir.join("user_pinned.md"),
        "---\nname: Pinned\ndescription: the person's own words\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\nread_only: true\n---\n\nDo not change.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("state_locked.md"),
        "---\nname: locked\ndescription: agent state locked\ntype: state\ncreated: 2026-04-01\nupdated: 2026-04-01\nread_only: true\n---\n\nset by a person\n",
    )
    .unwrap();
    assert!(run(memdir(&dir).arg("index")).status.success());
    let before = tree(&dir);
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let remember = |key: &str| json!({"key": key, "name": "N", "description": "d", "type": "user", "body": "agent", "replace": true});
    for (tool, args, want) in [
        (
            "remember",
            remember("user_pinned"),
            "memory `user_pinned` is read-only",
        ),
        (
            "remember",
            remember("state_locked"),
            "state `locked` is read-only",
        ),
        (
            "edit_memory",
            json!({"key": "user_pinned", "append": "x"}),
            "memory `user_pinned` is read-only",
        ),
        (
            "edit_memory",
            json!({"key": "state_locked", "append": "x"}),
            "state `locked` is read-only",
        ),
        (
            "forget",
            json!({"key": "user_pinned"}),
            "memory `user_pinned` is read-only",
        ),
        (
            "forget",
            json!({"key": "state_locked"}),
            "state `locked` is read-only",
        ),
        (
            "rename_memory",
            json!({"key": "user_pinned", "new_key": "user_x"}),
            "memory `user_pinned` is read-only",
        ),
        (
            "rename_memory",
            json!({"key": "state_locked", "new_key": "state_x"}),
            "state `locked` is read-only",
        ),
        (
            "set_state",
            json!({"key": "locked", "value": "agent"}),
            "state `locked` is read-only",
        ),
    ] {
        let r = s.call(tool, args.clone());
        assert!(is_error(&r), "{tool} {args}: {r}");
        let t = text(&r);
        assert!(
            t.contains(want) && t.contains("by hand"),
            "{tool} {args}: {t}"
        );
        assert_eq!(tree(&dir), before, "{tool} {args} changed the store");
    }
    s.finish();
}

fn role_args() -> Value {
    json!({
        "key": "user_role",
        "name": "Role",
        "description": "Argentina fan, plays 5-a-side on Saturdays",
        "type": "user",
        "body": "Plays weekly 5-a-side football on Saturdays.",
        "tags": ["football"]
    })
}

#[test]
fn core_flow_tools_resources_and_errors() {
    // spec/mcp.md#tools
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    let init = s.initialize();
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["serverInfo"]["name"], "memdir");
    assert_eq!(init["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(init["capabilities"]["resources"]["listChanged"], true);
    assert!(dir.join("MEMORY.md").is_file(), "the directory is created");

    let tools = s.request("tools/list", json!({}))["result"]["tools"].clone();
    let mut names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "edit_memory",
            "fetch",
            "forget",
            "get_state",
            "list_memories",
            "memory",
            "memory_context",
            "note",
            "read_memory",
            "recall",
            "recent_activity",
            "related",
            "remember",
            "rename_memory",
            "search",
            "session_transcript",
            "set_state"
        ]
    );
    for t in tools.as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(t["description"].as_str().unwrap().len() > 40, "{t}");
    }
    let remember = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "remember")
        .unwrap();
    let mut required: Vec<&str> = remember["inputSchema"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort();
    assert_eq!(required, ["body", "description", "key", "name", "type"]);
    for p in ["tags", "important", "decay", "source"] {
        assert!(
            remember["inputSchema"]["properties"].get(p).is_some(),
            "{p}"
        );
    }

    // remember writes the file and the index.
    let r = s.call("remember", role_args());
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "created user_role");
    assert_eq!(r["structuredContent"]["outcome"], "created");
    let file = std::fs::read_to_string(dir.join("user_role.md")).unwrap();
    assert!(file.contains("name: Role"), "{file}");
    assert!(file.contains("Plays weekly 5-a-side football on Saturdays."));
    assert!(file.contains("updated: 2026-04-14"), "{file}");
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(index.contains("[Role](user_role.md)"), "{index}");
    // The same content again changes nothing.
    assert_eq!(
        text(&s.call("remember", role_args())),
        "unchanged user_role"
    );

    let r = s.call("recall", json!({"query": "saturday"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["hits"][0]["key"], "user_role");
    assert!(text(&r).contains("user_role"));
    // The hit carries the body line that matched (spec/mcp.md#tools).
    let line = "Plays weekly 5-a-side football on Saturdays.";
    assert_eq!(r["structuredContent"]["hits"][0]["line"], line, "{r}");
    assert!(
        text(&r).contains(&format!("\n    {line}\n")),
        "{}",
        text(&r)
    );

    let r = s.call("read_memory", json!({"key": "user_role"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["meta"]["name"], "Role");
    assert_eq!(r["structuredContent"]["meta"]["tags"], json!(["football"]));
    assert!(text(&r).contains("Plays weekly 5-a-side"));

    let r = s.call("list_memories", json!({}));
    assert_eq!(r["structuredContent"]["memories"][0]["key"], "user_role");
    let r = s.call("list_memories", json!({"type": "project"}));
    assert_eq!(r["structuredContent"]["memories"], json!([]));

    let r = s.call(
        "note",
        json!({"type": "user_said", "fields": {"text": "how's my form?"}}),
    );
    assert!(!is_error(&r), "{r}");
    let day = std::fs::read_to_string(dir.join("timeline/2026-04-14.jsonl")).unwrap();
    assert!(
        day.contains(r#""type":"user_said","text":"how's my form?""#),
        "{day}"
    );

    let r = s.call("memory_context", json!({"query": "weekend plans"}));
    assert!(!is_error(&r), "{r}");
    assert!(text(&r).starts_with("# Agent Memory"), "{}", text(&r));
    assert!(text(&r).contains("Plays weekly 5-a-side"));
    assert!(text(&r).contains("how's my form?"));
    assert_eq!(r["structuredContent"]["max_tokens"], 2048);
    let r = s.call("memory_context", json!({"max_tokens": 10}));
    assert_eq!(r["structuredContent"]["max_tokens"], 10);

    // Resources.
    let list = s.request("resources/list", json!({}))["result"]["resources"].clone();
    let uris: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["memory://index", "memory://user_role"]);
    let r = s.request("resources/read", json!({"uri": "memory://index"}));
    let index_text = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        index_text,
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap()
    );
    let r = s.request("resources/read", json!({"uri": "memory://user_role"}));
    assert_eq!(
        r["result"]["contents"][0]["text"].as_str().unwrap(),
        std::fs::read_to_string(dir.join("user_role.md")).unwrap()
    );
    let r = s.request("resources/read", json!({"uri": "memory://nobody"}));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no memory with key `nobody`"),
        "{r}"
    );

    // Errors are tool results with the CLI's message, and nothing is written.
    let mut bad = role_args();
    bad["key"] = json!("Bad Key");
    let r = s.call("remember", bad);
    assert!(is_error(&r), "{r}");
    let cli = run(memdir(&dir).args([
        "write",
        "Bad Key",
        "--name",
        "Role",
        "--description",
        "d",
        "--type",
        "user",
        "--body",
        "b",
    ]));
    assert_eq!(cli.status.code(), Some(1));
    assert_eq!(text(&r), stderr(&cli).trim_end(), "same message as the CLI");
    assert!(
        text(&r).contains("hint: use snake_case keys"),
        "{}",
        text(&r)
    );
    assert_eq!(r["structuredContent"]["error"]["exit_code"], 1);

    let mut secret = role_args();
    secret["key"] = json!("reference_keys");
    secret["body"] = json!("the key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD");
    let r = s.call("remember", secret);
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).starts_with("error: refused to store reference_keys"),
        "{}",
        text(&r)
    );
    assert!(!dir.join("reference_keys.md").exists());

    let r = s.call("read_memory", json!({"key": "user_nobody"}));
    assert!(is_error(&r));
    // spec/mcp.md#errors: a hint names a tool, never a command the model cannot run.
    assert_eq!(
        text(&r),
        "error: no memory with key `user_nobody`\nhint: `list_memories` shows the keys"
    );
    let r = s.call("edit_memory", json!({"key": "user_nobody", "append": "x"}));
    assert!(is_error(&r));
    assert!(!text(&r).contains("memdir "), "{}", text(&r));
    let r = s.call("forget", json!({"key": "user_nobody"}));
    assert!(is_error(&r));
    let r = s.call("remember", json!({"key": "user_x"}));
    assert!(is_error(&r), "missing arguments are a tool error: {r}");
    let r = s.call("recall", json!({"query": "  "}));
    assert!(is_error(&r));
    assert!(text(&r).contains("the query is empty"));
    let r = s.call("note", json!({"type": "x", "fields": {"ts": "now"}}));
    assert!(is_error(&r), "{r}");
    // spec/timeline-format.md#lines: one event is at most 1 MiB
    let r = s.call(
        "note",
        json!({"type": "big", "fields": {"text": "n".repeat(1024 * 1024)}}),
    );
    assert!(is_error(&r), "an oversized note was accepted");
    assert!(
        text(&r).contains("over the limit of 1048576 bytes per timeline event"),
        "{}",
        text(&r)
    );
    let r = s.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert!(r.get("error").is_some() || is_error(&r["result"]), "{r}");

    // forget deletes the file, logs the event and updates the index.
    let r = s.call("forget", json!({"key": "user_role", "reason": "moved on"}));
    assert!(!is_error(&r), "{r}");
    assert!(!dir.join("user_role.md").exists());
    let day = std::fs::read_to_string(dir.join("timeline/2026-04-14.jsonl")).unwrap();
    assert!(day.contains(r#""type":"forgot","key":"user_role","reason":"moved on""#));
    assert!(
        !std::fs::read_to_string(dir.join("MEMORY.md"))
            .unwrap()
            .contains("user_role")
    );

    // Still alive after all the errors.
    let r = s.call("list_memories", json!({}));
    assert_eq!(text(&r), "no memories");
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("memdir mcp: serving"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_person_editing_a_file_is_seen_by_the_client() {
    // spec/mcp.md#notifications
    let (_tmp, dir) = example_copy();
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let r = s.request("resources/subscribe", json!({"uri": "memory://user_role"}));
    assert!(r.get("error").is_none(), "{r}");
    let r = s.request("resources/subscribe", json!({"uri": "memory://index"}));
    assert!(r.get("error").is_none(), "{r}");
    let before = s.request("resources/read", json!({"uri": "memory://user_role"}));
    let before = before["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    // No pause: the watch is in place before the server answers `initialize`.
    // Edit like an editor: write a temp file, rename it over the memory.
    let edited = before.replace("5-a-side", "7-a-side");
    assert_ne!(edited, before);
    let swp = dir.join(".user_role.md.swp");
    std::fs::write(&swp, &edited).unwrap();
    std::fs::rename(&swp, dir.join("user_role.md")).unwrap();
    assert!(
        s.wait_notification(Duration::from_secs(10), |n| {
            n["method"] == "notifications/resources/updated"
                && n["params"]["uri"] == "memory://user_role"
        }),
        "no resources/updated for memory://user_role"
    );
    let after = s.request("resources/read", json!({"uri": "memory://user_role"}));
    assert_eq!(after["result"]["contents"][0]["text"], json!(edited));
    let r = s.call("read_memory", json!({"key": "user_role"}));
    assert!(text(&r).contains("7-a-side"));

    // A new file: the list changed, and the index (rebuilt by the watcher) too.
    let new = "---\nname: Boots\ndescription: wears size 42 boots\ntype: user\ncreated: 2026-04-14\nupdated: 2026-04-14\n---\n\nSize 42.\n";
    std::fs::write(dir.join("user_boots.md"), new).unwrap();
    assert!(
        s.wait_notification(Duration::from_secs(10), |n| {
            n["method"] == "notifications/resources/list_changed"
        }),
        "no resources/list_changed after a new file"
    );
    assert!(
        s.wait_notification(Duration::from_secs(10), |n| {
            n["method"] == "notifications/resources/updated"
                && n["params"]["uri"] == "memory://index"
        }),
        "no resources/updated for memory://index"
    );
    let list = s.request("resources/list", json!({}));
    assert!(list.to_string().contains("memory://user_boots"), "{list}");
    let index = s.request("resources/read", json!({"uri": "memory://index"}));
    assert!(
        index.to_string().contains("[Boots](user_boots.md)"),
        "{index}"
    );

    // Not subscribed: no `updated` for that URI, though the list still changes.
    std::fs::remove_file(dir.join("user_boots.md")).unwrap();
    assert!(s.wait_notification(Duration::from_secs(10), |n| {
        n["method"] == "notifications/resources/list_changed"
    }));
    assert!(
        !s.notifications
            .iter()
            .any(|n| n["params"]["uri"] == "memory://user_boots")
    );
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn two_servers_on_one_directory_lose_nothing() {
    // spec/mcp.md#concurrency (the engine's cross-process lock)
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let n = 12;
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut s = Server::start(&dir, &[]);
                s.initialize();
                for i in 0..n {
                    let r = s.call(
                        "remember",
                        json!({
                            "key": format!("project_w{w}_{i}"),
                            "name": format!("Item {w}-{i}"),
                            "description": format!("written by server {w}"),
                            "type": "project",
                            "body": format!("body {w} {i}"),
                        }),
                    );
                    assert!(!is_error(&r), "{r}");
                    let r = s.call("note", json!({"type": "step", "fields": {"w": w, "i": i}}));
                    assert!(!is_error(&r), "{r}");
                }
                let (code, err) = s.finish();
                assert_eq!(code, Some(0), "{err}");
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    for w in 0..2 {
        for i in 0..n {
            let key = format!("project_w{w}_{i}");
            assert!(dir.join(format!("{key}.md")).is_file(), "{key}");
            assert!(
                index.contains(&format!("({key}.md)")),
                "{key} missing from index"
            );
        }
    }
    let day = std::fs::read_to_string(dir.join("timeline/2026-04-14.jsonl")).unwrap();
    assert_eq!(day.lines().count(), 2 * n);
    let check = run(memdir(&dir).arg("check"));
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
}

#[test]
fn manifest_sets_the_budget_and_mode() {
    // spec/mcp.md#configuration
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let dir = agent.join("memory");
    std::fs::create_dir_all(&agent).unwrap();

    // The three.ws layout: agent/manifest.json next to agent/memory/.
    std::fs::write(
        agent.join("manifest.json"),
        r#"{"name":"coach","memory":{"mode":"local","maxTokens":777}}"#,
    )
    .unwrap();
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let r = s.call("memory_context", json!({}));
    assert_eq!(r["structuredContent"]["max_tokens"], 777);
    drop(s);

    // --max-tokens wins over the manifest.
    let mut s = Server::start(&dir, &["--max-tokens", "300"]);
    s.initialize();
    let r = s.call("memory_context", json!({}));
    assert_eq!(r["structuredContent"]["max_tokens"], 300);
    drop(s);

    // A sync mode: the directory is served and writes are pushed with the manifest's
    // provider (spec/mcp.md#sync); here the folder provider has no folder, so the
    // push fails, the write stands and stderr says why.
    std::fs::write(
        agent.join("manifest.json"),
        r#"{"memory":{"mode":"ipfs","provider":"folder"}}"#,
    )
    .unwrap();
    let mut cmd = memdir(&dir);
    cmd.arg("mcp").env_remove("MEMDIR_FOLDER");
    let mut s = Server::spawn(cmd);
    s.initialize();
    assert!(!is_error(&s.call("remember", role_args())));
    assert!(dir.join("user_role.md").is_file());
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("mode ipfs: writes are pushed"), "{err}");
    assert!(err.contains("saved locally but was not pushed"), "{err}");

    // An unknown mode too.
    std::fs::write(
        agent.join("manifest.json"),
        r#"{"memory":{"mode":"cloud"}}"#,
    )
    .unwrap();
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    assert_eq!(text(&s.call("list_memories", json!({}))).lines().count(), 1);
    let (_, err) = s.finish();
    assert!(err.contains("unknown memory mode `cloud`"), "{err}");

    // `none`: an in-memory store; nothing reaches the disk.
    let other = tmp.path().join("none.json");
    std::fs::write(&other, r#"{"memory":{"mode":"none","maxTokens":512}}"#).unwrap();
    let ghost = tmp.path().join("ghost");
    let mut s = Server::start(&ghost, &["--manifest", other.to_str().unwrap()]);
    s.initialize();
    let r = s.call("remember", role_args());
    assert!(!is_error(&r), "{r}");
    let r = s.call("read_memory", json!({"key": "user_role"}));
    assert!(text(&r).contains("Plays weekly"));
    let r = s.call("memory_context", json!({}));
    assert_eq!(r["structuredContent"]["max_tokens"], 512);
    assert!(text(&r).contains("[Role](user_role.md)"));
    let r = s.request("resources/read", json!({"uri": "memory://user_role"}));
    assert!(r.to_string().contains("Plays weekly"), "{r}");
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!ghost.exists(), "mode none wrote to disk");

    // An explicit manifest that cannot be read is an error before serving.
    std::fs::write(&other, "{not json").unwrap();
    let out = run(memdir(&dir).args(["mcp", "--manifest", other.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not valid JSON"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

#[test]
fn garbage_on_stdin_does_not_crash_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let stdin = s.stdin.as_mut().unwrap();
    stdin.write_all(b"this is not json\n").unwrap();
    s.send(&json!({"jsonrpc": "2.0", "id": 999, "method": "no/such/method"}));
    let r = s.call("remember", role_args());
    assert!(!is_error(&r), "{r}");
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn filters_on_recall_context_and_list() {
    // spec/mcp.md#filters, spec/ranking.md#filters
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    assert!(!is_error(&s.call("remember", role_args())));
    let goal = json!({
        "key": "project_season", "name": "Season goal", "type": "project",
        "description": "training for a 10k race on Saturdays in June",
        "body": "Runs on Saturday mornings before football.", "tags": ["running", "Football"]
    });
    assert!(!is_error(&s.call("remember", goal)));
    let tone = json!({
        "key": "feedback_tone", "name": "Tone", "type": "feedback", "important": true,
        "description": "direct critique", "body": "Lead with the issue."
    });
    assert!(!is_error(&s.call("remember", tone)));
    let keys = |r: &Value, field: &str| -> Vec<String> {
        r["structuredContent"][field]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|m| m["key"].as_str().unwrap().to_string())
            .collect()
    };

    let r = s.call("list_memories", json!({"types": ["project", "feedback"]}));
    assert_eq!(keys(&r, "memories"), ["feedback_tone", "project_season"]);
    let r = s.call("list_memories", json!({"tags": ["football", "running"]}));
    assert_eq!(keys(&r, "memories"), ["project_season"]);
    let r = s.call("list_memories", json!({"important": true}));
    assert_eq!(keys(&r, "memories"), ["feedback_tone"]);
    let r = s.call("list_memories", json!({"min_salience": 0.75}));
    assert_eq!(keys(&r, "memories"), ["feedback_tone", "user_role"]);
    let r = s.call(
        "list_memories",
        json!({"since": "2026-04-14", "until": "2026-04-14"}),
    );
    assert_eq!(keys(&r, "memories").len(), 3);
    let r = s.call("list_memories", json!({"until": "2026-04-13"}));
    assert_eq!(r["structuredContent"]["memories"], json!([]));
    assert_eq!(text(&r), "no memories");

    let r = s.call("recall", json!({"query": "saturday"}));
    assert_eq!(keys(&r, "hits").len(), 2);
    let r = s.call("recall", json!({"query": "saturday", "types": ["user"]}));
    assert_eq!(keys(&r, "hits"), ["user_role"]);
    let all = s.call("recall", json!({"query": "saturday"}));
    let one = s.call("recall", json!({"query": "saturday", "tags": ["running"]}));
    assert_eq!(keys(&one, "hits"), ["project_season"]);
    // Filters leave scores alone.
    let score = |r: &Value, key: &str| {
        r["structuredContent"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["key"] == key)
            .unwrap()["score"]
            .clone()
    };
    assert_eq!(score(&all, "project_season"), score(&one, "project_season"));

    let r = s.call(
        "memory_context",
        json!({"query": "saturday", "types": ["project"]}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(keys(&r, "memories"), ["project_season"]);
    // The index section stays the store's index.
    assert!(text(&r).contains("[Role](user_role.md)"), "{}", text(&r));
    assert!(!text(&r).contains("Plays weekly 5-a-side"), "{}", text(&r));

    // Bad values are errors naming the argument.
    for (tool, args, want) in [
        (
            "list_memories",
            json!({"since": "last week"}),
            "error: since: `last week` is not a date; expected YYYY-MM-DD",
        ),
        (
            "recall",
            json!({"query": "x", "until": "2026-02-30"}),
            "error: until: `2026-02-30` is not a date; expected YYYY-MM-DD",
        ),
        (
            "memory_context",
            json!({"min_salience": 1.5}),
            "error: min_salience: 1.5 is not a salience; expected a number from 0 to 1",
        ),
        (
            "list_memories",
            json!({"types": ["projects"]}),
            "error: unknown type `projects` in the type filter; known types: user, feedback, project, reference, state",
        ),
        (
            "list_memories",
            json!({"since": "2026-04-14", "until": "2026-04-01"}),
            "error: since/until: the since date 2026-04-14 is after the until date 2026-04-01",
        ),
        (
            "recall",
            json!({"query": "x", "tags": [""]}),
            "error: tags: an empty tag in the tag filter",
        ),
    ] {
        let r = s.call(tool, args.clone());
        assert!(is_error(&r), "{tool} {args}: {r}");
        assert_eq!(text(&r).lines().next(), Some(want), "{tool} {args}");
        assert_eq!(r["structuredContent"]["error"]["exit_code"], 2, "{r}");
    }
    let tools = s.request("tools/list", json!({}))["result"]["tools"].clone();
    for t in tools.as_array().unwrap() {
        if ["recall", "memory_context", "list_memories"].contains(&t["name"].as_str().unwrap()) {
            for p in [
                "types",
                "tags",
                "since",
                "until",
                "important",
                "min_salience",
            ] {
                assert!(
                    t["inputSchema"]["properties"].get(p).is_some(),
                    "{} {p}",
                    t["name"]
                );
            }
        }
    }
}

#[test]
fn supersede_expiry_and_include_flags() {
    // spec/mcp.md#filters, spec/ranking.md#superseded-and-expired, spec/cli.md#access-log
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let mk = |key: &str, body: &str, extra: Value| {
        let mut a = json!({
            "key": key, "name": key, "type": "project",
            "description": format!("about {key}"), "body": body
        });
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    assert!(!is_error(
        &s.call("remember", mk("old", "deploys on friday", json!({})))
    ));
    let r = s.call(
        "remember",
        mk("new", "deploys on monday", json!({"supersedes": ["old"]})),
    );
    assert!(!is_error(&r), "{r}");
    let r = s.call(
        "remember",
        mk(
            "promo",
            "deploys promo",
            json!({"valid_until": "2020-01-01"}),
        ),
    );
    assert!(!is_error(&r), "{r}");
    let r = s.call("remember", mk("bad", "x", json!({"valid_until": "soon"})));
    assert!(is_error(&r), "{r}");
    let r = s.call("read_memory", json!({"key": "new"}));
    assert_eq!(r["structuredContent"]["meta"]["supersedes"], json!(["old"]));
    let keys = |r: &Value, field: &str| -> Vec<String> {
        let mut k: Vec<String> = r["structuredContent"][field]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|m| m["key"].as_str().unwrap().to_string())
            .collect();
        k.sort();
        k
    };
    let r = s.call("list_memories", json!({}));
    assert_eq!(keys(&r, "memories"), ["new"]);
    let r = s.call(
        "list_memories",
        json!({"include_superseded": true, "include_expired": true}),
    );
    assert_eq!(keys(&r, "memories"), ["new", "old", "promo"]);
    let m = r["structuredContent"]["memories"].as_array().unwrap();
    let get = |k: &str| m.iter().find(|x| x["key"] == k).unwrap().clone();
    assert_eq!(get("old")["superseded_by"], json!(["new"]));
    assert_eq!(get("promo")["expired"], json!(true));
    assert!(text(&r).contains("[superseded by new]"), "{}", text(&r));
    // read_memory above was logged.
    assert!(get("new")["last_read"].is_string(), "{r}");

    let r = s.call("recall", json!({"query": "deploys"}));
    assert_eq!(keys(&r, "hits"), ["new"]);
    let r = s.call(
        "recall",
        json!({"query": "deploys", "include_superseded": true}),
    );
    assert_eq!(keys(&r, "hits"), ["new", "old"]);
    let r = s.call("memory_context", json!({}));
    assert_eq!(keys(&r, "memories"), ["new"]);
    let r = s.call("memory_context", json!({"include_expired": true}));
    assert_eq!(keys(&r, "memories"), ["new", "promo"]);
    assert!(
        text(&r).contains("## promo [expired after 2020-01-01]"),
        "{}",
        text(&r)
    );
    let r = s.call("list_memories", json!({"include_superseded": "yes"}));
    assert!(is_error(&r), "{r}");

    // spec/cli.md#access-log: no read path changes a memory file or its mtime.
    let stat = || -> Vec<(String, Vec<u8>, std::time::SystemTime)> {
        let mut v: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .map(|p| {
                let m = std::fs::metadata(&p).unwrap().modified().unwrap();
                (p.display().to_string(), std::fs::read(&p).unwrap(), m)
            })
            .collect();
        v.sort();
        v
    };
    let before = stat();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let every = json!({"include_superseded": true, "include_expired": true});
    for k in ["old", "new", "promo"] {
        assert!(!is_error(&s.call("read_memory", json!({"key": k}))));
        assert!(!is_error(&s.call("fetch", json!({"id": k}))));
        let r = s.request("resources/read", json!({"uri": format!("memory://{k}")}));
        assert!(r.get("result").is_some(), "{r}");
    }
    let mut q = every.clone();
    q["query"] = json!("deploys");
    assert!(!is_error(&s.call("recall", q.clone())));
    assert!(!is_error(&s.call("memory_context", q)));
    assert!(!is_error(&s.call("memory_context", every.clone())));
    assert!(!is_error(&s.call("list_memories", every)));
    assert!(
        s.request("resources/list", json!({}))
            .get("result")
            .is_some()
    );
    assert_eq!(stat(), before, "a read changed a memory file or its mtime");
    let log = std::fs::read_to_string(dir.join(".memdir/cache/access.jsonl")).unwrap();
    for via in ["read_memory", "recall", "context", "resource"] {
        assert!(log.contains(&format!(r#""via":"{via}""#)), "{log}");
    }
    let tools = s.request("tools/list", json!({}))["result"]["tools"].clone();
    for t in tools.as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        if ["recall", "memory_context", "list_memories"].contains(&name) {
            for p in ["include_superseded", "include_expired"] {
                assert!(
                    t["inputSchema"]["properties"].get(p).is_some(),
                    "{name} {p}"
                );
            }
        }
        if name == "remember" {
            for p in ["supersedes", "valid_until"] {
                assert!(
                    t["inputSchema"]["properties"].get(p).is_some(),
                    "{name} {p}"
                );
            }
        }
    }
}

// spec/mcp.md#transport: every line that cannot be read as a message gets a JSON-RPC
// parse error (-32700, id null) saying why, and the session goes on: a line that is
// not JSON, one over the size limit (a 60 MB line, a 16 MiB field), one nested too
// deep.
#[test]
fn unreadable_lines_get_a_parse_error_and_the_session_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let expect_error = |s: &mut Server, what: &str, needle: &str| {
        let v = s
            .recv(Instant::now() + WAIT)
            .unwrap_or_else(|| panic!("{what}: no reply within {WAIT:?}"));
        assert_eq!(v["id"], Value::Null, "{what}: {v}");
        assert_eq!(v["error"]["code"], -32700, "{what}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(needle), "{what}: {v}");
    };
    let raw = |s: &mut Server, bytes: &[u8]| {
        let stdin = s.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    };

    raw(&mut s, b"this is not json\n");
    expect_error(&mut s, "not JSON", "not valid JSON");
    raw(&mut s, b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \n");
    expect_error(&mut s, "truncated JSON", "not valid JSON");

    // 60 MB without a newline until the end, written in pieces.
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..60 {
        raw(&mut s, &chunk);
    }
    raw(&mut s, b"\n");
    expect_error(&mut s, "60 MB line", "over the limit");

    // A request whose one field is 16 MiB.
    let mut big = br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"recall","arguments":{"query":""#.to_vec();
    big.extend(std::iter::repeat_n(b'q', 16 << 20));
    big.extend_from_slice(b"\"}}}\n");
    raw(&mut s, &big);
    expect_error(&mut s, "16 MiB field", "over the limit");

    // A request holding a value nested 100,000 deep.
    let depth = 100_000;
    let mut deep = br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"note","arguments":{"type":"x","fields":{"a":"#.to_vec();
    deep.extend(std::iter::repeat_n(b'[', depth));
    deep.extend(std::iter::repeat_n(b']', depth));
    deep.extend_from_slice(b"}}}}\n");
    raw(&mut s, &deep);
    expect_error(&mut s, "100k-deep value", "nested deeper than");

    // The session still works, and nothing of the refused requests was stored.
    let r = s.call("remember", role_args());
    assert!(!is_error(&r), "{r}");
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
}

/// A store of `n` project memories written as files, as a person or another tool
/// would leave them.
fn many_memories(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(
            dir.join(format!("project_item_{i:04}.md")),
            format!(
                "---\nname: Item {i}\ndescription: item number {i}\ntype: project\ncreated: 2026-03-01\nupdated: 2026-03-01\n---\n\nItem {i}.\n"
            ),
        )
        .unwrap();
    }
}

// spec/mcp.md#paging: list_memories returns at most `limit` memories (default 100,
// at most 1000) and a `next_cursor` while more remain; resources/list pages by 200
// with `nextCursor`. Walking the cursors visits every memory once.
#[test]
fn list_memories_and_resources_page_with_cursors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    many_memories(&dir, 250);
    let mut s = Server::start(&dir, &[]);
    s.initialize();

    let r = s.call("list_memories", json!({}));
    assert!(!is_error(&r), "{r}");
    let doc = &r["structuredContent"];
    assert_eq!(doc["memories"].as_array().unwrap().len(), 100);
    assert_eq!(doc["total"], 250);
    let next = doc["next_cursor"].as_str().unwrap().to_string();
    assert!(
        text(&r).ends_with(&format!(
            "… 150 more not shown; call list_memories again with cursor \"{next}\" for the next page\n"
        )),
        "{}",
        text(&r)
    );

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"limit": 60});
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let r = s.call("list_memories", args);
        assert!(!is_error(&r), "{r}");
        pages += 1;
        for m in r["structuredContent"]["memories"].as_array().unwrap() {
            seen.push(m["key"].as_str().unwrap().to_string());
        }
        match r["structuredContent"]["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => {
                assert!(!text(&r).contains("more not shown"), "{}", text(&r));
                break;
            }
        }
    }
    assert_eq!(pages, 5);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 250);

    let r = s.call("list_memories", json!({"limit": 1000}));
    assert_eq!(
        r["structuredContent"]["memories"].as_array().unwrap().len(),
        250
    );
    assert!(r["structuredContent"].get("next_cursor").is_none(), "{r}");

    for (args, want) in [
        (
            json!({"limit": 0}),
            "error: limit: 0 is out of range; expected 1 to 1000",
        ),
        (
            json!({"limit": 1001}),
            "error: limit: 1001 is out of range; expected 1 to 1000",
        ),
        (
            json!({"cursor": "page2"}),
            "error: cursor: `page2` is not a cursor memdir returned; pass the next cursor of the previous page as it was, or omit it for the first page",
        ),
    ] {
        let r = s.call("list_memories", args.clone());
        assert!(is_error(&r), "{args}: {r}");
        assert_eq!(text(&r).lines().next(), Some(want), "{args}");
    }

    // resources/list: the index and 250 memories, in pages of 200.
    let first = s.request("resources/list", json!({}))["result"].clone();
    assert_eq!(first["resources"].as_array().unwrap().len(), 200);
    assert_eq!(first["resources"][0]["uri"], "memory://index");
    let next = first["nextCursor"].as_str().unwrap();
    let second = s.request("resources/list", json!({"cursor": next}))["result"].clone();
    assert_eq!(second["resources"].as_array().unwrap().len(), 51);
    assert!(second.get("nextCursor").is_none(), "{second}");
    let bad = s.request("resources/list", json!({"cursor": "nope"}));
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cursor: `nope` is not a cursor memdir returned"),
        "{bad}"
    );
}

// spec/mcp.md#errors: arguments a tool does not take are refused, naming them;
// max_tokens outside 1..=1000000 is refused naming the range; an unknown type is an
// error listing the known types.
#[test]
fn unknown_arguments_and_out_of_range_values_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    assert!(!is_error(&s.call("remember", role_args())));
    for (tool, args, want) in [
        (
            "list_memories",
            json!({"typ": "user"}),
            "error: invalid arguments for `list_memories`: unknown argument `typ`; `list_memories` takes ",
        ),
        (
            "recall",
            json!({"query": "x", "limt": 3, "flavour": 1}),
            "error: invalid arguments for `recall`: unknown arguments `limt`, `flavour`; `recall` takes ",
        ),
        (
            "remember",
            json!({"key": "user_role", "name": "Role", "description": "d", "type": "user", "body": "b", "importance": true}),
            "error: invalid arguments for `remember`: unknown argument `importance`",
        ),
        (
            "memory_context",
            json!({"max_tokens": 0}),
            "error: max_tokens: 0 is out of range; expected 1 to 1000000",
        ),
        (
            "memory_context",
            json!({"max_tokens": 1_000_000_000_000_000u64}),
            "error: max_tokens: 1000000000000000 is out of range; expected 1 to 1000000",
        ),
        (
            "recall",
            json!({"query": "x", "limit": 0}),
            "error: limit: 0 is out of range; expected 1 to 1000",
        ),
        (
            "related",
            json!({"key": "user_role", "direction": "in", "dept": 2}),
            "error: invalid arguments for `related`: unknown argument `dept`",
        ),
        (
            "list_memories",
            json!({"type": "friend"}),
            "error: unknown type `friend` in the type filter; known types: user, feedback, project, reference, state",
        ),
    ] {
        let r = s.call(tool, args.clone());
        assert!(is_error(&r), "{tool} {args}: {r}");
        let first = text(&r).lines().next().unwrap_or_default().to_string();
        assert!(first.starts_with(want), "{tool} {args}: {first}");
        assert_eq!(r["structuredContent"]["error"]["exit_code"], 2, "{r}");
    }
    let r = s.call("memory_context", json!({"max_tokens": 1_000_000}));
    assert!(!is_error(&r), "{r}");
}

// spec/mcp.md#schemas: every input schema uses only the standard JSON Schema formats
// and no `type` arrays (an optional argument is omitted, not null); no tool declares
// an output schema (spec/mcp.md#tools: the list stays small), and each tool's
// structured content has the fields spec/mcp.md documents; memory_context states its
// default budget and recall how it matches (spec/mcp.md#tools).
#[test]
fn tool_schemas_are_portable() {
    const STANDARD: [&str; 19] = [
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    ];
    fn walk(tool: &str, path: &str, v: &Value, bad: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if let Some(f) = o.get("format").and_then(Value::as_str)
                    && !STANDARD.contains(&f)
                {
                    bad.push(format!("{tool}{path}: format {f}"));
                }
                if let Some(t @ Value::Array(_)) = o.get("type") {
                    bad.push(format!("{tool}{path}: type {t}"));
                }
                if o.get("type").and_then(Value::as_str) == Some("null") {
                    bad.push(format!("{tool}{path}: a null alternative"));
                }
                for (k, v) in o {
                    walk(tool, &format!("{path}/{k}"), v, bad);
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(tool, &format!("{path}/{i}"), v, bad);
                }
            }
            _ => {}
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let tools = s.request("tools/list", json!({}))["result"]["tools"].clone();
    let mut bad = Vec::new();
    for t in tools.as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        walk(name, "", &t["inputSchema"], &mut bad);
        assert!(t.get("outputSchema").is_none(), "{name}: {t}");
        assert!(t["inputSchema"].get("$schema").is_none(), "{name}: {t}");
    }
    assert_eq!(bad, Vec::<String>::new());

    // The description of memory_context states the default budget this server uses.
    let described = |tools: &Value| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "memory_context")
            .unwrap()["description"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(described(&tools).contains("(max_tokens; 2048 tokens by default)"));
    let mut other = Server::start(&tmp.path().join("other"), &["--max-tokens", "500"]);
    other.initialize();
    let tools500 = other.request("tools/list", json!({}))["result"]["tools"].clone();
    assert!(described(&tools500).contains("(max_tokens; 500 tokens by default)"));
    let recall = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "recall")
        .unwrap()["description"]
        .as_str()
        .unwrap();
    assert!(recall.contains("by words (stemmed"), "{recall}");

    // The structured content of each tool has the fields spec/mcp.md#tools documents.
    for (tool, args, fields) in [
        ("remember", role_args(), &["key", "outcome"][..]),
        ("recall", json!({"query": "football"}), &["query", "hits"]),
        (
            "read_memory",
            json!({"key": "user_role"}),
            &["key", "meta", "body"],
        ),
        (
            "note",
            json!({"type": "user_said", "fields": {"text": "hi"}}),
            &["ts", "type"],
        ),
        ("memory_context", json!({}), &["text", "memories"]),
        ("list_memories", json!({}), &["memories", "total"]),
        (
            "edit_memory",
            json!({"key": "user_role", "append": "more"}),
            &["key", "outcome"],
        ),
        ("search", json!({"query": "football"}), &["results"]),
        (
            "fetch",
            json!({"id": "user_role"}),
            &["id", "title", "text", "url"],
        ),
        (
            "rename_memory",
            json!({"key": "user_role", "new_key": "user_team"}),
            &["from", "to", "event"],
        ),
        ("recent_activity", json!({}), &["events", "more"]),
        (
            "related",
            json!({"key": "user_team", "depth": 2}),
            &["start", "nodes", "edges", "cut"],
        ),
        ("forget", json!({"key": "user_team"}), &["key", "event"]),
    ] {
        let r = s.call(tool, args);
        assert!(!is_error(&r), "{tool}: {r}");
        for k in fields {
            assert!(
                r["structuredContent"].get(k).is_some(),
                "{tool}: {k} missing in {r}"
            );
        }
    }
}

#[test]
fn edit_rename_activity_search_and_fetch() {
    // spec/mcp.md#more-tools
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let mut args = role_args();
    args["body"] = json!("Plays 5-a-side.\n\n## Why\n\nold reason\n\n## Team\n\nBoca");
    assert!(!is_error(&s.call("remember", args)));
    let file = dir.join("user_role.md");

    let r = s.call(
        "edit_memory",
        json!({"key": "user_role", "replace_section": {"heading": "Why", "content": "new reason"},
               "append": "- also futsal", "description": "plays twice a week"}),
    );
    assert_eq!(text(&r), "updated user_role", "{r}");
    assert_eq!(
        r["structuredContent"],
        json!({"key": "user_role", "outcome": "updated"})
    );
    let body = std::fs::read_to_string(&file).unwrap();
    assert!(
        body.ends_with("## Why\n\nnew reason\n\n## Team\n\nBoca\n- also futsal\n"),
        "{body}"
    );
    assert!(body.contains("description: plays twice a week") && body.contains("- football"));

    // A failing edit: an error naming the key and the heading; the file untouched.
    let before = std::fs::read(&file).unwrap();
    for (args, want) in [
        (
            json!({"key": "user_role", "replace_section": {"heading": "When", "content": "x"}}),
            "error: cannot edit `user_role`: no section headed `When`; its headings are `Why`, `Team`",
        ),
        (
            json!({"key": "user_role", "find_replace": {"find": "Boca", "replace": "River", "expected_count": 2}}),
            "error: cannot edit `user_role`: the text to find (`Boca`) occurs once, expected 2",
        ),
        (
            json!({"key": "user_role"}),
            "error: nothing to edit in `user_role`: give at least one change",
        ),
        (
            json!({"key": "user_nobody", "append": "x"}),
            "error: no memory with key `user_nobody`",
        ),
        (
            json!({"key": "user_role", "append": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}),
            "error: refused to store user_role",
        ),
        (
            json!({"key": "user_role", "find_replace": {"find": "a", "replace": "b", "count": 1}}),
            "error: invalid arguments for `edit_memory`: unknown field `count`",
        ),
        (
            json!({"key": "user_role", "appendix": "x"}),
            "error: invalid arguments for `edit_memory`: unknown argument `appendix`",
        ),
    ] {
        let r = s.call("edit_memory", args.clone());
        assert!(is_error(&r), "{args}: {r}");
        assert!(text(&r).starts_with(want), "{args}: {}", text(&r));
        assert_eq!(std::fs::read(&file).unwrap(), before, "{args}");
    }
    let r = s.call(
        "edit_memory",
        json!({"key": "user_role", "find_replace": {"find": "Boca", "replace": "River", "expected_count": 1}}),
    );
    assert_eq!(text(&r), "updated user_role");

    // search / fetch: one text item holding the JSON document, also as structured content.
    let r = s.call("search", json!({"query": "futsal"}));
    assert_eq!(r["content"].as_array().unwrap().len(), 1);
    let doc: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(
        doc,
        json!({"results": [{"id": "user_role", "title": "Role", "url": "memory://user_role"}]})
    );
    assert_eq!(r["structuredContent"], doc);
    let r = s.call("fetch", json!({"id": "user_role"}));
    let doc: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(doc["id"], "user_role");
    assert_eq!(doc["title"], "Role");
    assert_eq!(doc["url"], "memory://user_role");
    assert!(doc["text"].as_str().unwrap().contains("River"));
    assert_eq!(doc["metadata"]["type"], "user");
    assert_eq!(r["structuredContent"], doc);
    let r = s.call("fetch", json!({"id": "nobody"}));
    assert!(is_error(&r) && text(&r).contains("no memory with key `nobody`"));

    // rename
    let r = s.call(
        "rename_memory",
        json!({"key": "user_role", "new_key": "user_football"}),
    );
    assert_eq!(text(&r), "renamed user_role to user_football", "{r}");
    assert!(!file.exists() && dir.join("user_football.md").exists());
    assert!(
        std::fs::read_to_string(dir.join("MEMORY.md"))
            .unwrap()
            .contains("(user_football.md)")
    );
    for (args, want) in [
        (
            json!({"key": "user_football", "new_key": "Bad Key"}),
            "error: key `Bad Key` must start",
        ),
        (
            json!({"key": "user_gone", "new_key": "user_x"}),
            "error: no memory with key `user_gone`",
        ),
        (
            json!({"key": "user_football", "new_key": "user_football"}),
            "error: cannot rename `user_football` to itself",
        ),
    ] {
        let r = s.call("rename_memory", args.clone());
        assert!(is_error(&r) && text(&r).starts_with(want), "{args}: {r}");
    }

    // recent_activity: newest first, bounded, filtered.
    for i in 0..3 {
        s.call("note", json!({"type": "user_said", "fields": {"i": i}}));
    }
    let r = s.call("recent_activity", json!({"limit": 2}));
    let evs = r["structuredContent"]["events"].as_array().unwrap();
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0]["i"], 2);
    assert_eq!(evs[1]["i"], 1);
    assert_eq!(r["structuredContent"]["more"], true);
    let r = s.call("recent_activity", json!({"types": ["renamed"]}));
    let evs = r["structuredContent"]["events"].as_array().unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0]["from"], "user_role");
    assert_eq!(evs[0]["to"], "user_football");
    let r = s.call("recent_activity", json!({"since": "2030-01-01"}));
    assert_eq!(text(&r), "no events");
    let r = s.call("recent_activity", json!({"limit": 1001}));
    assert!(text(&r).contains("limit: 1001 is out of range; expected 1 to 1000"));
    let r = s.call("recent_activity", json!({"since": "yesterday"}));
    assert!(is_error(&r) && text(&r).contains("since:"), "{r}");

    // related: the graph walk (spec/mcp.md#related), read-only, within a budget.
    let r = s.call(
        "remember",
        json!({"key": "org_acme", "name": "Acme", "description": "a company", "type": "reference", "body": "- ceo:: [[user_football]]"}),
    );
    assert!(!is_error(&r), "{r}");
    let r = s.call("related", json!({"key": "user_football"}));
    assert!(!is_error(&r), "{r}");
    let doc = &r["structuredContent"];
    assert_eq!(doc["nodes"][1]["key"], "org_acme", "{r}");
    assert_eq!(doc["nodes"][1]["path"][0]["incoming"], true, "{r}");
    assert_eq!(doc["edges"][0]["rel"], "ceo");
    assert!(text(&r).contains("org_acme -ceo-> user_football"), "{r}");
    let r = s.call(
        "related",
        json!({"key": "user_football", "direction": "out"}),
    );
    assert_eq!(
        r["structuredContent"]["nodes"].as_array().unwrap().len(),
        1,
        "{r}"
    );
    let r = s.call("related", json!({"key": "user_football", "max_tokens": 5}));
    assert_eq!(r["structuredContent"]["cut"], 1, "{r}");
    for (args, want) in [
        (
            json!({"key": "user_football", "depth": 4}),
            "depth: 4 is out of range; expected 1 to 3",
        ),
        (
            json!({"key": "user_football", "direction": "up"}),
            "direction: must be in, out or both",
        ),
        (
            json!({"key": "user_football", "rel": "Bad Rel"}),
            "rel: `Bad Rel` is not a snake_case relation",
        ),
        (
            json!({"key": "nobody"}),
            "error: no memory with key `nobody`",
        ),
    ] {
        let r = s.call("related", args.clone());
        assert!(is_error(&r) && text(&r).contains(want), "{args}: {r}");
    }
}

#[test]
fn prompts_template_and_completion() {
    // spec/mcp.md#prompts
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    let init = s.initialize();
    assert!(init["capabilities"]["prompts"].is_object(), "{init}");
    assert!(init["capabilities"]["completions"].is_object(), "{init}");
    for i in 0..120 {
        let mut a = role_args();
        a["key"] = json!(format!("user_{i:03}"));
        assert!(!is_error(&s.call("remember", a)));
    }
    let mut a = role_args();
    a["key"] = json!("project_x");
    a["type"] = json!("project");
    s.call("remember", a);

    let t = s.request("resources/templates/list", json!({}));
    assert_eq!(
        t["result"]["resourceTemplates"][0]["uriTemplate"], "memory://{key}",
        "{t}"
    );
    let complete = |s: &mut Server, value: &str| {
        s.request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "memory://{key}"},
                   "argument": {"name": "key", "value": value}}),
        )["result"]["completion"]
            .clone()
    };
    let c = complete(&mut s, "user_");
    assert_eq!(c["values"].as_array().unwrap().len(), 100);
    assert_eq!(c["values"][0], "user_000");
    assert_eq!(c["total"], 120);
    assert_eq!(c["hasMore"], true);
    let c = complete(&mut s, "proj");
    assert_eq!(c["values"], json!(["project_x"]));
    assert_eq!(c["hasMore"], false);
    let r = s.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "memory://{nope}"},
               "argument": {"name": "key", "value": ""}}),
    );
    assert!(r.get("error").is_some(), "{r}");

    let r = s.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "review_memories"},
               "argument": {"name": "type", "value": "p"}}),
    );
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["project"]),
        "{r}"
    );

    let p = s.request("prompts/list", json!({}));
    let names: Vec<&str> = p["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["remember_conversation", "review_memories"]);
    let g = s.request(
        "prompts/get",
        json!({"name": "remember_conversation", "arguments": {"focus": "the league"}}),
    );
    let text = g["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("Concentrate on: the league") && text.contains("edit_memory"));
    let g = s.request(
        "prompts/get",
        json!({"name": "review_memories", "arguments": {"type": "project"}}),
    );
    let text = g["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("Memories of type project (1):\n- project_x (project, updated"),
        "{text}"
    );
    assert!(text.contains("forget") && text.contains("rename_memory"));
    let g = s.request("prompts/get", json!({"name": "review_memories"}));
    let text = g["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Memories (121)") && !text.contains("more not listed"));
    for bad in [
        json!({"name": "nope"}),
        json!({"name": "review_memories", "arguments": {"kind": "x"}}),
        json!({"name": "review_memories", "arguments": {"type": "friend"}}),
    ] {
        let r = s.request("prompts/get", bad.clone());
        assert!(r.get("error").is_some(), "{bad}: {r}");
    }
}

#[test]
fn state_tools_and_sessions() {
    // spec/mcp.md#state-and-sessions
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let r = s.call("get_state", json!({"key": "mood"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["found"], false);
    let r = s.call("set_state", json!({"key": "mood", "value": "calm"}));
    assert_eq!(text(&r), "created state mood");
    assert_eq!(r["structuredContent"]["outcome"], "created");
    let r = s.call("get_state", json!({"key": "mood"}));
    assert_eq!(text(&r), "calm");
    assert_eq!(
        r["structuredContent"]["entries"][0]["file_key"],
        "state_mood"
    );
    let r = s.call("get_state", json!({}));
    assert_eq!(text(&r), "mood: calm");
    // Read-only: refused with the CLI's message, nothing changed.
    let f = dir.join("state_mood.md");
    let t = std::fs::read_to_string(&f).unwrap();
    std::fs::write(
        &f,
        t.replace("type: state\n", "type: state\nread_only: true\n"),
    )
    .unwrap();
    let r = s.call("set_state", json!({"key": "mood", "value": "angry"}));
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).starts_with("error: state `mood` is read-only"),
        "{r}"
    );
    assert!(std::fs::read_to_string(&f).unwrap().ends_with("calm\n"));
    // Unknown arguments are refused, as for every tool.
    let r = s.call("set_state", json!({"key": "k", "value": "v", "extra": 1}));
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("unknown argument `extra`"), "{r}");
    assert!(!dir.join("state_k.md").exists());
    let r = s.call(
        "remember",
        json!({"key": "k", "name": "n", "description": "d", "type": "project", "body": "b",
               "summarizes": {"session": "s1", "until": "x"}}),
    );
    assert!(is_error(&r), "{r}");
    // note's session argument, the transcript, and remember with summarizes.
    for i in 0..3 {
        let r = s.call(
            "note",
            json!({"type": "user_said", "fields": {"text": format!("t{i}")}, "session": "s1"}),
        );
        assert_eq!(r["structuredContent"]["session"], "s1", "{r}");
    }
    let r = s.call("session_transcript", json!({"session": "s1"}));
    assert_eq!(r["structuredContent"]["events"], 3);
    assert!(text(&r).starts_with("# Session s1 (3 events)\n"));
    let r = s.call("session_transcript", json!({"session": "nope"}));
    assert!(is_error(&r));
    let r = s.call(
        "remember",
        json!({"key": "project_s1", "name": "S1", "description": "summary", "type": "project",
               "body": "three turns", "summarizes": {"session": "s1", "through": "not a time"}}),
    );
    assert!(is_error(&r));
    assert!(text(&r).starts_with("error: summarizes.through:"), "{r}");
    let r = s.call(
        "remember",
        json!({"key": "project_s1", "name": "S1", "description": "summary", "type": "project",
               "body": "three turns", "summarizes": {"session": "s1"}}),
    );
    assert_eq!(text(&r), "created project_s1", "{r}");
    let t = std::fs::read_to_string(dir.join("project_s1.md")).unwrap();
    assert!(t.contains("summarizes:\n  session: s1\n"), "{t}");
    let r = s.call("memory_context", json!({"max_tokens": 2000}));
    assert!(!text(&r).contains("\"t1\""), "{}", text(&r));
    assert!(text(&r).contains("\"type\":\"compacted\""));
}

// spec/ranking.md#hybrid-recall, spec/mcp.md: the MCP recall result says which mode
// ran and why it fell back; a fallback is never a tool error.
#[cfg(feature = "sync")]
#[test]
fn recall_says_hybrid_or_keyword_with_embeddings() {
    use crate::embed::{Behaviour, configure, serve};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let coffee = json!({
        "key": "caroline_mornings", "name": "Caroline's mornings", "type": "user",
        "description": "Caroline's mornings",
        "body": "Caroline always starts her day with a flat white."
    });
    assert!(!is_error(&s.call("remember", coffee)));
    let r = s.call("recall", json!({"query": "espresso"}));
    assert!(r["structuredContent"].get("mode").is_none(), "{r}");
    assert_eq!(r["structuredContent"]["hits"], json!([]));

    let good = serve(Behaviour::Good);
    configure(&dir, &good.url, "");
    let r = s.call("recall", json!({"query": "espresso"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["mode"], "hybrid", "{r}");
    assert_eq!(
        r["structuredContent"]["hits"][0]["key"],
        "caroline_mornings"
    );

    let bad = serve(Behaviour::ServerError);
    configure(&dir, &bad.url, "");
    let r = s.call("recall", json!({"query": "espresso"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["mode"], "keyword", "{r}");
    assert!(
        r["structuredContent"]["fallback"]
            .as_str()
            .unwrap()
            .contains("500")
    );
    assert!(text(&r).contains("warning: embeddings unavailable"), "{r}");
}

// spec/ranking.md#hybrid-recall, spec/mcp.md: memory_context with a query says which
// mode ran, like recall; the block's text stays the block.
#[cfg(feature = "sync")]
#[test]
fn memory_context_says_hybrid_or_keyword_with_embeddings() {
    use crate::embed::{Behaviour, configure, serve};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let coffee = json!({
        "key": "caroline_mornings", "name": "Caroline's mornings", "type": "user",
        "description": "Caroline's mornings",
        "body": "Caroline always starts her day with a flat white."
    });
    assert!(!is_error(&s.call("remember", coffee)));
    let r = s.call("memory_context", json!({"query": "espresso"}));
    assert!(r["structuredContent"].get("mode").is_none(), "{r}");

    let good = serve(Behaviour::Good);
    configure(&dir, &good.url, "");
    let r = s.call("memory_context", json!({"query": "espresso"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["mode"], "hybrid", "{r}");
    assert_eq!(
        r["structuredContent"]["memories"][0]["key"],
        "caroline_mornings"
    );
    // Without a query there is no ranking to report.
    let r = s.call("memory_context", json!({}));
    assert!(r["structuredContent"].get("mode").is_none(), "{r}");

    let bad = serve(Behaviour::ServerError);
    configure(&dir, &bad.url, "");
    let r = s.call("memory_context", json!({"query": "espresso"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["mode"], "keyword", "{r}");
    assert!(
        r["structuredContent"]["fallback"]
            .as_str()
            .unwrap()
            .contains("500")
    );
    assert_eq!(text(&r), r["structuredContent"]["text"].as_str().unwrap());
}

// spec/ranking.md#hybrid-recall: `memdir mcp` embeds the memories its tools write in
// the background; the cache ends up holding one vector per memory.
#[cfg(feature = "sync")]
#[test]
fn mcp_embeds_written_memories_in_the_background() {
    use crate::embed::{Behaviour, configure, serve, vector_count};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let good = serve(Behaviour::Good);
    memdir::Memory::open(&dir).unwrap().init().unwrap();
    configure(&dir, &good.url, "batch_size = 4\n");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    for i in 0..9 {
        let r = s.call(
            "remember",
            json!({"key": format!("fact_{i}"), "name": format!("Fact {i}"), "type": "project",
                   "description": format!("fact {i}"), "body": format!("Fact number {i}.")}),
        );
        assert!(!is_error(&r), "{r}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while vector_count(&dir) < 9 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(vector_count(&dir), 9);
    let r = s.call("list_memories", json!({}));
    assert_eq!(r["structuredContent"]["total"], 9);
    let r = s.call("recall", json!({"query": "fact"}));
    assert_eq!(r["structuredContent"]["mode"], "hybrid", "{r}");
    assert!(r["structuredContent"].get("pending").is_none(), "{r}");
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("embeddings"), "{err}");
}

// spec/ranking.md#hybrid-recall: with the endpoint down the tools still answer, by
// keywords, and the background worker says so once on stderr.
#[cfg(feature = "sync")]
#[test]
fn with_the_endpoint_down_mcp_answers_by_keywords() {
    use crate::embed::configure;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    memdir::Memory::open(&dir).unwrap().init().unwrap();
    // A port nothing listens on (127.0.0.1): bind one, then free it. The URL carries
    // userinfo, which no message may show.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    configure(&dir, &format!("http://me:s3cret-pw@127.0.0.1:{port}"), "");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    for i in 0..3 {
        let r = s.call(
            "remember",
            json!({"key": format!("fact_{i}"), "name": format!("Fact {i}"), "type": "project",
                   "description": format!("fact {i}"), "body": format!("Fact number {i}.")}),
        );
        assert!(!is_error(&r), "{r}");
    }
    let r = s.call("recall", json!({"query": "fact"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["mode"], "keyword", "{r}");
    assert_eq!(r["structuredContent"]["hits"].as_array().unwrap().len(), 3);
    let why = r["structuredContent"]["fallback"].as_str().unwrap();
    assert!(why.contains(&format!("http://127.0.0.1:{port}")), "{why}");
    assert!(!why.contains("s3cret"), "{why}");
    let r = s.call("memory_context", json!({"query": "fact"}));
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["mode"], "keyword", "{r}");
    let (code, err) = s.finish();
    assert_eq!(code, Some(0), "{err}");
    // The worker's failures (its first round, then the retries after each write)
    // are logged once, without the userinfo.
    assert_eq!(err.matches("warning: embeddings:").count(), 1, "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

/// The `tools/list` answer as it goes over the wire, in tokens (characters / 4,
/// spec/mcp.md#tools), and the names it lists.
fn tools_list_size(s: &mut Server) -> (usize, Vec<String>) {
    let r = s.request("tools/list", json!({}));
    let text = serde_json::to_string(&r["result"]).unwrap();
    let names = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    (text.chars().count() / 4, names)
}

#[test]
fn the_tool_list_fits_in_4000_tokens_and_lists_sync_only_when_configured() {
    // spec/mcp.md#tools: what every conversation pays for the tool list.
    const LIMIT: usize = 4000;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let (tokens, names) = tools_list_size(&mut s);
    assert!(tokens <= LIMIT, "tools/list is {tokens} tokens");
    assert_eq!(names.len(), 17, "{names:?}");
    for hidden in ["sync", "sync_status"] {
        assert!(
            !names.iter().any(|n| n == hidden),
            "{hidden} listed in mode local"
        );
    }
    // Called anyway, sync says why it cannot run, and sync_status says the mode.
    let r = s.call("sync", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(
        text(&r).starts_with("error: sync is not configured"),
        "{}",
        text(&r)
    );
    let r = s.call("sync_status", json!({}));
    assert!(!is_error(&r), "{r}");
    assert!(text(&r).starts_with("mode: local"), "{}", text(&r));
    drop(s);

    // In a sync mode the sync tools are listed, and the list still fits.
    let mut c = memdir(&dir);
    c.args(["init", "--mode", "ipfs", "--provider", "folder"]);
    let o = run(&mut c);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let (tokens, names) = tools_list_size(&mut s);
    assert!(tokens <= LIMIT, "tools/list is {tokens} tokens with sync");
    assert_eq!(names.len(), 19, "{names:?}");
    assert!(names.iter().any(|n| n == "sync") && names.iter().any(|n| n == "sync_status"));
}

#[test]
fn mcp_help_lists_the_servers_tools() {
    // The tool list of `memdir mcp --help` is the server's (with sync configured, so
    // that every tool is listed).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let o = run(memdir(&dir).args(["mcp", "--help"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let help = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    let start = help.find("Tools: ").expect("a Tools: paragraph") + "Tools: ".len();
    let end = start + help[start..].find(". Resources:").expect("then Resources:");
    let mut in_help: Vec<String> = help[start..end]
        .replace(" (listed only in mode ipfs or encrypted-ipfs)", "")
        .replace(", and ", ", ")
        .split(", ")
        .map(str::to_string)
        .collect();
    in_help.sort();

    let o = run(memdir(&dir).args(["init", "--mode", "ipfs", "--provider", "folder"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut s = Server::start(&dir, &[]);
    s.initialize();
    let (_, mut served) = tools_list_size(&mut s);
    served.sort();
    assert_eq!(in_help, served);
}
