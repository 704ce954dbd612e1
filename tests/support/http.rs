//! A tiny HTTP/1.1 server and client over std sockets, for loopback mocks of
//! remote services. One request per connection (`Connection: close`), bounded
//! reads, 127.0.0.1 only; the server stops and joins its threads on drop.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const MAX_HEAD: usize = 64 << 10;
const MAX_BODY: usize = 64 << 20;
const MAX_CONNECTIONS: usize = 10_000;
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Raw path as sent (percent-encoded), without the query.
    pub path: String,
    /// Decoded query pairs in order.
    pub query: Vec<(String, String)>,
    /// Header names in lower case, values as sent, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the body ends on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length`.
    Length,
    /// No length: the body ends when the connection closes (lets a test send a
    /// well-framed but truncated payload).
    Close,
    /// The whole body's `Content-Length`, then only this many of its bytes before
    /// the connection closes: a transfer that breaks off mid-stream.
    Cut(usize),
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub framing: Framing,
    /// For HEAD: the `Content-Length` to announce without a body.
    pub head_length: Option<usize>,
}

impl Response {
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            framing: Framing::Length,
            head_length: None,
        }
    }

    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response::new(status)
            .with_header("content-type", content_type)
            .with_body(body)
    }

    pub fn json(status: u16, value: &serde_json::Value) -> Response {
        Response::bytes(status, "application/json", value.to_string().into_bytes())
    }

    pub fn text(status: u16, text: &str) -> Response {
        Response::bytes(status, "text/plain", text.as_bytes().to_vec())
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn with_body(mut self, body: Vec<u8>) -> Response {
        self.body = body;
        self
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

type Handler = dyn Fn(&Request, &Stop) -> Response + Send + Sync;

/// The server's stop flag, handed to handlers so slow ones can end early.
#[derive(Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Sleeps up to `d`, in small steps, returning early once the server stops.
    pub fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.is_set() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
        }
    }
}

/// A loopback HTTP server running `handler` for each request.
pub struct Server {
    addr: SocketAddr,
    stop: Stop,
    accept: Option<JoinHandle<()>>,
    conns: Arc<Mutex<VecDeque<JoinHandle<()>>>>,
}

impl Server {
    pub fn start(handler: impl Fn(&Request, &Stop) -> Response + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let stop = Stop::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let conns: Arc<Mutex<VecDeque<JoinHandle<()>>>> = Arc::default();
        let accept = {
            let (stop, conns) = (stop.clone(), conns.clone());
            std::thread::spawn(move || {
                for (n, stream) in listener.incoming().enumerate() {
                    if stop.is_set() || n >= MAX_CONNECTIONS {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (handler, stop2) = (handler.clone(), stop.clone());
                    let h = std::thread::spawn(move || {
                        let _ = serve(stream, handler.as_ref(), &stop2);
                    });
                    let mut conns = conns.lock().unwrap();
                    // Reap finished connection threads as we go.
                    conns.retain(|h| !h.is_finished());
                    conns.push_back(h);
                }
            })
        };
        Server {
            addr,
            stop,
            accept: Some(accept),
            conns,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.0.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let handles: Vec<_> = self.conns.lock().unwrap().drain(..).collect();
        for h in handles {
            let _ = h.join();
        }
    }
}

fn serve(stream: TcpStream, handler: &Handler, stop: &Stop) -> io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let Some(req) = read_request(&mut reader)? else {
        return Ok(());
    };
    let resp = handler(&req, stop);
    let mut out = stream;
    write_response(&mut out, &req.method, &resp)?;
    out.flush()?;
    let _ = out.shutdown(std::net::Shutdown::Write);
    Ok(())
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// Reads CRLF-terminated head lines, bounded.
fn read_head<R: BufRead>(r: &mut R) -> io::Result<Option<Vec<String>>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let n = r.by_ref().take(8192).read_until(b'\n', &mut line)?;
        if n == 0 {
            return if lines.is_empty() {
                Ok(None)
            } else {
                Err(bad("eof in head"))
            };
        }
        total += n;
        if total > MAX_HEAD || lines.len() > 200 {
            return Err(bad("head too large"));
        }
        let line = String::from_utf8(line).map_err(|_| bad("head not utf-8"))?;
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            return Ok(Some(lines));
        }
        lines.push(line);
    }
}

fn parse_headers(lines: &[String]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect()
}

fn read_body<R: BufRead>(
    r: &mut R,
    headers: &[(String, String)],
    to_eof: bool,
) -> io::Result<Vec<u8>> {
    let get = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut body = Vec::new();
        loop {
            let mut line = String::new();
            r.by_ref().take(1024).read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers (usually none), then the final empty line.
                let _ = read_head(r)?;
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(bad("body too large"));
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf)?;
        }
    }
    if let Some(len) = get("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        if len > MAX_BODY {
            return Err(bad("body too large"));
        }
        let mut body = vec![0u8; len];
        r.read_exact(&mut body)?;
        return Ok(body);
    }
    let mut body = Vec::new();
    if to_eof {
        r.take(MAX_BODY as u64).read_to_end(&mut body)?;
    }
    Ok(body)
}

