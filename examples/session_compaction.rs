//! An agent session over MCP, compacted: drives `memdir mcp` on its stdio the way an
//! agent's MCP client does. It sets a piece of agent state, notes a conversation
//! turn by turn under one session id, reads the session's budgeted transcript,
//! saves a summary with `remember` + `summarizes` (the agent is the LLM: here the
//! summary is written by hand), and prints the context block afterwards, where the
//! summary stands in for the session's events.
//!
//! ```text
//! cargo build && cargo run --example session_compaction -- target/debug/memdir
//! cargo run --example session_compaction -- target/debug/memdir ./memory   # keep the directory
//! ```
//!
//! tests/session_example.rs runs it against the freshly built binary.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A minimal MCP client: newline-delimited JSON-RPC on a child's stdio.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn start(bin: &Path, dir: &Path) -> std::io::Result<Client> {
        let mut child = Command::new(bin)
            .arg("--dir")
            .arg(dir)
            .arg("mcp")
            // A new directory: create it (only `init` or `--create` does).
            .arg("--create")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut c = Client {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        c.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "session-compaction-example", "version": "0"}
            }),
        )?;
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(c)
    }

    fn send(&mut self, v: &Value) -> std::io::Result<()> {
        writeln!(self.stdin, "{v}")?;
        self.stdin.flush()
    }

    /// Sends a request and reads lines until its response (notifications skipped; a
    /// bounded number of lines, so a misbehaving server cannot loop us forever).
    fn request(&mut self, method: &str, params: Value) -> std::io::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        for _ in 0..10_000 {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                break;
            }
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["id"] == json!(id) {
                return Ok(v);
            }
        }
        Err(std::io::Error::other(format!("no response to {method}")))
    }

    /// Calls a tool; returns its text, or an error carrying the tool's error text.
    fn call(&mut self, tool: &str, args: Value) -> std::io::Result<String> {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if r["result"]["isError"] == json!(true) || r.get("error").is_some() {
            return Err(std::io::Error::other(format!(
                "{tool}: {text}{}",
                r["error"]
            )));
        }
        Ok(text)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the run produced, for the test to check.
pub struct Outcome {
    pub transcript: String,
    pub context_before: String,
    pub context_after: String,
}

/// The session id this example uses.
pub const SESSION: &str = "chat-2026-04-14";

/// Runs the whole loop against the binary `bin` on the directory `dir`.
pub fn run(bin: &Path, dir: &Path) -> std::io::Result<Outcome> {
    let mut c = Client::start(bin, dir)?;
    c.call(
        "set_state",
        json!({"key": "current_task", "value": "help plan the Saturday match"}),
    )?;
    let turns = [
        ("user_said", "Can you help me plan Saturday's 5-a-side?"),
        ("agent_said", "Sure. Who is playing and where?"),
        ("user_said", "Eight of us, at the Riverside pitch, 10:00."),
        (
            "agent_said",
            "Eight is one short of two full teams plus a sub; shall I ask around?",
        ),
        ("user_said", "No, we play four a side this week."),
        ("agent_said", "Four a side it is. Bibs and a ball?"),
        ("user_said", "Tom brings the ball, I bring the bibs."),
        ("agent_said", "Noted. Anything else?"),
        ("user_said", "Remind me to book the pitch by Thursday."),
        ("agent_said", "I will remind you on Wednesday evening."),
    ];
    for (kind, text) in turns {
        c.call(
            "note",
            json!({"type": kind, "fields": {"text": text}, "session": SESSION}),
        )?;
    }
    let context_before = c.call("memory_context", json!({"max_tokens": 2000}))?;
    let transcript = c.call(
        "session_transcript",
        json!({"session": SESSION, "max_tokens": 200}),
    )?;
    // The agent (the LLM) reads the transcript and writes the summary.
    c.call(
        "remember",
        json!({
            "key": "project_saturday_match",
            "name": "Saturday match plan",
            "description": "4-a-side at Riverside, 10:00; pitch to book by Thursday",
            "type": "project",
            "body": "Saturday 10:00 at the Riverside pitch, four a side (eight players).\nTom brings the ball, the user brings bibs.\nRemind the user on Wednesday evening to book the pitch by Thursday.",
            "summarizes": {"session": SESSION}
        }),
    )?;
    let context_after = c.call("memory_context", json!({"max_tokens": 2000}))?;
    Ok(Outcome {
        transcript,
        context_before,
        context_after,
    })
}

#[allow(dead_code)]
fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bin = PathBuf::from(args.next().unwrap_or_else(|| "memdir".into()));
    let (dir, _tmp) = match args.next() {
        Some(d) => (PathBuf::from(d), None),
        None => {
            let tmp = std::env::temp_dir().join(format!("memdir-session-{}", std::process::id()));
            (tmp.clone(), Some(tmp))
        }
    };
    let out = run(&bin, &dir)?;
    println!("== transcript (200 tokens)\n{}\n", out.transcript);
    println!(
        "== context block before compaction\n{}\n",
        out.context_before
    );
    println!("== context block after compaction\n{}", out.context_after);
    if let Some(t) = _tmp {
        let _ = std::fs::remove_dir_all(t);
    }
    Ok(())
}
