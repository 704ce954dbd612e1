//! The newline-delimited framing between the client's byte stream and rmcp.
//!
//! rmcp's stdio transport ignores a line that is not JSON, drops a line over its
//! length limit and cannot parse JSON nested deeper than serde_json's recursion limit,
//! all without a reply, so a client waits forever. This layer reads the client's
//! lines itself, with a bounded length and without buffering an oversized one, and
//! answers every line that cannot be a message with a JSON-RPC parse error (-32700,
//! id null) saying why; the others go to rmcp unchanged. What rmcp writes and those
//! errors reach the client whole, one line each. It must not interpret messages
//! beyond that check. spec: spec/mcp.md#transport.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line read as a message, newline excluded (rmcp's own limit, 16 MiB,
/// counts the newline).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024 - 1;

/// The deepest nesting of arrays and objects read as a message (below serde_json's
/// recursion limit of 128, so whatever passes here parses in rmcp).
pub const MAX_DEPTH: usize = 100;

/// What a complete line (newline excluded) is to the framing.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A JSON value: handed to rmcp, which judges its shape.
    Message,
    /// White space only: skipped, as rmcp does.
    Blank,
    /// Not a message: the client gets a parse error with this text.
    Refused(String),
}

/// Judges one complete line.
pub fn judge(line: &[u8]) -> Verdict {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Blank;
    }
    if line.len() > MAX_LINE_BYTES {
        return Verdict::Refused(over_limit(line.len()));
    }
    if nested_deeper_than(line, MAX_DEPTH) {
        return Verdict::Refused(format!(
            "parse error: JSON nested deeper than {MAX_DEPTH} levels; the message was not read"
        ));
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        Ok(_) => Verdict::Message,
        Err(e) => Verdict::Refused(format!("parse error: not valid JSON: {e}")),
    }
}

fn over_limit(len: usize) -> String {
    format!(
        "parse error: a line of {len} bytes is over the limit of {MAX_LINE_BYTES} bytes; the message was not read"
    )
}

/// Whether arrays and objects nest deeper than `max` (brackets inside strings do not
/// count). One pass, no recursion.
fn nested_deeper_than(line: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in line {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The JSON-RPC error line sent for a refused line.
fn error_line(message: &str) -> Vec<u8> {
    let v = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": message}});
    let mut line = v.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// One read from the client.
enum Read {
    /// A complete line, newline excluded, in the buffer.
    Line,
    /// A line over [`MAX_LINE_BYTES`] of this many bytes, read and dropped.
    Oversized(usize),
    Eof,
}

/// Reads one line into `buf` (cleared first) without holding more than
/// [`MAX_LINE_BYTES`] of it; an unterminated tail at the end of the stream is dropped,
/// as rmcp drops it, unless it was already over the limit.
async fn read_line<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<Read> {
    buf.clear();
    let mut len = 0usize;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(if len > MAX_LINE_BYTES {
                Read::Oversized(len)
            } else {
                Read::Eof
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.unwrap_or(available.len());
        if len + take <= MAX_LINE_BYTES {
            buf.extend_from_slice(&available[..take]);
        } else {
            buf.clear();
        }
        len += take;
        r.consume(take + usize::from(newline.is_some()));
        if newline.is_some() {
            return Ok(if len > MAX_LINE_BYTES {
                Read::Oversized(len)
            } else {
                Read::Line
            });
        }
    }
}

/// The two framing tasks around one rmcp session.
pub struct Framing {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

/// How long the end of a session waits for the last replies to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

impl Framing {
    /// Puts the framing between `io` and a session: returns the streams rmcp serves
    /// on and the tasks that move lines between them.
    pub fn start<R, W>(io: (R, W)) -> ((DuplexStream, DuplexStream), Framing)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        const PIPE: usize = 64 * 1024;
        let (mut to_rmcp, rmcp_in) = tokio::io::duplex(PIPE);
        let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE);
        let (errors, mut refused) = mpsc::unbounded_channel::<Vec<u8>>();
        let (client_in, mut client_out) = io;

        let reader = tokio::spawn(async move {
            let mut r = BufReader::new(client_in);
            let mut buf = Vec::new();
            loop {
                let verdict = match read_line(&mut r, &mut buf).await {
                    Ok(Read::Line) => judge(&buf),
                    Ok(Read::Oversized(n)) => Verdict::Refused(over_limit(n)),
                    Ok(Read::Eof) | Err(_) => return,
                };
                match verdict {
                    Verdict::Message => {
                        buf.push(b'\n');
                        if to_rmcp.write_all(&buf).await.is_err() {
                            return; // the session is over
                        }
                    }
                    Verdict::Blank => {}
                    Verdict::Refused(msg) => {
                        if errors.send(error_line(&msg)).is_err() {
                            return;
                        }
                    }
                }
            }
            // Dropping `to_rmcp` here ends the session the way a closed stdin does.
        });

        let writer = tokio::spawn(async move {
            let mut from_rmcp = BufReader::new(from_rmcp);
            let mut line = Vec::new();
            let mut refused_open = true;
            loop {
                tokio::select! {
                    // read_until appends, so a read cut short by the other branch
                    // resumes on the next turn.
                    n = from_rmcp.read_until(b'\n', &mut line) => {
                        match n {
                            Ok(0) | Err(_) => break,
                            Ok(_) if line.ends_with(b"\n") => {
                                if client_out.write_all(&line).await.is_err()
                                    || client_out.flush().await.is_err()
                                {
                                    return;
                                }
                                line.clear();
                            }
                            Ok(_) => {}
                        }
                    }
                    e = refused.recv(), if refused_open => match e {
                        Some(e) => {
                            if client_out.write_all(&e).await.is_err()
                                || client_out.flush().await.is_err()
                            {
                                return;
                            }
                        }
                        None => refused_open = false,
                    },
                }
            }
            // rmcp is done; send what is left, its last partial line included.
            while let Ok(e) = refused.try_recv() {
                let _ = client_out.write_all(&e).await;
            }
            let _ = client_out.write_all(&line).await;
            let _ = client_out.flush().await;
        });
        ((rmcp_in, rmcp_out), Framing { reader, writer })
    }

    /// Waits (bounded) for the last replies to reach the client, then stops reading.
    pub async fn finish(self) {
        let _ = tokio::time::timeout(FLUSH_TIMEOUT, self.writer).await;
        self.reader.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, want: &str) {
        let got = match judge(line.as_bytes()) {
            Verdict::Message => "message".to_string(),
            Verdict::Blank => "blank".to_string(),
            Verdict::Refused(m) => m,
        };
        assert!(got.starts_with(want), "{line:?}: {got}");
    }

    #[test]
    fn judges_lines() {
        check(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "message");
        check("[1, 2]", "message");
        check("  \r", "blank");
        check("", "blank");
        check("not json", "parse error: not valid JSON");
        check("{\"a\":", "parse error: not valid JSON");
        check("{\"a\": 1}\r", "message");
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        check(&deep, "parse error: JSON nested deeper than 100 levels");
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        check(&ok, "message");
        // Brackets inside strings are text.
        let text = format!("{{\"a\": \"{}\\\"{}\"}}", "[".repeat(500), "{".repeat(500));
        check(&text, "message");
    }

    #[test]
    fn error_lines_are_json_rpc_parse_errors() {
        let v: serde_json::Value = serde_json::from_slice(&error_line("why")).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "why"}})
        );
    }
}
