//! The bounded line reader behind [`Backend::for_each_line`](super::Backend::for_each_line):
//! lines of any reader, each held in a buffer of at most a limit, a longer line passed as
//! its length only. It must not open files or interpret the lines' bytes.

/// One line met by [`Backend::for_each_line`](super::Backend::for_each_line).
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// 1-based line number.
    pub number: usize,
    /// The bytes without the newline, or the line's length when it is over the limit
    /// (such a line is never held in memory).
    pub bytes: std::result::Result<&'a [u8], u64>,
    /// Whether a newline ended the line (false only for the last line of a file that
    /// does not end in one).
    pub terminated: bool,
}

/// Reads lines from `r` into a buffer of at most `limit` bytes each; longer lines are
/// skipped to their end and passed as their length.
pub(super) fn stream_lines(
    r: &mut impl std::io::BufRead,
    limit: u64,
    f: &mut impl FnMut(Line<'_>),
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut len: u64 = 0;
    let mut number = 0usize;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if len > 0 {
                number += 1;
                let bytes = if len > limit { Err(len) } else { Ok(&buf[..]) };
                f(Line {
                    number,
                    bytes,
                    terminated: false,
                });
            }
            return Ok(());
        }
        let (part, used, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        len += part.len() as u64;
        if len <= limit {
            buf.extend_from_slice(part);
        }
        r.consume(used);
        if end {
            number += 1;
            let bytes = if len > limit { Err(len) } else { Ok(&buf[..]) };
            f(Line {
                number,
                bytes,
                terminated: true,
            });
            buf.clear();
            len = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of `input` read through a 2-byte buffer (every chunk boundary) with `limit`.
    fn check(input: &[u8], limit: u64, expect: &[(usize, Result<&str, u64>, bool)]) {
        let mut r = std::io::BufReader::with_capacity(2, input);
        let mut got = Vec::new();
        stream_lines(&mut r, limit, &mut |l: Line<'_>| {
            got.push((
                l.number,
                l.bytes.map(|b| String::from_utf8_lossy(b).into_owned()),
                l.terminated,
            ))
        })
        .unwrap();
        let want: Vec<_> = expect
            .iter()
            .map(|(n, b, t)| (*n, b.map(str::to_string), *t))
            .collect();
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(input));
    }

    #[test]
    fn lines_are_streamed_one_at_a_time() {
        // spec/timeline-format.md#reading
        check(b"", 10, &[]);
        check(b"a\nbc", 10, &[(1, Ok("a"), true), (2, Ok("bc"), false)]);
        check(b"\n\n", 10, &[(1, Ok(""), true), (2, Ok(""), true)]);
        check(
            b"abcdef\nxy\n",
            3,
            &[(1, Err(6), true), (2, Ok("xy"), true)],
        );
        check(b"abc\nabcd", 3, &[(1, Ok("abc"), true), (2, Err(4), false)]);
        check(
            b"a\xffb\nc\n",
            10,
            &[(1, Ok("a\u{fffd}b"), true), (2, Ok("c"), true)],
        );
    }
}
