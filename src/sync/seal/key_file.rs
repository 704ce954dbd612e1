//! Key files (`memdir-key-v1`, format in the `sync::seal` docs): parsing the text, reading
//! a file only its owner can access, writing a new one with mode 0600 outside the memory
//! directory. It must not seal, open or touch the envelope.

use std::io::Write;
use std::path::{Path, PathBuf};

use data_encoding::BASE64;

use super::{KEY_FILE_HEADER, Key};

/// A key file's text did not parse. `line` is 1-based.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct KeyParseError {
    /// The line of the key file.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses key file text (format in the module docs).
pub fn parse_key(text: &str) -> Result<Key, KeyParseError> {
    let err = |line: usize, reason: String| KeyParseError { line, reason };
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)));
    match lines.next() {
        Some((_, KEY_FILE_HEADER)) => {}
        Some((n, other)) => {
            return Err(err(
                n,
                format!("expected `{KEY_FILE_HEADER}`, found `{}`", truncate(other)),
            ));
        }
        None => return Err(err(1, format!("empty file, expected `{KEY_FILE_HEADER}`"))),
    }
    let mut secret: Option<([u8; 32], usize)> = None;
    let mut public: Option<([u8; 32], usize)> = None;
    for (n, line) in lines {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((name, value)) = trimmed.split_once(':') else {
            return Err(err(
                n,
                "expected `secret: <base64>` or `public: <base64>`".into(),
            ));
        };
        let slot = match name.trim() {
            "secret" => &mut secret,
            "public" => &mut public,
            other => return Err(err(n, format!("unknown field `{}`", truncate(other)))),
        };
        let name = name.trim();
        if let Some((_, first)) = slot {
            return Err(err(
                n,
                format!("duplicate `{name}` (first on line {first})"),
            ));
        }
        let bytes = BASE64
            .decode(value.trim().as_bytes())
            .map_err(|e| err(n, format!("`{name}` is not valid base64: {e}")))?;
        let bytes: [u8; 32] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| err(n, format!("`{name}` is {} bytes, expected 32", bytes.len())))?;
        *slot = Some((bytes, n));
    }
    let end = text.split('\n').count();
    let (secret, _) = secret.ok_or_else(|| err(end, "missing `secret:` line".into()))?;
    let (public, public_line) = public.ok_or_else(|| err(end, "missing `public:` line".into()))?;
    let key = Key::from_secret_bytes(secret);
    if key.public_bytes() != public {
        return Err(err(
            public_line,
            "`public` is not the public key of `secret` (the file is damaged)".into(),
        ));
    }
    Ok(key)
}