fn decode_component(s: &str) -> String {
    let s = s.replace('+', " ");
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(
                std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                16,
            )
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode_component(k), decode_component(v)),
            None => (decode_component(p), String::new()),
        })
        .collect()
}

fn read_request<R: BufRead>(r: &mut R) -> io::Result<Option<Request>> {
    let Some(lines) = read_head(r)? else {
        return Ok(None);
    };
    let mut parts = lines[0].split(' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad("bad request line"));
    };
    let headers = parse_headers(&lines[1..]);
    let body = read_body(r, &headers, false)?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Some(Request {
        method: method.to_string(),
        path: path.to_string(),
        query: parse_query(query),
        headers,
        body,
    }))
}

fn write_response<W: Write>(w: &mut W, method: &str, resp: &Response) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", resp.status, reason(resp.status));
    for (k, v) in &resp.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if method == "HEAD" {
        let len = resp.head_length.unwrap_or(resp.body.len());
        head.push_str(&format!(
            "content-length: {len}\r\nconnection: close\r\n\r\n"
        ));
        return w.write_all(head.as_bytes());
    }
    if resp.framing != Framing::Close && resp.status != 204 {
        head.push_str(&format!("content-length: {}\r\n", resp.body.len()));
    }
    head.push_str("connection: close\r\n\r\n");
    w.write_all(head.as_bytes())?;
    if resp.status != 204 {
        let sent = match resp.framing {
            Framing::Cut(n) => n.min(resp.body.len()),
            _ => resp.body.len(),
        };
        w.write_all(&resp.body[..sent])?;
    }
    Ok(())
}

/// A minimal blocking client: `method url` with optional body; returns the
/// status and the whole body (content-length, chunked or read-to-close).
pub fn request(method: &str, url: &str, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad("only http:// URLs"))?;
    let (host, target) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr: SocketAddr = host.parse().map_err(|_| bad("host must be ip:port"))?;
    if !addr.ip().is_loopback() {
        return Err(bad("test client only talks to loopback"));
    }
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = format!(
        "{method} {target} HTTP/1.1\r\nhost: {host}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut reader = BufReader::new(stream);
    let lines = read_head(&mut reader)?.ok_or_else(|| bad("no response"))?;
    let status: u16 = lines[0]
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let headers = parse_headers(&lines[1..]);
    let body = read_body(&mut reader, &headers, true)?;
    Ok((status, body))
}

/// One part of a multipart/form-data body.
#[derive(Debug, Clone)]
pub struct FormPart {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Parses a multipart/form-data request body; `None` if it is not one.
pub fn multipart(req: &Request) -> Option<Vec<FormPart>> {
    let ct = req.header("content-type")?;
    if !ct.to_ascii_lowercase().starts_with("multipart/form-data") {
        return None;
    }
    let boundary = ct
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("boundary="))
        .next()?
        .trim_matches('"');
    let delim = format!("--{boundary}").into_bytes();
    let body = &req.body;
    let mut pos = find(body, &delim, 0)? + delim.len();
    let mut parts = Vec::new();
    loop {
        if body.get(pos..pos + 2) == Some(b"--") {
            return Some(parts);
        }
        // Skip the CRLF after the delimiter.
        pos += 2;
        let head_end = find(body, b"\r\n\r\n", pos)?;
        let head = std::str::from_utf8(&body[pos..head_end]).ok()?;
        let mut name = None;
        let mut filename = None;
        let mut content_type = None;
        for line in head.split("\r\n") {
            let (k, v) = line.split_once(':')?;
            if k.trim().eq_ignore_ascii_case("content-type") {
                content_type = Some(v.trim().to_string());
            }
            if k.trim().eq_ignore_ascii_case("content-disposition") {
                for attr in v.split(';').map(str::trim) {
                    if let Some(n) = attr.strip_prefix("name=") {
                        name = Some(n.trim_matches('"').to_string());
                    } else if let Some(f) = attr.strip_prefix("filename=") {
                        filename = Some(f.trim_matches('"').to_string());
                    }
                }
            }
        }
        let data_start = head_end + 4;
        let mut next_delim = b"\r\n".to_vec();
        next_delim.extend_from_slice(&delim);
        let end = find(body, &next_delim, data_start)?;
        parts.push(FormPart {
            name: name?,
            filename,
            content_type,
            data: body[data_start..end].to_vec(),
        });
        pos = end + next_delim.len();
    }
}
