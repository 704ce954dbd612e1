//! `memdir mcp` for remote clients and in the sync modes (spec/mcp.md#remote-clients,
//! spec/mcp.md#sync): the token rule of `--http` over real TCP on 127.0.0.1, the
//! Host and Origin checks, a clean stop on SIGTERM, the push that follows a write
//! (with the `folder` provider), the `sync` and `sync_status` tools, and the error
//! when sync is not configured. Real processes; every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

const WAIT: Duration = Duration::from_secs(30);

/// Lines of a child's stream, read on a thread.
fn lines_of(r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A `memdir mcp --http` process and the address it printed.
struct HttpServer {
    child: Child,
    addr: String,
    stderr: mpsc::Receiver<String>,
}

impl HttpServer {
    fn start(mut cmd: Command) -> HttpServer {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start memdir mcp --http");
        let stderr = lines_of(child.stderr.take().unwrap());
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = stderr.recv_timeout(left) else {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server did not say where it listens: {seen:?}");
            };
            if let Some(rest) = line.split(" on http://").nth(1) {
                let addr = rest.split('/').next().unwrap().to_string();
                return HttpServer {
                    child,
                    addr,
                    stderr,
                };
            }
            seen.push(line);
        }
    }

    /// One HTTP/1.1 request over a fresh TCP connection; the status and the whole
    /// response (the connection is closed by `Connection: close`).
    fn post(&self, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
        post_to(&self.addr, headers, body)
    }

    /// Sends SIGTERM and waits (bounded) for the exit code.
    fn terminate(self) -> Option<i32> {
        self.stop().0
    }

    /// Sends SIGTERM, waits (bounded) for the exit code, and gives what the server
    /// wrote on stderr after the line with its address.
    fn stop(mut self) -> (Option<i32>, String) {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                // The reader ends at the end of the stream, which the exit closed.
                let mut lines = Vec::new();
                while let Ok(l) = self
                    .stderr
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                {
                    lines.push(l);
                }
                return (st.code(), lines.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("the server did not stop within {WAIT:?} of SIGTERM");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request to `addr` over a fresh TCP connection; the status and the
/// whole response (the connection is closed by `Connection: close`).
fn post_to(addr: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    // Read until the response holds what we need: an error response is short; a
    // response to initialize is an event stream that ends with the JSON-RPC reply.
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + WAIT;
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&out);
        if text.contains("\"jsonrpc\"") && text.contains("\n\n") && text.contains("\"id\"") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    (status, text)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "memdir-tests", "version": "0"}
    }})
}

// spec/mcp.md#remote-clients: a non-loopback address needs a token; nothing is served
// or created without one.
#[test]
fn http_off_loopback_needs_a_token() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    for addr in ["0.0.0.0:0", "192.0.2.1:8765", "[::]:0"] {
        let o = run(memdir(&dir)
            .env_remove("MEMDIR_MCP_TOKEN")
            .args(["mcp", "--http", addr]));
        assert_eq!(o.status.code(), Some(2), "{addr}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("refusing to serve MCP over HTTP")
                && err.contains("without a bearer token"),
            "{addr}: {err}"
        );
        assert!(
            err.contains("hint: ") && err.contains("--token-file"),
            "{err}"
        );
        assert!(stdout(&o).is_empty());
        assert!(!dir.exists(), "{addr}: nothing may be created");
    }
    // An empty token file is no token.
    let empty = tmp.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let o = run(memdir(&dir).args([
        "mcp",
        "--http",
        "0.0.0.0:0",
        "--token-file",
        empty.to_str().unwrap(),
    ]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds no usable token"),
        "{}",
        stderr(&o)
    );
}

