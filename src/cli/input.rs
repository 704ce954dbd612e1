//! Bounded reads of what a person names on the command line: a file (`--body-file`,
//! `--value-file`, `--plan-file`, `import FILE`) or standard input. It owns the rule
//! of spec/cli.md#inputs: at most the limit and one byte more is ever read, and where
//! a file is expected only a regular file is opened for reading (a FIFO, a device or a
//! folder is refused, never waited on). It must not interpret what it reads.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::Path;

use memdir::Error;

/// Reads a regular file of at most `limit` bytes, refusing anything else before
/// reading it: it opens without waiting (O_NONBLOCK, so a FIFO with no writer does not
/// block), checks the opened file's type and size, then reads at most `limit + 1`
/// bytes (the file may grow after the check).
pub fn read_file(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let f = open_regular(path)?;
    let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
    if len > limit {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            size: len,
            limit,
        });
    }
    let mut buf = Vec::with_capacity(len as usize);
    read_at_most(f, limit, &mut buf).map_err(|e| Error::io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(over_the_limit(path, limit));
    }
    Ok(buf)
}

/// [`read_file`] as UTF-8 text.
pub fn read_file_text(path: &Path, limit: u64) -> Result<String, Error> {
    String::from_utf8(read_file(path, limit)?).map_err(|_| Error::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// Reads standard input up to `limit` bytes; more is refused once `limit + 1`
/// bytes have come, without reading the rest.
pub fn read_stdin(limit: u64) -> Result<Vec<u8>, Error> {
    let path = Path::new("<stdin>");
    let mut buf = Vec::new();
    read_at_most(std::io::stdin().lock(), limit, &mut buf).map_err(|e| Error::io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(over_the_limit(path, limit));
    }
    Ok(buf)
}

/// [`read_stdin`] as UTF-8 text.
pub fn read_stdin_text(limit: u64) -> Result<String, Error> {
    String::from_utf8(read_stdin(limit)?).map_err(|_| Error::NotUtf8 {
        path: "<stdin>".into(),
    })
}

fn read_at_most(r: impl Read, limit: u64, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    r.take(limit.saturating_add(1)).read_to_end(buf)
}

fn over_the_limit(path: &Path, limit: u64) -> Error {
    Error::io(
        path,
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("more than {limit} bytes, over the limit of {limit} bytes"),
        ),
    )
}

/// Opens `path` for reading if it is a regular file (a link to one is followed: the
/// person named it), without waiting on a FIFO; anything else is refused, naming
/// what it is.
fn open_regular(path: &Path) -> Result<File, Error> {
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    let f = o.open(path).map_err(|e| Error::io(path, e))?;
    let kind = f.metadata().map_err(|e| Error::io(path, e))?.file_type();
    if !kind.is_file() {
        return Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{}, not a regular file; memdir reads a regular file here (or standard input where the command takes it)",
                    describe(&kind)
                ),
            ),
        ));
    }
    // Reads of a regular file never wait; the flag is cleared all the same, so the
    // file reads as any other.
    set_blocking(&f);
    Ok(f)
}

/// Clears O_NONBLOCK on a file found to be regular, whose reads never wait anyway,
/// so it behaves as any other (the library's store does the same for its files).
fn set_blocking(f: &File) {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        // SAFETY: `fd` is open for the whole call; F_GETFL/F_SETFL take no pointer.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = f;
}

/// What a file that is not a regular file is, in a few words.
fn describe(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a folder"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(len: usize, limit: u64, expect: Result<usize, &str>) {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        std::fs::write(&p, vec![b'a'; len]).unwrap();
        match (read_file(&p, limit), expect) {
            (Ok(b), Ok(n)) => assert_eq!(b.len(), n),
            (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{e}"),
            (got, want) => panic!("{len} bytes, limit {limit}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn a_file_is_read_up_to_its_limit() {
        check(0, 4, Ok(0));
        check(4, 4, Ok(4));
        check(5, 4, Err("5 bytes is over the limit of 4 bytes"));
    }

    #[test]
    fn a_folder_is_not_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let e = read_file(tmp.path(), 4).unwrap_err().to_string();
        assert!(e.contains("a folder, not a regular file"), "{e}");
    }
}