fn truncate(s: &str) -> String {
    // Never echo a whole line: it might be a secret pasted in the wrong place.
    if s.chars().count() > 24 {
        format!("{}…", s.chars().take(24).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Reading or writing a key file failed.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The key file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The key file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The key file does not parse.
    #[error("{path}: {source}")]
    Parse {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: KeyParseError,
    },
    #[error(
        "{path}: key file is readable by group or others (mode {mode:o}); run `chmod 600 {path}`"
    )]
    /// The key file is readable by group or others.
    Permissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A new key would overwrite an existing key file.
    #[error("{path}: a key file already exists there; refusing to overwrite it")]
    Exists {
        /// The key file.
        path: PathBuf,
    },
    #[error(
        "{path}: refusing to write a key inside the memory directory {dir} (it would be synced)"
    )]
    /// A new key file asked for inside the memory directory, which is synced.
    InsideMemoryDir {
        /// The key file asked for.
        path: PathBuf,
        /// The memory directory.
        dir: PathBuf,
    },
    /// A key file path that names no file (a folder, or nothing).
    #[error("{path}: not a file path")]
    NotAFilePath {
        /// The path given.
        path: PathBuf,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> KeyFileError + '_ {
    move |source| KeyFileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a key file, refusing one that group or others can access.
pub fn read_key_file(path: &Path) -> Result<Key, KeyFileError> {
    let file = std::fs::File::open(path).map_err(io_err(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata().map_err(io_err(path))?.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(KeyFileError::Permissions {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut &file, &mut text).map_err(io_err(path))?;
    parse_key(&text).map_err(|source| KeyFileError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `key` to a new file at `path` with mode 0600. Refuses an existing file and a
/// path inside `memory_dir` (the parent directory must exist).
pub fn write_key_file(path: &Path, key: &Key, memory_dir: &Path) -> Result<(), KeyFileError> {
    let (Some(name), Some(parent)) = (path.file_name(), path.parent()) else {
        return Err(KeyFileError::NotAFilePath {
            path: path.to_path_buf(),
        });
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let parent = parent.canonicalize().map_err(io_err(path))?;
    let target = parent.join(name);
    // A memory directory that does not exist yet is resolved through its parent, so a
    // key written now cannot end up inside it once `init` creates it.
    let dir = memory_dir.canonicalize().ok().or_else(|| {
        let name = memory_dir.file_name()?;
        let parent = match memory_dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Some(parent.canonicalize().ok()?.join(name))
    });
    if let Some(dir) = dir
        && target.starts_with(&dir)
    {
        return Err(KeyFileError::InsideMemoryDir {
            path: path.to_path_buf(),
            dir,
        });
    }
    if std::fs::symlink_metadata(&target).is_ok() {
        return Err(KeyFileError::Exists {
            path: path.to_path_buf(),
        });
    }
    // A 0600 temporary file in the same directory, linked into place without replacing
    // anything: a crash never leaves half a key, and a race never overwrites one.
    let mut builder = tempfile::Builder::new();
    builder.prefix(crate::memory::layout::KEY_TEMP_PREFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o600));
    }
    let mut tmp = builder.tempfile_in(&parent).map_err(io_err(path))?;
    tmp.write_all(key.to_file_text().as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(io_err(path))?;
    tmp.persist_noclobber(&target).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            KeyFileError::Exists {
                path: path.to_path_buf(),
            }
        } else {
            KeyFileError::Io {
                path: path.to_path_buf(),
                source: e.error,
            }
        }
    })?;
    if let Ok(dir) = std::fs::File::open(&parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_text_round_trip_and_errors() {
        let key = Key::from_secret_bytes([3; 32]);
        let text = key.to_file_text();
        assert_eq!(parse_key(&text).unwrap(), key);
        assert!(!format!("{key:?}").contains(&BASE64.encode(&[3; 32])));

        let line = |t: &str| parse_key(t).unwrap_err().line;
        assert_eq!(line("memdir-key-v2\n"), 1);
        assert_eq!(line(""), 1);
        let s = BASE64.encode(&[3; 32]);
        let p = BASE64.encode(&key.public_bytes());
        assert_eq!(line(&format!("memdir-key-v1\nsecret: {s}\nbogus: 1\n")), 3);
        assert_eq!(
            line(&format!("memdir-key-v1\nsecret: {s}\nsecret: {s}\n")),
            3
        );
        assert_eq!(
            line(&format!("memdir-key-v1\nsecret: !!\npublic: {p}\n")),
            2
        );
        assert_eq!(
            line(&format!("memdir-key-v1\nsecret: AAAA\npublic: {p}\n")),
            2
        );
        assert_eq!(line(&format!("memdir-key-v1\n\nsecret {s}\n")), 3);
        let other = BASE64.encode(&[1; 32]);
        assert_eq!(
            line(&format!("memdir-key-v1\nsecret: {s}\npublic: {other}\n")),
            3
        );
        let e = parse_key(&format!("memdir-key-v1\r\nsecret: {s}\r\n")).unwrap_err();
        assert!(e.reason.contains("missing `public:`"), "{e}");
        // CRLF and any order are fine.
        assert_eq!(
            parse_key(&format!("memdir-key-v1\r\npublic: {p}\r\nsecret: {s}\r\n")).unwrap(),
            key
        );
    }
}