/// `memdir mcp --http 127.0.0.1:0` on `tmp/memory`, with the token
/// `t0k3n-for-tests` from a file under `tmp` (and none from the environment).
fn with_token(tmp: &Path) -> std::process::Command {
    let token_file = tmp.join("token");
    std::fs::write(&token_file, "t0k3n-for-tests\n").unwrap();
    let mut cmd = memdir(&tmp.join("memory"));
    cmd.env_remove("MEMDIR_MCP_TOKEN").args([
        "mcp",
        "--create",
        "--http",
        "127.0.0.1:0",
        "--token-file",
        token_file.to_str().unwrap(),
    ]);
    cmd
}

// spec/mcp.md#remote-clients: with a token, every request without it is 401; Host
// and Origin are checked; SIGTERM stops the server with exit 0.
#[test]
fn http_requires_the_token_on_every_request() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = with_token(tmp.path());
    let server = HttpServer::start(cmd);
    assert!(server.addr.starts_with("127.0.0.1:"), "{}", server.addr);

    let (status, text) = server.post(&[], &initialize());
    assert_eq!(status, 401, "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{text}"
    );
    for wrong in [
        "Bearer t0k3n-for-test",
        "Bearer t0k3n-for-tests2",
        "Basic t0k3n-for-tests",
        "t0k3n-for-tests",
    ] {
        let (status, text) = server.post(&[("Authorization", wrong)], &initialize());
        assert_eq!(status, 401, "{wrong}: {text}");
    }
    let auth = ("Authorization", "Bearer t0k3n-for-tests");
    let (status, text) = server.post(&[auth], &initialize());
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("\"serverInfo\"") && text.contains("memdir"),
        "{text}"
    );

    // DNS rebinding: a foreign Host or browser Origin is refused even with the token.
    let (status, text) = server.post(&[auth, ("Host", "evil.example:80")], &initialize());
    assert_eq!(status, 403, "{text}");
    let (status, text) = server.post(&[auth, ("Origin", "http://evil.example")], &initialize());
    assert_eq!(status, 403, "{text}");
    let origin = format!("http://{}", server.addr);
    let (status, text) = server.post(&[auth, ("Origin", &origin)], &initialize());
    assert_eq!(status, 200, "a page on this machine may connect: {text}");

    assert_eq!(server.terminate(), Some(0));
}

// spec/mcp.md#remote-clients: without a token on loopback every request is served.
#[test]
fn http_on_loopback_without_a_token() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut cmd = memdir(&dir);
    cmd.env_remove("MEMDIR_MCP_TOKEN")
        .args(["mcp", "--create", "--http", "127.0.0.1:0"]);
    let server = HttpServer::start(cmd);
    let (status, text) = server.post(&[], &initialize());
    assert_eq!(status, 200, "{text}");
    let _ = &server.stderr;
    assert_eq!(server.terminate(), Some(0));
}

/// Opens a TCP connection to `addr` from the loopback address `from` (any of
/// 127.0.0.0/8 is this machine on Linux), so a test can be two clients.
fn connect_from(from: &str, addr: &str) -> std::io::Result<TcpStream> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let s = tokio::net::TcpSocket::new_v4()?;
        s.bind(format!("{from}:0").parse().unwrap())?;
        let stream = tokio::time::timeout(WAIT, s.connect(addr.parse().unwrap()))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
        stream.into_std()
    })
}

/// Whether the server has closed `s` (end of stream or reset), waiting at most `wait`.
fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(wait.max(Duration::from_millis(1))))
        .unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

// spec/mcp.md#remote-clients (connections): 300 connections that send nothing, from
// one address, with the server's file limit at 256 (issue 31, defect 1). Those over
// the per-address cap are closed at once, the rest after the header timeout, and a
// client with the right token from another address is answered meanwhile; one
// warning line for the burst.
#[cfg(target_os = "linux")]
#[test]
fn idle_connections_do_not_shut_out_a_client() {
    use std::os::unix::process::CommandExt;
    const IDLE: usize = 300;
    const PER_ADDRESS: usize = 64;
    const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = with_token(tmp.path());
    // SAFETY: setrlimit is async-signal-safe; it only lowers the child's own limit.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let server = HttpServer::start(cmd);

    let mut idle: Vec<TcpStream> = (0..IDLE)
        .map(|i| connect_from("127.0.0.2", &server.addr).unwrap_or_else(|e| panic!("{i}: {e}")))
        .collect();
    let opened = Instant::now();

    // The real client, from another address, is answered within a few seconds.
    let auth = ("Authorization", "Bearer t0k3n-for-tests");
    let (tx, rx) = mpsc::channel();
    let addr = server.addr.clone();
    std::thread::spawn(move || {
        let _ = tx.send(post_to(&addr, &[auth], &initialize()));
    });
    let (status, text) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("a client with the right token was not answered within 5 s");
    assert_eq!(status, 200, "{text}");

    // Those over the per-address cap were closed at once, before the header timeout.
    let early: usize = idle
        .iter_mut()
        .filter_map(|s| closed_within(s, Duration::from_millis(1)).then_some(()))
        .count();
    assert!(opened.elapsed() < HEADER_TIMEOUT, "took too long to check");
    assert!(
        early >= IDLE - PER_ADDRESS,
        "only {early} of {IDLE} idle connections were closed at once"
    );

    // The rest are closed by the header timeout.
    let deadline = opened + HEADER_TIMEOUT + Duration::from_secs(5);
    for (i, s) in idle.iter_mut().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            closed_within(s, left),
            "idle connection {i} still open {:?} after it was opened",
            opened.elapsed()
        );
    }
    // And then the same address may connect again.
    let mut again = connect_from("127.0.0.2", &server.addr).unwrap();
    assert!(!closed_within(&mut again, Duration::from_millis(200)));
    drop(again);

    let stderr: Vec<String> = server.stderr.try_iter().collect();
    let warnings = stderr
        .iter()
        .filter(|l| l.contains("connection limit"))
        .count();
    assert_eq!(warnings, 1, "one warning for the burst: {stderr:#?}");
    assert!(
        !stderr.iter().any(|l| l.contains("Too many open files")),
        "{stderr:#?}"
    );
    assert_eq!(server.terminate(), Some(0));
}

/// The `Mcp-Session-Id` of a response.
fn session_id(text: &str) -> String {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id: {text}"))
}

/// The resident memory of a process in KiB (Linux), if known.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// spec/mcp.md#remote-clients (sessions): at most 64 sessions live; a new one evicts
// the least recently used, whose next request gets 404 (issue 31, defect 2); memory
// stays bounded however many clients initialize.
#[test]
fn sessions_are_capped_least_recently_used_first() {
    const CAP: usize = 64;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let mut cmd = memdir(&dir);
    cmd.env_remove("MEMDIR_MCP_TOKEN")
        .args(["mcp", "--create", "--http", "127.0.0.1:0"]);
    let server = HttpServer::start(cmd);
    let open = || -> String {
        let (status, text) = server.post(&[], &initialize());
        assert_eq!(status, 200, "{text}");
        let id = session_id(&text);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, text) = server.post(&[("Mcp-Session-Id", &id)], &note);
        assert_eq!(status, 202, "{text}");
        id
    };
    let ping = |id: &str| -> (u16, String) {
        let req = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
        server.post(&[("Mcp-Session-Id", id)], &req)
    };
    let alive = |id: &str| {
        let (status, text) = ping(id);
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("\"result\""), "{text}");
    };
    let evicted = |id: &str| {
        let (status, text) = ping(id);
        assert_eq!(status, 404, "{text}");
        assert!(text.contains("Session not found"), "{text}");
    };

    let mut ids: Vec<String> = (0..CAP).map(|_| open()).collect();
    alive(&ids[0]); // now the most recently used
    ids.push(open()); // over the cap: evicts ids[1], the least recently used
    evicted(&ids[1]);
    alive(&ids[0]);
    alive(&ids[2]);
    alive(&ids[CAP]);

    // Many more clients: the live ones are the last CAP, and memory stays bounded.
    let before = rss_kib(server.child.id());
    for _ in 0..400 {
        ids.push(open());
    }
    let after = rss_kib(server.child.id());
    let n = ids.len();
    evicted(&ids[0]);
    evicted(&ids[n - CAP - 1]);
    for id in &ids[n - CAP..] {
        alive(id);
    }
    if let (Some(b), Some(a)) = (before, after) {
        assert!(
            a.saturating_sub(b) < 64 * 1024,
            "400 sessions over the cap grew the server from {b} KiB to {a} KiB"
        );
    }
    assert_eq!(server.terminate(), Some(0));
}

/// A `memdir mcp` process on stdio with a minimal JSON-RPC client.
struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
    next_id: u64,
}

impl Stdio_ {
    fn start(mut cmd: Command) -> Stdio_ {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start memdir mcp");
        let stdin = child.stdin.take().unwrap();
        let lines = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        let mut s = Stdio_ {
            child,
            stdin,
            lines,
            stderr,
            next_id: 1,
        };
        s.request("initialize", initialize()["params"].clone());
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no response to {method} within {WAIT:?}"));
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        assert!(r.get("error").is_none(), "{name}: {r}");
        r["result"].clone()
    }

    fn stderr_text(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A device: a memory directory synced with the folder provider in `remote`.
fn device(dir: &Path, remote: &Path, home: &Path) -> Command {
    let mut c = memdir(dir);
    c.env("MEMDIR_FOLDER", remote);
    c.env("HOME", home);
    for v in [
        "XDG_CONFIG_HOME",
        "MEMDIR_OFFLINE",
        "MEMDIR_KEY_FILE",
        "IPFS_API",
        "PINATA_JWT",
        "MEMDIR_MCP_TOKEN",
    ] {
        c.env_remove(v);
    }
    c
}

fn ok(mut c: Command) -> String {
    let o = run(&mut c);
    assert!(o.status.success(), "{c:?}: {}{}", stdout(&o), stderr(&o));
    stdout(&o)
}

fn head(remote: &Path) -> Option<String> {
    std::fs::read_to_string(remote.join("heads/default"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn remember(key: &str, body: &str) -> Value {
    json!({"key": key, "name": key, "description": "d", "type": "project", "body": body})
}

// spec/mcp.md#sync: in mode ipfs a write through MCP is pushed in the background
// after the delay; the response does not wait; `status` then shows nothing unpushed.
// The sync tool pulls what another device pushed.
#[test]
fn writes_through_mcp_are_pushed_and_sync_pulls() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let dev = |d: &PathBuf| device(d, &remote, &home);
    let mut c = dev(&a);
    c.args(["init", "--mode", "ipfs", "--provider", "folder"]);
    ok(c);

    let mut cmd = dev(&a);
    cmd.arg("mcp");
    let mut s = Stdio_::start(cmd);
    let r = s.call("remember", remember("project_alpha", "first"));
    assert_eq!(r["isError"], json!(false), "{r}");
    // The response came back before the push (which waits for writes to stop).
    assert_eq!(head(&remote), None, "pushed on the request path");
    // More writes in the same burst: one push carries them all.
    let r = s.call("note", json!({"type": "decision", "fields": {"text": "x"}}));
    assert_eq!(r["isError"], json!(false), "{r}");
    let r = s.call("remember", remember("project_beta", "second"));
    assert_eq!(r["isError"], json!(false), "{r}");

    let local = |d: &PathBuf| {
        let mut c = dev(d);
        c.arg("cid");
        ok(c).trim().to_string()
    };
    let deadline = Instant::now() + WAIT;
    while head(&remote).as_deref() != Some(local(&a).as_str()) {
        assert!(
            Instant::now() < deadline,
            "no push within {WAIT:?}; head {:?}, local {}\n{}",
            head(&remote),
            local(&a),
            s.stderr_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut c = dev(&a);
    c.args(["--json", "status"]);
    let st: Value = serde_json::from_str(&ok(c)).unwrap();
    assert_eq!(st["unpushed"], json!([]), "{st}");
    assert_eq!(
        st["pushes"]["folder"].as_array().map(Vec::len),
        Some(1),
        "three writes in a burst are one push: {st}"
    );

    // sync_status reports the push (wait for the thread to record it).
    let deadline = Instant::now() + WAIT;
    let st = loop {
        let st = s.call("sync_status", json!({}));
        if st["structuredContent"]["auto_push"]["last"].is_object() || Instant::now() > deadline {
            break st;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let sc = &st["structuredContent"];
    assert_eq!(sc["mode"], "ipfs", "{st}");
    assert_eq!(sc["auto_push"]["enabled"], true, "{st}");
    assert_eq!(sc["auto_push"]["last"]["ok"], true, "{st}");
    assert_eq!(sc["auto_push"]["last"]["root"], json!(local(&a)), "{st}");
    assert_eq!(sc["unpushed"], json!([]), "{st}");

    // Device b syncs, writes and pushes (the CLI pushes after a write).
    let mut c = dev(&b);
    c.args(["init", "--mode", "ipfs", "--provider", "folder"]);
    ok(c);
    let mut c = dev(&b);
    c.arg("sync");
    ok(c);
    assert!(b.join("project_alpha.md").is_file());
    let mut c = dev(&b);
    c.args([
        "write",
        "user_beta",
        "--name",
        "Beta",
        "--type",
        "user",
        "--description",
        "from b",
        "--body",
        "written on b",
    ]);
    ok(c);
    assert_eq!(head(&remote).as_deref(), Some(local(&b).as_str()));

    // The sync tool on a pulls b's memory in, and the head stays what both have.
    let r = s.call("sync", json!({}));
    assert_eq!(r["isError"], json!(false), "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("pulled"), "{text}");
    assert!(r["structuredContent"]["pulled"].is_object(), "{r}");
    assert!(r["structuredContent"]["pushed"]["root"].is_string(), "{r}");
    assert!(a.join("user_beta.md").is_file(), "{r}");
    assert_eq!(head(&remote).as_deref(), Some(local(&a).as_str()));
    let read = s.call("read_memory", json!({"key": "user_beta"}));
    assert_eq!(read["structuredContent"]["body"], "written on b", "{read}");

    // A bad argument is a tool error naming it.
    let r = s.call("sync", json!({"strategy": "newest"}));
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("strategy"),
        "{r}"
    );
}

// spec/cli.md#verbosity: `-q` keeps the server's stderr to warnings and errors: no
// note of a background push that went through, none of the HTTP server stopping
// (the address line stays: scripts wait for it). Without -q both notes are there.
#[test]
fn quiet_keeps_the_server_to_warnings_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    for quiet in [false, true] {
        let q: &[&str] = if quiet { &["-q"] } else { &[] };
        // Over HTTP: the stop.
        let dir = tmp.path().join(format!("http-{quiet}"));
        let mut cmd = memdir(&dir);
        cmd.env_remove("MEMDIR_MCP_TOKEN").args(q).args([
            "mcp",
            "--create",
            "--http",
            "127.0.0.1:0",
        ]);
        let (code, stderr) = HttpServer::start(cmd).stop();
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(
            stderr.contains("memdir mcp: stopping"),
            !quiet,
            "-q {quiet}: {stderr}"
        );

        // In mode ipfs: the push after a write.
        let remote = tmp.path().join(format!("remote-{quiet}"));
        let home = tmp.path().join(format!("home-{quiet}"));
        std::fs::create_dir_all(&home).unwrap();
        let a = tmp.path().join(format!("a-{quiet}"));
        let mut c = device(&a, &remote, &home);
        c.args(["init", "--mode", "ipfs", "--provider", "folder"]);
        ok(c);
        let mut cmd = device(&a, &remote, &home);
        cmd.args(q).arg("mcp");
        let mut s = Stdio_::start(cmd);
        let r = s.call("remember", remember("project_alpha", "first"));
        assert_eq!(r["isError"], json!(false), "{r}");
        let deadline = Instant::now() + WAIT;
        loop {
            let st = s.call("sync_status", json!({}));
            if st["structuredContent"]["auto_push"]["last"]["ok"] == json!(true) {
                break;
            }
            assert!(Instant::now() < deadline, "no push within {WAIT:?}: {st}");
            std::thread::sleep(Duration::from_millis(100));
        }
        // The note is written before the push is recorded; the reader may lag.
        let mut stderr = String::new();
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && !stderr.contains("memdir mcp: pushed") {
            std::thread::sleep(Duration::from_millis(50));
            stderr.push_str(&s.stderr_text());
        }
        assert_eq!(
            stderr.contains("memdir mcp: pushed"),
            !quiet,
            "-q {quiet}: {stderr}"
        );
        assert!(!quiet || !stderr.contains("serving"), "{stderr}");
    }
}

// spec/mcp.md#sync: a failed background push is logged and shown by sync_status; the
// write itself succeeded; the sync tool reports the CLI's error class.
#[test]
fn a_failed_push_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let a = tmp.path().join("a");
    let mut c = device(&a, &remote, &home);
    c.args(["init", "--mode", "ipfs", "--provider", "folder"]);
    ok(c);
    // The remote folder is a file: every push fails (exit class 3, network).
    std::fs::write(&remote, b"not a folder").unwrap();
    let mut cmd = device(&a, &remote, &home);
    cmd.arg("mcp");
    let mut s = Stdio_::start(cmd);
    let r = s.call("remember", remember("project_alpha", "first"));
    assert_eq!(r["isError"], json!(false), "{r}");
    assert!(a.join("project_alpha.md").is_file());
    let deadline = Instant::now() + WAIT;
    let st = loop {
        let st = s.call("sync_status", json!({}));
        if st["structuredContent"]["auto_push"]["last"].is_object() {
            break st;
        }
        assert!(Instant::now() < deadline, "no push attempt: {st}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let last = &st["structuredContent"]["auto_push"]["last"];
    assert_eq!(last["ok"], false, "{st}");
    assert!(last["error"]["message"].is_string(), "{st}");
    assert_eq!(
        st["structuredContent"]["unpushed"][0]["path"], "project_alpha.md",
        "{st}"
    );
    let text = st["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("last push failed"), "{text}");
    assert!(
        s.stderr_text().contains("saved locally but was not pushed"),
        "the failure is logged on stderr"
    );

    let r = s.call("sync", json!({}));
    assert_eq!(r["isError"], json!(true), "{r}");
    let err = &r["structuredContent"]["error"];
    let mut c = device(&a, &remote, &home);
    c.arg("sync");
    let cli = run(&mut c);
    assert_eq!(err["exit_code"], json!(cli.status.code().unwrap()), "{r}");
    let cli_err = stderr(&cli);
    let tool_text = r["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        tool_text.lines().next(),
        cli_err.lines().find(|l| l.starts_with("error:")),
        "the tool's error is the CLI's"
    );
}

// spec/mcp.md#sync: without a sync mode the sync tools say sync is not configured.
#[test]
fn sync_is_not_configured_in_modes_none_and_local() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("manifest.json"),
        r#"{"memory": {"mode": "none"}}"#,
    )
    .unwrap();
    let mut cmd = memdir(&agent.join("memory"));
    cmd.args(["mcp", "--create"]);
    let mut s = Stdio_::start(cmd);
    for tool in ["sync", "sync_status"] {
        let r = s.call(tool, json!({}));
        assert_eq!(r["isError"], json!(true), "{r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with(
                "error: sync is not configured: this server serves an in-memory store (mode none)"
            ),
            "{text}"
        );
        assert!(text.contains("\nhint: "), "{text}");
        assert_eq!(r["structuredContent"]["error"]["exit_code"], 2, "{r}");
    }
    // A write in mode none is fine and pushes nothing.
    let r = s.call("remember", remember("project_x", "x"));
    assert_eq!(r["isError"], json!(false), "{r}");
    drop(s);

    let dir = tmp.path().join("local");
    let mut cmd = memdir(&dir);
    cmd.args(["mcp", "--create"]);
    let mut s = Stdio_::start(cmd);
    let r = s.call("sync", json!({}));
    assert_eq!(r["isError"], json!(true), "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("error: sync is not configured: the memory directory is in mode local"),
        "{text}"
    );
    let st = s.call("sync_status", json!({}));
    assert_eq!(st["isError"], json!(false), "{st}");
    assert_eq!(st["structuredContent"]["mode"], "local", "{st}");
    assert_eq!(
        st["structuredContent"]["auto_push"]["enabled"], false,
        "{st}"
    );
}

// The same against a real IPFS node (js-ipfs on 127.0.0.1; ci/ipfs-node/run-tests.sh
// starts it and sets IPFS_API; without it the test says it skipped).
mod node {
    use super::*;
    use crate::providers::{ipfs_node, run_tag};

    fn on_node(dir: &Path, api: &str, home: &Path) -> Command {
        let mut c = device(dir, &home.join("unused-folder"), home);
        c.env("IPFS_API", api);
        c
    }

    // spec/mcp.md#sync: a write through MCP reaches the node's head by itself; another
    // device syncs it; the sync tool brings that device's write back.
    #[test]
    fn mcp_writes_reach_the_node() {
        let Some(api) = ipfs_node() else { return };
        let tag = run_tag("mcp");
        let channel = tag.clone();
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        for d in [&a, &b] {
            let mut c = on_node(d, &api, &home);
            c.args([
                "init",
                "--mode",
                "ipfs",
                "--provider",
                "kubo",
                "--channel",
                &channel,
            ]);
            ok(c);
        }
        let mut cmd = on_node(&a, &api, &home);
        cmd.arg("mcp");
        let mut s = Stdio_::start(cmd);
        let r = s.call(
            "remember",
            remember("project_node", &format!("on the node {tag}")),
        );
        assert_eq!(r["isError"], json!(false), "{r}");

        let status = |d: &Path| -> Value {
            let mut c = on_node(d, &api, &home);
            c.args(["--json", "status"]);
            serde_json::from_str(&ok(c)).unwrap()
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let st = status(&a);
            if st["unpushed"] == json!([]) && st["base"]["root"] == st["local_root"] {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no push to the node: {st}\n{}",
                s.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(250));
        }

        let mut c = on_node(&b, &api, &home);
        c.arg("sync");
        ok(c);
        let text = std::fs::read_to_string(b.join("project_node.md")).unwrap();
        assert!(text.contains(&format!("on the node {tag}")), "{text}");
        let mut c = on_node(&b, &api, &home);
        c.args([
            "write",
            "user_node",
            "--name",
            "N",
            "--type",
            "user",
            "--description",
            "from b",
            "--body",
            &tag,
        ]);
        ok(c);

        let r = s.call("sync", json!({}));
        assert_eq!(r["isError"], json!(false), "{r}");
        assert!(r["structuredContent"]["pulled"].is_object(), "{r}");
        let read = s.call("read_memory", json!({"key": "user_node"}));
        assert_eq!(read["structuredContent"]["body"], json!(tag), "{read}");
        let st = status(&a);
        assert_eq!(st["unpushed"], json!([]), "{st}");
    }
}
